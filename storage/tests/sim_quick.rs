//! Quick checks on the simulated disk: acknowledged Sync writes survive a power loss that drops
//! every unsynced write; compaction and checkpoints keep every key's newest value.

mod common;

use ringstore_storage::{Durability, ManualClock, WriteOptions};

#[test]
fn sync_writes_survive_losing_all_unsynced() {
    common::run(|| async {
        let disk = common::sim(1);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        for i in 0..100u32 {
            let d = if i % 2 == 0 { Durability::Sync } else { Durability::NoSync };
            store
                .put(&i.to_be_bytes(), &[i as u8; 10], WriteOptions::durability(d))
                .await
                .expect("put");
        }
        disk.crash_losing_all_unsynced();
        drop(store);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        for i in (0..98u32).step_by(2) {
            let v = store.get(&i.to_be_bytes()).await.expect("get");
            assert_eq!(v.map(|v| v.value.to_vec()), Some(vec![i as u8; 10]), "key {i}");
        }
    });
}

#[test]
fn compaction_keeps_newest_values() {
    common::run(|| async {
        let disk = common::sim(2);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        let value = vec![7u8; 1000];
        for round in 0..20u32 {
            for k in 0..1000u32 {
                let mut v = value.clone();
                v[..4].copy_from_slice(&round.to_be_bytes());
                store
                    .put(&k.to_be_bytes(), &v, WriteOptions::durability(Durability::NoSync))
                    .await
                    .expect("put");
            }
        }
        for k in (0..1000u32).step_by(3) {
            store.delete(&k.to_be_bytes(), Durability::NoSync).await.expect("delete");
        }
        store.sync().await.expect("sync");
        let before = store.stats();
        let report = store.compact().await.expect("compact");
        let after = store.stats();
        eprintln!("{report:?}\nbefore {before:?}\nafter {after:?}");
        assert!(report.segments_compacted > 0);
        assert!(after.disk_bytes <= (after.live_bytes as f64 * 1.5) as u64 + 4 * 1024 * 1024);
        for k in 0..1000u32 {
            let got = store.get(&k.to_be_bytes()).await.expect("get");
            if k % 3 == 0 {
                assert!(got.is_none(), "deleted key {k} came back");
            } else {
                assert_eq!(&got.expect("present").value[..4], &19u32.to_be_bytes());
            }
        }
        store.close().await.expect("close");
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        for k in 0..1000u32 {
            let got = store.get(&k.to_be_bytes()).await.expect("get");
            assert_eq!(got.is_none(), k % 3 == 0, "key {k} after reopen");
        }
    });
}
