//! When a shard's connections have bytes to read: one epoll instance per shard, which the
//! shard's executor polls on every loop turn and sleeps in.
//!
//! glommio's streams learn that a socket is readable with one io_uring poll per read: at
//! pipeline 1 every request costs a poll submitted, its task work when the bytes arrive, a
//! completion and a glommio `Source`. Here each connection's socket is registered once, when
//! the connection starts, edge-triggered (`EPOLLET`), in the shard's epoll instance, and the
//! executor takes that instance's events itself (`glommio::net::sleep_in_epoll`, glommio's sixth
//! ringstore change): one `epoll_pwait2` that does not wait on every loop turn that runs tasks,
//! and, when it has nothing to run, one that waits and is its whole sleep (its io_uring rings'
//! descriptors are in the instance too, and its next timer is the timeout). However many
//! connections got bytes, one call names them all, and `Inner::mark` wakes their read loops.
//! A second epoll instance in the same executor (a test's) cannot also be slept in: a pump task
//! watches it instead, with one io_uring poll on the instance (`pump`).
//!
//! Each watched socket has a `ready` flag: set for every event (`Inner::mark`), cleared by the read
//! loop just before it calls `recv` (unless the peer has closed its side: then no event follows,
//! and the flag stays set so the end of the stream is read). A read loop waits only while the flag
//! is clear, so no arrival is missed: bytes that came before the clear are taken by the `recv`;
//! bytes that come after it queue a new edge event, which the next poll turns into the flag.
//! Everything runs on the shard's thread, so the flag and the wakers need no atomics.
//!
//! The epoll instance is made when the first connection is watched, and handed to the
//! executor of that connection (always the shard's) then.

use std::any::Any;
use std::cell::RefCell;
use std::future::poll_fn;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use slab::Slab;

/// Events one `epoll_wait` takes at most; the pump calls it again while it comes back full.
pub const EPOLL_EVENTS_PER_WAIT: usize = 256;

/// The events after which nothing more arrives on a socket: the peer's close of its side,
/// a hang-up, an error.
const HANG_UP_EVENTS: u32 = (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32;

/// How long the pump waits before it polls the epoll instance again after glommio failed to
/// poll it (not seen in practice; without the wait a persistent error would spin the shard).
pub const POLL_RETRY_DELAY: Duration = Duration::from_millis(1);

/// The shard's epoll instance and its watched sockets.
#[derive(Debug, Default)]
pub struct Readiness {
    inner: RefCell<Option<Rc<Inner>>>,
}

#[derive(Debug)]
struct Inner {
    epoll: OwnedFd,
    slots: RefCell<Slab<Slot>>,
}

#[derive(Debug)]
struct Slot {
    /// An event arrived since the read loop last cleared this (set at registration, so the
    /// first read tries `recv` at once).
    ready: bool,
    /// The peer closed its side, or the socket failed (an event with `EPOLLRDHUP`, `EPOLLHUP`
    /// or `EPOLLERR`). Nothing can arrive after that, so no event will follow: `ready` then
    /// stays set, and every later `recv` returns at once (the bytes left, the end of the
    /// stream, or the error). Without it, a close that came with the last bytes was lost when a
    /// `recv` took those bytes without filling its buffer: the end of the stream stayed unread.
    hung_up: bool,
    /// The read loop waiting for the flag.
    waker: Option<Waker>,
}

/// One socket registered with the shard's epoll instance; dropping it unregisters it, then
/// drops what keeps the socket open. It holds that owner so that the removal always happens
/// while the socket is open: after a close, the descriptor number could belong to a later
/// connection, whose registration the removal would take.
pub struct Watch {
    inner: Rc<Inner>,
    key: usize,
    fd: RawFd,
    /// What keeps `fd` open (the connection's read half), dropped after the removal.
    _open: Box<dyn Any>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch").field("key", &self.key).field("fd", &self.fd).finish()
    }
}

impl Readiness {
    /// Registers `fd` (a connected stream socket, non-blocking) for read readiness; `open` is
    /// what keeps it open (the watch holds it until it has unregistered `fd`).
    pub fn watch(&self, fd: RawFd, open: Box<dyn Any>) -> io::Result<Watch> {
        let inner = self.inner()?;
        let key =
            inner.slots.borrow_mut().insert(Slot { ready: true, hung_up: false, waker: None });
        let mut event = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: key as u64,
        };
        // SAFETY: both descriptors are open and `event` is a valid epoll_event.
        let rc = unsafe {
            libc::epoll_ctl(inner.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut event)
        };
        if rc != 0 {
            let e = io::Error::last_os_error();
            inner.slots.borrow_mut().remove(key);
            return Err(io::Error::new(
                e.kind(),
                format!("registering a connection's socket with the shard's epoll instance: {e}"),
            ));
        }
        Ok(Watch { inner, key, fd, _open: open })
    }

    fn inner(&self) -> io::Result<Rc<Inner>> {
        if let Some(inner) = &*self.inner.borrow() {
            return Ok(inner.clone());
        }
        // SAFETY: epoll_create1 takes no pointers.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("creating the shard's epoll instance: {e}"),
            ));
        }
        // SAFETY: `fd` is the new epoll descriptor, owned by nothing else.
        let epoll = unsafe { OwnedFd::from_raw_fd(fd) };
        let inner = Rc::new(Inner { epoll, slots: RefCell::new(Slab::new()) });
        let events_of = inner.clone();
        let on_events = Box::new(move |events: &[libc::epoll_event]| events_of.mark(events));
        if let Err(e) = glommio::net::sleep_in_epoll(fd, on_events) {
            // Another Readiness already has this executor's loop (a second one in one
            // executor, as in a test), or its rings could not be added: a pump task instead.
            tracing::debug!(error = %e, "the shard's epoll instance is watched by a pump task");
            glommio::spawn_local(pump(inner.clone())).detach();
        }
        *self.inner.borrow_mut() = Some(inner.clone());
        Ok(inner)
    }
}

impl Watch {
    /// Receives what the socket holds into `into` (non-empty), waiting until it holds
    /// something: the byte count, 0 at the end of the stream, or the socket's error.
    pub async fn recv(&self, into: &mut [u8]) -> io::Result<usize> {
        poll_fn(|cx| self.poll_recv(cx, into)).await
    }

    fn poll_recv(&self, cx: &Context<'_>, into: &mut [u8]) -> Poll<io::Result<usize>> {
        loop {
            {
                let mut slots = self.inner.slots.borrow_mut();
                let slot = &mut slots[self.key];
                if !slot.ready {
                    match &slot.waker {
                        Some(w) if w.will_wake(cx.waker()) => {}
                        _ => slot.waker = Some(cx.waker().clone()),
                    }
                    return Poll::Pending;
                }
                slot.ready = slot.hung_up;
            }
            // SAFETY: `into` is valid for writes of its length; `_open` keeps the socket open.
            let n = unsafe {
                libc::recv(self.fd, into.as_mut_ptr().cast(), into.len(), libc::MSG_DONTWAIT)
            };
            if n >= 0 {
                let n = n as usize;
                if n == into.len() {
                    // The buffer filled: more may be waiting, with no new event to say so.
                    self.inner.slots.borrow_mut()[self.key].ready = true;
                }
                return Poll::Ready(Ok(n));
            }
            let e = io::Error::last_os_error();
            match e.kind() {
                // The event was for bytes an earlier recv took: wait for the next one.
                io::ErrorKind::WouldBlock => continue,
                io::ErrorKind::Interrupted => {
                    self.inner.slots.borrow_mut()[self.key].ready = true;
                    continue;
                }
                _ => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        // SAFETY: `_open` keeps the socket open until after this; a null event is allowed for
        // DEL.
        unsafe {
            libc::epoll_ctl(
                self.inner.epoll.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                self.fd,
                std::ptr::null_mut(),
            );
        }
        self.inner.slots.borrow_mut().remove(self.key);
    }
}

impl Inner {
    /// Sets the ready flag of every socket `events` name and wakes their read loops.
    fn mark(&self, events: &[libc::epoll_event]) {
        let mut slots = self.slots.borrow_mut();
        for event in events {
            if let Some(slot) = slots.get_mut(event.u64 as usize) {
                slot.ready = true;
                slot.hung_up |= event.events & HANG_UP_EVENTS != 0;
                if let Some(waker) = slot.waker.take() {
                    waker.wake();
                }
            }
        }
    }
}

/// The pump, for an epoll instance its executor does not sleep in: waits for the instance to be
/// readable (one io_uring poll), then takes every event it holds and wakes the read loops they
/// name.
async fn pump(inner: Rc<Inner>) {
    let epoll = inner.epoll.as_raw_fd();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EPOLL_EVENTS_PER_WAIT];
    loop {
        if let Err(e) = glommio::net::wait_readable(epoll).await {
            tracing::error!(error = %e, "polling the shard's epoll instance failed; retrying");
            glommio::timer::sleep(POLL_RETRY_DELAY).await;
        }
        loop {
            // SAFETY: `events` is valid for EPOLL_EVENTS_PER_WAIT entries; timeout 0 never
            // blocks the shard's thread.
            let n = unsafe {
                libc::epoll_wait(epoll, events.as_mut_ptr(), EPOLL_EVENTS_PER_WAIT as i32, 0)
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                tracing::error!(error = %e, "epoll_wait on the shard's epoll instance failed");
                break;
            }
            let n = n as usize;
            inner.mark(&events[..n]);
            if n < EPOLL_EVENTS_PER_WAIT {
                break;
            }
        }
    }
}
