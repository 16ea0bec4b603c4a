//! `ringstore-cli`'s interactive prompt under a real terminal: tmux runs it, `send-keys` types
//! and `capture-pane` reads the screen, polled until the expected text appears or a deadline
//! passes. It proves Tab completion of statement keywords, table names (SHOW TABLES) and field
//! names (DESCRIBE), arrow-key editing, Up and Ctrl-R recalling lines from the history, the
//! history file in the user's home kept across sessions (and none when RINGSTORE_CLI_HISTORY is
//! set but empty), that an error or a timeout (a stopped node: 807) lets the prompt go on, and
//! the exit status, the worst one seen; and that a batch typed over several lines runs only at
//! its `APPLY BATCH;`.
//!
//! tmux must be installed (.ci/run installs it); the test installs nothing.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use ringstore_tests::{bin, Node};

/// The shell script the pane runs: the command (`"$@"`), then its exit status, then `cat` to
/// keep the pane open until the server is killed.
const EXIT_REPORTER: &str = "\"$@\"; echo \"[ringstore-cli exited with status $?]\"; exec cat";
/// What [`EXIT_REPORTER`] prints before the status.
const EXITED: &str = "[ringstore-cli exited with status ";
/// The prompt as the last screen line shows it (trailing space trimmed).
const PROMPT: &str = "ringstore>";
/// Longest wait for one expected screen (the prompt, a result, the pane exiting).
const SCREEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause between two captures of the pane while waiting for a screen.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// The CLI's `--timeout` in this test: a stopped node is noticed this fast, and a node under
/// load on a small machine still answers well within it.
const CLI_TIMEOUT_SECONDS: &str = "3";

/// A tmux server of our own (its own socket, no configuration) running one CLI in one pane.
struct Terminal {
    socket: PathBuf,
}

impl Terminal {
    /// Starts `command` (with `env`, and without RINGSTORE_CLI_HISTORY unless `env` sets it) in a
    /// 160x50 pane, under a shell that prints its exit status when it exits and then keeps the
    /// pane open (the shell reaps the CLI itself: tmux 3.3a was seen leaving an exited pane
    /// process a zombie, never marking the pane dead).
    /// Each terminal has a server and socket of its own (`number`), so a new one never meets a
    /// server that is still going away.
    fn start(dir: &Path, number: usize, env: &[(&str, &str)], command: &[&str]) -> Terminal {
        let socket = dir.join(format!("tmux-{number}.sock"));
        let terminal = Terminal { socket };
        let mut args: Vec<String> = ["-f", "/dev/null", "new-session", "-d", "-s", "cli"]
            .into_iter()
            .chain(["-x", "160", "-y", "50", "sh", "-c", EXIT_REPORTER, "sh"])
            .chain(["env", "-u", "RINGSTORE_CLI_HISTORY"])
            .map(str::to_owned)
            .collect();
        args.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        args.extend(command.iter().map(|s| (*s).to_owned()));
        let out = terminal.tmux(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "tmux new-session: {out:?}");
        terminal
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("run tmux: it must be installed (.ci/run installs it: apt-get install tmux)")
    }

    /// Types `text` as it is (as hex bytes, so that tmux reads no `;` or key name in it).
    fn text(&self, text: &str) {
        let hex: Vec<String> = text.bytes().map(|b| format!("{b:02x}")).collect();
        let mut args = vec!["send-keys", "-t", "cli", "-H"];
        args.extend(hex.iter().map(String::as_str));
        assert!(self.tmux(&args).status.success(), "send-keys {text:?}");
    }

    /// Presses named keys: `Enter`, `Tab`, `Up`, `Left`, `BSpace`, `C-r`, `C-u`.
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "cli"];
        args.extend(keys);
        assert!(self.tmux(&args).status.success(), "send-keys {keys:?}");
    }

    /// Types `text` and presses Enter.
    fn line(&self, text: &str) {
        self.text(text);
        self.keys(&["Enter"]);
    }

    /// The pane's text, its scrollback included, wrapped lines joined.
    fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p", "-J", "-S", "-", "-t", "cli"]);
        assert!(out.status.success(), "capture-pane: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Polls the screen until `ready` holds for it; gives that screen. Panics with the last
    /// screen once [`SCREEN_TIMEOUT`] has passed.
    fn wait(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + SCREEN_TIMEOUT;
        loop {
            let screen = self.screen();
            if ready(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "no {what} within {SCREEN_TIMEOUT:?}:\n{screen}");
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// Waits until the screen holds `text` at least `times` times and the prompt is back (the
    /// line editor reads keys again: typing before it would race with its terminal set-up).
    fn wait_count(&self, text: &str, times: usize) -> String {
        self.wait(&format!("{times} x {text:?}, then the prompt"), |s| {
            s.matches(text).count() >= times && last_line(s) == PROMPT
        })
    }

    /// Waits until the screen's last non-empty line is `line`; gives the screen.
    fn wait_last_line(&self, line: &str) -> String {
        self.wait(&format!("last line {line:?}"), |s| last_line(s) == line)
    }

    /// How often `text` is on the screen now.
    fn count(&self, text: &str) -> usize {
        self.screen().matches(text).count()
    }

    /// Waits for the CLI to exit and gives its exit status (as [`EXIT_REPORTER`] prints it).
    fn exit_status(&self) -> i32 {
        let screen = self.wait("the CLI's exit", |s| s.contains(EXITED));
        let at = screen.rfind(EXITED).expect("found") + EXITED.len();
        let status = screen[at..].split(']').next().expect("the status");
        status.parse().unwrap_or_else(|_| panic!("not a status: {status:?}"))
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The last line of `screen` that is not blank, without trailing spaces.
fn last_line(screen: &str) -> &str {
    screen.lines().map(str::trim_end).rfind(|l| !l.is_empty()).unwrap_or("")
}

fn signal(node: &Node, signal: libc::c_int) {
    // SAFETY: kill(2) on the node process this test started and has not reaped.
    let done = unsafe { libc::kill(node.pid() as libc::pid_t, signal) };
    assert_eq!(done, 0, "kill({}, {signal})", node.pid());
}

fn setup(addr: &str) {
    let script = "CREATE TABLE orders (userid STRING, orderid LONG, amount DOUBLE, \
                  PRIMARY KEY (SHARD(userid), orderid));\n\
                  UPSERT INTO orders (userid, orderid, amount) VALUES ('u', 7, 2.5);";
    let out = Command::new(bin("ringstore-cli"))
        .args(["--addr", addr, "-e", script])
        .output()
        .expect("run ringstore-cli");
    assert!(out.status.success(), "{out:?}");
}

#[allow(clippy::too_many_lines, reason = "one terminal session, read top to bottom")]
#[test]
fn the_prompt_edits_completes_and_remembers() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(&dir.path().join("data"), &[]);
    let addr = node.addr().to_string();
    setup(&addr);
    let home = dir.path().join("home");
    std::fs::create_dir(&home).expect("a home directory");
    let cli = bin("ringstore-cli");
    let cli = cli.to_str().expect("UTF-8 path");
    let command = [cli, "--addr", addr.as_str(), "--timeout", CLI_TIMEOUT_SECONDS];
    let home_env = ("HOME", home.to_str().expect("UTF-8 path"));

    let term = Terminal::start(dir.path(), 1, &[home_env], &command);
    let screen = term.wait_last_line(PROMPT);
    let history = home.join(".ringstore_cli_history");
    assert!(screen.contains(&format!("history in {}", history.display())), "{screen}");

    // Tab completes a statement keyword, a table (SHOW TABLES) and a field (DESCRIBE).
    term.text("SEL");
    term.keys(&["Tab"]);
    term.wait_last_line("ringstore> SELECT");
    term.text(" * FROM ord");
    term.keys(&["Tab"]);
    term.wait_last_line("ringstore> SELECT * FROM orders");
    term.text(" WHERE us");
    term.keys(&["Tab"]);
    term.wait_last_line("ringstore> SELECT * FROM orders WHERE userid");
    term.line(" = 'u';");
    let screen = term.wait_count("(1 row)", 1);
    assert!(screen.contains("| u      |       7 |    2.5 |"), "{screen}");

    // A statement over two lines: the continuation prompt, then the result.
    term.line("SELECT orderid");
    term.wait("the continuation prompt", |s| last_line(s).trim_start() == "->");
    term.line("FROM orders WHERE userid = 'u';");
    term.wait_count("(1 row)", 2);

    // Arrow keys edit the line: STATX; -> Left, Backspace, S -> STATS;
    term.text("STATX;");
    term.keys(&["Left", "BSpace"]);
    term.text("S");
    term.wait_last_line("ringstore> STATS;");
    term.keys(&["Enter"]);
    term.wait_count("shards ", 1);

    // Up recalls the last line; Ctrl-R finds an older one.
    term.keys(&["Up"]);
    term.wait_last_line("ringstore> STATS;");
    term.keys(&["Enter"]);
    term.wait_count("shards ", 2);
    term.keys(&["C-r"]);
    term.text("* FROM");
    term.wait_last_line("(reverse-i-search)`* FROM': SELECT * FROM orders WHERE userid = 'u';");
    term.keys(&["Enter"]);
    term.wait_count("(1 row)", 3);

    // An error is printed and the prompt goes on.
    term.line("SELECT * FROM nope;");
    term.wait_count("ERROR 201: ", 1);

    // A node that does not answer: a timeout (807), then the next statement reconnects.
    signal(&node, libc::SIGSTOP);
    let nodes_before = term.count("shards ");
    term.line("STATS;");
    let screen = term.wait_count("ERROR 807: ", 1);
    let waited = format!("no answer from the node within {CLI_TIMEOUT_SECONDS} s (--timeout");
    assert!(screen.contains(&waited), "{screen}");
    signal(&node, libc::SIGCONT);
    term.line("STATS;");
    term.wait_count("shards ", nodes_before + 1);

    term.line("exit");
    assert_eq!(term.exit_status(), 3, "the worst status seen: the timeout's");
    drop(term);
    let saved = std::fs::read_to_string(&history).expect("the history file");
    for line in ["SELECT * FROM orders WHERE userid = 'u';", "SELECT orderid", "STATS;", "exit"] {
        assert!(saved.lines().any(|l| l == line), "{line:?} not in the history:\n{saved}");
    }

    // The next session starts with that history; no error, so status 0.
    let term = Terminal::start(dir.path(), 2, &[home_env], &command);
    term.wait_last_line(PROMPT);
    term.keys(&["Up"]);
    term.wait_last_line("ringstore> exit");
    term.keys(&["C-u"]);
    term.line("quit");
    assert_eq!(term.exit_status(), 0);
    drop(term);

    // RINGSTORE_CLI_HISTORY set but empty: no history file.
    let other_home = dir.path().join("other");
    std::fs::create_dir(&other_home).expect("a home directory");
    let env = [("HOME", other_home.to_str().expect("UTF-8")), ("RINGSTORE_CLI_HISTORY", "")];
    let term = Terminal::start(dir.path(), 3, &env, &command);
    let screen = term.wait_last_line(PROMPT);
    assert!(screen.contains("no history file"), "{screen}");
    term.line("STATS;");
    term.wait_count("shards ", 1);
    term.keys(&["C-d"]);
    assert_eq!(term.exit_status(), 0);
    drop(term);
    assert_eq!(std::fs::read_dir(&other_home).expect("read the home").count(), 0);
    assert!(node.terminate().success());
}

/// A batch typed at the prompt (issue 14): after `BEGIN BATCH;` the prompt waits with `->`
/// until `APPLY BATCH;`, Tab completes the batch words, and the batch then runs as one execute
/// whose outcome is printed per operation.
#[test]
fn a_batch_at_the_prompt_waits_for_apply_batch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(&dir.path().join("data"), &[]);
    let addr = node.addr().to_string();
    setup(&addr);
    let cli = bin("ringstore-cli");
    let cli = cli.to_str().expect("UTF-8 path");
    let command = [cli, "--addr", addr.as_str(), "--no-history"];
    let term = Terminal::start(dir.path(), 1, &[], &command);
    term.wait_last_line(PROMPT);

    term.text("BEGIN BA");
    term.keys(&["Tab"]);
    term.wait_last_line("ringstore> BEGIN BATCH");
    term.line(";");
    let more = |s: &str| last_line(s).trim_start() == "->";
    term.wait("the continuation prompt after BEGIN BATCH", more);
    term.line("UPSERT INTO orders (userid, orderid, amount) VALUES ('u', 8, 1.5);");
    term.wait("the continuation prompt inside the batch", |s| more(s) && s.contains("1.5);"));
    term.line("UPSERT INTO orders (userid, orderid, amount) VALUES ('u', 7, 9) IF ABSENT;");
    term.wait("still the continuation prompt", |s| more(s) && s.contains("IF ABSENT;"));
    assert_eq!(term.count("applied atomically"), 0, "nothing runs before APPLY BATCH");
    term.line("APPLY BATCH;");
    let screen =
        term.wait_count("2 operations applied atomically; the condition failed for operation 2", 1);
    assert!(screen.contains("|  1 |         2 | UPSERT | written "), "{screen}");
    assert!(screen.contains("|  2 |         3 | UPSERT | condition failed "), "{screen}");
    term.line("SELECT orderid, amount FROM orders WHERE userid = 'u';");
    let screen = term.wait_count("(2 rows)", 1);
    assert!(screen.contains("|       8 |    1.5 |"), "{screen}");
    term.line("exit");
    assert_eq!(term.exit_status(), 0);
    drop(term);
    assert!(node.terminate().success());
}
