//! The daemon's per-connection and node-wide limits, each on a node started with a small value.
//!
//! - `--max-connections 4`: four connections (shared port and both shard ports) are served; a
//!   fifth, on the shared port or a shard's own port, gets one error frame (code 721, request
//!   id 0) and is closed; once one of the four is closed, a new connection is served again.
//! - `--max-inflight-per-connection 1`: 64 Sync puts pipelined in one write; the ones past the
//!   budget are answered BUSY (720) at once and write nothing, the others are written, and the
//!   connection goes on working.
//! - `--max-output-buffer-bytes` at its minimum (`--max-frame-bytes` + 32): a client that sends
//!   80 Gets of a 900 KB row and does not read is disconnected (the node's connection count drops
//!   back, and the socket then delivers fewer than 80 replies before its end), while another
//!   client is served; and a client that does read its replies is not cut off by a pipelined
//!   burst of replies larger than the buffer (the cap is documented as the point where the node
//!   stops reading requests, and the disconnect as being for clients that never read).
//! - Memory of clients that do not read (issue 12, item 2): a client pipelining 200 Gets of a
//!   900 KB row and reading nothing makes the node hold at most its output cap plus one reply
//!   (the shard's `buffer_bytes` gauge, and the node's RSS grows by far less than the 180 MB the
//!   replies would take), the rest of its requests wait unread (`requests_deferred`), and closing
//!   it gives every byte back; with `--max-buffer-bytes` at its minimum, two more such clients
//!   on the same shard get BUSY (720) for what the shard's share cannot hold (a Get reserves
//!   what its row can make, so one more client would fit), and the gauge stays within the share
//!   plus the BUSY replies; on that minimum, eight clients pipelining Gets of small rows that
//!   must be read from disk (after a restart) are all answered, because such a Get reserves its
//!   record's size, not a frame; and eight clients each half-way through sending a 2 MB request
//!   frame hold at most the share in read buffers, the frames that do not fit being answered
//!   BUSY and their bodies discarded.
//! - `--read-timeout-ms 200`: a connection that sent half a header, or a header and part of its
//!   body, is closed by the node (a blocking read with a 10 s timeout returns end of stream),
//!   while an idle connection with no partial frame is not; and a frame dribbled in one byte at a
//!   time, each gap shorter than the timeout but the whole frame much longer, is cut off too.

mod node_common;

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use node_common::*;
use ringstore_net::frame::HEADER_BYTES;
use ringstore_net::request::{Request, WriteBody, WriteOptions};
use ringstore_net::{ClientError, Connection, FieldsBuf, Opcode};
use ringstore_storage::table::{Value, WriteOutcome};
use ringstore_storage::Durability;
use ringstore_tests::Node;

/// Longest wait for the node to act on a limit, polled through its statistics.
const ACT_TIMEOUT: Duration = Duration::from_secs(60);

fn ping(conn: &mut Connection) {
    let r = conn.call(&Request::Ping, Durability::Sync).expect("ping");
    assert_eq!((r.status, r.opcode), (0, Opcode::Ping));
}

fn is_refusal(e: &ClientError) -> bool {
    e.code() == Some(721) || matches!(e, ClientError::Closed { .. })
}

#[test]
fn connection_cap_refuses_past_the_limit_until_one_closes() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--max-connections", "4"]);
    // The first is a plain socket, so that it can be half-closed and the node's close observed.
    let mut first = raw_socket(node.addr());
    let (h, _) = raw_ping(&mut first, 1).expect("ping").expect("reply");
    assert_eq!((h.status, h.request_id, h.opcode), (0, 1, Opcode::Ping));
    let mut others: Vec<Connection> = [node.addr(), shard_addr(&node, 0), shard_addr(&node, 1)]
        .into_iter()
        .map(connect)
        .collect();
    for conn in others.iter_mut() {
        ping(conn);
    }

    // The cap is node-wide: refused on the shared port and on a shard's own port alike.
    for addr in [node.addr(), shard_addr(&node, 1)] {
        let mut extra = connect(addr);
        let reply = extra.recv().expect("the refusal frame");
        let message = String::from_utf8_lossy(&reply.body).into_owned();
        assert_eq!((reply.status, reply.request_id), (721, 0), "{message}");
        assert!(message.contains("too many connections") && message.contains('4'), "{message}");
        let e = extra.recv().expect_err("closed after the refusal");
        assert!(matches!(e, ClientError::Closed { .. }), "{e}");
    }
    for conn in others.iter_mut() {
        ping(conn);
    }

    // Close the first and wait for the node to close its end.
    first.shutdown(Shutdown::Write).expect("half-close");
    let n = first.read(&mut [0u8; 64]).expect("the node closes its end");
    assert_eq!(n, 0, "unexpected bytes");
    drop(first);
    // The slot is returned as the node's connection task ends, right after it closed its end; a
    // connection refused in that short window is retried, a bounded number of times.
    let mut refused_retries = 0;
    let (mut new, reply) = loop {
        assert!(refused_retries < 1000, "no connection accepted after one was closed");
        let mut conn = connect(node.addr());
        match conn.call(&Request::Stats, Durability::Sync) {
            Ok(reply) if reply.status == 0 => break (conn, reply),
            Ok(reply) => assert_eq!(reply.status, 721),
            Err(e) => assert!(is_refusal(&e), "{e}"),
        }
        refused_retries += 1;
    };
    println!("accepted after {refused_retries} refused retries");
    let stats = ringstore_net::response::decode_stats(&reply.body).expect("stats");
    assert_eq!(stat_sum(&stats, "connections"), 4, "three old and the new one");
    assert_eq!(stat_sum(&stats, "connections_refused"), 2 + refused_retries);
    ping(&mut new);
    for conn in others.iter_mut() {
        ping(conn);
    }
    drop((new, others));
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn requests_past_the_inflight_budget_are_busy() {
    const PUTS: i64 = 64;
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--max-inflight-per-connection", "1"]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    let busy_before = stat_sum(&c.stats().expect("stats"), "requests_busy");

    let mut conn = connect(shard_addr(&node, 0));
    let mut key_of = HashMap::new();
    for id in 0..PUTS {
        let row = FieldsBuf::of_values(&kv_row(id, "maybe"));
        let req = Request::Write {
            table: "kv",
            body: WriteBody::Put { row: row.list() },
            options: WriteOptions::default(),
        };
        key_of.insert(conn.send_request(&req, Durability::Sync).expect("queue put"), id);
    }
    conn.flush().expect("one write");
    let mut written = Vec::new();
    let mut busy = Vec::new();
    for _ in 0..PUTS {
        let reply = conn.recv().expect("reply");
        let id = key_of.remove(&reply.request_id).expect("a reply to each put, once");
        match reply.status {
            0 => {
                let outcome = ringstore_net::response::decode_write(&reply.body).expect("body");
                assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
                written.push(id);
            }
            720 => {
                let message = String::from_utf8_lossy(&reply.body);
                assert!(message.contains("in-flight request budget"), "{message}");
                assert!(message.contains("(1)"), "the limit is named: {message}");
                busy.push(id);
            }
            other => panic!("put {id}: status {other}: {}", String::from_utf8_lossy(&reply.body)),
        }
    }
    println!("{} written, {} busy", written.len(), busy.len());
    assert!(!written.is_empty() && !busy.is_empty(), "written {written:?}, busy {busy:?}");
    let busy_after = stat_sum(&c.stats().expect("stats"), "requests_busy");
    assert_eq!(busy_after - busy_before, busy.len() as u64);
    for id in &written {
        let row = c.get("kv", &kv_key(*id)).expect("get").expect("written row");
        assert_eq!(kv_value(&row), Some(&Value::String("maybe".into())));
    }
    for id in &busy {
        assert_eq!(c.get("kv", &kv_key(*id)).expect("get"), None, "BUSY put {id} wrote");
    }

    // The connection goes on: one request at a time is within the budget.
    ping(&mut conn);
    for id in &busy {
        let row = FieldsBuf::of_values(&kv_row(*id, "retried"));
        let req = Request::Write {
            table: "kv",
            body: WriteBody::Put { row: row.list() },
            options: WriteOptions::default(),
        };
        let reply = conn.call(&req, Durability::Sync).expect("retry");
        assert_eq!(reply.status, 0, "{}", String::from_utf8_lossy(&reply.body));
    }
    for id in &busy {
        let row = c.get("kv", &kv_key(*id)).expect("get").expect("retried row");
        assert_eq!(kv_value(&row), Some(&Value::String("retried".into())));
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
#[test]
fn client_that_does_not_read_is_disconnected() {
    const GETS: u64 = 80;
    const ROW_BYTES: usize = 900_000;
    let (_dir, data) = data_dir();
    let frame_limit = 2_097_152usize;
    let output_min = (frame_limit + HEADER_BYTES).to_string();
    let node = Node::start(
        &data,
        &[
            "--max-frame-bytes",
            &frame_limit.to_string(),
            "--max-output-buffer-bytes",
            &output_min,
            // A client that takes no responses for this long is disconnected.
            "--read-timeout-ms",
            "1000",
        ],
    );
    let mut c = node.client();
    c.ddl("CREATE TABLE blobs (id LONG, data BINARY, PRIMARY KEY (id))").expect("create");
    let blob = vec![0xA5u8; ROW_BYTES];
    let key = [("id", Value::Long(1))];
    c.put("blobs", &[("id", Value::Long(1)), ("data", Value::Binary(blob.clone()))]).expect("put");
    let owner = c.shard_of("blobs", &key).expect("routable").expect("owner");
    let base = c.stats().expect("stats");
    let (base_total, base_open) =
        (stat_sum(&base, "connections_total"), stat_sum(&base, "connections"));

    // 80 Gets of the row (about 72 MB of replies, far more than the socket buffers hold), then
    // no reads.
    let mut hog = raw_socket(shard_addr(&node, owner));
    let get = get_body("blobs", &key);
    let mut requests = Vec::new();
    for id in 1..=GETS {
        requests.extend_from_slice(&frame(Opcode::Get, 0, id, &get));
    }
    hog.write_all(&requests).expect("write the gets");

    // Wait, through the other client's Stats, until the node has accepted and closed it.
    let deadline = Instant::now() + ACT_TIMEOUT;
    loop {
        let s = c.stats().expect("stats");
        if stat_sum(&s, "connections_total") > base_total
            && stat_sum(&s, "connections") == base_open
        {
            break;
        }
        assert!(Instant::now() < deadline, "the node kept a client that does not read");
    }

    // What the socket buffers held, then the end (possibly inside a frame, or a reset).
    let mut replies = 0;
    loop {
        match read_frame(&mut hog) {
            Ok(Some((h, body))) => {
                assert_eq!(h.status, 0, "{}", String::from_utf8_lossy(&body));
                assert!(h.request_id >= 1 && h.request_id <= GETS);
                assert!(body.len() > ROW_BYTES, "a reply with the row");
                replies += 1;
            }
            Ok(None) => break,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::UnexpectedEof
                        | ErrorKind::ConnectionReset
                        | ErrorKind::ConnectionAborted
                ) =>
            {
                break
            }
            Err(e) => panic!("the node did not close the connection: {e}"),
        }
    }
    println!("{replies} of {GETS} replies reached the client before the node closed it");
    assert!(replies < GETS, "every reply was delivered: the client was not cut off");
    let log = node.log_text();
    assert!(log.contains("does not read its responses"), "no log line: {log}");

    // Another client is served, the large row included.
    let mut other = node.client();
    other.ping().expect("ping");
    let row = other.get("blobs", &key).expect("get").expect("row");
    assert_eq!(row.newest().fields[1], Some(Value::Binary(blob)));
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// The other side of the output cap: a client that reads its replies as they come is not cut
/// off, even when one pipelined burst of replies is larger than the output buffer. The node
/// documents the cap as the point where it "stops reading its requests" (config.rs,
/// docs/OPERATIONS.md) and disconnects only "a client that lets it fill (it sends but never
/// reads)" (node/src/connection.rs).
#[test]
fn client_that_reads_a_burst_larger_than_the_output_buffer_gets_every_reply() {
    const GETS: usize = 16;
    const ROW_BYTES: usize = 900_000;
    let (_dir, data) = data_dir();
    let frame_limit = 2_097_152usize;
    let output_min = (frame_limit + HEADER_BYTES).to_string();
    let node = Node::start(
        &data,
        &["--max-frame-bytes", &frame_limit.to_string(), "--max-output-buffer-bytes", &output_min],
    );
    let mut c = node.client();
    c.ddl("CREATE TABLE blobs (id LONG, data BINARY, PRIMARY KEY (id))").expect("create");
    let blob = vec![0x5Au8; ROW_BYTES];
    let key = [("id", Value::Long(1))];
    c.put("blobs", &[("id", Value::Long(1)), ("data", Value::Binary(blob.clone()))]).expect("put");
    let owner = c.shard_of("blobs", &key).expect("routable").expect("owner");

    let mut conn = connect(shard_addr(&node, owner));
    let get = get_body("blobs", &key);
    let ids: Vec<u64> = (0..GETS)
        .map(|_| conn.send(Opcode::Get, ringstore_net::frame::Flags(0), &get).expect("queue"))
        .collect();
    conn.flush().expect("write the burst");
    for id in ids {
        let reply = conn.recv_id(id).unwrap_or_else(|e| {
            panic!("a reading client was cut off ({GETS} pipelined gets of {ROW_BYTES} bytes): {e}")
        });
        assert_eq!(reply.status, 0, "{}", String::from_utf8_lossy(&reply.body));
        let (_, row) = ringstore_net::response::decode_get(&reply.body).expect("get body");
        assert_eq!(row.expect("row").newest().fields[1], Some(Value::Binary(blob.clone())));
    }
    ping(&mut conn);
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// What a Stats request reserves for its reply while it runs: when it runs on the shard it
/// reports, its own reservation is in the figure (`SMALL_RESPONSE_BYTES` in
/// node/src/budget.rs).
const STATS_RESERVATION: u64 = 4096;

/// The node's resident set, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).expect("VmRSS line");
    let kb: u64 = line.split_whitespace().nth(1).expect("value").parse().expect("number");
    kb * 1024
}

/// A node with 2 MiB frames and a 4 MiB output cap, a table holding one 900 KB row, and the
/// owning shard of that row.
fn node_with_a_large_row(data: &std::path::Path, extra: &[&str]) -> (Node, Vec<u8>, usize) {
    let mut args = vec!["--max-frame-bytes", "2097152", "--max-output-buffer-bytes", "4194304"];
    args.extend_from_slice(extra);
    let node = Node::start(data, &args);
    let mut c = node.client();
    c.ddl("CREATE TABLE blobs (id LONG, data BINARY, PRIMARY KEY (id))").expect("create");
    let blob = vec![0x3Cu8; 900_000];
    c.put("blobs", &[("id", Value::Long(1)), ("data", Value::Binary(blob))]).expect("put");
    let owner = c.shard_of("blobs", &[("id", Value::Long(1))]).expect("routable").expect("owner");
    let gets = (1..=200u64)
        .flat_map(|id| frame(Opcode::Get, 0, id, &get_body("blobs", &[("id", Value::Long(1))])))
        .collect();
    (node, gets, owner)
}

#[test]
fn a_client_that_does_not_read_holds_at_most_its_output_cap() {
    const CAP: u64 = 4 << 20;
    const FRAME: u64 = 2 << 20;
    let (_dir, data) = data_dir();
    let (node, gets, owner) = node_with_a_large_row(&data, &[]);
    let rss_before = rss_bytes(node.pid());
    let mut hog = raw_socket(shard_addr(&node, owner));
    hog.write_all(&gets).expect("write 200 gets");
    wait_for_stat(
        &node,
        ACT_TIMEOUT,
        &format!("shard {owner}: no request waited for output room"),
        |s| stat(s, owner, "requests_deferred") > 0,
    );
    let s = node.client().stats().expect("stats");
    let held = stat(&s, owner, "buffer_bytes");
    assert!(held <= CAP + FRAME + 32, "shard holds {held} bytes for one connection");
    let gets_run = stat(&s, owner, "ops_get");
    assert!(gets_run < 100, "{gets_run} of 200 gets ran though nothing was read");
    let grown = rss_bytes(node.pid()).saturating_sub(rss_before);
    assert!(grown < 64 << 20, "RSS grew by {grown} bytes for a client that reads nothing");
    drop(hog);
    wait_for_stat(
        &node,
        ACT_TIMEOUT,
        &format!("shard {owner}: a closed connection's bytes were not given back"),
        |s| stat(s, owner, "buffer_bytes") <= STATS_RESERVATION,
    );
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn past_the_shards_buffer_share_requests_are_busy() {
    const FRAME: u64 = 2 << 20;
    let (_dir, data) = data_dir();
    // The minimum for the test nodes' 2 shards: each share holds one 4 MiB output buffer and
    // one 2 MiB frame.
    let min = 2 * ((4u64 << 20) + FRAME + HEADER_BYTES as u64);
    let (node, gets, owner) =
        node_with_a_large_row(&data, &["--max-buffer-bytes", &min.to_string()]);
    let share = min / 2;
    let mut first = raw_socket(shard_addr(&node, owner));
    first.write_all(&gets).expect("first client's gets");
    wait_for_stat(
        &node,
        ACT_TIMEOUT,
        &format!("shard {owner}: the first client never filled its output"),
        |s| stat(s, owner, "requests_deferred") > 0,
    );
    // A Get reserves what its 900 KB row can make, so a client that stops reading holds about
    // three replies' worth (it waits once a frame more would pass its output cap): two more
    // such clients are more than the share holds.
    let mut others: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut other = raw_socket(shard_addr(&node, owner));
            other.write_all(&gets).expect("another client's gets");
            other
        })
        .collect();
    wait_for_stat(
        &node,
        ACT_TIMEOUT,
        &format!("shard {owner}: no request was refused past the share"),
        |s| stat(s, owner, "requests_busy") > 0,
    );
    let held = stat(&node.client().stats().expect("stats"), owner, "buffer_bytes");
    assert!(held <= share + 2 * 200 * 256, "shard holds {held} bytes, its share is {share}");
    // What the other clients got first is a reply or a BUSY, never a stall.
    for other in &mut others {
        let (h, body) = read_frame(other).expect("read").expect("a reply");
        let message = String::from_utf8_lossy(&body);
        assert!(h.status == 0 || h.status == 720, "{} {message}", h.status);
    }
    drop((first, others));
    wait_for_stat(
        &node,
        ACT_TIMEOUT,
        &format!("shard {owner}: closed connections' bytes were not given back"),
        |s| stat(s, owner, "buffer_bytes") <= STATS_RESERVATION,
    );
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// A Get that must read the disk sets aside what its record can make, not a whole frame: eight
/// clients pipelining 60 Gets each of small rows, after a restart emptied the record cache, are
/// all answered with their rows, on a node whose shard share holds only three frames. (Each
/// such Get used to reserve a frame until its read finished, so the share filled and most were
/// answered BUSY.)
#[test]
fn gets_that_read_the_disk_reserve_their_records_size_not_a_frame() {
    const CLIENTS: usize = 8;
    const GETS: usize = 60;
    let (_dir, data) = data_dir();
    let min = 2 * ((4u64 << 20) + (2 << 20) + HEADER_BYTES as u64);
    let min = min.to_string();
    let args = [
        "--max-frame-bytes",
        "2097152",
        "--max-output-buffer-bytes",
        "4194304",
        "--max-buffer-bytes",
        &min,
    ];
    let node = Node::start(&data, &args);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create");
    let ids = kv_ids_owned_by(&mut c, 0, 1, GETS);
    for &id in &ids {
        c.put("kv", &kv_row(id, &format!("value-{id}"))).expect("put");
    }
    drop(c);
    let status = node.terminate();
    assert!(status.success(), "{status}");
    let node = Node::start(&data, &args);
    let gets: Vec<u8> = ids
        .iter()
        .flat_map(|&id| frame(Opcode::Get, 0, id as u64, &get_body("kv", &kv_key(id))))
        .collect();
    let mut clients: Vec<TcpStream> =
        (0..CLIENTS).map(|_| raw_socket(shard_addr(&node, 0))).collect();
    for client in &mut clients {
        client.write_all(&gets).expect("pipelined gets");
    }
    for client in &mut clients {
        for _ in 0..GETS {
            let (h, body) = read_frame(client).expect("read").expect("a reply");
            assert_eq!(h.status, 0, "get {}: {}", h.request_id, String::from_utf8_lossy(&body));
            let value = format!("value-{}", h.request_id);
            let found = body.windows(value.len()).any(|w| w == value.as_bytes());
            assert!(found, "get {} did not return its row", h.request_id);
        }
    }
    let stats = node.client().stats().expect("stats");
    assert_eq!(stat(&stats, 0, "requests_busy"), 0);
    assert!(stat(&stats, 0, "cache_misses") >= GETS as u64, "the gets read the disk");
    drop(clients);
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

#[test]
fn half_sent_large_frames_are_held_within_the_shards_buffer_share() {
    const BODY: usize = 2_000_000;
    let (_dir, data) = data_dir();
    let min = 2 * ((4u64 << 20) + (2 << 20) + HEADER_BYTES as u64);
    let node = Node::start(
        &data,
        &[
            "--max-frame-bytes",
            "2097152",
            "--max-output-buffer-bytes",
            "4194304",
            "--max-buffer-bytes",
            &min.to_string(),
        ],
    );
    let share = min / 2;
    let big = frame(Opcode::Put, 0, 7, &vec![0x11u8; BODY]);
    // Eight clients on shard 0, each sending three quarters of a 2 MB frame (12 MB in all).
    let clients: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut s = raw_socket(shard_addr(&node, 0));
            s.write_all(&big[..HEADER_BYTES + BODY * 3 / 4]).expect("write most of the frame");
            s
        })
        .collect();
    wait_for_stat(&node, ACT_TIMEOUT, "shard 0: no large frame was refused past the share", |s| {
        stat(s, 0, "requests_busy") > 0
    });
    let held = stat(&node.client().stats().expect("stats"), 0, "buffer_bytes");
    assert!(held <= share + 8 * 256, "shard holds {held} bytes, its share is {share}");
    drop(clients);
    wait_for_stat(
        &node,
        ACT_TIMEOUT,
        "shard 0: closed connections' read buffers were not given back",
        |s| stat(s, 0, "buffer_bytes") <= STATS_RESERVATION,
    );
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// Writes `bytes` (an incomplete frame) and returns how long the node took to close the socket.
fn closed_after_partial_frame(addr: std::net::SocketAddr, bytes: &[u8]) -> Duration {
    let mut s = raw_socket(addr);
    s.write_all(bytes).expect("write the partial frame");
    let start = Instant::now();
    match s.read(&mut [0u8; 64]) {
        Ok(0) => {}
        Ok(n) => panic!("{n} unexpected bytes instead of a close"),
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted) => {
        }
        Err(e) => panic!("the node did not close the connection within {TIMEOUT:?}: {e}"),
    }
    start.elapsed()
}

#[test]
fn partial_frame_times_out() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--read-timeout-ms", "200"]);
    // An idle connection with no partial frame: not subject to the read timeout.
    let mut idle = connect(node.addr());
    ping(&mut idle);

    let half_header = frame(Opcode::Ping, 0, 1, &[]);
    let waited = closed_after_partial_frame(node.addr(), &half_header[..HEADER_BYTES / 2]);
    println!("half a header: closed after {waited:?}");
    assert!(waited >= Duration::from_millis(100), "closed before the timeout: {waited:?}");

    let with_body = frame(Opcode::Get, 0, 2, &get_body("kv", &kv_key(1)));
    let waited = closed_after_partial_frame(shard_addr(&node, 1), &with_body[..HEADER_BYTES + 4]);
    println!("header and part of the body: closed after {waited:?}");
    assert!(waited >= Duration::from_millis(100), "closed before the timeout: {waited:?}");

    // The idle connection has been idle longer than the read timeout and still works.
    ping(&mut idle);
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// The read timeout bounds a whole frame, not each gap: "a frame that has started arriving must
/// be complete within" `--read-timeout-ms` (config.rs, docs/OPERATIONS.md). A Ping header sent
/// one byte every 50 ms (each gap a quarter of the 200 ms timeout, the frame 1.6 s in all) must be
/// cut off rather than answered. The sleeps pace the input this test is about; nothing waits on
/// them for synchronisation.
#[test]
fn frame_dribbled_slower_than_the_read_timeout_is_closed() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--read-timeout-ms", "200"]);
    let mut s = raw_socket(node.addr());
    let ping = frame(Opcode::Ping, 0, 1, &[]);
    let start = Instant::now();
    let mut write_failed = None;
    for byte in &ping {
        if let Err(e) = s.write_all(&[*byte]) {
            write_failed = Some(e);
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = start.elapsed();
    if let Some(e) = write_failed {
        println!("closed while the frame was arriving ({elapsed:?}): {e}");
        return;
    }
    match read_frame(&mut s) {
        Ok(None) => {}
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted) => {
        }
        Ok(Some((h, _))) => panic!(
            "a frame that took {elapsed:?} to arrive was answered (request {}, status {}) \
             instead of being cut off after the 200 ms read timeout",
            h.request_id, h.status
        ),
        Err(e) => panic!("neither closed nor answered: {e}"),
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// The node closes a connection idle past `--idle-timeout-ms`, and the client library notices
/// before its next request and reopens it, so the CLI's and the load tool's control connections
/// (both `Client`s) survive the non-zero default idle timeout. Before the client checked, its
/// first call after the close failed.
#[test]
fn a_connection_closed_for_idleness_is_reopened_by_the_client() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--idle-timeout-ms", "200"]);
    let mut c = node.client();
    c.ping().expect("first ping");
    let mut probe = connect(node.addr());
    ping(&mut probe);
    // Wait (bounded) until the node holds no connection but the one asking: the client's and
    // the probe's were closed for idleness.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let open = stat_sum(&node.client().stats().expect("stats"), "connections");
        if open == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "{open} connections still open after {TIMEOUT:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(probe.closed_while_quiet(), "the closed connection is seen as closed");
    c.ping().expect("the client reopens the connection the node closed");
    c.ddl(KV_DDL).expect("DDL on the reopened connection");
    assert_eq!(c.get("kv", &kv_key(1)).expect("a read on a shard connection"), None);
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// A connection waiting for its next request does not hold up shutdown, also with no idle
/// timeout to close it: the shard's sweeper wakes every connection's wait for input once a stop
/// is requested (`node/src/read_interrupt.rs`), and the read loop then ends.
#[test]
fn an_idle_connection_does_not_hold_up_shutdown_without_an_idle_timeout() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--idle-timeout-ms", "0"]);
    let mut probe = connect(node.addr());
    ping(&mut probe);
    let status = node.terminate();
    assert!(status.success(), "{status}");
    assert!(probe.closed_while_quiet(), "the idle connection was closed at shutdown");
}
