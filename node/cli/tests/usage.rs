//! The `ringstore-cli` binary's usage errors, without a node: they exit with status 2 and say
//! what was wrong. (Its statements against a real node are in tests/tests/cli_e2e.rs, which this
//! test also makes cargo build the binary for.)

use std::process::Command;

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ringstore-cli"))
        .args(args)
        .output()
        .expect("run ringstore-cli")
}

#[test]
fn a_missing_address_is_a_usage_error() {
    let out = cli(&["-e", "STATS"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--addr"), "{err}");
}

#[test]
fn an_address_that_does_not_resolve_is_refused_before_any_statement() {
    let out = cli(&["--addr", "not an address", "-e", "STATS"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "nothing ran");
}
