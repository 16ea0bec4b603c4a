//! Where the router sends each kind of request (`node/src/router.rs`), decided by real shards of
//! a two-shard node built as the daemon builds them: keyed requests go to the shard owning their
//! partition, DDL to shard 0, statistics and scans without a shard key fan out, and a
//! forwarded request whose key this shard does not own is refused.

mod common;

use std::rc::Rc;

use ringstore_net::request::{RangeBody, Request, WriteBody, WriteOptions};
use ringstore_net::{FieldsBuf, ValueRef};
use ringstore_node::router::{route, FanOutKind, Route};
use ringstore_node::shard::Shard;
use ringstore_storage::table::{partition_of_values, Value, VersionSelect};

const DDL: &str = "CREATE TABLE t (k STRING, v STRING, PRIMARY KEY (k))";

fn key_of(i: u32) -> String {
    format!("key-{i}")
}

/// Runs `test` with shards 0 and 1 of a two-shard node (on one executor thread), both with
/// table `t`.
fn on_two_shards<F, Fut>(test: F)
where
    F: FnOnce(Rc<Shard>, Rc<Shard>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    common::on_executor(|path| async move {
        let zero = common::shard(&path.join("shard-0"), 2, 0).await;
        let one = common::shard(&path.join("shard-1"), 2, 1).await;
        for s in [&zero, &one] {
            s.tables.ddl(DDL).await.expect("create table");
        }
        test(zero, one).await;
    });
}

#[test]
fn requests_go_to_the_owner_of_their_partition() {
    on_two_shards(|zero, one| async move {
        let schema = zero.tables.table("t").expect("table").schema().clone();
        let (mut local, mut forwarded) = (0, 0);
        for i in 0..64 {
            let text = key_of(i);
            let key = FieldsBuf::of([("k", ValueRef::String(&text))]);
            let values = [Value::String(text.clone())];
            let partition =
                partition_of_values(&schema, &values, zero.partitions()).expect("partition");
            let owner = zero.owner(partition);
            let get = Request::Get { table: "t", key: key.list(), versions: VersionSelect::Newest };
            let put = Request::Write {
                table: "t",
                body: WriteBody::Put { row: key.list() },
                options: WriteOptions::default(),
            };
            for req in [&get, &put] {
                let expected = if owner == 0 { Route::Local } else { Route::Forward(owner) };
                assert_eq!(route(&zero, req, false), expected, "{text} on shard 0");
                // The owner runs what shard 0 forwards; shard 0 refuses what it does not own.
                let at_owner = if owner == 0 { &zero } else { &one };
                assert_eq!(route(at_owner, req, true), Route::Local, "{text} at its owner");
                let other = if owner == 0 { &one } else { &zero };
                assert_eq!(route(other, req, true), Route::NotOwner(owner), "{text}");
            }
            if owner == 0 {
                local += 1;
            } else {
                forwarded += 1;
            }
        }
        assert!(local > 0 && forwarded > 0, "64 keys land on both shards");
    });
}

#[test]
fn ddl_goes_to_shard_0_and_statistics_and_keyless_scans_fan_out() {
    on_two_shards(|zero, one| async move {
        let ddl = Request::Ddl { text: "SHOW TABLES" };
        assert_eq!(
            route(&zero, &ddl, false),
            Route::FanOut(FanOutKind::Ddl { text: "SHOW TABLES" })
        );
        assert_eq!(route(&one, &ddl, false), Route::Forward(0), "DDL is ordered by shard 0");
        assert_eq!(
            route(&zero, &ddl, true),
            Route::FanOut(FanOutKind::Ddl { text: "SHOW TABLES" })
        );
        assert_eq!(route(&one, &Request::Stats, false), Route::FanOut(FanOutKind::Stats));
        for local in [Request::Ping, Request::Hello, Request::Describe { table: "t" }] {
            assert_eq!(route(&one, &local, false), Route::Local, "{local:?}");
        }
        let none = FieldsBuf::of([]);
        let scan = Request::Scan { table: "t", range: RangeBody::new(none.list(), 10) };
        let Route::FanOut(FanOutKind::Scan { table: "t", .. }) = route(&one, &scan, false) else {
            panic!("a scan without the shard key visits every shard")
        };
        // An unknown table runs here, where the table layer reports it.
        let unknown = Request::Scan { table: "nope", range: RangeBody::new(none.list(), 10) };
        assert_eq!(route(&one, &unknown, false), Route::Local);
        let get = Request::Get { table: "nope", key: none.list(), versions: VersionSelect::Newest };
        assert_eq!(route(&one, &get, false), Route::Local);
    });
}
