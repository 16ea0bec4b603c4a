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
