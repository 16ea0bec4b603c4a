//! DDL parsing end to end: the seed document's two `myProducts` admin CLI scripts (verbatim,
//! including the flattened one-line form the seed holds them in) and its shard-key example produce
//! the expected schemas; every SQL form parses into the expected `Statement`; syntax errors carry a
//! sensible line and column; schema errors come back as the table module's `TableError` with its
//! stable code. Each test parses text and inspects the result; nothing is executed.

use ringstore_model::ddl::{
    parse, parse_cli, parse_sql, DdlError, OptionChanges, Position, ScriptProblem, Statement,
    PLACEHOLDER_TABLE_ID,
};
use ringstore_model::table::{FieldType, TableSchema};

use ringstore_model::ddl::seed_scripts::{
    MULTI_LINE_SCRIPT, SEED_SINGLE_KEY_SCRIPT, SEED_THREE_KEY_SCRIPT,
};

fn only_create(result: Result<Vec<Statement>, DdlError>) -> (TableSchema, bool) {
    let statements = result.expect("the text parses");
    assert_eq!(statements.len(), 1, "{statements:?}");
    match statements.into_iter().next() {
        Some(Statement::CreateTable { schema, if_not_exists }) => (schema, if_not_exists),
        other => panic!("expected CREATE TABLE, got {other:?}"),
    }
}

fn schema(text: &str) -> TableSchema {
    only_create(parse(text)).0
}

fn fields(schema: &TableSchema) -> Vec<(&str, FieldType)> {
    schema.fields().iter().map(|f| (f.name().as_str(), f.ty().clone())).collect()
}

fn key(schema: &TableSchema) -> Vec<(&str, bool)> {
    let positions = 0..schema.primary_key().len();
    positions.map(|p| (schema.key_field(p).name().as_str(), schema.primary_key()[p].desc)).collect()
}

fn enum_of(values: &[&str]) -> FieldType {
    FieldType::Enum(values.iter().map(|v| (*v).to_owned()).collect())
}

fn at(line: usize, column: usize) -> Position {
    Position { line, column }
}

fn syntax_error(result: Result<Vec<Statement>, DdlError>) -> (Position, String) {
    match result {
        Err(DdlError::Syntax { at, expected, .. }) => (at, expected),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

fn script_error(result: Result<Vec<Statement>, DdlError>) -> (Position, ScriptProblem) {
    match result {
        Err(DdlError::Script { at, problem }) => (at, problem),
        other => panic!("expected a script error, got {other:?}"),
    }
}

fn schema_code(text: &str) -> u16 {
    let error = parse(text).expect_err("the schema is invalid");
    let table_error = error.table_error().unwrap_or_else(|| panic!("not a schema error: {error}"));
    assert_eq!(error.code(), table_error.code());
    table_error.code()
}

// ---- The seed's scripts -------------------------------------------------------------------

#[test]
fn the_seed_scripts_are_copied_verbatim() {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/seeds/001_22dd47f933f68d02.txt");
    // The seed lives outside the repository; check the copies against it where it is present.
    if let Ok(seed) = std::fs::read_to_string(path) {
        assert!(seed.lines().any(|l| l == SEED_SINGLE_KEY_SCRIPT));
        assert!(seed.lines().any(|l| l == SEED_THREE_KEY_SCRIPT));
    }
    assert!(!SEED_SINGLE_KEY_SCRIPT.contains('\n') && !SEED_THREE_KEY_SCRIPT.contains('\n'));
}

#[test]
fn seed_single_key_script_creates_my_products() {
    let s = schema(SEED_SINGLE_KEY_SCRIPT);
    assert_eq!(s.name().as_str(), "myProducts");
    assert_eq!(s.id(), PLACEHOLDER_TABLE_ID);
    let expected = vec![
        ("productName", FieldType::String),
        ("productType", FieldType::String),
        ("color", enum_of(&["blue", "green", "red"])),
        // The seed really says "small,medium,blue" in this first script.
        ("size", enum_of(&["small", "medium", "blue"])),
        ("inventoryCount", FieldType::Integer),
    ];
    assert_eq!(fields(&s), expected);
    assert_eq!(key(&s), vec![("productName", false)]);
    assert_eq!(s.shard_key_len(), 1);
    assert_eq!(s.options().max_versions, 1);
    assert_eq!(s.options().ttl_seconds, None);
}

fn assert_three_key_products(s: &TableSchema) {
    assert_eq!(s.name().as_str(), "myProducts");
    let expected = vec![
        ("productName", FieldType::String),
        ("productType", FieldType::String),
        ("productClass", FieldType::String),
        ("color", enum_of(&["blue", "green", "red"])),
        ("size", enum_of(&["small", "medium", "large"])),
        ("inventoryCount", FieldType::Integer),
    ];
    assert_eq!(fields(s), expected);
    let expected_key =
        vec![("productName", false), ("productType", false), ("productClass", false)];
    assert_eq!(key(s), expected_key);
}

#[test]
fn seed_three_key_script_creates_my_products() {
    let s = schema(SEED_THREE_KEY_SCRIPT);
    assert_three_key_products(&s);
    assert_eq!(s.shard_key_len(), 3, "without shard-key the shard key is the whole key");
}

#[test]
fn multi_line_script_matches_the_flattened_one() {
    assert_eq!(schema(MULTI_LINE_SCRIPT), schema(SEED_THREE_KEY_SCRIPT));
    assert_eq!(parse_cli(MULTI_LINE_SCRIPT), parse(MULTI_LINE_SCRIPT));
}

#[test]
fn seed_shard_key_example_in_cli_and_sql() {
    let cli = "table create -name myProducts\n\
               add-field -type STRING -name productName\n\
               add-field -type STRING -name productType\n\
               add-field -type STRING -name productClass\n\
               primary-key -field productType -field productName -field productClass\n\
               shard-key -field productType -field productName\n\
               exit\n\
               plan add-table -name myProducts -wait";
    let sql = "CREATE TABLE myProducts (productName STRING, productType STRING, \
               productClass STRING, PRIMARY KEY(SHARD(productType, productName), productClass))";
    for s in [schema(cli), schema(sql)] {
        let expected =
            vec![("productType", false), ("productName", false), ("productClass", false)];
        assert_eq!(key(&s), expected);
        assert_eq!(s.shard_key_len(), 2);
    }
    assert_eq!(schema(cli), schema(sql));
    // The seed's counter-example: a shard key that is not a leading prefix.
    let bad = cli.replace(
        "shard-key -field productType -field productName",
        "shard-key -field productClass",
    );
    assert_eq!(schema_code(&bad), 110);
}

// ---- SQL forms ----------------------------------------------------------------------------

#[test]
fn create_table_with_every_type() {
    let (s, if_not_exists) = only_create(parse_sql(
        "CREATE TABLE everything (i INTEGER, l LONG, f FLOAT, d DOUBLE, s STRING, b BINARY, \
         o BOOLEAN, t TIMESTAMP, e ENUM(a, b, c), PRIMARY KEY (i))",
    ));
    assert!(!if_not_exists);
    let expected = vec![
        ("i", FieldType::Integer),
        ("l", FieldType::Long),
        ("f", FieldType::Float),
        ("d", FieldType::Double),
        ("s", FieldType::String),
        ("b", FieldType::Binary),
        ("o", FieldType::Boolean),
        ("t", FieldType::Timestamp),
        ("e", enum_of(&["a", "b", "c"])),
    ];
    assert_eq!(fields(&s), expected);
    assert_eq!(key(&s), vec![("i", false)]);
    assert_eq!(s.shard_key_len(), 1);
}

#[test]
fn create_if_not_exists_with_shard_desc_ttl_and_versions() {
    let (s, if_not_exists) = only_create(parse_sql(
        "CREATE TABLE IF NOT EXISTS events (host STRING, day INTEGER, at TIMESTAMP, msg STRING, \
         PRIMARY KEY (SHARD(host, day), at DESC)) USING TTL 7 DAYS WITH VERSIONS 3",
    ));
    assert!(if_not_exists);
    assert_eq!(key(&s), vec![("host", false), ("day", false), ("at", true)]);
    assert_eq!(s.shard_key_len(), 2);
    assert_eq!(s.options().ttl_seconds, Some(7 * 86_400));
    assert_eq!(s.options().max_versions, 3);
}

#[test]
fn primary_key_forms() {
    let whole = schema("CREATE TABLE t (a LONG, b STRING, PRIMARY KEY (a, b ASC))");
    assert_eq!(key(&whole), vec![("a", false), ("b", false)]);
    assert_eq!(whole.shard_key_len(), 2, "no SHARD: the whole primary key");
    let alone = schema("CREATE TABLE t (a LONG, b STRING, PRIMARY KEY (SHARD(a DESC)))");
    assert_eq!(key(&alone), vec![("a", true)]);
    assert_eq!(alone.shard_key_len(), 1);
    let first = schema("CREATE TABLE t (PRIMARY KEY (SHARD(a), b), a LONG, b STRING)");
    assert_eq!(key(&first), vec![("a", false), ("b", false)]);
    assert_eq!(first.shard_key_len(), 1);
}

#[test]
fn ttl_units_convert_to_seconds() {
    let cases = [
        ("90 SECONDS", 90),
        ("1 SECOND", 1),
        ("2 HOURS", 7_200),
        ("1 hour", 3_600),
        ("3 DAYS", 259_200),
        ("1 day", 86_400),
    ];
    for (ttl, seconds) in cases {
        let text = format!("CREATE TABLE t (a LONG, PRIMARY KEY (a)) USING TTL {ttl}");
        assert_eq!(schema(&text).options().ttl_seconds, Some(seconds), "{ttl}");
    }
}

#[test]
fn with_versions_alone_and_before_ttl() {
    let s = schema("CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSIONS 5");
    assert_eq!((s.options().max_versions, s.options().ttl_seconds), (5, None));
    let s = schema("CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSIONS 2 USING TTL 1 HOURS");
    assert_eq!((s.options().max_versions, s.options().ttl_seconds), (2, Some(3_600)));
}

#[test]
fn drop_describe_and_show() {
    let statements = parse_sql(
        "DROP TABLE t; DROP TABLE IF EXISTS u; DESCRIBE TABLE v; DESCRIBE w; SHOW TABLES;",
    )
    .expect("parses");
    let names: Vec<String> = statements
        .iter()
        .map(|s| match s {
            Statement::DropTable { table, if_exists } => format!("drop {table} {if_exists}"),
            Statement::DescribeTable { table } => format!("describe {table}"),
            Statement::ShowTables => "show".to_owned(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(names, ["drop t false", "drop u true", "describe v", "describe w", "show"]);
}

#[test]
fn keywords_ignore_case_and_names_keep_it() {
    let upper =
        schema("CREATE TABLE Orders (Id LONG, PRIMARY KEY (SHARD(Id DESC))) USING TTL 1 DAYS");
    let mixed =
        schema("cReAtE tAbLe Orders (Id long, primary key (shard(Id desc))) using ttl 1 days");
    assert_eq!(upper, mixed);
    assert_eq!(upper.name().as_str(), "Orders");
    assert!(upper.field("Id").is_some() && upper.field("id").is_none());
    let drop = parse_sql("drop table if exists Orders").expect("parses");
    assert!(
        matches!(&drop[..], [Statement::DropTable { table, if_exists: true }] if table.as_str() == "Orders")
    );
}

#[test]
fn comments_semicolons_and_empty_text() {
    let text = "-- create the table\nCREATE TABLE t ( -- fields\n a LONG, -- the key\n \
                PRIMARY KEY (a));;\n-- and list\nSHOW TABLES -- done";
    let statements = parse_sql(text).expect("parses");
    assert_eq!(statements.len(), 2);
    assert_eq!(parse_sql("").expect("empty"), Vec::new());
    assert_eq!(parse_sql(" ;; -- nothing\n").expect("only separators"), Vec::new());
}

#[test]
fn parse_picks_the_grammar_from_the_first_token() {
    assert_eq!(parse("SHOW TABLES").expect("sql"), vec![Statement::ShowTables]);
    assert_eq!(parse("  table create -name t\nadd-field -type LONG -name a\nprimary-key -field a\nexit\nplan add-table -name t").map(|s| s.len()), Ok(1));
}

// ---- Syntax errors ------------------------------------------------------------------------

#[test]
fn syntax_errors_point_at_the_token() {
    let (pos, expected) = syntax_error(parse_sql("CREATE TABLE t (a INTEGR, PRIMARY KEY (a))"));
    assert_eq!(pos, at(1, 19));
    assert!(expected.contains("field type"), "{expected}");

    let text = "CREATE TABLE t (\n  a INTEGER\n  b LONG,\n  PRIMARY KEY (a))";
    let (pos, expected) = syntax_error(parse_sql(text));
    assert_eq!(pos, at(3, 3));
    assert_eq!(expected, ", or )");

    let (pos, expected) = syntax_error(parse_sql("SELECT * FROM t"));
    assert_eq!(pos, at(1, 1));
    assert!(expected.contains("CREATE TABLE"), "{expected}");

    let text = "CREATE TABLE t (a LONG, PRIMARY KEY (a)) USING TTL 5 WEEKS";
    let (pos, expected) = syntax_error(parse_sql(text));
    assert_eq!(pos, at(1, 54));
    assert!(expected.contains("a unit: SECONDS, HOURS or DAYS"), "{expected}");

    let (pos, expected) = syntax_error(parse_sql("DROP TABLE"));
    assert_eq!((pos, expected.as_str()), (at(1, 11), "a table name"));

    let (pos, expected) = syntax_error(parse_sql("SHOW TABLES SHOW TABLES"));
    assert_eq!((pos, expected.as_str()), (at(1, 13), "; or the end of the text"));

    let text = "CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSIONS 99999999999999999999";
    let (pos, _) = syntax_error(parse_sql(text));
    assert_eq!(pos, at(1, 56));

    let (pos, _) = syntax_error(parse_sql("CREATE TABLE t (a ENUM(x,), PRIMARY KEY (a))"));
    assert_eq!(pos, at(1, 26));

    let (pos, _) = syntax_error(parse_sql("CREATE TABLE t (a LONG, PRIMARY KEY (a DESCX))"));
    assert_eq!(pos, at(1, 40));
}

#[test]
fn cli_syntax_errors_point_at_the_token() {
    let (pos, expected) =
        syntax_error(parse_cli("table create -name t\nadd-field -type STRNG -name a"));
    assert_eq!(pos, at(2, 17));
    assert!(expected.contains("field type"), "{expected}");

    let (pos, expected) =
        syntax_error(parse_cli("table create -name t\nadd-field -type LONG -nme a"));
    assert_eq!(pos, at(2, 22));
    assert_eq!(expected, "-type, -name or -enum-values");

    let (pos, expected) = syntax_error(parse_cli("table create -name t\nadd-field -name a"));
    assert_eq!((pos, expected.as_str()), (at(2, 18), "-type and a field type"));

    let (pos, expected) = syntax_error(parse_cli("table create -name t\nmake-field x"));
    assert_eq!(pos, at(2, 1));
    assert!(expected.starts_with("a command"), "{expected}");

    let (pos, _) = syntax_error(parse_cli(
        "table create -name t add-field -type ENUM -name e -enum-values a,,b",
    ));
    assert_eq!(pos, at(1, 66));

    let (pos, expected) = syntax_error(parse_cli("table create"));
    assert_eq!((pos, expected.as_str()), (at(1, 13), "-name and a table name"));
}

// ---- Script errors ------------------------------------------------------------------------

const T_OPEN: &str = "table create -name t\nadd-field -type LONG -name a\nprimary-key -field a\n";

#[test]
fn cli_commands_out_of_place() {
    let (pos, problem) = script_error(parse_cli("add-field -type LONG -name a"));
    assert_eq!(pos, at(1, 1));
    assert_eq!(problem, ScriptProblem::OutsideTableCreation { command: "add-field" });

    let (_, problem) = script_error(parse_cli("primary-key -field a"));
    assert_eq!(problem, ScriptProblem::OutsideTableCreation { command: "primary-key" });

    let (pos, problem) = script_error(parse_cli("exit"));
    assert_eq!((pos, problem), (at(1, 1), ScriptProblem::OutsideTableCreation { command: "exit" }));

    let (pos, problem) = script_error(parse_cli(&format!("{T_OPEN}table create -name u")));
    assert_eq!(pos, at(4, 1));
    assert_eq!(problem, ScriptProblem::NestedTableCreate { open: "t".into(), table: "u".into() });
}

#[test]
fn cli_plan_needs_a_finished_table() {
    let (pos, problem) =
        script_error(parse_cli(&format!("{T_OPEN}exit\nplan add-table -name u -wait")));
    assert_eq!((pos, problem), (at(5, 1), ScriptProblem::PlanUnknownTable { table: "u".into() }));

    let (_, problem) = script_error(parse_cli(&format!("{T_OPEN}plan add-table -name t")));
    assert_eq!(problem, ScriptProblem::PlanUnfinishedTable { table: "t".into() });

    let (pos, problem) = script_error(parse_cli(T_OPEN));
    assert_eq!((pos, problem), (at(1, 1), ScriptProblem::UnfinishedTable { table: "t".into() }));

    let (_, problem) = script_error(parse_cli(&format!("{T_OPEN}exit\n")));
    assert_eq!(problem, ScriptProblem::TableNotAdded { table: "t".into() });
    // The message says nothing was created, rather than that the table was.
    let text = problem.to_string();
    assert!(text.contains("defined") && text.contains("so nothing was created"), "{text}");

    // Once added, the table is gone from the script's pending list.
    let twice = format!("{T_OPEN}exit\nplan add-table -name t\nplan add-table -name t");
    let (_, problem) = script_error(parse_cli(&twice));
    assert_eq!(problem, ScriptProblem::PlanUnknownTable { table: "t".into() });
}

/// `-if-not-exists` (ringstore's switch; the admin CLI has no IF NOT EXISTS) makes the plan's
/// CREATE one that ignores an existing table, with or without `-wait`, in any order.
#[test]
fn cli_plan_if_not_exists() {
    for plan in
        ["plan add-table -name t -if-not-exists", "plan add-table -if-not-exists -wait -name t"]
    {
        let statements = parse_cli(&format!("{T_OPEN}exit\n{plan}")).expect("parses");
        assert!(
            matches!(statements[..], [Statement::CreateTable { if_not_exists: true, .. }]),
            "{plan}: {statements:?}"
        );
    }
    let plain = parse_cli(&format!("{T_OPEN}exit\nplan add-table -name t -wait")).expect("parses");
    assert!(matches!(plain[..], [Statement::CreateTable { if_not_exists: false, .. }]));
    let twice = format!("{T_OPEN}exit\nplan add-table -name t -if-not-exists -if-not-exists");
    let (_, problem) = script_error(parse_cli(&twice));
    assert_eq!(problem, ScriptProblem::Repeated { what: "-if-not-exists" });
}

#[test]
fn cli_repeats_and_misplaced_flags() {
    let (_, problem) = script_error(parse_cli(&format!("{T_OPEN}primary-key -field a")));
    assert_eq!(problem, ScriptProblem::Repeated { what: "primary-key" });

    let (pos, problem) = script_error(parse_cli("table create -name t -name u"));
    assert_eq!((pos, problem), (at(1, 22), ScriptProblem::Repeated { what: "-name" }));

    let text = "table create -name t\nadd-field -type STRING -name s -enum-values a,b";
    let (_, problem) = script_error(parse_cli(text));
    assert_eq!(problem, ScriptProblem::EnumValuesOnNonEnum { field: "s".into() });
}

#[test]
fn sql_repeats_and_misplaced_shard() {
    let text = "CREATE TABLE t (a LONG, PRIMARY KEY (a), PRIMARY KEY (a))";
    let (pos, problem) = script_error(parse_sql(text));
    assert_eq!((pos, problem), (at(1, 42), ScriptProblem::Repeated { what: "PRIMARY KEY" }));

    let text = "CREATE TABLE t (a LONG, b LONG, PRIMARY KEY (a, SHARD(b)))";
    let (pos, problem) = script_error(parse_sql(text));
    assert_eq!((pos, problem), (at(1, 49), ScriptProblem::ShardNotFirst));

    let text = "CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSIONS 2 WITH VERSIONS 3";
    let (_, problem) = script_error(parse_sql(text));
    assert_eq!(problem, ScriptProblem::Repeated { what: "WITH VERSIONS" });
}

// ---- Schema errors: the table module's errors and codes ---------------------------------------

#[test]
fn schema_errors_keep_the_table_module_codes() {
    let cases = [
        // Invalid names (101): a leading digit, a quoted name with a dash, a 256-character name.
        ("CREATE TABLE 9t (a LONG, PRIMARY KEY (a))", 101),
        ("CREATE TABLE \"my-table\" (a LONG, PRIMARY KEY (a))", 101),
        (
            "table create -name my-table\nadd-field -type LONG -name a\nprimary-key -field a\nexit",
            101,
        ),
        ("CREATE TABLE t (a LONG, b ENUM(x, 1y), PRIMARY KEY (a))", 101),
        ("DROP TABLE \"bad name\"", 101),
        ("DESCRIBE café", 101),
        ("CREATE TABLE t (a LONG, a STRING, PRIMARY KEY (a))", 102),
        ("table create -name t\nadd-field -type ENUM -name e\nprimary-key -field e\nexit", 103),
        ("CREATE TABLE t (a LONG, e ENUM(x, x), PRIMARY KEY (a))", 104),
        ("CREATE TABLE t (a LONG)", 106),
        ("CREATE TABLE t (a BOOLEAN, PRIMARY KEY (a))", 108),
        ("CREATE TABLE t (a LONG, PRIMARY KEY (a, a))", 109),
        ("CREATE TABLE t (a LONG, PRIMARY KEY (b))", 202),
        ("CREATE TABLE t (a LONG, PRIMARY KEY (a)) USING TTL 0 SECONDS", 112),
        ("CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSIONS 0", 112),
        ("CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSIONS 4294967296", 112),
        ("CREATE TABLE t (a LONG, PRIMARY KEY (a)) USING TTL 99999999999999999 DAYS", 112),
    ];
    for (text, code) in cases {
        assert_eq!(schema_code(text), code, "{text}");
    }
}

#[test]
fn long_names_and_too_many_key_fields() {
    let long = "n".repeat(256);
    assert_eq!(schema_code(&format!("CREATE TABLE {long} (a LONG, PRIMARY KEY (a))")), 101);
    let names: Vec<String> = (0..9).map(|i| format!("k{i}")).collect();
    let defs: Vec<String> = names.iter().map(|n| format!("{n} LONG")).collect();
    let text = format!("CREATE TABLE t ({}, PRIMARY KEY ({}))", defs.join(", "), names.join(", "));
    assert_eq!(schema_code(&text), 107);
    let eight = format!(
        "CREATE TABLE t ({}, PRIMARY KEY ({}))",
        defs[..8].join(", "),
        names[..8].join(", ")
    );
    assert_eq!(key(&schema(&eight)).len(), 8);
}

/// A schema error points at the name it is about, in both dialects: a BOOLEAN key field at its
/// last mention (the key clause, or the primary-key command), a field declared twice at the
/// second declaration, a bad table name at the name; an error about the whole table at the
/// statement.
#[test]
fn schema_errors_point_at_the_name_they_are_about() {
    let text = "SHOW TABLES;\n  CREATE TABLE t (a BOOLEAN,\n    PRIMARY KEY (a))";
    let error = parse_sql(text).expect_err("BOOLEAN key");
    assert_eq!(error.position(), Some(at(3, 18)), "{error}");
    assert!(error.to_string().contains("BOOLEAN"), "{error}");
    let twice = "CREATE TABLE t (a LONG,\n b STRING,\n a STRING, PRIMARY KEY (a))";
    assert_eq!(parse_sql(twice).expect_err("a twice").position(), Some(at(3, 2)));
    let bad =
        "CREATE TABLE t (a LONG, PRIMARY KEY (a));\nCREATE TABLE 9t (a LONG, PRIMARY KEY (a))";
    assert_eq!(parse_sql(bad).expect_err("9t").position(), Some(at(2, 14)));
    let no_key = "CREATE TABLE t (\n a LONG)";
    assert_eq!(parse_sql(no_key).expect_err("no key").position(), Some(at(1, 1)));
    let cli = "## a table\ntable create -name t\nadd-field -type BOOLEAN -name b\nprimary-key -field b\nexit";
    let error = parse_cli(cli).expect_err("BOOLEAN key");
    assert_eq!((error.position(), error.code()), (Some(at(4, 1)), 108));
    let cli = "table create -name t\nadd-field -type LONG -name a\nadd-field -type LONG -name a\nprimary-key -field a\nexit";
    assert_eq!(parse_cli(cli).expect_err("a twice").position(), Some(at(3, 1)));
}

#[test]
fn over_long_text_is_refused() {
    let text = " ".repeat(ringstore_model::ddl::DDL_TEXT_BYTES_MAX + 1);
    assert!(matches!(parse(&text), Err(DdlError::TooLong { .. })));
}

/// One DDL text holds at most DDL_STATEMENTS_MAX statements, in both grammars: the limit itself
/// parses, one more is refused with code 404 naming the limit (80,000 `SHOW TABLES;` fit in the
/// 1 MiB text limit and overflowed the response's u16 outcome count).
#[test]
fn statements_per_text_are_bounded() {
    use ringstore_model::ddl::{parse, DdlError, DDL_STATEMENTS_MAX};
    let sql = |n: usize| "SHOW TABLES;\n".repeat(n);
    assert_eq!(
        parse(&sql(DDL_STATEMENTS_MAX)).expect("the limit parses").len(),
        DDL_STATEMENTS_MAX
    );
    for n in [DDL_STATEMENTS_MAX + 1, 80_000] {
        let e = parse(&sql(n)).expect_err("over the limit");
        assert_eq!(e, DdlError::TooManyStatements { statements: n });
        assert_eq!(e.code(), 404);
        assert!(e.to_string().contains("the limit is 1024 per request"), "{e}");
    }
    let cli = |n: usize| {
        (0..n)
            .map(|i| {
                format!(
                    "table create -name t{i}\nadd-field -type LONG -name id\n\
                     primary-key -field id\nexit\nplan add-table -name t{i} -wait\n"
                )
            })
            .collect::<String>()
    };
    assert_eq!(
        parse(&cli(DDL_STATEMENTS_MAX)).expect("the limit parses").len(),
        DDL_STATEMENTS_MAX
    );
    let e = parse(&cli(DDL_STATEMENTS_MAX + 1)).expect_err("over the limit");
    assert_eq!(e.code(), 404);
}

/// An error on the last of many statements still names its line: the parser tracks positions
/// incrementally (computing each from the start of the text made long texts quadratic), and
/// must agree with counting from the start.
#[test]
fn an_error_after_many_statements_names_its_line() {
    let text = format!("{}SHOW TABLEZ", "SHOW TABLES;\n".repeat(1000));
    let e = ringstore_model::ddl::parse(&text).expect_err("the last statement is wrong");
    let at = e.position().expect("a syntax error has a position");
    assert_eq!((at.line, at.column), (1001, 6), "{e}");
}

// ---- Table options: CREATE and ALTER TABLE --------------------------------------------------

#[test]
fn create_sets_every_option() {
    let text = "CREATE TABLE t (a LONG, PRIMARY KEY (a)) WITH VERSION OFFSET 2 HOURS \
                USING TTL 3 DAYS WITH VERSIONS 4";
    let options = *schema(text).options();
    assert_eq!(options.max_version_offset_seconds, 7_200);
    assert_eq!(options.ttl_seconds, Some(3 * 86_400));
    assert_eq!(options.max_versions, 4);
    let none = schema("CREATE TABLE t (a LONG, PRIMARY KEY (a)) USING TTL NONE");
    assert_eq!(none.options().ttl_seconds, None);
}

#[test]
fn alter_table_sets_the_options_it_names() {
    let statements = parse_sql(
        "ALTER TABLE t USING TTL 1 DAYS WITH VERSIONS 3;\n\
         alter table t with version offset 60 seconds;\n\
         ALTER TABLE t USING TTL NONE",
    )
    .expect("parses");
    let changes: Vec<OptionChanges> = statements
        .into_iter()
        .map(|s| match s {
            Statement::AlterTable { table, changes } if table.as_str() == "t" => changes,
            other => panic!("expected ALTER TABLE t, got {other:?}"),
        })
        .collect();
    let day = OptionChanges {
        ttl_seconds: Some(Some(86_400)),
        max_versions: Some(3),
        ..OptionChanges::default()
    };
    let offset = OptionChanges { max_version_offset_seconds: Some(60), ..OptionChanges::default() };
    let no_ttl = OptionChanges { ttl_seconds: Some(None), ..OptionChanges::default() };
    assert_eq!(changes, [day, offset, no_ttl]);
}

#[test]
fn alter_table_needs_an_option_once() {
    let (pos, expected) = syntax_error(parse_sql("ALTER TABLE t"));
    assert_eq!(pos, at(1, 14));
    assert!(expected.contains("USING TTL, WITH VERSIONS or WITH VERSION OFFSET"), "{expected}");
    let (_, problem) = script_error(parse_sql("ALTER TABLE t WITH VERSIONS 2 WITH VERSIONS 3"));
    assert_eq!(problem, ScriptProblem::Repeated { what: "WITH VERSIONS" });
    let (_, expected) = syntax_error(parse_sql("ALTER TABLE t WITH VERSION 2"));
    assert!(expected.contains("VERSIONS or VERSION OFFSET"), "{expected}");
    assert_eq!(parse_sql("ALTER TABLE 9t WITH VERSIONS 2").expect_err("bad name").code(), 101);
}
