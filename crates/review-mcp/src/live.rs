//! Live mode: the server reads and writes GitHub directly, for a developer's
//! own Claude Code session (`review-bot mcp --live --repo OWNER/REPO --pr N`).
//!
//! The developer's token is used; replies are posted at once and recorded in
//! the local store, so `github_get_pr_comments` stops listing them (seed 002).
//! The comment tools still append to `COMMENTS_FILE` (checked against the
//! live diff): a stream of single-comment reviews would notify the author once
//! per comment, which is exactly what review-bot avoids.

use std::collections::HashSet;

use review_core::agent_requests::ReplyTarget;
use review_core::diff::PullRequestDiff as DiffModel;
use review_core::snapshot::{CommentLookup, PullRequestSnapshot};
use review_github::{GitHubClient, GitHubError, PullRequest, PullRequestDiff, RepositoryName};
use review_store::{CommentId, Store, StoreError};

use crate::github_snapshot::{GitHubPullRequest, snapshot_from_github};

/// The most characters of an issue comment quoted in a reply to it.
const QUOTE_CHARS: usize = 300;

/// A live connection to one pull request.
pub struct LiveSource {
    /// The developer's GitHub client.
    github: GitHubClient,
    /// Where replies are recorded.
    store: Store,
    /// The repository.
    repository: RepositoryName,
    /// The pull request's metadata, read at start.
    pull_request: PullRequest,
    /// The diff as GitHub gave it, read at start.
    diff: PullRequestDiff,
    /// The diff model inline comments are checked against, or why it could not be built.
    pub(crate) model: Result<DiffModel, String>,
    /// The login the bot posts as, whose comments carry `thread::` ids; `None`
    /// trusts no comment's `thread::` id (numeric ids still work).
    bot_login: Option<String>,
}

impl std::fmt::Debug for LiveSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("LiveSource")
            .field("repository", &self.repository)
            .field("pull_request", &self.pull_request.number)
            .finish_non_exhaustive()
    }
}

/// Live mode could not read or write GitHub or the store.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// GitHub refused or failed.
    #[error("{0}")]
    GitHub(#[from] GitHubError),
    /// The store failed.
    #[error("{0}")]
    Store(#[from] StoreError),
}

impl LiveSource {
    /// Reads the pull request and its diff; fails when GitHub does.
    /// `bot_login` is the account review-bot posts as on this repository.
    pub async fn connect(
        github: GitHubClient,
        store: Store,
        repository: RepositoryName,
        number: u64,
        bot_login: Option<String>,
    ) -> Result<Self, LiveError> {
        let pull_request = github.get_pull_request(&repository, number).await?;
        let diff = github.get_pull_request_diff(&repository, number).await?;
        let model = match &diff {
            PullRequestDiff::Unified(text) => DiffModel::parse(text),
            PullRequestDiff::PerFile(_) => {
                snapshot_without_comments(&repository, &pull_request, &diff).parsed_diff()
            }
        }
        .map_err(|error| error.to_string());
        Ok(Self {
            github,
            store,
            repository,
            pull_request,
            diff,
            model,
            bot_login,
        })
    }

    /// The repository and pull request, for logs.
    pub fn describe(&self) -> String {
        format!("{}#{}", self.repository, self.pull_request.number)
    }

    /// A fresh snapshot: comments from GitHub (conditional requests, so an
    /// unchanged list costs no rate limit), replied flags from the store.
    pub async fn snapshot(&self) -> Result<PullRequestSnapshot, LiveError> {
        let number = self.pull_request.number;
        let review_comments = self
            .github
            .list_review_comments(&self.repository, number)
            .await?;
        let issue_comments = self
            .github
            .list_issue_comments(&self.repository, number)
            .await?;
        let replied: HashSet<u64> = self
            .store
            .replied_comment_ids(number, &self.repository.to_string())
            .await?
            .into_iter()
            .map(|id| id.0)
            .collect();
        Ok(snapshot_from_github(GitHubPullRequest {
            repository: &self.repository,
            pull_request: &self.pull_request,
            diff: &self.diff,
            review_comments: &review_comments,
            issue_comments: &issue_comments,
            replied: &replied,
            bot_login: self.bot_login.as_deref(),
        }))
    }

    /// Posts a reply and records it in the store. A reply to an issue comment
    /// is a new conversation comment quoting and linking the original (GitHub
    /// threads replies only under review comments). Returns the reply's URL.
    pub async fn post_reply(
        &self,
        snapshot: &PullRequestSnapshot,
        comment_id: u64,
        target: ReplyTarget,
        message: &str,
    ) -> Result<String, LiveError> {
        let number = self.pull_request.number;
        let repository = self.repository.to_string();
        let url = match target {
            ReplyTarget::ReviewComment => {
                self.github
                    .reply_to_review_comment(&self.repository, number, comment_id, message, None)
                    .await?
                    .item
                    .html_url
            }
            ReplyTarget::IssueComment => {
                let body = match snapshot.find_comment(comment_id) {
                    Some(CommentLookup::Issue(original)) => {
                        quote_reply(&original.user, &original.body, message)
                    }
                    _ => message.to_owned(),
                };
                let posted = self
                    .github
                    .create_issue_comment(&self.repository, number, &body, None)
                    .await?
                    .item;
                // The reply is itself a conversation comment; it needs no answer.
                self.store
                    .mark_comment_replied(CommentId(posted.id), number, &repository)
                    .await?;
                posted.html_url
            }
        };
        self.store
            .mark_comment_replied(CommentId(comment_id), number, &repository)
            .await?;
        Ok(url)
    }
}

/// The body of a reply to an issue comment: the original quoted (shortened),
/// then the message.
pub fn quote_reply(user: &str, original: &str, message: &str) -> String {
    let mut quoted: String = original.chars().take(QUOTE_CHARS).collect();
    if original.chars().count() > QUOTE_CHARS {
        quoted.push('…');
    }
    let quoted: Vec<String> = quoted.lines().map(|line| format!("> {line}")).collect();
    format!("@{user} wrote:\n{}\n\n{message}", quoted.join("\n"))
}

fn snapshot_without_comments(
    repository: &RepositoryName,
    pull_request: &PullRequest,
    diff: &PullRequestDiff,
) -> PullRequestSnapshot {
    snapshot_from_github(GitHubPullRequest {
        repository,
        pull_request,
        diff,
        review_comments: &[],
        issue_comments: &[],
        replied: &HashSet::new(),
        bot_login: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_to_issue_comments_quote_the_original() {
        assert_eq!(
            quote_reply("dave", "Please add tests.\nThanks", "Added in 3f2a."),
            "@dave wrote:\n> Please add tests.\n> Thanks\n\nAdded in 3f2a."
        );
        let long = "x".repeat(QUOTE_CHARS + 10);
        assert!(quote_reply("dave", &long, "ok").contains("x…\n\nok"));
    }
}
