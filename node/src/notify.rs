//! Telling the service manager (systemd `Type=notify`) when the node is ready and when it stops:
//! `READY=1` once every shard listens and has opened its store (with the ready line), and
//! `STOPPING=1` when a SIGTERM or SIGINT starts the drain. Without `NOTIFY_SOCKET` in the
//! environment (not started by systemd) both do nothing.

use sd_notify::NotifyState;

/// Every shard serves: sent right after the ready line.
pub fn ready() {
    send(NotifyState::Ready, "READY=1");
}

/// A stop was requested: the drain begins.
pub fn stopping() {
    send(NotifyState::Stopping, "STOPPING=1");
}

fn send(state: NotifyState<'_>, what: &str) {
    // Keep NOTIFY_SOCKET set: STOPPING=1 follows READY=1 on the same socket.
    if let Err(e) = sd_notify::notify(false, &[state]) {
        tracing::warn!(error = %e, notification = what, "cannot notify the service manager");
    }
}
