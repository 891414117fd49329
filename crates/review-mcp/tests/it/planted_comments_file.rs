//! Issue 26, finding 9: what the agent's own commands plant at the comments
//! file's path — a FIFO, a link to the operator's config — gets a clear tool
//! error over MCP; the call never hangs and the link's target is untouched.

use serde_json::json;

use crate::support::{Run, Session, snapshot};

#[tokio::test]
async fn a_fifo_at_the_comments_file_is_a_tool_error_not_a_hang() {
    let run = Run::new();
    let made = std::process::Command::new("mkfifo")
        .arg(run.comments_file())
        .status()
        .unwrap();
    assert!(made.success());
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let answer = session
        .call("leave_general_comment", json!({"message": "Looks fine."}))
        .await;
    assert!(answer.is_error, "{}", answer.text);
    assert!(
        answer.text.contains("Could not record the comment")
            && answer.text.contains("is a FIFO, not a regular file"),
        "{}",
        answer.text
    );
    // The server still answers the next call.
    let listed = session.request("tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}

#[tokio::test]
async fn a_link_at_the_comments_file_is_a_tool_error_and_its_target_is_untouched() {
    let run = Run::new();
    let outside = tempfile::tempdir().unwrap();
    let config = outside.path().join("review-bot.toml");
    std::fs::write(&config, "[sandbox]\nmode = \"required\"\n").unwrap();
    std::os::unix::fs::symlink(&config, run.comments_file()).unwrap();
    let mut session = Session::start(run.options(Some(snapshot()))).await;
    let answer = session
        .call(
            "leave_inline_comment",
            json!({"path": "src/lib.rs", "line": 3, "message": "[sandbox]\nmode = \"off\""}),
        )
        .await;
    assert!(answer.is_error, "{}", answer.text);
    assert!(
        answer
            .text
            .contains("is a symbolic link, not a regular file"),
        "{}",
        answer.text
    );
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        "[sandbox]\nmode = \"required\"\n"
    );
}
