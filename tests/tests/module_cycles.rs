//! Proves that no crate of the workspace has a cycle among its modules (docs/ARCHITECTURE.md,
//! "Modules point one way"): for every workspace member, each crate root (`src/lib.rs`,
//! `src/main.rs`, `src/bin/*.rs`) is read with its module tree the way rustc finds it, the
//! references between the files are collected with `syn`, and any set of files that reach each
//! other fails the test with one loop through them and the references that make each edge.
//!
//! What counts as an edge, and why a parent's `mod child;` and `pub use child::X` do not, is in
//! `module_graph/mod.rs`; its own tests there show it finds each kind of cycle this workspace
//! once had (two files naming each other, a longer loop through a type held in shared state, a
//! parent calling a child that calls back) and passes facades that only re-export.

mod module_graph;

use std::path::{Path, PathBuf};

use module_graph::Graph;

/// The workspace root: the directory above this crate.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ has a parent").to_path_buf()
}

/// The `members` of the workspace's Cargo.toml, as directories.
fn members(root: &Path) -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("workspace Cargo.toml");
    let start = manifest.find("members").expect("a members list");
    let list = &manifest[start..];
    let list = &list[list.find('[').expect("[")..=list.find(']').expect("]")];
    let members: Vec<PathBuf> = list.split('"').skip(1).step_by(2).map(|m| root.join(m)).collect();
    assert!(!members.is_empty(), "no members in {list}");
    members
}

/// The crate roots of one member: its library and its binaries.
fn crate_roots(member: &Path) -> Vec<PathBuf> {
    let src = member.join("src");
    let mut roots: Vec<PathBuf> =
        ["lib.rs", "main.rs"].iter().map(|f| src.join(f)).filter(|p| p.is_file()).collect();
    if let Ok(bins) = std::fs::read_dir(src.join("bin")) {
        let mut bins: Vec<PathBuf> = bins
            .map(|e| e.expect("bin entry").path())
            .filter(|p| p.extension().is_some_and(|e| e == "rs"))
            .collect();
        bins.sort();
        roots.extend(bins);
    }
    roots
}

/// Every crate of the workspace, built.
fn graphs() -> Vec<Graph> {
    let root = workspace();
    let mut graphs = Vec::new();
    for member in members(&root) {
        for crate_root in crate_roots(&member) {
            let relative = crate_root.strip_prefix(&root).expect("under the workspace");
            // Relative paths keep the failure messages short.
            let graph =
                Graph::load_with(relative, &mut |p| std::fs::read_to_string(root.join(p)).ok())
                    .unwrap_or_else(|e| panic!("{}: {e}", relative.display()));
            graphs.push(graph);
        }
    }
    graphs
}

#[test]
fn no_crate_has_a_module_cycle() {
    let mut found = Vec::new();
    for graph in graphs() {
        for cycle in graph.cycles() {
            found.push(graph.describe(&cycle));
        }
    }
    assert!(
        found.is_empty(),
        "{} module cycle(s); move the type or function that closes each so that its dependencies \
         point one way:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The cycle test sees every source file: none is outside the module trees it reads (a file no
/// `mod` reaches is not compiled, and is not checked either).
#[test]
fn every_source_file_is_in_a_module_tree() {
    let root = workspace();
    let checked: Vec<PathBuf> = graphs()
        .iter()
        .flat_map(|g| g.modules.iter().map(|m| root.join(&m.file)).collect::<Vec<_>>())
        .collect();
    assert!(checked.len() > 100, "only {} files found", checked.len());
    let mut missing = Vec::new();
    for member in members(&root) {
        let mut dirs = vec![member.join("src")];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).expect("source dir") {
                let path = entry.expect("dir entry").path();
                if path.is_dir() {
                    dirs.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && !checked.contains(&path) {
                    missing.push(path);
                }
            }
        }
    }
    assert!(missing.is_empty(), "source files outside every module tree: {missing:?}");
}
