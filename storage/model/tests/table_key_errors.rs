//! Proves every bad key input is a typed error with its stable code, never a panic: type
//! mismatches, NaN, ENUM values not in the list, a STRING/BINARY field over 1 KiB, too few or too
//! many values, and, for keys given by field name, unknown, non-key and repeated fields, a missing
//! field, and a partial key that skips a field. It also shows that the limit is inclusive and
//! counted per key value on the value's own bytes: exactly 1 KiB is accepted in every key field
//! at once, however escaping grows it.

use ringstore_model::table::limits::*;
use ringstore_model::table::*;

fn schema() -> TableSchema {
    TableSchema::builder(TableId(7), "events")
        .field("host", FieldType::String)
        .field("level", FieldType::Enum(vec!["debug".into(), "info".into(), "error".into()]))
        .field("ts", FieldType::Timestamp)
        .field("score", FieldType::Double)
        .field("body", FieldType::Binary)
        .primary_key(&["host", "level"])
        .primary_key_field("ts", true)
        .primary_key(&["score"])
        .build()
        .expect("valid")
}

fn key(host: &str, score: f64) -> Vec<Value> {
    vec![Value::from(host), Value::Enum("info".into()), Value::Timestamp(1), Value::Double(score)]
}

#[test]
fn type_mismatch_names_expected_and_got() {
    let s = schema();
    let mut values = key("a", 1.0);
    values[2] = Value::Long(1);
    let e = encode_primary_key(&s, &values).expect_err("LONG is not TIMESTAMP");
    assert_eq!(
        e,
        TableError::TypeMismatch {
            table: "events".into(),
            field: "ts".into(),
            expected: "TIMESTAMP",
            got: "LONG"
        }
    );
    assert_eq!(e.code(), 205);
    assert_eq!(e.to_string(), "table events: field ts is TIMESTAMP; got a LONG value");
}

#[test]
fn nan_is_refused() {
    let e = encode_primary_key(&schema(), &key("a", f64::NAN)).expect_err("NaN");
    assert_eq!(e, TableError::NanInKey { table: "events".into(), field: "score".into() });
    assert_eq!(e.code(), 209);
}

#[test]
fn enum_value_not_in_list() {
    let mut values = key("a", 1.0);
    values[1] = Value::Enum("warn".into());
    let e = encode_primary_key(&schema(), &values).expect_err("no such value");
    assert!(matches!(&e, TableError::EnumValueNotInList { value, .. } if value == "warn"));
    assert_eq!(e.code(), 208);
    assert!(e.to_string().contains("debug, info, error"), "{e}");
}

#[test]
fn field_and_key_size_limits_are_inclusive() {
    let s = schema();
    let at_limit = "h".repeat(KEY_FIELD_BYTES_MAX);
    encode_primary_key(&s, &key(&at_limit, 1.0)).expect("1 KiB field is allowed");
    let over = "h".repeat(KEY_FIELD_BYTES_MAX + 1);
    let e = encode_primary_key(&s, &key(&over, 1.0)).expect_err("over 1 KiB");
    assert!(matches!(e, TableError::KeyFieldTooLarge { len: 1025, .. }));
    assert_eq!(e.code(), 206);
    assert!(e.to_string().contains("1024"), "{e}");
    // The same limit holds in partial keys and ranges, which address the same keys.
    let e = encode_partial_key(&s, &[Value::from(over.as_str())]).expect_err("over 1 KiB");
    assert_eq!(e.code(), 206);
}

#[test]
fn every_key_value_may_take_its_full_kib() {
    // The limit a user meets is 1 KiB per key value, counted on the value's own bytes. Escaping
    // doubles a 0x00 byte, and the whole-key limit is sized so that it never refuses a key whose
    // values each fit: eight BINARY key fields of 1 KiB of zero bytes, the largest possible key.
    let names: Vec<String> = (0..PRIMARY_KEY_FIELDS_MAX).map(|i| format!("k{i}")).collect();
    let mut builder = TableSchema::builder(TableId(8), "blobs");
    for name in &names {
        builder = builder.field(name, FieldType::Binary);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let s = builder.primary_key(&refs).build().expect("valid");
    let zeros = vec![Value::Binary(vec![0; KEY_FIELD_BYTES_MAX]); PRIMARY_KEY_FIELDS_MAX];
    let bytes = encode_primary_key(&s, &zeros).expect("8 x 1 KiB of zero bytes is allowed");
    assert_eq!(bytes.len(), TABLE_PREFIX_BYTES + ENCODED_KEY_BYTES_MAX);
    assert!(bytes.len() <= ringstore_model::constants::KEY_BYTES_MAX, "the store takes it");
    assert_eq!(decode_primary_key(&s, &bytes).expect("decodes"), zeros);
    // One byte more in any value is refused, and the error says what it counted.
    let mut over = zeros.clone();
    over[3] = Value::Binary(vec![0; KEY_FIELD_BYTES_MAX + 1]);
    let e = encode_primary_key(&s, &over).expect_err("1025 bytes");
    assert!(
        matches!(e, TableError::KeyFieldTooLarge { len: 1025, ref field, .. } if field == "k3")
    );
    assert_eq!(e.code(), 206);
    let text = e.to_string();
    assert!(text.contains("1025 bytes") && text.contains("before escaping"), "{text}");
    assert!(text.contains("1024 bytes per key value"), "{text}");
}

#[test]
fn two_kib_key_values_of_zero_bytes() {
    // What the first users tripped over: two 1 KiB key columns, and a 1,022-byte BINARY key of
    // zero bytes, were refused by the old 2 KiB limit on the escaped key.
    let s = TableSchema::builder(TableId(9), "pairs")
        .field("a", FieldType::String)
        .field("b", FieldType::Binary)
        .primary_key(&["a", "b"])
        .build()
        .expect("valid");
    let a = Value::from("x".repeat(KEY_FIELD_BYTES_MAX).as_str());
    let b = Value::Binary(vec![0; 1022]);
    let bytes = encode_primary_key(&s, &[a, b]).expect("two values within 1 KiB each");
    assert_eq!(bytes.len(), TABLE_PREFIX_BYTES + (KEY_FIELD_BYTES_MAX + 2) + (2 * 1022 + 2));
}

#[test]
fn value_counts() {
    let s = schema();
    let values = key("a", 1.0);
    let e = encode_primary_key(&s, &values[..2]).expect_err("ts missing");
    assert_eq!(e, TableError::MissingKeyField { table: "events".into(), field: "ts".into() });
    assert_eq!(e.code(), 203);
    let mut five = values.clone();
    five.push(Value::Binary(vec![]));
    let e = encode_partial_key(&s, &five).expect_err("five values for four fields");
    assert!(matches!(e, TableError::TooManyKeyValues { given: 5, fields: 4, .. }));
    assert_eq!(e.code(), 210);
    let e = encode_shard_key(&s, &values[..1]).expect_err("the shard key is the whole key");
    assert_eq!(e.code(), 203);
}

#[test]
fn named_keys() {
    let s = schema();
    let named: Vec<(&str, Value)> =
        ["score", "ts", "level", "host"].into_iter().zip(key("a", 1.0).into_iter().rev()).collect();
    let by_name = encode_primary_key_named(&s, &named).expect("any order");
    assert_eq!(by_name, encode_primary_key(&s, &key("a", 1.0)).expect("valid"));

    let e = encode_primary_key_named(&s, &named[1..]).expect_err("score missing");
    assert_eq!(e, TableError::MissingKeyField { table: "events".into(), field: "score".into() });

    let skip = [("host", Value::from("a")), ("ts", Value::Timestamp(1))];
    let e = encode_partial_key_named(&s, &skip).expect_err("level skipped");
    let want = TableError::PartialKeyNotPrefix {
        table: "events".into(),
        field: "ts".into(),
        missing: "level".into(),
    };
    assert_eq!(e, want);
    assert_eq!(e.code(), 204);
    let prefix = encode_partial_key_named(&s, &skip[..1]).expect("leading prefix");
    assert!(by_name.starts_with(&prefix));

    let e = encode_partial_key_named(&s, &[("nope", Value::Integer(1))]).expect_err("unknown");
    assert_eq!((e.code(), matches!(e, TableError::UnknownField { .. })), (202, true));
    let e = encode_partial_key_named(&s, &[("body", Value::Binary(vec![]))]).expect_err("not key");
    assert_eq!((e.code(), matches!(e, TableError::NotAKeyField { .. })), (211, true));
    let twice = [("host", Value::from("a")), ("host", Value::from("b"))];
    let e = encode_partial_key_named(&s, &twice).expect_err("repeated");
    assert_eq!((e.code(), matches!(e, TableError::DuplicateKeyValue { .. })), (212, true));
}

#[test]
fn corrupt_and_foreign_keys() {
    let s = schema();
    let good = encode_primary_key(&s, &key("a", 1.0)).expect("valid");
    let e = decode_primary_key(&s, &good[..good.len() - 1]).expect_err("truncated");
    assert_eq!(e.code(), 215);
    let e = decode_primary_key(&s, &good[..2]).expect_err("no table prefix");
    assert_eq!(e.code(), 215);
    let mut longer = good.clone();
    longer.push(0);
    let e = decode_primary_key(&s, &longer).expect_err("trailing byte");
    assert!(matches!(e, TableError::CorruptKey { what: "bytes after the last key field", .. }));
    let mut other = good.clone();
    other[3] = 8;
    let e = decode_primary_key(&s, &other).expect_err("other table");
    assert_eq!(e, TableError::KeyOfOtherTable { table: "events".into(), expected: 7, found: 8 });
    assert_eq!(e.code(), 214);
}
