//! The simulator's records: what GitHub stores about users, repositories, pull requests,
//! reviews, comments, labels, checks and statuses.
//!
//! Tests read these as snapshots (clones) through the scenario handles; the HTTP handlers
//! render them into GitHub's JSON in `render`. Repository *content* is not here — it lives in
//! the real git repository on disk.

use chrono::{DateTime, Utc};
use serde::Serialize;

/// What kind of account a login is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum AccountKind {
    /// A person.
    User,
    /// A GitHub App's bot account (`slug[bot]`).
    Bot,
    /// An organisation (owns repositories, never authenticates).
    Organization,
}

impl AccountKind {
    /// GitHub's `type` field.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "User",
            Self::Bot => "Bot",
            Self::Organization => "Organization",
        }
    }
}

/// An account.
#[derive(Debug, Clone, Serialize)]
pub struct Account {
    /// GitHub's numeric id.
    pub id: u64,
    /// The login, as spelled when it was created.
    pub login: String,
    /// User, bot or organisation.
    pub kind: AccountKind,
}

/// A label defined in a repository.
#[derive(Debug, Clone, Serialize)]
pub struct Label {
    /// GitHub's numeric id.
    pub id: u64,
    /// The label's name (unique per repository, case-insensitively).
    pub name: String,
    /// Six hex digits, no `#`.
    pub color: String,
    /// Optional description.
    pub description: Option<String>,
}

/// The state GitHub gives a submitted (or pending) review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ReviewState {
    /// Created without `event`: not submitted, invisible to others.
    Pending,
    /// `event: COMMENT`.
    Commented,
    /// `event: REQUEST_CHANGES`.
    ChangesRequested,
    /// `event: APPROVE`.
    Approved,
}

impl ReviewState {
    /// GitHub's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "PENDING",
            Self::Commented => "COMMENTED",
            Self::ChangesRequested => "CHANGES_REQUESTED",
            Self::Approved => "APPROVED",
        }
    }
}

/// A pull request review.
#[derive(Debug, Clone, Serialize)]
pub struct Review {
    /// GitHub's numeric id.
    pub id: u64,
    /// Who posted it.
    pub user: String,
    /// The review body (empty string when none was given).
    pub body: String,
    /// Pending, commented, changes requested or approved.
    pub state: ReviewState,
    /// The commit the review is attached to.
    pub commit_id: String,
    /// When it was submitted; `None` while pending.
    pub submitted_at: Option<DateTime<Utc>>,
}

/// An inline review comment (a thread's first comment or a reply).
#[derive(Debug, Clone, Serialize)]
pub struct ReviewComment {
    /// GitHub's numeric id.
    pub id: u64,
    /// The review it belongs to (replies get their own single-comment review, like GitHub).
    pub review_id: u64,
    /// The comment this one replies to (always a top-level comment).
    pub in_reply_to: Option<u64>,
    /// Who posted it.
    pub user: String,
    /// The comment body.
    pub body: String,
    /// The file's path in the head commit.
    pub path: String,
    /// The commit the comment was made on.
    pub commit_id: String,
    /// GitHub's `diff_hunk`: the hunk header and lines up to the commented line.
    pub diff_hunk: String,
    /// The (last) commented line; `None` for a file-level comment.
    pub line: Option<u64>,
    /// The side of `line`.
    pub side: Option<String>,
    /// The first line of a multi-line comment.
    pub start_line: Option<u64>,
    /// The side of `start_line`.
    pub start_side: Option<String>,
    /// The legacy diff position of `line`.
    pub position: Option<u64>,
    /// `line` or `file`.
    pub subject_type: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last edited.
    pub updated_at: DateTime<Utc>,
}

/// A comment on the pull request's conversation (an issue comment).
#[derive(Debug, Clone, Serialize)]
pub struct IssueComment {
    /// GitHub's numeric id.
    pub id: u64,
    /// Who posted it.
    pub user: String,
    /// The comment body.
    pub body: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it was last edited.
    pub updated_at: DateTime<Utc>,
    /// Reactions, in the order they were added.
    pub reactions: Vec<Reaction>,
}

/// A reaction (`+1`, `eyes`…) on an issue comment; one per user and content.
#[derive(Debug, Clone, Serialize)]
pub struct Reaction {
    /// GitHub's numeric id.
    pub id: u64,
    /// Who reacted.
    pub user: String,
    /// `+1`, `-1`, `laugh`, `confused`, `heart`, `hooray`, `rocket` or `eyes`.
    pub content: String,
    /// When it was added.
    pub created_at: DateTime<Utc>,
}

/// A check run on a commit.
#[derive(Debug, Clone, Serialize)]
pub struct CheckRun {
    /// GitHub's numeric id.
    pub id: u64,
    /// The commit it reports on.
    pub head_sha: String,
    /// The check's name (`build`, `test`…).
    pub name: String,
    /// `queued`, `in_progress`, `completed`, `waiting`, `requested` or `pending`.
    pub status: String,
    /// Set when completed: `success`, `failure`, `neutral`, `cancelled`, `skipped`,
    /// `timed_out`, `action_required`.
    pub conclusion: Option<String>,
    /// A link to the run's details.
    pub details_url: Option<String>,
    /// The integrator's own reference for the run.
    pub external_id: Option<String>,
    /// `output.title`.
    pub output_title: Option<String>,
    /// `output.summary`.
    pub output_summary: Option<String>,
    /// `output.text`.
    pub output_text: Option<String>,
    /// The app that created it (through an installation token); `None` for runs a test added.
    pub app_id: Option<u64>,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it completed.
    pub completed_at: Option<DateTime<Utc>>,
}

/// A commit status (the older CI API).
#[derive(Debug, Clone, Serialize)]
pub struct CommitStatus {
    /// GitHub's numeric id.
    pub id: u64,
    /// The commit it reports on.
    pub sha: String,
    /// `error`, `failure`, `pending` or `success`.
    pub state: String,
    /// The status's name (`ci/jenkins`…).
    pub context: String,
    /// A short description.
    pub description: Option<String>,
    /// A link to the build.
    pub target_url: Option<String>,
    /// Who posted it.
    pub creator: String,
    /// When it was posted.
    pub created_at: DateTime<Utc>,
}

/// A pull request (which is also an issue, sharing its number and comments).
#[derive(Debug, Clone)]
pub(crate) struct PullRequest {
    pub id: u64,
    /// The id of the issue behind it (search results and issue comments use it).
    pub issue_id: u64,
    pub number: u64,
    pub title: String,
    pub body: Option<String>,
    pub author: String,
    pub head_ref: String,
    pub base_ref: String,
    pub open: bool,
    pub draft: bool,
    /// Label names in the order they were added.
    pub labels: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub closed_at: Option<DateTime<Utc>>,
    /// The head SHA last observed (a push that moves it bumps `updated_at`).
    pub last_head_sha: String,
    pub reviews: Vec<Review>,
    pub review_comments: Vec<ReviewComment>,
    pub issue_comments: Vec<IssueComment>,
    /// The review threads resolved (by their first comment's id), through
    /// GraphQL's `resolveReviewThread`.
    pub resolved_threads: std::collections::BTreeSet<u64>,
    /// For a pull request from a fork: the fork's full name (lower-cased key
    /// of another repository of the simulator), shown as `head.repo`. The
    /// head branch itself still lives in this repository's git.
    pub head_repository: Option<String>,
}

/// A repository's records (its content is the bare git repository at `git_dir`).
#[derive(Debug, Clone)]
pub(crate) struct Repository {
    pub id: u64,
    pub owner: String,
    pub name: String,
    pub default_branch: String,
    pub private: bool,
    pub created_at: DateTime<Utc>,
    pub pushed_at: DateTime<Utc>,
    pub labels: Vec<Label>,
    pub pulls: std::collections::BTreeMap<u64, PullRequest>,
    pub next_number: u64,
    pub check_runs: Vec<CheckRun>,
    pub statuses: Vec<CommitStatus>,
    /// Collaborators by lower-cased login, with their role (`admin`, `maintain`, `write`,
    /// `triage`, `read`); the owner is an admin without an entry.
    pub collaborators: std::collections::BTreeMap<String, String>,
}

impl Repository {
    /// `owner/name`.
    pub fn full_name(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }

    /// The repository label with this name (case-insensitive, like GitHub).
    pub fn label(&self, name: &str) -> Option<&Label> {
        self.labels
            .iter()
            .find(|label| label.name.eq_ignore_ascii_case(name))
    }
}

/// A GitHub App registered in the simulator.
#[derive(Debug, Clone)]
pub(crate) struct App {
    pub id: u64,
    pub slug: String,
    pub client_id: String,
    /// The RSA public key's modulus (big-endian) — JWTs are verified against it.
    pub public_modulus: Vec<u8>,
    /// The RSA public key's exponent (big-endian).
    pub public_exponent: Vec<u8>,
}

/// Which repositories an installation covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepositorySelection {
    /// Every repository of the account.
    All,
    /// Only these repositories (`owner/name`).
    Selected(Vec<String>),
}

/// An installation of an app on an account.
#[derive(Debug, Clone)]
pub(crate) struct Installation {
    pub id: u64,
    pub app_id: u64,
    pub account: String,
    pub selection: RepositorySelection,
    pub created_at: DateTime<Utc>,
    /// Set while the installation is suspended.
    pub suspended_at: Option<DateTime<Utc>>,
}
