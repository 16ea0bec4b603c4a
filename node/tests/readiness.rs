//! The shard's read readiness (`node/src/readiness.rs`): sockets registered edge-triggered with
//! one epoll instance, which one io_uring poll watches. An edge-triggered watch is easy to get
//! wrong in three ways, each tested here over loopback sockets in one executor:
//! - a lost wake-up: bytes arrive and their reader sleeps on; here more connections receive
//!   bytes at once than one `epoll_wait` returns, and each reader must get its own bytes;
//! - bytes left behind: a read that fills its buffer gets no new event for the rest, so the
//!   next read must try `recv` without one;
//! - a registration outliving its watch: a dropped watch must leave the epoll instance, or the
//!   same socket (or a new one on the same descriptor number) could not be watched again; and
//!   the watch, which holds what keeps its socket open, must close it once it has left.
//!
//! The shard's executor sleeps in that epoll instance (RINGSTORE-PATCH.md, "The executor
//! sleeps in its owner's epoll instance"), so two more things are tested: that it still wakes
//! for what is not a socket of its own (its timers, which are the sleep's timeout, and
//! completions in its io_uring rings, whose descriptors are in the instance), and that a second
//! epoll instance in one executor, which the executor cannot also sleep in, is watched by a
//! pump task instead.
//!
//! A lost wake-up would hang; each test fails at [`STALL_LIMIT`] instead (a bound on a hang,
//! not a speed check: the tests take milliseconds here).

use std::cell::Cell;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::mpsc;
use std::time::Duration;

use futures_lite::future::or;
use futures_lite::io::{AsyncReadExt, AsyncWriteExt};
use glommio::net::{TcpListener, TcpStream};
use glommio::{LocalExecutorBuilder, Placement};
use ringstore_node::readiness::{Readiness, Watch, EPOLL_EVENTS_PER_WAIT};

/// How long a test waits for what it expects before it calls the wake-up lost.
const STALL_LIMIT: Duration = Duration::from_secs(60);

/// glommio's smallest io memory per executor (the locked-memory limit is 8 MiB here).
const IO_MEMORY_BYTES: usize = 512 * 1024;

/// Timer sleeps in a row that only the sleep's timeout can end.
const TIMER_SLEEPS: usize = 50;

/// fdatasyncs in a row, each completed by the kernel's io-wq worker.
const SYNCS: usize = 20;

/// Bytes written before each of them.
const SYNC_BYTES: usize = 64 * 1024;

/// Connections in the many-at-once test: more than one `epoll_wait` returns.
const CONNECTIONS: usize = EPOLL_EVENTS_PER_WAIT + 44;

fn run<F, Fut>(test: F)
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + 'static,
{
    LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(IO_MEMORY_BYTES)
        .spawn(move || async move {
            let stalled = async {
                glommio::timer::sleep(STALL_LIMIT).await;
                panic!("a wake-up was lost: the test did not end within {STALL_LIMIT:?}");
            };
            or(test(), stalled).await;
        })
        .expect("spawn the executor")
        .join()
        .expect("the test's executor");
}

/// A listener on a loopback port of the kernel's choice, and its address.
fn listen() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address");
    (listener, addr)
}

/// A connected pair over loopback: (client end, server end).
async fn pair(listener: &TcpListener, addr: SocketAddr) -> (TcpStream, TcpStream) {
    let client = TcpStream::connect(addr).await.expect("connect");
    let server = listener.accept().await.expect("accept");
    (client, server)
}

/// One connection whose server end `readiness` watches: (client end, the watch).
async fn watched(readiness: &Readiness) -> (TcpStream, Watch) {
    let (listener, addr) = listen();
    let (client, server) = pair(&listener, addr).await;
    let fd = server.as_raw_fd();
    let watch = readiness.watch(fd, Box::new(server)).expect("watch");
    (client, watch)
}

#[test]
fn every_connection_that_gets_bytes_is_woken_even_past_one_epoll_wait() {
    run(|| async {
        let (listener, addr) = listen();
        let readiness = Rc::new(Readiness::default());
        let waiting = Rc::new(Cell::new(0));
        let mut clients = Vec::new();
        let mut readers = Vec::new();
        for i in 0..CONNECTIONS {
            let (client, server) = pair(&listener, addr).await;
            let (readiness, waiting) = (readiness.clone(), waiting.clone());
            readers.push(glommio::spawn_local(async move {
                let fd = server.as_raw_fd();
                let watch = readiness.watch(fd, Box::new(server)).expect("watch");
                let mut buf = [0u8; 64];
                // Counted in the same run of the task as the recv's first poll, which finds
                // no bytes yet and sleeps: every reader needs a wake-up.
                waiting.set(waiting.get() + 1);
                let n = watch.recv(&mut buf).await.expect("recv");
                (i, buf[..n].to_vec())
            }));
            clients.push(client);
        }
        while waiting.get() < CONNECTIONS {
            glommio::executor().yield_now().await;
        }
        // Every reader sleeps: write to all of them in one go, so their events pile up in the
        // epoll instance before the pump runs.
        for (i, client) in clients.iter_mut().enumerate() {
            client.write_all(format!("conn {i}").as_bytes()).await.expect("write");
        }
        for reader in readers {
            let (i, got) = reader.await;
            assert_eq!(got, format!("conn {i}").into_bytes(), "connection {i} got its own bytes");
        }
    });
}

#[test]
fn a_read_that_fills_its_buffer_reads_the_rest_without_a_new_event() {
    run(|| async {
        let readiness = Readiness::default();
        let (mut client, watch) = watched(&readiness).await;
        let sent: Vec<u8> = (0..100u8).collect();
        client.write_all(&sent).await.expect("write");
        client.close().await.expect("close");
        // Ten-byte reads: one event for all 100 bytes (and the close), ten full reads, then the
        // end of the stream.
        let mut got = Vec::new();
        loop {
            let mut buf = [0u8; 10];
            let n = watch.recv(&mut buf).await.expect("recv");
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, sent, "every byte, in order, then the end of the stream");
    });
}

#[test]
fn a_close_that_comes_with_the_last_bytes_is_read_after_a_partial_read() {
    run(|| async {
        let readiness = Readiness::default();
        let (mut client, watch) = watched(&readiness).await;
        let mut buf = [0u8; 64];
        client.write_all(b"first").await.expect("write");
        assert_eq!(watch.recv(&mut buf).await.expect("recv"), 5, "the first bytes");
        // The last bytes and the close arrive before the next recv: one event for both, and a
        // recv that takes the bytes without filling its buffer. The end of the stream must
        // still be read, with no event left to say so.
        client.write_all(b"last").await.expect("write");
        client.close().await.expect("close");
        assert_eq!(watch.recv(&mut buf).await.expect("recv"), 4, "the last bytes");
        assert_eq!(watch.recv(&mut buf).await.expect("recv"), 0, "the end of the stream");
    });
}

#[test]
fn a_dropped_watch_leaves_the_epoll_instance() {
    run(|| async {
        let (listener, addr) = listen();
        let (mut client, server) = pair(&listener, addr).await;
        let (mut other_client, other_server) = pair(&listener, addr).await;
        let readiness = Readiness::default();
        let other_fd = other_server.as_raw_fd();
        let other = readiness.watch(other_fd, Box::new(other_server)).expect("watch the other");
        let fd = server.as_raw_fd();
        let server = Rc::new(server);
        let first = readiness.watch(fd, Box::new(server.clone())).expect("watch");
        // A second registration of a watched socket is refused, with what was wrong...
        let refused = readiness.watch(fd, Box::new(server.clone())).expect_err("a second watch");
        assert!(
            refused.to_string().contains("epoll"),
            "the error names the epoll instance: {refused}"
        );
        drop(first);
        // ...and once the watch is dropped the socket can be watched again, and is woken.
        let again = readiness.watch(fd, Box::new(server)).expect("watch again after the drop");
        client.write_all(b"after").await.expect("write");
        let mut buf = [0u8; 16];
        let n = again.recv(&mut buf).await.expect("recv");
        assert_eq!(&buf[..n], b"after");
        // Dropping one watch did not touch the other socket's.
        other_client.write_all(b"other").await.expect("write");
        let n = other.recv(&mut buf).await.expect("recv on the other socket");
        assert_eq!(&buf[..n], b"other");
        // The watch held the last owner of the socket: dropping it closes the socket, after
        // unregistering it, and the client reads the end of the stream.
        drop(again);
        let n = client.read(&mut buf).await.expect("read the close");
        assert_eq!(n, 0, "the server's end closed with its watch");
    });
}

#[test]
fn an_executor_sleeping_in_its_epoll_instance_wakes_for_its_timers_and_ring_completions() {
    // The bound is kept outside the executor: its own timers are under test.
    let (done_tx, done_rx) = mpsc::channel();
    let executor = LocalExecutorBuilder::new(Placement::Unbound)
        .io_memory(IO_MEMORY_BYTES)
        .spawn(move || async move {
            let readiness = Readiness::default();
            // The first watch makes the epoll instance the executor sleeps in.
            let (_client, _watch) = watched(&readiness).await;
            // Nothing but the timer can end each of these sleeps.
            for _ in 0..TIMER_SLEEPS {
                glommio::timer::sleep(Duration::from_millis(1)).await;
            }
            // glommio's own streams read through the main ring: the completion of a read that
            // waits while the executor sleeps must end the sleep.
            let (listener, addr) = listen();
            let (mut client, mut server) = pair(&listener, addr).await;
            let reading = Rc::new(Cell::new(false));
            let reader = glommio::spawn_local({
                let reading = reading.clone();
                async move {
                    let mut buf = [0u8; 8];
                    reading.set(true);
                    let n = client.read(&mut buf).await.expect("read");
                    buf[..n].to_vec()
                }
            });
            // The reader's read is submitted before the bytes are written, so it completes
            // while this task waits for it and the executor has nothing to run.
            while !reading.get() {
                glommio::executor().yield_now().await;
            }
            server.write_all(b"ring").await.expect("write");
            let got = reader.await;
            // An fdatasync of dirty pages, which the kernel runs in its io-wq worker while the
            // executor sleeps. (On Linux 6.18 both completions come as task work, which
            // interrupts the epoll_pwait2; the rings' descriptors in the instance wake it for a
            // completion posted without task work. Checked: this test also passes with the
            // main ring left out of the instance, so it does not prove that registration.)
            let dir = tempfile::tempdir().expect("a temporary directory");
            let file = glommio::io::BufferedFile::create(dir.path().join("synced"))
                .await
                .expect("create a file");
            for i in 0..SYNCS {
                // Dirty pages, so the sync has writing to do while the executor sleeps.
                let at = (i * SYNC_BYTES) as u64;
                file.write_at(vec![i as u8; SYNC_BYTES], at).await.expect("write");
                file.fdatasync().await.expect("fdatasync");
            }
            file.close().await.expect("close");
            done_tx.send(got).expect("report");
        })
        .expect("spawn the executor");
    let got = done_rx
        .recv_timeout(STALL_LIMIT)
        .unwrap_or_else(|_| panic!("a wake-up was lost: no end within {STALL_LIMIT:?}"));
    assert_eq!(got, b"ring", "the read completed with the bytes written");
    executor.join().expect("the test's executor");
}

#[test]
fn a_second_epoll_instance_in_one_executor_is_watched_by_a_pump() {
    run(|| async {
        let first = Readiness::default();
        let (_first_client, _first_watch) = watched(&first).await;
        // The executor already sleeps in the first instance: the second gets a pump task.
        let second = Readiness::default();
        let (mut client, watch) = watched(&second).await;
        let mut buf = [0u8; 16];
        for round in 0..3u8 {
            client.write_all(&[round; 4]).await.expect("write");
            let n = watch.recv(&mut buf).await.expect("recv");
            assert_eq!(&buf[..n], &[round; 4], "round {round}'s bytes, through the pump");
        }
    });
}
