//! Proves the worked examples of docs/FORMAT.md ("Table keys", "Stored rows") are exactly what
//! the code produces: the composite key with a DESC field, byte by byte, its shard key and
//! partition, the escaping of a BINARY value holding 0x00 and 0xFF, the byte range of a range on a
//! DESC field, and a two-version stored row. If this test changes, the document changes in the
//! same commit.

use ringstore_model::table::*;

/// `events` (table id 7): PRIMARY KEY(SHARD(host), level, ts DESC).
fn events() -> TableSchema {
    TableSchema::builder(TableId(7), "events")
        .field("host", FieldType::String)
        .field("level", FieldType::Enum(vec!["debug".into(), "info".into(), "error".into()]))
        .field("ts", FieldType::Timestamp)
        .field("message", FieldType::String)
        .primary_key(&["host", "level"])
        .primary_key_field("ts", true)
        .shard_key(&["host"])
        .build()
        .expect("valid")
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(" ")
}

fn example_key() -> Vec<Value> {
    vec!["db1".into(), Value::Enum("error".into()), Value::Timestamp(1_700_000_000_000)]
}

#[test]
fn composite_key_with_desc_field() {
    let schema = events();
    let key = encode_primary_key(&schema, &example_key()).expect("valid");
    assert_eq!(hex(&key), "00 00 00 07 64 62 31 00 01 00 02 7F FF FE 74 30 1A 97 FF");
    assert_eq!(decode_primary_key(&schema, &key), Ok(example_key()));
}

#[test]
fn shard_key_and_partition() {
    let schema = events();
    let shard = encode_shard_key(&schema, &example_key()).expect("valid");
    assert_eq!(hex(&shard), "00 00 00 07 64 62 31 00 01");
    assert_eq!(partition_hash(&shard), 0x523C_591B_6F63_8E20);
    assert_eq!(partition_of(&shard, PartitionCount::default()), 3616);
}

#[test]
fn escaping() {
    let schema = TableSchema::builder(TableId(9), "blobs")
        .field("b", FieldType::Binary)
        .primary_key(&["b"])
        .build()
        .expect("valid");
    let key = encode_primary_key(&schema, &[Value::Binary(vec![0x41, 0x00, 0xFF])]).expect("ok");
    assert_eq!(hex(&key), "00 00 00 09 41 00 FF FF 00 01");
}

#[test]
fn range_on_a_desc_field() {
    // host = "db1", level = "error", 1_699_999_999_000 <= ts < 1_700_000_000_000: on the DESC
    // field the byte range starts at the exclusive end value and ends after the start value.
    let schema = events();
    let range = FieldRange {
        start: Some(RangeBound { value: Value::Timestamp(1_699_999_999_000), inclusive: true }),
        end: Some(RangeBound { value: Value::Timestamp(1_700_000_000_000), inclusive: false }),
    };
    let prefix = &example_key()[..2];
    let bytes = key_range(&schema, prefix, Some(&range)).expect("valid");
    assert_eq!(hex(&bytes.start), "00 00 00 07 64 62 31 00 01 00 02 7F FF FE 74 30 1A 98");
    let end = bytes.end.expect("bounded");
    assert_eq!(hex(&end), "00 00 00 07 64 62 31 00 01 00 02 7F FF FE 74 30 1A 9B E8");
}

#[test]
fn stored_row_with_two_versions() {
    use ringstore_model::table::stored_row::{StoredRow, StoredVersion};
    let prices = TableSchema::builder(TableId(3), "prices")
        .field("sku", FieldType::String)
        .field("price", FieldType::Long)
        .primary_key(&["sku"])
        .max_versions(3)
        .build()
        .expect("valid");
    let row_value = |price: i64| encode_row(&prices, 1, &[Some(Value::Long(price))]).unwrap();
    assert_eq!(hex(&row_value(7)), "01 01 01 07 00 00 00 00 00 00 00");
    let row = StoredRow {
        token: 0x0000_0001_0000_0002,
        versions: vec![
            StoredVersion { version: 1000, expiry_ms: 0, row: row_value(7) },
            StoredVersion { version: 900, expiry_ms: 0, row: row_value(5) },
        ],
    };
    let bytes = row.encode();
    let want = "01 02 00 00 00 01 00 00 00 02 00 \
                E8 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 0B 00 00 00 \
                01 01 01 07 00 00 00 00 00 00 00 \
                84 03 00 00 00 00 00 00 00 00 00 00 00 00 00 00 0B 00 00 00 \
                01 01 01 05 00 00 00 00 00 00 00";
    assert_eq!(hex(&bytes), want.split_whitespace().collect::<Vec<_>>().join(" "));
    assert_eq!(StoredRow::decode(&prices, &bytes).unwrap().to_owned_row(), row);
}
