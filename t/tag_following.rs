//! Issue 46, item 11: `git fetch <lake> tag <name>` as the manual says it goes. Git follows
//! every tag whose commit the fetch brought, and the helper's pack holds every version it read
//! to name the refs' commits, so the other tags come too; `--no-tags` brings the one named.

use crate::support::{lake, TestEnv};

fn tags(t: &TestEnv, dir: &str) -> Vec<String> {
    t.ok(dir, &["tag", "-l"])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn a_fetch_of_one_tag_follows_the_others_read_unless_no_tags_is_given() {
    let t = TestEnv::new();
    let mut l = lake(4, 2);
    l.tag("v2", 3).tag("v3", 4).refs_json();
    let url = t.local_lake("lake", &l);
    t.ok(".", &["init", "-q", "one"]);
    t.ok("one", &["fetch", "-q", "--no-tags", &url, "tag", "v1"]);
    assert_eq!(tags(&t, "one"), ["v1"]);
    t.ok(".", &["init", "-q", "followed"]);
    t.ok("followed", &["fetch", "-q", &url, "tag", "v1"]);
    assert_eq!(tags(&t, "followed"), ["v1", "v2", "v3"]);
    // The same commits either way.
    let v1 = |dir: &str| t.ok(dir, &["rev-parse", "v1"]);
    assert_eq!(v1("one"), v1("followed"));
}
