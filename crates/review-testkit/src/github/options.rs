//! The knobs a test turns when it starts a simulator: rate-limit budgets, windows and
//! GitHub's size limits. Defaults are GitHub's documented values.

use std::time::Duration;

/// Settings of one simulator. `SimOptions::default()` is GitHub.com.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// Primary rate limit per personal access token per window (GitHub: 5,000/hour).
    pub primary_limit: u64,
    /// Primary rate limit per app installation per window (GitHub: 5,000–12,500/hour).
    pub installation_limit: u64,
    /// Primary rate limit of a GitHub App authenticating with its JWT.
    pub app_limit: u64,
    /// Primary rate limit of unauthenticated requests (GitHub: 60/hour).
    pub anonymous_limit: u64,
    /// Length of the primary window (GitHub: one hour).
    pub primary_window: Duration,
    /// Search requests per search window (GitHub: 30/minute).
    pub search_limit: u64,
    /// Length of the search window (GitHub: one minute).
    pub search_window: Duration,
    /// Content-creating requests allowed per minute before the secondary limit (GitHub: 80).
    pub content_creation_per_minute: u64,
    /// Content-creating requests allowed per hour before the secondary limit (GitHub: 500).
    pub content_creation_per_hour: u64,
    /// The `retry-after` a secondary-limit answer carries.
    pub secondary_retry_after: Duration,
    /// How long an installation access token lives (GitHub: one hour).
    pub installation_token_lifetime: Duration,
    /// Validate request bodies against the OpenAPI subset (answering 422 like GitHub does for
    /// a malformed body, and recording every violation in the request log).
    pub validate_request_bodies: bool,
    /// `pulls/list-files` lists at most this many files (GitHub: 3,000).
    pub max_listed_files: usize,
    /// The diff media type answers 406 past this many files (GitHub: 300).
    pub diff_max_files: usize,
    /// The diff media type answers 406 past this many lines (GitHub: 20,000).
    pub diff_max_lines: usize,
    /// How long a new review, review comment or issue comment stays out of the list
    /// endpoints after it was created (GitHub's lists can lag behind a write; 0 = never).
    /// [`super::GithubSim::set_list_lag`] changes it while the simulator runs.
    pub list_lag: Duration,
    /// Requests served at the same time before the secondary limit answers 403 (GitHub
    /// documents 100 concurrent requests).
    pub max_concurrent_requests: usize,
    /// The largest `per_page` a list honours (GitHub: 100). A test lowers it to reach a
    /// client's page cap with a few records.
    pub max_per_page: usize,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            primary_limit: 5_000,
            installation_limit: 5_000,
            app_limit: 5_000,
            anonymous_limit: 60,
            primary_window: Duration::from_hours(1),
            search_limit: 30,
            search_window: Duration::from_mins(1),
            content_creation_per_minute: 80,
            content_creation_per_hour: 500,
            secondary_retry_after: Duration::from_mins(1),
            installation_token_lifetime: Duration::from_hours(1),
            validate_request_bodies: true,
            max_listed_files: 3_000,
            diff_max_files: 300,
            diff_max_lines: 20_000,
            list_lag: Duration::ZERO,
            max_concurrent_requests: 100,
            max_per_page: 100,
        }
    }
}
