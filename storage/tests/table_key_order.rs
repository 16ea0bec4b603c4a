//! Proves the table key encoding is order-preserving and invertible, with proptest over random
//! values biased towards the edge cases (integer extremes, -0.0, infinities, empty strings, 0x00 and
//! 0xFF bytes, shared prefixes, ENUMs declared out of alphabetical order):
//!
//! - round trip: decoding an encoded key gives the values back, for every type and for composite
//!   keys;
//! - order: for two keys, the byte order of their encodings equals their value order, for every
//!   type ASC and DESC and for composite keys mixing ASC and DESC fields;
//! - prefixes: the encoding of the first k values is a byte prefix of a full key exactly when the
//!   full key starts with those values, and the shard key is such a prefix;
//! - robustness: arbitrary bytes decode to an error or to values that re-encode to the same bytes.

mod table_common;

use std::cmp::Ordering;
use std::sync::LazyLock;

use proptest::prelude::*;
use ringstore_storage::table::*;
use table_common::{build, key_cmp, key_of, key_types};

/// One single-field table per key type and direction, then composite tables.
static SCHEMAS: LazyLock<Vec<TableSchema>> = LazyLock::new(|| {
    let mut schemas = Vec::new();
    for (i, ty) in key_types().into_iter().enumerate() {
        for desc in [false, true] {
            let id = TableId(100 + 2 * i as u32 + u32::from(desc));
            schemas.push(build(id, &[(ty.clone(), desc)], None));
        }
    }
    let t = key_types();
    let (int, long, float, double) = (&t[0], &t[1], &t[2], &t[3]);
    let (string, binary, enum_, ts) = (&t[4], &t[5], &t[6], &t[7]);
    let composite = [
        vec![(int.clone(), false), (string.clone(), true), (double.clone(), false)],
        vec![
            (enum_.clone(), true),
            (binary.clone(), false),
            (long.clone(), true),
            (ts.clone(), false),
        ],
        vec![(float.clone(), true), (binary.clone(), true), (string.clone(), false)],
        vec![(string.clone(), false), (string.clone(), true), (binary.clone(), false)],
        t.iter().enumerate().map(|(i, ty)| (ty.clone(), i % 3 == 1)).collect(),
    ];
    for (i, fields) in composite.iter().enumerate() {
        let shard = Some(1 + i % fields.len());
        schemas.push(build(TableId(u32::MAX - i as u32), fields, shard));
    }
    schemas
});

/// A schema and two full keys for it.
fn schema_and_two_keys() -> impl Strategy<Value = (usize, Vec<Value>, Vec<Value>)> {
    (0..SCHEMAS.len()).prop_flat_map(|i| (Just(i), key_of(&SCHEMAS[i]), key_of(&SCHEMAS[i])))
}

fn encode(schema: &TableSchema, key: &[Value]) -> Vec<u8> {
    encode_primary_key(schema, key).expect("generated keys are valid")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn round_trip((i, a, _b) in schema_and_two_keys()) {
        let schema = &SCHEMAS[i];
        let bytes = encode(schema, &a);
        prop_assert_eq!(&bytes[..4], &schema.id().0.to_be_bytes()[..]);
        prop_assert_eq!(decode_primary_key(schema, &bytes), Ok(a));
    }

    #[test]
    fn byte_order_is_value_order((i, a, b) in schema_and_two_keys()) {
        let schema = &SCHEMAS[i];
        let (x, y) = (encode(schema, &a), encode(schema, &b));
        prop_assert_eq!(x.cmp(&y), key_cmp(schema, &a, &b), "{:?} vs {:?}", a, b);
    }

    #[test]
    fn partial_key_is_a_prefix_exactly_of_its_extensions((i, a, b) in schema_and_two_keys()) {
        let schema = &SCHEMAS[i];
        let full_b = encode(schema, &b);
        for k in 0..=a.len() {
            let partial = encode_partial_key(schema, &a[..k]).expect("valid partial key");
            let extends = key_cmp(schema, &a[..k], &b[..k]) == Ordering::Equal;
            prop_assert_eq!(full_b.starts_with(&partial), extends, "k = {}", k);
        }
    }

    #[test]
    fn shard_key_is_the_stored_key_prefix((i, a, _b) in schema_and_two_keys()) {
        let schema = &SCHEMAS[i];
        let full = encode(schema, &a);
        let shard = encode_shard_key(schema, &a).expect("valid shard key");
        let partial = encode_partial_key(schema, &a[..schema.shard_key_len()]).expect("valid");
        prop_assert_eq!(&shard, &partial);
        prop_assert_eq!(shard_key_prefix_len(schema, &full), Ok(shard.len()));
        let count = PartitionCount::default();
        prop_assert_eq!(partition_of_stored_key(schema, &full, count), Ok(partition_of(&shard, count)));
    }

    #[test]
    fn arbitrary_bytes_decode_to_an_error_or_the_same_key(
        i in 0..SCHEMAS.len(),
        tail in proptest::collection::vec(
            prop_oneof![Just(0u8), Just(1), Just(0xFE), Just(0xFF), any::<u8>()], 0..40),
    ) {
        let schema = &SCHEMAS[i];
        let mut bytes = schema.id().0.to_be_bytes().to_vec();
        bytes.extend(tail);
        if let Ok(values) = decode_primary_key(schema, &bytes) {
            prop_assert_eq!(encode(schema, &values), bytes);
        }
    }

    #[test]
    fn damaged_keys_decode_to_an_error_or_the_same_key(
        (i, a, _b) in schema_and_two_keys(), at in any::<prop::sample::Index>(), flip in 1..=255u8,
    ) {
        let schema = &SCHEMAS[i];
        let good = encode(schema, &a);
        let mut flipped = good.clone();
        let at = at.index(good.len());
        flipped[at] ^= flip;
        for bytes in [flipped, good[..at].to_vec()] {
            if let Ok(values) = decode_primary_key(schema, &bytes) {
                prop_assert_eq!(encode(schema, &values), bytes);
            }
        }
    }
}

#[test]
fn negative_zero_is_zero() {
    let schema = &SCHEMAS[2 * 3]; // DOUBLE ASC
    let minus = encode(schema, &[Value::Double(-0.0)]);
    assert_eq!(minus, encode(schema, &[Value::Double(0.0)]));
    let back = decode_primary_key(schema, &minus).expect("decodes");
    assert!(matches!(back[..], [Value::Double(z)] if z == 0.0 && z.is_sign_positive()));
}

#[test]
fn tables_never_mix() {
    // The same values in two tables differ in the 4-byte prefix, and the table with the smaller
    // id sorts first whatever the values.
    let (a, b) = (&SCHEMAS[0], &SCHEMAS[2]);
    assert!(a.id() < b.id());
    let high = encode(a, &[Value::Integer(i32::MAX)]);
    let low = encode(b, &[Value::Long(i64::MIN)]);
    assert!(high < low);
    assert!(matches!(decode_primary_key(b, &high), Err(TableError::KeyOfOtherTable { .. })));
}
