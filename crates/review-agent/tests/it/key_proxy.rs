//! The model key stays with the bot (issue 18): what the agent's tools run
//! sees only a key valid for its run, through a loopback proxy; the model
//! server receives the real key; the run's key is worthless afterwards.

use review_testkit::model::{Script, ToolCall, Turn};
use serde_json::json;

use crate::support::Harness;

#[tokio::test]
async fn the_agents_tools_never_see_the_model_key_and_the_model_gets_it() {
    let Some(harness) = Harness::start(Script::new([
        Turn::tools([ToolCall::new(
            "Bash",
            json!({
                "command": "echo \"key=[$ANTHROPIC_API_KEY] url=[$ANTHROPIC_BASE_URL]\"; env | grep -c sk-ant-scripted || true",
                "description": "Show the model settings"
            }),
        )]),
        Turn::text("Done."),
    ]))
    .await
    else {
        return;
    };
    let run = harness.run("Try it.");
    let agent_run = harness.claude().run(&run).await.expect("the run works");
    assert!(agent_run.is_success(), "{agent_run:?}");

    let requests = harness.server.requests();
    assert_eq!(requests.len(), 2, "the tool ran and the model answered");
    let result = &requests[1].last_tool_results()[0];
    assert!(
        !result.text.contains("sk-ant-scripted-model-server"),
        "{result:?}"
    );
    assert!(
        result.text.contains("key=[sk-ant-review-bot-run-"),
        "{result:?}"
    );
    assert!(result.text.contains("url=[http://127.0.0.1:"), "{result:?}");
    // Every request reached the model with the real key.
    for request in harness.server.all_requests() {
        assert!(
            request
                .headers
                .iter()
                .any(|(name, value)| name == "x-api-key" && value == "sk-ant-scripted-model-server"),
            "{:?}",
            request.headers
        );
    }
}

#[tokio::test]
async fn the_proxy_refuses_any_other_key_and_stops_with_its_run() {
    use secrecy::ExposeSecret as _;
    let Some(harness) = Harness::start(Script::new([Turn::text("never asked")])).await else {
        return;
    };
    let proxy = review_agent::claude::KeyProxy::start(
        &harness.server.base_url(),
        "sk-ant-scripted-model-server".into(),
        10,
    )
    .await
    .unwrap();
    let url = format!("{}/v1/messages", proxy.base_url());
    let client = reqwest::Client::new();
    let refused = client
        .post(&url)
        .header("x-api-key", "sk-ant-scripted-model-server")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401, "the real key is not the run's key");
    let run_key = proxy.run_key().expose_secret().to_owned();
    drop(proxy);
    let after = client
        .post(&url)
        .header("x-api-key", &run_key)
        .body("{}")
        .send()
        .await;
    assert!(
        after.is_err(),
        "the proxy still answers after its run: {after:?}"
    );
    assert!(harness.server.all_requests().is_empty());
}
