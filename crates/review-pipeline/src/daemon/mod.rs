//! The daemon: poll → schedule → step.
//!
//! Every `poll_interval` the [`poller`] searches the watched owners and
//! repositories for the trigger labels; each pull request found becomes a job
//! for the [`scheduler`], which runs it under a store lease with bounded
//! concurrency. The job itself is the caller's (`review-bot step`'s body).
//! On shutdown, polling stops, running jobs get `shutdown_grace`, and the
//! rest are stopped and their leases released.

pub mod attempts;
pub mod poller;
pub mod scheduler;

use std::future::Future;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use review_github::GitHubClient;

pub use poller::{Hit, Poll, WatchTarget, poll};
pub use scheduler::{JobEnd, JobFuture, JobOutcome, Runner, Scheduler, SchedulerSettings};

/// The daemon's loop settings.
#[derive(Debug, Clone)]
pub struct DaemonSettings {
    /// What to watch.
    pub targets: Vec<WatchTarget>,
    /// Between the starts of two polls.
    pub poll_interval: Duration,
    /// How long running jobs may go on after a shutdown request.
    pub shutdown_grace: Duration,
    /// One poll, every job to its end, then return.
    pub once: bool,
    /// Prints one line for the operator (each job's end, poll errors,
    /// shutdown): plain text, or a JSON log event, as the binary chooses.
    pub announce: fn(&str),
}

/// What `/healthz` reports about the loop: when a poll last answered, and
/// whether the latest poll failed outright.
#[derive(Debug)]
pub struct Health {
    started: Instant,
    state: Mutex<PollHealth>,
}

#[derive(Debug, Default)]
struct PollHealth {
    last_success: Option<Instant>,
    /// The latest poll's first error, when every one of its searches failed
    /// (a revoked token, GitHub unreachable).
    failing: Option<String>,
    /// The most recent error of any poll.
    last_error: Option<String>,
}

impl Default for Health {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            state: Mutex::default(),
        }
    }
}

impl Health {
    /// `Ok` when the latest poll had at least one search answered and a poll
    /// had every search answered within `within` (or the daemon started less
    /// than `within` ago); else what is wrong.
    pub fn check(&self, within: Duration) -> Result<(), String> {
        let state = self.state.lock().expect("health lock");
        if let Some(error) = &state.failing {
            return Err(format!("the latest poll failed: {error}"));
        }
        let since = state.last_success.unwrap_or(self.started).elapsed();
        if since <= within {
            return Ok(());
        }
        Err(format!(
            "no successful poll for {} s{}",
            since.as_secs(),
            state
                .last_error
                .as_ref()
                .map_or_else(String::new, |error| format!(" (last error: {error})"))
        ))
    }

    fn polled(&self, found: &Poll) {
        let mut state = self.state.lock().expect("health lock");
        if let Some(error) = found.errors.first() {
            state.last_error = Some(error.clone());
        } else {
            state.last_success = Some(Instant::now());
        }
        state.failing = (found.searches > 0 && found.errors.len() == found.searches)
            .then(|| found.errors[0].clone());
    }
}

/// What a daemon run did.
#[derive(Debug, Default)]
pub struct DaemonSummary {
    /// Polls made.
    pub polls: usize,
    /// Searches that failed, over all polls.
    pub poll_errors: usize,
    /// Every job's end, in the order they ended.
    pub jobs: Vec<(Hit, JobEnd)>,
}

impl DaemonSummary {
    /// Every job completed (or was another holder's) and every search answered.
    pub fn all_completed(&self) -> bool {
        self.poll_errors == 0 && !self.jobs.iter().any(|(_, end)| end.is_failure())
    }

    /// Records a job's end and tells the operator (`announce`: a plain line,
    /// or a JSON log event).
    fn record(&mut self, hit: Hit, end: JobEnd, announce: fn(&str)) {
        announce(&format!("{hit}: {}", describe(&end)));
        self.jobs.push((hit, end));
    }
}

/// One line per job end, for the log.
fn describe(end: &JobEnd) -> String {
    match end {
        JobEnd::Completed => "job completed".to_owned(),
        JobEnd::Failed(error) => format!("job failed: {error}"),
        JobEnd::Skipped(reason) => format!("skipped: {reason}"),
        JobEnd::Busy => "skipped: another holder has its lease".to_owned(),
        JobEnd::LeaseLost => "job stopped: its lease was lost".to_owned(),
        JobEnd::Abandoned => "job stopped at shutdown, lease released".to_owned(),
        JobEnd::StoreFailed(error) => format!("job not started: {error}"),
    }
}

/// Polls and schedules until `shutdown` resolves (or, with `once`, after one
/// poll's jobs have ended).
pub async fn run(
    github: &GitHubClient,
    mut scheduler: Scheduler,
    settings: &DaemonSettings,
    health: &Health,
    shutdown: impl Future<Output = ()>,
) -> DaemonSummary {
    let mut summary = DaemonSummary::default();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let next_poll = tokio::time::Instant::now() + settings.poll_interval;
        let found = tokio::select! {
            found = poll(github, &settings.targets) => found,
            () = &mut shutdown => break,
        };
        summary.polls += 1;
        summary.poll_errors += found.errors.len();
        health.polled(&found);
        record_poll(github, &found);
        for error in &found.errors {
            tracing::warn!(error, "poll error");
            (settings.announce)(&format!("poll error: {error}"));
        }
        let mut queued = 0;
        for hit in found.hits {
            if scheduler.submit(hit) {
                queued += 1;
            }
        }
        tracing::info!(
            searches = found.searches,
            unchanged = found.unchanged,
            queued,
            pending = scheduler.pending(),
            "polled"
        );
        metrics::gauge!("review_bot_jobs_pending").set(gauge_value(scheduler.pending()));
        if settings.once {
            tokio::select! {
                () = drain_into(&mut scheduler, &mut summary, settings.announce) => return summary,
                () = &mut shutdown => break,
            }
        }
        loop {
            tokio::select! {
                () = &mut shutdown => {
                    stop(&mut scheduler, &mut summary, settings).await;
                    return summary;
                }
                () = tokio::time::sleep_until(next_poll) => break,
                Some((hit, end)) = scheduler.next_end() => {
                    summary.record(hit, end, settings.announce);
                    metrics::gauge!("review_bot_jobs_pending").set(gauge_value(scheduler.pending()));
                }
            }
        }
    }
    stop(&mut scheduler, &mut summary, settings).await;
    summary
}

/// A count as a gauge's value.
#[allow(clippy::cast_precision_loss, reason = "job counts are far below 2^52")]
fn gauge_value(count: usize) -> f64 {
    count as f64
}

/// The poll's metrics: polls and searches by outcome, and GitHub's remaining
/// rate limit per credential and resource.
fn record_poll(github: &GitHubClient, found: &Poll) {
    let outcome = if found.errors.is_empty() {
        "ok"
    } else {
        "error"
    };
    metrics::counter!("review_bot_polls_total", "outcome" => outcome).increment(1);
    let failed = found.errors.len();
    let answered = found.searches.saturating_sub(failed);
    let changed = answered.saturating_sub(found.unchanged);
    for (result, count) in [
        ("changed", changed),
        ("unchanged", found.unchanged),
        ("error", failed),
    ] {
        metrics::counter!("review_bot_searches_total", "result" => result).increment(count as u64);
    }
    if found.errors.is_empty() {
        #[allow(clippy::cast_precision_loss, reason = "Unix seconds fit an f64")]
        let now = chrono::Utc::now().timestamp() as f64;
        metrics::gauge!("review_bot_last_successful_poll_timestamp_seconds").set(now);
    }
    for snapshot in github.rate_limit_state() {
        #[allow(clippy::cast_precision_loss, reason = "rate limits are small")]
        let remaining = snapshot.remaining as f64;
        metrics::gauge!(
            "review_bot_github_rate_limit_remaining",
            "credential" => snapshot.credential,
            "resource" => snapshot.resource
        )
        .set(remaining);
    }
}

async fn drain_into(scheduler: &mut Scheduler, summary: &mut DaemonSummary, announce: fn(&str)) {
    while let Some((hit, end)) = scheduler.next_end().await {
        summary.record(hit, end, announce);
    }
}

async fn stop(scheduler: &mut Scheduler, summary: &mut DaemonSummary, settings: &DaemonSettings) {
    let pending = scheduler.pending();
    tracing::info!(pending, "shutting down: polling stopped");
    (settings.announce)(&format!(
        "shutting down: {pending} job{} running, up to {} s to finish",
        if pending == 1 { "" } else { "s" },
        settings.shutdown_grace.as_secs()
    ));
    for (hit, end) in scheduler.shutdown(settings.shutdown_grace).await {
        summary.record(hit, end, settings.announce);
    }
}
