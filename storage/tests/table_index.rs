//! Secondary indexes on the table store (issue 15): a write of a row and of its index entries
//! is one atomic batch, so the index always equals the index rebuilt from the table.
//!
//! - Random put / update / delete / conditional / execute / multiDelete sequences, for many
//!   seeds, with reopens in between: after each step group, the entries in the store are exactly
//!   those computed from a scan of the table (by a second path: the rows as a reader gets them
//!   and the model's entry encoder).
//! - A crash at a random point of a sequence of indexed writes (simulated disk: unsynced writes
//!   lost, the last write torn): after recovery, the same equality holds.
//! - An indexed put is one batch and one flush, whatever the number of indexes.
//! - CREATE INDEX on a table with rows leaves the index BUILDING for the index worker, which
//!   builds it (READY); writes keep it, DROP INDEX and DROP TABLE remove its entries; a drop a
//!   crash interrupted is finished at open, a build is left BUILDING and finished by the worker.
//!   (Building while requests write, in the background: `table_index_build.rs`.)

mod common;

use std::collections::BTreeSet;

use futures_lite::future::{poll_once, yield_now};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_storage::constants::SCAN_LIMIT_MAX;
use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock, ScanRequest};

use common::{open_tables, run, scan_pages, sim, T0_MS};

const TABLE: &str = "CREATE TABLE people (team STRING, id LONG, name STRING, age INTEGER, \
                     active BOOLEAN, PRIMARY KEY (SHARD(team), id))";
const INDEXES: &str = "CREATE INDEX by_name ON people (name); \
                       CREATE INDEX by_age ON people (age, active, id)";
const TEAMS: [&str; 3] = ["red", "green", "blue"];
const NAMES: [&str; 4] = ["ann", "bo", "", "cy\u{0}"];

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

/// Every entry of every index of `people`, as the store holds them: (key, record expiry).
async fn stored_entries(ts: &TableStore<SimDisk>) -> BTreeSet<(Vec<u8>, u64)> {
    let t = ts.table("people").expect("table");
    let mut out = BTreeSet::new();
    for index in t.indexes() {
        let prefix = index_prefix(index.id());
        let mut req = ScanRequest::prefix(&prefix, 1000);
        req.keys_only = true;
        for row in scan_pages(ts.store(), req).await.expect("scan").into_iter().flatten() {
            out.insert((row.key.to_vec(), row.expiry_ms));
        }
    }
    out
}

/// The entries the table's rows call for, from a scan of the table as a reader sees it.
async fn rebuilt_entries(ts: &TableStore<SimDisk>) -> BTreeSet<(Vec<u8>, u64)> {
    let t = ts.table("people").expect("table");
    let schema = t.schema();
    let mut req = RangeRequest::new(&[], SCAN_LIMIT_MAX);
    req.allow_full_scan = true;
    let page = ts.scan("people", &req).await.expect("scan");
    assert!(page.resume.is_none(), "one page holds the test's rows");
    let mut out = BTreeSet::new();
    for row in &page.rows {
        let fields = &row.versions[0].fields;
        let value = |i: usize| fields[i].as_ref().map_or(ValueRef::Null, ValueRef::from);
        for index in t.indexes().iter().filter(|i| i.state().is_maintained()) {
            let entry = encode_index_entry(schema, index, &row.key, value).expect("entry");
            out.insert((entry, row.versions[0].expiry_ms));
        }
    }
    out
}

async fn assert_consistent(ts: &TableStore<SimDisk>, what: &str) {
    let (stored, rebuilt) = (stored_entries(ts).await, rebuilt_entries(ts).await);
    assert_eq!(stored, rebuilt, "{what}: the index differs from the one the table calls for");
}

/// A random value for a non-key field: mostly a value, sometimes NULL.
fn maybe<T>(rng: &mut StdRng, value: impl FnOnce(&mut StdRng) -> T) -> Option<T> {
    rng.gen_bool(0.8).then(|| value(rng))
}

fn random_row(rng: &mut StdRng, team: &str, id: i64) -> Vec<(&'static str, Value)> {
    let mut row = vec![("team", s(team)), ("id", Value::Long(id))];
    if let Some(n) = maybe(rng, |r| NAMES[r.gen_range(0..NAMES.len())]) {
        row.push(("name", s(n)));
    }
    if let Some(a) = maybe(rng, |r| r.gen_range(-2..3)) {
        row.push(("age", Value::Integer(a)));
    }
    if let Some(b) = maybe(rng, |r| r.gen_bool(0.5)) {
        row.push(("active", Value::Boolean(b)));
    }
    row
}

/// One random write of the sequence; returns nothing, errors fail the test.
async fn random_write(ts: &TableStore<SimDisk>, rng: &mut StdRng, d: Durability) {
    let team = TEAMS[rng.gen_range(0..TEAMS.len())];
    let id = rng.gen_range(0..12);
    let key = [("team", s(team)), ("id", Value::Long(id))];
    match rng.gen_range(0..10) {
        0..=3 => {
            let row = random_row(rng, team, id);
            ts.put("people", &row, d).await.expect("put");
        }
        4..=5 => {
            let mut set: Vec<(&str, Option<Value>)> = Vec::new();
            if rng.gen_bool(0.6) {
                set.push(("name", maybe(rng, |r| s(NAMES[r.gen_range(0..NAMES.len())]))));
            }
            if rng.gen_bool(0.6) || set.is_empty() {
                set.push(("age", maybe(rng, |r| Value::Integer(r.gen_range(-2..3)))));
            }
            ts.update("people", &key, &set, d).await.expect("update");
        }
        6..=7 => {
            ts.delete("people", &key, d).await.expect("delete");
        }
        8 => {
            let row = random_row(rng, team, id);
            let op = WriteOp::put(&row).condition(Condition::IfAbsent);
            ts.write("people", &op, d).await.expect("put if absent");
        }
        _ if rng.gen_bool(0.8) => {
            let rows: Vec<_> = (0..4).map(|i| random_row(rng, team, id + 20 + i)).collect();
            let mut ops: Vec<WriteOp<'_>> = rows.iter().map(|r| WriteOp::put(r)).collect();
            ops.push(WriteOp::delete(&key));
            let options = ExecuteOptions { durability: d, ..ExecuteOptions::default() };
            ts.execute("people", &ops, options).await.expect("execute");
        }
        _ => {
            let shard = [("team", s(team))];
            ts.multi_delete("people", &RangeRequest::new(&shard, 1), d).await.expect("mdel");
        }
    }
}

#[test]
fn the_index_equals_the_one_rebuilt_from_the_table_for_random_write_sequences() {
    const SEEDS: u64 = 40;
    const STEPS: usize = 6;
    const WRITES_PER_STEP: usize = 40;
    run(|| async move {
        for seed in 0..SEEDS {
            let mut rng = StdRng::seed_from_u64(seed);
            let (disk, clock) = (sim(seed), ManualClock::new(T0_MS));
            let mut ts = open_tables(&disk, &clock).await.expect("open");
            let versions = if seed % 2 == 0 { "" } else { " WITH VERSIONS 3" };
            ts.ddl(&format!("{TABLE}{versions}")).await.expect("create table");
            ts.ddl(INDEXES).await.expect("create indexes");
            for step in 0..STEPS {
                for _ in 0..WRITES_PER_STEP {
                    random_write(&ts, &mut rng, Durability::NoSync).await;
                    clock.advance(rng.gen_range(0..3));
                }
                assert_consistent(&ts, &format!("seed {seed}, step {step}")).await;
                if rng.gen_bool(0.3) {
                    // Recovery (checkpoint or log replay) brings back the same index.
                    ts.close().await.expect("close");
                    ts = open_tables(&disk, &clock).await.expect("reopen");
                    assert_consistent(&ts, &format!("seed {seed}, step {step}, reopened")).await;
                }
            }
            assert!(!stored_entries(&ts).await.is_empty(), "seed {seed}: the index holds rows");
            ts.close().await.expect("close");
        }
    })
}

/// A loaded, indexed table on a simulated disk, closed.
async fn indexed_template(clock: &ManualClock) -> SimDisk {
    let disk = sim(0);
    let ts = open_tables(&disk, clock).await.expect("open");
    ts.ddl(TABLE).await.expect("create table");
    ts.ddl(INDEXES).await.expect("create indexes");
    let mut rng = StdRng::seed_from_u64(u64::MAX);
    for _ in 0..200 {
        random_write(&ts, &mut rng, Durability::NoSync).await;
    }
    ts.close().await.expect("close");
    disk
}

#[test]
fn a_crash_in_the_middle_of_indexed_writes_leaves_rows_and_entries_consistent() {
    const SEEDS: u64 = 200;
    run(|| async move {
        let clock = ManualClock::new(T0_MS);
        let template = indexed_template(&clock).await;
        let mut cut_short = 0;
        for seed in 0..SEEDS {
            let disk = sim(seed);
            for path in template.file_names() {
                disk.set_file_bytes(&path, template.file_bytes(&path).expect("listed file"));
            }
            let mut rng = StdRng::seed_from_u64(seed);
            let ts = open_tables(&disk, &clock).await.expect("open");
            for _ in 0..rng.gen_range(0..30) {
                let d = [Durability::NoSync, Durability::WriteNoSync][rng.gen_range(0..2)];
                random_write(&ts, &mut rng, d).await;
            }
            // The last write, a durable one, is cut short after a few polls (or completes).
            let polls = rng.gen_range(0..6);
            let mut last = Box::pin(random_write(&ts, &mut rng, Durability::Sync));
            let mut finished = false;
            for _ in 0..polls {
                if poll_once(&mut last).await.is_some() {
                    finished = true;
                    break;
                }
                yield_now().await;
            }
            cut_short += usize::from(!finished);
            drop(last);
            assert_consistent(&ts, &format!("seed {seed}, before the crash")).await;
            disk.crash();
            drop(ts);
            let ts = open_tables(&disk, &clock).await.expect("reopen");
            assert_consistent(&ts, &format!("seed {seed}, after the crash")).await;
            ts.close().await.expect("close");
        }
        assert!(cut_short > 0, "no crash fell inside a write");
    })
}

#[test]
fn an_indexed_put_is_one_batch_and_one_flush() {
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.expect("open");
        ts.ddl(TABLE).await.expect("create table");
        ts.ddl(INDEXES).await.expect("create indexes");
        ts.ddl("CREATE INDEX by_active ON people (active)").await.expect("third index");
        let row = [("team", s("red")), ("id", Value::Long(1)), ("name", s("ann"))];
        let before = ts.store().stats().counters;
        ts.put("people", &row, Durability::Sync).await.expect("put");
        let after = ts.store().stats().counters;
        assert_eq!(after.batches - before.batches, 1, "one batch");
        assert_eq!(after.flushes - before.flushes, 1, "one flush");
        assert_eq!(after.flushed_records - before.flushed_records, 4, "the row and 3 entries");
        // An update that changes one indexed field: the row, that entry's delete and put.
        let before = ts.store().stats().counters;
        let set = [("name", Some(s("bo")))];
        let key = [("team", s("red")), ("id", Value::Long(1))];
        ts.update("people", &key, &set, Durability::Sync).await.expect("update");
        let after = ts.store().stats().counters;
        assert_eq!((after.batches - before.batches, after.flushes - before.flushes), (1, 1));
        assert_eq!(after.flushed_records - before.flushed_records, 3, "row, old and new entry");
        assert_consistent(&ts, "after the update").await;
        ts.close().await.expect("close");
    })
}

#[test]
fn create_index_builds_from_existing_rows_and_drop_removes_the_entries() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.expect("open");
        ts.ddl(TABLE).await.expect("create table");
        let mut rng = StdRng::seed_from_u64(7);
        // More rows than one build page.
        for id in 0..300 {
            let row = random_row(&mut rng, TEAMS[id as usize % 3], id);
            ts.put("people", &row, Durability::NoSync).await.expect("put");
        }
        let outcomes = ts.ddl("CREATE INDEX by_name ON people (name)").await.expect("create");
        let Outcome::IndexCreated { index, state, .. } = outcomes[0] else {
            panic!("{outcomes:?}")
        };
        assert_eq!(state, IndexState::Building, "the statement leaves the build to the worker");
        ts.finish_index_work().await.expect("build");
        assert_eq!(
            ts.table("people").expect("succeeds").index("by_name").expect("succeeds").state(),
            IndexState::Ready
        );
        assert_consistent(&ts, "after the build").await;
        assert_eq!(stored_entries(&ts).await.len(), 300, "one entry per row");

        let again =
            ts.ddl("CREATE INDEX IF NOT EXISTS by_name ON people (age)").await.expect("succeeds");
        assert!(matches!(again[0], Outcome::IndexAlreadyExists { index: i, .. } if i == index));

        let dropped = ts.ddl("DROP INDEX by_name ON people").await.expect("drop");
        assert!(matches!(dropped[0], Outcome::IndexDropped { index: i, .. } if i == index));
        assert!(
            ts.table("people").expect("succeeds").indexes().is_empty(),
            "the index is forgotten"
        );
        let prefix = index_prefix(index);
        let left =
            scan_pages(ts.store(), ScanRequest::prefix(&prefix, 100)).await.expect("succeeds");
        assert!(left.iter().all(Vec::is_empty), "no entry of the dropped index is left");
        // The table's writes take the path without index work again.
        let row = [("team", s("red")), ("id", Value::Long(1))];
        assert!(ts.write_now("people", &WriteOp::put(&row), Durability::NoSync).is_some());

        // DROP TABLE takes the entries of its indexes with its rows.
        ts.ddl(INDEXES).await.expect("indexes again");
        ts.finish_index_work().await.expect("build");
        assert!(!stored_entries(&ts).await.is_empty());
        let ids: Vec<IndexId> =
            ts.table("people").expect("succeeds").indexes().iter().map(|i| i.id()).collect();
        ts.ddl("DROP TABLE people").await.expect("drop table");
        for id in ids {
            let prefix = index_prefix(id);
            let left =
                scan_pages(ts.store(), ScanRequest::prefix(&prefix, 100)).await.expect("succeeds");
            assert!(left.iter().all(Vec::is_empty), "entries of a dropped table's index stay");
        }
        ts.close().await.expect("close");
    })
}

/// Puts the catalog file of a closed store in another state, as a crash in the middle of a
/// build or a drop leaves it.
async fn set_catalog(disk: &SimDisk, clock: &ManualClock, f: impl FnOnce(&Catalog) -> Catalog) {
    // Opened as a plain store so that no index work runs.
    let store = common::open_sim(disk, common::test_config(), clock).await.expect("open");
    let dir = std::path::Path::new(common::SIM_DIR);
    let mut catalog = catalog_file::load(store.disk(), dir).await.expect("load catalog");
    let next = f(&catalog);
    catalog_file::change(&mut catalog, store.disk(), dir, next).await.expect("write catalog");
    store.close().await.expect("close");
}

#[test]
fn a_build_or_a_drop_cut_short_is_finished_at_open() {
    run(|| async move {
        let (disk, clock) = (sim(3), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.expect("open");
        ts.ddl(TABLE).await.expect("create table");
        ts.ddl(INDEXES).await.expect("create indexes");
        let mut rng = StdRng::seed_from_u64(9);
        for _ in 0..150 {
            random_write(&ts, &mut rng, Durability::NoSync).await;
        }
        let t = ts.table("people").expect("succeeds");
        let (table, name_index, age_index) = (t.id(), t.indexes()[0].id(), t.indexes()[1].id());
        // A build that wrote no entry yet: its entries are gone, it is BUILDING.
        let prefix = index_prefix(name_index);
        let (start, end) = (prefix.to_vec(), (u32::from_be_bytes(prefix) + 1).to_be_bytes());
        ts.store()
            .delete_range(
                std::ops::Bound::Included(&start[..]),
                std::ops::Bound::Excluded(&end[..]),
                Durability::Sync,
            )
            .await
            .expect("delete entries");
        ts.close().await.expect("close");
        set_catalog(&disk, &clock, |c| {
            let c = c.with_index_state(table, name_index, IndexState::Building).expect("succeeds");
            c.with_index_state(table, age_index, IndexState::Deleting).expect("succeeds")
        })
        .await;

        let ts = open_tables(&disk, &clock).await.expect("reopen");
        let t = ts.table("people").expect("succeeds");
        assert_eq!(t.indexes().len(), 1, "the DELETING index was dropped: {:?}", t.indexes());
        assert_eq!(t.indexes()[0].state(), IndexState::Building, "the open leaves the build");
        ts.finish_index_work().await.expect("build");
        let t = ts.table("people").expect("succeeds");
        assert_eq!(t.indexes()[0].state(), IndexState::Ready, "the build was finished");
        assert_consistent(&ts, "after the resumed build and drop").await;
        let prefix = index_prefix(age_index);
        let left =
            scan_pages(ts.store(), ScanRequest::prefix(&prefix, 100)).await.expect("succeeds");
        assert!(left.iter().all(Vec::is_empty), "the dropped index's entries are gone");
        ts.close().await.expect("close");
    })
}

#[test]
fn index_limits_refuse_the_write_and_name_the_limit() {
    run(|| async move {
        let (disk, clock) = (sim(4), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.expect("open");
        ts.ddl(TABLE).await.expect("create table");
        // A long name, written before the index exists: the build (after the statement) refuses
        // it and drops the index.
        let long = "x".repeat(limits::INDEX_VALUE_BYTES_MAX + 1);
        let row = [("team", s("red")), ("id", Value::Long(1)), ("name", s(&long))];
        ts.put("people", &row, Durability::NoSync).await.expect("put");
        let created = ts.ddl("CREATE INDEX by_name ON people (name)").await.expect("BUILDING");
        assert!(matches!(created[0], Outcome::IndexCreated { state: IndexState::Building, .. }));
        let e = ts.finish_index_work().await.expect_err("too long");
        assert_eq!(e.code(), 235, "{e}");
        assert!(e.to_string().contains("INDEX_VALUE_BYTES_MAX"), "{e}");
        assert!(
            ts.table("people").expect("succeeds").indexes().is_empty(),
            "the failed index is gone"
        );
        ts.delete("people", &row[..2], Durability::NoSync).await.expect("delete");

        // With the index: a write of such a value is refused, and nothing is written.
        ts.ddl("CREATE INDEX by_name ON people (name)").await.expect("create");
        let e = ts.put("people", &row, Durability::NoSync).await.expect_err("too long");
        assert_eq!(e.code(), 235, "{e}");
        assert!(ts
            .get("people", &row[..2], VersionSelect::Newest)
            .await
            .expect("succeeds")
            .is_none());

        // multiDelete of more rows than fit one batch with their entries: 233, nothing deleted.
        for id in 0..600 {
            let row = [("team", s("blue")), ("id", Value::Long(id)), ("name", s("n"))];
            ts.put("people", &row, Durability::NoSync).await.expect("put");
        }
        let shard = [("team", s("blue"))];
        let e = ts
            .multi_delete("people", &RangeRequest::new(&shard, 1), Durability::NoSync)
            .await
            .expect_err("too many rows");
        assert_eq!(e.code(), 233, "{e}");
        assert!(e.to_string().contains("BATCH_OPS_MAX"), "{e}");
        assert_consistent(&ts, "after the refused multiDelete").await;
        ts.close().await.expect("close");
    })
}

/// Every page of an index query, concatenated, following the resume token.
async fn query_all(ts: &TableStore<SimDisk>, index: &str, mut q: IndexQuery) -> Vec<IndexHit> {
    let mut hits = Vec::new();
    for _ in 0..10_000 {
        let page = ts.index_scan("people", index, &q).await.expect("index scan");
        assert!(page.hits.len() <= q.limit, "a page is at most its limit");
        hits.extend(page.hits);
        match page.resume {
            Some(resume) => q.resume = Some(resume),
            None => return hits,
        }
    }
    panic!("the query did not end");
}

/// The entries of `index` the table calls for whose values pass `keep`, in index order.
async fn expected(
    ts: &TableStore<SimDisk>,
    index: &str,
    keep: impl Fn(&[Option<Value>]) -> bool,
) -> Vec<Vec<u8>> {
    let t = ts.table("people").expect("table");
    let def = t.index(index).expect("index");
    let prefix = index_prefix(def.id());
    let all = rebuilt_entries(ts).await;
    let mine = all.into_iter().map(|(k, _)| k).filter(|k| k.starts_with(&prefix));
    let decoded =
        mine.filter(|k| keep(&decode_index_entry(t.schema(), def, k).expect("decodes").values));
    decoded.collect()
}

#[test]
fn index_queries_return_matching_rows_in_index_order_and_refuse_what_is_not_ready() {
    run(|| async move {
        let (disk, clock) = (sim(5), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.expect("open");
        ts.ddl(TABLE).await.expect("create table");
        let mut rng = StdRng::seed_from_u64(11);
        for id in 0..300 {
            let row = random_row(&mut rng, TEAMS[id as usize % 3], id);
            ts.put("people", &row, Durability::NoSync).await.expect("put");
        }
        // The statement returns with the index BUILDING (the build is the worker's), and
        // queries are refused until it is READY.
        let created = ts.ddl("CREATE INDEX by_age ON people (age, active)").await.expect("create");
        assert!(matches!(created[0], Outcome::IndexCreated { state: IndexState::Building, .. }));
        let q = IndexQuery { limit: 10, ..IndexQuery::default() };
        let e = ts.index_scan("people", "by_age", &q).await.expect_err("not ready");
        assert_eq!(e.code(), 236, "{e}");
        assert!(e.to_string().contains("BUILDING"), "{e}");
        for _ in 0..50 {
            random_write(&ts, &mut rng, Durability::NoSync).await;
        }
        ts.finish_index_work().await.expect("build");
        assert_consistent(&ts, "after a build with writes before it").await;

        // age = 1, in index order (active: NULL, false, true; then the primary key).
        let q =
            IndexQuery { equal: vec![Some(Value::Integer(1))], limit: 7, ..IndexQuery::default() };
        let hits = query_all(&ts, "by_age", q.clone()).await;
        let want = expected(&ts, "by_age", |v| v[0] == Some(Value::Integer(1))).await;
        assert!(want.len() > 7, "more than one page");
        assert_eq!(hits.iter().map(|h| h.entry.clone()).collect::<Vec<_>>(), want);
        for hit in &hits {
            let row = hit.row.as_ref().expect("a row");
            let age = ts.table("people").expect("t").schema().field("age").expect("age").0;
            assert_eq!(row.newest().fields[age], Some(Value::Integer(1)));
            assert_eq!(row.key, hit.row_key);
        }
        // Reverse: the same entries, highest first.
        let reversed = query_all(&ts, "by_age", IndexQuery { reverse: true, ..q.clone() }).await;
        let mut back: Vec<_> = reversed.iter().map(|h| h.entry.clone()).collect();
        back.reverse();
        assert_eq!(back, want);
        // A range on the next field: active >= false, so NULL is left out; keys only.
        let range = FieldRange {
            start: Some(RangeBound { value: Value::Boolean(false), inclusive: true }),
            end: None,
        };
        let q2 = IndexQuery { range: Some(range), keys_only: true, ..q.clone() };
        let hits = query_all(&ts, "by_age", q2).await;
        let want =
            expected(&ts, "by_age", |v| v[0] == Some(Value::Integer(1)) && v[1].is_some()).await;
        assert_eq!(hits.iter().map(|h| h.entry.clone()).collect::<Vec<_>>(), want);
        assert!(hits.iter().all(|h| h.row.is_none() && h.values[1].is_some()));
        // NULL as an equal value: rows without an age.
        let q3 = IndexQuery { equal: vec![None], limit: 1000, ..IndexQuery::default() };
        let hits = query_all(&ts, "by_age", q3).await;
        assert_eq!(hits.len(), expected(&ts, "by_age", |v| v[0].is_none()).await.len());

        let e = ts.index_scan("people", "nope", &q).await.expect_err("unknown");
        assert_eq!(e.code(), 505, "{e}");
        let too_many =
            IndexQuery { equal: vec![None, None, None], limit: 1, ..IndexQuery::default() };
        let e = ts.index_scan("people", "by_age", &too_many).await.expect_err("3 of 2 fields");
        assert_eq!(e.code(), 237, "{e}");
        let wrong = IndexQuery { equal: vec![Some(s("x"))], limit: 1, ..IndexQuery::default() };
        assert_eq!(ts.index_scan("people", "by_age", &wrong).await.expect_err("type").code(), 205);
        ts.close().await.expect("close");
    })
}
