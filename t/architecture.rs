//! The plan in `docs/ARCHITECTURE.md` checked against the tree, so that it stays true: no module
//! uses one listed below it, no function outside tests is longer than 80 lines, no layer is
//! reached through another's public field, every module says what it is for, and only the IO
//! loop, progress and tracing talk to the terminal. Its files are checked in
//! `architecture_files.rs`, its imports in `architecture_imports.rs`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Modules that are the binary's, not the library's: they sit on top of everything.
const BINARY: [&str; 2] = ["main.rs", "cli.rs"];
/// The only library modules allowed to write to the terminal.
const TERMINAL: [&str; 3] = ["helper/mod.rs", "progress.rs", "trace.rs"];
const MAX_FUNCTION_LINES: usize = 80;

/// The types that stand for a layer: held by another layer's struct, they stay private, so
/// that the layer is reached through the holder's methods, not through its fields.
const LAYER_HANDLES: [&str; 6] = ["Store", "Lake", "Cache", "Repo", "Remote", "Reading"];

pub(crate) fn root() -> PathBuf {
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
pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
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
pub(crate) fn code_lines(text: &str) -> impl Iterator<Item = &str> {
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

/// Git is run one way (`src/git.rs`): no other file builds a `git` command of its own.
#[test]
fn git_is_run_only_through_the_git_module() {
    let mut found = Vec::new();
    for (rel, text) in checked_files() {
        if rel == "git.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if line.contains("Command::new(\"git\")") {
                found.push(format!("src/{rel}:{}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "run Git through crate::git::Git:\n{}",
        found.join("\n")
    );
}

/// Issue 49, item 3: locks a panicking holder cannot poison (parking_lot's), so that no code
/// decides what a poisoned lock means with an `expect`.
#[test]
fn every_lock_is_one_a_panic_cannot_poison() {
    let mut found = Vec::new();
    for (rel, text) in checked_files() {
        for (n, line) in text.lines().enumerate() {
            let std_lock = ["std::sync::Mutex", "std::sync::RwLock", "sync::{"]
                .iter()
                .any(|p| line.contains(p) && (line.contains("Mutex") || line.contains("RwLock")));
            if std_lock || line.contains(".lock().expect(") || line.contains(".lock().unwrap") {
                found.push(format!("src/{rel}:{}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "use parking_lot's locks:\n{}",
        found.join("\n")
    );
}

/// Issue 49, item 3: no decision is taken on an error's text. What a client words in its
/// errors (object_store's answers and requests, the system's error numbers, a builder's
/// refusals) is read in one file, `store/cloud/answer.rs`, into fields that every decision
/// is taken on; `fatal.rs` only trims Rust's ` (os error N)` from what it shows.
#[test]
fn only_the_answer_reader_reads_an_error_s_words() {
    let words = [
        "status code",
        "Error performing",
        "Server returned",
        "os error",
        "builder error",
        "failed to parse",
        "<Code>",
        "NoSuchBucket",
        "SlowDown",
    ];
    let mut wrong = Vec::new();
    for (rel, text) in checked_files() {
        if rel == "store/cloud/answer.rs" {
            continue;
        }
        for (n, line) in code_lines(&text).enumerate() {
            let display_only = rel == "fatal.rs" && line.contains("\" (os error \"");
            for w in words.iter().filter(|w| line.contains(**w) && !display_only) {
                wrong.push(format!("src/{rel}:{}: reads '{w}'", n + 1));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "decide on store/cloud/answer.rs's fields instead:\n{}",
        wrong.join("\n")
    );
}

/// Issue 49, item 1: a wrapper of a store's backend (counting, tracing, the gate) passes every
/// method on. The `Backend` trait gives no method a default body, so that a wrapper that forgets
/// one does not compile, rather than skipping the backend's own answer.
#[test]
fn no_method_of_a_store_backend_has_a_default_body() {
    let text = std::fs::read_to_string(root().join("src/store/backend.rs")).unwrap();
    let start = text
        .find("pub(crate) trait Backend")
        .expect("the Backend trait");
    let open = start + text[start..].find('{').unwrap();
    let mut depth = 0;
    let mut end = open;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            end = open + i;
            break;
        }
    }
    let block = &text[open + 1..end];
    assert!(
        block.matches("fn ").count() > 8,
        "the trait's methods were not found"
    );
    assert!(
        !block.contains('{'),
        "a method of store::backend::Backend has a default body: give every backend its own"
    );
}

#[test]
fn every_library_module_is_in_the_layer_table() {
    let table = layer_table();
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            l.strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))
        })
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
    let mut long = Vec::new();
    for (rel, text) in checked_files() {
        for (name, at, n) in function_lengths(&text) {
            if n > MAX_FUNCTION_LINES {
                long.push(format!("src/{rel}:{at}: fn {name} is {n} lines"));
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
    let mut wrong = Vec::new();
    for (rel, text) in checked_files() {
        if !text.starts_with("//! ") {
            wrong.push(format!("{rel}: does not start with a //! line"));
        }
        if BINARY.contains(&rel.as_str()) || TERMINAL.contains(&rel.as_str()) {
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
    for (rel, text) in checked_files() {
        for (n, line) in code_lines(&text).enumerate() {
            if line.contains("unsafe {") || line.contains("allow(unsafe_code)") {
                found.push(format!("{rel}:{}", n + 1));
            }
        }
    }
    // One audited call (mallopt(3)), an `allow` and an `unsafe` block; kill(2) is rustix's.
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

/// Issue 7, item 14: the test hooks (crash points, the test panic, the peak-memory report, the
/// folder's reads sent to threads) are read only by debug builds: every place in `src/` that
/// names a `GIT_REMOTE_FDL_TEST_` variable is in a function or block under
/// `#[cfg(debug_assertions)]`, and each such function of `testhook.rs` has a release twin that
/// does nothing.
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
    let hook_fns = [
        "pub fn stop_at(",
        "pub fn reached(",
        "pub fn delay_signal_handling(",
        "pub fn keep_signal_delay_to_this_process(",
        "pub fn record_peak_memory(",
        "pub fn folder_reads_on_threads(",
        "pub fn suggest_trusting_packs_at(",
    ];
    for f in hook_fns {
        assert_eq!(
            hooks.matches(f).count(),
            2,
            "{f}: a debug and a release version"
        );
    }
    assert_eq!(
        hooks.matches("#[cfg(not(debug_assertions))]").count(),
        hook_fns.len()
    );
    assert_eq!(hooks.matches("pub fn ").count(), 2 * hook_fns.len());
}

/// Every `.rs` file of `src/` with its path relative to `src/`.
pub(crate) fn checked_files() -> Vec<(String, String)> {
    let src = root().join("src");
    rust_files(&src)
        .into_iter()
        .map(|f| {
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().to_string();
            (rel, std::fs::read_to_string(&f).unwrap())
        })
        .collect()
}

/// Issue 32, item 1: the library's surface is what the binary, `t/`, `benches/` and `fuzz/`
/// use, nothing more: every `pub mod` of `src/lib.rs` is named from one of them, every other
/// module is private (so rustc sees dead code), and the lints that keep it so are on
/// (`unreachable_pub`, `missing_docs`; `make lint` turns warnings into errors).
#[test]
fn the_library_exposes_only_what_its_users_use() {
    let lib = std::fs::read_to_string(root().join("src/lib.rs")).unwrap();
    let mut users = String::new();
    for file in ["src/main.rs", "src/cli.rs"] {
        users += &std::fs::read_to_string(root().join(file)).unwrap();
    }
    for dir in ["t", "benches", "fuzz/fuzz_targets"] {
        for file in rust_files(&root().join(dir)) {
            if !file.ends_with("architecture.rs") {
                users += &std::fs::read_to_string(file).unwrap();
            }
        }
    }
    let public: Vec<&str> = lib
        .lines()
        .filter_map(|l| l.strip_prefix("pub mod ")?.strip_suffix(';'))
        .collect();
    assert!(public.contains(&"store"), "{public:?}");
    let unused: Vec<&&str> = public
        .iter()
        .filter(|m| !users.contains(&format!("git_remote_fdl::{m}")))
        .collect();
    assert!(unused.is_empty(), "make these modules private: {unused:?}");
    let cargo = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    for lint in ["unreachable_pub = \"warn\"", "missing_docs = \"warn\""] {
        assert!(
            cargo.contains(lint),
            "Cargo.toml's [lints.rust] lacks {lint}"
        );
    }
}

/// The error types of every `Result<T, E>` written in `text` (generics balanced).
fn result_error_types(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in text.match_indices("Result<") {
        let (mut depth, mut comma, mut end) = (1usize, None, None);
        for (i, c) in text[at + 7..].char_indices() {
            match c {
                '<' | '(' | '[' => depth += 1,
                '>' | ')' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(at + 7 + i);
                        break;
                    }
                }
                ',' if depth == 1 => comma = Some(at + 7 + i),
                _ => {}
            }
        }
        if let (Some(comma), Some(end)) = (comma, end) {
            out.push(text[comma + 1..end].trim().to_string());
        }
    }
    out
}

/// Issue 32, item 4: errors are typed (one `thiserror` enum per module), so that a caller can
/// tell them apart and each names what failed; no `Result<_, String>` anywhere in `src/`.
#[test]
fn no_error_of_src_is_a_string() {
    assert_eq!(
        result_error_types("fn f() -> Result<Vec<(u8, String)>, String> {}"),
        ["String"]
    );
    assert_eq!(result_error_types("Result<HashMap<String, u8>, E>"), ["E"]);
    let strings: Vec<String> = checked_files()
        .into_iter()
        .filter(|(_, text)| result_error_types(text).iter().any(|e| e == "String"))
        .map(|(rel, _)| format!("src/{rel}"))
        .collect();
    assert!(
        strings.is_empty(),
        "give these a typed error:\n{}",
        strings.join("\n")
    );
}

#[test]
fn no_layer_is_reached_through_a_public_field() {
    let mut wrong = Vec::new();
    for (rel, text) in checked_files() {
        for (n, line) in code_lines(&text).enumerate() {
            let Some(field) = line.trim_start().strip_prefix("pub ") else {
                continue;
            };
            let Some((name, ty)) = field.split_once(':') else {
                continue;
            };
            let is_field = name.trim().chars().all(|c| c.is_alphanumeric() || c == '_')
                && !ty.starts_with(':');
            let words: Vec<&str> = ty
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .collect();
            let holds = LAYER_HANDLES.iter().any(|h| words.contains(h));
            if is_field && holds && !ty.trim_start().starts_with('&') {
                wrong.push(format!("src/{rel}:{}: pub {}", n + 1, field.trim()));
            }
        }
        // The handles themselves show no fields: what they hold is reached through methods.
        let lines: Vec<&str> = code_lines(&text).collect();
        for (n, line) in lines.iter().enumerate() {
            let is_handle = LAYER_HANDLES
                .iter()
                .any(|h| line.starts_with(&format!("pub struct {h} {{")));
            if !is_handle {
                continue;
            }
            let body = lines[n + 1..].iter().take_while(|l| !l.starts_with('}'));
            for (i, l) in body.enumerate() {
                if l.trim_start().starts_with("pub ") {
                    wrong.push(format!("src/{rel}:{}: {}", n + i + 2, l.trim()));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "a layer reached through a public field (make it private, add a method):\n{}",
        wrong.join("\n")
    );
}
