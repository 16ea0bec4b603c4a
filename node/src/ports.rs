//! Binding the node's ports, and refusing any port another process holds.
//!
//! glommio's `TcpListener::bind` always sets SO_REUSEPORT, and the kernel lets every socket of the
//! same user that also sets it bind the same port and take a share of its connections. A second
//! node (or any program) given a running node's address would then start without an error and
//! serve half of its clients. So:
//! - a shard's own port (`--listen` port + 1 + shard), its own RESP port (`--resp` port + 1 +
//!   shard) and the metrics port are bound without
//!   SO_REUSEPORT ([`bind_exclusive`]): nobody can share them, and binding fails if anyone holds
//!   them;
//! - the shared port must have SO_REUSEPORT (every shard accepts on it). Before shard 0 binds it,
//!   [`check_free`] binds the address once without SO_REUSEPORT and closes it, which fails if any
//!   socket listens there, with SO_REUSEPORT or not. The other shards bind it after shard 0. The
//!   check binds without listening: a socket that listened for that moment would take the
//!   connections of clients already retrying (after a restart) into its backlog and reset them
//!   when it closes.
//!
//! A second program that binds the shared port with SO_REUSEPORT between that check and shard 0's
//! bind (a window of microseconds, at start-up only) is not caught; its own check would see this
//! node's sockets and refuse, if it is a ringstore node.

use std::net::SocketAddr;
use std::os::fd::{FromRawFd, IntoRawFd};

use glommio::net::TcpListener;

/// Binds `addr` with SO_REUSEPORT (for the shared port, which every shard binds).
pub fn bind_shared(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))
}

/// Fails, saying so, if any socket listens on `addr` (a port of 0 is always free).
pub fn check_free(addr: SocketAddr, what: &str) -> Result<(), String> {
    if addr.port() == 0 {
        return Ok(());
    }
    // SO_REUSEADDR as std's listeners set it, so sockets in TIME_WAIT do not count as in use.
    let socket =
        socket2::Socket::new(socket2::Domain::for_address(addr), socket2::Type::STREAM, None)
            .and_then(|s| s.set_reuse_address(true).map(|()| s))
            .map_err(|e| format!("cannot check {addr} ({what}): {e}"))?;
    socket.bind(&addr.into()).map_err(|e| in_use(addr, what, &e))
}

/// Binds shard `id`'s own port on `ip`: `base + 1 + id` (`base` is the `--flag` port), or a free
/// port when `base` is 0; exclusive, like [`bind_exclusive`].
pub fn bind_own(
    ip: std::net::IpAddr,
    base: u16,
    id: usize,
    flag: &str,
    what: &str,
) -> Result<TcpListener, String> {
    let port = match base {
        0 => 0,
        base => u16::try_from(usize::from(base) + 1 + id).map_err(|_| {
            format!("shard {id}'s own port would be {base}+1+{id}, past 65535; give --{flag} a lower port")
        })?,
    };
    bind_exclusive(SocketAddr::new(ip, port), what)
}

/// Binds `addr` without SO_REUSEPORT, so that no other socket can share the port.
pub fn bind_exclusive(addr: SocketAddr, what: &str) -> Result<TcpListener, String> {
    let std_listener = std::net::TcpListener::bind(addr).map_err(|e| in_use(addr, what, &e))?;
    // SAFETY: the descriptor comes from `into_raw_fd` of a bound, listening TCP socket, so it is
    // open and owned by nobody else; the glommio listener takes over closing it.
    Ok(unsafe { TcpListener::from_raw_fd(std_listener.into_raw_fd()) })
}

fn in_use(addr: SocketAddr, what: &str, e: &std::io::Error) -> String {
    if e.kind() == std::io::ErrorKind::AddrInUse {
        format!(
            "cannot listen on {addr} ({what}): another process already listens on port {} \
             (a node never shares its ports; stop it or choose another --listen)",
            addr.port()
        )
    } else {
        format!("cannot listen on {addr} ({what}): {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// Checks of a free port never accept a connection (issue 12, item 9): a client connecting
    /// in a loop meanwhile is refused every time. When the check bound a listening socket and
    /// closed it, a connection that reached it in between was accepted and then reset.
    #[test]
    fn checking_a_free_port_never_accepts_a_connection() {
        const CLIENTS: usize = 4;
        let addr = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            probe.local_addr().expect("addr")
        };
        let stop = Arc::new(AtomicBool::new(false));
        let clients: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let (mut attempts, mut accepted) = (0u64, 0u64);
                    while !stop.load(Ordering::Relaxed) {
                        attempts += 1;
                        if std::net::TcpStream::connect(addr).is_ok() {
                            accepted += 1;
                        }
                    }
                    (attempts, accepted)
                })
            })
            .collect();
        for _ in 0..20_000 {
            check_free(addr, "test").expect("the port is free");
        }
        stop.store(true, Ordering::Relaxed);
        let (attempts, accepted) = clients
            .into_iter()
            .map(|c| c.join().expect("client thread"))
            .fold((0, 0), |(a, b), (c, d)| (a + c, b + d));
        assert!(attempts > 0, "the client never tried");
        assert_eq!(accepted, 0, "{accepted} of {attempts} connections reached a checking socket");
    }

    #[test]
    fn a_listening_port_is_not_free() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let err = check_free(addr, "the test port").expect_err("in use");
        assert!(err.contains("another process already listens"), "{err}");
    }
}
