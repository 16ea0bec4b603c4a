//! Proves the row value encoding (`table/row.rs`) keeps every non-key value of every type exactly
//! (extremes, empty strings, NaN bits, absent fields), lets a row written before fields were
//! appended decode under the newer schema, refuses values of the wrong type with typed errors
//! naming the table and field, never panics on random, mutated or truncated bytes (seeded, so a
//! failure replays), is compact (a stated byte count), and produces exactly the worked example of
//! docs/FORMAT.md ("Row values"). If the example changes, the document changes in the same commit.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use ringstore_model::table::row::*;
use ringstore_model::table::*;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
}

/// One non-key field of every type after an INTEGER key.
fn all_types() -> TableSchema {
    TableSchema::builder(TableId(3), "all_types")
        .field("id", FieldType::Integer)
        .field("i", FieldType::Integer)
        .field("l", FieldType::Long)
        .field("f", FieldType::Float)
        .field("d", FieldType::Double)
        .field("s", FieldType::String)
        .field("b", FieldType::Binary)
        .field("o", FieldType::Boolean)
        .field("e", FieldType::Enum(vec!["first".into(), "mid".into(), "last".into()]))
        .field("t", FieldType::Timestamp)
        .primary_key(&["id"])
        .build()
        .expect("valid")
}

fn full_row(i: i32, l: i64, f: f32, d: f64, s: &str, b: &[u8], o: bool, e: &str) -> Vec<Value> {
    let e = Value::Enum(e.into());
    let t = Value::Timestamp(l);
    vec![i.into(), l.into(), f.into(), d.into(), s.into(), b.to_vec().into(), o.into(), e, t]
}

fn sample_rows() -> Vec<Vec<Option<Value>>> {
    let rows = [
        full_row(i32::MIN, i64::MIN, f32::MIN, f64::MIN, "", b"", false, "first"),
        full_row(
            i32::MAX,
            i64::MAX,
            f32::MAX,
            f64::MAX,
            "h\u{e9}llo \u{1F600}",
            &[0, 255],
            true,
            "last",
        ),
        full_row(0, 0, -0.0, -0.0, "\0", &[0; 300], false, "mid"),
        full_row(-1, -1, f32::INFINITY, f64::NEG_INFINITY, &"x".repeat(200), b"\x80", true, "mid"),
        full_row(1, 1, f32::MIN_POSITIVE, 1e-320, "a", b"b", false, "first"),
    ];
    let mut rows: Vec<Vec<Option<Value>>> =
        rows.into_iter().map(|r| r.into_iter().map(Some).collect()).collect();
    rows.push(vec![None; 9]);
    rows.push(vec![]);
    let mut holes = rows[1].clone();
    for slot in [0, 3, 4, 8] {
        holes[slot] = None;
    }
    rows.push(holes);
    rows
}

/// Float values compare by bits so -0.0 and NaN payloads count as kept.
fn same(a: &[Option<Value>], b: &[Option<Value>]) -> bool {
    let bits = |v: &Option<Value>| match v {
        Some(Value::Float(f)) => Some(Value::Long(i64::from(f.to_bits()))),
        Some(Value::Double(d)) => Some(Value::Long(d.to_bits() as i64)),
        other => other.clone(),
    };
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| bits(x) == bits(y))
}

#[test]
fn every_type_round_trips() {
    let schema = all_types();
    for (n, row) in sample_rows().into_iter().enumerate() {
        let bytes = encode_row(&schema, 7, &row).expect("valid row");
        let decoded = decode_row(&schema, &bytes).expect("own encoding decodes");
        assert_eq!(decoded.schema_version, 7);
        let mut expected = row.clone();
        expected.resize(9, None);
        assert!(same(&decoded.values, &expected), "row {n}: {:?}", decoded.values);
        assert_eq!(encode_row(&schema, 7, &decoded.values), Ok(bytes), "row {n} re-encodes");
    }
}

#[test]
fn nan_is_allowed_and_its_bits_are_kept() {
    let schema = all_types();
    let (f, d) = (f32::from_bits(0x7FC0_1234), f64::from_bits(0xFFF8_0000_0000_0042));
    let row = [(FieldRef::from("f"), Value::Float(f)), ("d".into(), Value::Double(d))];
    let bytes = encode_row_fields(&schema, 1, &row).expect("NaN is fine off the key");
    let values = decode_row(&schema, &bytes).expect("decodes").values;
    assert!(matches!(values[2], Some(Value::Float(x)) if x.to_bits() == f.to_bits()));
    assert!(matches!(values[3], Some(Value::Double(x)) if x.to_bits() == d.to_bits()));
}

fn sensors(extra_fields: bool) -> TableSchema {
    let builder = TableSchema::builder(TableId(5), "sensors")
        .field("id", FieldType::String)
        .field("temp", FieldType::Double)
        .field("label", FieldType::String)
        .field("count", FieldType::Integer)
        .primary_key(&["id"]);
    let builder = if extra_fields {
        builder.field("flags", FieldType::Binary).field("seen", FieldType::Timestamp)
    } else {
        builder
    };
    builder.build().expect("valid")
}

#[test]
fn rows_of_an_older_schema_decode_under_appended_fields() {
    let (v1, v2) = (sensors(false), sensors(true));
    let row = [Some(Value::Double(20.5)), None, Some(Value::Integer(3))];
    let old = encode_row(&v1, 1, &row).expect("valid");
    let decoded = decode_row(&v2, &old).expect("an appended schema reads old rows");
    assert_eq!(decoded.schema_version, 1);
    let mut expected = row.to_vec();
    expected.extend([None, None]);
    assert_eq!(decoded.values, expected);

    // An update under v2 keeps the old values and stores the new field count.
    let set = [(FieldRef::from("seen"), Some(Value::Timestamp(99)))];
    let merged = merge_row(&v2, &decoded.values, &set).expect("valid update");
    let new = encode_row(&v2, 2, &merged).expect("valid");
    assert_eq!(
        decode_row(&v2, &new).map(|r| (r.schema_version, r.values[4].clone())),
        Ok((2, Some(Value::Timestamp(99))))
    );

    // The older schema cannot read a newer row: it does not know the extra fields.
    let err = decode_row(&v1, &new).expect_err("more fields than v1 has");
    assert_eq!(err.code(), 228);
    assert!(err.to_string().contains("sensors"), "{err}");
}

#[test]
fn merge_sets_clears_and_creates() {
    let schema = sensors(false);
    let base = [Some(Value::Double(1.0)), Some("a".into()), Some(Value::Integer(1))];
    let set = [(FieldRef::from("label"), None), (FieldRef::Index(3), Some(Value::Integer(2)))];
    let merged = merge_row(&schema, &base, &set).expect("valid");
    assert_eq!(merged, [Some(Value::Double(1.0)), None, Some(Value::Integer(2))]);
    let created = merge_row(&schema, &[], &set).expect("an absent row is created");
    assert_eq!(created, [None, None, Some(Value::Integer(2))]);
}

#[test]
fn bad_values_are_typed_errors_naming_table_and_field() {
    let schema = all_types();
    let err = |fields: &[(FieldRef<'_>, Value)]| {
        encode_row_fields(&schema, 1, fields).expect_err("bad input")
    };
    let mismatch = err(&[("l".into(), Value::Integer(1))]);
    assert_eq!(
        mismatch,
        TableError::TypeMismatch {
            table: "all_types".into(),
            field: "l".into(),
            expected: "LONG",
            got: "INTEGER"
        }
    );
    assert_eq!(mismatch.code(), 205);
    let not_listed = err(&[("e".into(), Value::Enum("huge".into()))]);
    assert_eq!(not_listed.code(), 208);
    assert!(not_listed.to_string().contains("first, mid, last"), "{not_listed}");
    assert_eq!(err(&[("nope".into(), Value::Integer(1))]).code(), 202);
    assert_eq!(err(&[(FieldRef::Index(99), Value::Integer(1))]).code(), 202);
    assert_eq!(err(&[("id".into(), Value::Integer(1))]).code(), 212);
    let twice = [("i".into(), Value::Integer(1)), (FieldRef::Index(1), Value::Integer(2))];
    assert_eq!(err(&twice).code(), 231);
    let positional = encode_row(&schema, 1, &[Some(Value::Long(1))]).expect_err("INTEGER slot");
    assert_eq!(positional.code(), 205);
    assert_eq!(encode_row(&schema, 1, &vec![None::<Value>; 10]).map_err(|e| e.code()), Err(202));
}

/// Valid encodings of the sample rows, to mutate and truncate.
fn valid_encodings(schema: &TableSchema) -> Vec<Vec<u8>> {
    sample_rows().iter().map(|row| encode_row(schema, 300, row).expect("valid")).collect()
}

fn assert_decodes_or_corrupt(schema: &TableSchema, bytes: &[u8]) {
    if let Err(e) = decode_row(schema, bytes) {
        assert_eq!(e.code(), 228, "{e} for {}", hex(bytes));
    }
}

#[test]
fn every_truncation_is_an_error() {
    let schema = all_types();
    for bytes in valid_encodings(&schema) {
        for len in 0..bytes.len() {
            let err = decode_row(&schema, &bytes[..len]).expect_err("a proper prefix");
            assert_eq!(err.code(), 228, "{err}");
        }
    }
}

#[test]
fn random_and_mutated_bytes_never_panic() {
    let schema = all_types();
    let mut rng = SmallRng::seed_from_u64(0x5EED_0003);
    for _ in 0..20_000 {
        let len = rng.gen_range(0..64);
        let bytes: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        assert_decodes_or_corrupt(&schema, &bytes);
    }
    let valid = valid_encodings(&schema);
    for _ in 0..20_000 {
        let mut bytes = valid[rng.gen_range(0..valid.len())].clone();
        for _ in 0..rng.gen_range(1..4) {
            let at = rng.gen_range(0..bytes.len());
            bytes[at] ^= 1 << rng.gen_range(0..8);
        }
        assert_decodes_or_corrupt(&schema, &bytes);
    }
}

#[test]
fn huge_lengths_are_refused_before_allocating() {
    let schema = TableSchema::builder(TableId(1), "blobs")
        .field("k", FieldType::Integer)
        .field("v", FieldType::Binary)
        .primary_key(&["k"])
        .build()
        .expect("valid");
    // Version 1, 1 field, present, then a length of u64::MAX and u32::MAX with no bytes after.
    let max = [1, 1, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
    let four_gib = [1, 1, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F];
    for bytes in [&max[..], &four_gib[..]] {
        assert_eq!(decode_row(&schema, bytes).map_err(|e| e.code()), Err(228));
    }
}

#[test]
fn three_integers_and_a_ten_byte_string_take_26_bytes() {
    let schema = TableSchema::builder(TableId(2), "compact")
        .field("k", FieldType::Long)
        .field("a", FieldType::Integer)
        .field("b", FieldType::Integer)
        .field("c", FieldType::Integer)
        .field("s", FieldType::String)
        .primary_key(&["k"])
        .build()
        .expect("valid");
    let row =
        [1, 2, 3].map(|v| Some(Value::Integer(v))).into_iter().chain([Some("0123456789".into())]);
    let bytes = encode_row(&schema, 1, &row.collect::<Vec<_>>()).expect("valid");
    // 1 version + 1 count + 1 bitmap + 3 * 4 integers + 1 length + 10 string bytes.
    assert_eq!(bytes.len(), 26);
}

/// The worked example of docs/FORMAT.md ("Row values").
#[test]
fn format_example() {
    let schema = TableSchema::builder(TableId(12), "readings")
        .field("sensor", FieldType::String)
        .field("ts", FieldType::Timestamp)
        .field("temp", FieldType::Double)
        .field("unit", FieldType::Enum(vec!["c".into(), "f".into()]))
        .field("note", FieldType::String)
        .field("battery", FieldType::Integer)
        .field("ok", FieldType::Boolean)
        .primary_key(&["sensor", "ts"])
        .build()
        .expect("valid");
    let fields = [
        (FieldRef::from("temp"), Value::Double(21.5)),
        ("unit".into(), Value::Enum("f".into())),
        ("note".into(), "hi".into()),
        ("ok".into(), true.into()),
    ];
    let bytes = encode_row_fields(&schema, 3, &fields).expect("valid");
    assert_eq!(hex(&bytes), "03 05 17 00 00 00 00 00 80 35 40 01 00 02 68 69 01");
    let decoded = decode_row(&schema, &bytes).expect("decodes");
    assert_eq!(decoded.schema_version, 3);
    let expected: Vec<_> = [
        Some(Value::Double(21.5)),
        Some(Value::Enum("f".into())),
        Some("hi".into()),
        None,
        Some(true.into()),
    ]
    .into();
    assert_eq!(decoded.values, expected);
}
