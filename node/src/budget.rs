//! A shard's budget for the bytes its connections hold on behalf of clients: responses queued
//! or reserved for requests still running, and read buffers grown past
//! [`crate::connection::READ_CHUNK_BYTES`] for a large request frame. Its limit is the shard's
//! share of `--max-buffer-bytes`. A request whose reply could be large (rows, DDL output) is
//! answered BUSY (720) instead of run when its largest reply does not fit what is left, and a
//! large request frame that does not fit is answered BUSY and its body discarded instead of
//! stored (`connection.rs`). Bytes already produced are always counted, never dropped, so the
//! budget can be exceeded only by small replies (BUSY, write receipts, pings, statistics).
//! What a request's reply can take is [`response_bound`] of its opcode; a Get's is sized from
//! its row instead (`inline.rs`).

use std::cell::Cell;
use std::rc::Rc;

use ringstore_net::frame::HEADER_BYTES;
use ringstore_net::Opcode;

use crate::config::Limits;
use crate::error::RequestError;

/// Reserved for the response of a request that returns no rows: a receipt or an error message.
pub const SMALL_RESPONSE_BYTES: usize = 4096;

/// Response bytes reserved for a response before its request runs: a write's receipt (or
/// error) is small; anything that returns rows or text can fill a whole frame (a Get that reads
/// the disk reserves less: `response::get_stored_bound` of its record, `inline.rs`).
pub fn response_bound(opcode: Opcode, limits: &Limits) -> usize {
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

/// The shard's buffer bytes in use against its limit; one per shard, shared by its connections.
#[derive(Debug)]
pub struct BufferBudget {
    used: Cell<usize>,
    limit: usize,
}

impl BufferBudget {
    pub fn new(limit: usize) -> Rc<BufferBudget> {
        Rc::new(BufferBudget { used: Cell::new(0), limit })
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn used(&self) -> usize {
        self.used.get()
    }

    /// The error of a request whose response does not fit what is left (BUSY).
    pub fn full(&self) -> RequestError {
        RequestError::Busy {
            what: "the shard's buffer budget (max_buffer_bytes / shards)",
            limit: self.limit,
        }
    }

    /// Whether a request whose reply can take `bound` bytes must be answered BUSY: a large
    /// reply that does not fit what is left. Small replies are never refused for buffer space
    /// (their bytes still count).
    pub fn refuses(&self, bound: usize) -> bool {
        bound > SMALL_RESPONSE_BYTES && !self.fits(bound)
    }

    /// Whether `bytes` more fit under the limit.
    pub fn fits(&self, bytes: usize) -> bool {
        self.used.get().checked_add(bytes).is_some_and(|total| total <= self.limit)
    }

    /// Takes `bytes` if they fit under the limit.
    pub fn try_take(&self, bytes: usize) -> bool {
        let fits = self.fits(bytes);
        if fits {
            self.used.set(self.used.get() + bytes);
        }
        fits
    }

    /// Counts `bytes` that exist already (a response produced), over the limit if need be.
    pub fn charge(&self, bytes: usize) {
        self.used.set(self.used.get() + bytes);
    }

    /// Gives back `bytes` taken or charged before.
    pub fn give(&self, bytes: usize) {
        let used = self.used.get();
        debug_assert!(bytes <= used, "giving back {bytes} of {used} bytes");
        self.used.set(used.saturating_sub(bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_reserve_a_receipt_and_reads_a_whole_frame() {
        let limits = Limits::default();
        let frame = HEADER_BYTES + limits.frame_body_bytes as usize;
        for op in [Opcode::Ping, Opcode::Put, Opcode::Update, Opcode::Delete, Opcode::Stats] {
            assert_eq!(response_bound(op, &limits), SMALL_RESPONSE_BYTES, "{op:?}");
        }
        for op in [Opcode::Get, Opcode::MultiGet, Opcode::Scan, Opcode::Ddl, Opcode::Execute] {
            assert_eq!(response_bound(op, &limits), frame, "{op:?}");
        }
    }

    #[test]
    fn takes_up_to_the_limit_and_counts_what_is_charged() {
        let budget = BufferBudget::new(100);
        assert!(budget.try_take(60));
        assert!(budget.fits(40) && !budget.fits(41));
        assert!(!budget.try_take(41), "60 + 41 is past the limit");
        assert!(budget.try_take(40));
        budget.charge(10);
        assert_eq!(budget.used(), 110, "produced bytes count even past the limit");
        assert!(!budget.try_take(1));
        budget.give(110);
        assert_eq!(budget.used(), 0);
        assert!(!budget.try_take(usize::MAX), "no overflow");
    }
}
