//! multiDelete is atomic across a crash: a power loss while its range tombstone is on its way to
//! the disk leaves every row deleted or none of them, on every seeded crash outcome
//! of the simulated disk (which keeps a random subset of unsynced writes and may tear the last).

mod common;

use common::{open_tables, run, sim, T0_MS};
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock};

const ROWS: i64 = 300;
const SEEDS: u64 = 64;

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

#[test]
fn multi_delete_is_all_or_none_after_a_crash() {
    run(|| async move {
        let (mut all, mut none) = (0, 0);
        for seed in 0..SEEDS {
            let (disk, clock) = (sim(seed), ManualClock::new(T0_MS));
            let ts = open_tables(&disk, &clock).await.unwrap();
            ts.ddl(
                "CREATE TABLE readings (device STRING, ts TIMESTAMP, note STRING, \
                 PRIMARY KEY (SHARD(device), ts DESC))",
            )
            .await
            .unwrap();
            for device in ["victim", "bystander"] {
                for t in 0..ROWS {
                    let row = [
                        ("device", s(device)),
                        ("ts", Value::Timestamp(t)),
                        ("note", s("a note long enough to spread rows over several blocks")),
                    ];
                    ts.put("readings", &row, Durability::NoSync).await.unwrap();
                }
            }
            ts.store().sync().await.unwrap();

            // The range tombstone is handed to the device but not synced when the power fails.
            let victim = [("device", s("victim"))];
            let req = RangeRequest::new(&victim, 1000);
            let o = ts.multi_delete("readings", &req, Durability::WriteNoSync).await.unwrap();
            assert_eq!(o, MultiDeleteOutcome { deleted: ROWS as usize, resume: None });
            disk.crash();
            drop(ts);

            let ts = open_tables(&disk, &clock).await.unwrap();
            let left = ts.multi_get("readings", &RangeRequest::new(&victim, 1000)).await.unwrap();
            match left.rows.len() as i64 {
                0 => all += 1,
                ROWS => none += 1,
                n => panic!("seed {seed}: {n} of {ROWS} rows survived a torn multiDelete"),
            }
            let bystander = [("device", s("bystander"))];
            let other = ts.multi_get("readings", &RangeRequest::new(&bystander, 1000)).await;
            assert_eq!(other.unwrap().rows.len() as i64, ROWS, "seed {seed}: synced rows lost");
            ts.close().await.unwrap();
        }
        // Both outcomes happen, so the crash really cut the batch at different points.
        assert!(all > 0 && none > 0, "deleted in {all} seeds, kept in {none}");
    });
}
