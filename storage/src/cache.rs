//! The record cache: a bounded map from key to the record's value, version and expiry.
//!
//! It is keyed by key, not by location, so a cache hit costs one hash lookup and never touches the
//! ordered index; every write or delete of a key removes its cached copy first. Capacity is in
//! bytes: each record is charged its key, its value and [`CACHE_ENTRY_OVERHEAD_BYTES`], which is
//! what makes the key-size effect measurable (longer keys, fewer records). Eviction is
//! quick_cache's CLOCK-Pro style policy, which resists scans better than LRU.

use std::cell::Cell;

use bytes::Bytes;

use crate::constants::CACHE_ENTRY_OVERHEAD_BYTES;

/// A cached record: everything a get returns.
#[derive(Debug, Clone)]
pub struct CachedRecord {
    pub value: Bytes,
    pub version: u64,
    pub expiry_ms: u64,
}

#[derive(Debug, Clone, Copy)]
struct ByteWeighter;

impl quick_cache::Weighter<Box<[u8]>, CachedRecord> for ByteWeighter {
    fn weight(&self, key: &Box<[u8]>, rec: &CachedRecord) -> u64 {
        key.len() as u64 + rec.value.len() as u64 + CACHE_ENTRY_OVERHEAD_BYTES
    }
}

type Inner = quick_cache::unsync::Cache<
    Box<[u8]>,
    CachedRecord,
    ByteWeighter,
    ahash::RandomState,
    quick_cache::unsync::DefaultLifecycle<Box<[u8]>, CachedRecord>,
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
    pub fn get(&self, key: &[u8]) -> Option<&CachedRecord> {
        let found = self.inner.as_ref().and_then(|c| c.get(key));
        let counter = if found.is_some() { &self.hits } else { &self.misses };
        counter.set(counter.get() + 1);
        found
    }

    pub fn insert(&mut self, key: &[u8], rec: CachedRecord) {
        if let Some(c) = self.inner.as_mut() {
            c.insert(key.into(), rec);
        }
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
}
