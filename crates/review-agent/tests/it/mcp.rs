//! The MCP plumbing, with a tiny MCP server of our own: the config reaches
//! the CLI, the server is keyed `review`, sees only what it is given, and a
//! server that does not connect stops the run.

use std::collections::BTreeMap;

use review_agent::AgentError;
use review_agent::claude::{McpConfig, McpServerCommand, is_github_credential};
use review_testkit::model::{Script, Turn};
use serde_json::{Value, json};

use crate::support::{Harness, tiny_mcp_server};

#[tokio::test]
async fn our_server_connects_and_its_tools_reach_the_model_as_mcp_review() {
    let Some(harness) = Harness::start(Script::new([
        Turn::decide(|request| {
            assert!(
                request.mentions_tool("mcp__review__echo_env"),
                "the model was not told about our tool"
            );
            Turn::tool("mcp__review__echo_env", json!({}))
        }),
        Turn::text("done"),
    ]))
    .await
    else {
        return;
    };
    let comments_file = harness.run_directory.path().join("comments.jsonl");
    let run = harness.run("Use the tool.").with_mcp(tiny_mcp_server(&[(
        "COMMENTS_FILE",
        comments_file.to_str().unwrap(),
    )]));

    harness
        .claude()
        .run(&run)
        .await
        .unwrap()
        .into_success()
        .unwrap();

    let requests = harness.server.requests();
    let results = requests[1].last_tool_results();
    assert_eq!(
        results[0].tool_name.as_deref(),
        Some("mcp__review__echo_env")
    );
    assert!(!results[0].is_error, "{results:?}");
    let environment: BTreeMap<String, Value> =
        serde_json::from_str(&results[0].text_without_reminders()).unwrap();
    assert_eq!(
        environment["COMMENTS_FILE"],
        comments_file.to_str().unwrap()
    );
    assert!(
        !environment.keys().any(|name| is_github_credential(name)),
        "{environment:?}"
    );
    // Nothing of the test process's own environment leaks (cargo sets CARGO_PKG_* for tests).
    assert!(
        !environment.contains_key("CARGO_MANIFEST_DIR"),
        "{environment:?}"
    );
    // The config file the CLI read is the one we wrote.
    let config: Value = serde_json::from_str(
        &std::fs::read_to_string(run.run_directory.join("mcp-config.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(config["mcpServers"]["review"]["type"], "stdio");
}

#[tokio::test]
async fn a_server_that_fails_to_start_stops_the_run_with_a_clear_error() {
    let Some(harness) =
        Harness::start(Script::new([]).then_forever(Turn::text("ran without tools"))).await
    else {
        return;
    };
    let run = harness
        .run("Review.")
        .with_mcp(McpConfig::review(McpServerCommand::review_bot(
            "/nonexistent/review-bot",
            [],
            BTreeMap::new(),
        )));

    let error = harness.claude().run(&run).await.unwrap_err();

    match &error {
        AgentError::McpServerNotConnected {
            server,
            status,
            command,
            ..
        } => {
            assert_eq!(server, "review");
            assert_eq!(status, "failed");
            assert_eq!(command, "/nonexistent/review-bot mcp");
        }
        other => panic!("expected McpServerNotConnected, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("did not connect") && message.contains("/nonexistent/review-bot mcp"),
        "{message}"
    );
}

#[tokio::test]
async fn a_tool_call_that_never_answers_ends_at_the_tool_timeout_and_the_run_goes_on() {
    let Some(harness) = Harness::start(Script::new([
        Turn::tool("mcp__review__hang", json!({})),
        Turn::decide(|request| {
            let results = request.last_tool_results();
            assert_eq!(results[0].tool_name.as_deref(), Some("mcp__review__hang"));
            assert!(results[0].is_error, "{results:?}");
            Turn::text("The tool timed out; carrying on.")
        }),
    ]))
    .await
    else {
        return;
    };
    let run = harness
        .run("Call the tool.")
        .with_mcp(tiny_mcp_server(&[]).with_tool_timeout(std::time::Duration::from_secs(2)));

    let agent_run = harness.claude().run(&run).await.unwrap();

    assert!(agent_run.is_success(), "{agent_run:?}");
    assert_eq!(harness.server.requests().len(), 2);
}
