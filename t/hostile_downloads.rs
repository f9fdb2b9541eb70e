//! Issue 46: a web server that inflates a pack's download cannot make a reader write more
//! than the pack's record allows: a size over what the record's versions can weigh is refused
//! at the first answer, and a part is read to the end of its range and no further. The pack is
//! set aside with a warning, and the clone reads the versions one by one, the same commits.

use crate::packs::{pack, read_one_by_one};
use crate::support::http::{serve_inflating, Inflate};
use crate::support::{lake, text, TestEnv};

/// A clone (packs trusted, as a reader over plain HTTP must for packs to be used) of a packed
/// lake of 3 versions served by a server that inflates as `how` says: what it said, and how
/// many bytes the server sent.
fn clone_inflated(how: Inflate) -> (String, u64) {
    let t = TestEnv::new();
    let folder = t.local_lake("site", &lake(3, 2));
    pack(&t, &folder);
    let expected = read_one_by_one(&t, &folder);
    let server = serve_inflating(&t.path("site"), how);
    let url = format!("fdl::{}", server.url);
    let trust = "remote.origin.fdlTrustPacks=true";
    let out = t.git(".", &["clone", "-q", "--bare", "-c", trust, &url, "c.git"]);
    let said = text(&out.stderr);
    assert!(out.status.success(), "{how:?}: {said}");
    let listed = t.ok("c.git", &["ls-remote", "origin"]);
    let mut got = crate::support::parse_ls_remote(&listed);
    got.sort();
    let mut want = expected;
    want.sort();
    assert_eq!(got, want, "{how:?}: the versions read one by one");
    let kept: u64 = walk_size(&t.path("c.git"));
    assert!(kept < 1 << 20, "{how:?}: the clone keeps {kept} bytes");
    (said, server.bytes_sent())
}

/// Bytes of the files below `dir`.
fn walk_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| match e.file_type().unwrap().is_dir() {
            true => walk_size(&e.path()),
            false => e.metadata().unwrap().len(),
        })
        .sum()
}

/// `Content-Range: bytes 0-8388607/107374182400` for a pack of a few KiB: refused at once,
/// before a byte past the first part is asked for.
#[test]
fn a_pack_whose_server_claims_100_gib_is_refused_at_its_first_answer() {
    let (said, sent) = clone_inflated(Inflate::Total);
    assert!(sent <= 9 << 20, "the server sent {sent} bytes: {said}");
    assert!(
        said.contains("git-packs/pack-"),
        "the pack is named: {said}"
    );
    assert!(said.contains("larger than the"), "{said}");
}

/// A `206` with the right `Content-Range` and `Content-Length: 107374182400`: the part is
/// read to the end of its range, one byte more is refused, and nothing more is asked for.
#[test]
fn a_part_whose_body_runs_past_its_range_is_cut_off_there() {
    let (said, sent) = clone_inflated(Inflate::Length);
    assert!(sent <= 9 << 20, "the server sent {sent} bytes: {said}");
    assert!(
        said.contains("git-packs/pack-"),
        "the pack is named: {said}"
    );
    assert!(said.contains("more than the"), "{said}");
}
