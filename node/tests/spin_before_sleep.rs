//! A shard that spins before it sleeps (`--spin-before-sleep-us`, RINGSTORE-PATCH.md, "Spinning
//! before the sleep") learns of its connections' bytes during the spin, from the epoll instance
//! it sleeps in: glommio's spin loop polls that instance as well as its rings, timers and
//! channels.
//!
//! The test gives an executor, bound to a CPU (glommio spins only on such an executor), a spin
//! far longer than the test may run, waits until it is spinning (its thread has used CPU time
//! with nothing to run), and then makes a descriptor in its epoll instance readable. A spin that
//! did not look at the instance would spin on to its end, and the test fails at [`STALL_LIMIT`]
//! (a bound on a hang, not a speed check).

use std::cell::{Cell, RefCell};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::rc::Rc;
use std::sync::mpsc;
use std::task::{Poll, Waker};
use std::time::Duration;

use glommio::{LocalExecutorBuilder, Placement};

/// How long the test waits for the executor to see the event before it calls it lost.
const STALL_LIMIT: Duration = Duration::from_secs(120);

/// A spin no test run reaches the end of.
const ENDLESS_SPIN: Duration = Duration::from_secs(24 * 3600);

/// glommio's smallest io memory per executor (the locked-memory limit is 8 MiB here).
const IO_MEMORY_BYTES: usize = 512 * 1024;

/// The event data of the test's descriptor in the epoll instance.
const EVENT_FD_DATA: u64 = 7;

/// CPU time (clock ticks) the executor's thread uses with nothing to run before the test makes
/// the descriptor readable: proof that it is inside its spin, not before it.
const SPINNING_TICKS: u64 = 5;

/// The first CPU this process may run on.
fn first_allowed_cpu() -> usize {
    // SAFETY: cpu_set_t is a plain bit array; all-zero bytes are a valid (empty) set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let read = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(read, 0, "sched_getaffinity: {}", std::io::Error::last_os_error());
    // SAFETY: `set` was filled by sched_getaffinity and `cpu` is below CPU_SETSIZE.
    (0..libc::CPU_SETSIZE as usize)
        .find(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .expect("a CPU in the mask")
}

/// User plus system CPU time of thread `tid` of this process, in clock ticks.
fn thread_cpu_ticks(tid: libc::pid_t) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).expect("stat");
    // The fields after the command name (which may hold spaces) start at the state, field 3.
    let fields: Vec<&str> = stat.rsplit(')').next().expect("fields").split_whitespace().collect();
    fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime")
}

#[test]
fn a_spinning_executor_sees_its_epoll_instance() {
    // SAFETY: eventfd and epoll_create1 take no pointers.
    let event_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    assert!(event_fd >= 0, "eventfd: {}", std::io::Error::last_os_error());
    // SAFETY: `event_fd` is the new descriptor, owned by nothing else.
    let event_fd = unsafe { OwnedFd::from_raw_fd(event_fd) };
    let raw_event_fd = event_fd.as_raw_fd();

    let (idle_tx, idle_rx) = mpsc::channel();
    let (seen_tx, seen_rx) = mpsc::channel();
    let executor = LocalExecutorBuilder::new(Placement::Fixed(first_allowed_cpu()))
        .io_memory(IO_MEMORY_BYTES)
        .spin_before_park(ENDLESS_SPIN)
        .name("spinner")
        .spawn(move || async move {
            // SAFETY: epoll_create1 takes no pointers.
            let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
            assert!(fd >= 0, "epoll_create1: {}", std::io::Error::last_os_error());
            // SAFETY: `fd` is the new epoll descriptor, owned by nothing else.
            let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: EVENT_FD_DATA };
            // SAFETY: both descriptors are open and `ev` is a valid epoll_event.
            let added = unsafe {
                libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, raw_event_fd, &mut ev)
            };
            assert_eq!(added, 0, "epoll_ctl: {}", std::io::Error::last_os_error());

            // The epoll callback marks the event seen and wakes the task waiting for it.
            let seen = Rc::new(Cell::new(false));
            let waiter: Rc<RefCell<Option<Waker>>> = Rc::new(RefCell::new(None));
            let (seen_cb, waiter_cb) = (seen.clone(), waiter.clone());
            glommio::net::sleep_in_epoll(
                epoll.as_raw_fd(),
                Box::new(move |events| {
                    if events.iter().any(|e| e.u64 == EVENT_FD_DATA) {
                        seen_cb.set(true);
                        if let Some(w) = waiter_cb.borrow_mut().take() {
                            w.wake();
                        }
                    }
                }),
            )
            .expect("sleep in epoll");

            // SAFETY: gettid takes no arguments.
            idle_tx.send(unsafe { libc::gettid() }).expect("report idle");
            // Nothing else runs on this executor: from here it spins until the event.
            std::future::poll_fn(|cx| {
                if seen.get() {
                    Poll::Ready(())
                } else {
                    *waiter.borrow_mut() = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await;
            seen_tx.send(()).expect("report the event");
            drop(epoll);
        })
        .expect("spawn the spinning executor");

    let tid = idle_rx.recv_timeout(STALL_LIMIT).expect("the executor started");
    // Wait until the executor spins: its thread keeps using CPU with nothing to run. A spin that
    // glommio dropped (an unbound executor) would park instead, and this wait would hit the bound.
    let started = std::time::Instant::now();
    let before = thread_cpu_ticks(tid);
    while thread_cpu_ticks(tid) < before + SPINNING_TICKS {
        assert!(started.elapsed() < STALL_LIMIT, "the executor did not spin");
        std::thread::yield_now();
    }
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from `one` to the open eventfd.
    let wrote = unsafe { libc::write(raw_event_fd, (&one as *const u64).cast(), 8) };
    assert_eq!(wrote, 8, "eventfd write: {}", std::io::Error::last_os_error());
    seen_rx.recv_timeout(STALL_LIMIT).unwrap_or_else(|_| {
        panic!("the spinning executor did not see its epoll instance within {STALL_LIMIT:?}")
    });
    executor.join().expect("spinning executor");
    drop(event_fd);
}
