//! Run a command that may be hostile so that nothing it starts outlives it.
//!
//! review-bot runs code it does not trust: the agent CLI (and whatever its
//! tools run) and a pull request's build and test commands. Each such run is a
//! [`Contained`] process:
//!
//! - it is the leader of a process group of its own, and, with
//!   [`Containment::PidNamespace`], runs under bubblewrap in a PID namespace of
//!   its own ([`BWRAP_ARGUMENTS`]). A process that calls `setsid` leaves the
//!   group but not the namespace, whose other processes the kernel kills when
//!   its first one exits;
//! - the namespace is learned before the command starts and kept: bubblewrap
//!   names the namespace's first process on a pipe (`--json-status-fd`) and that
//!   process waits on another (`--block-fd`) until the namespace has been
//!   read from `/proc` (see `handshake.rs`). Looked for later, it could be
//!   gone: bubblewrap exits as soon as the command does, while the kernel is
//!   still killing the rest of the namespace. A run ended before that never
//!   started its command; one whose namespace cannot be read is killed
//!   before it starts, and [`Contained::finish`] says so;
//! - the leader's exit is observed with `waitid(WNOWAIT)`, without reaping it,
//!   so the group is only ever signalled while its id cannot have been reused;
//! - [`Contained::finish`] kills the group, reaps the leader and waits (bounded)
//!   until no process of the group or the namespace is alive, naming the
//!   survivors otherwise ([`SandboxError::Survivors`]); dropping an unfinished
//!   [`Contained`] does the same, blocking the thread for a moment.
//!
//! ```no_run
//! use review_sandbox::{Contained, Containment};
//! # async fn example() -> Result<(), review_sandbox::SandboxError> {
//! let containment = Containment::default();
//! let mut command = containment.command("sh");
//! command.arg("-c").arg("make test").env_clear();
//! let mut run = Contained::spawn(&containment, "sh", &mut command)?;
//! drop(command);
//! run.leader_exited().await;
//! let status = run.finish().await?;
//! # Ok(())
//! # }
//! ```
//!
//! What a run *sees* is a [`Confinement`]: with one,
//! [`Containment::confined_command`] starts the program in an empty root
//! where only the system (read-only), the job's own paths and a private
//! `/tmp` exist, without capabilities, and without the network when asked
//! (see [`confinement`]). Without one, [`Containment::command`] binds the
//! whole filesystem as it is: only the processes are held.

pub mod cgroups;
pub mod confinement;
mod handshake;
mod processes;
pub mod toolchains;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use command_fds::{CommandFdExt as _, FdMapping};
use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

pub use confinement::{Confinement, Limits, SecretVisibility, toolchain_directories};
pub use processes::{Survivor, describe};
pub use toolchains::{Toolchain, detect_toolchains};

/// Create a new file only the bot's user can read, for what a contained run
/// printed (transcripts, logs, the prompt): hostile code prints whatever it
/// likes. The directory is treated as written by an attacker (a run
/// directory a confined run could write, or one resumed after a crash):
/// whatever is at `path` — a file, a symbolic link planted to point at the
/// bot's configuration, a FIFO — is removed, never opened, and the file is
/// created exclusively without following links (`O_CREAT | O_EXCL |
/// O_NOFOLLOW`), so a link planted between the two is refused
/// ([`std::io::ErrorKind::AlreadyExists`]), never written through. A
/// directory at `path` is an error.
pub fn create_private_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "a directory is in the way of the file; remove it",
            ));
        }
        // `remove_file` removes a link itself, never what it points at.
        Ok(_) => std::fs::remove_file(path)?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_CLOEXEC)
        .open(path)
}

/// `program` itself when it names a path, else the first executable file of
/// that name on `PATH`; `None` when there is none.
fn find_program(program: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &Path| {
        std::fs::metadata(path)
            .is_ok_and(|metadata| metadata.is_file() && metadata.permissions().mode() & 0o111 != 0)
    };
    if program.components().count() > 1 {
        return executable(program).then(|| program.to_owned());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|directory| directory.join(program))
        .find(|candidate| executable(candidate))
}

/// util-linux's `prlimit`, which sets a confined run's resource limits
/// ([`Limits`]) and then execs bubblewrap.
pub const PRLIMIT: &str = "prlimit";

/// How long a run's killed processes get to disappear before
/// [`Contained::finish`] names the survivors. Dying takes milliseconds; only
/// a process stuck in uninterruptible I/O takes longer.
pub const SURVIVOR_LIMIT: Duration = Duration::from_secs(10);

/// bubblewrap's arguments before the command's: the filesystem as it is, a
/// PID namespace of the run's own (with its `/proc`), and the namespace dies
/// with review-bot. Public so `review-bot doctor` checks bubblewrap with
/// exactly these.
pub const BWRAP_ARGUMENTS: &[&str] = &[
    "--dev-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--unshare-pid",
    "--die-with-parent",
    "--",
];

/// How a run's processes are held together and killed.
///
/// A process group alone is not enough: a process can leave it with
/// `setsid`, and anything the run starts can call `setsid` too. A PID
/// namespace holds them all: when its first process exits, the kernel kills
/// every other one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// Run the command inside a PID namespace of its own, made by bubblewrap
    /// (`bwrap --unshare-pid --die-with-parent`, the whole filesystem as it
    /// is). The default. `bwrap` is the executable (a path, or a name looked
    /// up in `PATH`); Debian and Ubuntu ship it as `bubblewrap`.
    PidNamespace {
        /// The `bwrap` executable.
        bwrap: PathBuf,
    },
    /// Only the command's process group: a process that starts a session of
    /// its own escapes the kill. For machines where bubblewrap cannot run;
    /// the guarantee is weaker, and [`Contained::spawn`] says so in the log.
    ProcessGroupOnly,
}

impl Default for Containment {
    fn default() -> Self {
        Self::PidNamespace {
            bwrap: PathBuf::from("bwrap"),
        }
    }
}

impl Containment {
    /// A command that runs `program` contained: under bubblewrap (with
    /// [`BWRAP_ARGUMENTS`], after the arguments of the handshake that tells
    /// the run's PID namespace) or directly, in a process group of its own.
    /// Add the program's arguments, directory, environment and standard
    /// streams, then start it with [`Contained::spawn`], and only so: under
    /// bubblewrap it needs the handshake's pipes, which `spawn` hands it.
    pub fn command(&self, program: impl AsRef<OsStr>) -> tokio::process::Command {
        let mut command = match self {
            Self::PidNamespace { bwrap } => {
                let mut command = tokio::process::Command::new(bwrap);
                command
                    .args(handshake::ARGUMENTS)
                    .args(BWRAP_ARGUMENTS)
                    .arg(program);
                command
            }
            Self::ProcessGroupOnly => tokio::process::Command::new(program),
        };
        command.process_group(0);
        command
    }

    /// A command that runs `program` contained and confined: under bubblewrap
    /// with `confinement`'s arguments ([`Confinement::bwrap_arguments`]),
    /// after the handshake's (as [`Containment::command`]), in a process
    /// group of its own. Add the program's arguments, directory (one of the
    /// confinement's paths), environment and standard streams, then start it
    /// with [`Contained::spawn`].
    ///
    /// [`Containment::ProcessGroupOnly`] cannot confine anything: that is
    /// [`SandboxError::ConfinementNeedsBubblewrap`], never a silently
    /// unconfined run.
    pub fn confined_command(
        &self,
        program: impl AsRef<OsStr>,
        confinement: &Confinement,
    ) -> Result<tokio::process::Command, SandboxError> {
        let Self::PidNamespace { bwrap } = self else {
            return Err(SandboxError::ConfinementNeedsBubblewrap);
        };
        // In front of bubblewrap: the wrapper that puts the run in its
        // cgroup (which then takes the bounds its controllers can), then
        // prlimit for the rest. Each execs the next in the same process, so
        // the leader and its group stay.
        let rlimits = match &confinement.cgroup {
            Some(cgroups) => cgroups.rlimits(&confinement.limits),
            None => confinement.limits,
        };
        let limits = rlimits.prlimit_arguments();
        let mut chain: Vec<OsString> = Vec::new();
        if let Some(cgroups) = &confinement.cgroup {
            chain.extend(cgroups.wrapper_arguments(&confinement.limits));
        }
        if !limits.is_empty() {
            let prlimit = find_program(Path::new(PRLIMIT)).unwrap_or_else(|| PRLIMIT.into());
            chain.push(prlimit.into());
            chain.extend(limits.into_iter().map(OsString::from));
            chain.push("--".into());
        }
        let mut command = if chain.is_empty() {
            tokio::process::Command::new(bwrap)
        } else {
            // The next program would start, and only then fail to find
            // bubblewrap: find it first, so a missing one is the same error
            // as without.
            let bwrap = find_program(bwrap).ok_or_else(|| SandboxError::Containment {
                bwrap: bwrap.clone(),
                reason: "could not start it: not found, or not an executable file".to_owned(),
            })?;
            chain.push(bwrap.into());
            let mut command = tokio::process::Command::new(&chain[0]);
            command.args(&chain[1..]);
            command
        };
        command
            .args(handshake::ARGUMENTS)
            .args(confinement.bwrap_arguments()?)
            .arg(program)
            .process_group(0);
        Ok(command)
    }

    /// [`Containment::command`] or, with a confinement,
    /// [`Containment::confined_command`].
    pub fn command_with(
        &self,
        program: impl AsRef<OsStr>,
        confinement: Option<&Confinement>,
    ) -> Result<tokio::process::Command, SandboxError> {
        match confinement {
            Some(confinement) => self.confined_command(program, confinement),
            None => Ok(self.command(program)),
        }
    }
}

/// What bubblewrap said when it, not the program, ended the run: it could
/// not make the namespace, or could not start `program` inside it. Only
/// called once bubblewrap's own status channel said it never started the
/// program ([`Contained::failure`]), so `stderr` is bubblewrap's alone.
fn bubblewrap_failure(
    bwrap: &Path,
    program: &Path,
    stderr: &str,
    status: ExitStatus,
) -> SandboxError {
    let message = stderr
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("bwrap: "))
        .or_else(|| stderr.lines().map(str::trim).find(|line| !line.is_empty()))
        .map_or_else(
            || format!("bubblewrap ended ({status}) without starting the command and said nothing"),
            str::to_owned,
        );
    if let Some(reason) = message.strip_prefix("bwrap: execvp ") {
        let kind = if reason.contains("No such file") {
            std::io::ErrorKind::NotFound
        } else if reason.contains("Permission denied") {
            std::io::ErrorKind::PermissionDenied
        } else {
            std::io::ErrorKind::Other
        };
        return SandboxError::Spawn {
            program: program.to_owned(),
            source: std::io::Error::new(kind, reason.to_owned()),
        };
    }
    SandboxError::Containment {
        bwrap: bwrap.to_owned(),
        reason: message,
    }
}

/// What to do when bubblewrap cannot make its namespaces, one fix per cause.
pub const CONTAINMENT_FIXES: &str = "if it is missing, install it (apt-get install bubblewrap) or \
     give its path; if unprivileged user namespaces are disabled, allow them \
     (Debian: sysctl kernel.unprivileged_userns_clone=1; Ubuntu 24.04 and later: \
     sysctl kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap; \
     everywhere: user.max_user_namespaces > 0) or run the bot as root; inside a container, \
     allow namespaces and mounts (Docker: --security-opt seccomp=unconfined --security-opt \
     apparmor=unconfined, or --privileged); or accept the weaker process-group containment \
     in the settings, which also turns confinement off";

/// A contained run that could not start or did not end cleanly.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// bubblewrap, which gives the run a PID namespace of its own, could not
    /// be started or could not make the namespace.
    #[error(
        "could not contain the processes with bubblewrap (`{}`): {reason}; {CONTAINMENT_FIXES}",
        bwrap.display()
    )]
    Containment {
        /// The `bwrap` executable we tried.
        bwrap: PathBuf,
        /// What went wrong (the spawn error or what bwrap printed).
        reason: String,
    },

    /// A confinement was asked for with [`Containment::ProcessGroupOnly`],
    /// which cannot give one.
    #[error(
        "cannot confine the run without bubblewrap: the containment is process-group only; \
         set it to bubblewrap (apt-get install bubblewrap), or turn confinement off in the \
         configuration, accepting that code from pull requests can then read and write \
         everything the bot's user can"
    )]
    ConfinementNeedsBubblewrap,

    /// A path of the confinement cannot be shown as asked.
    #[error(
        "cannot confine the run to `{}`: {reason}",
        path.display()
    )]
    ConfinementPath {
        /// The path.
        path: PathBuf,
        /// What is wrong with it and what to do.
        reason: String,
    },

    /// The program could not be started (without bubblewrap, or bubblewrap
    /// could not `execvp` it).
    #[error(
        "could not start `{}`: {source}; check that it is installed and executable, or give its full path",
        program.display()
    )]
    Spawn {
        /// The program we tried.
        program: PathBuf,
        /// Why it failed.
        source: std::io::Error,
    },

    /// Waiting for the run's leader failed (an operating-system error), or
    /// the command was not made by [`Containment::command`] (a bug).
    #[error("could not wait for the contained process: {0}; this is a bug or a resource limit")]
    Process(#[source] std::io::Error),

    /// The run could not be put in its own cgroup (`sandbox.cgroup`): the
    /// wrapper in front of bubblewrap said why, and nothing of the run
    /// started.
    #[error(
        "could not put the run in a cgroup of its own: {reason}; check sandbox.cgroup (a cgroup \
         v2 directory the bot may write, holding no process of its own), or set it to \"off\" \
         to bound runs by rlimits only"
    )]
    Cgroup {
        /// What the wrapper said.
        reason: String,
    },

    /// Processes of the run were still alive after they were killed and
    /// [`Contained::finish`] waited for them.
    #[error(
        "processes of the run were still alive {}s after they were killed: {}; they are \
         probably stuck in uninterruptible I/O (look at /proc/PID/stack) and will go when it \
         ends; nothing else of the run is left",
        waited.as_secs(),
        describe(survivors)
    )]
    Survivors {
        /// What was still alive.
        survivors: Vec<Survivor>,
        /// How long we waited.
        waited: Duration,
    },
}

/// A running contained command: the leader we started (bubblewrap, or the
/// program itself), its process group and, with bubblewrap, its PID
/// namespace. Killed on drop unless finished, so a cancelled run leaves
/// nothing behind either.
#[derive(Debug)]
pub struct Contained {
    /// The leader; its standard streams are the caller's to take.
    child: tokio::process::Child,
    /// The leader's process id, which is also the group's id.
    group: u32,
    /// With bubblewrap: the executable, and the handshake that learns the
    /// run's PID namespace and then lets the command start.
    namespace: Option<(PathBuf, handshake::Handshake)>,
    /// Finishes when the leader has exited; `None` once observed. It is
    /// observed with `WNOWAIT`, not reaped: until `finish` reaps it, the
    /// group's id cannot be reused, so signalling the group never reaches an
    /// unrelated process.
    leader_exit: Option<tokio::task::JoinHandle<()>>,
    /// Set once `finish` has reaped the leader and waited for the rest.
    finished: bool,
    /// What runs in it, for errors.
    program: PathBuf,
    /// Once finished: the leader's exit status, and whether bubblewrap said
    /// on its status channel that it started the command.
    outcome: Option<(ExitStatus, bool)>,
    /// The run's own cgroup, when its command was wrapped to make one
    /// ([`cgroups::RunCgroups::wrapper_arguments`]).
    cgroup: Option<cgroups::RunCgroup>,
    /// Once finished: what the run hit in its cgroup.
    usage: Option<cgroups::RunUsage>,
}

impl Contained {
    /// Start `command`, made by [`Containment::command`] (or
    /// [`Containment::confined_command`]) with the same `containment`;
    /// `program` names what runs in it, for errors. Call it in a Tokio
    /// runtime: under bubblewrap, a task of it learns the run's PID namespace
    /// and only then lets the command start. `command` keeps our copies of
    /// the handshake's pipes until it is dropped: drop it once started.
    pub fn spawn(
        containment: &Containment,
        program: impl AsRef<Path>,
        command: &mut tokio::process::Command,
    ) -> Result<Self, SandboxError> {
        Self::spawn_with_descriptors(containment, program, command, Vec::new())
    }

    /// [`Contained::spawn`], handing the command `descriptors` besides its
    /// standard streams: each `(ours, theirs)` is our descriptor and the
    /// number the command finds it at (not 0–4: 3 and 4 are the handshake's
    /// under bubblewrap). Ours are closed in this process once the command
    /// has started and `command` is dropped.
    pub fn spawn_with_descriptors(
        containment: &Containment,
        program: impl AsRef<Path>,
        command: &mut tokio::process::Command,
        descriptors: Vec<(std::os::fd::OwnedFd, i32)>,
    ) -> Result<Self, SandboxError> {
        if descriptors.iter().any(|(_, theirs)| *theirs <= 4) {
            return Err(SandboxError::Process(std::io::Error::other(
                "descriptors 0 to 4 are the command's standard streams and the handshake's",
            )));
        }
        let descriptors: Vec<FdMapping> = descriptors
            .into_iter()
            .map(|(parent_fd, child_fd)| FdMapping {
                parent_fd,
                child_fd,
            })
            .collect();
        if *containment == Containment::ProcessGroupOnly {
            tracing::warn!(
                program = %program.as_ref().display(),
                "running without a PID namespace: a process that starts a session of its own \
                 can outlive the run (set the containment to bubblewrap)"
            );
        }
        let pipes = match containment {
            Containment::PidNamespace { bwrap } => Some((
                bwrap.clone(),
                handshake::Pipes::install(command, descriptors).map_err(SandboxError::Process)?,
            )),
            Containment::ProcessGroupOnly => {
                if !descriptors.is_empty() {
                    command
                        .fd_mappings(descriptors)
                        .map_err(|error| SandboxError::Process(std::io::Error::other(error)))?;
                }
                None
            }
        };
        let child = command.spawn().map_err(|source| match containment {
            Containment::PidNamespace { bwrap } => SandboxError::Containment {
                bwrap: bwrap.clone(),
                reason: format!("could not start it: {source}"),
            },
            Containment::ProcessGroupOnly => SandboxError::Spawn {
                program: program.as_ref().to_owned(),
                source,
            },
        })?;
        let Some(group) = child.id() else {
            return Err(SandboxError::Process(std::io::Error::other(
                "the process exited and was reaped before its id could be read",
            )));
        };
        let cgroup = cgroups::run_cgroup_of(command.as_std());
        let leader = Pid::from_raw(i32::try_from(group).expect("process ids fit in i32"));
        let leader_exit = tokio::task::spawn_blocking(move || {
            while let Err(nix::errno::Errno::EINTR) =
                waitid(Id::Pid(leader), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
            {}
        });
        Ok(Self {
            child,
            group,
            namespace: pipes.map(|(bwrap, pipes)| (bwrap, pipes.start(group))),
            leader_exit: Some(leader_exit),
            finished: false,
            program: program.as_ref().to_owned(),
            outcome: None,
            cgroup,
            usage: None,
        })
    }

    /// The leader, for its standard streams (`stdout.take()`, …). Do not
    /// wait for it here: [`Contained::finish`] reaps it.
    pub fn child_mut(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// The leader's process id (the process group's id).
    pub fn id(&self) -> u32 {
        self.group
    }

    /// Wait until the leader has exited, without reaping it (the rest of the
    /// group may still run: [`Contained::kill`] it). Cancel-safe; returns at
    /// once when it already has.
    pub async fn leader_exited(&mut self) {
        if let Some(exit) = self.leader_exit.as_mut() {
            // A panic in the watcher (none is possible) counts as an exit.
            let _ = exit.await;
            self.leader_exit = None;
        }
    }

    /// `SIGKILL` to the whole group. Safe at any moment before `finish`: the
    /// leader is unreaped until then, so the group's id is still ours. A run
    /// killed before its command started never starts it (and, before
    /// `setsid` and the command, bubblewrap's process in the namespace is in
    /// the group: the kill reaches the whole namespace).
    pub fn kill(&self) {
        if self.finished {
            return;
        }
        self.close_handshake();
        let group = Pid::from_raw(i32::try_from(self.group).expect("process ids fit in i32"));
        // ESRCH (nothing left) is the usual answer after a clean exit.
        let _ = killpg(group, Signal::SIGKILL);
        if let Some(cgroup) = &self.cgroup {
            cgroup.kill();
        }
    }

    /// End the namespace handshake (nothing is released after it): the
    /// run's namespace when its command was started, and why it could not be
    /// learned when the run was killed for that. Before any kill, and before
    /// the leader is reaped.
    fn close_handshake(&self) -> handshake::Closed {
        match &self.namespace {
            Some((_, handshake)) => handshake.close(),
            None => handshake::Closed {
                namespace: None,
                failure: None,
            },
        }
    }

    /// Kill what is left, reap the leader, and wait until no process of the
    /// run — of its group or its PID namespace — is alive;
    /// [`SandboxError::Survivors`] naming them if some still are after
    /// [`SURVIVOR_LIMIT`], [`SandboxError::Containment`] if the namespace
    /// could not be learned (the run was killed before its command started).
    /// The leader's exit status otherwise (killed by `SIGKILL` when it was
    /// still running).
    pub async fn finish(&mut self) -> Result<ExitStatus, SandboxError> {
        let closed = self.close_handshake();
        self.kill();
        let status = self.child.wait().await.map_err(SandboxError::Process)?;
        self.finished = true;
        let command_ran = self
            .namespace
            .as_ref()
            .is_none_or(|(_, handshake)| handshake.command_ran());
        self.outcome = Some((status, command_ran));
        processes::wait_until_gone(self.group, closed.namespace, SURVIVOR_LIMIT)
            .await
            .map_err(|survivors| {
                tracing::error!(survivors = %describe(&survivors), "processes of a contained run outlived it");
                SandboxError::Survivors {
                    survivors,
                    waited: SURVIVOR_LIMIT,
                }
            })?;
        if let Some(cgroup) = &self.cgroup {
            match cgroup.end(SURVIVOR_LIMIT).await {
                Ok(usage) => self.usage = Some(usage),
                Err(error) => tracing::warn!(%error, "the run's cgroup was not removed"),
            }
        }
        if let (Some(reason), Some((bwrap, _))) = (closed.failure, &self.namespace) {
            return Err(SandboxError::Containment {
                bwrap: bwrap.clone(),
                reason,
            });
        }
        Ok(status)
    }
}

impl Contained {
    /// Once [`Contained::finish`] has returned the status: when bubblewrap,
    /// not the program, ended the run — it could not set the sandbox up
    /// ([`SandboxError::Containment`]) or could not start the program
    /// ([`SandboxError::Spawn`]) — what it said, from `stderr` (what the run
    /// printed there). That is known from bubblewrap's own status channel
    /// (`--json-status-fd`), never from the output: a program that prints
    /// `bwrap: …` and exits 1 is a program that failed, and `None`. `None`
    /// too without bubblewrap, when the program ran, and when the run was
    /// killed (a timeout) before bubblewrap said anything.
    pub fn failure(&self, stderr: &str) -> Option<SandboxError> {
        let (bwrap, _) = self.namespace.as_ref()?;
        let (status, command_ran) = self.outcome?;
        if command_ran || status.code().is_none() {
            return None;
        }
        // The cgroup wrapper runs before bubblewrap: when it failed,
        // bubblewrap never started, and its line says why.
        if self.cgroup.is_some()
            && let Some(reason) = stderr
                .lines()
                .find_map(|line| line.trim().strip_prefix(cgroups::WRAPPER_FAILURE))
        {
            return Some(SandboxError::Cgroup {
                reason: reason.to_owned(),
            });
        }
        Some(bubblewrap_failure(bwrap, &self.program, stderr, status))
    }

    /// Once [`Contained::finish`] has returned: what the run hit in its own
    /// cgroup (`None` without one, or when it could not be read).
    pub fn usage(&self) -> Option<cgroups::RunUsage> {
        self.usage
    }
}

impl Drop for Contained {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // A cancelled run: nothing can be awaited here, so this blocks the
        // thread until the killed processes are gone (milliseconds).
        let closed = self.close_handshake();
        self.kill();
        if let Err(survivors) =
            processes::wait_until_gone_blocking(self.group, closed.namespace, SURVIVOR_LIMIT)
        {
            tracing::error!(
                survivors = %describe(&survivors),
                "processes of a cancelled contained run outlived it"
            );
        }
        if let Some(Err(error)) = self
            .cgroup
            .as_ref()
            .map(|cgroup| cgroup.end_blocking(SURVIVOR_LIMIT))
        {
            tracing::warn!(%error, "the cancelled run's cgroup was not removed");
        }
    }
}
