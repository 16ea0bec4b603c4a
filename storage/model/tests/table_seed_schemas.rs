//! Proves the tables of the seed document (Oracle NoSQL, "Primary and Shard Key Design") build
//! through the schema builder as the document describes them: the first `myProducts` CLI script
//! (primary key productName), the second (primary key productName, productType, productClass), and
//! `PRIMARY KEY(SHARD(productType, productName), productClass)`, whose shard key is the first two
//! fields, so rows that share productType and productName share a partition while a partial key on
//! productType alone is a byte prefix of all of them. The document's counter-example, a shard key
//! of productClass, is refused. DDL parsing is a later step, so the scripts are spelled as builder
//! calls here, one call per script line.

use ringstore_model::table::*;

fn enum_of(values: &str) -> FieldType {
    FieldType::Enum(values.split(',').map(str::to_owned).collect())
}

/// `table create -name myProducts` with the fields of the first script.
fn first_script() -> TableSchemaBuilder {
    TableSchema::builder(TableId(1), "myProducts")
        .field("productName", FieldType::String)
        .field("productType", FieldType::String)
        .field("color", enum_of("blue,green,red"))
        // Sic: the seed's first script lists "blue" as a size; it is a valid, distinct value.
        .field("size", enum_of("small,medium,blue"))
        .field("inventoryCount", FieldType::Integer)
}

/// The fields of the second script, which adds productClass.
fn second_script_fields(id: TableId) -> TableSchemaBuilder {
    TableSchema::builder(id, "myProducts")
        .field("productName", FieldType::String)
        .field("productType", FieldType::String)
        .field("productClass", FieldType::String)
        .field("color", enum_of("blue,green,red"))
        .field("size", enum_of("small,medium,large"))
        .field("inventoryCount", FieldType::Integer)
}

fn names(schema: &TableSchema, positions: std::ops::Range<usize>) -> Vec<String> {
    positions.map(|p| schema.key_field(p).name().to_string()).collect()
}

#[test]
fn first_script_primary_key_product_name() {
    let schema = first_script().primary_key(&["productName"]).build().expect("valid");
    assert_eq!(schema.name().as_str(), "myProducts");
    assert_eq!(schema.fields().len(), 5);
    assert_eq!(names(&schema, 0..1), ["productName"]);
    assert_eq!(schema.shard_key_len(), 1);
    let key = encode_primary_key(&schema, &[Value::from("widget")]).expect("valid");
    assert_eq!(key, b"\x00\x00\x00\x01widget\x00\x01");
    assert_eq!(decode_primary_key(&schema, &key), Ok(vec![Value::from("widget")]));
}

#[test]
fn second_script_three_field_key() {
    let key_fields = ["productName", "productType", "productClass"];
    let schema = second_script_fields(TableId(2)).primary_key(&key_fields).build().expect("valid");
    assert_eq!(names(&schema, 0..3), key_fields);
    assert_eq!(schema.shard_key_len(), 3);
    // The document's valid partial keys are byte prefixes; its invalid one is refused.
    let full = encode_primary_key(&schema, &["hat".into(), "wool".into(), "winter".into()]);
    let full = full.expect("valid");
    for k in 1..=2 {
        let named: Vec<(&str, Value)> = key_fields[..k].iter().map(|f| (*f, "x".into())).collect();
        encode_partial_key_named(&schema, &named).expect("leading prefix");
    }
    let partial = encode_partial_key(&schema, &["hat".into(), "wool".into()]).expect("valid");
    assert!(full.starts_with(&partial));
    let not_prefix = [("productType", Value::from("wool")), ("productClass", "winter".into())];
    let e = encode_partial_key_named(&schema, &not_prefix).expect_err("skips productName");
    assert_eq!(e.code(), 204);
}

#[test]
fn shard_product_type_and_name() {
    // PRIMARY KEY(SHARD(productType, productName), productClass)
    let schema = second_script_fields(TableId(3))
        .primary_key(&["productType", "productName", "productClass"])
        .shard_key(&["productType", "productName"])
        .build()
        .expect("valid");
    assert_eq!(names(&schema, 0..3), ["productType", "productName", "productClass"]);
    assert_eq!(schema.shard_key_len(), 2);

    let row = |class: &str| -> Vec<Value> { vec!["hats".into(), "beanie".into(), class.into()] };
    let count = PartitionCount::default();
    let partitions: Vec<u32> = ["winter", "summer", "kids"]
        .iter()
        .map(|c| partition_of_values(&schema, &row(c), count).expect("valid"))
        .collect();
    assert!(partitions.windows(2).all(|w| w[0] == w[1]), "{partitions:?}");
    let shard = encode_shard_key(&schema, &row("winter")).expect("valid");
    let full = encode_primary_key(&schema, &row("winter")).expect("valid");
    assert!(full.starts_with(&shard) && shard.len() < full.len());
    assert_eq!(partition_of_stored_key(&schema, &full, count), Ok(partitions[0]));
}

#[test]
fn shard_key_of_product_class_is_refused() {
    // The document: "the following would result in an error: shard-key -field productClass".
    let e = second_script_fields(TableId(4))
        .primary_key(&["productType", "productName", "productClass"])
        .shard_key(&["productClass"])
        .build()
        .expect_err("not a leading prefix");
    assert!(matches!(&e, TableError::ShardKeyNotPrefix { field, expected, position: 0, .. }
        if field == "productClass" && expected == "productType"));
    assert_eq!(e.code(), 110);
}
