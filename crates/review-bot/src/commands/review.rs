//! `review-bot review OWNER/REPO#N [--dry-run] [--force]`: the review flow,
//! once, by hand — exactly what the daemon runs per labelled pull request.
//!
//! Glue only: the configuration becomes review-pipeline's `Reviewer`
//! (GitHub client, store, checkouts, Claude Code, prompts, build gate), the
//! flow's progress becomes one line per step on standard error (a spinner
//! while a step runs when standard error is a terminal), and its report the
//! summary line and the exit code: 0 when the flow completed (findings or
//! not, or nothing to do), 1 when it ended on an error (reported on the pull
//! request when it could be), 2 on bad usage or configuration, 3 when a build
//! command could not start on the bot's machine (not reported). `--dry-run`
//! prints the review it would post on standard output.

use std::io::IsTerminal as _;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Args;
use review_agent::prompts::Prompts;
use review_github::{GitHubClient, RepositoryName};
use review_pipeline::build_gate::BuildGateSettings;
use review_pipeline::checkout::{CheckoutSettings, Checkouts};
use review_pipeline::daemon::scheduler::{Leased, run_leased};
use review_pipeline::review::{ReviewOutcome, ReviewSummary};
use review_pipeline::{
    Progress, ProgressEvent, ReviewReport, ReviewRequest, ReviewSettings, Reviewer,
};
use review_store::Store;

use crate::config::{self, Config};

/// `review-bot review`'s arguments.
#[derive(Debug, Args)]
#[allow(clippy::struct_excessive_bools)] // Command-line flags.
pub struct ReviewArgs {
    /// The pull request: `OWNER/REPO#NUMBER` (or its GitHub URL). With
    /// `--local`: a directory of the working tree to review (default: `.`).
    #[arg(value_name = "OWNER/REPO#N", required_unless_present = "local")]
    pub pull_request: Option<String>,

    /// Do everything up to posting (checkout, build gate, both passes, merge,
    /// anchoring), then print the review on standard output instead of
    /// posting it. Nothing is posted, no label changes, nothing is recorded.
    #[arg(long)]
    pub dry_run: bool,

    /// Review the head commit even when it already has a completed review
    /// (findings posted before are still not posted twice).
    #[arg(long)]
    pub force: bool,

    /// Review the working tree's changes (committed and not, untracked files
    /// included) against `--base`, with no GitHub: findings printed, and
    /// shown in the review panel when one listens. Nothing is written to the
    /// repository.
    #[arg(long, conflicts_with_all = ["dry_run", "force"])]
    pub local: bool,

    /// With `--local`: the revision to review against (default: the merge
    /// base of HEAD and the default branch: origin/HEAD, else main, else master).
    #[arg(long, value_name = "REF", requires = "local")]
    pub base: Option<String>,

    /// With `--local`: print the findings document (schema v1.0) instead of a table.
    #[arg(long, requires = "local")]
    pub json: bool,

    /// With `--local`: the GitHub repository the working tree is a clone of,
    /// so its `[repositories."OWNER/REPO".build]` commands from the
    /// configuration are run (without it: the working tree's own
    /// `.review-bot.toml`, else CLAUDE.md/README.md).
    #[arg(long, value_name = "OWNER/REPO", requires = "local")]
    pub repository: Option<String>,
}

/// Parses `OWNER/REPO#N` or `https://HOST/OWNER/REPO/pull/N`.
pub(crate) fn parse_target(text: &str) -> anyhow::Result<(RepositoryName, u64)> {
    let usage = || {
        anyhow::anyhow!(
            "`{text}` is not a pull request: write OWNER/REPO#NUMBER (for example \
             octo/widgets#42) or the pull request's URL"
        )
    };
    let text = text.trim();
    let (repository, number) = if let Some((repository, number)) = text.rsplit_once('#') {
        (repository.to_owned(), number)
    } else if let Some(rest) = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
    {
        let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
        match parts.as_slice() {
            [_host, owner, name, "pull", number, ..] => (format!("{owner}/{name}"), *number),
            _ => return Err(usage()),
        }
    } else {
        return Err(usage());
    };
    let number: u64 = number.parse().map_err(|_| usage())?;
    if number == 0 {
        return Err(usage());
    }
    let repository = RepositoryName::parse(&repository).map_err(|_| usage())?;
    Ok((repository, number))
}

/// Runs `review`.
pub fn run(args: &ReviewArgs, config_file: Option<&std::path::Path>) -> anyhow::Result<ExitCode> {
    if args.local {
        return super::review_local::run(args, config_file);
    }
    let (repository, number) = parse_target(args.pull_request.as_deref().unwrap_or_default())?;
    let loaded = config::load(config_file)?;
    let parts = Parts::resolve(loaded)?;
    let target = format!("{repository}#{number}");
    let interactive = std::io::stderr().is_terminal();
    let started = Instant::now();
    let request = ReviewRequest {
        repository,
        number,
        dry_run: args.dry_run,
        force: args.force,
        from_label: false,
    };
    let outcome = super::block_on(async move {
        let reviewer = parts.reviewer(&request.repository).await?;
        let printer = StepPrinter::new(interactive);
        let progress = printer.progress();
        let result = if request.dry_run {
            Ok(Leased::Ran(reviewer.review(&request, &progress).await))
        } else {
            // Under the pull request's lease, as a daemon's job: never at the
            // same time as a daemon working on it.
            run_leased(
                &reviewer.store,
                &request.repository.to_string(),
                request.number,
                review_store::JobKind::Review,
                Box::pin(reviewer.review(&request, &progress)),
            )
            .await
        };
        printer.finish();
        reviewer.store.close().await;
        anyhow::Ok(result)
    })?;
    match outcome? {
        Ok(Leased::Ran(outcome)) => Ok(report(outcome, &target, started.elapsed(), "")),
        Ok(Leased::Busy(lease)) => {
            eprintln!("error: {:#}", busy(&target, lease.as_ref()));
            Ok(ExitCode::from(1))
        }
        Ok(Leased::LeaseLost) => {
            eprintln!("error: {:#}", lease_lost(&target));
            Ok(ExitCode::from(1))
        }
        Err(error) => {
            eprintln!("error: could not claim {target} in the store: {error}");
            Ok(ExitCode::from(1))
        }
    }
}

/// Another process holds the pull request's lease.
pub(crate) fn busy(target: &str, lease: Option<&review_store::Lease>) -> anyhow::Error {
    anyhow::anyhow!(
        "another review-bot process is working on {target}{}; nothing was done: try again when it \
         has finished (a daemon's job, or a `step` or `review` by hand)",
        lease.map_or_else(String::new, |lease| format!(
            " ({}, its lease held for {} s more)",
            lease.holder,
            lease.remaining.as_secs()
        ))
    )
}

/// The lease could not be renewed while the work ran.
pub(crate) fn lease_lost(target: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "stopped: the lease on {target} could not be renewed (the store was unreachable past its \
         expiry, or another process took it over); run the command again"
    )
}

/// Everything `review` resolves from the configuration before it starts:
/// every configuration mistake is found here and is an exit 2.
pub(crate) struct Parts {
    pub(crate) config: Config,
    prompts: Prompts,
    github: review_github::ClientSettings,
    work_dir: std::path::PathBuf,
    database_url: String,
    claude: review_agent::claude::ClaudeCodeSettings,
    mcp_binary: std::path::PathBuf,
}

impl Parts {
    pub(crate) fn resolve(loaded: config::Loaded) -> anyhow::Result<Self> {
        let config = loaded.config;
        let environment = |name: &str| std::env::var(name).ok();
        require_model_credential(&config)?;
        let prompts = Prompts::load(config.agent.prompts_dir.as_deref())
            .context("the prompts directory (agent.prompts_dir) cannot be used")?;
        let mcp_binary = std::env::current_exe().context(
            "could not find review-bot's own executable, which serves the agent's MCP tools",
        )?;
        let mut claude = config.claude_settings(environment);
        claude.confinement = config.agent_confinement(&claude.executable)?;
        refuse_without_confinement(&config, &claude.containment)?;
        Ok(Self {
            github: config.github_settings()?,
            work_dir: config.work_dir()?,
            database_url: config.database_url()?,
            claude,
            prompts,
            mcp_binary,
            config,
        })
    }

    /// The reviewer, with its clients opened.
    pub(crate) async fn reviewer(self, repository: &RepositoryName) -> anyhow::Result<Reviewer> {
        let config = &self.config;
        // octocrab needs the runtime to exist when the client is made.
        let github = GitHubClient::new(self.github)
            .context("could not set up the GitHub client ([github] in the configuration)")?;
        let store = Store::open(&self.database_url)
            .await
            .context("could not open the store ([store] database_url)")?;
        let containment = self.claude.containment.clone();
        let mut checkout_settings = CheckoutSettings::new(&self.work_dir);
        checkout_settings.git_timeout = Duration::from_secs(config.git.timeout_secs);
        checkout_settings.containment = containment.clone();
        let checkouts = Checkouts::new(checkout_settings)
            .context("could not prepare the work directory for checkouts (work_dir)")?;
        match checkouts.prune_stale().await {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "removed worktrees of jobs that died"),
            Err(error) => tracing::warn!(%error, "could not prune stale worktrees"),
        }
        // Who the bot is: its own reviews, replies and thread ids are told apart
        // by this login, and review cycles are counted with it, so no job runs
        // without it (issue 25: with a PAT and no setting, cycles were never
        // counted).
        let bot_login = match &config.github.bot_login {
            Some(login) if !login.trim().is_empty() => login.trim().to_owned(),
            _ => github.bot_login(repository).await.with_context(|| {
                "could not find out which login the bot posts as (GET /user for a personal \
                 access token, the installation for a GitHub App); set github.bot_login \
                 (REVIEW_BOT_GITHUB_BOT_LOGIN) to it"
            })?,
        };
        let bot_login = Some(bot_login);
        let build_gate = config.build_gate_settings(
            BuildGateSettings::new(Duration::from_secs(config.review.build_timeout_secs))
                .with_containment(containment),
        );
        Ok(Reviewer {
            github,
            store,
            checkouts,
            claude: review_agent::claude::ClaudeCode::new(self.claude),
            prompts: self.prompts,
            settings: ReviewSettings {
                work_dir: self.work_dir,
                mcp_binary: self.mcp_binary,
                mcp_tool_timeout: Duration::from_secs(config.agent.mcp_tool_timeout_secs),
                build_gate,
                build_commands: config.operator_commands(),
                bot_login,
                runs_pruning: config.sandbox.runs_pruning(),
                noise: config.operator_noise(),
                cost_caps: config.cost_caps(),
                verify: config.review.verify,
            },
        })
    }
}

/// Runs `bwrap ARGUMENTS true`, bounded (a bubblewrap that hangs is killed
/// after 30 s); what went wrong, if anything.
fn confined_true(
    bwrap: &std::path::Path,
    arguments: Vec<std::ffi::OsString>,
) -> Result<(), String> {
    use std::io::Read as _;
    const LIMIT: Duration = Duration::from_secs(30);
    let mut child = std::process::Command::new(bwrap)
        .args(arguments)
        .arg("true")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|error| format!("cannot start {}: {error}", bwrap.display()))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < LIMIT => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{} did not finish within {} s",
                    bwrap.display(),
                    LIMIT.as_secs()
                ));
            }
            Err(error) => return Err(format!("cannot wait for {}: {error}", bwrap.display())),
        }
    };
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = pipe.read_to_string(&mut stderr);
    }
    Err(stderr.trim().to_owned())
}

/// The agent needs a model credential: `ANTHROPIC_API_KEY`, or a logged-in
/// Claude Code's directory (`agent.config_dir`). Missing → an exit 2 saying so.
pub(crate) fn require_model_credential(config: &Config) -> anyhow::Result<()> {
    let api_key = std::env::var("ANTHROPIC_API_KEY").is_ok_and(|key| !key.trim().is_empty());
    if api_key || config.agent.config_dir.is_some() {
        return Ok(());
    }
    anyhow::bail!(
        "no model credential: export ANTHROPIC_API_KEY, or set agent.config_dir \
         (REVIEW_BOT_AGENT_CONFIG_DIR) to a logged-in Claude Code's directory; \
         `review-bot doctor` checks the whole setup"
    )
}

/// With `sandbox.mode = "required"`, starts one confined `true` the way a
/// build starts: where bubblewrap cannot confine (missing, user namespaces
/// off, an old kernel), nothing may run, and this is an exit 2 that names the
/// cause and every fix — before any GitHub request or agent run.
pub(crate) fn refuse_without_confinement(
    config: &Config,
    containment: &review_sandbox::Containment,
) -> anyhow::Result<()> {
    let Some(confinement) = config.build_confinement() else {
        return Ok(());
    };
    let review_sandbox::Containment::PidNamespace { bwrap } = containment else {
        anyhow::bail!(
            "sandbox.mode = \"required\" needs agent.containment = \"bubblewrap\", or set \
             sandbox.mode = \"off\" for trusted repositories only"
        );
    };
    let arguments = confinement
        .bwrap_arguments()
        .map_err(|error| anyhow::anyhow!("cannot confine pull-request code: {error}"))?;
    let problem = match confined_true(bwrap, arguments) {
        Ok(()) => return Ok(()),
        Err(problem) => problem,
    };
    anyhow::bail!(
        "refusing to run: pull-request code must run confined (sandbox.mode = \"required\") \
         and bubblewrap cannot confine it here: {problem}. To fix: {}; or set sandbox.mode = \
         \"off\" (REVIEW_BOT_SANDBOX_MODE=off) for trusted repositories only. \
         `review-bot doctor` shows the sandbox checks.",
        review_sandbox::CONTAINMENT_FIXES
    )
}

/// One line for the operator, after `prefix` (`OWNER/REPO#N: ` in the
/// daemon, where jobs' lines interleave; empty for a command run by hand).
pub(crate) fn say(prefix: &str, text: impl std::fmt::Display) {
    crate::output::line(format_args!("{prefix}{text}"));
}

/// Prints the outcome and chooses the exit code.
pub(crate) fn report(
    outcome: Result<ReviewReport, review_pipeline::ReviewFailure>,
    target: &str,
    wall: Duration,
    prefix: &str,
) -> ExitCode {
    match outcome {
        Ok(ReviewReport::NothingToDo { reason }) => {
            say(prefix, format_args!("nothing to do: {reason}"));
            ExitCode::SUCCESS
        }
        Ok(ReviewReport::AlreadyReviewed { head_sha, outcome }) => {
            say(
                prefix,
                format_args!(
                    "{target} at {} already has a completed review ({outcome}); nothing to do \
                 (--force reviews it again)",
                    review_pipeline::review::short_sha(&head_sha)
                ),
            );
            ExitCode::SUCCESS
        }
        Ok(ReviewReport::DryRun { plan, summary }) => {
            print!("{}", plan.render());
            say(
                prefix,
                format_args!("dry run, nothing posted: {}", summary_line(&summary, wall)),
            );
            ExitCode::SUCCESS
        }
        Ok(ReviewReport::Completed(summary)) => {
            say(prefix, format_args!("{}", summary_line(&summary, wall)));
            ExitCode::SUCCESS
        }
        Err(failure) => {
            // The error's text already carries its causes.
            say(prefix, format_args!("error: {}", failure.error));
            let environment = matches!(
                failure.error,
                review_pipeline::review::ReviewError::Environment { .. }
            );
            match failure.reported {
                Some(url) => say(prefix, format_args!("reported on the pull request: {url}")),
                None if environment => say(
                    prefix,
                    format_args!(
                        "not reported on the pull request: it is not the author's to fix                          (the daemon retries it with the attempt backoff)"
                    ),
                ),
                None => say(
                    prefix,
                    format_args!("the failure could not be reported on the pull request"),
                ),
            }
            say(
                prefix,
                format_args!("{}", summary_line(&failure.summary, wall)),
            );
            if environment {
                // The bot's machine cannot build the repository: the
                // operator's to fix (see README, exit codes).
                ExitCode::from(ENVIRONMENT_FAILURE)
            } else {
                ExitCode::from(1)
            }
        }
    }
}

/// The exit status of `review` and `step` when a build command could not
/// start on the bot's machine (a program or toolchain is missing): not the
/// pull request's failure, nothing was posted, the operator must act.
pub(crate) const ENVIRONMENT_FAILURE: u8 = 3;

/// The last line: where the review is, what it posted, what it cost.
fn summary_line(summary: &ReviewSummary, wall: Duration) -> String {
    let outcome = match summary.outcome {
        Some(ReviewOutcome::Approved) => "LGTM",
        Some(ReviewOutcome::ChangesRequested) => "changes requested",
        Some(ReviewOutcome::BuildFailed) => "build failed",
        None => "not reviewed",
    };
    let mut parts = vec![outcome.to_owned()];
    if let Some(url) = &summary.url {
        parts.push(url.clone());
    }
    parts.push(format!(
        "{} inline comment{}",
        summary.inline_comments,
        if summary.inline_comments == 1 {
            ""
        } else {
            "s"
        }
    ));
    if summary.findings_withheld > 0 {
        parts.push(format!(
            "{} withheld as unlikely",
            summary.findings_withheld
        ));
    }
    parts.push(format!(
        "{} repl{}",
        summary.replies_posted,
        if summary.replies_posted == 1 {
            "y"
        } else {
            "ies"
        }
    ));
    parts.push(format!(
        "label {}",
        summary.label.as_deref().unwrap_or("unchanged")
    ));
    parts.push(format!(
        "agent ${:.2}, {}, {:.1} s",
        summary.agent_cost_usd,
        review_pipeline::progress::turns(summary.agent_turns),
        summary.agent_time.as_secs_f64()
    ));
    parts.push(format!("wall {:.1} s", wall.as_secs_f64()));
    if summary.resumed {
        parts.push("resumed".to_owned());
    }
    parts.join(" · ")
}

/// Prints progress: a spinner per running step on a terminal, one plain line
/// per finished step otherwise.
pub(crate) struct StepPrinter {
    spinner: Option<Arc<Mutex<Option<indicatif::ProgressBar>>>>,
}

impl StepPrinter {
    pub(crate) fn new(interactive: bool) -> Self {
        Self {
            spinner: interactive.then(|| Arc::new(Mutex::new(None))),
        }
    }

    pub(crate) fn progress(&self) -> Progress {
        let spinner = self.spinner.clone();
        Progress::new(move |event| match event {
            ProgressEvent::Started { step } => {
                if let Some(spinner) = &spinner {
                    let bar = indicatif::ProgressBar::new_spinner();
                    bar.set_message(step);
                    bar.enable_steady_tick(Duration::from_millis(100));
                    if let Some(old) = spinner.lock().expect("spinner lock").replace(bar) {
                        old.finish_and_clear();
                    }
                }
            }
            ProgressEvent::Finished {
                step,
                detail,
                elapsed,
                ok,
            } => {
                if let Some(spinner) = &spinner
                    && let Some(bar) = spinner.lock().expect("spinner lock").take()
                {
                    bar.finish_and_clear();
                }
                eprintln!(
                    "{} {step} ({:.1} s): {detail}",
                    if ok { "✓" } else { "✗" },
                    elapsed.as_secs_f64()
                );
            }
            ProgressEvent::Note { message } => {
                if let Some(spinner) = &spinner
                    && let Some(bar) = spinner.lock().expect("spinner lock").as_ref()
                {
                    bar.println(format!("  {message}"));
                    return;
                }
                eprintln!("  {message}");
            }
        })
    }

    pub(crate) fn finish(&self) {
        if let Some(spinner) = &self.spinner
            && let Some(bar) = spinner.lock().expect("spinner lock").take()
        {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_in_both_forms_and_bad_ones_say_how() {
        let (repository, number) = parse_target("octo/widgets#42").unwrap();
        assert_eq!(
            (repository.to_string(), number),
            ("octo/widgets".to_owned(), 42)
        );
        let (repository, number) =
            parse_target("https://github.com/octo/widgets/pull/7/files").unwrap();
        assert_eq!(
            (repository.to_string(), number),
            ("octo/widgets".to_owned(), 7)
        );
        for bad in [
            "octo/widgets",
            "octo#1",
            "octo/widgets#x",
            "octo/widgets#0",
            "#3",
            "",
        ] {
            let error = parse_target(bad).unwrap_err().to_string();
            assert!(error.contains("OWNER/REPO#NUMBER"), "{bad}: {error}");
        }
    }
}
