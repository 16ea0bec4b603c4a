//! Malformed input against the real daemon (started with `--max-frame-bytes 2097152`).
//!
//! Each case is sent on a fresh connection (the shared port and both shards' own ports in turn):
//! bad magic (701), bad version (702), bad header checksum (703), reserved bits or unknown flag
//! bits (704), a body length over the limit (705, only the header is sent), an unknown opcode
//! (706; 704 and 706 also with a 300 KB body, which must be skipped whole), a garbage or
//! truncated body (710), invalid UTF-8 in a STRING value or a table name (710) and durability
//! bits 3 (711). For each the reply carries the code and the request id, the node counts exactly
//! one error, and the connection is closed (701, 702, 703, 705) or goes on: a Ping written right
//! behind the bad frame, in the same write, is answered (so a skipped body does not put the
//! stream out of step). After every case a well-behaved client on its own connections still gets
//! correct answers, and the malformed writes wrote nothing.
//!
//! Header cases start from a correct `FrameHeader` and change bytes; where the change is not to
//! the checksum itself, the CRC32C over bytes 0..28 is recomputed so that only the intended check
//! fails.

mod node_common;

use std::net::SocketAddr;

use node_common::*;
use ringstore_net::frame::Flags;
use ringstore_net::{ClientError, Connection, Opcode, Writer};
use ringstore_storage::table::Value;
use ringstore_storage::Durability;
use ringstore_tests::Node;

/// The frame limit the node is started with.
const LIMIT: u32 = 2_097_152;

/// One malformed input.
struct Case {
    name: &'static str,
    /// The bytes sent (one frame, possibly with a body).
    bytes: Vec<u8>,
    /// The request id the error reply must carry: the one in the frame's header.
    id: u64,
    code: u16,
    closes: bool,
    /// Text the error message must contain.
    message: &'static str,
}

fn case(
    name: &'static str,
    code: u16,
    closes: bool,
    message: &'static str,
    bytes: Vec<u8>,
) -> Case {
    let id = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    Case { name, bytes, id, code, closes, message }
}

/// A Put body for `kv` whose `v` STRING is the given bytes (not necessarily UTF-8).
fn put_body_with_string_bytes(id: i64, v: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    w.name("kv");
    w.u16(2);
    w.name("id");
    w.u8(2); // LONG
    w.buf.extend_from_slice(&id.to_le_bytes());
    w.name("v");
    w.u8(5); // STRING
    w.u32(v.len() as u32);
    w.buf.extend_from_slice(v);
    // Write options: condition Always (kind, token), no option bits, version, TTL.
    w.u8(0);
    w.u64(0);
    w.u8(0);
    w.u64(0);
    w.u64(0);
    w.buf
}

/// The ids of `kv` rows the malformed writes try to write; none may exist afterwards.
const UTF8_ID: i64 = 9001;
const DURABILITY_ID: i64 = 9002;
const TRUNCATED_ID: i64 = 9003;

fn cases() -> Vec<Case> {
    let good = |opcode, id, body: &[u8]| frame(opcode, 0, id, body);
    let mut cases = Vec::new();

    let mut b = good(Opcode::Ping, 101, &[]);
    b[0] = b'X';
    cases.push(case("bad magic", 701, true, "magic", b));

    let mut b = good(Opcode::Ping, 102, &[]);
    b[4] = 2;
    reseal(&mut b);
    cases.push(case("bad version", 702, true, "version 2", b));

    let mut b = good(Opcode::Ping, 103, &[]);
    b[29] ^= 0x40; // inside the checksum itself
    cases.push(case("bad checksum", 703, true, "checksum", b));

    // Reserved bytes set on a frame with a body: the body must be skipped.
    let mut b = good(Opcode::Get, 104, &get_body("kv", &kv_key(1)));
    b[22] = 1;
    reseal(&mut b);
    cases.push(case("reserved16 set", 704, false, "reserved", b));

    let mut b = good(Opcode::Put, 105, &put_body("kv", &kv_row(1, "overwritten")));
    b[24..28].copy_from_slice(&7u32.to_le_bytes());
    reseal(&mut b);
    cases.push(case("reserved32 set", 704, false, "reserved", b));

    let mut b = frame(Opcode::Put, 1 << 9, 106, &put_body("kv", &kv_row(1, "overwritten")));
    reseal(&mut b);
    cases.push(case("unknown flag bit", 704, false, "flags", b));

    // Only the header is sent: the node must refuse it without waiting for the body.
    let header = frame(Opcode::Put, 0, 107, &[]);
    let mut b = header;
    b[16..20].copy_from_slice(&(LIMIT + 1).to_le_bytes());
    reseal(&mut b);
    cases.push(case("body over the limit", 705, true, "2097152", b));

    let mut b = good(Opcode::Ping, 108, b"ignored body");
    b[5] = 99;
    reseal(&mut b);
    cases.push(case("unknown opcode", 706, false, "99", b));

    let b = good(Opcode::Get, 109, b"\x02kv garbage that is no key");
    cases.push(case("garbage body", 710, false, "byte", b));

    let mut body = put_body("kv", &kv_row(TRUNCATED_ID, "truncated"));
    body.truncate(body.len() - 3);
    let b = good(Opcode::Put, 110, &body);
    cases.push(case("truncated body", 710, false, "byte", b));

    let b = good(Opcode::Put, 111, &put_body_with_string_bytes(UTF8_ID, &[b'o', 0xFF, 0xFE, b'k']));
    cases.push(case("invalid UTF-8 STRING", 710, false, "UTF-8", b));

    let mut body = vec![2, b'k', 0xC3]; // a table name of 2 bytes, cut inside a character
    body.extend_from_slice(&get_body("kv", &kv_key(1))[3..]);
    let b = good(Opcode::Get, 112, &body);
    cases.push(case("invalid UTF-8 name", 710, false, "UTF-8", b));

    // A body of several of the node's 64 KiB reads behind a refused header is skipped whole: were
    // any of it taken for the next header, the node would answer 701 and close instead of
    // answering the Ping behind it.
    let big = vec![0x5Au8; 300_000];
    let mut b = good(Opcode::Put, 114, &big);
    b[23] = 0x80;
    reseal(&mut b);
    cases.push(case("reserved set, large body", 704, false, "reserved", b));

    let mut b = good(Opcode::Ping, 115, &big);
    b[5] = 200;
    reseal(&mut b);
    cases.push(case("unknown opcode, large body", 706, false, "200", b));

    let durability_3 = 3 << Flags::DURABILITY_SHIFT;
    let b = frame(Opcode::Put, durability_3, 113, &put_body("kv", &kv_row(DURABILITY_ID, "x")));
    cases.push(case("durability bits 3", 711, false, "durability", b));
    cases
}

/// Sends one case on a fresh connection to `addr` and checks the reply and what happens to the
/// connection after it.
fn run_case(addr: SocketAddr, case: &Case) {
    let name = case.name;
    let mut conn = Connection::connect(addr, Some(TIMEOUT)).expect("connect");
    conn.send_raw(&case.bytes).expect("queue the bad frame");
    // Right behind it, in the same write: a Ping, for the cases that keep the connection. (A
    // case that closes gets nothing more: bytes the node never reads could turn its close into a
    // reset that discards the error frame.)
    let ping = if case.closes {
        None
    } else {
        Some(conn.send(Opcode::Ping, Flags(0), &[]).expect("queue ping"))
    };
    // The replies may come in either order (each request runs in its own task).
    let mut error = None;
    let mut ping_answered = false;
    for _ in 0..1 + usize::from(ping.is_some()) {
        let reply = conn.recv().unwrap_or_else(|e| panic!("{name}: a reply is missing: {e}"));
        if Some(reply.request_id) == ping {
            assert_eq!((reply.status, reply.opcode), (0, Opcode::Ping), "{name}: the ping");
            ping_answered = true;
        } else {
            assert!(error.is_none(), "{name}: two error replies");
            error = Some(reply);
        }
    }
    let reply = error.unwrap_or_else(|| panic!("{name}: no error reply"));
    let message = String::from_utf8_lossy(&reply.body).into_owned();
    assert_eq!(reply.status, case.code, "{name}: {message}");
    assert_eq!(reply.request_id, case.id, "{name}: the reply names the request");
    assert!(message.contains(case.message), "{name}: {message:?} lacks {:?}", case.message);
    if case.closes {
        assert!(message.contains("closing the connection"), "{name}: {message:?}");
        let e = conn.recv().expect_err("the node closes the connection");
        assert!(matches!(e, ClientError::Closed { .. }), "{name}: not closed: {e}");
    } else {
        assert!(ping_answered, "{name}: the ping behind the bad frame");
        let r = conn.call(&ringstore_net::Request::Ping, Durability::Sync);
        assert_eq!(r.expect("the connection goes on").status, 0, "{name}");
    }
}

#[test]
fn malformed_frames_are_refused_and_others_keep_working() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &["--max-frame-bytes", &LIMIT.to_string()]);
    let mut good = node.client();
    good.ddl(KV_DDL).expect("create kv");
    good.put("kv", &kv_row(1, "one")).expect("put");
    let ports = [node.addr(), shard_addr(&node, 0), shard_addr(&node, 1)];

    for (i, case) in cases().iter().enumerate() {
        let before = stat_sum(&good.stats().expect("stats"), "requests_errors");
        run_case(ports[i % ports.len()], case);
        let after = stat_sum(&good.stats().expect("stats"), "requests_errors");
        assert_eq!(after - before, 1, "{}: errors counted", case.name);

        // The well-behaved client, on its own connections, is still answered correctly.
        good.ping().unwrap_or_else(|e| panic!("after {}: {e}", case.name));
        let row = good.get("kv", &kv_key(1)).expect("get").expect("row 1");
        assert_eq!(kv_value(&row), Some(&Value::String("one".into())), "after {}", case.name);
        let id = 100 + i as i64;
        good.put("kv", &kv_row(id, "fine")).expect("put");
        let row = good.get("kv", &kv_key(id)).expect("get").expect("row written");
        assert_eq!(kv_value(&row), Some(&Value::String("fine".into())), "after {}", case.name);
    }
    // No malformed write wrote anything.
    for id in [UTF8_ID, DURABILITY_ID, TRUNCATED_ID] {
        assert_eq!(good.get("kv", &kv_key(id)).expect("get"), None, "row {id}");
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}
