//! The `ringstore-cli` binary without a node: usage errors exit with status 2 and say what was
//! wrong, `--help` tells the modes, and a node that does not answer is reported as a timeout
//! (807, exit status 3). (Its statements against a real node are in tests/tests/cli_e2e.rs,
//! which this test also makes cargo build the binary for.)

use std::net::TcpListener;
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
fn an_address_that_does_not_parse_is_refused_before_any_statement() {
    let out = cli(&["--addr", "not an address", "-e", "STATS"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "nothing ran");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        err,
        "ERROR 805: \"not an address\" is not an address: it has no ':PORT'; expected HOST:PORT \
         (127.0.0.1:27379)\n"
    );
}

#[test]
fn help_tells_the_interactive_mode_the_timeout_and_the_exit_statuses() {
    let out = cli(&["--help"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let help = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "interactive mode: a `ringstore>` prompt",
        "--timeout <SECONDS>",
        "[default: 10]",
        "3 the node did not answer within --timeout (807)",
        "Tab completes keywords",
        "Ctrl-R recall lines from the history",
        "--history <FILE>",
        "--no-history",
    ] {
        assert!(help.contains(expected), "{expected:?} missing from --help:\n{help}");
    }
}

#[test]
fn bad_timeouts_are_usage_errors() {
    for bad in ["-1", "10s", "86401"] {
        let flag = format!("--timeout={bad}");
        let out = cli(&["--addr", "127.0.0.1:1", &flag, "-e", "STATS"]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--timeout"), "{bad}: {err}");
    }
}

/// A listener that never accepts: the kernel completes the TCP handshake into its backlog, so the
/// connect succeeds and the node's greeting never comes.
#[test]
fn a_node_that_does_not_answer_is_a_timeout() {
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    let addr = silent.local_addr().expect("its address").to_string();
    for format in ["table", "json"] {
        let out = cli(&["--addr", &addr, "--timeout", "0.2", "--format", format, "-e", "STATS"]);
        assert_eq!(out.status.code(), Some(3), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        let expected = format!("cannot connect to {addr}: no answer from the node within 0.2 s");
        if format == "table" {
            assert!(err.starts_with(&format!("ERROR 807: {expected}")), "{err}");
        } else {
            let error: serde_json::Value = serde_json::from_str(&err).expect("a JSON line");
            assert_eq!(error["error"]["code"], 807, "{err}");
            let message = error["error"]["message"].as_str().expect("a message");
            assert!(message.starts_with(&expected), "{err}");
        }
        assert!(err.contains("timed out"), "{err}");
    }
}
