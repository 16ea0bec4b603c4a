//! Commands on one key run in the order they arrived on its owner, even when one must wait for
//! a disk read. A command that finds its key's row in memory runs at once (`resp_exec.rs`); one
//! that must read the row from disk takes a [`Ticket`] for its key, and every later command on
//! that key, from any connection, queues behind it until it is done. Without this a cold
//! `APPEND k x` followed by `GET k` could let the GET read the disk first and miss the append,
//! which Redis (one command after another) never shows.
//!
//! The queue of a key exists only while a command on it waits, so the inline path pays one
//! `is_empty` check when no key is waiting, and one hash lookup otherwise.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};

thread_local! {
    /// The keys with a command waiting, each with its tickets in arrival order (one shard per
    /// thread, so this is the shard's).
    static WAITING: RefCell<HashMap<Vec<u8>, Queue>> = RefCell::new(HashMap::new());
}

/// One key's tickets.
#[derive(Debug, Default)]
struct Queue {
    next: u64,
    /// Live tickets, oldest first: the front one has the key's turn.
    live: VecDeque<u64>,
    /// Woken when the front changes.
    turn: std::rc::Rc<event_listener::Event>,
}

/// A place in a key's queue; gives it up when dropped (done, or its task cancelled).
#[derive(Debug)]
pub struct Ticket {
    key: Vec<u8>,
    number: u64,
}

/// Whether a command on `key` must queue behind one already waiting.
pub fn is_waiting(key: &[u8]) -> bool {
    WAITING.with_borrow(|w| !w.is_empty() && w.contains_key(key))
}

/// A ticket at the end of `key`'s queue (the queue is made if there is none: the ticket then
/// has the turn at once).
pub fn take(key: &[u8]) -> Ticket {
    WAITING.with_borrow_mut(|w| {
        let q = w.entry(key.to_vec()).or_default();
        let number = q.next;
        q.next += 1;
        q.live.push_back(number);
        Ticket { key: key.to_vec(), number }
    })
}

impl Ticket {
    /// Waits until this ticket is at the front of its key's queue.
    pub async fn turn(&self) {
        loop {
            let (front, turn) = WAITING.with_borrow(|w| {
                let q = &w[&self.key];
                (q.live.front() == Some(&self.number), q.turn.clone())
            });
            if front {
                return;
            }
            let listener = turn.listen();
            if WAITING.with_borrow(|w| w[&self.key].live.front() == Some(&self.number)) {
                return;
            }
            listener.await;
        }
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        WAITING.with_borrow_mut(|w| {
            let Some(q) = w.get_mut(&self.key) else { return };
            q.live.retain(|n| *n != self.number);
            q.turn.notify(usize::MAX);
            if q.live.is_empty() {
                w.remove(&self.key);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::future::{block_on, poll_once};

    #[test]
    fn tickets_take_turns_in_order_and_a_dropped_one_passes_its_turn_on() {
        assert!(!is_waiting(b"k"));
        let first = take(b"k");
        assert!(is_waiting(b"k") && !is_waiting(b"other"));
        let second = take(b"k");
        let third = take(b"k");
        assert!(block_on(poll_once(first.turn())).is_some(), "the first has the turn");
        let mut waiting = Box::pin(third.turn());
        assert!(block_on(poll_once(&mut waiting)).is_none());
        drop(second); // cancelled while waiting: skipped
        assert!(block_on(poll_once(&mut waiting)).is_none(), "still behind the first");
        drop(first);
        assert!(block_on(poll_once(&mut waiting)).is_some(), "woken, and at the front");
        drop(waiting);
        drop(third);
        assert!(!is_waiting(b"k"), "the queue goes with its last ticket");
    }
}
