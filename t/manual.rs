//! The manual as Git shows it: the man page `make install` builds from docs/git-remote-fdl.md
//! (with docs/md2man.py), found by `git help remote-fdl` from where the binary is installed,
//! and `git-remote-fdl --help`.

use crate::support::TestEnv;

/// Installs the helper and its page the way `make install` lays them out under a prefix.
fn install(t: &mut TestEnv) -> std::path::PathBuf {
    let prefix = t.path("prefix");
    let man1 = prefix.join("share/man/man1");
    std::fs::create_dir_all(&man1).unwrap();
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_git-remote-fdl"),
        prefix.join("bin/git-remote-fdl"),
    )
    .unwrap();
    let root = env!("CARGO_MANIFEST_DIR");
    let out = std::process::Command::new("python3")
        .arg(format!("{root}/docs/md2man.py"))
        .arg(format!("{root}/docs/git-remote-fdl.md"))
        .output()
        .expect("python3 runs docs/md2man.py");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::write(man1.join("git-remote-fdl.1"), &out.stdout).unwrap();
    // Only the prefix's bin on PATH leads man to the page, as after `make install`.
    let path = format!(
        "{}:/usr/local/bin:/usr/bin:/bin",
        prefix.join("bin").display()
    );
    t.set("PATH", &path)
        .set("MANPAGER", "cat")
        .set("MANWIDTH", "100");
    prefix
}

#[test]
fn git_help_shows_the_manual() {
    let mut t = TestEnv::new();
    install(&mut t);
    let out = t
        .command("git", ".", &["help", "remote-fdl"])
        .env_remove("MANPATH")
        .output()
        .unwrap();
    let page = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{page}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for section in [
        "GIT-REMOTE-FDL(1)",
        "LAKE ADDRESSES",
        "CONFIGURATION",
        "PUSH",
        "SUBMODULES",
        "protocol.fdl.allow",
        "EXIT STATUS",
    ] {
        assert!(page.contains(section), "{section} missing from:\n{page}");
    }
    // No Markdown left over in the page.
    assert!(!page.contains("```") && !page.contains("| --- |"), "{page}");
    let out = t
        .command("man", ".", &["git-remote-fdl"])
        .env_remove("MANPATH")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("LAKE ADDRESSES"));
}

#[test]
fn help_summarises_addresses_configuration_and_environment() {
    let t = TestEnv::new();
    let out = t
        .command(env!("CARGO_BIN_EXE_git-remote-fdl"), ".", &["--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for word in [
        "s3://",
        "gs://",
        "az://",
        "fdlEndpoint",
        "fdlOption",
        "AWS_ENDPOINT_URL",
        "GOOGLE_SERVICE_ACCOUNT",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "protocol.fdl.allow",
        "git help remote-fdl",
    ] {
        assert!(help.contains(word), "{word} missing from:\n{help}");
    }
}

/// Markup the page must not show as text: emphasis, code ticks, a Markdown link, a status word
/// followed by the sentence's own colon or stop, and a paragraph run into the list item above.
#[test]
fn man_page_renders_without_raw_markdown() {
    let mut t = TestEnv::new();
    let prefix = install(&mut t);
    let page_file = prefix.join("share/man/man1/git-remote-fdl.1");
    let out = t
        .command("man", ".", &["-l"])
        .arg(&page_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = String::from_utf8_lossy(&out.stdout);
    for (i, line) in page.lines().enumerate() {
        let bad = ["**", "`", "](", "warning::", "warning:.", "\\f"]
            .iter()
            .find(|m| line.contains(*m));
        let emphasis = line
            .split_whitespace()
            .any(|w| w.len() > 2 && w.starts_with('*') && w[1..].starts_with(char::is_alphabetic));
        assert!(bad.is_none() && !emphasis, "line {}: {line}", i + 1);
    }
    let push_options = page
        .lines()
        .find(|l| l.contains("Push options (-o) mean nothing"))
        .expect("the push options paragraph");
    assert!(
        !push_options.starts_with("           "),
        "a paragraph merged into the list item above: {push_options}"
    );
}

/// What a Git user meets that Git's own servers do otherwise is in the man page Git shows
/// (issue 30): lightweight tags and `git describe --tags`, `--unshallow` on a complete clone,
/// no `git archive --remote`, SHA-256 refused, removing `catalog`'s files, the unborn HEAD.
#[test]
fn the_manual_says_what_git_users_meet() {
    let mut t = TestEnv::new();
    let prefix = install(&mut t);
    let page_file = prefix.join("share/man/man1/git-remote-fdl.1");
    let out = t
        .command("man", ".", &["-l"])
        .arg(&page_file)
        .output()
        .unwrap();
    assert!(out.status.success());
    // man fills paragraphs; the words are compared with the lines joined.
    let page = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace("- ", "-");
    for said in [
        "git describe finds them only with --tags",
        "a depth-1 clone holds one commit, its tree and its two files",
        "leaves .git/shallow as it was",
        "git archive --remote is not served",
        "SHA-256 repositories are refused",
        "rm -r .git/fdl/catalogs",
        "advertise it as unborn",
        "'remote-s3' is not a git command",
    ] {
        assert!(page.contains(said), "the manual does not say: {said}");
    }
    assert!(
        !page.contains("as with its own servers"),
        "the old, wrong claim"
    );
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(readme.contains("'remote-s3' is not a git command"));
}

/// `make example` says that the install folder is not on PATH before it builds anything (it
/// once built for 8.5 minutes first), and stops.
#[test]
fn make_example_checks_the_path_before_it_builds() {
    let prefix = "/nonexistent/fdl-prefix";
    let out = std::process::Command::new("make")
        .args(["-s", "example", &format!("PREFIX={prefix}")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .output()
        .expect("make");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains(&format!("error: '{prefix}/bin' is not on your PATH"))
            && said.contains("nothing was built"),
        "{said}"
    );
    assert!(!said.contains("Compiling"), "{said}");
}
