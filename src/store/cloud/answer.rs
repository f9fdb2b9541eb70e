//! What a cloud client's error says, read once into fields that every decision is taken on
//! (throttled, a missing bucket, the metadata service, out of files, plain HTTP refused, an
//! option the client cannot parse). object_store's `RequestError`, which holds the status and
//! the body, is not public, and its builders' errors are not either: their text is all there
//! is. This file is the one place that reads it (`t/architecture.rs` holds that), so that when
//! a client words its errors anew, one file changes and its tests say so.

use crate::store::error::causes;

/// A failed request's error, as fields.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(in crate::store) struct Answer {
    /// The store's status line (`503 Service Unavailable`), when it answered with one.
    pub status: Option<String>,
    /// What the store's answer held, when it answered (an error in a 200's body included).
    pub body: Option<String>,
    /// `scheme://host:port` of the request the error names.
    pub origin: Option<String>,
    /// The request went to an instance metadata service (credentials were looked for there).
    pub metadata_service: bool,
    /// The client refused a plain-HTTP address it was not allowed to use.
    pub plain_http_refused: bool,
    /// The request failed for want of a file descriptor (`EMFILE`, `ENFILE`).
    pub out_of_files: bool,
}

/// object_store's words for an answer with a status, and for an error in a 200's body.
const STATUS_ANSWER: &str = "Server returned non-2xx status code: ";
const BODY_ANSWER: &str = "Server returned error response: ";
/// object_store's words for the request an error is about.
const REQUEST: &str = "Error performing ";

impl Answer {
    /// Only the store's answer (status and body), from the first cause that is one: what a
    /// "not found" is asked, which a listing or a read may meet thousands of times.
    pub(in crate::store) fn store_answer(e: &object_store::Error) -> Answer {
        let mut answer = Answer::default();
        for cause in causes(e) {
            answer.read_answer(&cause.to_string());
            if answer.body.is_some() {
                break;
            }
        }
        answer
    }

    /// Reads what `e` and its causes say.
    pub(in crate::store) fn of(e: &object_store::Error) -> Answer {
        let mut answer = Answer::default();
        let mut deepest = String::new();
        for cause in causes(e) {
            let text = cause.to_string();
            answer.read_request(&text);
            answer.read_answer(&text);
            let errno = cause
                .downcast_ref::<std::io::Error>()
                .and_then(std::io::Error::raw_os_error);
            answer.out_of_files |= matches!(errno, Some(libc::EMFILE | libc::ENFILE));
            deepest = text;
        }
        // Where the system's error reached the client only as text (hyper's, reqwest's).
        answer.out_of_files |=
            deepest.contains("(os error 24)") || deepest.contains("(os error 23)");
        answer.plain_http_refused =
            deepest.contains("builder error") || deepest.contains("URL scheme is not allowed");
        let whole = e.to_string();
        answer.metadata_service = [
            "/latest/api/token",
            "/latest/meta-data/",
            "169.254.169.254",
            "169.254.170.2",
        ]
        .iter()
        .any(|m| whole.contains(m));
        answer
    }

    /// `Error performing GET <url> in 1s ...`: the URL's origin, from the first cause that
    /// names one.
    fn read_request(&mut self, text: &str) {
        if self.origin.is_some() {
            return;
        }
        let Some(rest) = text.strip_prefix(REQUEST) else {
            return;
        };
        let Some(uri) = rest.split_whitespace().nth(1) else {
            return;
        };
        self.origin = url::Url::parse(uri)
            .ok()
            .map(|u| u.origin().ascii_serialization())
            .filter(|o| o != "null");
    }

    /// `Server returned non-2xx status code: <status> <reason>: <body>` or `Server returned
    /// error response: <body>`: the first cause that is the store's answer decides.
    fn read_answer(&mut self, text: &str) {
        if self.body.is_some() {
            return;
        }
        if let Some(rest) = text.strip_prefix(STATUS_ANSWER) {
            let (status, body) = rest.split_once(": ").unwrap_or((rest, ""));
            self.status = Some(status.trim().to_string());
            self.body = Some(body.to_string());
        } else if let Some(body) = text.strip_prefix(BODY_ANSWER) {
            self.body = Some(body.to_string());
        }
    }

    /// The status's number (`503`).
    pub(in crate::store) fn status_code(&self) -> Option<u16> {
        self.status.as_ref()?.get(..3)?.parse().ok()
    }

    /// An XML error answer's `<Code>` (S3, Azure, GCS's XML API).
    pub(in crate::store) fn error_code(&self) -> Option<&str> {
        tag(self.body.as_deref()?, "Code")
    }

    /// The store said "slow down": status 503 or 429, or S3's `SlowDown` code. Only the
    /// answer is looked at, never the whole message, which holds the request's URL (a version
    /// ID, a port) and how long it took.
    pub(in crate::store) fn is_throttling(&self) -> bool {
        matches!(self.status_code(), Some(503 | 429)) || self.error_code() == Some("SlowDown")
    }

    /// The bucket or container itself is missing, not a file in it.
    pub(in crate::store) fn is_missing_bucket(&self) -> bool {
        matches!(
            self.error_code(),
            Some("NoSuchBucket" | "ContainerNotFound")
        ) || self
            .body
            .as_deref()
            .is_some_and(|b| b.contains("The specified bucket does not exist"))
    }
}

/// The text of the first `<name>` element of an XML answer.
pub(in crate::store) fn tag<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let start = body.find(&open)? + open.len();
    let end = body[start..].find("</")? + start;
    Some(body[start..end].trim())
}

/// A client builder's refusal of an option's value (`failed to parse "<value>" as <kind>`):
/// the option among `options` whose value it quotes, and the kind it wanted.
pub(in crate::store) fn unparsable_option<'o>(
    options: &'o [(String, String)],
    e: &object_store::Error,
) -> Option<(&'o str, String)> {
    let raw = e.to_string();
    let (_, rest) = raw.split_once("failed to parse")?;
    let (key, _) = options
        .iter()
        .rev()
        .find(|(_, v)| raw.contains(&format!("\"{v}\"")))?;
    let kind = rest.rsplit(" as ").next().unwrap_or("value").trim();
    Some((key, kind.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_answer_tells_throttling_never_digits_in_the_url() {
        let of = |text: &str| {
            let mut a = Answer::default();
            a.read_answer(text);
            a
        };
        let unavailable = of("Server returned non-2xx status code: 503 Service Unavailable: x");
        assert_eq!(unavailable.status_code(), Some(503));
        let slow = of("Server returned error response: <Error><Code>SlowDown</Code></Error>");
        assert_eq!(
            (slow.status_code(), slow.error_code()),
            (None, Some("SlowDown"))
        );
        let denied = of(
            "Server returned non-2xx status code: 403 Forbidden: <Error><Code>\
                      AccessDenied</Code><Key>versions/50300000-x</Key></Error>",
        );
        assert_eq!(
            (denied.status_code(), denied.error_code()),
            (Some(403), Some("AccessDenied"))
        );
        assert_eq!(
            of("Error performing GET http://127.0.0.1:15030/b/x in 1s"),
            Answer::default()
        );
        let failed = of("Server returned non-2xx status code: 500 Internal Server Error: oops");
        assert_eq!(
            (failed.status.as_deref(), failed.body.as_deref()),
            (Some("500 Internal Server Error"), Some("oops"))
        );
    }

    /// An error as object_store 0.14 chains one: the request (method, URL, time taken), then
    /// the answer.
    #[derive(Debug)]
    struct Chained(String, Option<Box<Chained>>);

    impl std::fmt::Display for Chained {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl std::error::Error for Chained {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|c| c as _)
        }
    }

    fn request_error(request: &str, answer: &str) -> object_store::Error {
        let answer = Chained(answer.to_string(), None);
        object_store::Error::Generic {
            store: "S3",
            source: Box::new(Chained(
                format!("{request} - {answer}"),
                Some(Box::new(answer)),
            )),
        }
    }

    #[test]
    fn a_key_url_or_time_holding_503_or_429_is_no_throttling() {
        let request = "Error performing GET http://127.0.0.1:15030/b/versions/50300000-0429-7000-8503-000000000429/version.json in 503.429ms";
        let not_found = "Server returned non-2xx status code: 404 Not Found: <Error><Code>NoSuchKey</Code><Key>429/503</Key></Error>";
        assert!(!Answer::of(&request_error(request, not_found)).is_throttling());
        let denied = "Server returned non-2xx status code: 403 Forbidden: took 503 ms, retry 429";
        assert!(!Answer::of(&request_error(request, denied)).is_throttling());
        for answer in [
            "Server returned non-2xx status code: 503 Service Unavailable: ",
            "Server returned non-2xx status code: 429 Too Many Requests: ",
            "Server returned error response: <Error><Code>SlowDown</Code></Error>",
        ] {
            let plain = "Error performing GET http://h/b/k in 1s";
            assert!(
                Answer::of(&request_error(plain, answer)).is_throttling(),
                "{answer}"
            );
            let e = request_error(plain, answer);
            assert_eq!(
                Answer::store_answer(&e).body,
                Answer::of(&e).body,
                "{answer}"
            );
        }
    }

    #[test]
    fn the_request_names_its_origin() {
        let mut a = Answer::default();
        a.read_request("Error performing GET http://127.0.0.1:1/b/l/fdl.json in 1s");
        assert_eq!(a.origin.as_deref(), Some("http://127.0.0.1:1"));
    }
}
