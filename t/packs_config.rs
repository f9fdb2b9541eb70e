//! Issue 22: which readers take a lake's packs, as Git's configuration says: `git ls-remote`
//! outside any repository, `fdlUsePacks` and `git -c`, `fdlTrustPacks` over plain HTTP and
//! from a local folder, and the remote's booleans as `pack` reads them.

use crate::packs::{
    clone, pack, pack_names, read_one_by_one, requests_traced, rewrite_version, same_refs,
};
use crate::support::{helper, lake, parse_ls_remote, TestEnv, Where};

/// `git ls-remote <url>` outside any repository, traced: what it listed, what it said, and how
/// many requests it made.
fn ls_remote_outside(t: &TestEnv, url: &str) -> (Vec<(String, String)>, String, u64) {
    let out = t
        .command("git", ".", &["ls-remote", url])
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "ls-remote {url}: {stderr}");
    let requests = requests_traced(&stderr);
    let listed = parse_ls_remote(&String::from_utf8_lossy(&out.stdout));
    let said = stderr
        .lines()
        .filter(|l| !l.contains("] "))
        .collect::<Vec<_>>()
        .join("\n");
    (listed, said, requests)
}

/// The user's cache folder (`~/.cache/git-remote-fdl`), every path under it.
fn user_cache_files(t: &TestEnv) -> Vec<String> {
    let root = t.path("home/.cache/git-remote-fdl");
    let mut out = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            out.push(path.strip_prefix(&root).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                dirs.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Issue 29, item 2, and issue 48: the first command of the README (`git ls-remote` outside
/// any repository) names a packed lake's refs by the commits its packs claim, as a shallow
/// clone's listing does: a few requests, none that grows with the history, and no pack
/// downloaded. A second listing reads no version. Where the packs have no claims, they are
/// downloaded and checked as a clone checks them, in a scratch repository of the user's cache
/// that is gone afterwards, and a version rewritten after packing is read, not taken.
#[test]
fn ls_remote_outside_a_repository_names_a_packed_lake_s_refs_by_its_packs() {
    const VERSIONS: u64 = 300;
    for place in [Where::S3, Where::Gcs, Where::Azure, Where::SeaweedFs] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "packed", &lake(VERSIONS, VERSIONS / 2));
        pack(&t, &at.url);
        let expected = read_one_by_one(&t, &at.url);
        let (listed, said, requests) = ls_remote_outside(&t, &at.url);
        assert_eq!(listed, expected, "{place:?}");
        assert!(!said.contains("warning"), "{place:?}: {said}");
        // HEAD, fdl.json, refs.json, the refs' listing, the pack list, the claims' index and
        // a block, the versions after the packed ones listed: reading the versions would
        // cost two requests each, the packs' own check a listing of every version.
        eprintln!("{place:?}: a cold ls-remote outside a repository: {requests} requests");
        assert!(requests <= 14, "{place:?}: {requests} requests: {said}");
        let left = user_cache_files(&t);
        assert!(
            !left
                .iter()
                .any(|f| f.contains("tmp_fdl") || f.contains(".pack")),
            "{place:?}: no pack was downloaded: {left:?}"
        );
        let (again, _, requests) = ls_remote_outside(&t, &at.url);
        assert_eq!(again, expected, "{place:?}");
        assert!(
            requests <= 9,
            "{place:?}: a warm listing reads no version: {requests}"
        );

        // Rewritten after packing: the claims still name the refs' commits as they were
        // packed (what a listing outside a repository trusts, as Git trusts a server's refs);
        // the versions read one by one map the lake as it is now.
        let v = rewrite_version(&at, VERSIONS / 3);
        std::fs::remove_dir_all(t.path("home/.cache/git-remote-fdl")).unwrap();
        let (listed, _, _) = ls_remote_outside(&t, &at.url);
        assert_eq!(listed, expected, "{place:?}");
        let now = read_one_by_one(&t, &at.url);
        assert_ne!(now, expected, "{place:?}");

        // Packs without claims: downloaded and checked, the rewritten version read.
        for f in at.files_below("git-packs/") {
            if f.contains(".claims/") {
                crate::packs::remove(&at, &f);
            }
        }
        std::fs::remove_dir_all(t.path("home/.cache/git-remote-fdl")).unwrap();
        let (listed, said, _) = ls_remote_outside(&t, &at.url);
        assert_eq!(listed, now, "{place:?}");
        assert!(
            said.contains(&format!(
                "version {v}: it was rewritten after it was packed"
            )),
            "{place:?}: {said}"
        );
        let left = user_cache_files(&t);
        assert!(
            !left.iter().any(|f| f.contains("tmp_fdl")),
            "{place:?}: the scratch repository is gone: {left:?}"
        );
    }
}

/// Refs spread over a long history want many blocks of claims: where the pack's record costs
/// fewer requests (for not many more bytes), it is read whole instead, and names them alike.
#[test]
fn refs_spread_over_the_history_are_named_from_the_record_in_fewer_requests() {
    let mut t = TestEnv::new();
    let mut l = lake(600, 300);
    for n in (100..=600).step_by(100) {
        l.tag(&format!("t{n}"), n);
    }
    l.refs_json();
    let at = t.lake_at(Where::S3, "spread", &l);
    pack(&t, &at.url);
    let expected = read_one_by_one(&t, &at.url);
    let (stdout, stderr) = t.traced(".", &["ls-remote", &at.url]);
    assert_eq!(parse_ls_remote(&stdout), expected);
    // 8 refs in the 3 blocks of a pack of 600 versions: the record, about 130 KB, in one
    // request instead of three blocks.
    let gets = |what: &str| {
        stderr
            .lines()
            .filter(|l| l.contains("store: GET git-packs/") && l.contains(what))
            .count()
    };
    assert_eq!(gets(".json ->"), 2, "the list and the record: {stderr}");
    assert_eq!(gets(".claims/index"), 1, "{stderr}");
    assert_eq!(gets(".claims/"), 1, "no block: {stderr}");
}

/// `fdlUsePacks` off (`fdl.usePacks` outside any repository): the lake's packs are not read at
/// all, not even `git-packs/list.json`.
#[test]
fn use_packs_off_reads_no_file_of_git_packs() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "packed", &lake(20, 10));
    pack(&t, &at.url);
    t.ok(".", &["config", "--global", "fdl.usePacks", "false"]);
    let (_, stderr) = t.traced(".", &["ls-remote", &at.url]);
    assert!(!stderr.contains("git-packs/"), "{stderr}");
    assert!(
        stderr.contains("version.json"),
        "every version is read: {stderr}"
    );
    // Nor over plain HTTP, where a clone otherwise reads the list with fdl.json.
    let folder = t.local_lake("site", &lake(20, 10));
    pack(&t, &folder);
    let site = crate::support::http::serve(&t.path("site"));
    let (_, stderr) = t.traced(".", &["clone", "-q", &format!("fdl::{}", site.url), "web"]);
    assert!(!stderr.contains("git-packs/"), "{stderr}");
    t.ok(".", &["config", "--global", "fdl.usePacks", "true"]);
    let (_, stderr) = t.traced(".", &["clone", "-q", &format!("fdl::{}", site.url), "web2"]);
    assert!(stderr.contains("git-packs/list.json"), "{stderr}");
    t.ok(".", &["config", "--global", "fdl.usePacks", "maybe"]);
    let err = t.fails(".", &["ls-remote", &at.url]);
    assert!(
        err.contains("bad boolean config value for 'fdl.usePacks'"),
        "{err}"
    );
}

/// Git's own command line (`git -c`, handed to the helper in `GIT_CONFIG_PARAMETERS`) is
/// configuration as any other, outside a repository and inside, and it wins over the files:
/// the helper read neither, and a `git -c fdl.usePacks=false clone` read the packs.
#[test]
fn git_dash_c_reaches_the_helper_as_gits_configuration() {
    let mut t = TestEnv::new();
    let first = t.lake_at(Where::S3, "packed", &lake(20, 10));
    let at = t.lake_at(Where::S3, "packed-again", &lake(20, 10));
    pack(&t, &first.url);
    pack(&t, &at.url);
    let traced = |args: &[&str]| t.traced(".", args).1;
    // The command line wins over the user's file, as in Git (first: nothing is known yet).
    t.ok(".", &["config", "--global", "fdl.usePacks", "false"]);
    let said = traced(&["-c", "fdl.usePacks", "ls-remote", &first.url]);
    assert!(
        said.contains("git-packs/"),
        "-c fdl.usePacks (true): {said}"
    );
    t.ok(".", &["config", "--global", "--unset", "fdl.usePacks"]);
    for off in ["fdl.usePacks=false", "fdl.usepacks=0", "FDL.usePacks=off"] {
        let said = traced(&["-c", off, "ls-remote", &at.url]);
        assert!(!said.contains("git-packs/"), "{off}: {said}");
    }
    for (config, dir) in [
        ("fdl.usePacks=false", "a.git"),
        ("remote.origin.fdlUsePacks=false", "b.git"),
    ] {
        let said = traced(&["-c", config, "clone", "-q", "--bare", &at.url, dir]);
        assert!(!said.contains("git-packs/"), "clone -c {config}: {said}");
    }
    let err = t.fails(".", &["-c", "fdl.usePacks=maybe", "ls-remote", &at.url]);
    assert!(
        err.contains("bad boolean config value for 'fdl.usePacks'"),
        "{err}"
    );
}

/// Plain HTTP cannot list, so nothing can show that a packed file is still the lake's: packs
/// are not used, and the clone reads every version; unless the user trusts them for that
/// remote (`fdlTrustPacks`), and then each commit is still made again from the pack's blobs.
#[test]
fn over_plain_http_packs_are_used_only_when_trusted() {
    let t = TestEnv::new();
    let url = t.local_lake("served", &lake(12, 6));
    pack(&t, &url);
    let server = crate::support::http::serve(&t.path("served"));
    used_only_when_trusted(&t, &format!("fdl::{}", server.url));
}

/// A local folder's listing has no ETags, and checking a packed version's files there costs
/// what reading them does: the same rule as over plain HTTP.
#[test]
fn on_a_local_folder_packs_are_used_only_when_trusted() {
    let t = TestEnv::new();
    let url = t.local_lake("served", &lake(12, 6));
    pack(&t, &url);
    used_only_when_trusted(&t, &url);
}

/// Clones `url`, the lake in folder `served`, untrusted and trusted: the pack is taken only
/// when trusted, the refs are the same, and a record that lies is still caught.
fn used_only_when_trusted(t: &TestEnv, url: &str) {
    let expected = read_one_by_one(t, url);
    let (refs, installed, stderr) = clone(t, url, "untrusted.git");
    same_refs(&expected, &refs);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert_eq!(
        installed.len(),
        1,
        "only the helper's own pack: {installed:?}"
    );

    let pack_name = listed_packs_in(&t.path("served")).remove(0);
    let trusted = |dir: &str| {
        let trust = "remote.origin.fdlTrustPacks=true";
        let out = t.git(".", &["clone", "-q", "--bare", "-c", trust, url, dir]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        let has = t
            .path(dir)
            .join(format!("objects/pack/{pack_name}.pack"))
            .exists();
        assert_eq!(
            t.ok(dir, &["rev-parse", "refs/heads/main"]),
            t.ok("untrusted.git", &["rev-parse", "refs/heads/main"])
        );
        (has, stderr)
    };
    let (used, stderr) = trusted("trusted.git");
    assert!(used && !stderr.contains("warning"), "{stderr}");
    // Trusted is not believed: a record that names another commit for a version is caught.
    let record_path = t.path("served").join(format!("git-packs/{pack_name}.json"));
    let record = std::fs::read_to_string(&record_path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let (c1, c2) = (
        v["versions"][3]["commit"].as_str().unwrap(),
        v["versions"][4]["commit"].as_str().unwrap(),
    );
    std::fs::write(&record_path, record.replace(c1, c2)).unwrap();
    let (_, stderr) = trusted("lied-to.git");
    assert!(stderr.contains("cannot be taken from it"), "{stderr}");
}

fn listed_packs_in(dir: &std::path::Path) -> Vec<String> {
    pack_names(&std::fs::read_to_string(dir.join("git-packs/list.json")).unwrap())
}

/// `fdlAllowHttp` written without a value is true for `pack` as for a fetch; a bad value is
/// said of the user's remote; and a lake over plain HTTP is said to be read-only, as a push
/// says, before any request.
#[test]
fn pack_reads_the_remotes_booleans_as_git_does_and_refuses_a_read_only_lake() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "bools", &lake(6, 3));
    t.ok(".", &["init", "-q", "--bare", "maintainer.git"]);
    t.ok("maintainer.git", &["remote", "add", "lake", &at.url]);
    let config = t.path("maintainer.git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[remote \"lake\"]\n\tfdlAllowHttp\n");
    std::fs::write(&config, &text).unwrap();
    let out = helper(&t, "maintainer.git", &["pack", "lake"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("6 new were packed"), "{stderr}");

    t.ok(
        "maintainer.git",
        &["config", "remote.lake.fdlAllowHttp", "maybe"],
    );
    let out = helper(&t, "maintainer.git", &["pack", "lake"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("'remote.lake.fdlAllowHttp'") && !stderr.contains("remote.origin"),
        "{stderr}"
    );

    let url = t.local_lake("served", &lake(4, 2));
    let server = crate::support::http::serve(&t.path("served"));
    let http = format!("fdl::{}", server.url);
    let out = helper(&t, ".", &["pack", &http]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{stderr}");
    // The server's port may itself contain "501" (45015 did): look past the address.
    let said = stderr.replace(server.url.trim_end_matches('/'), "<lake>");
    assert!(
        said.contains("read-only: nothing was packed") && !said.contains("501"),
        "{stderr}"
    );
    assert!(!std::path::Path::new(&format!("{}/git-packs", &url[5..])).exists());
}

/// A fetch from a folder whose packs the user trusts takes the versions a new pack holds from
/// it, as a clone does, and gives the commits a read one by one gives.
#[test]
fn on_a_local_folder_a_trusted_fetch_takes_a_new_pack() {
    use crate::packs_fetch::{grow_to, grown};
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::Local, "grows", &grown(100, 100));
    pack(&t, &at.url);
    let trust = "remote.origin.fdlTrustPacks=true";
    t.ok(
        ".",
        &["clone", "-q", "--bare", "-c", trust, &at.url, "f.git"],
    );
    grow_to(&at, 100, 100, 400);
    pack(&t, &at.url);
    let newest = listed_packs_in(&at.dir).pop().unwrap();
    let specs = ["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"];
    let out = t.git("f.git", &["fetch", "-q", "origin", specs[0], specs[1]]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("warning"),
        "{stderr}"
    );
    let pack = t.path("f.git").join(format!("objects/pack/{newest}.pack"));
    assert!(pack.exists(), "the new pack is taken: {newest}");
    let got = t.ok(
        "f.git",
        &["for-each-ref", "--format=%(objectname) %(refname)"],
    );
    for (commit, name) in read_one_by_one(&t, &at.url)
        .iter()
        .filter(|(_, n)| n != "HEAD")
    {
        assert!(got.contains(&format!("{commit} {name}")), "{name}: {got}");
    }
}

/// A clone that reads a packed lake's versions one by one where nothing checks its packs (a
/// folder, plain HTTP) suggests trusting them, Git-style, from a number of versions on (lowered
/// here through a test hook); not where they were used, not below that number, not where the
/// lake has no packs, not on a store whose listing checks them, not with the advice turned off.
#[test]
fn reading_a_packed_lake_one_by_one_suggests_trusting_its_packs() {
    let mut t = TestEnv::new();
    t.set("GIT_REMOTE_FDL_TEST_SUGGEST_TRUST_AT", "12");
    let url = t.local_lake("served", &lake(12, 6));
    let unpacked = t.local_lake("unpacked", &lake(12, 6));
    let no_hint = |stderr: &str| !stderr.contains("hint:") && !stderr.contains("warning");
    assert!(no_hint(&clone_says(&t, &[&unpacked], "unpacked.git")));
    pack(&t, &url);

    let said = clone_says(&t, &[&url], "folder.git");
    let expected = [
        "hint: This lake has packs (git-packs/), but each of the 12 versions was read\n",
        "hint: and mapped one by one: a local folder's listing cannot check the packs\n",
        "hint:\n",
        "hint: \tgit config remote.origin.fdlTrustPacks true\n",
        "hint: -c remote.origin.fdlTrustPacks=true.\n",
        "hint: Disable this message with \"git config advice.fdlTrustPacks false\"\n",
    ];
    for line in expected {
        assert!(said.contains(line), "{line:?} in {said}");
    }
    // Followed, the hint's setting takes the packs, and the next fetch says nothing.
    t.ok(
        "folder.git",
        &["config", "remote.origin.fdlTrustPacks", "true"],
    );
    let fetched = t.git("folder.git", &["fetch", "origin"]);
    assert!(no_hint(&String::from_utf8_lossy(&fetched.stderr)));
    let trusted = "remote.origin.fdlTrustPacks=true";
    assert!(no_hint(&clone_says(
        &t,
        &["-c", trusted, &url],
        "trusted.git"
    )));
    let quiet = "advice.fdlTrustPacks=false";
    assert!(no_hint(&clone_says(&t, &["-c", quiet, &url], "quiet.git")));

    let server = crate::support::http::serve(&t.path("served"));
    let http = clone_says(&t, &[&format!("fdl::{}", server.url)], "http.git");
    assert!(
        http.contains("one by one: plain HTTP lists nothing to check the packs\n"),
        "{http}"
    );

    t.set("GIT_REMOTE_FDL_TEST_SUGGEST_TRUST_AT", "13");
    assert!(no_hint(&clone_says(&t, &[&url], "fewer.git")));
    t.set("GIT_REMOTE_FDL_TEST_SUGGEST_TRUST_AT", "12");
    let s3 = t.lake_at(Where::S3, "listed", &lake(12, 6));
    pack(&t, &s3.url);
    assert!(no_hint(&clone_says(&t, &[&s3.url], "s3.git")));
}

/// What `git clone --bare <args> <dest>` said on stderr; it must succeed.
fn clone_says(t: &TestEnv, args: &[&str], dest: &str) -> String {
    let mut all = vec!["clone", "--bare"];
    all.extend(args);
    all.push(dest);
    let out = t.git(".", &all);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    stderr
}
