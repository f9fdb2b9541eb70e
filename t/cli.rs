//! The command line for humans: a typo of a subcommand, on a terminal or not, and `--help`.

use crate::support::{TestEnv, HELPER};

#[test]
fn typo_subcommand_on_a_terminal_is_an_error_with_the_commands() {
    let t = TestEnv::new();
    // A terminal on stdin, as for a human; the helper must not wait for protocol input.
    let script = "import os, pty, subprocess, sys\n\
        m, s = pty.openpty()\n\
        p = subprocess.Popen(sys.argv[1:], stdin=s, stdout=subprocess.PIPE, stderr=subprocess.PIPE)\n\
        os.close(s)\n\
        try:\n    out, err = p.communicate(timeout=20)\n\
        except subprocess.TimeoutExpired:\n    p.kill(); print('TIMEOUT'); sys.exit(99)\n\
        sys.stdout.buffer.write(err)\n\
        sys.exit(p.returncode)\n";
    let out = t
        .command("python3", ".", &["-c", script, HELPER, "lss", "lake"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(129), "{err}");
    assert!(err.contains("unrecognized subcommand 'lss'"), "{err}");
    assert!(
        err.contains("Commands:") && err.contains("verify") && err.contains("ls "),
        "{err}"
    );
}

/// From a script (no terminal), a typo looks like Git's invocation; Git would have sent a
/// command first, so empty standard input is an error, not a silent success.
#[test]
fn typo_subcommand_without_a_terminal_fails_rather_than_succeeding_silently() {
    let t = TestEnv::new();
    for args in [&["version"][..], &["lss", "lake"][..]] {
        let out = t.command(HELPER, ".", args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(128), "{args:?}: {err}");
        assert!(
            err.starts_with("fatal: no command came on standard input")
                && err.contains("hint: ")
                && err.contains("git-remote-fdl --help"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
    }
}

#[test]
fn missing_folder_has_one_colon_and_help_shows_addresses_and_configuration() {
    let t = TestEnv::new();
    let err = t.fails(".", &["ls-remote", "fdl::no-such-folder"]);
    assert!(!err.contains(": :"), "{err}");
    assert!(
        err.contains("hint: a folder lake is named by the folder"),
        "{err}"
    );
    for args in [&["help"][..], &["--help"][..]] {
        let out = t.command(HELPER, ".", args).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{help}");
        for needle in [
            "s3://<bucket>/<prefix>/",
            "remote.<remote>.fdlEndpoint",
            "remote.<remote>.fdlAllowHttp",
            "remote.<remote>.fdlOption",
            "AWS_ENDPOINT_URL",
            "GIT_REMOTE_FDL_DEBUG",
        ] {
            assert!(
                help.contains(needle),
                "{needle} missing from {args:?}:\n{help}"
            );
        }
    }
}
