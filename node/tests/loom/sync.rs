//! The loom side of `node/src/sync.rs`: what the node's cross-thread files are compiled against
//! in the models. Atomics, `Arc` and threads are loom's; `Event` is a model of
//! `event-listener`'s `Event` that keeps the contract the node relies on.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

pub use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
pub use loom::sync::Arc;

/// A model of `event_listener::Event` as the node uses it: `notify(usize::MAX)` wakes every
/// listener created before the call, and a listener created after it waits for the next one.
/// (The real `Event` also notifies a listener that registered before `notify` but was not
/// polled yet; the model keeps that by counting notifications rather than registered wakers.)
#[derive(Debug, Default)]
pub struct Event {
    state: loom::sync::Mutex<EventState>,
}

#[derive(Debug, Default)]
struct EventState {
    notifications: u64,
    wakers: Vec<Waker>,
}

impl Event {
    pub fn new() -> Event {
        Event::default()
    }

    pub fn notify(&self, n: usize) {
        assert_eq!(n, usize::MAX, "the model knows only notify-all, which is all the node uses");
        let wakers = {
            let mut state = self.state.lock().expect("a model thread panicked holding the lock");
            state.notifications += 1;
            std::mem::take(&mut state.wakers)
        };
        for waker in wakers {
            waker.wake();
        }
    }

    pub fn listen(&self) -> EventListener<'_> {
        let seen =
            self.state.lock().expect("a model thread panicked holding the lock").notifications;
        EventListener { event: self, seen }
    }
}

/// A registered interest in the next notification of an [`Event`].
#[derive(Debug)]
pub struct EventListener<'a> {
    event: &'a Event,
    seen: u64,
}

impl Future for EventListener<'_> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut state = self.event.state.lock().expect("a model thread panicked holding the lock");
        if state.notifications != self.seen {
            Poll::Ready(())
        } else {
            state.wakers.push(cx.waker().clone());
            Poll::Pending
        }
    }
}

/// What the node files' unit tests run on inside the models.
pub mod testing {
    pub use loom::future::block_on;
    pub use loom::thread;

    /// Runs `f` under every interleaving of its threads (loom's exhaustive search, with no
    /// preemption bound unless `LOOM_MAX_PREEMPTIONS` sets one).
    pub fn model(f: impl Fn() + Sync + Send + 'static) {
        loom::model(f)
    }
}
