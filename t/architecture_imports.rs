//! The plan in `docs/ARCHITECTURE.md`, import by import: no file of `src/` imports in a circle
//! (inside a folder included, through `super::` and a folder's re-exports), nor any file of
//! `t/support/`.

use std::collections::{BTreeMap, BTreeSet};

use crate::architecture::{checked_files, code_lines, root};

/// The module a file of `src/` is (`lake/refs.rs` → `lake::refs`, `lake/mod.rs` → `lake`).
fn module_path(rel: &str) -> Vec<String> {
    let rel = rel.trim_end_matches(".rs");
    let rel = rel.trim_end_matches("/mod");
    match rel {
        "lib" => Vec::new(),
        _ => rel.split('/').map(str::to_string).collect(),
    }
}

/// The module paths a `use` tree or path names, from `text` on (`a::{b, c::D}` → `a::b`,
/// `a::c::D`), each with the length of text read.
fn path_tree(text: &str) -> (Vec<Vec<String>>, usize) {
    let start = text.len() - text.trim_start().len();
    let rest = &text[start..];
    if let Some(inner) = rest.strip_prefix('{') {
        let (mut out, mut at) = (Vec::new(), 0);
        loop {
            at += inner[at..].len() - inner[at..].trim_start().len();
            if inner[at..].starts_with('}') {
                return (out, start + at + 2);
            }
            let (paths, used) = path_tree(&inner[at..]);
            out.extend(paths);
            at += used;
            // Past a rename (`as x`) to the next item or the group's end.
            at += inner[at..].find([',', '}']).unwrap_or(inner.len() - at);
            match inner[at..].chars().next() {
                Some(',') => at += 1,
                Some(_) => return (out, start + at + 2),
                None => return (out, start + at + 1),
            }
        }
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '*')
        .collect();
    if name.is_empty() {
        return (Vec::new(), start);
    }
    let after = &rest[name.len()..];
    let segment = || match name.as_str() {
        "self" | "*" => Vec::new(),
        _ => vec![name.clone()],
    };
    match after.strip_prefix("::") {
        Some(tail) => {
            let (paths, used) = path_tree(tail);
            let paths = paths
                .into_iter()
                .map(|p| segment().into_iter().chain(p).collect())
                .collect();
            (paths, start + name.len() + 2 + used)
        }
        None => (vec![segment()], start + name.len()),
    }
}

/// Whether a file of `src/` is the module `module` (as `x.rs` or `x/mod.rs`).
fn module_exists(module: &[String]) -> bool {
    let src = root().join("src");
    let joined = module.join("/");
    !module.is_empty()
        && (src.join(format!("{joined}.rs")).is_file()
            || src.join(format!("{joined}/mod.rs")).is_file())
}

/// The statements of a folder's `mod.rs` that give names (`pub use child::Name;`, or
/// `pub(crate) use`), which are
/// not uses of the child: the text without them, and the paths they give, by name.
fn re_exports(text: &str, module: &[String]) -> (String, BTreeMap<String, Vec<String>>) {
    let mut kept = String::new();
    let mut names = BTreeMap::new();
    let mut rest = text;
    // Whichever of the two comes first.
    let next = |t: &str| {
        let found = ["pub(crate) use ", "pub use "].map(|w| t.find(w).map(|at| (at, w.len())));
        found.into_iter().flatten().min()
    };
    while let Some((at, len)) = next(rest) {
        kept.push_str(&rest[..at]);
        let statement = &rest[at + len..];
        let end = statement.find(';').unwrap_or(statement.len());
        for path in path_tree(&statement[..end]).0 {
            let full = absolute(module, &path);
            if let Some(name) = full.last() {
                names.insert(name.clone(), full);
            }
        }
        rest = &statement[end..];
    }
    kept.push_str(rest);
    (kept, names)
}

/// A path named in `module` from the crate's root: `crate::`, `super::` and `self::` resolved,
/// and a first segment naming a module below `module` taken as relative to it.
fn absolute(module: &[String], path: &[String]) -> Vec<String> {
    let mut out = match path.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        _ => module.to_vec(),
    };
    let skip = usize::from(path.first().is_some_and(|p| p == "crate"));
    for segment in &path[skip..] {
        match segment.as_str() {
            "super" => {
                out.pop();
            }
            _ => out.push(segment.clone()),
        }
    }
    out
}

/// The module a path leads to: the deepest module it names, or where a folder's `mod.rs`
/// re-exports the item it names from.
fn resolve(
    path: &[String],
    aliases: &BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>,
) -> Vec<String> {
    let mut module = Vec::new();
    for segment in path {
        module.push(segment.clone());
        if !module_exists(&module) {
            module.pop();
            let target = aliases.get(&module).and_then(|a| a.get(segment));
            return match target {
                Some(t) if t.len() > module.len() + 1 && t.starts_with(&module) => {
                    resolve(t, aliases)
                }
                _ => module,
            };
        }
    }
    module
}

/// The paths a file's code names through `crate::`, `super::`, `self::`, or (in a folder's
/// `mod.rs`) a child module's name, each from the crate's root.
fn paths_named(text: &str, module: &[String], is_folder: bool) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(at, c)) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j].1);
        let starts_word = before.is_none_or(|b| !(b.is_alphanumeric() || b == '_' || b == ':'));
        if !(starts_word && (c.is_alphabetic() || c == '_')) {
            continue;
        }
        let word: String = text[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let relative = is_folder && {
            let mut child = module.to_vec();
            child.push(word.clone());
            module_exists(&child)
        };
        let rooted = matches!(word.as_str(), "crate" | "super" | "self");
        // `pub(in crate::store)` says who may see an item; it uses nothing.
        let visibility = text[..at].ends_with("pub(in ");
        if !(rooted || relative) || visibility || !text[at + word.len()..].starts_with("::") {
            continue;
        }
        let paths = path_tree(&text[at..]).0;
        out.extend(paths.iter().map(|p| absolute(module, p)));
    }
    out
}

/// A circle in `edges`, if there is one: the modules on it, the first one again at the end.
fn find_circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // Iterative depth-first search, colouring modules grey while on the stack.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    for start in edges.keys() {
        if state.contains_key(start.as_str()) {
            continue;
        }
        let mut stack: Vec<(&str, Vec<&str>)> = Vec::new();
        let next = |m: &str| -> Vec<&str> {
            edges
                .get(m)
                .map_or(Vec::new(), |s| s.iter().map(String::as_str).collect())
        };
        state.insert(start, 1);
        stack.push((start, next(start)));
        while let Some((m, todo)) = stack.last_mut() {
            let m = *m;
            let Some(n) = todo.pop() else {
                state.insert(m, 2);
                stack.pop();
                continue;
            };
            match state.get(n) {
                Some(1) => {
                    let from = stack.iter().position(|(s, _)| *s == n).unwrap();
                    let mut circle: Vec<String> =
                        stack[from..].iter().map(|(s, _)| s.to_string()).collect();
                    circle.push(n.to_string());
                    return Some(circle);
                }
                Some(_) => {}
                None => {
                    state.insert(n, 1);
                    stack.push((n, next(n)));
                }
            }
        }
    }
    None
}

/// Which module of `src/` uses which, file by file (a folder's `mod.rs` is its folder's module).
fn file_imports(files: &[(String, String)]) -> BTreeMap<String, BTreeSet<String>> {
    let mut aliases = BTreeMap::new();
    let mut texts = Vec::new();
    for (rel, text) in files {
        let module = module_path(rel);
        let code = code_lines(text).collect::<Vec<_>>().join("\n");
        let is_folder = rel.ends_with("mod.rs");
        let code = match is_folder {
            true => {
                let (kept, names) = re_exports(&code, &module);
                aliases.insert(module.clone(), names);
                kept
            }
            false => code,
        };
        texts.push((module, code, is_folder));
    }
    let mut edges = BTreeMap::new();
    for (module, code, is_folder) in texts.iter().filter(|(m, _, _)| !m.is_empty()) {
        let used: &mut BTreeSet<String> = edges.entry(module.join("::")).or_default();
        for path in paths_named(code, module, *is_folder) {
            let target = resolve(&path, &aliases);
            if !target.is_empty() && target != *module {
                used.insert(target.join("::"));
            }
        }
    }
    edges
}

#[test]
fn no_file_imports_in_a_circle() {
    let edges = file_imports(&checked_files());
    assert!(edges.len() > 40, "the files were not found: {edges:?}");
    assert!(
        edges["lake::refs"].contains("lake::handle"),
        "a use through super:: was not seen: {:?}",
        edges["lake::refs"]
    );
    let circle = find_circle(&edges);
    assert!(
        circle.is_none(),
        "an import circle: {}",
        circle.unwrap().join(" -> ")
    );
}

#[test]
fn the_circle_check_sees_paths_and_circles() {
    let module = vec!["lake".to_string(), "refs".to_string()];
    let names: Vec<String> = paths_named(
        "use super::{open::Lake, files};\nlet x = crate::store::Store::x();\n\
         pub(in crate::lake) fn f() {}",
        &module,
        false,
    )
    .iter()
    .map(|p| p.join("::"))
    .collect();
    assert_eq!(
        names,
        ["lake::open::Lake", "lake::files", "store::Store::x"]
    );
    let edges = |pairs: &[(&str, &str)]| {
        let mut e: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in pairs {
            e.entry(a.to_string()).or_default().insert(b.to_string());
        }
        e
    };
    assert!(find_circle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])).is_none());
    let circle = find_circle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])).unwrap();
    assert_eq!(circle, ["a", "b", "c", "a"]);
}

/// The files of `t/support/` (each a module of the support) and the sibling files each names
/// through `super::` or `crate::support::`: `mod.rs` is the parent, not a sibling.
fn support_imports() -> BTreeMap<String, BTreeSet<String>> {
    let dir = root().join("t/support");
    let names: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_suffix(".rs")
                .map(str::to_string)
        })
        .filter(|n| n != "mod")
        .collect();
    let mut edges = BTreeMap::new();
    for name in &names {
        let text = std::fs::read_to_string(dir.join(format!("{name}.rs"))).unwrap();
        let mut named = BTreeSet::new();
        for prefix in ["super::", "crate::support::"] {
            for (at, _) in text.match_indices(prefix) {
                let word: String = text[at + prefix.len()..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let more = text[at + prefix.len() + word.len()..].starts_with("::")
                    || text[at + prefix.len() + word.len()..].starts_with(";");
                if names.contains(&word) && word != *name && more {
                    named.insert(word);
                }
            }
        }
        edges.insert(name.clone(), named);
    }
    edges
}

#[test]
fn no_file_of_the_tests_support_imports_in_a_circle() {
    let edges = support_imports();
    assert!(
        edges["seaweedfs"].contains("servers") && edges["clouds"].contains("moto"),
        "the support's imports were not seen: {edges:?}"
    );
    let circle = find_circle(&edges);
    assert!(
        circle.is_none(),
        "an import circle in t/support: {}",
        circle.unwrap().join(" -> ")
    );
}
