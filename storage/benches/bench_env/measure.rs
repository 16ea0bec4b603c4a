//! Measuring a loop, for both storage benchmarks: wall time, the shard thread's CPU time
//! (`/proc/thread-self/schedstat`, nanoseconds) and the whole process's (`/proc/self/stat`,
//! clock ticks; adds the io_uring worker threads), and the `perf record --control` FIFO
//! (`RINGSTORE_PERF_CTL`) that limits a profile to the chosen loop.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::BenchResult;

/// Kernel clock ticks per second for `/proc/self/stat` (USER_HZ, 100 on every Linux target).
const CLOCK_TICKS_PER_SEC: u64 = 100;

/// Wall clock and CPU time at the start of a measured loop.
pub struct Meter {
    started: Instant,
    thread_cpu_ns: u64,
    process_cpu_ns: u64,
    profiled: bool,
}

/// What one measured loop did.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub ops: u64,
    pub secs: f64,
    pub thread_cpu_ns: u64,
    pub process_cpu_ns: u64,
    /// p50, p99 and p999 latency in nanoseconds, when the loop timed its operations.
    pub latency_ns: Option<[u64; 3]>,
}

impl Sample {
    pub fn rate(&self) -> f64 {
        self.ops as f64 / self.secs
    }

    pub fn thread_us_per_op(&self) -> f64 {
        self.thread_cpu_ns as f64 / 1000.0 / self.ops as f64
    }

    pub fn process_us_per_op(&self) -> f64 {
        self.process_cpu_ns as f64 / 1000.0 / self.ops as f64
    }

    /// The sample with the latency percentiles of `hist` (none for an empty or absent one).
    pub fn with_latency(self, hist: Option<&Histogram<u64>>) -> Sample {
        let latency_ns = hist.filter(|h| !h.is_empty()).map(|h| {
            [h.value_at_quantile(0.50), h.value_at_quantile(0.99), h.value_at_quantile(0.999)]
        });
        Sample { latency_ns, ..self }
    }
}

impl Meter {
    /// Starts an unprofiled loop.
    pub fn start() -> Meter {
        Meter {
            started: Instant::now(),
            thread_cpu_ns: thread_cpu_ns(),
            process_cpu_ns: process_cpu_ns(),
            profiled: false,
        }
    }

    /// Ends the loop after `ops` operations, and the profile if this loop was profiled.
    pub fn finish(self, fifo: &mut PerfFifo, ops: u64) -> Sample {
        let sample = Sample {
            ops,
            secs: self.started.elapsed().as_secs_f64(),
            thread_cpu_ns: thread_cpu_ns().saturating_sub(self.thread_cpu_ns),
            process_cpu_ns: process_cpu_ns().saturating_sub(self.process_cpu_ns),
            latency_ns: None,
        };
        if self.profiled {
            fifo.send("disable");
        }
        sample
    }
}

/// CPU time of the calling thread (the shard), from the scheduler's nanosecond accounting.
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

/// User plus system CPU time of the whole process, in clock ticks turned into nanoseconds.
fn process_cpu_ns() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0 };
    let Some((_, rest)) = stat.rsplit_once(')') else { return 0 };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command name: state is field 3 of proc(5), utime 14 and stime 15.
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    (ticks(11) + ticks(12)) * (1_000_000_000 / CLOCK_TICKS_PER_SEC)
}

/// The FIFO of `perf record --control fifo:PATH` named by `RINGSTORE_PERF_CTL`, if any:
/// `enable` and `disable` are written to it around the loop being profiled.
pub struct PerfFifo {
    fifo: Option<std::fs::File>,
}

impl PerfFifo {
    pub fn from_env() -> BenchResult<PerfFifo> {
        let fifo = match std::env::var_os("RINGSTORE_PERF_CTL") {
            None => None,
            Some(path) => {
                Some(std::fs::OpenOptions::new().write(true).open(&path).map_err(|e| {
                    format!("open perf control FIFO {}: {e}", Path::new(&path).display())
                })?)
            }
        };
        Ok(PerfFifo { fifo })
    }

    /// Starts a measured loop, profiled if `profile` and a FIFO was given.
    pub fn start(&mut self, profile: bool) -> Meter {
        let profiled = profile && self.fifo.is_some();
        if profiled {
            self.send("enable");
        }
        Meter { profiled, ..Meter::start() }
    }

    fn send(&mut self, cmd: &str) {
        if let Some(f) = self.fifo.as_mut() {
            if let Err(e) = writeln!(f, "{cmd}").and_then(|()| f.flush()) {
                eprintln!("perf control: cannot send {cmd}: {e}");
            }
        }
    }
}
