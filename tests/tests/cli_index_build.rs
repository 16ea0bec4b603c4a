//! `ringstore-cli` and the background index build (issue 15), against a real 2-shard node: CREATE
//! INDEX on a table with rows on both shards reports the index BUILDING (SQL and the admin CLI
//! form alike), and `plan add-index ... -wait` returns only once SHOW INDEXES says READY, after
//! which an index query answers with every row. The wait is the CLI's own bounded poll of the
//! state; the test never sleeps.

mod cli_common;

use cli_common::*;
use ringstore_storage::table::Value;

const ROWS: i64 = 2_000;

#[test]
fn create_index_reports_building_and_wait_returns_when_ready() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    cli(addr, &["-e", "CREATE TABLE t (id LONG, v INTEGER, w STRING, PRIMARY KEY (id))"]).ok();
    let mut c = node.client();
    for id in 0..ROWS {
        c.put("t", &[("id", Value::Long(id)), ("v", Value::Integer((id % 10) as i32))])
            .expect("put");
    }

    // SQL: the statement returns with the build under way.
    let out = cli(addr, &["-e", "CREATE INDEX by_w ON t (w)"]).ok();
    assert!(out.contains("BUILDING"), "{out}");

    // The admin form with -wait: the state is printed, then READY once every shard is.
    let text = "plan add-index -name by_v -table t -field v -wait";
    let out = cli(addr, &["-e", text]).ok();
    assert!(out.contains("index created") && out.contains("BUILDING"), "{out}");
    assert!(out.contains("index by_v on t READY"), "{out}");
    let shown = cli(addr, &["-e", "SHOW INDEXES ON t"]).ok();
    let by_v = shown.lines().find(|l| l.contains("by_v")).expect("listed");
    assert!(by_v.contains("READY"), "{shown}");
    let out =
        cli(addr, &["--format", "json", "-e", "SELECT id FROM t WHERE v = 3 USING INDEX by_v"])
            .ok();
    assert_eq!(column(&out, "id").len(), (ROWS / 10) as usize, "every row with v = 3: {out}");
    // Waiting on an index that exists already (IF NOT EXISTS) returns at once when READY.
    let again = "plan add-index -name by_v -table t -field v -if-not-exists -wait";
    let out = cli(addr, &["-e", again]).ok();
    assert!(out.contains("READY"), "{out}");
}
