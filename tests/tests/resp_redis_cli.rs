//! The RESP port against the tools people already have: `redis-cli` (Debian's redis-tools,
//! which `.ci/run` installs) runs commands against a node and prints what Redis's own server
//! makes it print; and where `redis-server` is installed, one script of commands is sent to a
//! real Redis started by the test and to the node, and every reply must be the same bytes.

mod resp_common;

use std::net::SocketAddr;
use std::process::Command;

use resp_common::*;

/// Commands whose replies must be the same bytes from Redis and from the node, run in order on
/// a fresh server of each.
const SCRIPT: &[&str] = &[
    "PING",
    "PING x",
    "ECHO hello",
    "SET a 1",
    "GET a",
    "SET a 2 NX",
    "SET a 3 XX GET",
    "SET b 1 XX",
    "SET a 1 EX 0",
    "SET a 1 EX 10 PX 10",
    "SET a 1 BOGUS",
    "SETNX a 9",
    "SETNX c 9",
    "GETSET c 10",
    "INCR c",
    "INCRBY c -20",
    "DECR c",
    "DECRBY c 3",
    "INCRBYFLOAT c 0.5",
    "INCRBYFLOAT c 1e2",
    "INCR a2",
    "APPEND s hello",
    "APPEND s _world",
    "STRLEN s",
    "STRLEN nothing",
    "GETRANGE s 1 3",
    "GETRANGE s -100 100",
    "GETRANGE s 5 2",
    "SETRANGE s 0 J",
    "SETRANGE s -1 J",
    "SETRANGE new 3 x",
    "GET new",
    "TYPE s",
    "TYPE nothing",
    "EXISTS a b c s",
    "TTL s",
    "PTTL nothing",
    "EXPIRE s 100 XX",
    "EXPIRE s 100 NX",
    "EXPIRE s 50 GT",
    "EXPIRE s 500 GT",
    "TTL s",
    "EXPIRE s 5 LT",
    "TTL s",
    "PERSIST s",
    "TTL s",
    "EXPIRE s 1 GT LT",
    "EXPIRE s x",
    "GETEX s EX 100",
    "TTL s",
    "GETEX s PERSIST",
    "TTL s",
    "GETEX s EX -1",
    "GETDEL s",
    "GETDEL s",
    "MSET m1 a m2 b",
    "MGET m1 nothing m2",
    "MSETNX m1 x m3 y",
    "MSETNX m3 x m4 y",
    "DEL m1 m2 m3 m4 m5",
    "UNLINK a",
    "SELECT 0",
    "SELECT x",
    "GET",
    "SET a",
    "GETRANGE a 1",
    "MSET a",
    "FOO",
    "FOO bar 1",
    "CLIENT SETNAME tester",
    "CLIENT GETNAME",
    "CLIENT SETNAME \"a b\"",
    "CLIENT BOGUS",
    "HELLO x",
    "CONFIG GET save",
    "DBSIZE",
];

/// The same after `HELLO 3`: replies in RESP3.
const SCRIPT_RESP3: &[&str] = &[
    "GET missing",
    "SET a 1",
    "SET a 2 NX",
    "SET a 3 XX GET",
    "MGET a missing",
    "GETDEL missing",
    "TTL a",
    "INCRBYFLOAT f 1.5",
    "CLIENT GETNAME",
    "CONFIG GET save",
    "TYPE a",
    "EXISTS a missing",
    "FOO",
];

fn call(addr: SocketAddr, commands: &[&str]) -> Vec<String> {
    let mut c = Client::connect(addr);
    commands.iter().map(|cmd| c.call(cmd)).collect()
}

#[test]
fn replies_are_redis_byte_for_byte() {
    let Some(redis) = Redis::start() else {
        assert!(std::env::var_os("CI").is_none(), "CI installs redis-server (.ci/run)");
        return;
    };
    let (_dir, node) = node(&[]);
    let theirs = call(redis.addr, SCRIPT);
    let ours = call(resp_addr(&node), SCRIPT);
    for ((cmd, t), o) in SCRIPT.iter().zip(&theirs).zip(&ours) {
        assert_eq!(o, t, "{cmd}: the node's reply (left) differs from Redis's (right)");
    }
}

#[test]
fn resp3_replies_are_redis_byte_for_byte() {
    let Some(redis) = Redis::start() else {
        assert!(std::env::var_os("CI").is_none(), "CI installs redis-server (.ci/run)");
        return;
    };
    let (_dir, node) = node(&[]);
    let in_resp3 = |addr| {
        let mut c = Client::connect(addr);
        assert!(c.call("HELLO 3").starts_with("%7\r\n"));
        SCRIPT_RESP3.iter().map(|cmd| c.call(cmd)).collect::<Vec<String>>()
    };
    let theirs = in_resp3(redis.addr);
    let ours = in_resp3(resp_addr(&node));
    for ((cmd, t), o) in SCRIPT_RESP3.iter().zip(&theirs).zip(&ours) {
        assert_eq!(o, t, "{cmd} in RESP3: the node's reply (left) differs from Redis's (right)");
    }
}

/// redis-cli's output for `args` against `addr`.
fn redis_cli(addr: SocketAddr, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", &addr.ip().to_string(), "-p", &addr.port().to_string()])
        .args(args)
        .output()
        .expect("run redis-cli");
    assert!(out.status.success(), "redis-cli {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn redis_cli_prints_what_it_prints_for_redis() {
    if !installed("redis-cli") {
        assert!(std::env::var_os("CI").is_none(), "CI installs redis-tools (.ci/run)");
        return;
    }
    let (_dir, node) = node(&[]);
    let addr = resp_addr(&node);
    let expected: &[(&[&str], &str)] = &[
        (&["PING"], "PONG\n"),
        (&["SET", "cli", "value one"], "OK\n"),
        (&["GET", "cli"], "value one\n"),
        (&["INCR", "counter"], "1\n"),
        (&["MGET", "cli", "nothing", "counter"], "value one\n\n1\n"),
        (&["EXPIRE", "cli", "100"], "1\n"),
        (&["TTL", "cli"], "100\n"),
        (&["DEL", "cli", "counter"], "2\n"),
        (&["GET", "cli"], "\n"),
        (&["INCR", "x", "y"], "ERR wrong number of arguments for 'incr' command\n\n"),
        (&["DBSIZE"], "0\n"),
    ];
    let redis = Redis::start();
    for (args, want) in expected {
        assert_eq!(redis_cli(addr, args), *want, "redis-cli {args:?} against the node");
        if let Some(redis) = &redis {
            assert_eq!(redis_cli(redis.addr, args), *want, "redis-cli {args:?} against Redis");
        }
    }
    // --scan (SCAN with a cursor) and KEYS, compared as sets.
    let mut c = Client::connect(addr);
    let mut redis_client = redis.as_ref().map(|r| Client::connect(r.addr));
    for i in 0..120 {
        let set = format!("SET scan:{i} {i}");
        assert_eq!(c.call(&set), "+OK\r\n");
        if let Some(r) = redis_client.as_mut() {
            assert_eq!(r.call(&set), "+OK\r\n");
        }
    }
    let sorted = |text: String| {
        let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
        lines.sort_unstable();
        lines
    };
    let want: Vec<String> = sorted((0..120).map(|i| format!("scan:{i}\n")).collect());
    let scanned = sorted(redis_cli(addr, &["--scan", "--pattern", "scan:*"]));
    assert_eq!(scanned, want, "redis-cli --scan against the node");
    let ones = sorted(redis_cli(addr, &["KEYS", "scan:1?"]));
    assert_eq!(ones.len(), 10, "{ones:?}");
    if let Some(redis) = &redis {
        let theirs = sorted(redis_cli(redis.addr, &["--scan", "--pattern", "scan:*"]));
        assert_eq!(theirs, want, "redis-cli --scan against Redis");
        assert_eq!(sorted(redis_cli(redis.addr, &["KEYS", "scan:1?"])), ones);
    }
    // A pipe of inline commands, as `redis-cli` sends a file of them.
    let piped = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "printf 'SET p 1\\nINCR p\\nGET p\\n' | redis-cli -h {} -p {}",
            addr.ip(),
            addr.port()
        ))
        .output()
        .expect("run redis-cli in a pipe");
    assert_eq!(String::from_utf8_lossy(&piped.stdout), "OK\n2\n2\n");
}
