//! Keeping secrets out of what the helper prints: credentials in URLs (user info, query
//! strings) are replaced before any message, warning or trace line reaches the terminal.

/// Removes credentials from every URL in `text`: the whole user-info part (a token may stand
/// where a user name goes) and the query string (SAS tokens, signatures).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(idx) = rest.find("://") {
        let (head, tail) = rest.split_at(idx + 3);
        out.push_str(head);
        let end = tail.find(char::is_whitespace).unwrap_or(tail.len());
        let (url, after) = tail.split_at(end);
        let (authority, path) = url.split_at(url.find(['/', '?', '#']).unwrap_or(url.len()));
        match authority.rfind('@') {
            Some(at) => {
                out.push_str("<redacted>@");
                out.push_str(&authority[at + 1..]);
            }
            None => out.push_str(authority),
        }
        match path.find('?') {
            Some(q) => {
                out.push_str(&path[..q]);
                out.push_str("?<redacted>");
            }
            None => out.push_str(path),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
