//! One client connection of the RESP port (`--resp`, docs/RESP.md): commands in, replies out in
//! command order, on the binary port's machinery (`output.rs` for the output buffer, its cap and
//! the writer task; `connection.rs`'s waits; the idle sweeper; the connection cap; the shard's
//! buffer budget).
//!
//! Every complete command in the read buffer is parsed in place (`ringstore_net::resp`) and run
//! at once when it can complete without waiting: a one-key command on a key this shard owns
//! whose row is in memory (`resp_exec::run_now`), or a command about the connection. Its reply
//! goes straight into the output buffer, and after the read batch the read loop sends it with
//! one `send`, as the binary port does. A write that waits for durability
//! (`--resp-durability`) leaves its reply with the shard's acknowledger (`durable_acks.rs`),
//! as an inline binary write does. Anything else (a disk read, another shard's key, several
//! keys, DBSIZE, INFO) runs in a task. RESP has no request ids, so replies must leave in
//! command order: while a task runs or a write waits for durability, later replies wait in
//! [`Order`] behind it, and each finished task or durable write releases the replies that were
//! waiting for it.
//!
//! Limits: a task takes a slot of the shard's in-flight budget (refused: `-BUSY`); while the
//! connection has `max_inflight_per_connection` replies waiting in its order, or its output
//! holds `max_output_buffer_bytes`, no more commands are read. A command must arrive whole
//! within `read_timeout_ms` of its first byte and be at most `max_frame_bytes` long. A malformed
//! command is answered `-ERR Protocol error: ...` and the connection closed, as Redis does.

use std::cell::{Cell, RefCell};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use futures_lite::io::AsyncWriteExt;
use glommio::net::TcpStream;
use ringstore_net::resp::{reply, Args};
use ringstore_storage::DurableWait;

use crate::budget::SMALL_RESPONSE_BYTES;
use crate::connection::READ_CHUNK_BYTES;
use crate::connection::{
    close_after_reading, read_timeout, wait_for_input, wait_for_output, watch_readable, write_loop,
    Wake,
};
use crate::counters::Counters;
use crate::durable_acks::{ReplyTo, Waiting};
use crate::inflight::InflightSlot;
use crate::output::Output;
use crate::readiness::Watch;
use crate::resp_batch::{Ahead, Batch, Next};
use crate::resp_commands::{self as commands, Dispatched, Kind, Owned};
use crate::resp_exec::{self, Started};
use crate::resp_key_order::Ticket;
use crate::resp_keyed::KeyCmd;
use crate::resp_server;
use crate::resp_session::{Conn, Order, RespSettings, NEXT_CLIENT_ID};
use crate::resp_table::{self, RespKey};
use crate::shard::Shard;

/// Serves one accepted RESP connection until the client closes it, QUIT, a protocol error, a
/// timeout, the output cap, or shutdown.
pub async fn serve(shard: Rc<Shard>, settings: Rc<RespSettings>, mut stream: TcpStream) {
    let _slot = match shard.admit_connection() {
        Ok(slot) => slot,
        Err(_) => {
            Counters::add(&shard.counters.connections_refused, 1);
            let _ = stream.write_all(b"-ERR max number of clients reached\r\n").await;
            let _ = stream.close().await;
            return;
        }
    };
    Counters::add(&shard.counters.connections_total, 1);
    let _ = stream.set_nodelay(true);
    let peer = stream.peer_addr().map_or_else(|_| "?".into(), |a| a.to_string());
    let local_addr = stream.local_addr().ok();
    let local = local_addr.map_or_else(|| "?".into(), |a| a.to_string());
    let own_port = local_addr.is_some_and(|a| shard.resp_ports.get(shard.id) == Some(&a.port()));
    let fd = stream.as_raw_fd();
    let (reader, writer) = futures_lite::io::split(stream);
    // The reads go through `watch` (`readiness.rs`), which keeps the read half open until it
    // has unregistered the socket.
    let Some(watch) = watch_readable(&shard, fd, Box::new(reader)) else { return };
    let out = Rc::new(Output::new(fd, shard.budget.clone()));
    // Every connection is watched: the idle sweeper and shutdown both reach it through the list
    // (`read_interrupt.rs`).
    shard.idle.watch(&out);
    let conn = Rc::new(Conn {
        out: out.clone(),
        settings,
        order: Order::default(),
        id: NEXT_CLIENT_ID.fetch_add(1, Ordering::Relaxed),
        name: RefCell::new(None),
        peer,
        local,
        own_port,
        closing: Cell::new(false),
        resp3: Cell::new(false),
        barrier: Cell::new(false),
        cursors: RefCell::default(),
        last_cursor: Cell::new(0),
    });
    let writer_task = glommio::spawn_local(write_loop(shard.clone(), out.clone(), writer));
    read_loop(&shard, &conn, &watch).await;
    close_after_reading(&shard, &out, writer_task).await;
}

/// The read buffer: bytes received and not yet acted on, grown past [`READ_CHUNK_BYTES`] only
/// for a long command, within the shard's buffer budget.
struct Input {
    buf: Vec<u8>,
    filled: usize,
    /// Bytes past READ_CHUNK_BYTES, charged to the shard's budget.
    charged: usize,
}

async fn read_loop(shard: &Rc<Shard>, conn: &Rc<Conn>, reader: &Watch) {
    let mut input = Input { buf: vec![0; READ_CHUNK_BYTES], filled: 0, charged: 0 };
    let mut batch = Batch::default();
    let mut started: Option<Instant> = None;
    let out = &conn.out;
    loop {
        let (consumed, deferred) =
            act_on_commands(shard, conn, &input.buf[..input.filled], &mut batch);
        out.flush_now(&shard.counters);
        if consumed > 0 {
            input.buf.copy_within(consumed..input.filled, 0);
            input.filled -= consumed;
            started = None;
        }
        if conn.closing.get() {
            break;
        }
        if let Some(why) = deferred.or_else(|| full(shard, conn)) {
            Counters::add(&shard.counters.deferred, 1);
            if !wait_for_room(shard, conn, why).await {
                break;
            }
            continue;
        }
        if !make_room(shard, conn, &mut input) {
            break;
        }
        if input.filled > 0 && started.is_none() {
            started = Some(Instant::now());
        }
        let timeout = read_timeout(&shard.limits, started);
        let into = &mut input.buf[input.filled..];
        match wait_for_input(shard, out, reader, into, timeout).await {
            Wake::Read(Ok(0)) | Wake::Read(Err(_)) | Wake::Shutdown | Wake::Killed => break,
            Wake::Read(Ok(n)) => {
                input.filled += n;
                Counters::add(&shard.counters.bytes_in, n as u64);
                out.input_seen.set(true);
            }
            Wake::Full => {}
            Wake::Timeout => break,
        }
    }
    shard.budget.give(input.charged);
}

/// Whether the connection must stop running commands for now, and what it waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Full {
    /// Room for one more reply in the output.
    Output,
    /// A task to finish: the replies waiting behind tasks are at `max_inflight_per_connection`,
    /// or hold half the output cap, or a command over several keys or the node runs (nothing
    /// after it starts before it is done).
    Order,
    /// Every task to finish: the next command is one over several keys or the node, which
    /// starts only when nothing before it runs.
    Idle,
}

/// What, if anything, keeps the connection from running its next command.
fn full(shard: &Shard, conn: &Conn) -> Option<Full> {
    let cap = shard.limits.output_buffer_bytes;
    if conn.barrier.get()
        || conn.order.len() >= shard.limits.inflight_per_connection
        || conn.order.queued_bytes.get() > cap / 2
    {
        return Some(Full::Order);
    }
    (conn.out.committed() + SMALL_RESPONSE_BYTES > cap).then_some(Full::Output)
}

/// Waits until the connection may run commands again. False when it must close (the client
/// takes no replies for the read timeout, shutdown, or the connection was killed).
async fn wait_for_room(shard: &Shard, conn: &Conn, why: Full) -> bool {
    let out = &conn.out;
    if why == Full::Output {
        let below = shard.limits.output_buffer_bytes - SMALL_RESPONSE_BYTES + 1;
        return wait_for_output(shard, out, below).await;
    }
    let listener = out.finished.listen();
    let waits = match why {
        Full::Idle => !conn.order.idle(),
        _ => full(shard, conn) == Some(Full::Order),
    };
    if !waits || out.killed.get() {
        return !out.killed.get();
    }
    futures_lite::future::or(
        async {
            listener.await;
            true
        },
        async {
            shard.shutdown.requested().await;
            false
        },
    )
    .await
}

/// Makes room in the read buffer for more bytes: grows it (doubling, within the shard's budget
/// and the command limit) when a partial command fills it, shrinks it once empty. False when a
/// command cannot fit (answered with an error; the connection closes).
fn make_room(shard: &Shard, conn: &Conn, input: &mut Input) -> bool {
    if input.filled < input.buf.len() {
        if input.filled == 0 && input.charged > 0 {
            input.buf.truncate(READ_CHUNK_BYTES);
            input.buf.shrink_to_fit();
            shard.budget.give(input.charged);
            input.charged = 0;
        }
        return true;
    }
    let limit = conn.settings.parse.command_bytes_max;
    let grown = (input.buf.len() * 2).min(limit.max(READ_CHUNK_BYTES));
    let extra = grown.saturating_sub(input.buf.len());
    if extra == 0 || !shard.budget.try_take(extra) {
        let mut reply = Vec::new();
        let why = if extra == 0 {
            format!("ERR Protocol error: command larger than {limit} bytes")
        } else {
            format!(
                "BUSY the shard's buffer budget ({} bytes) cannot hold this command",
                shard.budget.limit()
            )
        };
        reply::error(&mut reply, &why);
        deliver(conn, reply);
        conn.out.flush_now(&shard.counters);
        return false;
    }
    input.charged += extra;
    input.buf.resize(grown, 0);
    true
}

/// A reply that is ready now: to the output, or behind the running tasks.
fn deliver(conn: &Conn, reply: Vec<u8>) {
    let reply = conn.in_protocol(reply);
    if conn.order.idle() {
        conn.out.push(&reply);
    } else {
        conn.order.queue(reply);
    }
}

/// Acts on every complete command at the start of `buf`, parsed a batch at a time
/// (`resp_batch.rs`); the bytes consumed, and why the next command was put off, if it was (it
/// stays in the buffer).
fn act_on_commands(
    shard: &Rc<Shard>,
    conn: &Rc<Conn>,
    buf: &[u8],
    batch: &mut Batch,
) -> (usize, Option<Full>) {
    let mut pos = 0;
    let mut now: Option<u64> = None;
    while pos < buf.len() && !conn.closing.get() && !conn.out.killed.get() {
        let n = match batch.parse(buf, pos, &conn.settings.parse) {
            Next::Incomplete => break,
            Next::Malformed(e) => {
                let mut reply = Vec::new();
                reply::error(&mut reply, &format!("ERR {e}"));
                deliver(conn, reply);
                conn.closing.set(true);
                break;
            }
            Next::Commands(n) => n,
        };
        batch.prefetch(shard, buf);
        for i in 0..n {
            if conn.closing.get() || conn.out.killed.get() {
                return (pos, None);
            }
            if let Some(why) = full(shard, conn) {
                return (pos, Some(why));
            }
            let (ahead, args) = batch.command(i);
            let raw = &buf[ahead.start..ahead.start + ahead.len];
            // A command over several keys or the node runs alone: it starts when nothing before
            // it runs, and nothing after it starts before it is done, so that it is ordered with
            // the connection's other commands although it waits between its parts.
            let barrier = ahead.spec.is_some_and(|s| matches!(s.kind, Kind::Keys | Kind::Node));
            if barrier && !conn.order.idle() {
                return (pos, Some(Full::Idle));
            }
            pos += ahead.len;
            if !args.is_empty() {
                let now = *now.get_or_insert_with(|| shard.tables.store().now_ms());
                run(shard, conn, raw, args, ahead, batch.stored_key(ahead), now);
            }
        }
    }
    (pos, None)
}

/// Runs one parsed command: inline when it can complete now, else in a task.
fn run(
    shard: &Rc<Shard>,
    conn: &Rc<Conn>,
    raw: &[u8],
    args: &Args,
    ahead: &Ahead,
    stored: Option<&[u8]>,
    now: u64,
) {
    Counters::add(&shard.counters.resp_commands, 1);
    let Some(spec) = ahead.spec else {
        return error(shard, conn, &commands::unknown(args, raw));
    };
    if let Err(e) = commands::check_arity(spec, args.len()) {
        return error(shard, conn, &e);
    }
    match spec.kind {
        Kind::Connection => {
            let mut reply = Vec::new();
            resp_server::connection_command(shard, conn, spec.name, args, raw, now, &mut reply);
            deliver(conn, reply);
        }
        Kind::Key => {
            let key = RespKey { raw: args.get(raw, 1), stored };
            key_now(shard, conn, spec.name, raw, args, key, ahead.owner, now)
        }
        Kind::Keys | Kind::Node => spawn(shard, conn, spec.kind, raw),
    }
}

/// A one-key command the inline path does not run (another shard's key, or the shard at its
/// in-flight limit): sent on its way now, in command order (run here, queued behind its key,
/// or forwarded), its reply in its place in the order; a durable write's reply waits in the
/// shard's acknowledger, and a task waits for the reply only if it is neither.
fn key_behind(shard: &Rc<Shard>, conn: &Rc<Conn>, raw: &[u8], args: &Args) {
    let Some((seq, slot)) = take_slot(shard, conn) else { return };
    let words: Vec<&[u8]> = args.iter(raw).collect();
    match commands::dispatch(shard, &words, conn.settings.durability) {
        Dispatched::Ready(reply) => conn.finish(seq, reply, slot),
        Dispatched::Durable(wait, reply) => {
            let to = ReplyTo::Resp { conn: conn.clone(), seq };
            shard.acks.push(Waiting { wait, frame: reply, to, slot });
        }
        dispatched => await_in_task(shard, conn, seq, slot, dispatched, raw),
    }
}

/// A task that waits for a dispatched command's reply and puts it in its place.
fn await_in_task(
    shard: &Rc<Shard>,
    conn: &Rc<Conn>,
    seq: u64,
    slot: InflightSlot,
    dispatched: Dispatched,
    raw: &[u8],
) {
    let Some(owned) = Owned::parse(raw.to_vec()) else {
        unreachable!("the command parsed a moment ago");
    };
    let (shard, conn) = (shard.clone(), conn.clone());
    glommio::spawn_local(async move {
        let words = owned.words();
        let durability = conn.settings.durability;
        let reply = commands::resolve(&shard, dispatched, &words, durability).await;
        conn.finish(seq, reply, slot);
    })
    .detach();
}

fn error(shard: &Shard, conn: &Conn, message: &str) {
    Counters::add(&shard.counters.errors, 1);
    let mut reply = Vec::new();
    reply::error(&mut reply, message);
    deliver(conn, reply);
}

/// A one-key command, run inline on this shard if it owns the key and the row is in memory:
/// its reply straight into the output while nothing waits in the order, else into its place
/// in the order. A write that waits for durability leaves its reply with the shard's
/// acknowledger (`durable_acks.rs`), in its place in the order, so later replies wait behind
/// it and no task is needed; a row on disk or a command queued behind its key takes a task.
///
/// `owner` is the key's owner shard, and `key.stored` its encoding, if the read batch found
/// them (`resp_batch.rs`).
#[allow(clippy::too_many_arguments)]
fn key_now(
    shard: &Rc<Shard>,
    conn: &Rc<Conn>,
    name: &str,
    raw: &[u8],
    args: &Args,
    key: RespKey<'_>,
    owner: Option<usize>,
    now: u64,
) {
    // At the shard's in-flight limit a write that waits for durability could not take its slot
    // after it was written: the task path answers BUSY before running anything.
    if shard.inflight.get() >= shard.limits.inflight_per_shard {
        return key_behind(shard, conn, raw, args);
    }
    match owner.map_or_else(|| resp_table::owner_of(shard, key.raw), Ok) {
        Ok(owner) if owner == shard.id => {}
        Ok(_) => return key_behind(shard, conn, raw, args),
        Err(e) => return error(shard, conn, &e),
    }
    // The arguments after the key, on the stack for the common short commands.
    let mut stack: [&[u8]; WORDS_ON_STACK] = [&[]; WORDS_ON_STACK];
    let heap: Vec<&[u8]>;
    let words: &[&[u8]] = if args.len() - 2 <= WORDS_ON_STACK {
        for i in 2..args.len() {
            stack[i - 2] = args.get(raw, i);
        }
        &stack[..args.len() - 2]
    } else {
        heap = (2..args.len()).map(|i| args.get(raw, i)).collect();
        &heap
    };
    let cmd = match KeyCmd::parse(name, words, now) {
        Ok(cmd) => cmd,
        Err(e) => return error(shard, conn, &e),
    };
    let (started, reply) = if conn.order.idle() {
        start_in_output(shard, conn, key, &cmd, now)
    } else {
        let mut reply = Vec::new();
        let started = resp_exec::start(shard, key, &cmd, conn.settings.durability, now, &mut reply);
        (started, Some(reply))
    };
    match (started, reply) {
        (Started::Done(None), None) => {}
        (Started::Done(None), Some(reply)) => deliver(conn, reply),
        (Started::Done(Some(wait)), reply) => await_durable(shard, conn, wait, reply),
        (Started::Queued(ticket), _) => queued(shard, conn, ticket, raw),
    }
}

/// Starts `cmd` with its reply encoded straight into the output (nothing waits in the order);
/// the reply of a write that waits for durability is taken back out (Some), to wait behind
/// its write.
fn start_in_output(
    shard: &Shard,
    conn: &Conn,
    key: RespKey<'_>,
    cmd: &KeyCmd<'_>,
    now: u64,
) -> (Started, Option<Vec<u8>>) {
    let durability = conn.settings.durability;
    let mut pending = conn.out.pending.borrow_mut();
    let before = pending.len();
    let started = resp_exec::start(shard, key, cmd, durability, now, &mut pending);
    if let Started::Done(Some(_)) = started {
        return (started, Some(pending.split_off(before)));
    }
    if conn.resp3.get() {
        let two = pending.split_off(before);
        reply::to_resp3(&two, &mut pending);
    }
    let added = pending.len() - before;
    drop(pending);
    conn.out.add_unsent(added);
    (started, None)
}

/// A written command whose reply waits for durability: a place in the order, and the reply
/// with the shard's acknowledger, which fills the place once the write's flush covers it.
fn await_durable(shard: &Shard, conn: &Rc<Conn>, wait: DurableWait, reply: Option<Vec<u8>>) {
    let Some((seq, slot)) = take_slot(shard, conn) else {
        unreachable!("key_now checked the shard's in-flight limit before writing");
    };
    let frame = reply.unwrap_or_default();
    let to = ReplyTo::Resp { conn: conn.clone(), seq };
    shard.acks.push(Waiting { wait, frame, to, slot });
}

/// Arguments of a one-key command the inline path keeps on the stack (more: a Vec).
const WORDS_ON_STACK: usize = 8;

/// A one-key command that waits for its key's turn or a disk read (`resp_key_order.rs`): a
/// task with the ticket it took (given back if the task cannot start).
fn queued(shard: &Rc<Shard>, conn: &Rc<Conn>, ticket: Ticket, raw: &[u8]) {
    let Some((seq, slot)) = take_slot(shard, conn) else { return };
    await_in_task(shard, conn, seq, slot, Dispatched::Queued(ticket), raw);
}

/// Takes an in-flight slot of the shard and a place in the connection's order; answers
/// `-BUSY` (None) past the shard's in-flight budget.
fn take_slot(shard: &Shard, conn: &Conn) -> Option<(u64, InflightSlot)> {
    match shard.admit_request() {
        Ok(slot) => {
            conn.out.inflight.set(conn.out.inflight.get() + 1);
            Some((conn.order.open(), slot))
        }
        Err(e) => {
            Counters::add(&shard.counters.busy, 1);
            error(shard, conn, &format!("BUSY {e}"));
            None
        }
    }
}

/// Runs a command in a task of its own, its reply in its place in the order; one over several
/// keys or the node holds the connection's barrier while it runs.
fn spawn(shard: &Rc<Shard>, conn: &Rc<Conn>, kind: Kind, raw: &[u8]) {
    let Some((seq, slot)) = take_slot(shard, conn) else { return };
    if matches!(kind, Kind::Keys | Kind::Node) {
        conn.barrier.set(true);
    }
    let Some(owned) = Owned::parse(raw.to_vec()) else {
        unreachable!("the command parsed a moment ago");
    };
    let (shard, conn) = (shard.clone(), conn.clone());
    glommio::spawn_local(async move {
        let words = owned.words();
        let durability = conn.settings.durability;
        let reply = match kind {
            Kind::Key => commands::keyed(&shard, &words, durability).await,
            Kind::Keys => commands::keys(&shard, &words, durability).await,
            _ => resp_server::node_command(&shard, &conn, &words).await,
        };
        if matches!(kind, Kind::Keys | Kind::Node) {
            conn.barrier.set(false);
        }
        conn.finish(seq, reply, slot);
    })
    .detach();
}
