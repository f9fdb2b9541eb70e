//! Issue 29, item 6: a lake's pack larger than one request can bring in time. Downloads come
//! in ranged parts, each a request of its own under the client's timeout, on every store (and
//! whole from a web server that gives no ranges); the clone equals one made by reading every
//! version.

use crate::packs::{clone, pack, read_one_by_one, refs_of};
use crate::support::s3lite;
use crate::support::{lake, LakeBuilder, TestEnv, Where};

/// Bytes that zlib cannot shrink much: a 64-letter alphabet from xorshift, about 6 bits a byte.
fn noise(len: usize, mut seed: u64) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    (0..len)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ALPHABET[(seed >> 58) as usize] as char
        })
        .collect()
}

/// A lake of `versions` versions, each `dataset.json` holding `mib` MiB of noise: its pack is
/// about three quarters of that a version.
fn heavy_lake(versions: u64, mib: usize) -> LakeBuilder {
    let mut lake = lake(versions, versions);
    for n in 1..=versions {
        let id = crate::support::lake::vid(n);
        let dataset = format!(
            "{{\"tables\": [], \"noise\": \"{}\"}}\n",
            noise(mib << 20, n)
        );
        lake.put(&format!("versions/{id}/dataset.json"), dataset);
    }
    lake
}

/// `git clone --bare -c <config> <url> <dir>`, which must succeed; what it said.
fn clone_with(t: &TestEnv, config: &str, url: &str, dir: &str) -> String {
    let out = t.git(".", &["clone", "-q", "--bare", "-c", config, url, dir]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "clone {url}: {stderr}");
    stderr
}

/// The size in bytes of the one pack under `git-packs/` of the lake at `url`'s store.
fn pack_size(server: &s3lite::S3Lite, bucket: &str) -> usize {
    let keys = server.keys(bucket, "lake/git-packs/");
    let pack = keys.iter().find(|k| k.ends_with(".pack")).expect("a pack");
    server.get(bucket, pack).expect("the pack").len()
}

/// A lake of over 30 MiB of packed objects in `bucket` of its own server, packed: the pack's
/// size and the refs reading the versions gives.
struct Packed {
    server: s3lite::S3Lite,
    t: TestEnv,
    size: usize,
    expected: Vec<(String, String)>,
}

fn heavy_lake_packed(bucket: &str) -> Packed {
    let server = s3lite::start_with(64);
    server.put_files(bucket, "lake/", &heavy_lake(4, 11).files);
    let t = server.test_env();
    let url = format!("fdl::s3://{bucket}/lake/");
    pack(&t, &url);
    let size = pack_size(&server, bucket);
    let expected = read_one_by_one(&t, &url);
    Packed {
        server,
        t,
        size,
        expected,
    }
}

/// On a link of 8 MiB/s with a 3 s request timeout, a pack of over 30 MiB does not fit one
/// request (about 4 s or more); it comes in parts of 8 MiB (1 s each), each a request of its
/// own, and the clone is the lake. (Without parts, object_store resumes a body cut by the
/// timeout only within its 30 s retry budget: at the default 60 s timeout a download longer
/// than a minute failed outright.)
#[test]
fn a_pack_too_large_for_one_request_on_a_slow_link_comes_in_parts() {
    let url = "fdl::s3://slow/lake/";
    let Packed {
        server,
        t,
        size,
        expected,
    } = heavy_lake_packed("slow");
    let bandwidth: u64 = 8 << 20;
    assert!(
        size as u64 > bandwidth * 7 / 2,
        "the pack ({size} bytes) needs more than 3.5 s at {bandwidth} bytes/s"
    );
    server.set_bandwidth(Some(bandwidth));
    server.reset();
    let stderr = clone_with(&t, "remote.origin.fdlOption=timeout=3s", url, "slow.git");
    server.settle();
    server.set_bandwidth(None);
    assert!(!stderr.contains("warning"), "{stderr}");
    let counts = server.counts();
    let parts = size.div_ceil(8 << 20) as u64;
    eprintln!("a {size}-byte pack at 8 MiB/s: {counts:?}");
    assert!(
        counts.ranged >= parts,
        "the pack in {parts} parts: {counts:?}"
    );
    crate::packs::same_refs(&expected, &refs_of(&t, "slow.git"));
    t.ok("slow.git", &["fsck", "--no-dangling"]);
}

/// On a fast link the parts grow (twice the part before, as the link allows within a quarter
/// of the timeout): the same pack in fewer requests than parts of 8 MiB, to the same commits.
#[test]
fn a_pack_on_a_fast_link_comes_in_parts_that_grow() {
    let url = "fdl::s3://fast/lake/";
    let Packed {
        server,
        t,
        size,
        expected,
    } = heavy_lake_packed("fast");
    server.reset();
    let stderr = clone_with(&t, "remote.origin.fdlOption=timeout=60s", url, "fast.git");
    server.settle();
    assert!(!stderr.contains("warning"), "{stderr}");
    let counts = server.counts();
    let parts_of_8_mib = size.div_ceil(8 << 20) as u64;
    eprintln!("a {size}-byte pack at full speed: {counts:?}");
    assert!(
        counts.ranged >= 2 && counts.ranged < parts_of_8_mib,
        "fewer than {parts_of_8_mib} parts: {counts:?}"
    );
    crate::packs::same_refs(&expected, &refs_of(&t, "fast.git"));
    t.ok("fast.git", &["fsck", "--no-dangling"]);
}

/// Every store's server takes a pack in parts and gives the ranges asked for: a pack of
/// several parts (over 16 MiB) goes up in parts of 8 MiB, S3's servers say so in its ETag
/// (`<md5>-<parts>`), and it clones through its parts to the same commits as reading the
/// versions.
#[test]
fn a_pack_of_several_parts_goes_up_and_comes_down_in_parts_on_every_store() {
    for place in [Where::S3, Where::Gcs, Where::Azure, Where::SeaweedFs] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "heavy", &heavy_lake(2, 12));
        pack(&t, &at.url);
        let name = crate::packs::listed_packs(&at).pop().expect("a pack");
        let key = format!("{}git-packs/{name}.pack", at.prefix);
        let store = crate::support::clouds::cloud(place)
            .unwrap()
            .store(&at.bucket);
        let meta = crate::support::clouds::block_on(async {
            object_store::ObjectStoreExt::head(&*store, &key.as_str().into()).await
        })
        .expect("the pack is there");
        // (fake-gcs-server's HEAD says 0 bytes: the size is what a GET gives.)
        let size = crate::support::clouds::get(&*store, &key).map_or(0, |b| b.len());
        assert!(size > 16 << 20, "{place:?}: {size} bytes");
        if matches!(place, Where::S3 | Where::SeaweedFs) {
            let e_tag = meta.e_tag.unwrap_or_default();
            assert!(e_tag.contains('-'), "{place:?}: uploaded in parts: {e_tag}");
        }
        let expected = read_one_by_one(&t, &at.url);
        let (refs, packs, stderr) = clone(&t, &at.url, "heavy.git");
        assert!(!stderr.contains("warning"), "{place:?}: {stderr}");
        assert_eq!(
            packs.len(),
            1,
            "{place:?}: the lake's pack alone: {packs:?}"
        );
        crate::packs::same_refs(&expected, &refs);
    }
}

/// A web server that ignores `Range` (Python's `http.server`) answers a part with the whole
/// file: the helper takes it whole from then on, and the clone (packs trusted, as a reader
/// that cannot list must) is the same.
#[test]
fn a_web_server_without_ranges_gives_the_pack_whole() {
    let t = TestEnv::new();
    let dir = t.path("site");
    let url = t.local_lake("site", &heavy_lake(2, 12));
    pack(&t, &url);
    let expected = read_one_by_one(&t, &url);
    let server = crate::support::http::python_http_server(&dir);
    let http = format!("fdl::{}", server.url);
    let stderr = clone_with(&t, "remote.origin.fdlTrustPacks=true", &http, "web.git");
    crate::packs::same_refs(&expected, &refs_of(&t, "web.git"));
    let packs: Vec<_> = std::fs::read_dir(t.path("web.git/objects/pack"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".pack"))
        .collect();
    assert_eq!(packs.len(), 1, "the lake's pack, whole: {stderr}");
    t.ok("web.git", &["fsck", "--no-dangling"]);
}

/// `pack` shows how the reading of the versions goes, as `git fetch` does: on a terminal or
/// with `--progress`, never when stderr is piped unless asked, nor with `--quiet`.
#[test]
fn pack_shows_the_progress_of_its_clone_when_asked_as_git_does() {
    let t = TestEnv::new();
    let run = |dir: &str, flags: &[&str]| {
        let url = t.local_lake(dir, &lake(40, 20));
        let mut args = vec!["pack"];
        args.extend_from_slice(flags);
        args.push(&url);
        let out = crate::support::helper(&t, ".", &args);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "pack {flags:?}: {stderr}");
        stderr
    };
    let shown = run("shown", &["--progress"]);
    assert!(
        shown.contains("Reading versions: 100% (40/40), done."),
        "{shown}"
    );
    assert!(shown.contains("\r"), "redrawn in place: {shown:?}");
    assert!(shown.contains("40 new were packed"), "{shown}");
    for flags in [&[][..], &["--quiet"], &["--progress", "--no-progress"]] {
        let said = run(&format!("quiet-{}", flags.len()), flags);
        assert!(!said.contains("Reading versions"), "{flags:?}: {said}");
        assert!(said.contains("40 new were packed"), "{flags:?}: {said}");
    }
}

/// A web server that gives weak ETags (a CDN that compressed the answer) answers an `If-Match`
/// 412 whatever it names: the later parts of a pack are asked for without one, and the clone
/// (packs trusted) comes through in parts.
#[test]
fn a_web_server_with_weak_etags_gives_the_pack_in_parts() {
    let t = TestEnv::new();
    let url = t.local_lake("site", &heavy_lake(2, 12));
    pack(&t, &url);
    let expected = read_one_by_one(&t, &url);
    let server = crate::support::http::serve_with_weak_etags(&t.path("site"));
    let http = format!("fdl::{}", server.url);
    let stderr = clone_with(&t, "remote.origin.fdlTrustPacks=true", &http, "weak.git");
    assert!(!stderr.contains("warning"), "{stderr}");
    crate::packs::same_refs(&expected, &refs_of(&t, "weak.git"));
    t.ok("weak.git", &["fsck", "--no-dangling"]);
}

/// Ctrl-C or a CI's timeout while `pack` uploads its pack in parts: the multipart upload is
/// aborted before the process ends (S3 bills an open upload's parts until a lifecycle rule
/// removes them), the exit status is Git's for the signal, and nothing is listed.
#[test]
fn a_signal_during_packs_upload_in_parts_aborts_the_upload() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let mut t = TestEnv::new();
        let at = t.lake_at(Where::S3, "interrupted-upload", &heavy_lake(2, 12));
        let m = crate::support::moto::moto();
        let pid_file = t.path("pack.pid");
        let run = t
            .command(crate::support::HELPER, ".", &["pack", &at.url])
            .env("GIT_REMOTE_FDL_TEST_STOP_UPLOADING_PARTS", &pid_file)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pid = crate::support::run::pid_at_crash_point(&pid_file);
        assert_eq!(m.open_multipart_uploads(&at.bucket), 1, "{code}: under way");
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        let out = run.wait_with_output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{said}");
        assert_eq!(m.open_multipart_uploads(&at.bucket), 0, "{code}: aborted");
        assert!(at.read("git-packs/list.json").is_none(), "{code}");
    }
}
