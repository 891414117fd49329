//! Learning a run's PID namespace before its command starts, from bubblewrap.
//!
//! [`crate::Contained::finish`] waits until no process of the run's PID
//! namespace is alive, so it must know the namespace. It can only be read
//! from a live member (`/proc/<pid>/ns/pid`), and bubblewrap's first process
//! in it (the namespace's init) is found as a child of the leader only while
//! the leader lives. That is not long enough: bubblewrap exits as soon as the
//! command does, while the kernel is still killing the namespace's other
//! processes, and its init (which left our process group with
//! `--new-session`) is then nobody's child we know.
//!
//! So the namespace is learned first, through two pipes bubblewrap is handed
//! at fixed descriptors ([`ARGUMENTS`]):
//!
//! 1. `--json-status-fd 3`: once it has made the namespace, bubblewrap
//!    writes `{"child-pid": N, …}` there, N being the namespace's first
//!    process;
//! 2. `--block-fd 4`: that process then waits for a byte there before it
//!    starts anything — before it calls `setsid`, forks the command or runs
//!    it — so until then it is the namespace's only process and is in the
//!    run's process group;
//! 3. a task of ours reads N, reads `/proc/N/ns/pid`, checks that N is still
//!    a live child of the leader (so the namespace read is N's), keeps the
//!    namespace and only then writes the byte.
//!
//! The namespace is thus known before the command can run, whenever the
//! command exits and whatever kills the leader. [`Handshake::close`] ends the
//! handshake before the run is killed: after it, nothing is released. A run
//! closed before its namespace was learned never started its command, and
//! its namespace holds nothing outside the process group. When the namespace
//! cannot be read although its first process is there (a `/proc` we may not
//! read), the run is killed before its command starts and
//! [`Closed::failure`] says why.
//!
//! The same pipe is bubblewrap's own channel for what became of the command
//! ([`Handshake::command_ran`]): bubblewrap writes `{"exit-code": N}` there
//! when the command it started has exited, and only when it did start it —
//! not when it could not set the sandbox up (a mount, `/proc`) or could not
//! `execvp` the program. The command never holds the pipe (bubblewrap closes
//! it in the sandbox), so nothing the command prints or writes can pass for
//! bubblewrap's verdict.

use std::ffi::OsStr;
use std::io::{PipeReader, PipeWriter, Write as _};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use command_fds::{CommandFdExt as _, FdMapping};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt as _;

use crate::processes::{self, PidNamespace};

/// The descriptor, in bubblewrap, of the pipe it writes its status to (the
/// namespace's first process, then the command's exit).
const INFO_FD: i32 = 3;
/// The descriptor, in bubblewrap, of the pipe its first process in the
/// namespace waits on.
const BLOCK_FD: i32 = 4;

/// bubblewrap's arguments for the handshake, first of all its arguments:
/// [`crate::Containment::command`] and
/// [`crate::Containment::confined_command`] put them there, and
/// [`Pipes::install`] hands bubblewrap the pipes they name.
pub(crate) const ARGUMENTS: [&str; 4] = ["--json-status-fd", "3", "--block-fd", "4"];

/// More than bubblewrap's status ever takes (its first process, a few
/// namespace ids, the command's exit code).
const INFO_LIMIT: usize = 4096;

/// The handshake's pipes, mapped into a command that is about to start.
#[derive(Debug)]
pub(crate) struct Pipes {
    /// Where bubblewrap's info arrives.
    info: PipeReader,
    /// A byte here lets the namespace's first process go on.
    release: PipeWriter,
}

impl Pipes {
    /// Make the pipes and hand their other ends to `command`, which must
    /// begin with [`ARGUMENTS`], at the descriptors those name. The command
    /// keeps its ends (our copies) until it is dropped.
    pub(crate) fn install(
        command: &mut tokio::process::Command,
        descriptors: Vec<FdMapping>,
    ) -> std::io::Result<Self> {
        // bubblewrap's arguments begin with them, after `prlimit`'s when
        // the run has resource limits.
        let arguments: Vec<&OsStr> = command.as_std().get_args().collect();
        let expected: Vec<&OsStr> = ARGUMENTS.iter().map(OsStr::new).collect();
        if !arguments
            .windows(ARGUMENTS.len())
            .any(|window| window == expected.as_slice())
        {
            return Err(std::io::Error::other(
                "the command was not made by Containment::command or confined_command, \
                 so bubblewrap would not say which PID namespace the run has",
            ));
        }
        let (info, info_end) = std::io::pipe()?;
        let (block_end, release) = std::io::pipe()?;
        // One mapping for all the descriptors: two separate ones could each
        // overwrite a descriptor the other is about to move.
        let mut mappings = vec![
            FdMapping {
                parent_fd: info_end.into(),
                child_fd: INFO_FD,
            },
            FdMapping {
                parent_fd: block_end.into(),
                child_fd: BLOCK_FD,
            },
        ];
        mappings.extend(descriptors);
        command
            .fd_mappings(mappings)
            .map_err(std::io::Error::other)?;
        Ok(Self { info, release })
    }

    /// Once the command has started with `leader`'s pid: learn the
    /// namespace and release the run, in a task of the current runtime.
    pub(crate) fn start(self, leader: u32) -> Handshake {
        let state = Arc::new(Mutex::new(State {
            namespace: None,
            release: Some(self.release),
            closed: false,
            failure: None,
            status: None,
        }));
        let task = tokio::spawn(learn(self.info, leader, Arc::clone(&state)));
        Handshake { state, task }
    }
}

/// A started handshake.
#[derive(Debug)]
pub(crate) struct Handshake {
    state: Arc<Mutex<State>>,
    /// Reads the info and releases the run; aborted on close.
    task: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct State {
    /// The run's namespace, once learned (and the run released).
    namespace: Option<PidNamespace>,
    /// Our end of the block pipe, until the byte is written. Kept open
    /// otherwise: closing it would release the run too (bubblewrap takes
    /// end of file for the byte), so it goes only with the handshake, after
    /// the run was killed.
    release: Option<PipeWriter>,
    /// Set by [`Handshake::close`]: nothing is released after it.
    closed: bool,
    /// Why the namespace could not be learned (the run was killed).
    failure: Option<String>,
    /// The rest of bubblewrap's status pipe, once the namespace was learned:
    /// the pipe and what was read of it past the first document.
    status: Option<(tokio::net::unix::pipe::Receiver, Vec<u8>)>,
}

/// What [`Handshake::close`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Closed {
    /// The run's namespace; `None` when the command never started (then
    /// nothing of the namespace is outside the run's process group).
    pub(crate) namespace: Option<PidNamespace>,
    /// Why the namespace could not be learned, when it could not although
    /// bubblewrap made one: the run was killed before its command started.
    pub(crate) failure: Option<String>,
}

impl Handshake {
    /// End the handshake: a run not released yet never will be. Call it
    /// before the run is killed and before the leader is reaped.
    pub(crate) fn close(&self) -> Closed {
        let mut state = lock(&self.state);
        state.closed = true;
        self.task.abort();
        Closed {
            namespace: state.namespace,
            failure: state.failure.clone(),
        }
    }
}

impl Handshake {
    /// Whether bubblewrap reported the command's exit on its status pipe:
    /// `true` when the command was started and has exited, `false` when
    /// bubblewrap ended without starting it (it could not set the sandbox up
    /// or `execvp` the program) or was killed first. Call it once the leader
    /// (bubblewrap) has exited: all it wrote is then in the pipe.
    pub(crate) fn command_ran(&self) -> bool {
        let mut state = lock(&self.state);
        let Some((pipe, text)) = state.status.as_mut() else {
            return false;
        };
        let mut buffer = [0; 512];
        while text.len() <= INFO_LIMIT {
            match pipe.try_read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => text.extend_from_slice(&buffer[..read]),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_would_block_or_error) => break,
            }
        }
        std::str::from_utf8(text).is_ok_and(|text| text.contains("\"exit-code\""))
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The task: read bubblewrap's info, the namespace of the process it names,
/// and release the run — or kill it when the namespace cannot be read.
async fn learn(info: PipeReader, leader: u32, state: Arc<Mutex<State>>) {
    let mut status = None;
    let learned = match read_child_pid(info).await {
        Ok(Some((child, pipe, rest))) => {
            status = Some((pipe, rest));
            processes::namespace_of_child(leader, child)
        }
        Ok(None) => Ok(None),
        Err(reason) => Err(reason),
    };
    // Under the lock, so `close` comes wholly before or after: the leader
    // is not reaped before `close`, so the group is still the run's.
    let mut state = lock(&state);
    if state.closed {
        return;
    }
    match learned {
        Ok(Some(namespace)) => {
            state.namespace = Some(namespace);
            state.status = status;
            if let Some(mut release) = state.release.take() {
                // One byte into an empty pipe never blocks. It fails only
                // when nothing reads it any more: the namespace's first
                // process is gone, and nothing of the command started.
                if let Err(error) = release.write_all(&[1]) {
                    tracing::debug!(%error, "a contained run ended before it was released");
                }
            }
        }
        // bubblewrap ended before making the namespace, or its first
        // process, or the leader, ended before anything was started.
        Ok(None) => {}
        Err(reason) => {
            tracing::error!(
                %reason,
                "could not learn a contained run's PID namespace; killing it before it starts"
            );
            state.failure = Some(format!(
                "could not learn the run's PID namespace ({reason}); the run was killed \
                 before its command started"
            ));
            let group = Pid::from_raw(i32::try_from(leader).expect("process ids fit in i32"));
            let _ = killpg(group, Signal::SIGKILL);
        }
    }
}

/// The namespace's first process, from bubblewrap's status, with the pipe
/// and what was read past the first document; `None` when bubblewrap closed
/// the pipe without saying (it ended first).
async fn read_child_pid(
    info: PipeReader,
) -> Result<Option<(u32, tokio::net::unix::pipe::Receiver, Vec<u8>)>, String> {
    let mut info = tokio::net::unix::pipe::Receiver::from_owned_fd(info.into())
        .map_err(|error| format!("could not watch bubblewrap's --json-status-fd pipe: {error}"))?;
    let mut text = Vec::new();
    let mut buffer = [0; 512];
    // The info is one flat JSON object: it is whole at its `}`.
    while !text.contains(&b'}') {
        let read = info.read(&mut buffer).await.map_err(|error| {
            format!("could not read bubblewrap's --json-status-fd pipe: {error}")
        })?;
        if read == 0 {
            return Ok(None);
        }
        text.extend_from_slice(&buffer[..read]);
        if text.len() > INFO_LIMIT {
            return Err(format!(
                "bubblewrap's --json-status-fd said more than {INFO_LIMIT} bytes"
            ));
        }
    }
    let end = text
        .iter()
        .position(|byte| *byte == b'}')
        .map_or(text.len(), |end| end + 1);
    let rest = text.split_off(end);
    child_pid(&text)
        .map(|child| Some((child, info, rest)))
        .ok_or_else(|| {
            format!(
                "bubblewrap's --json-status-fd said {:?}, without a \"child-pid\"",
                String::from_utf8_lossy(&text)
            )
        })
}

/// `"child-pid": N` from bubblewrap's info.
fn child_pid(info: &[u8]) -> Option<u32> {
    const KEY: &str = "\"child-pid\"";
    let text = std::str::from_utf8(info).ok()?;
    let rest = &text[text.find(KEY)? + KEY.len()..];
    let rest = rest.trim_start().strip_prefix(':')?.trim_start();
    let end = rest
        .find(|character: char| !character.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok().filter(|pid| *pid > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_child_pid_is_read_from_bubblewraps_info() {
        // bubblewrap 0.8's info, and an older one's without namespace ids.
        let info = b"{\n    \"child-pid\": 19537,\n    \"mnt-namespace\": 4026532177,\n    \
                     \"pid-namespace\": 4026532178\n}\n";
        assert_eq!(child_pid(info), Some(19537));
        assert_eq!(child_pid(b"{\n    \"child-pid\": 42\n}\n"), Some(42));
        assert_eq!(child_pid(b"{\"child-pid\":7}"), Some(7));
        assert_eq!(child_pid(b"{}"), None);
        assert_eq!(child_pid(b"{\"child-pid\": \"x\"}"), None);
        assert_eq!(child_pid(b"{\"child-pid\": 0}"), None);
        assert_eq!(child_pid(b"{\"child-pid\": 99999999999}"), None);
    }

    #[tokio::test]
    async fn a_command_not_made_for_the_handshake_is_refused() {
        let mut command = tokio::process::Command::new("bwrap");
        command.args(["--unshare-pid", "--", "true"]);
        let error = Pipes::install(&mut command, Vec::new()).unwrap_err();
        assert!(
            error.to_string().contains("Containment::command"),
            "{error}"
        );
    }
}
