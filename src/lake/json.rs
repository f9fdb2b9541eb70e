//! JSON read typed: what a reader does not use is skipped, checked as a `serde_json::Value`
//! would check it, and kept nowhere, so that a writer's unknown field costs a pass, not a tree.
//!
//! serde's `IgnoredAny` is not enough: serde_json skips it without the nesting limit and without
//! checking strings (UTF-8, lone surrogates), which a `Value` refuses. [`Skip`] goes through
//! `deserialize_any` as a `Value` does, so the parser checks exactly what it checks for one.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The key through which serde_json's `arbitrary_precision` hands a number to a visitor, as a
/// map of one entry holding its text. A `Value` also reads an object of JSON text whose first
/// key is this one as a number (refusing it unless its value is a number's text).
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// A value skipped. `AS_VALUE`: an object whose first key is [`NUMBER_TOKEN`] is checked as a
/// `Value` checks it (mapping v1's rules for `version.json`); without, it is any object.
#[derive(Clone, Copy, Default)]
pub(crate) struct Skip<const AS_VALUE: bool>;

impl<'de, const AS_VALUE: bool> serde::Deserialize<'de> for Skip<AS_VALUE> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Skip)
    }
}

impl<'de, const AS_VALUE: bool> Visitor<'de> for Skip<AS_VALUE> {
    type Value = Skip<AS_VALUE>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self, E> {
        Ok(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<Skip<AS_VALUE>>()?.is_some() {}
        Ok(self)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        if AS_VALUE {
            match first_key(&mut map)? {
                FirstKey::Number(_) | FirstKey::Empty => return Ok(self),
                FirstKey::Key(_) => {}
            }
            map.next_value::<Skip<AS_VALUE>>()?;
        }
        rest_of_map::<AS_VALUE, A>(map)?;
        Ok(self)
    }
}

/// Skips what is left of a map, keys checked as strings.
pub(crate) fn rest_of_map<'de, const AS_VALUE: bool, A: MapAccess<'de>>(
    mut map: A,
) -> Result<(), A::Error> {
    while map.next_key_seed(Key)?.is_some() {
        map.next_value::<Skip<AS_VALUE>>()?;
    }
    Ok(())
}

/// The first key of a map as a `Value` reads it.
pub(crate) enum FirstKey {
    Empty,
    /// The map was a number (its text, which its value held and which was checked): nothing
    /// more may follow, as the parser checks.
    Number(String),
    Key(String),
}

/// Reads the first key of a map, and if it is [`NUMBER_TOKEN`] the number's text after it,
/// refused as a `Value` refuses it when it is not a number.
pub(crate) fn first_key<'de, A: MapAccess<'de>>(map: &mut A) -> Result<FirstKey, A::Error> {
    match map.next_key_seed(Key)? {
        None => Ok(FirstKey::Empty),
        Some(k) if k == NUMBER_TOKEN => Ok(FirstKey::Number(map.next_value_seed(NumberText)?)),
        Some(k) => Ok(FirstKey::Key(k)),
    }
}

/// A key, as a string.
pub(crate) struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for Key {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<String, E> {
        Ok(s.to_string())
    }
}

/// The text after [`NUMBER_TOKEN`], refused with the words a `Value` uses when it is not a
/// number.
struct NumberText;

impl<'de> DeserializeSeed<'de> for NumberText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl Visitor<'_> for NumberText {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("string containing a number")
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<String, E> {
        let n: serde_json::Number = s.parse().map_err(E::custom)?;
        Ok(n.to_string())
    }
}

/// A value whose only use is as a string: a string, `null`, or anything else (skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text<const AS_VALUE: bool> {
    Null,
    Str(String),
    Other,
}

impl<const AS_VALUE: bool> Text<AS_VALUE> {
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Text::Str(s) => Some(s),
            _ => None,
        }
    }
    pub(crate) fn into_string(self) -> Option<String> {
        match self {
            Text::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl<'de, const AS_VALUE: bool> serde::Deserialize<'de> for Text<AS_VALUE> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextVisitor::<AS_VALUE>)
    }
}

struct TextVisitor<const AS_VALUE: bool>;

impl<'de, const AS_VALUE: bool> Visitor<'de> for TextVisitor<AS_VALUE> {
    type Value = Text<AS_VALUE>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Text::Other)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Text::Other)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Text::Other)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Text::Other)
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Text::Str(s.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Text::Str(s))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Text::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(Text::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Skip::<AS_VALUE>.visit_seq(seq).map(|_| Text::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Skip::<AS_VALUE>.visit_map(map).map(|_| Text::Other)
    }
}

/// At most this many bytes of a value's compact JSON, for an excerpt in a message.
const EXCERPT_BYTES: usize = 256;

/// A string, `null`, or anything else as the start of its compact JSON, as `Value`'s
/// `Display` writes it (a repeated key shown each time), at most [`EXCERPT_BYTES`] long: the
/// rest is checked and skipped. For a message that shows what a field held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextOrExcerpt {
    Null,
    Str(String),
    Other(String),
}

impl<'de> serde::Deserialize<'de> for TextOrExcerpt {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TextOrExcerptVisitor)
    }
}

struct TextOrExcerptVisitor;

impl TextOrExcerptVisitor {
    fn other<E: serde::de::Error>(
        self,
        write: impl FnOnce(Excerpting) -> Result<(), E>,
    ) -> Result<TextOrExcerpt, E> {
        let mut out = String::new();
        write(Excerpting(&mut out))?;
        Ok(TextOrExcerpt::Other(out))
    }
}

impl<'de> Visitor<'de> for TextOrExcerptVisitor {
    type Value = TextOrExcerpt;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<TextOrExcerpt, E> {
        self.other(|e| e.visit_bool(b))
    }
    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<TextOrExcerpt, E> {
        self.other(|e| e.visit_i64(n))
    }
    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<TextOrExcerpt, E> {
        self.other(|e| e.visit_u64(n))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<TextOrExcerpt, E> {
        self.other(|e| e.visit_f64(n))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<TextOrExcerpt, E> {
        Ok(TextOrExcerpt::Str(s.to_string()))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<TextOrExcerpt, E> {
        Ok(TextOrExcerpt::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<TextOrExcerpt, A::Error> {
        self.other(|e| e.visit_seq(seq))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TextOrExcerpt, A::Error> {
        self.other(|e| e.visit_map(map))
    }
}

struct Excerpting<'a>(&'a mut String);

impl Excerpting<'_> {
    fn push(&mut self, s: &str) {
        let room = EXCERPT_BYTES.saturating_sub(self.0.len());
        let mut end = room.min(s.len());
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.0.push_str(&s[..end]);
    }
    fn full(&self) -> bool {
        self.0.len() >= EXCERPT_BYTES
    }
}

impl<'de> DeserializeSeed<'de> for Excerpting<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Excerpting<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(mut self, b: bool) -> Result<(), E> {
        self.push(if b { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(mut self, n: i64) -> Result<(), E> {
        self.push(&n.to_string());
        Ok(())
    }
    fn visit_u64<E: serde::de::Error>(mut self, n: u64) -> Result<(), E> {
        self.push(&n.to_string());
        Ok(())
    }
    fn visit_f64<E: serde::de::Error>(mut self, n: f64) -> Result<(), E> {
        self.push(&serde_json::Number::from_f64(n).map_or("null".into(), |n| n.to_string()));
        Ok(())
    }
    fn visit_str<E: serde::de::Error>(mut self, s: &str) -> Result<(), E> {
        if !self.full() {
            let cut = &s[..s.floor_char_boundary(EXCERPT_BYTES)];
            let quoted = serde_json::to_string(cut).unwrap_or_default();
            // A string cut short has no closing quote.
            let quoted = match cut.len() < s.len() {
                true => &quoted[..quoted.len() - 1],
                false => &quoted,
            };
            self.push(quoted);
        }
        Ok(())
    }
    fn visit_unit<E: serde::de::Error>(mut self) -> Result<(), E> {
        self.push("null");
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<(), A::Error> {
        self.push("[");
        let mut first = true;
        loop {
            // The comma is taken back if no element follows.
            let mark = self.0.len();
            if !first {
                self.push(",");
            }
            if seq.next_element_seed(Excerpting(self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.push("]");
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<(), A::Error> {
        let mut key = match first_key(&mut map)? {
            FirstKey::Empty => {
                self.push("{}");
                return Ok(());
            }
            FirstKey::Number(text) => {
                self.push(&text);
                return Ok(());
            }
            FirstKey::Key(k) => Some(k),
        };
        self.push("{");
        let mut first = true;
        while let Some(k) = key {
            if !first {
                self.push(",");
            }
            first = false;
            if !self.full() {
                self.push(&serde_json::to_string(&k).unwrap_or_default());
                self.push(":");
            }
            map.next_value_seed(Excerpting(self.0))?;
            key = map.next_key_seed(Key)?;
        }
        self.push("}");
        Ok(())
    }
}

/// The value under `key` of an object (its last occurrence, the one a `Value` keeps), read by
/// `seed`; `None` when there is none or the value is not an object. The rest is skipped.
#[derive(Clone, Copy)]
pub(crate) struct At<'k, S> {
    pub key: &'k str,
    pub seed: S,
}

impl<'de, S: DeserializeSeed<'de> + Clone> DeserializeSeed<'de> for At<'_, S> {
    type Value = Option<S::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, S: DeserializeSeed<'de> + Clone> Visitor<'de> for At<'_, S> {
    type Value = Option<S::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        Skip::<true>.visit_seq(seq).map(|_| None)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut key = match first_key(&mut map)? {
            FirstKey::Number(_) | FirstKey::Empty => return Ok(None),
            FirstKey::Key(k) => Some(k),
        };
        let mut found = None;
        while let Some(k) = key {
            match k == self.key {
                true => found = Some(map.next_value_seed(self.seed.clone())?),
                false => {
                    map.next_value::<Skip<true>>()?;
                }
            }
            key = map.next_key_seed(Key)?;
        }
        Ok(found)
    }
}

/// Parses `raw` with `seed`, as `serde_json::from_slice` does (trailing blanks only).
pub(crate) fn from_slice_seed<'de, S: DeserializeSeed<'de>>(
    raw: &'de [u8],
    seed: S,
) -> Result<S::Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(raw);
    let value = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What skipping `raw` says: nothing, or serde_json's words for what it refuses.
    fn skip(raw: &[u8]) -> Option<String> {
        serde_json::from_slice::<Skip<true>>(raw)
            .err()
            .map(|e| e.to_string())
    }

    /// What reading `raw` as a tree says, in the same terms.
    fn tree(raw: &[u8]) -> Option<String> {
        serde_json::from_slice::<serde_json::Value>(raw)
            .err()
            .map(|e| e.to_string())
    }

    /// A skip refuses what a tree refuses, with the same words, and takes what it takes.
    #[test]
    fn a_skip_checks_what_a_tree_checks() {
        let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
        let cases: Vec<Vec<u8>> = vec![
            deep(128).into_bytes(),
            deep(129).into_bytes(),
            br#"{"x": "\ud800"}"#.to_vec(),
            br#"{"x": "\udc00\u0041"}"#.to_vec(),
            b"{\"x\": \"\xff\"}".to_vec(),
            b"{\"\xc3\": 1}".to_vec(),
            br#"{"x": {"$serde_json::private::Number": "abc"}}"#.to_vec(),
            br#"{"x": {"$serde_json::private::Number": "12"}}"#.to_vec(),
            br#"{"x": {"$serde_json::private::Number": "12", "y": 1}}"#.to_vec(),
            br#"{"x": {"$serde_json::private::Number": 12}}"#.to_vec(),
            br#"{"x": {"y": 1, "$serde_json::private::Number": "q"}}"#.to_vec(),
            br#"{"x": 1e400, "y": -0.0, "z": 01}"#.to_vec(),
            br#"{"x": [1, 2,]}"#.to_vec(),
            br#"{"x": "\q"}"#.to_vec(),
            b"{\"x\": \"a\x01\"}".to_vec(),
            br#"{"x": tru}"#.to_vec(),
            br#"{"x": 1} x"#.to_vec(),
            br#"{"x": 1}   "#.to_vec(),
        ];
        for raw in cases {
            assert_eq!(skip(&raw), tree(&raw), "{}", String::from_utf8_lossy(&raw));
        }
    }

    #[test]
    fn an_excerpt_is_value_display_cut_short() {
        let show = |raw: &str| {
            let TextOrExcerpt::Other(e) = serde_json::from_str(raw).unwrap() else {
                panic!("{raw}");
            };
            let v: serde_json::Value = serde_json::from_str(raw).unwrap();
            let full = v.to_string();
            assert_eq!(e, full[..e.len()], "{raw}");
            assert!(e.len() == full.len() || e.len() >= EXCERPT_BYTES, "{raw}");
        };
        for raw in [
            r#"[1, "a\"b", {"k": [true, false, null]}, {}, [], 1e400, -0.5]"#,
            r#"{"a": {"$serde_json::private::Number": "7"}, "é": "\u00e9\n"}"#,
            &format!("[{}]", vec!["12345"; 200].join(",")),
            &format!("{{\"k\": \"{}\"}}", "x".repeat(1000)),
            "12",
            "false",
        ] {
            show(raw);
        }
        let s: TextOrExcerpt = serde_json::from_str(r#""abc""#).unwrap();
        assert_eq!(s, TextOrExcerpt::Str("abc".into()));
    }
}
