//! review-bot's integration tests: the real binary against real files and real git.

mod build_sources;
mod cost;
mod daemon;
mod discover;
mod doctor;
mod eval;
mod findings;
mod git_paths;
mod mcp;
mod mcp_inspector;
mod mcp_live;
mod panel;
mod platform;
mod replies;
mod review;
mod review_local;
mod run;
mod step;

use std::path::Path;
use std::process::Command;

use review_testkit::github::{GithubSim, SimUser};
use review_testkit::model::RecordedRequest;
use serde_json::Value;

/// The bot's login on the simulator in the end-to-end tests.
pub const BOT: &str = "review-bot";

/// The real binary as the end-to-end tests run it, in `dir`, with an
/// environment built from nothing but what it needs: the simulator as `bot`
/// (no write spacing), the scripted model at `model_url`, the pinned CLI
/// (`/usr/bin/false` where it is not installed), `dir/home` as `HOME`, the
/// work directory `dir/work` and the store `dir/store.sqlite3`, no agent
/// retries, five-minute agent and build timeouts, a commit identity. Add
/// the subcommand and its arguments; a later `env` of the same name wins.
pub fn bot_command(dir: &Path, sim: &GithubSim, bot: &SimUser, model_url: &str) -> Command {
    let claude = review_testkit::tools::claude_binary()
        .unwrap_or_else(|_| std::path::PathBuf::from("/usr/bin/false"));
    let mut command = Command::new(env!("CARGO_BIN_EXE_review-bot"));
    command
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("REVIEW_BOT_GITHUB_TOKEN", &bot.token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_GITHUB_BOT_LOGIN", BOT)
        .env("REVIEW_BOT_GITHUB_WRITE_SPACING_MS", "0")
        .env("REVIEW_BOT_WORK_DIR", dir.join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.join("store.sqlite3").display()),
        )
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", claude)
        .env("REVIEW_BOT_AGENT_MAX_RETRIES", "0")
        .env("REVIEW_BOT_AGENT_TIMEOUT_SECS", "300")
        .env("REVIEW_BOT_REVIEW_BUILD_TIMEOUT_SECS", "300")
        .env("REVIEW_BOT_GIT_AUTHOR_NAME", "Review Bot")
        .env("REVIEW_BOT_GIT_AUTHOR_EMAIL", "bot@example.com")
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-server")
        .env("ANTHROPIC_BASE_URL", model_url);
    command
}

/// A README documenting `sh build.sh` and `sh test.sh` under Build and Test
/// headings: what the build gate runs.
pub const BUILD_AND_TEST_README: &str =
    "# widgets\n\n## Build\n\n```sh\nsh build.sh\n```\n\n## Test\n\n```sh\nsh test.sh\n```\n";

/// 40 lines of Rust; line 5 is `line_five`, what the pull requests change.
pub fn library(line_five: &str) -> String {
    (1..=40)
        .map(|line| {
            if line == 5 {
                format!("{line_five}\n")
            } else {
                format!("pub fn line_{line}() {{}}\n")
            }
        })
        .collect()
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The id of the first comment the agent's `github_get_pr_comments` listed
/// whose body contains `needle`.
pub fn listed_comment(request: &RecordedRequest, needle: &str) -> Option<u64> {
    request
        .all_tool_results()
        .iter()
        .filter(|result| result.tool_name.as_deref() == Some("mcp__review__github_get_pr_comments"))
        .filter_map(|result| serde_json::from_str::<Value>(&result.text_without_reminders()).ok())
        .flat_map(|listed| listed["comments"].as_array().cloned().unwrap_or_default())
        .find(|comment| {
            comment["body"]
                .as_str()
                .is_some_and(|body| body.contains(needle))
        })
        .and_then(|comment| comment["id"].as_u64())
}

/// The `review-bot` binary, with logs quiet so snapshots only see our output.
pub fn review_bot(dir: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("review-bot").expect("the binary is built");
    command.current_dir(dir).env_remove("REVIEW_BOT_LOG");
    command
}

/// Runs git in `dir` and returns its standard output; fails the test on error.
pub fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(git_bytes(dir, args)).expect("git prints UTF-8 here")
}

/// Runs git in `dir` and returns its standard output as bytes (file names
/// need not be UTF-8); fails the test on error.
pub fn git_bytes(dir: &Path, args: &[&str]) -> Vec<u8> {
    let output = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(["-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git is installed (apt-get install git)");
    assert!(
        output.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// A file under `crates/review-core/tests/fixtures`.
pub fn core_fixture(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../review-core/tests/fixtures")
        .join(path);
    std::fs::read_to_string(&full).unwrap_or_else(|error| panic!("{}: {error}", full.display()))
}

/// Output text as UTF-8.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("UTF-8 output")
}
