//! Every limit of the client's statement parser, in one place, with their relations checked at
//! compile time. A script over a limit is refused with a [`super::StatementError`] that names the
//! limit and its value.

use ringstore_model::ddl::DDL_TEXT_BYTES_MAX;

/// Largest script `parse_script` accepts: an `-e` text, a `-f` file or one interactive input.
/// The parsed statements hold the text's strings again, so this bounds the parser's memory.
pub const SCRIPT_BYTES_MAX: usize = 64 * 1024 * 1024;

/// Largest single statement, from its first token to its last (an admin CLI block counts as one
/// statement). DDL goes to the server verbatim, so no statement may be longer than the server's
/// DDL limit.
pub const STATEMENT_BYTES_MAX: usize = 1024 * 1024;

/// Most rows one `UPSERT ... VALUES` may list.
pub const UPSERT_ROWS_MAX: usize = 1000;

/// Longest piece of text quoted in an error message as what was found, in characters.
pub const FOUND_CHARS_MAX: usize = 40;

const _: () = assert!(STATEMENT_BYTES_MAX <= SCRIPT_BYTES_MAX);
const _: () = assert!(STATEMENT_BYTES_MAX <= DDL_TEXT_BYTES_MAX);
const _: () = assert!(UPSERT_ROWS_MAX >= 1);
