//! Real projects through the confined build gate with this machine's
//! toolchains (issue 24 item 3): a real Rust crate (walkdir) built and tested
//! with the service user's rustup, a real Python project (tomli) through a
//! venv with pyenv's python; each repository's second build uses its
//! dependency caches (cargo downloads nothing again; pip too when the index
//! allows caching), another repository does not see them, and the real
//! home's other files stay out of reach; a real Node project (is-number)
//! installs its test runner with npm and passes its mocha tests, its second
//! install from the repository's npm cache. Where this process may make a
//! cgroup under the cgroup2 mount, every build runs in a cgroup of its own
//! (`sandbox.cgroup`), and none is left after it. Builds download from
//! crates.io, `PyPI` and the npm registry. Also [`build_gate::probe`]: a found
//! program, a missing one, one that does not start.
//!
//! The wall time of each build is printed (`-- --nocapture`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use review_core::build_commands::{DiscoveredCommands, Source};
use review_pipeline::build_gate::{
    self, BuildGateSettings, CommandEnd, DEFAULT_TIMEOUT, GateOutcome, ProbeOutcome,
};
use review_sandbox::Confinement;
use review_testkit::cgroups::TestCgroup;
use tempfile::TempDir;

/// The fixtures (see `tests/fixtures/SOURCES.md`).
fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A bot's work directory for the test: `caches/` and a run directory per
/// job; and, where one can be made, a cgroup for the builds' own cgroups.
struct Work {
    root: TempDir,
    cgroup: Option<TestCgroup>,
}

impl Work {
    fn new() -> Self {
        Self {
            root: tempfile::tempdir().unwrap(),
            cgroup: TestCgroup::new(review_sandbox::cgroups::cgroup2_mount_point(), "toolchains"),
        }
    }

    fn caches(&self) -> PathBuf {
        self.root.path().join("caches")
    }

    /// Confined, with the network (for the registries), caches on.
    fn settings(&self) -> BuildGateSettings {
        let cgroups = self.cgroup.as_ref().map(|cgroup| {
            review_sandbox::cgroups::prepare(&review_sandbox::cgroups::CgroupSetting::Directory(
                cgroup.path().to_owned(),
            ))
            .unwrap()
            .unwrap()
        });
        BuildGateSettings::new(DEFAULT_TIMEOUT)
            .with_confinement(Confinement::new().with_network(true).with_cgroup(cgroups))
            .with_caches(self.caches())
    }

    /// A job of `repository`: a fresh git checkout of `project`'s files,
    /// the commands run through the gate; the outcome, the logs joined, and
    /// how long it took.
    async fn build(
        &self,
        repository: &str,
        job: &str,
        project: &Path,
        commands: &[&str],
    ) -> (GateOutcome, String, Duration) {
        let worktree = self.root.path().join("worktrees").join(job);
        copy_tree(project, &worktree);
        git(&worktree, &["init", "--quiet", "--initial-branch=main"]);
        git(&worktree, &["add", "."]);
        git(
            &worktree,
            &[
                "-c",
                "user.name=Fixture",
                "-c",
                "user.email=fixture@example.com",
                "commit",
                "--quiet",
                "-m",
                "the real project",
            ],
        );
        let run = self.root.path().join("runs").join(job);
        let commands = DiscoveredCommands {
            setup: Vec::new(),
            build: commands.iter().map(|&command| command.to_owned()).collect(),
            test: Vec::new(),
            environment: std::collections::BTreeMap::new(),
            source: Source::Operator,
        };
        let settings = self.settings().for_repository(repository);
        let started = Instant::now();
        let outcome = build_gate::run_commands(&settings, &worktree, &run, &commands)
            .await
            .unwrap();
        let elapsed = started.elapsed();
        if let Some(cgroup) = &self.cgroup {
            assert_eq!(
                cgroup.children(),
                Vec::<PathBuf>::new(),
                "no build's cgroup is left"
            );
        }
        let mut logs = String::new();
        for index in 1..=commands.build.len() {
            let log = run.join(format!("build/{index:02}.log"));
            logs.push_str(&std::fs::read_to_string(log).unwrap_or_default());
        }
        (outcome, logs, elapsed)
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn git(directory: &Path, arguments: &[&str]) {
    let status = std::process::Command::new("git")
        .args(arguments)
        .current_dir(directory)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {arguments:?}");
}

/// Every file under `directory`, with its size, sorted.
fn listing(directory: &Path) -> Vec<(PathBuf, u64)> {
    let mut files = Vec::new();
    let mut pending = vec![directory.to_owned()];
    while let Some(current) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.map(Result::unwrap) {
            let metadata = std::fs::symlink_metadata(entry.path()).unwrap();
            if metadata.is_dir() {
                pending.push(entry.path());
            } else {
                files.push((entry.path(), metadata.len()));
            }
        }
    }
    files.sort();
    files
}

fn passed(outcome: &GateOutcome, logs: &str) {
    assert!(
        matches!(outcome, GateOutcome::Passed { .. }),
        "{outcome:?}\n{logs}"
    );
}

#[tokio::test]
async fn a_real_rust_crate_builds_confined_with_rustup_and_its_second_build_downloads_nothing() {
    let work = Work::new();
    let walkdir = fixture("walkdir");
    let home = std::env::var_os("HOME").map(PathBuf::from).unwrap();
    // The build also says what it sees of the service user's home.
    let commands = [
        "cargo build",
        "cargo test",
        &format!("ls -A {}", home.display()),
    ];

    let (outcome, first, first_time) = work
        .build("BurntSushi/walkdir", "walkdir-1", &walkdir, &commands)
        .await;
    passed(&outcome, &first);
    assert!(first.contains("Downloaded same-file"), "{first}");
    let cargo_cache = work
        .caches()
        .join("BurntSushi/walkdir/cargo/registry/cache");
    let cached = listing(&cargo_cache);
    assert!(
        cached
            .iter()
            .any(|(path, _)| path.to_string_lossy().ends_with(".crate")),
        "{cached:?}"
    );
    // Of the real home, only the toolchains' directories are there.
    let seen: Vec<&str> = first
        .lines()
        .rev()
        .take_while(|line| line.starts_with('.'))
        .collect();
    assert!(!seen.is_empty(), "{first}");
    for entry in seen {
        assert!(
            [".cargo", ".rustup", ".pyenv", ".nvm", ".local"].contains(&entry),
            "{entry} of the real home is visible to builds:\n{first}"
        );
    }

    let (outcome, second, second_time) = work
        .build("BurntSushi/walkdir", "walkdir-2", &walkdir, &commands)
        .await;
    passed(&outcome, &second);
    assert!(!second.contains("Downloaded"), "{second}");
    assert_eq!(listing(&cargo_cache), cached);

    // Another repository starts with caches of its own, and cannot reach
    // walkdir's.
    let elsewhere = work.caches().join("BurntSushi/walkdir");
    let (outcome, other, _) = work
        .build(
            "acme/other",
            "other-1",
            &walkdir,
            &[&format!(
                "test ! -e {} && test -z \"$(ls -A \"$CARGO_HOME\")\" && echo own caches",
                elsewhere.display()
            )],
        )
        .await;
    passed(&outcome, &other);

    eprintln!(
        "walkdir (cargo build + cargo test, confined): first build {:.1} s, second build \
         (caches) {:.1} s",
        first_time.as_secs_f64(),
        second_time.as_secs_f64()
    );
}

#[tokio::test]
async fn a_real_python_project_builds_in_a_venv_and_its_second_build_downloads_nothing() {
    let work = Work::new();
    let tomli = fixture("tomli");
    let commands = [
        "python3 -m venv .venv",
        ". .venv/bin/activate && pip install -e . pytest && pytest -q",
    ];

    let (outcome, first, first_time) = work
        .build("hukkin/tomli", "tomli-1", &tomli, &commands)
        .await;
    passed(&outcome, &first);
    assert!(first.contains("Downloading"), "{first}");
    assert!(first.contains(" passed"), "{first}");
    // pip keeps its state in the repository's cache, not in the job's HOME.
    let pip_cache = work.caches().join("hukkin/tomli/pip");
    let cached = listing(&pip_cache);
    assert!(!cached.is_empty());
    // pip keeps a downloaded wheel only when the index says it may be
    // cached (PyPI sends `Cache-Control: max-age=…, immutable`; a mirror
    // that strips it makes pip download again). pytest's wheel is over
    // 400 kB: when a body that large is cached, nothing is downloaded again.
    let wheels_cached = cached.iter().any(|(_, size)| *size > 400_000);

    let (outcome, second, second_time) = work
        .build("hukkin/tomli", "tomli-2", &tomli, &commands)
        .await;
    passed(&outcome, &second);
    assert!(second.contains(" passed"), "{second}");
    let downloads = |log: &str| log.matches("Downloading ").count();
    assert!(downloads(&second) <= downloads(&first), "{second}");
    if wheels_cached {
        assert_eq!(downloads(&second), 0, "{second}");
    } else {
        eprintln!(
            "the package index sent no caching headers: pip downloaded {} files again",
            downloads(&second)
        );
    }

    eprintln!(
        "tomli (venv, pip install -e . pytest, pytest, confined): first build {:.1} s, second \
         build (caches) {:.1} s",
        first_time.as_secs_f64(),
        second_time.as_secs_f64()
    );
}

#[tokio::test]
async fn a_real_node_project_installs_its_test_runner_with_npm_and_passes_its_tests() {
    let work = Work::new();
    let is_number = fixture("is-number");
    // Its README documents `npm install` and `npm test`; mocha alone is
    // named so the install does not wait on the package's other tools.
    let commands = [
        "npm install --no-save --no-audit --no-fund --no-package-lock mocha@3.5.3",
        "npm test",
    ];

    let (outcome, first, first_time) = work
        .build(
            "jonschlinkert/is-number",
            "is-number-1",
            &is_number,
            &commands,
        )
        .await;
    passed(&outcome, &first);
    assert!(first.contains(" passing"), "{first}");
    // npm keeps its downloads in the repository's cache, not the job's HOME.
    let npm_cache = work.caches().join("jonschlinkert/is-number/npm");
    assert!(!listing(&npm_cache).is_empty());

    let (outcome, second, second_time) = work
        .build(
            "jonschlinkert/is-number",
            "is-number-2",
            &is_number,
            &commands,
        )
        .await;
    passed(&outcome, &second);
    assert!(second.contains(" passing"), "{second}");

    eprintln!(
        "is-number (npm install mocha, npm test, confined{}): first build {:.1} s, second \
         build (caches) {:.1} s",
        if work.cgroup.is_some() {
            ", own cgroup"
        } else {
            ""
        },
        first_time.as_secs_f64(),
        second_time.as_secs_f64()
    );
}

#[tokio::test]
async fn what_a_build_plants_in_cargo_home_is_gone_before_the_next_one() {
    let work = Work::new();
    let project = tempfile::tempdir().unwrap();
    std::fs::write(project.path().join("README.md"), "# planted\n").unwrap();
    let plant = "mkdir -p \"$CARGO_HOME/bin\" \"$CARGO_HOME/registry/src/x\" && \
                 echo '[build]' > \"$CARGO_HOME/config.toml\" && \
                 echo evil > \"$CARGO_HOME/bin/rustc\" && \
                 echo evil > \"$CARGO_HOME/registry/src/x/lib.rs\" && \
                 mkdir -p \"$CARGO_HOME/registry/cache\" && echo kept > \"$CARGO_HOME/registry/cache/kept\"";
    let (outcome, logs, _) = work
        .build("acme/planted", "plant-1", project.path(), &[plant])
        .await;
    passed(&outcome, &logs);
    let check = "for planted in config.toml bin/rustc registry/src/x/lib.rs; do \
                   test ! -e \"$CARGO_HOME/$planted\" || echo \"STILL $planted\"; done; \
                 cat \"$CARGO_HOME/registry/cache/kept\"";
    let (outcome, logs, _) = work
        .build("acme/planted", "plant-2", project.path(), &[check])
        .await;
    passed(&outcome, &logs);
    assert_eq!(logs, "kept\n");
}

#[tokio::test]
async fn the_probe_finds_rustups_cargo_names_a_missing_program_and_a_broken_one() {
    let work = Work::new();
    let settings = work.settings();

    let cargo = build_gate::probe(&settings, "acme/widgets", "cargo")
        .await
        .unwrap();
    let ProbeOutcome::Found { version } = &cargo else {
        panic!("{cargo}");
    };
    assert!(version.starts_with("cargo "), "{version}");

    let missing = build_gate::probe(&settings, "acme/widgets", "no-such-tool-7c1")
        .await
        .unwrap();
    let ProbeOutcome::Missing { advice } = &missing else {
        panic!("{missing}");
    };
    assert!(advice.contains("no-such-tool-7c1"), "{advice}");
    assert!(advice.contains("sandbox.readable_paths"), "{advice}");

    // A program found but failing, as rustup's proxy does without its home:
    // the operator is told what it printed and which keys help.
    let tools = tempfile::tempdir().unwrap();
    let broken = tools.path().join("broken-tool");
    std::fs::write(
        &broken,
        "#!/bin/sh\necho 'error: rustup could not choose a version of cargo to run' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let with_tool = work.settings().with_confinement(
        Confinement::new()
            .with_network(false)
            .with_readable(tools.path()),
    );
    let outcome = build_gate::probe(&with_tool, "acme/widgets", &broken.display().to_string())
        .await
        .unwrap();
    let ProbeOutcome::Broken {
        end,
        output,
        advice,
    } = &outcome
    else {
        panic!("{outcome}");
    };
    assert_eq!(*end, CommandEnd::Exited(1));
    assert!(output.contains("could not choose a version"), "{output}");
    assert!(advice.contains("sandbox.pass_environment"), "{advice}");
}
