//! The repository itself: `repos/get`, a user's permission on it
//! (`repos/get-collaborator-permission-level`: the owner is an admin, collaborators have the
//! role a test gave them, anyone else reads a public repository and has no access to a
//! private one), and `repos/compare-commits` (`BASE...HEAD`, computed by git from the merge
//! base, like GitHub's three-dot comparison).

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::super::api::{ApiError, Context, Reply, paginate_range};
use super::super::render;
use super::super::state::SimState;
use super::visible_repository;

/// The most files a comparison lists (GitHub's limit).
const COMPARED_FILES: usize = 300;

/// The most commits a comparison lists without pagination (GitHub's limit).
const COMPARED_COMMITS: usize = 250;

/// `GET /repos/{owner}/{repo}`
pub(super) fn get(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    Ok(Reply::ok(render::full_repository(state, repository)))
}

/// `GET /repos/{owner}/{repo}/collaborators/{username}/permission`
pub(super) fn collaborator_permission(
    state: &mut SimState,
    context: &Context,
) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let username = context.param("username").to_owned();
    let login = state
        .account(&username)
        .map(|account| account.login.clone())
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("{username} is not a user")))?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let role = if repository.owner.eq_ignore_ascii_case(&login) {
        "admin"
    } else if let Some(role) = repository.collaborators.get(&login.to_ascii_lowercase()) {
        role.as_str()
    } else if repository.private {
        "none"
    } else {
        "read"
    };
    Ok(Reply::ok(render::collaborator_permission(
        state, &login, role,
    )))
}

/// One side of `{basehead}`: a ref, optionally `owner:ref` for this repository's owner (forks
/// are not simulated, so another owner's ref is not found).
fn comparison_side<'reference>(owner: &str, side: &'reference str) -> Option<&'reference str> {
    match side.split_once(':') {
        Some((prefix, reference)) if prefix.eq_ignore_ascii_case(owner) => Some(reference),
        Some(_) => None,
        None => Some(side),
    }
    .filter(|reference| !reference.is_empty())
}

/// `GET /repos/{owner}/{repo}/compare/{basehead}`
pub(super) fn compare(state: &mut SimState, context: &Context) -> Result<Reply, ApiError> {
    let key = visible_repository(state, context)?;
    let basehead = context.param("basehead").to_owned();
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let (base_ref, head_ref) = basehead
        .split_once("...")
        .and_then(|(base, head)| {
            Some((
                comparison_side(&repository.owner, base)?,
                comparison_side(&repository.owner, head)?,
            ))
        })
        .ok_or_else(ApiError::not_found)?;
    let git = state.git(repository);
    let base = git
        .resolve_commit(base_ref)?
        .ok_or_else(ApiError::not_found)?;
    let head = git
        .resolve_commit(head_ref)?
        .ok_or_else(ApiError::not_found)?;
    let merge_base = git.merge_base(&base, &head)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("No common ancestor between {base_ref} and {head_ref}."),
        )
    })?;
    let ahead = git.commits_between(&merge_base, &head)?;
    let behind_by = git.commits_between(&merge_base, &base)?.len();
    let status = match (ahead.is_empty(), behind_by == 0) {
        (true, true) => "identical",
        (false, true) => "ahead",
        (true, false) => "behind",
        (false, false) => "diverged",
    };
    let commit_infos = ahead
        .iter()
        .take(COMPARED_COMMITS)
        .map(|sha| git.commit_info(sha))
        .collect::<Result<Vec<_>, _>>()?;
    let base_commit = render::commit_summary(state, repository, &git.commit_info(&base)?);
    let merge_base_commit =
        render::commit_summary(state, repository, &git.commit_info(&merge_base)?);
    let diff = state.pull_diff(&key, &merge_base, &head)?;
    let repository = state
        .repositories
        .get(&key)
        .ok_or_else(ApiError::not_found)?;
    let files: Vec<Value> = diff
        .files
        .iter()
        .take(COMPARED_FILES)
        .map(|file| render::diff_entry(state, repository, &head, file))
        .collect();
    let base_url = &state.base_url;
    let full_name = repository.full_name();
    let owner = &repository.owner;
    Ok(paginate_range(
        context,
        base_url,
        commit_infos.len(),
        |range| {
            json!({
                "url": format!("{base_url}/repos/{full_name}/compare/{basehead}"),
                "html_url": format!("{base_url}/{full_name}/compare/{basehead}"),
                "permalink_url": format!("{base_url}/{full_name}/compare/{owner}:{base}...{owner}:{head}"),
                "diff_url": format!("{base_url}/{full_name}/compare/{basehead}.diff"),
                "patch_url": format!("{base_url}/{full_name}/compare/{basehead}.patch"),
                "base_commit": base_commit,
                "merge_base_commit": merge_base_commit,
                "status": status,
                "ahead_by": ahead.len(),
                "behind_by": behind_by,
                "total_commits": ahead.len(),
                "commits": commit_infos[range]
                    .iter()
                    .map(|info| render::commit_summary(state, repository, info))
                    .collect::<Vec<_>>(),
                "files": files,
            })
        },
    ))
}
