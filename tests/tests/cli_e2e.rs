//! `ringstore-cli` against the real daemon, run as a subprocess the way a user runs it (`-e`,
//! `-f`, a script on stdin, `--format json`). It proves that the seed document's admin CLI
//! script and SQL DDL create tables, that UPSERT, SELECT (get, multiGet pages with a range,
//! ORDER BY and LIMIT, a full scan) and DELETE (one row, a partial key in several batches) do
//! what they say and print what they did, that STATS and TOPOLOGY show the shard count, and that
//! server errors, syntax errors and connection failures print their code and set the exit status
//! (1 for a failed statement, 2 for usage and connection errors), stopping the script at the
//! first error.

mod cli_common;

use cli_common::{cli, cli_at, column, fresh_node, json_lines, longs};
use ringstore_tests::TEST_SHARDS;
use serde_json::Value as Json;

/// The seed document's first admin CLI script (001_22dd47f933f68d02.txt), verbatim: one line.
use ringstore_storage::ddl::seed_scripts::SEED_SINGLE_KEY_SCRIPT;

/// The seed's admin CLI script, then rows of the seed's table written and read back.
#[test]
fn seed_script_and_single_row_statements() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();

    let out = cli(addr, &["-e", SEED_SINGLE_KEY_SCRIPT]).ok();
    assert!(out.starts_with("table created (id "), "{out}");

    let out = cli(
        addr,
        &[
            "-e",
            "UPSERT INTO myProducts (productName, productType, color, size, inventoryCount) \
             VALUES ('hat', 'clothing', blue, small, 3),\n\
             \x20      ('scarf', 'clothing', 'red', medium, NULL);\n\
             SELECT * FROM myProducts WHERE productName = 'hat';",
        ],
    )
    .ok();
    assert_eq!(
        out,
        "\
2 rows written
+-------------+-------------+-------+-------+----------------+
| productName | productType | color | size  | inventoryCount |
+-------------+-------------+-------+-------+----------------+
| hat         | clothing    | blue  | small |              3 |
+-------------+-------------+-------+-------+----------------+
(1 row)
"
    );
    let query = "SELECT inventoryCount, productName FROM myProducts WHERE productName = 'scarf'";
    let out = cli(addr, &["--format", "json", "-e", query]).ok();
    assert_eq!(
        json_lines(&out),
        [serde_json::json!([{"inventoryCount": null, "productName": "scarf"}])]
    );
    let out = cli(addr, &["-e", "SELECT * FROM myProducts WHERE productName = 'cap'"]).ok();
    assert!(out.ends_with("(0 rows)\n"), "{out}");

    let out = cli(addr, &["-e", "DESCRIBE myProducts"]).ok();
    assert!(
        out.contains("| size           | ENUM(small, medium, blue) |        NULL | NULL"),
        "{out}"
    );
    assert!(out.contains("table myProducts:\n"), "{out}");
    let out = cli(addr, &["--format", "json", "-e", "DESCRIBE myProducts"]).ok();
    let lines = json_lines(&out);
    assert_eq!(
        lines[0][0],
        serde_json::json!({"field": "productName", "type": "STRING", "primary_key": 1,
                           "shard_key": true, "order": "ASC"})
    );
    let options = &lines[1]["table myProducts"];
    assert_eq!(options["primary_key"], serde_json::json!(["productName"]));
    assert_eq!(options["shard_key"], serde_json::json!(["productName"]));
    assert_eq!(options["ttl_seconds"], Json::Null);
    assert!(options["id"].is_u64() && options["max_versions"].is_u64(), "{out}");

    let out = cli(addr, &["-e", "DELETE FROM myProducts WHERE productName = 'hat'"]).ok();
    assert_eq!(out, "1 row deleted\n");
    let out = cli(addr, &["-e", "DELETE FROM myProducts WHERE productName = 'hat'"]).ok();
    assert_eq!(out, "0 rows deleted\n");
    let out = cli(addr, &["-e", "SELECT * FROM myProducts WHERE productName = 'hat'"]).ok();
    assert!(out.ends_with("(0 rows)\n"), "{out}");
    assert!(node.terminate().success());
}

/// SQL DDL from a file, then multiGet pages, ranges, ORDER BY, LIMIT, partial-key deletes and
/// full scans, with pages of 2 or 3 rows so that every result follows resume tokens.
#[allow(clippy::too_many_lines, reason = "one scenario, read top to bottom")]
#[test]
fn partial_keys_ranges_and_scans() {
    let (dir, node) = fresh_node();
    let addr = node.addr();

    let mut script = String::from(
        "-- orders of two users\n\
         CREATE TABLE orders (userid STRING, orderid LONG, amount DOUBLE, note STRING,\n\
         \x20   PRIMARY KEY (SHARD(userid), orderid));\n\
         CREATE TABLE events (host STRING, ts LONG, msg STRING,\n\
         \x20   PRIMARY KEY (SHARD(host), ts DESC));\n",
    );
    let rows: Vec<String> = (101..=110).map(|id| format!("('abc', {id}, {id}.5)")).collect();
    script.push_str(&format!(
        "UPSERT INTO orders (userid, orderid, amount) VALUES {};\n",
        rows.join(", ")
    ));
    script.push_str(
        "UPSERT INTO orders (userid, orderid, note) VALUES ('xyz', 1, 'a'), ('xyz', 2, 'b');\n",
    );
    script.push_str(
        "UPSERT INTO events (host, ts, msg) VALUES ('h', 1, 'x'), ('h', 3, 'z'), ('h', 2, 'y');\n",
    );
    let file = dir.path().join("setup.sql");
    std::fs::write(&file, &script).expect("write the script");
    let out = cli(addr, &["-f", file.to_str().expect("UTF-8 path")]).ok();
    assert_eq!(
        out,
        "table created (id 1)\ntable created (id 2)\n\
         10 rows written\n2 rows written\n3 rows written\n"
    );

    let select = |page: &str, query: &str| {
        cli(addr, &["--format", "json", "--page-rows", page, "-e", query]).ok()
    };
    let out = select(
        "3",
        "SELECT orderid, amount FROM orders WHERE userid = 'abc' AND 102 < orderid <= 108 \
         ORDER BY orderid DESC LIMIT 4",
    );
    assert_eq!(column(&out, "orderid"), longs([108, 107, 106, 105]));
    assert_eq!(column(&out, "amount")[0], Json::from(108.5));
    let out = select(
        "2",
        "SELECT orderid FROM orders WHERE orderid BETWEEN 103 AND 109 AND userid = 'abc'",
    );
    assert_eq!(column(&out, "orderid"), longs(103..=109));
    let out = select("2", "SELECT * FROM orders WHERE userid = 'abc'");
    assert_eq!(column(&out, "orderid"), longs(101..=110));
    assert_eq!(column(&out, "note"), vec![Json::Null; 10]);
    // `ts` is a DESC key field: key order is newest first, ORDER BY ts ASC reverses it.
    let out = select("2", "SELECT ts FROM events WHERE host = 'h'");
    assert_eq!(column(&out, "ts"), longs([3, 2, 1]));
    let out = select("2", "SELECT ts FROM events WHERE host = 'h' ORDER BY ts ASC LIMIT 2");
    assert_eq!(column(&out, "ts"), longs([1, 2]));

    let out = cli(
        addr,
        &["--page-rows", "2", "-e", "DELETE FROM orders WHERE userid = 'abc' AND orderid >= 105"],
    )
    .ok();
    assert_eq!(out, "6 rows deleted\n");
    let out = select("1000", "SELECT orderid FROM orders WHERE userid = 'abc'");
    assert_eq!(column(&out, "orderid"), longs(101..=104));

    let out = select("2", "SELECT userid, orderid FROM orders ALLOW FULL SCAN");
    let mut found: Vec<(String, i64)> = json_lines(&out)[0]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (r["userid"].as_str().expect("userid").to_owned(), r["orderid"].as_i64().expect("id"))
        })
        .collect();
    found.sort();
    let expected: Vec<(String, i64)> =
        [("abc", 101), ("abc", 102), ("abc", 103), ("abc", 104), ("xyz", 1), ("xyz", 2)]
            .map(|(u, o)| (u.to_owned(), o))
            .to_vec();
    assert_eq!(found, expected);
    let out = select("2", "SELECT orderid FROM orders LIMIT 3 ALLOW FULL SCAN");
    assert_eq!(column(&out, "orderid").len(), 3);
    let stderr = cli(addr, &["-e", "SELECT * FROM orders"]).failed(1, 217);
    assert!(stderr.contains("add ALLOW FULL SCAN"), "{stderr}");
    cli(addr, &["-e", "SELECT * FROM orders ORDER BY userid DESC ALLOW FULL SCAN"]).failed(1, 802);
    // A range on the first key field bounds the scan: no ALLOW FULL SCAN needed, and the node
    // merges the shards' pages, so rows come in key order (here reversed) across pages of 2.
    let out =
        select("2", "SELECT userid, orderid FROM orders WHERE userid >= 'a' ORDER BY userid DESC");
    let merged: Vec<(String, i64)> = json_lines(&out)[0]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            (r["userid"].as_str().expect("userid").to_owned(), r["orderid"].as_i64().expect("id"))
        })
        .collect();
    let descending: Vec<(String, i64)> =
        [("xyz", 2), ("xyz", 1), ("abc", 104), ("abc", 103), ("abc", 102), ("abc", 101)]
            .map(|(u, o)| (u.to_owned(), o))
            .to_vec();
    assert_eq!(merged, descending);

    // The WHERE clause's mistakes, each told as what it is.
    let stderr = cli(addr, &["-e", "SELECT * FROM orders WHERE orderid > 3"]).failed(1, 802);
    assert_eq!(
        stderr,
        "ERROR 802: a range on orderid needs an equality on each key field before it (userid), \
         but the WHERE clause gives no key field equalities; so only the first key field, \
         userid, can have a range (primary key (userid, orderid))\n"
    );
    let non_key = "SELECT * FROM orders WHERE userid = 'abc' AND orderid > 3 AND amount > 3";
    let stderr = cli(addr, &["-e", non_key]).failed(1, 802);
    assert_eq!(
        stderr,
        "ERROR 802: amount is not a primary key field of orders; WHERE can only name key fields \
         (userid, orderid)\n"
    );
    let stderr = cli(addr, &["-e", "DELETE FROM events WHERE host = 'h' AND ts > 1 AND msg < 'z'"])
        .failed(1, 802);
    assert!(stderr.starts_with("ERROR 802: msg is not a primary key field of events"), "{stderr}");
    let two = "SELECT * FROM events WHERE host > 'a' AND ts > 1";
    let stderr = cli(addr, &["-e", two]).failed(1, 802);
    assert_eq!(stderr, "ERROR 802: only one field may have a range: host has one, so ts can not\n");
    assert!(node.terminate().success());
}

/// STATS and TOPOLOGY in both formats, and a script read from stdin.
#[test]
fn stats_topology_and_stdin_scripts() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();

    let out = cli(addr, &["-e", "STATS; SHOW TOPOLOGY"]).ok();
    let shards_lines = out.lines().filter(|l| l.trim_start().starts_with("shards ")).count();
    assert_eq!(shards_lines, 2, "{out}");
    assert!(out.contains(&format!("shard {}:", TEST_SHARDS - 1)), "{out}");
    for line in out.lines().filter(|l| l.trim_start().starts_with("shards ")) {
        assert_eq!(line.split_whitespace().nth(1), Some(TEST_SHARDS.to_string().as_str()));
    }

    // A script that starts with a `--` comment is a script, not a flag.
    let out = cli(addr, &["-e", "-- the node's shards\nSTATS"]).ok();
    assert!(out.lines().any(|l| l.trim_start().starts_with("shards ")), "{out}");

    let out = cli_at(&addr.to_string(), &["--format", "json"], "STATS;\nTOPOLOGY;\n").ok();
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 2, "{out}");
    for line in &lines {
        assert_eq!(line["node"]["shards"], Json::from(TEST_SHARDS), "{out}");
    }
    assert_eq!(lines[1]["node"]["partitions"], Json::from(node.ready.partitions));
    assert!(node.terminate().success());
}

/// Errors print `ERROR <code>: message` on stderr and stop the script: a server error and a
/// local error exit 1, a node that can not be reached and bad arguments exit 2.
#[test]
fn errors_print_codes_and_set_exit_status() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();

    let run = cli(addr, &["-e", "SELECT * FROM nope WHERE a = 1; STATS"]);
    assert!(run.stdout.is_empty(), "the script stops at its first error: {run:#?}");
    let stderr = run.failed(1, 201);
    assert!(stderr.contains("nope"), "{stderr}");

    let run = cli(addr, &["-e", "STATS; SELECT * FORM t"]);
    assert!(run.stdout.is_empty(), "a script that does not parse runs nothing: {run:#?}");
    let stderr = run.failed(1, 801);
    assert!(stderr.contains("expected FROM, found \"FORM\""), "{stderr}");

    let run = cli(addr, &["--format", "json", "-e", "DESCRIBE nope"]);
    assert_eq!(run.status, Some(1), "{run:#?}");
    let error = json_lines(&run.stderr);
    assert_eq!(error[0]["error"]["code"], Json::from(201), "{run:#?}");

    let create = "CREATE TABLE t (k LONG, v STRING, PRIMARY KEY (k))";
    cli(addr, &["-e", create]).ok();
    cli(addr, &["-e", create]).failed(1, 501);
    let stderr =
        cli(addr, &["-e", "UPSERT INTO t (k, v) VALUES (1, 'a'), ('two', 'b')"]).failed(1, 804);
    assert!(stderr.contains("field k is LONG"), "{stderr}");
    let out = cli(addr, &["-e", "SELECT * FROM t ALLOW FULL SCAN"]).ok();
    assert!(out.ends_with("(0 rows)\n"), "a bad literal writes no row: {out}");
    cli(addr, &["-e", "SELECT * FROM t WHERE v = 'a'"]).failed(1, 802);
    cli(addr, &["-e", "SELECT nope FROM t WHERE k = 1"]).failed(1, 802);

    // A script on stdin (not a terminal) stops at its first error too.
    let run = cli_at(&addr.to_string(), &[], "SELECT * FROM nope;\nSTATS;\n");
    assert!(run.stdout.is_empty(), "{run:#?}");
    run.failed(1, 201);

    let log = node.log.clone();
    let stopped = node.terminate();
    assert!(stopped.success());
    // The node's stderr is a file here: its log holds no ANSI colour codes.
    let log = std::fs::read_to_string(&log).expect("the node's log");
    assert!(log.contains("INFO"), "{log}");
    assert!(!log.contains('\x1b'), "colour codes in a log that is not a terminal: {log:?}");
    cli(addr, &["-e", "STATS"]).failed(2, 805);
    let stderr = cli_at("nosuchhost.invalid:27379", &["-e", "STATS"], "").failed(2, 805);
    assert!(
        stderr.starts_with("ERROR 805: cannot look up the host \"nosuchhost.invalid\": "),
        "a failed lookup is not a malformed address: {stderr}"
    );
    assert!(!stderr.contains("HOST:PORT"), "{stderr}");
    let stderr = cli_at("nosuchhost.invalid", &["-e", "STATS"], "").failed(2, 805);
    assert!(stderr.contains("it has no ':PORT'; expected HOST:PORT"), "{stderr}");
    let run = cli_at("127.0.0.1:1", &["--format", "yaml"], "");
    assert_eq!(run.status, Some(2), "{run:#?}");
    let run = cli_at("127.0.0.1:1", &["-e", "STATS", "-f", "x.sql"], "");
    assert_eq!(run.status, Some(2), "{run:#?}");
}

/// Conditional writes through the CLI (issue 14): `IF ABSENT`, `IF PRESENT` and `IF VERSION`
/// on UPSERT and DELETE, with the version token a one-row write prints fed to the next
/// statement, in text and JSON; a failed condition writes nothing and names the current token.
#[test]
fn conditional_writes_use_the_printed_token() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let run = |sql: &str| cli(addr, &["-e", sql]).ok();
    // "... (token T, version V)" or "... (the row's current token T, version V)": T.
    let token_of = |out: &str| -> u64 {
        let rest = &out[out.find("token ").expect("a token") + 6..];
        rest[..rest.find(',').expect("a comma")].parse().expect("a number")
    };
    run("CREATE TABLE kv (id LONG, v STRING, PRIMARY KEY (id))");
    let first = run("UPSERT INTO kv (id, v) VALUES (1, 'a') IF ABSENT");
    assert!(first.starts_with("1 row written (token "), "{first}");
    let t1 = token_of(&first);
    let again = run("UPSERT INTO kv (id, v) VALUES (1, 'b') IF ABSENT");
    assert!(again.starts_with("0 rows written; the condition failed for 1 row"), "{again}");
    assert_eq!(token_of(&again), t1, "{again}");
    let second = run(&format!("UPSERT INTO kv (id, v) VALUES (1, 'b') IF VERSION {t1}"));
    let t2 = token_of(&second);
    assert!(second.starts_with("1 row written") && t2 > t1, "{second}");
    let stale = run(&format!("UPSERT INTO kv (id, v) VALUES (1, 'c') IF VERSION {t1}"));
    assert!(stale.starts_with("0 rows written") && token_of(&stale) == t2, "{stale}");
    let absent = run("UPSERT INTO kv (id, v) VALUES (2, 'x') IF PRESENT");
    assert_eq!(absent, "0 rows written; the condition failed for 1 row\n");
    let stale = run(&format!("DELETE FROM kv WHERE id = 1 IF VERSION {t1}"));
    assert!(stale.starts_with("0 rows deleted; the condition failed"), "{stale}");
    let out = cli(addr, &["--format", "json", "-e", "SELECT v FROM kv WHERE id = 1"]).ok();
    assert_eq!(column(&out, "v"), vec![Json::from("b")], "nothing but IF VERSION t1 wrote");
    assert_eq!(run(&format!("DELETE FROM kv WHERE id = 1 IF VERSION {t2}")), "1 row deleted\n");

    let json =
        cli(addr, &["--format", "json", "-e", "UPSERT INTO kv (id, v) VALUES (3, 'z')"]).ok();
    let written = &json_lines(&json)[0];
    assert_eq!(written["message"], "1 row written");
    assert!(written["token"].as_u64().is_some() && written["version"].as_u64().is_some(), "{json}");
    let stderr = cli(addr, &["-e", "DELETE FROM kv WHERE id >= 1 IF VERSION 5"]).failed(1, 802);
    assert!(stderr.contains("the WHERE clause must give the whole primary key"), "{stderr}");
    assert!(node.terminate().success());
}

/// UPDATE sets and clears some non-key fields of one row and keeps the others (issue 14); it
/// needs the whole primary key, refuses a key field, and takes IF VERSION like a write.
#[test]
fn update_changes_only_the_fields_it_names() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let run = |sql: &str| cli(addr, &["-e", sql]).ok();
    run("CREATE TABLE p (id LONG, name STRING, qty INTEGER, note STRING, PRIMARY KEY (id))");
    run("UPSERT INTO p (id, name, qty, note) VALUES (1, 'hat', 3, 'red')");
    let out = run("UPDATE p SET qty = 4, note = NULL WHERE id = 1");
    assert!(out.starts_with("1 row updated (token "), "{out}");
    let row =
        cli(addr, &["--format", "json", "-e", "SELECT name, qty, note FROM p WHERE id = 1"]).ok();
    assert_eq!(column(&row, "name"), vec![Json::from("hat")], "kept");
    assert_eq!(column(&row, "qty"), vec![Json::from(4)], "set");
    assert_eq!(column(&row, "note"), vec![Json::Null], "cleared");
    let stale = run("UPDATE p SET qty = 5 WHERE id = 1 IF VERSION 1");
    assert!(stale.starts_with("0 rows updated; the condition failed"), "{stale}");
    let stderr = cli(addr, &["-e", "UPDATE p SET qty = 5 WHERE id >= 1"]).failed(1, 802);
    assert!(stderr.contains("must give the whole primary key (id)"), "{stderr}");
    let stderr = cli(addr, &["-e", "UPDATE p SET nope = 5 WHERE id = 1"]).failed(1, 802);
    assert!(stderr.contains("table p has no field nope"), "{stderr}");
    cli(addr, &["-e", "UPDATE p SET id = 2 WHERE id = 1"]).failed(1, 229);
    assert!(node.terminate().success());
}

/// ALTER TABLE through the CLI (issue 14): DESCRIBE shows the options CREATE set (versions, TTL,
/// version offset) and those ALTER changed, with the others kept; a bad value (112) and an
/// unknown table (201) are refused. What the options do to reads and writes is proven in
/// storage/tests/table_ops.rs (alter_table_changes_versions_ttl_and_the_version_window).
#[test]
fn alter_table_changes_the_options_describe_shows() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let run = |sql: &str| cli(addr, &["-e", sql]).ok();
    let create = "CREATE TABLE pr (sku STRING, price LONG, PRIMARY KEY (sku)) WITH VERSIONS 3 \
                  WITH VERSION OFFSET 2 DAYS USING TTL 30 DAYS";
    assert_eq!(run(create), "table created (id 1)\n");
    let options = |addr| {
        let out = cli(addr, &["--format", "json", "-e", "DESCRIBE pr"]).ok();
        json_lines(&out)[1]["table pr"].clone()
    };
    let before = options(addr);
    assert_eq!(
        (&before["max_versions"], &before["ttl_seconds"], &before["max_version_offset_seconds"]),
        (&Json::from(3), &Json::from(30 * 86_400), &Json::from(2 * 86_400)),
        "{before}"
    );
    let altered = run("ALTER TABLE pr USING TTL NONE WITH VERSION OFFSET 60 SECONDS");
    assert_eq!(altered, "table altered (id 1)\n");
    let after = options(addr);
    assert_eq!(
        (&after["max_versions"], &after["ttl_seconds"], &after["max_version_offset_seconds"]),
        (&Json::from(3), &Json::Null, &Json::from(60)),
        "{after}"
    );
    cli(addr, &["-e", "ALTER TABLE pr WITH VERSIONS 0"]).failed(1, 112);
    cli(addr, &["-e", "ALTER TABLE nope WITH VERSIONS 2"]).failed(1, 201);
    assert!(node.terminate().success());
}
