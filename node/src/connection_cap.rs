//! The node-wide connection cap (`max_connections`), shared by every shard's listeners.
//!
//! A listener takes a slot before it serves a connection and gives it back when the connection
//! closes, on the shard that took it. Taking is one compare-and-swap loop, so the cap is exact:
//! never more than `limit` connections hold a slot, and a take refused with 721 means `limit`
//! were held at that instant (no transient over-count from a refused attempt, as a
//! fetch-add-then-undo would give). Checked under every interleaving by the loom models
//! (`node/tests/loom_models.rs`).

use crate::sync::{AtomicUsize, Ordering};

/// Open connections against the node's limit.
#[derive(Debug)]
pub struct ConnectionCap {
    open: AtomicUsize,
    limit: usize,
}

impl ConnectionCap {
    pub fn new(limit: usize) -> ConnectionCap {
        ConnectionCap { open: AtomicUsize::new(0), limit }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Connections holding a slot now.
    pub fn open(&self) -> usize {
        self.open.load(Ordering::Acquire)
    }

    /// Takes a slot if fewer than `limit` are held.
    pub fn try_take(&self) -> bool {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.limit).then_some(open + 1)
            })
            .is_ok()
    }

    /// Gives back a slot taken with [`ConnectionCap::try_take`].
    pub fn give(&self) {
        let before = self.open.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(before > 0, "gave back a connection slot nobody held");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::testing::{model, thread};
    use crate::sync::Arc;

    /// Two connections on different shards race for the one slot while each holder checks
    /// the count; every slot comes back. (Two threads keep loom's search exhaustive.)
    #[test]
    fn never_more_than_the_limit_hold_a_slot() {
        model(|| {
            let cap = Arc::new(ConnectionCap::new(1));
            let holders = Arc::new(AtomicUsize::new(0));
            let connect = |cap: &ConnectionCap, holders: &AtomicUsize| {
                if !cap.try_take() {
                    return false;
                }
                let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
                assert_eq!(now, 1, "{now} connections hold a slot under a limit of 1");
                holders.fetch_sub(1, Ordering::SeqCst);
                cap.give();
                true
            };
            let other = {
                let (cap, holders) = (cap.clone(), holders.clone());
                thread::spawn(move || connect(&cap, &holders))
            };
            let mine = connect(&cap, &holders);
            let theirs = other.join().unwrap();
            // A take is refused only while the other holds the slot, so at least one won.
            assert!(mine || theirs, "neither connection got the free slot");
            assert_eq!(cap.open(), 0, "every slot was given back");
            assert!(cap.try_take(), "a free slot is taken once nobody else holds one");
        });
    }

    /// With the limit held, a take is refused; once one holder gives back, the next take wins.
    #[test]
    fn a_refusal_means_the_limit_was_held() {
        model(|| {
            let cap = Arc::new(ConnectionCap::new(1));
            assert!(cap.try_take());
            let other = {
                let cap = cap.clone();
                thread::spawn(move || cap.try_take())
            };
            let got = other.join().unwrap();
            assert!(!got, "the only slot is held");
            let giver = {
                let cap = cap.clone();
                thread::spawn(move || cap.give())
            };
            let taker = {
                let cap = cap.clone();
                thread::spawn(move || cap.try_take())
            };
            giver.join().unwrap();
            let took = taker.join().unwrap();
            // The taker ran either before the give (refused: the slot was held) or after it.
            assert_eq!(cap.open(), usize::from(took));
            assert!(cap.open() <= 1);
        });
    }
}
