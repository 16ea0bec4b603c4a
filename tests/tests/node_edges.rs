//! Edge cases found in review: a NULL beside a key value routes like the table layer reads it,
//! pages stay within the frame limit however large the rows, a scan's limit 0 is refused on the
//! fan-out path too, and a client that stops sending without reading its replies is closed.

mod node_common;

use std::io::{Read, Write};
use std::net::Shutdown;
use std::time::Instant;

use node_common::*;
use ringstore_net::request::{Request, WriteBody, WriteOptions};
use ringstore_net::{FieldsBuf, Opcode, RangeQuery, ValueRef};
use ringstore_storage::table::{Value, WriteOutcome};
use ringstore_storage::Durability;
use ringstore_tests::Node;

#[test]
fn null_beside_a_key_value_routes_to_the_owner() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    for shard in 0..2 {
        // Keys the *other* shard owns, sent to this shard's port with a NULL before the value.
        let ids = kv_ids_owned_by(&mut c, 1 - shard, 1000 * shard as i64, 5);
        let mut conn = connect(shard_addr(&node, shard));
        for id in &ids {
            let row = FieldsBuf::of([
                ("id", ValueRef::Null),
                ("id", ValueRef::Long(*id)),
                ("v", ValueRef::String("n")),
            ]);
            let req = Request::Write {
                table: "kv",
                body: WriteBody::Put { row: row.list() },
                options: WriteOptions::default(),
            };
            let reply = conn.call(&req, Durability::Sync).expect("put");
            assert_eq!(reply.status, 0, "{}", String::from_utf8_lossy(&reply.body));
        }
        for id in &ids {
            let row = c.get("kv", &kv_key(*id)).expect("get").expect("the row is on its owner");
            assert_eq!(kv_value(&row), Some(&Value::String("n".into())));
        }
    }
    assert!(node.terminate().success());
}

#[test]
fn pages_of_large_rows_stay_within_the_frame_limit() {
    let (_dir, data) = data_dir();
    let frame_limit: usize = 2_097_152;
    let node = Node::start(&data, &["--max-frame-bytes", &frame_limit.to_string()]);
    let mut c = node.client();
    c.ddl("CREATE TABLE big (g LONG, id LONG, data BINARY, PRIMARY KEY (SHARD(g), id))")
        .expect("create");
    let blob = vec![7u8; 900_000];
    for g in 0..2i64 {
        for id in 0..6i64 {
            let row = [
                ("g", Value::Long(g)),
                ("id", Value::Long(id)),
                ("data", Value::Binary(blob.clone())),
            ];
            assert!(matches!(c.put("big", &row).expect("put"), WriteOutcome::Written { .. }));
        }
    }
    // multiGet of one group (one shard), and a full scan across both shards: each page must
    // fit a frame (the client would refuse a larger one), and every row comes back once.
    let key = [("g", Value::Long(1))];
    let mut seen = Vec::new();
    let mut q = RangeQuery::new(&key, 100);
    loop {
        let page = c.multi_get("big", &q).expect("multiGet page within the limit");
        assert!(page.page.rows.len() <= 2, "{} rows of 900 KB in one page", page.page.rows.len());
        seen.extend(page.page.rows.iter().map(|r| r.key.clone()));
        match page.page.resume {
            Some(r) => q.resume = Some(r),
            None => break,
        }
    }
    assert_eq!(seen.len(), 6);
    let mut scanned = 0;
    let mut q = RangeQuery::new(&[], 100);
    q.allow_full_scan = true;
    loop {
        let page = c.scan("big", &q).expect("scan page within the limit");
        assert!(page.page.rows.len() <= 2);
        scanned += page.page.rows.len();
        match page.page.resume {
            Some(r) => q.resume = Some(r),
            None => break,
        }
    }
    assert_eq!(scanned, 12);
    assert!(node.terminate().success());
}

#[test]
fn fanned_out_scan_refuses_limit_zero() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    c.put("kv", &kv_row(1, "x")).expect("put");
    let mut q = RangeQuery::new(&[], 0);
    q.allow_full_scan = true;
    let e = c.scan("kv", &q).expect_err("limit 0");
    assert_eq!(e.code(), Some(227), "{e}");
    assert!(node.terminate().success());
}

#[test]
fn client_that_stops_sending_and_never_reads_is_closed() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--read-timeout-ms", "1000"]);
    let mut c = node.client();
    c.ddl("CREATE TABLE blobs (id LONG, data BINARY, PRIMARY KEY (id))").expect("create");
    let key = [("id", Value::Long(1))];
    c.put("blobs", &[("id", Value::Long(1)), ("data", Value::Binary(vec![1u8; 900_000]))])
        .expect("put");
    let owner = c.shard_of("blobs", &key).expect("routable").expect("owner");
    let before = stat_sum(&c.stats().expect("stats"), "connections");
    let accepted_before = stat_sum(&c.stats().expect("stats"), "connections_total");

    let mut hog = raw_socket(shard_addr(&node, owner));
    let get = get_body("blobs", &key);
    let mut requests = Vec::new();
    for id in 1..=30 {
        requests.extend_from_slice(&frame(Opcode::Get, 0, id, &get));
    }
    hog.write_all(&requests).expect("send the gets");
    hog.shutdown(Shutdown::Write).expect("half-close: no more requests");

    // The node must close it although its read side already saw EOF. First until the node has
    // accepted it (the sends above complete in the kernel before that, and the open count would
    // still read `before`), then until it is closed.
    let deadline = Instant::now() + std::time::Duration::from_secs(60);
    while stat_sum(&c.stats().expect("stats"), "connections_total") == accepted_before {
        assert!(Instant::now() < deadline, "the node never accepted the half-closed client");
    }
    while stat_sum(&c.stats().expect("stats"), "connections") > before {
        assert!(Instant::now() < deadline, "a half-closed client that never reads stayed open");
    }
    // What the socket buffers held, then the end.
    let mut sink = Vec::new();
    let _ = hog.read_to_end(&mut sink);
    assert!(sink.len() < 30 * 900_000, "the node stopped before writing every reply");
    assert!(node.terminate().success());
}

/// A CREATE TABLE with 65,536 fields (its text under the 1 MiB DDL limit) once panicked shard 0
/// in the catalog encoder and left the node half alive. It is refused with code 113, naming the
/// limit, and the node goes on serving DDL and writes.
#[test]
fn a_table_with_too_many_fields_is_refused_and_the_node_serves_on() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    let fields: String = (1..1 << 16).map(|i| format!("f{i} INTEGER, ")).collect();
    let ddl = format!("CREATE TABLE wide (id LONG, {fields}PRIMARY KEY (id))");
    assert!(ddl.len() < 1 << 20, "the text is under the DDL limit: {} bytes", ddl.len());
    match c.ddl(&ddl) {
        Err(ringstore_net::ClientError::Server(e)) => {
            assert_eq!(e.code, 113, "{}", e.message);
            assert!(e.message.contains("65536 fields; the limit is 1024"), "{}", e.message);
        }
        other => panic!("a 65,536-field table was not refused: {other:?}"),
    }
    c.ddl(KV_DDL).expect("DDL still works");
    c.put("kv", &kv_row(1, "after")).expect("writes still work");
    assert!(c.get("kv", &kv_key(1)).expect("get").is_some());
    assert!(node.terminate().success(), "SIGTERM still stops the node");
}
