//! The commands for humans under attack (issue 24): `catalog -o` into devices, FIFOs and a full
//! disk, a catalog rewritten in the lake after a clone, `fsck <address>` inside a clone,
//! relative remotes from a subfolder, and output closed, full or interrupted.

use std::process::{Output, Stdio};

use sha2::{Digest, Sha256};

use crate::support::{vid, LakeBuilder, TestEnv, Where};

fn helper(t: &TestEnv, cwd: &str, args: &[&str]) -> Output {
    t.command(env!("CARGO_BIN_EXE_git-remote-fdl"), cwd, args)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Versions 1..=4 in a chain, main at 4, tag v1 at 2, refs.json written.
fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 4);
    l.branch("main", 4).tag("v1", 2).refs_json();
    l
}

/// A copy of a character device (`mknod`, as root), or where that is not allowed a link to it:
/// either way the path is not a regular file, and must stay so.
fn device_copy(t: &TestEnv, name: &str, of: &str, minor: &str) -> std::path::PathBuf {
    let path = t.path(name);
    let made = std::process::Command::new("mknod")
        .arg(&path)
        .args(["c", "1", minor])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        std::os::unix::fs::symlink(of, &path).unwrap();
    }
    path
}

/// Reads a FIFO on a thread of its own; the function returned gives what it read, failing the
/// test if no writer came within 30 s (a FIFO replaced by a file never sees one).
fn read_all(fifo: std::path::PathBuf) -> impl FnOnce() -> Vec<u8> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(std::fs::read(fifo).unwrap()));
    move || {
        rx.recv_timeout(std::time::Duration::from_secs(30))
            .expect("nothing was written into the FIFO")
    }
}

fn is_char_device(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path)
        .unwrap()
        .file_type()
        .is_char_device()
}

fn is_fifo(path: &std::path::Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::symlink_metadata(path)
        .unwrap()
        .file_type()
        .is_fifo()
}

/// What is in `dir` besides the work tree's own files.
fn written_in(t: &TestEnv, dir: &str) -> Vec<String> {
    std::fs::read_dir(t.path(dir))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| ![".git", "dataset.json", "version.json"].contains(&n.as_str()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect()
}

// ---- 2. catalog -o into devices and FIFOs --------------------------------------------------

#[test]
fn catalog_into_a_device_writes_into_it_and_never_replaces_it() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let null = device_copy(&t, "null", "/dev/null", "3");
    let out = helper(&t, "work", &["catalog", "v1", "-o", null.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(is_char_device(&null), "the device was replaced");
    assert_eq!(
        text(&out.stderr),
        format!(
            "Wrote the catalog of version {} to {} (26 bytes, sha256 {} as in version.json)\n",
            vid(2),
            null.display(),
            sha256(b"test catalog of version 2\n")
        )
    );
    // No file to attach.
    assert_eq!(text(&out.stdout), "");
    // A full device is a write error that names the output, not the lake.
    let full = device_copy(&t, "full", "/dev/full", "7");
    let out = helper(&t, "work", &["catalog", "v1", "-o", full.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        text(&out.stderr),
        format!(
            "fatal: cannot write {}: No space left on device\n",
            full.display()
        )
    );
    assert!(is_char_device(&full), "the device was replaced");
    assert_eq!(
        written_in(&t, "."),
        ["full", "home", "lake", "null", "work"]
    );
}

#[test]
fn catalog_into_a_fifo_streams_and_a_bad_digest_says_what_was_sent() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let fifo = t.path("pipe");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let reader = read_all(fifo.clone());
    let out = helper(&t, "work", &["catalog", "v1", "-o", fifo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(reader(), b"test catalog of version 2\n");
    assert!(is_fifo(&fifo), "the FIFO was replaced");
    // A catalog that is not the one its record names: the reader got the bytes, and is told.
    std::fs::write(
        t.path(&format!("lake/versions/{}/ducklake.duckdb", vid(2))),
        b"not the catalog",
    )
    .unwrap();
    let reader = read_all(fifo.clone());
    let out = helper(&t, "work", &["catalog", "v1", "-o", fifo.to_str().unwrap()]);
    assert_eq!(reader(), b"not the catalog");
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        text(&out.stderr),
        format!(
            "fatal: version {}'s ducklake.duckdb has sha256 {}, but its version.json says {}\n\
             hint: the catalog was damaged or replaced in the lake; {} already received 15 unverified bytes: do not use them\n",
            vid(2),
            sha256(b"not the catalog"),
            sha256(b"test catalog of version 2\n"),
            fifo.display()
        )
    );
    assert!(is_fifo(&fifo));
}

/// Standard output named as a path, never `/dev/stdout` itself: a helper that replaced its
/// target would replace the system's (as root), so a link to it stands in.
#[test]
fn catalog_into_dev_stdout_writes_the_catalog_alone_to_standard_output() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::os::unix::fs::symlink("/dev/stdout", t.path("stdout")).unwrap();
    let link = t.path("stdout").display().to_string();
    for output in [link.as_str(), "/dev/fd/1"] {
        let out = helper(&t, "work", &["catalog", "origin/main", "-o", output]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout), "test catalog of version 4\n", "{output}");
        assert_eq!(written_in(&t, "work"), Vec::<String>::new());
        let link = std::fs::symlink_metadata(t.path("stdout")).unwrap();
        assert!(
            link.file_type().is_symlink(),
            "{output}: the link was replaced"
        );
    }
}

// ---- 15c. A full disk blames the output ----------------------------------------------------

#[test]
fn catalog_on_a_full_disk_blames_the_output_file_not_the_lake() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::fs::create_dir(t.path("work/out")).unwrap();
    // A file system of one page, filled: in a mount namespace of the command's own (root, or
    // a user namespace), so nothing is mounted for anyone else.
    let script = "mount -t tmpfs -o size=4k tmpfs out && head -c 4096 /dev/zero > out/fill; \
                  exec \"$0\" \"$@\"";
    let out = t
        .command(
            "unshare",
            "work",
            &[
                "-rm",
                "sh",
                "-c",
                script,
                env!("CARGO_BIN_EXE_git-remote-fdl"),
                "catalog",
                "origin/main",
                "-o",
                "out/sales.duckdb",
            ],
        )
        .output()
        .unwrap();
    assert_eq!(
        text(&out.stderr),
        "fatal: cannot write out/sales.duckdb: No space left on device\n"
    );
    assert_eq!(out.status.code(), Some(128));
}

// ---- 3. catalog checks the commit's own version.json ---------------------------------------

#[test]
fn catalog_refuses_a_version_rewritten_after_the_clone_naming_both_digests() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake());
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let v4 = vid(4);
        let old = sha256(b"test catalog of version 4\n");
        let new = sha256(b"a rewritten catalog\n");
        let record = at.read(&format!("versions/{v4}/version.json")).unwrap();
        assert!(record.contains(&old));
        at.write(
            &format!("versions/{v4}/version.json"),
            &record.replace(&old, &new),
        );
        at.write(
            &format!("versions/{v4}/ducklake.duckdb"),
            "a rewritten catalog\n",
        );
        let out = helper(&t, "work", &["catalog", "origin/main"]);
        assert_eq!(out.status.code(), Some(128), "{place:?}");
        let lake = at.url.trim_start_matches("fdl::");
        let head = t.ok("work", &["rev-parse", "origin/main"]);
        assert_eq!(
            text(&out.stderr),
            format!(
                "fatal: version {v4} was rewritten in lake '{lake}': commit {}'s version.json gives its ducklake.duckdb sha256 {old}, the lake's version.json now gives {new}\n\
                 hint: versions are never rewritten: nothing was written; check the lake with: git-remote-fdl fsck <remote>\n",
                &head[..12]
            ),
            "{place:?}"
        );
        assert_eq!(written_in(&t, "work"), Vec::<String>::new(), "{place:?}");
    }
}

// ---- 15a. Ctrl-C during a fetch's pack -----------------------------------------------------

/// Waits for the helper to stop at its crash point, then sends it `signal`.
fn signal_at_crash_point(pid_file: &std::path::Path, signal: i32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let pid = loop {
        if let Some(p) = std::fs::read_to_string(pid_file)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        {
            break p;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the helper never reached the crash point"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

#[test]
fn a_fetch_interrupted_while_writing_its_pack_removes_its_temporary_files() {
    for (signal, name) in [
        (libc::SIGINT, "SIGINT"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGHUP, "SIGHUP"),
    ] {
        let t = TestEnv::new();
        let url = t.local_lake("lake", &lake());
        t.ok(".", &["init", "-q", "--bare", "repo.git"]);
        t.ok("repo.git", &["remote", "add", "origin", &url]);
        let pid_file = t.path("helper.pid");
        let mut git = t
            .command("git", "repo.git", &["fetch", "origin"])
            .env("GIT_REMOTE_FDL_TEST_STOP_WRITING_PACK", &pid_file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        signal_at_crash_point(&pid_file, signal);
        assert!(!git.wait().unwrap().success(), "{name}");
        let left: Vec<String> = std::fs::read_dir(t.path("repo.git/objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, Vec::<String>::new(), "{name}: left behind");
    }
}

// ---- 15b. Closed and full output -----------------------------------------------------------

/// Runs the helper with its standard output's reading end already closed (`| head -0`).
fn into_closed_pipe(t: &TestEnv, cwd: &str, args: &[&str]) -> Output {
    let mut child = t
        .command(env!("CARGO_BIN_EXE_git-remote-fdl"), cwd, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

fn into_dev_full(t: &TestEnv, cwd: &str, args: &[&str], stream: &str) -> Output {
    let full = || {
        Stdio::from(
            std::fs::File::options()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
    };
    let mut c = t.command(env!("CARGO_BIN_EXE_git-remote-fdl"), cwd, args);
    match stream {
        "stdout" => c.stdout(full()).stderr(Stdio::piped()),
        _ => c.stdout(Stdio::piped()).stderr(full()),
    };
    c.output().unwrap()
}

#[test]
fn a_closed_pipe_ends_ls_and_fsck_quietly_as_git_does() {
    let t = TestEnv::new();
    let mut l = lake();
    // refs.json lacks a tag: one problem for fsck to print.
    l.set_ref("refs/tags/stale", &vid(1));
    let url = t.local_lake("lake", &l);
    for args in [vec!["ls", url.as_str()], vec!["fsck", url.as_str()]] {
        let out = into_closed_pipe(&t, ".", &args);
        // Git's `git log | head -0`: killed by SIGPIPE, which a shell shows as 141.
        assert_eq!(out.status.code(), Some(141), "{args:?}");
        assert_eq!(text(&out.stderr), "", "{args:?}");
    }
}

#[test]
fn a_full_disk_under_stdout_or_stderr_is_an_error_naming_the_output_never_a_bug() {
    let t = TestEnv::new();
    let mut l = lake();
    // refs.json lacks a tag: one problem for fsck to print.
    l.set_ref("refs/tags/stale", &vid(1));
    let url = t.local_lake("lake", &l);
    for args in [vec!["ls", url.as_str()], vec!["fsck", url.as_str()]] {
        let out = into_dev_full(&t, ".", &args, "stdout");
        assert_eq!(
            text(&out.stderr),
            "fatal: write failure on standard output: No space left on device\n",
            "{args:?}"
        );
        assert_eq!(out.status.code(), Some(128), "{args:?}");
    }
    // A full stderr is passed over, as Git does: the catalog is written all the same.
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = into_dev_full(&t, "work", &["catalog", "v1", "-o", "v1.duckdb"], "stderr");
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).starts_with("INSTALL ducklake;"));
    assert_eq!(
        std::fs::read(t.path("work/v1.duckdb")).unwrap(),
        b"test catalog of version 2\n"
    );
    // And a fatal error with a full stderr still ends with Git's status, not an abort.
    let out = into_dev_full(&t, "work", &["catalog", "no-such-ref"], "stderr");
    assert_eq!(out.status.code(), Some(128));
}

// ---- 7. fsck <address> inside a clone ------------------------------------------------------

/// Rewrites version 3's record in the lake, as an attacker would after a clone.
fn rewrite_version_3(at: &crate::support::LakeAt) {
    let v3 = vid(3);
    let record = at.read(&format!("versions/{v3}/version.json")).unwrap();
    at.write(
        &format!("versions/{v3}/version.json"),
        &record.replace("Load batch 3", "Load batch 3, edited"),
    );
}

fn rewritten_line(t: &TestEnv, cwd: &str) -> String {
    let old3 = t.ok(cwd, &["rev-parse", "origin/main~1"]);
    format!(
        "error: version {} was rewritten in the lake: the repository holds commit {} for it, the lake now gives ",
        vid(3),
        old3.trim()
    )
}

#[test]
fn fsck_of_a_remotes_address_inside_a_clone_finds_a_rewritten_version() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake());
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        rewrite_version_3(&at);
        let expected = rewritten_line(&t, "work");
        let bare = at.url.trim_start_matches("fdl::").to_string();
        let mut addresses = vec![at.url.clone(), bare.clone()];
        match place {
            // The same folder by another path: a trailing slash, a relative path.
            Where::Local => addresses.extend([format!("{bare}/"), "../lake".to_string()]),
            _ => addresses.push(bare.trim_end_matches('/').to_string()),
        }
        for address in addresses {
            let out = helper(&t, "work", &["fsck", "-q", &address]);
            assert_eq!(out.status.code(), Some(1), "{place:?} {address}");
            assert!(
                text(&out.stdout).starts_with(&expected),
                "{place:?} {address}: {}",
                text(&out.stdout)
            );
        }
    }
}

#[test]
fn fsck_of_a_lake_no_remote_names_says_rewrites_cannot_be_seen() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    let other = t.local_lake("other", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = helper(&t, "work", &["fsck", &other]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        text(&out.stderr),
        "note: this repository has no remote for this lake: versions rewritten and tags moved \
         since a fetch cannot be seen without one (run 'git-remote-fdl fsck <remote>' in a \
         clone of the lake)\nChecked 2 refs and 4 versions: 0 problems\n"
    );
}

// ---- 14. Relative remotes and file:// paths ------------------------------------------------

#[test]
fn a_relative_remote_is_resolved_from_the_top_of_the_work_tree_in_a_subfolder() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["commit", "-q", "--allow-empty", "-m", "local"]);
    t.ok("work", &["remote", "add", "origin", "fdl::../lake"]);
    t.ok("work", &["fetch", "-q", "origin"]);
    // What ../lake names from the subfolder: another lake, which must not be checked.
    t.local_lake("work/lake", &{
        let mut l = LakeBuilder::new();
        l.chain(1, 1);
        l.branch("main", 1).refs_json();
        l
    });
    std::fs::create_dir_all(t.path("work/sub/deeper")).unwrap();
    let out = helper(&t, "work/sub/deeper", &["fsck", "origin"]);
    assert_eq!(
        (out.status.code(), text(&out.stderr)),
        (
            Some(0),
            "Checked 2 refs and 4 versions: 0 problems\n".to_string()
        )
    );
    let out = helper(
        &t,
        "work/sub",
        &["catalog", "origin/main", "-o", "c.duckdb"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(t.path("work/sub/c.duckdb")).unwrap(),
        b"test catalog of version 4\n"
    );
    let at = crate::support::LakeAt {
        url: url.clone(),
        place: Where::Local,
        dir: t.path("lake"),
        bucket: String::new(),
        prefix: String::new(),
    };
    rewrite_version_3(&at);
    let out = helper(&t, "work/sub/deeper", &["fsck", "-q", "origin"]);
    assert!(
        text(&out.stdout).starts_with(&rewritten_line(&t, "work")),
        "{}",
        text(&out.stdout)
    );
    // A bare repository: Git runs the helper where the command runs, and so does fsck.
    t.ok(".", &["init", "-q", "--bare", "repo.git"]);
    t.ok("repo.git", &["remote", "add", "origin", "fdl::../lake"]);
    t.ok("repo.git", &["fetch", "-q", "origin"]);
    let out = helper(&t, "repo.git", &["fsck", "origin"]);
    assert_eq!(
        (out.status.code(), text(&out.stderr)),
        (
            Some(0),
            "Checked 2 refs and 4 versions: 0 problems\n".to_string()
        )
    );
}

#[test]
fn a_file_url_through_a_link_and_dot_dot_reads_what_the_system_resolves() {
    let t = TestEnv::new();
    // d/link -> real/inner, so d/link/../lake is real/lake to the system, d/lake as text.
    t.local_lake("real/lake", &lake());
    std::fs::create_dir_all(t.path("real/inner")).unwrap();
    std::fs::create_dir_all(t.path("d")).unwrap();
    std::os::unix::fs::symlink(t.path("real/inner"), t.path("d/link")).unwrap();
    t.local_lake("d/lake", &{
        let mut l = LakeBuilder::new();
        l.chain(1, 1);
        l.branch("decoy", 1).refs_json();
        l
    });
    let path = format!("{}/d/link/../lake", t.dir.path().display());
    let by_path = helper(&t, ".", &["ls", &format!("fdl::{path}")]);
    let by_url = helper(&t, ".", &["ls", &format!("fdl::file://{path}")]);
    assert!(text(&by_path.stdout).contains("refs/heads/main"));
    assert_eq!(text(&by_url.stdout), text(&by_path.stdout));
    // Git's own file:// remotes agree.
    t.ok(".", &["init", "-q", "--bare", "real/inner/../bare.git"]);
    let git_path = format!("{}/d/link/../bare.git", t.dir.path().display());
    assert!(t
        .git(".", &["ls-remote", &format!("file://{git_path}")])
        .status
        .success());
}

/// The helper's own warnings (here: `--depth` ignored) on a full stderr are passed over, as
/// Git passes over its own: the fetch still succeeds, no panic ends it.
#[test]
fn a_fetch_whose_stderr_is_full_still_fetches_with_its_warnings_passed_over() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let mut l = lake();
    l.version(9, &[4], "nine");
    l.branch("main", 9);
    l.write_dir(&t.path("lake"));
    let full = std::fs::File::options()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = t
        .command("git", "work", &["fetch", "--depth=1", "origin"])
        .stderr(Stdio::from(full))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", out.status);
    let log = t.ok("work", &["log", "-1", "--format=%s", "origin/main"]);
    assert_eq!(log, "nine\n");
}

// ---- catalog statements a lake or a path cannot steer (issue 30, item 9) ----------------------

/// `fdl.json`'s `data_dir` went raw into the printed SQL: a newline started a statement of the
/// lake's own (`COPY (SELECT 42) TO ...`) when the output was run a line at a time; `..`, a
/// scheme or a leading `/` pointed `DATA_PATH` outside the lake. Each is refused before the
/// catalog is written, naming the lake and the field.
fn a_data_dir_outside_the_lake_or_with_a_newline_is_refused_before_writing(place: Where) {
    for (data_dir, why) in [
        (
            "data/\nCOPY (SELECT 42) TO 'owned.csv';\n",
            "holds a control character",
        ),
        ("../elsewhere/", "leaves the lake's root"),
        ("s3://other-bucket/data/", "names a scheme"),
        ("/etc/", "is absolute"),
    ] {
        let mut t = TestEnv::new();
        let mut l = lake();
        let fdl_json = serde_json::json!({"fdl": "0.1", "data_dir": data_dir}).to_string();
        l.put("fdl.json", fdl_json);
        let at = t.lake_at(place, "lake", &l);
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let out = helper(&t, "work", &["catalog", "v1"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{data_dir:?}: {err}");
        assert!(
            err.starts_with("fatal: lake '")
                && err.contains("fdl.json's data_dir")
                && err.contains(why),
            "{data_dir:?}: {err}"
        );
        assert!(err.contains("nothing was written"), "{err}");
        assert_eq!(err.lines().count(), 2, "one fatal line and its hint: {err}");
        assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
        assert!(
            !t.path("work/.git/fdl/catalogs").exists(),
            "{data_dir:?}: a catalog was written"
        );
    }
}

#[test]
fn a_data_dir_outside_the_lake_or_with_a_newline_is_refused_before_writing_in_a_folder() {
    a_data_dir_outside_the_lake_or_with_a_newline_is_refused_before_writing(Where::Local);
}

#[test]
fn a_data_dir_outside_the_lake_or_with_a_newline_is_refused_before_writing_on_s3() {
    a_data_dir_outside_the_lake_or_with_a_newline_is_refused_before_writing(Where::S3);
}

/// A catalog's path holding a newline (a repository cloned into `a\nb`, or `-o` given one) is
/// refused as well: no statement could name it without starting a line of its own.
#[test]
fn a_catalog_path_with_a_newline_is_refused_before_writing() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake());
    t.ok(".", &["clone", "-q", &url, "work\nATTACH 'x'"]);
    let out = helper(&t, "work\nATTACH 'x'", &["catalog", "v1"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(
        err.contains("holds a control character") && err.contains("\\n"),
        "{err}"
    );
    let catalogs = t.path("work\nATTACH 'x'/.git/fdl/catalogs");
    let written = std::fs::read_dir(&catalogs).map_or(0, |d| d.count());
    assert_eq!(written, 0, "a catalog was written in {catalogs:?}");
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = helper(&t, "work", &["catalog", "v1", "-o", "new\nline.duckdb"]);
    assert_eq!(out.status.code(), Some(128), "{}", text(&out.stderr));
    assert!(!t.path("work/new\nline.duckdb").exists());
}
