//! AWS credentials as the AWS CLI finds them, with no credential variable in the environment and
//! instance metadata turned off: a profile's static keys (chosen by `AWS_PROFILE` or
//! `remote.<name>.fdlProfile`), a `credential_process`, an assumed role (STS at moto), the
//! profile's region; and the errors when a profile is missing or its process fails, and when
//! nothing is configured (with proof that the instance-metadata address is never asked).
//!
//! The lakes live on a moto server that checks every request as AWS does: a signature made with
//! a key it issued, whose policy allows the action (`moto_server.py`, IAM authentication on). So
//! a clone that works proves the helper signed with the profile's secret, and the role test's
//! source user may only assume the role: its own keys are refused. A recording proxy in front of
//! moto shows which key and region signed each request.

use std::path::Path;

use crate::support::moto::{auth_moto, AUTH_BUCKET, AUTH_ROLE};
use crate::support::recorder;
use crate::support::{lake, vid, TestEnv};

/// A lake below `<name>/` in the authenticating server's bucket, and an environment without a
/// single credential variable: the endpoint, instance metadata off, and the AWS CLI's two files
/// in the test's folder (written by [`aws_files`]).
fn setup(name: &str) -> (TestEnv, String) {
    let m = auth_moto();
    m.put_files(&format!("{name}/"), &lake(3, 1).files);
    let mut t = TestEnv::new();
    std::fs::create_dir_all(t.path("aws")).unwrap();
    let (config, credentials) = (t.path("aws/config"), t.path("aws/credentials"));
    t.set("AWS_ENDPOINT_URL", &m.endpoint)
        .set("AWS_ALLOW_HTTP", "true")
        .set("AWS_EC2_METADATA_DISABLED", "true")
        .set("AWS_CONFIG_FILE", config.to_str().unwrap())
        .set("AWS_SHARED_CREDENTIALS_FILE", credentials.to_str().unwrap());
    for (k, _) in &t.env {
        assert!(
            ![
                "AWS_ACCESS_KEY_ID",
                "AWS_SECRET_ACCESS_KEY",
                "AWS_SESSION_TOKEN",
                "AWS_REGION",
                "AWS_PROFILE"
            ]
            .contains(&k.as_str()),
            "{k} is set"
        );
    }
    (t, format!("fdl::s3://{AUTH_BUCKET}/{name}/"))
}

fn aws_files(t: &TestEnv, config: &str, credentials: &str) {
    std::fs::write(t.path("aws/config"), config).unwrap();
    std::fs::write(t.path("aws/credentials"), credentials).unwrap();
}

/// `[name]` with a key pair, as `~/.aws/credentials` holds it.
fn keys(name: &str, (id, secret): &(String, String)) -> String {
    format!("[{name}]\naws_access_key_id = {id}\naws_secret_access_key = {secret}\n")
}

/// Clones the lake into `work` and pushes a new tag; the tag file lands in the bucket.
fn clone_and_push(t: &TestEnv, url: &str, name: &str) {
    t.ok(".", &["clone", "-q", url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "3\n");
    push_tag(t, "work", "origin", name);
}

fn push_tag(t: &TestEnv, dir: &str, remote: &str, name: &str) {
    t.ok(dir, &["tag", "pushed", &format!("{remote}/main")]);
    t.ok(dir, &["push", "-q", remote, "pushed"]);
    let tag = auth_moto()
        .get(&format!("{name}/refs/tags/pushed"))
        .unwrap();
    assert_eq!(String::from_utf8(tag).unwrap().trim(), vid(3));
}

/// Git's exit code and its stderr, which must be exactly one `fatal:` line and one `hint:` line,
/// holding none of `secrets`.
fn one_fatal(t: &TestEnv, args: &[&str], secrets: &[&str]) -> String {
    let out = t.git(".", args);
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(128), "{err}");
    let lines: Vec<&str> = err.lines().collect();
    assert!(
        lines.len() == 2 && lines[0].starts_with("fatal: ") && lines[1].starts_with("hint: "),
        "{err}"
    );
    for s in secrets {
        assert!(!err.contains(s), "{s:?} shown in:\n{err}");
    }
    err
}

#[test]
fn profile_with_static_keys_from_aws_profile() {
    let (mut t, url) = setup("static");
    let m = auth_moto();
    let wrong = (
        m.reader.0.clone(),
        "not-the-secret-of-this-key-at-all-000000".to_string(),
    );
    let config = "[profile dev]\nregion = us-east-1\n[profile wrong]\nregion = us-east-1\n";
    aws_files(
        &t,
        config,
        &(keys("dev", &m.reader) + &keys("wrong", &wrong)),
    );
    // The server checks signatures: the right key ID with another secret is refused.
    t.set("AWS_PROFILE", "wrong");
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(err.contains("access denied (403"), "{err}");
    assert!(
        !err.contains(&m.reader.1) && !err.contains(&wrong.1),
        "{err}"
    );
    t.set("AWS_PROFILE", "dev");
    clone_and_push(&t, &url, "static");
}

/// Regression: S3 list pages, once read by the helper itself (`store/s3_list.rs`, since gone), signed as
/// object_store signs its own. Here every one is taken as signed, none asked again of
/// object_store: 950 refs, so that a second listing splits the tags in two ranges, one
/// after a `start-after`.
#[test]
fn list_pages_the_helper_reads_itself_are_signed_as_aws_checks() {
    let m = auth_moto();
    let mut l = lake(3, 1);
    // More than one range's worth of names (980).
    for k in 0..1100 {
        l.tag(&format!("r{k:04}"), 1 + k % 3);
    }
    l.refs_json();
    m.put_files("fast-list/", &l.files);
    let (mut t, url) = setup("fast-list-unused");
    let url = url.replace("fast-list-unused", "fast-list");
    aws_files(
        &t,
        "[default]\nregion = us-east-1\n",
        &keys("default", &m.reader),
    );
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    // The second time, the names the first listing found split the tags in two.
    t.ok(".", &["ls-remote", &url]);
    let out = t.git(".", &["ls-remote", &url]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(
        stdout.lines().filter(|l| l.contains("refs/tags/")).count(),
        1101
    );
    assert!(
        stderr.contains("LIST refs/tags/ (Some(\"refs/tags/r"),
        "{stderr}"
    );
    assert!(!stderr.contains("asked again of object_store"), "{stderr}");
}

/// `remote.<name>.fdlProfile` chooses the profile, before `AWS_PROFILE` (as per-remote keys
/// come before the environment) and before the default profile.
#[test]
fn profile_from_git_config() {
    let (mut t, url) = setup("per-remote");
    let m = auth_moto();
    let wrong = (
        m.reader.0.clone(),
        "not-the-secret-of-this-key-at-all-000000".to_string(),
    );
    let creds = keys("default", &wrong) + &keys("dev", &m.reader) + &keys("other", &wrong);
    aws_files(&t, "[profile dev]\n[profile other]\n", &creds);
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "origin", &url]);
    // The default profile's keys are refused, and so are AWS_PROFILE's.
    assert!(t
        .fails("work", &["fetch", "-q", "origin"])
        .contains("access denied"));
    t.set("AWS_PROFILE", "other");
    assert!(t
        .fails("work", &["fetch", "-q", "origin"])
        .contains("access denied"));
    t.ok("work", &["config", "remote.origin.fdlProfile", "dev"]);
    t.ok("work", &["fetch", "-q", "origin"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "3\n");
    push_tag(&t, "work", "origin", "per-remote");
}

/// A script printing the credentials as JSON, run once per helper process however many requests
/// start together (the credentials are cached).
#[test]
fn credential_process() {
    let (mut t, url) = setup("process");
    let m = auth_moto();
    let script = t.path("aws/creds.sh");
    let runs = t.path("aws/runs");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho run >> '{}'\nprintf '{{\"Version\": 1, \"AccessKeyId\": \"%s\", \
             \"SecretAccessKey\": \"%s\"}}\\n' '{}' '{}'\n",
            runs.display(),
            m.reader.0,
            m.reader.1
        ),
    )
    .unwrap();
    make_executable(&script);
    let config = format!(
        "[profile proc]\ncredential_process = {}\n",
        script.display()
    );
    aws_files(&t, &config, "");
    t.set("AWS_PROFILE", "proc");
    t.ok(".", &["clone", "-q", &url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "3\n");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "run\n");
    push_tag(&t, "work", "origin", "process");
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// `role_arn` with `source_profile`: the source user may only assume the role, so its own keys
/// are refused and the lake is read with the role's temporary keys, which STS (moto) gave.
/// STS is reached through `AWS_ENDPOINT_URL`, like S3.
#[test]
fn assumed_role() {
    let (mut t, url) = setup("role");
    let m = auth_moto();
    let proxy = recorder::proxy(&m.endpoint);
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    let config = format!(
        "[profile base]\nregion = us-east-1\n\
         [profile reader]\nrole_arn = {AUTH_ROLE}\nsource_profile = base\nregion = eu-west-1\n"
    );
    aws_files(&t, &config, &keys("base", &m.base));
    t.set("AWS_PROFILE", "base");
    assert!(t.fails(".", &["ls-remote", &url]).contains("access denied"));
    let before = proxy.seen().len();
    t.set("AWS_PROFILE", "reader");
    clone_and_push(&t, &url, "role");
    let seen = proxy.seen()[before..].to_vec();
    let sts: Vec<_> = seen
        .iter()
        .filter(|s| s.service().as_deref() == Some("sts"))
        .collect();
    assert!(!sts.is_empty(), "no STS request: {seen:?}");
    for s in &sts {
        assert_eq!(s.signed_by().unwrap().0, m.base.0, "{s:?}");
    }
    for s in seen.iter().filter(|s| s.service().as_deref() == Some("s3")) {
        let (key, _) = s.signed_by().unwrap();
        assert!(key.starts_with("ASIA") && key != m.base.0, "{s:?}");
        assert_eq!(s.region().as_deref(), Some("eu-west-1"), "{s:?}");
    }
}

/// STS may have its own endpoint: `AWS_ENDPOINT_URL_STS`, or `endpoint_url` in the profile,
/// while the lake's endpoint is set per remote.
#[test]
fn assumed_role_with_sts_endpoint_of_its_own() {
    let (mut t, url) = setup("role-sts");
    let m = auth_moto();
    t.env.retain(|(k, _)| k != "AWS_ENDPOINT_URL");
    let config = |sts: &str| {
        format!(
            "[profile base]\n{sts}\
             [profile reader]\nrole_arn = {AUTH_ROLE}\nsource_profile = base\n{sts}"
        )
    };
    let endpoint = format!("remote.origin.fdlEndpoint={}", m.endpoint);
    let clone = |t: &TestEnv, dir: &str| {
        t.ok(
            ".",
            &[
                "clone",
                "-q",
                "-c",
                &endpoint,
                "-c",
                "remote.origin.fdlAllowHttp=true",
                &url,
                dir,
            ],
        );
    };
    t.set("AWS_PROFILE", "reader");
    let by_variable = recorder::proxy(&m.endpoint);
    aws_files(&t, &config(""), &keys("base", &m.base));
    t.set("AWS_ENDPOINT_URL_STS", &by_variable.endpoint);
    clone(&t, "by-variable");
    let sts_requests = |r: &recorder::Recorder| {
        r.seen()
            .iter()
            .filter(|s| s.service().as_deref() == Some("sts"))
            .count()
    };
    assert!(sts_requests(&by_variable) > 0);
    t.env.retain(|(k, _)| k != "AWS_ENDPOINT_URL_STS");
    let by_profile = recorder::proxy(&m.endpoint);
    let line = format!("endpoint_url = {}\n", by_profile.endpoint);
    aws_files(&t, &config(&line), &keys("base", &m.base));
    clone(&t, "by-profile");
    assert!(sts_requests(&by_profile) > 0);
}

/// The region comes from the profile when none is set: every request is signed for it.
#[test]
fn region_from_the_profile() {
    let (mut t, url) = setup("region");
    let m = auth_moto();
    let proxy = recorder::proxy(&m.endpoint);
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    aws_files(
        &t,
        "[profile dev]\nregion = ap-south-2\n",
        &keys("dev", &m.reader),
    );
    t.set("AWS_PROFILE", "dev");
    t.ok(".", &["ls-remote", &url]);
    let seen = proxy.seen();
    assert!(!seen.is_empty());
    for s in &seen {
        assert_eq!(s.signed_by().unwrap().0, m.reader.0, "{s:?}");
        assert_eq!(s.region().as_deref(), Some("ap-south-2"), "{s:?}");
    }
    // A region set per remote (or in AWS_REGION) comes first.
    let before = seen.len();
    t.ok(
        ".",
        &[
            "clone",
            "-q",
            "-c",
            "remote.origin.fdlRegion=eu-north-1",
            &url,
            "work",
        ],
    );
    let later = proxy.seen();
    assert!(later.len() > before);
    for s in &later[before..] {
        assert_eq!(s.region().as_deref(), Some("eu-north-1"), "{s:?}");
    }
    // With keys in the environment, the profile still gives the region (as for the AWS CLI).
    aws_files(&t, "[profile dev]\nregion = ap-south-2\n", "");
    t.set("AWS_ACCESS_KEY_ID", &m.reader.0)
        .set("AWS_SECRET_ACCESS_KEY", &m.reader.1);
    let before = later.len();
    t.ok(".", &["ls-remote", &url]);
    let last = proxy.seen();
    assert!(last.len() > before);
    for s in &last[before..] {
        assert_eq!(s.region().as_deref(), Some("ap-south-2"), "{s:?}");
    }
}

#[test]
fn missing_profile_is_named_with_a_hint() {
    let (mut t, url) = setup("missing");
    let m = auth_moto();
    aws_files(&t, "[profile dev]\n", &keys("dev", &m.reader));
    t.set("AWS_PROFILE", "nope");
    let err = one_fatal(&t, &["ls-remote", &url], &[&m.reader.1]);
    assert!(
        err.contains("no AWS profile 'nope' (named by AWS_PROFILE)")
            && err.contains(t.path("aws/config").to_str().unwrap())
            && err.contains("hint: name a profile that exists")
            && err.contains("in AWS_PROFILE"),
        "{err}"
    );
    t.env.retain(|(k, _)| k != "AWS_PROFILE");
    let err = one_fatal(
        &t,
        &[
            "clone",
            "-q",
            "-c",
            "remote.origin.fdlProfile=gone",
            &url,
            "work",
        ],
        &[&m.reader.1],
    );
    assert!(
        err.contains("no AWS profile 'gone' (named by fdlProfile)")
            && err.contains("git config remote.origin.fdlProfile"),
        "{err}"
    );
}

/// A `credential_process` that fails: its profile and its message are named, never what it
/// printed on stdout (here, keys), and the command's arguments are not shown.
#[test]
fn failing_credential_process_is_named_with_a_hint() {
    let (mut t, url) = setup("failing");
    let m = auth_moto();
    let script = t.path("aws/broken.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho '{{\"Version\": 1, \"AccessKeyId\": \"{}\", \"SecretAccessKey\": \"{}\"}}'\n\
             echo 'session expired: log in again' >&2\nexit 3\n",
            m.reader.0, m.reader.1
        ),
    )
    .unwrap();
    make_executable(&script);
    let config = format!(
        "[profile proc]\ncredential_process = {} --token s3cr3t-argument\n",
        script.display()
    );
    aws_files(&t, &config, "");
    t.set("AWS_PROFILE", "proc");
    let err = one_fatal(&t, &["ls-remote", &url], &[&m.reader.1, "s3cr3t-argument"]);
    assert!(
        err.contains("profile 'proc' (from AWS_PROFILE) gave none")
            && err.contains("session expired: log in again")
            && err.contains("exit status: 3")
            && err.contains("hint: "),
        "{err}"
    );
}

/// Nothing configured and instance metadata off: one error naming what was tried, and not one
/// connection to the metadata address (pointed at a listener here by both variables that name
/// it). The same listener is asked as soon as metadata is not turned off.
#[test]
fn nothing_configured_and_metadata_off_asks_no_metadata_service() {
    let (mut t, url) = setup("nothing");
    aws_files(&t, "", "");
    let imds = recorder::fixed("403 Forbidden");
    t.set("AWS_EC2_METADATA_SERVICE_ENDPOINT", &imds.endpoint)
        .set("AWS_METADATA_ENDPOINT", &imds.endpoint);
    let err = one_fatal(&t, &["ls-remote", &url], &[]);
    assert!(
        err.starts_with("fatal: lake 's3://fdl-credentials/nothing/': no AWS credentials: ")
            && err.contains("the default profile")
            && err.contains("instance metadata is turned off (AWS_EC2_METADATA_DISABLED)")
            && err.contains("hint: name a profile of ~/.aws/config with AWS_PROFILE")
            && err.contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{err}"
    );
    assert_eq!(imds.connections_settled(), 0, "{:?}", imds.seen());

    t.env.retain(|(k, _)| k != "AWS_EC2_METADATA_DISABLED");
    let err = one_fatal(&t, &["ls-remote", &url], &[]);
    assert!(
        err.contains(&format!(
            "the instance metadata service ({})",
            imds.endpoint
        )),
        "{err}"
    );
    assert!(imds.connections() > 0);
    assert!(
        imds.seen()
            .iter()
            .any(|s| s.line == "PUT /latest/api/token"),
        "{:?}",
        imds.seen()
    );
}
