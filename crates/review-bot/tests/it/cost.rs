//! The agent's cost shown and capped (issue 28 item 5), end to end: the
//! real binary (`step`, `review`) against the GitHub simulator, the real
//! Claude Code CLI pointed at the scripted model (whose `usage` the CLI turns
//! into `total_cost_usd`), real bubblewrap and a real SQLite store — which
//! the tests also fill with what earlier runs of the pull request cost, as a
//! bot that ran before would have left it.
//!
//! The tests skip (saying why) without the pinned CLI, unless
//! `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`.

use std::process::{Output, Stdio};
use std::time::Duration;

use review_store::{AgentPass, JobKind, NewRun, Store};
use review_testkit::github::{GithubSim, PullRequestHandle, SimUser};
use review_testkit::model::{ModelServer, Script, Turn};
use tempfile::TempDir;

use crate::{BUILD_AND_TEST_README as README, library};

/// The bot's login on the simulator.
const BOT: &str = "review-bot";

/// `acme/widgets` with a documented build and test, a pull request changing
/// line 5 of `src/lib.rs` labelled `bot-review-needed`, the model server.
struct World {
    sim: GithubSim,
    bot: SimUser,
    pull: PullRequestHandle,
    model: ModelServer,
    dir: TempDir,
}

impl World {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    async fn start(script: Script) -> Option<Self> {
        review_testkit::tools::claude_for_test()?;
        let sim = GithubSim::start().expect("the simulator starts");
        let bot = sim.user(BOT);
        let repo = sim
            .repo("acme/widgets")
            .file("README.md", README)
            .file("build.sh", "echo building\n")
            .file("test.sh", "echo tests pass\n")
            .file("src/lib.rs", &library("pub fn five() -> u32 { 5 }"))
            .create()
            .expect("the repository is created");
        repo.add_collaborator(BOT, "write").unwrap();
        let pull = repo
            .pull_request("feature")
            .modify("src/lib.rs", &library("pub fn five() -> u32 { 5 + 1 }"))
            .title("Make five six")
            .label("bot-review-needed")
            .open()
            .expect("the pull request opens");
        let model = ModelServer::start(script)
            .await
            .expect("the model server starts");
        Some(Self {
            sim,
            bot,
            pull,
            model,
            dir: tempfile::tempdir().unwrap(),
        })
    }

    fn database_url(&self) -> String {
        format!(
            "sqlite://{}",
            self.dir.path().join("store.sqlite3").display()
        )
    }

    /// `review-bot SUBCOMMAND acme/widgets#N` with an environment built from
    /// nothing but what it needs, plus `environment`, run to its end.
    async fn run(&self, subcommand: &str, environment: &[(&str, &str)]) -> Output {
        let mut command = crate::bot_command(
            self.dir.path(),
            &self.sim,
            &self.bot,
            &self.model.base_url(),
        );
        command
            .arg(subcommand)
            .arg(format!("acme/widgets#{}", self.pull.number()))
            .envs(environment.iter().copied())
            .stdin(Stdio::null());
        tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
            .await
            .unwrap()
    }

    /// Records, in the bot's store, a finished fix run of `number` whose one
    /// agent pass cost `usd` (now, by the store's clock).
    async fn spent(&self, number: u64, key: &str, usd: f64) {
        let store = self.store().await;
        let run = store
            .start_run(&NewRun {
                key,
                review_id: None,
                repository: "acme/widgets",
                pull_request: number,
                head_sha: "0123456789abcdef0123456789abcdef01234567",
                kind: JobKind::Write,
            })
            .await
            .unwrap();
        store
            .record_agent_pass(
                run,
                &AgentPass {
                    name: "code-fix".to_owned(),
                    transcript_path: None,
                    session_id: None,
                    turns: Some(12),
                    cost_usd: Some(usd),
                    duration: Some(Duration::from_secs(95)),
                },
            )
            .await
            .unwrap();
        store.finish_run(run, "pushed").await.unwrap();
        store.close().await;
    }

    async fn store(&self) -> Store {
        std::fs::create_dir_all(self.dir.path()).unwrap();
        Store::open(&self.database_url())
            .await
            .expect("the store opens")
    }

    fn labels(&self) -> Vec<String> {
        let mut labels = self.pull.labels().unwrap();
        labels.sort();
        labels
    }

    fn set_label(&self, label: &str) {
        for old in self.pull.labels().unwrap() {
            self.pull.remove_label(&old).unwrap();
        }
        self.pull.add_label(label).unwrap();
    }

    fn bot_comments(&self) -> Vec<review_testkit::github::IssueComment> {
        self.pull
            .issue_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| comment.user == BOT)
            .collect()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Both passes find nothing: an LGTM review.
fn quiet_review() -> Script {
    Script::new([
        Turn::text("Architecture pass done: nothing to say."),
        Turn::text("Detailed pass done: nothing to say."),
    ])
}

/// The dollars after `prefix` in `text` (`$0.42` → 0.42).
fn dollars_after(text: &str, prefix: &str) -> f64 {
    let start = text
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} in {text}"))
        + prefix.len();
    text[start..]
        .trim_start_matches('$')
        .split(|character: char| !(character.is_ascii_digit() || character == '.'))
        .next()
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("a sum after {prefix:?} in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_body_ends_with_the_cycles_cost_and_the_pull_requests_total() {
    let Some(world) = World::start(quiet_review()).await else {
        return;
    };
    // A fix earlier on this pull request cost $1.50; another pull request's
    // spend is not this one's.
    world.spent(world.pull.number(), "earlier-fix", 1.5).await;
    world
        .spent(world.pull.number() + 100, "other-pull", 7.0)
        .await;
    // Caps far above the spend: the review runs as without them.
    let output = world
        .run(
            "step",
            &[
                ("REVIEW_BOT_AGENT_MAX_COST_PER_PR_USD", "100"),
                ("REVIEW_BOT_AGENT_MAX_COST_PER_DAY_USD", "1000"),
            ],
        )
        .await;
    assert!(output.status.success(), "{}", stderr(&output));

    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let body = &reviews[0].body;
    // The cost line is the body's last paragraph before the footer.
    let paragraphs: Vec<&str> = body.trim_end().split("\n\n").collect();
    let [.., line, footer] = paragraphs.as_slice() else {
        panic!("{body}");
    };
    assert!(footer.starts_with("<sub>review::"), "{body}");
    assert!(line.starts_with("Agent: $"), "{body}");
    assert!(line.contains(" turns, "), "{line}");
    assert!(line.contains("s this cycle · $"), "{line}");
    assert!(line.ends_with(" on this pull request so far"), "{line}");

    // The cycle's figures are the CLI's, from the model's usage; the total is
    // the store's: the earlier fix plus this review.
    eprintln!("the review body's cost line: {line}");
    let cycle = dollars_after(line, "Agent: ");
    let total = dollars_after(line, "this cycle · ");
    assert!(cycle > 0.0, "{line}");
    assert!((total - (1.5 + cycle)).abs() < 0.011, "{line}");
    let store = world.store().await;
    let recorded = store
        .pull_request_cost("acme/widgets", world.pull.number())
        .await
        .unwrap();
    store.close().await;
    assert_eq!(recorded.passes, 3, "{recorded:?}");
    assert!(
        (recorded.cost_usd - total).abs() < 0.011,
        "{recorded:?} {line}"
    );
    let turns: u64 = line
        .split(", ")
        .nth(1)
        .and_then(|turns| turns.strip_suffix(" turns"))
        .and_then(|turns| turns.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert_eq!(recorded.turns, 12 + turns, "{recorded:?} {line}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_over_its_cap_is_handed_over_without_an_agent_run_and_once() {
    let Some(world) = World::start(quiet_review()).await else {
        return;
    };
    world.spent(world.pull.number(), "earlier-fix", 2.0).await;
    let capped = [("REVIEW_BOT_AGENT_MAX_COST_PER_PR_USD", "1.0")];

    let before = world.sim.requests().len();
    let output = world.run("step", &capped).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert!(log.contains("reached its agent cost cap"), "{log}");
    let requests: Vec<String> = world.sim.requests()[before..]
        .iter()
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    eprintln!(
        "GitHub requests of a step handing over at the cap: {} ({requests:?})",
        requests.len()
    );
    assert!(
        world.model.all_requests().is_empty(),
        "the agent must not run"
    );
    assert_eq!(world.labels(), ["bot-human-intervention"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let comment = &comments[0].body;
    for expected in [
        "$2.00",
        "$1.00",
        "`agent.max_cost_per_pr_usd`",
        "did not start the review",
        "<!-- review-bot:cost-cap -->",
    ] {
        assert!(comment.contains(expected), "{expected}: {comment}");
    }
    assert!(world.pull.reviews().unwrap().is_empty());

    // A person puts the trigger back without the cap being raised: handed
    // over again, and the comment is found, not posted again.
    world.set_label("bot-review-needed");
    let output = world.run("step", &capped).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("already posted"),
        "{}",
        stderr(&output)
    );
    assert_eq!(world.bot_comments().len(), 1);
    assert_eq!(world.labels(), ["bot-human-intervention"]);
    assert!(world.model.all_requests().is_empty());

    // `review` by hand is held the same way.
    let output = world.run("review", &capped).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("cost cap"), "{}", stderr(&output));
    assert_eq!(world.bot_comments().len(), 1);
    assert!(world.model.all_requests().is_empty());

    // The operator raises the cap and a person relabels: their decision wins.
    world.set_label("bot-review-needed");
    let output = world
        .run("step", &[("REVIEW_BOT_AGENT_MAX_COST_PER_PR_USD", "10")])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!world.model.requests().is_empty());
    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "{}", stderr(&output));
    assert!(reviews[0].body.contains("on this pull request so far"));
    assert_eq!(world.bot_comments().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_day_cap_step_says_it_waits_and_tells_the_pull_request_once() {
    let Some(world) = World::start(quiet_review()).await else {
        return;
    };
    // Today, another pull request of the repository cost $2.
    world
        .spent(world.pull.number() + 1, "other-pull", 2.0)
        .await;
    let capped = [("REVIEW_BOT_AGENT_MAX_COST_PER_DAY_USD", "1.5")];

    let output = world.run("step", &capped).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert!(log.contains("waits for the next day"), "{log}");
    assert!(log.contains("`agent.max_cost_per_day_usd`"), "{log}");
    assert!(
        world.model.all_requests().is_empty(),
        "the agent must not run"
    );
    assert_eq!(world.labels(), ["bot-review-needed"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let status = comments[0].clone();
    for expected in ["waits for tomorrow", "$2.00", "$1.50", "bot-review-needed"] {
        assert!(
            status.body.contains(expected),
            "{expected}: {}",
            status.body
        );
    }

    // The next step the same day: still waiting, the pull request is not
    // told again — nothing written, and the cap check asked GitHub nothing
    // (the one request left is the step's own read of the pull request).
    let before = world.sim.requests().len();
    let output = world.run("step", &capped).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("waits for the next day"));
    let requests: Vec<String> = world.sim.requests()[before..]
        .iter()
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    eprintln!(
        "GitHub requests of a step waiting for the next day: {} ({requests:?})",
        requests.len()
    );
    assert!(
        requests.iter().all(|request| request.starts_with("GET ")),
        "{requests:?}"
    );
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1);
    assert_eq!(comments[0].body, status.body);
    assert_eq!(comments[0].updated_at, status.updated_at);
    assert!(world.model.all_requests().is_empty());
    assert_eq!(world.labels(), ["bot-review-needed"]);
}
