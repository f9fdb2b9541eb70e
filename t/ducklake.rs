//! From a commit to its data, in the real engine: the example lake (real DuckLake catalogs and
//! Parquet files, written by `examples/write_lake.py`) is cloned from a folder, S3 (moto), plain
//! HTTP and a moved copy; for each ref, `git-remote-fdl catalog` is run and the statements it
//! printed are run as printed in DuckDB with the DuckLake extension (`make test` installs both
//! from PyPI into `target/venv`; `INSTALL` is dropped and `LOAD` takes the package's file, the
//! one substitution). The rows must be those the writer wrote for that snapshot.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use crate::support::{copy_dir, http, LakeBuilder, TestEnv, Where};

/// Each ref of the example lake, and `count(*), sum(amount)` of `sales` in its snapshot
/// (examples/README.md).
const EXPECTED: [(&str, &str); 4] = [
    ("v2026.01", r#"[["3", "425.75"]]"#),
    ("v2026.02", r#"[["4", "639.75"]]"#),
    ("origin/main", r#"[["5", "949.75"]]"#),
    ("origin/staging", r#"[["4", "639.75"]]"#),
];

const QUERY: &str = "SELECT count(*), sum(amount) FROM lake.sales";

fn example_lake() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/lake")
}

/// The example lake's files, as a lake writer would put them on a store.
fn example_files(dir: &Path, prefix: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.file_type().unwrap().is_dir() {
            example_files(&entry.path(), &format!("{name}/"), out);
        } else {
            out.insert(name, std::fs::read(entry.path()).unwrap());
        }
    }
}

fn duckdb_python() -> String {
    crate::support::installed("DUCKDB_PYTHON")
}

/// Checks out each ref in `clone`, runs `catalog` and the statements it printed; returns the
/// statements of the last one.
fn every_ref_gives_its_rows(t: &TestEnv, clone: &str) -> String {
    let mut last = String::new();
    for (n, (rev, rows)) in EXPECTED.iter().enumerate() {
        t.ok(clone, &["checkout", "-q", rev]);
        let output = t.path(&format!("catalog-{n}.duckdb"));
        let out = t
            .command("git-remote-fdl", clone, &["catalog", "HEAD", "-o"])
            .arg(&output)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "catalog of {rev}: {err}");
        let statements = String::from_utf8(out.stdout).unwrap();
        assert!(
            statements.contains("OVERRIDE_DATA_PATH true"),
            "{statements}"
        );
        let got = run_in_duckdb(t, clone, &statements);
        assert_eq!(got.trim(), *rows, "{rev} with:\n{statements}");
        last = statements;
    }
    last
}

/// The statements run as printed, then [`QUERY`]; its rows as JSON.
fn run_in_duckdb(t: &TestEnv, cwd: &str, statements: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/t/support/duckdb_run.py");
    let mut child = t
        .command(&duckdb_python(), cwd, &[script, QUERY])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(statements.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "DuckDB refused the printed statements:\n{statements}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn catalog_statements_give_each_snapshots_rows_from_a_folder_lake() {
    let t = TestEnv::new();
    copy_dir(&example_lake(), &t.path("sales"));
    t.ok(".", &["clone", "-q", "fdl::sales", "clone"]);
    every_ref_gives_its_rows(&t, "clone");
}

#[test]
fn catalog_statements_give_each_snapshots_rows_from_a_moved_folder_lake() {
    let t = TestEnv::new();
    copy_dir(&example_lake(), &t.path("sales"));
    t.ok(".", &["clone", "-q", "fdl::sales", "clone"]);
    std::fs::rename(t.path("sales"), t.path("moved")).unwrap();
    let moved = format!("fdl::{}", t.path("moved").display());
    t.ok("clone", &["remote", "set-url", "origin", &moved]);
    let statements = every_ref_gives_its_rows(&t, "clone");
    assert!(statements.contains("moved/data/"), "{statements}");
}

#[test]
fn catalog_statements_give_each_snapshots_rows_from_an_s3_lake() {
    let mut t = TestEnv::new();
    let mut files = BTreeMap::new();
    example_files(&example_lake(), "", &mut files);
    let lake = t.lake_at(Where::S3, "sales", &LakeBuilder { files });
    t.ok(".", &["clone", "-q", &lake.url, "clone"]);
    let statements = every_ref_gives_its_rows(&t, "clone");
    assert!(statements.contains("LOAD httpfs;"), "{statements}");
    assert!(
        statements.contains("PROVIDER credential_chain"),
        "{statements}"
    );
    assert!(
        !statements.contains("testing-secret-never-shown"),
        "a credential's value was printed:\n{statements}"
    );
}

#[test]
fn catalog_statements_give_each_snapshots_rows_from_an_http_lake() {
    let t = TestEnv::new();
    copy_dir(&example_lake(), &t.path("sales"));
    let server = http::serve(&t.path("sales"));
    t.ok(
        ".",
        &["clone", "-q", &format!("fdl::{}", server.url), "clone"],
    );
    let statements = every_ref_gives_its_rows(&t, "clone");
    assert!(
        statements.contains(&format!("DATA_PATH '{}data/'", server.url)),
        "{statements}"
    );
}

/// Issue 30, item 10: a clone of `http://alice:pw@host/...` into a folder under `alice/`
/// printed `ATTACH '.../<redacted>/clone/.git/fdl/catalogs/...'`, a file that does not exist,
/// and `fdlOption aws_region=...` printed `REGION '<redacted>'`. Secrets are redacted, not a
/// user name's every occurrence, and a region is no secret: the statements name the file
/// written and run as printed.
#[test]
fn catalog_statements_name_the_file_written_under_a_folder_named_like_the_urls_user() {
    let t = TestEnv::new();
    copy_dir(&example_lake(), &t.path("sales"));
    let server = http::serve(&t.path("sales"));
    let url = server
        .url
        .replacen("http://", "http://alice:pw-never-shown@", 1);
    std::fs::create_dir_all(t.path("alice")).unwrap();
    t.ok("alice", &["clone", "-q", &format!("fdl::{url}"), "clone"]);
    let out = t
        .command("git-remote-fdl", "alice/clone", &["catalog", "v2026.02"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let statements = String::from_utf8(out.stdout).unwrap();
    assert!(!statements.contains("pw-never-shown"), "{statements}");
    assert!(!err.contains("pw-never-shown"), "{err}");
    let attached = statements
        .split("ATTACH 'ducklake:")
        .nth(1)
        .and_then(|rest| rest.split('\'').next())
        .unwrap_or_else(|| panic!("no ATTACH in:\n{statements}"));
    assert!(
        attached.contains("/alice/clone/.git/fdl/catalogs/"),
        "{statements}"
    );
    assert!(Path::new(attached).is_file(), "{attached} was not written");
}

#[test]
fn catalog_statements_keep_the_remotes_region() {
    let mut t = TestEnv::new();
    let mut files = BTreeMap::new();
    example_files(&example_lake(), "", &mut files);
    let lake = t.lake_at(Where::S3, "sales", &LakeBuilder { files });
    t.ok(".", &["clone", "-q", &lake.url, "clone"]);
    t.ok(
        "clone",
        &[
            "config",
            "--add",
            "remote.origin.fdlOption",
            "aws_region=eu-west-3",
        ],
    );
    let out = t
        .command("git-remote-fdl", "clone", &["catalog", "origin/main"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let statements = String::from_utf8(out.stdout).unwrap();
    assert!(statements.contains("REGION 'eu-west-3'"), "{statements}");
}
