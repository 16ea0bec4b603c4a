//! Proves the range helper: for random keys, a random partial key and a random value range on the
//! next key field (open or closed at either end, inclusive or exclusive, ASC or DESC, fixed-width
//! or escaped), a key's encoding lies in the returned byte range exactly when its values start with
//! the partial key and its next field lies in the value range. DESC fields, where byte order is the
//! reverse of value order, are the case this guards.

mod table_common;

use std::cmp::Ordering;
use std::sync::LazyLock;

use proptest::prelude::*;
use ringstore_storage::table::*;
use table_common::{build, key_cmp, key_of, key_types, value_cmp, value_of};

static SCHEMAS: LazyLock<Vec<TableSchema>> = LazyLock::new(|| {
    let t = key_types();
    let mut schemas: Vec<TableSchema> = Vec::new();
    for (i, ty) in t.iter().enumerate() {
        for desc in [false, true] {
            schemas.push(build(
                TableId(10 + 2 * i as u32 + u32::from(desc)),
                &[(ty.clone(), desc)],
                None,
            ));
        }
    }
    let composite = [
        vec![(t[0].clone(), false), (t[1].clone(), true), (t[4].clone(), false)],
        vec![(t[4].clone(), true), (t[3].clone(), false), (t[5].clone(), true)],
        vec![(t[6].clone(), false), (t[7].clone(), true), (t[2].clone(), true)],
    ];
    for (i, fields) in composite.iter().enumerate() {
        // u32::MAX as a table id makes prefix successors run off the end of the id space.
        schemas.push(build(TableId(u32::MAX - i as u32), fields, None));
    }
    schemas
});

fn bound(ty: &FieldType) -> BoxedStrategy<Option<RangeBound>> {
    let b = (value_of(ty), any::<bool>())
        .prop_map(|(value, inclusive)| RangeBound { value, inclusive });
    proptest::option::weighted(0.8, b).boxed()
}

/// A schema, some keys, a partial key length, which key the partial key is taken from, and a
/// range on the next field (None for no range).
fn case() -> impl Strategy<Value = (usize, Vec<Vec<Value>>, usize, usize, Option<FieldRange>)> {
    (0..SCHEMAS.len()).prop_flat_map(|i| {
        let schema = &SCHEMAS[i];
        let n = schema.primary_key().len();
        let keys = proptest::collection::vec(key_of(schema), 1..40);
        (Just(i), keys, 0..n).prop_flat_map(move |(i, keys, k)| {
            let ty = SCHEMAS[i].key_field(k).ty().clone();
            let range = (bound(&ty), bound(&ty)).prop_map(|(start, end)| FieldRange { start, end });
            let source = 0..keys.len();
            (Just(i), Just(keys), Just(k), source, proptest::option::weighted(0.9, range))
        })
    })
}

/// The value-level answer: does `key` start with `prefix` and have its next field in `range`?
fn expected(
    schema: &TableSchema,
    key: &[Value],
    prefix: &[Value],
    range: Option<&FieldRange>,
) -> bool {
    if key_cmp(schema, &key[..prefix.len()], prefix) != Ordering::Equal {
        return false;
    }
    let Some(range) = range else { return true };
    let ty = schema.key_field(prefix.len()).ty();
    let v = &key[prefix.len()];
    let above = range.start.as_ref().is_none_or(|b| match value_cmp(ty, v, &b.value) {
        Ordering::Greater => true,
        Ordering::Equal => b.inclusive,
        Ordering::Less => false,
    });
    let below = range.end.as_ref().is_none_or(|b| match value_cmp(ty, v, &b.value) {
        Ordering::Less => true,
        Ordering::Equal => b.inclusive,
        Ordering::Greater => false,
    });
    above && below
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn byte_range_holds_exactly_the_matching_keys((i, keys, k, source, range) in case()) {
        let schema = &SCHEMAS[i];
        let prefix = &keys[source][..k];
        let bytes = key_range(schema, prefix, range.as_ref()).expect("valid range");
        for key in &keys {
            let encoded = encode_primary_key(schema, key).expect("valid key");
            let want = expected(schema, key, prefix, range.as_ref());
            prop_assert_eq!(bytes.contains(&encoded), want, "key {:?} range {:?}", key, bytes);
            prop_assert!(!(want && bytes.is_empty()));
        }
    }
}

#[test]
fn a_range_after_the_full_key_is_refused() {
    let schema = &SCHEMAS[0];
    let range = FieldRange::default();
    let err = key_range(schema, &[Value::Integer(1)], Some(&range)).expect_err("no next field");
    assert!(matches!(err, TableError::RangeAfterFullKey { fields: 1, .. }));
    assert_eq!(err.code(), 213);
}

#[test]
fn byte_range_converts_to_a_store_range() {
    use std::ops::Bound;
    let schema = &SCHEMAS[0];
    let r = key_range(schema, &[], None).expect("whole table");
    let store: ringstore_storage::KeyRange = r.into();
    let prefix = schema.id().0.to_be_bytes().to_vec();
    let end = (schema.id().0 + 1).to_be_bytes().to_vec();
    let want = ringstore_storage::KeyRange::Range {
        start: Bound::Included(prefix),
        end: Bound::Excluded(end),
    };
    assert_eq!(store, want);
}
