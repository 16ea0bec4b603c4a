//! The requests and results of the typed table operations ([`super::TableStore`]), the API the
//! node exposes over the protocol.
//!
//! Keys and rows are given as `(field name, value)` pairs in any order; the table layer puts them
//! in primary key order and reports a missing, unknown, repeated or mistyped field by name. Rows
//! come back with one slot per schema field, in schema order.

use crate::table::key::FieldRange;
use crate::table::schema::TableSchema;
use crate::table::value::Value;
use crate::Durability;

/// A key or a row: `(field name, value)` pairs in any order.
pub type Fields<'a> = &'a [(&'a str, Value)];

/// The fields an update sets (`Some`) or clears (`None`).
pub type Updates<'a> = &'a [(&'a str, Option<Value>)];

/// An opaque row version token: every write of a row gives the row a new one, and
/// [`Condition::IfVersion`] compares against it. Tokens of one shard are unique across restarts
/// as long as the clock does not go back (see `token.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RowToken(pub u64);

/// Which versions of a row a read returns (only unexpired versions are ever returned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum VersionSelect {
    /// The newest version.
    #[default]
    Newest,
    /// Up to this many versions, newest first (at least 1).
    Latest(u32),
    /// Versions in `[from, to)` (ms since the epoch), newest first, at most `max` of them.
    Range { from: u64, to: u64, max: u32 },
}

impl VersionSelect {
    /// The versions `[from, to)` this selection accepts and the most it returns.
    pub fn bounds(self) -> ((u64, u64), usize) {
        match self {
            VersionSelect::Newest => ((0, u64::MAX), 1),
            VersionSelect::Latest(n) => ((0, u64::MAX), n as usize),
            VersionSelect::Range { from, to, max } => ((from, to), max as usize),
        }
    }
}

/// The condition of a write, checked against the row's newest unexpired version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Condition {
    /// Always write.
    #[default]
    Always,
    /// Write only if the row does not exist (putIfAbsent).
    IfAbsent,
    /// Write only if the row exists (putIfPresent).
    IfPresent,
    /// Write only if the row exists with this token (putIfVersion, deleteIfVersion).
    IfVersion(RowToken),
}

/// What a write does to its row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WriteKind<'a> {
    /// Insert or replace the row: `row` holds every key field and any non-key fields (the others
    /// become absent).
    Put { row: Fields<'a> },
    /// Set or clear some non-key fields of the newest version, writing a new version; creates the
    /// row if it does not exist.
    Update { key: Fields<'a>, set: Updates<'a> },
    /// Delete the row (every version).
    Delete { key: Fields<'a> },
}

/// One write: what, under which condition, with which version and TTL.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WriteOp<'a> {
    pub kind: WriteKind<'a>,
    pub condition: Condition,
    /// The version to write (ms since the epoch); the shard's clock if None. A client version
    /// must lie in `[now - max_version_offset, now + max_version_offset)`.
    pub version: Option<u64>,
    /// This row's TTL in seconds, overriding the table's; None uses the table's (if any).
    pub ttl_seconds: Option<u64>,
    /// On a failed condition, also return the current row.
    pub return_row: bool,
}

impl<'a> WriteOp<'a> {
    pub fn put(row: Fields<'a>) -> WriteOp<'a> {
        WriteOp::new(WriteKind::Put { row })
    }

    pub fn update(key: Fields<'a>, set: Updates<'a>) -> WriteOp<'a> {
        WriteOp::new(WriteKind::Update { key, set })
    }

    pub fn delete(key: Fields<'a>) -> WriteOp<'a> {
        WriteOp::new(WriteKind::Delete { key })
    }

    fn new(kind: WriteKind<'a>) -> WriteOp<'a> {
        WriteOp {
            kind,
            condition: Condition::Always,
            version: None,
            ttl_seconds: None,
            return_row: false,
        }
    }

    pub fn condition(mut self, condition: Condition) -> WriteOp<'a> {
        self.condition = condition;
        self
    }

    pub fn version(mut self, version: u64) -> WriteOp<'a> {
        self.version = Some(version);
        self
    }

    pub fn ttl_seconds(mut self, seconds: u64) -> WriteOp<'a> {
        self.ttl_seconds = Some(seconds);
        self
    }

    pub fn return_row(mut self) -> WriteOp<'a> {
        self.return_row = true;
        self
    }
}

/// One version of a row as a read returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct RowVersion {
    pub version: u64,
    /// When this version expires, in ms since the epoch; 0 means never.
    pub expiry_ms: u64,
    /// One slot per schema field, in schema order (key fields included); None is absent.
    pub fields: Vec<Option<Value>>,
}

impl RowVersion {
    /// The value of field `name`, if the schema has it and the row has a value for it.
    pub fn get<'v>(&'v self, schema: &TableSchema, name: &str) -> Option<&'v Value> {
        schema.field(name).and_then(|(i, _)| self.fields.get(i)?.as_ref())
    }
}

/// A row as a read returns it: its token and the selected versions, newest first (never empty).
#[derive(Debug, Clone, PartialEq)]
pub struct TableRow {
    pub token: RowToken,
    pub versions: Vec<RowVersion>,
    /// The stored key, which is also the resume token of a page that ends at this row.
    pub key: Vec<u8>,
}

impl TableRow {
    pub fn newest(&self) -> &RowVersion {
        &self.versions[0]
    }
}

/// The row as it was when a condition failed.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentRow {
    pub token: RowToken,
    /// The newest version.
    pub version: u64,
    /// The row's newest version, when the write asked for it ([`WriteOp::return_row`]).
    pub row: Option<TableRow>,
}

/// What a write did. A failed condition is an outcome, not an error.
#[derive(Debug, Clone, PartialEq)]
pub enum WriteOutcome {
    /// A put or update wrote the row; its new token and the version written.
    Written { token: RowToken, version: u64 },
    /// A delete ran; whether the row existed (unexpired) before.
    Deleted { existed: bool },
    /// The condition did not hold; nothing was written. `current` is None when the row does not
    /// exist.
    ConditionFailed { current: Option<CurrentRow> },
}

/// A read or delete of the rows under a partial key.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeRequest<'a> {
    /// A leading prefix of the primary key (by name). multiGet and multiDelete need it to cover
    /// the shard key; a scan may give fewer fields, and none if it has a range on the first key
    /// field or allows a full scan ([`RangeRequest::bounds_first_key_field`]).
    pub key: Fields<'a>,
    /// A range on the key field after `key`.
    pub range: Option<FieldRange>,
    /// Key order, or reverse key order.
    pub reverse: bool,
    /// Most rows in one page (1..=[`crate::constants::SCAN_LIMIT_MAX`] for reads,
    /// 1..=[`crate::constants::BATCH_OPS_MAX`] for multiDelete).
    pub limit: usize,
    /// The `resume` of the previous page.
    pub resume: Option<Vec<u8>>,
    /// Which versions of each row to return (reads only).
    pub versions: VersionSelect,
    /// Scans only: run even if nothing bounds the first key field (the whole table is read).
    pub allow_full_scan: bool,
}

/// Whether a read that gives `key_values` leading key values and `range` on the key field after
/// them bounds the first key field: it gives a value for it, or a range on it with a start or an
/// end. A scan that does not reads the whole table, so it needs `allow_full_scan` (217); one that
/// does is a bounded scan, which the node runs on every shard and merges in key order. The one
/// statement of the rule: [`RangeRequest::bounds_first_key_field`] and clients that plan a read
/// before they send it (`ringstore-cli`) both ask it.
pub fn bounds_first_key_field(key_values: usize, range: Option<&FieldRange>) -> bool {
    key_values > 0 || range.is_some_and(|r| r.start.is_some() || r.end.is_some())
}

impl<'a> RangeRequest<'a> {
    /// Whether the request bounds the first key field ([`bounds_first_key_field`]).
    pub fn bounds_first_key_field(&self) -> bool {
        bounds_first_key_field(self.key.len(), self.range.as_ref())
    }

    /// Every row under `key`, forward, `limit` per page, newest versions.
    pub fn new(key: Fields<'a>, limit: usize) -> RangeRequest<'a> {
        RangeRequest {
            key,
            range: None,
            reverse: false,
            limit,
            resume: None,
            versions: VersionSelect::Newest,
            allow_full_scan: false,
        }
    }
}

/// One page of rows; `resume` is Some when more rows may follow.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowPage {
    pub rows: Vec<TableRow>,
    pub resume: Option<Vec<u8>>,
}

/// What a multiDelete did: the rows it deleted, all in one atomic step (one range tombstone).
/// `resume` is always None from this build (a multiDelete deletes its whole range); the field
/// stays so the protocol's reply keeps its shape.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MultiDeleteOutcome {
    pub deleted: usize,
    pub resume: Option<Vec<u8>>,
}

/// Options of an execute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ExecuteOptions {
    pub durability: Durability,
    /// Write nothing if any condition fails (else the operations whose condition holds are
    /// written, atomically, and the others report their failure).
    pub abort_on_failure: bool,
}

/// What an execute did.
#[derive(Debug, Clone, PartialEq)]
pub enum ExecuteOutcome {
    /// One outcome per operation, in order; everything that was written was written atomically.
    Done(Vec<WriteOutcome>),
    /// `abort_on_failure` was set and operation `index` failed its condition; nothing was
    /// written.
    Aborted { index: usize, outcome: WriteOutcome },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::key::RangeBound;

    /// A value for the first key field, or a range on it with an end, bounds it; an open range
    /// or nothing does not (then a scan needs allow_full_scan).
    #[test]
    fn what_bounds_the_first_key_field() {
        let end = |inclusive| Some(RangeBound { value: Value::Long(1), inclusive });
        let open = FieldRange::default();
        let from = FieldRange { start: end(true), end: None };
        let to = FieldRange { start: None, end: end(false) };
        assert!(!bounds_first_key_field(0, None));
        assert!(!bounds_first_key_field(0, Some(&open)));
        assert!(bounds_first_key_field(0, Some(&from)));
        assert!(bounds_first_key_field(0, Some(&to)));
        assert!(bounds_first_key_field(1, None));
        assert!(bounds_first_key_field(1, Some(&open)));
        let key = [("a", Value::Long(1))];
        let mut req = RangeRequest::new(&key, 10);
        assert!(req.bounds_first_key_field());
        req.key = &[];
        assert!(!req.bounds_first_key_field());
        req.range = Some(to);
        assert!(req.bounds_first_key_field());
    }
}
