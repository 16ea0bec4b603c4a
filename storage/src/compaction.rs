//! Compaction and the maintenance task.
//!
//! The maintenance task compacts once the store's garbage share reaches the threshold, the
//! segments with the most garbage first (`SegmentTable::space_victims`); `Store::compact`
//! compacts every sealed segment whose own garbage ratio reaches it. A victim is read front to
//! back, whole or (usually) only the ranges that hold its live records, found by walking the
//! index ([`live_spans`]). Each record
//! the index still points at is copied to the log head with its original LSN, version and expiry
//! (flag MOVED) and the index is re-pointed (for a segment whose dead-record map is complete,
//! without a lookup per record: the map tells the live records, and the re-pointing is done in
//! key order, many at a time, by `Relocations`); expired records are dropped; a tombstone (of one key
//! or of a range) is copied only if the checkpoint does not cover it yet (recovery would otherwise
//! replay an older put under it). A [`CompactionFilter`] installed by the layer above (the table layer) sees every
//! live put on the way and may drop it (a row of a dropped table) or shorten its value (expired
//! versions inside a row). After the copies are fdatasync'd the segment is retired; it is deleted after the
//! next checkpoint, since the previous checkpoint may still point into it.
//!
//! [`CompactionFilter`]: crate::compaction_filter::CompactionFilter
//!
//! The maintenance task runs on its own glommio task queue with few shares, so foreground
//! requests win the CPU, and does one thing at a time under the maintenance lock.

use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::compaction_filter::FilterDecision;
use crate::constants::{
    COMPACTION_GARBAGE_MIN_SEGMENTS, SEGMENT_HEADER_BYTES, SEQUENTIAL_READ_BYTES,
    WRITE_BUFFER_BYTES_MAX,
};
use crate::disk::{Disk, DiskFile};
use crate::index::{IndexEntry, IndexHint, Location, WalkStep};
use crate::log::group_commit::{self, Durability};
use crate::log::scan::{ScanItem, ScannedRecord, SegmentScanner};
use crate::maintenance_step::{self, RELOCATION_STEP_MOVES, WALK_STEP_SLOTS};
use crate::record::RecordKind;
use crate::state::Shared;
use crate::stats::record_elapsed_us;
use crate::{checkpoint, Error, Result};

/// What one compaction pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompactionReport {
    pub segments_compacted: u64,
    pub records_moved: u64,
    pub bytes_moved: u64,
    pub records_dropped: u64,
    /// Of the dropped records, those the segment's dead-record map named (no index search).
    pub records_known_dead: u64,
    /// Records a [`CompactionFilter`](crate::compaction_filter::CompactionFilter) shortened.
    pub records_rewritten: u64,
    /// Of the moved records, copies whose key was written or deleted before the index was
    /// re-pointed to them (`Relocations`): garbage as soon as written.
    pub copies_superseded: u64,
    /// Segment bytes freed (deleted after the closing checkpoint).
    pub bytes_reclaimed: u64,
    /// Victims read only where the index walk found live records (`live_spans`).
    pub segments_walked: u64,
    /// Victim bytes read.
    pub bytes_read: u64,
}

/// Compacts every segment over the threshold now, then checkpoints (deleting them).
pub(crate) async fn run<D: Disk>(shared: &Shared<D>) -> Result<CompactionReport> {
    let _permit = shared.maintenance_lock.acquire_permit(1).await.map_err(|_| Error::Closed)?;
    // Flush first: the flush can seal segments, and those must be candidates too.
    group_commit::sync_all(shared).await?;
    let mut total = CompactionReport::default();
    // A pass's copies can fill and seal the segment that was active when it began, which may be
    // mostly garbage: the next pass takes it. Copies are live, so the segments they fill are not
    // victims; this ends after a pass or two, and the bound is only a guard.
    for _ in 0..COMPACTION_PASSES_MAX {
        let r = pass(shared, Victims::EveryOverThreshold).await?;
        total.add(&r);
        if r.segments_compacted == 0 {
            break;
        }
    }
    Ok(total)
}

/// Passes one `Store::compact` call makes at most.
const COMPACTION_PASSES_MAX: usize = 4;

impl CompactionReport {
    fn add(&mut self, r: &CompactionReport) {
        self.segments_compacted += r.segments_compacted;
        self.records_moved += r.records_moved;
        self.bytes_moved += r.bytes_moved;
        self.records_dropped += r.records_dropped;
        self.records_known_dead += r.records_known_dead;
        self.records_rewritten += r.records_rewritten;
        self.copies_superseded += r.copies_superseded;
        self.bytes_reclaimed += r.bytes_reclaimed;
        self.segments_walked += r.segments_walked;
        self.bytes_read += r.bytes_read;
    }
}

/// Which segments a pass compacts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Victims {
    /// Every sealed segment whose garbage ratio reaches the threshold (`Store::compact`).
    EveryOverThreshold,
    /// Only while the store's garbage share reaches the threshold, the segments with the most
    /// garbage first (the maintenance task: `SegmentTable::space_victims`).
    UntilStoreUnderThreshold,
}

/// One pass: checkpoint first so tombstones it covers can be dropped, compact the victims present
/// now (not the segments this pass writes, so it ends), checkpoint again to delete them.
async fn pass<D: Disk>(shared: &Shared<D>, choice: Victims) -> Result<CompactionReport> {
    let threshold = shared.config.garbage_ratio_threshold;
    let mut report = CompactionReport::default();
    let victims = {
        let st = shared.state.borrow();
        match choice {
            Victims::EveryOverThreshold => st.segments.compaction_victims(threshold),
            Victims::UntilStoreUnderThreshold => {
                let min = COMPACTION_GARBAGE_MIN_SEGMENTS * shared.config.segment_size_bytes;
                st.segments.space_victims(threshold, min)
            }
        }
    };
    if victims.is_empty() {
        return Ok(report);
    }
    checkpoint::write(shared).await?;
    for id in victims {
        if shared.state.borrow().closing {
            break;
        }
        compact_segment(shared, id, &mut report).await?;
    }
    checkpoint::write(shared).await?;
    let mut st = shared.state.borrow_mut();
    st.counters.compactions += report.segments_compacted;
    st.counters.compaction_moved_bytes += report.bytes_moved;
    st.counters.compaction_reclaimed_bytes += report.bytes_reclaimed;
    st.counters.compaction_read_bytes += report.bytes_read;
    Ok(report)
}

async fn compact_segment<D: Disk>(
    shared: &Shared<D>,
    id: u32,
    report: &mut CompactionReport,
) -> Result<()> {
    let (file, end) = {
        let st = shared.state.borrow();
        let Some(seg) = st.segments.get(id) else { return Ok(()) };
        (seg.file.clone().expect("sealed segments have files"), seg.end)
    };
    let path = shared.segment_path(id);
    // `end` is rounded up to the block size, but a segment recovered with a torn tail ends
    // mid-block: scan only the bytes the file has.
    let size = file.size().await.map_err(|e| Error::io("stat", &path, e))?;
    let whole = [(SEGMENT_HEADER_BYTES, size.min(end))];
    let spans = live_spans(shared, id, size.min(end)).await;
    if spans.is_some() {
        report.segments_walked += 1;
    }
    // Puts the dead-record map names are dropped on their verified header alone. If the map
    // names every dead record of the segment, the other Puts are copied without a lookup, and
    // their index entries re-pointed later, in key order (`Relocations`).
    let known_dead = |offset| shared.state.borrow().segments.is_dead(id, offset);
    let complete = shared.state.borrow().segments.get(id).is_some_and(|s| s.dead_map_complete);
    let mut relocations = complete.then(Relocations::default);
    let scanned = async {
        for &(start, stop) in spans.as_deref().unwrap_or(&whole) {
            let mut scanner = SegmentScanner::new(&*file, id, start, stop);
            report.bytes_read += stop - start;
            let moved = relocations.as_mut();
            scan_and_move(shared, id, &path, &mut scanner, &known_dead, moved, report).await?;
        }
        Ok(())
    }
    .await;
    // Applied even after a failure: the copies made so far are in the log, and their segments
    // count them live until the index says which ones it kept.
    if let Some(r) = relocations.as_mut() {
        r.apply(shared, report).await;
    }
    scanned?;
    group_commit::sync_all(shared).await?;
    let mut st = shared.state.borrow_mut();
    let seg = st.segments.get_mut(id);
    if seg.live_bytes > 0 {
        // A live record could not be read back (damage): keep the segment, say so.
        tracing::error!(
            segment = id,
            live = seg.live_bytes,
            "segment keeps unreadable live records; not retired"
        );
        return Ok(());
    }
    seg.retired = true;
    report.segments_compacted += 1;
    report.bytes_reclaimed += seg.end;
    Ok(())
}

/// Reading only the live records: the byte ranges of victim `id` (whose records end at `end`)
/// that hold its live records, found by walking the index ([`Index::walk_segment`]), or None if
/// the whole segment must be read. Under an overwrite load a victim is nearly all garbage, and
/// reading all of it (64 MiB by default) to copy a few records competed with the flushes for the
/// disk and cost compaction most of its CPU (docs/BENCHMARKS.md, twenty-sixth session).
///
/// The walk is used only when it can miss nothing the scan would keep and costs less:
/// - every tombstone in the victim is covered by the checkpoint (a tombstone has no index entry
///   to find it by; see [`SegmentInfo::tombstone_lsn_max`]), and
/// - the index's slots, 24 bytes each, are no more bytes than the victim's records, so the walk
///   reads less memory than the scan reads disk.
///
/// A walk that a merge of the index invalidates falls back to the whole segment. Records in a
/// range that are not live are classified as a whole scan would (dead, covered, superseded),
/// and a live record the walk missed would keep the segment's live bytes above zero, so it is
/// not retired (`compact_segment`).
///
/// [`Index::walk_segment`]: crate::index::Index::walk_segment
/// [`SegmentInfo::tombstone_lsn_max`]: crate::segments::SegmentInfo::tombstone_lsn_max
async fn live_spans<D: Disk>(shared: &Shared<D>, id: u32, end: u64) -> Option<Vec<(u64, u64)>> {
    let mut walk = {
        let st = shared.state.borrow_mut();
        if !shared.config.compaction_reads_live_ranges {
            return None;
        }
        let seg = st.segments.get(id)?;
        let record_bytes = end.saturating_sub(SEGMENT_HEADER_BYTES);
        let entry_bytes = std::mem::size_of::<IndexEntry>() as u64;
        if seg.tombstone_lsn_max > st.checkpoint_lsn
            || (st.index.walk_slots() as u64) * entry_bytes > record_bytes
        {
            return None;
        }
        // `borrow_mut` applied the blind puts whose index update waited (`deferred_puts.rs`):
        // they are live, and now in the index.
        st.index.walk_segment(id)
    };
    loop {
        let started = Instant::now();
        let step = {
            let mut st = shared.state.borrow_mut();
            let step = st.index.walk_segment_step(&mut walk, WALK_STEP_SLOTS);
            record_elapsed_us(&mut st.histograms.maintenance_step_us, started);
            step
        };
        match step {
            WalkStep::More => maintenance_step::yield_to_requests().await,
            WalkStep::Done => break,
            WalkStep::Invalidated => return None,
        }
    }
    let mut found = walk.into_locations();
    found.sort_unstable_by_key(|l| l.offset());
    let mut spans: Vec<(u64, u64)> = Vec::new();
    for l in found {
        let (start, stop) = (l.offset(), (l.offset() + l.len()).min(end));
        match spans.last_mut() {
            Some(last)
                if start <= last.1 + LIVE_SPAN_GAP_BYTES_MAX
                    && stop - last.0 <= LIVE_SPAN_BYTES_MAX =>
            {
                last.1 = last.1.max(stop);
            }
            _ => spans.push((start, stop)),
        }
    }
    Some(spans)
}

/// Dead bytes between two live records that one read takes rather than two. Chosen, not
/// tuned: at 100,000 keys with aged victims compaction read 105 MB for 201 MB reclaimed under
/// a Sync load and 3.4 MB for 2 GiB under a NoSync one (docs/BENCHMARKS.md, twenty-sixth
/// session); a smaller gap would read less in more reads.
const LIVE_SPAN_GAP_BYTES_MAX: u64 = 32 * 1024;

/// The longest range one scanner reads, in reads of at most [`SEQUENTIAL_READ_BYTES`].
const LIVE_SPAN_BYTES_MAX: u64 = 4 * SEQUENTIAL_READ_BYTES as u64;

/// Reads a segment's records and moves the live ones.
async fn scan_and_move<D: Disk>(
    shared: &Shared<D>,
    id: u32,
    path: &Path,
    scanner: &mut SegmentScanner<'_, D::File>,
    known_dead: impl Fn(u64) -> bool,
    mut relocations: Option<&mut Relocations>,
    report: &mut CompactionReport,
) -> Result<()> {
    let mut clock = ScanClock::default();
    while let Some(item) =
        scanner.next_unless(&known_dead).await.map_err(|e| Error::io("read", path, e))?
    {
        match item {
            ScanItem::Skipped { .. } => {
                report.records_dropped += 1;
                report.records_known_dead += 1;
            }
            ScanItem::Record(r) => {
                let now = clock.now_ms(shared);
                let moved = move_if_live(shared, id, &r, now, relocations.as_deref_mut(), report)?;
                if let Some(r) = relocations.as_deref_mut() {
                    if r.full() {
                        r.apply(shared, report).await;
                    }
                }
                throttle(shared, moved).await?;
            }
            ScanItem::Corrupt { offset, lsn, what } => {
                tracing::warn!(segment = id, offset, ?lsn, %what, "compaction skipped a corrupt record");
            }
            // Its value cannot be copied; if the index still points at it, the segment keeps it
            // (below), so the key goes on reading as damaged (614) until it is written again.
            ScanItem::Damaged(r) => {
                let lsn = r.meta.lsn;
                tracing::warn!(
                    segment = id,
                    offset = r.offset,
                    lsn,
                    "compaction skipped a damaged record"
                );
            }
            ScanItem::TornTail { .. } => {}
        }
    }
    Ok(())
}

/// Re-pointings of the index [`move_if_live`] put off: copies of records that the dead-record
/// map says are live, whose keys' index entries still point at the segment being compacted.
/// They are applied together, sorted by key, in one forward pass over the index's sorted run
/// ([`Index::relocate_sorted`](crate::index::Index::relocate_sorted)): a search of a large
/// shard's index misses the CPU cache at each of its levels, so a lookup per moved record was
/// most of compaction's cost. A key written or deleted since its copy was made no longer points
/// at the old place: the index keeps its entry, and the copy is garbage (marked dead).
///
/// Until they are applied the old records are still where the index says, in a segment that is
/// retired only after [`Relocations::apply`], so reads find them there.
#[derive(Default)]
struct Relocations {
    /// The keys, one after another.
    keys: Vec<u8>,
    moves: Vec<Relocation>,
}

struct Relocation {
    key_start: u32,
    key_end: u32,
    from: Location,
    to: Location,
}

/// Moves [`Relocations`] holds before it applies them: bounds its memory (with
/// [`RELOCATION_KEY_BYTES_MAX`]) and keeps each pass over the sorted run dense.
const RELOCATION_MOVES_MAX: usize = 64 * 1024;

/// Key bytes [`Relocations`] holds before it applies its moves.
const RELOCATION_KEY_BYTES_MAX: usize = 4 * 1024 * 1024;

impl Relocations {
    fn push(&mut self, key: &[u8], from: Location, to: Location) {
        let key_start = self.keys.len() as u32;
        self.keys.extend_from_slice(key);
        self.moves.push(Relocation { key_start, key_end: self.keys.len() as u32, from, to });
    }

    fn full(&self) -> bool {
        self.moves.len() >= RELOCATION_MOVES_MAX || self.keys.len() >= RELOCATION_KEY_BYTES_MAX
    }

    /// Re-points the index for every held move, in key order, and settles the live bytes: a
    /// kept copy takes its bytes off the old segment; a copy of a key that has changed since is
    /// garbage in its new segment. The moves are sorted in one step and re-pointed
    /// [`RELOCATION_STEP_MOVES`] at a time, with the requests run between steps: a key written
    /// meanwhile no longer points at the old place, and its copy is garbage as above.
    async fn apply<D: Disk>(&mut self, shared: &Shared<D>, report: &mut CompactionReport) {
        let started = Instant::now();
        let keys = &self.keys;
        let key = |m: &Relocation| &keys[m.key_start as usize..m.key_end as usize];
        self.moves.sort_unstable_by(|a, b| key(a).cmp(key(b)));
        record_elapsed_us(&mut shared.state.borrow_mut().histograms.maintenance_step_us, started);
        for step in self.moves.chunks(RELOCATION_STEP_MOVES) {
            maintenance_step::yield_to_requests().await;
            let started = Instant::now();
            let mut st = shared.state.borrow_mut();
            let st = &mut *st;
            let segments = &mut st.segments;
            st.index.relocate_sorted(
                step.iter().map(|m| (key(m), m.from, m.to)),
                |from, to, moved| {
                    if moved {
                        segments.sub_live(from.segment(), from.len());
                    } else {
                        segments.record_died(to.segment(), to.offset(), to.len());
                        report.copies_superseded += 1;
                    }
                },
            );
            record_elapsed_us(&mut st.histograms.maintenance_step_us, started);
        }
        self.keys.clear();
        self.moves.clear();
    }
}

/// Keeps compaction inside the write-buffer bound: once the unflushed tail is full, wait for the
/// flusher to write it, as a `NoSync` writer would.
async fn throttle<D: Disk>(shared: &Shared<D>, moved_seq: Option<u64>) -> Result<()> {
    let Some(seq) = moved_seq else { return Ok(()) };
    if shared.state.borrow().log.pending_bytes() < WRITE_BUFFER_BYTES_MAX {
        return Ok(());
    }
    group_commit::wait_durable(shared, seq, Durability::WriteNoSync).await
}

/// Records compaction decides on with one reading of the clock. A reading up to this many
/// records old only makes compaction copy a record that expired meanwhile, never drop one that
/// has not (reads filter expired versions anyway, and the next compaction drops it).
const RECORDS_PER_CLOCK_READ: u32 = 1024;

/// The time compaction compares expiries against, read once per [`RECORDS_PER_CLOCK_READ`].
#[derive(Default)]
struct ScanClock {
    now_ms: u64,
    uses_left: u32,
}

impl ScanClock {
    fn now_ms<D: Disk>(&mut self, shared: &Shared<D>) -> u64 {
        if self.uses_left == 0 {
            self.now_ms = shared.clock.now_ms();
            self.uses_left = RECORDS_PER_CLOCK_READ;
        }
        self.uses_left -= 1;
        self.now_ms
    }
}

/// Copies one record forward if the store still needs it; returns the copy's append sequence.
/// `now` is the time expiries are compared against (at most a little old: see [`ScanClock`]).
/// With `relocations` (the segment's dead-record map is complete), a Put the filter keeps is
/// copied without an index lookup and its re-pointing is left to `relocations`.
fn move_if_live<D: Disk>(
    shared: &Shared<D>,
    id: u32,
    r: &ScannedRecord,
    now: u64,
    relocations: Option<&mut Relocations>,
    report: &mut CompactionReport,
) -> Result<Option<u64>> {
    let mut st = shared.state.borrow_mut();
    let loc = Location::new(id, r.offset, r.padded_len);
    let mut decided = None;
    if let (Some(relocations), RecordKind::Put) = (relocations, r.meta.kind) {
        match decide(shared, r, now) {
            FilterDecision::Keep => {
                let (new_loc, seq) = st.append_moved(&r.meta, &r.key, &r.value)?;
                st.segments.add_live(new_loc.segment(), new_loc.len());
                relocations.push(&r.key, loc, new_loc);
                report.records_moved += 1;
                report.bytes_moved += loc.len();
                return Ok(Some(seq));
            }
            // A drop or a rewrite changes the index at once: only after the lookup below.
            other => decided = Some(other),
        }
    }
    // Puts the dead-record map names never get here: the scanner skipped them. The lookup's
    // hint saves the relocation below a second search.
    let mut hint = IndexHint::NONE;
    let keep = match r.meta.kind {
        RecordKind::Put => match st.index.get_hinted(&r.key) {
            Some((e, h)) if e.location() == loc => {
                hint = h;
                true
            }
            _ => false,
        },
        // A tombstone, of one key or of a range, matters only to replay, which skips every
        // record the checkpoint covers: the older puts it deletes are below its LSN.
        RecordKind::Delete | RecordKind::RangeDelete => r.meta.lsn > st.checkpoint_lsn,
    };
    if !keep {
        report.records_dropped += 1;
        return Ok(None);
    }
    let decision = decided.unwrap_or_else(|| decide(shared, r, now));
    let value = match decision {
        FilterDecision::Keep => std::borrow::Cow::Borrowed(r.value.as_slice()),
        FilterDecision::Drop => {
            st.index.remove(&r.key);
            st.cache.remove(&r.key);
            st.segments.sub_live(id, loc.len());
            report.records_dropped += 1;
            return Ok(None);
        }
        FilterDecision::Rewrite(value) => {
            st.cache.remove(&r.key);
            report.records_rewritten += 1;
            std::borrow::Cow::Owned(value)
        }
    };
    let (new_loc, seq) = st.append_moved(&r.meta, &r.key, &value)?;
    if r.meta.kind == RecordKind::Put {
        // A merge in between would only make the hint stale, and the index search again.
        let moved = st.index.relocate_hinted(&r.key, hint, loc, new_loc);
        assert!(moved, "index changed under a synchronous move");
        st.segments.sub_live(id, loc.len());
        st.segments.add_live(new_loc.segment(), new_loc.len());
    }
    report.records_moved += 1;
    report.bytes_moved += loc.len();
    Ok(Some(seq))
}

/// What becomes of a record compaction copies: dropped if it has expired by `now`, else what
/// the installed [`CompactionFilter`](crate::compaction_filter::CompactionFilter) says of a
/// Put; a tombstone is kept.
fn decide<D: Disk>(shared: &Shared<D>, r: &ScannedRecord, now: u64) -> FilterDecision {
    let expired = r.meta.expiry_ms != 0 && r.meta.expiry_ms <= now;
    match (&r.meta.kind, shared.compaction_filter.borrow().as_ref()) {
        (RecordKind::Put, _) if expired => FilterDecision::Drop,
        (RecordKind::Put, Some(filter)) => filter.filter(&r.key, &r.value, now),
        _ => FilterDecision::Keep,
    }
}

/// The background task: checkpoints when enough log was written, compacts when a segment
/// crosses the threshold, until the store closes.
pub(crate) async fn run_maintenance<D: Disk>(shared: Rc<Shared<D>>) {
    let interval = Duration::from_millis(shared.config.maintenance_interval_ms);
    loop {
        let listener = shared.maintenance_wanted.listen();
        if shared.state.borrow().closing {
            return;
        }
        if let Err(e) = maintenance_round(&shared).await {
            tracing::error!(dir = %shared.dir.display(), error = %e, "maintenance failed");
        }
        if shared.state.borrow().closing {
            return;
        }
        futures_lite::future::or(listener, glommio::timer::sleep(interval)).await;
    }
}

async fn maintenance_round<D: Disk>(shared: &Shared<D>) -> Result<()> {
    let _permit = shared.maintenance_lock.acquire_permit(1).await.map_err(|_| Error::Closed)?;
    let due =
        shared.state.borrow().bytes_since_checkpoint >= shared.config.checkpoint_interval_bytes;
    if due {
        checkpoint::write(shared).await?;
    }
    pass(shared, Victims::UntilStoreUnderThreshold).await.map(|_| ())
}
