//! The decode error of the key encoding's parts: where and why a stored key failed to decode.
//! `escape.rs`, `field.rs` and `key.rs` all produce it; `key.rs` turns it into
//! `TableError::CorruptKey`. Its own module so the parts depend on it and not on each other.

/// Where and why a stored key failed to decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Corrupt {
    pub offset: usize,
    pub what: &'static str,
}
