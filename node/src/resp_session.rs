//! A RESP connection's state, shared by its read loop (`resp_connection.rs`), its tasks and the
//! commands about the connection (`resp_server.rs`): its settings, name and id, and the order
//! its replies must leave in.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;

use ringstore_net::resp::{reply, ParseLimits};
use ringstore_storage::Durability;

use crate::inflight::InflightSlot;
use crate::output::Output;

/// The RESP port's node-level settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RespSettings {
    /// How durable a write is before its reply (`--resp-durability`).
    pub durability: Durability,
    pub parse: ParseLimits,
}

/// Client ids, node-wide (CLIENT ID).
pub static NEXT_CLIENT_ID: AtomicU64 = AtomicU64::new(1);

/// One RESP connection's state.
#[derive(Debug)]
pub struct Conn {
    pub out: Rc<Output>,
    pub settings: Rc<RespSettings>,
    pub order: Order,
    pub id: u64,
    pub name: RefCell<Option<Vec<u8>>>,
    pub peer: String,
    pub local: String,
    /// The connection came in on its shard's own RESP port (a Redis Cluster node,
    /// `resp_cluster.rs`), not the shared one: its node-wide commands cover that shard only
    /// (`resp_scan::scope`).
    pub own_port: bool,
    /// QUIT, or a protocol error: stop reading, close once the replies are out.
    pub closing: Cell<bool>,
    /// The client asked for RESP3 (`HELLO 3`): replies are converted as they are delivered
    /// (`reply::to_resp3`).
    pub resp3: Cell<bool>,
    /// A command over several keys or the node runs: no later command starts before it ends
    /// (`resp_connection.rs`).
    pub barrier: Cell<bool>,
    /// Open SCAN cursors, oldest first (`resp_scan.rs`).
    pub cursors: RefCell<VecDeque<Cursor>>,
    /// The last cursor number handed out.
    pub last_cursor: Cell<u64>,
}

/// Where a SCAN goes on: the shard it reads, and the stored key after which it resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    pub id: u64,
    pub shard: usize,
    pub resume: Option<Vec<u8>>,
}

impl Conn {
    /// A reply (RESP2, as every command writes it) in the connection's protocol.
    pub fn in_protocol(&self, reply: Vec<u8>) -> Vec<u8> {
        if !self.resp3.get() {
            return reply;
        }
        let mut three = Vec::with_capacity(reply.len());
        reply::to_resp3(&reply, &mut three);
        three
    }

    /// The reply of the command that took place `seq` in the order (a task's, or a durable
    /// write's from the shard's acknowledger), in its place; its in-flight slot given back.
    pub fn finish(&self, seq: u64, reply: Vec<u8>, slot: InflightSlot) {
        let reply = self.in_protocol(reply);
        self.order.fill(seq, reply, &self.out);
        drop(slot);
        self.out.inflight.set(self.out.inflight.get() - 1);
        self.out.finished.notify_all();
    }

    /// The cursor `id` (forgotten once used: each SCAN call hands out a new one).
    pub fn take_cursor(&self, id: u64) -> Option<Cursor> {
        let mut cursors = self.cursors.borrow_mut();
        let at = cursors.iter().position(|c| c.id == id)?;
        cursors.remove(at)
    }

    /// A new cursor for `shard` and `resume`; the oldest is forgotten past `max`.
    pub fn open_cursor(&self, shard: usize, resume: Option<Vec<u8>>, max: usize) -> u64 {
        let id = self.last_cursor.get() + 1;
        self.last_cursor.set(id);
        let mut cursors = self.cursors.borrow_mut();
        if cursors.len() >= max {
            cursors.pop_front();
        }
        cursors.push_back(Cursor { id, shard, resume });
        id
    }
}

/// Replies that wait for an earlier command's task, in command order.
#[derive(Debug, Default)]
pub struct Order {
    /// Sequence number of the first entry of `slots`.
    head: Cell<u64>,
    /// None: its task still runs.
    slots: RefCell<VecDeque<Option<Vec<u8>>>>,
    /// Bytes of the finished replies waiting in `slots`.
    pub queued_bytes: Cell<usize>,
}

impl Order {
    /// Nothing waits: a reply may go straight to the output.
    pub fn idle(&self) -> bool {
        self.slots.borrow().is_empty()
    }

    pub fn is_empty(&self) -> bool {
        self.idle()
    }

    pub fn len(&self) -> usize {
        self.slots.borrow().len()
    }

    /// A place for the reply of a task; its sequence number.
    pub fn open(&self) -> u64 {
        let mut slots = self.slots.borrow_mut();
        slots.push_back(None);
        self.head.get() + slots.len() as u64 - 1
    }

    /// A reply that is ready but must wait behind a running task.
    pub fn queue(&self, reply: Vec<u8>) {
        self.queued_bytes.set(self.queued_bytes.get() + reply.len());
        self.slots.borrow_mut().push_back(Some(reply));
    }

    /// The task `seq` finished with `reply`: queues every reply now at the front into `out`.
    pub fn fill(&self, seq: u64, reply: Vec<u8>, out: &Output) {
        let mut slots = self.slots.borrow_mut();
        self.queued_bytes.set(self.queued_bytes.get() + reply.len());
        slots[(seq - self.head.get()) as usize] = Some(reply);
        while let Some(Some(_)) = slots.front() {
            let Some(Some(ready)) = slots.pop_front() else { unreachable!("front checked") };
            self.head.set(self.head.get() + 1);
            self.queued_bytes.set(self.queued_bytes.get() - ready.len());
            out.push(&ready);
        }
    }
}
