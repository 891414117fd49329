//! Commits and CI: `repos/get-commit` (JSON with stats and files, or the diff, patch and sha
//! media types), check runs for a ref, commit statuses for a ref (every one, newest first),
//! and the combined status — the newest status of each context; `pending` with
//! `total_count: 0` when there are no statuses at all, so a checks-only repository never
//! reports `success` there. `{ref}` is a SHA, a branch or a tag. What CI writes is in `checks`.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use serde_json::json;

use super::super::api::{ApiError, Context, Reply, paginate, paginate_with};
use super::super::diff::PullDiff;
use super::super::model::CommitStatus;
use super::super::render;
use super::super::state::SimState;
use super::visible_repository;

/// Resolves `{ref}` (a SHA, branch or tag) to a commit SHA.
fn resolve_ref(state: &SimState, key: &str, reference: &str) -> Result<Option<String>, ApiError> {
    let repository = state
        .repositories
        .get(key)
        .ok_or_else(ApiError::not_found)?;
    let git = state.git(repository);
    Ok(git.resolve_commit(reference)?)
}

fn no_commit(reference: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        format!("No commit found for SHA: {reference}"),
    )
}

/// `GET /repos/{owner}/{repo}/commits/{ref}`
pub(super) fn get_commit(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let reference = context.param("ref").to_owned();
    let sha = resolve_ref(state, &key, &reference)?.ok_or_else(|| no_commit(&reference))?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let git = state.git(repository);
    let info = git.commit_info(&sha)?;
    let parent = info.parents.first().map(String::as_str);
    let accept = context.accept().to_ascii_lowercase();
    if accept.contains(".sha") {
        return Ok(Reply::text(
            "application/vnd.github.sha; charset=utf-8",
            sha,
        ));
    }
    if accept.contains(".diff") {
        return Ok(Reply::text(
            "application/vnd.github.diff; charset=utf-8",
            git.patch(parent, &sha)?,
        ));
    }
    if accept.contains(".patch") {
        let text = match parent {
            Some(parent) => git.format_patch(parent, &sha)?,
            None => git.patch(None, &sha)?,
        };
        return Ok(Reply::text(
            "application/vnd.github.patch; charset=utf-8",
            text,
        ));
    }
    let diff = PullDiff::from_git(
        git.raw_diff(parent, &sha)?,
        git.numstat(parent, &sha)?,
        git.patch(parent, &sha)?,
    )?;
    Ok(Reply::ok(render::commit(
        state,
        repository,
        &info,
        &diff.files,
    )))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/check-runs`
pub(super) fn list_check_runs(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let reference = context.param("ref").to_owned();
    let sha = resolve_ref(state, &key, &reference)?.ok_or_else(|| no_commit(&reference))?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let mut runs: Vec<_> = repository
        .check_runs
        .iter()
        .filter(|run| run.head_sha == sha)
        .filter(|run| {
            context
                .query_value("check_name")
                .is_none_or(|name| run.name == name)
        })
        .filter(|run| {
            context
                .query_value("status")
                .is_none_or(|status| run.status == status)
        })
        .collect();
    // Newest first; `filter=latest` (the default) keeps the most recent run of each name.
    runs.sort_by_key(|run| std::cmp::Reverse(run.id));
    if context.query_value("filter") != Some("all") {
        let mut seen = std::collections::HashSet::new();
        runs.retain(|run| seen.insert(run.name.clone()));
    }
    let total = runs.len();
    let items = runs
        .into_iter()
        .map(|run| render::check_run(state, repository, run))
        .collect();
    Ok(paginate_with(
        context,
        &state.base_url,
        items,
        |page| json!({"total_count": total, "check_runs": page}),
    ))
}

/// The statuses of a commit, newest first.
fn statuses_for<'state>(
    state: &'state SimState,
    key: &str,
    sha: &str,
) -> Result<Vec<&'state CommitStatus>, ApiError> {
    let repository = state
        .repositories
        .get(key)
        .ok_or_else(ApiError::not_found)?;
    let mut statuses: Vec<_> = repository
        .statuses
        .iter()
        .filter(|status| status.sha == sha)
        .collect();
    statuses.sort_by_key(|status| std::cmp::Reverse(status.id));
    Ok(statuses)
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/statuses`
pub(super) fn list_statuses(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let reference = context.param("ref").to_owned();
    let Some(sha) = resolve_ref(state, &key, &reference)? else {
        return Ok(paginate(context, &state.base_url, Vec::new()));
    };
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let items = statuses_for(state, &key, &sha)?
        .into_iter()
        .map(|status| render::status(state, repository, status))
        .collect();
    Ok(paginate(context, &state.base_url, items))
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/status`
pub(super) fn combined_status(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let reference = context.param("ref").to_owned();
    let sha = resolve_ref(state, &key, &reference)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("No commit found for SHA: {reference}"),
        )
    })?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    // The latest status of each context (contexts compare case-insensitively, like GitHub's).
    let mut latest: BTreeMap<String, &CommitStatus> = BTreeMap::new();
    for status in statuses_for(state, &key, &sha)? {
        latest
            .entry(status.context.to_lowercase())
            .or_insert(status);
    }
    let states: Vec<&str> = latest
        .values()
        .map(|status| status.state.as_str())
        .collect();
    let combined = if states.is_empty() {
        "pending"
    } else if states
        .iter()
        .any(|state| matches!(*state, "error" | "failure"))
    {
        "failure"
    } else if states.contains(&"pending") {
        "pending"
    } else {
        "success"
    };
    let base = &state.base_url;
    let full_name = repository.full_name();
    Ok(Reply::ok(json!({
        "state": combined,
        "statuses": latest
            .values()
            .map(|status| render::simple_status(state, repository, status))
            .collect::<Vec<_>>(),
        "sha": sha,
        "total_count": latest.len(),
        "repository": render::minimal_repository(state, repository),
        "commit_url": format!("{base}/repos/{full_name}/commits/{sha}"),
        "url": format!("{base}/repos/{full_name}/commits/{sha}/status"),
    })))
}
