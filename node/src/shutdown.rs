//! Graceful shutdown across shards.
//!
//! SIGTERM or SIGINT sets [`Shutdown`] (from the signal thread). Each shard then stops accepting,
//! lets its connections finish the requests they have in flight and closes them, and reports
//! itself drained. A drained shard keeps serving requests forwarded by shards that are still
//! draining, so it waits at the barrier ([`Shutdown::wait_all_drained`]) until every shard is
//! drained; only then does it close its store (flush, sync, checkpoint) and stop.
//!
//! Everything here is woken through `event-listener`, whose wakers work across threads
//! (glommio accepts wakes from foreign threads), so no shard polls.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use event_listener::Event;

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

    #[test]
    fn barrier_opens_when_every_shard_drained() {
        let s = Shutdown::new(2);
        let waiter = {
            let s = s.clone();
            std::thread::spawn(move || futures_lite::future::block_on(s.wait_all_drained()))
        };
        let requested = {
            let s = s.clone();
            std::thread::spawn(move || futures_lite::future::block_on(s.requested()))
        };
        s.request();
        requested.join().expect("requested() returns after request()");
        s.shard_drained();
        s.shard_drained();
        waiter.join().expect("the barrier opens after both shards drained");
    }
}
