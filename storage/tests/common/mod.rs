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
