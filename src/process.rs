//! Whether a process of this host is provably gone, so that a lock or a temporary file it left
//! can be recovered. It holds the crate's one call outside safe Rust.

/// True only when no process with this ID exists (`ESRCH`); a process that exists, or one we
/// may not signal, counts as alive.
#[allow(unsafe_code)]
pub fn is_gone(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks that `pid` names a process we
    // could signal. It takes two integers, touches no memory of ours, and cannot fail unsafely;
    // `pid > 0` keeps it from addressing a process group.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    !alive && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_process_is_not_gone_and_an_ended_one_is() {
        assert!(!super::is_gone(std::process::id() as i32));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        child.wait().unwrap();
        assert!(super::is_gone(pid));
        assert!(!super::is_gone(0) && !super::is_gone(-1));
    }
}
