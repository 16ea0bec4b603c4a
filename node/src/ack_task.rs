//! The shard's acknowledging task: empties the queue of responses waiting for durability
//! (`durable_acks.rs`, which explains the scheme) at each progress of the store's flusher, into
//! the connections' outputs, one `send` per touched connection.
//!
//! It is apart from the queue because it needs the whole shard (its store, buffers, counters),
//! and the shard holds the queue.

use std::rc::Rc;

use ringstore_storage::table::OpError;

use crate::dispatch::failure_frame;
use crate::durable_acks::{DurableAcks, ReplyTo, Waiting};
use crate::output::Output;
use crate::resp_commands;
use crate::shard::Shard;

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
        if !deliver(acks, &shard) {
            progress.await;
        }
    }
}

/// Moves every response whose write is now durable (or can never be: the store was
/// poisoned, and the response becomes the error) into its connection's output, in queue
/// order, and sends each touched output once. Returns whether any was delivered.
fn deliver(acks: &DurableAcks, shard: &Shard) -> bool {
    let store = shard.tables.store();
    let mut queue = acks.queue.borrow_mut();
    let covered = |w: &mut Waiting| !matches!(store.is_durable(w.wait), Ok(false));
    let mut last: Option<Rc<Output>> = None;
    let mut delivered = false;
    for w in queue.extract_if(.., covered) {
        delivered = true;
        let out = w.to.out().clone();
        // Consecutive entries are mostly one connection's pipelined writes: each connection
        // is sent once its run of entries ends.
        if let Some(previous) = last.take_if(|p| !Rc::ptr_eq(p, &out)) {
            previous.flush_now(&shard.counters);
        }
        let failed = store.is_durable(w.wait).err();
        match w.to {
            ReplyTo::Frame { header, out } => {
                let frame = match failed {
                    None => w.frame,
                    Some(e) => {
                        shard.buffers.give(w.frame);
                        failure_frame(shard, header, OpError::from(e).into())
                    }
                };
                out.finish(&shard.buffers, frame, w.slot);
            }
            ReplyTo::Resp { conn, seq } => {
                let reply = match failed {
                    None => w.frame,
                    Some(e) => resp_commands::error_reply(&format!("ERR {e}")),
                };
                conn.finish(seq, reply, w.slot);
            }
        }
        last.get_or_insert(out);
    }
    if let Some(previous) = last {
        previous.flush_now(&shard.counters);
    }
    delivered
}
