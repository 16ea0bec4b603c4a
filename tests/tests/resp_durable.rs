//! Durable RESP writes (`--resp-durability sync`): each write's reply waits in the shard's
//! acknowledger (`node/src/durable_acks.rs`) until the group commit that covers it, in its place
//! among the connection's replies, since RESP has no request ids and a client matches replies by
//! order alone. A node with two shards, driven over raw sockets.
//!
//! What it proves:
//! - A deep pipeline mixing durable writes (SET, APPEND, INCR, SET ... GET) with reads, PINGs and
//!   multi-key commands, on keys of both shards, gets every reply in command order with the
//!   value a model of the commands gives: a GET behind a durable SET never overtakes it, and a
//!   durable write acknowledged on the connection's shard never overtakes one forwarded to the
//!   other shard before it.
//! - SIGKILL after durable SETs were acknowledged loses none of them. The flush interval is 60 s,
//!   so only the sync each reply waited for can have put them on disk in time.
//! - Replies waiting for durability and large replies behind them respect the output cap: a
//!   client that reads late gets them all, in order.
//! - A client that half-closes with writes still waiting for durability gets all their replies
//!   before the close; clients that close at once, or never read until the node disconnects
//!   them, leave the node serving and able to stop cleanly.

mod node_common;
mod resp_common;

use std::collections::HashMap;
use std::io::Write;
use std::net::Shutdown;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use node_common::{stat_sum, wait_for_stat};
use resp_common::*;
use ringstore_tests::Node;

const SYNC: [&str; 2] = ["--resp-durability", "sync"];

/// How long a test waits for the node to reach a state it must reach.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The node's open connections, as INFO reports them to `c`.
fn connected_clients(c: &mut Client) -> u64 {
    info_field(c, "clients", "connected_clients")
}

/// A number of the INFO `section`'s line `name:`.
fn info_field(c: &mut Client, section: &str, name: &str) -> u64 {
    let info = c.call(&format!("INFO {section}"));
    let line = info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':'));
    line.and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no {name} in {info}"))
}

fn bulk(v: Option<&String>) -> String {
    v.map_or_else(|| "$-1\r\n".to_owned(), |v| format!("${}\r\n{v}\r\n", v.len()))
}

/// A pipeline of inline commands and the reply each must get, from a model of the keys.
#[derive(Default)]
struct Script {
    batch: String,
    expected: Vec<(String, String)>,
    model: HashMap<String, String>,
}

impl Script {
    fn push(&mut self, command: String, reply: String) {
        self.batch += &command;
        self.batch += "\r\n";
        self.expected.push((command, reply));
    }

    /// A read before a durable write, the write, reads and read-modify-writes after it.
    fn key_round(&mut self, key: &str, value: &str) {
        self.push(format!("GET {key}"), bulk(self.model.get(key)));
        self.push(format!("SET {key} {value}"), "+OK\r\n".into());
        self.push(format!("GET {key}"), bulk(Some(&value.to_owned())));
        let appended = format!("{value}x");
        self.push(format!("APPEND {key} x"), format!(":{}\r\n", appended.len()));
        self.push(format!("STRLEN {key}"), format!(":{}\r\n", appended.len()));
        self.push(format!("SET {key} w{value} GET"), bulk(Some(&appended)));
        self.model.insert(key.to_owned(), format!("w{value}"));
        self.push(format!("GET {key}"), bulk(self.model.get(key)));
    }
}

#[test]
fn pipelined_durable_writes_and_reads_reply_in_command_order() {
    let (_dir, node) = node(&SYNC);
    let mut c = Client::connect(resp_addr(&node));
    let keys: Vec<String> = (0..40).map(|i| format!("key:{i}")).collect();
    let mut s = Script::default();
    let mut count = 0;
    for round in 0..4 {
        for (i, k) in keys.iter().enumerate() {
            s.key_round(k, &format!("r{round}i{i}"));
            count += 1;
            s.push("INCR counter".into(), format!(":{count}\r\n"));
            if i % 10 == 9 {
                // A multi-key command runs alone, after every earlier durable write replied.
                let first = s.model.get(&keys[0]).cloned();
                let mget = format!("*2\r\n{}{}", bulk(s.model.get(k)), bulk(first.as_ref()));
                s.push(format!("MGET {k} {}", keys[0]), mget);
                s.push("PING".into(), "+PONG\r\n".into());
            }
        }
        // Durable writes back to back on keys of both shards, each with its own reply: one on
        // the connection's shard is acknowledged here while one forwarded just before it may
        // still wait for the other shard's sync, and must not be overtaken.
        for i in 0..40 {
            s.push(format!("INCRBY n:{i} {}", i + 1), format!(":{}\r\n", (round + 1) * (i + 1)));
        }
    }
    c.send(s.batch.as_bytes());
    for (i, (command, reply)) in s.expected.iter().enumerate() {
        assert_eq!(&c.reply(), reply, "reply {i}, to {command}");
    }
    assert_eq!(c.call("DBSIZE"), format!(":{}\r\n", keys.len() + 1 + 40));
}

/// Sends durable SETs in pipelines of 16 on one connection until the node stops answering;
/// each acknowledged (key, value) goes to `acked`.
fn durable_writer(
    addr: std::net::SocketAddr,
    writer: usize,
    acked: mpsc::Sender<(String, String)>,
) {
    /// Pipelines a writer sends at most, should the kill not stop it.
    const BATCHES_MAX: usize = 20_000;
    let mut c = Client::connect(addr);
    for b in 0..BATCHES_MAX {
        let pairs: Vec<(String, String)> =
            (0..16).map(|j| (format!("w{writer}:{b}:{j}"), format!("v{b}.{j}"))).collect();
        let batch: String = pairs.iter().map(|(k, v)| format!("SET {k} {v}\r\n")).collect();
        if c.stream.write_all(batch.as_bytes()).is_err() {
            return;
        }
        for pair in pairs {
            match c.try_reply().as_deref() {
                Some("+OK\r\n") => {
                    if acked.send(pair).is_err() {
                        return;
                    }
                }
                Some(other) => panic!("SET {pair:?}: {other:?}"),
                // The node was killed under this write: it may or may not be there.
                None => return,
            }
        }
    }
}

#[test]
fn sigkill_after_acknowledged_durable_sets_keeps_every_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    // The longest flush interval: only the syncs the replies waited for put the writes on disk.
    let flags = ["--resp", "127.0.0.1:0", SYNC[0], SYNC[1], "--flush-interval-ms", "60000"];
    let node = Node::start(&data, &flags);
    let addr = resp_addr(&node);
    let (tx, rx) = mpsc::channel();
    let writers: Vec<_> = (0..3)
        .map(|w| {
            let tx = tx.clone();
            std::thread::spawn(move || durable_writer(addr, w, tx))
        })
        .collect();
    drop(tx);
    let mut acked = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while acked.len() < 2_000 {
        let left = deadline.saturating_duration_since(Instant::now());
        acked.push(rx.recv_timeout(left).expect("2,000 durable SETs acknowledged"));
    }
    let status = node.kill();
    assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
    for w in writers {
        w.join().expect("writer thread");
    }
    acked.extend(rx.try_iter());
    println!("{} durable SETs acknowledged before the kill", acked.len());

    let node = Node::start(&data, &["--resp", "127.0.0.1:0"]);
    let mut c = Client::connect(resp_addr(&node));
    for chunk in acked.chunks(500) {
        let batch: String = chunk.iter().map(|(k, _)| format!("GET {k}\r\n")).collect();
        c.send(batch.as_bytes());
        for (k, v) in chunk {
            assert_eq!(c.reply(), bulk(Some(v)), "acknowledged SET {k} lost");
        }
    }
    assert!(node.terminate().success());
}

#[test]
fn durable_replies_and_large_replies_behind_them_respect_the_output_cap() {
    let cap = "2097184"; // one 2 MiB frame and its header: the smallest cap the node takes
    let flags =
        [SYNC[0], SYNC[1], "--max-frame-bytes", "2097152", "--max-output-buffer-bytes", cap];
    let (_dir, node) = node(&flags);
    let mut c = Client::connect(resp_addr(&node));
    let value = vec![b'v'; 262_130];
    c.command(&[b"SET", b"large", &value]);
    assert_eq!(c.reply(), "+OK\r\n");
    // Forty durable SETs, each followed by a GET of 256 KiB: five times the cap in all.
    let mut batch = String::new();
    for i in 0..40 {
        batch += &format!("SET d{i} {i}\r\nGET large\r\n");
    }
    batch += "PING\r\n";
    let mut writer = c.stream.try_clone().expect("clone the socket");
    let sender = std::thread::spawn(move || writer.write_all(batch.as_bytes()));
    // Read late: only once the node has gone as far as it can without a read, which is either
    // a command waiting for room in the full output or, if the socket took every reply, all 82
    // commands (the first SET included) run.
    wait_for_stat(&node, SETTLE_TIMEOUT, "the node neither filled the output nor ran all", |s| {
        stat_sum(s, "requests_deferred") > 0 || stat_sum(s, "resp_commands") >= 82
    });
    for i in 0..40 {
        assert_eq!(c.reply(), "+OK\r\n", "SET d{i}");
        let got = c.reply_bytes();
        assert_eq!(got.len(), 9 + value.len() + 2, "GET {i}");
        assert!(got.starts_with(b"$262130\r\nvvv"), "GET {i}");
    }
    assert_eq!(c.reply(), "+PONG\r\n");
    sender.join().expect("writer thread").expect("the batch was written");
    assert_eq!(c.call("DBSIZE"), ":41\r\n");
}

#[test]
fn a_half_closed_connection_gets_every_durable_reply_before_the_close() {
    let (_dir, node) = node(&SYNC);
    let mut c = Client::connect(resp_addr(&node));
    let batch: String = (0..300).map(|i| format!("SET h{i} {i}\r\nGET h{i}\r\n")).collect();
    c.send(batch.as_bytes());
    c.stream.shutdown(Shutdown::Write).expect("half-close");
    for i in 0..300 {
        assert_eq!(c.reply(), "+OK\r\n", "SET h{i}");
        assert_eq!(c.reply(), bulk(Some(&i.to_string())), "GET h{i}");
    }
    assert!(c.closed(), "closed after the last reply");
    assert!(node.terminate().success());
}

#[test]
fn clients_gone_with_durable_writes_waiting_leave_the_node_serving() {
    let flags = [SYNC[0], SYNC[1], "--max-frame-bytes", "2097152"];
    let flags = [&flags[..], &["--max-output-buffer-bytes", "2097184", "--read-timeout-ms", "300"]];
    let (_dir, node) = node(&flags.concat());
    let addr = resp_addr(&node);
    let mut c = Client::connect(addr);
    c.command(&[b"SET", b"large", &vec![b'v'; 262_130]]);
    assert_eq!(c.reply(), "+OK\r\n");
    let alone = connected_clients(&mut c);
    let accepted = info_field(&mut c, "stats", "total_connections_received");
    // One client closes at once, with thousands of durable SETs sent and not answered.
    let mut gone = Client::connect(addr);
    let batch: String = (0..5_000).map(|i| format!("SET g{i} {i}\r\n")).collect();
    gone.send(batch.as_bytes());
    drop(gone);
    // Another never reads: durable SETs and large GETs fill its output, and the node closes it
    // once it has taken nothing for the read timeout.
    let mut stalled = Client::connect(addr);
    let batch: String = (0..200).map(|i| format!("SET s{i} {i}\r\nGET large\r\n")).collect();
    let mut writer = stalled.stream.try_clone().expect("clone the socket");
    let sender = std::thread::spawn(move || {
        let _ = writer.write_all(batch.as_bytes());
    });
    // Both accepted (else the count below could be back at `alone` before either is counted),
    // then both gone: the node holds no connection but `c` again.
    let deadline = Instant::now() + SETTLE_TIMEOUT;
    while info_field(&mut c, "stats", "total_connections_received") < accepted + 2 {
        assert!(Instant::now() < deadline, "the node did not accept both clients");
    }
    while connected_clients(&mut c) != alone {
        assert!(Instant::now() < deadline, "the node still holds a gone or stalled client");
    }
    assert!(stalled.closed(), "a client that does not read is disconnected");
    sender.join().expect("writer thread");
    // The node serves on, durable writes included, and stops cleanly.
    assert_eq!(c.call("SET after 1"), "+OK\r\n");
    assert_eq!(c.call("GET after"), "$1\r\n1\r\n");
    assert_eq!(c.call("PING"), "+PONG\r\n");
    assert!(node.terminate().success());
}
