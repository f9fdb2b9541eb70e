//! Hardening, third round (issue 24, items 1, 4, 5, 6, 8): what the helper keeps between
//! sessions (kept packs, the commits cache, the file of refs, ETags) is checked before it is
//! used, and a push after a plain `list` keeps `refs.json` in step.

use std::io::Write;
use std::process::{Output, Stdio};

use crate::support::{vid, LakeBuilder, TestEnv, Where};

const HELPER: &str = env!("CARGO_BIN_EXE_git-remote-fdl");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Versions 1..=3 in a chain, main at 3, tag v1 at 1, refs.json written.
fn lake() -> LakeBuilder {
    let mut l = LakeBuilder::new();
    l.chain(1, 3);
    l.branch("main", 3).tag("v1", 1).refs_json();
    l
}

/// Runs the helper as Git would (`git-remote-fdl origin <url>` with `GIT_DIR`), `input` on
/// its stdin.
fn helper_session(t: &TestEnv, git_dir: &str, url: &str, input: &str) -> Output {
    let mut c = t.command(HELPER, ".", &["origin", url]);
    c.env("GIT_DIR", t.path(git_dir));
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    child.wait_with_output().unwrap()
}

/// Item 8: a plain `list` (not `list for-push`) then a push in the same helper process writes
/// the ref and `refs.json` both.
#[test]
fn a_plain_list_then_a_tag_push_in_one_session_updates_refs_json() {
    for place in [Where::Local, Where::S3] {
        let mut t = TestEnv::new();
        let at = t.lake_at(place, "lake", &lake());
        t.ok(".", &["clone", "-q", &at.url, "work"]);
        let c = t.ok("work", &["rev-parse", "origin/main~1"]);
        let url = at.url.trim_start_matches("fdl::");
        let input = format!("list\npush {}:refs/tags/x\n\n", c.trim());
        let out = helper_session(&t, "work/.git", url, &input);
        let stdout = text(&out.stdout);
        assert!(
            stdout.ends_with("ok refs/tags/x\n\n"),
            "{place:?}: {stdout}\n{}",
            text(&out.stderr)
        );
        assert_eq!(
            at.ref_files().get("refs/tags/x"),
            Some(&vid(2)),
            "{place:?}"
        );
        assert_eq!(
            at.refs_json().get("refs/tags/x"),
            Some(&vid(2)),
            "{place:?}"
        );
    }
}
