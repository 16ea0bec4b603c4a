//! The DDL parser's error: where in the text it went wrong and why.
//!
//! Three kinds of mistake reach a caller. A syntax error names the position and what the grammar
//! expected there. A script error is text that parses but is used out of place (an `add-field`
//! outside table creation mode, a second `PRIMARY KEY` clause). A schema error is the table
//! module's own [`TableError`], wrapped with the position of the statement that produced it so its
//! stable code reaches the caller unchanged.

use std::fmt;

use super::limits::{DDL_STATEMENTS_MAX, DDL_TEXT_BYTES_MAX};
use crate::table::TableError;

pub type DdlResult<T> = std::result::Result<T, DdlError>;

/// A 1-based line and column; columns count characters, not bytes, so they match what an editor
/// shows for non-ASCII text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl Position {
    /// The position of byte `offset` in `text`. An offset that is not a character boundary (which
    /// the parser never produces) is clamped rather than trusted, so this can not panic.
    pub(crate) fn at(text: &str, offset: usize) -> Position {
        Position::locate(text, offset).1
    }

    /// The offset clamped down to a character boundary of `text`, and its position (shared
    /// with the CLI's statement errors).
    pub fn locate(text: &str, offset: usize) -> (usize, Position) {
        let mut end = offset.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let before = &text[..end];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let column = before[line_start..].chars().count() + 1;
        (end, Position { line, column })
    }
}

/// Positions of increasing offsets in one text, each found by scanning only from the previous
/// one: a parser that notes where every statement starts stays linear in the text (computing each
/// from the start of the text made a DDL request of 80,000 statements take 8.6 s).
#[derive(Debug)]
pub(crate) struct PositionTracker<'t> {
    text: &'t str,
    offset: usize,
    position: Position,
}

impl<'t> PositionTracker<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        PositionTracker { text, offset: 0, position: Position { line: 1, column: 1 } }
    }

    /// The position of byte `offset`; linear overall when offsets only grow.
    pub(crate) fn at(&mut self, offset: usize) -> Position {
        let mut end = offset.min(self.text.len());
        while !self.text.is_char_boundary(end) {
            end -= 1;
        }
        if end < self.offset {
            return Position::at(self.text, end);
        }
        for c in self.text[self.offset..end].chars() {
            if c == '\n' {
                self.position = Position { line: self.position.line + 1, column: 1 };
            } else {
                self.position.column += 1;
            }
        }
        self.offset = end;
        self.position
    }
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// Text that parses but does not fit where it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptProblem {
    #[error("{command} is only allowed in table creation mode (after table create, before exit)")]
    OutsideTableCreation { command: &'static str },
    #[error("table create {table} while table {open} is still being created; exit first")]
    NestedTableCreate { open: String, table: String },
    #[error("table {table} is created twice in this script")]
    TableCreatedTwice { table: String },
    #[error("plan add-table names table {table}, which this script never created")]
    PlanUnknownTable { table: String },
    #[error("plan add-table names table {table}, which is still in creation mode; exit first")]
    PlanUnfinishedTable { table: String },
    #[error("table {table} is still in creation mode at the end of the script; exit is missing")]
    UnfinishedTable { table: String },
    #[error(
        "table {table} was defined (table create ... exit) but never added, so nothing was \
         created; plan add-table -name {table} is missing"
    )]
    TableNotAdded { table: String },
    #[error("field {field}: -enum-values is only allowed with -type ENUM")]
    EnumValuesOnNonEnum { field: String },
    #[error("{what} is given twice")]
    Repeated { what: &'static str },
    #[error("SHARD(...) must be the first part of the primary key, and appear once")]
    ShardNotFirst,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DdlError {
    #[error("{at}: expected {expected}, found {found}")]
    Syntax { at: Position, expected: String, found: String },
    #[error("{at}: {problem}")]
    Script { at: Position, problem: ScriptProblem },
    /// The statement starting at `at` describes an invalid table; `source` keeps its code.
    #[error("{at}: {source}")]
    Schema { at: Position, source: TableError },
    #[error("DDL text is {bytes} bytes; the limit is {DDL_TEXT_BYTES_MAX} bytes")]
    TooLong { bytes: usize },
    #[error(
        "DDL text has {statements} statements; the limit is {DDL_STATEMENTS_MAX} per request \
         (send the rest in another request)"
    )]
    TooManyStatements { statements: usize },
}

impl DdlError {
    /// A stable numeric code: the table module's code for schema errors, 4xx for DDL errors.
    pub fn code(&self) -> u16 {
        match self {
            DdlError::Syntax { .. } => 401,
            DdlError::Script { .. } => 402,
            DdlError::TooLong { .. } => 403,
            DdlError::TooManyStatements { .. } => 404,
            DdlError::Schema { source, .. } => source.code(),
        }
    }

    /// Where the error is, if it has a place in the text.
    pub fn position(&self) -> Option<Position> {
        match self {
            DdlError::Syntax { at, .. } | DdlError::Script { at, .. } => Some(*at),
            DdlError::Schema { at, .. } => Some(*at),
            DdlError::TooLong { .. } | DdlError::TooManyStatements { .. } => None,
        }
    }

    /// The table module's error, for schema errors.
    pub fn table_error(&self) -> Option<&TableError> {
        match self {
            DdlError::Schema { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tracker_agrees_with_positions_from_the_start() {
        let text = "ab\nçd\n\nxyz";
        let mut tracker = PositionTracker::new(text);
        for offset in [0, 1, 3, 4, 5, 7, 8, 9, 99, 2, 0] {
            assert_eq!(tracker.at(offset), Position::at(text, offset), "offset {offset}");
        }
    }

    #[test]
    fn positions_count_lines_and_characters() {
        let text = "ab\ncé d";
        assert_eq!(Position::at(text, 0), Position { line: 1, column: 1 });
        assert_eq!(Position::at(text, 3), Position { line: 2, column: 1 });
        assert_eq!(Position::at(text, text.len() - 1), Position { line: 2, column: 4 });
        // A byte offset inside 'é' or past the end is clamped, not a panic.
        assert_eq!(Position::at(text, 5), Position { line: 2, column: 2 });
        assert_eq!(Position::at(text, 99), Position { line: 2, column: 5 });
    }

    /// Codes are part of the protocol: pinned here, and listed in docs/ERRORS.md.
    #[test]
    fn codes_are_stable_and_unique() {
        let at = Position { line: 1, column: 1 };
        let all = [
            DdlError::Syntax { at, expected: String::new(), found: String::new() },
            DdlError::Script {
                at,
                problem: ScriptProblem::OutsideTableCreation { command: "exit" },
            },
            DdlError::TooLong { bytes: 0 },
            DdlError::TooManyStatements { statements: 0 },
        ];
        let codes: Vec<u16> = all.iter().map(DdlError::code).collect();
        assert_eq!(codes, [401, 402, 403, 404]);
        crate::error_codes::assert_documented(&codes);
    }
}
