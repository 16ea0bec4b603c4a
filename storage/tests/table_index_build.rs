//! The background index build (issue 15): CREATE INDEX on a table with rows returns at once with
//! the index BUILDING, and the shard's index worker (`TableStore::run_index_work`, spawned here
//! as the node spawns it, in a task queue with few shares) builds it page by page while requests
//! go on writing.
//!
//! - Build while writing: between the worker's pages the test writes (puts of new rows, updates
//!   of indexed values, deletes), checks that queries are refused with 236 naming BUILDING, and
//!   sees the build part-way (some rows indexed, not all). Once READY, a scan of the index equals
//!   the index computed from a scan of the table, and the rows written during the build are in
//!   it.
//! - Restart during a build: a clean stop part-way leaves the index BUILDING in the catalog
//!   file; the reopened store opens without building it, and a new worker finishes it. A crash
//!   part-way (simulated disk, unsynced writes lost in any order) does the same: the open
//!   empties the BUILDING index and the worker builds it again from the table.
//! - A page that keeps changing: a row of it rewritten inside every read of the page makes the
//!   build give up after exactly `WRITE_ATTEMPTS_MAX * INDEX_BUILD_PAGE_ROUNDS_MAX` tries (224),
//!   and the index is dropped again with the entries already written.
//! - Store errors: a failed read (which poisons nothing) is tried again by the worker itself; a
//!   failed flush (which poisons the store) goes on when writes resume; a row that can never be
//!   read keeps its table's build failing, BUILDING, and holds up no other table's build.
//!
//! Every wait is on state (the index's state, the build's row count, the store's poison),
//! looked at a bounded number of times, never on time alone. (The failed-read test waits, so, for
//! the worker's own retry timer, `INDEX_BUILD_RETRY_FIRST`: one second.)

mod common;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::rc::Rc;

use futures_lite::future::yield_now;
use glommio::{Latency, Shares, TaskQueueHandle};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_storage::constants::RECORD_HEADER_BYTES;
use ringstore_storage::disk::sim::{SimDisk, SimOp};
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock, ScanRequest, StoreConfig, WriteOptions};

use common::{open_tables, run, scan_pages, sim, T0_MS};

const TABLE: &str = "CREATE TABLE items (id LONG, grp INTEGER, tag STRING, PRIMARY KEY (id))";
const INDEX: &str = "CREATE INDEX by_grp ON items (grp, tag)";
/// Rows before the build: many build pages.
const ROWS: i64 = 5_000;
/// Looks at the state a wait that yields between them may take before the test fails.
const TURNS_MAX: usize = 1_000_000;

fn row(id: i64, grp: i32) -> Vec<(&'static str, Value)> {
    vec![("id", Value::Long(id)), ("grp", Value::Integer(grp)), ("tag", Value::String("t".into()))]
}

/// Every entry of index `by_grp`, as the store holds it.
async fn stored_entries(ts: &TableStore<SimDisk>) -> BTreeSet<Vec<u8>> {
    let t = ts.table("items").expect("table");
    let prefix = index_prefix(t.index("by_grp").expect("index").id());
    let mut req = ScanRequest::prefix(&prefix, 1000);
    req.keys_only = true;
    let pages = scan_pages(ts.store(), req).await.expect("scan");
    pages.into_iter().flatten().map(|r| r.key.to_vec()).collect()
}

/// The entries the table's rows call for, from a scan of the table as a reader sees it.
async fn rebuilt_entries(ts: &TableStore<SimDisk>) -> BTreeSet<Vec<u8>> {
    let t = ts.table("items").expect("table");
    let def = t.index("by_grp").expect("index");
    let mut req = RangeRequest::new(&[], 500);
    req.allow_full_scan = true;
    let mut out = BTreeSet::new();
    loop {
        let page = ts.scan("items", &req).await.expect("scan");
        for row in &page.rows {
            let fields = &row.versions[0].fields;
            let value = |i: usize| fields[i].as_ref().map_or(ValueRef::Null, ValueRef::from);
            out.insert(encode_index_entry(t.schema(), def, &row.key, value).expect("entry"));
        }
        match page.resume {
            Some(r) => req.resume = Some(r),
            None => return out,
        }
    }
}

async fn assert_consistent(ts: &TableStore<SimDisk>, what: &str) {
    let (stored, rebuilt) = (stored_entries(ts).await, rebuilt_entries(ts).await);
    assert_eq!(stored.len(), rebuilt.len(), "{what}: entry counts");
    assert!(stored == rebuilt, "{what}: the index differs from the one the table calls for");
}

fn state(ts: &TableStore<SimDisk>) -> IndexState {
    ts.table("items").expect("table").index("by_grp").expect("index").state()
}

/// A store with the table and [`ROWS`] rows, and the index just created (BUILDING).
async fn loaded(disk: &SimDisk, clock: &ManualClock) -> Rc<TableStore<SimDisk>> {
    load(open_tables(disk, clock).await.expect("open")).await
}

/// The table and [`ROWS`] rows put into `ts`, and the index created (BUILDING).
async fn load(ts: TableStore<SimDisk>) -> Rc<TableStore<SimDisk>> {
    ts.ddl(TABLE).await.expect("create table");
    for id in 0..ROWS {
        ts.put("items", &row(id, (id % 7) as i32), Durability::NoSync).await.expect("put");
    }
    let created = ts.ddl(INDEX).await.expect("create index");
    assert!(
        matches!(created[0], Outcome::IndexCreated { state: IndexState::Building, .. }),
        "CREATE INDEX on a table with rows returns at once, BUILDING: {created:?}"
    );
    Rc::new(ts)
}

/// The index worker in its own low-priority task queue, as the node runs it.
fn spawn_worker(ts: &Rc<TableStore<SimDisk>>) -> glommio::Task<()> {
    spawn_worker_in_queue(ts).0
}

/// [`spawn_worker`], also handing back the worker's task queue.
fn spawn_worker_in_queue(ts: &Rc<TableStore<SimDisk>>) -> (glommio::Task<()>, TaskQueueHandle) {
    let queue = glommio::executor().create_task_queue(
        Shares::Static(100),
        Latency::NotImportant,
        "index-build",
    );
    let ts = ts.clone();
    let worker =
        glommio::spawn_local_into(async move { ts.run_index_work().await }, queue).expect("spawn");
    (worker, queue)
}

/// Gives the other task queues (the worker's) a turn.
async fn turn() {
    glommio::executor().yield_task_queue_now().await;
}

/// Leaves the core to the worker for a moment: a wait that does nothing else between its looks
/// at the state (a bare yield would come straight back, the worker's queue having few shares).
async fn pause() {
    glommio::timer::sleep(std::time::Duration::from_micros(200)).await;
}

/// Looks at the state at most this many times, [`pause`] apart.
const LOOKS_MAX: usize = 20_000;

/// Stops the worker, waits for it, and hands back the store.
async fn stop(ts: Rc<TableStore<SimDisk>>, worker: glommio::Task<()>) -> TableStore<SimDisk> {
    ts.stop_index_work();
    worker.await;
    Rc::try_unwrap(ts).expect("the worker let go of the store")
}

#[test]
fn the_build_runs_in_the_background_while_writes_go_on_and_keeps_them() {
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let ts = loaded(&disk, &clock).await;
        let worker = spawn_worker(&ts);
        let mut rng = StdRng::seed_from_u64(3);
        let (mut writes_during_build, mut new_ids) = (0, Vec::new());
        // The build's row counts seen part-way (some rows indexed, not all), between writes.
        let mut part_way = BTreeSet::new();
        let (mut looks, mut still) = (0, 0);
        while state(&ts) == IndexState::Building {
            looks += 1;
            assert!(looks < TURNS_MAX, "the build did not end");
            let indexed = ts.index_work_stats().rows_indexed;
            if indexed > 0 && indexed < ROWS as u64 {
                part_way.insert(indexed);
            }
            let q = IndexQuery { limit: 10, ..IndexQuery::default() };
            let e = ts.index_scan("items", "by_grp", &q).await.expect_err("BUILDING");
            assert_eq!(e.code(), 236, "{e}");
            assert!(e.to_string().contains("BUILDING"), "{e}");
            assert_eq!(ts.index_work_stats().building, 1, "stats count the build");
            // A new row, an indexed value changed, a row deleted.
            let id = ROWS + writes_during_build;
            ts.put("items", &row(id, 100), Durability::NoSync).await.expect("put new");
            new_ids.push(id);
            let old = rng.gen_range(0..ROWS);
            let set = [("grp", Some(Value::Integer(rng.gen_range(200..210))))];
            ts.update("items", &[("id", Value::Long(old))], &set, Durability::NoSync)
                .await
                .expect("update");
            let gone = rng.gen_range(0..ROWS);
            ts.delete("items", &[("id", Value::Long(gone))], Durability::NoSync)
                .await
                .expect("delete");
            writes_during_build += 1;
            // A yield of this queue mostly hands the core to the worker; when the scheduler
            // keeps choosing this queue (it has ten times the shares), a short sleep does.
            turn().await;
            still = if ts.index_work_stats().rows_indexed == indexed { still + 1 } else { 0 };
            if still >= 16 {
                pause().await;
            }
        }
        assert_eq!(state(&ts), IndexState::Ready);
        // Writes landed while some rows were indexed and others not yet.
        assert!(!part_way.is_empty(), "the build was never seen part-way");
        assert!(writes_during_build >= 2, "only {writes_during_build} write rounds in the build");
        assert_eq!(ts.index_work_stats().building, 0);
        assert_consistent(&ts, "after the background build").await;
        // The rows written during the build are found through the index.
        let q = IndexQuery {
            equal: vec![Some(Value::Integer(100))],
            limit: 100_000,
            keys_only: true,
            ..IndexQuery::default()
        };
        let page = ts.index_scan("items", "by_grp", &q).await.expect("READY");
        assert_eq!(page.hits.len(), new_ids.len(), "every row put during the build is indexed");
        stop(ts, worker).await.close().await.expect("close");
    })
}

/// Runs the worker until the build has indexed some rows but is not done, then stops it. The
/// stop comes from a task in the worker's own queue, which runs whenever the worker waits (every
/// page waits at least once, for its disk reads), so the build stops within a page or two of
/// three pages in, however fast its pages are; a look from another queue could miss the build
/// entirely while it slept.
async fn build_part_way(ts: &Rc<TableStore<SimDisk>>) {
    let (worker, queue) = spawn_worker_in_queue(ts);
    let watch = {
        let ts = ts.clone();
        async move {
            let mut looks = 0;
            while ts.index_work_stats().rows_indexed < 3 * INDEX_BUILD_PAGE_ROWS as u64 {
                looks += 1;
                assert!(looks < TURNS_MAX, "the build did not start");
                yield_now().await;
            }
            ts.stop_index_work();
        }
    };
    glommio::spawn_local_into(watch, queue).expect("spawn").await;
    worker.await;
    assert_eq!(state(ts), IndexState::Building, "stopped part-way");
    let part = stored_entries(ts).await.len();
    assert!(part > 0 && part < ROWS as usize, "{part} entries: the build was part-way");
}

/// Reopens, checks the open left the index BUILDING, runs a worker until READY.
async fn reopen_and_finish(disk: &SimDisk, clock: &ManualClock, what: &str) {
    let ts = Rc::new(open_tables(disk, clock).await.expect("reopen"));
    assert_eq!(state(&ts), IndexState::Building, "{what}: the open does not build");
    let worker = spawn_worker(&ts);
    look_until(&format!("{what}: the resumed build did not end"), || {
        state(&ts) == IndexState::Ready
    })
    .await;
    assert_consistent(&ts, what).await;
    stop(ts, worker).await.close().await.expect("close");
}

#[test]
fn a_restart_during_the_build_resumes_it() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let ts = loaded(&disk, &clock).await;
        build_part_way(&ts).await;
        Rc::try_unwrap(ts).expect("one owner").close().await.expect("close");
        reopen_and_finish(&disk, &clock, "after a clean stop part-way").await;
    })
}

#[test]
fn a_crash_during_the_build_resumes_it_from_the_start() {
    run(|| async move {
        for seed in 0..4 {
            let (disk, clock) = (sim(seed), ManualClock::new(T0_MS));
            let ts = loaded(&disk, &clock).await;
            build_part_way(&ts).await;
            disk.crash();
            drop(ts);
            reopen_and_finish(&disk, &clock, &format!("seed {seed}: after a crash")).await;
        }
    })
}

/// Rows of the contention test: two full build pages and part of a third.
const CONTENDED_ROWS: i64 = 2 * INDEX_BUILD_PAGE_ROWS as i64 + 10;

/// What `index_work.rs` promises for a page whose rows keep changing under it: each read of the
/// page (a keys-only scan, the stamps, a scan with values) is written only if no row changed, is
/// tried [`WRITE_ATTEMPTS_MAX`] times at once and then again after a yield, for at most
/// [`INDEX_BUILD_PAGE_ROUNDS_MAX`] rounds; then the build gives up with 224 (WriteContention,
/// naming every attempt) and the index is dropped again, with the entries of the pages already
/// written.
///
/// The disturbance is deterministic: a task in the build's own task queue rewrites one row of
/// the second page every time it runs, synchronously (`Store::put_now` of the row's record with
/// the same bytes: a new location, so the page's stamp no longer matches, and the same row, so
/// its index entry is unchanged), and it runs at least once inside every read of the page,
/// because the page's other rows are on the simulated disk, whose every read waits once.
#[test]
fn a_build_page_that_keeps_changing_gives_up_after_its_rounds_and_drops_the_index() {
    run(|| async move {
        let (disk, clock) = (sim(5), ManualClock::new(T0_MS));
        let ts = Rc::new(open_tables(&disk, &clock).await.expect("open"));
        ts.ddl(TABLE).await.expect("create table");
        for id in 0..CONTENDED_ROWS {
            ts.put("items", &row(id, (id % 7) as i32), Durability::NoSync).await.expect("put");
        }
        // On disk, so that reading a page waits.
        ts.store().sync().await.expect("sync");
        let t = ts.table("items").expect("table");
        let mut req = ScanRequest::prefix(&table_prefix(t.id()), 1000);
        req.keys_only = true;
        let keys = ts.store().scan(&req).await.expect("scan").rows;
        assert_eq!(keys.len(), CONTENDED_ROWS as usize);
        // A row in the middle of the second page (keys are in id order).
        let key = keys[INDEX_BUILD_PAGE_ROWS + INDEX_BUILD_PAGE_ROWS / 2].key.to_vec();
        let record = ts.store().get(&key).await.expect("get").expect("row");

        let created = ts.ddl(INDEX).await.expect("create index");
        assert!(matches!(created[0], Outcome::IndexCreated { state: IndexState::Building, .. }));
        let index_id = ts.table("items").expect("table").index("by_grp").expect("index").id();

        let stop = Rc::new(Cell::new(false));
        let writes = Rc::new(Cell::new(0usize));
        let disturber = {
            let (ts, stop, writes) = (ts.clone(), stop.clone(), writes.clone());
            glommio::spawn_local(async move {
                let opts = WriteOptions {
                    durability: Durability::NoSync,
                    version: Some(record.version),
                    expiry_ms: record.expiry_ms,
                };
                while !stop.get() {
                    ts.store().put_now(&key, &record.value, opts).expect("rewrite the row");
                    writes.set(writes.get() + 1);
                    yield_now().await;
                }
            })
        };
        let scans_before = ts.store().stats().counters.scans;
        let e = ts.finish_index_work().await.expect_err("the second page never stays unchanged");
        let scans = ts.store().stats().counters.scans - scans_before;
        stop.set(true);
        disturber.await;

        let attempts = WRITE_ATTEMPTS_MAX * INDEX_BUILD_PAGE_ROUNDS_MAX;
        assert_eq!(e.code(), 224, "WriteContention: {e}");
        assert!(e.to_string().contains(&format!("{attempts} times")), "{e}");
        // Exactly the bound: the first page read once, the second `attempts` times, two scans
        // each, and nothing after.
        assert_eq!(scans, 2 * (1 + attempts) as u64, "scans of the build");
        assert!(writes.get() >= attempts, "every attempt was disturbed: {} writes", writes.get());
        assert_eq!(ts.index_work_stats().rows_indexed, INDEX_BUILD_PAGE_ROWS as u64);
        // The index is dropped again, with the first page's entries.
        let t = ts.table("items").expect("table");
        assert!(t.indexes().is_empty(), "the index is gone: {:?}", t.indexes());
        let mut req = ScanRequest::prefix(&index_prefix(index_id), 1000);
        req.keys_only = true;
        let left = scan_pages(ts.store(), req).await.expect("scan");
        assert!(left.iter().all(Vec::is_empty), "no entry of the dropped index is left");
        assert_eq!(ts.index_work_stats().building, 0);
        // The rows are all there.
        let mut req = ScanRequest::prefix(&table_prefix(t.id()), 1000);
        req.keys_only = true;
        assert_eq!(ts.store().scan(&req).await.expect("scan").rows.len(), keys.len());
        Rc::try_unwrap(ts).expect("one owner").close().await.expect("close");
    })
}

/// [`loaded`], with the rows synced (a build's reads go to the simulated disk) and no segment
/// preparer (whose writes in the background would take a fault meant for the build's).
async fn loaded_on_disk(disk: &SimDisk, clock: &ManualClock) -> Rc<TableStore<SimDisk>> {
    let config = StoreConfig { preallocate_segments: false, ..common::test_config() };
    let ts = TableStore::open(disk.clone(), common::SIM_DIR, config, Rc::new(clock.clone()));
    let ts = load(ts.await.expect("open")).await;
    ts.store().sync().await.expect("sync");
    ts
}

/// Waits, [`pause`] apart and at most [`LOOKS_MAX`] looks, until `done` holds; `what` names
/// the wait in the failure.
async fn look_until(what: &str, mut done: impl FnMut() -> bool) {
    let mut looks = 0;
    while !done() {
        looks += 1;
        assert!(looks < LOOKS_MAX, "{what}");
        pause().await;
    }
}

/// Waits, [`pause`] apart and at most [`LOOKS_MAX`] looks, for the index to be READY.
async fn wait_ready(ts: &TableStore<SimDisk>, what: &str) {
    look_until(&format!("{what}: the index is not READY"), || state(ts) == IndexState::Ready).await;
}

/// A store error that does not poison the store (a failed read) stops the build with the index
/// BUILDING; nothing else will wake the worker (no CREATE INDEX, no write resume, no restart
/// here), so it tries again by itself after `INDEX_BUILD_RETRY_FIRST` and finishes.
#[test]
fn a_build_stopped_by_a_failed_read_is_tried_again_by_the_worker() {
    run(|| async move {
        let (disk, clock) = (sim(6), ManualClock::new(T0_MS));
        let ts = loaded_on_disk(&disk, &clock).await;
        // The build's first page is the next disk read.
        disk.fail_next(SimOp::Read);
        let worker = spawn_worker(&ts);
        look_until("the build never read", || disk.stats().injected_faults > 0).await;
        assert!(!ts.is_poisoned(), "a failed read does not poison the store");
        wait_ready(&ts, "after a failed read").await;
        assert_eq!(disk.stats().injected_faults, 1);
        assert_consistent(&ts, "after the build tried again").await;
        stop(ts, worker).await.close().await.expect("close");
    })
}

/// A failed flush poisons the store: the build stops with the index BUILDING, and the worker
/// waits for the store to take writes again (`TableStore::resume_writes`, which the node's
/// resume task calls), which wakes it to build the index from the start.
#[test]
fn a_build_stopped_by_a_poisoned_store_goes_on_when_writes_resume() {
    run(|| async move {
        let (disk, clock) = (sim(7), ManualClock::new(T0_MS));
        let ts = loaded_on_disk(&disk, &clock).await;
        // The next disk write is the flush of the build's first page.
        disk.fail_next(SimOp::Write);
        let worker = spawn_worker(&ts);
        look_until("the build's flush never failed", || ts.is_poisoned()).await;
        assert_eq!(state(&ts), IndexState::Building);
        assert!(ts.resume_writes().await.expect("resume"), "the store was poisoned");
        wait_ready(&ts, "after the store took writes again").await;
        assert_consistent(&ts, "after the resumed build").await;
        stop(ts, worker).await.close().await.expect("close");
    })
}

/// A store error that stays (a corrupt row) stops one table's build every time it is tried, with
/// that index BUILDING; the builds of other tables go on to READY.
#[test]
fn a_build_that_fails_on_the_store_holds_up_no_other_table_s_build() {
    run(|| async move {
        let (disk, clock) = (sim(8), ManualClock::new(T0_MS));
        let config = StoreConfig { preallocate_segments: false, ..common::test_config() };
        let ts = TableStore::open(disk.clone(), common::SIM_DIR, config, Rc::new(clock.clone()));
        let ts = ts.await.expect("open");
        // First in the catalog's order (by name), so the worker meets it first.
        ts.ddl("CREATE TABLE early (id LONG, grp INTEGER, PRIMARY KEY (id))").await.expect("table");
        for id in 0..10 {
            let row = [("id", Value::Long(id)), ("grp", Value::Integer(1))];
            ts.put("early", &row, Durability::NoSync).await.expect("put");
        }
        let ts = load(ts).await;
        ts.ddl("CREATE INDEX early_grp ON early (grp)").await.expect("create index");
        ts.store().sync().await.expect("sync");
        // One row of `early` corrupt on the disk: every read of it fails its checksum.
        let prefix = table_prefix(ts.table("early").expect("table").id());
        let (path, record) = common::segment_paths(&disk)
            .into_iter()
            .flat_map(|p| {
                let records = common::records_in(&disk.file_bytes(&p).expect("segment"));
                records.into_iter().map(move |r| (p.clone(), r))
            })
            .find(|(_, r)| r.key.starts_with(&prefix))
            .expect("a record of early on the disk");
        // Header, key, value: a bit of the value, under the record's body checksum.
        assert!(!record.value.is_empty());
        let value_at = record.offset + RECORD_HEADER_BYTES + record.key.len();
        common::flip_bit(&disk, &path, value_at, 0);

        for attempt in 0..2 {
            let e = ts.finish_index_work().await.expect_err("early's build fails");
            assert_eq!(e.code(), 614, "attempt {attempt}: CorruptRecord: {e}");
            let early = ts.table("early").expect("table");
            assert_eq!(early.index("early_grp").expect("index").state(), IndexState::Building);
            assert_eq!(state(&ts), IndexState::Ready, "attempt {attempt}: items' build went on");
        }
        assert!(ts.store().stats().counters.corrupt_reads >= 2);
        assert_consistent(&ts, "items, next to a failing build").await;
        Rc::try_unwrap(ts).expect("one owner").close().await.expect("close");
    })
}
