//! A shard's budget for the bytes its connections hold on behalf of clients: responses queued
//! or reserved for requests still running, and read buffers grown past
//! [`crate::connection::READ_CHUNK_BYTES`] for a large request frame. Its limit is the shard's
//! share of `--max-buffer-bytes`. A request whose reply could be large (rows, DDL output) is
//! answered BUSY (720) instead of run when its largest reply does not fit what is left, and a
//! large request frame that does not fit is answered BUSY and its body discarded instead of
//! stored (`connection.rs`). Bytes already produced are always counted, never dropped, so the
//! budget can be exceeded only by small replies (BUSY, write receipts, pings, statistics).

use std::cell::Cell;
use std::rc::Rc;

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
