//! The one error type of the GitHub adapter.
//!
//! Every message is written for the operator reading a log line: it says what
//! GitHub answered and what to check or change next. No variant ever holds a
//! token, a JWT or a private key, so `Debug` and `Display` are safe to log.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Which kind of credential a request was sent with, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CredentialKind {
    /// A personal access token (classic or fine-grained).
    PersonalAccessToken,
    /// A GitHub App's JSON Web Token (used for the `/app/...` endpoints and to
    /// mint installation tokens).
    AppJsonWebToken,
    /// A GitHub App installation access token.
    AppInstallationToken,
}

impl std::fmt::Display for CredentialKind {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(match self {
            Self::PersonalAccessToken => "personal access token",
            Self::AppJsonWebToken => "GitHub App JWT",
            Self::AppInstallationToken => "GitHub App installation token",
        })
    }
}

/// What to check after a 401, per credential kind.
fn unauthorized_hint(kind: CredentialKind) -> &'static str {
    match kind {
        CredentialKind::PersonalAccessToken => {
            "check REVIEW_BOT_GITHUB_TOKEN (expired, revoked, or copied with extra characters?) \
             and that REVIEW_BOT_GITHUB_API_URL points at the GitHub that issued it"
        }
        CredentialKind::AppJsonWebToken => {
            "check REVIEW_BOT_GITHUB_APP_ID and the App's private key \
             (REVIEW_BOT_GITHUB_APP_PRIVATE_KEY_FILE), and that this machine's clock is right"
        }
        CredentialKind::AppInstallationToken => {
            "a freshly minted installation token was refused too: check the App's private key \
             and installation (REVIEW_BOT_GITHUB_APP_INSTALLATION_ID), and that the App is \
             still installed on the repository"
        }
    }
}

/// Everything that can go wrong talking to GitHub.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GitHubError {
    /// The client settings are unusable (bad URL, malformed key, …).
    #[error("invalid GitHub client settings: {0}")]
    Settings(String),

    /// GitHub answered 401: the credential is wrong, expired or revoked.
    #[error("GitHub rejected the {credential} (401 {message}) on {method} {route}: {hint}", hint = unauthorized_hint(*credential))]
    Unauthorized {
        /// Which credential was refused.
        credential: CredentialKind,
        /// HTTP method of the refused request.
        method: String,
        /// Route template of the refused request.
        route: &'static str,
        /// GitHub's `message`.
        message: String,
    },

    /// GitHub answered 403 without any rate-limit signal: a missing permission.
    #[error(
        "GitHub refused {method} {route} (403 {message}): the credential lacks a permission this \
         call needs; check the token's scopes or the GitHub App's permissions \
         (pull requests, issues, checks, statuses, contents)"
    )]
    Forbidden {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// GitHub's `message`.
        message: String,
    },

    /// GitHub answered 404.
    #[error(
        "GitHub has no {path} (404 on {method} {route}): check the repository, pull request or \
         ref exists and that the credential can see it (a private repository answers 404, not \
         403, to a token without access)"
    )]
    NotFound {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// The concrete path that was not found.
        path: String,
    },

    /// GitHub answered 422: the request was understood but refused.
    #[error("GitHub refused {method} {route} as invalid (422 {message}{details})", details = format_details(errors))]
    Unprocessable {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// GitHub's `message`.
        message: String,
        /// GitHub's `errors[]`, each flattened to text.
        errors: Vec<String>,
    },

    /// The primary rate limit is spent and resets later than we are willing to wait.
    #[error(
        "GitHub rate limit exhausted for this {subject}; resets at {reset_at} ({resource} \
         budget); {hint}",
        subject = budget_subject(*credential),
        hint = exhausted_hint(*credential)
    )]
    RateLimitExhausted {
        /// Whose budget is spent.
        credential: CredentialKind,
        /// The rate-limit resource (`core`, `search`, …).
        resource: String,
        /// When GitHub refills the budget.
        reset_at: DateTime<Utc>,
    },

    /// A secondary rate limit kept answering after every retry we allow.
    #[error(
        "GitHub's secondary rate limit refused {method} {route} {attempts} times (last wait asked: \
         {retry_after:?}); reduce concurrency or raise the write spacing \
         (REVIEW_BOT_GITHUB_WRITE_SPACING_MS)"
    )]
    SecondaryRateLimit {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// How many attempts were made.
        attempts: u32,
        /// The last wait GitHub asked for, if it said.
        retry_after: Option<Duration>,
    },

    /// GitHub kept failing with 5xx.
    #[error(
        "GitHub answered {status} to {method} {route} on all {attempts} attempts: {message}; \
         GitHub may be degraded, the job will be retried on the next poll"
    )]
    ServerError {
        /// The last HTTP status.
        status: u16,
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// How many attempts were made.
        attempts: u32,
        /// GitHub's `message`, or the body's start.
        message: String,
    },

    /// No answer arrived in time, on every attempt.
    #[error(
        "{method} {route} got no answer from GitHub within {timeout:?} on all {attempts} attempts; \
         check network access to the GitHub API URL"
    )]
    Timeout {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// How many attempts were made.
        attempts: u32,
        /// The per-request timeout.
        timeout: Duration,
    },

    /// The connection failed (DNS, TLS, reset), on every attempt.
    #[error(
        "could not reach GitHub for {method} {route} after {attempts} attempts: {detail}; check \
         REVIEW_BOT_GITHUB_API_URL and network access"
    )]
    Transport {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// How many attempts were made.
        attempts: u32,
        /// What the HTTP stack said.
        detail: String,
    },

    /// A write may have reached GitHub, and checking whether it did failed too.
    #[error(
        "{what} may or may not have been created on GitHub (the answer was lost: {cause}), and \
         checking failed: {check}; nothing was re-posted, the next run will check again"
    )]
    WriteUnconfirmed {
        /// What was being written ("review", "reply to comment 12", …).
        what: String,
        /// Why the original answer was lost.
        cause: String,
        /// Why the check failed.
        check: String,
    },

    /// GitHub answered something we could not read.
    #[error(
        "GitHub's answer to {method} {route} could not be read ({detail}); is the API URL a GitHub REST API?"
    )]
    UnexpectedResponse {
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// What was wrong with it.
        detail: String,
    },

    /// Any other status we have no better name for.
    #[error("GitHub answered {status} to {method} {route}: {message}")]
    UnexpectedStatus {
        /// The HTTP status.
        status: u16,
        /// HTTP method.
        method: String,
        /// Route template.
        route: &'static str,
        /// GitHub's `message`.
        message: String,
    },

    /// The GitHub App has no usable installation where we need it (not installed,
    /// uninstalled, or suspended).
    #[error(
        "the GitHub App has no usable installation on {target} (GitHub said: {message}): install \
         the App there, or unsuspend it in the account's settings (Settings → GitHub Apps); \
         with REVIEW_BOT_GITHUB_APP_INSTALLATION_ID set, check it names the current installation"
    )]
    NoInstallation {
        /// The repository, account or installation.
        target: String,
        /// GitHub's `message` (`Not Found`, `This installation has been suspended`, …).
        message: String,
    },

    /// A list was longer than the pages we read, so an item missing from what we read
    /// may still exist: "unknown", never "absent".
    #[error(
        "{route} lists more than {pages} pages, the most the client reads, so whether {what} is \
         on GitHub is unknown; nothing was posted: look at the pull request on GitHub (it has \
         an unusual number of reviews or comments) before retrying"
    )]
    IncompleteList {
        /// Route template of the list.
        route: &'static str,
        /// Pages read.
        pages: usize,
        /// What was looked for.
        what: String,
    },

    /// GitHub's GraphQL API answered with errors (HTTP 200 and `errors[]`).
    #[error(
        "GitHub's GraphQL API refused {operation}: {message}; a FORBIDDEN error means the \
         credential cannot write to the repository (resolving a review thread needs write \
         access), NOT_FOUND that the thread or pull request is gone"
    )]
    GraphQl {
        /// The operation (`reviewThreads`, `resolveReviewThread`).
        operation: &'static str,
        /// GitHub's messages, with their types.
        message: String,
    },

    /// A caller passed something that cannot be sent (bad repository name, …).
    #[error("invalid input for GitHub: {0}")]
    InvalidInput(String),
}

/// Whose budget a spent rate limit is, in words.
fn budget_subject(kind: CredentialKind) -> &'static str {
    match kind {
        CredentialKind::PersonalAccessToken => "token",
        CredentialKind::AppJsonWebToken => "GitHub App (its JWT budget)",
        CredentialKind::AppInstallationToken => "GitHub App installation",
    }
}

/// What to do about a spent primary budget, per credential kind.
fn exhausted_hint(kind: CredentialKind) -> &'static str {
    match kind {
        CredentialKind::PersonalAccessToken => "reduce poll frequency or use a GitHub App",
        CredentialKind::AppJsonWebToken | CredentialKind::AppInstallationToken => {
            "reduce poll frequency or the number of repositories polled (an installation's \
             budget grows with the organisation: 5,000 to 12,500 requests an hour)"
        }
    }
}

fn format_details(errors: &[String]) -> String {
    if errors.is_empty() {
        String::new()
    } else {
        format!(": {}", errors.join("; "))
    }
}

impl GitHubError {
    /// True when retrying later may succeed (rate limits, 5xx, timeouts).
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::RateLimitExhausted { .. }
                | Self::SecondaryRateLimit { .. }
                | Self::ServerError { .. }
                | Self::Timeout { .. }
                | Self::Transport { .. }
                | Self::WriteUnconfirmed { .. }
        )
    }
}
