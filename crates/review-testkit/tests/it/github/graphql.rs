//! `POST /graphql`: review threads and their resolution, with GitHub's rules,
//! and every answer checked against the vendored schema by graphql-core
//! (`graphql_conformance.py`: the query validated against the SDL, then the
//! answer's `data` run back through graphql-core's executor, which refuses a
//! value of the wrong type, a null where the schema says non-null, an enum
//! value the schema lacks).

use std::io::Write as _;
use std::process::{Command, Stdio};

use reqwest::Method;
use review_testkit::github::GRAPHQL_SCHEMA;
use serde_json::{Value, json};

use super::{LIB_AFTER, fixture, send};

/// The review-bot client's query, the same text `review-github` sends.
const THREADS: &str =
    "query ReviewThreads($owner: String!, $name: String!, $number: Int!, $after: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $after) {
        pageInfo { hasNextPage endCursor }
        totalCount
        nodes {
          id isResolved isOutdated path line originalLine diffSide
          comments(first: 100) {
            totalCount
            nodes { databaseId fullDatabaseId body createdAt url author { __typename login } }
          }
        }
      }
    }
  }
  rateLimit { cost remaining limit used resetAt nodeCount }
}";

const RESOLVE: &str = "mutation ResolveThread($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId, clientMutationId: \"m1\"}) {
    clientMutationId
    thread { id isResolved }
  }
}";

async fn graphql(
    sim: &review_testkit::github::GithubSim,
    token: &str,
    query: &str,
    variables: &Value,
) -> (u16, reqwest::header::HeaderMap, Value) {
    send(
        sim,
        token,
        Method::POST,
        "/graphql",
        &json!({"query": query, "variables": variables}),
    )
    .await
}

/// Checks `answer` against the schema with graphql-core; panics with its report.
fn conforms(query: &str, variables: &Value, answer: &Value) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/graphql_conformance.py");
    let schema = std::env::temp_dir().join(format!("github-subset-{}.graphql", std::process::id()));
    std::fs::write(&schema, GRAPHQL_SCHEMA).unwrap();
    let mut child = Command::new("python3")
        .arg(script)
        .arg(&schema)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs (graphql-core checks the answers: pip install graphql-core)");
    let input = json!({"query": query, "variables": variables, "answer": answer});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.to_string().as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the answer does not conform to GitHub's schema:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn variables(number: u64) -> Value {
    json!({"owner": "acme", "name": "widgets", "number": number, "after": null})
}

#[tokio::test]
async fn threads_are_listed_resolved_and_outdated_by_the_real_diff() {
    let fixture = fixture();
    let person = fixture.sim.user("octocat");
    fixture
        .repo
        .add_collaborator("review-bot", "write")
        .unwrap();
    // Two threads on the head: line 6 (`22`) and line 18 (`55`); a reply by a person on the first.
    let first = fixture
        .pull
        .review_comment("review-bot", "src/lib.rs", 6, "why 22?")
        .unwrap();
    let second = fixture
        .pull
        .review_comment("review-bot", "src/lib.rs", 18, "why 55?")
        .unwrap();
    fixture.pull.reply("octocat", first, "because").unwrap();

    let (status, headers, answer) =
        graphql(&fixture.sim, &fixture.bot.token, THREADS, &variables(1)).await;
    assert_eq!(status, 200, "{answer}");
    assert!(answer.get("errors").is_none(), "{answer}");
    assert_eq!(headers["x-ratelimit-resource"], "graphql");
    conforms(THREADS, &variables(1), &answer);
    let threads = &answer["data"]["repository"]["pullRequest"]["reviewThreads"];
    assert_eq!(threads["totalCount"], 2);
    let nodes = threads["nodes"].as_array().unwrap();
    assert_eq!(nodes[0]["comments"]["nodes"][0]["databaseId"], first);
    assert_eq!(
        nodes[0]["comments"]["nodes"][1]["author"]["login"],
        "octocat"
    );
    assert_eq!(nodes[0]["isOutdated"], false);
    assert_eq!(nodes[0]["line"], 6);
    // 1 + 100 requests, / 100, rounded: 1 point.
    assert_eq!(answer["data"]["rateLimit"]["cost"], 1);

    // A commit that changes line 18 and adds two lines above line 6.
    let changed = LIB_AFTER
        .replacen("fn one() -> u32 {", "// one\n// more\nfn one() -> u32 {", 1)
        .replace("    55\n", "    5\n");
    fixture
        .pull
        .new_commit()
        .unwrap()
        .modify("src/lib.rs", &changed)
        .commit()
        .unwrap();
    let (_, _, answer) = graphql(&fixture.sim, &fixture.bot.token, THREADS, &variables(1)).await;
    conforms(THREADS, &variables(1), &answer);
    let nodes = answer["data"]["repository"]["pullRequest"]["reviewThreads"]["nodes"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(nodes[0]["isOutdated"], false, "line 6 moved, unchanged");
    assert_eq!(nodes[0]["line"], 8);
    assert_eq!(nodes[0]["originalLine"], 6);
    assert_eq!(nodes[1]["isOutdated"], true, "line 18 changed");
    assert_eq!(nodes[1]["line"], Value::Null);

    // The bot resolves the outdated thread.
    let thread = nodes[1]["id"].as_str().unwrap().to_owned();
    let resolve = json!({"threadId": thread});
    let (status, _, answer) = graphql(&fixture.sim, &fixture.bot.token, RESOLVE, &resolve).await;
    assert_eq!(status, 200);
    conforms(RESOLVE, &resolve, &answer);
    assert_eq!(
        answer["data"]["resolveReviewThread"]["thread"]["isResolved"],
        true
    );
    assert_eq!(
        answer["data"]["resolveReviewThread"]["clientMutationId"],
        "m1"
    );
    assert_eq!(fixture.pull.resolved_threads().unwrap(), [second]);

    // A person without write access who is not the author may not.
    let stranger = fixture.sim.user("stranger");
    let (status, _, answer) = graphql(
        &fixture.sim,
        &stranger.token,
        RESOLVE,
        &json!({"threadId": nodes[0]["id"]}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(answer["errors"][0]["type"], "FORBIDDEN", "{answer}");
    assert_eq!(answer["data"]["resolveReviewThread"], Value::Null);
    assert_eq!(fixture.pull.resolved_threads().unwrap(), [second]);
    let _ = person;
}

#[tokio::test]
async fn an_unknown_thread_or_field_is_an_error_with_http_200() {
    let fixture = fixture();
    let unknown = json!({"threadId": "PRRT_doesnotexist"});
    let (status, _, answer) = graphql(&fixture.sim, &fixture.bot.token, RESOLVE, &unknown).await;
    assert_eq!(status, 200);
    assert_eq!(answer["errors"][0]["type"], "NOT_FOUND", "{answer}");
    assert_eq!(
        answer["errors"][0]["message"],
        "Could not resolve to a node with the global id of 'PRRT_doesnotexist'."
    );
    assert_eq!(answer["data"]["resolveReviewThread"], Value::Null);
    conforms(RESOLVE, &unknown, &answer);

    let (status, _, answer) = graphql(
        &fixture.sim,
        &fixture.bot.token,
        "{ repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: 1) { resolvedBy } } }",
        &json!({}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        answer["errors"][0]["extensions"]["code"], "undefinedField",
        "{answer}"
    );
    assert!(answer.get("data").is_none());

    let (_, _, answer) = graphql(
        &fixture.sim,
        &fixture.bot.token,
        "{ repository(owner: \"acme\", name: \"widgets\") { pullRequest(number: 1) { reviewThreads { totalCount } } } }",
        &json!({}),
    )
    .await;
    assert_eq!(
        answer["errors"][0]["type"], "MISSING_PAGINATION_BOUNDARIES",
        "{answer}"
    );

    let (status, _, _) = send(
        &fixture.sim,
        "",
        Method::POST,
        "/graphql",
        &json!({"query": "{ rateLimit { cost } }"}),
    )
    .await;
    assert_eq!(status, 401);

    let (_, _, answer) = graphql(
        &fixture.sim,
        &fixture.bot.token,
        &"{ a ".repeat(50_000),
        &json!({}),
    )
    .await;
    assert!(answer["errors"][0]["message"].is_string(), "{answer}");
}
