//! The page, its assets, live updates and file views, served on loopback.
//!
//! | route | what |
//! | --- | --- |
//! | `GET /` | the page, with the latest version rendered in (readable without script) |
//! | `GET /assets/panel.js`, `/assets/panel.css` | embedded in the binary; no CDN |
//! | `GET /events` | server-sent events: `version` with the latest version's JSON, now and on every change |
//! | `GET /api/versions`, `/api/version/{n}` | the history, and one kept version |
//! | `GET /api/file?path=&line=&end=&pattern=&v=` | a file view as JSON: only a file version `v` (default: the latest) references, resolved against its base; 404 for any other path |
//! | `GET /file?…` | the same file view as a page (the links' target without script) |
//!
//! Every request passes [`guard`]: a `Host` that is not the panel's own
//! loopback address and port (DNS rebinding), or an `Origin` from elsewhere,
//! is refused with 403; so is one without the panel's secret
//! ([`crate::access`]), in its cookie or, on the first visit, in the query
//! (answered with the cookie and a redirect to the same address without the
//! secret). Every response carries a strict
//! Content-Security-Policy (scripts and styles only from the panel itself, no
//! inline script or style, no network but the panel), `nosniff`, no referrer
//! and no framing.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, Request, State as AxumState};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use serde::{Deserialize, Serialize};

use crate::access::{self, Secret};
use crate::files;
use crate::highlight::{self, escape};
use crate::state::{State, Version};

/// The page's Content-Security-Policy.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const INDEX: &str = include_str!("../assets/index.html");
const SCRIPT: &str = include_str!("../assets/panel.js");
const STYLE: &str = include_str!("../assets/panel.css");
const ICON: &str = include_str!("../assets/icon.svg");

/// Path escaping for editor links: everything but unreserved characters and `/`.
const EDITOR_PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

/// The `Host` and `Origin` values the panel answers.
#[derive(Debug)]
struct Allowed {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl Allowed {
    fn for_address(address: SocketAddr) -> Self {
        let port = address.port();
        let mut hosts = vec![
            address.to_string(),
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
        ];
        hosts.dedup();
        let origins = hosts.iter().map(|host| format!("http://{host}")).collect();
        Self { hosts, origins }
    }
}

#[derive(Clone)]
struct AppState {
    state: Arc<State>,
    allowed: Arc<Allowed>,
    /// What every request must carry.
    secret: Arc<Secret>,
    /// The cookie that carries it (named after the port).
    cookie: Arc<str>,
}

/// The panel's routes, answering only requests addressed to `address` that
/// carry `secret`.
pub fn router(state: Arc<State>, address: SocketAddr, secret: Secret) -> Router {
    let app = AppState {
        state,
        allowed: Arc::new(Allowed::for_address(address)),
        secret: Arc::new(secret),
        cookie: access::cookie_name(address.port()).into(),
    };
    Router::new()
        .route("/", get(index))
        .route("/assets/panel.js", get(script))
        .route("/assets/panel.css", get(style))
        .route("/assets/icon.svg", get(icon))
        .route("/favicon.ico", get(icon))
        .route("/events", get(events))
        .route("/api/versions", get(versions))
        .route("/api/version/{number}", get(version))
        .route("/api/file", get(file_json))
        .route("/file", get(file_page))
        .layer(middleware::from_fn_with_state(app.clone(), guard))
        .with_state(app)
}

/// Refuses foreign `Host`/`Origin` values and requests without the secret;
/// exchanges a secret in the query for a cookie; adds the security headers.
async fn guard(AxumState(app): AxumState<AppState>, request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::to_ascii_lowercase);
    let host_ok = host.is_some_and(|host| app.allowed.hosts.contains(&host));
    let origin_ok = request.headers().get(header::ORIGIN).is_none_or(|origin| {
        origin.to_str().is_ok_and(|origin| {
            app.allowed
                .origins
                .iter()
                .any(|allowed| allowed.eq_ignore_ascii_case(origin))
        })
    });
    let mut response = if !(host_ok && origin_ok) {
        (
            StatusCode::FORBIDDEN,
            "refused: this review panel answers only requests addressed to its own loopback address\n",
        )
            .into_response()
    } else if let Some(redirect) = exchange_token(&app, &request) {
        // Even with the cookie: the secret leaves the address bar.
        redirect
    } else if has_cookie(&app, &request) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "refused: this review panel answers only its user; open the address `review-bot panel` printed \
             (it ends in ?token=…), or restart the panel to get a new one\n",
        )
            .into_response()
    };
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    response
}

/// Whether the request carries the panel's cookie with the secret.
fn has_cookie(app: &AppState, request: &Request) -> bool {
    request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .filter_map(|value| access::cookie_value(value, &app.cookie))
        .any(|value| app.secret.matches(value))
}

/// The answer to a request with the secret in its query: a redirect to the
/// same address without it, setting the cookie. `None` without a valid secret.
fn exchange_token(app: &AppState, request: &Request) -> Option<Response> {
    let (token, rest) = access::take_token(request.uri().query()?);
    if !token.is_some_and(|token| app.secret.matches(token)) {
        return None;
    }
    let path = request.uri().path();
    // Never a scheme-relative `//host` (an open redirect): the page instead.
    let path = if path.starts_with('/') && !path.starts_with("//") && !path.contains('\\') {
        path
    } else {
        "/"
    };
    let location = if rest.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{rest}")
    };
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/",
        app.cookie,
        app.secret.expose()
    );
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_str(&location).ok()?);
    headers.insert(header::SET_COOKIE, HeaderValue::from_str(&cookie).ok()?);
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Some(response)
}

fn with_type(content_type: &'static str, body: impl Into<axum::body::Body>) -> Response {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body.into(),
    )
        .into_response()
}

async fn script() -> Response {
    with_type("text/javascript; charset=utf-8", SCRIPT)
}

async fn style() -> Response {
    with_type(
        "text/css; charset=utf-8",
        format!(
            "{STYLE}\n/* Syntax highlighting (syntect). */\n{}",
            highlight::stylesheet()
        ),
    )
}

async fn icon() -> Response {
    with_type("image/svg+xml", ICON)
}

/// The page with `version` rendered into it.
pub fn page(state: &State, version: Option<&Version>) -> String {
    let mut content = String::new();
    let mut toc = String::new();
    let status = if let Some(version) = version {
        for section in &version.rendered.sections {
            let _ = write!(
                content,
                "<section class=\"review-section\" id=\"{}\" data-hash=\"{}\">{}</section>",
                escape(&section.key),
                escape(&section.hash),
                section.html
            );
        }
        for entry in &version.rendered.toc {
            let _ = write!(
                toc,
                "<li class=\"toc-level-{}\"><a href=\"#{}\" data-key=\"{}\">{}</a></li>",
                entry.level,
                escape(&entry.key),
                escape(&entry.key),
                escape(&entry.text)
            );
        }
        format!("version {}", version.number)
    } else {
        let _ = write!(
            content,
            "<section class=\"review-section waiting\" id=\"s-waiting\" data-hash=\"\"><h1>Waiting for a review…</h1>\
                 <p>Nothing has been presented yet. Add <code>review-bot mcp</code> to your Claude Code session \
                 (it finds this panel on its own) and ask for a review, or point <code>REVIEW_BOT_REVIEW_PANEL_SOCKET</code> at \
                 <code>{}</code>.</p></section>",
            escape(&state.socket().display().to_string())
        );
        "waiting".to_owned()
    };
    fill(
        INDEX,
        &[
            (
                "version",
                &version.map_or(0, |version| version.number).to_string(),
            ),
            ("status", &escape(&status)),
            ("toc", &toc),
            ("content", &content),
        ],
    )
}

/// Replaces `{{name}}` markers of the template in one pass, so text already
/// filled in is never read as a marker.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut filled = String::with_capacity(
        template.len() + values.iter().map(|(_, value)| value.len()).sum::<usize>(),
    );
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        filled.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            rest = &rest[start..];
            break;
        };
        let name = &after[..end];
        match values.iter().find(|(key, _)| *key == name) {
            Some((_, value)) => filled.push_str(value),
            None => filled.push_str(&rest[start..start + 4 + end]),
        }
        rest = &after[end + 2..];
    }
    filled.push_str(rest);
    filled
}

async fn index(AxumState(app): AxumState<AppState>) -> Response {
    let latest = app.state.latest();
    with_type(
        "text/html; charset=utf-8",
        page(&app.state, latest.as_deref()),
    )
}

async fn events(
    AxumState(app): AxumState<AppState>,
) -> Sse<impl futures::Stream<Item = Result<Event, Infallible>>> {
    let receiver = app.state.subscribe();
    let stream =
        futures::stream::unfold((receiver, true), |(mut receiver, mut first)| async move {
            loop {
                if !first && receiver.changed().await.is_err() {
                    return None;
                }
                first = false;
                let live = receiver.borrow_and_update().clone();
                if live.closed {
                    return None;
                }
                if let Some(version) = live.version {
                    let event = Event::default().event("version").data(&*version.payload);
                    return Some((Ok(event), (receiver, false)));
                }
            }
        });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

async fn versions(AxumState(app): AxumState<AppState>) -> Response {
    axum::Json(app.state.history()).into_response()
}

async fn version(AxumState(app): AxumState<AppState>, Path(number): Path<u64>) -> Response {
    match app.state.version(number) {
        Some(version) => with_type("application/json", version.payload.to_string()),
        None => (
            StatusCode::NOT_FOUND,
            "no such version (only the latest are kept)\n",
        )
            .into_response(),
    }
}

/// A file view's request.
#[derive(Debug, Deserialize)]
pub struct FileQuery {
    /// The version whose base the path resolves against (default: the latest).
    pub v: Option<u64>,
    /// The path as referenced.
    pub path: String,
    /// First line to mark.
    pub line: Option<u32>,
    /// Last line to mark.
    pub end: Option<u32>,
    /// Text whose first occurrence is the line to mark.
    pub pattern: Option<String>,
}

/// A file view's answer.
#[derive(Debug, Default, Serialize)]
pub struct FileView {
    /// Whether the file is shown.
    pub ok: bool,
    /// The path as referenced (or relative to the base).
    pub path: String,
    /// Why the file is not shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether it was refused for safety.
    pub refused: bool,
    /// Whether the version does not reference it at all (answered 404).
    #[serde(skip)]
    pub not_referenced: bool,
    /// Highlighted HTML of the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub html: Option<String>,
    /// Its number of lines.
    pub line_count: usize,
    /// First marked line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<usize>,
    /// Last marked line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end: Option<usize>,
    /// Something the reader should know (a pattern not found, a line past the end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
    /// The "open in editor" link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub editor_url: Option<String>,
}

/// Builds the file view (blocking: reads and highlights the file).
pub fn file_view(state: &State, query: &FileQuery) -> FileView {
    let version = match query.v {
        Some(number) => state.version(number),
        None => state.latest(),
    };
    let Some(version) = version else {
        return FileView {
            path: query.path.clone(),
            error: Some("that version of the review is no longer kept; reload the page".to_owned()),
            ..FileView::default()
        };
    };
    // Only a file this version references, where it led when rendered.
    let read = match version.rendered.references.get(&query.path) {
        None => {
            return FileView {
                path: query.path.clone(),
                not_referenced: true,
                error: Some(format!(
                    "{} is not a file this version of the review references; the panel shows only those",
                    query.path
                )),
                ..FileView::default()
            };
        }
        Some(Err(error)) => Err(error.clone()),
        Some(Ok(canonical)) => files::read_resolved(
            &version.base,
            canonical,
            &query.path,
            state.limits().max_file_bytes,
        ),
    };
    let file = match read {
        Ok(file) => file,
        Err(error) => {
            return FileView {
                path: query.path.clone(),
                refused: error.is_refusal(),
                error: Some(error.to_string()),
                ..FileView::default()
            };
        }
    };
    let line_count = file.line_count();
    let mut notice = None;
    let (start, end) = if let Some(pattern) = &query.pattern {
        if let Some(index) = file
            .text
            .lines()
            .position(|line| line.contains(pattern.as_str()))
        {
            (Some(index + 1), Some(index + 1))
        } else {
            notice = Some(format!("“{pattern}” not found in {}", file.relative));
            (None, None)
        }
    } else {
        match query.line.map(|line| line as usize) {
            Some(line) if line > line_count => {
                notice = Some(format!(
                    "line {line} is past the end of {} ({line_count} lines)",
                    file.relative
                ));
                (None, None)
            }
            Some(line) => {
                let end = query
                    .end
                    .map_or(line, |end| (end as usize).clamp(line, line_count));
                (Some(line), Some(end))
            }
            None => (None, None),
        }
    };
    let editor_url = state
        .editor_url()
        .replace(
            "{path}",
            &utf8_percent_encode(&file.absolute.display().to_string(), EDITOR_PATH).to_string(),
        )
        .replace("{line}", &start.unwrap_or(1).to_string())
        .replace("{column}", "1");
    FileView {
        ok: true,
        html: Some(highlight::highlight_file(&file.relative, &file.text)),
        path: file.relative,
        line_count,
        start,
        end,
        notice,
        editor_url: Some(editor_url),
        ..FileView::default()
    }
}

async fn build_view(app: &AppState, query: FileQuery) -> FileView {
    let state = Arc::clone(&app.state);
    tokio::task::spawn_blocking(move || file_view(&state, &query))
        .await
        .unwrap_or_else(|error| FileView {
            error: Some(format!("the file view failed: {error}")),
            ..FileView::default()
        })
}

/// 404 for a file the review does not reference, 403 for one refused for safety.
fn view_status(view: &FileView) -> StatusCode {
    if view.not_referenced {
        StatusCode::NOT_FOUND
    } else if view.refused {
        StatusCode::FORBIDDEN
    } else {
        StatusCode::OK
    }
}

async fn file_json(
    AxumState(app): AxumState<AppState>,
    Query(query): Query<FileQuery>,
) -> Response {
    let view = build_view(&app, query).await;
    (view_status(&view), axum::Json(view)).into_response()
}

async fn file_page(
    AxumState(app): AxumState<AppState>,
    Query(query): Query<FileQuery>,
) -> Response {
    let view = build_view(&app, query).await;
    let mut body = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>File — review panel</title>\
         <link rel=\"stylesheet\" href=\"/assets/panel.css\"></head><body class=\"file-page\"><main>",
    );
    let _ = write!(
        body,
        "<p><a href=\"/\">← Back to the review</a></p><h1 class=\"file-path\">{}</h1>",
        escape(&view.path)
    );
    if let Some(error) = &view.error {
        let _ = write!(body, "<p class=\"file-error\">{}</p>", escape(error));
    }
    if let Some(notice) = &view.notice {
        let _ = write!(body, "<p class=\"file-notice\">{}</p>", escape(notice));
    }
    if let Some(html) = &view.html {
        let _ = write!(
            body,
            "<pre class=\"code file-code\"><code>{html}</code></pre>"
        );
    }
    body.push_str("</main></body></html>");
    (view_status(&view), Html(body)).into_response()
}
