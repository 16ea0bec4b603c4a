//! Acknowledging durable writes: one task per shard sends the responses of every inline write
//! that waits for group commit (`Sync` or `WriteNoSync`: a binary request, `inline.rs`, or a RESP
//! write under `--resp-durability`, `resp_connection.rs`), as each flush makes them durable.
//!
//! An inline write is appended and its response encoded at once; what is left is the wait. A
//! task per write would cost a spawn, a listener and a wake-up per request, and then a wake-up of
//! the connection's writer task to send one frame. Here the write's response waits in one queue
//! per shard instead, and at each progress of the store's flusher (a flush written, a flush
//! synced, or the store poisoned) this task moves every covered response into its connection's
//! output and sends each touched connection's output with one `send`. So a flush that makes
//! 32 pipelined writes of one connection durable costs one wake-up and one send.
//!
//! The queue is here, held by the shard (`shard.rs`); the task that empties it is `ack_task.rs`.
//!
//! A binary response carries its request id, so it goes to the output as soon as it is durable.
//! A RESP reply has no id: it goes to its place in the connection's order (`resp_session.rs`,
//! `Order`), which sends it, and the replies of later commands waiting behind it, once every
//! earlier reply is out.
//!
//! Limits: every queued write holds a slot of its connection's and its shard's in-flight budgets
//! (taken before it was appended), so the queue is bounded by `--max-inflight-per-shard`.

use std::cell::RefCell;
use std::rc::Rc;

use ringstore_net::Header;
use ringstore_storage::DurableWait;

use crate::inflight::InflightSlot;
use crate::output::Output;
use crate::resp_session::Conn;

/// A written request whose response waits for durability.
#[derive(Debug)]
pub struct Waiting {
    pub wait: DurableWait,
    /// The response: a whole binary frame in a pooled buffer, or a RESP reply (RESP2, as every
    /// command writes it).
    pub frame: Vec<u8>,
    pub to: ReplyTo,
    pub slot: InflightSlot,
}

/// Where a durable write's response goes.
#[derive(Debug)]
pub enum ReplyTo {
    /// A binary-protocol response frame, to the output as it is; `header` is the request's,
    /// to answer it with an error should the write never become durable.
    Frame { header: Header, out: Rc<Output> },
    /// A RESP reply, to its place `seq` in the connection's order.
    Resp { conn: Rc<Conn>, seq: u64 },
}

impl ReplyTo {
    /// The connection's output.
    pub fn out(&self) -> &Rc<Output> {
        match self {
            ReplyTo::Frame { out, .. } => out,
            ReplyTo::Resp { conn, .. } => &conn.out,
        }
    }
}

/// The shard's queue of responses waiting for durability, in append order.
#[derive(Debug, Default)]
pub struct DurableAcks {
    /// Emptied by the acknowledging task (`ack_task.rs`).
    pub(crate) queue: RefCell<Vec<Waiting>>,
    /// Woken when the queue gets its first entry.
    pub(crate) added: event_listener::Event,
}

impl DurableAcks {
    pub fn push(&self, waiting: Waiting) {
        let mut queue = self.queue.borrow_mut();
        queue.push(waiting);
        if queue.len() == 1 {
            self.added.notify(1);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.borrow().is_empty()
    }
}
