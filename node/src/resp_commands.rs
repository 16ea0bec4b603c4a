//! The RESP command table (name, arity, what runs it), Redis's errors for unknown commands and
//! wrong arity, and the commands that concern the connection or the node rather than one key
//! (PING, ECHO, HELLO, CLIENT, CONFIG GET, COMMAND, TIME, INFO, DBSIZE) and those on several
//! keys (DEL, EXISTS, MGET, MSET, MSETNX), which run per key on each key's owner and combine
//! the replies. One-key commands are `resp_keyed.rs`, run by `resp_exec.rs`.

use std::rc::Rc;

use futures::channel::oneshot;
use ringstore_net::resp::reply;
use ringstore_net::resp::{parse_command, Args, ParseLimits, Parsed};
use ringstore_storage::table::RangeRequest;
use ringstore_storage::{Durability, DurableWait};

use crate::counters::Counters;
use crate::forward::ask;
use crate::mesh::{reply as mesh_reply, ShardMsg};
use crate::resp_exec::{self, Started};
use crate::resp_key_order::Ticket;
use crate::resp_keyed::{KeyCmd, MSETNX_CHECK};
use crate::resp_table::{self, RespKey};
use crate::shard::Shard;

/// Longest command name looked up (longer ones are unknown).
pub const NAME_BYTES_MAX: usize = 32;

/// What runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// On one key, argument 1, on its owner (`resp_keyed.rs`).
    Key,
    /// On every key from argument 1 (DEL, UNLINK, EXISTS, MGET), or key/value pairs (MSET,
    /// MSETNX): on each key's owner, replies combined.
    Keys,
    /// Answered by the connection at once (PING, ECHO, CLIENT, ...): `resp_connection.rs`.
    Connection,
    /// Answered from every shard (DBSIZE, INFO): a task.
    Node,
}

/// A command: its name (upper case), Redis's arity (n: exactly n words with the name; -n: at
/// least n) and what runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    pub name: &'static str,
    pub arity: i32,
    pub kind: Kind,
}

const fn spec(name: &'static str, arity: i32, kind: Kind) -> Spec {
    Spec { name, arity, kind }
}

/// Every command the port knows.
pub const COMMANDS: &[Spec] = &[
    spec("GET", 2, Kind::Key),
    spec("SET", -3, Kind::Key),
    spec("SETNX", 3, Kind::Key),
    spec("SETEX", 4, Kind::Key),
    spec("PSETEX", 4, Kind::Key),
    spec("GETSET", 3, Kind::Key),
    spec("GETDEL", 2, Kind::Key),
    spec("GETEX", -2, Kind::Key),
    spec("INCR", 2, Kind::Key),
    spec("DECR", 2, Kind::Key),
    spec("INCRBY", 3, Kind::Key),
    spec("DECRBY", 3, Kind::Key),
    spec("INCRBYFLOAT", 3, Kind::Key),
    spec("APPEND", 3, Kind::Key),
    spec("STRLEN", 2, Kind::Key),
    spec("GETRANGE", 4, Kind::Key),
    spec("SUBSTR", 4, Kind::Key),
    spec("SETRANGE", 4, Kind::Key),
    spec("EXPIRE", -3, Kind::Key),
    spec("PEXPIRE", -3, Kind::Key),
    spec("EXPIREAT", -3, Kind::Key),
    spec("PEXPIREAT", -3, Kind::Key),
    spec("TTL", 2, Kind::Key),
    spec("PTTL", 2, Kind::Key),
    spec("PERSIST", 2, Kind::Key),
    spec("TYPE", 2, Kind::Key),
    spec("DEL", -2, Kind::Keys),
    spec("UNLINK", -2, Kind::Keys),
    spec("EXISTS", -2, Kind::Keys),
    spec("MGET", -2, Kind::Keys),
    spec("MSET", -3, Kind::Keys),
    spec("MSETNX", -3, Kind::Keys),
    spec("PING", -1, Kind::Connection),
    spec("ECHO", 2, Kind::Connection),
    spec("QUIT", -1, Kind::Connection),
    spec("HELLO", -1, Kind::Connection),
    spec("SELECT", 2, Kind::Connection),
    spec("CLIENT", -2, Kind::Connection),
    spec("COMMAND", -1, Kind::Connection),
    spec("CONFIG", -2, Kind::Connection),
    spec("TIME", 1, Kind::Connection),
    spec("CLUSTER", -2, Kind::Connection),
    spec("READONLY", 1, Kind::Connection),
    spec("READWRITE", 1, Kind::Connection),
    spec("ASKING", 1, Kind::Connection),
    spec("DBSIZE", 1, Kind::Node),
    spec("SCAN", -2, Kind::Node),
    spec("KEYS", 2, Kind::Node),
    spec("RANDOMKEY", 1, Kind::Node),
    spec("FLUSHDB", -1, Kind::Node),
    spec("FLUSHALL", -1, Kind::Node),
    spec("INFO", -1, Kind::Node),
];

/// The command named `name` (any case).
pub fn lookup(name: &[u8]) -> Option<&'static Spec> {
    if name.len() > NAME_BYTES_MAX {
        return None;
    }
    COMMANDS.iter().find(|s| s.name.as_bytes().eq_ignore_ascii_case(name))
}

/// Checks the command's word count against its arity; Err is Redis's reply.
pub fn check_arity(spec: &Spec, words: usize) -> Result<(), String> {
    let n = words as i32;
    let fits = if spec.arity >= 0 { n == spec.arity } else { n >= -spec.arity };
    // MSET and MSETNX take pairs.
    let pairs = !matches!(spec.name, "MSET" | "MSETNX") || words % 2 == 1;
    if fits && pairs {
        return Ok(());
    }
    Err(format!("ERR wrong number of arguments for '{}' command", spec.name.to_lowercase()))
}

/// Redis's reply to an unknown command: its name and the start of its arguments.
pub fn unknown(args: &Args, buf: &[u8]) -> String {
    let name = String::from_utf8_lossy(&args.get(buf, 0)[..args.get(buf, 0).len().min(128)]);
    let mut tail = String::new();
    for i in 1..args.len() {
        if tail.len() >= 128 {
            break;
        }
        let room = 128 - tail.len();
        let a = args.get(buf, i);
        tail.push_str(&format!("'{}' ", String::from_utf8_lossy(&a[..a.len().min(room)])));
    }
    format!("ERR unknown command '{name}', with args beginning with: {tail}")
}

/// A command's words, owned (for a task, or to forward to another shard).
#[derive(Debug, Clone)]
pub struct Owned {
    pub raw: Vec<u8>,
    pub args: Args,
}

impl Owned {
    /// Parses a whole command again from its bytes (as received, or as [`reply::command`]
    /// encodes one); None if it is not one.
    pub fn parse(raw: Vec<u8>) -> Option<Owned> {
        let mut args = Args::default();
        let limits = ParseLimits {
            bulk_bytes_max: raw.len(),
            command_bytes_max: raw.len() + 1,
            ..ParseLimits::default()
        };
        match parse_command(&raw, &limits, &mut args) {
            Parsed::Command { .. } if !args.is_empty() => Some(Owned { raw, args }),
            _ => None,
        }
    }

    pub fn words(&self) -> Vec<&[u8]> {
        self.args.iter(&self.raw).collect()
    }
}

/// A one-key command sent on its way ([`dispatch`]) and not yet answered.
#[derive(Debug)]
pub enum Dispatched {
    /// Answered.
    Ready(Vec<u8>),
    /// Run here; the reply waits for the write's durability.
    Durable(DurableWait, Vec<u8>),
    /// To run here after a disk read or an earlier command on its key.
    Queued(Ticket),
    /// Sent to the key's owner.
    Remote(usize, oneshot::Receiver<Vec<u8>>),
}

/// Sends a one-key command (words: name, key, arguments) on its way, without waiting: run here
/// if it can run now, queued behind its key here, or forwarded to the key's owner. Callers
/// dispatch the commands of a connection in their order, so each key's owner sees them in that
/// order ([`resolve`] then waits for the replies).
pub fn dispatch(shard: &Rc<Shard>, words: &[&[u8]], durability: Durability) -> Dispatched {
    let owner = match resp_table::owner_of(shard, words[1]) {
        Ok(owner) => owner,
        Err(e) => return Dispatched::Ready(error_reply(&e)),
    };
    if owner == shard.id {
        return dispatch_here(shard, words, durability);
    }
    let mut command = Vec::new();
    reply::command(&mut command, words.iter().copied());
    let (tx, rx) = oneshot::channel();
    let msg = ShardMsg::Resp { command, durability, reply: tx };
    if let Err(e) = shard.peers.try_send(owner, msg) {
        return Dispatched::Ready(error_reply(&format!("BUSY {e}")));
    }
    Counters::add(&shard.counters.forwarded_out, 1);
    Dispatched::Remote(owner, rx)
}

/// [`dispatch`] of a command whose key this shard owns.
pub fn dispatch_here(shard: &Shard, words: &[&[u8]], durability: Durability) -> Dispatched {
    let name = String::from_utf8_lossy(words[0]).to_ascii_uppercase();
    let now = shard.tables.store().now_ms();
    let cmd = match KeyCmd::parse(&name, &words[2..], now) {
        Ok(cmd) => cmd,
        Err(e) => return Dispatched::Ready(error_reply(&e)),
    };
    let mut out = Vec::new();
    match resp_exec::start(shard, RespKey::raw(words[1]), &cmd, durability, now, &mut out) {
        Started::Done(None) => Dispatched::Ready(out),
        Started::Done(Some(wait)) => Dispatched::Durable(wait, out),
        Started::Queued(ticket) => Dispatched::Queued(ticket),
    }
}

/// The reply of a dispatched command (`words` as dispatched).
pub async fn resolve(
    shard: &Shard,
    dispatched: Dispatched,
    words: &[&[u8]],
    durability: Durability,
) -> Vec<u8> {
    match dispatched {
        Dispatched::Ready(reply) => reply,
        Dispatched::Durable(wait, reply) => match shard.tables.store().wait(wait).await {
            Ok(()) => reply,
            Err(e) => error_reply(&format!("ERR {e}")),
        },
        Dispatched::Queued(ticket) => {
            let name = String::from_utf8_lossy(words[0]).to_ascii_uppercase();
            let now = shard.tables.store().now_ms();
            match KeyCmd::parse(&name, &words[2..], now) {
                Ok(cmd) => resp_exec::run_queued(shard, ticket, words[1], &cmd, durability).await,
                Err(e) => error_reply(&e),
            }
        }
        Dispatched::Remote(owner, rx) => match mesh_reply(rx, owner).await {
            Ok(reply) => reply,
            Err(e) => error_reply(&format!("ERR {e}")),
        },
    }
}

/// Runs a one-key command on its key's owner: [`dispatch`], then [`resolve`].
pub async fn keyed(shard: &Rc<Shard>, words: &[&[u8]], durability: Durability) -> Vec<u8> {
    let dispatched = dispatch(shard, words, durability);
    resolve(shard, dispatched, words, durability).await
}

/// An error reply, `-message\r\n`.
pub fn error_reply(message: &str) -> Vec<u8> {
    let mut out = Vec::new();
    reply::error(&mut out, message);
    out
}

/// The integer of a `:n` reply; Err(the reply) for anything else (an error).
fn integer_of(reply: Vec<u8>) -> Result<i64, Vec<u8>> {
    let n = reply.strip_prefix(b":").and_then(|r| r.strip_suffix(b"\r\n"));
    n.and_then(ringstore_net::resp::parse::parse_i64).ok_or(reply)
}

/// Runs one-key commands: all dispatched first, in order and without waiting (so a later
/// command of the connection cannot overtake them), then their replies, in order.
async fn each<const N: usize>(
    shard: &Rc<Shard>,
    parts: &[[&[u8]; N]],
    durability: Durability,
) -> Vec<Vec<u8>> {
    let dispatched: Vec<Dispatched> =
        parts.iter().map(|p| dispatch(shard, p, durability)).collect();
    let mut replies = Vec::with_capacity(parts.len());
    for (d, p) in dispatched.into_iter().zip(parts) {
        replies.push(resolve(shard, d, p, durability).await);
    }
    replies
}

/// Runs a command on several keys: each key's part on its owner, replies combined.
pub async fn keys(shard: &Rc<Shard>, words: &[&[u8]], durability: Durability) -> Vec<u8> {
    let name = String::from_utf8_lossy(words[0]).to_ascii_uppercase();
    match name.as_str() {
        "MGET" => {
            let parts: Vec<[&[u8]; 2]> = words[1..].iter().map(|k| [&b"GET"[..], k]).collect();
            let mut out = Vec::new();
            reply::array(&mut out, words.len() - 1);
            for got in each(shard, &parts, durability).await {
                // A failed read answers nil for that key, as Redis answers nil for a non-string.
                if got.starts_with(b"-") {
                    reply::null(&mut out);
                } else {
                    out.extend_from_slice(&got);
                }
            }
            out
        }
        "MSET" => {
            let parts: Vec<[&[u8]; 3]> =
                words[1..].chunks(2).map(|p| [&b"SET"[..], p[0], p[1]]).collect();
            let replies = each(shard, &parts, durability).await;
            replies.into_iter().find(|r| r.starts_with(b"-")).unwrap_or_else(|| b"+OK\r\n".to_vec())
        }
        "MSETNX" => msetnx(shard, words, durability).await,
        _ => {
            // DEL, UNLINK, EXISTS: the count of keys that existed (each counted once per mention).
            let one: &[u8] = if name == "EXISTS" { b"EXISTS" } else { b"DEL" };
            let parts: Vec<[&[u8]; 2]> = words[1..].iter().map(|k| [one, k]).collect();
            let mut total = 0;
            for got in each(shard, &parts, durability).await {
                match integer_of(got) {
                    Ok(n) => total += n,
                    Err(reply) => return reply,
                }
            }
            let mut out = Vec::new();
            reply::integer(&mut out, total);
            out
        }
    }
}

/// MSETNX: sets every pair if none of the keys exists. Not atomic across keys (see
/// docs/RESP.md): the check and the writes are separate steps, each write still `SET NX`.
async fn msetnx(shard: &Rc<Shard>, words: &[&[u8]], durability: Durability) -> Vec<u8> {
    let check = MSETNX_CHECK.as_bytes();
    let checks: Vec<[&[u8]; 2]> = words[1..].chunks(2).map(|p| [check, p[0]]).collect();
    for got in each(shard, &checks, durability).await {
        match integer_of(got) {
            Ok(0) => {}
            Ok(_) => return b":0\r\n".to_vec(),
            Err(reply) => return reply,
        }
    }
    let sets: Vec<[&[u8]; 4]> =
        words[1..].chunks(2).map(|p| [&b"SET"[..], p[0], p[1], b"NX"]).collect();
    let replies = each(shard, &sets, durability).await;
    replies.into_iter().find(|r| r.starts_with(b"-")).unwrap_or_else(|| b":1\r\n".to_vec())
}

/// Rows of the key/value table on this shard (DBSIZE's part): one scan of the table, page by
/// page.
pub async fn local_keys(shard: &Shard) -> Result<u64, String> {
    /// Rows per page of the counting scan.
    const PAGE_ROWS: usize = 1024;
    let mut count = 0u64;
    let mut resume = None;
    loop {
        let request = RangeRequest {
            key: &[],
            range: None,
            reverse: false,
            limit: PAGE_ROWS,
            resume,
            versions: Default::default(),
            allow_full_scan: true,
        };
        let page =
            shard.tables.scan(resp_table::TABLE, &request).await.map_err(|e| format!("ERR {e}"))?;
        count += page.rows.len() as u64;
        match page.resume {
            Some(r) => resume = Some(r),
            None => return Ok(count),
        }
    }
}

/// DBSIZE: the rows of the table on the shards of `scope` (the connection's, `resp_scan::scope`).
pub async fn dbsize(shard: &Rc<Shard>, scope: std::ops::Range<usize>) -> Result<u64, String> {
    let mut total = if scope.contains(&shard.id) { local_keys(shard).await? } else { 0 };
    for s in scope.filter(|s| *s != shard.id) {
        let mut command = Vec::new();
        reply::command(&mut command, [&b"DBSIZE"[..]].into_iter());
        let msg = |reply| ShardMsg::Resp { command, durability: Durability::NoSync, reply };
        let got = ask(shard, s, msg).await.map_err(|e| format!("ERR {e}"))?;
        total += integer_of(got)
            .map_err(|r| String::from_utf8_lossy(&r).trim_start_matches('-').trim().to_owned())?
            as u64;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arity_errors_use_redis_wording() {
        let get = lookup(b"get").expect("GET");
        assert_eq!(check_arity(get, 2), Ok(()));
        assert_eq!(
            check_arity(get, 3),
            Err("ERR wrong number of arguments for 'get' command".to_owned())
        );
        let mset = lookup(b"MSET").expect("MSET");
        assert!(check_arity(mset, 5).is_ok());
        assert!(check_arity(mset, 4).is_err(), "pairs only");
        let ping = lookup(b"PiNg").expect("PING");
        assert!(check_arity(ping, 1).is_ok() && check_arity(ping, 2).is_ok());
        assert_eq!(lookup(&[b'A'; NAME_BYTES_MAX + 1]), None);
    }

    #[test]
    fn unknown_commands_quote_their_first_arguments() {
        let raw = b"*3\r\n$3\r\nFOO\r\n$1\r\na\r\n$2\r\nbc\r\n".to_vec();
        let owned = Owned::parse(raw).expect("a command");
        assert_eq!(
            unknown(&owned.args, &owned.raw),
            "ERR unknown command 'FOO', with args beginning with: 'a' 'bc' "
        );
    }

    #[test]
    fn integer_replies_are_read_back_and_errors_passed_on() {
        assert_eq!(integer_of(b":12\r\n".to_vec()), Ok(12));
        assert_eq!(integer_of(b"-ERR x\r\n".to_vec()), Err(b"-ERR x\r\n".to_vec()));
    }
}
