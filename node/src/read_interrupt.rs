//! What ends a connection's wait for input other than bytes: the connection killed, shutdown
//! requested, or its unsent responses reaching the output cap.
//!
//! The read loop waits for input once per request at pipeline 1. It used to race the read
//! against three `event_listener` waits (shutdown, kill, output cap), and each wait costs a
//! listener linked into an event's list under its lock, a poll and an unlink: about 3% of the
//! node's CPU per request at pipeline 1 (docs/BENCHMARKS.md, lever 16). Instead the wait leaves
//! its task's waker in the connection's [`Output`] (one cell, no lock, kept from one wait to the
//! next when the task is the same) and the three causes wake it directly:
//!
//! - [`Output::kill`] wakes it;
//! - [`Output::add_unsent`] wakes it when the unsent bytes reach the cap the wait gave;
//! - shutdown: the shard's sweeper task (`idle_task.rs`) wakes every open connection of its
//!   shard once a stop is requested (`IdleWatch::wake_reads`), and a wait that starts later sees
//!   the request at its first poll.
//!
//! The waker is dropped when the read loop ends ([`Output::forget_read_waker`]); it refers to
//! the connection's own task, which holds the output.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::output::Output;
use crate::shutdown::Shutdown;

/// Why the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    Killed,
    Shutdown,
    /// The unsent responses reached the cap: stop reading until the client takes them.
    Full,
}

/// Resolves with the first [`Interrupt`] that holds; see the module docs.
#[derive(Debug)]
pub struct ReadInterrupt<'a> {
    out: &'a Output,
    shutdown: &'a Shutdown,
    cap: usize,
}

impl<'a> ReadInterrupt<'a> {
    pub fn new(out: &'a Output, shutdown: &'a Shutdown, cap: usize) -> ReadInterrupt<'a> {
        ReadInterrupt { out, shutdown, cap }
    }
}

impl Future for ReadInterrupt<'_> {
    type Output = Interrupt;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Interrupt> {
        let out = self.out;
        if out.killed.get() {
            return Poll::Ready(Interrupt::Killed);
        }
        if self.shutdown.is_requested() {
            return Poll::Ready(Interrupt::Shutdown);
        }
        if out.unsent.get() >= self.cap {
            return Poll::Ready(Interrupt::Full);
        }
        out.set_read_waker(cx.waker(), self.cap);
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    //! Each cause ends a pending wait, through the waker the wait left, and a wait that starts
    //! after its cause ends at once.

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::{Wake, Waker};

    use super::*;
    use crate::budget::BufferBudget;

    struct CountingWaker(AtomicUsize);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn poll(fut: &mut ReadInterrupt<'_>, waker: &Waker) -> Poll<Interrupt> {
        Pin::new(fut).poll(&mut Context::from_waker(waker))
    }

    #[test]
    fn a_kill_and_the_output_cap_wake_a_pending_wait() {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let shutdown = Shutdown::new(1);
        let out = Output::new(-1, BufferBudget::new(1 << 20));

        let mut wait = ReadInterrupt::new(&out, &shutdown, 8);
        assert_eq!(poll(&mut wait, &waker), Poll::Pending);
        out.add_unsent(4);
        assert_eq!(counter.0.load(Ordering::SeqCst), 0, "4 bytes are below the cap of 8");
        out.add_unsent(4);
        assert_eq!(counter.0.load(Ordering::SeqCst), 1, "reaching the cap wakes the wait");
        assert_eq!(poll(&mut wait, &waker), Poll::Ready(Interrupt::Full));
        out.sub_unsent(8);

        let mut wait = ReadInterrupt::new(&out, &shutdown, 8);
        assert_eq!(poll(&mut wait, &waker), Poll::Pending);
        out.kill();
        assert_eq!(counter.0.load(Ordering::SeqCst), 2, "a kill wakes the wait");
        assert_eq!(poll(&mut wait, &waker), Poll::Ready(Interrupt::Killed));
    }

    #[test]
    fn a_requested_shutdown_ends_a_wait_and_forgetting_drops_the_waker() {
        let counter = Arc::new(CountingWaker(AtomicUsize::new(0)));
        let waker = Waker::from(counter.clone());
        let shutdown = Shutdown::new(1);
        let out = Output::new(-1, BufferBudget::new(1 << 20));
        let mut wait = ReadInterrupt::new(&out, &shutdown, 8);
        assert_eq!(poll(&mut wait, &waker), Poll::Pending);
        assert_eq!(Arc::strong_count(&counter), 3, "the test's two handles and the output's");
        shutdown.request();
        out.wake_read();
        assert_eq!(counter.0.load(Ordering::SeqCst), 1);
        assert_eq!(poll(&mut wait, &waker), Poll::Ready(Interrupt::Shutdown));
        out.forget_read_waker();
        assert_eq!(Arc::strong_count(&counter), 2, "the output no longer holds the waker");
    }
}
