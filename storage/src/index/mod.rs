//! The shard's in-memory ordered index: key to [`IndexEntry`], in byte-wise key order.
//!
//! The index must cost at most 32 bytes per key beyond the key bytes, and report its memory
//! exactly, because the shard sizes itself by it. Pointer-based maps (std `BTreeMap`, one box per
//! node) cost more than that and hide their allocations, so the index is two flat structures:
//!
//! - a static [`sorted_run`]: all keys of the last merge in one arena, a `u32` end offset and a
//!   24-byte entry per key (about 29 B/key with the sample levels), searched through sample
//!   levels that narrow every lookup to one block of 16 keys;
//! - a small [`skiplist`] delta for keys inserted since, stored in `Vec`s with `u32` links.
//!
//! A key is in exactly one part. Deleting or overwriting a key changes its entry in place (a dead
//! sentinel location marks deleted keys, and re-inserting revives them), so only new keys reach
//! the delta. When the delta outgrows `max(4096, static_len / 16)` keys, or dead static slots
//! exceed `static_len / 16`, both parts are merged into a new static run in one linear pass. Every
//! buffer's memory is its capacity times its element size, which is what
//! [`Index::memory_bytes`] adds up.

pub mod entry;
pub use entry::{IndexEntry, Location};

mod checkpoint;
mod range;
mod segment_walk;
mod skiplist;
mod sorted_run;

pub use checkpoint::IndexSnapshot;
pub use segment_walk::{SegmentWalk, WalkStep};

use std::ops::Bound;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};

use zerocopy::byteorder::little_endian::U32;

use crate::constants::{DEFERRED_PUTS_MAX, INDEX_KEY_ARENA_BYTES_MAX, KEY_BYTES_MAX};
use entry::{is_dead, DEAD_LOCATION_RAW};
use skiplist::SkipList;
use sorted_run::{Narrowed, SortedRun};

/// The delta is merged once it holds more than `max(DELTA_KEYS_MIN, static_len / DELTA_FRACTION)`
/// keys. 16 copies each key about 16 times on its way to a 1M-key run (32 made merges most of the
/// cost of a random insert) and costs at most about 37 / 16 = 2.3 B/key while the delta fills.
const DELTA_FRACTION: usize = 16;
const DELTA_KEYS_MIN: usize = 4096;

/// Where a key's entry sat in the static run when it was last written, kept by the record cache
/// beside the key's cached copy: a put of that key goes straight to the slot instead of searching
/// for it. A run's slots never move (overwrites, deletes and revivals change entries in place), so
/// a hint is valid exactly while the run it names is the index's run, and every run has its own
/// generation number. 0 is no hint.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct IndexHint(u64);

impl IndexHint {
    pub const NONE: IndexHint = IndexHint(0);

    fn new(generation: u32, slot: usize) -> IndexHint {
        let slot = u32::try_from(slot).expect("a run's slots fit in u32 (its arena does)");
        IndexHint(u64::from(generation) << 32 | u64::from(slot))
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }

    fn slot(self) -> usize {
        self.0 as u32 as usize
    }

    pub fn to_raw(self) -> u64 {
        self.0
    }

    pub fn from_raw(raw: u64) -> IndexHint {
        IndexHint(raw)
    }
}

/// The next run's generation, unique in the process so that no hint outlives its index either
/// (a store reopened in the same process builds a new one). Starts at 1: 0 marks no hint.
static NEXT_GENERATION: AtomicU32 = AtomicU32::new(1);

fn next_generation() -> u32 {
    let g = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    // 2^32 merges would take a shard more than 2^44 inserted keys; never reached, but a reused
    // number could make a stale hint look valid, so it stops rather than wraps.
    assert!(g != u32::MAX, "index run generations exhausted");
    g
}

/// Slots of the run before a merge per entry of its [`Remap`].
const REMAP_BLOCK_SLOTS: usize = 64;

/// Where the slots of the run before the last merge went, 64 at a time, so that a hint into
/// that run (a key cached before the merge and not written since) still finds its slot by a
/// search of the few dozen slots its block became instead of the whole run: without it, every
/// put of such a key paid a full search once after each merge (by estimate 30% of a
/// 1,000,000-key shard's SETs 25 s into issue 16's runs; `SortedRun::partition` fell from 2.2%
/// to 0.2% of the node's CPU, docs/BENCHMARKS.md twentieth session). Every live key
/// of old block `b` (slots `b * 64..(b + 1) * 64`) is at new slots `starts[b]..starts[b + 1]`:
/// the merge records, for each block, how many keys it had written when it took the block's
/// first live key. 4 bytes per 64 keys; one merge back only.
#[derive(Debug)]
struct Remap {
    /// The generation of the run before the merge.
    generation: u32,
    /// Per old block, then the new run's length.
    starts: Vec<u32>,
}

impl Remap {
    /// The new slots that hold old slot `slot`'s key, if it was live.
    fn window(&self, slot: usize) -> Option<(usize, usize)> {
        let b = slot / REMAP_BLOCK_SLOTS;
        Some((*self.starts.get(b)? as usize, *self.starts.get(b + 1)? as usize))
    }
}

/// Where a key lives.
enum Slot {
    Static(usize),
    Delta(u32),
}

pub struct Index {
    run: SortedRun,
    /// The run's generation, named by the [`IndexHint`]s into it.
    generation: u32,
    /// Where the previous run's slots are in this one (None before the first merge).
    remap: Option<Remap>,
    delta: SkipList,
    /// Sum of live key lengths.
    key_bytes: usize,
    /// `DELTA_KEYS_MIN`, lowered by tests to cross many merges.
    delta_keys_min: usize,
    /// `INDEX_KEY_ARENA_BYTES_MAX`, lowered by tests to reach the limit.
    arena_bytes_max: u64,
}

impl Default for Index {
    fn default() -> Index {
        Index::new()
    }
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("len", &self.len())
            .field("static_slots", &self.run.len())
            .field("static_dead", &self.run.dead())
            .field("delta_nodes", &self.delta.node_count())
            .field("delta_dead", &self.delta.dead())
            .field("key_bytes", &self.key_bytes)
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}

impl Index {
    pub fn new() -> Index {
        Index::with_limits(DELTA_KEYS_MIN, INDEX_KEY_ARENA_BYTES_MAX)
    }

    fn with_limits(delta_keys_min: usize, arena_bytes_max: u64) -> Index {
        assert!(arena_bytes_max <= INDEX_KEY_ARENA_BYTES_MAX);
        Index {
            run: SortedRun::empty(),
            generation: next_generation(),
            remap: None,
            delta: SkipList::new(),
            key_bytes: 0,
            delta_keys_min,
            arena_bytes_max,
        }
    }

    /// Live keys.
    pub fn len(&self) -> usize {
        self.run.live() + self.delta.live()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, key: &[u8]) -> Option<IndexEntry> {
        self.get_hinted(key).map(|(entry, _)| entry)
    }

    /// [`Self::get`], with the hint for the key's slot ([`IndexHint::NONE`] in the delta), for
    /// a read that caches the record.
    pub fn get_hinted(&self, key: &[u8]) -> Option<(IndexEntry, IndexHint)> {
        let (entry, hint) = match self.find(key)? {
            Slot::Static(i) => (self.run.entry(i), IndexHint::new(self.generation, i)),
            Slot::Delta(n) => (self.delta.entry(n), IndexHint::NONE),
        };
        (!is_dead(&entry)).then_some((entry, hint))
    }

    /// The slot holding `key`, live or dead. The static run is searched first because it holds
    /// most keys and a hit there ends the search.
    fn find(&self, key: &[u8]) -> Option<Slot> {
        if let Some(i) = self.run.find(key) {
            return Some(Slot::Static(i));
        }
        self.delta.find(key).map(Slot::Delta)
    }

    /// Inserts or overwrites `key`, returning the previous live entry. `entry` must carry a
    /// location made by [`Location::new`]. Fails without changing the index if the key is empty
    /// or too long, or if the key arena would grow past its limit.
    pub fn upsert(&mut self, key: &[u8], entry: IndexEntry) -> crate::Result<Option<IndexEntry>> {
        self.upsert_hinted(key, entry, IndexHint::NONE).map(|(prev, _)| prev)
    }

    /// [`Self::upsert`] that goes straight to the slot `hint` names if the hint is still valid
    /// (it must be one this index returned for `key`), and returns the hint for the key's slot
    /// now ([`IndexHint::NONE`] for a key in the delta).
    pub fn upsert_hinted(
        &mut self,
        key: &[u8],
        entry: IndexEntry,
        hint: IndexHint,
    ) -> crate::Result<(Option<IndexEntry>, IndexHint)> {
        assert!(!is_dead(&entry), "upsert of the reserved dead location");
        if let Some(i) = self.hinted(key, hint) {
            let hint = IndexHint::new(self.generation, i);
            return Ok((self.put(Slot::Static(i), key, entry), hint));
        }
        check_key(key)?;
        if let Some(i) = self.run.find(key) {
            return Ok((self.put(Slot::Static(i), key, entry), IndexHint::new(self.generation, i)));
        }
        match self.delta.seek(key) {
            Ok(node) => Ok((self.put(Slot::Delta(node), key, entry), IndexHint::NONE)),
            Err(preds) => self.insert_new(key, entry, preds).map(|()| (None, IndexHint::NONE)),
        }
    }

    /// The hints of the slots of `keys` (at most [`DEFERRED_PUTS_MAX`]) in the static run
    /// ([`IndexHint::NONE`] for a key not there), found by searches taken a step at a time
    /// over all the keys (the write path's deferred puts): every key's group and its lines of the sample
    /// level asked for, then every key's block narrowed and its lines asked for, then every
    /// block scanned and the found slot's entry line asked for. Each step reads only lines the
    /// step before asked for, so the keys' misses overlap instead of following one another.
    pub fn find_overlapped<'k>(
        &self,
        keys: impl Iterator<Item = &'k [u8]> + Clone,
    ) -> [IndexHint; DEFERRED_PUTS_MAX] {
        let mut groups = [Err(0); DEFERRED_PUTS_MAX];
        for (key, g) in keys.clone().zip(&mut groups) {
            *g = self.run.overlap_group(key);
        }
        let mut narrowed: [Narrowed; DEFERRED_PUTS_MAX] =
            std::array::from_fn(|_| Narrowed::Settled(0));
        for ((key, g), n) in keys.clone().zip(groups).zip(&mut narrowed) {
            *n = match g {
                Ok(g) => self.run.overlap_narrow(key, g),
                Err(slot) => Narrowed::Settled(slot),
            };
        }
        let mut hints = [IndexHint::NONE; DEFERRED_PUTS_MAX];
        for ((key, n), hint) in keys.zip(narrowed).zip(&mut hints) {
            if let Some(slot) = self.run.overlap_find(key, n) {
                *hint = IndexHint::new(self.generation, slot);
            }
        }
        hints
    }

    /// Whether an upsert of `key` is sure to succeed even after upserts of new keys of
    /// `pending_bytes` in all: the key is valid and the arenas have room for them and it.
    pub fn accepts(&self, key: &[u8], pending_bytes: usize) -> bool {
        check_key(key).is_ok() && self.arena_fits(pending_bytes + key.len())
    }

    /// Batch prefetch (`batch_prefetch.rs`): asks for the line of the entry `hint` names, if
    /// the hint is into the current run.
    pub fn prefetch_hinted(&self, hint: IndexHint) {
        if hint.generation() == self.generation {
            self.run.prefetch_entry(hint.slot());
        }
    }

    /// The live entry `hint` names, if the hint is into the current run (read after
    /// [`Self::prefetch_hinted`] asked for its line).
    pub fn hinted_entry(&self, hint: IndexHint) -> Option<IndexEntry> {
        if hint.generation() != self.generation || hint.slot() >= self.run.len() {
            return None;
        }
        (!self.run.is_dead(hint.slot())).then(|| self.run.entry(hint.slot()))
    }

    /// The static slot of `key` as `hint` tells it: the slot it names if the hint is into the
    /// current run, or the key's slot in the window its old slot maps to if the hint is into
    /// the run before the last merge (None if the key is not there).
    fn hinted(&self, key: &[u8], hint: IndexHint) -> Option<usize> {
        if hint.generation() == self.generation {
            let i = hint.slot();
            debug_assert_eq!(self.run.key(i), key, "a hint names another key's slot");
            return Some(i);
        }
        let remap = self.remap.as_ref().filter(|r| r.generation == hint.generation())?;
        let (lo, hi) = remap.window(hint.slot())?;
        self.run.find_between(key, lo, hi)
    }

    /// Overwrites or revives an existing slot, keeping `key_bytes` in step.
    fn put(&mut self, slot: Slot, key: &[u8], entry: IndexEntry) -> Option<IndexEntry> {
        let prev = match slot {
            Slot::Static(i) => self.run.put(i, entry),
            Slot::Delta(n) => self.delta.put(n, entry),
        };
        if prev.is_none() {
            self.key_bytes += key.len();
        }
        prev
    }

    fn insert_new(
        &mut self,
        key: &[u8],
        entry: IndexEntry,
        mut preds: skiplist::Preds,
    ) -> crate::Result<()> {
        if !self.arena_fits(key.len()) {
            // Dead keys still occupy the arenas; a merge drops them and may make room.
            if self.run.dead() + self.delta.dead() == 0 {
                return Err(crate::Error::IndexFull { max: self.arena_bytes_max });
            }
            self.merge();
            if !self.arena_fits(key.len()) {
                return Err(crate::Error::IndexFull { max: self.arena_bytes_max });
            }
            let Err(fresh) = self.delta.seek(key) else { panic!("a merge empties the delta") };
            preds = fresh;
        }
        self.delta.insert(&preds, key, entry);
        self.key_bytes += key.len();
        if self.delta.node_count() > self.delta_keys_min.max(self.run.len() / DELTA_FRACTION) {
            self.merge();
        }
        Ok(())
    }

    /// Whether both arenas together, and so any merge of them, stay within the `u32` limit after
    /// adding `len` bytes.
    fn arena_fits(&self, len: usize) -> bool {
        let total = self.run.arena_bytes() + self.delta.arena_bytes() + len;
        total as u64 <= self.arena_bytes_max
    }

    /// Removes `key`, returning its live entry. The slot stays, marked dead.
    pub fn remove(&mut self, key: &[u8]) -> Option<IndexEntry> {
        let prev = match self.find(key)? {
            Slot::Static(i) => self.run.kill(i),
            Slot::Delta(n) => self.delta.kill(n),
        }?;
        self.key_bytes -= key.len();
        if self.run.dead() > self.run.len() / 16 {
            self.merge();
        }
        Some(prev)
    }

    /// Compaction moved a record: update the location only if the key still points at `from`.
    pub fn relocate(&mut self, key: &[u8], from: Location, to: Location) -> bool {
        self.relocate_hinted(key, IndexHint::NONE, from, to)
    }

    /// [`Self::relocate`] that goes straight to the slot `hint` names if it is still valid (it
    /// must be one this index returned for `key`).
    pub fn relocate_hinted(
        &mut self,
        key: &[u8],
        hint: IndexHint,
        from: Location,
        to: Location,
    ) -> bool {
        let slot = match self.hinted(key, hint) {
            Some(i) => Slot::Static(i),
            None => match self.find(key) {
                Some(slot) => slot,
                None => return false,
            },
        };
        self.relocate_slot(slot, key, from, to)
    }

    /// [`Self::relocate`] of many keys, which must come in ascending order: each is looked for
    /// in the static run from where the one before it was (`SortedRun::seek_from`), so that a
    /// batch re-points its keys in one forward pass over the run instead of a search each.
    /// `done` hears of each move and whether the key still pointed at `from` (and now points
    /// at `to`).
    pub fn relocate_sorted<'k>(
        &mut self,
        moves: impl IntoIterator<Item = (&'k [u8], Location, Location)>,
        mut done: impl FnMut(Location, Location, bool),
    ) {
        let mut from_slot = 0;
        let mut before: Option<&[u8]> = None;
        for (key, from, to) in moves {
            debug_assert!(before.is_none_or(|b| b <= key), "relocate_sorted keys out of order");
            before = Some(key);
            let slot = match self.run.seek_from(from_slot, key) {
                Ok(i) => {
                    from_slot = i;
                    Some(Slot::Static(i))
                }
                Err(i) => {
                    from_slot = i;
                    self.delta.find(key).map(Slot::Delta)
                }
            };
            let moved = slot.is_some_and(|slot| self.relocate_slot(slot, key, from, to));
            done(from, to, moved);
        }
    }

    /// Re-points `key`'s entry in `slot` from `from` to `to` if it is live and points at `from`.
    fn relocate_slot(&mut self, slot: Slot, key: &[u8], from: Location, to: Location) -> bool {
        assert!(to.to_raw() != DEAD_LOCATION_RAW, "relocate to the reserved dead location");
        let entry = match slot {
            Slot::Static(i) => self.run.entry(i),
            Slot::Delta(n) => self.delta.entry(n),
        };
        if is_dead(&entry) || entry.location() != from {
            return false;
        }
        let moved = IndexEntry::new(to, entry.version(), entry.expiry_ms());
        self.put(slot, key, moved);
        true
    }

    /// Live entries with start <= key < end (std::ops::Bound), ascending or, if reverse,
    /// descending. Bounds that admit no key (start after end) yield nothing.
    pub fn range<'a>(
        &'a self,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        reverse: bool,
    ) -> impl Iterator<Item = (&'a [u8], IndexEntry)> + 'a {
        range::Range::new(&self.run, &self.delta, start, end, reverse)
    }

    /// Exact heap bytes owned by the index: capacity times element size of every buffer.
    pub fn memory_bytes(&self) -> usize {
        let remap = self.remap.as_ref().map_or(0, |r| r.starts.capacity() * size_of::<u32>());
        self.run.memory_bytes() + self.delta.memory_bytes() + remap
    }

    /// Sum of live key lengths.
    pub fn key_bytes(&self) -> usize {
        self.key_bytes
    }

    /// Merges the delta, then returns a snapshot for the checkpoint writer that does not borrow
    /// the index.
    pub fn snapshot(&mut self) -> IndexSnapshot {
        if self.delta.node_count() > 0 || self.run.dead() > 0 {
            self.merge();
        }
        let (keys, ends, entries) = self.run.shared_parts();
        IndexSnapshot { keys, ends, entries }
    }

    /// Rebuilds an index from checkpoint sections (bytes as written from a snapshot). Validates
    /// everything and on failure describes the first problem found, naming the key's position.
    pub fn from_checkpoint(keys: &[u8], ends: &[u8], entries: &[u8]) -> Result<Index, String> {
        let mut index = Index::new();
        index.run = checkpoint::decode(keys, ends, entries, index.arena_bytes_max)?;
        index.generation = next_generation();
        index.key_bytes = keys.len();
        Ok(index)
    }

    /// Rebuilds the static run from the live keys of both parts, in one ordered pass, into
    /// buffers of exact size. The arena check on insert guarantees the result fits in `u32`.
    fn merge(&mut self) {
        let (count, bytes) = (self.len(), self.key_bytes);
        let mut keys = Vec::with_capacity(bytes);
        let mut ends = Vec::with_capacity(count);
        let mut entries = Vec::with_capacity(count);
        let mut push = |key: &[u8], entry: IndexEntry| {
            keys.extend_from_slice(key);
            ends.push(U32::new(keys.len() as u32));
            entries.push(entry);
        };
        // A two-way merge of the live static slots and the live delta nodes (level-0 order). The
        // parts never share a key, so one comparison decides each output; the general `range`
        // iterator would pay bound checks per step, which made merges dominate random inserts.
        let (run, delta) = (&self.run, &self.delta);
        let next_static = |mut i: usize| {
            while i < run.len() && run.is_dead(i) {
                i += 1;
            }
            i
        };
        let next_delta = |mut at: u32| {
            at = delta.next(at, 0);
            while at != skiplist::NIL && delta.is_dead(at) {
                at = delta.next(at, 0);
            }
            at
        };
        let blocks = run.len().div_ceil(REMAP_BLOCK_SLOTS);
        let mut starts = Vec::with_capacity(blocks + 1);
        let mut written = 0u32;
        let (mut i, mut d) = (next_static(0), next_delta(skiplist::HEAD));
        while i < run.len() || d != skiplist::NIL {
            let take_static = d == skiplist::NIL || (i < run.len() && run.key(i) < delta.key(d));
            if take_static {
                // The first live key of each block from the last one taken to `i`'s.
                while starts.len() * REMAP_BLOCK_SLOTS <= i {
                    starts.push(written);
                }
                push(run.key(i), run.entry(i));
                i = next_static(i + 1);
            } else {
                push(delta.key(d), delta.entry(d));
                d = next_delta(d);
            }
            written += 1;
        }
        starts.resize(blocks + 1, written);
        assert_eq!((entries.len(), keys.len()), (count, bytes));
        assert!(keys.len() as u64 <= self.arena_bytes_max);
        self.run = SortedRun::new(Rc::from(keys), Rc::from(ends), entries);
        self.remap = Some(Remap { generation: self.generation, starts });
        self.generation = next_generation();
        // A fresh delta frees the old buffers rather than keeping their capacity counted.
        self.delta = SkipList::new();
    }
}

fn check_key(key: &[u8]) -> crate::Result<()> {
    if key.is_empty() {
        return Err(crate::Error::KeyEmpty);
    }
    if key.len() > KEY_BYTES_MAX {
        return Err(crate::Error::KeyTooLarge { len: key.len(), max: KEY_BYTES_MAX });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
