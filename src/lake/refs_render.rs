//! `refs.json` rendered in the shape the lake's file has: the branches and tags rewritten, and
//! every other value the file holds (a host's entries, unknown keys) kept as its own text,
//! never made a tree, so that a host's large field costs its bytes and no more.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::json::{self, Skip};
use super::names::VersionId;

/// The `refs.json` this helper writes, in the shape the lake's file has (a flat map when
/// there is none): the branches and tags are `refs`, sorted; everything else the file holds
/// (a host's own entries such as `refs/requests/7`, `HEAD`, unknown keys) is kept as it is,
/// in every shape. Pretty-printed, ending in a newline.
pub(crate) fn render_refs_json(existing: Option<&[u8]>, refs: &[(String, VersionId)]) -> Vec<u8> {
    let old = existing.and_then(members_of_file).unwrap_or_default();
    let is = |key: &str, open: u8| {
        old.iter()
            .any(|(k, v)| k == key && v.as_bytes().first() == Some(&open))
    };
    let new = if is("refs", b'{') {
        nested_map(old, refs)
    } else if is("refs", b'[') {
        nested_list(old, refs)
    } else if is("heads", b'{') || is("tags", b'{') {
        short_names(old, refs)
    } else {
        Out::Object(flat_map(old, refs))
    };
    let mut out = String::new();
    new.write(&mut out, 0);
    out.push('\n');
    out.into_bytes()
}

/// What is written: values kept as their text, values of ours, and the objects and lists
/// that hold them.
enum Out<'a> {
    Raw(&'a str),
    Value(Value),
    Object(Vec<(String, Out<'a>)>),
    Array(Vec<Out<'a>>),
}

impl Out<'_> {
    /// As serde_json's pretty printer writes (two spaces a level), a kept text as it was.
    fn write(&self, out: &mut String, level: usize) {
        let pad = |out: &mut String, level: usize| out.push_str(&"  ".repeat(level));
        match self {
            Out::Raw(text) => out.push_str(text),
            Out::Value(Value::Object(m)) => {
                let entries = m.iter().map(|(k, v)| (k.clone(), Out::Value(v.clone())));
                Out::Object(entries.collect()).write(out, level)
            }
            Out::Value(Value::Array(a)) => {
                Out::Array(a.iter().cloned().map(Out::Value).collect()).write(out, level)
            }
            Out::Value(v) => out.push_str(&v.to_string()),
            Out::Object(entries) if entries.is_empty() => out.push_str("{}"),
            Out::Object(entries) => {
                out.push('{');
                for (i, (k, v)) in entries.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    pad(out, level + 1);
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push_str(": ");
                    v.write(out, level + 1);
                }
                out.push('\n');
                pad(out, level);
                out.push('}');
            }
            Out::Array(items) if items.is_empty() => out.push_str("[]"),
            Out::Array(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    pad(out, level + 1);
                    v.write(out, level + 1);
                }
                out.push('\n');
                pad(out, level);
                out.push(']');
            }
        }
    }
}

/// The members of the file's top object, each value as its text; a key given twice keeps its
/// first place and its last value, as a `serde_json::Value` keeps it. `None` for a file that
/// is not a JSON object.
fn members_of_file(raw: &[u8]) -> Option<Vec<(String, &str)>> {
    json::read(raw, Skip(true)).ok()?;
    let text = std::str::from_utf8(raw).ok()?;
    let start = blank_end(text, 0);
    (text.as_bytes().get(start) == Some(&b'{')).then(|| members(text, start))
}

/// The members of the object at `at` of valid JSON, repeated keys folded as `Value` folds them.
/// Each key's place is looked up by hash: a search of the members so far made a refs.json of
/// 5,000 tags cost 12.5 million comparisons a render, half a racing push's CPU.
fn members(text: &str, at: usize) -> Vec<(String, &str)> {
    let mut out: Vec<(String, &str)> = Vec::new();
    let mut place: HashMap<String, usize> = HashMap::new();
    for (key, value) in spans(text, at) {
        let key: String = serde_json::from_str(key).unwrap_or_default();
        match place.get(&key) {
            Some(&i) => out[i].1 = value,
            None => {
                place.insert(key.clone(), out.len());
                out.push((key, value));
            }
        }
    }
    out
}

/// The items of the list at `at` of valid JSON.
fn items(text: &str, at: usize) -> Vec<&str> {
    spans(text, at).into_iter().map(|(_, v)| v).collect()
}

/// The (key, value) texts of the object or list at `at` (keys empty for a list). The text is
/// valid JSON: a value ends where its brackets close, outside strings.
fn spans(text: &str, at: usize) -> Vec<(&str, &str)> {
    let b = text.as_bytes();
    let object = b[at] == b'{';
    let mut out = Vec::new();
    let mut i = blank_end(text, at + 1);
    while i < b.len() && b[i] != b'}' && b[i] != b']' {
        let mut key = "";
        if object {
            let end = value_end(b, i);
            key = &text[i..end];
            i = blank_end(text, end) + 1; // the colon
            i = blank_end(text, i);
        }
        let end = value_end(b, i);
        out.push((key, &text[i..end]));
        i = blank_end(text, end);
        if b.get(i) == Some(&b',') {
            i = blank_end(text, i + 1);
        }
    }
    out
}

fn blank_end(text: &str, mut i: usize) -> usize {
    let b = text.as_bytes();
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Where the value starting at `i` ends.
fn value_end(b: &[u8], mut i: usize) -> usize {
    let mut depth = 0usize;
    let mut in_string = false;
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => {
                    in_string = false;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                _ => {}
            }
        } else {
            match c {
                b'"' => in_string = true,
                b'{' | b'[' => depth += 1,
                b'}' | b']' if depth == 0 => return i,
                b'}' | b']' => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                b',' | b' ' | b'\t' | b'\n' | b'\r' | b':' if depth == 0 => return i,
                _ => {}
            }
        }
        i += 1;
    }
    i
}

/// A value of ours to look into (a managed ref's entry: small, as this helper writes it).
fn tree(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

fn is_managed(name: &str) -> bool {
    name.starts_with("refs/heads/") || name.starts_with("refs/tags/")
}

/// A ref's entry: the file's own while it still holds `id` (fields a host keeps beside the
/// version, `{"version": ..., "approved_by": ...}`, describe that version and are kept with it),
/// else a new one in the shape of the old (`{"version": ...}` or `{"id": ...}`) or a string.
fn entry_for(old: Option<&Value>, id: &VersionId) -> Value {
    let id = id.to_string();
    let holds = |v: Option<&Value>| {
        v.and_then(Value::as_str)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case(&id))
    };
    match old {
        Some(Value::String(_)) if holds(old) => Value::String(id),
        Some(Value::Object(o)) => {
            let key = match (o.contains_key("version"), o.contains_key("id")) {
                (false, true) => "id",
                _ => "version",
            };
            if holds(o.get(key)) {
                return Value::Object(o.clone());
            }
            let mut fresh = Map::new();
            fresh.insert(key.to_string(), Value::String(id));
            Value::Object(fresh)
        }
        _ => Value::String(id),
    }
}

/// `{"refs/heads/main": "<id>", ...}`: the host's entries and ours, sorted by name.
fn flat_map<'a>(
    old: Vec<(String, &'a str)>,
    refs: &[(String, VersionId)],
) -> Vec<(String, Out<'a>)> {
    let (managed, host): (Vec<_>, Vec<_>) = old.into_iter().partition(|(k, _)| is_managed(k));
    let managed: HashMap<String, Value> = managed.into_iter().map(|(k, v)| (k, tree(v))).collect();
    let mut entries: Vec<(String, Out)> = host.into_iter().map(|(k, v)| (k, Out::Raw(v))).collect();
    entries.extend(
        refs.iter()
            .map(|(n, id)| (n.clone(), Out::Value(entry_for(managed.get(n), id)))),
    );
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

/// `{"refs": {...}, ...}`: the map under `refs` rewritten, other keys kept.
fn nested_map<'a>(old: Vec<(String, &'a str)>, refs: &[(String, VersionId)]) -> Out<'a> {
    Out::Object(
        old.into_iter()
            .map(|(k, v)| match k == "refs" {
                true => {
                    let inner = members(v, 0);
                    (k, Out::Object(flat_map(inner, refs)))
                }
                false => (k, Out::Raw(v)),
            })
            .collect(),
    )
}

/// `{"refs": [{"name": ..., "version": ...}, ...]}`: the host's items kept in their order,
/// then ours, named with the keys the file's items use.
fn nested_list<'a>(old: Vec<(String, &'a str)>, refs: &[(String, VersionId)]) -> Out<'a> {
    let name_of = |item: &str| {
        let text = |key| {
            let read = json::At {
                key,
                read: json::TextRead::CHECKED,
            };
            json::read(item.as_bytes(), read).ok().flatten()
        };
        match text("name") {
            Some(t) => t.into_string(),
            None => text("ref").and_then(|t| t.into_string()),
        }
    };
    let mut out = Vec::new();
    for (k, v) in old {
        if k != "refs" {
            out.push((k, Out::Raw(v)));
            continue;
        }
        let all = items(v, 0);
        let named: Vec<(Option<String>, &str)> = all.iter().map(|i| (name_of(i), *i)).collect();
        let ours = named
            .iter()
            .find(|(n, _)| n.as_deref().is_some_and(is_managed))
            .map(|(_, i)| tree(i));
        let key = |a: &str, b: &str| match ours
            .as_ref()
            .map(|i| (i.get(a).is_some(), i.get(b).is_some()))
        {
            Some((false, true)) => b.to_string(),
            _ => a.to_string(),
        };
        let (name_key, version_key) = (key("name", "ref"), key("version", "id"));
        let mut managed: HashMap<String, Value> = Default::default();
        let mut list = Vec::new();
        for (name, item) in named {
            match name.filter(|n| is_managed(n)) {
                Some(n) => {
                    managed.entry(n).or_insert_with(|| tree(item));
                }
                None => list.push(Out::Raw(item)),
            }
        }
        list.extend(refs.iter().map(|(n, id)| {
            // The file's own item while the ref still holds its version, with a host's fields.
            let kept = managed.get(n).filter(|i| {
                let v = i.get(&version_key).and_then(Value::as_str);
                v.is_some_and(|v| v.trim().eq_ignore_ascii_case(&id.to_string()))
            });
            if let Some(kept) = kept {
                return Out::Value(kept.clone());
            }
            let mut item = Map::new();
            item.insert(name_key.clone(), Value::String(n.clone()));
            item.insert(version_key.clone(), Value::String(id.to_string()));
            Out::Value(Value::Object(item))
        }));
        out.push((k, Out::Array(list)));
    }
    Out::Object(out)
}

/// `{"heads": {"main": ...}, "tags": {...}, ...}`: both maps rewritten with short names, other
/// keys kept (full names of branches and tags at the top are folded into the maps).
fn short_names<'a>(old: Vec<(String, &'a str)>, refs: &[(String, VersionId)]) -> Out<'a> {
    let mut out: Vec<(String, Out)> = Vec::new();
    let mut before: HashMap<String, Value> = Default::default();
    for (k, v) in old.into_iter().filter(|(k, _)| !is_managed(k)) {
        if (k == "heads" || k == "tags") && v.starts_with('{') {
            before.insert(k.clone(), tree(v));
        }
        out.push((k, Out::Raw(v)));
    }
    for (key, prefix) in [("heads", "refs/heads/"), ("tags", "refs/tags/")] {
        let before = before.get(key);
        let map: Map<String, Value> = refs
            .iter()
            .filter_map(|(n, id)| Some((n.strip_prefix(prefix)?.to_string(), id)))
            .map(|(n, id)| {
                let entry = entry_for(before.and_then(|b| b.get(&n)), id);
                (n, entry)
            })
            .collect();
        let map = Out::Value(Value::Object(map));
        match out.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = map,
            None => out.push((key.to_string(), map)),
        }
    }
    Out::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A host's values are written back as their own text, whatever brackets, quotes and
    /// escapes their strings hold; a repeated key keeps its first place and last value.
    #[test]
    fn a_hosts_values_are_kept_as_their_text() {
        let id = VersionId::parse("0190f3a2-7b4c-7d2e-8f10-000000000001").unwrap();
        let ours = [("refs/heads/main".to_string(), id.clone())];
        let host = r#"{"a": "]}\"\\", "b": [1, {"c": "{["}], "n": 1e400}"#;
        let old = format!(
            r#" {{ "x" : {host} , "HEAD":"ref: refs/heads/main", "x": [ 0,0 ], "refs/heads/gone": "{id}" }} "#
        );
        let out = String::from_utf8(render_refs_json(Some(old.as_bytes()), &ours)).unwrap();
        let want = format!(
            "{{\n  \"HEAD\": \"ref: refs/heads/main\",\n  \"refs/heads/main\": \"{id}\",\n  \"x\": [ 0,0 ]\n}}\n"
        );
        assert_eq!(out, want);
        let old = format!(
            r#"{{"refs": [{host}, {{"name": "refs/heads/main", "version": "{id}", "by": "h"}}], "y": {host}}}"#
        );
        let out = String::from_utf8(render_refs_json(Some(old.as_bytes()), &ours)).unwrap();
        assert!(out.contains(&format!("\n    {host},\n")), "{out}");
        assert!(out.contains(&format!("\"y\": {host}\n")), "{out}");
        assert!(out.contains("\"by\": \"h\""), "{out}");
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["refs"].as_array().unwrap().len(), 2);
    }
}
