//! The HTTP server: an axum app on its own thread and runtime, so the simulator works the same
//! under any test runtime (or none). Every API request goes through one pipeline:
//!
//! 1. match the operation (method + OpenAPI path template);
//! 2. authenticate (token, installation token, app JWT, or anonymous) — 401 `Bad credentials`;
//! 3. injected faults for the route;
//! 4. rate limits — primary budget (403 with `x-ratelimit-remaining: 0`) and the secondary
//!    content-creation limit (403 with `retry-after`);
//! 5. the request body: valid JSON (400 `Problems parsing JSON`) that conforms to the
//!    operation's request schema (422 `Invalid request`, every violation logged);
//! 6. the handler, under the state lock;
//! 7. `ETag` and `If-None-Match` → 304, which spends nothing; budget spent; `x-ratelimit-*`
//!    headers; the request log.
//!
//! Paths under `/{owner}/{repo}.git/` are git's smart HTTP protocol, served by `git
//! http-backend` (see `git_http`).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{
    HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, header,
};
use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use super::api::{Actor, ApiError, Context, Reply, ReplyBody};
use super::auth::{self, Credential};
use super::faults::Fault;
use super::log::RequestRecord;
use super::rate::{Budget, Resource};
use super::routes::{self, Auth, Operation};
use super::state::SimState;
use super::{SimError, git_http, graphql};
use crate::openapi::{OpenApi, Strictness};

/// State shared by the server and the test-facing handles.
#[derive(Debug)]
pub(crate) struct Shared {
    state: Mutex<SimState>,
    /// API requests being served right now, and the most ever served at once.
    concurrency: Mutex<(usize, usize)>,
}

/// Counts one API request as in flight until dropped.
struct InFlight<'a> {
    shared: &'a Shared,
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        let mut concurrency = self
            .shared
            .concurrency
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        concurrency.0 -= 1;
    }
}

impl Shared {
    pub fn new(state: SimState) -> Self {
        Self {
            state: Mutex::new(state),
            concurrency: Mutex::new((0, 0)),
        }
    }

    /// Counts a request in; returns the guard and how many are in flight with it.
    fn enter(&self) -> (InFlight<'_>, usize) {
        let mut concurrency = self
            .concurrency
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        concurrency.0 += 1;
        concurrency.1 = concurrency.1.max(concurrency.0);
        (InFlight { shared: self }, concurrency.0)
    }

    /// The most API requests ever served at the same time.
    pub fn peak_concurrency(&self) -> usize {
        self.concurrency
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .1
    }

    /// Locks the state. A handler that panicked cannot leave it half-written in a way that
    /// matters to a test, so a poisoned lock is taken over rather than propagated.
    pub fn lock(&self) -> MutexGuard<'_, SimState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running server; dropping it stops the server and its runtime.
#[derive(Debug)]
pub(crate) struct ServerHandle {
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Binds a listener (so the address is known before the state is built).
pub(crate) fn bind(address: SocketAddr) -> Result<std::net::TcpListener, SimError> {
    let listener = std::net::TcpListener::bind(address)
        .map_err(|source| SimError::Bind { address, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| SimError::Bind { address, source })?;
    Ok(listener)
}

/// Serves `shared` on `listener` from a dedicated thread with its own runtime.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    shared: Arc<Shared>,
) -> Result<ServerHandle, SimError> {
    let (shutdown_sender, shutdown_receiver) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("github-sim")
        .enable_all()
        .build()
        .map_err(|source| SimError::Runtime { source })?;
    let thread = std::thread::Builder::new()
        .name("github-sim".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                let listener = match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => listener,
                    Err(error) => {
                        tracing::error!(%error, "github simulator: cannot use its listener");
                        return;
                    }
                };
                let app = axum::Router::new()
                    .fallback(handle)
                    .layer(DefaultBodyLimit::disable())
                    .with_state(shared);
                tokio::select! {
                    result = axum::serve(listener, app) => {
                        if let Err(error) = result {
                            tracing::error!(%error, "github simulator: server stopped");
                        }
                    }
                    _ = shutdown_receiver => {}
                }
            });
            // Connections still open (a hanging request, a keep-alive client) die with the runtime.
            runtime.shutdown_background();
        })
        .map_err(|source| SimError::Runtime { source })?;
    Ok(ServerHandle {
        shutdown: Some(shutdown_sender),
        thread: Some(thread),
    })
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request<Body>) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(error) => {
            return plain(
                StatusCode::BAD_REQUEST,
                &format!("could not read the request body: {error}"),
            );
        }
    };
    let path = parts.uri.path().to_owned();
    let query = parts.uri.query().unwrap_or_default().to_owned();
    // Each request runs to completion in its own task, even when the client hangs up (a client
    // that timed out does not undo a write GitHub already started).
    let work = if path == "/graphql" {
        tokio::task::spawn_blocking(move || {
            graphql::serve(&shared, &parts.method, &parts.headers, &body)
        })
    } else if git_http::is_git_path(&path) {
        tokio::spawn(git_http::serve(
            shared,
            parts.method,
            path,
            query,
            parts.headers,
            body,
        ))
    } else {
        tokio::spawn(api(shared, parts.method, path, query, parts.headers, body))
    };
    work.await.unwrap_or_else(|error| {
        plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!("the simulator failed to answer: {error}"),
        )
    })
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut response = Response::new(Body::from(text.to_owned()));
    *response.status_mut() = status;
    response
}

/// What the pipeline decided before the handler runs.
struct Admission {
    actor: Actor,
    budget_key: String,
    fault: Option<Fault>,
}

/// Why a request was refused before its handler ran, and whose budget it still reports.
struct Refusal {
    error: Box<ApiError>,
    budget_key: Option<String>,
}

impl Refusal {
    fn new(error: ApiError, budget_key: Option<String>) -> Self {
        Self {
            error: Box::new(error),
            budget_key,
        }
    }
}

/// A finished answer plus what the log needs.
pub(crate) struct Outcome {
    pub status: StatusCode,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
    pub cost: u64,
}

#[allow(clippy::too_many_lines)] // One linear pipeline reads better than scattered pieces.
async fn api(
    shared: Arc<Shared>,
    method: Method,
    path: String,
    query: String,
    headers: HeaderMap,
    body: Bytes,
) -> Response<Body> {
    let now = Utc::now();
    let conditional = headers.contains_key(header::IF_NONE_MATCH);
    let mut record = RequestRecord {
        sequence: 0,
        received_at: now,
        method: method.as_str().to_owned(),
        operation_id: None,
        route: None,
        path: path.clone(),
        query: query.clone(),
        status: 0,
        cost: 0,
        resource: None,
        actor: None,
        conditional,
        fault: None,
        body: None,
        schema_violations: Vec::new(),
    };
    let Some((operation, params)) = routes::match_operation(method.as_str(), &path) else {
        let error = ApiError::not_found();
        return finish(
            &shared,
            record,
            error_outcome(&error, "https://docs.github.com/rest"),
            None,
        );
    };
    record.operation_id = Some(operation.id.to_owned());
    record.route = Some(operation.template.to_owned());
    record.resource = Some(operation.resource.as_str().to_owned());
    // An empty body and a JSON `null` both mean "no body" (some clients send `null` for a POST
    // without parameters).
    let parsed_body = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        let Ok(value) = serde_json::from_slice::<Value>(&body) else {
            let error = ApiError::bad_request("Problems parsing JSON");
            return finish(
                &shared,
                record,
                error_outcome(&error, operation.documentation_url),
                None,
            );
        };
        Some(value).filter(|value| !value.is_null())
    };
    record.body.clone_from(&parsed_body);

    // GitHub's concurrency limit: past it, the secondary limit answers (no `retry-after`).
    let (_in_flight, concurrent) = shared.enter();
    if concurrent > shared.lock().options.max_concurrent_requests {
        let error = secondary_limit(None);
        return finish(
            &shared,
            record,
            error_outcome(&error, operation.documentation_url),
            None,
        );
    }

    // Authentication, faults and budgets, under one lock.
    let admission = {
        let mut state = shared.lock();
        match admit(&mut state, operation, &method, &path, &headers, now) {
            Ok(admission) => admission,
            Err(Refusal { error, budget_key }) => {
                drop(state);
                let outcome = error_outcome(&error, operation.documentation_url);
                return finish(
                    &shared,
                    record,
                    outcome,
                    budget_key.map(|key| (key, operation.resource)),
                );
            }
        }
    };
    record.actor = admission.actor.describe();
    record.fault = admission.fault.as_ref().map(Fault::describe);
    let budget = Some((admission.budget_key.clone(), operation.resource));
    match &admission.fault {
        Some(Fault::ServerError(status)) => {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let error = ApiError::new(status, "Server Error");
            return finish(
                &shared,
                record,
                error_outcome(&error, operation.documentation_url),
                budget,
            );
        }
        Some(Fault::SecondaryRateLimit { retry_after }) => {
            let error = secondary_limit(Some(*retry_after));
            return finish(
                &shared,
                record,
                error_outcome(&error, operation.documentation_url),
                budget,
            );
        }
        Some(Fault::SecondaryRateLimitWithoutRetryAfter) => {
            let error = secondary_limit(None);
            return finish(
                &shared,
                record,
                error_outcome(&error, operation.documentation_url),
                budget,
            );
        }
        Some(Fault::TooManyRequests { retry_after }) => {
            let error = ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            )
            .with_documentation(SECONDARY_DOCS)
            .with_header("retry-after", retry_after.to_string());
            return finish(
                &shared,
                record,
                error_outcome(&error, operation.documentation_url),
                budget,
            );
        }
        Some(Fault::Hang(duration)) => tokio::time::sleep(*duration).await,
        Some(Fault::DropResponse | Fault::ReplaceLinkHeader(_)) | None => {}
    }

    // The request body against the operation's schema.
    let options_validate = shared.lock().options.validate_request_bodies;
    if options_validate {
        let document = OpenApi::github_subset();
        let body_value = parsed_body.clone().unwrap_or(Value::Null);
        let has_schema = document
            .request_schema(operation.id)
            .ok()
            .flatten()
            .is_some();
        if has_schema && (parsed_body.is_some() || document.request_body_required(operation.id)) {
            let lenient = document
                .validate_request(operation.id, &body_value, Strictness::Lenient)
                .unwrap_or_else(|error| vec![error.to_string()]);
            let strict = document
                .validate_request(operation.id, &body_value, Strictness::Strict)
                .unwrap_or_else(|error| vec![error.to_string()]);
            record.schema_violations = strict;
            // Some handlers validate their body themselves, with GitHub's own error.
            if !lenient.is_empty()
                && !operation.validates_body
                && !github_accepts_anyway(operation.id, parsed_body.as_ref())
            {
                let error = ApiError::new(
                    StatusCode::UNPROCESSABLE_ENTITY,
                    format!("Invalid request.\n\n{}", lenient.join("\n")),
                );
                let outcome = error_outcome(&error, operation.documentation_url);
                return finish(&shared, record, Outcome { cost: 1, ..outcome }, budget);
            }
        }
    }

    let query_pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect();
    let context = Context {
        params,
        query: query_pairs,
        headers: headers.clone(),
        path: path.clone(),
        body: parsed_body,
        actor: admission.actor.clone(),
        budget_key: admission.budget_key.clone(),
        now,
        max_per_page: shared.lock().options.max_per_page,
    };
    let handler_shared = shared.clone();
    let result = tokio::task::spawn_blocking(move || {
        let mut state = handler_shared.lock();
        let result = (operation.handler)(&mut state, &context);
        if operation.content_creation {
            let limit = state.core_limit_for(&context.budget_key);
            let options = state.options.clone();
            state
                .budgets
                .entry(context.budget_key.clone())
                .or_insert_with(|| Budget::new(limit, &options, now))
                .content
                .push_back(now);
        }
        result
    })
    .await;
    let result = match result {
        Ok(result) => result,
        Err(error) => Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Server Error: the handler failed: {error}"),
        )),
    };
    let mut outcome = match result {
        Ok(reply) => reply_outcome(reply, &headers, &method),
        Err(error) => Outcome {
            cost: 1,
            ..error_outcome(&error, operation.documentation_url)
        },
    };
    if !operation.costs {
        outcome.cost = 0;
    }
    if let Some(Fault::ReplaceLinkHeader(link)) = &admission.fault {
        outcome.headers.retain(|(name, _)| name != "link");
        outcome.headers.push(("link".to_owned(), link.clone()));
    }
    if admission.fault == Some(Fault::DropResponse) {
        let error = ApiError::new(StatusCode::BAD_GATEWAY, "Server Error");
        outcome = Outcome {
            cost: outcome.cost,
            ..error_outcome(&error, operation.documentation_url)
        };
    }
    finish(&shared, record, outcome, budget)
}

/// GitHub accepts a few bodies its own description rejects.
fn github_accepts_anyway(operation_id: &str, body: Option<&Value>) -> bool {
    // "You can pass an empty array to remove all labels" — but the schema says `minItems: 1`.
    operation_id == "issues/set-labels"
        && match body {
            Some(Value::Array(items)) => items.is_empty(),
            Some(Value::Object(object)) => object
                .get("labels")
                .and_then(Value::as_array)
                .is_some_and(Vec::is_empty),
            _ => false,
        }
}

const SECONDARY_DOCS: &str = "https://docs.github.com/free-pro-team@latest/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits";

fn secondary_limit(retry_after: Option<u64>) -> ApiError {
    let error = ApiError::new(
        StatusCode::FORBIDDEN,
        format!(
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID {}.",
            request_id()
        ),
    )
    .with_documentation(SECONDARY_DOCS);
    match retry_after {
        Some(seconds) => error.with_header("retry-after", seconds.to_string()),
        None => error,
    }
}

fn request_id() -> String {
    let id = uuid::Uuid::new_v4()
        .simple()
        .to_string()
        .to_ascii_uppercase();
    format!("{}:{}:{}", &id[..4], &id[4..10], &id[10..18])
}

/// Authenticates, finds an injected fault, and checks the budgets.
fn admit(
    state: &mut SimState,
    operation: &'static Operation,
    method: &Method,
    path: &str,
    headers: &HeaderMap,
    now: DateTime<Utc>,
) -> Result<Admission, Refusal> {
    let credential = auth::credential(headers).map_err(|error| Refusal::new(error, None))?;
    let (actor, budget_key) =
        auth::authenticate(state, &credential, now).map_err(|error| Refusal::new(error, None))?;
    let refuse = |error: ApiError| Err(Refusal::new(error, Some(budget_key.clone())));
    match (operation.auth, &actor) {
        (Auth::AppJwt, Actor::App { .. }) | (Auth::Any, _) => {}
        (Auth::AppJwt, _) => {
            return refuse(
                ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "A JSON web token could not be decoded",
                )
                .with_documentation("https://docs.github.com/rest"),
            );
        }
        (Auth::Token | Auth::InstallationToken, Actor::App { .. }) => {
            return refuse(ApiError::new(
                StatusCode::FORBIDDEN,
                "Resource not accessible by integration",
            ));
        }
        (Auth::Token | Auth::InstallationToken, _) => {}
    }
    if credential == Credential::None && operation.content_creation {
        return refuse(ApiError::requires_authentication());
    }
    let fault = state
        .faults
        .iter_mut()
        .find(|rule| rule.matches(operation.id, method.as_str(), operation.template, path))
        .map(|rule| {
            rule.remaining -= 1;
            rule.fault.clone()
        });
    state.faults.retain(|rule| rule.remaining > 0);
    let limit = state.core_limit_for(&budget_key);
    let options = state.options.clone();
    let budget = state
        .budgets
        .entry(budget_key.clone())
        .or_insert_with(|| Budget::new(limit, &options, now));
    if operation.costs {
        let window = budget.window(operation.resource, now);
        if window.remaining() == 0 {
            let subject = match &actor {
                Actor::Installation {
                    installation_id, ..
                } => format!("installation ID {installation_id}"),
                Actor::App { app_id } => format!("app ID {app_id}"),
                Actor::User { login } => format!("user ID {}", state_account_id(state, login)),
                Actor::Anonymous => "127.0.0.1".to_owned(),
            };
            let message = if operation.resource == Resource::Search {
                "API rate limit exceeded for search. Please wait before making more search requests.".to_owned()
            } else {
                format!(
                    "API rate limit exceeded for {subject}. If you reach out to GitHub Support for help, please include the request ID {}.",
                    request_id()
                )
            };
            return refuse(
                ApiError::new(StatusCode::FORBIDDEN, message).with_documentation(
                    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                ),
            );
        }
    }
    if operation.content_creation {
        let per_minute = options.content_creation_per_minute;
        let per_hour = options.content_creation_per_hour;
        let budget = state
            .budgets
            .get_mut(&budget_key)
            .expect("the budget was created above");
        if budget.content_limited(now, per_minute, per_hour) {
            return refuse(secondary_limit(Some(
                options.secondary_retry_after.as_secs().max(1),
            )));
        }
    }
    Ok(Admission {
        actor,
        budget_key,
        fault,
    })
}

fn state_account_id(state: &SimState, login: &str) -> u64 {
    state.account(login).map_or(0, |account| account.id)
}

fn error_outcome(error: &ApiError, documentation_url: &str) -> Outcome {
    let body = serde_json::to_vec(&error.body(documentation_url)).unwrap_or_default();
    let mut headers = error.headers.clone();
    headers.push((
        "content-type".to_owned(),
        "application/json; charset=utf-8".to_owned(),
    ));
    Outcome {
        status: error.status,
        headers,
        body: Bytes::from(body),
        // A 401, a route that does not exist and an injected fault cost nothing; callers set
        // the cost of errors a handler produced.
        cost: 0,
    }
}

/// Turns a handler's reply into bytes, with an `ETag` on successful GETs and a 304 when the
/// client already has it.
fn reply_outcome(reply: Reply, request_headers: &HeaderMap, method: &Method) -> Outcome {
    let (content_type, body) = match reply.body {
        ReplyBody::Json(value) => (
            "application/json; charset=utf-8".to_owned(),
            serde_json::to_vec(&value).unwrap_or_default(),
        ),
        ReplyBody::Text { content_type, text } => (content_type, text.into_bytes()),
    };
    let mut headers = reply.headers;
    headers.push(("content-type".to_owned(), content_type.clone()));
    if *method == Method::GET && reply.status == StatusCode::OK {
        let mut hasher = Sha256::new();
        hasher.update(content_type.as_bytes());
        hasher.update([0]);
        hasher.update(&body);
        let etag = format!("W/\"{}\"", hex::encode(&hasher.finalize()[..16]));
        let matches = request_headers
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .map(str::trim)
            .any(|candidate| {
                candidate == "*"
                    || candidate.trim_start_matches("W/") == etag.trim_start_matches("W/")
            });
        headers.push(("etag".to_owned(), etag));
        if matches {
            headers.retain(|(name, _)| name != "content-type" && name != "link");
            return Outcome {
                status: StatusCode::NOT_MODIFIED,
                headers,
                body: Bytes::new(),
                cost: 0,
            };
        }
    }
    Outcome {
        status: reply.status,
        headers,
        body: Bytes::from(body),
        cost: 1,
    }
}

/// Spends the budget, adds the rate-limit headers, logs the request, builds the response.
pub(crate) fn finish(
    shared: &Shared,
    mut record: RequestRecord,
    outcome: Outcome,
    budget: Option<(String, Resource)>,
) -> Response<Body> {
    let now = Utc::now();
    let Outcome {
        status,
        mut headers,
        body,
        cost,
    } = outcome;
    {
        let mut state = shared.lock();
        if let Some((key, resource)) = budget {
            let limit = state.core_limit_for(&key);
            let options = state.options.clone();
            let entry = state
                .budgets
                .entry(key)
                .or_insert_with(|| Budget::new(limit, &options, now));
            let window = entry.window(resource, now);
            window.used += cost;
            let snapshot = window.snapshot();
            headers.push(("x-ratelimit-limit".to_owned(), snapshot.limit.to_string()));
            headers.push((
                "x-ratelimit-remaining".to_owned(),
                snapshot.remaining.to_string(),
            ));
            headers.push(("x-ratelimit-used".to_owned(), snapshot.used.to_string()));
            headers.push((
                "x-ratelimit-reset".to_owned(),
                snapshot.reset.timestamp().to_string(),
            ));
            headers.push((
                "x-ratelimit-resource".to_owned(),
                resource.as_str().to_owned(),
            ));
        }
        record.status = status.as_u16();
        record.cost = cost;
        record.sequence = state.log.len() as u64 + 1;
        state.log.push(record);
    }
    headers.push((
        "x-github-media-type".to_owned(),
        "github.v3; format=json".to_owned(),
    ));
    headers.push(("x-github-request-id".to_owned(), request_id()));
    headers.push((
        "x-github-api-version-selected".to_owned(),
        "2022-11-28".to_owned(),
    ));
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(&value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
    response
}
