//! Retries: reads retry 5xx and timeouts; a write whose answer was lost is
//! checked on GitHub, never re-posted blindly.

use std::time::Duration;

use review_github::{GitHubError, ReviewId, ReviewPayload, WaitReason};
use review_testkit::github::{Fault, FaultRule, SimOptions};

use crate::support::{
    assert_conformant, fixture, fixture_with, new_review_id, new_thread_id, review_payload,
    statuses_and_costs, token_client, with_thread,
};

fn review(head: String, review_id: ReviewId) -> ReviewPayload {
    review_payload(head, "One cycle's review.", Some(review_id), Vec::new())
}

#[tokio::test]
async fn server_errors_on_a_read_are_retried() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture
        .sim
        .inject(FaultRule::operation("pulls/get", Fault::ServerError(502)).times(2));

    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    let statuses: Vec<u16> = fixture
        .sim
        .requests_for("pulls/get")
        .iter()
        .map(|record| record.status)
        .collect();
    assert_eq!(statuses, vec![502, 502, 200]);
    assert!(
        client
            .recent_waits()
            .iter()
            .all(|wait| wait.reason == WaitReason::TransientBackoff)
    );
}

#[tokio::test]
async fn a_read_that_hangs_past_the_timeout_is_retried() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.inject(FaultRule::operation(
        "issues/list-labels-on-issue",
        Fault::Hang(Duration::from_secs(4)),
    ));

    let labels = client.list_labels(&fixture.repository, 1).await.unwrap();

    assert_eq!(labels, vec!["bot-review-needed"]);
}

#[tokio::test]
async fn persistent_server_errors_end_in_a_clear_error() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture
        .sim
        .inject(FaultRule::operation("pulls/get", Fault::ServerError(503)).times(100));

    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(
            error,
            GitHubError::ServerError {
                status: 503,
                attempts: 5,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_transient());
}

#[tokio::test]
async fn a_review_whose_answer_was_dropped_after_the_write_exists_once() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-review",
        Fault::DropResponse,
    ));

    let review_id = new_review_id();
    let posted = client
        .post_review(
            &fixture.repository,
            1,
            &review(head, review_id),
            Some(review_id),
        )
        .await
        .unwrap();

    assert!(
        posted.already_existed,
        "found by its review:: id, not posted again"
    );
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
    assert_eq!(fixture.sim.requests_for("pulls/create-review").len(), 1);
    assert_eq!(
        fixture.sim.requests_for("pulls/list-reviews").len(),
        2,
        "one check before posting, one after the lost answer"
    );
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_review_refused_with_a_server_error_is_posted_again_after_checking() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-review",
        Fault::ServerError(500),
    ));

    let review_id = new_review_id();
    let posted = client
        .post_review(
            &fixture.repository,
            1,
            &review(head, review_id),
            Some(review_id),
        )
        .await
        .unwrap();

    assert!(!posted.already_existed);
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
    let statuses: Vec<u16> = fixture
        .sim
        .requests_for("pulls/create-review")
        .iter()
        .map(|record| record.status)
        .collect();
    assert_eq!(statuses, vec![500, 200]);
}

#[tokio::test]
async fn posting_the_same_review_twice_posts_it_once() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();

    let review_id = new_review_id();
    let first = client
        .post_review(
            &fixture.repository,
            1,
            &review(head.clone(), review_id),
            Some(review_id),
        )
        .await
        .unwrap();
    let second = client
        .post_review(
            &fixture.repository,
            1,
            &review(head, review_id),
            Some(review_id),
        )
        .await
        .unwrap();

    assert!(!first.already_existed && second.already_existed);
    assert_eq!(first.review.id, second.review.id);
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
}

#[tokio::test]
async fn replies_and_comments_whose_answers_were_dropped_exist_once() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let thread_start = fixture
        .pull
        .review_comment("alice", "src/lib.rs", 3, "Why this change?")
        .unwrap();
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-reply-for-review-comment",
        Fault::DropResponse,
    ));
    fixture.sim.inject(FaultRule::operation(
        "issues/create-comment",
        Fault::DropResponse,
    ));

    let thread = new_thread_id();
    let reply = client
        .reply_to_review_comment(
            &fixture.repository,
            1,
            thread_start,
            &with_thread("Because of the new format.", thread),
            Some(thread),
        )
        .await
        .unwrap();
    let comment = client
        .create_issue_comment(&fixture.repository, 1, "Build failed: see the log.", None)
        .await
        .unwrap();

    assert!(reply.already_existed && comment.already_existed);
    assert_eq!(reply.item.in_reply_to, Some(thread_start));
    assert_eq!(fixture.pull.review_comments().unwrap().len(), 2);
    assert_eq!(fixture.pull.issue_comments().unwrap().len(), 1);
    assert_eq!(
        fixture
            .sim
            .requests_for("pulls/create-reply-for-review-comment")
            .len(),
        1
    );
    assert_eq!(fixture.sim.requests_for("issues/create-comment").len(), 1);

    let updated = client
        .update_issue_comment(&fixture.repository, comment.item.id, "Build passed now.")
        .await
        .unwrap();
    assert_eq!(updated.body, "Build passed now.");
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_review_applied_but_answered_502_and_listed_late_is_found_not_posted_again() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();
    // GitHub applied the write, answered 502, and its list shows it a second later.
    fixture.sim.set_list_lag(Duration::from_secs(1));
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-review",
        Fault::DropResponse,
    ));

    let review_id = new_review_id();
    let posted = client
        .post_review(
            &fixture.repository,
            1,
            &review(head, review_id),
            Some(review_id),
        )
        .await
        .unwrap();

    assert!(posted.already_existed, "found after looking again");
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
    assert_eq!(fixture.sim.requests_for("pulls/create-review").len(), 1);
    // One check before posting, then looks 0, 0.1, 0.3, 0.7 and 1.5 s after the
    // lost answer (test settings): the second-long lag ends before the last.
    // (On a loaded machine the lag may be over by the first look: two in all.)
    let looks = statuses_and_costs(&fixture.sim, "pulls/list-reviews");
    assert!((2..=6).contains(&looks.len()), "{looks:?}");
    let spent: u64 = looks.iter().map(|(_, cost)| cost).sum();
    assert!(
        spent <= 2,
        "looks at an unchanged list are free 304s: {looks:?}"
    );
    assert!(
        client
            .recent_waits()
            .iter()
            .any(|wait| wait.reason == WaitReason::WriteCheck)
    );
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_comment_applied_but_answered_502_and_listed_late_exists_once() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    fixture.sim.set_list_lag(Duration::from_secs(1));
    fixture.sim.inject(FaultRule::operation(
        "issues/create-comment",
        Fault::DropResponse,
    ));

    let posted = client
        .create_issue_comment(&fixture.repository, 1, "Build failed: see the log.", None)
        .await
        .unwrap();

    assert!(posted.already_existed);
    assert_eq!(fixture.pull.issue_comments().unwrap().len(), 1);
    assert_eq!(fixture.sim.requests_for("issues/create-comment").len(), 1);
}

#[tokio::test]
async fn a_reply_whose_check_hit_the_page_cap_is_unknown_and_not_posted_again() {
    // One comment a page: 52 comments are more than the 50 pages the client reads.
    let fixture = fixture_with(SimOptions {
        max_per_page: 1,
        ..SimOptions::default()
    });
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let thread_start = fixture
        .pull
        .review_comment("alice", "src/lib.rs", 3, "Why this change?")
        .unwrap();
    for index in 0..50 {
        fixture
            .pull
            .review_comment("alice", "src/lib.rs", 4, &format!("note {index}"))
            .unwrap();
    }
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-reply-for-review-comment",
        Fault::DropResponse,
    ));

    let thread = new_thread_id();
    let error = client
        .reply_to_review_comment(
            &fixture.repository,
            1,
            thread_start,
            &with_thread("Because of the new format.", thread),
            Some(thread),
        )
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::WriteUnconfirmed { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("is unknown"), "{error}");
    let replies = fixture
        .pull
        .review_comments()
        .unwrap()
        .into_iter()
        .filter(|comment| comment.in_reply_to == Some(thread_start))
        .count();
    assert_eq!(replies, 1, "the applied reply, and no second one");
    assert_eq!(
        fixture
            .sim
            .requests_for("pulls/create-reply-for-review-comment")
            .len(),
        1
    );
}

#[tokio::test]
async fn a_review_check_that_hit_the_page_cap_is_unknown_and_nothing_is_posted() {
    // One review a page: 31 reviews are more than the 30 pages the client reads.
    let fixture = fixture_with(SimOptions {
        max_per_page: 1,
        ..SimOptions::default()
    });
    for index in 0..31 {
        fixture
            .pull
            .review("alice", Some("COMMENT"), &format!("review {index}"), &[])
            .unwrap();
    }
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();
    fixture.sim.inject(FaultRule::operation(
        "pulls/create-review",
        Fault::DropResponse,
    ));

    let review_id = new_review_id();
    let error = client
        .post_review(
            &fixture.repository,
            1,
            &review(head, review_id),
            Some(review_id),
        )
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::IncompleteList { pages: 30, .. }),
        "{error:?}"
    );
    assert!(fixture.sim.requests_for("pulls/create-review").is_empty());
    assert_eq!(fixture.pull.reviews().unwrap().len(), 31);
}
