//! The load engine: `threads` worker threads share `clients` logical clients; each worker runs
//! a mio poll over its clients' sessions (`worker.rs`), paced closed or open loop
//! (`schedule.rs`), and records into its own histograms (`recorder.rs`). The controller
//! (`controller.rs`) starts them together, collects one interval report per worker per second
//! for the progress line, and merges the results. This file holds what a run is (its workload,
//! shape and limits) and the state the workers share; the workers and the controller both build
//! on it, so it uses neither.

pub mod acked;
mod controller;
pub mod recorder;
pub mod resp;
pub mod schedule;
pub mod session;
pub mod timer;
mod worker;

pub use controller::{run, Outcome};

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ringstore_model::Durability;

use crate::distribution::KeyDistribution;
use crate::keyspace::KeySpace;
use crate::workload::{Mix, SizeSpec};
use schedule::{open_interval, Pace};

/// Most worker threads a run may start.
pub const THREADS_MAX: usize = 256;
/// Most keys a run may address (each key's partition is precomputed, 4 bytes per key).
pub const KEYS_MAX: u64 = 100_000_000;
/// Most logical clients a run may open (each has one connection per shard when shard-aware).
pub const CLIENTS_MAX: usize = 10_000;

/// What a run's connections speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// ringstore's binary protocol (docs/PROTOCOL.md), to the benchmark table.
    #[default]
    Binary,
    /// RESP GET and SET (`resp.rs`), to any Redis-protocol server: the key is the key's text,
    /// the value the value's bytes; durability is the server's setting.
    Resp,
}

/// What every request of a run does.
#[derive(Debug, Clone)]
pub struct Workload {
    pub protocol: Protocol,
    pub mix: Mix,
    pub distribution: KeyDistribution,
    pub value_size: SizeSpec,
    pub durability: Durability,
    pub scan_length_max: u32,
    /// Record acknowledged writes for a read-back.
    pub verify: bool,
    /// With `verify`: stream each acknowledged write to this `--write-log` file as it arrives.
    pub ack_log: Option<std::sync::Arc<crate::verify::AckLogFile>>,
}

/// How a run paces its clients.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pacing {
    /// Each client keeps `depth` requests in flight.
    Closed { depth: usize },
    /// `rate` requests/s in total, spread evenly over the clients, each with at most `cap` in
    /// flight.
    Open { rate: f64, cap: usize },
}

/// The shape of one run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub threads: usize,
    pub clients: usize,
    pub pacing: Pacing,
    pub warmup: Duration,
    /// Length of the measured phase; None: until `ops` operations were sent.
    pub duration: Option<Duration>,
    pub ops: Option<u64>,
    pub seed: u64,
    pub shard_aware: bool,
    /// Each client bound to one shard (client id modulo the shard count): its reads and
    /// updates draw only keys that shard owns, so its whole pipeline goes down one connection
    /// (redis-benchmark `--cluster` binds its clients to nodes the same way). Inserts still go
    /// to their key's owner.
    pub bind_clients: bool,
    /// Keys that exist when the run starts (key numbers 0..items).
    pub items: u64,
    /// Stop inserting at this key number (the load phase); None: inserts go on.
    pub insert_limit: Option<u64>,
    /// The node's pid, to read its CPU time over the measured phase.
    pub server_pid: Option<u32>,
    /// Start the measured phase on a wall-clock second (after the warm-up), so its one-second
    /// intervals are the seconds a time-based key changes on (the `timestamp-s` scenario).
    pub align_to_wall_second: bool,
}

/// Where and when: the node's ports and the run's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Times {
    pub start: Instant,
    pub measure_from: Instant,
    pub until: Option<Instant>,
}

/// State every worker reads.
#[derive(Debug)]
pub(crate) struct Shared {
    pub keyspace: Arc<KeySpace>,
    pub workload: Workload,
    spec: RunSpec,
    shared_addr: SocketAddr,
    shard_addrs: Vec<SocketAddr>,
    /// The next key number an insert takes.
    pub inserts: AtomicU64,
    /// Keys below its limit have had their insert answered; reads pick among them.
    pub acked: acked::AckedCounter,
    pub insert_limit: Option<u64>,
    pub ops_limit: Option<u64>,
    pub issued: AtomicU64,
    pub abort: AtomicBool,
    pub times: OnceLock<Times>,
}

impl Shared {
    /// The addresses a client connects to: each shard's own port, or the shared port.
    pub fn targets(&self) -> Vec<SocketAddr> {
        if self.spec.shard_aware {
            self.shard_addrs.clone()
        } else {
            vec![self.shared_addr]
        }
    }

    pub fn open_loop(&self) -> bool {
        matches!(self.spec.pacing, Pacing::Open { .. })
    }

    pub fn pace(&self) -> Pace {
        match self.spec.pacing {
            Pacing::Closed { depth } => Pace::Closed { depth },
            Pacing::Open { rate, cap } => {
                // check_spec has refused rates whose interval does not fit.
                let interval = open_interval(rate, self.spec.clients).unwrap_or(Duration::MAX);
                Pace::Open { interval, cap }
            }
        }
    }

    /// Where client `id`'s timetable starts: spread over one interval, so that C clients at a
    /// total rate R send at `start + (j * C + id) / R` instead of all at once.
    pub fn client_offset(&self, id: u64) -> Duration {
        match self.pace() {
            Pace::Open { interval, .. } => {
                interval.mul_f64(id as f64 / self.spec.clients.max(1) as f64)
            }
            Pace::Closed { .. } => Duration::ZERO,
        }
    }
}

/// Refuses a run shape outside the limits, naming the flag.
pub fn check_spec(spec: &RunSpec) -> Result<(), String> {
    if spec.clients == 0 || spec.clients > CLIENTS_MAX {
        return Err(format!("--connections {} is outside 1..{CLIENTS_MAX}", spec.clients));
    }
    if spec.threads == 0 || spec.threads > THREADS_MAX {
        return Err(format!("--threads {} is outside 1..{THREADS_MAX}", spec.threads));
    }
    if spec.duration.is_none() && spec.ops.is_none() {
        return Err("a run needs --duration or --ops".into());
    }
    if spec.duration.is_some_and(|d| d.is_zero()) || spec.ops == Some(0) {
        return Err("--duration and --ops must be above 0".into());
    }
    if spec.bind_clients && !spec.shard_aware {
        return Err("--bind-clients needs shard-aware clients (each shard's own port); \
                    leave out --no-shard-aware"
            .into());
    }
    if spec.items > KEYS_MAX {
        return Err(format!("--keys {} is above the limit of {KEYS_MAX}", spec.items));
    }
    match spec.pacing {
        Pacing::Closed { depth: 0 } | Pacing::Open { cap: 0, .. } => {
            Err("--pipeline must be at least 1".into())
        }
        Pacing::Open { rate, .. } => open_interval(rate, spec.clients).map(|_| ()),
        _ => Ok(()),
    }
}
