//! `ringstore-cli`, the SQL-style client of the node: scripts split into statements and parsed
//! ([`parse_script`]), literals typed by their field ([`to_value`]), results printed as a table or
//! JSON ([`output`]), and [`run::Session`], which sends the statements through the protocol
//! client. Only `run.rs`, `connect.rs` (resolving `--addr`, connecting) and `interactive.rs`
//! (the prompt, whose Tab completion asks the node for names through its session) touch the
//! network or the terminal; the rest, `complete.rs` included, is pure and unit-tested on its own.
//!
//! # Scripts
//!
//! A script is an `-e` text, a `-f` file or one interactive input. Statements are separated by
//! `;` (a `;` inside a quoted string or name, or in a comment, separates nothing; the last `;` is
//! optional); whitespace and `--` comments may stand between any two tokens. An admin CLI block
//! (the Oracle NoSQL script of the seed document: lines of `table create`, `add-field`,
//! `primary-key`, `shard-key`, `exit`, `plan add-table` and `##` comments) is one statement that
//! needs no `;`; see `admin.rs` for where it ends. SQL DDL and admin blocks go to the
//! server verbatim as [`Statement::Ddl`]; the server's DDL parser (`ringstore_model::ddl`)
//! checks them.
//!
//! # Grammar
//!
//! Keywords match in any case and only as whole words; names are case-sensitive.
//!
//! ```text
//! script     = { ";" } [ statement { ";" { ";" } [ statement ] } ] ;   (* admin blocks need no ";" *)
//! statement  = admin_block | select | upsert | update | delete | batch | describe | stats
//!            | topology | sql_ddl ;
//! select     = SELECT ( "*" | name { "," name } ) FROM name [ WHERE conditions ]
//!              [ USING INDEX name ] [ versions ] [ ORDER BY name [ ASC | DESC ] ] [ LIMIT whole ]
//!              [ ALLOW FULL SCAN ] ;
//! versions   = VERSIONS ( whole | ALL ) [ FROM version TO version ]
//!            | VERSIONS FROM version TO version ;                 (* [from, to), newest first *)
//! upsert     = UPSERT INTO name "(" name { "," name } ")" VALUES row { "," row } [ using ] [ if ] ;
//! row        = "(" literal { "," literal } ")" ;                  (* one literal per column *)
//! update     = UPDATE name SET name "=" literal { "," name "=" literal } WHERE conditions
//!              [ using ] [ if ] ;
//! delete     = DELETE FROM name WHERE conditions [ if ] ;
//! using      = USING use { AND use } ;                            (* each kind once *)
//! use        = VERSION version | TTL whole ( SECONDS | SECOND | HOURS | HOUR | DAYS | DAY ) ;
//! version    = whole | string ;              (* ms since the epoch, or a UTC date-time text *)
//! if         = IF ( ABSENT | PRESENT | VERSION whole ) ;          (* a token a write printed *)
//! batch      = BEGIN BATCH [ ABORT ON FAILURE ] ";" { ";" } ( upsert | update | delete ) ";"
//!              { ( upsert | update | delete ) ";" } APPLY BATCH ;  (* one execute *)
//! describe   = ( DESCRIBE | DESC ) [ TABLE ] name ;
//! stats      = [ SHOW ] STATS ;
//! topology   = [ SHOW ] TOPOLOGY ;
//! sql_ddl    = ( CREATE | DROP | ALTER | TRUNCATE | SHOW ) { token } ;  (* sent verbatim *)
//! conditions = condition { AND condition } ;
//! condition  = name ( "=" | "<" | "<=" | ">" | ">=" ) literal
//!            | name BETWEEN literal AND literal
//!            | literal ( "=" | "<" | "<=" | ">" | ">=" ) name [ ( "<" | "<=" | ">" | ">=" ) literal ] ;
//! literal    = number | string | binary | TRUE | FALSE | NULL | symbol ;
//! number     = [ "+" | "-" ] ( digits [ "." { digit } ] | "." digits ) [ ( "e" | "E" ) [ "+" | "-" ] digits ] ;
//! string     = "'" { any character but "'" | "''" } "'" ;
//! binary     = ( "x" | "X" ) "'" { hex hex } "'" ;
//! name       = word | '"' { any character but '"' and line breaks } '"' ;
//! symbol     = word ;                                            (* an ENUM value *)
//! word       = ( letter | "_" ) { letter | digit | "_" } ;        (* not a reserved word *)
//! ```
//!
//! The reserved words (`SELECT FROM WHERE AND ORDER BY LIMIT ALLOW VALUES INTO BETWEEN TRUE FALSE
//! NULL`) are names only in double quotes. A WHERE clause holds equalities plus bounds on at most
//! one range field (at most one lower and one upper bound); `123 < orderid < 456` is the Lindorm
//! form of two bounds, and BETWEEN is two inclusive bounds. With a range, ORDER BY must name the
//! range field. With `USING INDEX idx` the conditions are on the index's fields instead of the
//! primary key's (equalities on a leading prefix, a range on the next; `f = NULL` finds the rows
//! without a value), and the rows come in index order (`run/index_select.rs`). Without it, a WHERE
//! clause that does not fit the primary key but fits exactly one index reads through that index
//! (`run/index_pick.rs`). A batch's writes are statements of their own, numbered in the script
//! like any other (`batch.rs`); a batch is one table's and at most `EXECUTE_OPS_MAX` operations.
//! Every limit is in [`limits`].

mod admin;
pub mod ast;
pub mod batch;
pub mod complete;
mod conditions;
pub mod connect;
mod cursor;
mod dml;
pub mod error;
pub mod execute;
pub mod interactive;
mod lex;
pub mod limits;
pub mod literal;
pub mod output;
pub mod run;
pub mod statement;
mod timestamp;
pub mod versions;
pub mod writes;

pub use ast::{RangeSpec, Select, Statement};
pub use error::{Place, Problem, StatementError};
pub use literal::{to_optional_value, to_value, Literal, LiteralError};
pub use output::Format;
pub use run::{CliError, Session};
pub use statement::parse_script;

#[cfg(test)]
mod codes_tests {
    #[test]
    fn the_cli_s_codes_are_documented() {
        let codes = [
            crate::error::CODE_SYNTAX,
            crate::error::CODE_INVALID,
            crate::error::CODE_LIMIT,
            crate::literal::CODE_LITERAL,
            crate::run::CODE_CONNECTION,
            crate::run::CODE_OUTPUT,
            crate::run::CODE_TIMEOUT,
            crate::execute::CODE_ABORTED,
        ];
        ringstore_model::error_codes::assert_documented(&codes);
    }
}
