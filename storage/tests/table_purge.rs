//! What the table layer purges: DROP TABLE deletes the table's rows at once; compaction drops
//! rows of a table dropped without that (a crash in the middle of the DROP) and rewrites rows
//! whose older versions expired, keeping the newest version, the token and the expiry.

mod common;

use std::rc::Rc;

use common::{run, sim, test_config, SIM_DIR, T0_MS};
use ringstore_storage::ddl::parse;
use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::table::stored_row::StoredRow;
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock, StoreConfig};

const ROWS: i64 = 40;

fn config() -> StoreConfig {
    StoreConfig { garbage_ratio_threshold: 0.05, ..test_config() }
}

async fn open(disk: &SimDisk, clock: &ManualClock) -> TableStore<SimDisk> {
    TableStore::open(disk.clone(), SIM_DIR, config(), Rc::new(clock.clone())).await.expect("open")
}

fn row(k: i64, bytes: usize) -> Vec<(&'static str, Value)> {
    vec![("k", Value::Long(k)), ("v", Value::Binary(vec![k as u8; bytes]))]
}

#[test]
fn drop_table_deletes_its_rows_and_a_new_table_of_that_name_is_empty() {
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let ts = open(&disk, &clock).await;
        ts.ddl("CREATE TABLE t (k LONG, v BINARY, PRIMARY KEY (k))").await.unwrap();
        for k in 0..ROWS {
            ts.put("t", &row(k, 10), Durability::NoSync).await.unwrap();
        }
        assert_eq!(ts.store().stats().keys, ROWS as u64);
        ts.ddl("DROP TABLE t").await.unwrap();
        assert_eq!(ts.store().stats().keys, 0, "the index holds no row of the dropped table");
        let e = ts.get("t", &[("k", Value::Long(1))], VersionSelect::Newest).await.unwrap_err();
        assert_eq!(e.code(), 201);
        ts.ddl("CREATE TABLE t (k LONG, v BINARY, PRIMARY KEY (k))").await.unwrap();
        let mut all = RangeRequest::new(&[], 100);
        all.allow_full_scan = true;
        assert!(ts.scan("t", &all).await.unwrap().rows.is_empty());
        ts.close().await.unwrap();
    });
}

#[test]
fn compaction_purges_dropped_tables_and_expired_versions() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let ts = open(&disk, &clock).await;
        ts.ddl("CREATE TABLE m (k LONG, v BINARY, PRIMARY KEY (k)) USING TTL 100 SECONDS WITH VERSIONS 3")
            .await
            .unwrap();
        ts.ddl("CREATE TABLE gone (k LONG, v BINARY, PRIMARY KEY (k))").await.unwrap();
        ts.ddl("CREATE TABLE filler (k LONG, v BINARY, PRIMARY KEY (k))").await.unwrap();
        for k in 0..ROWS {
            ts.put("m", &row(k, 1000), Durability::NoSync).await.unwrap();
            ts.put("gone", &row(k, 100), Durability::NoSync).await.unwrap();
        }
        clock.advance(50_000);
        for k in 0..ROWS {
            ts.put("m", &row(k, 1000), Durability::NoSync).await.unwrap();
        }
        // Fill and seal the first segment, then make most of it garbage.
        for round in 0..2 {
            for k in 0..80 {
                ts.put("filler", &row(k, 60_000 + round), Durability::NoSync).await.unwrap();
            }
        }
        ts.close().await.unwrap();

        // DROP TABLE gone as a crash in the middle would leave it: in the catalog, not the log.
        let dir = std::path::Path::new(SIM_DIR);
        let mut catalog = catalog_file::load(&disk, dir).await.unwrap();
        let drop = parse("DROP TABLE gone").unwrap();
        catalog_file::apply(&mut catalog, &disk, dir, &drop[0]).await.unwrap();

        let ts = open(&disk, &clock).await;
        let keys_before = ts.store().stats().keys;
        clock.set(T0_MS + 120_000); // the first version of every m row has expired
        let report = ts.store().compact().await.unwrap();
        assert!(report.segments_compacted > 0, "{report:?}");
        assert_eq!(report.records_rewritten, ROWS as u64, "{report:?}");
        assert_eq!(ts.store().stats().keys, keys_before - ROWS as u64, "gone's rows dropped");

        let schema = ts.table("m").unwrap().schema().clone();
        for k in 0..ROWS {
            let key = encode_primary_key(&schema, &[Value::Long(k)]).unwrap();
            let raw = ts.store().get(&key).await.unwrap().expect("row kept");
            let stored = StoredRow::decode(&schema, &raw.value).unwrap();
            assert_eq!(stored.versions.len(), 1, "row {k}: the expired version was purged");
            assert_eq!(stored.versions[0].version, T0_MS + 50_000);
            let got = ts.get("m", &[("k", Value::Long(k))], VersionSelect::Latest(3)).await;
            let got = got.unwrap().expect("row visible");
            assert_eq!(got.token, RowToken(stored.token));
            assert_eq!(got.versions.len(), 1);
        }
        // And all of that holds after a restart.
        ts.close().await.unwrap();
        let ts = open(&disk, &clock).await;
        assert_eq!(ts.store().stats().keys, keys_before - ROWS as u64);
        ts.close().await.unwrap();
    });
}
