//! Step 5: carrying out a saved plan on GitHub, and reporting a failure.
//!
//! Every write here is safe to repeat. The review is posted with its
//! `review::` id, so a review that is already there is found, not posted
//! again (`review_github`'s `post_review`). When the run resumes an earlier
//! one, the pull request's comments are read once and every planned reply or
//! comment already there (by its `thread::` id, in a comment of the bot's) is
//! skipped. Fingerprints and replies are recorded in the store right after
//! they are posted; recording twice changes nothing. The labels are set to
//! what the outcome says, from what the pull request has now.

use std::collections::HashSet;

use review_core::agent_requests::ReplyTarget;
use review_core::footer::{self, ThreadId};
use review_core::labels;
use review_github::GitHubError;
use review_store::CommentId;
use uuid::Uuid;

use super::plan::{PlannedAction, ReviewPlan};
use super::{Job, ReviewError};

/// Carries out `plan`.
pub(super) async fn execute(job: &mut Job<'_>, plan: &ReviewPlan) -> Result<(), ReviewError> {
    let github = &job.reviewer.github;
    let repository = &job.request.repository;
    let number = job.request.number;
    let already = if job.summary.resumed {
        own_thread_ids(job).await?
    } else {
        HashSet::new()
    };

    match &plan.action {
        PlannedAction::BuildFailed { body, thread_id } => {
            let step = job.progress.step("post the failure");
            if already.contains(thread_id) {
                step.done("already posted");
            } else {
                let posted = github
                    .create_issue_comment(repository, number, body, Some(ThreadId(*thread_id)))
                    .await?;
                job.summary.url = Some(posted.item.html_url.clone());
                step.done(posted.item.html_url);
            }
        }
        PlannedAction::Review {
            payload,
            replies,
            posted,
            resolve,
            ..
        } => {
            post_review(job, payload, posted).await?;
            if !replies.is_empty() {
                post_replies(job, replies, &already).await?;
            }
            if !resolve.is_empty() {
                resolve_threads(job, resolve).await;
            }
        }
    }
    set_labels(job, plan).await
}

/// Resolves the bot's fixed threads (GraphQL `resolveReviewThread`). A
/// refusal is logged and the rest go on: the review body already said which
/// threads are fixed, and resolving is safe to repeat on a rerun.
async fn resolve_threads(job: &Job<'_>, resolve: &[super::compose::ThreadToResolve]) {
    let step = job.progress.step("resolve fixed threads");
    let mut resolved = 0usize;
    for thread in resolve {
        match job
            .reviewer
            .github
            .resolve_review_thread(&job.request.repository, &thread.id)
            .await
        {
            Ok(()) => resolved += 1,
            Err(error) => {
                tracing::warn!(%error, comment = thread.comment_id, "could not resolve a fixed thread");
            }
        }
    }
    let (requests, points) = job.reviewer.github.graphql_usage();
    step.done(format!(
        "{resolved} of {} resolved; GraphQL so far: {requests} request{}, {points} point{}",
        resolve.len(),
        if requests == 1 { "" } else { "s" },
        if points == 1 { "" } else { "s" },
    ));
}

/// Posts the review (or finds it posted) and records its findings' fingerprints.
async fn post_review(
    job: &mut Job<'_>,
    payload: &review_core::payload::ReviewPayload,
    posted: &[super::compose::PostedFinding],
) -> Result<(), ReviewError> {
    let github = &job.reviewer.github;
    let repository = &job.request.repository;
    let number = job.request.number;
    let step = job.progress.step("post the review");
    let review = github
        .post_review(repository, number, payload, Some(job.review_id))
        .await?;
    job.summary.url = Some(review.review.html_url.clone());
    job.summary.inline_comments = review.inline_count;
    if review.continuations_missing > 0 {
        tracing::warn!(
            missing = review.continuations_missing,
            "the review's body announces continuation parts that are not on GitHub and could not be rebuilt"
        );
    }
    step.done(format!(
        "{}{} inline, {} moved to the body",
        if review.already_existed {
            "already posted; "
        } else {
            ""
        },
        review.inline_count,
        review.moved_to_body.len()
    ));
    let review_id = job.review_id.to_string();
    let findings: Vec<review_store::InlineComment<'_>> = posted
        .iter()
        .map(|finding| review_store::InlineComment {
            path: &finding.path,
            line: finding.line,
            body: &finding.body,
        })
        .collect();
    job.reviewer
        .store
        .record_posted_comments(&repository.to_string(), number, Some(&review_id), &findings)
        .await?;
    Ok(())
}

/// Posts the planned replies not already on GitHub and records each in the store.
async fn post_replies(
    job: &mut Job<'_>,
    replies: &[super::compose::PlannedReply],
    already: &HashSet<Uuid>,
) -> Result<(), ReviewError> {
    let github = &job.reviewer.github;
    let store = &job.reviewer.store;
    let repository = &job.request.repository;
    let repository_name = repository.to_string();
    let number = job.request.number;
    let step = job.progress.step("post the replies");
    let mut posted_now = 0;
    let mut gone = 0;
    for reply in replies {
        if !already.contains(&reply.thread_id) {
            let to_post = ReplyToPost {
                comment_id: reply.comment_id,
                target: reply.target,
                body: &reply.body,
                thread_id: reply.thread_id,
            };
            match post_planned_reply(github, repository, number, to_post).await? {
                ReplyOutcome::Posted => posted_now += 1,
                ReplyOutcome::AlreadyThere => {}
                ReplyOutcome::CommentGone => {
                    gone += 1;
                    continue;
                }
            }
        }
        store
            .mark_comment_replied(CommentId(reply.comment_id), number, &repository_name)
            .await?;
    }
    job.summary.replies_posted = posted_now;
    step.done(format!(
        "{posted_now} posted{}",
        if gone > 0 {
            format!(", {gone} to deleted comments skipped")
        } else {
            String::new()
        }
    ));
    Ok(())
}

/// What became of one planned reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyOutcome {
    /// Posted now.
    Posted,
    /// GitHub already had it (found by its `thread::` id or exact body).
    AlreadyThere,
    /// The comment it answers was deleted since the snapshot: nothing to answer.
    CommentGone,
}

/// One reply to post (the review flow's and the write flow's plans both hold them).
#[derive(Debug, Clone, Copy)]
pub struct ReplyToPost<'a> {
    /// The comment answered.
    pub comment_id: u64,
    /// Its kind.
    pub target: ReplyTarget,
    /// The body, footer included.
    pub body: &'a str,
    /// The `thread::` id in the footer.
    pub thread_id: Uuid,
}

/// Posts one planned reply — threaded under a review comment, or a
/// conversation comment quoting an issue comment — for the review and the
/// write flows alike. The caller records it in the store unless the comment is gone.
pub async fn post_planned_reply(
    github: &review_github::GitHubClient,
    repository: &review_github::RepositoryName,
    number: u64,
    reply: ReplyToPost<'_>,
) -> Result<ReplyOutcome, GitHubError> {
    let thread = Some(ThreadId(reply.thread_id));
    let already = match reply.target {
        ReplyTarget::ReviewComment => github
            .reply_to_review_comment(repository, number, reply.comment_id, reply.body, thread)
            .await
            .map(|posted| posted.already_existed),
        ReplyTarget::IssueComment => github
            .create_issue_comment(repository, number, reply.body, thread)
            .await
            .map(|posted| posted.already_existed),
    };
    match already {
        Ok(false) => Ok(ReplyOutcome::Posted),
        Ok(true) => Ok(ReplyOutcome::AlreadyThere),
        Err(GitHubError::NotFound { .. }) => {
            tracing::warn!(
                comment = reply.comment_id,
                "the comment to reply to is gone; reply not posted"
            );
            Ok(ReplyOutcome::CommentGone)
        }
        Err(error) => Err(error),
    }
}

/// Makes the outcome's label the pull request's only bot label.
async fn set_labels(job: &mut Job<'_>, plan: &ReviewPlan) -> Result<(), ReviewError> {
    let github = &job.reviewer.github;
    let repository = &job.request.repository;
    let number = job.request.number;
    let step = job.progress.step("labels");
    let current = github.list_labels(repository, number).await?;
    let change = labels::after_outcome(&current, plan.outcome.label_outcome());
    crate::ci::apply_label_change(github, repository, number, &change).await?;
    let label = plan
        .outcome
        .label_outcome()
        .next_label()
        .map(|label| label.name().to_owned());
    step.done(match (&label, change.is_empty()) {
        (Some(label), true) => format!("{label} (already set)"),
        (Some(label), false) => label.clone(),
        (None, _) => "unchanged".to_owned(),
    });
    job.summary.label = label;
    Ok(())
}

/// The `thread::` ids of the bot's own comments on the pull request (review
/// comments and conversation comments), for a resumed run.
async fn own_thread_ids(job: &Job<'_>) -> Result<HashSet<Uuid>, ReviewError> {
    let github = &job.reviewer.github;
    let repository = &job.request.repository;
    let number = job.request.number;
    let (review_comments, issue_comments) = tokio::try_join!(
        github.list_review_comments(repository, number),
        github.list_issue_comments(repository, number),
    )?;
    let bot = job.reviewer.settings.bot_login.as_deref();
    let mine = |author: Option<&str>| match (bot, author) {
        (Some(bot), Some(author)) => review_core::snapshot::is_bot_login(bot, author),
        // Without the bot's login, trust the ids: they are derived from this
        // review's id, which nobody else has seen before the review is posted.
        (None, _) => true,
        (Some(_), None) => false,
    };
    Ok(review_comments
        .iter()
        .filter(|comment| mine(comment.author_login.as_deref()))
        .map(|comment| comment.body.as_str())
        .chain(
            issue_comments
                .iter()
                .filter(|comment| mine(comment.author_login.as_deref()))
                .map(|comment| comment.body.as_str()),
        )
        .filter_map(|body| footer::own_footer(body).thread)
        .map(|thread| thread.0)
        .collect())
}

/// Posts the one comment that says the review failed and how to retry.
/// Returns its page.
pub(super) async fn report_failure(
    job: &Job<'_>,
    error: &ReviewError,
) -> Result<String, ReviewError> {
    let github = &job.reviewer.github;
    let repository = &job.request.repository;
    let number = job.request.number;
    let (reviews, issue_comments) = tokio::try_join!(
        github.list_reviews(repository, number),
        github.list_issue_comments(repository, number),
    )?;
    let bot = job.reviewer.settings.bot_login.as_deref();
    let latest = footer::latest_review_id(
        reviews
            .iter()
            .filter(|review| match (bot, review.author_login.as_deref()) {
                (Some(bot), Some(author)) => review_core::snapshot::is_bot_login(bot, author),
                _ => false,
            })
            .map(|review| review.body.as_str()),
    );
    // One status comment per pull request (issue 25 item 10): an edit of
    // the bot's earlier status, with the attempt count going on.
    let status = crate::status::find(
        &issue_comments,
        bot,
        crate::status::thread_id(repository, number),
    );
    let head = &job.pull_request.head_sha;
    let attempt = crate::status::next_attempt(status.map(|comment| comment.body.as_str()), head);
    let text = crate::status::with_attempt_line(&failure_text(job, error), attempt, head);
    let posted = crate::status::publish(
        github,
        repository,
        number,
        status.map(|comment| comment.id),
        latest,
        &text,
    )
    .await?;
    Ok(posted.html_url)
}

fn failure_text(job: &Job<'_>, error: &ReviewError) -> String {
    let summary = footer::defuse(&error.public_summary()).into_owned();
    let retry = format!(
        "**To retry**, run `review-bot review {}#{}` where the bot runs, or leave it to the \
         daemon, which tries again while the pull request keeps its bot label. The bot's log \
         has the details under run `{}`.",
        job.request.repository, job.request.number, job.review_id,
    );
    if job.posting {
        format!(
            "### ⚠️ review-bot could not finish posting its review\n\n\
             **What failed:** {summary}\n\n\
             The review may be on this pull request already; replies or labels may be missing. \
             Running it again finishes what is left and posts nothing twice. {retry}"
        )
    } else {
        format!(
            "### ⚠️ review-bot could not review this pull request\n\n\
             **What failed:** {summary}\n\n\
             Nothing of this review was posted, and the labels are unchanged. {retry}"
        )
    }
}
