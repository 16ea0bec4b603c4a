//! The primitives the node's cross-thread state is built on: the shutdown barrier
//! ([`crate::shutdown`]) and the node-wide connection cap ([`crate::connection_cap`]).
//!
//! Those files name their atomics, `Arc` and `Event` through this module only, so that the loom
//! models (`node/tests/loom_models.rs`) can compile the very same source files against loom's
//! versions (and a loom model of `event-listener`'s `Event`) and check every interleaving of
//! their threads. docs/RELIABILITY.md ("Concurrency models") says what each model covers.
//!
//! Shard-local state (everything behind a shard's `Rc`) never crosses threads and is not here.

pub use event_listener::Event;
pub use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
pub use std::sync::Arc;

/// What the unit tests of those files run on: plain threads here, loom's in the models.
#[cfg(test)]
pub mod testing {
    pub use futures_lite::future::block_on;
    pub use std::thread;

    /// Runs `f` once (the loom models run it under every interleaving).
    pub fn model(f: impl Fn() + Sync + Send + 'static) {
        f()
    }
}
