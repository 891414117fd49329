//! Every list call follows `Link: rel="next"` to the last page.

use review_github::GitHubError;
use review_testkit::github::{Fault, FaultRule};

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

fn three_comments_one_a_page() -> crate::support::Fixture {
    let fixture = crate::support::fixture_with(review_testkit::github::SimOptions {
        max_per_page: 1,
        ..review_testkit::github::SimOptions::default()
    });
    for index in 0..3 {
        fixture
            .pull
            .comment("someone", &format!("comment {index}"))
            .unwrap();
    }
    fixture
}

#[tokio::test]
async fn a_link_header_that_does_not_parse_is_an_error_not_the_last_page() {
    let fixture = three_comments_one_a_page();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "issues/list-comments",
        Fault::ReplaceLinkHeader("<garbage".to_owned()),
    ));

    let error = client
        .list_issue_comments(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::UnexpectedResponse { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("Link header"), "{error}");
}

#[tokio::test]
async fn a_comma_inside_the_next_link_does_not_cut_the_list_short() {
    let fixture = three_comments_one_a_page();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "issues/list-comments",
        Fault::ReplaceLinkHeader(format!(
            "<{}/repos/acme/widgets/issues/1/comments?per_page=100&page=2&note=a,b>; rel=\"next\"",
            fixture.sim.api_url()
        )),
    ));

    let comments = client
        .list_issue_comments(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(comments.len(), 3);
    assert_eq!(fixture.sim.requests_for("issues/list-comments").len(), 3);
}
