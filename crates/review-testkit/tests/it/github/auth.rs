//! Tokens, app JWTs and installation tokens.

use reqwest::Method;
use review_testkit::github::{GithubSim, RepositorySelection};
use serde_json::json;

use super::conformance::app_jwt;
use super::{fixture, get, send};

#[tokio::test]
async fn a_wrong_token_is_401_bad_credentials() {
    let fixture = fixture();
    let (status, _, error) = get(&fixture.sim, "ghp_wrong", "/repos/acme/widgets/pulls/1").await;
    assert_eq!(status, 401);
    assert_eq!(error["message"], "Bad credentials");
    assert_eq!(error["documentation_url"], "https://docs.github.com/rest");
    let record = fixture.sim.requests().pop().unwrap();
    assert_eq!((record.status, record.cost), (401, 0));
}

#[tokio::test]
async fn a_revoked_token_is_401_until_reinstated_with_its_budget() {
    let fixture = fixture();
    let token = &fixture.bot.token;
    let path = "/repos/acme/widgets/pulls/1";
    assert_eq!(get(&fixture.sim, token, path).await.0, 200);
    let spent = fixture.sim.rate_limit(token).unwrap().used;
    fixture.sim.revoke_token(token).unwrap();
    let (status, _, error) = get(&fixture.sim, token, path).await;
    assert_eq!(
        (status, error["message"].as_str()),
        (401, Some("Bad credentials"))
    );
    let record = fixture.sim.requests().pop().unwrap();
    assert_eq!((record.status, record.cost), (401, 0));
    // Revoking twice, or reinstating a token that is not revoked, is a mistake.
    assert!(fixture.sim.revoke_token(token).is_err());
    fixture.sim.reinstate_token(token).unwrap();
    assert!(fixture.sim.reinstate_token(token).is_err());
    assert_eq!(get(&fixture.sim, token, path).await.0, 200);
    assert_eq!(fixture.sim.rate_limit(token).unwrap().used, spent + 1);
}

#[tokio::test]
async fn unknown_repositories_and_pull_requests_are_404() {
    let fixture = fixture();
    for path in [
        "/repos/acme/nothing/pulls/1",
        "/repos/acme/widgets/pulls/9",
        "/repos/acme/widgets/pulls/x",
    ] {
        let (status, _, error) = get(&fixture.sim, &fixture.bot.token, path).await;
        assert_eq!(status, 404, "{path}");
        assert_eq!(error["message"], "Not Found");
    }
}

#[tokio::test]
async fn an_app_mints_installation_tokens_that_expire() {
    let sim = GithubSim::start().unwrap();
    sim.repo("acme/widgets")
        .file("a.txt", "a\n")
        .create()
        .unwrap();
    sim.repo("acme/other")
        .file("a.txt", "a\n")
        .create()
        .unwrap();
    let app = sim.create_app("review-bot").unwrap();
    let installation = sim
        .install_app(
            &app,
            "acme",
            RepositorySelection::Selected(vec!["acme/widgets".to_owned()]),
        )
        .unwrap();
    let jwt = app_jwt(&app);
    let (status, _, found) = get(&sim, &jwt, "/repos/acme/widgets/installation").await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["id"], installation);
    let (status, _, _) = get(&sim, &jwt, "/repos/acme/other/installation").await;
    assert_eq!(status, 404);
    let path = format!("/app/installations/{installation}/access_tokens");
    let (status, _, minted) = send(&sim, &jwt, Method::POST, &path, &json!({})).await;
    assert_eq!(status, 201, "{minted}");
    let token = minted["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("ghs_"));
    let (status, _, repositories) = get(&sim, &token, "/installation/repositories").await;
    assert_eq!(status, 200);
    assert_eq!(repositories["total_count"], 1);
    // The installation sees its repository and not the other one.
    assert_eq!(
        get(&sim, &token, "/repos/acme/widgets/commits/main")
            .await
            .0,
        200
    );
    assert_eq!(
        get(&sim, &token, "/repos/acme/other/commits/main").await.0,
        404
    );
    // Writes are authored by the app's bot account.
    sim.repository("acme/widgets")
        .unwrap()
        .pull_request("feature")
        .modify("a.txt", "b\n")
        .open()
        .unwrap();
    let (status, _, comment) = send(
        &sim,
        &token,
        Method::POST,
        "/repos/acme/widgets/issues/1/comments",
        &json!({"body": "hi"}),
    )
    .await;
    assert_eq!(status, 201);
    assert_eq!(comment["user"]["login"], "review-bot[bot]");
    assert_eq!(comment["user"]["type"], "Bot");

    sim.expire_installation_tokens();
    let (status, _, error) = get(&sim, &token, "/repos/acme/widgets/commits/main").await;
    assert_eq!(
        (status, error["message"].as_str()),
        (401, Some("Bad credentials"))
    );
    let (status, _, fresh) = send(&sim, &jwt, Method::POST, &path, &json!({})).await;
    assert_eq!(status, 201);
    assert_eq!(
        get(
            &sim,
            fresh["token"].as_str().unwrap(),
            "/repos/acme/widgets/commits/main"
        )
        .await
        .0,
        200
    );
}

#[tokio::test]
async fn jwts_are_checked() {
    let sim = GithubSim::start().unwrap();
    let app = sim.create_app("review-bot").unwrap();
    let other = sim.create_app("impostor").unwrap();
    // Signed with another app's key but claiming to be `app`.
    let now = chrono::Utc::now().timestamp();
    let forged = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &json!({"iat": now - 60, "exp": now + 500, "iss": app.id}),
        &jsonwebtoken::EncodingKey::from_rsa_pem(other.private_key_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let (status, _, error) = get(&sim, &forged, "/app/installations").await;
    assert_eq!(status, 401);
    assert_eq!(error["message"], "A JSON web token could not be decoded");
    let too_long = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256),
        &json!({"iat": now, "exp": now + 3600, "iss": app.id.to_string()}),
        &jsonwebtoken::EncodingKey::from_rsa_pem(app.private_key_pem.as_bytes()).unwrap(),
    )
    .unwrap();
    let (status, _, error) = get(&sim, &too_long, "/app/installations").await;
    assert_eq!(status, 401);
    assert_eq!(
        error["message"],
        "'Expiration time' claim ('exp') is too far in the future"
    );
    // A personal token is not a JWT.
    let user = sim.user("alice");
    let (status, _, _) = get(&sim, &user.token, "/app/installations").await;
    assert_eq!(status, 401);
    let (status, _, listed) = get(&sim, &app_jwt(&app), "/app/installations").await;
    assert_eq!(status, 200);
    assert_eq!(listed, json!([]));
}

#[tokio::test]
async fn an_installation_token_can_be_narrowed_to_some_repositories() {
    let sim = GithubSim::start().unwrap();
    sim.repo("acme/widgets")
        .file("a.txt", "a\n")
        .create()
        .unwrap();
    sim.repo("acme/other")
        .file("a.txt", "a\n")
        .create()
        .unwrap();
    let app = sim.create_app("review-bot").unwrap();
    let installation = sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let jwt = app_jwt(&app);
    let path = format!("/app/installations/{installation}/access_tokens");
    let (status, _, minted) = send(
        &sim,
        &jwt,
        Method::POST,
        &path,
        &json!({"repositories": ["widgets"]}),
    )
    .await;
    assert_eq!(status, 201, "{minted}");
    assert_eq!(minted["repository_selection"], "selected");
    assert_eq!(minted["repositories"][0]["full_name"], "acme/widgets");
    let token = minted["token"].as_str().unwrap();
    assert_eq!(
        get(&sim, token, "/repos/acme/widgets/commits/main").await.0,
        200
    );
    assert_eq!(
        get(&sim, token, "/repos/acme/other/commits/main").await.0,
        404
    );
    let (_, _, listed) = get(&sim, token, "/installation/repositories").await;
    assert_eq!(listed["total_count"], 1);
    let (status, _, error) = send(
        &sim,
        &jwt,
        Method::POST,
        &path,
        &json!({"repositories": ["missing"]}),
    )
    .await;
    assert_eq!(status, 422, "{error}");
}
