//! ringstore-storage: one shard's log-structured store.
//!
//! A [`Store`] lives on one glommio executor. Writes are appended to segment files through
//! group commit ([`log`]), indexed in memory ([`index`]), read through a bounded record cache
//! ([`cache`]), compacted in the background ([`compaction`]) and recovered from a checkpoint plus
//! log replay ([`recovery`]). Files are reached only through the [`disk`] seam.

pub mod constants;
pub mod disk;
pub mod error;
pub mod index;
pub mod record;

pub use error::{Error, Result};
