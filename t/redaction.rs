//! Secrets never printed and text from a lake escaped: passwords in URLs, store option values,
//! quoted names, and escape sequences in an author's email.

use serde_json::json;

use crate::support::http::closed_port;
use crate::support::moto::s3_env;
use crate::support::{text, LakeBuilder, TestEnv, HELPER};

#[test]
fn url_password_with_slash_or_hash_is_never_printed() {
    let mut t = TestEnv::new();
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    let closed = closed_port();
    let port = closed.port();
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
        let err = text(&out.stderr);
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
    let closed = closed_port();
    t.set("AZURE_STORAGE_USE_EMULATOR", "true")
        .set("AZURE_STORAGE_ACCOUNT_NAME", "devstoreaccount1")
        .set(
            "AZURE_STORAGE_ENDPOINT",
            &format!("http://127.0.0.1:{}", closed.port()),
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
                closed.port()
            ),
        ],
    );
    assert!(err.contains("/lake/?<redacted>'"), "{err}");
    assert!(!err.contains("SECRETSIG"), "{err}");
}

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
    assert_eq!(out.status.code(), Some(1), "{table}{}", text(&out.stderr));
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
