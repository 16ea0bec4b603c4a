//! The interactive prompt (standard input a terminal), on the rustyline line editor: arrow-key
//! editing, a history kept in a file (Up/Down, Ctrl-R to search it) and Tab completion of
//! keywords, tables and fields ([`super::complete`], names asked of the connected node).
//!
//! Statements run as soon as they are complete ([`run::input_state`]); an error is printed and
//! the prompt goes on; `exit`, `quit` or Ctrl-D leaves, Ctrl-C drops the statement being typed.
//! Each line typed goes into the history (not blank ones, not a repeat of the one before, not one
//! that starts with a space) and is appended to the history file at once.

use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use rustyline::completion::Completer;
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use super::complete::{self, NameSource};
use super::run::{self, InputState, EXIT_USAGE_OR_CONNECTION};
use super::Session;

/// The history file's name in the user's home directory unless told otherwise.
pub const HISTORY_FILE_NAME: &str = ".ringstore_cli_history";
/// The environment variable that names another history file; set but empty, no history is kept.
pub const HISTORY_ENV: &str = "RINGSTORE_CLI_HISTORY";
/// Most lines the history keeps (in memory and in its file).
pub const HISTORY_LINES_MAX: usize = 1000;

/// The first-line and continuation prompts.
pub const PROMPT: &str = "ringstore> ";
pub const PROMPT_MORE: &str = "        -> ";

/// The history file: `--history FILE`, else `$RINGSTORE_CLI_HISTORY` (empty: none), else
/// `$HOME/.ringstore_cli_history`; None with `--no-history` or without a home directory.
pub fn history_path(
    flag: Option<&Path>,
    disabled: bool,
    env: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    if disabled {
        return None;
    }
    if let Some(path) = flag {
        return Some(path.to_owned());
    }
    match env {
        Some(path) if path.is_empty() => None,
        Some(path) => Some(PathBuf::from(path)),
        None => home.filter(|h| !h.is_empty()).map(|h| PathBuf::from(h).join(HISTORY_FILE_NAME)),
    }
}

/// Where the process's history file is, from its flags and environment.
pub fn history_from_env(flag: Option<&Path>, disabled: bool) -> Option<PathBuf> {
    history_path(flag, disabled, std::env::var_os(HISTORY_ENV), std::env::var_os("HOME"))
}

/// What the line editor's helper shares with the loop: the session (borrowed by completion
/// between statements only) and the lines of the statement typed so far.
struct Shared {
    session: RefCell<Session>,
    pending: RefCell<String>,
}

impl NameSource for Session {
    fn tables(&mut self) -> Vec<String> {
        self.table_names().unwrap_or_default()
    }

    fn fields(&mut self, table: &str) -> Vec<String> {
        self.field_names(table).unwrap_or_default()
    }
}

/// The line editor's helper: completion only (no hints, highlighting or validation).
struct CliHelper(Rc<Shared>);

impl Completer for CliHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        let pending = self.0.pending.borrow();
        let Ok(mut session) = self.0.session.try_borrow_mut() else {
            return Ok((pos, Vec::new()));
        };
        Ok(complete::complete(&pending, line, pos, &mut *session))
    }
}

impl Hinter for CliHelper {
    type Hint = String;
}
impl Highlighter for CliHelper {}
impl Validator for CliHelper {}
impl Helper for CliHelper {}

/// Runs the prompt until `exit`, `quit` or the end of input; gives the exit status, the worst
/// one of the statements run.
pub fn run(session: Session, addr: &str, history: Option<PathBuf>) -> u8 {
    let shared = Rc::new(Shared { session: RefCell::new(session), pending: RefCell::default() });
    let mut editor = match editor(&shared) {
        Ok(editor) => editor,
        Err(e) => {
            eprintln!("ringstore-cli: cannot start the line editor: {e}");
            return EXIT_USAGE_OR_CONNECTION;
        }
    };
    let mut history = History::open(&mut editor, history);
    let shards = shared.session.borrow_mut().client().topology().shards();
    eprintln!(
        "ringstore-cli: connected to {addr} ({shards} shards). End statements with ';'; 'exit' or \
         'quit' leaves. Tab completes; {}.",
        history.describe()
    );
    let mut status = 0u8;
    loop {
        let prompt = if shared.pending.borrow().trim().is_empty() { PROMPT } else { PROMPT_MORE };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                shared.pending.borrow_mut().clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                eprintln!("ringstore-cli: cannot read the input: {e}");
                return EXIT_USAGE_OR_CONNECTION;
            }
        };
        history.add(&mut editor, &line);
        if shared.pending.borrow().trim().is_empty() && run::is_exit(&line) {
            break;
        }
        status = status.max(feed(&shared, &line));
    }
    let left = std::mem::take(&mut *shared.pending.borrow_mut());
    if run::input_state(&left) != InputState::Empty {
        status = status.max(run_one(&mut shared.session.borrow_mut(), &left));
    }
    status
}

fn editor(shared: &Rc<Shared>) -> rustyline::Result<Editor<CliHelper, DefaultHistory>> {
    let config = Config::builder()
        .max_history_size(HISTORY_LINES_MAX)?
        .history_ignore_dups(true)?
        .history_ignore_space(true)
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .build();
    let mut editor = Editor::with_config(config)?;
    editor.set_helper(Some(CliHelper(shared.clone())));
    Ok(editor)
}

/// The history file, while it can be read and written.
struct History {
    path: Option<PathBuf>,
}

impl History {
    /// Loads `path` into the editor, if there is one; a file that does not exist yet is an
    /// empty history, one that can not be read is reported and not written either.
    fn open(editor: &mut Editor<CliHelper, DefaultHistory>, path: Option<PathBuf>) -> History {
        let Some(path) = path else { return History { path: None } };
        match editor.load_history(&path) {
            Ok(()) => History { path: Some(path) },
            Err(ReadlineError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                History { path: Some(path) }
            }
            Err(e) => {
                eprintln!(
                    "ringstore-cli: cannot read the history file {}: {e}; no history is kept",
                    path.display()
                );
                History { path: None }
            }
        }
    }

    fn describe(&self) -> String {
        match &self.path {
            Some(path) => format!("history in {}", path.display()),
            None => "no history file".to_owned(),
        }
    }

    /// Adds `line` to the history and appends it to the file; a file that can not be written
    /// is reported once and then left alone.
    fn add(&mut self, editor: &mut Editor<CliHelper, DefaultHistory>, line: &str) {
        if line.trim().is_empty() || !editor.add_history_entry(line).unwrap_or(false) {
            return;
        }
        let Some(path) = &self.path else { return };
        if let Err(e) = editor.append_history(path) {
            eprintln!(
                "ringstore-cli: cannot write the history file {}: {e}; history is no longer saved",
                path.display()
            );
            self.path = None;
        }
    }
}

/// Adds one line to the open statement and runs it once it is complete; gives the exit status
/// of what ran (0 if nothing did).
fn feed(shared: &Shared, line: &str) -> u8 {
    let text = {
        let mut pending = shared.pending.borrow_mut();
        pending.push_str(line);
        pending.push('\n');
        match run::input_state(&pending) {
            InputState::Empty => {
                pending.clear();
                return 0;
            }
            InputState::Incomplete => return 0,
            InputState::Complete => std::mem::take(&mut *pending),
        }
    };
    run_one(&mut shared.session.borrow_mut(), &text)
}

/// Runs one interactive input; prints its error, if any, and gives its exit status.
fn run_one(session: &mut Session, text: &str) -> u8 {
    let result = session.run_script(text, &mut io::stdout().lock());
    let _ = io::stdout().flush();
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprint!("{}", e.line(session.format()));
            e.exit_status()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_file_is_chosen_by_flag_env_then_home() {
        let some = |s: &str| Some(OsString::from(s));
        let home = || some("/home/u");
        assert_eq!(
            history_path(None, false, None, home()),
            Some(PathBuf::from("/home/u/.ringstore_cli_history"))
        );
        assert_eq!(history_path(None, false, some("/tmp/h"), home()), Some("/tmp/h".into()));
        assert_eq!(history_path(None, false, some(""), home()), None, "empty: no history");
        let flag = Path::new("/x/h");
        assert_eq!(history_path(Some(flag), false, some("/tmp/h"), home()), Some(flag.into()));
        assert_eq!(history_path(Some(flag), true, None, home()), None, "--no-history wins");
        assert_eq!(history_path(None, false, None, None), None, "no home, no file");
        assert_eq!(history_path(None, false, None, some("")), None);
    }
}
