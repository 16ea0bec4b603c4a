//! Which partition a request's key falls in: the same computation on the node (to forward a
//! request to the owning shard) and in the client (to send it to that shard's port directly).
//!
//! The shard key is a leading prefix of the primary key; its values, encoded as the stored key
//! encodes them, hash to a partition (`storage/model/src/table/partition.rs`), and the partition map
//! says which shard owns it.

use ringstore_model::table::{partition_of_values, PartitionCount, TableResult, TableSchema};

use crate::fields::FieldList;
use crate::wire::ValueRef;

/// The partition of a key (a put's row, a full key, or a partial key covering the shard key);
/// None when `fields` does not give every shard key field (the request is answered by the
/// receiving shard: a scan fans out, anything else is refused by the table layer with the field
/// named). A value of the wrong type is the table layer's error, with the field named.
pub fn partition_of_fields(
    schema: &TableSchema,
    fields: FieldList<'_>,
    count: PartitionCount,
) -> TableResult<Option<u32>> {
    let shard_len = schema.shard_key_len();
    let mut values = Vec::with_capacity(shard_len);
    for position in 0..shard_len {
        let name = schema.key_field(position).name().as_str();
        // NULL means "absent" to the table layer, which then sees only the non-NULL pairs:
        // route on exactly those, or a key given as (NULL, v) would run on the wrong shard.
        let given = fields.iter().find(|(n, v)| *n == name && !matches!(v, ValueRef::Null));
        match given.and_then(|(_, v)| v.to_value()) {
            Some(value) => values.push(value),
            None => return Ok(None),
        }
    }
    partition_of_values(schema, &values, count).map(Some)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::FieldsBuf;
    use ringstore_model::table::{FieldType, TableId, Value};

    #[test]
    fn partition_follows_the_shard_key_only() {
        let schema = TableSchema::builder(TableId(1), "t")
            .field("a", FieldType::String)
            .field("b", FieldType::Long)
            .field("c", FieldType::Long)
            .primary_key(&["a", "b", "c"])
            .shard_key(&["a", "b"])
            .build()
            .expect("valid schema");
        let count = PartitionCount::default();
        let expected =
            partition_of_values(&schema, &[Value::String("x".into()), Value::Long(2)], count)
                .expect("encodes");
        let full = FieldsBuf::of([
            ("c", ValueRef::Long(9)),
            ("b", ValueRef::Long(2)),
            ("a", ValueRef::String("x")),
        ]);
        assert_eq!(partition_of_fields(&schema, full.list(), count), Ok(Some(expected)));
        let partial = FieldsBuf::of([("a", ValueRef::String("x"))]);
        assert_eq!(partition_of_fields(&schema, partial.list(), count), Ok(None));
        let with_null = FieldsBuf::of([
            ("a", ValueRef::Null),
            ("a", ValueRef::String("x")),
            ("b", ValueRef::Long(2)),
        ]);
        assert_eq!(partition_of_fields(&schema, with_null.list(), count), Ok(Some(expected)));
        let mistyped = FieldsBuf::of([("a", ValueRef::Long(1)), ("b", ValueRef::Long(2))]);
        assert!(partition_of_fields(&schema, mistyped.list(), count).is_err());
    }
}
