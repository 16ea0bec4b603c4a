//! A query on a secondary index (issue 15): equal values for a leading prefix of the index
//! fields and an optional range on the next one, in index order forward or reverse, a page at a
//! time, with rows or keys only; and what it returns.
//!
//! The query becomes one byte range of index entries (`key/index.rs`, [`index_key_range`]), so a
//! page is one store scan over it; the resume token is the last entry key returned.
//!
//! [`index_key_range`]: super::key::index_key_range

use super::key::FieldRange;
use super::request::TableRow;
use super::value::Value;

/// One page of an index query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexQuery {
    /// Values of the first index fields, in index order; None asks for NULL.
    pub equal: Vec<Option<Value>>,
    /// A range on the index field after `equal` (NULL is never in a range).
    pub range: Option<FieldRange>,
    /// Highest entries first.
    pub reverse: bool,
    /// Entries per page, 1..=`SCAN_LIMIT_MAX`.
    pub limit: usize,
    /// Continue after this entry key (the `resume` of the previous page).
    pub resume: Option<Vec<u8>>,
    /// Return the index values and primary keys without reading the rows.
    pub keys_only: bool,
}

/// One entry a query found.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexHit {
    /// The entry's key, which orders hits across shards (all shards encode alike).
    pub entry: Vec<u8>,
    /// The indexed values, in index order; None for NULL.
    pub values: Vec<Option<Value>>,
    /// The row's stored key.
    pub row_key: Vec<u8>,
    /// The row (its newest version), unless the query was keys-only.
    pub row: Option<TableRow>,
}

/// A page of an index query; `resume` is Some when more entries may follow.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IndexPage {
    pub hits: Vec<IndexHit>,
    pub resume: Option<Vec<u8>>,
}
