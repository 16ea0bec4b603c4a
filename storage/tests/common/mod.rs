//! Helpers shared by the storage integration tests.
#![allow(dead_code, reason = "each test binary uses a different subset")]

use std::future::Future;
use std::rc::Rc;

use ringstore_storage::disk::sim::{SimConfig, SimDisk};
use ringstore_storage::{ManualClock, Store, StoreConfig};

/// glommio's registered-buffer memory per test executor. The machine's locked-memory limit is
/// 8 MiB and tests run two at a time, so each executor stays at glommio's 512 KiB minimum.
pub const TEST_IO_MEMORY_BYTES: usize = 512 * 1024;

/// Runs `f` to completion on a fresh single-threaded glommio executor.
pub fn run<T, F, Fut>(f: F) -> T
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = T> + 'static,
    T: Send + 'static,
{
    glommio::LocalExecutorBuilder::default()
        .io_memory(TEST_IO_MEMORY_BYTES)
        .name("test-shard")
        .spawn(f)
        .expect("spawn executor")
        .join()
        .expect("executor thread")
}

/// A small configuration for tests: small segments, no background maintenance.
pub fn test_config() -> StoreConfig {
    StoreConfig {
        segment_size_bytes: ringstore_storage::constants::SEGMENT_SIZE_BYTES_MIN,
        background_maintenance: false,
        checkpoint_interval_bytes: u64::MAX,
        ..StoreConfig::default()
    }
}

pub const SIM_DIR: &str = "/sim/shard-0";

/// Opens a store on the simulated disk with a manual clock at a fixed time.
pub async fn open_sim(
    disk: &SimDisk,
    config: StoreConfig,
    clock: &ManualClock,
) -> ringstore_storage::Result<Store<SimDisk>> {
    Store::open_with_clock(disk.clone(), SIM_DIR, config, Rc::new(clock.clone())).await
}

pub fn sim(seed: u64) -> SimDisk {
    SimDisk::new(SimConfig::new(seed))
}

pub const T0_MS: u64 = 1_700_000_000_000;

/// Path of segment `id` of the store at [`SIM_DIR`].
pub fn seg_path(id: u32) -> std::path::PathBuf {
    std::path::Path::new(SIM_DIR).join(ringstore_storage::log::segment_file::segment_file_name(id))
}

/// Path of the checkpoint of the store at [`SIM_DIR`].
pub fn checkpoint_path() -> std::path::PathBuf {
    ringstore_storage::checkpoint::checkpoint_path(std::path::Path::new(SIM_DIR))
}

/// Every segment file of the store at [`SIM_DIR`], sorted by id.
pub fn segment_paths(disk: &SimDisk) -> Vec<std::path::PathBuf> {
    disk.file_names()
        .into_iter()
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .and_then(ringstore_storage::log::segment_file::parse_segment_file_name)
                .is_some()
        })
        .collect()
}

/// Flips one bit of the file at `path` (visible and durable bytes alike).
pub fn flip_bit(disk: &SimDisk, path: &std::path::Path, byte: usize, bit: u8) {
    let mut bytes = disk.file_bytes(path).expect("file to damage exists");
    bytes[byte] ^= 1 << bit;
    disk.set_file_bytes(path, bytes);
}

/// Every page of a scan, concatenated, following `resume` until the last page. Asserts that a
/// page is never longer than the limit and that only full pages carry a resume key.
pub async fn scan_pages<D: ringstore_storage::disk::Disk>(
    store: &Store<D>,
    mut req: ringstore_storage::ScanRequest,
) -> ringstore_storage::Result<Vec<Vec<ringstore_storage::Row>>> {
    let mut pages = Vec::new();
    // Each page holds at least one row, so the number of pages is bounded by the row count.
    for _ in 0..10_000_000usize {
        let page = store.scan(&req).await?;
        assert!(page.rows.len() <= req.limit, "page longer than its limit");
        let resume = page.resume.clone();
        if resume.is_some() {
            assert_eq!(page.rows.len(), req.limit, "a partial page carries a resume key");
        }
        pages.push(page.rows);
        match resume {
            Some(r) => req.resume = Some(r),
            None => return Ok(pages),
        }
    }
    panic!("scan did not end");
}

/// Every live key and value of the store, by paging a full forward scan.
pub async fn dump<D: ringstore_storage::disk::Disk>(
    store: &Store<D>,
) -> ringstore_storage::Result<std::collections::BTreeMap<Vec<u8>, Vec<u8>>> {
    let req = ringstore_storage::ScanRequest::prefix(b"", 1000);
    let pages = scan_pages(store, req).await?;
    Ok(pages.into_iter().flatten().map(|r| (r.key.to_vec(), r.value.to_vec())).collect())
}

/// One record found in a segment's bytes by [`records_in`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRecord {
    pub offset: usize,
    pub padded_len: usize,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
    pub lsn: u64,
}

/// Every valid record in a segment image, in file order: records follow each other within a
/// flush, and each flush starts on a block boundary.
pub fn records_in(bytes: &[u8]) -> Vec<FoundRecord> {
    use ringstore_storage::constants::{align_up, DMA_ALIGN_BYTES, SEGMENT_HEADER_BYTES};
    let mut out = Vec::new();
    let mut at = SEGMENT_HEADER_BYTES as usize;
    while at < bytes.len() {
        match ringstore_storage::record::decode(&bytes[at..]) {
            Ok(r) => {
                let padded_len = r.padded_len() as usize;
                out.push(FoundRecord {
                    offset: at,
                    padded_len,
                    key: r.key.to_vec(),
                    value: r.value.to_vec(),
                    lsn: r.meta.lsn,
                });
                at += padded_len;
            }
            Err(_) => at = align_up(at as u64 + 1, DMA_ALIGN_BYTES) as usize,
        }
    }
    out
}

/// Opens a table store on the simulated disk at [`SIM_DIR`] with a manual clock.
pub async fn open_tables(
    disk: &SimDisk,
    clock: &ManualClock,
) -> ringstore_storage::table::OpResult<ringstore_storage::table::TableStore<SimDisk>> {
    ringstore_storage::table::TableStore::open(
        disk.clone(),
        SIM_DIR,
        test_config(),
        Rc::new(clock.clone()),
    )
    .await
}
