//! The scripted model server against the real, pinned Claude Code CLI (run
//! directly here; review-agent's runner has its own tests on top).

use std::path::Path;
use std::process::Output;

use review_testkit::model::{ModelServer, RecordedRequest, RequestKind, Script, ToolCall, Turn};
use review_testkit::tools::claude_for_test;
use serde_json::{Value, json};

/// Runs `claude -p prompt` in `directory` against `server`, with a minimal environment.
async fn run_claude(
    claude: &Path,
    server: &ModelServer,
    directory: &Path,
    extra: &[(&str, &str)],
) -> (Value, Output) {
    let config = directory.join(".claude-config");
    let mut command = tokio::process::Command::new(claude);
    command
        .args([
            "-p",
            "Do the scripted thing.",
            "--output-format",
            "json",
            "--model",
            "claude-opus-4-6",
        ])
        .args([
            "--max-turns",
            "8",
            "--dangerously-skip-permissions",
            "--no-session-persistence",
        ])
        .current_dir(directory)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &config)
        .env("CLAUDE_CONFIG_DIR", &config)
        .env("ANTHROPIC_BASE_URL", server.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("IS_SANDBOX", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .stdin(std::process::Stdio::null());
    for (key, value) in extra {
        command.env(key, value);
    }
    let output = command.output().await.expect("claude runs");
    let result = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "claude printed no JSON result ({error}); stdout: {}; stderr: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (result, output)
}

#[tokio::test]
async fn a_scripted_write_lands_and_the_final_text_is_the_result() {
    let Some(claude) = claude_for_test() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let target = directory.path().join("notes/hello.txt");
    let server = ModelServer::start(Script::new([
        Turn::tools([ToolCall::new(
            "Write",
            json!({"file_path": target, "content": "hello from the script\n"}),
        )])
        .with_text("Writing the file."),
        Turn::decide(|request| {
            let results = request.last_tool_results();
            assert_eq!(results.len(), 1, "one tool result: {results:?}");
            assert_eq!(results[0].tool_name.as_deref(), Some("Write"));
            assert!(!results[0].is_error, "{results:?}");
            Turn::text("Wrote it.").with_usage(2_000, 300)
        }),
    ]))
    .await
    .unwrap();

    let (result, output) = run_claude(
        &claude,
        &server,
        directory.path(),
        &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
    )
    .await;

    assert!(output.status.success(), "{result}");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "Wrote it.");
    assert_eq!(result["num_turns"], 2);
    assert_eq!(result["usage"]["input_tokens"], 3_000);
    assert_eq!(result["usage"]["output_tokens"], 400);
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "hello from the script\n"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(RecordedRequest::is_streaming));
    assert!(requests[0].tool_names().iter().any(|name| name == "Write"));
    assert!(requests[0].user_text().contains("Do the scripted thing."));
    assert_eq!(server.remaining_turns(), 0);
    assert_eq!(server.exhausted_requests(), 0);
    // With non-essential traffic off the CLI sends nothing else.
    assert_eq!(server.all_requests().len(), 2);
}

#[tokio::test]
async fn non_essential_traffic_is_recorded_apart_from_the_conversation() {
    let Some(claude) = claude_for_test() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Script::new([Turn::text("hi")]))
        .await
        .unwrap();

    let (result, _) = run_claude(&claude, &server, directory.path(), &[]).await;

    assert_eq!(result["result"], "hi");
    assert_eq!(server.requests().len(), 1);
    let others: Vec<_> = server
        .all_requests()
        .into_iter()
        .filter(|request| request.kind == RequestKind::Other)
        .map(|request| format!("{} {}", request.method, request.path))
        .collect();
    assert!(
        others
            .iter()
            .all(|other| !other.starts_with("POST /v1/messages?")),
        "{others:?}"
    );
}

#[tokio::test]
async fn an_exhausted_script_fails_the_run_with_a_message_saying_so() {
    let Some(claude) = claude_for_test() else {
        return;
    };
    let directory = tempfile::tempdir().unwrap();
    let server = ModelServer::start(Script::new([Turn::tool(
        "Bash",
        json!({"command": "true", "description": "nothing"}),
    )]))
    .await
    .unwrap();

    let (result, output) = run_claude(
        &claude,
        &server,
        directory.path(),
        &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
    )
    .await;

    assert!(!output.status.success());
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["result"]
            .as_str()
            .unwrap()
            .contains("script exhausted"),
        "{result}"
    );
    assert_eq!(server.exhausted_requests(), 1);
}

/// Runs one scripted conversation with `retries` API retries and returns the
/// result and the main requests.
async fn run_with_retries(script: Script, retries: &str) -> (Value, Vec<RecordedRequest>) {
    let claude = claude_for_test().expect("checked by the caller");
    let directory = tempfile::tempdir().unwrap();
    let server = ModelServer::start(script).await.unwrap();
    let (result, _) = run_claude(
        &claude,
        &server,
        directory.path(),
        &[
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("CLAUDE_CODE_MAX_RETRIES", retries),
        ],
    )
    .await;
    (result, server.requests())
}

#[tokio::test]
async fn injected_faults_end_the_run_as_api_errors() {
    if claude_for_test().is_none() {
        return;
    }
    for (turn, expected) in [
        (Turn::http_error(500), "API Error: 500"),
        (Turn::overloaded(), "API Error: 529"),
        (Turn::cut_mid_event(), "Connection dropped"),
        (Turn::invalid_json(), "JSON Parse error"),
    ] {
        let description = format!("{turn:?}");
        // Enough copies for the CLI's fallback from streaming to one plain request.
        let (result, requests) = run_with_retries(Script::new(vec![turn; 3]), "0").await;
        assert_eq!(result["is_error"], true, "{description}: {result}");
        let message = result["result"].as_str().unwrap_or_default();
        assert!(message.contains(expected), "{description}: {message}");
        assert!(
            !requests.is_empty() && requests.len() <= 2,
            "{description}: {} requests",
            requests.len()
        );
    }
}

#[tokio::test]
async fn a_retried_request_takes_the_next_turn() {
    if claude_for_test().is_none() {
        return;
    }
    let (result, requests) = run_with_retries(
        Script::new([
            Turn::overloaded(),
            Turn::http_error(500),
            Turn::text("after retries"),
        ]),
        "2",
    )
    .await;
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["result"], "after retries");
    assert_eq!(requests.len(), 3);
}

#[tokio::test]
async fn a_plain_request_gets_the_same_turn_as_one_json_message() {
    if claude_for_test().is_none() {
        return;
    }
    // A malformed stream makes the CLI fall back to a non-streaming request,
    // which takes the next turn.
    let (result, requests) = run_with_retries(
        Script::new([Turn::invalid_json(), Turn::text("plain answer")]),
        "0",
    )
    .await;
    assert_eq!(result["result"], "plain answer", "{result}");
    assert_eq!(requests.len(), 2);
    assert!(requests[0].is_streaming());
    assert!(!requests[1].is_streaming());
}

#[tokio::test]
async fn a_slow_answer_still_arrives() {
    if claude_for_test().is_none() {
        return;
    }
    let (result, requests) = run_with_retries(
        Script::new([Turn::text("slow but sure").delayed(std::time::Duration::from_secs(2))]),
        "0",
    )
    .await;
    assert_eq!(result["result"], "slow but sure", "{result}");
    assert_eq!(requests.len(), 1);
}
