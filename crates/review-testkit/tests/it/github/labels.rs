//! Labels and issue comments.

use reqwest::Method;
use serde_json::json;

use super::{fixture, get, send};

#[tokio::test]
async fn adding_a_missing_label_creates_it_and_removing_an_absent_one_is_404() {
    let fixture = fixture();
    let labels = "/repos/acme/widgets/issues/1/labels";
    let (status, _, added) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        labels,
        &json!({"labels": ["bot-review-needed"]}),
    )
    .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added[0]["name"], "bot-review-needed");
    assert!(
        fixture
            .repo
            .labels()
            .unwrap()
            .iter()
            .any(|label| label.name == "bot-review-needed")
    );
    let (status, _, error) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::DELETE,
        &format!("{labels}/bot-changes-needed"),
        &json!(null),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(error["message"], "Label does not exist");
    let (status, _, remaining) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::DELETE,
        &format!("{labels}/bot-review-needed"),
        &json!(null),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(remaining, json!([]));
    assert!(fixture.pull.labels().unwrap().is_empty());
}

#[tokio::test]
async fn issue_comments_are_created_updated_and_listed() {
    let fixture = fixture();
    fixture.pull.comment("alice", "hello").unwrap();
    let comments = "/repos/acme/widgets/issues/1/comments";
    let (status, _, created) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::POST,
        comments,
        &json!({"body": "build failed"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let (status, _, updated) = send(
        &fixture.sim,
        &fixture.bot.token,
        Method::PATCH,
        &format!("/repos/acme/widgets/issues/comments/{}", created["id"]),
        &json!({"body": "build fixed"}),
    )
    .await;
    assert_eq!(status, 200, "{updated}");
    let (_, _, listed) = get(&fixture.sim, &fixture.bot.token, comments).await;
    let bodies: Vec<_> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|comment| comment["body"].clone())
        .collect();
    assert_eq!(bodies, vec![json!("hello"), json!("build fixed")]);
}
