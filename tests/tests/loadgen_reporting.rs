//! What `ringstore-load` reports about a run's requests and the node (issue 14), run as a
//! subprocess against a node the harness started (`--addr`, `--server-pid`), each run small
//! (2000 keys or fewer, a second of measured phase) with its `--json` document read back. It
//! proves that:
//!
//! - YCSB D reads only keys whose insert was acknowledged: with Sync inserts (each in flight for
//!   a group commit) not one read finds nothing; and a read that does find nothing is counted
//!   as `not_found`, not hidden among the successes (YCSB C on an empty table, `--no-load`);
//! - errors are broken down by status code: a `--pipeline` above the node's
//!   `--max-inflight-per-connection` is answered BUSY, and the output names 720 `Busy` with the
//!   node's message and what to do;
//! - the key-design lab drops its `lab_*` tables from a node given by address, unless
//!   `--keep-tables`; and it reports each shard's CPU utilisation and the throughput at which
//!   the busiest shard would saturate (ops/s over that shard's utilisation).
//!
//! The runs take turns ([`loadgen_common::one_at_a_time`]); each waits at most
//! [`loadgen_common::LOAD_TIMEOUT`]. Nothing here asserts on speed.

mod loadgen_common;

use loadgen_common::*;
use ringstore_tests::{Node, TEST_SHARDS};
use serde_json::Value as Json;

/// Runs `ringstore-load --addr NODE --server-pid PID ARGS --json FILE` and returns the run and
/// its document.
fn run_against(
    node: &Node,
    dir: &tempfile::TempDir,
    name: &str,
    args: &[&str],
) -> (Finished, Json) {
    let json = dir.path().join(name);
    let (addr, pid) = (node.addr().to_string(), node.pid().to_string());
    let mut all = vec!["--addr", &addr, "--server-pid", &pid, "--quiet", "--json", arg(&json)];
    all.extend(args);
    let run = run_load(&all);
    let doc = read_json(&json);
    (run, doc)
}

/// YCSB D with Sync writes: inserts are in flight for a group commit each, and reads pick the
/// newest keys (`latest`), so a read of a key counted when its insert was sent would find
/// nothing. Reads pick only acknowledged keys, so none does.
#[test]
fn ycsb_d_reads_only_acknowledged_inserts() {
    let _turn = one_at_a_time();
    let (dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut args = vec!["--workload", "d", "--keys", "2000", "--duration", "1s"];
    args.extend(SMALL);
    args.extend(["--durability", "sync"]);
    let (run, doc) = run_against(&node, &dir, "d.json", &args);
    let run = run.ok();
    let r = &runs(&doc)[0];
    assert_eq!(u64_at(r, "/errors"), 0, "{r:#}");
    assert!(u64_at(op(r, "insert"), "/ok") > 0, "{:#}", op(r, "insert"));
    assert!(u64_at(op(r, "read"), "/ok") > 0, "{:#}", op(r, "read"));
    assert_eq!(u64_at(op(r, "read"), "/not_found"), 0, "{:#}", op(r, "read"));
    assert_eq!(u64_at(r, "/not_found"), 0, "{r:#}");
    assert!(has_words(&run.stdout, "op ops errors not found ops/s p50 ms"), "{}", run.stdout);
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// YCSB C without the load phase on a fresh node: every read finds no row, and every one is
/// counted as not found (a success, status 0, but on its own).
#[test]
fn reads_that_find_nothing_are_counted_as_not_found() {
    let _turn = one_at_a_time();
    let (dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut args = vec!["--workload", "c", "--keys", "2000", "--ops", "3000", "--no-load"];
    args.extend(SMALL);
    let (run, doc) = run_against(&node, &dir, "c.json", &args);
    run.ok();
    let r = &runs(&doc)[0];
    let read = op(r, "read");
    assert!(u64_at(read, "/ok") > 0, "{read:#}");
    assert_eq!(u64_at(read, "/not_found"), u64_at(read, "/ok"), "{read:#}");
    assert_eq!(u64_at(r, "/not_found"), u64_at(read, "/ok"), "{r:#}");
    assert_eq!(u64_at(r, "/errors"), 0, "{r:#}");
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// A node that lets a connection have 2 requests executing, driven with 16 in flight per
/// connection: the excess is answered BUSY (720), and the breakdown says so by code, name and
/// message, in the JSON and the text, with the hint about `--pipeline`.
#[test]
fn a_pipeline_above_the_nodes_limit_shows_as_busy_720() {
    let _turn = one_at_a_time();
    let (dir, data) = data_dir();
    let node = Node::start(&data, &["--max-inflight-per-connection", "2"]);
    let mut args = vec!["--workload", "a", "--keys", "1000", "--duration", "1s"];
    args.extend(["--connections", "2", "--threads", "1", "--pipeline", "16", "--warmup", "200ms"]);
    args.extend(["--durability", "sync"]);
    let (run, doc) = run_against(&node, &dir, "busy.json", &args);
    // Requests got error replies: the run finished, with exit status 1.
    assert_eq!(run.status, Some(1), "{run:#?}");
    let r = &runs(&doc)[0];
    let errors = u64_at(r, "/errors");
    assert!(errors > 0, "{r:#}");
    let busy = &r["errors_by_status"]["720"];
    assert_eq!(busy["name"], "Busy", "{r:#}");
    // Every error is a BUSY: nothing else went wrong.
    assert_eq!(u64_at(busy, "/count"), errors, "{r:#}");
    let message = busy["message"].as_str().unwrap_or_else(|| panic!("no message: {busy:#}"));
    assert!(message.contains("in-flight request budget is full (2)"), "{message}");
    let per_op: u64 = ["read", "update"]
        .iter()
        .map(|name| op(r, name)["errors_by_status"]["720"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(per_op, errors, "{r:#}");
    let line = format!("errors: {errors} x 720 Busy: {message}");
    assert!(run.stdout.lines().any(|l| l == line), "no {line:?} in:\n{}", run.stdout);
    assert!(run.stdout.contains("--max-inflight-per-connection"), "{}", run.stdout);
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// Two designs of the key-design lab against a node given by address: their tables are gone
/// afterwards; with `--keep-tables` they stay. Each run reports each shard's CPU utilisation
/// and the throughput at which its busiest shard would saturate.
#[test]
fn the_lab_drops_its_tables_and_reports_each_shards_cpu() {
    let _turn = one_at_a_time();
    let (dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut args = vec!["--scenario", "user,enum", "--keys", "2000", "--duration", "1s"];
    args.extend(SMALL);
    args.extend(["--durability", "no-sync"]);
    let (run, doc) = run_against(&node, &dir, "lab.json", &args);
    let run = run.ok();
    let mut client = node.client();
    for table in ["lab_user", "lab_enum"] {
        let described = client.describe(table);
        assert!(described.is_err(), "{table} is still there: {described:?}");
    }
    assert!(has_words(&run.stdout, "shard CPU % saturates at ops/s"), "{}", run.stdout);
    for r in runs(&doc) {
        assert_saturation_figures(r);
    }

    args.push("--keep-tables");
    let (_, doc) = run_against(&node, &dir, "lab-kept.json", &args);
    assert_eq!(runs(&doc).len(), 2);
    for table in ["lab_user", "lab_enum"] {
        let described = client.describe(table);
        assert!(described.is_ok(), "{table} was dropped: {described:?}");
    }
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// One utilisation per shard of the node, and the saturation estimate is ops/s over the busiest.
fn assert_saturation_figures(r: &Json) {
    let label = &r["label"];
    let util: Vec<f64> = r["shard_utilisation"]
        .as_array()
        .unwrap_or_else(|| panic!("{label}: no shard_utilisation: {r:#}"))
        .iter()
        .map(|u| u.as_f64().expect("a number"))
        .collect();
    assert_eq!(util.len(), TEST_SHARDS, "{label}: {util:?}");
    assert!(util.iter().all(|u| u.is_finite() && *u >= 0.0), "{label}: {util:?}");
    let hottest = util.iter().copied().fold(0.0, f64::max);
    // Thousands of puts ran on the node: its busiest shard used some CPU.
    assert!(hottest > 0.0, "{label}: {util:?}");
    let expected = f64_at(r, "/ops_per_second") / hottest;
    let saturation = f64_at(r, "/saturation_ops_per_second");
    assert!((saturation - expected).abs() <= expected * 1e-9, "{label}: {saturation} {expected}");
}

/// Whether some line of `text` has these words, however the columns are padded.
fn has_words(text: &str, words: &str) -> bool {
    text.lines().any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ").contains(words))
}
