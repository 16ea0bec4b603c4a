//! The store's check-then-write primitives: stamps change on every write of their key,
//! `write_batch_if` writes nothing when a stamp no longer matches, and `delete_range` deletes a
//! range's live keys up to its limits in one batch, with a resume key.

mod common;

use common::{open_sim, run, sim, test_config, T0_MS};
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
fn delete_range_honours_limit_direction_expiry_and_resume() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let store = open_sim(&disk, test_config(), &clock).await.unwrap();
        for i in 0..10u8 {
            store
                .put(&[b'a', i], b"v", WriteOptions::durability(Durability::NoSync))
                .await
                .unwrap();
        }
        // An expired key is invisible, so it is not counted (or deleted again).
        let opts = WriteOptions { expiry_ms: T0_MS + 1, ..WriteOptions::durability(SYNC) };
        store.put(b"a\x05x", b"v", opts).await.unwrap();
        store.put(b"b", b"outside", WriteOptions::durability(SYNC)).await.unwrap();
        clock.advance(1);

        let mut req = ScanRequest::prefix(b"a", 4);
        req.reverse = true;
        let r = store.delete_range(&req, SYNC).await.unwrap();
        assert_eq!((r.deleted, r.resume.clone()), (4, Some(vec![b'a', 6])));
        req.resume = r.resume;
        let r = store.delete_range(&req, SYNC).await.unwrap();
        assert_eq!(r.deleted, 4);
        req.resume = r.resume;
        let r = store.delete_range(&req, SYNC).await.unwrap();
        assert_eq!((r.deleted, r.resume), (2, None), "the last batch ends the range");
        let left = store
            .scan(&ScanRequest { range: KeyRange::Prefix(vec![]), ..ScanRequest::prefix(b"", 100) })
            .await
            .unwrap();
        let keys: Vec<&[u8]> = left.rows.iter().map(|r| r.key.as_ref()).collect();
        assert_eq!(keys, [b"b".as_slice()]);

        // Limits are checked.
        let e = store.delete_range(&ScanRequest::prefix(b"a", 0), SYNC).await.unwrap_err();
        assert_eq!(e.code(), 607);
        let e = store.delete_range(&ScanRequest::prefix(b"a", 1025), SYNC).await.unwrap_err();
        assert!(e.to_string().contains("1024"), "{e}");
        store.close().await.unwrap();
    });
}
