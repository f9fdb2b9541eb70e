//! Signed versions: `version.json.sig` made by real `ssh-keygen -Y sign` (ed25519, ECDSA and RSA
//! keys), checked by `git fetch` when the remote requires signatures, and by
//! `git-remote-fdl verify`. Trust comes only from the user's allowed-signers file.

use serde_json::json;

use crate::support::signing::{keygen_of as keygen, sign};
use crate::support::{vid, LakeBuilder, TestEnv};

struct Keys {
    alice: String,
    bob: String,
    carol: String,
    mallory: String,
}

fn keys(t: &TestEnv) -> Keys {
    Keys {
        alice: keygen(t, "alice", &["-t", "ed25519"]),
        bob: keygen(t, "bob", &["-t", "ecdsa", "-b", "256"]),
        carol: keygen(t, "carol", &["-t", "rsa", "-b", "2048"]),
        mallory: keygen(t, "mallory", &["-t", "ed25519"]),
    }
}

/// Versions 1-4 by Alice, 5 by Bob, 6 by Carol; main at 6. fdl.json lists Mallory's key too.
fn signed_lake(t: &TestEnv, k: &Keys) -> String {
    let mut l = LakeBuilder::new();
    let alice = json!("Alice <alice@example.org>");
    l.version_by(1, &[], "one", alice.clone());
    for n in 2..=4 {
        l.version_by(n, &[n - 1], "more", alice.clone());
    }
    l.version_by(
        5,
        &[4],
        "by bob",
        json!({"name": "Bob", "email": "bob@example.org"}),
    );
    l.version_by(6, &[5], "by carol", json!("Carol <carol@example.org>"));
    l.branch("main", 6).tag("v1", 2);
    l.put(
        "fdl.json",
        serde_json::to_vec_pretty(&json!({
            "fdl": "0.1",
            "signers": [format!("alice@example.org {}", k.alice), format!("mallory@example.org {}", k.mallory)]
        }))
        .unwrap(),
    );
    let url = t.local_lake("lake", &l);
    for (n, key) in [
        (1, "alice"),
        (2, "alice"),
        (3, "alice"),
        (4, "alice"),
        (5, "bob"),
        (6, "carol"),
    ] {
        sign(
            t,
            key,
            "fdl",
            &t.path(&format!("lake/versions/{}/version.json", vid(n))),
        );
    }
    std::fs::write(
        t.path("allowed_signers"),
        format!(
            "alice@example.org {}\nbob@example.org {}\n# carol signs for the team\n*@example.org,!mallory@example.org {}\n",
            k.alice, k.bob, k.carol
        ),
    )
    .unwrap();
    url
}

/// A repository whose remote `origin` requires signatures.
fn strict_repo(t: &TestEnv, url: &str) {
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "origin", url]);
    t.ok(
        "work",
        &["config", "remote.origin.fdlRequireSignatures", "true"],
    );
    t.ok(
        "work",
        &[
            "config",
            "remote.origin.fdlAllowedSignersFile",
            t.path("allowed_signers").to_str().unwrap(),
        ],
    );
}

fn sig_path(t: &TestEnv, n: u64) -> std::path::PathBuf {
    t.path(&format!("lake/versions/{}/version.json.sig", vid(n)))
}

#[test]
fn fully_signed_lake_fetches_with_signatures_required() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    strict_repo(&t, &url);
    t.ok("work", &["fetch", "-q", "origin"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "6\n");
    // Signatures are never part of a commit: the same lake without them maps to the same IDs.
    let signed = t.ok(".", &["ls-remote", &url]);
    for n in 1..=6 {
        std::fs::remove_file(sig_path(&t, n)).unwrap();
    }
    assert_eq!(t.ok(".", &["ls-remote", &url]), signed);
}

#[test]
fn an_unsigned_version_fails_the_fetch_and_updates_no_ref() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    std::fs::remove_file(sig_path(&t, 3)).unwrap();
    strict_repo(&t, &url);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains(&format!(
            "version {} is not signed by a trusted key: no signature (no version.json.sig)",
            vid(3)
        )),
        "{err}"
    );
    assert!(err.contains("hint: nothing was fetched"), "{err}");
    assert_eq!(t.ok("work", &["for-each-ref"]), "");
}

#[test]
fn a_key_listed_only_in_fdl_json_is_not_trusted() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    sign(
        &t,
        "mallory",
        "fdl",
        &t.path(&format!("lake/versions/{}/version.json", vid(4))),
    );
    strict_repo(&t, &url);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(err.contains(&format!("version {}", vid(4))), "{err}");
    assert!(
        err.contains(
            "not in your allowed signers (fdl.json lists it, but a lake's own list is not trusted)"
        ),
        "{err}"
    );
    assert_eq!(t.ok("work", &["for-each-ref"]), "");
}

#[test]
fn a_signature_over_other_bytes_is_bad() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    // Alice's signature of version 2's record, copied beside version 3's.
    std::fs::copy(sig_path(&t, 2), sig_path(&t, 3)).unwrap();
    strict_repo(&t, &url);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains(&format!(
            "version {} is not signed by a trusted key: bad signature by ssh-ed25519 key SHA256:",
            vid(3)
        )),
        "{err}"
    );
}

#[test]
fn a_truncated_signature_is_unreadable() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    let sig = std::fs::read(sig_path(&t, 5)).unwrap();
    std::fs::write(sig_path(&t, 5), &sig[..sig.len() / 2]).unwrap();
    strict_repo(&t, &url);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains(&format!(
            "version {} is not signed by a trusted key: unreadable signature",
            vid(5)
        )),
        "{err}"
    );
}

#[test]
fn a_trusted_key_for_another_principal_is_not_allowed() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    // Bob's key signs a version whose author is Alice.
    sign(
        &t,
        "bob",
        "fdl",
        &t.path(&format!("lake/versions/{}/version.json", vid(2))),
    );
    strict_repo(&t, &url);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains(
            "is trusted, but not for alice@example.org (it is allowed for bob@example.org)"
        ),
        "{err}"
    );
}

#[test]
fn the_namespace_is_configurable() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    for n in 1..=6 {
        let key = match n {
            5 => "bob",
            6 => "carol",
            _ => "alice",
        };
        sign(
            &t,
            key,
            "datasets@example.org",
            &t.path(&format!("lake/versions/{}/version.json", vid(n))),
        );
    }
    strict_repo(&t, &url);
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains("signature for namespace 'datasets@example.org', not 'fdl'"),
        "{err}"
    );
    t.ok(
        "work",
        &[
            "config",
            "remote.origin.fdlSignatureNamespace",
            "datasets@example.org",
        ],
    );
    t.ok("work", &["fetch", "-q", "origin"]);
}

#[test]
fn without_the_switch_fetch_never_reads_signatures() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    std::fs::write(sig_path(&t, 2), "garbage").unwrap();
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "origin", &url]);
    let out = t
        .command("git", "work", &["fetch", "origin"])
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains(".sig"), "no signature is read: {err}");
    // With the switch on but no trusted keys configured: a clear error.
    t.ok(
        "work",
        &["config", "remote.origin.fdlRequireSignatures", "true"],
    );
    let err = t.fails("work", &["fetch", "origin"]);
    assert!(
        err.contains("fdlRequireSignatures is on, but no allowed signers file is configured"),
        "{err}"
    );
    // Git's own gpg.ssh.allowedSignersFile is the fallback. (A new repository: the first one
    // has every version already, and only versions a fetch brings are checked.)
    t.ok(".", &["init", "-q", "fresh"]);
    t.ok("fresh", &["remote", "add", "origin", &url]);
    t.ok(
        "fresh",
        &["config", "remote.origin.fdlRequireSignatures", "true"],
    );
    t.ok(
        "fresh",
        &[
            "config",
            "gpg.ssh.allowedSignersFile",
            t.path("allowed_signers").to_str().unwrap(),
        ],
    );
    let err = t.fails("fresh", &["fetch", "origin"]);
    assert!(
        err.contains(&format!(
            "version {} is not signed by a trusted key: unreadable signature",
            vid(2)
        )),
        "{err}"
    );
}

#[test]
fn verify_prints_a_table_and_fails_on_any_bad_version() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    let helper = env!("CARGO_BIN_EXE_git-remote-fdl");
    let signers = t.path("allowed_signers");
    let run = |args: &[&str]| {
        let mut c = t.command(
            helper,
            ".",
            &[
                "verify",
                &url,
                "--allowed-signers",
                signers.to_str().unwrap(),
            ],
        );
        c.args(args);
        c.output().unwrap()
    };
    let out = run(&[]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(table.starts_with("VERSION"), "{table}");
    assert!(
        table.contains(&format!("{}  alice@example.org", vid(1))),
        "{table}"
    );
    assert!(
        table.contains(&format!("{}  carol@example.org", vid(6)))
            && table.contains("ssh-rsa key SHA256:"),
        "{table}"
    );
    assert!(table.contains("fdl.json lists 2 signer(s)"), "{table}");
    assert!(
        table.contains("6 version(s), 0 not signed by a trusted key"),
        "{table}"
    );

    std::fs::remove_file(sig_path(&t, 3)).unwrap();
    sign(
        &t,
        "mallory",
        "fdl",
        &t.path(&format!("lake/versions/{}/version.json", vid(5))),
    );
    let out = run(&["v1"]);
    assert!(
        out.status.success(),
        "v1's history (1, 2) is still fully signed"
    );
    let out = run(&["main"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{table}");
    assert!(
        table.contains(&format!("{}  (alice@example.org)", vid(3)))
            && table.contains("FAILED: no signature"),
        "{table}"
    );
    assert!(
        table.contains("FAILED: signed by ssh-ed25519 key"),
        "{table}"
    );
    assert!(
        table.contains("6 version(s), 2 not signed by a trusted key"),
        "{table}"
    );
}

/// Inside a clone, `verify` and `ls` take the remote's name, as `fsck` does, and `verify` reads
/// the remote's allowed signers (no `--allowed-signers`, no `gpg.ssh.allowedSignersFile`).
#[test]
fn verify_and_ls_take_a_remote_name_and_its_signature_settings() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    strict_repo(&t, &url);
    t.ok("work", &["fetch", "-q", "origin"]);
    let helper = env!("CARGO_BIN_EXE_git-remote-fdl");
    let out = t
        .command(helper, "work", &["verify", "origin"])
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{table}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        table.contains("6 version(s), 0 not signed by a trusted key"),
        "{table}"
    );
    // The remote's namespace counts too: signatures made in `fdl` do not pass in another.
    t.ok(
        "work",
        &["config", "remote.origin.fdlSignatureNamespace", "other"],
    );
    let out = t
        .command(helper, "work", &["verify", "origin"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = t
        .command(helper, "work", &["ls", "origin"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let main = t.ok("work", &["rev-parse", "origin/main"]);
    assert!(
        listed.contains(&format!("{}\t{}\trefs/heads/main", main.trim(), vid(6))),
        "{listed}"
    );
}

/// Issue 30, item 15: `verify` without an allowed-signers file was fatal (exit 128) and showed
/// nothing. As `git verify-commit` without `gpg.ssh.allowedSignersFile` (an error, exit 1), it
/// says that nothing can be trusted, and still shows the table: each version's key, or that
/// it has no signature.
#[test]
fn verify_without_allowed_signers_shows_the_table_and_trusts_nothing() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    std::fs::remove_file(sig_path(&t, 3)).unwrap();
    let helper = env!("CARGO_BIN_EXE_git-remote-fdl");
    let out = t.command(helper, ".", &["verify", &url]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{table}{err}");
    assert!(table.starts_with("VERSION"), "{table}");
    assert!(
        table.contains(&format!("{}  (alice@example.org)", vid(3)))
            && table.contains("no signature"),
        "{table}"
    );
    assert!(table.contains("ssh-ed25519 key SHA256:"), "{table}");
    assert!(!table.contains("ok: "), "nothing is trusted: {table}");
    assert!(
        table.contains("6 version(s), none checked against a trusted key"),
        "{table}"
    );
    assert_eq!(
        err.lines().collect::<Vec<_>>(),
        [
            "error: no allowed signers file: no signature can be trusted",
            "hint: pass --allowed-signers FILE, or set gpg.ssh.allowedSignersFile (or remote.<name>.fdlAllowedSignersFile)",
        ],
        "{err}"
    );
}

/// `verify` on a lake none of whose versions is signed (the example lake shipped in
/// `examples/lake`) says so after the table, rather than only failing every version.
#[test]
fn verify_on_an_unsigned_lake_says_that_nothing_is_signed() {
    let t = TestEnv::new();
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/lake");
    let helper = env!("CARGO_BIN_EXE_git-remote-fdl");
    let out = t
        .command(helper, ".", &["verify", example])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(
        err.lines().last(),
        Some("hint: no version of this lake is signed (none has a version.json.sig), so there is nothing to verify; SIGNED VERSIONS in git-remote-fdl(1) says how a writer signs versions"),
        "{err}"
    );
    // A lake with one signed version is not called unsigned.
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    let out = t.command(helper, ".", &["verify", &url]).output().unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("no version of this lake is signed"));
}

#[test]
fn a_shallow_fetch_checks_every_version_it_keeps_and_only_those() {
    let t = TestEnv::new();
    let k = keys(&t);
    let url = signed_lake(&t, &k);
    std::fs::remove_file(sig_path(&t, 3)).unwrap();
    strict_repo(&t, &url);
    // Versions 6 and 5 are kept, both signed; version 3, unsigned, lies below the boundary.
    t.ok("work", &["fetch", "-q", "--depth", "2", "origin", "main"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "FETCH_HEAD"]), "2\n");
    let shallow = std::fs::read_to_string(t.path("work/.git/shallow")).unwrap();
    let err = t.fails("work", &["fetch", "-q", "--deepen", "2", "origin", "main"]);
    assert!(
        err.contains(&format!(
            "version {} is not signed by a trusted key",
            vid(3)
        )),
        "{err}"
    );
    let after = std::fs::read_to_string(t.path("work/.git/shallow")).unwrap();
    assert_eq!(after, shallow, "nothing changed");
}
