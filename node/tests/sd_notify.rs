//! The node tells systemd (`Type=notify`) when it is ready and when it stops (issue 12): a
//! datagram socket stands in for systemd's `NOTIFY_SOCKET`; it must receive `READY=1` (after the
//! ready line) and, after SIGTERM, `STOPPING=1`, and the node must exit 0. Before, the daemon
//! sent nothing and the unit was `Type=simple`, so "started" meant only "forked".

use std::io::{BufRead, BufReader};
use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bounds each wait for a notification; a node that never sends one fails instead of hanging.
const NOTIFY_WAIT: Duration = Duration::from_secs(30);

fn receive(socket: &UnixDatagram) -> String {
    let mut buf = [0u8; 256];
    let n = socket.recv(&mut buf).expect("a notification within the bound");
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[test]
fn the_node_notifies_ready_and_stopping() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
    socket.set_read_timeout(Some(NOTIFY_WAIT)).expect("timeout");
    let data = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ringstore-node"))
        .args(["--listen", "127.0.0.1:0", "--shards", "2", "--data-dir"])
        .arg(&data)
        .env("NOTIFY_SOCKET", &socket_path)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start ringstore-node");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout).read_line(&mut line).expect("ready line");
    assert!(line.starts_with("ringstore-node ready"), "{line:?}");
    let ready = receive(&socket);
    // SAFETY: kill(2) with the child's pid and a valid signal number.
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(sent, 0, "SIGTERM");
    let stopping = receive(&socket);
    let status = child.wait().expect("wait");
    assert_eq!(ready.trim(), "READY=1");
    assert_eq!(stopping.trim(), "STOPPING=1");
    assert!(status.success(), "{status}");
}
