//! The same read path against the other real stores: an S3-compatible server (moto) on
//! 127.0.0.1, and a plain HTTP server that cannot list (readers use `refs.json` there).

use crate::support::http::serve;
use crate::support::moto::moto;
use crate::support::{parse_ls_remote, vid, LakeBuilder, TestEnv};

fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 4);
    l.version(5, &[2], "side work");
    l.branch("main", 4).branch("feature/x", 5).tag("v1", 2);
    l.refs_json();
    l
}

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
    let mut l = lake();
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
    let err = t.fails(".", &["ls-remote", "fdl::s3://no-lake-here/nothing/"]);
    assert!(
        err.contains("fatal: 's3://no-lake-here/nothing/' is not an FDL lake"),
        "{err}"
    );
    let err = t.fails(
        ".",
        &["ls-remote", "fdl::s3://bucket-that-does-not-exist/x/"],
    );
    assert!(err.starts_with("fatal: "), "{err}");
    assert!(
        err.contains("s3://bucket-that-does-not-exist/x/")
            || err.contains("bucket-that-does-not-exist"),
        "{err}"
    );
    assert!(!err.contains("testing-secret-never-shown"), "{err}");
}

#[test]
fn s3_config_from_git_config_per_remote() {
    let m = moto();
    m.create_bucket("configured");
    let l = lake();
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
    let l = lake();
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
    let l = lake();
    l.write_s3(moto(), "odd-keys", "lake/");
    moto().put_raw("odd-keys", "lake/refs/requests//junk", "x");
    moto().put_raw("odd-keys", "lake/refs/heads/x,y", &vid(2));
    let out = t.git(".", &["ls-remote", "fdl::s3://odd-keys/lake/"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{:?} {stdout} {stderr}", out.status);
    assert!(
        stdout.contains("refs/heads/main") && stdout.contains("refs/heads/x,y"),
        "{stdout}{stderr}"
    );
}
