//! Sending one API call: conditional requests, write spacing, rate limits,
//! retries and the per-request tracing span.
//!
//! Every request of the crate goes through [`Transport::send`]. What it may
//! retry depends on the call's [`Retry`] class:
//! - [`Retry::Safe`] calls (GET, PUT/DELETE of labels, PATCH of a comment,
//!   adding labels) are retried on 5xx, timeouts and connection failures with
//!   jittered exponential backoff, capped.
//! - [`Retry::Unsafe`] calls (POSTs that create a review or a comment) are
//!   never repeated here once they may have reached GitHub: the caller gets
//!   [`SendFailure::MaybeApplied`] and checks GitHub before posting again.
//!
//! Rate-limit refusals (403/429) are retried for both classes, because GitHub
//! does not process a refused request: after `retry-after`, after the primary
//! budget's reset (when that is within the configured maximum wait), or with
//! exponential backoff for a secondary limit that gave no header.
//!
//! A secondary limit stops the whole credential, not one call: the refusal
//! sets a pause per credential ("paused until"), every request of that
//! credential waits it out before sending, and the backoff level for refusals
//! without `retry-after` is shared too (it falls back to its start only after
//! `secondary_limit_calm_period`, ten base delays by default, without a
//! refusal). Requests refused together, all sent before the pause was known,
//! count as one refusal. A semaphore bounds the
//! requests in flight (`max_concurrent_requests`, GitHub's 100 by default).
//!
//! Every attempt (so every retry too) is counted in the `metrics` facade's
//! [`REQUESTS_METRIC`] by `resource`, `method` and `outcome`
//! ([`RequestOutcome`]); without an installed recorder the count is a no-op.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use http_body_util::BodyExt;
use octocrab::Octocrab;
use tracing::Instrument;

use crate::conditional_cache::{CachedAnswer, ConditionalCache};
use crate::error::{CredentialKind, GitHubError};
use crate::rate_limit::{RateLimitTracker, Refusal, classify_refusal};
use crate::settings::ClientSettings;
use crate::wire;

/// GitHub's JSON media type.
pub(crate) const JSON_MEDIA_TYPE: &str = "application/vnd.github+json";
/// The unified diff media type.
pub(crate) const DIFF_MEDIA_TYPE: &str = "application/vnd.github.diff";

/// How many recent waits are kept for inspection.
const RECORDED_WAITS: usize = 64;

/// The counter of HTTP attempts sent to GitHub's API, labelled `resource`
/// (`core`, `search`), `method` and `outcome` (see [`RequestOutcome`]). Each
/// retry is an attempt of its own.
pub const REQUESTS_METRIC: &str = "review_bot_github_requests_total";

/// How one attempt ended, as [`REQUESTS_METRIC`]'s `outcome` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOutcome {
    /// A 2xx answer (`ok`).
    Ok,
    /// A 304 to a conditional request, served from the cache: no rate-limit
    /// cost (`not_modified`).
    NotModified,
    /// A 4xx other than a rate-limit refusal, or a redirect octocrab did not
    /// follow (`client_error`).
    ClientError,
    /// A 403 or 429 refusing the request for a primary or secondary rate
    /// limit (`rate_limited`).
    RateLimited,
    /// A 5xx (`server_error`).
    ServerError,
    /// No HTTP answer: a timeout or a connection failure (`network`).
    Network,
}

impl RequestOutcome {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::NotModified => "not_modified",
            Self::ClientError => "client_error",
            Self::RateLimited => "rate_limited",
            Self::ServerError => "server_error",
            Self::Network => "network",
        }
    }

    /// How `attempt` ended.
    fn of(attempt: &Attempt) -> Self {
        let answer = match attempt {
            Attempt::Timeout | Attempt::Transport(_) => return Self::Network,
            Attempt::Answer(answer) => answer,
        };
        let status = answer.status;
        if answer.from_cache || status == StatusCode::NOT_MODIFIED {
            Self::NotModified
        } else if status.is_success() {
            Self::Ok
        } else if status.is_server_error() {
            Self::ServerError
        } else if (status == StatusCode::FORBIDDEN || status == StatusCode::TOO_MANY_REQUESTS)
            && classify_refusal(status, &answer.headers, &answer.error_message())
                != Refusal::Forbidden
        {
            Self::RateLimited
        } else {
            Self::ClientError
        }
    }
}

/// Whether a call may be repeated blindly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Retry {
    /// Repeating it has the same effect as sending it once.
    Safe,
    /// Repeating it could create a duplicate: never resend after it may have landed.
    Unsafe,
}

/// One API call, described before any credential is attached.
#[derive(Debug, Clone)]
pub(crate) struct ApiRequest {
    /// HTTP method.
    pub method: Method,
    /// The route template, for logs and errors (`/repos/{owner}/{repo}/pulls/{pull_number}`).
    pub route: &'static str,
    /// Path and query, relative to the API root.
    pub path: String,
    /// `Accept` media type.
    pub accept: &'static str,
    /// JSON body, if any.
    pub body: Option<serde_json::Value>,
    /// Send `If-None-Match` and serve a 304 from the cache.
    pub conditional: bool,
    /// Retry class.
    pub retry: Retry,
    /// The rate-limit resource this call spends (`core` or `search`).
    pub resource: &'static str,
    /// Serialised and spaced with the other writes (`write_spacing`).
    pub spaced: bool,
}

impl ApiRequest {
    /// A conditional, safely retried GET of JSON.
    pub fn get(route: &'static str, path: String) -> Self {
        Self {
            method: Method::GET,
            route,
            path,
            accept: JSON_MEDIA_TYPE,
            body: None,
            conditional: true,
            retry: Retry::Safe,
            resource: "core",
            spaced: false,
        }
    }

    /// A write with a JSON body.
    pub fn write(
        method: Method,
        route: &'static str,
        path: String,
        body: Option<serde_json::Value>,
        retry: Retry,
    ) -> Self {
        Self {
            method,
            route,
            path,
            accept: JSON_MEDIA_TYPE,
            body,
            conditional: false,
            retry,
            resource: "core",
            spaced: true,
        }
    }
}

/// An answer, possibly served from the conditional cache.
#[derive(Debug, Clone)]
pub(crate) struct ApiResponse {
    /// The status; a 304 served from the cache reads as 200.
    pub status: StatusCode,
    /// The answer's headers (for a cached answer, the 304's headers plus the
    /// remembered `Link`).
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
    /// True when GitHub answered 304 and the body came from the cache.
    pub from_cache: bool,
}

impl ApiResponse {
    /// GitHub's error `message` and `errors[]`.
    pub fn error_body(&self) -> wire::ErrorBody {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }

    /// GitHub's error message, or the start of the body.
    pub fn error_message(&self) -> String {
        if let Some(message) = self.error_body().message {
            return message;
        }
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        if text.is_empty() {
            self.status
                .canonical_reason()
                .unwrap_or("no message")
                .to_owned()
        } else {
            text.chars().take(200).collect()
        }
    }
}

/// Why a call failed without an answer we can use.
#[derive(Debug)]
pub(crate) enum SendFailure {
    /// A final error.
    Error(GitHubError),
    /// An unsafe write may have been applied (timeout, connection lost, 5xx
    /// after sending): the caller must check before posting again.
    MaybeApplied(String),
}

impl From<GitHubError> for SendFailure {
    fn from(error: GitHubError) -> Self {
        Self::Error(error)
    }
}

/// Why the client slept before a request, kept for operators and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedWait {
    /// Route template of the call.
    pub route: &'static str,
    /// Why it waited.
    pub reason: WaitReason,
    /// How long it waited.
    pub duration: Duration,
}

/// What made the client wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitReason {
    /// GitHub's `retry-after` header.
    RetryAfter,
    /// The primary budget's reset time.
    PrimaryReset,
    /// Exponential backoff after a secondary limit without headers.
    SecondaryBackoff,
    /// Backoff after a 5xx, a timeout or a connection failure.
    TransientBackoff,
    /// Spacing between two writes (GitHub's advice against secondary limits).
    WriteSpacing,
    /// A secondary limit another request of the same credential hit: every
    /// request waits until it lifts.
    SharedPause,
    /// Between two looks for a write whose answer was lost, before posting it again.
    WriteCheck,
}

/// What one attempt's context allows.
struct AttemptContext<'a> {
    request: &'a ApiRequest,
    credential: CredentialKind,
    /// Whose budget and pauses (`token`, `app`, `installation:{id}`).
    credential_scope: &'a str,
    /// When the attempt was sent (after any pause).
    sent_at: tokio::time::Instant,
    attempt: u32,
    retries_left: bool,
}

/// The decision after one attempt.
enum Verdict {
    Done(Result<ApiResponse, SendFailure>),
    Wait(WaitReason, Duration),
}

/// The error for a secondary limit that outlasted our retries or patience.
fn secondary_error(context: &AttemptContext<'_>, retry_after: Option<Duration>) -> GitHubError {
    GitHubError::SecondaryRateLimit {
        method: context.request.method.to_string(),
        route: context.request.route,
        attempts: context.attempt,
        retry_after,
    }
}

/// The answer of one attempt.
enum Attempt {
    Answer(ApiResponse),
    Timeout,
    Transport(String),
}

/// A secondary limit in force for one credential.
#[derive(Debug, Clone, Copy)]
struct SecondaryPause {
    /// No request of the credential is sent before this.
    until: tokio::time::Instant,
    /// When the pause was last set; a refusal of a request sent before it
    /// belongs to the same episode and does not escalate the backoff.
    set_at: tokio::time::Instant,
    /// The next wait after a refusal without `retry-after`.
    level: Duration,
}

/// Sends requests; shared by every clone of the client.
#[derive(Debug)]
pub(crate) struct Transport {
    settings: ClientSettings,
    rate_limits: RateLimitTracker,
    cache: ConditionalCache,
    /// Completion time of the last write; held across a write so writes are
    /// serial and spaced.
    write_gate: tokio::sync::Mutex<Option<tokio::time::Instant>>,
    waits: Mutex<VecDeque<RecordedWait>>,
    /// Secondary-limit pauses by credential scope.
    pauses: Mutex<HashMap<String, SecondaryPause>>,
    /// Bounds the requests in flight (`max_concurrent_requests`).
    in_flight: tokio::sync::Semaphore,
}

impl Transport {
    pub fn new(settings: ClientSettings) -> Self {
        let cache = ConditionalCache::new(
            settings.conditional_cache_entries,
            settings.conditional_cache_bytes,
        );
        let in_flight = tokio::sync::Semaphore::new(settings.max_concurrent_requests.max(1));
        Self {
            settings,
            rate_limits: RateLimitTracker::default(),
            cache,
            write_gate: tokio::sync::Mutex::new(None),
            waits: Mutex::new(VecDeque::new()),
            pauses: Mutex::new(HashMap::new()),
            in_flight,
        }
    }

    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    pub fn rate_limits(&self) -> &RateLimitTracker {
        &self.rate_limits
    }

    pub fn cache_usage(&self) -> (usize, usize) {
        self.cache.usage()
    }

    pub fn recent_waits(&self) -> Vec<RecordedWait> {
        self.waits
            .lock()
            .expect("recorded waits lock")
            .iter()
            .cloned()
            .collect()
    }

    pub(crate) fn record_wait(&self, route: &'static str, reason: WaitReason, duration: Duration) {
        if reason == WaitReason::WriteSpacing {
            // Routine pacing (GitHub's advice), not a problem to look at.
            tracing::debug!(
                route,
                wait_ms = duration.as_millis(),
                "spacing a write to GitHub"
            );
        } else {
            tracing::warn!(
                route,
                ?reason,
                wait_ms = duration.as_millis(),
                "waiting before retrying a GitHub request"
            );
        }
        let mut waits = self.waits.lock().expect("recorded waits lock");
        if waits.len() == RECORDED_WAITS {
            waits.pop_front();
        }
        waits.push_back(RecordedWait {
            route,
            reason,
            duration,
        });
    }

    /// Sends `request` with `client`, retrying as its class allows. Non-2xx
    /// answers other than rate limits and 5xx are returned for the caller to
    /// interpret (a 404 on a label removal is fine, a 406 on a diff has a
    /// fallback).
    pub async fn send(
        &self,
        client: &Octocrab,
        credential: CredentialKind,
        cache_scope: &str,
        request: &ApiRequest,
    ) -> Result<ApiResponse, SendFailure> {
        let cache_key = request
            .conditional
            .then(|| format!("{cache_scope} {} {}", request.accept, request.path));
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            self.wait_for_known_budget(credential, cache_scope, request)
                .await?;
            let sent_at = self.wait_for_pause(cache_scope, request).await?;
            let cached = cache_key.as_deref().and_then(|key| self.cache.get(key));
            let outcome = self
                .traced_attempt(client, cache_scope, request, cached.as_ref(), attempt)
                .await;
            let context = AttemptContext {
                request,
                credential,
                credential_scope: cache_scope,
                sent_at,
                attempt,
                retries_left: attempt <= self.settings.max_retries,
            };
            let verdict = match outcome {
                Attempt::Answer(answer) => {
                    if let Some(key) = &cache_key {
                        self.remember(key, &answer);
                    }
                    self.judge_answer(answer, &context)
                }
                failure => self.judge_failure(failure, &context),
            };
            match verdict {
                Verdict::Done(result) => return result,
                Verdict::Wait(reason, duration) => {
                    self.record_wait(request.route, reason, duration);
                    tokio::time::sleep(duration).await;
                }
            }
        }
    }

    /// One attempt inside its tracing span, spacing writes.
    async fn traced_attempt(
        &self,
        client: &Octocrab,
        credential_scope: &str,
        request: &ApiRequest,
        cached: Option<&CachedAnswer>,
        attempt: u32,
    ) -> Attempt {
        let span = tracing::debug_span!(
            "github_request",
            method = %request.method,
            route = request.route,
            path = %request.path,
            attempt,
            status = tracing::field::Empty,
            remaining = tracing::field::Empty,
            from_cache = tracing::field::Empty,
        );
        async {
            let outcome = if request.spaced {
                let mut gate = self.write_gate.lock().await;
                if let Some(last_write) = *gate {
                    let ready_at = last_write + self.settings.write_spacing;
                    let now = tokio::time::Instant::now();
                    if ready_at > now {
                        self.record_wait(request.route, WaitReason::WriteSpacing, ready_at - now);
                        tokio::time::sleep_until(ready_at).await;
                    }
                }
                let outcome = self.attempt(client, request, cached).await;
                *gate = Some(tokio::time::Instant::now());
                outcome
            } else {
                self.attempt(client, request, cached).await
            };
            let current = tracing::Span::current();
            match &outcome {
                Attempt::Answer(answer) => {
                    current.record("status", answer.status.as_u16());
                    current.record("from_cache", answer.from_cache);
                    if let Some(snapshot) =
                        self.rate_limits.observe(credential_scope, &answer.headers)
                    {
                        current.record("remaining", snapshot.remaining);
                    }
                    tracing::debug!("answered");
                }
                Attempt::Timeout => tracing::debug!("timed out"),
                Attempt::Transport(detail) => tracing::debug!(detail, "connection failed"),
            }
            metrics::counter!(
                REQUESTS_METRIC,
                "resource" => request.resource,
                "method" => request.method.as_str().to_owned(),
                "outcome" => RequestOutcome::of(&outcome).as_str(),
            )
            .increment(1);
            outcome
        }
        .instrument(span)
        .await
    }

    /// Keeps a fresh 200 with an `ETag` for the next conditional request.
    fn remember(&self, key: &str, answer: &ApiResponse) {
        if answer.status != StatusCode::OK || answer.from_cache {
            return;
        }
        if let Some(etag) = header_text(&answer.headers, http::header::ETAG) {
            self.cache.insert(
                key.to_owned(),
                CachedAnswer {
                    etag,
                    body: answer.body.clone(),
                    link: header_text(&answer.headers, http::header::LINK),
                },
            );
        }
    }

    /// What to do after an attempt that got no usable answer.
    fn judge_failure(&self, failure: Attempt, context: &AttemptContext<'_>) -> Verdict {
        let request = context.request;
        let method = request.method.to_string();
        let (cause, final_error) = match failure {
            Attempt::Timeout => (
                format!("no answer within {:?}", self.settings.request_timeout),
                GitHubError::Timeout {
                    method,
                    route: request.route,
                    attempts: context.attempt,
                    timeout: self.settings.request_timeout,
                },
            ),
            Attempt::Transport(detail) => (
                format!("connection failed: {detail}"),
                GitHubError::Transport {
                    method,
                    route: request.route,
                    attempts: context.attempt,
                    detail,
                },
            ),
            Attempt::Answer(_) => unreachable!("answers are judged by judge_answer"),
        };
        if request.retry == Retry::Unsafe {
            return Verdict::Done(Err(SendFailure::MaybeApplied(cause)));
        }
        if !context.retries_left {
            return Verdict::Done(Err(final_error.into()));
        }
        self.transient_backoff(context.attempt)
    }

    /// What to do with an answer: return it, or wait and retry.
    fn judge_answer(&self, answer: ApiResponse, context: &AttemptContext<'_>) -> Verdict {
        let request = context.request;
        let status = answer.status;
        if status == StatusCode::FORBIDDEN || status == StatusCode::TOO_MANY_REQUESTS {
            let message = answer.error_message();
            return match classify_refusal(status, &answer.headers, &message) {
                Refusal::Forbidden => Verdict::Done(Ok(answer)),
                Refusal::PrimaryExhausted { resource, reset_at } => {
                    let wait = (reset_at - Utc::now())
                        .to_std()
                        .unwrap_or_default()
                        .saturating_add(Duration::from_secs(1));
                    if !context.retries_left || wait > self.settings.max_rate_limit_wait {
                        Verdict::Done(Err(GitHubError::RateLimitExhausted {
                            credential: context.credential,
                            resource,
                            reset_at,
                        }
                        .into()))
                    } else {
                        Verdict::Wait(WaitReason::PrimaryReset, wait)
                    }
                }
                Refusal::SecondaryRetryAfter(wait) => {
                    // The whole credential waits, even when this call gives up.
                    self.pause_for(context.credential_scope, wait);
                    if !context.retries_left || wait > self.settings.max_rate_limit_wait {
                        Verdict::Done(Err(secondary_error(context, Some(wait)).into()))
                    } else {
                        Verdict::Wait(WaitReason::RetryAfter, wait)
                    }
                }
                Refusal::SecondaryWithoutHeaders => {
                    let wait = self.escalate_pause(context.credential_scope, context.sent_at);
                    if context.retries_left {
                        Verdict::Wait(WaitReason::SecondaryBackoff, wait)
                    } else {
                        Verdict::Done(Err(secondary_error(context, None).into()))
                    }
                }
            };
        }
        if status.is_server_error() {
            if request.retry == Retry::Unsafe {
                return Verdict::Done(Err(SendFailure::MaybeApplied(format!(
                    "GitHub answered {status}: {}",
                    answer.error_message()
                ))));
            }
            if context.retries_left {
                return self.transient_backoff(context.attempt);
            }
            return Verdict::Done(Err(GitHubError::ServerError {
                status: status.as_u16(),
                method: request.method.to_string(),
                route: request.route,
                attempts: context.attempt,
                message: answer.error_message(),
            }
            .into()));
        }
        if status == StatusCode::UNAUTHORIZED {
            return Verdict::Done(Err(GitHubError::Unauthorized {
                credential: context.credential,
                method: request.method.to_string(),
                route: request.route,
                message: answer.error_message(),
            }
            .into()));
        }
        Verdict::Done(Ok(answer))
    }

    fn transient_backoff(&self, attempt: u32) -> Verdict {
        Verdict::Wait(
            WaitReason::TransientBackoff,
            backoff_delay(
                self.settings.retry_base_delay,
                self.settings.retry_max_delay,
                attempt,
            ),
        )
    }

    /// Pauses every request of `credential_scope` for `wait` (a `retry-after`).
    fn pause_for(&self, credential_scope: &str, wait: Duration) {
        let now = tokio::time::Instant::now();
        let base = self.settings.secondary_limit_base_delay;
        let mut pauses = self.pauses.lock().expect("pauses lock");
        let pause = pauses
            .entry(credential_scope.to_owned())
            .or_insert(SecondaryPause {
                until: now,
                set_at: now,
                level: base,
            });
        pause.until = pause.until.max(now + wait);
        pause.set_at = now;
    }

    /// A secondary limit without `retry-after`: the wait for a request sent
    /// at `sent_at`, from the credential's shared backoff level. A request
    /// sent before the current pause was set is part of the refusal that set
    /// it and waits for the same end; a later one doubles the level.
    fn escalate_pause(&self, credential_scope: &str, sent_at: tokio::time::Instant) -> Duration {
        let now = tokio::time::Instant::now();
        let base = self.settings.secondary_limit_base_delay;
        let mut pauses = self.pauses.lock().expect("pauses lock");
        let pause = pauses
            .entry(credential_scope.to_owned())
            .or_insert(SecondaryPause {
                until: now,
                set_at: now,
                level: base,
            });
        if pause.until > now && sent_at < pause.set_at {
            return pause.until - now;
        }
        if now.duration_since(pause.set_at) > self.settings.secondary_limit_calm_period {
            pause.level = base;
        }
        let wait = pause.level.min(self.settings.max_rate_limit_wait);
        pause.level = pause.level.saturating_mul(2);
        pause.until = pause.until.max(now + wait);
        pause.set_at = now;
        pause.until - now
    }

    /// Waits while a secondary limit pauses `credential_scope`; returns the
    /// time the request may be sent. A pause longer than `max_rate_limit_wait`
    /// is an error: nothing is sent while GitHub asked us to stop.
    async fn wait_for_pause(
        &self,
        credential_scope: &str,
        request: &ApiRequest,
    ) -> Result<tokio::time::Instant, GitHubError> {
        loop {
            let until = self
                .pauses
                .lock()
                .expect("pauses lock")
                .get(credential_scope)
                .map(|pause| pause.until);
            let now = tokio::time::Instant::now();
            match until {
                Some(until) if until > now + self.settings.max_rate_limit_wait => {
                    return Err(GitHubError::SecondaryRateLimit {
                        method: request.method.to_string(),
                        route: request.route,
                        attempts: 0,
                        retry_after: Some(until - now),
                    });
                }
                Some(until) if until > now => {
                    self.record_wait(request.route, WaitReason::SharedPause, until - now);
                    tokio::time::sleep_until(until).await;
                }
                _ => return Ok(now),
            }
        }
    }

    /// When the last answer said this budget is spent, waits for its reset
    /// (if that is soon enough) instead of spending a request on a refusal,
    /// and fails with a clear error when it is not.
    async fn wait_for_known_budget(
        &self,
        credential: CredentialKind,
        credential_scope: &str,
        request: &ApiRequest,
    ) -> Result<(), GitHubError> {
        let now = Utc::now();
        if let Some(reset_at) =
            self.rate_limits
                .exhausted_until(credential_scope, request.resource, now)
        {
            let wait = (reset_at - now)
                .to_std()
                .unwrap_or_default()
                .saturating_add(Duration::from_secs(1));
            if wait > self.settings.max_rate_limit_wait {
                return Err(GitHubError::RateLimitExhausted {
                    credential,
                    resource: request.resource.to_owned(),
                    reset_at,
                });
            }
            self.record_wait(request.route, WaitReason::PrimaryReset, wait);
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    async fn attempt(
        &self,
        client: &Octocrab,
        request: &ApiRequest,
        cached: Option<&CachedAnswer>,
    ) -> Attempt {
        let mut builder = http::Request::builder()
            .method(request.method.clone())
            .uri(request.path.as_str())
            .header(http::header::ACCEPT, request.accept);
        if let Some(cached) = cached
            && let Ok(value) = HeaderValue::from_str(&cached.etag)
        {
            builder = builder.header(http::header::IF_NONE_MATCH, value);
        }
        let built = match client.build_request(builder, request.body.as_ref()) {
            Ok(built) => built,
            Err(error) => {
                return Attempt::Transport(format!("could not build the request: {error}"));
            }
        };
        let _permit = self
            .in_flight
            .acquire()
            .await
            .expect("the request semaphore is never closed");
        let exchange = async {
            let response = client.execute(built).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok::<_, octocrab::Error>((parts, body))
        };
        match tokio::time::timeout(self.settings.request_timeout, exchange).await {
            Err(_) => Attempt::Timeout,
            Ok(Err(error)) => Attempt::Transport(describe_octocrab_error(&error)),
            Ok(Ok((parts, body))) => {
                if parts.status == StatusCode::NOT_MODIFIED
                    && let Some(cached) = cached
                {
                    let mut headers = parts.headers;
                    if !headers.contains_key(http::header::LINK)
                        && let Some(link) = cached.link.as_deref()
                        && let Ok(value) = HeaderValue::from_str(link)
                    {
                        headers.insert(http::header::LINK, value);
                    }
                    return Attempt::Answer(ApiResponse {
                        status: StatusCode::OK,
                        headers,
                        body: cached.body.clone(),
                        from_cache: true,
                    });
                }
                Attempt::Answer(ApiResponse {
                    status: parts.status,
                    headers: parts.headers,
                    body,
                    from_cache: false,
                })
            }
        }
    }
}

/// A header's text, when it is valid text.
pub(crate) fn header_text(headers: &HeaderMap, name: http::header::HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Exponential backoff with jitter: between half and all of
/// `min(maximum, base * 2^(attempt - 1))`.
pub(crate) fn backoff_delay(base: Duration, maximum: Duration, attempt: u32) -> Duration {
    let exponent = attempt.saturating_sub(1).min(20);
    let ceiling = base.saturating_mul(1 << exponent).min(maximum);
    let ceiling_ms = u64::try_from(ceiling.as_millis()).unwrap_or(u64::MAX);
    let half = ceiling_ms / 2;
    Duration::from_millis(half + fastrand::u64(0..=ceiling_ms - half))
}

/// An octocrab error as text without anything secret (octocrab's errors
/// carry URLs and HTTP-stack messages, never request headers).
fn describe_octocrab_error(error: &octocrab::Error) -> String {
    use std::error::Error as _;
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_stays_under_the_cap() {
        let base = Duration::from_millis(100);
        let cap = Duration::from_secs(1);
        for attempt in 1..12 {
            let delay = backoff_delay(base, cap, attempt);
            let ceiling = base.saturating_mul(1 << (attempt - 1)).min(cap);
            assert!(
                delay >= ceiling / 2 && delay <= ceiling,
                "{attempt}: {delay:?}"
            );
        }
    }
}
