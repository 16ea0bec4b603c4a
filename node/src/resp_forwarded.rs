//! The owner's side of a RESP command another shard forwarded (`ShardMsg::Resp`, served by
//! `peer.rs`): a one-key command on a key this shard owns (`resp_commands.rs`), or this shard's
//! part of a command over every key: its DBSIZE count, a page of its keys for SCAN and KEYS,
//! FLUSHALL on shard 0 (`resp_scan.rs`). The internal commands (`SCANPAGE`, and `DBSIZE` and
//! `FLUSHALL` meaning this shard's part) reach only this path, never a client's.

use std::rc::Rc;

use ringstore_net::resp::reply;
use ringstore_storage::Durability;

use crate::resp_commands;
use crate::resp_scan;
use crate::shard::Shard;

/// Serves a command another shard sent here (`peer.rs`): a one-key command this shard owns,
/// or this shard's part of a node-wide one (DBSIZE, a SCAN page, FLUSHALL on shard 0).
pub async fn run(shard: &Rc<Shard>, command: Vec<u8>, durability: Durability) -> Vec<u8> {
    let Some(owned) = resp_commands::Owned::parse(command) else {
        return resp_commands::error_reply("ERR a forwarded RESP command did not parse");
    };
    let words = owned.words();
    if words[0] == b"SCANPAGE" {
        return resp_scan::serve_page(shard, &words).await;
    }
    if words[0] == b"FLUSHALL" {
        return resp_scan::flush(shard).await;
    }
    if words[0].eq_ignore_ascii_case(b"DBSIZE") {
        let mut out = Vec::new();
        match resp_commands::local_keys(shard).await {
            Ok(n) => reply::integer(&mut out, n as i64),
            Err(e) => reply::error(&mut out, &e),
        }
        return out;
    }
    if words.len() < 2 {
        return resp_commands::error_reply("ERR a forwarded RESP command has no key");
    }
    let dispatched = resp_commands::dispatch_here(shard, &words, durability);
    resp_commands::resolve(shard, dispatched, &words, durability).await
}
