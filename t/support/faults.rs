//! A fault-injecting HTTP proxy on 127.0.0.1 in front of the S3-compatible server: it answers
//! some requests with 503, resets some connections before forwarding, delays some past the
//! client's timeout, and forwards some writes but drops their answers (the write landed; the
//! client cannot know).
//!
//! Which request gets which fault is decided by [`plan`], a pure function of the request (method,
//! path without the bucket, query) and of how many times that same request came before: not of
//! a count shared by all connections, whose order concurrent connections change from run to run.
//! So a run injects the same faults on the same requests each time, however its connections
//! interleave. No request is failed more than twice in a row, so the client's retries (four)
//! always get through.

use std::collections::HashMap;
use std::io::{BufReader, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::wire::{read_request, read_response, Request};

/// What the plan does to one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Forwarded, and its answer returned.
    None,
    /// Answered 503 without forwarding.
    Unavailable,
    /// The connection is closed without forwarding.
    Reset,
    /// Held longer than the client's timeout (the tests set 1 s), then closed; a write is
    /// forwarded first. (The client does not retry a conditional write that timed out, and the
    /// helper reports one that did not land as failed: a write stalled before the store would
    /// fail the push, by design.)
    Stall,
    /// A write forwarded to the store whose answer never reaches the client.
    LoseAnswer,
}

/// The most times in a row one request is failed.
pub const MAX_IN_A_ROW: usize = 2;

/// The fault for the `occurrence`-th time (from 0) the proxy sees `request` (`METHOD /path?query`,
/// the bucket left out), `in_a_row` of the times just before having been failed: 11% answered
/// 503, 7.7% reset, 3.4% stalled, and a third of the writes left forwarded lose their answer.
pub fn plan(request: &str, occurrence: usize, in_a_row: usize) -> Fault {
    if in_a_row >= MAX_IN_A_ROW {
        return Fault::None;
    }
    let h = mix(fnv1a(format!("{request}#{occurrence}").as_bytes()));
    let is_write = request.starts_with("PUT ") || request.starts_with("DELETE ");
    match h % 1000 {
        0..=110 => Fault::Unavailable,
        111..=187 => Fault::Reset,
        188..=221 => Fault::Stall,
        _ if is_write && (h >> 32).is_multiple_of(3) => Fault::LoseAnswer,
        _ => Fault::None,
    }
}

/// FNV-1a, 64 bits: a hash that is the same on every platform and Rust release.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// SplitMix64's finalizer, so that every bit of the hash depends on every byte.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Each request's history: how many times it came, and how many of the last were failed.
#[derive(Default)]
struct Seen(Mutex<HashMap<String, (usize, usize)>>);

impl Seen {
    /// The request's occurrence number (from 0) and its fault.
    fn decide(&self, request: &str) -> (usize, Fault) {
        let mut seen = self.0.lock().unwrap();
        let (occurrence, in_a_row) = seen.entry(request.to_string()).or_default();
        let fault = plan(request, *occurrence, *in_a_row);
        *in_a_row = if fault == Fault::None {
            0
        } else {
            *in_a_row + 1
        };
        *occurrence += 1;
        (*occurrence - 1, fault)
    }
}

#[derive(Default)]
pub struct Counters {
    pub requests: AtomicUsize,
    pub unavailable: AtomicUsize,
    pub resets: AtomicUsize,
    pub delayed: AtomicUsize,
    pub lost_answers: AtomicUsize,
    /// Requests answered 403 because their target holds the proxy's `deny` text.
    pub denied: AtomicUsize,
    /// Every fault the plan injected, as `<request> #<occurrence>: <fault>`, in arrival order.
    pub injected: Mutex<Vec<String>>,
}

impl Counters {
    /// The injected faults, sorted: the same list on every run of the same test.
    pub fn injected_sorted(&self) -> Vec<String> {
        let mut v = self.injected.lock().unwrap().clone();
        v.sort();
        v
    }
}

pub struct FaultProxy {
    pub endpoint: String,
    pub counters: Arc<Counters>,
    /// When set, every write is answered 503: a store that keeps failing.
    pub fail_all_writes: Arc<AtomicBool>,
}

/// What a proxy does beside forwarding.
#[derive(Clone, Default)]
struct Mode {
    /// No planned faults: every request is forwarded (but those `deny` names).
    plain: bool,
    /// Requests whose target holds this are answered 403 AccessDenied, as S3 does.
    deny: Option<String>,
    /// How long every request waits before it is forwarded: a store far away.
    delay: Duration,
}

/// Starts a proxy to `upstream` (`http://host:port`).
pub fn start(upstream: &str) -> FaultProxy {
    start_with(upstream, Mode::default())
}

/// Starts a proxy to `upstream` that injects no fault but answers every request whose target
/// holds `deny` with 403 AccessDenied.
pub fn start_denying(upstream: &str, deny: &str) -> FaultProxy {
    let mode = Mode {
        plain: true,
        deny: Some(deny.to_string()),
        ..Mode::default()
    };
    start_with(upstream, mode)
}

/// Starts a proxy to `upstream` that injects no fault but holds every request `delay` before
/// forwarding it, as a store a round trip of that long away would.
pub fn start_slow(upstream: &str, delay: Duration) -> FaultProxy {
    let mode = Mode {
        plain: true,
        delay,
        ..Mode::default()
    };
    start_with(upstream, mode)
}

fn start_with(upstream: &str, mode: Mode) -> FaultProxy {
    let upstream = upstream.trim_start_matches("http://").to_string();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let counters = Arc::new(Counters::default());
    let fail_all_writes = Arc::new(AtomicBool::new(false));
    let (c, f) = (counters.clone(), fail_all_writes.clone());
    let seen = Arc::new(Seen::default());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (c, f, s, up) = (c.clone(), f.clone(), seen.clone(), upstream.clone());
            let mode = mode.clone();
            // A connection ends with an error whenever a fault closes it: nothing to report.
            std::thread::spawn(move || serve(client, &up, &c, &f, &s, &mode).ok());
        }
    });
    FaultProxy {
        endpoint: format!("http://127.0.0.1:{port}"),
        counters,
        fail_all_writes,
    }
}

/// What the plan keys on: the method and the target without its bucket, whose name changes
/// from run to run (it holds the test process's ID).
fn key(req: &Request) -> String {
    let target = req.target.trim_start_matches('/');
    let rest = target.find(['/', '?']).map_or("", |i| &target[i..]);
    format!("{} {rest}", req.method)
}

/// Forwards one request on a fresh upstream connection and returns the whole response.
pub fn forward(upstream: &str, req: &Request) -> std::io::Result<Vec<u8>> {
    let mut up = TcpStream::connect(upstream)?;
    up.write_all(&req.raw)?;
    read_response(&mut BufReader::new(up), &req.method)
}

fn serve(
    client: TcpStream,
    upstream: &str,
    c: &Counters,
    fail_writes: &AtomicBool,
    seen: &Seen,
    mode: &Mode,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut out = client;
    while let Some(req) = read_request(&mut reader)? {
        c.requests.fetch_add(1, Ordering::SeqCst);
        let is_write = req.method == "PUT" || req.method == "DELETE";
        let unavailable = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
        if is_write && fail_writes.load(Ordering::SeqCst) {
            c.unavailable.fetch_add(1, Ordering::SeqCst);
            out.write_all(unavailable.as_bytes())?;
            continue;
        }
        let count = |n: &AtomicUsize| n.fetch_add(1, Ordering::SeqCst);
        if mode
            .deny
            .as_ref()
            .is_some_and(|d| req.target.contains(d.as_str()))
        {
            count(&c.denied);
            let body = "<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code>\
                        <Message>Access Denied</Message></Error>";
            let head = format!(
                "HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            out.write_all(head.as_bytes())?;
            out.write_all(body.as_bytes())?;
            continue;
        }
        if mode.plain {
            std::thread::sleep(mode.delay);
            out.write_all(&forward(upstream, &req)?)?;
            continue;
        }
        let key = key(&req);
        let (occurrence, fault) = seen.decide(&key);
        if fault != Fault::None {
            let line = format!("{key} #{occurrence}: {fault:?}");
            c.injected.lock().unwrap().push(line);
        }
        match fault {
            Fault::None => out.write_all(&forward(upstream, &req)?)?,
            Fault::Unavailable => {
                count(&c.unavailable);
                out.write_all(unavailable.as_bytes())?;
            }
            Fault::Reset => {
                count(&c.resets);
                return out.shutdown(Shutdown::Both);
            }
            Fault::Stall => {
                count(&c.delayed);
                if is_write {
                    // The write lands, and the client gives up waiting for its answer.
                    forward(upstream, &req)?;
                }
                std::thread::sleep(Duration::from_millis(1500));
                return out.shutdown(Shutdown::Both);
            }
            Fault::LoseAnswer => {
                // The write reaches the store; its answer never reaches the client.
                count(&c.lost_answers);
                forward(upstream, &req)?;
                return out.shutdown(Shutdown::Both);
            }
        }
    }
    Ok(())
}

/// A short fingerprint of a list of injected faults, to compare runs at a glance.
pub fn digest(injected: &[String]) -> u64 {
    mix(fnv1a(injected.join("\n").as_bytes()))
}
