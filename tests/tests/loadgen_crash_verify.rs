//! The load tool's verify mode as a crash check: `ringstore-load --verify --write-log F` records
//! every acknowledged write while it drives a node, the node is killed with SIGKILL (no drain,
//! no checkpoint), restarted on the same data directory, and `ringstore-load --check-log F`
//! reads every recorded key back.
//!
//! Proves two things: Sync-acknowledged writes all survive a SIGKILL (the checker finds no lost,
//! stale or foreign value), and the checker does see loss when there is some: NoSync writes
//! acknowledged within a 60 s flush interval and still in the shard's write buffer are gone
//! after a SIGKILL, and `--check-log` reports them (as lost keys, or as stale ones where an
//! older write of the key had reached the file) and exits 1.

mod loadgen_common;

use loadgen_common::{arg, data_dir, one_at_a_time, read_json, run_load, u64_at, SMALL};
use ringstore_tests::Node;

const KEYS: u64 = 500;

/// Drives the node with YCSB A in verify mode, saving the write log; returns the log's path.
fn write_and_log(node: &Node, dir: &std::path::Path, durability: &str) -> std::path::PathBuf {
    let log = dir.join(format!("writes-{durability}.log"));
    let (addr, keys) = (node.addr().to_string(), KEYS.to_string());
    let mut args = vec!["--addr", &addr, "--workload", "a", "--verify", "--write-log", arg(&log)];
    args.extend(SMALL);
    args.extend(["--keys", &keys, "--duration", "1s", "--durability", durability, "--quiet"]);
    let run = run_load(&args);
    assert_eq!(run.status, Some(0), "{run:#?}");
    log
}

/// Reads the log back against `node`; returns the exit status and the verify findings.
fn check(
    node: &Node,
    dir: &std::path::Path,
    log: &std::path::Path,
) -> (Option<i32>, serde_json::Value) {
    let json = dir.join("check.json");
    let addr = node.addr().to_string();
    let run = run_load(&["--addr", &addr, "--check-log", arg(log), "--json", arg(&json)]);
    let doc = read_json(&json);
    assert_eq!(doc["mode"], "check-log");
    (run.status, doc["extra"]["verify"].clone())
}

#[test]
fn sync_writes_survive_a_sigkill_and_the_check_finds_them_all() {
    let _turn = one_at_a_time();
    let (tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let log = write_and_log(&node, tmp.path(), "sync");
    node.kill();
    let node = Node::start(&data, &[]);
    let (status, v) = check(&node, tmp.path(), &log);
    assert_eq!(status, Some(0), "{v:#}");
    for finding in ["lost", "stale", "foreign"] {
        assert_eq!(u64_at(&v, &format!("/{finding}")), 0, "{finding}: {v:#}");
    }
    // Every key the load phase wrote is in the log and was checked.
    assert!(u64_at(&v, "/checked") >= KEYS, "{v:#}");
    assert_eq!(u64_at(&v, "/checked"), u64_at(&v, "/ok"), "{v:#}");
}

#[test]
fn nosync_writes_lost_to_a_sigkill_are_reported_lost() {
    let _turn = one_at_a_time();
    let (tmp, data) = data_dir();
    // NoSync acknowledges before the disk write; with a 60 s flush interval only a full write
    // buffer reaches the file during this short run, and the rest dies with the process.
    let slow_flush = ["--flush-interval-ms", "60000"];
    let node = Node::start(&data, &slow_flush);
    let log = write_and_log(&node, tmp.path(), "no-sync");
    node.kill();
    let node = Node::start(&data, &slow_flush);
    let (status, v) = check(&node, tmp.path(), &log);
    assert_eq!(status, Some(1), "the check must fail: {v:#}");
    assert_eq!(v["passed"], false, "{v:#}");
    assert!(u64_at(&v, "/lost") + u64_at(&v, "/stale") > 0, "{v:#}");
    assert!(u64_at(&v, "/checked") >= KEYS, "{v:#}");
}
