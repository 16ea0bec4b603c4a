//! The load tool's side of RESP (`--protocol resp`): GET and SET encoded as arrays of bulk
//! strings, and the replies those two commands get parsed in place. With it the same workloads
//! drive any Redis-protocol server, Redis itself or ringstore's RESP port (docs/RESP.md), so a
//! comparison of the two uses one client.
//!
//! RESP has no request ids: a connection's replies come in the order of its requests, so the
//! session numbers them as it parses them (`session.rs`). Only the reply types a GET or a SET can
//! get are accepted (simple string, error, integer, bulk string, RESP2 and RESP3 null); anything
//! else, or a length past [`RESP_REPLY_BYTES_MAX`], is a broken reply and ends the run.

/// Longest reply accepted: a bulk string's length or a simple line (a GET's value is at most
/// the tool's own `VALUE_BYTES_MAX`; Redis's `proto-max-bulk-len` default is 512 MiB).
pub const RESP_REPLY_BYTES_MAX: usize = 64 * 1024 * 1024;

/// What one reply says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RespReply<'a> {
    /// `+OK`, an integer or a bulk string: the command succeeded.
    Done,
    /// `$-1` or `_`: a GET of a key that does not exist.
    Nil,
    /// `-ERR ...`: the text after the `-`.
    Error(&'a [u8]),
}

/// Appends `GET key`.
pub fn encode_get(out: &mut Vec<u8>, key: &[u8]) {
    out.extend_from_slice(b"*2\r\n$3\r\nGET\r\n");
    bulk(out, key);
}

/// Appends `SET key value`.
pub fn encode_set(out: &mut Vec<u8>, key: &[u8], value: &[u8]) {
    out.extend_from_slice(b"*3\r\n$3\r\nSET\r\n");
    bulk(out, key);
    bulk(out, value);
}

fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(bytes.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// The reply at the start of `buf` and its length in bytes; None while it is incomplete.
pub fn parse_reply(buf: &[u8]) -> Option<Result<(RespReply<'_>, usize), String>> {
    let (&kind, rest) = buf.split_first()?;
    let line = match line(rest)? {
        Ok(line) => line,
        Err(e) => return Some(Err(e)),
    };
    let after_line = 1 + line.len() + 2;
    let reply = match kind {
        b'+' | b':' => RespReply::Done,
        b'-' => RespReply::Error(line),
        b'_' => RespReply::Nil,
        b'$' if line == b"-1" => RespReply::Nil,
        b'$' => {
            let len = match bulk_len(line) {
                Ok(len) => len,
                Err(e) => return Some(Err(e)),
            };
            let total = after_line + len + 2;
            if buf.len() < total {
                return None;
            }
            if &buf[total - 2..total] != b"\r\n" {
                return Some(Err("a bulk reply does not end with CRLF".into()));
            }
            return Some(Ok((RespReply::Done, total)));
        }
        other => {
            let shown = other.escape_ascii();
            return Some(Err(format!("a reply of type '{shown}', which GET and SET never get")));
        }
    };
    Some(Ok((reply, after_line)))
}

/// The bytes of `rest` before its first CRLF; None while it has not arrived.
fn line(rest: &[u8]) -> Option<Result<&[u8], String>> {
    let window = &rest[..rest.len().min(RESP_REPLY_BYTES_MAX + 2)];
    match window.windows(2).position(|w| w == b"\r\n") {
        Some(end) => Some(Ok(&rest[..end])),
        None if rest.len() > RESP_REPLY_BYTES_MAX => Some(Err(format!(
            "a reply line longer than {RESP_REPLY_BYTES_MAX} bytes (RESP_REPLY_BYTES_MAX)"
        ))),
        None => None,
    }
}

fn bulk_len(line: &[u8]) -> Result<usize, String> {
    std::str::from_utf8(line)
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&len| len <= RESP_REPLY_BYTES_MAX)
        .ok_or_else(|| {
            format!(
                "bulk reply length {:?} is not a length of at most {RESP_REPLY_BYTES_MAX} bytes",
                line.escape_ascii().to_string()
            )
        })
}

#[cfg(test)]
mod tests {
    //! Proves the encoder writes what Redis's parser expects and the parser reads each reply
    //! type a GET or SET gets, waits for partial ones, and refuses the rest.

    use super::*;

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode_get(&mut out, b"k1");
        encode_set(&mut out, b"k1", b"");
        assert_eq!(
            out,
            b"*2\r\n$3\r\nGET\r\n$2\r\nk1\r\n*3\r\n$3\r\nSET\r\n$2\r\nk1\r\n$0\r\n\r\n"
        );
    }

    #[test]
    fn each_reply_type_parses_with_its_length() {
        fn ok(b: &[u8]) -> (RespReply<'_>, usize) {
            parse_reply(b).expect("complete").expect("valid")
        }
        assert_eq!(ok(b"+OK\r\nrest"), (RespReply::Done, 5));
        assert_eq!(ok(b":12\r\n"), (RespReply::Done, 5));
        assert_eq!(ok(b"$-1\r\n"), (RespReply::Nil, 5));
        assert_eq!(ok(b"_\r\n"), (RespReply::Nil, 3));
        assert_eq!(ok(b"$3\r\na\r\n\r\n+OK"), (RespReply::Done, 9));
        assert_eq!(ok(b"-ERR no\r\n"), (RespReply::Error(b"ERR no"), 9));
    }

    #[test]
    fn partial_replies_wait_and_broken_ones_are_refused() {
        for partial in [&b""[..], b"+O", b"+OK\r", b"$3\r\nab", b"$3\r\nabc\r"] {
            assert!(parse_reply(partial).is_none(), "{partial:?}");
        }
        for broken in [&b"*1\r\n"[..], b"$x\r\n", b"$3\r\nabcde", b"$99999999999\r\n"] {
            let got = parse_reply(broken).expect("decided");
            assert!(got.is_err(), "{broken:?}: {got:?}");
        }
    }
}
