//! When a client may send its next request.
//!
//! Closed loop: whenever fewer than `depth` of its requests are in flight; a request's latency
//! runs from the moment it is sent. Open loop: request `i` of a client is due at
//! `start + i * interval`, whatever happened before; if the client already has `cap` requests
//! in flight the request waits, but its latency still runs from the time it was due. That is
//! the coordinated-omission correction: a node that stalls for a second delays every request
//! that was due during that second, not only the one it was serving, and the corrected
//! latencies say so. The uncorrected latency (from the real send) is recorded beside it.

use std::time::{Duration, Instant};

/// How a client paces its requests.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pace {
    /// Keep `depth` requests in flight.
    Closed { depth: usize },
    /// One request every `interval`, at most `cap` in flight.
    Open { interval: Duration, cap: usize },
}

/// One client's schedule.
#[derive(Debug, Clone)]
pub struct Schedule {
    pace: Pace,
    start: Instant,
    /// Requests handed out so far (the next one's index).
    issued: u64,
}

impl Schedule {
    pub fn new(pace: Pace, start: Instant) -> Schedule {
        Schedule { pace, start, issued: 0 }
    }

    /// The intended send time of the next request if it may be sent at `now` with `in_flight`
    /// requests outstanding, counting it as issued; None if it must wait.
    pub fn next_due(&mut self, now: Instant, in_flight: usize) -> Option<Instant> {
        match self.pace {
            Pace::Closed { depth } => (in_flight < depth).then(|| {
                self.issued += 1;
                now
            }),
            Pace::Open { cap, .. } => {
                let due = self.intended(self.issued);
                (due <= now && in_flight < cap).then(|| {
                    self.issued += 1;
                    due
                })
            }
        }
    }

    /// Whether the client is at its in-flight limit, so only a reply lets it send.
    pub fn waits_for_replies(&self, in_flight: usize) -> bool {
        match self.pace {
            Pace::Closed { depth } => in_flight >= depth,
            Pace::Open { cap, .. } => in_flight >= cap,
        }
    }

    /// When this client next has something to send regardless of replies (open loop only).
    pub fn next_wake(&self) -> Option<Instant> {
        match self.pace {
            Pace::Closed { .. } => None,
            Pace::Open { .. } => Some(self.intended(self.issued)),
        }
    }

    fn intended(&self, i: u64) -> Instant {
        match self.pace {
            Pace::Open { interval, .. } => {
                self.start + Duration::from_nanos((interval.as_nanos() as u64).saturating_mul(i))
            }
            Pace::Closed { .. } => self.start,
        }
    }
}

/// The per-client interval of an open-loop run at `rate` ops/s over `clients` clients; an
/// error when the rate is not a positive number or so low that the interval overflows.
pub fn open_interval(rate: f64, clients: usize) -> Result<Duration, String> {
    if !(rate > 0.0 && rate.is_finite()) {
        return Err(format!("--rate {rate} must be a positive number of ops/s"));
    }
    Duration::try_from_secs_f64(clients as f64 / rate)
        .map_err(|_| format!("--rate {rate} is too low for {clients} clients"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::latency_histogram;

    #[test]
    fn closed_loop_keeps_depth_in_flight() {
        let t = Instant::now();
        let mut s = Schedule::new(Pace::Closed { depth: 2 }, t);
        assert_eq!(s.next_due(t, 0), Some(t));
        assert_eq!(s.next_due(t, 1), Some(t));
        assert_eq!(s.next_due(t, 2), None);
        assert_eq!(s.next_wake(), None);
    }

    #[test]
    fn open_loop_keeps_its_timetable() {
        let t = Instant::now();
        let ms = Duration::from_millis;
        let mut s = Schedule::new(Pace::Open { interval: ms(10), cap: 1 }, t);
        assert_eq!(s.next_due(t, 0), Some(t));
        assert_eq!(s.next_due(t + ms(5), 0), None, "not due yet");
        assert_eq!(s.next_wake(), Some(t + ms(10)));
        // Late because one request is in flight: it waits...
        assert_eq!(s.next_due(t + ms(30), 1), None);
        // ...and when it goes, it carries the time it was due, not the time it went.
        assert_eq!(s.next_due(t + ms(35), 0), Some(t + ms(10)));
        assert_eq!(s.next_due(t + ms(35), 0), Some(t + ms(20)));
        assert_eq!(s.next_due(t + ms(35), 0), Some(t + ms(30)));
        assert_eq!(s.next_due(t + ms(35), 0), None);
        assert_eq!(open_interval(1000.0, 4), Ok(ms(4)));
        assert!(open_interval(1e-19, 16).is_err());
        assert!(open_interval(0.0, 1).is_err());
    }

    /// Coordinated omission, simulated: one client at 100 requests/s, one in flight, against a
    /// server that answers in 1 ms but stalls from t = 1.0 s to t = 1.5 s. The uncorrected
    /// latencies see one slow request; the corrected ones see the 50 requests that were due
    /// during the stall wait up to 500 ms. No real time passes: the clock is simulated.
    #[test]
    fn a_stalled_server_shows_in_corrected_latencies_only() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let (stall_from, stall_to) = (t0 + ms(1000), t0 + ms(1500));
        let mut s = Schedule::new(Pace::Open { interval: ms(10), cap: 1 }, t0);
        let (mut corrected, mut uncorrected) = (latency_histogram(), latency_histogram());
        let mut now = t0;
        while now < t0 + ms(3000) {
            let Some(due) = s.next_due(now, 0) else {
                now = s.next_wake().expect("open loop");
                continue;
            };
            let sent = now;
            let served_from = if (stall_from..stall_to).contains(&sent) { stall_to } else { sent };
            let done = served_from + ms(1);
            corrected.record((done - due).as_micros() as u64).expect("in range");
            uncorrected.record((done - sent).as_micros() as u64).expect("in range");
            now = done;
        }
        assert_eq!(corrected.len(), 300);
        assert_eq!(uncorrected.len(), 300);
        // One request saw the stall uncorrected, so its p99 (the 3rd slowest) is the 1 ms service.
        assert!(uncorrected.value_at_quantile(0.99) <= 1_100, "{}", uncorrected.max());
        assert!(uncorrected.max() >= 500_000);
        // Corrected: 50 of 300 requests (16.7%) waited between 1 and 500 ms.
        assert!(corrected.value_at_quantile(0.9) >= 150_000);
        assert!(corrected.value_at_quantile(0.99) >= 450_000);
        assert!(corrected.count_between(100_000, 600_000) >= 40);
        assert!(uncorrected.count_between(100_000, 600_000) == 1);
    }
}
