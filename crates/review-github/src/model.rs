//! The adapter's public vocabulary: plain structs in domain terms.
//!
//! These are what pipelines see. GitHub's JSON shapes live in the private
//! `wire` module and are converted here at the crate boundary, so no other
//! crate depends on a GitHub field name.

use std::fmt;

use chrono::{DateTime, Utc};

pub use review_core::anchor::Side;
pub use review_core::diff::ChangeKind;
pub use review_core::footer::{ReviewId, ThreadId};
pub use review_core::payload::{PayloadComment, ReviewEvent, ReviewPayload};

use crate::error::GitHubError;

/// A repository, `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RepositoryName {
    /// The user or organisation that owns it.
    pub owner: String,
    /// The repository's name.
    pub name: String,
}

impl RepositoryName {
    /// A repository name from its parts, checked so it cannot smuggle a path.
    pub fn new(owner: impl Into<String>, name: impl Into<String>) -> Result<Self, GitHubError> {
        let owner = owner.into();
        let name = name.into();
        for part in [&owner, &name] {
            let valid = !part.is_empty()
                && part != "."
                && part != ".."
                && part.chars().all(|character| {
                    character.is_ascii_alphanumeric() || "-_.".contains(character)
                });
            if !valid {
                return Err(GitHubError::InvalidInput(format!(
                    "{owner}/{name} is not a GitHub repository name (expected owner/name with \
                     letters, digits, '-', '_' or '.')"
                )));
            }
        }
        Ok(Self { owner, name })
    }

    /// Parses `owner/name`.
    pub fn parse(full_name: &str) -> Result<Self, GitHubError> {
        match full_name.split_once('/') {
            Some((owner, name)) => Self::new(owner, name),
            None => Err(GitHubError::InvalidInput(format!(
                "{full_name:?} is not a GitHub repository name (expected owner/name)"
            ))),
        }
    }
}

impl fmt::Display for RepositoryName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}/{}", self.owner, self.name)
    }
}

/// Whether a pull request is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PullRequestState {
    /// Open (drafts included).
    Open,
    /// Closed or merged.
    Closed,
}

/// A pull request as the pipelines need it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequest {
    /// Its number in the repository.
    pub number: u64,
    /// Title.
    pub title: String,
    /// Description (empty when none).
    pub body: String,
    /// Open or closed.
    pub state: PullRequestState,
    /// True for a draft.
    pub draft: bool,
    /// True once merged.
    pub merged: bool,
    /// Login of the author.
    pub author_login: String,
    /// SHA of the head commit.
    pub head_sha: String,
    /// Head branch name.
    pub head_branch: String,
    /// `owner/name` of the head repository (differs from the base for forks;
    /// `None` when the fork was deleted).
    pub head_repository: Option<String>,
    /// Clone URL of the head repository, when it still exists.
    pub head_clone_url: Option<String>,
    /// `owner/name` of the base repository (the one the pull request is in).
    pub base_repository: Option<String>,
    /// Clone URL of the base repository; `refs/pull/N/head` is fetched from
    /// it, which works for pull requests from forks too.
    pub base_clone_url: Option<String>,
    /// Base branch name.
    pub base_branch: String,
    /// SHA the base branch pointed at when GitHub last computed the PR.
    pub base_sha: String,
    /// Label names.
    pub labels: Vec<String>,
    /// Web page.
    pub html_url: String,
    /// Last update.
    pub updated_at: DateTime<Utc>,
}

/// One file of a pull request's diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Path in the head.
    pub path: String,
    /// Path in the base, for renames.
    pub previous_path: Option<String>,
    /// Kind of change.
    pub change: ChangeKind,
    /// Lines added.
    pub additions: u64,
    /// Lines removed.
    pub deletions: u64,
    /// The unified-diff hunks (no `---`/`+++` header); `None` for binary files
    /// and files too large for GitHub to show.
    pub patch: Option<String>,
}

impl ChangedFile {
    /// The entry as `review-core`'s diff model takes it
    /// (`review_core::diff::PullRequestDiff::from_changed_files`).
    pub fn as_core(&self) -> review_core::diff::ChangedFile<'_> {
        review_core::diff::ChangedFile {
            path: &self.path,
            previous_path: self.previous_path.as_deref(),
            change: self.change,
            patch: self.patch.as_deref(),
        }
    }
}

/// The files of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChangedFiles {
    /// The files, in GitHub's order.
    pub files: Vec<ChangedFile>,
    /// True when the list stopped at GitHub's 3,000-file cap (or ours), so
    /// some files are missing.
    pub truncated: bool,
}

/// A pull request's diff: the whole unified diff when GitHub can produce it,
/// the per-file patches otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullRequestDiff {
    /// The `application/vnd.github.diff` text.
    Unified(String),
    /// GitHub refused the whole diff (406 `too_large`: past 300 files or
    /// 20,000 lines); these are the files with their per-file patches.
    PerFile(ChangedFiles),
}

/// A submitted (or pending) review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    /// GitHub's id.
    pub id: u64,
    /// Login of the reviewer (`None` for a deleted account).
    pub author_login: Option<String>,
    /// Review body.
    pub body: String,
    /// `COMMENTED`, `APPROVED`, `CHANGES_REQUESTED`, `DISMISSED` or `PENDING`.
    pub state: String,
    /// The commit it was made on.
    pub commit_id: Option<String>,
    /// When it was submitted (`None` while pending).
    pub submitted_at: Option<DateTime<Utc>>,
    /// Web page.
    pub html_url: String,
}

/// An inline review comment, or a reply in its thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewComment {
    /// GitHub's id.
    pub id: u64,
    /// The review it belongs to.
    pub review_id: Option<u64>,
    /// The top-level comment this replies to; `None` for a thread's first comment.
    pub in_reply_to: Option<u64>,
    /// Login of the author.
    pub author_login: Option<String>,
    /// Text.
    pub body: String,
    /// File path.
    pub path: String,
    /// Line (last line of a range); `None` when the comment is outdated.
    pub line: Option<u32>,
    /// First line of a multi-line comment.
    pub start_line: Option<u32>,
    /// Side of `line`.
    pub side: Option<Side>,
    /// Line in the commit it was originally made on.
    pub original_line: Option<u32>,
    /// Commit it currently applies to.
    pub commit_id: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Web page.
    pub html_url: String,
}

/// A comment on the pull request's conversation (an issue comment).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IssueComment {
    /// GitHub's id.
    pub id: u64,
    /// Login of the author.
    pub author_login: Option<String>,
    /// Text.
    pub body: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last edit.
    pub updated_at: DateTime<Utc>,
    /// Web page.
    pub html_url: String,
}

/// What posting a review did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedReview {
    /// The review on GitHub.
    pub review: Review,
    /// True when the review already existed (found by its `review::` id) and
    /// nothing was posted.
    pub already_existed: bool,
    /// Comments posted inline.
    pub inline_count: usize,
    /// Comments GitHub refused to anchor (or that were longer than GitHub
    /// takes inline), listed in the body under "Outside the diff" instead.
    pub moved_to_body: Vec<PayloadComment>,
    /// When the body was longer than GitHub takes: the conversation comments
    /// carrying its second and later parts, in order (empty otherwise).
    pub continuation_comments: Vec<IssueComment>,
    /// How many of `continuation_comments` this call posted (the others were
    /// already on GitHub: a retry after a crash posts only what is missing).
    pub continuations_posted: usize,
    /// Continuation parts the existing review announces that are not on
    /// GitHub and could not be rebuilt (its body matches no plan this call
    /// can make, e.g. the diff changed since); 0 when nothing is missing.
    pub continuations_missing: usize,
}

/// What creating a reply or comment did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Posted<T> {
    /// The object on GitHub.
    pub item: T,
    /// True when it already existed (found by its `thread::` id or exact
    /// body) and nothing was posted.
    pub already_existed: bool,
}

/// State of a check run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    /// Check name.
    pub name: String,
    /// `queued`, `in_progress`, `completed`, `waiting`, `requested` or `pending`.
    pub status: String,
    /// `success`, `failure`, `neutral`, `cancelled`, `skipped`, `timed_out`,
    /// `action_required`, `stale` once completed.
    pub conclusion: Option<String>,
    /// Link to the details.
    pub details_url: Option<String>,
    /// Link to the run on GitHub.
    pub html_url: Option<String>,
}

/// A commit status (the older CI API).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitStatus {
    /// Context (the check's name).
    pub context: String,
    /// `error`, `failure`, `pending` or `success`.
    pub state: String,
    /// Link to the details.
    pub target_url: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Creation time (the latest per context wins).
    pub created_at: DateTime<Utc>,
}

/// Check runs and statuses of one commit, fetched together.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CiReport {
    /// Every check run.
    pub check_runs: Vec<CheckRun>,
    /// Every status, newest first as GitHub lists them.
    pub statuses: Vec<CommitStatus>,
}

/// GitHub's combined status of a commit (statuses only, never check runs;
/// `pending` when there are no statuses at all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CombinedStatus {
    /// `failure`, `pending` or `success`.
    pub state: String,
    /// Number of statuses.
    pub total_count: u64,
    /// The latest status per context.
    pub statuses: Vec<CommitStatus>,
}

/// A commit's identity and dates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitInfo {
    /// Full SHA.
    pub sha: String,
    /// Committer date (when it was made into this commit, e.g. after a rebase).
    pub committed_at: Option<DateTime<Utc>>,
    /// Author date.
    pub authored_at: Option<DateTime<Utc>>,
}

/// One commit of a pull request, as its commits list gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PullRequestCommit {
    /// Full SHA.
    pub sha: String,
    /// The whole commit message (trailers included).
    pub message: String,
    /// Committer date.
    pub committed_at: Option<DateTime<Utc>>,
}

/// Where a poll searches.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum SearchScope {
    /// Every repository of an organisation or user (`org:NAME`).
    Organization(String),
    /// One repository (`repo:OWNER/NAME`).
    Repository(RepositoryName),
}

/// One pull request found by a poll.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchHit {
    /// Its repository.
    pub repository: RepositoryName,
    /// Its number.
    pub number: u64,
    /// Title.
    pub title: String,
    /// Label names.
    pub labels: Vec<String>,
    /// Last update.
    pub updated_at: DateTime<Utc>,
}

/// A poll's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchResults {
    /// The pull requests found.
    pub hits: Vec<SearchHit>,
    /// GitHub's count of all matches (may exceed `hits` past 1,000).
    pub total_count: u64,
    /// GitHub's search timed out and returned partial results.
    pub incomplete: bool,
    /// Every page was answered 304 Not Modified: nothing changed since the
    /// last identical poll, and it cost no rate-limit budget.
    pub unchanged: bool,
}

/// A rate-limit budget as GitHub last reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitSnapshot {
    /// Whose budget: `token` (the personal access token), `app` (the App's
    /// JWT) or `installation:{id}`.
    pub credential: String,
    /// `core`, `search`, `graphql`, …
    pub resource: String,
    /// Requests allowed per window.
    pub limit: u64,
    /// Requests left in this window.
    pub remaining: u64,
    /// Requests used in this window.
    pub used: u64,
    /// When the window resets.
    pub reset_at: DateTime<Utc>,
}

/// A GitHub App installation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installation {
    /// Installation id.
    pub id: u64,
    /// Login of the account (organisation or user) it is installed on.
    pub account_login: Option<String>,
    /// `all` or `selected` repositories.
    pub repository_selection: String,
    /// The App's slug; the App posts as `{slug}[bot]`.
    pub app_slug: Option<String>,
}

/// A repository as `doctor` needs it (`repos/get`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepositoryInfo {
    /// Where to fetch it from over HTTPS.
    pub clone_url: Option<String>,
    /// Its default branch (`main`).
    pub default_branch: String,
}
