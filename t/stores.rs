//! The same read path against the other real stores: an S3-compatible server (moto) on
//! 127.0.0.1, and a plain HTTP server that cannot list (readers use `refs.json` there).

use crate::support::http::serve;
use crate::support::moto::moto;
use crate::support::{branched_lake, parse_ls_remote, vid, TestEnv};

fn s3_env(bucket: &str) -> TestEnv {
    let m = moto();
    m.create_bucket(bucket);
    let mut t = TestEnv::new();
    for (k, v) in m.env() {
        t.set(&k, &v);
    }
    t
}

#[test]
fn s3_ls_remote_clone_fetch() {
    let t = s3_env("read-path");
    let mut l = branched_lake();
    l.write_s3(moto(), "read-path", "lakes/sales/");
    let url = "fdl::s3://read-path/lakes/sales/";
    let listed = parse_ls_remote(&t.ok(".", &["ls-remote", url]));
    assert_eq!(listed.len(), 4, "{listed:?}");

    // The same lake in a folder gives the same commits.
    let local = t.local_lake("copy", &l);
    assert_eq!(parse_ls_remote(&t.ok(".", &["ls-remote", &local])), listed);

    t.ok(".", &["clone", "-q", url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "--all"]), "5\n");

    l.version(6, &[4], "Load batch 6");
    l.version(7, &[6], "Load batch 7");
    l.branch("main", 7);
    l.write_s3(moto(), "read-path", "lakes/sales/");
    t.ok("work", &["fetch", "-q"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "6\n");
    assert_eq!(
        t.ok("work", &["log", "-1", "--format=%s", "origin/main"]),
        "Load batch 7\n"
    );
}

#[test]
fn s3_errors_name_the_lake_and_never_show_secrets() {
    let t = s3_env("no-lake-here");
    let hint =
        "hint: check the address: it must name the folder that holds fdl.json, HEAD and refs/";
    let err = t.fails(".", &["ls-remote", "fdl::s3://no-lake-here/nothing/"]);
    assert_eq!(
        err,
        format!(
            "fatal: 's3://no-lake-here/nothing/' is not an FDL lake: it has no fdl.json\n{hint}\n"
        )
    );
    // A bucket that does not exist is named as such, not as a lake without fdl.json.
    let err = t.fails(
        ".",
        &["ls-remote", "fdl::s3://bucket-that-does-not-exist/x/"],
    );
    assert_eq!(
        err,
        format!(
            "fatal: lake 's3://bucket-that-does-not-exist/x/': fdl.json: bucket \
             'bucket-that-does-not-exist' does not exist (404 Not Found: \"NoSuchBucket: The \
             specified bucket does not exist\")\n\
             hint: check the bucket name in the address; for another server, check \
             AWS_ENDPOINT_URL (or git config remote.<remote>.fdlEndpoint <url>)\n"
        )
    );
    assert!(!err.contains("testing-secret-never-shown"), "{err}");
}

#[test]
fn s3_config_from_git_config_per_remote() {
    let m = moto();
    m.create_bucket("configured");
    let l = branched_lake();
    l.write_s3(m, "configured", "lake/");
    // Only credentials in the environment; endpoint and HTTP permission come from git config.
    let mut t = TestEnv::new();
    t.set("AWS_ACCESS_KEY_ID", "testing")
        .set("AWS_SECRET_ACCESS_KEY", "x");
    t.ok(".", &["init", "-q", "work"]);
    t.ok(
        "work",
        &["remote", "add", "lake", "fdl::s3://configured/lake/"],
    );
    t.ok("work", &["config", "remote.lake.fdlEndpoint", &m.endpoint]);
    t.ok("work", &["config", "remote.lake.fdlRegion", "us-east-1"]);
    t.ok("work", &["config", "remote.lake.fdlAllowHttp", "true"]);
    t.ok("work", &["fetch", "-q", "lake"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "lake/main"]), "4\n");
    t.ok(
        "work",
        &[
            "config",
            "--add",
            "remote.lake.fdlOption",
            "no_such_option=1",
        ],
    );
    let err = t.fails("work", &["fetch", "lake"]);
    assert!(
        err.contains("unknown store option 'no_such_option'"),
        "{err}"
    );
}

#[test]
fn http_reads_through_refs_json() {
    let t = TestEnv::new();
    let l = branched_lake();
    let local = t.local_lake("lake", &l);
    let server = serve(&t.path("lake"));
    let url = format!("fdl::{}", server.url);
    let via_http = t.ok(".", &["ls-remote", "--symref", &url]);
    let via_dir = t.ok(".", &["ls-remote", "--symref", &local]);
    assert_eq!(via_http, via_dir);
    t.ok(".", &["clone", "-q", &url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "--all"]), "5\n");
    assert_eq!(
        t.ok(
            "work",
            &[
                "log",
                "-1",
                "--format=%(trailers:key=FDL-Version,valueonly)"
            ]
        )
        .trim(),
        vid(4)
    );
}

#[test]
fn s3_keys_no_lake_path_can_name_do_not_break_a_listing() {
    let t = s3_env("odd-keys");
    let l = branched_lake();
    l.write_s3(moto(), "odd-keys", "lake/");
    moto().put_raw("odd-keys", "lake/refs/requests//junk", "x");
    moto().put_raw("odd-keys", "lake/refs/heads/x,y", &vid(2));
    let out = t.git(".", &["ls-remote", "fdl::s3://odd-keys/lake/"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{:?} {stdout} {stderr}", out.status);
    let names: Vec<String> = parse_ls_remote(&stdout)
        .into_iter()
        .map(|(_, n)| n)
        .collect();
    // refs/requests//junk is not a ref a lake can hold; refs/heads/x,y is.
    assert_eq!(
        (names, stderr.as_ref()),
        (
            vec![
                "HEAD".to_string(),
                "refs/heads/feature/x".into(),
                "refs/heads/main".into(),
                "refs/heads/x,y".into(),
                "refs/tags/v1".into()
            ],
            ""
        )
    );
}

/// What the AWS console's "Create folder" makes: zero-byte keys ending in `/`. None is a ref, and
/// none is in the way of a branch of that name (issue 30, item 11).
#[test]
fn s3_folder_markers_are_not_refs_and_do_not_block_a_push() {
    let t = s3_env("folder-markers");
    let l = branched_lake();
    l.write_s3(moto(), "folder-markers", "lake/");
    for marker in [
        "lake/refs/",
        "lake/refs/heads/",
        "lake/refs/heads/team/",
        "lake/refs/tags/",
    ] {
        moto().put_raw("folder-markers", marker, "");
    }
    let url = "fdl::s3://folder-markers/lake/";
    let listed = t.git(".", &["ls-remote", url]);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert!(listed.status.success(), "{stderr}");
    assert_eq!(stderr, "", "no warning about folder markers");
    let names = |out: &[u8]| -> Vec<String> {
        parse_ls_remote(&String::from_utf8_lossy(out))
            .into_iter()
            .map(|(_, n)| n)
            .collect()
    };
    assert_eq!(
        names(&listed.stdout).len(),
        4,
        "{:?}",
        names(&listed.stdout)
    );
    t.ok(".", &["clone", "-q", url, "work"]);
    let pushed = t.git("work", &["push", "origin", "main:refs/heads/team"]);
    let stderr = String::from_utf8_lossy(&pushed.stderr);
    assert!(pushed.status.success(), "{stderr}");
    assert!(
        stderr.contains("* [new branch]      main -> team"),
        "{stderr}"
    );
    let after = t.git(".", &["ls-remote", url]);
    assert!(
        names(&after.stdout).contains(&"refs/heads/team".to_string()),
        "{:?}",
        names(&after.stdout)
    );
    let store = moto().store("folder-markers");
    let team = crate::support::clouds::get(&store, "lake/refs/heads/team").unwrap();
    assert_eq!(String::from_utf8(team).unwrap().trim(), vid(4));
}
