//! Recovery: load the checkpoint, replay the log written after it, and start a fresh segment.
//!
//! 1. List the directory; remove a leftover `checkpoint.tmp` (a checkpoint that never published)
//!    and a leftover `seg-prepared.tmp` (a segment file being zero-filled ahead of need); keep a
//!    `seg-prepared.ready` of the segment size for the log's next segment.
//! 2. Load `checkpoint` (memory-mapped), verify every checksum, rebuild the index from it.
//! 3. Scan each segment from where the checkpoint says replay starts (its whole record area if
//!    the checkpoint does not know it). Records with an LSN at or below the checkpoint's are
//!    skipped. Others are applied when newer than what replay already applied for that key
//!    (compaction copies records forward with their original LSN, so a key can appear twice).
//!    The records of an atomic batch are applied only when the whole batch is present and valid.
//!    A range tombstone removes the keys of its range not written after it, and records of the
//!    range older than it that the scan meets later are skipped (`range_delete.rs`).
//! 4. Damage is reported with segment, offset and LSN and its bytes are never served; a torn tail
//!    ends the segment. A damaged record whose header and key verify (only its value is bad)
//!    is indexed like a good one, so its key reads as error 614 until it is written again (never
//!    as an older version); compaction keeps it. Damage that names no key (a broken header
//!    followed by valid records) stops the open with [`Error::DamagedLog`] unless the config
//!    accepts the loss (`accept_log_damage`), which logs each dropped range.
//! 5. Live bytes per segment are recomputed from the index, and all existing segments are sealed:
//!    new records go to a new segment, so a torn tail is never written over.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cache::RecordCache;
use crate::checkpoint::{self, REPLAY_NONE};
use crate::config::StoreConfig;
use crate::constants::*;
use crate::disk::{Disk, DiskFile};
use crate::index::{Index, IndexEntry, Location};
use crate::log::preallocate;
use crate::log::prepared::Prepared;
use crate::log::scan::{ScanItem, ScannedRecord, SegmentScanner};
use crate::log::segment_file::{
    check_header, parse_segment_file_name, HeaderProblem, SEGMENT_FORMAT_VERSIONS_READ,
};
use crate::log::writer::LogWriter;
use crate::range_delete::{remove_covered, Coverage, StoredRange};
use crate::record::RecordKind;
use crate::segments::{SegmentInfo, SegmentTable};
use crate::state::State;
use crate::{Error, Result};

/// A damaged record found during recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CorruptionReport {
    pub segment: u32,
    pub offset: u64,
    pub lsn: Option<u64>,
    pub damage: Damage,
    pub what: String,
}

/// What a damaged range means for the keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// The segment's header block; its records still verify one by one.
    SegmentHeader,
    /// A record of this key whose value is unreadable: the key reads as error 614.
    Key(Vec<u8>),
    /// Bytes that name no key: whatever they held is lost (the open needs `accept_log_damage`).
    Unattributed,
}

/// What recovery did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    pub checkpoint_lsn: Option<u64>,
    pub checkpoint_keys: u64,
    pub segments: u64,
    pub bytes_scanned: u64,
    pub records_replayed: u64,
    /// Torn tails cut off: (segment, offset, reason).
    pub torn_tails: Vec<(u32, u64, String)>,
    pub corrupt: Vec<CorruptionReport>,
    /// Atomic batches found incomplete and not applied.
    pub batches_discarded: u64,
    /// Unattributed damage was found and dropped because the config accepts it.
    pub accepted_damage: bool,
    pub duration: Duration,
}

/// Replay state: the index being rebuilt and the newest LSN applied per key.
struct Replay {
    index: Index,
    checkpoint_lsn: u64,
    max_lsn: u64,
    applied_lsn: HashMap<Vec<u8>, u64, ahash::RandomState>,
    /// The range tombstones replayed so far: a record they cover with an older LSN is skipped.
    coverage: Coverage,
    batch: Vec<ScannedRecord>,
}

pub(crate) async fn recover<D: Disk>(
    disk: &D,
    dir: &Path,
    config: &StoreConfig,
) -> Result<(State<D>, RecoveryReport)> {
    let started = Instant::now();
    disk.prepare_dir(dir).await.map_err(|e| Error::io("prepare directory", dir, e))?;
    let names = disk.list_dir(dir).await.map_err(|e| Error::io("list", dir, e))?;
    // Leftovers of a crash: a checkpoint that never published, a segment being zero-filled.
    if names.iter().any(|n| n == checkpoint::CHECKPOINT_TMP_FILE) {
        let tmp = dir.join(checkpoint::CHECKPOINT_TMP_FILE);
        disk.remove(&tmp).await.map_err(|e| Error::io("remove", &tmp, e))?;
    }
    let prepared = preallocate::adopt_at_open(disk, dir, &names, config).await?;
    let mut report = RecoveryReport::default();
    let loaded = checkpoint::load(disk, dir).await?;
    let (index, checkpoint_lsn, marks) = match loaded {
        Some(l) => {
            report.checkpoint_lsn = Some(l.lsn);
            report.checkpoint_keys = l.index.len() as u64;
            let marks: HashMap<u32, u64> =
                l.marks.iter().map(|m| (m.id.get(), m.replay_from.get())).collect();
            (l.index, l.lsn, marks)
        }
        None => (Index::new(), 0, HashMap::new()),
    };
    let mut replay = Replay {
        index,
        checkpoint_lsn,
        max_lsn: checkpoint_lsn,
        applied_lsn: HashMap::default(),
        coverage: Coverage::default(),
        batch: Vec::new(),
    };
    let mut segments = SegmentTable::default();
    let mut ids: Vec<u32> = names
        .iter()
        .filter_map(|n| parse_segment_file_name(n))
        .filter(|id| (1..=SEGMENT_ID_MAX).contains(id))
        .collect();
    ids.sort_unstable();
    for id in ids {
        let start = marks.get(&id).copied().unwrap_or(SEGMENT_HEADER_BYTES);
        if let Some(info) = open_segment(disk, dir, id, start, &mut replay, &mut report).await? {
            segments.insert(id, info);
        }
    }
    check_damage(&mut report, config)?;
    account_live(&replay.index, &mut segments)?;
    report.segments = segments.len() as u64;
    let mut state = build_state(replay, segments, config, &report)?;
    if let Some(file) = prepared {
        state.prepared = Prepared::Ready(file);
    }
    report.duration = started.elapsed();
    tracing::info!(dir = %dir.display(), ?report, "recovered");
    Ok((state, report))
}

/// Opens one segment and replays it from `start`; None if it is an empty leftover of a crash.
async fn open_segment<D: Disk>(
    disk: &D,
    dir: &Path,
    id: u32,
    start: u64,
    replay: &mut Replay,
    report: &mut RecoveryReport,
) -> Result<Option<SegmentInfo<D::File>>> {
    let path = dir.join(crate::log::segment_file::segment_file_name(id));
    let file = disk.open(&path).await.map_err(|e| Error::io("open", &path, e))?;
    let size = file.size().await.map_err(|e| Error::io("stat", &path, e))?;
    let head = file
        .read_at(0, SEGMENT_HEADER_BYTES as usize)
        .await
        .map_err(|e| Error::io("read", &path, e))?;
    if let Err(problem) = check_header(&head, id) {
        if let HeaderProblem::Version(v) = problem {
            return Err(Error::CorruptFile {
                file: path,
                what: format!(
                    "segment format version {v}; this build reads only versions \
                     {SEGMENT_FORMAT_VERSIONS_READ:?} (docs/FORMAT.md), so the directory was \
                     written by another build"
                ),
            });
        }
        if head.iter().all(|&b| b == 0) || size < SEGMENT_HEADER_BYTES {
            // Created but its header block never became durable (all zeros, or a torn write
            // shorter than the block): no record in it was acknowledged.
            tracing::warn!(segment = id, "removing empty segment left by a crash during creation");
            disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
            return Ok(None);
        }
        let HeaderProblem::Damaged(what) = problem else { unreachable!("returned above") };
        let holds_data =
            holds_records(&file, id, size).await.map_err(|e| Error::io("read", &path, e))?;
        if !holds_data {
            // A header write that power loss garbled, in a segment nothing was written to yet
            // (records follow only once the header is durable): a crash leftover, like the above.
            tracing::warn!(segment = id, %what,
                "removing a segment with a damaged header and no records, left by a crash during creation");
            disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
            return Ok(None);
        }
        tracing::error!(segment = id, %what, "segment header damaged; its records are checked one by one");
        report.corrupt.push(CorruptionReport {
            segment: id,
            offset: 0,
            lsn: None,
            damage: Damage::SegmentHeader,
            what: format!("segment header: {what}"),
        });
    }
    // The bytes in use: the whole file unless the scan shows it ends in zeros (a preallocated
    // segment, docs/FORMAT.md), whose zeros are neither data nor garbage.
    let mut end = size;
    if start != REPLAY_NONE {
        end = replay_segment(&file, id, start.max(SEGMENT_HEADER_BYTES), size, replay, report)
            .await
            .map_err(|e| Error::io("read", &path, e))?;
    }
    Ok(Some(SegmentInfo::new(Some(std::rc::Rc::new(file)), align_up(end, DMA_ALIGN_BYTES), true)))
}

/// Whether anything after the header of segment `id` reads as a record (intact, or with a
/// damaged value, or damage followed by valid data); a torn tail alone does not count.
async fn holds_records<F: DiskFile>(file: &F, id: u32, size: u64) -> std::io::Result<bool> {
    let mut scanner = SegmentScanner::new(file, id, SEGMENT_HEADER_BYTES, size);
    while let Some(item) = scanner.next().await? {
        if !matches!(item, ScanItem::TornTail { .. }) {
            return Ok(true);
        }
    }
    Ok(false)
}

async fn replay_segment<F: DiskFile>(
    file: &F,
    id: u32,
    start: u64,
    size: u64,
    replay: &mut Replay,
    report: &mut RecoveryReport,
) -> std::io::Result<u64> {
    let mut scanner = SegmentScanner::new(file, id, start, size);
    while let Some(item) = scanner.next().await? {
        match item {
            ScanItem::Record(r) => {
                replay.on_record(id, r, report).map_err(std::io::Error::other)?
            }
            ScanItem::Damaged(r) if r.meta.kind == RecordKind::RangeDelete => {
                // Its value is the range's end: which keys it deleted is unknown.
                replay.discard_batch(report);
                let (offset, lsn) = (r.offset, Some(r.meta.lsn));
                let what = "range tombstone whose end key fails its checksum".to_string();
                tracing::error!(segment = id, offset, ?lsn, %what, "damaged range tombstone");
                let damage = Damage::Unattributed;
                report.corrupt.push(CorruptionReport { segment: id, offset, lsn, damage, what });
            }
            ScanItem::Damaged(r) => {
                let key = r.key.escape_ascii().to_string();
                tracing::error!(segment = id, offset = r.offset, lsn = r.meta.lsn, %key,
                    "damaged record: value checksum mismatch; its key reads as error 614 until written again");
                report.corrupt.push(CorruptionReport {
                    segment: id,
                    offset: r.offset,
                    lsn: Some(r.meta.lsn),
                    damage: Damage::Key(r.key.clone()),
                    what: "value checksum mismatch".into(),
                });
                replay.on_record(id, r, report).map_err(std::io::Error::other)?
            }
            ScanItem::Corrupt { offset, lsn, what } => {
                replay.discard_batch(report);
                tracing::error!(segment = id, offset, ?lsn, %what, "damaged log bytes that name no key");
                let damage = Damage::Unattributed;
                report.corrupt.push(CorruptionReport { segment: id, offset, lsn, damage, what });
            }
            ScanItem::TornTail { offset, what } => {
                replay.discard_batch(report);
                tracing::warn!(segment = id, offset, %what, "torn tail cut");
                report.torn_tails.push((id, offset, what));
            }
            // `next` skips nothing; only compaction asks the scanner to.
            ScanItem::Skipped { .. } => {}
        }
    }
    replay.discard_batch(report);
    let end = scanner.data_end().max(start);
    report.bytes_scanned += end - start;
    Ok(end)
}

impl Replay {
    fn on_record(&mut self, id: u32, r: ScannedRecord, report: &mut RecoveryReport) -> Result<()> {
        self.max_lsn = self.max_lsn.max(r.meta.lsn);
        if let Some(last) = self.batch.last() {
            let continues = r.meta.lsn == last.meta.lsn + 1
                && r.offset == last.offset + last.padded_len
                && u32::from(r.meta.batch_remaining) + 1 == u32::from(last.meta.batch_remaining);
            if !continues {
                self.discard_batch(report);
            }
        }
        if r.meta.batch_remaining > 0 || !self.batch.is_empty() {
            self.batch.push(r);
            if self.batch.last().is_some_and(|l| l.meta.batch_remaining == 0) {
                for r in std::mem::take(&mut self.batch) {
                    self.apply(id, r, report)?;
                }
            }
            return Ok(());
        }
        self.apply(id, r, report)
    }

    fn discard_batch(&mut self, report: &mut RecoveryReport) {
        if !self.batch.is_empty() {
            let first = &self.batch[0];
            tracing::warn!(
                lsn = first.meta.lsn,
                records = self.batch.len(),
                "incomplete atomic batch discarded"
            );
            report.batches_discarded += 1;
            self.batch.clear();
        }
    }

    fn apply(&mut self, id: u32, r: ScannedRecord, report: &mut RecoveryReport) -> Result<()> {
        if r.meta.lsn <= self.checkpoint_lsn {
            return Ok(());
        }
        // A record of a key that replay already saw written later, or that a later range
        // tombstone deleted, changes nothing.
        let newer_write = self.applied_lsn.get(&r.key).is_some_and(|&l| l >= r.meta.lsn)
            || self.coverage.newest(&r.key).is_some_and(|l| l > r.meta.lsn);
        match r.meta.kind {
            RecordKind::RangeDelete => self.apply_range_delete(&r),
            _ if newer_write => return Ok(()),
            RecordKind::Put => {
                let loc = Location::new(id, r.offset, r.padded_len);
                self.index
                    .upsert(&r.key, IndexEntry::new(loc, r.meta.version, r.meta.expiry_ms))?;
                self.applied_lsn.insert(r.key, r.meta.lsn);
            }
            RecordKind::Delete => {
                self.index.remove(&r.key);
                self.applied_lsn.insert(r.key, r.meta.lsn);
            }
        }
        report.records_replayed += 1;
        Ok(())
    }

    /// A range tombstone: every key of its range that replay has not seen written after it
    /// leaves the index (the checkpoint's keys are all older), and the range is remembered for
    /// the older records the scan has yet to meet.
    fn apply_range_delete(&mut self, r: &ScannedRecord) {
        let range = StoredRange::from_record(&r.key, &r.value);
        let lsn = r.meta.lsn;
        let applied = &self.applied_lsn;
        let newer = |key: &[u8]| applied.get(key).is_some_and(|&l| l > lsn);
        remove_covered(&mut self.index, &range, newer, |_, _| {});
        self.coverage.insert(&range, lsn);
    }
}

/// Refuses the open on damage that names no key, unless the config accepts the loss; then logs
/// each dropped range.
fn check_damage(report: &mut RecoveryReport, config: &StoreConfig) -> Result<()> {
    let unattributed: Vec<&CorruptionReport> =
        report.corrupt.iter().filter(|c| c.damage == Damage::Unattributed).collect();
    let Some(first) = unattributed.first() else { return Ok(()) };
    if !config.accept_log_damage {
        let first = format!("segment {} offset {}: {}", first.segment, first.offset, first.what);
        return Err(Error::DamagedLog { count: unattributed.len(), first });
    }
    for c in &unattributed {
        tracing::error!(segment = c.segment, offset = c.offset, lsn = ?c.lsn, what = %c.what,
            "accept_log_damage: dropping damaged log bytes; acknowledged writes in them are lost");
    }
    report.accepted_damage = true;
    Ok(())
}

/// Live bytes per segment from the index; an entry naming a missing segment is fatal.
fn account_live<F>(index: &Index, segments: &mut SegmentTable<F>) -> Result<()> {
    for (key, e) in index.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded, false) {
        let loc = e.location();
        if segments.get(loc.segment()).is_none() {
            return Err(Error::CorruptFile {
                file: checkpoint::CHECKPOINT_FILE.into(),
                what: format!(
                    "key {key:?} points at segment {} which does not exist",
                    loc.segment()
                ),
            });
        }
        segments.add_live(loc.segment(), loc.len());
    }
    Ok(())
}

fn build_state<D: Disk>(
    replay: Replay,
    mut segments: SegmentTable<D::File>,
    config: &StoreConfig,
    report: &RecoveryReport,
) -> Result<State<D>> {
    let active = segments.free_id().ok_or(Error::SegmentIdsExhausted { max: SEGMENT_ID_MAX })?;
    segments.insert(active, SegmentInfo::new(None, SEGMENT_HEADER_BYTES, false));
    Ok(State {
        index: replay.index,
        deferred: crate::deferred_puts::DeferredPuts::new(),
        cache: RecordCache::new(config.cache_capacity_bytes),
        log: LogWriter::new(config.segment_size_bytes, active, 0),
        segments,
        inflight: Vec::new(),
        prepared: Default::default(),
        next_lsn: replay.max_lsn + 1,
        written_seq: 0,
        synced_seq: 0,
        write_wanted_seq: 0,
        sync_wanted_seq: 0,
        pending_since: None,
        flusher_armed: false,
        flusher_waiting: false,
        commit_delay_until_seq: 0,
        checkpoint_lsn: replay.checkpoint_lsn,
        bytes_since_checkpoint: report.bytes_scanned,
        poisoned: None,
        lost: None,
        closing: false,
        flusher_stop: false,
        counters: Default::default(),
        histograms: Default::default(),
    })
}
