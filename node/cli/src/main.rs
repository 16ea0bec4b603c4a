//! `ringstore-cli`: the SQL-style client of a ringstore node. It runs the statements of `-e`, of
//! `-f FILE`, or of standard input (a script when stdin is not a terminal, else an interactive
//! prompt). See docs/CLI.md; the work is in `ringstore_cli::run`.
//!
//! Exit status: 0 when every statement succeeded, 1 when one failed, 2 for a usage error or when
//! the node could not be reached, 3 when the node did not answer within `--timeout`.

use std::io::{self, IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use ringstore_cli::connect::{self, Timeout, TIMEOUT_DEFAULT};
use ringstore_cli::interactive;
use ringstore_cli::limits::SCRIPT_BYTES_MAX;
use ringstore_cli::run::PAGE_ROWS_DEFAULT;
use ringstore_cli::{CliError, Format, Session};
use ringstore_model::constants::SCAN_LIMIT_MAX;

/// What `--help` says after the flags.
const AFTER_HELP: &str = "\
Modes:
  -e STATEMENTS, -f FILE   run a script and exit; the first error stops it
  stdin not a terminal     read stdin whole as a script (ringstore-cli --addr A < setup.sql)
  stdin a terminal         interactive mode: a `ringstore>` prompt that runs each statement once
                           it is complete (at its `;`), prints errors and goes on; `exit`, `quit`
                           or Ctrl-D leaves. Line editing with arrow keys, Tab completes keywords,
                           tables and fields, Up/Down and Ctrl-R recall lines from the history
                           file (--history, --no-history)

Exit status: 0 every statement succeeded; 1 a statement failed; 2 usage error or the node could
not be reached (805); 3 the node did not answer within --timeout (807).
The statements, the output formats and the error codes are in docs/CLI.md.";

#[derive(Debug, Parser)]
#[command(
    name = "ringstore-cli",
    version,
    about = "Run SQL-style statements on a ringstore node, from a script or at an interactive \
             prompt",
    after_help = AFTER_HELP
)]
struct Args {
    /// The node's shared port.
    #[arg(long, value_name = "HOST:PORT")]
    addr: String,
    /// Run these statements and exit (stops at the first error).
    #[arg(
        short = 'e',
        long = "execute",
        value_name = "STATEMENTS",
        conflicts_with = "file",
        allow_hyphen_values = true
    )]
    execute: Option<String>,
    /// Run the statements of this file and exit (stops at the first error); `-` is stdin.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: Option<PathBuf>,
    /// How results are printed: an aligned table, or one JSON value per line.
    #[arg(long, value_name = "table|json", default_value = "table")]
    format: Format,
    /// Rows asked for per multiGet or scan page (a DELETE is one atomic multiDelete whatever
    /// the row count).
    #[arg(long, value_name = "ROWS", default_value_t = PAGE_ROWS_DEFAULT,
          value_parser = clap::value_parser!(u32).range(1..=SCAN_LIMIT_MAX as i64))]
    page_rows: u32,
    /// Seconds to wait for the connection and for each response before giving up with 807
    /// (exit status 3); a decimal number, 0 waits forever.
    #[arg(long, value_name = "SECONDS", default_value_t = TIMEOUT_DEFAULT)]
    timeout: Timeout,
    /// Interactive mode: keep the history in FILE (default: $RINGSTORE_CLI_HISTORY, else
    /// ~/.ringstore_cli_history; RINGSTORE_CLI_HISTORY set but empty keeps none).
    #[arg(long, value_name = "FILE", conflicts_with = "no_history")]
    history: Option<PathBuf>,
    /// Interactive mode: keep no history file.
    #[arg(long)]
    no_history: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let format = args.format;
    // The script is read before connecting: a file that can not be read is a usage error.
    let script = match (&args.execute, &args.file) {
        (Some(text), _) => Ok(Some(text.clone())),
        (None, Some(path)) => read_file(path).map(Some),
        (None, None) if !io::stdin().is_terminal() => read_all(io::stdin().lock()).map(Some),
        (None, None) => Ok(None),
    };
    let script = match script {
        Ok(script) => script,
        Err(message) => {
            eprintln!("ringstore-cli: {message}");
            return ExitCode::from(2);
        }
    };
    let timeout = args.timeout.as_option();
    let mut session = match connect::connect(&args.addr, timeout) {
        Ok(client) => {
            Session::new(client, format).with_page_rows(args.page_rows).with_timeout(timeout)
        }
        Err(e) => return report(format, &e),
    };
    match script {
        Some(text) => run_text(&mut session, &text),
        None => {
            let history = interactive::history_from_env(args.history.as_deref(), args.no_history);
            ExitCode::from(interactive::run(session, &args.addr, history))
        }
    }
}

/// Prints `e` on stderr and gives its exit status.
fn report(format: Format, e: &CliError) -> ExitCode {
    eprint!("{}", e.line(format));
    ExitCode::from(e.exit_status())
}

/// Runs a script; prints the first error.
fn run_text(session: &mut Session, text: &str) -> ExitCode {
    let result = session.run_script(text, &mut io::stdout().lock());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => report(session.format(), &e),
    }
}

fn read_file(path: &Path) -> Result<String, String> {
    if path.as_os_str() == "-" {
        return read_all(io::stdin().lock());
    }
    let file =
        std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    read_all(file).map_err(|e| format!("{}: {e}", path.display()))
}

/// All of `input` as UTF-8 text, reading at most one byte over the script limit (the parser
/// then refuses it with its limit error).
fn read_all(input: impl Read) -> Result<String, String> {
    let mut text = String::new();
    input
        .take(SCRIPT_BYTES_MAX as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the script: {e}"))?;
    Ok(text)
}
