//! A connection's output: the response frames waiting for the socket, and the signals between
//! the tasks that fill it (the read loop's inline answers, request tasks, the shard's
//! durable-write acknowledger) and the one that empties it (the writer task, `connection.rs`).
//! Responses reach the socket in the order they were queued: a direct send (`flush_now`) only
//! happens while the writer task holds no batch.

use std::cell::{Cell, RefCell};
use std::os::fd::RawFd;
use std::rc::Rc;
use std::task::Waker;

use crate::budget::BufferBudget;
use crate::buffers::BufPool;
use crate::counters::Counters;
use crate::inflight::InflightSlot;
use crate::wakeup::Wakeup;

/// Bytes handed to the socket at a time; each must be taken within the read timeout.
pub const WRITE_CHUNK_BYTES: usize = 256 * 1024;

/// The response side of a connection, shared by its read loop, its request tasks, the shard's
/// durable-write acknowledger and its writer task.
#[derive(Debug)]
pub struct Output {
    /// The connection's socket, for the direct sends of [`Output::flush_now`].
    fd: RawFd,
    /// Response frames not yet handed to the socket.
    pub(crate) pending: RefCell<Vec<u8>>,
    /// Response bytes queued and not yet written (`pending` plus the batch being written).
    /// Change it only through [`Output::add_unsent`] and [`Output::sub_unsent`], which keep the
    /// shard's budget in step.
    pub(crate) unsent: Cell<usize>,
    /// Bytes reserved for the responses of requests still running: each request reserves the
    /// largest response it can produce before it runs. The output cap limits `unsent` plus this.
    reserved: Cell<usize>,
    /// The shard's buffer budget, which `unsent` and `reserved` are counted in.
    budget: Rc<BufferBudget>,
    /// Woken when unsent or reserved bytes go down (a write, a send, a finished request).
    pub(crate) drained: Wakeup,
    /// Woken when `pending` gets bytes, when the connection is done, or when it is killed.
    pub(crate) ready: Wakeup,
    /// No more responses will come: write what is pending and close.
    pub(crate) done: Cell<bool>,
    /// Close at once, dropping what is pending (output cap exceeded, or a write failed).
    pub(crate) killed: Cell<bool>,
    /// Set by the read loop when bytes arrive, cleared by the shard's idle sweeper (`idle.rs`).
    pub(crate) input_seen: Cell<bool>,
    /// Requests of this connection still running.
    pub(crate) inflight: Cell<usize>,
    /// The writer task holds a batch it is writing: nothing else may write to the socket
    /// (responses would overtake it), so the read loop leaves `pending` to the writer.
    pub(crate) writing: Cell<bool>,
    /// Woken when a request of this connection finishes.
    pub(crate) finished: Wakeup,
    /// The read loop's task while it waits for input (`read_interrupt.rs`), and the unsent
    /// bytes at which that wait must end (`usize::MAX` when none is left).
    read_waker: WakerCell,
    read_cap: Cell<usize>,
}

/// A `Cell<Option<Waker>>` that `#[derive(Debug)]` can print (a `Cell`'s Debug needs `Copy`).
#[derive(Default)]
struct WakerCell(Cell<Option<Waker>>);

impl std::fmt::Debug for WakerCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let waker = self.0.take();
        let set = waker.is_some();
        self.0.set(waker);
        f.debug_tuple("WakerCell").field(&if set { "set" } else { "empty" }).finish()
    }
}

impl Output {
    pub fn new(fd: RawFd, budget: Rc<BufferBudget>) -> Output {
        Output {
            fd,
            pending: RefCell::default(),
            unsent: Cell::default(),
            reserved: Cell::default(),
            budget,
            drained: Wakeup::new(),
            ready: Wakeup::new(),
            done: Cell::default(),
            killed: Cell::default(),
            input_seen: Cell::default(),
            inflight: Cell::default(),
            writing: Cell::default(),
            finished: Wakeup::new(),
            read_waker: WakerCell::default(),
            read_cap: Cell::new(usize::MAX),
        }
    }

    /// Queues a response frame. The cap is enforced by the reader, which runs a request only
    /// after reserving room for its largest response ([`Output::reserve`]).
    pub(crate) fn push(&self, frame: &[u8]) {
        if self.killed.get() {
            return;
        }
        self.pending.borrow_mut().extend_from_slice(frame);
        self.add_unsent(frame.len());
        self.ready.notify_all();
    }

    /// Counts `n` more queued response bytes.
    pub(crate) fn add_unsent(&self, n: usize) {
        self.unsent.set(self.unsent.get() + n);
        self.budget.charge(n);
        if self.unsent.get() >= self.read_cap.get() {
            self.wake_read();
        }
    }

    /// Counts `n` response bytes handed to the socket.
    pub(crate) fn sub_unsent(&self, n: usize) {
        self.unsent.set(self.unsent.get() - n);
        self.budget.give(n);
        if n > 0 {
            self.drained.notify_all();
        }
    }

    /// Response bytes queued or reserved: what the output cap limits.
    pub(crate) fn committed(&self) -> usize {
        self.unsent.get() + self.reserved.get()
    }

    /// Reserves `bytes` for the response of a request that runs in a task (the caller checked
    /// that they fit the output cap and, for a large reply, the shard's budget).
    pub(crate) fn reserve(&self, bytes: usize) {
        self.budget.charge(bytes);
        self.reserved.set(self.reserved.get() + bytes);
    }

    /// Gives back a reservation (its response, if any, is counted in `unsent` by now).
    pub(crate) fn unreserve(&self, bytes: usize) {
        self.reserved.set(self.reserved.get() - bytes);
        self.budget.give(bytes);
        self.drained.notify_all();
    }

    /// Resolves once fewer than `bytes` response bytes are committed (or the connection is
    /// killed).
    pub(crate) async fn below(&self, bytes: usize) {
        while self.committed() >= bytes && !self.killed.get() {
            let listener = self.drained.listen();
            if self.committed() < bytes || self.killed.get() {
                return;
            }
            listener.await;
        }
    }

    /// Leaves the waker of the read loop's wait for input, to be woken once `cap` bytes are
    /// unsent or the connection is killed (`read_interrupt.rs`). A waker of the same task is
    /// kept rather than cloned again.
    pub(crate) fn set_read_waker(&self, waker: &Waker, cap: usize) {
        self.read_cap.set(cap);
        let kept = self.read_waker.0.take().filter(|w| w.will_wake(waker));
        self.read_waker.0.set(Some(kept.unwrap_or_else(|| waker.clone())));
    }

    /// Wakes the read loop's wait for input, if one left its waker.
    pub(crate) fn wake_read(&self) {
        self.read_cap.set(usize::MAX);
        if let Some(waker) = self.read_waker.0.take() {
            waker.wake();
        }
    }

    /// Drops the read loop's waker: the loop has ended, and the waker refers to the task that
    /// holds this output.
    pub(crate) fn forget_read_waker(&self) {
        self.read_cap.set(usize::MAX);
        drop(self.read_waker.0.take());
    }

    pub(crate) fn kill(&self) {
        self.killed.set(true);
        self.wake_read();
        self.ready.notify_all();
        self.finished.notify_all();
        self.drained.notify_all();
    }

    pub(crate) async fn wait_ready(&self) {
        let listener = self.ready.listen();
        if !self.pending.borrow().is_empty() || self.done.get() || self.killed.get() {
            return;
        }
        listener.await;
    }

    pub(crate) async fn all_finished(&self) {
        while self.inflight.get() > 0 && !self.killed.get() {
            let listener = self.finished.listen();
            if self.inflight.get() == 0 || self.killed.get() {
                return;
            }
            listener.await;
        }
    }

    /// Queues a finished request's response and gives back its slot and buffer.
    pub(crate) fn finish(&self, buffers: &BufPool, frame: Vec<u8>, slot: InflightSlot) {
        self.push(&frame);
        buffers.give(frame);
        drop(slot);
        self.inflight.set(self.inflight.get() - 1);
        self.finished.notify_all();
    }

    /// Hands the pending responses to the socket now with one non-blocking `send`, unless the
    /// writer task is writing (it then takes them after its batch). Whatever the socket does not
    /// take at once is left to the writer task, which waits for the socket to take more. The
    /// read loop calls this once per read batch, the acknowledger once per flush.
    pub(crate) fn flush_now(&self, counters: &Counters) {
        if self.writing.get() || self.killed.get() {
            return;
        }
        let mut pending = self.pending.borrow_mut();
        if pending.is_empty() {
            return;
        }
        match send_now(self.fd, &pending) {
            Ok(n) => {
                Counters::add(&counters.bytes_out, n as u64);
                pending.drain(..n);
                self.sub_unsent(n);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => {
                drop(pending);
                self.kill();
                return;
            }
        }
        if pending.is_empty() {
            if pending.capacity() > WRITE_CHUNK_BYTES {
                *pending = Vec::new();
            }
        } else {
            drop(pending);
            self.ready.notify_all();
        }
    }
}

impl Drop for Output {
    /// Gives back to the shard's budget whatever a closed connection still counted.
    fn drop(&mut self) {
        self.budget.give(self.unsent.get() + self.reserved.get());
    }
}

/// One non-blocking `send` of `bytes`; how many the socket took.
fn send_now(fd: RawFd, bytes: &[u8]) -> std::io::Result<usize> {
    let len = bytes.len().min(WRITE_CHUNK_BYTES);
    // SAFETY: `bytes` is valid for reads of `len` bytes for the duration of the call, and `fd`
    // is the connection's socket, open for as long as the connection is served.
    let n = unsafe {
        libc::send(fd, bytes.as_ptr().cast(), len, libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL)
    };
    if n < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    //! The output's accounting (queued and reserved bytes, the shard's budget), its direct
    //! sends, and the waits on it, over a Unix socket pair instead of a TCP connection.

    use std::io::Read;
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use futures_lite::future::{block_on, poll_once};

    use super::*;

    fn output() -> (Output, UnixStream, UnixStream, Rc<BufferBudget>) {
        let (ours, peer) = UnixStream::pair().expect("socket pair");
        let budget = BufferBudget::new(1 << 20);
        (Output::new(ours.as_raw_fd(), budget.clone()), ours, peer, budget)
    }

    #[test]
    fn queued_and_reserved_bytes_count_against_the_cap_and_the_budget() {
        let (out, _ours, _peer, budget) = output();
        out.push(b"frame-1");
        out.reserve(4096);
        assert_eq!(out.committed(), 7 + 4096);
        assert_eq!(budget.used(), 7 + 4096);
        out.unreserve(4096);
        assert_eq!((out.committed(), budget.used()), (7, 7));
        out.reserve(100);
        drop(out);
        assert_eq!(budget.used(), 0, "a closed connection gives back what it still counted");
    }

    #[test]
    fn a_direct_send_delivers_the_pending_frames_in_order_and_frees_their_bytes() {
        let (out, _ours, mut peer, budget) = output();
        let counters = Counters::default();
        out.push(b"first ");
        out.push(b"second");
        out.writing.set(true);
        out.flush_now(&counters);
        assert_eq!(out.committed(), 12, "nothing is sent while the writer task holds a batch");
        out.writing.set(false);
        out.flush_now(&counters);
        assert_eq!((out.committed(), budget.used(), counters.bytes_out.get()), (0, 0, 12));
        let mut got = [0u8; 12];
        peer.read_exact(&mut got).expect("read the frames");
        assert_eq!(&got, b"first second");
    }

    #[test]
    fn a_killed_output_takes_no_more_frames_and_a_failed_send_kills_it() {
        let (out, _ours, peer, _budget) = output();
        drop(peer);
        out.push(b"lost");
        out.flush_now(&Counters::default());
        assert!(out.killed.get(), "a send to a closed peer kills the output");
        out.push(b"more");
        assert_eq!(out.pending.borrow().len(), 4, "nothing is queued after the kill");
        assert!(block_on(poll_once(out.below(1))).is_some(), "a killed output never blocks");
    }

    #[test]
    fn waits_end_when_the_bytes_cross_their_mark() {
        let (out, _ours, _peer, _budget) = output();
        out.reserve(1000);
        let mut below = Box::pin(out.below(500));
        assert!(block_on(poll_once(&mut below)).is_none(), "1,000 bytes are not below 500");
        out.unreserve(1000);
        assert!(block_on(poll_once(&mut below)).is_some(), "woken by the unreserve");
    }
}
