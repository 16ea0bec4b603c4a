//! ringstore-storage: one shard's log-structured store.
//!
//! A [`Store`] lives on one glommio executor. Writes are appended to segment files through
//! group commit ([`log`]), indexed in memory ([`index`]), read through a bounded record cache
//! ([`cache`]), compacted in the background ([`compaction`]) and recovered from a checkpoint
//! ([`checkpoint`]) plus log replay ([`recovery`]). Files are reached only through the [`disk`]
//! seam, so the same code runs on the simulated disk in tests.

pub mod cache;
pub mod checkpoint;
pub mod clock;
pub mod compaction;
pub mod compaction_filter;
pub mod conditional;
pub mod config;
pub mod constants;
pub mod ddl;
pub mod disk;
pub mod error;
pub mod index;
pub mod log;
pub mod read;
pub mod record;
pub mod recovery;
pub mod segments;
mod state;
pub mod stats;
pub mod store;
pub mod table;
pub mod warmup;

pub use clock::{Clock, ManualClock, SystemClock};
pub use conditional::{DeleteRangeReport, Stamp};
pub use config::StoreConfig;
pub use error::{Error, Result};
pub use log::group_commit::{Durability, DurableWait};
pub use read::{KeyRange, Row, ScanPage, ScanRequest};
pub use stats::StoreStats;
pub use store::{Appended, BatchOp, Store, Value, WriteOptions, WriteReceipt};
