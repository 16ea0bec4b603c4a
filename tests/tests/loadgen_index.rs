//! `ringstore-load --index-on` end to end (issue 15): the benchmark table gets secondary
//! indexes before the load, and the run measures indexed writes. It proves that:
//!
//! - a YCSB A run with `--index-on key,value` against a node the harness started leaves both
//!   indexes READY and maintained: every row has exactly one entry in each, the entry of `by_k`
//!   holds the row's key, the entry of `by_v` the value the row holds after the run's updates
//!   (no entry of an overwritten value is left), and the node counts each entry as a key of its
//!   in-memory index; the final table and the JSON say which indexes the table had;
//! - a key-size sweep with `--index-on key` has the index on every point's fresh node, and its
//!   figures show the seed's warning: the index's entries carry the key twice, so the node's key
//!   bytes grow by three times the key size per row (row key, indexed value, primary key);
//! - what the node would refuse is refused before a node starts (exit 2): an indexed value over
//!   the node's limit, `--index-on` over RESP.
//!
//! Runs take turns ([`loadgen_common::one_at_a_time`]) and are small (500 keys, a second's
//! measured phase); each waits at most [`loadgen_common::LOAD_TIMEOUT`]. Nothing here asserts on
//! speed.

mod loadgen_common;

use std::collections::BTreeSet;

use loadgen_common::*;
use ringstore_net::{Client, IndexLookup, IndexRow};
use ringstore_storage::table::Value;
use ringstore_tests::Node;
use serde_json::Value as Json;

/// Rows the load phase writes; YCSB A and C insert none, so the table ends with exactly these.
const KEYS: u64 = 500;
/// Entries per index query page (smaller than [`KEYS`], so the queries take several pages).
const PAGE: u32 = 128;

/// Key number `n` as the tool writes it at its default key size of 16 bytes (`keyspace.rs`).
fn key16(n: u64) -> String {
    format!("k{n:015}")
}

/// Every entry of index `index` on the benchmark table, page by page.
fn all_entries(c: &mut Client, index: &str, keys_only: bool) -> Vec<IndexRow> {
    let mut hits = Vec::new();
    let mut resume = None;
    for _ in 0..=KEYS {
        let q = IndexLookup { keys_only, resume, ..IndexLookup::new(&[], PAGE) };
        let page = c.index_query("bench", index, &q).expect("index query");
        hits.extend(page.hits);
        match page.resume {
            None => return hits,
            token => resume = token,
        }
    }
    panic!("the query of {index} did not end within {KEYS} pages");
}

/// The indexes a run's node figures list (`node.indexes`), as `name(fields)`, each READY.
fn index_names(run: &Json) -> Vec<String> {
    let list = run["node"]["indexes"].as_array().unwrap_or_else(|| panic!("{:#}", run["node"]));
    list.iter()
        .map(|i| {
            assert_eq!(i["state"], "READY", "{i:#}");
            let fields: Vec<&str> =
                i["fields"].as_array().expect("fields").iter().filter_map(Json::as_str).collect();
            format!("{}({})", i["name"].as_str().expect("name"), fields.join(","))
        })
        .collect()
}

#[test]
fn an_indexed_run_leaves_every_row_with_its_current_entries() {
    let _turn = one_at_a_time();
    let (data_tmp, data) = data_dir();
    let node = Node::start(&data, &[]);
    let json = data_tmp.path().join("indexed.json");
    let (addr, pid, keys) = (node.addr().to_string(), node.pid().to_string(), KEYS.to_string());
    let mut args = vec!["--addr", &addr, "--server-pid", &pid, "--workload", "a"];
    args.extend(["--index-on", "key,value"]);
    args.extend(SMALL);
    args.extend(["--keys", &keys, "--duration", "1s", "--durability", "no-sync", "--quiet"]);
    args.extend(["--json", arg(&json)]);
    let run = run_load(&args).ok();

    // What the tool reports.
    let doc = read_json(&json);
    assert_eq!(doc["settings"]["index_on"], serde_json::json!(["key", "value"]));
    let r = &runs(&doc)[0];
    assert_eq!(u64_at(r, "/errors"), 0, "{r:#}");
    assert!(u64_at(op(r, "update"), "/ok") > 0, "updates change by_v's entries: {r:#}");
    assert_eq!(index_names(r), ["by_k(k)", "by_v(v)"]);
    // Index entries are keys of the store like rows: one row and two entries per key.
    assert_eq!(u64_at(r, "/node/index_keys"), 3 * KEYS, "{:#}", r["node"]);
    let line = format!("indexes: by_k (k) READY, by_v (v) READY; node: store keys {}", 3 * KEYS);
    assert!(run.stdout.lines().any(|l| l.starts_with(&line)), "no {line:?} in:\n{}", run.stdout);
    let header = run.stdout.lines().next().expect("settings line");
    assert!(header.ends_with(" index_on=key,value"), "{header}");

    // What the node holds: by_k has one entry per row, holding the row's key, in key order.
    let mut c = node.client();
    let by_k = all_entries(&mut c, "by_k", true);
    let indexed: Vec<Option<Value>> = by_k.iter().map(|h| h.values[0].clone()).collect();
    let want: Vec<Option<Value>> = (0..KEYS).map(|n| Some(Value::String(key16(n)))).collect();
    assert_eq!(indexed, want, "by_k's entries are the keys 0..{KEYS}");
    let rows: BTreeSet<&Vec<u8>> = by_k.iter().map(|h| &h.row_key).collect();
    assert_eq!(rows.len() as u64, KEYS, "each entry names another row");

    // by_v: read with the rows, each entry's value is the row's value now (the node reads each
    // row and checks it), every row is there; keys only (nothing checked or hidden), there is
    // no other entry, so every update removed its row's old entry.
    let with_rows = all_entries(&mut c, "by_v", false);
    for hit in &with_rows {
        let row = hit.row.as_ref().expect("a query with rows returns them");
        let v = &row.newest().fields[1];
        assert!(matches!(v, Some(Value::Binary(b)) if b.len() == 100), "{v:?}");
        assert_eq!(&hit.values[0], v, "entry value = the row's value");
        assert_eq!(row.key, hit.row_key, "the entry names its row");
    }
    let current: BTreeSet<&Vec<u8>> = with_rows.iter().map(|h| &h.row_key).collect();
    assert_eq!(current, rows, "every row has its current by_v entry");
    let stored = all_entries(&mut c, "by_v", true);
    assert_eq!(stored.len() as u64, KEYS, "by_v holds exactly one entry per row");

    let status = node.terminate();
    assert_eq!(status.code(), Some(0), "{status}");
}

#[test]
fn a_key_size_sweep_with_an_index_on_the_key_pays_for_the_key_three_times() {
    const SIZES: [u64; 2] = [16, 128];
    let _turn = one_at_a_time();
    let dir = temp_dir();
    let json = dir.path().join("sweep.json");
    let (shards, keys) = (shards_flag(), KEYS.to_string());
    let mut args = vec!["--sweep", "key-size=16,128", "--index-on", "key", "--workload", "c"];
    args.extend(["--shards", &shards]);
    args.extend(SMALL);
    args.extend(["--keys", &keys, "--duration", "1s", "--durability", "no-sync", "--quiet"]);
    args.extend(["--json", arg(&json)]);
    let run = run_load(&args).ok();

    let doc = read_json(&json);
    let points = runs(&doc);
    assert_eq!(points.len(), SIZES.len());
    for (run, size) in points.iter().zip(SIZES) {
        assert_eq!(run["label"], format!("key-size={size}"));
        assert_eq!(u64_at(run, "/errors"), 0, "{run:#}");
        // Each point's fresh node got the index before its load phase.
        assert_eq!(index_names(run), ["by_k(k)"]);
        assert_eq!(u64_at(run, "/node/index_keys"), 2 * KEYS, "{:#}", run["node"]);
        // A row's key and its entry (index id, the key as the indexed value, the key again as
        // the primary key) hold the key three times.
        let key_bytes = u64_at(run, "/node/index_key_bytes");
        assert!(key_bytes >= 3 * size * KEYS, "{size} B keys: {key_bytes} key bytes");
        assert!(u64_at(run, "/node/index_bytes") >= key_bytes, "{:#}", run["node"]);
    }
    let bytes = |i: usize| f64_at(&points[i], "/node/index_bytes_per_key");
    assert!(bytes(1) > bytes(0), "16 B: {} B/key, 128 B: {} B/key", bytes(0), bytes(1));

    let columns = "key-size ops/s p50 ms p99 ms p999 ms store keys index MiB index B/key";
    let squeezed = |l: &str| l.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        run.stdout.lines().any(|l| squeezed(l).starts_with(columns)),
        "no sweep table in:\n{}",
        run.stdout
    );
    for size in SIZES {
        let line =
            format!("[key-size={size}] indexes: by_k (k) READY; node: store keys {}", 2 * KEYS);
        assert!(run.stdout.contains(&line), "no {line:?} in:\n{}", run.stdout);
    }
}

#[test]
fn what_the_node_would_refuse_is_refused_before_it_starts() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--index-on", "value", "--value-size", "2000"],
            "--index-on value: --value-size 2000 is over the 1024 bytes",
        ),
        (
            &["--sweep", "value-size=100,1500", "--index-on", "key,value"],
            "--sweep value-size=1500: --index-on value",
        ),
        (
            &["--protocol", "resp", "--addr", "127.0.0.1:1", "--index-on", "key"],
            "--index-on needs the binary protocol",
        ),
        (&["--index-on", "size"], "unknown field \"size\"; an index is on key or value"),
    ];
    for (args, message) in cases {
        let run = run_load(args);
        assert_eq!(run.status, Some(2), "{args:?}: {run:#?}");
        assert!(run.stderr.contains(message), "{args:?}: {run:#?}");
        assert!(run.stdout.is_empty(), "{args:?}: {run:#?}");
    }
}
