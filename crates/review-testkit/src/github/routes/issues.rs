//! The issue side of a pull request: conversation comments (create, get, update, list, and
//! reactions on them — one per user and content, 200 for one already there) and labels (list,
//! add — creating missing labels in the repository —, set, remove — 404 `Label does not exist`
//! when the issue lacks it).

use axum::http::StatusCode;
use serde_json::Value;

use super::super::api::{ApiError, Context, Reply, paginate};
use super::super::model::{IssueComment, Label, Reaction};
use super::super::render;
use super::super::state::SimState;
use super::{listed, pull_mut, pull_of, visible_repository};

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/comments`
pub(super) fn list_comments(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let since = context
        .query_value("since")
        .and_then(|value| chrono::DateTime::parse_from_rfc3339(value).ok())
        .map(|value| value.with_timezone(&chrono::Utc));
    let items = pull
        .issue_comments
        .iter()
        .filter(|comment| since.is_none_or(|since| comment.updated_at >= since))
        .filter(|comment| listed(state, comment.created_at, context.now))
        .map(|comment| render::issue_comment(state, repository, pull, comment))
        .collect();
    Ok(paginate(context, &state.base_url, items))
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/comments`
pub(super) fn create_comment(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    let body = context.body_str("body").unwrap_or_default().to_owned();
    if body.trim().is_empty() {
        return Err(ApiError::validation_failed(vec![ApiError::field_error(
            "IssueComment",
            "body",
            "missing_field",
            None,
        )]));
    }
    ApiError::check_body_length("IssueComment", &body)?;
    pull_of(state, &key, number)?;
    let comment = IssueComment {
        id: state.next_id(),
        user: login,
        body,
        created_at: context.now,
        updated_at: context.now,
        reactions: Vec::new(),
    };
    let target = pull_mut(state, &key, number)?;
    target.issue_comments.push(comment.clone());
    target.updated_at = context.now;
    let (repository, pull) = pull_of(state, &key, number)?;
    let location = format!(
        "{}/repos/{}/issues/comments/{}",
        state.base_url,
        repository.full_name(),
        comment.id
    );
    Ok(Reply::created(
        render::issue_comment(state, repository, pull, &comment),
        Some(location),
    ))
}

/// The number of the pull request holding issue comment `comment_id` (404 when none does).
fn comment_pull(state: &SimState, key: &str, comment_id: u64) -> Result<u64, ApiError> {
    state
        .repositories
        .get(key)
        .ok_or_else(ApiError::not_found)?
        .pulls
        .values()
        .find(|pull| {
            pull.issue_comments
                .iter()
                .any(|comment| comment.id == comment_id)
        })
        .map(|pull| pull.number)
        .ok_or_else(ApiError::not_found)
}

/// `GET /repos/{owner}/{repo}/issues/comments/{comment_id}`
pub(super) fn get_comment(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let comment_id = context.number_param("comment_id")?;
    let number = comment_pull(state, &key, comment_id)?;
    let (repository, pull) = pull_of(state, &key, number)?;
    let comment = pull
        .issue_comments
        .iter()
        .find(|comment| comment.id == comment_id)
        .ok_or_else(ApiError::not_found)?;
    Ok(Reply::ok(render::issue_comment(
        state, repository, pull, comment,
    )))
}

/// `POST /repos/{owner}/{repo}/issues/comments/{comment_id}/reactions`: 201 with a new
/// reaction, 200 with the existing one when this user already reacted with this content.
pub(super) fn create_reaction(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let key = visible_repository(state, context)?;
    let comment_id = context.number_param("comment_id")?;
    let kind = context.body_str("content").unwrap_or_default().to_owned();
    let number = comment_pull(state, &key, comment_id)?;
    let id = state.next_id();
    let comment = pull_mut(state, &key, number)?
        .issue_comments
        .iter_mut()
        .find(|comment| comment.id == comment_id)
        .ok_or_else(ApiError::not_found)?;
    if let Some(existing) = comment
        .reactions
        .iter()
        .find(|reaction| reaction.content == kind && reaction.user.eq_ignore_ascii_case(&login))
    {
        let existing = existing.clone();
        return Ok(Reply::ok(render::reaction(state, &existing)));
    }
    let reaction = Reaction {
        id,
        user: login,
        content: kind,
        created_at: context.now,
    };
    comment.reactions.push(reaction.clone());
    Ok(Reply::created(render::reaction(state, &reaction), None))
}

/// `PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}`
pub(super) fn update_comment(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let login = context.require_login()?;
    let key = visible_repository(state, context)?;
    let comment_id = context.number_param("comment_id")?;
    let body = context.body_str("body").unwrap_or_default().to_owned();
    ApiError::check_body_length("IssueComment", &body)?;
    let number = comment_pull(state, &key, comment_id)?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let owner = repository.owner.clone();
    let target = pull_mut(state, &key, number)?;
    let comment = target
        .issue_comments
        .iter_mut()
        .find(|comment| comment.id == comment_id)
        .ok_or_else(ApiError::not_found)?;
    if !comment.user.eq_ignore_ascii_case(&login) && !owner.eq_ignore_ascii_case(&login) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Must have admin rights to Repository.",
        ));
    }
    comment.body = body;
    comment.updated_at = context.now;
    let updated = comment.clone();
    let (repository, pull) = pull_of(state, &key, number)?;
    Ok(Reply::ok(render::issue_comment(
        state, repository, pull, &updated,
    )))
}

/// The issue's labels as GitHub renders them.
fn issue_labels(state: &SimState, key: &str, number: u64) -> Result<Vec<Value>, ApiError> {
    let (repository, pull) = pull_of(state, key, number)?;
    Ok(pull
        .labels
        .iter()
        .filter_map(|name| repository.label(name))
        .map(|label| render::label(state, repository, label))
        .collect())
}

/// The answer of a label write: every label the issue now has (not paginated).
fn labels_reply(state: &SimState, key: &str, number: u64) -> Result<Reply, ApiError> {
    Ok(Reply::ok(Value::Array(issue_labels(state, key, number)?)))
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/labels`
pub(super) fn list_labels(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    let items = issue_labels(state, &key, number)?;
    Ok(paginate(context, &state.base_url, items))
}

/// Label names from any of the body shapes GitHub accepts: `{"labels": [...]}`, `[...]`,
/// a single string; items are names or `{"name": ...}`.
fn requested_labels(body: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let items = match body {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(name)) => return Ok(vec![name.clone()]),
        Some(Value::Array(items)) => items.clone(),
        Some(Value::Object(object)) => match object.get("labels") {
            Some(Value::Array(items)) => items.clone(),
            Some(Value::String(name)) => vec![Value::String(name.clone())],
            None => Vec::new(),
            Some(_) => {
                return Err(ApiError::unprocessable(vec![
                    "labels must be an array".to_owned(),
                ]));
            }
        },
        Some(_) => {
            return Err(ApiError::unprocessable(vec![
                "labels must be an array".to_owned(),
            ]));
        }
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(name) => Ok(name.clone()),
            Value::Object(object) => object
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ApiError::unprocessable(vec!["label name is missing".to_owned()])),
            _ => Err(ApiError::unprocessable(vec![
                "labels must be strings".to_owned(),
            ])),
        })
        .collect()
}

/// Creates the repository labels that do not exist yet (GitHub's grey `ededed`), and returns
/// the canonical spellings.
fn ensure_repository_labels(
    state: &mut SimState,
    key: &str,
    names: &[String],
) -> Result<Vec<String>, ApiError> {
    let mut canonical = Vec::with_capacity(names.len());
    for name in names {
        let name = name.trim();
        if name.is_empty() {
            return Err(ApiError::validation_failed(vec![ApiError::field_error(
                "Label",
                "name",
                "missing_field",
                None,
            )]));
        }
        let existing = state
            .repositories
            .get(key)
            .and_then(|repository| repository.label(name))
            .map(|label| label.name.clone());
        let spelled = if let Some(existing) = existing {
            existing
        } else {
            let id = state.next_id();
            let repository = state
                .repositories
                .get_mut(key)
                .ok_or_else(ApiError::not_found)?;
            repository.labels.push(Label {
                id,
                name: name.to_owned(),
                color: "ededed".to_owned(),
                description: None,
            });
            name.to_owned()
        };
        if !canonical.contains(&spelled) {
            canonical.push(spelled);
        }
    }
    Ok(canonical)
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/labels`
pub(super) fn add_labels(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    pull_of(state, &key, number)?;
    let names = requested_labels(context.body.as_ref())?;
    let names = ensure_repository_labels(state, &key, &names)?;
    let target = pull_mut(state, &key, number)?;
    let mut changed = false;
    for name in names {
        if !target
            .labels
            .iter()
            .any(|label| label.eq_ignore_ascii_case(&name))
        {
            target.labels.push(name);
            changed = true;
        }
    }
    if changed {
        target.updated_at = context.now;
    }
    labels_reply(state, &key, number)
}

/// `PUT /repos/{owner}/{repo}/issues/{issue_number}/labels`
pub(super) fn set_labels(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    pull_of(state, &key, number)?;
    let names = requested_labels(context.body.as_ref())?;
    let names = ensure_repository_labels(state, &key, &names)?;
    let target = pull_mut(state, &key, number)?;
    if target.labels != names {
        target.labels = names;
        target.updated_at = context.now;
    }
    labels_reply(state, &key, number)
}

/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels/{name}`
/// `DELETE /repos/{owner}/{repo}/issues/{issue_number}/labels`: removes every label (204).
/// Not in the OpenAPI subset (review-bot never calls it); served because GitHub serves it, so
/// a client whose label path collapses (`labels/..`) shows the damage.
pub(super) fn remove_all_labels(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    let target = pull_mut(state, &key, number)?;
    target.labels.clear();
    target.updated_at = context.now;
    Ok(Reply::no_content())
}

pub(super) fn remove_label(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    context.require_login()?;
    let key = visible_repository(state, context)?;
    let number = context.number_param("issue_number")?;
    let name = context.param("name").to_owned();
    let target = pull_mut(state, &key, number)?;
    let Some(index) = target
        .labels
        .iter()
        .position(|label| label.eq_ignore_ascii_case(&name))
    else {
        return Err(ApiError::new(StatusCode::NOT_FOUND, "Label does not exist"));
    };
    target.labels.remove(index);
    target.updated_at = context.now;
    labels_reply(state, &key, number)
}
