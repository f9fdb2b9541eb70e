//! The lake-level suite on every store: reading (ls-remote, clone, fetch) gives the same commits
//! on a folder, S3 (moto), GCS (fake-gcs-server) and Azure Blob (Azurite); per-remote
//! configuration reaches each emulator; the 8-writer race and the push killed between its two
//! writes run on GCS and Azure as they do on a folder and S3 (`t/reliability.rs`). The push
//! scenarios themselves run on all four from `t/push.rs`.

use crate::support::clouds::cloud;
use crate::support::{azurite, branched_lake, gcs, parse_ls_remote, vid, TestEnv, Where};

/// The same lake read from `place` and from a folder: same refs, same commits; then new
/// versions written by another writer arrive with a fetch.
fn read_path(place: Where) {
    let mut t = TestEnv::new();
    let mut l = branched_lake();
    let at = t.lake_at(place, "sales", &l);
    let listed = t.ok(".", &["ls-remote", "--symref", &at.url]);
    let local = t.local_lake("copy", &l);
    assert_eq!(
        listed,
        t.ok(".", &["ls-remote", "--symref", &local]),
        "{place:?}"
    );
    assert_eq!(parse_ls_remote(&listed).len(), 5, "{listed}");
    t.ok(".", &["clone", "-q", &at.url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "--all"]), "5\n");
    let before = l.files.clone();
    l.version(6, &[4], "Load batch 6");
    l.version(7, &[6], "Load batch 7");
    l.branch("main", 7);
    for (path, bytes) in &l.files {
        if before.get(path) != Some(bytes) {
            at.write(path, std::str::from_utf8(bytes).unwrap());
        }
    }
    t.ok("work", &["fetch", "-q"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "origin/main"]), "6\n");
    assert_eq!(
        t.ok("work", &["log", "-1", "--format=%s", "origin/main"]),
        "Load batch 7\n"
    );
    assert_eq!(
        t.ok(
            "work",
            &[
                "log",
                "-1",
                "--format=%(trailers:key=FDL-Version,valueonly)",
                "origin/main"
            ]
        )
        .trim(),
        vid(7)
    );
}

#[test]
fn read_path_s3() {
    read_path(Where::S3)
}

#[test]
fn read_path_gcs() {
    read_path(Where::Gcs)
}

#[test]
fn read_path_azure() {
    read_path(Where::Azure)
}

#[test]
fn read_path_seaweedfs() {
    read_path(Where::SeaweedFs)
}

#[test]
fn racing_pushes_seaweedfs() {
    crate::reliability::race(Where::SeaweedFs)
}

#[test]
fn push_killed_between_ref_and_refs_json_seaweedfs() {
    crate::reliability::crash(Where::SeaweedFs)
}

#[test]
#[ignore = "needs Ceph RGW: make test-ceph"]
fn read_path_rgw() {
    read_path(Where::Rgw)
}

#[test]
#[ignore = "needs Ceph RGW: make test-ceph"]
fn racing_pushes_rgw() {
    crate::reliability::race(Where::Rgw)
}

#[test]
#[ignore = "needs Ceph RGW: make test-ceph"]
fn push_killed_between_ref_and_refs_json_rgw() {
    crate::reliability::crash(Where::Rgw)
}

/// RGW 20 decides `If-Match` on DELETE; RGW 16 ignores it (the helper's check before the
/// delete is then all there is, as the manual says).
#[test]
#[ignore = "needs Ceph RGW: make test-ceph"]
fn rgw_deletes_on_condition_from_release_20() {
    let honoured = delete_is_conditional(Where::Rgw);
    let release = &crate::support::rgw::rgw().release;
    assert_eq!(honoured, release != "16", "RGW {release}");
}

#[test]
fn racing_pushes_gcs() {
    crate::reliability::race(Where::Gcs)
}

#[test]
fn racing_pushes_azure() {
    crate::reliability::race(Where::Azure)
}

#[test]
fn push_killed_between_ref_and_refs_json_gcs() {
    crate::reliability::crash(Where::Gcs)
}

#[test]
fn push_killed_between_ref_and_refs_json_azure() {
    crate::reliability::crash(Where::Azure)
}

/// A lake in a fresh bucket of `place`, with an environment that does NOT reach it.
fn unconfigured(place: Where, name: &str) -> (TestEnv, String) {
    let mut t = TestEnv::new();
    let at = t.lake_at(place, name, &branched_lake());
    for (k, _) in cloud(place).unwrap().env() {
        t.env.retain(|(key, _)| key != &k);
    }
    (t, at.url)
}

#[test]
fn gcs_endpoint_from_git_config() {
    let (mut t, url) = unconfigured(Where::Gcs, "configured");
    // Credentials stay in the environment; where the store is comes from Git's configuration.
    t.set("GOOGLE_SERVICE_ACCOUNT_KEY", gcs::NO_OAUTH_KEY);
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "lake", &url]);
    t.ok(
        "work",
        &["config", "remote.lake.fdlEndpoint", &gcs::gcs().endpoint],
    );
    t.ok("work", &["config", "remote.lake.fdlAllowHttp", "true"]);
    t.ok("work", &["fetch", "-q", "lake"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "lake/main"]), "4\n");
    t.ok(
        "work",
        &["push", "-q", "lake", "lake/main:refs/tags/configured"],
    );
    assert!(t
        .ok("work", &["ls-remote", "lake"])
        .contains("refs/tags/configured"));
}

#[test]
fn azure_endpoint_and_key_from_git_config_and_environment() {
    let (mut t, url) = unconfigured(Where::Azure, "configured");
    // As against a real account: name and key in the environment, the endpoint per remote.
    t.set("AZURE_STORAGE_ACCOUNT_NAME", azurite::ACCOUNT)
        .set("AZURE_STORAGE_ACCOUNT_KEY", azurite::KEY);
    t.ok(".", &["init", "-q", "work"]);
    t.ok("work", &["remote", "add", "lake", &url]);
    let endpoint = format!("{}/{}", azurite::azurite().endpoint, azurite::ACCOUNT);
    t.ok("work", &["config", "remote.lake.fdlEndpoint", &endpoint]);
    t.ok("work", &["config", "remote.lake.fdlAllowHttp", "true"]);
    t.ok("work", &["fetch", "-q", "lake"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "lake/main"]), "4\n");
    t.ok(
        "work",
        &["push", "-q", "lake", "lake/main:refs/tags/configured"],
    );
    assert!(t
        .ok("work", &["ls-remote", "lake"])
        .contains("refs/tags/configured"));
    // A container that does not exist: one fatal line naming the lake, and never the key.
    let err = t.fails(".", &["ls-remote", "fdl::az://no-such-container/lake/"]);
    assert!(
        err.starts_with("fatal: ") && err.contains("no-such-container"),
        "{err}"
    );
    assert!(!err.contains(azurite::KEY), "{err}");
}

/// Application-default credentials where gcloud leaves them, with no other Google credential
/// variable: `~/.config/gcloud/application_default_credentials.json`, the same file under
/// `CLOUDSDK_CONFIG` (which object_store alone does not read), then
/// `GOOGLE_APPLICATION_CREDENTIALS`, which comes first. Each is a service account, whose token
/// object_store signs itself (a JWT naming the account: no token server is asked); a proxy shows
/// which account signed. The metadata server is a listener that must see nothing.
/// (`authorized_user` files ask Google's token endpoint, which no test reaches.)
#[test]
fn gcs_application_default_credentials() {
    use crate::support::recorder;
    let (mut t, url) = unconfigured(Where::Gcs, "adc");
    let proxy = recorder::proxy(&gcs::gcs().endpoint);
    let metadata = recorder::fixed("404 Not Found");
    let metadata_host = metadata.endpoint.trim_start_matches("http://").to_string();
    t.set("GOOGLE_BASE_URL", &proxy.endpoint)
        .set("GOOGLE_ALLOW_HTTP", "true")
        .set("GCE_METADATA_HOST", &metadata_host)
        .set("GCE_METADATA_IP", &metadata_host);
    let key = gcs::rsa_key();
    let write = |path: &std::path::Path, email: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let adc = serde_json::json!({
            "type": "service_account", "project_id": "p", "private_key_id": "k1",
            "private_key": key, "client_email": email,
        });
        std::fs::write(path, adc.to_string()).unwrap();
    };
    let signer = |t: &TestEnv| {
        let before = proxy.seen().len();
        assert!(t.ok(".", &["ls-remote", &url]).contains("refs/heads/main"));
        let seen = proxy.seen();
        let issuers: std::collections::BTreeSet<String> =
            seen[before..].iter().map(jwt_issuer).collect();
        assert_eq!(issuers.len(), 1, "{issuers:?}");
        issuers.into_iter().next().unwrap()
    };
    let home = t.path("home/.config/gcloud/application_default_credentials.json");
    write(&home, "home@p.iam.gserviceaccount.com");
    assert_eq!(signer(&t), "home@p.iam.gserviceaccount.com");
    write(
        &t.path("gcloud/application_default_credentials.json"),
        "cloudsdk@p.iam.gserviceaccount.com",
    );
    t.set("CLOUDSDK_CONFIG", t.path("gcloud").to_str().unwrap());
    assert_eq!(signer(&t), "cloudsdk@p.iam.gserviceaccount.com");
    write(&t.path("key.json"), "explicit@p.iam.gserviceaccount.com");
    t.set(
        "GOOGLE_APPLICATION_CREDENTIALS",
        t.path("key.json").to_str().unwrap(),
    );
    assert_eq!(signer(&t), "explicit@p.iam.gserviceaccount.com");
    assert_eq!(metadata.connections(), 0, "{:?}", metadata.seen());
}

/// The `iss` of the JWT a request carried as its bearer token.
fn jwt_issuer(seen: &crate::support::recorder::Seen) -> String {
    let auth = seen.authorization.as_deref().unwrap_or_default();
    let jwt = auth
        .strip_prefix("Bearer ")
        .unwrap_or_else(|| panic!("{seen:?}"));
    let payload = jwt.split('.').nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&base64url(payload)).unwrap();
    json["iss"].as_str().unwrap().to_string()
}

fn base64url(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'-' | b'+' => 62,
        _ => 63,
    };
    let bits: Vec<u8> = text.bytes().filter(|c| *c != b'=').map(value).collect();
    bits.chunks(4)
        .flat_map(|c| {
            let n = c.iter().fold(0u32, |n, v| (n << 6) | u32::from(*v)) << (6 * (4 - c.len()));
            let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
            bytes.into_iter().take(c.len() * 6 / 8)
        })
        .collect()
}

/// `AZURE_STORAGE_CONNECTION_STRING` (which object_store does not read) as the Azure CLI reads
/// it, with no other Azure variable set: an account name and key with the blob endpoint (clone,
/// push), a shared access signature with the endpoint, `UseDevelopmentStorage=true`; a wrong
/// key is refused and never shown.
#[test]
fn azure_connection_string() {
    let (mut t, url) = unconfigured(Where::Azure, "connection");
    const VAR: &str = "AZURE_STORAGE_CONNECTION_STRING";
    let endpoint = format!("{}/{}", azurite::azurite().endpoint, azurite::ACCOUNT);
    t.set(
        VAR,
        &format!(
            "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={endpoint}/;",
            azurite::ACCOUNT,
            azurite::KEY
        ),
    );
    t.ok(".", &["clone", "-q", &url, "work"]);
    assert_eq!(t.ok("work", &["rev-list", "--count", "--all"]), "5\n");
    t.ok("work", &["tag", "pushed", "origin/main"]);
    t.ok("work", &["push", "-q", "origin", "pushed"]);

    // A SAS string with a stray key variable: the connection string stands for the account,
    // so the key (wrong here) is not read.
    let sas = azurite::account_sas();
    let wrong = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmc=";
    t.set(
        VAR,
        &format!("BlobEndpoint={endpoint};SharedAccessSignature={sas}"),
    )
    .set("AZURE_STORAGE_ACCOUNT_KEY", wrong);
    assert!(t.ok(".", &["ls-remote", &url]).contains("refs/tags/pushed"));
    t.env.retain(|(k, _)| k != "AZURE_STORAGE_ACCOUNT_KEY");

    t.set(VAR, "UseDevelopmentStorage=true")
        .set("AZURITE_BLOB_STORAGE_URL", &azurite::azurite().endpoint);
    assert!(t.ok(".", &["ls-remote", &url]).contains("refs/tags/pushed"));

    let wrong = "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXktd3Jvbmc=";
    t.set(
        VAR,
        &format!(
            "AccountName={};AccountKey={wrong};BlobEndpoint={endpoint}",
            azurite::ACCOUNT
        ),
    );
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.starts_with("fatal: ") && err.contains("access denied (403"),
        "{err}"
    );
    assert!(!err.contains(wrong) && !err.contains(&sas), "{err}");
    t.set(VAR, "AccountKey=no-account-named");
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.contains("AZURE_STORAGE_CONNECTION_STRING cannot be used")
            && !err.contains("no-account-named"),
        "{err}"
    );
}

/// The helper's own store, opened with object_store options equal to the emulator's environment.
pub(crate) fn open_store(place: Where, url: &str) -> git_remote_fdl::store::Store {
    let options: Vec<(String, String)> = match place {
        // Azurite's address is read only from the environment in emulator mode: name the
        // account, key and endpoint instead, as for a real account.
        Where::Azure => vec![
            ("azure_storage_account_name".into(), azurite::ACCOUNT.into()),
            ("azure_storage_account_key".into(), azurite::KEY.into()),
            (
                "azure_storage_endpoint".into(),
                format!("{}/{}", azurite::azurite().endpoint, azurite::ACCOUNT),
            ),
            ("azure_allow_http".into(), "true".into()),
        ],
        cloud_place => cloud(cloud_place)
            .unwrap()
            .env()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect(),
    };
    let url = git_remote_fdl::store::StoreUrl::parse(
        url.trim_start_matches("fdl::"),
        std::path::Path::new("/"),
    )
    .unwrap();
    git_remote_fdl::store::Store::open(&url, &options).unwrap()
}

/// The conditional DELETE alone (without the helper's check just before it): a branch changed
/// by another writer since it was read is not deleted.
fn delete_is_conditional(place: Where) -> bool {
    use git_remote_fdl::store::WriteError;
    let mut t = TestEnv::new();
    let at = t.lake_at(place, "deletes", &branched_lake());
    let store = open_store(place, &at.url);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let read = rt
        .block_on(store.get_versioned("refs/heads/feature/x", 1 << 20))
        .unwrap()
        .unwrap();
    at.write("refs/heads/feature/x", &format!("{}\n", vid(3)));
    let stale = rt.block_on(store.delete_on_condition_only("refs/heads/feature/x", &read.token));
    let honoured = match stale {
        Err(WriteError::Conflict) => {
            assert_eq!(at.read("refs/heads/feature/x").unwrap().trim(), vid(3));
            true
        }
        Ok(()) => false,
        Err(e) => panic!("{place:?}: {e}"),
    };
    // With the current version, the delete goes through.
    at.write("refs/heads/feature/x", &format!("{}\n", vid(4)));
    let now = rt
        .block_on(store.get_versioned("refs/heads/feature/x", 1 << 20))
        .unwrap()
        .unwrap();
    rt.block_on(store.delete_on_condition_only("refs/heads/feature/x", &now.token))
        .unwrap_or_else(|e| panic!("{place:?}: {e}"));
    assert_eq!(at.read("refs/heads/feature/x"), None);
    honoured
}

#[test]
fn s3_deletes_on_condition() {
    assert!(
        delete_is_conditional(Where::S3),
        "moto ignored If-Match on DELETE"
    );
}

#[test]
fn seaweedfs_deletes_on_condition() {
    assert!(
        delete_is_conditional(Where::SeaweedFs),
        "SeaweedFS ignored If-Match on DELETE"
    );
}

#[test]
fn azure_deletes_on_condition() {
    assert!(
        delete_is_conditional(Where::Azure),
        "Azurite ignored If-Match on DELETE"
    );
}

/// The helper sends `x-goog-if-generation-match` on DELETE, but fake-gcs-server deletes whatever
/// is there: the emulator cannot show a conditional delete (docs/git-remote-fdl.md says so).
/// If a later fake-gcs-server honours it, this test fails: then assert it instead.
#[test]
fn gcs_delete_request_is_accepted_though_the_emulator_ignores_its_condition() {
    assert!(!delete_is_conditional(Where::Gcs));
}

/// A profile that is in no AWS file stops the helper before any request (instance metadata is
/// not turned off here, and not asked); with none named and metadata off, the error says what
/// was tried. (t/credentials.rs has the rest of the chain.)
#[test]
fn s3_without_credentials_says_what_to_do() {
    let (mut t, url) = unconfigured(Where::S3, "no-credentials");
    t.set("AWS_ENDPOINT_URL", &crate::support::moto::moto().endpoint)
        .set("AWS_ALLOW_HTTP", "true")
        .set("AWS_REGION", "us-east-1")
        .set("AWS_PROFILE", "dev");
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.starts_with("fatal: ")
            && err.contains(
                "no AWS profile 'dev' (named by AWS_PROFILE) in ~/.aws/config and ~/.aws/credentials"
            )
            && err.contains("hint: name a profile that exists"),
        "{err}"
    );
    t.env.retain(|(k, _)| k != "AWS_PROFILE");
    t.set("AWS_EC2_METADATA_DISABLED", "true");
    let err = t.fails(".", &["ls-remote", &url]);
    assert!(
        err.starts_with("fatal: ")
            && err.contains("no AWS credentials: none in the environment (AWS_ACCESS_KEY_ID), in the default profile")
            && err.contains("instance metadata is turned off (AWS_EC2_METADATA_DISABLED)"),
        "{err}"
    );
}

/// A range of a listing asked for in pages of about its size (max-keys and continuation
/// tokens on each emulator) finds exactly what a whole listing finds in that range, also when
/// the range has grown to several of those pages.
fn ranges_list_in_pages(place: Where) {
    let mut l = branched_lake();
    for k in 1..=60 {
        l.tag(&format!("t{k:04}"), 1 + k % 4);
    }
    let mut t = TestEnv::new();
    let at = t.lake_at(place, "pages", &l);
    let store = open_store(place, &at.url);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let whole = rt.block_on(store.list("refs/tags/")).unwrap();
    let in_range = |after: Option<&str>, until: &str| -> Vec<String> {
        let files = whole
            .files
            .iter()
            .filter(|f| after.is_none_or(|a| f.as_str() > a));
        files.filter(|f| f.as_str() <= until).cloned().collect()
    };
    // Expected 8: pages of 26, so 45 files take two pages; 10 files, one.
    for (after, until, expected) in [
        (Some("refs/tags/t0005"), "refs/tags/t0050", 8),
        (None, "refs/tags/t0010", 8),
        (Some("refs/tags/t0050"), "refs/tags/t0060", 100),
    ] {
        let listed = rt
            .block_on(store.list_range("refs/tags/", after, Some(until), None, Some(expected)))
            .unwrap_or_else(|e| panic!("{place:?}: {e}"));
        assert_eq!(
            listed.files,
            in_range(after, until),
            "{place:?} {after:?}..={until}"
        );
        for f in &listed.files {
            assert!(listed.e_tag_of(f).is_some(), "{place:?}: no ETag for {f}");
        }
    }
    assert_eq!(whole.files.len(), 61, "{:?}", whole.files);
}

#[test]
fn ranges_list_in_pages_s3() {
    ranges_list_in_pages(Where::S3)
}

#[test]
fn ranges_list_in_pages_gcs() {
    ranges_list_in_pages(Where::Gcs)
}

#[test]
fn ranges_list_in_pages_seaweedfs() {
    ranges_list_in_pages(Where::SeaweedFs)
}

#[test]
fn ranges_list_in_pages_azure() {
    ranges_list_in_pages(Where::Azure)
}

/// A listing of `versions/` longer than a page goes on after the first page's last version,
/// whose files the page may have cut in two. SeaweedFS lists a folder at a time and took a
/// start-after of that version's folder to mean after all of it: the rest of its files were
/// left out, and with its `version.json` the version itself. Regression: the listing starts
/// before the folder on every store, and a lake of 400 versions (1,200 files, the first page
/// ending inside version 334) lists every file, and the same commits as from its folder.
#[test]
fn a_version_cut_in_two_by_a_listing_page_keeps_all_its_files_on_every_store() {
    let l = crate::support::lake(400, 200);
    let mut t = TestEnv::new();
    let local = t.local_lake("folder", &l);
    let expected = parse_ls_remote(&t.ok(".", &["ls-remote", &local]));
    for place in [Where::S3, Where::Gcs, Where::Azure, Where::SeaweedFs] {
        let at = t.lake_at(place, "paged", &l);
        let (stdout, stderr) = t.traced(".", &["ls-remote", &at.url]);
        // Every file under versions/ listed at least once (the cut version's twice elsewhere).
        let files: u64 = stderr
            .lines()
            .filter(|l| l.contains("store: LIST versions/"))
            .filter_map(|l| {
                l.split("-> ")
                    .nth(1)?
                    .split(' ')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .sum();
        assert!(
            files >= 3 * 400,
            "{place:?}: {files} files listed: {stderr}"
        );
        let listed = parse_ls_remote(&stdout);
        assert_eq!(listed, expected, "{place:?}");
        assert!(!stderr.contains("warning"), "{place:?}: {stderr}");
    }
}
