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
