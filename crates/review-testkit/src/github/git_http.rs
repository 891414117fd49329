//! git's smart HTTP protocol for the simulator's repositories, so real `git clone`, `git
//! fetch` and `git push` work against `http://127.0.0.1:PORT/{owner}/{repo}.git`.
//!
//! The protocol itself is git's own `git http-backend`, run as a CGI program per request. The
//! simulator only decides who may do what (fetching a public repository needs no credential;
//! pushing needs a valid token, sent the way git sends it: HTTP Basic with the token as
//! password, or an `Authorization` header from `http.extraHeader`), injects faults, logs the
//! request, and after a push moves the affected pull requests' head (their `updated_at`).

use std::process::Stdio;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, header};
use chrono::Utc;
use tokio::io::AsyncWriteExt as _;

use super::api::Actor;
use super::auth;
use super::faults::Fault;
use super::log::RequestRecord;
use super::routes::can_see;
use super::server::Shared;

/// Whether a path is `/{owner}/{repo}.git/…`.
pub(crate) fn is_git_path(path: &str) -> bool {
    split(path).is_some()
}

/// `(owner, repository name without .git, rest)`.
fn split(path: &str) -> Option<(&str, &str, &str)> {
    let trimmed = path.strip_prefix('/')?;
    let mut parts = trimmed.splitn(3, '/');
    let owner = parts.next()?;
    let repository = parts.next()?.strip_suffix(".git")?;
    let rest = parts.next()?;
    if owner.is_empty() || repository.is_empty() || rest.is_empty() {
        return None;
    }
    Some((owner, repository, rest))
}

fn status_response(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(text.to_owned()));
    *response.status_mut() = status;
    response
}

/// Why a git request is refused.
enum GitRefusal {
    /// 401 with `WWW-Authenticate`, so git asks for (or reports missing) credentials.
    Unauthorized,
    /// 404, as GitHub answers for a repository the caller cannot see.
    NotFound,
}

fn unauthorized() -> Response<Body> {
    let mut response = status_response(StatusCode::UNAUTHORIZED, "Authentication failed\n");
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Basic realm=\"GitHub\""),
    );
    response
}

#[allow(clippy::too_many_lines)] // One linear flow: admit, run the backend, record.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    method: Method,
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let Some((owner, name, rest)) = split(&path) else {
        return status_response(StatusCode::NOT_FOUND, "Not Found\n");
    };
    let (owner, name, rest) = (owner.to_owned(), name.to_owned(), rest.to_owned());
    let (operation_id, template) = match rest.as_str() {
        "info/refs" => ("git/info-refs", "/{owner}/{repo}.git/info/refs"),
        "git-upload-pack" => ("git/upload-pack", "/{owner}/{repo}.git/git-upload-pack"),
        "git-receive-pack" => ("git/receive-pack", "/{owner}/{repo}.git/git-receive-pack"),
        _ => ("git/other", "/{owner}/{repo}.git/{path}"),
    };
    let pushing = rest == "git-receive-pack"
        || (rest == "info/refs" && query.contains("service=git-receive-pack"));
    let mut record = RequestRecord {
        sequence: 0,
        received_at: Utc::now(),
        method: method.as_str().to_owned(),
        operation_id: Some(operation_id.to_owned()),
        route: Some(template.to_owned()),
        path: path.clone(),
        query: query.clone(),
        status: 0,
        cost: 0,
        resource: None,
        actor: None,
        conditional: false,
        fault: None,
        body: None,
        schema_violations: Vec::new(),
    };
    let now = Utc::now();
    let admitted = {
        let mut state = shared.lock();
        let admitted = (|| {
            let credential = auth::credential(&headers).map_err(|_| GitRefusal::Unauthorized)?;
            let (actor, _) = auth::authenticate(&state, &credential, now)
                .map_err(|_| GitRefusal::Unauthorized)?;
            record.actor = actor.describe();
            let repository = state
                .repository(&owner, &name)
                .ok_or(GitRefusal::NotFound)?;
            if matches!(actor, Actor::App { .. }) || (pushing && actor == Actor::Anonymous) {
                return Err(GitRefusal::Unauthorized);
            }
            if !can_see(&state, &actor, repository) {
                return Err(if actor == Actor::Anonymous {
                    GitRefusal::Unauthorized
                } else {
                    GitRefusal::NotFound
                });
            }
            let login = actor.login().unwrap_or("anonymous").to_owned();
            let git_dir = state.git_dir(&repository.owner, &repository.name);
            Ok((login, git_dir))
        })();
        let fault = state
            .faults
            .iter_mut()
            .find(|rule| rule.matches(operation_id, method.as_str(), template, &path))
            .map(|rule| {
                rule.remaining -= 1;
                rule.fault.clone()
            });
        state.faults.retain(|rule| rule.remaining > 0);
        admitted.map(|(login, git_dir)| (login, git_dir, fault, state.root.clone()))
    };
    let (login, git_dir, fault, root) = match admitted {
        Ok(admitted) => admitted,
        Err(refusal) => {
            let response = match refusal {
                GitRefusal::Unauthorized => unauthorized(),
                GitRefusal::NotFound => {
                    status_response(StatusCode::NOT_FOUND, "Repository not found.\n")
                }
            };
            record.status = response.status().as_u16();
            push_record(&shared, record);
            return response;
        }
    };
    record.fault = fault.as_ref().map(Fault::describe);
    match &fault {
        Some(Fault::ServerError(status)) => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            record.status = status.as_u16();
            push_record(&shared, record);
            return status_response(status, "Server Error\n");
        }
        Some(Fault::SecondaryRateLimitWithoutRetryAfter) => {
            record.status = StatusCode::FORBIDDEN.as_u16();
            push_record(&shared, record);
            return status_response(
                StatusCode::FORBIDDEN,
                "You have exceeded a secondary rate limit.\n",
            );
        }
        Some(
            Fault::SecondaryRateLimit { retry_after } | Fault::TooManyRequests { retry_after },
        ) => {
            let status = if matches!(fault, Some(Fault::TooManyRequests { .. })) {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::FORBIDDEN
            };
            record.status = status.as_u16();
            push_record(&shared, record);
            let mut response =
                status_response(status, "You have exceeded a secondary rate limit.\n");
            if let Ok(value) = HeaderValue::from_str(&retry_after.to_string()) {
                response.headers_mut().insert(header::RETRY_AFTER, value);
            }
            return response;
        }
        Some(Fault::Hang(duration)) => tokio::time::sleep(*duration).await,
        // Git answers carry no `Link` header to replace.
        Some(Fault::DropResponse | Fault::ReplaceLinkHeader(_)) | None => {}
    }

    let relative = git_dir
        .strip_prefix(&root)
        .map(|relative| relative.to_string_lossy().into_owned())
        .unwrap_or_default();
    let response = match run_backend(
        &root, &relative, &rest, &method, &query, &headers, &login, body,
    )
    .await
    {
        Ok(response) => response,
        Err(message) => {
            tracing::error!(%message, "github simulator: git http-backend failed");
            status_response(StatusCode::INTERNAL_SERVER_ERROR, &format!("{message}\n"))
        }
    };
    if rest == "git-receive-pack" && response.status().is_success() {
        refresh_after_push(&shared, &owner, &name);
    }
    let response = if fault == Some(Fault::DropResponse) {
        status_response(StatusCode::BAD_GATEWAY, "Server Error\n")
    } else {
        response
    };
    record.status = response.status().as_u16();
    push_record(&shared, record);
    response
}

fn push_record(shared: &Shared, mut record: RequestRecord) {
    let mut state = shared.lock();
    record.sequence = state.log.len() as u64 + 1;
    state.log.push(record);
}

/// A push may have moved pull request heads: bump their `updated_at` (GitHub's `synchronize`).
fn refresh_after_push(shared: &Shared, owner: &str, name: &str) {
    let now = Utc::now();
    let mut state = shared.lock();
    let Some(repository) = state.repository(owner, name) else {
        return;
    };
    let git = state.git(repository);
    let key = repository.full_name().to_ascii_lowercase();
    let heads: Vec<(u64, Option<String>)> = repository
        .pulls
        .values()
        .map(|pull| (pull.number, git.branch_sha(&pull.head_ref).ok().flatten()))
        .collect();
    if let Some(repository) = state.repositories.get_mut(&key) {
        repository.pushed_at = now;
        for (number, head) in heads {
            if let (Some(pull), Some(head)) = (repository.pulls.get_mut(&number), head)
                && pull.last_head_sha != head
            {
                // GitHub moves `refs/pull/{number}/head` with the branch.
                if let Err(error) = git.update_pull_ref(number, &head) {
                    tracing::warn!(%error, number, "could not move refs/pull/N/head");
                }
                pull.last_head_sha = head;
                pull.updated_at = now;
            }
        }
    }
}

/// Runs `git http-backend` for one request and turns its CGI answer into a response.
#[allow(clippy::too_many_arguments)] // The CGI environment is this many things.
async fn run_backend(
    root: &std::path::Path,
    relative_git_dir: &str,
    rest: &str,
    method: &Method,
    query: &str,
    headers: &HeaderMap,
    login: &str,
    body: Bytes,
) -> Result<Response<Body>, String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let std_command = super::git::isolated_git_command();
    let mut command = tokio::process::Command::from(std_command);
    command
        .arg("http-backend")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("PATH_INFO", format!("/{relative_git_dir}/{rest}"))
        .env("REQUEST_METHOD", method.as_str())
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", login)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|error| format!("cannot start git http-backend: {error}"))?;
    let mut stdin = child.stdin.take().ok_or("git http-backend has no stdin")?;
    let writer = async move {
        let result = stdin.write_all(&body).await;
        drop(stdin);
        result
    };
    let (written, output) = tokio::join!(writer, child.wait_with_output());
    let output = output.map_err(|error| format!("git http-backend failed: {error}"))?;
    if let Err(error) = written {
        // The backend may stop reading early (e.g. a refused push); its answer still counts.
        tracing::debug!(%error, "github simulator: git http-backend closed stdin early");
    }
    parse_cgi(&output.stdout).ok_or_else(|| {
        format!(
            "git http-backend answered without CGI headers (stderr: {})",
            String::from_utf8_lossy(&output.stderr).trim()
        )
    })
}

/// Splits a CGI answer into status, headers and body.
fn parse_cgi(output: &[u8]) -> Option<Response<Body>> {
    let (header_end, separator) = output
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|index| (index, 4))
        .or_else(|| {
            output
                .windows(2)
                .position(|window| window == b"\n\n")
                .map(|index| (index, 2))
        })?;
    let head = String::from_utf8_lossy(&output[..header_end]);
    let mut response = Response::new(Body::from(output[header_end + separator..].to_vec()));
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next()?.parse::<u16>().ok()?;
            *response.status_mut() = StatusCode::from_u16(code).ok()?;
        } else if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.trim().as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    Some(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_paths() {
        assert_eq!(
            split("/acme/widgets.git/info/refs"),
            Some(("acme", "widgets", "info/refs"))
        );
        assert!(is_git_path("/acme/widgets.git/git-upload-pack"));
        assert!(!is_git_path("/repos/acme/widgets/pulls/1"));
        assert!(!is_git_path("/acme/widgets.git"));
    }

    #[test]
    fn cgi_answers_are_split() {
        let response =
            parse_cgi(b"Status: 403 Forbidden\r\nContent-Type: text/plain\r\n\r\nno").unwrap();
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let response =
            parse_cgi(b"Content-Type: application/x-git-upload-pack-advertisement\n\n001e")
                .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(parse_cgi(b"garbage").is_none());
    }
}
