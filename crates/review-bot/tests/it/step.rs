//! `review-bot step OWNER/REPO#N` end to end: the real binary against the
//! GitHub simulator (real git underneath, pushes included), the real Claude
//! Code CLI pointed at the scripted model server (which edits files with
//! Claude Code's own Read/Edit/Write tools and answers through the CLI's
//! `StructuredOutput` tool), real bubblewrap and a real SQLite store.
//!
//! The CI tests need no agent: they run whether or not the pinned CLI is
//! installed. The write-flow tests skip (saying why) without it, unless
//! `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use review_testkit::github::{GithubSim, PullRequestHandle, SimUser};
use review_testkit::model::{ModelServer, RecordedRequest, Script, ToolCall, Turn};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::{BUILD_AND_TEST_README as README, library, listed_comment};

/// The bot's login on the simulator.
const BOT: &str = "review-bot";

const ORIGINAL: &str = "pub fn five() -> u32 { 5 }";
const CHANGED: &str = "pub fn five() -> u32 { 5 + 1 }";
const FIXED: &str = "pub fn six() -> u32 { 5 + 1 }";

/// One scenario: `acme/widgets` with a README documenting `sh build.sh` and
/// `sh test.sh`, a pull request changing line 5 of `src/lib.rs`, the bot a
/// collaborator with write access.
struct World {
    sim: GithubSim,
    bot: SimUser,
    pull: PullRequestHandle,
    model: Option<ModelServer>,
    dir: TempDir,
}

impl World {
    fn new(label: &str, test_script: &str) -> Self {
        Self::new_with(label, |_| test_script.to_owned())
    }

    /// [`World::new`] with a `test.sh` written once the simulator is up (it may
    /// act on the simulator as a person does, while a step runs).
    fn new_with(label: &str, test_script: impl FnOnce(&GithubSim) -> String) -> Self {
        let sim = GithubSim::start().expect("the simulator starts");
        let bot = sim.user(BOT);
        let test_script = test_script(&sim);
        let repo = sim
            .repo("acme/widgets")
            .file("README.md", README)
            .file("build.sh", "echo building\n")
            .file("test.sh", &test_script)
            .file("src/lib.rs", &library(ORIGINAL))
            .create()
            .expect("the repository is created");
        repo.add_collaborator(BOT, "write").unwrap();
        let mut builder = repo
            .pull_request("feature")
            .modify("src/lib.rs", &library(CHANGED))
            .title("Make five six");
        if !label.is_empty() {
            builder = builder.label(label);
        }
        let pull = builder.open().expect("the pull request opens");
        Self {
            sim,
            bot,
            pull,
            model: None,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Starts the scripted model; `false` (after saying why) when the pinned
    /// CLI is not installed and not required.
    async fn start_model(&mut self, script: Script) -> bool {
        if review_testkit::tools::claude_for_test().is_none() {
            return false;
        }
        self.model = Some(
            ModelServer::start(script)
                .await
                .expect("the model server starts"),
        );
        true
    }

    fn model(&self) -> &ModelServer {
        self.model.as_ref().expect("the model server runs")
    }

    fn work_dir(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn command(&self, subcommand: &str) -> Command {
        let base_url = self
            .model
            .as_ref()
            .map_or_else(|| "http://127.0.0.1:9".to_owned(), ModelServer::base_url);
        let mut command = crate::bot_command(self.dir.path(), &self.sim, &self.bot, &base_url);
        command
            .arg(subcommand)
            .arg(format!("acme/widgets#{}", self.pull.number()))
            .stdin(Stdio::null());
        command
    }

    /// Runs `review-bot step acme/widgets#N` to its end, off the async runtime.
    async fn step(&self) -> Output {
        self.step_with(&[]).await
    }

    /// [`World::step`] with more environment variables.
    async fn step_with(&self, environment: &[(&str, &str)]) -> Output {
        let mut command = self.command("step");
        command.envs(environment.iter().copied());
        tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
            .await
            .unwrap()
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

    /// Posts a review as the bot, as an earlier review cycle would have:
    /// a body and one inline finding on line 5, with the bot's footers.
    /// Returns the inline comment's id.
    fn bot_review(&self, finding: &str) -> u64 {
        let review = uuid::Uuid::new_v4();
        let footer = |thread: uuid::Uuid| format!("<sub>review::{review} · thread::{thread}</sub>");
        self.pull
            .review(
                BOT,
                Some("COMMENT"),
                &format!("Findings below.\n\n{}", footer(uuid::Uuid::new_v4())),
                &[json!({
                    "path": "src/lib.rs",
                    "line": 5,
                    "side": "RIGHT",
                    "body": format!("{finding}\n\n{}", footer(uuid::Uuid::new_v4())),
                })],
            )
            .unwrap();
        self.pull
            .review_comments()
            .unwrap()
            .into_iter()
            .rev()
            .find(|comment| comment.body.contains(finding))
            .expect("the finding is posted")
            .id
    }

    fn bot_comments(&self) -> Vec<String> {
        self.pull
            .issue_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| comment.user == BOT)
            .map(|comment| comment.body)
            .collect()
    }

    /// `git show HEAD:PATH` of the pull request's head in the simulator.
    fn head_file(&self, path: &str) -> String {
        let head = self.pull.head_sha().unwrap();
        git(
            &self.pull.repo().git_dir(),
            &["show", &format!("{head}:{path}")],
        )
    }
}

fn git(git_dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg(format!("--git-dir={}", git_dir.display()))
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn mcp(name: &str, input: Value) -> ToolCall {
    ToolCall::new(format!("mcp__review__{name}"), input)
}

/// The agent's working directory, as Claude Code tells the model.
fn working_directory(request: &RecordedRequest) -> PathBuf {
    let text = format!("{}\n{}", request.system_text(), request.user_text());
    let line = text
        .lines()
        .find_map(|line| {
            line.trim()
                .trim_start_matches("- ")
                .strip_prefix("Primary working directory: ")
        })
        .expect("the CLI tells the model its working directory");
    PathBuf::from(line.trim())
}

/// Read then Edit `path` (relative to the agent's working directory).
fn edit_turns(path: &'static str, old: &'static str, new: &'static str) -> [Turn; 2] {
    [
        Turn::decide(move |request| {
            let file = working_directory(request).join(path);
            Turn::tool("Read", json!({ "file_path": file }))
        }),
        Turn::decide(move |request| {
            let file = working_directory(request).join(path);
            Turn::tool(
                "Edit",
                json!({ "file_path": file, "old_string": old, "new_string": new }),
            )
        }),
    ]
}

/// The code-fix answer through the CLI's `StructuredOutput` tool (which
/// ends the run: the model is not asked again).
fn answer(threads: &[u64], summary: &str) -> Turn {
    Turn::tool(
        "StructuredOutput",
        json!({ "threads_addressed": threads, "build_passed": true, "summary": summary }),
    )
}

/// The fix pass: read the threads, rename `five` to `six`, reply, answer.
fn fix_turns(comment_id: u64) -> Vec<Turn> {
    let mut turns = vec![Turn::tool(
        "mcp__review__github_get_pr_comments",
        json!({ "include_replied": true }),
    )];
    turns.extend(edit_turns("src/lib.rs", CHANGED, FIXED));
    turns.push(Turn::tools([mcp(
        "github_post_pr_reply",
        json!({ "comment_id": comment_id, "message": "Renamed `five` to `six` in src/lib.rs:5." }),
    )]));
    turns.push(answer(&[comment_id], "Renamed five to six."));
    turns
}

// ---------------------------------------------------------------------------
// Routing.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_bot_label_or_a_human_label_is_nothing_to_do() {
    for label in ["", "human-review-needed", "bot-human-intervention"] {
        let world = World::new(label, "echo ok\n");
        let output = world.step().await;
        assert!(output.status.success(), "{label}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("nothing to do"),
            "{label}: {}",
            stderr(&output)
        );
        let writes: Vec<_> = world
            .sim
            .requests()
            .into_iter()
            .filter(|request| request.method != "GET")
            .collect();
        assert!(writes.is_empty(), "{label}: {writes:?}");
    }
}

// ---------------------------------------------------------------------------
// The CI check.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_passed_with_checks_only_statuses_only_or_no_ci_asks_for_a_review() {
    for setup in ["checks", "statuses", "none"] {
        let world = World::new("bot-ci-pending", "echo ok\n");
        match setup {
            "checks" => {
                world
                    .pull
                    .add_check_run("build", "completed", Some("success"))
                    .unwrap();
                world
                    .pull
                    .add_check_run("docs", "completed", Some("skipped"))
                    .unwrap();
            }
            "statuses" => {
                world.pull.add_status("ci/test", "pending").unwrap();
                world.pull.add_status("ci/test", "success").unwrap();
            }
            _ => {}
        }
        let output = world.step().await;
        assert!(output.status.success(), "{setup}: {}", stderr(&output));
        assert!(
            stderr(&output).contains("CI passed"),
            "{setup}: {}",
            stderr(&output)
        );
        assert_eq!(world.labels(), ["bot-review-needed"], "{setup}");
        assert!(world.bot_comments().is_empty(), "{setup}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_failed_posts_one_comment_naming_each_failure_with_its_link() {
    let world = World::new("bot-ci-pending", "echo ok\n");
    let head = world.pull.head_sha().unwrap();
    world
        .pull
        .add_check_run("build", "completed", Some("failure"))
        .unwrap();
    world
        .pull
        .add_check_run("lint", "completed", Some("success"))
        .unwrap();
    world
        .pull
        .repo()
        .add_status(
            &head,
            "ci/test",
            "error",
            Some("https://ci.example.com/test/7"),
        )
        .unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = &comments[0];
    assert!(
        body.contains("`build`") && body.contains("failure"),
        "{body}"
    );
    assert!(
        body.contains("`ci/test`") && body.contains("error"),
        "{body}"
    );
    assert!(body.contains("(https://ci.example.com/test/7)"), "{body}");
    assert!(
        body.contains("https://ci.example.com/acme/widgets/runs/"),
        "{body}"
    );
    assert!(!body.contains("`lint`"), "{body}");
    assert!(
        body.contains("thread::") && !body.contains("review::"),
        "{body}"
    );

    // The same head again (the label put back by hand): no second comment.
    world.set_label("bot-ci-pending");
    let again = world.step().await;
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("posted before"),
        "{}",
        stderr(&again)
    );
    assert_eq!(world.bot_comments().len(), 1);
    assert_eq!(world.labels(), ["bot-changes-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_pending_waits_then_times_out_from_the_head_commits_date() {
    // Pending on a fresh commit: nothing happens.
    let world = World::new("bot-ci-pending", "echo ok\n");
    world
        .pull
        .add_check_run("build", "in_progress", None)
        .unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("CI pending"),
        "{}",
        stderr(&output)
    );
    assert_eq!(world.labels(), ["bot-ci-pending"]);
    assert!(world.bot_comments().is_empty());

    // The head commit two hours old, the timeout one hour: timed out.
    let old = chrono::Utc::now() - chrono::Duration::hours(2);
    world
        .pull
        .new_commit()
        .unwrap()
        .modify("build.sh", "echo building again\n")
        .date(old)
        .commit()
        .unwrap();
    world.pull.add_status("ci/slow", "pending").unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("timed out"), "{}", stderr(&output));
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].contains("CI timed out"), "{}", comments[0]);
    assert!(comments[0].contains("`ci/slow`"), "{}", comments[0]);
}

// ---------------------------------------------------------------------------
// The write flow.
// ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fix_is_committed_as_the_bot_pushed_and_replied_to_and_ci_is_next() {
    let mut world = World::new("bot-changes-needed", "echo tests pass\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    if !world.start_model(Script::new(fix_turns(finding))).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("pushed"), "{log}");
    for step in [
        "cycles",
        "checkout",
        "merge base",
        "code-fix pass",
        "changes",
        "build and test",
        "commit",
        "push",
        "post the replies",
        "labels",
    ] {
        assert!(
            log.contains(&format!("✓ {step} (")),
            "no step {step}: {log}"
        );
    }

    // One commit on top of the old head, by the bot's identity, with the fix only.
    let after = world.pull.head_sha().unwrap();
    assert_ne!(after, before);
    let git_dir = world.pull.repo().git_dir();
    let parents = git(&git_dir, &["rev-list", "--parents", "-n", "1", &after]);
    assert_eq!(
        parents.split_whitespace().nth(1),
        Some(before.as_str()),
        "{parents}"
    );
    let author = git(
        &git_dir,
        &["log", "-1", "--format=%an <%ae>|%cn <%ce>", &after],
    );
    assert_eq!(
        author.trim(),
        "Review Bot <bot@example.com>|Review Bot <bot@example.com>"
    );
    let changed = git(&git_dir, &["diff", "--name-only", &before, &after]);
    assert_eq!(changed.trim(), "src/lib.rs");
    assert!(world.head_file("src/lib.rs").contains(FIXED));
    let message = git(&git_dir, &["log", "-1", "--format=%B", &after]);
    assert!(message.starts_with("Address review comments"), "{message}");
    assert!(message.contains("Renamed five to six."), "{message}");

    // The reply, threaded under the finding, with the bot's footer.
    let replies: Vec<_> = world
        .pull
        .review_comments()
        .unwrap()
        .into_iter()
        .filter(|comment| comment.in_reply_to == Some(finding))
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].body.contains("Renamed `five` to `six`"));
    assert!(replies[0].body.contains("thread::"));
    assert_eq!(world.labels(), ["bot-ci-pending"]);

    // The answer came through the CLI's structured output.
    let offered = world.model().requests().iter().any(|request| {
        request
            .tool_names()
            .iter()
            .any(|name| name == "StructuredOutput")
    });
    assert!(offered, "the CLI did not offer StructuredOutput");
    assert_eq!(
        world.model().remaining_turns(),
        0,
        "a scripted turn was not used"
    );
    assert!(!log.contains("unstructured answer"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cycle_limit_a_human_is_asked_and_no_agent_runs() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    for cycle in 0..5 {
        world.bot_review(&format!("finding {cycle}"));
    }
    if !world
        .start_model(Script::new([Turn::text("never asked")]))
        .await
    {
        return;
    }
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("cycle limit"),
        "{}",
        stderr(&output)
    );
    assert_eq!(world.labels(), ["bot-human-intervention"]);
    assert!(
        world.model().all_requests().is_empty(),
        "the model was asked"
    );
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].contains("5 review cycles"), "{}", comments[0]);
}

/// Issue 25 item 5: with a personal access token and no `github.bot_login`, the
/// bot asks GitHub who it is (`GET /user`) and the cycle limit still holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_and_no_bot_login_the_bot_asks_who_it_is_and_counts_cycles() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    for cycle in 0..5 {
        world.bot_review(&format!("finding {cycle}"));
    }
    if !world
        .start_model(Script::new([Turn::text("never asked")]))
        .await
    {
        return;
    }
    let mut command = world.command("step");
    command.env_remove("REVIEW_BOT_GITHUB_BOT_LOGIN");
    let output = tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
        .await
        .unwrap();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("cycle limit"), "{log}");
    assert!(!log.contains("bot_login is not set"), "{log}");
    assert_eq!(world.labels(), ["bot-human-intervention"]);
    assert!(
        world.model().all_requests().is_empty(),
        "the model was asked"
    );
    assert_eq!(world.sim.requests_for("users/get-authenticated").len(), 1);
}

/// Issue 25 item 3: a person handing the pull request to a human while the
/// fix runs (here from the build the fix triggers, through the API, as its
/// author) wins: nothing is pushed, replied or relabelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_label_added_while_the_fix_runs_wins_and_nothing_is_pushed() {
    let mut world = World::new_with("bot-changes-needed", |sim| {
        format!(
            "curl -sf -X POST -H 'Authorization: token {}' -H 'Content-Type: application/json' \
             {}/repos/acme/widgets/issues/1/labels -d '{{\"labels\": [\"bot-human-intervention\"]}}' \
             >/dev/null\necho tests pass\n",
            sim.user("octocat").token,
            sim.api_url()
        )
    });
    let finding = world.bot_review("`five` returns 6: rename it.");
    if !world.start_model(Script::new(fix_turns(finding))).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("nothing was pushed"), "{log}");
    assert!(log.contains("bot-human-intervention"), "{log}");
    assert_eq!(world.pull.head_sha().unwrap(), before, "{log}");
    assert_eq!(
        world.labels(),
        ["bot-changes-needed", "bot-human-intervention"],
        "{log}"
    );
    let replies: Vec<_> = world
        .pull
        .review_comments()
        .unwrap()
        .into_iter()
        .filter(|comment| comment.in_reply_to.is_some())
        .collect();
    assert!(replies.is_empty(), "{replies:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fix_that_breaks_the_tests_is_not_pushed_and_the_label_stays() {
    // The tests insist on `five`: the rename breaks them.
    let mut world = World::new(
        "bot-changes-needed",
        "grep -q 'fn five' src/lib.rs || { echo 'five is gone'; exit 4; }\n",
    );
    let finding = world.bot_review("`five` returns 6: rename it.");
    if !world.start_model(Script::new(fix_turns(finding))).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        world.pull.head_sha().unwrap(),
        before,
        "something was pushed"
    );
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("did not pass the build"),
        "{}",
        comments[0]
    );
    assert!(comments[0].contains("five is gone"), "{}", comments[0]);
    // No reply for a fix that was not pushed.
    assert!(
        world
            .pull
            .review_comments()
            .unwrap()
            .iter()
            .all(|comment| comment.in_reply_to.is_none())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_changes_nothing_gets_an_error_comment_and_the_label_stays() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    let script = Script::new([
        Turn::tool("mcp__review__github_get_pr_comments", json!({})),
        answer(&[], "Nothing to change: the name is fine."),
    ]);
    if !world.start_model(script).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(world.pull.head_sha().unwrap(), before);
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].contains("made no change"), "{}", comments[0]);
    assert!(comments[0].contains("the name is fine"), "{}", comments[0]);
    let _ = finding;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_by_someone_else_during_the_fix_is_never_overwritten() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    // While the agent works, a person pushes to the branch.
    let pull = world.pull.clone();
    let mut turns = fix_turns(finding);
    turns.insert(
        1,
        Turn::decide(move |_| {
            pull.new_commit()
                .unwrap()
                .modify("build.sh", "echo a human was here\n")
                .commit()
                .unwrap();
            Turn::tool("mcp__review__github_get_pr_comments", json!({}))
        }),
    );
    if !world.start_model(Script::new(turns)).await {
        return;
    }
    let output = world.step().await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("head moved"), "{log}");
    assert!(world.head_file("build.sh").contains("a human was here"));
    assert!(!world.head_file("src/lib.rs").contains(FIXED));
    assert_eq!(world.labels(), ["bot-changes-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_conflict_the_model_resolves_is_pushed_as_a_merge_commit() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    // The base changes line 5 too: merging it conflicts.
    world
        .pull
        .repo()
        .branch("main")
        .modify("src/lib.rs", &library("pub fn five() -> u64 { 5 }"))
        .commit()
        .unwrap();
    let base = world.pull.base_sha().unwrap();
    let resolved = library("pub fn six() -> u64 { 5 + 1 }");
    let mut turns = vec![
        Turn::decide(|request| {
            let file = working_directory(request).join("src/lib.rs");
            Turn::tool("Read", json!({ "file_path": file }))
        }),
        Turn::decide(move |request| {
            let file = working_directory(request).join("src/lib.rs");
            Turn::tool("Write", json!({ "file_path": file, "content": resolved }))
        }),
        Turn::text("Resolved: kept u64 from the base and the PR's + 1."),
    ];
    // The fix pass then has nothing left to rename but answers.
    turns.push(Turn::tool("mcp__review__github_get_pr_comments", json!({})));
    turns.push(Turn::tools([mcp(
        "github_post_pr_reply",
        json!({ "comment_id": finding, "message": "Renamed while resolving the merge." }),
    )]));
    turns.push(answer(&[finding], "Renamed during the merge."));
    if !world.start_model(Script::new(turns)).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("base merged"), "{log}");
    let after = world.pull.head_sha().unwrap();
    let git_dir = world.pull.repo().git_dir();
    let parents = git(&git_dir, &["rev-list", "--parents", "-n", "1", &after]);
    let parents: Vec<&str> = parents.split_whitespace().skip(1).collect();
    assert_eq!(parents, [before.as_str(), base.as_str()], "a merge commit");
    let content = world.head_file("src/lib.rs");
    assert!(
        content.contains("pub fn six() -> u64 { 5 + 1 }"),
        "{content}"
    );
    assert!(!content.contains("<<<<<<<"), "{content}");
    assert_eq!(world.labels(), ["bot-ci-pending"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_merge_conflict_left_unresolved_is_not_pushed_and_says_so() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    world.bot_review("`five` returns 6: rename it.");
    world
        .pull
        .repo()
        .branch("main")
        .modify("src/lib.rs", &library("pub fn five() -> u64 { 5 }"))
        .commit()
        .unwrap();
    let script = Script::new([Turn::text("I could not resolve it.")]);
    if !world.start_model(script).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        world.pull.head_sha().unwrap(),
        before,
        "something was pushed"
    );
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("could not resolve the merge conflicts"),
        "{}",
        comments[0]
    );
    assert!(comments[0].contains("`src/lib.rs`"), "{}", comments[0]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pull_request_from_a_fork_goes_to_a_human_before_any_agent_run() {
    let sim = GithubSim::start().expect("the simulator starts");
    let bot = sim.user(BOT);
    let repo = sim
        .repo("acme/widgets")
        .file("README.md", README)
        .file("src/lib.rs", &library(ORIGINAL))
        .create()
        .unwrap();
    repo.add_collaborator(BOT, "write").unwrap();
    sim.repo("contributor/widgets")
        .file("README.md", README)
        .create()
        .unwrap();
    let pull = repo
        .pull_request("feature")
        .from_fork("contributor/widgets")
        .modify("src/lib.rs", &library(CHANGED))
        .label("bot-changes-needed")
        .open()
        .unwrap();
    let mut world = World {
        sim,
        bot,
        pull,
        model: None,
        dir: tempfile::tempdir().unwrap(),
    };
    if !world
        .start_model(Script::new([Turn::text("never asked")]))
        .await
    {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("fork"), "{}", stderr(&output));
    assert_eq!(world.labels(), ["bot-human-intervention"]);
    assert_eq!(world.pull.head_sha().unwrap(), before);
    assert!(
        world.model().all_requests().is_empty(),
        "the model was asked"
    );
    let comments = world.bot_comments();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].contains("`contributor/widgets`"),
        "{}",
        comments[0]
    );
    // No checkout either.
    assert!(
        !world.work_dir().join("mirrors").join("acme").exists(),
        "the fork was checked out"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_the_agent_made_anyway_is_kept_and_recommitted_as_the_bot() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    let mut turns = vec![Turn::tool(
        "mcp__review__github_get_pr_comments",
        json!({ "include_replied": true }),
    )];
    turns.extend(edit_turns("src/lib.rs", CHANGED, FIXED));
    // Against the prompt, the agent commits (as someone else). Confined, it
    // cannot (the mirror is read-only to it); unconfined it can.
    turns.push(Turn::tool(
        "Bash",
        json!({
            "command": "git -c user.name=Agent -c user.email=agent@example.com commit -qam 'agent commit'; echo $?",
            "description": "Commit"
        }),
    ));
    turns.push(answer(&[finding], "Renamed five to six."));
    if !world.start_model(Script::new(turns)).await {
        return;
    }
    let before = world.pull.head_sha().unwrap();
    let output = world.step_with(&[("REVIEW_BOT_SANDBOX_MODE", "off")]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let after = world.pull.head_sha().unwrap();
    assert_ne!(after, before, "{}", stderr(&output));
    let git_dir = world.pull.repo().git_dir();
    let parents = git(&git_dir, &["rev-list", "--parents", "-n", "1", &after]);
    assert_eq!(
        parents.split_whitespace().skip(1).collect::<Vec<_>>(),
        [before.as_str()],
        "the agent's commit is not pushed, only the bot's"
    );
    let author = git(&git_dir, &["log", "-1", "--format=%an", &after]);
    assert_eq!(author.trim(), "Review Bot");
    assert!(world.head_file("src/lib.rs").contains(FIXED));
    assert_eq!(world.labels(), ["bot-ci-pending"]);
    // The agent's commit did happen in the worktree (exit status 0).
    let committed = world
        .model()
        .requests()
        .iter()
        .flat_map(RecordedRequest::all_tool_results)
        .any(|result| {
            result.tool_name.as_deref() == Some("Bash")
                && result.text_without_reminders().trim().ends_with('0')
        });
    let results: Vec<String> = world
        .model()
        .requests()
        .iter()
        .flat_map(RecordedRequest::all_tool_results)
        .map(|result| {
            format!(
                "{:?}: {}",
                result.tool_name,
                result.text_without_reminders()
            )
        })
        .collect();
    assert!(committed, "the agent's git commit failed: {results:#?}");
}

/// The model's turns for the whole loop, in the order the steps ask.
fn loop_turns() -> Vec<Turn> {
    let mut turns = vec![
        // Review 1: a finding on line 5.
        Turn::text("No architectural concerns."),
        Turn::tools([mcp(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 5, "message": "`five` returns 6: rename it."}),
        )]),
        Turn::text("Detailed pass done."),
        // Fix 1: rename, reply, answer.
        Turn::tool(
            "mcp__review__github_get_pr_comments",
            json!({ "include_replied": true }),
        ),
    ];
    turns.extend(edit_turns("src/lib.rs", CHANGED, FIXED));
    turns.push(Turn::decide(|request| {
        let finding = listed_comment(request, "rename it")
            .expect(concat!("no listed comment contains ", "rename it"));
        Turn::tools([mcp(
            "github_post_pr_reply",
            json!({ "comment_id": finding, "message": "Renamed `five` to `six`." }),
        )])
    }));
    turns.push(Turn::decide(|request| {
        let finding = listed_comment(request, "rename it")
            .expect(concat!("no listed comment contains ", "rename it"));
        answer(&[finding], "Renamed five to six.")
    }));
    // Fix 2: CI failed; the agent reads the CI comment and fixes line 30.
    turns.push(Turn::tool(
        "mcp__review__github_get_pr_comments",
        json!({ "include_replied": true }),
    ));
    turns.extend(edit_turns(
        "src/lib.rs",
        "pub fn line_30() {}",
        "pub fn line_30() -> u32 { 30 }",
    ));
    turns.push(Turn::decide(|request| {
        let ci = listed_comment(request, "CI failed")
            .expect(concat!("no listed comment contains ", "CI failed"));
        answer(
            &[ci],
            "Made line_30 return its number, which the CI check wants.",
        )
    }));
    // Review 2: nothing left.
    turns.push(Turn::text("No architectural concerns."));
    turns.push(Turn::text("No issues found."));
    turns
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_loop_review_fix_ci_fails_fix_ci_passes_lgtm() {
    let mut world = World::new("bot-review-needed", "echo tests pass\n");
    let turns = loop_turns();
    if !world.start_model(Script::new(turns)).await {
        return;
    }
    world.sim.clear_requests();
    let mut steps = Vec::new();
    let mut step = async |world: &World, expected: &str| {
        let started = std::time::Instant::now();
        let before = world.sim.counters();
        let output = world.step().await;
        let log = stderr(&output);
        assert!(output.status.success(), "{log}");
        let after = world.sim.counters();
        assert_eq!(world.labels(), [expected], "{log}");
        steps.push((
            format!(
                "{expected} ({} requests, {} points)",
                after.requests - before.requests,
                after.cost - before.cost
            ),
            started.elapsed(),
            log,
        ));
    };

    step(&world, "bot-changes-needed").await; // review 1
    step(&world, "bot-ci-pending").await; // fix 1
    let fixed_once = world.pull.head_sha().unwrap();
    world
        .pull
        .add_check_run("unit", "completed", Some("failure"))
        .unwrap();
    step(&world, "bot-changes-needed").await; // CI failed
    step(&world, "bot-ci-pending").await; // fix 2
    let fixed_twice = world.pull.head_sha().unwrap();
    assert_ne!(fixed_twice, fixed_once);
    world
        .pull
        .add_check_run("unit", "completed", Some("success"))
        .unwrap();
    step(&world, "bot-review-needed").await; // CI passed
    step(&world, "human-review-needed").await; // review 2: LGTM
    // Nothing left to do.
    let output = world.step().await;
    assert!(
        stderr(&output).contains("nothing to do"),
        "{}",
        stderr(&output)
    );

    assert_eq!(world.model().remaining_turns(), 0);
    let content = world.head_file("src/lib.rs");
    assert!(
        content.contains(FIXED) && content.contains("-> u32 { 30 }"),
        "{content}"
    );
    let reviews: Vec<_> = world
        .pull
        .reviews()
        .unwrap()
        .into_iter()
        .filter(|review| review.user == BOT && review.body.contains("review::"))
        .collect();
    assert_eq!(reviews.len(), 2);
    assert!(reviews[1].body.contains("LGTM"), "{}", reviews[1].body);

    // Every request the bot made, counted from the simulator's log.
    let requests = world.sim.requests();
    let counters = world.sim.counters();
    eprintln!(
        "GitHub requests for the whole loop: {}, rate-limit points {}",
        counters.requests, counters.cost
    );
    for (operation, counter) in &counters.by_operation {
        eprintln!(
            "  {operation}: {} requests, {} points",
            counter.requests, counter.cost
        );
    }
    for (label, elapsed, log) in &steps {
        eprintln!("step → {label}: {:.2} s\n{log}", elapsed.as_secs_f64());
    }
    let writes = requests
        .iter()
        .filter(|request| {
            request.method != "GET"
                && request
                    .operation_id
                    .as_deref()
                    .is_some_and(|id| !id.starts_with("git/"))
        })
        .count();
    assert!(counters.requests < 150, "{} requests", counters.requests);
    assert!(writes < 30, "{writes} writes");
    assert!(world.sim.request_schema_violations().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_that_failed_after_its_push_is_finished_by_the_next_without_duplicates() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    if !world.start_model(Script::new(fix_turns(finding))).await {
        return;
    }
    // GitHub refuses the reply once: the push has happened, the reply and
    // the label have not.
    world.sim.inject(
        review_testkit::github::FaultRule::operation(
            "pulls/create-reply-for-review-comment",
            review_testkit::github::Fault::ServerError(400),
        )
        .times(1),
    );
    let before = world.pull.head_sha().unwrap();
    let output = world.step().await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let pushed = world.pull.head_sha().unwrap();
    assert_ne!(pushed, before, "the fix was pushed");
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let errors = world.bot_comments();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("The fix was pushed"), "{}", errors[0]);

    // The next step finishes it: no agent, no new commit, one reply, the label.
    let requests_before = world.model().requests().len();
    let output = world.step().await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("resumed"), "{log}");
    assert_eq!(world.pull.head_sha().unwrap(), pushed);
    assert_eq!(
        world.model().requests().len(),
        requests_before,
        "the agent ran again"
    );
    let replies: Vec<_> = world
        .pull
        .review_comments()
        .unwrap()
        .into_iter()
        .filter(|comment| comment.in_reply_to == Some(finding))
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(world.labels(), ["bot-ci-pending"]);

    // And a third step (the label put back) does not find the plan again.
    world.set_label("bot-changes-needed");
    assert!(
        !world
            .work_dir()
            .join(format!("runs/acme/widgets/pushed/{pushed}.json"))
            .exists()
    );
}

// ---------------------------------------------------------------------------
// Issue 25 items 1 and 2: hand-backs, and every fix round counts.
// ---------------------------------------------------------------------------

impl World {
    /// A person (the pull request's author, `octocat`) replaces every label
    /// with `label` through the API, as they would on GitHub.
    fn person_relabels(&self, label: &str) {
        let output = Command::new("curl")
            .args(["-sf", "-X", "PUT", "-H"])
            .arg(format!(
                "Authorization: token {}",
                self.sim.user("octocat").token
            ))
            .args(["-H", "Content-Type: application/json"])
            .arg(format!(
                "{}/repos/acme/widgets/issues/{}/labels",
                self.sim.api_url(),
                self.pull.number()
            ))
            .arg("-d")
            .arg(json!({ "labels": [label] }).to_string())
            .output()
            .expect("curl runs");
        assert!(output.status.success(), "{}", stderr(&output));
    }

    /// The bot's reviews (with its `review::` footer).
    fn bot_reviews(&self) -> Vec<String> {
        self.pull
            .reviews()
            .unwrap()
            .into_iter()
            .filter(|review| review.user == BOT && review.body.contains("review::"))
            .map(|review| review.body)
            .collect()
    }

    /// The bot's inline comments containing `needle`.
    fn findings_containing(&self, needle: &str) -> usize {
        self.pull
            .review_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| comment.in_reply_to.is_none() && comment.body.contains(needle))
            .count()
    }

    /// Runs a step, asserts its exit code, and returns its log and the
    /// GitHub requests (and rate-limit points) it made.
    async fn counted_step(&self, environment: &[(&str, &str)], code: i32) -> (String, u64, u64) {
        let before = self.sim.counters();
        let output = self.step_with(environment).await;
        let after = self.sim.counters();
        let log = stderr(&output);
        assert_eq!(output.status.code(), Some(code), "{log}");
        (
            log,
            after.requests - before.requests,
            after.cost - before.cost,
        )
    }
}

const FIRST_FINDING: &str = "`five` returns 6: rename it.";
const SECOND_FINDING: &str = "`line_6` is empty: document why.";

fn leave(line: u32, message: &str) -> Turn {
    Turn::tools([mcp(
        "leave_inline_comment",
        json!({"path": "src/lib.rs", "line": line, "message": message}),
    )])
}

/// Issue 25 item 1: a person putting `bot-review-needed` back on a head the
/// bot reviewed gets a new review of that head, which says it was asked for
/// again and repeats no finding already posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewed_head_handed_back_gets_a_new_review_that_repeats_no_finding() {
    let mut world = World::new("bot-review-needed", "echo tests pass\n");
    let script = Script::new([
        // Review 1: one finding.
        Turn::text("No architectural concerns."),
        leave(5, FIRST_FINDING),
        Turn::text("Detailed pass done."),
        // Review 2, asked for again: the same finding and a new one.
        Turn::text("No architectural concerns."),
        Turn::tools([
            mcp(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 5, "message": FIRST_FINDING}),
            ),
            mcp(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 6, "message": SECOND_FINDING}),
            ),
        ]),
        Turn::text("Detailed pass done."),
    ]);
    if !world.start_model(script).await {
        return;
    }
    let (log, first_requests, first_points) = world.counted_step(&[], 0).await;
    assert_eq!(world.labels(), ["bot-changes-needed"], "{log}");
    assert_eq!(world.bot_reviews().len(), 1);

    world.person_relabels("bot-review-needed");
    let (log, again_requests, again_points) = world.counted_step(&[], 0).await;
    assert!(log.contains("reviewing it again"), "{log}");
    assert!(!log.contains("nothing to do"), "{log}");
    assert_eq!(world.labels(), ["bot-changes-needed"], "{log}");
    let reviews = world.bot_reviews();
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    assert!(reviews[1].contains("asked for again"), "{}", reviews[1]);
    assert_eq!(world.findings_containing(FIRST_FINDING), 1, "repeated");
    assert_eq!(world.findings_containing(SECOND_FINDING), 1);
    assert_eq!(world.model().remaining_turns(), 0);
    eprintln!(
        "review: {first_requests} requests, {first_points} points; review asked for again: \
         {again_requests} requests, {again_points} points"
    );
}

/// Issue 25 item 1, the crash case: the review was posted but its label
/// change never happened (GitHub refused it; a `kill -9` leaves the same
/// state). The next step finishes that review — the label — and does not
/// review the head again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_whose_label_change_failed_is_finished_not_reviewed_again() {
    let mut world = World::new("bot-review-needed", "echo tests pass\n");
    let script = Script::new([
        Turn::text("No architectural concerns."),
        leave(5, FIRST_FINDING),
        Turn::text("Detailed pass done."),
    ]);
    if !world.start_model(script).await {
        return;
    }
    world.sim.inject(
        review_testkit::github::FaultRule::operation(
            "issues/add-labels",
            review_testkit::github::Fault::ServerError(400),
        )
        .times(1),
    );
    let (log, ..) = world.counted_step(&[], 1).await;
    assert_eq!(world.bot_reviews().len(), 1, "{log}");
    assert_eq!(world.labels(), ["bot-review-needed"], "{log}");

    let asked = world.model().all_requests().len();
    let (log, requests, points) = world.counted_step(&[], 0).await;
    assert!(log.contains("finishing an unfinished review"), "{log}");
    assert_eq!(world.bot_reviews().len(), 1, "reviewed again: {log}");
    assert_eq!(world.findings_containing(FIRST_FINDING), 1);
    assert_eq!(world.labels(), ["bot-changes-needed"], "{log}");
    assert_eq!(
        world.model().all_requests().len(),
        asked,
        "the agent ran again"
    );
    eprintln!("finishing the review: {requests} requests, {points} points");
}

/// The fix pass after a CI failure: read the comments, edit `old` into
/// `new`, answer naming the CI comment.
fn ci_fix_turns(old: &'static str, new: &'static str) -> Vec<Turn> {
    let mut turns = vec![Turn::tool(
        "mcp__review__github_get_pr_comments",
        json!({ "include_replied": true }),
    )];
    turns.extend(edit_turns("src/lib.rs", old, new));
    turns.push(Turn::decide(|request| {
        let ci = listed_comment(request, "CI failed")
            .expect(concat!("no listed comment contains ", "CI failed"));
        answer(&[ci], "Fixed what the CI check wants.")
    }));
    turns
}

/// Issue 25 items 2 and 1: CI fails → fix → CI fails, with a limit of 2
/// cycles, stops with one hand-over comment and `bot-human-intervention`
/// (only fixes counted: the bot never reviewed). A person handing it back
/// with `bot-changes-needed` then gets a fix: the count restarts there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ci_fail_fix_ci_fail_stops_at_the_limit_and_a_hand_back_gets_a_fix() {
    let mut world = World::new("bot-ci-pending", "echo tests pass\n");
    let mut turns = ci_fix_turns(CHANGED, FIXED);
    turns.extend(ci_fix_turns(
        "pub fn line_30() {}",
        "pub fn line_30() -> u32 { 30 }",
    ));
    if !world.start_model(Script::new(turns)).await {
        return;
    }
    let limit = [("REVIEW_BOT_REVIEW_MAX_CYCLES", "2")];
    let mut figures = Vec::new();
    world
        .pull
        .add_check_run("unit", "completed", Some("failure"))
        .unwrap();
    let (_, requests, points) = world.counted_step(&limit, 0).await;
    figures.push(format!("CI failed: {requests} requests, {points} points"));
    assert_eq!(world.labels(), ["bot-changes-needed"]);

    let (log, requests, points) = world.counted_step(&limit, 0).await;
    figures.push(format!("fix 1: {requests} requests, {points} points"));
    assert!(log.contains("1 of 2 (0 reviews, 0 fixes)"), "{log}");
    assert_eq!(world.labels(), ["bot-ci-pending"], "{log}");
    let message = git(
        &world.pull.repo().git_dir(),
        &["log", "-1", "--format=%B", &world.pull.head_sha().unwrap()],
    );
    assert!(message.contains("\nReview-Bot-Fix: "), "{message}");

    world
        .pull
        .add_check_run("unit", "completed", Some("failure"))
        .unwrap();
    world.counted_step(&limit, 0).await;
    assert_eq!(world.labels(), ["bot-changes-needed"]);

    // The second CI failure: cycle 2 of 2, no agent run.
    let asked = world.model().all_requests().len();
    let (log, requests, points) = world.counted_step(&limit, 0).await;
    figures.push(format!("hand-over: {requests} requests, {points} points"));
    assert!(
        log.contains("2 of 2 (0 reviews, 1 fix): limit reached"),
        "{log}"
    );
    assert_eq!(world.labels(), ["bot-human-intervention"], "{log}");
    assert_eq!(world.model().all_requests().len(), asked, "the agent ran");
    let hand_overs = |world: &World| {
        world
            .bot_comments()
            .into_iter()
            .filter(|body| body.contains("stops here"))
            .collect::<Vec<_>>()
    };
    let stops = hand_overs(&world);
    assert_eq!(stops.len(), 1, "{stops:?}");
    assert!(stops[0].contains("1 fix pushed"), "{}", stops[0]);
    // Nothing to do while a human has it.
    let (log, ..) = world.counted_step(&limit, 0).await;
    assert!(log.contains("nothing to do"), "{log}");

    // A person hands it back with `bot-changes-needed`: a fix, counted from
    // the hand-back.
    let before = world.pull.head_sha().unwrap();
    world.person_relabels("bot-changes-needed");
    let (log, requests, points) = world.counted_step(&limit, 0).await;
    figures.push(format!(
        "fix after the hand-back: {requests} requests, {points} points"
    ));
    assert!(log.contains("since a person handed it back"), "{log}");
    assert_eq!(world.labels(), ["bot-ci-pending"], "{log}");
    assert_ne!(world.pull.head_sha().unwrap(), before);
    assert!(world.head_file("src/lib.rs").contains("-> u32 { 30 }"));
    assert_eq!(hand_overs(&world).len(), 1);
    assert_eq!(world.model().remaining_turns(), 0);
    for line in figures {
        eprintln!("{line}");
    }
}

// ---------------------------------------------------------------------------
// Crash records in the store, one status comment (issue 25, items 6 and 10).
// ---------------------------------------------------------------------------

/// Issue 25 item 6: a `step` killed with SIGKILL right after its push is
/// finished by a `step` with an EMPTY work directory on the same store (as
/// another replica, or a restart on a fresh disk, would): no second agent
/// run, no second commit, the reply posted once, the label set.
///
/// The kill window: GitHub's answer to the reply (which follows the push)
/// is held back (`Fault::Hang`), so the killed step dies with its push on
/// GitHub and its reply not; the test kills it on the event "the pushed
/// commit is the pull request's head in the simulator", never after a
/// fixed time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_killed_right_after_its_push_is_finished_from_the_store_with_a_fresh_work_dir() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    if !world.start_model(Script::new(fix_turns(finding))).await {
        return;
    }
    world.sim.inject(
        review_testkit::github::FaultRule::operation(
            "pulls/create-reply-for-review-comment",
            review_testkit::github::Fault::Hang(std::time::Duration::from_hours(1)),
        )
        .times(1),
    );
    let before = world.pull.head_sha().unwrap();
    let mut child = world
        .command("step")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("review-bot starts");
    // Wait for the push to land in the simulator (or the step to end, which
    // would be a failure of this test's premise).
    let pushed = loop {
        let head = world.pull.head_sha().unwrap();
        if head != before {
            break head;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut log = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut log).unwrap();
            panic!("the step ended ({status}) before pushing: {log}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    child.kill().expect("SIGKILL");
    child.wait().unwrap();
    let agent_requests = world.model().requests().len();
    assert!(agent_requests > 0);
    let replies = |world: &World| {
        world
            .pull
            .review_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| comment.in_reply_to == Some(finding))
            .count()
    };
    assert_eq!(replies(&world), 0, "the reply was held back");
    assert_eq!(world.labels(), ["bot-changes-needed"]);

    // A fresh work directory: nothing of the killed step's on disk.
    let fresh = world.dir.path().join("fresh-work");
    let output = world
        .step_with(&[("REVIEW_BOT_WORK_DIR", fresh.to_str().unwrap())])
        .await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("finishing it"), "{log}");
    assert_eq!(
        world.model().requests().len(),
        agent_requests,
        "the agent ran again: {log}"
    );
    assert_eq!(world.pull.head_sha().unwrap(), pushed, "a second commit");
    let git_dir = world.pull.repo().git_dir();
    let commits = git(
        &git_dir,
        &["rev-list", "--count", &format!("{before}..{pushed}")],
    );
    assert_eq!(commits.trim(), "1");
    assert_eq!(replies(&world), 1, "the reply, once");
    assert_eq!(world.labels(), ["bot-ci-pending"]);
    assert!(
        world.bot_comments().is_empty(),
        "{:?}",
        world.bot_comments()
    );

    // The plan is gone from the store: the label put back on the same head
    // runs a new fix, it does not replay the old plan.
    let store = review_store::Store::open(&format!(
        "sqlite://{}",
        world.dir.path().join("store.sqlite3").display()
    ))
    .await
    .unwrap();
    let plan = store
        .job_plan(&review_store::JobPlanKey {
            repository: "acme/widgets",
            pull_request: world.pull.number(),
            job: review_store::JobKind::Write,
            plan_id: &pushed,
        })
        .await
        .unwrap();
    assert_eq!(plan, None);
    store.close().await;
}

/// Issue 25 item 10: repeated failures on one head update ONE status comment
/// (attempt k, what failed, what happens next), found again by its marker
/// in the bot's own comment only — a person's comment quoting the marker is
/// never edited — at one request per failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_failures_update_one_status_comment_not_one_comment_each() {
    let mut world = World::new("bot-changes-needed", "echo ok\n");
    let finding = world.bot_review("`five` returns 6: rename it.");
    let nothing = || {
        [
            Turn::tool("mcp__review__github_get_pr_comments", json!({})),
            answer(&[], "Nothing to change: the name is fine."),
        ]
    };
    let script = Script::new(nothing().into_iter().chain(nothing()).chain(nothing()));
    if !world.start_model(script).await {
        return;
    }
    // A person pastes the status marker: the bot must not take it for its own.
    let status_footer = format!(
        "<sub>thread::{}</sub>",
        review_pipeline::status::thread_id(
            &review_github::RepositoryName::parse("acme/widgets").unwrap(),
            world.pull.number()
        )
    );
    world
        .pull
        .comment(
            "octocat",
            &format!("Copied from the bot:\n\n{status_footer}"),
        )
        .unwrap();

    let mut creates = Vec::new();
    let mut updates = Vec::new();
    for attempt in 1..=3 {
        world.sim.clear_requests();
        let output = world.step().await;
        assert!(output.status.success(), "{}", stderr(&output));
        let counters = world.sim.counters();
        let count = |operation: &str| {
            counters
                .by_operation
                .get(operation)
                .map_or(0, |counter| counter.requests)
        };
        creates.push(count("issues/create-comment"));
        updates.push(count("issues/update-comment"));
        let comments = world.bot_comments();
        assert_eq!(comments.len(), 1, "attempt {attempt}: {comments:?}");
        assert!(
            comments[0].contains(&format!("**Attempt {attempt}** on `")),
            "attempt {attempt}: {}",
            comments[0]
        );
        assert!(comments[0].contains("made no change"), "{}", comments[0]);
        assert!(comments[0].contains("will try again"), "{}", comments[0]);
    }
    assert_eq!(
        creates,
        [1, 0, 0],
        "one comment created, on the first failure"
    );
    assert_eq!(updates, [0, 1, 1], "then one update per failure");
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let person = world
        .pull
        .issue_comments()
        .unwrap()
        .into_iter()
        .find(|comment| comment.user == "octocat")
        .unwrap();
    assert!(
        person.body.starts_with("Copied from the bot:"),
        "{}",
        person.body
    );
    let _ = finding;
}
