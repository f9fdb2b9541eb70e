//! The protocol's input: a line longer than the limit is refused and never echoed, and NUL
//! bytes and escapes in a command are shown escaped.

use crate::support::run::helper_session;
use crate::support::{text, TestEnv};

#[test]
fn long_protocol_line_is_refused_and_never_echoed() {
    let t = TestEnv::new();
    let mut input = b"capabilities\n".to_vec();
    input.extend(std::iter::repeat_n(b'x', 8 << 20));
    let out = helper_session(&t, ".", &["origin", "/nowhere"], &input);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(err.contains("longer than 65536 bytes"), "{err}");
    assert!(err.len() < 200, "{} bytes of stderr", err.len());
}

#[test]
fn nul_bytes_in_protocol_input_are_escaped() {
    let t = TestEnv::new();
    let out = helper_session(&t, ".", &["origin", "/nowhere"], b"capa\0bilities\x1b[2J\n");
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(128), "{err}");
    assert!(!err.contains('\0') && !err.contains('\u{1b}'), "{err:?}");
    assert!(
        err.contains("unknown command 'capa\\x00bilities\\x1b[2J'"),
        "{err}"
    );
}
