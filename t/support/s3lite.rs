//! A small S3-compatible server on 127.0.0.1 for measuring requests: objects in memory, path
//! style, GET/HEAD/PUT (with `If-None-Match: *` and `If-Match`, decided as S3 does, ignored,
//! or compared as Ceph RGW 16 does: [`Conditions`])/DELETE and ListObjectsV2
//! (prefix, delimiter, start-after, continuation, max-keys), no authentication. It answers
//! thousands of requests a second, so what it measures is the client, not the server.
//!
//! Two ways to hold answers back: a fixed delay per request (a store far away: the benchmark),
//! or waves (every request waits until no new one has come for a quiet period, then all
//! waiting are answered together; the number of waves is the number of round trips a client
//! made one after the other).

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::wire::{read_request, Request};

pub struct S3Lite {
    pub endpoint: String,
    state: Arc<State>,
    acceptors: usize,
}

/// What the server counted since the last [`S3Lite::reset`].
#[derive(Debug, Clone, Default)]
pub struct Counts {
    pub requests: u64,
    pub gets: u64,
    pub lists: u64,
    pub puts: u64,
    pub heads: u64,
    pub deletes: u64,
    /// The most requests in flight at once.
    pub max_in_flight: u64,
    /// The sum over requests of the time each spent in the server (arrival to answer).
    pub busy: Duration,
    /// In waves mode: how many waves were answered, and each list request's wave.
    pub waves: u64,
    pub list_waves: Vec<u64>,
    /// In waves mode: how many requests each wave held.
    pub per_wave: BTreeMap<u64, u64>,
    /// Requests answered "503 SlowDown" (throttling mode).
    pub throttled: u64,
    /// GETs of part of an object (a `Range` header).
    pub ranged: u64,
    /// PUTs answered `409 ConditionalRequestConflict` (see [`Conditions::SometimesConflicts`]).
    pub conflicts: u64,
    /// PUTs with `If-Match` seen in [`Conditions::SometimesConflicts`] mode.
    pub if_match_puts: u64,
    /// Bytes of answers' bodies sent.
    pub body_bytes: u64,
}

#[derive(Default)]
struct Waves {
    quiet: Option<Duration>,
    last_arrival: Option<Instant>,
    waiting: u64,
    released: u64,
}

type BeforeGet = Box<dyn FnOnce(&mut BTreeMap<String, Arc<Vec<u8>>>) + Send>;

#[derive(Default)]
struct State {
    objects: Mutex<BTreeMap<String, Arc<Vec<u8>>>>,
    delay_us: AtomicU64,
    /// Above this many requests in flight, answer 503 SlowDown (0: never).
    throttle_above: AtomicU64,
    counts: Mutex<Counts>,
    in_flight: AtomicU64,
    /// Run once before the next GET of this object: another writer's work, done while a
    /// client's request is on its way.
    before_get: Mutex<Option<(String, BeforeGet)>>,
    waves: Mutex<Waves>,
    wave_done: Condvar,
    /// The one ETag every object is given (`Some("\"\"")`: an empty one), as some
    /// S3-compatible servers do; `None`: each object's own.
    fixed_etag: Mutex<Option<String>>,
    /// ETags that change with the content but are no MD5 (as Azure's, or S3's with SSE-KMS).
    opaque_etags: std::sync::atomic::AtomicBool,
    /// How conditional PUTs are decided (see [`Conditions`]).
    conditions: Mutex<Conditions>,
    /// Bytes a second each connection sends at most (0: as fast as it can): a slow link.
    bandwidth: AtomicU64,
    /// Set when the server is dropped: its threads end.
    stopped: std::sync::atomic::AtomicBool,
}

/// How the server decides `If-None-Match: *` and `If-Match` on PUT.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Conditions {
    /// As S3 does: atomically, under the objects' lock.
    #[default]
    Honoured,
    /// Not at all: every PUT is answered 200 and written (s3rver, rclone, JuiceFS, RGW's
    /// dbstore), so two racing creates both "win".
    Ignored,
    /// `If-Match` matches the ETag only without its quotes, as Ceph RGW 16 compares it.
    UnquotedIfMatch,
    /// Every PUT with `If-Match` is answered 412, whatever its ETag.
    RefusesIfMatch,
    /// Every second PUT with `If-Match` is answered `409 ConditionalRequestConflict`, as S3
    /// answers some conditional writes that race on one key; the others as S3 decides them.
    SometimesConflicts,
}

/// Connections served at once (each by its own thread).
const ACCEPTORS: usize = 2500;

/// Starts a server; objects are keyed `<bucket>/<key>`.
pub fn start() -> S3Lite {
    start_with(ACCEPTORS)
}

/// Starts a server that serves `acceptors` connections at once. Each thread costs memory maps
/// (stack, guard pages, signal stack), and a process has 65,530 at most: the threads end when
/// the server is dropped ([`S3Lite`]'s `Drop`), and a test that makes a few requests takes a
/// small one.
pub fn start_with(acceptors: usize) -> S3Lite {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    // Thousands of connections may come at once: a short queue would drop some for a second.
    unsafe { libc::listen(std::os::fd::AsRawFd::as_raw_fd(&listener), 4096) };
    let port = listener.local_addr().unwrap().port();
    let listener = Arc::new(listener);
    let state = Arc::new(State::default());
    // Threads wait for connections beforehand: spawning one per connection as thousands come
    // at once would make the last ones wait, and split a wave in two.
    for _ in 0..acceptors {
        let (s, l) = (state.clone(), listener.clone());
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                while let Ok((stream, _)) = l.accept() {
                    if s.stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    let _ = serve(stream, &s);
                }
            })
            .unwrap();
    }
    let w = state.clone();
    std::thread::spawn(move || release_waves(&w));
    S3Lite {
        endpoint: format!("http://127.0.0.1:{port}"),
        state,
        acceptors,
    }
}

impl Drop for S3Lite {
    /// Ends the server's threads: each acceptor is woken by a connection of its own, and sees
    /// that the server is stopped.
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
        let addr = self.endpoint.trim_start_matches("http://").to_string();
        let wakers: Vec<_> = (0..self.acceptors)
            .filter_map(|_| std::net::TcpStream::connect(&addr).ok())
            .collect();
        drop(wakers);
    }
}

impl S3Lite {
    /// A fresh test environment that reaches this server (its [`S3Lite::env`] set).
    pub fn test_env(&self) -> super::TestEnv {
        let mut t = super::TestEnv::new();
        for (k, v) in self.env() {
            t.set(&k, &v);
        }
        t
    }

    /// The environment the helper needs to reach this server (no signing: it checks none).
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("AWS_ENDPOINT_URL".into(), self.endpoint.clone()),
            ("AWS_ALLOW_HTTP".into(), "true".into()),
            ("AWS_SKIP_SIGNATURE".into(), "true".into()),
            ("AWS_REGION".into(), "us-east-1".into()),
        ]
    }

    pub fn put_files(&self, bucket: &str, prefix: &str, files: &BTreeMap<String, Vec<u8>>) {
        let mut objects = self.state.objects.lock().unwrap();
        for (k, v) in files {
            objects.insert(format!("{bucket}/{prefix}{k}"), Arc::new(v.clone()));
        }
    }

    pub fn get(&self, bucket: &str, key: &str) -> Option<Vec<u8>> {
        let objects = self.state.objects.lock().unwrap();
        objects.get(&format!("{bucket}/{key}")).map(|v| v.to_vec())
    }

    /// Every answer leaves this long after its request came (a store's round trip, the
    /// server's own work included; in waves mode, the delay comes before the wave's barrier).
    pub fn set_delay(&self, delay: Duration) {
        self.state
            .delay_us
            .store(delay.as_micros() as u64, Ordering::SeqCst);
    }

    /// Limits what each connection sends to `bytes_per_second` (`None`: no limit).
    pub fn set_bandwidth(&self, bytes_per_second: Option<u64>) {
        self.state
            .bandwidth
            .store(bytes_per_second.unwrap_or(0), Ordering::SeqCst);
    }

    /// Answers "503 SlowDown" to requests beyond `max` in flight, as S3 does when a client
    /// asks too much too fast (`None`: never).
    pub fn set_throttle(&self, max: Option<u64>) {
        self.state
            .throttle_above
            .store(max.unwrap_or(0), Ordering::SeqCst);
    }

    /// Answers in waves, each once no request has come for `quiet` (`None`: at once).
    pub fn set_waves(&self, quiet: Option<Duration>) {
        self.state.waves.lock().unwrap().quiet = quiet;
    }

    /// Holds the next GET of `bucket/key` back for 200 ms (requests sent beside it are
    /// answered meanwhile), then runs `change` on the objects before answering it: a race with
    /// another writer, made to happen.
    pub fn before_next_get(
        &self,
        bucket: &str,
        key: &str,
        change: impl FnOnce(&mut BTreeMap<String, Arc<Vec<u8>>>) + Send + 'static,
    ) {
        *self.state.before_get.lock().unwrap() =
            Some((format!("{bucket}/{key}"), Box::new(change)));
    }

    /// Gives every object the ETag `tag` in every answer (`None`: each object its own).
    pub fn set_fixed_etag(&self, tag: Option<&str>) {
        *self.state.fixed_etag.lock().unwrap() = tag.map(str::to_string);
    }

    /// Gives each object an ETag that changes with its content but is not its MD5, so that no
    /// listing proves what a file holds.
    pub fn set_opaque_etags(&self, opaque: bool) {
        self.state.opaque_etags.store(opaque, Ordering::Relaxed);
    }

    /// Decides conditional PUTs as `c` says from now on.
    pub fn set_conditions(&self, c: Conditions) {
        *self.state.conditions.lock().unwrap() = c;
    }

    /// The keys of `bucket` that start with `prefix`.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Vec<String> {
        let start = format!("{bucket}/{prefix}");
        let objects = self.state.objects.lock().unwrap();
        objects
            .keys()
            .filter(|k| k.starts_with(&start))
            .map(|k| k[bucket.len() + 1..].to_string())
            .collect()
    }

    /// Waits (10 s at most) until no request is in flight: one a client sent and gave up on
    /// before its answer (a read left unused) is counted for the command that sent it, not
    /// for the next.
    pub fn settle(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.state.in_flight.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    pub fn reset(&self) {
        *self.state.counts.lock().unwrap() = Counts::default();
        self.state.waves.lock().unwrap().released = 0;
    }

    pub fn counts(&self) -> Counts {
        let mut c = self.state.counts.lock().unwrap().clone();
        c.waves = self.state.waves.lock().unwrap().released;
        c
    }
}

/// In waves mode, answers everything waiting once the server has been quiet long enough.
fn release_waves(state: &State) {
    while !state.stopped.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(2));
        let mut w = state.waves.lock().unwrap();
        let (Some(quiet), Some(last)) = (w.quiet, w.last_arrival) else {
            continue;
        };
        if w.waiting > 0 && last.elapsed() >= quiet {
            w.released += 1;
            w.waiting = 0;
            state.wave_done.notify_all();
        }
    }
}

/// Holds a request back as the mode says; returns its wave (0 outside waves mode).
fn hold(state: &State) -> u64 {
    let delay = state.delay_us.load(Ordering::SeqCst);
    if delay > 0 {
        std::thread::sleep(Duration::from_micros(delay));
    }
    let mut w = state.waves.lock().unwrap();
    if w.quiet.is_none() {
        return 0;
    }
    w.last_arrival = Some(Instant::now());
    w.waiting += 1;
    let wave = w.released + 1;
    while w.released < wave {
        w = state.wave_done.wait(w).unwrap();
    }
    wave
}

fn serve(stream: TcpStream, state: &State) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut out = stream;
    while let Some(req) = read_request(&mut reader)? {
        let start = Instant::now();
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let above = state.throttle_above.load(Ordering::SeqCst);
        let throttled = above > 0 && now > above;
        // With a delay alone, the answer is made when the request comes and sent once the
        // delay has passed since: the server's own work (a page of a thousand keys) is inside
        // the delay, as a far store's is inside its round trip, not added to it.
        let waves = state.waves.lock().unwrap().quiet.is_some();
        let wave = if throttled || !waves { 0 } else { hold(state) };
        if req.method == "GET" && req.param("list-type").is_none() {
            let hook = {
                let mut armed = state.before_get.lock().unwrap();
                match armed.as_ref() {
                    Some((key, _)) if *key == req.path => armed.take(),
                    _ => None,
                }
            };
            if let Some((_, change)) = hook {
                std::thread::sleep(Duration::from_millis(200));
                change(&mut state.objects.lock().unwrap());
            }
        }
        let (status, headers, body) = if throttled {
            ("503 Slow Down", vec![], error_xml("SlowDown"))
        } else {
            answer(state, &req)
        };
        if !throttled && !waves {
            let delay = Duration::from_micros(state.delay_us.load(Ordering::SeqCst));
            std::thread::sleep(delay.saturating_sub(start.elapsed()));
        }
        let mut reply = format!("HTTP/1.1 {status}\r\nContent-Length: {}\r\n", body.len());
        for (k, v) in headers {
            reply.push_str(&format!("{k}: {v}\r\n"));
        }
        reply.push_str("\r\n");
        let mut bytes = reply.into_bytes();
        if req.method != "HEAD" {
            bytes.extend_from_slice(&body);
        }
        {
            let mut c = state.counts.lock().unwrap();
            c.requests += 1;
            if req.method != "HEAD" {
                c.body_bytes += body.len() as u64;
            }
            c.max_in_flight = c.max_in_flight.max(now);
            c.busy += start.elapsed();
            c.throttled += u64::from(throttled);
            if wave > 0 {
                *c.per_wave.entry(wave).or_default() += 1;
            }
            match req.method.as_str() {
                "GET" if req.param("list-type").is_some() => {
                    c.lists += 1;
                    c.list_waves.push(wave);
                }
                "GET" => {
                    c.gets += 1;
                    c.ranged += u64::from(req.header("range").is_some());
                }
                "PUT" => c.puts += 1,
                "HEAD" => c.heads += 1,
                "DELETE" => c.deletes += 1,
                "POST" if req.param("delete").is_some() => c.deletes += 1,
                _ => {}
            }
        }
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        send(&mut out, &bytes, state.bandwidth.load(Ordering::SeqCst))?;
    }
    Ok(())
}

/// Writes `bytes`, at most `bandwidth` bytes a second (0: at once).
fn send(out: &mut TcpStream, bytes: &[u8], bandwidth: u64) -> std::io::Result<()> {
    if bandwidth == 0 {
        return out.write_all(bytes);
    }
    let start = Instant::now();
    let chunk = (bandwidth / 50).max(1) as usize;
    for (i, piece) in bytes.chunks(chunk).enumerate() {
        out.write_all(piece)?;
        let due = Duration::from_secs_f64(((i + 1) * chunk) as f64 / bandwidth as f64);
        std::thread::sleep(due.saturating_sub(start.elapsed()));
    }
    Ok(())
}

type Answer = (&'static str, Vec<(String, String)>, Vec<u8>);

fn answer(state: &State, req: &Request) -> Answer {
    if req.method == "GET" && req.param("list-type").is_some() {
        return list(state, req);
    }
    let mut objects = state.objects.lock().unwrap();
    let current = objects.get(&req.path).cloned();
    match req.method.as_str() {
        "GET" | "HEAD" => match current {
            Some(data) => get(state, req, &data),
            None => not_found(),
        },
        "PUT" => {
            let current_tag = current.as_ref().map(|d| etag(state, d));
            let conditions = *state.conditions.lock().unwrap();
            let unquoted = |t: &str| t.trim_matches('"').to_string();
            if conditions == Conditions::SometimesConflicts && req.header("if-match").is_some() {
                let mut c = state.counts.lock().unwrap();
                c.if_match_puts += 1;
                if c.if_match_puts % 2 == 1 {
                    c.conflicts += 1;
                    let body = error_xml("ConditionalRequestConflict");
                    return ("409 Conflict", vec![], body);
                }
            }
            let refused = match (req.header("if-none-match"), req.header("if-match")) {
                _ if conditions == Conditions::Ignored => false,
                (Some("*"), _) => current.is_some(),
                (_, Some(_)) if conditions == Conditions::RefusesIfMatch => true,
                (_, Some(want)) if conditions == Conditions::UnquotedIfMatch => {
                    current_tag.as_deref().map(unquoted).as_deref() != Some(want)
                }
                (_, Some(want)) => current_tag.as_deref() != Some(want),
                _ => false,
            };
            if refused {
                return (
                    "412 Precondition Failed",
                    vec![],
                    error_xml("PreconditionFailed"),
                );
            }
            let data = Arc::new(req.body.clone());
            let headers = vec![("ETag".to_string(), etag(state, &data))];
            objects.insert(req.path.clone(), data);
            ("200 OK", headers, vec![])
        }
        "DELETE" => {
            objects.remove(&req.path);
            ("204 No Content", vec![], vec![])
        }
        // DeleteObjects (object_store deletes through it): `<Key>` after `<Key>` of the body.
        "POST" if req.param("delete").is_some() => {
            let body = String::from_utf8_lossy(&req.body).into_owned();
            let mut deleted = String::new();
            for part in body.split("<Key>").skip(1) {
                let Some((key, _)) = part.split_once("</Key>") else {
                    continue;
                };
                let key = key
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&amp;", "&");
                objects.remove(&format!("{}/{key}", req.path.trim_end_matches('/')));
                deleted.push_str(&format!(
                    "<Deleted><Key>{}</Key></Deleted>",
                    xml_escape(&key)
                ));
            }
            let xml = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><DeleteResult>{deleted}</DeleteResult>"
            );
            ("200 OK", vec![], xml.into_bytes())
        }
        _ => ("405 Method Not Allowed", vec![], vec![]),
    }
}

/// A GET or HEAD of an object: whole, or the `Range` asked for (206), and 412 where an
/// `If-Match` names another ETag.
fn get(state: &State, req: &Request, data: &[u8]) -> Answer {
    let mut headers = meta_headers(state, data);
    if req
        .header("if-match")
        .is_some_and(|want| want != etag(state, data))
    {
        return (
            "412 Precondition Failed",
            vec![],
            error_xml("PreconditionFailed"),
        );
    }
    match super::wire::range(req, data.len()) {
        Ok(None) => ("200 OK", headers, data.to_vec()),
        Ok(Some(r)) => {
            let total = data.len();
            headers.push((
                "Content-Range".into(),
                format!("bytes {}-{}/{total}", r.start, r.end - 1),
            ));
            ("206 Partial Content", headers, data[r].to_vec())
        }
        Err(()) => (
            "416 Requested Range Not Satisfiable",
            vec![],
            error_xml("InvalidRange"),
        ),
    }
}

fn not_found() -> Answer {
    ("404 Not Found", vec![], error_xml("NoSuchKey"))
}

fn error_xml(code: &str) -> Vec<u8> {
    format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{code}</Message></Error>").into_bytes()
}

fn own_etag(state: &State, data: &[u8]) -> String {
    if state.opaque_etags.load(Ordering::Relaxed) {
        // FNV-1a and the length: content-addressed, but no MD5.
        let mut h: u64 = 0xcbf29ce484222325;
        for b in data {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100000001b3);
        }
        return format!("\"{h:016x}{:08x}\"", data.len());
    }
    // The content's MD5, as S3 gives for an object uploaded in one part.
    use md5::Digest;
    let hex: String = md5::Md5::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("\"{hex}\"")
}

fn etag(state: &State, data: &[u8]) -> String {
    match &*state.fixed_etag.lock().unwrap() {
        Some(tag) => tag.clone(),
        None => own_etag(state, data),
    }
}

fn meta_headers(state: &State, data: &[u8]) -> Vec<(String, String)> {
    vec![
        ("ETag".into(), etag(state, data)),
        (
            "Last-Modified".into(),
            "Thu, 01 Jan 2026 00:00:00 GMT".into(),
        ),
    ]
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// ListObjectsV2 of the bucket named by the path.
fn list(state: &State, req: &Request) -> Answer {
    let bucket = req.path.trim_end_matches('/');
    let prefix = req.param("prefix").unwrap_or("");
    let delimiter = req.param("delimiter").filter(|d| !d.is_empty());
    let max: usize = req
        .param("max-keys")
        .and_then(|m| m.parse().ok())
        .unwrap_or(1000)
        .min(1000);
    let after = req
        .param("continuation-token")
        .or(req.param("start-after"))
        .unwrap_or("")
        .to_string();
    let full_prefix = format!("{bucket}/{prefix}");
    let objects = state.objects.lock().unwrap();
    let mut contents = String::new();
    let mut prefixes = String::new();
    let mut last = String::new();
    let mut n = 0;
    let mut truncated = false;
    let start = format!("{bucket}/{after}").max(full_prefix.clone());
    let bucket_slash = format!("{bucket}/");
    for (key, data) in objects.range(start..) {
        if !key.starts_with(&full_prefix) {
            break;
        }
        let rel = &key[bucket_slash.len()..];
        if rel <= after.as_str() {
            continue;
        }
        let item = match delimiter.and_then(|d| rel[prefix.len()..].find(d).map(|i| (d, i))) {
            Some((d, i)) => {
                let p = &rel[..prefix.len() + i + d.len()];
                if p == last || after.starts_with(p) {
                    continue;
                }
                (p.to_string(), true)
            }
            None => (rel.to_string(), false),
        };
        if n == max {
            truncated = true;
            break;
        }
        n += 1;
        if item.1 {
            prefixes.push_str(&format!(
                "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                xml_escape(&item.0)
            ));
        } else {
            contents.push_str(&format!(
                "<Contents><Key>{}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
                xml_escape(&item.0),
                xml_escape(&etag(state, data)),
                data.len()
            ));
        }
        last = item.0;
    }
    let token = if truncated {
        format!(
            "<NextContinuationToken>{}</NextContinuationToken>",
            xml_escape(&last)
        )
    } else {
        String::new()
    };
    let body = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>{bucket}</Name><Prefix>{}</Prefix><KeyCount>{n}</KeyCount><MaxKeys>{max}</MaxKeys><IsTruncated>{truncated}</IsTruncated>{contents}{prefixes}{token}</ListBucketResult>",
        xml_escape(prefix)
    );
    ("200 OK", vec![], body.into_bytes())
}
