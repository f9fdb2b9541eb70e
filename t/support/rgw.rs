//! Ceph RGW for `make test-ceph` (root: RGW 20.2 and RGW 16.2 in debootstrap chroots, each on a
//! one-node RADOS cluster, `t/ceph/rgw.sh`): a server the make target started, named by
//! `FDL_TEST_RGW_ENDPOINT` and `FDL_TEST_RGW_RELEASE` (`20` or `16`), with the user
//! testkey / testsecret. Its tests are `#[ignore]`d in `make test`, which starts no RGW;
//! `make test-ceph` runs them with `--ignored`. Buckets are made through boto3 (from the
//! tests' venv, where moto brought it): RGW, unlike moto, takes no unsigned request.

use std::sync::{Arc, OnceLock};

use object_store::aws::AmazonS3Builder;
use object_store::ObjectStore;

pub struct Rgw {
    pub endpoint: String,
    /// `20` or `16`: what the store check finds differs (RGW 16 takes only unquoted ETags).
    pub release: String,
}

pub const KEY: &str = "testkey";
pub const SECRET: &str = "testsecret";

static RGW: OnceLock<Rgw> = OnceLock::new();

/// The server `make test-ceph` started; ends the run with what to do when there is none.
pub fn rgw() -> &'static Rgw {
    RGW.get_or_init(|| {
        let endpoint = std::env::var("FDL_TEST_RGW_ENDPOINT").unwrap_or_default();
        if endpoint.is_empty() {
            let line = "error: FDL_TEST_RGW_ENDPOINT is not set; the Ceph RGW tests run with \
                        `make test-ceph` (as root), which starts RGW 20 and RGW 16\n";
            let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
            std::process::exit(1)
        }
        Rgw {
            endpoint,
            release: std::env::var("FDL_TEST_RGW_RELEASE").unwrap_or_else(|_| "20".into()),
        }
    })
}

impl Rgw {
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL".into(), self.endpoint.clone()),
            ("AWS_ACCESS_KEY_ID".into(), KEY.into()),
            ("AWS_SECRET_ACCESS_KEY".into(), SECRET.into()),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("AWS_ALLOW_HTTP".into(), "true".into()),
        ]
    }

    pub fn create_bucket(&self, bucket: &str) {
        let python = super::installed("MOTO_PYTHON");
        let script = format!(
            "import boto3; boto3.client('s3', endpoint_url='{}', aws_access_key_id='{KEY}', \
             aws_secret_access_key='{SECRET}', region_name='us-east-1').create_bucket(Bucket='{bucket}')",
            self.endpoint
        );
        let out = std::process::Command::new(python)
            .args(["-c", &script])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "create bucket {bucket} on RGW: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub fn store(&self, bucket: &str) -> impl ObjectStore {
        AmazonS3Builder::new()
            .with_endpoint(&self.endpoint)
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id(KEY)
            .with_secret_access_key(SECRET)
            .with_allow_http(true)
            .build()
            .unwrap()
    }
}

impl super::servers::Cloud for Rgw {
    fn scheme(&self) -> &'static str {
        "s3"
    }
    fn env(&self) -> Vec<(String, String)> {
        Rgw::env(self)
    }
    fn create_bucket(&self, bucket: &str) {
        Rgw::create_bucket(self, bucket)
    }
    fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        Arc::new(Rgw::store(self, bucket))
    }
}
