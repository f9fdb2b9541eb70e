//! SSH keys and signatures as a lake's writers make them (`ssh-keygen`), for the tests of
//! signed lakes and the benchmark of their road.

use super::TestEnv;

/// A new ed25519 key `keys/<name>`; its public half.
pub fn keygen(t: &TestEnv, name: &str) -> String {
    let path = t.path(&format!("keys/{name}"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let status = t
        .command(
            "ssh-keygen",
            ".",
            &["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"],
        )
        .arg(&path)
        .status()
        .expect("ssh-keygen (openssh-client) is needed; `make test` says how to install it");
    assert!(status.success());
    let public = std::fs::read_to_string(path.with_extension("pub")).unwrap();
    public.trim().to_string()
}

/// The signature `ssh-keygen -Y sign` makes with key `key` over `bytes` (namespace `fdl`).
pub fn signature(t: &TestEnv, key: &str, bytes: &[u8]) -> Vec<u8> {
    let file = t.path("to-sign/version.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, bytes).unwrap();
    let _ = std::fs::remove_file(file.with_extension("json.sig"));
    let out = t
        .command("ssh-keygen", ".", &["-Y", "sign", "-n", "fdl", "-f"])
        .arg(t.path(&format!("keys/{key}")))
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(file.with_extension("json.sig")).unwrap()
}
