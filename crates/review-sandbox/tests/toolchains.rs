//! Detected toolchains under real bubblewrap: a service user's home with
//! rustup, a `~/.cargo/bin`, pyenv and credentials beside them shows the
//! toolchains (read-only, with their variables) and nothing else of that home;
//! and this machine's own rustup `cargo` and pyenv `python` start confined
//! with a fresh `HOME` (they could not before: "rustup could not choose a
//! version of cargo to run").

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Stdio;

use review_sandbox::toolchains::{detect_toolchains_in, path_with_toolchains, readable_paths};
use review_sandbox::{Confinement, Contained, Containment, Toolchain, detect_toolchains};
use tokio::io::AsyncReadExt as _;

/// Run `script` with `sh -c`, confined to the system, `toolchains` (read-only)
/// and `home` (writable), with only the toolchains' `PATH` and variables and
/// `HOME`; its exit status and output.
async fn confined(toolchains: &[Toolchain], home: &Path, script: &str) -> (Option<i32>, String) {
    let containment = Containment::default();
    let confinement = Confinement::new()
        .with_readable_paths(readable_paths(toolchains))
        .with_writable(home)
        .with_network(false);
    let mut command = containment.confined_command("sh", &confinement).unwrap();
    command
        .arg("-c")
        .arg(script)
        .current_dir(home)
        .env_clear()
        .env(
            "PATH",
            path_with_toolchains(toolchains, "/usr/local/bin:/usr/bin:/bin".as_ref()),
        )
        .env("HOME", home)
        .envs(
            toolchains
                .iter()
                .flat_map(|toolchain| toolchain.variables.iter().cloned()),
        )
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut run = Contained::spawn(&containment, "sh", &mut command).unwrap();
    let mut stdout = run.child_mut().stdout.take().unwrap();
    let mut stderr = run.child_mut().stderr.take().unwrap();
    let mut output = String::new();
    let mut errors = String::new();
    let (read, read_errors) = tokio::join!(
        stdout.read_to_string(&mut output),
        stderr.read_to_string(&mut errors)
    );
    read.unwrap();
    read_errors.unwrap();
    run.leader_exited().await;
    let status = run.finish().await.unwrap();
    (status.code(), format!("{output}\n--- stderr ---\n{errors}"))
}

fn executable(path: &Path, body: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[tokio::test]
async fn a_service_users_toolchains_are_shown_and_the_rest_of_its_home_is_not() {
    let root = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(root.path()).unwrap();
    let home = root.join("service-home");
    // The toolchains: a rustup home, cargo's proxies, a pyenv root.
    std::fs::create_dir_all(home.join(".rustup/toolchains/stable/bin")).unwrap();
    executable(
        &home.join(".cargo/bin/cargo"),
        "test -d \"$RUSTUP_HOME/toolchains/stable\" && echo \"cargo via $RUSTUP_HOME\"",
    );
    executable(
        &home.join(".pyenv/shims/python"),
        "echo \"python via $PYENV_ROOT\"",
    );
    // And what must stay out of reach.
    for (path, text) in [
        (
            ".cargo/credentials.toml",
            "[registry]\ntoken = \"secret\"\n",
        ),
        (".cargo/registry/cache/planted", "secret"),
        (".ssh/id_ed25519", "secret"),
        (".netrc", "machine github.com password secret"),
        (".pyenv/.netrc", "machine pypi.org password secret"),
        ("notes.txt", "secret"),
    ] {
        let path = home.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let environment = |name: &str| -> Option<OsString> {
        match name {
            "HOME" => Some(home.clone().into()),
            "PATH" => Some("/usr/bin:/bin".into()),
            _ => None,
        }
    };
    let toolchains = detect_toolchains_in(environment);
    let names: Vec<&str> = toolchains.iter().map(|toolchain| toolchain.name).collect();
    assert_eq!(names, ["rustup", "pyenv"]);
    let job_home = root.join("job-home");
    std::fs::create_dir_all(&job_home).unwrap();
    let home_text = home.display();
    let script = format!(
        "cargo && python\n\
         for secret in .cargo/credentials.toml .cargo/registry/cache/planted .ssh/id_ed25519 \
         .netrc .pyenv/.netrc notes.txt; do\n\
           if grep -qs secret {home_text}/$secret; then echo \"REACHED $secret\"; fi\n\
         done\n\
         ls -A {home_text}; ls -A {home_text}/.cargo\n\
         touch {home_text}/.rustup/planted 2>/dev/null && echo 'WROTE rustup'\n\
         echo done"
    );

    let (status, output) = confined(&toolchains, &job_home, &script).await;

    assert_eq!(status, Some(0), "{output}");
    assert!(
        output.contains(&format!(
            "cargo via {home_text}/.rustup\npython via {home_text}/.pyenv\n"
        )),
        "{output}"
    );
    assert!(!output.contains("REACHED"), "{output}");
    assert!(!output.contains("WROTE"), "{output}");
    // Of the home, only the toolchains' directories exist inside; of
    // ~/.cargo, only bin.
    assert!(
        output.contains(".cargo\n.pyenv\n.rustup\nbin\ndone"),
        "{output}"
    );
}

#[tokio::test]
async fn this_machines_rustup_cargo_and_pyenv_python_start_confined_with_a_fresh_home() {
    let toolchains = detect_toolchains();
    let names: Vec<&str> = toolchains.iter().map(|toolchain| toolchain.name).collect();
    let job_home = tempfile::tempdir().unwrap();
    let mut script = String::from("set -e\n");
    if names.contains(&"rustup") || names.contains(&"cargo") {
        script.push_str("cargo --version\nrustc --version\n");
    }
    if names.contains(&"pyenv") {
        script.push_str("python --version\n");
    }
    if script == "set -e\n" {
        eprintln!("no rustup, cargo or pyenv on this machine: nothing to start ({names:?})");
        return;
    }

    let (status, output) = confined(&toolchains, job_home.path(), &script).await;

    assert_eq!(status, Some(0), "{names:?}\n{toolchains:#?}\n{output}");
    assert!(!output.contains("could not choose a version"), "{output}");
}
