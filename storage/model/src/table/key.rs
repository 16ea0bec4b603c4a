//! The order-preserving (memcomparable) encoding of primary keys into the store's byte keys.
//!
//! A stored key is the table prefix (the [`TableId`] as 4 big-endian bytes, so tables never mix)
//! followed by each key field in primary key order, each encoded by `key/field.rs` and, when DESC,
//! inverted. Byte order of two keys of one table equals the order of their key tuples (DESC fields
//! reversed), so a partial key is a byte prefix of every key that extends it, and a range on the
//! next field is a byte range (`key/range.rs`). `docs/FORMAT.md` ("Table keys") is the byte-level
//! description; this module and that section change together. `key/index.rs` encodes the keys
//! of secondary index entries from the same parts ("Index entries" in `docs/FORMAT.md`).

mod corrupt;
mod escape;
mod field;
mod index;
mod named;
mod range;

pub use index::{
    decode_index_entry, encode_index_entry, index_key_range, index_prefix, IndexEntry,
    INDEX_NULL_MARK, INDEX_VALUE_MARK,
};
pub use named::{
    encode_partial_key_named, encode_primary_key_fields, encode_primary_key_into,
    encode_primary_key_named, partial_key_values, primary_key_refs, primary_key_values,
};
pub use range::{key_range, prefix_successor, FieldRange, KeyByteRange, RangeBound};

use super::error::{TableError, TableResult};
use super::limits::{ENCODED_KEY_BYTES_MAX, TABLE_PREFIX_BYTES};
use super::schema::{TableId, TableSchema};
use super::value::Value;
use corrupt::Corrupt;
use field::{decode_key_value, encode_key_value};

/// The first bytes of every stored key of table `id`.
pub fn table_prefix(id: TableId) -> [u8; TABLE_PREFIX_BYTES] {
    id.0.to_be_bytes()
}

/// Encodes a full primary key: one value per key field, in primary key order.
pub fn encode_primary_key(schema: &TableSchema, values: &[Value]) -> TableResult<Vec<u8>> {
    if let Some(missing) = (values.len() < schema.primary_key().len()).then_some(values.len()) {
        return Err(missing_field(schema, missing));
    }
    encode_values(schema, values.iter())
}

/// [`encode_primary_key`] of borrowed values.
pub fn encode_primary_key_refs(schema: &TableSchema, values: &[&Value]) -> TableResult<Vec<u8>> {
    if let Some(missing) = (values.len() < schema.primary_key().len()).then_some(values.len()) {
        return Err(missing_field(schema, missing));
    }
    encode_values(schema, values.iter().copied())
}

/// Encodes a partial key: values for the first `values.len()` key fields (0 gives the table
/// prefix alone). The result is a byte prefix of every full key that starts with these values.
pub fn encode_partial_key(schema: &TableSchema, values: &[Value]) -> TableResult<Vec<u8>> {
    encode_values(schema, values.iter())
}

/// Encodes the shard key: the table prefix and the first [`TableSchema::shard_key_len`] key fields
/// of `values` (a full key or a partial key that covers the shard key; later values are not read).
/// This is a byte prefix of the stored key, and it is what the partition hash hashes.
pub fn encode_shard_key(schema: &TableSchema, values: &[Value]) -> TableResult<Vec<u8>> {
    let shard_fields = schema.shard_key_len();
    if values.len() < shard_fields {
        return Err(missing_field(schema, values.len()));
    }
    encode_values(schema, values[..shard_fields].iter())
}

/// Length of the shard key prefix of a stored full key, so a partition can be found from a stored
/// key alone (by compaction, index builds or partition moves).
pub fn shard_key_prefix_len(schema: &TableSchema, key: &[u8]) -> TableResult<usize> {
    let mut pos = check_table(schema, key)?;
    for position in 0..schema.shard_key_len() {
        pos = decode_key_value(key, pos, schema, position).map_err(|c| corrupt(schema, c))?.1;
    }
    Ok(pos)
}

/// Decodes a stored full key back into its key values. Anything the encoder could not have
/// written (a wrong table, truncation, bad escapes, trailing bytes, NaN) is an error, never a
/// panic, so decoding then encoding gives back the same bytes.
pub fn decode_primary_key(schema: &TableSchema, key: &[u8]) -> TableResult<Vec<Value>> {
    let mut pos = check_table(schema, key)?;
    if key.len() - TABLE_PREFIX_BYTES > ENCODED_KEY_BYTES_MAX {
        let what = "key is longer than ENCODED_KEY_BYTES_MAX";
        return Err(corrupt(
            schema,
            Corrupt { offset: TABLE_PREFIX_BYTES + ENCODED_KEY_BYTES_MAX, what },
        ));
    }
    let mut values = Vec::with_capacity(schema.primary_key().len());
    for position in 0..schema.primary_key().len() {
        let (value, next) =
            decode_key_value(key, pos, schema, position).map_err(|c| corrupt(schema, c))?;
        values.push(value);
        pos = next;
    }
    if pos != key.len() {
        return Err(corrupt(
            schema,
            Corrupt { offset: pos, what: "bytes after the last key field" },
        ));
    }
    Ok(values)
}

/// Encodes a leading prefix of key values (in key order) after the table prefix.
fn encode_values<'a>(
    schema: &TableSchema,
    values: impl ExactSizeIterator<Item = &'a Value> + Clone,
) -> TableResult<Vec<u8>> {
    let fields = schema.primary_key().len();
    if values.len() > fields {
        let (table, given) = (schema.name().to_string(), values.len());
        return Err(TableError::TooManyKeyValues { table, given, fields });
    }
    // Room for every field without growing (fixed widths, or bytes plus escapes and end mark),
    // never more than the largest key: a value over the limit is refused below, unallocated.
    let size = |v: &Value| match v {
        Value::String(s) => s.len() + s.len() / 8 + 2,
        Value::Binary(b) => b.len() + b.len() / 8 + 2,
        _ => 9,
    };
    let mut out = Vec::with_capacity(TABLE_PREFIX_BYTES + values.clone().map(size).sum::<usize>());
    out.extend_from_slice(&table_prefix(schema.id()));
    for (position, value) in values.enumerate() {
        encode_key_value(&mut out, schema, position, value)?;
    }
    check_len(schema, &out)?;
    Ok(out)
}

/// Refuses an encoded key (or key prefix) whose fields pass [`ENCODED_KEY_BYTES_MAX`].
fn check_len(schema: &TableSchema, key: &[u8]) -> TableResult<()> {
    let len = key.len() - TABLE_PREFIX_BYTES;
    if len > ENCODED_KEY_BYTES_MAX {
        return Err(TableError::KeyTooLarge { table: schema.name().to_string(), len });
    }
    Ok(())
}

/// Checks the table prefix of a stored key; returns where the key fields start.
fn check_table(schema: &TableSchema, key: &[u8]) -> TableResult<usize> {
    let Some(prefix) = key.first_chunk::<TABLE_PREFIX_BYTES>() else {
        return Err(corrupt(
            schema,
            Corrupt { offset: key.len(), what: "key is shorter than the table prefix" },
        ));
    };
    let found = u32::from_be_bytes(*prefix);
    if found != schema.id().0 {
        let (table, expected) = (schema.name().to_string(), schema.id().0);
        return Err(TableError::KeyOfOtherTable { table, expected, found });
    }
    Ok(TABLE_PREFIX_BYTES)
}

fn missing_field(schema: &TableSchema, position: usize) -> TableError {
    let (table, field) = (schema.name().to_string(), schema.key_field(position).name().to_string());
    TableError::MissingKeyField { table, field }
}

fn corrupt(schema: &TableSchema, c: Corrupt) -> TableError {
    TableError::CorruptKey { table: schema.name().to_string(), offset: c.offset, what: c.what }
}
