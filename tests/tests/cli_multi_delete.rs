//! A DELETE through `ringstore-cli` that removes 100,000 rows under one shard key is one atomic
//! multiDelete (issue 14): a reader next to it, reading the whole shard key in one page (one
//! snapshot of the shard) again and again, sees all of the rows or none of them, never a part
//! (before issue 14 the CLI deleted them in requests of 1024 rows, and a read that came between
//! two of them saw a part). How the reads fall around the delete is up to the scheduler here; the
//! test that makes a read land while the delete waits for its fsync, and the crash test, are
//! storage/tests/table_multi_delete.rs, on the simulated disk. The rows are loaded through the
//! CLI too, as 100 batches of 1000 rows (each one execute).

mod cli_common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};

use ringstore_net::{Client, RangeQuery};
use ringstore_storage::constants::{EXECUTE_OPS_MAX, SCAN_LIMIT_MAX};
use ringstore_storage::table::Value;

use cli_common::{cli, column, longs};

/// The rows the DELETE removes: issue 14's figure, and one whole page of a read.
const ROWS: usize = 100_000;
const _: () = assert!(ROWS <= SCAN_LIMIT_MAX && ROWS.is_multiple_of(EXECUTE_OPS_MAX));
/// A page of `ROWS` rows is about 7 MB: the node takes frames of up to 16 MiB here (and an
/// output buffer to match), so the reader's page is never cut short.
const NODE_ARGS: &[&str] = &["--max-frame-bytes=16777216", "--max-output-buffer-bytes=67108864"];

/// `ROWS` rows of device `victim` in batches of `EXECUTE_OPS_MAX`, then three of `bystander`.
fn load_script() -> String {
    let mut script = String::from(
        "CREATE TABLE readings (device STRING, ts LONG, PRIMARY KEY (SHARD(device), ts));\n",
    );
    for batch in 0..ROWS / EXECUTE_OPS_MAX {
        let first = batch * EXECUTE_OPS_MAX;
        let rows: Vec<String> =
            (first..first + EXECUTE_OPS_MAX).map(|ts| format!("('victim', {ts})")).collect();
        script.push_str("BEGIN BATCH;\nUPSERT INTO readings (device, ts) VALUES ");
        script.push_str(&rows.join(", "));
        script.push_str(";\nAPPLY BATCH;\n");
    }
    script
        .push_str("UPSERT INTO readings (device, ts) VALUES ('bystander', 1), ('bystander', 2), ");
    script.push_str("('bystander', 3);\n");
    script
}

/// Reads the victim's rows, one page each time, until `stop` is set (and once more after it);
/// sends on `first` after its first read. Returns the row count of every read.
fn reader(
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    first: mpsc::Sender<()>,
) -> Vec<usize> {
    let mut client = Client::connect(addr).expect("the reader connects");
    let key = [("device", Value::String("victim".into()))];
    let mut seen = Vec::new();
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let rows = client
            .multi_get("readings", &RangeQuery::new(&key, SCAN_LIMIT_MAX as u32))
            .expect("a page of the victim's rows");
        let n = rows.page.rows.len();
        assert!(n == ROWS || n == 0, "the reader saw {n} of {ROWS} rows: a part of the delete");
        seen.push(n);
        if seen.len() == 1 {
            first.send(()).expect("the test waits for the first read");
        }
        if stopping {
            return seen;
        }
    }
}

#[test]
fn a_hundred_thousand_row_delete_is_seen_all_or_nothing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = ringstore_tests::Node::start(&dir.path().join("data"), NODE_ARGS);
    let addr = node.addr();
    let file = dir.path().join("load.sql");
    std::fs::write(&file, load_script()).expect("write the script");
    let out = cli(addr, &["--format", "json", "-f", file.to_str().expect("UTF-8 path")]).ok();
    assert_eq!(out.lines().count(), 1 + ROWS / EXECUTE_OPS_MAX + 1, "one line per statement");

    let stop = Arc::new(AtomicBool::new(false));
    let (first_tx, first_rx) = mpsc::channel();
    let reading = std::thread::spawn({
        let stop = stop.clone();
        move || reader(addr, stop, first_tx)
    });
    first_rx.recv().expect("the reader read once");
    // Small pages make no difference: one DELETE is one multiDelete request.
    let delete = "DELETE FROM readings WHERE device = 'victim'";
    let out = cli(addr, &["--page-rows", "2", "-e", delete]).ok();
    assert_eq!(out, format!("{ROWS} rows deleted\n"));
    stop.store(true, Ordering::SeqCst);
    let seen = reading.join().expect("the reader saw all or nothing");

    assert_eq!(seen.first(), Some(&ROWS), "the reader started before the delete");
    assert_eq!(seen.last(), Some(&0), "the reader read after the delete");
    let back = seen.windows(2).any(|w| w == [0, ROWS]);
    assert!(!back, "the rows came back after they were gone: {seen:?}");
    let out = cli(
        addr,
        &["--format", "json", "-e", "SELECT ts FROM readings WHERE device = 'bystander'"],
    )
    .ok();
    assert_eq!(column(&out, "ts"), longs([1, 2, 3]), "another shard key keeps its rows");
    assert!(node.terminate().success());
}
