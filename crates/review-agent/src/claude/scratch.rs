//! A run's scratch directory: the only directory of the run's own that a
//! confined run can write (issue 26).
//!
//! The run directory holds the bot's files (the MCP config, the prompt, the
//! stderr log) and is shown read-only, so nothing a run plants there — a link
//! to the bot's configuration where the next run's log will be created — is
//! ever written through. What the CLI and its tools must write goes into the
//! scratch directory instead, `SCRATCH/{home,tmp,claude-config}`, beside the
//! run directory in a parent the run cannot write:
//!
//! - made anew before every run: whatever a run killed in a crash left there
//!   (links, FIFOs, directories it made unreadable) is removed first, links
//!   themselves and never their targets, and the directory is created `0700`;
//! - the bot writes there only before the run starts (the login copied into
//!   the fresh `claude-config/`), never once PR code has run;
//! - removed when the run ends ([`Scratch`]'s drop), whatever the outcome; one
//!   a crash left behind goes at the next run of the same directory, or with
//!   its run directory's parent when the work directory's runs are pruned.

use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::AgentError;

/// The run's home, inside the scratch directory.
pub const HOME_NAME: &str = "home";

/// The run's temporary directory (`TMPDIR`), inside the scratch directory.
pub const TEMPORARY_NAME: &str = "tmp";

/// A scratch directory made for one run; removed on drop.
#[derive(Debug)]
pub struct Scratch {
    path: PathBuf,
}

impl Scratch {
    /// Make `path` fresh and empty (see the module), with its parents.
    pub fn create(path: &Path) -> Result<Self, AgentError> {
        remove_entry(path)?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| AgentError::File {
                action: "create the directory",
                path: parent.to_owned(),
                source,
            })?;
        }
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(path)
            .map_err(|source| AgentError::File {
                action: "create the run's scratch directory",
                path: path.to_owned(),
                source,
            })?;
        Ok(Self {
            path: path.to_owned(),
        })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A fresh, empty `0700` directory `name` in it.
    pub fn directory(&self, name: &str) -> Result<PathBuf, AgentError> {
        let directory = self.path.join(name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&directory)
            .map_err(|source| AgentError::File {
                action: "create the directory",
                path: directory.clone(),
                source,
            })?;
        Ok(directory)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Err(error) = remove_entry(&self.path) {
            tracing::warn!(%error, "could not remove the run's scratch directory; the next run of it removes it");
        }
    }
}

/// Remove `path` whatever it is (a directory tree, a file, a link — the link
/// itself, never its target); nothing there is fine. Directories a run made
/// unreadable or unwritable (`chmod 0`) are made the bot's again first.
pub fn remove_entry(path: &Path) -> Result<(), AgentError> {
    let removed = match std::fs::symlink_metadata(path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => Err(error),
        // `remove_dir_all` does not follow links inside the tree.
        Ok(metadata) if metadata.is_dir() => std::fs::remove_dir_all(path).or_else(|error| {
            if error.kind() == std::io::ErrorKind::PermissionDenied {
                make_directories_ours(path);
                std::fs::remove_dir_all(path)
            } else {
                Err(error)
            }
        }),
        Ok(_) => std::fs::remove_file(path),
    };
    removed.map_err(|source| AgentError::File {
        action: "remove what an earlier run left",
        path: path.to_owned(),
        source,
    })
}

/// Give every directory under `root` (links not followed) mode `0700`, so
/// the tree can be listed and emptied. Iterative: a run can nest
/// directories deeper than any stack.
fn make_directories_ours(root: &Path) {
    let mut pending = vec![root.to_owned()];
    while let Some(directory) = pending.pop() {
        let is_directory =
            std::fs::symlink_metadata(&directory).is_ok_and(|metadata| metadata.is_dir());
        if !is_directory {
            continue;
        }
        // A link is never chmod-ed through: only real directories get here.
        let _ = std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o700));
        if let Ok(entries) = std::fs::read_dir(&directory) {
            pending.extend(entries.flatten().map(|entry| entry.path()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_replaces_what_a_crashed_run_left_and_goes_when_dropped() {
        let parent = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "keep").unwrap();
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o750)).unwrap();
        let path = parent.path().join("run.scratch");
        // A crashed run left a link to a directory of the bot's.
        std::os::unix::fs::symlink(outside.path(), &path).unwrap();
        let scratch = Scratch::create(&path).unwrap();
        assert!(std::fs::symlink_metadata(&path).unwrap().is_dir());
        // And then a tree it made unreadable.
        let home = scratch.directory(HOME_NAME).unwrap();
        std::fs::create_dir_all(home.join("a/b")).unwrap();
        std::os::unix::fs::symlink(outside.path(), home.join("a/link")).unwrap();
        std::fs::set_permissions(home.join("a"), std::fs::Permissions::from_mode(0o0)).unwrap();
        drop(scratch);
        assert!(std::fs::symlink_metadata(&path).is_err());
        assert_eq!(
            std::fs::read_to_string(outside.path().join("keep")).unwrap(),
            "keep"
        );
        assert_eq!(
            std::fs::metadata(outside.path())
                .unwrap()
                .permissions()
                .mode()
                & 0o777,
            0o750,
            "a link was followed"
        );
    }
}
