//! Broken and hostile lakes in a folder, as `bad_lakes.rs` checks them: a symlink out of the
//! lake's root is neither followed, listed nor written through, one inside it is followed (a ref
//! file's never written through), and a FIFO is refused rather than waited on.

use std::time::{Duration, Instant};

use crate::bad_lakes::{base, failed, ls_remote_fails_at};
use crate::support::{text, vid, TestEnv};

#[test]
fn symlinks_out_of_the_root_are_not_followed() {
    let t = TestEnv::new();
    std::fs::write(t.path("secret"), "{\"message\": \"outside\"}").unwrap();
    let l = base();
    let url = t.local_lake("lake", &l);
    let record = t.path(&format!("lake/versions/{}/version.json", vid(2)));
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink(t.path("secret"), &record).unwrap();
    assert_eq!(
        ls_remote_fails_at(&t, &url),
        format!(
            "fatal: lake '{}': versions/{}/version.json: leads outside the lake's root \
             (a symlink?)\n",
            t.path("lake").display(),
            vid(2)
        )
    );
}

/// Relative links are resolved by the kernel (openat2 below the root), absolute ones step by
/// step: both must refuse to leave the lake, naming the path the link is at.
#[test]
fn relative_symlinks_out_of_the_root_are_not_followed_either() {
    let t = TestEnv::new();
    std::fs::write(t.path("secret"), "{\"message\": \"outside\"}").unwrap();
    let url = t.local_lake("lake", &base());
    let record = t.path(&format!("lake/versions/{}/version.json", vid(2)));
    std::fs::remove_file(&record).unwrap();
    std::os::unix::fs::symlink("../../../secret", &record).unwrap();
    let lake = t.path("lake").display().to_string();
    assert_eq!(
        ls_remote_fails_at(&t, &url),
        format!(
            "fatal: lake '{lake}': versions/{}/version.json: leads outside the lake's root \
             (a symlink?)\n",
            vid(2)
        )
    );
    // A version's folder that is a link out of the lake.
    std::fs::remove_file(&record).unwrap();
    let folder = t.path(&format!("lake/versions/{}", vid(2)));
    std::fs::rename(&folder, t.path("outside")).unwrap();
    std::os::unix::fs::symlink("../../outside", &folder).unwrap();
    std::fs::write(t.path("outside/version.json"), "{}").unwrap();
    assert_eq!(
        ls_remote_fails_at(&t, &url),
        format!(
            "fatal: lake '{lake}': versions/{}: leads outside the lake's root (a symlink?)\n",
            vid(2)
        )
    );
}

/// A link that stays in the lake is followed, relative or absolute, file or folder: the
/// commits are those of the same lake without links.
#[test]
fn symlinks_that_stay_inside_the_root_are_followed() {
    let t = TestEnv::new();
    let plain = t.local_lake("plain", &base());
    let url = t.local_lake("lake", &base());
    std::fs::create_dir(t.path("lake/elsewhere")).unwrap();
    let record = |n| t.path(&format!("lake/versions/{}/version.json", vid(n)));
    std::fs::rename(record(2), t.path("lake/elsewhere/2.json")).unwrap();
    std::os::unix::fs::symlink("../../elsewhere/2.json", record(2)).unwrap();
    std::fs::rename(record(3), t.path("lake/elsewhere/3.json")).unwrap();
    std::os::unix::fs::symlink(t.path("lake/elsewhere/3.json"), record(3)).unwrap();
    let folder = t.path(&format!("lake/versions/{}", vid(1)));
    std::fs::rename(&folder, t.path("lake/elsewhere/1")).unwrap();
    std::os::unix::fs::symlink("../elsewhere/1", &folder).unwrap();
    assert_eq!(
        t.ok(".", &["ls-remote", &url]),
        t.ok(".", &["ls-remote", &plain])
    );
    t.ok(".", &["clone", "-q", &url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "HEAD"]), "3\n");
}

/// A ref file that is a symlink within the lake is read through, but a push never writes
/// through it; the refusal says so rather than that it leads outside the lake.
#[test]
fn a_symlinked_ref_inside_the_lake_is_never_written_through() {
    let t = TestEnv::new();
    let mut l = base();
    l.branch("other", 2);
    let url = t.local_lake("lake", &l);
    std::os::unix::fs::symlink("main", t.path("lake/refs/heads/alias")).unwrap();
    t.ok(".", &["clone", "-q", &url, "work"]);
    let err = text(
        &t.git(
            "work",
            &["push", "-f", "origin", "origin/other:refs/heads/alias"],
        )
        .stderr,
    );
    assert!(
        err.contains("(refs/heads/alias: it is a symlink, which writes never go through")
            && !err.contains("outside"),
        "{err}"
    );
    let main = std::fs::read_to_string(t.path("lake/refs/heads/main")).unwrap();
    assert_eq!(main.trim(), vid(3), "nothing was written through the link");
}

#[test]
fn a_fifo_in_the_lake_is_refused_not_waited_on() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &base());
    std::fs::remove_file(t.path("lake/HEAD")).unwrap();
    let fifo = std::ffi::CString::new(t.path("lake/HEAD").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let start = Instant::now();
    let err = ls_remote_fails_at(&t, &url);
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(
        err,
        format!(
            "fatal: lake '{}': HEAD: is not a regular file (a FIFO, socket or device), not a \
             file\n",
            t.path("lake").display()
        )
    );
}

#[test]
fn symlinks_out_of_the_root_are_neither_listed_nor_written_through() {
    let t = TestEnv::new();
    let url = t.local_lake("lake", &base());
    std::fs::create_dir_all(t.path("outside/heads")).unwrap();
    std::fs::write(t.path("outside/heads/stolen"), vid(1)).unwrap();
    t.ok(".", &["clone", "-q", &url, "work"]);
    std::fs::rename(t.path("lake/refs"), t.path("lake/refs-real")).unwrap();
    std::os::unix::fs::symlink(t.path("outside"), t.path("lake/refs")).unwrap();
    assert_eq!(
        ls_remote_fails_at(&t, &url),
        format!(
            "fatal: lake '{}': refs: leads outside the lake's root (a symlink?)\n",
            t.path("lake").display()
        )
    );
    // A push must not create anything through the link either.
    std::fs::remove_file(t.path("lake/refs")).unwrap();
    std::fs::rename(t.path("lake/refs-real"), t.path("lake/refs")).unwrap();
    std::os::unix::fs::symlink(t.path("outside"), t.path("lake/refs/tags")).unwrap();
    std::fs::create_dir_all(t.path("lake/refs/heads")).unwrap();
    std::os::unix::fs::symlink(t.path("outside"), t.path("lake/refs/heads/team")).unwrap();
    let (code, err) = failed(t.git(
        "work",
        &["push", "origin", "origin/main:refs/heads/team/a/b"],
    ));
    let lake = t.path("lake").display().to_string();
    assert_eq!(
        (code, err),
        (
            Some(1),
            format!(
                "warning: lake '{lake}': ignoring refs/heads/team: a symlink that leads outside \
                 the lake's root\n\
                 To fdl::{lake}\n ! [remote rejected] origin/main -> team/a/b \
                 (refs/heads/team/a/b: leads outside the lake's root (a symlink?))\n\
                 error: failed to push some refs to 'fdl::{lake}'\n"
            )
        )
    );
    let names = |dir: &str| -> Vec<String> {
        let mut n: Vec<String> = std::fs::read_dir(t.path(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        (names("outside"), names("outside/heads")),
        (vec!["heads".to_string()], vec!["stolen".to_string()]),
        "nothing was created outside the lake"
    );
}
