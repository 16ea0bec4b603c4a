//! The keys of secondary index entries (docs/FORMAT.md, "Index entries"): the worked example
//! byte for byte, byte order equal to the order of (index values with NULL first, primary key)
//! for random rows, decoding back to the values and the row key, and the limits.

use std::cmp::Ordering;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use ringstore_model::table::limits::INDEX_VALUE_BYTES_MAX;
use ringstore_model::table::*;

/// `people` of the worked example, id 7.
fn people() -> TableSchema {
    TableSchema::builder(TableId(7), "people")
        .field("team", FieldType::String)
        .field("id", FieldType::Long)
        .field("name", FieldType::String)
        .field("age", FieldType::Integer)
        .field("active", FieldType::Boolean)
        .field("score", FieldType::Double)
        .primary_key(&["team", "id"])
        .shard_key(&["team"])
        .build()
        .expect("valid schema")
}

fn index(name: &str, id: u32, fields: &[usize]) -> IndexDef {
    IndexDef::new(
        Name::new(name).expect("succeeds"),
        IndexId(id),
        fields.to_vec(),
        IndexState::Ready,
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
}

/// The row's stored key and a lookup of its values by field index.
fn row(schema: &TableSchema, values: &[Option<Value>]) -> Vec<u8> {
    encode_primary_key(
        schema,
        &[values[0].clone().expect("succeeds"), values[1].clone().expect("succeeds")],
    )
    .expect("succeeds")
}

fn entry(schema: &TableSchema, def: &IndexDef, values: &[Option<Value>]) -> TableResult<Vec<u8>> {
    let key = row(schema, values);
    encode_index_entry(schema, def, &key, |i| {
        values[i].as_ref().map_or(ValueRef::Null, ValueRef::from)
    })
}

#[test]
fn the_worked_example_of_format_md() {
    let schema = people();
    let values = [
        Some(Value::String("db".into())),
        Some(Value::Long(5)),
        Some(Value::String("ann".into())),
        None,
        Some(Value::Boolean(true)),
        None,
    ];
    let by_name_age = index("by_name_age", 9, &[2, 3]);
    let by_active = index("by_active", 10, &[4]);
    let e = entry(&schema, &by_name_age, &values).expect("succeeds");
    assert_eq!(hex(&e), "00 00 00 09 01 61 6E 6E 00 01 00 64 62 00 01 80 00 00 00 00 00 00 05");
    assert_eq!(e.len(), 23);
    let e2 = entry(&schema, &by_active, &values).expect("succeeds");
    assert_eq!(hex(&e2), "00 00 00 0A 01 01 64 62 00 01 80 00 00 00 00 00 00 05");
    let decoded = decode_index_entry(&schema, &by_name_age, &e).expect("succeeds");
    assert_eq!(decoded.values, vec![Some(Value::String("ann".into())), None]);
    assert_eq!(decoded.row_key, row(&schema, &values));
    assert_eq!(&e[..4], &index_prefix(IndexId(9)));
}

fn random_values(rng: &mut StdRng) -> Vec<Option<Value>> {
    let names = ["", "a", "a\0", "ab", "b", "\u{10FFFF}"];
    let scores = [f64::NEG_INFINITY, -1.0, -0.0, 0.0, 2.5, f64::INFINITY, f64::NAN];
    let some = |rng: &mut StdRng, v: Value| rng.gen_bool(0.8).then_some(v);
    let name = Value::String(names[rng.gen_range(0..names.len())].into());
    let name = some(rng, name);
    let age = Value::Integer(rng.gen_range(-3..3));
    let age = some(rng, age);
    let active = Value::Boolean(rng.gen_bool(0.5));
    let active = some(rng, active);
    let score = Value::Double(scores[rng.gen_range(0..scores.len())]);
    let score = some(rng, score);
    let team = Value::String(["x", "y"][rng.gen_range(0..2)].into());
    vec![Some(team), Some(Value::Long(rng.gen_range(-2..3))), name, age, active, score]
}

/// The order an index defines: each field with NULL first, then the primary key. NaN sorts
/// after every number and equals itself; -0.0 equals 0.0.
fn index_cmp(fields: &[usize], a: &[Option<Value>], b: &[Option<Value>]) -> Ordering {
    let value = |x: &Option<Value>, y: &Option<Value>| match (x, y) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(Value::Double(x)), Some(Value::Double(y))) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).expect("succeeds"),
        },
        (Some(Value::String(x)), Some(Value::String(y))) => x.as_bytes().cmp(y.as_bytes()),
        (Some(Value::Integer(x)), Some(Value::Integer(y))) => x.cmp(y),
        (Some(Value::Long(x)), Some(Value::Long(y))) => x.cmp(y),
        (Some(Value::Boolean(x)), Some(Value::Boolean(y))) => x.cmp(y),
        (x, y) => panic!("values of different types: {x:?} {y:?}"),
    };
    fields
        .iter()
        .chain(&[0, 1])
        .map(|&f| value(&a[f], &b[f]))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

#[test]
fn byte_order_is_index_order_and_entries_decode_back() {
    let schema = people();
    let indexes = [index("a", 20, &[3]), index("b", 21, &[2, 4]), index("c", 22, &[5, 3, 1])];
    let mut rng = StdRng::seed_from_u64(15);
    for def in &indexes {
        for _ in 0..2000 {
            let (a, b) = (random_values(&mut rng), random_values(&mut rng));
            let (ea, eb) = (
                entry(&schema, def, &a).expect("succeeds"),
                entry(&schema, def, &b).expect("succeeds"),
            );
            assert_eq!(ea.cmp(&eb), index_cmp(def.fields(), &a, &b), "{a:?} {b:?} in {def:?}");
            let decoded = decode_index_entry(&schema, def, &ea).expect("succeeds");
            assert_eq!(decoded.row_key, row(&schema, &a));
            for (got, &f) in decoded.values.iter().zip(def.fields()) {
                match (got, &a[f]) {
                    (Some(Value::Double(x)), Some(Value::Double(y))) if y.is_nan() => {
                        assert!(x.is_nan())
                    }
                    (Some(Value::Double(x)), Some(Value::Double(y))) => assert_eq!(x, y),
                    (got, want) => assert_eq!(got, want),
                }
            }
        }
    }
}

#[test]
fn limits_and_damage_are_errors_that_name_them() {
    let schema = people();
    let by_name = index("by_name", 9, &[2]);
    let mut values = random_values(&mut StdRng::seed_from_u64(1));
    values[2] = Some(Value::String("x".repeat(INDEX_VALUE_BYTES_MAX + 1)));
    let e = entry(&schema, &by_name, &values).expect_err("too long");
    assert_eq!(e.code(), 235);
    assert!(e.to_string().contains("by_name") && e.to_string().contains("name"), "{e}");
    values[2] = Some(Value::String("x".repeat(INDEX_VALUE_BYTES_MAX)));
    assert!(entry(&schema, &by_name, &values).is_ok(), "the limit is inclusive");
    values[2] = Some(Value::Integer(1));
    assert_eq!(entry(&schema, &by_name, &values).expect_err("type").code(), 205);

    values[2] = Some(Value::String("ann".into()));
    let good = entry(&schema, &by_name, &values).expect("succeeds");
    let other = index("other", 10, &[2]);
    assert_eq!(decode_index_entry(&schema, &other, &good).expect_err("other id").code(), 215);
    let mut bad_mark = good.clone();
    bad_mark[4] = 2;
    assert_eq!(decode_index_entry(&schema, &by_name, &bad_mark).expect_err("mark").code(), 215);
    for cut in 0..good.len() {
        assert!(decode_index_entry(&schema, &by_name, &good[..cut]).is_err(), "cut at {cut}");
    }
}

#[test]
fn every_field_type_is_indexable() {
    for ty in FieldType::ALL {
        assert!(is_indexable(&ty), "{ty:?}");
    }
}
