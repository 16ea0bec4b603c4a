//! Graceful shutdown across shards.
//!
//! SIGTERM or SIGINT sets [`Shutdown`] (from the signal thread). Each shard then stops accepting,
//! lets its connections finish the requests they have in flight and closes them, and reports
//! itself drained. A drained shard keeps serving requests forwarded by shards that are still
//! draining, so it waits at the barrier ([`Shutdown::wait_all_drained`]) until every shard is
//! drained; only then does it close its store (flush, sync, checkpoint) and stop.
//!
//! Everything here is woken through `event-listener`, whose wakers work across threads
//! (glommio accepts wakes from foreign threads), so no shard polls. Each wait checks its
//! condition, registers a listener, and checks again before sleeping, so a notification between
//! the first check and the registration is not lost; the loom models (`node/tests/loom_models.rs`,
//! which compile this file against loom through [`crate::sync`]) check that under every
//! interleaving.

use crate::sync::{Arc, AtomicBool, AtomicUsize, Event, Ordering};

/// The node-wide stop signal and drain barrier.
#[derive(Debug)]
pub struct Shutdown {
    requested: AtomicBool,
    requested_event: Event,
    drained: AtomicUsize,
    shards: usize,
    drained_event: Event,
}

impl Shutdown {
    pub fn new(shards: usize) -> Arc<Shutdown> {
        Arc::new(Shutdown {
            requested: AtomicBool::new(false),
            requested_event: Event::new(),
            drained: AtomicUsize::new(0),
            shards,
            drained_event: Event::new(),
        })
    }

    /// Asks every shard to stop (idempotent).
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.requested_event.notify(usize::MAX);
    }

    pub fn is_requested(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Resolves once a stop is requested.
    pub async fn requested(&self) {
        loop {
            if self.is_requested() {
                return;
            }
            let listener = self.requested_event.listen();
            if self.is_requested() {
                return;
            }
            listener.await;
        }
    }

    /// This shard has no connections left.
    pub fn shard_drained(&self) {
        self.drained.fetch_add(1, Ordering::SeqCst);
        self.drained_event.notify(usize::MAX);
    }

    /// Resolves once every shard is drained.
    pub async fn wait_all_drained(&self) {
        loop {
            if self.drained.load(Ordering::SeqCst) >= self.shards {
                return;
            }
            let listener = self.drained_event.listen();
            if self.drained.load(Ordering::SeqCst) >= self.shards {
                return;
            }
            listener.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sync::testing::{block_on, model, thread};

    /// The signal thread asks for a stop while a shard waits for it; the shard wakes. (Each
    /// model runs two threads, which keeps loom's search exhaustive.)
    #[test]
    fn a_request_wakes_the_waiting_shard() {
        model(|| {
            let s = Shutdown::new(1);
            let waiter = {
                let s = s.clone();
                thread::spawn(move || block_on(s.requested()))
            };
            s.request();
            waiter.join().expect("requested() returns after request()");
        });
    }

    /// Two shards (one on the model's own thread, which also takes the signal) drain and wait
    /// at the barrier: neither passes it before both drained.
    #[test]
    fn the_barrier_opens_only_when_every_shard_drained() {
        model(|| {
            let s = Shutdown::new(2);
            let finished = Arc::new(AtomicUsize::new(0));
            let drain = |s: &Shutdown, finished: &AtomicUsize| {
                block_on(s.requested());
                finished.fetch_add(1, Ordering::SeqCst);
                s.shard_drained();
                block_on(s.wait_all_drained());
                let done = finished.load(Ordering::SeqCst);
                assert_eq!(done, 2, "passed the barrier with {done} of 2 shards drained");
            };
            let other = {
                let (s, finished) = (s.clone(), finished.clone());
                thread::spawn(move || drain(&s, &finished))
            };
            s.request();
            drain(&s, &finished);
            other.join().expect("the barrier opens after both shards drained");
        });
    }

    /// A shard that fails while starting asks for the stop and counts itself drained; the other
    /// shard, waiting for a stop, drains and passes the barrier.
    #[test]
    fn a_failed_shard_stops_the_others() {
        model(|| {
            let s = Shutdown::new(2);
            let healthy = {
                let s = s.clone();
                thread::spawn(move || {
                    block_on(s.requested());
                    s.shard_drained();
                    block_on(s.wait_all_drained());
                })
            };
            // The failing shard, as `daemon::run_shard` does on an error.
            s.request();
            s.shard_drained();
            healthy.join().expect("the healthy shard stops");
            assert!(s.is_requested());
        });
    }
}
