//! Reading one RESP command from the start of a receive buffer, in place.
//!
//! Two forms, as Redis reads them (`networking.c`): a multibulk command (`*N\r\n` then N bulk
//! strings `$LEN\r\nBYTES\r\n`), whose arguments are borrowed from the buffer as ranges and never
//! copied; and an inline command (a line of words, telnet style), whose arguments are split like
//! Redis's `sdssplitargs` (double quotes with `\x41`-style escapes, single quotes) and copied into
//! a scratch buffer, since unquoting changes their bytes.
//!
//! Nothing is trusted: every length is checked against [`ParseLimits`] before anything is read or
//! reserved, so a client can make the parser neither allocate nor wait for more than the limits.
//! A malformed command is a [`ProtocolError`] whose message is Redis's own wording; the node
//! answers it `-ERR Protocol error: ...` and closes the connection, as Redis does.

use std::ops::Range;

/// Largest inline command line, and largest `*N` / `$N` header line (Redis's
/// `PROTO_INLINE_MAX_SIZE`).
pub const INLINE_BYTES_MAX: usize = 64 * 1024;

/// Most arguments of one multibulk command (Redis 6's limit before `proto-max-multibulk-len`).
pub const MULTIBULK_ARGS_MAX: usize = 1024 * 1024;

/// Largest bulk string unless the node says otherwise (Redis's `proto-max-bulk-len` is 512 MiB;
/// the node passes its frame limit, which holds its largest value).
pub const BULK_BYTES_MAX_DEFAULT: usize = 4 * 1024 * 1024;

/// The bounds a command is read within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Largest bulk string (`proto-max-bulk-len`).
    pub bulk_bytes_max: usize,
    /// Most arguments of a multibulk command.
    pub args_max: usize,
    /// Largest whole command, headers included: the most a client can make the node buffer.
    pub command_bytes_max: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            bulk_bytes_max: BULK_BYTES_MAX_DEFAULT,
            args_max: MULTIBULK_ARGS_MAX,
            command_bytes_max: 2 * BULK_BYTES_MAX_DEFAULT,
        }
    }
}

/// A malformed command. `Display` is Redis's reply text without the `ERR ` prefix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProtocolError {
    #[error("Protocol error: too big inline request")]
    InlineTooBig,
    #[error("Protocol error: unbalanced quotes in request")]
    UnbalancedQuotes,
    #[error("Protocol error: too big mbulk count string")]
    MultibulkHeaderTooBig,
    #[error("Protocol error: invalid multibulk length")]
    InvalidMultibulkLength,
    #[error("Protocol error: too big bulk count string")]
    BulkHeaderTooBig,
    #[error("Protocol error: expected '$', got '{}'", char::from(*.0))]
    ExpectedBulk(u8),
    #[error("Protocol error: invalid bulk length")]
    InvalidBulkLength,
    /// Not a Redis message (Redis closes such a client for its query buffer limit, 1 GiB, with
    /// no reply): the command's arguments add up to more than the node buffers for one command.
    #[error("Protocol error: command larger than {limit} bytes")]
    CommandTooBig { limit: usize },
}

/// What the start of a buffer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Not a whole command yet: read more (the buffer holds no error so far).
    Incomplete,
    /// A command of `consumed` bytes, its arguments in the [`Args`] passed in. An empty command
    /// (`*0\r\n`, `*-1\r\n`, a blank line) has no arguments and is skipped, as Redis skips it.
    Command { consumed: usize },
    /// Malformed: answer the error and close the connection.
    Error(ProtocolError),
}

/// The arguments of the last command parsed: ranges into the receive buffer (multibulk) or into
/// the scratch buffer (inline). Reused from one command to the next, so parsing allocates only
/// when a command has more arguments, or a longer inline line, than any before it.
#[derive(Debug, Default, Clone)]
pub struct Args {
    ranges: Vec<Range<usize>>,
    /// Unquoted inline arguments.
    scratch: Vec<u8>,
    inline: bool,
}

impl Args {
    /// Number of arguments (the command name included).
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` of the command parsed from `buf` (the same buffer given to [`parse_command`]).
    pub fn get<'a>(&'a self, buf: &'a [u8], i: usize) -> &'a [u8] {
        let r = self.ranges[i].clone();
        if self.inline {
            &self.scratch[r]
        } else {
            &buf[r]
        }
    }

    /// Every argument, in order.
    pub fn iter<'a>(&'a self, buf: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        (0..self.len()).map(move |i| self.get(buf, i))
    }

    fn clear(&mut self, inline: bool) {
        self.ranges.clear();
        self.scratch.clear();
        self.inline = inline;
    }
}

/// Parses the command at the start of `buf` into `args`.
pub fn parse_command(buf: &[u8], limits: &ParseLimits, args: &mut Args) -> Parsed {
    match buf.first() {
        None => Parsed::Incomplete,
        Some(b'*') => multibulk(buf, limits, args),
        Some(_) => inline(buf, args),
    }
}

/// The position of the first `\r\n` in `buf`, if any.
fn find_crlf(buf: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'\r', &buf[from..]) {
        let at = from + at;
        match buf.get(at + 1) {
            Some(b'\n') => return Some(at),
            Some(_) => from = at + 1,
            None => return None,
        }
    }
    None
}

/// A header line (`*N` or `$N`) at the start of `buf`: its number and the bytes it took, None if
/// not whole yet. `too_big` is the error for a line past [`INLINE_BYTES_MAX`]; `invalid` for a
/// number that does not parse.
fn header_line(
    buf: &[u8],
    too_big: ProtocolError,
    invalid: ProtocolError,
) -> Result<Option<(i64, usize)>, ProtocolError> {
    let window = &buf[..buf.len().min(INLINE_BYTES_MAX + 2)];
    let Some(end) = find_crlf(window) else {
        return if buf.len() > INLINE_BYTES_MAX { Err(too_big) } else { Ok(None) };
    };
    let n = parse_i64(&buf[1..end]).ok_or(invalid)?;
    Ok(Some((n, end + 2)))
}

/// A decimal integer as Redis's `string2ll` takes it: optional minus, digits, no leading `+`,
/// no leading zeros except "0" itself, no overflow.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (negative, digits) = match s.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 20 || (digits[0] == b'0' && s.len() > 1) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let digit = i64::from(d - b'0');
        v = v.checked_mul(10)?;
        v = if negative { v.checked_sub(digit)? } else { v.checked_add(digit)? };
    }
    Some(v)
}

fn multibulk(buf: &[u8], limits: &ParseLimits, args: &mut Args) -> Parsed {
    args.clear(false);
    let head = header_line(
        buf,
        ProtocolError::MultibulkHeaderTooBig,
        ProtocolError::InvalidMultibulkLength,
    );
    let (count, mut pos) = match head {
        Err(e) => return Parsed::Error(e),
        Ok(None) => return Parsed::Incomplete,
        Ok(Some(h)) => h,
    };
    if count <= 0 {
        return Parsed::Command { consumed: pos };
    }
    if count as u64 > limits.args_max as u64 {
        return Parsed::Error(ProtocolError::InvalidMultibulkLength);
    }
    for _ in 0..count {
        let rest = &buf[pos..];
        match rest.first() {
            None => return Parsed::Incomplete,
            Some(b'$') => {}
            Some(&other) => return Parsed::Error(ProtocolError::ExpectedBulk(other)),
        }
        let head =
            header_line(rest, ProtocolError::BulkHeaderTooBig, ProtocolError::InvalidBulkLength);
        let (len, took) = match head {
            Err(e) => return Parsed::Error(e),
            Ok(None) => return Parsed::Incomplete,
            Ok(Some(h)) => h,
        };
        if len < 0 || len as u64 > limits.bulk_bytes_max as u64 {
            return Parsed::Error(ProtocolError::InvalidBulkLength);
        }
        let start = pos + took;
        let end = start + len as usize;
        if end + 2 > limits.command_bytes_max {
            return Parsed::Error(ProtocolError::CommandTooBig { limit: limits.command_bytes_max });
        }
        if buf.len() < end + 2 {
            return Parsed::Incomplete;
        }
        // Redis does not check the two bytes after the data; neither does this.
        args.ranges.push(start..end);
        pos = end + 2;
    }
    Parsed::Command { consumed: pos }
}

fn inline(buf: &[u8], args: &mut Args) -> Parsed {
    args.clear(true);
    let window = &buf[..buf.len().min(INLINE_BYTES_MAX + 1)];
    let Some(newline) = memchr::memchr(b'\n', window) else {
        return if buf.len() > INLINE_BYTES_MAX {
            Parsed::Error(ProtocolError::InlineTooBig)
        } else {
            Parsed::Incomplete
        };
    };
    // A line may end in "\n" alone (Redis accepts it from telnet-like clients).
    let line = &buf[..newline];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match split_args(line, args) {
        Ok(()) => Parsed::Command { consumed: newline + 1 },
        Err(e) => Parsed::Error(e),
    }
}

/// Splits an inline line as Redis's `sdssplitargs` does, into `args.scratch`.
fn split_args(line: &[u8], args: &mut Args) -> Result<(), ProtocolError> {
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == line.len() {
            return Ok(());
        }
        let start = args.scratch.len();
        i = match line[i] {
            b'"' => double_quoted(line, i + 1, &mut args.scratch)?,
            b'\'' => single_quoted(line, i + 1, &mut args.scratch)?,
            _ => {
                let end = line[i..]
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .map_or(line.len(), |n| i + n);
                args.scratch.extend_from_slice(&line[i..end]);
                end
            }
        };
        args.ranges.push(start..args.scratch.len());
    }
}

/// A closing quote must be followed by a space or the end of the line.
fn after_quote(line: &[u8], at: usize) -> Result<usize, ProtocolError> {
    match line.get(at) {
        None => Ok(at),
        Some(c) if c.is_ascii_whitespace() => Ok(at),
        Some(_) => Err(ProtocolError::UnbalancedQuotes),
    }
}

fn double_quoted(line: &[u8], mut i: usize, out: &mut Vec<u8>) -> Result<usize, ProtocolError> {
    loop {
        match line.get(i) {
            None => return Err(ProtocolError::UnbalancedQuotes),
            Some(b'"') => return after_quote(line, i + 1),
            Some(b'\\') if line.get(i + 1) == Some(&b'x') => {
                let hex = line.get(i + 2..i + 4).and_then(|h| {
                    let h = std::str::from_utf8(h).ok()?;
                    u8::from_str_radix(h, 16)
                        .ok()
                        .filter(|_| h.bytes().all(|c| c.is_ascii_hexdigit()))
                });
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        i += 4;
                    }
                    None => {
                        out.push(b'\\');
                        i += 1;
                    }
                }
            }
            Some(b'\\') if i + 1 < line.len() => {
                out.push(match line[i + 1] {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'b' => 8,
                    b'a' => 7,
                    other => other,
                });
                i += 2;
            }
            Some(&c) => {
                out.push(c);
                i += 1;
            }
        }
    }
}

fn single_quoted(line: &[u8], mut i: usize, out: &mut Vec<u8>) -> Result<usize, ProtocolError> {
    loop {
        match line.get(i) {
            None => return Err(ProtocolError::UnbalancedQuotes),
            Some(b'\'') => return after_quote(line, i + 1),
            Some(b'\\') if line.get(i + 1) == Some(&b'\'') => {
                out.push(b'\'');
                i += 2;
            }
            Some(&c) => {
                out.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(buf: &[u8]) -> (Parsed, Vec<Vec<u8>>) {
        let mut args = Args::default();
        let parsed = parse_command(buf, &ParseLimits::default(), &mut args);
        let words = match parsed {
            Parsed::Command { .. } => args.iter(buf).map(<[u8]>::to_vec).collect(),
            _ => vec![],
        };
        (parsed, words)
    }

    fn words(list: &[&str]) -> Vec<Vec<u8>> {
        list.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn a_multibulk_command_is_read_only_when_whole_and_borrowed_in_place() {
        let cmd = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nv\r\nx!\r\n";
        for cut in 0..cmd.len() {
            assert_eq!(parse(&cmd[..cut]).0, Parsed::Incomplete, "{cut} bytes");
        }
        let mut two = cmd.to_vec();
        two.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        let (parsed, args) = parse(&two);
        assert_eq!(parsed, Parsed::Command { consumed: cmd.len() });
        assert_eq!(args, vec![b"SET".to_vec(), b"k".to_vec(), b"v\r\nx!".to_vec()]);
        let (parsed, args) = parse(&two[cmd.len()..]);
        assert_eq!((parsed, args), (Parsed::Command { consumed: 14 }, words(&["PING"])));
    }

    #[test]
    fn empty_commands_are_skipped() {
        assert_eq!(parse(b"*0\r\n"), (Parsed::Command { consumed: 4 }, vec![]));
        assert_eq!(parse(b"*-1\r\n"), (Parsed::Command { consumed: 5 }, vec![]));
        assert_eq!(parse(b"\r\n"), (Parsed::Command { consumed: 2 }, vec![]));
        assert_eq!(parse(b"   \n"), (Parsed::Command { consumed: 4 }, vec![]));
    }

    #[test]
    fn inline_commands_split_like_redis() {
        assert_eq!(parse(b"PING\r\n"), (Parsed::Command { consumed: 6 }, words(&["PING"])));
        assert_eq!(parse(b"set  k v\n").1, words(&["set", "k", "v"]));
        assert_eq!(parse(b"SET k \"a b\\x41\\n\"\r\n").1, words(&["SET", "k", "a bA\n"]));
        assert_eq!(parse(b"SET k 'it\\'s'\r\n").1, words(&["SET", "k", "it's"]));
        assert_eq!(parse(b"ECHO \"\\xZZ\"\r\n").1, words(&["ECHO", "\\xZZ"]));
        assert_eq!(parse(b"PING"), (Parsed::Incomplete, vec![]), "no newline yet");
    }

    #[test]
    fn every_malformed_case_gets_redis_wording() {
        let cases: &[(&[u8], &str)] = &[
            (b"SET k \"v\r\n", "Protocol error: unbalanced quotes in request"),
            (b"SET k \"v\"x\r\n", "Protocol error: unbalanced quotes in request"),
            (b"SET k 'v\r\n", "Protocol error: unbalanced quotes in request"),
            (b"*x\r\n", "Protocol error: invalid multibulk length"),
            (b"*01\r\n", "Protocol error: invalid multibulk length"),
            (b"*1048577\r\n", "Protocol error: invalid multibulk length"),
            (b"*1\r\n:1\r\n", "Protocol error: expected '$', got ':'"),
            (b"*1\r\n$-1\r\n", "Protocol error: invalid bulk length"),
            (b"*1\r\n$4194305\r\n", "Protocol error: invalid bulk length"),
            (b"*1\r\n$+1\r\n", "Protocol error: invalid bulk length"),
            (
                b"*2\r\n$3\r\nGET\r\n$99999999999999999999\r\n",
                "Protocol error: invalid bulk length",
            ),
        ];
        for (input, message) in cases {
            match parse(input).0 {
                Parsed::Error(e) => assert_eq!(e.to_string(), *message, "{input:?}"),
                other => panic!("{input:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn header_lines_and_inline_lines_are_bounded() {
        let long = vec![b'a'; INLINE_BYTES_MAX + 1];
        assert_eq!(parse(&long).0, Parsed::Error(ProtocolError::InlineTooBig));
        assert_eq!(parse(&long[..INLINE_BYTES_MAX]).0, Parsed::Incomplete);
        let mut star = b"*".to_vec();
        star.extend(std::iter::repeat_n(b'1', INLINE_BYTES_MAX + 1));
        assert_eq!(parse(&star).0, Parsed::Error(ProtocolError::MultibulkHeaderTooBig));
        let mut bulk = b"*1\r\n$".to_vec();
        bulk.extend(std::iter::repeat_n(b'1', INLINE_BYTES_MAX + 1));
        assert_eq!(parse(&bulk).0, Parsed::Error(ProtocolError::BulkHeaderTooBig));
    }

    #[test]
    fn a_command_past_its_byte_limit_is_refused_before_its_data_arrives() {
        let limits = ParseLimits { bulk_bytes_max: 100, args_max: 10, command_bytes_max: 150 };
        let mut args = Args::default();
        let head = b"*3\r\n$3\r\nSET\r\n$100\r\n";
        let mut two_bulks = head.to_vec();
        two_bulks.extend_from_slice(&[b'x'; 100]);
        two_bulks.extend_from_slice(b"\r\n$100\r\n");
        let refused = parse_command(&two_bulks, &limits, &mut args);
        assert_eq!(refused, Parsed::Error(ProtocolError::CommandTooBig { limit: 150 }));
        assert_eq!(parse_command(head, &limits, &mut args), Parsed::Incomplete);
        let many = b"*11\r\n";
        let refused = parse_command(many, &limits, &mut args);
        assert_eq!(refused, Parsed::Error(ProtocolError::InvalidMultibulkLength));
    }

    #[test]
    fn integers_parse_as_redis_string2ll() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-12"), Some(-12));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [&b""[..], b"-", b"+1", b"01", b"-0", b"9223372036854775808", b"1 ", b"1.5"] {
            assert_eq!(parse_i64(bad), None, "{bad:?}");
        }
    }
}
