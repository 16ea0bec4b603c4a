//! A `ringstore-node` process started by a test, and its shards' threads, for tests that check
//! what the daemon does to its own threads (CPU placement, scheduling policy).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

/// A running node, killed when the test ends, also when an assertion fails.
pub struct Node {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Node {
    /// Starts `ringstore-node` on a fresh data directory, listening on 127.0.0.1 port 0, with
    /// `args` added, after `prepare` has adjusted the command (e.g. a `pre_exec`), and waits
    /// for its ready line.
    pub fn start(args: &[&str], prepare: impl FnOnce(&mut Command)) -> Node {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut command = Command::new(env!("CARGO_BIN_EXE_ringstore-node"));
        command
            .args(["--listen", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        prepare(&mut command);
        let mut node = Node { child: command.spawn().expect("start ringstore-node"), _dir: dir };
        let mut line = String::new();
        let stdout = node.child.stdout.take().expect("stdout");
        BufReader::new(stdout).read_line(&mut line).expect("ready line");
        assert!(line.starts_with("ringstore-node ready"), "{line:?}");
        node
    }

    /// The `/proc` directories of the node's threads whose name starts with `prefix` (glommio
    /// names an executor's threads after it, with its id appended: "shard-0-1").
    pub fn threads(&self, prefix: &str) -> Vec<PathBuf> {
        let tasks = format!("/proc/{}/task", self.child.id());
        std::fs::read_dir(&tasks)
            .expect("task dir")
            .flatten()
            .filter(|t| {
                std::fs::read_to_string(t.path().join("comm"))
                    .is_ok_and(|c| c.trim().starts_with(prefix))
            })
            .map(|t| t.path())
            .collect()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
