//! `ringstore-load --protocol resp` drives a Redis-protocol server with the same workloads as the
//! binary protocol, so that ringstore's RESP port and Redis are measured by one client. It
//! proves that:
//!
//! - a YCSB A run against a node's `--resp` port loads every key with SET, then reads and
//!   updates without an error reply; afterwards the server holds exactly the loaded keys, each
//!   with a value of the asked size (read back with a plain RESP client);
//! - the same run against a real redis-server (where one is installed; CI installs it) does the
//!   same, which is what makes the tool's figures comparable across the two servers;
//! - a key the load phase never wrote is counted as "not found" (YCSB's reads of keys beyond
//!   the loaded ones), not as an error.
//!
//! The runs are small (2000 keys, a second each) and take turns with the other load-tool
//! suites' runs ([`loadgen_common::one_at_a_time`]). Nothing here asserts on speed.

mod loadgen_common;
mod resp_common;

use std::net::SocketAddr;

use loadgen_common::*;
use resp_common::{node, resp_addr, Client, Redis};
use serde_json::Value as Json;

const KEYS: u64 = 2000;
const VALUE_BYTES: usize = 100;

/// Runs YCSB A over RESP against `addr` (with `pid` for its CPU time); returns the JSON run.
fn ycsb_a(addr: SocketAddr, pid: Option<u32>, keys: u64, no_load: bool) -> Json {
    let dir = temp_dir();
    let json = dir.path().join("resp.json");
    let (addr, keys, value) = (addr.to_string(), keys.to_string(), VALUE_BYTES.to_string());
    let pid = pid.map(|p| p.to_string());
    let mut args = vec!["--addr", &addr, "--protocol", "resp", "--workload", "a"];
    if let Some(pid) = &pid {
        args.extend(["--server-pid", pid]);
    }
    args.extend(SMALL);
    args.extend(["--keys", &keys, "--value-size", &value, "--duration", "1s", "--quiet"]);
    args.extend(["--json", arg(&json)]);
    if no_load {
        args.push("--no-load");
    }
    let run = run_load(&args).ok();
    assert!(run.stdout.contains("durability=server's (resp)"), "{}", run.stdout);
    let doc = read_json(&json);
    runs(&doc)[0].clone()
}

/// Every key 0..KEYS is on the server with a value of `VALUE_BYTES` bytes, and no other key.
fn assert_loaded(addr: SocketAddr) {
    let mut c = Client::connect(addr);
    assert_eq!(c.call("DBSIZE"), format!(":{KEYS}\r\n"));
    for n in [0, 1, KEYS / 2, KEYS - 1] {
        let key = format!("k{n:015}");
        let reply = c.call(&format!("GET {key}"));
        let head = format!("${VALUE_BYTES}\r\n");
        assert!(reply.starts_with(&head), "GET {key}: {reply:?}");
    }
}

fn assert_reads_and_updates(r: &Json) {
    assert_eq!(u64_at(r, "/errors"), 0, "{r:#}");
    for name in ["read", "update"] {
        assert!(u64_at(op(r, name), "/ok") > 0, "{name}: {:#}", op(r, name));
    }
}

#[test]
fn ycsb_a_over_resp_against_the_node() {
    let _turn = one_at_a_time();
    let (_dir, node) = node(&[]);
    let r = ycsb_a(resp_addr(&node), Some(node.pid()), KEYS, false);
    assert_reads_and_updates(&r);
    assert!(r["server_cpu_seconds"].as_f64().is_some_and(|s| s >= 0.0), "{r:#}");
    assert_loaded(resp_addr(&node));
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

#[test]
fn ycsb_a_over_resp_against_redis() {
    let Some(redis) = Redis::start() else {
        assert!(std::env::var_os("CI").is_none(), "CI installs redis-server (.ci/run)");
        return;
    };
    let _turn = one_at_a_time();
    let r = ycsb_a(redis.addr, None, KEYS, false);
    assert_reads_and_updates(&r);
    assert_loaded(redis.addr);
}

#[test]
fn a_get_of_a_missing_key_is_not_found_not_an_error() {
    let _turn = one_at_a_time();
    let (_dir, node) = node(&[]);
    // Nothing loaded: every read misses, and every update writes a key the reads may find later.
    let r = ycsb_a(resp_addr(&node), None, KEYS, true);
    assert_eq!(u64_at(&r, "/errors"), 0, "{r:#}");
    assert!(u64_at(op(&r, "read"), "/not_found") > 0, "{:#}", op(&r, "read"));
}
