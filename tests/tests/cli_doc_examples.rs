//! docs/CLI.md's examples, run verbatim: every fenced block tagged `cli-example` (or
//! `cli-example json` for `--format json`) is a session at the prompt. A line starting with
//! `ringstore> ` starts a statement, a line starting with the continuation prompt `        -> `
//! goes on with it, and the lines after it are what it prints (results on stdout, an
//! `ERROR ...` line on stderr). The blocks run in document order against one fresh node, each
//! statement as its own `ringstore-cli -e`, and each output must match the document.
//!
//! What can not be the same twice is compared by shape: a number of 13 digits or more that the
//! document's statements did not write themselves (a row token, a version or the clock the node
//! chose, `now = ... ms`) may differ from the document's but must have as many digits, so the
//! tables stay aligned, and the same number in the document must stand for the same number in
//! the output. A later statement that uses such a number (`IF VERSION 115...`) is run with the
//! number the node printed. UTC timestamps (`2025-11-25T04:00:00.000Z`) are compared by shape.

mod cli_common;

use std::collections::HashMap;

use cli_common::{cli, fresh_node};
use ringstore_cli::interactive::{PROMPT, PROMPT_MORE};

/// Shortest run of digits treated as a token, a version or a clock reading.
const LONG_NUMBER_DIGITS: usize = 13;

/// One statement of an example and what it prints.
#[derive(Debug)]
struct Step {
    /// The block's first line, for messages.
    block: usize,
    json: bool,
    statement: String,
    expected: String,
}

/// Every statement of every `cli-example` block of `doc`, in order.
fn examples(doc: &str) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut block: Option<(usize, bool)> = None;
    for (number, line) in doc.lines().enumerate() {
        match block {
            None => {
                if let Some(tag) = line.strip_prefix("```cli-example") {
                    block = Some((number + 1, tag.trim() == "json"));
                }
            }
            Some(_) if line.starts_with("```") => block = None,
            Some((first, json)) => {
                if let Some(statement) = line.strip_prefix(PROMPT) {
                    let step = Step {
                        block: first,
                        json,
                        statement: statement.into(),
                        expected: String::new(),
                    };
                    steps.push(step);
                    continue;
                }
                let step = steps.last_mut().expect("a block starts with a prompt line");
                match line.strip_prefix(PROMPT_MORE) {
                    Some(more) if step.expected.is_empty() => {
                        step.statement.push('\n');
                        step.statement.push_str(more);
                    }
                    _ => {
                        step.expected.push_str(line);
                        step.expected.push('\n');
                    }
                }
            }
        }
    }
    steps
}

/// The text split into runs of ASCII digits and runs of anything else, timestamps masked.
fn runs(text: &str) -> Vec<(bool, String)> {
    let masked = mask_timestamps(text);
    let mut out: Vec<(bool, String)> = Vec::new();
    for c in masked.chars() {
        let digit = c.is_ascii_digit();
        match out.last_mut() {
            Some((d, run)) if *d == digit => run.push(c),
            _ => out.push((digit, c.to_string())),
        }
    }
    out
}

/// `2025-11-25T04:00:00.000Z` -> `####-##-##T##:##:##.###Z`.
fn mask_timestamps(text: &str) -> String {
    let shape = b"dddd-dd-ddTdd:dd:dd.dddZ";
    let mut bytes = text.as_bytes().to_vec();
    let mut i = 0;
    while i + shape.len() <= bytes.len() {
        let fits = shape.iter().zip(&bytes[i..]).all(|(s, b)| match s {
            b'd' => b.is_ascii_digit(),
            s => s == b,
        });
        if fits {
            for (s, b) in shape.iter().zip(&mut bytes[i..]) {
                if *s == b'd' {
                    *b = b'#';
                }
            }
            i += shape.len();
        } else {
            i += 1;
        }
    }
    String::from_utf8(bytes).expect("only ASCII digits were replaced")
}

/// Whether `actual` is `expected` up to long numbers, which `known` maps from the document's
/// to the output's (and learns).
fn matches(expected: &str, actual: &str, known: &mut HashMap<String, String>) -> bool {
    let (expected, actual) = (runs(expected), runs(actual));
    if expected.len() != actual.len() {
        return false;
    }
    let mut learnt = Vec::new();
    for ((digits, e), (_, a)) in expected.iter().zip(&actual) {
        let long = *digits && e.len() >= LONG_NUMBER_DIGITS;
        let same = match known.get(e) {
            Some(mapped) if long => mapped == a,
            None if long => {
                learnt.push((e.clone(), a.clone()));
                a.len() == e.len()
            }
            _ => e == a,
        };
        if !same {
            return false;
        }
    }
    known.extend(learnt);
    true
}

/// The statement with the document's long numbers replaced by the output's; numbers seen for the
/// first time are the statement's own (a version it writes) and stand for themselves.
fn with_known_numbers(statement: &str, known: &mut HashMap<String, String>) -> String {
    runs(statement)
        .into_iter()
        .map(|(digits, run)| {
            if digits && run.len() >= LONG_NUMBER_DIGITS {
                known.entry(run.clone()).or_insert_with(|| run.clone()).clone()
            } else {
                run
            }
        })
        .collect()
}

#[test]
fn the_matching_ignores_only_what_varies() {
    let mut known = HashMap::new();
    assert!(matches("token 1234567890123 (id 1)", "token 9999999999999 (id 1)", &mut known));
    assert!(!matches("(id 1)", "(id 2)", &mut known), "short numbers are exact");
    assert!(!matches("token 1234567890123", "token 1111111111111", &mut known), "mapped once");
    assert!(!matches("x 22222222222222", "x 3333333333333", &mut known), "as many digits");
    assert_eq!(
        with_known_numbers("IF VERSION 1234567890123", &mut known),
        "IF VERSION 9999999999999"
    );
    assert_eq!(
        with_known_numbers("USING VERSION 5555555555555", &mut known),
        "USING VERSION 5555555555555"
    );
    assert!(matches("at 2025-11-25T04:00:00.000Z", "at 2031-01-02T03:04:05.678Z", &mut known));
    assert!(!matches("at 2025-11-25T04:00:00.000Z", "at 2031-01-02 03:04:05", &mut known));
    let steps = examples(
        "text\n```cli-example json\nringstore> SELECT *\n        -> FROM t;\n[]\n```\n```sql\nx\n```\n",
    );
    assert_eq!(steps.len(), 1);
    assert_eq!((steps[0].block, steps[0].json), (2, true));
    assert_eq!(
        (steps[0].statement.as_str(), steps[0].expected.as_str()),
        ("SELECT *\nFROM t;", "[]\n")
    );
}

/// Every `cli-example` of docs/CLI.md prints what the document says.
#[test]
fn cli_md_examples_run_verbatim() {
    let doc = include_str!("../../docs/CLI.md");
    let steps = examples(doc);
    assert!(steps.len() >= 40, "the examples were not found: {steps:#?}");
    let (_dir, node) = fresh_node();
    let addr = node.addr();
    let mut known = HashMap::new();
    for step in &steps {
        let statement = with_known_numbers(&step.statement, &mut known);
        let format = if step.json { "json" } else { "table" };
        let run = cli(addr, &["--format", format, "-e", &statement]);
        let printed = format!("{}{}", run.stdout, run.stderr);
        assert!(
            matches(&step.expected, &printed, &mut known),
            "docs/CLI.md, the example at line {}: {statement}\n--- the document says:\n{}--- the CLI printed:\n{printed}",
            step.block,
            step.expected
        );
        assert_eq!(run.stderr.is_empty(), run.status == Some(0), "{run:#?}");
    }
    assert!(node.terminate().success());
}
