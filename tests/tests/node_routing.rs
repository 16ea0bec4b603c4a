//! Routing through the real daemon (2 shards): keys spread over both shards, and every port
//! answers every key, the receiving shard's own from its store and the other shard's by
//! forwarding.
//!
//! The proof comes from the node's own counters (Stats): puts sent by the shard-aware client land
//! on the shard `Client::shard_of` names (that shard counts them, nothing is forwarded, and its
//! index holds exactly those keys); requests sent on purpose to the wrong shard's port, or
//! through the shared port, are answered with the right rows and counted as forwarded by exactly
//! the shards they crossed. Then multiGet and multiDelete on a shard key (paging, reverse, a
//! range, forwarding), a full scan paged with a small limit across both shards (every row exactly
//! once, forward, reverse and on a range; a resume token naming no shard is refused), a bounded
//! scan (a range on the first key field, no allow_full_scan) merged across both shards in key
//! order, DDL through
//! the shared port and through shard 1's port applied on both shards (Describe and Hello on each
//! shard's own port), and DDL sent concurrently to both shards' ports leaving equal catalogs.

mod node_common;

use std::collections::{BTreeSet, HashSet};

use node_common::*;
use ringstore_net::request::{RangeBody, Request, WriteBody, WriteOptions};
use ringstore_net::{response, Client, Connection, FieldsBuf, RangeQuery, ShardStats};
use ringstore_storage::table::{
    CatalogTable, Outcome, RangeBound, TableRow, Value, VersionSelect, WriteOutcome,
};
use ringstore_storage::Durability;
use ringstore_tests::{Node, TEST_SHARDS};

const ROWS: i64 = 1000;

fn value_of(id: i64, generation: &str) -> String {
    format!("{generation}-{id}")
}

/// A Get on a connection of our choosing, decoded.
fn get_on(conn: &mut Connection, table: &str, key: &[(&str, Value)]) -> Option<TableRow> {
    let key = FieldsBuf::of_values(key);
    let req = Request::Get { table, key: key.list(), versions: VersionSelect::Newest };
    let reply = conn.call(&req, Durability::Sync).expect("get").into_result().expect("get ok");
    response::decode_get(&reply.body).expect("get body").1
}

/// A Put on a connection of our choosing.
fn put_on(conn: &mut Connection, table: &str, row: &[(&str, Value)]) -> WriteOutcome {
    let row = FieldsBuf::of_values(row);
    let req = Request::Write {
        table,
        body: WriteBody::Put { row: row.list() },
        options: WriteOptions::default(),
    };
    let reply = conn.call(&req, Durability::Sync).expect("put").into_result().expect("put ok");
    response::decode_write(&reply.body).expect("put body")
}

/// A Delete on a connection of our choosing.
fn delete_on(conn: &mut Connection, table: &str, key: &[(&str, Value)]) -> WriteOutcome {
    let key = FieldsBuf::of_values(key);
    let req = Request::Write {
        table,
        body: WriteBody::Delete { key: key.list() },
        options: WriteOptions::default(),
    };
    let reply = conn.call(&req, Durability::Sync).expect("delete").into_result().expect("ok");
    response::decode_write(&reply.body).expect("delete body")
}

/// `after - before` of one shard's statistic.
fn delta(before: &[ShardStats], after: &[ShardStats], shard: usize, name: &str) -> u64 {
    stat(after, shard, name) - stat(before, shard, name)
}

fn expect_kv(row: Option<TableRow>, id: i64, generation: &str) {
    let row = row.unwrap_or_else(|| panic!("row {id} missing"));
    assert_eq!(kv_value(&row), Some(&Value::String(value_of(id, generation))), "row {id}");
}

#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
#[test]
fn keys_land_on_every_shard_and_misrouted_requests_are_forwarded() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    // Durability is not what this test is about; NoSync keeps 1000 puts quick.
    c.with_durability(Durability::NoSync);

    // 1. The shard-aware client sends each put to the owner it computes.
    let before = c.stats().expect("stats");
    let mut owner = Vec::with_capacity(ROWS as usize);
    for id in 0..ROWS {
        let outcome = c.put("kv", &kv_row(id, &value_of(id, "a"))).expect("put");
        assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
        owner.push(kv_owner(&mut c, id));
    }
    let after = c.stats().expect("stats");
    assert_eq!(after.len(), TEST_SHARDS);
    for shard in 0..TEST_SHARDS {
        let mine = owner.iter().filter(|o| **o == shard).count() as u64;
        assert!(mine > 0, "no key of {ROWS} is owned by shard {shard}");
        assert_eq!(delta(&before, &after, shard, "ops_put"), mine, "puts on shard {shard}");
        assert_eq!(stat(&after, shard, "index_keys"), mine, "keys stored on shard {shard}");
        assert_eq!(delta(&before, &after, shard, "forwarded_out"), 0, "shard {shard}");
        assert_eq!(delta(&before, &after, shard, "forwarded_in"), 0, "shard {shard}");
    }

    // 2. Every key through each shard's own port: the other shard's keys are forwarded.
    for shard in 0..TEST_SHARDS {
        let other = 1 - shard;
        let before = c.stats().expect("stats");
        let mut conn = connect(shard_addr(&node, shard));
        for id in 0..ROWS {
            expect_kv(get_on(&mut conn, "kv", &kv_key(id)), id, "a");
        }
        let after = c.stats().expect("stats");
        let misrouted = owner.iter().filter(|o| **o != shard).count() as u64;
        // ops_* count where a request runs: the receiving shard runs only its own keys.
        assert_eq!(delta(&before, &after, shard, "ops_get"), ROWS as u64 - misrouted);
        assert_eq!(delta(&before, &after, shard, "forwarded_out"), misrouted);
        assert_eq!(delta(&before, &after, other, "forwarded_in"), misrouted);
        assert_eq!(delta(&before, &after, other, "ops_get"), misrouted, "run by the owner");
        assert_eq!(delta(&before, &after, other, "forwarded_out"), 0);
    }

    // 3. Writes sent to the wrong shard's port reach the owner.
    for shard in 0..TEST_SHARDS {
        let mut conn = connect(shard_addr(&node, 1 - shard));
        let ids: Vec<i64> = (0..ROWS).filter(|id| owner[*id as usize] == shard).take(50).collect();
        for &id in &ids {
            let outcome = put_on(&mut conn, "kv", &kv_row(id, &value_of(id, "b")));
            assert!(matches!(outcome, WriteOutcome::Written { .. }), "{outcome:?}");
        }
        let gone = ids[0];
        assert_eq!(
            delete_on(&mut conn, "kv", &kv_key(gone)),
            WriteOutcome::Deleted { existed: true }
        );
        assert_eq!(get_on(&mut conn, "kv", &kv_key(gone)), None);
        // The owner's own port (the shard-aware client) sees the writes.
        assert_eq!(c.get("kv", &kv_key(gone)).expect("get"), None);
        for &id in &ids[1..] {
            expect_kv(c.get("kv", &kv_key(id)).expect("get"), id, "b");
        }
        put_on(&mut conn, "kv", &kv_row(gone, &value_of(gone, "b")));
    }
    let rewritten: HashSet<i64> = (0..TEST_SHARDS)
        .flat_map(|shard| {
            let owner = &owner;
            (0..ROWS).filter(move |id| owner[*id as usize] == shard).take(50)
        })
        .collect();
    let generation = |id: i64| if rewritten.contains(&id) { "b" } else { "a" };

    // 4. Through the shared port: the connection lands on one shard (Hello says which), which
    // forwards the other shard's keys.
    let mut shared = node.shared_port_client();
    let landed = usize::from(shared.topology().shard);
    let before = c.stats().expect("stats");
    for id in 0..ROWS {
        expect_kv(shared.get("kv", &kv_key(id)).expect("get"), id, generation(id));
    }
    let after = c.stats().expect("stats");
    let misrouted = owner.iter().filter(|o| **o != landed).count() as u64;
    assert_eq!(delta(&before, &after, landed, "forwarded_out"), misrouted);
    assert_eq!(delta(&before, &after, 1 - landed, "forwarded_in"), misrouted);

    let status = node.terminate();
    assert!(status.success(), "{status}");
}

fn ev_row(tenant: &str, seq: i64) -> [(&'static str, Value); 3] {
    [
        ("tenant", Value::String(tenant.to_owned())),
        ("seq", Value::Long(seq)),
        ("body", Value::String(format!("{tenant}/{seq}"))),
    ]
}

/// The `seq` values of a page, checking each row's body on the way.
fn seqs(tenant: &str, rows: &[TableRow]) -> Vec<i64> {
    rows.iter()
        .map(|row| {
            let v = &row.newest().fields;
            let Some(Value::Long(seq)) = v[1] else { panic!("seq of {row:?}") };
            assert_eq!(v[0], Some(Value::String(tenant.to_owned())));
            assert_eq!(v[2], Some(Value::String(format!("{tenant}/{seq}"))));
            seq
        })
        .collect()
}

/// Every row under `tenant` through `conn`, `limit` rows per page, following resume tokens.
fn multi_get_all_on(conn: &mut Connection, tenant: &str, limit: u32) -> Vec<i64> {
    let key = FieldsBuf::of_values(&[("tenant", Value::String(tenant.to_owned()))]);
    let mut resume: Option<Vec<u8>> = None;
    let mut all = Vec::new();
    for _ in 0..1000 {
        let mut range = RangeBody::new(key.list(), limit);
        range.resume = resume.as_deref();
        let req = Request::MultiGet { table: "ev", range };
        let reply = conn.call(&req, Durability::Sync).expect("multiGet").into_result();
        let rows = response::decode_page(&reply.expect("multiGet ok").body).expect("page");
        assert!(rows.page.rows.len() <= limit as usize, "page over the limit");
        all.extend(seqs(tenant, &rows.page.rows));
        resume = rows.page.resume;
        if resume.is_none() {
            return all;
        }
    }
    panic!("multiGet of {tenant} did not end in 1000 pages");
}

#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
#[test]
fn multi_get_and_multi_delete_on_a_shard_key() {
    const PER_TENANT: i64 = 30;
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut c = node.client();
    c.ddl(
        "CREATE TABLE ev (tenant STRING, seq LONG, body STRING, PRIMARY KEY (SHARD(tenant), seq))",
    )
    .expect("create ev");
    c.with_durability(Durability::NoSync);
    // Two tenants owned by each shard.
    let mut tenants: Vec<Vec<String>> = vec![Vec::new(); TEST_SHARDS];
    for i in 0..1000 {
        let t = format!("tenant-{i}");
        let key = [("tenant", Value::String(t.clone()))];
        let shard = c.shard_of("ev", &key).expect("routable").expect("shard key given");
        if tenants[shard].len() < 2 {
            tenants[shard].push(t);
        }
        if tenants.iter().all(|t| t.len() == 2) {
            break;
        }
    }
    assert!(tenants.iter().all(|t| t.len() == 2), "{tenants:?}");
    for t in tenants.iter().flatten() {
        for seq in 0..PER_TENANT {
            c.put("ev", &ev_row(t, seq)).expect("put");
        }
    }
    let every: Vec<i64> = (0..PER_TENANT).collect();

    for (owner, list) in tenants.iter().enumerate() {
        for t in list {
            let key = [("tenant", Value::String(t.clone()))];
            // One page through the owner (the client routes it).
            let page = c.multi_get("ev", &RangeQuery::new(&key, 1000)).expect("multiGet");
            assert_eq!(seqs(t, &page.page.rows), every);
            assert_eq!(page.page.resume, None);
            // Reverse, and a range on the next key field.
            let mut q = RangeQuery::new(&key, 1000);
            q.reverse = true;
            let back = c.multi_get("ev", &q).expect("reverse multiGet");
            assert_eq!(seqs(t, &back.page.rows), every.iter().rev().copied().collect::<Vec<_>>());
            let mut q = RangeQuery::new(&key, 1000);
            q.range = Some((
                "seq",
                Some(RangeBound { value: Value::Long(10), inclusive: true }),
                Some(RangeBound { value: Value::Long(20), inclusive: false }),
            ));
            let mid = c.multi_get("ev", &q).expect("range multiGet");
            assert_eq!(seqs(t, &mid.page.rows), (10..20).collect::<Vec<_>>());
            // Pages of 7 through both ports: the other shard's port forwards every page.
            for port in [owner, 1 - owner] {
                let mut conn = connect(shard_addr(&node, port));
                assert_eq!(multi_get_all_on(&mut conn, t, 7), every, "{t} via shard {port}");
            }
        }
    }

    // A partial key shorter than the shard key is refused by name.
    let e = c.multi_get("ev", &RangeQuery::new(&[], 10)).expect_err("no shard key");
    assert_eq!(e.code(), Some(216), "{e}");

    // multiDelete of one tenant per shard, sent to the other shard's port (forwarded), with a
    // limit of 7, which bounds nothing any more: one call deletes the whole tenant atomically
    // and returns no resume token.
    for (owner, list) in tenants.iter().enumerate() {
        let t = &list[0];
        let mut conn = connect(shard_addr(&node, 1 - owner));
        let key = FieldsBuf::of_values(&[("tenant", Value::String(t.clone()))]);
        let req = Request::MultiDelete { table: "ev", range: RangeBody::new(key.list(), 7) };
        let reply = conn.call(&req, Durability::Sync).expect("multiDelete").into_result();
        let outcome = response::decode_multi_delete(&reply.expect("ok").body).expect("body");
        assert_eq!((outcome.deleted, outcome.resume), (PER_TENANT as usize, None), "{t}");
        assert_eq!(multi_get_all_on(&mut conn, t, 100), Vec::<i64>::new(), "{t} deleted");
        // The other tenant of the same shard is untouched.
        assert_eq!(multi_get_all_on(&mut conn, &list[1], 100), every, "{}", list[1]);
    }
    // One call, routed by the client, deletes a whole tenant.
    let t = &tenants[0][1];
    let key = [("tenant", Value::String(t.clone()))];
    let outcome = c.multi_delete("ev", &RangeQuery::new(&key, 1000)).expect("multiDelete");
    assert_eq!((outcome.deleted, outcome.resume), (PER_TENANT as usize, None));
    assert!(c.multi_get("ev", &RangeQuery::new(&key, 10)).expect("get").page.rows.is_empty());

    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// Every id of a full scan of `kv`, 7 rows per page, through `scan_page`.
fn scan_all(mut scan_page: impl FnMut(Option<Vec<u8>>) -> ringstore_net::Rows) -> Vec<i64> {
    let mut ids = Vec::new();
    let mut resume = None;
    for _ in 0..10_000 {
        let rows = scan_page(resume.take());
        assert!(rows.page.rows.len() <= 7, "a page of {} rows", rows.page.rows.len());
        for row in &rows.page.rows {
            let Some(Value::Long(id)) = row.newest().fields[0] else { panic!("{row:?}") };
            ids.push(id);
        }
        match rows.page.resume {
            Some(token) => resume = Some(token),
            None => return ids,
        }
    }
    panic!("the scan did not end in 10000 pages");
}

/// Every id of a scan of `kv` coordinated by `shard` from its own port, 7 rows per page, the
/// Scan body shaped by `shape` (no key).
fn scan_all_on_port(node: &Node, shard: usize, shape: impl Fn(&mut RangeBody<'_>)) -> Vec<i64> {
    let mut conn = connect(shard_addr(node, shard));
    let no_key = FieldsBuf::new();
    scan_all(|resume| {
        let mut range = RangeBody::new(no_key.list(), 7);
        shape(&mut range);
        range.resume = resume.as_deref();
        let reply = conn.call(&Request::Scan { table: "kv", range }, Durability::Sync);
        response::decode_page(&reply.expect("scan").into_result().expect("ok").body).expect("page")
    })
}

/// A 2-shard node whose `kv` table holds ids `0..rows`, and a client of it.
fn node_with_kv(data: &std::path::Path, rows: i64, generation: &str) -> (Node, Client) {
    let node = Node::start(data, &[]);
    let mut c = node.client();
    c.ddl(KV_DDL).expect("create kv");
    c.with_durability(Durability::NoSync);
    for id in 0..rows {
        c.put("kv", &kv_row(id, &value_of(id, generation))).expect("put");
    }
    (node, c)
}

fn assert_each_once(ids: &[i64], expected: std::ops::Range<i64>, via: &str) {
    let distinct: BTreeSet<i64> = ids.iter().copied().collect();
    assert_eq!(distinct.len(), ids.len(), "{via}: a row came twice");
    assert_eq!(distinct, expected.collect::<BTreeSet<i64>>(), "{via}: rows missing or extra");
}

#[test]
fn full_scan_pages_cover_every_row_of_both_shards_once() {
    const SCAN_ROWS: i64 = 300;
    let (_dir, data) = data_dir();
    let (node, mut c) = node_with_kv(&data, SCAN_ROWS, "s");
    let mut on_shard = [0; TEST_SHARDS];
    for id in 0..SCAN_ROWS {
        on_shard[kv_owner(&mut c, id)] += 1;
    }
    assert!(on_shard.iter().all(|n| *n > 0), "{on_shard:?}");

    // Through the client: a key shorter than the shard key goes to the shared port.
    let ids = scan_all(|resume| {
        let mut q = RangeQuery::new(&[], 7);
        q.allow_full_scan = true;
        q.resume = resume;
        c.scan("kv", &q).expect("scan")
    });
    assert_each_once(&ids, 0..SCAN_ROWS, "shared port");

    // Through each shard's own port: that shard coordinates.
    for shard in 0..TEST_SHARDS {
        let ids = scan_all_on_port(&node, shard, |range| range.allow_full_scan = true);
        assert_each_once(&ids, 0..SCAN_ROWS, &format!("shard {shard}'s port"));
    }

    // Reverse, and with a range on the first key field: still fanned out, each row once.
    let ids = scan_all(|resume| {
        let mut q = RangeQuery::new(&[], 7);
        q.allow_full_scan = true;
        q.reverse = true;
        q.resume = resume;
        c.scan("kv", &q).expect("reverse scan")
    });
    assert_each_once(&ids, 0..SCAN_ROWS, "reverse");
    let ids = scan_all(|resume| {
        let mut q = RangeQuery::new(&[], 7);
        q.allow_full_scan = true;
        q.range = Some((
            "id",
            Some(RangeBound { value: Value::Long(100), inclusive: true }),
            Some(RangeBound { value: Value::Long(200), inclusive: false }),
        ));
        q.resume = resume;
        c.scan("kv", &q).expect("range scan")
    });
    assert_each_once(&ids, 100..200, "range 100..200");
    // One page larger than the table: everything at once, no resume token.
    let mut q = RangeQuery::new(&[], 1000);
    q.allow_full_scan = true;
    let page = c.scan("kv", &q).expect("scan");
    assert_eq!((page.page.rows.len(), page.page.resume), (SCAN_ROWS as usize, None));

    // A resume token naming a shard the node does not have is refused, not followed.
    let mut q = RangeQuery::new(&[], 7);
    q.allow_full_scan = true;
    q.resume = Some(vec![9, 0]);
    let e = c.scan("kv", &q).expect_err("bad token");
    assert_eq!(e.code(), Some(223), "{e}");

    // Without the flag a scan shorter than the shard key is refused.
    let e = c.scan("kv", &RangeQuery::new(&[], 7)).expect_err("needs allow_full_scan");
    assert_eq!(e.code(), Some(217), "{e}");

    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// A scan that bounds the first key field (here a range on `id`, which is the whole shard key)
/// needs no allow_full_scan: the node runs it on both shards and merges the pages, so the ids
/// come in key order, forward and reverse, each once, across pages of 7 rows, whichever shard
/// coordinates. Only a scan that bounds nothing is refused (217).
#[test]
fn bounded_scan_merges_both_shards_in_key_order() {
    const SCAN_ROWS: i64 = 300;
    let (_dir, data) = data_dir();
    let (node, mut c) = node_with_kv(&data, SCAN_ROWS, "m");
    let bound = |id: i64, inclusive: bool| Some(RangeBound { value: Value::Long(id), inclusive });
    for reverse in [false, true] {
        let ids = scan_all(|resume| {
            let mut q = RangeQuery::new(&[], 7);
            q.range = Some(("id", bound(50, true), bound(250, false)));
            q.reverse = reverse;
            q.resume = resume;
            c.scan("kv", &q).expect("bounded scan without allow_full_scan")
        });
        let mut expected: Vec<i64> = (50..250).collect();
        if reverse {
            expected.reverse();
        }
        assert_eq!(ids, expected, "reverse {reverse}: every id once, in key order");
    }
    // Coordinated by each shard from its own port, with a one-sided range.
    for shard in 0..TEST_SHARDS {
        let ids = scan_all_on_port(&node, shard, |range| {
            let from = ringstore_net::request::Bound {
                value: ringstore_net::ValueRef::Long(280),
                inclusive: false,
            };
            range.range = Some(("id", Some(from), None));
        });
        assert_eq!(ids, (281..SCAN_ROWS).collect::<Vec<_>>(), "shard {shard}'s port");
    }
    // A full scan's token is not a bounded scan's.
    let mut q = RangeQuery::new(&[], 7);
    q.range = Some(("id", bound(0, true), None));
    q.resume = Some(vec![1, 0, 7]);
    assert_eq!(c.scan("kv", &q).expect_err("bad token").code(), Some(223));
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// Describe on a connection of our choosing: the table, or the error code.
fn describe_on(conn: &mut Connection, table: &str) -> Result<CatalogTable, u16> {
    let reply = conn.call(&Request::Describe { table }, Durability::Sync).expect("describe");
    match reply.status {
        0 => Ok(response::decode_describe(&reply.body).expect("describe body")),
        code => Err(code),
    }
}

fn ddl_on(conn: &mut Connection, text: &str) -> Vec<Outcome> {
    let reply = conn.call(&Request::Ddl { text }, Durability::Sync).expect("ddl");
    response::decode_ddl(&reply.into_result().expect("ddl ok").body).expect("ddl body")
}

#[test]
fn ddl_through_the_shared_port_reaches_every_shard() {
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let mut shared = node.shared_port_client();
    let mut ports: Vec<Connection> =
        (0..TEST_SHARDS).map(|s| connect(shard_addr(&node, s))).collect();

    let outcomes = shared
        .ddl(
            "CREATE TABLE a (id LONG, name STRING, PRIMARY KEY (id)); \
              CREATE TABLE b (k STRING, n INTEGER, PRIMARY KEY (k))",
        )
        .expect("create a and b");
    let ids: Vec<_> = outcomes
        .iter()
        .map(|o| match o {
            Outcome::Created { id } => *id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids.len(), 2);
    for (table, id) in [("a", ids[0]), ("b", ids[1])] {
        let seen: Vec<CatalogTable> =
            ports.iter_mut().map(|p| describe_on(p, table).expect("described")).collect();
        assert_eq!(seen[0].id(), id, "table {table} on shard 0");
        assert!(seen.iter().all(|t| *t == seen[0]), "{table} differs between shards: {seen:?}");
        assert_eq!(seen[0].name().as_str(), table);
    }

    // DDL sent to shard 1's own port is ordered by shard 0 and applied on both.
    let outcomes = ddl_on(&mut ports[1], "DROP TABLE a");
    assert_eq!(outcomes, vec![Outcome::Dropped { id: ids[0] }]);
    for p in ports.iter_mut() {
        assert_eq!(describe_on(p, "a"), Err(201), "a dropped on every shard");
    }
    let outcomes = ddl_on(&mut ports[1], "CREATE TABLE c (id LONG, PRIMARY KEY (id))");
    let [Outcome::Created { id: c_id }] = outcomes[..] else { panic!("{outcomes:?}") };
    assert!(!ids.contains(&c_id), "table ids are not reused");
    let seen: Vec<CatalogTable> =
        ports.iter_mut().map(|p| describe_on(p, "c").expect("described")).collect();
    assert!(seen.iter().all(|t| *t == seen[0] && t.id() == c_id), "{seen:?}");

    // Hello on each shard's own port names that shard and the same topology.
    for (shard, p) in ports.iter_mut().enumerate() {
        let reply = p.call(&Request::Hello, Durability::Sync).expect("hello");
        let t = response::decode_topology(&reply.into_result().expect("ok").body).expect("body");
        assert_eq!(usize::from(t.shard), shard);
        assert_eq!(t.shard_ports, node.ready.shard_ports);
        assert_eq!(t.partition_owners.len(), node.ready.partitions as usize);
        assert_eq!(t.partition_owners, shared.topology().partition_owners);
    }

    // The new table works from every port; its rows live on their owners.
    let mut client = node.client();
    client.put("c", &[("id", Value::Long(1))]).expect("put");
    for p in ports.iter_mut() {
        assert!(get_on(p, "c", &[("id", Value::Long(1))]).is_some());
    }

    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// DDL arriving at the same time on both shards' ports (shard 1 forwards its DDL to shard 0,
/// which orders all DDL): every shard ends with the same catalog, table ids included.
#[test]
fn concurrent_ddl_on_both_ports_leaves_identical_catalogs() {
    const TABLES: usize = 10;
    let (_dir, data) = data_dir();
    let node = Node::start(&data, &[]);
    let threads: Vec<_> = (0..TEST_SHARDS)
        .map(|shard| {
            let addr = shard_addr(&node, shard);
            std::thread::spawn(move || {
                let mut conn = connect(addr);
                for i in 0..TABLES {
                    let text = format!("CREATE TABLE t{shard}_{i} (id LONG, PRIMARY KEY (id))");
                    let outcomes = ddl_on(&mut conn, &text);
                    assert!(matches!(outcomes[..], [Outcome::Created { .. }]), "{outcomes:?}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("ddl thread");
    }
    let mut ports: Vec<Connection> =
        (0..TEST_SHARDS).map(|s| connect(shard_addr(&node, s))).collect();
    let mut ids = BTreeSet::new();
    for shard in 0..TEST_SHARDS {
        for i in 0..TABLES {
            let name = format!("t{shard}_{i}");
            let seen: Vec<CatalogTable> =
                ports.iter_mut().map(|p| describe_on(p, &name).expect("described")).collect();
            assert!(seen.iter().all(|t| *t == seen[0]), "{name} differs: {seen:?}");
            assert!(ids.insert(seen[0].id()), "{name}: id {:?} given twice", seen[0].id());
        }
    }
    let status = node.terminate();
    assert!(status.success(), "{status}");
}
