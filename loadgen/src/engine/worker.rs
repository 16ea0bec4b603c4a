//! One load thread: a mio poll over the sessions of its clients. Each turn it lets every client
//! send what its schedule allows, flushes, waits for replies (or the next due time), and
//! records what completed. Nothing here allocates per request once buffers and maps have grown.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use ahash::RandomState;
use crossbeam::channel::Sender;
use mio::{Events, Poll, Token};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use ringstore_model::table::VersionSelect;
use ringstore_net::request::{Bound, RangeBody};
use ringstore_net::{FieldList, FieldsBuf, Reader, Request, ValueRef, WriteBody, WriteOptions};

use super::recorder::{IntervalPart, OpTimes, Recorder};
use super::schedule::Schedule;
use super::session::{ReplyFrame, Session};
use super::timer::{poll_timeout, Timer, TIMER_TOKEN};
use super::{Protocol, Shared};
use crate::distribution::KeyChooser;
use crate::keyspace::{write_key, KeySpace, KEY_FIELD, VALUE_FIELD};
use crate::results::{OpKind, OpResult, INTERVAL_MS};
use crate::scenario::Scenario;
use crate::verify::{fill_value, parse_write_ack, WriteLog};
use crate::workload::mix64;

/// Longest wait for any reply while requests are in flight before the run fails.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(30);
/// Events handled per poll call.
const EVENTS_CAPACITY: usize = 1024;

/// A logical client: its own key stream, schedule and one session per shard (shard-aware) or
/// one session to the shared port.
#[derive(Debug)]
pub(crate) struct Client {
    pub id: u64,
    pub sessions: Vec<usize>,
    pub rng: SmallRng,
    pub chooser: KeyChooser,
    pub schedule: Schedule,
    pub in_flight: usize,
    pub write_seq: u64,
    /// The shard whose keys it draws (`--bind-clients`), else None.
    pub shard: Option<usize>,
}

impl Client {
    /// Client `id` of a run, with its sessions (indexes into its worker's): its keys start at
    /// its share of the key space, its random stream is seeded from the run's seed and `id`.
    pub fn new(shared: &Shared, id: u64, sessions: Vec<usize>) -> Client {
        let spec = &shared.spec;
        let start = id * spec.items / spec.clients.max(1) as u64;
        let chooser = KeyChooser::new(&shared.workload.distribution, spec.items.max(1), start);
        Client {
            id,
            sessions,
            rng: SmallRng::seed_from_u64(mix64(spec.seed ^ mix64(id))),
            chooser,
            schedule: Schedule::new(shared.pace(), Instant::now()),
            in_flight: 0,
            write_seq: 0,
            shard: spec.bind_clients.then(|| id as usize % shared.keyspace.shards()),
        }
    }
}

/// What one worker hands back.
#[derive(Debug)]
pub(crate) struct WorkerOutput {
    pub ops: Vec<OpResult>,
    pub shard_ops: Vec<u64>,
    pub partition_ops: Vec<u64>,
    pub last_done: Option<Instant>,
    pub writes: WriteLog,
    pub error_messages: BTreeMap<u16, String>,
}

/// A reply read from a session.
#[derive(Debug, Clone, Copy)]
struct Answered {
    id: u64,
    status: u16,
    /// A Put's (token, version), in verify mode.
    ack: Option<(u64, u64)>,
    /// A Get answered "no such row".
    not_found: bool,
}

/// Most keys a bound client draws in a row that its shard does not own before the run fails:
/// past it the distribution leaves the shard (almost) no keys. With two shards and uniform keys
/// a draw misses half the time, so a run of this many misses (odds 2^-65536) is no accident.
pub const BIND_DRAWS_MAX: u32 = 1 << 16;

/// The next key of `client`'s stream that `shard` owns (`--bind-clients`): draws from the
/// run's distribution until one lands there, so the keys it sends follow the distribution
/// restricted to that shard. `key` is scratch space.
fn draw_owned(
    client: &mut Client,
    ks: &KeySpace,
    shard: usize,
    items: u64,
    key: &mut String,
) -> Result<u64, String> {
    for _ in 0..BIND_DRAWS_MAX {
        let n = client.chooser.next(&mut client.rng, items);
        if ks.owner_of_key(n, key) == shard {
            return Ok(n);
        }
    }
    Err(format!(
        "--bind-clients: client {} drew {BIND_DRAWS_MAX} keys in a row of which shard {shard} \
         owns none (the key distribution leaves it too few of the {items} keys)",
        client.id
    ))
}

/// Most bytes of an error message kept per status code (the first one seen).
pub const ERROR_MESSAGE_BYTES_MAX: usize = 512;

/// A request awaiting its reply.
#[derive(Debug, Clone, Copy)]
struct Pending {
    client: usize,
    kind: OpKind,
    key_no: u64,
    intended: Instant,
    sent: Instant,
    /// Set on the read half of a read-modify-write.
    rmw_read: bool,
    /// The read (of a read-modify-write) found no row.
    not_found: bool,
    write_id: u64,
    /// Issued in the measured phase (its due time, open loop; its send, closed loop).
    measured: bool,
}

/// Per-request scratch space, reused.
#[derive(Debug, Default)]
struct Scratch {
    key: String,
    /// STRING values of a scenario row.
    text: [String; 3],
    value: Vec<u8>,
    fields: FieldsBuf,
}

pub(super) struct Worker {
    shared: Arc<Shared>,
    poll: Poll,
    sessions: Vec<Session>,
    pending: Vec<HashMap<u64, Pending, RandomState>>,
    clients: Vec<Client>,
    scratch: Scratch,
    recorder: Recorder,
    writes: WriteLog,
    stopping: bool,
    /// Replies of one receive call, reused.
    done_buf: Vec<Answered>,
    /// Operations issued and not completed, over all clients.
    in_flight: usize,
    /// The first error message per status code.
    error_messages: BTreeMap<u16, String>,
    /// Open loop: wakes the poll when the next request is due (finer than its timeout).
    timer: Option<Timer>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").field("clients", &self.clients.len()).finish()
    }
}

impl Worker {
    /// Connects every client's sessions.
    pub fn connect(shared: Arc<Shared>, client_ids: &[u64]) -> Result<Worker, String> {
        let poll = Poll::new().map_err(|e| format!("mio poll: {e}"))?;
        let (mut sessions, mut clients) = (Vec::new(), Vec::new());
        let targets = shared.targets();
        for &id in client_ids {
            let mut mine = Vec::with_capacity(targets.len());
            for &addr in &targets {
                let token = Token(sessions.len());
                let protocol = shared.workload.protocol;
                sessions.push(Session::connect(addr, protocol, poll.registry(), token)?);
                mine.push(sessions.len() - 1);
            }
            clients.push(Client::new(&shared, id, mine));
        }
        let pending = (0..sessions.len()).map(|_| HashMap::default()).collect();
        let timer = match shared.open_loop() {
            true => Some(Timer::new(poll.registry(), TIMER_TOKEN)?),
            false => None,
        };
        let recorder = Recorder::new(
            shared.open_loop(),
            shared.keyspace.shards(),
            shared.keyspace.partition_count(),
        );
        let writes = match (&shared.workload.ack_log, shared.workload.verify) {
            (Some(file), true) => WriteLog::streaming(file.clone()),
            _ => WriteLog::default(),
        };
        Ok(Worker {
            shared,
            poll,
            sessions,
            pending,
            clients,
            scratch: Scratch::default(),
            recorder,
            writes,
            stopping: false,
            done_buf: Vec::new(),
            in_flight: 0,
            error_messages: BTreeMap::new(),
            timer,
        })
    }

    /// Runs until the run's end and every request is answered.
    pub fn run(
        mut self,
        ready: &Barrier,
        go: &Barrier,
        intervals: &Sender<IntervalPart>,
    ) -> Result<WorkerOutput, String> {
        ready.wait();
        go.wait();
        let times = *self.shared.times.get().ok_or("the controller set no start time")?;
        let pace = self.shared.pace();
        for c in &mut self.clients {
            c.schedule = Schedule::new(pace, times.start + self.shared.client_offset(c.id));
        }
        let interval = Duration::from_millis(INTERVAL_MS);
        let mut interval_end = times.measure_from + interval;
        let mut events = Events::with_capacity(EVENTS_CAPACITY);
        let mut last_reply = Instant::now();
        loop {
            let now = Instant::now();
            while now >= interval_end {
                let _ = intervals.send(self.recorder.take_interval());
                interval_end += interval;
            }
            self.check_stop(now, times.until);
            if self.stopping && self.in_flight == 0 {
                break;
            }
            if !self.stopping {
                // Open loop: a request due before the end still goes after it (it waited
                // behind the in-flight cap); nothing due after the end does.
                let due_by = times.until.map_or(now, |u| now.min(u - Duration::from_nanos(1)));
                self.issue_due(due_by, now, times.measure_from)?;
            }
            self.flush_all()?;
            if self.in_flight == 0 {
                last_reply = now;
            } else if now.duration_since(last_reply) > REPLY_TIMEOUT {
                return Err(format!(
                    "no reply for {} s with {} requests in flight",
                    REPLY_TIMEOUT.as_secs(),
                    self.in_flight
                ));
            }
            let wake = self.next_wake(interval_end, times.until);
            let timeout = poll_timeout(self.timer.as_mut(), wake)?;
            self.poll.poll(&mut events, Some(timeout)).map_err(|e| format!("poll: {e}"))?;
            for ev in events.iter() {
                if ev.token() == TIMER_TOKEN {
                    if let Some(t) = self.timer.as_mut() {
                        t.expired();
                    }
                    continue;
                }
                let s = ev.token().0;
                if ev.is_readable() || ev.is_read_closed() {
                    self.receive(s, ev.is_read_closed())?;
                    last_reply = Instant::now();
                }
                if ev.is_writable() {
                    self.sessions[s].flush()?;
                }
            }
        }
        let _ = intervals.send(self.recorder.take_interval());
        Ok(WorkerOutput {
            ops: self.recorder.results(),
            shard_ops: self.recorder.shard_ops,
            partition_ops: self.recorder.partition_ops,
            last_done: self.recorder.last_done,
            writes: self.writes,
            error_messages: self.error_messages,
        })
    }

    /// Stops issuing on abort, at the end of a closed-loop run, and in open loop once nothing
    /// due before the end is left to send.
    fn check_stop(&mut self, now: Instant, until: Option<Instant>) {
        if self.shared.abort.load(Ordering::Relaxed) {
            self.stopping = true;
        }
        let Some(u) = until.filter(|&u| now >= u) else {
            return;
        };
        let backlog = self.clients.iter().any(|c| c.schedule.next_wake().is_some_and(|w| w < u));
        if !self.shared.open_loop() || !backlog {
            self.stopping = true;
        }
    }

    /// The next moment something is due: the interval's end, the run's end, or a client's next
    /// request (clients at their in-flight cap wait for a reply, not for the clock).
    fn next_wake(&self, interval_end: Instant, until: Option<Instant>) -> Instant {
        let mut wake = interval_end;
        if self.stopping {
            return wake;
        }
        if let Some(u) = until.filter(|&u| u > Instant::now()) {
            wake = wake.min(u);
        }
        for c in &self.clients {
            if c.schedule.waits_for_replies(c.in_flight) {
                continue;
            }
            if let Some(w) = c.schedule.next_wake() {
                wake = wake.min(w);
            }
        }
        wake
    }

    fn flush_all(&mut self) -> Result<(), String> {
        for s in &mut self.sessions {
            if s.unsent() > 0 {
                s.flush()?;
            }
        }
        Ok(())
    }

    /// Lets every client send what its schedule allows by `due_by` (the clock, or the end of
    /// an open-loop run when that has passed).
    fn issue_due(
        &mut self,
        due_by: Instant,
        now: Instant,
        measure_from: Instant,
    ) -> Result<(), String> {
        for c in 0..self.clients.len() {
            loop {
                let client = &mut self.clients[c];
                let Some(intended) = client.schedule.next_due(due_by, client.in_flight) else {
                    break;
                };
                let measured = intended >= measure_from;
                if measured && !self.take_ticket() {
                    self.stopping = true;
                    return Ok(());
                }
                let kind = self.shared.workload.mix.pick(&mut self.clients[c].rng);
                if !self.issue(c, kind, intended, now, measured)? {
                    self.stopping = true;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Whether the run's operation budget (`--ops`) allows one more request.
    fn take_ticket(&mut self) -> bool {
        match self.shared.ops_limit {
            None => true,
            Some(limit) => self.shared.issued.fetch_add(1, Ordering::Relaxed) < limit,
        }
    }

    /// Sends one operation; false when the key space is exhausted (the load phase is done).
    fn issue(
        &mut self,
        c: usize,
        kind: OpKind,
        intended: Instant,
        now: Instant,
        m: bool,
    ) -> Result<bool, String> {
        let shared = &*self.shared;
        let key_no = if kind == OpKind::Insert {
            let n = shared.inserts.fetch_add(1, Ordering::Relaxed);
            if shared.insert_limit.is_some_and(|l| n >= l) {
                return Ok(false);
            }
            n
        } else {
            // Only keys whose insert was answered (YCSB's acknowledged counter).
            let items = shared.acked.limit().max(1);
            let client = &mut self.clients[c];
            match client.shard {
                None => client.chooser.next(&mut client.rng, items),
                Some(shard) => {
                    draw_owned(client, &shared.keyspace, shard, items, &mut self.scratch.key)?
                }
            }
        };
        let write_id = self.clients[c].id << 32 | (self.clients[c].write_seq & 0xFFFF_FFFF);
        self.clients[c].write_seq += 1;
        let op = if kind == OpKind::ReadModifyWrite { OpKind::Read } else { kind };
        let (session, id) = self.send(c, op, key_no, write_id, m);
        let p = Pending {
            client: c,
            kind,
            key_no,
            intended,
            sent: now,
            rmw_read: kind == OpKind::ReadModifyWrite,
            not_found: false,
            write_id,
            measured: m,
        };
        self.pending[session].insert(id, p);
        self.clients[c].in_flight += 1;
        self.in_flight += 1;
        Ok(true)
    }

    /// Encodes `op` on key `key_no` into the session that owns the key; returns the session
    /// and the request id. `m`: count the request in the shard and partition figures.
    fn send(&mut self, c: usize, op: OpKind, key_no: u64, write_id: u64, m: bool) -> (usize, u64) {
        let shared = &*self.shared;
        let ks = &shared.keyspace;
        if let Some(design) = ks.design {
            return self.send_scenario(c, design, key_no, write_id, m);
        }
        let Scratch { key, value, fields, .. } = &mut self.scratch;
        write_key(key, key_no, ks.key_size.of(key_no));
        let partition = ks.partition(key_no, key);
        let shard = ks.shard_of(partition);
        let sessions = &self.clients[c].sessions;
        let session = sessions[if sessions.len() > 1 { shard } else { 0 }];
        let w = &shared.workload;
        if w.protocol == Protocol::Resp {
            // Scans are refused before a RESP run starts (`check_resp`).
            let value = (op != OpKind::Read).then(|| {
                fill_value(value, key_no, write_id, w.value_size.of(mix64(write_id)));
                &value[..]
            });
            let id = self.sessions[session].queue_resp(key.as_bytes(), value);
            if m {
                self.recorder.sent(shard, Some(partition));
            }
            return (session, id);
        }
        fields.clear();
        fields.push(KEY_FIELD, ValueRef::String(key));
        let id = match op {
            OpKind::Read => {
                let req = Request::Get {
                    table: &ks.table,
                    key: fields.list(),
                    versions: VersionSelect::Newest,
                };
                self.sessions[session].queue(&req, w.durability, false)
            }
            OpKind::Scan => {
                let len = self.clients[c].rng.gen_range(1..=w.scan_length_max);
                let start = Bound { value: ValueRef::String(key), inclusive: true };
                let mut body = RangeBody::new(FieldList::empty(), len);
                body.range = Some((KEY_FIELD, Some(start), None));
                // No shard key: the node runs it on every shard in turn, which it refuses
                // unless asked (Lindorm's rule for scans without a leading-key range).
                body.allow_full_scan = true;
                self.sessions[session].queue(
                    &Request::Scan { table: &ks.table, range: body },
                    w.durability,
                    false,
                )
            }
            _ => {
                fill_value(value, key_no, write_id, w.value_size.of(mix64(write_id)));
                fields.push(VALUE_FIELD, ValueRef::Binary(value));
                let req = Request::Write {
                    table: &ks.table,
                    body: WriteBody::Put { row: fields.list() },
                    options: WriteOptions::default(),
                };
                self.sessions[session].queue(&req, w.durability, true)
            }
        };
        if m {
            let p = (op != OpKind::Scan).then_some(partition);
            self.recorder.sent(shard, p);
        }
        (session, id)
    }

    /// Writes one order row of user `user` in the scenario's layout.
    fn send_scenario(
        &mut self,
        c: usize,
        design: Scenario,
        user: u64,
        write_id: u64,
        m: bool,
    ) -> (usize, u64) {
        let shared = &*self.shared;
        let ks = &shared.keyspace;
        let w = &shared.workload;
        let Scratch { value, fields, text, .. } = &mut self.scratch;
        fill_value(value, user, write_id, w.value_size.of(mix64(write_id)));
        design.fill(fields, text, user, write_id, unix_ms(), value);
        // A scenario's fields always cover its shard key (the designs are fixed and tested).
        let partition = ks.partition_of_fields(fields.list()).unwrap_or(0);
        let shard = ks.shard_of(partition);
        let sessions = &self.clients[c].sessions;
        let session = sessions[if sessions.len() > 1 { shard } else { 0 }];
        let req = Request::Write {
            table: &ks.table,
            body: WriteBody::Put { row: fields.list() },
            options: WriteOptions::default(),
        };
        let id = self.sessions[session].queue(&req, w.durability, true);
        if m {
            self.recorder.sent(shard, Some(partition));
        }
        (session, id)
    }

    /// Reads session `s` and completes what was answered. Replies read before the node closed
    /// the connection are completed first; a reply with request id 0 is the node refusing the
    /// connection (docs/PROTOCOL.md), and its message becomes the run's error. `peer_closed`:
    /// the event said the node closed its side (see [`Session::receive`]).
    fn receive(&mut self, s: usize, peer_closed: bool) -> Result<(), String> {
        let mut done = std::mem::take(&mut self.done_buf);
        let verify = self.shared.workload.verify;
        let mut refused = None;
        let (pending, messages) = (&self.pending[s], &mut self.error_messages);
        let binary = self.shared.workload.protocol == Protocol::Binary;
        let read = self.sessions[s].receive(peer_closed, |r: ReplyFrame<'_>| {
            if binary && r.id == 0 && r.status != 0 {
                refused = Some(format!("error {}: {}", r.status, String::from_utf8_lossy(r.body)));
            }
            if r.status != 0 {
                messages.entry(r.status).or_insert_with(|| error_message(r.body));
            }
            let get = pending.get(&r.id).is_some_and(|p| p.kind == OpKind::Read || p.rmw_read);
            done.push(Answered {
                id: r.id,
                status: r.status,
                ack: if verify && r.status == 0 { parse_write_ack(r.body) } else { None },
                not_found: get && r.status == 0 && (r.nil || get_found(r.body) == Some(false)),
            });
        });
        let addr = self.sessions[s].addr();
        if let Some(why) = refused {
            return Err(format!("{addr}: the node refused the connection: {why}"));
        }
        let now = Instant::now();
        for a in &done {
            let p = self.pending[s].remove(&a.id).ok_or_else(|| {
                format!("{addr}: a reply to request {}, which was not sent", a.id)
            })?;
            self.complete(s, p, a, now);
        }
        done.clear();
        self.done_buf = done;
        read
    }

    fn complete(&mut self, s: usize, p: Pending, a: &Answered, now: Instant) {
        if p.rmw_read && a.status == 0 {
            // The write half of a read-modify-write goes to the same session, same key.
            let (session, id) =
                self.send(p.client, OpKind::Update, p.key_no, p.write_id, p.measured);
            debug_assert_eq!(session, s);
            let write = Pending { rmw_read: false, not_found: a.not_found, ..p };
            self.pending[session].insert(id, write);
            return;
        }
        if p.kind == OpKind::Insert {
            // Answered, with success or an error: reads may pick it now (YCSB does the same).
            self.shared.acked.acknowledge(p.key_no);
        }
        if let Some((token, _version)) = a.ack {
            if p.kind != OpKind::Read && p.kind != OpKind::Scan {
                self.writes.acked(p.key_no, token, p.write_id);
            }
        }
        self.clients[p.client].in_flight -= 1;
        self.in_flight -= 1;
        if p.measured {
            let times = OpTimes { intended: p.intended, sent: p.sent, at: now };
            self.recorder.done(p.kind, a.status, a.not_found || p.not_found, times);
        }
    }
}

/// Whether a Get reply (Columns, u8 found, [Row]) carries a row; None if it is malformed.
fn get_found(body: &[u8]) -> Option<bool> {
    let mut r = Reader::new(body);
    let columns = r.u16("column count").ok()?;
    for _ in 0..columns {
        r.name("column").ok()?;
    }
    match r.u8("found flag").ok()? {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// An error reply's message, cut to [`ERROR_MESSAGE_BYTES_MAX`] bytes.
fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(ERROR_MESSAGE_BYTES_MAX)]);
    text.into_owned()
}

/// Milliseconds since the Unix epoch (a scenario's order time).
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
