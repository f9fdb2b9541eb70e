//! Git's configuration from its command line (`git -c key=value`), which Git hands to a remote
//! helper in `GIT_CONFIG_PARAMETERS` and which gix does not read there: a `git -c
//! fdl.usePacks=false ls-remote fdl::...` must mean what it says, as it does for Git itself.

/// `GIT_CONFIG_PARAMETERS` set and not in either of Git's forms: Git itself then stops with
/// `bogus format in GIT_CONFIG_PARAMETERS`, and so does the helper, before it reads anything.
#[derive(Debug, PartialEq, Eq)]
pub struct Bogus;

/// Whether `GIT_CONFIG_PARAMETERS`, if set, reads as Git reads it.
pub(crate) fn check() -> Result<(), Bogus> {
    match std::env::var("GIT_CONFIG_PARAMETERS") {
        Ok(params) => parse(&params).map(|_| ()),
        Err(std::env::VarError::NotPresent) => Ok(()),
        Err(std::env::VarError::NotUnicode(_)) => Err(Bogus),
    }
}

/// Each `-c` given to the Git that started this process, in order, as `key=value` (`key`
/// alone for a `-c key` with no value, which Git reads as true). None where the variable is
/// bogus ([`check`] has stopped the helper before).
pub(crate) fn overrides() -> Vec<String> {
    std::env::var("GIT_CONFIG_PARAMETERS")
        .ok()
        .and_then(|p| parse(&p).ok())
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| match value {
            Some(v) => format!("{key}={v}"),
            None => key,
        })
        .collect()
}

/// The value the command line gives `key` last: `Some(None)` for a key given without one.
pub(crate) fn value(key: &str) -> Option<Option<String>> {
    let params = std::env::var("GIT_CONFIG_PARAMETERS").ok()?;
    parse(&params)
        .ok()?
        .into_iter()
        .rev()
        .find(|(k, _)| same_key(k, key))
        .map(|(_, v)| v)
}

/// Git's two forms of `GIT_CONFIG_PARAMETERS`, word by word, each word in single quotes with a
/// quote written `'\''`: `'key'='value'` (Git 2.31 and later; `'key'=` for a key given alone)
/// and `'key=value'` (before). Anything else is bogus, as Git's `config.c` reads it: a word
/// not quoted or not closed, or a word followed by other than `=` or a space.
fn parse(params: &str) -> Result<Vec<(String, Option<String>)>, Bogus> {
    let mut out = Vec::new();
    let mut rest = params.trim_start();
    let ends_word = |s: &str| s.is_empty() || s.starts_with(|c: char| c.is_ascii_whitespace());
    while !rest.is_empty() {
        let (word, after) = quoted(rest).ok_or(Bogus)?;
        let (pair, after) = match after.strip_prefix('=') {
            Some(value) if value.starts_with('\'') => match quoted(value) {
                Some((v, after)) if ends_word(after) => ((word, Some(v)), after),
                _ => return Err(Bogus),
            },
            Some(after) if ends_word(after) => ((word, None), after),
            Some(_) => return Err(Bogus),
            None if ends_word(after) => match word.split_once('=') {
                Some((k, v)) => ((k.to_string(), Some(v.to_string())), after),
                None => ((word, None), after),
            },
            None => return Err(Bogus),
        };
        out.push(pair);
        rest = after.trim_start();
    }
    Ok(out)
}

/// A single-quoted word at the start of `s` (`'\''` inside it is a quote), and what follows.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut rest = s.strip_prefix('\'')?;
    let mut word = String::new();
    loop {
        let end = rest.find('\'')?;
        word.push_str(&rest[..end]);
        rest = &rest[end + 1..];
        match rest.strip_prefix("\\''") {
            Some(more) => {
                word.push('\'');
                rest = more;
            }
            None => return Some((word, rest)),
        }
    }
}

/// Whether two keys name the same variable: section and name without regard to case, the
/// subsection (between them) exactly, as Git compares them.
fn same_key(a: &str, b: &str) -> bool {
    let split = |k: &str| -> Option<(String, String, String)> {
        let (section, rest) = k.split_once('.')?;
        let (sub, name) = rest.rsplit_once('.').unwrap_or(("", rest));
        Some((
            section.to_ascii_lowercase(),
            sub.to_string(),
            name.to_ascii_lowercase(),
        ))
    };
    split(a).is_some_and(|a| split(b) == Some(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_git_writes_are_read() {
        // What Git 2.47 writes for `-c fdl.usePacks=false -c 'remote.origin.fdlOption=timeout=3s'
        // -c "a.b=it's" -c flag.only`.
        let new = r"'fdl.usePacks'='false' 'remote.origin.fdlOption'='timeout=3s' 'a.b'='it'\''s' 'flag.only'=";
        assert_eq!(
            parse(new).unwrap(),
            vec![
                ("fdl.usePacks".into(), Some("false".into())),
                ("remote.origin.fdlOption".into(), Some("timeout=3s".into())),
                ("a.b".into(), Some("it's".into())),
                ("flag.only".into(), None),
            ]
        );
        let old = r"'fdl.usePacks=false' 'flag.only'";
        assert_eq!(
            parse(old).unwrap(),
            vec![
                ("fdl.usePacks".into(), Some("false".into())),
                ("flag.only".into(), None),
            ]
        );
        assert_eq!(parse("").unwrap(), vec![]);
    }

    #[test]
    fn what_git_calls_bogus_is_refused() {
        // Each of these makes `git config -l` say `bogus format in GIT_CONFIG_PARAMETERS`.
        for bogus in [
            "'unterminated",
            "bare",
            "'a.b'x",
            "'a.b'=x",
            "'a.b'='c'd",
            "'a.b' 'c.d",
        ] {
            assert_eq!(parse(bogus), Err(Bogus), "{bogus}");
        }
    }

    #[test]
    fn keys_compare_as_git_compares_them() {
        assert!(same_key("fdl.usepacks", "FDL.usePacks"));
        assert!(same_key(
            "remote.Origin.fdlUsePacks",
            "REMOTE.Origin.fdlusepacks"
        ));
        assert!(!same_key(
            "remote.origin.fdlUsePacks",
            "remote.Origin.fdlUsePacks"
        ));
        assert!(!same_key("fdl.usePacks", "fdl.usePacksX"));
    }
}
