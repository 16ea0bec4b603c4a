//! Encoding and decoding of one key field value, order-preserving, per type.
//!
//! Every encoding here is memcomparable (byte order equals value order) and self-delimiting (no
//! field's encoding is a proper prefix of another value's), which is what lets fields be
//! concatenated into a key whose byte order is the tuple order. A DESC field is the ASC encoding
//! with every byte inverted, which reverses the order of self-delimiting encodings.
//! `docs/FORMAT.md` ("Table keys") draws each type byte by byte.

use super::super::error::{describe_enum_values, TableError, TableResult};
use super::super::limits::KEY_FIELD_BYTES_MAX;
use super::super::schema::{Field, TableSchema};
use super::super::types::FieldType;
use super::super::value::{Value, ValueRef};
use super::corrupt::Corrupt;
use super::escape::{escape_into, unescape};

pub(super) const SIGN_32: u32 = 1 << 31;
pub(super) const SIGN_64: u64 = 1 << 63;

/// Appends the encoding of `value` as primary key field `position` of `schema`.
pub(super) fn encode_key_value<'v>(
    out: &mut Vec<u8>,
    schema: &TableSchema,
    position: usize,
    value: impl Into<ValueRef<'v>>,
) -> TableResult<()> {
    let start = out.len();
    encode_asc(out, schema, schema.key_field(position), value.into())?;
    if schema.primary_key()[position].desc {
        out[start..].iter_mut().for_each(|b| *b = !*b);
    }
    Ok(())
}

fn encode_asc(
    out: &mut Vec<u8>,
    schema: &TableSchema,
    field: &Field,
    value: ValueRef<'_>,
) -> TableResult<()> {
    match (field.ty(), value) {
        (FieldType::Integer, ValueRef::Integer(v)) => {
            out.extend((v as u32 ^ SIGN_32).to_be_bytes())
        }
        (FieldType::Long, ValueRef::Long(v)) | (FieldType::Timestamp, ValueRef::Timestamp(v)) => {
            out.extend((v as u64 ^ SIGN_64).to_be_bytes())
        }
        (FieldType::Float, ValueRef::Float(v)) => {
            out.extend(f32_key(not_nan(schema, field, v, v.is_nan())?).to_be_bytes())
        }
        (FieldType::Double, ValueRef::Double(v)) => {
            out.extend(f64_key(not_nan(schema, field, v, v.is_nan())?).to_be_bytes())
        }
        (FieldType::String, ValueRef::String(v)) => {
            escape_into(out, sized(schema, field, v.as_bytes())?)
        }
        (FieldType::Binary, ValueRef::Binary(v)) => escape_into(out, sized(schema, field, v)?),
        (FieldType::Enum(values), ValueRef::Enum(symbol)) => {
            out.extend(enum_index(schema, field, values, symbol)?.to_be_bytes())
        }
        (ty, value) => return Err(mismatch(schema, field, ty, value)),
    }
    Ok(())
}

fn not_nan<T>(schema: &TableSchema, field: &Field, v: T, is_nan: bool) -> TableResult<T> {
    if is_nan {
        return Err(TableError::NanInKey { table: table(schema), field: field.name().to_string() });
    }
    Ok(v)
}

fn sized<'a>(schema: &TableSchema, field: &Field, bytes: &'a [u8]) -> TableResult<&'a [u8]> {
    if bytes.len() > KEY_FIELD_BYTES_MAX {
        let (table, field) = (table(schema), field.name().to_string());
        return Err(TableError::KeyFieldTooLarge { table, field, len: bytes.len() });
    }
    Ok(bytes)
}

pub(super) fn enum_index(
    schema: &TableSchema,
    field: &Field,
    values: &[String],
    symbol: &str,
) -> TableResult<u16> {
    match values.iter().position(|v| v == symbol) {
        // The schema holds at most ENUM_VALUES_MAX = 65,536 values, so every index fits.
        Some(index) => Ok(u16::try_from(index).expect("schema limits ENUM values to u16 indexes")),
        None => Err(TableError::EnumValueNotInList {
            table: table(schema),
            field: field.name().to_string(),
            value: symbol.to_owned(),
            allowed: describe_enum_values(values),
        }),
    }
}

fn mismatch(
    schema: &TableSchema,
    field: &Field,
    ty: &FieldType,
    value: ValueRef<'_>,
) -> TableError {
    TableError::TypeMismatch {
        table: table(schema),
        field: field.name().to_string(),
        expected: ty.name(),
        got: value.type_name(),
    }
}

fn table(schema: &TableSchema) -> String {
    schema.name().to_string()
}

/// The sortable bits of a float: negative numbers have every bit inverted (so larger magnitudes
/// sort lower), others have the sign bit set (so they sort above every negative number). Negative
/// zero is first made positive zero, because the two are equal values and must be one key.
pub(super) fn f32_key(v: f32) -> u32 {
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    if bits & SIGN_32 != 0 {
        !bits
    } else {
        bits ^ SIGN_32
    }
}

pub(super) fn f64_key(v: f64) -> u64 {
    let bits = if v == 0.0 { 0 } else { v.to_bits() };
    if bits & SIGN_64 != 0 {
        !bits
    } else {
        bits ^ SIGN_64
    }
}

/// Decodes primary key field `position` at `input[pos]`; returns the value and the next position.
pub(super) fn decode_key_value(
    input: &[u8],
    pos: usize,
    schema: &TableSchema,
    position: usize,
) -> Result<(Value, usize), Corrupt> {
    let mask = if schema.primary_key()[position].desc { 0xFF } else { 0x00 };
    decode_typed(input, pos, schema.key_field(position).ty(), mask, false)
}

/// Decodes a value of type `ty` at `input[pos]`, every byte through `mask` (0xFF: DESC). With
/// `index_value`, the index entry's forms are allowed too: BOOLEAN (one byte, 0 or 1) and NaN
/// (its one canonical encoding, which `key/index.rs` writes for every NaN).
pub(super) fn decode_typed(
    input: &[u8],
    pos: usize,
    ty: &FieldType,
    mask: u8,
    index_value: bool,
) -> Result<(Value, usize), Corrupt> {
    let r = Reader { input, pos, mask };
    let value = match ty {
        FieldType::Integer => Value::Integer((u32::from_be_bytes(r.fixed()?) ^ SIGN_32) as i32),
        FieldType::Long => Value::Long((u64::from_be_bytes(r.fixed()?) ^ SIGN_64) as i64),
        FieldType::Timestamp => Value::Timestamp((u64::from_be_bytes(r.fixed()?) ^ SIGN_64) as i64),
        FieldType::Float => {
            let key = u32::from_be_bytes(r.fixed()?);
            match index_value && key == f32_key(f32::NAN) {
                true => Value::Float(f32::NAN),
                false => Value::Float(f32_from_key(key, pos)?),
            }
        }
        FieldType::Double => {
            let key = u64::from_be_bytes(r.fixed()?);
            match index_value && key == f64_key(f64::NAN) {
                true => Value::Double(f64::NAN),
                false => Value::Double(f64_from_key(key, pos)?),
            }
        }
        FieldType::Enum(values) => Value::Enum(symbol(values, r.fixed()?, pos)?),
        FieldType::String => {
            let (raw, next) = r.bytes()?;
            return Ok((Value::String(utf8(raw, pos)?), next));
        }
        FieldType::Binary => {
            let (raw, next) = r.bytes()?;
            return Ok((Value::Binary(raw), next));
        }
        FieldType::Boolean if index_value => match r.fixed::<1>()? {
            [0] => Value::Boolean(false),
            [1] => Value::Boolean(true),
            _ => return Err(Corrupt { offset: pos, what: "BOOLEAN value is not 0 or 1" }),
        },
        FieldType::Boolean => unreachable!("the schema builder rejects BOOLEAN key fields"),
    };
    let next = r.fixed_end(&value);
    Ok((value, next))
}

/// Reads bytes of one field through the DESC mask.
struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
    mask: u8,
}

impl Reader<'_> {
    fn fixed<const N: usize>(&self) -> Result<[u8; N], Corrupt> {
        let truncated = Corrupt { offset: self.pos, what: "key ends inside a fixed-width field" };
        let bytes = self.input.get(self.pos..self.pos + N).ok_or(truncated)?;
        let mut out = [0; N];
        out.iter_mut().zip(bytes).for_each(|(o, b)| *o = b ^ self.mask);
        Ok(out)
    }

    /// Position after a fixed-width value that [`Reader::fixed`] read.
    fn fixed_end(&self, value: &Value) -> usize {
        let width = match value {
            Value::Integer(_) | Value::Float(_) => 4,
            Value::Long(_) | Value::Double(_) | Value::Timestamp(_) => 8,
            Value::Enum(_) => 2,
            Value::Boolean(_) => 1,
            other => unreachable!("{} is not a fixed-width key type", other.type_name()),
        };
        self.pos + width
    }

    fn bytes(&self) -> Result<(Vec<u8>, usize), Corrupt> {
        let (raw, end) = unescape(self.input, self.pos, self.mask)?;
        if raw.len() > KEY_FIELD_BYTES_MAX {
            return Err(Corrupt {
                offset: self.pos,
                what: "field is longer than KEY_FIELD_BYTES_MAX",
            });
        }
        Ok((raw, end))
    }
}

fn f32_from_key(key: u32, pos: usize) -> Result<f32, Corrupt> {
    let bits = if key & SIGN_32 != 0 { key ^ SIGN_32 } else { !key };
    let v = f32::from_bits(bits);
    canonical(v, v.is_nan() || bits == SIGN_32, pos)
}

fn f64_from_key(key: u64, pos: usize) -> Result<f64, Corrupt> {
    let bits = if key & SIGN_64 != 0 { key ^ SIGN_64 } else { !key };
    let v = f64::from_bits(bits);
    canonical(v, v.is_nan() || bits == SIGN_64, pos)
}

/// The encoder never writes NaN or negative zero (whose bits are the sign bit alone); finding one
/// means the key was not written by it.
fn canonical<T>(v: T, nan_or_negative_zero: bool, pos: usize) -> Result<T, Corrupt> {
    if nan_or_negative_zero {
        let what = "float is NaN or negative zero, which keys never hold";
        return Err(Corrupt { offset: pos, what });
    }
    Ok(v)
}

fn utf8(bytes: Vec<u8>, pos: usize) -> Result<String, Corrupt> {
    String::from_utf8(bytes).map_err(|_| Corrupt { offset: pos, what: "STRING field is not UTF-8" })
}

fn symbol(values: &[String], index: [u8; 2], pos: usize) -> Result<String, Corrupt> {
    let index = usize::from(u16::from_be_bytes(index));
    let out_of_range = Corrupt { offset: pos, what: "ENUM index is past the declared values" };
    values.get(index).cloned().ok_or(out_of_range)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_keys_follow_value_order() {
        let values = [
            f64::NEG_INFINITY,
            f64::MIN,
            -1.0,
            -f64::MIN_POSITIVE,
            0.0,
            5e-324,
            1.0,
            f64::MAX,
            f64::INFINITY,
        ];
        for pair in values.windows(2) {
            assert!(f64_key(pair[0]) < f64_key(pair[1]), "{pair:?}");
        }
        assert_eq!(f64_key(-0.0), f64_key(0.0));
        assert_eq!(f32_key(-0.0), f32_key(0.0));
        for v in values {
            assert_eq!(f64_from_key(f64_key(v), 0), Ok(v));
        }
    }

    #[test]
    fn integer_keys_flip_the_sign_bit() {
        assert_eq!((i32::MIN as u32 ^ SIGN_32).to_be_bytes(), [0, 0, 0, 0]);
        assert_eq!((-1i32 as u32 ^ SIGN_32).to_be_bytes(), [0x7F, 0xFF, 0xFF, 0xFF]);
        assert_eq!((0i32 as u32 ^ SIGN_32).to_be_bytes(), [0x80, 0, 0, 0]);
    }
}
