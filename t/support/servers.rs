//! Starting the tests' servers (the emulators, nginx, the tests' own): free ports, a process
//! watched and stopped with the tests, its port waited for; and the `Cloud` interface each
//! cloud emulator gives. Below every emulator's file, and `clouds.rs` above them all, so that
//! no file of the support imports another that imports it.

use std::path::Path;
use std::sync::Arc;

use object_store::ObjectStore;

/// A cloud emulator as the tests reach it.
pub trait Cloud: Sync {
    /// `s3`, `gs` or `az`: the scheme of a lake address on this store.
    fn scheme(&self) -> &'static str;
    /// The environment the helper needs to reach this server (never a real cloud).
    fn env(&self) -> Vec<(String, String)>;
    fn create_bucket(&self, bucket: &str);
    /// A client of `bucket` for the tests' own reads and writes.
    fn store(&self, bucket: &str) -> Arc<dyn ObjectStore>;
}

pub fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Starts `command` (a shell word list) through a watchdog shell that stops it when this test
/// process ends, and waits until `port` on 127.0.0.1 accepts connections. Its output goes to a
/// log file, shown if it does not start.
pub fn start_server(what: &str, command: &str, port: u16) {
    let log = std::env::temp_dir().join(format!("fdl-test-{what}-{port}.log"));
    spawn_watched(what, command, &log, "", &[]);
    wait_for_port(what, port, &log);
}

/// Starts `command` in the background of a watchdog shell that, once this test process ends
/// (or the server does), sends it SIGTERM and runs `after`; output goes to `log`. With `env`,
/// the server gets those variables (and `PATH`) only.
pub fn spawn_watched(what: &str, command: &str, log: &Path, after: &str, env: &[(&str, &str)]) {
    let watchdog = format!(
        "{command} >'{log}' 2>&1 & m=$!; \
         while kill -0 {pid} 2>/dev/null && kill -0 $m 2>/dev/null; do sleep 1; done; \
         kill $m 2>/dev/null; {after}",
        log = log.display(),
        pid = std::process::id()
    );
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c")
        .arg(watchdog)
        .stdin(std::process::Stdio::null());
    if !env.is_empty() {
        sh.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .envs(env.iter().copied());
    }
    // The watchdog outlives this process by design; nothing waits for it.
    #[allow(clippy::zombie_processes)]
    sh.spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
}

/// Waits (polling, 90 s at most) until `port` on 127.0.0.1 accepts connections; fails the
/// test with the server's `log` otherwise.
pub fn wait_for_port(what: &str, port: u16, log: &Path) {
    use std::net::TcpStream;
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(90);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not start on 127.0.0.1:{port} within 90 s; its output:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `N` different ports on 127.0.0.1 that nothing listens on, for a server started next.
pub fn free_ports<const N: usize>() -> [u16; N] {
    use std::hash::{BuildHasher, RandomState};
    // Below the kernel's own range (32768 up by default), where nothing a test starts asks for
    // port 0, so no other server can take a port here before this one's server binds it; and
    // each held until all are chosen, so none is chosen twice (SeaweedFS needs eight).
    const FIRST: u16 = 16384;
    const COUNT: u64 = 7616; // up to 24000: the throttling tests' fixed ports lie outside
    let mut draw = RandomState::new().hash_one(std::process::id());
    let mut held = Vec::with_capacity(N);
    for _ in 0..COUNT {
        if held.len() == N {
            break;
        }
        draw = draw
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let port = FIRST + ((draw >> 33) % COUNT) as u16;
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            held.push(listener);
        }
    }
    let ports: Vec<u16> = held
        .iter()
        .map(|l| l.local_addr().unwrap().port())
        .collect();
    ports
        .try_into()
        .unwrap_or_else(|p: Vec<u16>| panic!("only {} free ports between 16384 and 24000", p.len()))
}
