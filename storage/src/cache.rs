//! The record cache: a bounded map from key to the record's value, version and expiry.
//!
//! It is keyed by key, not by location, so a cache hit costs one hash lookup and never touches the
//! ordered index; every write or delete of a key removes its cached copy first. Capacity is in
//! bytes: each record is charged the bytes it really occupies (its entry, any heap part, and
//! [`CACHE_ENTRY_OVERHEAD_BYTES`] of table and slab metadata), which is what makes the key-size
//! effect measurable (longer keys, fewer records). Eviction is quick_cache's CLOCK-Pro style
//! policy, which resists scans better than LRU.
//!
//! Short keys and values live inside the cache entry itself. On the development machines a
//! dependent DRAM miss costs 200-300 ns (docs/BENCHMARKS.md), and a hit on a random key used to
//! chase a boxed key and a separately allocated value header after the table slot and the entry;
//! inline, a hit reads the slot and one entry.

use std::borrow::Borrow;
use std::cell::Cell;
use std::hash::{Hash, Hasher};

use bytes::Bytes;

use crate::constants::{
    CACHE_ENTRY_OVERHEAD_BYTES, CACHE_KEY_INLINE_BYTES, CACHE_VALUE_INLINE_BYTES,
};

/// Bytes stored inline up to `N`, on the heap beyond.
#[derive(Clone)]
enum SmallBytes<const N: usize> {
    Inline { len: u8, bytes: [u8; N] },
    Heap(Bytes),
}

impl<const N: usize> SmallBytes<N> {
    fn new(data: &[u8]) -> Self {
        if data.len() <= N {
            let mut bytes = [0u8; N];
            bytes[..data.len()].copy_from_slice(data);
            SmallBytes::Inline { len: data.len() as u8, bytes }
        } else {
            SmallBytes::Heap(Bytes::copy_from_slice(data))
        }
    }

    fn from_bytes(data: Bytes) -> Self {
        if data.len() <= N {
            SmallBytes::new(&data)
        } else {
            SmallBytes::Heap(data)
        }
    }

    fn as_slice(&self) -> &[u8] {
        match self {
            SmallBytes::Inline { len, bytes } => &bytes[..*len as usize],
            SmallBytes::Heap(b) => b,
        }
    }

    fn heap_bytes(&self) -> u64 {
        match self {
            SmallBytes::Inline { .. } => 0,
            SmallBytes::Heap(b) => b.len() as u64,
        }
    }
}

const _: () = assert!(CACHE_KEY_INLINE_BYTES <= u8::MAX as usize);
const _: () = assert!(CACHE_VALUE_INLINE_BYTES <= u8::MAX as usize);

/// A cache key; hashes and compares exactly like the `[u8]` it holds, so lookups take `&[u8]`.
#[derive(Clone)]
struct CacheKey(SmallBytes<CACHE_KEY_INLINE_BYTES>);

impl Hash for CacheKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.as_slice().hash(state);
    }
}

impl PartialEq for CacheKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.as_slice() == other.0.as_slice()
    }
}

impl Eq for CacheKey {}

impl Borrow<[u8]> for CacheKey {
    fn borrow(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// A cached record: everything a get returns.
#[derive(Clone)]
struct Entry {
    value: SmallBytes<CACHE_VALUE_INLINE_BYTES>,
    version: u64,
    expiry_ms: u64,
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

/// Bytes one cached record occupies: its entry and key slot, heap parts, table metadata.
fn weight(key: &CacheKey, entry: &Entry) -> u64 {
    (std::mem::size_of::<CacheKey>() + std::mem::size_of::<Entry>()) as u64
        + key.0.heap_bytes()
        + entry.value.heap_bytes()
        + CACHE_ENTRY_OVERHEAD_BYTES
}

#[derive(Debug, Clone, Copy)]
struct ByteWeighter;

impl quick_cache::Weighter<CacheKey, Entry> for ByteWeighter {
    fn weight(&self, key: &CacheKey, entry: &Entry) -> u64 {
        weight(key, entry)
    }
}

type Inner = quick_cache::unsync::Cache<
    CacheKey,
    Entry,
    ByteWeighter,
    ahash::RandomState,
    quick_cache::unsync::DefaultLifecycle<CacheKey, Entry>,
>;

/// Hit and miss counters plus current occupancy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub entries: u64,
    pub used_bytes: u64,
    pub capacity_bytes: u64,
}

/// The bounded record cache of one shard. A capacity of 0 disables it.
pub struct RecordCache {
    inner: Option<Inner>,
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
        let inner = (capacity_bytes > 0).then(|| {
            // A guess at the item count only sizes the initial table; 256 B is a small record.
            let items = (capacity_bytes / 256).clamp(16, 1 << 22) as usize;
            Inner::with(
                items,
                capacity_bytes,
                ByteWeighter,
                ahash::RandomState::new(),
                Default::default(),
            )
        });
        RecordCache { inner, capacity_bytes, hits: Cell::new(0), misses: Cell::new(0) }
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
        let found = self.inner.as_ref().and_then(|c| c.get(key)).map(|e| CachedRef {
            value: e.value.as_slice(),
            version: e.version,
            expiry_ms: e.expiry_ms,
        });
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.set(counter.get() + 1);
        found
    }

    pub fn insert(&mut self, key: &[u8], rec: CachedRecord) {
        if let Some(c) = self.inner.as_mut() {
            let entry = Entry {
                value: SmallBytes::from_bytes(rec.value),
                version: rec.version,
                expiry_ms: rec.expiry_ms,
            };
            c.insert(CacheKey(SmallBytes::new(key)), entry);
        }
    }

    /// What caching this record would charge against the capacity.
    pub fn weight_of(key: &[u8], value: &[u8]) -> u64 {
        let key = CacheKey(SmallBytes::new(key));
        let entry = Entry { value: SmallBytes::new(value), version: 0, expiry_ms: 0 };
        weight(&key, &entry)
    }

    /// Drops the cached copy of a key; called before every write or delete of that key.
    pub fn remove(&mut self, key: &[u8]) {
        if let Some(c) = self.inner.as_mut() {
            if !c.is_empty() {
                c.remove(key);
            }
        }
    }

    pub fn stats(&self) -> CacheStats {
        let (entries, used_bytes) =
            self.inner.as_ref().map_or((0, 0), |c| (c.len() as u64, c.weight()));
        CacheStats {
            hits: self.hits.get(),
            misses: self.misses.get(),
            entries,
            used_bytes,
            capacity_bytes: self.capacity_bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(len: usize) -> CachedRecord {
        CachedRecord { value: Bytes::from(vec![7u8; len]), version: 1, expiry_ms: 0 }
    }

    #[test]
    fn stays_within_capacity_and_counts_hits() {
        let mut cache = RecordCache::new(64 * 1024);
        for i in 0..10_000u32 {
            cache.insert(&i.to_be_bytes(), rec(100));
        }
        let stats = cache.stats();
        assert!(stats.used_bytes <= 64 * 1024, "{stats:?}");
        assert!(stats.entries > 0);
        let present = (0..10_000u32).filter(|i| cache.get(&i.to_be_bytes()).is_some()).count();
        let stats = cache.stats();
        assert_eq!((stats.hits + stats.misses) as usize, 10_000);
        assert_eq!(stats.hits as usize, present);
    }

    #[test]
    fn remove_invalidates_and_zero_capacity_disables() {
        let mut cache = RecordCache::new(1 << 20);
        cache.insert(b"k", rec(3));
        cache.remove(b"k");
        assert!(cache.get(b"k").is_none());
        let mut off = RecordCache::new(0);
        off.insert(b"k", rec(3));
        assert!(off.get(b"k").is_none());
    }

    #[test]
    fn inline_and_heap_keys_and_values_round_trip() {
        let mut cache = RecordCache::new(1 << 20);
        let long_key = vec![9u8; CACHE_KEY_INLINE_BYTES + 1];
        let cases: [(&[u8], usize); 4] = [
            (b"", 0),
            (b"short", CACHE_VALUE_INLINE_BYTES),
            (&long_key, CACHE_VALUE_INLINE_BYTES + 1),
            (&long_key[..CACHE_KEY_INLINE_BYTES], 5000),
        ];
        for (key, len) in cases {
            cache.insert(key, rec(len));
            let got = cache.get(key).expect("cached");
            assert_eq!(got, rec(len), "key of {} bytes, value of {len}", key.len());
        }
        assert_eq!(cache.stats().entries, 4);
    }

    #[test]
    fn heap_parts_are_charged() {
        let small = RecordCache::weight_of(b"k", &[0; 10]);
        assert_eq!(small, RecordCache::weight_of(b"k", &[0; CACHE_VALUE_INLINE_BYTES]));
        let big = RecordCache::weight_of(b"k", &[0; 10_000]);
        assert_eq!(big, small + 10_000);
    }
}
