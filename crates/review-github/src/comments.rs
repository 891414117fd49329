//! Review comments (inline threads) and issue comments (the conversation):
//! listing them, replying, creating and editing — each creation exactly once.

use http::Method;

use crate::client::{GitHubClient, Paged, Scope, repository_path};
use crate::error::GitHubError;
use review_core::footer::own_footer;

use crate::model::{IssueComment, Posted, RepositoryName, ReviewComment, ThreadId};
use crate::transport::{ApiRequest, Retry};
use crate::wire;
use crate::writes::{CheckedPost, same_body};

/// Pages of comments we read at most (100 per page).
const MAX_COMMENT_PAGES: usize = 50;

/// True when `body` is the comment we meant to post: it carries our
/// `thread::` id, or (without an id) has exactly our text.
fn is_our_comment(existing_body: &str, thread_id: Option<ThreadId>, body: &str) -> bool {
    match thread_id {
        Some(thread_id) => own_footer(existing_body).thread == Some(thread_id),
        None => same_body(existing_body, body),
    }
}

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}/pulls/{pull_number}/comments`, every page
    /// (conditional).
    pub async fn list_review_comments(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Vec<ReviewComment>, GitHubError> {
        Ok(self.review_comments_paged(repository, number).await?.items)
    }

    /// The review comments, with whether the page cap cut the list short.
    pub(crate) async fn review_comments_paged(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Paged<ReviewComment>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
                &["pulls", &number.to_string(), "comments"],
                MAX_COMMENT_PAGES,
                |page: Vec<wire::ReviewComment>| page,
            )
            .await?;
        Ok(paged.map(Into::into))
    }

    /// `GET /repos/{owner}/{repo}/issues/{issue_number}/comments`, every page
    /// (conditional).
    pub async fn list_issue_comments(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Vec<IssueComment>, GitHubError> {
        Ok(self.issue_comments_paged(repository, number).await?.items)
    }

    /// The conversation comments, with whether the page cap cut the list short.
    pub(crate) async fn issue_comments_paged(
        &self,
        repository: &RepositoryName,
        number: u64,
    ) -> Result<Paged<IssueComment>, GitHubError> {
        let paged = self
            .get_repository_pages(
                repository,
                "/repos/{owner}/{repo}/issues/{issue_number}/comments",
                &["issues", &number.to_string(), "comments"],
                MAX_COMMENT_PAGES,
                |page: Vec<wire::IssueComment>| page,
            )
            .await?;
        Ok(paged.map(Into::into))
    }

    /// Replies in the thread of top-level review comment `comment_id`
    /// (`pulls/create-reply-for-review-comment`). With `thread_id`, a lost
    /// answer is confirmed by finding `thread::{thread_id}` among the replies;
    /// without, by the exact body.
    pub async fn reply_to_review_comment(
        &self,
        repository: &RepositoryName,
        number: u64,
        comment_id: u64,
        body: &str,
        thread_id: Option<ThreadId>,
    ) -> Result<Posted<ReviewComment>, GitHubError> {
        let request = ApiRequest::write(
            Method::POST,
            "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies",
            repository_path(
                repository,
                &[
                    "pulls",
                    &number.to_string(),
                    "comments",
                    &comment_id.to_string(),
                    "replies",
                ],
            ),
            Some(serde_json::to_value(wire::TextBody { body }).expect("body serialises")),
            Retry::Unsafe,
        );
        let what = format!("reply to review comment {comment_id} on {repository}#{number}");
        let find = || async {
            self.review_comments_paged(repository, number)
                .await?
                .find_or_unknown(&what, |existing| {
                    existing.in_reply_to == Some(comment_id)
                        && is_our_comment(&existing.body, thread_id, body)
                })
        };
        let outcome = self
            .post_checked::<wire::ReviewComment, ReviewComment, _, _>(
                &Scope::Repository(repository.clone()),
                &request,
                &what,
                find,
            )
            .await?;
        match outcome {
            CheckedPost::Created(created) => Ok(Posted {
                item: created.into(),
                already_existed: false,
            }),
            CheckedPost::Found(found) => Ok(Posted {
                item: found,
                already_existed: true,
            }),
            CheckedPost::Refused(error) => Err(error),
        }
    }

    /// Comments on the pull request's conversation (`issues/create-comment`).
    /// With `thread_id`, a lost answer is confirmed by finding
    /// `thread::{thread_id}`; without, by the exact body.
    pub async fn create_issue_comment(
        &self,
        repository: &RepositoryName,
        number: u64,
        body: &str,
        thread_id: Option<ThreadId>,
    ) -> Result<Posted<IssueComment>, GitHubError> {
        let request = ApiRequest::write(
            Method::POST,
            "/repos/{owner}/{repo}/issues/{issue_number}/comments",
            repository_path(repository, &["issues", &number.to_string(), "comments"]),
            Some(serde_json::to_value(wire::TextBody { body }).expect("body serialises")),
            Retry::Unsafe,
        );
        let what = format!("comment on {repository}#{number}");
        let find = || async {
            self.issue_comments_paged(repository, number)
                .await?
                .find_or_unknown(&what, |existing| {
                    is_our_comment(&existing.body, thread_id, body)
                })
        };
        let outcome = self
            .post_checked::<wire::IssueComment, IssueComment, _, _>(
                &Scope::Repository(repository.clone()),
                &request,
                &what,
                find,
            )
            .await?;
        match outcome {
            CheckedPost::Created(created) => Ok(Posted {
                item: created.into(),
                already_existed: false,
            }),
            CheckedPost::Found(found) => Ok(Posted {
                item: found,
                already_existed: true,
            }),
            CheckedPost::Refused(error) => Err(error),
        }
    }

    /// Replaces an issue comment's body (`issues/update-comment`; idempotent,
    /// so retried like a read).
    pub async fn update_issue_comment(
        &self,
        repository: &RepositoryName,
        comment_id: u64,
        body: &str,
    ) -> Result<IssueComment, GitHubError> {
        let request = ApiRequest::write(
            Method::PATCH,
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            repository_path(repository, &["issues", "comments", &comment_id.to_string()]),
            Some(serde_json::to_value(wire::TextBody { body }).expect("body serialises")),
            Retry::Safe,
        );
        let answer = self
            .send_expecting_success(&Scope::Repository(repository.clone()), &request)
            .await?;
        let comment: wire::IssueComment = crate::client::decode(&request, &answer)?;
        Ok(comment.into())
    }
}
