//! An S3-compatible server on 127.0.0.1 for the tests: moto's S3 server, started once per test
//! run through `moto_server.py` (which makes each conditional write atomic, as S3 does).
//! `make test` installs moto and names its Python in `MOTO_PYTHON`; without it, S3 tests fail
//! (they never skip).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
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
    let python = std::env::var("MOTO_PYTHON").unwrap_or_else(|_| {
        panic!("MOTO_PYTHON is not set: run the tests with `make test`, which installs moto")
    });
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/t/support/moto_server.py");
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // A watchdog shell stops the server when this test process ends.
    let watchdog = format!(
        "'{python}' '{script}' 127.0.0.1 {port} >/dev/null 2>&1 & m=$!; \
         while kill -0 {pid} 2>/dev/null; do sleep 1; done; kill $m",
        pid = std::process::id()
    );
    // The watchdog outlives this process by design; nothing waits for it.
    #[allow(clippy::zombie_processes)]
    Command::new("sh")
        .arg("-c")
        .arg(watchdog)
        .stdin(Stdio::null())
        // The server gets none of the caller's variables (an AWS_PROFILE would reach its boto).
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("LC_ALL", "C.UTF-8")
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {script}: {e}"));
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "moto_server did not start on port {port} within 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Moto {
        endpoint: format!("http://127.0.0.1:{port}"),
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

    pub fn get(&self, bucket: &str, path: &str) -> Option<Vec<u8>> {
        let store = self.store(bucket);
        block_on(async {
            match store.get(&StorePath::parse(path).unwrap()).await {
                Ok(r) => Some(r.bytes().await.unwrap().to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("get {path}: {e}"),
            }
        })
    }

    pub fn list(&self, bucket: &str, prefix: &str) -> Vec<String> {
        use futures::TryStreamExt;
        let store = self.store(bucket);
        block_on(async {
            let metas: Vec<_> = store
                .list(Some(&StorePath::from(prefix)))
                .try_collect()
                .await
                .unwrap();
            metas.into_iter().map(|m| m.location.to_string()).collect()
        })
    }

    pub fn delete(&self, bucket: &str, path: &str) {
        let store = self.store(bucket);
        block_on(async {
            store
                .delete(&StorePath::parse(path).unwrap())
                .await
                .unwrap()
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
