//! Plain HTTP, which cannot list, reading a packed lake: the versions the packs' records name
//! read at once by a clone and by a fetch after a long absence, counted in waves as
//! `t/waves.rs` counts them, on `s3lite` read as a web server.

use crate::support::run::pack;
use crate::support::s3lite;
use crate::waves::{chain, env, refs_in, waves, QUIET};

#[test]
fn a_clone_over_plain_http_reads_the_versions_pack_records_name_at_once() {
    // Plain HTTP cannot list, and the packs are not trusted there: their records still name
    // the versions to read, all at once (issue 29, item 4), each read and mapped as without
    // packs. The tips are read while the record comes, and their parents with the versions it
    // names; the versions written since the pack are found by the walk, a generation a wave.
    let server = s3lite::start_with(256);
    let mut lake = chain(40, 3);
    server.put_files("published", "lake/", &lake.files);
    let t = env(&server);
    pack(&t, "fdl::s3://published/lake/");
    // A record that names a version the lake does not have: passed over, as a version a
    // listing shows in progress is.
    let list: serde_json::Value =
        serde_json::from_slice(&server.get("published", "lake/git-packs/list.json").unwrap())
            .unwrap();
    let record_key = format!("lake/git-packs/{}.json", list["packs"][0].as_str().unwrap());
    let mut record: serde_json::Value =
        serde_json::from_slice(&server.get("published", &record_key).unwrap()).unwrap();
    let versions = record["versions"].as_array_mut().unwrap();
    let mut ghost = versions[0].clone();
    ghost["id"] = crate::support::vid(999).into();
    versions.push(ghost);
    let mut files = std::collections::BTreeMap::new();
    files.insert(record_key, serde_json::to_vec(&record).unwrap());
    server.put_files("published", "", &files);
    lake.chain(41, 44);
    lake.branch("main", 44);
    lake.refs_json();
    server.put_files("published", "lake/", &lake.files);
    server.put_files("unpacked", "lake/", &lake.files);

    let url = |bucket: &str| format!("fdl::{}/{bucket}/lake/", server.endpoint);
    let clone = |bucket: &str| ["clone", "-q", "--bare", &url(bucket), bucket].map(String::from);
    let args = clone("published");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let counts = waves(&server, &t, ".", &args);
    eprintln!("plain HTTP clone of 40 packed and 4 new versions: {counts:?}");
    t.ok(".", &clone("unpacked").each_ref().map(String::as_str));
    assert_eq!(refs_in(&t, "published"), refs_in(&t, "unpacked"));
    // fdl.json, HEAD, refs.json and the packs' list in the first wave; the record with the
    // 4 tips (version 44 and the tags' 1 to 3); every other named version with its dataset,
    // and 43; then 42 and 41, a generation each.
    assert_eq!(counts.per_wave.get(&1), Some(&4), "{counts:?}");
    assert_eq!(counts.per_wave.get(&2), Some(&(1 + 4 * 2)), "{counts:?}");
    assert!(counts.waves <= 5, "{counts:?}");
}

#[test]
fn over_plain_http_a_missing_parent_of_a_version_newer_than_the_pack_fails_as_unpacked() {
    // The parents of the tips are read with the versions a record names, where a version the
    // lake lacks is passed over: one that a tip names must still stop the clone, with the
    // message a clone of the same lake without packs gives.
    let server = s3lite::start_with(256);
    let mut lake = chain(10, 2);
    server.put_files("published", "lake/", &lake.files);
    let t = env(&server);
    pack(&t, "fdl::s3://published/lake/");
    // Version 12 names 11, which was never written.
    lake.version(12, &[11], "after the pack");
    lake.branch("main", 12);
    lake.refs_json();
    server.put_files("published", "lake/", &lake.files);
    server.put_files("unpacked", "lake/", &lake.files);
    let clone = |bucket: &str| {
        let url = format!("fdl::{}/{bucket}/lake/", server.endpoint);
        let out = t.git(".", &["clone", "-q", "--bare", &url, bucket]);
        assert!(!out.status.success(), "{bucket}");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        stderr.replace(bucket, "<bucket>")
    };
    let (packed, unpacked) = (clone("published"), clone("unpacked"));
    assert!(packed.contains(&crate::support::vid(11)), "{packed}");
    assert_eq!(packed, unpacked);
}

#[test]
fn a_fetch_over_plain_http_after_many_packed_versions_reads_them_at_once_and_the_record_once() {
    // A repository that fetched long ago, over plain HTTP: the versions packed since are named
    // by a record no fetch read yet, and are read at once (issue 29, items 3 and 4), not a
    // generation a round trip. A later fetch does not read that record again.
    let server = s3lite::start_with(256);
    let mut lake = chain(10, 2);
    server.put_files("published", "lake/", &lake.files);
    let t = env(&server);
    let pack_the_lake = || pack(&t, "fdl::s3://published/lake/");
    pack_the_lake();
    let http = format!("fdl::{}/published/lake/", server.endpoint);
    t.ok(".", &["clone", "-q", "--bare", &http, "long-ago.git"]);
    lake.chain(11, 40);
    lake.branch("main", 40);
    lake.refs_json();
    server.put_files("published", "lake/", &lake.files);
    server.put_files("unpacked", "lake/", &lake.files);
    pack_the_lake();
    let fetch = ["fetch", "-q", "origin", "+refs/*:refs/*"];
    let counts = waves(&server, &t, "long-ago.git", &fetch);
    eprintln!("plain HTTP fetch of 30 packed versions: {counts:?}");
    let unpacked = format!("fdl::{}/unpacked/lake/", server.endpoint);
    t.ok(".", &["clone", "-q", "--bare", &unpacked, "unpacked.git"]);
    assert_eq!(refs_in(&t, "long-ago.git"), refs_in(&t, "unpacked.git"));
    // fdl.json, HEAD, refs.json and the packs' list; the new record with the new tip; the
    // versions it names (and the tip's parent) at once.
    assert!(counts.waves <= 4, "{counts:?}");

    // Two versions more, not packed: the record is not read again, and they take a
    // generation each.
    lake.chain(41, 42);
    lake.branch("main", 42);
    lake.refs_json();
    server.put_files("published", "lake/", &lake.files);
    server.reset();
    server.set_waves(Some(QUIET));
    let out = t
        .command("git", "long-ago.git", &fetch)
        .env("GIT_REMOTE_FDL_DEBUG", "1")
        .output()
        .unwrap();
    server.settle();
    server.set_waves(None);
    let trace = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{trace}");
    let counts = server.counts();
    eprintln!("plain HTTP fetch of 2 new versions: {counts:?}");
    assert!(trace.contains("GET git-packs/list.json"), "{trace}");
    assert!(!trace.contains("GET git-packs/pack-"), "{trace}");
    assert!(counts.waves <= 3, "{counts:?}");
    assert_eq!(refs_in(&t, "long-ago.git").lines().count(), 3);
    let main = t.ok("long-ago.git", &["rev-list", "--count", "main"]);
    assert_eq!(main.trim(), "42");
}
