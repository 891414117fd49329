//! One case through the review flow, and a case set in parallel.
//!
//! Each case gets a scratch clone of its repository under the run's
//! directory, named after the case: `git init`, the source's object
//! directories borrowed through `objects/info/alternates` when it is a
//! directory (nothing copied, nothing written to it), every ref fetched
//! (`+refs/*:refs/*`, from a directory or a bundle), `head` checked out
//! detached. Then review-pipeline's local flow reviews it against `base`
//! exactly as `review --local --base BASE` does — build gate, both passes,
//! merge, anchoring; no GitHub, no store — and the findings (every line
//! comment, inline or "Outside the diff") are scored. The clone is removed
//! after; the flow's job directory (transcripts, build logs, `review.md`)
//! stays under `WORK/local/`.
//!
//! With the judge (`RunSettings::judge`), the findings are then matched to
//! the golden findings without a line by [`crate::judge`], its cost kept
//! apart.
//!
//! A case that fails — a missing repository or ref, a failed build, a
//! failed agent run, a failed judge — is reported failed with the reason,
//! and its golden findings count as missed.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use review_pipeline::local::{LocalOutcome, LocalRequest, LocalReviewer};
use review_pipeline::progress::Progress;

use crate::case::{Case, GoldenFinding};
use crate::git::Git;
use crate::score::{self, Finding, Matching};

/// What a case run needs besides the reviewer.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Where the scratch clones go (one directory per case, removed after).
    pub scratch_dir: PathBuf,
    /// The git that makes the clones.
    pub git: Git,
    /// The matching window, in lines.
    pub window: u32,
    /// `--judge`: golden findings without a line are matched by the judge.
    pub judge: bool,
}

/// What came of one case.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// The case's name.
    pub name: String,
    /// Its golden findings.
    pub golden: Vec<GoldenFinding>,
    /// The review's findings (empty when the case failed).
    pub findings: Vec<Finding>,
    /// Which hit which.
    pub matching: Matching,
    /// Why the case failed; `None` when the review ran.
    pub error: Option<String>,
    /// A remark on a case that ran (`base and head do not differ`).
    pub note: Option<String>,
    /// What the agent passes cost, in US dollars.
    pub cost_usd: f64,
    /// The agent's own time, as it reports it.
    pub agent: Duration,
    /// Turns the agent took.
    pub turns: u32,
    /// The case's wall time: clone, gate, passes, scoring, clean-up.
    pub wall: Duration,
    /// Pairs the judge decided (0 without `--judge`).
    pub judge_pairs: usize,
    /// What the judge cost, in US dollars.
    pub judge_cost_usd: f64,
    /// The judge's time, as the agent reports it.
    pub judge_time: Duration,
    /// The flow's job directory, when it got that far.
    pub job_directory: Option<PathBuf>,
}

impl CaseResult {
    /// A failed case: every golden finding missed.
    pub fn failed(case: &Case, error: String, wall: Duration) -> Self {
        Self {
            name: case.name.clone(),
            matching: score::match_findings(&case.golden, &[], 0),
            golden: case.golden.clone(),
            findings: Vec::new(),
            error: Some(error),
            note: None,
            cost_usd: 0.0,
            agent: Duration::ZERO,
            turns: 0,
            wall,
            judge_pairs: 0,
            judge_cost_usd: 0.0,
            judge_time: Duration::ZERO,
            job_directory: None,
        }
    }

    /// The time that was neither the agent's nor the judge's: eval's and the
    /// flow's own overhead.
    pub fn overhead(&self) -> Duration {
        self.wall
            .saturating_sub(self.agent)
            .saturating_sub(self.judge_time)
    }
}

/// The findings of a findings document: every line comment.
pub fn findings_of(findings: &review_core::findings::Findings) -> Vec<Finding> {
    findings
        .line_comments
        .iter()
        .map(|comment| Finding {
            file: comment.file.clone(),
            line: comment.line,
            start_line: comment.start_line,
            side: comment.side(),
            title: comment.title.clone(),
            confidence: comment.confidence,
        })
        .collect()
}

/// Runs every case, up to `jobs` at once; the results in the cases' order.
/// `progress` gives each case's progress sink by name.
pub async fn run_cases(
    reviewer: Arc<LocalReviewer>,
    settings: Arc<RunSettings>,
    cases: Vec<Case>,
    jobs: usize,
    progress: Arc<dyn Fn(&str) -> Progress + Send + Sync>,
) -> Vec<CaseResult> {
    let permits = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, case) in cases.iter().cloned().enumerate() {
        let (reviewer, settings, permits, progress) = (
            Arc::clone(&reviewer),
            Arc::clone(&settings),
            Arc::clone(&permits),
            Arc::clone(&progress),
        );
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await;
            let sink = progress(&case.name);
            (index, run_case(&reviewer, &settings, &case, &sink).await)
        });
    }
    let mut results: Vec<Option<CaseResult>> = vec![None; cases.len()];
    while let Some(joined) = tasks.join_next().await {
        match joined {
            Ok((index, result)) => results[index] = Some(result),
            Err(error) => tracing::error!(%error, "an eval case's task ended abnormally"),
        }
    }
    results
        .into_iter()
        .zip(&cases)
        .map(|(result, case)| {
            result.unwrap_or_else(|| {
                CaseResult::failed(
                    case,
                    "the case's task ended abnormally".to_owned(),
                    Duration::ZERO,
                )
            })
        })
        .collect()
}

/// Runs one case (see the module documentation); never fails: a failure is
/// a failed [`CaseResult`].
pub async fn run_case(
    reviewer: &LocalReviewer,
    settings: &RunSettings,
    case: &Case,
    progress: &Progress,
) -> CaseResult {
    let started = Instant::now();
    let clone = settings.scratch_dir.join(&case.name);
    let prepared = prepare_clone(&settings.git, case, &clone, progress).await;
    let mut result = match prepared {
        Err(error) => CaseResult::failed(case, error, Duration::ZERO),
        Ok(base_sha) => {
            let request = LocalRequest {
                path: clone.clone(),
                base: Some(base_sha),
                title: case.title.clone(),
                body: case.body.clone(),
            };
            match reviewer.review(&request, progress).await {
                Err(error) => CaseResult::failed(case, error.to_string(), Duration::ZERO),
                Ok(report) => {
                    let mut result = CaseResult::failed(case, String::new(), Duration::ZERO);
                    result.error = None;
                    result.cost_usd = report.agent_cost_usd;
                    result.turns = report.agent_turns;
                    result.agent = report.timings.agent;
                    result.job_directory = Some(report.job_directory.clone());
                    match &report.outcome {
                        LocalOutcome::NoChanges => {
                            result.note = Some("base and head do not differ".to_owned());
                        }
                        LocalOutcome::BuildFailed { .. } => {
                            result.error = Some(format!(
                                "the build or the tests failed on the head, so no review was made \
                                 (see {}/build)",
                                report.job_directory.display()
                            ));
                        }
                        LocalOutcome::Reviewed { findings, .. } => {
                            result.findings = findings_of(findings);
                            judge_and_score(reviewer, settings, case, &mut result, progress).await;
                        }
                    }
                    result
                }
            }
        }
    };
    if let Err(error) = remove_directory(clone.clone()).await {
        tracing::warn!(%error, clone = %clone.display(), "could not remove an eval case's clone");
    }
    result.wall = started.elapsed();
    progress.note(match &result.error {
        Some(error) => format!("failed: {error}"),
        None => format!(
            "scored: {} matched, {} missed, {} extra; agent {:.1} s, overhead {:.1} s",
            result.matching.matched.len(),
            result.matching.missed.len(),
            result.matching.extra.len(),
            result.agent.as_secs_f64(),
            result.overhead().as_secs_f64()
        ),
    });
    result
}

/// Matches the findings of `result` to the golden findings, asking the
/// judge about those without a line first when `--judge` is on. A judge
/// that fails fails the case (its golden findings count as missed).
async fn judge_and_score(
    reviewer: &LocalReviewer,
    settings: &RunSettings,
    case: &Case,
    result: &mut CaseResult,
    progress: &Progress,
) {
    let mut edges = Vec::new();
    if settings.judge && !crate::judge::pairs(&case.golden, &result.findings).is_empty() {
        let step = progress.step("judge");
        let claude = review_agent::claude::ClaudeCode::new(reviewer.claude.clone());
        let directory = settings.scratch_dir.join("judge").join(&case.name);
        match crate::judge::judge(&claude, &directory, &case.golden, &result.findings).await {
            Ok(judgement) => {
                step.done(format!(
                    "{} of {} pairs match, ${:.4}",
                    judgement.edges.len(),
                    judgement.pairs,
                    judgement.spend.cost_usd
                ));
                result.judge_pairs = judgement.pairs;
                result.judge_cost_usd = judgement.spend.cost_usd;
                result.judge_time = judgement.spend.duration;
                edges = judgement.edges;
            }
            Err(error) => {
                step.failed(error.to_string());
                result.error = Some(error.to_string());
                result.findings.clear();
            }
        }
        if let Err(error) = remove_directory(directory.clone()).await {
            tracing::warn!(%error, directory = %directory.display(), "could not remove the judge's directory");
        }
    }
    result.matching =
        score::match_findings_judged(&case.golden, &result.findings, settings.window, &edges);
}

/// Makes the scratch clone with `head` checked out; the base's SHA, or why not.
async fn prepare_clone(
    git: &Git,
    case: &Case,
    clone: &Path,
    progress: &Progress,
) -> Result<String, String> {
    let step = progress.step("clone");
    match prepare_clone_in(git, case, clone).await {
        Ok((base, head)) => {
            step.done(format!("base {} head {}", short(&base), short(&head)));
            Ok(base)
        }
        Err(error) => {
            step.failed(error.clone());
            Err(error)
        }
    }
}

#[allow(clippy::too_many_lines)] // One linear sequence of git steps.
async fn prepare_clone_in(
    git: &Git,
    case: &Case,
    clone: &Path,
) -> Result<(String, String), String> {
    let source = &case.repository;
    let metadata = std::fs::metadata(source).map_err(|error| {
        format!(
            "the repository {} cannot be read: {error}; give a git directory or a git bundle",
            source.display()
        )
    })?;
    let parent = clone.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(parent)
        .map_err(|error| format!("could not create {}: {error}", parent.display()))?;
    if clone.exists() {
        remove_directory(clone.to_owned())
            .await
            .map_err(|error| format!("could not clear {}: {error}", clone.display()))?;
    }
    let clone_argument = clone.display().to_string();
    // HEAD on a branch no source has, so fetching every ref leaves it
    // unborn and the checkout starts from an empty tree.
    git.run(
        parent,
        &[
            "init",
            "--quiet",
            "--template=",
            "--initial-branch=review-bot-eval-unborn",
            &clone_argument,
        ],
    )
    .await
    .map_err(|error| error.to_string())?;
    if metadata.is_dir() {
        // Borrow the source's objects (and those it borrows) instead of copying them.
        let objects = git
            .line(
                source,
                &[
                    "rev-parse",
                    "--path-format=absolute",
                    "--git-path",
                    "objects",
                ],
            )
            .await
            .map_err(|error| format!("{} is not a git repository: {error}", source.display()))?;
        let mut lines = vec![objects.clone()];
        lines.extend(alternates_of(Path::new(&objects)));
        let path = clone.join(".git/objects/info/alternates");
        std::fs::create_dir_all(clone.join(".git/objects/info"))
            .and_then(|()| std::fs::write(&path, lines.join("\n") + "\n"))
            .map_err(|error| format!("could not write {}: {error}", path.display()))?;
    } else if !metadata.is_file() {
        return Err(format!(
            "the repository {} is neither a directory nor a file; give a git directory or a git bundle",
            source.display()
        ));
    }
    let source_argument = source.as_os_str();
    let fetch: Vec<&OsStr> = [
        OsStr::new("fetch"),
        OsStr::new("--quiet"),
        OsStr::new("--no-tags"),
        OsStr::new("--update-head-ok"),
        OsStr::new("--"),
        source_argument,
        OsStr::new("+refs/*:refs/*"),
    ]
    .to_vec();
    let run = git
        .run_raw(clone, &fetch, None, &[])
        .await
        .map_err(|error| error.to_string())?;
    if run.code != Some(0) {
        return Err(format!(
            "could not read the repository {}: {}",
            source.display(),
            run.stderr
        ));
    }
    let mut shas = Vec::new();
    for (field, revision) in [("base", &case.base), ("head", &case.head)] {
        let sha = git
            .commit(clone, revision)
            .await
            .map_err(|error| error.to_string())?
            .ok_or_else(|| {
                format!(
                    "{field} {revision:?} is not a commit in {}",
                    source.display()
                )
            })?;
        shas.push(sha);
    }
    let head = shas.pop().unwrap_or_default();
    let base = shas.pop().unwrap_or_default();
    git.run(clone, &["checkout", "--quiet", "--detach", head.as_str()])
        .await
        .map_err(|error| error.to_string())?;
    Ok((base, head))
}

/// The object directories an `objects/info/alternates` names (absolute).
fn alternates_of(objects: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(objects.join("info/alternates")) else {
        return Vec::new();
    };
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| objects.join(line).canonicalize().ok())
        .map(|path| path.display().to_string())
        .collect()
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

async fn remove_directory(path: PathBuf) -> Result<(), std::io::Error> {
    tokio::task::spawn_blocking(move || match std::fs::remove_dir_all(&path) {
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    })
    .await
    .unwrap_or_else(|error| Err(std::io::Error::other(error)))
}
