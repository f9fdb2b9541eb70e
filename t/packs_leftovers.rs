//! Issue 22: what a clone, a listing or `pack` leaves behind with a lake's packs: no temporary
//! file, no pack nothing was taken from, and after an interrupted `pack` no clone and no secret.

use crate::packs::{clone, listed_packs, pack, read_one_by_one, same_refs};
use crate::support::{lake, TestEnv, Where, HELPER};

/// Every file under `dir` whose name starts with `tmp_` (Git's and this helper's temporary
/// files), relative to `dir`.
fn temporaries(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
            } else if e.file_name().to_string_lossy().starts_with("tmp_") {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found
}

/// The helper writes a reverse index (`.rev`) beside a lake pack's index, as Git >= 2.41's
/// `index-pack` does: it is kept with its pack, as `git fetch` keeps its own, and no temporary
/// file is left for the next fetch to call a killed fetch's.
#[test]
fn a_clone_or_a_listing_from_a_packed_lake_leaves_no_temporary_file() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "rev", &lake(12, 6));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);
    let (_, installed, _) = clone(&t, &at.url, "cloned.git");
    assert!(installed.contains(&format!("{name}.pack")), "{installed:?}");
    let dir = t.path("cloned.git");
    assert_eq!(temporaries(&dir), Vec::<String>::new());
    let counted = t.ok("cloned.git", &["count-objects", "-v"]);
    assert!(counted.contains("garbage: 0"), "{counted}");
    // Kept as Git keeps the reverse index of a pack it fetched, whatever Git's version.
    let rev = dir.join(format!("objects/pack/{name}.rev"));
    assert!(rev.is_file(), "{}", rev.display());
    let out = t.git("cloned.git", &["fetch", "origin"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("removed"),
        "{stderr}"
    );

    // A listing in a new repository reads the packs too.
    t.ok(".", &["init", "-q", "--bare", "listed.git"]);
    let out = t.git("listed.git", &["ls-remote", &at.url]);
    assert!(out.status.success());
    assert_eq!(temporaries(&t.path("listed.git")), Vec::<String>::new());
}

/// A pack nothing was taken from (another lake's, one whose checksum names another pack, one
/// without a record) is removed from the repository once its record was checked.
#[test]
fn a_pack_nothing_was_taken_from_is_not_left_in_the_repository() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "untaken", &lake(12, 6));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);
    let record = at.read(&format!("git-packs/{name}.json")).unwrap();
    let expected = read_one_by_one(&t, &at.url);
    let cloned = |dir: &str, why: &str| {
        let (refs, installed, stderr) = clone(&t, &at.url, dir);
        same_refs(&expected, &refs);
        assert!(stderr.contains(why), "{dir}: {stderr}");
        assert!(
            installed.iter().all(|p| !p.contains(&name)),
            "{dir}: {installed:?}"
        );
        let left: Vec<String> = std::fs::read_dir(t.path(dir).join("objects/pack"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(&name))
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{dir}");
    };

    let id = "5f0c8a52-6d3e-4f8e-9b1a-2c7d4e9f0a13";
    let other = record.replace(id, "00000000-0000-4000-8000-000000000000");
    at.write(&format!("git-packs/{name}.json"), &other);
    cloned("other.git", "it was made from another lake");

    // Every version fails: each names another version's commit.
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let first = v["versions"][0]["commit"].as_str().unwrap();
    let last = v["versions"][11]["commit"].as_str().unwrap();
    at.write(
        &format!("git-packs/{name}.json"),
        &record
            .replace(first, "@swap@")
            .replace(last, first)
            .replace("@swap@", last),
    );
    cloned("failed.git", "cannot be taken from it");

    let store = crate::support::clouds::cloud(Where::S3)
        .unwrap()
        .store(&at.bucket);
    crate::support::clouds::delete(&*store, &format!("{}git-packs/{name}.json", at.prefix));
    cloned("unrecorded.git", "it has no record");

    // Listed under another name: its checksum names the real one.
    let bytes =
        crate::support::clouds::get(&*store, &format!("{}git-packs/{name}.pack", at.prefix))
            .unwrap();
    let fake = format!("pack-{:040x}", 7);
    let mut files = std::collections::BTreeMap::new();
    files.insert(format!("git-packs/{fake}.pack"), bytes);
    files.insert(
        format!("git-packs/{fake}.json"),
        record.replace(&name, &fake).into_bytes(),
    );
    let list = serde_json::json!({"format": 1, "packs": [fake]});
    files.insert("git-packs/list.json".into(), list.to_string().into_bytes());
    crate::support::clouds::put_files(&*store, &at.prefix, &files);
    cloned("misnamed.git", &format!("the pack's checksum names {name}"));
}

/// Files under `dir` whose content holds `secret`.
fn files_holding(dir: &std::path::Path, secret: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = e.path();
            if path.is_dir() {
                todo.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains(secret))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Ctrl-C or a CI's timeout while `pack` holds its clone: the clone goes, the exit code is
/// Git's (128 + the signal), and the remote's secret option was never in any file.
#[test]
fn an_interrupted_pack_removes_its_clone_and_never_writes_the_remotes_secrets() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let mut t = TestEnv::new();
        let at = t.lake_at(Where::S3, "interrupted", &lake(8, 4));
        let tmp = t.path("tmp");
        std::fs::create_dir(&tmp).unwrap();
        t.set("TMPDIR", tmp.to_str().unwrap());
        t.ok(".", &["init", "-q", "--bare", "maintainer.git"]);
        t.ok("maintainer.git", &["remote", "add", "lake", &at.url]);
        let secret = "pack-secret-never-in-a-file";
        let option = format!("aws_secret_access_key={secret}");
        t.ok(
            "maintainer.git",
            &["config", "remote.lake.fdlOption", &option],
        );
        let pid_file = t.path("pack.pid");
        let run = t
            .command(HELPER, "maintainer.git", &["pack", "lake"])
            .env("GIT_REMOTE_FDL_TEST_STOP_PACK_CLONED", &pid_file)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = crate::support::run::pid_at_crash_point(&pid_file);
        let clone_made = std::fs::read_dir(&tmp).unwrap().count();
        assert_eq!(clone_made, 1, "{code}: the clone is in TMPDIR");
        assert_eq!(files_holding(&tmp, secret), Vec::<String>::new(), "{code}");
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let out = run.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().collect();
        assert!(left.is_empty(), "{code}: {left:?}");
        assert!(at.read("git-packs/list.json").is_none(), "{code}");
    }
}
