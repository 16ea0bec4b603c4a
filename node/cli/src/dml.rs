//! The grammar of the statements the client itself understands: SELECT, UPSERT, DELETE and
//! DESCRIBE (the EBNF is in [`super`]). Each function starts after the statement's first word.

use ringstore_model::table::limits::MAX_VERSIONS_MAX;

use super::ast::{Select, Statement, Using, Versions, WriteCondition};
use super::conditions::{self, Conditions};
use super::cursor::{Cursor, Result};
use super::error::{Problem, StatementError};
use super::lex::{Kind, Punct};
use super::limits::UPSERT_ROWS_MAX;
use super::literal::Literal;
use super::timestamp::parse_utc_ms;

/// `SELECT ( * | names ) FROM t [WHERE ...] [USING INDEX idx] [ORDER BY f [ASC|DESC]] [LIMIT n]
/// [ALLOW FULL SCAN]`.
pub(crate) fn select(c: &mut Cursor<'_>) -> Result<Select> {
    let columns =
        if c.eat_punct(Punct::Star) { None } else { Some(names(c, "* or a column name")?) };
    c.expect_keyword("FROM")?;
    let (table, _) = c.name("a table name")?;
    let Conditions { key, range, more_range_fields } =
        if c.eat_keyword("WHERE") { conditions::parse(c)? } else { Conditions::default() };
    let mut select = Select {
        table,
        columns,
        key,
        range,
        more_range_fields,
        order_by: None,
        descending: false,
        limit: None,
        allow_full_scan: false,
        versions: None,
        using_index: None,
    };
    if c.eat_keyword("USING") {
        c.expect_keyword("INDEX")?;
        select.using_index = Some(c.name("an index name")?.0);
    }
    if c.eat_keyword("VERSIONS") {
        select.versions = Some(versions(c)?);
    }
    order_by(c, &mut select)?;
    if c.eat_keyword("LIMIT") {
        select.limit = Some(c.count("a LIMIT count: a whole number from 0 to 2^64 - 1")?);
    }
    if c.eat_keyword("ALLOW") {
        c.expect_keyword("FULL")?;
        c.expect_keyword("SCAN")?;
        select.allow_full_scan = true;
    }
    c.finish(&clauses_left(&select))?;
    Ok(select)
}

/// The clauses that could still have followed the end of `select`, for messages.
fn clauses_left(select: &Select) -> String {
    let conditions = !select.key.is_empty() || select.range.is_some();
    let (ordered, limited) = (select.order_by.is_some(), select.limit.is_some());
    let open = !ordered && !limited && !select.allow_full_scan;
    let unversioned = open && select.versions.is_none();
    let unindexed = unversioned && select.using_index.is_none();
    let clauses = [
        (!conditions && unindexed, "WHERE"),
        (conditions && unindexed, "AND"),
        (unindexed, "USING INDEX"),
        (unversioned, "VERSIONS"),
        (open, "ORDER BY"),
        (!limited && !select.allow_full_scan, "LIMIT"),
        (!select.allow_full_scan, "ALLOW FULL SCAN"),
    ];
    let left: Vec<&str> = clauses.iter().filter(|(left, _)| *left).map(|(_, c)| *c).collect();
    left.join(", ")
}

/// `ORDER BY f [ASC | DESC]`, if present. With a range, `f` must be the range field.
fn order_by(c: &mut Cursor<'_>, select: &mut Select) -> Result<()> {
    if !c.eat_keyword("ORDER") {
        return Ok(());
    }
    c.expect_keyword("BY")?;
    let (field, at) = c.name("a field name")?;
    if let Some(range) = select.range.as_ref().filter(|r| r.field != field) {
        let range = range.field.clone();
        return Err(c.invalid(at, Problem::OrderByNotRange { field, range }));
    }
    select.descending = c.eat_keyword("DESC");
    if !select.descending {
        c.eat_keyword("ASC");
    }
    select.order_by = Some(field);
    Ok(())
}

/// `UPSERT INTO t ( names ) VALUES row { , row }`.
pub(crate) fn upsert(c: &mut Cursor<'_>) -> Result<Statement> {
    c.expect_keyword("INTO")?;
    let (table, _) = c.name("a table name")?;
    c.expect_punct(Punct::Open, "( and the column names")?;
    let columns = names(c, "a column name")?;
    c.expect_punct(Punct::Close, ", or )")?;
    c.expect_keyword("VALUES")?;
    let mut rows = Vec::new();
    loop {
        rows.push(row(c, rows.len() + 1, columns.len())?);
        if !c.eat_punct(Punct::Comma) {
            break;
        }
    }
    let using = using(c)?;
    let condition = write_condition(c)?;
    c.finish(match (condition, using == Using::default()) {
        (WriteCondition::Always, true) => ", another row, USING or IF",
        (WriteCondition::Always, false) => "AND, IF",
        _ => "",
    })?;
    Ok(Statement::Upsert { table, columns, rows, using, condition })
}

/// `UPDATE t SET f = literal {, f = literal} WHERE conditions [IF ...]`, after `UPDATE`.
pub(crate) fn update(c: &mut Cursor<'_>) -> Result<Statement> {
    let (table, _) = c.name("a table name")?;
    c.expect_keyword("SET")?;
    let mut set: Vec<(String, Literal)> = Vec::new();
    loop {
        let (field, at) = c.name("a field name")?;
        if set.iter().any(|(f, _)| *f == field) {
            return Err(c.invalid(at, Problem::DuplicateColumn { column: field }));
        }
        c.expect_punct(Punct::Eq, "= and the new value")?;
        set.push((field, c.literal()?));
        if !c.eat_punct(Punct::Comma) {
            break;
        }
    }
    c.expect_keyword("WHERE")?;
    let Conditions { key, range, more_range_fields } = conditions::parse(c)?;
    let using = using(c)?;
    let condition = write_condition(c)?;
    c.finish(if condition == WriteCondition::Always { "AND, USING, IF" } else { "" })?;
    Ok(Statement::Update { table, set, key, range, more_range_fields, using, condition })
}

/// `[ USING item { AND item } ]`, item = `VERSION version` | `TTL whole unit`, each once.
fn using(c: &mut Cursor<'_>) -> Result<Using> {
    let mut using = Using::default();
    if !c.eat_keyword("USING") {
        return Ok(using);
    }
    loop {
        if using.version.is_none() && c.eat_keyword("VERSION") {
            using.version = Some(version(c)?);
        } else if using.ttl_seconds.is_none() && c.eat_keyword("TTL") {
            using.ttl_seconds = Some(ttl(c)?);
        } else {
            let left = match (using.version, using.ttl_seconds) {
                (None, None) => "VERSION or TTL after USING",
                (None, Some(_)) => "VERSION after AND",
                _ => "TTL after AND",
            };
            return Err(c.syntax(left));
        }
        if (using.version.is_some() && using.ttl_seconds.is_some()) || !c.eat_keyword("AND") {
            return Ok(using);
        }
    }
}

/// A version: ms since the epoch, or a `'YYYY-MM-DD HH:MM:SS[.fff]'` (UTC) string.
pub(crate) fn version(c: &mut Cursor<'_>) -> Result<u64> {
    const EXPECTED: &str =
        "a version: ms since the epoch, or 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC) from 1970 on";
    if let Some(token) = c.peek().filter(|t| t.kind == Kind::String) {
        let text = crate::lex::string_contents(c.text_of(token));
        return match parse_utc_ms(&text).map(u64::try_from) {
            Ok(Ok(ms)) => {
                c.advance();
                Ok(ms)
            }
            Ok(Err(_)) => Err(c.syntax(EXPECTED)),
            Err(reason) => Err(c.syntax(format!("{EXPECTED} ({reason})"))),
        };
    }
    c.count(EXPECTED)
}

/// `n SECONDS | HOURS | DAYS` (or SECOND, HOUR, DAY), in seconds.
fn ttl(c: &mut Cursor<'_>) -> Result<u64> {
    let n = c.count("a TTL: a whole number and SECONDS, HOURS or DAYS")?;
    let units = [("SECONDS", 1), ("SECOND", 1), ("HOURS", 3_600), ("HOUR", 3_600)];
    let units = units.into_iter().chain([("DAYS", 86_400), ("DAY", 86_400)]);
    let Some(unit) = units.into_iter().find(|(word, _)| c.eat_keyword(word)).map(|(_, u)| u) else {
        return Err(c.syntax("the TTL's unit: SECONDS, HOURS or DAYS"));
    };
    n.checked_mul(unit).ok_or_else(|| c.syntax("a TTL that fits 2^64 - 1 seconds"))
}

/// After `VERSIONS`: `n`, `ALL`, `[n | ALL] FROM version TO version`.
fn versions(c: &mut Cursor<'_>) -> Result<Versions> {
    const COUNT: &str = "a version count (1 to 2^32 - 1), ALL or FROM";
    let max = if c.eat_keyword("ALL") {
        Some(MAX_VERSIONS_MAX)
    } else if let Some(token) = c.peek().filter(|t| t.kind == Kind::Number) {
        match c.text_of(token).parse::<u32>() {
            Ok(n) if n >= 1 => {
                c.advance();
                Some(n)
            }
            _ => return Err(c.syntax(COUNT)),
        }
    } else {
        None
    };
    if !c.eat_keyword("FROM") {
        return max.map(Versions::Latest).ok_or_else(|| c.syntax(COUNT));
    }
    let from = version(c)?;
    c.expect_keyword("TO")?;
    let to = version(c)?;
    Ok(Versions::Range { from, to, max: max.unwrap_or(MAX_VERSIONS_MAX) })
}

/// `[ IF ABSENT | IF PRESENT | IF VERSION token ]`.
fn write_condition(c: &mut Cursor<'_>) -> Result<WriteCondition> {
    if !c.eat_keyword("IF") {
        return Ok(WriteCondition::Always);
    }
    if c.eat_keyword("ABSENT") {
        return Ok(WriteCondition::IfAbsent);
    }
    if c.eat_keyword("PRESENT") {
        return Ok(WriteCondition::IfPresent);
    }
    c.expect_keyword("VERSION").map_err(|_| c.syntax("ABSENT, PRESENT or VERSION after IF"))?;
    let token = c.count("a version token: the whole number a write of the row printed")?;
    Ok(WriteCondition::IfVersion(token))
}

/// `( literal { , literal } )`: row number `number`, which must have `width` values.
fn row(c: &mut Cursor<'_>, number: usize, width: usize) -> Result<Vec<Literal>> {
    let start = c.offset();
    if number > UPSERT_ROWS_MAX {
        return Err(StatementError::Limit {
            at: c.place(start),
            what: "the number of rows of one UPSERT",
            found: number,
            limit_name: "UPSERT_ROWS_MAX",
            limit: UPSERT_ROWS_MAX,
        });
    }
    c.expect_punct(Punct::Open, "( and a row of values")?;
    let mut values = vec![c.literal()?];
    while c.eat_punct(Punct::Comma) {
        values.push(c.literal()?);
    }
    c.expect_punct(Punct::Close, ", or )")?;
    if values.len() != width {
        let problem = Problem::RowWidth { row: number, values: values.len(), columns: width };
        return Err(c.invalid(start, problem));
    }
    Ok(values)
}

/// `DELETE FROM t WHERE ...`: the WHERE clause is required (a whole table is DROP TABLE's).
pub(crate) fn delete(c: &mut Cursor<'_>) -> Result<Statement> {
    c.expect_keyword("FROM")?;
    let (table, _) = c.name("a table name")?;
    c.expect_keyword("WHERE")?;
    let Conditions { key, range, more_range_fields } = conditions::parse(c)?;
    let condition = write_condition(c)?;
    c.finish(if condition == WriteCondition::Always { "AND, IF VERSION" } else { "" })?;
    Ok(Statement::Delete { table, key, range, more_range_fields, condition })
}

/// `DESCRIBE [TABLE] t` (or `DESC`); `DESCRIBE TABLE` alone describes a table named `TABLE`.
pub(crate) fn describe(c: &mut Cursor<'_>) -> Result<Statement> {
    let mut probe = Cursor::clone(c);
    if probe.eat_keyword("TABLE") && probe.at_name() {
        *c = probe;
    }
    let (table, _) = c.name("a table name")?;
    c.finish("")?;
    Ok(Statement::Describe { table })
}

/// `name { , name }`, each name once.
fn names(c: &mut Cursor<'_>, expected: &str) -> Result<Vec<String>> {
    let mut names: Vec<String> = Vec::new();
    loop {
        let (name, at) = c.name(expected)?;
        if names.contains(&name) {
            return Err(c.invalid(at, Problem::DuplicateColumn { column: name }));
        }
        names.push(name);
        if !c.eat_punct(Punct::Comma) {
            return Ok(names);
        }
    }
}
