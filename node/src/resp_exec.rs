//! Running a one-key RESP command (`resp_keyed.rs`) on the shard that owns its key.
//!
//! [`run_now`] is the inline path: the row is read from memory (record cache, unflushed log, or
//! no row) and the decided write appended in the same synchronous step, so nothing can come in
//! between and no task, future or copy of the arguments is needed; a GET's reply is encoded
//! straight from the cached bytes. When the row must come from disk it does nothing and says
//! so, and [`run_waiting`] reads it with waiting, decides, and writes only if the row is still
//! the one read (the table layer's condition on its token), deciding again if it is not.

use std::cell::RefCell;

use ringstore_net::resp::reply;
use ringstore_storage::table::Condition;
use ringstore_storage::Durability;

use crate::counters::Counters;
use crate::resp_key_order::{self, Ticket};
use crate::resp_keyed::KeyCmd;
use crate::resp_table::{self, Appended, Current, Effect, RespKey};
use crate::shard::Shard;

/// Attempts of a read-decide-write whose row another write changed in between, before the
/// command gives up with an error (as the table layer's own `WRITE_ATTEMPTS_MAX`).
pub const ATTEMPTS_MAX: usize = 16;

thread_local! {
    /// The stored key of the command being run inline, reused (one per shard thread).
    static KEY: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Runs `cmd` on `key` now if it needs no waiting, its reply appended to `out`: Some(what the
/// write waits for, if anything) when done, None (with nothing done or appended) when the row
/// must be read from disk.
pub fn run_now(
    shard: &Shard,
    key: RespKey<'_>,
    cmd: &KeyCmd<'_>,
    durability: Durability,
    now: u64,
    out: &mut Vec<u8>,
) -> Option<Appended> {
    let start = out.len();
    let t = match resp_table::table(shard) {
        Ok(t) => t,
        Err(e) => {
            reply::error(out, &e);
            return Some(None);
        }
    };
    let effect = if cmd.reads() {
        let decided = KEY.with_borrow_mut(|buf| {
            let stored_key = match key.stored {
                Some(stored) => stored,
                None => match resp_table::encode_key(shard, &t, key.raw, buf) {
                    Ok(_) => &buf[..],
                    Err(e) => {
                        reply::error(out, &e);
                        return Some(Effect::None);
                    }
                },
            };
            let read = shard.tables.read_stored_now(stored_key, now, |stored| {
                let cur = match stored.map(|s| resp_table::decode(&t, s, now)).transpose() {
                    Ok(cur) => cur.flatten(),
                    Err(e) => {
                        reply::error(out, &format!("ERR {e}"));
                        return Effect::None;
                    }
                };
                count_lookup(shard, cmd, cur.is_some());
                cmd.decide(cur, now, out)
            });
            let read = read.done()?;
            Some(read.unwrap_or_else(|e| {
                reply::error(out, &format!("ERR {e}"));
                Effect::None
            }))
        });
        decided?
    } else {
        cmd.decide(None, now, out)
    };
    match resp_table::apply_now(shard, &t, key, &effect, durability, now) {
        Ok(wait) => Some(wait),
        Err(e) => {
            out.truncate(start);
            reply::error(out, &format!("ERR {e}"));
            Some(None)
        }
    }
}

/// Counts a read command's lookup in the shard's keyspace hits or misses, as Redis counts them
/// (`KeyCmd::counts_lookup`): once per command, whether its row came from memory or disk.
fn count_lookup(shard: &Shard, cmd: &KeyCmd<'_>, found: bool) {
    if !cmd.counts_lookup() {
        return;
    }
    let counters = &shard.counters;
    let cell = if found { &counters.resp_keyspace_hits } else { &counters.resp_keyspace_misses };
    Counters::add(cell, 1);
}

/// What [`start`] did with a command.
#[derive(Debug)]
pub enum Started {
    /// Run; its reply is in `out`, with what the write waits for, if anything.
    Done(Appended),
    /// It must wait for a disk read or for an earlier command on its key: nothing was done
    /// or appended; finish it with [`run_queued`].
    Queued(Ticket),
}

/// Runs `cmd` on `key` now if it can run now and no earlier command on the key is waiting
/// (`resp_key_order.rs`); otherwise takes the key's next ticket.
pub fn start(
    shard: &Shard,
    key: RespKey<'_>,
    cmd: &KeyCmd<'_>,
    durability: Durability,
    now: u64,
    out: &mut Vec<u8>,
) -> Started {
    if !resp_key_order::is_waiting(key.raw) {
        if let Some(appended) = run_now(shard, key, cmd, durability, now, out) {
            return Started::Done(appended);
        }
    }
    Started::Queued(resp_key_order::take(key.raw))
}

/// Finishes a queued command: waits for its key's turn, then runs it with waiting. The reply.
pub async fn run_queued(
    shard: &Shard,
    ticket: Ticket,
    key: &[u8],
    cmd: &KeyCmd<'_>,
    durability: Durability,
) -> Vec<u8> {
    ticket.turn().await;
    let reply = run_waiting(shard, key, cmd, durability).await;
    drop(ticket);
    reply
}

/// Runs `cmd` on `key` with waiting (a disk read, durability): the reply. The caller holds the
/// key's turn ([`run_queued`]).
async fn run_waiting(
    shard: &Shard,
    key: &[u8],
    cmd: &KeyCmd<'_>,
    durability: Durability,
) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..ATTEMPTS_MAX {
        out.clear();
        let now = shard.tables.store().now_ms();
        if let Some(wait) = run_now(shard, RespKey::raw(key), cmd, durability, now, &mut out) {
            if let Some(wait) = wait {
                if let Err(e) = shard.tables.store().wait(wait).await {
                    out.clear();
                    reply::error(&mut out, &format!("ERR {e}"));
                }
            }
            return out;
        }
        let (cur, condition) = match resp_table::read(shard, key).await {
            Ok(Some((value, expiry_ms, condition))) => (Some((value, expiry_ms)), condition),
            Ok(None) => (None, Condition::IfAbsent),
            Err(e) => {
                reply::error(&mut out, &format!("ERR {e}"));
                return out;
            }
        };
        let current =
            cur.as_ref().map(|(value, expiry_ms)| Current { value, expiry_ms: *expiry_ms });
        let effect = cmd.decide(current, now, &mut out);
        let applied = resp_table::apply_if(shard, key, &effect, condition, durability).await;
        if !matches!(applied, Ok(false)) {
            // Counted once, for the read its reply comes from (not for the attempts redone).
            count_lookup(shard, cmd, cur.is_some());
        }
        match applied {
            Ok(true) => return out,
            Ok(false) => continue,
            Err(e) => {
                out.clear();
                reply::error(&mut out, &format!("ERR {e}"));
                return out;
            }
        }
    }
    out.clear();
    let message = format!(
        "ERR the key was changed by other writes during each of {ATTEMPTS_MAX} attempts; retry"
    );
    reply::error(&mut out, &message);
    out
}
