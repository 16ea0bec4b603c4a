//! The static part of the index: every key of the last merge, sorted, in three flat arrays.
//!
//! The per-key budget of the whole index is 32 bytes beyond the key itself, so this part spends
//! 28 per key: a 4-byte end offset into one shared key arena and the 24-byte entry, plus 0.75 for
//! the sample levels below (28.8 B/key in all). There are no per-key pointers or allocations, which is also what makes `memory_bytes()` exact: the memory is
//! the lengths (or capacities) of four buffers. The key arena and the end offsets never change
//! after a merge, so they are shared as `Rc<[_]>` with checkpoint snapshots without copying; only
//! entries change in place (overwrite, delete as a dead sentinel, revive).
//!
//! Binary search over the arena would touch two random cache lines per probe (an end offset and
//! the key bytes). To avoid most of that, every `SAMPLE_STRIDE`-th key contributes 8 bytes to a
//! small sample array (the first 8 bytes after the prefix that all keys share, as a big-endian
//! `u64`). The sample array is dense and cache friendly, and it narrows the search to one block of
//! `SAMPLE_STRIDE` keys for keys that differ in those 8 bytes. A second level, every
//! `TOP_STRIDE`-th sample, is small enough to stay in cache and narrows the sample search to
//! one or two cache lines.
//!
//! Inside the block the search reads each key's 8 bytes after the prefix as one load from the
//! arena, masked to the key's length, and the sample level also holds where the block's key
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

/// Samples per entry of the second level. 16 samples are 128 bytes, two cache lines, so the
/// search below one top entry reads at most two lines of the sample array.
pub(super) const TOP_STRIDE: usize = 16;

pub(super) struct SortedRun {
    keys: Rc<[u8]>,
    ends: Rc<[U32]>,
    entries: Vec<IndexEntry>,
    /// `pad8(key(j * SAMPLE_STRIDE)[prefix_len..])` for every sampled key.
    samples: Box<[u64]>,
    /// `ends[j * SAMPLE_STRIDE]` for every sampled key: where the key after it starts in the
    /// arena. A block search starts right after a sampled key, so this gives the address of the
    /// block's key bytes without waiting for the end-offset array (0.25 B/key).
    sample_ends: Box<[u32]>,
    /// `samples[j * TOP_STRIDE]`: a second, cache-resident level over the samples.
    top: Box<[u64]>,
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
            prefix_len: 0,
            dead,
        };
        run.prefix_len = run.common_prefix_len();
        run.samples = run.build_samples();
        run.sample_ends = run.ends.iter().step_by(SAMPLE_STRIDE).map(|e| e.get()).collect();
        run.top = run.samples.iter().step_by(TOP_STRIDE).copied().collect();
        run
    }

    fn common_prefix_len(&self) -> usize {
        let Some(last) = self.len().checked_sub(1) else { return 0 };
        let (first, last) = (self.key(0), self.key(last));
        first.iter().zip(last).take_while(|(a, b)| a == b).count()
    }

    fn build_samples(&self) -> Box<[u64]> {
        let p = self.prefix_len;
        (0..self.len()).step_by(SAMPLE_STRIDE).map(|i| pad8(&self.key(i)[p..])).collect()
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

    /// Asks for the cache lines of the block's key bytes, from `start` to the end of the sampled
    /// key at `hi` (or the arena's end), at most [`PREFETCH_LINES_MAX`] of them, and of the
    /// entries of slots `lo..hi`: the scan reads the keys in order and then one of the entries,
    /// and these loads then overlap instead of following one another.
    #[inline]
    fn prefetch_block(&self, lo: usize, start: usize, hi: usize) {
        let end = self.sample_ends.get(hi / SAMPLE_STRIDE).map_or(self.keys.len(), |&e| e as usize);
        let key_bytes = end.saturating_sub(start).min(PREFETCH_LINES_MAX * CACHE_LINE_BYTES);
        prefetch_bytes(self.keys[start..].as_ptr(), key_bytes);
        prefetch_bytes(self.entries[lo..hi].as_ptr(), std::mem::size_of_val(&self.entries[lo..hi]));
    }

    /// Where slot `i`'s key starts in the arena.
    fn start(&self, i: usize) -> usize {
        if i == 0 {
            0
        } else {
            self.ends[i - 1].get() as usize
        }
    }

    /// `pad8(key[prefix_len..])` of the key at `key_start..key_end` of the arena, read as one
    /// 8-byte load from the arena and masked to the key's length. Keys in a benchmark-shaped key
    /// space often have fewer than 8 bytes after their shared prefix (100k keys
    /// `k0000000000nnnnn`: 7), where `pad8` shifts bytes in one by one; this costs the same load
    /// and one mask instead. The bytes past the key belong to
    /// the next key and are masked off; only the last few keys of the arena take `pad8`.
    #[inline]
    fn head(&self, key_start: usize, key_end: usize) -> u64 {
        let start = key_start + self.prefix_len;
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

    /// The first slot whose key is greater than `key` (`after_equal` false: greater or equal).
    pub(super) fn partition(&self, key: &[u8], after_equal: bool) -> usize {
        let (mut lo, mut hi, probe) = self.narrow(key);
        if hi - lo <= SAMPLE_STRIDE {
            // Inside one block a forward scan reads the keys in arena order, so the loads of
            // several keys overlap instead of waiting for each other as binary search probes do.
            // Each key is first compared by its 8 bytes after the shared prefix as one number,
            // which decides nearly every comparison without a call to memcmp.
            // The end offset of one key is the start of the next, so each step loads one. The
            // first start comes from the sample level (the slot before `lo` is a sampled key),
            // so the first key bytes load in parallel with the end offsets instead of after.
            if lo == hi {
                // Settled by the prefix or the samples alone (possibly at the end of the run,
                // which is not a block start).
                return lo;
            }
            let mut start = self.block_start(lo);
            self.prefetch_block(lo, start, hi);
            for i in lo..hi {
                let end = self.ends[i].get() as usize;
                let before = match self.head(start, end).cmp(&probe) {
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
            return hi;
        }
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

    /// A slot range `lo..=hi` that contains both partition points of `key`, found from the
    /// shared prefix and the samples without touching the key arena (except for the prefix), and
    /// the key's 8 bytes after the prefix as [`pad8`] makes them (0 when `lo == hi`).
    fn narrow(&self, key: &[u8]) -> (usize, usize, u64) {
        let n = self.len();
        if n == 0 {
            return (0, 0, 0);
        }
        let prefix = &self.key(0)[..self.prefix_len];
        if !key.starts_with(prefix) {
            // The key differs from the shared prefix, so it sorts before or after every key.
            let at = if key < prefix { 0 } else { n };
            return (at, at, 0);
        }
        let probe = pad8(&key[self.prefix_len..]);
        let (lo, hi) = self.narrow_by_samples(probe);
        (lo, hi, probe)
    }

    /// Finds the block of keys around `probe` through the two sample levels. The top level is
    /// small enough to stay in cache, so a lookup reads one or two lines of the sample array.
    fn narrow_by_samples(&self, probe: u64) -> (usize, usize) {
        let s = &self.samples;
        let (lo, hi) = bracket(&self.top, probe, TOP_STRIDE, s.len());
        let (below, not_above) = counts(&s[lo..hi], probe);
        bracket_from_counts(lo + below, lo + not_above, s.len(), SAMPLE_STRIDE, self.len())
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
    }
}

/// A range `lo..=hi` of a lower array that contains both partition points of `probe` (first
/// element not below it, first element above it), where `samples[j]` summarizes element
/// `j * stride` below. `pad8` is monotone, so a sample below `probe` marks an element below the
/// probe and a sample above it marks an element above; only equal samples leave the order open.
fn bracket(samples: &[u64], probe: u64, stride: usize, lower_len: usize) -> (usize, usize) {
    let (below, not_above) = counts(samples, probe);
    bracket_from_counts(below, not_above, samples.len(), stride, lower_len)
}

/// How many of the sorted `samples` are below `probe`, and how many are not above it. Samples
/// equal to the probe are rare (keys that share 8 bytes after the common prefix), so the second
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
            let want = pad8(&run.key(i)[run.prefix_len..]);
            let head = run.head(run.start(i), run.ends[i].get() as usize);
            assert_eq!(head, want, "seed {seed} slot {i} key {:?}", run.key(i));
        }
    }

    #[test]
    fn partition_matches_linear_scan() {
        let seed = 7;
        let mut rng = StdRng::seed_from_u64(seed);
        let keys: Vec<Vec<u8>> = (0..3000).map(|_| random_key(&mut rng)).collect();
        let run = run_of(keys);
        assert!(run.prefix_len >= 4, "seed {seed}");
        for _ in 0..3000 {
            let mut probe = random_key(&mut rng);
            if rng.gen_bool(0.1) {
                probe = vec![rng.gen()];
            }
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
                assert_eq!(run.partition(&probe, after_equal), want, "seed {seed} probe {probe:?}");
            }
        }
    }
}
