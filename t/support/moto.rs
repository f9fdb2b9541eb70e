//! An S3-compatible server on 127.0.0.1 for the tests: moto's S3 server, started once per test
//! run through `moto_server.py` (which makes each conditional write atomic, as S3 does).
//! `make test` installs moto and names its Python in `MOTO_PYTHON`; without it, S3 tests fail
//! (they never skip). A second server, started only by the credential tests, checks signatures
//! and policies as AWS does ([`auth_moto`]).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::path::Path as StorePath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

pub struct Moto {
    pub endpoint: String,
}

static MOTO: OnceLock<Moto> = OnceLock::new();

/// The shared server, started on first use.
pub fn moto() -> &'static Moto {
    MOTO.get_or_init(start)
}

fn start() -> Moto {
    let port = spawn(&[]);
    Moto {
        endpoint: format!("http://127.0.0.1:{port}"),
    }
}

/// Starts `moto_server.py` on a free port with `extra` arguments, and waits until it listens.
fn spawn(extra: &[&str]) -> u16 {
    let python = super::installed("MOTO_PYTHON");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/t/support/moto_server.py");
    let [port] = super::servers::free_ports();
    let extra: String = extra.iter().map(|a| format!(" '{a}'")).collect();
    let command = format!("'{python}' '{script}' 127.0.0.1 {port}{extra}");
    // The server gets none of the caller's variables (an AWS_PROFILE would reach its boto).
    let log = std::env::temp_dir().join(format!("fdl-test-moto-{port}.log"));
    super::servers::spawn_watched("moto_server", &command, &log, "", &[("LC_ALL", "C.UTF-8")]);
    super::servers::wait_for_port("moto_server", port, &log);
    port
}

/// A second moto server that checks every request as AWS does: signatures made with keys it
/// issued, and each key's policy (see `moto_server.py`). Its users' keys come from the server.
pub struct AuthMoto {
    pub endpoint: String,
    /// The user allowed everything.
    pub reader: (String, String),
    /// The user allowed only to assume the role `fdl-reader`.
    pub base: (String, String),
}

/// The bucket the authenticating server holds (it accepts no unsigned request to make another).
pub const AUTH_BUCKET: &str = "fdl-credentials";

/// The role `base` may assume, allowed everything.
pub const AUTH_ROLE: &str = "arn:aws:iam::123456789012:role/fdl-reader";

static AUTH_MOTO: OnceLock<AuthMoto> = OnceLock::new();

/// The authenticating server, started on first use.
pub fn auth_moto() -> &'static AuthMoto {
    AUTH_MOTO.get_or_init(|| {
        let keys = std::env::temp_dir().join(format!("fdl-moto-keys-{}.json", std::process::id()));
        let _ = std::fs::remove_file(&keys);
        let port = spawn(&[keys.to_str().unwrap()]);
        let deadline = Instant::now() + Duration::from_secs(60);
        let text = loop {
            if let Ok(t) = std::fs::read_to_string(&keys) {
                break t;
            }
            assert!(
                Instant::now() < deadline,
                "moto_server with authentication did not write its keys within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        let _ = std::fs::remove_file(&keys);
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let pair = |user: &str| {
            (
                v[user]["key_id"].as_str().unwrap().to_string(),
                v[user]["secret"].as_str().unwrap().to_string(),
            )
        };
        AuthMoto {
            endpoint: format!("http://127.0.0.1:{port}"),
            reader: pair("reader"),
            base: pair("base"),
        }
    })
}

impl AuthMoto {
    /// Writes `files` below `prefix` in the bucket, signed with the reader's keys.
    pub fn put_files(&self, prefix: &str, files: &BTreeMap<String, Vec<u8>>) {
        let store = self.store();
        block_on(async {
            for (path, bytes) in files {
                let p = StorePath::parse(format!("{prefix}{path}")).unwrap();
                store
                    .put(&p, PutPayload::from(bytes.clone()))
                    .await
                    .unwrap_or_else(|e| panic!("put {p}: {e}"));
            }
        });
    }

    pub fn get(&self, path: &str) -> Option<Vec<u8>> {
        let store = self.store();
        block_on(async {
            match store.get(&StorePath::parse(path).unwrap()).await {
                Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("get {path}: {e}"),
            }
        })
    }

    fn store(&self) -> impl ObjectStore {
        AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_bucket_name(AUTH_BUCKET)
            .with_region("us-east-1")
            .with_access_key_id(&self.reader.0)
            .with_secret_access_key(&self.reader.1)
            .with_allow_http(true)
            .build()
            .unwrap()
    }
}

impl Moto {
    /// The environment the helper needs to reach this server.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL".into(), self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID".into(), "testing".into()),
            (
                "AWS_SECRET_ACCESS_KEY".into(),
                "testing-secret-never-shown".into(),
            ),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("AWS_ALLOW_HTTP".into(), "true".into()),
        ]
    }

    /// Creates a bucket (moto accepts unsigned requests).
    pub fn create_bucket(&self, bucket: &str) {
        let addr = self.endpoint.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "PUT /{bucket} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(
            reply.starts_with("HTTP/1.1 200"),
            "create bucket {bucket}: {reply}"
        );
    }

    /// How many multipart uploads of `bucket` are open, neither completed nor aborted (S3's
    /// `ListMultipartUploads`, unsigned as moto takes it).
    pub fn open_multipart_uploads(&self, bucket: &str) -> usize {
        let addr = self.endpoint.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "GET /{bucket}?uploads HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "list uploads: {reply}");
        reply.matches("<UploadId>").count()
    }

    /// Writes an object with a raw key (no client-side checks), as another tool might.
    pub fn put_raw(&self, bucket: &str, key: &str, body: &str) {
        let addr = self.endpoint.trim_start_matches("http://");
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "PUT /{bucket}/{key} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "put {key}: {reply}");
    }

    pub fn store(&self, bucket: &str) -> impl ObjectStore {
        AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing-secret-never-shown")
            .with_allow_http(true)
            .build()
            .unwrap()
    }

    pub fn put_files(&self, bucket: &str, prefix: &str, files: &BTreeMap<String, Vec<u8>>) {
        let store = self.store(bucket);
        block_on(async {
            for (path, bytes) in files {
                let p = StorePath::parse(format!("{}{path}", prefix)).unwrap();
                store
                    .put(&p, PutPayload::from(bytes.clone()))
                    .await
                    .unwrap();
            }
        });
    }
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// An environment for S3 tests: moto's endpoint, no instance metadata service.
pub fn s3_env(bucket: Option<&str>) -> super::TestEnv {
    let m = moto();
    if let Some(b) = bucket {
        m.create_bucket(b);
    }
    let mut t = super::TestEnv::new();
    for (k, v) in m.env() {
        t.set(&k, &v);
    }
    t.set("AWS_EC2_METADATA_DISABLED", "true");
    t
}

/// The endpoint of the S3 server a lake was put on.
pub fn s3_endpoint(t: &super::TestEnv) -> String {
    t.env
        .iter()
        .find(|(k, _)| k == "AWS_ENDPOINT_URL")
        .map(|(_, v)| v.clone())
        .expect("the S3 lake's endpoint")
}
