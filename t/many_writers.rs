//! Issue 47: many writers at once, as real `git push` processes started together on one lake:
//! pipelines that each tag their output, and writers that move branches of their own, on moto,
//! SeaweedFS and the GCS emulator (and a folder). Every push lands, and once they are done
//! `refs.json` equals the ref files: a writer that lost the race for `refs.json` applied its
//! own changes to the winner's, and undid none of the others'.

use std::process::Stdio;

use crate::support::{LakeAt, LakeBuilder, TestEnv, Where};

/// Tag pushers and branch movers started at once.
const TAGGERS: usize = 16;
const MOVERS: usize = 4;

/// A chain of 20 versions, `main` at 20, 100 tags, and a branch per mover at version 10.
fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 20);
    l.branch("main", 20);
    for k in 1..=100 {
        l.tag(&format!("old-{k}"), 1 + k % 20);
    }
    for m in 0..MOVERS {
        l.branch(&format!("pipeline-{m}"), 10);
    }
    l.refs_json();
    l
}

/// `taggers` tag pushes and `movers` branch moves at once on a lake named `name` at `place`:
/// how long from their start to the last one's end.
fn all_at_once(place: Where, name: &str, taggers: usize, movers: usize) -> std::time::Duration {
    let mut t = TestEnv::new();
    let at: LakeAt = t.lake_at(place, name, &lake());
    t.ok(".", &["clone", "-q", "--bare", &at.url, "r.git"]);
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    let later = t.ok("r.git", &["rev-parse", "main~5"]).trim().to_string();
    // The store check, once, before the race (it is remembered for the user).
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/first")],
    );
    let mut specs: Vec<String> = (0..taggers)
        .map(|i| format!("{tip}:refs/tags/release-{i}"))
        .collect();
    specs.extend((0..movers).map(|m| format!("{later}:refs/heads/pipeline-{m}")));
    for i in 0..specs.len() {
        crate::support::copy_dir(&t.path("r.git"), &t.path(&format!("w{i}.git")));
    }
    let started = std::time::Instant::now();
    let pushes: Vec<_> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            t.command("git", &format!("w{i}.git"), &["push", "-q", "origin", spec])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (spec, push) in specs.iter().zip(pushes) {
        let out = push.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{place:?}: {spec}: {said}");
        assert!(!said.contains("warning"), "{place:?}: {spec}: {said}");
    }
    let took = started.elapsed();
    let files = at.ref_files();
    for i in 0..taggers {
        assert!(
            files.contains_key(&format!("refs/tags/release-{i}")),
            "{place:?}: tag {i}"
        );
    }
    let moved = crate::support::vid(15);
    for m in 0..movers {
        let name = format!("refs/heads/pipeline-{m}");
        assert_eq!(files.get(&name), Some(&moved), "{place:?}: {name}");
    }
    assert_eq!(
        at.refs_json(),
        files,
        "{place:?}: refs.json equals the ref files"
    );
    // A tag announced after a lost race is deleted once refs.json carries it.
    assert_eq!(at.files_below("git-refs-pending"), Vec::<String>::new());
    took
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_on_s3() {
    all_at_once(Where::S3, "writers", TAGGERS, MOVERS);
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_on_seaweedfs() {
    all_at_once(Where::SeaweedFs, "writers", TAGGERS, MOVERS);
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_on_gcs() {
    all_at_once(Where::Gcs, "writers", TAGGERS, MOVERS);
}

#[test]
fn writers_at_once_all_land_and_refs_json_ends_equal_to_the_refs_in_a_folder() {
    all_at_once(Where::Local, "writers", TAGGERS, MOVERS);
}

/// GCS takes one write a second to one object (a second within the second is answered 429,
/// `rateLimitExceeded`): the emulator's adapter enforces it in a bucket named `*-quota`. Every
/// writer's `refs.json` write waits its turn after a pause, none gives up on it (no warning),
/// and the whole takes at most about the quota's floor, a second a writer (less where one
/// `refs.json` write carries several writers' refs).
#[test]
fn writers_at_once_on_gcs_with_its_write_quota_all_land_near_the_quotas_floor() {
    // The adapter does refuse a second write within the second: the client's own retries
    // (object_store retries a 429) get it through only once the second is over.
    let store = crate::support::clouds::cloud(Where::Gcs).unwrap();
    let bucket = format!("b{}-quota", std::process::id());
    store.create_bucket(&bucket);
    let store = store.store(&bucket);
    let key = object_store::path::Path::from("k");
    let put = || {
        crate::support::clouds::block_on(object_store::ObjectStoreExt::put(
            &*store,
            &key,
            b"x".to_vec().into(),
        ))
    };
    let started = std::time::Instant::now();
    assert!(put().is_ok() && put().is_ok());
    let two = started.elapsed();
    assert!(two >= std::time::Duration::from_millis(900), "{two:?}");
    let took = all_at_once(Where::Gcs, "gcs-quota", TAGGERS, MOVERS);
    let floor = (TAGGERS + MOVERS) as f64;
    eprintln!(
        "{} writers under GCS's quota: {took:?} (floor {floor} s)",
        TAGGERS + MOVERS
    );
    assert!(took.as_secs_f64() < 2.0 * floor + 10.0, "{took:?}");
}

/// On a lake of more than 5,000 refs, a push that loses the race for `refs.json` applies its
/// own tag to the winner's, with the tags the others announced: it lists no ref again and
/// reads no ref file (it listed every ref again for each lost race before, and read the tags
/// the others made), and a few writes of refs.json serve every racer. Eight racers on 5,100
/// tags, 20 ms away.
#[test]
fn racing_tag_pushes_on_more_than_5000_refs_list_no_ref_again() {
    use crate::support::s3lite;
    const RACERS: usize = 8;
    const TAGS: usize = 5_100;
    let server = s3lite::start_with(600);
    let mut l = LakeBuilder::new();
    l.chain(1, 20);
    l.branch("main", 20);
    for k in 0..TAGS {
        l.tag(&format!("t{k:05}"), 1 + k as u64 % 20);
    }
    l.refs_json();
    server.put_files("many", "lake/", &l.files);
    let t = server.test_env();
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://many/lake/", "r.git"],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    for i in 0..RACERS {
        crate::support::copy_dir(&t.path("r.git"), &t.path(&format!("r{i}.git")));
    }
    // What a lone push lists (the store check done first, as the racers find it done).
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/lone-0")],
    );
    server.reset();
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/lone-1")],
    );
    let lone = server.counts();
    server.reset();
    server.set_delay(std::time::Duration::from_millis(20));
    let pushes: Vec<_> = (0..RACERS)
        .map(|i| {
            let spec = format!("{tip}:refs/tags/racer-{i}");
            t.command(
                "git",
                &format!("r{i}.git"),
                &["push", "-q", "origin", &spec],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
        })
        .collect();
    for push in pushes {
        let out = push.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !said.contains("warning"), "{said}");
    }
    let counts = server.counts();
    eprintln!("{RACERS} racing tag pushes on {TAGS} tags: {counts:?}, lone {lone:?}");
    // Each push's own listing, and per race it lost a page of announcements, no more than
    // one a write (of a ref, an announcement, refs.json).
    let own_listings = RACERS as u64 * lone.lists;
    assert!(
        counts.lists <= own_listings + counts.puts,
        "{} lists, {own_listings} of the refs",
        counts.lists
    );
    // Each push: fdl.json, HEAD and refs.json; then per race it lost refs.json again.
    let most = (RACERS * (3 + (RACERS - 1))) as u64;
    assert!(counts.gets <= most, "{} GETs, at most {most}", counts.gets);
    // Whatever was announced was deleted by the write that carried it.
    assert_eq!(
        server.keys("many", "lake/git-refs-pending/"),
        Vec::<String>::new()
    );
    let written: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&server.get("many", "lake/refs.json").unwrap()).unwrap();
    for i in 0..RACERS {
        let tag = format!("refs/tags/racer-{i}");
        assert!(written.contains_key(&tag), "{tag} in refs.json");
    }
    assert_eq!(
        written.len(),
        1 + TAGS + 2 + RACERS,
        "main, the tags, lone-0/1, the racers'"
    );
}

/// `racers` tag pushes at once on a lake served by s3lite 20 ms away, after `setup` set it up;
/// each lands without a warning, `refs.json` names every one, and no announcement is left.
fn tag_race_on_s3lite(
    racers: usize,
    setup: impl Fn(&crate::support::s3lite::S3Lite),
) -> crate::support::s3lite::S3Lite {
    let server = crate::support::s3lite::start();
    server.put_files("race", "lake/", &lake().files);
    let t = server.test_env();
    t.ok(
        ".",
        &["clone", "-q", "--bare", "fdl::s3://race/lake/", "r.git"],
    );
    let tip = t.ok("r.git", &["rev-parse", "main"]).trim().to_string();
    // The store check, once, before the race (it is remembered for the user).
    t.ok(
        "r.git",
        &["push", "-q", "origin", &format!("{tip}:refs/tags/first")],
    );
    for i in 0..racers {
        crate::support::copy_dir(&t.path("r.git"), &t.path(&format!("r{i}.git")));
    }
    setup(&server);
    server.set_delay(std::time::Duration::from_millis(20));
    let pushes: Vec<_> = (0..racers)
        .map(|i| {
            let spec = format!("{tip}:refs/tags/racer-{i}");
            let dir = format!("r{i}.git");
            t.command("git", &dir, &["push", "-q", "origin", &spec])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for push in pushes {
        let out = push.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && !said.contains("warning"), "{said}");
    }
    let written: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&server.get("race", "lake/refs.json").unwrap()).unwrap();
    for i in 0..racers {
        let tag = format!("refs/tags/racer-{i}");
        assert!(written.contains_key(&tag), "{tag} in refs.json");
    }
    let left = server.keys("race", "lake/git-refs-pending/");
    assert_eq!(left, Vec::<String>::new(), "announcements left");
    server
}

/// S3 may answer `409 ConditionalRequestConflict` to conditional writes that race on one key:
/// a race like a `412`, never a failure. Eight racers on a server that answers every second
/// `If-Match` write so.
#[test]
fn racing_pushes_take_s3s_409_conditional_request_conflict_for_a_lost_race() {
    use crate::support::s3lite;
    let server = tag_race_on_s3lite(8, |server| {
        server.set_conditions(s3lite::Conditions::SometimesConflicts)
    });
    assert!(server.counts().conflicts > 0, "{:?}", server.counts());
}

/// Sixty-four tag pushes at once all land.
#[test]
fn sixty_four_tag_pushes_at_once_all_land() {
    tag_race_on_s3lite(64, |_| {});
}
