//! An endpoint a cloud's settings name, checked before a client is built: a URL a client can
//! use (a client library panics on some that are not), plain HTTP only with permission.

use url::Url;

use crate::redact::redact;
use crate::store::error::StoreError;
use crate::store::url::StoreUrl;

/// Whether an endpoint may be plain HTTP: allowed (the user said so, or the kind leaves it to
/// its builder), or refused, with the variable that allows it, if the kind has one.
#[derive(Clone, Copy)]
pub(in crate::store) enum PlainHttp<'a> {
    Allowed,
    Refused { variable: Option<&'a str> },
}

/// An endpoint must be an `http(s)://host[:port]` URL a client can use (a client library
/// panics on some that are not), and plain HTTP needs the user's permission.
pub(in crate::store) fn check_endpoint(
    url: &StoreUrl,
    value: Option<&str>,
    what: &str,
    plain_http: PlainHttp,
) -> Result<(), StoreError> {
    let Some(value) = value else { return Ok(()) };
    let hint = format!(
        "an endpoint is a URL such as http://127.0.0.1:9000 or https://storage.example.org; \
         set it with {}git config remote.<remote>.fdlEndpoint",
        if matches!(url, StoreUrl::S3(_)) {
            "AWS_ENDPOINT_URL or "
        } else {
            ""
        }
    );
    let bad = |why: &str| StoreError::Setup {
        message: format!(
            "the {what} '{}' is not a usable URL: {why}",
            crate::redact::excerpt(&redact(value), 200)
        ),
        hint: Some(hint.clone()),
    };
    if value.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it holds a blank or a control character"));
    }
    let parsed = Url::parse(value).map_err(|e| bad(&e.to_string()))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(bad("it names no host"));
    }
    if let (PlainHttp::Refused { variable }, "http") = (plain_http, parsed.scheme()) {
        return Err(StoreError::Setup {
            message: format!(
                "the {what} '{}' is plain HTTP, which is not allowed unless you say so",
                redact(value)
            ),
            hint: Some(allow_http_hint(variable)),
        });
    }
    Ok(())
}

/// How to allow plain HTTP, with the kind's own `variable` where it has one.
pub(in crate::store) fn allow_http_hint(variable: Option<&str>) -> String {
    let env = variable
        .map(|v| format!("{v}=true, or "))
        .unwrap_or_default();
    format!("to use it, set {env}git config remote.<remote>.fdlAllowHttp true")
}
