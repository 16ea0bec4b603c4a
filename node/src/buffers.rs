//! A shard's pool of byte buffers for request bodies and response frames, so that a request in
//! steady state allocates none: a request's body is copied out of the connection's read buffer
//! into a pooled buffer (its task outlives the read buffer's contents), its response frame is
//! built in another, and both come back here once the frame is queued on the connection.

use std::cell::RefCell;

/// Most buffers the pool keeps.
pub const POOLED_BUFFERS_MAX: usize = 1024;
/// Buffers that grew past this (a large row) are freed instead of kept.
pub const POOLED_BUFFER_BYTES_MAX: usize = 64 * 1024;
/// Capacity of a new buffer: enough for a typical request or response.
pub const POOLED_BUFFER_BYTES_START: usize = 512;

#[derive(Debug, Default)]
pub struct BufPool {
    free: RefCell<Vec<Vec<u8>>>,
}

impl BufPool {
    /// An empty buffer, reused if the pool has one.
    pub fn take(&self) -> Vec<u8> {
        self.free
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(POOLED_BUFFER_BYTES_START))
    }

    /// Returns a buffer to the pool (dropped if the pool is full or the buffer is large).
    pub fn give(&self, mut buf: Vec<u8>) {
        let mut free = self.free.borrow_mut();
        if free.len() < POOLED_BUFFERS_MAX && buf.capacity() <= POOLED_BUFFER_BYTES_MAX {
            buf.clear();
            free.push(buf);
        }
    }

    pub fn len(&self) -> usize {
        self.free.borrow().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_cleared_and_bounded() {
        let pool = BufPool::default();
        let mut a = pool.take();
        a.extend_from_slice(b"request");
        let ptr = a.as_ptr();
        pool.give(a);
        let b = pool.take();
        assert!(b.is_empty());
        assert_eq!(b.as_ptr(), ptr, "the same allocation comes back");
        pool.give(Vec::with_capacity(POOLED_BUFFER_BYTES_MAX + 1));
        assert!(pool.is_empty(), "a large buffer is not kept");
        for _ in 0..POOLED_BUFFERS_MAX + 5 {
            pool.give(Vec::with_capacity(16));
        }
        assert_eq!(pool.len(), POOLED_BUFFERS_MAX);
    }
}
