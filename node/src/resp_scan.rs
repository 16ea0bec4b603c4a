//! The RESP commands over every key: SCAN, KEYS, RANDOMKEY, FLUSHDB and FLUSHALL. Each shard's
//! keys are read in pages of the table `resp_kv` (a full scan of this shard's rows, in key
//! order), on the shard itself or asked over the mesh (`ShardMsg::Resp` with the internal
//! command `SCANPAGE`, which no client can send: it reaches only forwarded messages).
//!
//! A SCAN cursor is a number the connection hands out: it stands for (shard, the last key
//! returned), kept in the connection (`resp_session.rs`), at most [`CURSORS_MAX`] of them. As
//! in Redis, a key present for the whole iteration is returned, and a key added or removed
//! meanwhile may or may not be; unlike Redis, a cursor is good only on the connection that got
//! it (docs/RESP.md).

use std::ops::Range;
use std::rc::Rc;

use futures::channel::oneshot;
use ringstore_net::resp::parse::parse_i64;
use ringstore_net::resp::reply;
use ringstore_storage::table::{RangeRequest, Value};
use ringstore_storage::Durability;

use crate::counters::Counters;
use crate::mesh::{reply as mesh_reply, ShardMsg};
use crate::resp_commands::{error_reply, Owned};
use crate::resp_session::{Conn, Cursor};
use crate::resp_table;
use crate::shard::Shard;

/// Open SCAN cursors per connection; past it the oldest is forgotten (its next use is
/// `-ERR invalid cursor`).
pub const CURSORS_MAX: usize = 64;
/// Keys a SCAN reads per call unless COUNT says otherwise (Redis's default).
pub const SCAN_COUNT_DEFAULT: usize = 10;
/// Most keys one SCAN call reads, whatever COUNT says.
pub const SCAN_COUNT_MAX: usize = 1024;
/// Keys read per page by KEYS.
const KEYS_PAGE: usize = 1024;

/// A page of one shard's keys, and the stored key the next page starts after (None: the
/// shard has no more).
type Page = (Vec<Vec<u8>>, Option<Vec<u8>>);

/// Redis's glob (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a]`, `[a-z]` and `\x`.
pub fn glob(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    let same = |a: u8, b: u8| if nocase { a.eq_ignore_ascii_case(&b) } else { a == b };
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| glob(rest, &text[i..], nocase)),
        Some((b'?', rest)) => !text.is_empty() && glob(rest, &text[1..], nocase),
        Some((b'[', rest)) => {
            let Some((&t, text_rest)) = text.split_first() else { return false };
            let (matched, after) = class(rest, t, &same);
            matched && glob(after, text_rest, nocase)
        }
        Some((b'\\', rest)) if !rest.is_empty() => {
            text.first().is_some_and(|&t| same(rest[0], t)) && glob(&rest[1..], &text[1..], nocase)
        }
        Some((&c, rest)) => {
            text.first().is_some_and(|&t| same(c, t)) && glob(rest, &text[1..], nocase)
        }
    }
}

/// A `[...]` class (after its `[`) against `t`: whether it matches, and the pattern after `]`.
fn class<'p>(mut p: &'p [u8], t: u8, same: &impl Fn(u8, u8) -> bool) -> (bool, &'p [u8]) {
    let negate = p.first() == Some(&b'^');
    if negate {
        p = &p[1..];
    }
    let mut matched = false;
    loop {
        match p {
            [] => break,
            [b']', rest @ ..] => {
                p = rest;
                break;
            }
            [b'\\', c, rest @ ..] => {
                matched |= same(*c, t);
                p = rest;
            }
            [a, b'-', b, rest @ ..] if *b != b']' => {
                let (lo, hi) = if a <= b { (*a, *b) } else { (*b, *a) };
                matched |= (lo..=hi).contains(&t) || (lo..=hi).any(|c| same(c, t));
                p = rest;
            }
            [c, rest @ ..] => {
                matched |= same(*c, t);
                p = rest;
            }
        }
    }
    (matched != negate, p)
}

/// The shards whose keys DBSIZE, SCAN, KEYS, RANDOMKEY and INFO's keyspace cover for `conn`:
/// every shard on the shared RESP port (a standalone Redis's keys), only its own on a shard's
/// own RESP port (a Redis Cluster node's keys).
pub fn scope(shard: &Shard, conn: &Conn) -> Range<usize> {
    if conn.own_port {
        shard.id..shard.id + 1
    } else {
        0..shard.shards()
    }
}

/// One page of this shard's keys after `resume` (a stored key): the keys and where the next
/// page starts (None: this shard has no more).
pub async fn local_page(
    shard: &Shard,
    resume: Option<Vec<u8>>,
    count: usize,
) -> Result<Page, String> {
    let t = resp_table::table(shard)?;
    let request = RangeRequest {
        key: &[],
        range: None,
        reverse: false,
        limit: count,
        resume,
        versions: Default::default(),
        allow_full_scan: true,
    };
    let page =
        shard.tables.scan(resp_table::TABLE, &request).await.map_err(|e| format!("ERR {e}"))?;
    let keys = page
        .rows
        .iter()
        .filter_map(|row| match row.newest().get(t.schema(), resp_table::KEY_FIELD) {
            Some(Value::Binary(k)) => Some(k.clone()),
            _ => None,
        })
        .collect();
    Ok((keys, page.resume))
}

/// The reply of the internal `SCANPAGE resume count` (a forwarded page request): an array of
/// the next resume key (or nil) and the keys.
pub async fn serve_page(shard: &Shard, words: &[&[u8]]) -> Vec<u8> {
    let resume = match words.get(1) {
        Some([1, key @ ..]) => Some(key.to_vec()),
        _ => None,
    };
    let count = words.get(2).and_then(|c| parse_i64(c)).unwrap_or(1).clamp(1, KEYS_PAGE as i64);
    match local_page(shard, resume, count as usize).await {
        Ok((keys, resume)) => {
            let mut out = Vec::new();
            reply::array(&mut out, keys.len() + 1);
            match resume {
                Some(r) => reply::bulk(&mut out, &r),
                None => reply::null(&mut out),
            }
            for k in &keys {
                reply::bulk(&mut out, k);
            }
            out
        }
        Err(e) => error_reply(&e),
    }
}

/// A page of shard `s`'s keys, here or asked over the mesh.
async fn page_on(
    shard: &Rc<Shard>,
    s: usize,
    resume: Option<Vec<u8>>,
    count: usize,
) -> Result<Page, String> {
    if s == shard.id {
        return local_page(shard, resume, count).await;
    }
    let mut marked = Vec::new();
    if let Some(r) = resume {
        marked.push(1);
        marked.extend_from_slice(&r);
    }
    let count = count.to_string();
    let mut command = Vec::new();
    reply::command(&mut command, [&b"SCANPAGE"[..], &marked, count.as_bytes()].into_iter());
    let (tx, rx) = oneshot::channel();
    let msg = ShardMsg::Resp { command, durability: Durability::NoSync, reply: tx };
    shard.peers.send(s, msg).await.map_err(|e| format!("ERR {e}"))?;
    Counters::add(&shard.counters.forwarded_out, 1);
    let answer = mesh_reply(rx, s).await.map_err(|e| format!("ERR {e}"))?;
    decode_page(answer)
}

/// The keys and resume key of a `SCANPAGE` reply: `*N`, the resume key (or nil), the keys.
fn decode_page(answer: Vec<u8>) -> Result<Page, String> {
    if answer.first() == Some(&b'-') {
        return Err(String::from_utf8_lossy(&answer[1..]).trim_end().to_owned());
    }
    let bad = || "ERR a shard's scan page did not parse".to_owned();
    let head_end = answer.windows(2).position(|w| w == b"\r\n").ok_or_else(bad)?;
    let n = std::str::from_utf8(&answer[1..head_end]).ok().and_then(|n| n.parse::<usize>().ok());
    let n = n.filter(|n| *n >= 1).ok_or_else(bad)?;
    let rest = &answer[head_end + 2..];
    // Read as a command is: an array of bulk strings (with the nil resume key taken out).
    let (resume_is_nil, bulks) = match rest.strip_prefix(b"$-1\r\n") {
        Some(bulks) => (true, bulks),
        None => (false, rest),
    };
    let count = if resume_is_nil { n - 1 } else { n };
    if count == 0 {
        return Ok((Vec::new(), None));
    }
    let mut command = format!("*{count}\r\n").into_bytes();
    command.extend_from_slice(bulks);
    let owned = Owned::parse(command).ok_or_else(bad)?;
    let mut words: Vec<Vec<u8>> = owned.words().iter().map(|w| w.to_vec()).collect();
    let resume = if resume_is_nil { None } else { Some(words.remove(0)) };
    Ok((words, resume))
}

/// SCAN cursor [MATCH pattern] [COUNT n] [TYPE type].
pub async fn scan(shard: &Rc<Shard>, conn: &Conn, words: &[&[u8]]) -> Vec<u8> {
    let Some(cursor) = std::str::from_utf8(words[1]).ok().and_then(|c| c.parse::<u64>().ok())
    else {
        return error_reply("ERR invalid cursor");
    };
    let (pattern, count, only_strings) = match scan_options(&words[2..]) {
        Ok(o) => o,
        Err(e) => return error_reply(&e),
    };
    let scope = scope(shard, conn);
    let (mut s, mut resume) = if cursor == 0 {
        (scope.start, None)
    } else {
        match conn.take_cursor(cursor) {
            Some(Cursor { shard, resume, .. }) => (shard, resume),
            None => return error_reply("ERR invalid cursor"),
        }
    };
    let mut keys = Vec::new();
    while s < scope.end && keys.is_empty() {
        let (page, next) = match page_on(shard, s, resume.take(), count).await {
            Ok(p) => p,
            Err(e) => return error_reply(&e),
        };
        let wanted = |k: &Vec<u8>| only_strings && pattern.is_none_or(|p| glob(p, k, false));
        keys.extend(page.into_iter().filter(wanted));
        match next {
            Some(r) => {
                resume = Some(r);
                break;
            }
            None => s += 1,
        }
    }
    let next = if s >= scope.end { 0 } else { conn.open_cursor(s, resume, CURSORS_MAX) };
    let mut out = Vec::new();
    reply::array(&mut out, 2);
    reply::bulk(&mut out, next.to_string().as_bytes());
    reply::array(&mut out, keys.len());
    for k in &keys {
        reply::bulk(&mut out, k);
    }
    out
}

/// SCAN's options: the MATCH pattern, COUNT (bounded) and whether TYPE lets strings through.
fn scan_options<'a>(words: &[&'a [u8]]) -> Result<(Option<&'a [u8]>, usize, bool), String> {
    let (mut pattern, mut count, mut strings) = (None, SCAN_COUNT_DEFAULT, true);
    let mut i = 0;
    while i < words.len() {
        let Some(value) = words.get(i + 1) else { return Err("ERR syntax error".into()) };
        match words[i].to_ascii_uppercase().as_slice() {
            b"MATCH" => pattern = Some(*value),
            b"COUNT" => match parse_i64(value) {
                Some(n) if n >= 1 => count = (n as usize).min(SCAN_COUNT_MAX),
                Some(_) => return Err("ERR syntax error".into()),
                None => return Err("ERR value is not an integer or out of range".into()),
            },
            b"TYPE" => strings = value.eq_ignore_ascii_case(b"string"),
            _ => return Err("ERR syntax error".into()),
        }
        i += 2;
    }
    Ok((pattern, count, strings))
}

/// KEYS pattern: every key that matches, from the shards of `scope`; refused past `limit`
/// reply bytes.
pub async fn keys(shard: &Rc<Shard>, scope: Range<usize>, pattern: &[u8], limit: usize) -> Vec<u8> {
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0;
    for s in scope {
        let mut resume = None;
        loop {
            let (page, next) = match page_on(shard, s, resume.take(), KEYS_PAGE).await {
                Ok(p) => p,
                Err(e) => return error_reply(&e),
            };
            for k in page.into_iter().filter(|k| glob(pattern, k, false)) {
                bytes += k.len() + 16;
                if bytes > limit {
                    return error_reply(&format!(
                        "ERR the KEYS reply would be larger than {limit} bytes \
                         (max_output_buffer_bytes); use SCAN"
                    ));
                }
                found.push(k);
            }
            match next {
                Some(r) => resume = Some(r),
                None => break,
            }
        }
    }
    let mut out = Vec::with_capacity(bytes + 16);
    reply::array(&mut out, found.len());
    for k in &found {
        reply::bulk(&mut out, k);
    }
    out
}

/// RANDOMKEY: the first key of the first shard of `scope` with keys, starting at a shard picked
/// from `seed` (not uniform over keys: see docs/RESP.md).
pub async fn random_key(shard: &Rc<Shard>, scope: Range<usize>, seed: u64) -> Vec<u8> {
    let shards = scope.len();
    for i in 0..shards {
        let s = scope.start + (seed as usize + i) % shards;
        match page_on(shard, s, None, 1).await {
            Ok((page, _)) if !page.is_empty() => {
                let mut out = Vec::new();
                reply::bulk(&mut out, &page[0]);
                return out;
            }
            Ok(_) => {}
            Err(e) => return error_reply(&e),
        }
    }
    b"$-1\r\n".to_vec()
}

/// FLUSHDB / FLUSHALL: the table dropped and created again on every shard, by shard 0 (which
/// orders DDL): here if this is shard 0, else asked over the mesh.
pub async fn flush(shard: &Rc<Shard>) -> Vec<u8> {
    if shard.id == crate::router::DDL_COORDINATOR {
        let kind = crate::router::FanOutKind::Ddl { text: resp_table::FLUSH_DDL };
        let mut out = ringstore_net::Writer { buf: Vec::new() };
        return match crate::fanout::run(shard, kind, resp_table::FLUSH_DDL.as_bytes(), &mut out)
            .await
        {
            Ok(()) => b"+OK\r\n".to_vec(),
            Err(e) => error_reply(&format!("ERR {e}")),
        };
    }
    let mut command = Vec::new();
    reply::command(&mut command, [&b"FLUSHALL"[..]].into_iter());
    let (tx, rx) = oneshot::channel();
    let msg = ShardMsg::Resp { command, durability: Durability::NoSync, reply: tx };
    let to = crate::router::DDL_COORDINATOR;
    if let Err(e) = shard.peers.send(to, msg).await {
        return error_reply(&format!("ERR {e}"));
    }
    mesh_reply(rx, to).await.unwrap_or_else(|e| error_reply(&format!("ERR {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_as_redis_globs() {
        assert!(glob(b"key:*", b"key:12", false));
        assert!(glob(b"h?llo", b"hallo", false));
        assert!(glob(b"h[ae]llo", b"hello", false));
        assert!(!glob(b"h[^e]llo", b"hello", false));
        assert!(glob(b"h[a-b]llo", b"hbllo", false));
        assert!(glob(b"a\\*b", b"a*b", false));
        assert!(!glob(b"a\\*b", b"axb", false));
        assert!(!glob(b"KEY", b"key", false));
        assert!(glob(b"KEY", b"key", true));
        assert!(glob(b"*", b"", false));
    }

    #[test]
    fn a_page_reply_reads_back_with_and_without_a_resume_key() {
        let mut out = Vec::new();
        reply::array(&mut out, 3);
        reply::bulk(&mut out, b"\x00\x01resume");
        reply::bulk(&mut out, b"a");
        reply::bulk(&mut out, b"b");
        let (keys, resume) = decode_page(out).expect("a page");
        assert_eq!(
            (keys, resume),
            (vec![b"a".to_vec(), b"b".to_vec()], Some(b"\x00\x01resume".to_vec()))
        );
        let mut last = Vec::new();
        reply::array(&mut last, 2);
        reply::null(&mut last);
        reply::bulk(&mut last, b"$-1\r\n");
        let (keys, resume) = decode_page(last).expect("a page");
        assert_eq!((keys, resume), (vec![b"$-1\r\n".to_vec()], None));
    }
}
