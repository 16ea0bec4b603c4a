//! The table model (issue 3): schemas, typed values and the order-preserving key encoding.
//!
//! The storage engine stores byte-string keys and values; this module gives them a table model.
//! A [`TableSchema`] (built and checked by [`TableSchemaBuilder`]) names typed fields and a
//! primary key with a shard key prefix. [`key`] turns key [`Value`]s into memcomparable byte keys
//! (and back), partial keys and ranges into byte prefixes and byte ranges, and [`partition`] maps a
//! shard key to its partition, [`row`] encodes the non-key fields (schema-versioned, append-only
//! evolution), [`stored_row`] keeps a row's versions together, [`request`] holds the operations'
//! request and outcome types, and [`catalog`] holds the set of schemas, its file codec and what a
//! DDL statement does to it, and [`index_def`] the secondary indexes it keeps with each table
//! (their entries' keys are [`key`]'s too). Every bad input is a [`TableError`] (or
//! [`CatalogError`]) with a stable code; every limit is in [`limits`]. `docs/FORMAT.md` ("Table keys", "Catalog file",
//! "Row values") describes the bytes.

pub mod catalog;
pub mod error;
pub mod index_def;
pub mod index_query;
pub mod key;
pub mod limits;
pub mod name;
pub mod partition;
pub mod request;
pub mod row;
pub mod schema;
pub mod stored_row;
pub mod token;
pub mod types;
pub mod value;

pub use catalog::{
    decode_table_record, encode_table_record, Catalog, CatalogError, CatalogResult, CatalogTable,
    Outcome, Plan,
};
pub use error::{NameRole, TableError, TableResult, SHOWN_NAME_CHARS, WHOLE_KEY_SHARD_HINT};
pub use index_def::{is_indexable, IndexDef, IndexId, IndexState};
pub use index_query::{IndexHit, IndexPage, IndexQuery};
pub use key::{decode_index_entry, encode_index_entry, index_key_range, index_prefix, IndexEntry};
pub use key::{
    decode_primary_key, encode_partial_key, encode_partial_key_named, encode_primary_key,
    encode_primary_key_fields, encode_primary_key_into, encode_primary_key_named,
    encode_primary_key_refs, encode_shard_key, key_range, partial_key_values, prefix_successor,
    primary_key_refs, primary_key_values, shard_key_prefix_len, table_prefix, FieldRange,
    KeyByteRange, RangeBound,
};
pub use name::{Name, NameProblem};
pub use partition::{
    partition_hash, partition_of, partition_of_stored_key, partition_of_values, PartitionCount,
    PARTITION_HASH_SEED,
};
pub use request::{
    bounds_first_key_field, Condition, CurrentRow, ExecuteOptions, ExecuteOutcome, Fields,
    MultiDeleteOutcome, RangeRequest, RowPage, RowToken, RowVersion, TableRow, Updates,
    VersionSelect, WriteKind, WriteOp, WriteOutcome,
};
pub use row::{
    decode_row, decode_row_into, encode_row, encode_row_fields, merge_row, non_key_fields,
    split_row, visit_row, DecodedRow, FieldRef,
};
pub use schema::{
    Field, FieldRole, KeyField, TableId, TableOptions, TableSchema, TableSchemaBuilder,
};
pub use stored_row::{for_each_version, StoredVersion};
pub use types::FieldType;
pub use value::{Value, ValueRef};
