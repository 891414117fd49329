//! The toolchains a confined build or agent needs, found in the bot's own
//! environment: rustup, pyenv, nvm, Go, a `JAVA_HOME`, and whatever
//! non-system directories are on the bot's `PATH`.
//!
//! A confined run gets a fresh `HOME` and a cleared environment, so a
//! toolchain installed for the service's user (`~/.rustup`, `~/.pyenv`, …)
//! cannot start there on its own: rustup's `cargo` proxy says "rustup could
//! not choose a version of cargo to run", pyenv's shims find no `PYENV_ROOT`.
//! Each [`Toolchain`] says which directories to show read-only (never the
//! rest of that home: only the toolchain's own directories), which to put on
//! `PATH`, and which variables to set so it starts as it does outside.
//! `doctor` lists them ([`Toolchain::name`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::confinement::SYSTEM_PATHS;

/// One toolchain, as a confined run must see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// What it is: `rustup`, `cargo`, `pyenv`, `nvm`, `go`, `java`, or
    /// `PATH` (a directory of the bot's `PATH` outside the system).
    pub name: &'static str,
    /// Shown read-only (credential files at their top stay masked).
    pub readable: Vec<PathBuf>,
    /// Put on the run's `PATH`, before the bot's own entries.
    pub path_entries: Vec<PathBuf>,
    /// Set in the run's environment.
    pub variables: Vec<(String, OsString)>,
}

impl Toolchain {
    fn new(name: &'static str) -> Self {
        Self {
            name,
            readable: Vec::new(),
            path_entries: Vec::new(),
            variables: Vec::new(),
        }
    }
}

/// The toolchains of the bot's own environment (see [`detect_toolchains_in`]).
pub fn detect_toolchains() -> Vec<Toolchain> {
    detect_toolchains_in(|name| std::env::var_os(name))
}

/// The toolchains an environment (`variable` looks a variable up) has:
///
/// - **rustup**: `RUSTUP_HOME` or `~/.rustup`, read-only, passed as
///   `RUSTUP_HOME`; its proxies in `CARGO_HOME/bin` or `~/.cargo/bin`,
///   read-only and on `PATH` (only `bin`: the registry and any credentials
///   of the real `CARGO_HOME` stay out); `RUSTUP_TOOLCHAIN` when set.
///   Without a rustup home, a `CARGO_HOME/bin` alone is `cargo`;
/// - **pyenv**: `PYENV_ROOT` or `~/.pyenv`, read-only, `shims` and `bin` on
///   `PATH`, `PYENV_ROOT` passed (and `PYENV_VERSION` when set);
/// - **nvm**: of `NVM_DIR` or `~/.nvm`, the current node (`NVM_BIN`) or
///   else the default alias's, or else the newest installed: its directory
///   read-only and its `bin` on `PATH`;
/// - **go**: `GOROOT` or `/usr/local/go`, read-only, `bin` on `PATH`,
///   `GOROOT` passed;
/// - **java**: `JAVA_HOME`, read-only, `bin` on `PATH`, `JAVA_HOME` passed;
/// - **PATH**: every other absolute directory on `PATH` outside the system
///   directories, read-only (it is on `PATH` already).
pub fn detect_toolchains_in(variable: impl Fn(&str) -> Option<OsString>) -> Vec<Toolchain> {
    detect(variable, Path::new(DEFAULT_GO_ROOT))
}

/// Where Go's own installer puts it.
const DEFAULT_GO_ROOT: &str = "/usr/local/go";

fn detect(variable: impl Fn(&str) -> Option<OsString>, default_go_root: &Path) -> Vec<Toolchain> {
    let home = variable("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute());
    let located = |name: &str, default: &str| -> Option<PathBuf> {
        match variable(name) {
            Some(value) if !value.is_empty() => Some(PathBuf::from(value)),
            _ => home.as_ref().map(|home| home.join(default)),
        }
        .filter(|path| path.is_absolute() && path.is_dir())
    };
    let mut found = Vec::new();

    let cargo_bin = located("CARGO_HOME", ".cargo")
        .map(|cargo_home| cargo_home.join("bin"))
        .filter(|bin| bin.is_dir());
    let rustup_home = located("RUSTUP_HOME", ".rustup");
    if rustup_home.is_some() || cargo_bin.is_some() {
        let mut rust = Toolchain::new(if rustup_home.is_some() {
            "rustup"
        } else {
            "cargo"
        });
        if let Some(rustup_home) = rustup_home {
            rust.readable.push(rustup_home.clone());
            rust.variables
                .push(("RUSTUP_HOME".to_owned(), rustup_home.into_os_string()));
            if let Some(toolchain) = variable("RUSTUP_TOOLCHAIN").filter(|value| !value.is_empty())
            {
                rust.variables
                    .push(("RUSTUP_TOOLCHAIN".to_owned(), toolchain));
            }
        }
        if let Some(bin) = cargo_bin {
            rust.readable.push(bin.clone());
            rust.path_entries.push(bin);
        }
        found.push(rust);
    }

    if let Some(root) = located("PYENV_ROOT", ".pyenv") {
        let mut pyenv = Toolchain::new("pyenv");
        pyenv.readable.push(root.clone());
        for directory in ["shims", "bin"] {
            let entry = root.join(directory);
            if entry.is_dir() {
                pyenv.path_entries.push(entry);
            }
        }
        pyenv
            .variables
            .push(("PYENV_ROOT".to_owned(), root.into_os_string()));
        if let Some(version) = variable("PYENV_VERSION").filter(|value| !value.is_empty()) {
            pyenv.variables.push(("PYENV_VERSION".to_owned(), version));
        }
        found.push(pyenv);
    }

    if let Some(nvm_directory) = located("NVM_DIR", ".nvm")
        && let Some(node) = nvm_node(&nvm_directory, variable("NVM_BIN").map(PathBuf::from))
    {
        let mut nvm = Toolchain::new("nvm");
        nvm.path_entries.push(node.join("bin"));
        nvm.readable.push(node);
        found.push(nvm);
    }

    let go_root = variable("GOROOT")
        .filter(|value| !value.is_empty())
        .map_or_else(|| default_go_root.to_owned(), PathBuf::from);
    if go_root.is_absolute() && go_root.join("bin").is_dir() {
        let mut go = Toolchain::new("go");
        go.readable.push(go_root.clone());
        go.path_entries.push(go_root.join("bin"));
        go.variables
            .push(("GOROOT".to_owned(), go_root.into_os_string()));
        found.push(go);
    }

    if let Some(java_home) = variable("JAVA_HOME")
        .map(PathBuf::from)
        .filter(|path| path.is_absolute() && path.is_dir())
    {
        let mut java = Toolchain::new("java");
        java.readable.push(java_home.clone());
        if java_home.join("bin").is_dir() {
            java.path_entries.push(java_home.join("bin"));
        }
        java.variables
            .push(("JAVA_HOME".to_owned(), java_home.into_os_string()));
        found.push(java);
    }

    found.extend(rest_of_path(variable("PATH"), &found));
    found
}

/// The directories of `path` (the bot's `PATH`) outside the system that no
/// toolchain of `found` shows already (its own `bin`, a pyenv plugin's
/// shims), as the `PATH` toolchain; relative entries are left out.
fn rest_of_path(path: Option<OsString>, found: &[Toolchain]) -> Option<Toolchain> {
    let mut rest = Toolchain::new("PATH");
    for entry in std::env::split_paths(&path?) {
        let system = SYSTEM_PATHS.iter().any(|system| entry.starts_with(system));
        let shown = found
            .iter()
            .flat_map(|toolchain| &toolchain.readable)
            .chain(&rest.readable)
            .any(|readable| entry.starts_with(readable));
        if entry.is_absolute() && entry.is_dir() && !system && !shown {
            rest.readable.push(entry);
        }
    }
    (!rest.readable.is_empty()).then_some(rest)
}

/// The node installation nvm would use: `NVM_BIN`'s when it lies under
/// `NVM_DIR`, else the one the `default` alias names (a version or a prefix
/// such as `20`), else the newest installed.
fn nvm_node(nvm_directory: &Path, current_bin: Option<PathBuf>) -> Option<PathBuf> {
    let versions = nvm_directory.join("versions/node");
    if let Some(bin) = current_bin
        && bin.starts_with(&versions)
        && let Some(node) = bin.parent()
        && bin.is_dir()
    {
        return Some(node.to_owned());
    }
    let mut installed: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(&versions)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let numbers = name
                .strip_prefix('v')?
                .split('.')
                .map(str::parse)
                .collect::<Result<Vec<u64>, _>>()
                .ok()?;
            entry
                .path()
                .join("bin")
                .is_dir()
                .then(|| (numbers, entry.path()))
        })
        .collect();
    installed.sort();
    let wanted = std::fs::read_to_string(nvm_directory.join("alias/default")).unwrap_or_default();
    let wanted: Vec<u64> = wanted
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map_while(|part| part.parse().ok())
        .collect();
    installed
        .iter()
        .rev()
        .find(|(numbers, _)| !wanted.is_empty() && numbers.starts_with(&wanted))
        .or_else(|| installed.last())
        .map(|(_, path)| path.clone())
}

/// Every directory of `toolchains` to show read-only, once each.
pub fn readable_paths(toolchains: &[Toolchain]) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = Vec::new();
    for path in toolchains.iter().flat_map(|toolchain| &toolchain.readable) {
        if !paths.contains(path) {
            paths.push(path.clone());
        }
    }
    paths
}

/// `PATH` for a confined run: the toolchains' entries first (pyenv's shims
/// before the system's `python3`, as `pyenv init` puts them), then `base`
/// (the bot's own `PATH`), each directory once.
pub fn path_with_toolchains(toolchains: &[Toolchain], base: &std::ffi::OsStr) -> OsString {
    let mut entries: Vec<PathBuf> = Vec::new();
    let toolchain_entries = toolchains
        .iter()
        .flat_map(|toolchain| toolchain.path_entries.iter().cloned());
    for entry in toolchain_entries.chain(std::env::split_paths(base)) {
        if !entries.contains(&entry) {
            entries.push(entry);
        }
    }
    std::env::join_paths(entries).unwrap_or_else(|_| base.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(root: &Path, directories: &[&str]) {
        for directory in directories {
            std::fs::create_dir_all(root.join(directory)).unwrap();
        }
    }

    fn names(toolchains: &[Toolchain]) -> Vec<&'static str> {
        toolchains.iter().map(|toolchain| toolchain.name).collect()
    }

    #[test]
    fn a_home_with_rustup_pyenv_and_nvm_gives_each_its_directories_and_variables() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("home");
        layout(
            &home,
            &[
                ".rustup/toolchains/stable",
                ".cargo/bin",
                ".cargo/registry",
                ".pyenv/shims",
                ".pyenv/bin",
                ".nvm/versions/node/v18.20.0/bin",
                ".nvm/versions/node/v20.11.1/bin",
                ".nvm/versions/node/v22.1.0/bin",
                ".nvm/alias",
            ],
        );
        std::fs::write(home.join(".nvm/alias/default"), "20\n").unwrap();
        let tools = root.path().join("tools/bin");
        std::fs::create_dir_all(&tools).unwrap();
        let path = format!(
            "{}:{}:{}:/usr/bin:relative",
            home.join(".cargo/bin").display(),
            home.join(".pyenv/shims").display(),
            tools.display()
        );
        let environment = |name: &str| -> Option<OsString> {
            match name {
                "HOME" => Some(home.clone().into()),
                "PATH" => Some(path.clone().into()),
                "RUSTUP_TOOLCHAIN" => Some("1.80".into()),
                _ => None,
            }
        };
        let toolchains = detect(environment, &root.path().join("no-go"));
        assert_eq!(names(&toolchains), ["rustup", "pyenv", "nvm", "PATH"]);
        let rustup = &toolchains[0];
        assert_eq!(
            rustup.readable,
            [home.join(".rustup"), home.join(".cargo/bin")]
        );
        assert_eq!(rustup.path_entries, [home.join(".cargo/bin")]);
        assert_eq!(
            rustup.variables,
            [
                ("RUSTUP_HOME".to_owned(), home.join(".rustup").into()),
                ("RUSTUP_TOOLCHAIN".to_owned(), "1.80".into())
            ]
        );
        assert_eq!(
            toolchains[1].path_entries,
            [home.join(".pyenv/shims"), home.join(".pyenv/bin")]
        );
        let node = home.join(".nvm/versions/node/v20.11.1");
        assert_eq!(toolchains[2].readable, std::slice::from_ref(&node));
        assert_eq!(toolchains[2].path_entries, [node.join("bin")]);
        // Only what is not shown already, and never the system or a relative entry.
        assert_eq!(toolchains[3].readable, std::slice::from_ref(&tools));
        // The home itself is never shown.
        assert!(!readable_paths(&toolchains).contains(&home));

        let joined = path_with_toolchains(&toolchains, path.as_ref());
        let entries: Vec<PathBuf> = std::env::split_paths(&joined).collect();
        assert_eq!(entries[0], home.join(".cargo/bin"));
        assert_eq!(entries[1], home.join(".pyenv/shims"));
        assert_eq!(entries[2], home.join(".pyenv/bin"));
        assert_eq!(entries[3], node.join("bin"));
        assert_eq!(
            entries.iter().filter(|entry| **entry == tools).count(),
            1,
            "{entries:?}"
        );
    }

    #[test]
    fn variables_win_over_the_home_defaults_and_missing_directories_are_left_out() {
        let root = tempfile::tempdir().unwrap();
        layout(
            root.path(),
            &[
                "rustup",
                "cargo/bin",
                "go/bin",
                "jdk/bin",
                "nvm/versions/node",
            ],
        );
        let environment = |name: &str| -> Option<OsString> {
            let value = match name {
                "HOME" => root.path().join("nobody"),
                "RUSTUP_HOME" => root.path().join("rustup"),
                "CARGO_HOME" => root.path().join("cargo"),
                "PYENV_ROOT" => root.path().join("missing"),
                "NVM_DIR" => root.path().join("nvm"),
                "GOROOT" => root.path().join("go"),
                "JAVA_HOME" => root.path().join("jdk"),
                _ => return None,
            };
            Some(value.into())
        };
        let toolchains = detect_toolchains_in(environment);
        // No pyenv (its root is missing), no nvm (no node installed).
        assert_eq!(names(&toolchains), ["rustup", "go", "java"]);
        assert_eq!(toolchains[1].path_entries, [root.path().join("go/bin")]);
        assert_eq!(
            toolchains[2].variables,
            [("JAVA_HOME".to_owned(), root.path().join("jdk").into())]
        );
    }

    #[test]
    fn a_cargo_home_without_rustup_is_cargo() {
        let root = tempfile::tempdir().unwrap();
        layout(root.path(), &[".cargo/bin"]);
        let toolchains = detect(
            |name: &str| (name == "HOME").then(|| root.path().as_os_str().to_owned()),
            &root.path().join("no-go"),
        );
        assert_eq!(names(&toolchains), ["cargo"]);
        assert!(toolchains[0].variables.is_empty());
    }
}
