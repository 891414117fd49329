//! `POST /graphql`: the part of GitHub's GraphQL API review-bot uses (issue
//! 28, item 1) — a pull request's review threads and their resolution — served
//! over the simulator's own records, with GitHub's rules:
//!
//! - the schema is the vendored subset (`graphql/github-subset.graphql`, a
//!   byte-for-byte copy of `shared/github-graphql/subset.graphql`): a field
//!   the type lacks is refused before anything runs (`undefinedField`, no
//!   `data`), as GitHub does;
//! - same credentials as REST; no credential is a 401; every other refusal
//!   is HTTP 200 with an `errors` list: an unknown repository, pull request or
//!   node id (`NOT_FOUND`, the field `null`), a caller who may not resolve
//!   (`FORBIDDEN`: only the pull request's author and people with write
//!   access may), a connection without `first`/`last` or asking for more
//!   than 100 (`MISSING_PAGINATION_BOUNDARIES`, `EXCESSIVE_PAGINATION`);
//! - points, not requests: a call costs GitHub's formula (each connection's
//!   requests assuming every `first`/`last` is reached, summed, divided by
//!   100, rounded, at least 1) from its own `graphql` budget, reported by
//!   `rateLimit` and the `x-ratelimit-*` headers (`x-ratelimit-resource:
//!   graphql`);
//! - a thread is `isOutdated` when the real `git diff` from the commit its
//!   first comment was made on to the current head changes the commented
//!   lines (then `line` is `null`); otherwise `line` follows the lines added
//!   or removed above it.

mod syntax;

use std::collections::BTreeMap;
use std::sync::{Arc, LazyLock};

use axum::body::Body;
use axum::http::{HeaderMap, Method, Response, StatusCode};
use base64::Engine as _;
use bytes::Bytes;
use chrono::Utc;
use serde_json::{Map, Value, json};

use super::api::Actor;
use super::auth::{self, Credential};
use super::log::RequestRecord;
use super::model::{PullRequest, Repository, ReviewComment};
use super::rate::{Budget, Resource};
use super::routes::can_see;
use super::server::{Outcome, Shared, finish};
use super::state::SimState;
use syntax::{Field, OperationKind, SchemaType};

pub(crate) use syntax::parse_schema;

/// The vendored schema subset.
pub const SCHEMA: &str = include_str!("../../../graphql/github-subset.graphql");

static TYPES: LazyLock<BTreeMap<String, SchemaType>> =
    LazyLock::new(|| parse_schema(SCHEMA).expect("the vendored schema parses"));

/// Where GitHub documents GraphQL calls.
const DOCUMENTATION: &str = "https://docs.github.com/graphql";

/// One error entry.
fn error(message: impl Into<String>, kind: Option<&str>, path: &[&str]) -> Value {
    let mut entry = json!({ "message": message.into(), "locations": [{"line": 1, "column": 1}] });
    if let Some(kind) = kind {
        entry["type"] = json!(kind);
    }
    if !path.is_empty() {
        entry["path"] = json!(path);
    }
    entry
}

/// Serves one GraphQL request.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    method: &Method,
    headers: &HeaderMap,
    body: &Bytes,
) -> Response<Body> {
    let now = Utc::now();
    let mut record = RequestRecord {
        sequence: 0,
        received_at: now,
        method: method.as_str().to_owned(),
        operation_id: Some("graphql".to_owned()),
        route: Some("/graphql".to_owned()),
        path: "/graphql".to_owned(),
        query: String::new(),
        status: 0,
        cost: 0,
        resource: Some(Resource::Graphql.as_str().to_owned()),
        actor: None,
        conditional: false,
        fault: None,
        body: None,
        schema_violations: Vec::new(),
    };
    if *method != Method::POST {
        return finish(
            shared,
            record,
            json_outcome(
                StatusCode::NOT_FOUND,
                &json!({"message": "Not Found", "documentation_url": DOCUMENTATION}),
                0,
            ),
            None,
        );
    }
    let credential = match auth::credential(headers) {
        Ok(Credential::None) | Err(_) => {
            return finish(
                shared,
                record,
                json_outcome(
                    StatusCode::UNAUTHORIZED,
                    &json!({
                        "message": "This endpoint requires you to be authenticated.",
                        "documentation_url": "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"
                    }),
                    0,
                ),
                None,
            );
        }
        Ok(credential) => credential,
    };
    let authenticated = {
        let state = shared.lock();
        auth::authenticate(&state, &credential, now)
    };
    let Ok((actor, budget_key)) = authenticated else {
        {
            return finish(
                shared,
                record,
                json_outcome(
                    StatusCode::UNAUTHORIZED,
                    &json!({"message": "Bad credentials", "documentation_url": DOCUMENTATION}),
                    0,
                ),
                None,
            );
        }
    };
    record.actor = actor.describe();
    let budget = Some((budget_key.clone(), Resource::Graphql));
    let Ok(request) = serde_json::from_slice::<Value>(body) else {
        return finish(
            shared,
            record,
            json_outcome(
                StatusCode::BAD_REQUEST,
                &json!({"message": "Problems parsing JSON", "documentation_url": DOCUMENTATION}),
                0,
            ),
            budget,
        );
    };
    record.body = Some(request.clone());
    let answer = {
        let mut state = shared.lock();
        answer(&mut state, &actor, &budget_key, &request)
    };
    let (value, cost) = answer;
    finish(
        shared,
        record,
        json_outcome(StatusCode::OK, &value, cost),
        budget,
    )
}

fn json_outcome(status: StatusCode, value: &Value, cost: u64) -> Outcome {
    Outcome {
        status,
        headers: vec![(
            "content-type".to_owned(),
            "application/json; charset=utf-8".to_owned(),
        )],
        body: Bytes::from(serde_json::to_vec(value).unwrap_or_default()),
        cost,
    }
}

/// The answer to one request and the points it costs.
fn answer(state: &mut SimState, actor: &Actor, budget_key: &str, request: &Value) -> (Value, u64) {
    let Some(query) = request.get("query").and_then(Value::as_str) else {
        return (
            json!({"errors": [error("A query attribute must be specified and must be a string.", None, &[])]}),
            0,
        );
    };
    let operation = match syntax::parse_operation(query) {
        Ok(operation) => operation,
        Err(message) => return (json!({"errors": [error(message, None, &[])]}), 0),
    };
    let mut variables = match request.get("variables") {
        Some(Value::Object(variables)) => variables.clone(),
        None | Some(Value::Null) => Map::new(),
        Some(_) => {
            return (
                json!({"errors": [error("Variables must be a JSON object.", None, &[])]}),
                0,
            );
        }
    };
    for (name, default) in &operation.variables {
        if let Some(default) = default {
            variables
                .entry(name.clone())
                .or_insert_with(|| default.clone());
        }
    }
    let root = match operation.kind {
        OperationKind::Query => "Query",
        OperationKind::Mutation => "Mutation",
    };
    let mut problems = Vec::new();
    validate(root, &operation.selections, &mut problems, &variables);
    if !problems.is_empty() {
        return (json!({ "errors": problems }), 0);
    }
    let cost = match operation.kind {
        OperationKind::Query => {
            let requests = connection_requests(&operation.selections, 1, &variables);
            (requests.saturating_add(50) / 100).max(1)
        }
        OperationKind::Mutation => 1,
    };
    let now = Utc::now();
    let limit = state.core_limit_for(budget_key);
    let options = state.options.clone();
    let window = state
        .budgets
        .entry(budget_key.to_owned())
        .or_insert_with(|| Budget::new(limit, &options, now))
        .window(Resource::Graphql, now);
    if window.remaining() < cost {
        return (
            json!({"errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded for this token. Wait until the window resets (x-ratelimit-reset)."}]}),
            0,
        );
    }
    let rate = RateFigures {
        cost,
        limit: window.limit,
        remaining: window.remaining() - cost,
        used: window.used + cost,
        reset_at: window.reset_at,
    };
    let mut context = Execution {
        state,
        actor,
        variables: &variables,
        errors: Vec::new(),
        rate,
    };
    let data = match operation.kind {
        OperationKind::Query => context.query(&operation.selections),
        OperationKind::Mutation => context.mutation(&operation.selections),
    };
    let mut value = json!({ "data": data });
    if !context.errors.is_empty() {
        value["errors"] = Value::Array(context.errors);
    }
    (value, cost)
}

/// The named type a field of `type_name` returns.
fn field_type(type_name: &str, field: &str) -> Option<String> {
    if field == "__typename" {
        return Some("String".to_owned());
    }
    let schema_type = TYPES.get(type_name)?;
    schema_type.fields.get(field).cloned()
}

/// Checks every selected field exists, connections are bounded, leaves
/// have no selections and objects have some.
fn validate(
    type_name: &str,
    fields: &[Field],
    problems: &mut Vec<Value>,
    variables: &Map<String, Value>,
) {
    for field in fields {
        let Some(returned) = field_type(type_name, &field.name) else {
            problems.push(json!({
                "path": ["query", field.name],
                "extensions": {"code": "undefinedField", "typeName": type_name, "fieldName": field.name},
                "locations": [{"line": 1, "column": 1}],
                "message": format!("Field '{}' doesn't exist on type '{type_name}'", field.name),
            }));
            continue;
        };
        let is_object = TYPES
            .get(&returned)
            .is_some_and(|schema_type| matches!(schema_type.kind.as_str(), "type" | "interface"));
        if is_object && field.selections.is_empty() {
            problems.push(error(
                format!("Field must have selections (field '{}' returns {returned} but has no selections. Did you mean '{} {{ ... }}'?)", field.name, field.name),
                None,
                &[],
            ));
        } else if !is_object && !field.selections.is_empty() {
            problems.push(error(
                format!("Selections can't be made on scalars (field '{}' returns {returned} but has selections [{}])", field.name, field.selections.iter().map(|selection| selection.name.as_str()).collect::<Vec<_>>().join(", ")),
                None,
                &[],
            ));
        }
        if returned.ends_with("Connection") {
            let first = field.argument("first", variables);
            let last = field.argument("last", variables);
            match (first.as_i64(), last.as_i64()) {
                (None, None) => problems.push(error(
                    format!("You must provide a `first` or `last` value to properly paginate the `{}` connection.", field.name),
                    Some("MISSING_PAGINATION_BOUNDARIES"),
                    &[],
                )),
                (Some(count), _) | (None, Some(count)) if !(1..=100).contains(&count) => {
                    problems.push(error(
                        format!("Requesting {count} records on the `{}` connection exceeds the `first` limit of 100 records.", field.name),
                        Some("EXCESSIVE_PAGINATION"),
                        &[],
                    ));
                }
                _ => {}
            }
        }
        if is_object {
            validate(&returned, &field.selections, problems, variables);
        }
    }
}

/// GitHub's request count: each connection's page, times the pages of the
/// connections around it.
fn connection_requests(fields: &[Field], multiplier: u64, variables: &Map<String, Value>) -> u64 {
    let mut total = 0u64;
    for field in fields {
        let size = field
            .argument("first", variables)
            .as_u64()
            .or_else(|| field.argument("last", variables).as_u64());
        let inner = match size {
            Some(size) if field.name == "reviewThreads" || field.name == "comments" => {
                total = total.saturating_add(multiplier);
                multiplier.saturating_mul(size)
            }
            _ => multiplier,
        };
        total = total.saturating_add(connection_requests(&field.selections, inner, variables));
    }
    total
}

/// The budget's figures after this call.
struct RateFigures {
    cost: u64,
    limit: u64,
    remaining: u64,
    used: u64,
    reset_at: chrono::DateTime<Utc>,
}

struct Execution<'a> {
    state: &'a mut SimState,
    actor: &'a Actor,
    variables: &'a Map<String, Value>,
    errors: Vec<Value>,
    rate: RateFigures,
}

/// What a field resolves on.
#[derive(Clone)]
enum Node {
    Repository(String),
    PullRequest(String, u64),
    Thread(String, u64, u64),
    Comment(String, u64, u64),
    Actor(String),
    Value(Value),
}

/// A thread's global id.
pub fn thread_node_id(root_comment: u64) -> String {
    format!(
        "PRRT_{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("thread:{root_comment}"))
    )
}

fn thread_from_node_id(id: &str) -> Option<u64> {
    let encoded = id.strip_prefix("PRRT_")?;
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .ok()?;
    String::from_utf8(decoded)
        .ok()?
        .strip_prefix("thread:")?
        .parse()
        .ok()
}

impl Execution<'_> {
    fn query(&mut self, fields: &[Field]) -> Value {
        let mut data = Map::new();
        for field in fields {
            let value = match field.name.as_str() {
                "__typename" => json!("Query"),
                "repository" => {
                    let owner = field.argument("owner", self.variables);
                    let name = field.argument("name", self.variables);
                    let (owner, name) = (owner.as_str().unwrap_or(""), name.as_str().unwrap_or(""));
                    let visible = self
                        .state
                        .repository(owner, name)
                        .filter(|repository| can_see(self.state, self.actor, repository))
                        .map(|repository| repository.full_name().to_ascii_lowercase());
                    if let Some(key) = visible {
                        self.object("Repository", &Node::Repository(key), &field.selections)
                    } else {
                        self.errors.push(error(
                            format!(
                                "Could not resolve to a Repository with the name '{owner}/{name}'."
                            ),
                            Some("NOT_FOUND"),
                            &[field.key()],
                        ));
                        Value::Null
                    }
                }
                "rateLimit" => {
                    let figures = json!({
                        "cost": self.rate.cost,
                        "limit": self.rate.limit,
                        "nodeCount": 0,
                        "remaining": self.rate.remaining,
                        "resetAt": self.rate.reset_at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                        "used": self.rate.used,
                    });
                    self.object("RateLimit", &Node::Value(figures), &field.selections)
                }
                _ => Value::Null,
            };
            data.insert(field.key().to_owned(), value);
        }
        Value::Object(data)
    }

    fn mutation(&mut self, fields: &[Field]) -> Value {
        let mut data = Map::new();
        for field in fields {
            let value = match field.name.as_str() {
                "resolveReviewThread" => self.set_resolved(field, true),
                "unresolveReviewThread" => self.set_resolved(field, false),
                "__typename" => json!("Mutation"),
                _ => Value::Null,
            };
            data.insert(field.key().to_owned(), value);
        }
        Value::Object(data)
    }

    fn set_resolved(&mut self, field: &Field, resolved: bool) -> Value {
        let input = field.argument("input", self.variables);
        let thread_id = input
            .get("threadId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let not_found = |errors: &mut Vec<Value>| {
            errors.push(error(
                format!("Could not resolve to a node with the global id of '{thread_id}'."),
                Some("NOT_FOUND"),
                &[field.key()],
            ));
            Value::Null
        };
        let Some(root) = thread_from_node_id(&thread_id) else {
            return not_found(&mut self.errors);
        };
        let found = self
            .state
            .repositories
            .iter()
            .find_map(|(key, repository)| {
                repository.pulls.values().find_map(|pull| {
                    pull.review_comments
                        .iter()
                        .any(|comment| comment.id == root && comment.in_reply_to.is_none())
                        .then(|| (key.clone(), pull.number))
                })
            });
        let Some((key, number)) = found else {
            return not_found(&mut self.errors);
        };
        let repository = &self.state.repositories[&key];
        if !can_see(self.state, self.actor, repository) {
            return not_found(&mut self.errors);
        }
        let pull = &repository.pulls[&number];
        if !may_resolve(repository, pull, self.actor) {
            let message = match self.actor {
                Actor::Installation { .. } => "Resource not accessible by integration".to_owned(),
                other => format!(
                    "{} does not have the correct permissions to execute `{}`",
                    other.login().unwrap_or("anonymous"),
                    if resolved {
                        "ResolveReviewThread"
                    } else {
                        "UnresolveReviewThread"
                    }
                ),
            };
            self.errors
                .push(error(message, Some("FORBIDDEN"), &[field.key()]));
            return Value::Null;
        }
        if let Some(pull) = self
            .state
            .repositories
            .get_mut(&key)
            .and_then(|repository| repository.pulls.get_mut(&number))
        {
            if resolved {
                pull.resolved_threads.insert(root);
            } else {
                pull.resolved_threads.remove(&root);
            }
        }
        let client_mutation_id = input
            .get("clientMutationId")
            .cloned()
            .unwrap_or(Value::Null);
        let mut payload = Map::new();
        for selection in &field.selections {
            let value = match selection.name.as_str() {
                "clientMutationId" => client_mutation_id.clone(),
                "thread" => self.object(
                    "PullRequestReviewThread",
                    &Node::Thread(key.clone(), number, root),
                    &selection.selections,
                ),
                "__typename" => json!(if resolved {
                    "ResolveReviewThreadPayload"
                } else {
                    "UnresolveReviewThreadPayload"
                }),
                _ => Value::Null,
            };
            payload.insert(selection.key().to_owned(), value);
        }
        Value::Object(payload)
    }

    /// An object of `type_name` with the selected fields.
    fn object(&mut self, type_name: &str, node: &Node, fields: &[Field]) -> Value {
        let mut data = Map::new();
        for field in fields {
            let value = self.field(type_name, node, field);
            data.insert(field.key().to_owned(), value);
        }
        Value::Object(data)
    }

    #[allow(clippy::too_many_lines)] // one match over the schema's fields reads best
    fn field(&mut self, type_name: &str, node: &Node, field: &Field) -> Value {
        if field.name == "__typename" {
            return match node {
                Node::Actor(login) => json!(actor_type(self.state, login)),
                _ => json!(type_name),
            };
        }
        match node {
            Node::Value(value) => value.get(&field.name).cloned().unwrap_or(Value::Null),
            Node::Repository(key) => {
                let Some(repository) = self.state.repositories.get(key) else {
                    return Value::Null;
                };
                match field.name.as_str() {
                    "id" => json!(format!("R_{}", repository.id)),
                    "name" => json!(repository.name),
                    "nameWithOwner" => json!(repository.full_name()),
                    "pullRequest" => {
                        let number = field.argument("number", self.variables).as_u64();
                        if let Some(number) =
                            number.filter(|number| repository.pulls.contains_key(number))
                        {
                            self.object(
                                "PullRequest",
                                &Node::PullRequest(key.clone(), number),
                                &field.selections,
                            )
                        } else {
                            {
                                self.errors.push(error(
                                    format!(
                                        "Could not resolve to a PullRequest with the number of {}.",
                                        number.map_or_else(
                                            || "null".to_owned(),
                                            |number| number.to_string()
                                        )
                                    ),
                                    Some("NOT_FOUND"),
                                    &["repository", field.key()],
                                ));
                                Value::Null
                            }
                        }
                    }
                    _ => Value::Null,
                }
            }
            Node::PullRequest(key, number) => {
                let Some(pull) = self.pull(key, *number) else {
                    return Value::Null;
                };
                match field.name.as_str() {
                    "id" => json!(format!("PR_{}", pull.id)),
                    "number" => json!(pull.number),
                    "reviewThreads" => {
                        let roots: Vec<u64> = pull
                            .review_comments
                            .iter()
                            .filter(|comment| comment.in_reply_to.is_none())
                            .map(|comment| comment.id)
                            .collect();
                        let nodes: Vec<Node> = roots
                            .into_iter()
                            .map(|root| Node::Thread(key.clone(), *number, root))
                            .collect();
                        self.connection("PullRequestReviewThread", &nodes, field)
                    }
                    _ => Value::Null,
                }
            }
            Node::Thread(key, number, root) => {
                let Some((repository, pull)) = self.repository_and_pull(key, *number) else {
                    return Value::Null;
                };
                let Some(first) = pull
                    .review_comments
                    .iter()
                    .find(|comment| comment.id == *root)
                else {
                    return Value::Null;
                };
                match field.name.as_str() {
                    "id" => json!(thread_node_id(*root)),
                    "isResolved" => json!(pull.resolved_threads.contains(root)),
                    "isOutdated" => json!(position(self.state, repository, pull, first).0),
                    "path" => json!(first.path),
                    "line" => json!(position(self.state, repository, pull, first).1),
                    "originalLine" => json!(first.line),
                    "diffSide" => json!(first.side.clone().unwrap_or_else(|| "RIGHT".to_owned())),
                    "comments" => {
                        let nodes: Vec<Node> = pull
                            .review_comments
                            .iter()
                            .filter(|comment| {
                                comment.id == *root || comment.in_reply_to == Some(*root)
                            })
                            .map(|comment| Node::Comment(key.clone(), *number, comment.id))
                            .collect();
                        self.connection("PullRequestReviewComment", &nodes, field)
                    }
                    _ => Value::Null,
                }
            }
            Node::Comment(key, number, id) => {
                let Some(pull) = self.pull(key, *number) else {
                    return Value::Null;
                };
                let Some(comment) = pull
                    .review_comments
                    .iter()
                    .find(|comment| comment.id == *id)
                else {
                    return Value::Null;
                };
                let comment: ReviewComment = comment.clone();
                match field.name.as_str() {
                    "id" => json!(format!("PRRC_{}", comment.id)),
                    "databaseId" => json!(comment.id),
                    "fullDatabaseId" => json!(comment.id.to_string()),
                    "body" => json!(comment.body),
                    "createdAt" => json!(
                        comment
                            .created_at
                            .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    ),
                    "url" => json!(format!(
                        "{}/{}/pull/{}#discussion_r{}",
                        self.state.base_url.trim_end_matches('/'),
                        key,
                        number,
                        comment.id
                    )),
                    "author" => self.object(
                        "Actor",
                        &Node::Actor(comment.user.clone()),
                        &field.selections,
                    ),
                    _ => Value::Null,
                }
            }
            Node::Actor(login) => match field.name.as_str() {
                "login" => json!(login),
                "id" => json!(format!(
                    "{}_{}",
                    if actor_type(self.state, login) == "Bot" {
                        "BOT"
                    } else {
                        "U"
                    },
                    self.state.account(login).map_or(0, |account| account.id)
                )),
                _ => Value::Null,
            },
        }
    }

    /// A connection over `nodes`, paged by `first`/`last`/`after`/`before`.
    fn connection(&mut self, node_type: &str, nodes: &[Node], field: &Field) -> Value {
        let total = nodes.len();
        let cursor_index = |name: &str, execution: &Self| {
            field
                .argument(name, execution.variables)
                .as_str()
                .and_then(|cursor| {
                    base64::engine::general_purpose::STANDARD
                        .decode(cursor)
                        .ok()
                        .and_then(|bytes| String::from_utf8(bytes).ok())
                        .and_then(|text| {
                            text.strip_prefix("cursor:")
                                .and_then(|index| index.parse::<usize>().ok())
                        })
                })
        };
        let mut start = cursor_index("after", self)
            .map_or(0, |index| index + 1)
            .min(total);
        let mut end = cursor_index("before", self)
            .unwrap_or(total)
            .min(total)
            .max(start);
        if let Some(first) = field.argument("first", self.variables).as_u64() {
            end = end.min(start + usize::try_from(first).unwrap_or(usize::MAX));
        }
        if let Some(last) = field.argument("last", self.variables).as_u64() {
            start = start.max(end.saturating_sub(usize::try_from(last).unwrap_or(usize::MAX)));
        }
        let skip = field.argument("skip", self.variables).as_u64().unwrap_or(0);
        start = (start + usize::try_from(skip).unwrap_or(usize::MAX)).min(end);
        let cursor = |index: usize| {
            base64::engine::general_purpose::STANDARD.encode(format!("cursor:{index}"))
        };
        let mut data = Map::new();
        for selection in &field.selections {
            let value = match selection.name.as_str() {
                "totalCount" => json!(total),
                "nodes" => Value::Array(
                    (start..end)
                        .map(|index| self.object(node_type, &nodes[index], &selection.selections))
                        .collect(),
                ),
                "edges" => Value::Array(
                    (start..end)
                        .map(|index| {
                            let mut edge = Map::new();
                            for part in &selection.selections {
                                let value = match part.name.as_str() {
                                    "cursor" => json!(cursor(index)),
                                    "node" => {
                                        self.object(node_type, &nodes[index], &part.selections)
                                    }
                                    "__typename" => json!(format!("{node_type}Edge")),
                                    _ => Value::Null,
                                };
                                edge.insert(part.key().to_owned(), value);
                            }
                            Value::Object(edge)
                        })
                        .collect(),
                ),
                "pageInfo" => {
                    let info = json!({
                        "endCursor": if end > start { json!(cursor(end - 1)) } else { Value::Null },
                        "startCursor": if end > start { json!(cursor(start)) } else { Value::Null },
                        "hasNextPage": end < total,
                        "hasPreviousPage": start > 0,
                    });
                    self.object("PageInfo", &Node::Value(info), &selection.selections)
                }
                "__typename" => json!(format!("{node_type}Connection")),
                _ => Value::Null,
            };
            data.insert(selection.key().to_owned(), value);
        }
        Value::Object(data)
    }

    fn pull(&self, key: &str, number: u64) -> Option<&PullRequest> {
        self.state.repositories.get(key)?.pulls.get(&number)
    }

    fn repository_and_pull(&self, key: &str, number: u64) -> Option<(&Repository, &PullRequest)> {
        let repository = self.state.repositories.get(key)?;
        Some((repository, repository.pulls.get(&number)?))
    }
}

/// `User` or `Bot`.
fn actor_type(state: &SimState, login: &str) -> &'static str {
    let is_bot = login.ends_with("[bot]")
        || state
            .account(login)
            .is_some_and(|account| account.kind == super::model::AccountKind::Bot);
    if is_bot { "Bot" } else { "User" }
}

/// Who may resolve a thread: the pull request's author, the owner, a
/// collaborator with write access or more, an installation covering the
/// repository.
fn may_resolve(repository: &Repository, pull: &PullRequest, actor: &Actor) -> bool {
    match actor {
        Actor::Installation { .. } => true,
        Actor::User { login } => {
            pull.author.eq_ignore_ascii_case(login)
                || repository.owner.eq_ignore_ascii_case(login)
                || repository
                    .collaborators
                    .get(&login.to_ascii_lowercase())
                    .is_some_and(|role| matches!(role.as_str(), "write" | "maintain" | "admin"))
        }
        Actor::Anonymous | Actor::App { .. } => false,
    }
}

/// Whether a thread is outdated, and its line on the current head (`None`
/// when outdated), from the real git diff since the comment's commit.
fn position(
    state: &SimState,
    repository: &Repository,
    pull: &PullRequest,
    first: &ReviewComment,
) -> (bool, Option<u64>) {
    let Some(line) = first.line else {
        return (false, None);
    };
    if first.side.as_deref() == Some("LEFT") {
        return (false, Some(line));
    }
    let Ok(head) = state.head_sha(repository, pull) else {
        return (false, Some(line));
    };
    if head == first.commit_id {
        return (false, Some(line));
    }
    let git = state.git(repository);
    let Ok(hunks) = git.changed_hunks(&first.commit_id, &head, &first.path) else {
        return (false, Some(line));
    };
    let Some(hunks) = hunks else {
        return (true, None); // the file is gone
    };
    let start = first.start_line.unwrap_or(line);
    let mut shift: i64 = 0;
    for hunk in hunks {
        let touches = if hunk.old_count == 0 {
            // Lines inserted after `old_start`: inside the commented block?
            hunk.old_start >= start && hunk.old_start < line
        } else {
            let last = hunk.old_start + hunk.old_count - 1;
            hunk.old_start <= line && last >= start
        };
        if touches {
            return (true, None);
        }
        let before = if hunk.old_count == 0 {
            hunk.old_start < start
        } else {
            hunk.old_start + hunk.old_count - 1 < start
        };
        if before {
            shift += i64::try_from(hunk.new_count).unwrap_or(0)
                - i64::try_from(hunk.old_count).unwrap_or(0);
        }
    }
    let moved = i64::try_from(line).unwrap_or(0) + shift;
    (false, u64::try_from(moved).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_ids_round_trip_and_junk_is_no_thread() {
        assert_eq!(thread_from_node_id(&thread_node_id(42)), Some(42));
        for junk in ["", "PRRT_", "PRRT_!!", "PR_1", "PRRT_dGhyZWFkOng"] {
            assert_eq!(thread_from_node_id(junk), None, "{junk}");
        }
    }
}
