//! Proves that every bad request to the typed table API (get, put, update, delete, write,
//! execute, multiGet, multiDelete and scan on a [`TableStore`]) is refused with its typed
//! [`TableError`], its stable code (the same through [`OpError::code`]) and a message that names
//! the table and, where they apply, the field and the limit crossed; and that a refused request
//! changes nothing. Each test opens a fresh store on the simulated disk with a manual clock,
//! creates the same four tables, seeds a few rows, then sends bad requests one at a time. After
//! every refused write (or multiDelete) it reads the table back in full, tokens included, and
//! checks it is exactly what it was before, so a write that was half applied or re-stamped would
//! be caught. Limits are also shown to be inclusive: the request just at a limit is accepted.

mod common;

use common::{open_tables, run, sim, T0_MS};
use ringstore_storage::constants::{BATCH_OPS_MAX, EXECUTE_OPS_MAX, SCAN_LIMIT_MAX};
use ringstore_storage::disk::sim::SimDisk;
use ringstore_storage::table::limits::{
    DURATION_SECONDS_MAX, ENCODED_KEY_BYTES_MAX, KEY_FIELD_BYTES_MAX, MAX_VERSIONS_MAX,
    ROW_BYTES_MAX,
};
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock};

type Tables = TableStore<SimDisk>;

const SYNC: Durability = Durability::Sync;

/// The tables every test starts with. `items` has a two-field shard key under a three-field
/// primary key; `tags` has an ENUM and a DOUBLE key field (and a DOUBLE value); `wide` has three
/// STRING key fields, so a key can pass 2 KiB with every field under 1 KiB; `hourly` has a TTL.
const TABLES: &str = "
    CREATE TABLE items (a STRING, b LONG, c STRING, v BINARY, n INTEGER, e ENUM(red, green, blue),
                        PRIMARY KEY (SHARD(a, b), c));
    CREATE TABLE tags (k ENUM(red, green, blue), x DOUBLE, w DOUBLE, PRIMARY KEY (k, x));
    CREATE TABLE wide (p STRING, q STRING, r STRING, PRIMARY KEY (SHARD(p), q, r));
    CREATE TABLE hourly (a STRING, n INTEGER, PRIMARY KEY (a)) USING TTL 1 HOURS;
";

/// The default client version window (`max_version_offset`), in ms.
const OFFSET_MS: u64 = 86_400 * 1000;

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

/// The full key of an `items` row.
fn item_key(a: &str, b: i64, c: &str) -> Vec<(&'static str, Value)> {
    vec![("a", s(a)), ("b", Value::Long(b)), ("c", s(c))]
}

/// An `items` row with every field set.
fn item(a: &str, b: i64, c: &str, n: i32) -> Vec<(&'static str, Value)> {
    let mut row = item_key(a, b, c);
    row.extend([
        ("v", Value::Binary(vec![1, 2, 3])),
        ("n", Value::Integer(n)),
        ("e", Value::Enum("red".into())),
    ]);
    row
}

/// The keys of the `items` rows every test starts with.
const SEEDED_ITEMS: [(&str, i64, &str); 5] =
    [("x", 1, "c1"), ("x", 1, "c2"), ("x", 1, "c3"), ("x", 2, "c1"), ("y", 1, "c1")];

/// A store with [`TABLES`] and rows `items` (x, 1, c1..c3), (x, 2, c1), (y, 1, c1), and
/// `tags` (red, 1.5), `wide` (p, q, r), `hourly` (h).
async fn open(seed: u64) -> (ManualClock, Tables) {
    let (disk, clock) = (sim(seed), ManualClock::new(T0_MS));
    let ts = open_tables(&disk, &clock).await.expect("open");
    ts.ddl(TABLES).await.expect("create tables");
    for (a, b, c) in SEEDED_ITEMS {
        ts.put("items", &item(a, b, c, 7), SYNC).await.expect("seed items");
    }
    let tag = [("k", Value::Enum("red".into())), ("x", Value::Double(1.5))];
    ts.put("tags", &tag, SYNC).await.expect("seed tags");
    ts.put("wide", &[("p", s("p")), ("q", s("q")), ("r", s("r"))], SYNC).await.expect("seed");
    ts.put("hourly", &[("a", s("h")), ("n", Value::Integer(1))], SYNC).await.expect("seed");
    (clock, ts)
}

/// Every row of `table` with every kept version (tokens included), by an allowed full scan.
async fn dump(ts: &Tables, table: &str) -> Vec<TableRow> {
    let req = RangeRequest {
        allow_full_scan: true,
        versions: VersionSelect::Latest(MAX_VERSIONS_MAX),
        ..RangeRequest::new(&[], SCAN_LIMIT_MAX)
    };
    let page = ts.scan(table, &req).await.expect("full scan");
    assert_eq!(page.resume, None, "test tables fit in one page");
    page.rows
}

/// What a refused request must leave as it was: every table's rows by scan, and each seeded
/// `items` row by get (both with tokens, so even a rewrite of the same values shows).
async fn dump_all(ts: &Tables) -> (Vec<Vec<TableRow>>, Vec<Option<TableRow>>) {
    let mut scans = Vec::new();
    for table in ["items", "tags", "wide", "hourly"] {
        scans.push(dump(ts, table).await);
    }
    let mut gets = Vec::new();
    for (a, b, c) in SEEDED_ITEMS {
        gets.push(get_item(ts, a, b, c).await);
    }
    (scans, gets)
}

async fn get_item(ts: &Tables, a: &str, b: i64, c: &str) -> Option<TableRow> {
    ts.get("items", &item_key(a, b, c), VersionSelect::Newest).await.expect("get")
}

/// The table error of a refused request, after checking its code (directly and through
/// [`OpError::code`]) and that its message names `table` and contains each of `parts`.
#[track_caller]
fn refused<T: std::fmt::Debug>(
    result: OpResult<T>,
    code: u16,
    table: &str,
    parts: &[&str],
) -> TableError {
    let op_code = result.as_ref().err().map(OpError::code);
    let e = match result {
        Err(OpError::Table(e)) => e,
        other => panic!("expected table error {code}, got {other:?}"),
    };
    assert_eq!((e.code(), op_code), (code, Some(code)), "{e}");
    let message = e.to_string();
    assert!(message.contains(&format!("table {table}")), "{message:?} does not name {table}");
    for part in parts {
        assert!(message.contains(part), "{message:?} does not contain {part:?}");
    }
    e
}

fn written_version(outcome: &WriteOutcome) -> u64 {
    match outcome {
        WriteOutcome::Written { version, .. } => *version,
        other => panic!("expected Written, got {other:?}"),
    }
}

#[test]
fn unknown_table_201_on_every_operation() {
    run(|| async move {
        let (_clock, ts) = open(201).await;
        let before = dump_all(&ts).await;
        let key = item_key("x", 1, "c1");
        let row = item("x", 1, "c1", 8);
        let range = RangeRequest::new(&key[..2], 10);
        let parts = ["does not exist"];
        for table in ["nosuch", "Items", ""] {
            refused(ts.get(table, &key, VersionSelect::Newest).await, 201, table, &parts);
            refused(ts.put(table, &row, SYNC).await, 201, table, &parts);
            let set = [("n", Some(Value::Integer(1)))];
            refused(ts.update(table, &key, &set, SYNC).await, 201, table, &parts);
            refused(ts.delete(table, &key, SYNC).await, 201, table, &parts);
            let op = WriteOp::put(&row).condition(Condition::IfAbsent);
            refused(ts.write(table, &op, SYNC).await, 201, table, &parts);
            let opts = ExecuteOptions::default();
            refused(ts.execute(table, &[op], opts).await, 201, table, &parts);
            refused(ts.multi_get(table, &range).await, 201, table, &parts);
            refused(ts.multi_delete(table, &range, SYNC).await, 201, table, &parts);
            refused(ts.scan(table, &range).await, 201, table, &parts);
        }
        let e = refused(ts.get("nosuch", &key, VersionSelect::Newest).await, 201, "nosuch", &[]);
        assert_eq!(e, TableError::UnknownTable { table: "nosuch".into() });
        assert_eq!(e.to_string(), "table nosuch does not exist");
        assert_eq!(dump_all(&ts).await, before, "table names are case-sensitive; nothing changed");
    });
}

#[test]
fn unknown_field_202_in_put_update_and_keys() {
    run(|| async move {
        let (_clock, ts) = open(202).await;
        let before = dump_all(&ts).await;
        let mut row = item("x", 1, "c1", 8);
        row.push(("colour", Value::Enum("red".into())));
        let e = refused(ts.put("items", &row, SYNC).await, 202, "items", &["no field colour"]);
        assert_eq!(e, TableError::UnknownField { table: "items".into(), field: "colour".into() });
        // A new row with an unknown field is refused as well: nothing is created.
        let mut row = item("z", 1, "c1", 8);
        row.push(("zz", Value::Long(1)));
        refused(ts.put("items", &row, SYNC).await, 202, "items", &["no field zz"]);

        let key = item_key("x", 1, "c1");
        let set = [("n", Some(Value::Integer(9))), ("size", Some(Value::Long(3)))];
        let e = refused(ts.update("items", &key, &set, SYNC).await, 202, "items", &["field size"]);
        assert_eq!(e, TableError::UnknownField { table: "items".into(), field: "size".into() });
        let clear = [("size", None)];
        refused(ts.update("items", &key, &clear, SYNC).await, 202, "items", &["field size"]);

        // Unknown names in a key, full or partial.
        let mut bad_key = item_key("x", 1, "c1");
        bad_key.push(("d", Value::Long(1)));
        refused(ts.get("items", &bad_key, VersionSelect::Newest).await, 202, "items", &["field d"]);
        refused(ts.delete("items", &bad_key, SYNC).await, 202, "items", &["field d"]);
        let partial = [("a", s("x")), ("bb", Value::Long(1))];
        let req = RangeRequest::new(&partial, 10);
        refused(ts.multi_get("items", &req).await, 202, "items", &["field bb"]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn missing_key_field_203_names_the_field() {
    run(|| async move {
        let (_clock, ts) = open(203).await;
        let before = dump_all(&ts).await;
        let row: Vec<_> = item("x", 1, "c9", 8).into_iter().filter(|(f, _)| *f != "c").collect();
        let e = refused(ts.put("items", &row, SYNC).await, 203, "items", &["key field c"]);
        assert_eq!(e, TableError::MissingKeyField { table: "items".into(), field: "c".into() });
        // With b and c both missing, the first missing one in key order is named.
        let row = [("a", s("x")), ("n", Value::Integer(1))];
        let e = refused(ts.put("items", &row, SYNC).await, 203, "items", &["key field b"]);
        assert_eq!(e, TableError::MissingKeyField { table: "items".into(), field: "b".into() });
        let key = [("b", Value::Long(1)), ("c", s("c1"))];
        refused(ts.get("items", &key, VersionSelect::Newest).await, 203, "items", &["field a"]);
        refused(ts.delete("items", &key, SYNC).await, 203, "items", &["field a"]);
        let set = [("n", Some(Value::Integer(1)))];
        refused(ts.update("items", &key, &set, SYNC).await, 203, "items", &["field a"]);
        let tag = [("x", Value::Double(1.5))];
        refused(ts.put("tags", &tag, SYNC).await, 203, "tags", &["key field k"]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn partial_key_not_prefix_204() {
    run(|| async move {
        let (_clock, ts) = open(204).await;
        let before = dump_all(&ts).await;
        // a and c without b.
        let key = [("a", s("x")), ("c", s("c1"))];
        let req = RangeRequest::new(&key, 10);
        let e = refused(ts.multi_get("items", &req).await, 204, "items", &["gives c without b"]);
        let expected = TableError::PartialKeyNotPrefix {
            table: "items".into(),
            field: "c".into(),
            missing: "b".into(),
        };
        assert_eq!(e, expected);
        refused(ts.multi_delete("items", &req, SYNC).await, 204, "items", &["c without b"]);
        // A scan may be shorter than the shard key, but still a prefix: b alone skips a.
        let key = [("b", Value::Long(1))];
        let req = RangeRequest { allow_full_scan: true, ..RangeRequest::new(&key, 10) };
        refused(ts.scan("items", &req).await, 204, "items", &["gives b without a"]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn type_mismatch_205_names_expected_and_got() {
    run(|| async move {
        let (_clock, ts) = open(205).await;
        let before = dump_all(&ts).await;
        // A key field of the wrong type.
        let mut row = item("x", 1, "c1", 8);
        row[1] = ("b", s("1"));
        let e = refused(ts.put("items", &row, SYNC).await, 205, "items", &[]);
        assert_eq!(e.to_string(), "table items: field b is LONG; got a STRING value");
        // A non-key field of the wrong type, on an existing row.
        let mut row = item("x", 1, "c1", 8);
        row[3] = ("v", Value::Long(5));
        let e = refused(ts.put("items", &row, SYNC).await, 205, "items", &[]);
        let expected = TableError::TypeMismatch {
            table: "items".into(),
            field: "v".into(),
            expected: "BINARY",
            got: "LONG",
        };
        assert_eq!(e, expected);
        let key = item_key("x", 1, "c1");
        let set = [("n", Some(Value::Long(3)))];
        let e = refused(ts.update("items", &key, &set, SYNC).await, 205, "items", &[]);
        assert_eq!(e.to_string(), "table items: field n is INTEGER; got a LONG value");
        // In a key to read, and in an ENUM field given a STRING.
        let key = [("a", s("x")), ("b", Value::Integer(1)), ("c", s("c1"))];
        let e = refused(ts.get("items", &key, VersionSelect::Newest).await, 205, "items", &[]);
        assert!(e.to_string().ends_with("field b is LONG; got a INTEGER value"), "{e}");
        let tag = [("k", s("red")), ("x", Value::Double(1.5))];
        refused(ts.put("tags", &tag, SYNC).await, 205, "tags", &["field k is ENUM", "STRING"]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn key_field_over_1024_bytes_206() {
    run(|| async move {
        let (_clock, ts) = open(206).await;
        let before = dump_all(&ts).await;
        let over = "c".repeat(KEY_FIELD_BYTES_MAX + 1);
        let e = refused(ts.put("items", &item("x", 1, &over, 8), SYNC).await, 206, "items", &[]);
        let expected =
            TableError::KeyFieldTooLarge { table: "items".into(), field: "c".into(), len: 1025 };
        assert_eq!(e, expected);
        assert_eq!(
            e.to_string(),
            "table items: key field c value is 1025 bytes (its own bytes: UTF-8 for a STRING, \
             before escaping); the limit is 1024 bytes per key value"
        );
        let key = item_key(&over, 1, "c1");
        refused(ts.get("items", &key, VersionSelect::Newest).await, 206, "items", &["field a"]);
        let partial = [("a", s(&over))];
        let req = RangeRequest { allow_full_scan: true, ..RangeRequest::new(&partial, 10) };
        refused(ts.scan("items", &req).await, 206, "items", &["field a", "1024"]);
        assert_eq!(dump_all(&ts).await, before);

        // Exactly 1024 bytes is allowed.
        let at_limit = "c".repeat(KEY_FIELD_BYTES_MAX);
        ts.put("items", &item("x", 1, &at_limit, 8), SYNC).await.expect("1 KiB key field");
        assert!(get_item(&ts, "x", 1, &at_limit).await.is_some());
    });
}

/// 207 (the whole encoded key over `ENCODED_KEY_BYTES_MAX`) is a guard no request reaches: the
/// limit is sized for every key field at its largest, so keys whose fields each fit 206's 1 KiB
/// are accepted by every operation, however long together (this key was 207 when the limit was
/// 2 KiB).
#[test]
fn keys_within_the_field_limit_are_never_207() {
    run(|| async move {
        let (_clock, ts) = open(207).await;
        let (p, q, r) = ("p".repeat(1000), "q".repeat(1000), "r".repeat(100));
        let row = [("p", s(&p)), ("q", s(&q)), ("r", s(&r))];
        ts.put("wide", &row, SYNC).await.expect("2.1 KiB key");
        assert!(ts.get("wide", &row, VersionSelect::Newest).await.expect("get").is_some());
        let ops = [WriteOp::put(&row)];
        ts.execute("wide", &ops, ExecuteOptions::default()).await.expect("execute");
        ts.delete("wide", &row, SYNC).await.expect("delete");
        assert!(ts.get("wide", &row, VersionSelect::Newest).await.expect("get").is_none());
        let most = KEY_FIELD_BYTES_MAX * 3 + 3 * 2;
        assert!(most < ENCODED_KEY_BYTES_MAX, "wide's largest key, {most} bytes, fits");
    });
}

#[test]
fn enum_value_not_in_list_208() {
    run(|| async move {
        let (_clock, ts) = open(208).await;
        let before = dump_all(&ts).await;
        let tag = [("k", Value::Enum("purple".into())), ("x", Value::Double(1.5))];
        let parts = ["field k", "\"purple\"", "red, green, blue"];
        let e = refused(ts.put("tags", &tag, SYNC).await, 208, "tags", &parts);
        assert!(matches!(&e, TableError::EnumValueNotInList { field, value, .. }
            if field == "k" && value == "purple"));
        refused(ts.get("tags", &tag, VersionSelect::Newest).await, 208, "tags", &parts);
        // Non-key ENUM fields are checked too, in puts and updates; symbols are case-sensitive.
        let mut row = item("x", 1, "c1", 8);
        row[5] = ("e", Value::Enum("Red".into()));
        let parts = ["field e", "\"Red\"", "red, green, blue"];
        refused(ts.put("items", &row, SYNC).await, 208, "items", &parts);
        let set = [("e", Some(Value::Enum("Red".into())))];
        let key = item_key("x", 1, "c1");
        refused(ts.update("items", &key, &set, SYNC).await, 208, "items", &parts);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn nan_in_key_209_but_not_in_a_value() {
    run(|| async move {
        let (_clock, ts) = open(209).await;
        let before = dump_all(&ts).await;
        let tag = [("k", Value::Enum("red".into())), ("x", Value::Double(f64::NAN))];
        let e = refused(ts.put("tags", &tag, SYNC).await, 209, "tags", &["key field x is NaN"]);
        assert_eq!(e, TableError::NanInKey { table: "tags".into(), field: "x".into() });
        refused(ts.get("tags", &tag, VersionSelect::Newest).await, 209, "tags", &["field x"]);
        refused(ts.delete("tags", &tag, SYNC).await, 209, "tags", &["field x"]);
        let req = RangeRequest {
            allow_full_scan: true,
            range: Some(FieldRange {
                start: Some(RangeBound { value: Value::Double(f64::NAN), inclusive: true }),
                end: None,
            }),
            ..RangeRequest::new(&tag[..1], 10)
        };
        refused(ts.scan("tags", &req).await, 209, "tags", &["field x"]);
        assert_eq!(dump_all(&ts).await, before);
        // NaN in a non-key field has no order to break, so it is stored.
        let row = [
            ("k", Value::Enum("red".into())),
            ("x", Value::Double(1.5)),
            ("w", Value::Double(f64::NAN)),
        ];
        ts.put("tags", &row, SYNC).await.expect("NaN value");
        let schema = ts.table("tags").expect("tags").schema().clone();
        let got = ts.get("tags", &row[..2], VersionSelect::Newest).await.expect("get");
        let w = got.expect("row").newest().get(&schema, "w").cloned();
        assert!(matches!(w, Some(Value::Double(d)) if d.is_nan()), "{w:?}");
    });
}

#[test]
fn not_a_key_field_211() {
    run(|| async move {
        let (_clock, ts) = open(211).await;
        let before = dump_all(&ts).await;
        let partial = [("a", s("x")), ("b", Value::Long(1)), ("n", Value::Integer(7))];
        let req = RangeRequest::new(&partial, 10);
        let e = refused(ts.multi_get("items", &req).await, 211, "items", &["field n"]);
        assert_eq!(e.to_string(), "table items: field n is not a primary key field");
        refused(ts.multi_delete("items", &req, SYNC).await, 211, "items", &["field n"]);
        let mut key = item_key("x", 1, "c1");
        key.push(("v", Value::Binary(vec![1, 2, 3])));
        refused(ts.get("items", &key, VersionSelect::Newest).await, 211, "items", &["field v"]);
        refused(ts.delete("items", &key, SYNC).await, 211, "items", &["field v"]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn key_field_given_twice_212() {
    run(|| async move {
        let (_clock, ts) = open(212).await;
        let before = dump_all(&ts).await;
        let mut row = item("x", 1, "c1", 8);
        row.push(("c", s("c2")));
        let e = refused(ts.put("items", &row, SYNC).await, 212, "items", &["key field c"]);
        assert_eq!(e, TableError::DuplicateKeyValue { table: "items".into(), field: "c".into() });
        let key = [("a", s("x")), ("a", s("x")), ("b", Value::Long(1)), ("c", s("c1"))];
        let e = refused(ts.get("items", &key, VersionSelect::Newest).await, 212, "items", &[]);
        assert_eq!(e.to_string(), "table items: key field a is given twice");
        refused(ts.delete("items", &key, SYNC).await, 212, "items", &["field a"]);
        let partial = [("a", s("x")), ("b", Value::Long(1)), ("b", Value::Long(2))];
        let req = RangeRequest::new(&partial, 10);
        refused(ts.multi_get("items", &req).await, 212, "items", &["field b"]);
        // A non-key field given twice is its own request error, 231.
        let mut row = item("x", 1, "c1", 8);
        row.push(("n", Value::Integer(9)));
        refused(ts.put("items", &row, SYNC).await, 231, "items", &["field n is given twice"]);
        let key = item_key("x", 1, "c1");
        let set = [("n", Some(Value::Integer(1))), ("n", None)];
        refused(ts.update("items", &key, &set, SYNC).await, 231, "items", &["field n"]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn range_after_full_key_213() {
    run(|| async move {
        let (_clock, ts) = open(213).await;
        let before = dump_all(&ts).await;
        let key = item_key("x", 1, "c1");
        let range =
            FieldRange { start: Some(RangeBound { value: s("c1"), inclusive: true }), end: None };
        let req = RangeRequest { range: Some(range), ..RangeRequest::new(&key, 10) };
        let e = refused(ts.multi_get("items", &req).await, 213, "items", &["all 3 key fields"]);
        assert_eq!(e, TableError::RangeAfterFullKey { table: "items".into(), fields: 3 });
        refused(ts.multi_delete("items", &req, SYNC).await, 213, "items", &["all 3 key fields"]);
        refused(ts.scan("items", &req).await, 213, "items", &["all 3 key fields"]);
        assert_eq!(dump_all(&ts).await, before);
        // The same range one field earlier is fine.
        let req = RangeRequest { range: req.range.clone(), ..RangeRequest::new(&key[..2], 10) };
        assert_eq!(ts.multi_get("items", &req).await.expect("range on c").rows.len(), 3);
    });
}

#[test]
fn key_shorter_than_shard_key_216() {
    run(|| async move {
        let (_clock, ts) = open(216).await;
        let before = dump_all(&ts).await;
        let key = [("a", s("x"))];
        let req = RangeRequest::new(&key, 10);
        let e = refused(ts.multi_get("items", &req).await, 216, "items", &["1 of the 2", "(a, b)"]);
        let expected = TableError::ShardKeyNotCovered {
            table: "items".into(),
            given: 1,
            needed: 2,
            shard_key: "a, b".into(),
            hint: "",
        };
        assert_eq!(e, expected);
        let e = refused(ts.multi_delete("items", &req, SYNC).await, 216, "items", &["(a, b)"]);
        assert_eq!(e, expected);
        // allow_full_scan is for scans only; multiGet and multiDelete still refuse.
        let req = RangeRequest { allow_full_scan: true, ..RangeRequest::new(&[], 10) };
        refused(ts.multi_get("items", &req).await, 216, "items", &["0 of the 2"]);
        refused(ts.multi_delete("items", &req, SYNC).await, 216, "items", &["0 of the 2"]);
        assert_eq!(dump_all(&ts).await, before, "multiDelete deleted nothing");
    });
}

/// When the shard key is the whole primary key, 216 names the fix (a shorter shard key); `items`
/// (shard key shorter than its key) gets no such hint.
#[test]
fn whole_key_shard_key_errors_name_the_fix() {
    run(|| async move {
        let (_clock, ts) = open(2167).await;
        let key = [("k", Value::Enum("red".into()))];
        let req = RangeRequest::new(&key, 10);
        let fix = ["whole primary key", "shorter shard key", "SHARD(a)", "shard-key -field a"];
        let e = refused(ts.multi_get("tags", &req).await, 216, "tags", &fix);
        assert!(matches!(e, TableError::ShardKeyNotCovered { hint: WHOLE_KEY_SHARD_HINT, .. }));
        let e = refused(ts.multi_delete("tags", &req, SYNC).await, 216, "tags", &fix);
        assert!(matches!(e, TableError::ShardKeyNotCovered { hint: WHOLE_KEY_SHARD_HINT, .. }));
        let items = [("a", s("x"))];
        let e = ts.multi_get("items", &RangeRequest::new(&items, 10)).await.expect_err("216");
        assert!(!e.to_string().contains("shorter shard key"), "{e}");
    });
}

#[test]
fn scan_that_bounds_no_key_field_needs_allow_full_scan_217() {
    run(|| async move {
        let (_clock, ts) = open(217).await;
        let schema = ts.table("items").expect("items").schema().clone();
        let none = RangeRequest::new(&[], 10);
        let parts = ["no value or range for the first key field a", "allow_full_scan"];
        let e = refused(ts.scan("items", &none).await, 217, "items", &parts);
        let expected = TableError::FullScanNotAllowed { table: "items".into(), first: "a".into() };
        assert_eq!(e, expected);
        // A range on the first key field with neither bound bounds nothing either.
        let open_range = RangeRequest {
            range: Some(FieldRange { start: None, end: None }),
            ..RangeRequest::new(&[], 10)
        };
        refused(ts.scan("items", &open_range).await, 217, "items", &["first key field a"]);

        // A value for the first key field bounds the scan, though it is shorter than the shard
        // key: it runs without the flag and returns the rows, in key order.
        let c_of = |page: &RowPage| -> Vec<(Value, Value, Value)> {
            let f = |r: &TableRow, n: &str| r.newest().get(&schema, n).cloned().expect("key field");
            page.rows.iter().map(|r| (f(r, "a"), f(r, "b"), f(r, "c"))).collect()
        };
        let key = [("a", s("x"))];
        let page = ts.scan("items", &RangeRequest::new(&key, 10)).await.expect("bounded scan");
        let xs = |b: i64, c: &str| (s("x"), Value::Long(b), s(c));
        assert_eq!(c_of(&page), [xs(1, "c1"), xs(1, "c2"), xs(1, "c3"), xs(2, "c1")]);
        assert_eq!(page.resume, None);
        // So does a range on the first key field with one bound.
        let from_y = RangeRequest {
            range: Some(FieldRange {
                start: Some(RangeBound { value: s("y"), inclusive: true }),
                end: None,
            }),
            ..RangeRequest::new(&[], 10)
        };
        let page = ts.scan("items", &from_y).await.expect("bounded scan");
        assert_eq!(c_of(&page), [(s("y"), Value::Long(1), s("c1"))]);
        // Allowed, the unbounded scan reads the whole table.
        let none = RangeRequest { allow_full_scan: true, ..none };
        let page = ts.scan("items", &none).await.expect("allowed full scan");
        assert_eq!(page.rows.len(), 5);
        assert_eq!(c_of(&page)[4], (s("y"), Value::Long(1), s("c1")));
    });
}

#[test]
fn execute_with_mixed_shard_keys_218() {
    run(|| async move {
        let (_clock, ts) = open(218).await;
        let before = dump_all(&ts).await;
        let (r0, r1, r2) = (item("x", 1, "c9", 8), item("x", 1, "c8", 8), item("x", 2, "c9", 8));
        let ops = [WriteOp::put(&r0), WriteOp::put(&r1), WriteOp::put(&r2)];
        let opts = ExecuteOptions { abort_on_failure: true, ..Default::default() };
        let parts = ["operation 2 has another shard key than operation 0"];
        let e = refused(ts.execute("items", &ops, opts).await, 218, "items", &parts);
        assert_eq!(e, TableError::ExecuteMixedShardKeys { table: "items".into(), index: 2 });
        // The same shard key with a different c is fine; a delete counts as well.
        let other = item_key("y", 1, "c1");
        let ops = [WriteOp::put(&r0), WriteOp::delete(&other)];
        refused(ts.execute("items", &ops, opts).await, 218, "items", &["operation 1"]);
        assert_eq!(dump_all(&ts).await, before, "nothing of a refused execute is written");
        let ops = [WriteOp::put(&r0), WriteOp::put(&r1)];
        ts.execute("items", &ops, opts).await.expect("one shard key");
        assert!(get_item(&ts, "x", 1, "c8").await.is_some());
    });
}

#[test]
fn execute_with_a_duplicate_key_219() {
    run(|| async move {
        let (_clock, ts) = open(219).await;
        let before = dump_all(&ts).await;
        let (r0, r1) = (item("x", 1, "c9", 8), item("x", 1, "c8", 8));
        let key1 = item_key("x", 1, "c8");
        let ops = [WriteOp::put(&r0), WriteOp::put(&r1), WriteOp::delete(&key1)];
        let parts = ["operations 1 and 2 address the same row"];
        let e = refused(
            ts.execute("items", &ops, ExecuteOptions::default()).await,
            219,
            "items",
            &parts,
        );
        assert_eq!(
            e,
            TableError::ExecuteDuplicateKey { table: "items".into(), first: 1, index: 2 }
        );
        let set = [("n", Some(Value::Integer(1)))];
        let key0 = item_key("x", 1, "c9");
        let ops = [WriteOp::put(&r0), WriteOp::update(&key0, &set)];
        refused(
            ts.execute("items", &ops, ExecuteOptions::default()).await,
            219,
            "items",
            &["0 and 1"],
        );
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn execute_with_0_or_1001_ops_220() {
    run(|| async move {
        let (_clock, ts) = open(220).await;
        let before = dump_all(&ts).await;
        let opts = ExecuteOptions::default();
        let e = refused(
            ts.execute("items", &[], opts).await,
            220,
            "items",
            &["0 operations", "1..=1000 operations (EXECUTE_OPS_MAX)"],
        );
        assert_eq!(e, TableError::ExecuteSize { table: "items".into(), ops: 0 });
        // The limit is EXECUTE_OPS_MAX (the protocol's too), not the store's BATCH_OPS_MAX.
        let rows: Vec<_> =
            (0..=EXECUTE_OPS_MAX).map(|i| item("z", 1, &format!("c{i:04}"), i as i32)).collect();
        let ops: Vec<_> = rows.iter().map(|r| WriteOp::put(r)).collect();
        assert_eq!(ops.len(), 1001);
        assert!(ops.len() < BATCH_OPS_MAX, "refused below the store's batch limit");
        let parts = ["1001 operations", "1..=1000 operations (EXECUTE_OPS_MAX)"];
        let e = refused(ts.execute("items", &ops, opts).await, 220, "items", &parts);
        assert_eq!(e, TableError::ExecuteSize { table: "items".into(), ops: 1001 });
        assert_eq!(dump_all(&ts).await, before);
        // 1000 operations are one batch.
        let done = ts.execute("items", &ops[..EXECUTE_OPS_MAX], opts).await.expect("1000 ops");
        let written = matches!(&done, ExecuteOutcome::Done(o) if o.len() == EXECUTE_OPS_MAX);
        assert!(written, "{done:?}");
        assert_eq!(dump(&ts, "items").await.len(), 5 + EXECUTE_OPS_MAX);
    });
}

#[test]
fn client_version_outside_the_window_221() {
    run(|| async move {
        let (clock, ts) = open(221).await;
        let before = dump_all(&ts).await;
        let (low, high) = (T0_MS - OFFSET_MS, T0_MS + OFFSET_MS);
        for version in [low - 1, high, high + 1, 0, u64::MAX] {
            let row = item("x", 1, "c1", 8);
            let op = WriteOp::put(&row).version(version);
            let e = refused(ts.write("items", &op, SYNC).await, 221, "items", &["86400 s"]);
            let expected = TableError::VersionOutOfWindow {
                table: "items".into(),
                version,
                now_ms: T0_MS,
                offset_seconds: 86_400,
            };
            assert_eq!(e, expected);
            assert!(e.to_string().contains(&format!("version {version} is outside")), "{e}");
        }
        let key = item_key("x", 1, "c1");
        let set = [("n", Some(Value::Integer(9)))];
        let op = WriteOp::update(&key, &set).version(high);
        refused(ts.write("items", &op, SYNC).await, 221, "items", &["max_version_offset"]);
        let op = WriteOp::delete(&key).version(low - 1);
        refused(ts.write("items", &op, SYNC).await, 221, "items", &["max_version_offset"]);
        let (r0, r1) = (item("x", 1, "c7", 8), item("x", 1, "c8", 8));
        let ops = [WriteOp::put(&r0), WriteOp::put(&r1).version(high)];
        refused(ts.execute("items", &ops, ExecuteOptions::default()).await, 221, "items", &[]);
        assert_eq!(dump_all(&ts).await, before);

        // The window is [now - offset, now + offset): both ends just inside are accepted.
        let row = item("w", 1, "low", 1);
        let done = ts.write("items", &WriteOp::put(&row).version(low), SYNC).await.expect("low");
        assert_eq!(written_version(&done), low);
        assert_eq!(get_item(&ts, "w", 1, "low").await.expect("row").newest().version, low);
        let row = item("w", 1, "high", 1);
        let op = WriteOp::put(&row).version(high - 1);
        assert_eq!(written_version(&ts.write("items", &op, SYNC).await.expect("high")), high - 1);
        assert_eq!(get_item(&ts, "w", 1, "high").await.expect("row").newest().version, high - 1);
        // The window moves with the clock.
        clock.advance(1);
        let row = item("w", 1, "again", 1);
        let op = WriteOp::put(&row).version(low);
        refused(ts.write("items", &op, SYNC).await, 221, "items", &[]);
        let op = WriteOp::put(&row).version(high);
        ts.write("items", &op, SYNC).await.expect("now + offset - 1 after 1 ms");
    });
}

#[test]
fn expired_write_222() {
    run(|| async move {
        let (clock, ts) = open(222).await;
        let before = dump_all(&ts).await;
        let hour_ms = 3_600_000;
        // Table TTL of 1 hour: a version 1 hour old would expire right now.
        let row = [("a", s("old")), ("n", Value::Integer(1))];
        let version = T0_MS - hour_ms;
        let op = WriteOp::put(&row).version(version);
        let named = format!("version {version}");
        let parts = ["already-expired data is not written", named.as_str()];
        let e = refused(ts.write("hourly", &op, SYNC).await, 222, "hourly", &parts);
        let expected = TableError::ExpiredWrite {
            table: "hourly".into(),
            version,
            expiry_ms: T0_MS,
            now_ms: T0_MS,
        };
        assert_eq!(e, expected);
        // An update of an existing row with such a version is refused too.
        let key = [("a", s("h"))];
        let set = [("n", Some(Value::Integer(2)))];
        let op = WriteOp::update(&key, &set).version(version - 5);
        refused(ts.write("hourly", &op, SYNC).await, 222, "hourly", &[]);
        // A per-write TTL counts from the version as well, on a table without a TTL.
        let item_row = item("x", 1, "c1", 8);
        let op = WriteOp::put(&item_row).version(T0_MS - 10_000).ttl_seconds(10);
        refused(ts.write("items", &op, SYNC).await, 222, "items", &[]);
        let ops = [op];
        refused(ts.execute("items", &ops, ExecuteOptions::default()).await, 222, "items", &[]);
        assert_eq!(dump_all(&ts).await, before);

        // One millisecond younger is written and lives for that millisecond.
        let row = [("a", s("edge")), ("n", Value::Integer(1))];
        let op = WriteOp::put(&row).version(version + 1);
        ts.write("hourly", &op, SYNC).await.expect("expires after now");
        let got = ts.get("hourly", &row[..1], VersionSelect::Newest).await.expect("get");
        assert_eq!(got.expect("row").newest().expiry_ms, T0_MS + 1);
        let op = WriteOp::put(&item_row).version(T0_MS - 10_000).ttl_seconds(11);
        ts.write("items", &op, SYNC).await.expect("per-write TTL");
        assert_eq!(
            get_item(&ts, "x", 1, "c1").await.expect("row").newest().expiry_ms,
            T0_MS + 1000
        );
        clock.advance(1);
        assert_eq!(ts.get("hourly", &row[..1], VersionSelect::Newest).await.expect("get"), None);
    });
}

#[test]
fn resume_token_outside_the_range_223() {
    run(|| async move {
        let (_clock, ts) = open(223).await;
        let before = dump_all(&ts).await;
        let partial = item_key("x", 1, "");
        let partial = &partial[..2];
        // A good token first: the resume of a one-row page.
        let page = ts.multi_get("items", &RangeRequest::new(partial, 1)).await.expect("page");
        let good = page.resume.expect("more rows follow");
        let req = RangeRequest { resume: Some(good.clone()), ..RangeRequest::new(partial, 10) };
        assert_eq!(ts.multi_get("items", &req).await.expect("next page").rows.len(), 2);

        let other_partition = get_item(&ts, "y", 1, "c1").await.expect("row").key;
        let tag = [("k", Value::Enum("red".into())), ("x", Value::Double(1.5))];
        let other_table = ts.get("tags", &tag, VersionSelect::Newest).await.expect("get");
        let other_table = other_table.expect("tag").key;
        for bad in [other_partition, other_table, Vec::new(), vec![0xFF; 8]] {
            let req = RangeRequest { resume: Some(bad.clone()), ..RangeRequest::new(partial, 10) };
            let parts = ["resume token is not valid", "not a key inside the request's key range"];
            let e = refused(ts.multi_get("items", &req).await, 223, "items", &parts);
            assert!(matches!(e, TableError::BadResumeToken { .. }));
            refused(ts.multi_delete("items", &req, SYNC).await, 223, "items", &parts);
            refused(ts.scan("items", &req).await, 223, "items", &parts);
            let req = RangeRequest { reverse: true, ..req };
            refused(ts.multi_get("items", &req).await, 223, "items", &parts);
        }
        // Inside the partial key but before the range on c: outside the request's range.
        let first = get_item(&ts, "x", 1, "c1").await.expect("row").key;
        let range =
            FieldRange { start: Some(RangeBound { value: s("c2"), inclusive: true }), end: None };
        let req = RangeRequest {
            range: Some(range),
            resume: Some(first),
            ..RangeRequest::new(partial, 10)
        };
        refused(ts.multi_get("items", &req).await, 223, "items", &["resume token"]);
        // A whole-table scan refuses another table's key.
        let tags_key =
            ts.get("tags", &tag, VersionSelect::Newest).await.expect("get").expect("tag").key;
        let req = RangeRequest {
            allow_full_scan: true,
            resume: Some(tags_key),
            ..RangeRequest::new(&[], 10)
        };
        refused(ts.scan("items", &req).await, 223, "items", &["resume token"]);
        assert_eq!(dump_all(&ts).await, before, "multiDelete deleted nothing");
    });
}

#[test]
fn invalid_version_selection_225() {
    run(|| async move {
        let (_clock, ts) = open(225).await;
        let key = item_key("x", 1, "c1");
        let at_least_one = "a read must ask for at least 1 version";
        let empty = "the version range [from, to) is empty";
        let cases = [
            (VersionSelect::Latest(0), at_least_one),
            (VersionSelect::Range { from: 0, to: u64::MAX, max: 0 }, at_least_one),
            (VersionSelect::Range { from: T0_MS, to: T0_MS, max: 1 }, empty),
            (VersionSelect::Range { from: T0_MS + 1, to: T0_MS, max: 1 }, empty),
        ];
        for (select, what) in cases {
            let parts = ["invalid version selection", what];
            let e = refused(ts.get("items", &key, select).await, 225, "items", &parts);
            assert!(
                matches!(e, TableError::InvalidVersionSelect { what: w, .. } if w.starts_with(what))
            );
            let req = RangeRequest { versions: select, ..RangeRequest::new(&key[..2], 10) };
            refused(ts.multi_get("items", &req).await, 225, "items", &parts);
            let req = RangeRequest { allow_full_scan: true, ..req };
            refused(
                ts.scan("items", &RangeRequest { key: &[], ..req }).await,
                225,
                "items",
                &parts,
            );
        }
        // The same row is there for a valid selection.
        let ok = VersionSelect::Range { from: T0_MS, to: T0_MS + 1, max: 1 };
        let row = ts.get("items", &key, ok).await.expect("get").expect("row");
        assert_eq!(row.versions.len(), 1);
    });
}

#[test]
fn row_over_1_mib_226() {
    run(|| async move {
        let (_clock, ts) = open(226).await;
        let before = dump_all(&ts).await;
        let mut row = item("x", 1, "c1", 8);
        row[3] = ("v", Value::Binary(vec![0xAB; ROW_BYTES_MAX]));
        let e = refused(
            ts.put("items", &row, SYNC).await,
            226,
            "items",
            &["the limit is 1048576 bytes"],
        );
        match e {
            TableError::RowTooLarge { bytes, .. } => {
                assert!(bytes > ROW_BYTES_MAX && bytes < ROW_BYTES_MAX + 100, "{bytes}")
            }
            other => panic!("expected RowTooLarge, got {other:?}"),
        }
        let key = item_key("x", 1, "c1");
        let set = [("v", Some(Value::Binary(vec![0xCD; ROW_BYTES_MAX - 8])))];
        refused(ts.update("items", &key, &set, SYNC).await, 226, "items", &["1048576"]);
        // As a new row and through a conditional write, too.
        let mut new_row = row.clone();
        new_row[2] = ("c", s("big"));
        let op = WriteOp::put(&new_row).condition(Condition::IfAbsent);
        refused(ts.write("items", &op, SYNC).await, 226, "items", &["1048576"]);
        assert_eq!(dump_all(&ts).await, before);

        // A value 1 KiB under the limit fits.
        let big = vec![0xEF; ROW_BYTES_MAX - 1024];
        row[3] = ("v", Value::Binary(big.clone()));
        ts.put("items", &row, SYNC).await.expect("row under 1 MiB");
        let schema = ts.table("items").expect("items").schema().clone();
        let got = get_item(&ts, "x", 1, "c1").await.expect("row");
        assert_eq!(got.newest().get(&schema, "v"), Some(&Value::Binary(big)));
    });
}

#[test]
fn limit_0_or_over_the_maximum_227() {
    run(|| async move {
        let (_clock, ts) = open(227).await;
        let before = dump_all(&ts).await;
        let key = item_key("x", 1, "");
        let key = &key[..2];
        for limit in [0, SCAN_LIMIT_MAX + 1, usize::MAX] {
            let req = RangeRequest::new(key, limit);
            let parts = [format!("limit {limit} is out of range"), "1..=100000".to_owned()];
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            let e = refused(ts.multi_get("items", &req).await, 227, "items", &parts);
            let expected =
                TableError::InvalidLimit { table: "items".into(), limit, max: SCAN_LIMIT_MAX };
            assert_eq!(e, expected);
            let req = RangeRequest { allow_full_scan: true, ..RangeRequest::new(&[], limit) };
            refused(ts.scan("items", &req).await, 227, "items", &parts);
        }
        for limit in [0, BATCH_OPS_MAX + 1] {
            let req = RangeRequest::new(key, limit);
            let parts = [format!("limit {limit} is out of range"), "1..=1024".to_owned()];
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            refused(ts.multi_delete("items", &req, SYNC).await, 227, "items", &parts);
        }
        assert_eq!(dump_all(&ts).await, before, "multiDelete deleted nothing");
        // The maxima themselves are accepted.
        let page = ts.multi_get("items", &RangeRequest::new(key, SCAN_LIMIT_MAX)).await;
        assert_eq!(page.expect("limit at the maximum").rows.len(), 3);
        let req = RangeRequest::new(key, BATCH_OPS_MAX);
        let done = ts.multi_delete("items", &req, SYNC).await.expect("limit 1024");
        assert_eq!((done.deleted, done.resume), (3, None));
        assert_eq!(get_item(&ts, "x", 1, "c1").await, None);
    });
}

#[test]
fn update_that_sets_a_key_field_229() {
    run(|| async move {
        let (_clock, ts) = open(229).await;
        let before = dump_all(&ts).await;
        let key = item_key("x", 1, "c1");
        let set = [("n", Some(Value::Integer(1))), ("c", Some(s("c5")))];
        let parts = ["update sets key field c", "cannot be set"];
        let e = refused(ts.update("items", &key, &set, SYNC).await, 229, "items", &parts);
        assert_eq!(e, TableError::KeyFieldInUpdate { table: "items".into(), field: "c".into() });
        // Clearing a key field is setting it too, and so is setting it to the value it has.
        let set = [("b", None)];
        refused(ts.update("items", &key, &set, SYNC).await, 229, "items", &["key field b"]);
        let set = [("a", Some(s("x")))];
        let op = WriteOp::update(&key, &set).condition(Condition::IfPresent);
        refused(ts.write("items", &op, SYNC).await, 229, "items", &["key field a"]);
        let ops = [op];
        refused(ts.execute("items", &ops, ExecuteOptions::default()).await, 229, "items", &[]);
        assert_eq!(dump_all(&ts).await, before);
    });
}

#[test]
fn per_write_ttl_of_0_or_over_the_maximum_112() {
    run(|| async move {
        let (_clock, ts) = open(112).await;
        let before = dump_all(&ts).await;
        let row = item("x", 1, "c1", 9);
        let parts = ["option ttl_seconds is 0", "it must be 1..=4294967296"];
        let op = WriteOp::put(&row).ttl_seconds(0);
        let e = refused(ts.write("items", &op, SYNC).await, 112, "items", &parts);
        let expected = TableError::InvalidOption {
            table: "items".into(),
            option: "ttl_seconds",
            value: 0,
            min: 1,
            max: DURATION_SECONDS_MAX,
        };
        assert_eq!(e, expected);
        let key = item_key("x", 1, "c1");
        let set = [("n", Some(Value::Integer(1)))];
        let op = WriteOp::update(&key, &set).ttl_seconds(0);
        refused(ts.write("items", &op, SYNC).await, 112, "items", &parts);
        let op = WriteOp::delete(&key).ttl_seconds(0);
        refused(ts.write("items", &op, SYNC).await, 112, "items", &parts);
        let other = item("x", 1, "c9", 9);
        let ops = [WriteOp::put(&other), WriteOp::put(&row).ttl_seconds(0)];
        refused(ts.execute("items", &ops, ExecuteOptions::default()).await, 112, "items", &parts);
        let over = DURATION_SECONDS_MAX + 1;
        let op = WriteOp::put(&row).ttl_seconds(over);
        let parts = [format!("option ttl_seconds is {over}")];
        refused(ts.write("items", &op, SYNC).await, 112, "items", &[parts[0].as_str()]);
        let hourly_row = [("a", s("h"))];
        let op = WriteOp::put(&hourly_row).ttl_seconds(0);
        refused(ts.write("hourly", &op, SYNC).await, 112, "hourly", &["ttl_seconds is 0"]);
        assert_eq!(dump_all(&ts).await, before);

        // 1 second and the maximum are accepted.
        let op = WriteOp::put(&row).ttl_seconds(1);
        ts.write("items", &op, SYNC).await.expect("ttl 1 s");
        assert_eq!(
            get_item(&ts, "x", 1, "c1").await.expect("row").newest().expiry_ms,
            T0_MS + 1000
        );
        let op = WriteOp::put(&row).ttl_seconds(DURATION_SECONDS_MAX);
        ts.write("items", &op, SYNC).await.expect("ttl at the maximum");
        let expiry = get_item(&ts, "x", 1, "c1").await.expect("row").newest().expiry_ms;
        assert_eq!(expiry, T0_MS + DURATION_SECONDS_MAX * 1000);
    });
}
