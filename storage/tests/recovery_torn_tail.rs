//! Proves that a segment cut anywhere inside its last record (what a crash in the middle of the
//! last write leaves) loses exactly that record: everything before it loads, the cut record is
//! absent, recovery reports a torn tail and no corruption, and the reopened store takes new writes
//! that survive another reopen. The same holds for an atomic batch cut anywhere inside it: none of
//! the batch is visible, and the keys it would have changed keep their earlier values.
//!
//! How: a store on the simulated disk writes records with `Sync` and is dropped without a close
//! (so no checkpoint exists and recovery must scan the log). The segment's synced bytes are
//! captured once. Then, for every byte offset inside the last record (or the batch), a fresh
//! simulated disk receives a copy of the segment truncated at that offset, and a store is opened
//! on it and checked.

mod common;

use std::ops::Range;

use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::recovery::RecoveryReport;
use ringstore_storage::{record, BatchOp, Durability, ManualClock, Store, WriteOptions};

const EARLIER: usize = 8;

/// Segments that grow with each write, so that a cut file is what a crash in the last write
/// leaves (a torn write inside a preallocated segment is tested in preallocate.rs).
fn grown_config() -> ringstore_storage::StoreConfig {
    ringstore_storage::StoreConfig { preallocate_segments: false, ..common::test_config() }
}

fn key(i: usize) -> Vec<u8> {
    format!("key-{i}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("value number {i}, synced before the cut").into_bytes()
}

/// Writes the earlier records, then runs `last` and returns the segment's bytes and the byte
/// ranges the last write's records occupy.
async fn scenario<F, Fut>(last: F) -> (Vec<u8>, Vec<Range<usize>>)
where
    F: FnOnce(Store<SimDisk>) -> Fut,
    Fut: std::future::Future<Output = Vec<(Vec<u8>, Vec<u8>)>>,
{
    let disk = common::sim(31);
    let clock = ManualClock::new(common::T0_MS);
    let store = common::open_sim(&disk, grown_config(), &clock).await.expect("open");
    for i in 0..EARLIER {
        store.put(&key(i), &value(i), WriteOptions::default()).await.expect("put");
    }
    let before = disk.file_bytes(&common::seg_path(1)).expect("segment 1").len();
    // The last write's records are what `last` reports, in order; they start at `before`
    // because every flush is padded to the block size.
    let records = last(store).await;
    let bytes = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
    assert_eq!(disk.unsynced_writes(&common::seg_path(1)), 0, "the last write was synced");
    let mut at = before;
    let mut ranges = Vec::new();
    for (k, v) in &records {
        let rec = record::decode(&bytes[at..]).expect("the last write's record is where expected");
        assert_eq!((rec.key, rec.value), (&k[..], &v[..]));
        ranges.push(at..at + rec.padded_len() as usize);
        at += rec.padded_len() as usize;
    }
    (bytes, ranges)
}

/// A fresh disk holding only segment 1 cut to `len` bytes, and a store opened on it.
async fn open_cut(bytes: &[u8], len: usize, clock: &ManualClock) -> (SimDisk, Store<SimDisk>) {
    let disk = common::sim(32);
    disk.set_file_bytes(&common::seg_path(1), bytes[..len].to_vec());
    let store = common::open_sim(&disk, grown_config(), clock).await.expect("reopen");
    (disk, store)
}

async fn assert_earlier_present(store: &Store<SimDisk>, skip: &[usize]) {
    for i in (0..EARLIER).filter(|i| !skip.contains(i)) {
        let got = store.get(&key(i)).await.expect("get").expect("earlier record present");
        assert_eq!(&got.value[..], &value(i)[..], "earlier key {i}");
    }
}

fn assert_no_corruption(report: &RecoveryReport, cut: usize) {
    assert!(report.corrupt.is_empty(), "cut at {cut}: a torn tail is not corruption: {report:?}");
}

fn assert_torn_at(report: &RecoveryReport, start: usize, cut: usize) {
    let torn: Vec<(u32, u64)> = report.torn_tails.iter().map(|(s, o, _)| (*s, *o)).collect();
    assert!(
        torn.iter().all(|&(s, o)| s == 1 && o >= start as u64 && o <= cut as u64),
        "cut at {cut}: torn tails {torn:?} outside the cut record at {start}"
    );
    assert_eq!(torn.len(), 1, "cut at {cut}: exactly one torn tail expected: {report:?}");
}

/// New writes after recovery survive another clean reopen, and the cut stays cut.
async fn assert_writes_survive(disk: &SimDisk, store: Store<SimDisk>, clock: &ManualClock) {
    store.put(b"after-recovery", b"new", WriteOptions::default()).await.expect("put after cut");
    store.close().await.expect("close");
    let store = common::open_sim(disk, grown_config(), clock).await.expect("reopen again");
    let got = store.get(b"after-recovery").await.expect("get").expect("new write present");
    assert_eq!(&got.value[..], b"new");
    assert_eq!(store.recovery_report().corrupt, vec![]);
    store.close().await.expect("close");
}

#[test]
fn every_cut_inside_the_last_record_loses_only_that_record() {
    common::run(|| async {
        let clock = ManualClock::new(common::T0_MS);
        // 48 + 4 + 44 = 96 bytes: no alignment padding, so every cut removes record bytes.
        let last_value = vec![0xa5u8; 44];
        let lv = last_value.clone();
        let (bytes, ranges) = scenario(|store| async move {
            store.put(b"last", &lv, WriteOptions::default()).await.expect("put last");
            vec![(b"last".to_vec(), lv)]
        })
        .await;
        let rec = ranges[0].clone();
        assert_eq!(rec.len(), 96);
        for cut in rec.clone() {
            let (disk, store) = open_cut(&bytes, cut, &clock).await;
            let report = store.recovery_report().clone();
            assert_no_corruption(&report, cut);
            if cut > rec.start {
                assert_torn_at(&report, rec.start, cut);
            }
            assert_earlier_present(&store, &[]).await;
            assert_eq!(store.get(b"last").await.expect("get"), None, "cut at {cut}");
            assert_writes_survive(&disk, store, &clock).await;
        }
        // The uncut file loads everything, as a control.
        let (_disk, store) = open_cut(&bytes, bytes.len(), &clock).await;
        assert!(store.recovery_report().torn_tails.is_empty());
        assert_eq!(
            &store.get(b"last").await.expect("get").expect("present").value[..],
            &last_value
        );
    });
}

#[test]
fn every_cut_inside_an_atomic_batch_hides_the_whole_batch() {
    common::run(|| async {
        let clock = ManualClock::new(common::T0_MS);
        let (bytes, ranges) = scenario(|store| async move {
            // Overwrites key 1, deletes key 2, and adds three new keys.
            let ops = vec![
                BatchOp::Put { key: key(1), value: b"batch".to_vec(), version: None, expiry_ms: 0 },
                BatchOp::Delete { key: key(2) },
                BatchOp::Put {
                    key: b"b-0".to_vec(),
                    value: vec![1; 30],
                    version: None,
                    expiry_ms: 0,
                },
                BatchOp::Put {
                    key: b"b-1".to_vec(),
                    value: vec![2; 31],
                    version: None,
                    expiry_ms: 0,
                },
                BatchOp::Put {
                    key: b"b-2".to_vec(),
                    value: vec![3; 32],
                    version: None,
                    expiry_ms: 0,
                },
            ];
            store.write_batch(&ops, Durability::Sync).await.expect("batch");
            ops.into_iter()
                .map(|op| match op {
                    BatchOp::Put { key, value, .. } => (key, value),
                    BatchOp::Delete { key } => (key, Vec::new()),
                })
                .collect()
        })
        .await;
        let (start, end) = (ranges[0].start, ranges[ranges.len() - 1].end);
        for cut in start + 1..end {
            let (disk, store) = open_cut(&bytes, cut, &clock).await;
            let report = store.recovery_report().clone();
            assert_no_corruption(&report, cut);
            // Once the first record is whole, recovery finds an incomplete batch and drops it.
            let found = usize::from(cut >= ranges[0].end);
            assert_eq!(report.batches_discarded, found as u64, "cut at {cut}: {report:?}");
            if !ranges.iter().any(|r| r.start == cut) {
                let inside = ranges.iter().find(|r| r.contains(&cut)).expect("cut in a record");
                assert_torn_at(&report, inside.start, cut);
            }
            assert_earlier_present(&store, &[]).await;
            for k in [&b"b-0"[..], b"b-1", b"b-2"] {
                assert_eq!(store.get(k).await.expect("get"), None, "cut at {cut}: batch key");
            }
            assert_writes_survive(&disk, store, &clock).await;
        }
        // The whole batch is applied when nothing is cut.
        let (_disk, store) = open_cut(&bytes, bytes.len(), &clock).await;
        assert_eq!(store.recovery_report().batches_discarded, 0);
        assert_eq!(&store.get(&key(1)).await.expect("get").expect("present").value[..], b"batch");
        assert_eq!(store.get(&key(2)).await.expect("get"), None);
        assert_earlier_present(&store, &[1, 2]).await;
        assert!(store.get(b"b-2").await.expect("get").is_some());
    });
}

/// A crash while a segment is being created can leave its header block torn: a prefix of the
/// header, shorter than a block. No record can be in such a file (records are written only after
/// the whole header block is synced), so, like an all-zero header, it is a crash leftover that
/// recovery removes, not corruption to report on every open.
#[test]
fn a_segment_whose_header_write_was_torn_is_removed_as_a_crash_leftover() {
    common::run(|| async {
        let clock = ManualClock::new(common::T0_MS);
        let (bytes, _) = scenario(|store| async move {
            store.put(b"last", b"value", WriteOptions::default()).await.expect("put");
            vec![(b"last".to_vec(), b"value".to_vec())]
        })
        .await;
        let mut header = vec![0u8; 4096];
        ringstore_storage::log::segment_file::encode_header(&mut header, 2, 100, 4 << 20);
        for landed in [0, 1, 20, 35] {
            let disk = common::sim(33);
            disk.set_file_bytes(&common::seg_path(1), bytes.clone());
            disk.set_file_bytes(&common::seg_path(2), header[..landed].to_vec());
            let store = common::open_sim(&disk, grown_config(), &clock).await.expect("open");
            let report = store.recovery_report().clone();
            assert!(report.corrupt.is_empty(), "{landed} header bytes landed: {report:?}");
            assert!(
                !disk.file_names().contains(&common::seg_path(2)),
                "{landed} header bytes landed: the leftover segment was kept"
            );
            assert_earlier_present(&store, &[]).await;
            assert_writes_survive(&disk, store, &clock).await;
        }
    });
}
