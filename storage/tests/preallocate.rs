//! Proves segment preallocation (`storage/src/log/preallocate.rs`) keeps every promise of the log:
//! - open leaves a zero-filled prepared file of the segment size, and the first segment is that
//!   file (full size from its first write, so flushes overwrite instead of growing it);
//! - what was synced into a preallocated segment survives a power loss, recovery reports neither
//!   a torn tail nor corruption for its zeros, and counts only the bytes in use (not the zeros);
//! - a record torn inside a preallocated segment (its length fits in the file, its body is cut)
//!   is a torn tail, while the same damage followed by a valid record is corruption;
//! - a leftover partial prepared file (a crash while preparing) is removed at open, never trusted,
//!   while a ready one (zeros durable before it got the ready name) is adopted as it is;
//! - close trims the active segment to the bytes in use, so the next open reads no zeros, and
//!   keeps the ready file, so the next open writes none;
//! - a failed preparation is counted and the store works on, growing its segments as before;
//! - with preallocation off, no prepared file exists and segments grow as they are written.

mod common;

use ringstore_storage::constants::{DMA_ALIGN_BYTES, SEGMENT_HEADER_BYTES, SEGMENT_SIZE_BYTES_MIN};
use ringstore_storage::disk::sim::{SimDisk, SimOp};
use ringstore_storage::log::preallocate::{PREPARING_SEGMENT_FILE, READY_SEGMENT_FILE};
use ringstore_storage::{ManualClock, Store, StoreConfig, WriteOptions};

/// The name a prepared file has while it is written.
fn preparing_path() -> std::path::PathBuf {
    std::path::Path::new(common::SIM_DIR).join(PREPARING_SEGMENT_FILE)
}

/// The name of a prepared file whose zeros are durable.
fn ready_path() -> std::path::PathBuf {
    std::path::Path::new(common::SIM_DIR).join(READY_SEGMENT_FILE)
}

/// Asserts that a ready prepared file of the segment size exists and is all zeros.
fn assert_ready_file(disk: &SimDisk) {
    let ready = disk.file_bytes(&ready_path()).expect("a ready prepared file");
    assert_eq!(ready.len() as u64, SEGMENT_SIZE_BYTES_MIN);
    assert!(ready.iter().all(|&b| b == 0), "the prepared file is all zeros");
}

/// Lets the preparer run until it has prepared `n` files (close stops one in progress).
async fn wait_for_preparations(store: &Store<SimDisk>, n: u64) {
    for _ in 0..1_000_000 {
        if store.stats().counters.preallocations >= n {
            return;
        }
        futures_lite::future::yield_now().await;
    }
    panic!("the preparer did not finish its file number {n}");
}

fn key(i: usize) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("value {i} in a preallocated segment").into_bytes()
}

async fn put_synced(store: &Store<SimDisk>, range: std::ops::Range<usize>) {
    for i in range {
        store.put(&key(i), &value(i), WriteOptions::default()).await.expect("put");
    }
}

async fn assert_present(store: &Store<SimDisk>, range: std::ops::Range<usize>) {
    for i in range {
        let got = store.get(&key(i)).await.expect("get").expect("synced key present");
        assert_eq!(&got.value[..], &value(i)[..], "key {i}");
    }
}

/// The offset of the last record in segment 1 and its padded length.
fn last_record(disk: &SimDisk) -> (usize, usize) {
    let bytes = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
    let last = common::records_in(&bytes).pop().expect("segment 1 has records");
    (last.offset, last.padded_len)
}

#[test]
fn the_first_segment_is_the_prepared_file_and_survives_power_loss() {
    common::run(|| async {
        let disk = common::sim(71);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        assert_ready_file(&disk);
        assert!(disk.file_bytes(&preparing_path()).is_none(), "renamed once ready");
        assert_eq!(store.stats().counters.preallocations, 1);

        put_synced(&store, 0..50).await;
        let seg = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
        assert_eq!(seg.len() as u64, SEGMENT_SIZE_BYTES_MIN, "segment 1 is the preallocated file");
        // Each synced put was its own flush, padded to a block: header + 50 blocks in use.
        let in_use = SEGMENT_HEADER_BYTES + 50 * DMA_ALIGN_BYTES;
        let used = store.stats().disk_bytes;
        assert_eq!(used, in_use, "bytes in use count the records, not the zeros");
        drop(store);

        disk.crash_losing_all_unsynced();
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        let report = store.recovery_report().clone();
        assert!(report.torn_tails.is_empty(), "trailing zeros are not a torn tail: {report:?}");
        assert!(report.corrupt.is_empty(), "trailing zeros are not corruption: {report:?}");
        assert_eq!(report.records_replayed, 50);
        assert!(
            report.bytes_scanned <= in_use - SEGMENT_HEADER_BYTES,
            "replay counts the bytes in use, not the zeros: {}",
            report.bytes_scanned
        );
        assert_present(&store, 0..50).await;
        // Segment 1 was sealed by recovery with the same bytes in use; segment 2 has no file yet.
        assert_eq!(store.stats().disk_bytes, in_use + SEGMENT_HEADER_BYTES);
        store.close().await.expect("close");
        assert_ready_file(&disk);
    });
}

#[test]
fn close_trims_the_active_segment_and_reopen_adopts_the_ready_file() {
    common::run(|| async {
        let disk = common::sim(76);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        put_synced(&store, 0..30).await;
        wait_for_preparations(&store, 2).await;
        let in_use = store.stats().disk_bytes;
        store.close().await.expect("close");
        let seg = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
        assert_eq!(seg.len() as u64, in_use, "close cut the unused zeros off segment 1");
        assert_ready_file(&disk);

        let writes_before = disk.stats().writes;
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        assert_eq!(store.stats().counters.preallocations, 0, "open adopted the ready file");
        assert_eq!(disk.stats().writes, writes_before, "open wrote no zeros");
        let report = store.recovery_report().clone();
        assert!(report.torn_tails.is_empty() && report.corrupt.is_empty(), "{report:?}");
        assert_present(&store, 0..30).await;
        put_synced(&store, 30..40).await;
        let seg2 = disk.file_bytes(&common::seg_path(2)).expect("segment 2");
        assert_eq!(seg2.len() as u64, SEGMENT_SIZE_BYTES_MIN, "segment 2 is the adopted file");
        store.close().await.expect("close");

        // A ready file of another size (the segment size changed) is replaced, not adopted.
        let config =
            StoreConfig { segment_size_bytes: 2 * SEGMENT_SIZE_BYTES_MIN, ..common::test_config() };
        let store = common::open_sim(&disk, config, &clock).await.expect("reopen, bigger segments");
        assert_eq!(store.stats().counters.preallocations, 1, "a new file of the new size");
        let ready = disk.file_bytes(&ready_path()).expect("ready file");
        assert_eq!(ready.len() as u64, 2 * SEGMENT_SIZE_BYTES_MIN);
        assert_present(&store, 0..40).await;
        store.close().await.expect("close");
    });
}

/// Writes 20 synced records, then damages the body of the last one (as a torn write leaves
/// it in a preallocated file: its header intact, the rest of its bytes zero) and, if
/// `valid_after`, copies the first record to the next block so that a valid record follows.
async fn damaged_last_record(valid_after: bool) -> ringstore_storage::recovery::RecoveryReport {
    let disk = common::sim(72);
    let clock = ManualClock::new(common::T0_MS);
    let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
    put_synced(&store, 0..20).await;
    drop(store);
    let (offset, len) = last_record(&disk);
    let mut bytes = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
    bytes[offset + 56..offset + len].fill(0);
    if valid_after {
        let first = SEGMENT_HEADER_BYTES as usize;
        let first_len = common::records_in(&bytes)[0].padded_len;
        let next_block = (offset + len).next_multiple_of(DMA_ALIGN_BYTES as usize);
        let copy = bytes[first..first + first_len].to_vec();
        bytes[next_block..next_block + first_len].copy_from_slice(&copy);
    }
    disk.set_file_bytes(&common::seg_path(1), bytes);
    let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
    assert_present(&store, 0..19).await;
    match store.get(&key(19)).await {
        // A torn tail: the write was never acknowledged, so the key is absent.
        Ok(None) if !valid_after => {}
        // Damage in the middle: the key is known and reads as damaged, never as absent.
        Err(ringstore_storage::Error::CorruptRecord { .. }) if valid_after => {}
        other => panic!("key 19 (valid record after: {valid_after}) read as {other:?}"),
    }
    store.recovery_report().clone()
}

#[test]
fn a_torn_record_in_a_preallocated_segment_is_a_torn_tail() {
    common::run(|| async {
        let report = damaged_last_record(false).await;
        assert_eq!(report.torn_tails.len(), 1, "{report:?}");
        assert!(report.corrupt.is_empty(), "a torn write is not corruption: {report:?}");
    });
}

#[test]
fn a_damaged_record_followed_by_a_valid_one_is_corruption() {
    common::run(|| async {
        let report = damaged_last_record(true).await;
        assert_eq!(report.corrupt.len(), 1, "{report:?}");
        assert_eq!(report.corrupt[0].what, "value checksum mismatch");
        let damage = ringstore_storage::recovery::Damage::Key(key(19));
        assert_eq!(report.corrupt[0].damage, damage, "{report:?}");
        assert!(report.torn_tails.is_empty(), "{report:?}");
    });
}

#[test]
fn a_leftover_partial_prepared_file_is_removed_at_open() {
    common::run(|| async {
        let disk = common::sim(73);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        put_synced(&store, 0..5).await;
        drop(store);
        // A crash while preparing leaves a file of any length and content under the name.
        disk.set_file_bytes(&preparing_path(), vec![0xab; 3 * DMA_ALIGN_BYTES as usize]);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        assert!(disk.file_bytes(&preparing_path()).is_none(), "the leftover was removed");
        assert_ready_file(&disk);
        assert_present(&store, 0..5).await;
        put_synced(&store, 5..10).await;
        // Recovery sealed segment 1; the new writes went to segment 2, the prepared file.
        let seg2 = disk.file_bytes(&common::seg_path(2)).expect("segment 2");
        assert_eq!(seg2.len() as u64, SEGMENT_SIZE_BYTES_MIN);
        store.close().await.expect("close");
    });
}

#[test]
fn a_ready_file_that_already_was_a_segment_is_not_adopted() {
    common::run(|| async {
        let disk = common::sim(77);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        put_synced(&store, 0..10).await;
        drop(store);
        // A crash after the flusher renamed the ready file to segment 1 and wrote its header and
        // records, with the rename not yet durable, leaves those bytes under the ready name.
        let mut stale = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
        stale.resize(SEGMENT_SIZE_BYTES_MIN as usize, 0);
        disk.set_file_bytes(&ready_path(), stale);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        assert_eq!(store.stats().counters.preallocations, 1, "a new file was prepared");
        assert_ready_file(&disk);
        put_synced(&store, 10..20).await;
        drop(store);
        disk.crash_losing_all_unsynced();
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        let report = store.recovery_report().clone();
        assert!(report.corrupt.is_empty(), "no stale record reached a segment: {report:?}");
        assert_present(&store, 0..20).await;
        store.close().await.expect("close");
    });
}

#[test]
fn a_failed_preparation_is_counted_and_segments_grow_instead() {
    common::run(|| async {
        let disk = common::sim(74);
        let clock = ManualClock::new(common::T0_MS);
        // The first write of the open is the first zero write of the preparation.
        disk.fail_next(SimOp::Write);
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("open");
        assert_eq!(store.stats().counters.preallocations_failed, 1);
        assert_eq!(store.stats().counters.preallocations, 0);
        assert!(store.stats().poisoned.is_none(), "a failed preparation does not poison");
        put_synced(&store, 0..10).await;
        let seg = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
        assert!((seg.len() as u64) < SEGMENT_SIZE_BYTES_MIN, "segment 1 grew as written");
        drop(store);
        disk.crash_losing_all_unsynced();
        let store = common::open_sim(&disk, common::test_config(), &clock).await.expect("reopen");
        assert_present(&store, 0..10).await;
        store.close().await.expect("close");
    });
}

#[test]
fn without_preallocation_segments_grow_as_written() {
    common::run(|| async {
        let disk = common::sim(75);
        let clock = ManualClock::new(common::T0_MS);
        let config = StoreConfig { preallocate_segments: false, ..common::test_config() };
        let store = common::open_sim(&disk, config.clone(), &clock).await.expect("open");
        put_synced(&store, 0..10).await;
        assert!(disk.file_bytes(&preparing_path()).is_none());
        assert!(disk.file_bytes(&ready_path()).is_none());
        let seg = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
        assert!((seg.len() as u64) < SEGMENT_SIZE_BYTES_MIN);
        store.close().await.expect("close");
    });
}
