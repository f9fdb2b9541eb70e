//! Whether a process of this host is provably gone, so that a lock or a temporary file it left
//! can be recovered, this host's name, how many files this process may have open, and how its
//! allocator hands large buffers back: the crate's one call outside safe Rust, audited here.

/// True only when no process with this ID exists (`ESRCH`), or it has ended and waits to be
/// reaped (a zombie); a process that runs, or one we may not signal, counts as alive.
pub fn is_gone(pid: i32) -> bool {
    // Signal 0 sends nothing: it only asks whether `pid` names a process; a pid of 0 or less
    // (a process group) is no process of ours.
    if pid <= 0 {
        return false;
    }
    let Some(id) = rustix::process::Pid::from_raw(pid) else {
        return false;
    };
    rustix::process::test_kill_process(id) == Err(rustix::io::Errno::SRCH) || is_zombie(pid)
}

/// Whether `/proc` says process `pid` has ended (state `Z` or `X`): signal 0 still reaches
/// a zombie, which lasts as long as its parent does not reap it (a PID 1 that reaps no
/// orphans, in a container), though it writes nothing more and holds no file open. Where
/// there is no `/proc`, no.
fn is_zombie(pid: i32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // `<pid> (<command>) <state> ...`: the command may hold spaces and parentheses itself.
    let state = stat
        .rfind(')')
        .and_then(|at| stat[at + 1..].split_whitespace().next());
    matches!(state, Some("Z" | "X"))
}

/// This host's name (`uname(2)`'s node name), `localhost` if it has none.
pub fn host_name() -> String {
    let uname = rustix::system::uname();
    let name = uname.nodename().to_string_lossy();
    match name.trim() {
        "" => "localhost".to_string(),
        name => name.to_string(),
    }
}

/// This host's name as it goes into a file name: letters, digits, `-` and `.` only.
pub fn host_tag() -> String {
    host_name()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.'))
        .take(64)
        .collect()
}

/// Keeps glibc's allocator from holding on to freed large buffers. By default glibc raises the
/// size from which it maps a buffer of its own (and unmaps it when freed) to that of the largest
/// mapped buffer freed, up to 32 MiB: after one 15 MiB record is let go, later ones come from
/// per-thread heaps that keep their memory, and the peak depends on which thread read what
/// (a clone of the same lake peaked between 254 and 329 MiB; fixed at glibc's initial 128 KiB,
/// at 194 MiB every time). Call before any thread starts. Elsewhere a no-op.
#[allow(unsafe_code)]
pub fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt(3) with M_MMAP_THRESHOLD takes two integers and only sets a parameter of
    // the allocator; 128 KiB is its documented default starting value. Called at start-up from
    // `main`, before any thread allocates.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
    }
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

    #[test]
    #[cfg(target_os = "linux")]
    fn an_ended_process_not_yet_reaped_is_gone() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        // Not waited for: once it ends it is a zombie, which signal 0 still reaches.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !super::is_zombie(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(super::is_gone(pid));
        child.wait().unwrap();
        assert!(super::is_gone(pid));
    }
}
