//! One client connection: reading frames from the socket, running each request, and writing
//! the response frames back.
//!
//! Running: a request that can complete without waiting runs inline, in this read loop
//! (`inline.rs`), its response encoded straight into the output buffer (`output.rs`); an inline
//! write that waits for group commit leaves its response with the shard's acknowledger
//! (`durable_acks.rs`). Any other request runs in a task of its own (`dispatch.rs`). Either way
//! replies may complete out of order and a connection may pipeline. After each read batch the
//! read loop sends the output buffer with one `send`; the writer task writes whatever the
//! socket does not take at once, and the responses of tasks.
//!
//! Reading: bytes accumulate in one buffer; every complete frame in it is checked
//! (`FrameHeader::parse`, in the order docs/PROTOCOL.md gives) and dispatched; a partial frame
//! waits for more bytes, for at most `read_timeout_ms`. The buffer grows only to hold the frame
//! being read, whose length has already been checked against the frame limit, so no client can
//! make the node allocate more than one frame's worth per connection. A header error that leaves
//! the stream trustworthy (704, 706) is answered and its body skipped without being stored; one
//! that does not (701-703, 705) is answered and the connection closed.
//!
//! Limits: a connection has at most `inflight_per_connection` requests running, and the shard at
//! most `inflight_per_shard`; past either the request is answered BUSY (720) at once. Responses
//! wait in an output buffer of at most `output_buffer_bytes`; a client that lets it fill (it
//! sends but never reads) is disconnected.
//!
//! Shutdown: the connection stops reading, lets the requests it has in flight finish, writes
//! their responses and closes.

use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::future::or;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use glommio::net::TcpStream;
use ringstore_net::frame::HEADER_BYTES;
use ringstore_net::{FrameError, FrameHeader, Header, Opcode};

use crate::budget::BufferBudget;
use crate::counters::Counters;
use crate::dispatch::{error_frame, handle_frame};
use crate::durable_acks::Waiting;
use crate::error::RequestError;
use crate::inflight::InflightSlot;
use crate::inline::{self, Inline};
use crate::output::{Output, WRITE_CHUNK_BYTES};
use crate::shard::Shard;
use ringstore_storage::DurableWait;

/// Bytes the read buffer starts with and reads at a time; it grows past this only for a larger
/// frame.
pub const READ_CHUNK_BYTES: usize = 64 * 1024;

/// At shutdown, the longest a connection may take to finish its in-flight requests and write
/// their responses before it is closed anyway.
pub const SHUTDOWN_DRAIN_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves one accepted connection until the client closes it, an unrecoverable error, a
/// timeout, the output cap, or shutdown.
pub async fn serve(shard: Rc<Shard>, mut stream: TcpStream) {
    let _slot = match shard.admit_connection() {
        Ok(slot) => slot,
        Err(e) => {
            Counters::add(&shard.counters.connections_refused, 1);
            let reply = e.reply();
            let frame = error_frame(Opcode::Ping, 0, reply.code, &reply.message);
            let _ = stream.write_all(&frame).await;
            let _ = stream.close().await;
            return;
        }
    };
    Counters::add(&shard.counters.connections_total, 1);
    let _ = stream.set_nodelay(true);
    let fd = stream.as_raw_fd();
    let (reader, writer) = futures_lite::io::split(stream);
    let out = Rc::new(Output::new(fd, shard.budget.clone()));
    let writer_task = glommio::spawn_local(write_loop(shard.clone(), out.clone(), writer));
    read_loop(&shard, &out, reader).await;
    let finish = async {
        out.all_finished().await;
        out.done.set(true);
        out.ready.notify(usize::MAX);
        if !out.killed.get() {
            writer_task.await;
        }
        // Dropping a killed connection's writer task cancels a write blocked on a client that
        // does not read.
    };
    // At shutdown a client that does not read its last responses cannot hold the node up.
    let deadline = async {
        shard.shutdown.requested().await;
        glommio::timer::sleep(SHUTDOWN_DRAIN_TIMEOUT).await;
        tracing::warn!("closing a connection whose responses could not be written at shutdown");
    };
    or(finish, deadline).await;
}

/// Read-buffer bytes a connection holds in its shard's buffer budget; given back when the
/// connection ends.
struct ReadCharge<'a> {
    budget: &'a BufferBudget,
    bytes: usize,
}

impl Drop for ReadCharge<'_> {
    fn drop(&mut self) {
        self.budget.give(self.bytes);
    }
}

/// Answers BUSY the frame whose (valid) header starts `head`, when the shard's buffer budget
/// cannot hold its body.
fn refuse_frame(shard: &Shard, out: &Output, head: &[u8]) {
    let raw = RawHeader::of(head);
    let opcode = Opcode::from_u8(raw.opcode).unwrap_or(Opcode::Ping);
    let e = RequestError::Busy {
        what: "the shard's buffer budget (max_buffer_bytes / shards) for a large request",
        limit: shard.budget.limit(),
    };
    let reply = e.reply();
    Counters::add(&shard.counters.errors, 1);
    Counters::add(&shard.counters.busy, 1);
    out.push(&error_frame(opcode, raw.request_id, reply.code, &reply.message));
}

/// Why the read loop stopped waiting.
enum Wake {
    Read(std::io::Result<usize>),
    Timeout,
    Shutdown,
    Killed,
    /// The output buffer reached its cap: stop reading until the client takes responses.
    Full,
}

async fn read_loop(shard: &Rc<Shard>, out: &Rc<Output>, mut reader: ReadHalf<TcpStream>) {
    let limit = shard.limits.frame_body_bytes;
    let mut buf = vec![0u8; READ_CHUNK_BYTES];
    let mut filled = 0;
    // Body bytes of a refused frame still to be discarded.
    let mut skip: u64 = 0;
    // When the first byte of the frame being read arrived.
    let mut frame_started: Option<Instant> = None;
    // Read-buffer bytes past READ_CHUNK_BYTES, counted in the shard's buffer budget.
    let mut charge = ReadCharge { budget: &shard.budget, bytes: 0 };
    loop {
        // Act on every complete frame in the buffer, discarding refused bodies on the way.
        let mut pos = 0;
        // The store's clock, read once for the whole batch (at its first request).
        let mut now_ms = None;
        let mut frames_done = false;
        // A complete frame waits in the buffer until the output has room for its response: the
        // committed bytes when it was put off (it runs again once they go down).
        let mut deferred: Option<usize> = None;
        loop {
            if skip > 0 {
                let n = skip.min((filled - pos) as u64);
                pos += n as usize;
                skip -= n;
                if skip > 0 {
                    break;
                }
                frames_done = true;
            }
            let head = &buf[pos..filled];
            let Some(parsed) = FrameHeader::parse(head, limit) else { break };
            match parsed {
                Ok(h) => {
                    let total = HEADER_BYTES + h.body_len as usize;
                    if head.len() < total {
                        break;
                    }
                    if !handle_request(shard, out, h, &head[HEADER_BYTES..total], &mut now_ms) {
                        deferred = Some(out.committed());
                        Counters::add(&shard.counters.deferred, 1);
                        break;
                    }
                    Counters::add(&shard.counters.bytes_in, total as u64);
                    pos += total;
                    frames_done = true;
                }
                Err(e) => {
                    let raw = RawHeader::of(head);
                    let opcode = Opcode::from_u8(raw.opcode).unwrap_or(Opcode::Ping);
                    let frame = error_frame(opcode, raw.request_id, e.code(), &frame_message(&e));
                    Counters::add(&shard.counters.errors, 1);
                    out.push(&frame);
                    if e.closes_stream() {
                        out.flush_now(&shard.counters);
                        return;
                    }
                    pos += HEADER_BYTES;
                    skip = u64::from(raw.body_len);
                }
            }
        }
        // One send for every response the batch answered inline.
        out.flush_now(&shard.counters);
        buf.copy_within(pos..filled, 0);
        filled -= pos;
        // Room for the frame being read (its length was checked when its header parsed).
        let want = match FrameHeader::parse(&buf[..filled], limit) {
            Some(Ok(h)) if skip == 0 => HEADER_BYTES + h.body_len as usize,
            _ => READ_CHUNK_BYTES,
        };
        if buf.len() < want.max(filled + 1) {
            // Grow with what arrives (at most doubling), not to the announced length at once:
            // a header alone must not make the node allocate its whole body.
            let grown = (buf.len() * 2).max(filled + READ_CHUNK_BYTES);
            let len = want.min(grown).max(READ_CHUNK_BYTES);
            let extra = (len - READ_CHUNK_BYTES).saturating_sub(charge.bytes);
            if shard.budget.try_take(extra) {
                charge.bytes += extra;
                buf.resize(len, 0);
            } else {
                // No room in the shard's budget to hold this frame: answer it BUSY and discard
                // its body as it arrives instead of storing it.
                refuse_frame(shard, out, &buf[..filled]);
                let consumed = filled.min(want);
                skip = (want - consumed) as u64;
                buf.copy_within(consumed..filled, 0);
                filled -= consumed;
                out.flush_now(&shard.counters);
            }
        } else if filled == 0 && buf.len() > READ_CHUNK_BYTES {
            buf.truncate(READ_CHUNK_BYTES);
            buf.shrink_to_fit();
            shard.budget.give(charge.bytes);
            charge.bytes = 0;
        }
        // The output cap: while the client has not taken `cap` bytes of responses (or a request
        // waits for room for its response), read no more requests. A client that takes nothing
        // for a whole read timeout is disconnected.
        let cap = shard.limits.output_buffer_bytes;
        if deferred.is_some() || out.committed() >= cap {
            let stall = Duration::from_millis(shard.limits.read_timeout_ms);
            let drained = or(
                async {
                    out.below(deferred.unwrap_or(cap)).await;
                    true
                },
                async {
                    glommio::timer::sleep(stall).await;
                    false
                },
            );
            let drained = or(drained, async {
                shard.shutdown.requested().await;
                false
            })
            .await;
            if !drained || out.killed.get() {
                if !shard.shutdown.is_requested() {
                    tracing::warn!(
                        cap,
                        "client does not read its responses; closing the connection"
                    );
                    out.kill();
                }
                return;
            }
            continue;
        }
        // A frame that has started must be complete within the read timeout, counted from its
        // first byte (not from the last read, so trickling bytes does not extend it).
        if (filled == 0 && skip == 0) || frames_done {
            frame_started = None;
        }
        if (filled > 0 || skip > 0) && frame_started.is_none() {
            frame_started = Some(Instant::now());
        }
        let timeout = match frame_started {
            Some(start) => {
                let limit = Duration::from_millis(shard.limits.read_timeout_ms);
                Some(limit.saturating_sub(start.elapsed()))
            }
            None if shard.limits.idle_timeout_ms > 0 => {
                Some(Duration::from_millis(shard.limits.idle_timeout_ms))
            }
            None => None,
        };
        let wake = or(
            or(async { Wake::Read(reader.read(&mut buf[filled..]).await) }, async {
                match timeout {
                    Some(after) => {
                        glommio::timer::sleep(after).await;
                        Wake::Timeout
                    }
                    None => std::future::pending().await,
                }
            }),
            or(
                async {
                    shard.shutdown.requested().await;
                    Wake::Shutdown
                },
                or(
                    async {
                        out.killed().await;
                        Wake::Killed
                    },
                    async {
                        out.full(cap).await;
                        Wake::Full
                    },
                ),
            ),
        )
        .await;
        match wake {
            Wake::Read(Ok(0)) | Wake::Read(Err(_)) | Wake::Shutdown | Wake::Killed => return,
            Wake::Read(Ok(n)) => filled += n,
            Wake::Full => {}
            Wake::Timeout => {
                tracing::debug!(filled, "closing a connection: read or idle timeout");
                return;
            }
        }
    }
}

/// Runs one request: inline when it can complete without waiting (`inline.rs`), its response
/// encoded straight into the output buffer; otherwise in a task of its own. First it reserves
/// room for the largest response the request can produce ([`response_bound`]): in the
/// connection's output cap, or the request waits in the read buffer (false: not taken) until
/// responses drain; and in the shard's buffer budget, or it is answered BUSY. A request the
/// in-flight limits refuse is answered BUSY at once.
fn handle_request(
    shard: &Rc<Shard>,
    out: &Rc<Output>,
    h: Header,
    body: &[u8],
    now_ms: &mut Option<u64>,
) -> bool {
    if out.killed.get() {
        return true;
    }
    let bound = response_bound(h.opcode, &shard.limits);
    let committed = out.committed();
    if committed > 0 && committed + bound > shard.limits.output_buffer_bytes {
        return false;
    }
    // Small replies are never refused for buffer space (their bytes still count).
    if bound > SMALL_RESPONSE_BYTES && !shard.budget.fits(bound) {
        let e = RequestError::Busy {
            what: "the shard's buffer budget (max_buffer_bytes / shards)",
            limit: shard.budget.limit(),
        };
        busy(shard, out, h, e);
        return true;
    }
    // An inline request takes no in-flight slot, but one that turns out to wait for durability
    // needs one after it was written: at either limit every request goes the general way, which
    // answers BUSY before running anything.
    if out.inflight.get() >= shard.limits.inflight_per_connection
        || shard.inflight.get() >= shard.limits.inflight_per_shard
    {
        start_request(shard, out, h, body, bound);
        return true;
    }
    // Inline, the response is produced before anything else runs, so the checks above are its
    // reservation; a request that goes to a task reserves `bound` until its response is queued.
    let ran = {
        let mut pending = out.pending.borrow_mut();
        let before = pending.len();
        let now = *now_ms.get_or_insert_with(|| shard.tables.store().now_ms());
        let ran = inline::run(shard, h, body, now, &mut pending);
        out.add_unsent(pending.len() - before);
        ran
    };
    match ran {
        Inline::Answered => {}
        Inline::Durable { wait, frame } => await_durable(shard, out, h, wait, frame),
        Inline::Spawn => start_request(shard, out, h, body, bound),
    }
    true
}

/// Response bytes reserved for a response before its request runs: a write's receipt (or
/// error) is small; anything that returns rows or text can fill a whole frame.
pub fn response_bound(opcode: Opcode, limits: &crate::config::Limits) -> usize {
    match opcode {
        Opcode::Ping
        | Opcode::Hello
        | Opcode::Stats
        | Opcode::Put
        | Opcode::Update
        | Opcode::Delete => SMALL_RESPONSE_BYTES,
        _ => HEADER_BYTES + limits.frame_body_bytes as usize,
    }
}

/// Reserved for the response of a request that returns no rows: a receipt or an error message.
pub const SMALL_RESPONSE_BYTES: usize = 4096;

/// Queues an inline write's response with the shard's acknowledger (`durable_acks.rs`), which
/// sends it once the write is as durable as it asked.
fn await_durable(
    shard: &Rc<Shard>,
    out: &Rc<Output>,
    h: Header,
    wait: DurableWait,
    frame: Vec<u8>,
) {
    let Some(slot) = admit(shard, out, h) else {
        unreachable!("handle_request checked the in-flight limits");
    };
    shard.acks.push(Waiting { wait, header: h, frame, out: out.clone(), slot });
}

/// Takes an in-flight slot of the connection and the shard, or answers BUSY and returns None.
fn admit(shard: &Rc<Shard>, out: &Output, h: Header) -> Option<InflightSlot> {
    let per_connection = shard.limits.inflight_per_connection;
    let admitted = if out.inflight.get() >= per_connection {
        Err(RequestError::Busy {
            what: "the connection's in-flight request budget",
            limit: per_connection,
        })
    } else {
        shard.admit_request()
    };
    match admitted {
        Ok(slot) => {
            out.inflight.set(out.inflight.get() + 1);
            Some(slot)
        }
        Err(e) => {
            busy(shard, out, h, e);
            None
        }
    }
}

/// Answers a request BUSY (720) with what was exhausted.
fn busy(shard: &Shard, out: &Output, h: Header, e: RequestError) {
    Counters::add(&shard.counters.errors, 1);
    Counters::add(&shard.counters.busy, 1);
    let reply = e.reply();
    out.push(&error_frame(h.opcode, h.request_id, reply.code, &reply.message));
}

/// Admits a request against the connection's and the shard's in-flight limits and runs it in
/// its own task, with `reserved` response bytes reserved until its response is queued (the
/// caller checked they fit); refused requests are answered BUSY at once.
fn start_request(shard: &Rc<Shard>, out: &Rc<Output>, h: Header, body: &[u8], reserved: usize) {
    let Some(slot) = admit(shard, out, h) else { return };
    out.reserve(reserved);
    let mut owned = shard.buffers.take();
    owned.extend_from_slice(body);
    let shard = shard.clone();
    let out = out.clone();
    glommio::spawn_local(async move {
        let frame = handle_frame(&shard, h, &owned, false).await;
        shard.buffers.give(owned);
        out.finish(&shard.buffers, frame, slot);
        out.unreserve(reserved);
    })
    .detach();
}

async fn write_loop(shard: Rc<Shard>, out: Rc<Output>, mut writer: WriteHalf<TcpStream>) {
    let mut sending = Vec::new();
    loop {
        if out.killed.get() {
            return;
        }
        if out.pending.borrow().is_empty() {
            if out.done.get() {
                let _ = writer.close().await;
                return;
            }
            out.wait_ready().await;
            continue;
        }
        std::mem::swap(&mut *out.pending.borrow_mut(), &mut sending);
        out.writing.set(true);
        // A client must take each chunk within the read timeout, or it is disconnected (also
        // after it stopped sending, when the read side no longer watches it).
        let stall = Duration::from_millis(shard.limits.read_timeout_ms);
        for chunk in sending.chunks(WRITE_CHUNK_BYTES) {
            let written = or(async { writer.write_all(chunk).await.is_ok() }, async {
                glommio::timer::sleep(stall).await;
                tracing::warn!("client took no responses for the read timeout; closing");
                false
            })
            .await;
            if !written {
                out.kill();
                return;
            }
        }
        out.writing.set(false);
        Counters::add(&shard.counters.bytes_out, sending.len() as u64);
        out.sub_unsent(sending.len());
        sending.clear();
        if sending.capacity() > READ_CHUNK_BYTES * 16 {
            sending = Vec::new();
        }
    }
}

/// The fields of a header that failed its checks, read without trusting it.
struct RawHeader {
    opcode: u8,
    request_id: u64,
    body_len: u32,
}

impl RawHeader {
    fn of(head: &[u8]) -> RawHeader {
        let u32_at =
            |at: usize| u32::from_le_bytes([head[at], head[at + 1], head[at + 2], head[at + 3]]);
        let mut id = [0u8; 8];
        id.copy_from_slice(&head[8..16]);
        RawHeader { opcode: head[5], request_id: u64::from_le_bytes(id), body_len: u32_at(16) }
    }
}

fn frame_message(e: &FrameError) -> String {
    if e.closes_stream() {
        format!("{e}; closing the connection")
    } else {
        e.to_string()
    }
}
