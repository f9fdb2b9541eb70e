//! Whether a process of this host is provably gone, so that a lock or a temporary file it left
//! can be recovered (the crate's one call outside safe Rust), and how many files this process
//! may have open.

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

/// Raises this process's limit of open files to the most it may have (the hard limit), as
/// Git and many tools do: a soft limit of 256 (macOS's default) is below what requests in
/// flight on a cloud store need. Returns the soft limit now in force (`None`: unlimited).
pub fn raise_open_files_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current.is_some() && limit.current != limit.maximum {
        let below_open_max = limit.current < Some(10240);
        let to = |current| Rlimit {
            current,
            maximum: limit.maximum,
        };
        // macOS refuses more than OPEN_MAX (10240) for an unlimited hard limit.
        if setrlimit(Resource::Nofile, to(limit.maximum)).is_err() && below_open_max {
            let _ = setrlimit(Resource::Nofile, to(Some(10240)));
        }
    }
    getrlimit(Resource::Nofile).current
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
