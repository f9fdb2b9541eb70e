//! Round trips in sequence, counted rather than timed (issue 8): the S3-compatible test server
//! answers in waves (all waiting requests at once, after a quiet period), so the number of
//! waves is the number of requests the helper made one after the other. Deterministic on a
//! loaded machine, unlike wall time.

use std::time::Duration;

use crate::support::s3lite::{self, Counts, S3Lite};
use crate::support::{LakeBuilder, TestEnv};

const VERSIONS: u64 = 2_000;

/// Long enough that a wave's requests, issued together, never straddle two waves.
pub(crate) const QUIET: Duration = Duration::from_millis(500);

pub(crate) fn chain(n: u64, tags: u64) -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, n);
    l.branch("main", n);
    for k in 1..=tags {
        l.tag(&format!("t{k:04}"), k);
    }
    l.refs_json();
    l
}

pub(crate) fn env(server: &S3Lite) -> TestEnv {
    server.test_env()
}

/// Runs git with the server in waves mode; returns what the server counted.
pub(crate) fn waves(server: &S3Lite, t: &TestEnv, cwd: &str, args: &[&str]) -> Counts {
    server.reset();
    server.set_waves(Some(QUIET));
    let out = t.git(cwd, args);
    server.settle();
    server.set_waves(None);
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.counts()
}

/// The store check a first push makes (issue 31) made beforehand, by `git-remote-fdl doctor`
/// (which remembers it, as a push would), so that what is counted next is the push alone.
fn store_checked(t: &TestEnv, repo: &str) {
    let out = t
        .command(
            env!("CARGO_BIN_EXE_git-remote-fdl"),
            repo,
            &["doctor", "origin"],
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// Waves that held a listing request: each listing page in sequence is one round trip.
fn listing_waves(c: &Counts) -> u64 {
    let mut w = c.list_waves.clone();
    w.sort();
    w.dedup();
    w.len() as u64
}

/// A bare repository `repo` whose `origin` is `url`, 1,024 requests in flight.
fn repo_with_origin(t: &TestEnv, repo: &str, url: &str) {
    t.ok(".", &["init", "-q", "--bare", repo]);
    t.ok(repo, &["remote", "add", "origin", url]);
    t.ok(repo, &["config", "remote.origin.fdlConcurrency", "1024"]);
}

#[test]
fn a_cold_clone_and_a_fetch_after_ls_remote_take_a_few_waves() {
    let server = s3lite::start();
    server.put_files("waves", "lake/", &chain(VERSIONS, 0).files);
    let t = env(&server);
    let url = "fdl::s3://waves/lake/";
    repo_with_origin(&t, "clone.git", url);
    let cold = waves(&server, &t, "clone.git", &["fetch", "-q", "origin"]);
    eprintln!("cold clone: {cold:?}");
    // Bounds below, and above: a count of nothing would pass every upper bound.
    assert!(cold.gets > VERSIONS, "every version read: {cold:?}");
    assert!(
        cold.waves <= 10 + listing_waves(&cold),
        "cold clone: {} waves ({} of them listings), {} requests",
        cold.waves,
        listing_waves(&cold),
        cold.requests
    );

    // 20 new versions: what is new is listed from the newest known version while the new tip
    // is read, then read at once: a few waves whatever the history's length.
    let mut more = chain(VERSIONS, 0);
    more.chain(VERSIONS + 1, VERSIONS + 20);
    more.branch("main", VERSIONS + 20);
    server.put_files("waves", "lake/", &more.files);
    let plus20 = waves(&server, &t, "clone.git", &["fetch", "-q", "origin"]);
    eprintln!("fetch of 20 new versions: {plus20:?}");
    assert!(plus20.gets >= 20, "each new version read: {plus20:?}");
    assert!(
        plus20.waves <= 6,
        "fetch of 20 new versions: {} waves, {} requests",
        plus20.waves,
        plus20.requests
    );

    repo_with_origin(&t, "after-ls.git", url);
    waves(&server, &t, "after-ls.git", &["ls-remote", "origin"]);
    let fetch = waves(&server, &t, "after-ls.git", &["fetch", "-q", "origin"]);
    eprintln!("fetch after ls-remote: {fetch:?}");
    assert!(fetch.waves >= 1, "the refs listed again: {fetch:?}");
    assert!(
        fetch.waves <= 10 + listing_waves(&fetch),
        "fetch after ls-remote: {} waves ({} of them listings), {} requests",
        fetch.waves,
        listing_waves(&fetch),
        fetch.requests
    );
    assert_eq!(
        t.ok("after-ls.git", &["rev-parse", "refs/remotes/origin/main"]),
        t.ok("clone.git", &["rev-parse", "refs/remotes/origin/main"])
    );
    // What ls-remote read went into the repository with the fetch, whole.
    t.ok(
        "after-ls.git",
        &["fsck", "--no-dangling", "--connectivity-only"],
    );
    let leftovers: Vec<_> = std::fs::read_dir(t.path("after-ls.git/objects/pack"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_no_op_fetch_of_a_thousand_refs_takes_a_constant_number_of_waves() {
    let server = s3lite::start();
    server.put_files("noop", "lake/", &chain(VERSIONS, 1_000).files);
    let t = env(&server);
    repo_with_origin(&t, "r.git", "fdl::s3://noop/lake/");
    t.ok("r.git", &["fetch", "-q", "origin"]);
    let noop = waves(&server, &t, "r.git", &["fetch", "-q", "origin"]);
    eprintln!("no-op fetch: {noop:?}");
    // The store was asked (the refs listed, HEAD and refs.json read), in at least one wave.
    assert!(
        noop.waves >= 1 && noop.lists >= 1 && noop.gets >= 1,
        "a no-op fetch still asks the store for the refs: {noop:?}"
    );
    assert!(
        noop.waves <= 4,
        "no-op fetch: {} waves, {} requests",
        noop.waves,
        noop.requests
    );
}

#[test]
fn a_store_that_throttles_slows_a_clone_down_but_does_not_fail_it() {
    let server = s3lite::start();
    server.put_files("slow", "lake/", &chain(300, 0).files);
    server.set_delay(Duration::from_millis(20));
    server.set_throttle(Some(4));
    let t = env(&server);
    repo_with_origin(&t, "r.git", "fdl::s3://slow/lake/");
    t.ok("r.git", &["fetch", "-q", "origin"]);
    let c = server.counts();
    eprintln!("throttled: {c:?}");
    assert!(c.throttled > 0, "the store never throttled: {c:?}");
    assert_eq!(
        t.ok("r.git", &["rev-list", "--count", "origin/main"]),
        "300\n"
    );
}

#[test]
fn a_tag_push_takes_three_waves() {
    let server = s3lite::start();
    server.put_files("push", "lake/", &chain(200, 100).files);
    let t = env(&server);
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://push/lake/", "r.git"],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    // The store check before the first write (issue 31), once for this user: five requests
    // one after the other (s3lite is unsigned: the stale DELETE goes plainly, removing the key).
    let first = waves(
        &server,
        &t,
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/first")],
    );
    eprintln!("first tag push: {first:?}");
    assert!(first.waves <= 3 + 5, "first push: {first:?}");
    for tag in ["pushed", "again"] {
        let spec = format!("{tip}:refs/tags/{tag}");
        let push = waves(&server, &t, "r.git", &["push", "-q", "origin", &spec]);
        eprintln!("tag push: {push:?}");
        // fdl.json, HEAD, refs.json and the ref listings at once; the tag; refs.json beside
        // the look for a racing ref in the tag's way.
        assert!(
            push.waves <= 3,
            "tag push: {} waves, {} requests",
            push.waves,
            push.requests
        );
        // No ref file is read: the clone remembered their ETags, and each push the ETag of
        // the tag it wrote.
        assert_eq!(push.gets, 3, "fdl.json, HEAD and refs.json only: {push:?}");
        assert_eq!(
            t.ok(
                "r.git",
                &["ls-remote", "origin", &format!("refs/tags/{tag}")]
            ),
            format!("{tip}\trefs/tags/{tag}\n")
        );
    }
    let refs_json = String::from_utf8(server.get("push", "lake/refs.json").unwrap()).unwrap();
    assert!(
        refs_json.contains("refs/tags/pushed") && refs_json.contains("refs/tags/again"),
        "{refs_json}"
    );
}

/// refs.json is read beside the ref listing. When another push moves a ref and rewrites
/// refs.json after the listing was answered but before refs.json was, the two disagree: the
/// push must then rewrite refs.json from the ref files read again, never from its listing
/// (which would put the other push's ref back where it was).
#[test]
fn a_push_racing_another_between_its_listing_and_refs_json_keeps_the_other_ref() {
    racing_push_keeps_the_other_writers("refs/heads/other");
}

/// The same when the other push moves a ref the listing saw: its file, read again by ETag,
/// must not be taken as the listing saw it.
#[test]
fn a_push_racing_another_that_moves_a_listed_branch_keeps_the_move() {
    racing_push_keeps_the_other_writers("refs/heads/main");
}

/// Another writer sets `name` to version 10, ref file and refs.json, while this push's listing
/// reads refs.json; this push's tag and the other's ref must both be in refs.json after.
fn racing_push_keeps_the_other_writers(name: &str) {
    // A lake of 50 versions: a small server (see `s3lite::start_with`).
    let server = s3lite::start_with(64);
    let lake = chain(50, 5);
    server.put_files("race", "lake/", &lake.files);
    let t = env(&server);
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://race/lake/", "r.git"],
    );
    let v10 = crate::support::vid(10);
    let mut refs_json: serde_json::Value =
        serde_json::from_slice(&server.get("race", "lake/refs.json").unwrap()).unwrap();
    refs_of(&mut refs_json).insert(name.into(), serde_json::Value::String(v10.clone()));
    let refs_json = serde_json::to_vec(&refs_json).unwrap();
    let key = format!("race/lake/{name}");
    server.before_next_get("race", "lake/refs.json", move |objects| {
        objects.insert(key, std::sync::Arc::new(format!("{v10}\n").into_bytes()));
        objects.insert("race/lake/refs.json".into(), std::sync::Arc::new(refs_json));
    });
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/mine")],
    );
    let mut written: serde_json::Value =
        serde_json::from_slice(&server.get("race", "lake/refs.json").unwrap()).unwrap();
    let refs = refs_of(&mut written).clone();
    assert_eq!(
        refs.get(name),
        Some(&serde_json::Value::String(crate::support::vid(10))),
        "the other push's {name} is kept: {refs:?}"
    );
    assert!(refs.contains_key("refs/tags/mine"), "{refs:?}");
}

/// A lake whose refs.json lags its ref files (a writer stopped between the two): the push's
/// first attempt cannot trust its listing, so refs.json's token and the refs are read again.
/// The refs are listed again, not read one by one: every file whose ETag is the one the
/// push's listing saw (or the one it wrote) is taken as it was (it read all 300 before).
#[test]
fn a_push_onto_a_stale_refs_json_lists_the_refs_again_rather_than_reading_each() {
    // Up to 256 connections at once while the clone reads the ref files (`s3lite::start_with`).
    let server = s3lite::start_with(600);
    let mut lake = chain(300, 300);
    lake.branch("main", 299).refs_json().branch("main", 300);
    server.put_files("stale", "lake/", &lake.files);
    let t = env(&server);
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://stale/lake/", "r.git"],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    store_checked(&t, "r.git");
    let spec = format!("{tip}:refs/tags/onto-stale");
    let push = waves(&server, &t, "r.git", &["push", "-q", "origin", &spec]);
    eprintln!("tag push onto a stale refs.json: {push:?}");
    // The listing; the tag beside refs.json's token; the refs listed again beside the look
    // for a racing ref; refs.json.
    assert!(push.waves <= 4, "{push:?}");
    assert_eq!(push.gets, 4, "fdl.json, HEAD, refs.json twice: {push:?}");
    let mut written: serde_json::Value =
        serde_json::from_slice(&server.get("stale", "lake/refs.json").unwrap()).unwrap();
    let refs = refs_of(&mut written);
    let v300 = serde_json::Value::String(crate::support::vid(300));
    assert_eq!(
        refs.get("refs/heads/main"),
        Some(&v300),
        "repaired: {refs:?}"
    );
    assert_eq!(refs.get("refs/tags/onto-stale"), Some(&v300), "{refs:?}");
    assert_eq!(refs.len(), 302, "main, 300 tags and the new one");
}

/// Pushers racing for refs.json: each loser reads refs.json again and lists the refs, reading
/// only the tags the others made (it read all 300 ref files for each lost race before).
#[test]
fn racing_tag_pushes_read_only_the_ref_files_that_changed() {
    const RACERS: usize = 8;
    let server = s3lite::start_with(600);
    server.put_files("racers", "lake/", &chain(300, 300).files);
    let t = env(&server);
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://racers/lake/", "r.git"],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    for i in 0..RACERS {
        crate::support::copy_dir(&t.path("r.git"), &t.path(&format!("r{i}.git")));
    }
    server.reset();
    // A store far away: every push's refs.json write meets the others'.
    server.set_delay(Duration::from_millis(20));
    let pushes: Vec<_> = (0..RACERS)
        .map(|i| {
            let spec = format!("{tip}:refs/tags/racer-{i}");
            let repo = format!("r{i}.git");
            let mut push = t.command("git", &repo, &["push", "-q", "origin", &spec]);
            push.stdout(std::process::Stdio::piped());
            push.stderr(std::process::Stdio::piped());
            push.spawn().unwrap()
        })
        .collect();
    for push in pushes {
        let out = push.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "a racing push failed: {err}");
    }
    let counts = server.counts();
    eprintln!("{RACERS} racing tag pushes: {counts:?}");
    // Each push: fdl.json, HEAD and refs.json; then per race it lost (at most one per other
    // push) refs.json again; and the others' tags, each read once.
    let most = (RACERS * (3 + 2 * (RACERS - 1))) as u64;
    assert!(counts.gets <= most, "{} GETs, at most {most}", counts.gets);
    let least = (RACERS * 3) as u64;
    assert!(
        counts.gets >= least,
        "{} GETs, at least {least}",
        counts.gets
    );
    let mut written: serde_json::Value =
        serde_json::from_slice(&server.get("racers", "lake/refs.json").unwrap()).unwrap();
    let refs = refs_of(&mut written);
    let v300 = serde_json::Value::String(crate::support::vid(300));
    for i in 0..RACERS {
        let tag = format!("refs/tags/racer-{i}");
        assert_eq!(refs.get(&tag), Some(&v300), "{tag} in refs.json");
        assert!(
            server.get("racers", &format!("lake/{tag}")).is_some(),
            "{tag}"
        );
    }
}

#[test]
fn a_cold_clone_lists_every_version_while_it_reads_a_thousand_ref_files() {
    // Listed after the ref files were read, the first page of versions/ took a wave of its
    // own between the refs' wave and its ranges'; it now shares the refs' wave. Up to 1,024
    // requests at once: a server of a little more (see `s3lite::start_with`).
    let server = s3lite::start_with(1_100);
    // ETags that are no MD5 prove no ref file's content: each is read.
    server.set_opaque_etags(true);
    server.put_files("many-refs", "lake/", &chain(VERSIONS, 1_000).files);
    let t = env(&server);
    repo_with_origin(&t, "c.git", "fdl::s3://many-refs/lake/");
    let cold = waves(&server, &t, "c.git", &["fetch", "-q", "origin"]);
    eprintln!("cold clone, 1,000 tags: {cold:?}");
    assert!(cold.gets >= 1_000, "the ref files read: {cold:?}");
    assert!(cold.waves <= 7, "cold clone: {cold:?}");
}

/// Every ref of a repository, with the commit it holds.
pub(crate) fn refs_in(t: &TestEnv, repo: &str) -> String {
    t.ok(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
}

#[test]
fn a_cold_clone_reads_only_the_ref_files_whose_listed_md5_does_not_prove_refs_json() {
    // S3 lists each ref file with the MD5 of its content: where that is the MD5 of what
    // refs.json says the ref holds, the file need not be read (issue 29, item 1). Where
    // refs.json lies (a branch moved since, a tag it misnames), the file is read, and the
    // refs are the ref files', as without refs.json.
    let server = s3lite::start_with(1_100);
    let lake = chain(VERSIONS, 1_000);
    server.put_files("proven", "lake/", &lake.files);
    let mut lying = lake.clone();
    let mut refs: serde_json::Value = serde_json::from_slice(&lake.files["refs.json"]).unwrap();
    let listed = refs_of(&mut refs);
    listed.insert("refs/heads/main".into(), crate::support::vid(5).into());
    listed.insert("refs/tags/t0007".into(), crate::support::vid(8).into());
    lying.put("refs.json", serde_json::to_vec(&refs).unwrap());
    server.put_files("lying", "lake/", &lying.files);
    let mut unlisted = lake.clone();
    unlisted.remove("refs.json");
    server.put_files("unlisted", "lake/", &unlisted.files);
    // A tag file deleted, refs.json still naming it: the listing decides that it is gone.
    let mut deleted = lake.clone();
    deleted.remove("refs/tags/t0009");
    server.put_files("deleted", "lake/", &deleted.files);

    let t = env(&server);
    let mut counts = Vec::new();
    for bucket in ["proven", "lying", "unlisted", "deleted"] {
        repo_with_origin(&t, bucket, &format!("fdl::s3://{bucket}/lake/"));
        counts.push(waves(&server, &t, bucket, &["fetch", "-q", "origin"]));
    }
    eprintln!("cold clones, 1,000 tags (proven, lying, unlisted, deleted): {counts:?}");
    let (proven, lying, unlisted, deleted) = (&counts[0], &counts[1], &counts[2], &counts[3]);
    assert_eq!(refs_in(&t, "proven"), refs_in(&t, "unlisted"));
    assert_eq!(refs_in(&t, "lying"), refs_in(&t, "unlisted"));
    assert_eq!(
        lying.gets,
        proven.gets + 2,
        "the two refs refs.json lies about are read"
    );
    // Without refs.json every ref file (1,000 tags and main) is read.
    assert_eq!(unlisted.gets, proven.gets + 1_001);
    let without_the_tag: String = refs_in(&t, "unlisted")
        .lines()
        .filter(|l| !l.starts_with("refs/tags/t0009 "))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without_the_tag, refs_in(&t, "unlisted"));
    assert_eq!(refs_in(&t, "deleted"), without_the_tag);
    assert_eq!(
        deleted.gets, proven.gets,
        "a tag the listing lacks is not read"
    );
}

#[test]
fn a_clone_racing_a_writer_between_its_listing_and_the_ref_reads_reads_the_new_tip() {
    // A clone lists every version while it reads the ref files; a writer adds version 51
    // and moves `main` to it in between: the listing misses the tip, which is read anyway.
    let server = s3lite::start_with(64);
    // With MD5 ETags, main as listed is proven by refs.json and not read (a clone of the lake
    // as it was when listed); ETags that prove nothing make it read the file.
    server.set_opaque_etags(true);
    let lake = chain(50, 3);
    server.put_files("early", "lake/", &lake.files);
    let mut grown = lake.clone();
    grown.chain(51, 51);
    let added: Vec<(String, Vec<u8>)> = grown
        .files
        .iter()
        .filter(|(k, _)| k.contains(&crate::support::vid(51)))
        .map(|(k, v)| (format!("early/lake/{k}"), v.clone()))
        .collect();
    assert!(!added.is_empty());
    let v51 = crate::support::vid(51);
    server.before_next_get("early", "lake/refs/heads/main", move |objects| {
        for (k, v) in added {
            objects.insert(k, std::sync::Arc::new(v));
        }
        objects.insert(
            "early/lake/refs/heads/main".into(),
            std::sync::Arc::new(format!("{v51}\n").into_bytes()),
        );
    });
    let t = env(&server);
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://early/lake/", "c.git"],
    );
    let log = t.ok("c.git", &["log", "--format=%s", "main"]);
    assert_eq!(log.lines().count(), 51, "{log}");
    assert_eq!(log.lines().next(), Some("Load batch 51"), "{log}");
}

/// The map of refs in a `refs.json`: under `"refs"`, or the whole object.
fn refs_of(v: &mut serde_json::Value) -> &mut serde_json::Map<String, serde_json::Value> {
    let v = match v.get("refs").is_some() {
        true => &mut v["refs"],
        false => v,
    };
    v.as_object_mut().expect("refs.json holds an object")
}

#[test]
fn a_second_ls_remote_outside_any_repository_reads_only_the_refs() {
    let server = s3lite::start();
    server.put_files("outside", "lake/", &chain(VERSIONS, 10).files);
    let t = env(&server);
    let url = "fdl::s3://outside/lake/";
    let first = waves(&server, &t, ".", &["ls-remote", url]);
    assert!(
        first.gets > VERSIONS,
        "the first reads every version: {first:?}"
    );
    // The user's cache (under HOME, a temporary folder here) remembers commits (a folder a
    // lake) and ref ETags (a file a lake URL, beside it).
    let cached: Vec<_> = std::fs::read_dir(t.path("home/.cache/git-remote-fdl"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        cached.iter().filter(|p| p.is_dir()).count(),
        1,
        "one lake, one cache folder: {cached:?}"
    );
    assert_eq!(
        cached
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "refs"))
            .count(),
        1,
        "one lake, one file of refs: {cached:?}"
    );
    let second = waves(&server, &t, ".", &["ls-remote", url]);
    eprintln!("second ls-remote outside a repository: {second:?}");
    // fdl.json, HEAD, refs.json, and git-packs/list.json: sent while the refs are read, for
    // new versions packs may hold, and left unanswered once every ref is known.
    assert!(
        second.gets <= 4 && second.waves <= 3,
        "second ls-remote: {second:?}"
    );
    assert!(second.waves >= 1, "the refs listed: {second:?}");
    // A new version is read, and only it.
    let mut more = chain(VERSIONS, 10);
    more.chain(VERSIONS + 1, VERSIONS + 1);
    more.branch("main", VERSIONS + 1);
    server.put_files("outside", "lake/", &more.files);
    let third = waves(&server, &t, ".", &["ls-remote", url]);
    // Its two files, and git-packs/list.json (absent here), read beside the refs for new packs.
    assert!(third.gets <= 3 + 3 + 1, "third ls-remote: {third:?}");
    assert!(third.gets > second.gets, "the new version read: {third:?}");
    // The cache changes no result: without it, the same listing.
    let listed = t.ok(".", &["ls-remote", url]);
    std::fs::remove_dir_all(t.path("home/.cache/git-remote-fdl")).unwrap();
    assert_eq!(t.ok(".", &["ls-remote", url]), listed);
}

/// Git lists the refs first whatever it does, so the helper starts its first round trip when
/// the session begins: while Git is still sending options, fdl.json, HEAD, refs.json and the
/// ref listing are already under way. Here Git's side is played by hand and stops after
/// `capabilities`: the requests arrive all the same, and the listing that follows is right.
#[test]
fn the_first_round_trip_leaves_before_git_asks_for_the_refs() {
    use std::io::{BufRead, BufReader, Write};
    // A few requests: a small server (see `s3lite::start_with`).
    let server = s3lite::start_with(64);
    server.put_files("early", "lake/", &chain(20, 3).files);
    let t = env(&server);
    let mut helper = t
        .command(
            env!("CARGO_BIN_EXE_git-remote-fdl"),
            ".",
            &["origin", "s3://early/lake/"],
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_helper = helper.stdin.take().unwrap();
    let mut from_helper = BufReader::new(helper.stdout.take().unwrap());
    to_helper.write_all(b"capabilities\n").unwrap();
    let mut line = String::new();
    while from_helper.read_line(&mut line).unwrap() > 0 && !line.ends_with("\n\n") {}
    assert!(line.contains("push\n"), "capabilities: {line:?}");
    // Nothing more from Git yet: wait (up to a minute, on a loaded machine) for the requests.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while server.counts().requests < 4 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let early = server.counts();
    assert!(
        early.gets >= 2 && early.lists >= 1,
        "before Git asked for the refs: {early:?}"
    );
    to_helper.write_all(b"list\n").unwrap();
    let mut listed = Vec::new();
    loop {
        line.clear();
        from_helper.read_line(&mut line).unwrap();
        if line == "\n" || line.is_empty() {
            break;
        }
        listed.push(line.trim_end().to_string());
    }
    drop(to_helper);
    let out = helper.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(listed.len(), 5, "HEAD, main and three tags: {listed:?}");
    assert_eq!(listed[0], "@refs/heads/main HEAD");
    // The same commits as a clone finds.
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://early/lake/", "c.git"],
    );
    let main = t.ok("c.git", &["rev-parse", "main"]);
    assert!(
        listed.contains(&format!("{} refs/heads/main", main.trim())),
        "{listed:?}"
    );
}
