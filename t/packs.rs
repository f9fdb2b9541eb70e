//! Issue 22: a lake's own Git packs (`git-remote-fdl pack`), used by readers only where each
//! version checks out. Every test compares a clone made through the packs with the commits the
//! lake's versions map to when read one by one (`git ls-remote` of a remote whose
//! `fdlUsePacks` is off, in a repository of its own), so a pack can make a clone cheaper but
//! never different.

use std::time::Duration;

use crate::support::s3lite::{self, S3Lite};
use crate::support::{helper, lake, parse_ls_remote, LakeAt, TestEnv, Where, HELPER};

pub(crate) use crate::support::run::pack;

/// Each ref's commit as the lake's versions map to them read one by one: a remote that never
/// reads the packs, in a new repository each time (whose cache knows nothing).
pub(crate) fn read_one_by_one(t: &TestEnv, url: &str) -> Vec<(String, String)> {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = format!("one-by-one-{n}.git");
    t.ok(".", &["init", "-q", "--bare", &dir]);
    t.ok(&dir, &["remote", "add", "origin", url]);
    t.ok(&dir, &["config", "remote.origin.fdlUsePacks", "false"]);
    let out = t.git(&dir, &["ls-remote", "origin"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("git-packs"),
        "{stderr}"
    );
    parse_ls_remote(&String::from_utf8_lossy(&out.stdout))
}

pub(crate) use crate::support::requests_traced;

/// Clones `url` into `dir`; its refs, the packs its `.git` holds, and what Git said.
pub(crate) fn clone(
    t: &TestEnv,
    url: &str,
    dir: &str,
) -> (Vec<(String, String)>, Vec<String>, String) {
    clone_with(t, &[], url, dir)
}

/// [`clone`], with `config` (`-c` and its pair, as many as given) before the address.
pub(crate) fn clone_with(
    t: &TestEnv,
    config: &[&str],
    url: &str,
    dir: &str,
) -> (Vec<(String, String)>, Vec<String>, String) {
    let mut args = vec!["clone", "-q", "--bare"];
    args.extend(config);
    args.extend([url, dir]);
    let out = t.git(".", &args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "clone: {stderr}");
    let refs = t.ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    let refs = refs
        .lines()
        .map(|l| {
            let (c, n) = l.split_once(' ').unwrap();
            (c.to_string(), n.to_string())
        })
        .collect();
    let packs = std::fs::read_dir(t.path(dir).join("objects/pack"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pack"))
        .collect();
    t.ok(dir, &["fsck", "--no-dangling"]);
    (refs, packs, stderr)
}

pub(crate) fn same_refs(lake: &[(String, String)], cloned: &[(String, String)]) {
    for (commit, name) in lake.iter().filter(|(_, n)| n != "HEAD") {
        let found = cloned.iter().find(|(_, n)| n == name);
        assert_eq!(found.map(|(c, _)| c), Some(commit), "{name}: {cloned:?}");
    }
}

/// Adds versions `was + 1..=last` to the lake `lake(was)` wrote at `at`, as a writer does: the
/// new versions' files, then the branch, then `refs.json`. Files already there are left as they
/// are (a rewrite would give them new ETags on some stores).
pub(crate) fn grow(at: &LakeAt, was: u64, last: u64) {
    let before = lake(was, was / 2);
    let mut more = lake(was, was / 2);
    more.chain(was + 1, last);
    more.branch("main", last);
    more.refs_json();
    let text = |path: &str| String::from_utf8_lossy(&more.files[path]).into_owned();
    for path in more.files.keys() {
        if path.starts_with("versions/") && !before.files.contains_key(path) {
            at.write(path, &text(path));
        }
    }
    at.write("refs/heads/main", &text("refs/heads/main"));
    at.write("refs.json", &text("refs.json"));
}

pub(crate) fn listed_packs(lake: &LakeAt) -> Vec<String> {
    pack_names(&lake.read("git-packs/list.json").expect("a list"))
}

/// The packs a `list.json` names.
pub(crate) fn pack_names(list: &str) -> Vec<String> {
    let list: serde_json::Value = serde_json::from_str(list).unwrap();
    let packs = list["packs"].as_array().unwrap();
    packs
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_packed_lake_clones_to_the_same_commits_through_its_packs_on_every_store() {
    for place in Where::EVERY_STORE {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "packed", &lake(40, 20));
        let said = pack(&t, &at.url);
        assert!(said.contains("40 new were packed"), "{place:?}: {said}");
        let packs = listed_packs(&at);
        assert_eq!(packs.len(), 1, "{place:?}");
        let expected = read_one_by_one(&t, &at.url);
        let (refs, installed, stderr) = clone(&t, &at.url, "one.git");
        same_refs(&expected, &refs);
        assert!(!stderr.contains("warning"), "{place:?}: {stderr}");
        // A folder lists no ETags: its versions are read, as cheap there as checking them.
        let used = installed.contains(&format!("{}.pack", packs[0]));
        assert_eq!(used, place != Where::Local, "{place:?}: {installed:?}");

        // Incremental: a second run packs only what is new.
        grow(&at, 40, 55);
        let said = pack(&t, &at.url);
        assert!(
            said.contains("40 versions already packed; 15 new"),
            "{place:?}: {said}"
        );
        assert_eq!(listed_packs(&at).len(), 2, "{place:?}");
        assert!(pack(&t, &at.url).contains("Everything up-to-date"));
        let expected = read_one_by_one(&t, &at.url);
        let (refs, installed, stderr) = clone(&t, &at.url, "two.git");
        same_refs(&expected, &refs);
        assert!(!stderr.contains("warning"), "{place:?}: {stderr}");
        let from_lake = listed_packs(&at)
            .iter()
            .filter(|p| installed.contains(&format!("{p}.pack")))
            .count();
        assert_eq!(
            from_lake,
            if place == Where::Local { 0 } else { 2 },
            "{place:?}"
        );
    }
}

/// Every way a pack can be wrong falls back to reading the versions it covers, with one
/// warning, and gives the commits reading them gives.
#[test]
fn a_version_rewritten_after_packing_a_damaged_pack_or_a_lying_record_is_read_instead() {
    for place in [Where::S3, Where::Gcs, Where::Azure, Where::SeaweedFs] {
        pack_failures_fall_back(place);
    }
}

/// Rewrites version `n`'s record in the lake (the same parent, the message "rewritten"), as
/// no writer should after packing; gives its ID.
pub(crate) fn rewrite_version(at: &LakeAt, n: u64) -> String {
    let id = crate::support::lake::vid(n);
    let rewritten = format!(
        "{{\"parents\": [\"{}\"], \"message\": \"rewritten\", \"created_at\": \"2026-01-01T00:00:00Z\"}}",
        crate::support::lake::vid(n - 1)
    );
    at.write(&format!("versions/{id}/version.json"), &rewritten);
    id
}

fn pack_failures_fall_back(place: Where) {
    let mut t = TestEnv::new();
    let at = t.lake_at(place, "lies", &lake(30, 15));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);

    // A version rewritten after packing: its commit (and its children's) change.
    let v10 = rewrite_version(&at, 10);
    let expected = read_one_by_one(&t, &at.url);
    let (refs, _, stderr) = clone(&t, &at.url, "rewritten.git");
    same_refs(&expected, &refs);
    assert!(
        stderr.contains(&format!(
            "version {v10}: it was rewritten after it was packed"
        )) && stderr.matches("warning:").count() == 1,
        "{stderr}"
    );

    // A record whose commit for a version is another one.
    let record = at.read(&format!("git-packs/{name}.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let (c1, c2) = (
        v["versions"][1]["commit"].as_str().unwrap().to_string(),
        v["versions"][2]["commit"].as_str().unwrap().to_string(),
    );
    at.write(&format!("git-packs/{name}.json"), &record.replace(&c1, &c2));
    let (refs, _, stderr) = clone(&t, &at.url, "lying.git");
    same_refs(&expected, &refs);
    assert!(stderr.contains("cannot be taken from it"), "{stderr}");

    // The record of a pack made from another lake (fdl.json's id).
    let id = "5f0c8a52-6d3e-4f8e-9b1a-2c7d4e9f0a13";
    assert!(record.contains(id), "the record names the lake: {record}");
    let other = record.replace(id, "00000000-0000-4000-8000-000000000000");
    at.write(&format!("git-packs/{name}.json"), &other);
    let (refs, _, stderr) = clone(&t, &at.url, "other.git");
    same_refs(&expected, &refs);
    assert!(stderr.contains("it was made from another lake"), "{stderr}");

    // The pack cut short: it cannot be indexed.
    at.write(&format!("git-packs/{name}.json"), &record);
    at.write(&format!("git-packs/{name}.pack"), "PACK\0\0\0\x02");
    let (refs, installed, stderr) = clone(&t, &at.url, "cut.git");
    same_refs(&expected, &refs);
    assert!(stderr.contains("the pack cannot be indexed"), "{stderr}");
    assert!(
        !installed.contains(&format!("{name}.pack")),
        "{installed:?}"
    );

    // A list of a format this helper does not know.
    at.write("git-packs/list.json", "{\"format\": 2, \"packs\": []}");
    let (refs, _, stderr) = clone(&t, &at.url, "future.git");
    same_refs(&expected, &refs);
    assert!(stderr.contains("format 2"), "{stderr}");
}

/// The lake's own packs cut a cold clone from two requests a version to a few requests, in a
/// few round trips (counted by the wave server, not timed).
#[test]
fn a_cold_clone_of_a_packed_lake_costs_a_few_requests_not_two_per_version() {
    const VERSIONS: u64 = 2_000;
    // The test process holds only a few servers of s3lite's default size (each thread costs
    // memory maps): this one serves the 32 requests the packer keeps in flight.
    let server: S3Lite = s3lite::start_with(64);
    server.put_files("packed", "lake/", &lake(VERSIONS, VERSIONS / 2).files);
    let t = server.test_env();
    let url = "fdl::s3://packed/lake/";
    // Packed through a remote whose configuration the packer's own clone takes: 32 requests
    // in flight, which this small server serves at once.
    t.ok(".", &["init", "-q", "--bare", "maintainer.git"]);
    t.ok("maintainer.git", &["remote", "add", "origin", url]);
    t.ok(
        "maintainer.git",
        &["config", "remote.origin.fdlConcurrency", "32"],
    );
    // Before there are packs, a listing reads every version.
    let expected = parse_ls_remote(&t.ok("maintainer.git", &["ls-remote", "origin"]));
    let out = helper(&t, "maintainer.git", &["pack", "origin"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.reset();
    server.set_waves(Some(Duration::from_millis(300)));
    let (refs, _, stderr) = clone(&t, url, "cold.git");
    server.settle();
    server.set_waves(None);
    let counts = server.counts();
    eprintln!("packed clone: {counts:?}");
    assert!(!stderr.contains("warning"), "{stderr}");
    // The listing that checks the packs (2 files a version, 1,000 a page) and a few files.
    let most = 2 * VERSIONS / 1000 + 30;
    assert!(
        counts.requests <= most,
        "{} requests, at most {most}",
        counts.requests
    );
    assert!(
        counts.gets >= 4,
        "fdl.json, HEAD, the list, a record: {counts:?}"
    );
    assert!(counts.waves <= 12, "{counts:?}");
    same_refs(&expected, &refs);
}

/// A clone that took every version from the lake's pack vouches for it to Git
/// (`connectivity-ok`, the pack held by a `.keep` file that Git removes after): Git then finds
/// every ref's commit in that pack and feeds its connectivity walk (`rev-list --objects`)
/// nothing, where it walked the whole history before (0.55 s at 100,000 versions).
#[test]
fn a_clone_taken_whole_from_the_lakes_pack_spares_git_its_connectivity_walk() {
    let server: S3Lite = s3lite::start_with(64);
    server.put_files("packed", "lake/", &lake(12, 6).files);
    let t = server.test_env();
    let url = "fdl::s3://packed/lake/";
    pack(&t, url);
    let lake_pack = listed_packs_in_bucket(&server, "packed");
    // The pack Git was told holds everything, if any.
    let cloned = |dir: &str| {
        let expected = read_one_by_one(&t, url);
        let out = t
            .command("git", ".", &["clone", "-q", "--bare", url, dir])
            .env("GIT_REMOTE_FDL_DEBUG", "1")
            .output()
            .unwrap();
        let trace = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{trace}");
        let refs = t.ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
        let refs: Vec<(String, String)> = (refs.lines())
            .filter_map(|l| l.split_once(' '))
            .map(|(c, n)| (c.to_string(), n.to_string()))
            .collect();
        same_refs(&expected, &refs);
        let pack_dir = t.path(dir).join("objects/pack");
        let names = || std::fs::read_dir(&pack_dir).unwrap().flatten();
        let names: Vec<String> = names()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.ends_with(".keep")), "{names:?}");
        t.ok(dir, &["fsck", "--no-dangling"]);
        let locked = trace.lines().find_map(|l| {
            let keep = l.split_once("-> lock ")?.1;
            assert!(trace.contains("-> connectivity-ok"), "{trace}");
            Some(
                keep.rsplit('/')
                    .next()?
                    .trim_end_matches(".keep")
                    .to_string(),
            )
        });
        if let Some(pack) = &locked {
            let idx = std::fs::File::open(pack_dir.join(format!("{pack}.idx"))).unwrap();
            let held = t
                .command("git", dir, &["show-index"])
                .stdin(idx)
                .output()
                .unwrap();
            let held = String::from_utf8_lossy(&held.stdout);
            for (commit, name) in &refs {
                assert!(held.contains(commit.as_str()), "{name} is not in {pack}");
            }
        }
        locked
    };
    assert_eq!(cloned("whole.git"), Some(lake_pack.clone()));
    // A version written since the pack is read into a pack of the helper's own, which is not
    // the lake's: Git walks what that pack does not hold, as before.
    let mut grown = lake(12, 6);
    grown.chain(13, 13);
    grown.branch("main", 13);
    grown.refs_json();
    server.put_files("packed", "lake/", &grown.files);
    assert_ne!(cloned("grown.git"), Some(lake_pack));
}

/// A pack nothing is taken from stays where another pack was taken from: the versions taken
/// were checked against every pack installed, and a later pack may leave out a blob an earlier
/// one holds (here a new start's `dataset.json`, the same bytes as the packed tip's; the
/// second pack `pack` made still holds it, so this clone is complete either way).
#[test]
fn an_untaken_pack_stays_when_another_pack_was_taken_from_for_the_blobs_they_share() {
    let server: S3Lite = s3lite::start_with(64);
    let t = server.test_env();
    let url = "fdl::s3://shared/lake/";
    let mut l = crate::support::LakeBuilder::new();
    l.chain(1, 12);
    l.branch("main", 12).refs_json();
    server.put_files("shared", "lake/", &l.files);
    pack(&t, url);
    let first = listed_packs_in_bucket(&server, "shared");
    // A new start whose dataset.json is the packed tip's: the next pack leaves that blob out.
    let tip = crate::support::vid(12);
    let shared = l.files[&format!("versions/{tip}/dataset.json")].clone();
    let start = l.version(13, &[], "a new start");
    l.put(&format!("versions/{start}/dataset.json"), shared);
    l.branch("main", 13).refs_json();
    server.put_files("shared", "lake/", &l.files);
    pack(&t, url);
    let key = format!("lake/git-packs/{first}.json");
    let record = String::from_utf8(server.get("shared", &key).unwrap()).unwrap();
    // The first pack's versions all fail: its first and last name each other's commit.
    let v: serde_json::Value = serde_json::from_str(&record).unwrap();
    let (c1, c12) = (
        v["versions"][0]["commit"].as_str().unwrap(),
        v["versions"][11]["commit"].as_str().unwrap(),
    );
    let swapped = (record.replace(c1, "@").replace(c12, c1)).replace('@', c12);
    server.put_files("shared", "", &[(key, swapped.into_bytes())].into());
    let expected = read_one_by_one(&t, url);
    // Every object the refs reach is there: `clone` runs `git fsck`.
    let (refs, installed, stderr) = clone(&t, url, "c.git");
    same_refs(&expected, &refs);
    assert!(stderr.contains("cannot be taken from it"), "{stderr}");
    assert!(
        installed.iter().any(|p| p.contains(&first)),
        "{installed:?}"
    );
}

/// The name of the first pack `git-packs/list.json` of `bucket` names.
fn listed_packs_in_bucket(server: &S3Lite, bucket: &str) -> String {
    let list = server.get(bucket, "lake/git-packs/list.json").unwrap();
    let list: serde_json::Value = serde_json::from_slice(&list).unwrap();
    list["packs"][0].as_str().unwrap().to_string()
}

/// Two maintainers' runs at once: neither pack is lost from the list.
#[test]
fn two_pack_runs_at_once_both_land_in_the_list() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "racing", &lake(20, 10));
    pack(&t, &at.url);
    grow(&at, 20, 30);
    let runs: Vec<_> = (0..2)
        .map(|_| t.command(HELPER, ".", &["pack", &at.url]).spawn().unwrap())
        .collect();
    for r in runs {
        assert!(r.wait_with_output().unwrap().status.success());
    }
    let packs = listed_packs(&at);
    assert!((2..=3).contains(&packs.len()), "{packs:?}");
    for p in &packs {
        assert!(at.read(&format!("git-packs/{p}.json")).is_some(), "{p}");
    }
    let expected = read_one_by_one(&t, &at.url);
    let (refs, _, stderr) = clone(&t, &at.url, "after.git");
    same_refs(&expected, &refs);
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A run killed after writing its pack but before the list leaves a pack no list names:
/// readers do not see it, and the next run packs those versions and lists them.
#[test]
fn a_pack_no_list_names_is_ignored_and_the_next_run_finishes_the_job() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "killed", &lake(16, 8));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);
    // What a run killed before its last write leaves: the pack and its record, no list.
    let store = crate::support::clouds::cloud(Where::S3)
        .unwrap()
        .store(&at.bucket);
    crate::support::clouds::delete(&*store, &format!("{}git-packs/list.json", at.prefix));
    let expected = read_one_by_one(&t, &at.url);
    let (refs, installed, stderr) = clone(&t, &at.url, "unlisted.git");
    same_refs(&expected, &refs);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        !installed.contains(&format!("{name}.pack")),
        "{installed:?}"
    );
    // A dry run says what it would pack, and writes nothing.
    let dry = helper(&t, ".", &["pack", "--dry-run", &at.url]);
    let said = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success(), "{said}");
    assert!(said.contains("16 new would be packed"), "{said}");
    assert!(
        at.read("git-packs/list.json").is_none(),
        "a dry run wrote the list"
    );
    let said = pack(&t, &at.url);
    assert!(said.contains("0 versions already packed; 16 new"), "{said}");
    assert_eq!(
        listed_packs(&at),
        vec![name.clone()],
        "the same objects, the same pack"
    );
    let (_, installed, _) = clone(&t, &at.url, "listed.git");
    assert!(installed.contains(&format!("{name}.pack")), "{installed:?}");
}

/// More than 30 packs: the next run packs everything into one, and the list names only it.
#[test]
fn a_run_that_would_leave_more_than_30_packs_merges_them_into_one() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::S3, "merged", &lake(10, 5));
    pack(&t, &at.url);
    let real = listed_packs(&at).remove(0);
    let record = at.read(&format!("git-packs/{real}.json")).unwrap();
    // 29 more packs, as thirty earlier runs would leave (records only: their packs are gone).
    let mut names = vec![real.clone()];
    for k in 1..30u32 {
        let fake = format!("pack-{k:040x}");
        at.write(
            &format!("git-packs/{fake}.json"),
            &record.replace(&real, &fake),
        );
        names.push(fake);
    }
    let list = serde_json::json!({"format": 1, "packs": names});
    at.write("git-packs/list.json", &list.to_string());
    grow(&at, 10, 12);
    let said = pack(&t, &at.url);
    assert!(
        said.contains("with the 30 newest packs, merged into one"),
        "{said}"
    );
    let now = listed_packs(&at);
    assert_eq!(now.len(), 1, "{now:?}");
    let expected = read_one_by_one(&t, &at.url);
    let (refs, installed, stderr) = clone(&t, &at.url, "merged.git");
    same_refs(&expected, &refs);
    assert!(!stderr.contains("warning"), "{stderr}");
    assert!(
        installed.contains(&format!("{}.pack", now[0])),
        "{installed:?}"
    );
}

/// The refs of a bare repository made by a clone, as `clone` gives them.
pub(crate) fn refs_of(t: &TestEnv, dir: &str) -> Vec<(String, String)> {
    let refs = t.ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"]);
    refs.lines()
        .map(|l| {
            let (c, n) = l.split_once(' ').unwrap();
            (c.to_string(), n.to_string())
        })
        .collect()
}

pub(crate) fn remove(at: &LakeAt, rel: &str) {
    match at.place {
        Where::Local => std::fs::remove_file(at.dir.join(rel)).unwrap(),
        cloud => {
            let store = crate::support::clouds::cloud(cloud)
                .unwrap()
                .store(&at.bucket);
            crate::support::clouds::delete(&*store, &format!("{}{rel}", at.prefix));
        }
    }
}

/// A record naming a commit the lake's versions no longer make (a version rewritten after
/// packing, a damaged record) is set aside with a warning, and its versions packed again.
#[test]
fn a_record_naming_a_commit_the_clone_lacks_is_packed_again() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "rewritten", &lake(20, 10));
        pack(&t, &at.url);
        let name = listed_packs(&at).remove(0);
        rewrite_version(&at, 10);
        // Its pack gone too (on a store that lists, a clone would take the old commits
        // from it, unreachable but there).
        remove(&at, &format!("git-packs/{name}.pack"));
        let said = pack(&t, &at.url);
        assert!(
            said.contains("warning: lake '")
                && said.contains(&format!("git-packs/{name}: its record names commit"))
                && said.contains("0 versions already packed; 20 new"),
            "{place:?}: {said}"
        );
        assert_eq!(listed_packs(&at).len(), 2, "{place:?}");
        // The next run finds everything packed.
        let said = pack(&t, &at.url);
        assert!(said.contains("Everything up-to-date"), "{place:?}: {said}");
        let expected = read_one_by_one(&t, &at.url);
        let (refs, _, _) = clone(&t, &at.url, "after.git");
        same_refs(&expected, &refs);

        // A damaged record: a commit no version makes.
        let record_name = listed_packs(&at).remove(1);
        let path = format!("git-packs/{record_name}.json");
        let record = at.read(&path).unwrap();
        let v: serde_json::Value = serde_json::from_str(&record).unwrap();
        let c = v["versions"][3]["commit"].as_str().unwrap();
        at.write(&path, &record.replace(c, &"e".repeat(40)));
        let said = pack(&t, &at.url);
        assert!(
            said.contains(&format!("commit {}", "e".repeat(40))),
            "{place:?}: {said}"
        );
    }
}
