//! What the agent costs, shown and capped (issue 28 item 5).
//!
//! **Shown.** Every review body ends with one line: the cycle's agent cost,
//! turns and time, and the pull request's total so far over all its runs
//! (reviews, fixes, verification) — [`cost_line`], from the store's sums.
//!
//! **Capped.** `agent.max_cost_per_pr_usd` and `agent.max_cost_per_day_usd`
//! (0: no cap), overall and per repository ([`CostCaps`]). Before a review or
//! a fix starts an agent, [`gate`] asks the store — never GitHub — what the
//! pull request and the day (UTC) have cost:
//!
//! - at or past the **pull request's cap**, the job is not started: the pull
//!   request is labelled `bot-human-intervention`, then gets one comment
//!   saying the cap and the spend ([`hand_over`]; label first, like the
//!   cycle limit's hand-over). The comment's `thread::` id is made from the
//!   cap, so a rerun finds it instead of posting it again, and a person who
//!   raises the cap and puts a trigger label back gets the job (a later
//!   hand-over under the new cap is a new comment);
//! - at or past the **day's cap** (every repository's day, or the
//!   repository's own), the job waits: its label stays, the pull request's
//!   status comment says so once per day ([`announce_wait`], remembered in the
//!   store), and the next poll after midnight UTC runs it — the day is read
//!   from the clock at every check, so no restart is needed.
//!
//! The per-pass `--max-budget-usd` (`agent.max_budget_usd`) stays the inner
//! bound: a pass started under the cap may take the pull request past it by
//! at most one pass's budget.

use std::fmt::Write as _;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use review_core::footer::{Footer, ThreadId};
use review_core::labels::{Job, Label};
use review_github::GitHubError;
use review_store::{CostTotal, DayCost, Store, StoreError};
use uuid::Uuid;

use crate::ci::{BotComments, set_bot_label};
use crate::daemon::attempts::HandOverContext;
use crate::status;

/// The cap hand-over comments' `thread::` ids: one per pull request and cap.
const COST_NAMESPACE: Uuid = Uuid::from_u128(0x6f1d_83c2_5a47_4b9e_9c20_e4a7_1b3f_d058);

/// The hidden marker of the pull-request cap's hand-over comment.
pub const COST_CAP_MARKER: &str = "<!-- review-bot:cost-cap -->";

/// `agent.max_cost_per_pr_usd` and `agent.max_cost_per_day_usd` (US dollars;
/// 0: no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Caps {
    /// What one pull request's agent runs may cost, all together.
    pub per_pull_request_usd: f64,
    /// What one day's (UTC) agent runs may cost.
    pub per_day_usd: f64,
}

/// `[repositories."OWNER/REPO".agent]`: a repository's own caps, each
/// present one instead of the overall.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RepositoryCaps {
    /// Replaces the overall cap per pull request.
    pub per_pull_request_usd: Option<f64>,
    /// The repository's own day cap (the overall one still caps every
    /// repository's day together).
    pub per_day_usd: Option<f64>,
}

/// The operator's cost caps, overall and per repository.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CostCaps {
    overall: Caps,
    /// `(name in lower case, caps)`: GitHub matches names without regard to case.
    repositories: Vec<(String, RepositoryCaps)>,
}

/// The caps that apply to one repository (US dollars; 0: no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limits {
    /// Per pull request.
    pub pull_request_usd: f64,
    /// Every repository's day together.
    pub overall_day_usd: f64,
    /// The repository's own day.
    pub repository_day_usd: f64,
}

impl CostCaps {
    /// `overall` for every repository, and the repositories' own.
    pub fn new(
        overall: Caps,
        repositories: impl IntoIterator<Item = (String, RepositoryCaps)>,
    ) -> Self {
        Self {
            overall,
            repositories: repositories
                .into_iter()
                .map(|(name, caps)| (name.to_ascii_lowercase(), caps))
                .collect(),
        }
    }

    /// The caps for `repository`.
    pub fn for_repository(&self, repository: &str) -> Limits {
        let own = self
            .repositories
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(repository))
            .map(|(_, caps)| *caps)
            .unwrap_or_default();
        Limits {
            pull_request_usd: own
                .per_pull_request_usd
                .unwrap_or(self.overall.per_pull_request_usd),
            overall_day_usd: self.overall.per_day_usd,
            repository_day_usd: own.per_day_usd.unwrap_or(0.0),
        }
    }

    /// Whether any day cap is set (overall or for a repository).
    pub fn any_day_cap(&self) -> bool {
        capped(self.overall.per_day_usd)
            || self
                .repositories
                .iter()
                .any(|(_, caps)| caps.per_day_usd.is_some_and(capped))
    }

    /// The repositories (lower case) with a day cap of their own.
    pub fn repositories_with_day_caps(&self) -> Vec<String> {
        self.repositories
            .iter()
            .filter(|(_, caps)| caps.per_day_usd.is_some_and(capped))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The day caps reached by `day` (for `/healthz` and `/metrics`): the
    /// overall one, then each repository's, with what was spent.
    pub fn reached_day_caps(&self, day: &DayCost) -> Vec<DayCapReached> {
        let mut reached = Vec::new();
        if capped(self.overall.per_day_usd) && day.total_usd >= self.overall.per_day_usd {
            reached.push(DayCapReached {
                repository: None,
                spent_usd: day.total_usd,
                cap_usd: self.overall.per_day_usd,
            });
        }
        for (name, caps) in &self.repositories {
            if let Some(cap) = caps.per_day_usd.filter(|cap| capped(*cap)) {
                let spent = day.repository_usd(name);
                if spent >= cap {
                    reached.push(DayCapReached {
                        repository: Some(name.clone()),
                        spent_usd: spent,
                        cap_usd: cap,
                    });
                }
            }
        }
        reached
    }
}

/// A cap is set when it is a positive number of dollars.
fn capped(cap: f64) -> bool {
    cap > 0.0
}

/// A day cap that is reached.
#[derive(Debug, Clone, PartialEq)]
pub struct DayCapReached {
    /// `None`: every repository's day together; else this repository's.
    pub repository: Option<String>,
    /// What the day has cost so far.
    pub spent_usd: f64,
    /// The cap.
    pub cap_usd: f64,
}

impl DayCapReached {
    /// `agent.max_cost_per_day_usd` or the repository's key.
    pub fn key(&self) -> String {
        match &self.repository {
            None => "agent.max_cost_per_day_usd".to_owned(),
            Some(repository) => {
                format!("repositories.\"{repository}\".agent.max_cost_per_day_usd")
            }
        }
    }

    /// `every repository` or `octo/widgets`, for sentences.
    pub fn scope(&self) -> String {
        self.repository.as_ref().map_or_else(
            || "all repositories together".to_owned(),
            |repository| format!("repository {repository}"),
        )
    }
}

/// Whether a job may start an agent.
#[derive(Debug, Clone, PartialEq)]
pub enum CostGate {
    /// Under every cap (or none is set).
    Run,
    /// The pull request has cost its cap or more: hand it to a human.
    PullRequestCap {
        /// What it has cost.
        spent: CostTotal,
        /// The cap.
        cap_usd: f64,
    },
    /// The day's cap is reached: wait for the next day (UTC).
    DayCap {
        /// Which cap.
        reached: DayCapReached,
        /// The day it was reached.
        day: NaiveDate,
    },
}

/// Asks the store whether `repository#number`'s job may start an agent on
/// `today` (UTC). No GitHub request; no store query for caps that are not set.
pub async fn gate(
    store: &Store,
    caps: &CostCaps,
    repository: &str,
    number: u64,
    today: NaiveDate,
) -> Result<CostGate, StoreError> {
    let limits = caps.for_repository(repository);
    if capped(limits.pull_request_usd) {
        let spent = store.pull_request_cost(repository, number).await?;
        if spent.cost_usd >= limits.pull_request_usd {
            metrics::counter!("review_bot_jobs_held_by_cost_cap_total", "cap" => "pull_request")
                .increment(1);
            return Ok(CostGate::PullRequestCap {
                spent,
                cap_usd: limits.pull_request_usd,
            });
        }
    }
    if capped(limits.overall_day_usd) || capped(limits.repository_day_usd) {
        let day = store.day_cost(today).await?;
        let only_this = CostCaps::new(
            Caps {
                per_pull_request_usd: 0.0,
                per_day_usd: limits.overall_day_usd,
            },
            [(
                repository.to_owned(),
                RepositoryCaps {
                    per_pull_request_usd: None,
                    per_day_usd: Some(limits.repository_day_usd),
                },
            )],
        );
        if let Some(reached) = only_this.reached_day_caps(&day).into_iter().next() {
            metrics::counter!("review_bot_jobs_held_by_cost_cap_total", "cap" => "day")
                .increment(1);
            return Ok(CostGate::DayCap {
                reached,
                day: today,
            });
        }
    }
    Ok(CostGate::Run)
}

/// Today's date, UTC: the day the day caps count.
pub fn today() -> NaiveDate {
    Utc::now().date_naive()
}

/// When the next day (UTC) after `day` starts.
pub fn next_day_start(day: NaiveDate) -> DateTime<Utc> {
    day.succ_opt()
        .unwrap_or(day)
        .and_time(chrono::NaiveTime::MIN)
        .and_utc()
}

/// `$0.42`, or `$0.0042` for less than a cent (model-sim's sums are tiny).
pub fn dollars(usd: f64) -> String {
    if usd > 0.0 && usd < 0.01 {
        format!("${usd:.4}")
    } else {
        format!("${usd:.2}")
    }
}

/// `3m 10s`, `42s`, `1.2s`, `1h 5m`.
pub fn short_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    if seconds < 10 {
        format!("{:.1}s", duration.as_secs_f64())
    } else if seconds >= 3_600 {
        format!("{}h {}m", seconds / 3_600, seconds % 3_600 / 60)
    } else if seconds >= 60 {
        format!("{}m {}s", seconds / 60, seconds % 60)
    } else {
        format!("{seconds}s")
    }
}

/// The review body's last line: `Agent: $0.42, 17 turns, 3m 10s this cycle ·
/// $1.20 on this pull request so far`. `total` is what the store holds for the
/// pull request, this cycle's passes included.
pub fn cost_line(cycle_usd: f64, cycle_turns: u32, cycle_time: Duration, total_usd: f64) -> String {
    format!(
        "Agent: {}, {} turn{}, {} this cycle · {} on this pull request so far",
        dollars(cycle_usd),
        cycle_turns,
        if cycle_turns == 1 { "" } else { "s" },
        short_duration(cycle_time),
        dollars(total_usd.max(cycle_usd)),
    )
}

/// `body` with `line` as its last paragraph, before the footer when the body
/// ends with one (`<sub>review::…</sub>`), so the footer stays last.
pub fn with_cost_line(body: &str, line: &str) -> String {
    let body = body.trim_end();
    match body.rsplit_once("\n\n") {
        Some((content, footer)) if footer.starts_with("<sub>") && footer.contains("::") => {
            format!("{content}\n\n{line}\n\n{footer}")
        }
        _ if body.starts_with("<sub>") && body.contains("::") => format!("{line}\n\n{body}"),
        _ => format!("{body}\n\n{line}"),
    }
}

/// The work a job does, for sentences.
const fn work(job: Job) -> (&'static str, Label) {
    match job {
        Job::Review => ("review", Label::BotReviewNeeded),
        Job::Write => ("fix", Label::BotChangesNeeded),
        Job::CiCheck => ("CI check", Label::BotCiPending),
    }
}

/// The key that set the pull request cap for `repository`.
fn pull_request_cap_key(caps: &CostCaps, repository: &str) -> String {
    let own = caps.repositories.iter().any(|(name, caps)| {
        name.eq_ignore_ascii_case(repository) && caps.per_pull_request_usd.is_some()
    });
    if own {
        format!(
            "repositories.\"{}\".agent.max_cost_per_pr_usd",
            repository.to_ascii_lowercase()
        )
    } else {
        "agent.max_cost_per_pr_usd".to_owned()
    }
}

/// The hand-over comment at the pull request's cap.
pub fn hand_over_comment(job: Job, spent: &CostTotal, cap_usd: f64, key: &str) -> String {
    let (work, trigger) = work(job);
    let mut text = format!(
        "### ✋ review-bot stops here: this pull request reached its agent cost cap\n\n\
         The agent has cost {} on this pull request so far ({} pass{}, {} turn{}), and the cap \
         is {} (`{key}`), so the bot did not start the {work} and will not start another on its \
         own.",
        dollars(spent.cost_usd),
        spent.passes,
        if spent.passes == 1 { "" } else { "es" },
        spent.turns,
        if spent.turns == 1 { "" } else { "s" },
        dollars(cap_usd),
    );
    let _ = write!(
        text,
        "\n\nTo hand it back to the bot, the operator raises `{key}`; then replace \
         `bot-human-intervention` with `{}`.\n\n{COST_CAP_MARKER}",
        trigger.name()
    );
    text
}

/// The status at the day's cap.
pub fn day_wait_status(job: Job, reached: &DayCapReached, day: NaiveDate) -> String {
    let (work, trigger) = work(job);
    format!(
        "### ⏸ review-bot waits for tomorrow: the day's agent cost cap is reached\n\n\
         The agent has cost {} today ({day}, UTC) for {}, and the cap is {} (`{}`), so the {work} \
         of this pull request waits. It starts after midnight UTC ({}) on its own; the label \
         stays `{}` and nobody needs to do anything.",
        dollars(reached.spent_usd),
        reached.scope(),
        dollars(reached.cap_usd),
        reached.key(),
        next_day_start(day).format("%Y-%m-%d %H:%M UTC"),
        trigger.name(),
    )
}

/// What the caller of [`gate`] needs to act on a cap.
pub struct CapContext<'a> {
    /// The store (the day notices).
    pub store: &'a Store,
    /// The job held back, on its pull request: what a hand-over after
    /// failures needs too (the labels are changed, the bot's own comment
    /// found again).
    pub target: HandOverContext<'a>,
}

/// At the pull request's cap: `bot-human-intervention`, then one comment
/// (found again by its `thread::` id, never posted twice). Returns the
/// comment's page.
pub async fn hand_over(
    context: &CapContext<'_>,
    caps: &CostCaps,
    spent: &CostTotal,
    cap_usd: f64,
) -> Result<String, GitHubError> {
    let repository = context.target.repository;
    let number = context.target.pull_request.number;
    let repository_text = repository.to_string();
    set_bot_label(
        context.target.github,
        repository,
        context.target.pull_request,
        Label::BotHumanIntervention,
        context.target.progress,
    )
    .await?;
    let thread = ThreadId(Uuid::new_v5(
        &COST_NAMESPACE,
        format!(
            "pull-request-cap:{}#{number}:{cap_usd}",
            repository_text.to_ascii_lowercase()
        )
        .as_bytes(),
    ));
    let step = context.target.progress.step("cost cap");
    let posted = async {
        let (reviews, issue_comments) = tokio::try_join!(
            context.target.github.list_reviews(repository, number),
            context
                .target
                .github
                .list_issue_comments(repository, number),
        )?;
        let earlier =
            BotComments::from_lists(context.target.bot_login, &reviews, &[], &issue_comments);
        if let Some(url) = earlier.comment_with_thread(thread) {
            return Ok::<_, GitHubError>(format!("already posted: {url}"));
        }
        let body = review_core::payload::with_footer(
            &hand_over_comment(
                context.target.job,
                spent,
                cap_usd,
                &pull_request_cap_key(caps, &repository_text),
            ),
            &Footer::after_review(earlier.latest_review, thread).render(),
        );
        let comment = context
            .target
            .github
            .create_issue_comment(repository, number, &body, Some(thread))
            .await?;
        Ok(comment.item.html_url)
    }
    .await;
    match posted {
        Ok(url) => {
            step.done(url.clone());
            tracing::warn!(
                spent_usd = spent.cost_usd,
                cap_usd,
                comment = url,
                "handed to a human: the pull request reached its agent cost cap"
            );
            Ok(url)
        }
        Err(error) => {
            step.failed(error.to_string());
            Err(error)
        }
    }
}

/// At the day's cap: the status comment says the job waits, once per pull
/// request and day (remembered in the store, so a job held back at every
/// poll writes once). Returns whether it was said now.
pub async fn announce_wait(
    context: &CapContext<'_>,
    reached: &DayCapReached,
    day: NaiveDate,
) -> Result<bool, CapError> {
    let repository = context.target.repository;
    let number = context.target.pull_request.number;
    let repository_text = repository.to_string();
    let notice = format!("day-cap:{day}");
    if context
        .store
        .cost_notice_given(&repository_text, number, &notice)
        .await?
    {
        return Ok(false);
    }
    let step = context.target.progress.step("status comment");
    let published = async {
        let (reviews, issue_comments) = tokio::try_join!(
            context.target.github.list_reviews(repository, number),
            context
                .target
                .github
                .list_issue_comments(repository, number),
        )?;
        let earlier =
            BotComments::from_lists(context.target.bot_login, &reviews, &[], &issue_comments);
        let existing = status::find(
            &issue_comments,
            context.target.bot_login,
            status::thread_id(repository, number),
        )
        .map(|comment| comment.id);
        status::publish(
            context.target.github,
            repository,
            number,
            existing,
            earlier.latest_review,
            &day_wait_status(context.target.job, reached, day),
        )
        .await
    }
    .await;
    match published {
        Ok(comment) => step.done(comment.html_url),
        Err(error) => {
            step.failed(error.to_string());
            return Err(error.into());
        }
    }
    context
        .store
        .record_cost_notice(&repository_text, number, &notice)
        .await?;
    Ok(true)
}

/// Why a cap could not be acted on.
#[derive(Debug, thiserror::Error)]
pub enum CapError {
    /// The store failed.
    #[error("could not read or record the agent's cost: {0}")]
    Store(#[from] StoreError),
    /// GitHub refused the comment or the label.
    #[error("could not tell the pull request about the cost cap: {0}")]
    GitHub(#[from] GitHubError),
}

/// What a job held back by a cap did instead, for its report.
#[derive(Debug, Clone, PartialEq)]
pub enum Held {
    /// Handed to a human at the pull request's cap (the comment's page).
    HandedOver {
        /// The comment.
        comment_url: String,
        /// What the pull request has cost.
        spent_usd: f64,
        /// The cap.
        cap_usd: f64,
    },
    /// Waits for the next day (UTC).
    Waiting {
        /// The cap reached.
        reached: DayCapReached,
        /// When the job may run again.
        until: DateTime<Utc>,
    },
}

impl Held {
    /// One sentence for `step`'s and `review`'s output and the daemon's log.
    pub fn describe(&self) -> String {
        match self {
            Self::HandedOver {
                comment_url,
                spent_usd,
                cap_usd,
            } => format!(
                "the pull request reached its agent cost cap ({} spent, cap {}): not started, \
                 handed to a human ({comment_url})",
                dollars(*spent_usd),
                dollars(*cap_usd)
            ),
            Self::Waiting { reached, until } => format!(
                "the day's agent cost cap is reached ({} spent today by {}, cap {}, `{}`): \
                 waits for the next day, {}",
                dollars(reached.spent_usd),
                reached.scope(),
                dollars(reached.cap_usd),
                reached.key(),
                until.format("%Y-%m-%d %H:%M UTC")
            ),
        }
    }
}

/// Checks the caps for a job about to start an agent and acts on one that
/// is reached (see the module documentation). `Ok(None)`: start it.
/// `dry_run`: say what would happen, write nothing.
pub async fn check_before_agent(
    context: &CapContext<'_>,
    caps: &CostCaps,
    dry_run: bool,
) -> Result<Option<Held>, CapError> {
    let repository = context.target.repository.to_string();
    let number = context.target.pull_request.number;
    let today = today();
    match gate(context.store, caps, &repository, number, today).await? {
        CostGate::Run => Ok(None),
        CostGate::PullRequestCap { spent, cap_usd } => {
            let comment_url = if dry_run {
                "dry run: nothing posted".to_owned()
            } else {
                hand_over(context, caps, &spent, cap_usd).await?
            };
            Ok(Some(Held::HandedOver {
                comment_url,
                spent_usd: spent.cost_usd,
                cap_usd,
            }))
        }
        CostGate::DayCap { reached, day } => {
            if !dry_run {
                announce_wait(context, &reached, day).await?;
            }
            tracing::info!(
                spent_usd = reached.spent_usd,
                cap_usd = reached.cap_usd,
                key = %reached.key(),
                "the day's agent cost cap is reached: the job waits for the next day"
            );
            Ok(Some(Held::Waiting {
                until: next_day_start(day),
                reached,
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps() -> CostCaps {
        CostCaps::new(
            Caps {
                per_pull_request_usd: 5.0,
                per_day_usd: 100.0,
            },
            [
                (
                    "Octo/Widgets".to_owned(),
                    RepositoryCaps {
                        per_pull_request_usd: Some(1.0),
                        per_day_usd: Some(10.0),
                    },
                ),
                (
                    "octo/free".to_owned(),
                    RepositoryCaps {
                        per_pull_request_usd: Some(0.0),
                        per_day_usd: None,
                    },
                ),
            ],
        )
    }

    #[test]
    fn a_repositorys_own_caps_win_and_the_overall_day_cap_still_holds() {
        let caps = caps();
        assert_eq!(
            caps.for_repository("octo/widgets"),
            Limits {
                pull_request_usd: 1.0,
                overall_day_usd: 100.0,
                repository_day_usd: 10.0
            }
        );
        // 0 for one repository lifts the overall cap there.
        assert!(caps.for_repository("octo/free").pull_request_usd.abs() < f64::EPSILON);
        assert!((caps.for_repository("octo/other").pull_request_usd - 5.0).abs() < f64::EPSILON);
        assert!(caps.any_day_cap());
        assert!(!CostCaps::default().any_day_cap());
        assert_eq!(
            pull_request_cap_key(&caps, "OCTO/widgets"),
            "repositories.\"octo/widgets\".agent.max_cost_per_pr_usd"
        );
        assert_eq!(
            pull_request_cap_key(&caps, "octo/other"),
            "agent.max_cost_per_pr_usd"
        );
    }

    #[test]
    fn reached_day_caps_name_their_scope() {
        let mut day = DayCost::default();
        day.by_repository.insert("octo/widgets".to_owned(), 12.0);
        day.total_usd = 12.0;
        let reached = caps().reached_day_caps(&day);
        assert_eq!(reached.len(), 1);
        assert_eq!(reached[0].repository.as_deref(), Some("octo/widgets"));
        assert_eq!(
            reached[0].key(),
            "repositories.\"octo/widgets\".agent.max_cost_per_day_usd"
        );
        day.total_usd = 100.0;
        let reached = caps().reached_day_caps(&day);
        assert_eq!(reached[0].repository, None);
        assert_eq!(reached.len(), 2);
    }

    #[test]
    fn the_cost_line_reads_like_the_issue_asks() {
        assert_eq!(
            cost_line(0.42, 17, Duration::from_secs(190), 1.2),
            "Agent: $0.42, 17 turns, 3m 10s this cycle · $1.20 on this pull request so far"
        );
        // Less than a cent still shows; the total is never below the cycle.
        assert_eq!(
            cost_line(0.0042, 1, Duration::from_millis(900), 0.0),
            "Agent: $0.0042, 1 turn, 0.9s this cycle · $0.0042 on this pull request so far"
        );
        assert_eq!(short_duration(Duration::from_mins(65)), "1h 5m");
        assert_eq!(
            with_cost_line("Findings.\n\n<sub>review::1 · thread::2</sub>", "Agent: $1"),
            "Findings.\n\nAgent: $1\n\n<sub>review::1 · thread::2</sub>"
        );
        assert_eq!(
            with_cost_line("Findings.", "Agent: $1"),
            "Findings.\n\nAgent: $1"
        );
    }

    #[test]
    fn the_hand_over_and_the_wait_say_the_cap_the_spend_and_what_next() {
        let spent = CostTotal {
            cost_usd: 1.25,
            turns: 30,
            duration: Duration::from_mins(1),
            passes: 3,
        };
        let text = hand_over_comment(Job::Write, &spent, 1.0, "agent.max_cost_per_pr_usd");
        for expected in [
            "$1.25",
            "$1.00",
            "`agent.max_cost_per_pr_usd`",
            "did not start the fix",
            "with `bot-changes-needed`",
            COST_CAP_MARKER,
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
        let day = NaiveDate::from_ymd_opt(2026, 11, 26).unwrap();
        let status = day_wait_status(
            Job::Review,
            &DayCapReached {
                repository: None,
                spent_usd: 200.5,
                cap_usd: 200.0,
            },
            day,
        );
        for expected in [
            "$200.50",
            "$200.00",
            "2026-11-26",
            "2026-11-27 00:00 UTC",
            "`bot-review-needed`",
            "`agent.max_cost_per_day_usd`",
        ] {
            assert!(status.contains(expected), "{expected}: {status}");
        }
    }
}
