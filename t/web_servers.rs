//! Issue 46: the plain-HTTP road on the web servers people really serve a lake's folder with,
//! each started by the test: Python's `http.server` (no ranges: a range is answered with the
//! whole file; validators are `Last-Modified` only) and nginx (ranges, strong ETags). Every
//! step a reader takes there: `ls-remote` outside a repository, a clone through the lake's
//! packs (trusted or not), `git fsck`, the helper's `fsck`, `catalog`, and a fetch of versions
//! written after the clone. Nothing may be set aside with a warning, and every commit is the
//! one the versions map to read one by one.

use crate::packs::{pack, read_one_by_one};
use crate::support::{helper, lake, parse_ls_remote, text, TestEnv};

/// A web server serving a folder, for as long as it is held.
enum Server {
    Python(crate::support::http::PythonHttp),
    Nginx(crate::support::nginx::Nginx),
}

impl Server {
    fn start(kind: &str, t: &TestEnv, root: &str) -> Server {
        match kind {
            "python" => Server::Python(crate::support::http::python_http_server(&t.path(root))),
            _ => Server::Nginx(crate::support::nginx::serve(
                &t.path(root),
                &t.path("nginx"),
            )),
        }
    }

    fn url(&self) -> &str {
        match self {
            Server::Python(p) => &p.url,
            Server::Nginx(n) => &n.url,
        }
    }
}

/// Lines of stderr that warn or fail (the helper's `warning:`, `error:`, `fatal:`).
fn complaints(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            ["warning:", "error:", "fatal:"]
                .iter()
                .any(|w| l.contains(w))
        })
        .collect()
}

/// `git <args>` in `cwd`, which must succeed and neither warn nor fail on stderr.
fn quietly(t: &TestEnv, cwd: &str, args: &[&str], what: &str) {
    let out = t.git(cwd, args);
    let said = text(&out.stderr);
    assert!(out.status.success(), "{what}: {said}");
    assert_eq!(complaints(&said), Vec::<&str>::new(), "{what}");
}

/// The branch and tag refs of a clone's remote-tracking view, as `ls-remote` names them
/// (object ID, then name).
fn fetched_refs(t: &TestEnv, dir: &str) -> Vec<(String, String)> {
    let out = t.ok(
        dir,
        &[
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            "refs/remotes/origin/",
            "refs/tags/",
        ],
    );
    let mut refs: Vec<(String, String)> = out
        .lines()
        .filter(|l| !l.ends_with("/HEAD"))
        .map(|l| {
            let (id, name) = l.split_once(' ').unwrap();
            let name = name.replace("refs/remotes/origin/", "refs/heads/");
            (id.to_string(), name)
        })
        .collect();
    refs.sort();
    refs
}

/// `expected` without `HEAD`, sorted, as [`fetched_refs`] gives them.
fn branches_and_tags(expected: &[(String, String)]) -> Vec<(String, String)> {
    let mut refs: Vec<(String, String)> = expected
        .iter()
        .filter(|(_, name)| name != "HEAD")
        .cloned()
        .collect();
    refs.sort();
    refs
}

fn the_plain_http_road(kind: &str) {
    let t = TestEnv::new();
    let mut l = lake(6, 2);
    let folder = t.local_lake("site", &l);
    pack(&t, &folder);
    let expected = read_one_by_one(&t, &folder);
    let server = Server::start(kind, &t, "site");
    let url = format!("fdl::{}", server.url());

    let listed = t.git(".", &["ls-remote", &url]);
    let said = text(&listed.stderr);
    assert!(listed.status.success(), "{kind}: ls-remote: {said}");
    assert_eq!(complaints(&said), Vec::<&str>::new(), "{kind}: ls-remote");
    let mut got = parse_ls_remote(&text(&listed.stdout));
    got.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(got, want, "{kind}: ls-remote");

    for trust in ["false", "true"] {
        let dir = format!("clone-{trust}");
        let config = format!("remote.origin.fdlTrustPacks={trust}");
        let what = format!("{kind}, trust {trust}: clone");
        quietly(&t, ".", &["clone", "-q", "-c", &config, &url, &dir], &what);
        assert_eq!(fetched_refs(&t, &dir), branches_and_tags(&expected));
        t.ok(&dir, &["fsck", "--no-dangling"]);

        let checked = helper(&t, &dir, &["fsck", "--catalogs", "origin"]);
        let said = text(&checked.stderr);
        assert!(checked.status.success(), "{kind}: fsck: {said}");
        assert_eq!(text(&checked.stdout), "", "{kind}: fsck found problems");

        let out = helper(&t, &dir, &["catalog", "v1", "-o", "v1.duckdb"]);
        let said = text(&out.stderr);
        assert!(
            out.status.success(),
            "{kind}, trust {trust}: catalog: {said}"
        );
        let catalog = std::fs::read(t.path(&dir).join("v1.duckdb")).unwrap();
        assert_eq!(catalog, b"test catalog of version 2\n", "{kind}");
    }

    // Versions written after the clone (the packs stay as they were) come with a fetch.
    l.chain(7, 9);
    l.branch("main", 9).refs_json();
    l.write_dir(&t.path("site"));
    let expected = read_one_by_one(&t, &folder);
    for trust in ["false", "true"] {
        let dir = format!("clone-{trust}");
        let what = format!("{kind}, trust {trust}: fetch");
        quietly(&t, &dir, &["fetch", "-q", "origin"], &what);
        assert_eq!(fetched_refs(&t, &dir), branches_and_tags(&expected));
        t.ok(&dir, &["fsck", "--no-dangling"]);
    }
}

/// Python's `http.server` answers a range with the whole file (status 200): the helper takes
/// each file whole from then on, on every step, and warns of nothing.
#[test]
fn a_lake_served_by_pythons_http_server_reads_on_every_step() {
    the_plain_http_road("python");
}

/// nginx answers ranges (206) with strong ETags: packs and catalogs come in parts.
#[test]
fn a_lake_served_by_nginx_reads_on_every_step() {
    the_plain_http_road("nginx");
}
