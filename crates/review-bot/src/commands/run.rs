//! `review-bot run [--once]`: the daemon. Polls the `[daemon]` repositories
//! for the trigger labels and advances each pull request found by one
//! `step`, under a store lease, `daemon.concurrency` at a time
//! (review-pipeline's `daemon`).
//!
//! Glue only: checks at start that nothing the daemon needs is missing (and
//! names every missing piece with its fix: exit 2), opens the clients once,
//! and turns SIGTERM/SIGINT into a drain of `daemon.shutdown_grace_secs`.
//! `--once`: one poll, every job it found to its end, then exit 0 when every
//! job completed, 1 otherwise. Without it, `/healthz` and `/metrics`
//! (Prometheus' text format) are served on `daemon.listen`.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use review_github::RepositoryName;
use review_pipeline::daemon::attempts::{self, AttemptPolicy};
use review_pipeline::daemon::{
    self, DaemonSettings, Health, Hit, JobOutcome, Runner, Scheduler, SchedulerSettings,
    WatchTarget,
};
use review_pipeline::step::{Recorded, StepReport, StepRequest, StepSettings};
use review_pipeline::{Progress, ProgressEvent};
use tracing::Instrument as _;

use super::review::{Parts, say};
use super::step::{conclude, gate_line, step_settings};
use crate::config::{self, Config};

/// `review-bot run`'s arguments.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// One poll, then every job it found to its end, then exit: 0 when every
    /// job completed, 1 otherwise (for cron and tests).
    #[arg(long)]
    pub once: bool,
}

/// Runs `run`.
#[allow(
    clippy::too_many_lines,
    reason = "the daemon's wiring, one part after the other; splitting it hides the order"
)]
pub fn run(args: &RunArgs, config_file: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    let loaded = config::load(config_file)?;
    let targets = check_start(&loaded.config, |name| std::env::var(name).ok())?;
    let parts = Parts::resolve(loaded)?;
    let step_settings = step_settings(&parts.config);
    let cost_caps = parts.config.cost_caps();
    let daemon_config = &parts.config.daemon;
    let settings = DaemonSettings {
        targets: targets.clone(),
        poll_interval: Duration::from_secs(daemon_config.poll_interval_secs),
        shutdown_grace: Duration::from_secs(daemon_config.shutdown_grace_secs),
        once: args.once,
        announce: |line| crate::output::line(line),
    };
    let policy = AttemptPolicy::new(parts.config.agent.max_attempts, settings.poll_interval);
    let concurrency = daemon_config.concurrency;
    let scheduler_settings = SchedulerSettings::new(concurrency);
    let once = args.once;
    let listen = daemon_config.listen;
    super::block_on(async move {
        let shutdown = shutdown_signal()?;
        let health = Arc::new(Health::default());
        // The App's login is read from the first repository's installation
        // (an owner alone has no repository to ask: set github.bot_login).
        let first = targets
            .iter()
            .find_map(|target| match target {
                WatchTarget::Repository(repository) => Some(repository.clone()),
                WatchTarget::Owner(_) => None,
            })
            .unwrap_or_else(|| {
                RepositoryName::new(targets[0].to_string(), targets[0].to_string())
                    .expect("an owner's name is a valid repository name")
            });
        let reviewer = Arc::new(parts.reviewer(&first).await?);
        // A daemon killed here (kill -9, a crash) left its leases live: take
        // its pull requests over now rather than when the leases lapse.
        match daemon::scheduler::release_dead_holders(
            &reviewer.store,
            &scheduler_settings.holder_prefix,
        )
        .await
        {
            Ok(released) if !released.is_empty() => crate::output::line(format_args!(
                "took over {} pull request{} from a process that is gone: {}",
                released.len(),
                if released.len() == 1 { "" } else { "s" },
                released
                    .iter()
                    .map(|lease| format!("{}#{}", lease.repository, lease.pull_request))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "could not look for leases of dead processes"),
        }
        let runner = job_runner(Arc::clone(&reviewer), step_settings, policy);
        let scheduler = Scheduler::new(reviewer.store.clone(), runner, scheduler_settings);
        let served = if once {
            None
        } else {
            let operations = Operations {
                store: reviewer.store.clone(),
                health: Arc::clone(&health),
                // A poll may wait for the search budget: three intervals and a minute.
                poll_deadline: settings.poll_interval * 3 + Duration::from_mins(1),
                metrics: install_metrics()?,
                cost_caps,
            };
            Some(serve(listen, operations).await?)
        };
        crate::output::line(format_args!(
            "watching {} every {} s, {} job{} at once{}",
            targets
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            settings.poll_interval.as_secs(),
            concurrency,
            if concurrency == 1 { "" } else { "s" },
            if once { " (one poll)" } else { "" }
        ));
        let summary = daemon::run(&reviewer.github, scheduler, &settings, &health, shutdown).await;
        if let Some(server) = served {
            server.abort();
        }
        reviewer.store.close().await;
        let failed = summary
            .jobs
            .iter()
            .filter(|(_, end)| end.is_failure())
            .count();
        crate::output::line(format_args!(
            "stopped after {} poll{}: {} job{} ended, {failed} not completed, {} search error{}",
            summary.polls,
            if summary.polls == 1 { "" } else { "s" },
            summary.jobs.len(),
            if summary.jobs.len() == 1 { "" } else { "s" },
            summary.poll_errors,
            if summary.poll_errors == 1 { "" } else { "s" },
        ));
        anyhow::Ok(if !once || summary.all_completed() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    })?
}

/// What `/healthz` and `/metrics` read.
#[derive(Clone)]
struct Operations {
    store: review_store::Store,
    health: Arc<Health>,
    poll_deadline: Duration,
    metrics: metrics_exporter_prometheus::PrometheusHandle,
    /// The agent cost caps: `/healthz` and `/metrics` say when a day cap
    /// holds jobs back (read from the store at each request, so the next
    /// day shows without a restart).
    cost_caps: review_pipeline::cost::CostCaps,
}

/// The global Prometheus recorder every `metrics::` call records into.
fn install_metrics() -> anyhow::Result<metrics_exporter_prometheus::PrometheusHandle> {
    let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
        .install_recorder()
        .map_err(|error| anyhow::anyhow!("could not set up the metrics recorder: {error}"))?;
    metrics::describe_counter!(
        "review_bot_polls_total",
        "Polls, by outcome (ok: every search answered)."
    );
    metrics::describe_counter!(
        "review_bot_searches_total",
        "Search requests, by result (unchanged: a free 304)."
    );
    metrics::describe_counter!(
        review_github::REQUESTS_METRIC,
        "GitHub API attempts (retries included), by resource, method and outcome (ok, not_modified: a free 304, client_error, rate_limited, server_error, network)."
    );
    metrics::describe_counter!("review_bot_jobs_total", "Jobs ended, by kind and outcome.");
    metrics::describe_counter!(
        "review_bot_findings_withheld_total",
        "Findings the verification pass (review.verify) withheld as unlikely, by repository."
    );
    metrics::describe_counter!(
        "review_bot_verification_failures_total",
        "Verification passes that failed (their reviews posted the findings unverified), by repository."
    );
    metrics::describe_histogram!(
        "review_bot_step_duration_seconds",
        "How long each job's step took, from reading the labels to its last write."
    );
    metrics::describe_histogram!(
        "review_bot_agent_cost_usd",
        "What the agent cost per job that ran it (US dollars), by kind."
    );
    metrics::describe_histogram!(
        "review_bot_agent_turns",
        "The agent's turns per job that ran it, by kind."
    );
    metrics::describe_gauge!(
        "review_bot_jobs_queued",
        "Jobs waiting for one of daemon.concurrency slots."
    );
    metrics::describe_gauge!(
        "review_bot_jobs_backing_off",
        "Jobs (pull request, kind, head) waiting out their backoff after failures (all replicas)."
    );
    metrics::describe_histogram!(
        "review_bot_job_duration_seconds",
        "How long jobs held their lease, by kind."
    );
    metrics::describe_gauge!(
        "review_bot_jobs_pending",
        "Jobs queued or running in this process."
    );
    metrics::describe_gauge!(
        "review_bot_leases_held",
        "Pull-request leases this process holds."
    );
    metrics::describe_gauge!(
        "review_bot_github_rate_limit_remaining",
        "GitHub's remaining rate limit, by credential and resource."
    );
    metrics::describe_gauge!(
        "review_bot_agent_cost_today_usd",
        "What the agent has cost today (UTC), every repository together (US dollars; all replicas)."
    );
    metrics::describe_gauge!(
        "review_bot_cost_day_cap_reached",
        "1 while a day cap on the agent's cost is reached and reviews and fixes wait for the next day (UTC), by scope (overall, or a repository)."
    );
    metrics::describe_counter!(
        "review_bot_jobs_held_by_cost_cap_total",
        "Reviews and fixes not started because of a cost cap, by cap (pull_request: handed to a human; day: waiting for the next day)."
    );
    metrics::describe_gauge!(
        "review_bot_last_successful_poll_timestamp_seconds",
        "When every search of a poll last answered (Unix time)."
    );
    Ok(handle)
}

/// Binds `daemon.listen` (a failure is an exit 2 naming the key) and serves
/// `/healthz` and `/metrics` until the returned task is aborted.
async fn serve(
    listen: std::net::SocketAddr,
    operations: Operations,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    use axum::routing::get;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| {
            anyhow::anyhow!(
                "cannot serve /healthz and /metrics on daemon.listen = {listen}: {error}; set \
             daemon.listen (REVIEW_BOT_DAEMON_LISTEN) to a free address and port"
            )
        })?;
    let address = listener.local_addr()?;
    let app = axum::Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(render_metrics))
        .with_state(operations);
    crate::output::line(format_args!(
        "serving /healthz and /metrics on http://{address}"
    ));
    Ok(tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            tracing::error!(%error, "the /healthz and /metrics server stopped");
        }
    }))
}

/// 200 when the store answers and a poll succeeded recently; 503 naming
/// what is wrong otherwise.
async fn healthz(
    axum::extract::State(operations): axum::extract::State<Operations>,
) -> (axum::http::StatusCode, String) {
    let mut healthy = true;
    let store = match operations.store.health_check().await {
        Ok(health) => format!(
            "store: ok ({}, schema {})",
            health.backend, health.schema_version
        ),
        Err(error) => {
            healthy = false;
            format!("store: {error}")
        }
    };
    let poll = match operations.health.check(operations.poll_deadline) {
        Ok(()) => "poll: ok".to_owned(),
        Err(problem) => {
            healthy = false;
            format!("poll: {problem}")
        }
    };
    // A reached day cap is the operator's choice, not a fault: said, still 200.
    let cost = match cost_today(&operations).await {
        Ok((spent, reached)) if reached.is_empty() => {
            format!(
                "cost: {} today (UTC){}",
                review_pipeline::cost::dollars(spent),
                if operations.cost_caps.any_day_cap() {
                    ", under the day caps"
                } else {
                    ""
                }
            )
        }
        Ok((spent, reached)) => format!(
            "cost: {} today (UTC); day cap reached ({}): reviews and fixes wait for the next day, \
             {}",
            review_pipeline::cost::dollars(spent),
            reached
                .iter()
                .map(|cap| format!(
                    "{} of {} for {}",
                    review_pipeline::cost::dollars(cap.spent_usd),
                    review_pipeline::cost::dollars(cap.cap_usd),
                    cap.scope()
                ))
                .collect::<Vec<_>>()
                .join("; "),
            review_pipeline::cost::next_day_start(review_pipeline::cost::today())
                .format("%Y-%m-%d %H:%M UTC")
        ),
        Err(error) => format!("cost: could not be read: {error}"),
    };
    let status = if healthy {
        axum::http::StatusCode::OK
    } else {
        axum::http::StatusCode::SERVICE_UNAVAILABLE
    };
    (status, format!("{store}\n{poll}\n{cost}\n"))
}

/// Today's (UTC) agent cost, every repository together, and the day caps it
/// reached — from the store, so every replica's spend counts.
async fn cost_today(
    operations: &Operations,
) -> Result<(f64, Vec<review_pipeline::cost::DayCapReached>), review_store::StoreError> {
    let day = operations
        .store
        .day_cost(review_pipeline::cost::today())
        .await?;
    Ok((day.total_usd, operations.cost_caps.reached_day_caps(&day)))
}

async fn render_metrics(
    axum::extract::State(operations): axum::extract::State<Operations>,
) -> ([(axum::http::HeaderName, &'static str); 1], String) {
    match operations.store.job_attempts_backing_off().await {
        #[allow(clippy::cast_precision_loss, reason = "counts are far below 2^52")]
        Ok(count) => metrics::gauge!("review_bot_jobs_backing_off").set(count as f64),
        Err(error) => tracing::warn!(%error, "could not count the jobs backing off"),
    }
    match cost_today(&operations).await {
        Ok((spent, reached)) => {
            metrics::gauge!("review_bot_agent_cost_today_usd").set(spent);
            let overall = reached.iter().any(|cap| cap.repository.is_none());
            metrics::gauge!("review_bot_cost_day_cap_reached", "scope" => "overall")
                .set(if overall { 1.0 } else { 0.0 });
            for repository in operations.cost_caps.repositories_with_day_caps() {
                let held = reached
                    .iter()
                    .any(|cap| cap.repository.as_deref() == Some(repository.as_str()));
                metrics::gauge!("review_bot_cost_day_cap_reached", "scope" => repository)
                    .set(if held { 1.0 } else { 0.0 });
            }
        }
        Err(error) => tracing::warn!(%error, "could not read today's agent cost"),
    }
    operations.metrics.run_upkeep();
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        operations.metrics.render(),
    )
}

/// Each job: `review_pipeline::step` for the pull request — its labels read, the attempt
/// gate (a job that failed on this head waits for its backoff, and one that
/// failed `agent.max_attempts` times is handed to a human), the job, its
/// failure or success recorded — with its lines prefixed with the pull
/// request, in a span naming it and its head commit.
fn job_runner(
    reviewer: Arc<review_pipeline::Reviewer>,
    settings: StepSettings,
    policy: AttemptPolicy,
) -> Runner {
    Arc::new(move |hit: Hit| {
        let reviewer = Arc::clone(&reviewer);
        let settings = settings.clone();
        let span = tracing::info_span!(
            "job",
            repository = %hit.repository,
            pull_request = hit.number,
            job = ?hit.job,
            head_sha = tracing::field::Empty,
        );
        Box::pin(
            async move {
                let started = Instant::now();
                let outcome = Box::pin(run_one(&reviewer, &hit, &settings, &policy)).await;
                metrics::histogram!("review_bot_step_duration_seconds")
                    .record(started.elapsed().as_secs_f64());
                outcome
            }
            .instrument(span),
        )
    })
}

/// One job, as [`job_runner`] describes.
async fn run_one(
    reviewer: &review_pipeline::Reviewer,
    hit: &Hit,
    settings: &StepSettings,
    policy: &AttemptPolicy,
) -> JobOutcome {
    let target = hit.to_string();
    let prefix = format!("{target}: ");
    let started = Instant::now();
    let progress = prefixed_progress(prefix.clone());
    let request = StepRequest {
        repository: hit.repository.clone(),
        number: hit.number,
        // The scheduler holds the pull request's lease.
        lease: false,
        attempts: Some(*policy),
    };
    let report = review_pipeline::step::step(reviewer, settings, &request, &progress).await;
    let (stepped, recorded) = match report {
        Ok(StepReport::Stepped { stepped, recorded }) => (stepped, recorded),
        Ok(gated @ StepReport::Waiting { .. }) => return JobOutcome::Skipped(gate_line(&gated)),
        Ok(gated @ StepReport::HandedOver(_)) => {
            say(&prefix, format_args!("{}", gate_line(&gated)));
            return JobOutcome::Completed;
        }
        Ok(StepReport::Busy(_) | StepReport::LeaseLost) => {
            return JobOutcome::Failed("the pull request's lease was lost".to_owned());
        }
        Err(error) => {
            if matches!(error, review_pipeline::step::StepError::Attempts(_)) {
                tracing::warn!(%error, "could not record the job's attempt");
            }
            return JobOutcome::Failed(error.to_string());
        }
    };
    let (cost, turns) = stepped.agent_spend();
    if let Some(job) = job_of(&stepped) {
        let kind = attempts::job_kind(job).as_str();
        if turns > 0 || cost > 0.0 {
            metrics::histogram!("review_bot_agent_cost_usd", "kind" => kind).record(cost);
            metrics::histogram!("review_bot_agent_turns", "kind" => kind).record(f64::from(turns));
        }
    }
    let public_error = stepped.public_error();
    let completed = conclude(stepped, &target, started.elapsed(), &prefix) == ExitCode::SUCCESS;
    match recorded {
        Recorded::NotCounted | Recorded::Success => {}
        Recorded::Retry {
            failures,
            max_attempts,
            retry_in,
            head,
        } => say(
            &prefix,
            format_args!(
                "attempt {failures} of {max_attempts} failed at {head}; the next in {} s at the \
                 earliest",
                retry_in.as_secs()
            ),
        ),
        Recorded::HandedOver {
            failures,
            comment_url,
        } => say(
            &prefix,
            format_args!("{failures} failed attempts: handed to a human ({comment_url})"),
        ),
    }
    if completed {
        JobOutcome::Completed
    } else {
        JobOutcome::Failed(public_error.unwrap_or_else(|| "the step ended on an error".to_owned()))
    }
}

/// The job a step ran (for its metrics' `kind`).
const fn job_of(stepped: &review_pipeline::step::Stepped) -> Option<review_core::labels::Job> {
    use review_core::labels::Job;
    use review_pipeline::step::Stepped;
    match stepped {
        Stepped::Nothing(_) => None,
        Stepped::Review(_) => Some(Job::Review),
        Stepped::Ci(_) => Some(Job::CiCheck),
        Stepped::Write(_) => Some(Job::Write),
    }
}

/// Progress lines as `step` prints them, each prefixed with `OWNER/REPO#N: `
/// (JSON log events in the job's span with `--log-format json`).
fn prefixed_progress(prefix: String) -> Progress {
    Progress::new(move |event| match event {
        ProgressEvent::Started { .. } => {}
        ProgressEvent::Finished {
            step,
            detail,
            elapsed,
            ok,
        } => say(
            &prefix,
            format_args!(
                "{} {step} ({:.1} s): {detail}",
                if ok { "✓" } else { "✗" },
                elapsed.as_secs_f64()
            ),
        ),
        ProgressEvent::Note { message } => say(&prefix, format_args!("  {message}")),
    })
}

/// Resolves on the first SIGTERM or SIGINT. The handlers are installed now,
/// so a signal arriving before the loop first waits is not lost.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        let name = tokio::select! {
            _ = terminate.recv() => "SIGTERM",
            _ = interrupt.recv() => "SIGINT",
        };
        crate::output::line(format_args!(
            "{name}: no more polls; letting running jobs finish"
        ));
    })
}

/// What must be true before the daemon starts: everything missing, each with
/// its fix, in one message (an exit 2); else the parsed repositories.
/// `environment` is read for `PATH` (the model credential is
/// `review::require_model_credential`'s).
fn check_start(
    config: &Config,
    environment: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Vec<WatchTarget>> {
    let mut problems = Vec::new();
    let daemon = &config.daemon;
    let mut targets = Vec::new();
    if daemon.repositories.is_empty() {
        problems.push(
            "no repositories to watch: set `repositories` in [daemon] (for example \
             repositories = [\"octo/widgets\", \"acme\"]: OWNER/REPO for one repository, OWNER \
             for all of an organisation's or user's) or REVIEW_BOT_DAEMON_REPOSITORIES=\
             octo/widgets,acme"
                .to_owned(),
        );
    }
    for entry in &daemon.repositories {
        match WatchTarget::parse(entry) {
            Ok(target) if !targets.contains(&target) => targets.push(target),
            Ok(_) => {}
            Err(error) => problems.push(format!("daemon.repositories: {error}")),
        }
    }
    if daemon.concurrency == 0 {
        problems.push("daemon.concurrency is 0: set it to at least 1 job at once".to_owned());
    }
    if config.agent.max_attempts == 0 {
        problems.push("agent.max_attempts is 0: set it to at least 1 attempt".to_owned());
    }
    if daemon.poll_interval_secs == 0 {
        problems.push("daemon.poll_interval_secs is 0: set it to at least 1 second".to_owned());
    }
    if let Err(error) = config.github_settings() {
        problems.push(format!("{error:#}"));
    }
    if let Err(error) = super::review::require_model_credential(config) {
        problems.push(error.to_string());
    }
    if !executable_exists(&config.agent.claude_path, environment("PATH").as_deref()) {
        problems.push(format!(
            "Claude Code not found: `{}` is not an executable{}; install Claude Code, or set \
             agent.claude_path (REVIEW_BOT_AGENT_CLAUDE_PATH) to its executable",
            config.agent.claude_path.display(),
            if config.agent.claude_path.components().count() == 1 {
                " on PATH"
            } else {
                ""
            }
        ));
    }
    if problems.is_empty() {
        return Ok(targets);
    }
    anyhow::bail!(
        "review-bot run cannot start:\n{}\nreview-bot.example.toml lists every key with its \
         default; `review-bot doctor` checks the whole setup.",
        problems
            .iter()
            .map(|problem| format!("  - {problem}"))
            .collect::<Vec<_>>()
            .join("\n")
    )
}

/// Whether `program` (a path, or a name looked up in `path`) is a file.
fn executable_exists(program: &std::path::Path, path: Option<&str>) -> bool {
    if program.components().count() != 1 {
        return program.is_file();
    }
    path.is_some_and(|path| {
        std::env::split_paths(path).any(|directory| directory.join(program).is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_machine_is_told_every_missing_piece_and_its_fix() {
        let config = Config::default();
        let error = check_start(&config, |_| None).unwrap_err().to_string();
        // The model credential is read from this process's environment.
        let model_key = std::env::var_os("ANTHROPIC_API_KEY").is_some();
        for expected in [
            "no repositories to watch",
            "REVIEW_BOT_DAEMON_REPOSITORIES",
            "no GitHub credential",
            if model_key { "" } else { "no model credential" },
            "Claude Code not found",
            "review-bot.example.toml",
            "review-bot doctor",
        ] {
            assert!(error.contains(expected), "{expected}: {error}");
        }
    }

    #[test]
    fn bad_entries_and_zero_limits_are_named() {
        let mut config = Config::default();
        config.daemon.repositories = vec!["octo/widgets".to_owned(), "a/b/c".to_owned()];
        config.daemon.concurrency = 0;
        let error = check_start(&config, |_| None).unwrap_err().to_string();
        assert!(error.contains("`a/b/c` is neither"), "{error}");
        assert!(error.contains("daemon.concurrency is 0"), "{error}");
        assert!(!error.contains("no repositories"), "{error}");
    }
}
