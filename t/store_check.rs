//! Issue 31: the store check before the first write. A store that ignores conditional writes
//! (s3lite told to ignore them, as s3rver, rclone, JuiceFS and RGW's dbstore do) gets no
//! push and no `pack`; one that honours them is checked once per user cache, not on every
//! push; one that takes `If-Match` only unquoted (Ceph RGW 16) is sent that form; `doctor`
//! prints each check on every store the suite runs.

use crate::support::s3lite::{self, Conditions, S3Lite};
use crate::support::{helper, LakeBuilder, TestEnv, Where};

fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 4);
    l.branch("main", 3);
    l.refs_json();
    l
}

/// A server holding `lake()` at `bucket/lake/`, and a bare clone `r.git` of it.
fn served(conditions: Conditions, bucket: &str) -> (S3Lite, TestEnv) {
    let server = s3lite::start_with(64);
    server.put_files(bucket, "lake/", &lake().files);
    server.set_conditions(conditions);
    let t = server.test_env();
    let url = format!("fdl::s3://{bucket}/lake/");
    t.ok(".", &["clone", "-q", "--bare", &url, "r.git"]);
    (server, t)
}

/// The server's `host:port`, as messages name it.
fn host(server: &S3Lite) -> &str {
    server.endpoint.trim_start_matches("http://")
}

/// Every key of the bucket with its content.
fn snapshot(server: &S3Lite, bucket: &str) -> Vec<(String, Option<Vec<u8>>)> {
    let keys = server.keys(bucket, "");
    keys.into_iter()
        .map(|k| {
            let v = server.get(bucket, &k);
            (k, v)
        })
        .collect()
}

#[test]
fn a_push_to_a_store_that_ignores_conditional_writes_is_refused_before_anything_is_written() {
    let (server, t) = served(Conditions::Ignored, "ignores");
    let before = snapshot(&server, "ignores");
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let err = t.fails("r.git", &["push", "origin", &format!("{tip}:refs/tags/t1")]);
    let fatal: Vec<&str> = err.lines().filter(|l| l.starts_with("fatal:")).collect();
    assert_eq!(
        fatal,
        [format!(
            "fatal: the S3 bucket 'ignores' at {} does not honour create-only writes (PUT \
                 If-None-Match: *) nor compare-and-swap writes (PUT If-Match): a push there could \
                 silently lose another's update; nothing was written",
            host(&server)
        )],
        "{err}"
    );
    assert!(
        err.contains("hint: To write anyway, at your own risk (two pushes at once can lose one's update): git config remote.origin.fdlUnsafeIgnoreConditionalWrites true"),
        "{err}"
    );
    assert!(err.contains("git-remote-fdl doctor"), "{err}");
    // Nothing of the lake changed, and the scratch key is gone.
    assert_eq!(snapshot(&server, "ignores"), before);
    // `pack` is refused the same way, before its clone.
    let out = helper(&t, "r.git", &["pack", "origin"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "fatal: the S3 bucket 'ignores' at {} does not honour create-only writes",
            host(&server)
        )),
        "{stderr}"
    );
    assert_eq!(snapshot(&server, "ignores"), before);
    // Each refused write checks again (the store may have been upgraded): nothing remembered.
    server.reset();
    t.fails("r.git", &["push", "origin", &format!("{tip}:refs/tags/t1")]);
    assert!(server.counts().puts >= 2, "{:?}", server.counts());
}

#[test]
fn the_unsafe_setting_pushes_to_a_store_that_ignores_conditional_writes_with_a_warning() {
    let (server, t) = served(Conditions::Ignored, "unsafe");
    t.ok(
        "r.git",
        &[
            "config",
            "remote.origin.fdlUnsafeIgnoreConditionalWrites",
            "true",
        ],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let out = t.git("r.git", &["push", "origin", &format!("{tip}:refs/tags/t1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: the S3 bucket 'unsafe' at {} does not honour create-only writes (PUT \
             If-None-Match: *) nor compare-and-swap writes (PUT If-Match): a push there could \
             silently lose another's update; writing anyway, as \
             remote.origin.fdlUnsafeIgnoreConditionalWrites says",
            host(&server)
        )),
        "{stderr}"
    );
    assert!(server.get("unsafe", "lake/refs/tags/t1").is_some());
}

/// The check costs a first push five requests here (four PUTs; one DELETE, which an unsigned
/// store cannot be sent on condition: it deletes the scratch key plainly; six where the DELETE
/// goes on condition, then the key is removed) and nothing after it: a second push, and a push
/// from another repository of the same user, make none of them.
#[test]
fn a_store_that_honours_conditional_writes_is_checked_once_not_on_every_push() {
    let (server, t) = served(Conditions::Honoured, "honours");
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let mut counts = Vec::new();
    for tag in ["t1", "t2", "t3"] {
        server.reset();
        t.ok(
            "r.git",
            &["push", "-q", "origin", &format!("{tip}:refs/tags/{tag}")],
        );
        counts.push(server.counts());
    }
    eprintln!("pushes: {counts:#?}");
    // The tag and refs.json (the store is unsigned: no DELETE is sent on condition).
    let (first, second) = (&counts[0], &counts[1]);
    assert_eq!(first.puts, second.puts + 4, "{counts:#?}");
    assert_eq!(first.deletes, second.deletes + 1, "{counts:#?}");
    // Five requests, and the listing of the root that removes long-abandoned scratch keys.
    assert_eq!(first.requests, second.requests + 6, "{counts:#?}");
    assert_eq!(counts[2].puts, second.puts, "{counts:#?}");
    assert_eq!(second.deletes, 0, "{counts:#?}");
    // Another repository of the same user shares the answer.
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://honours/lake/", "s.git"],
    );
    server.reset();
    t.ok(
        "s.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/t4")],
    );
    assert_eq!(server.counts().puts, second.puts);
    // No scratch key is left under the root.
    let keys = server.keys("honours", "lake/fdl-store-check");
    assert!(keys.is_empty(), "{keys:?}");
    // `doctor` checks again, whenever asked.
    server.reset();
    let out = helper(&t, "r.git", &["doctor", "origin"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.counts().puts >= 4);
}

/// Ceph RGW 16 compares `If-Match` with the ETag without its quotes: the check finds it, and
/// every compare-and-swap of a push is then sent in that form (a branch moves, refs.json is
/// rewritten, with no warning).
#[test]
fn a_store_that_takes_if_match_only_unquoted_is_sent_unquoted_etags() {
    let (server, t) = served(Conditions::UnquotedIfMatch, "unquoted");
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let out = t.git("r.git", &["push", "origin", &format!("{tip}:refs/tags/t1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // A branch moved on condition (its file's ETag, then refs.json's).
    let out = t.git("r.git", &["push", "origin", "+main~1:refs/heads/main"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let main = String::from_utf8(server.get("unquoted", "lake/refs/heads/main").unwrap()).unwrap();
    assert_eq!(main.trim(), crate::support::vid(2));
    let refs_json = String::from_utf8(server.get("unquoted", "lake/refs.json").unwrap()).unwrap();
    assert!(refs_json.contains("refs/tags/t1"), "{refs_json}");
    assert!(refs_json.contains(&crate::support::vid(2)), "{refs_json}");
    let out = helper(&t, "r.git", &["doctor", "origin"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("taken only with the ETag unquoted (Ceph RGW 16 compares it so): the helper sends that form to this store"),
        "{stdout}"
    );
}

/// `doctor` on every store the suite runs: each check, its answer, the listing and a round
/// trip; exit 0 where pushes are safe.
#[test]
fn doctor_prints_each_check_on_every_store() {
    for place in Where::EVERY_STORE {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "doctor", &lake());
        let out = helper(&t, ".", &["doctor", &at.url]);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!("{place:?}:\n{stdout}");
        assert!(
            out.status.success(),
            "{place:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("round trip: "), "{place:?}: {stdout}");
        if place == Where::Local {
            assert!(stdout.contains("no check needed"), "{stdout}");
            continue;
        }
        for line in [
            "  PUT If-None-Match: * over an existing key    refused: honoured",
            "  PUT If-Match: <the current ETag>             taken: honoured",
            "  PUT If-Match: <a stale ETag>                 refused: honoured",
            "verdict: pushes are safe here",
        ] {
            assert!(stdout.contains(line), "{place:?}: no {line:?} in\n{stdout}");
        }
        assert!(stdout.contains("listing: ETags"), "{place:?}: {stdout}");
    }
}

/// On a store that ignores conditions, `doctor` says which checks fail, and exits 1.
#[test]
fn doctor_says_what_a_store_that_ignores_conditions_does_not_honour() {
    let (_server, t) = served(Conditions::Ignored, "doctor-ignores");
    let out = helper(&t, "r.git", &["doctor", "origin"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    for line in [
        "  PUT If-None-Match: * over an existing key    taken: NOT honoured (the condition is ignored)",
        "  PUT If-Match: <a stale ETag>                 taken: NOT honoured (the condition is ignored)",
        "verdict: pushes are refused here",
    ] {
        assert!(stdout.contains(line), "no {line:?} in\n{stdout}");
    }
}

/// A store that refuses every compare-and-swap, pushed to anyway (the unsafe setting): the
/// tag is created, and refs.json's refusals on an ETag that never changes are said to be the
/// store's, not a file "still changing", after ten attempts rather than a hundred.
#[test]
fn a_refs_json_refused_on_an_unchanged_etag_is_said_to_be_a_store_that_ignores_if_match() {
    let (server, t) = served(Conditions::RefusesIfMatch, "refuses");
    t.ok(
        "r.git",
        &[
            "config",
            "remote.origin.fdlUnsafeIgnoreConditionalWrites",
            "true",
        ],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    server.reset();
    let out = t.git("r.git", &["push", "origin", &format!("{tip}:refs/tags/t1")]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("does not honour compare-and-swap writes (PUT If-Match)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "warning: refs.json of lake 's3://refuses/lake/' was refused 10 times on its current ETag, \
             which never changed: the store does not honour If-Match (git-remote-fdl doctor shows \
             its checks); the refs are written, refs.json is not"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("still changing"), "{stderr}");
    assert!(server.get("refuses", "lake/refs/tags/t1").is_some());
    // The check's PUTs, the tag, and refs.json ten times.
    assert!(server.counts().puts <= 20, "{:?}", server.counts());
}

/// `doctor` on Ceph RGW (`make test-ceph`): RGW 20 honours every check; RGW 16 takes the
/// current ETag only unquoted (which the helper then sends) and ignores `If-Match` on DELETE,
/// and pushes are safe there all the same.
#[test]
#[ignore = "needs Ceph RGW: make test-ceph"]
fn doctor_on_ceph_rgw() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::Rgw, "doctor", &lake());
    let out = helper(&t, ".", &["doctor", &at.url]);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let release = &crate::support::rgw::rgw().release;
    eprintln!("RGW {release}:\n{stdout}");
    assert!(out.status.success(), "{stdout}");
    let current = if release == "16" {
        "  PUT If-Match: <the current ETag>             taken only with the ETag unquoted"
    } else {
        "  PUT If-Match: <the current ETag>             taken: honoured"
    };
    for line in [
        "  PUT If-None-Match: * over an existing key    refused: honoured",
        current,
        "  PUT If-Match: <a stale ETag>                 refused: honoured",
        "verdict: pushes are safe here",
    ] {
        assert!(
            stdout.contains(line),
            "RGW {release}: no {line:?} in\n{stdout}"
        );
    }
}

/// A passed check is trusted for a day (`safety::RECHECK_AFTER`), then made again before the
/// next write: the store behind an endpoint may have been replaced.
#[test]
fn a_passed_check_older_than_a_day_is_made_again_before_the_next_push() {
    let (server, t) = served(Conditions::Honoured, "expires");
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/t1")],
    );
    let dir = t.path("home/.cache/git-remote-fdl/stores");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    server.reset();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/t2")],
    );
    let remembered = server.counts().puts;
    // Passed 25 hours ago.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    crate::cache::edit_cache_file(&files[0], |line| match line.strip_prefix("@at ") {
        Some(_) => format!("@at {}", now - 25 * 3600),
        None => line.to_string(),
    });
    server.reset();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/t3")],
    );
    assert_eq!(
        server.counts().puts,
        remembered + 4,
        "{:?}",
        server.counts()
    );
    // And remembered again.
    server.reset();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/t4")],
    );
    assert_eq!(server.counts().puts, remembered);
}

/// A branch deleted between the push's listing and its compare-and-swap: the store answers
/// the `If-Match` on a missing key 412 (SeaweedFS, s3lite; AWS answers 404, which object_store
/// turns into the same "precondition failed"). It is "gone": the push is told the branch
/// changed meanwhile, and nothing is created in its place.
#[test]
fn a_branch_deleted_before_its_compare_and_swap_is_gone_not_created_again() {
    let (server, t) = served(Conditions::Honoured, "gone");
    server.before_next_get("gone", "lake/refs.json", |objects| {
        objects.remove("gone/lake/refs/heads/main");
    });
    let err = t.fails("r.git", &["push", "origin", "+main~1:refs/heads/main"]);
    assert!(
        err.contains(
            " ! [remote rejected] main~1 -> main (another push changed this ref while this one \
             ran; push again)"
        ),
        "{err}"
    );
    assert_eq!(server.get("gone", "lake/refs/heads/main"), None, "{err}");
}

/// The check through a proxy that answers 503, resets connections, stalls past the timeout and
/// loses the answers of writes that landed: each PUT is settled by reading the key back (and a
/// refused retry of a write that should be taken, by its own bytes there), so a store that
/// honours the conditions is never found not to, in eight checks of eight scratch keys.
#[test]
fn the_store_check_settles_lost_answers_and_retried_writes_through_injected_faults() {
    let m = crate::support::moto::moto();
    let proxy = crate::support::faults::start(&m.endpoint);
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "faulty-check", &lake());
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    t.ok(".", &["init", "-q", "--bare", "r.git"]);
    t.ok("r.git", &["remote", "add", "origin", &lake.url]);
    t.ok(
        "r.git",
        &["config", "--add", "remote.origin.fdlOption", "timeout=1s"],
    );
    for run in 0..8 {
        let out = helper(&t, "r.git", &["doctor", "origin"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("verdict: pushes are safe here"),
            "run {run}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let c = &proxy.counters;
    use std::sync::atomic::Ordering::SeqCst;
    eprintln!(
        "{} requests, {} lost answers, {} stalls",
        c.requests.load(SeqCst),
        c.lost_answers.load(SeqCst),
        c.delayed.load(SeqCst)
    );
    assert!(c.lost_answers.load(SeqCst) > 0 && c.delayed.load(SeqCst) > 0);
}

/// On moto, whose DELETE goes signed and on condition, the check costs a first push seven
/// requests (four PUTs, the refused stale DELETE, the DELETE that removes the key at the
/// version it knows, and beside the first PUT the listing of the root that finds abandoned
/// scratch keys), counted by a proxy that only forwards; a second push none.
#[test]
fn the_check_costs_a_first_push_seven_requests_on_signed_s3_and_a_second_none() {
    use std::sync::atomic::Ordering::SeqCst;
    let m = crate::support::moto::moto();
    let proxy = crate::support::faults::start_slow(&m.endpoint, std::time::Duration::ZERO);
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "counted", &lake());
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    t.ok(".", &["clone", "-q", "--bare", &lake.url, "r.git"]);
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let mut counts = Vec::new();
    for tag in ["t1", "t2", "t3"] {
        let before = proxy.counters.requests.load(SeqCst);
        t.ok(
            "r.git",
            &["push", "-q", "origin", &format!("{tip}:refs/tags/{tag}")],
        );
        counts.push(proxy.counters.requests.load(SeqCst) - before);
    }
    assert_eq!(counts[0], counts[1] + 7, "{counts:?}");
    assert_eq!(counts[1], counts[2], "{counts:?}");
}

/// A push killed during its store check leaves its scratch key under the root: the next check
/// removes such keys once they are more than a day old (by the time in their names), and
/// leaves a recent one (a check running now) and any other file alone.
#[test]
fn scratch_keys_of_checks_killed_over_a_day_ago_are_removed_at_the_next_check() {
    let (server, t) = served(Conditions::Honoured, "abandoned");
    let nanos = |ago_secs: u128| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        format!("{:x}", now - ago_secs * 1_000_000_000)
    };
    let old = format!("lake/fdl-store-check.4242-{}", nanos(2 * 86400));
    let recent = format!("lake/fdl-store-check.4343-{}", nanos(60));
    let other = "lake/fdl-store-check.notes".to_string();
    let mut files = std::collections::BTreeMap::new();
    for key in [&old, &recent, &other] {
        files.insert(key.trim_start_matches("lake/").to_string(), b"x".to_vec());
    }
    server.put_files("abandoned", "lake/", &files);
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/t1")],
    );
    let keys = server.keys("abandoned", "lake/fdl-store-check");
    assert_eq!(keys, vec![recent, other], "the old key alone is gone");
}
