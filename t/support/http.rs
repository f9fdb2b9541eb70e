//! A plain static HTTP file server on 127.0.0.1, like a web server in front of a lake: GET and
//! HEAD of files (a `Range` of one answered 206, as web servers do), 404 otherwise, and no listing. It serves one folder until the test ends.
//! Also a server that answers every request alike, and a port where nothing listens.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::wire::read_request;

pub struct HttpServer {
    pub url: String,
    /// Microseconds each answer waits.
    delay: Arc<AtomicU64>,
    /// Bytes of answers' bodies sent so far.
    sent: Arc<AtomicU64>,
}

impl HttpServer {
    /// How many bytes of answers' bodies the server has sent.
    pub fn bytes_sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Sends each answer from now on `delay` after its request came.
    #[allow(dead_code)] // The benchmarks' (benches/roads.rs), which share this support.
    pub fn set_delay(&self, delay: Duration) {
        self.delay
            .store(delay.as_micros() as u64, Ordering::Relaxed);
    }
}

/// Serves `root` on a free port; returns its base URL (ending in `/`).
pub fn serve(root: &Path) -> HttpServer {
    serve_with_delay(root, Duration::ZERO)
}

/// [`serve`], each answer sent `delay` after its request came (a web server far away).
pub fn serve_with_delay(root: &Path, delay: Duration) -> HttpServer {
    serve_as(root, delay, Mode::Honest)
}

/// [`serve`] giving weak ETags (`W/"..."`, as a CDN that compressed the answer does), which an
/// `If-Match` never matches (HTTP compares it strongly): such a request is answered 412.
pub fn serve_with_weak_etags(root: &Path) -> HttpServer {
    serve_as(root, Duration::ZERO, Mode::Weak)
}

/// How a hostile server inflates its answers to a range of a pack (`*.pack`); every other
/// file, and a pack asked for whole, is served honestly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Inflate {
    /// Each range answered as part of a file of 100 GiB (`Content-Range: bytes a-b/107374182400`),
    /// zeros past the real file's end.
    Total,
    /// Each range answered with its true `Content-Range` but a `Content-Length` of 100 GiB, the
    /// body going on in zeros past the range until the client hangs up.
    Length,
}

/// The 100 GiB an inflated answer claims.
const INFLATED: u64 = 100 << 30;
/// The most an inflating server sends in all before it hangs up on every request: a helper
/// that believed it stops at this instead of filling the disk (and its test fails by count).
const INFLATED_CAP: u64 = 256 << 20;

/// [`serve`] by a server that inflates its answers to a pack's ranges as `how` says.
pub fn serve_inflating(root: &Path, how: Inflate) -> HttpServer {
    serve_as(root, Duration::ZERO, Mode::Inflate(how))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Honest,
    /// Weak ETags, which an `If-Match` never matches.
    Weak,
    Inflate(Inflate),
}

fn serve_as(root: &Path, delay: Duration, mode: Mode) -> HttpServer {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let root = root.to_path_buf();
    let delay = Arc::new(AtomicU64::new(delay.as_micros() as u64));
    let sent = Arc::new(AtomicU64::new(0));
    let (delays, sent_by_all) = (delay.clone(), sent.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (root, delay, sent) = (root.clone(), delays.clone(), sent_by_all.clone());
            std::thread::spawn(move || {
                let _ = handle(stream, &root, &delay, mode, &sent);
            });
        }
    });
    HttpServer {
        url: format!("http://127.0.0.1:{port}/"),
        delay,
        sent,
    }
}

/// An inflated answer to a range of a pack, written to `stream`; `false` where `req` asks for
/// no range (then the honest answer is given).
fn inflated(
    stream: &mut TcpStream,
    req: &super::wire::Request,
    body: &[u8],
    how: Inflate,
    sent: &AtomicU64,
) -> std::io::Result<bool> {
    let claimed = match how {
        Inflate::Total => INFLATED as usize,
        Inflate::Length => body.len(),
    };
    let Ok(Some(r)) = super::wire::range(req, claimed) else {
        return Ok(false);
    };
    let real = &body[r.start.min(body.len())..r.end.min(body.len())];
    let length = match how {
        Inflate::Total => (r.end - r.start) as u64,
        Inflate::Length => INFLATED,
    };
    write!(
        stream,
        "HTTP/1.1 206 Partial Content\r\nContent-Length: {length}\r\nContent-Range: bytes {}-{}/{claimed}\r\nETag: \"{}\"\r\n\r\n",
        r.start,
        r.end - 1,
        body.len()
    )?;
    stream.write_all(real)?;
    sent.fetch_add(real.len() as u64, Ordering::Relaxed);
    let zeros = vec![0u8; 64 << 10];
    let mut left = length - real.len() as u64;
    while left > 0 {
        if sent.load(Ordering::Relaxed) > INFLATED_CAP {
            return Err(std::io::ErrorKind::ConnectionAborted.into());
        }
        let n = left.min(zeros.len() as u64) as usize;
        stream.write_all(&zeros[..n])?;
        sent.fetch_add(n as u64, Ordering::Relaxed);
        left -= n as u64;
    }
    Ok(true)
}

fn handle(
    stream: TcpStream,
    root: &Path,
    delay: &AtomicU64,
    mode: Mode,
    sent: &AtomicU64,
) -> std::io::Result<()> {
    let weak = mode == Mode::Weak;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut stream = stream;
    // Each answer goes out in one write, as a web server sends it: written in pieces, Nagle's
    // algorithm would hold the last piece for the client's delayed ACK (40 ms on Linux).
    stream.set_nodelay(true)?;
    while let Some(req) = read_request(&mut reader)? {
        let mut out = Vec::new();
        std::thread::sleep(Duration::from_micros(delay.load(Ordering::Relaxed)));
        let method = req.method.as_str();
        // The path as sent, not decoded: a file's name is what the client asked for.
        let path = req.target.split('?').next().unwrap_or("/");
        let safe = !path.split('/').any(|s| s == "..");
        let file = root.join(path.trim_start_matches('/'));
        let body = if safe && file.is_file() {
            std::fs::read(&file).ok()
        } else {
            None
        };
        if let (Mode::Inflate(how), Some(body)) = (mode, &body) {
            if path.ends_with(".pack") && inflated(&mut stream, &req, body, how, sent)? {
                continue;
            }
        }
        let e_tag = |len: usize| format!("{}\"{len}\"", if weak { "W/" } else { "" });
        let refused = |len: usize| {
            req.header("if-match")
                .is_some_and(|want| weak || want != e_tag(len))
        };
        match body.map(|b| (super::wire::range(&req, b.len()), b)) {
            Some((_, body)) if refused(body.len()) => write!(
                out,
                "HTTP/1.1 412 Precondition Failed\r\nContent-Length: 0\r\n\r\n"
            )?,
            Some((Ok(part), body)) => {
                let (status, range, slice) = match part {
                    None => ("200 OK", String::new(), &body[..]),
                    Some(r) => (
                        "206 Partial Content",
                        format!("Content-Range: bytes {}-{}/{}\r\n", r.start, r.end - 1, body.len()),
                        &body[r],
                    ),
                };
                write!(
                    out,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\n{range}Last-Modified: Thu, 01 Jan 2026 00:00:00 GMT\r\nETag: {}\r\n\r\n",
                    slice.len(),
                    e_tag(body.len())
                )?;
                if method != "HEAD" {
                    out.extend_from_slice(slice);
                    sent.fetch_add(slice.len() as u64, Ordering::Relaxed);
                }
            }
            Some((Err(()), body)) => write!(
                out,
                "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */{}\r\nContent-Length: 0\r\n\r\n",
                body.len()
            )?,
            None => write!(out, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")?,
        }
        stream.write_all(&out)?;
    }
    Ok(())
}

/// A server on 127.0.0.1 that answers every request with `status` and `body`.
pub fn serve_fixed(status: &'static str, body: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut out = stream;
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    loop {
                        let mut h = String::new();
                        if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                            break;
                        }
                        let lower = h.to_ascii_lowercase();
                        if let Some(v) = lower.strip_prefix("content-length:") {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut sink = vec![0; length];
                    let _ = reader.read_exact(&mut sink);
                    let reply = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nContent-Type: text/html\r\n\r\n{body}",
                        body.len()
                    );
                    if out.write_all(reply.as_bytes()).is_err() {
                        return;
                    }
                }
            });
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// A port on 127.0.0.1 where nothing listens while this is held: bound, never listening, so
/// a connection is refused and no other test's server can be given the port meanwhile.
pub struct ClosedPort(socket2::Socket);

impl ClosedPort {
    pub fn port(&self) -> u16 {
        self.0.local_addr().unwrap().as_socket().unwrap().port()
    }
}

pub fn closed_port() -> ClosedPort {
    closed_port_at(0).expect("a port on 127.0.0.1")
}

/// `port` closed as [`closed_port`] closes one, if it is free.
pub fn closed_port_at(port: u16) -> Option<ClosedPort> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    let at = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    socket.bind(&SockAddr::from(at)).ok()?;
    Some(ClosedPort(socket))
}

/// Python's own `http.server` serving `root` (a web server that ignores `Range`), stopped
/// when dropped.
pub struct PythonHttp {
    pub url: String,
    child: std::process::Child,
}

impl Drop for PythonHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn python_http_server(root: &Path) -> PythonHttp {
    let [port] = super::servers::free_ports();
    let child = std::process::Command::new("python3")
        .args([
            "-m",
            "http.server",
            "--bind",
            "127.0.0.1",
            &port.to_string(),
        ])
        .arg("--directory")
        .arg(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    let server = PythonHttp {
        url: format!("http://127.0.0.1:{port}/"),
        child,
    };
    wait_for_port(port, || "python3 -m http.server did not start".into());
    server
}

/// Waits (20 s at most) until something listens on `port` of 127.0.0.1; else fails the test
/// with what `failed` says.
pub fn wait_for_port(port: u16, failed: impl Fn() -> String) {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(std::time::Instant::now() < deadline, "{}", failed());
        std::thread::sleep(Duration::from_millis(50));
    }
}
