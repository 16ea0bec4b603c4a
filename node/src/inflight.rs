//! A slot of a shard's in-flight budget (`--max-inflight-per-shard`): taken by
//! `Shard::admit_request`, held by a request until its response is queued, given back when
//! dropped. It holds the shard's count alone, not the shard, so that what holds a slot (a
//! connection's output, the acknowledger's queue) does not need the shard.

use std::cell::Cell;
use std::rc::Rc;

/// A slot of the shard's in-flight budget, returned when dropped.
#[derive(Debug)]
pub struct InflightSlot {
    inflight: Rc<Cell<usize>>,
}

impl InflightSlot {
    /// Takes a slot: one more in `inflight`, the count of the shard's requests in flight.
    pub(crate) fn new(inflight: &Rc<Cell<usize>>) -> InflightSlot {
        inflight.set(inflight.get() + 1);
        InflightSlot { inflight: inflight.clone() }
    }
}

impl Drop for InflightSlot {
    fn drop(&mut self) {
        self.inflight.set(self.inflight.get() - 1);
    }
}
