//! Listeners on 127.0.0.1 that remember what reached them: a proxy that forwards every request
//! unchanged and keeps its line and `Authorization` header (which key, region and service signed
//! it), and a fixed-answer server that keeps each request line (an instance-metadata address
//! that must, or must not, be asked).

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::faults::forward;
use super::wire::read_request;

/// One request as it went through.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `METHOD /target`.
    pub line: String,
    pub authorization: Option<String>,
}

impl Seen {
    /// The access key ID and the credential scope (`<date>/<region>/<service>/aws4_request`) of
    /// a SigV4 `Authorization` header.
    pub fn signed_by(&self) -> Option<(String, String)> {
        let a = self.authorization.as_deref()?;
        let cred = a.split("Credential=").nth(1)?.split(',').next()?;
        let (key, scope) = cred.split_once('/')?;
        Some((key.to_string(), scope.to_string()))
    }

    /// The region of the signature's scope.
    pub fn region(&self) -> Option<String> {
        let (_, scope) = self.signed_by()?;
        scope.split('/').nth(1).map(str::to_string)
    }

    /// The service of the signature's scope (`s3`, `sts`).
    pub fn service(&self) -> Option<String> {
        let (_, scope) = self.signed_by()?;
        scope.split('/').nth(2).map(str::to_string)
    }
}

pub struct Recorder {
    pub endpoint: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    /// Connections accepted, whether or not a whole request came.
    pub connections: Arc<AtomicUsize>,
}

impl Recorder {
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// The connections made before this call, all of them counted: connections are accepted
    /// in the order they came, so once a request of its own is answered, every earlier
    /// connection is counted. Its own is then taken off again. (A `fixed` server only.)
    pub fn connections_settled(&self) -> usize {
        let marker = "GET /connections-settled";
        let mut own = TcpStream::connect(self.endpoint.trim_start_matches("http://")).unwrap();
        write!(own, "{marker} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut reader = BufReader::new(own.try_clone().unwrap());
        let mut status = String::new();
        std::io::BufRead::read_line(&mut reader, &mut status).unwrap();
        assert!(status.starts_with("HTTP/1.1 "), "{status:?}");
        drop((own, reader));
        self.seen.lock().unwrap().retain(|s| s.line != marker);
        self.connections.fetch_sub(1, Ordering::SeqCst) - 1
    }
}

/// A proxy to `upstream` (`http://host:port`) that records every request.
pub fn proxy(upstream: &str) -> Recorder {
    let upstream = upstream.trim_start_matches("http://").to_string();
    listen(move |client, seen| relay(client, &upstream, seen))
}

/// A server on 127.0.0.1 that counts connections and hands each to `handle` on a thread.
fn listen<F>(handle: F) -> Recorder
where
    F: Fn(TcpStream, &Mutex<Vec<Seen>>) -> std::io::Result<()> + Clone + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let connections = Arc::new(AtomicUsize::new(0));
    let (s, n) = (seen.clone(), connections.clone());
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            n.fetch_add(1, Ordering::SeqCst);
            let (s, handle) = (s.clone(), handle.clone());
            std::thread::spawn(move || handle(client, &s).ok());
        }
    });
    Recorder {
        endpoint: format!("http://127.0.0.1:{port}"),
        seen,
        connections,
    }
}

fn relay(client: TcpStream, upstream: &str, seen: &Mutex<Vec<Seen>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut out = client;
    while let Some(req) = read_request(&mut reader)? {
        let authorization = req.header("authorization").map(str::to_string);
        seen.lock().unwrap().push(Seen {
            line: format!("{} {}", req.method, req.target),
            authorization,
        });
        out.write_all(&forward(upstream, &req)?)?;
    }
    Ok(())
}

/// A server that answers every request with `status` and an empty body, and records each
/// request's line.
pub fn fixed(status: &'static str) -> Recorder {
    listen(move |client, seen| answer(client, status, seen))
}

fn answer(client: TcpStream, status: &str, seen: &Mutex<Vec<Seen>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut out = client;
    while let Some(req) = read_request(&mut reader)? {
        seen.lock().unwrap().push(Seen {
            line: format!("{} {}", req.method, req.target),
            authorization: None,
        });
        write!(out, "HTTP/1.1 {status}\r\nContent-Length: 0\r\n\r\n")?;
    }
    Ok(())
}
