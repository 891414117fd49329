//! Rendering the simulator's records as GitHub's JSON.
//!
//! Shapes follow the response schemas of the OpenAPI subset (their `required` fields and
//! GitHub's own examples); nothing here invents a field GitHub does not send. API URLs point
//! at the simulator's base URL, web URLs (`html_url`) at the same host, the way a GitHub
//! Enterprise Server lays them out.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use super::diff::DiffFile;
use super::git::CommitInfo;
use super::model::{
    Account, AccountKind, App, CheckRun, CommitStatus, Installation, IssueComment, Label,
    PullRequest, Reaction, Repository, RepositorySelection, Review, ReviewComment,
};
use super::state::SimState;

/// GitHub's timestamp format (`2011-01-26T19:01:12Z`).
pub(crate) fn timestamp(date: DateTime<Utc>) -> String {
    date.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn optional_timestamp(date: Option<DateTime<Utc>>) -> Value {
    date.map_or(Value::Null, |date| Value::String(timestamp(date)))
}

/// An opaque GraphQL node id, shaped like GitHub's (`PR_kwDOAAAD6Q`).
pub(crate) fn node_id(prefix: &str, id: u64) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id.to_be_bytes());
    format!("{prefix}_kwDO{encoded}")
}

/// A `simple-user` for a login (unknown logins render as users, never fail).
pub(crate) fn user(state: &SimState, login: &str) -> Value {
    let account = state.account(login).cloned().unwrap_or_else(|| Account {
        id: 0,
        login: login.to_owned(),
        kind: AccountKind::User,
    });
    account_json(&state.base_url, &account)
}

/// The account owning a repository or an installation: the one the simulator
/// knows, or an organization of that name.
fn owner_account(state: &SimState, login: &str) -> Account {
    state.account(login).cloned().unwrap_or_else(|| Account {
        id: 0,
        login: login.to_owned(),
        kind: AccountKind::Organization,
    })
}

pub(crate) fn account_json(base: &str, account: &Account) -> Value {
    let login = &account.login;
    let users = format!("{base}/users/{login}");
    let (url, repos_url, events_url) = if account.kind == AccountKind::Organization {
        (
            format!("{base}/orgs/{login}"),
            format!("{base}/orgs/{login}/repos"),
            format!("{base}/orgs/{login}/events"),
        )
    } else {
        (
            users.clone(),
            format!("{users}/repos"),
            format!("{users}/events{{/privacy}}"),
        )
    };
    let prefix = match account.kind {
        AccountKind::User => "U",
        AccountKind::Bot => "BOT",
        AccountKind::Organization => "O",
    };
    json!({
        "login": login,
        "id": account.id,
        "node_id": node_id(prefix, account.id),
        "avatar_url": format!("{base}/avatars/u/{}?v=4", account.id),
        "gravatar_id": "",
        "url": url,
        "html_url": format!("{base}/{login}"),
        "followers_url": format!("{users}/followers"),
        "following_url": format!("{users}/following{{/other_user}}"),
        "gists_url": format!("{users}/gists{{/gist_id}}"),
        "starred_url": format!("{users}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{users}/subscriptions"),
        "organizations_url": format!("{users}/orgs"),
        "repos_url": repos_url,
        "events_url": events_url,
        "received_events_url": format!("{users}/received_events"),
        "type": account.kind.as_str(),
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// `author_association` of a login on a repository.
pub(crate) fn author_association(repository: &Repository, login: &str) -> &'static str {
    if repository.owner.eq_ignore_ascii_case(login) {
        "OWNER"
    } else {
        "NONE"
    }
}

/// The URL fields every repository representation carries.
fn repository_urls(state: &SimState, repository: &Repository) -> serde_json::Map<String, Value> {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let api = format!("{base}/repos/{full_name}");
    let mut map = serde_json::Map::new();
    let mut put = |key: &str, value: String| {
        map.insert(key.to_owned(), Value::String(value));
    };
    put("html_url", format!("{base}/{full_name}"));
    put("url", api.clone());
    put("archive_url", format!("{api}/{{archive_format}}{{/ref}}"));
    put("assignees_url", format!("{api}/assignees{{/user}}"));
    put("blobs_url", format!("{api}/git/blobs{{/sha}}"));
    put("branches_url", format!("{api}/branches{{/branch}}"));
    put(
        "collaborators_url",
        format!("{api}/collaborators{{/collaborator}}"),
    );
    put("comments_url", format!("{api}/comments{{/number}}"));
    put("commits_url", format!("{api}/commits{{/sha}}"));
    put("compare_url", format!("{api}/compare/{{base}}...{{head}}"));
    put("contents_url", format!("{api}/contents/{{+path}}"));
    put("contributors_url", format!("{api}/contributors"));
    put("deployments_url", format!("{api}/deployments"));
    put("downloads_url", format!("{api}/downloads"));
    put("events_url", format!("{api}/events"));
    put("forks_url", format!("{api}/forks"));
    put("git_commits_url", format!("{api}/git/commits{{/sha}}"));
    put("git_refs_url", format!("{api}/git/refs{{/sha}}"));
    put("git_tags_url", format!("{api}/git/tags{{/sha}}"));
    put(
        "git_url",
        format!("{base}/{full_name}.git").replacen("http", "git", 1),
    );
    put(
        "issue_comment_url",
        format!("{api}/issues/comments{{/number}}"),
    );
    put(
        "issue_events_url",
        format!("{api}/issues/events{{/number}}"),
    );
    put("issues_url", format!("{api}/issues{{/number}}"));
    put("keys_url", format!("{api}/keys{{/key_id}}"));
    put("labels_url", format!("{api}/labels{{/name}}"));
    put("languages_url", format!("{api}/languages"));
    put("merges_url", format!("{api}/merges"));
    put("milestones_url", format!("{api}/milestones{{/number}}"));
    put(
        "notifications_url",
        format!("{api}/notifications{{?since,all,participating}}"),
    );
    put("pulls_url", format!("{api}/pulls{{/number}}"));
    put("releases_url", format!("{api}/releases{{/id}}"));
    put("ssh_url", format!("git@127.0.0.1:{full_name}.git"));
    put("stargazers_url", format!("{api}/stargazers"));
    put("statuses_url", format!("{api}/statuses/{{sha}}"));
    put("subscribers_url", format!("{api}/subscribers"));
    put("subscription_url", format!("{api}/subscription"));
    put("tags_url", format!("{api}/tags"));
    put("teams_url", format!("{api}/teams"));
    put("trees_url", format!("{api}/git/trees{{/sha}}"));
    put("clone_url", format!("{base}/{full_name}.git"));
    put("svn_url", format!("{base}/{full_name}"));
    put("hooks_url", format!("{api}/hooks"));
    map
}

/// A full `repository`: the minimal one and the rest of GitHub's fields.
pub(crate) fn repository(state: &SimState, repository: &Repository) -> Value {
    let mut value = minimal_repository(state, repository);
    let open_issues = repository.pulls.values().filter(|pull| pull.open).count();
    let rest = json!({
        "mirror_url": null,
        "homepage": null,
        "language": null,
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 0,
        "default_branch": repository.default_branch,
        "open_issues_count": open_issues,
        "open_issues": open_issues,
        "is_template": false,
        "topics": [],
        "has_issues": true,
        "has_projects": true,
        "has_wiki": true,
        "has_pages": false,
        "has_downloads": true,
        "has_discussions": false,
        "archived": false,
        "disabled": false,
        "visibility": if repository.private { "private" } else { "public" },
        "pushed_at": timestamp(repository.pushed_at),
        "created_at": timestamp(repository.created_at),
        "updated_at": timestamp(repository.pushed_at),
        "allow_forking": true,
        "web_commit_signoff_required": false,
        "license": null,
    });
    if let (Value::Object(map), Value::Object(rest)) = (&mut value, rest) {
        map.extend(rest);
    }
    value
}

/// A `full-repository` (`repos/get`): the repository and the counts only it carries.
pub(crate) fn full_repository(state: &SimState, repository: &Repository) -> Value {
    let mut value = self::repository(state, repository);
    value["network_count"] = json!(0);
    value["subscribers_count"] = json!(0);
    value
}

/// A `repository-collaborator-permission`: the legacy permission (`admin`, `write`, `read`,
/// `none`), the role, and the user as a collaborator.
pub(crate) fn collaborator_permission(state: &SimState, login: &str, role: &str) -> Value {
    let permission = match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    };
    let rank = ["read", "triage", "write", "maintain", "admin"]
        .iter()
        .position(|candidate| *candidate == role)
        .map_or(0, |index| index + 1);
    let mut collaborator = user(state, login);
    collaborator["role_name"] = json!(role);
    collaborator["permissions"] = json!({
        "pull": rank >= 1,
        "triage": rank >= 2,
        "push": rank >= 3,
        "maintain": rank >= 4,
        "admin": rank >= 5,
    });
    json!({"permission": permission, "role_name": role, "user": collaborator})
}

/// A `minimal-repository` (combined status, installation repositories).
pub(crate) fn minimal_repository(state: &SimState, repository: &Repository) -> Value {
    let mut map = repository_urls(state, repository);
    let owner = owner_account(state, &repository.owner);
    let fields = json!({
        "id": repository.id,
        "node_id": node_id("R", repository.id),
        "name": repository.name,
        "full_name": repository.full_name(),
        "owner": account_json(&state.base_url, &owner),
        "private": repository.private,
        "description": null,
        "fork": false,
    });
    if let Value::Object(fields) = fields {
        map.extend(fields);
    }
    Value::Object(map)
}

/// A `label`.
pub(crate) fn label(state: &SimState, repository: &Repository, label: &Label) -> Value {
    let name =
        percent_encoding::utf8_percent_encode(&label.name, percent_encoding::NON_ALPHANUMERIC);
    json!({
        "id": label.id,
        "node_id": node_id("LA", label.id),
        "url": format!("{}/repos/{}/labels/{name}", state.base_url, repository.full_name()),
        "name": label.name,
        "description": label.description,
        "color": label.color,
        "default": false,
    })
}

fn pull_labels(state: &SimState, repository: &Repository, pull: &PullRequest) -> Vec<Value> {
    pull.labels
        .iter()
        .filter_map(|name| repository.label(name))
        .map(|found| label(state, repository, found))
        .collect()
}

/// The numbers `pulls/get` reports about a pull request's diff and commits.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PullStats {
    pub commits: usize,
    pub additions: u64,
    pub deletions: u64,
    pub changed_files: usize,
}

/// A `pull-request`.
pub(crate) fn pull_request(
    state: &SimState,
    repository: &Repository,
    pull: &PullRequest,
    head_sha: &str,
    base_sha: &str,
    pull_stats: PullStats,
) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let api = format!("{base}/repos/{full_name}");
    let number = pull.number;
    let html = format!("{base}/{full_name}/pull/{number}");
    let statuses = format!("{api}/statuses/{head_sha}");
    let branch = |reference: &str, sha: &str| {
        json!({
            "label": format!("{}:{reference}", repository.owner),
            "ref": reference,
            "sha": sha,
            "user": user(state, &repository.owner),
            "repo": self::repository(state, repository),
        })
    };
    // A pull request from a fork shows the fork as its head's repository.
    let fork = pull
        .head_repository
        .as_ref()
        .and_then(|key| state.repositories.get(key));
    let head = match fork {
        Some(fork) => json!({
            "label": format!("{}:{}", fork.owner, pull.head_ref),
            "ref": pull.head_ref,
            "sha": head_sha,
            "user": user(state, &fork.owner),
            "repo": self::repository(state, fork),
        }),
        None => branch(&pull.head_ref, head_sha),
    };
    let review_comments = pull.review_comments.len();
    let links = json!({
        "self": {"href": format!("{api}/pulls/{number}")},
        "html": {"href": html},
        "issue": {"href": format!("{api}/issues/{number}")},
        "comments": {"href": format!("{api}/issues/{number}/comments")},
        "review_comments": {"href": format!("{api}/pulls/{number}/comments")},
        "review_comment": {"href": format!("{api}/pulls/comments{{/number}}")},
        "commits": {"href": format!("{api}/pulls/{number}/commits")},
        "statuses": {"href": statuses},
    });
    let mut value = json!({
        "url": format!("{api}/pulls/{number}"),
        "id": pull.id,
        "node_id": node_id("PR", pull.id),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": format!("{api}/issues/{number}"),
        "commits_url": format!("{api}/pulls/{number}/commits"),
        "review_comments_url": format!("{api}/pulls/{number}/comments"),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{api}/issues/{number}/comments"),
        "statuses_url": statuses,
        "number": number,
        "state": if pull.open { "open" } else { "closed" },
        "locked": false,
        "title": pull.title,
        "user": user(state, &pull.author),
        "body": pull.body,
        "labels": pull_labels(state, repository, pull),
        "milestone": null,
        "active_lock_reason": null,
        "created_at": timestamp(pull.created_at),
        "updated_at": timestamp(pull.updated_at),
        "closed_at": optional_timestamp(pull.closed_at),
        "merged_at": null,
        "merge_commit_sha": null,
    });
    let rest = json!({
        "assignee": null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": head,
        "base": branch(&pull.base_ref, base_sha),
        "_links": links,
        "author_association": author_association(repository, &pull.author),
        "auto_merge": null,
        "draft": pull.draft,
        "merged": false,
        "mergeable": null,
        "rebaseable": null,
        "mergeable_state": "unknown",
        "merged_by": null,
        "comments": pull.issue_comments.len(),
        "review_comments": review_comments,
        "maintainer_can_modify": false,
        "commits": pull_stats.commits,
        "additions": pull_stats.additions,
        "deletions": pull_stats.deletions,
        "changed_files": pull_stats.changed_files,
    });
    if let (Value::Object(map), Value::Object(rest)) = (&mut value, rest) {
        map.extend(rest);
    }
    value
}

/// A `pull-request-review`.
pub(crate) fn review(
    state: &SimState,
    repository: &Repository,
    pull: &PullRequest,
    review: &Review,
) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let html = format!(
        "{base}/{full_name}/pull/{}#pullrequestreview-{}",
        pull.number, review.id
    );
    let pull_url = format!("{base}/repos/{full_name}/pulls/{}", pull.number);
    let mut value = json!({
        "id": review.id,
        "node_id": node_id("PRR", review.id),
        "user": user(state, &review.user),
        "body": review.body,
        "state": review.state.as_str(),
        "html_url": html,
        "pull_request_url": pull_url,
        "_links": {
            "html": {"href": html},
            "pull_request": {"href": pull_url},
        },
        "commit_id": review.commit_id,
        "author_association": author_association(repository, &review.user),
    });
    if let Some(submitted_at) = review.submitted_at {
        value["submitted_at"] = Value::String(timestamp(submitted_at));
    }
    value
}

/// A `pull-request-review-comment`.
pub(crate) fn review_comment(
    state: &SimState,
    repository: &Repository,
    pull: &PullRequest,
    comment: &ReviewComment,
) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let url = format!("{base}/repos/{full_name}/pulls/comments/{}", comment.id);
    let html = format!(
        "{base}/{full_name}/pull/{}#discussion_r{}",
        pull.number, comment.id
    );
    let pull_url = format!("{base}/repos/{full_name}/pulls/{}", pull.number);
    let mut value = json!({
        "url": url,
        "pull_request_review_id": comment.review_id,
        "id": comment.id,
        "node_id": node_id("PRRC", comment.id),
        "diff_hunk": comment.diff_hunk,
        "path": comment.path,
        "commit_id": comment.commit_id,
        "original_commit_id": comment.commit_id,
        "user": user(state, &comment.user),
        "body": comment.body,
        "created_at": timestamp(comment.created_at),
        "updated_at": timestamp(comment.updated_at),
        "html_url": html,
        "pull_request_url": pull_url,
        "author_association": author_association(repository, &comment.user),
        "_links": {
            "self": {"href": url},
            "html": {"href": html},
            "pull_request": {"href": pull_url},
        },
        "reactions": reactions(&url),
        "start_line": comment.start_line,
        "original_start_line": comment.start_line,
        "start_side": comment.start_side,
        "subject_type": comment.subject_type,
    });
    // Not nullable in GitHub's schema: a file-level comment leaves them out.
    if let Some(line) = comment.line {
        value["line"] = json!(line);
        value["original_line"] = json!(line);
    }
    if let Some(side) = &comment.side {
        value["side"] = json!(side);
    }
    if let Some(position) = comment.position {
        value["position"] = json!(position);
        value["original_position"] = json!(position);
    }
    if let Some(parent) = comment.in_reply_to {
        value["in_reply_to_id"] = json!(parent);
    }
    value
}

fn reactions(url: &str) -> Value {
    reaction_rollup(url, &[])
}

/// The `reactions` summary of a record: counts per content.
fn reaction_rollup(url: &str, reactions: &[Reaction]) -> Value {
    let count = |content: &str| {
        reactions
            .iter()
            .filter(|reaction| reaction.content == content)
            .count()
    };
    json!({
        "url": format!("{url}/reactions"),
        "total_count": reactions.len(),
        "+1": count("+1"),
        "-1": count("-1"),
        "laugh": count("laugh"),
        "confused": count("confused"),
        "heart": count("heart"),
        "hooray": count("hooray"),
        "eyes": count("eyes"),
        "rocket": count("rocket"),
    })
}

/// A `reaction`.
pub(crate) fn reaction(state: &SimState, reaction: &Reaction) -> Value {
    json!({
        "id": reaction.id,
        "node_id": node_id("REA", reaction.id),
        "user": user(state, &reaction.user),
        "content": reaction.content,
        "created_at": timestamp(reaction.created_at),
    })
}

/// An `issue-comment`.
pub(crate) fn issue_comment(
    state: &SimState,
    repository: &Repository,
    pull: &PullRequest,
    comment: &IssueComment,
) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let url = format!("{base}/repos/{full_name}/issues/comments/{}", comment.id);
    json!({
        "id": comment.id,
        "node_id": node_id("IC", comment.id),
        "url": url,
        "html_url": format!("{base}/{full_name}/pull/{}#issuecomment-{}", pull.number, comment.id),
        "body": comment.body,
        "user": user(state, &comment.user),
        "created_at": timestamp(comment.created_at),
        "updated_at": timestamp(comment.updated_at),
        "issue_url": format!("{base}/repos/{full_name}/issues/{}", pull.number),
        "author_association": author_association(repository, &comment.user),
        "performed_via_github_app": null,
        "reactions": reaction_rollup(&url, &comment.reactions),
    })
}

/// A `diff-entry` (pull request files, commit files).
pub(crate) fn diff_entry(
    state: &SimState,
    repository: &Repository,
    head_sha: &str,
    file: &DiffFile,
) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let encoded_path: String = file
        .path
        .split('/')
        .map(|segment| {
            percent_encoding::utf8_percent_encode(segment, percent_encoding::NON_ALPHANUMERIC)
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("/");
    let mut value = json!({
        "sha": file.blob_sha,
        "filename": file.path,
        "status": file.status.as_str(),
        "additions": file.additions,
        "deletions": file.deletions,
        "changes": file.additions + file.deletions,
        "blob_url": format!("{base}/{full_name}/blob/{head_sha}/{encoded_path}"),
        "raw_url": format!("{base}/{full_name}/raw/{head_sha}/{encoded_path}"),
        "contents_url": format!("{base}/repos/{full_name}/contents/{encoded_path}?ref={head_sha}"),
    });
    if let Some(patch) = file.patch.as_ref().filter(|_| !file.binary) {
        value["patch"] = Value::String(patch.clone());
    }
    if let Some(previous) = &file.previous_path {
        value["previous_filename"] = Value::String(previous.clone());
    }
    value
}

fn git_user(signature: &super::git::Signature) -> Value {
    json!({
        "name": signature.name,
        "email": signature.email,
        "date": timestamp(signature.date),
    })
}

/// A `commit` with its `stats` and `files`.
pub(crate) fn commit(
    state: &SimState,
    repository: &Repository,
    info: &CommitInfo,
    files: &[DiffFile],
) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let api = format!("{base}/repos/{full_name}");
    let additions: u64 = files.iter().map(|file| file.additions).sum();
    let deletions: u64 = files.iter().map(|file| file.deletions).sum();
    let account_for = |email: &str| {
        state
            .accounts
            .values()
            .find(|account| commit_email(&account.login).eq_ignore_ascii_case(email))
            .map_or(Value::Null, |account| account_json(base, account))
    };
    json!({
        "url": format!("{api}/commits/{}", info.sha),
        "sha": info.sha,
        "node_id": node_id("C", u64::from_str_radix(&info.sha[..12.min(info.sha.len())], 16).unwrap_or(0)),
        "html_url": format!("{base}/{full_name}/commit/{}", info.sha),
        "comments_url": format!("{api}/commits/{}/comments", info.sha),
        "commit": {
            "url": format!("{api}/git/commits/{}", info.sha),
            "author": git_user(&info.author),
            "committer": git_user(&info.committer),
            "message": info.message,
            "tree": {"url": format!("{api}/git/trees/{}", info.tree), "sha": info.tree},
            "comment_count": 0,
            "verification": {
                "verified": false,
                "reason": "unsigned",
                "signature": null,
                "payload": null,
                "verified_at": null,
            },
        },
        "author": account_for(&info.author.email),
        "committer": account_for(&info.committer.email),
        "parents": info.parents.iter().map(|parent| json!({
            "url": format!("{api}/commits/{parent}"),
            "html_url": format!("{base}/{full_name}/commit/{parent}"),
            "sha": parent,
        })).collect::<Vec<_>>(),
        "stats": {"additions": additions, "deletions": deletions, "total": additions + deletions},
        "files": files.iter().map(|file| diff_entry(state, repository, &info.sha, file)).collect::<Vec<_>>(),
    })
}

/// A `commit` as lists show it (pull request commits, comparisons): no `stats`, no `files`.
pub(crate) fn commit_summary(
    state: &SimState,
    repository: &Repository,
    info: &CommitInfo,
) -> Value {
    let mut value = commit(state, repository, info, &[]);
    if let Value::Object(map) = &mut value {
        map.remove("stats");
        map.remove("files");
    }
    value
}

/// The e-mail address the scenario helpers commit as for a login.
pub(crate) fn commit_email(login: &str) -> String {
    format!("{login}@users.noreply.github.com")
}

/// A `check-run`.
pub(crate) fn check_run(state: &SimState, repository: &Repository, run: &CheckRun) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let url = format!("{base}/repos/{full_name}/check-runs/{}", run.id);
    let app = run
        .app_id
        .and_then(|id| state.apps.get(&id))
        .map_or(Value::Null, |app| integration(state, repository, app));
    json!({
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": node_id("CR", run.id),
        "external_id": run.external_id.as_deref().unwrap_or(""),
        "url": url,
        "html_url": format!("{base}/{full_name}/runs/{}", run.id),
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": timestamp(run.started_at),
        "completed_at": optional_timestamp(run.completed_at),
        "output": {
            "title": run.output_title,
            "summary": run.output_summary,
            "text": run.output_text,
            "annotations_count": 0,
            "annotations_url": format!("{url}/annotations"),
        },
        "name": run.name,
        "check_suite": {"id": run.id + 1},
        "app": app,
        "pull_requests": [],
    })
}

/// An `integration` (the app behind a check run). The simulator does not model who registered
/// an app: the repository's owner stands in as its owner.
fn integration(state: &SimState, repository: &Repository, app: &App) -> Value {
    let base = &state.base_url;
    let owner = owner_account(state, &repository.owner);
    json!({
        "id": app.id,
        "slug": app.slug,
        "node_id": node_id("A", app.id),
        "client_id": app.client_id,
        "owner": account_json(base, &owner),
        "name": app.slug,
        "description": null,
        "external_url": format!("{base}/apps/{}", app.slug),
        "html_url": format!("{base}/apps/{}", app.slug),
        "created_at": timestamp(repository.created_at),
        "updated_at": timestamp(repository.created_at),
        "permissions": installation_permissions(),
        "events": ["pull_request", "push"],
    })
}

/// A `status` (the list of statuses for a ref).
pub(crate) fn status(state: &SimState, repository: &Repository, status: &CommitStatus) -> Value {
    let mut value = simple_status(state, repository, status);
    value["creator"] = user(state, &status.creator);
    value
}

/// A `simple-commit-status` (inside a combined status).
pub(crate) fn simple_status(
    state: &SimState,
    repository: &Repository,
    status: &CommitStatus,
) -> Value {
    let base = &state.base_url;
    let creator_id = state
        .account(&status.creator)
        .map_or(0, |account| account.id);
    json!({
        "url": format!("{base}/repos/{}/statuses/{}", repository.full_name(), status.sha),
        "avatar_url": format!("{base}/avatars/u/{creator_id}?v=4"),
        "id": status.id,
        "node_id": node_id("SC", status.id),
        "state": status.state,
        "description": status.description,
        "target_url": status.target_url,
        "context": status.context,
        "created_at": timestamp(status.created_at),
        "updated_at": timestamp(status.created_at),
    })
}

/// An `issue-search-result-item` for a pull request.
pub(crate) fn search_item(state: &SimState, repository: &Repository, pull: &PullRequest) -> Value {
    let base = &state.base_url;
    let full_name = repository.full_name();
    let api = format!("{base}/repos/{full_name}");
    let number = pull.number;
    let mut item = json!({
        "url": format!("{api}/issues/{number}"),
        "repository_url": api,
        "labels_url": format!("{api}/issues/{number}/labels{{/name}}"),
        "comments_url": format!("{api}/issues/{number}/comments"),
        "events_url": format!("{api}/issues/{number}/events"),
        "html_url": format!("{base}/{full_name}/pull/{number}"),
        "id": pull.issue_id,
        "node_id": node_id("PR", pull.id),
        "number": number,
        "title": pull.title,
        "user": user(state, &pull.author),
        "labels": pull_labels(state, repository, pull),
        "state": if pull.open { "open" } else { "closed" },
        "locked": false,
        "assignee": null,
        "assignees": [],
        "milestone": null,
        "comments": pull.issue_comments.len(),
        "created_at": timestamp(pull.created_at),
        "updated_at": timestamp(pull.updated_at),
        "closed_at": optional_timestamp(pull.closed_at),
        "author_association": author_association(repository, &pull.author),
        "active_lock_reason": null,
        "draft": pull.draft,
        "pull_request": {
            "url": format!("{api}/pulls/{number}"),
            "html_url": format!("{base}/{full_name}/pull/{number}"),
            "diff_url": format!("{base}/{full_name}/pull/{number}.diff"),
            "patch_url": format!("{base}/{full_name}/pull/{number}.patch"),
            "merged_at": null,
        },
        "reactions": reactions(&format!("{api}/issues/{number}")),
        "timeline_url": format!("{api}/issues/{number}/timeline"),
        "performed_via_github_app": null,
        "state_reason": null,
        "score": 1.0,
    });
    // The schema's `body` is a plain string: an empty description is left out.
    if let Some(body) = &pull.body {
        item["body"] = Value::String(body.clone());
    }
    item
}

/// The permissions every simulated installation has.
pub(crate) fn installation_permissions() -> Value {
    json!({
        "checks": "write",
        "contents": "write",
        "issues": "write",
        "metadata": "read",
        "pull_requests": "write",
        "statuses": "write",
    })
}

/// An `installation`.
pub(crate) fn installation(state: &SimState, installation: &Installation, app: &App) -> Value {
    let base = &state.base_url;
    let account = owner_account(state, &installation.account);
    json!({
        "id": installation.id,
        "account": account_json(base, &account),
        "repository_selection": match installation.selection {
            RepositorySelection::All => "all",
            RepositorySelection::Selected(_) => "selected",
        },
        "access_tokens_url": format!("{base}/app/installations/{}/access_tokens", installation.id),
        "repositories_url": format!("{base}/installation/repositories"),
        "html_url": format!("{base}/organizations/{}/settings/installations/{}", account.login, installation.id),
        "app_id": app.id,
        "client_id": app.client_id,
        "app_slug": app.slug,
        "target_id": account.id,
        "target_type": account.kind.as_str(),
        "permissions": installation_permissions(),
        "events": ["pull_request", "push"],
        "created_at": timestamp(installation.created_at),
        "updated_at": timestamp(installation.created_at),
        "single_file_name": null,
        "suspended_by": null,
        "suspended_at": installation.suspended_at.map(timestamp),
    })
}
