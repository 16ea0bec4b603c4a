//! Proves every schema rule is enforced by the builder with its own typed error and stable code:
//! invalid names (table, field, ENUM value), duplicate fields, ENUM without values or with
//! duplicates, a missing, too long, unknown-field, BOOLEAN or repeated primary key, a shard key
//! that is empty or not a leading prefix, and out-of-range options. Each case starts from a valid
//! schema and breaks one rule, so the error can only come from that rule.

use ringstore_model::table::limits::*;
use ringstore_model::table::*;

/// A valid schema; each test changes one thing.
fn base() -> TableSchemaBuilder {
    TableSchema::builder(TableId(1), "orders")
        .field("userId", FieldType::String)
        .field("orderId", FieldType::Long)
        .field("status", FieldType::Enum(vec!["open".into(), "shipped".into()]))
        .field("paid", FieldType::Boolean)
        .primary_key(&["userId", "orderId"])
}

fn err(builder: TableSchemaBuilder) -> TableError {
    builder.build().expect_err("the schema breaks a rule")
}

#[test]
fn base_is_valid_with_defaults() {
    let schema = base().build().expect("valid");
    assert_eq!(schema.shard_key_len(), 2);
    assert_eq!(schema.options(), &TableOptions::default());
    assert_eq!(schema.options().max_versions, 1);
    assert_eq!(schema.options().ttl_seconds, None);
    assert_eq!(schema.options().max_version_offset_seconds, 86_400);
}

#[test]
fn invalid_names() {
    let e = err(TableSchema::builder(TableId(1), "9orders").field("a", FieldType::Long));
    assert!(matches!(e, TableError::InvalidName { role: NameRole::Table, .. }), "{e}");
    assert_eq!(e.code(), 101);
    let e = err(base().field("bad-name", FieldType::Long));
    assert!(
        matches!(&e, TableError::InvalidName { role: NameRole::Field, name, .. } if name == "bad-name")
    );
    assert!(e.to_string().contains("orders"), "{e}");
    let long = "x".repeat(NAME_CHARS_MAX + 1);
    let e = err(base().field(&long, FieldType::Long));
    assert!(e.to_string().contains("255"), "{e}");
    let e = err(base().field("size", FieldType::Enum(vec!["small".into(), "x y".into()])));
    assert!(matches!(e, TableError::InvalidName { role: NameRole::EnumValue, .. }), "{e}");
}

/// A bad name appears once in its message, and a too-long one only by its start: a 256-character
/// table name used to be printed twice in full (as the table, then as the bad name).
#[test]
fn a_bad_name_is_named_once_and_a_long_one_shortened() {
    let long = "t".repeat(NAME_CHARS_MAX + 1);
    let e = err(TableSchema::builder(TableId(1), &long).field("a", FieldType::Long));
    let text = e.to_string();
    let shown = format!("{:?}...", "t".repeat(SHOWN_NAME_CHARS));
    assert_eq!(
        text,
        format!("invalid table name {shown}: it is 256 characters; the limit is 255"),
        "{text}"
    );
    let e = err(TableSchema::builder(TableId(1), "9orders").field("a", FieldType::Long));
    assert_eq!(e.to_string().matches("9orders").count(), 1, "{e}");
    let long_field = "f".repeat(NAME_CHARS_MAX + 1);
    let text = err(base().field(&long_field, FieldType::Long)).to_string();
    assert!(text.starts_with("table orders: invalid field name \"ffff"), "{text}");
    assert!(text.len() < 150, "{text}");
}

#[test]
fn duplicate_field() {
    let e = err(base().field("orderId", FieldType::Integer));
    assert_eq!(e, TableError::DuplicateField { table: "orders".into(), field: "orderId".into() });
    assert_eq!(e.code(), 102);
    // Names are case-sensitive, so a different case is a different field.
    base().field("OrderId", FieldType::Integer).build().expect("valid");
}

#[test]
fn enum_rules() {
    let e = err(base().field("size", FieldType::Enum(vec![])));
    assert_eq!((e.code(), matches!(e, TableError::EnumEmpty { .. })), (103, true));
    let values = vec!["a".into(), "b".into(), "a".into()];
    let e = err(base().field("size", FieldType::Enum(values)));
    assert!(matches!(&e, TableError::EnumDuplicateValue { value, .. } if value == "a"));
    assert_eq!(e.code(), 104);
    let values: Vec<String> = (0..=ENUM_VALUES_MAX).map(|i| format!("v{i}")).collect();
    let e = err(base().field("size", FieldType::Enum(values)));
    assert!(
        matches!(e, TableError::EnumTooManyValues { count, .. } if count == ENUM_VALUES_MAX + 1)
    );
    assert_eq!(e.code(), 105);
    assert!(e.to_string().contains("65536"), "{e}");
}

#[test]
fn primary_key_rules() {
    let no_key = TableSchema::builder(TableId(1), "orders").field("a", FieldType::Long);
    let e = err(no_key);
    assert_eq!((e.code(), matches!(e, TableError::PrimaryKeyEmpty { .. })), (106, true));

    let mut wide = TableSchema::builder(TableId(1), "wide");
    let names: Vec<String> = (0..=PRIMARY_KEY_FIELDS_MAX).map(|i| format!("f{i}")).collect();
    for name in &names {
        wide = wide.field(name, FieldType::Integer).primary_key_field(name, false);
    }
    let e = err(wide);
    assert_eq!(e, TableError::TooManyKeyFields { table: "wide".into(), count: 9 });
    assert_eq!(e.code(), 107);
    assert!(e.to_string().contains("limit is 8"), "{e}");

    let e = err(base().primary_key(&["nope"]));
    assert_eq!(e, TableError::UnknownField { table: "orders".into(), field: "nope".into() });
    assert_eq!(e.code(), 202);

    let e = err(base().primary_key(&["paid"]));
    assert_eq!(e, TableError::BooleanKeyField { table: "orders".into(), field: "paid".into() });
    assert_eq!(e.code(), 108);

    let e = err(base().primary_key_field("userId", true));
    assert_eq!(e, TableError::DuplicateKeyField { table: "orders".into(), field: "userId".into() });
    assert_eq!(e.code(), 109);
}

#[test]
fn eight_key_fields_are_allowed() {
    let mut wide = TableSchema::builder(TableId(1), "wide");
    for i in 0..PRIMARY_KEY_FIELDS_MAX {
        let name = format!("f{i}");
        wide = wide.field(&name, FieldType::Integer).primary_key_field(&name, i % 2 == 0);
    }
    assert_eq!(wide.build().expect("valid").primary_key().len(), 8);
}

#[test]
fn shard_key_rules() {
    let schema = base().shard_key(&["userId"]).build().expect("valid");
    assert_eq!(schema.shard_key_len(), 1);
    let e = err(base().shard_key(&["orderId"]));
    assert!(matches!(&e, TableError::ShardKeyNotPrefix { field, position: 0, expected, .. }
        if field == "orderId" && expected == "userId"));
    assert_eq!(e.code(), 110);
    let e = err(base().shard_key(&["userId", "orderId", "status"]));
    assert!(matches!(e, TableError::ShardKeyNotPrefix { position: 2, .. }), "{e}");
    let e = err(base().shard_key(&[]));
    assert_eq!((e.code(), matches!(e, TableError::ShardKeyEmpty { .. })), (111, true));
}

#[test]
fn option_rules() {
    let e = err(base().max_versions(0));
    assert!(matches!(e, TableError::InvalidOption { option: "max_versions", value: 0, .. }));
    assert_eq!(e.code(), 112);
    let e = err(base().ttl_seconds(0));
    assert!(matches!(e, TableError::InvalidOption { option: "ttl_seconds", .. }));
    let e = err(base().ttl_seconds(DURATION_SECONDS_MAX + 1));
    assert!(e.to_string().contains(&DURATION_SECONDS_MAX.to_string()), "{e}");
    let e = err(base().max_version_offset_seconds(0));
    assert!(matches!(e, TableError::InvalidOption { option: "max_version_offset_seconds", .. }));

    let schema = base().max_versions(3).ttl_seconds(5 * 86_400).max_version_offset_seconds(60);
    let options = *schema.build().expect("valid").options();
    let want = TableOptions {
        max_versions: 3,
        ttl_seconds: Some(432_000),
        max_version_offset_seconds: 60,
    };
    assert_eq!(options, want);
}

/// 1,024 fields are a table; 1,025 (or 65,536, which once panicked the catalog encoder's u16
/// field count and with it a shard) are refused with code 113, before any per-field check.
#[test]
fn the_field_count_is_bounded() {
    let with_fields = |n: usize| {
        let mut b = TableSchema::builder(TableId(1), "wide").field("id", FieldType::Long);
        for i in 1..n {
            b = b.field(&format!("f{i}"), FieldType::Integer);
        }
        b.primary_key(&["id"])
    };
    let ok = with_fields(TABLE_FIELDS_MAX).build().expect("the limit itself is allowed");
    assert_eq!(ok.fields().len(), TABLE_FIELDS_MAX);
    for n in [TABLE_FIELDS_MAX + 1, 1 << 16] {
        let e = err(with_fields(n));
        assert_eq!(e, TableError::TooManyFields { table: "wide".into(), count: n });
        assert_eq!(e.code(), 113);
        assert!(e.to_string().contains("the limit is 1024"), "{e}");
    }
}
