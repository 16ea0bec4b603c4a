//! Keys given as (field name, value) pairs in any order, as a client or a DDL-level API sends
//! them. They are put into primary key order here, which is where a missing field, an unknown or
//! non-key field, a repeated field, and a partial key that skips a field are caught.

use super::super::error::{TableError, TableResult};
use super::super::limits::PRIMARY_KEY_FIELDS_MAX;
use super::super::schema::TableSchema;
use super::super::value::Value;
use super::super::value::ValueRef;
use super::field::encode_key_value;
use super::{check_len, encode_values, table_prefix};

/// Encodes a full primary key given by field name; every key field must be present.
pub fn encode_primary_key_named(
    schema: &TableSchema,
    pairs: &[(&str, Value)],
) -> TableResult<Vec<u8>> {
    encode_values(schema, primary_key_values(schema, pairs)?.into_iter())
}

/// The values of a full primary key given by field name, in primary key order; every key field
/// must be present.
pub fn primary_key_values<'v>(
    schema: &TableSchema,
    pairs: &'v [(&str, Value)],
) -> TableResult<Vec<&'v Value>> {
    let slots = slots(schema, pairs.iter().map(|(n, v)| (*n, v)))?;
    check_full(schema, &slots)?;
    Ok(in_order(&slots[..schema.primary_key().len()]).collect())
}

/// Encodes a partial key given by field name; the fields given must be a leading prefix of the
/// primary key.
pub fn encode_partial_key_named(
    schema: &TableSchema,
    pairs: &[(&str, Value)],
) -> TableResult<Vec<u8>> {
    encode_values(schema, partial_key_values(schema, pairs)?.into_iter())
}

/// The values of a partial key given by field name, in primary key order, checked the way
/// [`encode_partial_key_named`] checks them (for [`super::key_range`], which takes values).
pub fn partial_key_values<'v>(
    schema: &TableSchema,
    pairs: &'v [(&str, Value)],
) -> TableResult<Vec<&'v Value>> {
    let slots = slots(schema, pairs.iter().map(|(n, v)| (*n, v)))?;
    let given = slots.iter().take_while(|s| s.is_some()).count();
    if let Some(skipped_to) = (given..schema.primary_key().len()).find(|&p| slots[p].is_some()) {
        return Err(TableError::PartialKeyNotPrefix {
            table: table(schema),
            field: schema.key_field(skipped_to).name().to_string(),
            missing: schema.key_field(given).name().to_string(),
        });
    }
    Ok(in_order(&slots[..given]).collect())
}

/// Encodes a full primary key given by field name, with borrowed values, into `out` (cleared
/// first; a buffer reused across requests makes this allocation-free). NULL values count as
/// absent. Returns the values by key position (every key field is Some) and the length of the
/// encoded shard key, the prefix of `out` that the partition hash hashes.
pub fn encode_primary_key_into<'n, 'v>(
    schema: &TableSchema,
    pairs: impl IntoIterator<Item = (&'n str, ValueRef<'v>)>,
    out: &mut Vec<u8>,
) -> TableResult<([Option<ValueRef<'v>>; PRIMARY_KEY_FIELDS_MAX], usize)> {
    let present = pairs.into_iter().filter(|(_, v)| *v != ValueRef::Null);
    let slots = slots(schema, present)?;
    let shard_key_len = encode_primary_key_fields(schema, &slots, out)?;
    Ok((slots, shard_key_len))
}

/// The values of a full primary key given by field name, with borrowed values, by key position
/// (every key field Some), checked as [`encode_primary_key_into`] checks them, without encoding
/// the key: for a caller that encoded it before.
pub fn primary_key_refs<'n, 'v>(
    schema: &TableSchema,
    pairs: impl IntoIterator<Item = (&'n str, ValueRef<'v>)>,
) -> TableResult<[Option<ValueRef<'v>>; PRIMARY_KEY_FIELDS_MAX]> {
    let slots = slots(schema, pairs.into_iter().filter(|(_, v)| *v != ValueRef::Null))?;
    check_full(schema, &slots)?;
    Ok(slots)
}

/// Encodes a full primary key given by key position into `out` (cleared first); every key
/// field must be Some. Returns the length of the encoded shard key, the prefix of `out` that
/// the partition hash hashes.
pub fn encode_primary_key_fields(
    schema: &TableSchema,
    slots: &[Option<ValueRef<'_>>; PRIMARY_KEY_FIELDS_MAX],
    out: &mut Vec<u8>,
) -> TableResult<usize> {
    check_full(schema, slots)?;
    let fields = schema.primary_key().len();
    out.clear();
    out.extend_from_slice(&table_prefix(schema.id()));
    let mut shard_key_len = out.len();
    for (position, value) in slots[..fields].iter().flatten().enumerate() {
        encode_key_value(out, schema, position, *value)?;
        if position + 1 == schema.shard_key_len() {
            shard_key_len = out.len();
        }
    }
    check_len(schema, out)?;
    Ok(shard_key_len)
}

/// Fails with the first key field `slots` lacks.
fn check_full<V>(
    schema: &TableSchema,
    slots: &[Option<V>; PRIMARY_KEY_FIELDS_MAX],
) -> TableResult<()> {
    let fields = schema.primary_key().len();
    match (0..fields).find(|&p| slots[p].is_none()) {
        Some(missing) => {
            let (table, field) = (table(schema), schema.key_field(missing).name().to_string());
            Err(TableError::MissingKeyField { table, field })
        }
        None => Ok(()),
    }
}

/// The given values by key position.
fn slots<'n, V: Copy>(
    schema: &TableSchema,
    pairs: impl IntoIterator<Item = (&'n str, V)>,
) -> TableResult<[Option<V>; PRIMARY_KEY_FIELDS_MAX]> {
    let mut slots = [None; PRIMARY_KEY_FIELDS_MAX];
    for (name, value) in pairs {
        let position = position(schema, name)?;
        if slots[position].replace(value).is_some() {
            return Err(TableError::DuplicateKeyValue {
                table: table(schema),
                field: (*name).to_owned(),
            });
        }
    }
    Ok(slots)
}

/// The values of slots that are all filled, in key order.
fn in_order<'a>(slots: &[Option<&'a Value>]) -> std::vec::IntoIter<&'a Value> {
    slots.iter().flatten().copied().collect::<Vec<_>>().into_iter()
}

fn position(schema: &TableSchema, name: &str) -> TableResult<usize> {
    if let Some(position) = schema.key_position(name) {
        return Ok(position);
    }
    let field = name.to_owned();
    match schema.field(name) {
        Some(_) => Err(TableError::NotAKeyField { table: table(schema), field }),
        None => Err(TableError::UnknownField { table: table(schema), field }),
    }
}

fn table(schema: &TableSchema) -> String {
    schema.name().to_string()
}
