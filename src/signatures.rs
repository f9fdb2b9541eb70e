//! Signed versions: checking `version.json.sig` (an SSH signature, `ssh-keygen -Y sign`) over
//! the exact bytes of `version.json`, against keys the user trusts.
//!
//! Trust comes only from the user's side: an allowed-signers file (ssh-keygen(1), "ALLOWED
//! SIGNERS"). The keys a lake lists in `fdl.json`'s `signers` are never trusted by themselves,
//! since a mirror can rewrite `fdl.json`; they are only named in messages.

use std::fmt;
use std::path::Path;

use ssh_key::{HashAlg, PublicKey, SshSig};

/// The namespace assumed for version signatures (the format does not publish one).
pub(crate) const DEFAULT_NAMESPACE: &str = "fdl";

/// A remote's demand that every fetched version be signed by a trusted key.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    pub trusted: AllowedSigners,
    pub namespace: String,
}

/// One line of an allowed-signers file.
#[derive(Debug, Clone)]
struct Entry {
    principals: String,
    key: PublicKey,
    namespaces: Option<Vec<String>>,
    valid_after: Option<u64>,
    valid_before: Option<u64>,
    cert_authority: bool,
}

/// An allowed-signers file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SignersError {
    #[error("cannot read the allowed signers file {path}: {message}")]
    Unreadable { path: String, message: String },
    #[error("{path}: line {line}: {why}")]
    Invalid {
        path: String,
        line: usize,
        why: String,
    },
}

/// A line of an allowed-signers text that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {why}")]
pub(crate) struct BadLine {
    pub line: usize,
    pub why: String,
}

/// The keys the user trusts, and for whom.
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowedSigners {
    entries: Vec<Entry>,
}

impl AllowedSigners {
    pub(crate) fn load(path: &Path) -> Result<AllowedSigners, SignersError> {
        let text = std::fs::read_to_string(path).map_err(|e| SignersError::Unreadable {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        AllowedSigners::parse(&text).map_err(|e| SignersError::Invalid {
            path: path.display().to_string(),
            line: e.line,
            why: e.why,
        })
    }

    /// Parses the `allowed_signers` format: `principals [options] keytype base64 [comment]`.
    pub(crate) fn parse(text: &str) -> Result<AllowedSigners, BadLine> {
        let mut entries = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields = split_fields(line);
            let bad = |why: &str| BadLine {
                line: n + 1,
                why: why.to_string(),
            };
            let principals = fields
                .first()
                .ok_or_else(|| bad("empty"))?
                .trim_matches('"')
                .to_string();
            let (options, key_at) = if fields.get(1).is_some_and(|f| is_key_type(f)) {
                (None, 1)
            } else {
                (fields.get(1).cloned(), 2)
            };
            let key_type = fields.get(key_at).ok_or_else(|| bad("no key"))?;
            let key_b64 = fields.get(key_at + 1).ok_or_else(|| bad("no key"))?;
            let key = PublicKey::from_openssh(&format!("{key_type} {key_b64}"))
                .map_err(|e| bad(&format!("unreadable key: {e}")))?;
            let mut entry = Entry {
                principals,
                key,
                namespaces: None,
                valid_after: None,
                valid_before: None,
                cert_authority: false,
            };
            for opt in options.iter().flat_map(|o| split_options(o)) {
                let (name, value) = match opt.split_once('=') {
                    Some((n, v)) => (
                        n.to_ascii_lowercase(),
                        Some(v.trim_matches('"').to_string()),
                    ),
                    None => (opt.to_ascii_lowercase(), None),
                };
                match (name.as_str(), value) {
                    ("cert-authority", None) => entry.cert_authority = true,
                    ("namespaces", Some(v)) => {
                        entry.namespaces = Some(v.split(',').map(str::to_string).collect())
                    }
                    ("valid-after", Some(v)) => {
                        entry.valid_after =
                            Some(parse_ssh_time(&v).ok_or_else(|| bad("bad valid-after"))?)
                    }
                    ("valid-before", Some(v)) => {
                        entry.valid_before =
                            Some(parse_ssh_time(&v).ok_or_else(|| bad("bad valid-before"))?)
                    }
                    (other, _) => return Err(bad(&format!("unknown option '{other}'"))),
                }
            }
            entries.push(entry);
        }
        Ok(AllowedSigners { entries })
    }
}

/// What a version's signature says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by a trusted key allowed for the version's author at its time.
    Good {
        principal: String,
        key: String,
    },
    Missing,
    /// The signature file cannot be read as an SSH signature.
    Unreadable(String),
    WrongNamespace {
        found: String,
        expected: String,
    },
    /// The key is not in the allowed signers (`in_lake`: `fdl.json` lists it, untrusted).
    UnknownKey {
        key: String,
        in_lake: bool,
    },
    /// The signature does not match the bytes of `version.json`.
    Bad {
        key: String,
    },
    /// The key is trusted, but not for this author, time or namespace.
    NotAllowed {
        key: String,
        why: String,
    },
}

impl Verdict {
    pub fn is_good(&self) -> bool {
        matches!(self, Verdict::Good { .. })
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Good { principal, key } => write!(f, "good signature by {principal} ({key})"),
            Verdict::Missing => f.write_str("no signature (no version.json.sig)"),
            Verdict::Unreadable(why) => write!(f, "unreadable signature: {why}"),
            Verdict::WrongNamespace { found, expected } => {
                write!(f, "signature for namespace '{found}', not '{expected}'")
            }
            Verdict::UnknownKey { key, in_lake: true } => write!(
                f,
                "signed by {key}, which is not in your allowed signers (fdl.json lists it, but a lake's own list is not trusted)"
            ),
            Verdict::UnknownKey { key, in_lake: false } => {
                write!(f, "signed by {key}, which is not in your allowed signers")
            }
            Verdict::Bad { key } => write!(f, "bad signature by {key}: version.json is not what was signed"),
            Verdict::NotAllowed { key, why } => write!(f, "{key} is trusted, but {why}"),
        }
    }
}

/// What is checked for one version.
pub(crate) struct Subject<'a> {
    pub record: &'a [u8],
    pub signature: Option<&'a [u8]>,
    /// The author's email: the principal the key must be allowed for.
    pub principal: &'a str,
    /// The version's time (seconds), for `valid-after` / `valid-before`.
    pub time: u64,
}

/// Checks one version's signature. `lake_signers` are `fdl.json`'s lines, only for messages.
pub(crate) fn verify(
    subject: &Subject,
    trusted: &AllowedSigners,
    namespace: &str,
    lake_signers: &[String],
) -> Verdict {
    let Some(sig) = subject.signature else {
        return Verdict::Missing;
    };
    let sig = match SshSig::from_pem(sig) {
        Ok(s) => s,
        Err(e) => return Verdict::Unreadable(e.to_string()),
    };
    let key_data = sig.public_key().clone();
    let key = format!(
        "{} key {}",
        key_data.algorithm(),
        key_data.fingerprint(HashAlg::Sha256)
    );
    if sig.namespace() != namespace {
        return Verdict::WrongNamespace {
            found: sig.namespace().to_string(),
            expected: namespace.to_string(),
        };
    }
    let matching: Vec<&Entry> = trusted
        .entries
        .iter()
        .filter(|e| !e.cert_authority && *e.key.key_data() == key_data)
        .collect();
    if matching.is_empty() {
        let in_lake = lake_signers.iter().any(|line| {
            AllowedSigners::parse(line)
                .map(|a| a.entries.iter().any(|e| *e.key.key_data() == key_data))
                .unwrap_or(false)
        });
        return Verdict::UnknownKey { key, in_lake };
    }
    if matching[0]
        .key
        .verify(namespace, subject.record, &sig)
        .is_err()
    {
        return Verdict::Bad { key };
    }
    let mut why = String::new();
    for e in &matching {
        if !principal_matches(&e.principals, subject.principal) {
            why = if subject.principal.is_empty() {
                "the version names no author email to match its principals".to_string()
            } else {
                format!(
                    "not for {} (it is allowed for {})",
                    subject.principal, e.principals
                )
            };
            continue;
        }
        if e.namespaces
            .as_ref()
            .is_some_and(|ns| !ns.iter().any(|n| n == namespace))
        {
            why = format!("not for namespace '{namespace}'");
            continue;
        }
        if e.valid_after.is_some_and(|t| subject.time < t)
            || e.valid_before.is_some_and(|t| subject.time > t)
        {
            why = "not at the version's time (valid-after / valid-before)".to_string();
            continue;
        }
        return Verdict::Good {
            principal: subject.principal.to_string(),
            key,
        };
    }
    Verdict::NotAllowed { key, why }
}

fn is_key_type(field: &str) -> bool {
    field.starts_with("ssh-") || field.starts_with("ecdsa-") || field.starts_with("sk-")
}

/// Splits on blanks, keeping double-quoted parts (which may hold blanks) together.
fn split_fields(line: &str) -> Vec<String> {
    split_unquoted(line, char::is_whitespace)
        .into_iter()
        .filter(|f| !f.is_empty())
        .collect()
}

/// Splits `opt1,opt2="a,b"` on commas outside quotes.
fn split_options(s: &str) -> Vec<String> {
    let mut out = split_unquoted(s, |c| c == ',');
    if out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// Splits `s` at each character `is_sep` accepts outside double quotes (quotes are kept).
fn split_unquoted(s: &str, is_sep: impl Fn(char) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in s.chars() {
        if c == '"' {
            quoted = !quoted;
        }
        if !quoted && is_sep(c) {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// ssh's pattern lists: comma-separated, `*` and `?` wildcards, `!` negates (and wins);
/// case-sensitive, as OpenSSH matches principals.
fn principal_matches(patterns: &str, principal: &str) -> bool {
    if principal.is_empty() {
        return false;
    }
    let mut matched = false;
    for p in patterns.split(',') {
        if let Some(neg) = p.strip_prefix('!') {
            if glob(neg, principal) {
                return false;
            }
        } else if glob(p, principal) {
            matched = true;
        }
    }
    matched
}

fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// `YYYYMMDD[HHMM[SS]][Z]` (UTC is assumed here, with or without `Z`) to Unix seconds.
fn parse_ssh_time(s: &str) -> Option<u64> {
    let digits = s.trim_end_matches(['Z', 'z']);
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return None;
    }
    let num = |a: usize, b: usize| digits.get(a..b).and_then(|x| x.parse::<u32>().ok());
    let (y, mo, d) = (num(0, 4)? as i32, num(4, 6)?, num(6, 8)?);
    let (h, mi, sec) = (
        num(8, 10).unwrap_or(0),
        num(10, 12).unwrap_or(0),
        num(12, 14).unwrap_or(0),
    );
    let date = chrono::NaiveDate::from_ymd_opt(y, mo, d)?;
    let t = date.and_hms_opt(h, mi, sec)?;
    Some(t.and_utc().timestamp().max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGk+3kZfDNcPOp+ZTmJx4u9G0mP1PN1rN2VdKQwNvM2G";

    #[test]
    fn allowed_signers_lines() {
        let text = format!(
            "# comment\nalice@example.org {KEY} alice\n\"bob@x,*@team.org\" namespaces=\"fdl,git\",valid-after=20260101 {KEY}\n"
        );
        let a = AllowedSigners::parse(&text).unwrap();
        assert_eq!(a.entries.len(), 2);
        assert_eq!(a.entries[1].principals, "bob@x,*@team.org");
        assert_eq!(
            a.entries[1].namespaces.as_deref(),
            Some(&["fdl".to_string(), "git".to_string()][..])
        );
        assert_eq!(a.entries[1].valid_after, Some(1767225600));
        assert!(AllowedSigners::parse("alice ssh-ed25519 notbase64").is_err());
        assert!(AllowedSigners::parse(&format!("alice bogus-option {KEY}")).is_err());
    }

    #[test]
    fn principals() {
        assert!(principal_matches(
            "*@team.org,!eve@team.org",
            "ann@team.org"
        ));
        assert!(!principal_matches(
            "*@team.org,!eve@team.org",
            "eve@team.org"
        ));
        assert!(principal_matches("a?c@x", "abc@x"));
        assert!(!principal_matches("alice@x", ""));
    }

    #[test]
    fn garbage_and_missing() {
        let a = AllowedSigners::default();
        let s = Subject {
            record: b"{}",
            signature: None,
            principal: "a",
            time: 0,
        };
        assert_eq!(verify(&s, &a, "fdl", &[]), Verdict::Missing);
        let s = Subject {
            record: b"{}",
            signature: Some(b"-----BEGIN SSH SIGNATURE-----\ngarbage"),
            principal: "a",
            time: 0,
        };
        assert!(matches!(verify(&s, &a, "fdl", &[]), Verdict::Unreadable(_)));
    }
}
