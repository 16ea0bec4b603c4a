//! `BEGIN BATCH [ABORT ON FAILURE]; <writes>; APPLY BATCH`: the statements between the two
//! markers become one [`Statement::Batch`], which the runner sends as one execute.
//!
//! The markers are statements of their own (each ends at its `;`), so the writes between them
//! keep their statement numbers and every error points at the statement it is about. A batch
//! holds UPSERT, UPDATE and DELETE statements on one table, at most [`EXECUTE_OPS_MAX`]
//! operations (an UPSERT counts one per row); the parser checks that much. That the writes share
//! one shard key and each names a whole primary key takes the schema, so the runner checks it.

use ringstore_net::request::EXECUTE_OPS_MAX;

use super::ast::{Batch, Statement};
use super::cursor::{Cursor, Result};
use super::error::{Place, Problem, StatementError};

/// A batch marker statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    Begin { abort_on_failure: bool },
    Apply,
}

/// `BEGIN BATCH [ABORT ON FAILURE]` or `APPLY BATCH`, the whole statement; None (nothing
/// consumed) when the statement starts with neither `BEGIN` nor `APPLY`.
pub(crate) fn marker(c: &mut Cursor<'_>) -> Result<Option<Marker>> {
    if c.eat_keyword("APPLY") {
        c.expect_keyword("BATCH")?;
        c.finish("")?;
        return Ok(Some(Marker::Apply));
    }
    if !c.eat_keyword("BEGIN") {
        return Ok(None);
    }
    c.expect_keyword("BATCH")?;
    let abort_on_failure = c.eat_keyword("ABORT");
    if abort_on_failure {
        c.expect_keyword("ON")?;
        c.expect_keyword("FAILURE")?;
    }
    c.finish(if abort_on_failure { "" } else { "ABORT ON FAILURE" })?;
    Ok(Some(Marker::Begin { abort_on_failure }))
}

/// Whether the SQL statement whose first two words are `first` and `second` is a batch marker,
/// and which: for the interactive prompt, which waits for `APPLY BATCH` once a batch is open.
pub fn marker_words(first: &str, second: &str) -> Option<bool> {
    let is = |w: &str, k: &str| w.eq_ignore_ascii_case(k);
    match (first, second) {
        (f, s) if is(f, "BEGIN") && is(s, "BATCH") => Some(true),
        (f, s) if is(f, "APPLY") && is(s, "BATCH") => Some(false),
        _ => None,
    }
}

/// The batch being collected, if one is open.
#[derive(Debug, Default)]
pub(crate) struct Batches {
    open: Option<Open>,
}

#[derive(Debug)]
struct Open {
    batch: Batch,
    /// Where its BEGIN BATCH is, for an error at the end of the script.
    begin: Place,
    ops: usize,
}

impl Batches {
    /// Handles a marker statement at `at`: opens a batch, or closes the open one and gives it.
    pub fn marker(&mut self, marker: Marker, at: Place) -> Result<Option<Statement>> {
        let invalid = |problem| StatementError::Invalid { at, problem };
        match (marker, self.open.take()) {
            (Marker::Begin { abort_on_failure }, None) => {
                let batch = Batch { abort_on_failure, writes: Vec::new() };
                self.open = Some(Open { batch, begin: at, ops: 0 });
                Ok(None)
            }
            (Marker::Begin { .. }, Some(open)) => {
                Err(invalid(Problem::BatchNested { begin: open.begin.statement }))
            }
            (Marker::Apply, None) => Err(invalid(Problem::BatchNotOpen)),
            (Marker::Apply, Some(open)) if open.batch.writes.is_empty() => {
                Err(invalid(Problem::BatchEmpty))
            }
            (Marker::Apply, Some(open)) => Ok(Some(Statement::Batch(open.batch))),
        }
    }

    /// Takes `statement` (at `at`) into the open batch, or gives it back when none is open.
    pub fn statement(&mut self, statement: Statement, at: Place) -> Result<Option<Statement>> {
        let Some(open) = self.open.as_mut() else { return Ok(Some(statement)) };
        let invalid = |problem| StatementError::Invalid { at, problem };
        let (table, ops) = match &statement {
            Statement::Upsert { table, rows, .. } => (table, rows.len()),
            Statement::Update { table, .. } | Statement::Delete { table, .. } => (table, 1),
            other => return Err(invalid(Problem::NotABatchWrite { what: kind(other) })),
        };
        if let Some((_, first)) = open.batch.writes.first() {
            let first = table_name(first);
            if first != table {
                let (table, first) = (table.clone(), first.to_owned());
                return Err(invalid(Problem::BatchTables { table, first }));
            }
        }
        open.ops += ops;
        if open.ops > EXECUTE_OPS_MAX {
            return Err(StatementError::Limit {
                at,
                what: "the number of operations of one batch (one per UPSERT row)",
                found: open.ops,
                limit_name: "EXECUTE_OPS_MAX",
                limit: EXECUTE_OPS_MAX,
            });
        }
        open.batch.writes.push((at.statement, statement));
        Ok(None)
    }

    /// Refuses an admin CLI block (at `at`) inside a batch.
    pub fn admin_block(&self, at: Place) -> Result<()> {
        match self.open {
            None => Ok(()),
            Some(_) => Err(StatementError::Invalid {
                at,
                problem: Problem::NotABatchWrite { what: "an admin CLI block" },
            }),
        }
    }

    /// At the end of the script (`end`): a batch still open is an error.
    pub fn finish(self, end: Place) -> Result<()> {
        match self.open {
            None => Ok(()),
            Some(open) => Err(StatementError::Syntax {
                at: end,
                expected: format!(
                    "APPLY BATCH to end the batch of statement {}",
                    open.begin.statement
                ),
                found: "the end of the script".to_owned(),
            }),
        }
    }
}

/// The table a write statement writes.
fn table_name(statement: &Statement) -> &str {
    match statement {
        Statement::Upsert { table, .. }
        | Statement::Update { table, .. }
        | Statement::Delete { table, .. } => table,
        _ => "",
    }
}

/// What a statement is, for "a batch holds only ...".
fn kind(statement: &Statement) -> &'static str {
    match statement {
        Statement::Select(_) => "a SELECT",
        Statement::Ddl(_) => "DDL",
        Statement::Describe { .. } => "a DESCRIBE",
        Statement::Stats => "STATS",
        Statement::Topology => "TOPOLOGY",
        Statement::Batch(_) => "a batch",
        Statement::Upsert { .. } | Statement::Update { .. } | Statement::Delete { .. } => "a write",
    }
}
