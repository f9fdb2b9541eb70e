//! A fault-injecting HTTP proxy on 127.0.0.1 in front of the S3-compatible server: it answers
//! some requests with 503, resets some connections before forwarding, delays some past the
//! client's timeout, and forwards some writes but drops their answers (the write landed; the
//! client cannot know). Faults follow a fixed plan over the request count, so runs repeat.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(Default)]
pub struct Counters {
    pub requests: AtomicUsize,
    pub unavailable: AtomicUsize,
    pub resets: AtomicUsize,
    pub delayed: AtomicUsize,
    pub lost_answers: AtomicUsize,
}

pub struct FaultProxy {
    pub endpoint: String,
    pub counters: Arc<Counters>,
    /// When set, every write is answered 503: a store that keeps failing.
    pub fail_all_writes: Arc<AtomicBool>,
}

/// Starts a proxy to `upstream` (`http://host:port`).
pub fn start(upstream: &str) -> FaultProxy {
    let upstream = upstream.trim_start_matches("http://").to_string();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let counters = Arc::new(Counters::default());
    let fail_all_writes = Arc::new(AtomicBool::new(false));
    let (c, f) = (counters.clone(), fail_all_writes.clone());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let (c, f, up) = (c.clone(), f.clone(), upstream.clone());
            std::thread::spawn(move || {
                let _ = serve(client, &up, &c, &f);
            });
        }
    });
    FaultProxy {
        endpoint: format!("http://127.0.0.1:{port}"),
        counters,
        fail_all_writes,
    }
}

struct Request {
    method: String,
    raw: Vec<u8>,
}

fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<Request>> {
    let mut head = Vec::new();
    let mut content_length = 0usize;
    let mut method = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None);
        }
        if method.is_empty() {
            method = line.split_whitespace().next().unwrap_or("").to_string();
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        head.extend_from_slice(line.as_bytes());
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; content_length];
    reader.read_exact(&mut body)?;
    head.extend_from_slice(&body);
    Ok(Some(Request { method, raw: head }))
}

/// Forwards one request on a fresh upstream connection and returns the whole response.
fn forward(upstream: &str, req: &Request) -> std::io::Result<Vec<u8>> {
    let mut up = TcpStream::connect(upstream)?;
    up.write_all(&req.raw)?;
    let mut reader = BufReader::new(up);
    let mut response = Vec::new();
    let mut content_length = 0usize;
    let mut status = 0u32;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        if status == 0 {
            status = line
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            content_length = v.trim().parse().unwrap_or(0);
        }
        response.extend_from_slice(line.as_bytes());
        if line == "\r\n" {
            break;
        }
    }
    if req.method != "HEAD" && status != 204 && status != 304 {
        let mut body = vec![0u8; content_length];
        reader.read_exact(&mut body)?;
        response.extend_from_slice(&body);
    }
    Ok(response)
}

fn serve(
    client: TcpStream,
    upstream: &str,
    c: &Counters,
    fail_writes: &AtomicBool,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut out = client;
    while let Some(req) = read_request(&mut reader)? {
        let n = c.requests.fetch_add(1, Ordering::SeqCst);
        let is_write = req.method == "PUT" || req.method == "DELETE";
        let unavailable = "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";
        if is_write && fail_writes.load(Ordering::SeqCst) {
            c.unavailable.fetch_add(1, Ordering::SeqCst);
            out.write_all(unavailable.as_bytes())?;
            continue;
        }
        if n % 9 == 4 {
            c.unavailable.fetch_add(1, Ordering::SeqCst);
            out.write_all(unavailable.as_bytes())?;
            continue;
        }
        if n % 13 == 6 {
            c.resets.fetch_add(1, Ordering::SeqCst);
            let _ = out.shutdown(Shutdown::Both);
            return Ok(());
        }
        if n % 29 == 11 {
            // Longer than the client's timeout (the tests set 1 s).
            c.delayed.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1500));
            let _ = out.shutdown(Shutdown::Both);
            return Ok(());
        }
        let response = forward(upstream, &req)?;
        if is_write && n % 3 == 0 {
            // The write reached the store; its answer never reaches the client.
            c.lost_answers.fetch_add(1, Ordering::SeqCst);
            let _ = out.shutdown(Shutdown::Both);
            return Ok(());
        }
        out.write_all(&response)?;
    }
    Ok(())
}
