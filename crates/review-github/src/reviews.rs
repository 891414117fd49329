//! Reviews: listing them, and posting one review with all its inline comments
//! in a single request — exactly once, and without losing a comment GitHub
//! refuses to anchor.
//!
//! Posting a review:
//! 1. With a `review_id`, look for a review already carrying `review::{id}`
//!    (a crash after posting must not post twice). One list request.
//! 2. Post everything in one `pulls/create-review` call (our own serde body).
//! 3. On a 422 about anchoring, read the PR's files (`pulls/list-files`,
//!    conditional) and move every comment whose line is not inside a hunk to
//!    the body under "Outside the diff" with its file and line; post once more.
//! 4. If GitHub still refuses, post the review with every comment in the body.
//!
//! The worst case is 1 + 1 + pages(files) + 2 requests, all but two reads,
//! and exactly one review exists afterwards.
//!
//! Lengths: an inline comment longer than GitHub takes (65,536 characters) is
//! listed in the body instead, and a body longer than that is split
//! ([`split_body`]): the review carries the first part and its footer, and
//! each further part follows as a conversation comment (one checked post
//! each, found by its exact body on a retry). Nothing is cut away.

use std::fmt::Write as _;

use http::Method;
use tracing::Instrument;

use review_core::footer::own_footer;
use review_core::payload::{describe_lines, fits_github, inline_code, split_body};

use crate::anchoring;
use crate::client::{GitHubClient, Scope, repository_path};
use crate::error::GitHubError;
use crate::model::{
    IssueComment, PayloadComment, PostedReview, RepositoryName, Review, ReviewId, ReviewPayload,
    Side,
};
use crate::transport::{ApiRequest, Retry};
use crate::wire;
use crate::writes::CheckedPost;
use crate::writes::same_body;

/// Pages of reviews we read at most (100 per page).
const MAX_REVIEW_PAGES: usize = 30;

/// The heading of the section listing comments GitHub would not anchor.
pub const OUTSIDE_THE_DIFF_HEADING: &str = "### Outside the diff";

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews`, every page.
    pub async fn list_reviews(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Vec<Review>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
                &["pulls", &number.to_string(), "reviews"],
                MAX_REVIEW_PAGES,
                |page: Vec<wire::Review>| page,
            )
            .await?;
        Ok(paged.items.into_iter().map(Into::into).collect())
    }

    /// The review whose own footer carries `review::{review_id}` (a quote of
    /// it in someone else's review does not count), if any.
    pub async fn find_review(
        &self,
        repository: &RepositoryName,
        number: u64,
        review_id: ReviewId,
    ) -> Result<Option<Review>, GitHubError> {
        Ok(self
            .list_reviews(repository, number)
            .await?
            .into_iter()
            .find(|review| own_footer(&review.body).review == Some(review_id)))
    }

    /// Posts `review` once, with every comment GitHub accepts inline and the
    /// others listed in the body under "Outside the diff" (see the module doc).
    ///
    /// `review_id` is the id in the body's footer: with it, an existing review
    /// carrying it is returned instead of posting again, and a post whose
    /// answer was lost is confirmed by finding it. Without it, a lost answer
    /// is confirmed by the exact body.
    pub async fn post_review(
        &self,
        repository: &RepositoryName,
        number: u64,
        review: &ReviewPayload,
        review_id: Option<ReviewId>,
    ) -> Result<PostedReview, GitHubError> {
        let span = tracing::info_span!(
            "post_review",
            repository = %repository,
            pull_request = number,
            review_id = review_id.map(|id| id.to_string()).unwrap_or_default(),
            comments = review.comments.len(),
        );
        self.post_review_in_span(repository, number, review, review_id)
            .instrument(span)
            .await
    }

    async fn post_review_in_span(
        &self,
        repository: &RepositoryName,
        number: u64,
        review: &ReviewPayload,
        review_id: Option<ReviewId>,
    ) -> Result<PostedReview, GitHubError> {
        // Comments GitHub would refuse for their length go to the body up front.
        let (fitting, too_long): (Vec<PayloadComment>, Vec<PayloadComment>) = review
            .comments
            .iter()
            .cloned()
            .partition(|comment| fits_github(&comment.body));
        let planned_body = if too_long.is_empty() {
            review.body.clone()
        } else {
            tracing::warn!(
                comments = too_long.len(),
                "inline comments longer than GitHub takes; listing them in the body"
            );
            with_outside_section(&review.body, &too_long)
        };

        if let Some(review_id) = review_id
            && let Some(existing) = self
                .already_posted(repository, number, review_id, &planned_body)
                .await?
        {
            return Ok(existing);
        }

        let first = self
            .create_review(
                repository,
                number,
                review,
                review_id,
                &planned_body,
                &fitting,
            )
            .await?;
        let error = match first {
            Attempted::Posted(posted) => {
                return Ok(PostedReview {
                    review: posted.review,
                    already_existed: posted.found,
                    inline_count: fitting.len(),
                    moved_to_body: too_long,
                    continuation_comments: posted.continuation_comments,
                });
            }
            Attempted::Refused(error) => error,
        };
        if fitting.is_empty() || !is_anchoring_refusal(&error) {
            return Err(error);
        }
        tracing::warn!(
            repository = %repository,
            pull_request = number,
            %error,
            "GitHub refused an inline comment's line; finding which from the PR's diff"
        );

        let files = self.list_pull_request_files(repository, number).await?;
        let (inline, outside) = anchoring::partition(&fitting, &files).unwrap_or_default();
        if outside.is_empty() {
            tracing::warn!(
                "every comment looks anchorable in the PR's diff, yet GitHub refused; posting \
                 every comment in the body"
            );
        } else {
            let body = with_outside_section(&planned_body, &outside);
            match self
                .create_review(repository, number, review, review_id, &body, &inline)
                .await?
            {
                Attempted::Posted(posted) => {
                    let mut moved_to_body = too_long;
                    moved_to_body.extend(outside);
                    return Ok(PostedReview {
                        review: posted.review,
                        already_existed: posted.found,
                        inline_count: inline.len(),
                        moved_to_body,
                        continuation_comments: posted.continuation_comments,
                    });
                }
                Attempted::Refused(error) if is_anchoring_refusal(&error) => {
                    tracing::warn!(%error, "GitHub still refused an inline line; posting every comment in the body");
                }
                Attempted::Refused(error) => return Err(error),
            }
        }

        let body = with_outside_section(&review.body, &review.comments);
        match self
            .create_review(repository, number, review, review_id, &body, &[])
            .await?
        {
            Attempted::Posted(posted) => Ok(PostedReview {
                review: posted.review,
                already_existed: posted.found,
                inline_count: 0,
                moved_to_body: review.comments.clone(),
                continuation_comments: posted.continuation_comments,
            }),
            Attempted::Refused(error) => Err(error),
        }
    }

    /// The review carrying `review::{review_id}`, if one exists, with any
    /// continuation comments of `planned_body` a crash kept from being posted
    /// posted now (each found by its exact body first).
    async fn already_posted(
        &self,
        repository: &RepositoryName,
        number: u64,
        review_id: ReviewId,
        planned_body: &str,
    ) -> Result<Option<PostedReview>, GitHubError> {
        let Some(existing) = self.find_review(repository, number, review_id).await? else {
            return Ok(None);
        };
        tracing::info!(
            repository = %repository,
            pull_request = number,
            %review_id,
            "the review already exists; not posting it again"
        );
        let parts = split_body(planned_body);
        let continuation_comments = if parts.len() < 2 {
            Vec::new()
        } else if same_body(&existing.body, &parts[0]) {
            self.post_continuations(repository, number, &parts[1..], true)
                .await?
        } else {
            // The review was posted after a 422 recovery, so its parts differ
            // from this plan and cannot be rebuilt here.
            tracing::warn!(
                %review_id,
                "the existing review's body differs from the planned one; its continuation \
                 comments, if any are missing, are not re-posted: check the pull request"
            );
            Vec::new()
        };
        Ok(Some(PostedReview {
            review: existing,
            already_existed: true,
            inline_count: 0,
            moved_to_body: Vec::new(),
            continuation_comments,
        }))
    }

    /// Posts the parts after the first of a split body, in order, as
    /// conversation comments. With `check_existing` (the review was already
    /// there: a retry after a crash), the conversation is read once first and
    /// a part already on it, found by its exact body, is not posted again.
    async fn post_continuations(
        &self,
        repository: &RepositoryName,
        number: u64,
        parts: &[String],
        check_existing: bool,
    ) -> Result<Vec<IssueComment>, GitHubError> {
        if parts.is_empty() {
            return Ok(Vec::new());
        }
        let existing = if check_existing {
            self.list_issue_comments(repository, number).await?
        } else {
            Vec::new()
        };
        let mut comments = Vec::with_capacity(parts.len());
        for part in parts {
            if let Some(found) = existing
                .iter()
                .find(|comment| same_body(&comment.body, part))
            {
                comments.push(found.clone());
                continue;
            }
            let posted = self
                .create_issue_comment(repository, number, part, None)
                .await?;
            comments.push(posted.item);
        }
        Ok(comments)
    }

    /// One `pulls/create-review` call, re-posted only after checking a lost answer.
    async fn create_review(
        &self,
        repository: &RepositoryName,
        number: u64,
        review: &ReviewPayload,
        review_id: Option<ReviewId>,
        body: &str,
        comments: &[PayloadComment],
    ) -> Result<Attempted, GitHubError> {
        let parts = split_body(body);
        let body = parts[0].as_str();
        let wire_body = wire::CreateReview {
            commit_id: &review.commit_id,
            body,
            event: review.event.as_str(),
            comments: comments.iter().map(Into::into).collect(),
        };
        let request = ApiRequest::write(
            Method::POST,
            "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
            repository_path(repository, &["pulls", &number.to_string(), "reviews"]),
            Some(serde_json::to_value(&wire_body).expect("review body serialises")),
            Retry::Unsafe,
        );
        let what = format!("review on {repository}#{number}");
        let find = || async {
            let reviews = self.list_reviews(repository, number).await?;
            Ok(reviews.into_iter().find(|existing| match review_id {
                Some(review_id) => own_footer(&existing.body).review == Some(review_id),
                None => same_body(&existing.body, body),
            }))
        };
        let outcome = self
            .post_checked::<wire::Review, Review, _, _>(
                &Scope::Repository(repository.clone()),
                &request,
                &what,
                find,
            )
            .await?;
        let (review, found) = match outcome {
            CheckedPost::Created(created) => (created.into(), false),
            CheckedPost::Found(found) => (found, true),
            CheckedPost::Refused(error) => return Ok(Attempted::Refused(error)),
        };
        // A review found after a lost answer may have been posted by a run
        // that also posted some continuations: check before posting those.
        let continuation_comments = self
            .post_continuations(repository, number, &parts[1..], found)
            .await?;
        Ok(Attempted::Posted(Landed {
            review,
            found,
            continuation_comments,
        }))
    }
}

/// A review that exists on GitHub now.
struct Landed {
    review: Review,
    /// Found after a lost answer rather than from our request's answer.
    found: bool,
    /// The conversation comments carrying the rest of a split body.
    continuation_comments: Vec<IssueComment>,
}

/// The outcome of one create-review call.
enum Attempted {
    Posted(Landed),
    Refused(GitHubError),
}

/// True for a 422 about where a comment sits (GitHub's messages mention the
/// diff, a line, a path, a hunk or the review thread).
fn is_anchoring_refusal(error: &GitHubError) -> bool {
    let GitHubError::Unprocessable {
        message, errors, ..
    } = error
    else {
        return false;
    };
    std::iter::once(message)
        .chain(errors)
        .map(|text| text.to_ascii_lowercase())
        .any(|text| {
            [
                "diff",
                "line",
                "path",
                "hunk",
                "position",
                "pull_request_review_thread",
            ]
            .iter()
            .any(|keyword| text.contains(keyword))
        })
}

/// `body` followed by an "Outside the diff" section listing `comments` with
/// their file and line, each comment's text quoted whole (its `thread::` tag
/// included, which makes it a quoted tag, not this review's own).
pub(crate) fn with_outside_section(body: &str, comments: &[PayloadComment]) -> String {
    let mut text = body.trim_end().to_owned();
    let _ = write!(
        text,
        "\n\n{OUTSIDE_THE_DIFF_HEADING}\n\nGitHub would not place these comments on the diff, so \
         they are listed here.\n"
    );
    for comment in comments {
        let lines = describe_lines(&review_core::anchor::CommentLocation {
            path: comment.path.clone(),
            line: comment.line,
            start_line: comment.start_line,
            side: comment.side,
        });
        let side = match comment.side {
            Side::Left => " (old version)",
            Side::Right => "",
        };
        let quoted = comment
            .body
            .trim()
            .lines()
            .map(|line| format!("> {line}"))
            .collect::<Vec<_>>()
            .join("\n");
        let _ = write!(
            text,
            "\n**{}, {lines}{side}**\n\n{quoted}\n",
            inline_code(&comment.path)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_outside_section_names_file_and_line_and_keeps_the_whole_text() {
        let review_tag = "review::0b1c6b4e-1c1a-4f7e-9d56-3f0a2f9b8c11";
        let thread_tag = "thread::7c9e6679-7425-40de-944b-e07fc1f90ae7";
        let comments = vec![
            PayloadComment {
                path: "src/a.rs".into(),
                body: format!("Overflow here.\nUse checked_add.\n\n<sub>{thread_tag}</sub>"),
                line: 120,
                side: Side::Right,
                start_line: None,
                start_side: None,
            },
            PayloadComment {
                path: "src/b.rs".into(),
                body: "Removed guard.".into(),
                line: 9,
                side: Side::Left,
                start_line: Some(7),
                start_side: Some(Side::Left),
            },
        ];
        let body =
            with_outside_section(&format!("Summary.\n\n<sub>{review_tag}</sub>\n"), &comments);
        assert!(body.starts_with("Summary."));
        assert!(body.contains("**`src/a.rs`, line 120**"));
        assert!(body.contains("> Use checked_add."));
        assert!(body.contains(&format!("> <sub>{thread_tag}</sub>")));
        assert!(body.contains("**`src/b.rs`, lines 7–9 (old version)**"));
        let footer = own_footer(&body);
        assert_eq!(
            footer.review.map(|id| format!("review::{id}")).as_deref(),
            Some(review_tag)
        );
        assert_eq!(
            footer.thread, None,
            "the moved comment's tag is quoted, not the review's own"
        );
    }

    #[test]
    fn anchoring_refusals_are_recognised_and_others_are_not() {
        let anchoring = GitHubError::Unprocessable {
            method: "POST".into(),
            route: "/r",
            message: "Unprocessable Entity".into(),
            errors: vec!["Pull request review thread line must be part of the diff".into()],
        };
        let other = GitHubError::Unprocessable {
            method: "POST".into(),
            route: "/r",
            message: "Unprocessable Entity".into(),
            errors: vec!["Body is too long (maximum is 65536 characters)".into()],
        };
        assert!(is_anchoring_refusal(&anchoring));
        assert!(!is_anchoring_refusal(&other));
    }
}
