//! The runner against the real CLI: results, flags, Claude Code's own tools,
//! error subtypes, and the environment the CLI sees.

use review_agent::AgentError;
use review_agent::claude::{AgentOutcome, Thinking, is_github_credential};
use review_testkit::model::{Script, ToolCall, Turn};
use serde_json::{Value, json};

use crate::support::{Harness, MODEL, tiny_mcp_server};

#[tokio::test]
async fn a_text_answer_is_a_success_with_turns_cost_and_session() {
    let Some(harness) = Harness::start(Script::new([Turn::text("All good.")])).await else {
        return;
    };
    let prompt_file = harness.run_directory.path().join("prompt.md");
    std::fs::write(&prompt_file, "REVIEW-BOT APPENDED PROMPT").unwrap();
    let run = harness
        .run("Review the change.")
        .with_system_prompt_file(&prompt_file);

    let agent_run = harness.claude().run(&run).await.unwrap();

    assert_eq!(agent_run.outcome, AgentOutcome::Success);
    assert_eq!(agent_run.result.as_deref(), Some("All good."));
    assert_eq!(agent_run.num_turns, 1);
    assert!(
        agent_run
            .session_id
            .as_deref()
            .is_some_and(|id| !id.is_empty())
    );
    assert!(agent_run.total_cost_usd > 0.0);
    assert_eq!(agent_run.usage.input_tokens, 1_000);
    assert_eq!(agent_run.usage.output_tokens, 100);
    assert_eq!(agent_run.exit_code, Some(0));

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].model(), Some(MODEL));
    assert!(
        requests[0]
            .system_text()
            .ends_with("REVIEW-BOT APPENDED PROMPT\n")
            || requests[0]
                .system_text()
                .contains("REVIEW-BOT APPENDED PROMPT")
    );
    assert!(requests[0].user_text().contains("Review the change."));
    // Non-essential traffic is off: the conversation is all the CLI sent.
    assert_eq!(harness.server.all_requests().len(), 1);

    // The transcript holds the stream, init first and result last.
    let transcript = std::fs::read_to_string(&run.transcript_path).unwrap();
    let events: Vec<Value> = transcript
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["subtype"], "init");
    assert_eq!(events.last().unwrap()["type"], "result");
}

#[tokio::test]
async fn every_flag_the_runner_passes_is_accepted_by_the_pinned_cli() {
    let Some(mut harness) = Harness::start(Script::new([Turn::text("flags ok")])).await else {
        return;
    };
    harness.settings = harness
        .settings
        .clone()
        .with_thinking(Thinking::Adaptive)
        .with_max_turns(3)
        .with_max_budget_usd(5.0);
    let prompt_file = harness.run_directory.path().join("prompt.md");
    std::fs::write(&prompt_file, "appended").unwrap();
    let run = harness
        .run("probe")
        .with_system_prompt_file(&prompt_file)
        .with_mcp(tiny_mcp_server(&[]))
        .with_allowed_tools(["Read".to_owned(), "mcp__review__echo_env".to_owned()]);
    let claude = harness.claude();

    // Every optional flag is in this run's command line…
    let mcp_config = run.run_directory.join("mcp-config.json");
    let arguments: Vec<String> = claude
        .arguments(&run, Some(&mcp_config))
        .into_iter()
        .map(|argument| argument.into_string().unwrap())
        .collect();
    for flag in [
        "--print",
        "--output-format",
        "--verbose",
        "--model",
        "--max-turns",
        "--thinking",
        "--append-system-prompt-file",
        "--mcp-config",
        "--strict-mcp-config",
        "--dangerously-skip-permissions",
        "--no-session-persistence",
        "--allowedTools",
        "--max-budget-usd",
    ] {
        assert!(
            arguments.iter().any(|argument| argument == flag),
            "{flag} not probed"
        );
    }
    // …and the CLI runs with all of them.
    let agent_run = claude.run(&run).await.unwrap();
    assert_eq!(agent_run.outcome, AgentOutcome::Success, "{agent_run:?}");
    assert_eq!(agent_run.result.as_deref(), Some("flags ok"));
    for thinking in [Thinking::Enabled, Thinking::Disabled] {
        let server = review_testkit::model::ModelServer::start(Script::new([Turn::text("ok")]))
            .await
            .unwrap();
        let settings = harness
            .settings
            .clone()
            .with_thinking(thinking)
            .with_base_url(server.base_url());
        let run = harness.run("probe").with_transcript_path(
            harness
                .run_directory
                .path()
                .join(format!("{thinking:?}.jsonl")),
        );
        let agent_run = review_agent::claude::ClaudeCode::new(settings)
            .run(&run)
            .await
            .unwrap();
        assert!(
            agent_run.is_success(),
            "--thinking {}: {agent_run:?}",
            thinking.as_flag()
        );
    }
}

#[tokio::test]
async fn the_pinned_cli_rejects_an_unknown_flag_so_the_probe_means_something() {
    let Some(claude) = review_testkit::tools::claude_for_test() else {
        return;
    };
    let output = tokio::process::Command::new(claude)
        .args(["--print", "--no-such-flag", "--", "hello"])
        .env_clear()
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown option '--no-such-flag'"));
}

#[tokio::test]
async fn claude_codes_own_tools_write_edit_and_run_commands_in_the_checkout() {
    let script = Script::new([
        Turn::decide(|request| {
            let directory = request.user_text();
            let directory = directory
                .lines()
                .find_map(|line| line.trim().strip_prefix("- Primary working directory: "))
                .expect("the CLI tells the model its working directory")
                .to_owned();
            Turn::tools([
                ToolCall::new(
                    "Write",
                    json!({"file_path": format!("{directory}/src/lib.rs"), "content": "pub fn answer() -> u32 { 41 }\n"}),
                ),
                ToolCall::new(
                    "Bash",
                    json!({"command": "printf 'built\\n' > build.log && pwd", "description": "Record a build"}),
                ),
            ])
        }),
        Turn::decide(|request| {
            let results = request.last_tool_results();
            assert_eq!(results.len(), 2, "{results:?}");
            assert!(results.iter().all(|result| !result.is_error), "{results:?}");
            let path = request
                .messages()
                .iter()
                .flat_map(|message| message["content"].as_array().cloned().unwrap_or_default())
                .find_map(|block| block["input"]["file_path"].as_str().map(str::to_owned))
                .unwrap();
            Turn::tool(
                "Edit",
                json!({"file_path": path, "old_string": "41", "new_string": "42"}),
            )
        }),
        Turn::decide(|request| {
            let results = request.last_tool_results();
            assert_eq!(results[0].tool_name.as_deref(), Some("Edit"));
            assert!(!results[0].is_error, "{results:?}");
            Turn::text("Fixed.")
        }),
    ]);
    let Some(harness) = Harness::start(script).await else {
        return;
    };
    std::fs::create_dir(harness.checkout_file("src")).unwrap();

    let agent_run = harness
        .claude()
        .run(&harness.run("Fix the answer."))
        .await
        .unwrap()
        .into_success()
        .unwrap();

    // The CLI counts parallel tool calls in its turns; three answers, at least three turns.
    assert!(agent_run.num_turns >= 3, "{agent_run:?}");
    assert_eq!(harness.server.requests().len(), 3);
    assert_eq!(
        std::fs::read_to_string(harness.checkout_file("src/lib.rs")).unwrap(),
        "pub fn answer() -> u32 { 42 }\n"
    );
    assert_eq!(
        std::fs::read_to_string(harness.checkout_file("build.log")).unwrap(),
        "built\n"
    );
}

#[tokio::test]
async fn a_model_that_keeps_calling_tools_ends_with_max_turns() {
    let Some(mut harness) = Harness::start(Script::new([]).then_forever(Turn::tool(
        "Bash",
        json!({"command": "true", "description": "again"}),
    )))
    .await
    else {
        return;
    };
    harness.settings.max_turns = 2;

    let agent_run = harness.claude().run(&harness.run("Loop.")).await.unwrap();

    assert_eq!(agent_run.outcome, AgentOutcome::MaxTurns, "{agent_run:?}");
    assert!(agent_run.num_turns >= 2);
    let error = agent_run.into_success().unwrap_err();
    assert!(matches!(error, AgentError::Unsuccessful { .. }));
    assert!(error.to_string().contains("max_turns"), "{error}");
}

#[tokio::test]
async fn a_run_past_its_budget_ends_with_max_budget() {
    let Some(mut harness) = Harness::start(
        Script::new([]).then_forever(
            Turn::tool("Bash", json!({"command": "true", "description": "again"}))
                .with_usage(1_000_000, 100_000),
        ),
    )
    .await
    else {
        return;
    };
    harness.settings = harness
        .settings
        .clone()
        .with_max_budget_usd(0.5)
        .with_max_turns(10);

    let agent_run = harness.claude().run(&harness.run("Spend.")).await.unwrap();

    assert_eq!(agent_run.outcome, AgentOutcome::MaxBudget, "{agent_run:?}");
    assert!(agent_run.total_cost_usd >= 0.5);
}

#[tokio::test]
async fn a_500_from_the_model_is_reported_as_an_api_error() {
    let Some(harness) = Harness::start(Script::new([]).then_forever(Turn::http_error(500))).await
    else {
        return;
    };

    let agent_run = harness.claude().run(&harness.run("Try.")).await.unwrap();

    match &agent_run.outcome {
        AgentOutcome::ApiError { status, message } => {
            assert_eq!(*status, Some(500));
            assert!(message.contains("injected HTTP 500"), "{message}");
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(agent_run.exit_code, Some(1));
    // CLAUDE_CODE_MAX_RETRIES=0: one request, no retries.
    assert_eq!(harness.server.requests().len(), 1);
    let error = agent_run.into_success().unwrap_err().to_string();
    assert!(error.contains("HTTP 500"), "{error}");
}

#[tokio::test]
async fn the_cli_environment_is_minimal_and_holds_no_github_credential() {
    let Some(harness) = Harness::start(Script::new([
        Turn::tool(
            "Bash",
            json!({"command": "env", "description": "Show the environment"}),
        ),
        Turn::text("seen"),
    ]))
    .await
    else {
        return;
    };
    let run = harness
        .run("Show me.")
        .with_env("REVIEW_BOT_TEST_MARKER", "present");

    harness
        .claude()
        .run(&run)
        .await
        .unwrap()
        .into_success()
        .unwrap();

    let requests = harness.server.requests();
    let results = requests[1].last_tool_results();
    let environment = &results[0].text;
    let names: Vec<&str> = environment
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    assert!(names.contains(&"REVIEW_BOT_TEST_MARKER"), "{environment}");
    assert!(names.contains(&"PATH"), "{environment}");
    assert!(
        !names.iter().any(|name| is_github_credential(name)),
        "{environment}"
    );
    // Nothing of the test process's own environment leaks (cargo sets CARGO_PKG_* for tests).
    assert!(!names.contains(&"CARGO_MANIFEST_DIR"), "{environment}");
    // The agent's home is the run's own, not ours.
    let home = environment
        .lines()
        .find_map(|line| line.strip_prefix("HOME="))
        .unwrap();
    assert!(
        home.starts_with(harness.run_directory.path().to_str().unwrap()),
        "{home}"
    );
    assert!(
        !names.contains(&"RUST_TEST_THREADS")
            && !names.contains(&"REVIEW_BOT_REQUIRE_ALL_TEST_DEPS"),
        "{environment}"
    );
}
