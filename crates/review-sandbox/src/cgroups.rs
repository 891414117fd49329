//! Which resource bounds a confined run gets, and, where a cgroup v2 is
//! available, the cgroup each run is put in.
//!
//! Every confined run is bounded by rlimits (`prlimit` in front of
//! bubblewrap, [`crate::Limits`]): they need no privilege and work
//! everywhere, but the memory limit is per process and the process limit
//! counts every process of the user. A cgroup bounds the run as a whole and
//! ends it whole. Where the bot may make child cgroups ([`RunCgroups`]),
//! each confined run gets one, `PARENT/review-bot-run-RANDOM` (a fresh
//! random name per run: never one another run, or a replica in another PID
//! namespace sharing the directory, could have):
//!
//! - made, given its bounds and entered by a small `/bin/sh` wrapper in front
//!   of `prlimit` and bubblewrap ([`RunCgroups::wrapper_arguments`]: `mkdir`,
//!   the bound files, `echo 0 > cgroup.procs`, then `exec`), so the run's
//!   first process is in it before anything of the run starts, and
//!   everything it starts is too (the workspace forbids `unsafe`, so no
//!   `pre_exec`; a process boundary instead);
//! - bounded as a whole: `memory.max` for the memory bound (with
//!   `memory.swap.max` 0, and `memory.oom.group` 1: past the bound the whole
//!   run is killed, not one process picked), `pids.max` for the process
//!   bound, each where the parent gives the controller to its children; a
//!   bound whose controller is missing stays an rlimit
//!   ([`RunCgroups::rlimits`]). The file size bound is always an rlimit
//!   (cgroups have none), the `/tmp` size bubblewrap's (its pages count
//!   against the run's memory);
//! - ended whole ([`RunCgroup::end`]): `cgroup.kill`, a bounded wait until
//!   `cgroup.events` says `populated 0`, what the run hit read
//!   ([`RunUsage`]: `memory.events`' `oom_kill`, `pids.events`' `max`,
//!   `memory.peak`), and the cgroup removed.
//!
//! Where the runs' parent is comes from `sandbox.cgroup` ([`CgroupSetting`]):
//! `auto` uses the bot's own cgroup when it is delegated ([`detect`]: what
//! systemd's `Delegate=yes` gives a service), after moving the bot into a
//! leaf child of it, `review-bot` (cgroup v2 lets only a cgroup without
//! processes of its own give controllers to its children); a path names a
//! directory the operator made for the runs; `off` keeps rlimits only.
//! [`prepare`] does this once per setting and process; [`describe`] says
//! which bounds apply, for `review-bot doctor`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::Limits;

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
                "a delegated cgroup v2 ({}): runs get child cgroups of it",
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
    if relative.is_empty() {
        return unavailable(format!(
            "this process is in the root cgroup of the hierarchy (a container, or a host without \
             systemd): give the runs a directory of their own with sandbox.cgroup, such as \
             \"{}\"",
            mount.join("review-bot-runs").display()
        ));
    }
    let directory = mount.join(relative);
    check_directory(&directory)
}

/// Whether `directory` (a cgroup v2 directory, this process's own) is
/// delegated to this process: marked so by its manager (systemd's
/// `Delegate=yes` sets the `trusted.delegate` attribute, a user manager's
/// `user.delegate`), or, for a service that is not root, owned by its user
/// (only delegation gives a user a cgroup) — and its
/// `cgroup.subtree_control` writable. The controllers it offers are not
/// required: a run gets its own cgroup either way, and a bound whose
/// controller is missing stays an rlimit ([`describe`] says which).
pub fn check_directory(directory: &Path) -> CgroupSupport {
    use std::os::unix::fs::MetadataExt as _;
    let unavailable = |reason: String| CgroupSupport::Unavailable { reason };
    if let Err(error) = std::fs::read_to_string(directory.join("cgroup.controllers")) {
        return unavailable(format!(
            "cannot read {}/cgroup.controllers: {error}",
            directory.display()
        ));
    }
    let own = std::fs::metadata("/proc/self").map(|metadata| metadata.uid());
    let owner = std::fs::metadata(directory).map(|metadata| metadata.uid());
    let owned_by_a_user = matches!((own, owner), (Ok(own), Ok(owner)) if own != 0 && own == owner);
    if !(marked_delegated(directory) || owned_by_a_user) {
        return unavailable(format!(
            "the cgroup {} is not delegated to this service (systemd's Delegate=yes marks it \
             with the trusted.delegate attribute): run the service with Delegate=yes, or give \
             the runs a directory of their own with sandbox.cgroup",
            directory.display()
        ));
    }
    // Opening writes nothing.
    if let Err(error) = std::fs::OpenOptions::new()
        .write(true)
        .open(directory.join("cgroup.subtree_control"))
    {
        return unavailable(format!(
            "the cgroup {} is marked delegated, but its cgroup.subtree_control is not writable \
             by this user: {error}",
            directory.display()
        ));
    }
    CgroupSupport::Delegated {
        directory: directory.to_owned(),
    }
}

/// Whether `directory` carries a `trusted.delegate` or `user.delegate`
/// attribute of `1` (what systemd sets on the cgroup of a unit with
/// `Delegate=`).
fn marked_delegated(directory: &Path) -> bool {
    ["trusted.delegate", "user.delegate"].iter().any(|name| {
        let mut value = [0_u8; 8];
        rustix::fs::getxattr(directory, *name, &mut value[..])
            .is_ok_and(|length| value.get(..length) == Some(b"1".as_slice()))
    })
}

/// Where the cgroup2 file system is mounted here (`/proc/self/mountinfo`),
/// if it is.
pub fn cgroup2_mount_point() -> Option<PathBuf> {
    cgroup2_mount(&std::fs::read_to_string("/proc/self/mountinfo").ok()?)
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

/// The name of the leaf cgroup the bot moves itself into under `auto`.
pub const SERVICE_LEAF: &str = "review-bot";

/// The prefix of a run's cgroup name (`review-bot-run-` and 16 random
/// hexadecimal digits).
pub const RUN_PREFIX: &str = "review-bot-run-";

/// What the wrapper prints, first on its line, when it cannot put the run in
/// its cgroup ([`crate::Contained::failure`] reads it).
pub const WRAPPER_FAILURE: &str = "review-bot-cgroup: ";

/// The `/bin/sh` script that makes a run's cgroup, writes its bounds, moves
/// itself in and execs the rest of its arguments. `$0` is [`WRAPPER_NAME`],
/// `$1` the parent, `$2` the run's cgroup name, then `FILE VALUE` pairs (a
/// `?FILE` is written only if it exists), `--`, and the command. The cgroup
/// must be new: a run never joins one it did not make.
const WRAPPER_SCRIPT: &str = r#"parent=$1; run="$1/$2"; shift 2
fail() { echo "review-bot-cgroup: $*" >&2; exit 125; }
mkdir "$run" 2>/dev/null || fail "cannot make the run's cgroup $run: is $parent a cgroup v2 directory the bot may write?"
[ -f "$run/cgroup.events" ] || fail "$run is not a cgroup v2 directory (no cgroup.events): is $parent on a cgroup2 file system?"
while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
  file=${1#\?}
  if [ "$file" = "$1" ] || [ -e "$run/$file" ]; then
    echo "$2" > "$run/$file" 2>/dev/null || fail "cannot write $2 to $run/$file"
  fi
  shift 2
done
shift
echo 0 > "$run/cgroup.procs" 2>/dev/null || fail "cannot move the run into its cgroup $run"
exec "$@"
"#;

/// The wrapper's `$0`, which marks a command as wrapped (and names it in
/// `ps`).
const WRAPPER_NAME: &str = "review-bot-cgroup";

/// How often a run's cgroup is looked at while it empties.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// `sandbox.cgroup`: where confined runs' cgroups are made.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CgroupSetting {
    /// The bot's own cgroup, when it is delegated ([`detect`]); rlimits
    /// otherwise.
    #[default]
    Auto,
    /// Rlimits only.
    Off,
    /// This cgroup v2 directory, made for the runs by the operator (made if
    /// missing, under a writable cgroup v2 directory); it must hold no
    /// process of its own.
    Directory(PathBuf),
}

impl std::str::FromStr for CgroupSetting {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "auto" | "" => Ok(Self::Auto),
            "off" => Ok(Self::Off),
            path if Path::new(path).is_absolute() => Ok(Self::Directory(PathBuf::from(path))),
            other => Err(format!(
                "`{other}` is neither \"auto\", \"off\" nor an absolute path to a cgroup v2 \
                 directory (such as \"/sys/fs/cgroup/review-bot-runs\")"
            )),
        }
    }
}

impl std::fmt::Display for CgroupSetting {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Auto => formatter.write_str("auto"),
            Self::Off => formatter.write_str("off"),
            Self::Directory(path) => write!(formatter, "{}", path.display()),
        }
    }
}

/// A cgroup v2 directory runs' cgroups are made in, and the controllers
/// (of [`CONTROLLERS`]) it gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCgroups {
    /// The parent directory (under the cgroup2 mount).
    pub parent: PathBuf,
    /// The controllers enabled for its children (`cgroup.subtree_control`).
    pub controllers: Vec<String>,
}

/// The runs' cgroups could not be set up, or one run's could not be ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cgroup `{}`: {reason}", directory.display())]
pub struct CgroupError {
    /// The cgroup directory involved.
    pub directory: PathBuf,
    /// What went wrong and what to do.
    pub reason: String,
}

/// What [`prepare`] found, per setting, for this process: `auto` moves the
/// process, which is done once.
type Prepared = Vec<(CgroupSetting, Result<Option<RunCgroups>, CgroupError>)>;
static PREPARED: Mutex<Prepared> = Mutex::new(Vec::new());

/// The runs' cgroups for `setting`, set up on first use and remembered for
/// the process: `Ok(None)` under `off`, and under `auto` when no delegated
/// cgroup is available (rlimits then; [`detect`] says why).
pub fn prepare(setting: &CgroupSetting) -> Result<Option<RunCgroups>, CgroupError> {
    let mut prepared = PREPARED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, found)) = prepared.iter().find(|(known, _)| known == setting) {
        return found.clone();
    }
    let found = match setting {
        CgroupSetting::Off => Ok(None),
        CgroupSetting::Auto => match detect() {
            CgroupSupport::Delegated { directory } => prepare_own(&directory).map(Some),
            CgroupSupport::Unavailable { .. } => Ok(None),
        },
        CgroupSetting::Directory(directory) => prepare_directory(directory).map(Some),
    };
    if let Err(error) = &found {
        tracing::error!(%error, "confined runs are bounded by rlimits only");
    }
    prepared.push((setting.clone(), found.clone()));
    found
}

/// `auto`: move this process into `own/review-bot`, then make `own` the
/// runs' parent.
fn prepare_own(own: &Path) -> Result<RunCgroups, CgroupError> {
    let leaf = own.join(SERVICE_LEAF);
    let error = |directory: &Path, reason: String| CgroupError {
        directory: directory.to_owned(),
        reason,
    };
    if !leaf.is_dir() {
        std::fs::create_dir(&leaf).map_err(|source| {
            error(
                own,
                format!("cannot make the bot's leaf cgroup {SERVICE_LEAF}: {source}"),
            )
        })?;
    }
    // Every process of the cgroup is the service's (a delegated cgroup is
    // its own): all move, or the controllers cannot be given to the runs.
    let procs = std::fs::read_to_string(own.join("cgroup.procs"))
        .map_err(|source| error(own, format!("cannot read cgroup.procs: {source}")))?;
    for pid in procs.lines().map(str::trim).filter(|pid| !pid.is_empty()) {
        if let Err(source) = std::fs::write(leaf.join("cgroup.procs"), pid) {
            // One that exited meanwhile is gone anyway.
            if Path::new(&format!("/proc/{pid}")).exists() {
                return Err(error(
                    &leaf,
                    format!(
                        "cannot move the service's process {pid} into its leaf cgroup: {source}"
                    ),
                ));
            }
        }
    }
    prepare_directory(own)
}

/// A path (or `auto`'s own cgroup, once the bot left it): made if missing,
/// the controllers it offers enabled for its children, a child made and
/// removed to prove it, and the cgroups of runs a crash left removed
/// ([`remove_abandoned_runs`]).
fn prepare_directory(directory: &Path) -> Result<RunCgroups, CgroupError> {
    let error = |reason: String| CgroupError {
        directory: directory.to_owned(),
        reason,
    };
    if !directory.is_dir() {
        // Only in a cgroup v2 directory: never a stray directory elsewhere.
        let in_cgroup2 = directory
            .parent()
            .is_some_and(|parent| parent.join("cgroup.controllers").is_file());
        if !in_cgroup2 {
            return Err(error(
                "it does not exist, and its parent is no cgroup v2 directory (no \
                 cgroup.controllers); name a directory under the cgroup2 mount (see `mount -t \
                 cgroup2`), or set sandbox.cgroup = \"off\""
                    .to_owned(),
            ));
        }
        std::fs::create_dir(directory).map_err(|source| {
            error(format!(
                "cannot make it: {source}; make it under a cgroup v2 directory the bot may write \
                 (mount -t cgroup2 …, or systemd's Delegate=yes), or set sandbox.cgroup = \"off\""
            ))
        })?;
    }
    let read = |name: &str| {
        std::fs::read_to_string(directory.join(name)).map_err(|source| {
            error(format!(
                "cannot read {name}: {source}; it is not a cgroup v2 directory (cgroup v1 \
                 hierarchies are not used)"
            ))
        })
    };
    let offered = read("cgroup.controllers")?;
    for controller in CONTROLLERS {
        let enabled = read("cgroup.subtree_control")?;
        if enabled.split_whitespace().any(|name| name == *controller)
            || !offered.split_whitespace().any(|name| name == *controller)
        {
            continue;
        }
        std::fs::write(
            directory.join("cgroup.subtree_control"),
            format!("+{controller}"),
        )
        .map_err(|source| {
            error(format!(
                "cannot give the {controller} controller to its children: {source}; a cgroup \
                 with processes of its own cannot (cgroup v2's rule): make a directory for the \
                 runs that holds none"
            ))
        })?;
    }
    let enabled = read("cgroup.subtree_control")?;
    let controllers = CONTROLLERS
        .iter()
        .filter(|controller| enabled.split_whitespace().any(|name| name == **controller))
        .map(|controller| (*controller).to_owned())
        .collect();
    let probe = directory.join(format!("review-bot-probe-{}", std::process::id()));
    std::fs::create_dir(&probe)
        .and_then(|()| std::fs::remove_dir(&probe))
        .map_err(|source| {
            error(format!(
                "cannot make a child cgroup in it: {source}; delegate it to the bot's user"
            ))
        })?;
    remove_abandoned_runs(directory);
    Ok(RunCgroups {
        parent: directory.to_owned(),
        controllers,
    })
}

/// How old an empty run cgroup must be to count as left by a crash: a live
/// run's is entered microseconds after it is made.
pub const ABANDONED_AFTER: Duration = Duration::from_mins(1);

/// Remove the cgroups of runs a crash left: empty (removing one that holds
/// processes fails) and made more than [`ABANDONED_AFTER`] ago, so a run of
/// a replica sharing the directory, made a moment ago and about to be
/// entered, is left alone.
fn remove_abandoned_runs(directory: &Path) {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(RUN_PREFIX) {
            continue;
        }
        let old = entry
            .metadata()
            .and_then(|metadata| metadata.modified())
            .ok()
            .and_then(|made| made.elapsed().ok())
            .is_some_and(|age| age >= ABANDONED_AFTER);
        if old && std::fs::remove_dir(entry.path()).is_ok() {
            tracing::info!(cgroup = %entry.path().display(), "removed the cgroup of a run a crash left");
        }
    }
}

impl RunCgroups {
    /// Whether the runs' cgroups get `controller`.
    pub fn has(&self, controller: &str) -> bool {
        self.controllers.iter().any(|name| name == controller)
    }

    /// The bounds left to rlimits: those whose controller the runs' cgroups
    /// do not get.
    pub fn rlimits(&self, limits: &Limits) -> Limits {
        Limits {
            memory: if self.has("memory") {
                None
            } else {
                limits.memory
            },
            processes: if self.has("pids") {
                None
            } else {
                limits.processes
            },
            ..*limits
        }
    }

    /// The program and arguments that put a run in its cgroup with
    /// `limits`, to be followed by the command (an absolute path: the
    /// wrapper runs with the command's environment).
    pub fn wrapper_arguments(&self, limits: &Limits) -> Vec<OsString> {
        let mut arguments: Vec<OsString> = vec![
            "/bin/sh".into(),
            "-c".into(),
            WRAPPER_SCRIPT.into(),
            WRAPPER_NAME.into(),
            self.parent.clone().into(),
            run_name().into(),
        ];
        let mut file = |name: &str, value: String| {
            arguments.push(name.into());
            arguments.push(value.into());
        };
        if self.has("memory") {
            file("memory.max", limit_value(limits.memory));
            if limits.memory.is_some() {
                file("?memory.swap.max", "0".to_owned());
            }
            file("?memory.oom.group", "1".to_owned());
        }
        if self.has("pids") {
            file("pids.max", limit_value(limits.processes));
        }
        arguments.push("--".into());
        arguments
    }
}

/// A bound as a cgroup file takes it: the number, or `max`.
fn limit_value(limit: Option<u64>) -> String {
    limit.map_or_else(|| "max".to_owned(), |limit| limit.to_string())
}

/// A fresh run cgroup name: [`RUN_PREFIX`] and 64 random bits (from the
/// standard library's randomly seeded hasher: no dependency for it).
fn run_name() -> String {
    use std::hash::{BuildHasher as _, Hasher as _};
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    format!("{RUN_PREFIX}{:016x}", hasher.finish())
}

/// The cgroup a wrapped command makes and enters, read from the command's
/// arguments ([`RunCgroups::wrapper_arguments`]); `None` for a command that
/// is not wrapped.
pub(crate) fn run_cgroup_of(command: &std::process::Command) -> Option<RunCgroup> {
    let mut arguments = command.get_args();
    if command.get_program() != "/bin/sh"
        || arguments.next()? != "-c"
        || arguments.next()? != WRAPPER_SCRIPT
        || arguments.next()? != WRAPPER_NAME
    {
        return None;
    }
    let parent = Path::new(arguments.next()?);
    let name = arguments.next()?;
    Some(RunCgroup {
        directory: parent.join(name),
    })
}

/// One run's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunCgroup {
    /// Its directory.
    pub directory: PathBuf,
}

/// What a run hit in its cgroup, read when it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunUsage {
    /// The most memory it held at once (`memory.peak`), where the kernel
    /// says.
    pub peak_memory: Option<u64>,
    /// Processes the kernel killed for the memory bound
    /// (`memory.events`' `oom_kill`).
    pub memory_kills: u64,
    /// Times a process could not be started for the process bound
    /// (`pids.events`' `max`).
    pub process_limit_hits: u64,
}

impl RunUsage {
    /// What the run hit, in words (`None`: no bound).
    pub fn bound_hit(&self) -> Option<String> {
        let mut hits = Vec::new();
        if self.memory_kills > 0 {
            hits.push(format!(
                "its memory bound (the kernel killed it {} time{}: sandbox.memory_limit_mib)",
                self.memory_kills,
                if self.memory_kills == 1 { "" } else { "s" }
            ));
        }
        if self.process_limit_hits > 0 {
            hits.push(format!(
                "its process bound ({} process{} could not start: sandbox.process_limit)",
                self.process_limit_hits,
                if self.process_limit_hits == 1 {
                    ""
                } else {
                    "es"
                }
            ));
        }
        (!hits.is_empty()).then(|| hits.join(" and "))
    }
}

impl RunCgroup {
    /// `cgroup.kill`: every process in it gets `SIGKILL` (kernel 5.14 and
    /// later; the PID namespace holds them all anyway). Nothing when the
    /// cgroup is gone or was never made.
    pub fn kill(&self) {
        use std::io::Write as _;
        // Never created: a directory that is no cgroup gets no file.
        if let Ok(mut kill) = std::fs::OpenOptions::new()
            .write(true)
            .open(self.directory.join("cgroup.kill"))
        {
            let _ = kill.write_all(b"1");
        }
    }

    /// Kill what is left, wait (at most `bound`) until it is empty, read
    /// what the run hit and remove the cgroup. A cgroup never made (the
    /// wrapper failed first) is no error.
    pub async fn end(&self, bound: Duration) -> Result<RunUsage, CgroupError> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(ended) = self.try_end(deadline) {
                return ended;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }

    /// [`RunCgroup::end`] for `Drop`, where nothing can be awaited.
    pub fn end_blocking(&self, bound: Duration) -> Result<RunUsage, CgroupError> {
        let deadline = Instant::now() + bound;
        loop {
            if let Some(ended) = self.try_end(deadline) {
                return ended;
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// One attempt: `Some` once over (removed, never made, or `deadline`
    /// passed).
    fn try_end(&self, deadline: Instant) -> Option<Result<RunUsage, CgroupError>> {
        let events = match std::fs::read_to_string(self.directory.join("cgroup.events")) {
            Ok(events) => events,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Some(Ok(RunUsage::default()));
            }
            Err(error) => {
                return Some(Err(
                    self.error(format!("cannot read cgroup.events: {error}"))
                ));
            }
        };
        let populated = field(&events, "populated").unwrap_or(0) != 0;
        if populated {
            self.kill();
            return (Instant::now() >= deadline).then(|| {
                Err(self.error(
                    "processes were still in it after the run was killed; it is left in place \
                     and removed at the next start once empty"
                        .to_owned(),
                ))
            });
        }
        let usage = self.usage();
        match std::fs::remove_dir(&self.directory) {
            Ok(()) => Some(Ok(usage)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Some(Ok(usage)),
            Err(error) if Instant::now() >= deadline => {
                Some(Err(self.error(format!("cannot remove it: {error}"))))
            }
            Err(_) => None,
        }
    }

    /// What the run hit, from its cgroup's files (absent ones: nothing).
    fn usage(&self) -> RunUsage {
        let read =
            |name: &str| std::fs::read_to_string(self.directory.join(name)).unwrap_or_default();
        RunUsage {
            peak_memory: read("memory.peak").trim().parse().ok(),
            memory_kills: field(&read("memory.events"), "oom_kill").unwrap_or(0),
            process_limit_hits: field(&read("pids.events"), "max").unwrap_or(0),
        }
    }

    fn error(&self, reason: String) -> CgroupError {
        CgroupError {
            directory: self.directory.clone(),
            reason,
        }
    }
}

/// A `name value` line's value in a cgroup's flat-keyed file.
fn field(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok())?
    })
}

/// Which bounds confined runs get under `setting` with `limits`, in one
/// line (`review-bot doctor`'s "resource bounds"); the error when an
/// explicit directory cannot be used.
pub fn describe(setting: &CgroupSetting, limits: &Limits) -> Result<String, CgroupError> {
    let mib = |bytes: u64| format!("{} MiB", bytes >> 20);
    let rlimit_memory = limits
        .memory
        .map(|memory| format!("memory {} per process (rlimit)", mib(memory)));
    let rlimit_processes = limits
        .processes
        .map(|processes| format!("{processes} processes of the user (rlimit)"));
    let file_size = limits
        .file_size
        .map(|size| format!("files {} (rlimit)", mib(size)));
    let tmp = limits.tmp_size.map(|size| format!("/tmp {}", mib(size)));
    let join = |parts: Vec<Option<String>>| {
        let parts: Vec<String> = parts.into_iter().flatten().collect();
        if parts.is_empty() {
            "no bound".to_owned()
        } else {
            parts.join(", ")
        }
    };
    let Some(cgroups) = prepare(setting)? else {
        let why = match setting {
            CgroupSetting::Off => "sandbox.cgroup = \"off\"".to_owned(),
            _ => format!("no delegated cgroup v2: {}", unavailable_reason()),
        };
        return Ok(format!(
            "rlimits ({why}): {}",
            join(vec![rlimit_memory, rlimit_processes, file_size, tmp])
        ));
    };
    let memory = if cgroups.has("memory") {
        limits
            .memory
            .map(|memory| format!("memory {} per run (memory.max)", mib(memory)))
    } else {
        rlimit_memory.map(|text| format!("{text}, no memory controller"))
    };
    let processes = if cgroups.has("pids") {
        limits
            .processes
            .map(|processes| format!("{processes} processes per run (pids.max)"))
    } else {
        rlimit_processes.map(|text| format!("{text}, no pids controller"))
    };
    Ok(format!(
        "cgroup v2 (each run in a child cgroup of {}): {}",
        cgroups.parent.display(),
        join(vec![memory, processes, file_size, tmp])
    ))
}

/// Why `auto` finds no delegated cgroup here.
fn unavailable_reason() -> String {
    match detect() {
        CgroupSupport::Unavailable { reason } => reason,
        CgroupSupport::Delegated { directory } => {
            format!("{} was delegated when looked at again", directory.display())
        }
    }
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
    fn a_directory_that_is_no_cgroup_or_not_marked_delegated_is_not_taken() {
        let root = tempfile::tempdir().unwrap();
        let directory = root.path();
        let support = check_directory(directory);
        assert!(
            support.to_string().contains("cgroup.controllers"),
            "{support}"
        );
        std::fs::write(directory.join("cgroup.controllers"), "cpu memory pids\n").unwrap();
        std::fs::write(directory.join("cgroup.subtree_control"), "").unwrap();
        // Root owns every cgroup: only the manager's mark says delegated.
        if rustix::process::geteuid().is_root() {
            let support = check_directory(directory);
            assert!(support.to_string().contains("Delegate=yes"), "{support}");
        }
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

    #[test]
    fn the_setting_is_auto_off_or_an_absolute_path_and_says_what_else_it_takes() {
        assert_eq!("auto".parse(), Ok(CgroupSetting::Auto));
        assert_eq!("off".parse(), Ok(CgroupSetting::Off));
        assert_eq!(
            "/sys/fs/cgroup/runs".parse(),
            Ok(CgroupSetting::Directory(PathBuf::from(
                "/sys/fs/cgroup/runs"
            )))
        );
        let error = "runs".parse::<CgroupSetting>().unwrap_err();
        assert!(error.contains("absolute path"), "{error}");
        assert_eq!(CgroupSetting::Off.to_string(), "off");
    }

    #[test]
    fn the_bounds_a_cgroup_takes_are_not_rlimits_too_and_the_wrapper_writes_them() {
        let limits = Limits {
            tmp_size: Some(1 << 20),
            memory: Some(64 << 20),
            processes: Some(16),
            file_size: Some(2 << 20),
        };
        let both = RunCgroups {
            parent: PathBuf::from("/sys/fs/cgroup/runs"),
            controllers: vec!["memory".to_owned(), "pids".to_owned()],
        };
        assert_eq!(
            both.rlimits(&limits),
            Limits {
                memory: None,
                processes: None,
                ..limits
            }
        );
        let arguments: Vec<String> = both
            .wrapper_arguments(&limits)
            .into_iter()
            .map(|argument| argument.into_string().unwrap())
            .collect();
        assert!(arguments[5].starts_with(RUN_PREFIX), "{arguments:?}");
        assert_eq!(arguments[5].len(), RUN_PREFIX.len() + 16);
        assert_ne!(
            both.wrapper_arguments(&limits)[5],
            OsString::from(&arguments[5]),
            "every run gets a name of its own"
        );
        let pairs = &arguments[6..arguments.len() - 1];
        assert_eq!(
            pairs,
            [
                "memory.max",
                "67108864",
                "?memory.swap.max",
                "0",
                "?memory.oom.group",
                "1",
                "pids.max",
                "16"
            ]
        );
        assert_eq!(arguments.last().map(String::as_str), Some("--"));
        // A command made so is found to make a run cgroup named by its
        // first process.
        let mut command = std::process::Command::new(&arguments[0]);
        command.args(&arguments[1..]).arg("/usr/bin/bwrap");
        assert_eq!(
            run_cgroup_of(&command),
            Some(RunCgroup {
                directory: PathBuf::from("/sys/fs/cgroup/runs").join(&arguments[5])
            })
        );
        assert_eq!(run_cgroup_of(&std::process::Command::new("/bin/sh")), None);

        // Without the controllers, the bounds stay rlimits and the wrapper
        // only makes and enters the cgroup; no bound is `max`.
        let neither = RunCgroups {
            controllers: Vec::new(),
            ..both.clone()
        };
        assert_eq!(neither.rlimits(&limits), limits);
        assert_eq!(neither.wrapper_arguments(&limits).len(), 7);
        let unbounded = both.wrapper_arguments(&Limits::NONE);
        assert!(unbounded.contains(&OsString::from("max")));
        assert!(!unbounded.contains(&OsString::from("?memory.swap.max")));
    }

    #[test]
    fn what_a_run_hit_is_read_from_the_kernels_flat_files_and_told() {
        let events = "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 1\n";
        assert_eq!(field(events, "oom_kill"), Some(1));
        assert_eq!(field(events, "max"), Some(12));
        assert_eq!(field(events, "nothing"), None);
        assert_eq!(field("max not-a-number\n", "max"), None);
        assert_eq!(RunUsage::default().bound_hit(), None);
        let usage = RunUsage {
            peak_memory: Some(1 << 30),
            memory_kills: 1,
            process_limit_hits: 3,
        };
        let told = usage.bound_hit().unwrap();
        assert!(told.contains("killed it 1 time:"), "{told}");
        assert!(told.contains("3 processes could not start"), "{told}");
    }

    #[test]
    fn the_root_cgroup_is_not_taken_for_a_delegated_one() {
        let mountinfo = "26 30 0:23 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n";
        let support = detect_from("0::/\n", mountinfo);
        assert!(
            support.to_string().contains("root cgroup of the hierarchy"),
            "{support}"
        );
        assert!(
            support
                .to_string()
                .contains("/sys/fs/cgroup/review-bot-runs"),
            "{support}"
        );
    }
}
