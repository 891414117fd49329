//! Where the build commands come from (issue 24, item 1), end to end: the real
//! binary against the GitHub simulator (real git underneath), the real Claude
//! Code CLI pointed at the scripted model server, real bubblewrap for the
//! gate. The operator's `[repositories."OWNER/REPO".build]` beats the base
//! branch's `.review-bot.toml`, which beats the README; the file is read from
//! the base commit, never from the pull request's head; a file the bot cannot
//! use is reported on the pull request once.
//!
//! Every script prints a marker, so the build logs say which commands ran.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use review_testkit::github::{GithubSim, PullRequestHandle, SimUser};
use review_testkit::model::{ModelServer, Script, Turn};
use tempfile::TempDir;

use crate::{BUILD_AND_TEST_README, library};

/// The bot's login on the simulator.
const BOT: &str = "review-bot";

/// A repository whose README documents `sh build.sh` and `sh test.sh`, with
/// `base_file` as its `.review-bot.toml`, and one pull request changing
/// `src/lib.rs` (and writing `head_file` as `.review-bot.toml`).
struct World {
    sim: GithubSim,
    model: ModelServer,
    bot: SimUser,
    pull: PullRequestHandle,
    dir: TempDir,
}

impl World {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    async fn start(
        base_file: Option<&str>,
        head_file: Option<&str>,
        reviews: usize,
    ) -> Option<Self> {
        review_testkit::tools::claude_for_test()?;
        let sim = GithubSim::start().expect("the simulator starts");
        let bot = sim.user(BOT);
        let mut repo = sim
            .repo("acme/widgets")
            .file("README.md", BUILD_AND_TEST_README)
            .file("build.sh", "echo building\n")
            .file("test.sh", "echo readme-tests-ran\n")
            .executable_file("check.sh", "#!/bin/sh\necho check-sh-ran\n")
            .file("operator.sh", "echo operator-commands-ran\n")
            .file("src/lib.rs", &library("pub fn line_5() {}"));
        if let Some(text) = base_file {
            repo = repo.file(".review-bot.toml", text);
        }
        let repo = repo.create().expect("the repository is created");
        repo.add_collaborator(BOT, "write").unwrap();
        let mut pull = repo
            .pull_request("feature")
            .modify("src/lib.rs", &library("pub fn five() -> u32 { 6 }"));
        if let Some(text) = head_file {
            pull = if base_file.is_some() {
                pull.modify(".review-bot.toml", text)
            } else {
                pull.add(".review-bot.toml", text)
            };
        }
        let pull = pull
            .title("Make five six")
            .label("bot-review-needed")
            .open()
            .expect("the pull request opens");
        // Each review: two passes with nothing to say.
        let turns = (0..reviews).flat_map(|_| {
            [
                Turn::text("No architectural concerns."),
                Turn::text("No issues found."),
            ]
        });
        let model = ModelServer::start(Script::new(turns))
            .await
            .expect("the model server starts");
        Some(Self {
            sim,
            model,
            bot,
            pull,
            dir: tempfile::tempdir().unwrap(),
        })
    }

    fn work_dir(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// `review-bot review acme/widgets#N ARGUMENTS` with an environment built
    /// from nothing, and `config` as its configuration file.
    async fn review(&self, arguments: &[&str], config: Option<&str>) -> Output {
        let mut command = crate::bot_command(
            self.dir.path(),
            &self.sim,
            &self.bot,
            &self.model.base_url(),
        );
        command
            .arg("review")
            .arg(format!("acme/widgets#{}", self.pull.number()))
            .args(arguments)
            .stdin(Stdio::null());
        if let Some(text) = config {
            let path = self.dir.path().join("review-bot.toml");
            std::fs::write(&path, text).unwrap();
            command.env("REVIEW_BOT_CONFIG", path);
        }
        tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
            .await
            .unwrap()
    }

    /// Every build log the gate wrote, concatenated.
    fn build_logs(&self) -> String {
        let mut text = String::new();
        let mut pending = vec![self.work_dir().join("runs")];
        while let Some(directory) = pending.pop() {
            let Ok(entries) = std::fs::read_dir(&directory) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                    pending.push(path);
                } else if directory.ends_with("build")
                    && path.extension().is_some_and(|extension| extension == "log")
                {
                    text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
                }
            }
        }
        text
    }

    /// The bot's review bodies.
    fn review_bodies(&self) -> Vec<String> {
        self.pull
            .reviews()
            .unwrap()
            .into_iter()
            .filter(|review| review.user == BOT)
            .map(|review| review.body)
            .collect()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_base_branch_file_runs_and_the_pull_request_cannot_change_it() {
    let Some(world) = World::start(
        Some("[build]\ntest = [\"./check.sh\"]\n"),
        Some("[build]\ntest = [\"echo head-file-ran\"]\n"),
        1,
    )
    .await
    else {
        return;
    };
    let output = world.review(&[], None).await;
    let progress = stderr(&output);
    assert!(output.status.success(), "{progress}");
    let logs = world.build_logs();
    assert!(logs.contains("check-sh-ran"), "{logs}");
    assert!(
        !logs.contains("head-file-ran"),
        "the head's file ran: {logs}"
    );
    assert!(!logs.contains("readme-tests-ran"), "the README ran: {logs}");
    assert!(
        progress.contains("1 command from .review-bot.toml passed"),
        "{progress}"
    );
    let bodies = world.review_bodies();
    assert_eq!(bodies.len(), 1, "{bodies:?}");
    assert!(
        bodies[0].contains("from .review-bot.toml)"),
        "{}",
        bodies[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_key_is_reported_once_and_the_readme_runs() {
    let Some(world) = World::start(Some("[build]\ntset = [\"./check.sh\"]\n"), None, 2).await
    else {
        return;
    };
    let output = world.review(&[], None).await;
    let progress = stderr(&output);
    assert!(output.status.success(), "{progress}");
    let logs = world.build_logs();
    assert!(logs.contains("readme-tests-ran"), "{logs}");
    assert!(!logs.contains("check-sh-ran"), "{logs}");
    assert!(
        progress.contains("2 commands from README.md passed"),
        "{progress}"
    );
    let problem = |world: &World| {
        world
            .pull
            .issue_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| comment.body.contains(".review-bot.toml"))
            .map(|comment| comment.body)
            .collect::<Vec<_>>()
    };
    let comments = problem(&world);
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].contains("build.tset"), "{}", comments[0]);
    assert!(comments[0].contains("line 2"), "{}", comments[0]);
    assert!(comments[0].contains("README.md"), "{}", comments[0]);
    assert!(comments[0].contains("thread::"), "{}", comments[0]);
    let bodies = world.review_bodies();
    assert!(
        bodies[0].contains(".review-bot.toml` cannot be used"),
        "{}",
        bodies[0]
    );

    // A second review of the same head: the comment is found, not posted again.
    let output = world.review(&["--force"], None).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(world.review_bodies().len(), 2);
    assert_eq!(problem(&world).len(), 1, "{:?}", problem(&world));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_commands_beat_the_file() {
    let Some(world) = World::start(Some("[build]\ntest = [\"./check.sh\"]\n"), None, 1).await
    else {
        return;
    };
    let config = "[repositories.\"Acme/Widgets\".build]\ntest = [\"sh operator.sh\"]\n\
                  environment = { GREETING = \"operator-environment\" }\n";
    let output = world.review(&[], Some(config)).await;
    let progress = stderr(&output);
    assert!(output.status.success(), "{progress}");
    let logs = world.build_logs();
    assert!(logs.contains("operator-commands-ran"), "{logs}");
    assert!(!logs.contains("check-sh-ran"), "{logs}");
    assert!(
        progress.contains("1 command from configuration passed"),
        "{progress}"
    );
}

#[test]
fn doctor_names_a_missing_program_of_the_default_branchs_commands() {
    let Some(claude) = review_testkit::tools::claude_for_test() else {
        return;
    };
    let sim = GithubSim::start().expect("the simulator starts");
    let bot = sim.user(BOT);
    sim.repo("acme/gadgets")
        .file("README.md", BUILD_AND_TEST_README)
        .file(
            ".review-bot.toml",
            "[build]\nsetup = [\"sh -c true\"]\ntest = [\"no-such-tool-4711 --check\"]\n",
        )
        .create()
        .expect("the repository is created");
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .args(["doctor", "--repo", "acme/gadgets"])
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path().join("home"))
        .env("REVIEW_BOT_GITHUB_TOKEN", &bot.token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_WORK_DIR", dir.path().join("work"))
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", claude)
        .env("ANTHROPIC_API_KEY", "sk-ant-not-a-real-key")
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.path().join("store.sqlite3").display()),
        )
        .stdin(Stdio::null())
        .output()
        .expect("review-bot runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}{}", stderr(&output));
    let line = stdout
        .lines()
        .find(|line| line.starts_with("✗ build commands:"))
        .unwrap_or_else(|| panic!("no build commands line: {stdout}"));
    assert!(line.contains("acme/gadgets"), "{line}");
    assert!(line.contains("from .review-bot.toml"), "{line}");
    assert!(line.contains("`no-such-tool-4711` is not found"), "{line}");
    assert!(!line.contains("`sh` is not found"), "{line}");
    assert!(line.contains("→ install what is missing"), "{line}");
}

#[test]
fn discover_commands_honours_the_directorys_file_before_the_readme() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("README.md"), BUILD_AND_TEST_README).unwrap();
    std::fs::write(
        dir.path().join(".review-bot.toml"),
        "[build]\nsetup = [\"npm ci\"]\ntest = [\"npm test\"]\nenvironment = { CI = \"1\" }\n",
    )
    .unwrap();
    let discover = || {
        let output = crate::review_bot(dir.path())
            .arg("discover-commands")
            .arg(dir.path())
            .assert()
            .success();
        let stdout: serde_json::Value =
            serde_json::from_slice(&output.get_output().stdout).unwrap();
        (stdout, stderr(output.get_output()))
    };
    let (found, _) = discover();
    assert_eq!(
        found,
        serde_json::json!({"setup": ["npm ci"], "build": [], "test": ["npm test"], "environment": {"CI": "1"}, "source": ".review-bot.toml"})
    );
    // A file that cannot be used: a warning, and the README.
    std::fs::write(
        dir.path().join(".review-bot.toml"),
        "[build]\ntest = [\"npm test\"]\n[deploy]\n",
    )
    .unwrap();
    let (found, warning) = discover();
    assert_eq!(found["source"], "README.md");
    assert!(warning.contains("unknown key `deploy`"), "{warning}");
}
