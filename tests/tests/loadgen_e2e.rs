//! `ringstore-load` end to end, run as a subprocess the way a user runs it, against a node it
//! starts itself (no `--addr`) or one the harness started (`--addr`, `--server-pid`). Every run
//! is small (2000 keys or fewer, about a second per measured phase) and its `--json` document
//! is read back. It proves that:
//!
//! - the key-design lab (`--scenario`) runs each design on the same node and reports what the
//!   design does to the load: a 4-value ENUM leading the key touches at most 4 partitions, a
//!   seconds timestamp leading it touches one partition per wall-clock second, and a user id
//!   (alone or salted) spreads over many; charts, `.hgrm` and `.hlog` files are written;
//! - a sweep (`--sweep key-size=16,256`) runs each point on a fresh node and reports the node's
//!   own figures: every key indexed, more index bytes per key for longer keys, cache hits and
//!   misses, the node's resident memory;
//! - a YCSB run against a node given by address reports both operation types of the mix, the
//!   node's CPU time, and prints the final table;
//! - verify mode reads back every acknowledged Sync write and finds each one;
//! - bad flags exit with status 2 and a message saying what is wrong;
//! - the key stream is a function of `--seed`: the same seed sends the same requests to the
//!   same partitions, another seed does not;
//! - `--bind-clients` sends each client's requests to one shard only (client i to shard i
//!   modulo the shard count), where an unbound client spreads over every shard.
//!
//! The runs take turns ([`loadgen_common::one_at_a_time`]); each waits at most
//! [`loadgen_common::LOAD_TIMEOUT`]. Nothing here asserts on speed.

mod loadgen_common;

use loadgen_common::*;
use ringstore_tests::{Node, TEST_SHARDS};
use serde_json::Value as Json;

/// The node's default partition count (the length of every `partition_ops`).
const DEFAULT_PARTITIONS: usize = 256;

/// `--scenario` with four designs on a node the tool starts, `--json` and `--out-dir`.
#[test]
fn scenarios_show_what_each_key_design_does_to_the_partitions() {
    const DURATION_MS: u64 = 1500;
    const WARMUP_MS: u64 = 200;
    let _turn = one_at_a_time();
    let dir = temp_dir();
    let json = dir.path().join("scenarios.json");
    let out = dir.path().join("out");
    let duration = format!("{DURATION_MS}ms");
    let shards = shards_flag();
    let mut args = vec!["--scenario", "user,timestamp-s,enum,random-suffix", "--shards", &shards];
    args.extend(SMALL);
    args.extend(["--keys", "2000", "--duration", &duration, "--durability", "no-sync", "--quiet"]);
    args.extend(["--json", arg(&json), "--out-dir", arg(&out)]);
    run_load(&args).ok();

    let doc = read_json(&json);
    assert_eq!(doc["tool"], "ringstore-load");
    assert_eq!(doc["mode"], "scenarios");
    let labels: Vec<&str> =
        runs(&doc).iter().map(|r| r["label"].as_str().expect("label")).collect();
    assert_eq!(labels, ["user", "timestamp-s", "enum", "random-suffix"]);
    for run in runs(&doc) {
        assert_sound(run);
    }
    let touched = |i: usize| u64_at(&runs(&doc)[i], "/partitions_touched");
    // The shard key is the user id: 2000 users drawn by a zipfian distribution spread over
    // the partitions (all 256 in practice; 32 leaves a wide margin).
    assert!(touched(0) > 32, "user: {}", touched(0));
    // The shard key is the write's second: the measured phase spans at most
    // ceil(warm-up + duration) + 1 distinct seconds, and one more allows for a clock step.
    let seconds = (WARMUP_MS + DURATION_MS).div_ceil(1000) + 2;
    assert!(touched(1) <= seconds, "timestamp-s touched {} partitions", touched(1));
    // The shard key is an ENUM of 4 values: at most 4 partitions, whatever the load.
    assert!(touched(2) <= 4, "enum touched {} partitions", touched(2));
    // The shard key is (user id, salt of 100 values): at least as spread as `user`.
    assert!(touched(3) > 32, "random-suffix: {}", touched(3));

    for name in ["scenarios.svg", "scenarios.png"] {
        assert_file(&out, name);
    }
    for stem in labels {
        // Scenario runs are all puts, recorded as updates.
        assert_file(&out, &format!("{stem}-update.hgrm"));
        assert_file(&out, &format!("{stem}.hlog"));
    }
}

/// Requests went out and came back: operations counted, no errors, every shard and every
/// partition of the node listed.
fn assert_sound(run: &Json) {
    let label = &run["label"];
    assert!(u64_at(run, "/ops_total") > 0, "{label}: no operations");
    assert_eq!(u64_at(run, "/errors"), 0, "{label}");
    let shard_ops = u64s_at(run, "/shard_ops");
    assert_eq!(shard_ops.len(), TEST_SHARDS, "{label}");
    assert!(shard_ops.iter().sum::<u64>() > 0, "{label}");
    assert_eq!(u64s_at(run, "/partition_ops").len(), DEFAULT_PARTITIONS, "{label}");
}

/// `--sweep key-size=16,256` of YCSB C: a fresh node per point.
#[test]
fn sweep_reports_the_nodes_figures_at_each_key_size() {
    const KEYS: u64 = 1000;
    let _turn = one_at_a_time();
    let dir = temp_dir();
    let json = dir.path().join("sweep.json");
    let out = dir.path().join("out");
    let (shards, keys) = (shards_flag(), KEYS.to_string());
    let mut args = vec!["--sweep", "key-size=16,256", "--workload", "c", "--shards", &shards];
    args.extend(SMALL);
    args.extend(["--keys", &keys, "--duration", "1s", "--durability", "no-sync", "--quiet"]);
    args.extend(["--json", arg(&json), "--out-dir", arg(&out)]);
    run_load(&args).ok();

    let doc = read_json(&json);
    assert_eq!(doc["mode"], "sweep");
    let labels: Vec<&str> =
        runs(&doc).iter().map(|r| r["label"].as_str().expect("label")).collect();
    assert_eq!(labels, ["key-size=16", "key-size=256"]);
    for run in runs(&doc) {
        assert_sound(run);
        let label = &run["label"];
        // The load phase put every key on a fresh node.
        assert!(u64_at(run, "/node/index_keys") >= KEYS, "{label}: {:#}", run["node"]);
        // YCSB C reads, so the cache was asked.
        let lookups = u64_at(run, "/node/cache_hits") + u64_at(run, "/node/cache_misses");
        assert!(lookups > 0, "{label}: {:#}", run["node"]);
        let ratio = f64_at(run, "/node/cache_hit_ratio");
        assert!((0.0..=1.0).contains(&ratio), "{label}: {ratio}");
        assert!(u64_at(run, "/node/rss_bytes") > 0, "{label}");
    }
    let per_key = |i: usize| f64_at(&runs(&doc)[i], "/node/index_bytes_per_key");
    // The index holds the keys themselves: 240 more bytes per key cost more bytes per entry.
    assert!(
        per_key(1) > per_key(0),
        "16 B keys: {} B/key, 256 B keys: {} B/key",
        per_key(0),
        per_key(1)
    );
    for name in ["sweep.svg", "sweep.png"] {
        assert_file(&out, name);
    }
}

/// YCSB A against a node the harness started, given by address and pid.
#[test]
fn ycsb_against_a_node_given_by_address() {
    let _turn = one_at_a_time();
    let (data_tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let json = data_tmp.path().join("ycsb.json");
    let (addr, pid) = (node.addr().to_string(), node.pid().to_string());
    let mut args = vec!["--addr", &addr, "--server-pid", &pid, "--workload", "a"];
    args.extend(SMALL);
    args.extend(["--keys", "2000", "--duration", "1s", "--durability", "no-sync", "--quiet"]);
    args.extend(["--json", arg(&json)]);
    let run = run_load(&args).ok();

    let doc = read_json(&json);
    assert_eq!(doc["mode"], "run");
    assert_eq!(doc["settings"]["embedded"], false);
    assert_eq!(runs(&doc).len(), 1);
    let r = &runs(&doc)[0];
    assert_eq!(r["label"], "ycsb-a");
    assert_sound(r);
    // YCSB A is half reads, half updates: thousands of requests carry both.
    for name in ["read", "update"] {
        assert!(u64_at(op(r, name), "/ok") > 0, "{name}: {:#}", op(r, name));
    }
    // Closed loop: no uncorrected figures beside the latencies.
    assert!(op(r, "read")["uncorrected_latency_us"].is_null());
    // Read from /proc/PID/stat of the node the harness started.
    let cpu = f64_at(r, "/server_cpu_seconds");
    assert!(cpu >= 0.0, "{cpu}");

    let header = "op ops errors not found ops/s p50 ms p90 ms p99 ms p999 ms max ms";
    let has_line = |text: &str| {
        run.stdout.lines().any(|l| l.split_whitespace().collect::<Vec<_>>().join(" ") == text)
    };
    assert!(has_line(header), "no final table header in:\n{}", run.stdout);
    assert!(run.stdout.contains("workload=ycsb-a mix=read=50,update=50"), "{}", run.stdout);
    // The node is still serving and stops cleanly.
    node.client().ping().expect("ping after the run");
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// YCSB D, E and F against one node: every operation type of the core workloads runs without
/// an error reply (E's scans have no shard key and run on every shard; F's read-modify-writes
/// are a Get then a Put, counted as one operation).
#[test]
fn ycsb_d_e_f_run_every_operation_type() {
    let _turn = one_at_a_time();
    let (data_tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let (addr, pid) = (node.addr().to_string(), node.pid().to_string());
    for (workload, ops) in
        [("d", ["read", "insert"]), ("e", ["scan", "insert"]), ("f", ["read", "rmw"])]
    {
        let json = data_tmp.path().join(format!("ycsb-{workload}.json"));
        let mut args = vec!["--addr", &addr, "--server-pid", &pid, "--workload", workload];
        args.extend(SMALL);
        args.extend(["--keys", "2000", "--duration", "1s", "--durability", "no-sync", "--quiet"]);
        args.extend(["--json", arg(&json)]);
        run_load(&args).ok();
        let doc = read_json(&json);
        let r = &runs(&doc)[0];
        assert_sound(r);
        for name in ops {
            assert!(u64_at(op(r, name), "/ok") > 0, "{workload} {name}: {:#}", op(r, name));
            assert_eq!(u64_at(op(r, name), "/errors"), 0, "{workload} {name}");
        }
    }
}

/// `--verify` with Sync writes: every acknowledged write is read back as written.
#[test]
fn verify_mode_finds_every_acknowledged_sync_write() {
    const KEYS: u64 = 500;
    let _turn = one_at_a_time();
    let dir = temp_dir();
    let json = dir.path().join("verify.json");
    let (shards, keys) = (shards_flag(), KEYS.to_string());
    let mut args = vec!["--verify", "--workload", "a", "--shards", &shards];
    args.extend(SMALL);
    args.extend(["--keys", &keys, "--duration", "1s", "--durability", "sync", "--quiet"]);
    args.extend(["--json", arg(&json)]);
    let run = run_load(&args);

    let line = run.stdout.lines().find(|l| l.starts_with("verify: "));
    let line = line.unwrap_or_else(|| panic!("no verify line:\n{run:#?}"));
    assert!(line.ends_with("-> PASSED"), "{line}\n{run:#?}");
    assert_eq!(run.status, Some(0), "{run:#?}");
    let doc = read_json(&json);
    let v = &doc["extra"]["verify"];
    assert_eq!(v["passed"], true, "{v:#}");
    for finding in ["lost", "stale", "foreign"] {
        assert_eq!(u64_at(v, &format!("/{finding}")), 0, "{finding}: {v:#}");
    }
    // The load phase wrote every key, and each of those writes is checked.
    assert!(u64_at(v, "/checked") >= KEYS, "{v:#}");
    assert_eq!(u64_at(v, "/checked"), u64_at(v, "/ok") + u64_at(v, "/newer"), "{v:#}");
}

/// Bad flags: exit 2 before any load, with a message that names the problem.
#[test]
fn bad_flags_exit_2_with_a_clear_message() {
    let cases: [(&[&str], &str); 3] = [
        (&["--mix", "fly=1"], "unknown operation \"fly\""),
        (
            &["--sweep", "key-size=16", "--addr", "127.0.0.1:1"],
            "--sweep starts a fresh node for every point; leave out --addr",
        ),
        (&["--key-size", "2"], "--key-size 2 is outside 4..1024 bytes"),
    ];
    for (args, message) in cases {
        let run = run_load(args);
        assert_eq!(run.status, Some(2), "{args:?}: {run:#?}");
        assert!(run.stderr.contains(message), "{args:?}: {run:#?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:#?}");
    }
}

/// Closed loop with one client, one request at a time and `--ops`: the requests are exactly the
/// first N of the seeded key stream.
#[test]
fn the_same_seed_sends_the_same_requests_to_the_same_partitions() {
    const OPS: u64 = 3000;
    let _turn = one_at_a_time();
    let (data_tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let addr = node.addr().to_string();
    let run = |seed: &str, name: &str| {
        let json = data_tmp.path().join(name);
        let ops = OPS.to_string();
        // No warm-up: requests sent during one are not counted, and how many fit in it depends
        // on timing. With --ops and one client every request is counted, in key-stream order.
        let mut args = vec!["--addr", &addr, "--ops", &ops, "--warmup", "0s", "--seed", seed];
        args.extend(["--connections", "1", "--threads", "1", "--pipeline", "1"]);
        args.extend(["--distribution", "zipf", "--workload", "c", "--keys", "2000"]);
        args.extend(["--durability", "no-sync", "--quiet", "--json", arg(&json)]);
        run_load(&args).ok();
        let doc = read_json(&json);
        let r = &runs(&doc)[0];
        assert_eq!(u64_at(r, "/ops_total"), OPS, "seed {seed}");
        let partition_ops = u64s_at(r, "/partition_ops");
        assert_eq!(partition_ops.iter().sum::<u64>(), OPS, "seed {seed}: every read counted");
        partition_ops
    };
    let first = run("7", "seed7-a.json");
    let again = run("7", "seed7-b.json");
    let other = run("8", "seed8.json");
    assert_eq!(first, again, "seed 7 twice");
    assert_ne!(first, other, "seeds 7 and 8 drew the same partitions");
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

/// One client, then `TEST_SHARDS` clients, with and without `--bind-clients`: a bound client's
/// requests all go to its shard (client i to shard i mod shards), an unbound one's to every
/// shard, and a bound run is refused without shard-aware clients.
#[test]
fn bound_clients_send_only_to_their_shard() {
    const OPS: u64 = 2000;
    let _turn = one_at_a_time();
    let (data_tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let addr = node.addr().to_string();
    let shard_ops = |clients: usize, bind: bool, name: &str| {
        let json = data_tmp.path().join(name);
        let (ops, clients) = (OPS.to_string(), clients.to_string());
        let mut args = vec!["--addr", &addr, "--ops", &ops, "--warmup", "0s"];
        args.extend(["--connections", &clients, "--threads", "1", "--pipeline", "4"]);
        args.extend(["--workload", "a", "--keys", "2000", "--durability", "no-sync"]);
        args.extend(["--quiet", "--json", arg(&json)]);
        if bind {
            args.push("--bind-clients");
        }
        run_load(&args).ok();
        let doc = read_json(&json);
        let r = &runs(&doc)[0];
        assert_eq!(u64_at(r, "/ops_total"), OPS, "{name}");
        u64s_at(r, "/shard_ops")
    };
    let mut only_shard_0 = vec![0; TEST_SHARDS];
    only_shard_0[0] = OPS;
    assert_eq!(shard_ops(1, true, "one-bound.json"), only_shard_0);
    let spread = shard_ops(1, false, "one-unbound.json");
    assert!(spread.iter().all(|&n| n > 0), "an unbound client reaches every shard: {spread:?}");
    let each = shard_ops(TEST_SHARDS, true, "each-bound.json");
    assert!(each.iter().all(|&n| n > 0), "one bound client per shard: {each:?}");

    let refused = run_load(&["--addr", &addr, "--bind-clients", "--no-shard-aware"]);
    assert_eq!(refused.status, Some(2), "{refused:#?}");
    assert!(refused.stderr.contains("--bind-clients needs shard-aware clients"), "{refused:#?}");
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}
