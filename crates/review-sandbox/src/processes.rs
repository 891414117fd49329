//! What is left of a run: the processes of its process group and of its PID
//! namespace, read from `/proc`, and a bounded wait until none is alive.
//!
//! [`crate::Contained`] kills a run's processes with `SIGKILL`, but a signal is
//! delivered asynchronously: `kill` returns before the target is gone. "The
//! run is over" must mean "nothing of it runs any more", so it waits
//! here until every member has exited (a zombie waiting for its parent counts
//! as gone: it runs no code and holds no file) and names the survivors when
//! the bound passes — a process stuck in uninterruptible I/O, say.
//!
//! Membership is decided from `/proc/<pid>/stat` (the process group, field 5)
//! and `/proc/<pid>/ns/pid` (the PID namespace the run's bubblewrap created,
//! which holds the run's processes even when they started sessions of their
//! own; learned from its first process before the command starts, see
//! `handshake.rs`). Processes we may not inspect (another user's) are not
//! ours.

use std::fmt;
use std::time::{Duration, Instant};

/// How often the bounded waits look again. Short: the usual wait is a few
/// milliseconds, the time the kernel takes to deliver `SIGKILL`.
const POLL_INTERVAL: Duration = Duration::from_millis(5);

/// A PID namespace, by the inode number `/proc/<pid>/ns/pid` links to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PidNamespace(u64);

/// A process still alive after its run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survivor {
    /// Its process id (as review-bot sees it).
    pub pid: u32,
    /// Its state letter from `/proc/<pid>/stat` (`R`, `S`, `D`, `T`, …).
    pub state: char,
    /// Its command name.
    pub command: String,
}

impl fmt::Display for Survivor {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "pid {} ({}, state {})",
            self.pid, self.command, self.state
        )
    }
}

/// One line of `/proc/<pid>/stat`, the fields we use.
struct Stat {
    command: String,
    state: char,
    parent: u32,
    group: u32,
}

fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; the command may itself hold `)` or spaces.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let command = text.get(open + 1..close)?.to_owned();
    let mut rest = text.get(close + 1..)?.split_ascii_whitespace();
    let state = rest.next()?.chars().next()?;
    let parent = rest.next()?.parse().ok()?;
    let group = rest.next()?.parse().ok()?;
    Some(Stat {
        command,
        state,
        parent,
        group,
    })
}

/// The PID namespace `pid` lives in, when we may read it.
pub(crate) fn namespace_of(pid: u32) -> Option<PidNamespace> {
    let link = std::fs::read_link(format!("/proc/{pid}/ns/pid")).ok()?;
    let link = link.to_str()?;
    let inode = link.strip_prefix("pid:[")?.strip_suffix(']')?;
    inode.parse().ok().map(PidNamespace)
}

/// Every process id in `/proc`.
fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

/// The PID namespace of `child`, the first process of the namespace the
/// leader (bubblewrap) made for a run, named by bubblewrap while that process
/// waits to be released. `Ok(None)` when `child` is no longer a live child of
/// `leader`: it exited (bubblewrap failed to set the run up) or the leader
/// did, and either way the run's command never started. Read before the
/// parent is checked, so a pid reused in between cannot pass for `child`.
pub(crate) fn namespace_of_child(leader: u32, child: u32) -> Result<Option<PidNamespace>, String> {
    let namespace = namespace_of(child);
    let alive_child = read_stat(child)
        .is_some_and(|stat| stat.parent == leader && !matches!(stat.state, 'Z' | 'X' | 'x'));
    if !alive_child {
        return Ok(None);
    }
    match namespace {
        Some(namespace) if Some(namespace) != namespace_of(std::process::id()) => {
            Ok(Some(namespace))
        }
        Some(_) => Err(format!(
            "its first process (pid {child}) is in our own PID namespace"
        )),
        None => Err(format!("could not read /proc/{child}/ns/pid")),
    }
}

/// The live members of process group `group` or of `namespace`.
pub(crate) fn survivors(group: u32, namespace: Option<PidNamespace>) -> Vec<Survivor> {
    let mut found = Vec::new();
    for pid in all_pids() {
        let Some(stat) = read_stat(pid) else { continue };
        if matches!(stat.state, 'Z' | 'X' | 'x') {
            continue;
        }
        let member = stat.group == group
            || namespace.is_some_and(|namespace| namespace_of(pid) == Some(namespace));
        if member {
            found.push(Survivor {
                pid,
                state: stat.state,
                command: stat.command,
            });
        }
    }
    found
}

/// One look for the waits below: `Some` once the wait is over — nothing
/// left, or `deadline` passed with survivors.
fn settled(
    group: u32,
    namespace: Option<PidNamespace>,
    deadline: Instant,
) -> Option<Result<(), Vec<Survivor>>> {
    let left = survivors(group, namespace);
    if left.is_empty() {
        Some(Ok(()))
    } else if Instant::now() >= deadline {
        Some(Err(left))
    } else {
        None
    }
}

/// Wait until no member of `group` or `namespace` is alive, for at most
/// `bound`; the survivors when it passes.
pub(crate) async fn wait_until_gone(
    group: u32,
    namespace: Option<PidNamespace>,
    bound: Duration,
) -> Result<(), Vec<Survivor>> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(settled) = settled(group, namespace, deadline) {
            return settled;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// [`wait_until_gone`] for `Drop`, where nothing can be awaited: blocks the
/// thread, for at most `bound` (a few milliseconds in practice).
pub(crate) fn wait_until_gone_blocking(
    group: u32,
    namespace: Option<PidNamespace>,
    bound: Duration,
) -> Result<(), Vec<Survivor>> {
    let deadline = Instant::now() + bound;
    loop {
        if let Some(settled) = settled(group, namespace, deadline) {
            return settled;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// `survivors` as one line for a message.
pub fn describe(survivors: &[Survivor]) -> String {
    survivors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_process_reads_back() {
        let pid = std::process::id();
        let stat = read_stat(pid).expect("our own stat");
        assert!(matches!(stat.state, 'R' | 'S'));
        assert!(namespace_of(pid).is_some());
        // Our own group is alive: we are in it.
        let group = read_stat(pid).unwrap().group;
        assert!(
            survivors(group, None)
                .iter()
                .any(|survivor| survivor.pid == pid)
        );
    }

    #[test]
    fn a_namespace_is_only_read_from_a_live_child_in_another_one() {
        let mut child = std::process::Command::new("sleep")
            .arg("1000")
            .spawn()
            .unwrap();
        let ours = std::process::id();
        // Our child, but in our own namespace: not bubblewrap's doing.
        let error = namespace_of_child(ours, child.id()).unwrap_err();
        assert!(error.contains("our own PID namespace"), "{error}");
        // Not the leader's child (any more): nothing was started.
        assert_eq!(namespace_of_child(u32::MAX - 1, child.id()), Ok(None));
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(namespace_of_child(ours, child.id()), Ok(None));
    }

    #[test]
    fn a_group_nobody_has_has_no_survivors() {
        // Process ids above the kernel's maximum (4,194,304) never exist.
        assert!(survivors(u32::MAX - 1, None).is_empty());
    }
}
