//! Ordered iteration over both parts of the index, merging them on the fly.
//!
//! A key is never in both parts, so the merge needs no tie rule. The iterator holds only indices
//! into the parts, computed up front from the bounds, so it borrows the index but not the bound
//! keys. The delta is singly linked; walking it backwards looks up each predecessor, which costs
//! one skiplist search per step but no memory.

use std::ops::Bound;

use super::skiplist::{SkipList, HEAD, NIL};
use super::sorted_run::SortedRun;
use super::IndexEntry;

pub(super) struct Range<'a> {
    run: &'a SortedRun,
    delta: &'a SkipList,
    /// Static slots still to visit: `lo..hi`.
    lo: usize,
    hi: usize,
    /// Next delta node to visit, and the node (or `NIL`/`HEAD`) where the walk stops.
    d_next: u32,
    d_stop: u32,
    reverse: bool,
}

impl<'a> Range<'a> {
    pub(super) fn new(
        run: &'a SortedRun,
        delta: &'a SkipList,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> Range<'a> {
        let mut range = Range { run, delta, lo: 0, hi: 0, d_next: NIL, d_stop: NIL, reverse };
        if bounds_are_empty(start, end) {
            return range;
        }
        range.lo = static_start(run, start);
        range.hi = static_end(run, end).max(range.lo);
        // The last delta node below the range and the last node inside it.
        let below = delta_below(delta, start);
        let last = delta_last(delta, end);
        (range.d_next, range.d_stop) =
            if reverse { (last, below) } else { (delta.next(below, 0), delta.next(last, 0)) };
        range
    }

    fn skip_dead(&mut self) {
        while self.lo < self.hi && self.run.is_dead(self.static_cursor()) {
            self.step_static();
        }
        while self.d_next != self.d_stop && self.delta.is_dead(self.d_next) {
            self.step_delta();
        }
    }

    fn static_cursor(&self) -> usize {
        if self.reverse {
            self.hi - 1
        } else {
            self.lo
        }
    }

    fn step_static(&mut self) {
        if self.reverse {
            self.hi -= 1;
        } else {
            self.lo += 1;
        }
    }

    fn step_delta(&mut self) {
        self.d_next = if self.reverse {
            self.delta.predecessor(self.d_next)
        } else {
            self.delta.next(self.d_next, 0)
        };
    }

    /// Whether the next item comes from the static run, or `None` when both parts are done.
    fn next_is_static(&self) -> Option<bool> {
        let run: &'a SortedRun = self.run;
        let delta: &'a SkipList = self.delta;
        let s = (self.lo < self.hi).then(|| run.key(self.static_cursor()));
        let d = (self.d_next != self.d_stop).then(|| delta.key(self.d_next));
        match (s, d) {
            (None, None) => None,
            (Some(_), None) => Some(true),
            (None, Some(_)) => Some(false),
            (Some(s), Some(d)) => Some((s < d) != self.reverse),
        }
    }
}

impl<'a> Iterator for Range<'a> {
    type Item = (&'a [u8], IndexEntry);

    fn next(&mut self) -> Option<Self::Item> {
        self.skip_dead();
        let run: &'a SortedRun = self.run;
        let delta: &'a SkipList = self.delta;
        if self.next_is_static()? {
            let i = self.static_cursor();
            self.step_static();
            Some((run.key(i), run.entry(i)))
        } else {
            let node = self.d_next;
            self.step_delta();
            Some((delta.key(node), delta.entry(node)))
        }
    }
}

/// True if no key can satisfy both bounds. `BTreeMap::range` panics here; the index returns
/// nothing instead, because bounds come from clients.
fn bounds_are_empty(start: Bound<&[u8]>, end: Bound<&[u8]>) -> bool {
    match (start, end) {
        (Bound::Included(s), Bound::Included(e)) => s > e,
        (Bound::Included(s) | Bound::Excluded(s), Bound::Included(e) | Bound::Excluded(e)) => {
            s >= e
        }
        _ => false,
    }
}

fn static_start(run: &SortedRun, start: Bound<&[u8]>) -> usize {
    match start {
        Bound::Included(s) => run.partition(s, false),
        Bound::Excluded(s) => run.partition(s, true),
        Bound::Unbounded => 0,
    }
}

fn static_end(run: &SortedRun, end: Bound<&[u8]>) -> usize {
    match end {
        Bound::Included(e) => run.partition(e, true),
        Bound::Excluded(e) => run.partition(e, false),
        Bound::Unbounded => run.len(),
    }
}

/// The last delta node that is below the start bound, or `HEAD`.
fn delta_below(delta: &SkipList, start: Bound<&[u8]>) -> u32 {
    match start {
        Bound::Included(s) => delta.last_before(|k| k < s),
        Bound::Excluded(s) => delta.last_before(|k| k <= s),
        Bound::Unbounded => HEAD,
    }
}

/// The last delta node that satisfies the end bound, or `HEAD`.
fn delta_last(delta: &SkipList, end: Bound<&[u8]>) -> u32 {
    match end {
        Bound::Included(e) => delta.last_before(|k| k <= e),
        Bound::Excluded(e) => delta.last_before(|k| k < e),
        Bound::Unbounded => delta.last_before(|_| true),
    }
}
