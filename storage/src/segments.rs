//! The table of a shard's segments: open files, live-byte accounting and id allocation.
//!
//! Live bytes are the padded lengths of the records the index points at. Everything else in a
//! segment (overwritten and deleted records, tombstones, flush padding) is garbage, and the
//! garbage ratio of a sealed segment decides when compaction rewrites it.

use std::collections::BTreeMap;
use std::rc::Rc;

use crate::constants::{SEGMENT_HEADER_BYTES, SEGMENT_ID_MAX};

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
}

impl<F> SegmentInfo<F> {
    pub fn new(file: Option<Rc<F>>, end: u64, sealed: bool) -> Self {
        SegmentInfo { file, end, live_bytes: 0, sealed, retired: false }
    }

    /// Share of the record area that is not live (0.0 for an empty segment).
    pub fn garbage_ratio(&self) -> f64 {
        let used = self.end.saturating_sub(SEGMENT_HEADER_BYTES);
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
}

impl<F> Default for SegmentTable<F> {
    fn default() -> Self {
        SegmentTable { map: BTreeMap::new() }
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
        let old = self.map.insert(id, info);
        assert!(old.is_none(), "segment id {id} registered twice");
    }

    pub fn remove(&mut self, id: u32) -> Option<SegmentInfo<F>> {
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

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    pub fn add_live(&mut self, id: u32, bytes: u64) {
        self.get_mut(id).live_bytes += bytes;
    }

    pub fn sub_live(&mut self, id: u32, bytes: u64) {
        let s = self.get_mut(id);
        s.live_bytes = s.live_bytes.checked_sub(bytes).unwrap_or_else(|| {
            panic!("segment {id}: live bytes {} would go below zero by {bytes}", s.live_bytes)
        });
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
    fn victims_are_sealed_segments_over_the_threshold_most_garbage_first() {
        let mut t: SegmentTable<()> = SegmentTable::default();
        for (id, live, sealed) in [(1, 900, true), (2, 100, true), (3, 0, false)] {
            let mut s = SegmentInfo::new(None, SEGMENT_HEADER_BYTES + 1000, sealed);
            s.live_bytes = live;
            t.insert(id, s);
        }
        assert_eq!(t.compaction_victims(0.05), vec![2, 1]);
        assert_eq!(t.compaction_victims(0.3), vec![2]);
        assert!(t.compaction_victims(0.95).is_empty());
    }
}
