//! `refs.json`: the refs read from its accepted shapes, each name once, and rendered in the
//! shape a lake already has, its host's own entries kept.

use serde::de::{MapAccess, SeqAccess};

use super::json::{self, Items, Object, Read};
use super::names::printable;
pub(crate) use super::refs_render::render_refs_json;

/// Why `refs.json` gives no refs (names made printable).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RefsJsonError {
    #[error("refs.json is not valid JSON: {0}")]
    NotJson(String),
    #[error("refs.json is not a JSON object")]
    NotAnObject,
    #[error("refs.json lists a ref without a name")]
    Nameless,
    #[error("refs.json gives {0} no version")]
    NoVersion(String),
    #[error("refs.json names {name} twice, with different versions ({first} and {then})")]
    Twice {
        name: String,
        first: String,
        then: String,
    },
}

/// Every `(ref name, version)` of a `refs.json`, each name once. Accepted shapes, all with
/// unknown keys ignored: `{"refs/heads/main": "<id>", ...}`, the same map under a `"refs"` key,
/// `"refs"` as a list of `{"name"|"ref": ..., "version"|"id": ...}`, and
/// `{"heads": {...}, "tags": {...}}` with short names. A value may also be an object with a
/// `"version"` or `"id"` key. A name given twice with different versions (a repeated JSON key
/// included) is an error: a reader cannot tell which one the writers meant.
pub(crate) fn parse_refs_json(raw: &[u8]) -> Result<Vec<(String, String)>, RefsJsonError> {
    let top = json::read(raw, TopRead).map_err(|e| RefsJsonError::NotJson(e.to_string()))?;
    let Some(top) = top else {
        return Err(RefsJsonError::NotAnObject);
    };
    let mut out = Vec::new();
    match top.refs {
        Some(Refs::Map(map)) => collect_map(map, "", &mut out)?,
        Some(Refs::List(list)) => {
            for item in list {
                let name = item.name.ok_or(RefsJsonError::Nameless)?;
                let version = version_of(item.version, &name)?;
                out.push((name, version));
            }
        }
        _ => {
            collect_map(top.flat, "", &mut out)?;
            for (map, prefix) in [(top.heads, "refs/heads/"), (top.tags, "refs/tags/")] {
                if let Some(Refs::Map(map)) = map {
                    collect_map(map, prefix, &mut out)?;
                }
            }
        }
    }
    once_each(out)
}

/// Drops repeats of a name with the same version; refuses a name with two versions.
fn once_each(pairs: Vec<(String, String)>) -> Result<Vec<(String, String)>, RefsJsonError> {
    let mut seen: std::collections::HashMap<String, String> = Default::default();
    let mut out = Vec::with_capacity(pairs.len());
    for (name, version) in pairs {
        let key = version.trim().to_ascii_lowercase();
        match seen.get(&name) {
            Some(first) if *first == key => {}
            Some(first) => {
                return Err(RefsJsonError::Twice {
                    name: printable(&name),
                    first: printable(first),
                    then: printable(&key),
                })
            }
            None => {
                seen.insert(name.clone(), key);
                out.push((name, version));
            }
        }
    }
    Ok(out)
}

fn collect_map(
    map: Vec<(String, Option<String>)>,
    prefix: &str,
    out: &mut Vec<(String, String)>,
) -> Result<(), RefsJsonError> {
    for (name, v) in map {
        let full = format!("{prefix}{name}");
        if !full.starts_with("refs/") {
            continue;
        }
        let version = version_of(v, &full)?;
        out.push((full, version));
    }
    Ok(())
}

fn version_of(v: Option<String>, name: &str) -> Result<String, RefsJsonError> {
    v.ok_or_else(|| RefsJsonError::NoVersion(printable(name)))
}

/// What a reader keeps of `refs.json`, read typed: every other value is skipped (checked as
/// JSON, kept nowhere), so that a host's large field costs a pass, not a tree. Each key's
/// first value counts (`refs`, `heads`, `tags`), and every full ref name at the top, repeats
/// included, so that a name given twice with two versions is refused.
#[derive(Default)]
struct Top {
    refs: Option<Refs>,
    heads: Option<Refs>,
    tags: Option<Refs>,
    flat: Vec<(String, Option<String>)>,
}

/// A map of names to their versions (`None`: the entry gives none), a list of items, or
/// something else.
enum Refs {
    Map(Vec<(String, Option<String>)>),
    List(Vec<Item>),
    Other,
}

/// An item of a `refs` list: its name (`name`, else `ref`) and version.
struct Item {
    name: Option<String>,
    version: Option<String>,
}

/// Every reader of `refs.json` takes an object whose first key is serde_json's number token as
/// any object, as the file's readers always have (`json::Read::numbers_checked`).
macro_rules! numbers_unchecked {
    () => {
        fn numbers_checked(&self) -> bool {
            false
        }
    };
}

struct TopRead;

impl<'de> Read<'de> for TopRead {
    type Out = Option<Top>;
    numbers_unchecked!();
    fn other(self) -> Option<Top> {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Option<Top>, A::Error> {
        let mut top = Top::default();
        while let Some(k) = object.key()? {
            match k.as_str() {
                "refs" if top.refs.is_none() => top.refs = Some(object.value(RefsRead)?),
                "heads" if top.heads.is_none() => top.heads = Some(object.value(RefsRead)?),
                "tags" if top.tags.is_none() => top.tags = Some(object.value(RefsRead)?),
                name if name.starts_with("refs/") => {
                    let version = object.value(VersionRead)?;
                    top.flat.push((k, version));
                }
                _ => object.skip_value()?,
            }
        }
        Ok(Some(top))
    }
}

struct RefsRead;

impl<'de> Read<'de> for RefsRead {
    type Out = Refs;
    numbers_unchecked!();
    fn other(self) -> Refs {
        Refs::Other
    }
    fn array<A: SeqAccess<'de>>(self, mut items: Items<A>) -> Result<Refs, A::Error> {
        let mut out = Vec::new();
        while let Some(item) = items.next(ItemRead)? {
            out.push(item);
        }
        Ok(Refs::List(out))
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Refs, A::Error> {
        let mut out = Vec::new();
        while let Some(k) = object.key()? {
            out.push((k, object.value(VersionRead)?));
        }
        Ok(Refs::Map(out))
    }
}

/// A ref's value: a version as a string, or an object's first `version` (else first `id`)
/// when it is a string.
struct VersionRead;

impl<'de> Read<'de> for VersionRead {
    type Out = Option<String>;
    numbers_unchecked!();
    fn other(self) -> Option<String> {
        None
    }
    fn string(self, s: &str) -> Option<String> {
        Some(s.to_string())
    }
    fn object<A: MapAccess<'de>>(self, object: Object<A>) -> Result<Option<String>, A::Error> {
        Ok(ItemRead.object(object)?.version)
    }
}

struct ItemRead;

impl<'de> Read<'de> for ItemRead {
    type Out = Item;
    numbers_unchecked!();
    fn other(self) -> Item {
        Item {
            name: None,
            version: None,
        }
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Item, A::Error> {
        // Each key's first value, as the first of repeated keys counts.
        let [mut name, mut reference, mut version, mut id] = [None, None, None, None];
        while let Some(k) = object.key()? {
            let slot = match k.as_str() {
                "name" => &mut name,
                "ref" => &mut reference,
                "version" => &mut version,
                "id" => &mut id,
                _ => {
                    object.skip_value()?;
                    continue;
                }
            };
            let value = object.text()?;
            slot.get_or_insert(value.into_string());
        }
        Ok(Item {
            name: name.or(reference).flatten(),
            version: version.or(id).flatten(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lake::VersionId;
    use serde_json::Value;

    #[test]
    fn refs_json_shapes() {
        let id = "0190f3a2-7b4c-7d2e-8f10-123456789abc";
        let flat = format!(
            r#"{{"refs/heads/main":"{id}","refs/tags/v1":{{"version":"{id}"}},"HEAD":"ref: refs/heads/main"}}"#
        );
        assert_eq!(parse_refs_json(flat.as_bytes()).unwrap().len(), 2);
        let nested = format!(r#"{{"heads":{{"main":"{id}"}},"tags":{{"v1":"{id}"}}}}"#);
        let got = parse_refs_json(nested.as_bytes()).unwrap();
        assert!(got.contains(&("refs/tags/v1".to_string(), id.to_string())));
        let list = format!(r#"{{"refs":[{{"name":"refs/heads/main","id":"{id}"}}]}}"#);
        assert_eq!(
            parse_refs_json(list.as_bytes()).unwrap()[0].0,
            "refs/heads/main"
        );
        let rendered = render_refs_json(
            None,
            &[("refs/heads/main".into(), VersionId::parse(id).unwrap())],
        );
        assert_eq!(parse_refs_json(&rendered).unwrap()[0].1, id);
        let old = format!(
            r#"{{"refs/requests/7":"{id}","refs/heads/gone":"{id}","HEAD":"ref: refs/heads/main"}}"#
        );
        let kept = String::from_utf8(render_refs_json(Some(old.as_bytes()), &[])).unwrap();
        assert!(
            kept.contains("refs/requests/7") && kept.contains("HEAD"),
            "{kept}"
        );
        assert!(!kept.contains("gone"), "{kept}");
    }

    #[test]
    fn every_shape_keeps_the_hosts_entries_and_its_shape() {
        let id = "0190f3a2-7b4c-7d2e-8f10-123456789abc";
        let new = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").unwrap();
        let ours = [
            ("refs/heads/main".to_string(), new.clone()),
            ("refs/tags/v2".to_string(), new.clone()),
        ];
        for old in [
            format!(r#"{{"refs":{{"refs/requests/7":"{id}","refs/heads/gone":"{id}"}},"x":1}}"#),
            format!(
                r#"{{"refs":[{{"ref":"refs/requests/7","id":"{id}"}},{{"ref":"refs/heads/gone","id":"{id}"}}],"x":1}}"#
            ),
            format!(r#"{{"heads":{{"gone":"{id}"}},"tags":{{}},"refs/requests/7":"{id}","x":1}}"#),
            format!(r#"{{"refs/requests/7":"{id}","refs/heads/gone":"{id}","x":1}}"#),
        ] {
            let out = render_refs_json(Some(old.as_bytes()), &ours);
            let got = parse_refs_json(&out).unwrap();
            let text = String::from_utf8(out.clone()).unwrap();
            assert!(
                got.contains(&("refs/requests/7".into(), id.into())),
                "{text}"
            );
            assert!(
                got.contains(&("refs/heads/main".into(), new.to_string())),
                "{text}"
            );
            assert!(
                got.contains(&("refs/tags/v2".into(), new.to_string())),
                "{text}"
            );
            assert!(
                !text.contains("gone") && text.contains("\"x\": 1"),
                "{text}"
            );
            // The same refs again: the same bytes, so a push that changes nothing writes nothing.
            assert_eq!(render_refs_json(Some(&out), &ours), out, "{text}");
            let shape = |s: &str| serde_json::from_str::<Value>(s).unwrap()["refs"].is_array();
            assert_eq!(shape(&old), shape(&text));
        }
    }

    /// Fields a host keeps beside a ref's version stay while the ref holds that version, in
    /// every shape; a ref that moves gets a fresh entry of the same shape.
    #[test]
    fn a_hosts_fields_beside_a_refs_version_stay_while_it_holds_that_version() {
        let id = "0190f3a2-7b4c-7d2e-8f10-123456789abc";
        let new = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").unwrap();
        let ours = [
            ("refs/heads/main".to_string(), VersionId::parse(id).unwrap()),
            ("refs/heads/moved".to_string(), new.clone()),
        ];
        for old in [
            format!(
                r#"{{"refs/heads/main":{{"version":"{id}","by":"host"}},"refs/heads/moved":{{"version":"{id}","by":"host"}}}}"#
            ),
            format!(
                r#"{{"refs":{{"refs/heads/main":{{"id":"{id}","by":"host"}},"refs/heads/moved":{{"id":"{id}","by":"host"}}}}}}"#
            ),
            format!(
                r#"{{"refs":[{{"name":"refs/heads/main","version":"{id}","by":"host"}},{{"name":"refs/heads/moved","version":"{id}","by":"host"}}]}}"#
            ),
            format!(
                r#"{{"heads":{{"main":{{"version":"{id}","by":"host"}},"moved":{{"version":"{id}","by":"host"}}}},"tags":{{}}}}"#
            ),
        ] {
            let out = render_refs_json(Some(old.as_bytes()), &ours);
            let text = String::from_utf8(out.clone()).unwrap();
            assert_eq!(text.matches("\"by\": \"host\"").count(), 1, "{text}");
            let got = parse_refs_json(&out).unwrap();
            assert!(
                got.contains(&("refs/heads/main".into(), id.into())),
                "{text}"
            );
            let moved = ("refs/heads/moved".into(), new.to_string());
            assert!(got.contains(&moved), "{text}");
            assert!(
                !text.contains("\"refs/heads/moved\": \""),
                "still an object: {text}"
            );
        }
    }

    #[test]
    fn refs_json_names_each_ref_once() {
        let (a, b) = (
            "0190f3a2-7b4c-7d2e-8f10-123456789abc",
            "0190f3a2-7b4c-7d2e-8f10-123456789abd",
        );
        let key_twice = format!(r#"{{"refs/heads/main":"{a}","refs/heads/main":"{b}"}}"#);
        let err = parse_refs_json(key_twice.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains("names refs/heads/main twice"), "{err}");
        let flat_and_nested = format!(r#"{{"refs/heads/main":"{a}","heads":{{"main":"{b}"}}}}"#);
        assert!(parse_refs_json(flat_and_nested.as_bytes()).is_err());
        let list = format!(
            r#"{{"refs":[{{"name":"refs/tags/v1","id":"{a}"}},{{"ref":"refs/tags/v1","version":"{b}"}}]}}"#
        );
        assert!(parse_refs_json(list.as_bytes()).is_err());
        // The same version twice is one ref.
        let same = format!(
            r#"{{"refs/heads/main":"{a}","heads":{{"main":"{}"}}}}"#,
            a.to_uppercase()
        );
        assert_eq!(parse_refs_json(same.as_bytes()).unwrap().len(), 1);
        assert!(parse_refs_json(br#"{"refs/heads/main": 1}"#)
            .unwrap_err()
            .to_string()
            .contains("no version"));
        // What is not read is skipped, still checked as JSON.
        let skipped = format!(r#"{{"x": [[{{"y": 0}}], 1e400], "refs/heads/main": "{a}"}}"#);
        assert_eq!(parse_refs_json(skipped.as_bytes()).unwrap().len(), 1);
        for bad in [r#"{"x": "\ud800"}"#, r#"{"x": [1,]}"#] {
            let err = parse_refs_json(bad.as_bytes()).unwrap_err();
            assert!(err.to_string().contains("not valid JSON"), "{err}");
        }
        let deep = format!(r#"{{"x": {}{}}}"#, "[".repeat(200), "]".repeat(200));
        assert!(parse_refs_json(deep.as_bytes()).is_err());
        // The first of a repeated "refs" counts; a string item has no name.
        let twice = format!(r#"{{"refs": {{"refs/heads/a": "{a}"}}, "refs": 5}}"#);
        assert_eq!(
            parse_refs_json(twice.as_bytes()).unwrap()[0].0,
            "refs/heads/a"
        );
        assert!(parse_refs_json(br#"{"refs": ["refs/heads/a"]}"#)
            .unwrap_err()
            .to_string()
            .contains("without a name"));
        let first_version = format!(r#"{{"refs/heads/a": {{"version": 1, "id": "{a}"}}}}"#);
        assert!(parse_refs_json(first_version.as_bytes()).is_err());
        assert!(parse_refs_json(b"[]")
            .unwrap_err()
            .to_string()
            .contains("not a JSON object"));
    }
}
