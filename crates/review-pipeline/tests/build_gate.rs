//! The build + test gate on real git repositories whose README documents the
//! commands, run under real bubblewrap: passing, failing, hanging, leaving a
//! process behind, printing megabytes, and what environment the build sees;
//! and confined (issue 18): what a hostile build reaches of the bot's, and an
//! ordinary build that still passes; one shell for all the commands, the
//! failing one named even when an earlier one forges the shell's report, a
//! missing program as an environment failure, and a comment without escape
//! sequences or the bot's paths (issue 24).

use std::fmt::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::time::Duration;

use review_core::build_commands::{DiscoveredCommands, Source};
use review_core::payload::{GITHUB_BODY_LIMIT, fits_github};
use review_pipeline::build_gate::{
    self, BuildGateError, BuildGateSettings, CommandEnd, DEFAULT_TIMEOUT, GateOutcome, TAIL_BYTES,
};
use review_sandbox::{Confinement, Containment, SandboxError};
use review_testkit::cgroups::TestCgroup;
use review_testkit::processes::{live_processes_with_argument, marker};
use tempfile::TempDir;

/// A README documenting `./build.sh` and `./run-tests.sh`.
const README: &str =
    "# Fixture\n\n## Build\n\n```sh\n./build.sh\n```\n\n## Tests\n\n```sh\n./run-tests.sh\n```\n";

/// A README documenting only `./run-tests.sh`.
const TESTS_ONLY_README: &str = "# Fixture\n\n## Tests\n\n```sh\n./run-tests.sh\n```\n";

/// A real repository with `readme` and executable `scripts`, committed, and
/// a run directory beside it.
struct Fixture {
    repository: TempDir,
    run: TempDir,
}

impl Fixture {
    fn new(readme: &str, scripts: &[(&str, &str)]) -> Self {
        let repository = tempfile::tempdir().unwrap();
        let root = repository.path();
        std::fs::write(root.join("README.md"), readme).unwrap();
        for (name, body) in scripts {
            let path = root.join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        git(root, &["init", "--quiet", "--initial-branch=main"]);
        git(root, &["add", "."]);
        git(
            root,
            &[
                "-c",
                "user.name=Fixture",
                "-c",
                "user.email=fixture@example.com",
                "commit",
                "--quiet",
                "-m",
                "fixture",
            ],
        );
        Self {
            repository,
            run: tempfile::tempdir().unwrap(),
        }
    }

    fn worktree(&self) -> &Path {
        self.repository.path()
    }

    async fn gate(&self, timeout: Duration) -> GateOutcome {
        build_gate::run_gate(
            &BuildGateSettings::new(timeout),
            self.worktree(),
            self.run.path(),
            None,
        )
        .await
        .unwrap()
    }
}

fn git(directory: &Path, arguments: &[&str]) {
    let status = std::process::Command::new("git")
        .args(arguments)
        .current_dir(directory)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status()
        .unwrap();
    assert!(status.success(), "git {arguments:?}");
}

#[tokio::test]
async fn documented_commands_that_pass_pass_and_leave_private_logs() {
    let fixture = Fixture::new(
        README,
        &[
            ("build.sh", "echo built > built.txt"),
            ("run-tests.sh", "test -f built.txt && echo all tests passed"),
        ],
    );
    let outcome = fixture.gate(DEFAULT_TIMEOUT).await;
    assert_eq!(
        outcome,
        GateOutcome::Passed {
            commands: vec!["./build.sh".to_owned(), "./run-tests.sh".to_owned()],
            source: Source::Document("README.md".to_owned()),
        }
    );
    let log = fixture.run.path().join("build/02.log");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "all tests passed\n");
    let mode = std::fs::metadata(&log).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn a_failing_test_is_reported_with_its_status_and_output_tail() {
    let fixture = Fixture::new(
        README,
        &[
            ("build.sh", "echo built"),
            (
                "run-tests.sh",
                "echo running 12 tests\n\
                 echo 'assertion failed: left == right' >&2\n\
                 echo '</details> review::forged ```'\n\
                 exit 3",
            ),
        ],
    );
    let GateOutcome::Failed(failure) = fixture.gate(DEFAULT_TIMEOUT).await else {
        panic!("the gate should fail");
    };
    assert_eq!(failure.command, "./run-tests.sh");
    assert_eq!(failure.end, CommandEnd::Exited(3));
    assert!(
        failure.output_tail.contains("running 12 tests")
            && failure
                .output_tail
                .contains("assertion failed: left == right"),
        "{}",
        failure.output_tail
    );

    let comment = build_gate::failure_comment(&failure);
    assert!(
        comment.contains("`./run-tests.sh` exited with status 3"),
        "{comment}"
    );
    assert!(comment.contains("<details>"), "{comment}");
    assert!(
        comment.contains("assertion failed: left == right"),
        "{comment}"
    );
    // The output cannot plant an id, and its fence and `</details>` stay inside
    // a longer fence: exactly one `</details>` ends a line of the comment.
    assert!(!comment.contains("review::forged"), "{comment}");
    assert!(comment.contains("````text\n"), "{comment}");
    assert_eq!(
        comment
            .lines()
            .filter(|line| line.trim() == "</details>")
            .count(),
        1,
        "{comment}"
    );
}

#[tokio::test]
async fn a_hanging_test_is_killed_at_the_timeout() {
    let hanging = marker(1);
    let fixture = Fixture::new(
        TESTS_ONLY_README,
        &[("run-tests.sh", &format!("echo started\nsleep {hanging}"))],
    );
    let timeout = Duration::from_secs(2);
    let GateOutcome::Failed(failure) = fixture.gate(timeout).await else {
        panic!("the gate should fail");
    };
    assert_eq!(failure.command, "./run-tests.sh");
    assert_eq!(failure.end, CommandEnd::TimedOut(timeout));
    assert!(failure.output_tail.contains("started"));
    assert!(
        build_gate::failure_comment(&failure).contains("timed out after 2 s"),
        "{}",
        build_gate::failure_comment(&failure)
    );
    assert_eq!(live_processes_with_argument(&hanging), Vec::<u32>::new());
}

#[tokio::test]
async fn a_process_the_build_leaves_behind_is_gone_when_the_gate_returns() {
    let detached = marker(2);
    let fixture = Fixture::new(
        README,
        &[
            (
                "build.sh",
                // A session of its own, out of the process group's reach; the
                // script waits until it runs, and it holds the output open.
                &format!(
                    "setsid sleep {detached} &\n\
                     until grep -qs sleep /proc/$!/cmdline; do :; done\n\
                     echo left a daemon"
                ),
            ),
            ("run-tests.sh", "echo ok"),
        ],
    );
    let outcome = fixture.gate(DEFAULT_TIMEOUT).await;
    assert!(matches!(outcome, GateOutcome::Passed { .. }), "{outcome:?}");
    assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());
}

#[tokio::test]
async fn megabytes_of_output_keep_a_bounded_tail_and_the_whole_log_on_disk() {
    let fixture = Fixture::new(
        TESTS_ONLY_README,
        &[(
            "run-tests.sh",
            "yes 'a line of very chatty test output' | head -n 200000\n\
             echo 'the last line: 1 test failed' >&2\n\
             exit 1",
        )],
    );
    let GateOutcome::Failed(failure) = fixture.gate(DEFAULT_TIMEOUT).await else {
        panic!("the gate should fail");
    };
    let printed = 200_000 * "a line of very chatty test output\n".len() as u64
        + "the last line: 1 test failed\n".len() as u64;
    assert_eq!(failure.output_bytes, printed);
    assert_eq!(std::fs::metadata(&failure.log).unwrap().len(), printed);
    assert!(failure.output_tail.len() <= TAIL_BYTES);
    assert!(
        failure
            .output_tail
            .ends_with("the last line: 1 test failed\n")
    );

    let comment = build_gate::failure_comment(&failure);
    assert!(
        fits_github(&comment),
        "{} > {GITHUB_BODY_LIMIT}",
        comment.len()
    );
    assert!(comment.contains("the last line: 1 test failed"));
    assert!(comment.contains("bytes before them"), "{comment}");
}

#[tokio::test]
async fn nothing_documented_means_no_commands() {
    let fixture = Fixture::new("# Fixture\n\nA library. Nothing to build here.\n", &[]);
    assert_eq!(
        fixture.gate(DEFAULT_TIMEOUT).await,
        GateOutcome::NoCommands {
            searched: vec!["README.md".to_owned()]
        }
    );
}

#[tokio::test]
async fn a_readme_that_is_a_symbolic_link_is_not_read() {
    // The link could point at any file of the bot's machine; this one at a
    // README that documents commands, to show the link is what is refused.
    let elsewhere = Fixture::new(README, &[("build.sh", "true"), ("run-tests.sh", "true")]);
    let fixture = Fixture::new("placeholder", &[]);
    std::fs::remove_file(fixture.worktree().join("README.md")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.worktree().join("README.md"),
        fixture.worktree().join("README.md"),
    )
    .unwrap();
    assert_eq!(
        fixture.gate(DEFAULT_TIMEOUT).await,
        GateOutcome::NoCommands { searched: vec![] }
    );
}

#[tokio::test]
async fn a_missing_bubblewrap_is_the_bots_error_not_a_build_failure() {
    let fixture = Fixture::new(README, &[("build.sh", "true"), ("run-tests.sh", "true")]);
    let settings =
        BuildGateSettings::new(DEFAULT_TIMEOUT).with_containment(Containment::PidNamespace {
            bwrap: "/nonexistent/bwrap".into(),
        });
    let error = build_gate::run_gate(&settings, fixture.worktree(), fixture.run.path(), None)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            BuildGateError::Sandbox(SandboxError::Containment { .. })
        ),
        "{error}"
    );
    assert!(
        error.to_string().contains("apt-get install bubblewrap"),
        "{error}"
    );
}

/// Set by [`the_build_sees_no_credential_the_bot_has`] for the copy of this
/// test binary it starts: the directory to copy what the build saw into.
const PROBE: &str = "REVIEW_BOT_BUILD_GATE_ENVIRONMENT_PROBE";

#[test]
fn the_build_sees_no_credential_the_bot_has() {
    // This binary again, with credentials in its environment (a test cannot
    // set its own: `set_var` is unsafe), running only the probe below.
    let seen = tempfile::tempdir().unwrap();
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "environment_probe_started_by_the_credential_test",
            "--nocapture",
        ])
        .env(PROBE, seen.path())
        .env("GITHUB_TOKEN", "ghp_probe_github_token")
        .env("REVIEW_BOT_GITHUB_TOKEN", "ghp_probe_review_bot_token")
        .env("ANTHROPIC_API_KEY", "sk-ant-probe-model-key")
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let environment = std::fs::read_to_string(seen.path().join("env.txt"))
        .expect("the probe ran and copied what the build saw");
    for secret in [
        "GITHUB_TOKEN",
        "ghp_probe",
        "ANTHROPIC_API_KEY",
        "sk-ant-probe",
        PROBE,
    ] {
        assert!(!environment.contains(secret), "{secret} in:\n{environment}");
    }
    let names: Vec<&str> = environment
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    for name in ["PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "CI"] {
        assert!(names.contains(&name), "{name} missing in:\n{environment}");
    }
}

#[tokio::test]
async fn environment_probe_started_by_the_credential_test() {
    let Some(copy_to) = std::env::var_os(PROBE) else {
        return; // Run on its own: nothing to probe.
    };
    assert_eq!(
        std::env::var("GITHUB_TOKEN").unwrap(),
        "ghp_probe_github_token"
    );
    let fixture = Fixture::new(
        README,
        &[("build.sh", "env > env.txt"), ("run-tests.sh", "true")],
    );
    let outcome = fixture.gate(DEFAULT_TIMEOUT).await;
    assert!(matches!(outcome, GateOutcome::Passed { .. }), "{outcome:?}");
    let environment = std::fs::read_to_string(fixture.worktree().join("env.txt")).unwrap();
    let home = fixture.run.path().join("build/home");
    assert!(
        environment.contains(&format!("HOME={}\n", home.display())),
        "{environment}"
    );
    std::fs::write(Path::new(&copy_to).join("env.txt"), environment).unwrap();
}

/// The canary in the stand-in config file and in another job's checkout.
const CANARY: &str = "canary-b41d-not-for-pull-requests";

/// A job laid out as the pipeline's: a bare mirror, this job's worktree of
/// it and another job's, a run directory, and a config file outside.
struct Job {
    root: TempDir,
}

impl Job {
    fn new(readme: &str, scripts: &[(&str, &str)]) -> Self {
        let seed = Fixture::new(readme, scripts);
        let root = tempfile::tempdir().unwrap();
        let mirror = root.path().join("work/mirrors/owner/repo.git");
        std::fs::create_dir_all(mirror.parent().unwrap()).unwrap();
        git(
            root.path(),
            &[
                "clone",
                "--quiet",
                "--bare",
                seed.worktree().to_str().unwrap(),
                mirror.to_str().unwrap(),
            ],
        );
        let job = Self { root };
        for name in ["pr-1", "pr-2"] {
            let worktree = job.worktree(name);
            std::fs::create_dir_all(worktree.parent().unwrap()).unwrap();
            git(
                &mirror,
                &[
                    "worktree",
                    "add",
                    "--quiet",
                    "--detach",
                    worktree.to_str().unwrap(),
                    "main",
                ],
            );
        }
        std::fs::write(job.worktree("pr-2").join("secret.txt"), CANARY).unwrap();
        std::fs::create_dir_all(job.run()).unwrap();
        std::fs::create_dir_all(job.config().parent().unwrap()).unwrap();
        std::fs::write(job.config(), format!("[github]\ntoken = \"{CANARY}\"\n")).unwrap();
        job
    }

    fn path(&self) -> &Path {
        self.root.path()
    }

    fn mirror(&self) -> std::path::PathBuf {
        self.path().join("work/mirrors/owner/repo.git")
    }

    fn worktree(&self, name: &str) -> std::path::PathBuf {
        self.path().join("work/worktrees/owner/repo").join(name)
    }

    fn run(&self) -> std::path::PathBuf {
        self.path().join("work/runs/pr-1")
    }

    fn config(&self) -> std::path::PathBuf {
        self.path().join("etc/review-bot.toml")
    }

    async fn gate(&self) -> GateOutcome {
        let settings = BuildGateSettings::new(DEFAULT_TIMEOUT)
            .with_path("/usr/local/bin:/usr/bin:/bin")
            .with_confinement(Confinement::new().with_network(false));
        build_gate::run_gate(&settings, &self.worktree("pr-1"), &self.run(), None)
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn a_confined_build_reaches_nothing_of_the_bots_and_leaves_nothing_behind() {
    let survivor = marker(3);
    // The test process is "the bot": the build must not read its environment.
    let bot = std::process::id();
    let probe = |what: &str, command: &str| {
        format!(
            "if {command} >/tmp/out 2>/dev/null; then echo \"REACHED {what}\"; cat /tmp/out; fi\n"
        )
    };
    // The script knows the bot's layout, as a PR author who read the docs.
    let job = Job::new(TESTS_ONLY_README, &[]);
    let mirror = job.mirror();
    let mut script = String::new();
    script.push_str(&probe("config", &format!("cat {}", job.config().display())));
    script.push_str(&probe(
        "other job",
        &format!("cat {}/secret.txt", job.worktree("pr-2").display()),
    ));
    script.push_str(&probe("environ", &format!("cat /proc/{bot}/environ")));
    script.push_str(&probe("shadow", "cat /etc/shadow"));
    write!(
        script,
        "echo '[core] fsmonitor = evil' >> {mirror}/config 2>/dev/null\n\
         echo evil > {mirror}/hooks/post-checkout 2>/dev/null\n\
         echo 'gitdir: /elsewhere' > .git 2>/dev/null\n\
         echo planted > ../planted 2>/dev/null\n\
         echo planted > {root}/planted 2>/dev/null\n\
         setsid sleep {survivor} >/dev/null 2>&1 </dev/null &\n\
         until grep -qs sleep /proc/$!/cmdline; do :; done\n\
         echo probed\n\
         exit 1",
        mirror = mirror.display(),
        root = job.path().display(),
    )
    .unwrap();
    std::fs::write(job.worktree("pr-1").join("run-tests.sh"), script).unwrap();
    std::fs::set_permissions(
        job.worktree("pr-1").join("run-tests.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();

    let GateOutcome::Failed(failure) = job.gate().await else {
        panic!("the script exits 1");
    };

    let comment = build_gate::failure_comment(&failure);
    assert!(comment.contains("probed"), "{comment}");
    assert!(!comment.contains("REACHED"), "{comment}");
    assert!(!comment.contains(CANARY), "{comment}");
    assert_eq!(live_processes_with_argument(&survivor), Vec::<u32>::new());
    let config = std::fs::read_to_string(mirror.join("config")).unwrap();
    assert!(!config.contains("evil"), "{config}");
    assert!(!mirror.join("hooks/post-checkout").exists());
    assert!(
        std::fs::read_to_string(job.worktree("pr-1").join(".git"))
            .unwrap()
            .starts_with("gitdir: ")
    );
    assert!(
        !job.path()
            .join("work/worktrees/owner/repo/planted")
            .exists()
    );
    assert!(!job.path().join("planted").exists());
}

#[tokio::test]
async fn an_ordinary_build_passes_confined() {
    let job = Job::new(
        README,
        &[
            (
                "build.sh",
                "set -e\n\
                 echo built > built.txt\n\
                 scratch=$(mktemp)\n\
                 echo scratch > \"$scratch\"\n\
                 echo cached > \"$HOME/cache\"\n\
                 grep -q '^ID=' /etc/os-release\n\
                 git log --oneline | grep -q fixture\n\
                 git status --short | grep -q built.txt\n\
                 echo build done",
            ),
            ("run-tests.sh", "test -f built.txt && echo all tests passed"),
        ],
    );
    let outcome = job.gate().await;
    assert!(
        matches!(outcome, GateOutcome::Passed { .. }),
        "{outcome:?}\n{}",
        std::fs::read_to_string(job.run().join("build/01.log")).unwrap_or_default()
    );
    assert!(job.worktree("pr-1").join("built.txt").exists());
    // The job's home is gone after it (a build can leave gigabytes there);
    // its logs stay.
    assert!(!job.run().join("build/home").exists());
    assert!(!job.run().join("build/tmp").exists());
    assert!(job.run().join("build/01.log").is_file());
}

#[tokio::test]
async fn shared_caches_are_shared_by_one_repositorys_jobs_only_and_off_by_default() {
    let caches = tempfile::tempdir().unwrap();
    let fixture = Fixture::new(
        TESTS_ONLY_README,
        &[(
            "run-tests.sh",
            "if [ -f \"$HOME/cache\" ]; then echo warm; else echo cold; echo cached > \"$HOME/cache\"; fi",
        )],
    );
    let mut shared = BuildGateSettings::new(DEFAULT_TIMEOUT).with_caches(caches.path());
    shared.shared_home = true;
    let run_for = |settings: BuildGateSettings| {
        let fixture = &fixture;
        async move {
            let run = tempfile::tempdir().unwrap();
            let outcome =
                build_gate::run_gate(&settings, fixture.worktree(), run.path(), None).await;
            assert!(
                matches!(outcome, Ok(GateOutcome::Passed { .. })),
                "{outcome:?}"
            );
            std::fs::read_to_string(run.path().join("build/01.log")).unwrap()
        }
    };
    // Two jobs of acme/widgets: the second finds what the first cached.
    assert_eq!(
        run_for(shared.for_repository("acme/widgets")).await,
        "cold\n"
    );
    assert_eq!(
        run_for(shared.for_repository("acme/widgets")).await,
        "warm\n"
    );
    assert!(caches.path().join("acme/widgets/home/cache").exists());
    // Another repository, and the default: a home of their own.
    assert_eq!(
        run_for(shared.for_repository("acme/gadgets")).await,
        "cold\n"
    );
    let default = BuildGateSettings::new(DEFAULT_TIMEOUT);
    assert_eq!(
        run_for(default.for_repository("acme/widgets")).await,
        "cold\n"
    );
    // A name that is not OWNER/REPO never picks a shared home.
    assert_eq!(shared.for_repository("../etc").repository_caches, None);
}

/// `commands` (all "build", from the operator's configuration) with `environment`.
fn operator_commands(commands: &[&str], environment: &[(&str, &str)]) -> DiscoveredCommands {
    DiscoveredCommands {
        setup: Vec::new(),
        build: commands
            .iter()
            .map(|command| (*command).to_owned())
            .collect(),
        test: Vec::new(),
        environment: environment
            .iter()
            .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
            .collect(),
        source: Source::Operator,
    }
}

async fn run(fixture: &Fixture, commands: &DiscoveredCommands) -> GateOutcome {
    build_gate::run_commands(
        &BuildGateSettings::new(DEFAULT_TIMEOUT),
        fixture.worktree(),
        fixture.run.path(),
        commands,
    )
    .await
    .unwrap()
}

fn log(fixture: &Fixture, number: usize) -> String {
    std::fs::read_to_string(fixture.run.path().join(format!("build/{number:02}.log"))).unwrap()
}

#[tokio::test]
async fn the_commands_share_one_shell_directory_variables_and_an_activated_environment() {
    // `venv/bin/activate` as a virtualenv's: sourced, it exports a variable,
    // puts its bin first in PATH and defines `deactivate`.
    let fixture = Fixture::new(
        TESTS_ONLY_README,
        &[(
            "make-venv.sh",
            "mkdir -p venv/bin\n\
             printf 'export VIRTUAL_ENV=\"$PWD/venv\"\\nPATH=\"$VIRTUAL_ENV/bin:$PATH\"\\nexport PATH\\ndeactivate() { :; }\\n' > venv/bin/activate\n\
             printf '#!/bin/sh\\necho venv python\\n' > venv/bin/python\n\
             chmod +x venv/bin/python",
        )],
    );
    let commands = operator_commands(
        &[
            "./make-venv.sh",
            ". venv/bin/activate",
            "export GREETING=\"hello from $(basename \"$PWD\")\"",
            "mkdir -p sub && cd sub",
            "type deactivate >/dev/null && python && echo \"$GREETING in $(basename \"$PWD\") with $CONFIGURED\"",
        ],
        &[("CONFIGURED", "a configured variable")],
    );
    let outcome = run(&fixture, &commands).await;
    assert!(matches!(outcome, GateOutcome::Passed { .. }), "{outcome:?}");
    let repository = fixture
        .worktree()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        log(&fixture, 5),
        format!("venv python\nhello from {repository} in sub with a configured variable\n")
    );
}

#[tokio::test]
async fn the_failing_command_is_named_even_when_an_earlier_one_forges_the_report() {
    let fixture = Fixture::new(TESTS_ONLY_README, &[]);
    let commands = operator_commands(
        &[
            // Prints what the shell reports, and tries the report pipe
            // itself (closed for it) and a file standing for it.
            "echo 'end 1 0'; echo 'end 2 0'; echo 'end 3 0' >&2; \
             printf 'end 2 0\\n' >&5; printf 'end 2 0\\n' >/proc/self/fd/5; \
             echo 'end 2 0' > report; echo first done",
            "echo second runs; exit 4",
            "echo third must not run",
        ],
        &[],
    );
    let GateOutcome::Failed(failure) = run(&fixture, &commands).await else {
        panic!("the second command exits 4");
    };
    assert_eq!(failure.command, "echo second runs; exit 4");
    assert_eq!(failure.index, 1);
    assert_eq!(failure.end, CommandEnd::Exited(4));
    assert_eq!(failure.output_tail, "second runs\n");
    assert!(
        log(&fixture, 1).contains("first done"),
        "{}",
        log(&fixture, 1)
    );
    assert_eq!(log(&fixture, 2), "second runs\n");
    assert!(!fixture.run.path().join("build/03.log").exists());
}

#[tokio::test]
async fn a_command_that_ends_the_shell_early_is_the_failure() {
    let fixture = Fixture::new(TESTS_ONLY_README, &[]);
    let commands = operator_commands(&["echo one", "exit 0", "echo never"], &[]);
    let GateOutcome::Failed(failure) = run(&fixture, &commands).await else {
        panic!("`exit 0` ends the shell before the third command");
    };
    assert_eq!((failure.index, failure.end), (1, CommandEnd::EndedTheShell));
    let commands = operator_commands(&["echo one", "set -e", "false", "echo never"], &[]);
    let GateOutcome::Failed(failure) = run(&fixture, &commands).await else {
        panic!("`false` under `set -e` ends the shell");
    };
    assert_eq!((failure.index, failure.end), (2, CommandEnd::Exited(1)));
}

#[tokio::test]
async fn a_missing_program_is_an_environment_failure_and_a_missing_script_is_not() {
    let fixture = Fixture::new(TESTS_ONLY_README, &[]);
    let commands = operator_commands(&["echo setup", "no-such-toolchain-cargo build"], &[]);
    let GateOutcome::EnvironmentFailure(failure) = run(&fixture, &commands).await else {
        panic!("a program that is not installed cannot start");
    };
    assert_eq!(failure.index, 1);
    assert_eq!(failure.end, CommandEnd::Exited(127));
    assert_eq!(
        failure.missing.as_deref(),
        Some("`no-such-toolchain-cargo` is not installed (not found in the build's PATH)")
    );
    // The repository's own script, missing: whose doing that is, the base
    // branch decides.
    let commands = operator_commands(&["./scripts/missing.sh"], &[]);
    let outcome = run(&fixture, &commands).await;
    assert!(
        matches!(&outcome, GateOutcome::Failed(failure) if failure.end == CommandEnd::Exited(127)),
        "{outcome:?}"
    );
    // rustup's own complaint, whatever its status.
    let commands = operator_commands(
        &[
            "echo 'error: rustup could not choose a version of cargo to run, because one wasn'\"'\"'t specified explicitly, and no default is configured.' >&2; exit 1",
        ],
        &[],
    );
    let GateOutcome::EnvironmentFailure(failure) = run(&fixture, &commands).await else {
        panic!("rustup without a toolchain cannot run cargo");
    };
    assert!(
        failure
            .missing
            .as_deref()
            .unwrap()
            .contains("could not choose a version of cargo"),
        "{failure:?}"
    );
}

#[tokio::test]
async fn the_comment_has_no_escape_sequences_nor_the_bots_paths_and_counts_bytes_right() {
    let fixture = Fixture::new(TESTS_ONLY_README, &[]);
    // 87 bytes of output with colours, a title escape, and the bot's paths.
    let commands = operator_commands(
        &[
            "printf '\\033]0;title\\007\\033[1;31merror\\033[0m: in %s/src/lib.rs\\n' \"$PWD\"; \
             printf 'cache %s/.cargo\\n' \"$HOME\"; exit 2",
        ],
        &[],
    );
    let GateOutcome::Failed(failure) = run(&fixture, &commands).await else {
        panic!("the command exits 2");
    };
    let printed = format!(
        "\u{1b}]0;title\u{7}\u{1b}[1;31merror\u{1b}[0m: in {}/src/lib.rs\ncache {}/.cargo\n",
        fixture.worktree().display(),
        fixture.run.path().join("build/home").display()
    );
    assert_eq!(failure.output_tail, printed);
    assert_eq!(failure.output_bytes, printed.len() as u64);
    let comment = build_gate::failure_comment(&failure);
    assert!(!comment.contains('\u{1b}'), "{comment}");
    assert!(
        !comment.contains(&fixture.worktree().display().to_string()),
        "{comment}"
    );
    assert!(
        !comment.contains(&fixture.run.path().display().to_string()),
        "{comment}"
    );
    assert!(
        comment.contains("error: in ./src/lib.rs\ncache $HOME/.cargo\n"),
        "{comment}"
    );
    assert!(
        comment.contains(&format!(
            "<summary>Its output ({} bytes)</summary>",
            printed.len()
        )),
        "{comment}"
    );
    assert!(
        comment.contains("exited with status 2, so this pull request was not reviewed (the only command from configuration)"),
        "{comment}"
    );
}

/// The configuration as the operator wrote it, before any attack.
const OPERATOR_CONFIG: &str = "[github]\ntoken = \"canary-b41d-not-for-pull-requests\"\n";

#[tokio::test]
async fn a_build_cannot_write_the_bots_files_through_a_link_it_plants() {
    // The attack, as a PR author who read the docs: the build's HOME is
    // `RUN/build/home`, the logs are `RUN/build/NN.log`; the first command
    // links the second command's log to the operator's config, the second
    // prints what would turn confinement off for every later job.
    let job = Job::new(
        README,
        &[
            (
                "build.sh",
                "ln -sf \"$CONFIG\" \"$HOME/../02.log\" && echo planted next to the logs\n\
                 ln -sf \"$CONFIG\" \"$HOME/02.log\"\n\
                 touch \"$HOME/../created\" 2>/dev/null && echo created in the build directory\n\
                 mkdir \"$HOME/../../created\" 2>/dev/null && echo created in the run directory\n\
                 touch \"$HOME/mine\" && echo home writable\n\
                 echo built",
            ),
            ("run-tests.sh", "printf '[sandbox]\\nmode = \"off\"\\n'"),
        ],
    );
    let config = job.config();
    let settings = BuildGateSettings::new(DEFAULT_TIMEOUT)
        .with_path("/usr/local/bin:/usr/bin:/bin")
        .with_confinement(Confinement::new().with_network(false));
    let commands = operator_commands(
        &["./build.sh", "./run-tests.sh"],
        &[("CONFIG", config.to_str().unwrap())],
    );
    let outcome = build_gate::run_commands(&settings, &job.worktree("pr-1"), &job.run(), &commands)
        .await
        .unwrap();
    assert!(matches!(outcome, GateOutcome::Passed { .. }), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), OPERATOR_CONFIG);
    let second = job.run().join("build/02.log");
    assert!(
        std::fs::symlink_metadata(&second).unwrap().is_file(),
        "the log is a file of its own"
    );
    assert!(
        std::fs::read_to_string(second)
            .unwrap()
            .contains("mode = \"off\"")
    );
    // Issue 26, round two: nothing can be created where the bot writes —
    // `RUN/build` and `RUN` are not shown to the build (what it makes at
    // those paths lands in its own empty root, gone with it); only its home
    // and tmp are its own.
    let first = std::fs::read_to_string(job.run().join("build/01.log")).unwrap();
    assert!(first.contains("home writable"), "{first}");
    assert!(!job.run().join("build/created").exists());
    assert!(!job.run().join("created").exists());
}

#[tokio::test]
async fn a_resumed_job_treats_its_run_directory_as_written_by_an_attacker() {
    // What an earlier, killed run of the job left: its logs linked to the
    // operator's config, its home linked to a directory of the bot's.
    let job = Job::new(
        README,
        &[
            ("build.sh", "echo into-home > \"$HOME/written\"; echo built"),
            ("run-tests.sh", "echo tested"),
        ],
    );
    let config = job.config();
    let build = job.run().join("build");
    std::fs::create_dir_all(&build).unwrap();
    for log in ["01.log", "02.log"] {
        std::os::unix::fs::symlink(&config, build.join(log)).unwrap();
    }
    let bots = config.parent().unwrap().to_owned();
    std::os::unix::fs::symlink(&bots, build.join("home")).unwrap();
    std::os::unix::fs::symlink(&bots, build.join("tmp")).unwrap();

    let outcome = job.gate().await;

    assert!(matches!(outcome, GateOutcome::Passed { .. }), "{outcome:?}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), OPERATOR_CONFIG);
    assert!(!bots.join("written").exists());
    assert_eq!(
        std::fs::read_to_string(build.join("01.log")).unwrap(),
        "built\n"
    );
    assert_eq!(
        std::fs::read_to_string(build.join("02.log")).unwrap(),
        "tested\n"
    );
}

#[tokio::test]
async fn a_build_posing_as_bubblewrap_is_a_build_failure_blamed_on_the_pull_request() {
    let job = Job::new(TESTS_ONLY_README, &[]);
    let settings = BuildGateSettings::new(DEFAULT_TIMEOUT)
        .with_path("/usr/local/bin:/usr/bin:/bin")
        .with_confinement(Confinement::new().with_network(false));
    // It ends the gate's shell (so no report says it was a command) after
    // printing, first, what bubblewrap prints when it cannot mount /proc.
    let commands = operator_commands(
        &["echo \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2; exit 1"],
        &[],
    );
    let outcome =
        build_gate::run_commands(&settings, &job.worktree("pr-1"), &job.run(), &commands).await;
    let Ok(GateOutcome::Failed(failure)) = outcome else {
        panic!("a build failure, not a containment error: {outcome:?}");
    };
    assert_eq!(failure.end, CommandEnd::Exited(1));
    assert!(failure.output_tail.starts_with("bwrap: Can't mount proc"));
}

#[tokio::test]
async fn a_confined_build_in_a_cgroup_of_its_own_fails_as_the_pr_made_it_and_leaves_no_cgroup() {
    let Some(cgroup) = TestCgroup::new(review_sandbox::cgroups::cgroup2_mount_point(), "gate")
    else {
        return;
    };
    let detached = marker(5);
    let fixture = Fixture::new(
        README,
        &[
            (
                "build.sh",
                &format!("setsid sleep {detached} </dev/null >/dev/null 2>&1 &\necho built"),
            ),
            ("run-tests.sh", "echo 'assertion failed' >&2\nexit 3"),
        ],
    );
    let run_cgroups = review_sandbox::cgroups::prepare(
        &review_sandbox::cgroups::CgroupSetting::Directory(cgroup.path().to_owned()),
    )
    .unwrap()
    .unwrap();
    let settings = BuildGateSettings::new(DEFAULT_TIMEOUT)
        .with_path("/usr/local/bin:/usr/bin:/bin")
        .with_confinement(
            Confinement::new()
                .with_network(false)
                .with_cgroup(Some(run_cgroups.clone())),
        );
    let outcome = build_gate::run_gate(&settings, fixture.worktree(), fixture.run.path(), None)
        .await
        .unwrap();
    let GateOutcome::Failed(failure) = outcome else {
        panic!("the gate should fail: {outcome:?}");
    };
    assert_eq!(failure.end, CommandEnd::Exited(3));
    assert_eq!(failure.bound_hit, None, "no bound was hit");
    assert!(failure.output_tail.contains("assertion failed"));
    assert!(cgroup.children().is_empty(), "{:?}", cgroup.children());
    assert_eq!(live_processes_with_argument(&detached), Vec::<u32>::new());

    // Where the kernel gives the memory controller: a build that takes more
    // than its bound is killed whole, and the comment says which bound.
    if !run_cgroups.has("memory") {
        eprintln!(
            "no memory controller for {}: the memory bound stays an rlimit",
            cgroup.path().display()
        );
        return;
    }
    let fixture = Fixture::new(
        TESTS_ONLY_README,
        &[(
            "run-tests.sh",
            "head -c 134217728 /dev/zero > /tmp/big\necho survived",
        )],
    );
    let limits = review_sandbox::Limits {
        memory: Some(64 << 20),
        tmp_size: Some(256 << 20),
        ..review_sandbox::Limits::DEFAULT
    };
    let settings = BuildGateSettings::new(DEFAULT_TIMEOUT)
        .with_path("/usr/local/bin:/usr/bin:/bin")
        .with_confinement(
            Confinement::new()
                .with_limits(limits)
                .with_cgroup(Some(run_cgroups)),
        );
    let outcome = build_gate::run_gate(&settings, fixture.worktree(), fixture.run.path(), None)
        .await
        .unwrap();
    let GateOutcome::Failed(failure) = outcome else {
        panic!("the gate should fail: {outcome:?}");
    };
    let bound = failure.bound_hit.clone().expect("the memory bound was hit");
    assert!(bound.contains("sandbox.memory_limit_mib"), "{bound}");
    assert!(
        build_gate::failure_comment(&failure).contains("after the build hit its memory bound"),
        "{}",
        build_gate::failure_comment(&failure)
    );
}
