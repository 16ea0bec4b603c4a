//! `ringstore-cli` and the background index build (issue 15), against a real 2-shard node: CREATE
//! INDEX on a table with rows on both shards reports the index BUILDING (SQL and the admin CLI
//! form alike), and `plan add-index ... -wait` returns only once SHOW INDEXES says READY, after
//! which an index query answers with every row. The wait is the CLI's own bounded poll of the
//! state; the test never sleeps.
//!
//! The automatic pick: a SELECT without USING INDEX whose WHERE clause fits exactly one index (and
//! not the primary key) prints the same rows as with `USING INDEX` written, which a model of the
//! rows confirms; a WHERE clause on the primary key still reads it; two fitting indexes are an
//! error naming both; a BUILDING index is picked and refused by the node with 236 (or, if every
//! shard has finished by then, answers in full).

mod cli_common;

use std::net::SocketAddr;

use cli_common::*;
use ringstore_storage::table::Value;
use ringstore_storage::Durability;
use serde_json::Value as Json;

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

const PEOPLE_DDL: &str =
    "CREATE TABLE people (id LONG, city STRING, age INTEGER, PRIMARY KEY (id))";
const CITIES: [&str; 3] = ["Oslo", "Bergen", "Tromso"];
/// Every this many ids a row has no city (NULL, which the index puts first).
const NO_CITY_EVERY: i64 = 17;
/// Ages run from 0 to this, exclusive.
const AGES: i64 = 50;

fn city_of(id: i64) -> Option<&'static str> {
    (id % NO_CITY_EVERY != 0).then(|| CITIES[(id % CITIES.len() as i64) as usize])
}

fn age_of(id: i64) -> i32 {
    ((id * 7) % AGES) as i32
}

/// The ids of the rows `keep` accepts, in index order (city, NULL first, then age, then id),
/// reversed with `reverse`, at most `limit`.
fn expected(keep: fn(Option<&str>, i32) -> bool, reverse: bool, limit: usize) -> Vec<Json> {
    let mut entries: Vec<(Option<&str>, i32, i64)> = (0..ROWS)
        .map(|id| (city_of(id), age_of(id), id))
        .filter(|&(city, age, _)| keep(city, age))
        .collect();
    entries.sort_unstable();
    if reverse {
        entries.reverse();
    }
    longs(entries.into_iter().take(limit).map(|(_, _, id)| id))
}

/// A query of the automatic pick: the WHERE clause, what follows USING INDEX, and the model's
/// answer.
struct Query {
    condition: &'static str,
    tail: &'static str,
    keep: fn(Option<&str>, i32) -> bool,
    reverse: bool,
    limit: usize,
}

/// The queries whose picked and written forms are compared: equalities, a range with ORDER BY
/// DESC and LIMIT, NULL, and equalities written out of index order.
fn queries() -> [Query; 4] {
    const ALL: usize = usize::MAX;
    [
        Query {
            condition: "city = 'Oslo'",
            tail: "",
            keep: |c, _| c == Some("Oslo"),
            reverse: false,
            limit: ALL,
        },
        Query {
            condition: "age >= 20 AND city = 'Bergen'",
            tail: " ORDER BY age DESC LIMIT 7",
            keep: |c, a| c == Some("Bergen") && a >= 20,
            reverse: true,
            limit: 7,
        },
        Query {
            condition: "city = NULL",
            tail: "",
            keep: |c, _| c.is_none(),
            reverse: false,
            limit: ALL,
        },
        Query {
            condition: "age = 14 AND city = 'Tromso'",
            tail: "",
            keep: |c, a| c == Some("Tromso") && a == 14,
            reverse: false,
            limit: ALL,
        },
    ]
}

/// A node with [`ROWS`] people (on both shards) and the index city_age, READY.
fn people_node() -> (tempfile::TempDir, ringstore_tests::Node) {
    let (dir, node) = fresh_node();
    let addr = node.addr();
    cli(addr, &["-e", PEOPLE_DDL]).ok();
    let mut c = node.client();
    c.with_durability(Durability::WriteNoSync);
    for id in 0..ROWS {
        let mut row = vec![("id", Value::Long(id)), ("age", Value::Integer(age_of(id)))];
        row.extend(city_of(id).map(|city| ("city", Value::String(city.into()))));
        c.put("people", &row).expect("put");
    }
    let text = "plan add-index -name city_age -table people -field city -field age -wait";
    assert!(cli(addr, &["-e", text]).ok().contains("index city_age on people READY"));
    (dir, node)
}

fn json(addr: SocketAddr, sql: &str) -> Run {
    cli(addr, &["--format", "json", "-e", sql])
}

/// Errors print as `ERROR <code>: ...` in the table format.
fn table(addr: SocketAddr, sql: &str) -> Run {
    cli(addr, &["-e", sql])
}

/// A BUILDING index is picked all the same, and the node says why it can not be read yet; if
/// every shard has finished building first, the answer is whole.
fn a_building_index_is_picked(addr: SocketAddr) {
    let out = table(addr, "CREATE INDEX by_age ON people (age)").ok();
    assert!(out.contains("BUILDING"), "{out}");
    let sql = "SELECT id FROM people WHERE age = 7";
    let run = table(addr, sql);
    if run.status == Some(0) {
        let out = json(addr, sql).ok();
        // by_age's order is (age, id): one age, so id order (not city_age's model order).
        let want = longs((0..ROWS).filter(|&id| age_of(id) == 7));
        assert_eq!(column(&out, "id"), want);
    } else {
        let err = run.failed(1, 236);
        assert!(err.contains("index by_age is BUILDING"), "{err}");
        assert!(err.contains("as if USING INDEX by_age were written"), "{err}");
    }
}

#[test]
fn a_where_clause_that_fits_one_index_reads_through_it_without_using_index() {
    let (_dir, node) = people_node();
    let addr = node.addr();

    // Without an index on age alone nothing fits: the primary key refuses it, as before.
    let err = table(addr, "SELECT id FROM people WHERE age > 30").failed(1, 802);
    assert!(err.contains("age is not a primary key field of people"), "{err}");

    for q in &queries() {
        let picked = format!("SELECT id, age FROM people WHERE {}{}", q.condition, q.tail);
        let written = format!(
            "SELECT id, age FROM people WHERE {} USING INDEX city_age{}",
            q.condition, q.tail
        );
        let (picked, written) = (json(addr, &picked).ok(), json(addr, &written).ok());
        assert_eq!(picked, written, "WHERE {}", q.condition);
        let ids = column(&picked, "id");
        assert!(!ids.is_empty(), "WHERE {}: the model has rows for it", q.condition);
        assert_eq!(ids, expected(q.keep, q.reverse, q.limit), "WHERE {}", q.condition);
    }

    // A WHERE clause on the primary key reads the primary key: rows in key order.
    let out = json(addr, "SELECT id FROM people WHERE id >= 100 AND id < 110").ok();
    assert_eq!(column(&out, "id"), longs(100..110));

    // A second index that fits `city = ...`: the CLI does not choose.
    let text = "plan add-index -name by_city -table people -field city -wait";
    assert!(table(addr, text).ok().contains("index by_city on people READY"));
    let err = table(addr, "SELECT id FROM people WHERE city = 'Oslo'").failed(1, 802);
    assert!(
        err.contains("matches 2 indexes of table people, city_age (city, age) and by_city (city)")
            && err.contains("add USING INDEX city_age or USING INDEX by_city"),
        "{err}"
    );
    let out = json(addr, "SELECT id FROM people WHERE city = 'Oslo' USING INDEX by_city").ok();
    let oslo = (0..ROWS).filter(|&id| city_of(id) == Some("Oslo"));
    assert_eq!(column(&out, "id"), longs(oslo), "by_city: (city, id) order");
    // With a range on age only city_age fits.
    let picked = json(addr, "SELECT id FROM people WHERE city = 'Oslo' AND age > 40").ok();
    let oslo_over_40 = expected(|c, a| c == Some("Oslo") && a > 40, false, usize::MAX);
    assert_eq!(column(&picked, "id"), oslo_over_40);

    a_building_index_is_picked(addr);
    assert!(node.terminate().success());
}
