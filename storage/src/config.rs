//! Store settings, with defaults from [`crate::constants`] and a validation that names the limit.

use crate::constants::*;
use crate::{Error, Result};

/// Settings of one shard's store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreConfig {
    /// Maximum size of a segment file (4 MiB ..= 64 MiB, multiple of 4096).
    pub segment_size_bytes: u64,
    /// A `NoSync` write reaches the device within this interval.
    pub flush_interval_ms: u64,
    /// Record cache capacity; 0 disables the cache.
    pub cache_capacity_bytes: u64,
    /// The maintenance task compacts once this share of the store's record bytes is garbage,
    /// the sealed segments with the most garbage first (each at least this share garbage) until
    /// the store is under it; `Store::compact` compacts every sealed segment whose own garbage
    /// ratio reaches it (0.05 ..= 0.95).
    pub garbage_ratio_threshold: f64,
    /// Log bytes appended between two automatic index checkpoints; `u64::MAX` disables them.
    pub checkpoint_interval_bytes: u64,
    /// Run compaction and checkpoints in a background task. Tests turn it off and call
    /// `Store::compact` and `Store::checkpoint` themselves.
    pub background_maintenance: bool,
    /// How often the background task looks for work when nothing wakes it.
    pub maintenance_interval_ms: u64,
    /// CPU shares of the maintenance task queue, against 1000 for the foreground queue.
    pub maintenance_shares: usize,
    /// Keep the next segment file zero-filled ahead of need, so flushes overwrite instead of
    /// growing a file ([`crate::log::preallocate`]). Costs one segment of disk per store.
    pub preallocate_segments: bool,
    /// Open even when recovery finds damaged log bytes that name no key, dropping them (each
    /// range is logged; the checkpoint written at open makes the choice permanent). Off by
    /// default: such an open fails with [`Error::DamagedLog`], because the bytes may have held
    /// acknowledged writes of any key.
    pub accept_log_damage: bool,
    /// Compaction reads only the ranges of a victim that hold its live records, found by walking
    /// the index, where that is safe and cheaper than reading the whole segment
    /// (`compaction.rs`, `live_spans`). Off: every victim is read whole (tests of that path).
    pub compaction_reads_live_ranges: bool,
    /// After a Sync flush, how long the flusher may wait for more writers before the next one
    /// (`log/group_commit.rs`, `commit_delay`; never longer than the flush took), in
    /// microseconds, 0..=[`COMMIT_DELAY_US_LIMIT`]; 0 turns the wait off.
    pub commit_delay_max_us: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            segment_size_bytes: SEGMENT_SIZE_BYTES_DEFAULT,
            flush_interval_ms: FLUSH_INTERVAL_MS_DEFAULT,
            cache_capacity_bytes: CACHE_CAPACITY_BYTES_DEFAULT,
            garbage_ratio_threshold: GARBAGE_RATIO_THRESHOLD_DEFAULT,
            checkpoint_interval_bytes: CHECKPOINT_INTERVAL_BYTES_DEFAULT,
            background_maintenance: true,
            maintenance_interval_ms: 1000,
            maintenance_shares: 100,
            preallocate_segments: true,
            accept_log_damage: false,
            compaction_reads_live_ranges: true,
            commit_delay_max_us: COMMIT_DELAY_MAX_US_DEFAULT,
        }
    }
}

impl StoreConfig {
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::Config { what });
        let seg = self.segment_size_bytes;
        if !(SEGMENT_SIZE_BYTES_MIN..=SEGMENT_SIZE_BYTES_MAX).contains(&seg)
            || !seg.is_multiple_of(DMA_ALIGN_BYTES)
        {
            return bad(format!(
                "segment_size_bytes {seg} must be {SEGMENT_SIZE_BYTES_MIN}..={SEGMENT_SIZE_BYTES_MAX} and a multiple of {DMA_ALIGN_BYTES}"
            ));
        }
        if !(1..=60_000).contains(&self.flush_interval_ms) {
            return bad(format!("flush_interval_ms {} must be 1..=60000", self.flush_interval_ms));
        }
        if !(0.05..=0.95).contains(&self.garbage_ratio_threshold) {
            return bad(format!(
                "garbage_ratio_threshold {} must be 0.05..=0.95",
                self.garbage_ratio_threshold
            ));
        }
        if self.checkpoint_interval_bytes < seg {
            return bad(format!(
                "checkpoint_interval_bytes {} must be at least one segment ({seg})",
                self.checkpoint_interval_bytes
            ));
        }
        if self.commit_delay_max_us > COMMIT_DELAY_US_LIMIT {
            return bad(format!(
                "commit_delay_max_us {} must be 0..={COMMIT_DELAY_US_LIMIT}",
                self.commit_delay_max_us
            ));
        }
        if !(1..=1000).contains(&self.maintenance_shares) || self.maintenance_interval_ms == 0 {
            return bad(
                "maintenance_shares must be 1..=1000 and maintenance_interval_ms > 0".into()
            );
        }
        Ok(())
    }
}
