//! S3 listings read quickly: a ListObjectsV2 page signed as object_store signs its own, sent
//! with object_store's own HTTP client, its XML read as events. Through object_store the same
//! page costs about 2 µs a key on the client (serde over a reader, every date parsed), most of a
//! 1,000-ref listing's time after its answer. Anything but a plain answer (an error status, a
//! redirect, a body this reader does not expect) is asked of object_store again, so errors,
//! retries and backoff stay object_store's, as do their messages.

use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey as K, AwsAuthorizer};
use object_store::client::{HttpClient, HttpConnector, HttpRequestBody, ReqwestConnector};
use object_store::path::Path as StorePath;
use object_store::ClientOptions;
use quick_xml::events::Event;

/// The largest list page read here: 1,000 keys of up to 1,024 bytes, escaped, and their
/// fields. A larger answer is left to object_store.
const MAX_PAGE_BYTES: usize = 8 << 20;

/// Hands object_store an HTTP client and keeps the last one made: the store's own (built last,
/// after any credential client), so listings share its connections and settings.
#[derive(Debug, Default, Clone)]
pub(crate) struct KeepClient(Arc<Mutex<Option<HttpClient>>>);

impl HttpConnector for KeepClient {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let client = ReqwestConnector::default().connect(options)?;
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(client.clone());
        Ok(client)
    }
}

impl KeepClient {
    fn take(&self) -> Option<HttpClient> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// One page of a listing: each key with its ETag, and the token of the next page.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Page {
    pub objects: Vec<(StorePath, Option<String>)>,
    pub next: Option<String>,
}

/// Lists one S3 bucket's keys as object_store would ask for them.
#[derive(Debug)]
pub(crate) struct S3Lister {
    client: HttpClient,
    bucket_endpoint: url::Url,
    region: String,
    /// None when requests go unsigned (`aws_skip_signature`).
    s3: Option<Arc<AmazonS3>>,
    sign_payload: bool,
    request_payer: bool,
}

impl S3Lister {
    /// A lister for the store at `u` that `b` built (with `kept` as its connector), or None
    /// where its requests might not be the ones object_store sends (S3 Express, whose
    /// sessions sign otherwise; an address that is not `s3://`).
    pub(crate) fn new(
        u: &url::Url,
        b: &AmazonS3Builder,
        s3: &Arc<AmazonS3>,
        kept: &KeepClient,
        region: &str,
    ) -> Option<S3Lister> {
        let truthy = |k: K| super::options::truthy(b.get_config_value(&k));
        if truthy(K::S3Express) {
            return None;
        }
        // Only `s3://<bucket>/` names the bucket alone: object_store reads an endpoint, a
        // region or a style out of other forms of address.
        let bucket = match u.scheme() {
            "s3" | "s3a" => u.host_str()?,
            _ => return None,
        };
        // As object_store's builder decides it; the S3-specific endpoint first.
        let endpoint = b
            .get_config_value(&K::S3Endpoint)
            .or_else(|| b.get_config_value(&K::Endpoint));
        let bucket_endpoint = match (endpoint, truthy(K::VirtualHostedStyleRequest)) {
            (Some(e), true) => e,
            (Some(e), false) => format!("{}/{bucket}", e.trim_end_matches('/')),
            (None, true) => format!("https://{bucket}.s3.{region}.amazonaws.com"),
            (None, false) => format!("https://s3.{region}.amazonaws.com/{bucket}"),
        };
        let bucket_endpoint = url::Url::parse(&bucket_endpoint).ok()?;
        Some(S3Lister {
            client: kept.take()?,
            bucket_endpoint,
            region: region.to_string(),
            s3: (!truthy(K::SkipSignature)).then(|| s3.clone()),
            sign_payload: !truthy(K::UnsignedPayload),
            request_payer: truthy(K::RequestPayer),
        })
    }

    /// The page of keys below `prefix` after `offset` (or after `token`'s page), at most
    /// `max_keys`; else why object_store is to be asked instead.
    pub(crate) async fn page(
        &self,
        prefix: &str,
        offset: Option<&str>,
        max_keys: usize,
        token: Option<&str>,
    ) -> Result<Page, String> {
        let mut url = self.bucket_endpoint.clone();
        {
            let mut q = url.query_pairs_mut();
            if let Some(t) = token {
                q.append_pair("continuation-token", t);
            }
            q.append_pair("list-type", "2");
            q.append_pair("prefix", prefix);
            if let Some(o) = offset {
                q.append_pair("start-after", o);
            }
            q.append_pair("max-keys", &max_keys.to_string());
        }
        let mut request = http::Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .body(HttpRequestBody::empty())
            .map_err(|e| e.to_string())?;
        if let Some(s3) = &self.s3 {
            let credential = s3.credentials().get_credential().await;
            let credential = credential.map_err(|_| "no credentials yet")?;
            AwsAuthorizer::new(&credential, "s3", &self.region)
                .with_sign_payload(self.sign_payload)
                .with_request_payer(self.request_payer)
                .try_authorize(&mut request, None)
                .map_err(|_| "cannot sign")?;
        }
        let response = self.client.execute(request).await;
        let response = response.map_err(|_| "no answer")?;
        if response.status() != StatusCode::OK {
            return Err(format!("answered {}", response.status()));
        }
        let announced = response
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
        if announced.is_none_or(|n| n > MAX_PAGE_BYTES) {
            return Err(format!("no length, or more than {MAX_PAGE_BYTES} bytes"));
        }
        let body = response.into_body().bytes().await;
        let body = body.map_err(|_| "the answer broke off")?;
        parse(&body).ok_or_else(|| "an answer this reader does not expect".to_string())
    }
}

/// Which field of a listing the text at hand is.
#[derive(Clone, Copy, PartialEq)]
enum Field {
    Key,
    ETag,
    Size,
    LastModified,
    Truncated,
    Token,
    Other,
}

/// One `<Contents>` being read.
#[derive(Default)]
struct Contents {
    key: Option<String>,
    e_tag: Option<String>,
    has_size: bool,
    has_date: bool,
}

/// The field an element opened at `depth` is, inside a `<Contents>` or not.
fn field_of(depth: usize, in_contents: bool, name: &[u8]) -> Field {
    match (depth, in_contents, name) {
        (3, true, b"Key") => Field::Key,
        (3, true, b"ETag") => Field::ETag,
        (3, true, b"Size") => Field::Size,
        (3, true, b"LastModified") => Field::LastModified,
        (2, false, b"IsTruncated") => Field::Truncated,
        (2, false, b"NextContinuationToken") => Field::Token,
        _ => Field::Other,
    }
}

/// A character reference or one of XML's five entities; None for any other (no document
/// type defines more here).
fn entity(r: &quick_xml::events::BytesRef) -> Option<char> {
    if let Some(c) = r.resolve_char_ref().ok()? {
        return Some(c);
    }
    Some(match &**r {
        b"amp" => '&',
        b"lt" => '<',
        b"gt" => '>',
        b"quot" => '"',
        b"apos" => '\'',
        _ => return None,
    })
}

/// A ListObjectsV2 answer, or None for anything object_store should judge: XML that is not
/// well formed, a `<Contents>` without the key, size and date object_store requires, a key no
/// object_store path can be, an entity other than XML's own, a truncated page without a token.
pub(crate) fn parse(body: &[u8]) -> Option<Page> {
    let mut reader = quick_xml::Reader::from_reader(body);
    let mut page = Page::default();
    let mut truncated = None;
    let mut depth = 0usize;
    let mut contents: Option<Contents> = None;
    let mut field = Field::Other;
    let mut text = String::new();
    let mut root = false;
    loop {
        match reader.read_event().ok()? {
            Event::Start(e) => {
                depth += 1;
                let name = e.name();
                match (depth, name.as_ref()) {
                    (1, b"ListBucketResult") => root = true,
                    (1, _) => return None,
                    (2, b"Contents") => contents = Some(Contents::default()),
                    _ => {}
                }
                field = field_of(depth, contents.is_some(), name.as_ref());
                text.clear();
            }
            // No root, or a `<Contents/>` with none of the fields object_store requires.
            Event::Empty(e) if depth == 0 || (depth == 1 && e.name().as_ref() == b"Contents") => {
                return None
            }
            Event::Text(t) if field != Field::Other => text.push_str(&t.decode().ok()?),
            Event::CData(t) if field != Field::Other => text.push_str(&t.decode().ok()?),
            Event::GeneralRef(r) if field != Field::Other => text.push(entity(&r)?),
            Event::End(_) => {
                let done = std::mem::replace(&mut field, Field::Other);
                let value = std::mem::take(&mut text);
                match (done, contents.as_mut()) {
                    (Field::Key, Some(c)) => c.key = Some(value),
                    (Field::ETag, Some(c)) => c.e_tag = Some(value),
                    (Field::Size, Some(c)) => c.has_size = value.trim().parse::<u64>().is_ok(),
                    (Field::LastModified, Some(c)) => c.has_date = !value.trim().is_empty(),
                    (Field::Truncated, _) => truncated = Some(value.trim() == "true"),
                    (Field::Token, _) => page.next = Some(value),
                    _ => {}
                }
                if depth == 2 {
                    if let Some(c) = contents.take() {
                        if !(c.has_size && c.has_date) {
                            return None;
                        }
                        let key = StorePath::parse(c.key?).ok()?;
                        page.objects.push((key, c.e_tag));
                    }
                }
                depth = depth.checked_sub(1)?;
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if !root || depth != 0 {
        return None;
    }
    // object_store goes on wherever a token is given; a page said to go on without one it
    // would take for the last, and that is left to it.
    match truncated {
        Some(true) if page.next.is_none() => None,
        _ => Some(page),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contents(key: &str, etag: &str) -> String {
        format!(
            "<Contents><Key>{key}</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified>\
             <ETag>{etag}</ETag><Size>37</Size><StorageClass>STANDARD</StorageClass></Contents>"
        )
    }

    fn answer(truncated: bool, token: Option<&str>, items: &str) -> Vec<u8> {
        let token = token.map_or(String::new(), |t| {
            format!("<NextContinuationToken>{t}</NextContinuationToken>")
        });
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult \
             xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>b</Name><Prefix>lake/</Prefix>\
             <KeyCount>2</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>{truncated}</IsTruncated>\
             {items}{token}</ListBucketResult>"
        )
        .into_bytes()
    }

    #[test]
    fn a_page_gives_each_key_with_its_etag_and_the_next_token() {
        let items = contents("lake/refs/tags/a&amp;b", "&quot;e1&quot;")
            + &contents("lake/refs/tags/c&#x41;", "\"e2\"");
        let page = parse(&answer(true, Some("tok&amp;en"), &items)).unwrap();
        assert_eq!(
            page.objects,
            vec![
                (
                    StorePath::parse("lake/refs/tags/a&b").unwrap(),
                    Some("\"e1\"".to_string())
                ),
                (
                    StorePath::parse("lake/refs/tags/cA").unwrap(),
                    Some("\"e2\"".to_string())
                ),
            ]
        );
        assert_eq!(page.next.as_deref(), Some("tok&en"));
        let last = parse(&answer(false, None, &contents("lake/x", "\"e\""))).unwrap();
        assert_eq!((last.objects.len(), last.next), (1, None));
        assert_eq!(parse(&answer(false, None, "")).unwrap(), Page::default());
    }

    #[test]
    fn anything_unexpected_is_left_to_object_store() {
        let ok = contents("lake/a", "\"e\"");
        let cases: Vec<Vec<u8>> = vec![
            // Not a listing, not well formed, cut short.
            b"<Error><Code>AccessDenied</Code></Error>".to_vec(),
            b"<ListBucketResult><Contents><Key>a</Key>".to_vec(),
            answer(false, None, &ok)[..120].to_vec(),
            b"".to_vec(),
            b"\xff\xfe<x/>".to_vec(),
            // A page said to go on, with no token to go on with.
            answer(true, None, &ok),
            // A key no path can be, an unknown entity, a key with no size or date.
            answer(false, None, &contents("lake//a", "\"e\"")),
            answer(false, None, &contents("lake/&foo;", "\"e\"")),
            answer(
                false,
                None,
                "<Contents><Key>lake/a</Key><ETag>e</ETag><Size>1</Size></Contents>",
            ),
            answer(
                false,
                None,
                "<Contents><Key>lake/a</Key><LastModified>x</LastModified><Size>-1</Size></Contents>",
            ),
            answer(false, None, "<Contents><Size>1</Size><LastModified>x</LastModified></Contents>"),
        ];
        for (i, body) in cases.iter().enumerate() {
            assert_eq!(parse(body), None, "case {i}");
        }
    }

    #[test]
    fn deep_or_huge_answers_end_without_a_panic() {
        let deep = "<a>".repeat(100_000) + &"</a>".repeat(100_000);
        let deep = format!("<ListBucketResult>{deep}</ListBucketResult>");
        assert_eq!(parse(deep.as_bytes()), Some(Page::default()));
        let many = contents("lake/a", "\"e\"").repeat(10_000);
        assert_eq!(
            parse(&answer(false, None, &many)).unwrap().objects.len(),
            10_000
        );
    }
}
