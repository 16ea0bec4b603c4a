//! `ringstore-cli` against the real daemon for the seed features issue 14 made reachable from the
//! CLI: batches (`BEGIN BATCH [ABORT ON FAILURE]; ...; APPLY BATCH`, one execute, all or
//! nothing), reads of several versions of a row (`VERSIONS n`, `VERSIONS FROM a TO b`) with
//! each version's timestamp, and writes with a client-supplied version and a per-row TTL
//! (`USING VERSION`, `USING TTL`), including the node's refusals 221 and 222 end to end.

mod cli_common;

use std::net::SocketAddr;
use std::time::{SystemTime, UNIX_EPOCH};

use cli_common::{cli, column, fresh_node, json_lines};
use serde_json::Value as Json;

const ORDERS: &str = "CREATE TABLE orders (userid STRING, orderid LONG, amount DOUBLE, \
                      PRIMARY KEY (SHARD(userid), orderid))";

/// The amounts of user `user`'s orders, in key order, as JSON.
fn amounts(addr: SocketAddr, user: &str) -> Vec<Json> {
    let query = format!("SELECT amount FROM orders WHERE userid = '{user}'");
    column(&cli(addr, &["--format", "json", "-e", &query]).ok(), "amount")
}

fn doubles(values: &[f64]) -> Vec<Json> {
    values.iter().map(|v| Json::from(*v)).collect()
}

/// The node's clock, as near as the test can tell: ms since the epoch.
fn now_ms() -> u64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970");
    u64::try_from(since.as_millis()).expect("fits")
}

/// A batch under ABORT ON FAILURE whose one condition fails writes none of its rows, and the
/// error names the operation; without it the other operations are applied together and each
/// operation's outcome is printed (text and JSON). Mixed shard keys, one row twice and too many
/// operations are refused before anything is sent.
#[test]
fn batches_are_all_or_nothing() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let run = |sql: &str| cli(addr, &["-e", sql]).ok();
    run(ORDERS);
    run("UPSERT INTO orders (userid, orderid, amount) VALUES ('a', 3, 30)");
    let batch = |abort: &str| {
        format!(
            "BEGIN BATCH {abort};\n\
             UPSERT INTO orders (userid, orderid, amount) VALUES ('a', 1, 10), ('a', 2, 20);\n\
             UPSERT INTO orders (userid, orderid, amount) VALUES ('a', 3, 33) IF ABSENT;\n\
             APPLY BATCH;"
        )
    };
    let run_abort = cli(addr, &["-e", &batch("ABORT ON FAILURE")]);
    assert!(run_abort.stdout.is_empty(), "{run_abort:#?}");
    let stderr = run_abort.failed(1, 808);
    assert!(
        stderr.starts_with(
            "ERROR 808: the batch was aborted (ABORT ON FAILURE): the condition IF ABSENT of \
             operation 3 (statement 3) failed (the row's current token "
        ),
        "{stderr}"
    );
    assert!(stderr.ends_with("; nothing was written\n"), "{stderr}");
    assert_eq!(amounts(addr, "a"), doubles(&[30.0]), "no row of the aborted batch was written");

    let out = run(&batch(""));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 8, "{out}");
    assert!(lines[1].starts_with("| op | statement | write  | outcome "), "{out}");
    assert!(lines[3].starts_with("|  1 |         2 | UPSERT | written "), "{out}");
    assert!(lines[4].starts_with("|  2 |         2 | UPSERT | written "), "{out}");
    assert!(lines[5].starts_with("|  3 |         3 | UPSERT | condition failed "), "{out}");
    assert_eq!(
        lines[7],
        "3 operations applied atomically; the condition failed for operation 3, which wrote nothing"
    );
    assert_eq!(amounts(addr, "a"), doubles(&[10.0, 20.0, 30.0]), "the others applied");

    // A DELETE and an UPDATE of one row each, with IF VERSION from the JSON outcome.
    let json = cli(addr, &["--format", "json", "-e", &batch("")]).ok();
    let outcome = &json_lines(&json)[0];
    let token = outcome["operations"][0]["token"].as_u64().expect("row 1's new token");
    assert_eq!(outcome["operations"][2]["outcome"], "condition failed", "{json}");
    let second = format!(
        "BEGIN BATCH ABORT ON FAILURE; DELETE FROM orders WHERE userid = 'a' AND orderid = 1 \
         IF VERSION {token}; UPDATE orders SET amount = 31 WHERE userid = 'a' AND orderid = 3; \
         APPLY BATCH"
    );
    let out = cli(addr, &["--format", "json", "-e", &second]).ok();
    let ops = &json_lines(&out)[0]["operations"];
    assert_eq!((&ops[0]["outcome"], &ops[1]["outcome"]), (&"deleted".into(), &"updated".into()));
    assert_eq!(amounts(addr, "a"), doubles(&[20.0, 31.0]));
    assert!(node.terminate().success());
}

/// What a batch can not be is refused before anything is sent, naming what is wrong.
#[test]
fn batch_mistakes_are_refused_with_what_differs() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    cli(addr, &["-e", ORDERS]).ok();
    let mixed = "BEGIN BATCH; UPSERT INTO orders (userid, orderid) VALUES ('a', 1);\n\
                 UPSERT INTO orders (userid, orderid) VALUES ('a', 2), ('b', 1); APPLY BATCH";
    let stderr = cli(addr, &["-e", mixed]).failed(1, 802);
    assert_eq!(
        stderr,
        "ERROR 802: operation 3 (statement 3, row 2) has userid = 'b', but operation 1 \
         (statement 2) has userid = 'a': the writes of a batch must share one shard key \
         (userid); nothing was written\n"
    );
    let twice = "BEGIN BATCH; UPSERT INTO orders (userid, orderid) VALUES ('a', 1);\n\
                 DELETE FROM orders WHERE userid = 'a' AND orderid = 1; APPLY BATCH";
    let stderr = cli(addr, &["-e", twice]).failed(1, 802);
    assert!(stderr.contains("operation 1 (statement 2) and operation 2 (statement 3) both write the row userid = 'a', orderid = 1"), "{stderr}");
    let partial = "BEGIN BATCH; DELETE FROM orders WHERE userid = 'a'; APPLY BATCH";
    let stderr = cli(addr, &["-e", partial]).failed(1, 802);
    assert!(
        stderr.starts_with("ERROR 802: statement 2: a DELETE in a batch deletes one row"),
        "{stderr}"
    );
    let rows = |from: usize, n: usize| -> String {
        let rows: Vec<String> = (from..from + n).map(|i| format!("('a', {i})")).collect();
        format!("UPSERT INTO orders (userid, orderid) VALUES {};", rows.join(", "))
    };
    let big = format!("BEGIN BATCH; {} {} APPLY BATCH", rows(0, 1000), rows(1000, 1));
    let stderr = cli(addr, &["-e", &big]).failed(1, 803);
    assert!(
        stderr.ends_with(
            "the number of operations of one batch (one per UPSERT row) is 1001, over the limit \
             EXECUTE_OPS_MAX = 1000\n"
        ),
        "{stderr}"
    );
    let out = cli(addr, &["-e", "SELECT * FROM orders WHERE userid = 'a'"]).ok();
    assert!(out.ends_with("(0 rows)\n"), "nothing was written: {out}");
    let full = format!("BEGIN BATCH; {} APPLY BATCH", rows(0, 1000));
    let out = cli(addr, &["-e", &full]).ok();
    assert!(out.ends_with("1000 operations applied atomically\n"), "{out}");
    assert!(node.terminate().success());
}

/// A table that keeps 3 versions, written 5 times with client versions: VERSIONS n reads the
/// newest n of the 3 kept, VERSIONS FROM a TO b those in [a, b), each with its version and
/// timestamp, in text and JSON, for a get and for a multiGet.
#[test]
fn versions_of_a_row_with_their_timestamps() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let run = |sql: &str| cli(addr, &["-e", sql]).ok();
    run(
        "CREATE TABLE prices (sku STRING, day INTEGER, price LONG, PRIMARY KEY (SHARD(sku), day)) \
         WITH VERSIONS 3",
    );
    let base = now_ms() - 60_000;
    let versions: Vec<u64> = (0..5).map(|i| base + i * 1_000).collect();
    for (i, v) in versions.iter().enumerate() {
        let out = run(&format!(
            "UPSERT INTO prices (sku, day, price) VALUES ('a', 1, {}) USING VERSION {v}",
            10 + i
        ));
        assert!(out.ends_with(&format!(", version {v})\n")), "{out}");
    }
    let get = "SELECT price FROM prices WHERE sku = 'a' AND day = 1";
    let out = run(&format!("{get} VERSIONS 2"));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "| version       | timestamp                | expires | price |", "{out}");
    assert!(lines[3].starts_with(&format!("| {} | ", versions[4])), "{out}");
    assert!(lines[3].ends_with(" | NULL    |    14 |"), "{out}");
    assert!(lines[4].starts_with(&format!("| {} | ", versions[3])), "{out}");
    assert_eq!(lines[6], "(2 versions)");

    let json = |sql: String| json_lines(&cli(addr, &["--format", "json", "-e", &sql]).ok());
    let all = json(format!("{get} VERSIONS 10"));
    let all = all[0].as_array().expect("an array");
    let read: Vec<u64> = all.iter().map(|v| v["version"].as_u64().expect("a version")).collect();
    assert_eq!(read, [versions[4], versions[3], versions[2]], "3 kept, newest first");
    let prices: Vec<&Json> = all.iter().map(|v| &v["row"]["price"]).collect();
    assert_eq!(prices, [&Json::from(14), &Json::from(13), &Json::from(12)]);
    for v in all {
        let text = v["timestamp"].as_str().expect("a timestamp");
        assert!(text.len() == 24 && text.ends_with('Z') && text.as_bytes()[10] == b'T', "{v}");
        assert_eq!(v["expires"], Json::Null);
    }
    let range = json(format!("{get} VERSIONS FROM {} TO {}", versions[1], versions[4]));
    let read: Vec<&Json> =
        range[0].as_array().expect("array").iter().map(|v| &v["version"]).collect();
    assert_eq!(
        read,
        [&Json::from(versions[3]), &Json::from(versions[2])],
        "[from, to) of the kept"
    );
    let one = json(format!("{get} VERSIONS 1 FROM {} TO {}", versions[0], versions[4] + 1));
    assert_eq!(one[0][0]["version"], Json::from(versions[4]));
    assert_eq!(json(get.to_owned())[0][0]["price"], Json::from(14), "no clause: the newest");

    run(&format!("UPSERT INTO prices (sku, day, price) VALUES ('a', 2, 7) USING VERSION {base}"));
    let pages = json("SELECT day, price FROM prices WHERE sku = 'a' VERSIONS ALL".to_owned());
    let days: Vec<&Json> =
        pages[0].as_array().expect("array").iter().map(|v| &v["row"]["day"]).collect();
    assert_eq!(days, [&Json::from(1), &Json::from(1), &Json::from(1), &Json::from(2)]);
    let stderr = cli(addr, &["-e", &format!("{get} VERSIONS FROM 5 TO 5")]).failed(1, 225);
    assert!(stderr.contains("the version range [from, to) is empty"), "{stderr}");
    assert!(node.terminate().success());
}

/// USING VERSION and USING TTL end to end: a version outside the table's window is refused
/// (221), data that has already expired is refused (222), with the per-row TTL or the table's;
/// a row written with a TTL shows when it expires.
#[test]
fn client_versions_and_row_ttls_are_checked() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let run = |sql: &str| cli(addr, &["-e", sql]).ok();
    run("CREATE TABLE kv (id LONG, v STRING, PRIMARY KEY (id)) WITH VERSION OFFSET 1 DAYS");
    run("CREATE TABLE short (id LONG, v STRING, PRIMARY KEY (id)) USING TTL 1 HOURS");
    let day = 86_400_000;
    let now = now_ms();

    let old = now - 2 * day;
    let put =
        |table: &str, using: String| format!("UPSERT INTO {table} (id, v) VALUES (1, 'x') {using}");
    let stderr = cli(addr, &["-e", &put("kv", format!("USING VERSION {old}"))]).failed(1, 221);
    assert!(stderr.starts_with(&format!("ERROR 221: table kv: version {old} is outside the window [now - 86400 s, now + 86400 s)")), "{stderr}");
    assert!(
        stderr.contains("(in SQL: USING VERSION must lie within the table's WITH VERSION OFFSET"),
        "{stderr}"
    );
    let future = now + 2 * day;
    cli(addr, &["-e", &put("kv", format!("USING VERSION {future}"))]).failed(1, 221);

    let two_hours_ago = now - 2 * 3_600_000;
    let expired = put("kv", format!("USING VERSION {two_hours_ago} AND TTL 1 HOURS"));
    let stderr = cli(addr, &["-e", &expired]).failed(1, 222);
    assert!(stderr.starts_with(&format!("ERROR 222: table kv: the write of version {two_hours_ago} would expire at {} ms, which is not after now", two_hours_ago + 3_600_000)), "{stderr}");
    assert!(
        stderr.contains(
            "already-expired data is not written (in SQL: the USING VERSION is more than the TTL"
        ),
        "{stderr}"
    );
    let stderr =
        cli(addr, &["-e", &put("short", format!("USING VERSION {two_hours_ago}"))]).failed(1, 222);
    assert!(stderr.contains("table short: the write of version"), "the table's TTL: {stderr}");
    let stderr =
        cli(addr, &["-e", "UPDATE kv SET v = 'y' WHERE id = 1 USING TTL 0 SECONDS"]).failed(1, 112);
    assert!(stderr.contains("ttl_seconds"), "{stderr}");
    let out = run("SELECT * FROM kv ALLOW FULL SCAN");
    assert!(out.ends_with("(0 rows)\n"), "nothing refused was written: {out}");

    let kept = put("kv", format!("USING VERSION {two_hours_ago} AND TTL 1 DAYS"));
    assert!(run(&kept).ends_with(&format!(", version {two_hours_ago})\n")));
    run("UPSERT INTO kv (id, v) VALUES (2, 'forever')");
    let out =
        cli(addr, &["--format", "json", "-e", "SELECT v FROM kv WHERE id = 1 VERSIONS 1"]).ok();
    let version = &json_lines(&out)[0][0];
    let (stamp, expires) = (version["timestamp"].as_str(), version["expires"].as_str());
    assert!(expires.expect("an expiry") > stamp.expect("a timestamp"), "{out}");
    assert_eq!(version["version"], Json::from(two_hours_ago));
    let out =
        cli(addr, &["--format", "json", "-e", "SELECT v FROM kv WHERE id = 2 VERSIONS 1"]).ok();
    assert_eq!(json_lines(&out)[0][0]["expires"], Json::Null, "no TTL: no expiry");
    let out = run("UPDATE kv SET v = 'z' WHERE id = 2 USING TTL 1 HOURS");
    assert!(out.starts_with("1 row updated (token "), "{out}");
    let out =
        cli(addr, &["--format", "json", "-e", "SELECT v FROM kv WHERE id = 2 VERSIONS 1"]).ok();
    assert!(json_lines(&out)[0][0]["expires"].is_string(), "the update's TTL: {out}");
    assert!(node.terminate().success());
}
