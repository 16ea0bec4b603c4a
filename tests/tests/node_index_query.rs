//! Secondary-index queries through the real daemon (2 shards, issue 15): the IndexQuery request
//! runs on every shard and the coordinating shard merges the pages in index order.
//!
//! A `people` table gets an index on (city, age) after half its rows exist (the statement returns
//! with the index BUILDING on both shards; queries are refused with 236 naming BUILDING until
//! SHOW INDEXES says READY, which the test waits for by looking at the state a bounded number of
//! times), then more rows (written while the shards build), updates that move rows between index
//! values, deletes, and rows without a city (NULL, which sorts first). A model of the rows gives the expected answer of
//! every query: the rows under a city in (age, id) order, forward and reverse, with a range on
//! age, the whole index (NULL first), and NULL itself; the matching rows lie on both shards.
//! Paging with a small limit and the resume token returns exactly the sequence of one big page,
//! in both directions; a keys-only query returns the same entries without rows; the query
//! coordinated by each shard's own port gives the same answer; and an unknown index (505, naming
//! the table's indexes), an unknown table (201) and a resume token outside the query (223) are
//! refused with their errors.

mod node_common;

use std::collections::{BTreeMap, BTreeSet};

use node_common::*;
use ringstore_net::request::{Bound, IndexBody, Request};
use ringstore_net::{response, Client, ClientError, IndexLookup, IndexRow, IndexRows, ValueRef};
use ringstore_storage::table::{IndexState, Outcome, RangeBound, Value};
use ringstore_storage::Durability;
use ringstore_tests::{Node, TEST_SHARDS};

const TABLE_DDL: &str = "CREATE TABLE people (id LONG, city STRING, age INTEGER, PRIMARY KEY (id))";
const INDEX_DDL: &str = "CREATE INDEX city_age ON people (city, age)";
const CITIES: [&str; 3] = ["Oslo", "Bergen", "Tromso"];
/// Rows before and after the index is created.
const ROWS: i64 = 240;
/// Entries per page of the paged queries: small, so a query takes many pages.
const SMALL_PAGE: u32 = 7;
/// One page that holds every answer.
const BIG_PAGE: u32 = 10_000;

/// The rows the node holds: id -> (city, age).
type Model = BTreeMap<i64, (Option<String>, i32)>;

fn city_of(id: i64) -> Option<String> {
    (id % 17 != 0).then(|| CITIES[(id % 3) as usize].to_owned())
}

fn age_of(id: i64) -> i32 {
    ((id * 7) % 50) as i32
}

fn put(c: &mut Client, model: &mut Model, id: i64, city: Option<String>, age: i32) {
    let mut row = vec![("id", Value::Long(id)), ("age", Value::Integer(age))];
    if let Some(city) = &city {
        row.push(("city", Value::String(city.clone())));
    }
    c.put("people", &row).expect("put");
    model.insert(id, (city, age));
}

/// The node with its rows, the index built over the first half and kept by the writes after.
fn node_with_people(data: &std::path::Path) -> (Node, Client, Model) {
    let node = Node::start(data, &[]);
    let mut c = node.client();
    c.ddl(TABLE_DDL).expect("create table");
    c.with_durability(Durability::WriteNoSync);
    let mut model = Model::new();
    for id in 0..ROWS / 2 {
        put(&mut c, &mut model, id, city_of(id), age_of(id));
    }
    let created = c.ddl(INDEX_DDL).expect("create index over existing rows");
    // Both shards hold rows, so the statement returns with the build under way on each.
    assert!(
        matches!(created[0], Outcome::IndexCreated { state: IndexState::Building, .. }),
        "{created:?}"
    );
    // The rows written from here on land while the shards build (or just after).
    for id in ROWS / 2..ROWS {
        put(&mut c, &mut model, id, city_of(id), age_of(id));
    }
    // Updates move rows to other index values; deletes remove their entries.
    for id in (0..ROWS).step_by(11) {
        put(&mut c, &mut model, id, Some("Oslo".to_owned()), 49 - age_of(id));
    }
    for id in (5..ROWS).step_by(13) {
        c.delete("people", &[("id", Value::Long(id))]).expect("delete");
        model.remove(&id);
    }
    wait_until_ready(&mut c);
    (node, c, model)
}

/// Looks at the index's node-level state until it is READY, at most [`LOOKS_MAX`] times. Each
/// time, a query is either refused with 236 naming BUILDING (some shard is still building) or,
/// once the state is READY, answered.
fn wait_until_ready(c: &mut Client) {
    let lookup = IndexLookup::new(&[], 1);
    for _ in 0..LOOKS_MAX {
        let state = c.index_state("people", "city_age").expect("SHOW INDEXES");
        match c.index_query("people", "city_age", &lookup) {
            Ok(_) if state == Some(IndexState::Ready) => return,
            // READY on every shard between the two requests.
            Ok(_) => assert_eq!(state, Some(IndexState::Building)),
            Err(e) => {
                assert_eq!(e.code(), Some(236), "{e}");
                assert!(e.to_string().contains("BUILDING"), "{e}");
                assert_eq!(state, Some(IndexState::Building), "refused while {state:?}");
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    panic!("the index was not READY after {LOOKS_MAX} looks");
}

/// Looks at an index's state before a test gives up waiting for READY.
const LOOKS_MAX: usize = 4_000;

/// The ids the model puts under the query, in index order: (city, age, id), NULL city first.
fn expected(model: &Model, keep: impl Fn(&Option<String>, i32) -> bool, reverse: bool) -> Vec<i64> {
    let mut entries: Vec<(Option<&str>, i32, i64)> = model
        .iter()
        .filter(|(_, (city, age))| keep(city, *age))
        .map(|(id, (city, age))| (city.as_deref(), *age, *id))
        .collect();
    entries.sort();
    let mut ids: Vec<i64> = entries.into_iter().map(|(_, _, id)| id).collect();
    if reverse {
        ids.reverse();
    }
    ids
}

/// The id of a hit's row (column 0), checking the row agrees with the hit's indexed values.
fn row_id(hit: &IndexRow) -> i64 {
    let row = hit.row.as_ref().expect("a query with rows returns them");
    let fields = &row.newest().fields;
    assert_eq!(hit.values, [fields[1].clone(), fields[2].clone()], "entry values = row values");
    assert_eq!(row.key, hit.row_key, "the entry names its row");
    match fields[0] {
        Some(Value::Long(id)) => id,
        ref other => panic!("id column holds {other:?}"),
    }
}

/// Every page of a query, followed through its resume tokens.
fn all_pages(mut page: impl FnMut(Option<Vec<u8>>) -> IndexRows) -> Vec<IndexRow> {
    let mut hits = Vec::new();
    let mut resume = None;
    for _ in 0..=ROWS {
        let p = page(resume);
        hits.extend(p.hits);
        match p.resume {
            None => return hits,
            Some(token) => resume = Some(token),
        }
    }
    panic!("the query did not end within {ROWS} pages");
}

/// Every entry of `lookup` on `city_age`, page by page at `limit`.
fn query(c: &mut Client, lookup: &IndexLookup<'_>, limit: u32) -> Vec<IndexRow> {
    all_pages(|resume| {
        let q = IndexLookup { limit, resume, ..lookup.clone() };
        c.index_query("people", "city_age", &q).expect("index query")
    })
}

/// The ids of `lookup`'s entries: one big page, and the same through pages of [`SMALL_PAGE`].
fn ids_paged_and_whole(c: &mut Client, lookup: &IndexLookup<'_>) -> Vec<i64> {
    let whole: Vec<i64> = query(c, lookup, BIG_PAGE).iter().map(row_id).collect();
    let paged: Vec<i64> = query(c, lookup, SMALL_PAGE).iter().map(row_id).collect();
    assert_eq!(paged, whole, "pages of {SMALL_PAGE} = one page ({lookup:?})");
    whole
}

#[test]
fn index_queries_merge_both_shards_in_index_order() {
    let (_dir, data) = data_dir();
    let (node, mut c, model) = node_with_people(&data);
    let oslo = [Some(Value::String("Oslo".to_owned()))];
    let is_oslo = |city: &Option<String>| city.as_deref() == Some("Oslo");

    for reverse in [false, true] {
        let lookup = IndexLookup { reverse, ..IndexLookup::new(&oslo, BIG_PAGE) };
        let ids = ids_paged_and_whole(&mut c, &lookup);
        assert_eq!(ids, expected(&model, |city, _| is_oslo(city), reverse), "Oslo, {reverse}");
        let owners: BTreeSet<usize> = ids
            .iter()
            .map(|id| c.shard_of("people", &[("id", Value::Long(*id))]).expect("route"))
            .map(|owner| owner.expect("a full key has an owner"))
            .collect();
        assert_eq!(owners.len(), TEST_SHARDS, "the matching rows lie on every shard");

        // A range on the next field: 20 < age <= 40.
        let bound = |age, inclusive| Some(RangeBound { value: Value::Integer(age), inclusive });
        let lookup =
            IndexLookup { range: Some((bound(20, false), bound(40, true))), ..lookup.clone() };
        let in_range = |city: &Option<String>, age: i32| is_oslo(city) && age > 20 && age <= 40;
        let ids = ids_paged_and_whole(&mut c, &lookup);
        assert_eq!(ids, expected(&model, in_range, reverse), "Oslo with an age range");

        // The whole index: NULL cities first, then cities in order.
        let lookup = IndexLookup { reverse, ..IndexLookup::new(&[], BIG_PAGE) };
        let ids = ids_paged_and_whole(&mut c, &lookup);
        assert_eq!(ids, expected(&model, |_, _| true, reverse), "the whole index");

        // NULL asks for the rows without a city.
        let lookup = IndexLookup { reverse, ..IndexLookup::new(&[None], BIG_PAGE) };
        let ids = ids_paged_and_whole(&mut c, &lookup);
        let no_city = expected(&model, |city, _| city.is_none(), reverse);
        assert!(!no_city.is_empty());
        assert_eq!(ids, no_city, "NULL city");
    }

    keys_only_returns_the_same_entries(&mut c, &oslo);
    each_shard_coordinates_alike(&node, &model);
    refusals_name_what_was_wrong(&mut c, &oslo);
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// Keys only: the same entries (values and row keys, in the same order), no rows.
fn keys_only_returns_the_same_entries(c: &mut Client, equal: &[Option<Value>]) {
    for reverse in [false, true] {
        let with_rows = IndexLookup { reverse, ..IndexLookup::new(equal, BIG_PAGE) };
        let keys_only = IndexLookup { keys_only: true, ..with_rows.clone() };
        let full = query(c, &with_rows, BIG_PAGE);
        for limit in [SMALL_PAGE, BIG_PAGE] {
            let keys = query(c, &keys_only, limit);
            assert!(keys.iter().all(|h| h.row.is_none()), "keys only: no rows");
            let strip = |h: &IndexRow| (h.values.clone(), h.row_key.clone());
            let want: Vec<_> = full.iter().map(strip).collect();
            assert_eq!(keys.iter().map(strip).collect::<Vec<_>>(), want, "limit {limit}");
        }
    }
}

/// The query sent to each shard's own port (that shard coordinates it) gives the same ids.
fn each_shard_coordinates_alike(node: &Node, model: &Model) {
    let want = expected(model, |city, _| city.as_deref() == Some("Bergen"), false);
    for shard in 0..TEST_SHARDS {
        let mut conn = connect(shard_addr(node, shard));
        let hits = all_pages(|resume| {
            let mut query = IndexBody::new("city_age", vec![ValueRef::String("Bergen")], 5);
            query.resume = resume.as_deref();
            let req = Request::IndexQuery { table: "people", query };
            let reply = conn.call(&req, Durability::Sync).expect("call").into_result();
            response::decode_index_page(&reply.expect("ok").body).expect("an IndexPage")
        });
        assert_eq!(hits.iter().map(row_id).collect::<Vec<_>>(), want, "shard {shard}'s port");
    }
    // A NULL range bound never reaches a shard: the body is malformed (710).
    let mut conn = connect(node.addr());
    let mut query = IndexBody::new("city_age", vec![], 5);
    query.range = Some((Some(Bound { value: ValueRef::Null, inclusive: true }), None));
    let reply = conn.call(&Request::IndexQuery { table: "people", query }, Durability::Sync);
    assert_eq!(reply.expect("an answer").status, 710);
}

/// Unknown index, unknown table and a foreign resume token are refused with their codes.
fn refusals_name_what_was_wrong(c: &mut Client, equal: &[Option<Value>]) {
    let lookup = IndexLookup::new(equal, 10);
    let err = c.index_query("people", "by_nothing", &lookup).expect_err("unknown index");
    let ClientError::Server(reply) = &err else { panic!("a server error: {err}") };
    assert_eq!(reply.code, 505, "{}", reply.message);
    assert!(reply.message.contains("by_nothing"), "{}", reply.message);
    assert!(reply.message.contains("city_age"), "lists the table's indexes: {}", reply.message);
    let err = c.index_query("nobody", "city_age", &lookup).expect_err("unknown table");
    assert_eq!(err.code(), Some(201), "{err}");
    let foreign = IndexLookup { resume: Some(vec![0, 0, 0, 1, 7]), ..lookup };
    let err = c.index_query("people", "city_age", &foreign).expect_err("foreign token");
    assert_eq!(err.code(), Some(223), "{err}");
}
