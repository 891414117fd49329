//! GitHub's JSON shapes, private to this crate.
//!
//! Each struct reads only the fields we use (serde ignores the rest) and is
//! converted into a `model` type right away. Request bodies are here too, so a
//! reader can compare them with the operation's request schema in
//! `github-openapi/subset.json`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::model;

/// `simple-user` / `nullable-simple-user`.
#[derive(Debug, Deserialize)]
pub(crate) struct User {
    pub login: String,
}

/// `label` (and the label objects inside issues and pull requests).
#[derive(Debug, Deserialize)]
pub(crate) struct Label {
    pub name: String,
}

/// `pull-request` head/base.
#[derive(Debug, Deserialize)]
pub(crate) struct Branch {
    #[serde(rename = "ref")]
    pub reference: String,
    pub sha: String,
    pub repo: Option<BranchRepository>,
}

#[derive(Debug, Deserialize)]
pub(crate) struct BranchRepository {
    pub full_name: String,
    pub clone_url: Option<String>,
}

/// `pull-request`.
#[derive(Debug, Deserialize)]
pub(crate) struct PullRequest {
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub state: String,
    #[serde(default)]
    pub draft: Option<bool>,
    #[serde(default)]
    pub merged: Option<bool>,
    pub user: Option<User>,
    pub head: Branch,
    pub base: Branch,
    #[serde(default)]
    pub labels: Vec<Label>,
    pub html_url: String,
    pub updated_at: DateTime<Utc>,
}

impl From<PullRequest> for model::PullRequest {
    fn from(wire: PullRequest) -> Self {
        Self {
            number: wire.number,
            title: wire.title,
            body: wire.body.unwrap_or_default(),
            state: if wire.state == "open" {
                model::PullRequestState::Open
            } else {
                model::PullRequestState::Closed
            },
            draft: wire.draft.unwrap_or(false),
            merged: wire.merged.unwrap_or(false),
            author_login: wire.user.map(|user| user.login).unwrap_or_default(),
            head_sha: wire.head.sha,
            head_branch: wire.head.reference,
            head_repository: wire.head.repo.as_ref().map(|repo| repo.full_name.clone()),
            head_clone_url: wire.head.repo.and_then(|repo| repo.clone_url),
            base_repository: wire.base.repo.as_ref().map(|repo| repo.full_name.clone()),
            base_clone_url: wire.base.repo.and_then(|repo| repo.clone_url),
            base_branch: wire.base.reference,
            base_sha: wire.base.sha,
            labels: wire.labels.into_iter().map(|label| label.name).collect(),
            html_url: wire.html_url,
            updated_at: wire.updated_at,
        }
    }
}

/// `diff-entry`.
#[derive(Debug, Deserialize)]
pub(crate) struct DiffEntry {
    pub filename: String,
    pub status: String,
    pub additions: u64,
    pub deletions: u64,
    pub patch: Option<String>,
    pub previous_filename: Option<String>,
}

impl From<DiffEntry> for model::ChangedFile {
    fn from(wire: DiffEntry) -> Self {
        Self {
            change: model::ChangeKind::from_github_status(&wire.status).unwrap_or_else(|| {
                tracing::warn!(
                    path = wire.filename,
                    status = wire.status,
                    "GitHub reported a file status it does not document; reading it as modified"
                );
                model::ChangeKind::Modified
            }),
            path: wire.filename,
            previous_path: wire.previous_filename,
            additions: wire.additions,
            deletions: wire.deletions,
            patch: wire.patch,
        }
    }
}

/// `pull-request-review`.
#[derive(Debug, Deserialize)]
pub(crate) struct Review {
    pub id: u64,
    pub user: Option<User>,
    #[serde(default)]
    pub body: Option<String>,
    pub state: String,
    pub commit_id: Option<String>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub html_url: String,
}

impl From<Review> for model::Review {
    fn from(wire: Review) -> Self {
        Self {
            id: wire.id,
            author_login: wire.user.map(|user| user.login),
            body: wire.body.unwrap_or_default(),
            state: wire.state,
            commit_id: wire.commit_id,
            submitted_at: wire.submitted_at,
            html_url: wire.html_url,
        }
    }
}

fn side(value: Option<&str>) -> Option<model::Side> {
    match value {
        Some("LEFT") => Some(model::Side::Left),
        Some("RIGHT") => Some(model::Side::Right),
        _ => None,
    }
}

/// `pull-request-review-comment`.
#[derive(Debug, Deserialize)]
pub(crate) struct ReviewComment {
    pub id: u64,
    pub pull_request_review_id: Option<u64>,
    pub in_reply_to_id: Option<u64>,
    pub user: Option<User>,
    pub body: String,
    pub path: String,
    pub line: Option<u32>,
    pub start_line: Option<u32>,
    pub side: Option<String>,
    pub original_line: Option<u32>,
    pub commit_id: String,
    pub created_at: DateTime<Utc>,
    pub html_url: String,
}

impl From<ReviewComment> for model::ReviewComment {
    fn from(wire: ReviewComment) -> Self {
        Self {
            id: wire.id,
            review_id: wire.pull_request_review_id,
            in_reply_to: wire.in_reply_to_id,
            author_login: wire.user.map(|user| user.login),
            body: wire.body,
            path: wire.path,
            line: wire.line,
            start_line: wire.start_line,
            side: side(wire.side.as_deref()),
            original_line: wire.original_line,
            commit_id: wire.commit_id,
            created_at: wire.created_at,
            html_url: wire.html_url,
        }
    }
}

/// `issue-comment`.
#[derive(Debug, Deserialize)]
pub(crate) struct IssueComment {
    pub id: u64,
    pub user: Option<User>,
    #[serde(default)]
    pub body: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub html_url: String,
}

impl From<IssueComment> for model::IssueComment {
    fn from(wire: IssueComment) -> Self {
        Self {
            id: wire.id,
            author_login: wire.user.map(|user| user.login),
            body: wire.body.unwrap_or_default(),
            created_at: wire.created_at,
            updated_at: wire.updated_at,
            html_url: wire.html_url,
        }
    }
}

/// `check-run`.
#[derive(Debug, Deserialize)]
pub(crate) struct CheckRun {
    pub name: String,
    pub status: String,
    pub conclusion: Option<String>,
    pub details_url: Option<String>,
    pub html_url: Option<String>,
}

impl From<CheckRun> for model::CheckRun {
    fn from(wire: CheckRun) -> Self {
        Self {
            name: wire.name,
            status: wire.status,
            conclusion: wire.conclusion,
            details_url: wire.details_url,
            html_url: wire.html_url,
        }
    }
}

/// The check-runs list wrapper.
#[derive(Debug, Deserialize)]
pub(crate) struct CheckRunList {
    pub check_runs: Vec<CheckRun>,
}

/// `status` / `simple-commit-status`.
#[derive(Debug, Deserialize)]
pub(crate) struct Status {
    pub context: String,
    pub state: String,
    pub target_url: Option<String>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<Status> for model::CommitStatus {
    fn from(wire: Status) -> Self {
        Self {
            context: wire.context,
            state: wire.state,
            target_url: wire.target_url,
            description: wire.description,
            created_at: wire.created_at,
        }
    }
}

/// `combined-commit-status`.
#[derive(Debug, Deserialize)]
pub(crate) struct CombinedStatus {
    pub state: String,
    pub total_count: u64,
    pub statuses: Vec<Status>,
}

/// `commit` (only its dates).
#[derive(Debug, Deserialize)]
pub(crate) struct Commit {
    pub sha: String,
    pub commit: CommitDetail,
}

#[derive(Debug, Deserialize)]
pub(crate) struct CommitDetail {
    pub author: Option<GitUser>,
    pub committer: Option<GitUser>,
}

/// `commit` as `pulls/list-commits` lists it: the SHA, the message and the dates.
#[derive(Debug, Deserialize)]
pub(crate) struct ListedCommit {
    pub sha: String,
    pub commit: ListedCommitDetail,
}

#[derive(Debug, Deserialize)]
pub(crate) struct ListedCommitDetail {
    #[serde(default)]
    pub message: String,
    pub committer: Option<GitUser>,
}

impl From<ListedCommit> for model::PullRequestCommit {
    fn from(commit: ListedCommit) -> Self {
        Self {
            sha: commit.sha,
            message: commit.commit.message,
            committed_at: commit.commit.committer.and_then(|user| user.date),
        }
    }
}

/// `nullable-git-user`.
#[derive(Debug, Deserialize)]
pub(crate) struct GitUser {
    pub date: Option<DateTime<Utc>>,
}

/// `issue-search-result-item`.
#[derive(Debug, Deserialize)]
pub(crate) struct SearchItem {
    pub number: u64,
    pub title: String,
    pub repository_url: String,
    #[serde(default)]
    pub labels: Vec<SearchLabel>,
    pub updated_at: DateTime<Utc>,
}

/// Labels inside search results may lack a name (`name` is optional there).
#[derive(Debug, Deserialize)]
pub(crate) struct SearchLabel {
    pub name: Option<String>,
}

/// The search answer wrapper.
#[derive(Debug, Deserialize)]
pub(crate) struct SearchPage {
    pub total_count: u64,
    pub incomplete_results: bool,
    pub items: Vec<SearchItem>,
}

/// `rate-limit-overview`.
#[derive(Debug, Deserialize)]
pub(crate) struct RateLimitOverview {
    pub resources: std::collections::BTreeMap<String, RateLimit>,
}

/// `rate-limit`.
#[derive(Debug, Deserialize)]
pub(crate) struct RateLimit {
    pub limit: u64,
    pub remaining: u64,
    pub reset: i64,
    pub used: u64,
}

/// `installation`.
#[derive(Debug, Deserialize)]
pub(crate) struct Installation {
    pub id: u64,
    pub account: Option<InstallationAccount>,
    pub repository_selection: String,
    #[serde(default)]
    pub app_slug: Option<String>,
}

/// `GET /user` → 200: the authenticated user (only the login is read).
#[derive(Deserialize)]
pub(crate) struct AuthenticatedUser {
    pub login: String,
}

/// `POST /app/installations/{installation_id}/access_tokens` → 201. The
/// token never leaves `client` (it goes straight into a `SecretString`).
#[derive(Deserialize)]
pub(crate) struct InstallationAccessToken {
    pub token: String,
    pub expires_at: Option<DateTime<Utc>>,
}

/// The account of an installation (`simple-user` or `enterprise`).
#[derive(Debug, Deserialize)]
pub(crate) struct InstallationAccount {
    pub login: Option<String>,
    pub slug: Option<String>,
}

impl From<Installation> for model::Installation {
    fn from(wire: Installation) -> Self {
        Self {
            id: wire.id,
            account_login: wire
                .account
                .and_then(|account| account.login.or(account.slug)),
            repository_selection: wire.repository_selection,
            app_slug: wire.app_slug,
        }
    }
}

/// `GET /installation/repositories`.
#[derive(Debug, Deserialize)]
pub(crate) struct InstallationRepositories {
    pub repositories: Vec<RepositoryFullName>,
}

/// Any repository object, by its full name.
#[derive(Debug, Deserialize)]
pub(crate) struct RepositoryFullName {
    pub full_name: String,
}

/// GitHub's error body (`basic-error`, `validation-error`).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ErrorBody {
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub errors: Option<Vec<serde_json::Value>>,
}

impl ErrorBody {
    /// `errors[]` flattened to text: strings as they are, objects by their
    /// `message`, or `resource.field code`.
    pub fn error_texts(&self) -> Vec<String> {
        self.errors
            .iter()
            .flatten()
            .map(|value| match value {
                serde_json::Value::String(text) => text.clone(),
                serde_json::Value::Object(object) => {
                    if let Some(message) = object.get("message").and_then(|m| m.as_str()) {
                        message.to_owned()
                    } else {
                        let part = |key: &str| {
                            object
                                .get(key)
                                .and_then(|v| v.as_str())
                                .unwrap_or_default()
                                .to_owned()
                        };
                        format!("{}.{} {}", part("resource"), part("field"), part("code"))
                    }
                }
                other => other.to_string(),
            })
            .collect()
    }
}

// ---- request bodies ----------------------------------------------------------

/// `pulls/create-review` request body.
#[derive(Debug, Serialize)]
pub(crate) struct CreateReview<'a> {
    pub commit_id: &'a str,
    pub body: &'a str,
    pub event: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comments: Vec<CreateReviewComment<'a>>,
}

/// One `comments[]` item of `pulls/create-review`.
#[derive(Debug, Serialize)]
pub(crate) struct CreateReviewComment<'a> {
    pub path: &'a str,
    pub body: &'a str,
    pub line: u32,
    pub side: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_side: Option<&'static str>,
}

impl<'a> From<&'a model::PayloadComment> for CreateReviewComment<'a> {
    fn from(comment: &'a model::PayloadComment) -> Self {
        Self {
            path: &comment.path,
            body: &comment.body,
            line: comment.line,
            side: comment.side.as_str(),
            start_line: comment.start_line,
            start_side: comment
                .start_line
                .map(|_| comment.start_side.unwrap_or(comment.side).as_str()),
        }
    }
}

/// Body of `pulls/create-reply-for-review-comment`, `issues/create-comment`
/// and `issues/update-comment`.
#[derive(Debug, Serialize)]
pub(crate) struct TextBody<'a> {
    pub body: &'a str,
}

/// Body of `issues/add-labels` and `issues/set-labels` (the object form
/// GitHub recommends).
#[derive(Debug, Serialize)]
pub(crate) struct Labels<'a> {
    pub labels: &'a [String],
}
