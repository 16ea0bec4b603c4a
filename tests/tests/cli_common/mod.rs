//! Helpers shared by the `cli_*` end-to-end suites (each includes this module with
//! `mod cli_common;`, so not every suite uses every helper): `ringstore-cli` run as a subprocess
//! against a node on loopback, with a bounded wait, and its output read back.

#![allow(dead_code)]

use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ringstore_tests::{bin, Node};
use serde_json::Value as Json;

/// Longest wait for one CLI run.
pub const CLI_TIMEOUT: Duration = Duration::from_secs(60);

/// What one CLI run printed and how it exited.
#[derive(Debug)]
pub struct Run {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts a zero exit status and returns stdout.
    pub fn ok(self) -> String {
        assert_eq!(self.status, Some(0), "{self:#?}");
        assert!(self.stderr.is_empty(), "{self:#?}");
        self.stdout
    }

    /// Asserts exit status `status` and that stderr holds `ERROR <code>:`; returns stderr.
    pub fn failed(self, status: i32, code: u16) -> String {
        assert_eq!(self.status, Some(status), "{self:#?}");
        assert!(self.stderr.contains(&format!("ERROR {code}: ")), "{self:#?}");
        self.stderr
    }
}

/// Runs `ringstore-cli --addr <addr> <args>` with `stdin` as its standard input.
pub fn cli_at(addr: &str, args: &[&str], stdin: &str) -> Run {
    let mut child = Command::new(bin("ringstore-cli"))
        .args(["--addr", addr])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ringstore-cli");
    let mut input = child.stdin.take().expect("piped stdin");
    let text = stdin.to_owned();
    // The CLI may exit without reading its input; a failed write is no failure of the test.
    std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let pid = child.id() as libc::pid_t;
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(output) = rx.recv_timeout(CLI_TIMEOUT) else {
        // SAFETY: kill(2) on our own child, not reaped yet (the waiting thread has not returned).
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("ringstore-cli {args:?} did not exit within {CLI_TIMEOUT:?}");
    };
    let output = output.expect("wait for ringstore-cli");
    Run {
        status: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("UTF-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("UTF-8 stderr"),
    }
}

pub fn cli(addr: SocketAddr, args: &[&str]) -> Run {
    cli_at(&addr.to_string(), args, "")
}

/// The JSON value printed on each line of `stdout`.
pub fn json_lines(stdout: &str) -> Vec<Json> {
    stdout.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
}

/// The values of `column` in a `--format json` result of one SELECT.
pub fn column(stdout: &str, column: &str) -> Vec<Json> {
    let lines = json_lines(stdout);
    assert_eq!(lines.len(), 1, "{stdout}");
    let rows = lines[0].as_array().expect("an array of rows");
    rows.iter().map(|row| row[column].clone()).collect()
}

pub fn longs(values: impl IntoIterator<Item = i64>) -> Vec<Json> {
    values.into_iter().map(Json::from).collect()
}

/// A node on a fresh data directory, which lives as long as the returned guard.
pub fn fresh_node() -> (tempfile::TempDir, Node) {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(&dir.path().join("data"), &[]);
    (dir, node)
}
