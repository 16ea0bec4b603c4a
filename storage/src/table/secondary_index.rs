//! Keeping secondary indexes up to date (issue 15): the index operations of a row write, which
//! go into the same atomic store batch as the row itself.
//!
//! A row's entry in an index is a key-only record (`key/index.rs` of `ringstore-model`: index
//! id, the row's indexed values, its primary key; an empty value), written with the row's
//! record expiry, so an entry is visible exactly as long as its row's record is. The values
//! indexed are those of the row's newest stored version. A write of a row to a table with
//! indexes is always a read-modify-write (`table_store.rs`): the current row gives the entries
//! to remove, the new row the entries to add, and both go into the one batch that writes the
//! row, so the log holds the row and its entries in one atomic record group and one flush, and
//! no reader ever sees a row without its entries or an entry of a row that changed.
//!
//! Only BUILDING and READY indexes are maintained; a DELETING index's entries are being removed
//! with one range delete over its prefix.

use crate::constants::BATCH_OPS_MAX;
use crate::store::{BatchOp, Value};
use crate::table::catalog::CatalogTable;
use crate::table::error::{TableError, TableResult};
use crate::table::index_def::IndexDef;
use crate::table::key::{decode_primary_key, encode_index_entry};
use crate::table::row::visit_row;
use crate::table::stored_row::StoredRow;
use crate::table::value::ValueRef;

/// The entry keys of the row stored under `key` as `row`, one per index of `indexes` (in that
/// order): its newest version's values, NULL where it has none. The outer error is the row's
/// (it does not decode), each inner one an index's (a value over its limits).
pub(crate) fn entry_keys<'i>(
    t: &CatalogTable,
    indexes: impl Iterator<Item = &'i IndexDef>,
    key: &[u8],
    row: &StoredRow<&[u8]>,
) -> TableResult<Vec<TableResult<Vec<u8>>>> {
    let schema = t.schema();
    let key_values = decode_primary_key(schema, key)?;
    let mut values = vec![ValueRef::Null; schema.fields().len()];
    for (k, value) in schema.primary_key().iter().zip(&key_values) {
        values[k.field] = ValueRef::from(value);
    }
    let newest = row.versions.first().map_or(&[][..], |v| v.row);
    if !newest.is_empty() {
        visit_row(schema, newest, |field, value| values[field] = value)?;
    }
    Ok(indexes.map(|def| encode_index_entry(schema, def, key, |f| values[f])).collect())
}

/// The indexes of `t` that writes keep up to date: BUILDING and READY ones.
pub(crate) fn maintained(t: &CatalogTable) -> impl Iterator<Item = &IndexDef> + Clone + '_ {
    t.indexes().iter().filter(|i| i.state().is_maintained())
}

/// Appends to `out` the index operations of the write of the row under `key` from `old` to `new`
/// (None: no row): for each maintained index, the old entry's delete and the new entry's put,
/// or only a put when the entry stays and its expiry changes, or nothing when both stay. An old
/// entry that cannot be encoded (a value over the index's limits, written before the index was
/// made) was never written, so it is not deleted; a new one that cannot be encoded refuses the
/// write (234, 235).
pub(crate) fn index_ops(
    t: &CatalogTable,
    key: &[u8],
    old: Option<&StoredRow<&[u8]>>,
    new: Option<&StoredRow<&[u8]>>,
    out: &mut Vec<BatchOp>,
) -> TableResult<()> {
    let indexes = maintained(t);
    let count = indexes.clone().count();
    if count == 0 {
        return Ok(());
    }
    let old_keys: Vec<Option<Vec<u8>>> = match old {
        Some(row) => match entry_keys(t, indexes.clone(), key, row) {
            Ok(keys) => keys.into_iter().map(Result::ok).collect(),
            Err(_) => Vec::new(),
        },
        None => Vec::new(),
    };
    let new_keys: Vec<Vec<u8>> = match new {
        Some(row) => entry_keys(t, indexes, key, row)?.into_iter().collect::<TableResult<_>>()?,
        None => Vec::new(),
    };
    let old_expiry = old.map(StoredRow::record_expiry_ms);
    for i in 0..count {
        let (before, after) = (old_keys.get(i).and_then(Option::as_ref), new_keys.get(i));
        if let (Some(before), Some(_)) = (before, after) {
            if Some(before) == after && old_expiry == new.map(StoredRow::record_expiry_ms) {
                continue;
            }
        }
        if let Some(before) = before.filter(|b| Some(*b) != after) {
            out.push(BatchOp::Delete { key: before.clone() });
        }
        if let (Some(after), Some(row)) = (after, new) {
            out.push(BatchOp::Put {
                key: after.clone(),
                value: Vec::new(),
                version: row.versions.first().map(|v| v.version),
                expiry_ms: row.record_expiry_ms(),
            });
        }
    }
    Ok(())
}

/// Adds to `batch` (the row writes of one read-modify-write) the index operations of each row
/// write: `olds[i]` is the record that `batch[i]` replaces (None: none). Refused, writing
/// nothing, when the whole no longer fits one store batch ([`BATCH_OPS_MAX`], 233).
pub(crate) fn extend_batch(
    t: &CatalogTable,
    batch: &mut Vec<BatchOp>,
    olds: &[Option<Value>],
) -> TableResult<()> {
    let schema = t.schema();
    let mut ops = Vec::new();
    for (op, old) in batch.iter().zip(olds) {
        let (key, new) = match op {
            BatchOp::Put { key, value, .. } => (key, Some(StoredRow::decode(schema, value)?)),
            BatchOp::Delete { key } => (key, None),
        };
        let old = old.as_ref().map(|v| StoredRow::decode(schema, &v.value)).transpose()?;
        index_ops(t, key, old.as_ref(), new.as_ref(), &mut ops)?;
    }
    check_batch_len(t, batch.len() + ops.len())?;
    batch.extend(ops);
    Ok(())
}

/// Refuses a write of `t` that, with its index entries, needs `ops` store operations in one
/// batch, over [`BATCH_OPS_MAX`].
pub(crate) fn check_batch_len(t: &CatalogTable, ops: usize) -> TableResult<()> {
    if ops > BATCH_OPS_MAX {
        return Err(TableError::IndexedWriteTooLarge {
            table: t.schema().name().to_string(),
            indexes: maintained(t).count(),
            ops,
            max: BATCH_OPS_MAX,
        });
    }
    Ok(())
}
