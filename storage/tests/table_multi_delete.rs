//! multiDelete of a whole shard key is one atomic operation however many rows it deletes (one
//! range tombstone in the log): a concurrent reader sees all of the rows or none, a power loss at
//! any point leaves all of them or none, and neither compaction nor a checkpoint brings any back.
//!
//! Sizes: the reader test and the crash test delete 100,000 rows (issue 14's figure); the
//! compaction test 40,000 (over three segments). The crash test starts each seed from one of two
//! loaded disks: one closed cleanly (the rows are in a checkpoint) and one copied from a store
//! that was only synced (the rows are only in the log, so recovery replays 100,000 puts and then
//! the range tombstone, by log position).

mod common;

use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_lite::future::{poll_once, yield_now};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_storage::constants::SCAN_LIMIT_MAX;
use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock};

use common::{checkpoint_path, open_tables, run, sim, T0_MS};

const TABLE: &str = "CREATE TABLE readings (device STRING, ts TIMESTAMP, note STRING, \
                     PRIMARY KEY (SHARD(device), ts DESC))";
const BYSTANDER_ROWS: i64 = 300;
/// Long enough that 20,000 rows fill several of the tests' 4 MiB segments.
const NOTE: &str = "a note long enough to spread the rows over several segments, so that \
                    compaction has whole segments of deleted rows to rewrite and the log has \
                    records of the deleted rows in more than one segment when it is replayed";

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

async fn load(ts: &TableStore<SimDisk>, device: &str, rows: i64) {
    for t in 0..rows {
        let row = [("device", s(device)), ("ts", Value::Timestamp(t)), ("note", s(NOTE))];
        ts.put("readings", &row, Durability::NoSync).await.expect("put");
    }
}

/// The rows under `device`, read in one snapshot (one page of up to `SCAN_LIMIT_MAX` rows).
async fn count(ts: &TableStore<SimDisk>, device: &str) -> usize {
    let key = [("device", s(device))];
    let req = RangeRequest::new(&key, SCAN_LIMIT_MAX);
    let page = ts.multi_get("readings", &req).await.expect("multiGet");
    page.rows.len()
}

async fn delete(ts: &TableStore<SimDisk>, device: &str, d: Durability) -> MultiDeleteOutcome {
    let key = [("device", s(device))];
    ts.multi_delete("readings", &RangeRequest::new(&key, 1), d).await.expect("multiDelete")
}

#[test]
fn a_hundred_thousand_rows_leave_at_once_for_a_concurrent_reader() {
    const ROWS: i64 = 100_000;
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let ts = Rc::new(open_tables(&disk, &clock).await.unwrap());
        ts.ddl(TABLE).await.unwrap();
        load(&ts, "victim", ROWS).await;
        load(&ts, "bystander", BYSTANDER_ROWS).await;
        ts.store().sync().await.unwrap();
        let all_keys = ts.store().stats().keys;

        // The reader: a whole-shard-key snapshot and the store's key count, again and again,
        // yielding between observations, until the delete has returned.
        let (done, looked) = (Rc::new(Cell::new(false)), Rc::new(Cell::new(0)));
        let reader = glommio::spawn_local({
            let (ts, done, looked) = (ts.clone(), done.clone(), looked.clone());
            async move {
                let (mut saw_all, mut saw_none, mut none_while_deleting) = (0, 0, 0);
                loop {
                    let finished = done.get();
                    let keys = ts.store().stats().keys;
                    let rows = count(&ts, "victim").await as i64;
                    match rows {
                        ROWS => {
                            assert_eq!(saw_none, 0, "the rows came back after they were gone");
                            assert_eq!(keys, all_keys, "the key count saw part of the delete");
                            saw_all += 1;
                        }
                        0 => {
                            assert_eq!(keys, all_keys - ROWS as u64, "key count: part of it");
                            saw_none += 1;
                            none_while_deleting += usize::from(!done.get());
                        }
                        n => panic!("the reader saw {n} of {ROWS} rows: a part of the delete"),
                    }
                    if finished {
                        return (saw_all, saw_none, none_while_deleting);
                    }
                    looked.set(looked.get() + 1);
                    yield_now().await;
                }
            }
        })
        .detach();
        // The delete starts once the reader has looked at least once, and waits for its fsync.
        while looked.get() == 0 {
            yield_now().await;
        }
        let outcome = delete(&ts, "victim", Durability::Sync).await;
        done.set(true);
        assert_eq!(outcome, MultiDeleteOutcome { deleted: ROWS as usize, resume: None });
        let (saw_all, saw_none, none_while_deleting) = reader.await.expect("reader finished");
        assert!(saw_all > 0 && saw_none > 0, "all: {saw_all}, none: {saw_none}");
        assert!(none_while_deleting > 0, "the reader never ran while the delete waited");
        assert_eq!(count(&ts, "bystander").await as i64, BYSTANDER_ROWS);
        Rc::into_inner(ts).expect("the reader is done").close().await.unwrap();
    });
}

/// Copies every file of `from` into a fresh simulated disk seeded with `seed`.
fn copy_disk(from: &SimDisk, seed: u64) -> SimDisk {
    let disk = sim(seed);
    for path in from.file_names() {
        disk.set_file_bytes(&path, from.file_bytes(&path).expect("listed file"));
    }
    disk
}

/// What a seed of the crash test does before the power fails.
#[derive(Debug, Clone, Copy)]
enum CrashPoint {
    /// While the delete is in flight: after this many polls and yields.
    DuringDelete(usize),
    /// After the delete returned, while a compaction runs: after this many of its polls.
    DuringCompaction(usize),
    /// After the delete returned, then maybe a compaction, a checkpoint, a re-inserted row.
    After { compact: bool, checkpoint: bool, reborn: bool },
}

const CRASH_ROWS: i64 = 100_000;

impl CrashPoint {
    fn draw(rng: &mut StdRng) -> CrashPoint {
        match rng.gen_range(0..3) {
            0 => CrashPoint::DuringDelete(rng.gen_range(0..6)),
            1 => CrashPoint::DuringCompaction(rng.gen_range(0..COMPACTION_POLLS_MAX)),
            _ => {
                let mut coin = || rng.gen_bool(0.5);
                CrashPoint::After { compact: coin(), checkpoint: coin(), reborn: coin() }
            }
        }
    }

    /// Runs the delete up to this point; returns whether the delete must survive the crash (it
    /// was acknowledged as durable, or a later sync covered it).
    async fn run(self, ts: &TableStore<SimDisk>, d: Durability) -> bool {
        let mut must_be_gone = false;
        match self {
            CrashPoint::DuringDelete(polls) => {
                let mut fut = Box::pin(delete(ts, "victim", d));
                for _ in 0..polls {
                    if let Some(o) = poll_once(&mut fut).await {
                        assert_eq!(o.deleted as i64, CRASH_ROWS);
                        return d == Durability::Sync;
                    }
                    yield_now().await;
                }
            }
            CrashPoint::DuringCompaction(polls) => {
                let o = delete(ts, "victim", d).await;
                assert_eq!(o, MultiDeleteOutcome { deleted: CRASH_ROWS as usize, resume: None });
                // A finished compaction synced the log, range tombstone included.
                return compact_for(ts, polls).await || d == Durability::Sync;
            }
            CrashPoint::After { compact, checkpoint, reborn } => {
                let o = delete(ts, "victim", d).await;
                assert_eq!(o, MultiDeleteOutcome { deleted: CRASH_ROWS as usize, resume: None });
                must_be_gone = d == Durability::Sync;
                if compact {
                    ts.store().compact().await.expect("compact");
                    must_be_gone = true;
                }
                if checkpoint {
                    ts.store().checkpoint().await.expect("checkpoint");
                    must_be_gone = true;
                }
                if reborn {
                    // Written after the range tombstone: it must win over it on replay.
                    let row =
                        [("device", s("victim")), ("ts", Value::Timestamp(7)), ("note", s(NOTE))];
                    ts.put("readings", &row, Durability::Sync).await.expect("put");
                }
            }
        }
        must_be_gone
    }
}

/// Most polls of a compaction before the power fails: fewer than a compaction of the crash
/// test's disk takes, so such a crash cuts it short (the test checks that some did).
const COMPACTION_POLLS_MAX: usize = 64;

/// Compactions that a crash cut short.
static COMPACTIONS_CUT: AtomicUsize = AtomicUsize::new(0);

/// Polls a compaction at most `polls` times; returns whether it finished.
async fn compact_for(ts: &TableStore<SimDisk>, polls: usize) -> bool {
    let mut compaction = Box::pin(ts.store().compact());
    for _ in 0..polls {
        if let Some(report) = poll_once(&mut compaction).await {
            report.expect("compact");
            return true;
        }
        yield_now().await;
    }
    COMPACTIONS_CUT.fetch_add(1, Ordering::Relaxed);
    false
}

/// One seed: the delete up to a random point, a power loss, a reopen. Returns whether the
/// rows were gone after it.
async fn crash_one(template: &SimDisk, clock: &ManualClock, seed: u64) -> bool {
    let mut rng = StdRng::seed_from_u64(seed);
    let disk = copy_disk(template, seed);
    let ts = open_tables(&disk, clock).await.expect("open");
    let d = [Durability::NoSync, Durability::WriteNoSync, Durability::Sync][rng.gen_range(0..3)];
    let point = CrashPoint::draw(&mut rng);
    // Unsynced writes of another shard key on their way with the delete.
    load(&ts, "noise", 50).await;
    let must_be_gone = point.run(&ts, d).await;
    disk.crash();
    drop(ts);

    let ts = open_tables(&disk, clock).await.expect("reopen");
    let left = count(&ts, "victim").await as i64;
    let what = format!("seed {seed}, {point:?}, {d:?}");
    assert_eq!(count(&ts, "bystander").await as i64, BYSTANDER_ROWS, "{what}");
    ts.close().await.expect("close");
    if matches!(point, CrashPoint::After { reborn: true, .. }) {
        assert_eq!(left, 1, "{what}: only the row written after the delete is back");
        return true;
    }
    if left != 0 {
        assert_eq!(left, CRASH_ROWS, "{what}: a part of the rows survived the delete");
        assert!(!must_be_gone, "{what}: an acknowledged durable delete was undone");
    }
    left == 0
}

/// The loaded table on a simulated disk: closed (so its rows are in a checkpoint), or only
/// synced and copied as it is (so its rows are only in the log).
async fn loaded_template(clock: &ManualClock, checkpointed: bool) -> SimDisk {
    let disk = sim(0);
    let ts = open_tables(&disk, clock).await.expect("open");
    ts.ddl(TABLE).await.expect("create the table");
    load(&ts, "victim", CRASH_ROWS).await;
    load(&ts, "bystander", BYSTANDER_ROWS).await;
    if checkpointed {
        ts.close().await.expect("close");
        assert!(disk.file_bytes(&checkpoint_path()).is_some(), "closing wrote a checkpoint");
        return disk;
    }
    ts.store().sync().await.expect("sync");
    let copy = copy_disk(&disk, 0);
    drop(ts);
    assert_eq!(copy.file_bytes(&checkpoint_path()), None, "no checkpoint holds the rows");
    copy
}

#[test]
fn a_crash_anywhere_around_a_multi_delete_leaves_all_rows_or_none() {
    const SEEDS: u64 = 48;
    run(|| async move {
        let clock = ManualClock::new(T0_MS);
        // Each template is loaded once and copied for every seed; odd seeds start from the log.
        let templates = [loaded_template(&clock, true).await, loaded_template(&clock, false).await];
        let (mut gone, mut kept) = ([0; 2], [0; 2]);
        for seed in 1..=SEEDS {
            let from = (seed % 2) as usize;
            if crash_one(&templates[from], &clock, seed).await {
                gone[from] += 1;
            } else {
                kept[from] += 1;
            }
        }
        // Both outcomes happen from both templates, so the crash really fell on both sides of
        // the delete, with the rows in a checkpoint and with the rows only in the log.
        for from in 0..2 {
            assert!(
                gone[from] > 0 && kept[from] > 0,
                "template {from}: gone {gone:?}, kept {kept:?}"
            );
        }
        assert!(COMPACTIONS_CUT.load(Ordering::Relaxed) > 0, "no crash fell inside a compaction");
    });
}

#[test]
fn compaction_and_checkpoints_after_a_multi_delete_bring_no_row_back() {
    const ROWS: i64 = 40_000;
    run(|| async move {
        let (disk, clock) = (sim(5), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(TABLE).await.unwrap();
        load(&ts, "victim", ROWS).await;
        load(&ts, "bystander", BYSTANDER_ROWS).await;
        ts.store().sync().await.unwrap();
        let segments = ts.store().stats().segments;
        assert!(segments >= 3, "the rows span several segments: {segments}");

        let o = delete(&ts, "victim", Durability::Sync).await;
        assert_eq!(o, MultiDeleteOutcome { deleted: ROWS as usize, resume: None });
        // The victim's segments are now garbage: compaction rewrites them, keeping the
        // bystander's rows, and must not revive the victim's.
        let report = ts.store().compact().await.unwrap();
        assert!(report.segments_compacted > 0, "{report:?}");
        assert_eq!((count(&ts, "victim").await, count(&ts, "bystander").await as i64), (0, 300));

        // A crash right after compaction: recovery from its checkpoint and the log after it.
        disk.crash();
        drop(ts);
        let ts = open_tables(&disk, &clock).await.unwrap();
        assert_eq!((count(&ts, "victim").await, count(&ts, "bystander").await as i64), (0, 300));

        // More writes, a range tombstone the checkpoint does not cover yet, a compaction that
        // must copy it forward or leave its segment, then a clean close and a replay.
        load(&ts, "victim", 100).await;
        delete(&ts, "victim", Durability::Sync).await;
        load(&ts, "bystander", BYSTANDER_ROWS).await;
        ts.store().compact().await.unwrap();
        ts.store().checkpoint().await.unwrap();
        ts.close().await.unwrap();
        let ts = open_tables(&disk, &clock).await.unwrap();
        assert_eq!((count(&ts, "victim").await, count(&ts, "bystander").await as i64), (0, 300));
        ts.close().await.unwrap();
    });
}
