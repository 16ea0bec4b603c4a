//! Stopping and restarting the real daemon on the same data directory.
//!
//! - SIGTERM exits 0, and a node started again on the directory has every row (updated and
//!   deleted ones as they were left) and the same catalog (Describe equal before and after).
//! - NoSync writes acknowledged before SIGTERM survive it: the node is started with the longest
//!   flush interval (60 s), so the flush timer is not what puts them on disk; the shutdown sync is.
//! - SIGTERM in the middle of NoSync writes from several threads (same long flush interval)
//!   exits 0, and every write acknowledged before the node stopped answering is there afterwards:
//!   the shutdown lets requests in flight finish and syncs after them.
//! - SIGKILL in the middle of Sync writes from several threads loses no acknowledged write: every
//!   key whose put returned before the kill is present after the restart, with its value.
//! - A second daemon on a directory in use is refused at once: it exits with a failure status and
//!   a message naming the lock file and the holder's pid, and the first daemon goes on serving.

mod node_common;

use std::os::unix::process::ExitStatusExt;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use node_common::*;
use ringstore_net::Client;
use ringstore_storage::table::{Value, WriteOutcome};
use ringstore_storage::Durability;
use ringstore_tests::Node;

const PEOPLE_DDL: &str = "CREATE TABLE people (team STRING, id LONG, name STRING, age INTEGER, \
                          score DOUBLE, PRIMARY KEY (SHARD(team), id))";

fn person(team: &str, id: i64) -> [(&'static str, Value); 5] {
    [
        ("team", Value::String(team.to_owned())),
        ("id", Value::Long(id)),
        ("name", Value::String(format!("{team}-{id}"))),
        ("age", Value::Integer(id as i32 % 90)),
        ("score", Value::Double(id as f64 / 4.0)),
    ]
}

fn expect_kv(c: &mut Client, id: i64, value: &str) {
    let row = c.get("kv", &kv_key(id)).expect("get").unwrap_or_else(|| panic!("row {id} lost"));
    assert_eq!(kv_value(&row), Some(&Value::String(value.to_owned())), "row {id}");
}

#[test]
fn sigterm_then_restart_keeps_rows_and_catalog() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    c.ddl(PEOPLE_DDL).expect("create people");
    for id in 0..300 {
        c.put("kv", &kv_row(id, &format!("v{id}"))).expect("put");
    }
    for team in ["red", "blue", "green"] {
        for id in 0..20 {
            c.put("people", &person(team, id)).expect("put");
        }
    }
    for id in 0..30 {
        c.put("kv", &kv_row(id, &format!("updated{id}"))).expect("update");
    }
    for id in 30..40 {
        assert_eq!(
            c.delete("kv", &kv_key(id)).expect("delete"),
            WriteOutcome::Deleted { existed: true }
        );
    }
    let kv_before = c.describe("kv").expect("describe kv");
    let people_before = c.describe("people").expect("describe people");
    drop(c);
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "SIGTERM must exit 0: {status}");

    let node = Node::start(&data, &[]);
    let mut c = node.client();
    assert_eq!(c.describe("kv").expect("kv still described"), kv_before);
    assert_eq!(c.describe("people").expect("people still described"), people_before);
    for id in 0..300 {
        match id {
            0..30 => expect_kv(&mut c, id, &format!("updated{id}")),
            30..40 => assert_eq!(c.get("kv", &kv_key(id)).expect("get"), None, "{id} deleted"),
            _ => expect_kv(&mut c, id, &format!("v{id}")),
        }
    }
    for team in ["red", "blue", "green"] {
        for id in 0..20 {
            let key = [("team", Value::String(team.to_owned())), ("id", Value::Long(id))];
            let row = c.get("people", &key).expect("get").expect("person kept");
            let want: Vec<Option<Value>> =
                person(team, id).into_iter().map(|(_, v)| Some(v)).collect();
            assert_eq!(row.newest().fields, want, "{team}/{id}");
        }
    }
    // The restarted catalog goes on: a new table gets an id of its own.
    c.ddl("CREATE TABLE later (id LONG, PRIMARY KEY (id))").expect("create later");
    let later = c.describe("later").expect("describe later");
    assert!(later.id() != kv_before.id() && later.id() != people_before.id());
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

#[test]
fn nosync_writes_acknowledged_before_sigterm_survive_it() {
    const ROWS: i64 = 500;
    let (_dir, data) = data_dir();
    // The longest flush interval: nothing but the shutdown sync writes these rows in time.
    let node = Node::start(&data, &["--flush-interval-ms", "60000"]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    c.with_durability(Durability::NoSync);
    for id in 0..ROWS {
        let outcome = c.put("kv", &kv_row(id, &format!("nosync{id}"))).expect("put");
        assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
    }
    drop(c);
    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "SIGTERM must exit 0: {status}");

    let node = Node::start(&data, &[]);
    let mut c = node.client();
    for id in 0..ROWS {
        expect_kv(&mut c, id, &format!("nosync{id}"));
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// Writer threads putting `kv` rows with `durability` until the node stops answering; returns
/// the threads and the channel of acknowledged ids.
fn start_writers(
    node: &Node,
    writers: i64,
    durability: Durability,
) -> (Vec<std::thread::JoinHandle<()>>, mpsc::Receiver<i64>) {
    /// Each writer stops by itself after this many, should the signal not stop it.
    const WRITES_MAX: i64 = 200_000;
    let (ack_tx, ack_rx) = mpsc::channel::<i64>();
    let threads = (0..writers)
        .map(|w| {
            let mut client = node.client();
            client.with_durability(durability);
            let ack = ack_tx.clone();
            std::thread::spawn(move || {
                for i in 0..WRITES_MAX {
                    let id = w * 1_000_000 + i;
                    match client.put("kv", &kv_row(id, &format!("w{id}"))) {
                        Ok(WriteOutcome::Written { .. }) => {
                            if ack.send(id).is_err() {
                                return;
                            }
                        }
                        Ok(other) => panic!("put {id}: {other:?}"),
                        // The node stopped under this write: it may or may not be there.
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    (threads, ack_rx)
}

/// Waits (bounded) until `n` writes are acknowledged.
fn wait_for_acks(acks: &mpsc::Receiver<i64>, n: usize) -> Vec<i64> {
    let mut acked = Vec::with_capacity(n);
    let deadline = Instant::now() + Duration::from_secs(120);
    while acked.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        match acks.recv_timeout(left) {
            Ok(id) => acked.push(id),
            Err(e) => panic!("only {} writes acknowledged: {e}", acked.len()),
        }
    }
    acked
}

/// Joins the writers and adds the acknowledgements that came in up to the end.
fn finish_writers(
    threads: Vec<std::thread::JoinHandle<()>>,
    acks: mpsc::Receiver<i64>,
    acked: &mut Vec<i64>,
) {
    for t in threads {
        t.join().expect("writer thread");
    }
    acked.extend(acks.try_iter());
}

/// Four writers with `durability` until 400 acknowledgements, then `stop` the node mid-stream
/// (`check` judges its exit status); after a restart every acknowledged write must be there.
fn acknowledged_writes_survive(
    durability: Durability,
    flags: &[&str],
    stop: impl FnOnce(Node) -> std::process::ExitStatus,
    check: impl FnOnce(std::process::ExitStatus),
) {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, flags);
    node.client().ddl(KV_DDL).expect("create kv");
    let (threads, acks) = start_writers(&node, 4, durability);
    let mut acked = wait_for_acks(&acks, 400);
    check(stop(node));
    finish_writers(threads, acks, &mut acked);
    println!("{} {durability:?} writes acknowledged before the node stopped", acked.len());

    let node = Node::start(&data, &[]);
    let mut c = node.client();
    for id in &acked {
        expect_kv(&mut c, *id, &format!("w{id}"));
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn sigterm_during_nosync_writes_keeps_every_acknowledged_write() {
    acknowledged_writes_survive(
        Durability::NoSync,
        &["--flush-interval-ms", "60000"],
        Node::terminate,
        |status| assert_eq!(status.code(), Some(0), "SIGTERM under load must exit 0: {status}"),
    );
}

#[test]
fn sigkill_during_sync_writes_loses_no_acknowledged_write() {
    acknowledged_writes_survive(Durability::Sync, &[], Node::kill, |status| {
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}")
    });
}

#[test]
fn second_daemon_on_the_same_directory_is_refused() {
    let (_dir, data) = data_dir();
    let first = Node::start(&data, &[]);
    let mut c = first.client();
    c.ddl(KV_DDL).expect("create kv");
    c.put("kv", &kv_row(1, "one")).expect("put");

    let started = Instant::now();
    let err = Node::try_start(&data, &[]).expect_err("a second daemon on the same directory");
    let waited = started.elapsed();
    println!("refused after {waited:?}: {err}");
    // Refused at start-up, not after the harness's 60 s wait for a ready line.
    assert!(waited < Duration::from_secs(30), "took {waited:?}");
    assert!(err.contains("exit status: 1"), "exit status: {err}");
    let lock = data.join("LOCK");
    assert!(err.contains(&lock.display().to_string()), "the lock file is not named: {err}");
    assert!(err.contains("in use by another ringstore-node"), "{err}");
    assert!(err.contains(&format!("pid {}", first.pid())), "the holder is not named: {err}");
    // The refused daemon left the holder's pid in place.
    let pid = std::fs::read_to_string(&lock).expect("lock file");
    assert_eq!(pid.trim(), first.pid().to_string());

    // The first daemon goes on serving.
    c.ping().expect("ping");
    expect_kv(&mut c, 1, "one");
    drop(c);
    let status = first.terminate();
    assert!(status.success(), "{status}");
    // Once it stopped, the directory can be opened again.
    let again = Node::start(&data, &[]);
    expect_kv(&mut again.client(), 1, "one");
    let status = again.terminate();
    assert!(status.success(), "{status}");
}
