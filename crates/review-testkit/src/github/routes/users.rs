//! The authenticated user: `users/get-authenticated` (`GET /user`). A personal access token
//! gets its user's profile (with the private fields GitHub adds for the token's owner); an
//! installation token gets GitHub's 403 `Resource not accessible by integration` (an App's
//! bot has no user profile to read: its login comes from the App), and no token a 401.

use axum::http::StatusCode;
use serde_json::json;

use super::super::api::{Actor, ApiError, Context, Reply};
use super::super::render;
use super::super::state::SimState;

/// `GET /user`
pub(super) fn get_authenticated(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let login = match &context.actor {
        Actor::User { login } => login.clone(),
        Actor::Anonymous => {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Requires authentication",
            ));
        }
        Actor::Installation { .. } | Actor::App { .. } => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "Resource not accessible by integration",
            ));
        }
    };
    let mut user = render::user(state, &login);
    let created = "2020-01-01T00:00:00Z";
    let owned = state
        .repositories
        .values()
        .filter(|repository| repository.owner.eq_ignore_ascii_case(&login))
        .count();
    let fields = json!({
        "name": login,
        "company": null,
        "blog": "",
        "location": null,
        "email": null,
        "hireable": null,
        "bio": null,
        "public_repos": owned,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": created,
        "updated_at": created,
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": true,
        "user_view_type": "private",
    });
    if let (Some(user), Some(fields)) = (user.as_object_mut(), fields.as_object()) {
        for (key, value) in fields {
            user.insert(key.clone(), value.clone());
        }
    }
    Ok(Reply::ok(user))
}
