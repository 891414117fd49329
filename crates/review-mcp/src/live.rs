//! Live mode: the server reads and writes GitHub directly, for a developer's
//! own Claude Code session (`review-bot mcp --live --repo OWNER/REPO --pr N`).
//!
//! The developer's token is used; replies are posted at once and recorded in
//! the local store, so `github_get_pr_comments` stops listing them (seed 002).
//! Each reply carries a `thread::` id, so a retry finds it on GitHub instead
//! of posting it twice; a reply GitHub accepted is reported as posted even
//! when the store then fails (with a warning).
//! The comment tools still append to `COMMENTS_FILE` (checked against the
//! live diff): a stream of single-comment reviews would notify the author once
//! per comment, which is exactly what review-bot avoids.

use std::collections::HashSet;

use review_core::agent_requests::ReplyTarget;
use review_core::diff::PullRequestDiff as DiffModel;
use review_core::footer::{self, Footer, ThreadId};
use review_core::payload::with_footer;
use review_core::snapshot::{CommentLookup, PullRequestSnapshot};
use review_github::{GitHubClient, GitHubError, PullRequest, PullRequestDiff, RepositoryName};
use review_store::{CommentId, Store, StoreError};
use uuid::Uuid;

use crate::github_snapshot::{GitHubPullRequest, snapshot_from_github};

/// The live replies' `thread::` ids: one per pull request, comment and
/// conversation state answered.
const LIVE_REPLY_NAMESPACE: Uuid = Uuid::from_u128(0x3c91_7e0a_d25b_4a86_9f14_b07e_61c2_d8a3);

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
    /// The login this session posts as (the token's user, `GET /user`), whose
    /// replies carrying a `thread::` id are found again instead of posted
    /// twice; `None` when GitHub would not say (then every post is new).
    poster_login: Option<String>,
}

/// What [`LiveSource::post_reply`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedReply {
    /// The reply's page.
    pub url: String,
    /// The reply was already on GitHub (an earlier call posted it; found by
    /// its `thread::` id): nothing was posted now.
    pub already_there: bool,
    /// The reply is on GitHub but the store could not record it: why. The
    /// reply is not lost and must not be posted again; the comment may be
    /// listed as unanswered until the store works again.
    pub store_warning: Option<String>,
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
        let poster_login = match github.authenticated_user_login().await {
            Ok(login) => Some(login),
            Err(error) => {
                tracing::warn!(
                    %error,
                    "could not read whose token this is (GET /user); a reply retried after an \
                     error may be posted twice"
                );
                None
            }
        };
        Ok(Self {
            github,
            store,
            repository,
            pull_request,
            diff,
            model,
            bot_login,
            poster_login,
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
            // Without the setting, the token's own user (GET /user) is who
            // posts the replies: its comments are the bot's.
            bot_login: self.bot_login.as_deref().or(self.poster_login.as_deref()),
        }))
    }

    /// Posts a reply and records it in the store. A reply to an issue comment
    /// is a new conversation comment quoting and linking the original (GitHub
    /// threads replies only under review comments).
    ///
    /// Every reply carries a `thread::` id made from the conversation it
    /// answers (the comment, and the newest comment in its thread written by
    /// someone else), so a retry — after an error, in a new session — finds
    /// the reply already posted by this token's user and posts nothing. Once
    /// GitHub has the reply, it is reported as posted: a store failure after
    /// that is a warning ([`PostedReply::store_warning`]), never an error that
    /// invites posting again.
    pub async fn post_reply(
        &self,
        snapshot: &PullRequestSnapshot,
        comment_id: u64,
        target: ReplyTarget,
        message: &str,
    ) -> Result<PostedReply, LiveError> {
        let number = self.pull_request.number;
        let repository = self.repository.to_string();
        let (found, url, own_comment) = self
            .post_once(snapshot, comment_id, target, message)
            .await?;
        // On GitHub now: whatever the store does, this is a posted reply.
        let mut recorded = self
            .store
            .mark_comment_replied(CommentId(comment_id), number, &repository)
            .await;
        if recorded.is_ok()
            && let Some(own_comment) = own_comment
        {
            // The reply is itself a conversation comment; it needs no answer.
            recorded = self
                .store
                .mark_comment_replied(CommentId(own_comment), number, &repository)
                .await;
        }
        let store_warning = recorded.err().map(|error| {
            tracing::warn!(%error, comment_id, "the reply was posted but the store could not record it");
            error.to_string()
        });
        Ok(PostedReply {
            url,
            already_there: found,
            store_warning,
        })
    }

    /// Posts the reply unless this token's user already did (found by its
    /// `thread::` id): whether it was there, its page, and — for a reply to
    /// an issue comment — the new conversation comment's id.
    async fn post_once(
        &self,
        snapshot: &PullRequestSnapshot,
        comment_id: u64,
        target: ReplyTarget,
        message: &str,
    ) -> Result<(bool, String, Option<u64>), LiveError> {
        let number = self.pull_request.number;
        let thread = self.reply_thread_id(snapshot, comment_id, target);
        let footer = Footer {
            review: None,
            thread: Some(thread),
        }
        .render();
        let message = footer::defuse(message.trim());
        Ok(match target {
            ReplyTarget::ReviewComment => {
                let existing = match &self.poster_login {
                    Some(poster) => self
                        .github
                        .list_review_comments(&self.repository, number)
                        .await?
                        .into_iter()
                        .find(|comment| {
                            comment.in_reply_to == Some(comment_id)
                                && is_own(
                                    poster,
                                    comment.author_login.as_deref(),
                                    &comment.body,
                                    thread,
                                )
                        })
                        .map(|comment| comment.html_url),
                    None => None,
                };
                if let Some(url) = existing {
                    (true, url, None)
                } else {
                    let body = with_footer(&message, &footer);
                    let url = self
                        .github
                        .reply_to_review_comment(
                            &self.repository,
                            number,
                            comment_id,
                            &body,
                            Some(thread),
                        )
                        .await?
                        .item
                        .html_url;
                    (false, url, None)
                }
            }
            ReplyTarget::IssueComment => {
                let existing = match &self.poster_login {
                    Some(poster) => self
                        .github
                        .list_issue_comments(&self.repository, number)
                        .await?
                        .into_iter()
                        .find(|comment| {
                            is_own(
                                poster,
                                comment.author_login.as_deref(),
                                &comment.body,
                                thread,
                            )
                        }),
                    None => None,
                };
                if let Some(comment) = existing {
                    (true, comment.html_url, Some(comment.id))
                } else {
                    let content = match snapshot.find_comment(comment_id) {
                        Some(CommentLookup::Issue(original)) => {
                            quote_reply(&original.user, &footer::defuse(&original.body), &message)
                        }
                        _ => message.clone().into_owned(),
                    };
                    let body = with_footer(&content, &footer);
                    let posted = self
                        .github
                        .create_issue_comment(&self.repository, number, &body, Some(thread))
                        .await?
                        .item;
                    (false, posted.html_url, Some(posted.id))
                }
            }
        })
    }

    /// The `thread::` id of a reply to `comment_id`: the pull request, the
    /// comment, and — in a review thread — the newest comment written by
    /// someone other than this token's user and the bot. A retry of the
    /// same answer gets the same id; a reviewer's follow-up is a new
    /// conversation state and gets a new one (so it can be answered).
    fn reply_thread_id(
        &self,
        snapshot: &PullRequestSnapshot,
        comment_id: u64,
        target: ReplyTarget,
    ) -> ThreadId {
        let answered = match (target, snapshot.find_comment(comment_id)) {
            (ReplyTarget::ReviewComment, Some(CommentLookup::ThreadRoot(thread))) => thread
                .comments
                .iter()
                .filter(|comment| {
                    let ours = |login: &Option<String>| {
                        login
                            .as_deref()
                            .is_some_and(|login| comment.user.eq_ignore_ascii_case(login))
                    };
                    !ours(&self.poster_login) && !ours(&self.bot_login)
                })
                .map(|comment| comment.id)
                .max()
                .unwrap_or(comment_id),
            _ => comment_id,
        };
        ThreadId(Uuid::new_v5(
            &LIVE_REPLY_NAMESPACE,
            format!(
                "{}#{}:{comment_id}:{answered}",
                self.repository.to_string().to_ascii_lowercase(),
                self.pull_request.number
            )
            .as_bytes(),
        ))
    }
}

/// Whether a comment is this session's reply with `thread`: written by the
/// token's user, with `thread` in its own footer (a quoted copy does not
/// count).
fn is_own(poster: &str, author: Option<&str>, body: &str, thread: ThreadId) -> bool {
    author.is_some_and(|author| author.eq_ignore_ascii_case(poster))
        && footer::own_footer(body).thread == Some(thread)
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
