//! Every list call follows `Link: rel="next"` to the last page.

use crate::support::{assert_conformant, fixture, token_client};

#[tokio::test]
async fn issue_comments_are_read_across_three_pages() {
    let fixture = fixture();
    for index in 0..250 {
        fixture
            .pull
            .comment("someone", &format!("comment {index}"))
            .unwrap();
    }
    let client = token_client(&fixture.sim, &fixture.bot.token);

    let comments = client
        .list_issue_comments(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(comments.len(), 250);
    assert_eq!(comments[0].body, "comment 0");
    assert_eq!(comments[249].body, "comment 249");
    let pages = fixture.sim.requests_for("issues/list-comments");
    assert_eq!(pages.len(), 3, "100 + 100 + 50");
    assert!(pages[1].query.contains("page=2") && pages[2].query.contains("page=3"));
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn review_comments_and_files_are_paginated_too() {
    let fixture = fixture();
    let head = fixture.pull.head_sha().unwrap();
    for index in 0..130_u64 {
        fixture
            .pull
            .review_comment(
                "someone",
                "src/lib.rs",
                1 + index % 50,
                &format!("note {index}"),
            )
            .unwrap();
    }
    let client = token_client(&fixture.sim, &fixture.bot.token);

    let comments = client
        .list_review_comments(&fixture.repository, 1)
        .await
        .unwrap();
    let files = client
        .list_pull_request_files(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(comments.len(), 130);
    assert!(comments.iter().all(|comment| comment.commit_id == head));
    assert_eq!(
        fixture.sim.requests_for("pulls/list-review-comments").len(),
        2
    );
    assert_eq!(files.files.len(), 2);
    assert!(!files.truncated);
    assert_conformant(&fixture.sim);
}
