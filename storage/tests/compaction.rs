//! Proves that compaction keeps every key's newest value, never brings a deleted key back, and
//! bounds disk use.
//!
//! How: on the simulated disk with the smallest segments, an overwrite-heavy load (many rounds
//! over a key set, with deletes and re-puts) is followed by `Store::compact`. Every key must then
//! read its newest value and deleted keys stay deleted, after the compaction, after a clean
//! close and reopen, and after a power loss following another compaction; and
//! `disk_bytes <= live_bytes / (1 - garbage_ratio_threshold) + segment_size_bytes`. A second scenario puts keys in one
//! segment, deletes them (tombstones in a later segment that compaction can drop once a checkpoint
//! covers them, while the older puts stay in a segment compaction keeps), and crashes the disk
//! with seeded losses and tearing either after the compaction or at many points in the middle of
//! it: no deleted key ever comes back and every other key keeps its newest value. A third runs
//! writes and deletes between compaction's steps (its disk operations and the steps of its index
//! re-pointing), so that keys change between the copy of their record and the index's
//! re-pointing to it: newest values, and live bytes exactly the sum of the live records.
//! Compaction finds a victim's live records by walking the index and reads only their ranges
//! (the default); the overwrite-heavy scenario also runs reading whole segments.

mod common;

use std::collections::BTreeMap;

use futures_lite::future::{poll_once, yield_now};
use ringstore_storage::constants::SEGMENT_SIZE_BYTES_MIN;
use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::record;
use ringstore_storage::{Durability, ManualClock, Store, StoreConfig, WriteOptions};

type Model = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

fn nosync() -> WriteOptions {
    WriteOptions::durability(Durability::NoSync)
}

fn value(key: &[u8], round: u32, len: usize) -> Vec<u8> {
    let mut v = format!("{}/{round}/", String::from_utf8_lossy(key)).into_bytes();
    v.resize(len, round as u8);
    v
}

async fn check(store: &Store<SimDisk>, model: &Model, when: &str) {
    for (key, want) in model {
        let got = store.get(key).await.expect("get").map(|v| v.value.to_vec());
        assert!(
            got.as_ref() == want.as_ref(),
            "{when}: key {:?} has the wrong value",
            String::from_utf8_lossy(key)
        );
    }
    let live: BTreeMap<Vec<u8>, Vec<u8>> =
        model.iter().filter_map(|(k, v)| v.clone().map(|v| (k.clone(), v))).collect();
    assert!(common::dump(store).await.expect("scan") == live, "{when}: scan differs");
}

/// Once compaction has caught up every sealed segment is at least `1 - threshold` live.
fn assert_disk_bound(store: &Store<SimDisk>, when: &str) {
    let s = store.stats();
    let live_share = 1.0 - common::test_config().garbage_ratio_threshold;
    let bound = s.live_bytes as f64 / live_share + SEGMENT_SIZE_BYTES_MIN as f64;
    assert!(
        s.disk_bytes as f64 <= bound,
        "{when}: disk {} > live {} / {live_share} + one segment",
        s.disk_bytes,
        s.live_bytes
    );
}

/// Rounds of overwrites over `keys` keys of `len` bytes, deleting a rotating fifth of them.
async fn churn(
    store: &Store<SimDisk>,
    model: &mut Model,
    rounds: std::ops::Range<u32>,
    keys: u32,
    len: usize,
) {
    for round in rounds {
        for k in 0..keys {
            let key = format!("key-{k:05}").into_bytes();
            if (k + round) % 5 == 0 {
                store.delete(&key, Durability::NoSync).await.expect("delete");
                model.insert(key, None);
            } else {
                let v = value(&key, round, len);
                store.put(&key, &v, nosync()).await.expect("put");
                model.insert(key, Some(v));
            }
        }
    }
}

/// Whole segments read: the dead-record map drops every record that died in this session.
#[test]
fn overwrite_heavy_load_compacts_to_newest_values_within_the_disk_bound() {
    overwrite_heavy_load(false);
}

/// Only the live records' ranges read, found by walking the index.
#[test]
fn overwrite_heavy_load_compacts_reading_only_live_ranges() {
    overwrite_heavy_load(true);
}

fn overwrite_heavy_load(reads_live_ranges: bool) {
    common::run(move || async move {
        let disk = common::sim(51);
        let clock = ManualClock::new(common::T0_MS);
        let config = StoreConfig {
            compaction_reads_live_ranges: reads_live_ranges,
            ..common::test_config()
        };
        let store = common::open_sim(&disk, config.clone(), &clock).await.expect("open");
        let mut model = Model::new();
        churn(&store, &mut model, 0..16, 1_500, 700).await;
        store.sync().await.expect("sync");
        let before = store.stats();
        let report = store.compact().await.expect("compact");
        assert!(report.segments_compacted > 0, "the load leaves garbage: {report:?} {before:?}");
        if reads_live_ranges {
            // Every victim's live records were found in the index, and only their ranges read:
            // less than the segments' bytes (the newest round's records are all in the active
            // segment, so the victims here hold none at all).
            assert_eq!(report.segments_walked, report.segments_compacted, "{report:?}");
            assert!(report.bytes_read < report.bytes_reclaimed, "{report:?}");
        } else {
            // Every overwrite in this session marked the record it replaced: compaction dropped
            // those without asking the index (the dead-record map).
            assert!(
                report.records_known_dead > 0
                    && report.records_known_dead <= report.records_dropped,
                "{report:?}"
            );
            assert_eq!(report.segments_walked, 0, "{report:?}");
            assert!(report.bytes_read > 0, "{report:?}");
        }
        assert_eq!(store.stats().counters.compaction_read_bytes, report.bytes_read);
        assert!(store.stats().disk_bytes < before.disk_bytes);
        // The metrics count what the pass moved and retired; the rest of it was garbage.
        let counters = store.stats().counters;
        assert_eq!(
            (counters.compaction_moved_bytes, counters.compaction_reclaimed_bytes),
            (report.bytes_moved, report.bytes_reclaimed)
        );
        assert!(report.bytes_reclaimed > report.bytes_moved, "{report:?}");
        check(&store, &model, "after compaction").await;
        assert_disk_bound(&store, "after compaction");
        store.close().await.expect("close");

        let store = common::open_sim(&disk, config.clone(), &clock).await.expect("reopen");
        check(&store, &model, "after close and reopen").await;
        assert_disk_bound(&store, "after reopen");
        churn(&store, &mut model, 16..24, 1_500, 700).await;
        store.sync().await.expect("sync");
        store.compact().await.expect("compact again");
        assert_disk_bound(&store, "after the second compaction");
        // Compaction checkpoints, which syncs every earlier write: all of them survive.
        disk.crash_losing_all_unsynced();
        drop(store);
        let store = common::open_sim(&disk, config, &clock).await.expect("reopen after crash");
        assert!(store.recovery_report().corrupt.is_empty());
        check(&store, &model, "after crash and reopen").await;
        let report = store.compact().await.expect("compact after recovery");
        // Records that died before this open are not in the maps: the index decides for them.
        assert_eq!(report.records_known_dead, 0, "{report:?}");
        check(&store, &model, "after compacting the recovered store").await;
        assert_disk_bound(&store, "after compacting the recovered store");
        store.close().await.expect("close");
    });
}

/// Compaction copies the live records of a segment this process wrote without asking the index,
/// and re-points the index later, in key order: keys written and deleted between a copy and
/// its re-pointing must keep their newest state, and the copies they made garbage must not be
/// counted live (live bytes stay the exact sum of the live records).
#[test]
fn writes_during_compaction_keep_newest_values_and_exact_live_bytes() {
    common::run(|| async {
        let disk = common::sim(77);
        let clock = ManualClock::new(common::T0_MS);
        // The loop below never lets the executor reach its reactor, so a flusher's timed wait
        // for more Sync writers (the commit delay) would last until the executor preempts it,
        // and this loop would write many segments meanwhile: the wait is off.
        let config = StoreConfig { commit_delay_max_us: 0, ..common::test_config() };
        let store = common::open_sim(&disk, config.clone(), &clock).await.expect("open");
        let mut model = Model::new();
        // 5,000 keys, then the first 3,000 again: the first segment (about 5,600 records of 4
        // MiB) is over half garbage (the default threshold), and its live records, about 2,600,
        // take compaction more than one step of index re-pointing (2,048 moves a step).
        for (round, keys) in [(0, 0..5_000), (1, 0..3_000)] {
            for k in keys {
                put(&store, &mut model, format!("key-{k:05}"), round, 700).await;
            }
        }
        store.sync().await.expect("sync");
        let before = store.stats();
        let mut report = None;
        let mut round = 100;
        {
            let mut fut = std::pin::pin!(store.compact());
            while report.is_none() {
                report = poll_once(&mut fut).await;
                // The flusher and the disk's operations run as other tasks.
                yield_now().await;
                // Between compaction's steps (each of its disk operations yields): overwrite or
                // delete keys it may have copied, different ones each time.
                round += 1;
                for k in (0..8).map(|j| 3_000 + (round * 8 + j) * 37 % 2_000) {
                    let key = format!("key-{k:05}").into_bytes();
                    if k % 3 == 0 {
                        store.delete(&key, Durability::NoSync).await.expect("delete");
                        model.insert(key, None);
                    } else {
                        let v = value(&key, round, 700);
                        store.put(&key, &v, nosync()).await.expect("put");
                        model.insert(key, Some(v));
                    }
                }
            }
        }
        let report = report.expect("done").expect("compact");
        assert!(report.records_moved > 2_048, "{report:?}");
        // The live records were found by walking the index, and read where they are.
        assert_eq!(report.segments_walked, report.segments_compacted, "{report:?}");
        // Each checkpoint's snapshot is a step, and so are each compacted segment's walk of the
        // index (one step for an index this small), its sort of its moves and its re-pointing,
        // 2,048 moves at a time: over 2,048 moves in one segment make more re-pointing steps than
        // segments.
        let after = store.stats();
        let steps = after.maintenance_step_us.count - before.maintenance_step_us.count;
        let snapshots = after.counters.checkpoints - before.counters.checkpoints;
        let repointing = steps - snapshots - report.segments_walked - report.segments_compacted;
        assert!(
            repointing > report.segments_compacted,
            "{steps} steps, {snapshots} snapshots, {repointing} re-pointing steps for {report:?}"
        );
        assert!(
            report.copies_superseded > 0,
            "no write fell between a copy and its re-pointing: {report:?}"
        );
        check(&store, &model, "after compaction with writes in between").await;
        let live: u64 = model
            .iter()
            .filter_map(|(k, v)| v.as_ref().map(|v| record::padded_len(k.len(), v.len())))
            .sum();
        assert_eq!(store.stats().live_bytes, live, "live bytes after compaction");
        store.sync().await.expect("sync");
        store.compact().await.expect("compact again");
        check(&store, &model, "after a second compaction").await;
        assert_eq!(store.stats().live_bytes, live, "live bytes after a second compaction");
        assert_disk_bound(&store, "after a second compaction");
        store.close().await.expect("close");
        let store = common::open_sim(&disk, config, &clock).await.expect("reopen");
        check(&store, &model, "after close and reopen").await;
        store.close().await.expect("close");
    });
}

/// `Store::compact` promises that no sealed segment over the garbage threshold is left, so the
/// disk bound must hold when it returns even if the writes before it were never synced (the
/// compaction's own flush seals the segment they fill).
#[test]
fn compact_right_after_unsynced_writes_meets_the_disk_bound() {
    common::run(|| async {
        let disk = common::sim(52);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        let mut model = Model::new();
        churn(&store, &mut model, 0..8, 1_500, 700).await;
        store.sync().await.expect("sync");
        store.compact().await.expect("compact");
        assert_disk_bound(&store, "after the synced compaction");
        churn(&store, &mut model, 8..16, 1_500, 700).await;
        let report = store.compact().await.expect("compact");
        check(&store, &model, "after compaction").await;
        store.sync().await.expect("sync");
        assert_disk_bound(&store, &format!("after compacting unsynced writes ({report:?})"));
        store.close().await.expect("close");
    });
}

const DOOMED: u32 = 100;
const FILLER: u32 = 60;
const CHURNED: u32 = 40;
const BIG: usize = 64 * 1024;

async fn put(store: &Store<SimDisk>, model: &mut Model, key: String, round: u32, len: usize) {
    let key = key.into_bytes();
    let v = value(&key, round, len);
    store.put(&key, &v, nosync()).await.expect("put");
    model.insert(key, Some(v));
}

/// Puts doomed and filler keys in segment 1 (which stays mostly live), deletes the doomed keys,
/// and overwrites the churned keys until later segments are mostly garbage. Everything is synced.
async fn tombstone_scenario(disk: &SimDisk, clock: &ManualClock) -> (Store<SimDisk>, Model) {
    let store = common::open_sim(disk, common::test_config(), clock).await.expect("open");
    let mut model = Model::new();
    for k in 0..DOOMED {
        put(&store, &mut model, format!("doomed-{k:03}"), 0, 1_000).await;
    }
    for k in 0..FILLER {
        put(&store, &mut model, format!("filler-{k:03}"), 0, BIG).await;
    }
    for k in 0..DOOMED {
        let key = format!("doomed-{k:03}").into_bytes();
        assert!(store.delete(&key, Durability::NoSync).await.expect("delete"));
    }
    for round in 1..6 {
        for k in 0..CHURNED {
            put(&store, &mut model, format!("churned-{k:03}"), round, BIG).await;
        }
    }
    for k in 0..DOOMED {
        model.insert(format!("doomed-{k:03}").into_bytes(), None);
    }
    store.sync().await.expect("sync");
    assert!(store.stats().segments >= 4, "the scenario spans several segments");
    (store, model)
}

#[test]
fn deleted_keys_stay_deleted_after_compaction_and_a_crash() {
    common::run(|| async {
        for seed in 0..8 {
            let disk = common::sim(seed);
            let clock = ManualClock::new(common::T0_MS);
            let (store, model) = tombstone_scenario(&disk, &clock).await;
            let report = store.compact().await.expect("compact");
            assert!(report.segments_compacted > 0, "{report:?}");
            check(&store, &model, "after compaction").await;
            // Writes after the compaction that the crash may lose; they touch other keys.
            for k in 0..20u32 {
                store.put(format!("late-{k}").as_bytes(), b"late", nosync()).await.expect("put");
            }
            disk.crash();
            drop(store);
            let store =
                common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
            check(&store, &model, &format!("seed {seed}: after crash")).await;
            // A second compaction and crash on the recovered store changes nothing.
            store.compact().await.expect("compact");
            disk.crash();
            drop(store);
            let store =
                common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
            check(&store, &model, &format!("seed {seed}: after second crash")).await;
        }
    });
}

#[test]
fn a_crash_anywhere_inside_compaction_never_resurrects_a_deleted_key() {
    common::run(|| async {
        // How many times compaction yields in this scenario, measured once.
        let disk = common::sim(1000);
        let clock = ManualClock::new(common::T0_MS);
        let (store, _) = tombstone_scenario(&disk, &clock).await;
        let mut polls = 0u32;
        {
            let mut fut = std::pin::pin!(store.compact());
            while poll_once(&mut fut).await.is_none() {
                polls += 1;
                yield_now().await;
            }
        }
        drop(store);
        assert!(polls > 10, "compaction does I/O");
        let points: Vec<u32> = (0..40).map(|i| i * polls / 40).chain([polls - 1, polls]).collect();
        for (n, at) in points.into_iter().enumerate() {
            let disk = common::sim(2000 + n as u64);
            let (store, model) = tombstone_scenario(&disk, &clock).await;
            {
                let mut fut = std::pin::pin!(store.compact());
                for _ in 0..at {
                    if poll_once(&mut fut).await.is_some() {
                        break;
                    }
                    yield_now().await;
                }
                // Power fails here, with compaction (maybe) in flight.
                disk.crash();
            }
            drop(store);
            let store =
                common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
            check(&store, &model, &format!("crash after {at} of {polls} compaction steps")).await;
            store.compact().await.expect("compact after recovery");
            check(&store, &model, &format!("compacted again after crash at {at}")).await;
        }
    });
}

/// A failed directory sync while deleting compacted segments must not leave the store unable to
/// checkpoint: either it poisons itself (a failed fsync stops writes) or later checkpoints work.
/// The failure is injected right after the first compacted segment's file is removed, so it hits
/// the directory sync that should make the removal durable.
#[test]
fn a_failed_directory_sync_while_deleting_segments_does_not_wedge_checkpoints() {
    common::run(|| async {
        let disk = common::sim(53);
        let clock = ManualClock::new(common::T0_MS);
        let (store, model) = tombstone_scenario(&disk, &clock).await;
        let before = common::segment_paths(&disk);
        let mut armed = false;
        let result = {
            let mut fut = std::pin::pin!(store.compact());
            loop {
                if let Some(r) = poll_once(&mut fut).await {
                    break r;
                }
                let now = common::segment_paths(&disk);
                if !armed && before.iter().any(|p| !now.contains(p)) {
                    disk.fail_next(ringstore_storage::disk::sim::SimOp::Fsync);
                    armed = true;
                }
                yield_now().await;
            }
        };
        assert!(armed, "compaction removed a segment");
        assert!(result.is_err(), "the injected directory sync failure is reported: {result:?}");
        let checkpoint = store.checkpoint().await;
        let poisoned = store.stats().poisoned.is_some();
        assert!(
            poisoned || checkpoint.is_ok(),
            "not poisoned, yet checkpoints keep failing: {checkpoint:?}"
        );
        if !poisoned {
            check(&store, &model, "after the failed directory sync").await;
            store.close().await.expect("close");
        } else {
            drop(store);
        }
        disk.crash_losing_all_unsynced();
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        check(&store, &model, "after recovery").await;
        store.close().await.expect("close");
    });
}
