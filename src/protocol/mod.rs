//! The remote-helper protocol (gitremote-helpers(7)), sans-IO: lines in, requests out; replies
//! formatted as strings. The IO loop in `helper` is the only code that touches stdin/stdout.

/// One request from Git, with batches (`fetch`, `push`) gathered up to their blank line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Capabilities,
    List {
        for_push: bool,
    },
    Option {
        name: String,
        value: String,
    },
    Fetch(Vec<FetchItem>),
    Push(Vec<PushItem>),
    /// A blank line outside a batch, or end of input: the session is over.
    Quit,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FetchItem {
    pub oid: String,
    pub name: String,
}

/// `push [+]<src>:<dst>`; an empty `src` deletes `dst`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PushItem {
    pub force: bool,
    pub src: String,
    pub dst: String,
}

/// A line Git would never send: what was wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ProtocolError(pub String);

#[derive(Debug, Default)]
enum Batch {
    #[default]
    None,
    Fetch(Vec<FetchItem>),
    Push(Vec<PushItem>),
}

/// Turns lines (without their `\n`) into requests.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    batch: Batch,
}

impl Parser {
    /// Feeds one line; returns a request when one is complete.
    pub(crate) fn feed(&mut self, line: &str) -> Result<Option<Request>, ProtocolError> {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            return Ok(Some(match std::mem::take(&mut self.batch) {
                Batch::None => Request::Quit,
                Batch::Fetch(items) => Request::Fetch(items),
                Batch::Push(items) => Request::Push(items),
            }));
        }
        let (cmd, rest) = line.split_once(' ').unwrap_or((line, ""));
        match (cmd, &mut self.batch) {
            ("fetch", Batch::None) => {
                self.batch = Batch::Fetch(vec![parse_fetch(rest)?]);
                Ok(None)
            }
            ("fetch", Batch::Fetch(items)) => {
                items.push(parse_fetch(rest)?);
                Ok(None)
            }
            ("push", Batch::None) => {
                self.batch = Batch::Push(vec![parse_push(rest)?]);
                Ok(None)
            }
            ("push", Batch::Push(items)) => {
                items.push(parse_push(rest)?);
                Ok(None)
            }
            (_, Batch::Fetch(_) | Batch::Push(_)) => Err(ProtocolError(format!(
                "unexpected '{}' inside a batch (a blank line must end it first)",
                shown(cmd)
            ))),
            ("capabilities", Batch::None) => Ok(Some(Request::Capabilities)),
            ("list", Batch::None) => match rest {
                "" => Ok(Some(Request::List { for_push: false })),
                "for-push" => Ok(Some(Request::List { for_push: true })),
                other => Err(ProtocolError(format!(
                    "unknown list variant '{}'",
                    shown(other)
                ))),
            },
            ("option", Batch::None) => {
                let (name, value) = rest.split_once(' ').ok_or_else(|| {
                    ProtocolError(format!("option without a value: '{}'", shown(line)))
                })?;
                Ok(Some(Request::Option {
                    name: name.to_string(),
                    value: value.to_string(),
                }))
            }
            (other, Batch::None) => {
                Err(ProtocolError(format!("unknown command '{}'", shown(other))))
            }
        }
    }
}

/// Input shown in an error: at most 80 characters of it (the printer escapes the rest).
fn shown(input: &str) -> String {
    crate::redact::excerpt(input, 80)
}

fn parse_fetch(rest: &str) -> Result<FetchItem, ProtocolError> {
    let (oid, name) = rest
        .split_once(' ')
        .ok_or_else(|| ProtocolError(format!("malformed fetch line 'fetch {}'", shown(rest))))?;
    if oid.len() != 40 || !oid.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ProtocolError(format!(
            "fetch of '{}', which is not a SHA-1 object ID",
            shown(oid)
        )));
    }
    Ok(FetchItem {
        oid: oid.to_ascii_lowercase(),
        name: name.to_string(),
    })
}

fn parse_push(rest: &str) -> Result<PushItem, ProtocolError> {
    let (force, spec) = match rest.strip_prefix('+') {
        Some(s) => (true, s),
        None => (false, rest),
    };
    let (src, dst) = spec
        .split_once(':')
        .ok_or_else(|| ProtocolError(format!("malformed push line 'push {}'", shown(rest))))?;
    if dst.is_empty() {
        return Err(ProtocolError(format!(
            "push without a destination: 'push {}'",
            shown(rest)
        )));
    }
    Ok(PushItem {
        force,
        src: src.to_string(),
        dst: dst.to_string(),
    })
}

/// The reply to `capabilities`.
pub(crate) fn capabilities(push: bool) -> String {
    // `check-connectivity`: Git then asks whether a clone's pack holds everything it needs.
    let mut out = String::from("fetch\ncheck-connectivity\noption\n");
    if push {
        out.push_str("push\n");
    }
    out.push('\n');
    out
}

/// One line of a `list` reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ListLine {
    /// `<oid> <name>`
    Ref { oid: String, name: String },
    /// `@<target> <name>`: a symbolic ref such as HEAD.
    Symref { target: String, name: String },
}

/// The reply to `list`: optional `:object-format`, the refs, a blank line.
pub(crate) fn list(lines: &[ListLine], object_format: bool) -> String {
    // One string of the reply's size: a thousand refs make no string each.
    let size = lines.iter().map(|l| match l {
        ListLine::Ref { oid, name } => oid.len() + name.len() + 2,
        ListLine::Symref { target, name } => target.len() + name.len() + 3,
    });
    let mut out = String::with_capacity(size.sum::<usize>() + 32);
    if object_format {
        out.push_str(":object-format sha1\n");
    }
    for l in lines {
        let (first, name) = match l {
            ListLine::Ref { oid, name } => (oid, name),
            ListLine::Symref { target, name } => {
                out.push('@');
                (target, name)
            }
        };
        for part in [first.as_str(), " ", name.as_str(), "\n"] {
            out.push_str(part);
        }
    }
    out.push('\n');
    out
}

/// The answer to one `option` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum OptionReply {
    Ok,
    Unsupported,
    Error(String),
}

impl OptionReply {
    pub(crate) fn line(&self) -> String {
        match self {
            OptionReply::Ok => "ok\n".into(),
            OptionReply::Unsupported => "unsupported\n".into(),
            OptionReply::Error(m) => format!("error {}\n", m.replace('\n', " ")),
        }
    }
}

/// The options Git can set, as the helper holds them.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub verbosity: u32,
    pub progress: bool,
    pub cloning: bool,
    pub check_connectivity: bool,
    pub followtags: bool,
    pub object_format: bool,
    pub dry_run: bool,
    pub atomic: bool,
    /// `--force-with-lease` expectations: ref name → expected object ID (hex, or empty).
    pub cas: Vec<(String, String)>,
    /// What Git asked of a shallow fetch.
    pub deepen: Deepen,
}

/// A shallow fetch as Git asks for it: `--depth N` is `depth N`, `--deepen N` is `depth N`
/// with `deepen-relative`, `--unshallow` is `depth` [`INFINITE_DEPTH`], `--shallow-since` is
/// `deepen-since` with the user's own text, each `--shallow-exclude` a `deepen-not`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Deepen {
    pub depth: Option<u32>,
    pub relative: bool,
    pub since: Option<String>,
    pub not: Vec<String>,
}

/// Git's `INFINITE_DEPTH`, the depth `--unshallow` sends.
pub(crate) const INFINITE_DEPTH: u32 = 0x7fff_ffff;

impl Deepen {
    /// Whether Git asked for anything but the whole history below the wants.
    pub(crate) fn asked(&self) -> bool {
        self.depth.is_some() || self.since.is_some() || !self.not.is_empty()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            verbosity: 1,
            progress: false,
            cloning: false,
            check_connectivity: false,
            followtags: false,
            object_format: false,
            dry_run: false,
            atomic: false,
            cas: Vec::new(),
            deepen: Deepen::default(),
        }
    }
}

impl Options {
    /// Applies `option <name> <value>`. `push` says whether push options are understood.
    pub(crate) fn set(&mut self, name: &str, value: &str, push: bool) -> OptionReply {
        let boolean = |v: &str| match v {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(OptionReply::Error(format!(
                "'{other}' is not true or false"
            ))),
        };
        let set_bool = |slot: &mut bool| match boolean(value) {
            Ok(b) => {
                *slot = b;
                OptionReply::Ok
            }
            Err(e) => e,
        };
        match name {
            "verbosity" => match value.parse() {
                Ok(v) => {
                    self.verbosity = v;
                    OptionReply::Ok
                }
                Err(_) => OptionReply::Error(format!("verbosity '{value}' is not a number")),
            },
            "progress" => set_bool(&mut self.progress),
            "cloning" => set_bool(&mut self.cloning),
            "check-connectivity" => set_bool(&mut self.check_connectivity),
            "followtags" => set_bool(&mut self.followtags),
            "object-format" => match value {
                "true" | "sha1" => {
                    self.object_format = true;
                    OptionReply::Ok
                }
                other => OptionReply::Error(format!(
                    "lakes map to SHA-1 commits; object format '{other}' is not supported"
                )),
            },
            // Git sends depth 0 to go back to the whole history (its tag backfill does).
            "depth" => match value.parse::<u32>() {
                Ok(d) if d <= INFINITE_DEPTH => {
                    self.deepen.depth = Some(d).filter(|d| *d > 0);
                    OptionReply::Ok
                }
                _ => OptionReply::Error(format!("depth '{value}' is not a positive number")),
            },
            "deepen-relative" => set_bool(&mut self.deepen.relative),
            "deepen-since" => {
                self.deepen.since = Some(unquote(value));
                OptionReply::Ok
            }
            "deepen-not" => {
                self.deepen.not.push(unquote(value));
                OptionReply::Ok
            }
            "dry-run" if push => set_bool(&mut self.dry_run),
            "atomic" if push => set_bool(&mut self.atomic),
            // Push options mean nothing to a lake; saying so lets Git refuse them clearly.
            "push-option" => OptionReply::Unsupported,
            // A lake takes no push certificates. `--signed=if-asked` (push.gpgSign=if-asked)
            // pushes unsigned, as Git's own transports do where the receiving end takes none;
            // `--signed` is refused (Git dies on "unsupported").
            "pushcert" if push && value == "if-asked" => OptionReply::Ok,
            "cas" if push => {
                let v = unquote(value);
                match v.split_once(':') {
                    Some((r, oid)) => {
                        self.cas.push((r.to_string(), oid.to_string()));
                        OptionReply::Ok
                    }
                    None => OptionReply::Error(format!("malformed cas value '{v}'")),
                }
            }
            _ => OptionReply::Unsupported,
        }
    }
}

/// Undoes Git's C-style quoting (`"a\"b"`), with which Git sends `cas` and `push-option` values
/// (`quote_c_style`, undone by gix as Git's `unquote_c_style` does). A value that is not quoted,
/// or not quoted as Git quotes, is taken as it is.
pub(crate) fn unquote(s: &str) -> String {
    match gix::quote::ansi_c::undo(s.as_bytes().into()) {
        Ok((text, consumed)) if consumed == s.len() => String::from_utf8_lossy(&text).into_owned(),
        _ => s.to_string(),
    }
}

/// Status words Git recognises after `error <ref>` and turns into its own statuses and advice
/// (transport-helper.c); anything else shows as `[remote rejected] (<why>)`.
pub(crate) const NON_FAST_FORWARD: &str = "non-fast forward";
pub(crate) const FETCH_FIRST: &str = "fetch first";
pub(crate) const ALREADY_EXISTS: &str = "already exists";
pub(crate) const STALE_INFO: &str = "stale info";
/// The note after `ok <ref>` that marks a forced update.
pub(crate) const FORCED_UPDATE: &str = "forced update";

/// What a `push` reply says of one ref.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PushStatus<'a> {
    /// `ok <ref>`.
    Ok,
    /// `ok <ref> <note>` ([`FORCED_UPDATE`]).
    OkWith(&'a str),
    /// `error <ref> <reason>`: one of Git's status words, or a reason Git shows as it is.
    Error(String),
}

/// One line of a `push` reply.
pub(crate) fn push_status(dst: &str, status: &PushStatus) -> String {
    match status {
        PushStatus::Ok => format!("ok {dst}\n"),
        PushStatus::OkWith(note) => format!("ok {dst} {note}\n"),
        PushStatus::Error(why) => format!("error {dst} {}\n", why.replace('\n', " ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(transcript: &str) -> Vec<Result<Request, ProtocolError>> {
        let mut p = Parser::default();
        let mut out = Vec::new();
        for line in transcript.split('\n') {
            match p.feed(line) {
                Ok(Some(r)) => out.push(Ok(r)),
                Ok(None) => {}
                Err(e) => out.push(Err(e)),
            }
        }
        out
    }

    #[test]
    fn a_clone_session() {
        let oid = "a".repeat(40);
        let t = format!(
            "capabilities\noption progress true\noption verbosity 1\nlist\nfetch {oid} refs/heads/main\nfetch {oid} HEAD\n\n"
        );
        let got = run(&t);
        assert_eq!(got[0], Ok(Request::Capabilities));
        assert_eq!(
            got[1],
            Ok(Request::Option {
                name: "progress".into(),
                value: "true".into()
            })
        );
        assert_eq!(got[3], Ok(Request::List { for_push: false }));
        match &got[4] {
            Ok(Request::Fetch(items)) => assert_eq!(items.len(), 2),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn blank_line_outside_a_batch_quits() {
        assert_eq!(run("\n")[0], Ok(Request::Quit));
    }

    #[test]
    fn push_batches_and_force() {
        let got = run("push +refs/heads/a:refs/heads/b\npush :refs/tags/x\n\n");
        assert_eq!(
            got[0],
            Ok(Request::Push(vec![
                PushItem {
                    force: true,
                    src: "refs/heads/a".into(),
                    dst: "refs/heads/b".into()
                },
                PushItem {
                    force: false,
                    src: "".into(),
                    dst: "refs/tags/x".into()
                },
            ]))
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        assert!(run("fetch nothex refs/heads/x")[0].is_err());
        assert!(run("bogus")[0].is_err());
        assert!(run("fetch 0000000000000000000000000000000000000000 a\nlist")[0].is_err());
        assert!(run("push nocolon")[0].is_err());
    }

    #[test]
    fn replies() {
        assert_eq!(capabilities(false), "fetch\ncheck-connectivity\noption\n\n");
        let l = list(
            &[
                ListLine::Ref {
                    oid: "b".repeat(40),
                    name: "refs/heads/main".into(),
                },
                ListLine::Symref {
                    target: "refs/heads/main".into(),
                    name: "HEAD".into(),
                },
            ],
            true,
        );
        assert_eq!(
            l,
            format!(
                ":object-format sha1\n{} refs/heads/main\n@refs/heads/main HEAD\n\n",
                "b".repeat(40)
            )
        );
        assert_eq!(
            push_status("refs/tags/v1", &PushStatus::Error("already exists".into())),
            "error refs/tags/v1 already exists\n"
        );
    }

    #[test]
    fn options() {
        let mut o = Options::default();
        assert_eq!(o.set("progress", "true", false), OptionReply::Ok);
        assert!(o.progress);
        assert_eq!(o.set("verbosity", "2", false), OptionReply::Ok);
        assert_eq!(o.set("depth", "1", false), OptionReply::Ok);
        assert_eq!(o.deepen.depth, Some(1));
        assert_eq!(o.set("depth", "0", false), OptionReply::Ok);
        assert_eq!(o.deepen.depth, None);
        assert!(matches!(o.set("depth", "-1", false), OptionReply::Error(_)));
        assert_eq!(o.set("deepen-not", "\"v\\\"1\"", false), OptionReply::Ok);
        assert_eq!(o.deepen.not, ["v\"1"]);
        assert_eq!(
            o.set("filter", "blob:none", false),
            OptionReply::Unsupported
        );
        assert_eq!(o.set("dry-run", "true", false), OptionReply::Unsupported);
        assert!(matches!(
            o.set("object-format", "sha256", false),
            OptionReply::Error(_)
        ));
        assert_eq!(o.set("pushcert", "if-asked", true), OptionReply::Ok);
        assert_eq!(o.set("pushcert", "true", true), OptionReply::Unsupported);
        assert_eq!(o.set("cas", "\"refs/heads/x:abc\"", true), OptionReply::Ok);
        assert_eq!(o.cas[0], ("refs/heads/x".to_string(), "abc".to_string()));
        assert_eq!(unquote("\"a\\\"b\\\\c\\101\""), "a\"b\\cA");
        // As Git's quote_c_style writes them: named escapes, octal bytes of UTF-8.
        assert_eq!(unquote("\"a\\tb\\n\\303\\251\""), "a\tb\né");
        assert_eq!(unquote("refs/heads/x:abc"), "refs/heads/x:abc");
        // Not quoted as Git quotes: taken as it is.
        assert_eq!(unquote("\"unclosed"), "\"unclosed");
        assert_eq!(unquote("\"a\"b"), "\"a\"b");
    }
}
