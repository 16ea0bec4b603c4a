//! A walk over the whole index that finds the live entries pointing into one segment, a bounded
//! number of slots per step: compaction reads only those records of a victim instead of the whole
//! segment (`compaction.rs`, "Reading only the live records").
//!
//! The walk reads the entries in place, not in key order: the static run's slots, then the delta's
//! nodes in the order they were created. Between two merges neither moves (overwrites, deletes
//! and revivals change entries in place; a new key appends a delta node), so a walk resumed after
//! a step sees every slot exactly once while the run's generation is the one it started in. A
//! merge renumbers everything: the walk then reports [`WalkStep::Invalidated`] and the caller
//! falls back to reading the segment whole.
//!
//! Entries that point into a sealed segment only ever leave it (a write re-points its key to the
//! log head; compaction, the one writer of old locations, runs one segment at a time), so an
//! entry written during the walk never needs to be found, and one found may be stale by the time
//! it is used: the caller checks every location against the index again before it changes it.

use super::entry::is_dead;
use super::{Index, Location};

/// A walk in progress; see the module docs.
#[derive(Debug)]
pub struct SegmentWalk {
    segment: u32,
    generation: u32,
    /// The next position: static slots first, then delta nodes after `run.len()`.
    next: usize,
    found: Vec<Location>,
}

/// What one [`Index::walk_segment_step`] left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalkStep {
    /// More slots to walk.
    More,
    /// Every slot walked; [`SegmentWalk::into_locations`] has what was found.
    Done,
    /// The index merged since the walk started: what was found may be incomplete.
    Invalidated,
}

impl SegmentWalk {
    /// The live locations found in the segment, in the order found.
    pub fn into_locations(self) -> Vec<Location> {
        self.found
    }
}

impl Index {
    /// Slots a whole walk visits: live and dead, static and delta.
    pub fn walk_slots(&self) -> usize {
        self.run.len() + self.delta.node_count()
    }

    /// Starts a walk for the live entries in `segment`.
    pub fn walk_segment(&self, segment: u32) -> SegmentWalk {
        SegmentWalk { segment, generation: self.generation, next: 0, found: Vec::new() }
    }

    /// Walks up to `slots` more slots (static and delta, dead ones included) of `walk`.
    pub fn walk_segment_step(&self, walk: &mut SegmentWalk, slots: usize) -> WalkStep {
        if walk.generation != self.generation {
            return WalkStep::Invalidated;
        }
        let run_len = self.run.len();
        let total = run_len + self.delta.node_count();
        let end = walk.next.saturating_add(slots).min(total);
        let mut keep = |entry| {
            if !is_dead(&entry) && entry.location().segment() == walk.segment {
                walk.found.push(entry.location());
            }
        };
        for i in walk.next.min(run_len)..end.min(run_len) {
            keep(self.run.entry(i));
        }
        for n in walk.next.max(run_len)..end.max(run_len) {
            keep(self.delta.entry((n - run_len) as u32));
        }
        walk.next = end;
        if end < total {
            WalkStep::More
        } else {
            WalkStep::Done
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::IndexEntry;

    fn loc(segment: u32, n: u64) -> Location {
        Location::new(segment, 4096 + n * 64, 64)
    }

    fn walk_all(index: &Index, segment: u32, step: usize) -> Vec<Location> {
        let mut walk = index.walk_segment(segment);
        while index.walk_segment_step(&mut walk, step) == WalkStep::More {}
        let mut found = walk.into_locations();
        found.sort_by_key(|l| l.offset());
        found
    }

    #[test]
    fn finds_every_live_entry_of_the_segment_in_the_run_and_the_delta() {
        // A small delta threshold: the first keys are merged into the run, later ones stay in
        // the delta, so both parts are walked.
        let mut index = Index::with_limits(8, crate::constants::INDEX_KEY_ARENA_BYTES_MAX);
        let mut want = Vec::new();
        for n in 0..100u64 {
            let segment = if n % 3 == 0 { 7 } else { 8 };
            let key = format!("key-{n:04}");
            index.upsert(key.as_bytes(), IndexEntry::new(loc(segment, n), 1, 0)).unwrap();
        }
        assert!(index.delta.node_count() > 0 && index.run.len() > 0, "{index:?}");
        // Deleted and re-pointed keys are not found in 7.
        for n in (0..100u64).step_by(3) {
            let key = format!("key-{n:04}");
            match n % 9 {
                0 => drop(index.remove(key.as_bytes())),
                3 => assert!(index.relocate(key.as_bytes(), loc(7, n), loc(9, n))),
                _ => want.push(loc(7, n)),
            }
        }
        for step in [1, 5, 1000] {
            assert_eq!(walk_all(&index, 7, step), want, "step {step}");
        }
        assert!(walk_all(&index, 10, 3).is_empty());
    }

    #[test]
    fn a_merge_between_steps_invalidates_the_walk() {
        let mut index = Index::with_limits(8, crate::constants::INDEX_KEY_ARENA_BYTES_MAX);
        for n in 0..20u64 {
            index.upsert(format!("a{n:03}").as_bytes(), IndexEntry::new(loc(7, n), 1, 0)).unwrap();
        }
        let mut walk = index.walk_segment(7);
        assert_eq!(index.walk_segment_step(&mut walk, 4), WalkStep::More);
        // New keys outgrow the delta: the index merges.
        let generation = index.generation;
        for n in 0..20u64 {
            index.upsert(format!("b{n:03}").as_bytes(), IndexEntry::new(loc(8, n), 1, 0)).unwrap();
        }
        assert_ne!(index.generation, generation, "the inserts merged");
        assert_eq!(index.walk_segment_step(&mut walk, 4), WalkStep::Invalidated);
    }
}
