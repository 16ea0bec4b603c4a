//! The table model on the store (issue 3): a shard's tables, their catalog file, and the typed
//! operations that turn rows into the store's keys and values.
//!
//! The pure model (schemas, values, key and row codecs, the partition hash, request types, the
//! catalog's contents and DDL plan) lives in `ringstore-model` and is re-exported here, so the
//! engine and the node name it as `table::...`. This crate adds what needs the store or the
//! disk: [`TableStore`] runs the operations on one shard's [`crate::Store`], [`catalog_file`]
//! keeps the catalog durable, [`partition_map`] records which shard owns which partition, and
//! [`OpError`] is the operations' one error type. `docs/FORMAT.md` ("Table keys", "Catalog file",
//! "Row values") describes the bytes.

pub use ringstore_model::table::*;

mod atomic_file;
pub mod catalog_file;
mod index_repair;
mod index_scan;
mod index_work;
pub mod op_error;
pub mod partition_map;
mod purge;
mod put_now;
mod range_ops;
mod secondary_index;
pub mod table_store;
mod tables;
mod write_plan;

pub use catalog_file::{CATALOG_FILE, CATALOG_TMP_FILE};
pub use index_work::{
    IndexWorkStats, INDEX_BUILD_PAGE_ROUNDS_MAX, INDEX_BUILD_PAGE_ROWS, INDEX_BUILD_RETRY_FIRST,
    INDEX_BUILD_RETRY_MAX,
};
pub use op_error::{OpError, OpResult};
pub use partition_map::{PartitionMap, PARTITION_MAP_FILE};
pub use put_now::{PutOptions, PutScratch, RowSlots, INLINE_PUT_SLOTS_MAX};
pub use table_store::{TableStore, WRITE_ATTEMPTS_MAX};
