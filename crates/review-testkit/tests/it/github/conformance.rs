//! Every operation of the OpenAPI subset, exercised against the simulator, with each response
//! validated against the operation's response schema — strictly: a field the schema does not
//! declare is a failure, so the simulator cannot invent fields GitHub does not have.

use std::collections::BTreeSet;

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::Method;
use review_testkit::github::{GithubSim, RepositorySelection, SimApp};
use review_testkit::openapi::{OpenApi, Strictness};
use serde_json::{Value, json};

use super::{client, split};

/// One call and what came back.
struct Exchange {
    operation: &'static str,
    path: String,
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

struct Caller<'a> {
    sim: &'a GithubSim,
    exchanges: Vec<Exchange>,
}

impl Caller<'_> {
    async fn call(
        &mut self,
        operation: &'static str,
        token: &str,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Value {
        let mut request = client()
            .request(method, format!("{}{path}", self.sim.api_url()))
            .bearer_auth(token);
        if let Some(body) = body {
            request = request.json(&body);
        }
        let (status, headers, body) = split(request.send().await.expect("request")).await;
        self.exchanges.push(Exchange {
            operation,
            path: path.to_owned(),
            status,
            headers,
            body: body.clone(),
        });
        body
    }
}

pub(crate) fn app_jwt(app: &SimApp) -> String {
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"iat": now - 60, "exp": now + 540, "iss": app.id});
    jsonwebtoken::encode(
        &Header::new(Algorithm::RS256),
        &claims,
        &EncodingKey::from_rsa_pem(app.private_key_pem.as_bytes()).expect("the app key is PEM"),
    )
    .expect("JWT")
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // One call per operation, in one readable list.
async fn every_operation_answers_in_the_shape_of_its_schema() {
    let fixture = super::fixture();
    let sim = &fixture.sim;
    let token = fixture.bot.token.clone();
    let head = fixture.pull.head_sha().unwrap();
    fixture
        .pull
        .add_check_run("build", "completed", Some("success"))
        .unwrap();
    fixture
        .pull
        .add_check_run("lint", "in_progress", None)
        .unwrap();
    fixture.pull.add_status("ci/jenkins", "success").unwrap();
    let top = fixture
        .pull
        .review_comment("alice", "src/lib.rs", 6, "hm")
        .unwrap();
    fixture.pull.comment("alice", "looks good").unwrap();
    let app = sim.create_app("review-bot-app").unwrap();
    let installation = sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let jwt = app_jwt(&app);

    let mut caller = Caller {
        sim,
        exchanges: Vec::new(),
    };
    let pulls = "/repos/acme/widgets/pulls/1";
    let issues = "/repos/acme/widgets/issues/1";
    caller
        .call("pulls/get", &token, Method::GET, pulls, None)
        .await;
    caller
        .call(
            "pulls/list-files",
            &token,
            Method::GET,
            &format!("{pulls}/files"),
            None,
        )
        .await;
    caller
        .call(
            "pulls/create-review",
            &token,
            Method::POST,
            &format!("{pulls}/reviews"),
            Some(json!({
                "commit_id": head,
                "body": "review",
                "event": "COMMENT",
                "comments": [{"path": "src/lib.rs", "line": 18, "body": "five", "start_line": 17}],
            })),
        )
        .await;
    caller
        .call(
            "pulls/create-review",
            &token,
            Method::POST,
            &format!("{pulls}/reviews"),
            Some(json!({"body": "x", "event": "COMMENT", "comments": [{"path": "src/lib.rs", "line": 12, "body": "off"}]})),
        )
        .await;
    caller
        .call(
            "pulls/list-reviews",
            &token,
            Method::GET,
            &format!("{pulls}/reviews"),
            None,
        )
        .await;
    caller
        .call(
            "pulls/create-review-comment",
            &token,
            Method::POST,
            &format!("{pulls}/comments"),
            Some(json!({"body": "single", "commit_id": head, "path": "src/new.rs", "line": 1, "side": "RIGHT"})),
        )
        .await;
    caller
        .call(
            "pulls/create-review-comment",
            &token,
            Method::POST,
            &format!("{pulls}/comments"),
            Some(json!({"body": "single", "commit_id": head, "path": "src/lib.rs", "line": 10})),
        )
        .await;
    caller
        .call(
            "pulls/create-review-comment",
            &token,
            Method::POST,
            &format!("{pulls}/comments"),
            Some(json!({"body": "about the whole file", "commit_id": head, "path": "src/new.rs", "subject_type": "file"})),
        )
        .await;
    caller
        .call(
            "pulls/create-reply-for-review-comment",
            &token,
            Method::POST,
            &format!("{pulls}/comments/{top}/replies"),
            Some(json!({"body": "reply"})),
        )
        .await;
    caller
        .call(
            "pulls/create-reply-for-review-comment",
            &token,
            Method::POST,
            &format!("{pulls}/comments/999999/replies"),
            Some(json!({"body": "reply"})),
        )
        .await;
    caller
        .call(
            "pulls/list-review-comments",
            &token,
            Method::GET,
            &format!("{pulls}/comments"),
            None,
        )
        .await;
    let created = caller
        .call(
            "issues/create-comment",
            &token,
            Method::POST,
            &format!("{issues}/comments"),
            Some(json!({"body": "hello"})),
        )
        .await;
    caller
        .call(
            "issues/update-comment",
            &token,
            Method::PATCH,
            &format!("/repos/acme/widgets/issues/comments/{}", created["id"]),
            Some(json!({"body": "hello again"})),
        )
        .await;
    caller
        .call(
            "issues/list-comments",
            &token,
            Method::GET,
            &format!("{issues}/comments"),
            None,
        )
        .await;
    // Paginated answers carry the `Link` header the spec declares.
    for path in [
        format!("{issues}/comments?per_page=1"),
        format!("{pulls}/comments?per_page=1"),
        format!("{pulls}/files?per_page=1"),
    ] {
        let operation = if path.contains("/issues/") {
            "issues/list-comments"
        } else if path.contains("/files") {
            "pulls/list-files"
        } else {
            "pulls/list-review-comments"
        };
        caller
            .call(operation, &token, Method::GET, &path, None)
            .await;
    }
    caller
        .call(
            "issues/add-labels",
            &token,
            Method::POST,
            &format!("{issues}/labels"),
            Some(json!({"labels": ["bot-review-needed", "size/S"]})),
        )
        .await;
    caller
        .call(
            "issues/set-labels",
            &token,
            Method::PUT,
            &format!("{issues}/labels"),
            Some(json!({"labels": ["bot-changes-needed"]})),
        )
        .await;
    caller
        .call(
            "issues/list-labels-on-issue",
            &token,
            Method::GET,
            &format!("{issues}/labels"),
            None,
        )
        .await;
    caller
        .call(
            "issues/remove-label",
            &token,
            Method::DELETE,
            &format!("{issues}/labels/bot-changes-needed"),
            None,
        )
        .await;
    caller
        .call(
            "issues/remove-label",
            &token,
            Method::DELETE,
            &format!("{issues}/labels/absent"),
            None,
        )
        .await;
    caller
        .call(
            "repos/get-commit",
            &token,
            Method::GET,
            &format!("/repos/acme/widgets/commits/{head}"),
            None,
        )
        .await;
    caller
        .call(
            "repos/get-commit",
            &token,
            Method::GET,
            "/repos/acme/widgets/commits/nope",
            None,
        )
        .await;
    caller
        .call(
            "checks/list-for-ref",
            &token,
            Method::GET,
            &format!("/repos/acme/widgets/commits/{head}/check-runs"),
            None,
        )
        .await;
    caller
        .call(
            "repos/get-combined-status-for-ref",
            &token,
            Method::GET,
            &format!("/repos/acme/widgets/commits/{head}/status"),
            None,
        )
        .await;
    caller
        .call(
            "repos/get-combined-status-for-ref",
            &token,
            Method::GET,
            "/repos/acme/widgets/commits/main/status",
            None,
        )
        .await;
    caller
        .call(
            "repos/list-commit-statuses-for-ref",
            &token,
            Method::GET,
            &format!("/repos/acme/widgets/commits/{head}/statuses"),
            None,
        )
        .await;
    caller
        .call(
            "search/issues-and-pull-requests",
            &token,
            Method::GET,
            "/search/issues?q=is%3Apr+is%3Aopen+org%3Aacme",
            None,
        )
        .await;
    caller
        .call(
            "search/issues-and-pull-requests",
            &token,
            Method::GET,
            "/search/issues",
            None,
        )
        .await;
    caller
        .call("rate-limit/get", &token, Method::GET, "/rate_limit", None)
        .await;
    caller
        .call(
            "apps/list-installations",
            &jwt,
            Method::GET,
            "/app/installations",
            None,
        )
        .await;
    caller
        .call(
            "apps/get-repo-installation",
            &jwt,
            Method::GET,
            "/repos/acme/widgets/installation",
            None,
        )
        .await;
    let minted = caller
        .call(
            "apps/create-installation-access-token",
            &jwt,
            Method::POST,
            &format!("/app/installations/{installation}/access_tokens"),
            None,
        )
        .await;
    caller
        .call(
            "apps/create-installation-access-token",
            &jwt,
            Method::POST,
            &format!("/app/installations/{installation}/access_tokens"),
            Some(json!({"repositories": ["widgets"]})),
        )
        .await;
    caller
        .call(
            "apps/create-installation-access-token",
            &jwt,
            Method::POST,
            "/app/installations/1/access_tokens",
            None,
        )
        .await;
    let installation_token = minted["token"].as_str().expect("a token").to_owned();
    caller
        .call(
            "apps/list-repos-accessible-to-installation",
            &installation_token,
            Method::GET,
            "/installation/repositories",
            None,
        )
        .await;
    caller
        .call("pulls/get", &installation_token, Method::GET, pulls, None)
        .await;
    caller
        .call("pulls/get", "wrong-token", Method::GET, pulls, None)
        .await;
    caller
        .call(
            "pulls/get",
            &token,
            Method::GET,
            "/repos/acme/widgets/pulls/77",
            None,
        )
        .await;

    // What CI writes: statuses with any token, check runs with the installation's.
    caller
        .call(
            "repos/create-commit-status",
            &token,
            Method::POST,
            &format!("/repos/acme/widgets/statuses/{head}"),
            Some(json!({"state": "failure", "context": "ci/test", "target_url": "https://ci.example.com/9", "description": "2 failed"})),
        )
        .await;
    let run = caller
        .call(
            "checks/create",
            &installation_token,
            Method::POST,
            "/repos/acme/widgets/check-runs",
            Some(json!({"name": "test", "head_sha": head, "status": "in_progress", "external_id": "42"})),
        )
        .await;
    let run_path = format!("/repos/acme/widgets/check-runs/{}", run["id"]);
    caller
        .call(
            "checks/update",
            &installation_token,
            Method::PATCH,
            &run_path,
            Some(json!({"conclusion": "success", "output": {"title": "ok", "summary": "all passed", "text": "42 tests"}})),
        )
        .await;
    caller
        .call("checks/get", &token, Method::GET, &run_path, None)
        .await;
    caller
        .call(
            "checks/list-for-ref",
            &token,
            Method::GET,
            "/repos/acme/widgets/commits/feature/check-runs",
            None,
        )
        .await;
    caller
        .call(
            "repos/get-combined-status-for-ref",
            &token,
            Method::GET,
            "/repos/acme/widgets/commits/feature/status",
            None,
        )
        .await;
    // The smaller reads and writes the next features need.
    caller
        .call(
            "repos/get",
            &token,
            Method::GET,
            "/repos/acme/widgets",
            None,
        )
        .await;
    caller
        .call(
            "repos/get-collaborator-permission-level",
            &token,
            Method::GET,
            "/repos/acme/widgets/collaborators/alice/permission",
            None,
        )
        .await;
    caller
        .call(
            "repos/get-collaborator-permission-level",
            &token,
            Method::GET,
            "/repos/acme/widgets/collaborators/acme/permission",
            None,
        )
        .await;
    caller
        .call(
            "repos/get-collaborator-permission-level",
            &token,
            Method::GET,
            "/repos/acme/widgets/collaborators/nobody-at-all/permission",
            None,
        )
        .await;
    caller
        .call(
            "pulls/list-commits",
            &token,
            Method::GET,
            &format!("{pulls}/commits"),
            None,
        )
        .await;
    caller
        .call(
            "repos/compare-commits",
            &token,
            Method::GET,
            "/repos/acme/widgets/compare/main...feature",
            None,
        )
        .await;
    caller
        .call(
            "repos/compare-commits",
            &token,
            Method::GET,
            "/repos/acme/widgets/compare/main...nope",
            None,
        )
        .await;
    let comment_path = format!("/repos/acme/widgets/issues/comments/{}", created["id"]);
    caller
        .call(
            "reactions/create-for-issue-comment",
            &token,
            Method::POST,
            &format!("{comment_path}/reactions"),
            Some(json!({"content": "eyes"})),
        )
        .await;
    caller
        .call(
            "reactions/create-for-issue-comment",
            &token,
            Method::POST,
            &format!("{comment_path}/reactions"),
            Some(json!({"content": "eyes"})),
        )
        .await;
    caller
        .call(
            "issues/get-comment",
            &token,
            Method::GET,
            &comment_path,
            None,
        )
        .await;
    caller
        .call(
            "issues/get-comment",
            &token,
            Method::GET,
            "/repos/acme/widgets/issues/comments/999999",
            None,
        )
        .await;
    // Who the token is, and a person closing and reopening the pull request.
    caller
        .call(
            "users/get-authenticated",
            &token,
            Method::GET,
            "/user",
            None,
        )
        .await;
    caller
        .call(
            "users/get-authenticated",
            &installation_token,
            Method::GET,
            "/user",
            None,
        )
        .await;
    caller
        .call(
            "pulls/update",
            &token,
            Method::PATCH,
            pulls,
            Some(json!({"state": "closed"})),
        )
        .await;
    caller
        .call(
            "pulls/update",
            &token,
            Method::PATCH,
            pulls,
            Some(json!({"state": "open", "title": "Reopened"})),
        )
        .await;
    caller
        .call(
            "pulls/update",
            &token,
            Method::PATCH,
            pulls,
            Some(json!({"base": "no-such-branch"})),
        )
        .await;
    caller
        .call(
            "issues/remove-all-labels",
            &token,
            Method::DELETE,
            &format!("{issues}/labels"),
            None,
        )
        .await;

    let document = OpenApi::github_subset();
    let mut failures = Vec::new();
    let mut exercised = BTreeSet::new();
    for exchange in &caller.exchanges {
        let declared = document.declared_statuses(exchange.operation);
        if exchange.status == 401 {
            // Every operation can answer 401; not all declare it. It must be GitHub's basic error.
            assert_eq!(exchange.body["message"], "Bad credentials");
            continue;
        }
        if !declared.contains(&exchange.status.to_string()) {
            failures.push(format!(
                "{} answered {} which it does not declare ({declared:?}): {}",
                exchange.operation, exchange.status, exchange.body
            ));
            continue;
        }
        if (200..300).contains(&exchange.status) {
            exercised.insert(exchange.operation);
        }
        // GitHub's error bodies carry `"status": "422"` (seen in real answers, e.g. the 406
        // `too_large` and 422 review errors); `basic-error` declares it, the two
        // validation-error schemas do not. That one field is the only extra allowed.
        let mut body = exchange.body.clone();
        if exchange.status >= 400
            && let Some(object) = body.as_object_mut()
            && object.get("status") == Some(&json!(exchange.status.to_string()))
        {
            object.remove("status");
        }
        match document.validate_response(
            exchange.operation,
            exchange.status,
            &body,
            Strictness::Strict,
        ) {
            Ok(Some(violations)) => {
                for violation in violations {
                    failures.push(format!(
                        "{} {}: {violation}",
                        exchange.operation, exchange.status
                    ));
                }
            }
            Ok(None) => {}
            Err(error) => failures.push(format!("{}: {error}", exchange.operation)),
        }
        for header in document.response_headers(exchange.operation, exchange.status) {
            if header == "location" && !exchange.headers.contains_key("location") {
                failures.push(format!(
                    "{} {} lacks its Location header",
                    exchange.operation, exchange.status
                ));
            }
            if header == "link"
                && exchange.path.contains("per_page=1")
                && !exchange.headers.contains_key("link")
            {
                failures.push(format!(
                    "{} {} lacks its Link header",
                    exchange.operation, exchange.status
                ));
            }
        }
        if exchange.status < 400 {
            for header in [
                "x-ratelimit-limit",
                "x-ratelimit-remaining",
                "x-ratelimit-used",
                "x-ratelimit-reset",
                "x-ratelimit-resource",
            ] {
                if !exchange.headers.contains_key(header) {
                    failures.push(format!("{} lacks {header}", exchange.operation));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} problems:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let all: BTreeSet<_> = document
        .operations()
        .into_iter()
        .map(|operation| operation.id)
        .collect();
    let exercised: BTreeSet<String> = exercised.into_iter().map(str::to_owned).collect();
    let missing: Vec<_> = all.difference(&exercised).collect();
    assert!(
        missing.is_empty(),
        "operations never answered 2xx: {missing:?}"
    );
    assert!(
        sim.request_schema_violations().is_empty(),
        "{:?}",
        sim.request_schema_violations()
    );
}
