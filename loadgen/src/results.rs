//! What a run measured, in one place: the driver fills these, and the output modules (final
//! table, JSON, HdrHistogram files, charts) only read them.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

/// Largest latency a histogram records, in microseconds (one hour): an open-loop run against a
/// stalled node can queue requests for a long time, and the corrected latency must still fit.
pub const LATENCY_US_MAX: u64 = 3_600_000_000;
/// Significant decimal digits of every latency histogram (0.1% value resolution).
pub const LATENCY_SIGNIFICANT_DIGITS: u8 = 3;
/// Length of one progress interval (one line per interval, one `.hlog` entry per interval).
pub const INTERVAL_MS: u64 = 1000;

/// A latency histogram in microseconds with the run-wide bounds.
pub fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, LATENCY_US_MAX, LATENCY_SIGNIFICANT_DIGITS)
        .expect("static histogram bounds are valid")
}

/// The operation types a workload mixes (YCSB's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// Get one row by its full key.
    Read,
    /// Put a new value for a key that exists.
    Update,
    /// Put a key that did not exist yet (the key space grows).
    Insert,
    /// Read a short range of rows starting at a key.
    Scan,
    /// Get a row, then put it back changed (YCSB F); latency covers both round trips.
    ReadModifyWrite,
}

impl OpKind {
    pub const ALL: [OpKind; 5] =
        [OpKind::Read, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];

    /// The name used in `--mix`, the final table, JSON keys and file names.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Read => "read",
            OpKind::Update => "update",
            OpKind::Insert => "insert",
            OpKind::Scan => "scan",
            OpKind::ReadModifyWrite => "rmw",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// One operation type's results over the measured part of a run.
#[derive(Debug, Clone)]
pub struct OpResult {
    pub kind: OpKind,
    /// Operations that completed with a success status.
    pub ok: u64,
    /// Of `ok`: reads (and read-modify-writes) whose key had no row. YCSB D and E read only
    /// keys whose insert was acknowledged, so a not-found there means a lost or failed insert.
    pub not_found: u64,
    /// Operations that completed with an error status.
    pub errors: u64,
    /// `errors` by status code (docs/ERRORS.md).
    pub errors_by_status: BTreeMap<u16, u64>,
    /// Latency in µs. Closed loop: from the moment the request was sent. Open loop: from the
    /// moment the schedule intended to send it (coordinated omission corrected).
    pub latency_us: Histogram<u64>,
    /// Open loop only: latency in µs from the moment the request was actually sent
    /// (uncorrected, what a naive tool reports). None in closed loop, where it equals
    /// `latency_us`.
    pub uncorrected_us: Option<Histogram<u64>>,
}

/// One progress interval (normally [`INTERVAL_MS`] long) of the measured phase.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Seconds from the start of the measured phase to the start of this interval.
    pub start_s: f64,
    pub length_s: f64,
    /// Operations completed in the interval, all types.
    pub ops: u64,
    pub errors: u64,
    /// Latency (as in [`OpResult::latency_us`]) of the operations completed in this interval,
    /// indexed by [`OpKind::index`]; empty histograms for types that did not occur.
    pub latency_us: Vec<Histogram<u64>>,
    /// Requests sent to each shard during the interval (a time-leading key can be even over a
    /// run and still put every second's load on one shard).
    pub shard_ops: Vec<u64>,
}

/// What the node itself reported, read from its Stats (summed over shards) and /proc.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeFigures {
    /// Keys in the store's in-memory index: rows, and one key-only record per row and
    /// secondary index (index entries are store records, docs/ARCHITECTURE.md).
    pub index_keys: u64,
    /// Bytes of that in-memory index, index entries included.
    pub index_bytes: u64,
    pub index_key_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_bytes: u64,
    /// Resident set size of the node process, if its pid is known.
    pub rss_bytes: Option<u64>,
    /// The secondary indexes of the run's table at the end of the run (`SHOW INDEXES`).
    pub indexes: Vec<IndexFigure>,
}

/// One secondary index of the run's table, as the node describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexFigure {
    pub name: String,
    /// Its fields, in index order.
    pub fields: Vec<String>,
    /// BUILDING, READY or DELETING (READY only once every shard has built it).
    pub state: &'static str,
}

impl std::fmt::Display for IndexFigure {
    /// `by_k (k) READY`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}) {}", self.name, self.fields.join(", "), self.state)
    }
}

impl NodeFigures {
    /// Index bytes per indexed key (0 with no keys).
    pub fn index_bytes_per_key(&self) -> f64 {
        if self.index_keys == 0 {
            0.0
        } else {
            self.index_bytes as f64 / self.index_keys as f64
        }
    }

    /// Cache hits / (hits + misses) over the measured phase; None without lookups.
    pub fn cache_hit_ratio(&self) -> Option<f64> {
        let lookups = self.cache_hits + self.cache_misses;
        (lookups > 0).then(|| self.cache_hits as f64 / lookups as f64)
    }
}

/// Everything one run (one workload against one node) measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// What distinguishes this run within a scenario set or sweep (e.g. `key-size=64`).
    pub label: String,
    /// Length of the measured phase in seconds.
    pub seconds: f64,
    /// Per operation type that occurred, in [`OpKind::ALL`] order.
    pub ops: Vec<OpResult>,
    pub intervals: Vec<Interval>,
    /// Requests sent to each shard (by the client's routing) during the measured phase.
    pub shard_ops: Vec<u64>,
    /// Requests sent to each partition during the measured phase.
    pub partition_ops: Vec<u64>,
    /// The node's CPU seconds over the measured phase, if its pid is known.
    pub server_cpu_seconds: Option<f64>,
    /// The load tool's own CPU seconds over the measured phase (the two share the machine).
    pub client_cpu_seconds: Option<f64>,
    /// CPU seconds of each shard's thread over the measured phase (by shard number), if the
    /// node's pid is known (`cpu::shard_threads`).
    pub shard_cpu_seconds: Option<Vec<f64>>,
    /// The node's own figures at the end of the run, if read.
    pub node: Option<NodeFigures>,
    /// The first error message the node sent per status code.
    pub error_messages: BTreeMap<u16, String>,
}

impl RunResult {
    pub fn total_ok(&self) -> u64 {
        self.ops.iter().map(|o| o.ok).sum()
    }

    pub fn total_errors(&self) -> u64 {
        self.ops.iter().map(|o| o.errors).sum()
    }

    pub fn total_not_found(&self) -> u64 {
        self.ops.iter().map(|o| o.not_found).sum()
    }

    /// Errors by status code over every operation type.
    pub fn errors_by_status(&self) -> BTreeMap<u16, u64> {
        let mut all = BTreeMap::new();
        for (&code, &n) in self.ops.iter().flat_map(|o| &o.errors_by_status) {
            *all.entry(code).or_insert(0) += n;
        }
        all
    }

    /// Completed operations (ok + errors) per second of the measured phase.
    pub fn ops_per_second(&self) -> f64 {
        if self.seconds > 0.0 {
            (self.total_ok() + self.total_errors()) as f64 / self.seconds
        } else {
            0.0
        }
    }

    /// All operation types' latencies merged.
    pub fn latency_all_us(&self) -> Histogram<u64> {
        let mut all = latency_histogram();
        for o in &self.ops {
            all.add(&o.latency_us).expect("histograms share bounds");
        }
        all
    }

    pub fn server_cpu_seconds_per_million_ops(&self) -> Option<f64> {
        let ops = (self.total_ok() + self.total_errors()) as f64;
        self.server_cpu_seconds.filter(|_| ops > 0.0).map(|s| s / (ops / 1e6))
    }

    pub fn client_cpu_seconds_per_million_ops(&self) -> Option<f64> {
        let ops = (self.total_ok() + self.total_errors()) as f64;
        self.client_cpu_seconds.filter(|_| ops > 0.0).map(|s| s / (ops / 1e6))
    }

    /// Max over mean of the per-shard request counts: 1.0 is perfectly even, `shards` means one
    /// shard took everything.
    pub fn shard_skew(&self) -> f64 {
        skew(&self.shard_ops)
    }

    /// Max over mean of the per-partition request counts.
    pub fn partition_skew(&self) -> f64 {
        skew(&self.partition_ops)
    }

    /// The mean over intervals of each interval's shard skew: the skew a time-based key shows
    /// while it lasts, which the run-wide counts average away.
    pub fn interval_shard_skew(&self) -> f64 {
        let skews: Vec<f64> = self
            .intervals
            .iter()
            .filter(|i| i.shard_ops.iter().any(|&n| n > 0))
            .map(|i| skew(&i.shard_ops))
            .collect();
        if skews.is_empty() {
            0.0
        } else {
            skews.iter().sum::<f64>() / skews.len() as f64
        }
    }

    /// Each shard's CPU utilisation over the measured phase (1.0: its thread was busy all the
    /// time), if the node's pid is known.
    pub fn shard_utilisation(&self) -> Option<Vec<f64>> {
        let seconds = self.seconds.max(f64::MIN_POSITIVE);
        Some(self.shard_cpu_seconds.as_ref()?.iter().map(|s| s / seconds).collect())
    }

    /// The busiest shard's utilisation.
    pub fn hottest_shard_utilisation(&self) -> Option<f64> {
        self.shard_utilisation()?.into_iter().reduce(f64::max)
    }

    /// The throughput at which the busiest shard would be saturated if the load grew in the
    /// same proportions: ops/s over its utilisation. On a machine where the load tool takes
    /// cores from the node, this compares designs better than the ops/s they reached: a design
    /// that puts everything on one shard leaves the other cores to the load tool, and can reach
    /// more ops/s there while it saturates far earlier on a machine of its own.
    pub fn saturation_ops_per_second(&self) -> Option<f64> {
        let hottest = self.hottest_shard_utilisation().filter(|&u| u > 0.0)?;
        Some(self.ops_per_second() / hottest)
    }

    /// Partitions that received at least one request.
    pub fn partitions_touched(&self) -> usize {
        self.partition_ops.iter().filter(|&&n| n > 0).count()
    }
}

/// Max / mean of the counts (0 when empty or all zero).
pub fn skew(counts: &[u64]) -> f64 {
    let total: u64 = counts.iter().sum();
    if counts.is_empty() || total == 0 {
        return 0.0;
    }
    let mean = total as f64 / counts.len() as f64;
    *counts.iter().max().expect("not empty") as f64 / mean
}

/// A run to build test cases from.
#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;

    /// A one-second run of updates, none successful, with `errors` (status code, count).
    pub fn run_with(errors: &[(u16, u64)]) -> RunResult {
        let errors_by_status: BTreeMap<u16, u64> = errors.iter().copied().collect();
        RunResult {
            label: "test".into(),
            seconds: 1.0,
            ops: vec![OpResult {
                kind: OpKind::Update,
                ok: 0,
                not_found: 0,
                errors: errors_by_status.values().sum(),
                errors_by_status,
                latency_us: latency_histogram(),
                uncorrected_us: None,
            }],
            intervals: Vec::new(),
            shard_ops: Vec::new(),
            partition_ops: Vec::new(),
            server_cpu_seconds: None,
            client_cpu_seconds: None,
            shard_cpu_seconds: None,
            node: None,
            error_messages: BTreeMap::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skew_is_max_over_mean() {
        assert_eq!(skew(&[5, 5]), 1.0);
        assert_eq!(skew(&[10, 0]), 2.0);
        assert_eq!(skew(&[0, 0, 0, 8]), 4.0);
        assert_eq!(skew(&[]), 0.0);
    }

    #[test]
    fn saturation_is_throughput_over_the_hottest_shards_utilisation() {
        let mut r = tests_support::run_with(&[]);
        r.seconds = 2.0;
        r.ops[0].ok = 20_000;
        // Without thread figures (no pid): nothing to say.
        assert_eq!(r.saturation_ops_per_second(), None);
        // 10,000 ops/s with one shard busy 1.6 s of 2: 80%, so it saturates at 12,500 ops/s.
        r.shard_cpu_seconds = Some(vec![0.2, 1.6]);
        assert_eq!(r.shard_utilisation(), Some(vec![0.1, 0.8]));
        assert_eq!(r.hottest_shard_utilisation(), Some(0.8));
        assert_eq!(r.saturation_ops_per_second(), Some(12_500.0));
        // Idle shards: no estimate rather than a division by zero.
        r.shard_cpu_seconds = Some(vec![0.0, 0.0]);
        assert_eq!(r.saturation_ops_per_second(), None);
    }

    #[test]
    fn hit_ratio_and_bytes_per_key() {
        let n = NodeFigures {
            index_keys: 4,
            index_bytes: 100,
            cache_hits: 3,
            cache_misses: 1,
            ..NodeFigures::default()
        };
        assert_eq!(n.index_bytes_per_key(), 25.0);
        assert_eq!(n.cache_hit_ratio(), Some(0.75));
        assert_eq!(NodeFigures::default().cache_hit_ratio(), None);
    }
}
