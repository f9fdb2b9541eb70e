//! `git-remote-fdl catalog -o` into devices, FIFOs, `/dev/stdout` and a full disk; a version
//! rewritten after the clone; and `data_dir` or a catalog path that would leave the lake or
//! start a statement of its own, refused before anything is written.

use std::process::Stdio;

use sha2::{Digest, Sha256};

use crate::support::{helper, lake, text, vid, TestEnv, Where};

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

#[test]
fn catalog_into_a_device_writes_into_it_and_never_replaces_it() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
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
    let url = t.local_lake("lake", &lake(4, 2));
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
    let url = t.local_lake("lake", &lake(4, 2));
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

#[test]
fn catalog_on_a_full_disk_blames_the_output_file_not_the_lake() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(4, 2));
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

#[test]
fn catalog_refuses_a_version_rewritten_after_the_clone_naming_both_digests() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake(4, 2));
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
        let mut l = lake(4, 2);
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
    let url = t.local_lake("lake", &lake(4, 2));
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
