//! The layer above's say in what compaction keeps: a [`CompactionFilter`] installed on the store
//! (`Store::set_compaction_filter`) sees every live put that compaction copies and may drop it or
//! shorten its value (`compaction.rs` asks it; `table/purge.rs` is the table layer's filter).
//!
//! It is its own module, depending on nothing else in the crate, because the store's shared
//! state (`state.rs`) holds the installed filter and compaction is built on that state: with the
//! trait inside `compaction.rs` the state would depend on compaction and close a cycle.

/// What a [`CompactionFilter`] decides for one live record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterDecision {
    /// Copy the record as it is.
    Keep,
    /// The record is dead to the layer above: drop it and its index entry.
    Drop,
    /// Copy the record with this value instead. The new value must mean the same to every reader
    /// at this time and later (only content that can never be read again may go), and keep the
    /// record's version and expiry, which the index keeps.
    Rewrite(Vec<u8>),
}

/// Lets the layer above the store purge what only it knows is dead, during compaction. Called
/// with the store's state borrowed: it must not call back into the store.
pub trait CompactionFilter {
    fn filter(&self, key: &[u8], value: &[u8], now_ms: u64) -> FilterDecision;
}
