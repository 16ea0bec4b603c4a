//! A script (an `-e` text, a `-f` file, or one interactive input) split into statements and
//! parsed; see the grammar in [`super`].
//!
//! Splitting walks the script once. Between statements it skips whitespace, `--` comments and
//! empty statements (`;`). A statement that starts with `##` or an admin CLI command start is an
//! admin CLI block (`admin.rs`): its text goes to the server verbatim as one
//! [`Statement::Ddl`], and a block of `##` comments alone is skipped. Any other statement is
//! lexed (`lex.rs`) up to a `;` outside quotes, or the end of the script, and parsed by its
//! first word: SQL DDL verbs pass the statement's text verbatim, the DML verbs are parsed here.

use super::admin;
use super::ast::Statement;
use super::batch::{self, Batches};
use super::cursor::{Cursor, Result};
use super::dml;
use super::error::{Place, StatementError};
use super::lex::{self, Kind, Punct, Token};
use super::limits::{SCRIPT_BYTES_MAX, STATEMENT_BYTES_MAX};
pub use super::literal::Literal;

/// Splits `text` into statements and parses each; the first error stops the parse.
pub fn parse_script(text: &str) -> std::result::Result<Vec<Statement>, StatementError> {
    if text.len() > SCRIPT_BYTES_MAX {
        return Err(StatementError::ScriptTooLong { bytes: text.len() });
    }
    let mut statements = Vec::new();
    let mut batches = Batches::default();
    let mut pos = 0;
    // Statements parsed so far, counting those inside batches and the batch markers.
    let mut number = 0;
    loop {
        pos = lex::skip_gap(text, pos);
        let Some(first) = text[pos..].chars().next() else {
            batches.finish(Place::at(text, number, text.len()))?;
            return Ok(statements);
        };
        if first == ';' {
            pos += 1;
        } else if admin::starts_block(&text[pos..]) {
            let block = admin::block(text, pos);
            let source = text[pos..block.end].trim_end();
            check_len(text, number + 1, pos, source.len())?;
            if block.has_command {
                number += 1;
                batches.admin_block(Place::at(text, number, pos))?;
                statements.push(Statement::Ddl(source.to_owned()));
            }
            pos = block.end;
        } else {
            number += 1;
            let at = Place::at(text, number, pos);
            let tokens = sql_tokens(text, number, &mut pos)?;
            let mut c = Cursor::new(text, &tokens, number);
            let done = match batch::marker(&mut c)? {
                Some(marker) => batches.marker(marker, at)?,
                None => batches.statement(sql_statement(&mut c)?, at)?,
            };
            statements.extend(done);
        }
    }
}

/// The tokens of the SQL statement at `*pos`, up to its `;` (skipped) or the end of the text.
fn sql_tokens(text: &str, number: usize, pos: &mut usize) -> Result<Vec<Token>> {
    let start = *pos;
    let mut tokens = Vec::new();
    loop {
        *pos = lex::skip_gap(text, *pos);
        let token = lex::token_at(text, *pos).map_err(|u| unterminated(text, number, u))?;
        let Some(token) = token else { return Ok(tokens) };
        check_len(text, number, start, token.end - start)?;
        *pos = token.end;
        if token.kind == Kind::Punct(Punct::Semicolon) {
            return Ok(tokens);
        }
        tokens.push(token);
    }
}

fn check_len(text: &str, number: usize, start: usize, bytes: usize) -> Result<()> {
    if bytes <= STATEMENT_BYTES_MAX {
        return Ok(());
    }
    Err(StatementError::Limit {
        at: Place::at(text, number, start),
        what: "the statement's length in bytes",
        found: bytes,
        limit_name: "STATEMENT_BYTES_MAX",
        limit: STATEMENT_BYTES_MAX,
    })
}

fn unterminated(text: &str, number: usize, u: lex::Unterminated) -> StatementError {
    let what = if u.quote == '"' { "name" } else { "string" };
    StatementError::Syntax {
        at: Place::at(text, number, u.start),
        expected: format!("a closing {} for this quoted {what}", u.quote),
        found: if u.quote == '"' { "the end of the line" } else { "the end of the script" }
            .to_owned(),
    }
}

/// SQL DDL verbs: a statement starting with one goes to the server verbatim.
const DDL_VERBS: [&str; 5] = ["CREATE", "DROP", "ALTER", "TRUNCATE", "SHOW"];

const STATEMENT_EXPECTED: &str = "a statement: SELECT, UPSERT, UPDATE, DELETE, BEGIN BATCH, \
     DESCRIBE, STATS, TOPOLOGY, CREATE, DROP, ALTER, TRUNCATE, SHOW, or an admin CLI script";

/// One SQL statement, by its first word.
fn sql_statement(c: &mut Cursor<'_>) -> Result<Statement> {
    if c.eat_keyword("SELECT") {
        return dml::select(c).map(Statement::Select);
    }
    if c.eat_keyword("UPSERT") {
        return dml::upsert(c);
    }
    if c.eat_keyword("DELETE") {
        return dml::delete(c);
    }
    if c.eat_keyword("UPDATE") {
        return dml::update(c);
    }
    if c.eat_keyword("DESCRIBE") || c.eat_keyword("DESC") {
        return dml::describe(c);
    }
    let show = c.at_keyword("SHOW");
    if let Some(statement) = listing(c)? {
        return Ok(statement);
    }
    if show || DDL_VERBS.iter().any(|verb| c.at_keyword(verb)) {
        return Ok(Statement::Ddl(c.source().to_owned()));
    }
    Err(c.syntax(STATEMENT_EXPECTED))
}

/// `[SHOW] STATS` or `[SHOW] TOPOLOGY`; None (and nothing consumed) for anything else.
fn listing(c: &mut Cursor<'_>) -> Result<Option<Statement>> {
    let mut probe = Cursor::clone(c);
    probe.eat_keyword("SHOW");
    let statement = if probe.eat_keyword("STATS") {
        Statement::Stats
    } else if probe.eat_keyword("TOPOLOGY") {
        Statement::Topology
    } else {
        return Ok(None);
    };
    probe.finish("")?;
    *c = probe;
    Ok(Some(statement))
}

#[cfg(test)]
mod tests {
    use std::ops::Bound;

    use super::*;
    use crate::ast::{Batch, RangeSpec, Select, Using, Versions, WriteCondition};
    use crate::error::Problem;
    use crate::literal::test_literals::{key, num, string};

    fn range(field: &str, start: Bound<Literal>, end: Bound<Literal>) -> Option<RangeSpec> {
        Some(RangeSpec { field: field.to_owned(), start, end })
    }

    fn one(text: &str) -> Statement {
        let mut statements = parse_script(text).expect("parses");
        assert_eq!(statements.len(), 1, "{statements:?}");
        statements.remove(0)
    }

    fn select(text: &str) -> Select {
        match one(text) {
            Statement::Select(select) => select,
            other => panic!("not a SELECT: {other:?}"),
        }
    }

    fn error(text: &str) -> StatementError {
        parse_script(text).expect_err("does not parse")
    }

    fn plain_select(table: &str) -> Select {
        Select {
            table: table.to_owned(),
            columns: None,
            key: Vec::new(),
            range: None,
            more_range_fields: Vec::new(),
            order_by: None,
            descending: false,
            limit: None,
            allow_full_scan: false,
            versions: None,
            using_index: None,
        }
    }

    #[test]
    fn the_lindorm_scan_newest_first() {
        let s = select(
            "SELECT * FROM table WHERE userid='abc' AND 123<orderid<456 ORDER BY orderid DESC",
        );
        assert_eq!(
            s,
            Select {
                key: key(&[("userid", string("abc"))]),
                range: range("orderid", Bound::Excluded(num("123")), Bound::Excluded(num("456"))),
                order_by: Some("orderid".into()),
                descending: true,
                ..plain_select("table")
            }
        );
    }

    #[test]
    fn the_lindorm_get() {
        let s = select("SELECT * FROM table WHERE userid='abc' AND orderid=123");
        let expected = key(&[("userid", string("abc")), ("orderid", num("123"))]);
        assert_eq!(s, Select { key: expected, ..plain_select("table") });
    }

    #[test]
    fn select_clauses() {
        let s = select(
            "select a, \"LIMIT\" from t where a = -1.5e3 and 5 <= b and b < 9 \
             order by b asc limit 10 allow full scan",
        );
        assert_eq!(
            s,
            Select {
                columns: Some(vec!["a".into(), "LIMIT".into()]),
                key: key(&[("a", num("-1.5e3"))]),
                range: range("b", Bound::Included(num("5")), Bound::Excluded(num("9"))),
                order_by: Some("b".into()),
                limit: Some(10),
                allow_full_scan: true,
                ..plain_select("t")
            }
        );
        let s = select("SELECT * FROM t WHERE 7 = a AND b BETWEEN 'x' AND 'y'");
        assert_eq!(s.key, key(&[("a", num("7"))]));
        assert_eq!(s.range, range("b", Bound::Included(string("x")), Bound::Included(string("y"))));
        let s = select("SELECT * FROM t WHERE 456 > b >= 123");
        assert_eq!(s.range, range("b", Bound::Included(num("123")), Bound::Excluded(num("456"))));
        let s = select("SELECT * FROM t WHERE c = red AND d = TRUE AND e = x'0aff' AND f >= NULL");
        assert_eq!(
            s.key,
            key(&[
                ("c", Literal::Symbol("red".into())),
                ("d", Literal::Boolean(true)),
                ("e", Literal::Binary(vec![0x0a, 0xff]))
            ])
        );
        assert_eq!(s.range, range("f", Bound::Included(Literal::Null), Bound::Unbounded));
        // A second range field is the runner's to refuse: only it knows which fields are keys.
        let s = select("SELECT * FROM t WHERE a > 1 AND b < 2 AND c >= 3 AND b > 0");
        assert_eq!(s.range, range("a", Bound::Excluded(num("1")), Bound::Unbounded));
        assert_eq!(s.more_range_fields, ["b", "c"]);
        assert!(select("SELECT * FROM t ALLOW FULL SCAN").allow_full_scan);
        assert_eq!(select("SELECT * FROM t ORDER BY k DESC LIMIT 0").limit, Some(0));
    }

    #[test]
    fn upsert_rows() {
        let statement = one("UPSERT INTO t (a, b) VALUES (1, 'x'), (-2, 'it''s; fine')");
        assert_eq!(
            statement,
            Statement::Upsert {
                table: "t".into(),
                columns: vec!["a".into(), "b".into()],
                rows: vec![vec![num("1"), string("x")], vec![num("-2"), string("it's; fine")]],
                using: Using::default(),
                condition: WriteCondition::Always,
            }
        );
        let statement = one("upsert into t (a) values (NULL), (x''), (FALSE)");
        let Statement::Upsert { rows, .. } = statement else { panic!("{statement:?}") };
        assert_eq!(
            rows,
            [vec![Literal::Null], vec![Literal::Binary(Vec::new())], vec![Literal::Boolean(false)]]
        );
    }

    /// `IF ABSENT`, `IF PRESENT` and `IF VERSION token` end an UPSERT or a DELETE.
    #[test]
    fn write_conditions() {
        let condition = |text: &str| match one(text) {
            Statement::Upsert { condition, .. } | Statement::Delete { condition, .. } => condition,
            other => panic!("{other:?}"),
        };
        assert_eq!(condition("UPSERT INTO t (a) VALUES (1) IF ABSENT"), WriteCondition::IfAbsent);
        assert_eq!(condition("upsert into t (a) values (1) if present"), WriteCondition::IfPresent);
        let v = condition("UPSERT INTO t (a) VALUES (1), (2) IF VERSION 123456789012");
        assert_eq!(v, WriteCondition::IfVersion(123_456_789_012));
        let d = condition("DELETE FROM t WHERE a = 1 IF VERSION 7");
        assert_eq!(d, WriteCondition::IfVersion(7));
        let e = parse_script("UPSERT INTO t (a) VALUES (1) IF LATER").expect_err("bad condition");
        assert!(e.to_string().contains("ABSENT, PRESENT or VERSION after IF"), "{e}");
        let e = parse_script("DELETE FROM t WHERE a = 1 IF VERSION x").expect_err("no token");
        assert!(e.to_string().contains("a version token"), "{e}");
        let e = parse_script("UPSERT INTO t (a) VALUES (1) IF ABSENT IF PRESENT").expect_err("two");
        assert!(e.to_string().contains("the end of the statement"), "{e}");
    }

    /// `USING VERSION v` (a number or a UTC date-time) and `USING TTL n unit`, in either order,
    /// before IF.
    #[test]
    fn using_version_and_ttl() {
        let using = |text: &str| match one(text) {
            Statement::Upsert { using, .. } | Statement::Update { using, .. } => using,
            other => panic!("{other:?}"),
        };
        let u = using("UPSERT INTO t (a) VALUES (1) USING VERSION 1764043200000 IF ABSENT");
        assert_eq!(u, Using { version: Some(1_764_043_200_000), ttl_seconds: None });
        let u = using(
            "upsert into t (a) values (1) using ttl 2 days and version '2025-11-25 04:00:00'",
        );
        assert_eq!(u, Using { version: Some(1_764_043_200_000), ttl_seconds: Some(172_800) });
        let u = using("UPDATE t SET b = 1 WHERE a = 1 USING TTL 90 SECONDS IF PRESENT");
        assert_eq!(u, Using { version: None, ttl_seconds: Some(90) });
        assert_eq!(using("UPSERT INTO t (a) VALUES (1) USING TTL 1 HOUR").ttl_seconds, Some(3600));
        let e = error("UPSERT INTO t (a) VALUES (1) USING TTL 5");
        assert!(
            e.to_string().ends_with(
                "expected the TTL's unit: SECONDS, HOURS or DAYS, found the end of the statement"
            ),
            "{e}"
        );
        let e = error("UPSERT INTO t (a) VALUES (1) USING VERSION 1 AND VERSION 2");
        assert!(e.to_string().contains("expected TTL after AND"), "{e}");
        let e = error("UPSERT INTO t (a) VALUES (1) USING VERSION '2025-13-01'");
        assert!(e.to_string().contains("(the month is not 01..=12)"), "{e}");
        let e = error("UPSERT INTO t (a) VALUES (1) USING VERSION -5");
        assert!(e.to_string().contains("expected a version: ms since the epoch"), "{e}");
        let e = error("UPSERT INTO t (a) VALUES (1) USING TTL 18446744073709551615 DAYS");
        assert!(e.to_string().contains("a TTL that fits"), "{e}");
        let e = error("UPSERT INTO t (a) VALUES (1) USING NOW");
        assert!(e.to_string().contains("expected VERSION or TTL after USING"), "{e}");
        assert!(
            parse_script("DELETE FROM t WHERE a = 1 USING VERSION 5").is_err(),
            "not on DELETE"
        );
    }

    /// `VERSIONS n`, `VERSIONS ALL` and `VERSIONS [n] FROM a TO b`, between WHERE and ORDER BY.
    #[test]
    fn select_versions() {
        let versions = |text: &str| select(text).versions;
        let max = ringstore_model::table::limits::MAX_VERSIONS_MAX;
        assert_eq!(versions("SELECT * FROM t WHERE k = 1 VERSIONS 3"), Some(Versions::Latest(3)));
        assert_eq!(
            versions("select * from t where k = 1 versions all"),
            Some(Versions::Latest(max))
        );
        assert_eq!(
            versions("SELECT * FROM t WHERE k = 1 VERSIONS 2 FROM 10 TO '1970-01-01 00:00:01'"),
            Some(Versions::Range { from: 10, to: 1000, max: 2 })
        );
        let s =
            select("SELECT * FROM t WHERE k = 'a' VERSIONS FROM 1 TO 5 ORDER BY j DESC LIMIT 4");
        assert_eq!(s.versions, Some(Versions::Range { from: 1, to: 5, max }));
        assert_eq!((s.order_by.as_deref(), s.limit), (Some("j"), Some(4)));
        assert_eq!(versions("SELECT * FROM t WHERE k = 1"), None);
        let e = error("SELECT * FROM t WHERE k = 1 VERSIONS 0");
        assert!(
            e.to_string().contains("expected a version count (1 to 2^32 - 1), ALL or FROM"),
            "{e}"
        );
        let e = error("SELECT * FROM t WHERE k = 1 VERSIONS FROM 1");
        assert!(e.to_string().ends_with("expected TO, found the end of the statement"), "{e}");
        let e = error("SELECT * FROM t WHERE k = 1 LIMIT 2 VERSIONS 3");
        assert!(e.to_string().contains("found \"VERSIONS\""), "{e}");
    }

    /// `BEGIN BATCH [ABORT ON FAILURE]; writes; APPLY BATCH` is one statement holding its writes
    /// with their statement numbers.
    #[test]
    fn batches_group_their_writes() {
        let script = "STATS; BEGIN BATCH ABORT ON FAILURE;\n\
                      UPSERT INTO t (a, b) VALUES (1, 2), (1, 3) IF ABSENT;\n\
                      DELETE FROM t WHERE a = 1 AND b = 4;\n\
                      UPDATE t SET c = 5 WHERE a = 1 AND b = 5;\n\
                      APPLY BATCH; begin batch; upsert into t (a) values (1); apply batch";
        let statements = parse_script(script).expect("parses");
        assert_eq!(statements.len(), 3, "{statements:?}");
        let Statement::Batch(Batch { abort_on_failure, writes }) = &statements[1] else {
            panic!("{statements:?}")
        };
        assert!(*abort_on_failure);
        let numbers: Vec<usize> = writes.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, [3, 4, 5]);
        assert!(matches!(writes[1].1, Statement::Delete { .. }));
        let Statement::Batch(second) = &statements[2] else { panic!("{statements:?}") };
        assert!(!second.abort_on_failure);
        assert_eq!(second.writes[0].0, 8, "markers count as statements");
    }

    #[test]
    fn batch_mistakes_name_the_statement() {
        let message = |text: &str| error(text).to_string();
        let e = message("BEGIN BATCH; UPSERT INTO t (a) VALUES (1); SELECT * FROM t; APPLY BATCH");
        assert!(e.starts_with("statement 3, line 1, column 44 (byte 43): a batch holds only UPSERT, UPDATE and DELETE statements, and this is a SELECT"), "{e}");
        let e = message(
            "BEGIN BATCH; UPSERT INTO t (a) VALUES (1); UPSERT INTO u (a) VALUES (1); APPLY BATCH",
        );
        assert!(e.ends_with("this statement writes u, but the batch's first write is on t"), "{e}");
        let e = message("BEGIN BATCH; BEGIN BATCH; APPLY BATCH");
        assert!(e.contains("BEGIN BATCH inside the batch that statement 1 began"), "{e}");
        let e = message("APPLY BATCH");
        assert!(e.ends_with("APPLY BATCH without a BEGIN BATCH before it"), "{e}");
        let e = message("BEGIN BATCH; APPLY BATCH");
        assert!(e.contains("the batch has no writes"), "{e}");
        let e = message("BEGIN BATCH; UPSERT INTO t (a) VALUES (1)");
        assert!(
            e.ends_with(
                "expected APPLY BATCH to end the batch of statement 1, found the end of the script"
            ),
            "{e}"
        );
        let e = message("BEGIN BATCH;\ntable create -name t\nadd-field -type LONG -name k\nprimary-key -field k\nexit\nplan add-table -name t\nAPPLY BATCH");
        assert!(e.contains("this is an admin CLI block"), "{e}");
        let e = message("BEGIN BATCH ABORT; UPSERT INTO t (a) VALUES (1); APPLY BATCH");
        assert!(e.contains("expected ON"), "{e}");
        let e = message("BEGIN BATCH UPSERT INTO t (a) VALUES (1); APPLY BATCH");
        assert!(e.contains("expected ABORT ON FAILURE or the end of the statement"), "{e}");
        let rows = vec!["(1)"; 600].join(", ");
        let e = error(&format!("BEGIN BATCH; UPSERT INTO t (a) VALUES {rows}; UPSERT INTO t (a) VALUES {rows}; APPLY BATCH"));
        assert_eq!(e.code(), 803);
        assert!(e.to_string().starts_with("statement 3, "), "{e}");
        assert!(e.to_string().ends_with("the number of operations of one batch (one per UPSERT row) is 1200, over the limit EXECUTE_OPS_MAX = 1000"), "{e}");
    }

    #[test]
    fn update_sets_fields_of_one_row() {
        let statement = one("UPDATE t SET b = 'x', c = NULL WHERE a = 1 IF PRESENT");
        let Statement::Update { table, set, key: k, condition, .. } = statement else {
            panic!("{statement:?}")
        };
        assert_eq!((table.as_str(), condition), ("t", WriteCondition::IfPresent));
        assert_eq!(set, [("b".to_owned(), string("x")), ("c".to_owned(), Literal::Null)]);
        assert_eq!(k, key(&[("a", num("1"))]));
        let e = parse_script("UPDATE t SET b = 1, b = 2 WHERE a = 1").expect_err("b twice");
        assert!(e.to_string().contains('b'), "{e}");
        assert!(parse_script("UPDATE t SET b 1 WHERE a = 1").is_err(), "no =");
        assert!(parse_script("UPDATE t SET b = 1").is_err(), "no WHERE");
    }

    #[test]
    fn delete_describe_stats_topology() {
        assert_eq!(
            one("DELETE FROM myProducts WHERE productName = 'hat' AND productType >= 'a'"),
            Statement::Delete {
                table: "myProducts".into(),
                key: key(&[("productName", string("hat"))]),
                range: range("productType", Bound::Included(string("a")), Bound::Unbounded),
                more_range_fields: Vec::new(),
                condition: WriteCondition::Always,
            }
        );
        let describe = |t: &str| Statement::Describe { table: t.into() };
        assert_eq!(one("DESCRIBE t"), describe("t"));
        assert_eq!(one("desc t;"), describe("t"));
        assert_eq!(one("DESCRIBE TABLE t"), describe("t"));
        assert_eq!(one("DESCRIBE TABLE"), describe("TABLE"));
        assert_eq!(one("STATS"), Statement::Stats);
        assert_eq!(one("show stats"), Statement::Stats);
        assert_eq!(one("Topology"), Statement::Topology);
        assert_eq!(one("SHOW TOPOLOGY;"), Statement::Topology);
    }

    #[test]
    fn sql_ddl_goes_verbatim() {
        let script = "CREATE TABLE t (a STRING, b ENUM(x, y), PRIMARY KEY (SHARD(a), b DESC)) \
                      USING TTL 5 DAYS;\n  drop table if exists \"t;2\" -- gone\n;SHOW TABLES";
        let statements = parse_script(script).expect("parses");
        assert_eq!(
            statements,
            [
                Statement::Ddl(
                    "CREATE TABLE t (a STRING, b ENUM(x, y), PRIMARY KEY (SHARD(a), b DESC)) \
                     USING TTL 5 DAYS"
                        .into()
                ),
                Statement::Ddl("drop table if exists \"t;2\"".into()),
                Statement::Ddl("SHOW TABLES".into()),
            ]
        );
        assert_eq!(
            one("ALTER TABLE t ADD c <weird> !"),
            Statement::Ddl("ALTER TABLE t ADD c <weird> !".into())
        );
        for statement in &statements[..1] {
            let Statement::Ddl(text) = statement else { panic!() };
            ringstore_model::ddl::parse(text).expect("the server parses it");
        }
    }

    #[test]
    fn separators_comments_and_quotes() {
        let script = "-- leading comment\n;; SELECT * FROM t WHERE a = ';' -- not ; a separator\n\
                      ;\n\n STATS ; -- trailing\n";
        let statements = parse_script(script).expect("parses");
        let s = Select { key: key(&[("a", string(";"))]), ..plain_select("t") };
        assert_eq!(statements, [Statement::Select(s), Statement::Stats]);
        assert_eq!(parse_script("  -- nothing\n ;;").expect("empty"), []);
        assert_eq!(parse_script("").expect("empty"), []);
    }

    use ringstore_model::ddl::seed_scripts::{SEED_SINGLE_KEY_SCRIPT, SEED_THREE_KEY_SCRIPT};

    #[test]
    fn seed_scripts_are_one_ddl_statement_each() {
        for script in [SEED_SINGLE_KEY_SCRIPT, SEED_THREE_KEY_SCRIPT] {
            assert_eq!(one(script), Statement::Ddl(script.to_owned()));
            assert_eq!(one(&format!("{script};")), Statement::Ddl(script.to_owned()));
            let created = ringstore_model::ddl::parse(script).expect("the server parses it");
            assert_eq!(created.len(), 1);
        }
    }

    #[test]
    fn admin_blocks_mix_with_sql() {
        let block = "## Enter into table creation mode; then add fields\n\
                     table create -name t\n\
                     add-field -type STRING -name a\n\
                     \n\
                     primary-key -field a\n\
                     exit\n\
                     plan add-table -name t -wait";
        let script = format!(
            "DROP TABLE IF EXISTS t;\n{block}\nUPSERT INTO t (a) VALUES ('x');\n\
             ## a comment alone is no statement\n\
             SELECT * FROM t WHERE a = 'x';\n{SEED_SINGLE_KEY_SCRIPT}; STATS"
        );
        let statements = parse_script(&script).expect("parses");
        assert_eq!(statements.len(), 6, "{statements:?}");
        assert_eq!(statements[0], Statement::Ddl("DROP TABLE IF EXISTS t".into()));
        assert_eq!(statements[1], Statement::Ddl(block.into()));
        assert!(matches!(statements[2], Statement::Upsert { .. }));
        assert!(matches!(statements[3], Statement::Select(_)));
        assert_eq!(statements[4], Statement::Ddl(SEED_SINGLE_KEY_SCRIPT.into()));
        assert_eq!(statements[5], Statement::Stats);
        let Statement::Ddl(text) = &statements[1] else { panic!() };
        assert_eq!(ringstore_model::ddl::parse(text).expect("the server parses it").len(), 1);
    }

    #[test]
    fn crlf_scripts_and_statement_numbers() {
        let script = "## setup only\r\ntable create -name t\r\nadd-field -type LONG -name k\r\n\
                      primary-key -field k\r\nexit\r\nplan add-table -name t\r\n\
                      SELECT * FROM t\r\n WHERE k = 1;\r\n## note\r\nSELECT * FORM t";
        let e = error(script);
        let at = e.place().expect("a place");
        assert_eq!((at.statement, at.line, at.column), (3, 10, 10), "{e}");
        let statements = parse_script(&script[..script.rfind("## note").expect("x")]).expect("ok");
        let Statement::Ddl(block) = &statements[0] else { panic!("{statements:?}") };
        assert!(block.ends_with("plan add-table -name t"), "{block:?}");
        assert_eq!(ringstore_model::ddl::parse(block).expect("the server parses it").len(), 1);
        assert!(matches!(&statements[1], Statement::Select(s) if s.key.len() == 1));
    }

    #[test]
    fn syntax_errors_say_where_and_what() {
        let e = error("STATS;\nSELECT * FORM t");
        assert_eq!(
            e.to_string(),
            "statement 2, line 2, column 10 (byte 16): expected FROM, found \"FORM\""
        );
        assert_eq!(e.code(), 801);
        let e = error("SELECT * FROM t WHERE a = 1 LIMIT 5 x");
        assert_eq!(
            e,
            StatementError::Syntax {
                at: Place { statement: 1, offset: 36, line: 1, column: 37 },
                expected: "ALLOW FULL SCAN or the end of the statement".into(),
                found: "\"x\"".into(),
            }
        );
        let e = error("SELECT * FROM t WHERE a = 1 b");
        assert!(e.to_string().contains(
            "expected AND, USING INDEX, VERSIONS, ORDER BY, LIMIT, ALLOW FULL SCAN or the end"
        ));
        let e = error("SELECT * FROM t WHERE a <> 1");
        assert!(e.to_string().ends_with("expected a comparison: =, <, <=, > or >=, found \"<>\""));
        let e = error("UPSERT INTO t (a) VALUES (12ab)");
        assert!(e.to_string().ends_with("found \"12ab\""), "{e}");
        let e = error("UPSERT INTO t (a) VALUES (x'0')");
        assert!(e.to_string().contains("expected x'...' with an even number of hex digits"));
        let e = error("SELECT * FROM t WHERE a = 'open");
        assert_eq!(
            e.to_string(),
            "statement 1, line 1, column 27 (byte 26): expected a closing ' for this quoted string, \
             found the end of the script"
        );
        let e = error("INSERT INTO t (a) VALUES (1)");
        assert!(e.to_string().contains("expected a statement: SELECT, UPSERT"), "{e}");
        let e = error("SELECT FROM t");
        assert!(e.to_string().ends_with("expected * or a column name, found \"FROM\""), "{e}");
        let e = error("DELETE FROM t");
        assert!(e.to_string().ends_with("expected WHERE, found the end of the statement"), "{e}");
        let e = error("SELECT * FROM t WHERE 1 < a < 2 < 3");
        assert!(e.to_string().contains("found \"<\""), "{e}");
        let e = error("STATS now");
        assert!(e.to_string().ends_with("expected the end of the statement, found \"now\""), "{e}");
    }

    #[test]
    fn contradictions_are_invalid() {
        let problem = |text: &str| match error(text) {
            StatementError::Invalid { problem, at } => (problem, at.offset),
            other => panic!("{other:?}"),
        };
        let field = |f: &str| f.to_owned();
        assert_eq!(
            problem("SELECT * FROM t WHERE a = 1 AND a = 2"),
            (Problem::FieldTwice { field: field("a") }, 32)
        );
        assert_eq!(
            problem("SELECT * FROM t WHERE a > 1 AND a = 2"),
            (Problem::EqualityAndRange { field: field("a") }, 32)
        );
        assert_eq!(
            problem("SELECT * FROM t WHERE a > 1 AND b < 2 AND b = 3"),
            (Problem::EqualityAndRange { field: field("b") }, 42)
        );
        assert_eq!(
            problem("SELECT * FROM t WHERE a > 1 AND 2 < a"),
            (Problem::BoundTwice { field: field("a"), side: "lower" }, 36)
        );
        assert_eq!(
            problem("SELECT * FROM t WHERE 1 < a > 2"),
            (Problem::BoundTwice { field: field("a"), side: "lower" }, 26)
        );
        assert_eq!(
            problem("SELECT * FROM t WHERE a > 1 ORDER BY b DESC"),
            (Problem::OrderByNotRange { field: field("b"), range: field("a") }, 37)
        );
        assert_eq!(
            problem("SELECT a, a FROM t"),
            (Problem::DuplicateColumn { column: field("a") }, 10)
        );
        assert_eq!(
            problem("UPSERT INTO t (a, b) VALUES (1, 2), (3)"),
            (Problem::RowWidth { row: 2, values: 1, columns: 2 }, 36)
        );
    }

    #[test]
    fn limits_are_named() {
        let rows = vec!["(1)"; crate::limits::UPSERT_ROWS_MAX + 1].join(", ");
        let e = error(&format!("UPSERT INTO t (a) VALUES {rows}"));
        assert!(
            e.to_string().ends_with(
                "the number of rows of one UPSERT is 1001, over the limit UPSERT_ROWS_MAX = 1000"
            ),
            "{e}"
        );
        let ok = vec!["(1)"; crate::limits::UPSERT_ROWS_MAX].join(", ");
        assert!(parse_script(&format!("UPSERT INTO t (a) VALUES {ok}")).is_ok());
        let long = format!("SELECT * FROM t WHERE a = '{}'", "x".repeat(STATEMENT_BYTES_MAX));
        let e = error(&format!("STATS; {long}"));
        assert_eq!(e.code(), 803);
        assert!(e
            .to_string()
            .starts_with("statement 2, line 1, column 8 (byte 7): the statement's length"));
        assert!(e.to_string().ends_with("over the limit STATEMENT_BYTES_MAX = 1048576"), "{e}");
        let block = format!("table create -name t ## {}", "x".repeat(STATEMENT_BYTES_MAX));
        assert_eq!(error(&block).code(), 803);
    }
}
