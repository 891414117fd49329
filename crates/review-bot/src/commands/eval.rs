//! `review-bot eval CASES` and `review-bot eval --from-history REPO`: the
//! review flow (as `review --local` runs it) on each case of a case set, its
//! findings scored against the case's golden findings (review-eval).
//!
//! Glue only: the configuration becomes the local flow's reviewer (no review
//! panel: each case's review goes to `review.md` in its job directory); the
//! cases come from review-eval's `case::load` or `history::build` (and
//! `history::save` with `--save`); the cases run `--jobs` at a time; progress
//! goes to standard error, one line per step; the report (text, or `--json`)
//! to standard output. Exit codes: 0 when every case ran, 1 when a case
//! failed (it is reported, its golden findings counted as missed), 2 on bad
//! usage or configuration.
//!
//! `--judge` lets golden findings without a line be matched by the agent
//! (review-eval's `judge`), its cost reported apart.
//!
//! `--compare SETTING=VALUE` runs the case set twice, as configured and with
//! the setting (`config::with_setting`: a known key, a value of its form),
//! one run after the other on the same cases, and prints both side by side
//! (`report::comparison_text`, or `{"baseline", "compared", "setting"}`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use review_eval::case::Case;
use review_eval::git::Git;
use review_eval::history::{self, HistoryOptions};
use review_eval::report;
use review_eval::run::{self, CaseResult, RunSettings};
use review_pipeline::progress::{Progress, ProgressEvent};

use crate::config;

/// `review-bot eval`'s arguments.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The case set: a `.json` case file (one case or an array) or a
    /// directory of them (see the README's "Measuring review quality").
    #[arg(
        value_name = "CASES",
        required_unless_present = "from_history",
        conflicts_with = "from_history"
    )]
    pub cases: Option<PathBuf>,

    /// How many lines off a finding may be and still hit a golden finding.
    #[arg(long, value_name = "LINES", default_value_t = review_eval::score::DEFAULT_WINDOW)]
    pub window: u32,

    /// Print the scores as JSON: `{"cases": [{"name", "matched", "missed",
    /// "extra"}], "totals": {"golden", "findings", "matched", "precision",
    /// "recall", "f1", "cost_usd", "agent_seconds", "turns"}}`.
    #[arg(long)]
    pub json: bool,

    /// How many cases run at once.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    /// Build the cases from this repository's own bug fixes: for a fix
    /// commit F, base F and a head that puts back what F changed; the golden
    /// findings are the lines that head touches.
    #[arg(long, value_name = "REPO")]
    pub from_history: Option<PathBuf>,

    /// With --from-history: only fixes committed since this date (git's
    /// `--since`: 2025-01-31, "3 months ago").
    #[arg(long, value_name = "DATE", requires = "from_history")]
    pub since: Option<String>,

    /// With --from-history: build at most this many cases.
    #[arg(long, value_name = "N", default_value_t = history::DEFAULT_LIMIT, requires = "from_history")]
    pub limit: usize,

    /// With --from-history: the commit messages that mark a fix (a
    /// case-insensitive regular expression, git's `--grep`).
    #[arg(long, value_name = "PATTERN", default_value = history::DEFAULT_GREP, requires = "from_history")]
    pub grep: String,

    /// With --from-history: the fix commits, named (SHAs or refs, separated
    /// by commas) instead of found by --grep and --since.
    #[arg(
        long,
        value_name = "SHA,…",
        value_delimiter = ',',
        requires = "from_history"
    )]
    pub commits: Vec<String>,

    /// With --from-history: skip a fix that changes more files than this.
    #[arg(long, value_name = "N", default_value_t = history::DEFAULT_MAX_FILES, requires = "from_history")]
    pub max_files: usize,

    /// With --from-history: write the cases built (a git bundle and one
    /// case file each) to this directory, so `review-bot eval DIR` repeats
    /// the run exactly.
    #[arg(long, value_name = "DIR", requires = "from_history")]
    pub save: Option<PathBuf>,

    /// Match findings to golden findings that have no line (descriptions
    /// only) with the agent: one short verdict per (finding, golden) pair on
    /// the same file, batched per case; its cost is reported apart
    /// (`judge_cost_usd`). Without it, such golden findings are an error.
    #[arg(long)]
    pub judge: bool,

    /// Run every case twice, as configured and with SETTING=VALUE (such as
    /// review.verify=true), and print both side by side; with --json:
    /// `{"baseline": {…}, "compared": {…}, "setting": "SETTING=VALUE"}`.
    #[arg(long, value_name = "SETTING=VALUE")]
    pub compare: Option<String>,
}

/// Runs `eval`.
pub fn run(args: &EvalArgs, config_file: Option<&Path>) -> anyhow::Result<ExitCode> {
    // A case set that cannot be read is said before anything else is
    // checked (the model credential, the work directory).
    if let Some(path) = &args.cases {
        let cases = review_eval::case::load(path)?;
        if !args.judge {
            review_eval::case::require_lines(&cases)?;
        }
    }
    let loaded = config::load(config_file)?;
    let compared_config = args
        .compare
        .as_deref()
        .map(|setting| {
            config::with_setting(&loaded.config, setting)
                .with_context(|| format!("--compare {setting}"))
        })
        .transpose()?;
    let reviewer = eval_reviewer(&loaded.config)?;
    let compared_reviewer = compared_config
        .as_ref()
        .map(eval_reviewer)
        .transpose()?
        .map(Arc::new);
    let run_directory = reviewer
        .settings
        .work_dir
        .join("eval")
        .join(uuid::Uuid::new_v4().to_string());
    let git_home = run_directory.join("git-home");
    std::fs::create_dir_all(&git_home)
        .with_context(|| format!("could not create {}", git_home.display()))?;
    // Absolute, since git runs in directories below it.
    let run_directory = std::path::absolute(&run_directory).unwrap_or(run_directory);
    let git_home = run_directory.join("git-home");
    let git = review_eval::git::git(
        git_home,
        reviewer.settings.git_timeout,
        reviewer.settings.containment.clone(),
    );
    let settings = |directory: &str| {
        Arc::new(RunSettings {
            scratch_dir: run_directory.join(directory),
            git: git.clone(),
            window: args.window,
            judge: args.judge,
        })
    };
    let baseline_settings = settings("cases");
    let compared_settings = settings("cases-compared");
    let reviewer = Arc::new(reviewer);
    let jobs = usize::from(args.jobs);
    let window = args.window;
    let json = args.json;
    let started = Instant::now();
    let (baseline, compared) = super::block_on(async move {
        let cases = load_cases(args, &git, &run_directory).await?;
        eprintln!(
            "eval: {} case{}, {jobs} at a time, window {window}{}",
            cases.len(),
            if cases.len() == 1 { "" } else { "s" },
            args.compare
                .as_deref()
                .map(|setting| format!("; as configured, then with {setting}"))
                .unwrap_or_default()
        );
        let baseline = run::run_cases(
            reviewer,
            baseline_settings,
            cases.clone(),
            jobs,
            Arc::new(|name: &str| case_progress(name)),
        )
        .await;
        let compared = match (compared_reviewer, args.compare.clone()) {
            (Some(compared_reviewer), Some(setting)) => Some(
                run::run_cases(
                    compared_reviewer,
                    compared_settings,
                    cases,
                    jobs,
                    Arc::new(move |name: &str| case_progress(&format!("{name} [{setting}]"))),
                )
                .await,
            ),
            _ => None,
        };
        if let Err(error) = std::fs::remove_dir_all(&run_directory) {
            tracing::warn!(%error, directory = %run_directory.display(), "could not remove eval's scratch directory");
        }
        anyhow::Ok((baseline, compared))
    })??;
    let wall = started.elapsed();
    Ok(match (&compared, &args.compare) {
        (Some(compared), Some(setting)) => {
            print_comparison(&baseline, compared, setting, json, window, wall)
        }
        _ => print(&baseline, json, window, wall),
    })
}

/// The local flow's reviewer for a configuration, without the review panel
/// (every case would replace the panel's review: each goes to its job's
/// `review.md`).
fn eval_reviewer(config: &config::Config) -> anyhow::Result<review_pipeline::local::LocalReviewer> {
    let mut reviewer = super::review_local::local_reviewer(config)?;
    reviewer.settings.panel_socket = None;
    Ok(reviewer)
}

/// The cases: loaded from CASES, or built from history (and saved).
async fn load_cases(args: &EvalArgs, git: &Git, run_directory: &Path) -> anyhow::Result<Vec<Case>> {
    if let Some(path) = &args.cases {
        return Ok(review_eval::case::load(path)?);
    }
    let repository = args
        .from_history
        .as_deref()
        .context("give CASES or --from-history REPO")?;
    let options = HistoryOptions {
        since: args.since.clone(),
        limit: args.limit,
        grep: args.grep.clone(),
        commits: args.commits.clone(),
        max_files: args.max_files,
    };
    let built = history::build(
        git,
        repository,
        &run_directory.join("history.git"),
        &options,
    )
    .await?;
    let mut counts: std::collections::BTreeMap<history::SkipReason, usize> =
        std::collections::BTreeMap::new();
    for skipped in &built.skipped {
        *counts.entry(skipped.reason).or_default() += 1;
    }
    let skipped: Vec<String> = counts
        .iter()
        .map(|(reason, count)| format!("{count} {}", reason.describe()))
        .collect();
    eprintln!(
        "from history: {} case{} built from {}; {} skipped{}",
        built.cases.len(),
        if built.cases.len() == 1 { "" } else { "s" },
        repository.display(),
        built.skipped.len(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(" ({})", skipped.join(", "))
        }
    );
    if let Some(directory) = &args.save {
        let written = history::save(git, &built, directory).await?;
        eprintln!(
            "saved {} case{} and the bundle to {} (rerun: review-bot eval {})",
            written.len().saturating_sub(1),
            if written.len() == 2 { "" } else { "s" },
            directory.display(),
            directory.display()
        );
    }
    if built.cases.is_empty() {
        anyhow::bail!(
            "no case could be built from {}'s history: no fix matched (--grep {:?}{}), or every \
             match was skipped; widen --since or --grep, or name fixes with --commits",
            repository.display(),
            args.grep,
            args.since
                .as_deref()
                .map(|since| format!(", --since {since:?}"))
                .unwrap_or_default()
        );
    }
    Ok(built.cases)
}

/// One case's progress: a line per finished step on standard error.
fn case_progress(name: &str) -> Progress {
    let name = name.to_owned();
    Progress::new(move |event| match event {
        ProgressEvent::Started { .. } => {}
        ProgressEvent::Finished {
            step,
            detail,
            elapsed,
            ok,
        } => eprintln!(
            "{name}: {} {step} ({detail}, {:.1} s)",
            if ok { "✓" } else { "✗" },
            elapsed.as_secs_f64()
        ),
        ProgressEvent::Note { message } => eprintln!("{name}: {message}"),
    })
}

/// Prints `--compare`'s report; the exit code (1 when a case failed in
/// either run).
fn print_comparison(
    baseline: &[CaseResult],
    compared: &[CaseResult],
    setting: &str,
    json: bool,
    window: u32,
    wall: Duration,
) -> ExitCode {
    report_failures(baseline, Some("as configured"));
    report_failures(compared, Some(setting));
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::comparison_json(baseline, compared, setting))
                .unwrap_or_else(|_| "{}".to_owned())
        );
    } else {
        print!(
            "{}",
            report::comparison_text(baseline, compared, setting, window)
        );
    }
    let totals = [report::Totals::of(baseline), report::Totals::of(compared)];
    overhead_line(&totals, baseline.len() + compared.len(), "case run", wall);
    if totals.iter().any(|totals| totals.failed > 0) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Each failed case on standard error (`run`: which of `--compare`'s runs).
fn report_failures(results: &[CaseResult], run: Option<&str>) {
    for result in results {
        if let Some(error) = &result.error {
            eprintln!(
                "error: case {} failed{}: {error} ({} golden finding{} counted as missed)",
                result.name,
                run.map(|run| format!(" ({run})")).unwrap_or_default(),
                result.golden.len(),
                if result.golden.len() == 1 { "" } else { "s" }
            );
        }
    }
}

/// Eval's own overhead beside the agent's time, on standard error.
fn overhead_line(totals: &[report::Totals], cases: usize, noun: &str, wall: Duration) {
    let agent: Duration = totals.iter().map(|totals| totals.agent).sum();
    let overhead: Duration = totals.iter().map(report::Totals::overhead).sum();
    #[allow(clippy::cast_precision_loss)] // A count of cases.
    let per_case = overhead.as_secs_f64() / cases.max(1) as f64;
    eprintln!(
        "eval: wall {:.1} s for {cases} {noun}{}; the agent {:.1} s; eval and the flow's own overhead {:.1} s ({per_case:.2} s per case)",
        wall.as_secs_f64(),
        if cases == 1 { "" } else { "s" },
        agent.as_secs_f64(),
        overhead.as_secs_f64(),
    );
}

/// Prints the report; the exit code.
fn print(results: &[CaseResult], json: bool, window: u32, wall: Duration) -> ExitCode {
    report_failures(results, None);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report::json_document(results))
                .unwrap_or_else(|_| "{}".to_owned())
        );
    } else {
        print!("{}", report::text_report(results, window));
    }
    let totals = report::Totals::of(results);
    overhead_line(&[totals], results.len(), "case", wall);
    if totals.failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
