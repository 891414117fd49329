//! What confinement costs: 20 starts of a build command (`sh -c true` in a
//! git worktree) and of the agent CLI (`claude --version`), each held in a PID
//! namespace only, confined without resource bounds (as before issue 26),
//! and confined with the default bounds (`prlimit` in front of bubblewrap, a
//! sized `/tmp`), through the crate's own API (the confined runs include
//! computing the mounts: canonical paths, credential masks); and the agent
//! start with its run directory read-only and a scratch directory made and
//! removed per start (issue 26, round two); and each of those bounded starts
//! in a cgroup v2 of its own (the `sh` wrapper, `mkdir`, the bound files,
//! `cgroup.kill` and `rmdir` at the end), where this process may make one
//! under the cgroup2 mount.
//!
//! `cargo bench -p review-sandbox --bench confinement`

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use std::sync::OnceLock;

use review_sandbox::cgroups::{CgroupSetting, RunCgroups};
use review_sandbox::{Confinement, Contained, Containment, Limits, toolchain_directories};

/// The parent of the runs' cgroups, when one could be made.
static CGROUPS: OnceLock<Option<RunCgroups>> = OnceLock::new();

const RUNS: usize = 20;

/// How a command is started.
#[derive(Clone, Copy)]
enum Mode {
    /// In a PID namespace only.
    Namespace,
    /// Confined, without resource bounds.
    Unbounded,
    /// Confined, with the default bounds.
    Bounded,
    /// Confined, with the default bounds, in a cgroup of its own.
    Cgroup,
}

impl Mode {
    const ALL: [Self; 4] = [
        Self::Namespace,
        Self::Unbounded,
        Self::Bounded,
        Self::Cgroup,
    ];

    const fn name(self) -> &'static str {
        match self {
            Self::Namespace => "PID namespace only",
            Self::Unbounded => "confined, no bounds",
            Self::Bounded => "confined, bounded",
            Self::Cgroup => "bounded, own cgroup",
        }
    }

    fn limits(self) -> Limits {
        match self {
            Self::Bounded | Self::Cgroup => Limits::DEFAULT,
            Self::Namespace | Self::Unbounded => Limits::NONE,
        }
    }

    /// The confinement for this mode.
    fn confine(self, confinement: &Confinement) -> Confinement {
        let confinement = confinement.clone().with_limits(self.limits());
        match self {
            Self::Cgroup => confinement.with_cgroup(CGROUPS.get().cloned().flatten()),
            _ => confinement,
        }
    }
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let cgroup_parent = prepare_cgroups();
    let root = tempfile::tempdir().expect("a directory");
    let worktree = root.path().join("worktree");
    let run = root.path().join("run");
    std::fs::create_dir_all(&run).expect("run directory");
    let status = std::process::Command::new("git")
        .args(["init", "--quiet"])
        .arg(&worktree)
        .status()
        .expect("git");
    assert!(status.success());
    let confinement = Confinement::new()
        .with_readable_paths(toolchain_directories())
        .with_git_worktree(&worktree)
        .expect("a worktree")
        .with_writable(&run);

    let containment = Containment::default();
    let sh = |mode: Mode| {
        let mut command = match mode {
            Mode::Namespace => containment.command("sh"),
            Mode::Unbounded | Mode::Bounded | Mode::Cgroup => containment
                .confined_command("sh", &mode.confine(&confinement))
                .expect("confined"),
        };
        command.arg("-c").arg("true");
        command
    };
    report(
        "build command `sh -c true`",
        &runtime,
        &containment,
        &worktree,
        &Mode::ALL,
        sh,
    );

    let Ok(claude) = review_testkit::tools::claude_binary() else {
        eprintln!("the pinned Claude Code CLI is not installed; run scripts/install-test-deps");
        return;
    };
    let agent_confinement = confinement
        .clone()
        .with_readable(review_testkit::tools::tools_dir().join("claude-code"))
        .with_readable(&claude);
    let cli = |mode: Mode| {
        let mut command = match mode {
            Mode::Namespace => containment.command(&claude),
            Mode::Unbounded | Mode::Bounded | Mode::Cgroup => containment
                .confined_command(&claude, &mode.confine(&agent_confinement))
                .expect("confined"),
        };
        command.arg("--version").env("HOME", &run);
        command
    };
    report(
        "agent start `claude --version`",
        &runtime,
        &containment,
        &worktree,
        &Mode::ALL,
        cli,
    );

    // Issue 26, round two: the run directory read-only, and a scratch
    // directory beside it (`home/`, `tmp/`) made anew before each start and
    // removed after (here: before the next), the only writable path of the
    // run's own.
    let scratch = root.path().join("run.scratch");
    let scratch_confinement = Confinement::new()
        .with_readable_paths(toolchain_directories())
        .with_git_worktree(&worktree)
        .expect("a worktree")
        .with_readable(&run)
        .with_readable(review_testkit::tools::tools_dir().join("claude-code"))
        .with_readable(&claude);
    let cli_with_scratch = |mode: Mode| {
        if scratch.exists() {
            std::fs::remove_dir_all(&scratch).expect("scratch removed");
        }
        for directory in ["home", "tmp"] {
            std::fs::create_dir_all(scratch.join(directory)).expect("scratch made");
        }
        let confinement = mode.confine(&scratch_confinement.clone().with_writable(&scratch));
        let mut command = containment
            .confined_command(&claude, &confinement)
            .expect("confined");
        command
            .arg("--version")
            .env("HOME", scratch.join("home"))
            .env("TMPDIR", scratch.join("tmp"));
        command
    };
    report(
        "agent start, scratch directory",
        &runtime,
        &containment,
        &worktree,
        &[Mode::Unbounded, Mode::Bounded, Mode::Cgroup],
        cli_with_scratch,
    );
    if let Some(parent) = cgroup_parent {
        let _ = std::fs::remove_dir(parent);
    }
}

/// Make a parent for the runs' cgroups under the cgroup2 mount, when this
/// process may, and keep it in [`CGROUPS`]; its path, to remove at the end.
fn prepare_cgroups() -> Option<std::path::PathBuf> {
    let parent = review_sandbox::cgroups::cgroup2_mount_point()
        .map(|mount| mount.join(format!("review-bot-bench-{}", std::process::id())));
    let cgroups = parent.as_ref().and_then(|parent| {
        review_sandbox::cgroups::prepare(&CgroupSetting::Directory(parent.clone()))
            .inspect_err(|error| println!("no run cgroups here: {error}"))
            .ok()
            .flatten()
    });
    if let Some(cgroups) = &cgroups {
        println!(
            "run cgroups under {} (controllers given: {})",
            cgroups.parent.display(),
            if cgroups.controllers.is_empty() {
                "none".to_owned()
            } else {
                cgroups.controllers.join(", ")
            }
        );
    }
    CGROUPS.set(cgroups).expect("set once");
    parent
}

fn report(
    what: &str,
    runtime: &tokio::runtime::Runtime,
    containment: &Containment,
    directory: &Path,
    modes: &[Mode],
    make: impl Fn(Mode) -> tokio::process::Command,
) {
    for &mode in modes {
        if matches!(mode, Mode::Cgroup) && CGROUPS.get().is_none_or(Option::is_none) {
            continue;
        }
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let started = Instant::now();
                let mut command = make(mode);
                command
                    .current_dir(directory)
                    .stdin(Stdio::null())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null());
                runtime.block_on(async {
                    let mut run =
                        Contained::spawn(containment, "bench", &mut command).expect("started");
                    run.leader_exited().await;
                    let status = run.finish().await.expect("finished");
                    assert!(status.success(), "{what} ({}) failed", mode.name());
                });
                started.elapsed()
            })
            .collect();
        times.sort();
        let mean = times.iter().sum::<Duration>() / u32::try_from(RUNS).expect("small");
        println!(
            "{what:32} {:>18}: median {:>7.1} ms, mean {:>7.1} ms, min {:>7.1} ms, max {:>7.1} ms ({RUNS} runs)",
            mode.name(),
            ms(times[RUNS / 2]),
            ms(mean),
            ms(times[0]),
            ms(times[RUNS - 1]),
        );
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
