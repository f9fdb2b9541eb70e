//! Pushes under stress: many real `git push` processes racing on one lake, a push killed
//! between its two writes, and a store that fails, resets, stalls and loses answers.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Instant;

use crate::support::{faults, vid, LakeAt, LakeBuilder, TestEnv, Where};

/// One writer's pushes: its number, and for each push the ref it pushed, stdout and stderr.
type WriterLog = (usize, Vec<(String, String, String)>);

const WRITERS: usize = 8;
const ROUNDS: usize = 13; // 8 writers x 13 rounds x 2 pushes = 208 pushes

/// A line of `git push --porcelain`: flag, destination, summary.
fn porcelain(out: &str) -> Vec<(char, String, String)> {
    out.lines()
        .filter_map(|l| {
            let mut parts = l.split('\t');
            let flag = parts.next()?.chars().next()?;
            let spec = parts.next()?;
            let summary = parts.next()?.to_string();
            let dst = spec.split(':').nth(1)?.to_string();
            Some((flag, dst, summary))
        })
        .collect()
}

pub(crate) fn race(place: Where) {
    let mut l = LakeBuilder::new();
    let versions = (WRITERS * ROUNDS + 2) as u64;
    l.chain(1, versions);
    l.branch("main", 1).branch("all", versions);
    l.refs_json();
    let mut t = TestEnv::new();
    let lake = t.lake_at(place, "lake", &l);
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    t.ok(".", &["clone", "-q", "--bare", &lake.url, "w0.git"]);
    let commits: HashMap<String, String> = t
        .ok(
            "w0.git",
            &[
                "log",
                "--format=%H %(trailers:key=FDL-Version,valueonly)",
                "all",
            ],
        )
        .lines()
        .filter_map(|l| {
            l.split_once(' ')
                .map(|(c, v)| (v.trim().to_string(), c.to_string()))
        })
        .collect();
    for w in 1..WRITERS {
        t.ok(
            ".",
            &["clone", "-q", "--bare", &lake.url, &format!("w{w}.git")],
        );
    }
    let start = Instant::now();
    let results: Vec<WriterLog> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (t, commits) = (&t, &commits);
                s.spawn(move || {
                    let mut outs = Vec::new();
                    for round in 0..ROUNDS {
                        // Everyone races to create the same tag, each with its own version.
                        let tag_commit = &commits[&vid((w + 1) as u64)];
                        let spec = format!("{tag_commit}:refs/tags/race-{round}");
                        // And to move main to a version no one else pushes.
                        let target = &commits[&vid((2 + w * ROUNDS + round) as u64)];
                        let branch = format!("{target}:refs/heads/main");
                        for (spec, dst) in [
                            (spec, format!("refs/tags/race-{round}")),
                            (branch, "refs/heads/main".to_string()),
                        ] {
                            let out = t
                                .command(
                                    "git",
                                    &format!("w{w}.git"),
                                    &["push", "--porcelain", "--force", "origin", &spec],
                                )
                                .output()
                                .unwrap();
                            outs.push((
                                dst,
                                String::from_utf8_lossy(&out.stdout).to_string(),
                                String::from_utf8_lossy(&out.stderr).to_string(),
                            ));
                        }
                    }
                    (w, outs)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let elapsed = start.elapsed();

    let version_of: HashMap<&String, &String> = commits.iter().map(|(v, c)| (c, v)).collect();
    let mut tag_winners: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut branch_moves: Vec<(String, String)> = Vec::new();
    let (mut pushes, mut rejected, mut retries) = (0, 0, 0);
    for (w, outs) in &results {
        for (pushed, stdout, stderr) in outs {
            pushes += 1;
            // Every push reports its one ref: a push that died without a word would count as
            // neither a winner nor a rejection, and the checks below would not see it.
            let reported = porcelain(stdout);
            assert_eq!(
                reported.iter().map(|(_, dst, _)| dst).collect::<Vec<_>>(),
                [pushed],
                "{stdout}{stderr}"
            );
            retries += stderr
                .lines()
                .filter_map(|l| l.split("refs.json written in ").nth(1))
                .filter_map(|r| r.split(' ').next()?.parse::<u32>().ok())
                .map(|a| a.saturating_sub(1))
                .sum::<u32>();
            assert!(!stderr.contains("panicked"), "{stderr}");
            for (flag, dst, summary) in reported {
                match flag {
                    '!' => {
                        rejected += 1;
                        // Pushes here are forced: losing the race is no reason to pull. A tag
                        // made before this push listed it never moves; one made between the
                        // listing and the write already exists.
                        let expected: &[&str] = if dst.starts_with("refs/tags/") {
                            &["(already exists)", "(tags in a lake never move)"]
                        } else {
                            &["(another push changed this ref while this one ran; push again)"]
                        };
                        assert!(
                            expected.iter().any(|e| summary.contains(e)),
                            "{dst}: {summary}\n{stderr}"
                        );
                    }
                    _ if dst.starts_with("refs/tags/") => {
                        tag_winners.entry(dst).or_default().push(*w)
                    }
                    _ => {
                        let (old, new) = summary
                            .split_once("...")
                            .or_else(|| summary.split_once(".."))
                            .unwrap_or_else(|| panic!("{summary}"));
                        let new = new.split_whitespace().next().unwrap_or(new);
                        branch_moves.push((old.to_string(), new.to_string()));
                    }
                }
            }
        }
    }
    assert_eq!(pushes, WRITERS * ROUNDS * 2);
    // Each tag was created exactly once, and holds the winner's version.
    assert_eq!(tag_winners.len(), ROUNDS, "{tag_winners:?}");
    for (tag, winners) in &tag_winners {
        assert_eq!(winners.len(), 1, "{tag} created by {winners:?}");
        assert_eq!(
            lake.read(tag).unwrap().trim(),
            vid((winners[0] + 1) as u64),
            "{tag}"
        );
    }
    // Successful branch updates form one chain from the first value to the last: no lost update.
    let t0 = t
        .ok("w0.git", &["rev-parse", "--short", &commits[&vid(1)]])
        .trim()
        .to_string();
    let mut next: HashMap<String, String> = HashMap::new();
    for (old, new) in &branch_moves {
        assert!(
            next.insert(old.clone(), new.clone()).is_none(),
            "two updates from {old}: a lost update"
        );
    }
    let mut at = t0;
    for _ in 0..branch_moves.len() {
        at = next
            .remove(&at)
            .unwrap_or_else(|| panic!("chain broken at {at}; left: {next:?}"));
    }
    assert!(next.is_empty());
    let main = lake.read("refs/heads/main").unwrap();
    let full = commits.values().find(|c| c.starts_with(&at)).unwrap();
    assert_eq!(
        main.trim(),
        version_of[full].as_str(),
        "main holds the last successful update"
    );
    // When writers stop, refs.json equals the ref files.
    assert_eq!(lake.refs_json(), lake.ref_files());
    eprintln!(
        "race ({place:?}): {pushes} pushes by {WRITERS} processes in {elapsed:.1?}: {} tags created once each, \
         {} branch updates in one chain, {rejected} rejected, {retries} refs.json retries",
        tag_winners.len(),
        branch_moves.len()
    );
}

#[test]
fn racing_pushes_local_folder() {
    race(Where::Local)
}

#[test]
fn racing_pushes_s3() {
    race(Where::S3)
}

pub(crate) fn crash(place: Where) {
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3);
    l.refs_json();
    let mut t = TestEnv::new();
    let lake: LakeAt = t.lake_at(place, "lake", &l);
    t.ok(".", &["clone", "-q", &lake.url, "work"]);
    let pid_file = t.path("helper.pid");
    let mut push = t
        .command(
            "git",
            "work",
            &["push", "origin", "origin/main:refs/tags/crashed"],
        )
        .env("GIT_REMOTE_FDL_TEST_STOP_BEFORE_REFS_JSON", &pid_file)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::support::run::kill_at_crash_point(&pid_file);
    let status = push.wait().unwrap();
    assert!(!status.success(), "git reports the dead helper");
    // The ref was written; refs.json was not.
    assert_eq!(lake.read("refs/tags/crashed").unwrap().trim(), vid(3));
    assert!(!lake.refs_json().contains_key("refs/tags/crashed"));
    // Readers still work: the ref files are the truth for readers that list.
    let listed = t.ok("work", &["ls-remote", "origin"]);
    assert!(listed.contains("refs/tags/crashed"), "{listed}");
    t.ok("work", &["fetch", "-q", "origin"]);
    if place == Where::Local {
        // A reader that cannot list sees the older refs.json, consistently.
        let server = crate::support::http::serve(&lake.dir);
        let via_http = t.ok("work", &["ls-remote", &format!("fdl::{}", server.url)]);
        assert!(
            !via_http.contains("crashed") && via_http.contains("refs/heads/main"),
            "{via_http}"
        );
    }
    // The next push repairs refs.json.
    t.ok(
        "work",
        &["push", "-q", "origin", "origin/main~1:refs/tags/after"],
    );
    assert_eq!(lake.refs_json(), lake.ref_files());
    assert!(lake.refs_json().contains_key("refs/tags/crashed"));
}

#[test]
fn push_killed_between_ref_and_refs_json_local() {
    crash(Where::Local)
}

#[test]
fn push_killed_between_ref_and_refs_json_s3() {
    crash(Where::S3)
}

/// The plan is a function of the request alone, hits each kind of fault at about its rate, and
/// never fails one request more than twice in a row.
#[test]
fn the_fault_plan_repeats_and_keeps_its_rates() {
    use faults::{plan, Fault};
    let n = 20_000;
    let mut counts: HashMap<(&str, Fault), usize> = HashMap::new();
    for i in 0..n {
        let method = if i % 2 == 0 { "GET" } else { "PUT" };
        let request = format!("{method} /faulty/versions/{i}/version.json");
        let fault = plan(&request, i % 5, 0);
        assert_eq!(plan(&request, i % 5, 0), fault);
        assert_eq!(plan(&request, i % 5, faults::MAX_IN_A_ROW), Fault::None);
        *counts.entry((method, fault)).or_default() += 1;
    }
    let rate =
        |method, fault| counts.get(&(method, fault)).copied().unwrap_or(0) as f64 / (n / 2) as f64;
    for method in ["GET", "PUT"] {
        for (fault, expected) in [
            (Fault::Unavailable, 0.111),
            (Fault::Reset, 0.077),
            (Fault::Stall, 0.034),
        ] {
            let r = rate(method, fault);
            assert!((r - expected).abs() < 0.015, "{method} {fault:?}: {r}");
        }
    }
    assert_eq!(rate("GET", Fault::LoseAnswer), 0.0);
    let lost = rate("PUT", Fault::LoseAnswer);
    assert!((lost - 0.778 / 3.0).abs() < 0.02, "{lost}");
}

#[test]
fn store_faults_are_retried_or_rechecked_and_reported() {
    let m = crate::support::moto::moto();
    let proxy = faults::start(&m.endpoint);
    let mut l = LakeBuilder::new();
    l.chain(1, 40);
    l.branch("main", 30);
    l.refs_json();
    let mut t = TestEnv::new();
    let lake = t.lake_at(Where::S3, "faulty", &l);
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    t.ok(".", &["init", "-q", "--bare", "work.git"]);
    t.ok("work.git", &["remote", "add", "origin", &lake.url]);
    t.ok(
        "work.git",
        &["config", "--add", "remote.origin.fdlOption", "timeout=1s"],
    );
    t.ok(
        "work.git",
        &["fetch", "-q", "origin", "refs/heads/*:refs/heads/*"],
    );
    assert_eq!(t.ok("work.git", &["rev-list", "--count", "main"]), "30\n");
    // Tags and branch moves through the faulty store.
    let commits: Vec<String> = t
        .ok("work.git", &["rev-list", "--reverse", "main"])
        .lines()
        .map(str::to_string)
        .collect();
    for (i, c) in commits.iter().enumerate().take(12) {
        t.ok(
            "work.git",
            &["push", "-q", "origin", &format!("{c}:refs/tags/f{i}")],
        );
        assert_eq!(
            lake.read(&format!("refs/tags/f{i}")).unwrap().trim(),
            vid(i as u64 + 1)
        );
    }
    t.ok("work.git", &["fetch", "-q", "origin"]);
    for c in commits.iter().rev().take(4) {
        t.ok(
            "work.git",
            &[
                "push",
                "-q",
                "--force",
                "origin",
                &format!("{c}:refs/heads/main"),
            ],
        );
    }
    assert_eq!(lake.read("refs/heads/main").unwrap().trim(), vid(27));
    assert_eq!(lake.refs_json(), lake.ref_files());
    let c = &proxy.counters;
    let injected = c.injected_sorted();
    eprintln!(
        "faults: {} requests, {} answered 503, {} connections reset, {} stalled past the timeout, \
         {} writes whose answer was lost; plan digest {:016x}",
        c.requests.load(Ordering::SeqCst),
        c.unavailable.load(Ordering::SeqCst),
        c.resets.load(Ordering::SeqCst),
        c.delayed.load(Ordering::SeqCst),
        c.lost_answers.load(Ordering::SeqCst),
        faults::digest(&injected)
    );
    // Every kind of fault happened, on reads and on writes.
    for kind in ["Unavailable", "Reset", "Stall"] {
        for method in ["GET ", "PUT "] {
            assert!(
                injected
                    .iter()
                    .any(|f| f.starts_with(method) && f.ends_with(kind)),
                "no {kind} on a {method}: {injected:#?}"
            );
        }
    }
    assert!(
        injected.iter().any(|f| f.ends_with("LoseAnswer")),
        "{injected:#?}"
    );
    // A store that keeps failing: the push is refused clearly, and claims nothing.
    proxy.fail_all_writes.store(true, Ordering::SeqCst);
    let err = t.fails(
        "work.git",
        &["push", "origin", &format!("{}:refs/tags/never", commits[0])],
    );
    assert_eq!(
        err,
        format!(
            "To {url}\n ! [remote rejected] {} -> never (refs/tags/never: the store answered 503 \
             Service Unavailable)\nerror: failed to push some refs to '{url}'\n",
            commits[0],
            url = lake.url
        )
    );
    assert_eq!(lake.read("refs/tags/never"), None);
}
