//! Reviews and review comments: create a review with inline comments (all or nothing, with
//! GitHub's 422 messages for anchors off the diff), single review comments, replies (only to
//! top-level comments), and the lists.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::Value;

use super::super::api::{ApiError, Context, Reply, paginate, to_sentence};
use super::super::diff::{PullDiff, Side};
use super::super::model::{Review, ReviewComment, ReviewState};
use super::super::render;
use super::super::state::SimState;
use super::{listed, pull_mut, pull_of, visible_repository};

/// Where a requested comment sits in the diff, once validated.
#[derive(Debug, Clone)]
struct Anchored {
    path: String,
    line: Option<u64>,
    side: Option<Side>,
    start_line: Option<u64>,
    start_side: Option<Side>,
    position: Option<u64>,
    diff_hunk: String,
    subject_type: &'static str,
}

/// Why GitHub refuses a comment's anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AnchorProblem {
    PathUnresolved,
    LineNotInDiff,
    PositionInvalid,
    InvalidSide,
    StartLineOtherHunk,
    StartLineNotBefore,
}

impl AnchorProblem {
    /// The sentences `pulls/create-review` puts in `errors` (validation-error-simple).
    fn review_sentences(self) -> &'static [&'static str] {
        match self {
            Self::PathUnresolved => &["Path could not be resolved"],
            Self::LineNotInDiff => &[
                "Pull request review thread line must be part of the diff",
                "Pull request review thread diff hunk can't be blank",
            ],
            Self::PositionInvalid => &[
                "Pull request review thread position is invalid",
                "Pull request review thread diff hunk can't be blank",
            ],
            Self::InvalidSide => &["Pull request review thread side is not included in the list"],
            Self::StartLineOtherHunk => &[
                "Pull request review thread start line must be part of the same hunk as the line.",
            ],
            Self::StartLineNotBefore => {
                &["Pull request review thread start line must precede the end line."]
            }
        }
    }

    /// The `validation-error` objects `pulls/create-review-comment` answers with.
    fn comment_errors(self) -> Vec<Value> {
        let custom = |field: &str, message: &str| {
            ApiError::field_error(
                "PullRequestReviewComment",
                field,
                "custom",
                Some(message.to_owned()),
            )
        };
        match self {
            Self::PathUnresolved => vec![
                ApiError::field_error(
                    "PullRequestReviewComment",
                    "pull_request_review_thread.path",
                    "invalid",
                    None,
                ),
                ApiError::field_error(
                    "PullRequestReviewComment",
                    "pull_request_review_thread.diff_hunk",
                    "missing_field",
                    None,
                ),
            ],
            Self::LineNotInDiff => vec![custom(
                "pull_request_review_thread.line",
                "pull_request_review_thread.line must be part of the diff",
            )],
            Self::PositionInvalid => vec![custom(
                "pull_request_review_thread.position",
                "pull_request_review_thread.position is invalid",
            )],
            Self::InvalidSide => vec![ApiError::field_error(
                "PullRequestReviewComment",
                "pull_request_review_thread.side",
                "invalid",
                None,
            )],
            Self::StartLineOtherHunk => vec![custom(
                "pull_request_review_thread.start_line",
                "pull_request_review_thread.start_line must be part of the same hunk as the line.",
            )],
            Self::StartLineNotBefore => vec![custom(
                "pull_request_review_thread.start_line",
                "pull_request_review_thread.start_line must precede the end line.",
            )],
        }
    }
}

fn optional_u64(value: Option<&Value>) -> Option<u64> {
    value.and_then(Value::as_u64)
}

/// Validates one comment's anchor against the diff, independently of `review-core`.
fn anchor(diff: &PullDiff, comment: &Value) -> Result<Anchored, Vec<AnchorProblem>> {
    let path = comment
        .get("path")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let Some(file) = diff.file(path) else {
        return Err(vec![AnchorProblem::PathUnresolved]);
    };
    if comment.get("subject_type").and_then(Value::as_str) == Some("file") {
        return Ok(Anchored {
            path: path.to_owned(),
            line: None,
            side: None,
            start_line: None,
            start_side: None,
            position: None,
            diff_hunk: file
                .hunks
                .first()
                .map(|hunk| hunk.header.clone())
                .unwrap_or_default(),
            subject_type: "file",
        });
    }
    let line = optional_u64(comment.get("line"));
    let position = optional_u64(comment.get("position"));
    let side = match comment.get("side").and_then(Value::as_str) {
        None => Side::Right,
        Some(text) => Side::parse(text).ok_or_else(|| vec![AnchorProblem::InvalidSide])?,
    };
    let (end_side, end_line, end_hit) = match (line, position) {
        (Some(line), _) => {
            let Some(hit) = file.find(side, line) else {
                let mut problems = vec![AnchorProblem::LineNotInDiff];
                if comment
                    .get("start_line")
                    .is_some_and(|value| !value.is_null())
                {
                    problems.push(AnchorProblem::StartLineOtherHunk);
                }
                return Err(problems);
            };
            (side, line, hit)
        }
        (None, Some(position)) => file
            .at_position(position)
            .ok_or_else(|| vec![AnchorProblem::PositionInvalid])?,
        (None, None) => return Err(vec![AnchorProblem::LineNotInDiff]),
    };
    let mut start = None;
    if let Some(start_line) = optional_u64(comment.get("start_line")) {
        let start_side = match comment.get("start_side").and_then(Value::as_str) {
            None => end_side,
            Some(text) => Side::parse(text).ok_or_else(|| vec![AnchorProblem::InvalidSide])?,
        };
        match file.find(start_side, start_line) {
            Some(hit) if hit.hunk == end_hit.hunk => {
                if hit.line >= end_hit.line {
                    return Err(vec![AnchorProblem::StartLineNotBefore]);
                }
                start = Some((start_line, start_side));
            }
            _ => return Err(vec![AnchorProblem::StartLineOtherHunk]),
        }
    }
    let end = file.line_at(end_hit);
    Ok(Anchored {
        path: path.to_owned(),
        line: Some(end_line),
        side: Some(end_side),
        start_line: start.map(|(line, _)| line),
        start_side: start.map(|(_, side)| side),
        position: Some(end.position),
        diff_hunk: file.diff_hunk(end_hit),
        subject_type: "line",
    })
}

/// A pull request, the commit a comment targets (validated to be part of the pull request)
/// and the diff at that commit.
struct PullContext {
    key: String,
    number: u64,
    commit_id: String,
    diff: Arc<PullDiff>,
}

enum CommitProblem {
    NotPartOfPull,
}

fn pull_context(
    state: &mut SimState,
    context: &Context,
    requested_commit: Option<&str>,
) -> Result<Result<PullContext, CommitProblem>, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let head_sha = state.head_sha(repository, pull)?;
    let base_sha = state.base_sha(repository, pull)?;
    let git = state.git(repository);
    let commit_id = match requested_commit {
        None => head_sha.clone(),
        Some(requested) => {
            let merge_base = git.merge_base(&base_sha, &head_sha)?.unwrap_or_default();
            let resolved = git.resolve_commit(requested)?;
            match resolved {
                Some(sha)
                    if sha == requested
                        && git.is_ancestor(&sha, &head_sha)?
                        && !git.is_ancestor(&sha, &merge_base)? =>
                {
                    sha
                }
                _ => return Ok(Err(CommitProblem::NotPartOfPull)),
            }
        }
    };
    let diff = state.pull_diff(&key, &base_sha, &commit_id)?;
    Ok(Ok(PullContext {
        key,
        number,
        commit_id,
        diff,
    }))
}

fn parse_event(event: Option<&str>) -> Result<ReviewState, ApiError> {
    match event {
        None | Some("" | "PENDING") => Ok(ReviewState::Pending),
        Some("COMMENT") => Ok(ReviewState::Commented),
        Some("REQUEST_CHANGES") => Ok(ReviewState::ChangesRequested),
        Some("APPROVE") => Ok(ReviewState::Approved),
        Some(other) => Err(ApiError::unprocessable(vec![format!(
            "Unexpected event {other:?}: use APPROVE, REQUEST_CHANGES or COMMENT"
        )])),
    }
}

/// Anchors every comment of a review, or answers GitHub's one 422 sentence naming every kind
/// of problem found (GitHub does not say which comment is at fault).
fn anchor_all(diff: &PullDiff, requested: &[Value]) -> Result<Vec<(Anchored, Value)>, ApiError> {
    let mut sentences: Vec<String> = Vec::new();
    let mut anchored = Vec::with_capacity(requested.len());
    for comment in requested {
        match anchor(diff, comment) {
            Ok(found) => anchored.push((found, comment.clone())),
            Err(problems) => {
                for problem in problems {
                    for sentence in problem.review_sentences() {
                        if !sentences.iter().any(|known| known == sentence) {
                            sentences.push((*sentence).to_owned());
                        }
                    }
                }
            }
        }
    }
    if sentences.is_empty() {
        return Ok(anchored);
    }
    // GitHub puts "diff hunk can't be blank" last.
    let blank = "Pull request review thread diff hunk can't be blank";
    if let Some(index) = sentences.iter().position(|sentence| sentence == blank) {
        let sentence = sentences.remove(index);
        sentences.push(sentence);
    }
    Err(ApiError::unprocessable(vec![to_sentence(&sentences)]))
}

/// `POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews`
pub(super) fn create_review(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let event = parse_event(context.body_str("event"))?;
    let body = context.body_str("body").unwrap_or_default().to_owned();
    let requested_comments: Vec<Value> = context
        .body_field("comments")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let pull = match pull_context(state, context, context.body_str("commit_id"))? {
        Ok(pull) => pull,
        Err(CommitProblem::NotPartOfPull) => {
            return Err(ApiError::unprocessable(vec![
                "The commitOID is not part of the pull request".to_owned(),
            ]));
        }
    };
    if matches!(
        event,
        ReviewState::Commented | ReviewState::ChangesRequested
    ) && body.trim().is_empty()
        && requested_comments.is_empty()
    {
        return Err(ApiError::unprocessable(vec![
            "Body can't be blank".to_owned(),
        ]));
    }
    ApiError::check_body_length("PullRequestReview", &body)?;
    for comment in &requested_comments {
        let text = comment
            .get("body")
            .and_then(Value::as_str)
            .unwrap_or_default();
        ApiError::check_body_length("PullRequestReviewComment", text)?;
    }
    {
        let (_, existing) = pull_of(state, &pull.key, pull.number)?;
        if event == ReviewState::Pending
            && existing
                .reviews
                .iter()
                .any(|review| review.state == ReviewState::Pending && review.user == login)
        {
            return Err(ApiError::unprocessable(vec![
                "User can only have one pending review per pull request".to_owned(),
            ]));
        }
    }
    // All or nothing: every comment must anchor before anything is created.
    let anchored = anchor_all(&pull.diff, &requested_comments)?;
    let review_id = state.next_id();
    let mut comments = Vec::with_capacity(anchored.len());
    for (found, request) in anchored {
        comments.push(ReviewComment {
            id: state.next_id(),
            review_id,
            in_reply_to: None,
            user: login.clone(),
            body: request
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            path: found.path,
            commit_id: pull.commit_id.clone(),
            diff_hunk: found.diff_hunk,
            line: found.line,
            side: found.side.map(|side| side.as_str().to_owned()),
            start_line: found.start_line,
            start_side: found.start_side.map(|side| side.as_str().to_owned()),
            position: found.position,
            subject_type: found.subject_type.to_owned(),
            created_at: context.now,
            updated_at: context.now,
        });
    }
    let review = Review {
        id: review_id,
        user: login,
        body,
        state: event,
        commit_id: pull.commit_id.clone(),
        submitted_at: (event != ReviewState::Pending).then_some(context.now),
    };
    let target = pull_mut(state, &pull.key, pull.number)?;
    target.reviews.push(review.clone());
    target.review_comments.extend(comments);
    if event != ReviewState::Pending {
        target.updated_at = context.now;
    }
    let (repository, pull_request) = pull_of(state, &pull.key, pull.number)?;
    Ok(Reply::ok(render::review(
        state,
        repository,
        pull_request,
        &review,
    )))
}

/// Whether the caller may see a review (pending reviews are private to their author).
fn visible_review(review: &Review, login: Option<&str>) -> bool {
    review.state != ReviewState::Pending || login == Some(review.user.as_str())
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/reviews`
pub(super) fn list_reviews(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let login = context.actor.login();
    let items = pull
        .reviews
        .iter()
        .filter(|review| visible_review(review, login))
        .filter(|review| {
            review
                .submitted_at
                .is_none_or(|submitted_at| listed(state, submitted_at, context.now))
        })
        .map(|review| render::review(state, repository, pull, review))
        .collect();
    Ok(paginate(context, &state.base_url, items))
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/comments`
pub(super) fn list_review_comments(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let login = context.actor.login();
    let since = context
        .query_value("since")
        .and_then(|value| chrono::DateTime::parse_from_rfc3339(value).ok())
        .map(|value| value.with_timezone(&chrono::Utc));
    let mut comments: Vec<&ReviewComment> = pull
        .review_comments
        .iter()
        .filter(|comment| {
            pull.reviews
                .iter()
                .find(|review| review.id == comment.review_id)
                .is_none_or(|review| visible_review(review, login))
        })
        .filter(|comment| since.is_none_or(|since| comment.updated_at >= since))
        .filter(|comment| listed(state, comment.created_at, context.now))
        .collect();
    if context.query_value("sort") == Some("updated") {
        comments.sort_by_key(|comment| (comment.updated_at, comment.id));
    } else {
        comments.sort_by_key(|comment| (comment.created_at, comment.id));
    }
    if context.query_value("direction") == Some("desc") {
        comments.reverse();
    }
    let items = comments
        .into_iter()
        .map(|comment| render::review_comment(state, repository, pull, comment))
        .collect();
    Ok(paginate(context, &state.base_url, items))
}

/// A reply to `parent_id`: only top-level comments can be replied to (404 otherwise, the only
/// error the operation documents).
fn reply_to(
    state: &mut SimState,
    context: &Context,
    parent_id: u64,
    body: String,
) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    ApiError::check_body_length("PullRequestReviewComment", &body)?;
    let (_, pull) = pull_of(state, &key, number)?;
    let parent = pull
        .review_comments
        .iter()
        .find(|comment| comment.id == parent_id)
        .cloned()
        .ok_or_else(ApiError::not_found)?;
    if parent.in_reply_to.is_some() {
        return Err(ApiError::not_found());
    }
    let review_id = state.next_id();
    let reply = ReviewComment {
        id: state.next_id(),
        review_id,
        in_reply_to: Some(parent.id),
        user: login.clone(),
        body,
        created_at: context.now,
        updated_at: context.now,
        ..parent
    };
    let review = Review {
        id: review_id,
        user: login,
        body: String::new(),
        state: ReviewState::Commented,
        commit_id: reply.commit_id.clone(),
        submitted_at: Some(context.now),
    };
    let target = pull_mut(state, &key, number)?;
    target.reviews.push(review);
    target.review_comments.push(reply.clone());
    target.updated_at = context.now;
    let (repository, pull) = pull_of(state, &key, number)?;
    let location = format!(
        "{}/repos/{}/pulls/comments/{}",
        state.base_url,
        repository.full_name(),
        reply.id
    );
    Ok(Reply::created(
        render::review_comment(state, repository, pull, &reply),
        Some(location),
    ))
}

/// `POST /repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies`
pub(super) fn create_reply(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let parent_id = context.number_param("comment_id")?;
    let body = context.body_str("body").unwrap_or_default().to_owned();
    reply_to(state, context, parent_id, body)
}

/// `POST /repos/{owner}/{repo}/pulls/{pull_number}/comments`
pub(super) fn create_review_comment(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let body = context.body_str("body").unwrap_or_default().to_owned();
    if let Some(parent_id) = context.body_field("in_reply_to").and_then(Value::as_u64) {
        return reply_to(state, context, parent_id, body);
    }
    ApiError::check_body_length("PullRequestReviewComment", &body)?;
    let pull = match pull_context(state, context, context.body_str("commit_id"))? {
        Ok(pull) => pull,
        Err(CommitProblem::NotPartOfPull) => {
            return Err(ApiError::validation_failed(vec![ApiError::field_error(
                "PullRequestReviewComment",
                "commit_id",
                "custom",
                Some("commit_id is not part of the pull request".to_owned()),
            )]));
        }
    };
    let request = context.body.clone().unwrap_or(Value::Null);
    let found = anchor(&pull.diff, &request).map_err(|problems| {
        ApiError::validation_failed(
            problems
                .into_iter()
                .flat_map(AnchorProblem::comment_errors)
                .collect(),
        )
    })?;
    let review_id = state.next_id();
    let comment = ReviewComment {
        id: state.next_id(),
        review_id,
        in_reply_to: None,
        user: login.clone(),
        body,
        path: found.path,
        commit_id: pull.commit_id.clone(),
        diff_hunk: found.diff_hunk,
        line: found.line,
        side: found.side.map(|side| side.as_str().to_owned()),
        start_line: found.start_line,
        start_side: found.start_side.map(|side| side.as_str().to_owned()),
        position: found.position,
        subject_type: found.subject_type.to_owned(),
        created_at: context.now,
        updated_at: context.now,
    };
    let review = Review {
        id: review_id,
        user: login,
        body: String::new(),
        state: ReviewState::Commented,
        commit_id: pull.commit_id.clone(),
        submitted_at: Some(context.now),
    };
    let target = pull_mut(state, &pull.key, pull.number)?;
    target.reviews.push(review);
    target.review_comments.push(comment.clone());
    target.updated_at = context.now;
    let (repository, pull_request) = pull_of(state, &pull.key, pull.number)?;
    let location = format!(
        "{}/repos/{}/pulls/comments/{}",
        state.base_url,
        repository.full_name(),
        comment.id
    );
    let mut reply = Reply::created(
        render::review_comment(state, repository, pull_request, &comment),
        Some(location),
    );
    reply.status = StatusCode::CREATED;
    Ok(reply)
}
