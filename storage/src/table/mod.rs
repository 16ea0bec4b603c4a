//! The table model (issue 3): schemas, typed values and the order-preserving key encoding.
//!
//! The storage engine stores byte-string keys and values; this module gives them a table model.
//! A [`TableSchema`] (built and checked by [`TableSchemaBuilder`]) names typed fields and a
//! primary key with a shard key prefix. [`key`] turns key [`Value`]s into memcomparable byte keys
//! (and back), partial keys and ranges into byte prefixes and byte ranges, and [`partition`] maps a
//! shard key to its partition. Every bad input is a [`TableError`] with a stable code; every limit
//! is in [`limits`]. `docs/FORMAT.md` ("Table keys") describes the bytes.

pub mod catalog;
pub mod error;
pub mod key;
pub mod limits;
pub mod name;
pub mod partition;
pub mod row;
pub mod schema;
pub mod types;
pub mod value;

pub use error::{NameRole, TableError, TableResult};
pub use key::{
    decode_primary_key, encode_partial_key, encode_partial_key_named, encode_primary_key,
    encode_primary_key_named, encode_shard_key, key_range, prefix_successor, shard_key_prefix_len,
    table_prefix, FieldRange, KeyByteRange, RangeBound,
};
pub use name::{Name, NameProblem};
pub use partition::{
    partition_hash, partition_of, partition_of_stored_key, partition_of_values, PartitionCount,
    PARTITION_HASH_SEED,
};
pub use schema::{Field, KeyField, TableId, TableOptions, TableSchema, TableSchemaBuilder};
pub use types::FieldType;
pub use value::Value;
