//! A batch (`BEGIN BATCH ... APPLY BATCH`) as one execute: its operations typed by the runner,
//! the checks the CLI makes before sending them (one shard key, each row once), and what the
//! outcome prints. Oracle NoSQL's `execute` and Tablestore's batch write of one partition: every
//! operation is applied in one atomic step; under `ABORT ON FAILURE` a failed condition writes
//! nothing (an error, 808, like Oracle's OperationExecutionException), else the operations whose
//! condition holds are written together and the others report their failure.

use ringstore_model::table::{Condition, TableSchema, Value, WriteOutcome};
use ringstore_net::{WriteOp, WriteOptions};
use serde_json::{json, Value as Json};

use super::output::{grid, json_line, value_text};
use super::Format;

/// Code of a batch that `ABORT ON FAILURE` aborted: an operation's condition failed, so nothing
/// was written.
pub const CODE_ABORTED: u16 = 808;

/// What one operation of a batch does, typed against the table's schema.
#[derive(Debug, Clone, PartialEq)]
pub enum Write {
    /// A whole row (an UPSERT row).
    Put(Vec<(String, Value)>),
    /// The whole primary key and the fields to set (None: clear).
    Update { key: Vec<(String, Value)>, set: Vec<(String, Option<Value>)> },
    /// The whole primary key.
    Delete(Vec<(String, Value)>),
}

/// One operation of a batch and where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchOp {
    /// The statement's number in the script.
    pub statement: usize,
    /// For an UPSERT of several rows, the 1-based row.
    pub row: Option<usize>,
    pub write: Write,
    pub options: WriteOptions,
}

impl BatchOp {
    /// `operation 3 (statement 4)`, `operation 2 (statement 3, row 2)`; `index` is 0-based.
    pub fn describe(&self, index: usize) -> String {
        match self.row {
            Some(row) => {
                format!("operation {} (statement {}, row {row})", index + 1, self.statement)
            }
            None => format!("operation {} (statement {})", index + 1, self.statement),
        }
    }

    fn verb(&self) -> &'static str {
        match self.write {
            Write::Put(_) => "UPSERT",
            Write::Update { .. } => "UPDATE",
            Write::Delete(_) => "DELETE",
        }
    }

    /// The fields that name the row: a put's row (key fields among the others) or the key.
    fn key_fields(&self) -> &[(String, Value)] {
        match &self.write {
            Write::Put(row) => row,
            Write::Update { key, .. } | Write::Delete(key) => key,
        }
    }
}

/// The borrowed form [`WriteOp`] takes, built once per batch.
#[derive(Debug)]
pub struct Borrowed<'a> {
    pairs: Vec<(&'a str, Value)>,
    set: Vec<(&'a str, Option<Value>)>,
    write: &'a Write,
}

impl<'a> Borrowed<'a> {
    pub fn of(op: &'a BatchOp) -> Borrowed<'a> {
        let pairs = |p: &'a [(String, Value)]| p.iter().map(|(n, v)| (n.as_str(), v.clone()));
        let (pairs, set) = match &op.write {
            Write::Put(row) | Write::Delete(row) => (pairs(row.as_slice()).collect(), Vec::new()),
            Write::Update { key, set } => (
                pairs(key.as_slice()).collect(),
                set.iter().map(|(n, v)| (n.as_str(), v.clone())).collect(),
            ),
        };
        Borrowed { pairs, set, write: &op.write }
    }

    pub fn op(&self) -> WriteOp<'_> {
        match self.write {
            Write::Put(_) => WriteOp::Put { row: &self.pairs },
            Write::Update { .. } => WriteOp::Update { key: &self.pairs, set: &self.set },
            Write::Delete(_) => WriteOp::Delete { key: &self.pairs },
        }
    }
}

/// The values of the first `count` primary key fields of `op`, in key order (None: not given).
fn key_values<'o>(schema: &TableSchema, op: &'o BatchOp, count: usize) -> Vec<Option<&'o Value>> {
    (0..count)
        .map(|i| {
            let name = schema.key_field(i).name().as_str();
            op.key_fields().iter().find(|(n, _)| n == name).map(|(_, v)| v)
        })
        .collect()
}

/// `userid = 'a', orderid = 1`: the first `count` key fields of `op`.
fn key_text(schema: &TableSchema, op: &BatchOp, count: usize) -> String {
    let values = key_values(schema, op, count);
    let pairs = values.iter().enumerate().map(|(i, v)| {
        let value = v.map_or_else(|| "(not given)".to_owned(), literal_text);
        format!("{} = {value}", schema.key_field(i).name())
    });
    pairs.collect::<Vec<_>>().join(", ")
}

/// A value as a statement would write it: strings quoted.
fn literal_text(value: &Value) -> String {
    match value {
        Value::String(s) | Value::Enum(s) => format!("'{}'", s.replace('\'', "''")),
        other => value_text(other),
    }
}

/// Checks what the node would refuse, with the CLI's words: every operation has the shard key
/// of the first (218 on the node), and no two operations write one row (219).
pub fn check(schema: &TableSchema, ops: &[BatchOp]) -> Result<(), String> {
    let Some(first) = ops.first() else { return Ok(()) };
    let shard_len = schema.shard_key_len();
    let shard = key_values(schema, first, shard_len);
    if let Some((i, op)) =
        ops.iter().enumerate().find(|(_, op)| key_values(schema, op, shard_len) != shard)
    {
        let names: Vec<&str> =
            (0..shard_len).map(|k| schema.key_field(k).name().as_str()).collect();
        return Err(format!(
            "{} has {}, but {} has {}: the writes of a batch must share one shard key ({}); \
             nothing was written",
            op.describe(i),
            key_text(schema, op, shard_len),
            first.describe(0),
            key_text(schema, first, shard_len),
            names.join(", ")
        ));
    }
    let whole = schema.primary_key().len();
    for (i, op) in ops.iter().enumerate() {
        let key = key_values(schema, op, whole);
        if let Some(j) = ops[..i].iter().position(|o| key_values(schema, o, whole) == key) {
            return Err(format!(
                "{} and {} both write the row {}: a batch may write each row once; nothing was \
                 written",
                ops[j].describe(j),
                op.describe(i),
                key_text(schema, op, whole)
            ));
        }
    }
    Ok(())
}

/// What an aborted batch's error says: which operation's condition failed.
pub fn aborted_message(ops: &[BatchOp], index: usize, outcome: &WriteOutcome) -> String {
    let what =
        ops.get(index).map_or_else(|| format!("operation {}", index + 1), |op| op.describe(index));
    let condition = match ops.get(index).map(|op| op.options.condition) {
        Some(Condition::IfAbsent) => " IF ABSENT".to_owned(),
        Some(Condition::IfPresent) => " IF PRESENT".to_owned(),
        Some(Condition::IfVersion(token)) => format!(" IF VERSION {}", token.0),
        _ => String::new(),
    };
    let current = match outcome {
        WriteOutcome::ConditionFailed { current: Some(c) } => {
            format!(" (the row's current token {}, version {})", c.token.0, c.version)
        }
        WriteOutcome::ConditionFailed { current: None } => " (the row does not exist)".to_owned(),
        _ => String::new(),
    };
    format!(
        "the batch was aborted (ABORT ON FAILURE): the condition{condition} of {what} \
         failed{current}; nothing was written"
    )
}

/// One operation's outcome: its name, and the token and version it shows.
fn outcome_cells(op: &BatchOp, outcome: &WriteOutcome) -> (&'static str, Option<(u64, u64)>) {
    match outcome {
        WriteOutcome::Written { token, version } => {
            let what = if let Write::Update { .. } = op.write { "updated" } else { "written" };
            (what, Some((token.0, *version)))
        }
        WriteOutcome::Deleted { existed: true } => ("deleted", None),
        WriteOutcome::Deleted { existed: false } => ("not found", None),
        WriteOutcome::ConditionFailed { current } => {
            ("condition failed", current.as_ref().map(|c| (c.token.0, c.version)))
        }
    }
}

/// One operation's line: its number, the op, its outcome's name, and its token and version.
type Line<'o> = (usize, &'o BatchOp, &'static str, Option<(u64, u64)>);

/// The outcome of a batch the node applied (one outcome per operation): one line (a table row,
/// a JSON object) per operation, then what the batch did.
pub fn outcome_text(format: Format, ops: &[BatchOp], outcomes: &[WriteOutcome]) -> String {
    let summary = summary(outcomes);
    let lines: Vec<Line<'_>> = ops
        .iter()
        .zip(outcomes)
        .enumerate()
        .map(|(i, (op, o))| {
            let (what, token) = outcome_cells(op, o);
            (i + 1, op, what, token)
        })
        .collect();
    match format {
        Format::Table => outcome_table(&lines) + &summary + "\n",
        Format::Json => {
            let operations: Vec<Json> = lines
                .iter()
                .map(|(n, op, what, token)| {
                    json!({
                        "op": n, "statement": op.statement, "write": op.verb(), "outcome": what,
                        "token": token.map(|(t, _)| t), "version": token.map(|(_, v)| v),
                    })
                })
                .collect();
            json_line(&json!({ "message": summary, "operations": operations }))
        }
    }
}

/// The operations as a table: op, statement, write, outcome, token, version.
fn outcome_table(lines: &[Line<'_>]) -> String {
    let columns = ["op", "statement", "write", "outcome", "token", "version"];
    let number = |v: u64| Some(Value::Long(v as i64));
    let rows: Vec<Vec<Option<Value>>> = lines
        .iter()
        .map(|(n, op, what, token)| {
            vec![
                number(*n as u64),
                number(op.statement as u64),
                Some(Value::from(op.verb())),
                Some(Value::from(*what)),
                token.and_then(|(t, _)| number(t)),
                token.and_then(|(_, v)| number(v)),
            ]
        })
        .collect();
    grid(&columns.map(String::from), &rows)
}

/// `3 operations applied atomically; the condition failed for operation 3, which wrote nothing`.
fn summary(outcomes: &[WriteOutcome]) -> String {
    let failed: Vec<String> = outcomes
        .iter()
        .enumerate()
        .filter(|(_, o)| matches!(o, WriteOutcome::ConditionFailed { .. }))
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    let applied = match outcomes.len() {
        1 => "1 operation applied atomically".to_owned(),
        n => format!("{n} operations applied atomically"),
    };
    let s = if failed.len() == 1 { "" } else { "s" };
    match failed.len() {
        0 => applied,
        _ => format!(
            "{applied}; the condition failed for operation{s} {}, which wrote nothing",
            failed.join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use ringstore_model::table::{CurrentRow, FieldType, RowToken, TableId};

    use super::*;

    /// `orders`: key (SHARD(userid), orderid).
    fn orders() -> TableSchema {
        TableSchema::builder(TableId(1), "orders")
            .field("userid", FieldType::String)
            .field("orderid", FieldType::Long)
            .field("amount", FieldType::Double)
            .primary_key_field("userid", false)
            .primary_key_field("orderid", false)
            .shard_key(&["userid"])
            .build()
            .expect("valid schema")
    }

    fn put(statement: usize, user: &str, order: i64) -> BatchOp {
        let row = vec![("orderid".to_owned(), Value::Long(order)), ("userid".into(), user.into())];
        BatchOp { statement, row: None, write: Write::Put(row), options: WriteOptions::default() }
    }

    fn delete(statement: usize, user: &str, order: i64) -> BatchOp {
        let key = vec![("userid".to_owned(), Value::from(user)), ("orderid".into(), order.into())];
        let options = WriteOptions { condition: Condition::IfPresent, ..WriteOptions::default() };
        BatchOp { statement, row: None, write: Write::Delete(key), options }
    }

    #[test]
    fn one_shard_key_and_each_row_once() {
        let schema = orders();
        assert_eq!(check(&schema, &[put(2, "a", 1), delete(3, "a", 2)]), Ok(()));
        let mut second_row = put(3, "b", 2);
        second_row.row = Some(2);
        let e = check(&schema, &[put(2, "a", 1), second_row]).expect_err("two shard keys");
        assert_eq!(
            e,
            "operation 2 (statement 3, row 2) has userid = 'b', but operation 1 (statement 2) \
             has userid = 'a': the writes of a batch must share one shard key (userid); nothing \
             was written"
        );
        let e = check(&schema, &[put(2, "a", 1), put(3, "a", 2), delete(4, "a", 1)])
            .expect_err("one row twice");
        assert_eq!(
            e,
            "operation 1 (statement 2) and operation 3 (statement 4) both write the row userid \
             = 'a', orderid = 1: a batch may write each row once; nothing was written"
        );
    }

    #[test]
    fn outcomes_print_one_line_per_operation() {
        let ops = [put(2, "a", 1), delete(3, "a", 2), delete(4, "a", 3)];
        let current = CurrentRow { token: RowToken(9), version: 3, row: None };
        let outcomes = [
            WriteOutcome::Written { token: RowToken(42), version: 7 },
            WriteOutcome::Deleted { existed: true },
            WriteOutcome::ConditionFailed { current: Some(current) },
        ];
        let text = outcome_text(Format::Table, &ops, &outcomes);
        assert_eq!(
            text,
            "+----+-----------+--------+------------------+-------+---------+\n\
             | op | statement | write  | outcome          | token | version |\n\
             +----+-----------+--------+------------------+-------+---------+\n\
             |  1 |         2 | UPSERT | written          |    42 |       7 |\n\
             |  2 |         3 | DELETE | deleted          |  NULL |    NULL |\n\
             |  3 |         4 | DELETE | condition failed |     9 |       3 |\n\
             +----+-----------+--------+------------------+-------+---------+\n\
             3 operations applied atomically; the condition failed for operation 3, which \
             wrote nothing\n"
        );
        let json = outcome_text(Format::Json, &ops[..2], &outcomes[..2]);
        assert_eq!(
            json,
            "{\"message\":\"2 operations applied atomically\",\"operations\":[\
             {\"op\":1,\"statement\":2,\"write\":\"UPSERT\",\"outcome\":\"written\",\"token\":42,\"version\":7},\
             {\"op\":2,\"statement\":3,\"write\":\"DELETE\",\"outcome\":\"deleted\",\"token\":null,\"version\":null}]}\n"
        );
        let gone = [WriteOutcome::Deleted { existed: false }];
        assert!(outcome_text(Format::Table, &ops[1..2], &gone).contains("| not found |"));
    }

    #[test]
    fn an_abort_names_the_operation_and_its_condition() {
        let ops = [put(2, "a", 1), delete(3, "a", 2)];
        let failed = WriteOutcome::ConditionFailed { current: None };
        assert_eq!(
            aborted_message(&ops, 1, &failed),
            "the batch was aborted (ABORT ON FAILURE): the condition IF PRESENT of operation 2 \
             (statement 3) failed (the row does not exist); nothing was written"
        );
    }
}
