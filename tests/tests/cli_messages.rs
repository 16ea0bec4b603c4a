//! The DDL and key messages a new user tripped over (issue 14, "What a new user tripped over"),
//! each with its new text, through `ringstore-cli` against a node as that user ran them: a
//! schema error points at the name it is about, a 256-character name is shown once and
//! shortened, an admin script without `plan add-table` says nothing was created, re-running the
//! seed's admin script says how that dialect ignores an existing table (and `-if-not-exists`
//! does), 216 names the shorter-shard-key fix, and key limits count each key value's own bytes.
//! (The WHERE-clause, address and timeout messages are in cli_e2e.rs and node/cli/tests.)

mod cli_common;

use cli_common::{cli, fresh_node};

/// The seed document's admin CLI script, as docs/CLI.md runs it.
const ADMIN_SCRIPT: &str = "table create -name myProducts\n\
     add-field -type STRING -name productName\n\
     add-field -type ENUM -name color -enum-values blue,green,red\n\
     primary-key -field productName\n\
     exit\n\
     plan add-table -name myProducts -wait\n";

#[test]
fn ddl_messages_point_at_the_name_and_say_what_happened() {
    let (dir, node) = fresh_node();
    let addr = node.addr();
    let run_file = |name: &str, text: &str| {
        let file = dir.path().join(name);
        std::fs::write(&file, text).expect("write the script");
        cli(addr, &["-f", file.to_str().expect("UTF-8 path")])
    };

    // Schema errors point at the name: line and column of the key clause's BOOLEAN field, of
    // the second declaration of a field.
    let stderr =
        run_file("t2.sql", "CREATE TABLE t2 (a LONG,\n  b BOOLEAN,\n  PRIMARY KEY (a, b))")
            .failed(1, 108);
    assert_eq!(
        stderr,
        "ERROR 108: line 3, column 19: table t2: key field b is BOOLEAN; key fields may not be \
         BOOLEAN\n"
    );
    let stderr =
        run_file("t3.sql", "CREATE TABLE t3 (a LONG,\n  b LONG,\n  a STRING,\n  PRIMARY KEY (a))")
            .failed(1, 102);
    assert_eq!(
        stderr,
        "ERROR 102: line 3, column 3: table t3: field a is declared twice; field names must be \
         unique\n"
    );
    // A 256-character name appears once, by its first 32 characters.
    let long = "x".repeat(256);
    let stderr = cli(addr, &["-e", &format!("CREATE TABLE {long} (a LONG, PRIMARY KEY (a))")])
        .failed(1, 101);
    let shown = format!("\"{}\"...", "x".repeat(32));
    assert_eq!(
        stderr,
        format!(
            "ERROR 101: line 1, column 14: invalid table name {shown}: it is 256 characters; the \
             limit is 255\n"
        )
    );

    // An admin script that never adds its table: nothing was created, and the fix.
    let not_added = ADMIN_SCRIPT.replace("plan add-table -name myProducts -wait\n", "");
    let stderr = run_file("p7.txt", &not_added).failed(1, 402);
    assert_eq!(
        stderr,
        "ERROR 402: line 1, column 1: table myProducts was defined (table create ... exit) but \
         never added, so nothing was created; plan add-table -name myProducts is missing\n"
    );
    let tables = cli(addr, &["-e", "SHOW TABLES"]).ok();
    assert!(tables.ends_with("(0 rows)\n"), "{tables}");

    // The seed's admin script run twice: 501 says how this dialect ignores an existing table.
    assert_eq!(run_file("admin.txt", ADMIN_SCRIPT).ok(), "table created (id 1)\n");
    let stderr = run_file("admin.txt", ADMIN_SCRIPT).failed(1, 501);
    assert_eq!(
        stderr,
        "ERROR 501: table myProducts already exists (id 1); to ignore this, use CREATE TABLE IF \
         NOT EXISTS in SQL, or plan add-table -name myProducts -if-not-exists in an admin CLI \
         script\n"
    );
    let idempotent = ADMIN_SCRIPT.replace("-wait\n", "-wait -if-not-exists\n");
    let out = run_file("admin2.txt", &idempotent).ok();
    assert_eq!(out, "table exists already (id 1); nothing changed\n");
    assert!(node.terminate().success());
}

#[test]
fn whole_key_shard_keys_and_key_limits_say_the_fix() {
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    cli(addr, &["-e", "CREATE TABLE kv (a STRING, b LONG, PRIMARY KEY (a, b))"]).ok();
    cli(addr, &["-e", "UPSERT INTO kv (a, b) VALUES ('x', 1), ('x', 2), ('y', 1)"]).ok();

    // The shard key is the whole primary key: a DELETE by a prefix is refused with the fix.
    let stderr = cli(addr, &["-e", "DELETE FROM kv WHERE a = 'x'"]).failed(1, 216);
    assert!(
        stderr.starts_with(
            "ERROR 216: table kv: the key gives 1 of the 2 shard key fields (a, b); multiGet and \
             multiDelete need the whole shard key"
        ),
        "{stderr}"
    );
    assert!(
        stderr.ends_with(
            "create the table with a shorter shard key (PRIMARY KEY (SHARD(a), b) in SQL, \
             shard-key -field a in the admin CLI)\n"
        ),
        "{stderr}"
    );
    // A SELECT by the same prefix bounds the first key field: a bounded scan, no full scan.
    let out = cli(addr, &["-e", "SELECT b FROM kv WHERE a = 'x'"]).ok();
    assert!(out.ends_with("(2 rows)\n"), "{out}");
    let stderr = cli(addr, &["-e", "SELECT * FROM kv"]).failed(1, 217);
    assert!(stderr.ends_with("(in SQL: add ALLOW FULL SCAN)\n"), "{stderr}");

    // Key limits count each key value's own bytes: two 1 KiB STRING key values fit, and so
    // does a 1,022-byte BINARY key of zero bytes (escaping doubles them in the encoded key).
    cli(addr, &["-e", "CREATE TABLE kk (a STRING, b STRING, PRIMARY KEY (SHARD(a), b))"]).ok();
    cli(addr, &["-e", "CREATE TABLE kb (a BINARY, PRIMARY KEY (a))"]).ok();
    let (a, b) = ("a".repeat(1024), "b".repeat(1024));
    let upsert = format!("UPSERT INTO kk (a, b) VALUES ('{a}', '{b}')");
    assert!(cli(addr, &["-e", &upsert]).ok().starts_with("1 row written"));
    let zeros = "00".repeat(1022);
    let upsert = format!("UPSERT INTO kb (a) VALUES (x'{zeros}')");
    assert!(cli(addr, &["-e", &upsert]).ok().starts_with("1 row written"));
    let upsert = format!("UPSERT INTO kk (a, b) VALUES ('{a}', '{b}b')");
    let stderr = cli(addr, &["-e", &upsert]).failed(1, 206);
    assert_eq!(
        stderr,
        "ERROR 206: table kk: key field b value is 1025 bytes (its own bytes: UTF-8 for a \
         STRING, before escaping); the limit is 1024 bytes per key value\n"
    );
    assert!(node.terminate().success());
}
