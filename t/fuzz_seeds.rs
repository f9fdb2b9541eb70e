//! The fuzz targets' committed seeds (`fuzz/seeds/<target>/`), replayed through the same entry
//! points `cargo fuzz` drives (`git_remote_fdl::fuzz`): on stable Rust, in every `make test`.
//! An input that once crashed a target is committed there, and stays a failing test until fixed.

use std::path::PathBuf;

type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 7] = [
    ("protocol", git_remote_fdl::fuzz::protocol),
    ("record", git_remote_fdl::fuzz::record),
    ("refs_json", git_remote_fdl::fuzz::refs_json),
    ("pack_formats", git_remote_fdl::fuzz::pack_formats),
    ("lake_pack", git_remote_fdl::fuzz::lake_pack),
    ("redact", git_remote_fdl::fuzz::redact),
    (
        "deflate_round_trip",
        git_remote_fdl::fuzz::deflate_round_trip,
    ),
];

#[test]
fn every_committed_seed_runs_through_its_target_without_a_panic() {
    let seeds = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz/seeds");
    for (target, run) in TARGETS {
        let dir = seeds.join(target);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{target}: no seed");
        for file in files {
            let data = std::fs::read(&file).unwrap();
            let ran = std::panic::catch_unwind(|| run(&data));
            assert!(ran.is_ok(), "{} panicked", file.display());
        }
    }
    // Every target of fuzz/Cargo.toml has its seeds here.
    let manifest = std::fs::read_to_string(seeds.join("../Cargo.toml")).unwrap();
    let declared = manifest.matches("[[bin]]").count();
    assert_eq!(declared, TARGETS.len(), "fuzz/Cargo.toml's targets");
}
