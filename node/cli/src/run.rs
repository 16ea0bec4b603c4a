//! Running parsed statements against a node: the half of `ringstore-cli` that talks to the
//! server through the protocol client. `docs/CLI.md` is the user's reference.
//!
//! A [`Session`] holds a [`Client`], the output [`Format`] and the schemas of the tables it has
//! used (learnt with Describe, forgotten after every DDL statement and after a server error about
//! the table). Before anything is sent, a statement is checked against its table's schema:
//! literals are typed by their field ([`super::to_value`]), the WHERE equalities are put into
//! primary key order and must be a leading prefix of it ([`key_plan`]), a range must be on the key
//! field after them, and ORDER BY must name that field ([`reverse_order`]). Then:
//!
//! | statement | requests |
//! |---|---|
//! | `UPSERT` | every row is typed first (a bad literal writes nothing), then one put per row |
//! | `BEGIN BATCH ... APPLY BATCH` | every operation typed and checked (one shard key, each row once), then one execute (`execute.rs`) |
//! | `SELECT`, WHERE gives the whole primary key | one get (with `VERSIONS`, of those versions: `versions.rs`) |
//! | `SELECT`, WHERE covers the shard key | multiGet pages, following resume tokens until LIMIT rows or the end |
//! | `SELECT`, WHERE does not cover the shard key | scan pages; the node refuses them (217) without `ALLOW FULL SCAN` |
//! | `SELECT ... USING INDEX idx` | index query pages (`index_select.rs`): the WHERE clause on the index's fields, rows in index order |
//! | `SELECT`, WHERE does not fit the primary key but matches exactly one index | the same, through that index (`index_pick.rs`) |
//! | `DELETE`, WHERE gives the whole primary key | one delete |
//! | `DELETE`, partial key | one multiDelete (atomic; the node answers with no resume token) |
//! | DDL, `DESCRIBE`, `STATS`, `TOPOLOGY` | DDL, Describe, Stats; the topology learnt at connect |
//!
//! Every failure is a [`CliError`]: the server's code and message, or a local 8xx code.

mod index_pick;
mod index_select;
mod index_wait;

use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::ops::Bound;
use std::rc::Rc;
use std::time::Duration;

use ringstore_model::constants::{BATCH_OPS_MAX, SCAN_LIMIT_MAX};
use ringstore_model::table::{
    bounds_first_key_field, CatalogTable, ExecuteOutcome, FieldRange, FieldType, Outcome,
    RangeBound, TableRow, TableSchema, Value, WriteOutcome,
};
use ringstore_net::{Client, ClientError, ClientOptions, RangeQuery, ShardStats, Topology};

use super::ast::{Batch, Using, WriteCondition};
use super::error::{Problem, CODE_INVALID, CODE_LIMIT};
use super::execute::{self, BatchOp, Borrowed};
use super::lex::{self, Kind, Punct};
use super::limits::SCRIPT_BYTES_MAX;
use super::versions;
use super::writes::{self, count as count_text};
use super::{admin, batch, parse_script, to_optional_value, to_value};
use super::{output, Format, Literal, LiteralError, RangeSpec, Select, Statement, StatementError};
use serde_json::{json, Value as Json};

/// Rows asked for in one multiGet or scan page unless the session is told otherwise.
pub const PAGE_ROWS_DEFAULT: u32 = 1000;
/// Most rows one SELECT collects before printing: the table format needs every row to align
/// the columns, so a result is held in memory whole. A larger result is refused (803); LIMIT
/// or a narrower WHERE clause makes it smaller.
pub const RESULT_ROWS_MAX: usize = 1_000_000;

const _: () = assert!(PAGE_ROWS_DEFAULT as usize <= SCAN_LIMIT_MAX);
const _: () = assert!(PAGE_ROWS_DEFAULT as usize <= RESULT_ROWS_MAX);
const _: () = assert!(BATCH_OPS_MAX <= SCAN_LIMIT_MAX);

/// The CLI's own codes are from here up (8xx, docs/CLI.md "Error codes"); the node's are below.
const CODE_LOCAL_MIN: u16 = 800;
/// Code of a failure to reach the node or of a broken exchange with it: a connect, read or
/// write error or timeout, a closed connection, or a response that does not decode.
pub const CODE_CONNECTION: u16 = 805;
/// Code of a failure to write the results (stdout closed, say).
pub const CODE_OUTPUT: u16 = 806;
/// Code of a connect or a response that did not come within the timeout (`--timeout`): the node
/// was reached or may be slow, and a statement that was sent may still take effect.
pub const CODE_TIMEOUT: u16 = 807;

/// Exit status of a statement that failed (a server error or a local error but 805 and 807).
pub const EXIT_FAILED: u8 = 1;
/// Exit status of a usage error or of a node that could not be reached (805).
pub const EXIT_USAGE_OR_CONNECTION: u8 = 2;
/// Exit status of a timeout (807): whether the statement took effect is unknown.
pub const EXIT_TIMEOUT: u8 = 3;

/// A statement that failed: the server's error code and message, or a local 8xx code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("ERROR {code}: {message}")]
pub struct CliError {
    pub code: u16,
    pub message: String,
}

impl CliError {
    pub fn new(code: u16, message: impl Into<String>) -> CliError {
        CliError { code, message: message.into() }
    }

    /// A statement that can not be run against its table as written (802).
    fn invalid(message: impl Into<String>) -> CliError {
        CliError::new(CODE_INVALID, message)
    }

    /// The error as `format` prints it: `ERROR 201: ...` or `{"error":{...}}`, with a newline.
    pub fn line(&self, format: Format) -> String {
        format.error(self.code, &self.message)
    }

    /// Whether the node could not be reached or the exchange with it broke.
    pub fn is_connection(&self) -> bool {
        self.code == CODE_CONNECTION
    }

    /// The process exit status this error calls for: [`EXIT_USAGE_OR_CONNECTION`] for a
    /// connection error, [`EXIT_TIMEOUT`] for a timeout, else [`EXIT_FAILED`].
    pub fn exit_status(&self) -> u8 {
        match self.code {
            CODE_CONNECTION => EXIT_USAGE_OR_CONNECTION,
            CODE_TIMEOUT => EXIT_TIMEOUT,
            _ => EXIT_FAILED,
        }
    }

    /// `e` as a CLI error; a timeout says how long the CLI waited (`timeout`, None: forever).
    pub fn from_client(e: ClientError, timeout: Option<Duration>) -> CliError {
        CliError::from(e).with_timeout(timeout)
    }

    /// A timeout (807) told how long the CLI waited (`timeout`, None: forever) and what it
    /// means; any other error as it is.
    pub fn with_timeout(self, timeout: Option<Duration>) -> CliError {
        let e = self;
        if e.code != CODE_TIMEOUT {
            return e;
        }
        let waited = match timeout {
            Some(t) => format!("{} s", t.as_secs_f64()),
            None => "the timeout".to_owned(),
        };
        CliError::new(
            CODE_TIMEOUT,
            format!(
                "no answer from the node within {waited} (--timeout; 0 waits forever); a \
                 statement that was sent may still take effect: {}",
                e.message
            ),
        )
    }
}

impl From<StatementError> for CliError {
    fn from(e: StatementError) -> CliError {
        CliError::new(e.code(), e.to_string())
    }
}

impl From<LiteralError> for CliError {
    fn from(e: LiteralError) -> CliError {
        CliError::new(e.code(), e.to_string())
    }
}

impl From<ClientError> for CliError {
    fn from(e: ClientError) -> CliError {
        match e {
            ClientError::Server(reply) => CliError::new(reply.code, reply.message),
            // Every reason the client refuses to send a request is a limit (a name over 255
            // bytes, a value over the frame size).
            ClientError::InvalidRequest(message) => CliError::new(CODE_LIMIT, message),
            ClientError::Io { ref source, .. } if source.kind() == ErrorKind::TimedOut => {
                CliError::new(CODE_TIMEOUT, e.to_string())
            }
            other => CliError::new(CODE_CONNECTION, other.to_string()),
        }
    }
}

type Result<T, E = CliError> = std::result::Result<T, E>;

/// A connection to a node with its output format and the schemas learnt so far.
#[derive(Debug)]
pub struct Session {
    client: Client,
    format: Format,
    /// Schemas by table name, from Describe; cleared by every DDL statement.
    schemas: HashMap<String, Rc<CatalogTable>>,
    /// Rows asked for per multiGet or scan page (a multiDelete's limit, which the node checks
    /// but which bounds nothing, is this capped at [`BATCH_OPS_MAX`]).
    page_rows: u32,
    /// The client's timeout, for messages (None: it waits forever).
    timeout: Option<Duration>,
}

impl Session {
    pub fn new(client: Client, format: Format) -> Session {
        Session {
            client,
            format,
            schemas: HashMap::new(),
            page_rows: PAGE_ROWS_DEFAULT,
            timeout: ClientOptions::default().timeout,
        }
    }

    /// Tells the session the timeout its client was connected with, for its messages.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Session {
        self.timeout = timeout;
        self
    }

    /// Sets the rows per page, clamped to 1..=[`SCAN_LIMIT_MAX`].
    pub fn with_page_rows(mut self, rows: u32) -> Session {
        self.page_rows = rows.clamp(1, SCAN_LIMIT_MAX as u32);
        self
    }

    pub fn format(&self) -> Format {
        self.format
    }

    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Parses `text` whole, then runs its statements in order and stops at the first error. A
    /// script that does not parse runs nothing.
    pub fn run_script(&mut self, text: &str, out: &mut impl Write) -> Result<()> {
        for statement in &parse_script(text)? {
            self.run_statement(statement, out)?;
        }
        Ok(())
    }

    /// Runs one statement and writes its result to `out`. After a server error the table's
    /// schema is forgotten, in case another client changed the table.
    pub fn run_statement(&mut self, statement: &Statement, out: &mut impl Write) -> Result<()> {
        let result = self.dispatch(statement, out).map_err(|e| e.with_timeout(self.timeout));
        if let (Err(e), Some(table)) = (&result, table_of(statement)) {
            if e.code < CODE_LOCAL_MIN {
                self.schemas.remove(table);
            }
        }
        result?;
        out.flush().map_err(output_error)
    }

    fn dispatch(&mut self, statement: &Statement, out: &mut impl Write) -> Result<()> {
        let text = match statement {
            Statement::Ddl(text) => self.ddl(text)?,
            Statement::Upsert { table, columns, rows, using, condition } => {
                self.upsert(table, columns, rows, writes::options(*condition, *using))?
            }
            Statement::Select(select) => self.select(select)?,
            Statement::Update { table, set, key, range, more_range_fields, using, condition } => {
                let at = (key.as_slice(), range.as_ref(), more_range_fields.as_slice());
                self.update(table, set, at, writes::options(*condition, *using))?
            }
            Statement::Delete { table, key, range, more_range_fields, condition } => {
                self.delete(table, key, range.as_ref(), more_range_fields, *condition)?
            }
            Statement::Describe { table } => {
                let described = self.client.describe(table)?;
                let text = describe_text(self.format, &described);
                self.schemas.insert(table.clone(), Rc::new(described));
                text
            }
            Statement::Stats => stats_text(self.format, &self.client.stats()?),
            Statement::Topology => topology_text(self.format, self.client.topology()),
            Statement::Batch(batch) => self.batch(batch)?,
        };
        out.write_all(text.as_bytes()).map_err(output_error)
    }

    /// The node's table names (`SHOW TABLES`), for completion.
    pub fn table_names(&mut self) -> Result<Vec<String>> {
        let outcomes = self.client.ddl("SHOW TABLES")?;
        let mut names = Vec::new();
        for outcome in outcomes {
            if let Outcome::Tables(tables) = outcome {
                names.extend(tables.iter().map(|n| n.as_str().to_owned()));
            }
        }
        Ok(names)
    }

    /// The fields of `table` in schema order, from the cache or the node, for completion.
    pub fn field_names(&mut self, table: &str) -> Result<Vec<String>> {
        Ok(field_names(self.schema(table)?.schema()))
    }

    /// The schema of `table`, from the cache or the node.
    fn schema(&mut self, table: &str) -> Result<Rc<CatalogTable>> {
        if let Some(known) = self.schemas.get(table) {
            return Ok(known.clone());
        }
        let described = Rc::new(self.client.describe(table)?);
        self.schemas.insert(table.to_owned(), described.clone());
        Ok(described)
    }

    fn ddl(&mut self, text: &str) -> Result<String> {
        self.schemas.clear();
        let outcomes = self.client.ddl(text)?;
        let mut out: String = outcomes.iter().map(|o| outcome_text(self.format, o)).collect();
        out += &self.wait_for_indexes(text, &outcomes)?;
        Ok(out)
    }

    /// Types every row, then puts them one by one.
    fn upsert(
        &mut self,
        table: &str,
        columns: &[String],
        rows: &[Vec<Literal>],
        options: ringstore_net::WriteOptions,
    ) -> Result<String> {
        let described = self.schema(table)?;
        let typed = rows
            .iter()
            .map(|row| typed_row(described.schema(), columns, row))
            .collect::<Result<Vec<_>>>()?;
        let mut outcomes = Vec::with_capacity(typed.len());
        for (i, row) in typed.iter().enumerate() {
            let op = ringstore_net::WriteOp::Put { row };
            let outcome = self.client.write(table, op, options);
            outcomes.push(outcome.map_err(|e| partly_done(write_hint(e), i, typed.len()))?);
        }
        Ok(writes::outcome_text(self.format, "written", &outcomes))
    }

    /// UPDATE: sets or clears some non-key fields of the one row the WHERE clause names.
    fn update(
        &mut self,
        table: &str,
        set: &[(String, Literal)],
        (key, range, more_range_fields): (&[(String, Literal)], Option<&RangeSpec>, &[String]),
        options: ringstore_net::WriteOptions,
    ) -> Result<String> {
        let described = self.schema(table)?;
        let (key, set) = typed_update(described.schema(), set, (key, range, more_range_fields))?;
        let key: Vec<(&str, Value)> = key.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        let set: Vec<(&str, Option<Value>)> =
            set.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
        let op = ringstore_net::WriteOp::Update { key: &key, set: &set };
        let outcome = self.client.write(table, op, options).map_err(write_hint)?;
        Ok(writes::outcome_text(self.format, "updated", &[outcome]))
    }

    /// A batch: its operations typed and checked (one shard key, each row once), then one
    /// execute; prints every operation's outcome, or fails with 808 if ABORT ON FAILURE aborted it.
    fn batch(&mut self, batch: &Batch) -> Result<String> {
        let Some(table) = batch.writes.first().and_then(|(_, w)| table_of(w)) else {
            return Err(CliError::invalid("the batch has no writes"));
        };
        let table = table.to_owned();
        let described = self.schema(&table)?;
        let ops = batch_ops(described.schema(), batch)?;
        execute::check(described.schema(), &ops).map_err(CliError::invalid)?;
        let borrowed: Vec<Borrowed<'_>> = ops.iter().map(Borrowed::of).collect();
        let sent: Vec<_> = borrowed.iter().zip(&ops).map(|(b, op)| (b.op(), op.options)).collect();
        let outcome = self.client.execute(&table, &sent, batch.abort_on_failure);
        match outcome.map_err(write_hint)? {
            ExecuteOutcome::Done(outcomes) => {
                Ok(execute::outcome_text(self.format, &ops, &outcomes))
            }
            ExecuteOutcome::Aborted { index, outcome } => Err(CliError::new(
                execute::CODE_ABORTED,
                execute::aborted_message(&ops, index, &outcome),
            )),
        }
    }

    fn delete(
        &mut self,
        table: &str,
        key: &[(String, Literal)],
        range: Option<&RangeSpec>,
        more_range_fields: &[String],
        condition: WriteCondition,
    ) -> Result<String> {
        let described = self.schema(table)?;
        let plan = key_plan(described.schema(), key, range, more_range_fields)?;
        let pairs = plan.pairs();
        if plan.full {
            let op = ringstore_net::WriteOp::Delete { key: &pairs };
            let outcome =
                self.client.write(table, op, writes::options(condition, Using::default()))?;
            return match outcome {
                WriteOutcome::Deleted { .. } | WriteOutcome::ConditionFailed { .. } => {
                    Ok(writes::outcome_text(self.format, "deleted", &[outcome]))
                }
                other => Err(unexpected("a delete", &other)),
            };
        }
        if condition != WriteCondition::Always {
            return Err(CliError::invalid(
                "IF ABSENT, IF PRESENT and IF VERSION are for one row: the WHERE clause must \
                 give the whole primary key (a multiDelete has no condition)",
            ));
        }
        let deleted = {
            let mut query = RangeQuery::new(&pairs, self.page_rows.min(BATCH_OPS_MAX as u32));
            query.range = plan.range_ref();
            self.multi_delete(table, query)?
        };
        Ok(self.format.message(&count_text(deleted, "deleted")))
    }

    /// The multiDelete of `query`: the node deletes every row of it in one atomic step and
    /// answers with no resume token, so this is one request; it would follow a resume token
    /// (as multiDelete did before range tombstones) rather than leave rows behind.
    fn multi_delete(&mut self, table: &str, mut query: RangeQuery<'_>) -> Result<usize> {
        let mut deleted = 0;
        loop {
            let outcome = self.client.multi_delete(table, &query)?;
            deleted += outcome.deleted;
            match outcome.resume {
                None => return Ok(deleted),
                Some(resume) => next_resume(&mut query, resume)?,
            }
        }
    }

    fn select(&mut self, s: &Select) -> Result<String> {
        if let Some(index) = &s.using_index {
            return self.index_select(s, index);
        }
        if let Some(text) = self.picked_index_select(s)? {
            return Ok(text);
        }
        let described = self.schema(&s.table)?;
        let schema = described.schema();
        check_columns(schema, s.columns.as_deref())?;
        let plan = key_plan(schema, &s.key, s.range.as_ref(), &s.more_range_fields)?;
        let reverse = reverse_order(schema, plan.key.len(), s.order_by.as_deref(), s.descending)?;
        if s.order_by.is_some() && !plan.covers_shard_key && !plan.bounds_first_key_field() {
            return Err(CliError::invalid(format!(
                "ORDER BY needs a WHERE clause that bounds the first key field {} (an equality \
                 or a range): a full scan visits the shards in turn, so its rows are in key \
                 order within each shard only",
                key_list(schema, 1)
            )));
        }
        let selected = versions::select(s.versions);
        let (columns, rows) = if s.limit == Some(0) {
            (field_names(schema), Vec::new())
        } else if plan.full {
            let (columns, row) = self.client.get_versions(&s.table, &plan.pairs(), selected)?;
            (columns, row.into_iter().collect())
        } else {
            let pairs = plan.pairs();
            let mut query = RangeQuery::new(&pairs, self.page_rows);
            query.range = plan.range_ref();
            query.reverse = reverse;
            query.allow_full_scan = s.allow_full_scan;
            query.versions = selected;
            self.read_pages(&s.table, query, !plan.covers_shard_key, s.limit)?
        };
        let (names, indexes) = projection(&columns, s.columns.as_deref())?;
        if s.versions.is_some() {
            return Ok(versions::rows_text(self.format, &names, &rows, &indexes));
        }
        Ok(self.format.rows(&names, &cells(&rows, &indexes)))
    }

    /// multiGet (or, with `scan`, scan) pages until `limit` rows or the end.
    fn read_pages(
        &mut self,
        table: &str,
        mut query: RangeQuery<'_>,
        scan: bool,
        limit: Option<u64>,
    ) -> Result<(Vec<String>, Vec<TableRow>)> {
        let wanted = limit.unwrap_or(u64::MAX);
        let mut rows: Vec<TableRow> = Vec::new();
        loop {
            let left = wanted - rows.len() as u64;
            query.limit = left.min(u64::from(self.page_rows)) as u32;
            let page = if scan {
                self.client.scan(table, &query).map_err(full_scan_hint)?
            } else {
                self.client.multi_get(table, &query)?
            };
            rows.extend(page.page.rows.into_iter().take(left as usize));
            if rows.len() > RESULT_ROWS_MAX {
                return Err(too_many_rows());
            }
            match page.page.resume {
                Some(resume) if (rows.len() as u64) < wanted => next_resume(&mut query, resume)?,
                _ => return Ok((page.columns, rows)),
            }
        }
    }
}

/// The table a statement is about, if any.
fn table_of(statement: &Statement) -> Option<&str> {
    match statement {
        Statement::Upsert { table, .. }
        | Statement::Update { table, .. }
        | Statement::Delete { table, .. }
        | Statement::Describe { table } => Some(table),
        Statement::Select(select) => Some(&select.table),
        Statement::Batch(batch) => batch.writes.first().and_then(|(_, w)| table_of(w)),
        Statement::Ddl(_) | Statement::Stats | Statement::Topology => None,
    }
}

/// Sets the query's resume token for the next page; the same token twice would never end.
fn next_resume(query: &mut RangeQuery<'_>, resume: Vec<u8>) -> Result<()> {
    if query.resume.as_ref() == Some(&resume) {
        return Err(CliError::new(
            CODE_CONNECTION,
            "the node returned the same resume token twice; stopping so as not to loop",
        ));
    }
    query.resume = Some(resume);
    Ok(())
}

/// The node's refusal of a full scan (217) names the protocol flag; say what SQL sets it.
fn full_scan_hint(e: ClientError) -> CliError {
    let e = CliError::from(e);
    if e.code != CODE_FULL_SCAN_NOT_ALLOWED {
        return e;
    }
    CliError::new(e.code, format!("{} (in SQL: add ALLOW FULL SCAN)", e.message))
}

/// The node's code for a scan that needs `allow_full_scan` (docs/ERRORS.md).
const CODE_FULL_SCAN_NOT_ALLOWED: u16 = 217;

fn too_many_rows() -> CliError {
    CliError::new(
        CODE_LIMIT,
        format!(
            "the result has more than {RESULT_ROWS_MAX} rows, over the limit RESULT_ROWS_MAX; \
             add a LIMIT or narrow the WHERE clause"
        ),
    )
}

fn output_error(e: std::io::Error) -> CliError {
    CliError::new(CODE_OUTPUT, format!("cannot write the results: {e}"))
}

fn unexpected(what: &str, outcome: &WriteOutcome) -> CliError {
    CliError::new(CODE_CONNECTION, format!("the node answered {what} with {outcome:?}"))
}

/// The node's codes for a client version outside the table's window and for a write of data
/// that has already expired (docs/ERRORS.md).
const CODE_VERSION_OUT_OF_WINDOW: u16 = 221;
const CODE_EXPIRED_WRITE: u16 = 222;

/// A write's error; 221 and 222 also say which SQL clauses they are about.
fn write_hint(e: ClientError) -> CliError {
    let e = CliError::from(e);
    let hint = match e.code {
        CODE_VERSION_OUT_OF_WINDOW => {
            "USING VERSION must lie within the table's WITH VERSION OFFSET of the node's clock; \
             ALTER TABLE ... WITH VERSION OFFSET n DAYS widens the window"
        }
        CODE_EXPIRED_WRITE => {
            "the USING VERSION is more than the TTL (USING TTL's, else the table's) before now, \
             so the row would be expired as soon as written"
        }
        _ => return e,
    };
    CliError::new(e.code, format!("{} (in SQL: {hint})", e.message))
}

/// A put that failed after `done` of `total` rows were written: says how far the UPSERT got.
fn partly_done(e: CliError, done: usize, total: usize) -> CliError {
    if total == 1 {
        return e;
    }
    let message = format!("{} (row {} of {total}; {done} written before it)", e.message, done + 1);
    CliError::new(e.code, message)
}

/// A WHERE clause checked against a table's schema.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPlan {
    /// The equalities, typed and in primary key order: a leading prefix of the primary key.
    pub key: Vec<(String, Value)>,
    /// A typed range on the key field after `key`.
    pub range: Option<TypedRange>,
    /// `key` gives every primary key field.
    pub full: bool,
    /// `key` gives every shard key field.
    pub covers_shard_key: bool,
}

/// A range as [`RangeQuery::range`] takes it: the field and its two ends (None: open).
pub type RangeArg<'a> = (&'a str, Option<RangeBound>, Option<RangeBound>);

/// A range of one key field's values, in value order; None is an open end.
#[derive(Debug, Clone, PartialEq)]
pub struct TypedRange {
    pub field: String,
    pub bounds: FieldRange,
}

impl KeyPlan {
    /// The key as the client takes it.
    pub fn pairs(&self) -> Vec<(&str, Value)> {
        self.key.iter().map(|(name, value)| (name.as_str(), value.clone())).collect()
    }

    /// The range as [`RangeQuery::range`] takes it.
    pub fn range_ref(&self) -> Option<RangeArg<'_>> {
        let range = self.range.as_ref()?;
        Some((range.field.as_str(), range.bounds.start.clone(), range.bounds.end.clone()))
    }

    /// Whether the plan bounds the first key field (an equality, or a range with an end): then
    /// a scan shorter than the shard key is a bounded scan, which the node merges across shards
    /// in key order and runs without ALLOW FULL SCAN. The model's rule, which the node applies
    /// too ([`bounds_first_key_field`]).
    pub fn bounds_first_key_field(&self) -> bool {
        bounds_first_key_field(self.key.len(), self.range.as_ref().map(|r| &r.bounds))
    }
}

/// Types the WHERE equalities and range of a statement on `schema` and puts the equalities into
/// primary key order. Every field must be a key field (checked first, so that is what a
/// statement with several mistakes is told); only one field may have a range
/// (`more_range_fields`, the others with a bound, must be empty); the equalities must be a
/// leading prefix of the primary key, and a range must be on the key field after them.
pub fn key_plan(
    schema: &TableSchema,
    key: &[(String, Literal)],
    range: Option<&RangeSpec>,
    more_range_fields: &[String],
) -> Result<KeyPlan> {
    let range_fields = range.map(|r| &r.field).into_iter().chain(more_range_fields);
    for field in key.iter().map(|(f, _)| f).chain(range_fields) {
        key_position(schema, field)?;
    }
    if let (Some(range), Some(field)) = (range, more_range_fields.first()) {
        let problem =
            Problem::SecondRangeField { range: range.field.clone(), field: field.clone() };
        return Err(CliError::invalid(problem.to_string()));
    }
    let mut positioned = Vec::with_capacity(key.len());
    for (field, literal) in key {
        let position = key_position(schema, field)?;
        let value = to_value(literal, schema.key_field(position).ty(), field)?;
        positioned.push((position, field.clone(), value));
    }
    positioned.sort_by_key(|(position, ..)| *position);
    for (expected, (position, field, _)) in positioned.iter().enumerate() {
        if *position != expected {
            return Err(not_a_prefix(schema, field, expected));
        }
    }
    let given = positioned.len();
    let range = range.map(|r| typed_range(schema, given, r)).transpose()?;
    Ok(KeyPlan {
        key: positioned.into_iter().map(|(_, field, value)| (field, value)).collect(),
        range,
        full: given == schema.primary_key().len(),
        covers_shard_key: given >= schema.shard_key_len(),
    })
}

/// Whether rows are read in reverse key order: ORDER BY must name the key field after the
/// `given` equalities, and DESC on an ascending key field (or ASC on a DESC one) reverses.
/// Without ORDER BY rows come in key order.
pub fn reverse_order(
    schema: &TableSchema,
    given: usize,
    order_by: Option<&str>,
    descending: bool,
) -> Result<bool> {
    let Some(field) = order_by else { return Ok(false) };
    let Some(next) = schema.primary_key().get(given) else {
        return Err(CliError::invalid(format!(
            "ORDER BY {field}: the WHERE clause gives the whole primary key, so there is one \
             row at most"
        )));
    };
    let next_name = schema.fields()[next.field].name().as_str();
    if field != next_name {
        return Err(CliError::invalid(format!(
            "ORDER BY {field}: rows come in primary key order {}, and the WHERE clause gives {}, \
             so only {} key field, {next_name}, can order them",
            key_list(schema, schema.primary_key().len()),
            given_text(schema, given),
            if given == 0 { "the first" } else { "the next" }
        )));
    }
    Ok(descending != next.desc)
}

/// The primary key position of `field`, or why it has none.
fn key_position(schema: &TableSchema, field: &str) -> Result<usize> {
    if let Some(position) = schema.key_position(field) {
        return Ok(position);
    }
    let table = schema.name();
    if schema.field(field).is_none() {
        return Err(CliError::invalid(format!("table {table} has no field {field}")));
    }
    Err(CliError::invalid(format!(
        "{field} is not a primary key field of {table}; WHERE can only name key fields {}",
        key_list(schema, schema.primary_key().len())
    )))
}

fn not_a_prefix(schema: &TableSchema, given: &str, position: usize) -> CliError {
    let missing = schema.key_field(position).name();
    CliError::invalid(format!(
        "the WHERE clause gives {given} but not {missing}: the key fields it gives must be a \
         leading prefix of the primary key {}",
        key_list(schema, schema.primary_key().len())
    ))
}

/// The range of `spec`, typed; it must be on the key field at position `given`.
fn typed_range(schema: &TableSchema, given: usize, spec: &RangeSpec) -> Result<TypedRange> {
    let position = key_position(schema, &spec.field)?;
    if position != given {
        let whole = given == schema.primary_key().len();
        let message = if whole {
            format!(
                "the WHERE clause gives every primary key field, so {} can have no range",
                spec.field
            )
        } else {
            format!(
                "a range on {} needs an equality on each key field before it {}, but the WHERE \
                 clause gives {}; so only {} key field, {}, can have a range (primary key {})",
                spec.field,
                key_list(schema, position),
                given_text(schema, given),
                if given == 0 { "the first" } else { "the next" },
                schema.key_field(given).name(),
                key_list(schema, schema.primary_key().len())
            )
        };
        return Err(CliError::invalid(message));
    }
    let ty = schema.key_field(position).ty();
    let bound = |b: &Bound<Literal>| range_bound(b, ty, &spec.field);
    let bounds = FieldRange { start: bound(&spec.start)?, end: bound(&spec.end)? };
    Ok(TypedRange { field: spec.field.clone(), bounds })
}

/// A range bound of a WHERE clause as the table layer's, its literal typed as field `field`
/// (of type `ty`); None when unbounded.
fn range_bound(b: &Bound<Literal>, ty: &FieldType, field: &str) -> Result<Option<RangeBound>> {
    let (literal, inclusive) = match b {
        Bound::Unbounded => return Ok(None),
        Bound::Included(l) => (l, true),
        Bound::Excluded(l) => (l, false),
    };
    Ok(Some(RangeBound { value: to_value(literal, ty, field)?, inclusive }))
}

/// What the WHERE clause's `given` equalities are, for messages: `equalities on (a, b)`, or
/// `no key field equalities`.
fn given_text(schema: &TableSchema, given: usize) -> String {
    match given {
        0 => "no key field equalities".to_owned(),
        _ => format!("equalities on {}", key_list(schema, given)),
    }
}

/// `(a, b DESC, c)`: the first `count` primary key fields.
fn key_list(schema: &TableSchema, count: usize) -> String {
    let names: Vec<String> = schema.primary_key()[..count]
        .iter()
        .map(|k| {
            let name = schema.fields()[k.field].name().as_str();
            if k.desc {
                format!("{name} DESC")
            } else {
                name.to_owned()
            }
        })
        .collect();
    format!("({})", names.join(", "))
}

/// One UPSERT row as the client takes it: every literal typed by its column's field. NULL
/// leaves a non-key field absent; a key field can not be NULL.
pub fn typed_row<'c>(
    schema: &TableSchema,
    columns: &'c [String],
    row: &[Literal],
) -> Result<Vec<(&'c str, Value)>> {
    let mut typed = Vec::with_capacity(columns.len());
    for (column, literal) in columns.iter().zip(row) {
        let Some((_, field)) = schema.field(column) else {
            let table = schema.name();
            return Err(CliError::invalid(format!("table {table} has no field {column}")));
        };
        let value = if schema.key_position(column).is_some() {
            Some(to_value(literal, field.ty(), column)?)
        } else {
            to_optional_value(literal, field.ty(), column)?
        };
        typed.extend(value.map(|v| (column.as_str(), v)));
    }
    Ok(typed)
}

/// An UPDATE's fields to set, typed (None: clear the field).
type SetValues = Vec<(String, Option<Value>)>;

/// An UPDATE's whole primary key (typed, in key order) and its SET values, typed.
fn typed_update(
    schema: &TableSchema,
    set: &[(String, Literal)],
    (key, range, more_range_fields): (&[(String, Literal)], Option<&RangeSpec>, &[String]),
) -> Result<(Vec<(String, Value)>, SetValues)> {
    let plan = key_plan(schema, key, range, more_range_fields)?;
    if !plan.full {
        return Err(CliError::invalid(format!(
            "UPDATE changes one row: the WHERE clause must give the whole primary key {}",
            key_list(schema, schema.primary_key().len())
        )));
    }
    let mut typed = Vec::with_capacity(set.len());
    for (field, literal) in set {
        let Some((_, f)) = schema.field(field) else {
            let table = schema.name();
            return Err(CliError::invalid(format!("table {table} has no field {field}")));
        };
        typed.push((field.clone(), to_optional_value(literal, f.ty(), field)?));
    }
    Ok((plan.key, typed))
}

/// The operations of a batch, typed against its table's schema: one per UPSERT row, UPDATE and
/// DELETE (both of one row, by the whole primary key). Errors name the statement.
fn batch_ops(schema: &TableSchema, batch: &Batch) -> Result<Vec<BatchOp>> {
    let mut ops = Vec::new();
    for (statement, write) in &batch.writes {
        let statement = *statement;
        let at =
            |e: CliError| CliError::new(e.code, format!("statement {statement}: {}", e.message));
        let (write, options) = match write {
            Statement::Upsert { columns, rows, using, condition, .. } => {
                let options = writes::options(*condition, *using);
                for (i, row) in rows.iter().enumerate() {
                    let typed = typed_row(schema, columns, row).map_err(at)?;
                    let typed = typed.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
                    let row = (rows.len() > 1).then_some(i + 1);
                    let write = execute::Write::Put(typed);
                    ops.push(BatchOp { statement, row, write, options });
                }
                continue;
            }
            Statement::Update { set, key, range, more_range_fields, using, condition, .. } => {
                let at_key = (key.as_slice(), range.as_ref(), more_range_fields.as_slice());
                let (key, set) = typed_update(schema, set, at_key).map_err(at)?;
                (execute::Write::Update { key, set }, writes::options(*condition, *using))
            }
            Statement::Delete { key, range, more_range_fields, condition, .. } => {
                let plan = key_plan(schema, key, range.as_ref(), more_range_fields).map_err(at)?;
                if !plan.full {
                    return Err(at(CliError::invalid(format!(
                        "a DELETE in a batch deletes one row: the WHERE clause must give the \
                         whole primary key {}",
                        key_list(schema, schema.primary_key().len())
                    ))));
                }
                let options = writes::options(*condition, Using::default());
                (execute::Write::Delete(plan.key), options)
            }
            _ => return Err(at(CliError::invalid("a batch holds only writes"))),
        };
        ops.push(BatchOp { statement, row: None, write, options });
    }
    Ok(ops)
}

/// Checks that every selected column is a field of the table (None: `*`).
fn check_columns(schema: &TableSchema, columns: Option<&[String]>) -> Result<()> {
    let unknown = columns.into_iter().flatten().find(|c| schema.field(c).is_none());
    match unknown {
        None => Ok(()),
        Some(column) => {
            Err(CliError::invalid(format!("table {} has no column {column}", schema.name())))
        }
    }
}

fn field_names(schema: &TableSchema) -> Vec<String> {
    schema.fields().iter().map(|f| f.name().as_str().to_owned()).collect()
}

/// The names and response column indexes of the selected columns (None: every column).
pub fn projection(
    columns: &[String],
    selected: Option<&[String]>,
) -> Result<(Vec<String>, Vec<usize>)> {
    let Some(selected) = selected else {
        return Ok((columns.to_vec(), (0..columns.len()).collect()));
    };
    let indexes = selected
        .iter()
        .map(|name| {
            columns
                .iter()
                .position(|c| c == name)
                .ok_or_else(|| CliError::invalid(format!("the node's answer has no column {name}")))
        })
        .collect::<Result<Vec<usize>>>()?;
    Ok((selected.to_vec(), indexes))
}

/// The selected cells of each row's newest version.
fn cells(rows: &[TableRow], indexes: &[usize]) -> Vec<Vec<Option<Value>>> {
    rows.iter()
        .map(|row| {
            let fields = row.versions.first().map_or(&[][..], |v| &v.fields[..]);
            indexes.iter().map(|&i| fields.get(i).cloned().flatten()).collect()
        })
        .collect()
}

/// What one DDL outcome prints.
fn outcome_text(format: Format, outcome: &Outcome) -> String {
    match outcome {
        Outcome::Created { id } => format.message(&format!("table created (id {})", id.0)),
        Outcome::AlreadyExists { id } => {
            format.message(&format!("table exists already (id {}); nothing changed", id.0))
        }
        Outcome::Dropped { id } => format.message(&format!("table dropped (id {})", id.0)),
        Outcome::NothingDropped => format.message("no such table; nothing dropped"),
        Outcome::Altered { id } => format.message(&format!("table altered (id {})", id.0)),
        Outcome::Described(table) => describe_text(format, table),
        Outcome::Tables(names) => {
            let rows: Vec<Vec<Option<Value>>> =
                names.iter().map(|n| vec![Some(Value::from(n.as_str()))]).collect();
            format.rows(&["table".to_owned()], &rows)
        }
        Outcome::IndexCreated { index, state, .. } => {
            format.message(&format!("index created (id {}, {state})", index.0))
        }
        Outcome::IndexAlreadyExists { index, .. } => {
            format.message(&format!("index exists already (id {}); nothing changed", index.0))
        }
        Outcome::IndexDropped { index, .. } => {
            format.message(&format!("index dropped (id {})", index.0))
        }
        Outcome::NoIndexDropped => format.message("no such index; nothing dropped"),
        Outcome::Indexes(table) => {
            let columns = ["index", "fields", "state", "id"].map(String::from).to_vec();
            let rows: Vec<Vec<Option<Value>>> = table
                .indexes()
                .iter()
                .map(|i| {
                    vec![
                        Some(Value::from(i.name().as_str())),
                        Some(Value::String(index_fields(table, i))),
                        Some(Value::from(i.state().name())),
                        Some(Value::Long(i64::from(i.id().0))),
                    ]
                })
                .collect();
            format.rows(&columns, &rows)
        }
    }
}

/// An index's fields by name, in index order: `a, b`.
fn index_fields(table: &CatalogTable, index: &ringstore_model::table::IndexDef) -> String {
    let fields = table.schema().fields();
    index.fields().iter().map(|&f| fields[f].name().as_str()).collect::<Vec<_>>().join(", ")
}

/// A table's indexes for DESCRIBE: `by_name (name) READY; by_age (age, name) BUILDING`.
fn indexes_line(table: &CatalogTable) -> String {
    if table.indexes().is_empty() {
        return "none".to_owned();
    }
    let each = table
        .indexes()
        .iter()
        .map(|i| format!("{} ({}) {}", i.name(), index_fields(table, i), i.state().name()));
    each.collect::<Vec<_>>().join("; ")
}

/// A table's fields (name, type, key position, shard key, order), then its options: in the
/// table format as `table <name>:` pairs, in JSON as [`describe_json`].
fn describe_text(format: Format, table: &CatalogTable) -> String {
    let schema = table.schema();
    let columns: Vec<String> =
        ["field", "type", "primary_key", "shard_key", "order"].map(String::from).to_vec();
    let rows: Vec<Vec<Option<Value>>> = schema
        .fields()
        .iter()
        .map(|f| {
            let name = f.name().as_str();
            let key = schema.key_position(name).map(|p| (p, schema.primary_key()[p].desc));
            vec![
                Some(Value::from(name)),
                Some(Value::String(f.ty().to_string())),
                key.map(|(p, _)| Value::Integer(p as i32 + 1)),
                key.map(|(p, _)| Value::Boolean(p < schema.shard_key_len())),
                key.map(|(_, desc)| Value::from(if desc { "DESC" } else { "ASC" })),
            ]
        })
        .collect();
    let fields = format.rows(&columns, &rows);
    if format == Format::Json {
        return fields + &output::json_line(&describe_json(table));
    }
    let options = schema.options();
    let ttl = options.ttl_seconds.map_or_else(|| "none".to_owned(), |t| t.to_string());
    let pairs = [
        ("id", table.id().0.to_string()),
        ("schema_version", table.schema_version().to_string()),
        ("primary_key", key_list(schema, schema.primary_key().len())),
        ("shard_key", key_list(schema, schema.shard_key_len())),
        ("max_versions", options.max_versions.to_string()),
        ("ttl_seconds", ttl),
        ("max_version_offset_seconds", options.max_version_offset_seconds.to_string()),
        ("indexes", indexes_line(table)),
    ];
    let section = (format!("table {}", schema.name()), owned_pairs(&pairs));
    fields + &format.pairs(&[section])
}

/// `{"table <name>":{"id":1,"schema_version":1,"primary_key":["g","id"],"shard_key":["g"],
/// "max_versions":1,"ttl_seconds":null,"max_version_offset_seconds":86400}}`: numbers as numbers,
/// keys as arrays of field names in key order (each field's ASC/DESC is in the fields array),
/// no TTL as null.
fn describe_json(table: &CatalogTable) -> Json {
    let schema = table.schema();
    let names = |count: usize| -> Vec<&str> {
        schema.primary_key()[..count]
            .iter()
            .map(|k| schema.fields()[k.field].name().as_str())
            .collect()
    };
    let options = schema.options();
    let body = json!({
        "id": table.id().0,
        "schema_version": table.schema_version(),
        "primary_key": names(schema.primary_key().len()),
        "shard_key": names(schema.shard_key_len()),
        "max_versions": options.max_versions,
        "ttl_seconds": options.ttl_seconds,
        "max_version_offset_seconds": options.max_version_offset_seconds,
    });
    let mut object = serde_json::Map::new();
    object.insert(format!("table {}", schema.name()), body);
    Json::Object(object)
}

fn owned_pairs(pairs: &[(&str, String)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
}

/// `node` (the shard count), then each shard's counters.
fn stats_text(format: Format, shards: &[ShardStats]) -> String {
    let mut sections =
        vec![("node".to_owned(), owned_pairs(&[("shards", shards.len().to_string())]))];
    for s in shards {
        let pairs = s.values.iter().map(|(name, value)| (name.clone(), value.to_string()));
        sections.push((format!("shard {}", s.shard), pairs.collect()));
    }
    format.pairs(&sections)
}

/// `node` (shards, partitions, ports), then each shard's port and partition count.
fn topology_text(format: Format, t: &Topology) -> String {
    let node = [
        ("shards", t.shards().to_string()),
        ("partitions", t.partition_owners.len().to_string()),
        ("shared_port", t.shared_port.to_string()),
        ("answered_by_shard", t.shard.to_string()),
    ];
    let mut sections = vec![("node".to_owned(), owned_pairs(&node))];
    for (shard, port) in t.shard_ports.iter().enumerate() {
        let owned = t.partition_owners.iter().filter(|&&o| usize::from(o) == shard).count();
        let pairs = [("port", port.to_string()), ("partitions", owned.to_string())];
        sections.push((format!("shard {shard}"), owned_pairs(&pairs)));
    }
    format.pairs(&sections)
}

/// How far an interactive input has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputState {
    /// Nothing but whitespace, comments and `;`.
    Empty,
    /// A statement is still open: read another line.
    Incomplete,
    /// Every statement is complete (or can never be, so the parser should report it): run it.
    Complete,
}

/// Whether an interactive input (whole lines, each ending in `\n`) is ready to run. A SQL
/// statement is complete at its `;` (outside quotes; a `'string'` may span lines), a batch at
/// its `APPLY BATCH` and the `;` after it. An admin CLI
/// block at the end of the input is complete when the storage DDL parser accepts it (after its
/// `plan add-table`), at a `;`, or at a blank line. Input over [`SCRIPT_BYTES_MAX`] is complete,
/// so that the parser refuses it.
pub fn input_state(text: &str) -> InputState {
    if text.len() > SCRIPT_BYTES_MAX {
        return InputState::Complete;
    }
    let mut pos = 0;
    let mut any = false;
    let mut in_batch = false;
    loop {
        pos = lex::skip_gap(text, pos);
        let rest = &text[pos..];
        let Some(first) = rest.chars().next() else {
            return match (any, in_batch) {
                (_, true) => InputState::Incomplete,
                (true, false) => InputState::Complete,
                (false, false) => InputState::Empty,
            };
        };
        if first == ';' {
            pos += 1;
        } else if admin::starts_block(rest) {
            let block = admin::block(text, pos);
            if text[block.end..].trim().is_empty() {
                return admin_block_state(&text[pos..block.end], block.has_command, any, text);
            }
            any |= block.has_command;
            pos = block.end;
        } else {
            let Some(end) = sql_end(text, pos) else { return InputState::Incomplete };
            in_batch = batch_marker(text, pos).unwrap_or(in_batch);
            any = true;
            pos = end;
        }
    }
}

/// The state of an input whose last statement is the admin CLI block `block`.
fn admin_block_state(block: &str, has_command: bool, any_before: bool, text: &str) -> InputState {
    let blank_line_last = text.lines().last().is_some_and(|l| l.trim().is_empty());
    match (has_command, any_before) {
        (false, false) => InputState::Empty,
        (false, true) => InputState::Complete,
        (true, _) if blank_line_last || ringstore_model::ddl::parse(block).is_ok() => {
            InputState::Complete
        }
        (true, _) => InputState::Incomplete,
    }
}

/// Whether the SQL statement at `pos` opens a batch (`BEGIN BATCH`: Some(true)) or closes one
/// (`APPLY BATCH`: Some(false)); None for any other statement.
fn batch_marker(text: &str, pos: usize) -> Option<bool> {
    let first = lex::token_at(text, pos).ok().flatten()?;
    let second = lex::token_at(text, lex::skip_gap(text, first.end)).ok().flatten()?;
    batch::marker_words(&text[first.start..first.end], &text[second.start..second.end])
}

/// The end of the SQL statement at `pos` (after its `;`), or None while it is still open.
fn sql_end(text: &str, mut pos: usize) -> Option<usize> {
    loop {
        match lex::token_at(text, pos) {
            // A string may go on in the next line; a quoted name never does.
            Err(open) if open.quote == '\'' => return None,
            Err(_) => return Some(text.len()),
            Ok(None) => return None,
            Ok(Some(token)) if token.kind == Kind::Punct(Punct::Semicolon) => {
                return Some(token.end)
            }
            Ok(Some(token)) => pos = lex::skip_gap(text, token.end),
        }
    }
}

/// Whether an interactive line, given when no statement is open, asks to leave: `exit` or
/// `quit`, in any case, optionally with a `;`.
pub fn is_exit(line: &str) -> bool {
    let word = line.trim().trim_end_matches(';').trim_end();
    word.eq_ignore_ascii_case("exit") || word.eq_ignore_ascii_case("quit")
}

#[cfg(test)]
mod tests {
    use ringstore_model::table::{FieldType, TableId};

    use super::*;
    use crate::literal::test_literals::{key, num, string};

    /// `orders`: key (SHARD(userid), orderid, line DESC), one non-key field.
    fn orders() -> TableSchema {
        TableSchema::builder(TableId(1), "orders")
            .field("note", FieldType::String)
            .field("line", FieldType::Integer)
            .field("orderid", FieldType::Long)
            .field("userid", FieldType::String)
            .primary_key_field("userid", false)
            .primary_key_field("orderid", false)
            .primary_key_field("line", true)
            .shard_key(&["userid"])
            .build()
            .expect("valid schema")
    }

    fn plan(pairs: &[(&str, Literal)], range: Option<RangeSpec>) -> Result<KeyPlan> {
        key_plan(&orders(), &key(pairs), range.as_ref(), &[])
    }

    fn range(field: &str, start: Bound<Literal>, end: Bound<Literal>) -> Option<RangeSpec> {
        Some(RangeSpec { field: field.to_owned(), start, end })
    }

    #[test]
    fn equalities_are_typed_and_put_in_key_order() {
        let p = plan(&[("line", num("3")), ("userid", string("abc")), ("orderid", num("7"))], None)
            .expect("a full key");
        assert_eq!(
            p.key,
            [
                ("userid".to_owned(), Value::from("abc")),
                ("orderid".to_owned(), Value::Long(7)),
                ("line".to_owned(), Value::Integer(3)),
            ]
        );
        assert!(p.full && p.covers_shard_key);
        assert_eq!(p.pairs()[1], ("orderid", Value::Long(7)));

        let p = plan(&[("orderid", num("7")), ("userid", string("abc"))], None).expect("partial");
        assert!(!p.full && p.covers_shard_key);
        assert_eq!(p.key[0].0, "userid");

        let p = plan(&[], None).expect("no key");
        assert!(!p.full && !p.covers_shard_key && p.key.is_empty());
    }

    #[test]
    fn equalities_must_be_a_key_prefix_of_key_fields() {
        let e = plan(&[("userid", string("a")), ("line", num("1"))], None).expect_err("gap");
        assert_eq!(e.code, 802);
        assert_eq!(
            e.message,
            "the WHERE clause gives line but not orderid: the key fields it gives must be a \
             leading prefix of the primary key (userid, orderid, line DESC)"
        );
        let e = plan(&[("note", string("x"))], None).expect_err("not a key field");
        assert!(e.message.starts_with("note is not a primary key field of orders"), "{e}");
        let e = plan(&[("nope", string("x"))], None).expect_err("unknown");
        assert_eq!(e.message, "table orders has no field nope");
        let e = plan(&[("orderid", string("7"))], None).expect_err("mistyped");
        assert_eq!(e.code, 804, "{e}");
        let e = plan(&[("userid", Literal::Null)], None).expect_err("NULL");
        assert_eq!(e.code, 804, "{e}");
    }

    #[test]
    fn ranges_are_typed_and_on_the_next_key_field() {
        let r = range("orderid", Bound::Excluded(num("100")), Bound::Included(num("200")));
        let p = plan(&[("userid", string("a"))], r).expect("a range");
        let bounds = FieldRange {
            start: Some(RangeBound { value: Value::Long(100), inclusive: false }),
            end: Some(RangeBound { value: Value::Long(200), inclusive: true }),
        };
        let expected = TypedRange { field: "orderid".into(), bounds };
        assert_eq!(p.range, Some(expected));
        let (field, start, end) = p.range_ref().expect("a range");
        assert_eq!((field, start.is_some(), end.is_some()), ("orderid", true, true));

        let r = range("userid", Bound::Unbounded, Bound::Excluded(string("m")));
        assert_eq!(plan(&[], r).expect("first field").range.expect("range").bounds.start, None);

        let r = range("line", Bound::Included(num("1")), Bound::Unbounded);
        let e = plan(&[("userid", string("a"))], r).expect_err("not next");
        assert_eq!(
            e.message,
            "a range on line needs an equality on each key field before it (userid, orderid), \
             but the WHERE clause gives equalities on (userid); so only the next key field, \
             orderid, can have a range (primary key (userid, orderid, line DESC))"
        );
        let r = range("orderid", Bound::Included(num("1")), Bound::Unbounded);
        let e = plan(&[], r).expect_err("no equalities");
        assert_eq!(
            e.message,
            "a range on orderid needs an equality on each key field before it (userid), but the \
             WHERE clause gives no key field equalities; so only the first key field, userid, can \
             have a range (primary key (userid, orderid, line DESC))"
        );

        let full = [("userid", string("a")), ("orderid", num("1")), ("line", num("2"))];
        let r = range("line", Bound::Included(num("1")), Bound::Unbounded);
        let p = plan(&full[..2], r).expect("line after two");
        assert!(p.range.is_some());
        let r = range("note", Bound::Included(string("x")), Bound::Unbounded);
        assert!(plan(&full, r).is_err());

        let r = range("orderid", Bound::Included(num("1.5")), Bound::Unbounded);
        assert_eq!(plan(&[("userid", string("a"))], r).expect_err("mistyped").code, 804);
    }

    #[test]
    fn a_second_range_field_is_refused_after_the_non_key_fields() {
        let a = [("userid", string("a"))];
        let on = |field: &str| range(field, Bound::Included(num("1")), Bound::Unbounded);
        let two = |first: &str, second: &str| {
            key_plan(&orders(), &key(&a), on(first).as_ref(), &[second.to_owned()])
        };
        let e = two("orderid", "note").expect_err("a non-key field");
        assert_eq!(
            e.message,
            "note is not a primary key field of orders; WHERE can only name key fields \
             (userid, orderid, line DESC)"
        );
        assert!(two("note", "orderid").expect_err("non-key first").message.starts_with("note is"));
        let e = two("orderid", "line").expect_err("two key fields");
        assert_eq!(e.message, "only one field may have a range: orderid has one, so line can not");
        assert_eq!(e.code, 802);
    }

    #[test]
    fn order_by_names_the_next_key_field_and_desc_fields_flip() {
        let schema = orders();
        assert_eq!(reverse_order(&schema, 1, None, false), Ok(false));
        assert_eq!(reverse_order(&schema, 1, Some("orderid"), true), Ok(true));
        assert_eq!(reverse_order(&schema, 1, Some("orderid"), false), Ok(false));
        // `line` is a DESC key field: key order is already newest first.
        assert_eq!(reverse_order(&schema, 2, Some("line"), true), Ok(false));
        assert_eq!(reverse_order(&schema, 2, Some("line"), false), Ok(true));
        let e = reverse_order(&schema, 1, Some("line"), true).expect_err("not next");
        assert_eq!(
            e.message,
            "ORDER BY line: rows come in primary key order (userid, orderid, line DESC), and the \
             WHERE clause gives equalities on (userid), so only the next key field, orderid, can \
             order them"
        );
        let e = reverse_order(&schema, 3, Some("line"), true).expect_err("full key");
        assert!(e.message.contains("whole primary key"), "{e}");
    }

    #[test]
    fn describe_json_gives_numbers_arrays_and_null() {
        let lines = |table: &CatalogTable| -> Vec<Json> {
            let text = describe_text(Format::Json, table);
            text.lines().map(|l| serde_json::from_str(l).expect("a JSON line")).collect()
        };
        let described = lines(&CatalogTable::new(orders(), 3));
        assert_eq!(described.len(), 2);
        assert_eq!(
            described[0][2],
            json!({"field": "orderid", "type": "LONG", "primary_key": 2, "shard_key": false,
                   "order": "ASC"})
        );
        let options = &described[1]["table orders"];
        assert_eq!(options["id"], json!(1));
        assert_eq!(options["schema_version"], json!(3));
        assert_eq!(options["primary_key"], json!(["userid", "orderid", "line"]));
        assert_eq!(options["shard_key"], json!(["userid"]));
        assert_eq!(options["ttl_seconds"], Json::Null);
        assert!(options["max_versions"].is_u64() && options["max_version_offset_seconds"].is_u64());

        let with_ttl = TableSchema::builder(TableId(2), "t")
            .field("k", FieldType::Long)
            .primary_key_field("k", false)
            .ttl_seconds(86_400)
            .build()
            .expect("valid schema");
        let described = lines(&CatalogTable::new(with_ttl, 1));
        assert_eq!(described[1]["table t"]["ttl_seconds"], json!(86_400));
        // The table format keeps its display strings.
        let text = describe_text(Format::Table, &CatalogTable::new(orders(), 1));
        assert!(
            text.contains("  primary_key                 (userid, orderid, line DESC)\n"),
            "{text}"
        );
        assert!(text.contains("  ttl_seconds                 none\n"), "{text}");
    }

    #[test]
    fn upsert_rows_are_typed_and_nulls_left_out() {
        let schema = orders();
        let columns: Vec<String> = ["userid", "orderid", "line", "note"].map(String::from).to_vec();
        let row = [string("a"), num("1"), num("2"), Literal::Null];
        assert_eq!(
            typed_row(&schema, &columns, &row).expect("typed"),
            [
                ("userid", Value::from("a")),
                ("orderid", Value::Long(1)),
                ("line", Value::Integer(2))
            ]
        );
        let row = [Literal::Null, num("1"), num("2"), string("x")];
        assert_eq!(typed_row(&schema, &columns, &row).expect_err("NULL key").code, 804);
        let columns = vec!["what".to_owned()];
        let e = typed_row(&schema, &columns, &[num("1")]).expect_err("unknown column");
        assert_eq!((e.code, e.message.as_str()), (802, "table orders has no field what"));
    }

    #[test]
    fn projections_pick_columns_by_name() {
        let columns: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(projection(&columns, None).expect("all"), (columns.clone(), vec![0, 1, 2]));
        let wanted = ["c".to_owned(), "a".to_owned()];
        assert_eq!(projection(&columns, Some(&wanted)).expect("two").1, [2, 0]);
        assert!(projection(&columns, Some(&["z".to_owned()])).is_err());
        assert!(check_columns(&orders(), Some(&["note".to_owned()])).is_ok());
        assert!(check_columns(&orders(), Some(&["z".to_owned()])).is_err());
    }

    #[test]
    fn errors_keep_codes_and_pick_exit_statuses() {
        let e = CliError::from(ClientError::Server(ringstore_net::ErrorReply {
            code: 201,
            message: "table x does not exist".into(),
        }));
        assert_eq!(e.line(Format::Table), "ERROR 201: table x does not exist\n");
        assert_eq!(e.exit_status(), 1);
        let e = CliError::from(ClientError::InvalidRequest("name too long".into()));
        assert_eq!(e.code, 803);
        let e = CliError::from(ClientError::Broken {
            addr: "127.0.0.1:1".parse().expect("addr"),
            reason: "gone".into(),
        });
        assert!(e.is_connection());
        assert_eq!(e.exit_status(), 2);
        let timed_out = |kind| ClientError::Io {
            op: "read from",
            addr: "127.0.0.1:1".parse().expect("addr"),
            source: std::io::Error::new(kind, "timed out"),
        };
        let e = CliError::from_client(
            timed_out(ErrorKind::TimedOut),
            Some(Duration::from_millis(1500)),
        );
        assert_eq!((e.code, e.exit_status()), (807, 3));
        assert!(e.message.starts_with("no answer from the node within 1.5 s (--timeout"), "{e}");
        assert!(e.message.ends_with("read from 127.0.0.1:1: timed out"), "{e}");
        let e = CliError::from_client(timed_out(ErrorKind::ConnectionRefused), None);
        assert_eq!((e.code, e.exit_status()), (805, 2));
        let e = partly_done(CliError::new(205, "type mismatch"), 2, 5);
        assert_eq!(e.message, "type mismatch (row 3 of 5; 2 written before it)");
        assert_eq!(count_text(1, "written"), "1 row written");
        assert_eq!(count_text(0, "deleted"), "0 rows deleted");
    }

    #[test]
    fn interactive_input_completes_at_semicolons_and_block_ends() {
        use InputState::*;
        assert_eq!(input_state(""), Empty);
        assert_eq!(input_state("  -- note\n;\n"), Empty);
        assert_eq!(input_state("## a comment\n"), Empty);
        assert_eq!(input_state("SELECT *\n"), Incomplete);
        assert_eq!(input_state("SELECT *\nFROM t;\n"), Complete);
        assert_eq!(input_state("STATS; SELECT\n"), Incomplete);
        assert_eq!(input_state("UPSERT INTO t (a) VALUES ('x;\n"), Incomplete);
        assert_eq!(input_state("UPSERT INTO t (a) VALUES ('x;\ny');\n"), Complete);
        assert_eq!(input_state("SELECT \"a;\n"), Complete, "a quoted name ends at its line");
        let block = "table create -name t\nadd-field -type LONG -name k\nprimary-key -field k\n\
                     exit\n";
        assert_eq!(input_state(block), Incomplete);
        assert_eq!(input_state(&format!("{block}plan add-table -name t -wait\n")), Complete);
        assert_eq!(input_state("table create -name t\n\n"), Complete, "a blank line ends it");
        assert_eq!(input_state("table create -name t;\n"), Complete);
        assert_eq!(input_state("STATS;\n## trailing comment\n"), Complete);
        let seed = "## Enter into table creation mode table create -name p ## fields \
                    add-field -type STRING -name n primary-key -field n exit \
                    plan add-table -name p -wait\n";
        assert_eq!(input_state(seed), Complete);
    }

    /// A batch is one interactive input: open from BEGIN BATCH until APPLY BATCH and its `;`.
    #[test]
    fn a_batch_is_complete_at_apply_batch() {
        use InputState::*;
        assert_eq!(input_state("BEGIN BATCH;\n"), Incomplete);
        assert_eq!(
            input_state("begin batch abort on failure;\nUPSERT INTO t (a) VALUES (1);\n"),
            Incomplete
        );
        assert_eq!(
            input_state("BEGIN BATCH;\nUPSERT INTO t (a) VALUES (1);\nAPPLY BATCH;\n"),
            Complete
        );
        assert_eq!(input_state("BEGIN BATCH;\nAPPLY BATCH\n"), Incomplete, "its ; ends it");
        assert_eq!(input_state("BEGIN BATCH; APPLY BATCH; STATS;\n"), Complete);
        assert_eq!(input_state("SELECT 'BEGIN BATCH';\n"), Complete);
    }

    #[test]
    fn exit_and_quit_leave() {
        assert!(is_exit("exit\n") && is_exit(" QUIT; \n") && is_exit("Exit;"));
        assert!(!is_exit("exit plan") && !is_exit("exits"));
    }
}
