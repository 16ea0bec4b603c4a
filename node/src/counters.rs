//! A shard's request counters, reported by Stats and the metrics endpoint. Their own module so
//! that what only counts (a connection's output) does not need the whole shard, which holds
//! that output's queue of responses (`durable_acks.rs`).

use std::cell::{Cell, RefCell};

use ringstore_net::Opcode;

/// A shard's request counters (the store keeps its own).
#[derive(Debug)]
pub struct Counters {
    /// Requests by opcode, in [`Opcode::ALL`] order.
    pub ops: RefCell<Vec<(Opcode, u64)>>,
    pub errors: Cell<u64>,
    pub busy: Cell<u64>,
    /// Times a request waited unread for room in its connection's output.
    pub deferred: Cell<u64>,
    pub bytes_in: Cell<u64>,
    pub bytes_out: Cell<u64>,
    pub forwarded_out: Cell<u64>,
    pub forwarded_in: Cell<u64>,
    pub connections_total: Cell<u64>,
    pub connections_refused: Cell<u64>,
    /// Commands received on the RESP port (`resp_connection.rs`).
    pub resp_commands: Cell<u64>,
    /// RESP read commands that found their key, and that did not (INFO's `keyspace_hits` and
    /// `keyspace_misses`; `resp_exec.rs`), counted on the key's owner.
    pub resp_keyspace_hits: Cell<u64>,
    pub resp_keyspace_misses: Cell<u64>,
}

impl Default for Counters {
    fn default() -> Counters {
        Counters {
            ops: RefCell::new(Opcode::ALL.iter().map(|op| (*op, 0)).collect()),
            errors: Cell::new(0),
            busy: Cell::new(0),
            deferred: Cell::new(0),
            bytes_in: Cell::new(0),
            bytes_out: Cell::new(0),
            forwarded_out: Cell::new(0),
            forwarded_in: Cell::new(0),
            connections_total: Cell::new(0),
            connections_refused: Cell::new(0),
            resp_commands: Cell::new(0),
            resp_keyspace_hits: Cell::new(0),
            resp_keyspace_misses: Cell::new(0),
        }
    }
}

impl Counters {
    pub fn count_op(&self, op: Opcode) {
        if let Some(entry) = self.ops.borrow_mut().iter_mut().find(|(o, _)| *o == op) {
            entry.1 += 1;
        }
    }

    pub fn add(cell: &Cell<u64>, n: u64) {
        cell.set(cell.get() + n);
    }
}
