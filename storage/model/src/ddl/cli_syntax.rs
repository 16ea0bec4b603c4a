//! The grammar of one admin CLI command, and of the whitespace and `##` comments between commands
//! (see [`super::cli`] for why a comment may end before the end of its line).
//!
//! A command and its arguments sit on one line, separated by spaces or tabs; flags take their
//! value as the next whitespace-free token, as the CLI's own argument splitting does. Flags may
//! come in any order, and a flag that is not repeatable may appear once.

use winnow::ascii::multispace1;
use winnow::combinator::{alt, eof, fail, opt, repeat};
use winnow::error::{ContextError, ErrMode};
use winnow::prelude::*;
use winnow::stream::Stream;
use winnow::token::take_while;

use super::error::ScriptProblem;
use super::lex::{field_type_named, invalid, must, In};
use crate::table::FieldType;

/// One CLI command, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    TableCreate {
        table: String,
    },
    AddField {
        field: String,
        ty: FieldType,
        enum_values: Option<Vec<String>>,
    },
    PrimaryKey {
        fields: Vec<String>,
    },
    ShardKey {
        fields: Vec<String>,
    },
    Exit,
    /// `if_not_exists`: ringstore's `-if-not-exists` switch (the admin CLI has no IF NOT EXISTS),
    /// so a script can be run again.
    PlanAddTable {
        table: String,
        if_not_exists: bool,
    },
    /// `plan add-index -name idx -table t -field f1 -field f2 [-wait] [-if-not-exists]`.
    PlanAddIndex {
        index: String,
        table: String,
        fields: Vec<String>,
        if_not_exists: bool,
        /// `-wait`: the client waits until the index is READY.
        wait: bool,
    },
    /// `plan remove-index -name idx -table t [-wait]`.
    PlanRemoveIndex {
        index: String,
        table: String,
    },
}

impl Command {
    /// The command's words, for messages.
    pub fn word(&self) -> &'static str {
        match self {
            Command::TableCreate { .. } => "table create",
            Command::AddField { .. } => "add-field",
            Command::PrimaryKey { .. } => "primary-key",
            Command::ShardKey { .. } => "shard-key",
            Command::Exit => "exit",
            Command::PlanAddTable { .. } => "plan add-table",
            Command::PlanAddIndex { .. } => "plan add-index",
            Command::PlanRemoveIndex { .. } => "plan remove-index",
        }
    }
}

pub(crate) fn command(i: &mut In<'_>) -> ModalResult<Command> {
    alt((table_create, add_field, key_command, exit, plan)).parse_next(i)
}

fn table_create(i: &mut In<'_>) -> ModalResult<Command> {
    word("table").parse_next(i)?;
    must((hspace, word("create")), "create after table").parse_next(i)?;
    let args = args(i, &[NAME], "-name")?;
    Ok(Command::TableCreate { table: required_word(i, &args, "-name", "-name and a table name")? })
}

fn add_field(i: &mut In<'_>) -> ModalResult<Command> {
    word("add-field").parse_next(i)?;
    let args = args(i, &[TYPE, NAME, ENUM_VALUES], "-type, -name or -enum-values")?;
    let Some(Arg::Type(ty)) = find(&args, "-type") else {
        return must(fail, "-type and a field type").parse_next(i);
    };
    let field = required_word(i, &args, "-name", "-name and a field name")?;
    let enum_values = match find(&args, "-enum-values") {
        Some(Arg::List(values)) => Some(values.clone()),
        _ => None,
    };
    Ok(Command::AddField { field, ty: ty.clone(), enum_values })
}

/// `primary-key` or `shard-key`: one or more `-field f`, in key order.
fn key_command(i: &mut In<'_>) -> ModalResult<Command> {
    let shard =
        alt((word("primary-key").value(false), word("shard-key").value(true))).parse_next(i)?;
    let args = args(i, &[FIELD], "-field")?;
    let fields: Vec<String> = args.iter().map(|(_, a)| a.text().to_owned()).collect();
    if fields.is_empty() {
        return must(fail, "-field and a key field name").parse_next(i);
    }
    Ok(if shard { Command::ShardKey { fields } } else { Command::PrimaryKey { fields } })
}

fn exit(i: &mut In<'_>) -> ModalResult<Command> {
    word("exit").map(|()| Command::Exit).parse_next(i)
}

/// `plan` and what it plans: `add-table`, `add-index` or `remove-index`.
fn plan(i: &mut In<'_>) -> ModalResult<Command> {
    word("plan").parse_next(i)?;
    let what = alt((
        word("add-table").value(0),
        word("add-index").value(1),
        word("remove-index").value(2),
    ));
    match must((hspace, what), "add-table, add-index or remove-index after plan").parse_next(i)?.1 {
        0 => plan_add_table(i),
        1 => plan_add_index(i),
        _ => plan_remove_index(i),
    }
}

fn plan_add_index(i: &mut In<'_>) -> ModalResult<Command> {
    let flags = [NAME, TABLE, FIELD, WAIT, IF_NOT_EXISTS];
    let args = args(i, &flags, "-name, -table, -field, -wait or -if-not-exists")?;
    let index = required_word(i, &args, "-name", "-name and an index name")?;
    let table = required_word(i, &args, "-table", "-table and a table name")?;
    let fields: Vec<String> =
        args.iter().filter(|(f, _)| *f == FIELD.name).map(|(_, a)| a.text().to_owned()).collect();
    if fields.is_empty() {
        return must(fail, "-field and an indexed field name").parse_next(i);
    }
    let if_not_exists = find(&args, IF_NOT_EXISTS.name).is_some();
    let wait = find(&args, WAIT.name).is_some();
    Ok(Command::PlanAddIndex { index, table, fields, if_not_exists, wait })
}

fn plan_remove_index(i: &mut In<'_>) -> ModalResult<Command> {
    let args = args(i, &[NAME, TABLE, WAIT], "-name, -table or -wait")?;
    let index = required_word(i, &args, "-name", "-name and an index name")?;
    let table = required_word(i, &args, "-table", "-table and a table name")?;
    Ok(Command::PlanRemoveIndex { index, table })
}

fn plan_add_table(i: &mut In<'_>) -> ModalResult<Command> {
    let args = args(i, &[NAME, WAIT, IF_NOT_EXISTS], "-name, -wait or -if-not-exists")?;
    let table = required_word(i, &args, "-name", "-name and a table name")?;
    Ok(Command::PlanAddTable { table, if_not_exists: find(&args, IF_NOT_EXISTS.name).is_some() })
}

/// A flag a command accepts, and how its value is read.
#[derive(Debug, Clone, Copy)]
struct Flag {
    name: &'static str,
    value: ValueKind,
    repeatable: bool,
}

#[derive(Debug, Clone, Copy)]
enum ValueKind {
    Switch,
    Word,
    Type,
    List,
}

const NAME: Flag = Flag { name: "-name", value: ValueKind::Word, repeatable: false };
const TABLE: Flag = Flag { name: "-table", value: ValueKind::Word, repeatable: false };
const TYPE: Flag = Flag { name: "-type", value: ValueKind::Type, repeatable: false };
const ENUM_VALUES: Flag = Flag { name: "-enum-values", value: ValueKind::List, repeatable: false };
const FIELD: Flag = Flag { name: "-field", value: ValueKind::Word, repeatable: true };
const WAIT: Flag = Flag { name: "-wait", value: ValueKind::Switch, repeatable: false };
/// ringstore's own switch: adding a table that exists is then no error (SQL's IF NOT EXISTS).
const IF_NOT_EXISTS: Flag =
    Flag { name: "-if-not-exists", value: ValueKind::Switch, repeatable: false };

/// A flag's value.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Arg<'a> {
    Switch,
    Word(&'a str),
    Type(FieldType),
    List(Vec<String>),
}

impl Arg<'_> {
    fn text(&self) -> &str {
        match self {
            Arg::Word(w) => w,
            _ => "",
        }
    }
}

type Args<'a> = Vec<(&'static str, Arg<'a>)>;

/// The flags after a command word, up to the first token that is not a flag (the next command, a
/// comment, or the end of the line). A token that looks like a flag but is not one of `flags` is
/// an error rather than the start of the next command.
fn args<'a>(i: &mut In<'a>, flags: &[Flag], expected: &'static str) -> ModalResult<Args<'a>> {
    let mut seen: Args<'a> = Vec::new();
    loop {
        let start = i.checkpoint();
        if opt(hspace).parse_next(i)?.is_none() || !i.starts_with('-') {
            i.reset(&start);
            return Ok(seen);
        }
        let flag_start = i.checkpoint();
        let known = |t: &str| flags.iter().find(|f| f.name == t).copied();
        let flag = must(token.verify_map(known), expected).parse_next(i)?;
        if !flag.repeatable && find(&seen, flag.name).is_some() {
            i.reset(&flag_start);
            return invalid(i, ScriptProblem::Repeated { what: flag.name });
        }
        seen.push((flag.name, value(i, flag.value)?));
    }
}

fn value<'a>(i: &mut In<'a>, kind: ValueKind) -> ModalResult<Arg<'a>> {
    if matches!(kind, ValueKind::Switch) {
        return Ok(Arg::Switch);
    }
    must(hspace, "a value after the flag").parse_next(i)?;
    match kind {
        ValueKind::Switch => Ok(Arg::Switch),
        ValueKind::Word => must(token, "a name").map(Arg::Word).parse_next(i),
        ValueKind::Type => {
            must(token.verify_map(field_type_named), TYPE_EXPECTED).map(Arg::Type).parse_next(i)
        }
        ValueKind::List => enum_list(i),
    }
}

const TYPE_EXPECTED: &str =
    "a field type: INTEGER, LONG, FLOAT, DOUBLE, STRING, BINARY, BOOLEAN, TIMESTAMP or ENUM";

/// `a,b,c`: ENUM values separated by commas, without spaces.
fn enum_list<'a>(i: &mut In<'a>) -> ModalResult<Arg<'a>> {
    let item = take_while(1.., |c: char| !c.is_whitespace() && c != ',');
    let mut values = Vec::new();
    let mut item = must(item, "an ENUM value");
    loop {
        values.push(item.parse_next(i)?.to_owned());
        if opt(',').parse_next(i)?.is_none() {
            return Ok(Arg::List(values));
        }
    }
}

fn find<'a, 'b>(args: &'b Args<'a>, flag: &str) -> Option<&'b Arg<'a>> {
    args.iter().find(|(name, _)| *name == flag).map(|(_, arg)| arg)
}

/// The value of a required word flag, or an error at the end of the command naming it.
fn required_word(
    i: &mut In<'_>,
    args: &Args<'_>,
    flag: &str,
    expected: &'static str,
) -> ModalResult<String> {
    match find(args, flag) {
        Some(arg) => Ok(arg.text().to_owned()),
        None => must(fail, expected).parse_next(i),
    }
}

/// A whitespace-free token.
fn token<'a>(i: &mut In<'a>) -> ModalResult<&'a str> {
    take_while(1.., |c: char| !c.is_whitespace()).parse_next(i)
}

/// A command word: a whole token equal to `word`, case-sensitive as in the CLI.
fn word<'a>(word: &'static str) -> impl Parser<In<'a>, (), ErrMode<ContextError>> {
    move |i: &mut In<'a>| token.verify(|t: &str| t == word).void().parse_next(i)
}

/// Spaces and tabs; `\r` counts too, so CRLF line ends work.
fn hspace<'a>(i: &mut In<'a>) -> ModalResult<&'a str> {
    take_while(1.., [' ', '\t', '\r']).parse_next(i)
}

/// Whitespace and comments between commands.
pub(crate) fn gap(i: &mut In<'_>) -> ModalResult<()> {
    repeat(0.., alt((multispace1.void(), comment))).parse_next(i)
}

/// `##` up to the end of the line, or up to a command start at a word boundary.
fn comment(i: &mut In<'_>) -> ModalResult<()> {
    "##".parse_next(i)?;
    let mut at_boundary = true;
    loop {
        if at_boundary && starts_command(i) {
            return Ok(());
        }
        let Some(c) = i.chars().next() else { return Ok(()) };
        if c == '\n' {
            return Ok(());
        }
        *i = &i[c.len_utf8()..];
        at_boundary = c.is_whitespace();
    }
}

/// Whether `text` starts with a command start: a command word and what must follow it.
pub(crate) fn starts_command(text: &str) -> bool {
    let after_exit =
        alt(((opt(hspace), alt(("##".void(), eof.void()))).void(), (hspace, command_start).void()));
    alt((command_start, ("exit", after_exit).void())).parse_peek(text).is_ok()
}

/// The start of any command but `exit`, which needs a different follow-up.
fn command_start(i: &mut In<'_>) -> ModalResult<()> {
    alt((
        ("table", hspace, "create", hspace, "-name").void(),
        ("add-field", hspace, "-").void(),
        ("primary-key", hspace, "-field").void(),
        ("shard-key", hspace, "-field").void(),
        ("plan", hspace, alt(("add-table", "add-index", "remove-index"))).void(),
    ))
    .parse_next(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_starts_need_their_follow_up() {
        assert!(starts_command("table create -name t"));
        assert!(!starts_command("table creation mode"));
        assert!(starts_command("exit ## next"));
        assert!(starts_command("exit"));
        assert!(starts_command("exit plan add-table -name t"));
        assert!(!starts_command("exit table creation mode"));
        assert!(!starts_command("exit\n"));
        assert!(!starts_command("add the fields"));
        assert!(!starts_command("plan to complete"));
        assert!(starts_command("plan add-index -name i"));
        assert!(starts_command("plan remove-index -name i"));
    }

    #[test]
    fn comments_end_at_a_command_or_the_line_end() {
        let mut i = "## Enter into table creation mode table create -name t";
        comment(&mut i).expect("a comment");
        assert_eq!(i, "table create -name t");
        let mut i = "## then exit\nexit";
        comment(&mut i).expect("a comment");
        assert_eq!(i, "\nexit");
    }

    #[test]
    fn add_field_reads_flags_in_any_order() {
        let (rest, c) =
            command.parse_peek("add-field -name c -type enum -enum-values a,b x").expect("ok");
        let enum_values = Some(vec!["a".to_owned(), "b".to_owned()]);
        let ty = FieldType::Enum(Vec::new());
        assert_eq!(c, Command::AddField { field: "c".into(), ty, enum_values });
        assert_eq!(rest, " x");
    }
}
