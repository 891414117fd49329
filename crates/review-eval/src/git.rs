//! The git this crate runs: review-pipeline's [`LocalGit`] (hardened as the
//! bot's own git, contained, bounded), set for reading local repositories
//! and bundles (`protocol.file.allow=always`: a case's repository is a path
//! on this machine), with room for a long `git log` of a big repository.

use std::path::PathBuf;
use std::time::Duration;

use review_pipeline::local_git::{DIFF_OPTIONS, StderrKept};
use review_sandbox::Containment;

pub use review_pipeline::local_git::{GitRun, LocalGit as Git, LocalGitError as GitError};

/// `-c` options after the pipeline's hardening and [`DIFF_OPTIONS`] (later
/// ones win): local repositories and bundles may be read, and a new
/// repository's branch is `main`.
const EVAL_OPTIONS: &[&str] = &["protocol.file.allow=always", "init.defaultBranch=main"];

/// The eval's git: `HOME` a private, empty directory; each command stopped
/// after `timeout`.
pub fn git(home: PathBuf, timeout: Duration, containment: Containment) -> Git {
    Git {
        home,
        timeout,
        containment,
        options: DIFF_OPTIONS.iter().chain(EVAL_OPTIONS).copied().collect(),
        stdout_limit: 256 << 20,
        stderr_kept: StderrKept::Head(4_000),
        no_optional_locks: false,
    }
}
