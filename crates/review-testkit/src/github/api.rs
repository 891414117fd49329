//! What an API handler sees and returns: the request context (path parameters, query,
//! headers, JSON body, the authenticated actor), its reply, GitHub's error bodies, and
//! pagination with `Link` headers.

use std::collections::HashMap;

use axum::http::{HeaderMap, StatusCode, header};
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

/// The most characters GitHub takes in a comment or review body.
pub const BODY_LIMIT: usize = 65_536;

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Actor {
    /// No `Authorization` header.
    Anonymous,
    /// A personal access token of this login.
    User { login: String },
    /// An installation access token; acts as the app's bot account.
    Installation {
        installation_id: u64,
        bot_login: String,
        /// The repositories the token was narrowed to (lower-cased `owner/name`).
        repositories: Option<Vec<String>>,
    },
    /// A GitHub App authenticated with its JWT.
    App { app_id: u64 },
}

impl Actor {
    /// The login that authors what this actor creates, if it can create anything.
    pub fn login(&self) -> Option<&str> {
        match self {
            Self::User { login } => Some(login),
            Self::Installation { bot_login, .. } => Some(bot_login),
            Self::Anonymous | Self::App { .. } => None,
        }
    }

    /// How the request log names the actor.
    pub fn describe(&self) -> Option<String> {
        match self {
            Self::Anonymous => None,
            Self::User { login } => Some(login.clone()),
            Self::Installation {
                installation_id, ..
            } => Some(format!("installation:{installation_id}")),
            Self::App { app_id } => Some(format!("app:{app_id}")),
        }
    }
}

/// Everything a handler needs about the request.
#[derive(Debug)]
pub(crate) struct Context {
    /// Path parameters by OpenAPI name (`owner`, `pull_number`…), percent-decoded.
    pub params: HashMap<&'static str, String>,
    /// Query parameters in order, decoded.
    pub query: Vec<(String, String)>,
    pub headers: HeaderMap,
    /// The request path (for `Link` headers).
    pub path: String,
    /// The parsed JSON body, if the request had one.
    pub body: Option<Value>,
    pub actor: Actor,
    /// Whose budget the request spends (`token:…`, `installation:ID`, `app:ID`, `anonymous`).
    pub budget_key: String,
    pub now: DateTime<Utc>,
    /// The largest `per_page` honoured ([`crate::github::SimOptions::max_per_page`]).
    pub max_per_page: usize,
}

impl Context {
    pub fn param(&self, name: &str) -> &str {
        self.params.get(name).map_or("", String::as_str)
    }

    /// A numeric path parameter; GitHub answers 404 for a non-number.
    pub fn number_param(&self, name: &str) -> Result<u64, ApiError> {
        self.param(name).parse().map_err(|_| ApiError::not_found())
    }

    /// The last value of a query parameter.
    pub fn query_value(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    /// A field of the JSON body.
    pub fn body_field(&self, name: &str) -> Option<&Value> {
        self.body.as_ref().and_then(|body| body.get(name))
    }

    /// A string field of the JSON body.
    pub fn body_str(&self, name: &str) -> Option<&str> {
        self.body_field(name).and_then(Value::as_str)
    }

    /// The login of the caller, or 401 `Requires authentication` for anyone who cannot write.
    pub fn require_login(&self) -> Result<String, ApiError> {
        self.actor
            .login()
            .map(str::to_owned)
            .ok_or_else(ApiError::requires_authentication)
    }

    /// The `Accept` header.
    pub fn accept(&self) -> &str {
        self.headers
            .get(header::ACCEPT)
            .and_then(|value| value.to_str().ok())
            .unwrap_or("application/json")
    }
}

/// A response body.
#[derive(Debug, Clone)]
pub(crate) enum ReplyBody {
    Json(Value),
    Text { content_type: String, text: String },
}

/// A successful answer.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub status: StatusCode,
    pub body: ReplyBody,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn ok(value: Value) -> Self {
        Self {
            status: StatusCode::OK,
            body: ReplyBody::Json(value),
            headers: Vec::new(),
        }
    }

    pub fn created(value: Value, location: Option<String>) -> Self {
        let headers = location
            .map(|location| vec![("location".to_owned(), location)])
            .unwrap_or_default();
        Self {
            status: StatusCode::CREATED,
            body: ReplyBody::Json(value),
            headers,
        }
    }

    /// 204 with an empty body.
    pub fn no_content() -> Self {
        Self {
            status: StatusCode::NO_CONTENT,
            body: ReplyBody::Text {
                content_type: "text/plain".to_owned(),
                text: String::new(),
            },
            headers: Vec::new(),
        }
    }

    pub fn text(content_type: &str, text: String) -> Self {
        Self {
            status: StatusCode::OK,
            body: ReplyBody::Text {
                content_type: content_type.to_owned(),
                text,
            },
            headers: Vec::new(),
        }
    }

    #[must_use]
    pub fn with_header(mut self, name: &str, value: String) -> Self {
        self.headers.push((name.to_owned(), value));
        self
    }
}

/// A GitHub error answer: status, `message`, optional `errors`, and headers.
#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub errors: Option<Value>,
    /// Overrides the operation's documentation URL.
    pub documentation_url: Option<String>,
    pub headers: Vec<(String, String)>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            errors: None,
            documentation_url: None,
            headers: Vec::new(),
        }
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not Found")
    }

    pub fn bad_credentials() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Bad credentials")
            .with_documentation("https://docs.github.com/rest")
    }

    pub fn requires_authentication() -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Requires authentication")
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    /// 422 with `validation-error-simple` (`errors` is a list of sentences).
    pub fn unprocessable(errors: Vec<String>) -> Self {
        let mut error = Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Unprocessable Entity");
        error.errors = Some(Value::from(errors));
        error
    }

    /// 422 `Validation Failed` with `validation-error` (`errors` are objects).
    pub fn validation_failed(errors: Vec<Value>) -> Self {
        let mut error = Self::new(StatusCode::UNPROCESSABLE_ENTITY, "Validation Failed");
        error.errors = Some(Value::Array(errors));
        error
    }

    /// 422 for a body longer than GitHub takes (65,536 characters), with
    /// GitHub's message; `Ok` when it fits.
    pub fn check_body_length(resource: &str, body: &str) -> Result<(), ApiError> {
        if body.chars().count() <= BODY_LIMIT {
            return Ok(());
        }
        Err(Self::validation_failed(vec![Self::field_error(
            resource,
            "body",
            "custom",
            Some(format!(
                "body is too long (maximum is {BODY_LIMIT} characters)"
            )),
        )]))
    }

    /// One `validation-error` object.
    pub fn field_error(resource: &str, field: &str, code: &str, message: Option<String>) -> Value {
        let mut error = json!({"resource": resource, "field": field, "code": code});
        if let Some(message) = message {
            error["message"] = Value::String(message);
        }
        error
    }

    #[must_use]
    pub fn with_documentation(mut self, url: &str) -> Self {
        self.documentation_url = Some(url.to_owned());
        self
    }

    #[must_use]
    pub fn with_header(mut self, name: &str, value: String) -> Self {
        self.headers.push((name.to_owned(), value));
        self
    }

    /// The JSON body, with `documentation_url` defaulting to the operation's docs.
    pub fn body(&self, default_documentation: &str) -> Value {
        let mut body = json!({
            "message": self.message,
            "documentation_url": self.documentation_url.as_deref().unwrap_or(default_documentation),
            "status": self.status.as_u16().to_string(),
        });
        if let Some(errors) = &self.errors {
            body["errors"] = errors.clone();
        }
        body
    }
}

impl From<super::SimError> for ApiError {
    fn from(error: super::SimError) -> Self {
        tracing::error!(%error, "github simulator: internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Server Error: {error}"),
        )
    }
}

/// Joins sentences the way GitHub (Rails' `to_sentence`) does: "a", "a and b", "a, b, and c".
pub(crate) fn to_sentence(parts: &[String]) -> String {
    match parts {
        [] => String::new(),
        [one] => one.clone(),
        [one, two] => format!("{one} and {two}"),
        [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
    }
}

/// GitHub's pagination: `per_page` (default 30, at most 100) and `page` (from 1).
pub(crate) fn paginate(context: &Context, base_url: &str, items: Vec<Value>) -> Reply {
    paginate_with(context, base_url, items, Value::Array)
}

/// Pagination where the page is wrapped in an object (`{"total_count": …, "items": […]}`).
pub(crate) fn paginate_with(
    context: &Context,
    base_url: &str,
    items: Vec<Value>,
    wrap: impl FnOnce(Vec<Value>) -> Value,
) -> Reply {
    let total = items.len();
    paginate_range(context, base_url, total, |range| {
        wrap(
            items
                .into_iter()
                .skip(range.start)
                .take(range.len())
                .collect(),
        )
    })
}

/// Pagination over `total` items where only the requested page is rendered (`render` gets
/// the page's index range and returns the body).
pub(crate) fn paginate_range(
    context: &Context,
    base_url: &str,
    total: usize,
    render: impl FnOnce(std::ops::Range<usize>) -> Value,
) -> Reply {
    let per_page = context
        .query_value("per_page")
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&value| value > 0)
        .unwrap_or(30)
        .min(context.max_per_page.max(1));
    let page = context
        .query_value("page")
        .and_then(|value| value.parse::<usize>().ok())
        .filter(|&value| value > 0)
        .unwrap_or(1);
    let last_page = total.div_ceil(per_page).max(1);
    let start = (page - 1).saturating_mul(per_page).min(total);
    let end = (start + per_page).min(total);
    let mut reply = Reply::ok(render(start..end));
    let link = |target: usize| {
        let mut query: Vec<(String, String)> = context
            .query
            .iter()
            .filter(|(key, _)| key != "page" && key != "per_page")
            .cloned()
            .collect();
        query.push(("per_page".to_owned(), per_page.to_string()));
        query.push(("page".to_owned(), target.to_string()));
        let encoded = url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(query)
            .finish();
        format!("{base_url}{}?{encoded}", context.path)
    };
    let mut relations = Vec::new();
    if page > 1 {
        relations.push(format!(
            "<{}>; rel=\"prev\"",
            link((page - 1).min(last_page))
        ));
    }
    if page < last_page {
        relations.push(format!("<{}>; rel=\"next\"", link(page + 1)));
        relations.push(format!("<{}>; rel=\"last\"", link(last_page)));
    }
    if page > 1 {
        relations.push(format!("<{}>; rel=\"first\"", link(1)));
    }
    if !relations.is_empty() {
        reply = reply.with_header("link", relations.join(", "));
    }
    reply
}

#[cfg(test)]
mod tests {
    use super::to_sentence;

    #[test]
    fn sentences_join_like_rails() {
        let parts = |items: &[&str]| {
            items
                .iter()
                .map(|item| (*item).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(to_sentence(&parts(&["a"])), "a");
        assert_eq!(to_sentence(&parts(&["a", "b"])), "a and b");
        assert_eq!(to_sentence(&parts(&["a", "b", "c"])), "a, b, and c");
    }
}
