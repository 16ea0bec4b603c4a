//! The daemon binary's command line: help, a bad flag, and a second daemon on a locked
//! directory. (Its presence also makes `cargo test --workspace` build the node's binaries,
//! which the end-to-end suites in `tests/` start.)

use std::process::Command;

fn node() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ringstore-node"))
}

#[test]
fn help_exits_zero_and_names_the_required_flags() {
    let out = node().arg("--help").output().expect("run ringstore-node --help");
    assert!(out.status.success(), "{:?}", out.status);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("--data-dir") && text.contains("--listen"), "{text}");
}

#[test]
fn unknown_flag_is_refused() {
    let out = node().arg("--no-such-flag").output().expect("run ringstore-node");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
}

#[test]
fn missing_listen_is_refused_with_the_flag_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = node().arg("--data-dir").arg(dir.path()).output().expect("run ringstore-node");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--listen"));
}

#[test]
fn a_spin_with_unpinned_shards_is_refused_naming_both_ways_out() {
    // glommio spins only on an executor bound to a CPU, so the daemon refuses a spin it would
    // silently drop instead of starting without it.
    let dir = tempfile::tempdir().expect("temp dir");
    let out = node()
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0", "--shards", "1", "--pin-shards", "false"])
        .args(["--spin-before-sleep-us", "20"])
        .output()
        .expect("run ringstore-node");
    assert!(!out.status.success(), "{:?}", out.status);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("spin_before_sleep_us 20 needs pinned shards"), "{err}");
    assert!(err.contains("--pin-shards true") && err.contains("--spin-before-sleep-us 0"), "{err}");
}
