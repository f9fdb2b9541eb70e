//! The plan in `docs/ARCHITECTURE.md`, file by file: no two files of `src/` share a name, no file
//! of `src/` or `t/` holds more than 600 lines of code, and every file of `t/` is compiled into
//! the test binary.

use std::collections::BTreeMap;
use std::path::Path;

use crate::architecture::{checked_files, code_lines, root, rust_files};

const MAX_FILE_CODE_LINES: usize = 600;

/// Lines of code of a file: outside its tests, neither blank nor comments only.
fn code_line_count(text: &str) -> usize {
    code_lines(text).filter(|l| !l.trim().is_empty()).count()
}

/// Issue 32, item 2: a file's name says which room it is, wherever it is opened from (an
/// editor's tab, a stack trace): no two files of `src/` share one, `mod.rs` and `error.rs`
/// aside.
#[test]
fn no_two_files_of_src_share_a_name() {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (rel, _) in checked_files() {
        let name = Path::new(&rel)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .to_string();
        if name != "mod.rs" && name != "error.rs" {
            seen.entry(name).or_default().push(rel);
        }
    }
    let shared: Vec<String> = seen
        .into_values()
        .filter(|files| files.len() > 1)
        .map(|files| files.join(", "))
        .collect();
    assert!(
        shared.is_empty(),
        "rename one of each:\n{}",
        shared.join("\n")
    );
}

#[test]
fn no_file_of_src_has_more_than_600_lines_of_code() {
    let long: Vec<String> = checked_files()
        .into_iter()
        .map(|(rel, text)| (rel, code_line_count(&text)))
        .filter(|(_, n)| *n > MAX_FILE_CODE_LINES)
        .map(|(rel, n)| format!("src/{rel}: {n} lines of code"))
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}

/// Every file of `t/` (`t/support/` included) holds at most 600 lines of code, as the files of
/// `src/` do: a longer one is split by feature, none exempt.
#[test]
fn no_file_of_t_has_more_than_600_lines_of_code() {
    let t = root().join("t");
    let long: Vec<String> = rust_files(&t)
        .into_iter()
        .map(|f| f.strip_prefix(&t).unwrap().to_string_lossy().to_string())
        .map(|rel| {
            let n = code_line_count(&std::fs::read_to_string(t.join(&rel)).unwrap());
            (rel, n)
        })
        .filter(|(_, n)| *n > MAX_FILE_CODE_LINES)
        .map(|(rel, n)| format!("t/{rel}: {n} lines of code"))
        .collect();
    assert!(long.is_empty(), "split these files:\n{}", long.join("\n"));
}

/// A file of `t/` no `mod` line names is never compiled: its tests would silently not run.
#[test]
fn every_file_of_t_is_compiled_into_the_test_binary() {
    let t = root().join("t");
    let mut missing = Vec::new();
    for file in rust_files(&t) {
        let rel = file.strip_prefix(&t).unwrap();
        let folder = rel.parent().unwrap_or(Path::new(""));
        let name = rel.file_stem().unwrap().to_string_lossy().to_string();
        let parent = match folder.as_os_str().is_empty() {
            true if name == "main" => continue,
            true => t.join("main.rs"),
            false if name == "mod" => continue,
            false => t.join(folder).join("mod.rs"),
        };
        let text = std::fs::read_to_string(&parent).unwrap_or_default();
        let declared = code_lines(&text).any(|l| {
            let l = l.trim();
            let l = l.strip_prefix("pub ").unwrap_or(l);
            l == format!("mod {name};")
        });
        if !declared {
            missing.push(rel.display().to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "files of t/ no mod line names: {missing:?}"
    );
}
