//! What CI systems write: commit statuses (`repos/create-commit-status`, any token that can
//! write; an unknown `state` is GitHub's 422 `Validation Failed` naming the field) and check
//! runs (`checks/create`, `checks/update`: GitHub Apps only — a personal access token gets
//! GitHub's 403 `You must authenticate via a GitHub App.`; `checks/get` for anyone who can
//! read). The read side (`commits/{ref}/check-runs`, `/status`, `/statuses`) is in `commits`.

use axum::http::StatusCode;
use chrono::{DateTime, Utc};

use super::super::api::{Actor, ApiError, Context, Reply};
use super::super::model::{CheckRun, CommitStatus};
use super::super::render;
use super::super::state::SimState;
use super::visible_repository;
use crate::openapi::{OpenApi, Strictness};

/// The states a commit status can have.
const STATUS_STATES: [&str; 4] = ["error", "failure", "pending", "success"];

/// `POST /repos/{owner}/{repo}/statuses/{sha}`. The server leaves this body's validation to
/// the handler: GitHub answers a bad `state` with its model validation error, not with the
/// schema's `Invalid request`.
pub(super) fn create_status(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let key = visible_repository(state, context)?;
    let state_name = context.body_str("state").unwrap_or_default().to_owned();
    if !STATUS_STATES.contains(&state_name.as_str()) {
        return Err(ApiError::validation_failed(vec![ApiError::field_error(
            "Status",
            "state",
            "custom",
            Some("state is not included in the list".to_owned()),
        )]));
    }
    invalid_request("repos/create-commit-status", context)?;
    let reference = context.param("sha").to_owned();
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let sha = state
        .git(repository)
        .resolve_commit(&reference)?
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("No commit found for SHA: {reference}"),
            )
        })?;
    let optional = |name: &str| context.body_str(name).map(str::to_owned);
    let status = CommitStatus {
        id: state.next_id(),
        sha,
        state: state_name,
        context: optional("context").unwrap_or_else(|| "default".to_owned()),
        description: optional("description"),
        target_url: optional("target_url"),
        creator: login,
        created_at: context.now,
    };
    let repository = state
        .repositories
        .get_mut(&key)
        .ok_or_else(ApiError::not_found)?;
    repository.statuses.push(status.clone());
    let repository = &state.repositories[&key];
    let location = format!(
        "{}/repos/{}/statuses/{}",
        state.base_url,
        repository.full_name(),
        status.sha
    );
    Ok(Reply::created(
        render::status(state, repository, &status),
        Some(location),
    ))
}

/// The schema check the server skipped for an operation whose handler validates its body:
/// GitHub's 422 `Invalid request` listing every violation.
fn invalid_request(operation_id: &str, context: &Context) -> Result<(), ApiError> {
    let body = context.body.clone().unwrap_or(serde_json::Value::Null);
    let violations = OpenApi::github_subset()
        .validate_request(operation_id, &body, Strictness::Lenient)
        .unwrap_or_else(|error| vec![error.to_string()]);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Invalid request.\n\n{}", violations.join("\n")),
        ))
    }
}

/// The app behind an installation token, or GitHub's 403 for any other credential.
fn require_app(state: &SimState, context: &Context) -> Result<u64, ApiError> {
    match &context.actor {
        Actor::Installation {
            installation_id, ..
        } => state
            .installations
            .get(installation_id)
            .map(|installation| installation.app_id)
            .ok_or_else(ApiError::bad_credentials),
        _ => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "You must authenticate via a GitHub App.",
        )),
    }
}

/// A `date-time` field of the body (the schema already checked its format).
fn body_time(context: &Context, name: &str) -> Option<DateTime<Utc>> {
    context
        .body_str(name)
        .and_then(|value| DateTime::parse_from_rfc3339(value).ok())
        .map(|value| value.with_timezone(&Utc))
}

/// Applies the body of `checks/create` or `checks/update` to a run: a `conclusion` completes
/// it; `completed` needs a conclusion (GitHub's 422 otherwise).
fn apply_check_body(run: &mut CheckRun, context: &Context) -> Result<(), ApiError> {
    let text = |name: &str| context.body_str(name).map(str::to_owned);
    if let Some(name) = text("name") {
        run.name = name;
    }
    if let Some(details_url) = text("details_url") {
        run.details_url = Some(details_url);
    }
    if let Some(external_id) = text("external_id") {
        run.external_id = Some(external_id);
    }
    if let Some(started_at) = body_time(context, "started_at") {
        run.started_at = started_at;
    }
    if let Some(status) = text("status") {
        run.status = status;
    }
    if let Some(conclusion) = text("conclusion") {
        run.conclusion = Some(conclusion);
        "completed".clone_into(&mut run.status);
    }
    if let Some(completed_at) = body_time(context, "completed_at") {
        run.completed_at = Some(completed_at);
    }
    if run.status == "completed" {
        if run.conclusion.is_none() {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "Invalid request.\n\n\"conclusion\" wasn't supplied.",
            ));
        }
        run.completed_at.get_or_insert(context.now);
    }
    if let Some(output) = context.body_field("output") {
        let field = |name: &str| {
            output
                .get(name)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        run.output_title = field("title").or(run.output_title.take());
        run.output_summary = field("summary").or(run.output_summary.take());
        run.output_text = field("text").or(run.output_text.take());
    }
    Ok(())
}

/// `POST /repos/{owner}/{repo}/check-runs`
pub(super) fn create_check_run(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let app_id = require_app(state, context)?;
    let key = visible_repository(state, context)?;
    let reference = context.body_str("head_sha").unwrap_or_default().to_owned();
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let head_sha = state
        .git(repository)
        .resolve_commit(&reference)?
        .filter(|sha| sha.eq_ignore_ascii_case(&reference))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                format!("No commit found for SHA: {reference}"),
            )
        })?;
    let mut run = CheckRun {
        id: state.next_id(),
        head_sha,
        name: String::new(),
        status: "queued".to_owned(),
        conclusion: None,
        details_url: None,
        external_id: None,
        output_title: None,
        output_summary: None,
        output_text: None,
        app_id: Some(app_id),
        started_at: context.now,
        completed_at: None,
    };
    apply_check_body(&mut run, context)?;
    let repository = state
        .repositories
        .get_mut(&key)
        .ok_or_else(ApiError::not_found)?;
    repository.check_runs.push(run.clone());
    let repository = &state.repositories[&key];
    let rendered = render::check_run(state, repository, &run);
    let location = rendered["url"].as_str().map(str::to_owned);
    Ok(Reply::created(rendered, location))
}

/// `PATCH /repos/{owner}/{repo}/check-runs/{check_run_id}`
pub(super) fn update_check_run(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    require_app(state, context)?;
    let key = visible_repository(state, context)?;
    let id = context.number_param("check_run_id")?;
    let run = state
        .repositories
        .get_mut(&key)
        .and_then(|repository| repository.check_runs.iter_mut().find(|run| run.id == id))
        .ok_or_else(ApiError::not_found)?;
    let mut updated = run.clone();
    apply_check_body(&mut updated, context)?;
    *run = updated.clone();
    let repository = &state.repositories[&key];
    Ok(Reply::ok(render::check_run(state, repository, &updated)))
}

/// `GET /repos/{owner}/{repo}/check-runs/{check_run_id}`
pub(super) fn get_check_run(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let id = context.number_param("check_run_id")?;
    let repository = &state.repositories[&key];
    let run = repository
        .check_runs
        .iter()
        .find(|run| run.id == id)
        .ok_or_else(ApiError::not_found)?;
    Ok(Reply::ok(render::check_run(state, repository, run)))
}
