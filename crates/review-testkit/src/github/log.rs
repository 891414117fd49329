//! The request log: one record per request the simulator answered, for tests to assert on
//! (which operations a client called, what each cost, what the client sent).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// One answered request.
#[derive(Debug, Clone, Serialize)]
pub struct RequestRecord {
    /// Arrival order, from 1.
    pub sequence: u64,
    /// When the request arrived (for tests that check a client paused).
    pub received_at: chrono::DateTime<chrono::Utc>,
    /// `GET`, `POST`…
    pub method: String,
    /// The operation id (`pulls/create-review`, `git/upload-pack`…); `None` for an unknown route.
    pub operation_id: Option<String>,
    /// The OpenAPI path template the request matched.
    pub route: Option<String>,
    /// The request path (`/repos/acme/widgets/pulls/1`).
    pub path: String,
    /// The raw query string (empty when none).
    pub query: String,
    /// The status the simulator answered.
    pub status: u16,
    /// Primary rate-limit units spent (0 for a 304, a 401 or an injected fault).
    pub cost: u64,
    /// `core` or `search` (the budget the request counts against).
    pub resource: Option<String>,
    /// Who made the request: a login, `installation:{id}`, `app:{id}`, or `None` (anonymous).
    pub actor: Option<String>,
    /// Whether the request carried `If-None-Match`.
    pub conditional: bool,
    /// The fault injected into this request, if any.
    pub fault: Option<String>,
    /// The request body, when it was JSON.
    pub body: Option<Value>,
    /// Where the body broke the operation's request schema (empty when it conformed).
    pub schema_violations: Vec<String>,
}

/// Totals over the request log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RequestCounters {
    /// Requests answered.
    pub requests: u64,
    /// Primary rate-limit units spent, all resources together.
    pub cost: u64,
    /// Per operation id (`"(unknown)"` for paths that matched no operation).
    pub by_operation: BTreeMap<String, OperationCounter>,
}

/// Totals for one operation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OperationCounter {
    /// Requests answered.
    pub requests: u64,
    /// Primary rate-limit units spent.
    pub cost: u64,
    /// How many answers had each status.
    pub statuses: BTreeMap<u16, u64>,
}

impl RequestCounters {
    /// Totals of a log.
    pub fn from_log(log: &[RequestRecord]) -> Self {
        let mut counters = Self::default();
        for record in log {
            counters.requests += 1;
            counters.cost += record.cost;
            let operation = counters
                .by_operation
                .entry(
                    record
                        .operation_id
                        .clone()
                        .unwrap_or_else(|| "(unknown)".to_owned()),
                )
                .or_default();
            operation.requests += 1;
            operation.cost += record.cost;
            *operation.statuses.entry(record.status).or_default() += 1;
        }
        counters
    }
}
