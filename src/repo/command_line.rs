//! Git's configuration from its command line (`git -c key=value`), which Git hands to a remote
//! helper in `GIT_CONFIG_PARAMETERS` and which gix does not read there: a `git -c
//! fdl.usePacks=false ls-remote fdl::...` must mean what it says, as it does for Git itself.

/// Each `-c` given to the Git that started this process, in order, as `key=value` (`key`
/// alone for a `-c key` with no value, which Git reads as true). Unreadable words end the list,
/// as Git stops reading them.
pub(crate) fn overrides() -> Vec<String> {
    std::env::var("GIT_CONFIG_PARAMETERS")
        .map(|p| parse(&p))
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
        .into_iter()
        .rev()
        .find(|(k, _)| same_key(k, key))
        .map(|(_, v)| v)
}

/// Git's two forms of `GIT_CONFIG_PARAMETERS`, word by word, each word in single quotes with a
/// quote written `'\''`: `'key'='value'` (Git 2.31 and later; `'key'=` for a key given alone)
/// and `'key=value'` (before).
fn parse(params: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    let mut rest = params.trim_start();
    while !rest.is_empty() {
        let Some((word, after)) = quoted(rest) else {
            break;
        };
        let (pair, after) = match after.strip_prefix('=') {
            Some(value) if value.starts_with('\'') => match quoted(value) {
                Some((v, after)) => ((word, Some(v)), after),
                None => break,
            },
            Some(after) => ((word, None), after),
            None => match word.split_once('=') {
                Some((k, v)) => ((k.to_string(), Some(v.to_string())), after),
                None => ((word, None), after),
            },
        };
        out.push(pair);
        rest = after.trim_start();
    }
    out
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
            parse(new),
            vec![
                ("fdl.usePacks".into(), Some("false".into())),
                ("remote.origin.fdlOption".into(), Some("timeout=3s".into())),
                ("a.b".into(), Some("it's".into())),
                ("flag.only".into(), None),
            ]
        );
        let old = r"'fdl.usePacks=false' 'flag.only'";
        assert_eq!(
            parse(old),
            vec![
                ("fdl.usePacks".into(), Some("false".into())),
                ("flag.only".into(), None),
            ]
        );
        assert_eq!(parse("'unterminated"), vec![]);
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
