//! Proves that `Store::warm_cache` fills the record cache from the log with only live records:
//! after a reopen (empty cache) and a warm-up, every live key is a cache hit with its newest
//! value, overwritten and deleted versions are never cached, and a small cache stops the warm-up
//! at its capacity instead of churning.

mod common;

use ringstore_storage::{Durability, ManualClock, StoreConfig, WriteOptions};

const KEYS: u32 = 3000;

fn value(k: u32, round: u32) -> Vec<u8> {
    let mut v = vec![0u8; 200];
    v[..4].copy_from_slice(&k.to_be_bytes());
    v[4..8].copy_from_slice(&round.to_be_bytes());
    v
}

async fn fill(disk: &ringstore_storage::disk::sim::SimDisk, clock: &ManualClock) {
    let store = common::open_sim(disk, common::test_config(), clock).await.expect("open");
    let nosync = WriteOptions::durability(Durability::NoSync);
    for round in 0..3 {
        for k in 0..KEYS {
            store.put(&k.to_be_bytes(), &value(k, round), nosync).await.expect("put");
        }
    }
    for k in (0..KEYS).step_by(5) {
        store.delete(&k.to_be_bytes(), Durability::NoSync).await.expect("delete");
    }
    store.close().await.expect("close");
}

#[test]
fn warm_up_caches_exactly_the_live_records() {
    common::run(|| async {
        let (disk, clock) = (common::sim(7), ManualClock::new(common::T0_MS));
        fill(&disk, &clock).await;
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        let report = store.warm_cache().await.expect("warm");
        let live = KEYS - KEYS.div_ceil(5);
        assert_eq!(report.records_cached, u64::from(live), "{report:?}");
        let before = store.stats().cache;
        for k in 0..KEYS {
            let got = store.get(&k.to_be_bytes()).await.expect("get");
            if k % 5 == 0 {
                assert!(got.is_none(), "deleted key {k} served");
            } else {
                assert_eq!(got.expect("live").value.to_vec(), value(k, 2), "key {k}");
            }
        }
        let after = store.stats().cache;
        assert_eq!(after.hits - before.hits, u64::from(live), "every live key is a hit");
        assert_eq!(after.misses - before.misses, u64::from(KEYS - live), "only deleted keys miss");
    });
}

#[test]
fn warm_up_stops_at_cache_capacity() {
    common::run(|| async {
        let (disk, clock) = (common::sim(8), ManualClock::new(common::T0_MS));
        fill(&disk, &clock).await;
        let capacity = 64 * 1024;
        let config = StoreConfig { cache_capacity_bytes: capacity, ..common::test_config() };
        let store = common::open_sim(&disk, config, &clock).await.expect("reopen");
        let report = store.warm_cache().await.expect("warm");
        let cache = store.stats().cache;
        assert!(report.records_cached > 0 && report.records_cached < u64::from(KEYS), "{report:?}");
        assert_eq!(cache.entries, report.records_cached, "nothing cached was evicted again");
        assert!(cache.used_bytes <= capacity, "{cache:?}");
    });
}
