//! `review-bot mcp` end to end: the real Claude Code CLI, driven by the
//! scripted model server, calls our tools through the MCP config the runner
//! writes; the test reads what landed in the comments file and the panel.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use review_agent::claude::{
    AgentRun, ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings, McpConfig, McpServerCommand,
};
use review_core::anchor::Side;
use review_core::snapshot::{
    IssueComment, PullRequestInfo, PullRequestSnapshot, ReviewThread, SNAPSHOT_VERSION,
    ThreadComment,
};
use review_mcp::settings::{GITHUB_CREDENTIAL_VARIABLES, github_credential_variables};
use review_testkit::model::{ModelServer, Script, ToolCall, ToolResult, Turn};
use serde_json::{Value, json};
use tempfile::TempDir;

/// `src/lib.rs` changes on new lines 1-7 and 42-45.
const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,5 +1,7 @@
 fn a() {}
+fn b() {}
+fn c() {}
 fn d() {}
 fn e() {}
 fn f() {}
 fn g() {}
@@ -40,3 +42,4 @@
 fn x() {}
+fn y() {}
 fn z() {}
 fn w() {}
";

/// A GitHub-token-shaped value the tests plant in parent environments.
const PLANTED_TOKEN: &str = "ghp_plantedPlantedPlanted0123456789abcd";

fn snapshot() -> PullRequestSnapshot {
    PullRequestSnapshot {
        version: SNAPSHOT_VERSION,
        repository: "octo/widgets".into(),
        bot_login: Some("review-bot[bot]".into()),
        pull_request: PullRequestInfo {
            number: 42,
            title: "Add b and c".into(),
            body: String::new(),
            author: "alice".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            base_sha: "a".repeat(40),
            head_sha: "b".repeat(40),
        },
        diff: DIFF.into(),
        files: Vec::new(),
        files_truncated: false,
        review_threads: vec![ReviewThread {
            path: "src/lib.rs".into(),
            line: Some(2),
            start_line: None,
            side: Some(Side::Right),
            diff_hunk: "@@ -1,5 +1,7 @@\n fn a() {}\n+fn b() {}".into(),
            outdated: false,
            replied: false,
            comments: vec![
                ThreadComment {
                    id: 101,
                    user: "carol".into(),
                    body: "Is `b` used?".into(),
                    created_at: String::new(),
                },
                ThreadComment {
                    id: 102,
                    user: "alice".into(),
                    body: "Yes, later.".into(),
                    created_at: String::new(),
                },
            ],
        }],
        issue_comments: vec![IssueComment {
            id: 9001,
            user: "dave".into(),
            body: "Please add tests.".into(),
            created_at: String::new(),
            replied: true,
        }],
    }
}

/// One test's world: the scripted model, a checkout, a run directory holding
/// the snapshot and the comments file, and the runner.
struct World {
    model: ModelServer,
    checkout: TempDir,
    run_directory: TempDir,
    claude: ClaudeCode,
}

impl World {
    /// `None` (after saying why) when the pinned CLI is not installed and not required.
    async fn start(script: Script) -> Option<Self> {
        let claude = review_testkit::tools::claude_for_test()?;
        let model = ModelServer::start(script)
            .await
            .expect("the model server starts");
        let settings = ClaudeCodeSettings::new(claude, "claude-opus-4-6")
            .with_base_url(model.base_url())
            .with_api_key("sk-ant-scripted-model-server".into())
            .with_max_retries(0)
            .with_timeout(Duration::from_mins(3));
        let world = Self {
            model,
            checkout: tempfile::tempdir().unwrap(),
            run_directory: tempfile::tempdir().unwrap(),
            claude: ClaudeCode::new(settings),
        };
        std::fs::write(world.snapshot_file(), snapshot().to_json()).unwrap();
        Some(world)
    }

    fn snapshot_file(&self) -> PathBuf {
        self.run_directory.path().join("snapshot.json")
    }

    fn comments_file(&self) -> PathBuf {
        self.run_directory.path().join("comments.jsonl")
    }

    fn socket(&self) -> PathBuf {
        self.run_directory.path().join("panel.sock")
    }

    /// The environment the pipeline gives `review-bot mcp`.
    fn server_environment(&self) -> BTreeMap<String, String> {
        [
            ("REVIEW_BOT_SNAPSHOT", self.snapshot_file()),
            ("COMMENTS_FILE", self.comments_file()),
            ("REVIEW_BOT_REVIEW_PANEL_SOCKET", self.socket()),
            ("REVIEW_BOT_RUN_DIR", self.run_directory.path().to_owned()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value.display().to_string()))
        .collect()
    }

    /// Runs Claude Code with `review-bot mcp` registered as `review`; the run must succeed.
    async fn run(&self) -> AgentRun {
        let server = McpServerCommand::review_bot(
            env!("CARGO_BIN_EXE_review-bot"),
            Vec::new(),
            self.server_environment(),
        );
        let run = ClaudeCodeRun::new(
            "Review pull request #42.",
            self.checkout.path(),
            self.run_directory.path().join("claude"),
        )
        .with_mcp(McpConfig::review(server));
        let result = self.claude.run(&run).await.expect("Claude Code runs");
        assert!(result.is_success(), "the run failed: {result:?}");
        result
    }

    /// The comments file's lines, each parsed as JSON (an unparsable line fails the test).
    fn lines(&self) -> Vec<Value> {
        match std::fs::read_to_string(self.comments_file()) {
            Ok(text) => text
                .lines()
                .map(|line| {
                    serde_json::from_str(line)
                        .unwrap_or_else(|error| panic!("torn line ({error}): {line}"))
                })
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Every tool result the model received, in order.
    fn tool_results(&self) -> Vec<ToolResult> {
        self.model
            .requests()
            .last()
            .map(review_testkit::model::RecordedRequest::all_tool_results)
            .unwrap_or_default()
    }
}

fn tool(name: &str, input: Value) -> ToolCall {
    ToolCall::new(format!("mcp__review__{name}"), input)
}

#[tokio::test]
async fn each_tool_called_by_the_model_lands_as_expected() {
    let script = Script::new([
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 3, "message": "`c` is unused.", "severity": "improvement", "confidence": 70}),
            ),
            tool(
                "leave_general_comment",
                json!({"message": "Small, focused change."}),
            ),
            tool("github_get_pr_comments", json!({})),
        ]),
        Turn::tools([
            tool(
                "github_post_pr_reply",
                json!({"comment_id": 101, "message": "It is used in #43."}),
            ),
            tool(
                "present_review",
                json!({"content": "# Review\n\nLooks fine.", "baseUri": "/work/checkout"}),
            ),
        ]),
        Turn::text("Review complete."),
    ]);
    let Some(world) = World::start(script).await else {
        return;
    };
    world.run().await;

    let results = world.tool_results();
    assert_eq!(results.len(), 5, "{results:?}");
    assert!(results.iter().all(|result| !result.is_error), "{results:?}");
    let comments: Value = serde_json::from_str(&results[2].text_without_reminders()).unwrap();
    assert_eq!(comments["total_comments"], 1);
    assert_eq!(comments["replied_comments_filtered"], 1);
    assert_eq!(comments["comments"][0]["id"], 101);
    assert_eq!(comments["comments"][0]["replies"][0]["id"], 102);

    let mut lines = world.lines();
    lines.sort_by_key(|line| line["type"].as_str().unwrap().to_owned());
    assert_eq!(
        lines,
        [
            json!({"type": "general", "message": "Small, focused change."}),
            json!({"type": "inline", "message": "`c` is unused.", "path": "src/lib.rs", "line": 3, "severity": "improvement", "confidence": 70}),
            json!({"type": "reply", "comment_id": 101, "target": "review_comment", "message": "It is used in #43."}),
        ]
    );
    // No panel listens in this test: the review went to the run directory.
    assert_eq!(
        std::fs::read_to_string(world.run_directory.path().join("review.md")).unwrap(),
        "# Review\n\nLooks fine."
    );
}

#[tokio::test]
async fn a_burst_of_fifty_tool_calls_in_one_turn_yields_fifty_intact_lines() {
    let calls = (0..50).map(|index| {
        // Long messages, so that a torn or interleaved write would show.
        let message = format!("finding {index}: {}", "detail ".repeat(500));
        if index % 2 == 0 {
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 1 + index % 7, "message": message}),
            )
        } else {
            tool("leave_general_comment", json!({"message": message}))
        }
    });
    let Some(world) = World::start(Script::new([Turn::tools(calls), Turn::text("Done.")])).await
    else {
        return;
    };
    world.run().await;

    let results = world.tool_results();
    assert_eq!(results.len(), 50);
    assert!(results.iter().all(|result| !result.is_error), "{results:?}");
    let lines = world.lines();
    assert_eq!(lines.len(), 50);
    let mut indexes: Vec<u64> = lines
        .iter()
        .map(|line| {
            let message = line["message"].as_str().unwrap();
            assert!(
                message.ends_with(&"detail ".repeat(500)),
                "damaged: {message}"
            );
            message["finding ".len()..message.find(':').unwrap()]
                .parse()
                .unwrap()
        })
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, (0..50).collect::<Vec<_>>());
}

/// A line near a hunk is recorded where it lands (issue 25 item 8: never
/// refused and lost); a path that climbs out is refused with what to do, and
/// the model corrects it.
#[tokio::test]
async fn corrective_errors_let_the_model_fix_its_calls() {
    let script = Script::new([
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 9, "message": "off the diff"}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "../src/lib.rs", "line": 2, "message": "climbs out"}),
            ),
        ]),
        Turn::decide(|request| {
            let results = request.last_tool_results();
            let as_expected = results.iter().any(|result| {
                !result.is_error && result.text.contains("it will be posted on line 7")
            }) && results
                .iter()
                .any(|result| result.is_error && result.text.contains("`..`"));
            if as_expected {
                Turn::tools([tool(
                    "leave_inline_comment",
                    json!({"path": "src/lib.rs", "line": 2, "message": "climbs out, corrected"}),
                )])
            } else {
                Turn::text(format!("unexpected tool results: {results:?}"))
            }
        }),
        Turn::text("Done."),
    ]);
    let Some(world) = World::start(script).await else {
        return;
    };
    let run = world.run().await;
    assert_eq!(
        run.result.as_deref(),
        Some("Done."),
        "the model did not get the expected answers"
    );

    let results = world.tool_results();
    let errors: Vec<String> = results
        .iter()
        .filter(|result| result.is_error)
        .map(ToolResult::text_without_reminders)
        .collect();
    assert_eq!(errors.len(), 1, "{results:?}");
    let mut lines = world.lines();
    lines.sort_by_key(|line| line["line"].as_u64());
    assert_eq!(
        lines,
        [
            json!({"type": "inline", "message": "climbs out, corrected", "path": "src/lib.rs", "line": 2}),
            json!({"type": "inline", "message": "off the diff", "path": "src/lib.rs", "line": 7}),
        ]
    );
}

#[tokio::test]
async fn present_review_reaches_a_listening_panel_in_all_three_modes() {
    let script = Script::new([
        Turn::tool(
            "mcp__review__present_review",
            json!({"content": "# Review\n\n## Risks\n\nNone yet.\n\n## Tests\n\nMissing.\n", "baseUri": "/work/checkout"}),
        ),
        Turn::tool(
            "mcp__review__present_review",
            json!({"content": "One risk: `c` is unused.", "mode": "update-section", "section": "Risks", "baseUri": "/work/checkout"}),
        ),
        Turn::tool(
            "mcp__review__present_review",
            json!({"content": "## Verdict\n\nApprove after tests.", "mode": "append", "baseUri": "/work/checkout"}),
        ),
        Turn::text("Presented."),
    ]);
    let Some(world) = World::start(script).await else {
        return;
    };
    let received = listen_as_panel(&world.socket());
    world.run().await;

    let messages = received.lock().unwrap().clone();
    let modes: Vec<&str> = messages
        .iter()
        .map(|message| message["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["replace", "update-section", "append"]);
    assert_eq!(messages[1]["section"], "Risks");
    assert_eq!(
        messages[2]["document"],
        "# Review\n\n## Risks\n\nOne risk: `c` is unused.\n\n## Tests\n\nMissing.\n\n## Verdict\n\nApprove after tests."
    );
    assert!(
        messages
            .iter()
            .all(|message| message["baseUri"] == "/work/checkout")
    );
    let results = world.tool_results();
    assert!(
        results
            .iter()
            .all(|result| !result.is_error && result.text.contains("\"delivered_to\":\"panel\"")),
        "{results:?}"
    );
    assert!(!world.run_directory.path().join("review.md").exists());
}

/// A review panel on `socket` that acknowledges each message and keeps it.
fn listen_as_panel(socket: &Path) -> Arc<Mutex<Vec<Value>>> {
    use std::io::{BufRead as _, BufReader, Write as _};
    let listener = std::os::unix::net::UnixListener::bind(socket).expect("the panel socket binds");
    let received = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&received);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut line = String::new();
            BufReader::new(&stream).read_line(&mut line).unwrap();
            kept.lock()
                .unwrap()
                .push(serde_json::from_str(&line).unwrap());
            stream.write_all(b"{\"ok\":true}\n").unwrap();
        }
    });
    received
}

/// Set by the outer half of the credential test for its inner half.
const INNER_VARIABLE: &str = "REVIEW_BOT_TEST_PLANTED_GITHUB_TOKEN";

/// Runs the whole pipeline-mode setup from a parent process that holds GitHub
/// tokens, and reads the MCP server's own environment (`/proc/PID/environ`)
/// while Claude Code is talking to it: no GitHub credential may be there.
#[tokio::test]
async fn in_pipeline_mode_the_mcp_server_holds_no_github_token() {
    if std::env::var_os(INNER_VARIABLE).is_none() {
        // Outer half: rerun this test in a child whose environment holds tokens.
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "mcp::in_pipeline_mode_the_mcp_server_holds_no_github_token",
                "--exact",
                "--nocapture",
            ])
            .env(INNER_VARIABLE, "1")
            .env("GITHUB_TOKEN", PLANTED_TOKEN)
            .env("GH_TOKEN", PLANTED_TOKEN)
            .env("GITHUB_PERSONAL_ACCESS_TOKEN", PLANTED_TOKEN)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "the inner run failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }

    // Inner half. While the model answers its first request, Claude Code has
    // connected to the MCP server, so the server process is alive: find it by
    // the comments file in its environment and keep that environment.
    let seen: Arc<Mutex<Option<Environment>>> = Arc::default();
    let marker: Arc<Mutex<String>> = Arc::default();
    let (seen_by_model, marker_for_model) = (Arc::clone(&seen), Arc::clone(&marker));
    let script = Script::new([
        Turn::decide(move |_| {
            let wanted = format!("COMMENTS_FILE={}", marker_for_model.lock().unwrap());
            *seen_by_model.lock().unwrap() = find_process_environment("mcp", &wanted);
            Turn::tool(
                "mcp__review__leave_general_comment",
                json!({"message": "checked"}),
            )
        }),
        Turn::text("Done."),
    ]);
    let Some(world) = World::start(script).await else {
        return;
    };
    *marker.lock().unwrap() = world.comments_file().display().to_string();
    world.run().await;

    let environment = seen
        .lock()
        .unwrap()
        .clone()
        .expect("the MCP server process was found while it ran");
    let names: Vec<&str> = environment.iter().map(|(name, _)| name.as_str()).collect();
    assert!(names.contains(&"REVIEW_BOT_SNAPSHOT"), "{names:?}");
    for (name, value) in &environment {
        assert!(
            !GITHUB_CREDENTIAL_VARIABLES.contains(&name.as_str()),
            "{name} reached the MCP server"
        );
        assert!(
            !value.contains(PLANTED_TOKEN),
            "{name} carries the planted token"
        );
    }
    assert_eq!(
        github_credential_variables(environment),
        Vec::<String>::new()
    );
    assert_eq!(
        world.lines(),
        [json!({"type": "general", "message": "checked"})]
    );
}

/// A process environment as `(name, value)` pairs.
type Environment = Vec<(String, String)>;

/// The environment of the process whose command line has `argument` and whose
/// environment has the entry `wanted` (`NAME=value`).
fn find_process_environment(argument: &str, wanted: &str) -> Option<Environment> {
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let directory = entry.path();
        let Ok(command_line) = std::fs::read(directory.join("cmdline")) else {
            continue;
        };
        if !command_line
            .split(|byte| *byte == 0)
            .any(|part| part == argument.as_bytes())
        {
            continue;
        }
        let Ok(environ) = std::fs::read(directory.join("environ")) else {
            continue;
        };
        let entries: Vec<String> = environ
            .split(|byte| *byte == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect();
        if entries.iter().any(|entry| entry == wanted) {
            return Some(
                entries
                    .into_iter()
                    .filter_map(|entry| {
                        entry
                            .split_once('=')
                            .map(|(name, value)| (name.to_owned(), value.to_owned()))
                    })
                    .collect(),
            );
        }
    }
    None
}

#[test]
fn the_server_refuses_to_start_with_a_github_token_in_its_environment() {
    let directory = tempfile::tempdir().unwrap();
    let output = crate::review_bot(directory.path())
        .arg("mcp")
        .env_clear()
        .env("GH_TOKEN", PLANTED_TOKEN)
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = crate::text(&output.stderr);
    assert!(
        stderr.contains("refusing to start in pipeline mode"),
        "{stderr}"
    );
    assert!(stderr.contains("GH_TOKEN"), "{stderr}");
    assert!(
        !stderr.contains(PLANTED_TOKEN),
        "the token leaked into the message: {stderr}"
    );
}

#[test]
fn a_broken_snapshot_stops_the_server_with_a_clear_message() {
    let directory = tempfile::tempdir().unwrap();
    let snapshot = directory.path().join("snapshot.json");
    std::fs::write(&snapshot, "{\"version\": 9}").unwrap();
    let output = crate::review_bot(directory.path())
        .args(["mcp", "--snapshot"])
        .arg(&snapshot)
        .env_clear()
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = crate::text(&output.stderr);
    assert!(stderr.contains("format version 9"), "{stderr}");
    assert!(stderr.contains("snapshot.json"), "{stderr}");
}
