//! Proves the daemon's panic policy (`node/src/panic_policy.rs`): with the hook installed, a
//! panic in any thread (here a thread named like a shard's) ends the whole process at once with
//! SIGABRT, after printing the panic and the daemon's own line, so a supervisor sees a failure
//! and restarts the node instead of keeping a half-alive one.
//!
//! How: the test runs this test binary again as a child, with an environment variable that makes
//! the same test install the hook and panic in a `shard-1` thread; the parent checks how the
//! child ended and what it printed. The child's main thread blocks on the panicking thread's
//! join, so without the hook the child would exit normally (status 0) instead.

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

const CHILD_ENV: &str = "RINGSTORE_PANIC_POLICY_CHILD";

#[test]
fn a_panic_in_a_shard_thread_aborts_the_process() {
    if std::env::var_os(CHILD_ENV).is_some() {
        ringstore_node::panic_policy::install();
        let shard = std::thread::Builder::new()
            .name("shard-1".into())
            .spawn(|| panic!("field count does not fit"))
            .expect("spawn the shard thread");
        // Only reached without the hook: the join reports the panic and the child exits 0.
        let _ = shard.join();
        return;
    }
    let exe = std::env::current_exe().expect("this test binary");
    let out = Command::new(exe)
        .args(["--exact", "a_panic_in_a_shard_thread_aborts_the_process", "--nocapture"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("run the child");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "status {:?}; stderr:\n{stderr}",
        out.status
    );
    assert!(stderr.contains("field count does not fit"), "the panic is printed:\n{stderr}");
    assert!(
        stderr.contains("ringstore-node: panic in thread 'shard-1': aborting the process"),
        "the daemon says what it does:\n{stderr}"
    );
}
