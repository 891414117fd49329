//! Reviews, inline comments and replies, with GitHub's 422 rules.

use reqwest::Method;
use serde_json::json;

use super::{fixture, get, send};

const REVIEWS: &str = "/repos/acme/widgets/pulls/1/reviews";

#[tokio::test]
async fn a_review_with_inline_comments_is_created_and_listed() {
    let fixture = fixture();
    let head = fixture.pull.head_sha().unwrap();
    let (status, _, review) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({
            "commit_id": head,
            "body": "Two remarks.\n\nreview::abc",
            "event": "COMMENT",
            "comments": [
                {"path": "src/lib.rs", "line": 6, "side": "RIGHT", "body": "why 22?"},
                {"path": "src/lib.rs", "line": 6, "side": "LEFT", "body": "was 2"},
                {"path": "src/lib.rs", "start_line": 17, "line": 18, "side": "RIGHT", "body": "range"},
                {"path": "src/new.rs", "line": 1, "body": "new file"},
            ],
        }),
    )
    .await;
    assert_eq!(status, 200, "{review}");
    assert_eq!(review["state"], "COMMENTED");
    assert_eq!(review["user"]["login"], "review-bot");
    assert_eq!(review["commit_id"], head);
    let comments = fixture.pull.review_comments().unwrap();
    assert_eq!(comments.len(), 4);
    assert!(
        comments
            .iter()
            .all(|comment| comment.review_id == review["id"])
    );
    assert_eq!(comments[2].start_line, Some(17));
    let (status, _, listed) = get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/pulls/1/comments",
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(listed.as_array().unwrap().len(), 4);
    assert_eq!(listed[0]["line"], 6);
    assert_eq!(listed[0]["side"], "RIGHT");
    assert!(listed[0]["diff_hunk"].as_str().unwrap().starts_with("@@ "));
    let (_, _, reviews) = get(&fixture.sim, &fixture.bot.token, REVIEWS).await;
    assert_eq!(reviews.as_array().unwrap().len(), 1);
    assert!(fixture.sim.request_schema_violations().is_empty());
}

#[tokio::test]
async fn one_comment_off_the_diff_rejects_the_whole_review() {
    let fixture = fixture();
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({
            "event": "COMMENT",
            "body": "x",
            "comments": [
                {"path": "src/lib.rs", "line": 6, "body": "fine"},
                {"path": "src/lib.rs", "line": 10, "body": "line 10 is outside every hunk"},
            ],
        }),
    )
    .await;
    assert_eq!(status, 422, "{error}");
    assert_eq!(error["message"], "Unprocessable Entity");
    assert_eq!(
        error["errors"],
        json!([
            "Pull request review thread line must be part of the diff and Pull request review thread diff hunk can't be blank"
        ])
    );
    assert_eq!(error["status"], "422");
    assert!(fixture.pull.reviews().unwrap().is_empty());
    assert!(fixture.pull.review_comments().unwrap().is_empty());
}

#[tokio::test]
async fn start_line_rules_and_unknown_paths() {
    let fixture = fixture();
    let cases = [
        (
            json!({"path": "src/lib.rs", "start_line": 6, "line": 18, "body": "spans two hunks"}),
            "Pull request review thread start line must be part of the same hunk as the line.",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 7, "line": 6, "body": "backwards"}),
            "Pull request review thread start line must precede the end line.",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 6, "line": 6, "body": "same line"}),
            "Pull request review thread start line must precede the end line.",
        ),
        (
            json!({"path": "README.md", "line": 1, "body": "not in the pull request"}),
            "Path could not be resolved",
        ),
    ];
    for (comment, message) in cases {
        let (status, _, error) = send(
            &fixture.sim,
            &fixture.bot.token,
            Method::POST,
            REVIEWS,
            &json!({"event": "COMMENT", "body": "x", "comments": [comment]}),
        )
        .await;
        assert_eq!(status, 422, "{comment}: {error}");
        assert_eq!(error["errors"], json!([message]), "{comment}");
    }
    assert!(fixture.pull.reviews().unwrap().is_empty());
}

#[tokio::test]
async fn replies_only_to_top_level_comments() {
    let fixture = fixture();
    let top = fixture
        .pull
        .review_comment("alice", "src/lib.rs", 6, "please explain")
        .unwrap();
    let path = format!("/repos/acme/widgets/pulls/1/comments/{top}/replies");
    let (status, headers, reply) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        &path,
        &json!({"body": "because\n\nthread::1"}),
    )
    .await;
    assert_eq!(status, 201, "{reply}");
    assert_eq!(reply["in_reply_to_id"], top);
    assert!(headers.contains_key("location"));
    let nested = format!(
        "/repos/acme/widgets/pulls/1/comments/{}/replies",
        reply["id"]
    );
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        &nested,
        &json!({"body": "a reply to a reply"}),
    )
    .await;
    assert_eq!(status, 404, "{error}");
    assert_eq!(fixture.pull.review_comments().unwrap().len(), 2);
}
