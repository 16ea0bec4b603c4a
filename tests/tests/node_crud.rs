//! Rows through the real daemon: create a table, write, read, update, delete, with the
//! shard-aware client and through the shared port.

use ringstore_storage::table::{Value, WriteOutcome};
use ringstore_tests::Node;

#[test]
fn crud_through_the_daemon() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(&dir.path().join("data"), &[]);
    let mut c = node.client();
    c.ddl("CREATE TABLE users (id LONG, name STRING, age INTEGER, PRIMARY KEY (id))")
        .expect("create table");
    for id in 0..100i64 {
        let row = [
            ("id", Value::Long(id)),
            ("name", Value::String(format!("user-{id}"))),
            ("age", Value::Integer(id as i32)),
        ];
        let outcome = c.put("users", &row).expect("put");
        assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
    }
    let mut shared = node.shared_port_client();
    for id in 0..100i64 {
        for client in [&mut c, &mut shared] {
            let row = client.get("users", &[("id", Value::Long(id))]).expect("get").expect("row");
            assert_eq!(row.newest().fields[1], Some(Value::String(format!("user-{id}"))));
        }
    }
    let deleted = c.delete("users", &[("id", Value::Long(7))]).expect("delete");
    assert_eq!(deleted, WriteOutcome::Deleted { existed: true });
    assert_eq!(c.get("users", &[("id", Value::Long(7))]).expect("get"), None);
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// A Get's reply carries every key field, whichever way the node found the key's values: kept
/// by the read batch's look-ahead (a one-field key, `frame_batch.rs`) or found again in the
/// request when the Get runs (two and three fields). The key fields are sent in reverse order.
/// `alloc_hot_path.rs` proves such a second Get is a record cache hit answered inline.
#[test]
fn a_get_returns_every_key_field_whatever_the_key_width() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(&dir.path().join("data"), &[]);
    let mut c = node.client();
    let tables = [
        ("k1", "(a LONG, v STRING, PRIMARY KEY (a))", 1),
        ("k2", "(a LONG, b STRING, v STRING, PRIMARY KEY (SHARD(a), b DESC))", 2),
        ("k3", "(a LONG, b STRING, c INTEGER, v STRING, PRIMARY KEY (SHARD(a), b, c))", 3),
    ];
    for (name, columns, key_fields) in tables {
        c.ddl(&format!("CREATE TABLE {name} {columns}")).expect("create table");
        for i in 0..20i64 {
            let values = [
                ("a", Value::Long(i)),
                ("b", Value::String(format!("b-{i}"))),
                ("c", Value::Integer(-(i as i32))),
            ];
            let key = &values[..key_fields];
            let mut row = key.to_vec();
            row.push(("v", Value::String(format!("v-{name}-{i}"))));
            c.put(name, &row).expect("put");
            let reversed: Vec<_> = key.iter().rev().cloned().collect();
            let mut expected: Vec<_> = key.iter().map(|(_, v)| Some(v.clone())).collect();
            expected.push(Some(Value::String(format!("v-{name}-{i}"))));
            // The first Get may read the disk (in a task) and caches the row; the second is
            // answered inline from the cache.
            for attempt in 0..2 {
                let got = c.get(name, &reversed).expect("get").expect("row");
                assert_eq!(got.newest().fields, expected, "table {name}, row {i}, get {attempt}");
            }
        }
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}
