//! Range tombstones: one log record that deletes every key of a byte range written before it.
//!
//! A range delete (the table layer's multiDelete, DROP TABLE) appends one record of kind
//! [`RecordKind::RangeDelete`] whose key is the range's first key and whose value is the key
//! after its last (empty: no end; docs/FORMAT.md, "Range tombstones"), and removes every index
//! entry of the range, in one synchronous step: a reader sees every row of the range or none, and
//! after a crash recovery finds the one record or not. However many keys the range holds, the log
//! gets one record and the step holds at most [`RANGE_DELETE_CHUNK_KEYS`] copied keys at a time.
//!
//! Recovery replays a range tombstone at LSN L by removing each index entry of the range that
//! replay has not seen written at an LSN above L (entries from the checkpoint are all older), and
//! remembers the range in a [`Coverage`], so a put or delete of the range with an LSN below L met
//! later in the scan (segments are read in id order, not LSN order) is skipped. Compaction keeps
//! a range tombstone exactly as long as a point tombstone: while the checkpoint does not cover
//! its LSN (`compaction.rs`).

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::constants::{KEY_BYTES_MAX, RANGE_DELETE_CHUNK_KEYS};
use crate::disk::Disk;
use crate::index::{Index, IndexEntry};
use crate::record::{self, RecordKind, RecordMeta};
use crate::state::State;
use crate::{Error, Result};

/// A range as a range tombstone stores it: `start` (inclusive, never empty) up to `end`
/// (exclusive; None: every key from `start` on).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredRange {
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
}

impl StoredRange {
    /// The stored form of `start..end`; None when no key can lie in it. An excluded start or
    /// an included end becomes the key right after it (the key with one zero byte appended); a
    /// start past [`KEY_BYTES_MAX`] that way is refused, as is an end past it by more than that
    /// one byte (the record's value holds the end).
    pub fn new(start: Bound<&[u8]>, end: Bound<&[u8]>) -> Result<Option<StoredRange>> {
        let start = match start {
            Bound::Unbounded => vec![0],
            Bound::Included([]) => vec![0],
            Bound::Included(s) => s.to_vec(),
            Bound::Excluded(s) => successor(s),
        };
        if start.len() > KEY_BYTES_MAX {
            return Err(Error::KeyTooLarge { len: start.len(), max: KEY_BYTES_MAX });
        }
        let end = match end {
            Bound::Unbounded => None,
            Bound::Excluded(e) => Some(e.to_vec()),
            Bound::Included(e) => Some(successor(e)),
        };
        if let Some(e) = end.as_ref().filter(|e| e.len() > KEY_BYTES_MAX + 1) {
            return Err(Error::KeyTooLarge { len: e.len(), max: KEY_BYTES_MAX + 1 });
        }
        let empty = end.as_ref().is_some_and(|e| *e <= start);
        Ok((!empty).then_some(StoredRange { start, end }))
    }

    /// The range a range tombstone's key and value name.
    pub fn from_record(key: &[u8], value: &[u8]) -> StoredRange {
        let end = (!value.is_empty()).then(|| value.to_vec());
        StoredRange { start: key.to_vec(), end }
    }

    /// The record's key and value.
    pub fn record_parts(&self) -> (&[u8], &[u8]) {
        (&self.start, self.end.as_deref().unwrap_or_default())
    }

    pub fn end_bound(&self) -> Bound<&[u8]> {
        self.end.as_deref().map_or(Bound::Unbounded, Bound::Excluded)
    }

    #[cfg(test)]
    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_deref().is_none_or(|e| key < e)
    }
}

/// The first key after `key` in byte order.
fn successor(key: &[u8]) -> Vec<u8> {
    let mut next = Vec::with_capacity(key.len() + 1);
    next.extend_from_slice(key);
    next.push(0);
    next
}

/// Removes from `index` every entry of `range` that `keep` does not keep, calling `removed` for
/// each, in ascending key order. The index cannot be changed while it is iterated, so the keys
/// are collected [`RANGE_DELETE_CHUNK_KEYS`] at a time; the whole removal is still one
/// synchronous step.
pub(crate) fn remove_covered(
    index: &mut Index,
    range: &StoredRange,
    mut keep: impl FnMut(&[u8]) -> bool,
    mut removed: impl FnMut(&[u8], IndexEntry),
) {
    let mut from: Bound<Vec<u8>> = Bound::Included(range.start.clone());
    let mut chunk: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut next = None;
        for (seen, (key, _)) in index.range(bound_ref(&from), range.end_bound(), false).enumerate()
        {
            if seen == RANGE_DELETE_CHUNK_KEYS {
                next = Some(Bound::Included(key.to_vec()));
                break;
            }
            if !keep(key) {
                chunk.push(key.to_vec());
            }
        }
        for key in chunk.drain(..) {
            let entry = index.remove(&key).expect("a key the range just listed is in the index");
            removed(&key, entry);
        }
        match next {
            Some(n) => from = n,
            None => return,
        }
    }
}

fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k),
        Bound::Excluded(k) => Bound::Excluded(k),
        Bound::Unbounded => Bound::Unbounded,
    }
}

impl<D: Disk> State<D> {
    /// Appends a range tombstone for `range` and removes the range's keys from the index and
    /// the cache, in one synchronous step. Returns the keys deleted that had not expired by
    /// `now` and the record's append sequence number. The record is written even when the
    /// range holds no key, as a point delete writes its tombstone for an absent key: waiting
    /// for it makes every earlier write durable too, so an acknowledged durable range delete
    /// leaves the range empty after a crash even if an earlier unsynced delete emptied it.
    pub fn append_range_delete(
        &mut self,
        range: &StoredRange,
        version: u64,
        now: u64,
    ) -> Result<(usize, u64)> {
        let (key, value) = range.record_parts();
        let len = record::padded_len(key.len(), value.len());
        let r = self.reserve(len)?;
        let meta = RecordMeta {
            kind: RecordKind::RangeDelete,
            lsn: self.next_lsn,
            version,
            expiry_ms: 0,
            segment_id: r.segment,
            flags: 0,
            batch_remaining: 0,
        };
        self.next_lsn += 1;
        let (_, seq) = self.append_record(&meta, key, value);
        self.note_appended(len);
        let mut deleted = 0;
        let (cache, segments) = (&mut self.cache, &mut self.segments);
        remove_covered(
            &mut self.index,
            range,
            |_| false,
            |key, entry| {
                cache.remove(key);
                let loc = entry.location();
                segments.record_died(loc.segment(), loc.offset(), loc.len());
                deleted += usize::from(!entry.is_expired(now));
            },
        );
        Ok((deleted, seq))
    }
}

/// The range tombstones replay has met, as disjoint key intervals each with the newest LSN that
/// deleted it: the question "did a range tombstone newer than LSN l delete this key?" costs one
/// ordered-map search however many tombstones were met. Each tombstone adds at most two
/// intervals.
#[derive(Debug, Default)]
pub(crate) struct Coverage {
    /// Interval start -> (end, exclusive, None: no end; LSN).
    intervals: BTreeMap<Vec<u8>, (Option<Vec<u8>>, u64)>,
}

/// An interval's end in key order: a key, or past every key.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Edge {
    Key(Vec<u8>),
    Infinite,
}

impl Edge {
    fn of(end: &Option<Vec<u8>>) -> Edge {
        end.clone().map_or(Edge::Infinite, Edge::Key)
    }
}

impl Coverage {
    /// The newest LSN of a range tombstone met so far whose range holds `key`.
    pub fn newest(&self, key: &[u8]) -> Option<u64> {
        let (_, (end, lsn)) = self
            .intervals
            .range::<[u8], _>((Bound::Unbounded, Bound::Included(key)))
            .next_back()?;
        end.as_deref().is_none_or(|e| key < e).then_some(*lsn)
    }

    /// Notes a range tombstone of `range` at `lsn`.
    pub fn insert(&mut self, range: &StoredRange, lsn: u64) {
        let (start, end) = (range.start.clone(), Edge::of(&range.end));
        // The intervals that meet the new one: the last starting before it, if it reaches into
        // it, and those starting inside it.
        let mut met: Vec<(Vec<u8>, Edge, u64)> = Vec::new();
        let before = (Bound::Unbounded, Bound::Excluded(start.as_slice()));
        if let Some((s, (e, l))) = self.intervals.range::<[u8], _>(before).next_back() {
            if Edge::of(e) > Edge::Key(start.clone()) {
                met.push((s.clone(), Edge::of(e), *l));
            }
        }
        let inside = self
            .intervals
            .range::<[u8], _>((Bound::Included(start.as_slice()), Bound::Unbounded))
            .take_while(|(s, _)| Edge::Key(s.to_vec()) < end)
            .map(|(s, (e, l))| (s.clone(), Edge::of(e), *l));
        met.extend(inside);
        for (s, _, _) in &met {
            self.intervals.remove(s);
        }
        // Cut the union at every edge; each piece takes the newest LSN covering it. The met
        // intervals are disjoint and sorted, so at most one of them covers a piece.
        let mut edges: Vec<Edge> = vec![Edge::Key(start.clone()), end.clone()];
        for (s, e, _) in &met {
            edges.push(Edge::Key(s.clone()));
            edges.push(e.clone());
        }
        edges.sort();
        edges.dedup();
        for pair in edges.windows(2) {
            let (Edge::Key(a), b) = (&pair[0], &pair[1]) else { break };
            let piece_start = Edge::Key(a.clone());
            let new = (Edge::Key(start.clone()) <= piece_start && *b <= end).then_some(lsn);
            let old = met
                .iter()
                .find(|(s, e, _)| Edge::Key(s.clone()) <= piece_start && b <= e)
                .map(|(_, _, l)| *l);
            if let Some(l) = new.max(old) {
                let piece_end = match b {
                    Edge::Key(k) => Some(k.clone()),
                    Edge::Infinite => None,
                };
                self.intervals.insert(a.clone(), (piece_end, l));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(start: &[u8], end: Option<&[u8]>) -> StoredRange {
        StoredRange { start: start.to_vec(), end: end.map(<[u8]>::to_vec) }
    }

    #[test]
    fn bounds_become_a_start_and_an_exclusive_end() {
        let r = StoredRange::new(Bound::Excluded(b"a"), Bound::Included(b"c")).unwrap();
        assert_eq!(r, Some(range(b"a\0", Some(b"c\0"))));
        let r = StoredRange::new(Bound::Unbounded, Bound::Unbounded).unwrap().unwrap();
        assert_eq!(r.record_parts(), (&[0u8][..], &[][..]));
        assert_eq!(StoredRange::from_record(&[0], &[]), r);
        assert!(r.contains(&[0]) && r.contains(b"zzz"));
        assert_eq!(StoredRange::new(Bound::Included(b"b"), Bound::Excluded(b"b")).unwrap(), None);
        let long = vec![7u8; KEY_BYTES_MAX];
        let e = StoredRange::new(Bound::Excluded(&long), Bound::Unbounded).unwrap_err();
        assert!(e.to_string().contains(&KEY_BYTES_MAX.to_string()), "{e}");
    }

    /// The coverage answers as a plain list of every tombstone would, for overlapping,
    /// nested, adjacent and unbounded ranges inserted in any LSN order.
    #[test]
    fn coverage_matches_a_list_of_every_tombstone() {
        let keys: Vec<Vec<u8>> = (0u8..40).map(|i| vec![b'a' + i / 4, i % 4]).collect();
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        for _ in 0..200 {
            let mut coverage = Coverage::default();
            let mut list: Vec<(StoredRange, u64)> = Vec::new();
            for lsn in 0..8 {
                let a = &keys[next(40) as usize];
                let b = &keys[next(40) as usize];
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                let end = (next(5) != 0).then_some(hi.as_slice());
                let r = StoredRange::new(
                    Bound::Included(lo),
                    end.map_or(Bound::Unbounded, Bound::Excluded),
                );
                let Some(r) = r.unwrap() else { continue };
                let lsn = lsn * 7 % 8 + 1;
                coverage.insert(&r, lsn);
                list.push((r, lsn));
                for key in &keys {
                    let want = list.iter().filter(|(r, _)| r.contains(key)).map(|(_, l)| *l).max();
                    assert_eq!(coverage.newest(key), want, "key {key:?} after {list:?}");
                }
            }
        }
    }

    #[test]
    fn remove_covered_walks_more_than_one_chunk_and_keeps_what_it_is_told() {
        let mut index = Index::new();
        let n = RANGE_DELETE_CHUNK_KEYS * 2 + 17;
        let loc = crate::index::Location::new(1, 4096, 64);
        for i in 0..n {
            let key = format!("k{i:06}");
            index.upsert(key.as_bytes(), IndexEntry::new(loc, 1, 0)).unwrap();
        }
        index.upsert(b"l", IndexEntry::new(loc, 1, 0)).unwrap();
        let r = StoredRange::new(Bound::Included(b"k"), Bound::Excluded(b"l")).unwrap().unwrap();
        let mut removed = 0;
        remove_covered(&mut index, &r, |k| k.ends_with(b"7"), |_, _| removed += 1);
        let kept = (0..n).filter(|i| i % 10 == 7).count();
        assert_eq!(removed, n - kept);
        assert_eq!(index.len(), kept + 1);
        assert!(index.get(b"k000007").is_some() && index.get(b"k000008").is_none());
    }
}
