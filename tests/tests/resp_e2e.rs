//! The RESP port end to end: a node started with `--resp 127.0.0.1:0` (two shards), driven over
//! raw sockets. Every reply is compared byte for byte with what Redis 7 answers (the replies
//! `resp_redis_cli.rs` also checks against a real redis-server when one is installed).
//!
//! Covered: the core commands and their options, errors (unknown command, wrong arity, wrong
//! value), keys on both shards (inline on the connection's shard, forwarded to the other),
//! pipelining where forwarded, inline and disk-waiting commands interleave (replies in command
//! order), multi-key commands across shards, inline (telnet) commands, QUIT, the durable
//! setting (`--resp-durability sync`; more in `resp_durable.rs`), and INFO's keyspace hits and
//! misses counted per read command as Redis counts them (not the record cache's lookups).

mod resp_common;

use resp_common::*;

/// Keys enough that both shards own some (256 partitions over two shards).
fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("key:{i}")).collect()
}

/// Commands in order on one connection, each with Redis's reply.
const CORE_CASES: &[(&str, &str)] = &[
    ("PING", "+PONG\r\n"),
    ("PING hello", "$5\r\nhello\r\n"),
    ("ECHO hi", "$2\r\nhi\r\n"),
    ("SELECT 0", "+OK\r\n"),
    ("SELECT 1", "-ERR DB index is out of range\r\n"),
    ("GET nothing", "$-1\r\n"),
    ("SET k1 v1", "+OK\r\n"),
    ("GET k1", "$2\r\nv1\r\n"),
    ("SET k1 v2 NX", "$-1\r\n"),
    ("SET k1 v2 XX GET", "$2\r\nv1\r\n"),
    ("SET k2 v XX", "$-1\r\n"),
    ("SET k1 v3 EX 0", "-ERR invalid expire time in 'set' command\r\n"),
    ("SET k1 v3 EX 100 PX 5", "-ERR syntax error\r\n"),
    ("TTL k1", ":-1\r\n"),
    ("SET k1 v3 EX 100", "+OK\r\n"),
    ("SET k1 v4 KEEPTTL", "+OK\r\n"),
    ("PERSIST k1", ":1\r\n"),
    ("PERSIST k1", ":0\r\n"),
    ("TTL missing", ":-2\r\n"),
    ("EXPIRE k1 -1", ":1\r\n"),
    ("EXISTS k1", ":0\r\n"),
    ("INCR n", ":1\r\n"),
    ("INCRBY n 41", ":42\r\n"),
    ("DECR n", ":41\r\n"),
    ("DECRBY n 40", ":1\r\n"),
    ("INCRBYFLOAT n 1.5", "$3\r\n2.5\r\n"),
    ("INCR n", "-ERR value is not an integer or out of range\r\n"),
    ("INCRBY n x", "-ERR value is not an integer or out of range\r\n"),
    ("SET s hello", "+OK\r\n"),
    ("APPEND s _world", ":11\r\n"),
    ("STRLEN s", ":11\r\n"),
    ("GETRANGE s 0 4", "$5\r\nhello\r\n"),
    ("GETRANGE s -5 -1", "$5\r\nworld\r\n"),
    ("SETRANGE s 6 there", ":11\r\n"),
    ("GET s", "$11\r\nhello_there\r\n"),
    ("TYPE s", "+string\r\n"),
    ("TYPE nothing", "+none\r\n"),
    ("GETSET s new", "$11\r\nhello_there\r\n"),
    ("GETDEL s", "$3\r\nnew\r\n"),
    ("GETDEL s", "$-1\r\n"),
    ("SETNX s a", ":1\r\n"),
    ("SETNX s b", ":0\r\n"),
    ("SETEX e 100 v", "+OK\r\n"),
    ("PSETEX e 0 v", "-ERR invalid expire time in 'psetex' command\r\n"),
    ("GETEX e PERSIST", "$1\r\nv\r\n"),
    ("TTL e", ":-1\r\n"),
    ("DEL s e nothing", ":2\r\n"),
    ("UNLINK n", ":1\r\n"),
    ("GET", "-ERR wrong number of arguments for 'get' command\r\n"),
    ("SET k", "-ERR wrong number of arguments for 'set' command\r\n"),
    ("MSET a", "-ERR wrong number of arguments for 'mset' command\r\n"),
    ("NOSUCH a b", "-ERR unknown command 'NOSUCH', with args beginning with: 'a' 'b' \r\n"),
    ("CLIENT GETNAME", "$-1\r\n"),
    ("CLIENT SETNAME app", "+OK\r\n"),
    ("CLIENT GETNAME", "$3\r\napp\r\n"),
    ("CLIENT NOPE", "-ERR unknown subcommand 'NOPE'. Try CLIENT HELP.\r\n"),
    ("HELLO 4", "-NOPROTO unsupported protocol version\r\n"),
    ("CONFIG GET save", "*2\r\n$4\r\nsave\r\n$0\r\n\r\n"),
    ("CONFIG GET nomatch*", "*0\r\n"),
];

#[test]
fn core_commands_answer_as_redis() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    for (command, expected) in CORE_CASES {
        assert_eq!(c.call(command), *expected, "{command}");
    }
    let id = c.call("CLIENT ID");
    assert!(id.starts_with(':') && id.len() > 3, "{id}");
    let hello = c.call("HELLO 2");
    assert!(hello.starts_with("*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n"), "{hello}");
    assert!(c.call("TIME").starts_with("*2\r\n$10\r\n"));
    let count = c.call("COMMAND COUNT");
    assert!(count.starts_with(':') && count != ":0\r\n", "{count}");
    assert_eq!(c.call("QUIT"), "+OK\r\n");
    assert!(c.closed(), "QUIT closes the connection");
}

#[test]
fn expiry_is_kept_in_milliseconds() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    assert_eq!(c.call("SET t v PX 100000"), "+OK\r\n");
    let pttl: i64 = c.call("PTTL t").trim_start_matches(':').trim().parse().expect("an integer");
    assert!((99_000..=100_000).contains(&pttl), "{pttl}");
    assert_eq!(c.call("TTL t"), ":100\r\n");
    assert_eq!(c.call("INCR t"), "-ERR value is not an integer or out of range\r\n");
    assert_eq!(c.call("APPEND t w"), ":2\r\n");
    let kept: i64 = c.call("PTTL t").trim_start_matches(':').trim().parse().expect("an integer");
    assert!(kept <= pttl && kept > 90_000, "APPEND keeps the expiry: {kept}");
    assert_eq!(c.call("PEXPIREAT t 1"), ":1\r\n");
    assert_eq!(c.call("GET t"), "$-1\r\n", "an expiry in the past removes the key");
}

#[test]
fn keys_on_every_shard_and_multi_key_commands() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let keys = keys(40);
    let mut mset = vec!["MSET".to_string()];
    for k in &keys {
        mset.push(k.clone());
        mset.push(format!("value-of-{k}"));
    }
    assert_eq!(c.call(&mset.join(" ")), "+OK\r\n");
    let mut mget = format!("*{}\r\n", keys.len() + 1);
    for k in &keys {
        mget += &format!("${}\r\nvalue-of-{k}\r\n", k.len() + 9);
    }
    mget += "$-1\r\n";
    assert_eq!(c.call(&format!("MGET {} missing", keys.join(" "))), mget);
    assert_eq!(c.call(&format!("EXISTS {} missing {}", keys.join(" "), keys[0])), ":41\r\n");
    assert_eq!(c.call("DBSIZE"), ":40\r\n");
    let info = c.call("INFO keyspace");
    assert!(info.contains("db0:keys=40,"), "{info}");
    assert_eq!(c.call("MSETNX fresh 1 key:0 2"), ":0\r\n");
    assert_eq!(c.call("EXISTS fresh"), ":0\r\n");
    assert_eq!(c.call("MSETNX fresh 1 fresh2 2"), ":1\r\n");
    assert_eq!(c.call(&format!("DEL {} fresh fresh2", keys.join(" "))), ":42\r\n");
    assert_eq!(c.call("DBSIZE"), ":0\r\n");
    let stats = c.call("INFO stats");
    assert!(stats.contains("total_commands_processed:"), "{stats}");
}

#[test]
fn a_deep_pipeline_is_answered_in_command_order() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let keys = keys(200);
    let mut batch = Vec::new();
    let mut expected = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let v = format!("v{i}");
        for cmd in
            [format!("SET {k} {v}"), format!("GET {k}"), format!("INCR c:{}", i % 7), "PING".into()]
        {
            let words: Vec<&str> = cmd.split(' ').collect();
            batch.extend_from_slice(format!("*{}\r\n", words.len()).as_bytes());
            for w in words {
                batch.extend_from_slice(format!("${}\r\n{w}\r\n", w.len()).as_bytes());
            }
        }
        expected.push("+OK\r\n".to_string());
        expected.push(format!("${}\r\n{v}\r\n", v.len()));
        expected.push(format!(":{}\r\n", i / 7 + 1));
        expected.push("+PONG\r\n".to_string());
    }
    c.send(&batch);
    for (i, e) in expected.iter().enumerate() {
        assert_eq!(&c.reply(), e, "reply {i}");
    }
}

#[test]
fn inline_commands_work_as_in_redis() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    c.send(b"SET greeting \"hello world\"\r\nGET greeting\nPING\r\n\r\nEXISTS greeting nope\r\n");
    assert_eq!(c.reply(), "+OK\r\n");
    assert_eq!(c.reply(), "$11\r\nhello world\r\n");
    assert_eq!(c.reply(), "+PONG\r\n");
    assert_eq!(c.reply(), ":1\r\n");
}

#[test]
fn durable_writes_reply_after_their_sync() {
    let (_dir, node) = node(&["--resp-durability", "sync"]);
    let mut c = Client::connect(resp_addr(&node));
    let mut batch = Vec::new();
    for i in 0..50 {
        batch.extend_from_slice(format!("SET d{i} {i}\r\nGET d{i}\r\n").as_bytes());
    }
    c.send(&batch);
    for i in 0..50 {
        assert_eq!(c.reply(), "+OK\r\n", "SET d{i}");
        assert_eq!(c.reply(), format!("${}\r\n{i}\r\n", i.to_string().len()), "GET d{i}");
    }
    assert_eq!(c.call("DBSIZE"), ":50\r\n");
}

#[test]
fn values_up_to_the_limit_round_trip_and_larger_are_refused() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let big = vec![b'x'; 1000 * 1024];
    c.command(&[b"SET", b"big", &big]);
    assert_eq!(c.reply(), "+OK\r\n");
    c.command(&[b"GET", b"big"]);
    let got = c.reply_bytes();
    assert_eq!(&got[..10], b"$1024000\r\n");
    assert_eq!(got.len(), 10 + big.len() + 2);
    let long_key = vec![b'k'; 2000];
    c.command(&[b"SET", &long_key, b"v"]);
    let refused = c.reply();
    assert!(refused.starts_with("-ERR ") && refused.contains("1024"), "{refused}");
    assert_eq!(c.call("PING"), "+PONG\r\n");
}

#[test]
fn replies_past_the_output_cap_wait_for_the_client_and_all_arrive() {
    let cap = "2097184"; // one 2 MiB frame and its header: the smallest cap the node takes
    let (_dir, node) = node(&["--max-frame-bytes", "2097152", "--max-output-buffer-bytes", cap]);
    let mut c = Client::connect(resp_addr(&node));
    // Eight replies of this value (262,141 bytes each) end 56 bytes below the cap: short of the
    // room a reply is given (4 KiB), not at the cap, the state where the node must wait too.
    let value = vec![b'v'; 262_130];
    c.command(&[b"SET", b"large", &value]);
    assert_eq!(c.reply(), "+OK\r\n");
    // 40 GETs are five times the cap: the node must stop reading and go on as the
    // client takes replies. The writer runs on its own thread, since the node stops reading.
    let mut batch = Vec::new();
    for _ in 0..40 {
        batch.extend_from_slice(b"*2\r\n$3\r\nGET\r\n$5\r\nlarge\r\n");
    }
    batch.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
    let mut writer = c.stream.try_clone().expect("clone the socket");
    let sender = std::thread::spawn(move || std::io::Write::write_all(&mut writer, &batch));
    for i in 0..40 {
        let got = c.reply_bytes();
        assert_eq!(got.len(), 9 + value.len() + 2, "reply {i}");
        assert!(got.starts_with(b"$262130\r\nvvv"), "reply {i}");
    }
    assert_eq!(c.reply(), "+PONG\r\n");
    sender.join().expect("writer thread").expect("the batch was written");
}

/// Every key SCAN returns with `MATCH pattern COUNT count`, following cursors to 0.
fn scan_all(c: &mut Client, pattern: &str, count: usize) -> std::collections::BTreeSet<String> {
    let mut found = std::collections::BTreeSet::new();
    let mut cursor = "0".to_string();
    for _ in 0..10_000 {
        c.command(&[
            b"SCAN",
            cursor.as_bytes(),
            b"MATCH",
            pattern.as_bytes(),
            b"COUNT",
            count.to_string().as_bytes(),
        ]);
        let reply = c.reply();
        let mut lines = reply.split("\r\n");
        assert_eq!(lines.next(), Some("*2"), "{reply}");
        lines.next(); // $len of the cursor
        cursor = lines.next().expect("a cursor").to_string();
        let n: usize = lines.next().expect("keys").trim_start_matches('*').parse().expect("count");
        assert!(n <= count, "{n} keys for COUNT {count}");
        for _ in 0..n {
            lines.next();
            found.insert(lines.next().expect("a key").to_string());
        }
        if cursor == "0" {
            return found;
        }
    }
    panic!("SCAN did not end");
}

#[test]
fn scan_keys_randomkey_and_flush_cover_every_shard() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let keys = keys(300);
    for chunk in keys.chunks(100) {
        let mut mset = vec!["MSET".to_string()];
        for k in chunk {
            mset.extend([k.clone(), "v".into()]);
        }
        assert_eq!(c.call(&mset.join(" ")), "+OK\r\n");
    }
    assert_eq!(c.call("SET other x"), "+OK\r\n");
    let expected: std::collections::BTreeSet<String> = keys.iter().cloned().collect();
    assert_eq!(scan_all(&mut c, "key:*", 50), expected);
    assert_eq!(scan_all(&mut c, "*", 1000).len(), 301);
    assert_eq!(c.call("SCAN 987654"), "-ERR invalid cursor\r\n");
    assert_eq!(c.call("SCAN 0 COUNT 0"), "-ERR syntax error\r\n");
    let ones = c.call("KEYS key:1?");
    let mut got: Vec<&str> =
        ones.split("\r\n").skip(2).step_by(2).filter(|k| !k.is_empty()).collect();
    got.sort_unstable();
    let want: Vec<String> = (10..20).map(|i| format!("key:{i}")).collect();
    assert_eq!(got, want, "{ones}");
    let random = c.call("RANDOMKEY");
    let key = random.split("\r\n").nth(1).expect("a key");
    assert!(expected.contains(key) || key == "other", "{random}");
    // FLUSHALL from several connections: the node spreads them over its shards, and only
    // shard 0 orders DDL, so some are passed on to it.
    for _ in 0..4 {
        let mut other = Client::connect(resp_addr(&node));
        assert_eq!(other.call("FLUSHALL"), "+OK\r\n");
    }
    assert_eq!(c.call("DBSIZE"), ":0\r\n");
    assert_eq!(c.call("GET key:1"), "$-1\r\n");
    assert_eq!(c.call("RANDOMKEY"), "$-1\r\n");
    assert_eq!(c.call("SET key:1 again"), "+OK\r\n");
    assert_eq!(c.call("FLUSHDB ASYNC"), "+OK\r\n");
    assert_eq!(c.call("FLUSHDB NOW"), "-ERR syntax error\r\n");
    assert_eq!(c.call("KEYS *"), "*0\r\n");
}

#[test]
fn hello_3_switches_the_connection_to_resp3() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let hello = c.call("HELLO 3");
    assert!(hello.starts_with("%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"), "{hello}");
    assert!(hello.contains("$5\r\nproto\r\n:3\r\n"), "{hello}");
    assert_eq!(c.call("GET missing"), "_\r\n");
    assert_eq!(c.call("SET a 1"), "+OK\r\n");
    assert_eq!(c.call("SET a 1 NX"), "_\r\n");
    // Keys on both shards: forwarded replies are converted too.
    let keys = keys(20);
    let mget = c.call(&format!("MGET a missing {}", keys.join(" ")));
    assert_eq!(mget, format!("*22\r\n$1\r\n1\r\n{}", "_\r\n".repeat(21)));
    assert_eq!(c.call("CONFIG GET save"), "%1\r\n$4\r\nsave\r\n$0\r\n\r\n");
    assert_eq!(c.call("CLIENT GETNAME"), "_\r\n");
    c.command(&[b"SET", b"tricky", b"$-1\r\n"]);
    assert_eq!(c.reply(), "+OK\r\n");
    assert_eq!(c.call("GET tricky"), "$5\r\n$-1\r\n\r\n", "a value is never rewritten");
    assert!(c.call("HELLO 2").starts_with("*14\r\n"));
    assert_eq!(c.call("GET missing"), "$-1\r\n");
}

#[test]
fn commands_on_cold_keys_keep_their_order() {
    // No record cache and a restart: every row is on disk, so each first command on a key
    // waits for a disk read while the commands behind it are already read.
    let flags = ["--resp", "127.0.0.1:0", "--cache-capacity-bytes", "0"];
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let node = ringstore_tests::Node::start(&data, &flags);
    let mut c = Client::connect(resp_addr(&node));
    let n = 100;
    let mut load = Vec::new();
    for i in 0..n {
        load.extend_from_slice(format!("SET s:{i} v\r\nSET n:{i} 5\r\nSET d:{i} x\r\n").as_bytes());
    }
    c.send(&load);
    for _ in 0..3 * n {
        assert_eq!(c.reply(), "+OK\r\n");
    }
    assert!(node.terminate().success());
    let node = ringstore_tests::Node::start(&data, &flags);
    let mut c = Client::connect(resp_addr(&node));
    let mut batch = Vec::new();
    let mut expected = Vec::new();
    for i in 0..n {
        batch.extend_from_slice(
            format!(
                "APPEND s:{i} w\r\nGET s:{i}\r\nINCR n:{i}\r\nINCR n:{i}\r\nGET n:{i}\r\n\
                 DEL d:{i} s:{i}\r\nEXISTS d:{i}\r\nGET s:{i}\r\n"
            )
            .as_bytes(),
        );
        expected.extend([":2\r\n", "$2\r\nvw\r\n", ":6\r\n", ":7\r\n", "$1\r\n7\r\n", ":2\r\n"]);
        expected.extend([":0\r\n", "$-1\r\n"]);
    }
    c.send(&batch);
    for (i, e) in expected.iter().enumerate() {
        assert_eq!(c.reply(), *e, "reply {i} (key {})", i / 8);
    }
}

#[test]
fn commands_over_several_keys_or_the_node_keep_their_place_in_a_pipeline() {
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let keys = keys(30);
    let mut batch = String::new();
    let mut expected = Vec::new();
    for round in 0..5 {
        // A write, a multi-key command over both shards, a read of its keys, a flush, a write.
        let mut mset = vec![format!("*{}\r\n$4\r\nMSET\r\n", keys.len() * 2 + 1)];
        for k in &keys {
            let v = format!("{round}");
            mset.push(format!("${}\r\n{k}\r\n${}\r\n{v}\r\n", k.len(), v.len()));
        }
        batch += &format!("SET before {round}\r\n");
        batch += &mset.concat();
        batch +=
            &format!("GET {}\r\nGET {}\r\nDBSIZE\r\nFLUSHALL\r\nGET before\r\n", keys[0], keys[29]);
        batch += &format!("SET after {round}\r\nDBSIZE\r\n");
        expected.extend([
            "+OK\r\n".to_string(),
            "+OK\r\n".to_string(),
            format!("$1\r\n{round}\r\n"),
            format!("$1\r\n{round}\r\n"),
            // `after` of the round before survives until this round's FLUSHALL.
            format!(":{}\r\n", keys.len() + 1 + usize::from(round > 0)),
            "+OK\r\n".to_string(),
            "$-1\r\n".to_string(),
            "+OK\r\n".to_string(),
            ":1\r\n".to_string(),
        ]);
    }
    c.send(batch.as_bytes());
    for (i, e) in expected.iter().enumerate() {
        assert_eq!(&c.reply(), e, "reply {i}");
    }
}

/// A RESP connection waiting for its next command does not hold up shutdown, also when no idle
/// timeout would ever close it: the shard's sweeper wakes every connection's wait for input once
/// a stop is requested (`node/src/read_interrupt.rs`).
#[test]
fn an_idle_resp_connection_does_not_hold_up_shutdown() {
    let (_dir, node) = node(&["--idle-timeout-ms", "0"]);
    let mut c = Client::connect(resp_addr(&node));
    assert_eq!(c.call("PING"), "+PONG\r\n");
    let status = node.terminate();
    assert!(status.success(), "the node exits 0 at SIGTERM: {status:?}");
    assert!(c.closed(), "the idle connection was closed at shutdown");
}

/// `keyspace_hits` and `keyspace_misses` of `INFO stats`, summed over the shards.
fn keyspace(c: &mut Client) -> (u64, u64) {
    let stats = c.call("INFO stats");
    let field = |name: &str| {
        let line = stats.lines().find(|l| l.starts_with(name)).expect(name);
        line[name.len() + 1..].parse::<u64>().expect("a count")
    };
    (field("keyspace_hits"), field("keyspace_misses"))
}

#[test]
fn keyspace_hits_and_misses_count_read_commands_as_redis() {
    // Each command with the (hits, misses) Redis 7.0.15 counts for it, run one by one against a
    // redis-server: reads count whether they found the key; writes never count, even those
    // that look the key up (SET NX, INCR, APPEND, EXPIRE, DEL, MSETNX).
    const CASES: &[(&str, u64, u64)] = &[
        ("SET a 1", 0, 0),
        ("GET a", 1, 0),
        ("GET nx", 0, 1),
        ("SET a 2 NX", 0, 0),
        ("SET a 3 GET", 1, 0),
        ("SET b 3 GET", 0, 1),
        ("SETNX c 1", 0, 0),
        ("GETSET a 5", 1, 0),
        ("GETDEL b", 1, 0),
        ("GETDEL a", 1, 0),
        ("SET a 1", 0, 0),
        ("GETEX a", 1, 0),
        ("INCR a", 0, 0),
        ("APPEND a x", 0, 0),
        ("STRLEN a", 1, 0),
        ("GETRANGE a 0 1", 1, 0),
        ("SETRANGE a 0 z", 0, 0),
        ("EXPIRE a 100", 0, 0),
        ("TTL a", 1, 0),
        ("PTTL a", 1, 0),
        ("PERSIST a", 0, 0),
        ("TYPE a", 1, 0),
        ("EXISTS a nx", 1, 1),
        ("DEL a nx", 0, 0),
        ("MGET a c nx", 1, 2),
        ("MSET a 1 d 2", 0, 0),
        ("MSETNX e 1 f 2", 0, 0),
        ("MSETNX e 1 g 2", 0, 0),
        ("SET a 1 XX", 0, 0),
        ("INCRBYFLOAT a 1", 0, 0),
        ("SETEX q 100 v", 0, 0),
        ("EXPIRE nx 10", 0, 0),
        ("TTL nx", 0, 1),
    ];
    let (_dir, node) = node(&[]);
    let mut c = Client::connect(resp_addr(&node));
    let mut before = keyspace(&mut c);
    for (command, hits, misses) in CASES {
        c.call(command);
        let after = keyspace(&mut c);
        assert_eq!((after.0 - before.0, after.1 - before.1), (*hits, *misses), "{command}");
        before = after;
    }
}

#[test]
fn a_read_from_disk_counts_one_hit_and_writes_count_none() {
    // No record cache and a restart: every GET reads its row from disk (it was counted three
    // times as a record-cache miss when INFO reported the cache's figures).
    let flags = ["--resp", "127.0.0.1:0", "--cache-capacity-bytes", "0"];
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let node = ringstore_tests::Node::start(&data, &flags);
    let mut c = Client::connect(resp_addr(&node));
    let sets: String = (0..200).map(|i| format!("SET k{i} v\r\n")).collect();
    c.send(sets.as_bytes());
    for _ in 0..200 {
        assert_eq!(c.reply(), "+OK\r\n");
    }
    assert_eq!(keyspace(&mut c), (0, 0), "SETs are not reads");
    assert!(node.terminate().success());
    let node = ringstore_tests::Node::start(&data, &flags);
    let mut c = Client::connect(resp_addr(&node));
    // Keys of both shards, 200 present and 100 absent, pipelined.
    let gets: String = (0..300).map(|i| format!("GET k{i}\r\n")).collect();
    c.send(gets.as_bytes());
    for i in 0..300 {
        let expected = if i < 200 { "$1\r\nv\r\n" } else { "$-1\r\n" };
        assert_eq!(c.reply(), expected, "GET k{i}");
    }
    assert_eq!(keyspace(&mut c), (200, 100));
}
