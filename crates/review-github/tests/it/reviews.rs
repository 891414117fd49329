//! One review per cycle: many inline comments in one request, and comments
//! GitHub will not anchor moved to the body — never dropped.

use std::fmt::Write as _;

use review_github::{GitHubError, OUTSIDE_THE_DIFF_HEADING, PayloadComment, Side};
use review_testkit::github::{Fault, FaultRule};

use crate::support::{
    assert_conformant, fixture, inline, new_review_id, review_payload, token_client,
};

#[tokio::test]
async fn fifty_comments_with_three_off_the_diff_become_one_review_with_47_inline() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();
    // Lines 1–47 are inside the only hunk (new lines 1–53); 70, 85 and 100 are not.
    let mut comments: Vec<PayloadComment> = (1..=47).map(inline).collect();
    comments.insert(10, inline(70));
    comments.insert(25, inline(85));
    comments.insert(40, inline(100));
    assert_eq!(comments.len(), 50);
    let review_id = new_review_id();
    let review = review_payload(
        head.clone(),
        "Review of the widgets change.",
        Some(review_id),
        comments,
    );

    let posted = client
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap();

    assert_eq!(posted.inline_count, 47);
    let moved: Vec<u32> = posted
        .moved_to_body
        .iter()
        .map(|comment| comment.line)
        .collect();
    assert_eq!(moved, vec![70, 85, 100]);
    let reviews = fixture.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1, "exactly one review");
    let inline_comments = fixture.pull.review_comments().unwrap();
    assert_eq!(inline_comments.len(), 47);
    assert!(
        inline_comments
            .iter()
            .all(|comment| comment.review_id == reviews[0].id)
    );
    let body = &posted.review.body;
    assert!(body.contains(OUTSIDE_THE_DIFF_HEADING), "{body}");
    for line in [70, 85, 100] {
        assert!(
            body.contains(&format!("**`src/lib.rs`, line {line}**")),
            "{body}"
        );
        assert!(
            body.contains(&format!("> Finding on line {line}.")),
            "{body}"
        );
    }
    assert_eq!(
        review_core::footer::own_footer(body).review,
        Some(review_id)
    );
    assert_eq!(posted.review.commit_id.as_deref(), Some(head.as_str()));

    // What the recovery cost: the pre-check, the refused post, one files page, the post.
    let operations: Vec<(String, u16)> = fixture
        .sim
        .requests()
        .iter()
        .map(|record| {
            (
                record.operation_id.clone().unwrap_or_default(),
                record.status,
            )
        })
        .collect();
    assert_eq!(
        operations,
        vec![
            ("pulls/list-reviews".to_owned(), 200),
            ("pulls/create-review".to_owned(), 422),
            ("pulls/list-files".to_owned(), 200),
            ("pulls/create-review".to_owned(), 200),
        ]
    );
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn multi_line_and_left_side_comments_are_posted_inline() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();
    let range = PayloadComment {
        start_line: Some(3),
        start_side: Some(Side::Right),
        ..inline(5)
    };
    let old_side = PayloadComment {
        side: Side::Left,
        ..inline(2)
    };
    let new_file = PayloadComment {
        path: "src/new.rs".into(),
        ..inline(1)
    };
    let review = review_payload(
        head,
        "Three remarks.",
        None,
        vec![range, old_side, new_file],
    );

    let posted = client
        .post_review(&fixture.repository, 1, &review, None)
        .await
        .unwrap();

    assert_eq!(posted.inline_count, 3);
    assert!(posted.moved_to_body.is_empty());
    let listed = client
        .list_review_comments(&fixture.repository, 1)
        .await
        .unwrap();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[0].start_line, Some(3));
    assert_eq!(listed[0].line, Some(5));
    assert_eq!(listed[1].side, Some(Side::Left));
    assert_eq!(listed[2].path, "src/new.rs");
    assert_eq!(
        fixture.sim.requests_for("pulls/list-reviews").len(),
        0,
        "no review id, no pre-check"
    );
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_comment_on_a_file_outside_the_pull_request_is_moved_too() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let review = review_payload(
        fixture.pull.head_sha().unwrap(),
        "Summary.",
        None,
        vec![
            inline(4),
            PayloadComment {
                path: "README.md".into(),
                ..inline(1)
            },
        ],
    );

    let posted = client
        .post_review(&fixture.repository, 1, &review, None)
        .await
        .unwrap();

    assert_eq!(posted.inline_count, 1);
    assert_eq!(posted.moved_to_body[0].path, "README.md");
    assert!(posted.review.body.contains("**`README.md`, line 1**"));
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
}

#[tokio::test]
async fn a_review_without_comments_is_a_plain_verdict() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let review_id = new_review_id();
    let review = review_payload(
        fixture.pull.head_sha().unwrap(),
        "LGTM: nothing left to fix.",
        Some(review_id),
        Vec::new(),
    );

    let posted = client
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap();

    assert_eq!(posted.review.state, "COMMENTED");
    assert_eq!(
        client
            .find_review(&fixture.repository, 1, review_id)
            .await
            .unwrap()
            .map(|review| review.id),
        Some(posted.review.id)
    );
    assert_eq!(
        client
            .find_review(&fixture.repository, 1, new_review_id())
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_body_longer_than_github_takes_is_split_into_the_review_and_continuations() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let review_id = new_review_id();
    // ~150,000 characters of summary, and one inline comment over the limit.
    let summary = (0..3_000).fold(String::new(), |mut summary, index| {
        let _ = write!(
            summary,
            "Finding {index:04}: the check on this path is missing.\n\n"
        );
        summary
    });
    let huge_comment = PayloadComment {
        body: format!(
            "{}TAIL-OF-THE-HUGE-COMMENT",
            "Long explanation. ".repeat(4_000)
        ),
        ..inline(5)
    };
    let review = review_payload(
        fixture.pull.head_sha().unwrap(),
        &summary,
        Some(review_id),
        vec![inline(4), huge_comment],
    );

    let posted = client
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap();

    assert_eq!(posted.inline_count, 1);
    assert_eq!(
        posted.moved_to_body.len(),
        1,
        "the huge comment went to the body"
    );
    assert!(!posted.continuation_comments.is_empty());
    let reviews = fixture.pull.reviews().unwrap();
    assert_eq!(reviews.len(), 1);
    assert_eq!(
        review_core::footer::own_footer(&reviews[0].body).review,
        Some(review_id)
    );
    let conversation = fixture.pull.issue_comments().unwrap();
    assert_eq!(conversation.len(), posted.continuation_comments.len());
    // Everything is on GitHub, every part within the limit, in order.
    let all: Vec<&str> = std::iter::once(reviews[0].body.as_str())
        .chain(conversation.iter().map(|comment| comment.body.as_str()))
        .collect();
    for body in &all {
        assert!(body.chars().count() <= review_core::payload::GITHUB_BODY_LIMIT);
        assert_eq!(
            review_core::footer::own_footer(body).review,
            Some(review_id)
        );
    }
    let joined = all.join("\n");
    for index in [0, 1_500, 2_999] {
        assert!(
            joined.contains(&format!("Finding {index:04}:")),
            "lost {index}"
        );
    }
    assert!(joined.contains("TAIL-OF-THE-HUGE-COMMENT"));

    // Posting again finds the review and every continuation: nothing doubles.
    let again = client
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap();
    assert!(again.already_existed);
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
    assert_eq!(
        fixture.pull.issue_comments().unwrap().len(),
        conversation.len()
    );
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn continuations_lost_to_a_crash_after_a_422_recovery_are_posted_on_the_retry() {
    let fixture = fixture();
    let review_id = new_review_id();
    // ~150,000 characters: three parts. Line 100 is off the diff, so GitHub
    // refuses the first post and the comment moves to the body's end (the
    // last part); the first part reads the same with or without it.
    let summary = (0..3_000).fold(String::new(), |mut summary, index| {
        let _ = write!(
            summary,
            "Finding {index:04}: the check on this path is missing.\n\n"
        );
        summary
    });
    let review = review_payload(
        fixture.pull.head_sha().unwrap(),
        &summary,
        Some(review_id),
        vec![inline(4), inline(100)],
    );
    // The run "crashes" after the review landed, before its continuations:
    // the first continuation is refused for longer than the client waits.
    fixture.sim.inject(FaultRule::operation(
        "issues/create-comment",
        Fault::SecondaryRateLimit { retry_after: 3_600 },
    ));
    let crashed = token_client(&fixture.sim, &fixture.bot.token)
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap_err();
    assert!(
        matches!(crashed, GitHubError::SecondaryRateLimit { .. }),
        "{crashed:?}"
    );
    assert_eq!(fixture.pull.reviews().unwrap().len(), 1);
    assert!(fixture.pull.issue_comments().unwrap().is_empty());

    // The restarted daemon posts the same review again.
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let posted = client
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap();

    assert!(posted.already_existed);
    assert_eq!(posted.inline_count, 1, "rebuilt: line 4 inline");
    assert_eq!(
        posted.moved_to_body.len(),
        1,
        "rebuilt: line 100 in the body"
    );
    let conversation = fixture.pull.issue_comments().unwrap();
    assert!(conversation.len() >= 2, "{}", conversation.len());
    assert_eq!(posted.continuations_posted, conversation.len());
    assert_eq!(posted.continuation_comments.len(), conversation.len());
    assert_eq!(posted.continuations_missing, 0);
    let reviews = fixture.pull.reviews().unwrap();
    let joined = std::iter::once(reviews[0].body.as_str())
        .chain(conversation.iter().map(|comment| comment.body.as_str()))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(joined.contains("Finding 2999:"));
    assert!(joined.contains(OUTSIDE_THE_DIFF_HEADING));
    assert!(
        joined.contains("Finding on line 100."),
        "the moved finding is not lost"
    );
    for comment in &conversation {
        assert_eq!(
            review_core::footer::own_footer(&comment.body).review,
            Some(review_id)
        );
    }

    // Once more: everything is found, nothing is posted.
    let again = client
        .post_review(&fixture.repository, 1, &review, Some(review_id))
        .await
        .unwrap();
    assert_eq!(again.continuations_posted, 0);
    assert_eq!(again.continuation_comments.len(), conversation.len());
    assert_eq!(
        fixture.pull.issue_comments().unwrap().len(),
        conversation.len()
    );
    assert_conformant(&fixture.sim);
}
