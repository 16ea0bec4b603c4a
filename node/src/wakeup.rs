//! A wake-up between the tasks of one shard that costs nothing when nobody waits.
//!
//! `event_listener::Event::notify` takes a SeqCst fence and the event's lock on every call, even
//! with no listener. A connection's output notifies on every queued response, every send and
//! every finished request, and almost always nobody is listening: under Sync puts at pipeline
//! 32 the notifications of finished requests alone were 3.85% of the shard's CPU
//! (docs/BENCHMARKS.md, twenty-fifth session). A [`Wakeup`] remembers whether anyone listened
//! since its last notification and skips the call when nobody did. Everything that uses one
//! runs on the shard's thread, so a plain `Cell` is enough.

use std::cell::Cell;

use event_listener::{Event, EventListener};

/// An [`Event`] whose [`Wakeup::notify_all`] does nothing unless [`Wakeup::listen`] was called
/// since the last notification.
#[derive(Debug, Default)]
pub struct Wakeup {
    event: Event,
    /// A listener was made since the last notification.
    listened: Cell<bool>,
}

impl Wakeup {
    pub fn new() -> Wakeup {
        Wakeup::default()
    }

    /// A listener woken by the next [`Wakeup::notify_all`]. As with any `event_listener`
    /// listener, make it before checking the condition it waits for, then await it.
    pub fn listen(&self) -> EventListener {
        self.listened.set(true);
        self.event.listen()
    }

    /// Wakes every listener made since the last notification, if there is any.
    pub fn notify_all(&self) {
        if self.listened.replace(false) {
            self.event.notify(usize::MAX);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    fn poll(listener: &mut std::pin::Pin<&mut EventListener>) -> Poll<()> {
        listener.as_mut().poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn every_listener_made_before_a_notification_is_woken_by_it() {
        let w = Wakeup::new();
        w.notify_all(); // nobody listens: nothing to do, and nothing is remembered
        let mut a = pin!(w.listen());
        let mut b = pin!(w.listen());
        assert_eq!(poll(&mut a), Poll::Pending);
        w.notify_all();
        assert_eq!(poll(&mut a), Poll::Ready(()));
        assert_eq!(poll(&mut b), Poll::Ready(()));
        // A listener made after that notification waits for the next one.
        let mut c = pin!(w.listen());
        assert_eq!(poll(&mut c), Poll::Pending);
        w.notify_all();
        assert_eq!(poll(&mut c), Poll::Ready(()));
    }

    #[test]
    fn a_notification_with_nobody_listening_skips_the_event() {
        let w = Wakeup::new();
        w.notify_all();
        assert!(!w.listened.get());
        let listener = w.listen();
        assert!(w.listened.get());
        drop(listener);
        w.notify_all();
        assert!(!w.listened.get(), "the notification clears it");
    }
}
