//! Reading `version.json` tolerantly: the fields the mapping needs, whatever else a writer put.

use bytes::Bytes;
use serde::de::{MapAccess, SeqAccess};

use super::json::{self, Excerpt, Items, Object, Read, Text, TextOrExcerpt, TextRead};
use super::names::{printable, VersionId};

/// Keys accepted for the version's time, in order of preference (RFC 3339 strings).
pub(crate) const TIME_KEYS: [&str; 4] = ["created_at", "created", "timestamp", "time"];

/// Who made a version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Author {
    pub name: String,
    pub email: String,
}

/// A parsed `version.json`, with its exact bytes kept for the commit's tree.
#[derive(Clone, Debug)]
pub(crate) struct VersionRecord {
    pub raw: Bytes,
    pub parents: Vec<VersionId>,
    pub author: Author,
    pub message: Option<String>,
    /// Seconds since the epoch, from the first of [`TIME_KEYS`] that holds an RFC 3339 time.
    pub time: Option<u64>,
    pub sha256: Option<String>,
}

/// Why a `version.json` is unreadable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RecordError {
    #[error("version.json is not valid JSON: {0}")]
    NotJson(String),
    #[error("version.json is not a JSON object")]
    NotAnObject,
    #[error("'parents' holds something that is not a string")]
    ParentNotAString,
    #[error("'parents' is neither a list nor a string")]
    ParentsOfAnotherType,
    /// The parent as given, made printable.
    #[error("parent '{0}' is not a version ID")]
    BadParent(String),
}

impl VersionRecord {
    /// Parses a record; the error says what is wrong, for a message that names the version.
    pub(crate) fn parse(raw: impl Into<Bytes>) -> Result<VersionRecord, RecordError> {
        let raw: Bytes = raw.into();
        // serde_json's rules are mapping v1's (docs/mapping.md): among them, at most 127 levels
        // of nesting, and an object whose first key is its number token read as a number. The
        // record is read typed (`Fields`), checked as a `serde_json::Value` would be: what the
        // mapping does not read is skipped, not kept.
        let fields = json::read(&raw, FieldsRead)
            .map_err(|e| RecordError::NotJson(e.to_string()))?
            .ok_or(RecordError::NotAnObject)?;
        let parents = match fields.parents.or(fields.parent) {
            None => Vec::new(),
            Some(parents) => parents?,
        };
        let author = match fields.author {
            Some(AuthorField::Str(s)) => parse_author_string(&s),
            Some(AuthorField::Object { name, email }) => Author {
                name: name.and_then(Text::into_string).unwrap_or_default(),
                email: email.and_then(Text::into_string).unwrap_or_default(),
            },
            _ => Author::default(),
        };
        let message = fields.message.and_then(Text::into_string);
        let time = fields
            .times
            .iter()
            .filter_map(|t| t.as_ref().and_then(Text::as_str))
            .find_map(parse_rfc3339_seconds);
        // Any value is kept (a short excerpt of its JSON when it is not a string), so that a
        // check can tell a digest that is not one from no digest.
        let sha256 = fields.sha256.and_then(|v| match v {
            TextOrExcerpt::Null => None,
            TextOrExcerpt::Str(s) => Some(s),
            TextOrExcerpt::Other(json) => Some(crate::redact::excerpt(&json, 80)),
        });
        Ok(VersionRecord {
            raw,
            parents,
            author,
            message,
            time,
            sha256,
        })
    }
}

/// The fields of a record the mapping reads, each as its last occurrence gave it (a repeated
/// key's last value is the one a `Value` keeps); a field's own error waits until the whole
/// record is known to be JSON, as it did when the record was a tree.
#[derive(Default)]
struct Fields {
    parents: Option<Result<Vec<VersionId>, RecordError>>,
    parent: Option<Result<Vec<VersionId>, RecordError>>,
    author: Option<AuthorField>,
    message: Option<Text>,
    times: [Option<Text>; TIME_KEYS.len()],
    sha256: Option<TextOrExcerpt>,
}

/// The top level: `None` when it is not an object (a number's token object included).
struct FieldsRead;

impl<'de> Read<'de> for FieldsRead {
    type Out = Option<Fields>;
    fn other(self) -> Option<Fields> {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Self::Out, A::Error> {
        let mut f = Fields::default();
        while let Some(k) = object.key()? {
            match k.as_str() {
                "parents" => f.parents = Some(object.value(ParentsRead)?),
                "parent" => f.parent = Some(object.value(ParentsRead)?),
                "author" => f.author = Some(object.value(AuthorRead)?),
                "message" => f.message = Some(object.text()?),
                "sha256" => f.sha256 = Some(object.value(Excerpt)?),
                other => match TIME_KEYS.iter().position(|t| *t == other) {
                    Some(i) => f.times[i] = Some(object.text()?),
                    None => object.skip_value()?,
                },
            }
        }
        Ok(Some(f))
    }
}

/// `parents` (or `parent`): null, one ID, or a list of IDs; what it gives, or why not.
struct ParentsRead;

impl<'de> Read<'de> for ParentsRead {
    type Out = Result<Vec<VersionId>, RecordError>;
    fn other(self) -> Self::Out {
        Err(RecordError::ParentsOfAnotherType)
    }
    fn null(self) -> Self::Out {
        Ok(Vec::new())
    }
    fn string(self, s: &str) -> Self::Out {
        parse_parent(s).map(|p| vec![p])
    }
    fn array<A: SeqAccess<'de>>(self, mut items: Items<A>) -> Result<Self::Out, A::Error> {
        // The first item that is not a parent decides, as when the list was walked in order.
        let mut out = Ok(Vec::new());
        while let Some(item) = items.next(TextRead::CHECKED)? {
            if let Ok(list) = &mut out {
                match item {
                    Text::Str(s) => match parse_parent(&s) {
                        Ok(p) => list.push(p),
                        Err(e) => out = Err(e),
                    },
                    _ => out = Err(RecordError::ParentNotAString),
                }
            }
        }
        // Kept for every version of a clone: a list grown by pushing holds room for four.
        if let Ok(list) = &mut out {
            list.shrink_to_fit();
        }
        Ok(out)
    }
}

/// `author`: a string, an object whose `name` and `email` are read, or anything else.
enum AuthorField {
    Str(String),
    Object {
        name: Option<Text>,
        email: Option<Text>,
    },
    Other,
}

struct AuthorRead;

impl<'de> Read<'de> for AuthorRead {
    type Out = AuthorField;
    fn other(self) -> AuthorField {
        AuthorField::Other
    }
    fn string(self, s: &str) -> AuthorField {
        AuthorField::Str(s.to_string())
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<AuthorField, A::Error> {
        let (mut name, mut email) = (None, None);
        while let Some(k) = object.key()? {
            match k.as_str() {
                "name" => name = Some(object.text()?),
                "email" => email = Some(object.text()?),
                _ => object.skip_value()?,
            }
        }
        Ok(AuthorField::Object { name, email })
    }
}

fn parse_parent(s: &str) -> Result<VersionId, RecordError> {
    VersionId::parse(trim_blanks(s)).map_err(|_| RecordError::BadParent(printable(s)))
}

/// The blanks trimmed from author strings and IDs: ASCII space, tab, CR and LF only, so that
/// every implementation trims the same characters (docs/mapping.md).
fn trim_blanks(s: &str) -> &str {
    s.trim_matches([' ', '\t', '\r', '\n'])
}

/// `"Name <email>"` or a plain name.
pub(crate) fn parse_author_string(s: &str) -> Author {
    let t = trim_blanks(s);
    if let (Some(lt), true) = (t.find('<'), t.ends_with('>')) {
        if lt < t.len() - 1 {
            return Author {
                name: trim_blanks(&t[..lt]).to_string(),
                email: trim_blanks(&t[lt + 1..t.len() - 1]).to_string(),
            };
        }
    }
    Author {
        name: t.to_string(),
        email: String::new(),
    }
}

/// Whole seconds since the epoch of an RFC 3339 `date-time` (section 5.6), rounded down;
/// times before 1970 become 0. Strict, so that every implementation accepts the same strings:
/// `YYYY-MM-DD`, `T` or `t`, `hh:mm:ss`, an optional fraction (`.` and digits, dropped), then
/// `Z`, `z` or `+hh:mm` / `-hh:mm`; no blanks; each field in its range (seconds up to 60).
pub(crate) fn parse_rfc3339_seconds(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let sep = |at: usize, c: &[u8]| b.get(at).is_some_and(|x| c.contains(x));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt") && sep(13, b":") && sep(16, b":")) {
        return None;
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if !(1..=days_in_month).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut at = 19;
    if sep(at, b".") {
        at += 1;
        let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        at += digits;
    }
    let offset = match b.get(at)? {
        b'Z' | b'z' if at + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if at + 6 == b.len() && sep(at + 3, b":") => {
            let (oh, om) = (num(at + 1, 2)?, num(at + 4, 2)?);
            if oh > 23 || om > 59 {
                return None;
            }
            let o = oh * 3600 + om * 60;
            if *sign == b'+' {
                o
            } else {
                -o
            }
        }
        _ => return None,
    };
    let seconds =
        days_from_civil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offset;
    Some(seconds.max(0) as u64)
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146097 + doe - 719468
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// The reader as it was, a tree of the whole record: the typed reader must give what it
    /// gave, refusals and their words included, on every input.
    fn parse_as_tree(raw: Vec<u8>) -> Result<VersionRecord, RecordError> {
        let value: Value =
            serde_json::from_slice(&raw).map_err(|e| RecordError::NotJson(e.to_string()))?;
        let obj = value.as_object().ok_or(RecordError::NotAnObject)?;
        let parents = match obj.get("parents").or_else(|| obj.get("parent")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![parse_parent(s)?],
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let s = item.as_str().ok_or(RecordError::ParentNotAString)?;
                    out.push(parse_parent(s)?);
                }
                out
            }
            Some(_) => return Err(RecordError::ParentsOfAnotherType),
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
        let author = match obj.get("author") {
            Some(Value::String(s)) => parse_author_string(s),
            Some(Value::Object(a)) => Author {
                name: text(a.get("name")),
                email: text(a.get("email")),
            },
            _ => Author::default(),
        };
        let message = obj
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string);
        let time = TIME_KEYS
            .iter()
            .filter_map(|k| obj.get(*k).and_then(Value::as_str))
            .find_map(parse_rfc3339_seconds);
        let sha256 = obj.get("sha256").and_then(|v| match v {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            other => Some(crate::redact::excerpt(&other.to_string(), 80)),
        });
        Ok(VersionRecord {
            raw: raw.into(),
            parents,
            author,
            message,
            time,
            sha256,
        })
    }

    fn same_as_tree(raw: &[u8]) {
        let typed = format!("{:?}", VersionRecord::parse(raw.to_vec()));
        let tree = format!("{:?}", parse_as_tree(raw.to_vec()));
        assert_eq!(typed, tree, "{}", String::from_utf8_lossy(raw));
    }

    fn base64(text: &str) -> Vec<u8> {
        let digit = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            _ => 63,
        };
        let digits: Vec<u8> = text.bytes().filter(|c| *c != b'=').map(digit).collect();
        let mut out = Vec::new();
        for chunk in digits.chunks(4) {
            let n = chunk
                .iter()
                .enumerate()
                .fold(0u32, |n, (i, d)| n | (u32::from(*d) << (18 - 6 * i)));
            out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
        }
        out
    }

    /// Every record of mapping v1's vectors, and the edges of the JSON library, read the same.
    #[test]
    fn the_typed_reader_reads_what_the_tree_read() {
        let vectors: Value =
            serde_json::from_str(include_str!("../../docs/mapping-vectors.json")).unwrap();
        let mut seen = 0;
        for case in vectors["cases"].as_array().unwrap() {
            for (path, file) in case["files"].as_object().unwrap() {
                if !path.ends_with("version.json") {
                    continue;
                }
                let raw = match file {
                    Value::String(s) => s.clone().into_bytes(),
                    f if f.get("base64").is_some() => base64(f["base64"].as_str().unwrap()),
                    f => f["text"].as_str().unwrap().as_bytes().to_vec(),
                };
                same_as_tree(&raw);
                seen += 1;
            }
        }
        assert!(seen > 40, "{seen} records");
        let id = "0190f3a2-7b4c-7d2e-8f10-123456789abc";
        let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let cases = [
            format!(r#"{{"parents": null, "parent": "{id}"}}"#),
            format!(r#"{{"parent": "{id}"}}"#),
            format!(r#"{{"parents": ["{id}", 1, "x"]}}"#),
            format!(r#"{{"parents": ["{id}", "x", 1]}}"#),
            format!(r#"{{"parents": 1, "parents": ["{id}"]}}"#),
            format!(r#"{{"parents": ["{id}"], "parents": {{}}}}"#),
            r#"{"parents": true}"#.to_string(),
            r#"{"parents": [{"$serde_json::private::Number": "x"}]}"#.to_string(),
            format!(r#"{{"parents": ["{id}", {{"$serde_json::private::Number": "1"}}]}}"#),
            r#"{"parents": ["\ud800"]}"#.to_string(),
            format!(r#"{{"x": {}, "message": "m"}}"#, deep(127)),
            format!(r#"{{"x": {}, "message": "m"}}"#, deep(126)),
            format!(r#"{{"message": {}, "message": "m"}}"#, deep(127)),
            format!(r#"{{"parents": [{}], "parents": []}}"#, deep(126)),
            r#"{"x": "\ud800", "message": "m"}"#.to_string(),
            r#"{"x": {"y": ["\udc00"]}, "message": "m"}"#.to_string(),
            r#"{"message": "\udfff", "message": "m"}"#.to_string(),
            r#"{"author": {"$serde_json::private::Number": "5"}}"#.to_string(),
            r#"{"author": {"$serde_json::private::Number": "z"}}"#.to_string(),
            r#"{"author": {"name": 1, "name": "N", "email": "e", "email": null}}"#.to_string(),
            r#"{"author": ["A <a@x>"], "message": 5}"#.to_string(),
            r#"{"author": " A <a@x> ", "author": 7}"#.to_string(),
            r#"{"created": "2026-01-02T03:04:05Z", "created_at": 5, "time": "1970-01-01T00:00:09Z"}"#
                .to_string(),
            r#"{"time": "2026-01-02T03:04:05Z", "created_at": "no", "created_at": "1999-01-01T00:00:00Z"}"#
                .to_string(),
            r#"{"sha256": null}"#.to_string(),
            r#"{"sha256": "ab"}"#.to_string(),
            r#"{"sha256": 12}"#.to_string(),
            r#"{"sha256": 1e400}"#.to_string(),
            r#"{"sha256": [1, "two", {"three": [null, true]}], "sha256": {"k": "v"}}"#.to_string(),
            format!(r#"{{"sha256": ["{}"]}}"#, "é".repeat(200)),
            format!(r#"{{"sha256": {{"{}": 1}}}}"#, "k".repeat(300)),
            format!(r#"{{"sha256": "{}"}}"#, "k".repeat(300)),
            r#"{"sha256": {"$serde_json::private::Number": "3.5"}}"#.to_string(),
            r#"{"$serde_json::private::Number": "1"}"#.to_string(),
            r#"{"$serde_json::private::Number": "1", "message": "m"}"#.to_string(),
            r#"{"$serde_json::private::Number": "one"}"#.to_string(),
            r#"{"$serde_json::private::Number": 1}"#.to_string(),
            r#"{"message": "m", "$serde_json::private::Number": "one"}"#.to_string(),
            r#"{"$serde_json::private::RawValue": "1"}"#.to_string(),
            r#"{"x": {"$serde_json::private::RawValue": "1"}}"#.to_string(),
            r#"[1, "\ud800"]"#.to_string(),
            "[1]".to_string(),
            "\"s\"".to_string(),
            "5".to_string(),
            "null".to_string(),
            "{}".to_string(),
            "{} ".to_string(),
            "{}x".to_string(),
            "".to_string(),
            r#"{"message": "m",}"#.to_string(),
            r#"{"x": [1 2]}"#.to_string(),
        ];
        for raw in cases {
            same_as_tree(raw.as_bytes());
        }
        for raw in [
            &b"{\"x\": \"\xff\", \"message\": \"m\"}"[..],
            b"{\"message\": \"\xc3\", \"message\": \"m\"}",
            b"{\"\xff\": 1}",
            b"\xef\xbb\xbf{}",
        ] {
            same_as_tree(raw);
        }
    }

    #[test]
    fn tolerant_fields() {
        let r = VersionRecord::parse(
            br#"{"parents":["0190F3A2-7B4C-7D2E-8F10-123456789ABC"],"author":"Zo\u00eb <z@x.org>","message":"m","created_at":"2026-01-02T03:04:05.9+01:00","extra":{"a":1}}"#.to_vec(),
        )
        .unwrap();
        assert_eq!(
            r.parents[0].as_str(),
            "0190f3a2-7b4c-7d2e-8f10-123456789abc"
        );
        assert_eq!(
            r.author,
            Author {
                name: "Zoë".into(),
                email: "z@x.org".into()
            }
        );
        assert_eq!(r.time, Some(1767319445));
        let r = VersionRecord::parse(br#"{"author":{"name":"A","email":"a@b"}}"#.to_vec()).unwrap();
        assert_eq!(r.author.email, "a@b");
        assert!(r.parents.is_empty());
        let r = VersionRecord::parse(
            br#"{"author":"Plain Name","time":"not a time","timestamp":"1960-01-01T00:00:00Z"}"#
                .to_vec(),
        )
        .unwrap();
        assert_eq!(r.author.name, "Plain Name");
        assert_eq!(r.time, Some(0));
    }

    #[test]
    fn rfc3339_is_strict_and_exact() {
        assert_eq!(parse_rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_rfc3339_seconds("2024-07-27T10:00:00Z"),
            Some(1722074400)
        );
        assert_eq!(
            parse_rfc3339_seconds("2024-07-28t12:30:45.999+02:00"),
            Some(1722162645)
        );
        assert_eq!(
            parse_rfc3339_seconds("2024-02-29T23:59:60z"),
            Some(1709251200)
        );
        assert_eq!(
            parse_rfc3339_seconds("2000-03-01T00:00:00-00:30"),
            Some(951870600)
        );
        for bad in [
            " 2024-07-27T10:00:00Z",
            "2024-07-27 10:00:00Z",
            "2024-07-27T10:00:00",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-07-27T24:00:00Z",
            "2024-07-27T10:00:00.Z",
            "2024-07-27T10:00:00+0200",
            "2024-07-27T10:00:00+02:00 ",
        ] {
            assert_eq!(parse_rfc3339_seconds(bad), None, "{bad}");
        }
        // Times before 1970 are 0; huge numbers do not break the record.
        assert_eq!(parse_rfc3339_seconds("1969-12-31T23:59:59Z"), Some(0));
        assert!(VersionRecord::parse(br#"{"size": 1e400, "message": "m"}"#.to_vec()).is_ok());
        let a = parse_author_string("Ada\u{a0} <a@x>");
        assert_eq!(a.name, "Ada\u{a0}");
    }

    /// Pinned here too, so that a serde_json upgrade that moves them fails fast.
    #[test]
    fn json_library_edges() {
        let deep = |levels: usize| {
            let inner = levels - 1;
            format!("{{\"x\":{}{}}}", "[".repeat(inner), "]".repeat(inner)).into_bytes()
        };
        assert!(VersionRecord::parse(deep(127)).is_ok());
        assert!(VersionRecord::parse(deep(128)).is_err());
        assert!(VersionRecord::parse(b"\xef\xbb\xbf{}".to_vec()).is_err());
        let token = br#"{"$serde_json::private::Number": "1"}"#.to_vec();
        assert!(VersionRecord::parse(token).is_err());
        let r = VersionRecord::parse(br#"{"message": 5, "message": "last"}"#.to_vec()).unwrap();
        assert_eq!(r.message.as_deref(), Some("last"));
    }

    #[test]
    fn refusals() {
        assert!(VersionRecord::parse(b"[1]".to_vec()).is_err());
        assert!(VersionRecord::parse(b"{".to_vec()).is_err());
        assert!(VersionRecord::parse(br#"{"parents":["../../x"]}"#.to_vec()).is_err());
        assert!(VersionRecord::parse(br#"{"parents":[1]}"#.to_vec()).is_err());
    }
}
