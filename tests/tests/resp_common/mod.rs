//! Helpers of the RESP port's suites (`resp_*.rs`): a node started with `--resp`, a raw-socket
//! RESP client that reads whole replies byte for byte, and a real redis-server when one is
//! installed.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use ringstore_tests::Node;

/// Bounds every read, write and connect.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// Whether redis-py is installed; without it a test that needs it passes only outside CI
/// (`.ci/run` installs it).
pub fn has_redis_py() -> bool {
    let has =
        Command::new("python3").args(["-c", "import redis"]).status().is_ok_and(|s| s.success());
    assert!(has || std::env::var_os("CI").is_none(), "CI installs redis-py (.ci/run)");
    has
}

/// Runs `tests/resp_python/SCRIPT PORT` with python3 (at most 120 s) and returns its output,
/// which must start with `ok `.
pub fn run_python(script: &str, port: u16) -> String {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/resp_python").join(script);
    let out = Command::new("timeout")
        .arg("120")
        .arg("python3")
        .arg(&script)
        .arg(port.to_string())
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && stdout.starts_with("ok "),
        "{script:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// A node with its RESP port on a free loopback port.
pub fn node(extra: &[&str]) -> (tempfile::TempDir, Node) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut flags = vec!["--resp", "127.0.0.1:0"];
    flags.extend_from_slice(extra);
    let node = Node::start(&dir.path().join("data"), &flags);
    (dir, node)
}

pub fn resp_addr(node: &Node) -> SocketAddr {
    node.ready.resp.expect("the ready line names the RESP port")
}

/// A RESP client on a plain socket.
pub struct Client {
    pub stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let stream = TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect");
        stream.set_read_timeout(Some(TIMEOUT)).expect("timeout");
        stream.set_write_timeout(Some(TIMEOUT)).expect("timeout");
        Client { stream, buf: Vec::new() }
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write");
    }

    /// Sends one command as a multibulk array.
    pub fn command(&mut self, words: &[&[u8]]) {
        let mut out = format!("*{}\r\n", words.len()).into_bytes();
        for w in words {
            out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
            out.extend_from_slice(w);
            out.extend_from_slice(b"\r\n");
        }
        self.send(&out);
    }

    /// Sends a command given as space-separated words and reads its reply.
    pub fn call(&mut self, line: &str) -> String {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        self.command(&words);
        self.reply()
    }

    /// Reads one whole reply (nested arrays included), as text.
    pub fn reply(&mut self) -> String {
        let bytes = self.reply_bytes();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub fn reply_bytes(&mut self) -> Vec<u8> {
        loop {
            if let Some(n) = reply_len(&self.buf) {
                return self.buf.drain(..n).collect();
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk).expect("read a reply");
            assert!(n > 0, "the connection closed; had {:?}", String::from_utf8_lossy(&self.buf));
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    /// Reads one whole reply as text; None if the connection closed, failed or timed out first
    /// (for clients of a node that is killed under them).
    pub fn try_reply(&mut self) -> Option<String> {
        loop {
            if let Some(n) = reply_len(&self.buf) {
                let bytes: Vec<u8> = self.buf.drain(..n).collect();
                return Some(String::from_utf8_lossy(&bytes).into_owned());
            }
            let mut chunk = [0u8; 65536];
            match self.stream.read(&mut chunk) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// True once the server closed the connection (after whatever it still sent).
    pub fn closed(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return true,
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
                Err(_) => return false,
            }
        }
    }

    /// What was received and not read as a reply.
    pub fn leftover(&self) -> String {
        String::from_utf8_lossy(&self.buf).into_owned()
    }
}

/// The length of the whole reply (RESP2 or RESP3) at the start of `buf`, None if it is not all
/// there.
pub fn reply_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let head = &buf[1..line_end];
    let after = line_end + 2;
    match buf.first()? {
        // RESP3 too: null, double, boolean, big number; verbatim strings as bulk strings.
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'=' => {
            let n: i64 = std::str::from_utf8(head).ok()?.parse().ok()?;
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'%' => {
            let n: i64 = std::str::from_utf8(head).ok()?.parse().ok()?;
            let n = if buf[0] == b'%' { n * 2 } else { n };
            let mut pos = after;
            for _ in 0..n.max(0) {
                pos += reply_len(&buf[pos..])?;
            }
            Some(pos)
        }
        other => panic!("not a RESP reply: starts with {:?}", char::from(*other)),
    }
}

/// A redis-server on a free loopback port, stopped when dropped; None if none is installed.
pub struct Redis {
    child: Child,
    pub addr: SocketAddr,
}

impl Redis {
    pub fn start() -> Option<Redis> {
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            probe.local_addr().expect("addr").port()
        };
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", ""])
            .args(["--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line.contains("Ready to accept connections") {
                    let _ = tx.send(());
                }
            }
        });
        let ready = rx.recv_timeout(TIMEOUT);
        let redis = Redis { child, addr: SocketAddr::from(([127, 0, 0, 1], port)) };
        ready.expect("redis-server became ready");
        Some(redis)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `program` runs here.
pub fn installed(program: &str) -> bool {
    Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success())
}
