//! Throttling is told by the store's answer, never by digits in a URL or a version's ID: a 403
//! is one request, and an endpoint where nothing listens fails at once.

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::json;

use crate::support::http::{closed_port_at, ClosedPort};
use crate::support::moto::s3_endpoint;
use crate::support::{faults, text, wire, LakeBuilder, TestEnv, Where};

/// A version whose ID holds "503" where the old check looked for it in the whole message.
const DIGITS_ID: &str = "50300000-0000-7000-8000-000000000001";

#[test]
fn a_403_on_a_version_whose_id_starts_503_is_one_request() {
    let mut t = TestEnv::new();
    let mut l = LakeBuilder::new();
    l.record(
        DIGITS_ID,
        serde_json::to_vec(&json!({"parents": [], "message": "m"})).unwrap(),
    );
    l.set_ref("refs/heads/main", DIGITS_ID).refs_json();
    let lake = t.lake_at(Where::S3, "lake", &l);
    let proxy = faults::start_denying(&s3_endpoint(&t), &format!("versions/{DIGITS_ID}/"));
    t.set("AWS_ENDPOINT_URL", &proxy.endpoint);
    let out = t.git(".", &["ls-remote", &lake.url]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("access denied (403"), "{err}");
    let denied = proxy.counters.denied.load(Ordering::SeqCst);
    assert_eq!(denied, 1, "tried {denied} times: {err}");
}

/// Ports whose numbers hold 503 or 429.
const THROTTLING_DIGITS: [u16; 10] = [
    15030, 25030, 35030, 45030, 15031, 14290, 24290, 34290, 50300, 42900,
];

/// A free port on 127.0.0.1 whose number holds 503 or 429, bound (or `None` if all are taken).
fn port_with_throttling_digits() -> Option<TcpListener> {
    THROTTLING_DIGITS
        .iter()
        .find_map(|p| TcpListener::bind(("127.0.0.1", *p)).ok())
}

/// The same, bound but never listening: a connection is refused, and the other test, which
/// runs beside this one, cannot take the port meanwhile.
fn closed_port_with_throttling_digits() -> Option<ClosedPort> {
    THROTTLING_DIGITS.iter().find_map(|p| closed_port_at(*p))
}

/// An S3 endpoint that answers every request 403 AccessDenied; counts them.
fn serve_403(listener: TcpListener) -> Arc<AtomicUsize> {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let c = c.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                while let Ok(Some(_)) = wire::read_request(&mut reader) {
                    c.fetch_add(1, Ordering::SeqCst);
                    let body = "<Error><Code>AccessDenied</Code></Error>";
                    let head = format!(
                        "HTTP/1.1 403 Forbidden\r\nContent-Length: {}\r\n\r\n",
                        body.len()
                    );
                    if out.write_all(head.as_bytes()).is_err()
                        || out.write_all(body.as_bytes()).is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    count
}

fn s3_env_at(t: &mut TestEnv, endpoint: &str) {
    t.set("AWS_ENDPOINT_URL", endpoint)
        .set("AWS_ALLOW_HTTP", "true")
        .set("AWS_ACCESS_KEY_ID", "test")
        .set("AWS_SECRET_ACCESS_KEY", "test")
        .set("AWS_REGION", "us-east-1");
}

#[test]
fn an_endpoint_on_a_port_holding_503_that_answers_403_is_not_retried() {
    let mut t = TestEnv::new();
    let listener = port_with_throttling_digits().expect("a free port holding 503 or 429");
    let port = listener.local_addr().unwrap().port();
    let count = serve_403(listener);
    s3_env_at(&mut t, &format!("http://127.0.0.1:{port}"));
    let out = t.git(".", &["ls-remote", "fdl::s3://bucket/lake"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("access denied (403"), "{err}");
    let n = count.load(Ordering::SeqCst);
    // Each file read when the lake is opened, once (31 requests when 403s were retried).
    assert!(n <= 10, "{n} requests: {err}");
}

#[test]
fn nothing_listening_on_a_port_holding_503_fails_in_seconds() {
    let mut t = TestEnv::new();
    let closed = closed_port_with_throttling_digits().expect("a free port holding 503 or 429");
    let port = closed.port();
    s3_env_at(&mut t, &format!("http://127.0.0.1:{port}"));
    // The trace has a line for each request the helper makes, each of its own retries too.
    t.set("GIT_REMOTE_FDL_DEBUG", "1");
    let out = t.git(".", &["ls-remote", "fdl::s3://bucket/lake"]);
    let err = text(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
    // Each file read when the lake is opened, once: the old check took the 503 in the port
    // for throttling and tried each 8 more times (the HTTP client's own retries aside).
    let tried = err.lines().filter(|l| l.contains("] store: ")).count();
    assert!(tried <= 10, "{tried} requests: {err}");
}
