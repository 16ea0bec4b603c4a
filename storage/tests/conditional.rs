//! The store's check-then-write primitives: stamps change on every write of their key,
//! `write_batch_if` writes nothing when a stamp no longer matches, and `delete_range` deletes
//! every key of its bounds with one record, counting the live ones.

mod common;

use common::{open_sim, run, sim, test_config, T0_MS};
use std::ops::Bound::{Excluded, Included, Unbounded};

use ringstore_storage::constants::KEY_BYTES_MAX;
use ringstore_storage::{BatchOp, Durability, KeyRange, ManualClock, ScanRequest, WriteOptions};

const SYNC: Durability = Durability::Sync;

fn put(key: &[u8], value: &[u8]) -> BatchOp {
    BatchOp::Put { key: key.to_vec(), value: value.to_vec(), version: None, expiry_ms: 0 }
}

#[test]
fn write_batch_if_refuses_when_a_stamp_moved() {
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let store = open_sim(&disk, test_config(), &clock).await.unwrap();
        let absent = store.stamp(b"k");
        store.put(b"k", b"v1", WriteOptions::durability(SYNC)).await.unwrap();
        let (value, stamp) = store.get_stamped(b"k").await.unwrap();
        assert_eq!(value.unwrap().value.as_ref(), b"v1");
        assert_ne!(stamp, absent, "a write changes the stamp");

        // Another write lands between the read and the conditional write: nothing is written.
        store.put(b"k", b"v2", WriteOptions::durability(SYNC)).await.unwrap();
        let refused = store.write_batch_if(&[put(b"k", b"mine")], &[(b"k", stamp)], SYNC).await;
        assert_eq!(refused.unwrap(), None);
        assert_eq!(store.get(b"k").await.unwrap().unwrap().value.as_ref(), b"v2");

        // With the current stamp the whole batch goes in, including keys without a stamp.
        let current = store.stamp(b"k");
        let ops = [put(b"k", b"mine"), put(b"other", b"x")];
        assert!(store.write_batch_if(&ops, &[(b"k", current)], SYNC).await.unwrap().is_some());
        assert_eq!(store.get(b"k").await.unwrap().unwrap().value.as_ref(), b"mine");

        // A delete moves the stamp back to "absent", and a stamp of an absent key guards an
        // insert: a second insert with the same stale stamp is refused.
        store.delete(b"k", SYNC).await.unwrap();
        assert_eq!(store.stamp(b"k"), absent);
        assert!(store
            .write_batch_if(&[put(b"k", b"1")], &[(b"k", absent)], SYNC)
            .await
            .unwrap()
            .is_some());
        assert!(store
            .write_batch_if(&[put(b"k", b"2")], &[(b"k", absent)], SYNC)
            .await
            .unwrap()
            .is_none());
        store.close().await.unwrap();
    });
}

#[test]
fn delete_range_deletes_its_bounds_in_one_record_and_counts_live_keys() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let store = open_sim(&disk, test_config(), &clock).await.unwrap();
        for i in 0..10u8 {
            store
                .put(&[b'a', i], b"v", WriteOptions::durability(Durability::NoSync))
                .await
                .unwrap();
        }
        // An expired key is invisible, so it is not counted (it leaves the index all the same).
        let opts = WriteOptions { expiry_ms: T0_MS + 1, ..WriteOptions::durability(SYNC) };
        store.put(b"a\x05x", b"v", opts).await.unwrap();
        store.put(b"b", b"outside", WriteOptions::durability(SYNC)).await.unwrap();
        clock.advance(1);

        // (a\x02, a\x05]: three keys; the expired a\x05x is past the end.
        let (start, end) = ([b'a', 2], [b'a', 5]);
        let r = store.delete_range(Excluded(&start), Included(&end), SYNC).await.unwrap();
        assert_eq!(r.deleted, 3);
        // The rest of `a`: 7 live keys and the expired one.
        let r = store.delete_range(Included(b"a"), Excluded(b"b"), SYNC).await.unwrap();
        assert_eq!(r.deleted, 7);
        // Nothing left to delete: the record is written all the same (one LSN); bounds that
        // admit no key write nothing.
        let next = store.stats().next_lsn;
        let r = store.delete_range(Included(b"a"), Excluded(b"b"), SYNC).await.unwrap();
        assert_eq!((r.deleted, store.stats().next_lsn), (0, next + 1));
        let r = store.delete_range(Included(b"b"), Excluded(b"a"), SYNC).await.unwrap();
        assert_eq!((r.deleted, store.stats().next_lsn), (0, next + 1));
        let left = store
            .scan(&ScanRequest { range: KeyRange::Prefix(vec![]), ..ScanRequest::prefix(b"", 100) })
            .await
            .unwrap();
        let keys: Vec<&[u8]> = left.rows.iter().map(|r| r.key.as_ref()).collect();
        assert_eq!(keys, [b"b".as_slice()]);

        // A start bound past the key limit is refused, naming it.
        let long = vec![1u8; KEY_BYTES_MAX];
        let e = store.delete_range(Excluded(&long), Unbounded, SYNC).await.unwrap_err();
        assert!(e.to_string().contains(&KEY_BYTES_MAX.to_string()), "{e}");
        // An unbounded range deletes everything, and a reopen agrees.
        let r = store.delete_range(Unbounded, Unbounded, SYNC).await.unwrap();
        assert_eq!(r.deleted, 1);
        drop(store);
        let store = open_sim(&disk, test_config(), &clock).await.unwrap();
        assert_eq!(store.stats().keys, 0);
        store.close().await.unwrap();
    });
}
