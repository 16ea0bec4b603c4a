//! The module graph of one crate at the granularity of files, read from its sources with `syn`,
//! for `module_cycles.rs`.
//!
//! A module is a file. The crate root (`src/lib.rs`, `src/main.rs` or `src/bin/NAME.rs`) is the
//! root module; `foo.rs` and `foo/mod.rs` are the module `foo`. Files are found by following the
//! `mod` declarations from the root the way rustc does (inline modules such as `mod tests { .. }`
//! belong to their file; `#[path]` is refused).
//!
//! An edge A -> B means code in file A names something in file B: a `use` declaration, or a path
//! in code or in a macro's tokens that starts with `crate::`, `super::`, `self::` or the name of
//! a child module (`super::` inside an inline module is resolved from that inline module, so
//! `use super::*` in a `mod tests` block names its own file). A reference is an edge to the
//! deepest module of its path that is a file (`crate::a::b::C` -> `a/b.rs` if that file exists,
//! else `a.rs`), and a name that module only re-exports (`pub use x::C`) is followed to the file
//! it comes from, so `crate::Error` leads to `error.rs`, not to `lib.rs`.
//!
//! The rule that keeps facades from looking like cycles: a module's `mod child;` declarations and
//! its re-exports (a `use` with any `pub`) of its own descendants are not edges; they build the
//! tree and name its public paths, and the code of the module does not need them. A private `use`
//! of a child (the parent's code calls the child) is an edge like any other, so a parent that
//! calls its child while the child calls back into the parent is a cycle.
//!
//! Limits, each of which can only hide an edge, never invent one: a name brought in by a `use`
//! and then used (`use crate::a; a::f()`) counts once, at the `use`; a name imported by glob and
//! then used bare is not traced further; a path through an extern crate is not an edge.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

/// Most re-exports followed from one reference; a longer chain is a loop of re-exports.
const REEXPORT_HOPS_MAX: usize = 16;

/// References kept per edge to show in a failure message.
const EDGE_EXAMPLES_MAX: usize = 3;

/// A module's path from the crate root (empty for the root).
type ModPath = Vec<String>;

/// One module file.
pub struct Module {
    pub path: ModPath,
    pub file: PathBuf,
    ast: syn::File,
    /// Where the files of its `mod` declarations are.
    child_dir: PathBuf,
    /// The names its top level defines.
    defines: BTreeSet<String>,
    /// Its re-exports: name -> absolute path of what the name stands for.
    reexports: BTreeMap<String, ModPath>,
    /// Absolute paths of its glob re-exports (`pub use x::*`).
    glob_reexports: Vec<ModPath>,
}

/// The files of one crate and which file's code names which.
pub struct Graph {
    pub modules: Vec<Module>,
    by_path: HashMap<ModPath, usize>,
    /// from -> to -> up to [`EDGE_EXAMPLES_MAX`] references that make the edge.
    edges: BTreeMap<usize, BTreeMap<usize, BTreeSet<String>>>,
}

impl Graph {
    /// Builds the graph of the crate whose root file is `root`, reading each file through `read`
    /// (None: there is no such file).
    pub fn load_with(
        root: &Path,
        read: &mut dyn FnMut(&Path) -> Option<String>,
    ) -> Result<Graph, String> {
        let mut graph =
            Graph { modules: Vec::new(), by_path: HashMap::new(), edges: BTreeMap::new() };
        let text = read(root).ok_or_else(|| format!("{}: cannot read", root.display()))?;
        let dir = root.parent().map(Path::to_path_buf).unwrap_or_default();
        graph.add(Vec::new(), root.to_path_buf(), dir, &text)?;
        let mut next = 0;
        while next < graph.modules.len() {
            let mut declared = Vec::new();
            let module = &graph.modules[next];
            mod_declarations(&module.ast.items, &mut Vec::new(), &mut declared)
                .map_err(|e| format!("{}: {e}", module.file.display()))?;
            let (parent_path, parent_dir) = (module.path.clone(), module.child_dir.clone());
            for (inline, name) in declared {
                let dir = inline.iter().fold(parent_dir.clone(), |d, m| d.join(m));
                let flat = dir.join(format!("{name}.rs"));
                let nested = dir.join(&name).join("mod.rs");
                let (file, text) = match (read(&flat), read(&nested)) {
                    (Some(text), _) => (flat, text),
                    (None, Some(text)) => (nested, text),
                    (None, None) => {
                        return Err(format!("mod {name}: neither {flat:?} nor {nested:?} exists"))
                    }
                };
                let path = [parent_path.clone(), inline, vec![name.clone()]].concat();
                graph.add(path, file, dir.join(&name), &text)?;
            }
            next += 1;
        }
        for i in 0..graph.modules.len() {
            graph.collect_reexports(i);
        }
        for i in 0..graph.modules.len() {
            graph.collect_edges(i);
        }
        Ok(graph)
    }

    fn add(
        &mut self,
        path: ModPath,
        file: PathBuf,
        child_dir: PathBuf,
        text: &str,
    ) -> Result<(), String> {
        let ast = syn::parse_file(text).map_err(|e| format!("{}: {e}", file.display()))?;
        let defines = ast.items.iter().filter_map(defined_name).collect();
        self.by_path.insert(path.clone(), self.modules.len());
        self.modules.push(Module {
            path,
            file,
            ast,
            child_dir,
            defines,
            reexports: BTreeMap::new(),
            glob_reexports: Vec::new(),
        });
        Ok(())
    }

    fn collect_reexports(&mut self, i: usize) {
        let scope = self.modules[i].path.clone();
        let mut reexports = BTreeMap::new();
        let mut globs = Vec::new();
        for item in &self.modules[i].ast.items {
            let syn::Item::Use(u) = item else { continue };
            if matches!(u.vis, syn::Visibility::Inherited) || u.leading_colon.is_some() {
                continue;
            }
            for (segments, end) in flatten_use(&u.tree) {
                let Some(absolute) = self.absolute(&scope, &segments) else { continue };
                match end {
                    UseEnd::Name(name) => {
                        reexports.insert(name, absolute);
                    }
                    UseEnd::Glob => globs.push(absolute),
                }
            }
        }
        self.modules[i].reexports = reexports;
        self.modules[i].glob_reexports = globs;
    }

    fn collect_edges(&mut self, from: usize) {
        let mut refs =
            References { graph: self, scope: self.modules[from].path.clone(), found: Vec::new() };
        refs.visit_file(&self.modules[from].ast);
        let found = refs.found;
        for (absolute, text, reexport) in found {
            let to = self.target(&absolute);
            if to == from || (reexport && self.is_descendant(to, from)) {
                continue;
            }
            let examples = self.edges.entry(from).or_default().entry(to).or_default();
            if examples.len() < EDGE_EXAMPLES_MAX {
                examples.insert(text);
            }
        }
    }

    /// The absolute module path a reference from inside module `scope` names, if it names
    /// something of this crate.
    fn absolute(&self, scope: &[String], segments: &[String]) -> Option<ModPath> {
        let (first, mut rest) = segments.split_first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => scope.to_vec(),
            "super" => {
                let mut base = scope.to_vec();
                base.pop()?;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base
            }
            child => {
                let mut candidate = scope.to_vec();
                candidate.push(child.to_owned());
                if !self.by_path.contains_key(&candidate) {
                    return None;
                }
                rest = segments;
                scope.to_vec()
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file an absolute path leads to: its deepest prefix that is a file, through that file's
    /// re-exports to where a re-exported name comes from.
    fn target(&self, absolute: &[String]) -> usize {
        let mut path = absolute.to_vec();
        let mut hops = 0;
        loop {
            let k = (0..=path.len())
                .rev()
                .find(|&k| self.by_path.contains_key(&path[..k]))
                .expect("the crate root is a module");
            let index = self.by_path[&path[..k]];
            let module = &self.modules[index];
            let Some(name) = path.get(k) else { return index };
            if hops == REEXPORT_HOPS_MAX || module.defines.contains(name) {
                return index;
            }
            let via = module.reexports.get(name).cloned().or_else(|| {
                let glob = module.glob_reexports.iter().find(|g| self.provides(g, name))?;
                Some([glob.clone(), vec![name.clone()]].concat())
            });
            let Some(next) = via else { return index };
            path = [next, path[k + 1..].to_vec()].concat();
            hops += 1;
        }
    }

    /// Whether the file module at `path` defines or re-exports `name`.
    fn provides(&self, path: &[String], name: &str) -> bool {
        self.by_path.get(path).is_some_and(|&i| {
            let m = &self.modules[i];
            m.defines.contains(name) || m.reexports.contains_key(name)
        })
    }

    fn is_descendant(&self, module: usize, ancestor: usize) -> bool {
        let (m, a) = (&self.modules[module].path, &self.modules[ancestor].path);
        m.len() > a.len() && m.starts_with(a)
    }

    /// The files that name module `from`'s file names, with examples of the references.
    pub fn edges_from(&self, from: usize) -> impl Iterator<Item = (usize, &BTreeSet<String>)> {
        self.edges.get(&from).into_iter().flatten().map(|(to, examples)| (*to, examples))
    }

    /// The cycles: each set of two or more files that all reach each other (a strongly connected
    /// component), as module indexes.
    pub fn cycles(&self) -> Vec<Vec<usize>> {
        let mut tarjan = Tarjan {
            graph: self,
            index: vec![None; self.modules.len()],
            low: vec![0; self.modules.len()],
            stack: Vec::new(),
            on_stack: vec![false; self.modules.len()],
            next: 0,
            components: Vec::new(),
        };
        for v in 0..self.modules.len() {
            if tarjan.index[v].is_none() {
                tarjan.visit(v);
            }
        }
        let mut cycles: Vec<Vec<usize>> =
            tarjan.components.into_iter().filter(|c| c.len() > 1).collect();
        for c in &mut cycles {
            c.sort_by(|a, b| self.modules[*a].file.cmp(&self.modules[*b].file));
        }
        cycles
    }

    /// A cycle in words: one loop through it, then every edge inside it with the references
    /// that make it.
    pub fn describe(&self, cycle: &[usize]) -> String {
        let name = |i: usize| self.modules[i].file.display().to_string();
        let members: BTreeSet<usize> = cycle.iter().copied().collect();
        let looped = self.one_loop(cycle[0], &members);
        let mut text = looped.iter().map(|&i| name(i)).collect::<Vec<_>>().join(" -> ");
        for &from in cycle {
            for (to, examples) in self.edges_from(from).filter(|(to, _)| members.contains(to)) {
                let examples: Vec<&str> = examples.iter().map(String::as_str).collect();
                text += &format!("\n    {} -> {}: {}", name(from), name(to), examples.join(", "));
            }
        }
        text
    }

    /// The shortest path from `start` back to itself inside `members`.
    fn one_loop(&self, start: usize, members: &BTreeSet<usize>) -> Vec<usize> {
        let mut came_from: HashMap<usize, usize> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        while let Some(v) = queue.pop_front() {
            for (to, _) in self.edges_from(v).filter(|(to, _)| members.contains(to)) {
                if to == start {
                    // Back from `v` to `start` (which has no entry), then round to `start`.
                    let mut path = vec![v];
                    while let Some(&p) = came_from.get(path.last().expect("starts with v")) {
                        path.push(p);
                    }
                    path.reverse();
                    path.push(start);
                    return path;
                }
                if let Entry::Vacant(entry) = came_from.entry(to) {
                    entry.insert(v);
                    queue.push_back(to);
                }
            }
        }
        vec![start]
    }
}

/// Tarjan's strongly connected components over [`Graph::edges`].
struct Tarjan<'g> {
    graph: &'g Graph,
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    stack: Vec<usize>,
    on_stack: Vec<bool>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan<'_> {
    fn visit(&mut self, v: usize) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        let successors: Vec<usize> = self.graph.edges_from(v).map(|(to, _)| to).collect();
        for w in successors {
            match self.index[w] {
                None => {
                    self.visit(w);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(index) if self.on_stack[w] => self.low[v] = self.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut component = Vec::new();
            loop {
                let w = self.stack.pop().expect("v is on the stack");
                self.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(component);
        }
    }
}

/// Collects what one file's code names: (absolute path, the reference as written, whether it
/// is a re-export).
struct References<'g> {
    graph: &'g Graph,
    /// The module the visitor is in: the file's path, plus any inline modules around it.
    scope: ModPath,
    found: Vec<(ModPath, String, bool)>,
}

impl References<'_> {
    fn reference(&mut self, segments: &[String], reexport: bool) {
        if let Some(absolute) = self.graph.absolute(&self.scope, segments) {
            self.found.push((absolute, segments.join("::"), reexport));
        }
    }

    /// Paths (`a::b::c`) among a macro's tokens, which `syn` does not parse.
    fn tokens(&mut self, stream: TokenStream) {
        let trees: Vec<TokenTree> = stream.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(group) => {
                    self.tokens(group.stream());
                    i += 1;
                }
                TokenTree::Ident(first) => {
                    let mut segments = vec![first.to_string()];
                    let mut j = i + 1;
                    while let (Some(a), Some(b), Some(TokenTree::Ident(next))) =
                        (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if !(is_colon(a) && is_colon(b)) {
                            break;
                        }
                        segments.push(next.to_string());
                        j += 3;
                    }
                    if segments.len() > 1 {
                        self.reference(&segments, false);
                    }
                    i = j;
                }
                _ => i += 1,
            }
        }
    }
}

impl<'ast> Visit<'ast> for References<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if let Some((_, items)) = &m.content {
            self.scope.push(m.ident.to_string());
            for item in items {
                self.visit_item(item);
            }
            self.scope.pop();
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        if u.leading_colon.is_some() {
            return;
        }
        let reexport = !matches!(u.vis, syn::Visibility::Inherited);
        for (segments, _) in flatten_use(&u.tree) {
            self.reference(&segments, reexport);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.reference(&segments, false);
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        self.tokens(mac.tokens.clone());
    }
}

fn is_colon(tree: &TokenTree) -> bool {
    matches!(tree, TokenTree::Punct(p) if p.as_char() == ':')
}

/// What one path of a `use` tree brings in.
enum UseEnd {
    /// The name it is known by here.
    Name(String),
    Glob,
}

/// The paths of a `use` tree, each with what it brings in (`{self, X}` gives the prefix itself).
fn flatten_use(tree: &syn::UseTree) -> Vec<(Vec<String>, UseEnd)> {
    fn walk(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, UseEnd)>) {
        let with = |prefix: &[String], ident: &syn::Ident| {
            let mut path = prefix.to_vec();
            if *ident != "self" {
                path.push(ident.to_string());
            }
            path
        };
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                walk(&p.tree, prefix, out);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let path = with(prefix, &n.ident);
                let name = path.last().cloned().unwrap_or_default();
                out.push((path, UseEnd::Name(name)));
            }
            syn::UseTree::Rename(r) => {
                out.push((with(prefix, &r.ident), UseEnd::Name(r.rename.to_string())));
            }
            syn::UseTree::Glob(_) => out.push((prefix.clone(), UseEnd::Glob)),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    walk(item, prefix, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(tree, &mut Vec::new(), &mut out);
    out
}

/// The `mod NAME;` declarations among `items` (also inside inline modules, whose names are
/// `inline`), as (inline modules around it, NAME).
fn mod_declarations(
    items: &[syn::Item],
    inline: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) -> Result<(), String> {
    for item in items {
        let syn::Item::Mod(m) = item else { continue };
        if m.attrs.iter().any(|a| a.path().is_ident("path")) {
            return Err(format!("mod {}: #[path] is not supported", m.ident));
        }
        match &m.content {
            None => out.push((inline.clone(), m.ident.to_string())),
            Some((_, items)) => {
                inline.push(m.ident.to_string());
                mod_declarations(items, inline, out)?;
                inline.pop();
            }
        }
    }
    Ok(())
}

/// The name an item defines at the top level of its module, if any.
fn defined_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Macro(i) => i.ident.as_ref()?,
        syn::Item::Mod(i) => &i.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph of a crate made of `files` (paths under `src/`, the first is `lib.rs`).
    fn graph(files: &[(&str, &str)]) -> Graph {
        let files: HashMap<PathBuf, String> =
            files.iter().map(|(p, t)| (Path::new("src").join(p), t.to_string())).collect();
        Graph::load_with(Path::new("src/lib.rs"), &mut |p| files.get(p).cloned())
            .expect("the test crate parses")
    }

    /// Each cycle as its file names.
    fn cycles(g: &Graph) -> Vec<Vec<String>> {
        let name = |i: usize| {
            g.modules[i].file.strip_prefix("src").expect("under src").display().to_string()
        };
        g.cycles().iter().map(|c| c.iter().map(|&i| name(i)).collect()).collect()
    }

    /// The files `file` has edges to.
    fn edges(g: &Graph, file: &str) -> Vec<String> {
        let index =
            g.modules.iter().position(|m| m.file == Path::new("src").join(file)).expect("file");
        g.edges_from(index).map(|(to, _)| g.modules[to].file.display().to_string()).collect()
    }

    #[test]
    fn two_files_naming_each_other_are_a_cycle() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;"),
            ("a.rs", "use crate::b::B;\npub struct A;"),
            ("b.rs", "pub struct B(crate::a::A);"),
        ]);
        assert_eq!(cycles(&g), [["a.rs", "b.rs"]]);
        let text = g.describe(&g.cycles()[0]);
        assert!(text.starts_with("src/a.rs -> src/b.rs -> src/a.rs"), "{text}");
        assert!(text.contains("src/a.rs -> src/b.rs: crate::b::B"), "{text}");
    }

    /// The `state -> compaction -> state` kind: a three-file loop, one edge a path in a type.
    #[test]
    fn a_longer_loop_is_one_cycle() {
        let g = graph(&[
            ("lib.rs", "mod state;\nmod compaction;\nmod checkpoint;"),
            ("state.rs", "pub struct Shared { f: Option<Box<dyn crate::compaction::Filter>> }"),
            ("compaction.rs", "use crate::checkpoint;\npub trait Filter {}"),
            ("checkpoint.rs", "fn write(s: &crate::state::Shared) {}"),
        ]);
        assert_eq!(cycles(&g), [["checkpoint.rs", "compaction.rs", "state.rs"]]);
    }

    /// A parent that declares and re-exports its children, whose children use what it defines,
    /// is no cycle; a sibling naming the re-export depends on the child that defines it.
    #[test]
    fn a_facade_parent_is_no_cycle() {
        let g = graph(&[
            ("lib.rs", "mod key;\nmod other;\npub use key::encode;"),
            ("key.rs", "mod field;\npub use field::encode;\nfn check() {}"),
            ("key/field.rs", "use super::check;\npub fn encode() { check() }"),
            ("other.rs", "fn f() { crate::encode() }"),
        ]);
        assert!(cycles(&g).is_empty(), "{:?}", cycles(&g));
        assert_eq!(edges(&g, "other.rs"), ["src/key/field.rs"]);
        assert_eq!(edges(&g, "key/field.rs"), ["src/key.rs"]);
    }

    /// The index kind: the parent's code uses its child, which uses a helper of the parent.
    #[test]
    fn a_parent_its_child_calls_back_is_a_cycle() {
        let g = graph(&[
            ("lib.rs", "mod index;"),
            ("index/mod.rs", "mod run;\nuse run::Run;\nfn is_dead() -> bool { false }"),
            ("index/run.rs", "use super::is_dead;\npub struct Run;"),
        ]);
        assert_eq!(cycles(&g), [["index/mod.rs", "index/run.rs"]]);
    }

    /// `super` inside an inline module is that module's parent: the file itself, or one up.
    #[test]
    fn super_in_an_inline_module_starts_from_it() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\nfn root() {}"),
            ("a.rs", "pub fn f() {}\nmod tests { use super::*; fn t() { super::f(); } }"),
            ("b.rs", "mod tests { use super::super::a::f; }"),
        ]);
        assert!(edges(&g, "a.rs").is_empty());
        assert_eq!(edges(&g, "b.rs"), ["src/a.rs"]);
    }

    /// Paths inside a macro's arguments count, and so do a child module's name and `self::`.
    #[test]
    fn paths_in_macros_and_relative_paths_count() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;"),
            ("a.rs", "fn f() { assert!(crate::b::ok()); }"),
            ("b.rs", "mod inner;\npub fn ok() -> bool { inner::yes() }"),
            ("b/inner.rs", "pub fn yes() -> bool { matches!(1, crate::c::ONE) }"),
            ("c.rs", "pub const ONE: u8 = 1;\nfn g() { self::h() }\nfn h() {}"),
        ]);
        assert_eq!(edges(&g, "a.rs"), ["src/b.rs"]);
        assert_eq!(edges(&g, "b.rs"), ["src/b/inner.rs"]);
        assert_eq!(edges(&g, "b/inner.rs"), ["src/c.rs"]);
        assert!(edges(&g, "c.rs").is_empty());
    }

    /// `{self, X}`, renames and globs of another module are edges; re-exports of a sibling are
    /// edges too (only a module's own descendants are exempt).
    #[test]
    fn use_trees_are_flattened() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;"),
            ("a.rs", "use crate::{b::{self, X as Y}};"),
            ("b.rs", "pub struct X;"),
            ("c.rs", "use crate::b::*;"),
            ("d.rs", "pub use crate::b::X;"),
        ]);
        assert_eq!(edges(&g, "a.rs"), ["src/b.rs"]);
        assert_eq!(edges(&g, "c.rs"), ["src/b.rs"]);
        assert_eq!(edges(&g, "d.rs"), ["src/b.rs"]);
    }

    #[test]
    fn a_missing_module_file_is_an_error() {
        let files: HashMap<PathBuf, String> =
            [(PathBuf::from("src/lib.rs"), "mod gone;".to_owned())].into();
        let Err(err) = Graph::load_with(Path::new("src/lib.rs"), &mut |p| files.get(p).cloned())
        else {
            panic!("mod gone has no file, yet the graph loaded");
        };
        assert!(err.contains("mod gone"), "{err}");
    }
}
