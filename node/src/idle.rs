//! Closing idle connections (`--idle-timeout-ms`): one sweep task per shard instead of a timer
//! per read.
//!
//! A glommio timer per read wait costs a timer registration, two map inserts and a removal in
//! the reactor for every request: 3.9% of the node's CPU per get at pipeline 1
//! (docs/BENCHMARKS.md, lever 14). Instead, each connection's read loop marks its [`Output`]
//! when bytes arrive (one store), and a sweep task (`idle_task.rs`) looks at every connection of the shard
//! [`IDLE_SWEEPS_PER_TIMEOUT`] times per idle timeout: a connection that received nothing for
//! that many sweeps in a row is killed, which ends its read loop like any other kill. So a
//! connection is closed after at least the idle timeout and at most a quarter more without
//! input.
//!
//! The watch list is here, held by the shard (`shard.rs`); the task that sweeps it is
//! `idle_task.rs`. Every connection is on the list, also with no idle timeout: at shutdown the
//! same task wakes each connection's wait for input through it (`read_interrupt.rs`).
//!
//! The read timeout of a frame that has started (`--read-timeout-ms`) still uses a timer in
//! the read loop: it is armed only while a frame is incomplete.

use std::cell::{Cell, RefCell};
use std::rc::{Rc, Weak};
use std::time::Duration;

use crate::output::Output;

/// Sweeps per idle timeout: the timeout is enforced within `1 / IDLE_SWEEPS_PER_TIMEOUT` of
/// itself, late, never early.
pub const IDLE_SWEEPS_PER_TIMEOUT: u32 = 4;

/// The shortest time between two sweeps, whatever the idle timeout.
pub const IDLE_SWEEP_INTERVAL_MIN: Duration = Duration::from_millis(1);

/// The list is pruned of closed connections when it reaches this many entries, or twice what
/// the last pruning left, whichever is more: between sweeps (75 s apart by default) it holds at
/// most about twice the shard's open connections, however many come and go.
pub const IDLE_WATCH_PRUNE_MIN: usize = 64;

/// The connections of one shard that the sweeper watches.
#[derive(Debug, Default)]
pub struct IdleWatch {
    watched: RefCell<Vec<Watched>>,
    /// Length at which [`IdleWatch::watch`] next drops closed connections.
    prune_at: Cell<usize>,
}

#[derive(Debug)]
struct Watched {
    out: Weak<Output>,
    /// Sweeps in a row that found no input on the connection.
    quiet_sweeps: u32,
}

impl IdleWatch {
    /// Starts watching a new connection; it is forgotten once its output is dropped (at the
    /// next sweep, or when the list has grown enough to prune).
    pub fn watch(&self, out: &Rc<Output>) {
        let mut watched = self.watched.borrow_mut();
        if watched.len() >= self.prune_at.get().max(IDLE_WATCH_PRUNE_MIN) {
            watched.retain(|w| w.out.strong_count() > 0);
            self.prune_at.set(2 * watched.len());
        }
        watched.push(Watched { out: Rc::downgrade(out), quiet_sweeps: 0 });
    }

    /// One look at every connection: kills those quiet for `sweeps` sweeps in a row, forgets
    /// closed ones. Returns how many it killed.
    pub fn sweep(&self, sweeps: u32) -> usize {
        let mut killed = 0;
        self.watched.borrow_mut().retain_mut(|w| {
            let Some(out) = w.out.upgrade() else { return false };
            if out.input_seen.replace(false) {
                w.quiet_sweeps = 0;
                return true;
            }
            w.quiet_sweeps += 1;
            if w.quiet_sweeps < sweeps {
                return true;
            }
            out.kill();
            killed += 1;
            false
        });
        killed
    }

    /// Wakes the read loop of every open connection (shutdown: see `read_interrupt.rs`).
    /// Returns how many it woke.
    pub fn wake_reads(&self) -> usize {
        let mut woken = 0;
        for out in self.watched.borrow().iter().filter_map(|w| w.out.upgrade()) {
            out.wake_read();
            woken += 1;
        }
        woken
    }

    /// Connections watched (closed ones not yet forgotten included).
    pub fn len(&self) -> usize {
        self.watched.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The time between two sweeps for an idle timeout of `idle_timeout_ms` (not 0).
pub fn sweep_interval(idle_timeout_ms: u64) -> Duration {
    (Duration::from_millis(idle_timeout_ms) / IDLE_SWEEPS_PER_TIMEOUT).max(IDLE_SWEEP_INTERVAL_MIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BufferBudget;

    /// An output that is never written to (the sweeper only reads its flags), so no socket.
    fn output() -> Rc<Output> {
        Rc::new(Output::new(-1, BufferBudget::new(1 << 20)))
    }

    #[test]
    fn a_connection_is_killed_after_a_full_timeout_of_quiet_sweeps_and_not_before() {
        let watch = IdleWatch::default();
        let (quiet, busy) = (output(), output());
        watch.watch(&quiet);
        watch.watch(&busy);
        for sweep in 1..IDLE_SWEEPS_PER_TIMEOUT {
            busy.input_seen.set(true);
            assert_eq!(watch.sweep(IDLE_SWEEPS_PER_TIMEOUT), 0, "sweep {sweep}");
            assert!(!quiet.killed.get(), "killed after {sweep} quiet sweeps");
        }
        busy.input_seen.set(true);
        assert_eq!(watch.sweep(IDLE_SWEEPS_PER_TIMEOUT), 1);
        assert!(quiet.killed.get(), "quiet for a whole timeout");
        assert!(!busy.killed.get(), "input every sweep");
        assert_eq!(watch.len(), 1, "the killed connection is no longer watched");
    }

    #[test]
    fn input_starts_the_count_again_and_closed_connections_are_forgotten() {
        let watch = IdleWatch::default();
        let out = output();
        watch.watch(&out);
        for _ in 1..IDLE_SWEEPS_PER_TIMEOUT {
            watch.sweep(IDLE_SWEEPS_PER_TIMEOUT);
        }
        // The sweep that sees the input, then a whole timeout of quiet sweeps.
        out.input_seen.set(true);
        for _ in 0..=IDLE_SWEEPS_PER_TIMEOUT {
            assert!(!out.killed.get());
            watch.sweep(IDLE_SWEEPS_PER_TIMEOUT);
        }
        assert!(out.killed.get(), "a full timeout of quiet sweeps after the last input");

        let gone = output();
        watch.watch(&gone);
        drop(gone);
        assert_eq!(watch.sweep(IDLE_SWEEPS_PER_TIMEOUT), 0);
        assert!(watch.is_empty());
    }

    #[test]
    fn closed_connections_do_not_pile_up_between_sweeps() {
        let watch = IdleWatch::default();
        let open: Vec<_> = (0..10).map(|_| output()).collect();
        for out in &open {
            watch.watch(out);
        }
        for _ in 0..100_000 {
            let short_lived = output();
            watch.watch(&short_lived);
        }
        let most = (2 * open.len()).max(IDLE_WATCH_PRUNE_MIN) + 1;
        assert!(watch.len() <= most, "{} entries for {} open connections", watch.len(), open.len());
        assert_eq!(watch.sweep(IDLE_SWEEPS_PER_TIMEOUT), 0);
        assert_eq!(watch.len(), open.len());
    }

    #[test]
    fn sweeps_come_four_times_per_timeout_and_never_faster_than_the_floor() {
        assert_eq!(sweep_interval(300_000), Duration::from_secs(75));
        assert_eq!(sweep_interval(200), Duration::from_millis(50));
        assert_eq!(sweep_interval(1), IDLE_SWEEP_INTERVAL_MIN);
    }
}
