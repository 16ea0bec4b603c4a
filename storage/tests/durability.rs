//! Proves the durability contract of each write mode and the input limits.
//!
//! How, on the simulated disk (which keeps only what an fdatasync covered when power fails):
//! - `Sync`: right after each `Sync` put returns, no file of the store has an unsynced write, and
//!   a power loss that drops every unsynced write (`crash_losing_all_unsynced`) followed by a
//!   reopen still finds the value; this is repeated for many writes, sequentially and with many
//!   concurrent writers of all three modes (the crash then happens synchronously inside the task
//!   that just got its acknowledgement, so everything acknowledged before it must survive).
//!   `WriteNoSync` and `NoSync` writes may be lost by that crash; nothing is asserted about them.
//! - An injected fsync (or write) failure makes the waiting `Sync` put return `Error::Poisoned`,
//!   and every later write is refused with `Error::Poisoned`; after a crash and reopen the store
//!   works and keeps what was acknowledged before the failure.
//! - A `NoSync` write reaches the disk within the flush interval without anyone asking: the test
//!   polls the simulated file in small timer steps and requires the value within 100 intervals.
//! - Once the write buffer holds `WRITE_BUFFER_BYTES_MAX`, a `NoSync` put waits for the
//!   flusher's write, and the store counts it.
//! - Empty keys, oversized keys and values, oversized and empty batches are typed errors that
//!   write nothing (the next LSN and the files stay as they were); the exact limits are accepted.

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use ringstore_storage::constants::{
    BATCH_BYTES_MAX, BATCH_OPS_MAX, DMA_ALIGN_BYTES, KEY_BYTES_MAX, SEGMENT_SIZE_BYTES_MAX,
    VALUE_BYTES_MAX, WRITE_BUFFER_BYTES_MAX,
};
use ringstore_storage::disk::sim::{SimDisk, SimOp};
use ringstore_storage::record;
use ringstore_storage::{BatchOp, Durability, Error, ManualClock, StoreConfig, WriteOptions};

fn opts(d: Durability) -> WriteOptions {
    WriteOptions::durability(d)
}

fn assert_nothing_unsynced(disk: &SimDisk, when: &str) {
    for path in disk.file_names() {
        assert_eq!(
            disk.unsynced_writes(&path),
            0,
            "{when}: {} has unsynced writes",
            path.display()
        );
    }
}

#[test]
fn every_acknowledged_sync_write_survives_losing_all_unsynced_writes() {
    common::run(|| async {
        let disk = common::sim(61);
        let clock = ManualClock::new(common::T0_MS);
        let mut acked: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for round in 0..40u32 {
            let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
            for (k, v) in &acked {
                let got = store.get(k).await.expect("get").map(|v| v.value.to_vec());
                assert_eq!(got.as_ref(), Some(v), "round {round}: acknowledged write lost");
            }
            // Some writes that need not survive, then the Sync write that must.
            for i in 0..round % 4 {
                let d = if i % 2 == 0 { Durability::NoSync } else { Durability::WriteNoSync };
                store
                    .put(format!("loose-{round}-{i}").as_bytes(), b"x", opts(d))
                    .await
                    .expect("put");
            }
            let key = format!("sync-{round}").into_bytes();
            let value = format!("value of round {round}").into_bytes();
            store.put(&key, &value, opts(Durability::Sync)).await.expect("sync put");
            assert_nothing_unsynced(&disk, &format!("round {round}"));
            acked.push((key, value));
            if round % 3 == 0 {
                // A delete acknowledged with Sync is as durable as a put.
                let (k, _) = acked.remove(0);
                store.delete(&k, Durability::Sync).await.expect("delete");
                assert_nothing_unsynced(&disk, &format!("round {round} delete"));
                disk.crash_losing_all_unsynced();
                drop(store);
                let store =
                    common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
                assert_eq!(store.get(&k).await.expect("get"), None, "round {round}: delete lost");
                continue;
            }
            disk.crash_losing_all_unsynced();
            drop(store);
        }
    });
}

/// Keys and values whose `Sync` write was acknowledged before the crash.
type Acked = Rc<RefCell<Vec<(Vec<u8>, Vec<u8>)>>>;

#[test]
fn concurrent_writers_never_see_an_ack_before_the_fsync() {
    common::run(|| async {
        for seed in 0..6u64 {
            let disk = common::sim(seed);
            let clock = ManualClock::new(common::T0_MS);
            let store = Rc::new(
                common::open_sim(&disk, common::test_config(), &clock).await.expect("open"),
            );
            let crashed = Rc::new(Cell::new(false));
            let acked: Acked = Rc::default();
            let crash_after = 150 + 37 * seed as usize;
            let mut tasks = Vec::new();
            for w in 0..8u32 {
                let (store, disk) = (store.clone(), disk.clone());
                let (crashed, acked) = (crashed.clone(), acked.clone());
                tasks.push(glommio::spawn_local(async move {
                    for i in 0..10_000u32 {
                        let d = match (w + i) % 3 {
                            0 => Durability::Sync,
                            1 => Durability::WriteNoSync,
                            _ => Durability::NoSync,
                        };
                        let key = format!("w{w}-{}", i % 50).into_bytes();
                        let value = format!("w{w} write {i}").into_bytes();
                        let result = store.put(&key, &value, opts(d)).await;
                        if crashed.get() {
                            return;
                        }
                        result.expect("put before the crash");
                        if d == Durability::Sync {
                            acked.borrow_mut().push((key, value));
                            if acked.borrow().len() == crash_after {
                                // Power fails the moment this acknowledgement is seen.
                                disk.crash_losing_all_unsynced();
                                crashed.set(true);
                                return;
                            }
                        }
                    }
                }));
            }
            for t in tasks {
                t.await;
            }
            assert!(crashed.get(), "seed {seed}: the crash point was reached");
            drop(Rc::try_unwrap(store).expect("tasks are done"));
            let store =
                common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
            // A key written again after its acknowledged Sync write may hold the later value;
            // only the last acknowledged write of each key is checked exactly.
            let mut last = std::collections::BTreeMap::new();
            for (k, v) in acked.borrow().iter() {
                last.insert(k.clone(), v.clone());
            }
            for (k, v) in &last {
                let got = store.get(k).await.expect("get").expect("acknowledged key present");
                let (w, i) = parse(&got.value);
                let (aw, ai) = parse(v);
                assert_eq!(w, aw);
                assert!(
                    i >= ai,
                    "seed {seed}: key {k:?} lost its acknowledged write {ai}: has {i}"
                );
            }
        }
    });
}

/// (writer, write number) from a value written by the concurrent test.
fn parse(value: &[u8]) -> (u32, u32) {
    let s = std::str::from_utf8(value).expect("utf8");
    let (w, i) = s.strip_prefix('w').and_then(|s| s.split_once(" write ")).expect("format");
    (w.parse().expect("writer"), i.parse().expect("number"))
}

fn assert_poisoned<T: std::fmt::Debug>(r: ringstore_storage::Result<T>, what: &str) {
    assert!(matches!(r, Err(Error::Poisoned { .. })), "{what}: expected Poisoned, got {r:?}");
}

async fn poison_then_recover(op: SimOp, fresh: bool) {
    let disk = common::sim(62);
    let clock = ManualClock::new(common::T0_MS);
    let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
    if !fresh {
        store.put(b"before", b"kept", opts(Durability::Sync)).await.expect("put");
    }
    disk.fail_next(op);
    assert_poisoned(store.put(b"victim", b"v", opts(Durability::Sync)).await, "failing put");
    assert!(store.stats().poisoned.is_some());
    assert_poisoned(store.put(b"later", b"v", opts(Durability::NoSync)).await, "NoSync put");
    assert_poisoned(store.put(b"later", b"v", opts(Durability::WriteNoSync)).await, "WNS put");
    assert_poisoned(store.put(b"later", b"v", opts(Durability::Sync)).await, "Sync put");
    assert_poisoned(store.delete(b"before", Durability::Sync).await, "delete");
    let batch = [BatchOp::Delete { key: b"before".to_vec() }];
    assert_poisoned(store.write_batch(&batch, Durability::NoSync).await, "batch");
    assert!(store.get(b"later").await.expect("reads still work").is_none());
    assert!(store.close().await.is_err(), "close reports the poisoning");
    disk.crash_losing_all_unsynced();
    let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
    if !fresh {
        let got = store.get(b"before").await.expect("get").expect("acknowledged write kept");
        assert_eq!(&got.value[..], b"kept");
    }
    assert!(store.get(b"later").await.expect("get").is_none(), "refused writes never land");
    store.put(b"after", b"works", opts(Durability::Sync)).await.expect("put after recovery");
    store.close().await.expect("close");
    let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
    assert_eq!(&store.get(b"after").await.expect("get").expect("present").value[..], b"works");
    store.close().await.expect("close");
}

#[test]
fn an_fsync_failure_poisons_the_store_until_restart() {
    common::run(|| async {
        poison_then_recover(SimOp::Fsync, false).await;
        poison_then_recover(SimOp::Fsync, true).await;
    });
}

#[test]
fn a_write_failure_poisons_the_store_until_restart() {
    common::run(|| async {
        poison_then_recover(SimOp::Write, false).await;
        poison_then_recover(SimOp::Write, true).await;
    });
}

/// Waits, in timer steps of 1 ms, until the segment files contain `needle`; returns whether they
/// did within `bound`.
async fn wait_until_on_disk(disk: &SimDisk, needle: &[u8], bound: Duration) -> bool {
    let deadline = std::time::Instant::now() + bound;
    loop {
        let found = common::segment_paths(disk).iter().any(|p| {
            disk.file_bytes(p).is_some_and(|b| b.windows(needle.len()).any(|w| w == needle))
        });
        if found {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        glommio::timer::sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn a_nosync_write_reaches_the_disk_within_the_flush_interval_unasked() {
    common::run(|| async {
        let disk = common::sim(63);
        let clock = ManualClock::new(common::T0_MS);
        let config = StoreConfig { flush_interval_ms: 10, ..common::test_config() };
        let bound = Duration::from_millis(100 * config.flush_interval_ms);
        let store = common::open_sim(&disk, config, &clock).await.expect("open");
        for i in 0..5u32 {
            // First write of a fresh store, later ones after earlier flushes, one after a Sync.
            let value = format!("lazily flushed value number {i}").into_bytes();
            let key = format!("lazy-{i}").into_bytes();
            store.put(&key, &value, opts(Durability::NoSync)).await.expect("put");
            assert!(wait_until_on_disk(&disk, &value, bound).await, "write {i} never flushed");
            if i == 2 {
                store.put(b"sync", b"s", opts(Durability::Sync)).await.expect("put");
            }
        }
        // A burst: every write in it reaches the disk, the last one included.
        for i in 0..100u32 {
            let value = format!("burst value {i:03}").into_bytes();
            store
                .put(format!("b{i}").as_bytes(), &value, opts(Durability::NoSync))
                .await
                .expect("put");
        }
        assert!(wait_until_on_disk(&disk, b"burst value 099", bound).await, "burst never flushed");
        store.close().await.expect("close");
    });
}

/// The write buffer bounds the log's memory: once `WRITE_BUFFER_BYTES_MAX` are appended and not
/// yet written, a `NoSync` put waits for the flusher's write instead of returning at once, and
/// the store counts it (`write_buffer_waits`, a node metric). The flush interval is a minute and
/// the segments are the largest, so nothing but the full buffer makes the flusher write.
#[test]
fn a_nosync_write_waits_for_the_flusher_once_the_write_buffer_is_full() {
    common::run(|| async {
        let disk = common::sim(67);
        let clock = ManualClock::new(common::T0_MS);
        let config = StoreConfig {
            segment_size_bytes: SEGMENT_SIZE_BYTES_MAX,
            flush_interval_ms: 60_000,
            ..common::test_config()
        };
        let store = common::open_sim(&disk, config, &clock).await.expect("open");
        let value = vec![7u8; 64 * 1024];
        // Each put appends one record of this size; the one that brings the pending bytes to
        // the bound is the first to wait (one fewer, in case the log counts anything else).
        let record_bytes = record::padded_len(7, value.len()) as usize;
        let puts_to_fill = (WRITE_BUFFER_BYTES_MAX - 1) / record_bytes - 1;
        for i in 0..puts_to_fill {
            store
                .put(format!("k{i:06}").as_bytes(), &value, opts(Durability::NoSync))
                .await
                .expect("put");
        }
        assert_eq!(store.stats().counters.write_buffer_waits, 0, "below the buffer's bound");
        for i in puts_to_fill..puts_to_fill + 8 {
            store
                .put(format!("k{i:06}").as_bytes(), &value, opts(Durability::NoSync))
                .await
                .expect("put");
        }
        let s = store.stats();
        assert!(
            s.counters.write_buffer_waits >= 1,
            "no write waited at the bound: {:?}",
            s.counters
        );
        assert!(s.counters.flushes >= 1, "the waiting write did not make the flusher write");
        store.close().await.expect("close");
    });
}

fn assert_err(r: ringstore_storage::Result<impl std::fmt::Debug>, want: &str) {
    let got = format!("{r:?}");
    assert!(got.starts_with(&format!("Err({want}")), "expected {want}, got {got}");
}

#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
#[test]
fn limits_are_typed_errors_that_write_nothing() {
    common::run(|| async {
        let disk = common::sim(64);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        store.put(b"existing", b"v", WriteOptions::default()).await.expect("put");
        let next_lsn = store.stats().next_lsn;
        let files = |d: &SimDisk| {
            d.file_names().into_iter().map(|p| (d.file_bytes(&p), p)).collect::<Vec<_>>()
        };
        let before = files(&disk);
        let big_key = vec![b'k'; KEY_BYTES_MAX + 1];
        let big_value = vec![0u8; VALUE_BYTES_MAX + 1];
        let w = WriteOptions::default();
        assert!(matches!(store.put(b"", b"v", w).await, Err(Error::KeyEmpty)));
        assert!(matches!(store.delete(b"", Durability::Sync).await, Err(Error::KeyEmpty)));
        assert!(matches!(store.get(b"").await, Err(Error::KeyEmpty)));
        let too_large =
            format!("KeyTooLarge {{ len: {}, max: {KEY_BYTES_MAX} }}", KEY_BYTES_MAX + 1);
        assert_err(store.put(&big_key, b"v", w).await, &too_large);
        assert_err(store.delete(&big_key, Durability::Sync).await, "KeyTooLarge");
        assert_err(store.get(&big_key).await, "KeyTooLarge");
        assert_err(store.put(b"k", &big_value, w).await, "ValueTooLarge { len: 1048577");
        let put =
            |key: Vec<u8>, value: Vec<u8>| BatchOp::Put { key, value, version: None, expiry_ms: 0 };
        assert!(matches!(store.write_batch(&[], Durability::Sync).await, Err(Error::BatchEmpty)));
        let many: Vec<BatchOp> =
            (0..=BATCH_OPS_MAX).map(|i| put(i.to_string().into_bytes(), vec![])).collect();
        assert_err(
            store.write_batch(&many, Durability::Sync).await,
            "BatchTooManyOps { ops: 1025, max: 1024 }",
        );
        let heavy = vec![
            put(b"a".to_vec(), vec![1; VALUE_BYTES_MAX]),
            put(b"b".to_vec(), vec![2; VALUE_BYTES_MAX]),
        ];
        assert_err(
            store.write_batch(&heavy, Durability::Sync).await,
            &format!(
                "BatchTooLarge {{ bytes: {}, max: {BATCH_BYTES_MAX}",
                2 * (VALUE_BYTES_MAX + 56)
            ),
        );
        // One bad operation anywhere refuses the whole batch.
        let mixed = vec![put(b"ok".to_vec(), b"v".to_vec()), put(Vec::new(), b"v".to_vec())];
        assert!(matches!(store.write_batch(&mixed, Durability::Sync).await, Err(Error::KeyEmpty)));
        let mixed = vec![put(b"ok".to_vec(), b"v".to_vec()), put(b"x".to_vec(), big_value.clone())];
        assert_err(store.write_batch(&mixed, Durability::Sync).await, "ValueTooLarge");
        let mixed =
            vec![put(b"ok".to_vec(), b"v".to_vec()), BatchOp::Delete { key: big_key.clone() }];
        assert_err(store.write_batch(&mixed, Durability::Sync).await, "KeyTooLarge");

        assert_eq!(store.stats().next_lsn, next_lsn, "a refused write takes no LSN");
        store.sync().await.expect("sync");
        assert!(files(&disk) == before, "a refused write changes no file");
        assert!(store.get(b"ok").await.expect("get").is_none());

        // The limits themselves are accepted.
        let max_key = vec![b'k'; KEY_BYTES_MAX];
        store.put(&max_key, &vec![7; VALUE_BYTES_MAX], w).await.expect("largest key and value");
        let full: Vec<BatchOp> =
            (0..BATCH_OPS_MAX).map(|i| put(i.to_string().into_bytes(), vec![1])).collect();
        store.write_batch(&full, Durability::Sync).await.expect("largest batch by count");
        let fits = VALUE_BYTES_MAX - 100;
        let big = vec![put(b"a".to_vec(), vec![1; fits]), put(b"b".to_vec(), vec![2; fits])];
        store.write_batch(&big, Durability::Sync).await.expect("a batch just under the byte limit");
        store.close().await.expect("close");
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        assert_eq!(
            store.get(&max_key).await.expect("get").expect("present").value.len(),
            VALUE_BYTES_MAX
        );
        assert_eq!(
            store.get(b"1023").await.expect("get").expect("present").value.to_vec(),
            vec![1]
        );
        assert_eq!(store.get(b"b").await.expect("get").expect("present").value.len(), fits);
        store.close().await.expect("close");
    });
}

/// Waits for the store's next progress while `wait` is not durable yet; its final answer.
async fn durable_or_error(
    store: &ringstore_storage::Store<SimDisk>,
    wait: ringstore_storage::DurableWait,
) -> ringstore_storage::Result<bool> {
    loop {
        let progress = store.progress_listener();
        match store.is_durable(wait) {
            Ok(false) => progress.await,
            answer => return answer,
        }
    }
}

/// The node's acknowledger sees writes through `put_now`, `progress_listener` and `is_durable`
/// instead of awaiting each one: a Sync write is reported durable only after its flush, and a
/// write whose fsync fails is never reported durable but Poisoned, as `put` would return.
#[test]
fn a_failed_flush_is_never_reported_durable() {
    common::run(|| async {
        let disk = common::sim(63);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        let ok = store.put_now(b"ok", b"v", opts(Durability::Sync)).expect("append");
        let wait = ok.wait.expect("a Sync put waits for its flush");
        assert!(!store.is_durable(wait).expect("healthy"), "not durable before its flush");
        assert!(durable_or_error(&store, wait).await.expect("healthy"), "durable after it");
        let buffered = store.put_now(b"n", b"v", opts(Durability::NoSync)).expect("append");
        assert!(buffered.wait.is_none(), "a NoSync put waits for nothing");
        disk.fail_next(SimOp::Fsync);
        let victim = store.put_now(b"victim", b"v", opts(Durability::Sync)).expect("append");
        let wait = victim.wait.expect("a Sync put waits for its flush");
        assert_poisoned(durable_or_error(&store, wait).await, "a write whose fsync failed");
        assert_poisoned(store.put_now(b"later", b"v", opts(Durability::NoSync)), "later append");
        assert!(store.close().await.is_err(), "close reports the poisoning");
    });
}

/// A poisoned store takes writes again after `resume`, without a restart (issue 12, item 6):
/// the acknowledged durable write survives, the write whose flush failed is not invented, its
/// waiter (taken before the resume) still gets the poison and never success from the new
/// state's counters, and new writes are durable across a crash that drops everything unsynced.
/// Before `Store::resume` existed the store stayed poisoned until it was reopened.
#[test]
fn a_poisoned_store_takes_writes_again_after_resume() {
    common::run(|| async {
        for op in [SimOp::Write, SimOp::Fsync] {
            let disk = common::sim(64);
            let clock = ManualClock::new(common::T0_MS);
            let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
            assert!(!store.resume().await.expect("healthy"), "{op:?}: nothing to resume");
            store.put(b"before", b"kept", opts(Durability::Sync)).await.expect("put");
            disk.fail_next(op);
            let victim = store.put_now(b"victim", b"v", opts(Durability::Sync)).expect("append");
            let wait = victim.wait.expect("a Sync put waits for its flush");
            let lost = store.put_now(b"lost", b"v", opts(Durability::Sync)).expect("append");
            let lost_wait = lost.wait.expect("a Sync put waits for its flush");
            assert_poisoned(durable_or_error(&store, wait).await, "the write whose flush failed");
            assert_poisoned(store.put(b"later", b"v", opts(Durability::Sync)).await, "poisoned");

            assert!(store.resume().await.expect("resume"), "{op:?}: resumed");
            assert!(store.stats().poisoned.is_none(), "{op:?}: poison cleared");
            assert_eq!(store.stats().counters.write_resumes, 1, "{op:?}");
            assert_poisoned(store.is_durable(lost_wait), "a write appended before the resume");
            assert_poisoned(store.wait(lost_wait).await, "waiting for it");
            store.put(b"after", b"works", opts(Durability::Sync)).await.expect("put after resume");
            let kept = store.get(b"before").await.expect("get").expect("acknowledged write kept");
            assert_eq!(&kept.value[..], b"kept", "{op:?}");
            // A write that failed may or may not have reached the file; if it did, it is the
            // value written, never anything else.
            if let Some(v) = store.get(b"victim").await.expect("get") {
                assert_eq!(&v.value[..], b"v", "{op:?}");
            }
            store.sync().await.expect("sync");
            disk.crash_losing_all_unsynced();
            let store =
                common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
            for (key, value) in [(&b"before"[..], &b"kept"[..]), (b"after", b"works")] {
                let got = store.get(key).await.expect("get").expect("durable write kept");
                assert_eq!(&got.value[..], value, "{op:?} {key:?}");
            }
            store.close().await.expect("close");
        }
    });
}

/// A misdirected write (the device puts a flush on the block of an earlier one and reports
/// success) is caught on read: the key whose record was overwritten reads as 614, never as the
/// other key's value, and the key whose write went astray reads as 614 too, never as absent or
/// older. Reads check that the record at an index location holds the key asked for.
#[test]
fn a_misdirected_write_is_caught_on_read() {
    common::run(|| async {
        let disk = common::sim(65);
        let clock = ManualClock::new(common::T0_MS);
        // No record cache, so reads go to the log.
        let config = StoreConfig { cache_capacity_bytes: 0, ..common::test_config() };
        let store = common::open_sim(&disk, config, &clock).await.expect("open");
        store.put(b"a", b"first", opts(Durability::Sync)).await.expect("put a");
        // The next flush would go to the block after a's; it lands on a's block instead.
        disk.misdirect_next_write(-(DMA_ALIGN_BYTES as i64));
        store.put(b"b", b"second", opts(Durability::Sync)).await.expect("put b (acknowledged)");
        for key in [&b"a"[..], b"b"] {
            match store.get(key).await {
                Err(Error::CorruptRecord { .. }) => {}
                other => panic!("{key:?}: expected CorruptRecord, got {other:?}"),
            }
        }
        store.close().await.ok();
    });
}
