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
//! each). Nothing is cut away.
//!
//! A retry that finds the review already posted (a crash, a lost answer)
//! rebuilds what that post was: the planned body, the body after a 422
//! recovery, or every comment in the body — whichever plan's first part is
//! the review's body — and posts the continuation parts that are missing.
//! Continuations carry the review's `review::` id and "part k of n", so the
//! parts already on the conversation are found and not posted twice.

use std::fmt::Write as _;

use http::Method;
use tracing::Instrument;

use review_core::footer::own_footer;
use review_core::payload::{describe_lines, fits_github, inline_code, split_body};

use crate::anchoring;
use crate::client::{GitHubClient, Paged, Scope, repository_path};
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
        Ok(self.reviews_paged(repository, number).await?.items)
    }

    /// The reviews, with whether the page cap cut the list short.
    async fn reviews_paged(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Paged<Review>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
                &["pulls", &number.to_string(), "reviews"],
                MAX_REVIEW_PAGES,
                |page: Vec<wire::Review>| page,
            )
            .await?;
        Ok(paged.map(Into::into))
    }

    /// The review whose own footer carries `review::{review_id}` (a quote of
    /// it in someone else's review does not count), if any. When the list is
    /// longer than the pages we read and the review is not among them, the
    /// answer is unknown: [`GitHubError::IncompleteList`], never `None`.
    pub async fn find_review(
        &self,
        repository: &RepositoryName,
        number: u64,
        review_id: ReviewId,
    ) -> Result<Option<Review>, GitHubError> {
        self.reviews_paged(repository, number)
            .await?
            .find_or_unknown(&format!("review::{review_id}"), |review| {
                own_footer(&review.body).review == Some(review_id)
            })
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
        let planned = Plan::first(review);
        if !planned.moved_to_body.is_empty() {
            tracing::warn!(
                comments = planned.moved_to_body.len(),
                "inline comments longer than GitHub takes; listing them in the body"
            );
        }
        if let Some(review_id) = review_id
            && let Some(existing) = self
                .already_posted(repository, number, review, review_id, planned.clone())
                .await?
        {
            return Ok(existing);
        }
        let Plan {
            body: planned_body,
            inline: fitting,
            moved_to_body: too_long,
        } = planned;

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
                return Ok(posted.into_posted(fitting.len(), too_long));
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
                    return Ok(posted.into_posted(inline.len(), moved_to_body));
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
            Attempted::Posted(posted) => Ok(posted.into_posted(0, review.comments.clone())),
            Attempted::Refused(error) => Err(error),
        }
    }

    /// The review carrying `review::{review_id}`, if one exists, with the
    /// continuation comments a crash kept from being posted posted now. The
    /// post that created it is rebuilt: `planned` (no 422), every comment in
    /// the body (two 422s), or the 422 recovery from the PR's files (one
    /// more read, only when the first two do not match). A plan matches when
    /// its first part is the review's body and it has as many inline comments
    /// as the review has on GitHub: the first parts of two plans can be equal
    /// when the "Outside the diff" section falls in a later part.
    async fn already_posted(
        &self,
        repository: &RepositoryName,
        number: u64,
        review: &ReviewPayload,
        review_id: ReviewId,
        planned: Plan,
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
        let inline_on_github = self
            .list_review_comments(repository, number)
            .await?
            .iter()
            .filter(|comment| comment.review_id == Some(existing.id))
            .count();
        let matches = |plan: &Plan| {
            plan.inline.len() == inline_on_github
                && same_body(&existing.body, &split_body(&plan.body)[0])
        };
        let all_in_body = Plan {
            body: with_outside_section(&review.body, &review.comments),
            inline: Vec::new(),
            moved_to_body: review.comments.clone(),
        };
        let mut rebuilt = [planned, all_in_body]
            .into_iter()
            .find(|plan| matches(plan));
        if rebuilt.is_none() {
            rebuilt = self
                .recovered_plan(repository, number, review)
                .await?
                .filter(|plan| matches(plan));
        }
        let Some(plan) = rebuilt else {
            let missing = self
                .unrebuildable_continuations(repository, number, review_id, &existing.body)
                .await?;
            tracing::warn!(
                %review_id,
                missing,
                "the existing review matches no post this call can rebuild; its missing \
                 continuation comments cannot be posted: check the pull request"
            );
            return Ok(Some(PostedReview {
                review: existing,
                already_existed: true,
                inline_count: 0,
                moved_to_body: Vec::new(),
                continuation_comments: Vec::new(),
                continuations_posted: 0,
                continuations_missing: missing,
            }));
        };
        let parts = split_body(&plan.body);
        let (continuation_comments, continuations_posted) = self
            .post_continuations(repository, number, &parts[1..], Some(review_id), true)
            .await?;
        if continuations_posted > 0 {
            tracing::info!(
                %review_id,
                continuations_posted,
                "posted the continuation comments a previous run did not"
            );
        }
        Ok(Some(PostedReview {
            review: existing,
            already_existed: true,
            inline_count: plan.inline.len(),
            moved_to_body: plan.moved_to_body,
            continuation_comments,
            continuations_posted,
            continuations_missing: 0,
        }))
    }

    /// The plan a 422 recovery would post: comments GitHub cannot anchor, by
    /// the PR's files, moved to the body. `None` when nothing would move.
    async fn recovered_plan(
        &self,
        repository: &RepositoryName,
        number: u64,
        review: &ReviewPayload,
    ) -> Result<Option<Plan>, GitHubError> {
        let Plan {
            body: planned_body,
            inline: fitting,
            moved_to_body: too_long,
        } = Plan::first(review);
        if fitting.is_empty() {
            return Ok(None);
        }
        let files = self.list_pull_request_files(repository, number).await?;
        let Some((inline, outside)) = anchoring::partition(&fitting, &files) else {
            return Ok(None);
        };
        if outside.is_empty() {
            return Ok(None);
        }
        let body = with_outside_section(&planned_body, &outside);
        let mut moved_to_body = too_long;
        moved_to_body.extend(outside);
        Ok(Some(Plan {
            body,
            inline,
            moved_to_body,
        }))
    }

    /// For a review whose post cannot be rebuilt: how many of the
    /// continuation parts its body announces are not on the conversation.
    async fn unrebuildable_continuations(
        &self,
        repository: &RepositoryName,
        number: u64,
        review_id: ReviewId,
        body: &str,
    ) -> Result<usize, GitHubError> {
        let Some(total) = announced_parts(body) else {
            return Ok(0);
        };
        let present = self
            .list_issue_comments(repository, number)
            .await?
            .iter()
            .filter(|comment| {
                own_footer(&comment.body).review == Some(review_id)
                    && part_marker(&comment.body).is_some()
            })
            .count();
        Ok(total.saturating_sub(1).saturating_sub(present))
    }

    /// Posts the parts after the first of a split body, in order, as
    /// conversation comments; returns them and how many were posted now.
    /// With `check_existing` (the review was already there: a retry after a
    /// crash), the conversation is read once first and a part already on it —
    /// the same `review::` id and "part k of n", or the exact body — is not
    /// posted again. A part missing from a conversation longer than the pages
    /// we read is unknown: an error, not a second copy.
    async fn post_continuations(
        &self,
        repository: &RepositoryName,
        number: u64,
        parts: &[String],
        review_id: Option<ReviewId>,
        check_existing: bool,
    ) -> Result<(Vec<IssueComment>, usize), GitHubError> {
        if parts.is_empty() {
            return Ok((Vec::new(), 0));
        }
        let existing = if check_existing {
            Some(self.issue_comments_paged(repository, number).await?)
        } else {
            None
        };
        let mut comments = Vec::with_capacity(parts.len());
        let mut posted_now = 0;
        for part in parts {
            if let Some(existing) = &existing {
                let found = existing.items.iter().find(|comment| {
                    same_body(&comment.body, part)
                        || review_id.is_some_and(|review_id| {
                            own_footer(&comment.body).review == Some(review_id)
                                && part_marker(&comment.body).is_some()
                                && part_marker(&comment.body) == part_marker(part)
                        })
                });
                if let Some(found) = found {
                    comments.push(found.clone());
                    continue;
                }
                if existing.truncated {
                    return Err(GitHubError::IncompleteList {
                        route: existing.route,
                        pages: existing.pages,
                        what: format!(
                            "continuation {}",
                            part_marker(part).unwrap_or("of the review")
                        ),
                    });
                }
            }
            let posted = self
                .create_issue_comment(repository, number, part, None)
                .await?;
            if !posted.already_existed {
                posted_now += 1;
            }
            comments.push(posted.item);
        }
        Ok((comments, posted_now))
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
            self.reviews_paged(repository, number)
                .await?
                .find_or_unknown(&what, |existing| match review_id {
                    Some(review_id) => own_footer(&existing.body).review == Some(review_id),
                    None => same_body(&existing.body, body),
                })
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
        let (continuation_comments, continuations_posted) = self
            .post_continuations(repository, number, &parts[1..], review_id, found)
            .await?;
        Ok(Attempted::Posted(Landed {
            review,
            found,
            continuation_comments,
            continuations_posted,
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
    /// How many of them this call posted.
    continuations_posted: usize,
}

impl Landed {
    /// What the caller learns: the landed review, with where its comments went.
    fn into_posted(self, inline_count: usize, moved_to_body: Vec<PayloadComment>) -> PostedReview {
        PostedReview {
            review: self.review,
            already_existed: self.found,
            inline_count,
            moved_to_body,
            continuation_comments: self.continuation_comments,
            continuations_posted: self.continuations_posted,
            continuations_missing: 0,
        }
    }
}

/// One way a review could have been posted: its whole body (before
/// splitting) and where each comment went.
#[derive(Clone)]
struct Plan {
    body: String,
    inline: Vec<PayloadComment>,
    moved_to_body: Vec<PayloadComment>,
}

impl Plan {
    /// The first post's plan: every comment inline except those longer than
    /// GitHub takes, which go to the body up front.
    fn first(review: &ReviewPayload) -> Self {
        let (inline, moved_to_body): (Vec<PayloadComment>, Vec<PayloadComment>) = review
            .comments
            .iter()
            .cloned()
            .partition(|comment| fits_github(&comment.body));
        let body = if moved_to_body.is_empty() {
            review.body.clone()
        } else {
            with_outside_section(&review.body, &moved_to_body)
        };
        Self {
            body,
            inline,
            moved_to_body,
        }
    }
}

/// The "_(continued, part k of n)_" line opening a continuation comment.
fn part_marker(body: &str) -> Option<&str> {
    let first = body.trim_start().lines().next()?.trim();
    first.starts_with("_(continued, part ").then_some(first)
}

/// How many parts a split body's first part announces
/// ("_(continued in the next comment: part 1 of n)_").
fn announced_parts(body: &str) -> Option<usize> {
    let start = body.rfind("_(continued in the next comment: part 1 of ")?;
    let rest = &body[start + "_(continued in the next comment: part 1 of ".len()..];
    rest[..rest.find(')')?].trim().parse().ok()
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
