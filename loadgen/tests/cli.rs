//! The `ringstore-load` binary refuses bad flags before touching any node: exit status 2 and a
//! message naming what was wrong and what is accepted. (This file also makes `cargo test` build
//! the binary, which the end-to-end suites in `tests/` run.)

use std::process::Command;

fn run(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ringstore-load"))
        .args(args)
        .output()
        .expect("ringstore-load runs");
    (out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_flags_exit_2_with_the_reason() {
    let cases: &[(&[&str], &str)] = &[
        (&["--mix", "read=0"], "no operation with a weight"),
        (&["--distribution", "zipf:1.5"], "theta"),
        (&["--key-size", "2000"], "--key-size 2000 is outside 4..1024"),
        (&["--value-size", "8", "--verify"], "at least 16 bytes"),
        (&["--sweep", "colour=1"], "unknown parameter"),
        (&["--scenario", "nope"], "known: all"),
        (&["--connections", "0"], "--connections 0 is outside"),
        (&["--duration", "5 parsecs"], "duration"),
        (&["--scenario", "nope"], "--scenario list prints them"),
        (&["--keep-tables"], "--scenario"),
        (&["--protocol", "resp"], "--protocol resp needs --addr"),
        (&["--protocol", "resp", "--addr", "127.0.0.1:9", "--workload", "e"], "scans (YCSB E)"),
        (&["--protocol", "resp", "--addr", "127.0.0.1:9", "--verify"], "--verify needs the binary"),
        (&["--protocol", "memcached"], "binary, resp"),
    ];
    for (args, expected) in cases {
        let (code, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr:?} lacks {expected:?}");
    }
}

#[test]
fn help_lists_the_modes() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringstore-load"))
        .arg("--help")
        .output()
        .expect("ringstore-load runs");
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in ["--rate", "--scenario", "--sweep", "--verify", "--json", "--out-dir", "--seed"] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

/// `--sweep key-size=2000` names the point as typed, not the `--key-size` flag it sets.
#[test]
fn sweep_errors_name_what_was_typed() {
    for (sweep, expected) in [
        ("key-size=2000", "--sweep key-size=2000: a key-size of 2000 bytes is outside 4..1024"),
        ("key-size=16,2", "--sweep key-size=2: a key-size of 2 bytes is outside 4..1024"),
        ("value-size=2000000", "--sweep value-size=2000000: a value-size of 2000000 bytes"),
    ] {
        let (code, stderr) = run(&["--sweep", sweep]);
        assert_eq!(code, 2, "{sweep}: {stderr}");
        assert!(stderr.contains(expected), "{sweep}: {stderr:?} lacks {expected:?}");
        assert!(!stderr.contains("--key-size") && !stderr.contains("--value-size"), "{stderr}");
    }
}

/// `--scenario list` prints every design with its primary key and exits 0, touching no node.
#[test]
fn scenario_list_lists_the_designs() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringstore-load"))
        .args(["--scenario", "list"])
        .output()
        .expect("ringstore-load runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let names: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
    let expected = [
        "user",
        "timestamp-s",
        "timestamp-ms",
        "enum",
        "hash-prefix",
        "reversed",
        "bucket",
        "random-suffix",
    ];
    assert_eq!(names, expected, "{text}");
    assert!(text.contains("enum           PRIMARY KEY (SHARD(otype), userid, orderid)"), "{text}");
}

/// Every flag has help text, and the defaults that are not a plain value are spelled out.
#[test]
fn help_explains_durability_and_the_default_duration() {
    let out = Command::new(env!("CARGO_BIN_EXE_ringstore-load"))
        .arg("--help")
        .output()
        .expect("ringstore-load runs");
    let help = String::from_utf8_lossy(&out.stdout);
    let paragraph = |flag: &str| {
        let at = [" ", "\n"]
            .iter()
            .find_map(|end| help.find(&format!("      {flag}{end}")))
            .unwrap_or_else(|| panic!("no {flag} in {help}"));
        help[at..].split("\n\n").next().unwrap_or_default().to_string()
    };
    let durability = paragraph("--durability");
    assert!(durability.contains("fsynced"), "{durability}");
    assert!(durability.contains("no-sync"), "{durability}");
    assert!(paragraph("--duration").contains("[default: 10s"), "{}", paragraph("--duration"));
    assert!(paragraph("--keep-tables").contains("lab_*"), "{}", paragraph("--keep-tables"));
    assert!(paragraph("--scenario").contains("`list`"), "{}", paragraph("--scenario"));
}
