//! Run directories (`work_dir/runs/OWNER/REPO/RUN`): who is working in one,
//! and pruning the old ones by age and by total size without ever touching
//! one a job is working in.
//!
//! A job holds its run directory's [`RunLock`] (an exclusive `flock` on
//! `RUN/.in-progress`) from the moment it makes the directory until it ends;
//! the lock goes with the process, so a run whose job was killed (`kill -9`)
//! is free again. [`prune`] removes a run only while holding that same lock,
//! taken without waiting: a run whose lock is held is in progress and is
//! skipped. A job that finds its directory pruned under it (it waited for
//! the pruner's lock) makes it again.
//!
//! `runs/OWNER/REPO/pushed` (plans waiting to be finished) is never pruned.

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The lock file in a run directory.
pub const LOCK_FILE: &str = ".in-progress";

/// Directories under `runs/OWNER/REPO` that are not runs.
const NOT_RUNS: &[&str] = &["pushed"];

/// How run directories are pruned; `None` is no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pruning {
    /// A run no job has worked in for longer is removed.
    pub max_age: Option<Duration>,
    /// Past this many bytes for all runs, the oldest are removed.
    pub max_bytes: Option<u64>,
}

impl Default for Pruning {
    /// 14 days, 20 GiB.
    fn default() -> Self {
        Self {
            max_age: Some(Duration::from_hours(14 * 24)),
            max_bytes: Some(20 << 30),
        }
    }
}

/// A job's hold on its run directory: while it lives, [`prune`] leaves the
/// directory alone.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    /// Make `run_directory` (and its parents) and lock it, waiting for a
    /// pruner that holds it; made again when the pruner removed it meanwhile.
    pub fn acquire(run_directory: &Path) -> std::io::Result<Self> {
        loop {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(run_directory)?;
            let path = run_directory.join(LOCK_FILE);
            let file = open_lock_file(&path)?;
            file.lock()?;
            // Still the directory's lock file (not one the pruner removed
            // with its directory while we waited)?
            let held = file.metadata()?;
            match std::fs::symlink_metadata(&path) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    // Its age is the run's last activity.
                    file.set_modified(SystemTime::now())?;
                    return Ok(Self { _file: file });
                }
                Ok(_) => {}
                Err(error) if error.kind() == ErrorKind::NotFound => {}
                Err(error) => return Err(error),
            }
        }
    }
}

/// Open (or make) a lock file without following a link at its place.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// What [`prune`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pruned {
    /// The run directories removed.
    pub removed: Vec<PathBuf>,
    /// The bytes they took.
    pub bytes: u64,
    /// Runs that should have gone but are in progress (locked).
    pub in_progress: usize,
}

/// One run directory found.
struct Run {
    path: PathBuf,
    last_active: SystemTime,
    bytes: u64,
}

/// Remove the run directories under `runs` (`work_dir/runs`) no job has
/// worked in for [`Pruning::max_age`], then the oldest ones while all of
/// them take more than [`Pruning::max_bytes`] — never one a job holds
/// ([`RunLock`]). Problems with single entries are logged and skipped.
pub fn prune(runs: &Path, pruning: &Pruning, now: SystemTime) -> Pruned {
    let mut pruned = Pruned::default();
    if pruning.max_age.is_none() && pruning.max_bytes.is_none() {
        return pruned;
    }
    let mut found = list_runs(runs);
    // Oldest first.
    found.sort_by_key(|run| run.last_active);
    let mut total: u64 = found.iter().map(|run| run.bytes).sum();
    for run in found {
        let too_old = pruning.max_age.is_some_and(|max_age| {
            now.duration_since(run.last_active)
                .is_ok_and(|age| age > max_age)
        });
        let too_big = pruning.max_bytes.is_some_and(|max_bytes| total > max_bytes);
        if !too_old && !too_big {
            continue;
        }
        match remove_unless_in_progress(&run.path) {
            Ok(true) => {
                total = total.saturating_sub(run.bytes);
                pruned.bytes += run.bytes;
                pruned.removed.push(run.path);
            }
            Ok(false) => pruned.in_progress += 1,
            Err(error) => {
                tracing::warn!(path = %run.path.display(), %error, "could not prune a run directory");
            }
        }
    }
    pruned
}

/// [`prune`] `work_dir/runs` now, on a blocking thread, logging what went.
pub async fn prune_in_background(work_dir: &Path, pruning: Pruning) {
    let runs = work_dir.join("runs");
    let pruned =
        tokio::task::spawn_blocking(move || prune(&runs, &pruning, SystemTime::now())).await;
    match pruned {
        Ok(pruned) if !pruned.removed.is_empty() => tracing::info!(
            removed = pruned.removed.len(),
            bytes = pruned.bytes,
            in_progress = pruned.in_progress,
            "pruned old run directories"
        ),
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "pruning run directories failed"),
    }
}

/// Every `runs/OWNER/REPO/RUN` directory (links are not followed).
fn list_runs(runs: &Path) -> Vec<Run> {
    let mut found = Vec::new();
    for owner in directories(runs) {
        for repository in directories(&owner) {
            for path in directories(&repository) {
                if path
                    .file_name()
                    .is_some_and(|name| NOT_RUNS.iter().any(|not| name == *not))
                {
                    continue;
                }
                let Ok(metadata) = std::fs::symlink_metadata(&path) else {
                    continue;
                };
                let lock = std::fs::symlink_metadata(path.join(LOCK_FILE))
                    .and_then(|lock| lock.modified())
                    .ok();
                let directory = metadata.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                let last_active = lock.map_or(directory, |lock| lock.max(directory));
                found.push(Run {
                    bytes: size(&path),
                    path,
                    last_active,
                });
            }
        }
    }
    found
}

/// The directories (not links) in `path`.
fn directories(path: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(path) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .map(|entry| entry.path())
        .collect()
}

/// Bytes taken by the files under `path` (links not followed).
fn size(path: &Path) -> u64 {
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if !metadata.is_dir() {
        return metadata.blocks() * 512;
    }
    let mut total = metadata.blocks() * 512;
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            total = total.saturating_add(size(&entry.path()));
        }
    }
    total
}

/// Remove `run` while holding its lock; `false` when a job holds it.
fn remove_unless_in_progress(run: &Path) -> std::io::Result<bool> {
    let lock = open_lock_file(&run.join(LOCK_FILE))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
        Err(std::fs::TryLockError::Error(error)) => return Err(error),
    }
    make_writable(run);
    std::fs::remove_dir_all(run)?;
    drop(lock);
    Ok(true)
}

/// Give every directory under `path` (links not followed) its owner's
/// write and search permission back, best effort, so it can be removed.
pub(crate) fn make_writable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(metadata) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !metadata.is_dir() {
        return;
    }
    let mode = metadata.permissions().mode();
    if mode & 0o700 != 0o700 {
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o700));
    }
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(root: &Path, name: &str, bytes: usize) -> PathBuf {
        let path = root.join("owner/repo").join(name);
        std::fs::create_dir_all(&path).unwrap();
        std::fs::write(path.join("log"), vec![b'x'; bytes]).unwrap();
        path
    }

    #[test]
    fn old_and_oversized_runs_go_but_never_one_in_progress_nor_pushed_plans() {
        let root = tempfile::tempdir().unwrap();
        let runs = root.path();
        let old = run(runs, "old", 10);
        let in_progress = run(runs, "in-progress", 10);
        let pushed = run(runs, "pushed", 10);
        let _held = RunLock::acquire(&in_progress).unwrap();
        let later = SystemTime::now() + Duration::from_hours(30 * 24);
        let pruned = prune(
            runs,
            &Pruning {
                max_age: Some(Duration::from_hours(24)),
                max_bytes: None,
            },
            later,
        );
        assert_eq!(pruned.removed, std::slice::from_ref(&old));
        assert_eq!(pruned.in_progress, 1);
        assert!(!old.exists() && in_progress.exists() && pushed.exists());

        // By size: the oldest go first until the rest fit.
        let first = run(runs, "first", 64 * 1024);
        let second = run(runs, "second", 64 * 1024);
        let old_time = SystemTime::now() - Duration::from_hours(1);
        File::open(&first).unwrap().set_modified(old_time).unwrap();
        let pruned = prune(
            runs,
            &Pruning {
                max_age: None,
                max_bytes: Some(100 * 1024),
            },
            SystemTime::now(),
        );
        assert_eq!(pruned.removed, std::slice::from_ref(&first));
        assert!(!first.exists() && second.exists() && in_progress.exists());
    }

    #[test]
    fn a_job_whose_directory_was_pruned_while_it_waited_makes_it_again() {
        let root = tempfile::tempdir().unwrap();
        let path = run(root.path(), "r", 1);
        let lock = RunLock::acquire(&path).unwrap();
        drop(lock);
        assert!(remove_unless_in_progress(&path).unwrap());
        let _again = RunLock::acquire(&path).unwrap();
        assert!(path.join(LOCK_FILE).is_file());
        assert!(!remove_unless_in_progress(&path).unwrap());
    }
}
