//! The built-in key/value table the RESP port serves (docs/RESP.md): `resp_kv (p INTEGER,
//! k BINARY, v BINARY, PRIMARY KEY (SHARD(p), k))`, one version per row, a TTL per row. `k` is
//! the Redis key; `p` is the partition token of the key's Redis Cluster slot (`resp_slots.rs`),
//! so that the slot alone decides the shard and a cluster-aware client can send each key to its
//! owner. It is created at start (by shard 0, on every shard, as any DDL) when `--resp` is given.
//!
//! A data directory made before slots has `resp_kv (k BINARY, v BINARY, PRIMARY KEY
//! (SHARD(k)))`: the key its own shard key. Such a table is still served (every command works
//! and routes as before), but without cluster mode: CLUSTER answers that cluster support is
//! disabled, as a standalone Redis does. FLUSHALL re-creates the table in the new layout.
//!
//! Everything here goes through the table layer's operations the binary protocol's inline path
//! uses: the row read from memory without waiting (`TableStore::read_stored_now`) or from disk
//! (`TableStore::get`), the allocation-free put (`TableStore::put_now`), the blind write
//! (`TableStore::write_now`) and the conditional write (`TableStore::write`). So a RESP write is
//! indexed, logged and group-committed exactly as a binary Put of the same row.
//!
//! Expiry: the table layer takes a TTL in whole seconds counted from the row's version; Redis
//! expiries are in milliseconds. A write that must expire at `E` ms therefore gets the TTL
//! `ceil((E - now) / 1000)` s and the version `E - ttl * 1000` (up to 999 ms before now, well
//! inside the table's version window), which makes the stored expiry exactly `E`. With one
//! version per row the last write wins whatever its version, so the earlier version changes
//! nothing else.

use std::rc::Rc;

use ringstore_storage::table::{
    for_each_version, partition_of, visit_row, CatalogTable, Condition, OpResult, PutOptions,
    RowSlots, TableResult, Value, ValueRef, VersionSelect, WriteOp, WriteOutcome,
};
use ringstore_storage::{Durability, DurableWait};

use crate::resp_slots;
use crate::shard::Shard;

/// The table's name.
pub const TABLE: &str = "resp_kv";

macro_rules! create_ddl {
    () => {
        "CREATE TABLE IF NOT EXISTS resp_kv \
         (p INTEGER, k BINARY, v BINARY, PRIMARY KEY (SHARD(p), k))"
    };
}
/// The DDL that creates it if missing.
pub const CREATE_DDL: &str = create_ddl!();
/// The DDL that empties it (FLUSHDB, FLUSHALL): dropped (one range tombstone per shard) and
/// created again, in the current layout whatever the old one was.
pub const FLUSH_DDL: &str = concat!("DROP TABLE IF EXISTS resp_kv; ", create_ddl!());
/// The partition token field (the shard key), the key field and the value field.
pub const TOKEN_FIELD: &str = "p";
pub const KEY_FIELD: &str = "k";
pub const VALUE_FIELD: &str = "v";

/// Creates the table on every shard if it is missing (shard 0 at start, through the node's DDL
/// path, `fanout.rs`).
pub async fn create(shard: &Rc<Shard>) -> Result<(), String> {
    let kind = crate::router::FanOutKind::Ddl { text: CREATE_DDL };
    let mut out = ringstore_net::Writer { buf: Vec::new() };
    crate::fanout::run(shard, kind, CREATE_DDL.as_bytes(), &mut out)
        .await
        .map_err(|e| format!("cannot create the RESP port's table {TABLE}: {e}"))
}

/// A key's current value as a command sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current<'a> {
    pub value: &'a [u8],
    /// Ms since the epoch; 0: no expiry.
    pub expiry_ms: u64,
}

/// The table, or the error a RESP client gets while it does not exist.
pub fn table(shard: &Shard) -> Result<Rc<CatalogTable>, String> {
    shard.tables.table(TABLE).map_err(|_| {
        format!(
            "ERR the key/value table {TABLE} does not exist on this shard yet (was it dropped?)"
        )
    })
}

/// Whether the table has the slot layout (a partition token, the whole shard key, before the
/// key), so that the port can serve Redis Cluster's commands; false for a table made before
/// slots.
pub fn has_slots(t: &CatalogTable) -> bool {
    let schema = t.schema();
    schema.key_position(TOKEN_FIELD) == Some(0) && schema.shard_key_len() == 1
}

/// The partition token of `key`'s row in the slot layout; None in the old layout.
pub fn token(shard: &Shard, t: &CatalogTable, key: &[u8]) -> TableResult<Option<i32>> {
    if !has_slots(t) {
        return Ok(None);
    }
    let count = shard.partitions();
    Ok(Some(resp_slots::tokens(t.schema(), count)?.of_key(key, count)))
}

/// `key`'s primary key fields (its token first in the slot layout), for the table layer's
/// general operations.
fn key_fields(shard: &Shard, key: &[u8]) -> OpResult<Vec<(&'static str, Value)>> {
    let t = shard.tables.table(TABLE)?;
    let mut fields = Vec::with_capacity(2);
    if let Some(p) = token(shard, &t, key)? {
        fields.push((TOKEN_FIELD, Value::Integer(p)));
    }
    fields.push((KEY_FIELD, Value::Binary(key.to_vec())));
    Ok(fields)
}

/// Encodes `key` as the table's stored key into `out`; the shard that owns it. An error for a
/// key the table refuses (longer than a key field may be).
pub fn encode_key(
    shard: &Shard,
    t: &CatalogTable,
    key: &[u8],
    out: &mut Vec<u8>,
) -> Result<usize, String> {
    let encode = |pairs: &[(&str, ValueRef<'_>)], out: &mut Vec<u8>| {
        ringstore_storage::table::encode_primary_key_into(t.schema(), pairs.iter().copied(), out)
            .map(|(_, shard_key_len)| shard_key_len)
            .map_err(|e| format!("ERR {e}"))
    };
    let shard_key_len = match token(shard, t, key).map_err(|e| format!("ERR {e}"))? {
        Some(p) => {
            encode(&[(TOKEN_FIELD, ValueRef::Integer(p)), (KEY_FIELD, ValueRef::Binary(key))], out)?
        }
        None => encode(&[(KEY_FIELD, ValueRef::Binary(key))], out)?,
    };
    Ok(shard.owner(partition_of(&out[..shard_key_len], shard.partitions())))
}

/// A RESP key: the client's bytes, and the table's stored key for them ([`encode_key`]) when
/// the caller already has it (the read batch encodes each key once to find its owner,
/// `resp_batch.rs`), so that the command does not encode it again.
#[derive(Debug, Clone, Copy)]
pub struct RespKey<'a> {
    pub raw: &'a [u8],
    pub stored: Option<&'a [u8]>,
}

impl<'a> RespKey<'a> {
    /// A key not encoded yet.
    pub fn raw(raw: &'a [u8]) -> RespKey<'a> {
        RespKey { raw, stored: None }
    }
}

/// The shard that owns `key`.
pub fn owner_of(shard: &Shard, key: &[u8]) -> Result<usize, String> {
    thread_local! {
        /// The encoded key, reused (one shard per thread).
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let t = table(shard)?;
    BUF.with_borrow_mut(|buf| encode_key(shard, &t, key, buf))
}

/// Decodes a stored row of the table: its value and expiry; None if it holds none live.
pub fn decode<'a>(
    t: &'a CatalogTable,
    stored: &'a [u8],
    now: u64,
) -> OpResult<Option<Current<'a>>> {
    let schema = t.schema();
    let mut newest = None;
    for_each_version(schema, stored, |v| {
        newest.get_or_insert(v);
    })?;
    let Some(v) = newest.filter(|v| v.expiry_ms == 0 || v.expiry_ms > now) else {
        return Ok(None);
    };
    let mut value: &[u8] = &[];
    visit_row(schema, v.row, |_, field| {
        if let ValueRef::Binary(b) = field {
            value = b;
        }
    })?;
    Ok(Some(Current { value, expiry_ms: v.expiry_ms }))
}

/// The version and TTL that make a put expire at `expiry_ms` (0: never), see the module docs;
/// None for an expiry at or before `now` (the key must go instead).
pub fn version_and_ttl(expiry_ms: u64, now: u64) -> Option<(Option<u64>, Option<u64>)> {
    if expiry_ms == 0 {
        return Some((None, None));
    }
    if expiry_ms <= now {
        return None;
    }
    let ttl = (expiry_ms - now).div_ceil(1000);
    Some((Some(expiry_ms - ttl * 1000), Some(ttl)))
}

/// What a command does to its key once it has decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect<'a> {
    /// Nothing to write.
    None,
    /// Write `value`, expiring at `expiry_ms` (0: never; at or before now: the key goes).
    Put { value: std::borrow::Cow<'a, [u8]>, expiry_ms: u64 },
    /// Remove the key.
    Delete,
}

/// A write appended: None when it is acknowledged at once, else what to wait for.
pub type Appended = Option<DurableWait>;

/// Applies `effect` to `key` now, without waiting (a blind write: the caller decided on what it
/// read in the same synchronous step, so nothing came in between).
pub fn apply_now(
    shard: &Shard,
    t: &CatalogTable,
    key: RespKey<'_>,
    effect: &Effect<'_>,
    durability: Durability,
    now: u64,
) -> OpResult<Appended> {
    let (stored, key) = (key.stored, key.raw);
    let (value, expiry_ms) = match effect {
        Effect::None => return Ok(None),
        Effect::Delete => return delete_now(shard, key, durability),
        Effect::Put { value, expiry_ms } => (value, *expiry_ms),
    };
    let Some((version, ttl_seconds)) = version_and_ttl(expiry_ms, now) else {
        return delete_now(shard, key, durability);
    };
    let options = PutOptions { condition: Condition::Always, version, ttl_seconds };
    let mut scratch = shard.scratch.borrow_mut();
    let done = match stored {
        Some(stored) => {
            let values = [(VALUE_FIELD, ValueRef::Binary(value))].into_iter();
            let tables = &shard.tables;
            tables.put_encoded_now(t, stored, values, options, durability, now, &mut scratch)
        }
        None => {
            let token = token(shard, t, key)?;
            let pairs = token.map(|p| (TOKEN_FIELD, ValueRef::Integer(p))).into_iter().chain([
                (KEY_FIELD, ValueRef::Binary(key)),
                (VALUE_FIELD, ValueRef::Binary(value)),
            ]);
            let owns = |_: &[u8]| true;
            RowSlots::of(t, pairs).and_then(|row| {
                shard.tables.put_now(t, &row, options, durability, now, &mut scratch, owns)
            })
        }
    };
    drop(scratch);
    if let Some(done) = done {
        return done.map(|(_, wait)| wait);
    }
    // A put the allocation-free path declines (it then reports why through the general path).
    let mut row = key_fields(shard, key)?;
    row.push((VALUE_FIELD, Value::Binary(value.to_vec())));
    let mut op = WriteOp::put(&row);
    if let (Some(v), Some(ttl)) = (version, ttl_seconds) {
        op = op.version(v).ttl_seconds(ttl);
    }
    match shard.tables.write_now(TABLE, &op, durability) {
        Some(done) => done.map(|(_, wait)| wait),
        None => unreachable!("an unconditional put on a single-version table needs no read"),
    }
}

fn delete_now(shard: &Shard, key: &[u8], durability: Durability) -> OpResult<Appended> {
    let k = key_fields(shard, key)?;
    match shard.tables.write_now(TABLE, &WriteOp::delete(&k), durability) {
        Some(done) => done.map(|(_, wait)| wait),
        None => unreachable!("an unconditional delete needs no read"),
    }
}

/// The key's row read with waiting (from disk if need be): its value, expiry and token.
pub async fn read(shard: &Shard, key: &[u8]) -> OpResult<Option<(Vec<u8>, u64, Condition)>> {
    let k = key_fields(shard, key)?;
    let Some(row) = shard.tables.get(TABLE, &k, VersionSelect::Newest).await? else {
        return Ok(None);
    };
    let t = shard.tables.table(TABLE)?;
    let newest = row.newest();
    let value = match newest.get(t.schema(), VALUE_FIELD) {
        Some(Value::Binary(b)) => b.clone(),
        _ => Vec::new(),
    };
    Ok(Some((value, newest.expiry_ms, Condition::IfVersion(row.token))))
}

/// Applies `effect` if the row is still as read (`condition`: the token read, or absent), with
/// waiting; false if another write came in between (read again and decide again).
pub async fn apply_if(
    shard: &Shard,
    key: &[u8],
    effect: &Effect<'_>,
    condition: Condition,
    durability: Durability,
) -> OpResult<bool> {
    let now = shard.tables.store().now_ms();
    let k = key_fields(shard, key)?;
    let outcome = match effect {
        Effect::None => return Ok(true),
        Effect::Put { value, expiry_ms } => match version_and_ttl(*expiry_ms, now) {
            Some((version, ttl)) => {
                let mut row = k.clone();
                row.push((VALUE_FIELD, Value::Binary(value.to_vec())));
                let mut op = WriteOp::put(&row).condition(condition);
                if let (Some(v), Some(ttl)) = (version, ttl) {
                    op = op.version(v).ttl_seconds(ttl);
                }
                shard.tables.write(TABLE, &op, durability).await?
            }
            None => {
                let op = WriteOp::delete(&k).condition(condition);
                shard.tables.write(TABLE, &op, durability).await?
            }
        },
        Effect::Delete => {
            let op = WriteOp::delete(&k).condition(condition);
            shard.tables.write(TABLE, &op, durability).await?
        }
    };
    Ok(!matches!(outcome, WriteOutcome::ConditionFailed { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_millisecond_expiry_becomes_a_version_and_whole_seconds() {
        let now = 1_000_000;
        assert_eq!(version_and_ttl(0, now), Some((None, None)));
        assert_eq!(version_and_ttl(now, now), None, "due now: the key goes");
        for expiry in [now + 1, now + 999, now + 1000, now + 1001, now + 86_400_123] {
            let (Some(version), Some(ttl)) = version_and_ttl(expiry, now).expect("later") else {
                panic!("a version and a ttl")
            };
            assert_eq!(version + ttl * 1000, expiry, "{expiry}");
            assert!(version <= now && version + 1000 > now, "{version} within a second of now");
        }
    }
}
