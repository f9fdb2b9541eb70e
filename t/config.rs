//! Git's configuration as the helper reads it: per-remote keys for names with a slash, bare
//! booleans, a bad concurrency, and store options a folder cannot use.

use crate::support::moto::moto;
use crate::support::{lake, TestEnv};

#[test]
fn per_remote_config_works_for_remote_names_with_a_slash_and_bare_booleans() {
    let m = moto();
    m.create_bucket("slash-remote");
    lake(3, 1).write_s3(m, "slash-remote", "lake/");
    let mut t = TestEnv::new();
    // Credentials only: the endpoint and the permission for plain HTTP come from git config.
    t.set("AWS_ACCESS_KEY_ID", "testing")
        .set("AWS_SECRET_ACCESS_KEY", "x")
        .set("AWS_REGION", "us-east-1")
        .set("AWS_EC2_METADATA_DISABLED", "true");
    t.ok(".", &["init", "-q", "work"]);
    t.ok(
        "work",
        &["remote", "add", "team/lake", "fdl::s3://slash-remote/lake/"],
    );
    t.ok(
        "work",
        &["config", "remote.team/lake.fdlEndpoint", &m.endpoint],
    );
    // `fdlAllowHttp` with no value: Git's "true".
    let config = t.path("work/.git/config");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text = text.replace(
        "[remote \"team/lake\"]\n",
        "[remote \"team/lake\"]\n\tfdlAllowHttp\n",
    );
    std::fs::write(&config, text).unwrap();
    t.ok("work", &["fetch", "-q", "team/lake"]);
    assert_eq!(
        t.ok("work", &["rev-list", "--count", "team/lake/main"]),
        "3\n"
    );

    t.ok(
        "work",
        &["config", "remote.team/lake.fdlAllowHttp", "maybe"],
    );
    let err = t.fails("work", &["fetch", "team/lake"]);
    assert!(
        err.contains("bad boolean config value for 'remote.team/lake.fdlAllowHttp'"),
        "{err}"
    );
}

/// A bad number of requests in flight is a configuration error that names its key, as Git
/// names a bad number in its own configuration, on a folder as on a cloud store.
#[test]
fn a_bad_concurrency_names_its_key() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "origin", &url]);
    for bad in ["0", "-1", "abc", "4097", "99999999999999999999"] {
        t.ok("work", &["config", "remote.origin.fdlConcurrency", bad]);
        let err = t.fails("work", &["fetch", "origin"]);
        assert!(
            err.starts_with(&format!(
                "fatal: bad numeric config value '{bad}' for 'remote.origin.fdlConcurrency': \
                 not a number from 1 to 4096\nhint: "
            )),
            "{err}"
        );
    }
    t.ok("work", &["config", "remote.origin.fdlConcurrency", "7"]);
    t.ok("work", &["fetch", "-q", "origin"]);
}

#[test]
fn require_signatures_is_not_ignored_for_a_remote_name_with_a_slash() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "team/lake", &url]);
    // Git's bare "true": the key without a value.
    let config = t.path("work/.git/config");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "[remote \"team/lake\"]\n",
        "[remote \"team/lake\"]\n\tfdlRequireSignatures\n",
    );
    std::fs::write(&config, text).unwrap();
    let err = t.fails("work", &["fetch", "team/lake"]);
    assert!(
        err.contains("remote.team/lake.fdlRequireSignatures is on"),
        "an unsigned lake must not be fetched:\n{err}"
    );
    assert!(t
        .git("work", &["rev-parse", "-q", "--verify", "team/lake/main"])
        .stdout
        .is_empty());
}

/// A store option is checked where it is set: one a folder has no use for is named, and a
/// switch given a word that is not a boolean is refused rather than read as false.
#[test]
fn store_options_a_folder_cannot_use_or_switches_that_are_no_booleans_are_refused() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "origin", &url]);
    t.ok(
        "work",
        &["config", "remote.origin.fdlOption", "bogus_option=1"],
    );
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains("unknown store option 'bogus_option' (a folder lake uses none)"),
        "{err}"
    );
    t.ok(
        "work",
        &["config", "remote.origin.fdlOption", "aws_allow_http=ture"],
    );
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains("'aws_allow_http' takes true or false") && !err.contains("ture"),
        "{err}"
    );
    // An option some store knows is no typo: a folder goes on without it.
    t.ok(
        "work",
        &["config", "remote.origin.fdlOption", "aws_region=eu-west-1"],
    );
    t.ok("work", &["config", "remote.origin.fdlAllowHttp", "false"]);
    t.ok("work", &["fetch", "-q", "origin"]);
}

/// A `GIT_CONFIG_PARAMETERS` in neither of Git's forms stops the helper as it stops Git (the
/// same two lines, status 128), before it reads anything: the human commands too, where it
/// once made `ls origin` look for a folder named `origin`.
#[test]
fn a_malformed_git_config_parameters_stops_the_helper_as_it_stops_git() {
    let mut t = TestEnv::new();
    let url = t.local_lake("lake", &lake(2, 1));
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "origin", &url]);
    for bogus in ["'unterminated", "'a.b'=x", "bare"] {
        t.set("GIT_CONFIG_PARAMETERS", bogus);
        let git = t.git("work", &["config", "-l"]);
        for args in [&["ls", "origin"][..], &["origin", &url]] {
            let out = crate::support::helper(&t, "work", args);
            assert_eq!(out.status.code(), git.status.code(), "{bogus} {args:?}");
            assert_eq!(
                crate::support::text(&out.stderr),
                crate::support::text(&git.stderr),
                "{bogus} {args:?}"
            );
            assert_eq!(crate::support::text(&out.stdout), "", "{bogus} {args:?}");
        }
    }
    // Git's own forms still read.
    t.set("GIT_CONFIG_PARAMETERS", "'fdl.usePacks'='false' 'a.b=c'");
    let out = crate::support::helper(&t, "work", &["ls", "origin"]);
    assert!(
        out.status.success(),
        "{}",
        crate::support::text(&out.stderr)
    );
}
