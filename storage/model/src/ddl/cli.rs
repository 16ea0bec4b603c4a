//! The Oracle NoSQL admin CLI script of the seed document: `table create`, `add-field`,
//! `primary-key`, `shard-key`, `exit` and `plan add-table`, with `##` comments.
//!
//! The script is parsed command by command into [`Command`]s and then run through a small state
//! machine ([`Script`]) that mirrors the CLI's table creation mode: `table create` opens a table,
//! the field and key commands fill it, `exit` closes it (the schema is checked here) and
//! `plan add-table` turns it into a [`Statement::CreateTable`].
//!
//! Comments are the subtle part. In a normal script a `##` comment runs to the end of its line. The
//! seed document, however, holds each script flattened onto one line, so there a comment must end
//! where the next command starts. A comment therefore also ends, at a word boundary, where a
//! command start follows: a command word followed by what that command must begin with
//! (`table create -name`, `add-field -`, `primary-key -field`, `shard-key -field`,
//! `plan add-table`, and `exit` followed by `##`, another command start, or the end of the text).
//! Requiring the follow-up keeps English comments such as "table creation mode" or "then exit"
//! inside the comment. Command words are lowercase and case-sensitive, as in the Oracle CLI.

use winnow::prelude::*;

use super::cli_syntax::{command, gap, Command};
use super::error::{DdlError, DdlResult, Position, PositionTracker, ScriptProblem};
use super::lex::{must, parse_error};
use super::statement::{place_of, IndexDraft, Role, Statement, TableDraft};
use crate::table::{FieldType, TableSchema};

/// Parses an admin CLI script; see [`super::parse_cli`].
pub(crate) fn parse(text: &str) -> DdlResult<Vec<Statement>> {
    let mut input = text;
    let mut script = Script::new(text);
    let mut positions = PositionTracker::new(text);
    loop {
        gap.parse_next(&mut input).map_err(|e| parse_error(text, input, e))?;
        if input.is_empty() {
            return script.end();
        }
        let (at, left) = (positions.at(text.len() - input.len()), input.len());
        let command = must(command, COMMAND_EXPECTED)
            .parse_next(&mut input)
            .map_err(|e| parse_error(text, input, e))?;
        script.apply(command, at, left)?;
    }
}

const COMMAND_EXPECTED: &str =
    "a command: table create, add-field, primary-key, shard-key, exit, plan add-table, plan \
     add-index or plan remove-index";

/// The CLI's table creation mode, and the tables waiting for `plan add-table`.
#[derive(Debug)]
struct Script<'t> {
    /// The script, for the positions of schema errors.
    text: &'t str,
    /// The table between `table create` and `exit`, with the position of its `table create`.
    open: Option<(TableDraft, Position)>,
    /// Tables closed by `exit` and not yet added by a plan.
    closed: Vec<(TableSchema, Position)>,
    statements: Vec<Statement>,
}

impl<'t> Script<'t> {
    fn new(text: &'t str) -> Script<'t> {
        Script { text, open: None, closed: Vec::new(), statements: Vec::new() }
    }

    /// Runs one command, which starts at `at` with `left` bytes of the text left.
    fn apply(&mut self, command: Command, at: Position, left: usize) -> DdlResult<()> {
        let problem = |problem| DdlError::Script { at, problem };
        match command {
            Command::TableCreate { table } => self.create(table, at, left).map_err(problem),
            Command::Exit => self.exit(at),
            Command::PlanAddTable { table, if_not_exists } => {
                self.plan(table, if_not_exists).map_err(problem)
            }
            Command::PlanAddIndex { index, table, fields, if_not_exists, wait } => {
                self.index(IndexDraft::Create { index, table, fields, if_not_exists, wait }, at)
            }
            Command::PlanRemoveIndex { index, table } => {
                self.index(IndexDraft::Drop { index, table, if_exists: false }, at)
            }
            other => self.define(other, left).map_err(problem),
        }
    }

    /// `plan add-index` / `plan remove-index`: an index of a table that exists (or that an
    /// earlier `plan add-table` of the script adds), so no table creation mode is involved.
    fn index(&mut self, draft: IndexDraft, at: Position) -> DdlResult<()> {
        let statement = draft.finish().map_err(|source| DdlError::Schema { at, source })?;
        self.statements.push(statement);
        Ok(())
    }

    fn create(&mut self, table: String, at: Position, left: usize) -> Result<(), ScriptProblem> {
        if let Some((open, _)) = &self.open {
            return Err(ScriptProblem::NestedTableCreate { open: open.name.clone(), table });
        }
        if self.closed.iter().any(|(s, _)| s.name().as_str() == table) {
            return Err(ScriptProblem::TableCreatedTwice { table });
        }
        let mut draft = TableDraft::new(&table);
        draft.places.push((table, Role::Table, left));
        self.open = Some((draft, at));
        Ok(())
    }

    /// A command of table creation mode: add-field, primary-key or shard-key. A schema error
    /// about a name it gives points at the command.
    fn define(&mut self, command: Command, left: usize) -> Result<(), ScriptProblem> {
        let Some((draft, _)) = &mut self.open else {
            return Err(ScriptProblem::OutsideTableCreation { command: command.word() });
        };
        match &command {
            Command::AddField { field, .. } => {
                draft.places.push((field.clone(), Role::Field, left))
            }
            Command::PrimaryKey { fields } | Command::ShardKey { fields } => {
                draft.places.extend(fields.iter().map(|f| (f.clone(), Role::Key, left)));
            }
            _ => {}
        }
        match command {
            Command::AddField { field, ty, enum_values } => {
                add_field(draft, field, ty, enum_values)
            }
            Command::PrimaryKey { fields } if draft.key.is_empty() => {
                draft.key = fields.into_iter().map(|f| (f, false)).collect();
                Ok(())
            }
            Command::ShardKey { fields } if draft.shard.is_none() => {
                draft.shard = Some(fields);
                Ok(())
            }
            other => Err(ScriptProblem::Repeated { what: other.word() }),
        }
    }

    /// `exit` closes the open table; its schema is checked now, as the CLI does.
    fn exit(&mut self, exit_at: Position) -> DdlResult<()> {
        let Some((draft, at)) = self.open.take() else {
            let problem = ScriptProblem::OutsideTableCreation { command: "exit" };
            return Err(DdlError::Script { at: exit_at, problem });
        };
        let schema = draft.build().map_err(|source| {
            let at = place_of(&source, &draft.places)
                .map_or(at, |left| Position::at(self.text, self.text.len() - left));
            DdlError::Schema { at, source }
        })?;
        self.closed.push((schema, at));
        Ok(())
    }

    fn plan(&mut self, table: String, if_not_exists: bool) -> Result<(), ScriptProblem> {
        if self.open.as_ref().is_some_and(|(d, _)| d.name == table) {
            return Err(ScriptProblem::PlanUnfinishedTable { table });
        }
        let Some(index) = self.closed.iter().position(|(s, _)| s.name().as_str() == table) else {
            return Err(ScriptProblem::PlanUnknownTable { table });
        };
        let (schema, _) = self.closed.remove(index);
        self.statements.push(Statement::CreateTable { schema, if_not_exists });
        Ok(())
    }

    /// The end of the script: every table must have been closed and added.
    fn end(self) -> DdlResult<Vec<Statement>> {
        if let Some((draft, at)) = self.open {
            let problem = ScriptProblem::UnfinishedTable { table: draft.name };
            return Err(DdlError::Script { at, problem });
        }
        if let Some((schema, at)) = self.closed.into_iter().next() {
            let problem = ScriptProblem::TableNotAdded { table: schema.name().to_string() };
            return Err(DdlError::Script { at, problem });
        }
        Ok(self.statements)
    }
}

fn add_field(
    draft: &mut TableDraft,
    field: String,
    ty: FieldType,
    enum_values: Option<Vec<String>>,
) -> Result<(), ScriptProblem> {
    let ty = match (ty, enum_values) {
        // An ENUM without values reaches the builder empty, which reports it with its own code.
        (FieldType::Enum(_), values) => FieldType::Enum(values.unwrap_or_default()),
        (_, Some(_)) => return Err(ScriptProblem::EnumValuesOnNonEnum { field }),
        (ty, None) => ty,
    };
    draft.fields.push((field, ty));
    Ok(())
}
