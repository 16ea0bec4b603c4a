//! The node's glommio sleeps without `sys_membarrier` (RINGSTORE-PATCH.md, "No membarrier per
//! sleep"): an executor about to sleep announces it, issues a SeqCst fence and looks at its
//! channels once more; a sender issues a SeqCst fence between its write and its look at the
//! announcement. If either fence were missing, a message could arrive unseen just as its
//! receiver falls asleep, and the receiver would sleep with the message in its channel.
//!
//! This ping-pongs messages between two executors on their own threads, each falling asleep
//! between every message, in both directions at once, and checks that every one arrives in
//! order: once with glommio's own sleep, and once with each executor sleeping in an epoll
//! instance (RINGSTORE-PATCH.md, "The executor sleeps in its owner's epoll instance", as a
//! shard with connections does), where the other executor's wake-up must come through the
//! latency ring's descriptor in that instance, and once with each executor also spinning 20 us
//! before it sleeps (RINGSTORE-PATCH.md, "Spinning before the sleep", as a shard with a CPU of
//! its own does), where a message may come during the spin or the sleep after it. A lost
//! wake-up shows up as a stall: the test
//! then fails at [`STALL_LIMIT`] instead of hanging (it is a bound on a hang, not a speed check:
//! the round trips take well under a second here).

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::mpsc;
use std::time::Duration;

use glommio::channels::shared_channel::{self, ConnectedReceiver, ConnectedSender};
use glommio::{LocalExecutorBuilder, Placement};

/// Round trips; each one puts each executor to sleep at least once.
const ROUND_TRIPS: u64 = 20_000;

/// How long the test waits for the round trips before it calls them stalled.
const STALL_LIMIT: Duration = Duration::from_secs(120);

/// glommio's smallest io memory per executor (the locked-memory limit is 8 MiB here).
const IO_MEMORY_BYTES: usize = 512 * 1024;

#[test]
fn messages_between_sleeping_executors_are_never_missed() {
    ping_pong(Sleep::Glommio);
}

#[test]
fn messages_between_executors_sleeping_in_epoll_instances_are_never_missed() {
    ping_pong(Sleep::InEpoll);
}

#[test]
fn messages_between_executors_spinning_then_sleeping_in_epoll_instances_are_never_missed() {
    ping_pong(Sleep::InEpollAfterSpin);
}

/// Where an executor of the test sleeps.
#[derive(Debug, Clone, Copy)]
enum Sleep {
    /// glommio's own sleep: a poll of the latency ring in the main ring, and a wait.
    Glommio,
    /// `glommio::net::sleep_in_epoll`, with an instance that holds nothing else.
    InEpoll,
    /// The same, after a spin of [`SPIN`] (`spin_before_park`).
    InEpollAfterSpin,
}

/// The spin of [`Sleep::InEpollAfterSpin`]: the node's default for a shard with a CPU of its own.
const SPIN: Duration = Duration::from_micros(20);

impl Sleep {
    /// Sets up the running executor's sleep; the returned descriptor must outlive it.
    fn install(self) -> Option<OwnedFd> {
        match self {
            Sleep::Glommio => None,
            Sleep::InEpoll | Sleep::InEpollAfterSpin => {
                // SAFETY: epoll_create1 takes no pointers.
                let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
                assert!(fd >= 0, "epoll_create1: {}", std::io::Error::last_os_error());
                // SAFETY: `fd` is the new epoll descriptor, owned by nothing else.
                let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
                glommio::net::sleep_in_epoll(fd, Box::new(|_| {})).expect("sleep in epoll");
                Some(epoll)
            }
        }
    }

    /// An executor builder for this way of sleeping. A spinning executor is bound to a CPU of
    /// the process's mask (`cpu`-th, wrapping): glommio spins only on such an executor.
    fn builder(self, name: &str, cpu: usize) -> LocalExecutorBuilder {
        match self {
            Sleep::InEpollAfterSpin => {
                let cpus = allowed_cpus();
                LocalExecutorBuilder::new(Placement::Fixed(cpus[cpu % cpus.len()]))
                    .spin_before_park(SPIN)
            }
            Sleep::Glommio | Sleep::InEpoll => LocalExecutorBuilder::new(Placement::Unbound),
        }
        .io_memory(IO_MEMORY_BYTES)
        .name(name)
    }
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero bytes are a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let read = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(read, 0, "sched_getaffinity: {}", std::io::Error::last_os_error());
    // SAFETY: `set` was filled by sched_getaffinity and `cpu` is below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect()
}

fn ping_pong(sleep: Sleep) {
    let (to_b, from_a) = shared_channel::new_bounded::<u64>(1);
    let (to_a, from_b) = shared_channel::new_bounded::<u64>(1);
    let (done_tx, done_rx) = mpsc::channel();

    let done = done_tx.clone();
    let a = sleep
        .builder("ping", 0)
        .spawn(move || async move {
            let _epoll = sleep.install();
            let (send, recv) = (to_b.connect().await, from_b.connect().await);
            done.send(("ping", ping(send, recv).await)).expect("report");
        })
        .expect("spawn the ping executor");
    let b = sleep
        .builder("pong", 1)
        .spawn(move || async move {
            let _epoll = sleep.install();
            // The opposite order to ping's: a connect waits for its peer's.
            let recv = from_a.connect().await;
            let send = to_a.connect().await;
            done_tx.send(("pong", pong(send, recv).await)).expect("report");
        })
        .expect("spawn the pong executor");

    for _ in 0..2 {
        let (who, seen) = done_rx.recv_timeout(STALL_LIMIT).unwrap_or_else(|_| {
            panic!("a wake-up was lost ({sleep:?}): no end within {STALL_LIMIT:?}")
        });
        assert_eq!(seen, ROUND_TRIPS, "{who} saw every message, in order ({sleep:?})");
    }
    a.join().expect("ping executor");
    b.join().expect("pong executor");
}

/// Sends 0..ROUND_TRIPS, each after the answer to the one before; returns the answers seen.
async fn ping(send: ConnectedSender<u64>, recv: ConnectedReceiver<u64>) -> u64 {
    let mut seen = 0;
    for n in 0..ROUND_TRIPS {
        send.send(n).await.expect("send a ping");
        let answer = recv.recv().await.expect("an answer");
        assert_eq!(answer, n + 1, "the answer to ping {n}");
        seen += 1;
    }
    seen
}

/// Answers each n with n + 1; returns how many it answered.
async fn pong(send: ConnectedSender<u64>, recv: ConnectedReceiver<u64>) -> u64 {
    let mut seen = 0;
    while seen < ROUND_TRIPS {
        let n = recv.recv().await.expect("a ping");
        assert_eq!(n, seen, "pings arrive in order");
        send.send(n + 1).await.expect("send an answer");
        seen += 1;
    }
    seen
}
