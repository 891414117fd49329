//! `review-bot doctor` and the configuration it reports: the real binary
//! against the GitHub simulator, the pinned Claude Code CLI, real bubblewrap,
//! git and a SQLite file.

use std::path::Path;

use review_testkit::cgroups::TestCgroup;
use review_testkit::github::{GithubSim, RepositorySelection};

use crate::{review_bot, text};

/// `review-bot` with an environment of our own choosing: nothing of the
/// developer's (an `ANTHROPIC_API_KEY`, a `REVIEW_BOT_*` override) leaks in.
fn isolated(dir: &Path) -> assert_cmd::Command {
    let mut command = review_bot(dir);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"));
    command
}

/// Output with the run's variable parts (temporary paths, ports, versions, budgets) masked.
/// `review-bot doctor` with `config`, against `sim` as `bot`, a made-up
/// model key and the SQLite store `store`.
fn doctor_against(
    dir: &Path,
    config: &Path,
    sim: &GithubSim,
    bot: &review_testkit::github::SimUser,
    store: &Path,
) -> assert_cmd::Command {
    let mut command = isolated(dir);
    command
        .args(["doctor"])
        .env("REVIEW_BOT_CONFIG", config)
        .env("REVIEW_BOT_GITHUB_TOKEN", &bot.token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", store.display()),
        );
    command
}

fn masked(output: &str, dir: &Path, sim: &GithubSim) -> String {
    let mut masked = output
        .replace(&dir.display().to_string(), "[DIR]")
        .replace(sim.api_url(), "[SIM]");
    if let Ok(claude) = review_testkit::tools::claude_binary() {
        masked = masked.replace(&claude.display().to_string(), "[CLAUDE]");
    }
    masked
}

fn snapshot_filters() -> Vec<(&'static str, &'static str)> {
    vec![
        (r"git version [0-9][^\n]*", "git version [VERSION]"),
        (r"\([0-9.]+ \(Claude Code\)\)", "([CLAUDE VERSION])"),
        (r"/\S*bwrap runs", "[BWRAP] runs"),
        (r"schema version [0-9]+", "schema version [N]"),
        // Which bounds apply depends on the machine's cgroups.
        (
            r"sandbox: resource bounds: [^\n]*",
            "sandbox: resource bounds: [BOUNDS]",
        ),
        (
            r"\([0-9]+ of [0-9]+ requests left this hour\)",
            "([N] of [N] requests left this hour)",
        ),
    ]
}

#[test]
fn doctor_on_a_healthy_setup_passes_every_check_and_says_where_each_value_came_from() {
    let Some(claude) = review_testkit::tools::claude_for_test() else {
        return;
    };
    let sim = GithubSim::start().unwrap();
    let bot = sim.user("review-bot");
    sim.repo("acme/widgets")
        .file("README.md", "# widgets\n")
        .create()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("review-bot.toml");
    std::fs::write(
        &config,
        format!(
            "# a test configuration\nwork_dir = \"{work}\"\n\n[agent]\nclaude_path = \"{claude}\"\nmodel = \"from-the-file\"\nmax_budget_usd = 2.5\n\n[review]\nbuild_timeout_secs = 600\n",
            work = dir.path().join("work").display(),
            claude = claude.display(),
        ),
    )
    .unwrap();

    let assert = isolated(dir.path())
        .args(["doctor", "--repo", "acme/widgets"])
        .env("REVIEW_BOT_CONFIG", &config)
        .env("REVIEW_BOT_GITHUB_TOKEN", &bot.token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_AGENT_MODEL", "from-the-environment")
        // A string key takes its variable as text, even when it looks like a number.
        .env("REVIEW_BOT_GIT_AUTHOR_NAME", "1234")
        .env("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("store.sqlite3").display()),
        )
        .assert()
        .code(0);
    let stdout = text(&assert.get_output().stdout);
    assert!(!stdout.contains(&bot.token), "the token is never shown");
    assert!(
        !stdout.contains("sk-ant-not-a-real-key"),
        "the API key is never shown"
    );
    assert!(!stdout.contains('✗'), "{stdout}");
    insta::with_settings!({filters => snapshot_filters()}, {
        insta::assert_snapshot!(masked(&stdout, dir.path(), &sim));
    });
    // The store was created and migrated, and the probe wrote nothing into the work directory.
    assert!(dir.path().join("store.sqlite3").is_file());
    assert_eq!(
        std::fs::read_dir(dir.path().join("work")).unwrap().count(),
        0
    );
}

#[test]
fn doctor_on_a_broken_setup_names_each_failure_and_what_to_do() {
    let sim = GithubSim::start().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A work directory below a regular file cannot be created, even by root.
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let config = dir.path().join("broken.toml");
    std::fs::write(
        &config,
        format!(
            "work_dir = \"{work}\"\n\n[agent]\nclaude_path = \"{dir}/no-such/claude\"\n\n[store]\ndatabase_url = \"sqlite://{dir}/store.sqlite3\"\n",
            work = dir.path().join("a-file/work").display(),
            dir = dir.path().display(),
        ),
    )
    .unwrap();

    let assert = isolated(dir.path())
        .args(["doctor", "--config"])
        .arg(&config)
        .env(
            "REVIEW_BOT_GITHUB_TOKEN",
            "ghp_not_a_token_the_simulator_issued",
        )
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .assert()
        .code(1);
    let stdout = masked(&text(&assert.get_output().stdout), dir.path(), &sim);
    let checks: Vec<&str> = stdout
        .lines()
        .skip_while(|line| *line != "Checks")
        .skip(1)
        .collect();
    insta::with_settings!({filters => snapshot_filters()}, {
        insta::assert_snapshot!(checks.join("\n"));
    });
    for (check, fix) in [
        ("✗ Claude Code: ", "set agent.claude_path"),
        (
            "✗ Claude Code flags: not probed",
            "fix the check above first",
        ),
        ("✗ GitHub: GitHub rejected", "REVIEW_BOT_GITHUB_TOKEN"),
        ("✗ work directory: ", "REVIEW_BOT_WORK_DIR"),
        ("✗ model credential: ", "export ANTHROPIC_API_KEY"),
    ] {
        let line = checks
            .iter()
            .find(|line| line.starts_with(check))
            .unwrap_or_else(|| panic!("no line {check:?} in:\n{stdout}"));
        assert!(line.contains(fix), "{line}");
    }
    assert!(checks.iter().any(|line| line.starts_with("✓ store: ")));
    assert!(checks.iter().any(|line| line.starts_with("✓ git: ")));
}

#[test]
fn doctor_with_a_github_app_lists_the_repositories_it_reaches() {
    let sim = GithubSim::start().unwrap();
    for name in ["acme/widgets", "acme/gadgets"] {
        sim.repo(name).file("README.md", "# x\n").create().unwrap();
    }
    let app = sim.create_app("review-bot").unwrap();
    sim.install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("app.pem");
    std::fs::write(&key_file, &app.private_key_pem).unwrap();

    let assert = isolated(dir.path())
        .arg("doctor")
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_GITHUB_APP_ID", app.id.to_string())
        .env("REVIEW_BOT_GITHUB_APP_PRIVATE_KEY_FILE", &key_file)
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", dir.path().join("no-claude"))
        .env("REVIEW_BOT_WORK_DIR", dir.path().join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("store.sqlite3").display()),
        )
        .assert()
        .code(1);
    let stdout = masked(&text(&assert.get_output().stdout), dir.path(), &sim);
    let github = stdout
        .lines()
        .find(|line| line.contains(" GitHub: "))
        .unwrap_or_else(|| panic!("no GitHub line in:\n{stdout}"));
    assert_eq!(
        github,
        "✓ GitHub: GitHub App at [SIM]: 1 installation(s), reaches acme/gadgets, acme/widgets"
    );
    assert!(stdout.contains("  github.app_id = "), "{stdout}");
    assert!(!stdout.contains("BEGIN"), "the key is never shown");
}

/// `review-bot doctor` with `contents` as its configuration file: exit 2 and standard error.
fn doctor_with_bad_configuration(contents: &str, environment: &[(&str, &str)]) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("review-bot.toml"), contents).unwrap();
    let assert = isolated(dir.path())
        .arg("doctor")
        .envs(environment.iter().copied())
        .assert()
        .code(2);
    assert!(assert.get_output().stdout.is_empty());
    text(&assert.get_output().stderr)
}

#[test]
fn an_unknown_key_in_the_file_is_named_with_its_line_and_the_keys_expected() {
    let stderr = doctor_with_bad_configuration(
        "[github]\napi_url = \"https://api.github.com\"\n\n[agent]\nmodel = \"m\"\nmodle = \"typo\"\n",
        &[],
    );
    insta::assert_snapshot!(stderr);
    assert!(stderr.starts_with("error: review-bot.toml:6: `agent.modle`: unknown field `modle`"));
}

#[test]
fn a_bad_value_in_the_file_is_named_with_its_line_and_expected_form() {
    let stderr = doctor_with_bad_configuration("[agent]\ncontainment = \"chroot\"\n", &[]);
    insta::assert_snapshot!(stderr);
    assert!(stderr.contains("review-bot.toml:2: `agent.containment`"));
}

#[test]
fn an_unknown_table_is_named_with_its_line() {
    let stderr = doctor_with_bad_configuration("[agnet]\nmodel = \"m\"\n", &[]);
    assert!(
        stderr.starts_with("error: review-bot.toml:1: `agnet`: unknown field `agnet`"),
        "{stderr}"
    );
}

#[test]
fn a_bad_value_in_the_environment_names_the_variable_and_expected_form() {
    let stderr = doctor_with_bad_configuration("", &[("REVIEW_BOT_AGENT_MAX_TURNS", "many")]);
    assert!(
        stderr.starts_with("error: REVIEW_BOT_AGENT_MAX_TURNS: `agent.max_turns`: invalid type"),
        "{stderr}"
    );
    assert!(stderr.contains("expected a whole number"), "{stderr}");
}

#[test]
fn an_unknown_variable_under_a_table_prefix_is_an_error() {
    let stderr = doctor_with_bad_configuration("", &[("REVIEW_BOT_AGENT_MODLE", "m")]);
    assert!(
        stderr.starts_with(
            "error: the environment variable REVIEW_BOT_AGENT_MODLE is not a configuration key"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("REVIEW_BOT_AGENT_MODEL"), "{stderr}");
}

#[test]
fn a_missing_configuration_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let assert = isolated(dir.path())
        .args(["doctor", "--config", "nowhere.toml"])
        .assert()
        .code(2);
    let stderr = text(&assert.get_output().stderr);
    assert!(
        stderr.starts_with("error: cannot read the configuration file nowhere.toml"),
        "{stderr}"
    );
}

#[test]
fn the_example_file_is_a_valid_configuration() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../review-bot.example.toml");
    let dir = tempfile::tempdir().unwrap();
    // Every check may fail here (no credential, no claude on this PATH): what
    // matters is that the file is read (exit 1 or 0, never 2) and every key
    // is reported as set by the file or its default.
    let assert = isolated(dir.path())
        .args(["doctor", "--config"])
        .arg(&example)
        .env("REVIEW_BOT_GITHUB_API_URL", "http://127.0.0.1:1")
        .env("REVIEW_BOT_WORK_DIR", dir.path().join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("s.sqlite3").display()),
        )
        .assert();
    let code = assert.get_output().status.code();
    assert!(matches!(code, Some(0 | 1)), "{:?}", assert.get_output());
    let stdout = text(&assert.get_output().stdout);
    assert!(
        stdout.contains("agent.max_turns = 30  (") && stdout.contains("review-bot.example.toml:"),
        "{stdout}"
    );
}

/// Issue 26: a Claude Code path that is an absolute symbolic link in another
/// directory (`/usr/local/bin/claude → …`) works confined, and doctor checks
/// it by starting it the way a review does (through the runner, confined).
#[test]
fn a_claude_path_through_an_absolute_symlink_passes_doctor_because_it_starts_confined() {
    let Ok(binary) = review_testkit::tools::claude_binary() else {
        return;
    };
    let binary = std::fs::canonicalize(binary).unwrap();
    let sim = GithubSim::start().unwrap();
    let bot = sim.user("review-bot");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("usr-local-bin");
    std::fs::create_dir(&bin).unwrap();
    let link = bin.join("claude");
    std::os::unix::fs::symlink(&binary, &link).unwrap();
    let config = dir.path().join("review-bot.toml");
    std::fs::write(
        &config,
        format!(
            "work_dir = \"{work}\"\n\n[agent]\nclaude_path = \"{link}\"\n",
            work = dir.path().join("work").display(),
            link = link.display(),
        ),
    )
    .unwrap();

    let assert = doctor_against(
        dir.path(),
        &config,
        &sim,
        &bot,
        &dir.path().join("store.sqlite3"),
    )
    .assert();
    let stdout = text(&assert.get_output().stdout);
    let check_line = |name: &str| {
        stdout
            .lines()
            .find(|line| line.contains(&format!(" {name}: ")))
            .unwrap_or_default()
            .to_owned()
    };
    let found = check_line("Claude Code");
    assert!(
        found.starts_with('✓') && found.contains("started as a review starts it"),
        "{stdout}"
    );
    assert!(check_line("Claude Code flags").starts_with('✓'), "{stdout}");
}

/// Issue 26: doctor's secret check covers a secret that does not exist yet.
/// The SQLite store is configured inside a directory confined runs are shown
/// (`sandbox.readable_paths`) and does not exist when doctor checks it: the
/// check says, per path, that its directory is hidden (from a build and
/// from the agent, each probed confined), and the probe could not create
/// it. A store directly in the shown directory, which cannot be hidden
/// whole, fails the check with what to do.
#[test]
fn doctor_says_how_a_store_that_does_not_exist_yet_is_kept_from_confined_runs() {
    let Some(claude) = review_testkit::tools::claude_for_test() else {
        return;
    };
    let sim = GithubSim::start().unwrap();
    let bot = sim.user("review-bot");
    let dir = tempfile::tempdir().unwrap();
    let tools = dir.path().join("tools");
    std::fs::create_dir_all(tools.join("data")).unwrap();
    let doctor = |store: &Path| {
        let config = dir.path().join("review-bot.toml");
        std::fs::write(
            &config,
            format!(
                "work_dir = \"{work}\"\n\n[agent]\nclaude_path = \"{claude}\"\n\n[sandbox]\nreadable_paths = [\"{tools}\"]\n",
                work = dir.path().join("work").display(),
                claude = claude.display(),
                tools = tools.display(),
            ),
        )
        .unwrap();
        let assert = doctor_against(dir.path(), &config, &sim, &bot, store).assert();
        let stdout = text(&assert.get_output().stdout);
        let bounds = stdout
            .lines()
            .find(|line| line.contains(" sandbox: resource bounds: "))
            .unwrap_or_else(|| panic!("no resource bounds in:\n{stdout}"));
        assert!(
            bounds.starts_with('✓') && bounds.contains("rlimits"),
            "{bounds}"
        );
        stdout
            .lines()
            .find(|line| line.contains(" sandbox: secret files hidden: "))
            .unwrap_or_else(|| panic!("no secret check in:\n{stdout}"))
            .to_owned()
    };

    let store = tools.join("data/store.sqlite3");
    let line = doctor(&store);
    let data = std::fs::canonicalize(tools.join("data")).unwrap();
    assert!(line.starts_with('✓'), "{line}");
    assert!(
        line.contains(&format!(
            "{store}, {store}-wal, {store}-shm, {store}-journal missing now, not creatable; \
             its directory {} is hidden",
            data.display(),
            store = store.display(),
        )),
        "{line}"
    );
    assert!(line.contains("review-bot.toml not readable"), "{line}");

    // Directly in the shown directory: it would be visible once made.
    let line = doctor(&tools.join("store.sqlite3"));
    assert!(line.starts_with('✗'), "{line}");
    assert!(line.contains("would read it once made"), "{line}");
    assert!(line.contains("move it out of"), "{line}");
}

#[test]
fn doctor_puts_confined_runs_in_cgroups_of_their_own_where_sandbox_cgroup_names_a_directory() {
    let Some(claude) = review_testkit::tools::claude_for_test() else {
        return;
    };
    let Some(parent) = TestCgroup::new(review_sandbox::cgroups::cgroup2_mount_point(), "doctor")
    else {
        return;
    };
    let sim = GithubSim::start().unwrap();
    let bot = sim.user("review-bot");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("review-bot.toml");
    std::fs::write(
        &config,
        format!(
            "work_dir = \"{work}\"\n\n[agent]\nclaude_path = \"{claude}\"\n",
            work = dir.path().join("work").display(),
            claude = claude.display(),
        ),
    )
    .unwrap();
    let doctor = |cgroup: &str| {
        doctor_against(
            dir.path(),
            &config,
            &sim,
            &bot,
            &dir.path().join("store.sqlite3"),
        )
        .env("REVIEW_BOT_SANDBOX_CGROUP", cgroup)
        .assert()
    };
    let bounds_line = |stdout: &str| {
        stdout
            .lines()
            .find(|line| line.contains(" sandbox: resource bounds: "))
            .unwrap_or_else(|| panic!("no resource bounds in:\n{stdout}"))
            .to_owned()
    };

    // Every confined probe of doctor's (builds, the agent's start) runs in
    // a cgroup of its own under the directory, and none is left.
    let runs = parent.path().join("runs");
    let assert = doctor(runs.to_str().unwrap()).code(0);
    let stdout = text(&assert.get_output().stdout);
    let line = bounds_line(&stdout);
    assert!(line.starts_with('✓'), "{line}");
    assert!(
        line.contains(&format!(
            "cgroup v2 (each run in a child cgroup of {})",
            runs.display()
        )),
        "{line}"
    );
    assert!(line.contains("files 8192 MiB (rlimit)"), "{line}");
    let left: Vec<_> = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .filter(|entry| entry.path().is_dir())
        .collect();
    assert!(left.is_empty(), "no run's cgroup is left: {left:?}");

    // A directory that cannot be one: a failed check naming the key.
    let assert = doctor("/proc/review-bot-runs").code(1);
    let stdout = text(&assert.get_output().stdout);
    let line = bounds_line(&stdout);
    assert!(line.starts_with('✗'), "{line}");
    assert!(stdout.contains("sandbox.cgroup"), "{stdout}");

    // Not a path, nor auto, nor off: a configuration error.
    let assert = doctor("cgroups-please").code(2);
    let stderr = text(&assert.get_output().stderr);
    assert!(
        stderr.contains("sandbox.cgroup: `cgroups-please` is neither"),
        "{stderr}"
    );
}
