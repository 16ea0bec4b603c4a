//! The allocation-free put (`TableStore::put_now`, the node's inline path) against the general
//! one (`TableStore::write`): the same row put both ways into two tables of one schema reads back
//! the same (every type, NULLs, a DESC key field, a client version, the table TTL and a row TTL),
//! and every put the general path must handle or refuse (a condition, a multi-version table, an
//! unknown or repeated field, a missing key field, a wrong type, a version out of the window, a
//! row another shard owns) is declined by `put_now` with nothing written, while `write` gives
//! its error or does it. Runs on the simulated disk with a manual clock.

mod common;

use common::{open_tables, run, sim, T0_MS};
use ringstore_storage::table::*;
use ringstore_storage::{Durability, DurableWait, ManualClock};

const NOSYNC: Durability = Durability::NoSync;

const SCHEMA: &str = "(dev STRING, ts TIMESTAMP, n LONG, x DOUBLE, ok BOOLEAN, \
                      e ENUM(red, green), b BINARY, note STRING, \
                      PRIMARY KEY (SHARD(dev), ts DESC)) USING TTL 1 HOURS";

fn row(ts: i64) -> Vec<(&'static str, Value)> {
    vec![
        ("ts", Value::Timestamp(ts)),
        ("dev", Value::String("d-1".into())),
        ("n", Value::Long(-5)),
        ("x", Value::Double(2.5)),
        ("ok", Value::Boolean(true)),
        ("e", Value::Enum("green".into())),
        ("b", Value::Binary(vec![0, 255, 7])),
    ]
}

fn refs<'a>(pairs: &'a [(&'a str, Value)]) -> impl Iterator<Item = (&'a str, ValueRef<'a>)> {
    pairs.iter().map(|(n, v)| (*n, ValueRef::from(v)))
}

/// `TableStore::put_now` of `pairs` sorted as the node's inline put sorts them: declined (None)
/// when `RowSlots` refuses a field, as when `put_now` refuses the row.
fn put_now<D: ringstore_storage::disk::Disk>(
    ts: &TableStore<D>,
    t: &CatalogTable,
    pairs: &[(&str, Value)],
    options: PutOptions,
    scratch: &mut PutScratch,
    owns: impl FnOnce(&[u8]) -> bool,
) -> Option<OpResult<(WriteOutcome, Option<DurableWait>)>> {
    let row = RowSlots::of(t, refs(pairs))?;
    ts.put_now(t, &row, options, NOSYNC, T0_MS, scratch, owns)
}

/// The row as read back, without the token (which differs between any two writes).
async fn read_back<D: ringstore_storage::disk::Disk>(
    ts: &TableStore<D>,
    table: &str,
    ts_value: i64,
) -> Vec<RowVersion> {
    let key = [("dev", Value::String("d-1".into())), ("ts", Value::Timestamp(ts_value))];
    let row = ts.get(table, &key, VersionSelect::Latest(5)).await.expect("get");
    row.expect("the row exists").versions
}

#[test]
fn put_now_writes_what_write_writes() {
    run(|| async move {
        let (disk, clock) = (sim(1), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(&format!("CREATE TABLE a {SCHEMA}")).await.unwrap();
        ts.ddl(&format!("CREATE TABLE b {SCHEMA}")).await.unwrap();
        let (a, mut scratch) = (ts.table("a").unwrap(), PutScratch::default());
        let cases: [(PutOptions, Option<u64>, Option<u64>); 3] = [
            (PutOptions::default(), None, None),
            (
                PutOptions { version: Some(T0_MS - 5_000), ..Default::default() },
                Some(T0_MS - 5_000),
                None,
            ),
            (PutOptions { ttl_seconds: Some(60), ..Default::default() }, None, Some(60)),
        ];
        for (i, (options, version, ttl)) in cases.into_iter().enumerate() {
            let pairs = row(i as i64);
            let done = put_now(&ts, &a, &pairs, options, &mut scratch, |_| true);
            let (outcome, wait) = done.expect("taken inline").unwrap();
            assert!(wait.is_none(), "a NoSync put waits for nothing");
            let mut op = WriteOp::put(&pairs);
            if let Some(v) = version {
                op = op.version(v);
            }
            if let Some(t) = ttl {
                op = op.ttl_seconds(t);
            }
            let general = ts.write("b", &op, NOSYNC).await.unwrap();
            let version_of = |o: &WriteOutcome| match o {
                WriteOutcome::Written { version, .. } => *version,
                other => panic!("expected Written, got {other:?}"),
            };
            assert_eq!(version_of(&outcome), version_of(&general), "case {i}");
            let (x, y) = (read_back(&ts, "a", i as i64).await, read_back(&ts, "b", i as i64).await);
            assert_eq!(x, y, "case {i}: the same row both ways");
            assert_eq!(x[0].get(a.schema(), "note"), None, "an absent field reads as NULL");
        }
    })
}

#[test]
fn put_now_declines_what_needs_the_general_path() {
    run(|| async move {
        let (disk, clock) = (sim(2), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(&format!("CREATE TABLE a {SCHEMA}")).await.unwrap();
        ts.ddl("CREATE TABLE v (k LONG, n LONG, PRIMARY KEY (k)) WITH VERSIONS 3").await.unwrap();
        let (a, mut scratch) = (ts.table("a").unwrap(), PutScratch::default());
        let good = row(1);
        let with = |extra: (&'static str, Value)| {
            let mut pairs = row(1);
            pairs.push(extra);
            pairs
        };
        let mut missing_key = row(1);
        missing_key.retain(|(n, _)| *n != "ts");
        let mut mistyped = row(1);
        mistyped[2].1 = Value::String("five".into());
        type Case = (&'static str, Vec<(&'static str, Value)>, PutOptions);
        let refused: [Case; 5] = [
            ("unknown field", with(("nope", Value::Long(1))), PutOptions::default()),
            ("repeated field", with(("n", Value::Long(1))), PutOptions::default()),
            ("missing key field", missing_key, PutOptions::default()),
            ("wrong type", mistyped, PutOptions::default()),
            (
                "version out of window",
                good.clone(),
                PutOptions { version: Some(1), ..Default::default() },
            ),
        ];
        for (what, pairs, options) in &refused {
            let done = put_now(&ts, &a, pairs, *options, &mut scratch, |_| true);
            assert!(done.is_none(), "{what}: declined");
            let mut op = WriteOp::put(pairs);
            if let Some(v) = options.version {
                op = op.version(v);
            }
            assert!(ts.write("a", &op, NOSYNC).await.is_err(), "{what}: the general path refuses");
        }
        let conditional = PutOptions { condition: Condition::IfAbsent, ..Default::default() };
        let done = put_now(&ts, &a, &good, conditional, &mut scratch, |_| true);
        assert!(done.is_none(), "a conditional put reads first");
        let done = put_now(&ts, &a, &good, PutOptions::default(), &mut scratch, |_| false);
        assert!(done.is_none(), "another shard's row");
        let key = [("dev", Value::String("d-1".into())), ("ts", Value::Timestamp(1))];
        assert_eq!(
            ts.get("a", &key, VersionSelect::Newest).await.unwrap(),
            None,
            "nothing written"
        );
        let v = ts.table("v").unwrap();
        let pairs = [("k", Value::Long(1)), ("n", Value::Long(2))];
        let done = put_now(&ts, &v, &pairs, PutOptions::default(), &mut scratch, |_| true);
        assert!(done.is_none(), "a multi-version table keeps older versions");
    })
}

#[test]
fn put_encoded_now_writes_what_put_now_writes_and_declines_a_key_field_among_the_values() {
    run(|| async move {
        let (disk, clock) = (sim(3), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(&format!("CREATE TABLE a {SCHEMA}")).await.unwrap();
        ts.ddl(&format!("CREATE TABLE b {SCHEMA}")).await.unwrap();
        let (a, b, mut scratch) =
            (ts.table("a").unwrap(), ts.table("b").unwrap(), PutScratch::default());
        for (i, options) in
            [PutOptions::default(), PutOptions { ttl_seconds: Some(60), ..Default::default() }]
                .into_iter()
                .enumerate()
        {
            let pairs = row(i as i64);
            let done = put_now(&ts, &a, &pairs, options, &mut scratch, |_| true);
            done.expect("taken inline").unwrap();
            let key: Vec<_> =
                pairs.iter().filter(|(n, _)| matches!(*n, "dev" | "ts")).cloned().collect();
            let values: Vec<_> =
                pairs.iter().filter(|(n, _)| !matches!(*n, "dev" | "ts")).cloned().collect();
            let mut stored = Vec::new();
            encode_primary_key_into(b.schema(), refs(&key), &mut stored).unwrap();
            let done = ts.put_encoded_now(
                &b,
                &stored,
                refs(&values),
                options,
                NOSYNC,
                T0_MS,
                &mut scratch,
            );
            done.expect("taken inline").unwrap();
            let (x, y) = (read_back(&ts, "a", i as i64).await, read_back(&ts, "b", i as i64).await);
            assert_eq!(x, y, "case {i}: the same row both ways");
            let with_key = refs(&pairs);
            let done =
                ts.put_encoded_now(&b, &stored, with_key, options, NOSYNC, T0_MS, &mut scratch);
            assert!(done.is_none(), "case {i}: a key field among the values is declined");
        }
    })
}
