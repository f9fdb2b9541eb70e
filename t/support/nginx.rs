//! nginx, the web server people put in front of a folder, serving one folder on 127.0.0.1 as
//! the test's own user: ranges, strong ETags, no listing. Its configuration and logs live in a
//! folder of the test's; the server stops when dropped. `make test` installs it (CI) or says
//! how to (the package `nginx`, or `nginx-light`, which brings it).

use std::path::{Path, PathBuf};

pub struct Nginx {
    pub url: String,
    child: std::process::Child,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// What nginx logged, for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }
}

/// The nginx binary: on PATH, or where Debian puts it (`/usr/sbin`, not on a user's PATH).
fn binary() -> String {
    let on_path = std::process::Command::new("sh")
        .args(["-c", "command -v nginx"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let found = on_path.or_else(|| {
        let sbin = "/usr/sbin/nginx";
        Path::new(sbin).exists().then(|| sbin.to_string())
    });
    found.expect(
        "nginx is not installed: `make test` installs it on CI; elsewhere: sudo apt-get install -y nginx",
    )
}

/// nginx serving `root` on a free port, its files in `dir` (made here).
pub fn serve(root: &Path, dir: &Path) -> Nginx {
    let [port] = super::servers::free_ports();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let d = dir.display();
    let conf = format!(
        "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\n\
         error_log {d}/error.log;\nevents {{ worker_connections 1024; }}\n\
         http {{\n  access_log off;\n  client_body_temp_path {d}/tmp/body;\n\
         proxy_temp_path {d}/tmp/proxy;\n  fastcgi_temp_path {d}/tmp/fastcgi;\n\
         uwsgi_temp_path {d}/tmp/uwsgi;\n  scgi_temp_path {d}/tmp/scgi;\n\
         default_type application/octet-stream;\n\
         server {{ listen 127.0.0.1:{port}; root {}; location / {{ }} }}\n}}\n",
        root.display()
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = std::process::Command::new(binary())
        .arg("-p")
        .arg(dir)
        .arg("-e")
        .arg(dir.join("error.log"))
        .arg("-c")
        .arg(&conf_path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("nginx");
    let server = Nginx {
        url: format!("http://127.0.0.1:{port}/"),
        child,
        dir: dir.to_path_buf(),
    };
    super::http::wait_for_port(port, || format!("nginx did not start: {}", server.log()));
    server
}
