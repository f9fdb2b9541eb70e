//! Issue 48: a lake's pack indexed in the helper's own process (gix's indexer) as Git's
//! `index-pack` indexes it: the same index and reverse index, byte for byte, and a pack Git
//! would refuse (damaged, with junk after its checksum, a header that counts too many objects)
//! refused, its versions then read one by one.

use crate::packs::{clone_with, listed_packs, pack, read_one_by_one, same_refs};
use crate::support::{lake, TestEnv, Where};

/// Clones the folder lake at `url` into `dir` through its packs (`fdlTrustPacks`); its refs,
/// the names of every file in its `objects/pack`, and what Git said.
fn trusted_clone(
    t: &TestEnv,
    url: &str,
    dir: &str,
) -> (Vec<(String, String)>, Vec<String>, String) {
    let trusted = ["-c", "remote.origin.fdlTrustPacks=true"];
    let (refs, _, stderr) = clone_with(t, &trusted, url, dir);
    let mut files: Vec<String> = std::fs::read_dir(t.path(dir).join("objects/pack"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    (refs, files, stderr)
}

#[test]
fn a_lake_pack_is_indexed_byte_for_byte_as_git_index_pack_indexes_it() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::Local, "indexed", &lake(40, 20));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);
    let (_, files, stderr) = trusted_clone(&t, &at.url, "cloned.git");
    assert!(!stderr.contains("warning"), "{stderr}");
    let expected: Vec<String> = ["idx", "pack", "rev"]
        .iter()
        .map(|ext| format!("{name}.{ext}"))
        .collect();
    assert_eq!(files, expected);

    let lake_pack = at.dir.join(format!("git-packs/{name}.pack"));
    same_as_git_index(&t, &lake_pack, &name, "cloned.git");
}

/// The index and reverse index `dir` holds of pack `name` are what Git's `index-pack` writes
/// of the pack at `pack`, byte for byte, read-only as Git makes them.
fn same_as_git_index(t: &TestEnv, pack: &std::path::Path, name: &str, dir: &str) {
    let copy = t.path(&format!("{name}.pack"));
    std::fs::copy(pack, &copy).unwrap();
    let idx = t.path(&format!("{name}.by-git.idx"));
    let (idx_arg, copy_arg) = (idx.to_str().unwrap(), copy.to_str().unwrap());
    let by_git = [
        "-c",
        "pack.writeReverseIndex=true",
        "index-pack",
        "-o",
        idx_arg,
        copy_arg,
    ];
    t.ok(".", &by_git);
    let installed = t.path(&format!("{dir}/objects/pack"));
    for ext in ["idx", "rev"] {
        let ours = std::fs::read(installed.join(format!("{name}.{ext}"))).unwrap();
        let git = std::fs::read(idx.with_extension(ext)).unwrap();
        assert!(
            ours == git,
            "{ext}: {} bytes beside Git's {}",
            ours.len(),
            git.len()
        );
        let mode = std::fs::metadata(installed.join(format!("{name}.{ext}"))).unwrap();
        assert!(
            mode.permissions().readonly(),
            "{ext} is read-only, as Git makes it"
        );
    }
    let verified = t.git(dir, &["verify-pack", &format!("objects/pack/{name}.idx")]);
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stderr)
    );
}

/// `pack` writes whole objects; another writer's pack may hold deltas, which gix's own
/// indexer resolves: the same index as Git's again, and the same commits.
#[test]
fn a_lake_pack_with_deltas_is_indexed_as_git_indexes_it() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::Local, "deltas", &lake(40, 20));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);
    let expected = read_one_by_one(&t, &at.url);
    // The same objects packed again by Git, with deltas, under their new checksum.
    t.ok(".", &["init", "-q", "--bare", "repack.git"]);
    let lake_pack = at.dir.join(format!("git-packs/{name}.pack"));
    let held = t.path(&format!("repack.git/objects/pack/{name}.pack"));
    std::fs::copy(&lake_pack, &held).unwrap();
    t.ok("repack.git", &["index-pack", held.to_str().unwrap()]);
    let all = t.ok(
        "repack.git",
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    );
    let out = t
        .command(
            "git",
            "repack.git",
            &[
                "pack-objects",
                "--no-reuse-object",
                "--window=50",
                "--depth=50",
                "deltified",
            ],
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(all.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success());
    let new = format!("pack-{}", String::from_utf8_lossy(&out.stdout).trim());
    let deltified = t.path(&format!("repack.git/deltified-{}.pack", &new[5..]));
    let stats = t.ok(
        "repack.git",
        &[
            "verify-pack",
            "-v",
            deltified.with_extension("idx").to_str().unwrap(),
        ],
    );
    assert!(
        stats.contains("chain length = 1"),
        "Git made no delta: {stats}"
    );
    at.write_bytes(
        &format!("git-packs/{new}.pack"),
        &std::fs::read(&deltified).unwrap(),
    );
    let record = at.read(&format!("git-packs/{name}.json")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&record).unwrap();
    v["pack"] = new.clone().into();
    at.write(&format!("git-packs/{new}.json"), &v.to_string());
    at.write(
        "git-packs/list.json",
        &format!("{{\"format\": 1, \"packs\": [\"{new}\"]}}"),
    );

    let (refs, files, stderr) = trusted_clone(&t, &at.url, "deltas.git");
    assert!(!stderr.contains("warning"), "{stderr}");
    same_refs(&expected, &refs);
    assert!(files.contains(&format!("{new}.pack")), "{files:?}");
    same_as_git_index(&t, &deltified, &new, "deltas.git");
}

#[test]
fn a_pack_git_would_refuse_is_refused_and_its_versions_read_one_by_one() {
    let mut t = TestEnv::new();
    let at = t.lake_at(Where::Local, "damaged", &lake(30, 15));
    pack(&t, &at.url);
    let name = listed_packs(&at).remove(0);
    let expected = read_one_by_one(&t, &at.url);
    let path = at.dir.join(format!("git-packs/{name}.pack"));
    let good = std::fs::read(&path).unwrap();

    let mut junk = good.clone();
    junk.extend_from_slice(b"trailing bytes");
    let mut counted = good.clone();
    counted[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x40;
    let cases: [(&str, &[u8], &str); 4] = [
        ("junk", &junk, "14 bytes of junk after its checksum"),
        ("counted", &counted, "counts more objects than it holds"),
        ("flipped", &flipped, "the pack cannot be indexed"),
        ("empty", b"PACK\0\0\0\x02\0\0\0\0", "it is not a pack"),
    ];
    for (dir, bytes, why) in cases {
        std::fs::write(&path, bytes).unwrap();
        let dest = format!("{dir}.git");
        let (refs, files, stderr) = trusted_clone(&t, &at.url, &dest);
        same_refs(&expected, &refs);
        assert!(
            stderr.contains(why) && stderr.contains("its versions are read one by one"),
            "{dir}: {stderr}"
        );
        assert!(
            files
                .iter()
                .all(|f| !f.contains(&name) && !f.starts_with("tmp_")),
            "{dir}: {files:?}"
        );
    }
}
