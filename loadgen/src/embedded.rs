//! A node started by the load tool itself (no `--addr`): the `ringstore-node` binary next to
//! this one, on a temporary data directory and 127.0.0.1 with free ports. Stopped with SIGTERM
//! when dropped.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Longest wait for the node's ready line.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct EmbeddedNode {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl EmbeddedNode {
    /// Starts `ringstore-node` with `shards` shards and the extra flags.
    pub fn start(shards: usize, extra: &[String]) -> Result<EmbeddedNode, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("temp dir: {e}"))?;
        let bin = node_binary()?;
        let mut child = Command::new(&bin)
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen", "127.0.0.1:0", "--shards", &shards.to_string(), "--log", "warn"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(addr) = ready_addr(&line) {
                    let _ = tx.send(addr);
                }
            }
        });
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(addr) => Ok(EmbeddedNode { child, addr, _dir: dir }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(format!("{} did not print its ready line", bin.display()))
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for EmbeddedNode {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child, not yet reaped.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

fn node_binary() -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("no directory")?;
    for candidate in [dir.join("ringstore-node"), dir.join("../ringstore-node")] {
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    Err(format!(
        "ringstore-node not found next to {}; build it (cargo build --release --bins)",
        exe.display()
    ))
}

/// The listen address of `ringstore-node ready listen=ADDR ...`.
fn ready_addr(line: &str) -> Option<SocketAddr> {
    let rest = line.strip_prefix("ringstore-node ready ")?;
    rest.split(' ').find_map(|kv| kv.strip_prefix("listen="))?.parse().ok()
}
