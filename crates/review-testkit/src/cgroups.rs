//! A fresh cgroup v2 directory for one test, under the machine's cgroup2
//! mount: the tests of confined runs in cgroups of their own
//! (`sandbox.cgroup`) give the runs' parent as one and check what is left in
//! it. Removed, with whatever is still in it, when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// One test's cgroup.
#[derive(Debug)]
pub struct TestCgroup {
    directory: PathBuf,
}

impl TestCgroup {
    /// A new cgroup `review-bot-test-NAME-PID-N` under `mount` (the cgroup2
    /// mount point, `review_sandbox::cgroups::cgroup2_mount_point()`);
    /// `None`, after saying why on standard error, where there is none or
    /// this process may not make one there (not root, nothing delegated).
    pub fn new(mount: Option<PathBuf>, name: &str) -> Option<Self> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let Some(mount) = mount else {
            eprintln!("no cgroup2 file system is mounted here: cannot test run cgroups");
            return None;
        };
        let directory = mount.join(format!(
            "review-bot-test-{name}-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        if let Err(error) = std::fs::create_dir(&directory) {
            eprintln!(
                "cannot make a cgroup under {} ({error}): cannot test run cgroups",
                mount.display()
            );
            return None;
        }
        Some(Self { directory })
    }

    /// Its directory.
    pub fn path(&self) -> &Path {
        &self.directory
    }

    /// The child cgroups in it now, sorted.
    pub fn children(&self) -> Vec<PathBuf> {
        children(&self.directory)
    }

    /// The CPU time, in µs, spent in it and every descendant, removed ones
    /// included (`cpu.stat`'s `usage_usec`): with no process of its own, the
    /// time its runs took.
    pub fn cpu_usage(&self) -> u64 {
        std::fs::read_to_string(self.directory.join("cpu.stat"))
            .unwrap_or_default()
            .lines()
            .find_map(|line| line.strip_prefix("usage_usec "))
            .and_then(|usage| usage.trim().parse().ok())
            .unwrap_or(0)
    }
}

/// The directories in `directory`, sorted.
fn children(directory: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(directory)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    found.sort();
    found
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // Deepest first; what is still running in them is killed.
        let mut all = vec![self.directory.clone()];
        let mut index = 0;
        while index < all.len() {
            let more = children(&all[index]);
            all.extend(more);
            index += 1;
        }
        for directory in all.iter().rev() {
            let _ = std::fs::write(directory.join("cgroup.kill"), "1");
            let _ = std::fs::remove_dir(directory);
        }
    }
}
