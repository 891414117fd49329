//! What one review cycle costs besides the agent: `review-bot review` run as a
//! user runs it, against the GitHub simulator (real git underneath) and the
//! real Claude Code CLI pointed at the scripted model server, with the build
//! gate and the agent confined by bubblewrap.
//!
//! For each round a fresh pull request is reviewed twice — the first cycle on
//! a new work directory (the mirror is cloned), the second after a new commit
//! (the mirror is fetched incrementally, conditional requests can hit) — and
//! the bench prints, per cycle: wall time, the agent's own time (as the CLI
//! reports it), the bot's overhead (the difference), GitHub requests and
//! primary rate-limit points from the simulator's log, per operation.
//!
//! `cargo bench -p review-bot --bench review_cycle` (needs the pinned CLI:
//! `scripts/install-test-deps`). `ROUNDS=N` changes the number of rounds (5).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use review_testkit::github::GithubSim;
use review_testkit::model::{ModelServer, Script, ToolCall, Turn};
use serde_json::json;

const README: &str =
    "# widgets\n\n## Build\n\n```sh\nsh build.sh\n```\n\n## Test\n\n```sh\nsh test.sh\n```\n";

/// A 200-line library, with line 5 changed on the branch.
fn library(version: u32) -> String {
    (1..=200)
        .map(|line| match (line, version) {
            (5, 1) => "pub fn five() -> u32 { 6 }\n".to_owned(),
            (5, 2) => "pub fn five() -> u32 { 5 }\n".to_owned(),
            _ => format!("pub fn line_{line}() {{}}\n"),
        })
        .collect()
}

fn tool(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall::new(format!("mcp__review__{name}"), input)
}

/// Two cycles' worth of turns: each pass lists the threads, the detailed
/// pass leaves one inline and one off-diff finding.
fn script() -> Script {
    let cycle = || {
        [
            Turn::tools([tool("github_get_pr_comments", json!({}))]),
            Turn::tools([tool(
                "leave_general_comment",
                json!({"message": "The change keeps the module's shape."}),
            )]),
            Turn::text("Architecture pass done."),
            Turn::tools([
                tool(
                    "leave_inline_comment",
                    json!({"path": "src/lib.rs", "line": 5, "message": "`five` should say what it returns.", "severity": "clarity", "confidence": 70}),
                ),
                tool(
                    "leave_inline_comment",
                    json!({"path": "src/lib.rs", "line": 150, "message": "`line_150` is unused.", "severity": "improvement", "confidence": 50}),
                ),
            ]),
            Turn::text("Detailed pass done."),
        ]
    };
    Script::new(cycle().into_iter().chain(cycle()))
}

/// One cycle's figures.
struct Cycle {
    wall: Duration,
    agent: Duration,
    requests: u64,
    points: u64,
    by_operation: BTreeMap<String, (u64, u64)>,
}

fn run_review(
    sim: &GithubSim,
    model: &ModelServer,
    token: &str,
    directory: &Path,
    claude: &Path,
) -> Cycle {
    sim.clear_requests();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .args(["review", "acme/widgets#1"])
        .current_dir(directory)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", directory.join("home"))
        .env("REVIEW_BOT_GITHUB_TOKEN", token)
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env("REVIEW_BOT_GITHUB_BOT_LOGIN", "review-bot")
        .env("REVIEW_BOT_WORK_DIR", directory.join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", directory.join("store.sqlite3").display()),
        )
        .env("REVIEW_BOT_AGENT_CLAUDE_PATH", claude)
        .env("REVIEW_BOT_AGENT_MAX_RETRIES", "0")
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-server")
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .stdin(Stdio::null())
        .output()
        .expect("review-bot runs");
    let wall = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "review failed: {stderr}");
    // "… · agent $0.03, 5 turns, 0.9 s · wall …"
    let agent_seconds: f64 = stderr
        .lines()
        .last()
        .and_then(|line| line.split(" · ").find(|part| part.starts_with("agent $")))
        .and_then(|part| part.rsplit(", ").next())
        .and_then(|seconds| seconds.trim_end_matches(" s").parse().ok())
        .unwrap_or_else(|| panic!("no agent time in the summary: {stderr}"));
    let counters = sim.counters();
    Cycle {
        wall,
        agent: Duration::from_secs_f64(agent_seconds),
        requests: counters.requests,
        points: counters.cost,
        by_operation: counters
            .by_operation
            .into_iter()
            .map(|(operation, counter)| (operation, (counter.requests, counter.cost)))
            .collect(),
    }
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn main() {
    let Ok(claude) = review_testkit::tools::claude_binary() else {
        eprintln!("the pinned Claude Code CLI is missing: run scripts/install-test-deps");
        return;
    };
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(5);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut first = Vec::new();
    let mut second = Vec::new();
    for _ in 0..rounds {
        let sim = GithubSim::start().unwrap();
        let bot = sim.user("review-bot");
        let repo = sim
            .repo("acme/widgets")
            .file("README.md", README)
            .file("build.sh", "echo building\n")
            .file("test.sh", "echo tests pass\n")
            .file("src/lib.rs", &library(0))
            .create()
            .unwrap();
        repo.add_collaborator("review-bot", "write").unwrap();
        let pull = repo
            .pull_request("feature")
            .modify("src/lib.rs", &library(1))
            .title("Make five six")
            .label("bot-review-needed")
            .open()
            .unwrap();
        let model = runtime.block_on(ModelServer::start(script())).unwrap();
        let directory = tempfile::tempdir().unwrap();
        first.push(run_review(
            &sim,
            &model,
            &bot.token,
            directory.path(),
            &claude,
        ));
        pull.new_commit()
            .unwrap()
            .modify("src/lib.rs", &library(2))
            .commit()
            .unwrap();
        pull.add_label("bot-review-needed").unwrap();
        second.push(run_review(
            &sim,
            &model,
            &bot.token,
            directory.path(),
            &claude,
        ));
    }
    for (name, cycles) in [
        ("first cycle (new mirror)", &first),
        ("second cycle (new head)", &second),
    ] {
        let wall = median(cycles.iter().map(|cycle| cycle.wall).collect());
        let agent = median(cycles.iter().map(|cycle| cycle.agent).collect());
        let overhead = median(
            cycles
                .iter()
                .map(|cycle| cycle.wall.saturating_sub(cycle.agent))
                .collect(),
        );
        let last = cycles.last().unwrap();
        println!(
            "{name}: wall {:.2} s, agent {:.2} s, overhead {:.2} s (medians of {rounds}); \
             {} GitHub requests, {} rate-limit points",
            wall.as_secs_f64(),
            agent.as_secs_f64(),
            overhead.as_secs_f64(),
            last.requests,
            last.points,
        );
        for (operation, (requests, points)) in &last.by_operation {
            println!("    {operation}: {requests} requests, {points} points");
        }
    }
}
