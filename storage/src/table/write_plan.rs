//! Turning one table write into one store operation.
//!
//! [`prepare`] checks everything that does not depend on the row's current state (key, field
//! names and types, version window, TTL) and encodes the key, so bad input fails before any read.
//! [`plan`] then takes the row as it is now (decoded, possibly with expired versions) and decides:
//! the condition fails (an outcome, not an error), or the record to write: a tombstone, or the
//! row's kept versions with the new one inserted, `max_versions` enforced (surplus versions are
//! never written) and expired versions dropped.

use crate::constants::EXECUTE_OPS_MAX;
use crate::store::BatchOp;
use crate::table::catalog::CatalogTable;
use crate::table::error::{TableError, TableResult};
use crate::table::key::{
    decode_primary_key, encode_primary_key_named, encode_primary_key_refs, shard_key_prefix_len,
};
use crate::table::limits::{DURATION_SECONDS_MAX, ROW_BYTES_MAX};
use crate::table::request::*;
use crate::table::row::{decode_row, decode_row_into, encode_row, merge_row, split_row, FieldRef};
use crate::table::schema::TableSchema;
use crate::table::stored_row::{StoredRow, StoredVersion};
use crate::table::token::TokenSource;
use crate::table::value::Value;

/// A write whose input is checked and whose key is encoded.
#[derive(Debug)]
pub(crate) struct Prepared<'a> {
    pub op: &'a WriteOp<'a>,
    /// The stored key (table prefix + encoded primary key).
    pub key: Vec<u8>,
    /// The version to write (puts and updates).
    pub version: u64,
    /// The new version's expiry (0 never).
    pub expiry_ms: u64,
    /// A put's encoded row values (an update's depend on the current row).
    pub put_row: Option<Vec<u8>>,
}

impl Prepared<'_> {
    /// Length of the shard key prefix of the key (for execute's one-shard-key rule).
    pub fn shard_key_len(&self, schema: &TableSchema) -> TableResult<usize> {
        shard_key_prefix_len(schema, &self.key)
    }
}

/// Whether a write needs the current row: a condition, an update (merges with it), or a put into
/// a multi-version table (keeps its older versions).
pub(crate) fn needs_read(op: &WriteOp<'_>, schema: &TableSchema) -> bool {
    op.condition != Condition::Always
        || matches!(op.kind, WriteKind::Update { .. })
        || (matches!(op.kind, WriteKind::Put { .. }) && schema.options().max_versions > 1)
}

/// What to do with one write, given the current row.
#[derive(Debug)]
pub(crate) enum Plan {
    Write { op: BatchOp, outcome: WriteOutcome },
    Failed(WriteOutcome),
}

/// Checks `op` against the table and encodes its key and (for a put) its row.
pub(crate) fn prepare<'a>(
    table: &CatalogTable,
    op: &'a WriteOp<'a>,
    now_ms: u64,
) -> TableResult<Prepared<'a>> {
    let schema = table.schema();
    let (key, put_row) = match op.kind {
        WriteKind::Put { row } => {
            let (key_values, values) = split_row(schema, row)?;
            let key = encode_primary_key_refs(schema, &key_values)?;
            (key, Some(encode_row(schema, table.schema_version(), &values)?))
        }
        WriteKind::Update { key, set } => {
            if let Some((field, _)) = set.iter().find(|(f, _)| schema.key_position(f).is_some()) {
                let (table, field) = (schema.name().to_string(), (*field).to_owned());
                return Err(TableError::KeyFieldInUpdate { table, field });
            }
            let key = encode_primary_key_named(schema, key)?;
            merge_row(schema, &[], &updates(set))?;
            (key, None)
        }
        WriteKind::Delete { key } => (encode_primary_key_named(schema, key)?, None),
    };
    let version = match op.version {
        Some(v) => check_window(schema, v, now_ms)?,
        None => now_ms,
    };
    let expiry_ms = expiry(schema, op, version, now_ms)?;
    Ok(Prepared { op, key, version, expiry_ms, put_row })
}

/// Decides the write, given the row's current state (`None`: no record).
pub(crate) fn plan(
    table: &CatalogTable,
    p: &Prepared<'_>,
    current: Option<&StoredRow<&[u8]>>,
    now_ms: u64,
    tokens: &TokenSource,
) -> TableResult<Plan> {
    let schema = table.schema();
    let current = current.filter(|row| row.versions.iter().any(|v| !v.is_expired(now_ms)));
    let newest = current.and_then(|row| row.versions.iter().find(|v| !v.is_expired(now_ms)));
    let holds = match p.op.condition {
        Condition::Always => true,
        Condition::IfAbsent => current.is_none(),
        Condition::IfPresent => current.is_some(),
        Condition::IfVersion(token) => current.is_some_and(|row| RowToken(row.token) == token),
    };
    if !holds {
        let current = match (current, newest) {
            (Some(row), Some(v)) => Some(CurrentRow {
                token: RowToken(row.token),
                version: v.version,
                // Some whenever asked: the newest unexpired version is always picked.
                row: match p.op.return_row {
                    true => table_row(schema, &p.key, None, row, VersionSelect::Newest, now_ms)?,
                    false => None,
                },
            }),
            _ => None,
        };
        return Ok(Plan::Failed(WriteOutcome::ConditionFailed { current }));
    }
    let row_bytes = match p.op.kind {
        WriteKind::Delete { .. } => {
            let op = BatchOp::Delete { key: p.key.clone() };
            return Ok(Plan::Write {
                op,
                outcome: WriteOutcome::Deleted { existed: current.is_some() },
            });
        }
        WriteKind::Put { .. } => p.put_row.clone().expect("prepare encodes a put's row"),
        WriteKind::Update { set, .. } => {
            let base = match newest {
                Some(v) => decode_row(schema, v.row)?.values,
                None => Vec::new(),
            };
            encode_row(schema, table.schema_version(), &merge_row(schema, &base, &updates(set))?)?
        }
    };
    let kept = current.map(|row| row.versions.as_slice()).unwrap_or_default();
    let new = StoredVersion { version: p.version, expiry_ms: p.expiry_ms, row: row_bytes };
    let token = tokens.next(now_ms);
    let stored = versions_after_write(schema, kept, new, token.0, now_ms)?;
    let op = BatchOp::Put {
        key: p.key.clone(),
        value: stored.encode(),
        version: Some(stored.versions[0].version),
        expiry_ms: stored.record_expiry_ms(),
    };
    Ok(Plan::Write { op, outcome: WriteOutcome::Written { token, version: p.version } })
}

/// The row after writing `new`: on a single-version table `new` alone (the last write wins, as a
/// blind put does); otherwise the unexpired `kept` versions plus `new` (replacing a version equal
/// to it), newest first, at most `max_versions` of them, and the oldest dropped until the row fits
/// in [`ROW_BYTES_MAX`]. A `new` older than `max_versions` kept versions would never be read: it is
/// refused with [`TableError::VersionTooOld`] rather than reported as written.
pub(crate) fn versions_after_write(
    schema: &TableSchema,
    kept: &[StoredVersion<&[u8]>],
    new: StoredVersion,
    token: u64,
    now_ms: u64,
) -> TableResult<StoredRow> {
    let max = schema.options().max_versions as usize;
    if max == 1 {
        // One version: the last write wins whatever its version, as a blind put does.
        return fit(schema, StoredRow { token, versions: vec![new] });
    }
    let live: Vec<&StoredVersion<&[u8]>> =
        kept.iter().filter(|v| !v.is_expired(now_ms) && v.version != new.version).collect();
    if live.len() >= max && live[max - 1].version > new.version {
        let (table, version, oldest) = (table_name(schema), new.version, live[max - 1].version);
        return Err(TableError::VersionTooOld { table, version, kept: max, oldest });
    }
    let mut versions: Vec<StoredVersion> = Vec::with_capacity(max.min(kept.len() + 1));
    let new_v = new.version;
    let mut new = Some(new);
    for v in live {
        if new_v > v.version {
            versions.extend(new.take());
        }
        versions.push(StoredVersion {
            version: v.version,
            expiry_ms: v.expiry_ms,
            row: v.row.to_vec(),
        });
    }
    versions.extend(new);
    versions.truncate(max);
    fit(schema, StoredRow { token, versions })
}

/// Drops the oldest versions until the row fits in [`ROW_BYTES_MAX`]; a newest version that
/// does not fit alone is refused.
fn fit(schema: &TableSchema, mut row: StoredRow) -> TableResult<StoredRow> {
    while row.encoded_len() > ROW_BYTES_MAX && row.versions.len() > 1 {
        row.versions.pop();
    }
    if row.encoded_len() > ROW_BYTES_MAX {
        return Err(TableError::RowTooLarge {
            table: table_name(schema),
            bytes: row.encoded_len(),
        });
    }
    Ok(row)
}

/// Builds the row a read returns from a stored row: the versions `select` picks among the
/// unexpired ones, each with every schema field (key fields from `key`). None if none is picked.
pub(crate) fn table_row(
    schema: &TableSchema,
    key: &[u8],
    key_values: Option<&[&Value]>,
    stored: &StoredRow<&[u8]>,
    select: VersionSelect,
    now_ms: u64,
) -> TableResult<Option<TableRow>> {
    let (range, max) = select.bounds();
    // A row keeps the table's newest max_versions versions; after ALTER TABLE lowered it, older
    // ones stay stored until the row's next write but are not read.
    let kept = schema.options().max_versions as usize;
    let picked =
        stored.versions.iter().take(kept).filter(|v| v.is_readable(range, now_ms)).take(max);
    let mut picked = picked.peekable();
    if picked.peek().is_none() {
        return Ok(None);
    }
    // The key fields: the request's values when it gave them (a get), else decoded from the key.
    let mut key_fields: Vec<Option<Value>> = vec![None; schema.fields().len()];
    match key_values {
        Some(values) => {
            for (k, value) in schema.primary_key().iter().zip(values) {
                key_fields[k.field] = Some((*value).clone());
            }
        }
        None => {
            for (k, value) in schema.primary_key().iter().zip(decode_primary_key(schema, key)?) {
                key_fields[k.field] = Some(value);
            }
        }
    }
    let mut versions = Vec::with_capacity(1);
    while let Some(v) = picked.next() {
        // The last version picked takes the key fields; earlier ones get a copy.
        let mut fields = if picked.peek().is_some() {
            key_fields.clone()
        } else {
            std::mem::take(&mut key_fields)
        };
        decode_row_into(schema, v.row, &mut fields)?;
        versions.push(RowVersion { version: v.version, expiry_ms: v.expiry_ms, fields });
    }
    if versions.is_empty() {
        return Ok(None);
    }
    Ok(Some(TableRow { token: RowToken(stored.token), versions, key: key.to_vec() }))
}

/// Checks a version selection: at least one version, a non-empty range.
pub(crate) fn check_select(schema: &TableSchema, select: VersionSelect) -> TableResult<()> {
    let what = match select {
        VersionSelect::Latest(0) | VersionSelect::Range { max: 0, .. } => {
            "a read must ask for at least 1 version"
        }
        VersionSelect::Range { from, to, .. } if from >= to => {
            "the version range [from, to) is empty: from must be below to"
        }
        _ => return Ok(()),
    };
    Err(TableError::InvalidVersionSelect { table: table_name(schema), what })
}

/// Checks execute's size, one-shard-key and no-duplicate rules.
pub(crate) fn check_execute(schema: &TableSchema, prepared: &[Prepared<'_>]) -> TableResult<()> {
    if prepared.is_empty() || prepared.len() > EXECUTE_OPS_MAX {
        return Err(TableError::ExecuteSize { table: table_name(schema), ops: prepared.len() });
    }
    let first = &prepared[0].key[..prepared[0].shard_key_len(schema)?];
    let mut seen = ahash::AHashMap::with_capacity(prepared.len());
    for (index, p) in prepared.iter().enumerate() {
        if &p.key[..p.shard_key_len(schema)?] != first {
            return Err(TableError::ExecuteMixedShardKeys { table: table_name(schema), index });
        }
        if let Some(first) = seen.insert(p.key.as_slice(), index) {
            return Err(TableError::ExecuteDuplicateKey {
                table: table_name(schema),
                first,
                index,
            });
        }
    }
    Ok(())
}

fn updates<'u>(set: Updates<'u>) -> Vec<(FieldRef<'u>, Option<Value>)> {
    set.iter().map(|(name, value)| (FieldRef::Name(name), value.clone())).collect()
}

/// A client version must lie in `[now - offset, now + offset)`.
pub(crate) fn check_window(schema: &TableSchema, version: u64, now_ms: u64) -> TableResult<u64> {
    let offset_seconds = schema.options().max_version_offset_seconds;
    let offset_ms = offset_seconds * 1000;
    if version < now_ms.saturating_sub(offset_ms) || version >= now_ms.saturating_add(offset_ms) {
        let table = table_name(schema);
        return Err(TableError::VersionOutOfWindow { table, version, now_ms, offset_seconds });
    }
    Ok(version)
}

/// The expiry of a version: version + TTL (the write's, else the table's), 0 without a TTL.
/// Data that would already have expired is refused.
fn expiry(schema: &TableSchema, op: &WriteOp<'_>, version: u64, now_ms: u64) -> TableResult<u64> {
    let delete = matches!(op.kind, WriteKind::Delete { .. });
    expiry_of(schema, op.ttl_seconds, delete, version, now_ms)
}

/// [`expiry`] of a write's parts: its TTL option and whether it is a delete.
pub(crate) fn expiry_of(
    schema: &TableSchema,
    ttl_seconds: Option<u64>,
    delete: bool,
    version: u64,
    now_ms: u64,
) -> TableResult<u64> {
    if let Some(ttl) = ttl_seconds {
        if ttl == 0 || ttl > DURATION_SECONDS_MAX {
            return Err(TableError::InvalidOption {
                table: table_name(schema),
                option: "ttl_seconds",
                value: ttl,
                min: 1,
                max: DURATION_SECONDS_MAX,
            });
        }
    }
    let Some(ttl) = ttl_seconds.or(schema.options().ttl_seconds) else { return Ok(0) };
    if delete {
        return Ok(0);
    }
    let expiry_ms = version.saturating_add(ttl * 1000);
    if expiry_ms <= now_ms {
        let table = table_name(schema);
        return Err(TableError::ExpiredWrite { table, version, expiry_ms, now_ms });
    }
    Ok(expiry_ms)
}

fn table_name(schema: &TableSchema) -> String {
    schema.name().to_string()
}
