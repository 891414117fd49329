//! Which resource bounds a confined run gets: a cgroup v2 of its own where
//! the service may delegate one, else rlimits ([`crate::Limits`]).
//!
//! Today every confined run is bounded by rlimits (`prlimit` in front of
//! bubblewrap): they need no privilege and work everywhere, but the memory
//! limit is per process and the process limit counts every process of the
//! user. A cgroup bounds the run as a whole (`memory.max`, `pids.max`,
//! `memory.swap.max`) and can kill it whole (`cgroup.kill`), but only where
//! the bot may make child cgroups: cgroup v2 mounted, the bot's own cgroup
//! (`/proc/self/cgroup`'s `0::/path`) offering the `memory` and `pids`
//! controllers, and its `cgroup.subtree_control` writable by the bot —
//! what systemd's `Delegate=yes` gives a service. [`detect`] says which
//! holds here, and why not; `review-bot doctor` reports it ("resource
//! bounds: …").
//!
//! Putting runs into child cgroups is not done yet: the hosts this is built
//! and tested on (and CI's) have cgroup v1 only, with nothing delegated, so
//! the enforcement could not be exercised, and it is not claimed.

use std::path::{Path, PathBuf};

/// The controllers a run's cgroup needs.
pub const CONTROLLERS: &[&str] = &["memory", "pids"];

/// Whether a delegated cgroup v2 is available to the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CgroupSupport {
    /// The bot's own cgroup, which it may make child cgroups in.
    Delegated {
        /// The cgroup's directory (under the cgroup2 mount).
        directory: PathBuf,
    },
    /// None: why, in words an operator can act on.
    Unavailable {
        /// What is missing.
        reason: String,
    },
}

impl std::fmt::Display for CgroupSupport {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Delegated { directory } => write!(
                formatter,
                "a delegated cgroup v2 is available ({}), but runs are still bounded by \
                 rlimits: putting each run in a child cgroup is not implemented yet",
                directory.display()
            ),
            Self::Unavailable { reason } => {
                write!(formatter, "rlimits (no delegated cgroup v2: {reason})")
            }
        }
    }
}

/// Detect, from this process's `/proc/self/cgroup` and `/proc/self/mountinfo`,
/// whether a delegated cgroup v2 is available.
pub fn detect() -> CgroupSupport {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    detect_from(&read("/proc/self/cgroup"), &read("/proc/self/mountinfo"))
}

/// [`detect`] from the two files' text.
pub fn detect_from(cgroup: &str, mountinfo: &str) -> CgroupSupport {
    let unavailable = |reason: String| CgroupSupport::Unavailable { reason };
    let Some(own) = unified_path(cgroup) else {
        return unavailable(
            "this process is in cgroup v1 hierarchies only (no `0::` line in /proc/self/cgroup)"
                .to_owned(),
        );
    };
    let Some(mount) = cgroup2_mount(mountinfo) else {
        return unavailable("no cgroup2 file system is mounted".to_owned());
    };
    let relative = own.trim_start_matches('/');
    let directory = if relative.is_empty() {
        mount
    } else {
        mount.join(relative)
    };
    check_directory(&directory)
}

/// Whether `directory` (a cgroup v2 directory) offers [`CONTROLLERS`] and
/// lets this process make child cgroups.
pub fn check_directory(directory: &Path) -> CgroupSupport {
    let unavailable = |reason: String| CgroupSupport::Unavailable { reason };
    let controllers = match std::fs::read_to_string(directory.join("cgroup.controllers")) {
        Ok(text) => text,
        Err(error) => {
            return unavailable(format!(
                "cannot read {}/cgroup.controllers: {error}",
                directory.display()
            ));
        }
    };
    let offered: Vec<&str> = controllers.split_whitespace().collect();
    let missing: Vec<&str> = CONTROLLERS
        .iter()
        .copied()
        .filter(|controller| !offered.contains(controller))
        .collect();
    if !missing.is_empty() {
        return unavailable(format!(
            "the cgroup {} does not offer the {} controller(s)",
            directory.display(),
            missing.join(" and ")
        ));
    }
    // Delegated: the directory is ours (systemd chowns it to the service's
    // user; root owns every one) and its `cgroup.subtree_control` opens for
    // writing (opening writes nothing).
    let ours = {
        use std::os::unix::fs::MetadataExt as _;
        let own = std::fs::metadata("/proc/self").map(|metadata| metadata.uid());
        let owner = std::fs::metadata(directory).map(|metadata| metadata.uid());
        matches!((own, owner), (Ok(own), Ok(owner)) if own == 0 || own == owner)
    };
    let subtree_writable = std::fs::OpenOptions::new()
        .write(true)
        .open(directory.join("cgroup.subtree_control"))
        .is_ok();
    if !ours || !subtree_writable {
        return unavailable(format!(
            "the cgroup {} is not delegated to this user (run the service with systemd's \
             Delegate=yes)",
            directory.display()
        ));
    }
    CgroupSupport::Delegated {
        directory: directory.to_owned(),
    }
}

/// The cgroup v2 path in `/proc/self/cgroup`'s text (`0::/path`).
fn unified_path(cgroup: &str) -> Option<&str> {
    cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(str::trim_end)
        .filter(|path| path.starts_with('/'))
}

/// The mount point of the first `cgroup2` file system in
/// `/proc/self/mountinfo`'s text (fields: `… mount-point … - type …`).
fn cgroup2_mount(mountinfo: &str) -> Option<PathBuf> {
    mountinfo.lines().find_map(|line| {
        let (before, after) = line.split_once(" - ")?;
        if after.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        let mount_point = before.split_whitespace().nth(4)?;
        Some(PathBuf::from(unescape_octal(mount_point)))
    })
}

/// mountinfo's `\040`-style escapes (space, tab, newline, backslash) undone.
fn unescape_octal(field: &str) -> String {
    let mut text = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(index) = rest.find('\\') {
        text.push_str(&rest[..index]);
        let escape = rest.get(index + 1..index + 4);
        if let Some(byte) = escape.and_then(|digits| u8::from_str_radix(digits, 8).ok()) {
            text.push(char::from(byte));
            rest = &rest[index + 4..];
        } else {
            text.push('\\');
            rest = &rest[index + 1..];
        }
    }
    text.push_str(rest);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_v1_only_is_rlimits_and_says_why() {
        let cgroup = "9:name=systemd:/\n8:pids:/\n7:blkio:/\n";
        let support = detect_from(cgroup, "");
        assert!(
            support
                .to_string()
                .starts_with("rlimits (no delegated cgroup v2: "),
            "{support}"
        );
        assert!(support.to_string().contains("cgroup v1"), "{support}");
    }

    #[test]
    fn the_unified_path_and_the_cgroup2_mount_are_read_from_procs_text() {
        assert_eq!(
            unified_path("1:name=systemd:/x\n0::/system.slice/review-bot.service\n"),
            Some("/system.slice/review-bot.service")
        );
        let mountinfo = "25 30 0:22 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
                         26 30 0:23 / /sys/fs/cgroup\\040v2 rw,nosuid - cgroup2 cgroup2 rw\n";
        assert_eq!(
            cgroup2_mount(mountinfo),
            Some(PathBuf::from("/sys/fs/cgroup v2"))
        );
        let support = detect_from("0::/nowhere\n", mountinfo);
        assert!(
            support.to_string().contains("cgroup.controllers"),
            "{support}"
        );
    }

    #[test]
    fn a_directory_with_the_controllers_that_this_user_may_write_is_delegated() {
        let root = tempfile::tempdir().unwrap();
        let directory = root.path();
        std::fs::write(directory.join("cgroup.controllers"), "cpu io pids\n").unwrap();
        std::fs::write(directory.join("cgroup.subtree_control"), "").unwrap();
        let support = check_directory(directory);
        assert!(support.to_string().contains("memory"), "{support}");
        std::fs::write(directory.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        assert_eq!(
            check_directory(directory),
            CgroupSupport::Delegated {
                directory: directory.to_owned()
            }
        );
    }

    /// This machine, as it is: whatever it has, the detection answers
    /// without error, and without a `0::` line it is rlimits.
    #[test]
    fn this_machine_is_detected() {
        let cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let support = detect();
        if !cgroup.lines().any(|line| line.starts_with("0::")) {
            assert!(
                matches!(support, CgroupSupport::Unavailable { .. }),
                "{support}"
            );
        }
    }
}
