//! Malformed RESP over a raw socket: every case is answered `-ERR Protocol error: ...` (Redis's
//! words) and the connection closed, or, for what Redis takes as a command, answered as one; the
//! node stays up, and a command pipelined behind a malformed one is never run.

mod resp_common;

use resp_common::*;

#[test]
fn every_malformed_command_is_answered_and_closed_and_the_node_stays_up() {
    let (_dir, node) = node(&["--read-timeout-ms", "2000"]);
    let addr = resp_addr(&node);
    let long_inline = vec![b'a'; 64 * 1024 + 10];
    let mut long_count = b"*".to_vec();
    long_count.extend(std::iter::repeat_n(b'1', 64 * 1024 + 10));
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("bad count", b"*x\r\n".to_vec(), "invalid multibulk length"),
        ("huge count", b"*1048577\r\n".to_vec(), "invalid multibulk length"),
        ("not a bulk", b"*1\r\n:1\r\n".to_vec(), "expected '$', got ':'"),
        ("negative bulk", b"*1\r\n$-5\r\n".to_vec(), "invalid bulk length"),
        ("bulk over the limit", b"*1\r\n$999999999\r\n".to_vec(), "invalid bulk length"),
        ("unbalanced quotes", b"SET k \"v\r\n".to_vec(), "unbalanced quotes in request"),
        ("long inline", long_inline, "too big inline request"),
        ("long count", long_count, "too big mbulk count string"),
    ];
    for (name, bytes, message) in cases {
        let mut c = Client::connect(addr);
        let mut sent = bytes.clone();
        // A command right behind the bad one must not run.
        sent.extend_from_slice(b"*3\r\n$3\r\nSET\r\n$6\r\nbehind\r\n$1\r\nx\r\n");
        c.send(&sent);
        assert_eq!(c.reply(), format!("-ERR Protocol error: {message}\r\n"), "{name}");
        assert!(c.closed(), "{name}: the connection is closed");
        assert_eq!(c.leftover(), "", "{name}: nothing after the error");
        let mut check = Client::connect(addr);
        assert_eq!(check.call("PING"), "+PONG\r\n", "after {name}");
        assert_eq!(check.call("EXISTS behind"), ":0\r\n", "after {name}");
    }
}

#[test]
fn a_command_cut_short_is_closed_at_the_read_timeout() {
    let (_dir, node) = node(&["--read-timeout-ms", "300"]);
    let mut c = Client::connect(resp_addr(&node));
    c.send(b"*2\r\n$3\r\nGET\r\n$10\r\nabc");
    assert!(c.closed(), "a partial command is dropped at the read timeout");
    let mut check = Client::connect(resp_addr(&node));
    assert_eq!(check.call("PING"), "+PONG\r\n");
}

#[test]
fn random_bytes_never_take_the_node_down() {
    let (_dir, node) = node(&["--read-timeout-ms", "300"]);
    let addr = resp_addr(&node);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for round in 0..40 {
        let mut bytes = Vec::new();
        for _ in 0..(round * 13 % 200 + 1) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Mostly protocol characters, so the parser gets past the first byte.
            let pick = b"*$\r\n:-+0123456789 \"'\\xSETGET";
            bytes.push(pick[(seed % pick.len() as u64) as usize]);
        }
        let mut c = Client::connect(addr);
        c.send(&bytes);
        // Whatever it answered, the connection ends (an error, the read timeout or our close).
        c.stream.shutdown(std::net::Shutdown::Write).expect("shutdown");
        assert!(c.closed(), "round {round}");
    }
    let mut check = Client::connect(addr);
    assert_eq!(check.call("PING"), "+PONG\r\n");
}
