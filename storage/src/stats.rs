//! Counters a store keeps and the snapshot it reports.

use crate::cache::CacheStats;

/// Running counters; plain integers because one thread owns them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Times [`crate::Store::resume`] brought a poisoned store back to taking writes.
    pub write_resumes: u64,
    pub puts: u64,
    pub deletes: u64,
    pub batches: u64,
    pub gets: u64,
    pub scans: u64,
    pub flushes: u64,
    pub flushed_bytes: u64,
    /// Records written by all flushes, for the mean group-commit batch size.
    pub flushed_records: u64,
    pub flush_records_max: u64,
    pub fsyncs: u64,
    /// Writes made durable on their own (O_DSYNC) instead of by a following fdatasync.
    pub durable_writes: u64,
    pub fsync_us_total: u64,
    pub fsync_us_max: u64,
    pub compactions: u64,
    /// Bytes of live records compaction copied to the log head.
    pub compaction_moved_bytes: u64,
    /// Bytes of the segments compaction retired (their files are deleted after the next
    /// checkpoint): minus the moved bytes, the garbage reclaimed.
    pub compaction_reclaimed_bytes: u64,
    /// Bytes compaction read from its victims: whole segments, or only the ranges that hold
    /// their live records when the index walk found them (`compaction.rs`, `live_spans`).
    pub compaction_read_bytes: u64,
    pub segments_deleted: u64,
    pub checkpoints: u64,
    pub corrupt_reads: u64,
    /// NoSync writes that waited for the flusher because the write buffer was full
    /// (`WRITE_BUFFER_BYTES_MAX` pending): the log is written slower than it is appended.
    pub write_buffer_waits: u64,
    /// Blind puts whose index update was deferred and applied in a group
    /// (`deferred_puts.rs`), and the groups: their ratio is the mean group size.
    pub deferred_puts: u64,
    pub deferred_groups: u64,
    /// Segment files zero-filled ahead of need ([`crate::log::preallocate`]).
    pub preallocations: u64,
    /// Preallocations that failed (the store then grows segments as it writes them).
    pub preallocations_failed: u64,
}

/// Latency and batch-size distributions of the log.
#[derive(Debug, Clone)]
pub struct Histograms {
    /// fdatasync latency in microseconds.
    pub fsync_us: hdrhistogram::Histogram<u64>,
    /// Latency of durable (O_DSYNC) writes in microseconds: write and sync in one.
    pub durable_write_us: hdrhistogram::Histogram<u64>,
    /// Records written per flush (the group-commit batch size).
    pub flush_records: hdrhistogram::Histogram<u64>,
    /// Microseconds maintenance held the shard's thread in one step without yielding to the
    /// requests (a checkpoint's index snapshot, compaction's index re-pointing): the pauses
    /// behind the requests' tail latency.
    pub maintenance_step_us: hdrhistogram::Histogram<u64>,
}

impl Default for Histograms {
    fn default() -> Self {
        // Three significant digits; values are clamped to the range, so recording never fails.
        let new = |max| {
            hdrhistogram::Histogram::new_with_bounds(1, max, 3).expect("static bounds are valid")
        };
        Histograms {
            fsync_us: new(60_000_000),
            durable_write_us: new(60_000_000),
            flush_records: new(1 << 32),
            maintenance_step_us: new(60_000_000),
        }
    }
}

/// Records in `h` the microseconds from `started` to now (at least 1, so the histogram's lowest
/// bucket holds it) and returns them.
pub(crate) fn record_elapsed_us(
    h: &mut hdrhistogram::Histogram<u64>,
    started: std::time::Instant,
) -> u64 {
    let us = started.elapsed().as_micros() as u64;
    h.saturating_record(us.max(1));
    us
}

/// p50, p99, p999 and max of a distribution, and how many values it holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    pub fn of(h: &hdrhistogram::Histogram<u64>) -> Percentiles {
        Percentiles {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// A point-in-time report of one store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreStats {
    pub keys: u64,
    /// Exact bytes of the in-memory index.
    pub index_bytes: u64,
    /// Bytes of the live keys themselves.
    pub index_key_bytes: u64,
    pub cache: CacheStats,
    pub segments: u64,
    pub disk_bytes: u64,
    pub live_bytes: u64,
    /// Heap bytes of the segments' dead-record maps (`segments::DeadRecords`).
    pub dead_map_bytes: u64,
    pub next_lsn: u64,
    pub checkpoint_lsn: u64,
    pub poisoned: Option<String>,
    pub counters: Counters,
    pub fsync_us: Percentiles,
    pub durable_write_us: Percentiles,
    pub flush_records: Percentiles,
    pub maintenance_step_us: Percentiles,
}

impl StoreStats {
    /// Index bytes per key beyond the key bytes themselves.
    pub fn index_overhead_bytes_per_key(&self) -> f64 {
        if self.keys == 0 {
            return 0.0;
        }
        (self.index_bytes as f64 - self.index_key_bytes as f64) / self.keys as f64
    }

    /// Share of segment bytes that is garbage.
    pub fn garbage_ratio(&self) -> f64 {
        if self.disk_bytes == 0 {
            return 0.0;
        }
        1.0 - self.live_bytes as f64 / self.disk_bytes as f64
    }
}
