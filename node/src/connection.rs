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
//! Reading: the socket is registered with the shard's epoll instance (`readiness.rs`), which
//! says when to `recv`; bytes accumulate in one buffer; every complete frame in it is checked
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

use std::any::Any;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_lite::future::or;
use futures_lite::io::{AsyncWriteExt, WriteHalf};
use glommio::net::TcpStream;
use glommio::Task;
use ringstore_net::frame::HEADER_BYTES;
use ringstore_net::{FrameError, FrameHeader, Header, Opcode};
use zerocopy::FromBytes;

use crate::budget::{response_bound, BufferBudget};
use crate::config::Limits;
use crate::counters::Counters;
use crate::dispatch::{error_frame, handle_frame};
use crate::durable_acks::{ReplyTo, Waiting};
use crate::error::RequestError;
use crate::frame_batch::{Ahead, BatchKeys, BATCH_FRAMES_MAX};
use crate::inflight::InflightSlot;
use crate::inline::{self, Inline};
use crate::output::{Output, WRITE_CHUNK_BYTES};
use crate::read_interrupt::{Interrupt, ReadInterrupt};
use crate::readiness::Watch;
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
    // The reads go through `watch` (`readiness.rs`), which keeps the read half, and with it the
    // socket, open until it has unregistered the socket.
    let Some(watch) = watch_readable(&shard, fd, Box::new(reader)) else { return };
    let out = Rc::new(Output::new(fd, shard.budget.clone()));
    // Every connection is watched: the idle sweeper and shutdown both reach it through the list.
    shard.idle.watch(&out);
    let writer_task = glommio::spawn_local(write_loop(shard.clone(), out.clone(), writer));
    read_loop(&shard, &out, &watch).await;
    close_after_reading(&shard, &out, writer_task).await;
}

/// Registers a connection's socket with the shard's epoll instance (`readiness.rs`), or logs
/// why it could not and returns None: the connection is then closed unanswered.
pub(crate) fn watch_readable(shard: &Shard, fd: RawFd, open: Box<dyn Any>) -> Option<Watch> {
    match shard.readiness.watch(fd, open) {
        Ok(watch) => Some(watch),
        Err(e) => {
            tracing::warn!(error = %e, "closing a new connection");
            Counters::add(&shard.counters.connections_refused, 1);
            None
        }
    }
}

/// Ends a connection whose read loop has ended (both protocols): forgets the loop's waker, lets
/// the requests still running finish and the writer task write their responses, then returns,
/// which closes the socket. At shutdown a client that does not read its last responses cannot
/// hold the node up: after [`SHUTDOWN_DRAIN_TIMEOUT`] the connection closes anyway.
pub(crate) async fn close_after_reading(shard: &Shard, out: &Output, writer_task: Task<()>) {
    out.forget_read_waker();
    let finish = async {
        out.all_finished().await;
        out.done.set(true);
        out.ready.notify_all();
        if !out.killed.get() {
            writer_task.await;
        }
        // Dropping a killed connection's writer task cancels a write blocked on a client that
        // does not read.
    };
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
    let (opcode, request_id) = answer_ids(head);
    let e = RequestError::Busy {
        what: "the shard's buffer budget (max_buffer_bytes / shards) for a large request",
        limit: shard.budget.limit(),
    };
    let reply = e.reply();
    Counters::add(&shard.counters.errors, 1);
    Counters::add(&shard.counters.busy, 1);
    out.push(&error_frame(opcode, request_id, reply.code, &reply.message));
}

/// Why the read loop stopped waiting.
pub(crate) enum Wake {
    Read(std::io::Result<usize>),
    Timeout,
    Shutdown,
    Killed,
    /// The output buffer reached its cap: stop reading until the client takes responses.
    Full,
}

async fn read_loop(shard: &Rc<Shard>, out: &Rc<Output>, reader: &Watch) {
    let mut input = ReadBuffer::new(&shard.budget);
    // When the first byte of the frame being read arrived.
    let mut frame_started: Option<Instant> = None;
    let cap = shard.limits.output_buffer_bytes;
    loop {
        let batch = input.act_on_frames(shard, out);
        if batch.closed {
            return;
        }
        input.make_room(shard, out);
        // The output cap: while the client has not taken `cap` bytes of responses (or a request
        // waits for room for its response), read no more requests.
        if batch.deferred.is_some() || out.committed() >= cap {
            if !wait_for_output(shard, out, batch.deferred.unwrap_or(cap)).await {
                return;
            }
            continue;
        }
        // A frame that has started must be complete within the read timeout, counted from its
        // first byte (not from the last read, so trickling bytes does not extend it).
        if input.is_empty() || batch.frames_done {
            frame_started = None;
        }
        if !input.is_empty() && frame_started.is_none() {
            frame_started = Some(Instant::now());
        }
        let timeout = read_timeout(&shard.limits, frame_started);
        match wait_for_input(shard, out, reader, input.free_space(), timeout).await {
            Wake::Read(Ok(0)) | Wake::Read(Err(_)) | Wake::Shutdown | Wake::Killed => return,
            Wake::Read(Ok(n)) => {
                input.filled += n;
                out.input_seen.set(true);
            }
            Wake::Full => {}
            Wake::Timeout => {
                tracing::debug!(
                    filled = input.filled,
                    "closing a connection: a frame not complete within the read timeout"
                );
                return;
            }
        }
    }
}

/// What the start of a read buffer holds ([`next_frame`]).
#[derive(Debug, PartialEq, Eq)]
enum Step {
    /// Less than a whole frame (or less than a header): wait for more bytes.
    Incomplete,
    /// A checked header and its whole body: `total` bytes, header included.
    Frame { header: Header, total: usize },
    /// A refused header: answer the error, then close the stream
    /// ([`FrameError::closes_stream`]) or skip the header and `body_len` bytes of body.
    Refused { error: FrameError, opcode: Opcode, request_id: u64, body_len: u32 },
}

/// Reads the frame at the start of `head` (frame bodies at most `limit` bytes): the framing
/// rules of docs/PROTOCOL.md, without acting on anything.
fn next_frame(head: &[u8], limit: u32) -> Step {
    let Some(parsed) = FrameHeader::parse(head, limit) else { return Step::Incomplete };
    match parsed {
        Ok(header) => {
            let total = HEADER_BYTES + header.body_len as usize;
            if head.len() < total {
                return Step::Incomplete;
            }
            Step::Frame { header, total }
        }
        Err(error) => {
            let (opcode, request_id) = answer_ids(head);
            let body_len = FrameHeader::ref_from_prefix(head).map_or(0, |(h, _)| h.raw_body_len());
            Step::Refused { error, opcode, request_id, body_len }
        }
    }
}

/// The opcode (Ping if unknown) and request id to answer the header at the start of `head`
/// with, read without checking it.
fn answer_ids(head: &[u8]) -> (Opcode, u64) {
    match FrameHeader::ref_from_prefix(head) {
        Ok((h, _)) => (Opcode::from_u8(h.raw_opcode()).unwrap_or(Opcode::Ping), h.raw_request_id()),
        Err(_) => (Opcode::Ping, 0),
    }
}

/// One connection's input: bytes received and not acted on yet, and what is still to be
/// discarded of a refused frame's body. It grows past [`READ_CHUNK_BYTES`] only to hold the frame
/// being read, and only within the shard's buffer budget.
struct ReadBuffer<'a> {
    buf: Vec<u8>,
    /// Bytes of `buf` received.
    filled: usize,
    /// Body bytes of a refused frame still to be discarded.
    skip: u64,
    /// Bytes of `buf` past READ_CHUNK_BYTES, counted in the shard's buffer budget.
    charge: ReadCharge<'a>,
    /// The keys of the frames decoded ahead (`frame_batch.rs`).
    keys: BatchKeys,
}

/// What acting on the complete frames of a read batch did.
#[derive(Debug, Default)]
struct Batch {
    /// At least one frame (or the rest of a refused body) was consumed.
    frames_done: bool,
    /// A complete frame waits for room in the output for its response: the committed bytes
    /// when it was put off (it runs once they go down).
    deferred: Option<usize>,
    /// A header error left the stream untrustworthy: it was answered and the connection ends.
    closed: bool,
}

impl<'a> ReadBuffer<'a> {
    fn new(budget: &'a BufferBudget) -> ReadBuffer<'a> {
        ReadBuffer {
            buf: vec![0u8; READ_CHUNK_BYTES],
            filled: 0,
            skip: 0,
            charge: ReadCharge { budget, bytes: 0 },
            keys: BatchKeys::default(),
        }
    }

    /// Nothing received and nothing to discard.
    fn is_empty(&self) -> bool {
        self.filled == 0 && self.skip == 0
    }

    /// Where the next read goes.
    fn free_space(&mut self) -> &mut [u8] {
        &mut self.buf[self.filled..]
    }

    /// Acts on every complete frame in the buffer, discarding refused bodies on the way, then
    /// sends the responses the batch answered inline with one `send` and drops the consumed
    /// bytes.
    fn act_on_frames(&mut self, shard: &Rc<Shard>, out: &Rc<Output>) -> Batch {
        let limit = shard.limits.frame_body_bytes;
        let mut batch = Batch::default();
        let mut pos = 0;
        // The store's clock, read once for the whole batch (at its first request).
        let mut now_ms = None;
        let buf = &self.buf[..self.filled];
        'frames: loop {
            if self.skip > 0 {
                let n = self.skip.min((buf.len() - pos) as u64);
                pos += n as usize;
                self.skip -= n;
                if self.skip > 0 {
                    break;
                }
                batch.frames_done = true;
            }
            // The whole frames that follow, decoded ahead and their keys prefetched
            // (`frame_batch.rs`), then run in order.
            let mut ahead: [Option<Ahead<'_>>; BATCH_FRAMES_MAX] =
                [const { None }; BATCH_FRAMES_MAX];
            let mut n = 0;
            let mut at = pos;
            self.keys.clear();
            while n < BATCH_FRAMES_MAX {
                let Step::Frame { header, total } = next_frame(&buf[at..], limit) else { break };
                let body = &buf[at + HEADER_BYTES..at + total];
                ahead[n] = Some(self.keys.decode(shard, header, total, body));
                at += total;
                n += 1;
            }
            if n > 0 {
                let frames = ahead[..n].iter().flatten();
                self.keys.prefetch(shard, frames);
                for frame in ahead[..n].iter().flatten() {
                    if !handle_request(shard, out, frame, &self.keys, &mut now_ms) {
                        batch.deferred = Some(out.committed());
                        Counters::add(&shard.counters.deferred, 1);
                        break 'frames;
                    }
                    Counters::add(&shard.counters.bytes_in, frame.total as u64);
                    pos += frame.total;
                    batch.frames_done = true;
                }
                continue;
            }
            match next_frame(&buf[pos..], limit) {
                Step::Incomplete => break,
                Step::Frame { .. } => unreachable!("the look-ahead takes every whole frame"),
                Step::Refused { error, opcode, request_id, body_len } => {
                    let frame =
                        error_frame(opcode, request_id, error.code(), &frame_message(&error));
                    Counters::add(&shard.counters.errors, 1);
                    out.push(&frame);
                    if error.closes_stream() {
                        out.flush_now(&shard.counters);
                        batch.closed = true;
                        return batch;
                    }
                    pos += HEADER_BYTES;
                    self.skip = u64::from(body_len);
                }
            }
        }
        // One send for every response the batch answered inline.
        out.flush_now(&shard.counters);
        self.buf.copy_within(pos..self.filled, 0);
        self.filled -= pos;
        batch
    }

    /// Makes room for the frame being read (its length was checked when its header parsed):
    /// grows the buffer with what arrives, at most doubling, within the shard's buffer budget
    /// (a frame the budget cannot hold is answered BUSY and its body discarded as it arrives),
    /// and shrinks it back once it is empty.
    fn make_room(&mut self, shard: &Shard, out: &Output) {
        let limit = shard.limits.frame_body_bytes;
        let want = match FrameHeader::parse(&self.buf[..self.filled], limit) {
            Some(Ok(h)) if self.skip == 0 => HEADER_BYTES + h.body_len as usize,
            _ => READ_CHUNK_BYTES,
        };
        if self.buf.len() < want.max(self.filled + 1) {
            // Grow with what arrives, not to the announced length at once: a header alone must
            // not make the node allocate its whole body.
            let grown = (self.buf.len() * 2).max(self.filled + READ_CHUNK_BYTES);
            let len = want.min(grown).max(READ_CHUNK_BYTES);
            let extra = (len - READ_CHUNK_BYTES).saturating_sub(self.charge.bytes);
            if shard.budget.try_take(extra) {
                self.charge.bytes += extra;
                self.buf.resize(len, 0);
            } else {
                refuse_frame(shard, out, &self.buf[..self.filled]);
                let consumed = self.filled.min(want);
                self.skip = (want - consumed) as u64;
                self.buf.copy_within(consumed..self.filled, 0);
                self.filled -= consumed;
                out.flush_now(&shard.counters);
            }
        } else if self.filled == 0 && self.buf.len() > READ_CHUNK_BYTES {
            self.buf.truncate(READ_CHUNK_BYTES);
            self.buf.shrink_to_fit();
            shard.budget.give(self.charge.bytes);
            self.charge.bytes = 0;
        }
    }
}

/// Waits until the output's committed bytes go below `below`. False when the connection must
/// end: the client took nothing for a whole read timeout (it is disconnected), the node is
/// stopping, or the connection was killed.
pub(crate) async fn wait_for_output(shard: &Shard, out: &Output, below: usize) -> bool {
    let stall = Duration::from_millis(shard.limits.read_timeout_ms);
    let drained = or(
        async {
            out.below(below).await;
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
            let cap = shard.limits.output_buffer_bytes;
            tracing::warn!(cap, "client does not read its responses; closing the connection");
            out.kill();
        }
        return false;
    }
    true
}

/// How long the next read may wait: what is left of the read timeout for a frame that has
/// started, else no limit (the idle timeout is the shard's sweeper's, `idle.rs`).
pub(crate) fn read_timeout(limits: &Limits, frame_started: Option<Instant>) -> Option<Duration> {
    let start = frame_started?;
    Some(Duration::from_millis(limits.read_timeout_ms).saturating_sub(start.elapsed()))
}

/// Waits for the first of: bytes from the client, the timeout, shutdown, the connection being
/// killed, or the output reaching its cap.
pub(crate) async fn wait_for_input(
    shard: &Shard,
    out: &Output,
    reader: &Watch,
    into: &mut [u8],
    timeout: Option<Duration>,
) -> Wake {
    let cap = shard.limits.output_buffer_bytes;
    or(
        or(async { Wake::Read(reader.recv(into).await) }, async {
            match timeout {
                Some(after) => {
                    glommio::timer::sleep(after).await;
                    Wake::Timeout
                }
                None => std::future::pending().await,
            }
        }),
        async {
            match ReadInterrupt::new(out, &shard.shutdown, cap).await {
                Interrupt::Killed => Wake::Killed,
                Interrupt::Shutdown => Wake::Shutdown,
                Interrupt::Full => Wake::Full,
            }
        },
    )
    .await
}

/// Runs one request: inline when it can complete without waiting (`inline.rs`), its response
/// encoded straight into the output buffer; otherwise in a task of its own. First it needs room
/// for the largest response the request can produce ([`response_bound`]) in the connection's
/// output cap, or it waits in the read buffer (false: not taken) until responses drain. A
/// request that goes to a task reserves its response's bound in the shard's buffer budget, or is
/// answered BUSY; for a Get that reads the disk the bound comes from the record's length
/// (`Inline::ReadsDisk`), not the frame limit, and an inline Get checks the row it found
/// (`inline.rs`). A request the in-flight limits refuse is answered BUSY at once.
fn handle_request(
    shard: &Rc<Shard>,
    out: &Rc<Output>,
    frame: &Ahead<'_>,
    keys: &BatchKeys,
    now_ms: &mut Option<u64>,
) -> bool {
    let (h, body) = (frame.header, frame.body);
    if out.killed.get() {
        return true;
    }
    let bound = response_bound(h.opcode, &shard.limits);
    let committed = out.committed();
    if committed > 0 && committed + bound > shard.limits.output_buffer_bytes {
        return false;
    }
    // An inline request takes no in-flight slot, but one that turns out to wait for durability
    // needs one after it was written: at either limit every request goes the general way, which
    // answers BUSY before running anything.
    if out.inflight.get() >= shard.limits.inflight_per_connection
        || shard.inflight.get() >= shard.limits.inflight_per_shard
    {
        start_within_budget(shard, out, h, body, bound);
        return true;
    }
    // Inline, the response is produced before anything else runs, so the output-cap check above
    // and an inline Get's own budget check are its reservation; a request that goes to a task
    // reserves its bound until its response is queued.
    let ran = {
        let mut pending = out.pending.borrow_mut();
        let before = pending.len();
        let now = *now_ms.get_or_insert_with(|| shard.tables.store().now_ms());
        let ran = inline::run(shard, frame, keys, now, &mut pending);
        out.add_unsent(pending.len() - before);
        ran
    };
    match ran {
        Inline::Answered => {}
        Inline::Durable { wait, frame } => await_durable(shard, out, h, wait, frame),
        Inline::Spawn => start_within_budget(shard, out, h, body, bound),
        Inline::ReadsDisk { reply_bytes } => {
            start_within_budget(shard, out, h, body, reply_bytes.min(bound));
        }
    }
    true
}

/// Starts a request in a task with `bound` bytes reserved for its response, or answers it BUSY
/// if the shard's buffer budget refuses them (`BufferBudget::refuses`).
fn start_within_budget(shard: &Rc<Shard>, out: &Rc<Output>, h: Header, body: &[u8], bound: usize) {
    if shard.budget.refuses(bound) {
        busy(shard, out, h, shard.budget.full());
        return;
    }
    start_request(shard, out, h, body, bound);
}

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
    let to = ReplyTo::Frame { header: h, out: out.clone() };
    shard.acks.push(Waiting { wait, frame, to, slot });
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

pub(crate) async fn write_loop(
    shard: Rc<Shard>,
    out: Rc<Output>,
    mut writer: WriteHalf<TcpStream>,
) {
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
fn frame_message(e: &FrameError) -> String {
    if e.closes_stream() {
        format!("{e}; closing the connection")
    } else {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    //! The frame reader and the read timeouts, without a socket.

    use super::*;
    use ringstore_net::frame::Flags;
    use zerocopy::IntoBytes;

    fn frame(opcode: Opcode, id: u64, body: &[u8]) -> Vec<u8> {
        let h = FrameHeader::new(opcode, Flags(0), id, body.len() as u32, 0);
        let mut bytes = h.as_bytes().to_vec();
        bytes.extend_from_slice(body);
        bytes
    }

    #[test]
    fn a_frame_is_read_only_when_whole() {
        let bytes = frame(Opcode::Get, 7, b"0123456789");
        for cut in 0..bytes.len() {
            assert_eq!(next_frame(&bytes[..cut], 1024), Step::Incomplete, "{cut} bytes");
        }
        let mut two = bytes.clone();
        two.extend_from_slice(&frame(Opcode::Ping, 8, b""));
        let Step::Frame { header, total } = next_frame(&two, 1024) else { panic!("a frame") };
        assert_eq!((header.opcode, header.request_id, total), (Opcode::Get, 7, bytes.len()));
        let Step::Frame { header, total } = next_frame(&two[total..], 1024) else {
            panic!("the second frame")
        };
        assert_eq!((header.opcode, header.request_id, total), (Opcode::Ping, 8, HEADER_BYTES));
    }

    #[test]
    fn a_refused_header_is_answered_with_its_opcode_and_id() {
        let mut bad_magic = frame(Opcode::Put, 9, b"xyz");
        bad_magic[0] = b'X';
        let Step::Refused { error, opcode, request_id, body_len } = next_frame(&bad_magic, 1024)
        else {
            panic!("refused")
        };
        assert_eq!((error.code(), error.closes_stream()), (701, true));
        assert_eq!((opcode, request_id, body_len), (Opcode::Put, 9, 3));
        // A body over the limit is refused from its header alone, before the body arrives.
        let long = frame(Opcode::Get, 10, &[0; 100]);
        let Step::Refused { error, request_id, .. } = next_frame(&long[..HEADER_BYTES], 99) else {
            panic!("refused")
        };
        assert_eq!((error.code(), request_id), (705, 10));
        assert_eq!(answer_ids(&long[..HEADER_BYTES - 1]), (Opcode::Ping, 0), "no header yet");
    }

    #[test]
    fn a_started_frame_gets_what_is_left_of_the_read_timeout_and_no_frame_no_timer() {
        let limits = Limits { read_timeout_ms: 1_000, idle_timeout_ms: 0, ..Limits::default() };
        assert_eq!(read_timeout(&limits, None), None, "between frames: wait for ever");
        let started = Instant::now() - Duration::from_millis(400);
        let left = read_timeout(&limits, Some(started)).expect("a frame has a timeout");
        assert!(left <= Duration::from_millis(600), "{left:?}");
        let long_ago = Instant::now() - Duration::from_secs(5);
        assert_eq!(read_timeout(&limits, Some(long_ago)), Some(Duration::ZERO));
        // The idle timeout arms no timer in the read loop: the shard's sweeper enforces it.
        let idle = Limits { idle_timeout_ms: 300_000, ..limits };
        assert_eq!(read_timeout(&idle, None), None);
    }
}
