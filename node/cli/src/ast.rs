//! The parsed form of a statement, shared by the parser's parts: `statement.rs` splits a script
//! and parses each statement by its first word, `dml.rs` the DML statements and `conditions.rs`
//! their WHERE clause; `run.rs` executes the result. Keeping the types here lets each parser
//! part depend on them without depending on the others.

use std::ops::Bound;

use super::literal::Literal;

/// One statement of a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// DDL the server parses, passed verbatim: a SQL `CREATE`, `DROP`, `ALTER`, `TRUNCATE` or
    /// `SHOW` statement (without its `;`), or a whole admin CLI script block.
    Ddl(String),
    /// `UPSERT INTO t (a, b) VALUES (1, 'x'), (2, 'y')`; every row has one literal per column.
    Upsert {
        table: String,
        columns: Vec<String>,
        rows: Vec<Vec<Literal>>,
        /// `USING VERSION v` / `USING TTL n unit`, for every row.
        using: Using,
        /// A trailing `IF ABSENT`, `IF PRESENT` or `IF VERSION token`, for every row.
        condition: WriteCondition,
    },
    Select(Select),
    /// `UPDATE t SET f = v {, f = v} WHERE <the whole primary key> [IF ...]`: sets (or, with
    /// NULL, clears) some non-key fields of one row.
    Update {
        table: String,
        set: Vec<(String, Literal)>,
        key: Vec<(String, Literal)>,
        range: Option<RangeSpec>,
        /// See [`Select::more_range_fields`].
        more_range_fields: Vec<String>,
        using: Using,
        condition: WriteCondition,
    },
    /// `DELETE FROM t WHERE <equalities> [AND <range>]`.
    Delete {
        table: String,
        key: Vec<(String, Literal)>,
        range: Option<RangeSpec>,
        /// See [`Select::more_range_fields`].
        more_range_fields: Vec<String>,
        /// A trailing `IF VERSION token` (a delete of one row by its whole primary key only).
        condition: WriteCondition,
    },
    /// `DESCRIBE t`, `DESC t`, `DESCRIBE TABLE t`.
    Describe {
        table: String,
    },
    /// `STATS` or `SHOW STATS`.
    Stats,
    /// `TOPOLOGY` or `SHOW TOPOLOGY`.
    Topology,
    /// `BEGIN BATCH [ABORT ON FAILURE]; writes; APPLY BATCH`: one execute.
    Batch(Batch),
}

/// The writes of `BEGIN BATCH ... APPLY BATCH`, sent as one execute: they must share one table
/// and one shard key, and are applied all together or (with a failed condition under `ABORT ON
/// FAILURE`) not at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// `ABORT ON FAILURE`: a failed condition writes nothing.
    pub abort_on_failure: bool,
    /// The UPSERT, UPDATE and DELETE statements, each with its number in the script.
    pub writes: Vec<(usize, Statement)>,
}

/// `USING VERSION v` (ms since the epoch: the version to write, Tablestore's client-supplied
/// version) and `USING TTL n unit` (this row's TTL, overriding the table's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Using {
    pub version: Option<u64>,
    pub ttl_seconds: Option<u64>,
}

/// Which versions of each row a SELECT shows (`VERSIONS ...`); without the clause, the newest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Versions {
    /// `VERSIONS n` (`VERSIONS ALL`: the most a table keeps): up to n, newest first.
    Latest(u32),
    /// `VERSIONS [n] FROM a TO b`: the versions in `[a, b)`, newest first, at most `max`.
    Range { from: u64, to: u64, max: u32 },
}

/// `SELECT cols FROM t [WHERE ...] [USING INDEX idx] [ORDER BY f [ASC|DESC]] [LIMIT n]
/// [ALLOW FULL SCAN]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    pub table: String,
    /// None for `*`.
    pub columns: Option<Vec<String>>,
    /// Equalities, in the order written.
    pub key: Vec<(String, Literal)>,
    pub range: Option<RangeSpec>,
    /// Fields other than the range field that have a bound, in the order written. Only one
    /// field may have a range, but the parser has no schema: the runner refuses such a statement
    /// with "not a key field" if one of them is not a key field, and else with "only one field may
    /// have a range", so that the user learns the more basic mistake first.
    pub more_range_fields: Vec<String>,
    /// The field ORDER BY names. With a range it is the range field (checked here); without one
    /// the caller checks it against the schema (the key field after the equalities).
    pub order_by: Option<String>,
    /// ORDER BY ... DESC.
    pub descending: bool,
    pub limit: Option<u64>,
    /// A trailing `ALLOW FULL SCAN`.
    pub allow_full_scan: bool,
    /// `USING INDEX idx`: the WHERE clause is on the fields of secondary index `idx` (equalities
    /// on a leading prefix of them, a range on the next), whose entries give the rows. Without
    /// it the runner may pick an index itself (`run/index_pick.rs`).
    pub using_index: Option<String>,
    /// `VERSIONS ...`: every version shown on its own line, with its version and timestamp.
    pub versions: Option<Versions>,
}

/// A range of one field's values, in value order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSpec {
    pub field: String,
    pub start: Bound<Literal>,
    pub end: Bound<Literal>,
}

/// The condition of a write (Oracle NoSQL's putIfAbsent, putIfPresent, putIfVersion and
/// deleteIfVersion): `IF ABSENT`, `IF PRESENT`, `IF VERSION token`, where the token is what an
/// earlier write of the row printed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteCondition {
    #[default]
    Always,
    IfAbsent,
    IfPresent,
    IfVersion(u64),
}
