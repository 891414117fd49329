//! The write flow's git: merge detection, the merge, snapshots of what the
//! agent changed, commits and the push — every command through
//! [`Git::run_with`], hardened like the checkout's.
//!
//! **Why no git command trusts the worktree once the agent has run.** The
//! agent (and the PR code it runs) can rewrite anything in the worktree,
//! including its `.git` file (which says where the repository is) and the
//! worktree's administrative directory in the mirror (`worktrees/ID/`: its
//! `HEAD`, `index`, `config.worktree`). So after an agent run:
//!
//! - the mirror is sanitised again first ([`Checkouts::sanitize`]: its
//!   `config` rewritten to the bot's own four lines — which drops
//!   `extensions.worktreeConfig`, so no `config.worktree` is ever read, and
//!   any `include.path`, filter or merge driver — hooks, `info/attributes`,
//!   alternates and grafts deleted, a mirror of symlinks deleted);
//! - every command names the repository itself: `--git-dir=MIRROR
//!   --work-tree=WORKTREE`, never the worktree's `.git` file or admin
//!   directory, and never its `HEAD` or `index`: commits are built from
//!   explicit SHAs recorded before the agent ran, in a **private index**
//!   (`GIT_INDEX_FILE` in the run directory, which no confined process can
//!   see), with plumbing (`read-tree`, `update-index`, `write-tree`,
//!   `commit-tree`) that runs no hooks and reads no attributes driver the
//!   bot did not configure (it configures none);
//! - [`crate::git::HARDENING`] applies as everywhere (hooks path
//!   `/dev/null`, fsmonitor off, untracked cache off, no credential helper).
//!
//! The only command that runs through the worktree's own git directory is
//! the merge that leaves conflicts for the merge-conflict pass, and it runs
//! before any agent or PR code has run in this checkout.
//!
//! **What gets committed.** [`WriteGit::snapshot`] stages, in the private
//! index, exactly the paths that differ from a commit — tracked files
//! modified or deleted, untracked files that `.gitignore` does not ignore —
//! and writes the tree. The write flow takes that snapshot right after the
//! agent's pass and before the build runs, so nothing the build writes is
//! ever committed: the tree is fixed (its objects written) before the build
//! starts, and the commit is made from that tree.

use std::path::{Path, PathBuf};

use crate::checkout::{CheckoutError, Checkouts};
use crate::git::{Git, GitCredential, RunOptions};

/// How many paths go on one `update-index` command line.
const PATHS_PER_COMMAND: usize = 500;

/// The empty tree's id.
pub const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Why the write flow's git failed.
#[derive(Debug, thiserror::Error)]
pub enum WriteGitError {
    /// A git command failed.
    #[error(transparent)]
    Git(#[from] CheckoutError),
    /// git's answer could not be used.
    #[error("{0}")]
    Unexpected(String),
}

/// What a dry-run merge of the base into the head found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeCheck {
    /// The base is already in the head's history.
    UpToDate,
    /// The base merges without conflicts (nothing to do: GitHub merges it).
    Clean,
    /// The merge conflicts in these paths; `tree` is git's merge with
    /// conflict markers in them.
    Conflicts {
        /// The merged tree, markers included.
        tree: String,
        /// The conflicted paths.
        paths: Vec<String>,
    },
}

/// How a push ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// The branch now points at the commit.
    Pushed,
    /// The branch is no longer where the job started (someone pushed):
    /// nothing was changed on the remote.
    HeadMoved {
        /// git's reason (`stale info`, `fetch first`, …).
        reason: String,
    },
}

/// The write flow's git commands for one worktree.
#[derive(Debug)]
pub struct WriteGit<'a> {
    checkouts: &'a Checkouts,
    git: &'a Git,
    mirror: PathBuf,
    worktree: PathBuf,
    index: PathBuf,
    identity: (&'a str, &'a str),
}

impl<'a> WriteGit<'a> {
    /// Commands on `worktree` of `mirror`, with the private index at `index`
    /// (in the run directory) and `identity` (name, email) for commits.
    pub fn new(
        checkouts: &'a Checkouts,
        mirror: &Path,
        worktree: &Path,
        index: &Path,
        identity: (&'a str, &'a str),
    ) -> Self {
        Self {
            checkouts,
            git: checkouts.git(),
            mirror: mirror.to_owned(),
            worktree: worktree.to_owned(),
            index: index.to_owned(),
            identity,
        }
    }

    fn git_dir_args(&self) -> [String; 2] {
        [
            format!("--git-dir={}", self.mirror.display()),
            format!("--work-tree={}", self.worktree.display()),
        ]
    }

    /// Runs a command on the mirror with the worktree as its work tree and
    /// the private index.
    async fn run(
        &self,
        args: &[&str],
        accept_codes: &[i32],
    ) -> Result<(String, i32), WriteGitError> {
        let prefix = self.git_dir_args();
        let mut full: Vec<&str> = prefix.iter().map(String::as_str).collect();
        full.extend_from_slice(args);
        let output = self
            .git
            .run_with(
                &self.mirror,
                &full,
                &RunOptions {
                    index_file: Some(&self.index),
                    identity: Some(self.identity),
                    accept_codes,
                    ..RunOptions::default()
                },
            )
            .await?;
        if output.truncated {
            return Err(WriteGitError::Unexpected(format!(
                "`git {}` printed more than git's output limit; the change is too large for the \
                 bot to commit",
                args.join(" ")
            )));
        }
        Ok((output.stdout, output.code))
    }

    /// Sanitises the mirror (after an agent run or a build).
    pub async fn sanitize(&self) -> Result<(), WriteGitError> {
        self.checkouts.sanitize(&self.mirror).await?;
        Ok(())
    }

    /// The full SHA `revision` names in the mirror.
    pub async fn resolve(&self, revision: &str) -> Result<String, WriteGitError> {
        let spec = format!("{revision}^{{commit}}");
        let (sha, _) = self
            .run(
                &[
                    "rev-parse",
                    "--verify",
                    "--quiet",
                    "--end-of-options",
                    &spec,
                ],
                &[],
            )
            .await?;
        Ok(sha.trim().to_owned())
    }

    /// The tree of `commit`.
    pub async fn tree_of(&self, commit: &str) -> Result<String, WriteGitError> {
        let spec = format!("{commit}^{{tree}}");
        let (tree, _) = self
            .run(&["rev-parse", "--verify", "--end-of-options", &spec], &[])
            .await?;
        Ok(tree.trim().to_owned())
    }

    /// Whether `branch` is a valid branch name (git's own rules; refuses
    /// anything that could be read as an option or a refspec).
    pub async fn valid_branch(&self, branch: &str) -> Result<bool, WriteGitError> {
        if branch.starts_with('-') || branch.contains(':') {
            return Ok(false);
        }
        let name = format!("refs/heads/{branch}");
        let (_, code) = self.run(&["check-ref-format", &name], &[1]).await?;
        Ok(code == 0)
    }

    /// Dry-run merge of `base` into `head` (in the mirror; no worktree).
    pub async fn check_merge(&self, head: &str, base: &str) -> Result<MergeCheck, WriteGitError> {
        let (_, code) = self
            .run(&["merge-base", "--is-ancestor", base, head], &[1])
            .await?;
        if code == 0 {
            return Ok(MergeCheck::UpToDate);
        }
        let (output, code) = self
            .run(
                &[
                    "merge-tree",
                    "--write-tree",
                    "-z",
                    "--name-only",
                    "--no-messages",
                    head,
                    base,
                ],
                &[1],
            )
            .await?;
        if code == 0 {
            return Ok(MergeCheck::Clean);
        }
        let mut fields = output.split('\0').filter(|field| !field.is_empty());
        let tree = fields
            .next()
            .ok_or_else(|| WriteGitError::Unexpected("git merge-tree printed no tree".to_owned()))?
            .to_owned();
        let mut paths: Vec<String> = fields.map(str::to_owned).collect();
        paths.dedup();
        Ok(MergeCheck::Conflicts { tree, paths })
    }

    /// Starts the real merge of `base` in the worktree, leaving conflict
    /// markers (and git's merge state) for the merge-conflict pass. Runs
    /// before any agent or PR code ran in this checkout, through the
    /// worktree's own git directory (`admin`), which the checkout just made.
    pub async fn start_merge(&self, admin: &Path, base: &str) -> Result<(), WriteGitError> {
        let git_dir = format!("--git-dir={}", admin.display());
        let work_tree = format!("--work-tree={}", self.worktree.display());
        self.git
            .run_with(
                &self.worktree,
                &[
                    &git_dir,
                    &work_tree,
                    "merge",
                    "--no-ff",
                    "--no-commit",
                    "--no-edit",
                    "--no-verify",
                    "--quiet",
                    base,
                ],
                &RunOptions {
                    identity: Some(self.identity),
                    accept_codes: &[1],
                    ..RunOptions::default()
                },
            )
            .await?;
        Ok(())
    }

    /// Stages in the private index, on top of `base_tree`, the worktree's
    /// version of `paths` (removing those the worktree no longer has) and
    /// writes the tree.
    pub async fn stage_paths(
        &self,
        base_tree: &str,
        paths: &[String],
    ) -> Result<String, WriteGitError> {
        self.sanitize().await?;
        self.reset_index(base_tree).await?;
        for chunk in paths.chunks(PATHS_PER_COMMAND) {
            let mut args = vec!["update-index", "--add", "--remove", "--"];
            args.extend(chunk.iter().map(String::as_str));
            self.run(&args, &[]).await?;
        }
        let (tree, _) = self.run(&["write-tree"], &[]).await?;
        Ok(tree.trim().to_owned())
    }

    async fn reset_index(&self, tree: &str) -> Result<(), WriteGitError> {
        let _ = std::fs::remove_file(&self.index);
        self.run(&["read-tree", tree], &[]).await?;
        Ok(())
    }

    /// What the worktree changed against `commit`: the paths (tracked files
    /// modified or deleted, untracked files not ignored), staged in the
    /// private index, and the tree they make. Call it before anything else
    /// runs in the worktree (the build): the tree is what gets committed.
    pub async fn snapshot(&self, commit: &str) -> Result<(String, Vec<String>), WriteGitError> {
        self.sanitize().await?;
        let tree = self.tree_of(commit).await?;
        self.reset_index(&tree).await?;
        // A fresh index has no stat data: refresh compares contents once.
        self.run(
            &["update-index", "-q", "--refresh", "--ignore-submodules"],
            &[1],
        )
        .await?;
        let (modified, _) = self
            .run(
                &["diff-files", "--name-only", "-z", "--ignore-submodules"],
                &[],
            )
            .await?;
        let (untracked, _) = self
            .run(&["ls-files", "-z", "--others", "--exclude-standard"], &[])
            .await?;
        let mut paths: Vec<String> = modified
            .split('\0')
            .chain(untracked.split('\0'))
            .filter(|path| !path.is_empty())
            .map(str::to_owned)
            .collect();
        paths.sort();
        paths.dedup();
        if paths.is_empty() {
            return Ok((tree, paths));
        }
        let staged = self.stage_paths(&tree, &paths).await?;
        Ok((staged, paths))
    }

    /// The content of `path` in `commit`, when it has one (for the
    /// conflict-marker check).
    pub async fn blob(&self, commit: &str, path: &str) -> Result<Option<String>, WriteGitError> {
        let spec = format!("{commit}:{path}");
        let (_, code) = self
            .run(&["cat-file", "-e", "--end-of-options", &spec], &[1, 128])
            .await?;
        if code != 0 {
            return Ok(None);
        }
        let (text, _) = self
            .run(&["cat-file", "blob", "--end-of-options", &spec], &[])
            .await?;
        Ok(Some(text))
    }

    /// A commit of `tree` with `parents`, as the bot; the message from a
    /// private file in the run directory.
    pub async fn commit(
        &self,
        tree: &str,
        parents: &[&str],
        message_file: &Path,
    ) -> Result<String, WriteGitError> {
        let file = message_file.display().to_string();
        let mut args = vec!["commit-tree", tree];
        for parent in parents {
            args.push("-p");
            args.push(parent);
        }
        args.push("-F");
        args.push(&file);
        let (sha, _) = self.run(&args, &[]).await?;
        Ok(sha.trim().to_owned())
    }

    /// Pushes `commit` to `branch` of `url`, only if the branch is still at
    /// `expected` (a compare-and-swap: `commit` descends from `expected`, so
    /// this is a fast-forward that is refused, not forced, when anyone else
    /// pushed meanwhile). Never any other branch, never a forced update.
    pub async fn push(
        &self,
        url: &str,
        branch: &str,
        expected: &str,
        commit: &str,
        credential: Option<&GitCredential>,
    ) -> Result<PushOutcome, WriteGitError> {
        self.sanitize().await?;
        // Only ever a fast-forward: the lease below would allow more.
        let (_, code) = self
            .run(&["merge-base", "--is-ancestor", expected, commit], &[1])
            .await?;
        if code != 0 {
            return Err(WriteGitError::Unexpected(format!(
                "refusing to push {commit}: it does not descend from the branch's head {expected}"
            )));
        }
        let lease = format!("--force-with-lease=refs/heads/{branch}:{expected}");
        let refspec = format!("{commit}:refs/heads/{branch}");
        let git_dir = format!("--git-dir={}", self.mirror.display());
        let output = self
            .git
            .run_with(
                &self.mirror,
                &[
                    &git_dir,
                    "push",
                    "--porcelain",
                    "--no-verify",
                    "--no-recurse-submodules",
                    &lease,
                    "--",
                    url,
                    &refspec,
                ],
                &RunOptions {
                    credential,
                    accept_codes: &[1],
                    ..RunOptions::default()
                },
            )
            .await?;
        let rejected = output
            .stdout
            .lines()
            .find(|line| line.starts_with('!'))
            .map(str::to_owned);
        match (output.code, rejected) {
            (0, None) => Ok(PushOutcome::Pushed),
            (_, Some(line)) => Ok(PushOutcome::HeadMoved {
                reason: line
                    .rsplit('\t')
                    .next()
                    .unwrap_or("rejected")
                    .trim()
                    .to_owned(),
            }),
            (code, None) => Err(WriteGitError::Unexpected(format!(
                "git push exited {code} without saying which ref it refused: {}",
                output.stdout.trim()
            ))),
        }
    }
}

/// The worktree's administrative directory in the mirror (what its `.git`
/// file names), read right after the checkout, before anything ran in it,
/// and checked to lie in `MIRROR/worktrees/`.
pub fn admin_directory(mirror: &Path, worktree: &Path) -> Result<PathBuf, WriteGitError> {
    let dot_git = worktree.join(".git");
    let text = std::fs::read_to_string(&dot_git).map_err(|error| {
        WriteGitError::Unexpected(format!("could not read {}: {error}", dot_git.display()))
    })?;
    let path = text
        .strip_prefix("gitdir: ")
        .map(str::trim)
        .map(PathBuf::from)
        .ok_or_else(|| {
            WriteGitError::Unexpected(format!("{} is not a gitdir file", dot_git.display()))
        })?;
    let expected_parent = mirror.join("worktrees");
    if path.parent() != Some(expected_parent.as_path()) {
        return Err(WriteGitError::Unexpected(format!(
            "the worktree's git directory {} is not in the mirror's worktrees/",
            path.display()
        )));
    }
    Ok(path)
}

/// The lines of `text` that are conflict markers (`<<<<<<< ` / `>>>>>>> `
/// at a line's start; `=======` alone is too common in documents to count).
pub fn has_conflict_markers(text: &str) -> bool {
    text.lines().any(|line| {
        let marker = |prefix: &str| {
            line.strip_prefix(prefix)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
        };
        marker("<<<<<<<") || marker(">>>>>>>")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_found_at_line_starts_only() {
        assert!(has_conflict_markers(
            "a\n<<<<<<< HEAD\nb\n=======\nc\n>>>>>>> main\n"
        ));
        assert!(has_conflict_markers(">>>>>>>\n"));
        assert!(!has_conflict_markers("Title\n=======\n"));
        assert!(!has_conflict_markers("x <<<<<<< y\n"));
        assert!(!has_conflict_markers("<<<<<<<<<< not one\n"));
    }
}
