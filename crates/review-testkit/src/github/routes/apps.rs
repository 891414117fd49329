//! GitHub App endpoints (authenticated with the app's JWT: list installations, find a
//! repository's installation, mint an installation access token), the installation's own
//! repository list, and the rate-limit endpoint.

use axum::http::StatusCode;
use chrono::Duration;
use serde_json::{Value, json};

use super::super::api::{Actor, ApiError, Context, Reply, paginate, paginate_with};
use super::super::model::{Installation, RepositorySelection};
use super::super::rate::{Budget, Resource};
use super::super::render;
use super::super::state::{SimState, Token, TokenSubject};
use super::{covers, visible_repository_unchecked};

fn app_id(context: &Context) -> Result<u64, ApiError> {
    match context.actor {
        Actor::App { app_id } => Ok(app_id),
        _ => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "A JSON web token could not be decoded",
        )),
    }
}

/// `GET /app/installations`
pub(super) fn list_installations(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let app_id = app_id(context)?;
    let app = state.apps.get(&app_id).ok_or_else(ApiError::not_found)?;
    let items = state
        .installations
        .values()
        .filter(|installation| installation.app_id == app_id)
        .map(|installation| render::installation(state, installation, app))
        .collect();
    Ok(paginate(context, &state.base_url, items))
}

/// `POST /app/installations/{installation_id}/access_tokens`
pub(super) fn create_installation_access_token(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let app_id = app_id(context)?;
    let installation_id = context.number_param("installation_id")?;
    let installation = state
        .installations
        .get(&installation_id)
        .filter(|installation| installation.app_id == app_id)
        .cloned()
        .ok_or_else(ApiError::not_found)?;
    if installation.suspended_at.is_some() {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "This installation has been suspended",
        ));
    }
    let narrowed = narrowed_repositories(state, context, &installation)?;
    let secret = format!("ghs_{}", uuid::Uuid::new_v4().simple());
    let lifetime = Duration::from_std(state.options.installation_token_lifetime)
        .unwrap_or_else(|_| Duration::hours(1));
    let expires_at = context.now + lifetime;
    state.tokens.insert(
        secret.clone(),
        Token {
            subject: TokenSubject::Installation(installation_id),
            expires_at: Some(expires_at),
            repositories: narrowed.clone(),
        },
    );
    let mut body = json!({
        "token": secret,
        "expires_at": render::timestamp(expires_at),
        "permissions": render::installation_permissions(),
        "repository_selection": match (&installation.selection, &narrowed) {
            (RepositorySelection::All, None) => "all",
            _ => "selected",
        },
    });
    if let Some(names) = &narrowed {
        body["repositories"] = Value::Array(
            names
                .iter()
                .filter_map(|name| state.repositories.get(name))
                .map(|repository| render::repository(state, repository))
                .collect(),
        );
    }
    Ok(Reply::created(body, None))
}

/// The repositories a token request narrows to (`repositories` by name, `repository_ids`),
/// each of which the installation must cover — GitHub answers 422 otherwise.
fn narrowed_repositories(
    state: &SimState,
    context: &Context,
    installation: &Installation,
) -> Result<Option<Vec<String>>, ApiError> {
    let names = context.body_field("repositories").and_then(Value::as_array);
    let ids = context
        .body_field("repository_ids")
        .and_then(Value::as_array);
    if names.is_none() && ids.is_none() {
        return Ok(None);
    }
    let refused = || {
        ApiError::unprocessable(vec![
            "There is at least one repository that does not exist or is not accessible to the parent installation.".to_owned(),
        ])
    };
    let mut narrowed = Vec::new();
    for name in names.into_iter().flatten() {
        let name = name.as_str().ok_or_else(refused)?;
        let repository = state
            .repository(&installation.account, name)
            .filter(|repository| covers(installation, repository))
            .ok_or_else(refused)?;
        narrowed.push(repository.full_name().to_ascii_lowercase());
    }
    for id in ids.into_iter().flatten() {
        let id = id.as_u64().ok_or_else(refused)?;
        let repository = state
            .repositories
            .values()
            .find(|repository| repository.id == id && covers(installation, repository))
            .ok_or_else(refused)?;
        narrowed.push(repository.full_name().to_ascii_lowercase());
    }
    narrowed.sort();
    narrowed.dedup();
    Ok(Some(narrowed))
}

/// `GET /repos/{owner}/{repo}/installation`
pub(super) fn repository_installation(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let app_id = app_id(context)?;
    let key = visible_repository_unchecked(state, context)?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let app = state.apps.get(&app_id).ok_or_else(ApiError::not_found)?;
    let installation = state
        .installations
        .values()
        .find(|installation| installation.app_id == app_id && covers(installation, repository))
        .ok_or_else(ApiError::not_found)?;
    Ok(Reply::ok(render::installation(state, installation, app)))
}

/// `GET /installation/repositories`
pub(super) fn list_installation_repositories(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let Actor::Installation {
        installation_id,
        repositories: ref narrowed,
        ..
    } = context.actor
    else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "You must authenticate with an installation access token in order to list repositories for an installation.",
        ));
    };
    let installation = state
        .installations
        .get(&installation_id)
        .ok_or_else(ApiError::bad_credentials)?;
    let repositories: Vec<_> = state
        .repositories
        .values()
        .filter(|repository| covers(installation, repository))
        .filter(|repository| {
            narrowed
                .as_ref()
                .is_none_or(|names| names.contains(&repository.full_name().to_ascii_lowercase()))
        })
        .map(|repository| render::repository(state, repository))
        .collect();
    let total = repositories.len();
    let selection = match (&installation.selection, narrowed) {
        (RepositorySelection::All, None) => "all",
        _ => "selected",
    };
    Ok(paginate_with(
        context,
        &state.base_url,
        repositories,
        |page| json!({"total_count": total, "repositories": page, "repository_selection": selection}),
    ))
}

/// `GET /rate_limit` — does not spend the budget it reports.
#[allow(clippy::unnecessary_wraps)] // Every handler has the same signature.
pub(super) fn rate_limit(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let limit = state.core_limit_for(&context.budget_key);
    let options = state.options.clone();
    let budget = state
        .budgets
        .entry(context.budget_key.clone())
        .or_insert_with(|| Budget::new(limit, &options, context.now));
    let window = |budget: &mut Budget, resource: Resource| {
        let snapshot = budget.window(resource, context.now).snapshot();
        json!({
            "limit": snapshot.limit,
            "used": snapshot.used,
            "remaining": snapshot.remaining,
            "reset": snapshot.reset.timestamp(),
        })
    };
    let core = window(budget, Resource::Core);
    let search = window(budget, Resource::Search);
    Ok(Reply::ok(json!({
        "resources": {"core": core, "search": search},
        "rate": core,
    })))
}
