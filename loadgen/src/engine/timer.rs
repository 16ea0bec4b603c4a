//! The open-loop wake-up: a timerfd registered in the worker's mio poll. mio's poll timeout is
//! epoll's, in whole milliseconds (rounded up), so a request due 0.2 ms from now would go out up
//! to 1 ms late, and the corrected latency would carry that lateness. A timerfd is armed with the
//! due time in nanoseconds and wakes the poll when it expires (measured on the development
//! machine: docs/LOADGEN.md, "Pacing").

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// The poll token of a worker's timer (session tokens are their indexes, far below it).
pub const TIMER_TOKEN: Token = Token(usize::MAX);

/// A one-shot CLOCK_MONOTONIC timerfd.
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
    /// The deadline it is armed for, if any.
    armed: Option<Instant>,
}

impl Timer {
    /// A disarmed timer, registered with `registry` under `token`.
    pub fn new(registry: &Registry, token: Token) -> Result<Timer, String> {
        // SAFETY: timerfd_create has no memory preconditions; the result is checked.
        let fd = unsafe {
            libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC)
        };
        if fd < 0 {
            return Err(format!("timerfd_create: {}", io::Error::last_os_error()));
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        registry
            .register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)
            .map_err(|e| format!("register the timer: {e}"))?;
        Ok(Timer { fd, armed: None })
    }

    /// Makes the timer expire at `at` (at once if that has passed); a timer already armed for
    /// `at` is left alone.
    pub fn arm(&mut self, at: Instant) -> Result<(), String> {
        if self.armed == Some(at) {
            return Ok(());
        }
        // A zero it_value disarms a timerfd: a deadline that has passed gets 1 ns.
        let after = at.saturating_duration_since(Instant::now()).max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec {
                tv_sec: after.as_secs() as libc::time_t,
                tv_nsec: after.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not asked for.
        let rc =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(format!("timerfd_settime: {}", io::Error::last_os_error()));
        }
        self.armed = Some(at);
        Ok(())
    }

    /// After the timer's poll event: reads its expiry count so the next expiry is a new event.
    pub fn expired(&mut self) {
        let mut count = [0u8; 8];
        // SAFETY: reads at most 8 bytes into `count`; a nonblocking read of a timer that has not
        // expired fails with EAGAIN, which is fine.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
        self.armed = None;
    }
}

/// How long the poll waits for `wake`: the time left, with the timer armed for `wake` when there
/// is one, so that the poll's own millisecond timeout (rounded up) is only a backstop that the
/// timer always beats.
pub fn poll_timeout(timer: Option<&mut Timer>, wake: Instant) -> Result<Duration, String> {
    let left = wake.saturating_duration_since(Instant::now());
    match timer {
        Some(t) if !left.is_zero() => {
            t.arm(wake)?;
            Ok(left + BACKSTOP)
        }
        _ => Ok(left),
    }
}

/// How much later than the timer the poll's own timeout wakes it (it never should).
const BACKSTOP: Duration = Duration::from_millis(1);

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    /// A poll woken by the timer, not by its (backstop) timeout, and never before the deadline.
    /// The lateness is printed (`--nocapture`) rather than asserted: it is the machine's.
    #[test]
    fn the_timer_wakes_the_poll_at_sub_millisecond_deadlines() {
        const WAKES: u32 = 200;
        let mut poll = Poll::new().expect("poll");
        let mut timer = Timer::new(poll.registry(), TIMER_TOKEN).expect("timer");
        let mut events = Events::with_capacity(4);
        let mut late_us = Vec::new();
        for i in 0..WAKES {
            // 100..300 µs ahead: a millisecond poll timeout would round each to 1 ms.
            let due = Instant::now() + Duration::from_micros(100 + u64::from(i % 3) * 100);
            loop {
                let timeout = poll_timeout(Some(&mut timer), due).expect("arm");
                poll.poll(&mut events, Some(timeout)).expect("poll");
                if events.iter().any(|e| e.token() == TIMER_TOKEN) {
                    timer.expired();
                    break;
                }
            }
            let now = Instant::now();
            assert!(now >= due, "woken {:?} early", due - now);
            late_us.push((now - due).as_secs_f64() * 1e6);
        }
        late_us.sort_by(f64::total_cmp);
        let at = |q: f64| late_us[((late_us.len() - 1) as f64 * q) as usize];
        eprintln!(
            "timerfd lateness over {WAKES} wakes: p50 {:.1} us, p90 {:.1} us, p99 {:.1} us, max {:.1} us",
            at(0.5),
            at(0.9),
            at(0.99),
            at(1.0)
        );
    }

    #[test]
    fn without_a_timer_the_poll_waits_the_time_left() {
        let wake = Instant::now() + Duration::from_secs(5);
        let left = poll_timeout(None, wake).expect("no timer");
        assert!(left <= Duration::from_secs(5));
        let poll = Poll::new().expect("poll");
        let mut timer = Timer::new(poll.registry(), TIMER_TOKEN).expect("timer");
        let with = poll_timeout(Some(&mut timer), wake).expect("timer");
        // The poll's timeout is a backstop behind the timer, armed for the wake itself.
        assert!(with > left);
        assert_eq!(timer.armed, Some(wake));
        // A wake that has passed: poll without waiting, nothing armed.
        let mut fresh = Timer::new(poll.registry(), Token(1)).expect("timer");
        assert_eq!(poll_timeout(Some(&mut fresh), Instant::now()).expect("now"), Duration::ZERO);
        assert_eq!(fresh.armed, None);
    }
}
