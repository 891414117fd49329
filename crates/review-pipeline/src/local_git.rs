//! git on repositories of this machine: the developer's checkout in
//! `review --local`, an eval case's repository or bundle.
//!
//! Hardened like the bot's own git ([`crate::git`]: the environment cleared
//! and rebuilt, `HOME` a private empty directory, no system or global config,
//! [`crate::git::HARDENING`]'s `-c` options first), contained by
//! review-sandbox so nothing it starts outlives it, stopped past a timeout,
//! its output bounded. Unlike the bot's git, which only prints text, it takes
//! standard input and returns bytes, and any exit code can be an answer
//! ([`LocalGit::run_raw`]). The two callers differ only in settings
//! ([`LocalGit::for_local_review`], and review-eval's own): extra `-c`
//! options, how much output, which end of stderr, optional locks.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use review_sandbox::{Contained, Containment, SandboxError};
use tokio::io::AsyncWriteExt as _;

/// `-c` options after [`crate::git::HARDENING`] for reading diffs and file
/// lists as git prints them by default: no external diff, standard
/// prefixes, no colour, paths unquoted.
pub const DIFF_OPTIONS: &[&str] = &[
    "diff.external=",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.relative=false",
    "color.ui=false",
    "core.quotePath=false",
];

/// Which part of standard error an error keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StderrKept {
    /// The first bytes.
    Head(usize),
    /// The last bytes (where git says what went wrong).
    Tail(usize),
}

/// A git command that failed.
#[derive(Debug, thiserror::Error)]
pub enum LocalGitError {
    /// It ran and failed, ran past its timeout, or printed too much.
    #[error("`{command}` failed ({status}): {stderr}")]
    Failed {
        /// The command.
        command: String,
        /// How it ended.
        status: String,
        /// What [`StderrKept`] keeps of its stderr.
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
    /// What [`StderrKept`] keeps of standard error, trimmed.
    pub stderr: String,
}

/// How git is started.
#[derive(Debug, Clone)]
pub struct LocalGit {
    /// `HOME` for git: a private, empty directory.
    pub home: PathBuf,
    /// Each command's limit.
    pub timeout: Duration,
    /// How git's processes are held together and killed.
    pub containment: Containment,
    /// `-c` options after [`crate::git::HARDENING`] (later ones win).
    pub options: Vec<&'static str>,
    /// The most a command may print; past it, an error.
    pub stdout_limit: usize,
    /// What an error keeps of stderr.
    pub stderr_kept: StderrKept,
    /// `--no-optional-locks` (and `GIT_OPTIONAL_LOCKS=0`): reading a
    /// developer's checkout never refreshes its index.
    pub no_optional_locks: bool,
}

impl LocalGit {
    /// The settings of `review --local`: [`DIFF_OPTIONS`], room for a huge
    /// repository's file list (512 MiB), stderr's tail, no optional locks.
    pub fn for_local_review(home: PathBuf, timeout: Duration, containment: Containment) -> Self {
        Self {
            home,
            timeout,
            containment,
            options: DIFF_OPTIONS.to_vec(),
            stdout_limit: 512 << 20,
            stderr_kept: StderrKept::Tail(2_000),
            no_optional_locks: true,
        }
    }

    /// Runs `git ARGS` in `dir` with `environment` added; any exit code is
    /// returned.
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
    ) -> Result<GitRun, LocalGitError> {
        let mut command =
            crate::git::hardened_command(&self.containment, Path::new("git"), dir, &self.home);
        if self.no_optional_locks {
            command.env("GIT_OPTIONAL_LOCKS", "0");
        }
        for (name, value) in environment {
            command.env(name, value);
        }
        for option in crate::git::HARDENING.iter().chain(&self.options) {
            command.arg("-c").arg(option);
        }
        if self.no_optional_locks {
            command.arg("--no-optional-locks");
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
        let stdout = tokio::spawn(crate::git::read_bounded(
            run.child_mut().stdout.take(),
            self.stdout_limit + 1,
            false,
        ));
        let (stderr_limit, tail) = match self.stderr_kept {
            StderrKept::Head(limit) => (limit, false),
            StderrKept::Tail(limit) => (limit, true),
        };
        let stderr = tokio::spawn(crate::git::read_bounded(
            run.child_mut().stderr.take(),
            stderr_limit,
            tail,
        ));
        let timed_out = tokio::time::timeout(self.timeout, run.leader_exited())
            .await
            .is_err();
        let status = run.finish().await?;
        writer.abort();
        let stdout = stdout.await.unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr.await.unwrap_or_default())
            .trim()
            .to_owned();
        let failed = |status: String, stderr: String| LocalGitError::Failed {
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
        if stdout.len() > self.stdout_limit {
            return Err(failed(
                format!("printed more than {} MiB", self.stdout_limit >> 20),
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
    /// As [`LocalGit::run_raw`], and a non-zero exit.
    pub async fn run(&self, dir: &Path, args: &[&str]) -> Result<Vec<u8>, LocalGitError> {
        self.run_with(dir, args, None, &[]).await
    }

    /// [`LocalGit::run`] with standard input and environment.
    ///
    /// # Errors
    ///
    /// As [`LocalGit::run`].
    pub async fn run_with(
        &self,
        dir: &Path,
        args: &[&str],
        stdin: Option<Vec<u8>>,
        environment: &[(&str, &OsStr)],
    ) -> Result<Vec<u8>, LocalGitError> {
        let os_args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let run = self.run_raw(dir, &os_args, stdin, environment).await?;
        if run.code == Some(0) {
            return Ok(run.stdout);
        }
        Err(LocalGitError::Failed {
            command: describe(&os_args),
            status: run
                .code
                .map_or_else(|| "killed".to_owned(), |code| format!("exit status {code}")),
            stderr: run.stderr,
        })
    }

    /// One line of output (a SHA, a path), trimmed.
    ///
    /// # Errors
    ///
    /// As [`LocalGit::run`].
    pub async fn line(&self, dir: &Path, args: &[&str]) -> Result<String, LocalGitError> {
        let bytes = self.run(dir, args).await?;
        Ok(String::from_utf8_lossy(&bytes).trim().to_owned())
    }

    /// The commit `revision` names in `dir`, or `None` when it names none.
    ///
    /// # Errors
    ///
    /// Git could not run.
    pub async fn commit(
        &self,
        dir: &Path,
        revision: &str,
    ) -> Result<Option<String>, LocalGitError> {
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

/// `git ARGS` as an error shows it.
fn describe(args: &[&OsStr]) -> String {
    let mut shown = String::from("git");
    for arg in args {
        shown.push(' ');
        shown.push_str(&arg.to_string_lossy());
    }
    shown
}
