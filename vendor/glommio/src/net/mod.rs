// Unless explicitly stated otherwise all files in this repository are licensed
// under the MIT/Apache-2.0 License, at your convenience
//
// This product includes software developed at Datadog (https://www.datadoghq.com/). Copyright 2020 Datadog, Inc.
//
//! This module provides glommio's networking support.
use crate::sys;
use nix::sys::socket::{MsgFlags, SockaddrLike};
use std::{io, os::unix::io::RawFd};

fn yolo_accept(fd: RawFd) -> Option<io::Result<RawFd>> {
    let flags =
        nix::fcntl::OFlag::from_bits(nix::fcntl::fcntl(fd, nix::fcntl::F_GETFL).unwrap()).unwrap();
    nix::fcntl::fcntl(
        fd,
        nix::fcntl::F_SETFL(flags | nix::fcntl::OFlag::O_NONBLOCK),
    )
    .unwrap();
    let r = sys::accept_syscall(fd);
    nix::fcntl::fcntl(fd, nix::fcntl::F_SETFL(flags)).unwrap();
    match r {
        Ok(x) => Some(Ok(x)),
        Err(err) => match err.kind() {
            io::ErrorKind::WouldBlock => None,
            _ => Some(Err(err)),
        },
    }
}

fn yolo_send(fd: RawFd, buf: &[u8]) -> Option<io::Result<usize>> {
    match sys::send_syscall(fd, buf.as_ptr(), buf.len(), MsgFlags::MSG_DONTWAIT.bits()) {
        Ok(x) => Some(Ok(x)),
        Err(err) => match err.kind() {
            io::ErrorKind::WouldBlock => None,
            _ => Some(Err(err)),
        },
    }
}

fn yolo_peek(fd: RawFd, buf: &mut [u8]) -> Option<io::Result<usize>> {
    match sys::recv_syscall(
        fd,
        buf.as_mut_ptr(),
        buf.len(),
        (MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_PEEK).bits(),
    ) {
        Ok(x) => Some(Ok(x)),
        Err(err) => match err.kind() {
            io::ErrorKind::WouldBlock => None,
            _ => Some(Err(err)),
        },
    }
}

fn yolo_recv(fd: RawFd, buf: &mut [u8]) -> Option<io::Result<usize>> {
    match sys::recv_syscall(
        fd,
        buf.as_mut_ptr(),
        buf.len(),
        MsgFlags::MSG_DONTWAIT.bits(),
    ) {
        Ok(x) => Some(Ok(x)),
        Err(err) => match err.kind() {
            io::ErrorKind::WouldBlock => None,
            _ => Some(Err(err)),
        },
    }
}

fn yolo_recvmsg<T: SockaddrLike>(
    fd: RawFd,
    buf: &mut [u8],
    flags: MsgFlags,
) -> Option<io::Result<(usize, T)>> {
    match sys::recvmsg_syscall(
        fd,
        buf.as_mut_ptr(),
        buf.len(),
        (flags | MsgFlags::MSG_DONTWAIT).bits(),
    ) {
        Ok(x) => Some(Ok(x)),
        Err(err) => match err.kind() {
            io::ErrorKind::WouldBlock => None,
            _ => Some(Err(err)),
        },
    }
}

fn yolo_sendmsg(
    fd: RawFd,
    buf: &[u8],
    addr: &impl nix::sys::socket::SockaddrLike,
) -> Option<io::Result<usize>> {
    match sys::sendmsg_syscall(
        fd,
        buf.as_ptr(),
        buf.len(),
        addr,
        MsgFlags::MSG_DONTWAIT.bits(),
    ) {
        Ok(x) => Some(Ok(x)),
        Err(err) => match err.kind() {
            io::ErrorKind::WouldBlock => None,
            _ => Some(Err(err)),
        },
    }
}

/// ringstore patch: waits, with one io_uring poll, until `fd` is readable (or has an error or
/// a hang-up to report), and returns the poll's event mask. For a file descriptor the caller
/// watches itself, such as an epoll instance: glommio's own streams poll per read.
pub async fn wait_readable(fd: RawFd) -> io::Result<usize> {
    let source = crate::executor().reactor().poll_read_ready(fd);
    source.collect_rw().await
}

/// ringstore patch ("The executor sleeps in its owner's epoll instance", RINGSTORE-PATCH.md): the
/// running executor adds its main and latency rings' descriptors to the epoll instance `epoll`
/// (level-triggered, with the event data [`SLEEP_EPOLL_MAIN_RING`] and
/// [`SLEEP_EPOLL_LATENCY_RING`], which the caller's own registrations must not use), takes the
/// instance's events without waiting on every loop turn that runs tasks, and sleeps in it, in one
/// `epoll_pwait2` whose timeout is its next timer, when it has nothing to run. The caller's events
/// go to `on_events` (in the executor's thread, outside any task; it must not call this function),
/// which may wake tasks. `epoll` must stay open as long as the executor runs. Fails if this
/// executor already has one, or if a ring cannot be added.
pub fn sleep_in_epoll(
    epoll: RawFd,
    on_events: Box<dyn FnMut(&[libc::epoll_event])>,
) -> io::Result<()> {
    crate::executor()
        .reactor()
        .sys
        .set_sleep_epoll(epoll, on_events)
}

/// ringstore patch: the event data of the main ring's descriptor in a [`sleep_in_epoll`]
/// instance.
pub const SLEEP_EPOLL_MAIN_RING: u64 = u64::MAX;
/// ringstore patch: the event data of the latency ring's descriptor in a [`sleep_in_epoll`]
/// instance.
pub const SLEEP_EPOLL_LATENCY_RING: u64 = u64::MAX - 1;

mod datagram;
mod stream;
mod tcp_socket;
mod udp_socket;
mod unix;
pub use self::{
    stream::{Buffered, Preallocated},
    tcp_socket::{AcceptedTcpStream, TcpListener, TcpStream},
    udp_socket::UdpSocket,
    unix::{AcceptedUnixStream, UnixDatagram, UnixListener, UnixStream},
};
