//! The table of a shard's segments: open files, live-byte accounting and id allocation.
//!
//! Live bytes are the padded lengths of the records the index points at. Everything else in a
//! segment (overwritten and deleted records, tombstones, flush padding) is garbage, and the
//! garbage ratio of a sealed segment decides when compaction rewrites it.
//!
//! Each segment also keeps [`DeadRecords`]: the records a later write replaced or deleted since
//! the store opened, one bit per [`DEAD_MAP_UNIT_BYTES`] of the segment. Compaction drops a
//! marked record without asking the index whether it is live, which under an overwrite load is
//! most of the records it reads: the scanner steps over them after checking only their header
//! (`SegmentScanner::next_unless`, `compaction::compact_segment`).
//!
//! A record's dead bit is set one write late: [`SegmentTable::record_died`] asks for the bit's
//! cache line and sets the bit of the record the write before replaced, whose line it asked for
//! then. A put otherwise waited for that line (a random place in a map of up to 256 KiB per
//! segment): 4.2% of the node's CPU at pipeline 32. The one bit not yet set is kept beside the
//! maps and counts as set for [`SegmentTable::is_dead`]; it is set before any segment is added
//! or removed, so a reused segment id never receives a bit meant for its predecessor.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::constants::{RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, SEGMENT_ID_MAX};

/// One bit of a segment's [`DeadRecords`] covers this many bytes of the segment: at most 256 KiB
/// (+ one 8 KiB growth step) of bits for a 64 MiB segment, 1/256 of the log, allocated as dead
/// records appear.
pub const DEAD_MAP_UNIT_BYTES: u64 = 32;

/// A map grows by this many 64-bit words (8 KiB) at a time.
const DEAD_MAP_GROWTH_WORDS: usize = 1024;

// Every record is longer than a unit (a header alone is longer), so no two records share a bit.
const _: () = assert!(RECORD_HEADER_BYTES as u64 > DEAD_MAP_UNIT_BYTES);

/// The records of one segment known to be garbage: replaced or deleted by a later write since
/// the store opened (or since a resume rebuilt its state). A set bit is a fact, never a guess:
/// a location that lost its key's index entry never gets it back, and a segment id that is
/// reused starts with a new map. A clear bit says nothing (records that died before the store
/// opened are not marked), so compaction asks the index about those.
#[derive(Debug, Default)]
pub struct DeadRecords {
    bits: Vec<u64>,
}

impl DeadRecords {
    fn unit(offset: u64) -> (usize, u64) {
        let unit = (offset / DEAD_MAP_UNIT_BYTES) as usize;
        (unit / 64, 1 << (unit % 64))
    }

    /// Marks the record at `offset` dead.
    pub fn mark(&mut self, offset: u64) {
        let (word, bit) = Self::unit(offset);
        if word >= self.bits.len() {
            // Grown in steps of 8 KiB, exactly: at most one step past what the segment needs.
            let len = (word + 1).next_multiple_of(DEAD_MAP_GROWTH_WORDS);
            self.bits.reserve_exact(len - self.bits.len());
            self.bits.resize(len, 0);
        }
        self.bits[word] |= bit;
    }

    /// Asks for the line that holds the record at `offset`'s bit (nothing past the map).
    pub fn prefetch(&self, offset: u64) {
        if let Some(w) = self.bits.get(Self::unit(offset).0) {
            crate::prefetch::prefetch(w);
        }
    }

    /// Whether the record at `offset` is known to be dead.
    pub fn contains(&self, offset: u64) -> bool {
        let (word, bit) = Self::unit(offset);
        self.bits.get(word).is_some_and(|w| w & bit != 0)
    }

    /// Heap bytes of the map.
    pub fn heap_bytes(&self) -> usize {
        self.bits.capacity() * std::mem::size_of::<u64>()
    }
}

/// One segment's state.
#[derive(Debug)]
pub struct SegmentInfo<F> {
    /// None until the flusher has created the file.
    pub file: Option<Rc<F>>,
    /// Bytes of the file in use: header block, records and padding written so far.
    pub end: u64,
    /// Padded bytes of records the index points at.
    pub live_bytes: u64,
    /// Full, fsynced, never written again; a compaction candidate.
    pub sealed: bool,
    /// Compacted: no record in it is live; deleted after the next checkpoint.
    pub retired: bool,
    /// Records in it that later writes replaced or deleted.
    pub dead: DeadRecords,
    /// Whether `dead` names every record of the segment that has died: true for a segment this
    /// process created (registered before its file existed), false for one found at open,
    /// whose records may have died before. Compaction trusts the map of such a segment to tell
    /// the live records (it still checks each against the index before the index is changed).
    pub dead_map_complete: bool,
    /// The highest LSN of a tombstone (of one key or of a range) in the segment: 0 for none,
    /// `u64::MAX` for a segment found at open (not known without reading it). Compaction reads
    /// only the live records of a victim whose tombstones the checkpoint covers (`compaction.rs`).
    pub tombstone_lsn_max: u64,
}

impl<F> SegmentInfo<F> {
    /// A segment registered with no file yet is one this process creates ([`Self::dead_map_complete`]).
    pub fn new(file: Option<Rc<F>>, end: u64, sealed: bool) -> Self {
        SegmentInfo {
            dead_map_complete: file.is_none(),
            tombstone_lsn_max: if file.is_none() { 0 } else { u64::MAX },
            file,
            end,
            live_bytes: 0,
            sealed,
            retired: false,
            dead: DeadRecords::default(),
        }
    }

    /// Takes `bytes` off the live bytes of segment `id` (this one).
    fn take_live(&mut self, id: u32, bytes: u64) {
        self.live_bytes = self.live_bytes.checked_sub(bytes).unwrap_or_else(|| {
            panic!("segment {id}: live bytes {} would go below zero by {bytes}", self.live_bytes)
        });
    }

    /// Bytes of the record area in use (the file's bytes past its header block).
    fn record_bytes(&self) -> u64 {
        self.end.saturating_sub(SEGMENT_HEADER_BYTES)
    }

    /// Bytes of the record area that are not live.
    fn garbage_bytes(&self) -> u64 {
        self.record_bytes().saturating_sub(self.live_bytes)
    }

    /// Share of the record area that is not live (0.0 for an empty segment).
    pub fn garbage_ratio(&self) -> f64 {
        let used = self.record_bytes();
        if used == 0 {
            return 0.0;
        }
        1.0 - (self.live_bytes as f64 / used as f64)
    }
}

/// All segments of a shard, by id.
#[derive(Debug)]
pub struct SegmentTable<F> {
    map: BTreeMap<u32, SegmentInfo<F>>,
    /// The record the last [`Self::record_died`] replaced (segment id, offset): its dead bit is
    /// set by the next one, or before a segment is added or removed.
    dead_pending: Option<(u32, u64)>,
}

impl<F> Default for SegmentTable<F> {
    fn default() -> Self {
        SegmentTable { map: BTreeMap::new(), dead_pending: None }
    }
}

impl<F> SegmentTable<F> {
    /// The smallest id not in use (ids start at 1), or None if [`SEGMENT_ID_MAX`] are live.
    pub fn free_id(&self) -> Option<u32> {
        let mut expect = 1;
        for &id in self.map.keys() {
            if id != expect {
                break;
            }
            expect += 1;
        }
        (expect <= SEGMENT_ID_MAX).then_some(expect)
    }

    pub fn insert(&mut self, id: u32, info: SegmentInfo<F>) {
        self.set_pending_dead_bit();
        let old = self.map.insert(id, info);
        assert!(old.is_none(), "segment id {id} registered twice");
    }

    pub fn remove(&mut self, id: u32) -> Option<SegmentInfo<F>> {
        self.set_pending_dead_bit();
        self.map.remove(&id)
    }

    pub fn get(&self, id: u32) -> Option<&SegmentInfo<F>> {
        self.map.get(&id)
    }

    /// The segment a live location names; its absence is a broken invariant.
    pub fn get_mut(&mut self, id: u32) -> &mut SegmentInfo<F> {
        self.map.get_mut(&id).unwrap_or_else(|| panic!("segment {id} is not registered"))
    }

    pub fn file(&self, id: u32) -> Option<Rc<F>> {
        self.map.get(&id).and_then(|s| s.file.clone())
    }

    pub fn iter(&self) -> impl Iterator<Item = (u32, &SegmentInfo<F>)> {
        self.map.iter().map(|(id, s)| (*id, s))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn add_live(&mut self, id: u32, bytes: u64) {
        self.get_mut(id).live_bytes += bytes;
    }

    /// A tombstone with `lsn` was appended to segment `id` (see [`SegmentInfo::tombstone_lsn_max`]).
    pub fn note_tombstone(&mut self, id: u32, lsn: u64) {
        let s = self.get_mut(id);
        s.tombstone_lsn_max = s.tombstone_lsn_max.max(lsn);
    }

    pub fn sub_live(&mut self, id: u32, bytes: u64) {
        self.get_mut(id).take_live(id, bytes);
    }

    /// A record a later write replaced or deleted: its bytes are no longer live, and it is marked
    /// dead for compaction. The bit itself is set by the next call (see the module docs); this
    /// one asks for its line and sets the previous record's.
    pub fn record_died(&mut self, id: u32, offset: u64, bytes: u64) {
        let s = self.get_mut(id);
        s.take_live(id, bytes);
        s.dead.prefetch(offset);
        if let Some((id, offset)) = self.dead_pending.replace((id, offset)) {
            self.get_mut(id).dead.mark(offset);
        }
    }

    /// Sets the dead bit [`Self::record_died`] left pending, if any.
    fn set_pending_dead_bit(&mut self) {
        if let Some((id, offset)) = self.dead_pending.take() {
            self.get_mut(id).dead.mark(offset);
        }
    }

    /// Batch prefetch (`batch_prefetch.rs`): asks for the line of the dead bit a write that
    /// replaces the record at `offset` of segment `id` will set.
    pub fn prefetch_dead_bit(&self, id: u32, offset: u64) {
        if let Some(s) = self.map.get(&id) {
            s.dead.prefetch(offset);
        }
    }

    /// Whether the record at `offset` of segment `id` is known to be dead (see [`DeadRecords`]).
    pub fn is_dead(&self, id: u32, offset: u64) -> bool {
        let pending = self.dead_pending.is_some_and(|(pending_id, pending_offset)| {
            pending_id == id && DeadRecords::unit(pending_offset) == DeadRecords::unit(offset)
        });
        pending || self.map.get(&id).is_some_and(|s| s.dead.contains(offset))
    }

    /// Heap bytes of every segment's dead-record map.
    pub fn dead_map_bytes(&self) -> usize {
        self.map.values().map(|s| s.dead.heap_bytes()).sum()
    }

    /// Sealed, not yet retired segments whose garbage ratio reaches `threshold`, most garbage
    /// first.
    pub fn compaction_victims(&self, threshold: f64) -> Vec<u32> {
        let mut v: Vec<(u32, f64)> = self
            .map
            .iter()
            .filter(|(_, s)| s.sealed && !s.retired)
            .map(|(id, s)| (*id, s.garbage_ratio()))
            .filter(|(_, ratio)| *ratio >= threshold)
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        v.into_iter().map(|(id, _)| id).collect()
    }

    /// The victims of a background pass (the maintenance task), chosen to bound space rather
    /// than to clean every segment over the threshold: none while the garbage share of the
    /// store's record bytes (every segment not yet retired, the active one included) is under
    /// `threshold`; else sealed segments over `threshold`, most garbage first, until removing
    /// their garbage would bring the store under it. Waiting for the store, not each segment,
    /// to reach the threshold lets the oldest segments age: under 40 s of a uniform overwrite
    /// load at 0.5, compaction moved 0.2 live bytes per byte of garbage reclaimed instead of up
    /// to 1 (docs/BENCHMARKS.md, twentieth session), for the same bound: disk within
    /// live / (1 - threshold) plus the active segment.
    ///
    /// Nor while the store's garbage is under `garbage_min_bytes` (the maintenance task passes
    /// [`COMPACTION_GARBAGE_MIN_SEGMENTS`] segments): a store whose live data is small beside a
    /// segment is over any threshold as soon as a segment is sealed.
    ///
    /// [`COMPACTION_GARBAGE_MIN_SEGMENTS`]: crate::constants::COMPACTION_GARBAGE_MIN_SEGMENTS
    pub fn space_victims(&self, threshold: f64, garbage_min_bytes: u64) -> Vec<u32> {
        let segments = self.map.values().filter(|s| !s.retired);
        let (mut used, mut garbage) =
            segments.fold((0, 0), |(u, g), s| (u + s.record_bytes(), g + s.garbage_bytes()));
        let mut victims = Vec::new();
        for id in self.compaction_victims(threshold) {
            if used == 0
                || (garbage as f64) < threshold * used as f64
                || garbage < garbage_min_bytes
            {
                break;
            }
            let g = self.map[&id].garbage_bytes();
            garbage -= g;
            used -= g;
            victims.push(id);
        }
        victims
    }

    /// Bytes of every segment file (header blocks included).
    pub fn disk_bytes(&self) -> u64 {
        self.map.values().map(|s| s.end).sum()
    }

    pub fn live_bytes(&self) -> u64 {
        self.map.values().map(|s| s.live_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_recycled_smallest_first() {
        let mut t: SegmentTable<()> = SegmentTable::default();
        for id in 1..=3 {
            t.insert(id, SegmentInfo::new(None, SEGMENT_HEADER_BYTES, false));
        }
        t.remove(2);
        assert_eq!(t.free_id(), Some(2));
    }

    #[test]
    fn dead_records_are_marked_one_bit_each() {
        let mut t: SegmentTable<()> = SegmentTable::default();
        let mut s = SegmentInfo::new(None, SEGMENT_HEADER_BYTES + 4096, true);
        s.live_bytes = 4096;
        t.insert(1, s);
        // Two records at the smallest distance two records can have (a header's length).
        let (a, b) = (SEGMENT_HEADER_BYTES, SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES as u64);
        assert!(!t.is_dead(1, a) && !t.is_dead(1, b));
        t.record_died(1, b, 64);
        assert!(t.is_dead(1, b) && !t.is_dead(1, a), "only the record that died is marked");
        assert_eq!(t.get(1).map(|s| s.live_bytes), Some(4096 - 64));
        assert!(!t.is_dead(2, b), "an unknown segment has no dead records");
        // A reused id starts clean.
        t.remove(1);
        t.insert(1, SegmentInfo::new(None, SEGMENT_HEADER_BYTES, false));
        assert!(!t.is_dead(1, b));
        assert!(t.dead_map_bytes() == 0);
    }

    /// The bit `record_died` leaves pending is set by the next call, counts as set before that,
    /// and is set in its own segment's map before a segment is removed, never in the map of a
    /// segment that reuses the id.
    #[test]
    fn a_pending_dead_bit_lands_in_its_own_segment() {
        let mut t: SegmentTable<()> = SegmentTable::default();
        for id in [1, 2] {
            let mut s = SegmentInfo::new(None, SEGMENT_HEADER_BYTES + 4096, true);
            s.live_bytes = 4096;
            t.insert(id, s);
        }
        let (a, b) = (SEGMENT_HEADER_BYTES, SEGMENT_HEADER_BYTES + RECORD_HEADER_BYTES as u64);
        t.record_died(1, a, 64);
        assert_eq!(t.get(1).map(|s| s.dead.heap_bytes()), Some(0), "the bit is still pending");
        assert!(t.is_dead(1, a) && !t.is_dead(1, b) && !t.is_dead(2, a));
        t.record_died(2, b, 64);
        assert!(t.get(1).is_some_and(|s| s.dead.contains(a)), "set by the next death");
        assert!(t.is_dead(2, b) && !t.is_dead(2, a));
        // Removing segment 2 sets its pending bit first; the id's next segment starts clean.
        t.remove(2);
        t.insert(2, SegmentInfo::new(None, SEGMENT_HEADER_BYTES + 4096, true));
        assert!(!t.is_dead(2, b), "a reused id starts clean");
        assert!(t.is_dead(1, a));
        assert_eq!(t.get(2).map(|s| s.dead.heap_bytes()), Some(0));
    }

    #[test]
    fn victims_are_sealed_segments_over_the_threshold_most_garbage_first() {
        let t = table(&[(1, 900, true), (2, 100, true), (3, 0, false)]);
        assert_eq!(t.compaction_victims(0.05), vec![2, 1]);
        assert_eq!(t.compaction_victims(0.3), vec![2]);
        assert!(t.compaction_victims(0.95).is_empty());
    }

    /// A table of segments of 1,000 record bytes each: (id, live bytes, sealed).
    fn table(segments: &[(u32, u64, bool)]) -> SegmentTable<()> {
        let mut t: SegmentTable<()> = SegmentTable::default();
        for &(id, live, sealed) in segments {
            let mut s = SegmentInfo::new(None, SEGMENT_HEADER_BYTES + 1000, sealed);
            s.live_bytes = live;
            t.insert(id, s);
        }
        t
    }

    #[test]
    fn background_victims_wait_for_the_store_to_reach_the_threshold() {
        // Segment 2 is 0.6 garbage, but the store is 0.6 / 4 = 0.15 garbage: nothing yet,
        // where every segment over the threshold would be a victim of an explicit compaction.
        let t = table(&[(1, 1000, true), (2, 400, true), (3, 1000, true), (4, 1000, false)]);
        assert_eq!(t.compaction_victims(0.5), vec![2]);
        assert!(t.space_victims(0.5, 0).is_empty());
        // Store garbage (900 + 700 + 200 + 0) / 4000 = 0.45: still under.
        let t = table(&[(1, 100, true), (2, 300, true), (3, 800, true), (4, 1000, false)]);
        assert!(t.space_victims(0.5, 0).is_empty());
        assert_eq!(
            t.space_victims(0.45, 0),
            vec![1],
            "0.45 reached; without 1's garbage, 900 / 3,100"
        );
    }

    #[test]
    fn background_victims_go_most_garbage_first_until_the_store_is_under_the_threshold() {
        // Store garbage (950 + 800 + 600 + 100 + 0) / 5000 = 0.49.
        let t = table(&[
            (1, 400, true),
            (2, 50, true),
            (3, 200, true),
            (4, 900, true),
            (5, 1000, false),
        ]);
        // Taking 2 (0.95 garbage) leaves 1,500 / 4,050 = 0.37: under 0.4, one victim.
        assert_eq!(t.space_victims(0.4, 0), vec![2]);
        // At 0.3, 0.37 is not under: 3 (0.8) too, leaving 700 / 3,250 = 0.215.
        assert_eq!(t.space_victims(0.3, 0), vec![2, 3]);
        // At 0.2, 1 (0.6) too, leaving 100 / 2,650; segment 4 (0.1 garbage) is under the
        // threshold and never a victim.
        assert_eq!(t.space_victims(0.2, 0), vec![2, 3, 1]);
        assert!(t.space_victims(0.5, 0).is_empty());
        // Retired segments do not count: the next checkpoint deletes them.
        let mut t = table(&[(1, 0, true), (2, 900, true), (3, 1000, false)]);
        assert_eq!(t.space_victims(0.1, 0), vec![1], "1,100 / 3,000 counting segment 1");
        t.map.get_mut(&1).expect("segment 1").retired = true;
        assert!(t.space_victims(0.1, 0).is_empty(), "100 / 2,000 without it");
    }

    #[test]
    fn background_victims_wait_for_the_minimum_garbage() {
        // A store of little live data: the sealed segment 1 is 0.8 garbage, the store
        // (800 + 0) / 2000 = 0.4, over 0.3, but its 800 garbage bytes are under a minimum of 1,500.
        let t = table(&[(1, 200, true), (2, 1000, false)]);
        assert_eq!(t.space_victims(0.3, 0), vec![1]);
        assert!(t.space_victims(0.3, 1500).is_empty());
        // Once 2 is sealed and mostly garbage too (800 + 700 = 1,500), the older one goes first,
        // and one is enough: 700 left is under the minimum.
        let t = table(&[(1, 200, true), (2, 300, true), (3, 1000, false)]);
        assert_eq!(t.space_victims(0.3, 1500), vec![1]);
    }
}
