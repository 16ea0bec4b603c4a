//! Byte ranges to scan for a partial key, optionally narrowed by a range on the next key field.
//!
//! Every key with field value `v` after prefix `P` lies in `[P + e(v), succ(P + e(v)))`, where
//! `e(v)` is the field's self-delimiting encoding and `succ(x)` the smallest byte string above
//! every string that starts with `x`. A value range therefore maps to one byte range. On a DESC
//! field the byte order is the reverse of value order, so the range's end value gives the byte
//! start and its start value gives the byte end.

use super::super::error::{TableError, TableResult};
use super::super::schema::TableSchema;
use super::super::value::Value;
use super::field::encode_key_value;
use super::{check_len, encode_partial_key};

/// One end of a value range.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeBound {
    pub value: Value,
    pub inclusive: bool,
}

/// A range of values of one key field, in value order (`start <= end`); a missing end is open.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldRange {
    pub start: Option<RangeBound>,
    pub end: Option<RangeBound>,
}

/// The keys `start <= key < end`; `end` None means no upper bound. Empty when `end == start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyByteRange {
    pub start: Vec<u8>,
    pub end: Option<Vec<u8>>,
}

impl KeyByteRange {
    pub fn is_empty(&self) -> bool {
        self.end.as_ref().is_some_and(|end| *end <= self.start)
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.start.as_slice() && self.end.as_ref().is_none_or(|end| key < end.as_slice())
    }
}

/// The smallest byte string greater than every string starting with `prefix`, or None when
/// there is none (`prefix` is empty or all 0xFF).
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xFF)?;
    let mut out = prefix[..=last].to_vec();
    out[last] += 1;
    Some(out)
}

/// The byte range holding every key that starts with the partial key `prefix` and, when `next`
/// is given, whose next key field lies in it. An inverted value range gives an empty byte range.
pub fn key_range(
    schema: &TableSchema,
    prefix: &[Value],
    next: Option<&FieldRange>,
) -> TableResult<KeyByteRange> {
    let p = encode_partial_key(schema, prefix)?;
    let Some(range) = next else {
        let end = prefix_successor(&p);
        return Ok(KeyByteRange { start: p, end });
    };
    let position = prefix.len();
    let fields = schema.primary_key().len();
    if position >= fields {
        return Err(TableError::RangeAfterFullKey { table: schema.name().to_string(), fields });
    }
    let encode = |value: &Value| -> TableResult<Vec<u8>> {
        let mut key = p.clone();
        encode_key_value(&mut key, schema, position, value)?;
        check_len(schema, &key)?;
        Ok(key)
    };
    // In byte order the low end comes from the start value on ASC fields, the end value on DESC.
    let desc = schema.primary_key()[position].desc;
    let (low, high) = if desc { (&range.end, &range.start) } else { (&range.start, &range.end) };
    let start = match low {
        None => Some(p.clone()),
        Some(b) if b.inclusive => Some(encode(&b.value)?),
        Some(b) => prefix_successor(&encode(&b.value)?),
    };
    let end = match high {
        None => prefix_successor(&p),
        Some(b) if b.inclusive => prefix_successor(&encode(&b.value)?),
        Some(b) => Some(encode(&b.value)?),
    };
    Ok(normalize(p, start, end))
}

/// Makes an empty range `[start, start)`; `start` None means nothing lies above the low bound.
fn normalize(prefix: Vec<u8>, start: Option<Vec<u8>>, end: Option<Vec<u8>>) -> KeyByteRange {
    let Some(start) = start else {
        return KeyByteRange { start: prefix.clone(), end: Some(prefix) };
    };
    match end {
        Some(end) if end <= start => KeyByteRange { end: Some(start.clone()), start },
        end => KeyByteRange { start, end },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(&[1, 0xFF, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_successor(&[0xFF]), None);
        assert_eq!(prefix_successor(&[]), None);
    }

    #[test]
    fn empty_and_contains() {
        let r = KeyByteRange { start: vec![2], end: Some(vec![2]) };
        assert!(r.is_empty() && !r.contains(&[2]));
        let r = KeyByteRange { start: vec![2], end: None };
        assert!(!r.is_empty() && r.contains(&[0xFF, 0xFF]) && !r.contains(&[1]));
    }
}
