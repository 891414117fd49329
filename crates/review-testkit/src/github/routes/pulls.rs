//! Pull requests: `pulls/get` (JSON, and the diff and patch media types with GitHub's 406
//! `too_large`), `pulls/list-files` (per-file patches, paginated, capped at 3,000), and
//! `pulls/list-commits` (oldest first, paginated, capped at 250 like GitHub).

use axum::http::StatusCode;

use serde_json::Value;

use super::super::api::{ApiError, Context, Reply, paginate_range};
use super::super::render::{self, PullStats};
use super::super::state::SimState;
use super::{pull_mut, pull_of, visible_repository};

/// What the `Accept` header asks `pulls/get` for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MediaType {
    Json,
    Diff,
    Patch,
}

fn media_type(accept: &str) -> MediaType {
    let accept = accept.to_ascii_lowercase();
    if accept.contains("application/vnd.github.diff")
        || accept.contains("application/vnd.github.v3.diff")
    {
        MediaType::Diff
    } else if accept.contains("application/vnd.github.patch")
        || accept.contains("application/vnd.github.v3.patch")
    {
        MediaType::Patch
    } else {
        MediaType::Json
    }
}

/// GitHub's 406 for a diff past its limits.
fn too_large(message: String) -> ApiError {
    let mut error = ApiError::new(StatusCode::NOT_ACCEPTABLE, message)
        .with_documentation("https://docs.github.com/rest/pulls/pulls#list-pull-requests-files");
    error.errors = Some(serde_json::json!([ApiError::field_error(
        "PullRequest",
        "diff",
        "too_large",
        None
    )]));
    error
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}`
pub(super) fn get(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let head_sha = state.head_sha(repository, pull)?;
    let base_sha = state.base_sha(repository, pull)?;
    let git = state.git(repository);
    let merge_base = git.merge_base(&base_sha, &head_sha)?;
    let diff = state.pull_diff(&key, &base_sha, &head_sha)?;
    match media_type(context.accept()) {
        MediaType::Diff | MediaType::Patch if diff.files.len() > state.options.diff_max_files => {
            Err(too_large(format!(
                "Sorry, the diff exceeded the maximum number of files ({}). Consider using 'List pull requests files' API or locally cloning the repository instead.",
                state.options.diff_max_files
            )))
        }
        MediaType::Diff | MediaType::Patch if diff.line_count() > state.options.diff_max_lines => {
            Err(too_large(format!(
                "Sorry, the diff exceeded the maximum number of lines ({}). Consider using 'List pull requests files' API or locally cloning the repository instead.",
                state.options.diff_max_lines
            )))
        }
        MediaType::Diff => Ok(Reply::text(
            "application/vnd.github.diff; charset=utf-8",
            diff.text.clone(),
        )),
        MediaType::Patch => {
            let from = merge_base.unwrap_or_else(|| base_sha.clone());
            Ok(Reply::text(
                "application/vnd.github.patch; charset=utf-8",
                git.format_patch(&from, &head_sha)?,
            ))
        }
        MediaType::Json => get_as_json(state, &key, number),
    }
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/files`
pub(super) fn list_files(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let head_sha = state.head_sha(repository, pull)?;
    let base_sha = state.base_sha(repository, pull)?;
    let diff = state.pull_diff(&key, &base_sha, &head_sha)?;
    let (repository, _) = pull_of(state, &key, number)?;
    let listed = diff.files.len().min(state.options.max_listed_files);
    Ok(paginate_range(context, &state.base_url, listed, |range| {
        Value::Array(
            diff.files[range]
                .iter()
                .map(|file| render::diff_entry(state, repository, &head_sha, file))
                .collect(),
        )
    }))
}

/// The most commits `pulls/list-commits` returns, however many pages are asked for.
const LISTED_COMMITS: usize = 250;

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}/commits`
pub(super) fn list_commits(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let head_sha = state.head_sha(repository, pull)?;
    let base_sha = state.base_sha(repository, pull)?;
    let git = state.git(repository);
    let mut commits = git.commits_between(&base_sha, &head_sha)?;
    commits.truncate(LISTED_COMMITS);
    let infos = commits
        .iter()
        .map(|sha| git.commit_info(sha))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(paginate_range(
        context,
        &state.base_url,
        infos.len(),
        |range| {
            Value::Array(
                infos[range]
                    .iter()
                    .map(|info| render::commit_summary(state, repository, info))
                    .collect(),
            )
        },
    ))
}

/// `PATCH /repos/{owner}/{repo}/pulls/{pull_number}`: a person (or the bot) changes the
/// title, the body, the base branch, or closes and reopens the pull request, with GitHub's
/// rules: the caller must be able to write (any token that can post here), a base branch
/// must exist, and a pull request whose head branch is gone cannot be reopened.
pub(super) fn update(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("pull_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let git = state.git(repository);
    let new_state = match context.body_str("state") {
        None => None,
        Some("open") => Some(true),
        Some("closed") => Some(false),
        Some(other) => {
            return Err(ApiError::validation_failed(vec![ApiError::field_error(
                "PullRequest",
                "state",
                "invalid",
                Some(format!("state {other:?} is not one of open, closed")),
            )]));
        }
    };
    if new_state == Some(true) && !pull.open && git.branch_sha(&pull.head_ref)?.is_none() {
        return Err(ApiError::validation_failed(vec![ApiError::field_error(
            "PullRequest",
            "state",
            "custom",
            Some("Cannot reopen a pull request whose head branch was deleted".to_owned()),
        )]));
    }
    let base = context.body_str("base").map(str::to_owned);
    if let Some(base) = &base
        && git.branch_sha(base)?.is_none()
    {
        return Err(ApiError::validation_failed(vec![ApiError::field_error(
            "PullRequest",
            "base",
            "invalid",
            Some(format!("Proposed base branch '{base}' was not found")),
        )]));
    }
    let title = context.body_str("title").map(str::to_owned);
    if title
        .as_deref()
        .is_some_and(|title| title.trim().is_empty())
    {
        return Err(ApiError::validation_failed(vec![ApiError::field_error(
            "PullRequest",
            "title",
            "missing_field",
            None,
        )]));
    }
    let body = context.body_str("body").map(str::to_owned);
    if let Some(body) = &body {
        ApiError::check_body_length("PullRequest", body)?;
    }
    let target = pull_mut(state, &key, number)?;
    if let Some(title) = title {
        target.title = title;
    }
    if let Some(body) = body {
        target.body = Some(body);
    }
    if let Some(base) = base {
        target.base_ref = base;
    }
    match new_state {
        Some(true) if !target.open => {
            target.open = true;
            target.closed_at = None;
        }
        Some(false) if target.open => {
            target.open = false;
            target.closed_at = Some(context.now);
        }
        _ => {}
    }
    target.updated_at = context.now;
    get_as_json(state, &key, number)
}

/// The pull request as `pulls/get` renders it in JSON.
fn get_as_json(state: &mut SimState, key: &str, number: u64) -> Result<Reply, ApiError> {
    let (repository, pull) = pull_of(state, key, number)?;
    let head_sha = state.head_sha(repository, pull)?;
    let base_sha = state.base_sha(repository, pull)?;
    let git = state.git(repository);
    let merge_base = git.merge_base(&base_sha, &head_sha)?;
    let commits = match &merge_base {
        Some(merge_base) => git.commits_between(merge_base, &head_sha)?.len(),
        None => 0,
    };
    let diff = state.pull_diff(key, &base_sha, &head_sha)?;
    let (repository, pull) = pull_of(state, key, number)?;
    let pull_stats = PullStats {
        commits,
        additions: diff.files.iter().map(|file| file.additions).sum(),
        deletions: diff.files.iter().map(|file| file.deletions).sum(),
        changed_files: diff.files.len(),
    };
    Ok(Reply::ok(render::pull_request(
        state, repository, pull, &head_sha, &base_sha, pull_stats,
    )))
}
