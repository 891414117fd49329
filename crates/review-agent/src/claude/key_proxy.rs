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
//! What this does not do: a process of the run can still make model requests
//! through the proxy while the run lasts (it could anyway, through the CLI).
//! It never learns the real key. Claude Code's own
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

/// Headers that describe one hop, never forwarded (RFC 9110 §7.6.1), plus the
/// credentials the proxy replaces.
const NOT_FORWARDED: [&str; 11] = [
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
];

/// A running proxy; it stops when dropped.
pub struct KeyProxy {
    address: SocketAddr,
    run_key: SecretString,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<()>,
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
}

impl KeyProxy {
    /// Starts a proxy forwarding to `upstream` (a base URL such as
    /// `https://api.anthropic.com`) with `real_key`.
    pub async fn start(upstream: &str, real_key: SecretString) -> Result<Self, AgentError> {
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
            .build()
            .map_err(|error| AgentError::File {
                action: "set up the model-key proxy's HTTP client",
                path: upstream.into(),
                source: std::io::Error::other(error),
            })?;
        let state = std::sync::Arc::new(Forwarding {
            upstream: upstream.trim_end_matches('/').to_owned(),
            real_key,
            run_key: run_key.clone(),
            client,
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
    let body = serde_json::json!({
        "type": "error",
        "error": {"type": "authentication_error", "message": message},
    });
    (
        status,
        [("content-type", "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn forward(State(state): State<std::sync::Arc<Forwarding>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
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
    if !same_secret(given, state.run_key.expose_secret().as_bytes()) {
        return refuse(
            StatusCode::UNAUTHORIZED,
            "review-bot's model proxy: this key is not this run's",
        );
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
            let body = serde_json::json!({
                "type": "error",
                "error": {"type": "api_error", "message": format!("review-bot's model proxy could not reach the model API: {error}")},
            });
            return (
                StatusCode::BAD_GATEWAY,
                [("content-type", "application/json")],
                body.to_string(),
            )
                .into_response();
        }
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abc", b"abc"));
        assert!(!same_secret(b"abd", b"abc"));
        assert!(!same_secret(b"ab", b"abc"));
        assert!(!same_secret(b"", b"abc"));
    }
}
