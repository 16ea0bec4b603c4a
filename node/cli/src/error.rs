//! The statement parser's error: which statement, where in the script, and why.
//!
//! Three kinds of mistake reach a caller. A syntax error names what the grammar expected and the
//! token it found instead. An invalid statement parses but contradicts itself (a column named
//! twice, two range fields). A limit error names the limit, its value and what was found. Every
//! error but a script over [`SCRIPT_BYTES_MAX`] carries a [`Place`].

use std::fmt;

use super::limits::{FOUND_CHARS_MAX, SCRIPT_BYTES_MAX};

/// Where an error is: the 1-based number of the statement in the script, the byte offset into
/// the script, and the 1-based line and column (columns count characters, as an editor does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    pub statement: usize,
    pub offset: usize,
    pub line: usize,
    pub column: usize,
}

impl Place {
    /// The place of byte `offset` of `text`. An offset that is not a character boundary (which
    /// the parser never produces) is clamped rather than trusted, so this can not panic.
    pub(crate) fn at(text: &str, statement: usize, offset: usize) -> Place {
        let (offset, p) = ringstore_model::ddl::Position::locate(text, offset);
        Place { statement, offset, line: p.line, column: p.column }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Place { statement, offset, line, column } = self;
        write!(f, "statement {statement}, line {line}, column {column} (byte {offset})")
    }
}

/// A statement that parses but contradicts itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Problem {
    #[error("column {column} is named twice")]
    DuplicateColumn { column: String },
    #[error("row {row} has {values} values; expected {columns}, one per column")]
    RowWidth { row: usize, values: usize, columns: usize },
    #[error("field {field} is given twice")]
    FieldTwice { field: String },
    #[error("field {field} has both an equality and a range; give one or the other")]
    EqualityAndRange { field: String },
    #[error("only one field may have a range: {range} has one, so {field} can not")]
    SecondRangeField { range: String, field: String },
    #[error("field {field} has two {side} bounds")]
    BoundTwice { field: String, side: &'static str },
    #[error("ORDER BY {field}: a query with a range on {range} can only be ordered by {range}")]
    OrderByNotRange { field: String, range: String },
    #[error(
        "BEGIN BATCH inside the batch that statement {begin} began; APPLY BATCH ends it first"
    )]
    BatchNested { begin: usize },
    #[error("APPLY BATCH without a BEGIN BATCH before it")]
    BatchNotOpen,
    #[error("the batch has no writes; put UPSERT, UPDATE or DELETE statements before APPLY BATCH")]
    BatchEmpty,
    #[error(
        "a batch holds only UPSERT, UPDATE and DELETE statements, and this is {what}; APPLY \
         BATCH ends the batch"
    )]
    NotABatchWrite { what: &'static str },
    #[error(
        "a batch writes one table (it is one execute): this statement writes {table}, but the \
         batch's first write is on {first}"
    )]
    BatchTables { table: String, first: String },
}

/// Why a script could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StatementError {
    #[error("{at}: expected {expected}, found {found}")]
    Syntax { at: Place, expected: String, found: String },
    #[error("{at}: {problem}")]
    Invalid { at: Place, problem: Problem },
    #[error("{at}: {what} is {found}, over the limit {limit_name} = {limit}")]
    Limit { at: Place, what: &'static str, found: usize, limit_name: &'static str, limit: usize },
    #[error("the script is {bytes} bytes, over the limit SCRIPT_BYTES_MAX = {SCRIPT_BYTES_MAX}")]
    ScriptTooLong { bytes: usize },
}

/// Code of [`StatementError::Syntax`].
pub const CODE_SYNTAX: u16 = 801;
/// Code of [`StatementError::Invalid`].
pub const CODE_INVALID: u16 = 802;
/// Code of [`StatementError::Limit`] and [`StatementError::ScriptTooLong`].
pub const CODE_LIMIT: u16 = 803;

impl StatementError {
    /// A stable numeric code for `ERROR <code>: ...` lines: 8xx, the client's own range.
    pub fn code(&self) -> u16 {
        match self {
            StatementError::Syntax { .. } => CODE_SYNTAX,
            StatementError::Invalid { .. } => CODE_INVALID,
            StatementError::Limit { .. } | StatementError::ScriptTooLong { .. } => CODE_LIMIT,
        }
    }

    /// Where the error is; None only for a script over [`SCRIPT_BYTES_MAX`].
    pub fn place(&self) -> Option<Place> {
        match self {
            StatementError::Syntax { at, .. }
            | StatementError::Invalid { at, .. }
            | StatementError::Limit { at, .. } => Some(*at),
            StatementError::ScriptTooLong { .. } => None,
        }
    }
}

/// `text` as shown in a message: quoted, and cut to [`FOUND_CHARS_MAX`] characters.
pub(crate) fn quoted_excerpt(text: &str) -> String {
    match text.char_indices().nth(FOUND_CHARS_MAX) {
        Some((cut, _)) => format!("{:?}...", &text[..cut]),
        None => format!("{text:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_count_lines_and_characters() {
        let text = "ab\ncé d";
        assert_eq!(Place::at(text, 1, 0), Place { statement: 1, offset: 0, line: 1, column: 1 });
        assert_eq!(Place::at(text, 2, 3), Place { statement: 2, offset: 3, line: 2, column: 1 });
        let last = text.len() - 1;
        assert_eq!(Place::at(text, 1, last).column, 4);
        // Inside 'é' or past the end: clamped, not a panic.
        assert_eq!(Place::at(text, 1, 5).offset, 4);
        assert_eq!(Place::at(text, 1, 99).offset, text.len());
    }

    #[test]
    fn messages_name_the_place_and_the_limit() {
        let at = Place { statement: 2, offset: 10, line: 1, column: 11 };
        let syntax = StatementError::Syntax { at, expected: "FROM".into(), found: "\"x\"".into() };
        assert_eq!(
            syntax.to_string(),
            "statement 2, line 1, column 11 (byte 10): expected FROM, found \"x\""
        );
        let limit = StatementError::Limit {
            at,
            what: "the number of rows of one UPSERT",
            found: 1001,
            limit_name: "UPSERT_ROWS_MAX",
            limit: 1000,
        };
        assert!(limit.to_string().ends_with(
            "the number of rows of one UPSERT is 1001, over the limit UPSERT_ROWS_MAX = 1000"
        ));
        assert_eq!([syntax.code(), limit.code()], [801, 803]);
        assert_eq!(StatementError::ScriptTooLong { bytes: 1 }.place(), None);
    }

    #[test]
    fn excerpts_are_cut() {
        assert_eq!(quoted_excerpt("ab"), "\"ab\"");
        let long = "x".repeat(FOUND_CHARS_MAX + 5);
        assert_eq!(quoted_excerpt(&long), format!("{:?}...", "x".repeat(FOUND_CHARS_MAX)));
    }
}
