//! SSH keys and signatures as a lake's writers make them (real `ssh-keygen`), for the tests
//! of signed lakes and the benchmark of their road.

use std::path::Path;

use super::TestEnv;

/// A new key `keys/<name>` of the kind `kind` gives (`["-t", "ed25519"]`, `["-t", "rsa", "-b",
/// "2048"]`); its public half.
pub fn keygen_of(t: &TestEnv, name: &str, kind: &[&str]) -> String {
    let path = t.path(&format!("keys/{name}"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = t
        .command("ssh-keygen", ".", kind)
        .args(["-q", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen (openssh-client) is needed; `make test` says how to install it");
    assert!(status.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    public.trim().to_string()
}

/// A new ed25519 key `keys/<name>`; its public half.
pub fn keygen(t: &TestEnv, name: &str) -> String {
    keygen_of(t, name, &["-t", "ed25519"])
}

/// `ssh-keygen -Y sign` with key `key` over `file` in `namespace`, writing `<file>.sig` (one
/// there is replaced, as a re-signing writer does: ssh-keygen will not overwrite it).
pub fn sign(t: &TestEnv, key: &str, namespace: &str, file: &Path) {
    match std::fs::remove_file(file.with_extension("json.sig")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => panic!("{e}"),
        _ => {}
    }
    let out = t
        .command("ssh-keygen", ".", &["-Y", "sign", "-n", namespace, "-f"])
        .arg(t.path(&format!("keys/{key}")))
        .arg(file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The signature key `key` makes over `bytes` (namespace `fdl`).
pub fn signature(t: &TestEnv, key: &str, bytes: &[u8]) -> Vec<u8> {
    let file = t.path("to-sign/version.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, bytes).unwrap();
    sign(t, key, "fdl", &file);
    std::fs::read(file.with_extension("json.sig")).unwrap()
}
