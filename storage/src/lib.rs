//! ringstore-storage: one shard's log-structured store, and the table store on it.
//!
//! A [`Store`] lives on one glommio executor. Writes are appended to segment files through
//! group commit ([`log`]), indexed in memory ([`index`]), read through a bounded record cache,
//! compacted in the background and recovered from a checkpoint ([`checkpoint`]) plus log replay
//! ([`recovery`]). Files are reached only through the [`disk`] seam, so the same code runs on the
//! simulated disk in tests. [`table::TableStore`] runs the table operations on a store; the pure
//! table model and the DDL parser come from `ringstore-model` and are re-exported as [`table`]
//! and [`ddl`].
//!
//! The crate exports the store and what its callers name: the modules above (the tools and the
//! tests read segment files, records and checkpoints through them), [`constants`], [`stats`], and
//! the types of the store's API at the root. Everything else is private; every type the API
//! hands out can be named (`unnameable_types` is an error here).
#![warn(unnameable_types)]

mod batch_prefetch;
mod cache;
pub mod checkpoint;
mod clock;
mod compaction;
mod compaction_filter;
mod conditional;
mod config;
pub mod constants;
mod deferred_puts;
pub mod disk;
mod error;
pub mod huge_pages;
pub mod index;
pub mod log;
mod maintenance_step;
mod prefetch;
mod range_delete;
mod read;
pub mod record;
pub mod recovery;
mod segments;
mod state;
pub mod stats;
mod store;
pub mod table;
mod warmup;

pub use ringstore_model::ddl;

pub use batch_prefetch::{Upcoming, PREFETCH_BATCH_KEYS_MAX};
pub use cache::CacheStats;
pub use clock::{Clock, ManualClock, SystemClock};
pub use compaction::CompactionReport;
pub use compaction_filter::{CompactionFilter, FilterDecision};
pub use conditional::{DeleteRangeReport, Stamp};
pub use config::StoreConfig;
pub use error::{Error, Result};
pub use log::group_commit::{Durability, DurableWait};
pub use read::{KeyRange, ReadNow, Row, ScanPage, ScanRequest, ValueView};
pub use stats::StoreStats;
pub use store::{Appended, BatchOp, Store, Value, WriteOptions, WriteReceipt};
pub use warmup::WarmupReport;
