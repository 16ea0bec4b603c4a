//! The SQL-style grammar: `CREATE TABLE`, `DROP TABLE`, `ALTER TABLE`, `DESCRIBE`, `SHOW
//! TABLES`, and the index statements `CREATE INDEX`, `DROP INDEX`, `SHOW INDEXES` (the EBNF is in
//! the module documentation of [`super`]).
//!
//! Keywords are matched without regard to case and only as whole words, so `DESCX` is never
//! `DESC`; names are case-sensitive. Every token parser skips the whitespace and `--` comments after
//! it, so each parser starts at a token. A keyword is only reserved where it would be ambiguous:
//! a field may be called `key` or `shard`, but a table definition element that starts with
//! `PRIMARY KEY` is the key clause.

use winnow::ascii::{multispace1, till_line_ending};
use winnow::combinator::{alt, eof, fail, opt, peek, repeat};
use winnow::error::{ContextError, ErrMode};
use winnow::prelude::*;
use winnow::stream::Stream;
use winnow::token::take_while;

use super::error::{DdlError, DdlResult, Position, PositionTracker, ScriptProblem};
use super::lex::{field_type_named, invalid, is_word_char, must, number, parse_error, In};
use super::statement::{
    place_of, table_name, IndexDraft, OptionChanges, Role, Statement, TableDraft,
};
use crate::table::FieldType;

/// A statement as written, before its names and schema are checked.
#[derive(Debug)]
enum Parsed {
    Create { draft: TableDraft, if_not_exists: bool },
    Drop { table: String, if_exists: bool },
    Alter { table: String, changes: OptionChanges },
    Describe { table: String },
    ShowTables,
    Index(IndexDraft),
}

/// Parses `;`-separated SQL statements; see [`super::parse_sql`].
pub(crate) fn parse(text: &str) -> DdlResult<Vec<Statement>> {
    let mut input = text;
    let mut statements = Vec::new();
    let separators = |i: &mut In<'_>| repeat(0.., (';', gap)).map(|()| ()).parse_next(i);
    (gap, separators).parse_next(&mut input).map_err(|e| parse_error(text, input, e))?;
    let mut positions = PositionTracker::new(text);
    while !input.is_empty() {
        let start = positions.at(text.len() - input.len());
        let parsed = statement.parse_next(&mut input).map_err(|e| parse_error(text, input, e))?;
        let places = match &parsed {
            Parsed::Create { draft, .. } => draft.places.clone(),
            _ => Vec::new(),
        };
        statements.push(finish(parsed).map_err(|source| {
            let at = place_of(&source, &places)
                .map_or(start, |left| Position::at(text, text.len() - left));
            DdlError::Schema { at, source }
        })?);
        let end = alt(((';', gap, separators).void(), eof.void()));
        must(end, "; or the end of the text")
            .parse_next(&mut input)
            .map_err(|e| parse_error(text, input, e))?;
    }
    Ok(statements)
}

/// Checks the names and builds the schema of a parsed statement.
fn finish(parsed: Parsed) -> crate::table::TableResult<Statement> {
    Ok(match parsed {
        Parsed::Create { draft, if_not_exists } => {
            Statement::CreateTable { schema: draft.build()?, if_not_exists }
        }
        Parsed::Drop { table, if_exists } => {
            Statement::DropTable { table: table_name(&table)?, if_exists }
        }
        Parsed::Describe { table } => Statement::DescribeTable { table: table_name(&table)? },
        Parsed::Alter { table, changes } => {
            Statement::AlterTable { table: table_name(&table)?, changes }
        }
        Parsed::ShowTables => Statement::ShowTables,
        Parsed::Index(draft) => draft.finish()?,
    })
}

fn statement(i: &mut In<'_>) -> ModalResult<Parsed> {
    let verbs = alt((
        (kw("CREATE"), create).map(|(_, p)| p),
        (kw("DROP"), drop).map(|(_, p)| p),
        (kw("ALTER"), alter).map(|(_, p)| p),
        (kw("DESCRIBE"), describe).map(|(_, p)| p),
        (kw("SHOW"), show).map(|(_, p)| p),
    ));
    must(verbs, STATEMENT_EXPECTED).parse_next(i)
}

const STATEMENT_EXPECTED: &str = "a statement: CREATE TABLE, CREATE INDEX, DROP TABLE, DROP \
    INDEX, ALTER TABLE, DESCRIBE TABLE, SHOW TABLES or SHOW INDEXES";

/// `SHOW` has been read: `TABLES`, or `INDEXES ON t`.
fn show(i: &mut In<'_>) -> ModalResult<Parsed> {
    if opt(kw("INDEXES")).parse_next(i)?.is_some() {
        must(kw("ON"), "ON and a table name").parse_next(i)?;
        let table = must(name, "a table name").parse_next(i)?.to_owned();
        return Ok(Parsed::Index(IndexDraft::Show { table }));
    }
    must(kw("TABLES"), "TABLES or INDEXES").map(|()| Parsed::ShowTables).parse_next(i)
}

/// `CREATE INDEX` has been read: `[IF NOT EXISTS] idx ON t (f1, ...)`.
fn create_index(i: &mut In<'_>) -> ModalResult<Parsed> {
    let if_not_exists = opt((kw("IF"), kw("NOT"), kw("EXISTS"))).parse_next(i)?.is_some();
    let index = must(name, "an index name").parse_next(i)?.to_owned();
    must(kw("ON"), "ON and a table name").parse_next(i)?;
    let table = must(name, "a table name").parse_next(i)?.to_owned();
    must(punct('('), "( and the indexed fields").parse_next(i)?;
    let mut fields = Vec::new();
    loop {
        fields.push(must(name, "an indexed field name").parse_next(i)?.to_owned());
        if opt(punct(',')).parse_next(i)?.is_none() {
            break;
        }
    }
    must(punct(')'), ", or )").parse_next(i)?;
    let wait = false;
    Ok(Parsed::Index(IndexDraft::Create { index, table, fields, if_not_exists, wait }))
}

/// `DROP INDEX` has been read: `[IF EXISTS] idx ON t`.
fn drop_index(i: &mut In<'_>) -> ModalResult<Parsed> {
    let if_exists = opt((kw("IF"), kw("EXISTS"))).parse_next(i)?.is_some();
    let index = must(name, "an index name").parse_next(i)?.to_owned();
    must(kw("ON"), "ON and a table name").parse_next(i)?;
    let table = must(name, "a table name").parse_next(i)?.to_owned();
    Ok(Parsed::Index(IndexDraft::Drop { index, table, if_exists }))
}

fn create(i: &mut In<'_>) -> ModalResult<Parsed> {
    if opt(kw("INDEX")).parse_next(i)?.is_some() {
        return create_index(i);
    }
    must(kw("TABLE"), "TABLE or INDEX").parse_next(i)?;
    let if_not_exists = opt((kw("IF"), kw("NOT"), kw("EXISTS"))).parse_next(i)?.is_some();
    let left = i.len();
    let mut draft = TableDraft::new(must(name, "a table name").parse_next(i)?);
    draft.places.push((draft.name.clone(), Role::Table, left));
    must(punct('('), "( and the table's fields").parse_next(i)?;
    loop {
        element(i, &mut draft)?;
        if opt(punct(',')).parse_next(i)?.is_none() {
            break;
        }
    }
    must(punct(')'), ", or )").parse_next(i)?;
    options(i, &mut draft.options)?;
    Ok(Parsed::Create { draft, if_not_exists })
}

/// One element of the table body: a field definition or the primary key clause.
fn element(i: &mut In<'_>, draft: &mut TableDraft) -> ModalResult<()> {
    let start = i.checkpoint();
    if opt((kw("PRIMARY"), kw("KEY"))).parse_next(i)?.is_some() {
        if !draft.key.is_empty() {
            i.reset(&start);
            return invalid(i, ScriptProblem::Repeated { what: "PRIMARY KEY" });
        }
        return primary_key(i, draft);
    }
    let left = i.len();
    let field = must(name, "a field name or PRIMARY KEY").parse_next(i)?;
    draft.places.push((field.to_owned(), Role::Field, left));
    let ty = must(field_type, TYPE_EXPECTED).parse_next(i)?;
    draft.fields.push((field.to_owned(), ty));
    Ok(())
}

const TYPE_EXPECTED: &str =
    "a field type: INTEGER, LONG, FLOAT, DOUBLE, STRING, BINARY, BOOLEAN, TIMESTAMP or ENUM(...)";

fn field_type(i: &mut In<'_>) -> ModalResult<FieldType> {
    if opt(kw("ENUM")).parse_next(i)?.is_some() {
        return enum_values(i);
    }
    let simple = |w: &str| field_type_named(w).filter(|t| !matches!(t, FieldType::Enum(_)));
    (take_while(1.., is_word_char).verify_map(simple), gap).map(|(ty, ())| ty).parse_next(i)
}

fn enum_values(i: &mut In<'_>) -> ModalResult<FieldType> {
    must(punct('('), "( and the ENUM values").parse_next(i)?;
    let mut values = Vec::new();
    loop {
        values.push(must(name, "an ENUM value").parse_next(i)?.to_owned());
        if opt(punct(',')).parse_next(i)?.is_none() {
            break;
        }
    }
    must(punct(')'), ", or )").parse_next(i)?;
    Ok(FieldType::Enum(values))
}

/// `PRIMARY KEY` has been read: `( [SHARD(key fields),] key fields )`.
fn primary_key(i: &mut In<'_>, draft: &mut TableDraft) -> ModalResult<()> {
    must(punct('('), "( and the primary key fields").parse_next(i)?;
    loop {
        let start = i.checkpoint();
        if opt((kw("SHARD"), punct('('))).parse_next(i)?.is_some() {
            if !draft.key.is_empty() || draft.shard.is_some() {
                i.reset(&start);
                return invalid(i, ScriptProblem::ShardNotFirst);
            }
            shard_group(i, draft)?;
        } else {
            key_field(i, draft)?;
        }
        if opt(punct(',')).parse_next(i)?.is_none() {
            break;
        }
    }
    must(punct(')'), ", or )").parse_next(i)?;
    Ok(())
}

/// `SHARD(` has been read: the shard key fields, which also start the primary key.
fn shard_group(i: &mut In<'_>, draft: &mut TableDraft) -> ModalResult<()> {
    loop {
        key_field(i, draft)?;
        if opt(punct(',')).parse_next(i)?.is_none() {
            break;
        }
    }
    must(punct(')'), ", or ) to end SHARD(...)").parse_next(i)?;
    draft.shard = Some(draft.key.iter().map(|(n, _)| n.clone()).collect());
    Ok(())
}

/// One primary key field and its order, added to the draft's key.
fn key_field(i: &mut In<'_>, draft: &mut TableDraft) -> ModalResult<()> {
    let left = i.len();
    let field = must(name, "a primary key field name").parse_next(i)?.to_owned();
    let order = opt(alt((kw("ASC").value(false), kw("DESC").value(true)))).parse_next(i)?;
    draft.places.push((field.clone(), Role::Key, left));
    draft.key.push((field, order.unwrap_or(false)));
    Ok(())
}

/// `USING TTL n unit` (or `USING TTL NONE`), `WITH VERSIONS n` and `WITH VERSION OFFSET n unit`,
/// each at most once, in any order.
fn options(i: &mut In<'_>, changes: &mut OptionChanges) -> ModalResult<()> {
    loop {
        let start = i.checkpoint();
        let repeated = if opt(kw("USING")).parse_next(i)?.is_some() {
            must(kw("TTL"), "TTL").parse_next(i)?;
            let ttl = alt((kw("NONE").value(None::<u64>), duration.map(Some))).parse_next(i)?;
            changes.ttl_seconds.replace(ttl).is_some().then_some("USING TTL")
        } else if opt(kw("WITH")).parse_next(i)?.is_some() {
            if opt(kw("VERSIONS")).parse_next(i)?.is_some() {
                let versions = must((number, gap), "a number of versions").parse_next(i)?.0;
                changes.max_versions.replace(versions).is_some().then_some("WITH VERSIONS")
            } else {
                must((kw("VERSION"), kw("OFFSET")), "VERSIONS or VERSION OFFSET").parse_next(i)?;
                let offset = duration(i)?;
                let old = changes.max_version_offset_seconds.replace(offset);
                old.is_some().then_some("WITH VERSION OFFSET")
            }
        } else {
            return Ok(());
        };
        if let Some(what) = repeated {
            i.reset(&start);
            return invalid(i, ScriptProblem::Repeated { what });
        }
    }
}

/// `n unit`, in seconds (TTLs and the version offset). A product past `u64` saturates, so the
/// schema builder reports it as out of range instead of the parser wrapping it into a small,
/// valid duration.
fn duration(i: &mut In<'_>) -> ModalResult<u64> {
    let count = must((number, gap), "a number").parse_next(i)?.0;
    let units = alt((
        alt((kw("SECONDS"), kw("SECOND"))).value(1u64),
        alt((kw("HOURS"), kw("HOUR"))).value(3_600),
        alt((kw("DAYS"), kw("DAY"))).value(86_400),
    ));
    let unit = must(units, "a unit: SECONDS, HOURS or DAYS").parse_next(i)?;
    Ok(count.saturating_mul(unit))
}

/// `ALTER` has been read: `TABLE t` and at least one option.
fn alter(i: &mut In<'_>) -> ModalResult<Parsed> {
    must(kw("TABLE"), "TABLE").parse_next(i)?;
    let table = must(name, "a table name").parse_next(i)?.to_owned();
    let mut changes = OptionChanges::default();
    options(i, &mut changes)?;
    if changes.is_empty() {
        return must(fail, "a table option: USING TTL, WITH VERSIONS or WITH VERSION OFFSET")
            .parse_next(i);
    }
    Ok(Parsed::Alter { table, changes })
}

fn drop(i: &mut In<'_>) -> ModalResult<Parsed> {
    if opt(kw("INDEX")).parse_next(i)?.is_some() {
        return drop_index(i);
    }
    must(kw("TABLE"), "TABLE or INDEX").parse_next(i)?;
    let if_exists = opt((kw("IF"), kw("EXISTS"))).parse_next(i)?.is_some();
    let table = must(name, "a table name").parse_next(i)?.to_owned();
    Ok(Parsed::Drop { table, if_exists })
}

/// `DESCRIBE [TABLE] t`; `DESCRIBE TABLE` alone describes a table called `TABLE`.
fn describe(i: &mut In<'_>) -> ModalResult<Parsed> {
    opt((kw("TABLE"), peek(name))).parse_next(i)?;
    let table = must(name, "a table name").parse_next(i)?.to_owned();
    Ok(Parsed::Describe { table })
}

/// A keyword: a whole word equal to `word` in any case, and the gap after it.
fn kw<'a>(word: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    move |i: &mut In<'a>| {
        take_while(1.., is_word_char)
            .verify(|w: &str| w.eq_ignore_ascii_case(word))
            .parse_next(i)?;
        gap(i)
    }
}

/// A name: a word, or any text but `"` and line breaks in double quotes. Quoting lets a name that
/// breaks the name rule reach the schema builder, which reports it with its own error.
fn name<'a>(i: &mut In<'a>) -> ModalResult<&'a str> {
    let quoted = ('"', take_while(0.., |c| c != '"' && c != '\n'), '"').map(|(_, n, _)| n);
    let name = alt((take_while(1.., is_word_char), quoted)).parse_next(i)?;
    gap(i)?;
    Ok(name)
}

fn punct<'a>(mut c: char) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    move |i: &mut In<'a>| {
        c.parse_next(i)?;
        gap(i)
    }
}

/// Whitespace and `--` comments, which may stand between any two tokens.
fn gap(i: &mut In<'_>) -> ModalResult<()> {
    let comment = ("--", till_line_ending).void();
    repeat(0.., alt((multispace1.void(), comment))).parse_next(i)
}
