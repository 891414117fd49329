//! What a confined run sees of the filesystem, the network and the other
//! processes: a [`Confinement`], turned into bubblewrap's arguments.
//!
//! A confined run starts from an empty root (bubblewrap's tmpfs) and sees
//! only what is mounted into it:
//!
//! - the system, read-only: [`SYSTEM_PATHS`] (`/usr`, `/etc`, `/opt`, the
//!   `/bin`/`/lib` links or directories), without the secret-bearing files of
//!   [`HIDDEN_SYSTEM_PATHS`] (`/etc/shadow`, the SSH host keys, …);
//! - the caller's read-only paths (toolchains, executables, the job's git
//!   repository) and writable paths (the worktree, the run directory, the
//!   per-run home), at the same place as on the host;
//! - a private `/tmp` and `/var/tmp` (empty tmpfs), a minimal `/dev`, and the
//!   `/proc` of its own PID namespace — no process of the bot's is visible;
//! - the host's network only when [`Confinement::network`] is on.
//!
//! Credential files that fall under a read-only path ([`CREDENTIAL_NAMES`],
//! looked for at the top of each: `.cargo/credentials.toml`, `.npmrc`,
//! `.ssh`, …) and the caller's [`Confinement::hidden`] paths (the config
//! file, the store) are masked: an empty file or an empty read-only
//! directory over them. Everything else of the host — the bot's config
//! file, its store, the work directory's other mirrors, worktrees and run
//! directories, the service's home — is simply absent.
//!
//! A confined run is bounded ([`Limits`]): its private `/tmp` and
//! `/var/tmp` are tmpfs of a fixed size (bubblewrap's `--size`), and each of
//! its processes gets resource limits (`setrlimit`, through util-linux's
//! `prlimit` started in front of bubblewrap, whose limits the run inherits):
//! the data segment (`RLIMIT_DATA`, what `malloc` and writable mappings
//! take), the size of a file it writes (`RLIMIT_FSIZE`) and the number of
//! processes of the user (`RLIMIT_NPROC`). With [`Confinement::cgroup`] the
//! run is also put in a cgroup v2 of its own, which then takes the memory
//! and process bounds for the whole run where its controllers allow
//! ([`crate::cgroups`]); without one, the memory limit is per process, and
//! the process limit counts every process of the user the run runs as (for
//! a root service, all root's).
//!
//! The processes run without any capability (`--cap-drop ALL`: bubblewrap
//! started as root would otherwise keep them, and with them `mount`), with
//! no new privileges (bubblewrap sets `PR_SET_NO_NEW_PRIVS`), in a session of
//! their own (`--new-session`: no `TIOCSTI` into a terminal of ours), and in
//! PID, IPC and UTS namespaces of their own.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::SandboxError;
use crate::cgroups::RunCgroups;

/// The system, shown read-only when present on the host (a symbolic link,
/// such as `/bin -> usr/bin` on a merged-`/usr` system, is recreated as the
/// same link).
pub const SYSTEM_PATHS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Secret-bearing system files, hidden from a confined run: password and
/// group shadows (readable by root, and a confined run of a root service is
/// uid 0), the SSH host keys, private TLS keys, systemd's credentials, and
/// `/etc/review-bot` (where an operator is likely to keep the config file).
pub const HIDDEN_SYSTEM_PATHS: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/security/opasswd",
    "/etc/ssh",
    "/etc/ssl/private",
    "/etc/credstore",
    "/etc/credstore.encrypted",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/review-bot",
];

/// Credential files and directories masked when they are found at the top of
/// a read-only path: a home, a `CARGO_HOME` (`credentials.toml`), an
/// `~/.aws` (`credentials`), and so on.
pub const CREDENTIAL_NAMES: &[&str] = &[
    ".cargo/credentials.toml",
    ".cargo/credentials",
    "credentials.toml",
    "credentials",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".config/gcloud",
    ".config/review-bot",
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".gem/credentials",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".terraformrc",
    ".pgpass",
    ".claude",
    ".claude.json",
];

/// Resource bounds of a confined run; `None` is no bound. The defaults are
/// [`Limits::DEFAULT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the private `/tmp` (and of `/var/tmp`): a tmpfs takes the
    /// host's memory, by default up to half of it.
    pub tmp_size: Option<u64>,
    /// Bytes of memory: the whole run's (`memory.max`) in a cgroup of its
    /// own with the `memory` controller, else data segment per process
    /// (`RLIMIT_DATA`).
    pub memory: Option<u64>,
    /// Processes: the whole run's (`pids.max`) in a cgroup of its own with
    /// the `pids` controller, else of the run's user (`RLIMIT_NPROC`).
    pub processes: Option<u64>,
    /// Bytes of one file written (`RLIMIT_FSIZE`; past it, `SIGXFSZ`).
    pub file_size: Option<u64>,
}

impl Limits {
    /// 512 MiB of `/tmp`, 8 GiB of memory per process, 4096 processes,
    /// files of 8 GiB at most.
    pub const DEFAULT: Self = Self {
        tmp_size: Some(512 << 20),
        memory: Some(8 << 30),
        processes: Some(4096),
        file_size: Some(8 << 30),
    };

    /// No bound at all.
    pub const NONE: Self = Self {
        tmp_size: None,
        memory: None,
        processes: None,
        file_size: None,
    };

    /// `prlimit`'s arguments before `--` and the command, empty when no
    /// resource limit is set (the tmpfs size is bubblewrap's). A limit above
    /// the bot's own hard limit is lowered to it (only a privileged process
    /// may raise one).
    pub fn prlimit_arguments(&self) -> Vec<String> {
        let own = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
        [
            ("--data", "Max data size", self.memory),
            ("--nproc", "Max processes", self.processes),
            ("--fsize", "Max file size", self.file_size),
        ]
        .into_iter()
        .filter_map(|(option, name, limit)| {
            let limit = match hard_limit(&own, name) {
                Some(hard) => limit?.min(hard),
                None => limit?,
            };
            Some(format!("{option}={limit}:{limit}"))
        })
        .collect()
    }
}

/// The hard limit named `name` in `/proc/self/limits`' text; `None` when
/// unlimited or not found.
fn hard_limit(limits: &str, name: &str) -> Option<u64> {
    let line = limits.lines().find(|line| line.starts_with(name))?;
    line[name.len()..].split_whitespace().nth(1)?.parse().ok()
}

impl Default for Limits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// What a confined run may see and change. Build one per job: the job's
/// worktree ([`Confinement::with_git_worktree`]), run directory and home
/// (writable), and the toolchains it needs (read-only); then run the command
/// through [`crate::Containment::confined_command`].
///
/// Paths are canonicalised (symbolic links resolved) and shown at their
/// canonical place. The same path given both writable and read-only is
/// read-only. A writable path must exist; a read-only one that does not is
/// left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    /// Shown writable.
    pub writable: Vec<PathBuf>,
    /// Shown read-only (toolchains, executables, the job's repository).
    pub readable: Vec<PathBuf>,
    /// Masked when they fall under a shown path (the bot's config file and
    /// store, say, should an operator keep them under a toolchain's
    /// directory or in `/etc`).
    pub hidden: Vec<PathBuf>,
    /// Whether the run keeps the host's network (`false`: a network
    /// namespace of its own, with only a loopback device).
    pub network: bool,
    /// Read-only paths shown even though they lie in a masked directory:
    /// a worktree's own administrative directory inside its mirror's
    /// hidden `worktrees/` (where the other jobs' paths are).
    pub shown_in_masks: Vec<PathBuf>,
    /// The run's resource bounds.
    pub limits: Limits,
    /// Where the run's own cgroup is made ([`crate::cgroups`]); `None`:
    /// rlimits bound it.
    pub cgroup: Option<RunCgroups>,
}

impl Default for Confinement {
    fn default() -> Self {
        Self::new()
    }
}

impl Confinement {
    /// The system only (read-only), with the host's network. Add the job's
    /// paths with the `with_*` methods.
    pub fn new() -> Self {
        Self {
            writable: Vec::new(),
            readable: Vec::new(),
            hidden: Vec::new(),
            network: true,
            shown_in_masks: Vec::new(),
            limits: Limits::DEFAULT,
            cgroup: None,
        }
    }

    /// Set [`Confinement::cgroup`]: each run gets a cgroup of its own
    /// under it, bounded by [`Confinement::limits`] where the controllers
    /// allow.
    #[must_use]
    pub fn with_cgroup(mut self, cgroup: Option<RunCgroups>) -> Self {
        self.cgroup = cgroup;
        self
    }

    /// Set [`Confinement::limits`].
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Add a writable path (it must exist when the run starts).
    #[must_use]
    pub fn with_writable(mut self, path: impl Into<PathBuf>) -> Self {
        self.writable.push(path.into());
        self
    }

    /// Add writable paths (each must exist when the run starts).
    #[must_use]
    pub fn with_writable_paths(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.writable.extend(paths);
        self
    }

    /// Add a read-only path (left out when it does not exist).
    #[must_use]
    pub fn with_readable(mut self, path: impl Into<PathBuf>) -> Self {
        self.readable.push(path.into());
        self
    }

    /// Add read-only paths.
    #[must_use]
    pub fn with_readable_paths(mut self, paths: impl IntoIterator<Item = PathBuf>) -> Self {
        self.readable.extend(paths);
        self
    }

    /// Add a path to mask should it fall under a shown path.
    #[must_use]
    pub fn with_hidden(mut self, path: impl Into<PathBuf>) -> Self {
        self.hidden.push(path.into());
        self
    }

    /// Set [`Confinement::network`].
    #[must_use]
    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Add a git checkout: `worktree` writable, its `.git` read-only (so the
    /// run can neither point it elsewhere nor plant hooks or config in it),
    /// and, when `.git` is a file (a worktree of a bare mirror), exactly the
    /// repository it belongs to, read-only: `git log`, `git diff` and
    /// `git status` work inside, and nothing can be written into the mirror
    /// the bot's own git commands use. A directory that is not a git
    /// checkout is just added writable.
    ///
    /// Call it before any PR code has run confined in `worktree`, or only
    /// ever run PR code there confined: a confined run cannot change `.git`,
    /// so it still points where the bot's checkout made it point.
    pub fn with_git_worktree(self, worktree: impl Into<PathBuf>) -> Result<Self, SandboxError> {
        let worktree = worktree.into();
        let dot_git = worktree.join(".git");
        let invalid = |reason: String| SandboxError::ConfinementPath {
            path: dot_git.clone(),
            reason,
        };
        let mut confinement = self.with_writable(&worktree);
        let metadata = match std::fs::symlink_metadata(&dot_git) {
            Ok(metadata) => metadata,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(confinement),
            Err(error) => return Err(invalid(format!("could not inspect it: {error}"))),
        };
        if metadata.is_dir() {
            return Ok(confinement.with_readable(dot_git));
        }
        if !metadata.is_file() {
            return Err(invalid(
                "it is neither a file nor a directory (a symbolic link?); remove the worktree \
                 and check it out again"
                    .to_owned(),
            ));
        }
        let text = std::fs::read_to_string(&dot_git)
            .map_err(|error| invalid(format!("could not read it: {error}")))?;
        let git_dir = text
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("gitdir: "))
            .ok_or_else(|| invalid("it does not start with `gitdir: `".to_owned()))?;
        let git_dir = canonical(&worktree.join(git_dir.trim_end()))
            .map_err(|error| invalid(format!("the directory it names is unusable: {error}")))?;
        let common = match std::fs::read_to_string(git_dir.join("commondir")) {
            Ok(relative) => canonical(&git_dir.join(relative.trim_end())).map_err(|error| {
                invalid(format!(
                    "the repository `{}/commondir` names is unusable: {error}",
                    git_dir.display()
                ))
            })?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => git_dir.clone(),
            Err(error) => return Err(invalid(format!("could not read its commondir: {error}"))),
        };
        if !common.join("objects").is_dir() {
            return Err(invalid(format!(
                "`{}` is not a git repository; remove the worktree and check it out again",
                common.display()
            )));
        }
        // The mirror's `worktrees/` names every job's worktree (its
        // `gitdir` files): hidden, but for this worktree's own directory,
        // which git needs (HEAD, index, logs).
        let administrative = common.join("worktrees");
        if git_dir.starts_with(&administrative) {
            confinement.shown_in_masks.push(git_dir.clone());
        }
        if !git_dir.starts_with(&common) {
            confinement = confinement.with_readable(git_dir);
        }
        Ok(confinement
            .with_readable(dot_git)
            .with_readable(common)
            .with_hidden(administrative))
    }

    /// bubblewrap's arguments for this confinement, up to and including the
    /// `--` before the program: the namespaces, the mounts (parents before
    /// what is mounted inside them), then the masks.
    pub fn bwrap_arguments(&self) -> Result<Vec<OsString>, SandboxError> {
        let mut arguments: Vec<OsString> = [
            "--cap-drop",
            "ALL",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--new-session",
            "--die-with-parent",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        if !self.network {
            arguments.push("--unshare-net".into());
        }

        let mut mounts = system_mounts(self.network);
        mounts.push(Mount::Dev);
        mounts.push(Mount::Proc);
        mounts.push(Mount::Tmpfs(PathBuf::from("/tmp")));
        mounts.push(Mount::Tmpfs(PathBuf::from("/var/tmp")));

        let mut readable = Vec::new();
        for path in &self.readable {
            match canonical(path) {
                Ok(path) => readable.push(path),
                Err(error) => tracing::debug!(
                    path = %path.display(), %error,
                    "leaving a read-only path out of the confinement"
                ),
            }
        }
        for path in &self.writable {
            // A run directory resumed after a crash was writable to the last
            // run: a link planted there (`home → /etc`) would make its
            // target writable to the next one.
            if std::fs::symlink_metadata(path).is_ok_and(|metadata| metadata.is_symlink()) {
                return Err(SandboxError::ConfinementPath {
                    path: path.clone(),
                    reason: "a writable path must not be a symbolic link (one planted by an \
                             earlier run?); remove it"
                        .to_owned(),
                });
            }
            let path = canonical(path).map_err(|error| SandboxError::ConfinementPath {
                path: path.clone(),
                reason: format!("a writable path must exist: {error}"),
            })?;
            if !readable.contains(&path) {
                mounts.push(Mount::Writable(path));
            }
        }
        mounts.extend(readable.iter().cloned().map(Mount::ReadOnly));
        // Parents first, so what is mounted inside a mount lands on top of it
        // (a read-only `.git` inside a writable worktree, a worktree under
        // the private /tmp); the order given is kept among equals.
        let mut unique: Vec<Mount> = Vec::with_capacity(mounts.len());
        for mount in mounts {
            if !unique.contains(&mount) {
                unique.push(mount);
            }
        }
        let mut mounts = unique;
        mounts.sort_by_key(|mount| depth(mount.path()));

        let masks = masks(&mounts, &readable, &self.hidden);

        for mount in &mounts {
            mount.push_arguments(&mut arguments, self.limits.tmp_size);
        }
        // A read-only file given through a symbolic link (an npm `.bin/`
        // link to an executable) is shown at the given path too, so the
        // caller can run it by that name. Directories are not: masks apply
        // at the canonical place only.
        for given in &self.readable {
            let Ok(path) = canonical(given) else { continue };
            let hidden = masks.iter().any(|mask| path.starts_with(mask));
            if given.is_absolute() && *given != path && path.is_file() && !hidden {
                arguments.extend(["--ro-bind".into(), path.into(), given.into()]);
            }
        }
        let shown_in_masks = self.shown_in_masks(&mounts, &masks);
        for mask in &masks {
            if mask.is_dir() {
                arguments.extend(["--tmpfs".into(), mask.into()]);
                // Shown again on top of the mask, before it is made
                // read-only (the mount point is made in the tmpfs).
                for path in shown_in_masks
                    .iter()
                    .filter(|path| path.starts_with(mask) && *path != mask)
                {
                    let bind = if mounts.contains(&Mount::Writable(path.clone())) {
                        "--bind"
                    } else {
                        "--ro-bind"
                    };
                    arguments.extend([bind.into(), path.into(), path.into()]);
                }
                arguments.extend(["--remount-ro".into(), mask.into()]);
            } else {
                arguments.extend(["--ro-bind".into(), "/dev/null".into(), mask.into()]);
            }
        }
        arguments.push("--".into());
        Ok(arguments)
    }
}

impl Confinement {
    /// How `secret` (a path the caller hides, existing or not) is kept from
    /// a run confined by this confinement: outside what it sees, masked,
    /// or, when it does not exist yet, by masking the directory it would
    /// appear in. `review-bot doctor` says it per secret.
    pub fn secret_visibility(&self, secret: &Path) -> SecretVisibility {
        let mut roots: Vec<PathBuf> = system_mounts(self.network)
            .into_iter()
            .filter(|mount| matches!(mount, Mount::ReadOnly(_)))
            .map(|mount| mount.path().to_owned())
            .collect();
        roots.extend(
            self.readable
                .iter()
                .chain(&self.writable)
                .filter_map(|path| canonical(path).ok()),
        );
        let shown: Vec<&Path> = roots.iter().map(PathBuf::as_path).collect();
        visibility(secret, &shown)
    }
}

impl Confinement {
    /// What is shown again on top of a mask: the caller's own
    /// ([`Confinement::shown_in_masks`], a worktree's administrative
    /// directory), and the run's own paths lying inside a directory masked
    /// for a missing secret.
    fn shown_in_masks(&self, mounts: &[Mount], masks: &[PathBuf]) -> Vec<PathBuf> {
        let masked_for_a_missing_secret = |mask: &PathBuf| {
            !self
                .hidden
                .iter()
                .any(|hidden| canonical(hidden).is_ok_and(|hidden| *mask == hidden))
                && !HIDDEN_SYSTEM_PATHS
                    .iter()
                    .any(|system| Path::new(system) == mask)
        };
        self.shown_in_masks
            .iter()
            .filter_map(|path| canonical(path).ok())
            .chain(
                mounts
                    .iter()
                    .filter(|mount| matches!(mount, Mount::ReadOnly(_) | Mount::Writable(_)))
                    .filter(|mount| {
                        masks.iter().any(|mask| {
                            mount.path().starts_with(mask)
                                && mount.path() != mask
                                && masked_for_a_missing_secret(mask)
                        })
                    })
                    .map(|mount| mount.path().to_owned()),
            )
            .collect()
    }
}

/// The system, read-only (symbolic links recreated as links), and the
/// resolver's file when it lies outside `/etc`.
fn system_mounts(network: bool) -> Vec<Mount> {
    let mut mounts: Vec<Mount> = Vec::new();
    for system in SYSTEM_PATHS {
        let path = Path::new(system);
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if metadata.is_symlink() => {
                if let Ok(target) = std::fs::read_link(path) {
                    mounts.push(Mount::Symlink {
                        target,
                        path: path.to_owned(),
                    });
                }
            }
            Ok(metadata) if metadata.is_dir() => {
                mounts.push(Mount::ReadOnly(path.to_owned()));
            }
            _ => {}
        }
    }
    // A resolv.conf that links outside /etc (systemd-resolved's stub).
    if network
        && let Ok(resolver) = canonical(Path::new("/etc/resolv.conf"))
        && !resolver.starts_with("/etc")
    {
        mounts.push(Mount::ReadOnly(resolver));
    }
    mounts
}

/// What to mask: the hidden system files, the caller's hidden paths and the
/// credential files at the top of each read-only path, when they exist and
/// fall under something shown; parents first.
fn masks(mounts: &[Mount], readable: &[PathBuf], hidden: &[PathBuf]) -> Vec<PathBuf> {
    let shown: Vec<&Path> = mounts
        .iter()
        .filter(|mount| matches!(mount, Mount::ReadOnly(_) | Mount::Writable(_)))
        .map(Mount::path)
        .collect();
    let mut masks: Vec<PathBuf> = Vec::new();
    let candidates = HIDDEN_SYSTEM_PATHS
        .iter()
        .map(PathBuf::from)
        .chain(hidden.iter().cloned())
        .chain(
            readable
                .iter()
                .flat_map(|root| CREDENTIAL_NAMES.iter().map(move |name| root.join(name))),
        );
    for candidate in candidates {
        // Only what exists, at its canonical place, and is shown.
        let Ok(path) = canonical(&candidate) else {
            continue;
        };
        if shown.iter().any(|root| path.starts_with(root)) && !masks.contains(&path) {
            masks.push(path);
        }
    }
    // A caller's secret that does not exist yet (the store before the first
    // run, its `-wal`) would appear inside as soon as it is made: its
    // directory is masked instead.
    for secret in hidden {
        if let SecretVisibility::DirectoryMasked(directory) = visibility(secret, &shown)
            && !masks.contains(&directory)
        {
            masks.push(directory);
        }
    }
    // What lies inside a masked directory is masked with it (and could not
    // be mounted over in its read-only tmpfs).
    let directories: Vec<PathBuf> = masks.iter().filter(|mask| mask.is_dir()).cloned().collect();
    masks.retain(|mask| {
        !directories
            .iter()
            .any(|directory| mask != directory && mask.starts_with(directory))
    });
    masks.sort_by_key(|path| depth(path));
    masks
}

/// How a secret path (one of [`Confinement::hidden`]) is kept from a
/// confined run; [`Confinement::secret_visibility`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretVisibility {
    /// It lies outside everything the run sees (now, and once it exists).
    Outside,
    /// It exists and is masked (an empty file or directory over it). A
    /// file: its directory is a path the run is shown, which cannot be
    /// masked whole, so a file put in its place while a run lasts would be
    /// visible to that run.
    Masked,
    /// Its directory (for a missing one, the nearest existing ancestor it
    /// would appear in; this path) is masked: the file, one that replaces
    /// it, and one made later are neither readable nor creatable inside.
    DirectoryMasked(PathBuf),
    /// It does not exist now and would be visible once made: the nearest
    /// directory it would appear in is itself a path the run is shown (or
    /// the root of one), which cannot be masked without hiding all of it.
    Exposed(PathBuf),
}

impl std::fmt::Display for SecretVisibility {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Outside => formatter.write_str("outside everything a confined run sees"),
            Self::Masked => formatter.write_str("masked"),
            Self::DirectoryMasked(directory) => write!(
                formatter,
                "hidden with its directory, {}",
                directory.display()
            ),
            Self::Exposed(directory) => write!(
                formatter,
                "missing now, and would be visible once made: {} is shown to confined runs \
                 and cannot be hidden whole",
                directory.display()
            ),
        }
    }
}

/// Where `secret` stands against the `shown` roots (canonical paths).
fn visibility(secret: &Path, shown: &[&Path]) -> SecretVisibility {
    // The secret's canonical place: its nearest existing ancestor's,
    // followed by what does not exist yet.
    let mut existing = secret.to_owned();
    let mut missing: Vec<OsString> = Vec::new();
    let ancestor = loop {
        if let Ok(path) = canonical(&existing) {
            break path;
        }
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            return SecretVisibility::Outside;
        };
        missing.push(name.to_owned());
        existing = parent.to_owned();
    };
    let place = missing
        .iter()
        .rev()
        .fold(ancestor.clone(), |path, name| path.join(name));
    let Some(root) = shown
        .iter()
        .filter(|root| place.starts_with(root))
        .max_by_key(|root| depth(root))
    else {
        return SecretVisibility::Outside;
    };
    if missing.is_empty() {
        // A file may be replaced while a run lasts (SQLite deletes its
        // `-wal` and makes it again, an editor saves by renaming over it):
        // a mask over the old file would not cover the new one. Its
        // directory is masked when it can be, so what takes its place is
        // hidden too.
        match place.parent() {
            Some(parent) if !place.is_dir() && parent != *root && parent.starts_with(root) => {
                SecretVisibility::DirectoryMasked(parent.to_owned())
            }
            _ => SecretVisibility::Masked,
        }
    } else if ancestor != *root && ancestor.is_dir() {
        SecretVisibility::DirectoryMasked(ancestor)
    } else {
        SecretVisibility::Exposed(ancestor)
    }
}

/// Directories a build or an agent commonly needs read-only, from the bot's
/// own environment: every [`crate::toolchains::detect_toolchains`]
/// toolchain's (rustup's home and `~/.cargo/bin`, pyenv's root, nvm's
/// current node, `GOROOT`, `JAVA_HOME`) and each absolute `PATH` entry
/// outside the system. Pass them to [`Confinement::with_readable_paths`];
/// credential files inside are masked.
pub fn toolchain_directories() -> Vec<PathBuf> {
    crate::toolchains::readable_paths(&crate::toolchains::detect_toolchains())
}

/// One mount of the confined root.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mount {
    ReadOnly(PathBuf),
    Writable(PathBuf),
    Symlink { target: PathBuf, path: PathBuf },
    Tmpfs(PathBuf),
    Dev,
    Proc,
}

impl Mount {
    fn path(&self) -> &Path {
        match self {
            Self::ReadOnly(path)
            | Self::Writable(path)
            | Self::Tmpfs(path)
            | Self::Symlink { path, .. } => path,
            Self::Dev => Path::new("/dev"),
            Self::Proc => Path::new("/proc"),
        }
    }

    /// The mount's arguments; a tmpfs of `tmp_size` bytes when given.
    fn push_arguments(&self, arguments: &mut Vec<OsString>, tmp_size: Option<u64>) {
        let mut push = |items: &[&std::ffi::OsStr]| {
            arguments.extend(items.iter().map(|item| (*item).to_owned()));
        };
        match self {
            Self::ReadOnly(path) => push(&["--ro-bind".as_ref(), path.as_ref(), path.as_ref()]),
            Self::Writable(path) => push(&["--bind".as_ref(), path.as_ref(), path.as_ref()]),
            Self::Symlink { target, path } => {
                push(&["--symlink".as_ref(), target.as_ref(), path.as_ref()]);
            }
            Self::Tmpfs(path) => {
                if let Some(size) = tmp_size {
                    let size = size.to_string();
                    push(&["--size".as_ref(), size.as_ref()]);
                }
                push(&["--tmpfs".as_ref(), path.as_ref()]);
            }
            Self::Dev => push(&["--dev".as_ref(), "/dev".as_ref()]),
            Self::Proc => push(&["--proc".as_ref(), "/proc".as_ref()]),
        }
    }
}

/// How many components a path has (`/` is 0).
fn depth(path: &Path) -> usize {
    path.components()
        .filter(|component| matches!(component, Component::Normal(_)))
        .count()
}

fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(confinement: &Confinement) -> Vec<String> {
        confinement
            .bwrap_arguments()
            .unwrap()
            .into_iter()
            .map(|argument| argument.into_string().unwrap())
            .collect()
    }

    fn position(arguments: &[String], window: &[&str]) -> usize {
        arguments
            .windows(window.len())
            .position(|candidate| candidate == window)
            .unwrap_or_else(|| panic!("{window:?} not in {arguments:?}"))
    }

    #[test]
    fn parents_are_mounted_before_what_lies_inside_them_and_masks_last() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        let worktree = root.join("worktree");
        let toolchain = root.join("toolchain");
        std::fs::create_dir_all(worktree.join(".git")).unwrap();
        std::fs::create_dir_all(toolchain.join(".ssh")).unwrap();
        std::fs::write(toolchain.join("credentials.toml"), "token").unwrap();
        let confinement = Confinement::new()
            .with_readable(&toolchain)
            .with_readable(root.join("missing"))
            .with_git_worktree(&worktree)
            .unwrap()
            .with_network(false);
        let arguments = strings(&confinement);
        let worktree = worktree.display().to_string();
        let dot_git = format!("{worktree}/.git");
        let toolchain = toolchain.display().to_string();
        assert!(arguments.contains(&"--unshare-net".to_owned()));
        assert!(arguments.ends_with(&["--".to_owned()]));
        let tmp = position(&arguments, &["--tmpfs", "/tmp"]);
        let bind = position(&arguments, &["--bind", &worktree, &worktree]);
        let git = position(&arguments, &["--ro-bind", &dot_git, &dot_git]);
        let ssh = position(
            &arguments,
            &["--tmpfs", &format!("{toolchain}/.ssh"), "--remount-ro"],
        );
        let credentials = position(
            &arguments,
            &[
                "--ro-bind",
                "/dev/null",
                &format!("{toolchain}/credentials.toml"),
            ],
        );
        assert!(tmp < bind && bind < git && git < ssh && git < credentials);
        assert!(
            !arguments
                .iter()
                .any(|argument| argument.contains("missing"))
        );
    }

    #[test]
    fn the_same_path_writable_and_readable_is_read_only_and_writable_ones_must_exist() {
        let root = tempfile::tempdir().unwrap();
        let path = std::fs::canonicalize(root.path()).unwrap();
        let both = Confinement::new().with_writable(&path).with_readable(&path);
        let arguments = strings(&both);
        let shown = path.display().to_string();
        position(&arguments, &["--ro-bind", &shown, &shown]);
        assert!(!arguments.contains(&"--bind".to_owned()));

        let error = Confinement::new()
            .with_writable(path.join("missing"))
            .bwrap_arguments()
            .unwrap_err();
        assert!(error.to_string().contains("must exist"), "{error}");
    }

    #[test]
    fn limits_above_the_bots_own_hard_limits_are_lowered_to_them() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max file size             unlimited            unlimited            bytes\n\
                      Max processes             96365                96365                processes\n";
        assert_eq!(hard_limit(limits, "Max processes"), Some(96_365));
        assert_eq!(hard_limit(limits, "Max file size"), None);
        assert_eq!(hard_limit(limits, "Max data size"), None);
        let arguments = Limits {
            processes: Some(u64::MAX),
            ..Limits::NONE
        }
        .prlimit_arguments();
        assert_eq!(arguments.len(), 1);
        assert_ne!(arguments[0], format!("--nproc={0}:{0}", u64::MAX));
    }

    #[test]
    fn a_missing_secret_masks_its_directory_and_the_runs_own_paths_inside_it_are_shown_again() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        let toolchain = root.join("toolchain");
        let data = toolchain.join("data");
        std::fs::create_dir_all(data.join("bin")).unwrap();
        let store = data.join("store.db");
        let confinement = Confinement::new()
            .with_readable(&toolchain)
            .with_readable(data.join("bin"))
            .with_hidden(&store)
            .with_hidden(toolchain.join("top.db"));
        assert_eq!(
            confinement.secret_visibility(&store),
            SecretVisibility::DirectoryMasked(data.clone())
        );
        assert_eq!(
            confinement.secret_visibility(&toolchain.join("top.db")),
            SecretVisibility::Exposed(toolchain.clone())
        );
        assert_eq!(
            confinement.secret_visibility(&root.join("elsewhere/store.db")),
            SecretVisibility::Outside
        );
        let arguments = strings(&confinement);
        let data = data.display().to_string();
        let bin = format!("{data}/bin");
        let mask = position(&arguments, &["--tmpfs", &data]);
        // Shown again after the mask (it was mounted before it, too).
        let shown = arguments
            .windows(3)
            .rposition(|window| window == ["--ro-bind", bin.as_str(), bin.as_str()])
            .unwrap();
        let read_only = position(&arguments, &["--remount-ro", &data]);
        assert!(mask < shown && shown < read_only, "{arguments:?}");
        // The toolchain itself is not masked whole.
        assert!(
            !arguments
                .windows(2)
                .any(|pair| pair[0] == "--tmpfs" && pair[1] == toolchain.display().to_string())
        );
    }

    #[test]
    fn a_worktree_of_a_mirror_shows_exactly_that_mirror_read_only() {
        let root = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(root.path()).unwrap();
        let mirror = root.join("mirrors/owner/repo.git");
        let admin = mirror.join("worktrees/pr-1");
        std::fs::create_dir_all(&admin).unwrap();
        std::fs::create_dir_all(mirror.join("objects")).unwrap();
        std::fs::create_dir_all(root.join("mirrors/owner/other.git/objects")).unwrap();
        std::fs::write(admin.join("commondir"), "../..\n").unwrap();
        let worktree = root.join("worktrees/pr-1");
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(
            worktree.join(".git"),
            format!("gitdir: {}\n", admin.display()),
        )
        .unwrap();
        let confinement = Confinement::new().with_git_worktree(&worktree).unwrap();
        assert_eq!(confinement.writable, std::slice::from_ref(&worktree));
        assert_eq!(
            confinement.readable,
            [worktree.join(".git"), mirror.clone()]
        );
        assert_eq!(confinement.hidden, [mirror.join("worktrees")]);
        assert_eq!(confinement.shown_in_masks, [admin]);

        std::fs::write(worktree.join(".git"), "gitdir: /\n").unwrap();
        let error = Confinement::new().with_git_worktree(&worktree).unwrap_err();
        assert!(error.to_string().contains("check it out again"), "{error}");
    }
}
