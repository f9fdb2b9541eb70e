//! An Azure Blob Storage emulator on 127.0.0.1 for the tests: Azurite's blob service, installed
//! from the npm registry by `make test` and named in `AZURITE_BLOB`. Without it the Azure tests
//! fail (they never skip).

use std::sync::{Arc, OnceLock};

use object_store::azure::MicrosoftAzureBuilder;
use object_store::client::HttpConnector;
use object_store::ObjectStore;

use super::servers::{block_on, free_ports, start_server, Cloud};

/// Azurite's well-known development account and key (public, in Azure's own documentation).
pub const ACCOUNT: &str = "devstoreaccount1";
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// An account SAS for the development account (blob service; every resource type and
/// permission; http and https; valid until 2099), signed with its key by the tests' Python.
pub fn account_sas() -> String {
    let python = super::installed("MOTO_PYTHON");
    let script = format!(
        "import base64, hashlib, hmac, urllib.parse\n\
         f = dict(sv='2019-12-12', ss='b', srt='sco', sp='rwdlac', se='2099-01-01T00:00:00Z', spr='https,http')\n\
         s = '\\n'.join(['{ACCOUNT}', f['sp'], f['ss'], f['srt'], '', f['se'], '', f['spr'], f['sv'], ''])\n\
         sig = base64.b64encode(hmac.new(base64.b64decode('{KEY}'), s.encode(), hashlib.sha256).digest()).decode()\n\
         print(urllib.parse.urlencode(dict(f, sig=sig)))\n"
    );
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub struct Azurite {
    /// The blob service, without the account: `http://127.0.0.1:<port>`.
    pub endpoint: String,
}

static AZURITE: OnceLock<Azurite> = OnceLock::new();

pub fn azurite() -> &'static Azurite {
    AZURITE.get_or_init(|| {
        let bin = super::installed("AZURITE_BLOB");
        let [port] = free_ports();
        start_server(
            "Azurite",
            &format!(
                "'{bin}' --blobHost 127.0.0.1 --blobPort {port} --inMemoryPersistence \
                 --silent --skipApiVersionCheck --disableProductStyleUrl"
            ),
            port,
        );
        Azurite {
            endpoint: format!("http://127.0.0.1:{port}"),
        }
    })
}

impl Cloud for Azurite {
    fn scheme(&self) -> &'static str {
        "az"
    }

    /// What a user sets for Azurite: the emulator switch and where it listens.
    fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AZURE_STORAGE_USE_EMULATOR".into(), "true".into()),
            ("AZURITE_BLOB_STORAGE_URL".into(), self.endpoint.clone()),
        ]
    }

    fn create_bucket(&self, container: &str) {
        let url = format!("{}/{ACCOUNT}/{container}?restype=container", self.endpoint);
        // object_store has no container creation: sign the request with its Azure authorizer.
        let key = object_store::azure::AzureAccessKey::try_new(KEY).unwrap();
        let cred = object_store::azure::AzureCredential::AccessKey(key);
        let mut req = http::Request::builder()
            .method("PUT")
            .uri(&url)
            .header("x-ms-version", "2023-11-03")
            .header("content-length", "0")
            .body(object_store::client::HttpRequestBody::empty())
            .unwrap();
        object_store::azure::AzureAuthorizer::new(&cred, ACCOUNT)
            .try_authorize(&mut req)
            .unwrap();
        let client = object_store::client::ReqwestConnector::default()
            .connect(&object_store::ClientOptions::new().with_allow_http(true))
            .unwrap();
        let status = block_on(async { client.execute(req).await.unwrap().status() });
        assert!(
            status.is_success(),
            "create container {container}: {status}"
        );
    }

    fn store(&self, container: &str) -> Arc<dyn ObjectStore> {
        Arc::new(
            MicrosoftAzureBuilder::new()
                .with_account(ACCOUNT)
                .with_access_key(KEY)
                .with_endpoint(format!("{}/{ACCOUNT}", self.endpoint))
                .with_allow_http(true)
                .with_container_name(container)
                .build()
                .unwrap(),
        )
    }
}
