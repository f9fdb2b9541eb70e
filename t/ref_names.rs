//! Ref names as Git judges them: every name `git check-ref-format` accepts under refs/heads/ and
//! refs/tags/, the helper accepts, and every name it refuses, the helper refuses.

use git_remote_fdl::lake::check_ref_name;

const NAMES: &[&str] = &[
    "main",
    "team/a-b_c",
    "v2026.11",
    "@",
    "a/@",
    "a@b",
    "-x",
    "x-",
    "a.b",
    "a/b/c",
    "caf\u{e9}",
    "a#b",
    "a%20b",
    "a+b",
    "a=b",
    "a,b",
    "a;b",
    "a'b",
    "a\"b",
    "a{b}",
    "a|b",
    "a<b>",
    "UPPER",
    "",
    "a..b",
    ".x",
    "a/.x",
    "x.lock",
    "a/x.lock/b",
    "a b",
    "a//b",
    "x/",
    "a.",
    "a/b.",
    "a@{1}",
    "a*",
    "a?",
    "a[b",
    "a\\b",
    "a~1",
    "a^",
    "a:b",
    "a\tb",
    "a\u{7f}b",
    "/a",
    "a/./b",
    "a/../b",
    "x.lock.y",
    "@{",
    "a/@/b",
];

#[test]
fn ref_names_are_judged_as_git_check_ref_format_judges_them() {
    let mut differ = Vec::new();
    for kind in ["refs/heads/", "refs/tags/"] {
        for name in NAMES {
            let full = format!("{kind}{name}");
            let git = std::process::Command::new("git")
                .args(["check-ref-format", &full])
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .unwrap()
                .success();
            let ours = check_ref_name(&full).is_ok();
            if git != ours {
                differ.push(format!("{full:?}: git says {git}, the helper says {ours}"));
            }
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}
