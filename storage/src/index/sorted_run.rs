//! The static part of the index: every key of the last merge, sorted, in three flat arrays.
//!
//! The per-key budget of the whole index is 32 bytes beyond the key itself, so this part spends
//! 28 per key: a 4-byte end offset into one shared key arena and the 24-byte entry, plus 0.75 for
//! the sample level below and (24 + key length) / 256 for the group levels (28.9 B/key in all
//! with 16-byte keys). There are no per-key pointers or allocations, which is also what makes
//! `memory_bytes()` exact: the memory is the lengths of the buffers. The key arena and the end offsets never change
//! after a merge, so they are shared as `Rc<[_]>` with checkpoint snapshots without copying; only
//! entries change in place (overwrite, delete as a dead sentinel, revive).
//!
//! Binary search over the arena would touch two random cache lines per probe (an end offset and
//! the key bytes). To avoid most of that, the keys are cut into groups of `GROUP_KEYS` (256), and
//! every `SAMPLE_STRIDE`-th key (16) contributes 8 bytes to a small sample array: the first 8
//! bytes after the prefix that every key of its group shares, as a big-endian `u64`. The sample
//! array is dense and cache friendly, and it narrows the search to one block of `SAMPLE_STRIDE`
//! keys for keys that differ in those 8 bytes. A second level holds, per group, the 8 bytes of
//! its first key after the prefix every key of the run shares; it is small enough to stay in
//! cache and picks the group. When groups tie in those 8 bytes (a shard holding several tables
//! shares no prefix, so every key of one table starts with the same table id; or many keys start
//! with the same text), a third array holds each tied group's 8 bytes after the prefix that its
//! run of tied groups shares, and only if those tie too are whole keys compared, in a compact
//! copy of the groups' first keys (0.1 B/key) rather than by a binary search over the arena.
//!
//! Prefixes per group, not one for the whole run, keep that narrowing working when some keys
//! share no prefix with the rest (docs/BENCHMARKS.md, "Prefixes per group": one key of a second
//! table had made a 1M-key lookup 3x slower).
//!
//! Inside the block the search reads each key's 8 bytes after the group's prefix as one load from
//! the arena, masked to the key's length, and the sample level also holds where the block's key
//! bytes start, so they are asked for (prefetched) together with the block's entries while the
//! end offsets load, instead of one after another. docs/BENCHMARKS.md (levers 22 and 23) has
//! the A/B of each, from
//! `cargo bench -p ringstore-storage --bench index`.

use std::cmp::Ordering;
use std::rc::Rc;

use zerocopy::byteorder::little_endian::U32;

use super::entry::{dead_entry, is_dead, IndexEntry};
use crate::prefetch::{prefetch_bytes, CACHE_LINE_BYTES};

/// Keys per sample. 16 keys costs 0.75 B/key (an 8-byte sample and its 4-byte end offset) and
/// leaves a scan of at most 16 keys inside a block.
pub(super) const SAMPLE_STRIDE: usize = 16;

/// Lines of a block's key bytes asked for ahead of the scan: 16 keys of up to 24 bytes.
const PREFETCH_LINES_MAX: usize = 6;

/// Samples per group, the unit of the second level. 16 samples are 128 bytes, two cache lines, so
/// the search inside one group reads at most two lines of the sample array.
pub(super) const TOP_STRIDE: usize = 16;

/// Keys per group: each group has its own shared prefix and one entry in the second level.
pub(super) const GROUP_KEYS: usize = SAMPLE_STRIDE * TOP_STRIDE;

/// Where [`SortedRun::narrow`] left a search.
pub(super) enum Narrowed {
    /// The partition point itself.
    Settled(usize),
    /// One block of at most [`SAMPLE_STRIDE`] slots.
    Block(Block),
    /// Slots `lo..hi`, more than a block: keys that tie in the sampled bytes.
    Wide(usize, usize),
}

/// A block to scan: slots `lo..hi`, whose key bytes start at `start` in the arena, compared by
/// `probe`, the searched key's 8 bytes after its group's prefix of `skip` bytes.
pub(super) struct Block {
    lo: usize,
    hi: usize,
    start: usize,
    skip: usize,
    probe: u64,
}

pub(super) struct SortedRun {
    keys: Rc<[u8]>,
    ends: Rc<[U32]>,
    entries: Vec<IndexEntry>,
    /// `pad8(key(j * SAMPLE_STRIDE)[group_prefix[g]..])` for every sampled key, `g` its group.
    samples: Box<[u64]>,
    /// `ends[j * SAMPLE_STRIDE]` for every sampled key: where the key after it starts in the
    /// arena. A block search starts right after a sampled key, so this gives the address of the
    /// block's key bytes without waiting for the end-offset array (0.25 B/key).
    sample_ends: Box<[u32]>,
    /// `pad8(key(g * GROUP_KEYS)[prefix_len..])` for every group: a second, cache-resident level.
    top: Box<[u64]>,
    /// The first key of every group, one after another, and where each ends: the whole keys the
    /// second level falls back to when `top` ties.
    group_keys: Box<[u8]>,
    group_key_ends: Box<[u32]>,
    /// Length of the prefix every key of group `g` shares (of its first and last key).
    group_prefix: Box<[u16]>,
    /// Per group, the length of the prefix shared by the first keys of every group whose `top`
    /// equals its own (a run of ties), and `pad8` of its first key after that prefix: a second
    /// look that tells tied groups apart without comparing whole keys.
    tie_prefix: Box<[u16]>,
    tie_heads: Box<[u64]>,
    /// Length of the prefix that every key shares (the common prefix of the first and last key).
    prefix_len: usize,
    /// Slots whose entry is the dead sentinel.
    dead: usize,
}

impl SortedRun {
    pub(super) fn empty() -> SortedRun {
        SortedRun::new(Rc::from(Vec::new()), Rc::from(Vec::new()), Vec::new())
    }

    /// Builds a run from sorted, validated parts. Counts dead entries, which merges never produce.
    pub(super) fn new(keys: Rc<[u8]>, ends: Rc<[U32]>, entries: Vec<IndexEntry>) -> SortedRun {
        assert_eq!(ends.len(), entries.len());
        assert_eq!(ends.last().map_or(0, |e| e.get() as usize), keys.len());
        let dead = entries.iter().filter(|e| is_dead(e)).count();
        let mut run = SortedRun {
            keys,
            ends,
            entries,
            samples: Box::default(),
            sample_ends: Box::default(),
            top: Box::default(),
            group_keys: Box::default(),
            group_key_ends: Box::default(),
            group_prefix: Box::default(),
            tie_prefix: Box::default(),
            tie_heads: Box::default(),
            prefix_len: 0,
            dead,
        };
        let n = run.len();
        run.prefix_len = n.checked_sub(1).map_or(0, |last| run.common_prefix_len(0, last));
        run.group_prefix = (0..n)
            .step_by(GROUP_KEYS)
            .map(|first| {
                let last = (first + GROUP_KEYS).min(n) - 1;
                u16::try_from(run.common_prefix_len(first, last)).expect("keys fit in u16")
            })
            .collect();
        run.samples = (0..n)
            .step_by(SAMPLE_STRIDE)
            .map(|i| pad8(&run.key(i)[usize::from(run.group_prefix[i / GROUP_KEYS])..]))
            .collect();
        run.sample_ends = run.ends.iter().step_by(SAMPLE_STRIDE).map(|e| e.get()).collect();
        run.top = (0..n).step_by(GROUP_KEYS).map(|i| pad8(&run.key(i)[run.prefix_len..])).collect();
        let mut group_keys = Vec::new();
        let mut group_key_ends = Vec::new();
        for i in (0..n).step_by(GROUP_KEYS) {
            group_keys.extend_from_slice(run.key(i));
            group_key_ends.push(u32::try_from(group_keys.len()).expect("a part of the arena"));
        }
        run.group_keys = group_keys.into_boxed_slice();
        run.group_key_ends = group_key_ends.into_boxed_slice();
        let mut tie_prefix = Vec::with_capacity(run.top.len());
        for ties in run.top.chunk_by(|a, b| a == b) {
            let (first, last) = (tie_prefix.len(), tie_prefix.len() + ties.len() - 1);
            let shared = shared_len(run.group_key(first), run.group_key(last));
            let shared = u16::try_from(shared).expect("keys fit in u16");
            tie_prefix.extend(std::iter::repeat_n(shared, ties.len()));
        }
        run.tie_heads = (0..run.top.len())
            .map(|g| pad8(&run.group_key(g)[usize::from(tie_prefix[g])..]))
            .collect();
        run.tie_prefix = tie_prefix.into_boxed_slice();
        run
    }

    /// Length of the prefix that slots `first` and `last` share, and so every slot between them.
    fn common_prefix_len(&self, first: usize, last: usize) -> usize {
        shared_len(self.key(first), self.key(last))
    }

    /// The first key of group `g`, from the compact copy.
    fn group_key(&self, g: usize) -> &[u8] {
        let start = g.checked_sub(1).map_or(0, |p| self.group_key_ends[p] as usize);
        &self.group_keys[start..self.group_key_ends[g] as usize]
    }

    /// Slots, live and dead.
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(super) fn dead(&self) -> usize {
        self.dead
    }

    pub(super) fn live(&self) -> usize {
        self.len() - self.dead
    }

    pub(super) fn arena_bytes(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn key(&self, i: usize) -> &[u8] {
        &self.keys[self.start(i)..self.ends[i].get() as usize]
    }

    /// Where slot `lo`'s key starts, for a `lo` that [`Self::narrow`] returned: 0 or one past a
    /// sampled slot, whose end the sample level holds.
    fn block_start(&self, lo: usize) -> usize {
        if lo == 0 {
            return 0;
        }
        debug_assert_eq!((lo - 1) % SAMPLE_STRIDE, 0, "a block starts after a sampled key");
        self.sample_ends[(lo - 1) / SAMPLE_STRIDE] as usize
    }

    /// Asks for the cache lines of `block`'s key bytes, from its start to the end of the sampled
    /// key at its end (or the arena's end), at most [`PREFETCH_LINES_MAX`] of them.
    #[inline]
    fn prefetch_block_keys(&self, block: &Block) {
        let end =
            self.sample_ends.get(block.hi / SAMPLE_STRIDE).map_or(self.keys.len(), |&e| e as usize);
        let key_bytes = end.saturating_sub(block.start).min(PREFETCH_LINES_MAX * CACHE_LINE_BYTES);
        prefetch_bytes(self.keys[block.start..].as_ptr(), key_bytes);
    }

    /// Asks for the lines of `block`'s key bytes ([`Self::prefetch_block_keys`]) and of its
    /// entries: the scan reads the keys in order and then one of the entries, and these loads
    /// then overlap instead of following one another.
    #[inline]
    fn prefetch_block(&self, block: &Block) {
        self.prefetch_block_keys(block);
        let entries = &self.entries[block.lo..block.hi];
        prefetch_bytes(entries.as_ptr(), std::mem::size_of_val(entries));
    }

    /// Where slot `i`'s key starts in the arena.
    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.ends[i - 1].get() as usize
        }
    }

    /// `pad8(key[skip..])` of the key at `key_start..key_end` of the arena, read as one
    /// 8-byte load from the arena and masked to the key's length. Keys in a benchmark-shaped key
    /// space often have fewer than 8 bytes after their shared prefix (100k keys
    /// `k0000000000nnnnn`: 7), where `pad8` shifts bytes in one by one; this costs the same load
    /// and one mask instead. The bytes past the key belong to
    /// the next key and are masked off; only the last few keys of the arena take `pad8`.
    #[inline]
    fn head(&self, key_start: usize, key_end: usize, skip: usize) -> u64 {
        let start = key_start + skip;
        let len = key_end - start;
        match self.keys.get(start..start + 8) {
            Some(window) => {
                let bytes = u64::from_be_bytes(window.try_into().expect("an 8-byte window"));
                // Keep the key's own `len` leading bytes (all 8 when len >= 8).
                let mask = u64::MAX.checked_shr(8 * len as u32).map_or(u64::MAX, |m| !m);
                bytes & mask
            }
            None => pad8(&self.keys[start..start + len]),
        }
    }

    /// Asks for the line of slot `i`'s entry (nothing past the run).
    pub(super) fn prefetch_entry(&self, i: usize) {
        if let Some(e) = self.entries.get(i) {
            crate::prefetch::prefetch(e);
        }
    }

    pub(super) fn entry(&self, i: usize) -> IndexEntry {
        self.entries[i]
    }

    pub(super) fn is_dead(&self, i: usize) -> bool {
        is_dead(&self.entries[i])
    }

    /// Stores `entry` in slot `i`, reviving it if dead, and returns the previous live entry.
    pub(super) fn put(&mut self, i: usize, entry: IndexEntry) -> Option<IndexEntry> {
        assert!(!is_dead(&entry));
        let prev = std::mem::replace(&mut self.entries[i], entry);
        if is_dead(&prev) {
            self.dead -= 1;
            return None;
        }
        Some(prev)
    }

    /// Marks slot `i` dead and returns its entry if it was live.
    pub(super) fn kill(&mut self, i: usize) -> Option<IndexEntry> {
        let prev = std::mem::replace(&mut self.entries[i], dead_entry());
        if is_dead(&prev) {
            return None;
        }
        self.dead += 1;
        Some(prev)
    }

    /// The slot holding exactly `key`, live or dead.
    pub(super) fn find(&self, key: &[u8]) -> Option<usize> {
        let i = self.partition(key, false);
        (i < self.len() && self.key(i) == key).then_some(i)
    }

    /// The slot holding exactly `key` among slots `lo..hi`, if it is there: a binary search of a
    /// window the caller knows the key to be in if the run holds it (`Index`'s remap of hints
    /// into the run before the last merge), a few dozen slots whose keys sit together in the
    /// arena instead of the run's levels.
    pub(super) fn find_between(&self, key: &[u8], lo: usize, hi: usize) -> Option<usize> {
        let hi = hi.min(self.len());
        let i = first_not_below(lo.min(hi), hi, |i| self.key(i) < key);
        (i < hi && self.key(i) == key).then_some(i)
    }

    /// The slot holding `key` (Ok) or the first slot whose key is greater (Err), searching only
    /// from slot `from` on: every key before `from` must be smaller than `key`. For keys looked
    /// up in ascending order, each from where the one before was found: an exponential search
    /// from `from`, so that each lookup reads the few slots after the previous one (memory
    /// the CPU has just loaded or streams in) instead of the run's levels.
    pub(super) fn seek_from(&self, from: usize, key: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi, mut step) = (from, from, 1);
        while hi < self.len() && self.key(hi) < key {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        // Now every slot before `lo` is smaller than `key`, and `hi` is the end or not smaller.
        let lo = first_not_below(lo, hi.min(self.len()), |i| self.key(i) < key);
        if lo < self.len() && self.key(lo) == key {
            Ok(lo)
        } else {
            Err(lo)
        }
    }

    /// The first slot whose key is greater than `key` (`after_equal` false: greater or equal).
    pub(super) fn partition(&self, key: &[u8], after_equal: bool) -> usize {
        let g = match self.group_of(key, after_equal) {
            Ok(g) => g,
            Err(exact) => return exact,
        };
        match self.narrow(key, g) {
            Narrowed::Settled(i) => i,
            Narrowed::Block(block) => {
                self.prefetch_block(&block);
                self.scan_block(key, &block, after_equal)
            }
            Narrowed::Wide(mut lo, mut hi) => {
                // Keys that tie in the 8 bytes after the group's prefix: a binary search in the
                // group.
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    let k = self.key(mid);
                    let before = if after_equal { k <= key } else { k < key };
                    if before {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        }
    }

    /// Narrows the search for `key` inside group `g` (from [`Self::group_of`]) by the sample
    /// level: to one block of at most [`SAMPLE_STRIDE`] slots, or to a wider range when keys
    /// tie in the sampled bytes, or to the answer when `key` is above the whole group.
    fn narrow(&self, key: &[u8], g: usize) -> Narrowed {
        // Every key of the group is below `key` from its first on; the first key of the next
        // group is above it (it was compared whole or by a differing `top`).
        let (first, end) = (g * GROUP_KEYS, ((g + 1) * GROUP_KEYS).min(self.len()));
        let skip = usize::from(self.group_prefix[g]);
        if !self.shares_group_prefix(key, g, skip) {
            // Above the group's first key but not sharing its prefix: above the whole group.
            return Narrowed::Settled(end);
        }
        let probe = pad8(&key[skip..]);
        let s = first / SAMPLE_STRIDE;
        let group_samples = &self.samples[s..s + (end - first).div_ceil(SAMPLE_STRIDE)];
        let (below, not_above) = counts(group_samples, probe);
        let (lo, hi) = bracket_from_counts(
            s + below,
            s + not_above,
            self.samples.len(),
            SAMPLE_STRIDE,
            self.len(),
        );
        // The group's first key is below `key`, and slots from `end` on are above it.
        let (lo, hi) = (lo.max(first + 1), hi.min(end));
        if hi - lo > SAMPLE_STRIDE {
            return Narrowed::Wide(lo, hi);
        }
        if lo >= hi {
            return Narrowed::Settled(hi);
        }
        Narrowed::Block(Block { lo, hi, start: self.block_start(lo), skip, probe })
    }

    /// The first slot of `block` whose key is greater than `key` (`after_equal` false: greater
    /// or equal), or the block's end.
    ///
    /// Inside one block a forward scan reads the keys in arena order, so the loads of several
    /// keys overlap instead of waiting for each other as binary search probes do. Each key is
    /// first compared by its 8 bytes after the group's prefix as one number, which decides
    /// nearly every comparison without a call to memcmp. The end offset of one key is the start
    /// of the next, so each step loads one. The first start comes from the sample level (the
    /// slot before `lo` is a sampled key), so the first key bytes load in parallel with the end
    /// offsets instead of after.
    #[inline]
    fn scan_block(&self, key: &[u8], block: &Block, after_equal: bool) -> usize {
        let mut start = block.start;
        for i in block.lo..block.hi {
            let end = self.ends[i].get() as usize;
            let before = match self.head(start, end, block.skip).cmp(&block.probe) {
                Ordering::Less => true,
                Ordering::Greater => false,
                Ordering::Equal if after_equal => &self.keys[start..end] <= key,
                Ordering::Equal => &self.keys[start..end] < key,
            };
            if !before {
                return i;
            }
            start = end;
        }
        block.hi
    }

    /// First step of a search whose misses are to overlap with other keys' searches
    /// ([`crate::index::Index::find_overlapped`]): finds `key`'s group from the levels that
    /// stay in cache and asks for the group's lines of the sample level and of the sample ends.
    /// `Err(slot)` when those levels settle the search.
    pub(super) fn overlap_group(&self, key: &[u8]) -> Result<usize, usize> {
        let g = self.group_of(key, false)?;
        let s = g * TOP_STRIDE;
        let samples = (self.samples.len() - s).min(TOP_STRIDE);
        prefetch_bytes(self.samples[s..].as_ptr(), samples * size_of::<u64>());
        prefetch_bytes(self.sample_ends[s..].as_ptr(), samples * size_of::<u32>());
        Ok(g)
    }

    /// Second step, once [`Self::overlap_group`]'s lines have had time to arrive: narrows the
    /// search to a block and asks for the block's end offsets and key bytes.
    pub(super) fn overlap_narrow(&self, key: &[u8], g: usize) -> Narrowed {
        let narrowed = self.narrow(key, g);
        if let Narrowed::Block(b) = &narrowed {
            prefetch_bytes(self.ends[b.lo..b.hi].as_ptr(), (b.hi - b.lo) * size_of::<U32>());
            self.prefetch_block_keys(b);
        }
        narrowed
    }

    /// Last step: the slot holding exactly `key`, from its narrowed search (whose block's lines
    /// should be in cache by now), with the line of its entry asked for.
    pub(super) fn overlap_find(&self, key: &[u8], narrowed: Narrowed) -> Option<usize> {
        let i = match narrowed {
            Narrowed::Settled(i) => i,
            Narrowed::Block(block) => self.scan_block(key, &block, false),
            Narrowed::Wide(..) => return self.find(key),
        };
        let found = (i < self.len() && self.key(i) == key).then_some(i)?;
        self.prefetch_entry(found);
        Some(found)
    }

    /// Whether `key` starts with the first `skip` bytes of group `g`'s first key, given that it
    /// starts with the run's shared prefix. Group prefixes seldom reach 8 bytes past the run's,
    /// and then the group's `top` entry holds them: no load of the key copy.
    #[inline]
    fn shares_group_prefix(&self, key: &[u8], g: usize, skip: usize) -> bool {
        if key.len() < skip {
            return false;
        }
        let extra = skip - self.prefix_len;
        if extra <= 8 {
            let diff = pad8(&key[self.prefix_len..]) ^ self.top[g];
            return diff.checked_shr(64 - 8 * extra as u32).unwrap_or(0) == 0;
        }
        key.starts_with(&self.group_key(g)[..skip])
    }

    /// The group whose keys from its first on are below `key` while the next group's first key
    /// is above it, found from the run's shared prefix, the second level and, where that ties,
    /// the groups' first keys; or `Err(slot)` when that already settles the partition point:
    /// `key` sorts before every slot, after every slot, or equals a group's first key.
    fn group_of(&self, key: &[u8], after_equal: bool) -> Result<usize, usize> {
        let n = self.len();
        if n == 0 {
            return Err(0);
        }
        let prefix = &self.group_key(0)[..self.prefix_len];
        if !key.starts_with(prefix) {
            // The key differs from the shared prefix, so it sorts before or after every key.
            return Err(if key < prefix { 0 } else { n });
        }
        let probe = pad8(&key[self.prefix_len..]);
        let (below, not_above) = counts(&self.top, probe);
        // Groups whose first key is below `key`: all with a smaller `top`, and those of the
        // groups with an equal `top` whose first key is smaller, told apart by their heads after
        // the prefix the tied groups share and, if those tie too, by a binary search over whole
        // first keys in the compact copy.
        let (mut lo, mut hi) = (below, not_above);
        if not_above > below {
            let skip = usize::from(self.tie_prefix[below]);
            let shared = &self.group_key(below)[..skip];
            if key.starts_with(shared) {
                let (b, n) = counts(&self.tie_heads[below..not_above], pad8(&key[skip..]));
                (lo, hi) = (below + b, below + n);
            } else if key < shared {
                hi = below;
            } else {
                lo = not_above;
            }
        }
        let lo = first_not_below(lo, hi, |g| self.group_key(g) < key);
        if lo < not_above && self.group_key(lo) == key {
            return Err(lo * GROUP_KEYS + usize::from(after_equal));
        }
        // No group's first key equals `key` (a differing `top` differs in the key too).
        lo.checked_sub(1).ok_or(0)
    }

    /// Shared handles for a snapshot. Only valid when no slot is dead.
    pub(super) fn shared_parts(&self) -> (Rc<[u8]>, Rc<[U32]>, Vec<IndexEntry>) {
        assert_eq!(self.dead, 0);
        (Rc::clone(&self.keys), Rc::clone(&self.ends), self.entries.clone())
    }

    /// Exact heap bytes: element count times element size of each owned buffer. The two
    /// reference counts inside each `Rc` allocation are per run, not per key, and not counted.
    pub(super) fn memory_bytes(&self) -> usize {
        self.keys.len()
            + std::mem::size_of_val::<[U32]>(&self.ends)
            + self.entries.capacity() * std::mem::size_of::<IndexEntry>()
            + std::mem::size_of_val::<[u64]>(&self.samples)
            + std::mem::size_of_val::<[u32]>(&self.sample_ends)
            + std::mem::size_of_val::<[u64]>(&self.top)
            + self.group_keys.len()
            + std::mem::size_of_val::<[u32]>(&self.group_key_ends)
            + std::mem::size_of_val::<[u16]>(&self.group_prefix)
            + std::mem::size_of_val::<[u16]>(&self.tie_prefix)
            + std::mem::size_of_val::<[u64]>(&self.tie_heads)
    }
}

/// The first index of `lo..hi` at which `below` is false, by binary search: `below` must hold
/// for a prefix of the range and for nothing after it.
fn first_not_below(mut lo: usize, mut hi: usize, below: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if below(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// Length of the prefix `a` and `b` share.
fn shared_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// How many of the sorted `samples` are below `probe`, and how many are not above it. Samples
/// equal to the probe are rare (keys that share 8 bytes after their prefix), so the second
/// count costs one comparison unless the first sample at the partition point equals the probe.
fn counts(samples: &[u64], probe: u64) -> (usize, usize) {
    let below = samples.partition_point(|&x| x < probe);
    let not_above = match samples.get(below) {
        Some(&x) if x == probe => below + 1 + samples[below + 1..].partition_point(|&x| x <= probe),
        _ => below,
    };
    (below, not_above)
}

/// Turns counts of samples below and not above the probe into a range of the lower array.
fn bracket_from_counts(
    below: usize,
    not_above: usize,
    count: usize,
    stride: usize,
    lower_len: usize,
) -> (usize, usize) {
    let lo = if below == 0 { 0 } else { (below - 1) * stride + 1 };
    let hi = if not_above == count { lower_len } else { not_above * stride };
    (lo, hi)
}

/// The first 8 bytes of `bytes` as a big-endian number, zero padded, so that numeric order agrees
/// with byte-wise order wherever the padded values differ.
#[inline]
fn pad8(bytes: &[u8]) -> u64 {
    if let Some(first) = bytes.first_chunk::<8>() {
        return u64::from_be_bytes(*first);
    }
    // Fewer than 8 bytes: shift them in one by one (a copy of a variable length would call
    // memmove, which cost more than the whole comparison it serves).
    bytes.iter().enumerate().fold(0, |acc, (i, &b)| acc | u64::from(b) << (56 - 8 * i))
}

#[cfg(test)]
mod tests {
    //! Proves that sample narrowing always brackets the true partition points, including for
    //! keys that share long prefixes and keys shorter than the sampled window.

    use super::*;
    use crate::index::Location;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn run_of(mut keys: Vec<Vec<u8>>) -> SortedRun {
        keys.sort();
        keys.dedup();
        let mut arena = Vec::new();
        let mut ends = Vec::new();
        for k in &keys {
            arena.extend_from_slice(k);
            ends.push(U32::new(arena.len() as u32));
        }
        let e = IndexEntry::new(Location::new(1, 8, 8), 1, 0);
        SortedRun::new(Rc::from(arena), Rc::from(ends), vec![e; keys.len()])
    }

    fn random_key(rng: &mut StdRng) -> Vec<u8> {
        let mut k = b"tbl/".to_vec();
        let len = rng.gen_range(0..12);
        k.extend((0..len).map(|_| rng.gen_range(b'a'..=b'c')));
        k
    }

    #[test]
    fn head_equals_pad8_of_every_key() {
        let seed = 11;
        let mut rng = StdRng::seed_from_u64(seed);
        let keys: Vec<Vec<u8>> = (0..500).map(|_| random_key(&mut rng)).collect();
        let run = run_of(keys);
        for i in 0..run.len() {
            let skip = usize::from(run.group_prefix[i / GROUP_KEYS]);
            let want = pad8(&run.key(i)[skip..]);
            let head = run.head(run.start(i), run.ends[i].get() as usize, skip);
            assert_eq!(head, want, "seed {seed} slot {i} key {:?}", run.key(i));
        }
    }

    /// Asserts both partition points of every probe against a linear scan.
    fn assert_partitions(run: &SortedRun, probes: &[Vec<u8>], seed: u64) {
        for probe in probes {
            for after_equal in [false, true] {
                let want = (0..run.len())
                    .position(|i| {
                        if after_equal {
                            run.key(i) > &probe[..]
                        } else {
                            run.key(i) >= &probe[..]
                        }
                    })
                    .unwrap_or(run.len());
                let got = run.partition(probe, after_equal);
                assert_eq!(got, want, "seed {seed} probe {probe:?} after_equal {after_equal}");
            }
        }
    }

    #[test]
    fn partition_matches_linear_scan() {
        let seed = 7;
        let mut rng = StdRng::seed_from_u64(seed);
        let keys: Vec<Vec<u8>> = (0..3000).map(|_| random_key(&mut rng)).collect();
        let run = run_of(keys);
        assert!(run.prefix_len >= 4, "seed {seed}");
        let probes: Vec<Vec<u8>> = (0..3000)
            .map(|_| if rng.gen_bool(0.1) { vec![rng.gen()] } else { random_key(&mut rng) })
            .collect();
        assert_partitions(&run, &probes, seed);
    }

    /// A key of one of several families, as a shard holding several tables has: no prefix is
    /// shared by every key, the keys of one family share long prefixes (so the second level's
    /// 8 bytes tie across many groups), and some keys are shorter than the shared text.
    fn family_key(rng: &mut StdRng) -> Vec<u8> {
        let mut k = vec![0, 0, 0, rng.gen_range(1..=3u8)];
        match rng.gen_range(0..10) {
            0 => k.extend((0..rng.gen_range(0..3)).map(|_| rng.gen_range(b'a'..=b'b'))),
            1..=7 => {
                k.extend_from_slice(b"key:{06S}:0000");
                k.extend_from_slice(format!("{:05}", rng.gen_range(0..30_000)).as_bytes());
                k.extend_from_slice(&[0, 1]);
            }
            _ => {
                k.extend(std::iter::repeat_n(b'L', rng.gen_range(0..30)));
                k.push(rng.gen_range(0..4));
            }
        }
        k
    }

    #[test]
    fn partition_matches_linear_scan_across_key_families() {
        for seed in [1, 2, 3] {
            let mut rng = StdRng::seed_from_u64(seed);
            let keys: Vec<Vec<u8>> = (0..6000).map(|_| family_key(&mut rng)).collect();
            let run = run_of(keys);
            assert_eq!(run.prefix_len, 3, "seed {seed}: only the table id's zero bytes are shared");
            assert!(run.len() > 8 * GROUP_KEYS, "seed {seed}: several groups");
            // Every group's first key and its neighbours, stored keys, and new keys.
            let mut probes: Vec<Vec<u8>> = Vec::new();
            for g in 0..run.len().div_ceil(GROUP_KEYS) {
                let first = run.key(g * GROUP_KEYS).to_vec();
                let mut shorter = first.clone();
                shorter.pop();
                let mut longer = first.clone();
                longer.push(0);
                probes.extend([first, shorter, longer]);
            }
            probes.extend((0..run.len()).step_by(7).map(|i| run.key(i).to_vec()));
            probes.extend((0..3000).map(|_| family_key(&mut rng)));
            probes.extend([vec![], vec![0], vec![0, 0, 0, 0], vec![0, 0, 0, 9], vec![0xFF]]);
            assert_partitions(&run, &probes, seed);
        }
    }
}
