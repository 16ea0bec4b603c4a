//! Accepting connections. Every shard accepts on the shared port (SO_REUSEPORT: the kernel
//! spreads new connections over the shards) and on its own port (for shard-aware clients). Each
//! accepted connection is served on the accepting shard (`connection.rs`).

use std::rc::Rc;
use std::time::Duration;

use futures_lite::future::or;
use glommio::net::{TcpListener, TcpStream};

use crate::connection;
use crate::shard::Shard;

/// How long accepting pauses after an accept error (typically out of file descriptors), so the
/// loop does not spin while connections close.
pub const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// Accepts until shutdown is requested; then the listener is closed (dropped).
pub async fn accept_loop(shard: Rc<Shard>, listener: TcpListener, which: &'static str) {
    accept_until_shutdown(shard, listener, which, connection::serve).await;
}

/// Accepts until shutdown is requested, serving each connection with `serve` in its own task on
/// this shard (the protocol ports and the metrics port).
pub async fn accept_until_shutdown<F, Fut>(
    shard: Rc<Shard>,
    listener: TcpListener,
    which: &'static str,
    serve: F,
) where
    F: Fn(Rc<Shard>, TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + 'static,
{
    let mut errors = ErrorLog::default();
    loop {
        let accepted = or(async { Some(listener.accept().await) }, async {
            shard.shutdown.requested().await;
            None
        })
        .await;
        match accepted {
            None => return,
            Some(Ok(stream)) => {
                glommio::spawn_local(serve(shard.clone(), stream)).detach();
            }
            Some(Err(e)) => {
                if let Some(suppressed) = errors.should_log(std::time::Instant::now()) {
                    tracing::warn!(shard = shard.id, port = which, error = %e, suppressed,
                        "accept failed (out of file descriptors? see max_connections)");
                }
                glommio::timer::sleep(ACCEPT_ERROR_PAUSE).await;
            }
        }
    }
}

/// At most one accept-error line per [`ACCEPT_ERROR_LOG_INTERVAL`]: out of descriptors, accept
/// fails every [`ACCEPT_ERROR_PAUSE`], and a line each time buried the log (80 a second).
pub const ACCEPT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(10);

/// When the last accept error was logged, and how many were not logged since.
#[derive(Debug, Default)]
pub struct ErrorLog {
    last: Option<std::time::Instant>,
    suppressed: u64,
}

impl ErrorLog {
    /// Some(errors not logged since the last line) if this error should be logged now.
    pub fn should_log(&mut self, now: std::time::Instant) -> Option<u64> {
        let due = self.last.is_none_or(|t| now.duration_since(t) >= ACCEPT_ERROR_LOG_INTERVAL);
        if !due {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_are_logged_once_per_interval_with_a_count() {
        let mut log = ErrorLog::default();
        let t0 = std::time::Instant::now();
        assert_eq!(log.should_log(t0), Some(0));
        for i in 1..200u32 {
            assert_eq!(log.should_log(t0 + ACCEPT_ERROR_PAUSE * i), None, "error {i}");
        }
        assert_eq!(log.should_log(t0 + ACCEPT_ERROR_LOG_INTERVAL), Some(199));
        assert_eq!(log.should_log(t0 + ACCEPT_ERROR_LOG_INTERVAL * 2), Some(0));
    }
}
