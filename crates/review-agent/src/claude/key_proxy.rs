//! The model key stays with the bot: a loopback proxy in front of the
//! Messages API for one agent run.
//!
//! Whatever the agent's tools run — the pull request's scripts included —
//! inherits the CLI's environment, so an `ANTHROPIC_API_KEY` there is one
//! `echo` away from the pull request's author. Instead, each run gets a proxy
//! on `127.0.0.1` and a key of its own (random, valid for that run only): the
//! CLI's `ANTHROPIC_BASE_URL` points at the proxy, its `ANTHROPIC_API_KEY` is
//! the run's key. The proxy accepts a request only with that key, replaces it
//! with the real one and forwards the request to the real API (the configured
//! `ANTHROPIC_BASE_URL`, else Anthropic's), streaming both ways (the CLI always
//! streams server-sent events). When the run ends the proxy stops and its key
//! is worthless.
//!
//! **Only the model calls go through** (issue 26). The pinned Claude Code
//! (2.1.330, with `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`) was observed
//! through this proxy against the scripted model server to send exactly one
//! kind of request: `POST /v1/messages?beta=true` (one per turn, streamed);
//! the Messages API's `POST /v1/messages/count_tokens` is allowed too. Any
//! other method or path (the Files API, batches, models, a `GET`) is refused
//! with `403` and a JSON error before anything reaches upstream, so the
//! agent's `Bash` cannot list or delete the workspace's files or read its
//! batches with the real key. Requests per run are capped
//! ([`KeyProxy::start`]'s `request_limit`; past it, `403`), the upstream
//! client never follows a redirect (a `3xx` becomes a `502`, its `Location`
//! is not passed on), and no credential header the client sent
//! (`x-api-key`, `authorization`, `proxy-authorization`, `cookie`) is
//! forwarded: the proxy sets the real key itself.
//!
//! What this does not do: a process of the run can still make model requests
//! through the proxy while the run lasts, within the cap (it could anyway,
//! through the CLI). It never learns the real key. Claude Code's own
//! `CLAUDE_CODE_SUBPROCESS_ENV_SCRUB` was the alternative; with 2.1.330 it
//! requires Claude Code's sandbox (and `socat`), then refused ordinary
//! commands despite `--dangerously-skip-permissions`.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use secrecy::{ExposeSecret as _, SecretString};

use crate::AgentError;

/// Anthropic's API, when no base URL is configured.
pub const DEFAULT_UPSTREAM: &str = "https://api.anthropic.com";

/// The model calls forwarded, as (method, path); the query may only be
/// empty or `beta=true`.
pub const FORWARDED_CALLS: [(&str, &str); 2] = [
    ("POST", "/v1/messages"),
    ("POST", "/v1/messages/count_tokens"),
];

/// Headers that describe one hop, never forwarded (RFC 9110 §7.6.1), plus the
/// credentials the proxy replaces and any other credential a client could send.
const NOT_FORWARDED: [&str; 13] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
    "content-length",
    "x-api-key",
    "authorization",
    "proxy-authorization",
    "cookie",
];

/// A running proxy; it stops when dropped.
pub struct KeyProxy {
    address: SocketAddr,
    run_key: SecretString,
    counters: std::sync::Arc<Counters>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<()>,
}

/// What the proxy let through and turned away.
#[derive(Debug, Default)]
struct Counters {
    /// Requests forwarded upstream (counted against the limit).
    forwarded: std::sync::atomic::AtomicU32,
    /// Requests refused: wrong key, another call, over the limit.
    refused: std::sync::atomic::AtomicU32,
}

impl std::fmt::Debug for KeyProxy {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("KeyProxy")
            .field("address", &self.address)
            .field("run_key", &"[redacted]")
            .finish_non_exhaustive()
    }
}

struct Forwarding {
    upstream: String,
    real_key: SecretString,
    run_key: SecretString,
    client: reqwest::Client,
    request_limit: u32,
    counters: std::sync::Arc<Counters>,
}

impl KeyProxy {
    /// Starts a proxy forwarding to `upstream` (a base URL such as
    /// `https://api.anthropic.com`) with `real_key`, at most `request_limit`
    /// requests in all.
    pub async fn start(
        upstream: &str,
        real_key: SecretString,
        request_limit: u32,
    ) -> Result<Self, AgentError> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|source| AgentError::File {
                action: "open the model-key proxy's loopback port",
                path: "127.0.0.1:0".into(),
                source,
            })?;
        let address = listener.local_addr().map_err(|source| AgentError::File {
            action: "read the model-key proxy's address",
            path: "127.0.0.1:0".into(),
            source,
        })?;
        let run_key = SecretString::from(format!(
            "sk-ant-review-bot-run-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(30))
            // The real key is on every request: never let upstream send it on.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| AgentError::File {
                action: "set up the model-key proxy's HTTP client",
                path: upstream.into(),
                source: std::io::Error::other(error),
            })?;
        let counters = std::sync::Arc::new(Counters::default());
        let state = std::sync::Arc::new(Forwarding {
            upstream: upstream.trim_end_matches('/').to_owned(),
            real_key,
            run_key: run_key.clone(),
            client,
            request_limit,
            counters: std::sync::Arc::clone(&counters),
        });
        let app = axum::Router::new().fallback(forward).with_state(state);
        let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(async move {
            let serving = axum::serve(listener, app).with_graceful_shutdown(async {
                let _ = stopped.await;
            });
            if let Err(error) = serving.await {
                tracing::warn!(%error, "the model-key proxy stopped");
            }
        });
        Ok(Self {
            address,
            run_key,
            counters,
            shutdown: Some(shutdown),
            server,
        })
    }

    /// The base URL the CLI is given (`ANTHROPIC_BASE_URL`).
    pub fn base_url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// The key the CLI is given (`ANTHROPIC_API_KEY`): valid for this proxy only.
    pub fn run_key(&self) -> &SecretString {
        &self.run_key
    }

    /// Requests forwarded to the model API so far.
    pub fn forwarded(&self) -> u32 {
        self.counters
            .forwarded
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Requests refused so far (wrong key, not a model call, over the limit).
    pub fn refused(&self) -> u32 {
        self.counters
            .refused
            .load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for KeyProxy {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        // Streams still open (a killed run) end with the task.
        self.server.abort();
    }
}

/// Constant-time comparison, so the run key cannot be guessed byte by byte.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0_u8, |difference, (a, b)| difference | (a ^ b))
            == 0
}

fn refuse(status: StatusCode, message: &str) -> Response {
    let error_type = match status {
        StatusCode::UNAUTHORIZED => "authentication_error",
        StatusCode::FORBIDDEN => "permission_error",
        _ => "api_error",
    };
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": error_type, "message": message},
    });
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// The answer when the proxy does not take this request; `None` when it
/// does: this run's key, a model call, within the run's limit (counted here).
fn refusal(state: &Forwarding, parts: &axum::http::request::Parts) -> Option<Response> {
    let given = parts
        .headers
        .get("x-api-key")
        .map(HeaderValue::as_bytes)
        .or_else(|| {
            parts
                .headers
                .get("authorization")
                .and_then(|value| value.as_bytes().strip_prefix(b"Bearer "))
        })
        .unwrap_or_default();
    let refused = || {
        state
            .counters
            .refused
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    };
    if !same_secret(given, state.run_key.expose_secret().as_bytes()) {
        refused();
        return Some(refuse(
            StatusCode::UNAUTHORIZED,
            "review-bot's model proxy: this key is not this run's",
        ));
    }
    if !is_model_call(&parts.method, &parts.uri) {
        refused();
        tracing::warn!(
            method = %parts.method,
            path = parts.uri.path(),
            "the model-key proxy refused a call that is not a model call"
        );
        return Some(refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "review-bot's model proxy forwards only the model calls (POST /v1/messages, \
                 POST /v1/messages/count_tokens); {} {} is refused",
                parts.method,
                parts.uri.path()
            ),
        ));
    }
    let taken = state
        .counters
        .forwarded
        .fetch_update(
            std::sync::atomic::Ordering::SeqCst,
            std::sync::atomic::Ordering::SeqCst,
            |forwarded| (forwarded < state.request_limit).then_some(forwarded + 1),
        )
        .is_ok();
    if !taken {
        refused();
        tracing::warn!(
            limit = state.request_limit,
            "the model-key proxy refused a request over the run's limit"
        );
        return Some(refuse(
            StatusCode::FORBIDDEN,
            &format!(
                "review-bot's model proxy: this run has used its {} model requests \
                 (agent.max_model_requests)",
                state.request_limit
            ),
        ));
    }
    None
}

async fn forward(State(state): State<std::sync::Arc<Forwarding>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    if let Some(refused) = refusal(&state, &parts) {
        return refused;
    }
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or("/", axum::http::uri::PathAndQuery::as_str);
    let url = format!("{}{path_and_query}", state.upstream);
    let mut headers = HeaderMap::new();
    for (name, value) in &parts.headers {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            headers.append(name.clone(), value.clone());
        }
    }
    let Ok(real_key) = HeaderValue::from_str(state.real_key.expose_secret()) else {
        return refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            "review-bot's model proxy: the configured API key is not a valid header value",
        );
    };
    headers.insert(HeaderName::from_static("x-api-key"), real_key);
    let upstream = state
        .client
        .request(parts.method, &url)
        .headers(headers)
        .body(reqwest::Body::wrap_stream(body.into_data_stream()))
        .send()
        .await;
    let answer = match upstream {
        Ok(answer) => answer,
        Err(error) => {
            tracing::warn!(%error, "the model-key proxy could not reach the model API");
            return bad_gateway(&format!(
                "review-bot's model proxy could not reach the model API: {error}"
            ));
        }
    };
    if answer.status().is_redirection() {
        tracing::warn!(status = %answer.status(), "the model API answered with a redirect; not followed");
        return bad_gateway(&format!(
            "the model API answered {} (a redirect); review-bot's model proxy does not follow redirects",
            answer.status()
        ));
    }
    let mut response = Response::builder().status(answer.status().as_u16());
    for (name, value) in answer.headers() {
        if !NOT_FORWARDED.contains(&name.as_str()) {
            response = response.header(name.as_str(), value.as_bytes());
        }
    }
    response
        .body(Body::from_stream(answer.bytes_stream()))
        .unwrap_or_else(|_| {
            refuse(
                StatusCode::BAD_GATEWAY,
                "review-bot's model proxy: bad answer",
            )
        })
}

/// A `502` with the API's JSON error shape.
fn bad_gateway(message: &str) -> Response {
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": "api_error", "message": message},
    });
    (
        StatusCode::BAD_GATEWAY,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Whether `method` and `uri` are one of [`FORWARDED_CALLS`], with no query
/// or `beta=true`.
fn is_model_call(method: &axum::http::Method, uri: &axum::http::Uri) -> bool {
    let query_allowed = matches!(uri.query(), None | Some("" | "beta=true"));
    query_allowed
        && FORWARDED_CALLS
            .iter()
            .any(|(allowed_method, path)| method.as_str() == *allowed_method && uri.path() == *path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_model_calls_pass() {
        let post = axum::http::Method::POST;
        let uri = |text: &str| text.parse::<axum::http::Uri>().unwrap();
        assert!(is_model_call(&post, &uri("/v1/messages?beta=true")));
        assert!(is_model_call(&post, &uri("/v1/messages")));
        assert!(is_model_call(
            &post,
            &uri("/v1/messages/count_tokens?beta=true")
        ));
        for refused in [
            "/v1/files",
            "/v1/files?beta=true",
            "/v1/messages/batches",
            "/v1/messages/../files",
            "/v1/messages?beta=true&x=1",
            "/v1/models",
            "/v1/messages/",
        ] {
            assert!(!is_model_call(&post, &uri(refused)), "{refused}");
        }
        assert!(!is_model_call(
            &axum::http::Method::GET,
            &uri("/v1/messages")
        ));
        assert!(!is_model_call(
            &axum::http::Method::DELETE,
            &uri("/v1/messages")
        ));
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"", b"abc"));
    }
}
