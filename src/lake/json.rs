//! The one lenient JSON reader of the lake's files: a [`Read`] says what it makes of each type
//! of value it meets, and everything else is checked as a `serde_json::Value` would check it,
//! skipped and kept nowhere, so that a writer's unknown field costs a pass, not a tree.
//!
//! serde's `IgnoredAny` is not enough: serde_json skips it without the nesting limit and without
//! checking strings (UTF-8, lone surrogates), which a `Value` refuses. Every value goes through
//! `deserialize_any` as a `Value`'s does, so the parser checks exactly what it checks for one.
//! One visitor ([`Lenient`]) serves every reader: a reader writes only the types it reads.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// The key through which serde_json's `arbitrary_precision` hands a number to a visitor, as a
/// map of one entry holding its text. A `Value` also reads an object of JSON text whose first
/// key is this one as a number (refusing it unless its value is a number's text).
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// What a reader makes of one JSON value. Each method is a type the value may have; those a
/// reader does not write give [`Read::other`], the value checked and skipped.
pub(crate) trait Read<'de>: Sized {
    type Out;
    /// What a value this reader does not read gives.
    fn other(self) -> Self::Out;
    /// Whether an object whose first key is [`NUMBER_TOKEN`] is a number, checked as a `Value`
    /// checks it (mapping v1's rule, and every file's but `refs.json`'s, whose readers have
    /// always taken it as any object), at this level and below.
    fn numbers_checked(&self) -> bool {
        true
    }
    fn null(self) -> Self::Out {
        self.other()
    }
    fn boolean(self, _: bool) -> Self::Out {
        self.other()
    }
    fn number(self, _: Number<'_>) -> Self::Out {
        self.other()
    }
    fn string(self, _: &str) -> Self::Out {
        self.other()
    }
    fn array<A: SeqAccess<'de>>(self, items: Items<A>) -> Result<Self::Out, A::Error> {
        items.skip()?;
        Ok(self.other())
    }
    fn object<A: MapAccess<'de>>(self, object: Object<A>) -> Result<Self::Out, A::Error> {
        object.skip()?;
        Ok(self.other())
    }
}

/// A number as the parser gave it: its text (serde_json's `arbitrary_precision`), or a value.
#[derive(Clone, Copy)]
pub(crate) enum Number<'a> {
    Text(&'a str),
    I64(i64),
    U64(u64),
    F64(f64),
}

impl fmt::Display for Number<'_> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            Number::Text(t) => f.write_str(t),
            Number::I64(n) => write!(f, "{n}"),
            Number::U64(n) => write!(f, "{n}"),
            Number::F64(n) => match serde_json::Number::from_f64(n) {
                Some(n) => write!(f, "{n}"),
                None => f.write_str("null"),
            },
        }
    }
}

/// The items of an array, each read by a reader of the caller's choice.
pub(crate) struct Items<A> {
    seq: A,
    numbers_checked: bool,
}

impl<'de, A: SeqAccess<'de>> Items<A> {
    /// The next item read by `read`, or `None` at the end.
    pub(crate) fn next<R: Read<'de>>(&mut self, read: R) -> Result<Option<R::Out>, A::Error> {
        self.seq.next_element_seed(Lenient(read))
    }
    /// Every item left, checked and skipped.
    pub(crate) fn skip(mut self) -> Result<(), A::Error> {
        let skip = Skip(self.numbers_checked);
        while self.next(skip)?.is_some() {}
        Ok(())
    }
}

/// The members of an object: each key, then its value read or skipped.
pub(crate) struct Object<A> {
    map: A,
    /// The first key, already read to tell a number from an object; `Some(None)`: none.
    first: Option<Option<String>>,
    numbers_checked: bool,
}

impl<'de, A: MapAccess<'de>> Object<A> {
    /// The next key, or `None` at the end; its value must be read or skipped before the next.
    pub(crate) fn key(&mut self) -> Result<Option<String>, A::Error> {
        match self.first.take() {
            Some(first) => Ok(first),
            None => self.map.next_key_seed(Key),
        }
    }
    /// The value of the key just read, read by `read`.
    pub(crate) fn value<R: Read<'de>>(&mut self, read: R) -> Result<R::Out, A::Error> {
        self.map.next_value_seed(Lenient(read))
    }
    /// The value of the key just read as a string, `null` or anything else.
    pub(crate) fn text(&mut self) -> Result<Text, A::Error> {
        let numbers_checked = self.numbers_checked;
        self.value(TextRead { numbers_checked })
    }
    /// The value of the key just read, checked and skipped.
    pub(crate) fn skip_value(&mut self) -> Result<(), A::Error> {
        self.value(Skip(self.numbers_checked))
    }
    /// Every member left, checked and skipped.
    pub(crate) fn skip(mut self) -> Result<(), A::Error> {
        while self.key()?.is_some() {
            self.skip_value()?;
        }
        Ok(())
    }
}

/// The visitor behind every [`Read`]: it hands each value to the reader by its type.
struct Lenient<R>(R);

impl<'de, R: Read<'de>> DeserializeSeed<'de> for Lenient<R> {
    type Value = R::Out;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<R::Out, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, R: Read<'de>> Visitor<'de> for Lenient<R> {
    type Value = R::Out;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, b: bool) -> Result<R::Out, E> {
        Ok(self.0.boolean(b))
    }
    fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<R::Out, E> {
        Ok(self.0.number(Number::I64(n)))
    }
    fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<R::Out, E> {
        Ok(self.0.number(Number::U64(n)))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<R::Out, E> {
        Ok(self.0.number(Number::F64(n)))
    }
    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<R::Out, E> {
        Ok(self.0.string(s))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<R::Out, E> {
        Ok(self.0.null())
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<R::Out, E> {
        Ok(self.0.null())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<R::Out, A::Error> {
        let numbers_checked = self.0.numbers_checked();
        self.0.array(Items {
            seq,
            numbers_checked,
        })
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<R::Out, A::Error> {
        let numbers_checked = self.0.numbers_checked();
        let first = match numbers_checked {
            false => None,
            true => match map.next_key_seed(Key)? {
                None => Some(None),
                Some(k) if k == NUMBER_TOKEN => {
                    let text = map.next_value_seed(NumberText)?;
                    return Ok(self.0.number(Number::Text(&text)));
                }
                Some(k) => Some(Some(k)),
            },
        };
        self.0.object(Object {
            map,
            first,
            numbers_checked,
        })
    }
}

/// Parses `raw` with `read`, as `serde_json::from_slice` does (trailing blanks only).
pub(crate) fn read<'de, R: Read<'de>>(
    raw: &'de [u8],
    read: R,
) -> Result<R::Out, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_slice(raw);
    let value = Lenient(read).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// A key, as a string.
struct Key;

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

/// A value skipped; `.0`: whether numbers are checked ([`Read::numbers_checked`]).
#[derive(Clone, Copy)]
pub(crate) struct Skip(pub bool);

impl Read<'_> for Skip {
    type Out = ();
    fn other(self) {}
    fn numbers_checked(&self) -> bool {
        self.0
    }
}

/// A value whose only use is as a string: a string, `null`, or anything else (skipped).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text {
    Null,
    Str(String),
    Other,
}

impl Text {
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

/// Reads a [`Text`].
#[derive(Clone, Copy)]
pub(crate) struct TextRead {
    pub numbers_checked: bool,
}

impl TextRead {
    /// As a `Value` reads it (every file but `refs.json`).
    pub(crate) const CHECKED: TextRead = TextRead {
        numbers_checked: true,
    };
}

impl Read<'_> for TextRead {
    type Out = Text;
    fn other(self) -> Text {
        Text::Other
    }
    fn numbers_checked(&self) -> bool {
        self.numbers_checked
    }
    fn null(self) -> Text {
        Text::Null
    }
    fn string(self, s: &str) -> Text {
        Text::Str(s.to_string())
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

/// Reads a [`TextOrExcerpt`].
pub(crate) struct Excerpt;

impl Excerpt {
    fn other<E>(write: impl FnOnce(Excerpting) -> Result<(), E>) -> Result<TextOrExcerpt, E> {
        let mut out = String::new();
        write(Excerpting(&mut out))?;
        Ok(TextOrExcerpt::Other(out))
    }
}

impl<'de> Read<'de> for Excerpt {
    type Out = TextOrExcerpt;
    fn other(self) -> TextOrExcerpt {
        TextOrExcerpt::Other(String::new())
    }
    fn null(self) -> TextOrExcerpt {
        TextOrExcerpt::Null
    }
    fn string(self, s: &str) -> TextOrExcerpt {
        TextOrExcerpt::Str(s.to_string())
    }
    fn boolean(self, b: bool) -> TextOrExcerpt {
        TextOrExcerpt::Other(b.to_string())
    }
    fn number(self, n: Number<'_>) -> TextOrExcerpt {
        let mut out = String::new();
        Excerpting(&mut out).number(n);
        TextOrExcerpt::Other(out)
    }
    fn array<A: SeqAccess<'de>>(self, items: Items<A>) -> Result<TextOrExcerpt, A::Error> {
        Excerpt::other(|e| e.array(items))
    }
    fn object<A: MapAccess<'de>>(self, object: Object<A>) -> Result<TextOrExcerpt, A::Error> {
        Excerpt::other(|e| e.object(object))
    }
}

/// Writes a value's compact JSON into its string, at most [`EXCERPT_BYTES`] of it.
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

impl<'de> Read<'de> for Excerpting<'_> {
    type Out = ();
    fn other(self) {}
    fn null(mut self) {
        self.push("null");
    }
    fn boolean(mut self, b: bool) {
        self.push(if b { "true" } else { "false" });
    }
    fn number(mut self, n: Number<'_>) {
        self.push(&n.to_string());
    }
    fn string(mut self, s: &str) {
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
    }
    fn array<A: SeqAccess<'de>>(mut self, mut items: Items<A>) -> Result<(), A::Error> {
        self.push("[");
        let mut first = true;
        loop {
            // The comma is taken back if no item follows.
            let mark = self.0.len();
            if !first {
                self.push(",");
            }
            if items.next(Excerpting(self.0))?.is_none() {
                self.0.truncate(mark);
                break;
            }
            first = false;
        }
        self.push("]");
        Ok(())
    }
    fn object<A: MapAccess<'de>>(mut self, mut object: Object<A>) -> Result<(), A::Error> {
        self.push("{");
        let mut first = true;
        while let Some(k) = object.key()? {
            if !first {
                self.push(",");
            }
            first = false;
            if !self.full() {
                self.push(&serde_json::to_string(&k).unwrap_or_default());
                self.push(":");
            }
            object.value(Excerpting(self.0))?;
        }
        self.push("}");
        Ok(())
    }
}

/// The value under `key` of an object (its last occurrence, the one a `Value` keeps), read by
/// `read`; `None` when there is none or the value is not an object. The rest is skipped.
#[derive(Clone, Copy)]
pub(crate) struct At<'k, R> {
    pub key: &'k str,
    pub read: R,
}

impl<'de, R: Read<'de> + Clone> Read<'de> for At<'_, R> {
    type Out = Option<R::Out>;
    fn other(self) -> Self::Out {
        None
    }
    fn object<A: MapAccess<'de>>(self, mut object: Object<A>) -> Result<Self::Out, A::Error> {
        let mut found = None;
        while let Some(k) = object.key()? {
            match k == self.key {
                true => found = Some(object.value(self.read.clone())?),
                false => object.skip_value()?,
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What skipping `raw` says: nothing, or serde_json's words for what it refuses.
    fn skip(raw: &[u8]) -> Option<String> {
        read(raw, Skip(true)).err().map(|e| e.to_string())
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
            let TextOrExcerpt::Other(e) = read(raw.as_bytes(), Excerpt).unwrap() else {
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
        let s = read(br#""abc""#, Excerpt).unwrap();
        assert_eq!(s, TextOrExcerpt::Str("abc".into()));
    }
}
