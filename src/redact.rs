//! Keeping secrets and terminal control sequences out of what the helper prints: credentials in
//! URLs (user info, query strings) and values registered as secrets are replaced, and control
//! characters are escaped, before any message, warning, table or trace line reaches the terminal.

use parking_lot::Mutex;

/// What stands where a secret was.
const REDACTED: &str = "<redacted>";

/// Values that must never be printed (option values, a URL's user and password): every printer
/// replaces them wherever they appear, in whatever message a library built around them.
static SECRETS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Registers a value that must never be printed. Values that cannot be secrets (booleans,
/// numbers, durations, fewer than 4 characters) are ignored, so messages stay readable.
pub fn register_secret(value: &str) {
    let v = value.trim();
    let trivial = v.chars().count() < 4
        || matches!(
            v.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off"
        )
        || is_number_like(v);
    if trivial {
        return;
    }
    let mut secrets = SECRETS.lock();
    if !secrets.iter().any(|s| s == v) {
        secrets.push(v.to_string());
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }
}

/// `30`, `1.5`, `30s`, `100ms`: a number with at most a short unit.
fn is_number_like(v: &str) -> bool {
    let number = v.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    !number.is_empty()
        && v.len() - number.len() <= 3
        && number.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// Registers the credentials of every URL in `text`, as written and percent-decoded: the
/// password, and the user info whole. A user name beside a password is a name, not a secret
/// (replacing every `alice` would break a printed path under `/home/alice/`); a user info with
/// no password is registered only if it is as long as a token (16 characters or more:
/// `https://ghp_...@host/`). In a URL the user info is redacted whatever it is.
pub fn register_url_secrets(text: &str) {
    let mut rest = text;
    while let Some(idx) = rest.find("://") {
        let scheme = scheme_before(&rest[..idx]);
        let tail = &rest[idx + 3..];
        let (user_info, _) = split_user_info(tail);
        if let Some(info) = user_info.filter(|i| !is_azure_container(&scheme, i)) {
            let secret = match info.split_once(':') {
                Some((_, password)) => Some(password),
                None => Some(info).filter(|i| i.chars().count() >= TOKEN_LENGTH),
            };
            if let Some(secret) = secret {
                register_secret(info);
                register_secret(secret);
                register_secret(&percent_encoding::percent_decode_str(secret).decode_utf8_lossy());
            }
        }
        rest = tail;
    }
}

/// The shortest user info without a password taken for a token rather than a name.
const TOKEN_LENGTH: usize = 16;

/// Registers the value of a store option (`fdlOption key=value`), unless its key names what is
/// no secret: a region, an endpoint, a bucket, container or account name (an endpoint's own
/// credentials, if it has any, are still registered).
pub fn register_option_secret(key: &str, value: &str) {
    let key = key.to_ascii_lowercase();
    let public = [
        "region",
        "endpoint",
        "endpoint_url",
        "url",
        "bucket",
        "bucket_name",
    ]
    .iter()
    .chain(&["container_name", "account_name", "container", "account"])
    .any(|p| key == *p || key.ends_with(&format!("_{p}")));
    match public {
        true => register_url_secrets(value),
        false => register_secret(value),
    }
}

/// Registers the values of the cloud variables that hold credentials (`AWS_SECRET_ACCESS_KEY`,
/// `AZURE_STORAGE_SAS_KEY`, ...): a client library may echo one it cannot parse.
pub fn register_env_secrets() {
    for (k, v) in std::env::vars_os() {
        let (Some(k), Some(v)) = (k.to_str(), v.to_str()) else {
            continue;
        };
        let cloud = ["AWS_", "AZURE_", "GOOGLE_"]
            .iter()
            .any(|p| k.starts_with(p));
        let secret = [
            "SECRET",
            "TOKEN",
            "KEY",
            "PASSWORD",
            "SAS",
            "CREDENTIAL",
            "CONNECTION",
        ]
        .iter()
        .any(|w| k.contains(w));
        if cloud && secret && !k.ends_with("_FILE") && !k.ends_with("KEY_ID") {
            register_secret(v);
        }
    }
}

/// Removes credentials from `text`: the user-info part of every URL (a token may stand where
/// a user name goes; a password may hold `/` or `#`), query strings (SAS tokens, signatures),
/// and every registered secret. An Azure container (`abfss://<container>@<account>...`) is not a
/// secret and stays.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(idx) = rest.find("://") {
        let scheme = scheme_before(&rest[..idx]);
        let (head, tail) = rest.split_at(idx + 3);
        out.push_str(head);
        let (user_info, after_info) = split_user_info(tail);
        match user_info {
            Some(info) if !is_azure_container(&scheme, info) => {
                out.push_str(REDACTED);
                out.push('@');
            }
            Some(info) => {
                out.push_str(info);
                out.push('@');
            }
            None => {}
        }
        // The URL ends at a blank or a quote: a message's closing quote is not part of it.
        let end = after_info
            .find(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | '<' | '>'))
            .unwrap_or(after_info.len());
        let (url, after) = after_info.split_at(end);
        match url.find('?') {
            // `?` and nothing: a query already redacted (`?<redacted>`) stays as it is.
            Some(q) if q + 1 < url.len() => {
                out.push_str(&url[..q]);
                out.push('?');
                out.push_str(REDACTED);
            }
            _ => out.push_str(url),
        }
        rest = after;
    }
    out.push_str(rest);
    replace_secrets(&out)
}

/// Escapes what a terminal would act on: control characters (escape sequences, carriage
/// returns, newlines that would forge a line such as `hint: ...`, C1 controls) and Unicode
/// formatting characters that reorder or hide text. The result is one line.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if is_format_char(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// What every printer shows of a text: secrets removed, control characters escaped, one line.
pub fn for_terminal(text: &str) -> String {
    sanitize(&redact(text))
}

/// A lake's name or value quoted in a message: at most 80 characters, each as Rust's
/// `escape_debug` shows it (control and invisible characters, quotes and backslashes
/// escaped), with `…` when it was cut. Mapping v1's refusals are worded with it.
pub(crate) fn printable(s: &str) -> String {
    let mut out: String = s.chars().take(80).flat_map(char::escape_debug).collect();
    if s.chars().count() > 80 {
        out.push('…');
    }
    out
}

/// At most `max` characters of `text`, with `…` when it was cut.
pub fn excerpt(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// Bidirectional overrides and invisible characters: they make a terminal show text other than
/// what is there.
fn is_format_char(c: char) -> bool {
    matches!(c as u32,
        0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x2069 | 0xFEFF | 0x061C)
}

fn replace_secrets(text: &str) -> String {
    let secrets = SECRETS.lock();
    let mut out = text.to_string();
    for s in secrets.iter() {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), REDACTED);
        }
    }
    out
}

/// The scheme that ends where `before` ends (`s3` in `... 's3`).
fn scheme_before(before: &str) -> String {
    let start = before
        .char_indices()
        .rfind(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    before[start..].to_ascii_lowercase()
}

/// Splits what follows `://` into the user info (if any) and the rest. The user info ends at
/// the last `@` of the authority; when the authority holds a `:` that is no port (`user:pa/ss@`,
/// a password with `/`, `?` or `#`), at the last `@` before the next blank.
fn split_user_info(tail: &str) -> (Option<&str>, &str) {
    let token_end = tail.find(char::is_whitespace).unwrap_or(tail.len());
    let token = &tail[..token_end];
    let authority_end = token.find(['/', '?', '#']).unwrap_or(token.len());
    let authority = &token[..authority_end];
    if let Some(at) = authority.rfind('@') {
        return (Some(&tail[..at]), &tail[at + 1..]);
    }
    let non_port_colon = authority
        .split_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && !port.chars().all(|c| c.is_ascii_digit()));
    let cut_short = authority_end < token.len();
    match token.rfind('@') {
        Some(at) if non_port_colon && cut_short => (Some(&tail[..at]), &tail[at + 1..]),
        _ => (None, tail),
    }
}

/// `abfs[s]://<container>@<account>.dfs.core.windows.net/`: the part before `@` names a
/// container (lower-case letters, digits and `-`), not a credential.
fn is_azure_container(scheme: &str, info: &str) -> bool {
    matches!(scheme, "abfs" | "abfss")
        && (3..=63).contains(&info.len())
        && info
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30, item 10: a user name beside a password, a short lone user and a region are
    /// no secrets; a password, a token where a user goes and a key's value are.
    #[test]
    fn names_and_regions_are_not_registered_as_secrets() {
        register_url_secrets("https://carol:pw-of-carol@h/");
        register_url_secrets("https://dave@h/");
        register_url_secrets("https://ghp_0123456789abcdefTOKEN@h/");
        register_option_secret("aws_region", "eu-west-3");
        register_option_secret("aws_secret_access_key", "key-of-the-test");
        assert_eq!(
            redact(
                "/home/carol/dave eu-west-3 pw-of-carol ghp_0123456789abcdefTOKEN key-of-the-test"
            ),
            "/home/carol/dave eu-west-3 <redacted> <redacted> <redacted>"
        );
    }

    /// Found by `cargo fuzz run redact`: a scheme after a character of more than one byte.
    #[test]
    fn a_scheme_after_a_wide_character_is_no_panic() {
        let text = String::from_utf8_lossy(b"//:\xa2\xa2://///// \x8f\n").into_owned();
        let _ = redact(&text);
        assert_eq!(scheme_before("\u{a2}s3"), "s3");
        assert_eq!(scheme_before("\u{fffd}"), "");
    }

    #[test]
    fn secrets_are_redacted() {
        assert_eq!(
            redact("GET https://u:secret@h/p?sig=abc failed"),
            "GET https://<redacted>@h/p?<redacted> failed"
        );
        assert_eq!(redact("https://ghp_TOKEN@h/l/"), "https://<redacted>@h/l/");
        assert_eq!(
            redact("a https://x:y@h/\nb https://p:q@k/?s=1"),
            "a https://<redacted>@h/\nb https://<redacted>@k/?<redacted>"
        );
        assert_eq!(redact("s3://bucket/lake/"), "s3://bucket/lake/");
    }

    #[test]
    fn passwords_with_slash_or_hash_are_redacted() {
        assert_eq!(
            redact("bad 'https://user:pa/ss@host/lake/': invalid port"),
            "bad 'https://<redacted>@host/lake/': invalid port"
        );
        assert_eq!(
            redact("https://AKIA:wJal/rXU#tn+F@h/x"),
            "https://<redacted>@h/x"
        );
        assert_eq!(redact("http://127.0.0.1:9000/b"), "http://127.0.0.1:9000/b");
        assert_eq!(redact("http://127.0.0.1:x"), "http://127.0.0.1:x");
    }

    #[test]
    fn quotes_survive_and_containers_stay() {
        assert_eq!(
            redact("lake 'https://h/l/?sig=abc': failed"),
            "lake 'https://h/l/?<redacted>': failed"
        );
        let once = redact("'https://u:p@h/l/?sig=abc'");
        assert_eq!(redact(&once), once, "redacting twice changes nothing");
        assert_eq!(
            redact("'abfss://data@acct.dfs.core.windows.net/l/'"),
            "'abfss://data@acct.dfs.core.windows.net/l/'"
        );
        assert_eq!(
            redact("abfss://user:key@acct.dfs.core.windows.net/l/"),
            "abfss://<redacted>@acct.dfs.core.windows.net/l/"
        );
    }

    #[test]
    fn registered_secrets_never_show() {
        register_secret("wJalrXUtnFEMI/K7MDENG");
        register_secret("true");
        assert_eq!(
            redact("failed to parse \"wJalrXUtnFEMI/K7MDENG\" as true"),
            "failed to parse \"<redacted>\" as true"
        );
        register_url_secrets("https://someone:p%2Fass@h/");
        assert_eq!(redact("user p/ass"), "user <redacted>");
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(
            sanitize("a\x1b]0;x\x07b\nhint: run\r\u{202e}z\u{9b}"),
            "a\\x1b]0;x\\x07b\\nhint: run\\r\\u{202e}z\\x9b"
        );
        assert_eq!(sanitize("Zoë → ok"), "Zoë → ok");
        assert_eq!(excerpt("abcdef", 3), "abc…");
        assert_eq!(excerpt("abc", 3), "abc");
    }
}
