//! HTTP/1.1 as the test servers read it: one parser of requests (and of an upstream's answers,
//! for the proxies), so the S3 server, the fault proxy, the recorder and the static file server
//! all read the wire the same way. Bodies are framed by `Content-Length` only: no test client
//! sends chunked requests.

use std::io::{self, BufRead};

use percent_encoding::percent_decode_str;

/// One request as it came.
pub struct Request {
    pub method: String,
    /// The target as sent: `/bucket/key?query` (path-style S3), not decoded.
    pub target: String,
    /// The target's path without its leading `/`, percent-decoded.
    pub path: String,
    /// The target's query parameters, percent-decoded, in order.
    pub query: Vec<(String, String)>,
    /// Header names as sent, values trimmed.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The head and the body, byte for byte (what a proxy forwards).
    pub raw: Vec<u8>,
}

impl Request {
    /// A header's value; names compare without case, as HTTP's do.
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }

    /// A query parameter's value.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The next request on a connection, or `None` once the client closed it.
pub fn read_request(reader: &mut impl BufRead) -> io::Result<Option<Request>> {
    let Some((start, headers, mut raw)) = read_head(reader)? else {
        return Ok(None);
    };
    let mut words = start.split_whitespace();
    let method = words.next().unwrap_or("").to_string();
    let target = words.next().unwrap_or("/").to_string();
    let body = read_body(reader, content_length(&headers))?;
    raw.extend_from_slice(&body);
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let query = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    Ok(Some(Request {
        method,
        path: decode(path.trim_start_matches('/')),
        target,
        query,
        headers,
        body,
        raw,
    }))
}

/// An upstream's whole answer to a request made with `method`, byte for byte: no body follows
/// an answer to HEAD, a 204 or a 304, whatever its `Content-Length` says.
pub fn read_response(reader: &mut impl BufRead, method: &str) -> io::Result<Vec<u8>> {
    let Some((start, headers, mut raw)) = read_head(reader)? else {
        return Ok(Vec::new());
    };
    let status: u32 = start
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    if method != "HEAD" && status != 204 && status != 304 {
        raw.extend(read_body(reader, content_length(&headers))?);
    }
    Ok(raw)
}

/// Percent-decoded text (an invalid escape kept as it is).
pub fn decode(s: &str) -> String {
    percent_decode_str(s).decode_utf8_lossy().into_owned()
}

/// The start line, the headers and the head's bytes; `None` at the end of the stream.
type Head = (String, Vec<(String, String)>, Vec<u8>);

fn read_head(reader: &mut impl BufRead) -> io::Result<Option<Head>> {
    let mut start = String::new();
    if reader.read_line(&mut start)? == 0 {
        return Ok(None);
    }
    let mut raw = start.as_bytes().to_vec();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(None); // closed halfway through: nothing to answer
        }
        raw.extend_from_slice(line.as_bytes());
        if line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    Ok(Some((start, headers, raw)))
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn content_length(headers: &[(String, String)]) -> usize {
    header(headers, "content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn read_body(reader: &mut impl BufRead, len: usize) -> io::Result<Vec<u8>> {
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body)?;
    Ok(body)
}

/// The part of a body of `len` bytes a `Range: bytes=a-b` (or `a-`) header asks for, as a
/// half-open range cut at the end; `Err(())` when no byte of it exists (HTTP's 416), `Ok(None)`
/// when the request asks for the whole.
#[allow(clippy::result_unit_err)]
pub fn range(req: &Request, len: usize) -> Result<Option<std::ops::Range<usize>>, ()> {
    let Some(spec) = req.header("range").and_then(|r| r.strip_prefix("bytes=")) else {
        return Ok(None);
    };
    let Some((a, b)) = spec.split_once('-') else {
        return Ok(None);
    };
    let Ok(start) = a.trim().parse::<usize>() else {
        return Ok(None);
    };
    let end = match b.trim() {
        "" => len,
        b => b.parse::<usize>().map_or(len, |e| (e + 1).min(len)),
    };
    if start >= len {
        return Err(());
    }
    Ok(Some(start..end))
}
