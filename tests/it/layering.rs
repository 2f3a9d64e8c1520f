//! The module structure of `src/`, checked: imports point one way and no file imports a file
//! that imports it back.
//!
//! * **Layers** (docs/design.md, "Module map"): a module may import only modules of a lower
//!   layer. `cli` is on top; `verify`, `manifest`, `annotations`, `keys` and `trust` never
//!   import `signing`, `policy`, `admission`, `conformance` or `cli`.
//! * **No cycles between files**: the file-level import graph (what each file names through
//!   `crate::`, `super::` and `self::` paths, re-exports followed to the file that defines the
//!   item) has no cycle. A parent `mod.rs` declaring and re-exporting its children is not an
//!   import; its own code using a re-exported name is.
//! * **Rooms** (sub-folders of a module, docs/design.md "Module map"): the files of a room
//!   import, of their module's other files, only what the room's rule allows: the Sigstore
//!   evidence room (`verify/sigstore/`) and the YAML reader (`manifest/yaml/`) nothing, the
//!   attestor logic (`verify/attestors/`) only the Sigstore room, the difference engine
//!   (`manifest/compare/`) only the document types.
//! * **Adapters**: the sigstore crates are named only by the adapter files (in `verify/`,
//!   only by the files of its `sigstore/` room).
//! * **Stand-alone repository**: no source, test or script reads the shared reference
//!   folder next to the checkout.
//!
//! The check reads the source as text (comments and string literals removed), like a
//! reviewer would; it does not build anything.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Layers, lowest first. A module may import modules of strictly lower layers only.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["limits", "memo", "parallel", "setters", "keys", "trust"],
    &["manifest", "annotations"],
    &["verify", "kube"],
    &["policy", "signing", "conformance"],
    &["admission"],
    &["cli"],
];

/// Files allowed to name the sigstore crates.
const SIGSTORE_ADAPTERS: &[&str] = &[
    "src/trust/",
    "src/verify/sigstore/",
    "src/signing/sigstore.rs",
    "src/signing/sigstore/",
    "src/conformance/",
];

/// The sigstore-rust crates, as Rust paths name them.
const SIGSTORE_CRATES: &[&str] = &[
    "sigstore_verify",
    "sigstore_sign",
    "sigstore_trust_root",
    "sigstore_types",
    "sigstore_crypto",
    "sigstore_rekor",
    "sigstore_fulcio",
    "sigstore_oidc",
    "sigstore_tuf",
];

/// Rooms: (room, its module, what of the module's other files it may import). Each entry
/// is a folder (ending in `/`) or a file.
const ROOMS: &[(&str, &str, &[&str])] = &[
    // Sigstore/Rekor/certificate mechanics and what a signature proves: the pipeline and
    // the attestor logic build on it, never the other way.
    ("src/verify/sigstore/", "src/verify/", &[]),
    // Who must have signed: uses the signature checks, not the pipeline or its cache.
    (
        "src/verify/attestors/",
        "src/verify/",
        &["src/verify/sigstore/"],
    ),
    // The YAML reader and writer: nothing of documents, files, messages or comparison.
    ("src/manifest/yaml/", "src/manifest/", &[]),
    // The difference engine: documents' identities, not the YAML reader or file loading.
    (
        "src/manifest/compare/",
        "src/manifest/",
        &["src/manifest/document.rs"],
    ),
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `src/`, as a path relative to the repository.
fn source_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
        entries.sort_by_key(|e| e.path());
        for e in entries {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p.strip_prefix(root()).unwrap().to_path_buf());
            }
        }
    }
    let mut out = Vec::new();
    walk(&root().join("src"), &mut out);
    out
}

/// The module path of a file: `src/verify/sigstore/keyless.rs` -> `["verify", "sigstore", "keyless"]`,
/// `src/verify/mod.rs` -> `["verify"]`, `src/lib.rs` -> `[]`.
fn module_of(file: &Path) -> Vec<String> {
    let rel = file.strip_prefix("src").unwrap();
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && stem != "lib" && stem != "main" {
        parts.push(stem.to_string());
    }
    parts
}

/// Source text without comments, string and char literals (so paths in docs and messages
/// are not mistaken for imports).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'r' && (b.get(i + 1) == Some(&b'"') || b.get(i + 1) == Some(&b'#')) {
            // raw string r"..." / r#"..."#
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push('r');
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && b[j + 1..].iter().take(hashes).all(|&c| c == b'#') {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && b.get(i + 2) == Some(&b'\'') {
            out.push_str("' '");
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            // escaped char literal '\n', '\'', '\u{..}'
            let mut j = i + 2;
            while j < b.len() && b[j] != b'\'' {
                j += 1;
            }
            out.push_str("' '");
            i = j + 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// `code` with every region cut out that starts at `marker` and ends where `end` says (an
/// offset into the text from the marker on; `None`: the rest is kept as it is).
fn cut_regions(code: &str, marker: &str, end: impl Fn(&str) -> Option<usize>) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(pos) = rest.find(marker) {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        let Some(end) = end(after) else {
            rest = after;
            break;
        };
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Code outside `#[cfg(test)] mod tests { ... }` blocks: tests may use anything.
fn without_test_modules(code: &str) -> String {
    cut_regions(code, "#[cfg(test)]", |after| {
        // the item's opening brace and its matching close (or `;` for `mod x;`)
        let open = after.find(['{', ';'])?;
        if after.as_bytes()[open] == b';' {
            return Some(open + 1);
        }
        let mut depth = 0usize;
        for (k, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open + k + 1);
                    }
                }
                _ => {}
            }
        }
        Some(after.len())
    })
}

/// The trees of the `use` items in `code` (white space removed), each from where `next`
/// says its keyword ends up to its `;`.
fn use_trees(code: &str, next: impl Fn(&str) -> Option<usize>) -> Vec<String> {
    let mut trees = Vec::new();
    let mut rest = code;
    while let Some(start) = next(rest) {
        let after = &rest[start..];
        let Some(end) = after.find(';') else { break };
        trees.push(
            after[..end]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect(),
        );
        rest = &after[end..];
    }
    trees
}

/// Expands `use` trees and inline paths into full paths starting with `crate`, `super` or
/// `self` (each a list of segments).
fn referenced_paths(code: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    // `use` statements, with brace trees
    for tree in use_trees(code, |rest| find_keyword(rest, "use").map(|pos| pos + 3)) {
        expand_use_tree(&tree, &[], &mut out);
    }
    // inline paths: crate::a::b(...), super::x::Y
    let bytes = code.as_bytes();
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(p) = code[from..].find(start) {
            let at = from + p;
            from = at + start.len();
            if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
                continue;
            }
            // A visibility (`pub(in crate::verify)`) names where an item is seen, not an
            // import.
            if code[..at].ends_with("(in ") {
                continue;
            }
            let path: String = code[at..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let segs: Vec<String> = path
                .split("::")
                .filter(|s| !s.is_empty())
                .map(str::to_string)
                .collect();
            out.push(segs);
        }
    }
    out.retain(|p| {
        matches!(
            p.first().map(String::as_str),
            Some("crate" | "super" | "self")
        )
    });
    out
}

/// The code without its `pub use` re-exports (declaring what a module offers is not an
/// import of it).
fn without_pub_use(code: &str) -> String {
    cut_regions(code, "pub use ", |after| {
        Some(after.find(';').map_or(after.len(), |e| e + 1))
    })
}

fn contains_word(text: &str, word: &str) -> bool {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(p) = text[from..].find(word) {
        let at = from + p;
        let end = at + word.len();
        let before_ok = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let after_ok = end >= b.len() || !(b[end].is_ascii_alphanumeric() || b[end] == b'_');
        if before_ok && after_ok {
            return true;
        }
        from = end;
    }
    false
}

fn find_keyword(text: &str, kw: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(p) = text[from..].find(kw) {
        let at = from + p;
        let before_ok = at == 0 || !(b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_');
        let after_ok = b
            .get(at + kw.len())
            .is_some_and(|c| c.is_ascii_whitespace());
        if before_ok && after_ok {
            return Some(at);
        }
        from = at + kw.len();
    }
    None
}

fn expand_use_tree(tree: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    // split top-level by ',' when called on a brace body
    let mut depth = 0;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in tree.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&tree[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&tree[start..]);
    for part in parts {
        if part.is_empty() {
            continue;
        }
        if let Some(brace) = part.find('{') {
            let head = part[..brace].trim_end_matches("::");
            let body = &part[brace + 1..part.len() - 1];
            let mut p = prefix.to_vec();
            p.extend(
                head.split("::")
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
            expand_use_tree(body, &p, out);
        } else {
            let mut p = prefix.to_vec();
            let item = part.split(" as ").next().unwrap_or(part);
            let item = item.split("as").next().unwrap_or(item);
            p.extend(
                item.split("::")
                    .filter(|s| !s.is_empty() && *s != "self" && *s != "*")
                    .map(str::to_string),
            );
            out.push(p);
        }
    }
}

/// The module tree: module path -> file, and for each module the names it re-exports from
/// a child (`pub use child::Name`).
struct Tree {
    files: BTreeMap<Vec<String>, PathBuf>,
    reexports: HashMap<Vec<String>, HashMap<String, Vec<String>>>,
}

impl Tree {
    fn load() -> Tree {
        let mut files = BTreeMap::new();
        let mut reexports: HashMap<Vec<String>, HashMap<String, Vec<String>>> = HashMap::new();
        for f in source_files() {
            if f == Path::new("src/main.rs") {
                continue;
            }
            let module = module_of(&f);
            let code = code_only(&std::fs::read_to_string(root().join(&f)).unwrap());
            for tree in use_trees(&code, |rest| rest.find("pub use ").map(|pos| pos + 8)) {
                let mut paths = Vec::new();
                expand_use_tree(&tree, &[], &mut paths);
                for p in paths {
                    if let (Some(name), Some(first)) = (p.last(), p.first())
                        && first != "crate"
                        && first != "super"
                    {
                        let mut target = module.clone();
                        target.extend(p[..p.len() - 1].iter().cloned());
                        reexports
                            .entry(module.clone())
                            .or_default()
                            .insert(name.clone(), target);
                    }
                }
            }
            files.insert(module, f);
        }
        Tree { files, reexports }
    }

    /// The file that defines what `path` (absolute segments after `crate`) names.
    fn resolve(&self, path: &[String]) -> Option<PathBuf> {
        let mut module: Vec<String> = Vec::new();
        for (i, seg) in path.iter().enumerate() {
            let mut child = module.clone();
            child.push(seg.clone());
            if self.files.contains_key(&child) {
                module = child;
                continue;
            }
            // a name re-exported by this module from one of its children
            if let Some(target) = self.reexports.get(&module).and_then(|m| m.get(seg))
                && target != &module
            {
                let mut rest = target.clone();
                rest.extend(path[i..].iter().cloned());
                return self.resolve(&rest);
            }
            break;
        }
        self.files.get(&module).cloned()
    }
}

/// Absolute module path of a reference made from `module` (`crate`/`super`/`self`).
fn absolute(module: &[String], is_mod_rs: bool, path: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = module.to_vec();
    let mut segs = path.iter();
    match segs.next()?.as_str() {
        "crate" => base.clear(),
        "self" => {}
        "super" => {
            // `super` of a non-mod file is its parent module; of a mod.rs, the grandparent
            base.pop()?;
            let _ = is_mod_rs;
        }
        _ => return None,
    }
    let mut rest: Vec<String> = segs.cloned().collect();
    while rest.first().map(String::as_str) == Some("super") {
        base.pop()?;
        rest.remove(0);
    }
    base.extend(rest);
    Some(base)
}

fn layer_of(top: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&top))
}

struct Graph {
    edges: BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    /// (importing file, imported top-level module)
    top_imports: Vec<(PathBuf, String)>,
}

fn import_graph() -> Graph {
    let tree = Tree::load();
    let mut edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut top_imports = Vec::new();
    for (module, file) in &tree.files {
        let code = code_only(&std::fs::read_to_string(root().join(file)).unwrap());
        let code = without_pub_use(&without_test_modules(&code));
        let is_mod_rs = file.ends_with("mod.rs") || file.ends_with("lib.rs");
        // A parent's `pub use child::Name` only re-exports; using `Name` in the parent's own
        // code is an import of the child.
        if let Some(names) = tree.reexports.get(module) {
            for (name, target) in names {
                if contains_word(&code, name) {
                    let mut path = target.clone();
                    path.push(name.clone());
                    if let Some(t) = tree.resolve(&path)
                        && &t != file
                    {
                        edges.entry(file.clone()).or_default().insert(t);
                    }
                }
            }
        }
        for path in referenced_paths(&code) {
            let Some(abs) = absolute(module, is_mod_rs, &path) else {
                continue;
            };
            let target = tree.resolve(&abs);
            // The layer of what is named: the module of the file that defines it (a name
            // re-exported at the crate root, like `crate::Limits`, belongs to its module).
            let top = target
                .as_ref()
                .and_then(|t| module_of(t).first().cloned())
                .or_else(|| abs.first().cloned());
            if let Some(top) = top {
                top_imports.push((file.clone(), top));
            }
            let Some(target) = target else {
                continue;
            };
            if &target == file {
                continue;
            }
            edges.entry(file.clone()).or_default().insert(target);
        }
    }
    Graph { edges, top_imports }
}

#[test]
fn imports_point_down_the_layers_only() {
    let graph = import_graph();
    let mut violations = BTreeSet::new();
    for (file, top) in &graph.top_imports {
        let from = module_of(file);
        let Some(from_top) = from.first() else {
            continue; // lib.rs
        };
        if from_top == top {
            continue;
        }
        let (Some(a), Some(b)) = (layer_of(from_top), layer_of(top)) else {
            violations.insert(format!(
                "{}: module `{from_top}` or `{top}` is missing from LAYERS",
                file.display()
            ));
            continue;
        };
        if b >= a {
            violations.insert(format!(
                "{} (layer {a}, `{from_top}`) imports `crate::{top}` (layer {b})",
                file.display()
            ));
        }
    }
    assert!(
        violations.is_empty(),
        "imports that do not point down (see docs/design.md, Module map):\n{}",
        violations.into_iter().collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn no_import_cycle_between_files() {
    let graph = import_graph();
    // Files that reach each other form a cycle (a strongly connected component).
    let reach = |from: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.clone()];
        while let Some(v) = todo.pop() {
            for w in graph.edges.get(&v).into_iter().flatten() {
                if seen.insert(w.clone()) {
                    todo.push(w.clone());
                }
            }
        }
        seen
    };
    let reachable: BTreeMap<&PathBuf, BTreeSet<PathBuf>> =
        graph.edges.keys().map(|v| (v, reach(v))).collect();
    let mut cycles: BTreeSet<Vec<String>> = BTreeSet::new();
    for (v, from_v) in &reachable {
        if !from_v.contains(*v) {
            continue;
        }
        let mut component: Vec<String> = from_v
            .iter()
            .filter(|w| reachable.get(w).is_some_and(|r| r.contains(*v)))
            .map(|w| w.display().to_string())
            .collect();
        component.sort();
        cycles.insert(component);
    }
    let cycles: Vec<String> = cycles.iter().map(|c| c.join(" <-> ")).collect();
    assert!(
        cycles.is_empty(),
        "files that import each other (directly or around a circle):\n{}",
        cycles.join("\n")
    );
}

/// The imports that leave a room for a file of its module it may not import.
fn room_violations(edges: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<String> {
    let mut out = Vec::new();
    for (from, targets) in edges {
        let from_shown = from.display().to_string();
        for (room, module, allowed) in ROOMS {
            if !from_shown.starts_with(room) {
                continue;
            }
            for to in targets {
                let to_shown = to.display().to_string();
                if to_shown.starts_with(module)
                    && !to_shown.starts_with(room)
                    && !allowed.iter().any(|a| to_shown.starts_with(a))
                {
                    out.push(format!("{from_shown} (room {room}) imports {to_shown}"));
                }
            }
        }
    }
    out
}

#[test]
fn rooms_import_only_what_their_rule_allows() {
    let graph = import_graph();
    // Every room exists (a renamed folder must not pass by checking nothing).
    for (room, _, _) in ROOMS {
        assert!(root().join(room).is_dir(), "{room} is not a folder");
        assert!(
            graph.edges.keys().any(|f| f.starts_with(room)),
            "no file of {room} imports anything: is the graph read?"
        );
    }
    let violations = room_violations(&graph.edges);
    assert!(
        violations.is_empty(),
        "imports across room boundaries (see docs/design.md, Module map, and ROOMS):\n{}",
        violations.join("\n")
    );
}

#[test]
fn sigstore_crates_are_named_only_by_the_adapters() {
    let mut offenders = Vec::new();
    for file in source_files() {
        let shown = file.display().to_string();
        if SIGSTORE_ADAPTERS.iter().any(|a| shown.starts_with(a)) {
            continue;
        }
        let code = code_only(&std::fs::read_to_string(root().join(&file)).unwrap());
        let code = without_test_modules(&code);
        for krate in SIGSTORE_CRATES {
            if let Some(pos) = code.find(&format!("{krate}::")) {
                let snippet: String = code[pos..].chars().take_while(|c| *c != '\n').collect();
                offenders.push(format!("{shown}: {snippet}"));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "sigstore crates named outside the adapters ({}):\n{}",
        SIGSTORE_ADAPTERS.join(", "),
        offenders.join("\n")
    );
}

#[test]
fn nothing_in_the_repository_reads_the_shared_folder() {
    let mut offenders = Vec::new();
    let mut dirs = vec![
        root().join("src"),
        root().join("tests"),
        root().join("scripts"),
        root().join(".ci"),
    ];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if p.is_dir() {
                if name != "node_modules" && !name.starts_with('.') && !name.starts_with("state") {
                    dirs.push(p);
                }
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            // Spelled in pieces, so this file does not name the folder itself.
            let (relative, absolute) = (concat!("..", "/shared"), concat!("work", "/shared"));
            if text.contains(relative) || text.contains(absolute) {
                offenders.push(p.strip_prefix(root()).unwrap().display().to_string());
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "files that refer to the shared reference folder (the repository must stand alone; copy \
         fixtures into testdata/ with provenance):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_checker_sees_a_known_edge_and_a_planted_cycle() {
    // The check must be able to fail: a known import is found...
    let graph = import_graph();
    let keyless = PathBuf::from("src/verify/sigstore/keyless.rs");
    assert!(
        graph.edges[&keyless].contains(&PathBuf::from("src/verify/sigstore/rekor_entry.rs")),
        "{:?}",
        graph.edges[&keyless]
    );
    // ... an import out of a room is reported, one within the rule is not ...
    let mut planted = BTreeMap::new();
    planted.insert(
        PathBuf::from("src/manifest/yaml/read.rs"),
        BTreeSet::from([
            PathBuf::from("src/manifest/compare/diff.rs"),
            PathBuf::from("src/manifest/yaml/error.rs"),
            PathBuf::from("src/limits.rs"),
        ]),
    );
    planted.insert(
        PathBuf::from("src/verify/attestors/attestor.rs"),
        BTreeSet::from([
            PathBuf::from("src/verify/sigstore/keyless.rs"),
            PathBuf::from("src/verify/verifier.rs"),
        ]),
    );
    assert_eq!(
        room_violations(&planted),
        vec![
            "src/manifest/yaml/read.rs (room src/manifest/yaml/) imports \
             src/manifest/compare/diff.rs"
                .to_string(),
            "src/verify/attestors/attestor.rs (room src/verify/attestors/) imports \
             src/verify/verifier.rs"
                .to_string(),
        ]
    );
    // ... and `use` trees expand to full paths.
    let mut out = Vec::new();
    expand_use_tree("super::{a::B,c::{self,D}}", &[], &mut out);
    assert_eq!(
        out,
        vec![
            vec!["super".to_string(), "a".into(), "B".into()],
            vec!["super".to_string(), "c".into()],
            vec!["super".to_string(), "c".into(), "D".into()],
        ]
    );
    assert!(referenced_paths("pub(in crate::verify) fn f() {}").is_empty());
    assert_eq!(
        code_only("let s = \"crate::cli\"; // crate::cli"),
        "let s = \"\"; "
    );
}
