//! Shared pieces of the table key tests: proptest strategies for values of every key type, biased
//! towards the values where encodings go wrong (extremes, zeros of both signs, infinities, empty
//! strings, 0x00 and 0xFF bytes, shared prefixes), and the value order the encoding must follow.

#![allow(dead_code)]

use std::cmp::Ordering;

use proptest::prelude::*;
use ringstore_storage::table::{FieldType, TableId, TableSchema, Value};

/// Generates values of type `ty`.
pub fn value_of(ty: &FieldType) -> BoxedStrategy<Value> {
    match ty {
        FieldType::Integer => ints().prop_map(Value::Integer).boxed(),
        FieldType::Long => longs().prop_map(Value::Long).boxed(),
        FieldType::Timestamp => longs().prop_map(Value::Timestamp).boxed(),
        FieldType::Float => floats().prop_map(Value::Float).boxed(),
        FieldType::Double => doubles().prop_map(Value::Double).boxed(),
        FieldType::String => strings().prop_map(Value::String).boxed(),
        FieldType::Binary => binaries().prop_map(Value::Binary).boxed(),
        FieldType::Enum(values) => {
            proptest::sample::select(values.clone()).prop_map(Value::Enum).boxed()
        }
        FieldType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
    }
}

/// Generates a full key for `schema`.
pub fn key_of(schema: &TableSchema) -> BoxedStrategy<Vec<Value>> {
    let fields: Vec<_> =
        (0..schema.primary_key().len()).map(|p| value_of(schema.key_field(p).ty())).collect();
    fields.boxed()
}

fn ints() -> impl Strategy<Value = i32> {
    prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0), Just(-1), -3..3i32, any::<i32>()]
}

fn longs() -> impl Strategy<Value = i64> {
    prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0), Just(-1), -3..3i64, any::<i64>()]
}

fn floats() -> impl Strategy<Value = f32> {
    let special = [
        f32::NEG_INFINITY,
        f32::MIN,
        -1.0,
        -f32::MIN_POSITIVE,
        -1e-45,
        -0.0,
        0.0,
        1e-45,
        f32::MIN_POSITIVE,
        1.0,
        f32::MAX,
        f32::INFINITY,
    ];
    let any = any::<f32>().prop_filter("NaN is refused in keys", |v| !v.is_nan());
    prop_oneof![proptest::sample::select(special.to_vec()), any]
}

fn doubles() -> impl Strategy<Value = f64> {
    let special = [
        f64::NEG_INFINITY,
        f64::MIN,
        -1.0,
        -f64::MIN_POSITIVE,
        -5e-324,
        -0.0,
        0.0,
        5e-324,
        f64::MIN_POSITIVE,
        1.0,
        f64::MAX,
        f64::INFINITY,
    ];
    let any = any::<f64>().prop_filter("NaN is refused in keys", |v| !v.is_nan());
    prop_oneof![proptest::sample::select(special.to_vec()), any]
}

/// Short strings over a tiny alphabet, so equal values and shared prefixes are common, with NUL
/// and multi-byte characters (whose UTF-8 bytes reach 0xF4).
fn strings() -> impl Strategy<Value = String> {
    let chars = vec!['\0', '\u{1}', 'a', 'b', '\u{FF}', 'é', '\u{10FFFF}'];
    let small = proptest::collection::vec(proptest::sample::select(chars), 0..6)
        .prop_map(|cs| cs.into_iter().collect::<String>());
    prop_oneof![3 => small, 1 => ".{0,20}"]
}

/// Short byte strings over the bytes that matter to the escaping, plus arbitrary ones.
fn binaries() -> impl Strategy<Value = Vec<u8>> {
    let bytes = vec![0x00, 0x01, 0x02, 0x7F, 0xFE, 0xFF];
    let small = proptest::collection::vec(proptest::sample::select(bytes), 0..6);
    prop_oneof![3 => small, 1 => proptest::collection::vec(any::<u8>(), 0..20)]
}

/// The order of two values of one field type, as the key encoding must reproduce it: numeric
/// order (with -0.0 == 0.0; NaN never occurs), byte order for STRING (UTF-8 byte order is code
/// point order) and BINARY, declaration order for ENUM.
pub fn value_cmp(ty: &FieldType, a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Integer(a), Value::Integer(b)) => a.cmp(b),
        (Value::Long(a), Value::Long(b)) | (Value::Timestamp(a), Value::Timestamp(b)) => a.cmp(b),
        (Value::Float(a), Value::Float(b)) => a.partial_cmp(b).expect("no NaN"),
        (Value::Double(a), Value::Double(b)) => a.partial_cmp(b).expect("no NaN"),
        (Value::String(a), Value::String(b)) => a.as_bytes().cmp(b.as_bytes()),
        (Value::Binary(a), Value::Binary(b)) => a.cmp(b),
        (Value::Enum(a), Value::Enum(b)) => ty.enum_index(a).cmp(&ty.enum_index(b)),
        _ => panic!("values of different types: {a:?} {b:?}"),
    }
}

/// The order of two (possibly partial) keys of `schema`: field by field, DESC fields reversed.
pub fn key_cmp(schema: &TableSchema, a: &[Value], b: &[Value]) -> Ordering {
    for (position, (x, y)) in a.iter().zip(b).enumerate() {
        let order = value_cmp(schema.key_field(position).ty(), x, y);
        let order = if schema.primary_key()[position].desc { order.reverse() } else { order };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

/// Every key type in one place, for tables that exercise them all.
pub fn key_types() -> Vec<FieldType> {
    vec![
        FieldType::Integer,
        FieldType::Long,
        FieldType::Float,
        FieldType::Double,
        FieldType::String,
        FieldType::Binary,
        // Declaration order differs from alphabetical order on purpose.
        FieldType::Enum(vec!["zeta".into(), "alpha".into(), "mid".into()]),
        FieldType::Timestamp,
    ]
}

/// A table whose key is `fields` (named k0, k1, ...), plus one non-key BOOLEAN field.
pub fn build(id: TableId, fields: &[(FieldType, bool)], shard: Option<usize>) -> TableSchema {
    let names: Vec<String> = (0..fields.len()).map(|i| format!("k{i}")).collect();
    let mut builder =
        TableSchema::builder(id, &format!("t{}", id.0)).field("flag", FieldType::Boolean);
    for (name, (ty, desc)) in names.iter().zip(fields) {
        builder = builder.field(name, ty.clone()).primary_key_field(name, *desc);
    }
    if let Some(len) = shard {
        builder = builder.shard_key(&names[..len].iter().map(String::as_str).collect::<Vec<_>>());
    }
    builder.build().expect("test schema is valid")
}
