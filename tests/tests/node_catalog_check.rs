//! Every shard's catalog must be the same at start (issue 12, earlier-work items). A node whose
//! shard 1 holds an older catalog (as a crash between shard 0's and shard 1's application of a
//! CREATE TABLE leaves it) refuses to start, naming the shard and the way out; started with
//! `--catalog-from-shard-0` it copies shard 0's catalog and serves the table on every shard.
//! Before the check the node started, and requests for the new table routed to shard 1 failed.

use std::path::Path;

use ringstore_storage::table::Value;
use ringstore_tests::Node;

/// Rows written to the new table: enough that some belong to each of the two test shards.
const ROWS: i64 = 64;

fn catalog(data: &Path, shard: usize) -> std::path::PathBuf {
    data.join(format!("shard-{shard}")).join("catalog")
}

#[test]
fn differing_catalogs_refuse_a_start_until_repaired_from_shard_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let node = Node::start(&data, &[]);
    node.client().ddl("CREATE TABLE a (id LONG, PRIMARY KEY (id))").expect("create a");
    assert!(node.terminate().success());
    let older = std::fs::read(catalog(&data, 1)).expect("shard 1's catalog");

    let node = Node::start(&data, &[]);
    node.client().ddl("CREATE TABLE b (id LONG, v STRING, PRIMARY KEY (id))").expect("create b");
    assert!(node.terminate().success());
    std::fs::write(catalog(&data, 1), &older).expect("shard 1 back to the older catalog");

    let log = match Node::try_start(&data, &[]) {
        Ok(node) => panic!("started with differing catalogs; log:\n{}", node.log_text()),
        Err(log) => log,
    };
    assert!(log.contains("catalogs of shards [1] differ"), "{log}");
    assert!(log.contains("--catalog-from-shard-0"), "{log}");

    let node = Node::start(&data, &["--catalog-from-shard-0"]);
    let mut c = node.client();
    for id in 0..ROWS {
        c.put("b", &[("id", Value::Long(id)), ("v", Value::String(format!("{id}")))])
            .unwrap_or_else(|e| panic!("put {id} into b: {e}"));
    }
    for id in 0..ROWS {
        let row = c.get("b", &[("id", Value::Long(id))]).expect("get").expect("row");
        assert_eq!(row.newest().fields[1], Some(Value::String(format!("{id}"))), "row {id}");
    }
    drop(c);
    assert!(node.terminate().success());
    assert_eq!(
        std::fs::read(catalog(&data, 0)).expect("shard 0"),
        std::fs::read(catalog(&data, 1)).expect("shard 1"),
        "the catalogs are equal after the repair"
    );
    // And a plain start is accepted again.
    let node = Node::start(&data, &[]);
    assert!(node.terminate().success());
}
