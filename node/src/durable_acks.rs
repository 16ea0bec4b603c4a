//! Acknowledging durable writes: one task per shard sends the responses of every inline write
//! that waits for group commit (`Sync` or `WriteNoSync`, `inline.rs`), as each flush makes them
//! durable.
//!
//! An inline write is appended and its response encoded at once; what is left is the wait. A
//! task per write would cost a spawn, a listener and a wake-up per request, and then a wake-up of
//! the connection's writer task to send one frame. Here the write's response waits in one queue
//! per shard instead, and at each progress of the store's flusher (a flush written, a flush
//! synced, or the store poisoned) this task moves every covered response into its connection's
//! output and sends each touched connection's output with one `send`. So a flush that makes
//! 32 pipelined writes of one connection durable costs one wake-up and one send.
//!
//! Limits: every queued write holds a slot of its connection's and its shard's in-flight budgets
//! (taken before it was appended), so the queue is bounded by `--max-inflight-per-shard`.

use std::cell::RefCell;
use std::rc::Rc;

use ringstore_net::Header;
use ringstore_storage::table::OpError;
use ringstore_storage::DurableWait;

use crate::dispatch::failure_frame;
use crate::output::Output;
use crate::shard::{InflightSlot, Shard};

/// A written request whose response waits for durability.
#[derive(Debug)]
pub struct Waiting {
    pub wait: DurableWait,
    pub header: Header,
    /// The whole response frame, in a pooled buffer.
    pub frame: Vec<u8>,
    pub out: Rc<Output>,
    pub slot: InflightSlot,
}

/// The shard's queue of responses waiting for durability, in append order.
#[derive(Debug, Default)]
pub struct DurableAcks {
    queue: RefCell<Vec<Waiting>>,
    /// Woken when the queue gets its first entry.
    added: event_listener::Event,
}

impl DurableAcks {
    pub fn push(&self, waiting: Waiting) {
        let mut queue = self.queue.borrow_mut();
        queue.push(waiting);
        if queue.len() == 1 {
            self.added.notify(1);
        }
    }

    fn is_empty(&self) -> bool {
        self.queue.borrow().is_empty()
    }

    /// Moves every response whose write is now durable (or can never be: the store was
    /// poisoned, and the response becomes the error) into its connection's output, in queue
    /// order, and sends each touched output once. Returns whether any was delivered.
    fn deliver(&self, shard: &Shard) -> bool {
        let store = shard.tables.store();
        let mut queue = self.queue.borrow_mut();
        let covered = |w: &mut Waiting| !matches!(store.is_durable(w.wait), Ok(false));
        let mut last: Option<Rc<Output>> = None;
        let mut delivered = false;
        for w in queue.extract_if(.., covered) {
            delivered = true;
            let frame = match store.is_durable(w.wait) {
                Ok(_) => w.frame,
                Err(e) => {
                    shard.buffers.give(w.frame);
                    failure_frame(shard, w.header, OpError::from(e).into())
                }
            };
            // Consecutive entries are mostly one connection's pipelined writes: each connection
            // is sent once its run of entries ends.
            if let Some(previous) = last.take_if(|p| !Rc::ptr_eq(p, &w.out)) {
                previous.flush_now(&shard.counters);
            }
            w.out.finish(shard, frame, w.slot);
            last.get_or_insert(w.out);
        }
        if let Some(previous) = last {
            previous.flush_now(&shard.counters);
        }
        delivered
    }
}

/// The acknowledging task of one shard; runs until the shard stops (its handle is dropped).
pub async fn run(shard: Rc<Shard>) {
    let acks = &shard.acks;
    loop {
        if acks.is_empty() {
            let added = acks.added.listen();
            if acks.is_empty() {
                added.await;
            }
            continue;
        }
        // Listen before looking, so a flush that ends in between is not missed.
        let progress = shard.tables.store().progress_listener();
        if !acks.deliver(&shard) {
            progress.await;
        }
    }
}
