//! The bot's own git commands, hardened against the repositories they run in.
//!
//! Every git process review-bot starts goes through [`Git::run`]. Code from a pull request
//! runs in worktrees of the bot's mirrors and can write the mirror's config and hooks (a
//! worktree finds them with `git rev-parse --git-common-dir`), so nothing a repository holds
//! may steer these commands:
//!
//! - the environment is cleared and rebuilt: a fixed `PATH`, `HOME` a private directory,
//!   `GIT_CONFIG_NOSYSTEM=1`, `GIT_CONFIG_GLOBAL=/dev/null`, `GIT_TERMINAL_PROMPT=0`,
//!   `GIT_NO_REPLACE_OBJECTS=1`, `GIT_ALLOW_PROTOCOL=http:https`, `LC_ALL=C`;
//! - [`HARDENING`] goes first on every command line (`-c` beats every config file): hooks
//!   off, fsmonitor off, no credential helper, no submodule recursion, `file` and `ext`
//!   transports refused, no automatic gc;
//! - the credential, when there is one, travels in this one process's environment as
//!   `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_0`/`GIT_CONFIG_VALUE_0` (`http.extraHeader`): not on
//!   the command line (`/proc/PID/cmdline` is world-readable), not in a file, not in any
//!   later command's environment;
//! - it runs contained (`review-sandbox`: a process group, and a PID namespace by default); at
//!   its timeout, or when the future is dropped, every process it started (git and its
//!   `git-remote-http`) is killed, and the call returns only once they are gone;
//! - errors name the command (no credential is ever on it) and the tail of its stderr, with
//!   the token and its Basic form redacted should git ever echo them.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use base64::Engine as _;
use review_sandbox::{Contained, Containment};
use secrecy::{ExposeSecret as _, SecretString};
use tokio::io::{AsyncRead, AsyncReadExt as _};

use crate::checkout::CheckoutError;

/// `-c` options on every git command line, before the subcommand. Command-line config wins
/// over the repository's `config`, so a hook or fsmonitor planted there never runs.
pub const HARDENING: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "credential.helper=",
    "core.askPass=",
    "protocol.file.allow=never",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
];

/// The `PATH` git runs with: system directories only, never the service's own `PATH`.
const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How much of stderr an error keeps (the tail, where git says what went wrong).
const STDERR_TAIL: usize = 2_000;

/// How much stdout a command may return before the rest is dropped.
const STDOUT_LIMIT: usize = 1 << 20;

/// How long the output pipes may stay open after the process group was killed.
const DRAIN_GRACE: Duration = Duration::from_secs(5);

/// A token for git over HTTPS, sent as `Authorization: Basic base64(x-access-token:TOKEN)`,
/// the form GitHub accepts for both personal access and installation tokens.
#[derive(Clone)]
pub struct GitCredential {
    token: SecretString,
}

impl GitCredential {
    pub fn new(token: SecretString) -> Self {
        Self { token }
    }

    fn basic(&self) -> String {
        base64::engine::general_purpose::STANDARD
            .encode(format!("x-access-token:{}", self.token.expose_secret()))
    }

    fn header(&self) -> String {
        format!("Authorization: Basic {}", self.basic())
    }

    /// Replaces the token and its Basic form in `text`.
    fn redact(&self, text: &str) -> String {
        let token = self.token.expose_secret();
        let mut text = text.to_owned();
        for secret in [self.basic(), token.to_owned()] {
            if !secret.is_empty() {
                text = text.replace(&secret, "[redacted]");
            }
        }
        text
    }
}

impl fmt::Debug for GitCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("GitCredential([redacted])")
    }
}

/// How to start git: the program, its private home and the per-command timeout.
#[derive(Debug, Clone)]
pub struct Git {
    /// The git executable (a name looked up in `/usr/local/bin:/usr/bin:/bin`, or a path).
    pub program: PathBuf,
    /// `HOME` for git: a directory of the bot's that holds nothing, so no `~/.gitconfig`,
    /// `~/.git-credentials` or `~/.config/git` of the service user is read.
    pub home: PathBuf,
    /// Each command's limit; past it the process group is killed.
    pub timeout: Duration,
    /// How git's processes are held together and killed (`review-sandbox`): a PID namespace
    /// by default, so no `git-remote-http` outlives its command.
    pub containment: Containment,
}

/// What a successful command printed.
#[derive(Debug)]
pub struct GitOutput {
    pub stdout: String,
    /// The exit code (0, or one of [`RunOptions::accept_codes`]).
    pub code: i32,
    /// True when stdout was longer than the limit and cut: a caller that
    /// reads a list from it must not trust it.
    pub truncated: bool,
    /// Where stdout stopped being UTF-8 (a byte offset; `stdout` holds it
    /// lossily converted), `None` when it is UTF-8 throughout.
    pub invalid_utf8_at: Option<usize>,
}

/// What [`Git::run_with`] adds to a plain [`Git::run`].
#[derive(Debug, Default, Clone)]
pub struct RunOptions<'a> {
    /// The credential for this one command.
    pub credential: Option<&'a GitCredential>,
    /// `GIT_INDEX_FILE`: an index of the bot's own (the write flow builds its
    /// commits in a private index, never the worktree's).
    pub index_file: Option<&'a Path>,
    /// `GIT_AUTHOR_NAME`/`EMAIL` and `GIT_COMMITTER_NAME`/`EMAIL`.
    pub identity: Option<(&'a str, &'a str)>,
    /// Exit codes besides 0 that are answers, not failures (`merge-tree`'s 1
    /// for "conflicts", `merge-base --is-ancestor`'s 1 for "no").
    pub accept_codes: &'a [i32],
}

impl Git {
    /// Runs `git ARGS` in `dir`, hardened (see the module docs).
    pub async fn run(
        &self,
        dir: &Path,
        args: &[&str],
        credential: Option<&GitCredential>,
    ) -> Result<GitOutput, CheckoutError> {
        self.run_with(
            dir,
            args,
            &RunOptions {
                credential,
                ..RunOptions::default()
            },
        )
        .await
    }

    /// [`Git::run`] with a private index, a commit identity, or exit codes
    /// that are answers.
    pub async fn run_with(
        &self,
        dir: &Path,
        args: &[&str],
        options: &RunOptions<'_>,
    ) -> Result<GitOutput, CheckoutError> {
        let credential = options.credential;
        let shown = describe(args);
        let mut command = hardened_command(&self.containment, &self.program, dir, &self.home);
        command.env("GIT_ALLOW_PROTOCOL", "http:https");
        if let Some(index) = options.index_file {
            command.env("GIT_INDEX_FILE", index);
        }
        if let Some((name, email)) = options.identity {
            command
                .env("GIT_AUTHOR_NAME", name)
                .env("GIT_AUTHOR_EMAIL", email)
                .env("GIT_COMMITTER_NAME", name)
                .env("GIT_COMMITTER_EMAIL", email);
        }
        if let Some(credential) = credential {
            command
                .env("GIT_CONFIG_COUNT", "1")
                .env("GIT_CONFIG_KEY_0", "http.extraHeader")
                .env("GIT_CONFIG_VALUE_0", credential.header());
        }
        let mut command_line: Vec<OsString> = Vec::with_capacity(HARDENING.len() * 2 + args.len());
        for option in HARDENING {
            command_line.push("-c".into());
            command_line.push((*option).into());
        }
        command_line.extend(args.iter().map(OsString::from));
        command
            .args(&command_line)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());

        // A contained run: its process group (and PID namespace) is killed and waited for
        // until empty when it finishes, times out, or this future is dropped.
        let mut run = Contained::spawn(&self.containment, &self.program, &mut command)?;
        let timeout = self.timeout;
        let stdout = tokio::spawn(read_bounded(
            run.child_mut().stdout.take(),
            STDOUT_LIMIT + 1,
            false,
        ));
        let stderr = tokio::spawn(read_bounded(
            run.child_mut().stderr.take(),
            STDERR_TAIL,
            true,
        ));
        let timed_out = tokio::time::timeout(timeout, run.leader_exited())
            .await
            .is_err();
        let exit = run.finish().await?;
        if timed_out {
            return Err(CheckoutError::Timeout {
                command: shown,
                timeout,
            });
        }
        let stdout = drain(stdout).await;
        let stderr = drain(stderr).await;
        if let Some(error) = run.failure(&String::from_utf8_lossy(&stderr)) {
            return Err(error.into());
        }
        let accepted = exit
            .code()
            .filter(|code| *code == 0 || options.accept_codes.contains(code));
        if let Some(code) = accepted {
            let truncated = stdout.len() > STDOUT_LIMIT;
            let stdout = &stdout[..stdout.len().min(STDOUT_LIMIT)];
            return Ok(GitOutput {
                invalid_utf8_at: std::str::from_utf8(stdout)
                    .err()
                    .map(|error| error.valid_up_to()),
                stdout: String::from_utf8_lossy(stdout).into_owned(),
                code,
                truncated,
            });
        }
        let stderr = String::from_utf8_lossy(&stderr).trim().to_owned();
        let stderr = match credential {
            Some(credential) => credential.redact(&stderr),
            None => stderr,
        };
        Err(CheckoutError::Git {
            command: shown,
            status: describe_status(exit),
            stderr,
        })
    }
}

/// A contained `program` (git) in `dir` with the hardened environment (see
/// the module docs): cleared, then a fixed `PATH`, `home` as `HOME`, no
/// system or global config, no prompts, no replace objects, the C locale.
/// Add [`HARDENING`] and the arguments.
pub(crate) fn hardened_command(
    containment: &Containment,
    program: &Path,
    dir: &Path,
    home: &Path,
) -> tokio::process::Command {
    let mut command = containment.command(program);
    command
        .current_dir(dir)
        .env_clear()
        .env("PATH", SAFE_PATH)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_NO_REPLACE_OBJECTS", "1")
        .env("LC_ALL", "C");
    command
}

async fn drain(task: tokio::task::JoinHandle<Vec<u8>>) -> Vec<u8> {
    match tokio::time::timeout(DRAIN_GRACE, task).await {
        Ok(Ok(bytes)) => bytes,
        _ => Vec::new(),
    }
}

/// Reads a pipe to its end, keeping the first `limit` bytes or (with `tail`) the last.
pub(crate) async fn read_bounded<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    limit: usize,
    tail: bool,
) -> Vec<u8> {
    let Some(mut pipe) = pipe else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let mut buffer = vec![0_u8; 16 * 1024];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                kept.extend_from_slice(&buffer[..read]);
                if kept.len() > limit {
                    if tail {
                        let excess = kept.len() - limit;
                        kept.drain(..excess);
                    } else {
                        kept.truncate(limit);
                    }
                }
            }
        }
    }
    kept
}

/// `git ARGS` as an error shows it. No credential is ever an argument, so this is safe to log.
fn describe(args: &[&str]) -> String {
    let mut shown = String::from("git");
    for arg in args {
        shown.push(' ');
        shown.push_str(arg);
    }
    shown
}

fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt as _;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "unknown status".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_hides_the_token_and_its_basic_form() {
        let credential = GitCredential::new(SecretString::from("ghp_secret123"));
        let basic = credential.basic();
        let text = format!("fatal: ghp_secret123 and {basic}");
        let redacted = credential.redact(&text);
        assert!(!redacted.contains("ghp_secret123"));
        assert!(!redacted.contains(&basic));
        assert_eq!(format!("{credential:?}"), "GitCredential([redacted])");
    }
}
