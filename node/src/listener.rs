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
                tracing::warn!(shard = shard.id, port = which, error = %e, "accept failed");
                glommio::timer::sleep(ACCEPT_ERROR_PAUSE).await;
            }
        }
    }
}
