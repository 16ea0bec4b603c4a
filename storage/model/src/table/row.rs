//! The compact, schema-versioned encoding of a row's non-key fields (issue 3).
//!
//! The primary key fields live in the store's byte key (`key.rs`); everything else is the stored
//! value, written here. A value starts with the schema version that wrote it (assigned by the
//! catalog) and the number of non-key fields that schema had, then a presence bitmap (a field may
//! be absent, i.e. NULL), then each present field in schema field order: fixed-width little-endian
//! numbers, one byte for BOOLEAN, ENUM as its `u16` index, STRING/BINARY as a LEB128 length and the
//! bytes. Because the field count is stored, a row written before fields were appended to the
//! schema decodes under the newer schema with the new fields absent, so adding a field never
//! rewrites data. Only appending is supported: dropping or reordering non-key fields would change
//! which field a stored position means. Decoding checks every length against the bytes left before
//! reading or allocating, so corrupt bytes give a [`TableError`], never a panic. `docs/FORMAT.md`
//! ("Row values") describes the bytes.

use super::error::{describe_enum_values, TableError, TableResult};
use super::limits::PRIMARY_KEY_FIELDS_MAX;
use super::schema::{Field, FieldRole, TableSchema};
use super::value::{Value, ValueRef};
use super::FieldType;

/// A decoded row value: the schema version that wrote it, and one entry per non-key field of the
/// schema it was decoded with (in [`non_key_fields`] order), `None` where the field is absent.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodedRow {
    pub schema_version: u32,
    pub values: Vec<Option<Value>>,
}

/// Names a field of a schema: by its index in [`TableSchema::fields`] or by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRef<'a> {
    Index(usize),
    Name(&'a str),
}

impl From<usize> for FieldRef<'_> {
    fn from(index: usize) -> Self {
        FieldRef::Index(index)
    }
}

impl<'a> From<&'a str> for FieldRef<'a> {
    fn from(name: &'a str) -> Self {
        FieldRef::Name(name)
    }
}

/// Indexes (into [`TableSchema::fields`]) of the fields that are not primary key fields, in
/// field order. Position `i` of this list is slot `i` of a row value.
pub fn non_key_fields(schema: &TableSchema) -> &[usize] {
    schema.non_key_fields()
}

/// Encodes a row's non-key fields: `values[i]` is slot `i` of [`non_key_fields`]. A shorter
/// slice leaves the remaining fields absent. Each value must have its field's type; NaN is
/// allowed (non-key fields have no order to break) and its bits are kept.
pub fn encode_row<V: std::borrow::Borrow<Value>>(
    schema: &TableSchema,
    schema_version: u32,
    values: &[Option<V>],
) -> TableResult<Vec<u8>> {
    let mut out = Vec::with_capacity(8 + non_key_fields(schema).len() * 9);
    let refs = values.iter().map(|v| v.as_ref().map(|v| ValueRef::from(v.borrow())));
    encode_row_into(&mut out, schema, schema_version, refs)?;
    Ok(out)
}

/// [`encode_row`] of borrowed values, appended to `out` (which a caller may reuse, so that
/// encoding allocates nothing). A NULL value is absent, like None.
pub fn encode_row_into<'v>(
    out: &mut Vec<u8>,
    schema: &TableSchema,
    schema_version: u32,
    values: impl ExactSizeIterator<Item = Option<ValueRef<'v>>>,
) -> TableResult<()> {
    let slots = non_key_fields(schema);
    if values.len() > slots.len() {
        return Err(unknown_field(schema, format!("(non-key slot {})", slots.len())));
    }
    put_varint(out, u64::from(schema_version));
    put_varint(out, slots.len() as u64);
    let bitmap_at = out.len();
    out.resize(bitmap_at + slots.len().div_ceil(8), 0);
    for (slot, value) in values.enumerate() {
        let Some(value) = value.filter(|v| *v != ValueRef::Null) else { continue };
        encode_value(out, schema, &schema.fields()[slots[slot]], value)?;
        out[bitmap_at + slot / 8] |= 1 << (slot % 8);
    }
    Ok(())
}

/// A full row given as (field name, value) pairs in any order, split with one name lookup per
/// pair: the key values in primary key order (every key field must be there) and the non-key
/// values by slot, all borrowed. An unknown field, or a field given twice, is refused. Types are
/// checked when the parts are encoded.
#[allow(clippy::type_complexity)]
pub fn split_row<'v>(
    schema: &TableSchema,
    pairs: &'v [(&str, Value)],
) -> TableResult<(Vec<&'v Value>, Vec<Option<&'v Value>>)> {
    let mut key: [Option<&Value>; PRIMARY_KEY_FIELDS_MAX] = [None; PRIMARY_KEY_FIELDS_MAX];
    let mut values: Vec<Option<&Value>> = vec![None; schema.non_key_fields().len()];
    for (field_name, value) in pairs {
        let twice = match schema.field_role(field_name) {
            None => return Err(unknown_field(schema, (*field_name).to_owned())),
            Some((_, FieldRole::Key(p))) => key[p].replace(value).is_some(),
            Some((_, FieldRole::Slot(slot))) => values[slot].replace(value).is_some(),
        };
        if twice {
            let (table, field) = (table(schema), (*field_name).to_owned());
            return Err(match schema.key_position(field_name) {
                Some(_) => TableError::DuplicateKeyValue { table, field },
                None => TableError::FieldGivenTwice { table, field },
            });
        }
    }
    let fields = schema.primary_key().len();
    let mut key_values = Vec::with_capacity(fields);
    for (position, value) in key[..fields].iter().enumerate() {
        match value {
            Some(value) => key_values.push(*value),
            None => {
                let field = schema.key_field(position).name().to_string();
                return Err(TableError::MissingKeyField { table: table(schema), field });
            }
        }
    }
    Ok((key_values, values))
}

/// Encodes a row given as (field, value) pairs in any order; fields not given are absent. A key
/// field or a field given twice is refused.
pub fn encode_row_fields(
    schema: &TableSchema,
    schema_version: u32,
    fields: &[(FieldRef<'_>, Value)],
) -> TableResult<Vec<u8>> {
    let updates: Vec<(FieldRef<'_>, Option<Value>)> =
        fields.iter().map(|(f, v)| (*f, Some(v.clone()))).collect();
    let values = merge_row(schema, &[], &updates)?;
    encode_row(schema, schema_version, &values)
}

/// The non-key values of an `update`: `base` (a decoded row's values, or `&[]` when the row does
/// not exist yet) with each field of `updates` set (`Some`) or cleared (`None`). The result has
/// one entry per non-key field, ready for [`encode_row`] with the current schema version.
pub fn merge_row(
    schema: &TableSchema,
    base: &[Option<Value>],
    updates: &[(FieldRef<'_>, Option<Value>)],
) -> TableResult<Vec<Option<Value>>> {
    let slots = non_key_fields(schema);
    if base.len() > slots.len() {
        return Err(unknown_field(schema, format!("(non-key slot {})", slots.len())));
    }
    let mut values = base.to_vec();
    values.resize(slots.len(), None);
    let mut seen = vec![false; slots.len()];
    for (field, value) in updates {
        let slot = slot_of(schema, slots, *field)?;
        let field = &schema.fields()[slots[slot]];
        if std::mem::replace(&mut seen[slot], true) {
            return Err(TableError::FieldGivenTwice { table: table(schema), field: name(field) });
        }
        if let Some(value) = value {
            check_value(schema, field, ValueRef::from(value))?;
        }
        values[slot].clone_from(value);
    }
    Ok(values)
}

/// Decodes a stored row value with `schema`, which must be the writer's schema or one that only
/// appended fields to it. Fields the writer did not know come back absent.
pub fn decode_row(schema: &TableSchema, bytes: &[u8]) -> TableResult<DecodedRow> {
    decode(schema, bytes).map_err(|c| TableError::CorruptRow {
        table: table(schema),
        offset: c.offset,
        what: c.what,
    })
}

fn decode(schema: &TableSchema, bytes: &[u8]) -> Result<DecodedRow, Corrupt> {
    let mut values = Vec::with_capacity(schema.non_key_fields().len());
    let schema_version = decode_with(schema, bytes, |_, value| values.push(value))?;
    Ok(DecodedRow { schema_version, values })
}

/// Decodes a stored row value straight into `fields` (one slot per schema field, by field
/// index), so a read builds one vector per row. Returns the writer's schema version.
pub fn decode_row_into(
    schema: &TableSchema,
    bytes: &[u8],
    fields: &mut [Option<Value>],
) -> TableResult<u32> {
    decode_with(schema, bytes, |index, value| fields[index] = value).map_err(|c| {
        TableError::CorruptRow { table: table(schema), offset: c.offset, what: c.what }
    })
}

/// Decodes a stored row value without copying it: `sink` gets each non-key field by field
/// index, in field order, borrowed from `bytes` (or, for ENUM, from the schema), NULL where
/// the row has no value. This is how a read answers from the record cache without allocating.
pub fn visit_row<'a>(
    schema: &'a TableSchema,
    bytes: &'a [u8],
    mut sink: impl FnMut(usize, ValueRef<'a>),
) -> TableResult<u32> {
    decode_refs(schema, bytes, |index, value| sink(index, value.unwrap_or(ValueRef::Null))).map_err(
        |c| TableError::CorruptRow { table: table(schema), offset: c.offset, what: c.what },
    )
}

/// Decodes a row value, handing each non-key field (by field index, in slot order) to `sink`.
fn decode_with(
    schema: &TableSchema,
    bytes: &[u8],
    mut sink: impl FnMut(usize, Option<Value>),
) -> Result<u32, Corrupt> {
    decode_refs(schema, bytes, |index, value| {
        sink(index, value.map(|v| v.to_value().expect("a stored field is never NULL")))
    })
}

/// [`decode_with`] of borrowed values.
fn decode_refs<'a>(
    schema: &'a TableSchema,
    bytes: &'a [u8],
    mut sink: impl FnMut(usize, Option<ValueRef<'a>>),
) -> Result<u32, Corrupt> {
    let mut r = Reader { bytes, pos: 0 };
    let version = r.varint("row value: truncated schema version")?;
    let schema_version = u32::try_from(version).map_err(|_| r.corrupt("row value: version"))?;
    let slots = non_key_fields(schema);
    let count = r.varint("row value: truncated field count")?;
    let count = match usize::try_from(count) {
        Ok(count) if count <= slots.len() => count,
        _ => return Err(r.corrupt("row value: more fields than the schema (newer writer?)")),
    };
    let bitmap = r.take(count.div_ceil(8), "row value: truncated presence bitmap")?;
    check_spare_bits(bitmap, count).map_err(|()| r.corrupt("row value: spare bitmap bits"))?;
    for (slot, &index) in slots.iter().enumerate() {
        let present = slot < count && bitmap[slot / 8] & (1 << (slot % 8)) != 0;
        let value = if present { Some(r.value_ref(schema.fields()[index].ty())?) } else { None };
        sink(index, value);
    }
    if r.pos != bytes.len() {
        return Err(r.corrupt("row value: bytes after the last field"));
    }
    Ok(schema_version)
}

/// Bits past `count` in the last bitmap byte must be zero, so each row has one encoding.
fn check_spare_bits(bitmap: &[u8], count: usize) -> Result<(), ()> {
    let used = count % 8;
    match bitmap.last() {
        Some(&last) if used != 0 && last >> used != 0 => Err(()),
        _ => Ok(()),
    }
}

fn encode_value(
    out: &mut Vec<u8>,
    schema: &TableSchema,
    field: &Field,
    value: ValueRef<'_>,
) -> TableResult<()> {
    check_value(schema, field, value)?;
    match value {
        ValueRef::Null => {}
        ValueRef::Integer(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Long(v) | ValueRef::Timestamp(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Float(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Double(v) => out.extend_from_slice(&v.to_le_bytes()),
        ValueRef::Boolean(v) => out.push(u8::from(v)),
        ValueRef::String(s) => put_bytes(out, s.as_bytes()),
        ValueRef::Binary(b) => put_bytes(out, b),
        ValueRef::Enum(s) => out.extend_from_slice(&enum_index(schema, field, s)?.to_le_bytes()),
    }
    Ok(())
}

/// Checks that `value` may be stored in `field`: same type, and for ENUM a listed value.
fn check_value(schema: &TableSchema, field: &Field, value: ValueRef<'_>) -> TableResult<()> {
    if value.type_name() != field.ty().name() {
        return Err(TableError::TypeMismatch {
            table: table(schema),
            field: name(field),
            expected: field.ty().name(),
            got: value.type_name(),
        });
    }
    if let ValueRef::Enum(symbol) = value {
        enum_index(schema, field, symbol)?;
    }
    Ok(())
}

fn enum_index(schema: &TableSchema, field: &Field, symbol: &str) -> TableResult<u16> {
    let FieldType::Enum(values) = field.ty() else {
        unreachable!("check_value matched an ENUM value with an ENUM field")
    };
    let not_listed = || TableError::EnumValueNotInList {
        table: table(schema),
        field: name(field),
        value: symbol.to_owned(),
        allowed: describe_enum_values(values),
    };
    let index = field.ty().enum_index(symbol).ok_or_else(not_listed)?;
    Ok(u16::try_from(index).expect("the schema builder caps ENUM types at 65,536 values"))
}

/// The row slot of `field`. A key field is refused as given twice: its value is in the key.
fn slot_of(schema: &TableSchema, slots: &[usize], field: FieldRef<'_>) -> TableResult<usize> {
    let index = match field {
        FieldRef::Index(i) if i < schema.fields().len() => i,
        FieldRef::Index(i) => return Err(unknown_field(schema, format!("(field index {i})"))),
        FieldRef::Name(n) => schema.field(n).ok_or_else(|| unknown_field(schema, n.into()))?.0,
    };
    slots.iter().position(|&f| f == index).ok_or_else(|| TableError::DuplicateKeyValue {
        table: table(schema),
        field: name(&schema.fields()[index]),
    })
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Unsigned LEB128: 7 bits per byte, least significant first, high bit set on all but the last.
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn table(schema: &TableSchema) -> String {
    schema.name().to_string()
}

fn name(field: &Field) -> String {
    field.name().to_string()
}

fn unknown_field(schema: &TableSchema, field: String) -> TableError {
    TableError::UnknownField { table: table(schema), field }
}

/// Where and why a row value cannot be decoded.
#[derive(Debug)]
struct Corrupt {
    offset: usize,
    what: &'static str,
}

/// A cursor over untrusted bytes: every read checks the bytes left first.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn corrupt(&self, what: &'static str) -> Corrupt {
        Corrupt { offset: self.pos, what }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Corrupt> {
        let end = self.pos.checked_add(n).filter(|&end| end <= self.bytes.len());
        let end = end.ok_or_else(|| self.corrupt(what))?;
        let taken = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Corrupt> {
        let bytes = self.take(N, "row value: ends inside a fixed-width field")?;
        let mut array = [0; N];
        array.copy_from_slice(bytes);
        Ok(array)
    }

    /// Reads a LEB128 `u64`, refusing overflow and needless trailing zero groups so each number
    /// has one encoding.
    fn varint(&mut self, truncated: &'static str) -> Result<u64, Corrupt> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = self.take(1, truncated)?[0];
            let group = u64::from(byte & 0x7F);
            if (shift == 63 && group > 1) || (shift > 0 && byte == 0) {
                return Err(self.corrupt("row value: overlong or overflowing varint"));
            }
            v |= group << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.corrupt("row value: varint longer than 10 bytes"))
    }

    fn bytes(&mut self) -> Result<&'a [u8], Corrupt> {
        let len = self.varint("row value: truncated length")?;
        let len = usize::try_from(len).map_err(|_| self.corrupt("row value: length too large"))?;
        self.take(len, "row value: length runs past the end")
    }

    /// A field value borrowed from the bytes (and, for ENUM, from the schema's symbols).
    fn value_ref<'s>(&mut self, ty: &'s FieldType) -> Result<ValueRef<'s>, Corrupt>
    where
        'a: 's,
    {
        Ok(match ty {
            FieldType::Integer => ValueRef::Integer(i32::from_le_bytes(self.array()?)),
            FieldType::Long => ValueRef::Long(i64::from_le_bytes(self.array()?)),
            FieldType::Timestamp => ValueRef::Timestamp(i64::from_le_bytes(self.array()?)),
            FieldType::Float => ValueRef::Float(f32::from_le_bytes(self.array()?)),
            FieldType::Double => ValueRef::Double(f64::from_le_bytes(self.array()?)),
            FieldType::Boolean => ValueRef::Boolean(self.boolean()?),
            FieldType::String => ValueRef::String(self.string()?),
            FieldType::Binary => ValueRef::Binary(self.bytes()?),
            FieldType::Enum(values) => ValueRef::Enum(self.symbol(values)?),
        })
    }

    fn boolean(&mut self) -> Result<bool, Corrupt> {
        match self.array::<1>()? {
            [0] => Ok(false),
            [1] => Ok(true),
            _ => Err(self.corrupt("row value: BOOLEAN byte is not 0 or 1")),
        }
    }

    fn string(&mut self) -> Result<&'a str, Corrupt> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|_| self.corrupt("row value: bad UTF-8"))
    }

    fn symbol<'s>(&mut self, values: &'s [String]) -> Result<&'s str, Corrupt> {
        let index = usize::from(u16::from_le_bytes(self.array()?));
        let symbol = values.get(index).ok_or_else(|| self.corrupt("row value: ENUM index"))?;
        Ok(symbol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn varints_round_trip_and_refuse_overlong_forms() {
        for v in [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX] {
            let bytes = varint(v);
            let mut r = Reader { bytes: &bytes, pos: 0 };
            assert_eq!(r.varint("t").map_err(|c| c.what), Ok(v));
            assert_eq!(r.pos, bytes.len());
        }
        assert_eq!(varint(300), [0xAC, 0x02]);
        for bad in [&[0x80, 0x00][..], &[0xFF; 10], &[0xFF; 11], &[0x80]] {
            assert!(Reader { bytes: bad, pos: 0 }.varint("t").is_err(), "{bad:?}");
        }
    }

    #[test]
    fn spare_bitmap_bits_must_be_zero() {
        assert_eq!(check_spare_bits(&[0b0000_0111], 3), Ok(()));
        assert_eq!(check_spare_bits(&[0b0000_1111], 3), Err(()));
        assert_eq!(check_spare_bits(&[0xFF], 8), Ok(()));
        assert_eq!(check_spare_bits(&[], 0), Ok(()));
    }
}
