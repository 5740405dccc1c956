//! Tidy checks of this crate's source tree, in the spirit of rust-analyzer's `tidy.rs`: plain
//! tests that read the files under `src/` (from `CARGO_MANIFEST_DIR`) and fail with a message
//! that names the file to fix. They hold the structure `ARCHITECTURE.md` describes:
//!
//! - **File size** ([`no_source_file_is_over_800_lines`]): no `.rs` file under `src/` has more
//!   than [`MAX_LINES`] lines, tests included, except the files of [`LONG_FILES`], a list that
//!   may only shrink: an entry that is no longer over the limit (or gone) fails too.
//! - **No module circle** ([`no_module_circle`]): the graph of references between the modules
//!   of `src/` has no cycle; what counts as an edge is said on [`module_graph`].
//! - **Thresholds in one place** ([`thresholds_live_in_thresholds_rs`]): no
//!   `const NAME: T = [-]LITERAL;` (or `static`) of a numeric type `T` (`f64`, `u64`, `usize`,
//!   `u32`, `i64` and the other integer and float types) in `rules/*.rs`, `verdict.rs` or
//!   `evidence/phases/mod.rs` outside `#[cfg(test)]` items, except those of [`NOT_THRESHOLDS`]
//!   (each with its reason; an entry whose constant is gone fails too). Thresholds belong in
//!   `thresholds.rs`, with their unit, reason and source.
//! - **Every rule registered and tested** ([`every_rule_is_registered_documented_and_tested`]):
//!   each `rules/X.rs` (but `mod.rs`, `testing.rs`) is declared in `rules/mod.rs`, is in
//!   `rules::FINDING_RULES` (by its `Rule::NAME`) or named (as `` `X` `` or `` `X::…` ``) in
//!   the module doc of `verdict.rs` or listed (`` - `X`: … ``) under the "Rules" heading of
//!   `ARCHITECTURE.md`, starts with a module doc (`//!`) and has at least [`MIN_RULE_TESTS`]
//!   `#[test]` functions; every rule listed there has its file.
//! - **Every finding rule in the registry under its file's name**
//!   ([`every_finding_rule_is_registered_under_its_file_name`]): each `impl Rule for T` in
//!   `rules/X.rs` says `const NAME: &'static str = "X";`, and `rules::FINDING_RULES` holds as
//!   many entries named `X` as the file has `impl Rule`s (every rule registered, none twice, no
//!   entry without its file).
//! - **Every finding worded by its rule** ([`every_finding_is_worded_by_its_rule`]): outside
//!   `report/` and test items, a `FindingKind::X` is named only by the rule file that words
//!   that finding (`rules/X.rs`), and by one such file: two only for the variants of
//!   [`SHARED_FINDINGS`]; a file of `narrative/` only for the findings of
//!   [`NARRATIVE_FINDINGS`] (no rule's own); the files of [`FINDING_KIND_READERS`], which match
//!   on a kind and word no finding, are left out; a `FindingKind as` alias is refused (it would
//!   hide the names). Each list's entry must still hold.
//! - **The precedence tables in code and in `ARCHITECTURE.md` agree**
//!   ([`the_precedence_tables_match_the_code`]): the rows of the three tables under "Verdict
//!   precedence" are `verdict::ENDS_SERVING`, `verdict::SCHEDULER_PRECEDENCE` and
//!   `verdict::NO_LINES_PRECEDENCE`, step names in order (and each event step's bottleneck).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most lines a source file may have.
const MAX_LINES: usize = 800;

/// Files allowed over [`MAX_LINES`], relative to `src/`. The list may only shrink: a file
/// that is no longer over the limit must leave it.
const LONG_FILES: &[&str] = &[];

/// The fewest `#[test]` functions a rule file holds.
const MIN_RULE_TESTS: usize = 3;

/// Numeric constants with a literal value that are not thresholds, as (file under `src/`,
/// name, why): they may stay in their file.
const NOT_THRESHOLDS: &[(&str, &str, &str)] = &[(
    "rules/watchdog.rs",
    "HANG_FRAMES",
    "how many frames of a py-spy dump the finding shows: a length of the report, not a limit \
     that decides anything",
)];

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `src/`: (path relative to `src/` with `/` separators, text), sorted.
fn source_files() -> Vec<(String, String)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, String)>) {
        let entries = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("cannot read directory {}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .expect("under src")
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
                out.push((rel, text));
            }
        }
    }
    let root = src_dir();
    let mut out = Vec::new();
    walk(&root, &root, &mut out);
    out.sort();
    assert!(!out.is_empty(), "no .rs file under {}", root.display());
    out
}

/// Fails with every problem found, one per line.
fn report(check: &str, problems: &[String]) {
    assert!(
        problems.is_empty(),
        "tidy check `{check}` failed:\n  {}\n",
        problems.join("\n  ")
    );
}

#[test]
fn no_source_file_is_over_800_lines() {
    let files = source_files();
    let mut problems = Vec::new();
    for (path, text) in &files {
        let lines = text.lines().count();
        if lines > MAX_LINES && !LONG_FILES.contains(&path.as_str()) {
            problems.push(format!(
                "src/{path} has {lines} lines (more than {MAX_LINES}): split it into \
                 submodules by responsibility"
            ));
        }
    }
    for allowed in LONG_FILES {
        match files.iter().find(|(p, _)| p == allowed) {
            None => problems.push(format!(
                "src/{allowed} is in LONG_FILES (tests/tidy.rs) but does not exist: remove it \
                 from the list"
            )),
            Some((_, text)) if text.lines().count() <= MAX_LINES => problems.push(format!(
                "src/{allowed} has {} lines, no more than {MAX_LINES}: remove it from LONG_FILES \
                 in tests/tidy.rs",
                text.lines().count()
            )),
            Some(_) => {}
        }
    }
    report("file size", &problems);
}

// ---------------------------------------------------------------------------------------------
// A small Rust tokenizer: enough to find paths, `use` trees, attributes and items, with
// comments (doc comments included), string and character literals left out.

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    /// An identifier or keyword (`r#` of a raw identifier dropped).
    Ident(String),
    /// A number literal, as written.
    Num(String),
    /// A string, byte-string or character literal (its content dropped).
    Str,
    /// `::`.
    PathSep,
    /// Any other character.
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    /// 1-based line.
    line: usize,
}

fn tokenize(src: &str) -> Vec<Token> {
    let c: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let at = |i: usize| c.get(i).copied().unwrap_or('\0');
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && at(i + 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if ch == '"' {
            let start = line;
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
            out.push(Token {
                tok: Tok::Str,
                line: start,
            });
        } else if ch == '\'' {
            if at(i + 1) == '\\' {
                // an escaped character literal: to its closing quote
                i += 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push(Token {
                    tok: Tok::Str,
                    line,
                });
            } else if at(i + 2) == '\'' {
                i += 3;
                out.push(Token {
                    tok: Tok::Str,
                    line,
                });
            } else {
                // a lifetime or label: the quote, then its name as an identifier
                i += 1;
                out.push(Token {
                    tok: Tok::Punct('\''),
                    line,
                });
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            let raw_string_prefix = matches!(word.as_str(), "r" | "br" | "cr");
            if raw_string_prefix
                && (at(i) == '"' || (at(i) == '#' && matches!(at(i + 1), '"' | '#')))
            {
                let mut hashes = 0;
                while at(i) == '#' {
                    hashes += 1;
                    i += 1;
                }
                let start_line = line;
                i += 1; // the opening quote
                loop {
                    if i >= c.len() {
                        break;
                    }
                    if c[i] == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                        i += 1 + hashes;
                        break;
                    }
                    if c[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
                out.push(Token {
                    tok: Tok::Str,
                    line: start_line,
                });
            } else if matches!(word.as_str(), "b" | "c") && matches!(at(i), '"' | '\'') {
                // b"…", c"…", b'…': the literal follows; drop the prefix
            } else if word == "r" && at(i) == '#' {
                // a raw identifier: `r#name`
                i += 1;
            } else {
                out.push(Token {
                    tok: Tok::Ident(word),
                    line,
                });
            }
        } else if ch.is_ascii_digit() {
            let start = i;
            while i < c.len()
                && (c[i].is_alphanumeric()
                    || c[i] == '_'
                    || (c[i] == '.' && at(i + 1).is_ascii_digit())
                    || ((c[i] == '-' || c[i] == '+')
                        && matches!(c[i - 1], 'e' | 'E')
                        && c[start..i - 1]
                            .iter()
                            .all(|d| d.is_ascii_digit() || matches!(d, '.' | '_'))))
            {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Num(c[start..i].iter().collect()),
                line,
            });
        } else if ch == ':' && at(i + 1) == ':' {
            i += 2;
            out.push(Token {
                tok: Tok::PathSep,
                line,
            });
        } else {
            i += 1;
            out.push(Token {
                tok: Tok::Punct(ch),
                line,
            });
        }
    }
    out
}

fn ident(t: Option<&Token>) -> Option<&str> {
    match t.map(|t| &t.tok) {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is_punct(t: Option<&Token>, p: char) -> bool {
    matches!(t.map(|t| &t.tok), Some(Tok::Punct(c)) if *c == p)
}

/// The index after the bracketed group that opens at `i` (`(`, `[` or `{`).
fn skip_group(toks: &[Token], mut i: usize) -> usize {
    let mut depth = 0i32;
    while i < toks.len() {
        match toks[i].tok {
            Tok::Punct('(' | '[' | '{') => depth += 1,
            Tok::Punct(')' | ']' | '}') => {
                depth -= 1;
                if depth <= 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    i
}

/// The `X` of an outer attribute `#[cfg(X)]` that starts at `i`.
fn cfg_at(toks: &[Token], i: usize) -> Option<&str> {
    (is_punct(toks.get(i), '#')
        && is_punct(toks.get(i + 1), '[')
        && ident(toks.get(i + 2)) == Some("cfg")
        && is_punct(toks.get(i + 3), '(')
        && is_punct(toks.get(i + 5), ')')
        && is_punct(toks.get(i + 6), ']'))
    .then(|| ident(toks.get(i + 4)))
    .flatten()
}

/// The tokens of a file without its `#[cfg(test)]` and `#[cfg(doc)]` items (tests, and imports
/// for intra-doc links only), and the names of the modules it declares under `#[cfg(test)]`
/// (`#[cfg(test)] mod tests;`).
fn without_test_items(toks: &[Token]) -> (Vec<Token>, Vec<String>) {
    let (mut kept, mut test_mods) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < toks.len() {
        let Some(cfg @ ("test" | "doc")) = cfg_at(toks, i) else {
            kept.push(toks[i].clone());
            i += 1;
            continue;
        };
        let test = cfg == "test";
        i += 7;
        // further attributes of the same item
        while is_punct(toks.get(i), '#') && is_punct(toks.get(i + 1), '[') {
            i = skip_group(toks, i + 1);
        }
        // `[pub[(…)]] mod name;` declares a test-only module file
        let mut j = i;
        if ident(toks.get(j)) == Some("pub") {
            j += 1;
            if is_punct(toks.get(j), '(') {
                j = skip_group(toks, j);
            }
        }
        if test
            && ident(toks.get(j)) == Some("mod")
            && let Some(name) = ident(toks.get(j + 1))
            && is_punct(toks.get(j + 2), ';')
        {
            test_mods.push(name.to_string());
        }
        // the item: to its `;` or to the end of its first top-level block
        while i < toks.len() {
            match toks[i].tok {
                Tok::Punct(';') => {
                    i += 1;
                    break;
                }
                Tok::Punct('{') => {
                    i = skip_group(toks, i);
                    break;
                }
                Tok::Punct('(' | '[') => i = skip_group(toks, i),
                _ => i += 1,
            }
        }
    }
    (kept, test_mods)
}

// ---------------------------------------------------------------------------------------------
// The module graph.

/// A module: its path from the crate root (`[]` is `lib.rs`).
type ModPath = Vec<String>;

fn module_of(file: &str) -> ModPath {
    let mut parts: Vec<String> = file.split('/').map(str::to_string).collect();
    let last = parts.pop().expect("a file name");
    match last.as_str() {
        "lib.rs" | "main.rs" | "mod.rs" => {}
        name => parts.push(name.trim_end_matches(".rs").to_string()),
    }
    parts
}

fn module_name(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// One leaf of a `use` tree: the full path, the name it binds (`None` for a glob) and its line.
#[derive(Clone, Debug)]
struct UseLeaf {
    path: Vec<String>,
    binds: Option<String>,
    line: usize,
}

/// Parses the use tree at `i` under `prefix`, adds its leaves to `out`; returns the index after
/// it.
fn parse_use_tree(
    toks: &[Token],
    mut i: usize,
    prefix: &[String],
    out: &mut Vec<UseLeaf>,
) -> usize {
    let mut path = prefix.to_vec();
    if toks.get(i).is_some_and(|t| t.tok == Tok::PathSep) {
        i += 1; // a leading `::` (an extern crate path)
    }
    loop {
        let line = toks.get(i).map_or(0, |t| t.line);
        if is_punct(toks.get(i), '{') {
            i += 1;
            while i < toks.len() && !is_punct(toks.get(i), '}') {
                i = parse_use_tree(toks, i, &path, out);
                if is_punct(toks.get(i), ',') {
                    i += 1;
                }
            }
            return i + 1;
        }
        if is_punct(toks.get(i), '*') {
            out.push(UseLeaf {
                path,
                binds: None,
                line,
            });
            return i + 1;
        }
        let Some(seg) = ident(toks.get(i)) else {
            return i + 1;
        };
        i += 1;
        if seg == "self" && path.len() == prefix.len() && !prefix.is_empty() {
            // `a::{self, …}` binds `a`
            let binds = if ident(toks.get(i)) == Some("as") {
                i += 2;
                ident(toks.get(i - 1)).map(str::to_string)
            } else {
                path.last().cloned()
            };
            out.push(UseLeaf { path, binds, line });
            return i;
        }
        path.push(seg.to_string());
        if toks.get(i).is_some_and(|t| t.tok == Tok::PathSep) {
            i += 1;
            continue;
        }
        let binds = if ident(toks.get(i)) == Some("as") {
            i += 2;
            ident(toks.get(i - 1)).map(str::to_string)
        } else {
            Some(seg.to_string())
        };
        out.push(UseLeaf { path, binds, line });
        return i;
    }
}

/// What one module file names: its `use` leaves and the paths of its code, each with a line.
#[derive(Default)]
struct ModuleRefs {
    file: String,
    uses: Vec<UseLeaf>,
    paths: Vec<(Vec<String>, usize)>,
}

/// Reads a module file's tokens (test items removed): its `use` trees and its paths that start
/// with `crate`, `super`, `self` or one of `children`.
fn module_refs(file: &str, toks: &[Token], children: &BTreeSet<String>) -> ModuleRefs {
    let mut refs = ModuleRefs {
        file: file.to_string(),
        ..ModuleRefs::default()
    };
    let mut i = 0;
    while i < toks.len() {
        let after_sep = i > 0 && toks[i - 1].tok == Tok::PathSep;
        let after_dot = i > 0 && is_punct(toks.get(i - 1), '.');
        match ident(toks.get(i)) {
            Some("use") if !after_sep => {
                i = parse_use_tree(toks, i + 1, &[], &mut refs.uses);
            }
            Some(first)
                if !after_sep
                    && !after_dot
                    && (matches!(first, "crate" | "super" | "self")
                        || children.contains(first))
                    && toks.get(i + 1).is_some_and(|t| t.tok == Tok::PathSep) =>
            {
                let line = toks[i].line;
                let mut segs = vec![first.to_string()];
                i += 1;
                while toks.get(i).is_some_and(|t| t.tok == Tok::PathSep)
                    && let Some(s) = ident(toks.get(i + 1))
                {
                    segs.push(s.to_string());
                    i += 2;
                }
                refs.paths.push((segs, line));
            }
            _ => i += 1,
        }
    }
    refs
}

/// The crate's modules and what each names.
struct Graph {
    modules: BTreeMap<ModPath, ModuleRefs>,
}

impl Graph {
    /// The module `segs` leads to from module `from`: module by module as far as the path
    /// names module files; then, when the next segment is a name the module reached imports
    /// or re-exports (`use`), on through that import (at most `depth` imports deep).
    fn resolve(&self, from: &[String], segs: &[String], depth: u32) -> Option<ModPath> {
        let mut cur = from.to_vec();
        let mut i = 0;
        match segs.first().map(String::as_str) {
            Some("crate") => {
                cur.clear();
                i = 1;
            }
            Some("self") => i = 1,
            Some("super") => {
                while segs.get(i).is_some_and(|s| s == "super") {
                    cur.pop()?;
                    i += 1;
                }
            }
            _ => {}
        }
        while let Some(seg) = segs.get(i) {
            let mut next = cur.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                cur = next;
                i += 1;
                continue;
            }
            if depth > 0
                && let Some(leaf) = self
                    .modules
                    .get(&cur)
                    .and_then(|m| m.uses.iter().find(|u| u.binds.as_ref() == Some(seg)))
            {
                let mut via = leaf.path.clone();
                via.extend(segs[i + 1..].iter().cloned());
                return self.resolve(&cur, &via, depth - 1).or(Some(cur));
            }
            break;
        }
        Some(cur)
    }

    /// The edges `from → to`, each with the first place (file:line) that makes it.
    fn edges(&self) -> BTreeMap<(ModPath, ModPath), String> {
        let mut edges = BTreeMap::new();
        for (from, refs) in &self.modules {
            let named = refs
                .uses
                .iter()
                .map(|u| (&u.path, u.line))
                .chain(refs.paths.iter().map(|(p, l)| (p, *l)));
            for (path, line) in named {
                let Some(to) = self.resolve(from, path, 8) else {
                    continue;
                };
                let related = to.starts_with(from) || from.starts_with(&to);
                if !related {
                    edges
                        .entry((from.clone(), to))
                        .or_insert_with(|| format!("src/{}:{line}", refs.file));
                }
            }
        }
        edges
    }
}

/// The graph of references between this crate's modules.
///
/// A *module* is a file under `src/` (`x/mod.rs` is module `x`, `lib.rs` the crate root).
/// Module A has an edge to module B when A's file, outside comments (doc comments included:
/// an intra-doc link is no dependency), string literals, `#[cfg(test)]` items and
/// `#[cfg(doc)]` items (imports for intra-doc links only), names B or an item of B by a path:
///
/// - a leaf of a `use` declaration (`use crate::evidence::{Loc, view::SchedulerView}` names
///   `evidence` for `Loc` and `evidence::view`; a glob `use a::*` names `a`), or
/// - a path in code that starts with `crate::`, `super::`, `self::` or the name of one of A's
///   own child modules (`crate::incidents::tells_of_rejection(…)`).
///
/// A path is followed module by module as far as it names module files; when its next segment
/// is a name that the module reached imports or re-exports with a `use` (`pub use
/// source::{Loc, SourceId}` in `evidence/mod.rs`), it is followed through that import, so a
/// re-export does not hide where the item lives (`crate::evidence::Loc` is an edge to
/// `evidence::source`). A path through an alias (`th::X` after `use crate::thresholds as th`)
/// counts through the `use` that made the alias.
///
/// Not edges: a module's references to itself, and references between a module and its
/// ancestors or descendants (a parent declares, re-exports and composes its children; a child
/// may name what its parent defines): only modules that are siblings or cousins make an edge.
/// Left out: modules declared under `#[cfg(test)]` (`rules/testing.rs`, `evidence/tests.rs`)
/// with their files, `#[cfg(test)]` and `#[cfg(doc)]` items of every file, and paths to other
/// crates.
fn module_graph() -> Graph {
    let files = source_files();
    let tokens: BTreeMap<ModPath, (String, Vec<Token>, Vec<String>)> = files
        .iter()
        .map(|(file, text)| {
            let (toks, test_mods) = without_test_items(&tokenize(text));
            (module_of(file), (file.clone(), toks, test_mods))
        })
        .collect();
    let test_only: Vec<ModPath> = tokens
        .iter()
        .flat_map(|(m, (_, _, test_mods))| {
            test_mods.iter().map(move |t| {
                let mut p = m.clone();
                p.push(t.clone());
                p
            })
        })
        .collect();
    let kept: Vec<&ModPath> = tokens
        .keys()
        .filter(|m| !test_only.iter().any(|t| m.starts_with(t)))
        .collect();
    let modules = kept
        .iter()
        .map(|m| {
            let (file, toks, _) = &tokens[*m];
            let children: BTreeSet<String> = kept
                .iter()
                .filter(|c| c.len() == m.len() + 1 && c.starts_with(m))
                .map(|c| c[m.len()].clone())
                .collect();
            ((*m).clone(), module_refs(file, toks, &children))
        })
        .collect();
    Graph { modules }
}

/// The circles of the graph: one per strongly connected component of more than one module
/// (the modules that reach each other), as the shortest cycle through its first module (the
/// first module repeated at the end).
fn cycles(edges: &BTreeMap<(ModPath, ModPath), String>) -> Vec<Vec<ModPath>> {
    let mut next: BTreeMap<&ModPath, Vec<&ModPath>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        next.entry(a).or_default().push(b);
    }
    // breadth first from `start`: whom it reaches, each with the module it was reached from
    let reach = |start: &ModPath| -> BTreeMap<ModPath, ModPath> {
        let mut prev: BTreeMap<ModPath, ModPath> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start.clone()]);
        while let Some(m) = queue.pop_front() {
            for &n in next.get(&m).into_iter().flatten() {
                if !prev.contains_key(n) {
                    prev.insert(n.clone(), m.clone());
                    queue.push_back(n.clone());
                }
            }
        }
        prev
    };
    let reached: BTreeMap<&ModPath, BTreeMap<ModPath, ModPath>> =
        next.keys().map(|&m| (m, reach(m))).collect();
    let mut seen: BTreeSet<&ModPath> = BTreeSet::new();
    let mut found = Vec::new();
    for (&m, from_m) in &reached {
        if seen.contains(m) || !from_m.contains_key(m) {
            continue;
        }
        // its component: every module it reaches that reaches it back
        seen.extend(
            reached
                .iter()
                .filter(|(n, from_n)| from_m.contains_key(**n) && from_n.contains_key(m))
                .map(|(n, _)| *n),
        );
        let mut cycle = vec![m.clone()];
        let mut at = from_m[m].clone();
        while &at != m {
            cycle.push(at.clone());
            at = from_m[&at].clone();
        }
        cycle.push(m.clone());
        cycle.reverse();
        found.push(cycle);
    }
    found
}

#[test]
fn no_module_circle() {
    let graph = module_graph();
    // the graph is read: the modules every pipeline stage names are in it
    for m in [
        "evidence",
        "evidence::view",
        "rules",
        "verdict",
        "report",
        "narrative",
    ] {
        let path: ModPath = m.split("::").map(str::to_string).collect();
        assert!(
            graph.modules.contains_key(&path),
            "tidy: module {m} not found under src/"
        );
    }
    let edges = graph.edges();
    assert!(
        edges
            .keys()
            .any(|(a, b)| module_name(a) == "rules::stall" && module_name(b) == "evidence::view"),
        "tidy: the module graph misses rules::stall → evidence::view (the reader is broken)"
    );
    let problems: Vec<String> = cycles(&edges)
        .iter()
        .map(|cycle| {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    format!(
                        "{} → {} ({})",
                        module_name(&w[0]),
                        module_name(&w[1]),
                        edges[&(w[0].clone(), w[1].clone())]
                    )
                })
                .collect();
            format!(
                "module circle: {}; move what they share to the lower module or a new leaf",
                steps.join(", ")
            )
        })
        .collect();
    report("module circle", &problems);
}

// ---------------------------------------------------------------------------------------------

/// The files where thresholds must come from `thresholds.rs`, relative to `src/`.
fn threshold_files(files: &[(String, String)]) -> Vec<&(String, String)> {
    files
        .iter()
        .filter(|(p, _)| {
            (p.starts_with("rules/") && !p["rules/".len()..].contains('/'))
                || p == "verdict.rs"
                || p == "evidence/phases/mod.rs"
        })
        .collect()
}

#[test]
fn thresholds_live_in_thresholds_rs() {
    const NUMERIC: &[&str] = &[
        "f32", "f64", "u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64",
        "i128", "isize",
    ];
    let files = source_files();
    let checked = threshold_files(&files);
    assert!(
        checked.len() > 10 && checked.iter().any(|(p, _)| p == "verdict.rs"),
        "tidy: the rule files, verdict.rs and evidence/phases/mod.rs were not found under src/"
    );
    let mut problems = Vec::new();
    for (file, text) in checked {
        let (toks, _) = without_test_items(&tokenize(text));
        for (i, t) in toks.iter().enumerate() {
            // `const NAME: TYPE = [-]LITERAL;`
            if !matches!(ident(Some(t)), Some("const" | "static")) {
                continue;
            }
            let Some(name) = ident(toks.get(i + 1)) else {
                continue;
            };
            let ty = ident(toks.get(i + 3));
            let mut v = i + 5;
            if is_punct(toks.get(v), '-') {
                v += 1;
            }
            let literal = matches!(toks.get(v).map(|t| &t.tok), Some(Tok::Num(_)))
                && is_punct(toks.get(v + 1), ';');
            if is_punct(toks.get(i + 2), ':')
                && ty.is_some_and(|ty| NUMERIC.contains(&ty))
                && is_punct(toks.get(i + 4), '=')
                && literal
                && !NOT_THRESHOLDS
                    .iter()
                    .any(|(f, n, _)| f == file && *n == name)
            {
                problems.push(format!(
                    "src/{file}:{}: `{name}` is a numeric constant with a literal value: move it \
                     to thresholds.rs (with its unit, reason and source), or, if it is no \
                     threshold, add it to NOT_THRESHOLDS in tests/tidy.rs with the reason",
                    t.line
                ));
            }
        }
    }
    for (file, name, _) in NOT_THRESHOLDS {
        let present = files
            .iter()
            .any(|(p, text)| p == file && text.contains(&format!("const {name}:")));
        if !present {
            problems.push(format!(
                "NOT_THRESHOLDS in tests/tidy.rs names `{name}` in src/{file}, which no longer \
                 defines it: remove the entry"
            ));
        }
    }
    report("thresholds in one place", &problems);
}

// ---------------------------------------------------------------------------------------------

/// The rules `ARCHITECTURE.md` lists under its "Rules" heading (`` - `name`: … `` lines).
fn architecture_rules() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut in_rules = false;
    let mut out = BTreeSet::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix('#') {
            in_rules = heading.trim_start_matches('#').trim() == "Rules";
            continue;
        }
        if in_rules
            && let Some(rest) = line.strip_prefix("- `")
            && let Some((name, _)) = rest.split_once('`')
        {
            out.insert(name.to_string());
        }
    }
    out
}

#[test]
fn every_rule_is_registered_documented_and_tested() {
    let files = source_files();
    let text_of = |p: &str| -> &str {
        files
            .iter()
            .find(|(f, _)| f == p)
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("tidy: src/{p} not found"))
    };
    let rules_mod = tokenize(text_of("rules/mod.rs"));
    let declared: BTreeSet<&str> = rules_mod
        .windows(3)
        .filter(|w| ident(w.first()) == Some("mod") && is_punct(w.get(2), ';'))
        .filter_map(|w| ident(w.get(1)))
        .collect();
    let verdict_doc: String = text_of("verdict.rs")
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("//!"))
        .collect::<Vec<_>>()
        .join("\n");
    let listed = architecture_rules();
    let rules: Vec<(&str, &str)> = files
        .iter()
        .filter_map(|(p, text)| {
            let name = p.strip_prefix("rules/")?.strip_suffix(".rs")?;
            (!name.contains('/') && name != "mod" && name != "testing")
                .then_some((name, text.as_str()))
        })
        .collect();
    assert!(
        rules.len() > 10,
        "tidy: the rule files were not found under src/rules/"
    );
    let mut problems = Vec::new();
    for (name, text) in rules {
        let file = format!("src/rules/{name}.rs");
        if !declared.contains(name) {
            problems.push(format!(
                "{file} is not declared in src/rules/mod.rs (`pub mod {name};`)"
            ));
        }
        let in_verdict = verdict_doc.contains(&format!("`{name}`"))
            || verdict_doc.contains(&format!("`{name}::"));
        let registered = diagnosis::rules::FINDING_RULES
            .iter()
            .any(|r| r.name == name);
        if !registered && !in_verdict && !listed.contains(name) {
            problems.push(format!(
                "{file}: the rule `{name}` is neither in rules::FINDING_RULES, nor named in the \
                 precedence doc of src/verdict.rs, nor under the \"Rules\" heading of \
                 ARCHITECTURE.md (register its `impl Rule`, or add a line `` - `{name}`: … `` \
                 there, from the rule's own doc)"
            ));
        }
        if !text.trim_start().starts_with("//!") {
            problems.push(format!(
                "{file} has no module doc (`//!`: what it detects, why it matters, the evidence \
                 it needs, what to change, the source)"
            ));
        }
        let toks = tokenize(text);
        let tests = toks
            .windows(4)
            .filter(|w| {
                is_punct(w.first(), '#')
                    && is_punct(w.get(1), '[')
                    && ident(w.get(2)) == Some("test")
                    && is_punct(w.get(3), ']')
            })
            .count();
        if tests < MIN_RULE_TESTS {
            problems.push(format!(
                "{file} has {tests} #[test] functions; a rule has at least {MIN_RULE_TESTS}"
            ));
        }
    }
    for name in &listed {
        if !files.iter().any(|(p, _)| *p == format!("rules/{name}.rs")) {
            problems.push(format!(
                "ARCHITECTURE.md lists the rule `{name}` under \"Rules\", but src/rules/{name}.rs \
                 does not exist"
            ));
        }
    }
    report("rules registered and tested", &problems);
}

/// The `NAME`s a rule file's `impl Rule`s give (`const NAME: &'static str = "…";`, read from
/// the text: the tokenizer drops string literals), outside `#[cfg(test)]` items.
fn rule_names(text: &str) -> Vec<String> {
    let code = text.split("\n#[cfg(test)]").next().unwrap_or(text);
    code.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("const NAME: &'static str = \"")?;
            Some(rest.split('"').next()?.to_string())
        })
        .collect()
}

#[test]
fn every_finding_rule_is_registered_under_its_file_name() {
    let files = source_files();
    let registry = diagnosis::rules::FINDING_RULES;
    assert!(
        registry.len() > 5,
        "tidy: rules::FINDING_RULES holds {} rules",
        registry.len()
    );
    let mut problems = Vec::new();
    let mut impls_in: BTreeMap<&str, usize> = BTreeMap::new();
    for (path, text) in &files {
        let Some(name) = path
            .strip_prefix("rules/")
            .and_then(|p| p.strip_suffix(".rs"))
            .filter(|n| !n.contains('/') && *n != "mod" && *n != "testing")
        else {
            continue;
        };
        let (toks, _) = without_test_items(&tokenize(text));
        let impls = toks
            .windows(3)
            .filter(|w| {
                ident(w.first()) == Some("impl")
                    && ident(w.get(1)) == Some("Rule")
                    && ident(w.get(2)) == Some("for")
            })
            .count();
        let names = rule_names(text);
        if names.len() != impls {
            problems.push(format!(
                "src/rules/{name}.rs has {impls} `impl Rule for` but {} `const NAME: &'static \
                 str = \"…\";` lines: give each impl its NAME on one line",
                names.len()
            ));
        }
        for n in names.iter().filter(|n| *n != name) {
            problems.push(format!(
                "src/rules/{name}.rs: a rule named \"{n}\"; a rule's NAME is its file's name \
                 (\"{name}\")"
            ));
        }
        impls_in.insert(name, impls);
    }
    assert!(
        impls_in.values().sum::<usize>() > 0,
        "tidy: no `impl Rule for` found under src/rules/ (the reader is broken)"
    );
    for (name, impls) in &impls_in {
        let entries = registry.iter().filter(|r| r.name == *name).count();
        if entries != *impls {
            problems.push(format!(
                "src/rules/{name}.rs has {impls} `impl Rule`, and rules::FINDING_RULES has \
                 {entries} entries named \"{name}\": register each rule once \
                 (`Registered::of::<{name}::T>()`)"
            ));
        }
    }
    for r in registry {
        if !impls_in.contains_key(r.name) {
            problems.push(format!(
                "rules::FINDING_RULES names \"{}\", but src/rules/{}.rs does not exist",
                r.name, r.name
            ));
        }
    }
    report("finding rules registered", &problems);
}

// ---------------------------------------------------------------------------------------------

/// Files outside `rules/` that name a `FindingKind` to read it, not to word a finding, as (file
/// under `src/`, why); they are not checked by [`every_finding_is_worded_by_its_rule`].
const FINDING_KIND_READERS: &[(&str, &str)] = &[
    (
        "recommend.rs",
        "matches a lever to the plan of the finding that carries it",
    ),
    (
        "narrative/recommendations.rs",
        "words a lever's direction after the finding that carries it (a lower \
         mem_fraction_static after an out-of-memory error)",
    ),
];

/// Findings that are no rule's own, worded in `narrative/`, as (file under `src/`,
/// `FindingKind` variant, why).
const NARRATIVE_FINDINGS: &[(&str, &str, &str)] = &[
    (
        "narrative/findings/capacity.rs",
        "CapacityWhatIf",
        "the capacity model's what-if (`capacity.rs`, kv-capacity), no rule",
    ),
    (
        "narrative/findings/capacity.rs",
        "HiCache",
        "the capacity model's HiCache sizing, no rule",
    ),
    (
        "narrative/findings/client.rs",
        "SampleAdequacy",
        "the client view's sample adequacy (`client_view.rs`), no rule",
    ),
];

/// `FindingKind` variants that more than one rule words, as (variant, rule files, why).
const SHARED_FINDINGS: &[(&str, &[&str], &str)] = &[(
    "PrefillBound",
    &["rules/pd_transfer.rs", "rules/prefill_limit.rs"],
    "a PD prefill server whose own passes are full is prefill bound, as `verdict::Reason::\
     bottleneck` says",
)];

/// Every `FindingKind::X` the code of `file` names outside test items, with its line; and
/// the line of a `FindingKind as` alias, which would hide them.
fn finding_kinds(text: &str) -> (Vec<(String, usize)>, Option<usize>) {
    let (toks, _) = without_test_items(&tokenize(text));
    let named = toks
        .windows(3)
        .filter(|w| ident(w.first()) == Some("FindingKind") && w[1].tok == Tok::PathSep)
        .filter_map(|w| Some((ident(w.get(2))?.to_string(), w[0].line)))
        .collect();
    let alias = toks
        .windows(2)
        .find(|w| ident(w.first()) == Some("FindingKind") && ident(w.get(1)) == Some("as"))
        .map(|w| w[0].line);
    (named, alias)
}

#[test]
fn every_finding_is_worded_by_its_rule() {
    let files = source_files();
    let mut problems = Vec::new();
    // variant → the files that name it (outside `report/`, the readers and test modules)
    let mut worded_in: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (file, text) in &files {
        if file.starts_with("report/")
            || FINDING_KIND_READERS.iter().any(|(f, _)| f == file)
            || file == "rules/testing.rs"
            || file == "evidence/tests.rs"
        {
            continue;
        }
        let (named, alias) = finding_kinds(text);
        if let Some(line) = alias {
            problems.push(format!(
                "src/{file}:{line}: `FindingKind as …` hides which findings this file words: \
                 name them `FindingKind::X`"
            ));
        }
        let rule_file = file.starts_with("rules/") && !file["rules/".len()..].contains('/');
        for (kind, line) in named {
            let narrative_own = NARRATIVE_FINDINGS
                .iter()
                .any(|(f, k, _)| f == file && *k == kind);
            if !rule_file && !narrative_own {
                problems.push(format!(
                    "src/{file}:{line}: FindingKind::{kind} is worded outside its rule: a \
                     finding's words live in its rule file, `rules/X.rs` (a verdict's through \
                     `rules::VerdictWords`); if it is no rule's, add it to NARRATIVE_FINDINGS \
                     (or a reader to FINDING_KIND_READERS) in tests/tidy.rs with the reason"
                ));
            }
            worded_in.entry(kind).or_default().insert(file.clone());
        }
    }
    assert!(
        worded_in.len() > 20,
        "tidy: only {} FindingKind variants found in src/ (the reader is broken)",
        worded_in.len()
    );
    for (kind, in_files) in &worded_in {
        if in_files.len() < 2 {
            continue;
        }
        let shared = SHARED_FINDINGS
            .iter()
            .any(|(k, fs, _)| k == kind && in_files.iter().all(|f| fs.contains(&f.as_str())));
        if !shared {
            problems.push(format!(
                "FindingKind::{kind} is worded in {}: a finding has one rule that words it; \
                 if two rules name it by design, add it to SHARED_FINDINGS in tests/tidy.rs \
                 with the reason",
                in_files
                    .iter()
                    .map(|f| format!("src/{f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    for (file, why) in FINDING_KIND_READERS {
        if !files.iter().any(|(f, _)| f == file) {
            problems.push(format!(
                "FINDING_KIND_READERS in tests/tidy.rs names src/{file} ({why}), which does not \
                 exist: remove the entry"
            ));
        }
    }
    for (file, kind, _) in NARRATIVE_FINDINGS {
        if !worded_in.get(*kind).is_some_and(|fs| fs.contains(*file)) {
            problems.push(format!(
                "NARRATIVE_FINDINGS in tests/tidy.rs says src/{file} words FindingKind::{kind}, \
                 and it does not: remove the entry"
            ));
        }
    }
    for (kind, fs, _) in SHARED_FINDINGS {
        if worded_in
            .get(*kind)
            .is_none_or(|w| w.len() < 2 || fs.len() < 2)
        {
            problems.push(format!(
                "SHARED_FINDINGS in tests/tidy.rs names FindingKind::{kind}, which one file \
                 words: remove the entry"
            ));
        }
    }
    report("every finding worded by its rule", &problems);
}

// ---------------------------------------------------------------------------------------------
// The checks' own reader, on small inputs.

#[test]
fn the_reader_leaves_out_comments_strings_test_and_doc_items() {
    let src = r##"
        //! see crate::a::X
        use crate::b::{c::{self, D}, E as F};
        /* crate::g::H */
        fn f() { let s = "crate::i::J"; let r = r#"crate::k"#; crate::l::m(); super::n::O; }
        #[cfg(test)]
        mod tests { use crate::p::Q; }
        #[cfg(test)]
        mod helpers;
        #[cfg(doc)]
        use crate::s::T;
    "##;
    let (toks, test_mods) = without_test_items(&tokenize(src));
    assert_eq!(test_mods, vec!["helpers".to_string()]);
    let refs = module_refs("x.rs", &toks, &BTreeSet::new());
    let uses: Vec<(String, Option<String>)> = refs
        .uses
        .iter()
        .map(|u| (u.path.join("::"), u.binds.clone()))
        .collect();
    assert_eq!(
        uses,
        vec![
            ("crate::b::c".to_string(), Some("c".to_string())),
            ("crate::b::c::D".to_string(), Some("D".to_string())),
            ("crate::b::E".to_string(), Some("F".to_string())),
        ]
    );
    let paths: Vec<String> = refs.paths.iter().map(|(p, _)| p.join("::")).collect();
    assert_eq!(paths, vec!["crate::l::m", "super::n::O"]);
}

#[test]
fn the_finding_kinds_a_file_names_are_read_from_its_paths() {
    let src = r#"
use crate::report::{Finding, FindingKind};
// FindingKind::InComment
fn f() -> FindingKind { let _ = "FindingKind::InString"; FindingKind::Stall }
#[cfg(test)]
mod tests { fn t() { let _ = super::FindingKind::InTest; } }
"#;
    let (named, alias) = finding_kinds(src);
    assert_eq!(named, vec![("Stall".to_string(), 4)]);
    assert_eq!(alias, None);
    let (_, alias) = finding_kinds("fn g() { use crate::report::FindingKind as K; }");
    assert_eq!(alias, Some(1));
}

#[test]
fn a_circle_is_found_and_a_reexport_is_followed() {
    let m = |file: &str, src: &str, children: &[&str]| {
        let (toks, _) = without_test_items(&tokenize(src));
        let children = children.iter().map(|c| c.to_string()).collect();
        (module_of(file), module_refs(file, &toks, &children))
    };
    let graph = Graph {
        modules: BTreeMap::from([
            m("lib.rs", "", &["a", "b"]),
            m(
                "a/mod.rs",
                "pub use leaf::T; pub use user::U;",
                &["leaf", "user"],
            ),
            m("a/leaf.rs", "pub struct T;", &[]),
            m("a/user.rs", "use crate::b::V; pub struct U(V);", &[]),
            m("b.rs", "use crate::a::T; pub struct V(T);", &[]),
        ]),
    };
    let edges = graph.edges();
    let names: Vec<(String, String)> = edges
        .keys()
        .map(|(a, b)| (module_name(a), module_name(b)))
        .collect();
    // `crate::a::T` is `a::leaf`'s: no circle through `a`
    assert_eq!(
        names,
        vec![
            ("a::user".to_string(), "b".to_string()),
            ("b".to_string(), "a::leaf".to_string()),
        ]
    );
    assert!(cycles(&edges).is_empty());
    let mut graph = graph;
    graph
        .modules
        .insert(module_of("b.rs"), m("b.rs", "use crate::a::U;", &[]).1);
    let found: Vec<Vec<String>> = cycles(&graph.edges())
        .iter()
        .map(|c| c.iter().map(|m| module_name(m)).collect())
        .collect();
    assert_eq!(found, vec![vec!["a::user", "b", "a::user"]]);
}

/// The rows `(step, bottleneck)` of the table that follows the line naming `constant` in the
/// "Verdict precedence" section of `ARCHITECTURE.md` (the `(none)` row left out).
fn precedence_rows(doc: &str, constant: &str) -> Vec<(String, String)> {
    let section = doc
        .split("## Verdict precedence")
        .nth(1)
        .and_then(|s| s.split("\n## ").next())
        .expect("a \"Verdict precedence\" section in ARCHITECTURE.md");
    let marker = format!("(`{constant}`)");
    let after = section
        .split_once(marker.as_str())
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md: no table after {marker}"));
    let ticked = |cell: &str| cell.trim().trim_matches('`').to_string();
    after
        .lines()
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').collect();
            let (step, b) = (cells.first()?.trim(), cells.get(1)?.trim());
            (step.starts_with('`')).then(|| (ticked(step), ticked(b)))
        })
        .collect()
}

#[test]
fn the_precedence_tables_match_the_code() {
    use diagnosis::verdict::{ENDS_SERVING, NO_LINES_PRECEDENCE, SCHEDULER_PRECEDENCE};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ARCHITECTURE.md");
    let doc = std::fs::read_to_string(&path).expect("ARCHITECTURE.md");
    let name = |b: diagnosis::report::Bottleneck| b.name().to_string();
    let mut problems = Vec::new();
    for (constant, code) in [
        (
            "ENDS_SERVING",
            ENDS_SERVING
                .iter()
                .map(|s| (s.0.to_string(), Some(name(s.2))))
                .collect::<Vec<_>>(),
        ),
        (
            "NO_LINES_PRECEDENCE",
            NO_LINES_PRECEDENCE
                .iter()
                .map(|s| (s.0.to_string(), Some(name(s.2))))
                .collect(),
        ),
        (
            "SCHEDULER_PRECEDENCE",
            SCHEDULER_PRECEDENCE
                .iter()
                .map(|s| (s.0.to_string(), None))
                .collect(),
        ),
    ] {
        let rows = precedence_rows(&doc, constant);
        let steps: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
        let want: Vec<&str> = code.iter().map(|c| c.0.as_str()).collect();
        if steps != want {
            problems.push(format!(
                "ARCHITECTURE.md: the {constant} table lists {steps:?}; verdict.rs has {want:?}"
            ));
            continue;
        }
        for ((step, b), (_, want_b)) in rows.iter().zip(&code) {
            if let Some(w) = want_b
                && b != w
            {
                problems.push(format!(
                    "ARCHITECTURE.md: {constant} step `{step}` names `{b}`; verdict.rs names `{w}`"
                ));
            }
        }
    }
    report("precedence tables", &problems);
}
