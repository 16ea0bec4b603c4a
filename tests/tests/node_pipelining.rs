//! Pipelining on one connection to the real daemon.
//!
//! 1. 200 requests (Gets of rows written beforehand and Puts of new rows, Sync, WriteNoSync and
//!    NoSync, about half for keys the other shard owns, so they are forwarded) are written on one
//!    connection to shard 0's own port before any reply is read; then every reply is read. Every
//!    request id is answered exactly once, with its own opcode and the right content, nothing else
//!    arrives, the puts are readable afterwards, and shard 0 counts exactly the misrouted
//!    requests as forwarded.
//! 2. Replies overtake each other: a Sync put (it waits for its fsync) followed on the same
//!    connection, in the same write, by Gets that need no disk (absent keys of the same shard).
//!    The reads are answered before the write, so the replies arrive out of request order. The
//!    node gives no ordering guarantee, so this is observed, not forced: a few rounds are run and
//!    at least one must show it (each round's count is printed).

mod node_common;

use std::collections::{HashMap, HashSet};

use node_common::*;
use ringstore_net::request::{Request, WriteBody, WriteOptions};
use ringstore_net::{response, Client, Connection, FieldsBuf, Opcode};
use ringstore_storage::table::{Value, VersionSelect, WriteOutcome};
use ringstore_storage::Durability;
use ringstore_tests::Node;

/// Rows written before the pipeline, read back by its Gets.
const OLD_ROWS: i64 = 100;
const REQUESTS: usize = 200;
/// The ids the pipeline's puts write start here.
const NEW_BASE: i64 = 10_000;

/// What a pipelined request expects in its reply.
#[derive(Debug, Clone, PartialEq)]
enum Expect {
    Get { id: i64, value: String },
    Put { id: i64 },
}

fn queue_get(conn: &mut Connection, id: i64) -> u64 {
    let key = FieldsBuf::of_values(&kv_key(id));
    let req = Request::Get { table: "kv", key: key.list(), versions: VersionSelect::Newest };
    conn.send_request(&req, Durability::Sync).expect("queue get")
}

fn queue_put(conn: &mut Connection, id: i64, value: &str, durability: Durability) -> u64 {
    let row = FieldsBuf::of_values(&kv_row(id, value));
    let req = Request::Write {
        table: "kv",
        body: WriteBody::Put { row: row.list() },
        options: WriteOptions::default(),
    };
    conn.send_request(&req, durability).expect("queue put")
}

/// How many replies arrived after a reply to a later request.
fn overtaken(order: &[u64]) -> usize {
    let mut highest = 0;
    let mut late = 0;
    for &id in order {
        if id < highest {
            late += 1;
        }
        highest = highest.max(id);
    }
    late
}

fn setup() -> (tempfile::TempDir, Node, Client) {
    let (dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    (dir, node, c)
}

#[test]
fn two_hundred_pipelined_requests_each_answered_once() {
    let (_dir, node, mut c) = setup();
    c.with_durability(Durability::NoSync);
    for id in 0..OLD_ROWS {
        c.put("kv", &kv_row(id, &format!("old-{id}"))).expect("put");
    }
    let before = c.stats().expect("stats");

    let mut conn = connect(shard_addr(&node, 0));
    let durabilities = [Durability::Sync, Durability::WriteNoSync, Durability::NoSync];
    let mut expected: HashMap<u64, Expect> = HashMap::new();
    let mut misrouted = 0;
    for i in 0..REQUESTS {
        let (id, expect) = if i % 2 == 0 {
            let id = (i as i64 / 2) % OLD_ROWS;
            let got = queue_get(&mut conn, id);
            (got, Expect::Get { id, value: format!("old-{id}") })
        } else {
            let id = NEW_BASE + i as i64;
            let got = queue_put(&mut conn, id, &format!("new-{id}"), durabilities[i % 3]);
            (got, Expect::Put { id })
        };
        let key = match &expect {
            Expect::Get { id, .. } | Expect::Put { id } => *id,
        };
        if kv_owner(&mut c, key) != 0 {
            misrouted += 1;
        }
        assert!(expected.insert(id, expect).is_none(), "id {id} given twice");
    }
    assert!(misrouted > 0 && misrouted < REQUESTS, "{misrouted} of {REQUESTS} misrouted");
    assert_eq!(conn.in_flight(), REQUESTS);
    conn.flush().expect("write the whole pipeline");

    let mut order = Vec::with_capacity(REQUESTS);
    let mut answered = HashSet::new();
    for _ in 0..REQUESTS {
        let reply = conn.recv().expect("reply");
        let id = reply.request_id;
        assert!(answered.insert(id), "request {id} answered twice");
        let expect = expected.get(&id).unwrap_or_else(|| panic!("reply to unknown id {id}"));
        assert_eq!(reply.status, 0, "request {id}: {}", String::from_utf8_lossy(&reply.body));
        match expect {
            Expect::Get { id: key, value } => {
                assert_eq!(reply.opcode, Opcode::Get);
                let (_, row) = response::decode_get(&reply.body).expect("get body");
                let row = row.unwrap_or_else(|| panic!("row {key} missing"));
                assert_eq!(kv_value(&row), Some(&Value::String(value.clone())), "row {key}");
            }
            Expect::Put { .. } => {
                assert_eq!(reply.opcode, Opcode::Put);
                let outcome = response::decode_write(&reply.body).expect("put body");
                assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
            }
        }
        order.push(id);
    }
    assert_eq!(answered.len(), REQUESTS);
    assert_eq!(conn.in_flight(), 0, "every request answered, nothing kept back");
    println!("200 pipelined requests: {} replies overtaken by later requests", overtaken(&order));

    // Nothing more arrives: the next reply on the connection is the next request's.
    let ping = conn.call(&Request::Ping, Durability::Sync).expect("ping");
    assert_eq!((ping.request_id, ping.status), (REQUESTS as u64 + 1, 0));

    let after = c.stats().expect("stats");
    let forwarded = stat(&after, 0, "forwarded_out") - stat(&before, 0, "forwarded_out");
    assert_eq!(forwarded, misrouted as u64, "shard 0 forwards exactly the other shard's keys");
    for expect in expected.values() {
        if let Expect::Put { id } = expect {
            let row = c.get("kv", &kv_key(*id)).expect("get").expect("written row");
            assert_eq!(kv_value(&row), Some(&Value::String(format!("new-{id}"))));
        }
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn replies_overtake_a_sync_write() {
    const ROUNDS: usize = 5;
    const READS: usize = 20;
    let (_dir, node, mut c) = setup();
    let writes = kv_ids_owned_by(&mut c, 0, 0, ROUNDS);
    let absent = kv_ids_owned_by(&mut c, 0, 1_000_000, READS);
    let mut conn = connect(shard_addr(&node, 0));
    let mut rounds_reordered = 0;
    for (round, &write_id) in writes.iter().enumerate() {
        let put = queue_put(&mut conn, write_id, "synced", Durability::Sync);
        let gets: Vec<u64> = absent.iter().map(|id| queue_get(&mut conn, *id)).collect();
        conn.flush().expect("one write for the whole round");
        let mut order = Vec::with_capacity(READS + 1);
        for _ in 0..=READS {
            let reply = conn.recv().expect("reply");
            assert_eq!(reply.status, 0, "{}", String::from_utf8_lossy(&reply.body));
            if reply.request_id == put {
                let outcome = response::decode_write(&reply.body).expect("put body");
                assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
            } else {
                assert!(gets.contains(&reply.request_id), "unknown id {}", reply.request_id);
                assert_eq!(response::decode_get(&reply.body).expect("get body").1, None);
            }
            order.push(reply.request_id);
        }
        let put_position = order.iter().position(|id| *id == put).expect("put answered");
        println!("round {round}: the Sync put was answered after {put_position} of {READS} gets");
        if put_position > 0 {
            rounds_reordered += 1;
        }
        let row = c.get("kv", &kv_key(write_id)).expect("get").expect("written");
        assert_eq!(kv_value(&row), Some(&Value::String("synced".into())));
    }
    assert!(rounds_reordered > 0, "no round answered a get before the Sync put");
    let status = node.terminate();
    assert!(status.success(), "{status}");
}
