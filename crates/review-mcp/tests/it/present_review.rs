//! `present_review`: seed 001's validation, the panel protocol, the file fallback.

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixListener;

use crate::support::{Run, Session};

/// A review panel that acknowledges every message and hands them to the test.
fn panel(listener: UnixListener) -> tokio::sync::mpsc::UnboundedReceiver<Value> {
    let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (reader, mut writer) = stream.into_split();
            let mut line = String::new();
            BufReader::new(reader).read_line(&mut line).await.unwrap();
            sender.send(serde_json::from_str(&line).unwrap()).unwrap();
            writer.write_all(b"{\"ok\":true}\n").await.unwrap();
        }
    });
    receiver
}

#[tokio::test]
async fn seed_001_errors() {
    let run = Run::new();
    let mut session = Session::start(run.options(None)).await;
    let cases = [
        (json!({"baseUri": "/repo"}), "Content parameter is required"),
        (
            json!({"content": "", "baseUri": "/repo"}),
            "Content parameter is required",
        ),
        (
            json!({"content": "# R", "baseUri": "/repo", "mode": "merge"}),
            "Mode must be 'replace', 'update-section', or 'append'",
        ),
        (
            json!({"content": "# R", "baseUri": "/repo", "mode": "update-section"}),
            "Section parameter required for update-section mode",
        ),
        (json!({"content": "# R"}), "baseUri parameter is required"),
    ];
    for (arguments, expected) in cases {
        let answer = session.call("present_review", arguments.clone()).await;
        assert!(answer.is_error, "{arguments}: {}", answer.text);
        assert_eq!(
            answer.text.split(':').next().unwrap(),
            expected.split(':').next().unwrap(),
            "{arguments}"
        );
    }
    assert!(!run.directory.path().join("review.md").exists());
}

#[tokio::test]
async fn the_three_modes_reach_a_listening_panel() {
    let run = Run::new();
    let mut received = panel(UnixListener::bind(run.socket()).unwrap());
    let mut session = Session::start(run.options(None)).await;

    let answer = session
        .call("present_review", json!({"content": "# Review\n\n## Error Handling\n\nOld.\n\n## Next\n\n- a\n", "baseUri": "/repo"}))
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    assert_eq!(answer.json()["delivered_to"], "panel");
    let message = received.recv().await.unwrap();
    assert_eq!(message["protocol"], "review-bot.review-panel/1");
    assert_eq!(message["mode"], "replace");
    assert_eq!(message["baseUri"], "/repo");

    session
        .call("present_review", json!({"content": "## Updated Error Handling\n\nNew.", "mode": "update-section", "section": "Error Handling", "baseUri": "/repo"}))
        .await;
    let message = received.recv().await.unwrap();
    assert_eq!(message["mode"], "update-section");
    assert_eq!(message["section"], "Error Handling");
    assert_eq!(
        message["document"],
        "# Review\n\n## Updated Error Handling\n\nNew.\n\n## Next\n\n- a\n"
    );

    session
        .call(
            "present_review",
            json!({"content": "## Security\n\nFine.", "mode": "append", "baseUri": "/repo"}),
        )
        .await;
    let message = received.recv().await.unwrap();
    assert_eq!(message["mode"], "append");
    assert_eq!(message["content"], "## Security\n\nFine.");
    assert_eq!(
        message["document"],
        "# Review\n\n## Updated Error Handling\n\nNew.\n\n## Next\n\n- a\n\n## Security\n\nFine."
    );
    assert!(!run.directory.path().join("review.md").exists());
}

#[tokio::test]
async fn without_a_panel_the_review_is_written_to_the_run_directory() {
    let run = Run::new();
    let mut session = Session::start(run.options(None)).await;
    let answer = session
        .call(
            "present_review",
            json!({"content": "# Review\n", "baseUri": "/repo"}),
        )
        .await;
    assert!(!answer.is_error, "{}", answer.text);
    let result = answer.json();
    let path = run.directory.path().join("review.md");
    assert_eq!(result["delivered_to"], "file");
    assert_eq!(result["path"], path.display().to_string());
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .contains("no review panel is listening")
    );
    session
        .call(
            "present_review",
            json!({"content": "More.", "mode": "append", "baseUri": "/repo"}),
        )
        .await;
    assert_eq!(std::fs::read_to_string(path).unwrap(), "# Review\n\nMore.");
}
