//! Step 1 of every job: the pull request's code on disk.
//!
//! One bare mirror per repository, `WORK/mirrors/OWNER/REPO.git`, created on first use and
//! fetched incrementally afterwards (only the base branch and `refs/pull/N/head`); one
//! worktree per job, `WORK/worktrees/OWNER/REPO/pr-N-ID`, detached at the head SHA the job
//! was made for, removed when the [`Worktree`] guard is removed or dropped (on error too).
//!
//! Each worktree has a lock file next to it (`pr-N-ID.lock`) held with `flock` while its
//! guard lives; the kernel releases it when the process dies, so [`Checkouts::prune_stale`]
//! knows a dead job's worktree from a live one, in this process or another.
//!
//! Code from the pull request is hostile. It runs in the worktree and can reach the shared
//! mirror (`git rev-parse --git-common-dir`), so before every use the mirror's `config` is
//! rewritten to the bot's own, its `hooks/` and `info/attributes` removed, and every git
//! command is hardened ([`crate::git`]). The bot never runs git inside a worktree after
//! handing it out: removal deletes the directory itself, then `git worktree prune` runs in
//! the mirror.

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::git::{Git, GitCredential};

/// The default limit for one git command.
pub const DEFAULT_GIT_TIMEOUT: Duration = Duration::from_mins(10);

/// The only `config` a mirror ever has when the bot uses it.
const MIRROR_CONFIG: &str =
    "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n";

/// Why a checkout failed. Each message says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum CheckoutError {
    #[error(
        "{action} {path}: {source}; check that the work directory exists and is writable by the service user"
    )]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// git could not be started or contained (the message says what to install or allow).
    #[error("could not run git: {0}")]
    Sandbox(#[from] review_sandbox::SandboxError),
    #[error(
        "`{command}` failed ({status}): {stderr}; if it says 401, 403 or 'Authentication failed', check that the GitHub token can read the repository; otherwise retry, and check the network and the remote"
    )]
    Git {
        command: String,
        status: String,
        stderr: String,
    },
    #[error(
        "`{command}` did not finish within {timeout:?} and was killed with its process group; check the network and the remote, or raise the git timeout (10 minutes by default) for very large repositories"
    )]
    Timeout { command: String, timeout: Duration },
    #[error("{repository} is not OWNER/REPO; pass the repository's full name as GitHub shows it")]
    BadRepository { repository: String },
    #[error(
        "{base_ref:?} is not a branch name; pass the pull request's base branch as GitHub shows it"
    )]
    BadBaseRef { base_ref: String },
    #[error(
        "the clone URL must be https:// (or http://) with no user or password in it; pass the token as the request's credential"
    )]
    BadUrl,
    #[error("{sha:?} is not a full commit SHA; pass the pull request's head SHA (40 hex digits)")]
    BadSha { sha: String },
    #[error(
        "commit {sha} is not on pull request #{number} of {repository} after fetching refs/pull/{number}/head: the head moved (a force-push?); drop this job, the next poll brings the new head"
    )]
    HeadMissing {
        repository: String,
        number: u64,
        sha: String,
    },
}

/// Where checkouts live and how git runs.
#[derive(Debug, Clone)]
pub struct CheckoutSettings {
    /// The work directory (`work_dir` in the configuration); mirrors and worktrees go under it.
    pub work_dir: PathBuf,
    /// The git executable.
    pub git_program: PathBuf,
    /// The limit for each git command.
    pub git_timeout: Duration,
    /// How git's processes are contained (bubblewrap's PID namespace by default).
    pub containment: review_sandbox::Containment,
}

impl CheckoutSettings {
    /// Settings with git from `PATH` and [`DEFAULT_GIT_TIMEOUT`].
    pub fn new(work_dir: impl Into<PathBuf>) -> Self {
        Self {
            work_dir: work_dir.into(),
            git_program: PathBuf::from("git"),
            git_timeout: DEFAULT_GIT_TIMEOUT,
            containment: review_sandbox::Containment::default(),
        }
    }
}

/// What to check out: a pull request's head, with its base branch.
#[derive(Debug, Clone)]
pub struct CheckoutRequest {
    /// `OWNER/REPO`.
    pub repository: String,
    /// The repository's git URL (`https://github.com/OWNER/REPO.git`), without credentials.
    pub clone_url: String,
    /// The pull request's number.
    pub number: u64,
    /// The base branch (`main`), fetched too so the diff and merges have it.
    pub base_ref: String,
    /// The head SHA the job was made for.
    pub head_sha: String,
    /// The credential, when the repository needs one.
    pub credential: Option<GitCredential>,
}

/// Checkouts under one work directory. Cheap to share (`Arc`); jobs of one repository
/// serialise only on the mirror's fetch and `worktree add`, never on each other's work.
#[derive(Debug)]
pub struct Checkouts {
    settings: CheckoutSettings,
    git: Git,
    /// One lock per mirror: git's ref locks make concurrent fetches into one repository fail.
    mirror_locks: Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>,
    /// Distinguishes worktrees made in the same nanosecond.
    counter: AtomicU64,
}

impl Checkouts {
    /// Creates the work directory's layout (`mirrors/`, `worktrees/`, git's private home).
    pub fn new(settings: CheckoutSettings) -> Result<Self, CheckoutError> {
        let home = settings.work_dir.join("git-home");
        for dir in [
            settings.work_dir.join("mirrors"),
            settings.work_dir.join("worktrees"),
            home.clone(),
        ] {
            std::fs::create_dir_all(&dir).map_err(io("could not create", &dir))?;
        }
        restrict(&home)?;
        let git = Git {
            program: settings.git_program.clone(),
            home,
            timeout: settings.git_timeout,
            containment: settings.containment.clone(),
        };
        Ok(Self {
            settings,
            git,
            mirror_locks: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
        })
    }

    /// The hardened git runner every checkout uses (the write flow runs its
    /// own commands through it).
    pub fn git(&self) -> &Git {
        &self.git
    }

    /// Rewrites what the agent or PR code may have planted in `mirror` (its
    /// config, hooks, attributes, alternates; a mirror of symlinks is
    /// deleted), as before every checkout. The write flow calls it before
    /// each git command that follows an agent run or a build. Under the
    /// mirror's lock: two jobs of one repository sanitising at once would
    /// take each other's staged config (a "could not replace" failure seen
    /// with four jobs at once).
    pub async fn sanitize(&self, mirror: &Path) -> Result<(), CheckoutError> {
        let _held = self.lock_mirror(mirror).await?;
        sanitize_mirror(mirror)
    }

    /// The mirror of `OWNER/REPO` (it may not exist yet).
    pub fn mirror_path(&self, repository: &str) -> Result<PathBuf, CheckoutError> {
        let (owner, name) = split_repository(repository)?;
        Ok(self
            .settings
            .work_dir
            .join("mirrors")
            .join(owner)
            .join(format!("{name}.git")))
    }

    /// Removes the worktrees of jobs that died (their lock is free) and prunes every mirror's
    /// worktree list. Call it at start; it leaves live jobs' worktrees alone. Returns how many
    /// worktrees it removed.
    pub async fn prune_stale(&self) -> Result<usize, CheckoutError> {
        let root = self.settings.work_dir.join("worktrees");
        let mut removed = 0;
        for owner in read_dirs(&root)? {
            for repository in read_dirs(&owner)? {
                removed += prune_repository_dir(&repository)?;
            }
        }
        let mirrors = self.settings.work_dir.join("mirrors");
        for owner in read_dirs(&mirrors)? {
            for mirror in read_dirs(&owner)? {
                // A mirror being initialised when its process died.
                if mirror
                    .extension()
                    .is_some_and(|extension| extension.to_string_lossy().starts_with("init-"))
                {
                    std::fs::remove_dir_all(&mirror).map_err(io("could not remove", &mirror))?;
                    continue;
                }
                let _held = self.lock_mirror(&mirror).await?;
                sanitize_mirror(&mirror)?;
                if mirror.join("HEAD").is_file() {
                    self.git.run(&mirror, &["worktree", "prune"], None).await?;
                }
            }
        }
        if removed > 0 {
            tracing::info!(removed, "pruned worktrees of jobs that died");
        }
        Ok(removed)
    }

    /// Fetches the pull request into its repository's mirror (creating the mirror on first
    /// use) and adds a worktree detached at `head_sha`.
    pub async fn checkout(&self, request: &CheckoutRequest) -> Result<Worktree, CheckoutError> {
        let (owner, name) = validate(request)?;
        let mirror = self.mirror_path(&request.repository)?;
        let parent = self
            .settings
            .work_dir
            .join("worktrees")
            .join(owner)
            .join(name);
        std::fs::create_dir_all(&parent).map_err(io("could not create", &parent))?;
        let id = format!(
            "pr-{}-{}-{}-{}",
            request.number,
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos()),
            self.counter.fetch_add(1, Ordering::Relaxed)
        );
        let path = parent.join(&id);
        let lock_path = parent.join(format!("{id}.lock"));
        // The lock exists (and is held) before the directory, so a worktree directory
        // without a held lock is always a dead job's.
        let lock = File::create(&lock_path).map_err(io("could not create", &lock_path))?;
        lock.lock().map_err(io("could not lock", &lock_path))?;
        let worktree = Worktree {
            path,
            lock_path,
            lock: Some(lock),
            mirror: mirror.clone(),
            head_sha: request.head_sha.clone(),
            git: self.git.clone(),
            removed: false,
        };

        let _held = self.lock_mirror(&mirror).await?;
        sanitize_mirror(&mirror)?;
        self.ensure_mirror(&mirror).await?;
        sanitize_mirror(&mirror)?;
        // Forget worktrees whose directories are gone (dead jobs, dropped guards).
        self.git.run(&mirror, &["worktree", "prune"], None).await?;
        self.fetch(&mirror, request).await?;
        let commit = format!("{}^{{commit}}", request.head_sha);
        let present = self
            .git
            .run(
                &mirror,
                &["cat-file", "-e", "--end-of-options", &commit],
                None,
            )
            .await;
        match present {
            Ok(_) => {}
            // git's own failure means "no such commit"; a timeout or spawn failure is itself.
            Err(CheckoutError::Git { .. }) => {
                return Err(CheckoutError::HeadMissing {
                    repository: request.repository.clone(),
                    number: request.number,
                    sha: request.head_sha.clone(),
                });
            }
            Err(error) => return Err(error),
        }
        let target = worktree.path.to_string_lossy().into_owned();
        self.git
            .run(
                &mirror,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "--detach",
                    "--",
                    &target,
                    &request.head_sha,
                ],
                None,
            )
            .await?;
        tracing::debug!(
            repository = %request.repository,
            number = request.number,
            head = %request.head_sha,
            path = %worktree.path.display(),
            "worktree ready"
        );
        Ok(worktree)
    }

    /// Fetches the base branch and the pull request's head into the mirror, incrementally.
    async fn fetch(&self, mirror: &Path, request: &CheckoutRequest) -> Result<(), CheckoutError> {
        let base = format!("+refs/heads/{0}:refs/heads/{0}", request.base_ref);
        let head = format!("+refs/pull/{0}/head:refs/pull/{0}/head", request.number);
        self.git
            .run(
                mirror,
                &[
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-recurse-submodules",
                    "--no-write-fetch-head",
                    "--",
                    &request.clone_url,
                    &base,
                    &head,
                ],
                request.credential.as_ref(),
            )
            .await?;
        Ok(())
    }

    async fn ensure_mirror(&self, mirror: &Path) -> Result<(), CheckoutError> {
        if mirror.join("HEAD").is_file() {
            return Ok(());
        }
        let parent = mirror.parent().unwrap_or(mirror);
        std::fs::create_dir_all(parent).map_err(io("could not create", parent))?;
        // Initialised beside its final place and renamed, so a crash never leaves half a
        // mirror where the next job looks.
        let staging = mirror.with_extension(format!("init-{}", std::process::id()));
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(io("could not remove", &staging))?;
        }
        let target = staging.to_string_lossy().into_owned();
        self.git
            .run(parent, &["init", "--quiet", "--bare", "--", &target], None)
            .await?;
        if mirror.exists() {
            std::fs::remove_dir_all(mirror).map_err(io("could not remove", mirror))?;
        }
        std::fs::rename(&staging, mirror).map_err(io("could not move a new mirror to", mirror))?;
        tracing::info!(mirror = %mirror.display(), "created mirror");
        Ok(())
    }

    /// Holds a mirror for one fetch and `worktree add`: an in-process lock, then a `flock` on
    /// `REPO.git.lock` beside the mirror, so a second process on the same work directory (a
    /// `review-bot review` by hand while the daemon runs) waits too. The wait is bounded by
    /// the holder's git timeouts.
    async fn lock_mirror(&self, mirror: &Path) -> Result<MirrorGuard, CheckoutError> {
        let local = {
            let mut locks = self
                .mirror_locks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            locks.entry(mirror.to_owned()).or_default().clone()
        };
        let local = local.lock_owned().await;
        let lock_path = mirror.with_extension("git.lock");
        if let Some(parent) = lock_path.parent() {
            std::fs::create_dir_all(parent).map_err(io("could not create", parent))?;
        }
        let file = open_lock(&lock_path)?;
        let file = tokio::task::spawn_blocking(move || file.lock().map(|()| file))
            .await
            .map_err(|error| CheckoutError::Io {
                action: "could not lock",
                path: lock_path.clone(),
                source: std::io::Error::other(error),
            })?
            .map_err(io("could not lock", &lock_path))?;
        Ok(MirrorGuard {
            _local: local,
            _file: file,
        })
    }
}

/// A mirror held by this job (see [`Checkouts::lock_mirror`]); released on drop.
struct MirrorGuard {
    _local: tokio::sync::OwnedMutexGuard<()>,
    _file: File,
}

/// One job's worktree. [`Worktree::remove`] deletes it; dropping the guard does too (on an
/// error path), leaving the mirror's bookkeeping to the next `git worktree prune`.
#[derive(Debug)]
pub struct Worktree {
    path: PathBuf,
    lock_path: PathBuf,
    /// Held (`flock`) while the job lives; tells [`Checkouts::prune_stale`] it is not stale.
    lock: Option<File>,
    mirror: PathBuf,
    head_sha: String,
    git: Git,
    removed: bool,
}

impl Worktree {
    /// The worktree's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The mirror it belongs to.
    pub fn mirror(&self) -> &Path {
        &self.mirror
    }

    /// The commit it is detached at.
    pub fn head_sha(&self) -> &str {
        &self.head_sha
    }

    /// Deletes the worktree and prunes it from the mirror. No git command runs inside the
    /// worktree: PR code may have rewritten its `.git` file.
    pub async fn remove(mut self) -> Result<(), CheckoutError> {
        self.delete_files()?;
        sanitize_mirror(&self.mirror)?;
        if self.mirror.join("HEAD").is_file() {
            self.git
                .run(&self.mirror, &["worktree", "prune"], None)
                .await?;
        }
        Ok(())
    }

    fn delete_files(&mut self) -> Result<(), CheckoutError> {
        if self.removed {
            return Ok(());
        }
        self.removed = true;
        if self.path.exists() {
            make_writable(&self.path);
            std::fs::remove_dir_all(&self.path).map_err(io("could not remove", &self.path))?;
        }
        drop(self.lock.take());
        let _ = std::fs::remove_file(&self.lock_path);
        Ok(())
    }
}

impl Drop for Worktree {
    fn drop(&mut self) {
        if let Err(error) = self.delete_files() {
            tracing::warn!(%error, "could not remove a worktree; prune_stale removes it at the next start");
        }
    }
}

/// Rewrites what PR code may have planted in a mirror: its config, hooks and attributes.
fn sanitize_mirror(mirror: &Path) -> Result<(), CheckoutError> {
    if tampered(mirror) {
        tracing::warn!(mirror = %mirror.display(), "mirror layout replaced by symlinks (pull request code?); deleting it, the next checkout fetches it again");
        remove_any(mirror)?;
        return Ok(());
    }
    if !mirror.join("HEAD").is_file() {
        return Ok(());
    }
    let config = mirror.join("config");
    let staging = mirror.join("config.review-bot");
    remove_any(&staging)?;
    // `create_new` never follows a symlink planted at the staging name.
    File::options()
        .write(true)
        .create_new(true)
        .open(&staging)
        .and_then(|mut file| std::io::Write::write_all(&mut file, MIRROR_CONFIG.as_bytes()))
        .map_err(io("could not write", &staging))?;
    std::fs::rename(&staging, &config).map_err(io("could not replace", &config))?;
    for planted in [
        mirror.join("hooks"),
        mirror.join("info").join("attributes"),
        mirror.join("info").join("grafts"),
        mirror.join("objects").join("info").join("alternates"),
        mirror.join("shallow"),
    ] {
        remove_any(&planted)?;
    }
    Ok(())
}

/// Whether part of a mirror's layout is a symlink. git follows them: a planted
/// `refs/pull -> /elsewhere` would make the next fetch write refs there.
fn tampered(mirror: &Path) -> bool {
    let is_link =
        |path: &Path| std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    if is_link(mirror) {
        return true;
    }
    let top = [
        "HEAD",
        "packed-refs",
        "objects",
        "objects/pack",
        "objects/info",
    ];
    if top.iter().any(|name| is_link(&mirror.join(name))) {
        return true;
    }
    // Loose objects go into `objects/XX/`.
    if let Ok(entries) = std::fs::read_dir(mirror.join("objects"))
        && entries
            .flatten()
            .any(|entry| entry.file_type().is_ok_and(|kind| kind.is_symlink()))
    {
        return true;
    }
    // Refs, reflogs and worktree records are written by path: no symlink anywhere below.
    let mut pending: Vec<PathBuf> = ["refs", "logs", "worktrees", "info"]
        .iter()
        .map(|name| mirror.join(name))
        .collect();
    while let Some(path) = pending.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        if metadata.file_type().is_symlink() {
            return true;
        }
        if metadata.is_dir()
            && let Ok(entries) = std::fs::read_dir(&path)
        {
            pending.extend(entries.flatten().map(|entry| entry.path()));
        }
    }
    false
}

/// Removes a file, symlink (not its target) or directory tree; nothing when it is absent.
fn remove_any(path: &Path) -> Result<(), CheckoutError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            make_writable(path);
            std::fs::remove_dir_all(path).map_err(io("could not remove", path))
        }
        Ok(_) => std::fs::remove_file(path).map_err(io("could not remove", path)),
        Err(_) => Ok(()),
    }
}

/// Removes one repository's dead worktrees (directories whose lock is free or missing).
fn prune_repository_dir(dir: &Path) -> Result<usize, CheckoutError> {
    let mut removed = 0;
    for worktree in read_dirs(dir)? {
        let lock_path = worktree.with_extension("lock");
        let lock = open_lock(&lock_path)?;
        if lock.try_lock().is_err() {
            continue; // A live job holds it.
        }
        make_writable(&worktree);
        std::fs::remove_dir_all(&worktree).map_err(io("could not remove", &worktree))?;
        drop(lock);
        let _ = std::fs::remove_file(&lock_path);
        removed += 1;
    }
    Ok(removed)
}

/// Opens (creating) a lock file without truncating it.
fn open_lock(path: &Path) -> Result<File, CheckoutError> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io("could not open", path))
}

/// Subdirectories of `dir` (not following symlinks); none when `dir` does not exist.
fn read_dirs(dir: &Path) -> Result<Vec<PathBuf>, CheckoutError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(CheckoutError::Io {
                action: "could not read",
                path: dir.to_owned(),
                source: error,
            });
        }
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io("could not read", dir))?;
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            dirs.push(entry.path());
        }
    }
    Ok(dirs)
}

/// PR code may leave read-only directories; `remove_dir_all` needs them writable.
fn make_writable(root: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mut pending = vec![root.to_owned()];
    while let Some(dir) = pending.pop() {
        let Ok(metadata) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !metadata.is_dir() {
            continue;
        }
        let mode = metadata.permissions().mode();
        if mode & 0o700 != 0o700 {
            let _ = std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode | 0o700));
        }
        if let Ok(entries) = std::fs::read_dir(&dir) {
            pending.extend(entries.flatten().map(|entry| entry.path()));
        }
    }
}

fn restrict(dir: &Path) -> Result<(), CheckoutError> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(io("could not restrict", dir))
}

/// Checks what goes onto git's command line and into paths before anything runs.
fn validate(request: &CheckoutRequest) -> Result<(&str, &str), CheckoutError> {
    let names = split_repository(&request.repository)?;
    if request.head_sha.len() != 40 || !request.head_sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(CheckoutError::BadSha {
            sha: request.head_sha.clone(),
        });
    }
    let base = &request.base_ref;
    if base.is_empty()
        || base.starts_with(['-', '/'])
        || base.contains([':', '*', '?', '[', '\\', '^', '~', ' '])
        || base.chars().any(char::is_control)
    {
        return Err(CheckoutError::BadBaseRef {
            base_ref: base.clone(),
        });
    }
    if !url_is_plain(&request.clone_url) {
        return Err(CheckoutError::BadUrl);
    }
    Ok(names)
}

/// An `http(s)://` URL without userinfo: errors show the URL, so it must hold no secret.
fn url_is_plain(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    !authority.is_empty() && !authority.contains('@') && !url.chars().any(char::is_whitespace)
}

fn split_repository(repository: &str) -> Result<(&str, &str), CheckoutError> {
    let bad = || CheckoutError::BadRepository {
        repository: repository.to_owned(),
    };
    let (owner, name) = repository.split_once('/').ok_or_else(bad)?;
    let fine = |part: &str| {
        !part.is_empty()
            && !part.starts_with('.')
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    if fine(owner) && fine(name) {
        Ok((owner, name))
    } else {
        Err(bad())
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CheckoutError {
    let path = path.to_owned();
    move |source| CheckoutError::Io {
        action,
        path,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clone_urls_carry_no_credential() {
        assert!(url_is_plain("https://github.com/acme/widgets.git"));
        assert!(url_is_plain("http://127.0.0.1:8080/acme/widgets.git"));
        for bad in [
            "https://x-access-token:ghp_secret@github.com/acme/widgets.git",
            "https://user@github.com/acme/widgets.git",
            "file:///tmp/repo",
            "ext::sh -c touch% /tmp/pwned",
            "git@github.com:acme/widgets.git",
            "https:///path",
        ] {
            assert!(!url_is_plain(bad), "{bad}");
        }
    }

    #[test]
    fn repository_names_cannot_leave_the_work_directory() {
        assert!(split_repository("acme/widgets").is_ok());
        for bad in [
            "acme",
            "../x",
            "acme/..",
            "acme/.git",
            "a/b/c",
            "/x",
            "acme/wid gets",
        ] {
            assert!(split_repository(bad).is_err(), "{bad}");
        }
    }
}
