//! RESP2 replies, appended to an output buffer, and their RESP3 form for a connection that
//! asked for it with `HELLO 3` ([`to_resp3`]: the replies the port gives differ only in their
//! nulls; HELLO and CONFIG GET write their RESP3 maps themselves).

/// `+text\r\n`. `text` must hold no CR or LF.
pub fn simple(out: &mut Vec<u8>, text: &str) {
    out.push(b'+');
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `+OK\r\n`.
pub fn ok(out: &mut Vec<u8>) {
    out.extend_from_slice(b"+OK\r\n");
}

/// `-message\r\n`, message as Redis words it, with its prefix (`ERR ...`, `WRONGTYPE ...`).
/// CR and LF in the message become spaces, as Redis makes them, so a reply is always one line.
pub fn error(out: &mut Vec<u8>, message: &str) {
    out.push(b'-');
    out.extend(message.bytes().map(|b| if b == b'\r' || b == b'\n' { b' ' } else { b }));
    out.extend_from_slice(b"\r\n");
}

/// `:n\r\n`.
pub fn integer(out: &mut Vec<u8>, n: i64) {
    out.push(b':');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `$len\r\nbytes\r\n`.
pub fn bulk(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'$');
    out.extend_from_slice(itoa::Buffer::new().format(bytes.len()).as_bytes());
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(bytes);
    out.extend_from_slice(b"\r\n");
}

/// The null bulk string, `$-1\r\n` (a missing key).
pub fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(b"$-1\r\n");
}

/// The null array, `*-1\r\n`.
pub fn null_array(out: &mut Vec<u8>) {
    out.extend_from_slice(b"*-1\r\n");
}

/// `*n\r\n`, the header of an array of `n` replies that follow.
pub fn array(out: &mut Vec<u8>, n: usize) {
    out.push(b'*');
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The header of a map of `pairs` entries: a RESP3 map (`%pairs`), or in RESP2 a flat array of
/// keys and values, as Redis answers a RESP2 client.
pub fn map(out: &mut Vec<u8>, pairs: usize, resp3: bool) {
    if resp3 {
        out.push(b'%');
        out.extend_from_slice(itoa::Buffer::new().format(pairs).as_bytes());
        out.extend_from_slice(b"\r\n");
    } else {
        array(out, pairs * 2);
    }
}

/// A command as a client sends it: an array of bulk strings.
pub fn command<'a>(out: &mut Vec<u8>, args: impl ExactSizeIterator<Item = &'a [u8]>) {
    array(out, args.len());
    for a in args {
        bulk(out, a);
    }
}

/// The RESP3 null, `_\r\n`.
pub const RESP3_NULL: &[u8] = b"_\r\n";

/// Appends `reply` (whole RESP2 replies) to `out` in RESP3: every null bulk string and null
/// array becomes the RESP3 null; everything else is the same bytes. A reply that does not parse
/// is appended unchanged.
pub fn to_resp3(reply: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    let mut pos = 0;
    while pos < reply.len() {
        match convert(&reply[pos..], out) {
            Some(n) => pos += n,
            None => {
                out.truncate(start);
                out.extend_from_slice(reply);
                return;
            }
        }
    }
}

/// Converts the one reply at the start of `r` into `out`; the bytes it took.
fn convert(r: &[u8], out: &mut Vec<u8>) -> Option<usize> {
    let line = memchr::memmem::find(r, b"\r\n")?;
    let after = line + 2;
    match r.first()? {
        b'+' | b'-' | b':' => {
            out.extend_from_slice(&r[..after]);
            Some(after)
        }
        b'$' | b'*' if &r[1..line] == b"-1" => {
            out.extend_from_slice(RESP3_NULL);
            Some(after)
        }
        b'$' => {
            let n: usize = std::str::from_utf8(&r[1..line]).ok()?.parse().ok()?;
            let end = after.checked_add(n)?.checked_add(2)?;
            out.extend_from_slice(r.get(..end)?);
            Some(end)
        }
        b'*' => {
            let n: usize = std::str::from_utf8(&r[1..line]).ok()?.parse().ok()?;
            out.extend_from_slice(&r[..after]);
            let mut pos = after;
            for _ in 0..n {
                pos += convert(r.get(pos..)?, out)?;
            }
            Some(pos)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reply_type_is_byte_exact() {
        let mut out = Vec::new();
        simple(&mut out, "PONG");
        ok(&mut out);
        error(&mut out, "ERR bad\r\nthing");
        integer(&mut out, -42);
        bulk(&mut out, b"a\r\nb");
        bulk(&mut out, b"");
        null(&mut out);
        null_array(&mut out);
        array(&mut out, 2);
        assert_eq!(
            out,
            b"+PONG\r\n+OK\r\n-ERR bad  thing\r\n:-42\r\n$4\r\na\r\nb\r\n$0\r\n\r\n$-1\r\n\
              *-1\r\n*2\r\n"
        );
    }

    #[test]
    fn resp3_differs_in_its_nulls_only() {
        let mut two = Vec::new();
        null(&mut two);
        array(&mut two, 3);
        bulk(&mut two, b"$-1\r\n");
        null(&mut two);
        null_array(&mut two);
        integer(&mut two, 5);
        let mut three = Vec::new();
        to_resp3(&two, &mut three);
        assert_eq!(three, b"_\r\n*3\r\n$5\r\n$-1\r\n\r\n_\r\n_\r\n:5\r\n");
        let mut broken = Vec::new();
        to_resp3(b"*2\r\n$-1\r\n", &mut broken);
        assert_eq!(broken, b"*2\r\n$-1\r\n", "a reply cut short is left alone");
    }

    #[test]
    fn a_command_encodes_as_an_array_of_bulks_and_parses_back() {
        let mut out = Vec::new();
        let args: [&[u8]; 3] = [b"SET", b"k", b"v v"];
        command(&mut out, args.iter().copied());
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nv v\r\n");
        let mut parsed = crate::resp::Args::default();
        let limits = crate::resp::ParseLimits::default();
        let done = crate::resp::parse_command(&out, &limits, &mut parsed);
        assert_eq!(done, crate::resp::Parsed::Command { consumed: out.len() });
        assert!(parsed.iter(&out).eq(args.iter().copied()));
    }
}
