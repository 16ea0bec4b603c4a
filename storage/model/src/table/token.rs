//! Row version tokens: unique per shard, without storing a counter.
//!
//! A token is `max(previous + 1, now_ms << TOKEN_COUNTER_BITS)`: the clock in the high bits and a
//! counter in the low bits, like a hybrid logical clock. Within one run tokens strictly increase.
//! After a restart the first token starts from the clock again, which is above every token of the
//! previous run unless that run issued more than 2^16 tokens per millisecond on average over its
//! lead (far beyond a shard's write rate) or the clock went back. A row's token is stored in its
//! record (`stored_row.rs`), so it survives restarts.

use std::cell::Cell;

use super::request::RowToken;

/// Low bits of a token that count writes within one millisecond.
pub const TOKEN_COUNTER_BITS: u32 = 16;

/// Issues tokens for one shard.
#[derive(Debug, Default)]
pub struct TokenSource {
    last: Cell<u64>,
}

impl TokenSource {
    pub fn next(&self, now_ms: u64) -> RowToken {
        let token = (self.last.get() + 1).max(now_ms << TOKEN_COUNTER_BITS);
        self.last.set(token);
        RowToken(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_increase_and_follow_the_clock() {
        let s = TokenSource::default();
        let a = s.next(10);
        let b = s.next(10);
        assert!(b > a);
        assert_eq!(s.next(11), RowToken(11 << TOKEN_COUNTER_BITS));
        // A clock that goes back does not make tokens go back.
        assert!(s.next(5) > RowToken(11 << TOKEN_COUNTER_BITS));
        // A restart (a new source) starts above the old run's tokens once time has moved on.
        assert!(TokenSource::default().next(12) > s.next(11));
    }
}
