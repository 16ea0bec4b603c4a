//! Proves that damaged records are reported and never served, that damage never makes a key
//! read as an older version of itself, and that damage costs only the damaged record.
//!
//! How: a store on the simulated disk writes keys with `Sync` (one flush, so one block, per
//! record) and is dropped without a checkpoint, so recovery scans the whole log. Then, on a fresh
//! copy of the segment each time:
//! - one bit is flipped in an earlier record's value: the header and key still verify, so
//!   recovery reports the key (`Damage::Key`) with segment, offset and LSN, the key reads as
//!   `Error::CorruptRecord` (614), never as its previous value, also after a restart (the
//!   checkpoint keeps pointing at the damaged record), until it is written again; every other
//!   record loads;
//! - one bit is flipped in each byte of an earlier record's header, or in its key: the damage
//!   names no key, so the open fails with `Error::DamagedLog` (616); with `accept_log_damage` it
//!   opens, reports the range, loses only that record, and the next open (without the flag)
//!   does not see the damage again;
//! - a header with a valid checksum but impossible lengths (crafted with `record::encode`, lengths
//!   patched, header checksum recomputed) is handled the same way in the middle of the segment,
//!   and as a torn tail at its end, while a counting allocator proves no allocation near the
//!   claimed length is made and a wrapping disk proves no read goes past the end of a file;
//! - a record a checkpoint covers (so recovery does not scan it) is damaged after the fact: `get`
//!   and `scan` return `Error::CorruptRecord` naming its segment and offset, never the bad bytes,
//!   both after a reopen and while the store runs.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::{Cell, RefCell};
use std::io;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use ringstore_storage::constants::{KEY_BYTES_MAX, RECORD_HEADER_BYTES, VALUE_BYTES_MAX};
use ringstore_storage::disk::sim::{SimDisk, SimFile, SimMap};
use ringstore_storage::disk::{Disk, DiskFile};
use ringstore_storage::record::{self, RecordKind, RecordMeta};
use ringstore_storage::recovery::{Damage, RecoveryReport};
use ringstore_storage::{Error, ManualClock, ScanRequest, Store, StoreConfig, WriteOptions};

/// Counts the largest single allocation made on the current thread since the last reset.
struct MaxAllocation;

thread_local! {
    static LARGEST_ALLOCATION: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping only reads
// the requested size and touches a const-initialised thread-local `Cell`, which never allocates.
unsafe impl GlobalAlloc for MaxAllocation {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's layout, which meets `alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`; the caller upholds the rest.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

fn note(size: usize) {
    let _ = LARGEST_ALLOCATION.try_with(|m| m.set(m.get().max(size)));
}

#[global_allocator]
static ALLOCATOR: MaxAllocation = MaxAllocation;

/// A [`SimDisk`] that records every read reaching past the end of its file.
#[derive(Clone, Debug)]
struct CheckedDisk {
    inner: SimDisk,
    past_eof: Rc<RefCell<Vec<String>>>,
}

#[derive(Debug)]
struct CheckedFile {
    inner: SimFile,
    path: PathBuf,
    past_eof: Rc<RefCell<Vec<String>>>,
}

impl CheckedDisk {
    fn wrap(&self, inner: SimFile, path: &Path) -> CheckedFile {
        CheckedFile { inner, path: path.to_path_buf(), past_eof: self.past_eof.clone() }
    }
}

impl Disk for CheckedDisk {
    type File = CheckedFile;
    type Map = SimMap;

    async fn create(&self, path: &Path) -> io::Result<CheckedFile> {
        Ok(self.wrap(self.inner.create(path).await?, path))
    }
    async fn open(&self, path: &Path) -> io::Result<CheckedFile> {
        Ok(self.wrap(self.inner.open(path).await?, path))
    }
    async fn map(&self, path: &Path) -> io::Result<SimMap> {
        self.inner.map(path).await
    }
    async fn remove(&self, path: &Path) -> io::Result<()> {
        self.inner.remove(path).await
    }
    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.inner.rename(from, to).await
    }
    async fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.inner.sync_dir(dir).await
    }
    async fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.inner.create_dir_all(dir).await
    }
    async fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.inner.list_dir(dir).await
    }
}

impl DiskFile for CheckedFile {
    type Buf = Vec<u8>;
    type ReadBuf = Vec<u8>;

    fn alloc_buf(&self, len: usize) -> Vec<u8> {
        self.inner.alloc_buf(len)
    }
    async fn write_at(&self, buf: Vec<u8>, pos: u64) -> io::Result<()> {
        self.inner.write_at(buf, pos).await
    }
    async fn read_at(&self, pos: u64, len: usize) -> io::Result<Vec<u8>> {
        let size = self.inner.size().await?;
        if pos.checked_add(len as u64).is_none_or(|end| end > size) {
            let what = format!("{}: read of {len} at {pos}, size {size}", self.path.display());
            self.past_eof.borrow_mut().push(what);
        }
        self.inner.read_at(pos, len).await
    }
    async fn fdatasync(&self) -> io::Result<()> {
        self.inner.fdatasync().await
    }
    async fn size(&self) -> io::Result<u64> {
        self.inner.size().await
    }
    async fn truncate(&self, len: u64) -> io::Result<()> {
        self.inner.truncate(len).await
    }
}

const KEYS: usize = 8;

fn key(i: usize) -> Vec<u8> {
    format!("key-{i}").into_bytes()
}

fn value(i: usize) -> Vec<u8> {
    format!("the value of key {i}, long enough to have a middle").into_bytes()
}

const OLD_VALUE: &[u8] = b"the previous value of key 3";

/// Writes key 3's previous value, then every key once, each with `Sync`; returns segment 1 and,
/// if `checkpoint`, the checkpoint that closing the store wrote.
async fn written_segment(config: StoreConfig, checkpoint: bool) -> (Vec<u8>, Option<Vec<u8>>) {
    let disk = common::sim(41);
    let clock = ManualClock::new(common::T0_MS);
    let store = common::open_sim(&disk, config, &clock).await.expect("open");
    store.put(&key(3), OLD_VALUE, WriteOptions::default()).await.expect("put");
    for i in 0..KEYS {
        store.put(&key(i), &value(i), WriteOptions::default()).await.expect("put");
    }
    if checkpoint {
        store.close().await.expect("close");
    }
    let segment = disk.file_bytes(&common::seg_path(1)).expect("segment 1");
    (segment, disk.file_bytes(&common::checkpoint_path()))
}

/// The newest record of key `i` in the segment image.
fn newest(bytes: &[u8], i: usize) -> common::FoundRecord {
    let found = common::records_in(bytes);
    found.into_iter().rev().find(|r| r.key == key(i)).expect("record present")
}

fn small_config() -> StoreConfig {
    // No cache: its table is sized from the capacity, which would hide what recovery allocates.
    // No preallocation: open zero-fills the next segment (a whole segment of simulated file),
    // which would hide it too.
    StoreConfig { cache_capacity_bytes: 0, preallocate_segments: false, ..common::test_config() }
}

fn accepting_config() -> StoreConfig {
    StoreConfig { accept_log_damage: true, ..small_config() }
}

/// A fresh checked disk holding `bytes` as segment 1, and a store opened on it. Returns the
/// largest allocation recovery made.
async fn open_image(bytes: Vec<u8>) -> (CheckedDisk, Store<CheckedDisk>, usize) {
    open_image_with(bytes, None).await
}

async fn open_image_with(
    bytes: Vec<u8>,
    checkpoint: Option<Vec<u8>>,
) -> (CheckedDisk, Store<CheckedDisk>, usize) {
    let (disk, store, largest) = try_open_image(bytes, checkpoint, small_config()).await;
    (disk, store.expect("reopen"), largest)
}

async fn try_open_image(
    bytes: Vec<u8>,
    checkpoint: Option<Vec<u8>>,
    config: StoreConfig,
) -> (CheckedDisk, ringstore_storage::Result<Store<CheckedDisk>>, usize) {
    let disk = CheckedDisk { inner: common::sim(42), past_eof: Rc::default() };
    disk.inner.set_file_bytes(&common::seg_path(1), bytes);
    if let Some(c) = checkpoint {
        disk.inner.set_file_bytes(&common::checkpoint_path(), c);
    }
    LARGEST_ALLOCATION.with(|m| m.set(0));
    let store = reopen(&disk, config).await;
    let largest = LARGEST_ALLOCATION.with(|m| m.get());
    (disk, store, largest)
}

async fn reopen(
    disk: &CheckedDisk,
    config: StoreConfig,
) -> ringstore_storage::Result<Store<CheckedDisk>> {
    let clock = Rc::new(ManualClock::new(common::T0_MS));
    Store::open_with_clock(disk.clone(), common::SIM_DIR, config, clock).await
}

/// The damaged image refuses to open; with `accept_log_damage` it opens, reports the damage at
/// `offset`, and loses only key `damaged`; reopened without the flag it opens cleanly. Returns
/// the largest allocation of the accepting open.
async fn refused_then_accepted(bad: Vec<u8>, offset: usize, damaged: usize) -> usize {
    let (disk, refused, _) = try_open_image(bad.clone(), None, small_config()).await;
    match refused {
        Err(e @ Error::DamagedLog { count: 1, .. }) => {
            assert_eq!(e.code(), 616);
            assert!(e.to_string().contains("accept_log_damage"), "{e}");
        }
        other => panic!("expected DamagedLog, got {other:?}"),
    }
    assert!(disk.past_eof.borrow().is_empty(), "{:?}", disk.past_eof.borrow());
    let (disk, store, largest) = try_open_image(bad, None, accepting_config()).await;
    let store = store.expect("open accepting the damage");
    let report = store.recovery_report().clone();
    assert_reported(&report, offset, None);
    assert_eq!(report.corrupt[0].damage, Damage::Unattributed, "{report:?}");
    assert!(report.accepted_damage);
    assert_only_damaged_lost(&store, damaged).await;
    assert!(disk.past_eof.borrow().is_empty(), "{:?}", disk.past_eof.borrow());
    drop(store);
    // The open that accepted the damage wrote a checkpoint: the choice holds without the flag.
    let store = reopen(&disk, small_config()).await.expect("reopen after accepting");
    assert!(store.recovery_report().corrupt.is_empty(), "{:?}", store.recovery_report());
    assert_only_damaged_lost(&store, damaged).await;
    largest
}

/// Every key but `damaged` reads its value; `damaged` reads absent or its previous value.
async fn assert_only_damaged_lost(store: &Store<CheckedDisk>, damaged: usize) {
    for i in 0..KEYS {
        let got = store.get(&key(i)).await.expect("get").map(|v| v.value.to_vec());
        if i == damaged {
            let previous = (i == 3).then(|| OLD_VALUE.to_vec());
            assert!(got.is_none() || got == previous, "damaged key {i} served {got:?}");
        } else {
            assert_eq!(got, Some(value(i)), "undamaged key {i}");
        }
    }
}

fn assert_reported(report: &RecoveryReport, offset: usize, lsn: Option<u64>) {
    assert_eq!(report.corrupt.len(), 1, "one damaged record: {report:?}");
    let c = &report.corrupt[0];
    assert_eq!((c.segment, c.offset), (1, offset as u64), "{report:?}");
    if lsn.is_some() {
        assert_eq!(c.lsn, lsn, "body damage keeps the LSN: {report:?}");
    }
    assert!(report.torn_tails.is_empty(), "damage in the middle is not a torn tail: {report:?}");
}

#[test]
fn value_damage_reads_as_corrupt_never_as_an_older_version() {
    common::run(|| async {
        let (bytes, _) = written_segment(small_config(), false).await;
        for damaged in [3, 5] {
            let rec = newest(&bytes, damaged);
            let value_at = RECORD_HEADER_BYTES + rec.key.len();
            for at in [value_at, value_at + rec.value.len() / 2, value_at + rec.value.len() - 1] {
                let mut bad = bytes.clone();
                bad[rec.offset + at] ^= 0x10;
                let (disk, store, _) = open_image(bad).await;
                let report = store.recovery_report().clone();
                assert_reported(&report, rec.offset, Some(rec.lsn));
                assert_eq!(report.corrupt[0].damage, Damage::Key(key(damaged)), "{report:?}");
                assert_only_damaged_unreadable(&store, damaged, rec.offset).await;
                store.close().await.expect("close");
                // After a restart (from the checkpoint close wrote) the key is still damaged.
                let store = reopen(&disk, small_config()).await.expect("reopen");
                assert_only_damaged_unreadable(&store, damaged, rec.offset).await;
                // Writing the key again heals it.
                store.put(&key(damaged), b"fresh", WriteOptions::default()).await.expect("put");
                let got = store.get(&key(damaged)).await.expect("get").expect("present");
                assert_eq!(&got.value[..], b"fresh");
                assert!(disk.past_eof.borrow().is_empty(), "{:?}", disk.past_eof.borrow());
            }
        }
    });
}

/// Key `damaged` reads as `CorruptRecord` at `offset`; every other key reads its value.
async fn assert_only_damaged_unreadable(store: &Store<CheckedDisk>, damaged: usize, offset: usize) {
    assert_corrupt_error(store.get(&key(damaged)).await, offset, "get of the damaged key");
    for i in (0..KEYS).filter(|&i| i != damaged) {
        let got = store.get(&key(i)).await.expect("get").map(|v| v.value.to_vec());
        assert_eq!(got, Some(value(i)), "undamaged key {i}");
    }
}

#[test]
fn header_or_key_damage_stops_the_open_until_the_loss_is_accepted() {
    common::run(|| async {
        let (bytes, _) = written_segment(small_config(), false).await;
        for damaged in [3, 6] {
            let rec = newest(&bytes, damaged);
            // Every header byte, then the first and last key byte (the header checksum covers
            // the key, so a damaged key means an untrusted header).
            let key_bytes = [RECORD_HEADER_BYTES, RECORD_HEADER_BYTES + rec.key.len() - 1];
            for byte in (0..RECORD_HEADER_BYTES).chain(key_bytes) {
                let mut bad = bytes.clone();
                bad[rec.offset + byte] ^= 1 << (byte % 8);
                refused_then_accepted(bad, rec.offset, damaged).await;
            }
        }
    });
}

/// A header with a valid checksum claiming `key_len` and `value_len`.
fn crafted_header(key_len: u16, value_len: u32, segment_id: u32) -> Vec<u8> {
    let meta = RecordMeta {
        kind: RecordKind::Put,
        lsn: 7,
        version: 1,
        expiry_ms: 0,
        segment_id,
        flags: 0,
        batch_remaining: 0,
    };
    let mut buf = Vec::new();
    record::encode(&mut buf, &meta, b"k", b"v");
    buf[36..40].copy_from_slice(&value_len.to_le_bytes());
    buf[40..42].copy_from_slice(&key_len.to_le_bytes());
    // The header checksum covers the key: b"k", the first byte of every key of this test.
    let crc = crc32c::crc32c_append(crc32c::crc32c(&buf[4..RECORD_HEADER_BYTES]), b"k");
    buf[0..4].copy_from_slice(&crc.to_le_bytes());
    buf.truncate(RECORD_HEADER_BYTES);
    buf
}

#[test]
fn impossible_lengths_with_a_valid_header_checksum_are_skipped_without_allocating() {
    common::run(|| async {
        let (bytes, _) = written_segment(small_config(), false).await;
        let lengths: [(u16, u32); 4] = [
            (u16::MAX, u32::MAX),
            (1, u32::MAX),
            (1, VALUE_BYTES_MAX as u32 + 1),
            (KEY_BYTES_MAX as u16 + 1, 0),
        ];
        for (key_len, value_len) in lengths {
            let header = crafted_header(key_len, value_len, 1);
            assert!(record::decode_header(&header).is_err(), "the lengths are impossible");
            // In the middle: the record of key 4 gets the crafted header.
            let rec = newest(&bytes, 4);
            let mut bad = bytes.clone();
            bad[rec.offset..rec.offset + RECORD_HEADER_BYTES].copy_from_slice(&header);
            let largest = refused_then_accepted(bad, rec.offset, 4).await;
            assert!(largest > 0 && largest < 4 << 20, "largest allocation: {largest} bytes");

            // At the end: the crafted header is the last thing in the segment.
            let mut bad = bytes.clone();
            let end = bad.len();
            bad.extend_from_slice(&header);
            bad.resize(end + 4096, 0);
            let (disk, store, largest) = open_image(bad).await;
            let report = store.recovery_report();
            assert!(report.corrupt.is_empty(), "nothing valid follows: a torn tail: {report:?}");
            assert_eq!(report.torn_tails.len(), 1, "{report:?}");
            assert_eq!(report.torn_tails[0].1, end as u64);
            assert_only_damaged_lost(&store, usize::MAX).await;
            assert!(largest > 0 && largest < 4 << 20, "largest allocation: {largest} bytes");
            assert!(disk.past_eof.borrow().is_empty(), "{:?}", disk.past_eof.borrow());
        }
    });
}

fn assert_corrupt_error<T: std::fmt::Debug>(
    result: ringstore_storage::Result<T>,
    offset: usize,
    what: &str,
) {
    match result {
        Err(Error::CorruptRecord { segment, offset: o, .. }) => {
            assert_eq!((segment, o), (1, offset as u64), "{what}");
        }
        other => panic!("{what}: expected CorruptRecord, got {other:?}"),
    }
}

#[test]
fn damage_under_a_checkpoint_is_caught_on_read() {
    common::run(|| async {
        let (bytes, checkpoint) = written_segment(small_config(), true).await;
        assert!(checkpoint.is_some(), "close writes a checkpoint");
        for (damaged, in_header) in [(2, false), (6, true)] {
            let rec = newest(&bytes, damaged);
            let mut bad = bytes.clone();
            let at = if in_header { 20 } else { RECORD_HEADER_BYTES + 3 };
            bad[rec.offset + at] ^= 0x04;
            let (disk, store, _) = open_image_with(bad, checkpoint.clone()).await;
            let disk = disk.inner;
            assert!(disk.file_names().contains(&common::checkpoint_path()));
            let report = store.recovery_report();
            assert!(report.checkpoint_lsn.is_some());
            assert!(report.corrupt.is_empty(), "the checkpoint covers the record: {report:?}");
            for _ in 0..2 {
                assert_corrupt_error(store.get(&key(damaged)).await, rec.offset, "get");
                let req = ScanRequest::prefix(b"key-", 100);
                assert_corrupt_error(store.scan(&req).await, rec.offset, "scan");
            }
            assert!(store.stats().counters.corrupt_reads >= 2);
            for i in (0..KEYS).filter(|&i| i != damaged) {
                let got = store.get(&key(i)).await.expect("get").expect("present");
                assert_eq!(got.value.to_vec(), value(i));
            }
        }
    });
}

#[test]
fn damage_while_running_is_caught_on_read() {
    common::run(|| async {
        let disk = common::sim(43);
        let clock = ManualClock::new(common::T0_MS);
        let store = common::open_sim(&disk, small_config(), &clock).await.expect("open");
        for i in 0..KEYS {
            store.put(&key(i), &value(i), WriteOptions::default()).await.expect("put");
        }
        let rec = newest(&disk.file_bytes(&common::seg_path(1)).expect("segment"), 5);
        assert_eq!(
            store.get(&key(5)).await.expect("get").expect("present").value.to_vec(),
            value(5)
        );
        common::flip_bit(&disk, &common::seg_path(1), rec.offset + RECORD_HEADER_BYTES + 8, 0);
        assert_corrupt_error(store.get(&key(5)).await, rec.offset, "get while running");
        let req = ScanRequest { keys_only: false, ..ScanRequest::prefix(b"key-5", 10) };
        assert_corrupt_error(store.scan(&req).await, rec.offset, "scan while running");
        // A keys-only scan reads no values, so it still lists the key.
        let req = ScanRequest { keys_only: true, ..req };
        assert_eq!(store.scan(&req).await.expect("keys only").rows.len(), 1);
        // Overwriting the damaged key heals it.
        store.put(&key(5), b"fresh", WriteOptions::default()).await.expect("put");
        assert_eq!(&store.get(&key(5)).await.expect("get").expect("present").value[..], b"fresh");
        store.close().await.expect("close");
    });
}
