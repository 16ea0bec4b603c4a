//! YCSB's acknowledged counter (`AcknowledgedCounterGenerator`): inserts take key numbers in
//! order when they are sent, but their replies arrive in any order, so the keys a read may pick
//! are those below the highest number under which every insert was acknowledged. A read of a key
//! whose insert is still in flight would find nothing and be counted as a successful read.
//!
//! As in YCSB, an insert answered with an error is acknowledged too (its reply has come, and the
//! counter must not stall behind it); a read of its key is then a not-found read, which the
//! results count on their own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

/// Key numbers below [`AckedCounter::limit`] have all been acknowledged.
#[derive(Debug)]
pub struct AckedCounter {
    limit: AtomicU64,
    /// Acknowledged key numbers above the limit, waiting for the ones below them. It holds at
    /// most the inserts in flight at once (each client's `--pipeline`).
    ahead: Mutex<BinaryHeap<Reverse<u64>>>,
}

impl AckedCounter {
    /// A counter under which keys `0..first` already exist (the load phase's).
    pub fn new(first: u64) -> AckedCounter {
        AckedCounter { limit: AtomicU64::new(first), ahead: Mutex::new(BinaryHeap::new()) }
    }

    /// Every key number below this one has been acknowledged.
    pub fn limit(&self) -> u64 {
        self.limit.load(Ordering::Acquire)
    }

    /// The insert of key `key` has been answered.
    pub fn acknowledge(&self, key: u64) {
        let mut ahead = self.ahead.lock().unwrap_or_else(PoisonError::into_inner);
        let mut limit = self.limit.load(Ordering::Acquire);
        if key != limit {
            // Below the limit: a key that existed before the run (never the case for an insert).
            if key > limit {
                ahead.push(Reverse(key));
            }
            return;
        }
        limit += 1;
        while ahead.peek().is_some_and(|&Reverse(k)| k == limit) {
            ahead.pop();
            limit += 1;
        }
        self.limit.store(limit, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_moves_only_over_a_gapless_prefix() {
        let c = AckedCounter::new(10);
        assert_eq!(c.limit(), 10);
        // 11 and 12 answered before 10: nothing below 13 may be read yet except 0..10.
        c.acknowledge(12);
        c.acknowledge(11);
        assert_eq!(c.limit(), 10);
        c.acknowledge(10);
        assert_eq!(c.limit(), 13);
        c.acknowledge(14);
        assert_eq!(c.limit(), 13);
        c.acknowledge(13);
        assert_eq!(c.limit(), 15);
        // A key below the limit changes nothing.
        c.acknowledge(3);
        assert_eq!(c.limit(), 15);
    }

    #[test]
    fn threads_acknowledging_in_any_order_reach_the_end() {
        const KEYS: u64 = 4000;
        let c = std::sync::Arc::new(AckedCounter::new(0));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let c = c.clone();
                // Thread t acknowledges t, t+4, ... from the top down: out of order.
                std::thread::spawn(move || {
                    for k in (0..KEYS).rev().filter(|k| k % 4 == t) {
                        c.acknowledge(k);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(c.limit(), KEYS);
    }
}
