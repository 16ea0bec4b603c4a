//! DDL text (issue 3): SQL-style statements and the Oracle NoSQL admin CLI script, parsed into
//! table schemas.
//!
//! [`parse_sql`] reads `CREATE TABLE`, `DROP TABLE`, `ALTER TABLE`, `DESCRIBE`, `SHOW TABLES` and
//! the index statements; [`parse_cli`]
//! reads the admin CLI script of the seed document, including its flattened one-line form;
//! [`parse`] picks one of them from the first token. Both grammars are winnow parsers. They produce
//! [`Statement`]s and execute nothing: a `CREATE` carries a [`TableSchema`](crate::table::TableSchema)
//! already checked by the table module's builder, with the placeholder id
//! [`PLACEHOLDER_TABLE_ID`] that the catalog replaces. Errors are [`DdlError`]s with a line and
//! column; a schema error keeps the table module's [`TableError`](crate::table::TableError) and
//! its code. No input makes the parser panic, the text is limited to [`DDL_TEXT_BYTES_MAX`]
//! bytes and [`DDL_STATEMENTS_MAX`] statements, and parsing is linear in the text, so the work
//! per call is bounded.
//!
//! # Grammar
//!
//! SQL style. Keywords (upper case below) match in any case and only as whole words; names are
//! case-sensitive. Whitespace and `--` comments (to the end of the line) may stand between any
//! two tokens.
//!
//! ```text
//! sql_text     = { ";" } [ statement { ";" { ";" } [ statement ] } ] ;
//! statement    = create | drop | alter | describe | show
//!              | create_index | drop_index | show_indexes ;
//! create       = CREATE TABLE [ IF NOT EXISTS ] name "(" element { "," element } ")"
//!                { table_option } ;
//! element      = PRIMARY KEY "(" key_part { "," key_part } ")"     (* at most once *)
//!              | name type ;
//! key_part     = SHARD "(" key_field { "," key_field } ")"         (* first part only *)
//!              | key_field ;
//! key_field    = name [ ASC | DESC ] ;
//! type         = INTEGER | LONG | FLOAT | DOUBLE | STRING | BINARY | BOOLEAN | TIMESTAMP
//!              | ENUM "(" name { "," name } ")" ;
//! table_option = USING TTL ( number unit | NONE )                  (* each at most once *)
//!              | WITH VERSIONS number
//!              | WITH VERSION OFFSET number unit ;
//! unit         = SECONDS | SECOND | HOURS | HOUR | DAYS | DAY ;
//! drop         = DROP TABLE [ IF EXISTS ] name ;
//! alter        = ALTER TABLE name table_option { table_option } ;
//! describe     = DESCRIBE [ TABLE ] name ;
//! show         = SHOW TABLES ;
//! create_index = CREATE INDEX [ IF NOT EXISTS ] name ON name "(" name { "," name } ")" ;
//! drop_index   = DROP INDEX [ IF EXISTS ] name ON name ;
//! show_indexes = SHOW INDEXES ON name ;
//! name         = word | '"' { any character but '"' and line breaks } '"' ;
//! word         = ( letter | digit | "_" ) { letter | digit | "_" } ;  (* Unicode letters *)
//! number       = digit { digit } ;                                   (* fits a u64 *)
//! ```
//!
//! Names are lexed more loosely than the name rule `[A-Za-z_][A-Za-z0-9_]{0,254}` so that a bad
//! name is reported by the schema builder with its own error code. Without `SHARD(...)` the shard
//! key is the whole primary key; `PRIMARY KEY (SHARD(a, b), c)` makes `a, b` the shard key. Units
//! convert to seconds (HOURS x 3,600, DAYS x 86,400). The options: `USING TTL` the table's TTL
//! (`NONE`: rows do not expire), `WITH VERSIONS` the versions kept per row, `WITH VERSION OFFSET`
//! the client version window (`[now - offset, now + offset)`). `ALTER TABLE` changes the options
//! it names and leaves the others.
//!
//! Admin CLI script. Command words are lower case and case-sensitive, as in the CLI; type names
//! match in any case. A command and its arguments sit on one line, separated by spaces or tabs;
//! flags may come in any order.
//!
//! ```text
//! cli_text     = gap { command gap } ;
//! command      = "table" "create" "-name" token
//!              | "add-field" "-type" type_word "-name" token [ "-enum-values" value { "," value } ]
//!              | "primary-key" "-field" token { "-field" token }
//!              | "shard-key" "-field" token { "-field" token }
//!              | "exit"
//!              | "plan" "add-table" "-name" token [ "-wait" ] [ "-if-not-exists" ]
//!              | "plan" "add-index" "-name" token "-table" token "-field" token
//!                { "-field" token } [ "-wait" ] [ "-if-not-exists" ]
//!              | "plan" "remove-index" "-name" token "-table" token [ "-wait" ] ;
//! gap          = { whitespace | comment } ;
//! comment      = "##" { character } ;   (* up to the line end, or up to a command start *)
//! command_start = "table" "create" "-name" | "add-field" "-" | "primary-key" "-field"
//!              | "shard-key" "-field" | "plan" ( "add-table" | "add-index" | "remove-index" )
//!              | "exit" ( "##" | command_start | end of text ) ;
//! token        = a run of characters other than whitespace ;
//! value        = a run of characters other than whitespace and "," ;
//! ```
//!
//! A comment ends before a `command_start` that begins at a word boundary, because the seed holds
//! each script flattened onto one line. The commands run through table creation mode: `table
//! create` opens a table, `add-field`, `primary-key` and `shard-key` fill it, `exit` closes it and
//! checks its schema, and `plan add-table -name t` emits the `CreateTable` of the closed table `t`.
//! `-if-not-exists` is ringstore's own switch (the admin CLI has no IF NOT EXISTS): with it, adding
//! a table that already exists is no error, so a script can be run again.
//! A script that leaves a table open, or closes one it never adds, is an error.
//!
//! Secondary indexes (issue 15): `CREATE INDEX idx ON t (f1, f2)` and `plan add-index -name idx
//! -table t -field f1 -field f2` are the same statement, as are `DROP INDEX idx ON t` and `plan
//! remove-index -name idx -table t`; the index commands need no table creation mode. `-wait` is
//! accepted and changes nothing: a statement's answer comes when the catalog file holds it. What
//! an index may be (its fields, how many) is checked by the catalog (`table/catalog/indexes.rs`).

mod cli;
mod cli_syntax;
mod error;
mod lex;
mod limits;
pub mod seed_scripts;
mod sql;
mod statement;

#[cfg(test)]
mod fuzz_tests;

pub use error::{DdlError, DdlResult, Position, ScriptProblem};
pub use limits::{DDL_STATEMENTS_MAX, DDL_TEXT_BYTES_MAX};
pub use statement::{OptionChanges, Statement, PLACEHOLDER_TABLE_ID};

/// Parses SQL-style DDL: `;`-separated statements, in order.
pub fn parse_sql(text: &str) -> DdlResult<Vec<Statement>> {
    check_len(text)?;
    check_count(sql::parse(text)?)
}

/// Parses an admin CLI script; one `CreateTable` per `plan add-table`, in order.
pub fn parse_cli(text: &str) -> DdlResult<Vec<Statement>> {
    check_len(text)?;
    check_count(cli::parse(text)?)
}

/// Parses either form: text that starts (after whitespace) with a `##` comment or a CLI command
/// is a CLI script, anything else is SQL.
pub fn parse(text: &str) -> DdlResult<Vec<Statement>> {
    let start = text.trim_start();
    if start.starts_with("##") || cli_syntax::starts_command(start) {
        parse_cli(text)
    } else {
        parse_sql(text)
    }
}

fn check_count(statements: Vec<Statement>) -> DdlResult<Vec<Statement>> {
    if statements.len() > DDL_STATEMENTS_MAX {
        return Err(DdlError::TooManyStatements { statements: statements.len() });
    }
    Ok(statements)
}

fn check_len(text: &str) -> DdlResult<()> {
    if text.len() > DDL_TEXT_BYTES_MAX {
        return Err(DdlError::TooLong { bytes: text.len() });
    }
    Ok(())
}
