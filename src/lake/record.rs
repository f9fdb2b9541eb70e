//! Reading `version.json` tolerantly: the fields the mapping needs, whatever else a writer put.

use serde_json::Value;

use super::names::{printable, VersionId};

/// Keys accepted for the version's time, in order of preference (RFC 3339 strings).
pub const TIME_KEYS: [&str; 4] = ["created_at", "created", "timestamp", "time"];

/// Who made a version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Author {
    pub name: String,
    pub email: String,
}

/// A parsed `version.json`, with its exact bytes kept for the commit's tree.
#[derive(Clone, Debug)]
pub struct VersionRecord {
    pub raw: Vec<u8>,
    pub parents: Vec<VersionId>,
    pub author: Author,
    pub message: Option<String>,
    /// Seconds since the epoch, from the first of [`TIME_KEYS`] that holds an RFC 3339 time.
    pub time: Option<u64>,
    pub sha256: Option<String>,
}

impl VersionRecord {
    /// Parses a record; the error says what is wrong, for a message that names the version.
    pub fn parse(raw: Vec<u8>) -> Result<VersionRecord, String> {
        let value: Value = serde_json::from_slice(&raw)
            .map_err(|e| format!("version.json is not valid JSON: {e}"))?;
        let obj = value
            .as_object()
            .ok_or_else(|| "version.json is not a JSON object".to_string())?;
        let parents = match obj.get("parents").or_else(|| obj.get("parent")) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![parse_parent(s)?],
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    let s = item.as_str().ok_or_else(|| {
                        "'parents' holds something that is not a string".to_string()
                    })?;
                    out.push(parse_parent(s)?);
                }
                out
            }
            Some(_) => return Err("'parents' is neither a list nor a string".to_string()),
        };
        let author = match obj.get("author") {
            Some(Value::String(s)) => parse_author_string(s),
            Some(Value::Object(a)) => Author {
                name: a
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                email: a
                    .get("email")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
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
        let sha256 = obj
            .get("sha256")
            .and_then(Value::as_str)
            .map(str::to_string);
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

fn parse_parent(s: &str) -> Result<VersionId, String> {
    VersionId::parse(s.trim()).map_err(|_| format!("parent '{}' is not a version ID", printable(s)))
}

/// `"Name <email>"` or a plain name.
pub fn parse_author_string(s: &str) -> Author {
    let t = s.trim();
    if let (Some(lt), true) = (t.find('<'), t.ends_with('>')) {
        if lt < t.len() - 1 {
            return Author {
                name: t[..lt].trim().to_string(),
                email: t[lt + 1..t.len() - 1].trim().to_string(),
            };
        }
    }
    Author {
        name: t.to_string(),
        email: String::new(),
    }
}

/// Whole seconds since the epoch (rounded down); times before 1970 become 0.
pub fn parse_rfc3339_seconds(s: &str) -> Option<u64> {
    let t = chrono::DateTime::parse_from_rfc3339(s.trim()).ok()?;
    Some(t.timestamp().max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn refusals() {
        assert!(VersionRecord::parse(b"[1]".to_vec()).is_err());
        assert!(VersionRecord::parse(b"{".to_vec()).is_err());
        assert!(VersionRecord::parse(br#"{"parents":["../../x"]}"#.to_vec()).is_err());
        assert!(VersionRecord::parse(br#"{"parents":[1]}"#.to_vec()).is_err());
    }
}
