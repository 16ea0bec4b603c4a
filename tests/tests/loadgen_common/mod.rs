//! Helpers shared by the `loadgen_*` suites (each includes this module with
//! `mod loadgen_common;`, so not every suite uses every helper): `ringstore-load` run as a
//! subprocess with every wait bounded and its output captured, its JSON document read back,
//! and a lock that keeps a suite's runs one at a time.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ringstore_tests::{bin, TEST_SHARDS};
use serde_json::Value as Json;

/// Longest a whole `ringstore-load` run may take (node start, load phase, run, outputs); the
/// runs of these suites take a few seconds.
pub const LOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// The flags that keep a run small on a two-core machine: a short warm-up, four clients on one
/// load thread with four requests in flight each. Keys, durability, duration and the workload
/// are left to each test (the tool refuses a flag given twice).
pub const SMALL: &[&str] =
    &["--warmup", "200ms", "--connections", "4", "--threads", "1", "--pipeline", "4"];

/// The shard count of nodes the tool starts itself (`--shards`), the same as the harness's, so
/// the per-shard figures have a known length on any machine.
pub fn shards_flag() -> String {
    TEST_SHARDS.to_string()
}

/// Runs of the tool one at a time within a suite: every run has a node, each node's io_uring
/// buffers count against the user's locked-memory limit (8 MiB here), and the machine has two
/// cores that a run already keeps busy. A failed test must not block the others, so a poisoned
/// lock is taken all the same.
pub fn one_at_a_time() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A fresh temporary directory for a run's JSON document and output files, removed when the
/// value is dropped.
pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// A fresh data directory inside a temporary directory that lives as long as the value.
pub fn data_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = temp_dir();
    let data = dir.path().join("data");
    (dir, data)
}

/// A path as a command-line argument (temporary directories have UTF-8 names).
pub fn arg(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// How a run of the tool exited and what it printed.
#[derive(Debug)]
pub struct Finished {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Finished {
    /// Asserts exit status 0 and returns the run for further checks.
    pub fn ok(self) -> Finished {
        assert_eq!(self.status, Some(0), "ringstore-load failed:\n{self:#?}");
        self
    }
}

/// A running `ringstore-load`, in a process group of its own so that a run that overstays
/// [`LOAD_TIMEOUT`] can be killed together with the node it started. Killed when dropped (a
/// failed assertion while it runs).
#[derive(Debug)]
pub struct Load {
    child: Option<Child>,
    stdout: Option<JoinHandle<String>>,
    stderr_lines: mpsc::Receiver<String>,
    /// Lines already taken from `stderr_lines`.
    stderr_seen: Vec<String>,
    deadline: Instant,
}

impl Load {
    /// Starts `ringstore-load ARGS` with stdout and stderr captured.
    pub fn spawn(args: &[&str]) -> Load {
        let mut child = Command::new(bin("ringstore-load"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("start ringstore-load");
        let mut out = child.stdout.take().expect("piped stdout");
        let stdout = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = out.read_to_string(&mut text);
            text
        });
        let err = child.stderr.take().expect("piped stderr");
        let (tx, stderr_lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Load {
            child: Some(child),
            stdout: Some(stdout),
            stderr_lines,
            stderr_seen: Vec::new(),
            deadline: Instant::now() + LOAD_TIMEOUT,
        }
    }

    /// Waits (until the run's deadline) for the first stderr line that `wanted` accepts.
    pub fn wait_for_stderr(&mut self, wanted: impl Fn(&str) -> bool) -> String {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => {
                    self.stderr_seen.push(line.clone());
                    if wanted(&line) {
                        return line;
                    }
                }
                Err(e) => panic!(
                    "no such stderr line from ringstore-load ({e}); stderr so far:\n{}",
                    self.stderr_seen.join("\n")
                ),
            }
        }
    }

    /// Waits (until the run's deadline) for the exit and collects the output.
    pub fn finish(mut self) -> Finished {
        let mut child = self.child.take().expect("running");
        let pid = child.id() as libc::pid_t;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        let left = self.deadline.saturating_duration_since(Instant::now());
        let status = match rx.recv_timeout(left) {
            Ok(status) => status.expect("wait for ringstore-load"),
            Err(_) => {
                kill_group(pid);
                let _ = rx.recv();
                panic!(
                    "ringstore-load did not exit within {LOAD_TIMEOUT:?}; stderr so far:\n{}",
                    self.stderr_seen.join("\n")
                );
            }
        };
        // Only the tool writes its stdout; its stderr is shared with the node it started, which
        // it stops before it exits, so both pipes are at their end now or very soon.
        let stdout = self.stdout.take().expect("stdout reader").join().expect("stdout reader");
        self.drain_stderr(pid);
        Finished { status: status.code(), stdout, stderr: self.stderr_seen.join("\n") }
    }

    /// Takes the rest of stderr, up to its end (until the run's deadline).
    fn drain_stderr(&mut self, pid: libc::pid_t) {
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            match self.stderr_lines.recv_timeout(left) {
                Ok(line) => self.stderr_seen.push(line),
                Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // Something the tool started outlived it and holds its stderr.
                    kill_group(pid);
                    panic!("stderr of ringstore-load still open after it exited");
                }
            }
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(child.id() as libc::pid_t);
            let _ = child.wait();
        }
    }
}

/// SIGKILL to the process group our child `pid` leads (the tool and the node it started).
/// Called only while the group still exists: before the child is reaped, or after it while a
/// member of its group still holds its stderr open; so the id cannot have been reused.
fn kill_group(pid: libc::pid_t) {
    // SAFETY: kill(2) on the process group of our own child, which exists (see above).
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

/// Runs `ringstore-load ARGS` to its end (bounded by [`LOAD_TIMEOUT`]).
pub fn run_load(args: &[&str]) -> Finished {
    Load::spawn(args).finish()
}

/// Reads the `--json` document a run wrote.
pub fn read_json(path: &Path) -> Json {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}\n{text}", path.display()))
}

/// The document's `runs` array.
pub fn runs(doc: &Json) -> &[Json] {
    doc["runs"].as_array().unwrap_or_else(|| panic!("no runs array: {doc:#}"))
}

/// The unsigned integer at JSON `pointer` (e.g. `/node/index_keys`) under `v`.
pub fn u64_at(v: &Json, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(Json::as_u64)
        .unwrap_or_else(|| panic!("no u64 at {pointer}: {v:#}"))
}

/// The number at JSON `pointer` under `v`.
pub fn f64_at(v: &Json, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(Json::as_f64)
        .unwrap_or_else(|| panic!("no number at {pointer}: {v:#}"))
}

/// The array of unsigned integers at JSON `pointer` under `v`.
pub fn u64s_at(v: &Json, pointer: &str) -> Vec<u64> {
    let list = v.pointer(pointer).and_then(Json::as_array);
    let list = list.unwrap_or_else(|| panic!("no array at {pointer}: {v:#}"));
    list.iter().map(|n| n.as_u64().unwrap_or_else(|| panic!("{pointer}: {n} is no u64"))).collect()
}

/// Operation `name`'s entry (`read`, `update`, ...) in a run's `ops`.
pub fn op<'a>(run: &'a Json, name: &str) -> &'a Json {
    let ops = run["ops"].as_array().unwrap_or_else(|| panic!("no ops array: {run:#}"));
    ops.iter().find(|o| o["op"] == name).unwrap_or_else(|| panic!("no {name} op: {run:#}"))
}

/// Asserts that `dir/name` exists and is not empty.
pub fn assert_file(dir: &Path, name: &str) {
    let path = dir.join(name);
    let len = std::fs::metadata(&path).map(|m| m.len());
    assert!(len.as_ref().is_ok_and(|&n| n > 0), "{}: {len:?}", path.display());
}
