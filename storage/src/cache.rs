//! The record cache: a bounded map from key to the record's value, version and expiry, built for
//! one thread (one per shard: no locks, no atomics) and laid out so that a hit costs as few
//! memory round trips as possible.
//!
//! It is keyed by key, not by location, so a cache hit costs one hash lookup and never touches the
//! ordered index. Every write of a key updates its cached copy in place, and a delete removes it
//! ([`RecordCache::write_through_at`] says which writes also cache a key that was absent). Each
//! entry also keeps where its key's index entry was at its last write (an
//! [`crate::index::IndexHint`]), so a put of a cached key skips the index's search. Capacity is in
//! bytes: each record is charged the bytes it really occupies (its entry, any heap part, and
//! [`CACHE_ENTRY_OVERHEAD_BYTES`] for its share of the hash index), which is what makes the
//! key-size effect measurable (longer keys, fewer records).
//!
//! Layout:
//! - `entries`: a dense slab of 224-byte entries. A short key and value live together inside
//!   the entry (a 16-byte key and a 100-byte field's stored row fit), so a hit reads one entry,
//!   at most four adjacent cache lines, and chases no pointer.
//! - `index`: an open-addressing table (linear probing, backward-shift deletion, at most half
//!   full) of 8-byte slots, each the low 32 bits of the key's hash (which also give the slot's
//!   home) and the entry's position in the slab. Eight slots share a cache line, so a probe
//!   nearly always reads one line.
//!
//! A hit is then two dependent memory reads, a slot and an entry. quick_cache, which this
//! replaced, probed hashbrown's control bytes, read a slot index, then a slab entry holding the
//! key, the value and the eviction links; docs/BENCHMARKS.md (lever 9) has the A/B, and the
//! batch prefetch that was tried on top of this cache and not kept (lever 10: it decoded each
//! request twice). The RESP port's batch prefetch (`batch_prefetch.rs`, lever 25), which decodes
//! once, is kept: it walks a batch's keys through [`RecordCache::prefetch_slot`] and
//! [`RecordCache::prefetch_entry`].
//!
//! Both buffers ask for transparent huge pages when they are allocated (`huge_pages.rs`): a hit
//! at a random place in a slab of tens of megabytes would otherwise also miss the TLB.
//!
//! Eviction is CLOCK over the slab: a hit sets the entry's reference bit, the hand clears set
//! bits and evicts the first entry without one. Entries start unreferenced, so records read once
//! (a scan, a warm-up) leave before records read again.

use std::cell::Cell;

use bytes::Bytes;

use crate::constants::{
    CACHE_ENTRY_OVERHEAD_BYTES, CACHE_INLINE_BYTES, KEY_BYTES_MAX, VALUE_BYTES_MAX,
};
use crate::index::IndexHint;
use crate::prefetch::{prefetch, prefetch_bytes};

/// Slots of the smallest index; it doubles as entries arrive.
const INDEX_SLOTS_MIN: usize = 64;

/// Slots the batch prefetch's probe looks at before giving up on a key: at most half full, a
/// present key is nearly always within the first two, and eight share a line.
const PREFETCH_PROBE_SLOTS_MAX: usize = 4;

/// Entries of the smallest slab; it doubles as entries arrive.
const SLAB_ENTRIES_MIN: usize = 16;

/// The index is grown before it holds more than one entry per this many slots. At half full a
/// linear probe for a present key reads 1.5 slots on average, nearly always in one cache line;
/// right after a doubling there are four slots per entry, 32 bytes, which is what
/// [`CACHE_ENTRY_OVERHEAD_BYTES`] charges.
const INDEX_SLOTS_PER_ENTRY_MIN: usize = 2;
const _: () = assert!(2 * INDEX_SLOTS_PER_ENTRY_MIN * 8 <= CACHE_ENTRY_OVERHEAD_BYTES as usize);

/// A record's key and value: together in the entry when they fit in
/// [`CACHE_INLINE_BYTES`], else on the heap (a large value is kept as the `Bytes` it came in).
enum KeyValue {
    Inline([u8; CACHE_INLINE_BYTES]),
    Heap { key: Box<[u8]>, value: Bytes },
}

/// One cached record: 224 bytes, aligned to 32 so that it spans at most four cache lines, and
/// nothing to chase for a key and value that fit inline (a 16-byte key and a 100-byte field's
/// stored row do).
#[repr(C, align(32))]
struct Entry {
    /// The key's full hash: compared before the key, and gives the entry's home slot.
    hash: u64,
    version: u64,
    expiry_ms: u64,
    /// Where the key's index entry was at its last write ([`IndexHint`], raw; 0 if unknown).
    index_hint: u64,
    value_len: u32,
    key_len: u16,
    /// CLOCK's reference bit: set by a hit, cleared by the passing hand.
    referenced: Cell<bool>,
    data: KeyValue,
}

const ENTRY_BYTES: usize = std::mem::size_of::<Entry>();
const _: () = assert!(ENTRY_BYTES == 224, "an entry is 224 bytes");
const _: () = assert!(KEY_BYTES_MAX <= u16::MAX as usize && VALUE_BYTES_MAX <= u32::MAX as usize);

/// Whether a record's key and value fit inside its entry.
fn fits_inline(key: &[u8], value: &[u8]) -> bool {
    key.len() + value.len() <= CACHE_INLINE_BYTES
}

impl Entry {
    fn new(hash: u64, key: &[u8], rec: CachedRecord) -> Entry {
        if fits_inline(key, &rec.value) {
            return Entry::inline(hash, key, &rec.value, rec.version, rec.expiry_ms);
        }
        Entry {
            hash,
            version: rec.version,
            expiry_ms: rec.expiry_ms,
            index_hint: 0,
            value_len: rec.value.len() as u32,
            key_len: key.len() as u16,
            referenced: Cell::new(false),
            data: KeyValue::Heap { key: key.into(), value: rec.value },
        }
    }

    /// An entry holding its key and value inside it; they must fit ([`fits_inline`]).
    fn inline(hash: u64, key: &[u8], value: &[u8], version: u64, expiry_ms: u64) -> Entry {
        let (key_len, value_len) = (key.len(), value.len());
        let mut bytes = [0u8; CACHE_INLINE_BYTES];
        bytes[..key_len].copy_from_slice(key);
        bytes[key_len..key_len + value_len].copy_from_slice(value);
        Entry {
            hash,
            version,
            expiry_ms,
            index_hint: 0,
            value_len: value_len as u32,
            key_len: key_len as u16,
            referenced: Cell::new(false),
            data: KeyValue::Inline(bytes),
        }
    }

    fn key(&self) -> &[u8] {
        match &self.data {
            KeyValue::Inline(bytes) => &bytes[..self.key_len as usize],
            KeyValue::Heap { key, .. } => key,
        }
    }

    fn value(&self) -> &[u8] {
        match &self.data {
            KeyValue::Inline(bytes) => {
                let at = self.key_len as usize;
                &bytes[at..at + self.value_len as usize]
            }
            KeyValue::Heap { value, .. } => value,
        }
    }
}

/// Where [`RecordCache::locate`] found a key: its hash, and its index slot and slab position if
/// it is cached.
#[derive(Debug, Clone, Copy)]
pub struct Located {
    hash: u64,
    found: Option<(usize, usize)>,
}

impl Located {
    /// Whether the key is cached.
    pub fn is_cached(&self) -> bool {
        self.found.is_some()
    }
}

/// What a cache hit returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedRecord {
    pub value: Bytes,
    pub version: u64,
    pub expiry_ms: u64,
}

/// A cache hit, borrowed from the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedRef<'a> {
    pub value: &'a [u8],
    pub version: u64,
    pub expiry_ms: u64,
}

/// Hit and miss counters plus current occupancy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub entries: u64,
    pub used_bytes: u64,
    pub capacity_bytes: u64,
}

/// An index slot: 0 if empty, else the low 32 bits of the hash above the entry's slab position
/// plus one.
fn slot_of(hash: u64, entry: usize) -> u64 {
    (hash << 32) | (entry as u64 + 1)
}

fn slot_entry(slot: u64) -> usize {
    (slot as u32) as usize - 1
}

/// Whether a slot may hold `hash` (its stored low 32 bits agree).
fn slot_matches(slot: u64, hash: u64) -> bool {
    slot >> 32 == hash & 0xFFFF_FFFF
}

/// The home slot of a stored slot value in an index of `mask + 1` slots.
fn slot_home(slot: u64, mask: usize) -> usize {
    (slot >> 32) as usize & mask
}

/// The bounded record cache of one shard. A capacity of 0 disables it.
pub struct RecordCache {
    hasher: ahash::RandomState,
    index: Vec<u64>,
    entries: Vec<Entry>,
    /// CLOCK's hand: the slab position it looks at next.
    hand: usize,
    used_bytes: u64,
    capacity_bytes: u64,
    hits: Cell<u64>,
    misses: Cell<u64>,
}

impl std::fmt::Debug for RecordCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordCache").field("stats", &self.stats()).finish()
    }
}

impl RecordCache {
    pub fn new(capacity_bytes: u64) -> RecordCache {
        let index = if capacity_bytes > 0 { vec![0; INDEX_SLOTS_MIN] } else { Vec::new() };
        RecordCache {
            hasher: ahash::RandomState::new(),
            index,
            entries: Vec::new(),
            hand: 0,
            used_bytes: 0,
            capacity_bytes,
            hits: Cell::new(0),
            misses: Cell::new(0),
        }
    }

    fn hash(&self, key: &[u8]) -> u64 {
        self.hasher.hash_one(key)
    }

    /// Looks a key up, counting a hit or a miss.
    pub fn get(&self, key: &[u8]) -> Option<CachedRecord> {
        self.get_ref(key).map(|e| CachedRecord {
            value: Bytes::copy_from_slice(e.value),
            version: e.version,
            expiry_ms: e.expiry_ms,
        })
    }

    /// Looks a key up without copying the value, counting a hit or a miss.
    pub fn get_ref(&self, key: &[u8]) -> Option<CachedRef<'_>> {
        let found = self.find(self.hash(key), key).map(|(_, i)| {
            let e = &self.entries[i];
            // Only the first hit since the hand passed writes: a store to an entry on every hit
            // would dirty its cache line, to be written back to memory later.
            if !e.referenced.get() {
                e.referenced.set(true);
            }
            CachedRef { value: e.value(), version: e.version, expiry_ms: e.expiry_ms }
        });
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.set(counter.get() + 1);
        found
    }

    /// Caches a record read from the log, with the hint for its index slot that the read's
    /// index lookup gave.
    pub fn insert(&mut self, key: &[u8], rec: CachedRecord, hint: IndexHint) {
        if self.capacity_bytes == 0 {
            return;
        }
        let hash = self.hash(key);
        if let Some((slot, i)) = self.find(hash, key) {
            self.remove_at(slot, i);
        }
        let weight = RecordCache::weight_of(key, &rec.value);
        let mut entry = Entry::new(hash, key, rec);
        entry.index_hint = hint.to_raw();
        self.push(entry, weight);
    }

    /// [`Self::write_through_at`] without a hint, locating the key itself.
    #[cfg(test)]
    pub fn write_through(
        &mut self,
        key: &[u8],
        value: &[u8],
        version: u64,
        expiry_ms: u64,
        insert_absent: bool,
    ) {
        let at = self.locate(key);
        self.write_through_at(at, key, value, version, expiry_ms, insert_absent, IndexHint::NONE);
    }

    /// Where `key` is cached, if it is, found once for a write that reads its [`IndexHint`]
    /// before the index is updated and hands it to [`Self::write_through_at`] after. Nothing
    /// may change the cache in between.
    pub fn locate(&self, key: &[u8]) -> Located {
        if self.capacity_bytes == 0 {
            return Located { hash: 0, found: None };
        }
        let hash = self.hash(key);
        Located { hash, found: self.find(hash, key) }
    }

    /// The index hint kept with a located key (none if it is not cached).
    pub fn index_hint(&self, at: &Located) -> IndexHint {
        at.found.map_or(IndexHint::NONE, |(_, i)| IndexHint::from_raw(self.entries[i].index_hint))
    }

    /// Brings the cache up to date with a write of `key` that has just been applied to the
    /// index (`at` from [`Self::locate`] before it, `hint` what the index returned), without allocating: a cached copy is overwritten in place when the new record fits
    /// inside its entry (cheaper than removing it: no backward shift, no slab move), and dropped
    /// otherwise. An absent key is cached only with `insert_absent`, and only when it fits
    /// inside an entry. The store asks for that when the writer read the row first (a
    /// read-modify-write, such as every write of a table with secondary indexes): such a row is
    /// read again by its next write. A blind put of an uncached key caches nothing, so a
    /// write-only load costs the cache nothing and cannot push out rows that are being read.
    #[allow(clippy::too_many_arguments)]
    pub fn write_through_at(
        &mut self,
        at: Located,
        key: &[u8],
        value: &[u8],
        version: u64,
        expiry_ms: u64,
        insert_absent: bool,
        hint: IndexHint,
    ) {
        if self.capacity_bytes == 0 || (self.entries.is_empty() && !insert_absent) {
            return;
        }
        let Located { hash, found } = at;
        let fits = fits_inline(key, value);
        match found {
            Some((_, i)) if fits => {
                let e = &mut self.entries[i];
                let (old_weight, referenced) =
                    (RecordCache::weight_of(e.key(), e.value()), e.referenced.get());
                *e = Entry::inline(hash, key, value, version, expiry_ms);
                e.referenced.set(referenced);
                e.index_hint = hint.to_raw();
                // An inline entry weighs no more than the heap one it may replace.
                self.used_bytes -= old_weight - RecordCache::weight_of(key, value);
            }
            Some((slot, i)) => self.remove_at(slot, i),
            None if insert_absent && fits => {
                let weight = RecordCache::weight_of(key, value);
                let mut entry = Entry::inline(hash, key, value, version, expiry_ms);
                entry.index_hint = hint.to_raw();
                self.push(entry, weight);
            }
            None => {}
        }
    }

    /// Adds an entry for a key that is not cached, evicting as needed to stay within capacity.
    fn push(&mut self, entry: Entry, weight: u64) {
        if weight > self.capacity_bytes {
            return;
        }
        while self.used_bytes + weight > self.capacity_bytes {
            self.evict_one();
        }
        if (self.entries.len() + 1) * INDEX_SLOTS_PER_ENTRY_MIN > self.index.len() {
            self.grow_index();
        }
        let i = self.entries.len();
        if i == self.entries.capacity() {
            self.grow_slab();
        }
        let hash = entry.hash;
        self.entries.push(entry);
        self.place(slot_of(hash, i));
        self.used_bytes += weight;
    }

    /// What caching this record charges against the capacity: its entry, its heap parts and its
    /// share of the index.
    pub fn weight_of(key: &[u8], value: &[u8]) -> u64 {
        let len = key.len() + value.len();
        let heap = if len <= CACHE_INLINE_BYTES { 0 } else { len as u64 };
        ENTRY_BYTES as u64 + heap + CACHE_ENTRY_OVERHEAD_BYTES
    }

    /// Drops the cached copy of a key (a delete, or a record compaction rewrote).
    pub fn remove(&mut self, key: &[u8]) {
        if self.entries.is_empty() {
            return;
        }
        if let Some((slot, i)) = self.find(self.hash(key), key) {
            self.remove_at(slot, i);
        }
    }

    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.get(),
            misses: self.misses.get(),
            entries: self.entries.len() as u64,
            used_bytes: self.used_bytes,
            capacity_bytes: self.capacity_bytes,
        }
    }

    /// The hash the cache keys `key` by, for the batch prefetch (`batch_prefetch.rs`).
    pub fn hash_of(&self, key: &[u8]) -> u64 {
        self.hash(key)
    }

    /// Batch prefetch, first step: asks for the index slot line where `hash`'s probe starts.
    pub fn prefetch_slot(&self, hash: u64) {
        if let Some(slot) = self.index.get(hash as usize & self.index.len().wrapping_sub(1)) {
            prefetch(slot);
        }
    }

    /// Batch prefetch, second step (its slot line asked for by [`Self::prefetch_slot`]): the
    /// slab position of the first entry whose slot agrees with `hash`, if any, with all of that
    /// entry's lines asked for. A hint only: the entry may hold another key of the same 32 hash
    /// bits, which costs a wasted line and nothing else.
    pub fn prefetch_entry(&self, hash: u64) -> Option<usize> {
        if self.entries.is_empty() {
            return None;
        }
        let mask = self.index.len() - 1;
        let mut s = hash as usize & mask;
        // A probe past a few slots leaves the line the first step brought in; stop there.
        for _ in 0..PREFETCH_PROBE_SLOTS_MAX {
            let slot = self.index[s];
            if slot == 0 {
                return None;
            }
            if slot_matches(slot, hash) {
                let i = slot_entry(slot);
                prefetch_bytes(&self.entries[i], ENTRY_BYTES);
                return Some(i);
            }
            s = (s + 1) & mask;
        }
        None
    }

    /// The index hint kept in slab position `i` (from [`Self::prefetch_entry`]), if `i` holds
    /// `hash`'s entry.
    pub fn hint_at(&self, i: usize, hash: u64) -> IndexHint {
        match self.entries.get(i) {
            Some(e) if e.hash == hash => IndexHint::from_raw(e.index_hint),
            _ => IndexHint::NONE,
        }
    }

    /// The index slot and slab position of `key`.
    fn find(&self, hash: u64, key: &[u8]) -> Option<(usize, usize)> {
        if self.entries.is_empty() {
            return None;
        }
        let mask = self.index.len() - 1;
        let mut s = hash as usize & mask;
        loop {
            let slot = self.index[s];
            if slot == 0 {
                return None;
            }
            if slot_matches(slot, hash) {
                let i = slot_entry(slot);
                let e = &self.entries[i];
                if e.hash == hash && e.key() == key {
                    return Some((s, i));
                }
            }
            s = (s + 1) & mask;
        }
    }

    /// The index slot that points at slab position `i`.
    fn slot_of_entry(&self, i: usize) -> usize {
        let mask = self.index.len() - 1;
        let mut s = self.entries[i].hash as usize & mask;
        while self.index[s] == 0 || slot_entry(self.index[s]) != i {
            assert!(self.index[s] != 0, "cache entry {i} has no index slot");
            s = (s + 1) & mask;
        }
        s
    }

    /// Puts a slot value in the first free slot from its home.
    fn place(&mut self, slot: u64) {
        let mask = self.index.len() - 1;
        let mut s = slot_home(slot, mask);
        while self.index[s] != 0 {
            s = (s + 1) & mask;
        }
        self.index[s] = slot;
    }

    /// Doubles the slab into a new allocation advised for huge pages before it is written.
    /// (`Vec`'s own growth lets the allocator move the old pages with mremap, which keeps them
    /// small; measured, two thirds of a 22 MB slab then stayed on 4 KiB pages.)
    fn grow_slab(&mut self) {
        let capacity = (self.entries.capacity() * 2).max(SLAB_ENTRIES_MIN);
        let mut entries = Vec::with_capacity(capacity);
        crate::huge_pages::advise(&entries);
        entries.append(&mut self.entries);
        self.entries = entries;
    }

    fn grow_index(&mut self) {
        let len = (self.index.len() * 2).max(INDEX_SLOTS_MIN);
        // A slot keeps 32 bits of the hash for its home position.
        assert!(len <= 1 << 32, "record cache index of {len} slots");
        self.index = vec![0; len];
        crate::huge_pages::advise(&self.index);
        for i in 0..self.entries.len() {
            self.place(slot_of(self.entries[i].hash, i));
        }
    }

    /// Removes the entry at slab position `i`, whose index slot is `slot`: the slot by backward
    /// shift (later slots of the probe run move up, so no tombstone is left), the entry by moving
    /// the slab's last entry into its place.
    fn remove_at(&mut self, slot: usize, i: usize) {
        let mask = self.index.len() - 1;
        let mut hole = slot;
        let mut s = (slot + 1) & mask;
        while self.index[s] != 0 {
            let home = slot_home(self.index[s], mask);
            // The slot at `s` may fill the hole if the hole lies between its home and `s`.
            if (s.wrapping_sub(home) & mask) >= (s.wrapping_sub(hole) & mask) {
                self.index[hole] = self.index[s];
                hole = s;
            }
            s = (s + 1) & mask;
        }
        self.index[hole] = 0;
        let last = self.entries.len() - 1;
        if i != last {
            let moved = self.slot_of_entry(last);
            self.index[moved] = slot_of(self.entries[last].hash, i);
        }
        let gone = self.entries.swap_remove(i);
        self.used_bytes -= RecordCache::weight_of(gone.key(), gone.value());
    }

    /// Evicts one entry: the first the hand finds without its reference bit, clearing the bits
    /// it passes.
    fn evict_one(&mut self) {
        loop {
            if self.hand >= self.entries.len() {
                self.hand = 0;
            }
            let e = &self.entries[self.hand];
            if e.referenced.replace(false) {
                self.hand += 1;
                continue;
            }
            let slot = self.slot_of_entry(self.hand);
            self.remove_at(slot, self.hand);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use std::collections::HashMap;

    fn rec(len: usize) -> CachedRecord {
        CachedRecord { value: Bytes::from(vec![7u8; len]), version: 1, expiry_ms: 0 }
    }

    #[test]
    fn stays_within_capacity_and_counts_hits() {
        let mut cache = RecordCache::new(64 * 1024);
        for i in 0..10_000u32 {
            cache.insert(&i.to_be_bytes(), rec(100), IndexHint::NONE);
        }
        let stats = cache.stats();
        assert!(stats.used_bytes <= 64 * 1024, "{stats:?}");
        assert!(stats.entries > 0);
        let present = (0..10_000u32).filter(|i| cache.get(&i.to_be_bytes()).is_some()).count();
        let stats = cache.stats();
        assert_eq!((stats.hits + stats.misses) as usize, 10_000);
        assert_eq!(stats.hits as usize, present);
        assert_eq!(stats.entries as usize, present);
    }

    #[test]
    fn an_index_hint_follows_its_key_until_the_key_leaves() {
        let mut cache = RecordCache::new(1 << 20);
        let (h1, h2) = (IndexHint::from_raw(1 << 32 | 5), IndexHint::from_raw(2 << 32 | 9));
        assert_eq!(cache.index_hint(&cache.locate(b"k")), IndexHint::NONE, "not cached");
        cache.insert(b"k", rec(3), h1);
        cache.insert(b"other", rec(3), IndexHint::NONE);
        assert_eq!(cache.index_hint(&cache.locate(b"k")), h1, "kept by a read's insert");
        let at = cache.locate(b"k");
        cache.write_through_at(at, b"k", b"new", 2, 0, false, h2);
        assert_eq!(cache.index_hint(&cache.locate(b"k")), h2, "replaced by a write");
        assert_eq!(cache.get(b"k").map(|r| r.value), Some(Bytes::from_static(b"new")));
        assert_eq!(cache.index_hint(&cache.locate(b"other")), IndexHint::NONE);
        // A write too large for the entry drops the key, and its hint with it.
        let at = cache.locate(b"k");
        cache.write_through_at(at, b"k", &[1; CACHE_INLINE_BYTES], 3, 0, false, h1);
        assert_eq!(cache.index_hint(&cache.locate(b"k")), IndexHint::NONE);
        // An absent key cached by a read-modify-write keeps the hint it is given.
        let at = cache.locate(b"rmw");
        cache.write_through_at(at, b"rmw", b"v", 1, 0, true, h2);
        assert_eq!(cache.index_hint(&cache.locate(b"rmw")), h2);
        cache.remove(b"rmw");
        assert_eq!(cache.index_hint(&cache.locate(b"rmw")), IndexHint::NONE);
    }

    #[test]
    fn the_prefetch_steps_find_each_cached_keys_entry_and_hint() {
        let mut cache = RecordCache::new(1 << 20);
        let hint = |i: u32| IndexHint::from_raw(1 << 32 | (u64::from(i) + 1));
        for i in 0..2_000u32 {
            cache.insert(&i.to_be_bytes(), rec(10), hint(i));
        }
        let mut found = 0;
        for i in 0..2_000u32 {
            let key = i.to_be_bytes();
            let h = cache.hash_of(&key);
            cache.prefetch_slot(h);
            // A key further than PREFETCH_PROBE_SLOTS_MAX from its home is not followed.
            let Some(at) = cache.prefetch_entry(h) else { continue };
            assert_eq!(Some(at), cache.locate(&key).found.map(|(_, e)| e), "key {i}");
            assert_eq!(cache.hint_at(at, h), hint(i), "key {i}");
            found += 1;
        }
        assert!(found >= 1_900, "only {found} of 2000 cached keys found near their home");
        let absent = cache.hash_of(b"absent");
        assert_eq!(cache.prefetch_entry(absent).map(|at| cache.hint_at(at, absent)), None);
        assert_eq!(cache.hint_at(usize::MAX, absent), IndexHint::NONE, "a stale position");
        let empty = RecordCache::new(0);
        empty.prefetch_slot(7);
        assert_eq!(empty.prefetch_entry(7), None, "a disabled cache has nothing to find");
    }

    #[test]
    fn remove_invalidates_and_zero_capacity_disables() {
        let mut cache = RecordCache::new(1 << 20);
        cache.insert(b"k", rec(3), IndexHint::NONE);
        cache.remove(b"k");
        assert!(cache.get(b"k").is_none());
        let mut off = RecordCache::new(0);
        off.insert(b"k", rec(3), IndexHint::NONE);
        assert!(off.get(b"k").is_none());
        off.remove(b"k");
        assert_eq!(off.stats().entries, 0);
    }

    #[test]
    fn inline_and_heap_keys_and_values_round_trip() {
        let mut cache = RecordCache::new(1 << 20);
        let long_key = vec![9u8; CACHE_INLINE_BYTES + 1];
        let cases: [(&[u8], usize); 5] = [
            (b"", 0),
            (b"short", CACHE_INLINE_BYTES - 5),
            (b"shorts", CACHE_INLINE_BYTES - 5),
            (&long_key, 0),
            (&long_key[..10], 5000),
        ];
        for (key, len) in cases {
            cache.insert(key, rec(len), IndexHint::NONE);
            let got = cache.get(key).expect("cached");
            assert_eq!(got, rec(len), "key of {} bytes, value of {len}", key.len());
        }
        assert_eq!(cache.stats().entries, 5);
    }

    #[test]
    fn a_write_updates_a_cached_copy_in_place_and_caches_an_absent_key_only_when_asked() {
        let mut cache = RecordCache::new(1 << 20);
        // A blind write of an absent key caches nothing.
        cache.write_through(b"a", b"v1", 1, 0, false);
        assert!(cache.get(b"a").is_none());
        // A read-modify-write does.
        cache.write_through(b"a", b"v2", 2, 7, true);
        let got = cache.get(b"a").expect("cached by the write");
        assert_eq!((&got.value[..], got.version, got.expiry_ms), (&b"v2"[..], 2, 7));
        // A cached copy follows every write, in place: same slab position, same charge.
        let (_, at) = cache.find(cache.hash(b"a"), b"a").expect("cached");
        let used = cache.stats().used_bytes;
        cache.write_through(b"a", b"v3", 3, 0, false);
        assert_eq!(cache.find(cache.hash(b"a"), b"a").map(|(_, i)| i), Some(at));
        assert_eq!(cache.get(b"a").map(|r| r.value), Some(Bytes::from_static(b"v3")));
        assert_eq!(cache.stats().used_bytes, used);
        // A value too long for an entry is dropped rather than copied to the heap.
        cache.write_through(b"a", &[1; CACHE_INLINE_BYTES], 4, 0, true);
        assert!(cache.get(b"a").is_none());
        assert_eq!(cache.stats().used_bytes, 0);
        // A heap entry overwritten by an inline value is charged as inline.
        cache.insert(b"h", rec(10_000), IndexHint::NONE);
        cache.write_through(b"h", b"small", 5, 0, false);
        assert_eq!(cache.stats().used_bytes, RecordCache::weight_of(b"h", b"small"));
        let mut off = RecordCache::new(0);
        off.write_through(b"a", b"v", 1, 0, true);
        assert_eq!(off.stats().entries, 0);
    }

    #[test]
    fn heap_parts_are_charged() {
        let small = RecordCache::weight_of(b"k", &[0; 10]);
        assert_eq!(small, RecordCache::weight_of(b"k", &[0; CACHE_INLINE_BYTES - 1]));
        let big = RecordCache::weight_of(b"k", &[0; 10_000]);
        assert_eq!(big, small + 10_001);
        let mut cache = RecordCache::new(1 << 20);
        cache.insert(b"k", rec(10_000), IndexHint::NONE);
        assert_eq!(cache.stats().used_bytes, big);
    }

    #[test]
    fn a_record_larger_than_the_capacity_is_not_cached_and_drops_the_old_copy() {
        let mut cache = RecordCache::new(4096);
        cache.insert(b"k", rec(10), IndexHint::NONE);
        cache.insert(b"k", rec(8192), IndexHint::NONE);
        assert!(cache.get(b"k").is_none());
        assert_eq!(cache.stats().used_bytes, 0);
    }

    #[test]
    fn entries_read_again_outlive_entries_read_once() {
        let weight = RecordCache::weight_of(&0u32.to_be_bytes(), &[7; 100]);
        let mut cache = RecordCache::new(weight * 100);
        for i in 0..100u32 {
            cache.insert(&i.to_be_bytes(), rec(100), IndexHint::NONE);
        }
        // The first 50 are read again; then 50 records are read once (a scan).
        for i in 0..50u32 {
            assert!(cache.get(&i.to_be_bytes()).is_some());
        }
        for i in 1000..1050u32 {
            cache.insert(&i.to_be_bytes(), rec(100), IndexHint::NONE);
        }
        let kept = (0..50u32).filter(|i| cache.get(&i.to_be_bytes()).is_some()).count();
        assert_eq!(kept, 50, "every record read again survives the scan");
    }

    /// Random inserts, writes, removes and gets against a model of the store's truth: a hit
    /// always returns the key's last value and never a removed one, a write keeps its key
    /// exactly when it says it does, every entry stays reachable, and
    /// the charged bytes are exactly the sum of the entries' weights, within the capacity.
    #[test]
    fn matches_a_model_under_random_operations() {
        for seed in 0..20u64 {
            let mut rng = StdRng::seed_from_u64(seed);
            let capacity = rng.gen_range(1_000..200_000);
            let mut cache = RecordCache::new(capacity);
            let mut model: HashMap<Vec<u8>, CachedRecord> = HashMap::new();
            for step in 0..20_000u64 {
                let key = format!("k{}", rng.gen_range(0..2_000)).into_bytes();
                match rng.gen_range(0..10) {
                    0..=3 => {
                        let len = rng.gen_range(0..300);
                        let r = CachedRecord {
                            value: Bytes::from(vec![step as u8; len]),
                            version: step,
                            expiry_ms: 0,
                        };
                        cache.insert(&key, r.clone(), IndexHint::NONE);
                        model.insert(key, r);
                    }
                    4 => {
                        cache.remove(&key);
                        model.remove(&key);
                    }
                    5 => {
                        let len = rng.gen_range(0..300);
                        let value = vec![step as u8; len];
                        let insert_absent = rng.gen_bool(0.5);
                        let was_cached = cache.find(cache.hash(&key), &key).is_some();
                        cache.write_through(&key, &value, step, 0, insert_absent);
                        let r =
                            CachedRecord { value: Bytes::from(value), version: step, expiry_ms: 0 };
                        let kept = cache.find(cache.hash(&key), &key).is_some();
                        let fits = fits_inline(&key, &r.value);
                        assert_eq!(
                            kept,
                            fits && (was_cached || insert_absent),
                            "seed {seed} step {step}"
                        );
                        model.insert(key, r);
                    }
                    _ => {
                        if let Some(got) = cache.get(&key) {
                            assert_eq!(Some(&got), model.get(&key), "seed {seed} step {step}");
                        }
                    }
                }
            }
            let mut weights = 0;
            for e in &cache.entries {
                let (key, value) = (e.key(), e.value());
                weights += RecordCache::weight_of(key, value);
                assert!(cache.find(e.hash, key).is_some(), "seed {seed}: entry unreachable");
                assert_eq!(Some(value), model.get(key).map(|r| &r.value[..]), "seed {seed}");
            }
            let stats = cache.stats();
            assert_eq!(stats.used_bytes, weights, "seed {seed}");
            assert!(stats.used_bytes <= capacity, "seed {seed}");
            let used_slots = cache.index.iter().filter(|&&s| s != 0).count();
            assert_eq!(used_slots, cache.entries.len(), "seed {seed}");
        }
    }
}
