//! ringstore-tests: end-to-end suites that start the real daemon binary (`ringstore-node`) on
//! 127.0.0.1 with free ports and a temporary data directory, and talk to it with the client
//! library and the CLI. The storage crate's own crash and model tests live in `storage/tests/`.
//!
//! [`Node`] is the harness: start, read the ready line, connect, stop with SIGTERM or SIGKILL,
//! restart on the same directory. Every wait is bounded ([`START_TIMEOUT`], [`STOP_TIMEOUT`]).

pub mod fuzz_targets;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ringstore_net::{Client, ClientOptions};

/// Longest wait for the ready line (store recovery included).
pub const START_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait for the daemon to exit after a signal.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Shards of the nodes the suites start: this machine has 2 cores.
pub const TEST_SHARDS: usize = 2;

/// A binary of the workspace, built next to the test executable (`target/<profile>/NAME`).
/// `cargo test --workspace` builds the node crate's binaries because the node crate has
/// integration tests; `RINGSTORE_BIN_DIR` overrides the directory.
pub fn bin(name: &str) -> PathBuf {
    if let Some(dir) = std::env::var_os("RINGSTORE_BIN_DIR") {
        return PathBuf::from(dir).join(name);
    }
    let exe = std::env::current_exe().expect("test executable path");
    // target/<profile>/deps/<test> -> target/<profile>/<name>
    let profile_dir = exe.parent().and_then(Path::parent).expect("target/<profile>");
    let path = profile_dir.join(name);
    assert!(
        path.exists(),
        "{} not found: build it first (cargo test --workspace builds it) or set RINGSTORE_BIN_DIR",
        path.display()
    );
    path
}

/// The ready line's fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadyLine {
    pub listen: SocketAddr,
    pub shard_ports: Vec<u16>,
    pub partitions: u32,
    pub metrics: Option<SocketAddr>,
    /// The RESP port (`resp=`; absent or `-`: none).
    pub resp: Option<SocketAddr>,
    /// Each shard's own RESP port (`resp_shard_ports=`; absent or `-`: none).
    pub resp_shard_ports: Vec<u16>,
}

impl ReadyLine {
    /// Parses `ringstore-node ready listen=A shards=N shard_ports=P,Q partitions=K metrics=M`.
    pub fn parse(line: &str) -> Option<ReadyLine> {
        let rest = line.strip_prefix("ringstore-node ready ")?;
        let field = |key: &str| {
            rest.split(' ').find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        };
        let ports =
            |list: &str| list.split(',').map(str::parse).collect::<Result<Vec<u16>, _>>().ok();
        Some(ReadyLine {
            listen: field("listen")?.parse().ok()?,
            shard_ports: ports(field("shard_ports")?)?,
            partitions: field("partitions")?.parse().ok()?,
            metrics: match field("metrics")? {
                "-" => None,
                m => Some(m.parse().ok()?),
            },
            resp: match field("resp") {
                None | Some("-") => None,
                Some(r) => Some(r.parse().ok()?),
            },
            resp_shard_ports: match field("resp_shard_ports") {
                None | Some("-") => Vec::new(),
                Some(list) => ports(list)?,
            },
        })
    }
}

/// A running daemon.
#[derive(Debug)]
pub struct Node {
    child: Option<Child>,
    pub ready: ReadyLine,
    pub data_dir: PathBuf,
    /// The daemon's stderr (its log), for failure messages.
    pub log: PathBuf,
}

impl Node {
    /// Starts a daemon on `data_dir` with [`TEST_SHARDS`] shards, free ports on 127.0.0.1 and
    /// `extra` flags, and waits for its ready line.
    pub fn start(data_dir: &Path, extra: &[&str]) -> Node {
        Node::try_start(data_dir, extra).unwrap_or_else(|e| panic!("{e}"))
    }

    /// As [`Node::start`], but a daemon that exits before it is ready is an error carrying its
    /// exit status and log.
    pub fn try_start(data_dir: &Path, extra: &[&str]) -> Result<Node, String> {
        Node::try_start_listening(data_dir, "127.0.0.1:0", extra)
    }

    /// As [`Node::try_start`], with `--listen listen` instead of a free port.
    pub fn try_start_listening(
        data_dir: &Path,
        listen: &str,
        extra: &[&str],
    ) -> Result<Node, String> {
        Node::try_start_with(data_dir, listen, extra, |_| {})
    }

    /// As [`Node::try_start_listening`], with `configure` applied to the command before it is
    /// spawned (to set resource limits, say).
    pub fn try_start_with(
        data_dir: &Path,
        listen: &str,
        extra: &[&str],
        configure: impl FnOnce(&mut Command),
    ) -> Result<Node, String> {
        let log = data_dir.with_extension(format!("log-{}", unique()));
        let stderr = std::fs::File::create(&log).map_err(|e| e.to_string())?;
        let shards = TEST_SHARDS.to_string();
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "--data-dir".as_ref(),
            data_dir.as_os_str(),
            "--listen".as_ref(),
            listen.as_ref(),
            "--shards".as_ref(),
            shards.as_ref(),
        ];
        args.extend(extra.iter().map(std::ffi::OsStr::new));
        let mut command = Command::new(bin("ringstore-node"));
        command
            .args(&args)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr);
        configure(&mut command);
        let mut child = command.spawn().map_err(|e| format!("cannot start ringstore-node: {e}"))?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(ready) = ReadyLine::parse(&line) {
                    let _ = tx.send(ready);
                }
            }
        });
        match rx.recv_timeout(START_TIMEOUT) {
            Ok(ready) => Ok(Node { child: Some(child), ready, data_dir: data_dir.into(), log }),
            Err(_) => {
                let _ = child.kill();
                let status = child.wait().map_err(|e| e.to_string())?;
                let text = std::fs::read_to_string(&log).unwrap_or_default();
                Err(format!("ringstore-node did not become ready ({status}); log:\n{text}"))
            }
        }
    }

    pub fn addr(&self) -> SocketAddr {
        self.ready.listen
    }

    /// A shard-aware client.
    pub fn client(&self) -> Client {
        Client::connect(self.addr()).expect("connect to the node")
    }

    /// A client that sends everything through the shared port.
    pub fn shared_port_client(&self) -> Client {
        let options = ClientOptions { shard_aware: false, ..ClientOptions::default() };
        Client::connect_with(self.addr(), options).expect("connect to the node")
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn terminate(mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait()
    }

    /// Sends SIGKILL and waits for the exit.
    pub fn kill(mut self) -> ExitStatus {
        self.signal(libc::SIGKILL);
        self.wait()
    }

    fn signal(&mut self, signal: i32) {
        let pid = self.pid() as libc::pid_t;
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet (we hold it).
        let rc = unsafe { libc::kill(pid, signal) };
        assert_eq!(rc, 0, "kill({pid}, {signal}) failed");
    }

    fn wait(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let pid = child.id() as libc::pid_t;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait());
        });
        match rx.recv_timeout(STOP_TIMEOUT) {
            Ok(status) => status.expect("wait for ringstore-node"),
            Err(_) => {
                // SAFETY: kill(2) on our child, not reaped yet (the waiting thread has not returned).
                unsafe { libc::kill(pid, libc::SIGKILL) };
                let _ = rx.recv();
                panic!(
                    "ringstore-node did not exit within {STOP_TIMEOUT:?}; log: {}",
                    self.log_text()
                );
            }
        }
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn unique() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_line_parses() {
        let r = ReadyLine::parse(
            "ringstore-node ready listen=127.0.0.1:5000 shards=2 shard_ports=5001,5002 partitions=256 metrics=-",
        )
        .expect("parses");
        assert_eq!(r.listen, "127.0.0.1:5000".parse().expect("addr"));
        assert_eq!(r.shard_ports, [5001, 5002]);
        assert_eq!(r.partitions, 256);
        assert_eq!((r.metrics, r.resp), (None, None));
        let with_resp = ReadyLine::parse(
            "ringstore-node ready listen=127.0.0.1:5000 shards=1 shard_ports=5001 partitions=4 metrics=- resp=127.0.0.1:6379 resp_shard_ports=6380",
        )
        .expect("parses");
        assert_eq!(with_resp.resp, Some("127.0.0.1:6379".parse().expect("addr")));
        assert_eq!(with_resp.resp_shard_ports, [6380]);
        assert!(r.resp_shard_ports.is_empty());
        assert!(ReadyLine::parse("something else").is_none());
    }
}
