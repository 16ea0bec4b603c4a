//! The node's glommio is the patched copy in `vendor/glommio` (RINGSTORE-PATCH.md): every ring an
//! executor sleeps on is set up with `IORING_SETUP_COOP_TASKRUN`, so socket readiness and I/O
//! completions do not interrupt a busy shard with a reschedule IPI. This fails if the workspace
//! ever builds against the unpatched crate again (the `[patch.crates-io]` entry is gone) or the
//! kernel refuses the flag.

/// The first kernel that knows `IORING_SETUP_COOP_TASKRUN`.
const COOP_TASKRUN_KERNEL: (u32, u32) = (5, 19);

fn kernel_version() -> (u32, u32) {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").expect("read osrelease");
    let mut parts = release.trim().split(['.', '-']).map(|p| p.parse::<u32>().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

#[test]
fn every_sleepable_ring_of_an_executor_is_coop_taskrun() {
    let before = glommio::coop_taskrun_rings();
    let ex = glommio::LocalExecutorBuilder::new(glommio::Placement::Unbound)
        .io_memory(512 * 1024)
        .spawn(|| async { 7 })
        .expect("spawn executor");
    assert_eq!(ex.join().expect("executor ran"), 7);
    let made = glommio::coop_taskrun_rings() - before;
    if kernel_version() >= COOP_TASKRUN_KERNEL {
        // The main ring and the latency ring (the third, IOPOLL, ring is for NVMe polling only).
        assert_eq!(made, 2, "rings created with IORING_SETUP_COOP_TASKRUN by one executor");
    } else {
        assert_eq!(made, 0, "an old kernel refuses the flag and gets plain rings");
    }
}
