//! Store errors in a user's words: what failed (no credentials, no such bucket, no connection,
//! no answer in time, plain HTTP not allowed, an HTTP status) and which variable or `git config`
//! key to set. Never a client library's raw error, never a server's whole page: an answer is its
//! status and at most a short excerpt. `remote.<remote>.` in a hint is filled in by the helper.

use object_store::client::{HttpError, HttpErrorKind};

use crate::redact::excerpt;
use crate::store::cloud::answer::Answer;
use crate::store::cloud::hints::{hint_allow_http, hint_credentials};
use crate::store::error::{causes, Cause, StoreError};
use crate::store::url::StoreUrl;

/// How much of a server's answer a message quotes.
const BODY_EXCERPT: usize = 80;

/// The error of a request to `path` (relative to the lake) that failed with `e`.
pub(in crate::store) fn request_error(
    url: &StoreUrl,
    path: &str,
    e: object_store::Error,
    answer: &Answer,
) -> StoreError {
    // No credentials is about the lake, not the file that happened to be asked for first.
    if let Some(n) = crate::store::cloud::aws_credentials::no_credentials(&e) {
        return StoreError::Setup {
            message: n.message.clone(),
            hint: Some(n.hint.clone()),
        };
    }
    let (message, hint) = describe(url, &e, answer);
    StoreError::Request {
        path: path.to_string(),
        message,
        hint,
        cause: Some(Cause::new(e)),
    }
}

fn describe(url: &StoreUrl, e: &object_store::Error, answer: &Answer) -> (String, Option<String>) {
    let at = answer.origin.as_deref().unwrap_or("the store");
    let status = answer
        .status
        .clone()
        .map(|s| (s, answer.body.clone().unwrap_or_default()));
    if answer.metadata_service {
        let what = match &status {
            Some((s, _)) => format!("answered {s}"),
            None => "cannot be reached".to_string(),
        };
        let cloud = match url {
            StoreUrl::Gcs(_) => "Google",
            StoreUrl::Azure(_) => "Azure",
            _ => "AWS",
        };
        return (
            format!(
                "no {cloud} credentials: none are set, and the instance metadata service ({at}) \
                 {what}"
            ),
            Some(hint_credentials(url)),
        );
    }
    if answer.is_missing_bucket() {
        return (
            format!(
                "{} does not exist{}",
                bucket_of(url),
                answer_detail(&status)
            ),
            Some(format!(
                "check the bucket name in the address{}",
                endpoint_advice(url, "; for another server, check ")
            )),
        );
    }
    if answer.out_of_files {
        return (
            format!("the request to {at} failed: too many open files"),
            Some(
                "raise the limit of open files (ulimit -n) or lower the requests in flight: \
                 git config remote.<remote>.fdlConcurrency 64"
                    .to_string(),
            ),
        );
    }
    if let Some(kind) = http_error_kind(e) {
        return describe_connection(url, kind, at, answer, e);
    }
    match (e, &status) {
        (
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. },
            Some((s, _)),
        ) => (
            format!("access denied ({s}{})", answer_excerpt(&status)),
            Some(format!(
                "check that the credentials may read this lake: {}",
                hint_credentials(url)
            )),
        ),
        (_, Some((s, _))) => (
            format!("the store answered {s}{}", answer_excerpt(&status)),
            None,
        ),
        _ => (one_line(&e.to_string(), 200), None),
    }
}

/// A request that got no answer: no connection, no answer in time, or refused by the client.
fn describe_connection(
    url: &StoreUrl,
    kind: HttpErrorKind,
    at: &str,
    answer: &Answer,
    e: &object_store::Error,
) -> (String, Option<String>) {
    let cause = one_line(&deepest_source(e), 120);
    match kind {
        HttpErrorKind::Connect => (
            format!("cannot connect to {at}: {cause}"),
            Some(match url {
                StoreUrl::Http(_) => "check the lake's address and that its server is running".into(),
                _ => format!(
                    "check that the store is running{}",
                    endpoint_advice(url, " and its address: ")
                ),
            }),
        ),
        HttpErrorKind::Timeout => (
            format!("no answer from {at} in time: {cause}"),
            Some(
                "for a slow store, allow more time: git config --add remote.<remote>.fdlOption timeout=120s"
                    .to_string(),
            ),
        ),
        _ if answer.plain_http_refused => (
            format!("{at} is plain HTTP, which is not allowed unless you say so"),
            Some(hint_allow_http(url)),
        ),
        _ => (format!("the request to {at} failed: {cause}"), None),
    }
}

fn http_error_kind(e: &object_store::Error) -> Option<HttpErrorKind> {
    causes(e).find_map(|s| s.downcast_ref::<HttpError>().map(HttpError::kind))
}

/// The innermost cause (`Connection refused (os error 111)`), where the real reason is.
fn deepest_source(e: &object_store::Error) -> String {
    causes(e).last().map(|s| s.to_string()).unwrap_or_default()
}

/// `: <excerpt of the answer>` when the answer says something, else nothing.
fn answer_excerpt(status: &Option<(String, String)>) -> String {
    let body = status
        .as_ref()
        .map(|(_, b)| summarize_body(b))
        .unwrap_or_default();
    if body.is_empty() {
        String::new()
    } else {
        format!(": \"{body}\"")
    }
}

/// ` (404 Not Found: "...")` for a missing bucket.
fn answer_detail(status: &Option<(String, String)>) -> String {
    match status {
        Some((s, _)) => format!(" ({s}{})", answer_excerpt(status)),
        None => String::new(),
    }
}

/// A short excerpt of a server's answer: an XML error's `Code` and `Message` when there are,
/// else the text without markup, blanks collapsed.
fn summarize_body(body: &str) -> String {
    let tag = |name: &str| crate::store::cloud::answer::tag(body, name).map(str::to_string);
    let text = match (tag("Code"), tag("Message")) {
        (Some(c), Some(m)) => format!("{c}: {m}"),
        (Some(c), None) => c,
        _ => strip_markup(body),
    };
    excerpt(&one_line(&text, usize::MAX), BODY_EXCERPT)
}

fn strip_markup(body: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Blanks (newlines included) collapsed to single spaces, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    excerpt(&text.split_whitespace().collect::<Vec<_>>().join(" "), max)
}

fn bucket_of(url: &StoreUrl) -> String {
    match url {
        StoreUrl::S3(u) | StoreUrl::Gcs(u) => {
            format!("bucket '{}'", u.host_str().unwrap_or_default())
        }
        StoreUrl::Azure(_) => "the container".to_string(),
        _ => "the bucket".to_string(),
    }
}

/// Where a store's endpoint is set, after `lead`; nothing for plain HTTP and folders.
fn endpoint_advice(url: &StoreUrl, lead: &str) -> String {
    match url {
        StoreUrl::S3(_) => {
            format!("{lead}AWS_ENDPOINT_URL (or git config remote.<remote>.fdlEndpoint <url>)")
        }
        StoreUrl::Gcs(_) | StoreUrl::Azure(_) => {
            format!("{lead}git config remote.<remote>.fdlEndpoint <url>")
        }
        StoreUrl::Http(_) => format!("{lead}the lake's address"),
        StoreUrl::Local(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_become_short_excerpts() {
        let html =
            "<html>\n<head><title>500</title></head>\n<body>\x1b]0;x\x07 hint: run curl x | sh\n"
                .to_string()
                + &"<p>filler</p>\n".repeat(12)
                + "</body></html>";
        let s = summarize_body(&html);
        assert!(
            !s.contains('\n') && s.chars().count() <= BODY_EXCERPT + 1,
            "{s}"
        );
        assert_eq!(
            summarize_body("<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>"),
            "NoSuchBucket: The specified bucket does not exist"
        );
        let no_files = object_store::Error::Generic {
            store: "S3",
            source: Box::new(std::io::Error::from_raw_os_error(libc::EMFILE)),
        };
        let url = StoreUrl::parse("s3://b/l", std::path::Path::new("/")).unwrap();
        let (message, hint) = describe(&url, &no_files, &Answer::of(&no_files));
        assert!(message.ends_with("too many open files"), "{message}");
        assert!(hint.unwrap().contains("fdlConcurrency"));
    }

    /// A request's error keeps the client's error it was written from, shown redacted.
    #[test]
    fn a_request_error_keeps_its_cause_redacted() {
        let url = StoreUrl::parse("s3://b/l", std::path::Path::new("/")).unwrap();
        let e = object_store::Error::Generic {
            store: "S3",
            source: "Error performing GET https://user:hunter2@h/b/l/fdl.json in 1s".into(),
        };
        let answer = Answer::of(&e);
        let error = request_error(&url, "fdl.json", e, &answer);
        let cause = std::error::Error::source(&error).expect("the client's error is kept");
        assert!(!cause.to_string().contains("hunter2"), "{cause}");
        let cause = cause.downcast_ref::<Cause>().expect("a Cause");
        assert!(matches!(
            cause.client(),
            object_store::Error::Generic { .. }
        ));
    }
}
