//! The build + test gate (issue 11 step 2, issue 24): a pull request is
//! reviewed only when its own build and tests pass — or fail the same way
//! on its base branch, or cannot start on the bot's machine at all.
//!
//! The commands come from the repository's configuration, its `CLAUDE.md` /
//! `README.md` or its manifests ([`review_core::build_commands`]);
//! [`discover`] ([`crate::discovery`]) reads them from the worktree.
//! [`run_commands`] runs them all, setup, build and test, in order, in **one
//! shell session** (a `cd`, an `export` or an activated virtualenv carries
//! over), until one fails; the shell reports each command's end on a pipe
//! the commands run without, so the gate knows which one failed and what it
//! printed (one log each):
//!
//! - **contained** by [`review_sandbox`]: a PID namespace (bubblewrap) and a
//!   process group, so nothing a build starts — a daemon, a `setsid` test
//!   server — outlives the gate;
//! - **with a scrubbed environment** ([`build_environment`]): only `PATH`
//!   (the toolchains' entries first), a private `HOME` and `TMPDIR` in the
//!   run directory, a UTF-8 locale, `CI=true` (test runners then neither
//!   watch nor prompt), the variables the detected toolchains need
//!   (`RUSTUP_HOME`, `PYENV_ROOT`, …; [`review_sandbox::toolchains`]), the
//!   repository's dependency caches ([`CACHE_VARIABLES`]) and the
//!   operator's `sandbox.pass_environment` / `sandbox.environment`. Never a
//!   GitHub credential, never the model key: the bot's own environment is
//!   not inherited;
//! - **with standard input `/dev/null`** and standard output and error joined
//!   into one log file per command in the run directory (0600), of which only
//!   a bounded tail is held in memory, however much the build prints;
//! - **under one deadline** for the whole gate (`review.build_timeout_secs`,
//!   [`DEFAULT_TIMEOUT`]): the command running when it passes is killed with
//!   everything it started, and is the failure reported.
//!
//! The outcome is a domain type ([`GateOutcome`]): passed, failed, or an
//! **environment failure** (a program or toolchain the command needs cannot
//! start: [`environment_failure`]), which is the operator's to fix, never the
//! author's. [`failure_comment`] renders a failure for the pull request,
//! every byte of the build's output escaped so it can neither forge a footer
//! nor break the markdown, ANSI escapes removed and the bot's own paths
//! replaced ([`clean_output`]).
//!
//! With [`BuildGateSettings::confinement`] set, the commands are also
//! **confined** ([`review_sandbox::Confinement`]): they see the system and the
//! given toolchains read-only, the worktree, `RUN/build/home` and
//! `RUN/build/tmp` writable (never `RUN/build`, where the logs are), the
//! worktree's own repository (the mirror its `.git` file points into)
//! read-only, a private `/tmp`, and nothing else of the bot's — not its
//! config file, store, home, processes, nor other jobs' checkouts; the
//! toolchains' own directories are shown read-only (never the rest of the
//! service user's home) and the repository's caches writable. Without it
//! (the default until the configuration wires it), only the processes are
//! held.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use review_core::build_commands::{CommandSet, DiscoveredCommands, Discovery, Source};
use review_core::payload::{code_block, inline_code};
use review_sandbox::{Confinement, Contained, Containment, SandboxError, Toolchain};
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
    /// `PATH` for the commands, after the toolchains' own entries.
    pub path: OsString,
    /// What the commands may see, beyond the job's own paths, which the gate
    /// adds (the worktree, `RUN/build/home` and `RUN/build/tmp` writable, the worktree's repository
    /// read-only, the toolchains and the repository's caches): extra
    /// read-only paths, paths to mask, and whether the network is kept.
    /// `None`: not confined (only the processes are held).
    pub confinement: Option<Confinement>,
    /// The toolchains builds use ([`review_sandbox::detect_toolchains`] by
    /// default): shown read-only when confined, their `PATH` entries first,
    /// their variables (`RUSTUP_HOME`, `PYENV_ROOT`, …) set.
    pub toolchains: Vec<Toolchain>,
    /// Variables every build gets after the gate's own, the toolchains' and
    /// the caches' (a later one wins): `sandbox.pass_environment` and
    /// `sandbox.environment`. Never a credential: the configuration refuses
    /// those.
    pub environment: Vec<(String, OsString)>,
    /// `WORK/caches`: where each repository gets writable dependency caches
    /// of its own ([`CACHE_VARIABLES`]), so its second build does not
    /// download again. `None`: no caches kept (each job's tools cache into
    /// its fresh `HOME`). Applied by [`BuildGateSettings::for_repository`].
    pub caches: Option<PathBuf>,
    /// `sandbox.shared_caches`: with [`BuildGateSettings::caches`], the whole
    /// `HOME` is kept per repository too (`caches/OWNER/REPO/home`), not
    /// only the dependency caches: faster still, and more for a hostile pull
    /// request to poison.
    pub shared_home: bool,
    /// This job's repository's cache directory, `caches/OWNER/REPO` (set by
    /// [`BuildGateSettings::for_repository`]).
    pub repository_caches: Option<PathBuf>,
}

/// The dependency caches kept per repository: each variable and the
/// directory of `caches/OWNER/REPO` it points to. `CARGO_HOME` holds
/// cargo's registry and git checkouts (rustup's `cargo` itself stays in the
/// real, read-only `~/.cargo/bin`).
pub const CACHE_VARIABLES: &[(&str, &str)] = &[
    ("CARGO_HOME", "cargo"),
    ("npm_config_cache", "npm"),
    ("PIP_CACHE_DIR", "pip"),
    ("GOMODCACHE", "go/mod"),
    ("GOCACHE", "go/build"),
    ("XDG_CACHE_HOME", "xdg"),
];

/// What is removed from a repository's `CARGO_HOME` before each job, so
/// that a pull request cannot steer the next build through it: cargo's
/// configuration (a `rustc-wrapper`, a registry replacement), installed
/// binaries, credentials, and the extracted sources and git checkouts, which
/// cargo does not verify again (it re-extracts them, offline, from the
/// `.crate` files, whose checksums it does verify, and from its git
/// databases).
const CARGO_SCRUBBED: &[&str] = &[
    "config",
    "config.toml",
    "credentials",
    "credentials.toml",
    "bin",
    "env",
    "registry/src",
    "git/checkouts",
];

impl BuildGateSettings {
    /// These settings for a job of `repository` (`owner/name`): with
    /// [`BuildGateSettings::caches`], its builds use `caches/owner/name`. A
    /// name that is not `OWNER/REPO` gets no caches.
    #[must_use]
    pub fn for_repository(&self, repository: &str) -> Self {
        let mut settings = self.clone();
        settings.repository_caches = self.caches.as_ref().and_then(|root| {
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

    /// Bubblewrap containment, the bot's own `PATH` and toolchains, and
    /// `timeout` (`review.build_timeout_secs`; [`DEFAULT_TIMEOUT`] by
    /// default); no caches.
    pub fn new(timeout: Duration) -> Self {
        Self {
            containment: Containment::default(),
            timeout,
            path: std::env::var_os("PATH").unwrap_or_else(|| FALLBACK_PATH.into()),
            confinement: None,
            toolchains: review_sandbox::detect_toolchains(),
            environment: Vec::new(),
            caches: None,
            shared_home: false,
            repository_caches: None,
        }
    }

    /// Set [`BuildGateSettings::confinement`]: `confinement` holds what every
    /// job's commands may see besides their own paths (extra read-only
    /// paths, [`Confinement::with_network`]); the gate adds the worktree,
    /// its repository, the toolchains, the caches and `RUN/build` for each
    /// run.
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

    /// Set [`BuildGateSettings::toolchains`].
    #[must_use]
    pub fn with_toolchains(mut self, toolchains: Vec<Toolchain>) -> Self {
        self.toolchains = toolchains;
        self
    }

    /// Set [`BuildGateSettings::caches`] (`WORK/caches`).
    #[must_use]
    pub fn with_caches(mut self, caches: impl Into<PathBuf>) -> Self {
        self.caches = Some(caches.into());
        self
    }
}

/// One job's build environment ([`build_environment`]): its directories,
/// made, and the variables its commands get. Holds the repository's cache
/// lock (shared) while it lives.
#[derive(Debug)]
pub struct BuildEnvironment {
    /// `HOME`: `RUN/build/home`, or the repository's shared one.
    pub home: PathBuf,
    /// `TMPDIR`: `RUN/build/tmp`.
    pub temporary: PathBuf,
    /// Writable for the commands besides the worktree: `RUN/build/home`
    /// (or the repository's caches, where a shared home lies) and
    /// `RUN/build/tmp` — never `RUN/build`, where the logs are.
    pub writable: Vec<PathBuf>,
    /// Read-only for the commands: the toolchains' directories.
    pub readable: Vec<PathBuf>,
    /// The whole environment (nothing else of the bot's is inherited).
    pub variables: Vec<(OsString, OsString)>,
    /// The repository's cache lock, held shared while the job builds.
    _caches_lock: Option<std::fs::File>,
}

/// Make one job's build environment under `build_directory` (`RUN/build`):
///
/// - `PATH`: the toolchains' entries, then [`BuildGateSettings::path`];
///   `HOME` and `TMPDIR` private to the job (`HOME` per repository with
///   [`BuildGateSettings::shared_home`]); a UTF-8 locale; `CI=true`;
/// - the toolchains' variables (`RUSTUP_HOME`, `PYENV_ROOT`, …);
/// - with [`BuildGateSettings::repository_caches`], [`CACHE_VARIABLES`]
///   pointing into it. Before the job, unless another job of the same
///   repository is building right now, what a pull request could have
///   planted in `CARGO_HOME` to steer the next build is removed
///   ([`CARGO_SCRUBBED`]);
/// - last, [`BuildGateSettings::environment`].
pub fn build_environment(
    settings: &BuildGateSettings,
    build_directory: &Path,
) -> Result<BuildEnvironment, BuildGateError> {
    let temporary = build_directory.join("tmp");
    // Only the job's home and temporary directory are the build's to write,
    // never `RUN/build` itself: the bot's logs live there, and a link
    // planted next to them (`$HOME/../02.log → the config`) would be
    // written through.
    let mut cache_variables: Vec<(OsString, OsString)> = Vec::new();
    let mut caches_lock = None;
    let mut home = build_directory.join("home");
    let mut writable = Vec::new();
    if let Some(caches) = &settings.repository_caches {
        create_private_directory(caches)?;
        caches_lock = Some(lock_caches(caches)?);
        for (variable, directory) in CACHE_VARIABLES {
            let directory = caches.join(directory);
            create_private_directory(&directory)?;
            cache_variables.push(((*variable).into(), directory.into_os_string()));
        }
        if settings.shared_home {
            home = caches.join("home");
        }
        writable.push(caches.clone());
    }
    create_private_directory(build_directory)?;
    // A job's own home and temporary directory start empty: what an earlier
    // run of the job (resumed after a crash) left there, links included,
    // goes.
    let private_home = home.starts_with(build_directory);
    for directory in [&home, &temporary] {
        if directory.starts_with(build_directory) {
            remove_entry(directory)?;
        }
        create_private_directory(directory)?;
    }
    if private_home {
        writable.push(home.clone());
    }
    writable.push(temporary.clone());
    let mut variables: Vec<(OsString, OsString)> = vec![
        (
            "PATH".into(),
            review_sandbox::toolchains::path_with_toolchains(&settings.toolchains, &settings.path),
        ),
        ("HOME".into(), home.clone().into_os_string()),
        ("TMPDIR".into(), temporary.clone().into_os_string()),
        ("LANG".into(), "C.UTF-8".into()),
        ("LC_ALL".into(), "C.UTF-8".into()),
        ("CI".into(), "true".into()),
    ];
    for toolchain in &settings.toolchains {
        for (name, value) in &toolchain.variables {
            variables.push((name.into(), value.clone()));
        }
    }
    variables.extend(cache_variables);
    for (name, value) in &settings.environment {
        variables.push((name.into(), value.clone()));
    }
    // One value per name, the last given.
    let mut unique: Vec<(OsString, OsString)> = Vec::with_capacity(variables.len());
    for (name, value) in variables {
        match unique.iter_mut().find(|(seen, _)| *seen == name) {
            Some(entry) => entry.1 = value,
            None => unique.push((name, value)),
        }
    }
    Ok(BuildEnvironment {
        home,
        temporary,
        writable,
        readable: review_sandbox::toolchains::readable_paths(&settings.toolchains),
        variables: unique,
        _caches_lock: caches_lock,
    })
}

/// Lock `caches` (`caches/OWNER/REPO`) for a job: exclusively for a moment
/// to scrub its `CARGO_HOME` when no other job of the repository holds it,
/// then shared for the job's length. The lock file lies beside the
/// directory, out of the builds' reach.
fn lock_caches(caches: &Path) -> Result<std::fs::File, BuildGateError> {
    let mut lock_path = caches.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|source| BuildGateError::File {
            action: "open the cache lock",
            path: lock_path.clone(),
            source,
        })?;
    let lock_error = |source| BuildGateError::File {
        action: "lock",
        path: lock_path.clone(),
        source,
    };
    match file.try_lock() {
        Ok(()) => {
            let cargo_home = caches.join("cargo");
            for scrubbed in CARGO_SCRUBBED {
                remove_planted(&cargo_home.join(scrubbed))?;
            }
            file.unlock().map_err(lock_error)?;
        }
        Err(std::fs::TryLockError::WouldBlock) => {
            tracing::debug!(caches = %caches.display(), "another job of this repository is building: its caches are not scrubbed now");
        }
        Err(std::fs::TryLockError::Error(source)) => return Err(lock_error(source)),
    }
    file.lock_shared().map_err(lock_error)?;
    Ok(file)
}

/// Remove `path`, whatever it is (a file, a directory, a link), if it exists.
fn remove_planted(path: &Path) -> Result<(), BuildGateError> {
    let removed = match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => Err(error),
    };
    removed.map_err(|source| BuildGateError::File {
        action: "clear from the dependency cache",
        path: path.to_owned(),
        source,
    })
}

/// What the gate decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateOutcome {
    /// Every command exited 0.
    Passed {
        /// The commands run, in order.
        commands: Vec<String>,
        /// Where they came from ([`Source::name`] says it to people).
        source: Source,
    },
    /// A command failed; the ones after it did not run. It may still not be
    /// the pull request's doing: the flows rerun the commands on the base
    /// commit ([`crate::base_build`]) before they blame it.
    Failed(BuildFailure),
    /// A command could not start: its program or toolchain is missing on
    /// the bot's machine (exit status 126 or 127, "command not found", a
    /// toolchain manager that cannot choose a version). Not the pull
    /// request's doing: the operator is told, the author is not blamed.
    EnvironmentFailure(BuildFailure),
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
    /// Its position among the commands run (0 for the first).
    pub index: usize,
    /// Every command of the run, with where they came from (to run the same
    /// ones again on the base commit).
    pub commands: DiscoveredCommands,
    /// How it ended.
    pub end: CommandEnd,
    /// The end of its output (standard output and error together), at most
    /// [`TAIL_BYTES`].
    pub output_tail: String,
    /// How many bytes it printed in all.
    pub output_bytes: u64,
    /// The whole output, in the run directory.
    pub log: PathBuf,
    /// For an environment failure: what is missing, in one line (the
    /// program, or the toolchain manager's complaint).
    pub missing: Option<String>,
    /// The sandbox's bound the run hit, when its own cgroup says so
    /// ([`review_sandbox::cgroups::RunUsage::bound_hit`]): "its memory
    /// bound (…)".
    pub bound_hit: Option<String>,
    /// The bot's own paths as the build saw them, each with what a comment
    /// shows instead (`.` for the worktree, `$HOME` for the build's home …),
    /// longest first.
    pub own_paths: Vec<(String, String)>,
}

impl BuildFailure {
    /// The source's name, for people (`README.md`, `.review-bot.toml` …).
    pub fn source_name(&self) -> String {
        self.commands.source.name()
    }
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
    /// It ended the shell (`exit 0`, `exec`) before the commands after it ran.
    EndedTheShell,
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
            Self::EndedTheShell => write!(
                formatter,
                "ended the shell before the commands after it could run"
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
    /// The commands are too long to hand to one shell.
    #[error(
        "the build commands from {origin} take {bytes} bytes, more than the {SCRIPT_LIMIT} one \
         shell is given; shorten them (put long scripts in a file of the repository and run it)"
    )]
    TooLong {
        /// Where they came from.
        origin: String,
        /// How long they are together.
        bytes: usize,
    },
}

/// The commands to run, read from the worktree ([`crate::discovery`]).
pub use crate::discovery::discover;

/// Discover the commands ([`discover`]) and run them ([`run_commands`]).
pub async fn run_gate(
    settings: &BuildGateSettings,
    worktree: &Path,
    run_directory: &Path,
    explicit: Option<(Source, &CommandSet)>,
) -> Result<GateOutcome, BuildGateError> {
    match discover(worktree, explicit).await? {
        Discovery::NothingFound { searched } => Ok(GateOutcome::NoCommands { searched }),
        Discovery::Found(found) => run_commands(settings, worktree, run_directory, &found).await,
    }
}

/// The most the commands may take together: one shell gets them as one
/// argument, and Linux bounds an argument at 128 KiB.
const SCRIPT_LIMIT: usize = 96 * 1024;

/// Where the shell writes `end N STATUS` after command N (the commands
/// themselves run with it closed).
const REPORT_FD: i32 = 5;

/// Where the shell reads the gate's answer (`go` or `stop`) before the next
/// command (the commands themselves run with it closed).
const ANSWER_FD: i32 = 6;

/// The longest report line the gate reads; longer ones are not the shell's.
const REPORT_LINE_LIMIT: usize = 256;

/// The most of a finished command's output still in the pipe that is
/// counted as its own once it has ended (what its processes wrote before it
/// exited is at most a pipe's capacity).
const END_DRAIN_LIMIT: usize = 4 * 1024 * 1024;

/// Run `found`'s commands (setup, build, test) in `worktree`, in order, in
/// **one shell session** — a `cd`, an `export` or an activated virtualenv
/// carries over to the commands after it — until one fails, all within
/// [`BuildGateSettings::timeout`], with `found.environment` set. Logs, `HOME`
/// and `TMPDIR` go under `run_directory/build`; each command's output is in
/// its own log (`01.log`, `02.log` …). No commands is
/// [`GateOutcome::NoCommands`].
///
/// The shell is `bash --noprofile --norc` when the build's `PATH` has one,
/// else `sh`. It tells the gate that a command ended, and its status, on a
/// pipe of its own ([`REPORT_FD`]) and waits for the gate's answer on another
/// ([`ANSWER_FD`]); each command runs with both closed, so nothing it prints
/// — and nothing it writes to a file — can name another command as the one
/// that failed. Only shell code written to forge the report could reach the
/// shell's saved copy, and it gains nothing it could not have by changing
/// the pull request's own tests. The gate answers only once everything the
/// command printed before it ended has been read, so each log holds its own
/// command's output (a background process that keeps printing lands in the
/// log of the command running then).
pub async fn run_commands(
    settings: &BuildGateSettings,
    worktree: &Path,
    run_directory: &Path,
    found: &DiscoveredCommands,
) -> Result<GateOutcome, BuildGateError> {
    let commands = found.commands();
    if commands.is_empty() {
        return Ok(GateOutcome::NoCommands {
            searched: Vec::new(),
        });
    }
    let build_directory = run_directory.join("build");
    let environment = build_environment(settings, &build_directory)?;
    // The job's home and temporary directory go when the job ends, however
    // it ends (a build can leave gigabytes there); the logs stay.
    let _removed_at_the_end = RemovedAtTheEnd(
        [&environment.home, &environment.temporary]
            .into_iter()
            .filter(|directory| directory.starts_with(&build_directory))
            .cloned()
            .collect(),
    );
    let home = environment.home.clone();
    let temporary = environment.temporary.clone();
    let shell_path = environment
        .variables
        .iter()
        .find(|(name, _)| name == "PATH")
        .map_or_else(|| settings.path.clone(), |(_, value)| value.clone());
    let shell = Shell::find(&shell_path);
    let script = shell.script(&commands);
    if script.len() > SCRIPT_LIMIT {
        return Err(BuildGateError::TooLong {
            origin: found.source.name(),
            bytes: script.len(),
        });
    }
    // The job's own paths, added to the configured confinement; resolved
    // once, before any of the pull request's code has run.
    let confinement = match &settings.confinement {
        Some(confinement) => Some(
            confinement
                .clone()
                .with_git_worktree(worktree)?
                .with_readable_paths(environment.readable.iter().cloned())
                .with_writable_paths(environment.writable.iter().cloned()),
        ),
        None => None,
    };
    let paths = RunPaths {
        confinement: confinement.as_ref(),
        worktree,
        environment: &environment,
        build_directory: &build_directory,
    };
    let span = tracing::info_span!("build_commands", source = %found.source.name(), commands = commands.len());
    let session = tracing::Instrument::instrument(
        run_session(
            settings,
            &paths,
            &shell,
            &script,
            &found.environment,
            &commands,
        ),
        span,
    )
    .await?;
    let Some(failed) = session else {
        return Ok(GateOutcome::Passed {
            commands,
            source: found.source.clone(),
        });
    };
    let own_paths = own_paths(worktree, run_directory, &home, &temporary);
    let tail = String::from_utf8_lossy(&failed.capture.tail).into_owned();
    let missing = environment_failure(&failed.end, &tail, worktree);
    let failure = BuildFailure {
        command: commands[failed.index].clone(),
        index: failed.index,
        commands: found.clone(),
        end: failed.end,
        output_tail: tail,
        output_bytes: failed.capture.bytes,
        log: failed.log,
        missing: missing.clone(),
        bound_hit: failed.bound_hit,
        own_paths,
    };
    tracing::info!(
        command = %failure.command,
        source = %found.source.name(),
        end = %failure.end,
        log = %failure.log.display(),
        missing = missing.as_deref().unwrap_or(""),
        bound_hit = failure.bound_hit.as_deref().unwrap_or(""),
        "build gate failed"
    );
    Ok(if missing.is_some() {
        GateOutcome::EnvironmentFailure(failure)
    } else {
        GateOutcome::Failed(failure)
    })
}

struct RunPaths<'a> {
    confinement: Option<&'a Confinement>,
    worktree: &'a Path,
    environment: &'a BuildEnvironment,
    build_directory: &'a Path,
}

/// The shell the commands run in.
struct Shell {
    /// `bash`'s path, or `sh`.
    program: PathBuf,
    /// Whether it is bash (`builtin` exists, and `--noprofile --norc`).
    bash: bool,
}

impl Shell {
    /// `bash` from `path` when it has one, else `sh`.
    fn find(path: &OsStr) -> Self {
        for directory in std::env::split_paths(path) {
            let candidate = directory.join("bash");
            if std::fs::metadata(&candidate).is_ok_and(|metadata| {
                metadata.is_file() && metadata.permissions().mode() & 0o111 != 0
            }) {
                return Self {
                    program: candidate,
                    bash: true,
                };
            }
        }
        Self {
            program: PathBuf::from("sh"),
            bash: false,
        }
    }

    /// Its arguments before the script.
    fn options(&self) -> &'static [&'static str] {
        if self.bash {
            &["--noprofile", "--norc", "-c"]
        } else {
            &["-c"]
        }
    }

    /// The script: each command `eval`ed in this shell with the report and
    /// answer pipes closed, then its status reported, then the gate's answer
    /// awaited (`go` runs the next one). A function the commands define
    /// cannot stand in for these builtins in bash (`builtin`); in `sh`,
    /// `command` skips functions too.
    fn script(&self, commands: &[String]) -> String {
        use std::fmt::Write as _;
        let builtin = if self.bash { "builtin" } else { "command" };
        let mut script = String::new();
        for (index, command) in commands.iter().enumerate() {
            let number = index + 1;
            let _ = write!(
                script,
                "{builtin} eval {quoted} {REPORT_FD}>&- {ANSWER_FD}<&-\n\
                 {builtin} printf 'end {number} %s\\n' \"$?\" >&{REPORT_FD}\n\
                 {builtin} read -r review_bot_answer <&{ANSWER_FD} || {builtin} exit 0\n\
                 case $review_bot_answer in go) ;; *) {builtin} exit 0 ;; esac\n",
                quoted = single_quoted(command),
            );
        }
        script
    }
}

/// `text` as one single-quoted shell word (NUL, which no argument can
/// hold, dropped).
fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\0', "").replace('\'', r"'\''"))
}

/// The command that failed in a session, and what it printed.
struct Failed {
    index: usize,
    end: CommandEnd,
    capture: Capture,
    log: PathBuf,
    /// What the run hit in its cgroup.
    bound_hit: Option<String>,
}

/// One command's log and what is kept of its output.
struct CommandOutput {
    log: PathBuf,
    file: tokio::io::BufWriter<tokio::fs::File>,
    capture: Capture,
}

impl CommandOutput {
    fn open(build_directory: &Path, index: usize) -> Result<Self, BuildGateError> {
        let log = build_directory.join(format!("{:02}.log", index + 1));
        let file = tokio::io::BufWriter::new(create_private_file(&log)?);
        Ok(Self {
            log,
            file,
            capture: Capture::default(),
        })
    }

    async fn append(&mut self, chunk: &[u8]) -> Result<(), BuildGateError> {
        self.capture.append(chunk);
        self.file
            .write_all(chunk)
            .await
            .map_err(|source| BuildGateError::File {
                action: "write the build log",
                path: self.log.clone(),
                source,
            })
    }

    async fn close(mut self) -> Result<(PathBuf, Capture), BuildGateError> {
        self.file
            .flush()
            .await
            .map_err(|source| BuildGateError::File {
                action: "write the build log",
                path: self.log.clone(),
                source,
            })?;
        Ok((self.log, self.capture))
    }
}

fn pipe_error(
    action: &'static str,
    paths: &RunPaths<'_>,
) -> impl Fn(std::io::Error) -> BuildGateError {
    let path = paths.build_directory.to_owned();
    move |source| BuildGateError::File {
        action,
        path: path.clone(),
        source,
    }
}

/// Runs the commands in one contained shell; `None` when every one passed.
#[allow(clippy::too_many_lines)]
async fn run_session(
    settings: &BuildGateSettings,
    paths: &RunPaths<'_>,
    shell: &Shell,
    script: &str,
    environment: &std::collections::BTreeMap<String, String>,
    commands: &[String],
) -> Result<Option<Failed>, BuildGateError> {
    let deadline = Instant::now() + settings.timeout;
    let (output_reader, output_writer) =
        std::io::pipe().map_err(pipe_error("make the output pipe in", paths))?;
    let output_writer_for_stderr = output_writer
        .try_clone()
        .map_err(pipe_error("make the output pipe in", paths))?;
    let (report_reader, report_writer) =
        std::io::pipe().map_err(pipe_error("make the report pipe in", paths))?;
    let (answer_reader, answer_writer) =
        std::io::pipe().map_err(pipe_error("make the answer pipe in", paths))?;
    let mut output = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(output_reader))
        .map_err(pipe_error("read the output pipe in", paths))?;
    let mut output_now = std::fs::File::from(
        output
            .as_fd()
            .try_clone_to_owned()
            .map_err(pipe_error("read the output pipe in", paths))?,
    );
    let mut reports = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(report_reader))
        .map_err(pipe_error("read the report pipe in", paths))?;
    let mut answers = tokio::net::unix::pipe::Sender::from_owned_fd(OwnedFd::from(answer_writer))
        .map_err(pipe_error("write the answer pipe in", paths))?;

    let mut command = settings
        .containment
        .command_with(&shell.program, paths.confinement)?;
    command
        .args(shell.options())
        .arg(script)
        .arg(if shell.bash { "bash" } else { "sh" })
        .current_dir(paths.worktree)
        .env_clear()
        .envs(
            paths
                .environment
                .variables
                .iter()
                .map(|(name, value)| (name, value)),
        );
    for (name, value) in environment {
        if is_variable_name(name) && !value.contains('\0') {
            command.env(name, value);
        } else {
            tracing::warn!(variable = %name, "not set for the build: not a variable name, or a NUL in its value");
        }
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::from(output_writer))
        .stderr(Stdio::from(output_writer_for_stderr));
    let spawned = Contained::spawn_with_descriptors(
        &settings.containment,
        &shell.program,
        &mut command,
        vec![
            (OwnedFd::from(report_writer), REPORT_FD),
            (OwnedFd::from(answer_reader), ANSWER_FD),
        ],
    );
    // Our copies of the pipes' ends go with the command: the output ends
    // when the build's processes are gone, the reports when the shell is.
    drop(command);
    let mut contained = spawned?;

    let mut current = 0;
    let mut running = CommandOutput::open(paths.build_directory, current)?;
    let mut reported_any = false;
    let mut finished_all = false;
    let mut failed_end: Option<CommandEnd> = None;
    let mut report_line: Vec<u8> = Vec::new();
    let mut buffer = vec![0; 64 * 1024];
    let mut report_buffer = [0u8; 256];
    let mut output_open = true;
    let mut timed_out = false;
    loop {
        tokio::select! {
            biased;
            () = tokio::time::sleep_until(deadline) => {
                timed_out = true;
                break;
            }
            read = reports.read(&mut report_buffer) => {
                let read = read.unwrap_or(0);
                if read == 0 {
                    break; // the shell is gone
                }
                for &byte in &report_buffer[..read] {
                    if byte != b'\n' {
                        if report_line.len() < REPORT_LINE_LIMIT {
                            report_line.push(byte);
                        }
                        continue;
                    }
                    let line = std::mem::take(&mut report_line);
                    let Some(status) = parse_report(&line, current + 1) else {
                        tracing::warn!(line = %String::from_utf8_lossy(&line), "ignored a report the gate's shell did not write");
                        continue;
                    };
                    reported_any = true;
                    // Everything the command printed before it ended is in
                    // the pipe now: read it as its own.
                    drain_ready(&mut output_now, &mut running, &mut buffer).await?;
                    if status == 0 && current + 1 < commands.len() {
                        std::mem::replace(
                            &mut running,
                            CommandOutput::open(paths.build_directory, current + 1)?,
                        )
                        .close()
                        .await?;
                        current += 1;
                        let _ = answers.write_all(b"go\n").await;
                    } else {
                        finished_all = status == 0;
                        if status != 0 {
                            failed_end = Some(status_end(status));
                        }
                        let _ = answers.write_all(b"stop\n").await;
                    }
                }
            }
            read = output.read(&mut buffer), if output_open => {
                match read {
                    Ok(0) | Err(_) => output_open = false,
                    Ok(read) => {
                        running.append(&buffer[..read]).await?;
                    }
                }
            }
        }
    }
    drop(answers);
    if !timed_out
        && tokio::time::timeout_at(deadline, contained.leader_exited())
            .await
            .is_err()
    {
        timed_out = true;
    }
    let status = contained.finish().await?;
    // Only a process that escaped the containment could hold the output open
    // now.
    if output_open {
        let rest = tokio::time::timeout(DRAIN_LIMIT, async {
            loop {
                match output.read(&mut buffer).await {
                    Ok(0) | Err(_) => return Ok::<(), BuildGateError>(()),
                    Ok(read) => {
                        running.append(&buffer[..read]).await?;
                    }
                }
            }
        })
        .await;
        match rest {
            Ok(result) => result?,
            Err(_elapsed) => {
                tracing::warn!("the build's output stayed open after its processes were killed");
            }
        }
    }
    let (log, capture) = running.close().await?;
    let end = if timed_out {
        CommandEnd::TimedOut(settings.timeout)
    } else if let Some(end) = failed_end {
        end
    } else if finished_all {
        return Ok(None);
    } else {
        // The shell ended before it reported the command: `exit`, `set -e`,
        // or bubblewrap could not start it.
        if !reported_any
            && let Some(error) = contained.failure(&String::from_utf8_lossy(&capture.head))
        {
            return Err(error.into());
        }
        match (status.code(), status.signal()) {
            (Some(0), _) => CommandEnd::EndedTheShell,
            (Some(code), _) => CommandEnd::Exited(code),
            (None, Some(signal)) => CommandEnd::Signalled(signal),
            (None, None) => CommandEnd::Exited(-1),
        }
    };
    Ok(Some(Failed {
        index: current,
        end,
        capture,
        log,
        bound_hit: contained.usage().and_then(|usage| usage.bound_hit()),
    }))
}

/// The status in the shell's report `end N STATUS` of command `expected`
/// (1-based); `None` for any other line.
fn parse_report(line: &[u8], expected: usize) -> Option<i32> {
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split(' ');
    if words.next()? != "end" || words.next()?.parse::<usize>().ok()? != expected {
        return None;
    }
    let status = words.next()?.parse().ok()?;
    words.next().is_none().then_some(status)
}

/// A shell's `$?`: above 128 is "killed by signal (status − 128)".
fn status_end(status: i32) -> CommandEnd {
    if (129..=159).contains(&status) {
        CommandEnd::Signalled(status - 128)
    } else {
        CommandEnd::Exited(status)
    }
}

/// Reads what is in the output pipe now (at most [`END_DRAIN_LIMIT`]) into
/// `running`, without waiting for more.
///
/// `output` is a second handle on the output pipe (non-blocking, as the
/// runtime's): read directly, it sees what is in the pipe even when the
/// runtime has not yet been told.
async fn drain_ready(
    output: &mut std::fs::File,
    running: &mut CommandOutput,
    buffer: &mut [u8],
) -> Result<(), BuildGateError> {
    use std::io::Read as _;
    let mut drained = 0;
    while drained < END_DRAIN_LIMIT {
        match output.read(buffer) {
            Ok(0) => break,
            Ok(read) => {
                drained += read;
                running.append(&buffer[..read]).await?;
            }
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break, // WouldBlock: nothing more yet
        }
    }
    Ok(())
}

/// Whether `name` can be an environment variable's name for a shell.
fn is_variable_name(name: &str) -> bool {
    let mut characters = name.chars();
    characters
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == '_')
        && characters.all(|character| character.is_ascii_alphanumeric() || character == '_')
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

/// Directories of a job removed when it ends (dropped), whatever became of
/// it.
struct RemovedAtTheEnd(Vec<PathBuf>);

impl Drop for RemovedAtTheEnd {
    fn drop(&mut self) {
        for directory in &self.0 {
            if let Err(error) = remove_entry(directory) {
                tracing::warn!(%error, "could not remove a build's directory after the job");
            }
        }
    }
}

/// Remove `path` whatever it is (a directory tree, a file, a link — the link
/// itself, never what it points at); nothing there is fine.
fn remove_entry(path: &Path) -> Result<(), BuildGateError> {
    let removed = match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => Err(error),
        // `remove_dir_all` does not follow links inside the tree. A build
        // can leave directories without write permission: give it back.
        Ok(metadata) if metadata.is_dir() => {
            crate::runs::make_writable(path);
            std::fs::remove_dir_all(path)
        }
        Ok(_) => std::fs::remove_file(path),
    };
    removed.map_err(|source| BuildGateError::File {
        action: "remove the build's directory",
        path: path.to_owned(),
        source,
    })
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

/// Create the build log, readable by the bot's user only (builds print
/// whatever they like), without following links and only as a new file:
/// whatever is at its place is removed first, never written through.
fn create_private_file(path: &Path) -> Result<tokio::fs::File, BuildGateError> {
    review_sandbox::create_private_file(path)
        .map(tokio::fs::File::from_std)
        .map_err(|source| BuildGateError::File {
            action: "create the build log",
            path: path.to_owned(),
            source,
        })
}

/// What [`probe`] found of a program, as a build of the repository sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// It started and printed its version.
    Found {
        /// The first line `PROGRAM --version` printed.
        version: String,
    },
    /// It is not on the builds' `PATH`.
    Missing {
        /// How to provide it.
        advice: String,
    },
    /// It is there but did not start confined (a rustup proxy without its
    /// toolchain, a shim without its root, a missing library).
    Broken {
        /// How `PROGRAM --version` ended.
        end: CommandEnd,
        /// The end of what it printed.
        output: String,
        /// How to make it start.
        advice: String,
    },
}

impl std::fmt::Display for ProbeOutcome {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Found { version } => write!(formatter, "found: {version}"),
            Self::Missing { advice } => write!(formatter, "missing: {advice}"),
            Self::Broken {
                end,
                output,
                advice,
            } => write!(
                formatter,
                "does not start: `--version` {end}: {}; {advice}",
                output.trim()
            ),
        }
    }
}

/// How much of a probe's output is kept in [`ProbeOutcome::Broken`].
const PROBE_OUTPUT_BYTES: usize = 2048;

/// How long a probe may take at most.
const PROBE_TIMEOUT: Duration = Duration::from_mins(2);

/// Start `PROGRAM --version` (`program` a name looked up in `PATH`, or a
/// path) exactly as a build of `repository` (`OWNER/REPO`) would: the same
/// confinement, toolchains, `PATH`, variables and caches, in an empty
/// working directory. For `doctor --repo`: says whether the program is
/// found, and if not, what is missing and how to provide it.
pub async fn probe(
    settings: &BuildGateSettings,
    repository: &str,
    program: &str,
) -> Result<ProbeOutcome, BuildGateError> {
    let mut settings = settings.for_repository(repository);
    settings.timeout = settings.timeout.min(PROBE_TIMEOUT);
    let run_directory = probe_directory()?;
    let worktree = run_directory.join("worktree");
    create_private_directory(&worktree)?;
    // In a subshell: the gate runs every command in one shell, and a
    // command that ends that shell (`exit`, `exec`) is a failure of its own.
    let line = format!(
        "(command -v {program} >/dev/null 2>&1 || exit 127; exec {program} --version)",
        program = single_quoted(program)
    );
    let commands = DiscoveredCommands {
        setup: Vec::new(),
        build: vec![line],
        test: Vec::new(),
        environment: std::collections::BTreeMap::new(),
        source: Source::Operator,
    };
    let outcome = run_commands(&settings, &worktree, &run_directory, &commands).await;
    let log = std::fs::read(run_directory.join("build/01.log")).unwrap_or_default();
    if let Err(error) = std::fs::remove_dir_all(&run_directory) {
        tracing::warn!(path = %run_directory.display(), %error, "could not remove the probe's directory");
    }
    Ok(match outcome? {
        GateOutcome::Passed { .. } | GateOutcome::NoCommands { .. } => {
            let log = String::from_utf8_lossy(&log[..log.len().min(PROBE_OUTPUT_BYTES)]);
            let version = log
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .unwrap_or_default()
                .to_owned();
            ProbeOutcome::Found { version }
        }
        GateOutcome::Failed(failure) | GateOutcome::EnvironmentFailure(failure)
            if failure.end == CommandEnd::Exited(127) =>
        {
            ProbeOutcome::Missing {
                advice: missing_advice(program),
            }
        }
        GateOutcome::Failed(failure) | GateOutcome::EnvironmentFailure(failure) => {
            ProbeOutcome::Broken {
                end: failure.end,
                output: last_bytes(failure.output_tail.trim_end(), PROBE_OUTPUT_BYTES).to_owned(),
                advice: format!(
                    "if `{program}` needs a variable from the bot's environment, name it in \
                 sandbox.pass_environment (or set it in sandbox.environment); if it reads \
                 files outside its own directory, add them to sandbox.readable_paths"
                ),
            }
        }
    })
}

/// What to say about a program builds cannot find.
fn missing_advice(program: &str) -> String {
    let on_host = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|directory| directory.join(program))
            .find(|candidate| candidate.is_file())
    });
    let generic = "rustup, pyenv, nvm and a Go in /usr/local/go are found by themselves";
    match on_host.and_then(|path| path.canonicalize().ok()) {
        Some(found) => {
            let directory = found.parent().unwrap_or(&found);
            format!(
                "`{program}` is at `{}` on this machine but builds cannot start it from \
                 there: add `sandbox.readable_paths = [\"{}\"]` and put that directory \
                 on PATH (sandbox.environment) ({generic})",
                found.display(),
                directory.display()
            )
        }
        None => format!(
            "`{program}` is not installed for the service's user: install it ({generic}), or \
             show its directory with sandbox.readable_paths and put it on PATH \
             (sandbox.environment)"
        ),
    }
}

/// A fresh private directory for one probe, under the system's temporary
/// directory.
fn probe_directory() -> Result<PathBuf, BuildGateError> {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let unique = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    let directory = std::env::temp_dir().join(format!(
        "review-bot-probe-{}-{unique}-{nanos}",
        std::process::id()
    ));
    create_private_directory(&directory)?;
    Ok(directory)
}

/// What is missing when `end` and the output's `tail` say the command could
/// not start — exit status 126 or 127 (a program not found or not
/// executable), or a toolchain manager that cannot pick a version — or
/// `None` for a build that ran and failed. A missing program that is a file
/// of the repository itself (`./build.sh`, `scripts/test`) is not the
/// machine's fault: that is `None` too (the base-branch rerun decides whose
/// it is).
pub fn environment_failure(end: &CommandEnd, tail: &str, worktree: &Path) -> Option<String> {
    let lines: Vec<&str> = tail.lines().rev().take(40).collect();
    for line in &lines {
        let line = line.trim();
        if line.contains("could not choose a version of")
            || (line.contains("version `") && line.contains("is not installed"))
            || line.contains("is not installed (set by")
        {
            return Some(payload_line(line));
        }
    }
    let CommandEnd::Exited(status @ (126 | 127)) = end else {
        return None;
    };
    for line in &lines {
        let line = line.trim();
        let program = [
            ": command not found",
            ": not found",
            ": No such file or directory",
            ": Permission denied",
            ": cannot execute binary file",
        ]
        .iter()
        .find_map(|suffix| line.strip_suffix(suffix))
        .map(|before| before.rsplit(": ").next().unwrap_or(before))
        .map(|program| {
            program.trim_matches(|character: char| matches!(character, '\'' | '"' | '`'))
        });
        if let Some(program) = program.filter(|program| !program.is_empty()) {
            let path = Path::new(program);
            let in_repository =
                (program.contains('/') && path.is_relative()) || path.starts_with(worktree);
            if in_repository {
                return None;
            }
            return Some(if *status == 126 {
                format!("`{program}` cannot be executed")
            } else {
                format!("`{program}` is not installed (not found in the build's PATH)")
            });
        }
    }
    Some(format!(
        "a program the command runs could not be started (exit status {status})"
    ))
}

/// One line of the build's output, fit for a log or a comment: at most 300
/// characters.
fn payload_line(line: &str) -> String {
    let line = clean_output(line, &[]);
    match line.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line,
    }
}

/// The bot's own paths a build's output may show, each with what a comment
/// shows instead, longest first: the worktree (`.`), the build's home and
/// temporary directory, the run directory, and the work directory holding
/// them (when they share one below the filesystem's top level).
fn own_paths(
    worktree: &Path,
    run_directory: &Path,
    home: &Path,
    temporary: &Path,
) -> Vec<(String, String)> {
    let mut paths: Vec<(String, String)> = Vec::new();
    let mut add = |path: &Path, shown: &str| {
        for form in [Some(path.to_owned()), std::fs::canonicalize(path).ok()]
            .into_iter()
            .flatten()
        {
            if let Some(text) = form.to_str()
                && text.len() > 1
                && !paths.iter().any(|(known, _)| known == text)
            {
                paths.push((text.trim_end_matches('/').to_owned(), shown.to_owned()));
            }
        }
    };
    add(worktree, ".");
    add(home, "$HOME");
    add(temporary, "$TMPDIR");
    add(run_directory, "<run directory>");
    let common: PathBuf = worktree
        .components()
        .zip(run_directory.components())
        .take_while(|(left, right)| left == right)
        .map(|(left, _)| left)
        .collect();
    if common.components().count() > 2 {
        add(&common, "<work directory>");
    }
    paths.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
    paths
}

/// `text` as a comment shows a build's output: ANSI escape sequences (CSI,
/// OSC, other `ESC` sequences, a lone `ESC`) and other control characters
/// but newline and tab removed, a line redrawn with carriage returns shown
/// as it was left, and each of `own_paths` replaced by what stands for it
/// (only where the path ends: `/w/pr-1` is not replaced in `/w/pr-10`).
pub fn clean_output(text: &str, own_paths: &[(String, String)]) -> String {
    let mut plain = String::with_capacity(text.len());
    let mut characters = text.chars().peekable();
    while let Some(character) = characters.next() {
        match character {
            '\u{1b}' => match characters.peek() {
                Some('[') => {
                    characters.next();
                    // Parameters and intermediates, then one final byte.
                    while let Some(&next) = characters.peek() {
                        characters.next();
                        if ('\u{40}'..='\u{7e}').contains(&next) {
                            break;
                        }
                    }
                }
                Some(']' | 'P' | '_' | '^' | 'X') => {
                    characters.next();
                    // A string, ended by BEL or ESC \.
                    while let Some(next) = characters.next() {
                        if next == '\u{7}' {
                            break;
                        }
                        if next == '\u{1b}' {
                            if characters.peek() == Some(&'\\') {
                                characters.next();
                            }
                            break;
                        }
                    }
                }
                Some('(' | ')' | '*' | '+' | '#' | '%') => {
                    characters.next();
                    characters.next();
                }
                Some(&next) if ('\u{40}'..='\u{7e}').contains(&next) => {
                    characters.next();
                }
                _ => {} // a lone ESC
            },
            '\u{9b}' => {
                // The one-character CSI.
                for next in characters.by_ref() {
                    if ('\u{40}'..='\u{7e}').contains(&next) {
                        break;
                    }
                }
            }
            '\n' | '\t' | '\r' => plain.push(character),
            character if character.is_control() => {}
            character => plain.push(character),
        }
    }
    let mut shown = String::with_capacity(plain.len());
    for (number, line) in plain.split('\n').enumerate() {
        if number > 0 {
            shown.push('\n');
        }
        // What a terminal shows of a line redrawn with `\r`: its last drawing.
        let line = line.strip_suffix('\r').unwrap_or(line);
        let last = line
            .rsplit('\r')
            .find(|segment| !segment.is_empty())
            .unwrap_or("");
        shown.push_str(last);
    }
    replace_paths(&shown, own_paths)
}

fn replace_paths(text: &str, own_paths: &[(String, String)]) -> String {
    let mut result = text.to_owned();
    for (path, replacement) in own_paths {
        if path.is_empty() || !result.contains(path.as_str()) {
            continue;
        }
        let mut replaced = String::with_capacity(result.len());
        let mut rest = result.as_str();
        while let Some(found) = rest.find(path.as_str()) {
            let after = &rest[found + path.len()..];
            let ends_there = after.chars().next().is_none_or(|next| {
                !(next.is_alphanumeric() || matches!(next, '-' | '_' | '.' | '~'))
            });
            replaced.push_str(&rest[..found]);
            if ends_there {
                replaced.push_str(replacement);
            } else {
                replaced.push_str(path);
            }
            rest = after;
        }
        replaced.push_str(rest);
        result = replaced;
    }
    result
}

/// "1 byte", "2 bytes".
fn bytes(count: u64) -> String {
    format!("{count} byte{}", if count == 1 { "" } else { "s" })
}

/// The output a comment quotes for `failure`: its summary ("Its output (87
/// bytes)", "Last 16384 bytes of its output (3 bytes before them)") and
/// the text, cleaned ([`clean_output`]). The counts are of the output as
/// the command printed it.
pub fn quoted_output(failure: &BuildFailure) -> (String, String) {
    let tail = last_bytes(&failure.output_tail, COMMENT_TAIL_BYTES);
    let omitted = failure.output_bytes.saturating_sub(tail.len() as u64);
    let summary = if omitted > 0 {
        format!(
            "Last {} of its output ({} before them)",
            bytes(tail.len() as u64),
            bytes(omitted)
        )
    } else {
        format!("Its output ({})", bytes(failure.output_bytes))
    };
    let cleaned = clean_output(tail, &failure.own_paths);
    let cleaned = cleaned.trim_end();
    let shown = if cleaned.trim().is_empty() {
        "(no output)".to_owned()
    } else {
        cleaned.to_owned()
    };
    (summary, shown)
}

/// Where the failed command came from, for a comment: "the 2nd of 3
/// commands from README.md".
pub fn command_origin(failure: &BuildFailure) -> String {
    let total = failure.commands.commands().len();
    if total <= 1 {
        format!("the only command from {}", failure.source_name())
    } else {
        format!(
            "command {} of {total} from {}",
            failure.index + 1,
            failure.source_name()
        )
    }
}

/// The pull request comment for a failed gate, without its footer (add
/// `review_core::footer`'s with `review_core::payload::with_footer`). The
/// command and the output are the pull request's text: they are shown in a
/// code span and a fenced block, defused, so they can neither close the
/// `<details>` block nor plant a `review::`/`thread::` id; ANSI escapes are
/// removed and the bot's own paths replaced ([`clean_output`]).
pub fn failure_comment(failure: &BuildFailure) -> String {
    let (summary, shown) = quoted_output(failure);
    format!(
        "**Build failed**: {} {}{}, so this pull request was not reviewed ({}).\n\n\
         <details><summary>{summary}</summary>\n\n{}\n\n</details>\n\n\
         The bot reviews a pull request once its documented build and tests pass.",
        inline_code(&failure.command),
        failure.end,
        failure
            .bound_hit
            .as_ref()
            .map(|bound| format!(" after the build hit {bound}"))
            .unwrap_or_default(),
        command_origin(failure),
        code_block(&shown, Some("text")),
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
    fn a_quoted_word_stays_one_word() {
        assert_eq!(single_quoted("cargo"), "'cargo'");
        assert_eq!(single_quoted("a'b; rm -rf /"), "'a'\\''b; rm -rf /'");
    }

    #[test]
    fn escape_sequences_and_redrawn_lines_are_removed() {
        let text = "\u{1b}[1;31merror\u{1b}[0m \u{1b}]8;;https://x\u{1b}\\link\u{1b}]8;;\u{7} \
                    \u{1b}(Blone \u{1b}\u{9b}2Kend\n 10%\r 50%\r100%\r\nbell\u{7}\tok\n";
        assert_eq!(
            clean_output(text, &[]),
            "error link lone end\n100%\nbell\tok\n"
        );
        // Cut in the middle of a sequence: nothing of it is shown.
        assert_eq!(clean_output("text\u{1b}[38;5", &[]), "text");
        assert_eq!(clean_output("text\u{1b}]0;tit", &[]), "text");
    }

    #[test]
    fn the_bots_paths_are_replaced_only_where_they_end() {
        let paths = vec![
            ("/work/worktrees/o/r/pr-1".to_owned(), ".".to_owned()),
            ("/work/runs/x/build/home".to_owned(), "$HOME".to_owned()),
        ];
        assert_eq!(
            clean_output(
                "at /work/worktrees/o/r/pr-1/src/lib.rs:3 (/work/worktrees/o/r/pr-10/a) \
                 /work/runs/x/build/home/.cargo /work/worktrees/o/r/pr-1",
                &paths
            ),
            "at ./src/lib.rs:3 (/work/worktrees/o/r/pr-10/a) $HOME/.cargo ."
        );
    }

    #[test]
    fn byte_counts_are_plural_only_when_they_should_be() {
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(87), "87 bytes");
    }

    #[test]
    fn environment_failures_name_what_is_missing() {
        let worktree = Path::new("/work/worktrees/o/r/pr-1");
        let missing = |end: CommandEnd, tail: &str| environment_failure(&end, tail, worktree);
        let not_installed = |program: &str| {
            Some(format!(
                "`{program}` is not installed (not found in the build's PATH)"
            ))
        };
        assert_eq!(
            missing(
                CommandEnd::Exited(127),
                "bash: line 3: cargo: command not found\n"
            ),
            not_installed("cargo")
        );
        assert_eq!(
            missing(CommandEnd::Exited(127), "sh: 1: pytest: not found\n"),
            not_installed("pytest")
        );
        assert_eq!(
            missing(
                CommandEnd::Exited(127),
                "/usr/bin/env: 'python': No such file or directory\n"
            ),
            not_installed("python")
        );
        assert_eq!(
            missing(
                CommandEnd::Exited(127),
                "bash: line 1: ./build.sh: No such file or directory\n"
            ),
            None
        );
        let pyenv = "pyenv: version `3.11.4' is not installed (set by /w/.python-version)";
        assert_eq!(
            missing(CommandEnd::Exited(1), &format!("{pyenv}\n")),
            Some(pyenv.to_owned())
        );
        assert_eq!(missing(CommandEnd::Exited(1), "command not found\n"), None);
        assert_eq!(
            missing(CommandEnd::Exited(127), ""),
            Some("a program the command runs could not be started (exit status 127)".to_owned())
        );
    }

    #[test]
    fn reports_must_name_the_command_expected() {
        assert_eq!(parse_report(b"end 2 0", 2), Some(0));
        assert_eq!(parse_report(b"end 2 17", 2), Some(17));
        assert_eq!(parse_report(b"end 1 0", 2), None);
        assert_eq!(parse_report(b"end 2 0 extra", 2), None);
        assert_eq!(parse_report(b"\xff", 2), None);
    }

    #[test]
    fn the_script_quotes_every_command() {
        let shell = Shell {
            program: PathBuf::from("sh"),
            bash: false,
        };
        let script = shell.script(&["echo 'it' \"$HOME\"\0".to_owned()]);
        assert!(
            script.starts_with(r#"command eval 'echo '\''it'\'' "$HOME"' 5>&- 6<&-"#),
            "{script}"
        );
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_duration(Duration::from_mins(20)), "20 minutes");
        assert_eq!(human_duration(Duration::from_mins(1)), "1 minute");
        assert_eq!(human_duration(Duration::from_secs(2)), "2 s");
    }
}
