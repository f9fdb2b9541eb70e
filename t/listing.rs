//! Listing refs: a store that cannot list never shows "no refs" for "refs unknown",
//! `refs.json` naming a ref twice is an error, and refs a folder listing passes over are named.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;

use crate::support::http::serve;
use crate::support::{lake, vid, LakeBuilder, TestEnv};

/// The common lake with a second branch: main at 4, dev at 2, v1 at 1.
fn lake_with_dev() -> LakeBuilder {
    let mut l = lake(4, 1);
    l.branch("dev", 2).refs_json();
    l
}

/// Serves `root` like the plain HTTP server, except that `refs.json` answers 500 with a body.
fn serve_refs_json_broken(root: &Path) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let root = root.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut request = String::new();
                    if reader.read_line(&mut request).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                    }
                    let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let file = root.join(path.trim_start_matches('/'));
                    let reply = if path.ends_with("refs.json") {
                        let body = "internal error";
                        format!("HTTP/1.1 500 Internal Server Error\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
                    } else if let Ok(body) = std::fs::read(&file) {
                        let mut r =
                            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n", body.len())
                                .into_bytes();
                        r.extend_from_slice(&body);
                        r
                    } else {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
                    };
                    if out.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("fdl::http://127.0.0.1:{port}/")
}

#[test]
fn http_lake_without_refs_json_is_fatal_and_prune_keeps_branches() {
    let t = TestEnv::new();
    let l = lake_with_dev();
    t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let url = format!("fdl::{}", server.url);
    t.ok(".", &["clone", "-q", &url, "work"]);
    let before = t.ok("work", &["branch", "-r"]);
    assert!(before.contains("origin/dev"), "{before}");
    std::fs::remove_file(t.path("lake/refs.json")).unwrap();
    let err = t.fails("work", &["fetch", "--prune", "origin"]);
    assert!(
        err.contains("fatal: lake 'http://127.0.0.1:")
            && err.contains("has no refs.json, and this store cannot list refs/"),
        "{err}"
    );
    assert!(err.contains("hint: "), "{err}");
    assert_eq!(t.ok("work", &["branch", "-r"]), before);
    let out = t.git(".", &["ls-remote", &url]);
    assert!(!out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
}

#[test]
fn http_lake_with_unreadable_refs_json_is_fatal() {
    let t = TestEnv::new();
    t.local_lake("lake", &lake_with_dev());
    let url = serve_refs_json_broken(&t.path("lake"));
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.contains("refs.json: cannot be read") && err.contains("500"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

/// Over plain HTTP the refs come from `refs.json`, read once with `fdl.json` and `HEAD`: a
/// clone and an `ls-remote` ask for it once, not again when the refs are listed.
#[test]
fn refs_json_is_read_once_over_http() {
    let t = TestEnv::new();
    t.local_lake("lake", &lake_with_dev());
    let server = serve(&t.path("lake"));
    let url = format!("fdl::{}", server.url);
    for args in [
        vec!["ls-remote", url.as_str()],
        vec!["clone", "-q", "--bare", &url, "c.git"],
    ] {
        let (_, stderr) = t.traced(".", &args);
        let reads = stderr.matches("store: GET refs.json").count();
        assert_eq!(reads, 1, "git {args:?}: {stderr}");
    }
}

#[test]
fn refs_json_naming_one_ref_twice_is_an_error() {
    let t = TestEnv::new();
    let mut l = lake_with_dev();
    l.put(
        "refs.json",
        format!(
            "{{\"refs/heads/main\": \"{}\",\n \"refs/heads/main\": \"{}\"}}\n",
            vid(4),
            vid(3)
        ),
    );
    t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let err = t.fails(".", &["ls-remote", &format!("fdl::{}", server.url)]);
    assert!(
        err.contains("refs.json names refs/heads/main twice, with different versions"),
        "{err}"
    );
}

#[test]
fn refs_dropped_from_a_folder_listing_are_named() {
    use std::os::unix::ffi::OsStrExt;
    let t = TestEnv::new();
    let mut l = lake_with_dev();
    l.put("elsewhere/refs/x", format!("{}\n", vid(3)));
    let url = t.local_lake("lake", &l);
    let heads = t.path("lake/refs/heads");
    let outside = t.path("outside-ref");
    std::fs::write(&outside, format!("{}\n", vid(2))).unwrap();
    let fifo = heads.join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    std::os::unix::fs::symlink(&outside, heads.join("leaks")).unwrap();
    std::fs::write(
        heads.join(std::ffi::OsStr::from_bytes(b"caf\xe9")),
        format!("{}\n", vid(1)),
    )
    .unwrap();
    std::os::unix::fs::symlink(t.path("lake/elsewhere/refs"), heads.join("team")).unwrap();
    let out = t.git(".", &["ls-remote", &url]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("refs/heads/main"), "{stdout}");
    for (name, why) in [
        ("refs/heads/fifo", "not a regular file"),
        ("refs/heads/leaks", "leads outside the lake's root"),
        ("refs/heads/caf", "not UTF-8"),
        ("refs/heads/team/", "a symlink to a folder"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with("warning: ") && l.contains(name) && l.contains(why)),
            "no warning for {name}:\n{stderr}"
        );
    }
}
