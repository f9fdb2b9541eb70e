//! Push hardening (issue 7): refs that Git cannot hold side by side, `--atomic` and tags, the
//! host's entries in every shape of `refs.json`, hostile lock files, what killed pushes and
//! fetches leave behind, and a ref too deep for a folder. Each case with real `git` processes.

use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use crate::support::{vid, LakeAt, LakeBuilder, TestEnv, Where};

/// main: 1..5, tag v1: 2.
fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 5);
    l.branch("main", 5).tag("v1", 2);
    l.refs_json();
    l
}

/// Runs a command, killing it and failing the test if it takes longer than `limit`.
fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}; stderr so far:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// Waits for a helper stopped at a crash point to write its pid, then kills it.
fn kill_at_crash_point(pid_file: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let pid = loop {
        if let Some(p) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "the helper never reached the crash point"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
}

// ---- 1. A ref and refs below it (`r` and `r/x`) -------------------------------------------

const DF_ROUNDS: usize = 12;

/// Two processes race, round after round, to create `refs/heads/rN` and `refs/heads/rN/x`.
fn racing_pushes_of_a_ref_and_a_ref_below_it(place: Where) {
    let mut t = TestEnv::new();
    let lake = t.lake_at(place, "lake", &lake());
    for w in ["a", "b"] {
        t.ok(".", &["clone", "-q", &lake.url, w]);
    }
    let t = Arc::new(t);
    let mut both_refused = 0;
    for round in 0..DF_ROUNDS {
        let barrier = Arc::new(Barrier::new(2));
        let names = [
            format!("refs/heads/r{round}"),
            format!("refs/heads/r{round}/x"),
        ];
        let outs: Vec<Output> = std::thread::scope(|s| {
            let handles: Vec<_> = ["a", "b"]
                .iter()
                .zip(&names)
                .map(|(w, name)| {
                    let (t, barrier) = (t.clone(), barrier.clone());
                    let spec = format!("origin/main:{name}");
                    s.spawn(move || {
                        let cmd = t.command("git", w, &["push", "--porcelain", "origin", &spec]);
                        barrier.wait();
                        run_within(cmd, Duration::from_secs(60))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let ok: Vec<bool> = outs.iter().map(|o| o.status.success()).collect();
        for (o, name) in outs.iter().zip(&names) {
            let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
            assert!(!stderr.contains("panicked"), "{stderr}");
            if !o.status.success() {
                // A folder lake may refuse the file before the racer's ref is in place.
                assert!(
                    stdout.contains("exists in the lake")
                        || (place == Where::Local && stdout.contains("is a folder, not a file")),
                    "{name}: a clear rejection:\n{stdout}\n{stderr}"
                );
            } else {
                assert_eq!(
                    lake.read(name).unwrap().trim(),
                    vid(5),
                    "{name} was told ok"
                );
            }
        }
        assert!(
            !(ok[0] && ok[1]),
            "round {round}: both racers won: {names:?}"
        );
        let held: Vec<bool> = names.iter().map(|n| lake.read(n).is_some()).collect();
        assert!(!(held[0] && held[1]), "round {round}: the lake holds both");
        both_refused += usize::from(!ok[0] && !ok[1]);
    }
    // Everyone can still clone, and refs.json equals the ref files.
    let out = t.git(".", &["clone", "-q", &lake.url, "fresh"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(lake.refs_json(), lake.ref_files());
    eprintln!("{place:?}: {DF_ROUNDS} rounds, {both_refused} with both racers refused");
}

#[test]
fn racing_pushes_of_a_ref_and_a_ref_below_it_never_both_win_s3() {
    racing_pushes_of_a_ref_and_a_ref_below_it(Where::S3)
}

#[test]
fn racing_pushes_of_a_ref_and_a_ref_below_it_never_both_win_local() {
    racing_pushes_of_a_ref_and_a_ref_below_it(Where::Local)
}

#[test]
fn a_lake_holding_a_ref_and_refs_below_it_lists_one_and_clones() {
    let mut l = lake();
    l.branch("r0", 4)
        .branch("r0/x", 3)
        .tag("t", 1)
        .tag("t/y/z", 2);
    l.refs_json();
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "pair", &l);
    let out = t.git(".", &["ls-remote", &lake.url]);
    let (listed, err) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{err}");
    assert!(
        listed.contains("refs/heads/r0\n") && !listed.contains("refs/heads/r0/x"),
        "{listed}"
    );
    assert!(
        listed.contains("refs/tags/t\n") && !listed.contains("refs/tags/t/y/z"),
        "{listed}"
    );
    assert!(
        err.contains("refs/heads/r0 and refs/heads/r0/x cannot both be refs in Git")
            && err.contains("refs/tags/t and refs/tags/t/y/z"),
        "{err}"
    );
    let out = t.git(".", &["clone", &lake.url, "work"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    t.ok("work", &["rev-parse", "origin/r0", "v1", "t"]);
    // A writer refuses to make a third one, in both directions.
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/main/x"]);
    assert!(
        err.contains("cannot create refs/heads/main/x: refs/heads/main exists in the lake"),
        "{err}"
    );
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/r0/x/y"]);
    assert!(err.contains("exists in the lake"), "{err}");
    // The hidden one can be deleted with Git, and the warning goes.
    t.ok(
        "work",
        &["push", "-q", "origin", "--delete", "refs/heads/r0/x"],
    );
    let out = t.git("work", &["fetch", "origin"]);
    assert!(
        out.status.success() && !text(&out.stderr).contains("refs/heads/r0/x"),
        "{}",
        text(&out.stderr)
    );
    // Over HTTP, from refs.json, the same.
    let dir = t.path("http-lake");
    let mut files = l.files.clone();
    files.retain(|k, _| !k.starts_with("refs/"));
    let folder = LakeBuilder { files };
    folder.write_dir(&dir);
    std::fs::write(dir.join("refs.json"), &l.files["refs.json"]).unwrap();
    let server = crate::support::http::serve(&dir);
    let out = t.git(".", &["clone", &format!("fdl::{}", server.url), "via-http"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("refs/heads/r0 and refs/heads/r0/x cannot both be refs"),
        "{}",
        text(&out.stderr)
    );
}

// ---- 2. --atomic never deletes a tag ------------------------------------------------------

#[test]
fn atomic_undo_never_deletes_a_tag_another_push_was_told_exists() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    for w in ["a", "b"] {
        t.ok(".", &["clone", "-q", &url, w]);
    }
    // A live writer holds the lock of a new branch: push A's create of it waits, then fails.
    // (Git sends new refs in the order given, after the refs the lake has.)
    let holder = format!(
        "pid {} on {} since {}\n",
        std::process::id(),
        hostname(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    );
    std::fs::write(t.path("lake/refs/heads/late.lock"), &holder).unwrap();
    let push_a = t
        .command(
            "git",
            "a",
            &[
                "push",
                "--atomic",
                "origin",
                "origin/main~1:refs/tags/release",
                "origin/main~2:refs/heads/late",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(3));
    // Meanwhile B pushes the same tag, and is told it exists.
    let out = t.git("b", &["push", "origin", "origin/main~1:refs/tags/release"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let a = push_a.wait_with_output().unwrap();
    let a_err = text(&a.stderr);
    assert!(!a.status.success(), "{a_err}");
    assert!(
        a_err.contains("held by pid") && a_err.contains("rm '"),
        "who holds the lock, and how to clear it: {a_err}"
    );
    assert!(
        t.path("lake/refs/tags/release").exists(),
        "A's undo deleted the tag B was told exists:\n{a_err}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/tags/release"))
            .unwrap()
            .trim(),
        vid(4)
    );
    assert!(!t.path("lake/refs/heads/late").exists());
}

#[test]
fn atomic_push_of_two_new_tags_is_refused_before_any_write() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let err = t.fails(
        "work",
        &[
            "push",
            "--atomic",
            "origin",
            "origin/main:refs/tags/n1",
            "origin/main:refs/tags/n2",
            "origin/main~1:refs/heads/staging",
        ],
    );
    assert!(
        err.contains("an --atomic push creates at most one tag"),
        "{err}"
    );
    assert!(!t.path("lake/refs/tags/n1").exists() && !t.path("lake/refs/heads/staging").exists());
    // One tag and a branch: all or nothing, the tag written last.
    t.ok(
        "work",
        &[
            "push",
            "-q",
            "--atomic",
            "origin",
            "origin/main:refs/tags/n1",
            "origin/main~1:refs/heads/staging",
        ],
    );
    assert!(t.path("lake/refs/tags/n1").exists() && t.path("lake/refs/heads/staging").exists());
}

// ---- 4. refs.json in every shape keeps the host's entries --------------------------------

fn refs_json_shape_keeps_the_hosts_entries(place: Where) {
    let id = vid(3);
    let main = vid(5);
    let v1 = vid(2);
    for (shape, refs_json) in [
        (
            "refs map",
            format!(
                r#"{{"refs": {{"refs/heads/main": "{main}", "refs/tags/v1": "{v1}", "refs/requests/7": "{id}"}}}}"#
            ),
        ),
        (
            "refs list",
            format!(
                r#"{{"refs": [{{"name": "refs/heads/main", "version": "{main}"}}, {{"name": "refs/tags/v1", "version": "{v1}"}}, {{"name": "refs/requests/7", "version": "{id}"}}]}}"#
            ),
        ),
        (
            "heads and tags",
            format!(
                r#"{{"heads": {{"main": "{main}"}}, "tags": {{"v1": "{v1}"}}, "refs/requests/7": "{id}", "requests": {{"8": "{id}"}}}}"#
            ),
        ),
    ] {
        let mut l = lake();
        l.put("refs.json", refs_json.clone());
        let mut t = TestEnv::new();
        let lake = t.lake_at(place, "lake", &l);
        t.ok(".", &["clone", "-q", &lake.url, "work"]);
        t.ok(
            "work",
            &["push", "-q", "origin", "origin/main:refs/tags/new"],
        );
        let after = lake.read("refs.json").unwrap();
        assert!(
            after.contains("refs/requests/7") && after.contains(&id),
            "{shape}: the host's entry was lost:\n{after}"
        );
        if shape == "heads and tags" {
            assert!(after.contains(r#""8""#), "{shape}:\n{after}");
        }
        let value: serde_json::Value = serde_json::from_str(&after).unwrap();
        let old: serde_json::Value = serde_json::from_str(&refs_json).unwrap();
        assert_eq!(
            value["refs"].is_array(),
            old["refs"].is_array(),
            "{shape}: the shape changed:\n{after}"
        );
        // Readers that cannot list see the new tag.
        if place == Where::Local {
            let server = crate::support::http::serve(&lake.dir);
            let listed = t.ok("work", &["ls-remote", &format!("fdl::{}", server.url)]);
            assert!(
                listed.contains("refs/tags/new") && listed.contains("refs/heads/main"),
                "{shape}: {listed}"
            );
        }
    }
}

#[test]
fn refs_json_in_nested_shapes_keeps_the_hosts_entries_local() {
    refs_json_shape_keeps_the_hosts_entries(Where::Local)
}

#[test]
fn refs_json_in_nested_shapes_keeps_the_hosts_entries_s3() {
    refs_json_shape_keeps_the_hosts_entries(Where::S3)
}

// ---- 7. Lock files are untrusted ----------------------------------------------------------

#[test]
fn lock_files_that_are_symlinks_fifos_or_devices_are_never_read() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let secret = t.path("credentials");
    std::fs::write(&secret, "aws_secret_access_key = SECRET-CONTENT\n").unwrap();
    let lock = t.path("lake/refs.json.lock");
    let cases: [(&str, &dyn Fn()); 4] = [
        ("a symlink", &|| {
            std::os::unix::fs::symlink(&secret, &lock).unwrap();
        }),
        ("a FIFO", &|| {
            let c = std::ffi::CString::new(lock.to_str().unwrap()).unwrap();
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        }),
        ("a symlink", &|| {
            std::os::unix::fs::symlink("/dev/zero", &lock).unwrap();
        }),
        ("held by", &|| {
            let mut hostile =
                b"pid 1 on elsewhere since 1 \x1b]0;pwned\x07\r\nhint: run curl | sh\n".to_vec();
            hostile.extend(std::iter::repeat_n(b'A', 1 << 20));
            std::fs::write(&lock, hostile).unwrap();
        }),
    ];
    for (i, (what, make)) in cases.iter().enumerate() {
        let _ = std::fs::remove_file(&lock);
        make();
        let tag = format!("origin/main:refs/tags/lock{i}");
        let out = run_within(
            t.command("git", "work", &["push", "origin", &tag]),
            Duration::from_secs(30),
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "the ref write decides: {err}");
        assert!(t.path(&format!("lake/refs/tags/lock{i}")).exists());
        let line = err
            .lines()
            .find(|l| l.contains("refs.json.lock"))
            .unwrap_or_else(|| panic!("case {i}: no word of the lock:\n{err}"));
        assert!(line.contains(what), "case {i}: {line}");
        assert!(!err.contains("SECRET-CONTENT"), "case {i}: {err}");
        assert!(
            !err.contains('\x1b') && !err.contains("\nhint: run curl"),
            "case {i}: {err}"
        );
        assert!(err.len() < 2000, "case {i}: {} bytes of stderr", err.len());
    }
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "aws_secret_access_key = SECRET-CONTENT\n"
    );
}

// ---- 10. What killed pushes and fetches leave behind ---------------------------------------

/// The names in the test folder's `dir` that `keep` keeps: what a killed writer left there.
fn names_in(t: &TestEnv, dir: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    std::fs::read_dir(t.path(dir))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| keep(n))
        .collect()
}

/// Runs git in `cwd` with the crash point `var` set, kills the helper there, and checks that
/// git failed.
fn killed_at(t: &TestEnv, cwd: &str, args: &[&str], var: &str) {
    let pid_file = t.path("helper.pid");
    let _ = std::fs::remove_file(&pid_file);
    let mut git = t
        .command("git", cwd, args)
        .env(var, &pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_at_crash_point(&pid_file);
    assert!(!git.wait().unwrap().success());
}

#[test]
fn a_push_killed_holding_the_refs_json_lock_is_repaired_by_the_next_push() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let push = ["push", "origin", "origin/main:refs/tags/killed"];
    killed_at(
        &t,
        "work",
        &push,
        "GIT_REMOTE_FDL_TEST_STOP_WRITING_REFS_JSON",
    );
    let lake = LakeAt {
        url: url.clone(),
        place: Where::Local,
        dir: t.path("lake"),
        bucket: String::new(),
        prefix: String::new(),
    };
    let leftovers = |dir: &str| names_in(&t, dir, |n| n.contains(".lock") || n.contains(".tmp-"));
    // The ref was written; refs.json was not, and its lock and temporary file stay.
    assert!(lake.read("refs/tags/killed").is_some());
    assert!(!lake.refs_json().contains_key("refs/tags/killed"));
    assert_eq!(leftovers("lake").len(), 2, "{:?}", leftovers("lake"));
    let out = t.git("work", &["push", "origin", "origin/main:refs/tags/after"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("removed refs.json.lock, a lock left by pid")
            && err.contains("a process that no longer exists")
            && err.contains("removed 1 temporary file(s) left by a killed write of refs.json"),
        "{err}"
    );
    assert_eq!(lake.refs_json(), lake.ref_files());
    assert!(leftovers("lake").is_empty(), "{:?}", leftovers("lake"));
}

/// A lock appears whole: a push killed while taking one leaves no lock (an empty one, which
/// names no writer, held every later push of the ref for 10 s and then failed it), only a
/// hidden file that is never read as a ref.
#[test]
fn a_push_killed_while_taking_a_lock_leaves_no_lock() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let push = ["push", "-f", "origin", "origin/main~1:refs/heads/main"];
    killed_at(&t, "work", &push, "GIT_REMOTE_FDL_TEST_STOP_TAKING_LOCK");
    assert!(!t.path("lake/refs/heads/main.lock").exists());
    let staged = || names_in(&t, "lake/refs/heads", |n| n.starts_with(".lock-staged-"));
    assert_eq!(staged().len(), 1, "the killed push's staged lock");
    let start = std::time::Instant::now();
    let out = t.git(
        "work",
        &["push", "-f", "origin", "origin/main~2:refs/heads/main"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
    let listed = t.ok("work", &["ls-remote", "origin"]);
    assert!(!listed.contains(".main"), "{listed}");
    // The next writer of main removed it: its writer is gone.
    assert!(staged().is_empty(), "{:?}", staged());
}

/// The staged lock's name does not grow with the ref's: a branch whose lock name just fits
/// the file system is still locked whole, and an empty staged file (a writer killed before it
/// wrote into it) is swept once old.
#[test]
fn a_long_branch_is_locked_whole_and_old_empty_staged_locks_are_swept() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let long = format!("refs/heads/{}", "b".repeat(225));
    let push = ["push", "origin", &format!("origin/main:{long}")];
    killed_at(&t, "work", &push, "GIT_REMOTE_FDL_TEST_STOP_TAKING_LOCK");
    assert!(!t.path(&format!("lake/{long}.lock")).exists());
    let empty = t.path("lake/refs/heads/.lock-staged-4000000-1-0");
    let f = std::fs::File::create(&empty).unwrap();
    f.set_modified(std::time::SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    t.ok(
        "work",
        &["push", "-q", "origin", &format!("origin/main:{long}")],
    );
    let left = names_in(&t, "lake/refs/heads", |n| n.starts_with('.'));
    assert!(left.is_empty(), "{left:?}");
}

/// An empty lock (left by a writer killed before it wrote its name, as earlier versions
/// could) is as old as its file: an old one is explained at once, not waited on.
#[test]
fn an_old_empty_lock_is_explained_at_once() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let lock = t.path("lake/refs/heads/main.lock");
    let f = std::fs::File::create(&lock).unwrap();
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    f.set_modified(two_hours_ago).unwrap();
    let start = std::time::Instant::now();
    let err = t.fails(
        "work",
        &["push", "-f", "origin", "origin/main~1:refs/heads/main"],
    );
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
    assert!(
        err.contains("held by an unknown writer, for 7")
            && err.contains("probably left by a push that crashed")
            && err.contains("rm '"),
        "{err}"
    );
}

#[test]
fn a_fetch_killed_while_writing_its_pack_leaves_nothing_behind() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["init", "-q", "--bare", "repo.git"]);
    t.ok("repo.git", &["remote", "add", "origin", &url]);
    let fetch = ["fetch", "origin"];
    killed_at(
        &t,
        "repo.git",
        &fetch,
        "GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK",
    );
    let temporaries = || names_in(&t, "repo.git/objects/pack", |n| n.starts_with("tmp_"));
    assert_eq!(temporaries().len(), 1, "{:?}", temporaries());
    let out = t.git("repo.git", &["fetch", "origin"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("left by a fetch (pid") && err.contains("killed while writing"),
        "{err}"
    );
    assert!(temporaries().is_empty(), "{:?}", temporaries());
    t.ok("repo.git", &["fsck", "--no-progress"]);
    assert_eq!(
        t.ok("repo.git", &["rev-list", "--count", "origin/main"]),
        "5\n"
    );
}

// ---- 11. A ref too deep for a folder or a key --------------------------------------------

fn folders_below(dir: &std::path::Path) -> usize {
    let mut n = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                n += 1;
                stack.push(e.path());
            }
        }
    }
    n
}

#[test]
fn a_push_of_a_ref_3000_levels_deep_leaves_no_folder_and_later_conflicts_are_plain() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let heads = t.path("lake/refs/heads");
    let before = folders_below(&heads);
    let deep = format!("refs/heads/{}b", "a/".repeat(3000));
    let err = t.fails("work", &["push", "origin", &format!("origin/main:{deep}")]);
    assert!(
        err.contains("too long for this folder's file system"),
        "{err}"
    );
    assert!(!err.contains("unknown"), "{err}");
    assert_eq!(folders_below(&heads), before, "folders left behind");
    // The first folder's name is free for a ref.
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/a"],
    );
    // Empty folders left by anything else are cleared, as Git does.
    std::fs::create_dir_all(heads.join("e/e/e/e")).unwrap();
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/e"],
    );
    // A folder that holds something is a plain refusal, never an unknown outcome.
    std::fs::create_dir_all(heads.join("k")).unwrap();
    std::fs::write(heads.join("k/.keep"), "").unwrap();
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/k"]);
    assert!(
        err.contains("[remote rejected]")
            && err.contains("is a folder")
            && !err.contains("unknown"),
        "{err}"
    );
    // A ref in the way is named, in both directions.
    let err = t.fails("work", &["push", "origin", "origin/main:refs/heads/a/x"]);
    assert!(
        err.contains("cannot create refs/heads/a/x: refs/heads/a exists in the lake"),
        "{err}"
    );
}

#[test]
fn a_push_of_a_ref_3000_levels_deep_to_s3_is_a_plain_refusal() {
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "deep", &lake());
    t.ok(".", &["clone", "-q", &lake.url, "work"]);
    let deep = format!("refs/heads/{}b", "a/".repeat(3000));
    let err = t.fails("work", &["push", "origin", &format!("origin/main:{deep}")]);
    assert!(
        err.contains("too long: its key is") && !err.contains("unknown"),
        "{err}"
    );
    assert_eq!(lake.ref_files().len(), 2, "{:?}", lake.ref_files().keys());
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main:refs/heads/a"],
    );
}

/// A host's fields beside a ref's version in refs.json (an approval, say) stay while the ref
/// holds that version, whatever else a push changes; the ref that moves gets a fresh entry.
#[test]
fn a_hosts_fields_beside_a_refs_version_survive_pushes_of_other_refs() {
    let t = TestEnv::new();
    let mut l = lake();
    let entry = |n: u64| format!(r#"{{"version": "{}", "approved_by": "host"}}"#, vid(n));
    let refs_json = format!(
        r#"{{"refs/heads/main": {}, "refs/tags/v1": {}}}"#,
        entry(5),
        entry(2)
    );
    l.put("refs.json", refs_json.into_bytes());
    let url = t.local_lake("lake", &l);
    t.ok(".", &["clone", "-q", &url, "work"]);
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main~1:refs/tags/v4"],
    );
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path("lake/refs.json")).unwrap()).unwrap();
    assert_eq!(after["refs/heads/main"]["approved_by"], "host", "{after}");
    assert_eq!(after["refs/tags/v1"]["approved_by"], "host", "{after}");
    assert_eq!(after["refs/tags/v4"], serde_json::json!(vid(4)), "{after}");
    // main moves: its approval was of version 5, not of the version it holds now.
    t.ok(
        "work",
        &["push", "-q", "-f", "origin", "origin/main~2:main"],
    );
    let after: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.path("lake/refs.json")).unwrap()).unwrap();
    assert_eq!(
        after["refs/heads/main"],
        serde_json::json!({ "version": vid(3) }),
        "{after}"
    );
    assert_eq!(after["refs/tags/v1"]["approved_by"], "host", "{after}");
}

/// A refs.json larger than a push reads (64 MiB) no longer stops every push: the refs are
/// written and refs.json is left as it is, with a warning (it was `fatal:` and nothing moved).
#[test]
fn a_refs_json_too_large_to_rewrite_leaves_it_and_still_pushes() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let padding = "x".repeat((64 << 20) + 1);
    let huge = format!(r#"{{"refs/heads/main": "{}", "pad": "{padding}"}}"#, vid(5));
    std::fs::write(t.path("lake/refs.json"), &huge).unwrap();
    let out = t.git("work", &["push", "origin", "origin/main~1:refs/tags/v4"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("refs.json: larger than the 67108864-byte limit for this file")
            && err.contains("this push writes the refs and leaves refs.json as it is"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/tags/v4"))
            .unwrap()
            .trim(),
        vid(4)
    );
    assert_eq!(
        std::fs::metadata(t.path("lake/refs.json")).unwrap().len(),
        huge.len() as u64
    );
}

/// fsck reports a refs.json too large to read as one problem and checks the rest.
#[test]
fn fsck_reports_a_refs_json_too_large_to_read_as_a_problem() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    let padding = "x".repeat((64 << 20) + 1);
    let huge = format!(r#"{{"refs/heads/main": "{}", "pad": "{padding}"}}"#, vid(5));
    std::fs::write(t.path("lake/refs.json"), &huge).unwrap();
    let out = t
        .command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", &["fsck", &url])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "error: refs.json: larger than the 67108864-byte limit for this file\n"
    );
    assert!(text(&out.stderr).contains("Checked 2 refs and 5 versions: 1 problem"));
}
