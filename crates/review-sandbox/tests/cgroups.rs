//! Confined runs in cgroups of their own, on the machine's real cgroup2 file
//! system: each run is put in `PARENT/review-bot-run-PID` before anything of
//! it starts, everything it starts is in there, and the cgroup is emptied and
//! removed when the run ends, however it ends; a parent the wrapper cannot
//! use is the operator's error, never the run's failure; where the kernel
//! gives the `pids` or `memory` controller to the parent, the bounds hold
//! for the run as a whole.
//!
//! The parent is a fresh directory under the cgroup2 mount. A machine where
//! this process may not make one (no cgroup2 mounted, or not root nor
//! delegated) cannot run these tests; each says so on standard error.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use review_sandbox::cgroups::{self, CgroupSetting, RunCgroups};
use review_sandbox::{Confinement, Contained, Containment, Limits, SandboxError};
use review_testkit::cgroups::TestCgroup;
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _};

/// A directory for one test's runs under the cgroup2 mount
/// ([`TestCgroup`]: removed, with whatever runs it still holds, when
/// dropped).
struct Parent {
    directory: PathBuf,
    _cgroup: TestCgroup,
}

impl Parent {
    /// `None` (and why, on standard error) where no cgroup can be made.
    fn new() -> Option<Self> {
        let cgroup = TestCgroup::new(cgroups::cgroup2_mount_point(), "sandbox")?;
        Some(Self {
            directory: cgroup.path().to_owned(),
            _cgroup: cgroup,
        })
    }

    /// The runs' cgroups under it, as the bot prepares them.
    fn run_cgroups(&self) -> RunCgroups {
        cgroups::prepare(&CgroupSetting::Directory(self.directory.clone()))
            .expect("the test's parent cgroup is usable")
            .expect("a directory setting gives run cgroups")
    }

    /// [`Parent::run_cgroups`] when they get `controller`; `None`, saying
    /// so, where the kernel does not offer it here.
    fn run_cgroups_with(&self, controller: &str) -> Option<RunCgroups> {
        let cgroups = self.run_cgroups();
        if cgroups.has(controller) {
            return Some(cgroups);
        }
        eprintln!(
            "the {controller} controller is not offered to {} (bound to a cgroup v1 \
             hierarchy?): its bound stays an rlimit here",
            self.directory.display()
        );
        None
    }

    /// The runs' cgroups in it now.
    fn runs(&self) -> Vec<PathBuf> {
        let mut runs: Vec<PathBuf> = std::fs::read_dir(&self.directory)
            .unwrap()
            .flatten()
            .filter(|entry| {
                entry
                    .file_name()
                    .to_string_lossy()
                    .starts_with(cgroups::RUN_PREFIX)
            })
            .map(|entry| entry.path())
            .collect();
        runs.sort();
        runs
    }
}

/// The process ids in a cgroup.
fn members(cgroup: &Path) -> Vec<u32> {
    std::fs::read_to_string(cgroup.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Start `script` confined in `confinement` with piped streams.
fn start(confinement: &Confinement, script: &str) -> Contained {
    let containment = Containment::default();
    let mut command = containment.confined_command("sh", confinement).unwrap();
    command
        .args(["-c", script])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let run = Contained::spawn(&containment, "sh", &mut command).unwrap();
    drop(command);
    run
}

/// Read the run's standard output to its end, and its standard error.
async fn outputs(run: &mut Contained) -> (String, String) {
    let mut stdout = run.child_mut().stdout.take().unwrap();
    let mut stderr = run.child_mut().stderr.take().unwrap();
    let (mut out, mut err) = (String::new(), String::new());
    let _ = tokio::join!(
        stdout.read_to_string(&mut out),
        stderr.read_to_string(&mut err)
    );
    (out, err)
}

#[tokio::test]
async fn a_run_and_everything_it_starts_are_in_its_own_cgroup_which_is_gone_when_it_ends() {
    let Some(parent) = Parent::new() else { return };
    let confinement = Confinement::new().with_cgroup(Some(parent.run_cgroups()));
    // The run starts a process that leaves its session, says so, then
    // waits for a line from us.
    let mut run = start(
        &confinement,
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo started; read line",
    );
    let mut stdout = tokio::io::BufReader::new(run.child_mut().stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).await.unwrap();
    assert_eq!(line, "started\n");

    let runs = parent.runs();
    assert_eq!(runs.len(), 1, "one cgroup for the run: {runs:?}");
    let inside = members(&runs[0]);
    assert!(
        inside.contains(&run.id()),
        "the leader is in it: {inside:?}"
    );
    // bubblewrap, its init in the namespace, the shell and the sleep.
    assert!(
        inside.len() >= 4,
        "everything the run started is in it: {inside:?}"
    );
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    for pid in &inside {
        assert_ne!(
            std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default(),
            own,
            "pid {pid} is not in the bot's own cgroup"
        );
    }

    run.child_mut()
        .stdin
        .take()
        .unwrap()
        .write_all(b"go\n")
        .await
        .unwrap();
    run.leader_exited().await;
    let status = run.finish().await.unwrap();
    assert!(status.success(), "{status}");
    assert!(
        parent.runs().is_empty(),
        "the cgroup is removed: {:?}",
        parent.runs()
    );
    for pid in inside {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists()
                || std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .is_ok_and(|stat| stat.contains(") Z ")),
            "pid {pid} of the run is gone"
        );
    }
    assert_eq!(
        run.usage().map(|usage| usage.bound_hit()),
        Some(None),
        "nothing was hit"
    );
}

#[tokio::test]
async fn a_run_killed_before_it_ends_leaves_no_cgroup() {
    let Some(parent) = Parent::new() else { return };
    let confinement = Confinement::new().with_cgroup(Some(parent.run_cgroups()));
    let mut run = start(&confinement, "sleep 1000 & sleep 1000 & echo started; wait");
    let mut stdout = tokio::io::BufReader::new(run.child_mut().stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).await.unwrap();
    assert_eq!(line, "started\n");
    assert_eq!(parent.runs().len(), 1);
    // A timeout: the run is killed while everything still runs.
    run.kill();
    run.finish().await.unwrap();
    assert!(parent.runs().is_empty(), "{:?}", parent.runs());

    // And a run dropped unfinished (a cancelled job).
    let run = start(&confinement, "sleep 1000 & echo started; wait");
    let mut run = run;
    let mut stdout = tokio::io::BufReader::new(run.child_mut().stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).await.unwrap();
    assert_eq!(parent.runs().len(), 1);
    drop(run);
    assert!(parent.runs().is_empty(), "{:?}", parent.runs());
}

#[tokio::test]
async fn a_parent_the_wrapper_cannot_use_is_the_operators_error_and_nothing_of_the_run_starts() {
    let Some(parent) = Parent::new() else { return };
    let marker = tempfile::tempdir().unwrap();
    let script = format!("touch {}/ran", marker.path().display());
    let confinement_in = |parent: PathBuf| {
        Confinement::new()
            .with_writable(marker.path())
            .with_cgroup(Some(RunCgroups {
                parent,
                controllers: Vec::new(),
            }))
    };
    // A directory that is no cgroup (a mistyped path, a plain directory),
    // then a cgroup removed since it was prepared.
    let plain = tempfile::tempdir().unwrap();
    let removed = parent.directory.join("gone");
    for (parent_directory, expected) in [
        (plain.path().to_owned(), "is not a cgroup v2 directory"),
        (removed, "cannot make the run's cgroup"),
    ] {
        let mut run = start(&confinement_in(parent_directory.clone()), &script);
        let (_, stderr) = outputs(&mut run).await;
        let status = run.finish().await.unwrap();
        assert!(!status.success());
        let error = run
            .failure(&stderr)
            .expect("the wrapper failed, not the run");
        assert!(matches!(error, SandboxError::Cgroup { .. }), "{error}");
        let message = error.to_string();
        assert!(message.contains(expected), "{message}");
        assert!(message.contains("sandbox.cgroup"), "{message}");
        assert!(!marker.path().join("ran").exists(), "the run never started");
    }
    // What a run prints is never taken for the wrapper's complaint.
    let confinement = Confinement::new().with_cgroup(Some(parent.run_cgroups()));
    let mut run = start(
        &confinement,
        &format!("echo '{}forged' >&2; exit 125", cgroups::WRAPPER_FAILURE),
    );
    let (_, stderr) = outputs(&mut run).await;
    let status = run.finish().await.unwrap();
    assert_eq!(status.code(), Some(125));
    assert!(run.failure(&stderr).is_none(), "the run's own failure");
}

#[tokio::test]
async fn the_cgroups_of_runs_a_crash_left_are_removed_when_the_runs_are_prepared() {
    let Some(parent) = Parent::new() else { return };
    // A crash's leftover: empty, made long ago (a cgroup's time can be set).
    let abandoned = parent
        .directory
        .join(format!("{}00000000deadbeef", cgroups::RUN_PREFIX));
    std::fs::create_dir(&abandoned).unwrap();
    let made = std::time::SystemTime::now() - 2 * cgroups::ABANDONED_AFTER;
    std::fs::File::open(&abandoned)
        .unwrap()
        .set_modified(made)
        .unwrap();
    // A replica's run made a moment ago, about to be entered.
    let fresh = parent
        .directory
        .join(format!("{}00000000feedface", cgroups::RUN_PREFIX));
    std::fs::create_dir(&fresh).unwrap();
    // A run of a replica that is running: old, but holding a process.
    let busy = parent
        .directory
        .join(format!("{}00000000cafebabe", cgroups::RUN_PREFIX));
    std::fs::create_dir(&busy).unwrap();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("1000")
        .spawn()
        .unwrap();
    std::fs::write(busy.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    std::fs::File::open(&busy)
        .unwrap()
        .set_modified(made)
        .unwrap();

    parent.run_cgroups();
    assert!(!abandoned.exists(), "a crash's leftover is removed");
    assert!(fresh.exists(), "a run made a moment ago is kept");
    assert!(busy.exists(), "a run holding processes is kept");
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();
}

/// Where the parent gets the `pids` controller: the process bound holds for
/// the whole run, and what it hit is told.
#[tokio::test]
async fn the_process_bound_holds_for_the_whole_run_where_the_pids_controller_is_given() {
    let Some(parent) = Parent::new() else { return };
    let Some(cgroups) = parent.run_cgroups_with("pids") else {
        return;
    };
    let limits = Limits {
        processes: Some(16),
        ..Limits::DEFAULT
    };
    let confinement = Confinement::new()
        .with_limits(limits)
        .with_cgroup(Some(cgroups.clone()));
    assert_eq!(
        cgroups.rlimits(&limits).processes,
        None,
        "not an rlimit too"
    );
    // A shell dies when it cannot fork; Python says how many it could.
    let mut run = start(
        &confinement,
        "exec python3 -c 'import os, time\n\
         started = 0\n\
         for _ in range(40):\n\
         \x20   try:\n\
         \x20       if os.fork() == 0:\n\
         \x20           time.sleep(1000)\n\
         \x20       started += 1\n\
         \x20   except OSError:\n\
         \x20       break\n\
         print(started, flush=True)'",
    );
    let (stdout, _) = outputs(&mut run).await;
    run.finish().await.unwrap();
    let started: u32 = stdout.trim().parse().expect("python printed a count");
    assert!(
        (1..16).contains(&started),
        "fewer than 16 processes in the run: {stdout}"
    );
    let usage = run.usage().expect("read from the cgroup");
    assert!(usage.process_limit_hits > 0, "{usage:?}");
    assert!(
        usage.bound_hit().unwrap().contains("sandbox.process_limit"),
        "{usage:?}"
    );
}

/// Where the parent gets the `memory` controller: the memory bound holds
/// for the whole run (two processes of 40 MiB each against 64 MiB), the
/// kernel kills the run, and that is told.
#[tokio::test]
async fn the_memory_bound_holds_for_the_whole_run_where_the_memory_controller_is_given() {
    let Some(parent) = Parent::new() else { return };
    let Some(cgroups) = parent.run_cgroups_with("memory") else {
        return;
    };
    let limits = Limits {
        memory: Some(64 << 20),
        tmp_size: Some(256 << 20),
        ..Limits::DEFAULT
    };
    let confinement = Confinement::new()
        .with_limits(limits)
        .with_cgroup(Some(cgroups));
    // tmpfs pages count against the run's memory.
    let mut run = start(
        &confinement,
        "head -c 41943040 /dev/zero > /tmp/a; head -c 41943040 /dev/zero > /tmp/b; echo survived",
    );
    let (stdout, _) = outputs(&mut run).await;
    run.finish().await.unwrap();
    assert!(!stdout.contains("survived"), "{stdout}");
    let usage = run.usage().expect("read from the cgroup");
    assert!(usage.memory_kills > 0, "{usage:?}");
}

/// Puts this test's process back in the hierarchy's root cgroup, passed or
/// not (before the test's cgroup, declared first, is removed).
struct MovedIntoCgroup {
    mount: PathBuf,
}

impl Drop for MovedIntoCgroup {
    fn drop(&mut self) {
        let _ = std::fs::write(
            self.mount.join("cgroup.procs"),
            std::process::id().to_string(),
        );
    }
}

/// `auto`, as under systemd's `Delegate=yes`: this test's process is moved
/// into a cgroup of its own; unmarked (root owns every cgroup), it is not
/// taken; marked `trusted.delegate` as systemd marks it, the bot moves
/// itself into the `review-bot` leaf and its runs get cgroups beside it.
#[tokio::test]
async fn auto_takes_the_services_own_cgroup_only_when_it_is_marked_delegated() {
    let Some(parent) = Parent::new() else { return };
    let mount = cgroups::cgroup2_mount_point().unwrap();
    let own = parent.directory.clone();
    let _moved = MovedIntoCgroup {
        mount: mount.clone(),
    };
    std::fs::write(own.join("cgroup.procs"), std::process::id().to_string()).unwrap();
    let relative = own.strip_prefix(&mount).unwrap();
    assert_eq!(
        std::fs::read_to_string("/proc/self/cgroup")
            .unwrap()
            .lines()
            .find_map(|line| line.strip_prefix("0::"))
            .map(str::to_owned),
        Some(format!("/{}", relative.display()))
    );

    if !rustix::process::geteuid().is_root() {
        eprintln!("only root may set trusted.delegate: cannot test auto here");
        return;
    }
    let support = cgroups::detect();
    assert!(
        support
            .to_string()
            .contains("not delegated to this service"),
        "{support}"
    );
    rustix::fs::setxattr(
        &own,
        "trusted.delegate",
        b"1",
        rustix::fs::XattrFlags::empty(),
    )
    .unwrap();
    assert_eq!(
        cgroups::detect(),
        cgroups::CgroupSupport::Delegated {
            directory: own.clone()
        }
    );

    let run_cgroups = cgroups::prepare(&CgroupSetting::Auto)
        .unwrap()
        .expect("a delegated cgroup");
    assert_eq!(run_cgroups.parent, own);
    let leaf = own.join(cgroups::SERVICE_LEAF);
    assert!(
        members(&leaf).contains(&std::process::id()),
        "the bot moved into its leaf"
    );
    assert!(
        members(&own).is_empty(),
        "the runs' parent holds no process"
    );

    let confinement = Confinement::new().with_cgroup(Some(run_cgroups));
    let mut run = start(&confinement, "echo started; read line");
    let mut stdout = tokio::io::BufReader::new(run.child_mut().stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).await.unwrap();
    let run_cgroup = std::fs::read_dir(&own)
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .find(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(cgroups::RUN_PREFIX))
        })
        .expect("the run's cgroup");
    assert!(members(&run_cgroup).contains(&run.id()), "beside the leaf");
    run.kill();
    run.finish().await.unwrap();
    assert!(!run_cgroup.exists());
}

#[test]
fn a_directory_outside_the_cgroup2_file_system_is_refused_and_not_made() {
    let plain = tempfile::tempdir().unwrap();
    let wanted = plain.path().join("runs");
    let error = cgroups::prepare(&CgroupSetting::Directory(wanted.clone())).unwrap_err();
    assert!(
        error.to_string().contains("no cgroup v2 directory"),
        "{error}"
    );
    assert!(error.to_string().contains("sandbox.cgroup"), "{error}");
    assert!(
        !wanted.exists(),
        "nothing is made outside a cgroup2 file system"
    );
    // An existing directory that is no cgroup: said, not used.
    let error = cgroups::prepare(&CgroupSetting::Directory(plain.path().to_owned())).unwrap_err();
    assert!(
        error.to_string().contains("not a cgroup v2 directory"),
        "{error}"
    );
}
