//! Finding an Oracle NoSQL admin CLI script block (`table create`, `add-field`, `primary-key`,
//! `shard-key`, `exit`, `plan add-table`, `plan add-index`, `plan remove-index`, `##` comments)
//! inside a script, so that it can go to the
//! server verbatim as one DDL statement.
//!
//! The CLI grammar is line-based and knows nothing of `;` or SQL quotes, and its comments are free
//! English (the seed's comments hold quotes, and could hold `;`). So a block is not lexed like SQL.
//! It starts where a statement starts with `##` or a command start, and it runs
//!
//! - to the end of the text,
//! - to a `;` outside a `##` comment (the caller skips the `;`), or
//! - to the end of a line after which the next non-blank line does not start with `##` or a
//!   command start.
//!
//! A `##` comment ends where the storage DDL parser ends it: at the line end, or before a command
//! start at a word boundary (the seed holds each script flattened onto one line). The command
//! starts are the storage parser's (a command word and what must follow it, so English such as
//! "table creation mode" is no command), except that a line may also start with a bare `exit`.

/// Command words and the words that must follow each, separated by spaces or tabs; the last
/// word only has to start what follows.
const COMMAND_STARTS: [&[&str]; 7] = [
    &["table", "create", "-name"],
    &["add-field", "-"],
    &["primary-key", "-field"],
    &["shard-key", "-field"],
    &["plan", "add-table"],
    &["plan", "add-index"],
    &["plan", "remove-index"],
];

/// One admin CLI block: the script's bytes `start..end`, and whether it holds a command at all
/// (a block of `##` comments alone is a comment, not a statement).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Block {
    pub end: usize,
    pub has_command: bool,
}

/// Whether a statement starting at `rest` is an admin CLI block.
pub(crate) fn starts_block(rest: &str) -> bool {
    rest.starts_with("##") || starts_command(rest, true)
}

/// The block that starts at `start` (where [`starts_block`] is true).
pub(crate) fn block(text: &str, start: usize) -> Block {
    let mut pos = start;
    let mut has_command = false;
    let mut at_boundary = true;
    while let Some(c) = text[pos..].chars().next() {
        match c {
            ';' => break,
            '\n' => match next_line(text, pos) {
                Some(next) => (pos, at_boundary) = (next, true),
                None => break,
            },
            '#' if at_boundary && text[pos..].starts_with("##") => pos = comment_end(text, pos),
            _ => {
                has_command |= !c.is_whitespace();
                at_boundary = c.is_whitespace();
                pos += c.len_utf8();
            }
        }
    }
    Block { end: pos, has_command }
}

/// After the line end at `pos`: the start of the next non-blank line if that line continues the
/// block, or None if the block ends here.
fn next_line(text: &str, pos: usize) -> Option<usize> {
    let rest = &text[pos..];
    let next = pos + (rest.len() - rest.trim_start().len());
    starts_block(&text[next..]).then_some(next)
}

/// The end of the `##` comment at `pos`: its line end, or a command start at a word boundary.
fn comment_end(text: &str, pos: usize) -> usize {
    let mut pos = pos + 2;
    let mut at_boundary = true;
    while let Some(c) = text[pos..].chars().next() {
        if c == '\n' || (at_boundary && starts_command(&text[pos..], false)) {
            break;
        }
        at_boundary = c.is_whitespace();
        pos += c.len_utf8();
    }
    pos
}

/// Whether `rest` starts with a command. `exit` needs `##`, another command or the end of the
/// text after it, as in the storage parser; with `line_start` it may also end its line or meet a
/// `;`, because a line that is just `exit` is a command wherever it stands.
fn starts_command(rest: &str, line_start: bool) -> bool {
    if COMMAND_STARTS.iter().any(|words| starts_with_words(rest, words)) {
        return true;
    }
    let Some(after) = rest.strip_prefix("exit") else { return false };
    let trimmed = after.trim_start_matches(HSPACE);
    trimmed.is_empty()
        || trimmed.starts_with("##")
        || (line_start && trimmed.starts_with(['\n', ';']))
        || (trimmed.len() < after.len() && starts_command(trimmed, false))
}

/// Spaces and tabs between a command's words; `\r` too, so CRLF line ends work.
const HSPACE: [char; 3] = [' ', '\t', '\r'];

fn starts_with_words(rest: &str, words: &[&str]) -> bool {
    let mut rest = rest;
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            let trimmed = rest.trim_start_matches(HSPACE);
            if trimmed.len() == rest.len() {
                return false;
            }
            rest = trimmed;
        }
        let Some(after) = rest.strip_prefix(word) else { return false };
        rest = after;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of the block at the start of `text`.
    fn first_block(text: &str) -> (&str, bool) {
        let b = block(text, 0);
        (&text[..b.end], b.has_command)
    }

    #[test]
    fn command_starts_need_their_follow_up() {
        assert!(starts_block("table create -name t"));
        assert!(starts_block("## a comment"));
        assert!(starts_block("plan\tadd-table -name t"));
        assert!(!starts_block("table creation mode"));
        assert!(!starts_block("tablecreate -name t"));
        assert!(starts_block("exit"));
        assert!(starts_block("exit\nplan add-table -name t"));
        assert!(starts_block("exit;"));
        assert!(!starts_block("exits"));
        assert!(!starts_command("exit\n", false));
        assert!(starts_command("exit plan add-table", false));
        assert!(!starts_command("exit table creation mode", false));
    }

    #[test]
    fn a_block_ends_at_a_semicolon_or_a_line_that_is_not_cli() {
        let text = "table create -name t\n\n  add-field -type STRING -name a\nexit\nSELECT 1";
        assert_eq!(first_block(text), (&text[..text.find("\nSELECT").expect("x")], true));
        let text = "exit; SELECT 1";
        assert_eq!(first_block(text), ("exit", true));
        let text = "plan add-table -name t -wait\n   \n";
        assert_eq!(first_block(text), ("plan add-table -name t -wait", true));
    }

    #[test]
    fn comments_hold_quotes_and_semicolons() {
        let text = "## don't stop; here\nexit\nSELECT";
        assert_eq!(first_block(text), ("## don't stop; here\nexit", true));
        let text = "## only a comment\nSELECT";
        assert_eq!(first_block(text), ("## only a comment", false));
        // Flattened: the comment ends before the command, and the command is text.
        let text = "## note table create -name t; SELECT";
        assert_eq!(first_block(text), ("## note table create -name t", true));
    }
}
