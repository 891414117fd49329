//! Credentials: a GitHub App (JWT → installation token per repository,
//! refreshed before expiry and after a 401), and errors that say what to
//! check without ever showing a token.

use std::time::Duration;

use review_github::{
    ClientSettings, CredentialKind, Credentials, GitHubClient, GitHubError, SearchScope, WaitReason,
};
use review_testkit::github::{Fault, FaultRule, GithubSim, RepositorySelection, SimOptions};
use secrecy::SecretString;

use crate::support::{
    app_client, app_credentials, assert_conformant, fixture, installed_app, settings, token_client,
};

fn count(sim: &GithubSim, operation: &str, status: u16) -> usize {
    sim.requests_for(operation)
        .iter()
        .filter(|record| record.status == status)
        .count()
}

#[tokio::test]
async fn an_app_finds_the_repository_installation_once_and_mints_one_token() {
    let fixture = fixture();
    let app = installed_app(&fixture);
    let client = app_client(&fixture.sim, &app);

    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    client.list_labels(&fixture.repository, 1).await.unwrap();
    client
        .create_issue_comment(&fixture.repository, 1, "Hello from the App.", None)
        .await
        .unwrap();

    assert_eq!(pull_request.number, 1);
    assert_eq!(count(&fixture.sim, "apps/get-repo-installation", 200), 1);
    assert_eq!(
        count(&fixture.sim, "apps/create-installation-access-token", 201),
        1
    );
    let comment = &fixture.pull.issue_comments().unwrap()[0];
    assert_eq!(comment.user, "review-bot[bot]");
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn an_app_token_refused_with_401_is_minted_again_once() {
    let fixture = fixture();
    let app = installed_app(&fixture);
    let client = app_client(&fixture.sim, &app);
    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    fixture.sim.expire_installation_tokens();
    let labels = client.list_labels(&fixture.repository, 1).await.unwrap();

    assert_eq!(labels, vec!["bot-review-needed"]);
    let statuses: Vec<u16> = fixture
        .sim
        .requests_for("issues/list-labels-on-issue")
        .iter()
        .map(|record| record.status)
        .collect();
    assert_eq!(statuses, vec![401, 200]);
    assert_eq!(
        count(&fixture.sim, "apps/create-installation-access-token", 201),
        2
    );
}

#[tokio::test]
async fn an_app_token_close_to_expiry_is_refreshed_before_use() {
    let sim = GithubSim::start_with(SimOptions {
        installation_token_lifetime: Duration::from_secs(20),
        ..SimOptions::default()
    })
    .unwrap();
    sim.repo("acme/widgets")
        .file("README.md", "# widgets\n")
        .create()
        .unwrap()
        .pull_request("feature")
        .add("src/new.rs", "pub fn new() {}\n")
        .open()
        .unwrap();
    let app = sim.create_app("review-bot").unwrap();
    sim.install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let client = app_client(&sim, &app);
    let repository = review_github::RepositoryName::parse("acme/widgets").unwrap();

    client.get_pull_request(&repository, 1).await.unwrap();
    client.get_pull_request(&repository, 1).await.unwrap();

    // A 20-second token is inside octocrab's 30-second refresh margin: each
    // call mints a fresh one instead of sending one about to expire.
    assert_eq!(count(&sim, "apps/create-installation-access-token", 201), 2);
    assert_eq!(count(&sim, "pulls/get", 401), 0);
}

#[tokio::test]
async fn an_app_polls_an_organisation_through_its_installation() {
    let fixture = fixture();
    let app = installed_app(&fixture);
    let client = app_client(&fixture.sim, &app);

    let results = client
        .search_pull_requests(
            &SearchScope::Organization("acme".into()),
            "bot-review-needed",
        )
        .await
        .unwrap();
    let installations = client.list_app_installations().await.unwrap();
    let repositories = client
        .list_installation_repositories(installations[0].id)
        .await
        .unwrap();

    assert_eq!(results.hits.len(), 1);
    assert_eq!(installations.len(), 1);
    assert_eq!(installations[0].account_login.as_deref(), Some("acme"));
    assert_eq!(repositories, vec![fixture.repository.clone()]);
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn an_app_not_installed_on_the_repository_says_so() {
    let fixture = fixture();
    let app = fixture.sim.create_app("review-bot").unwrap();
    let client = app_client(&fixture.sim, &app);

    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(error, GitHubError::NoInstallation { .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("acme/widgets"), "{error}");
    assert!(error.to_string().contains("404 Not Found"), "{error}");
}

#[tokio::test]
async fn a_wrong_app_key_says_to_check_the_app_id_and_key() {
    let fixture = fixture();
    let app = installed_app(&fixture);
    let impostor = fixture.sim.create_app("impostor").unwrap();
    let client = GitHubClient::new(settings(
        &fixture.sim,
        app_credentials(&app, &impostor.private_key_pem),
    ))
    .unwrap();

    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(
            error,
            GitHubError::Unauthorized {
                credential: CredentialKind::AppJsonWebToken,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(
        message.contains("REVIEW_BOT_GITHUB_APP_ID") && message.contains("private key"),
        "{message}"
    );
    for shown in [format!("{error:?}"), message, format!("{client:?}")] {
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
        assert!(
            !shown.contains(&impostor.private_key_pem[40..80]),
            "{shown}"
        );
    }
}

#[tokio::test]
async fn a_malformed_private_key_is_refused_before_any_request() {
    let sim = GithubSim::start().unwrap();
    let error = GitHubClient::new(ClientSettings::new(
        sim.api_url(),
        Credentials::App {
            app_id: 1,
            private_key_pem: SecretString::from("not a key".to_owned()),
            installation_id: None,
        },
    ))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("REVIEW_BOT_GITHUB_APP_PRIVATE_KEY_FILE"),
        "{error}"
    );
    assert!(!error.to_string().contains("not a key"));
}

#[tokio::test]
async fn a_wrong_token_says_what_to_check_and_never_shows_the_token() {
    let fixture = fixture();
    let wrong_token = "ghp_ThisTokenIsNotKnownToTheSimulator0001";
    let client = token_client(&fixture.sim, wrong_token);

    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(
            error,
            GitHubError::Unauthorized {
                credential: CredentialKind::PersonalAccessToken,
                ..
            }
        ),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("401 Bad credentials"), "{message}");
    assert!(
        message.contains("check REVIEW_BOT_GITHUB_TOKEN"),
        "{message}"
    );
    assert_eq!(
        fixture.sim.requests_for("pulls/get").len(),
        1,
        "a 401 is not retried"
    );
    for shown in [message, format!("{error:?}"), format!("{client:?}")] {
        assert!(!shown.contains(wrong_token), "the token leaked: {shown}");
    }
}

#[tokio::test]
async fn the_client_debug_output_never_shows_a_good_token() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    let shown = format!("{client:?} {:?}", client.rate_limit_state());
    assert!(shown.contains("GitHubClient"));
    assert!(!shown.contains(&fixture.bot.token), "{shown}");
}

fn statuses(sim: &GithubSim, operation: &str) -> Vec<u16> {
    sim.requests_for(operation)
        .iter()
        .map(|record| record.status)
        .collect()
}

#[tokio::test]
async fn an_app_reinstalled_under_a_new_id_is_found_again_without_a_restart() {
    let fixture = fixture();
    let app = fixture.sim.create_app("review-bot").unwrap();
    let first = fixture
        .sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let client = app_client(&fixture.sim, &app);
    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    fixture.sim.uninstall_app(first).unwrap();
    let second = fixture
        .sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(pull_request.number, 1);
    assert_ne!(first, second);
    // The old token is refused, re-minting it finds no installation, the
    // repository's installation is looked up again and a token minted for it.
    assert_eq!(statuses(&fixture.sim, "pulls/get"), vec![200, 401, 200]);
    assert_eq!(
        statuses(&fixture.sim, "apps/create-installation-access-token"),
        vec![201, 404, 201]
    );
    assert_eq!(
        statuses(&fixture.sim, "apps/get-repo-installation"),
        vec![200, 200]
    );
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn a_suspended_app_says_so_in_githubs_words_and_works_again_when_unsuspended() {
    let fixture = fixture();
    let app = fixture.sim.create_app("review-bot").unwrap();
    let installation = fixture
        .sim
        .install_app(&app, "acme", RepositorySelection::All)
        .unwrap();
    let client = app_client(&fixture.sim, &app);
    client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    fixture
        .sim
        .suspend_installation(installation, true)
        .unwrap();
    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();
    assert!(
        matches!(error, GitHubError::NoInstallation { .. }),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("403 This installation has been suspended"),
        "{error}"
    );

    fixture
        .sim
        .suspend_installation(installation, false)
        .unwrap();
    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();
    assert_eq!(pull_request.number, 1);
}

#[tokio::test]
async fn a_rate_limited_token_request_waits_for_retry_after_and_is_not_app_not_installed() {
    let fixture = fixture();
    let app = installed_app(&fixture);
    let client = app_client(&fixture.sim, &app);
    fixture.sim.inject(FaultRule::operation(
        "apps/create-installation-access-token",
        Fault::SecondaryRateLimit { retry_after: 1 },
    ));

    let pull_request = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap();

    assert_eq!(pull_request.number, 1);
    assert_eq!(
        statuses(&fixture.sim, "apps/create-installation-access-token"),
        vec![403, 201]
    );
    let waits = client.recent_waits();
    assert_eq!(waits.len(), 1, "{waits:?}");
    assert_eq!(waits[0].reason, WaitReason::RetryAfter);
    assert_eq!(waits[0].duration, Duration::from_secs(1));
}

#[tokio::test]
async fn a_token_request_limited_for_longer_than_we_wait_keeps_githubs_retry_after() {
    let fixture = fixture();
    let app = installed_app(&fixture);
    let client = app_client(&fixture.sim, &app);
    fixture.sim.inject(FaultRule::operation(
        "apps/create-installation-access-token",
        Fault::TooManyRequests { retry_after: 3_600 },
    ));

    let error = client
        .get_pull_request(&fixture.repository, 1)
        .await
        .unwrap_err();

    assert!(
        matches!(
            error,
            GitHubError::SecondaryRateLimit {
                retry_after: Some(wait),
                ..
            } if wait == Duration::from_hours(1)
        ),
        "{error:?}"
    );
    assert!(fixture.sim.requests_for("pulls/get").is_empty());
}
