//! docs/ARCHITECTURE.md's file maps (its code blocks listing each crate's files) must name every
//! source file of the crates, so that a newcomer finds each step of a request in a file the
//! document names, and a file added without a line there fails here.
//!
//! The rule is deliberately simple: a file `CRATE/src/a/b/c.rs` is named if some code block of
//! the document contains the token `c.rs` or `b/c.rs` (a file line) or the token `b/` or `a/` (a
//! line for a whole directory, such as `index/`). Tokens are the words of the code blocks, split at
//! whitespace and commas. `lib.rs` and `mod.rs` are the crates' and directories' roots and need
//! no line of their own.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The source trees the file maps cover.
const SOURCE_DIRS: &[&str] =
    &["storage/src", "storage/model/src", "net/src", "node/src", "node/cli/src", "loadgen/src"];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// Every word inside the document's fenced code blocks.
fn code_block_tokens(doc: &str) -> BTreeSet<String> {
    let mut tokens = BTreeSet::new();
    let mut inside = false;
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            continue;
        }
        if inside {
            let words = line.split(|c: char| c.is_whitespace() || c == ',');
            tokens.extend(words.filter(|w| !w.is_empty()).map(str::to_owned));
        }
    }
    tokens
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether the tokens name `file` (relative to its crate's `src/`) or a directory holding it.
fn is_named(tokens: &BTreeSet<String>, file: &Path) -> bool {
    let name = file.file_name().and_then(|n| n.to_str()).expect("file name");
    if name == "lib.rs" || name == "mod.rs" {
        return true;
    }
    // A file line: `c.rs`, or with part of its path, `b/c.rs`.
    if tokens.iter().any(|t| t.ends_with(".rs") && file.ends_with(t)) {
        return true;
    }
    file.parent()
        .into_iter()
        .flat_map(Path::components)
        .any(|dir| tokens.contains(&format!("{}/", dir.as_os_str().to_string_lossy())))
}

#[test]
fn the_file_maps_name_every_source_file() {
    let root = workspace_root();
    let doc = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("read the doc");
    let tokens = code_block_tokens(&doc);
    let mut missing = Vec::new();
    let mut checked = 0;
    for dir in SOURCE_DIRS {
        let src = root.join(dir);
        let mut files = Vec::new();
        rust_files(&src, &mut files);
        for file in files {
            let relative = file.strip_prefix(&src).expect("under src").to_path_buf();
            checked += 1;
            if !is_named(&tokens, &relative) {
                missing.push(format!("{dir}/{}", relative.display()));
            }
        }
    }
    assert!(checked > 100, "found only {checked} source files: wrong root?");
    missing.sort();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md's file maps do not name {} source files:\n  {}",
        missing.len(),
        missing.join("\n  ")
    );
}

#[test]
fn the_rule_sees_files_directories_and_roots() {
    let doc = "text\n```\nsrc/\n  a.rs, b.rs   what\n  dir/  what\n  log/w.rs\n```\nc.rs";
    let tokens = code_block_tokens(doc);
    assert!(is_named(&tokens, Path::new("a.rs")));
    assert!(is_named(&tokens, Path::new("log/w.rs")), "a file line with its directory");
    assert!(!is_named(&tokens, Path::new("other/w.rs")), "but not another directory's");
    assert!(is_named(&tokens, Path::new("x/b.rs")), "a file line names it anywhere");
    assert!(is_named(&tokens, Path::new("dir/deep/d.rs")), "a directory line names its files");
    assert!(is_named(&tokens, Path::new("lib.rs")));
    assert!(!is_named(&tokens, Path::new("c.rs")), "only code blocks count");
    assert!(!is_named(&tokens, Path::new("other/e.rs")));
}
