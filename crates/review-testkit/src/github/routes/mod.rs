//! The REST operations the simulator serves: one entry per operation of the OpenAPI subset
//! (operation id, method, path template, budget, auth), matched against request paths, and
//! the handlers, grouped by area.

mod apps;
mod checks;
mod commits;
mod issues;
mod pulls;
mod repos;
mod reviews;
mod search;
mod users;

use std::collections::HashMap;

use super::api::{Actor, ApiError, Context, Reply};
use super::model::{PullRequest, Repository, RepositorySelection};
use super::rate::Resource;
use super::state::SimState;

/// A handler: runs under the state lock, returns GitHub's answer.
pub(crate) type Handler = fn(&mut SimState, &Context) -> Result<Reply, ApiError>;

/// How an operation authenticates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Auth {
    /// A personal access token or an installation token; reads also work anonymously.
    Token,
    /// The app's JWT.
    AppJwt,
    /// An installation access token only.
    InstallationToken,
    /// Any credential, or none (the rate-limit endpoint).
    Any,
}

/// One REST operation.
#[derive(Debug)]
pub(crate) struct Operation {
    pub id: &'static str,
    pub method: &'static str,
    /// The OpenAPI path template.
    pub template: &'static str,
    pub resource: Resource,
    /// Counts against the secondary content-creation limit.
    pub content_creation: bool,
    /// Spends the primary budget (the rate-limit endpoint does not).
    pub costs: bool,
    /// The handler validates the request body itself, because GitHub answers some invalid
    /// bodies with its own error rather than the schema's `Invalid request`.
    pub validates_body: bool,
    pub auth: Auth,
    pub documentation_url: &'static str,
    pub handler: Handler,
}

const fn op(
    id: &'static str,
    method: &'static str,
    template: &'static str,
    documentation_url: &'static str,
    handler: Handler,
) -> Operation {
    Operation {
        id,
        method,
        template,
        resource: Resource::Core,
        content_creation: false,
        costs: true,
        validates_body: false,
        auth: Auth::Token,
        documentation_url,
        handler,
    }
}

const fn writes(mut operation: Operation) -> Operation {
    operation.content_creation = true;
    operation
}

const fn auth(mut operation: Operation, auth: Auth) -> Operation {
    operation.auth = auth;
    operation
}

/// Every operation of the subset.
pub(crate) static OPERATIONS: &[Operation] = &[
    auth(
        op(
            "apps/list-installations",
            "GET",
            "/app/installations",
            "https://docs.github.com/rest/apps/apps#list-installations-for-the-authenticated-app",
            apps::list_installations,
        ),
        Auth::AppJwt,
    ),
    auth(
        op(
            "apps/create-installation-access-token",
            "POST",
            "/app/installations/{installation_id}/access_tokens",
            "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app",
            apps::create_installation_access_token,
        ),
        Auth::AppJwt,
    ),
    auth(
        op(
            "apps/list-repos-accessible-to-installation",
            "GET",
            "/installation/repositories",
            "https://docs.github.com/rest/apps/installations#list-repositories-accessible-to-the-app-installation",
            apps::list_installation_repositories,
        ),
        Auth::InstallationToken,
    ),
    Operation {
        costs: false,
        auth: Auth::Any,
        ..op(
            "rate-limit/get",
            "GET",
            "/rate_limit",
            "https://docs.github.com/rest/rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user",
            apps::rate_limit,
        )
    },
    op(
        "repos/get",
        "GET",
        "/repos/{owner}/{repo}",
        "https://docs.github.com/rest/repos/repos#get-a-repository",
        repos::get,
    ),
    writes(op(
        "checks/create",
        "POST",
        "/repos/{owner}/{repo}/check-runs",
        "https://docs.github.com/rest/checks/runs#create-a-check-run",
        checks::create_check_run,
    )),
    op(
        "checks/get",
        "GET",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        "https://docs.github.com/rest/checks/runs#get-a-check-run",
        checks::get_check_run,
    ),
    writes(op(
        "checks/update",
        "PATCH",
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        "https://docs.github.com/rest/checks/runs#update-a-check-run",
        checks::update_check_run,
    )),
    op(
        "repos/get-collaborator-permission-level",
        "GET",
        "/repos/{owner}/{repo}/collaborators/{username}/permission",
        "https://docs.github.com/rest/collaborators/collaborators#get-repository-permissions-for-a-user",
        repos::collaborator_permission,
    ),
    op(
        "repos/get-commit",
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}",
        "https://docs.github.com/rest/commits/commits#get-a-commit",
        commits::get_commit,
    ),
    op(
        "checks/list-for-ref",
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/check-runs",
        "https://docs.github.com/rest/checks/runs#list-check-runs-for-a-git-reference",
        commits::list_check_runs,
    ),
    op(
        "repos/get-combined-status-for-ref",
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/status",
        "https://docs.github.com/rest/commits/statuses#get-the-combined-status-for-a-specific-reference",
        commits::combined_status,
    ),
    op(
        "repos/list-commit-statuses-for-ref",
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/statuses",
        "https://docs.github.com/rest/commits/statuses#list-commit-statuses-for-a-reference",
        commits::list_statuses,
    ),
    op(
        "repos/compare-commits",
        "GET",
        "/repos/{owner}/{repo}/compare/{basehead}",
        "https://docs.github.com/rest/commits/commits#compare-two-commits",
        repos::compare,
    ),
    auth(
        op(
            "apps/get-repo-installation",
            "GET",
            "/repos/{owner}/{repo}/installation",
            "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app",
            apps::repository_installation,
        ),
        Auth::AppJwt,
    ),
    op(
        "issues/get-comment",
        "GET",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "https://docs.github.com/rest/issues/comments#get-an-issue-comment",
        issues::get_comment,
    ),
    writes(op(
        "issues/update-comment",
        "PATCH",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "https://docs.github.com/rest/issues/comments#update-an-issue-comment",
        issues::update_comment,
    )),
    writes(op(
        "reactions/create-for-issue-comment",
        "POST",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions",
        "https://docs.github.com/rest/reactions/reactions#create-reaction-for-an-issue-comment",
        issues::create_reaction,
    )),
    op(
        "issues/list-comments",
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "https://docs.github.com/rest/issues/comments#list-issue-comments",
        issues::list_comments,
    ),
    writes(op(
        "issues/create-comment",
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
        issues::create_comment,
    )),
    op(
        "issues/list-labels-on-issue",
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "https://docs.github.com/rest/issues/labels#list-labels-for-an-issue",
        issues::list_labels,
    ),
    writes(op(
        "issues/add-labels",
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "https://docs.github.com/rest/issues/labels#add-labels-to-an-issue",
        issues::add_labels,
    )),
    writes(op(
        "issues/set-labels",
        "PUT",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "https://docs.github.com/rest/issues/labels#set-labels-for-an-issue",
        issues::set_labels,
    )),
    writes(op(
        "issues/remove-all-labels",
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "https://docs.github.com/rest/issues/labels#remove-all-labels-from-an-issue",
        issues::remove_all_labels,
    )),
    writes(op(
        "issues/remove-label",
        "DELETE",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
        "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue",
        issues::remove_label,
    )),
    writes(op(
        "pulls/update",
        "PATCH",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        "https://docs.github.com/rest/pulls/pulls#update-a-pull-request",
        pulls::update,
    )),
    op(
        "users/get-authenticated",
        "GET",
        "/user",
        "https://docs.github.com/rest/users/users#get-the-authenticated-user",
        users::get_authenticated,
    ),
    op(
        "pulls/get",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
        pulls::get,
    ),
    op(
        "pulls/list-review-comments",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
        "https://docs.github.com/rest/pulls/comments#list-review-comments-on-a-pull-request",
        reviews::list_review_comments,
    ),
    writes(op(
        "pulls/create-review-comment",
        "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments",
        "https://docs.github.com/rest/pulls/comments#create-a-review-comment-for-a-pull-request",
        reviews::create_review_comment,
    )),
    writes(op(
        "pulls/create-reply-for-review-comment",
        "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/comments/{comment_id}/replies",
        "https://docs.github.com/rest/pulls/comments#create-a-reply-for-a-review-comment",
        reviews::create_reply,
    )),
    op(
        "pulls/list-commits",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/commits",
        "https://docs.github.com/rest/pulls/pulls#list-commits-on-a-pull-request",
        pulls::list_commits,
    ),
    op(
        "pulls/list-files",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/files",
        "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files",
        pulls::list_files,
    ),
    op(
        "pulls/list-reviews",
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        "https://docs.github.com/rest/pulls/reviews#list-reviews-for-a-pull-request",
        reviews::list_reviews,
    ),
    writes(op(
        "pulls/create-review",
        "POST",
        "/repos/{owner}/{repo}/pulls/{pull_number}/reviews",
        "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
        reviews::create_review,
    )),
    Operation {
        validates_body: true,
        ..writes(op(
            "repos/create-commit-status",
            "POST",
            "/repos/{owner}/{repo}/statuses/{sha}",
            "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
            checks::create_status,
        ))
    },
    Operation {
        resource: Resource::Search,
        ..op(
            "search/issues-and-pull-requests",
            "GET",
            "/search/issues",
            "https://docs.github.com/rest/search/search#search-issues-and-pull-requests",
            search::issues_and_pull_requests,
        )
    },
];

/// Finds the operation for a method and path, with its decoded path parameters.
pub(crate) fn match_operation(
    method: &str,
    path: &str,
) -> Option<(&'static Operation, HashMap<&'static str, String>)> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    OPERATIONS.iter().find_map(|operation| {
        if operation.method != method {
            return None;
        }
        let template: Vec<&'static str> = operation.template.split('/').collect();
        if template.len() != segments.len() {
            return None;
        }
        let mut params = HashMap::new();
        for (pattern, segment) in template.iter().zip(&segments) {
            if let Some(name) = pattern
                .strip_prefix('{')
                .and_then(|rest| rest.strip_suffix('}'))
            {
                if segment.is_empty() {
                    return None;
                }
                let decoded = percent_encoding::percent_decode_str(segment)
                    .decode_utf8_lossy()
                    .into_owned();
                params.insert(name, decoded);
            } else if pattern != segment {
                return None;
            }
        }
        Some((operation, params))
    })
}

/// Whether a record created at `created_at` shows in list answers at `now` yet
/// ([`super::SimOptions::list_lag`]: GitHub's lists can lag behind a write).
pub(crate) fn listed(
    state: &SimState,
    created_at: chrono::DateTime<chrono::Utc>,
    now: chrono::DateTime<chrono::Utc>,
) -> bool {
    let lag = state.options.list_lag;
    lag.is_zero() || chrono::Duration::from_std(lag).is_ok_and(|lag| created_at + lag <= now)
}

/// The `{owner}/{repo}` of the request, if the caller may see it (404 otherwise, as GitHub
/// hides what a token cannot access). Returns the repository's state key.
pub(crate) fn visible_repository(state: &SimState, context: &Context) -> Result<String, ApiError> {
    let owner = context.param("owner");
    let name = context.param("repo");
    let repository = state
        .repository(owner, name)
        .ok_or_else(ApiError::not_found)?;
    if !can_see(state, &context.actor, repository) {
        return Err(ApiError::not_found());
    }
    Ok(repository.full_name().to_ascii_lowercase())
}

/// The `{owner}/{repo}` of the request if it exists, whoever asks (the app endpoints).
pub(crate) fn visible_repository_unchecked(
    state: &SimState,
    context: &Context,
) -> Result<String, ApiError> {
    let repository = state
        .repository(context.param("owner"), context.param("repo"))
        .ok_or_else(ApiError::not_found)?;
    Ok(repository.full_name().to_ascii_lowercase())
}

/// Whether an actor may see a repository.
pub(crate) fn can_see(state: &SimState, actor: &Actor, repository: &Repository) -> bool {
    match actor {
        Actor::Anonymous => !repository.private,
        Actor::User { .. } => true,
        Actor::App { .. } => false,
        Actor::Installation {
            installation_id,
            repositories,
            ..
        } => {
            state
                .installations
                .get(installation_id)
                .is_some_and(|installation| covers(installation, repository))
                && repositories.as_ref().is_none_or(|names| {
                    names.contains(&repository.full_name().to_ascii_lowercase())
                })
        }
    }
}

/// Whether an installation covers a repository.
pub(crate) fn covers(installation: &super::model::Installation, repository: &Repository) -> bool {
    if !installation.account.eq_ignore_ascii_case(&repository.owner) {
        return false;
    }
    match &installation.selection {
        RepositorySelection::All => true,
        RepositorySelection::Selected(names) => names
            .iter()
            .any(|name| name.eq_ignore_ascii_case(&repository.full_name())),
    }
}

/// The repository (by key) and the pull request named by `{pull_number}` / `{issue_number}`.
pub(crate) fn pull_of<'state>(
    state: &'state SimState,
    key: &str,
    number: u64,
) -> Result<(&'state Repository, &'state PullRequest), ApiError> {
    let repository = state
        .repositories
        .get(key)
        .ok_or_else(ApiError::not_found)?;
    let pull = repository
        .pulls
        .get(&number)
        .ok_or_else(ApiError::not_found)?;
    Ok((repository, pull))
}

/// Mutable access to a pull request.
pub(crate) fn pull_mut<'state>(
    state: &'state mut SimState,
    key: &str,
    number: u64,
) -> Result<&'state mut PullRequest, ApiError> {
    state
        .repositories
        .get_mut(key)
        .and_then(|repository| repository.pulls.get_mut(&number))
        .ok_or_else(ApiError::not_found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_match_and_decode() {
        let (operation, params) = match_operation(
            "DELETE",
            "/repos/acme/widgets/issues/7/labels/bot%20review%2Fneeded",
        )
        .unwrap();
        assert_eq!(operation.id, "issues/remove-label");
        assert_eq!(params["name"], "bot review/needed");
        assert_eq!(params["issue_number"], "7");
        let (operation, _) =
            match_operation("GET", "/repos/acme/widgets/commits/main/status").unwrap();
        assert_eq!(operation.id, "repos/get-combined-status-for-ref");
        assert!(match_operation("GET", "/repos/acme/widgets/nothing").is_none());
        let (operation, _) = match_operation("PATCH", "/repos/acme/widgets/pulls/1").unwrap();
        assert_eq!(operation.id, "pulls/update");
        assert!(match_operation("PUT", "/repos/acme/widgets/pulls/1").is_none());
    }

    #[test]
    fn operation_ids_are_unique() {
        let mut ids: Vec<_> = OPERATIONS.iter().map(|operation| operation.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), OPERATIONS.len());
    }
}
