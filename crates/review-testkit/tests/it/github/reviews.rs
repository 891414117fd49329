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

#[tokio::test]
async fn legacy_positions_map_to_lines_and_back() {
    let fixture = fixture();
    // src/lib.rs's patch: "@@ -3,7 +3,7 @@" then " }", " ", " fn two()…", "-    2", "+    22".
    let (status, _, review) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({
            "event": "COMMENT",
            "body": "positions",
            "comments": [
                {"path": "src/lib.rs", "position": 4, "body": "the removed line"},
                {"path": "src/lib.rs", "position": 5, "body": "the added line"},
            ],
        }),
    )
    .await;
    assert_eq!(status, 200, "{review}");
    let comments = fixture.pull.review_comments().unwrap();
    assert_eq!(
        (comments[0].side.as_deref(), comments[0].line),
        (Some("LEFT"), Some(6))
    );
    assert_eq!(
        (comments[1].side.as_deref(), comments[1].line),
        (Some("RIGHT"), Some(6))
    );
    let (_, _, listed) = get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/pulls/1/comments",
    )
    .await;
    assert_eq!(listed[1]["position"], 5);
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({"event": "COMMENT", "body": "x", "comments": [{"path": "src/lib.rs", "position": 99, "body": "nowhere"}]}),
    )
    .await;
    assert_eq!(status, 422, "{error}");
}

#[tokio::test]
async fn pending_reviews_are_private_and_one_per_user() {
    let fixture = fixture();
    let (status, _, pending) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({"body": "draft", "comments": [{"path": "src/new.rs", "line": 1, "body": "later"}]}),
    )
    .await;
    assert_eq!(status, 200, "{pending}");
    assert_eq!(pending["state"], "PENDING");
    assert!(pending.get("submitted_at").is_none());
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({"body": "again"}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        error["errors"][0],
        "User can only have one pending review per pull request"
    );
    let alice = fixture.sim.user("alice");
    let (_, _, seen_by_alice) = get(&fixture.sim, &alice.token, REVIEWS).await;
    assert_eq!(seen_by_alice, json!([]));
    let (_, _, comments_seen_by_alice) = get(
        &fixture.sim,
        &alice.token,
        "/repos/acme/widgets/pulls/1/comments",
    )
    .await;
    assert_eq!(comments_seen_by_alice, json!([]));
    let (_, _, seen_by_author) = get(&fixture.sim, &fixture.bot.token, REVIEWS).await;
    assert_eq!(seen_by_author.as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn deleted_files_take_left_side_comments_only() {
    let sim = review_testkit::github::GithubSim::start().unwrap();
    let user = sim.user("review-bot");
    let repo = sim
        .repo("acme/widgets")
        .file("old.rs", "a\nb\n")
        .file("keep.rs", "k\n")
        .create()
        .unwrap();
    let pull = repo
        .pull_request("cleanup")
        .delete("old.rs")
        .open()
        .unwrap();
    let path = "/repos/acme/widgets/pulls/1/reviews";
    let left = json!({"event": "COMMENT", "body": "x", "comments": [{"path": "old.rs", "line": 2, "side": "LEFT", "body": "gone"}]});
    let (status, _, review) = send(&sim, &user.token, Method::POST, path, &left).await;
    assert_eq!(status, 200, "{review}");
    let right = json!({"event": "COMMENT", "body": "x", "comments": [{"path": "old.rs", "line": 1, "side": "RIGHT", "body": "?"}]});
    let (status, _, _) = send(&sim, &user.token, Method::POST, path, &right).await;
    assert_eq!(status, 422);
    assert_eq!(pull.review_comments().unwrap().len(), 1);
}

#[tokio::test]
async fn the_counters_add_up_the_log() {
    let fixture = fixture();
    for _ in 0..3 {
        get(
            &fixture.sim,
            &fixture.bot.token,
            "/repos/acme/widgets/pulls/1",
        )
        .await;
    }
    get(
        &fixture.sim,
        &fixture.bot.token,
        "/repos/acme/widgets/pulls/9",
    )
    .await;
    get(&fixture.sim, &fixture.bot.token, "/rate_limit").await;
    let counters = fixture.sim.counters();
    assert_eq!(counters.requests, 5);
    assert_eq!(counters.cost, 4, "the rate-limit endpoint is free");
    let pulls = &counters.by_operation["pulls/get"];
    assert_eq!((pulls.requests, pulls.cost), (4, 4));
    assert_eq!(pulls.statuses[&200], 3);
    assert_eq!(pulls.statuses[&404], 1);
    fixture.sim.clear_requests();
    assert_eq!(fixture.sim.counters().requests, 0);
}

#[tokio::test]
async fn error_bodies_have_githubs_shape() {
    let fixture = fixture();
    let head = fixture.pull.head_sha().unwrap();
    let (_, _, review_error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({
            "event": "COMMENT",
            "body": "x",
            "comments": [
                {"path": "src/lib.rs", "line": 12, "start_line": 6, "body": "off the diff, start in another hunk"},
            ],
        }),
    )
    .await;
    insta::assert_json_snapshot!("create_review_422", review_error);
    let (_, _, comment_error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        "/repos/acme/widgets/pulls/1/comments",
        &json!({"body": "x", "commit_id": head, "path": "src/lib.rs", "line": 17, "start_line": 6}),
    )
    .await;
    insta::assert_json_snapshot!("create_review_comment_422", comment_error);
    let (_, _, not_found) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::DELETE,
        "/repos/acme/widgets/issues/1/labels/absent",
        &json!(null),
    )
    .await;
    insta::assert_json_snapshot!("remove_label_404", not_found);
}

#[tokio::test]
async fn bodies_longer_than_github_takes_are_refused_and_nothing_is_created() {
    let fixture = fixture();
    let too_long = "a".repeat(65_537);
    let just_right = "a".repeat(65_536);
    let (status, _, review_error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({"event": "COMMENT", "body": too_long}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(
        review_error["errors"][0]["message"],
        "body is too long (maximum is 65536 characters)"
    );
    let (status, _, inline_error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        REVIEWS,
        &json!({"event": "COMMENT", "body": "ok", "comments": [
            {"path": "src/lib.rs", "line": 4, "body": too_long},
        ]}),
    )
    .await;
    assert_eq!(
        status, 422,
        "an inline comment over the limit fails the review"
    );
    assert_eq!(
        inline_error["errors"][0]["resource"],
        "PullRequestReviewComment"
    );
    let (status, _, comment_error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        "/repos/acme/widgets/issues/1/comments",
        &json!({"body": too_long}),
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(comment_error["errors"][0]["resource"], "IssueComment");
    assert!(fixture.pull.reviews().unwrap().is_empty());
    assert!(fixture.pull.issue_comments().unwrap().is_empty());
    let (status, _, _) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        "/repos/acme/widgets/issues/1/comments",
        &json!({"body": just_right}),
    )
    .await;
    assert_eq!(status, 201, "exactly the limit is accepted");
}
