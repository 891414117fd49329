//! What `review-github` writes to the logs: the route of every request, never
//! a token.
//!
//! A binary of its own with one test, so that the capturing subscriber is the
//! process's global one: `tracing` caches each callsite's interest process-wide,
//! and a test running at the same time on another thread without a subscriber
//! could otherwise switch this test's events off (as it did under `cargo test`).

#[allow(
    dead_code,
    reason = "the shared helpers are used by the `it` binary too"
)]
#[path = "it/support.rs"]
mod support;

use std::sync::{Arc, Mutex};

use support::{app_client, fixture, installed_app, token_client};

/// A `tracing` writer that keeps everything in memory.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for CapturedLogs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn trace_logs_name_the_route_but_never_the_token() {
    let logs = CapturedLogs::default();
    let writer = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    let fixture = fixture();
    let app = installed_app(&fixture);
    let token_client = token_client(&fixture.sim, &fixture.bot.token);
    let app_client = app_client(&fixture.sim, &app);

    token_client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    app_client
        .create_issue_comment(&fixture.repository, 1, "Logged.", None)
        .await
        .unwrap();

    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("github_request"), "{text}");
    assert!(
        text.contains("route=\"/repos/{owner}/{repo}/pulls/{pull_number}\""),
        "{text}"
    );
    assert!(
        text.contains("route=\"/repos/{owner}/{repo}/issues/{issue_number}/comments\""),
        "{text}"
    );
    // The "answered" event carries the status and the rate-limit budget left.
    let answered = text
        .lines()
        .find(|line| line.contains("answered") && line.contains("pulls/{pull_number}"))
        .unwrap_or_else(|| panic!("no answered event:\n{text}"));
    assert!(answered.contains("status=200"), "{answered}");
    assert!(answered.contains("remaining="), "{answered}");
    assert!(
        !text.contains(&fixture.bot.token),
        "the token leaked into the logs"
    );
    assert!(
        !text.contains("ghs_"),
        "an installation token leaked into the logs"
    );
    assert!(
        !text.to_ascii_lowercase().contains("bearer"),
        "an authorization header was logged"
    );
}
