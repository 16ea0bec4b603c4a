//! The keys of secondary index entries (issue 15): the seed document's key-only view record
//! `/IDX/<index>/<field values>/-/<primary key>`, in bytes.
//!
//! ```text
//! entry key = index id (4 bytes, big-endian)
//!             ++ for each index field: mark (00 NULL, 01 a value) ++ the value, ASC
//!             ++ the row's stored key without its 4-byte table prefix
//! entry value = empty
//! ```
//!
//! Each value is encoded as a key field of its type is (`field.rs`), always ascending, and
//! BOOLEAN as one byte (00 false, 01 true). The mark puts a row without a value (NULL) before
//! every row with one, and keeps each field self-delimiting, so byte order of two entries of one
//! index is the order of their field tuples, then of their primary keys, and the entries with
//! given leading values are one byte prefix. FLOAT and DOUBLE values that keys refuse get a
//! place: -0.0 is 0.0 and every NaN is one NaN that sorts after +inf. `docs/FORMAT.md` ("Index
//! entries") draws the bytes.

use super::super::error::{TableError, TableResult};
use super::super::index_def::{IndexDef, IndexId};
use super::super::limits::{INDEX_PREFIX_BYTES, INDEX_VALUE_BYTES_MAX, TABLE_PREFIX_BYTES};
use super::super::schema::{Field, TableSchema};
use super::super::types::FieldType;
use super::super::value::{Value, ValueRef};
use super::corrupt::Corrupt;
use super::escape::{escape_into, unescape};
use super::field::{decode_typed, enum_index, f32_key, f64_key, SIGN_32, SIGN_64};
use super::range::{prefix_successor, FieldRange, KeyByteRange};
use crate::constants::KEY_BYTES_MAX;

/// The mark of an indexed field the row has no value for: sorts before every value.
pub const INDEX_NULL_MARK: u8 = 0x00;
/// The mark of an indexed field with a value, which follows it.
pub const INDEX_VALUE_MARK: u8 = 0x01;

/// The first bytes of every entry of index `id`.
pub fn index_prefix(id: IndexId) -> [u8; INDEX_PREFIX_BYTES] {
    id.0.to_be_bytes()
}

/// An index entry's key taken apart.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexEntry {
    /// One per index field, in index order; None for NULL.
    pub values: Vec<Option<Value>>,
    /// The row's stored key (table prefix and primary key).
    pub row_key: Vec<u8>,
}

/// The entry key of the row stored under `row_key` in index `def` of `schema`'s table.
/// `value_of(i)` is the row's value of field `i` of the schema (by field index; NULL when the
/// row has none). Refused: a STRING or BINARY value over [`INDEX_VALUE_BYTES_MAX`] (235), an
/// entry key over the store's [`KEY_BYTES_MAX`] (234), a value of the wrong type (205).
pub fn encode_index_entry<'v>(
    schema: &TableSchema,
    def: &IndexDef,
    row_key: &[u8],
    value_of: impl Fn(usize) -> ValueRef<'v>,
) -> TableResult<Vec<u8>> {
    debug_assert_eq!(row_key.get(..TABLE_PREFIX_BYTES), Some(&schema.id().0.to_be_bytes()[..]));
    let pk = &row_key[TABLE_PREFIX_BYTES..];
    let mut out = Vec::with_capacity(INDEX_PREFIX_BYTES + 16 * def.fields().len() + pk.len());
    out.extend_from_slice(&index_prefix(def.id()));
    for &field in def.fields() {
        encode_index_value(&mut out, schema, def, &schema.fields()[field], value_of(field))?;
    }
    out.extend_from_slice(pk);
    if out.len() > KEY_BYTES_MAX {
        return Err(TableError::IndexKeyTooLarge {
            table: schema.name().to_string(),
            index: def.name().to_string(),
            len: out.len(),
            max: KEY_BYTES_MAX,
        });
    }
    Ok(out)
}

/// Appends one indexed value: its mark, then (unless NULL) its ascending encoding.
pub(super) fn encode_index_value(
    out: &mut Vec<u8>,
    schema: &TableSchema,
    def: &IndexDef,
    field: &Field,
    value: ValueRef<'_>,
) -> TableResult<()> {
    if value == ValueRef::Null {
        out.push(INDEX_NULL_MARK);
        return Ok(());
    }
    out.push(INDEX_VALUE_MARK);
    match (field.ty(), value) {
        (FieldType::Integer, ValueRef::Integer(v)) => {
            out.extend((v as u32 ^ SIGN_32).to_be_bytes())
        }
        (FieldType::Long, ValueRef::Long(v)) | (FieldType::Timestamp, ValueRef::Timestamp(v)) => {
            out.extend((v as u64 ^ SIGN_64).to_be_bytes())
        }
        (FieldType::Float, ValueRef::Float(v)) => {
            out.extend(f32_key(if v.is_nan() { f32::NAN } else { v }).to_be_bytes())
        }
        (FieldType::Double, ValueRef::Double(v)) => {
            out.extend(f64_key(if v.is_nan() { f64::NAN } else { v }).to_be_bytes())
        }
        (FieldType::String, ValueRef::String(v)) => {
            escape_into(out, sized(schema, def, field, v.as_bytes())?)
        }
        (FieldType::Binary, ValueRef::Binary(v)) => escape_into(out, sized(schema, def, field, v)?),
        (FieldType::Boolean, ValueRef::Boolean(v)) => out.push(u8::from(v)),
        (FieldType::Enum(values), ValueRef::Enum(symbol)) => {
            out.extend(enum_index(schema, field, values, symbol)?.to_be_bytes())
        }
        (ty, value) => {
            return Err(TableError::TypeMismatch {
                table: schema.name().to_string(),
                field: field.name().to_string(),
                expected: ty.name(),
                got: value.type_name(),
            })
        }
    }
    Ok(())
}

fn sized<'a>(
    schema: &TableSchema,
    def: &IndexDef,
    field: &Field,
    bytes: &'a [u8],
) -> TableResult<&'a [u8]> {
    if bytes.len() > INDEX_VALUE_BYTES_MAX {
        return Err(TableError::IndexValueTooLarge {
            table: schema.name().to_string(),
            index: def.name().to_string(),
            field: field.name().to_string(),
            len: bytes.len(),
        });
    }
    Ok(bytes)
}

/// Takes an entry key of index `def` apart. Anything [`encode_index_entry`] could not have
/// written (another index's id, a bad mark, a bad value, a primary key that does not decode)
/// is [`TableError::CorruptKey`] (215), never a panic.
pub fn decode_index_entry(
    schema: &TableSchema,
    def: &IndexDef,
    entry: &[u8],
) -> TableResult<IndexEntry> {
    decode(schema, def, entry).map_err(|c| TableError::CorruptKey {
        table: schema.name().to_string(),
        offset: c.offset,
        what: c.what,
    })
}

fn decode(schema: &TableSchema, def: &IndexDef, entry: &[u8]) -> Result<IndexEntry, Corrupt> {
    if entry.get(..INDEX_PREFIX_BYTES) != Some(&index_prefix(def.id())[..]) {
        return Err(Corrupt { offset: 0, what: "index entry does not start with its index id" });
    }
    let mut pos = INDEX_PREFIX_BYTES;
    let mut values = Vec::with_capacity(def.fields().len());
    for &field in def.fields() {
        let mark = *entry
            .get(pos)
            .ok_or(Corrupt { offset: pos, what: "index entry ends before an indexed field" })?;
        pos += 1;
        match mark {
            INDEX_NULL_MARK => values.push(None),
            INDEX_VALUE_MARK => {
                let ty = schema.fields()[field].ty();
                let (value, next) = match ty {
                    FieldType::String | FieldType::Binary => {
                        let (raw, next) = unescape(entry, pos, 0)?;
                        (raw_value(ty, raw, pos)?, next)
                    }
                    _ => decode_typed(entry, pos, ty, 0, true)?,
                };
                values.push(Some(value));
                pos = next;
            }
            _ => return Err(Corrupt { offset: pos - 1, what: "index field mark is not 00 or 01" }),
        }
    }
    let mut row_key = Vec::with_capacity(TABLE_PREFIX_BYTES + entry.len() - pos);
    row_key.extend_from_slice(&schema.id().0.to_be_bytes());
    row_key.extend_from_slice(&entry[pos..]);
    if super::decode_primary_key(schema, &row_key).is_err() {
        return Err(Corrupt { offset: pos, what: "index entry's primary key does not decode" });
    }
    Ok(IndexEntry { values, row_key })
}

/// A STRING or BINARY value from its unescaped bytes, which an index entry holds at most
/// [`INDEX_VALUE_BYTES_MAX`] of.
fn raw_value(ty: &FieldType, raw: Vec<u8>, pos: usize) -> Result<Value, Corrupt> {
    if raw.len() > INDEX_VALUE_BYTES_MAX {
        return Err(Corrupt { offset: pos, what: "indexed value is over INDEX_VALUE_BYTES_MAX" });
    }
    match ty {
        FieldType::String => String::from_utf8(raw)
            .map(Value::String)
            .map_err(|_| Corrupt { offset: pos, what: "indexed STRING is not UTF-8" }),
        _ => Ok(Value::Binary(raw)),
    }
}

/// The byte range of the entries of index `def` whose first `equal.len()` fields equal `equal`
/// (None: NULL) and, with `range`, whose next field lies in it (a bounded side excludes NULL,
/// which sorts first; an open low side too, so `f < x` finds no NULLs). Without `range` every
/// entry under the equal values. Refused: more values than index fields, or a range after the
/// last field (237); a value of the wrong type (205).
pub fn index_key_range(
    schema: &TableSchema,
    def: &IndexDef,
    equal: &[Option<Value>],
    range: Option<&FieldRange>,
) -> TableResult<KeyByteRange> {
    let fields = def.fields();
    let next = equal.len() + usize::from(range.is_some());
    if next > fields.len() {
        let what = "it gives values or a range for more fields than the index has";
        return Err(bad_query(schema, def, what));
    }
    let mut p = index_prefix(def.id()).to_vec();
    for (value, &field) in equal.iter().zip(fields) {
        let value = value.as_ref().map_or(ValueRef::Null, ValueRef::from);
        encode_index_value(&mut p, schema, def, &schema.fields()[field], value)?;
    }
    let Some(range) = range else {
        let end = prefix_successor(&p);
        return Ok(KeyByteRange { start: p, end });
    };
    let field = &schema.fields()[fields[equal.len()]];
    let encode = |value: &Value| -> TableResult<Vec<u8>> {
        let mut key = p.clone();
        encode_index_value(&mut key, schema, def, field, ValueRef::from(value))?;
        Ok(key)
    };
    let start = match &range.start {
        None => Some([&p[..], &[INDEX_VALUE_MARK]].concat()),
        Some(b) if b.inclusive => Some(encode(&b.value)?),
        Some(b) => prefix_successor(&encode(&b.value)?),
    };
    let end = match &range.end {
        None => prefix_successor(&p),
        Some(b) if b.inclusive => prefix_successor(&encode(&b.value)?),
        Some(b) => Some(encode(&b.value)?),
    };
    Ok(match (start, end) {
        (None, _) => KeyByteRange { start: p.clone(), end: Some(p) },
        (Some(start), Some(end)) if end <= start => {
            KeyByteRange { end: Some(start.clone()), start }
        }
        (Some(start), end) => KeyByteRange { start, end },
    })
}

fn bad_query(schema: &TableSchema, def: &IndexDef, what: &'static str) -> TableError {
    TableError::BadIndexQuery {
        table: schema.name().to_string(),
        index: def.name().to_string(),
        fields: def.fields().len(),
        what,
    }
}
