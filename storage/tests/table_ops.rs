//! The typed table operations end to end on the simulated disk: get (with versions), put,
//! update, delete and their conditional forms with row tokens, execute, multiGet, multiDelete and
//! scan with ranges, direction, limits and resume tokens, versions and TTL driven by a manual
//! clock, and everything surviving a restart.

mod common;

use common::{open_tables, run, sim, T0_MS};
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock};

const SYNC: Durability = Durability::Sync;

/// A devices table: a DESC timestamp under a shard key, so newest readings come first.
const READINGS: &str = "CREATE TABLE readings (device STRING, ts TIMESTAMP, temp DOUBLE, \
                        note STRING, PRIMARY KEY (SHARD(device), ts DESC))";
/// The same with an ASC timestamp.
const LOG: &str = "CREATE TABLE log (device STRING, ts TIMESTAMP, line STRING, \
                   PRIMARY KEY (SHARD(device), ts))";
/// Three versions per row.
const PRICES: &str =
    "CREATE TABLE prices (sku STRING, price LONG, PRIMARY KEY (sku)) WITH VERSIONS 3";
/// Rows live one hour.
const SESSIONS: &str =
    "CREATE TABLE sessions (id LONG, user STRING, PRIMARY KEY (id)) USING TTL 1 HOURS";

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

fn reading(device: &str, ts: i64, temp: f64) -> Vec<(&str, Value)> {
    vec![("device", s(device)), ("ts", Value::Timestamp(ts)), ("temp", Value::Double(temp))]
}

fn written(o: &WriteOutcome) -> (RowToken, u64) {
    match o {
        WriteOutcome::Written { token, version } => (*token, *version),
        other => panic!("expected Written, got {other:?}"),
    }
}

/// The ts values of a page, in page order.
fn timestamps(page: &RowPage, schema: &TableSchema) -> Vec<i64> {
    page.rows
        .iter()
        .map(|r| match r.newest().get(schema, "ts") {
            Some(Value::Timestamp(ts)) => *ts,
            other => panic!("ts missing: {other:?}"),
        })
        .collect()
}

#[test]
fn put_get_update_delete() {
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let schema = ts.table("readings").unwrap().schema().clone();
        let key = [("device", s("d1")), ("ts", Value::Timestamp(5))];

        assert_eq!(ts.get("readings", &key, VersionSelect::Newest).await.unwrap(), None);
        let (token, version) =
            written(&ts.put("readings", &reading("d1", 5, 20.5), SYNC).await.unwrap());
        assert_eq!(version, T0_MS, "a server-assigned version is the clock");
        let row = ts.get("readings", &key, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!(row.token, token);
        assert_eq!(row.newest().get(&schema, "temp"), Some(&Value::Double(20.5)));
        assert_eq!(row.newest().get(&schema, "device"), Some(&s("d1")));
        assert_eq!(row.newest().get(&schema, "note"), None, "a field not given is absent");

        // Update sets one field and keeps the others; a None clears a field.
        clock.advance(1);
        let set = [("note", Some(s("calibrated")))];
        let (t2, _) = written(&ts.update("readings", &key, &set, SYNC).await.unwrap());
        assert_ne!(t2, token, "every write gives the row a new token");
        let row = ts.get("readings", &key, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!(row.newest().get(&schema, "temp"), Some(&Value::Double(20.5)));
        assert_eq!(row.newest().get(&schema, "note"), Some(&s("calibrated")));
        let clear = [("temp", None)];
        ts.update("readings", &key, &clear, SYNC).await.unwrap();
        let row = ts.get("readings", &key, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!(row.newest().get(&schema, "temp"), None);

        // Update of an absent row creates it.
        let other = [("device", s("d2")), ("ts", Value::Timestamp(1))];
        ts.update("readings", &other, &[("temp", Some(Value::Double(1.0)))], SYNC).await.unwrap();
        let row = ts.get("readings", &other, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!(row.newest().get(&schema, "temp"), Some(&Value::Double(1.0)));

        assert_eq!(
            ts.delete("readings", &key, SYNC).await.unwrap(),
            WriteOutcome::Deleted { existed: true }
        );
        assert_eq!(ts.get("readings", &key, VersionSelect::Newest).await.unwrap(), None);
        assert_eq!(
            ts.delete("readings", &key, SYNC).await.unwrap(),
            WriteOutcome::Deleted { existed: false }
        );
        ts.close().await.unwrap();
    });
}

#[test]
fn conditional_writes_use_row_tokens() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let schema = ts.table("readings").unwrap().schema().clone();
        let row = reading("d1", 5, 1.0);
        let key = [("device", s("d1")), ("ts", Value::Timestamp(5))];
        let put = |c: Condition| WriteOp::put(&row).condition(c);

        // putIfPresent on a missing row fails, reporting no current row.
        let o = ts.write("readings", &put(Condition::IfPresent), SYNC).await.unwrap();
        assert_eq!(o, WriteOutcome::ConditionFailed { current: None });
        assert_eq!(ts.get("readings", &key, VersionSelect::Newest).await.unwrap(), None);

        // putIfAbsent writes once, then fails with the current token (and row if asked).
        let (t1, _) =
            written(&ts.write("readings", &put(Condition::IfAbsent), SYNC).await.unwrap());
        let o = ts.write("readings", &put(Condition::IfAbsent), SYNC).await.unwrap();
        assert_eq!(
            o,
            WriteOutcome::ConditionFailed {
                current: Some(CurrentRow { token: t1, version: T0_MS, row: None })
            }
        );
        let o = ts.write("readings", &put(Condition::IfAbsent).return_row(), SYNC).await.unwrap();
        let WriteOutcome::ConditionFailed { current: Some(current) } = o else { panic!("{o:?}") };
        let current_row = current.row.expect("asked for the row");
        assert_eq!(current_row.newest().get(&schema, "temp"), Some(&Value::Double(1.0)));

        // putIfPresent now succeeds.
        clock.advance(1);
        let (t2, _) =
            written(&ts.write("readings", &put(Condition::IfPresent), SYNC).await.unwrap());
        assert_ne!(t1, t2);

        // putIfVersion with a stale token fails and reports the current one; the right one wins.
        let o = ts.write("readings", &put(Condition::IfVersion(t1)), SYNC).await.unwrap();
        let WriteOutcome::ConditionFailed { current: Some(c) } = o else { panic!("{o:?}") };
        assert_eq!(c.token, t2);
        let (t3, _) =
            written(&ts.write("readings", &put(Condition::IfVersion(t2)), SYNC).await.unwrap());

        // deleteIfVersion likewise.
        let del = |c: Condition| WriteOp::delete(&key).condition(c);
        let o = ts.write("readings", &del(Condition::IfVersion(t2)), SYNC).await.unwrap();
        assert!(matches!(o, WriteOutcome::ConditionFailed { current: Some(c) } if c.token == t3));
        assert!(ts.get("readings", &key, VersionSelect::Newest).await.unwrap().is_some());
        let o = ts.write("readings", &del(Condition::IfVersion(t3)), SYNC).await.unwrap();
        assert_eq!(o, WriteOutcome::Deleted { existed: true });
        assert_eq!(ts.get("readings", &key, VersionSelect::Newest).await.unwrap(), None);

        // A token of a deleted row never matches the row written again under the same key.
        let (t4, _) = written(&ts.put("readings", &row, SYNC).await.unwrap());
        assert!(t4 != t3 && t4 != t2 && t4 != t1);
        ts.close().await.unwrap();
    });
}

/// Concurrent conditional writes of one row on one shard: exactly one putIfAbsent wins, and
/// increments through putIfVersion never lose an update.
#[test]
fn concurrent_conditional_writes_serialize() {
    run(|| async move {
        let (disk, clock) = (sim(3), ManualClock::new(T0_MS));
        let ts = std::rc::Rc::new(open_tables(&disk, &clock).await.unwrap());
        ts.ddl(PRICES).await.unwrap();
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let ts = ts.clone();
                glommio::spawn_local(async move {
                    let row = [("sku", s("x")), ("price", Value::Long(i))];
                    let op = WriteOp::put(&row).condition(Condition::IfAbsent);
                    ts.write("prices", &op, SYNC).await.unwrap()
                })
            })
            .collect();
        let outcomes = futures::future::join_all(tasks).await;
        let wins = outcomes.iter().filter(|o| matches!(o, WriteOutcome::Written { .. })).count();
        assert_eq!(wins, 1, "{outcomes:?}");

        let schema = ts.table("prices").unwrap().schema().clone();
        let row = ts.get("prices", &[("sku", s("x"))], VersionSelect::Newest).await.unwrap();
        let Some(Value::Long(start)) = row.unwrap().newest().get(&schema, "price").cloned() else {
            panic!("no start price")
        };
        // 8 tasks x 5 increments of the price by read + putIfVersion, retrying on conflict.
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let ts = ts.clone();
                glommio::spawn_local(async move {
                    let key = [("sku", s("x"))];
                    let schema = ts.table("prices").unwrap().schema().clone();
                    let mut done = 0;
                    while done < 5 {
                        let row = ts.get("prices", &key, VersionSelect::Newest).await.unwrap();
                        let row = row.unwrap();
                        let Some(Value::Long(p)) = row.newest().get(&schema, "price").cloned()
                        else {
                            panic!("price missing")
                        };
                        let new = [("sku", s("x")), ("price", Value::Long(p + 1))];
                        let op = WriteOp::put(&new).condition(Condition::IfVersion(row.token));
                        if let WriteOutcome::Written { .. } =
                            ts.write("prices", &op, Durability::NoSync).await.unwrap()
                        {
                            done += 1;
                        }
                    }
                })
            })
            .collect();
        futures::future::join_all(tasks).await;
        let row = ts.get("prices", &[("sku", s("x"))], VersionSelect::Newest).await.unwrap();
        assert_eq!(row.unwrap().newest().get(&schema, "price"), Some(&Value::Long(start + 40)));
    });
}

#[test]
fn versions_are_kept_up_to_max_versions_and_selected() {
    run(|| async move {
        let (disk, clock) = (sim(4), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(PRICES).await.unwrap();
        let schema = ts.table("prices").unwrap().schema().clone();
        let key = [("sku", s("a"))];
        for (i, v) in [T0_MS - 4000, T0_MS - 3000, T0_MS - 2000, T0_MS - 1000].iter().enumerate() {
            let row = [("sku", s("a")), ("price", Value::Long(i as i64))];
            let o = ts.write("prices", &WriteOp::put(&row).version(*v), SYNC).await.unwrap();
            assert_eq!(written(&o).1, *v);
        }
        let price = |r: &RowVersion| r.get(&schema, "price").cloned();
        let row = ts.get("prices", &key, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!((row.versions.len(), price(row.newest())), (1, Some(Value::Long(3))));

        // Only 3 versions are kept: the oldest was dropped when the fourth was written.
        let row = ts.get("prices", &key, VersionSelect::Latest(10)).await.unwrap().unwrap();
        let versions: Vec<u64> = row.versions.iter().map(|v| v.version).collect();
        assert_eq!(versions, [T0_MS - 1000, T0_MS - 2000, T0_MS - 3000]);
        let row = ts.get("prices", &key, VersionSelect::Latest(2)).await.unwrap().unwrap();
        assert_eq!(row.versions.len(), 2);

        // A version range [from, to) picks by version.
        let range = VersionSelect::Range { from: T0_MS - 3000, to: T0_MS - 1000, max: 10 };
        let row = ts.get("prices", &key, range).await.unwrap().unwrap();
        let versions: Vec<u64> = row.versions.iter().map(|v| v.version).collect();
        assert_eq!(versions, [T0_MS - 2000, T0_MS - 3000]);
        let empty = VersionSelect::Range { from: T0_MS, to: T0_MS + 5, max: 10 };
        assert_eq!(ts.get("prices", &key, empty).await.unwrap(), None);

        // Writing an existing version replaces it; an update adds a version merged from newest.
        let row = [("sku", s("a")), ("price", Value::Long(30))];
        ts.write("prices", &WriteOp::put(&row).version(T0_MS - 2000), SYNC).await.unwrap();
        let got = ts.get("prices", &key, VersionSelect::Latest(3)).await.unwrap().unwrap();
        assert_eq!(price(&got.versions[1]), Some(Value::Long(30)));
        assert_eq!(got.versions.len(), 3);
        let (_, v) = written(&ts.update("prices", &key, &[], SYNC).await.unwrap());
        assert_eq!(v, T0_MS);
        let got = ts.get("prices", &key, VersionSelect::Latest(3)).await.unwrap().unwrap();
        let versions: Vec<u64> = got.versions.iter().map(|v| v.version).collect();
        assert_eq!(versions, [T0_MS, T0_MS - 1000, T0_MS - 2000]);
        assert_eq!(price(got.newest()), Some(Value::Long(3)), "update merges the newest version");

        // A version older than the 3 kept would never be read: refused, and nothing changes.
        let old = [("sku", s("a")), ("price", Value::Long(-1))];
        let e = ts.write("prices", &WriteOp::put(&old).version(T0_MS - 5000), SYNC).await;
        assert_eq!(e.unwrap_err().code(), 230);
        let unchanged = ts.get("prices", &key, VersionSelect::Latest(3)).await.unwrap().unwrap();
        assert_eq!(unchanged, got);

        // Everything survives a restart.
        ts.close().await.unwrap();
        let ts = open_tables(&disk, &clock).await.unwrap();
        let again = ts.get("prices", &key, VersionSelect::Latest(3)).await.unwrap().unwrap();
        assert_eq!(again, got);
        ts.close().await.unwrap();
    });
}

/// ALTER TABLE changes a table's options in place: fewer versions are read at once (and dropped
/// at the row's next write), a TTL applies to versions written after it, a narrower client
/// version window refuses what it excludes; a bad value or an unknown table changes nothing, and
/// the options survive a restart.
#[test]
fn alter_table_changes_versions_ttl_and_the_version_window() {
    run(|| async move {
        let (disk, clock) = (sim(14), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(PRICES).await.unwrap();
        let id = ts.table("prices").unwrap().id();
        let key = [("sku", s("a"))];
        let put = |price: i64| [("sku", s("a")), ("price", Value::Long(price))];
        for (i, v) in [T0_MS - 3000, T0_MS - 2000, T0_MS - 1000].iter().enumerate() {
            ts.write("prices", &WriteOp::put(&put(i as i64)).version(*v), SYNC).await.unwrap();
        }
        let versions = |row: &TableRow| row.versions.iter().map(|v| v.version).collect::<Vec<_>>();
        let all = VersionSelect::Latest(10);

        let outcome = ts.ddl("ALTER TABLE prices WITH VERSIONS 1").await.unwrap();
        assert_eq!(outcome, [Outcome::Altered { id }]);
        let row = ts.get("prices", &key, all).await.unwrap().unwrap();
        assert_eq!(versions(&row), [T0_MS - 1000], "only the newest version is read");
        ts.write("prices", &WriteOp::put(&put(9)), SYNC).await.unwrap();
        ts.ddl("ALTER TABLE prices WITH VERSIONS 3").await.unwrap();
        let row = ts.get("prices", &key, all).await.unwrap().unwrap();
        assert_eq!(versions(&row), [T0_MS], "the write kept one version");

        ts.ddl("ALTER TABLE prices USING TTL 1 HOURS WITH VERSION OFFSET 60 SECONDS")
            .await
            .unwrap();
        clock.advance(10);
        ts.write("prices", &WriteOp::put(&put(10)), SYNC).await.unwrap();
        let row = ts.get("prices", &key, all).await.unwrap().unwrap();
        let expiries: Vec<u64> = row.versions.iter().map(|v| v.expiry_ms).collect();
        assert_eq!(expiries, [T0_MS + 10 + 3_600_000, 0], "the TTL applies to the new version");
        let old_row = put(11);
        let too_old = WriteOp::put(&old_row).version(T0_MS - 120_000);
        assert_eq!(ts.write("prices", &too_old, SYNC).await.unwrap_err().code(), 221);

        let e = ts.ddl("ALTER TABLE prices WITH VERSIONS 0").await.unwrap_err();
        assert_eq!(e.code(), 112, "{e}");
        assert_eq!(ts.ddl("ALTER TABLE nope WITH VERSIONS 2").await.unwrap_err().code(), 201);
        let options = *ts.table("prices").unwrap().schema().options();
        ts.close().await.unwrap();
        let ts = open_tables(&disk, &clock).await.unwrap();
        let reopened = *ts.table("prices").unwrap().schema().options();
        assert_eq!(reopened, options);
        assert_eq!(
            (reopened.max_versions, reopened.ttl_seconds, reopened.max_version_offset_seconds),
            (3, Some(3_600), 60)
        );
        ts.close().await.unwrap();
    });
}

/// On a single-version table the last write wins whatever its version, on every path: a blind
/// put, a conditional put and an update (which read the row first) all replace a newer version.
#[test]
fn single_version_tables_keep_the_last_write() {
    run(|| async move {
        let (disk, clock) = (sim(13), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let schema = ts.table("readings").unwrap().schema().clone();
        let key = [("device", s("d")), ("ts", Value::Timestamp(1))];
        ts.put("readings", &reading("d", 1, 1.0), SYNC).await.unwrap();
        clock.advance(10_000);
        let older = T0_MS - 5000;
        let temp = |row: Option<TableRow>| {
            let row = row.expect("row exists");
            (row.newest().version, row.newest().get(&schema, "temp").cloned())
        };

        let set = [("temp", Some(Value::Double(2.0)))];
        ts.write("readings", &WriteOp::update(&key, &set).version(older), SYNC).await.unwrap();
        let got = ts.get("readings", &key, VersionSelect::Newest).await.unwrap();
        assert_eq!(temp(got), (older, Some(Value::Double(2.0))));

        let r3 = reading("d", 1, 3.0);
        let op = WriteOp::put(&r3).version(older - 1).condition(Condition::IfPresent);
        ts.write("readings", &op, SYNC).await.unwrap();
        let got = ts.get("readings", &key, VersionSelect::Newest).await.unwrap();
        assert_eq!(temp(got), (older - 1, Some(Value::Double(3.0))));

        let r4 = reading("d", 1, 4.0);
        ts.write("readings", &WriteOp::put(&r4).version(older - 2), SYNC).await.unwrap();
        let got = ts.get("readings", &key, VersionSelect::Newest).await.unwrap();
        assert_eq!(temp(got), (older - 2, Some(Value::Double(4.0))));
        ts.close().await.unwrap();
    });
}

#[test]
fn ttl_hides_expired_rows_and_versions_at_once() {
    run(|| async move {
        let (disk, clock) = (sim(5), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(SESSIONS).await.unwrap();
        let key = [("id", Value::Long(1))];
        let row = [("id", Value::Long(1)), ("user", s("ann"))];
        ts.put("sessions", &row, SYNC).await.unwrap();
        // A per-write TTL overrides the table's.
        let short = [("id", Value::Long(2)), ("user", s("bob"))];
        ts.write("sessions", &WriteOp::put(&short).ttl_seconds(10), SYNC).await.unwrap();

        clock.set(T0_MS + 9_999);
        assert!(ts
            .get("sessions", &[("id", Value::Long(2))], VersionSelect::Newest)
            .await
            .unwrap()
            .is_some());
        clock.set(T0_MS + 10_000);
        assert_eq!(
            ts.get("sessions", &[("id", Value::Long(2))], VersionSelect::Newest).await.unwrap(),
            None
        );

        clock.set(T0_MS + 3_599_999);
        let got = ts.get("sessions", &key, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!(got.newest().expiry_ms, T0_MS + 3_600_000);
        clock.set(T0_MS + 3_600_000);
        assert_eq!(ts.get("sessions", &key, VersionSelect::Newest).await.unwrap(), None);
        let mut scan = RangeRequest::new(&[], 10);
        scan.allow_full_scan = true;
        assert!(ts.scan("sessions", &scan).await.unwrap().rows.is_empty());
        // An expired row counts as absent for conditions.
        let op = WriteOp::put(&row).condition(Condition::IfAbsent);
        assert!(matches!(
            ts.write("sessions", &op, SYNC).await.unwrap(),
            WriteOutcome::Written { .. }
        ));

        // A client version whose TTL has already run out is refused; one just inside is taken.
        let old = T0_MS + 3_600_000 - 3_600_000;
        let e = ts.write("sessions", &WriteOp::put(&row).version(old), SYNC).await.unwrap_err();
        assert_eq!(e.code(), 222, "{e}");
        ts.write("sessions", &WriteOp::put(&row).version(old + 1), SYNC).await.unwrap();
        ts.close().await.unwrap();
    });
}

/// In a multi-version table with a TTL, old versions expire one by one while newer ones stay.
#[test]
fn expired_versions_disappear_individually() {
    run(|| async move {
        let (disk, clock) = (sim(6), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl("CREATE TABLE m (k LONG, v LONG, PRIMARY KEY (k)) USING TTL 100 SECONDS WITH VERSIONS 5")
            .await
            .unwrap();
        let key = [("k", Value::Long(1))];
        for i in 0..3 {
            let row = [("k", Value::Long(1)), ("v", Value::Long(i))];
            ts.put("m", &row, SYNC).await.unwrap();
            clock.advance(10_000);
        }
        // Versions at T0, T0+10 s and T0+20 s; now T0+30 s. At T0+105 s only the newest two live.
        clock.set(T0_MS + 105_000);
        let row = ts.get("m", &key, VersionSelect::Latest(5)).await.unwrap().unwrap();
        let versions: Vec<u64> = row.versions.iter().map(|v| v.version).collect();
        assert_eq!(versions, [T0_MS + 20_000, T0_MS + 10_000]);
        // A write drops the expired version from the stored row for good.
        ts.update("m", &key, &[], SYNC).await.unwrap();
        clock.set(T0_MS + 105_000);
        let row = ts.get("m", &key, VersionSelect::Latest(5)).await.unwrap().unwrap();
        assert_eq!(row.versions.len(), 3);
        ts.close().await.unwrap();
    });
}

async fn load_readings(
    ts: &TableStore<ringstore_storage::disk::sim::SimDisk>,
    devices: &[&str],
    n: i64,
) {
    for device in devices {
        for t in 0..n {
            ts.put("readings", &reading(device, t, t as f64), Durability::NoSync)
                .await
                .expect("put");
        }
    }
    ts.store().sync().await.expect("sync");
}

#[test]
fn multi_get_ranges_directions_limits_and_resume() {
    run(|| async move {
        let (disk, clock) = (sim(7), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let schema = ts.table("readings").unwrap().schema().clone();
        load_readings(&ts, &["d1", "d2", "d10"], 20).await;
        let d1 = [("device", s("d1"))];

        // DESC ts: key order is newest first; a reverse read gives oldest first.
        let page = ts.multi_get("readings", &RangeRequest::new(&d1, 100)).await.unwrap();
        assert_eq!(timestamps(&page, &schema), (0..20).rev().collect::<Vec<i64>>());
        assert_eq!(page.resume, None);
        let mut rev = RangeRequest::new(&d1, 100);
        rev.reverse = true;
        let page = ts.multi_get("readings", &rev).await.unwrap();
        assert_eq!(timestamps(&page, &schema), (0..20).collect::<Vec<i64>>());

        // A range on ts in value order, with inclusive and exclusive ends.
        let mut req = RangeRequest::new(&d1, 100);
        req.range = Some(FieldRange {
            start: Some(RangeBound { value: Value::Timestamp(5), inclusive: true }),
            end: Some(RangeBound { value: Value::Timestamp(9), inclusive: false }),
        });
        let page = ts.multi_get("readings", &req).await.unwrap();
        assert_eq!(timestamps(&page, &schema), [8, 7, 6, 5]);
        req.reverse = true;
        let page = ts.multi_get("readings", &req).await.unwrap();
        assert_eq!(timestamps(&page, &schema), [5, 6, 7, 8]);

        // Paging with a limit and the resume token visits every row once, in both directions.
        for reverse in [false, true] {
            let mut req = RangeRequest::new(&d1, 7);
            req.reverse = reverse;
            let mut seen = Vec::new();
            loop {
                let page = ts.multi_get("readings", &req).await.unwrap();
                assert!(page.rows.len() <= 7);
                seen.extend(timestamps(&page, &schema));
                match page.resume {
                    Some(r) => req.resume = Some(r),
                    None => break,
                }
            }
            let mut want: Vec<i64> = (0..20).rev().collect();
            if reverse {
                want.reverse();
            }
            assert_eq!(seen, want);
        }

        // The shard key "d1" does not pick up "d10" (STRING keys are escaped, so "d1" is not a
        // byte prefix of "d10"'s key).
        let page = ts.multi_get("readings", &RangeRequest::new(&d1, 100)).await.unwrap();
        assert!(page.rows.iter().all(|r| r.newest().get(&schema, "device") == Some(&s("d1"))));
        ts.close().await.unwrap();
    });
}

#[test]
fn asc_timestamp_reverse_read_gives_newest_first() {
    run(|| async move {
        let (disk, clock) = (sim(8), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(LOG).await.unwrap();
        let schema = ts.table("log").unwrap().schema().clone();
        for t in [3, 1, 2] {
            let row = [("device", s("d")), ("ts", Value::Timestamp(t)), ("line", s("x"))];
            ts.put("log", &row, SYNC).await.unwrap();
        }
        let key = [("device", s("d"))];
        let mut req = RangeRequest::new(&key, 10);
        req.reverse = true;
        let page = ts.multi_get("log", &req).await.unwrap();
        assert_eq!(timestamps(&page, &schema), [3, 2, 1]);
        ts.close().await.unwrap();
    });
}

#[test]
fn multi_delete_deletes_one_shard_key_range_at_once() {
    run(|| async move {
        let (disk, clock) = (sim(9), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let schema = ts.table("readings").unwrap().schema().clone();
        load_readings(&ts, &["d1", "d2"], 30).await;
        let d1 = [("device", s("d1"))];

        // A range: ts in [10, 20].
        let mut req = RangeRequest::new(&d1, 1000);
        req.range = Some(FieldRange {
            start: Some(RangeBound { value: Value::Timestamp(10), inclusive: true }),
            end: Some(RangeBound { value: Value::Timestamp(20), inclusive: true }),
        });
        let o = ts.multi_delete("readings", &req, SYNC).await.unwrap();
        assert_eq!(o, MultiDeleteOutcome { deleted: 11, resume: None });
        let page = ts.multi_get("readings", &RangeRequest::new(&d1, 100)).await.unwrap();
        let want: Vec<i64> = (0..30).rev().filter(|t| !(10..=20).contains(t)).collect();
        assert_eq!(timestamps(&page, &schema), want);

        // A resume token still narrows the range: everything after ts 28 (ts is DESC).
        let first = ts.multi_get("readings", &RangeRequest::new(&d1, 2)).await.unwrap();
        assert_eq!(timestamps(&first, &schema), [29, 28]);
        let mut req = RangeRequest::new(&d1, 1000);
        req.resume = first.resume;
        let o = ts.multi_delete("readings", &req, SYNC).await.unwrap();
        assert_eq!(o, MultiDeleteOutcome { deleted: 17, resume: None });
        let page = ts.multi_get("readings", &RangeRequest::new(&d1, 100)).await.unwrap();
        assert_eq!(timestamps(&page, &schema), [29, 28]);

        // The rest of d1 in one multiDelete, whatever its limit: the limit bounds nothing now.
        let o = ts.multi_delete("readings", &RangeRequest::new(&d1, 1), SYNC).await.unwrap();
        assert_eq!(o, MultiDeleteOutcome { deleted: 2, resume: None });
        assert!(ts
            .multi_get("readings", &RangeRequest::new(&d1, 100))
            .await
            .unwrap()
            .rows
            .is_empty());
        // d2 is untouched.
        let d2 = [("device", s("d2"))];
        assert_eq!(
            ts.multi_get("readings", &RangeRequest::new(&d2, 100)).await.unwrap().rows.len(),
            30
        );
        ts.close().await.unwrap();
    });
}

#[test]
fn execute_is_all_or_nothing() {
    run(|| async move {
        let (disk, clock) = (sim(10), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let r1 = reading("d", 1, 1.0);
        let r2 = reading("d", 2, 2.0);
        let r3 = reading("d", 3, 3.0);
        let k2 = [("device", s("d")), ("ts", Value::Timestamp(2))];
        ts.put("readings", &r2, SYNC).await.unwrap();

        // r2 exists, so its putIfAbsent fails: with abort nothing is written.
        let ops = [
            WriteOp::put(&r1),
            WriteOp::put(&r2).condition(Condition::IfAbsent),
            WriteOp::put(&r3),
        ];
        let abort = ExecuteOptions { durability: SYNC, abort_on_failure: true };
        let o = ts.execute("readings", &ops, abort).await.unwrap();
        assert!(
            matches!(
                o,
                ExecuteOutcome::Aborted {
                    index: 1,
                    outcome: WriteOutcome::ConditionFailed { current: Some(_) }
                }
            ),
            "{o:?}"
        );
        let d = [("device", s("d"))];
        assert_eq!(
            ts.multi_get("readings", &RangeRequest::new(&d, 10)).await.unwrap().rows.len(),
            1
        );

        // Without abort the other two are written together and the failure is reported.
        let go_on = ExecuteOptions { durability: SYNC, abort_on_failure: false };
        let ExecuteOutcome::Done(outcomes) = ts.execute("readings", &ops, go_on).await.unwrap()
        else {
            panic!("not aborted")
        };
        assert!(matches!(outcomes[0], WriteOutcome::Written { .. }));
        assert!(matches!(outcomes[1], WriteOutcome::ConditionFailed { .. }));
        assert!(matches!(outcomes[2], WriteOutcome::Written { .. }));
        assert_eq!(
            ts.multi_get("readings", &RangeRequest::new(&d, 10)).await.unwrap().rows.len(),
            3
        );

        // Mixed kinds in one execute: update, delete, put.
        let set = [("note", Some(s("n")))];
        let k1 = [("device", s("d")), ("ts", Value::Timestamp(1))];
        let r4 = reading("d", 4, 4.0);
        let ops = [WriteOp::update(&k1, &set), WriteOp::delete(&k2), WriteOp::put(&r4)];
        let ExecuteOutcome::Done(o) = ts.execute("readings", &ops, abort).await.unwrap() else {
            panic!("nothing fails")
        };
        assert_eq!(o[1], WriteOutcome::Deleted { existed: true });
        assert_eq!(ts.get("readings", &k2, VersionSelect::Newest).await.unwrap(), None);
        ts.close().await.unwrap();
    });
}

#[test]
fn scan_that_bounds_no_key_field_needs_allow_full_scan() {
    run(|| async move {
        let (disk, clock) = (sim(11), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        ts.ddl(LOG).await.unwrap();
        load_readings(&ts, &["a", "b", "c"], 4).await;
        let row = [("device", s("a")), ("ts", Value::Timestamp(1)), ("line", s("other table"))];
        ts.put("log", &row, SYNC).await.unwrap();

        let mut req = RangeRequest::new(&[], 5);
        let e = ts.scan("readings", &req).await.unwrap_err();
        assert_eq!(e.code(), 217, "{e}");
        assert!(e.to_string().contains("allow_full_scan"), "{e}");
        req.allow_full_scan = true;
        let mut n = 0;
        loop {
            let page = ts.scan("readings", &req).await.unwrap();
            n += page.rows.len();
            match page.resume {
                Some(r) => req.resume = Some(r),
                None => break,
            }
        }
        assert_eq!(n, 12, "every row of the table once, and none of the other table");
        // A scan whose key covers the shard key needs no flag.
        let a = [("device", s("a"))];
        assert_eq!(ts.scan("readings", &RangeRequest::new(&a, 10)).await.unwrap().rows.len(), 4);
        ts.close().await.unwrap();
    });
}

#[test]
fn rows_catalog_and_tokens_survive_restart() {
    run(|| async move {
        let (disk, clock) = (sim(12), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(READINGS).await.unwrap();
        let key = [("device", s("d")), ("ts", Value::Timestamp(1))];
        let (token, _) = written(&ts.put("readings", &reading("d", 1, 9.5), SYNC).await.unwrap());
        ts.close().await.unwrap();
        disk.crash_losing_all_unsynced();

        clock.advance(1);
        let ts = open_tables(&disk, &clock).await.unwrap();
        let row = ts.get("readings", &key, VersionSelect::Newest).await.unwrap().unwrap();
        assert_eq!(row.token, token);
        let again = reading("d", 1, 10.5);
        let op = WriteOp::put(&again).condition(Condition::IfVersion(token));
        let (t2, _) = written(&ts.write("readings", &op, SYNC).await.unwrap());
        assert!(t2 > token, "tokens after a restart are above the ones before");
        ts.close().await.unwrap();
    });
}

/// The largest key the table layer accepts (eight key fields of 1 KiB of zero bytes, every byte
/// escaped) is stored, read back and survives a restart: the store's key limit holds it.
#[test]
fn largest_key_round_trips_through_the_store() {
    run(|| async move {
        let (disk, clock) = (sim(13), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(
            "CREATE TABLE wide (a BINARY, b BINARY, c BINARY, d BINARY, e BINARY, f BINARY, \
             g BINARY, h BINARY, v STRING, PRIMARY KEY (a, b, c, d, e, f, g, h))",
        )
        .await
        .unwrap();
        let zeros = Value::Binary(vec![0; limits::KEY_FIELD_BYTES_MAX]);
        let names = ["a", "b", "c", "d", "e", "f", "g", "h"];
        let key: Vec<(&str, Value)> = names.iter().map(|n| (*n, zeros.clone())).collect();
        let mut row = key.clone();
        row.push(("v", s("kept")));
        written(&ts.put("wide", &row, SYNC).await.unwrap());
        ts.close().await.unwrap();
        disk.crash_losing_all_unsynced();

        let ts = open_tables(&disk, &clock).await.unwrap();
        let got = ts.get("wide", &key, VersionSelect::Newest).await.unwrap().expect("row");
        let schema = ts.table("wide").unwrap().schema().clone();
        assert_eq!(got.newest().get(&schema, "v"), Some(&s("kept")));
        ts.close().await.unwrap();
    });
}

/// A DDL statement whose catalog write fails leaves the catalog poisoned: later DDL is refused
/// (the file may hold either version) until the store is opened again, and the failed CREATE's
/// table is not visible.
#[test]
fn failed_catalog_write_refuses_later_ddl_until_reopen() {
    run(|| async move {
        let (disk, clock) = (sim(14), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        disk.fail_next(ringstore_storage::disk::sim::SimOp::Fsync);
        let e = ts.ddl(READINGS).await.unwrap_err();
        assert_eq!(e.code(), 503, "{e}");
        assert_eq!(ts.table("readings").unwrap_err().code(), 201);
        let e = ts.ddl(LOG).await.unwrap_err();
        assert_eq!(e.code(), 503, "{e}");
        assert!(e.to_string().contains("poison") || e.to_string().contains("failed"), "{e}");
        ts.close().await.unwrap();

        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(LOG).await.unwrap();
        assert!(ts.table("log").is_ok());
        ts.close().await.unwrap();
    });
}
