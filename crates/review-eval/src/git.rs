//! The git this crate runs: hardened as review-pipeline's (no hooks, no
//! system or global config, no credential helper, no prompts; `HOME` a
//! directory of ours), contained by review-sandbox so nothing it starts
//! outlives it, and stopped past a timeout. Unlike the pipeline's git it
//! reads local repositories and bundles (`protocol.file.allow=always`): a
//! case's repository is a path on this machine.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use review_sandbox::{Contained, Containment, SandboxError};
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

/// `-c` options on every command.
const HARDENING: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "credential.helper=",
    "core.askPass=",
    "protocol.file.allow=always",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "color.ui=false",
    "core.quotePath=false",
    "init.defaultBranch=main",
];

/// The `PATH` git runs with.
const SAFE_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The most a command may print (a long `git log` of a big repository).
const STDOUT_LIMIT: usize = 256 << 20;

/// How much of stderr an error keeps.
const STDERR_LIMIT: usize = 4_000;

/// A git command that failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// It ran and failed.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command.
        command: String,
        /// How it ended.
        status: String,
        /// The start of its stderr.
        stderr: String,
    },
    /// It could not start or be contained.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// What a command printed, whatever its exit code.
#[derive(Debug)]
pub struct GitRun {
    /// The exit code; `None` when it was killed.
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// The start of standard error.
    pub stderr: String,
}

/// How git is started.
#[derive(Debug, Clone)]
pub struct Git {
    /// `HOME` for git: a private, empty directory.
    pub home: PathBuf,
    /// Each command's limit.
    pub timeout: Duration,
    /// How git's processes are held together and killed.
    pub containment: Containment,
}

impl Git {
    /// Runs `git ARGS` in `dir` with `environment` added; any exit code is returned.
    ///
    /// # Errors
    ///
    /// Git could not start, or ran past the timeout or the output limit.
    pub async fn run_raw(
        &self,
        dir: &Path,
        args: &[&OsStr],
        stdin: Option<Vec<u8>>,
        environment: &[(&str, &OsStr)],
    ) -> Result<GitRun, GitError> {
        let mut command = self.containment.command("git");
        command
            .current_dir(dir)
            .env_clear()
            .env("PATH", SAFE_PATH)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_NO_REPLACE_OBJECTS", "1")
            .env("LC_ALL", "C");
        for (name, value) in environment {
            command.env(name, value);
        }
        for option in HARDENING {
            command.arg("-c").arg(option);
        }
        command
            .args(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut run = Contained::spawn(&self.containment, "git", &mut command)?;
        drop(command);
        let input = run.child_mut().stdin.take();
        let writer = tokio::spawn(async move {
            if let (Some(mut pipe), Some(bytes)) = (input, stdin) {
                let _ = pipe.write_all(&bytes).await;
            }
        });
        let stdout = tokio::spawn(read_limited(
            run.child_mut().stdout.take(),
            STDOUT_LIMIT + 1,
        ));
        let stderr = tokio::spawn(read_limited(run.child_mut().stderr.take(), STDERR_LIMIT));
        let timed_out = tokio::time::timeout(self.timeout, run.leader_exited())
            .await
            .is_err();
        let status = run.finish().await?;
        writer.abort();
        let stdout = stdout.await.unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr.await.unwrap_or_default())
            .trim()
            .to_owned();
        let failed = |status: String, stderr: String| GitError::Failed {
            command: describe(args),
            status,
            stderr,
        };
        if timed_out {
            return Err(failed(
                format!("stopped after {} s", self.timeout.as_secs()),
                stderr,
            ));
        }
        if stdout.len() > STDOUT_LIMIT {
            return Err(failed(
                format!("printed more than {} MiB", STDOUT_LIMIT >> 20),
                stderr,
            ));
        }
        Ok(GitRun {
            code: status.code(),
            stdout,
            stderr,
        })
    }

    /// Runs `git ARGS` in `dir`; anything but exit 0 is an error.
    ///
    /// # Errors
    ///
    /// As [`Git::run_raw`], and a non-zero exit.
    pub async fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
        self.run_with(dir, args, None, &[]).await
    }

    /// [`Git::run`] with standard input and environment.
    ///
    /// # Errors
    ///
    /// As [`Git::run`].
    pub async fn run_with(
        &self,
        dir: &Path,
        args: &[&str],
        stdin: Option<Vec<u8>>,
        environment: &[(&str, &OsStr)],
    ) -> Result<Vec<u8>, GitError> {
        let os_args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let run = self.run_raw(dir, &os_args, stdin, environment).await?;
        if run.code == Some(0) {
            return Ok(run.stdout);
        }
        Err(GitError::Failed {
            command: describe(&os_args),
            status: run
                .code
                .map_or_else(|| "killed".to_owned(), |code| format!("exit status {code}")),
            stderr: run.stderr,
        })
    }

    /// One line of output, trimmed.
    ///
    /// # Errors
    ///
    /// As [`Git::run`].
    pub async fn line(&self, dir: &Path, args: &[&str]) -> Result<String, GitError> {
        let bytes = self.run(dir, args).await?;
        Ok(String::from_utf8_lossy(&bytes).trim().to_owned())
    }

    /// The commit `revision` names in `dir`, or `None` when it names none.
    ///
    /// # Errors
    ///
    /// Git could not run.
    pub async fn commit(&self, dir: &Path, revision: &str) -> Result<Option<String>, GitError> {
        let wanted = format!("{revision}^{{commit}}");
        let words = [
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            wanted.as_str(),
        ];
        let args: Vec<&OsStr> = words.iter().map(OsStr::new).collect();
        let run = self.run_raw(dir, &args, None, &[]).await?;
        Ok((run.code == Some(0))
            .then(|| String::from_utf8_lossy(&run.stdout).trim().to_owned())
            .filter(|sha| !sha.is_empty()))
    }
}

/// Reads a pipe to its end, keeping the first `limit` bytes.
async fn read_limited<R: AsyncRead + Unpin>(pipe: Option<R>, limit: usize) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut pipe) = pipe else {
        return kept;
    };
    let mut buffer = vec![0_u8; 64 << 10];
    loop {
        match pipe.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(read) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&buffer[..read.min(room)]);
            }
        }
    }
    kept
}

fn describe(args: &[&OsStr]) -> String {
    let mut shown = String::from("git");
    for arg in args {
        shown.push(' ');
        shown.push_str(&arg.to_string_lossy());
    }
    shown
}
