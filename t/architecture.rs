//! The plan in `docs/ARCHITECTURE.md` checked against the tree, so that it stays true: no module
//! uses one listed below it, no function outside tests runs past 80 lines, every module says
//! what it is for, and only the IO loop, progress and tracing talk to the terminal.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules that are the binary's, not the library's: they sit on top of everything.
const BINARY: [&str; 2] = ["main.rs", "cli.rs"];
/// The only library modules allowed to write to the terminal.
const TERMINAL: [&str; 3] = ["helper.rs", "progress.rs", "trace.rs"];
const MAX_FUNCTION_LINES: usize = 80;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The modules of the layer table, bottom up.
fn layer_table() -> Vec<String> {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    doc.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |").map(|(name, _)| name.to_string()))
        .collect()
}

/// Every `.rs` file below `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file of `src/` belongs to (`store/url.rs` → `store`).
fn module_of(rel: &Path) -> String {
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The top-level modules a file names through `crate::`, outside its tests.
fn crate_uses(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in code_lines(text) {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let inner = group.split('}').next().unwrap_or("");
                out.extend(inner.split(',').filter_map(|p| {
                    let name = p.trim().split("::").next()?.trim();
                    (!name.is_empty()).then(|| name.to_string())
                }));
            } else {
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.push(name);
            }
        }
    }
    out
}

/// The lines of a file before its `#[cfg(test)]` module, without `//` comments.
fn code_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .map(|l| l.split("//").next().unwrap_or(""))
}

#[test]
fn no_module_uses_one_below_it_in_the_layer_table() {
    let table = layer_table();
    assert!(table.len() > 10, "layer table not found: {table:?}");
    let rank: BTreeMap<&str, usize> = table
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let src = root().join("src");
    let mut wrong = Vec::new();
    for file in rust_files(&src) {
        let rel = file.strip_prefix(&src).unwrap();
        let name = rel.to_string_lossy().to_string();
        if name == "lib.rs" || BINARY.contains(&name.as_str()) {
            continue;
        }
        let module = module_of(rel);
        let Some(&own) = rank.get(module.as_str()) else {
            wrong.push(format!(
                "{name}: module '{module}' is not in the layer table"
            ));
            continue;
        };
        for used in crate_uses(&std::fs::read_to_string(&file).unwrap()) {
            match rank.get(used.as_str()) {
                Some(&r) if r <= own => {}
                Some(_) => wrong.push(format!(
                    "{name}: '{module}' uses '{used}', which is above it"
                )),
                None => wrong.push(format!(
                    "{name}: uses 'crate::{used}', not in the layer table"
                )),
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "the layers are crossed:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_library_module_is_in_the_layer_table() {
    let table = layer_table();
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod "))
        .map(|l| l.trim_end_matches(';'))
        .collect();
    let mut listed: Vec<&str> = table.iter().map(String::as_str).collect();
    listed.sort();
    let mut declared_sorted = declared.clone();
    declared_sorted.sort();
    assert_eq!(
        listed, declared_sorted,
        "docs/ARCHITECTURE.md and src/lib.rs disagree"
    );
}

/// The length of each function of a file outside its tests: `(name, first line, lines)`.
fn function_lengths(text: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<&str> = code_lines(text).collect();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let trimmed = line.trim_start();
        let Some(at) = trimmed.find("fn ") else {
            continue;
        };
        let before = &trimmed[..at];
        let is_item = before.split_whitespace().all(|w| {
            matches!(
                w,
                "pub" | "pub(crate)" | "pub(super)" | "async" | "const" | "unsafe"
            )
        });
        if !is_item {
            continue;
        }
        let name: String = trimmed[at + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let indent = line.len() - trimmed.len();
        // The body ends at the first `}` back at the function's indentation.
        let Some(end) = lines[i + 1..].iter().position(|l| {
            l.len() > indent && l.starts_with(&" ".repeat(indent)) && l[indent..].starts_with('}')
        }) else {
            continue;
        };
        // A declaration without a body (in a trait) ends with `;` before any `{`.
        if lines[i..=i + end]
            .iter()
            .take_while(|l| !l.contains('{'))
            .any(|l| l.trim_end().ends_with(';'))
        {
            continue;
        }
        out.push((name, i + 1, end + 2));
    }
    out
}

#[test]
fn no_function_outside_tests_is_longer_than_80_lines() {
    let src = root().join("src");
    let mut long = Vec::new();
    for file in rust_files(&src) {
        let text = std::fs::read_to_string(&file).unwrap();
        for (name, at, n) in function_lengths(&text) {
            if n > MAX_FUNCTION_LINES {
                let rel = file.strip_prefix(root()).unwrap().display().to_string();
                long.push(format!("{rel}:{at}: fn {name} is {n} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "split these functions:\n{}",
        long.join("\n")
    );
}

#[test]
fn every_module_says_what_it_is_for_and_only_the_io_loop_talks_to_the_terminal() {
    let src = root().join("src");
    let mut wrong = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        if !text.starts_with("//! ") {
            wrong.push(format!("{rel}: does not start with a //! line"));
        }
        let name = rel.rsplit('/').next().unwrap();
        if BINARY.contains(&rel.as_str()) || TERMINAL.contains(&name) {
            continue;
        }
        for (n, line) in code_lines(&text).enumerate() {
            let prints = [
                "println!",
                "eprintln!",
                "print!(",
                "eprint!(",
                "stdout()",
                "stderr()",
            ]
            .iter()
            .any(|p| line.contains(p));
            if prints {
                wrong.push(format!("{rel}:{}: writes to the terminal", n + 1));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checks_themselves_catch_what_they_look_for() {
    assert_eq!(
        crate_uses("use crate::lake::{Lake};\nlet x = crate::store::redact(y); // crate::helper\n"),
        ["lake", "store"]
    );
    assert_eq!(crate_uses("use crate::{a::B, c};"), ["a", "c"]);
    let body = "    x;\n".repeat(3);
    let text = format!("pub async fn f(\n    a: u8,\n) {{\n{body}}}\n\nfn g();\n");
    assert_eq!(function_lengths(&text), [("f".to_string(), 1, 7)]);
}

#[test]
fn unsafe_code_is_only_the_one_audited_call() {
    let src = root().join("src");
    let mut found = Vec::new();
    for file in rust_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .to_string();
        for (n, line) in code_lines(&std::fs::read_to_string(&file).unwrap()).enumerate() {
            if line.contains("unsafe {") || line.contains("allow(unsafe_code)") {
                found.push(format!("{rel}:{}", n + 1));
            }
        }
    }
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found.iter().all(|f| f.starts_with("process.rs:")),
        "{found:?}"
    );
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    assert!(lib.contains("#![deny(unsafe_code)]"));
    let process = std::fs::read_to_string(src.join("process.rs")).unwrap();
    assert!(process.contains("// SAFETY:"));
}

/// Issue 7, item 14: the test hooks (crash points, the test panic, the peak-memory report) are
/// read only by debug builds: every place in `src/` that names a `GIT_REMOTE_FDL_TEST_`
/// variable is in a function or block under `#[cfg(debug_assertions)]`, and each such function
/// of `testhook.rs` has a release twin that does nothing.
#[test]
fn test_hooks_are_compiled_only_into_debug_builds() {
    let mut seen = 0;
    for path in rust_files(&root().join("src")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !line.contains("GIT_REMOTE_FDL_TEST_") || line.trim_start().starts_with("//") {
                continue;
            }
            seen += 1;
            // The nearest attribute above at a lower indentation, or the enclosing fn's.
            let gated = lines[..i]
                .iter()
                .rev()
                .take(40)
                .any(|l| l.trim() == "#[cfg(debug_assertions)]");
            assert!(
                gated,
                "{}:{}: not under #[cfg(debug_assertions)]",
                path.display(),
                i + 1
            );
        }
    }
    assert!(seen >= 5, "the hooks were not found ({seen})");
    let hooks = std::fs::read_to_string(root().join("src/testhook.rs")).unwrap();
    for f in ["pub fn stop_at(", "pub fn record_peak_memory("] {
        assert_eq!(
            hooks.matches(f).count(),
            2,
            "{f}: a debug and a release version"
        );
    }
    assert_eq!(hooks.matches("#[cfg(not(debug_assertions))]").count(), 2);
}
