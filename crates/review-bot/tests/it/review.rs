//! `review-bot review OWNER/REPO#N` end to end: the real binary against the
//! GitHub simulator (real git underneath), the real Claude Code CLI pointed at
//! the scripted model server, real bubblewrap for the build gate and the
//! agent, and a real SQLite store.
//!
//! The scripted model answers both passes in order: the architecture pass's
//! turns first, then the detailed pass's. Requests that offer no tools (the
//! CLI's side requests) are answered apart and never consume a turn.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use review_testkit::github::{Fault, FaultRule, GithubSim, PullRequestHandle, SimUser};
use review_testkit::model::{ModelServer, Script, ToolCall, Turn};
use serde_json::{Value, json};
use tempfile::TempDir;

/// The bot's login on the simulator.
const BOT: &str = "review-bot";

/// 40 lines, so a finding can sit far from the pull request's hunks.
fn library(changed: bool) -> String {
    (1..=40)
        .map(|line| {
            if changed && line == 5 {
                "pub fn five() -> u32 { 5 + 1 }\n".to_owned()
            } else {
                format!("pub fn line_{line}() {{}}\n")
            }
        })
        .collect()
}

const README: &str =
    "# widgets\n\n## Build\n\n```sh\nsh build.sh\n```\n\n## Test\n\n```sh\nsh test.sh\n```\n";

/// One scenario: a repository with a README documenting `sh build.sh` and
/// `sh test.sh`, a pull request labelled `bot-review-needed` that changes
/// line 5 of `src/lib.rs`, and the model server.
struct World {
    sim: GithubSim,
    model: ModelServer,
    bot: SimUser,
    pull: PullRequestHandle,
    dir: TempDir,
}

impl World {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    async fn start(script: Script, test_script: &str) -> Option<Self> {
        Self::start_with(script, |_| test_script.to_owned(), &[]).await
    }

    /// [`World::start`] with a `test.sh` written once the simulator is up (it
    /// may act on the simulator as a person does, while the review runs), the
    /// pull request also adding `added` (path, contents).
    async fn start_with(
        script: Script,
        test_script: impl FnOnce(&GithubSim) -> String,
        added: &[(&str, &str)],
    ) -> Option<Self> {
        review_testkit::tools::claude_for_test()?;
        let sim = GithubSim::start().expect("the simulator starts");
        let bot = sim.user(BOT);
        let test_script = test_script(&sim);
        let repo = sim
            .repo("acme/widgets")
            .file("README.md", README)
            .file("build.sh", "echo building\n")
            .file("test.sh", &test_script)
            .file("src/lib.rs", &library(false))
            .create()
            .expect("the repository is created");
        repo.add_collaborator(BOT, "write").unwrap();
        let mut pull = repo.pull_request("feature");
        for (path, contents) in added {
            pull = pull.add(path, contents);
        }
        let pull = pull
            .modify("src/lib.rs", &library(true))
            .binary("assets/logo.png", &[0x89, b'P', b'N', b'G', 0, 1, 2, 0xff])
            .title("Make five six")
            .label("bot-review-needed")
            .open()
            .expect("the pull request opens");
        let model = ModelServer::start(script)
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

    /// The command, with an environment built from nothing but what it needs.
    fn command(&self, arguments: &[&str]) -> Command {
        let mut command = crate::bot_command(
            self.dir.path(),
            &self.sim,
            &self.bot,
            &self.model.base_url(),
        );
        command.arg("review").args(arguments).stdin(Stdio::null());
        command
    }

    /// Runs `review-bot review acme/widgets#N ARGUMENTS` to its end, off the
    /// async runtime (the model server runs on it).
    async fn review(&self, arguments: &[&str]) -> Output {
        let target = format!("acme/widgets#{}", self.pull.number());
        let mut command = self.command(&[target.as_str()]);
        command.args(arguments);
        tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
            .await
            .unwrap()
    }

    fn labels(&self) -> Vec<String> {
        let mut labels = self.pull.labels().unwrap();
        labels.sort();
        labels
    }

    /// Every build log the gate wrote, concatenated.
    fn build_logs(&self) -> String {
        let mut text = String::new();
        for path in files_under(&self.work_dir().join("runs")) {
            if path
                .parent()
                .is_some_and(|parent| parent.ends_with("build"))
                && path.extension().is_some_and(|extension| extension == "log")
            {
                text.push_str(&std::fs::read_to_string(&path).unwrap_or_default());
            }
        }
        text
    }

    /// The bot's reviews (its reply to a thread makes an empty review too).
    fn bot_reviews(&self) -> usize {
        self.pull
            .reviews()
            .unwrap()
            .into_iter()
            .filter(|review| review.user == BOT && review.body.contains("review::"))
            .count()
    }

    /// Starts `review`, waits until the bot's review is on GitHub, and kills
    /// the process with SIGKILL.
    fn kill_after_the_bots_review(&self) {
        let target = format!("acme/widgets#{}", self.pull.number());
        kill_after_the_bots_review(self, self.command(&[target.as_str()]));
    }

    /// The texts of every tool result the model received.
    fn tool_results(&self) -> Vec<String> {
        self.model
            .requests()
            .iter()
            .flat_map(review_testkit::model::RecordedRequest::all_tool_results)
            .map(|result| result.text_without_reminders())
            .collect()
    }
}

fn files_under(directory: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(directory) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn tool(name: &str, input: Value) -> ToolCall {
    ToolCall::new(format!("mcp__review__{name}"), input)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A script: the architecture pass leaves a general comment, the detailed
/// pass an inline finding on the changed line 5, one on line 30 (far from
/// the hunk), and runs `env` through the Bash tool.
fn findings_script() -> Script {
    Script::new([
        Turn::tools([tool(
            "leave_general_comment",
            json!({"message": "The change is small and keeps the module's shape."}),
        )]),
        Turn::text("Architecture pass done."),
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 5, "message": "`five` now returns 6: the name lies.", "title": "Misleading name", "severity": "logic", "confidence": 90}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 30, "message": "`line_30` is never called.", "severity": "clarity", "confidence": 50}),
            ),
            ToolCall::new(
                "Bash",
                json!({"command": "env", "description": "Show the environment"}),
            ),
        ]),
        Turn::text("Detailed pass done."),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_become_one_review_with_inline_and_outside_the_diff_comments() {
    let Some(world) = World::start(findings_script(), "env\necho tests pass\n").await else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let log = stderr(&output);
    assert!(log.contains("changes requested"), "{log}");
    for step in [
        "checkout",
        "build and test",
        "architecture pass",
        "detailed pass",
        "post the review",
        "labels",
    ] {
        assert!(
            log.contains(&format!("✓ {step} (")),
            "no step {step}: {log}"
        );
    }

    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    let review = &reviews[0];
    assert_eq!(review.user, BOT);
    assert!(review.body.contains("review::"), "{}", review.body);
    assert!(
        review.body.contains("The change is small"),
        "{}",
        review.body
    );
    assert!(
        review.body.contains("### Outside the diff"),
        "{}",
        review.body
    );
    assert!(
        review.body.contains("`line_30` is never called."),
        "{}",
        review.body
    );
    assert!(
        review.body.contains("Build and tests passed"),
        "{}",
        review.body
    );
    let comments = world.pull.review_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(
        (comments[0].path.as_str(), comments[0].line),
        ("src/lib.rs", Some(5))
    );
    assert!(
        comments[0].body.contains("the name lies"),
        "{}",
        comments[0].body
    );
    assert!(
        comments[0].body.contains("thread::"),
        "{}",
        comments[0].body
    );
    assert_eq!(world.labels(), ["bot-changes-needed"]);

    // Neither the build nor the agent saw a GitHub credential.
    let build = world.build_logs();
    assert!(build.contains("tests pass"), "{build}");
    let results = world.tool_results().join("\n");
    assert!(results.contains("PATH="), "the agent's env ran: {results}");
    for seen in [&build, &results] {
        assert!(!seen.contains(&world.bot.token), "a token leaked: {seen}");
        assert!(!seen.contains("REVIEW_BOT_GITHUB"), "{seen}");
        assert!(!seen.contains("GITHUB_TOKEN"), "{seen}");
    }
    assert!(
        !build.contains("sk-ant-scripted"),
        "the build saw the model key"
    );

    // The same head is not reviewed twice.
    let again = world.review(&[]).await;
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("already has a completed review"),
        "{}",
        stderr(&again)
    );
    assert_eq!(world.pull.reviews().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_sandbox_cgroup_the_build_and_the_agent_run_in_cgroups_of_their_own_and_none_is_left()
{
    let Some(parent) = review_testkit::cgroups::TestCgroup::new(
        review_sandbox::cgroups::cgroup2_mount_point(),
        "review",
    ) else {
        return;
    };
    let Some(world) = World::start(findings_script(), "echo tests pass\n").await else {
        return;
    };
    assert_eq!(parent.cpu_usage(), 0);
    let output = review_with(
        &world,
        &[("REVIEW_BOT_SANDBOX_CGROUP", parent.path().to_str().unwrap())],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    // The same review as without cgroups.
    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert!(
        reviews[0].body.contains("Build and tests passed"),
        "{}",
        reviews[0].body
    );
    assert_eq!(world.pull.review_comments().unwrap().len(), 1);
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    // The parent holds no process of its own (the bot is not in it), so
    // the time spent in it is its runs'; each run's cgroup is gone.
    assert!(parent.cpu_usage() > 0, "nothing ran in the runs' cgroups");
    assert_eq!(parent.children(), Vec::<PathBuf>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_pull_request_gets_an_lgtm_review_and_goes_to_a_human() {
    let script = Script::new([
        Turn::text("No architectural concerns."),
        Turn::text("No issues found."),
    ]);
    let Some(world) = World::start(script, "echo ok\n").await else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1);
    assert!(reviews[0].body.contains("LGTM"), "{}", reviews[0].body);
    // A file GitHub gives no diff for is named as not reviewed, with why.
    assert!(
        reviews[0].body.contains("### Not reviewed")
            && reviews[0].body.contains("`assets/logo.png`: binary file"),
        "{}",
        reviews[0].body
    );
    assert!(world.pull.review_comments().unwrap().is_empty());
    assert_eq!(world.labels(), ["human-review-needed"]);
    assert!(stderr(&output).contains("LGTM"), "{}", stderr(&output));
}

/// A person's decision while the review runs wins (issue 25 items 3 and 4):
/// the pull request's own test script acts through the simulator's API as
/// its author — a stop label, closing it, a push — after the review read the
/// pull request and before it posts. Each time nothing is written: no review,
/// no reply, no label change, and the run says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_person_does_while_the_review_runs_wins_and_nothing_is_posted() {
    /// A name, the `test.sh` given the API's URL and the person's token, and
    /// what the run must say.
    type Case = (&'static str, fn(&str, &str) -> String, &'static str);
    let cases: [Case; 3] = [
        (
            "a stop label",
            |api, person| {
                format!(
                    "curl -sf -X POST -H 'Authorization: token {person}' \
                     -H 'Content-Type: application/json' {api}/repos/acme/widgets/issues/1/labels \
                     -d '{{\"labels\": [\"bot-human-intervention\"]}}' >/dev/null\necho ok\n"
                )
            },
            "labelled it `bot-human-intervention`",
        ),
        (
            "closing it",
            |api, person| {
                format!(
                    "curl -sf -X PATCH -H 'Authorization: token {person}' \
                     -H 'Content-Type: application/json' {api}/repos/acme/widgets/pulls/1 \
                     -d '{{\"state\": \"closed\"}}' >/dev/null\necho ok\n"
                )
            },
            "was closed while",
        ),
        (
            "a push",
            |api, person| {
                let host = api.trim_start_matches("http://");
                format!(
                    "set -e\nclone=\"$HOME/person-clone\"\n\
                     git clone -q -b feature http://octocat:{person}@{host}/acme/widgets.git \"$clone\"\n\
                     git -C \"$clone\" -c user.name=octocat -c user.email=octocat@example.com \
                     commit -q --allow-empty -m 'another change'\n\
                     git -C \"$clone\" push -q origin feature\necho ok\n"
                )
            },
            "superseded",
        ),
    ];
    for (case, test_script, said) in cases {
        let Some(world) = World::start_with(
            findings_script(),
            |sim| test_script(sim.api_url(), &sim.user("octocat").token),
            &[],
        )
        .await
        else {
            return;
        };
        assert_eq!(world.pull.number(), 1);
        let head = world.pull.head_sha().unwrap();
        let output = world.review(&[]).await;
        let log = stderr(&output);
        assert!(output.status.success(), "{case}: {log}");
        assert!(log.contains("nothing was posted"), "{case}: {log}");
        assert!(log.contains(said), "{case}: {log}");
        assert_eq!(world.bot_reviews(), 0, "{case}: {log}");
        assert!(world.pull.review_comments().unwrap().is_empty(), "{case}");
        assert!(
            world
                .pull
                .issue_comments()
                .unwrap()
                .iter()
                .all(|comment| comment.user != BOT),
            "{case}: the bot commented"
        );
        match case {
            "a stop label" => assert_eq!(
                world.labels(),
                ["bot-human-intervention", "bot-review-needed"],
                "{case}: the bot changed a label"
            ),
            "a push" => {
                assert_ne!(world.pull.head_sha().unwrap(), head, "{case}: no push");
                assert_eq!(world.labels(), ["bot-review-needed"], "{case}");
            }
            _ => assert_eq!(world.labels(), ["bot-review-needed"], "{case}"),
        }
    }
}

/// Issue 26: the pull request ships project settings whose hook blocks every
/// prompt, so the CLI "succeeds" without reaching the model. That pass
/// fails; no LGTM is posted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_that_never_reached_the_model_fails_the_review_and_posts_no_lgtm() {
    let blocking_hook = json!({"hooks": {"UserPromptSubmit": [{"matcher": "", "hooks": [{
        "type": "command",
        "command": "echo '{\"decision\":\"block\",\"reason\":\"nothing to review\"}'",
    }]}]}})
    .to_string();
    let script = Script::new([Turn::text("never asked")]);
    let Some(world) = World::start_with(
        script,
        |_| "echo ok\n".to_owned(),
        &[(".claude/settings.json", &blocking_hook)],
    )
    .await
    else {
        return;
    };
    let output = world.review(&[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(world.model.all_requests().is_empty(), "the model was asked");
    assert!(
        world
            .pull
            .reviews()
            .unwrap()
            .iter()
            .all(|review| !review.body.contains("LGTM")),
        "an LGTM was posted for a pass that never reached the model"
    );
    assert!(
        stderr(&output).contains("never reached the model"),
        "{}",
        stderr(&output)
    );
    assert_eq!(world.labels(), ["bot-review-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_tests_get_the_failure_comment_and_no_agent_run() {
    let script = Script::new([Turn::text("never asked")]);
    // The pull request's change is what breaks the test (the base passes it).
    let Some(world) = World::start(
        script,
        "if grep -q 'fn five' src/lib.rs; then echo 'assertion failed: 2 + 2 == 5'; exit 3; fi\n",
    )
    .await
    else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(world.model.all_requests().is_empty(), "the model was asked");
    assert!(world.pull.reviews().unwrap().is_empty());
    let comments = world.pull.issue_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = &comments[0].body;
    assert!(body.contains("sh test.sh"), "{body}");
    assert!(body.contains("exited with status 3"), "{body}");
    assert!(body.contains("assertion failed: 2 + 2 == 5"), "{body}");
    assert!(body.contains("thread::"), "{body}");
    assert_eq!(world.labels(), ["bot-changes-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_error_is_reported_in_one_comment_and_nothing_partial_is_posted() {
    // The architecture pass succeeds with a finding; the detailed pass's model answers 500.
    let script = Script::new([
        Turn::tools([tool(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 5, "message": "Would be posted if the review finished."}),
        )]),
        Turn::text("Architecture pass done."),
        Turn::http_error(500),
    ]);
    let Some(world) = World::start(script, "echo ok\n").await else {
        return;
    };
    let output = world.review(&[]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("reported on the pull request"),
        "{}",
        stderr(&output)
    );
    assert!(
        world.pull.reviews().unwrap().is_empty(),
        "a partial review was posted"
    );
    assert!(world.pull.review_comments().unwrap().is_empty());
    let comments = world.pull.issue_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].body.contains("detailed pass failed"),
        "{}",
        comments[0].body
    );
    assert!(
        comments[0].body.contains("To retry"),
        "{}",
        comments[0].body
    );
    assert_eq!(world.labels(), ["bot-review-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn running_out_of_turns_is_reported_and_nothing_is_posted() {
    let script = Script::new([]).then_forever(Turn::tools([tool(
        "leave_general_comment",
        json!({"message": "still thinking"}),
    )]));
    let Some(world) = World::start(script, "echo ok\n").await else {
        return;
    };
    let target = format!("acme/widgets#{}", world.pull.number());
    let mut command = world.command(&[target.as_str()]);
    command.env("REVIEW_BOT_AGENT_MAX_TURNS", "2");
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(world.pull.reviews().unwrap().is_empty());
    let comments = world.pull.issue_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(comments[0].body.contains("turns"), "{}", comments[0].body);
    assert_eq!(world.labels(), ["bot-review-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_run_prints_the_review_and_posts_nothing() {
    let Some(world) = World::start(findings_script(), "echo ok\n").await else {
        return;
    };
    world.sim.clear_requests();
    let output = world.review(&["--dry-run"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        printed.contains("### src/lib.rs line 5 (RIGHT)"),
        "{printed}"
    );
    assert!(printed.contains("the name lies"), "{printed}");
    assert!(printed.contains("Outside the diff"), "{printed}");
    assert!(printed.contains("bot-changes-needed"), "{printed}");
    assert!(world.pull.reviews().unwrap().is_empty());
    assert!(world.pull.issue_comments().unwrap().is_empty());
    assert_eq!(world.labels(), ["bot-review-needed"]);
    let writes: Vec<_> = world
        .sim
        .requests()
        .into_iter()
        .filter(|request| {
            request.method != "GET"
                && request
                    .operation_id
                    .as_deref()
                    .is_some_and(|id| !id.starts_with("git/"))
                // A GraphQL query is a read sent with POST; a mutation writes.
                && !(request.operation_id.as_deref() == Some("graphql")
                    && request.body.as_ref().is_some_and(|body| {
                        body["query"]
                            .as_str()
                            .is_some_and(|query| !query.trim_start().starts_with("mutation"))
                    }))
        })
        .collect();
    assert!(writes.is_empty(), "a dry run wrote to GitHub: {writes:?}");
}

/// A script whose detailed pass answers the first listed thread (Carol's
/// question on line 5) and leaves one finding far from the hunk.
fn answering_script() -> Script {
    Script::new([
        Turn::text("Architecture pass done."),
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 30, "message": "`line_30` is never called."}),
            ),
            tool("github_get_pr_comments", json!({})),
        ]),
        Turn::decide(|request| {
            let listing: Value = request
                .all_tool_results()
                .iter()
                .filter_map(|result| {
                    serde_json::from_str::<Value>(&result.text_without_reminders()).ok()
                })
                .find(|value| value.get("comments").is_some())
                .unwrap_or_default();
            let id = listing["comments"][0]["id"].as_u64().unwrap_or(0);
            Turn::tools([tool(
                "github_post_pr_reply",
                json!({"comment_id": id, "message": "Yes: it returns 6 on purpose, see the issue."}),
            )])
        }),
        Turn::text("Detailed pass done."),
        // A second, forced review lists the threads again.
        Turn::text("Architecture pass done again."),
        Turn::tools([tool("github_get_pr_comments", json!({}))]),
        Turn::text("Detailed pass done again."),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_killed_after_posting_the_review_is_finished_by_the_next_without_duplicates() {
    let script = answering_script();
    let Some(world) = World::start(script, "echo ok\n").await else {
        return;
    };
    let question = world
        .pull
        .review_comment("carol", "src/lib.rs", 5, "Why 6?")
        .unwrap();
    // The reply hangs: the process is killed while the review is on GitHub
    // and the reply and labels are not.
    world.sim.inject(FaultRule::operation(
        "pulls/create-reply-for-review-comment",
        Fault::Hang(Duration::from_hours(1)),
    ));
    tokio::task::block_in_place(|| world.kill_after_the_bots_review());
    world.sim.clear_faults();
    assert_eq!(
        world.labels(),
        ["bot-review-needed"],
        "labels changed before the kill"
    );
    let model_requests = world.model.requests().len();

    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("resumed"), "{}", stderr(&output));
    assert_eq!(
        world.model.requests().len(),
        model_requests,
        "the agent ran again"
    );
    assert_eq!(
        world.bot_reviews(),
        1,
        "the review was posted twice: {:#?}\n{}",
        world.pull.reviews().unwrap(),
        stderr(&output)
    );
    let replies: Vec<_> = world
        .pull
        .review_comments()
        .unwrap()
        .into_iter()
        .filter(|comment| comment.in_reply_to == Some(question))
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(
        replies[0].body.contains("returns 6 on purpose"),
        "{}",
        replies[0].body
    );
    assert_eq!(world.labels(), ["bot-changes-needed"]);

    // The answered thread is recorded, and a forced second review does not
    // offer it to the agent again.
    let store = review_store::Store::open(&format!(
        "sqlite://{}",
        world.dir.path().join("store.sqlite3").display()
    ))
    .await
    .unwrap();
    let recorded = store
        .replied_comment_ids(world.pull.number(), "acme/widgets")
        .await
        .unwrap();
    assert!(
        recorded.contains(&review_store::CommentId(question)),
        "{recorded:?}"
    );
    store.close().await;
    let forced = world.review(&["--force"]).await;
    assert!(forced.status.success(), "{}", stderr(&forced));
    let listing: Value = world
        .model
        .requests()
        .last()
        .unwrap()
        .all_tool_results()
        .iter()
        .filter_map(|result| serde_json::from_str::<Value>(&result.text_without_reminders()).ok())
        .rfind(|value| value.get("comments").is_some())
        .expect("the second review listed the threads");
    assert_eq!(listing["total_comments"], 0, "{listing}");
    assert_eq!(listing["replied_comments_filtered"], 1, "{listing}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_confinement_nothing_runs_and_the_refusal_names_the_fixes() {
    let script = Script::new([Turn::text("never asked")]);
    let Some(world) = World::start(script, "echo ok\n").await else {
        return;
    };
    world.sim.clear_requests();
    let target = format!("acme/widgets#{}", world.pull.number());
    let mut command = world.command(&[target.as_str()]);
    command.env(
        "REVIEW_BOT_AGENT_BWRAP_PATH",
        world.dir.path().join("no-bubblewrap-here"),
    );
    let output = tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let message = stderr(&output);
    assert!(message.contains("refusing to run"), "{message}");
    assert!(message.contains("apt-get install bubblewrap"), "{message}");
    assert!(message.contains("sandbox.mode"), "{message}");
    assert!(world.sim.requests().is_empty(), "GitHub was asked");
    assert!(world.model.all_requests().is_empty(), "the model was asked");
    assert_eq!(world.labels(), ["bot-review-needed"]);
}

/// The canary in the bot's own configuration file.
const CANARY: &str = "canary-5f1d-the-build-must-not-see-this";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_build_reaches_nothing_of_the_bots_and_its_plants_never_run() {
    // Outside every job: the bot's config file (with a canary) and its store.
    let outside = tempfile::tempdir().unwrap();
    let outside_path = outside.path().display().to_string();
    let config = outside.path().join("review-bot.toml");
    std::fs::write(&config, format!("[github]\nbot_login = \"{CANARY}\"\n")).unwrap();
    let marker = review_testkit::processes::marker(1);
    let hostile = format!(
        "echo '== config'; cat {outside_path}/review-bot.toml\n\
         echo '== store'; head -c 64 {outside_path}/store.sqlite3\n\
         echo '== env'; env\n\
         echo '== processes'; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < $f; done\n\
         echo '== home'; ls -la /root /home 2>&1\n\
         echo '== write'; touch {outside_path}/escaped\n\
         setsid sleep {marker} >/dev/null 2>&1 </dev/null &\n\
         common=$(git rev-parse --git-common-dir)\n\
         mkdir -p \"$common/hooks\" && printf '#!/bin/sh\\ntouch {outside_path}/hook-ran\\n' > \"$common/hooks/post-checkout\" && chmod +x \"$common/hooks/post-checkout\"\n\
         git config core.fsmonitor 'touch {outside_path}/fsmonitor-ran'\n\
         echo '== done'\n\
         if grep -q 'fn five' src/lib.rs; then exit 1; fi\n"
    );
    let script = Script::new([Turn::text("never asked")]);
    let Some(world) = World::start(script, &hostile).await else {
        return;
    };
    let run = |arguments: &[&str]| {
        let target = format!("acme/widgets#{}", world.pull.number());
        let mut command = world.command(&[target.as_str()]);
        command
            .args(arguments)
            .env("REVIEW_BOT_CONFIG", &config)
            .env(
                "REVIEW_BOT_DATABASE_URL",
                format!("sqlite://{outside_path}/store.sqlite3"),
            );
        command.output().unwrap()
    };
    let output = tokio::task::block_in_place(|| run(&[]));
    assert!(output.status.success(), "{}", stderr(&output));

    let comments = world.pull.issue_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = &comments[0].body;
    assert!(
        body.contains("== done"),
        "the hostile script ran to its end: {body}"
    );
    for secret in [
        CANARY,
        world.bot.token.as_str(),
        "sk-ant-scripted-model-server",
        "SQLite format",
        "REVIEW_BOT_",
    ] {
        assert!(!body.contains(secret), "{secret} reached the build: {body}");
    }
    assert!(
        !outside.path().join("escaped").exists(),
        "the build wrote outside"
    );
    assert_eq!(
        review_testkit::processes::live_processes_with_argument(&marker),
        Vec::<u32>::new(),
        "a process of the build outlived it"
    );

    // A second review of the same repository: nothing the build planted runs.
    let again = tokio::task::block_in_place(|| run(&["--force"]));
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        !outside.path().join("hook-ran").exists(),
        "a planted hook ran"
    );
    assert!(
        !outside.path().join("fsmonitor-ran").exists(),
        "a planted fsmonitor ran"
    );
    assert!(world.model.all_requests().is_empty(), "the model was asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tests_that_fail_on_the_base_branch_too_do_not_stop_the_review() {
    // The suite fails with and without the pull request: not its doing.
    let script = Script::new([
        Turn::text("No architectural concerns."),
        Turn::text("No issues found."),
    ]);
    let Some(world) = World::start(
        script,
        "echo \"\\033[31mflaky on main\\033[0m in $PWD\"\nexit 1\n",
    )
    .await
    else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("fails at")
            && stderr(&output).contains("not this pull request's doing"),
        "{}",
        stderr(&output)
    );
    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "the review went ahead");
    let body = &reviews[0].body;
    assert!(
        body.contains("### Build fails on the base branch too"),
        "{body}"
    );
    assert!(body.contains("`sh test.sh`"), "{body}");
    assert_eq!(
        body.matches("flaky on main in .").count(),
        2,
        "both tails: {body}"
    );
    assert!(!body.contains('\u{1b}'), "{body}");
    assert!(world.pull.issue_comments().unwrap().is_empty());
    assert!(
        !world.labels().contains(&"bot-changes-needed".to_owned()),
        "{:?}",
        world.labels()
    );
    // The agent was told.
    let told = world.model.all_requests().iter().any(|request| {
        request
            .body
            .to_string()
            .contains("fails on this pull request")
    });
    assert!(
        told,
        "the passes were not told about the base branch's failure"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_the_operators_problem_not_the_authors() {
    let script = Script::new([Turn::text("never asked")]);
    let Some(world) = World::start(script, "no-such-compiler --version\n").await else {
        return;
    };
    let output = world.review(&[]).await;
    assert_eq!(output.status.code(), Some(3), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("the bot cannot build acme/widgets")
            && stderr(&output).contains("`no-such-compiler` is not installed"),
        "{}",
        stderr(&output)
    );
    assert!(world.model.all_requests().is_empty(), "the model was asked");
    assert!(world.pull.reviews().unwrap().is_empty());
    assert!(
        world.pull.issue_comments().unwrap().is_empty(),
        "the author was blamed"
    );
    assert_eq!(world.labels(), ["bot-review-needed"]);
}

/// Runs `review-bot review` for `world`'s pull request with the configuration
/// file `config`, off the async runtime.
fn review_with_config(world: &World, config: &Path) -> Output {
    let target = format!("acme/widgets#{}", world.pull.number());
    let mut command = world.command(&[target.as_str()]);
    command.env("REVIEW_BOT_CONFIG", config);
    tokio::task::block_in_place(|| command.output().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_cannot_write_the_config_through_a_link_planted_next_to_its_logs() {
    // The attack (issue 26): the build's HOME is RUN/build/home and the logs
    // RUN/build/NN.log; build.sh links the next command's log to the
    // operator's config, and test.sh prints what would turn confinement off.
    let outside = tempfile::tempdir().unwrap();
    let config = outside.path().join("review-bot.toml");
    let operator = "[review]\nmax_cycles = 3\n";
    std::fs::write(&config, operator).unwrap();
    let planter = format!(
        "ln -sf {config} \"$HOME/../02.log\"\nln -sf {config} \"$HOME/02.log\"\necho building\n",
        config = config.display()
    );
    let script = Script::new([Turn::text("never asked")]);
    let Some(world) = World::start_with(
        script,
        |_| {
            "printf '[sandbox]\\nmode = \"off\"\\n'\nif grep -q 'fn five' src/lib.rs; then exit 1; fi\n"
                .to_owned()
        },
        &[("build.sh", &planter)],
    )
    .await
    else {
        return;
    };
    let output = review_with_config(&world, &config);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), operator);
    assert!(
        world.build_logs().contains("mode = \"off\""),
        "{}",
        world.build_logs()
    );
    assert_eq!(world.labels(), ["bot-changes-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_build_posing_as_bubblewrap_is_blamed_on_the_pull_request() {
    // The attack (issue 26): print what bubblewrap prints when it cannot
    // mount /proc, then end the gate's shell before any command is reported,
    // hoping for a "containment error" that tells the operator to turn
    // confinement off.
    let poser = "echo \"bwrap: Can't mount proc on /newroot/proc: Operation not permitted\" >&2\n\
                 kill -9 $PPID\n";
    let script = Script::new([Turn::text("never asked")]);
    let Some(world) =
        World::start_with(script, |_| "echo ok\n".to_owned(), &[("build.sh", poser)]).await
    else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        !stderr(&output).contains("could not contain"),
        "{}",
        stderr(&output)
    );
    let comments = world.pull.issue_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert!(
        comments[0].body.contains("sh build.sh"),
        "{}",
        comments[0].body
    );
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    assert!(world.model.all_requests().is_empty(), "the model was asked");
}

/// Issue 28, items 3 and 4: three findings on the changed lines, the middle
/// one with a one-click suggestion.
fn three_findings_script() -> Script {
    Script::new([
        Turn::text("Architecture pass done."),
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 4, "message": "`line_4` says nothing of what it does.", "title": "Vague name", "severity": "clarity", "confidence": 45}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 5, "message": "`five` now returns 6: the name lies.", "title": "Misleading name", "severity": "logic", "confidence": 90,
                       "suggestion": "```suggestion\npub fn six() -> u32 { 5 + 1 }\n```"}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 6, "message": "`line_6` could be a constant.", "title": "Could be a constant", "severity": "improvement", "confidence": 70}),
            ),
        ]),
        Turn::text("Detailed pass done."),
    ])
}

/// Runs the review with extra environment variables.
async fn review_with(world: &World, variables: &[(&str, &str)]) -> Output {
    let target = format!("acme/widgets#{}", world.pull.number());
    let mut command = world.command(&[target.as_str()]);
    for (name, value) in variables {
        command.env(name, value);
    }
    tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cap_of_one_inline_comment_puts_the_other_findings_in_the_body_most_serious_first() {
    let Some(world) = World::start(three_findings_script(), "echo tests pass\n").await else {
        return;
    };
    let output = review_with(&world, &[("REVIEW_BOT_REVIEW_MAX_INLINE_COMMENTS", "1")]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let comments = world.pull.review_comments().unwrap();
    assert_eq!(comments.len(), 1, "{comments:?}");
    assert_eq!(comments[0].line, Some(5), "the most serious stays inline");
    let reviews = world.pull.reviews().unwrap();
    let body = &reviews[0].body;
    assert!(body.contains("### More findings"), "{body}");
    assert!(body.contains("at most 1 inline comment "), "{body}");
    let improvement = body.find("`src/lib.rs` line 6 (RIGHT)").expect(body);
    let clarity = body.find("`src/lib.rs` line 4 (RIGHT)").expect(body);
    assert!(improvement < clarity, "ranked by severity: {body}");
    assert!(body.contains("could be a constant") && body.contains("says nothing"));
    assert!(body.contains("2 past the inline cap"), "{body}");
    assert_eq!(world.labels(), ["bot-changes-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_below_the_thresholds_are_not_shown_and_do_not_hold_the_label() {
    let Some(world) = World::start(three_findings_script(), "echo tests pass\n").await else {
        return;
    };
    let output = review_with(
        &world,
        &[
            ("REVIEW_BOT_REVIEW_MIN_SEVERITY", "critical"),
            ("REVIEW_BOT_REVIEW_MIN_CONFIDENCE", "95"),
        ],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(world.pull.review_comments().unwrap().is_empty());
    let body = &world.pull.reviews().unwrap()[0].body;
    assert!(body.contains("3 findings below this repository's thresholds (min_severity critical, min_confidence 95)"), "{body}");
    assert!(body.contains("LGTM"), "{body}");
    assert_eq!(world.labels(), ["human-review-needed"]);
}

/// GitHub's suggestion semantics: lines `start..=end` of the head file become
/// the block's lines.
fn apply_suggestion(head: &str, start: usize, end: usize, block: &str) -> String {
    let lines: Vec<&str> = head.lines().collect();
    let mut out: Vec<&str> = lines[..start - 1].to_vec();
    out.extend(block.lines());
    out.extend(&lines[end..]);
    let mut text = out.join("\n");
    text.push('\n');
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_suggestion_is_posted_as_a_block_that_applies_cleanly() {
    let Some(world) = World::start(three_findings_script(), "echo tests pass\n").await else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let comments = world.pull.review_comments().unwrap();
    assert_eq!(comments.len(), 3, "{comments:?}");
    let suggested = comments
        .iter()
        .find(|comment| comment.line == Some(5))
        .unwrap();
    let body = &suggested.body;
    let start = body.find("```suggestion\n").expect(body) + "```suggestion\n".len();
    let block = &body[start..start + body[start..].find("\n```").expect(body)];
    assert_eq!(block, "pub fn six() -> u32 { 5 + 1 }");
    for other in comments.iter().filter(|comment| comment.line != Some(5)) {
        assert!(!other.body.contains("```suggestion"), "{}", other.body);
    }

    // Apply it as GitHub would, then check the change as a patch with real git.
    let head = library(true);
    let line = usize::try_from(suggested.line.unwrap()).unwrap();
    let first = suggested
        .start_line
        .map_or(line, |start| usize::try_from(start).unwrap());
    let applied = apply_suggestion(&head, first, line, block);
    let repository = tempfile::tempdir().unwrap();
    let git = |arguments: &[&str]| {
        let output = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(arguments)
            .current_dir(repository.path())
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "git {arguments:?}: {}",
            stderr(&output)
        );
        String::from_utf8(output.stdout).unwrap()
    };
    git(&["init", "-q"]);
    std::fs::create_dir(repository.path().join("src")).unwrap();
    std::fs::write(repository.path().join("src/lib.rs"), &head).unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "head"]);
    std::fs::write(repository.path().join("src/lib.rs"), &applied).unwrap();
    let patch = git(&["diff"]);
    git(&["checkout", "--", "."]);
    std::fs::write(repository.path().join("fix.patch"), &patch).unwrap();
    git(&["apply", "--check", "fix.patch"]);
    git(&["apply", "fix.patch"]);
    let fixed = std::fs::read_to_string(repository.path().join("src/lib.rs")).unwrap();
    assert_eq!(fixed.lines().nth(4), Some("pub fn six() -> u32 { 5 + 1 }"));
    assert_eq!(fixed.lines().count(), 40, "only line 5 changed");
    assert_eq!(patch.matches("\n-pub").count(), 1, "{patch}");
}

/// Issue 28, item 1: the first review raises findings on lines 4, 5 and 6;
/// the second (after a commit changing lines 5 and 6) raises nothing.
fn fixed_threads_script() -> Script {
    Script::new([
        Turn::text("Architecture pass done."),
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 4, "message": "`line_4` says nothing of what it does.", "title": "Vague name", "severity": "clarity", "confidence": 70}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 5, "message": "`five` now returns 6: the name lies.", "title": "Misleading name", "severity": "logic", "confidence": 90}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 6, "message": "`line_6` could be a constant.", "title": "Could be a constant", "severity": "improvement", "confidence": 70}),
            ),
        ]),
        Turn::text("Detailed pass done."),
        Turn::text("Architecture pass done again."),
        Turn::text("Detailed pass done again: nothing new."),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_finding_gets_its_thread_resolved_and_the_others_stay_open() {
    let Some(world) = World::start(fixed_threads_script(), "echo tests pass\n").await else {
        return;
    };
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let comments = world.pull.review_comments().unwrap();
    assert_eq!(comments.len(), 3, "{comments:?}");
    let on_line = |line: u64| {
        comments
            .iter()
            .find(|comment| comment.line == Some(line))
            .unwrap()
            .id
    };
    let (four, five, six) = (on_line(4), on_line(5), on_line(6));
    // A person asks a follow-up on the line-6 finding; nobody answers it.
    world.sim.user("octocat");
    world.pull.reply("octocat", six, "Why a constant?").unwrap();

    // The next commit changes lines 5 and 6, not line 4.
    let fixed = library(true)
        .replace(
            "pub fn five() -> u32 { 5 + 1 }",
            "pub fn six() -> u32 { 5 + 1 }",
        )
        .replace("pub fn line_6() {}", "pub const LINE_6: () = ();");
    world
        .pull
        .new_commit()
        .unwrap()
        .modify("src/lib.rs", &fixed)
        .commit()
        .unwrap();
    // As the loop does after a fix: back to review.
    world.pull.remove_label("bot-changes-needed").unwrap();
    world.pull.add_label("bot-review-needed").unwrap();
    let output = world.review(&[]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        world.pull.resolved_threads().unwrap(),
        [five],
        "only the fixed, unanswered-by-nobody thread"
    );
    let reviews = world.pull.reviews().unwrap();
    let body = &reviews.last().unwrap().body;
    assert!(body.contains("### Resolved"), "{body}");
    assert!(
        body.contains("`src/lib.rs` line 5: Misleading name"),
        "{body}"
    );
    assert!(
        !body.contains("Vague name (") && !body.contains(&format!("resolved: {four}")),
        "{body}"
    );
    // Nothing new: the body says what is still open and why the label stays.
    assert!(body.contains("No new findings"), "{body}");
    assert!(body.contains("`bot-changes-needed`"), "{body}");
    assert_eq!(world.labels(), ["bot-changes-needed"]);
    let log = stderr(&output);
    assert!(log.contains("resolve fixed threads"), "{log}");
    let _ = four;
}

/// Issue 28, item 2: real commits of BurntSushi/walkdir (the replayed
/// history of `examples/eval/walkdir.bundle`): the base is "internals:
/// re-arrange implementation", the pull request's first head "bug: fix use
/// of `skip_current_dir`" (`src/lib.rs` and a regression test), its second
/// head "bug: fastidiously increment `oldest_opened`" (`src/lib.rs` only).
struct Walkdir {
    clone: TempDir,
}

impl Walkdir {
    /// The base, the first head and the second head, as revisions of the clone.
    const BASE: &'static str = "origin/master~3";
    const FIRST: &'static str = "origin/master~2";
    const SECOND: &'static str = "origin/master~1";

    fn open() -> Self {
        let clone = tempfile::tempdir().unwrap();
        let bundle =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/eval/walkdir.bundle");
        crate::git(
            clone.path(),
            &["clone", "--quiet", bundle.to_str().unwrap(), "walkdir"],
        );
        Self { clone }
    }

    /// A file at a revision.
    fn file(&self, revision: &str, path: &str) -> String {
        crate::git(
            &self.clone.path().join("walkdir"),
            &["show", &format!("{revision}:{path}")],
        )
    }
}

/// Both passes of one review: the architecture pass says nothing, the
/// detailed pass leaves `findings` (path, line, title, message).
fn review_turns(findings: &[(&str, u32, &str, &str)]) -> Vec<Turn> {
    let mut turns = vec![Turn::text("Architecture pass done.")];
    if !findings.is_empty() {
        turns.push(Turn::tools(findings.iter().map(|(path, line, title, message)| {
            tool(
                "leave_inline_comment",
                json!({"path": path, "line": line, "title": title, "message": message, "severity": "logic", "confidence": 80}),
            )
        })));
    }
    turns.push(Turn::text("Detailed pass done."));
    turns
}

/// The finding of the first review, raised again by the later ones.
const POP_FINDING: (&str, u32, &str, &str) = (
    "src/lib.rs",
    727,
    "pop() closes the handle twice",
    "`self.pop()` also decrements `oldest_opened`; check it cannot underflow here.",
);

/// The finding of the second head's change (line 887: `oldest_opened` is
/// now increased after the push).
const OLDEST_FINDING: (&str, u32, &str, &str) = (
    "src/lib.rs",
    887,
    "Overflow check is unreachable",
    "`checked_add(1).unwrap()` cannot fail here: `oldest_opened < stack_list.len()`.",
);

impl World {
    /// A world on walkdir's real history: `burntsushi/walkdir` at the base,
    /// and a pull request at the first head, labelled `bot-review-needed`.
    async fn walkdir(script: Script, walkdir: &Walkdir) -> Option<Self> {
        review_testkit::tools::claude_for_test()?;
        let sim = GithubSim::start().expect("the simulator starts");
        let bot = sim.user(BOT);
        let mut repo = sim.repo("burntsushi/walkdir");
        for path in ["README.md", "src/lib.rs", "src/tests/recursive.rs"] {
            repo = repo.file(path, &walkdir.file(Walkdir::BASE, path));
        }
        let repo = repo.create().expect("the repository is created");
        repo.add_collaborator(BOT, "write").unwrap();
        let pull = repo
            .pull_request("fix-skip-current-dir")
            .modify("src/lib.rs", &walkdir.file(Walkdir::FIRST, "src/lib.rs"))
            .modify(
                "src/tests/recursive.rs",
                &walkdir.file(Walkdir::FIRST, "src/tests/recursive.rs"),
            )
            .title("bug: fix use of skip_current_dir")
            .label("bot-review-needed")
            .open()
            .expect("the pull request opens");
        let model = ModelServer::start(script)
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

    /// `review-bot review burntsushi/walkdir#N`, after putting
    /// `bot-review-needed` back as the loop does after a push.
    async fn review_again(&self) -> Output {
        for label in self.labels() {
            self.pull.remove_label(&label).unwrap();
        }
        self.pull.add_label("bot-review-needed").unwrap();
        let target = format!("burntsushi/walkdir#{}", self.pull.number());
        let mut command = self.command(&[target.as_str()]);
        tokio::task::spawn_blocking(move || command.output().expect("review-bot runs"))
            .await
            .unwrap()
    }

    /// The user messages of the agent runs since request `from` (one per
    /// pass: the first request of each run).
    fn pass_messages(&self, from: usize) -> Vec<String> {
        self.model.requests()[from..]
            .iter()
            .filter_map(|request| {
                let content = &request.messages().first()?["content"];
                let texts: Vec<String> = match content {
                    Value::String(text) => vec![text.clone()],
                    Value::Array(blocks) => blocks
                        .iter()
                        .filter_map(|block| block["text"].as_str().map(str::to_owned))
                        .collect(),
                    _ => Vec::new(),
                };
                texts
                    .into_iter()
                    .find(|text| text.contains("Review pull request #"))
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    /// The body of the bot's latest review.
    fn last_review_body(&self) -> String {
        self.pull
            .reviews()
            .unwrap()
            .into_iter()
            .rev()
            .find(|review| review.user == BOT && review.body.contains("review::"))
            .map(|review| review.body)
            .unwrap_or_default()
    }
}

/// What one review cost, for the report: agent turns and cost (the CLI's
/// summary line), the model's input as model-sim counts tokens (request
/// bytes / 4), and the REST requests the simulator served.
fn measure(world: &World, output: &Output, model_from: usize) -> String {
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        stderr(output)
    );
    let agent = printed
        .lines()
        .flat_map(|line| line.split(" · "))
        .find(|part| part.starts_with("agent $"))
        .unwrap_or("agent ?")
        .to_owned();
    let input_tokens: usize = world.model.requests()[model_from..]
        .iter()
        .map(|request| request.body.to_string().len() / 4)
        .sum();
    let requests = world.sim.requests();
    let api: Vec<_> = requests
        .iter()
        .filter(|record| record.actor.as_deref() == Some(BOT))
        .filter(|record| {
            record
                .operation_id
                .as_deref()
                .is_some_and(|operation| !operation.starts_with("git/"))
        })
        .collect();
    let graphql = api
        .iter()
        .filter(|record| record.path.ends_with("/graphql"))
        .count();
    let rate_limit: u64 = api.iter().map(|record| record.cost).sum();
    let compare = world.sim.requests_for("repos/compare-commits").len();
    format!(
        "{agent}; model input ≈ {input_tokens} tokens; {} API requests by the bot ({graphql} GraphQL, {compare} compare), {rate_limit} rate-limit units",
        api.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(
    clippy::too_many_lines,
    reason = "one pull request through three heads: full, incremental, force-pushed"
)]
async fn incremental_re_review_covers_the_changes_since_the_last_reviewed_head_and_a_force_push_gets_a_full_one()
 {
    let walkdir = Walkdir::open();
    let mut turns = review_turns(&[POP_FINDING]);
    // The second and third reviews are scripted alike, so their figures
    // compare an incremental and a full review of the same pull request.
    turns.extend(review_turns(&[POP_FINDING, OLDEST_FINDING]));
    turns.extend(review_turns(&[POP_FINDING, OLDEST_FINDING]));
    let Some(world) = World::walkdir(Script::new(turns), &walkdir).await else {
        return;
    };

    // The first review: a full one (nothing reviewed before).
    world.sim.clear_requests();
    let output = world.review_again().await;
    assert!(output.status.success(), "{}", stderr(&output));
    let first_head = world.pull.head_sha().unwrap();
    let body = world.last_review_body();
    assert!(!body.contains("Changes since"), "{body}");
    assert!(!body.contains("Full review:"), "{body}");
    assert!(
        world
            .pass_messages(0)
            .iter()
            .all(|message| !message.contains("This is a re-review")),
        "{:?}",
        world.pass_messages(0)
    );
    let first_measure = measure(&world, &output, 0);

    // The second head: walkdir's next commit, on top of the first.
    world
        .pull
        .new_commit()
        .unwrap()
        .modify("src/lib.rs", &walkdir.file(Walkdir::SECOND, "src/lib.rs"))
        .message("bug: fastidiously increment oldest_opened")
        .commit()
        .unwrap();
    let second_head = world.pull.head_sha().unwrap();
    let model_from = world.model.requests().len();
    world.sim.clear_requests();
    let output = world.review_again().await;
    assert!(output.status.success(), "{}", stderr(&output));
    let incremental_measure = measure(&world, &output, model_from);
    let body = world.last_review_body();
    let short_first = &first_head[..12];
    assert!(
        body.contains(&format!(
            "**Changes since `{short_first}`** (1 commit, 1 file of this pull request)"
        )),
        "{body}"
    );
    let messages = world.pass_messages(model_from);
    assert_eq!(messages.len(), 2, "one message per pass: {messages:?}");
    for message in &messages {
        assert!(
            message.contains(&format!(
                "the bot last reviewed this pull request at {short_first} and the head is now {}, 1 commit later",
                &second_head[..12]
            )),
            "{message}"
        );
        assert!(
            message.contains(&format!("git diff {short_first}..HEAD")),
            "{message}"
        );
        assert!(
            message.contains("They change 1 file of the pull request:\n- \"src/lib.rs\"\n"),
            "the regression test did not change since: {message}"
        );
        assert!(
            message.contains("- \"src/lib.rs\" line 727: \"pop() closes the handle twice\""),
            "the earlier finding: {message}"
        );
        assert!(
            message.contains("git diff 'refs/heads/main...HEAD'"),
            "{message}"
        );
    }
    // The earlier finding raised again on its unchanged line is not posted
    // twice; the new one on the changed line is.
    let comments = world.pull.review_comments().unwrap();
    let lines: Vec<Option<u64>> = comments.iter().map(|comment| comment.line).collect();
    assert_eq!(lines, [Some(727), Some(887)], "{comments:?}");
    assert!(body.contains("raised in an earlier review"), "{body}");
    assert_eq!(
        world.sim.requests_for("repos/compare-commits").len(),
        0,
        "the range comes from the checkout"
    );

    // A force-push: the same tree squashed onto the base. The second head is
    // no longer in the branch's history: a full review, said so.
    let base = world.pull.base_sha().unwrap();
    world
        .pull
        .new_commit()
        .unwrap()
        .force_from(&base)
        .modify("src/lib.rs", &walkdir.file(Walkdir::SECOND, "src/lib.rs"))
        .modify(
            "src/tests/recursive.rs",
            &walkdir.file(Walkdir::SECOND, "src/tests/recursive.rs"),
        )
        .message("Fix skip_current_dir and oldest_opened (squashed)")
        .commit()
        .unwrap();
    let model_from = world.model.requests().len();
    world.sim.clear_requests();
    let output = world.review_again().await;
    assert!(output.status.success(), "{}", stderr(&output));
    let full_measure = measure(&world, &output, model_from);
    let body = world.last_review_body();
    assert!(
        body.contains(&format!(
            "**Full review:** `{}` is no longer in this branch's history (force-pushed or rebased)",
            &second_head[..12]
        )),
        "{body}"
    );
    assert!(!body.contains("Changes since"), "{body}");
    let messages = world.pass_messages(model_from);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(
        messages
            .iter()
            .all(|message| !message.contains("This is a re-review")),
        "{messages:?}"
    );
    // Figures for the report (`--no-capture` shows them).
    eprintln!("first review (full):          {first_measure}");
    eprintln!("second head (incremental):    {incremental_measure}");
    eprintln!("after a force-push (full):    {full_measure}");
}

/// The verifier (a run with `--json-schema`) on the three findings of
/// [`three_findings_script`]: refutes line 4, confirms line 5 with 95,
/// confirms line 6 with only 30. Then the CLI's closing turn.
fn verifier_turns() -> [Turn; 2] {
    [
        Turn::decide(|request| {
            let prompt = request.user_text();
            assert!(
                prompt.contains("You verify findings of a code review"),
                "not the verifier: {prompt}"
            );
            let mut verdicts = Vec::new();
            for (index, section) in prompt.split("## Finding ").skip(1).enumerate() {
                let place = section.lines().nth(2).unwrap_or_default();
                let (verdict, confidence) = if place.starts_with("src/lib.rs:4 ") {
                    ("refuted", 90)
                } else if place.starts_with("src/lib.rs:6 ") {
                    ("confirmed", 30)
                } else {
                    ("confirmed", 95)
                };
                verdicts.push(json!({"finding": index + 1, "verdict": verdict,
                                     "confidence": confidence, "reason": "scripted"}));
            }
            Turn::tool("StructuredOutput", json!({ "verdicts": verdicts }))
        }),
        Turn::text("Verified."),
    ]
}

/// Every `plan.json` under the work directory's runs, concatenated.
fn plans(world: &World) -> String {
    files_under(&world.work_dir().join("runs"))
        .iter()
        .filter(|path| path.file_name().is_some_and(|name| name == "plan.json"))
        .map(|path| std::fs::read_to_string(path).unwrap_or_default())
        .collect()
}

// Issue 27: `review.verify` on a GitHub review. Killed after posting the
// review (the labels hang), then run again: the resumed run posts the same
// plan and asks the model nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verification_pass_withholds_what_it_doubts_and_a_resumed_run_posts_nothing_twice() {
    let [verdicts, closing] = verifier_turns();
    let script = three_findings_script().then(verdicts).then(closing);
    let Some(world) = World::start(script, "echo tests pass\n").await else {
        return;
    };
    for operation in ["issues/add-labels", "issues/remove-label"] {
        world.sim.inject(FaultRule::operation(
            operation,
            Fault::Hang(Duration::from_hours(1)),
        ));
    }
    let target = format!("acme/widgets#{}", world.pull.number());
    let mut command = world.command(&[target.as_str()]);
    command
        .env("REVIEW_BOT_REVIEW_VERIFY", "true")
        .env("REVIEW_BOT_REVIEW_MIN_CONFIDENCE", "40");
    tokio::task::block_in_place(|| kill_after_the_bots_review(&world, command));
    world.sim.clear_faults();
    assert_eq!(world.labels(), ["bot-review-needed"]);
    let model_requests = world.model.requests().len();
    // Posted: only what the verifier confirmed with at least 40.
    let comments = world.pull.review_comments().unwrap();
    assert_eq!(
        comments
            .iter()
            .map(|comment| comment.line)
            .collect::<Vec<_>>(),
        [Some(5)],
        "{comments:#?}"
    );
    let reviews = world.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "{reviews:#?}");
    assert!(
        reviews[0]
            .body
            .contains("2 findings withheld as unlikely by the verification pass"),
        "{}",
        reviews[0].body
    );
    assert!(
        !reviews[0].body.contains("says nothing"),
        "{}",
        reviews[0].body
    );
    // The plan records the withheld findings with the verdicts.
    let plan = plans(&world);
    assert!(plan.contains("\"withheld\""), "{plan}");
    assert!(
        plan.contains("\"refuted\"") && plan.contains("\"confidence\": 30"),
        "{plan}"
    );

    let mut rerun = world.command(&[target.as_str()]);
    rerun
        .env("REVIEW_BOT_REVIEW_VERIFY", "true")
        .env("REVIEW_BOT_REVIEW_MIN_CONFIDENCE", "40");
    let output = tokio::task::spawn_blocking(move || rerun.output().unwrap())
        .await
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stderr(&output).contains("resumed"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("1 inline comment · 2 withheld as unlikely"),
        "the resumed run reads them from the plan: {}",
        stderr(&output)
    );
    assert_eq!(
        world.model.requests().len(),
        model_requests,
        "the agent ran again"
    );
    assert_eq!(world.bot_reviews(), 1);
    assert_eq!(world.pull.review_comments().unwrap().len(), 1);
    assert_eq!(world.labels(), ["bot-changes-needed"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_verifier_is_logged_and_the_findings_go_out_unverified() {
    let script = three_findings_script().then(Turn::http_error(400));
    let Some(world) = World::start(script, "echo tests pass\n").await else {
        return;
    };
    let output = review_with(&world, &[("REVIEW_BOT_REVIEW_VERIFY", "true")]).await;
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("the verification pass failed"), "{log}");
    assert_eq!(world.pull.review_comments().unwrap().len(), 3);
    let body = &world.pull.reviews().unwrap()[0].body;
    assert!(
        body.contains("The verification pass did not run") && body.contains("posted unverified"),
        "{body}"
    );
}

/// Starts `command`, waits until the bot's review is on GitHub, and kills it
/// with SIGKILL.
fn kill_after_the_bots_review(world: &World, mut command: Command) {
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_mins(5);
    while world.bot_reviews() == 0 {
        if let Some(status) = child.try_wait().unwrap() {
            let output = child.wait_with_output().unwrap();
            panic!(
                "review-bot ended ({status}) before posting: {}",
                stderr(&output)
            );
        }
        assert!(Instant::now() < deadline, "no review within five minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}
