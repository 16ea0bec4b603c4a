//! The RESP commands on one key (GET, SET, INCR, EXPIRE, ...): each parsed from its arguments
//! ([`KeyCmd::parse`]) and then decided ([`KeyCmd::decide`]) from the key's current value alone:
//! the reply, and what to write (`resp_table::Effect`). Deciding is pure, so the same code runs
//! on a value borrowed from the record cache (then written in the same synchronous step) and on
//! one read from disk (then written only if the row did not change meanwhile); `resp_exec.rs`
//! runs it either way. Replies and errors are Redis's, byte for byte.

use std::borrow::Cow;

use ringstore_net::resp::parse::parse_i64;
use ringstore_net::resp::reply;
use ringstore_storage::table::limits::ROW_BYTES_MAX;

use crate::resp_table::{Current, Effect};

/// The largest value a command may build (APPEND, SETRANGE): a row's limit less room for its
/// key and headers; beyond it Redis's `proto-max-bulk-len` message.
pub const VALUE_BYTES_MAX: usize = ROW_BYTES_MAX - 4096;

pub const ERR_SYNTAX: &str = "ERR syntax error";
pub const ERR_NOT_INTEGER: &str = "ERR value is not an integer or out of range";
const ERR_NOT_FLOAT: &str = "ERR value is not a valid float";
const ERR_OVERFLOW: &str = "ERR increment or decrement would overflow";
const ERR_NAN: &str = "ERR increment would produce NaN or Infinity";
const ERR_TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
const ERR_OFFSET: &str = "ERR offset is out of range";

/// The internal command MSETNX checks each key with: EXISTS, not counted as a read.
pub const MSETNX_CHECK: &str = "MSETNXCHECK";

/// When a write leaves the key's expiry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expiry {
    /// No expiry (a plain SET clears an earlier one).
    Clear,
    /// Keep what the key had (KEEPTTL, and INCR, APPEND, SETRANGE).
    Keep,
    /// At this time, ms since the epoch (EX, PX, EXAT, PXAT made absolute).
    At(u64),
}

/// How SET and GETEX were told to expire, before `now` makes it absolute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Given {
    Seconds(i64),
    Millis(i64),
    AtSeconds(i64),
    AtMillis(i64),
}

/// Which EXPIRE conditions were given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpireIf {
    #[default]
    Always,
    Nx,
    Xx,
    Gt,
    Lt,
}

/// A command on one key, its arguments borrowed from the receive buffer.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyCmd<'a> {
    Get,
    GetDel,
    /// GETEX: None leaves the expiry; Some(Clear) is PERSIST.
    GetEx(Option<Expiry>),
    Set {
        value: &'a [u8],
        expiry: Expiry,
        nx: bool,
        xx: bool,
        get: bool,
    },
    SetNx(&'a [u8]),
    GetSet(&'a [u8]),
    Del,
    /// EXISTS; `counted: false` is MSETNX's check, which Redis does not count as a read.
    Exists {
        counted: bool,
    },
    IncrBy(i64),
    IncrByFloat(f64),
    Append(&'a [u8]),
    Strlen,
    GetRange(i64, i64),
    SetRange(usize, &'a [u8]),
    Expire {
        at_ms: i64,
        cond: ExpireIf,
    },
    Ttl {
        millis: bool,
    },
    Persist,
    Type,
}

impl<'a> KeyCmd<'a> {
    /// Parses the command `name` (upper case) with `args` after the key; Err is the error reply.
    /// The arity is checked before this, by the command table.
    pub fn parse(name: &str, args: &[&'a [u8]], now: u64) -> Result<KeyCmd<'a>, String> {
        Ok(match name {
            "GET" => KeyCmd::Get,
            "GETDEL" => KeyCmd::GetDel,
            "GETEX" => KeyCmd::GetEx(getex_options(args, now)?),
            "SET" => set_options(args, now)?,
            "SETNX" => KeyCmd::SetNx(args[0]),
            "SETEX" | "PSETEX" => {
                let n = int(args[0])?;
                let given = if name == "SETEX" { Given::Seconds(n) } else { Given::Millis(n) };
                let expiry = absolute(given, now, name)?;
                KeyCmd::Set { value: args[1], expiry, nx: false, xx: false, get: false }
            }
            "GETSET" => KeyCmd::GetSet(args[0]),
            "DEL" | "UNLINK" => KeyCmd::Del,
            "EXISTS" => KeyCmd::Exists { counted: true },
            // MSETNX's check (`resp_commands.rs`): an internal name no client can send, since
            // the command table knows no such command.
            MSETNX_CHECK => KeyCmd::Exists { counted: false },
            "INCR" => KeyCmd::IncrBy(1),
            "DECR" => KeyCmd::IncrBy(-1),
            "INCRBY" => KeyCmd::IncrBy(int(args[0])?),
            "DECRBY" => {
                KeyCmd::IncrBy(int(args[0])?.checked_neg().ok_or("ERR decrement would overflow")?)
            }
            "INCRBYFLOAT" => KeyCmd::IncrByFloat(float(args[0])?),
            "APPEND" => KeyCmd::Append(args[0]),
            "STRLEN" => KeyCmd::Strlen,
            "GETRANGE" | "SUBSTR" => KeyCmd::GetRange(int(args[0])?, int(args[1])?),
            "SETRANGE" => {
                let offset = int(args[0])?;
                if offset < 0 {
                    return Err(ERR_OFFSET.into());
                }
                KeyCmd::SetRange(offset as usize, args[1])
            }
            "EXPIRE" | "PEXPIRE" | "EXPIREAT" | "PEXPIREAT" => expire(name, args, now)?,
            "TTL" => KeyCmd::Ttl { millis: false },
            "PTTL" => KeyCmd::Ttl { millis: true },
            "PERSIST" => KeyCmd::Persist,
            "TYPE" => KeyCmd::Type,
            _ => return Err(format!("ERR unknown command '{name}'")),
        })
    }

    /// Whether the command reads the current value (false: SET without NX, XX, GET or KEEPTTL,
    /// which writes blindly).
    pub fn reads(&self) -> bool {
        !matches!(
            self,
            KeyCmd::Set {
                expiry: Expiry::Clear | Expiry::At(_),
                nx: false,
                xx: false,
                get: false,
                ..
            }
        )
    }

    /// Whether Redis counts the command in `keyspace_hits` or `keyspace_misses` (INFO stats):
    /// the commands that read the key's value or metadata for their reply. Writes that look
    /// the key up (INCR, APPEND, SET NX, EXPIRE, DEL, ...) are not counted, as in Redis, where
    /// a lookup for writing never is.
    pub fn counts_lookup(&self) -> bool {
        match self {
            KeyCmd::Get
            | KeyCmd::GetDel
            | KeyCmd::GetEx(_)
            | KeyCmd::GetSet(_)
            | KeyCmd::Strlen
            | KeyCmd::GetRange(..)
            | KeyCmd::Ttl { .. }
            | KeyCmd::Type => true,
            KeyCmd::Set { get, .. } => *get,
            KeyCmd::Exists { counted } => *counted,
            _ => false,
        }
    }

    /// The reply to the command on a key whose current value is `cur`, appended to `out`, and
    /// what to write.
    pub fn decide(&self, cur: Option<Current<'_>>, now: u64, out: &mut Vec<u8>) -> Effect<'a> {
        match self.decide_or_error(cur, now, out) {
            Ok(effect) => effect,
            Err(message) => {
                reply::error(out, message);
                Effect::None
            }
        }
    }

    fn decide_or_error(
        &self,
        cur: Option<Current<'_>>,
        now: u64,
        out: &mut Vec<u8>,
    ) -> Result<Effect<'a>, &'static str> {
        let old_expiry = cur.map_or(0, |c| c.expiry_ms);
        Ok(match *self {
            KeyCmd::Get => {
                bulk_or_null(out, cur);
                Effect::None
            }
            KeyCmd::GetDel => {
                bulk_or_null(out, cur);
                if cur.is_some() {
                    Effect::Delete
                } else {
                    Effect::None
                }
            }
            KeyCmd::GetEx(expiry) => {
                bulk_or_null(out, cur);
                match (cur, expiry) {
                    (Some(c), Some(e)) => Effect::Put {
                        value: Cow::Owned(c.value.to_vec()),
                        expiry_ms: resolve(e, old_expiry),
                    },
                    _ => Effect::None,
                }
            }
            KeyCmd::Set { .. } | KeyCmd::SetNx(_) | KeyCmd::GetSet(_) => {
                return Ok(self.decide_set(cur, out));
            }
            KeyCmd::Del | KeyCmd::Exists { .. } => {
                reply::integer(out, i64::from(cur.is_some()));
                if cur.is_some() && *self == KeyCmd::Del {
                    Effect::Delete
                } else {
                    Effect::None
                }
            }
            KeyCmd::IncrBy(_) | KeyCmd::IncrByFloat(_) | KeyCmd::Append(_) => {
                return self.decide_update(cur, out);
            }
            KeyCmd::Strlen => {
                reply::integer(out, cur.map_or(0, |c| c.value.len() as i64));
                Effect::None
            }
            KeyCmd::GetRange(start, end) => {
                reply::bulk(out, range(cur.map_or(&[][..], |c| c.value), start, end));
                Effect::None
            }
            KeyCmd::SetRange(offset, bytes) => return set_range(cur, offset, bytes, out),
            KeyCmd::Expire { at_ms, cond } => return expire_effect(cur, at_ms, cond, now, out),
            KeyCmd::Ttl { millis } => {
                ttl_reply(cur, millis, now, out);
                Effect::None
            }
            KeyCmd::Persist => {
                let had = cur.is_some_and(|c| c.expiry_ms != 0);
                reply::integer(out, i64::from(had));
                match cur {
                    Some(c) if had => {
                        Effect::Put { value: Cow::Owned(c.value.to_vec()), expiry_ms: 0 }
                    }
                    _ => Effect::None,
                }
            }
            KeyCmd::Type => {
                reply::simple(out, if cur.is_some() { "string" } else { "none" });
                Effect::None
            }
        })
    }

    /// SET, SETNX and GETSET.
    fn decide_set(&self, cur: Option<Current<'_>>, out: &mut Vec<u8>) -> Effect<'a> {
        let old_expiry = cur.map_or(0, |c| c.expiry_ms);
        match *self {
            KeyCmd::Set { value, expiry, nx, xx, get } => {
                let blocked = (nx && cur.is_some()) || (xx && cur.is_none());
                if get {
                    bulk_or_null(out, cur);
                } else if blocked {
                    reply::null(out);
                } else {
                    reply::ok(out);
                }
                if blocked {
                    return Effect::None;
                }
                Effect::Put { value: Cow::Borrowed(value), expiry_ms: resolve(expiry, old_expiry) }
            }
            KeyCmd::SetNx(value) => {
                reply::integer(out, i64::from(cur.is_none()));
                if cur.is_some() {
                    return Effect::None;
                }
                Effect::Put { value: Cow::Borrowed(value), expiry_ms: 0 }
            }
            KeyCmd::GetSet(value) => {
                bulk_or_null(out, cur);
                Effect::Put { value: Cow::Borrowed(value), expiry_ms: 0 }
            }
            _ => unreachable!("decide_or_error sends only these here"),
        }
    }

    /// INCRBY, INCRBYFLOAT and APPEND: a new value from the old one, its expiry kept.
    fn decide_update(
        &self,
        cur: Option<Current<'_>>,
        out: &mut Vec<u8>,
    ) -> Result<Effect<'a>, &'static str> {
        let old_expiry = cur.map_or(0, |c| c.expiry_ms);
        let keep = |value: Vec<u8>| Effect::Put { value: Cow::Owned(value), expiry_ms: old_expiry };
        Ok(match *self {
            KeyCmd::IncrBy(by) => {
                let was = match cur {
                    None => 0,
                    Some(c) => parse_i64(c.value).ok_or(ERR_NOT_INTEGER)?,
                };
                let now_value = was.checked_add(by).ok_or(ERR_OVERFLOW)?;
                reply::integer(out, now_value);
                keep(now_value.to_string().into_bytes())
            }
            KeyCmd::IncrByFloat(by) => {
                let was = match cur {
                    None => 0.0,
                    Some(c) => parse_float(c.value).ok_or(ERR_NOT_FLOAT)?,
                };
                let sum = was + by;
                if !sum.is_finite() {
                    return Err(ERR_NAN);
                }
                let text = format_float(sum);
                reply::bulk(out, text.as_bytes());
                keep(text.into_bytes())
            }
            KeyCmd::Append(more) => {
                let old = cur.map_or(&[][..], |c| c.value);
                if old.len() + more.len() > VALUE_BYTES_MAX {
                    return Err(ERR_TOO_BIG);
                }
                let mut value = Vec::with_capacity(old.len() + more.len());
                value.extend_from_slice(old);
                value.extend_from_slice(more);
                reply::integer(out, value.len() as i64);
                keep(value)
            }
            _ => unreachable!("decide_or_error sends only these here"),
        })
    }
}

/// TTL's or PTTL's reply: -2 missing, -1 no expiry, else what is left (TTL rounds to seconds).
fn ttl_reply(cur: Option<Current<'_>>, millis: bool, now: u64, out: &mut Vec<u8>) {
    let ttl = match cur {
        None => -2,
        Some(Current { expiry_ms: 0, .. }) => -1,
        Some(c) if millis => (c.expiry_ms - now) as i64,
        Some(c) => ((c.expiry_ms - now + 500) / 1000) as i64,
    };
    reply::integer(out, ttl);
}

fn bulk_or_null(out: &mut Vec<u8>, cur: Option<Current<'_>>) {
    match cur {
        Some(c) => reply::bulk(out, c.value),
        None => reply::null(out),
    }
}

fn resolve(expiry: Expiry, old: u64) -> u64 {
    match expiry {
        Expiry::Clear => 0,
        Expiry::Keep => old,
        Expiry::At(ms) => ms,
    }
}

fn set_range(
    cur: Option<Current<'_>>,
    offset: usize,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<Effect<'static>, &'static str> {
    let old = cur.map_or(&[][..], |c| c.value);
    if bytes.is_empty() {
        reply::integer(out, old.len() as i64);
        return Ok(Effect::None);
    }
    let end = offset.checked_add(bytes.len()).ok_or(ERR_TOO_BIG)?;
    if end > VALUE_BYTES_MAX {
        return Err(ERR_TOO_BIG);
    }
    let mut value = old.to_vec();
    if value.len() < end {
        value.resize(end, 0);
    }
    value[offset..end].copy_from_slice(bytes);
    reply::integer(out, value.len() as i64);
    Ok(Effect::Put { value: Cow::Owned(value), expiry_ms: cur.map_or(0, |c| c.expiry_ms) })
}

fn expire_effect(
    cur: Option<Current<'_>>,
    at_ms: i64,
    cond: ExpireIf,
    now: u64,
    out: &mut Vec<u8>,
) -> Result<Effect<'static>, &'static str> {
    let Some(c) = cur else {
        reply::integer(out, 0);
        return Ok(Effect::None);
    };
    // No expiry counts as an infinite one for GT and LT, as in Redis.
    let has = c.expiry_ms != 0;
    let at = at_ms.max(0) as u64;
    let applies = match cond {
        ExpireIf::Always => true,
        ExpireIf::Nx => !has,
        ExpireIf::Xx => has,
        ExpireIf::Gt => has && at > c.expiry_ms,
        ExpireIf::Lt => !has || at < c.expiry_ms,
    };
    reply::integer(out, i64::from(applies));
    if !applies {
        return Ok(Effect::None);
    }
    if at <= now {
        return Ok(Effect::Delete);
    }
    Ok(Effect::Put { value: Cow::Owned(c.value.to_vec()), expiry_ms: at })
}

/// GETRANGE's substring, with Redis's index rules (negative from the end, clamped).
pub fn range(value: &[u8], start: i64, end: i64) -> &[u8] {
    let len = value.len() as i64;
    if len == 0 || (start < 0 && end < 0 && start > end) {
        return &[];
    }
    let fix = |i: i64| if i < 0 { (len + i).max(0) } else { i };
    let (start, end) = (fix(start), fix(end).min(len - 1));
    if start > end {
        return &[];
    }
    &value[start as usize..=end as usize]
}

fn int(arg: &[u8]) -> Result<i64, String> {
    parse_i64(arg).ok_or_else(|| ERR_NOT_INTEGER.to_owned())
}

fn float(arg: &[u8]) -> Result<f64, String> {
    parse_float(arg).ok_or_else(|| ERR_NOT_FLOAT.to_owned())
}

/// A float as Redis's `string2ld` takes it: no spaces, finite, not NaN.
fn parse_float(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    if text.is_empty()
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace)
    {
        return None;
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("nan") || lower.contains("inf") {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// INCRBYFLOAT's reply: the shortest text that reads back as the same double (Redis prints a
/// long double with 17 digits and trims trailing zeros, which gives the same text for the
/// values a double holds exactly).
pub fn format_float(f: f64) -> String {
    if f == f.trunc() && f.abs() < 1e17 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}

/// An expiry given as `given`, made absolute; Redis's error for zero, negative or too large.
fn absolute(given: Given, now: u64, command: &str) -> Result<Expiry, String> {
    let invalid = || format!("ERR invalid expire time in '{}' command", command.to_lowercase());
    let ms = match given {
        Given::Seconds(s) if s > 0 => s.checked_mul(1000).and_then(|ms| ms.checked_add(now as i64)),
        Given::Millis(ms) if ms > 0 => ms.checked_add(now as i64),
        Given::AtSeconds(s) if s > 0 => s.checked_mul(1000),
        Given::AtMillis(ms) if ms > 0 => Some(ms),
        _ => None,
    };
    ms.map(|ms| Expiry::At(ms as u64)).ok_or_else(invalid)
}

fn set_options<'a>(args: &[&'a [u8]], now: u64) -> Result<KeyCmd<'a>, String> {
    let (mut nx, mut xx, mut get, mut keep) = (false, false, false, false);
    let mut given: Option<Given> = None;
    let mut i = 1;
    while i < args.len() {
        let word = args[i].to_ascii_uppercase();
        let next = args.get(i + 1);
        match (word.as_slice(), next) {
            (b"NX", _) if !xx => nx = true,
            (b"XX", _) if !nx => xx = true,
            (b"GET", _) => get = true,
            (b"KEEPTTL", _) if given.is_none() => keep = true,
            (b"EX" | b"PX" | b"EXAT" | b"PXAT", Some(n)) if given.is_none() && !keep => {
                let n = int(n)?;
                given = Some(match word.as_slice() {
                    b"EX" => Given::Seconds(n),
                    b"PX" => Given::Millis(n),
                    b"EXAT" => Given::AtSeconds(n),
                    _ => Given::AtMillis(n),
                });
                i += 1;
            }
            _ => return Err(ERR_SYNTAX.into()),
        }
        i += 1;
    }
    let expiry = match (given, keep) {
        (Some(g), _) => absolute(g, now, "set")?,
        (None, true) => Expiry::Keep,
        (None, false) => Expiry::Clear,
    };
    Ok(KeyCmd::Set { value: args[0], expiry, nx, xx, get })
}

fn getex_options(args: &[&[u8]], now: u64) -> Result<Option<Expiry>, String> {
    match args {
        [] => Ok(None),
        [word] if word.eq_ignore_ascii_case(b"PERSIST") => Ok(Some(Expiry::Clear)),
        [word, n] => {
            let n = int(n)?;
            let given = match word.to_ascii_uppercase().as_slice() {
                b"EX" => Given::Seconds(n),
                b"PX" => Given::Millis(n),
                b"EXAT" => Given::AtSeconds(n),
                b"PXAT" => Given::AtMillis(n),
                _ => return Err(ERR_SYNTAX.into()),
            };
            absolute(given, now, "getex").map(Some)
        }
        _ => Err(ERR_SYNTAX.into()),
    }
}

fn expire<'a>(name: &str, args: &[&'a [u8]], now: u64) -> Result<KeyCmd<'a>, String> {
    let n = int(args[0])?;
    let invalid = || format!("ERR invalid expire time in '{}' command", name.to_lowercase());
    let at_ms = match name {
        "EXPIRE" => n.checked_mul(1000).and_then(|ms| ms.checked_add(now as i64)),
        "PEXPIRE" => n.checked_add(now as i64),
        "EXPIREAT" => n.checked_mul(1000),
        _ => Some(n),
    }
    .ok_or_else(invalid)?;
    let mut cond = ExpireIf::Always;
    for word in &args[1..] {
        let next = match word.to_ascii_uppercase().as_slice() {
            b"NX" => ExpireIf::Nx,
            b"XX" => ExpireIf::Xx,
            b"GT" => ExpireIf::Gt,
            b"LT" => ExpireIf::Lt,
            _ => return Err(format!("ERR Unsupported option {}", String::from_utf8_lossy(word))),
        };
        if cond != ExpireIf::Always && cond != next {
            return Err(
                if matches!(
                    (cond, next),
                    (ExpireIf::Gt, ExpireIf::Lt) | (ExpireIf::Lt, ExpireIf::Gt)
                ) {
                    "ERR GT and LT options at the same time are not compatible".into()
                } else {
                    "ERR NX and XX, GT or LT options at the same time are not compatible".into()
                },
            );
        }
        cond = next;
    }
    Ok(KeyCmd::Expire { at_ms, cond })
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000_000;

    fn run(name: &str, args: &[&[u8]], cur: Option<Current<'_>>) -> (String, Effect<'static>) {
        let mut out = Vec::new();
        let effect = match KeyCmd::parse(name, args, NOW) {
            Ok(cmd) => match cmd.decide(cur, NOW, &mut out) {
                Effect::Put { value, expiry_ms } => {
                    Effect::Put { value: Cow::Owned(value.into_owned()), expiry_ms }
                }
                Effect::Delete => Effect::Delete,
                Effect::None => Effect::None,
            },
            Err(e) => {
                reply::error(&mut out, &e);
                Effect::None
            }
        };
        (String::from_utf8(out).expect("utf-8"), effect)
    }

    fn put(value: &str, expiry_ms: u64) -> Effect<'static> {
        Effect::Put { value: Cow::Owned(value.as_bytes().to_vec()), expiry_ms }
    }

    fn cur(value: &'static str, expiry_ms: u64) -> Option<Current<'static>> {
        Some(Current { value: value.as_bytes(), expiry_ms })
    }

    #[test]
    fn set_options_reply_and_write_as_redis() {
        assert_eq!(run("SET", &[b"v"], None), ("+OK\r\n".into(), put("v", 0)));
        assert_eq!(run("SET", &[b"v", b"EX", b"10"], None).1, put("v", NOW + 10_000));
        assert_eq!(run("SET", &[b"v", b"px", b"5"], None).1, put("v", NOW + 5));
        assert_eq!(run("SET", &[b"v", b"PXAT", b"7"], None).1, put("v", 7), "in the past: goes");
        assert_eq!(run("SET", &[b"v", b"KEEPTTL"], cur("o", 99)).1, put("v", 99));
        assert_eq!(run("SET", &[b"v", b"NX"], cur("o", 0)), ("$-1\r\n".into(), Effect::None));
        assert_eq!(run("SET", &[b"v", b"XX"], None), ("$-1\r\n".into(), Effect::None));
        assert_eq!(run("SET", &[b"v", b"NX", b"GET"], cur("o", 0)).0, "$1\r\no\r\n");
        assert_eq!(run("SET", &[b"v", b"GET"], None), ("$-1\r\n".into(), put("v", 0)));
        let syntax = "-ERR syntax error\r\n";
        for bad in [
            &[&b"v"[..], b"NX", b"XX"][..],
            &[b"v", b"EX"],
            &[b"v", b"EX", b"1", b"PX", b"1"],
            &[b"v", b"KEEPTTL", b"EX", b"1"],
            &[b"v", b"FOO"],
        ] {
            assert_eq!(run("SET", bad, None).0, syntax, "{bad:?}");
        }
        assert_eq!(
            run("SET", &[b"v", b"EX", b"0"], None).0,
            "-ERR invalid expire time in 'set' command\r\n"
        );
        assert_eq!(run("SET", &[b"v", b"EX", b"x"], None).0, format!("-{ERR_NOT_INTEGER}\r\n"));
        assert_eq!(
            run("SETEX", &[b"-1", b"v"], None).0,
            "-ERR invalid expire time in 'setex' command\r\n"
        );
    }

    #[test]
    fn counters_keep_the_ttl_and_refuse_what_redis_refuses() {
        assert_eq!(run("INCR", &[], None), (":1\r\n".into(), put("1", 0)));
        assert_eq!(run("INCRBY", &[b"-5"], cur("10", 42)), (":5\r\n".into(), put("5", 42)));
        assert_eq!(run("DECR", &[], cur("x", 0)).0, format!("-{ERR_NOT_INTEGER}\r\n"));
        assert_eq!(
            run("INCR", &[], cur("9223372036854775807", 0)).0,
            format!("-{ERR_OVERFLOW}\r\n")
        );
        assert_eq!(run("INCRBYFLOAT", &[b"0.1"], cur("10.50", 0)).0, "$4\r\n10.6\r\n");
        assert_eq!(run("INCRBYFLOAT", &[b"2"], cur("3", 0)).0, "$1\r\n5\r\n");
        assert_eq!(run("INCRBYFLOAT", &[b"nan"], None).0, format!("-{ERR_NOT_FLOAT}\r\n"));
        assert_eq!(run("APPEND", &[b"lo"], cur("hel", 5)), (":5\r\n".into(), put("hello", 5)));
    }

    #[test]
    fn ranges_follow_redis_index_rules() {
        let v = b"This is a string";
        assert_eq!(range(v, 0, 3), b"This");
        assert_eq!(range(v, -3, -1), b"ing");
        assert_eq!(range(v, 0, -1), v);
        assert_eq!(range(v, 10, 100), b"string");
        assert_eq!(range(v, 5, 3), b"");
        assert_eq!(range(b"", 0, -1), b"");
        assert_eq!(
            run("SETRANGE", &[b"6", b"Redis"], cur("Hello World", 0)),
            (":11\r\n".into(), put("Hello Redis", 0))
        );
        assert_eq!(run("SETRANGE", &[b"2", b"x"], None), (":3\r\n".into(), put("\0\0x", 0)));
        assert_eq!(run("SETRANGE", &[b"-1", b"x"], None).0, format!("-{ERR_OFFSET}\r\n"));
        assert_eq!(run("SETRANGE", &[b"1048576", b"x"], None).0, format!("-{ERR_TOO_BIG}\r\n"));
    }

    #[test]
    fn expiry_commands_answer_as_redis() {
        assert_eq!(run("TTL", &[], None).0, ":-2\r\n");
        assert_eq!(run("TTL", &[], cur("v", 0)).0, ":-1\r\n");
        assert_eq!(run("TTL", &[], cur("v", NOW + 1_499)).0, ":1\r\n");
        assert_eq!(run("PTTL", &[], cur("v", NOW + 1_499)).0, ":1499\r\n");
        assert_eq!(run("EXPIRE", &[b"10"], cur("v", 0)), (":1\r\n".into(), put("v", NOW + 10_000)));
        assert_eq!(run("EXPIRE", &[b"-1"], cur("v", 0)), (":1\r\n".into(), Effect::Delete));
        assert_eq!(run("EXPIRE", &[b"10"], None), (":0\r\n".into(), Effect::None));
        assert_eq!(
            run("EXPIRE", &[b"10", b"NX"], cur("v", NOW + 5)),
            (":0\r\n".into(), Effect::None)
        );
        assert_eq!(run("PEXPIRE", &[b"10", b"GT"], cur("v", 0)).0, ":0\r\n");
        assert_eq!(
            run("EXPIRE", &[b"1", b"GT", b"LT"], None).0,
            "-ERR GT and LT options at the same time are not compatible\r\n"
        );
        assert_eq!(run("PERSIST", &[], cur("v", NOW + 5)), (":1\r\n".into(), put("v", 0)));
        assert_eq!(run("PERSIST", &[], cur("v", 0)), (":0\r\n".into(), Effect::None));
        assert_eq!(
            run("GETEX", &[b"PERSIST"], cur("v", NOW + 5)),
            ("$1\r\nv\r\n".into(), put("v", 0))
        );
    }

    #[test]
    fn a_plain_set_writes_blindly_and_everything_else_reads() {
        let now = NOW;
        let blind = KeyCmd::parse("SET", &[b"v", b"EX", b"1"], now).expect("parses");
        assert!(!blind.reads());
        for (name, args) in [
            ("SET", &[&b"v"[..], b"GET"][..]),
            ("SET", &[b"v", b"KEEPTTL"]),
            ("GET", &[]),
            ("INCR", &[]),
        ] {
            assert!(KeyCmd::parse(name, args, now).expect("parses").reads(), "{name} {args:?}");
        }
    }
}
