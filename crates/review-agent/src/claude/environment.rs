//! The environment Claude Code runs with: explicit and minimal.
//!
//! The CLI starts from an empty environment. It gets: a short list of
//! variables copied from ours (`PATH`, locale, toolchain homes, proxies — see
//! [`DEFAULT_INHERITED`]), a `HOME` of its own, the variables that make a
//! headless run behave (listed below), the API key and
//! base URL when configured, and what the caller adds. Claude Code passes its
//! environment on to MCP servers and to the commands its `Bash` tool runs, so
//! nothing secret beyond the model API key is ever in it, and never a GitHub
//! credential.
//!
//! The headless switches: `CLAUDE_CONFIG_DIR` and `CLAUDE_CODE_TMPDIR` inside
//! the run's scratch directory (runs share no sessions, settings or temporary files;
//! 2.1.330 honours both and then writes nothing under `HOME` or `/tmp`),
//! `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1` (only model API requests),
//! `MCP_CONNECTION_NONBLOCKING=0` (wait for MCP servers before the first turn),
//! `CLAUDE_CODE_MAX_RETRIES` (bounded API retries) and `IS_SANDBOX=1` when
//! running as root (required for `--dangerously-skip-permissions` there).
//!
//! `HOME` is the run's own directory, not review-bot's: the operator's home
//! holds credentials the agent must not read (`~/.config/gh/hosts.yml`,
//! `~/.git-credentials`), and Claude Code's `Bash` tool sources the shell
//! profile found there (a slow or interactive profile hangs every command).
//! Rust toolchains installed with rustup keep working: when `CARGO_HOME` /
//! `RUSTUP_HOME` are not set and review-bot's home has `.cargo` / `.rustup`,
//! they are pointed there; the other toolchains the sandbox detects (pyenv,
//! nvm, Go, Java) get their variables and `PATH` entries the same way.

use std::ffi::OsString;
use std::path::Path;

use secrecy::ExposeSecret as _;

use super::settings::ClaudeCodeSettings;
use crate::AgentError;

/// Variables copied from review-bot's own environment by default: what
/// toolchains and the `Bash` tool need to work (`PATH`, locale, toolchain
/// homes), plus proxy and CA settings so the CLI can reach the API from
/// behind a corporate proxy.
pub const DEFAULT_INHERITED: &[&str] = &[
    "PATH",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "TMPDIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOMODCACHE",
    "GOPROXY",
    "JAVA_HOME",
    "ANDROID_HOME",
    "ANDROID_SDK_ROOT",
    "GRADLE_USER_HOME",
    "DEVELOPER_DIR",
];

/// The directories a run's environment points into.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunDirectories<'a> {
    /// `CLAUDE_CONFIG_DIR`.
    pub config: &'a Path,
    /// `HOME`.
    pub home: &'a Path,
    /// `CLAUDE_CODE_TMPDIR`, when short enough for a socket path below it.
    pub temporary: Option<&'a Path>,
}

/// The environment for one run, as ordered pairs.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClaudeEnvironment {
    pub(crate) variables: Vec<(String, OsString)>,
}

impl ClaudeEnvironment {
    /// Everything the CLI gets for one run.
    ///
    /// - `CLAUDE_CONFIG_DIR`: always the run's own, fresh directory (see
    ///   [`super::config_directory`]), so runs share no sessions, settings,
    ///   hooks or caches. Claude Code 2.1.330 writes nothing under `HOME` when
    ///   it is set.
    /// - `HOME`: per run unless configured (see the module docs).
    /// - `CLAUDE_CODE_TMPDIR`: inside the run's scratch directory when given; otherwise
    ///   the CLI leaves a directory per session under `/tmp/claude-<uid>/`.
    /// - `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`: only model API requests.
    /// - `MCP_CONNECTION_NONBLOCKING=0`: wait for MCP servers before the first
    ///   turn (otherwise a slow server's tools are silently missing).
    /// - `CLAUDE_CODE_MAX_RETRIES`: bounded API retries.
    /// - `IS_SANDBOX=1` when running as root: required for
    ///   `--dangerously-skip-permissions` as root.
    pub(crate) fn build(
        settings: &ClaudeCodeSettings,
        directories: RunDirectories<'_>,
        extra: &[(String, String)],
    ) -> Result<Self, AgentError> {
        let mut environment = Self::default();
        for name in &settings.inherited_environment {
            check_not_github_credential(name)?;
            if let Some(value) = std::env::var_os(name) {
                environment.set(name, value);
            }
        }
        environment.keep_rustup_toolchains(directories.home);
        environment.keep_detected_toolchains();
        environment.set("HOME", directories.home.as_os_str().to_owned());
        environment.set(
            "CLAUDE_CONFIG_DIR",
            directories.config.as_os_str().to_owned(),
        );
        if let Some(directory) = directories.temporary {
            environment.set("CLAUDE_CODE_TMPDIR", directory.as_os_str().to_owned());
        }
        environment.set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".into());
        environment.set("MCP_CONNECTION_NONBLOCKING", "0".into());
        environment.set(
            "CLAUDE_CODE_MAX_RETRIES",
            settings.max_retries.to_string().into(),
        );
        if running_as_root() {
            environment.set("IS_SANDBOX", "1".into());
        }
        if let Some(base_url) = &settings.base_url {
            environment.set("ANTHROPIC_BASE_URL", base_url.into());
        }
        if let Some(api_key) = &settings.api_key {
            environment.set("ANTHROPIC_API_KEY", api_key.expose_secret().into());
        }
        for (name, value) in extra {
            check_not_github_credential(name)?;
            check_variable(name, value)?;
            environment.set(name, value.into());
        }
        Ok(environment)
    }

    /// Point `CARGO_HOME` / `RUSTUP_HOME` at review-bot's own home when they
    /// are unset there and the run gets another home.
    fn keep_rustup_toolchains(&mut self, run_home: &Path) {
        let Some(own_home) = std::env::var_os("HOME").map(std::path::PathBuf::from) else {
            return;
        };
        if own_home == run_home {
            return;
        }
        for (name, directory) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
            let path = own_home.join(directory);
            if !self.has(name) && path.is_dir() {
                self.set(name, path.into_os_string());
            }
        }
    }

    /// The other toolchains the sandbox shows the agent
    /// ([`review_sandbox::detect_toolchains`]: pyenv's root, nvm's node, Go,
    /// Java): their variables (`PYENV_ROOT`, …) when unset, their `bin`
    /// directories on `PATH`, so they start as they do in a build.
    fn keep_detected_toolchains(&mut self) {
        let toolchains = review_sandbox::detect_toolchains();
        for (name, value) in toolchains
            .iter()
            .flat_map(|toolchain| toolchain.variables.iter())
        {
            if !self.has(name) {
                self.set(name, value.clone());
            }
        }
        if let Some(path) = self.get("PATH").map(std::ffi::OsStr::to_owned) {
            let path = review_sandbox::toolchains::path_with_toolchains(&toolchains, &path);
            self.set("PATH", path);
        }
    }

    fn has(&self, name: &str) -> bool {
        self.variables.iter().any(|(existing, _)| existing == name)
    }

    fn set(&mut self, name: &str, value: OsString) {
        self.variables.retain(|(existing, _)| existing != name);
        self.variables.push((name.to_owned(), value));
    }

    /// The value of `name`, when set.
    pub(crate) fn get(&self, name: &str) -> Option<&std::ffi::OsStr> {
        self.variables
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_os_str())
    }

    /// The names, for logs (values may be secret).
    pub(crate) fn names(&self) -> Vec<&str> {
        self.variables
            .iter()
            .map(|(name, _)| name.as_str())
            .collect()
    }
}

/// Whether a variable name looks like a GitHub credential (`GITHUB_TOKEN`,
/// `GH_TOKEN`, `GITHUB_PERSONAL_ACCESS_TOKEN`, `GH_ENTERPRISE_TOKEN`, …).
pub fn is_github_credential(name: &str) -> bool {
    let name = name.to_ascii_uppercase();
    let github = name.starts_with("GH_") || name.contains("GITHUB");
    github
        && name.split('_').any(|word| {
            [
                "TOKEN",
                "PAT",
                "SECRET",
                "PASSWORD",
                "KEY",
                "CREDENTIAL",
                "CREDENTIALS",
            ]
            .contains(&word)
        })
}

pub(crate) fn check_not_github_credential(name: &str) -> Result<(), AgentError> {
    if is_github_credential(name) {
        Err(AgentError::GitHubCredential {
            name: name.to_owned(),
        })
    } else {
        Ok(())
    }
}

fn check_variable(name: &str, value: &str) -> Result<(), AgentError> {
    let reason = if name.is_empty() {
        Some("the name is empty")
    } else if name.contains('=') || name.contains('\0') {
        Some("the name contains `=` or a NUL byte")
    } else if value.contains('\0') {
        Some("the value contains a NUL byte")
    } else {
        None
    };
    match reason {
        Some(reason) => Err(AgentError::InvalidEnvironment {
            name: name.to_owned(),
            reason,
        }),
        None => Ok(()),
    }
}

/// Whether this process runs as root (the owner of `/proc/self`).
fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt as _;
    std::fs::metadata("/proc/self").is_ok_and(|metadata| metadata.uid() == 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_credentials_are_recognised_and_other_names_are_not() {
        for name in [
            "GITHUB_TOKEN",
            "GH_TOKEN",
            "github_token",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "GH_ENTERPRISE_TOKEN",
            "GITHUB_APP_PRIVATE_KEY",
            "REVIEW_BOT_GITHUB_TOKEN",
        ] {
            assert!(is_github_credential(name), "{name}");
        }
        for name in [
            "PATH",
            "COMMENTS_FILE",
            "GITHUB_REPOSITORY",
            "ANTHROPIC_API_KEY",
            "REVIEW_BOT_SNAPSHOT",
            "GITHUB_PATH",
        ] {
            assert!(!is_github_credential(name), "{name}");
        }
    }

    #[test]
    fn the_environment_is_explicit_and_rejects_github_tokens() {
        let settings = ClaudeCodeSettings::new("claude", "claude-opus-4-6")
            .with_base_url("http://127.0.0.1:1")
            .with_api_key("sk-ant-test".into());
        let directories = RunDirectories {
            config: Path::new("/run/config"),
            home: Path::new("/run/home"),
            temporary: Some(Path::new("/run/tmp")),
        };
        let environment = ClaudeEnvironment::build(
            &settings,
            directories,
            &[("COMMENTS_FILE".into(), "/run/c.jsonl".into())],
        )
        .unwrap();
        let names = environment.names();
        for expected in [
            "CLAUDE_CONFIG_DIR",
            "CLAUDE_CODE_TMPDIR",
            "HOME",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
            "MCP_CONNECTION_NONBLOCKING",
            "CLAUDE_CODE_MAX_RETRIES",
            "ANTHROPIC_BASE_URL",
            "ANTHROPIC_API_KEY",
            "COMMENTS_FILE",
        ] {
            assert!(
                names.contains(&expected),
                "{expected} missing from {names:?}"
            );
        }
        // The detected toolchains' variables (`PYENV_ROOT`, …) are expected too.
        let toolchain_variables: Vec<String> = review_sandbox::detect_toolchains()
            .into_iter()
            .flat_map(|toolchain| toolchain.variables)
            .map(|(name, _)| name)
            .collect();
        assert!(names.iter().all(|name| {
            DEFAULT_INHERITED.contains(name)
                || toolchain_variables.iter().any(|variable| variable == name)
                || name.starts_with("CLAUDE_")
                || name.starts_with("ANTHROPIC_")
                || [
                    "HOME",
                    "MCP_CONNECTION_NONBLOCKING",
                    "IS_SANDBOX",
                    "COMMENTS_FILE",
                ]
                .contains(name)
        }));
        let home = environment
            .variables
            .iter()
            .find(|(name, _)| name == "HOME")
            .map(|(_, value)| value.clone());
        assert_eq!(home, Some("/run/home".into()));

        let error = ClaudeEnvironment::build(
            &settings,
            directories,
            &[("GH_TOKEN".into(), "ghp_x".into())],
        )
        .unwrap_err();
        assert!(matches!(error, AgentError::GitHubCredential { .. }));
    }
}
