//! The build + test gate (issue 11 step 2): a pull request is reviewed only
//! when its own build and tests pass.
//!
//! The commands come from the repository's configuration, its `CLAUDE.md` /
//! `README.md` or its manifests ([`review_core::build_commands`]);
//! [`discover`] ([`crate::discovery`]) reads them from the worktree. [`run_commands`] runs each with `sh -c` in
//! the worktree, in order, until one fails:
//!
//! - **contained** by [`review_sandbox`]: a PID namespace (bubblewrap) and a
//!   process group, so nothing a build starts — a daemon, a `setsid` test
//!   server — outlives the gate;
//! - **with a scrubbed environment**: only `PATH`, a private `HOME` and
//!   `TMPDIR` in the run directory, a UTF-8 locale and `CI=true` (test runners
//!   then neither watch nor prompt). Never a GitHub credential, never the model
//!   key: the bot's own environment is not inherited;
//! - **with standard input `/dev/null`** and standard output and error joined
//!   into one log file per command in the run directory (0600), of which only
//!   a bounded tail is held in memory, however much the build prints;
//! - **under one deadline** for the whole gate (`review.build_timeout_secs`,
//!   [`DEFAULT_TIMEOUT`]): the command running when it passes is killed with
//!   everything it started, and is the failure reported.
//!
//! The outcome is a domain type ([`GateOutcome`]); [`failure_comment`]
//! renders a failure for the pull request, every byte of the build's output
//! escaped so it can neither forge a footer nor break the markdown.
//!
//! With [`BuildGateSettings::confinement`] set, the commands are also
//! **confined** ([`review_sandbox::Confinement`]): they see the system and the
//! given toolchains read-only, the worktree and `RUN/build` writable, the
//! worktree's own repository (the mirror its `.git` file points into)
//! read-only, a private `/tmp`, and nothing else of the bot's — not its
//! config file, store, home, processes, nor other jobs' checkouts. Without it
//! (the default until the configuration wires it), only the processes are
//! held.

use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::os::unix::fs::DirBuilderExt as _;
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use review_core::build_commands::{CommandSet, Discovery};
use review_core::payload::{code_block, inline_code};
use review_sandbox::{Confinement, Contained, Containment, SandboxError};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::time::Instant;

/// `review.build_timeout_secs`'s default: 20 minutes for the whole gate.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_mins(20);

/// `PATH` for builds when the bot has none.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How much of a command's output is held in memory (the rest is in its log).
pub const TAIL_BYTES: usize = 64 * 1024;

/// How much of the tail a failure comment quotes. Small enough that the
/// comment stays far below GitHub's 65,536-character limit even when
/// escaping lengthens the text.
const COMMENT_TAIL_BYTES: usize = 16 * 1024;

/// How much of the start of the output is kept to tell bubblewrap's own
/// failure from the build's.
const HEAD_BYTES: usize = 1024;

/// How long to wait for the output once the command's processes are gone
/// (only a process that escaped the containment could hold the pipe open).
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

/// How the gate runs commands.
#[derive(Debug, Clone)]
pub struct BuildGateSettings {
    /// How the commands' processes are held together and killed.
    pub containment: Containment,
    /// The deadline for all the commands together.
    pub timeout: Duration,
    /// `PATH` for the commands (where the toolchains are).
    pub path: OsString,
    /// What the commands may see, beyond the job's own paths, which the gate
    /// adds (the worktree and `RUN/build` writable, the worktree's repository
    /// read-only): the toolchains (read-only), paths to mask, and whether
    /// the network is kept. `None`: not confined (only the processes are
    /// held).
    pub confinement: Option<Confinement>,
    /// Opt-in: a directory under which each repository gets one `HOME` its
    /// builds share (dependency caches survive from job to job: faster, but a
    /// hostile pull request can poison what the next build of the same
    /// repository downloads and runs). `None` (the default): a fresh `HOME`
    /// per job. Applied by [`BuildGateSettings::for_repository`].
    pub shared_caches: Option<PathBuf>,
    /// The shared `HOME` of this job's repository, when `shared_caches` is set
    /// (made by [`BuildGateSettings::for_repository`]).
    pub shared_home: Option<PathBuf>,
}

impl BuildGateSettings {
    /// These settings for a job of `repository` (`owner/name`): with
    /// `shared_caches`, the builds' `HOME` is `shared_caches/owner/name`.
    #[must_use]
    pub fn for_repository(&self, repository: &str) -> Self {
        let mut settings = self.clone();
        settings.shared_home = self.shared_caches.as_ref().and_then(|root| {
            let mut parts = repository.split('/');
            match (parts.next(), parts.next(), parts.next()) {
                (Some(owner), Some(name), None)
                    if [owner, name].iter().all(|part| {
                        !part.is_empty() && *part != "." && *part != ".." && !part.contains('\0')
                    }) =>
                {
                    Some(root.join(owner).join(name))
                }
                _ => None,
            }
        });
        settings
    }

    /// Bubblewrap containment, the bot's own `PATH`, and `timeout`
    /// (`review.build_timeout_secs`; [`DEFAULT_TIMEOUT`] by default).
    pub fn new(timeout: Duration) -> Self {
        Self {
            containment: Containment::default(),
            timeout,
            path: std::env::var_os("PATH").unwrap_or_else(|| FALLBACK_PATH.into()),
            confinement: None,
            shared_caches: None,
            shared_home: None,
        }
    }

    /// Set [`BuildGateSettings::confinement`]: `confinement` holds what every
    /// job's commands may see besides their own paths (toolchains read-only,
    /// [`Confinement::with_network`]); the gate adds the worktree, its
    /// repository and `RUN/build` for each run.
    #[must_use]
    pub fn with_confinement(mut self, confinement: Confinement) -> Self {
        self.confinement = Some(confinement);
        self
    }

    /// Set [`BuildGateSettings::containment`].
    #[must_use]
    pub fn with_containment(mut self, containment: Containment) -> Self {
        self.containment = containment;
        self
    }

    /// Set [`BuildGateSettings::path`].
    #[must_use]
    pub fn with_path(mut self, path: impl Into<OsString>) -> Self {
        self.path = path.into();
        self
    }
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateOutcome {
    /// Every command exited 0.
    Passed {
        /// The commands run, in order.
        commands: Vec<String>,
    },
    /// A command failed; the ones after it did not run.
    Failed(BuildFailure),
    /// Nothing documents a build or test command: the gate was skipped (the
    /// review body says so).
    NoCommands {
        /// The documents that were read.
        searched: Vec<String>,
    },
}

/// The command that failed, how, and what it printed last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildFailure {
    /// The command, as documented.
    pub command: String,
    /// How it ended.
    pub end: CommandEnd,
    /// The end of its output (standard output and error together), at most
    /// [`TAIL_BYTES`].
    pub output_tail: String,
    /// How many bytes it printed in all.
    pub output_bytes: u64,
    /// The whole output, in the run directory.
    pub log: PathBuf,
}

/// How a failed command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandEnd {
    /// It exited with this nonzero status.
    Exited(i32),
    /// A signal killed it.
    Signalled(i32),
    /// The gate's deadline passed; it was killed with everything it started.
    TimedOut(Duration),
}

impl std::fmt::Display for CommandEnd {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited(code) => write!(formatter, "exited with status {code}"),
            Self::Signalled(signal) => write!(formatter, "was killed by signal {signal}"),
            Self::TimedOut(after) => write!(
                formatter,
                "timed out after {} and was killed with every process it started",
                human_duration(*after)
            ),
        }
    }
}

fn human_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds >= 60 && seconds.is_multiple_of(60) {
        let minutes = seconds / 60;
        format!("{minutes} minute{}", if minutes == 1 { "" } else { "s" })
    } else {
        format!("{seconds} s")
    }
}

/// The gate could not run (not: the build failed — that is [`GateOutcome::Failed`]).
#[derive(Debug, thiserror::Error)]
pub enum BuildGateError {
    /// A file or directory of the run could not be read or written.
    #[error(
        "could not {action} `{}`: {source}; check that the work directory is writable and has space",
        path.display()
    )]
    File {
        /// What we were doing.
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The containment failed (bubblewrap missing, processes that would not die).
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

/// The commands to run, read from the worktree ([`crate::discovery`]).
pub use crate::discovery::discover;

/// Discover the commands ([`discover`]) and run them ([`run_commands`]).
pub async fn run_gate(
    settings: &BuildGateSettings,
    worktree: &Path,
    run_directory: &Path,
    explicit: Option<&CommandSet>,
) -> Result<GateOutcome, BuildGateError> {
    match discover(worktree, explicit).await? {
        Discovery::NothingFound { searched } => Ok(GateOutcome::NoCommands { searched }),
        Discovery::Found(found) => {
            let commands = found.commands();
            run_commands(settings, worktree, run_directory, &commands).await
        }
    }
}

/// Run `commands` in `worktree`, in order, until one fails, all within
/// [`BuildGateSettings::timeout`]. Logs, `HOME` and `TMPDIR` go under
/// `run_directory/build`. An empty list is [`GateOutcome::NoCommands`].
pub async fn run_commands(
    settings: &BuildGateSettings,
    worktree: &Path,
    run_directory: &Path,
    commands: &[String],
) -> Result<GateOutcome, BuildGateError> {
    if commands.is_empty() {
        return Ok(GateOutcome::NoCommands {
            searched: Vec::new(),
        });
    }
    let build_directory = run_directory.join("build");
    let home = settings
        .shared_home
        .clone()
        .unwrap_or_else(|| build_directory.join("home"));
    let temporary = build_directory.join("tmp");
    for directory in [&build_directory, &home, &temporary] {
        create_private_directory(directory)?;
    }
    // The job's own paths, added to the configured confinement; resolved
    // once, before any of the pull request's code has run.
    let confinement = match &settings.confinement {
        Some(confinement) => Some(
            confinement
                .clone()
                .with_git_worktree(worktree)?
                .with_writable(&build_directory)
                .with_writable(&home),
        ),
        None => None,
    };
    let deadline = Instant::now() + settings.timeout;
    for (index, command) in commands.iter().enumerate() {
        let log = build_directory.join(format!("{:02}.log", index + 1));
        let span = tracing::info_span!("build_command", command = %command);
        let paths = RunPaths {
            confinement: confinement.as_ref(),
            worktree,
            home: &home,
            temporary: &temporary,
            log: &log,
        };
        let ran =
            tracing::Instrument::instrument(run_one(settings, &paths, command, deadline), span)
                .await?;
        if let Some(end) = ran.end {
            tracing::info!(command = %command, %end, log = %log.display(), "build gate failed");
            return Ok(GateOutcome::Failed(BuildFailure {
                command: command.clone(),
                end,
                output_tail: ran.tail,
                output_bytes: ran.bytes,
                log,
            }));
        }
    }
    Ok(GateOutcome::Passed {
        commands: commands.to_vec(),
    })
}

struct RunPaths<'a> {
    confinement: Option<&'a Confinement>,
    worktree: &'a Path,
    home: &'a Path,
    temporary: &'a Path,
    log: &'a Path,
}

/// One command's result: `end` is `None` when it exited 0.
struct Ran {
    end: Option<CommandEnd>,
    tail: String,
    bytes: u64,
}

async fn run_one(
    settings: &BuildGateSettings,
    paths: &RunPaths<'_>,
    command_line: &str,
    deadline: Instant,
) -> Result<Ran, BuildGateError> {
    let log_file = create_private_file(paths.log)?;
    let (reader, writer) = std::io::pipe().map_err(|source| BuildGateError::File {
        action: "make a pipe for the output of",
        path: paths.log.to_owned(),
        source,
    })?;
    let receiver = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader)).map_err(
        |source| BuildGateError::File {
            action: "read the output pipe of",
            path: paths.log.to_owned(),
            source,
        },
    )?;
    let writer_for_stderr = writer.try_clone().map_err(|source| BuildGateError::File {
        action: "make a pipe for the output of",
        path: paths.log.to_owned(),
        source,
    })?;

    let mut command = settings.containment.command_with("sh", paths.confinement)?;
    command
        .arg("-c")
        .arg(command_line)
        .current_dir(paths.worktree)
        .env_clear()
        .env("PATH", &settings.path)
        .env("HOME", paths.home)
        .env("TMPDIR", paths.temporary)
        .env("LANG", "C.UTF-8")
        .env("LC_ALL", "C.UTF-8")
        .env("CI", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_for_stderr));
    let spawned = Contained::spawn(&settings.containment, "sh", &mut command);
    // Our copies of the pipe's write end go with the command: the output ends
    // when the build's processes are gone.
    drop(command);
    let mut contained = spawned?;

    let capture = Arc::new(Mutex::new(Capture::default()));
    let mut copier = tokio::spawn(copy_output(receiver, log_file, Arc::clone(&capture)));
    let timed_out = tokio::time::timeout_at(deadline, contained.leader_exited())
        .await
        .is_err();
    let status = match contained.finish().await {
        Ok(status) => status,
        Err(error) => {
            copier.abort();
            return Err(error.into());
        }
    };
    let drained = match tokio::time::timeout(DRAIN_LIMIT, &mut copier).await {
        Ok(Ok(result)) => result,
        Ok(Err(join_error)) => Err(std::io::Error::other(join_error)),
        Err(_elapsed) => {
            copier.abort();
            tracing::warn!("the build's output stayed open after its processes were killed");
            Ok(())
        }
    };
    drained.map_err(|source| BuildGateError::File {
        action: "write the build log",
        path: paths.log.to_owned(),
        source,
    })?;
    let capture = std::mem::take(
        &mut *capture
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    );
    let end = if timed_out {
        Some(CommandEnd::TimedOut(settings.timeout))
    } else if status.success() {
        None
    } else {
        if let Some(error) = settings
            .containment
            .failure(Path::new("sh"), &String::from_utf8_lossy(&capture.head))
        {
            return Err(error.into());
        }
        Some(match (status.code(), status.signal()) {
            (Some(code), _) => CommandEnd::Exited(code),
            (None, Some(signal)) => CommandEnd::Signalled(signal),
            (None, None) => CommandEnd::Exited(-1),
        })
    };
    Ok(Ran {
        end,
        tail: String::from_utf8_lossy(&capture.tail).into_owned(),
        bytes: capture.bytes,
    })
}

/// What is kept of a command's output in memory.
#[derive(Debug, Default)]
struct Capture {
    /// The first [`HEAD_BYTES`].
    head: Vec<u8>,
    /// The last [`TAIL_BYTES`].
    tail: Vec<u8>,
    /// How many bytes in all.
    bytes: u64,
}

impl Capture {
    fn append(&mut self, chunk: &[u8]) {
        self.bytes += chunk.len() as u64;
        let room = HEAD_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&chunk[..chunk.len().min(room)]);
        self.tail.extend_from_slice(chunk);
        if self.tail.len() > TAIL_BYTES {
            let excess = self.tail.len() - TAIL_BYTES;
            self.tail.drain(..excess);
        }
    }
}

/// Copy the output to the log, keeping its head and tail.
async fn copy_output(
    mut output: tokio::net::unix::pipe::Receiver,
    log: tokio::fs::File,
    capture: Arc<Mutex<Capture>>,
) -> std::io::Result<()> {
    let mut log = tokio::io::BufWriter::new(log);
    let mut buffer = vec![0; 64 * 1024];
    loop {
        let read = output.read(&mut buffer).await?;
        if read == 0 {
            break;
        }
        let chunk = &buffer[..read];
        capture
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .append(chunk);
        log.write_all(chunk).await?;
    }
    log.flush().await
}

fn create_private_directory(path: &Path) -> Result<(), BuildGateError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
        .map_err(|source| BuildGateError::File {
            action: "create the directory",
            path: path.to_owned(),
            source,
        })
}

/// Create (or truncate) the build log, readable by the bot's user only:
/// builds print whatever they like.
fn create_private_file(path: &Path) -> Result<tokio::fs::File, BuildGateError> {
    review_sandbox::create_private_file(path)
        .map(tokio::fs::File::from_std)
        .map_err(|source| BuildGateError::File {
            action: "create the build log",
            path: path.to_owned(),
            source,
        })
}

/// The pull request comment for a failed gate, without its footer (add
/// `review_core::footer`'s with `review_core::payload::with_footer`). The
/// command and the output are the pull request's text: they are shown in a
/// code span and a fenced block, defused, so they can neither close the
/// `<details>` block nor plant a `review::`/`thread::` id.
pub fn failure_comment(failure: &BuildFailure) -> String {
    let tail = last_bytes(failure.output_tail.trim_end(), COMMENT_TAIL_BYTES);
    let shown = if tail.is_empty() { "(no output)" } else { tail };
    let omitted = failure.output_bytes.saturating_sub(tail.len() as u64);
    let summary = if omitted > 0 {
        format!(
            "Last {} bytes of its output ({omitted} bytes before them)",
            tail.len()
        )
    } else {
        "Its output".to_owned()
    };
    format!(
        "**Build failed**: {} {}, so this pull request was not reviewed.\n\n\
         <details><summary>{summary}</summary>\n\n{}\n\n</details>\n\n\
         The bot reviews a pull request once its documented build and tests pass.",
        inline_code(&failure.command),
        failure.end,
        code_block(shown, Some("text")),
    )
}

/// The last `limit` bytes of `text` at most, starting on a character boundary.
fn last_bytes(text: &str, limit: usize) -> &str {
    let mut start = text.len().saturating_sub(limit);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_keeps_head_and_tail_bounded() {
        let mut capture = Capture::default();
        for _ in 0..100 {
            capture.append(&[b'x'; 4096]);
        }
        capture.append(b"the end");
        assert_eq!(capture.head.len(), HEAD_BYTES);
        assert_eq!(capture.tail.len(), TAIL_BYTES);
        assert!(capture.tail.ends_with(b"the end"));
        assert_eq!(capture.bytes, 100 * 4096 + 7);
    }

    #[test]
    fn the_last_bytes_start_on_a_character_boundary() {
        assert_eq!(last_bytes("ééé", 3), "é");
        assert_eq!(last_bytes("abc", 10), "abc");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(Duration::from_mins(20)), "20 minutes");
        assert_eq!(human_duration(Duration::from_mins(1)), "1 minute");
        assert_eq!(human_duration(Duration::from_secs(2)), "2 s");
    }
}
