//! Blind puts leave their index update deferred and applied in groups (`deferred_puts.rs`);
//! this proves that nothing can tell, except the counters that show the grouping happened.
//!
//! On the simulated disk, puts of keys the record cache does not hold are appended back to
//! back (`Store::put_now`, nothing else touching the store in between, as the node's inline
//! path does), and then every kind of access must see them exactly as if each had updated the
//! index at once: a get of each key, a put of the same key twice in a row (the later wins), a
//! delete right after a deferred put, a scan over all of them, the live-byte count compaction
//! decides by (each replaced record dead exactly once), and a checkpoint, a compaction and a
//! reopen after them. The store's counters must show that the updates were deferred and that
//! most were applied in full groups.

mod common;

use ringstore_storage::{record, Durability, ManualClock, ScanRequest, WriteOptions};

const NOSYNC: Durability = Durability::NoSync;

/// Keys written blindly in one run of puts: not a multiple of the group size, so the last
/// group is partial.
const KEYS: u32 = 75;

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:05}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-round-{round}").into_bytes()
}

#[test]
fn every_reader_sees_deferred_puts_as_if_applied_at_once() {
    common::run(|| async {
        let disk = common::sim(23);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        let put = |k: &[u8], v: &[u8]| {
            let appended = store.put_now(k, v, WriteOptions::durability(NOSYNC)).expect("put");
            assert!(appended.wait.is_none(), "a NoSync put is acknowledged at once");
        };

        // Round 0 inserts every key, round 1 overwrites each, and key 0 is written a third
        // time right after its second write: all blind, back to back.
        for round in 0..2 {
            for i in 0..KEYS {
                put(&key(i), &value(i, round));
            }
        }
        put(&key(0), &value(0, 2));
        // A get right after the deferred put of a new key.
        put(b"late", b"late value");
        let got = store.get(b"late").await.expect("get").map(|v| v.value.to_vec());
        assert_eq!(got.as_deref(), Some(&b"late value"[..]), "a get right after the put");
        // A delete right after the deferred put of a new key.
        put(b"short-lived", b"value");
        let (existed, _) = store.delete_now(b"short-lived", NOSYNC).expect("delete");
        assert!(existed, "the delete saw the deferred put's key");
        assert_eq!(store.get(b"short-lived").await.expect("get"), None, "deleted");
        // And one of the keys written above, deferred again.
        put(&key(1), &value(1, 2));
        let (existed, _) = store.delete_now(&key(1), NOSYNC).expect("delete");
        assert!(existed, "the delete saw the deferred put's key");

        let counters = store.stats().counters;
        assert!(counters.deferred_puts >= u64::from(2 * KEYS), "{counters:?}");
        assert!(
            counters.deferred_puts >= 8 * counters.deferred_groups,
            "puts back to back are applied in groups: {counters:?}"
        );

        let expected = |i: u32| match i {
            0 => Some(value(0, 2)),
            1 => None,
            _ => Some(value(i, 1)),
        };
        let check_all = |when: &'static str| {
            let store = &store;
            async move {
                for i in 0..KEYS {
                    let got = store.get(&key(i)).await.expect("get").map(|v| v.value.to_vec());
                    assert_eq!(got, expected(i), "{when}: key {i}");
                }
                let page = store.scan(&ScanRequest::prefix(b"key-", 1000)).await.expect("scan");
                let keys: Vec<Vec<u8>> = page.rows.iter().map(|r| r.key.to_vec()).collect();
                let want: Vec<Vec<u8>> = (0..KEYS).filter(|&i| i != 1).map(key).collect();
                assert_eq!(keys, want, "{when}: the scan");
            }
        };
        check_all("after the puts").await;

        // Each replaced record was marked dead once: live bytes are the live keys' records.
        let live: u64 = (0..KEYS)
            .filter_map(|i| expected(i).map(|v| record::padded_len(key(i).len(), v.len())))
            .sum::<u64>()
            + record::padded_len(b"late".len(), b"late value".len());
        assert_eq!(store.stats().live_bytes, live, "live bytes after the deferred puts");

        store.checkpoint().await.expect("checkpoint");
        store.compact().await.expect("compact");
        check_all("after a checkpoint and a compaction").await;
        store.close().await.expect("close");

        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        for i in 0..KEYS {
            let got = store.get(&key(i)).await.expect("get").map(|v| v.value.to_vec());
            assert_eq!(got, expected(i), "after reopening: key {i}");
        }
        assert_eq!(store.stats().live_bytes, live, "live bytes after reopening");
    });
}
