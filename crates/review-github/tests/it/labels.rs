//! Labels: add (creating missing ones), set, remove, and removing an absent
//! label is a no-op.

use crate::support::{assert_conformant, fixture, token_client};

#[tokio::test]
async fn labels_are_added_set_and_removed() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let repository = &fixture.repository;

    let added = client
        .add_labels(repository, 1, &["bot-changes-needed".to_owned()])
        .await
        .unwrap();
    assert_eq!(added, vec!["bot-review-needed", "bot-changes-needed"]);

    let set = client
        .set_labels(
            repository,
            1,
            &["bot-ci-pending".to_owned(), "keep".to_owned()],
        )
        .await
        .unwrap();
    assert_eq!(set, vec!["bot-ci-pending", "keep"]);

    assert!(client.remove_label(repository, 1, "keep").await.unwrap());
    assert!(
        !client.remove_label(repository, 1, "keep").await.unwrap(),
        "removing an absent label is a no-op"
    );
    assert_eq!(
        client.list_labels(repository, 1).await.unwrap(),
        vec!["bot-ci-pending"]
    );
    assert_eq!(fixture.pull.labels().unwrap(), vec!["bot-ci-pending"]);

    client.set_labels(repository, 1, &[]).await.unwrap();
    assert!(fixture.pull.labels().unwrap().is_empty());
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn label_names_with_spaces_and_slashes_are_encoded() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let name = "needs review/now".to_owned();
    client
        .add_labels(&fixture.repository, 1, std::slice::from_ref(&name))
        .await
        .unwrap();
    assert!(
        client
            .remove_label(&fixture.repository, 1, &name)
            .await
            .unwrap()
    );
    assert_eq!(fixture.pull.labels().unwrap(), vec!["bot-review-needed"]);
}

#[tokio::test]
async fn writes_are_spaced_and_reads_are_not() {
    let fixture = fixture();
    let mut settings = crate::support::settings(
        &fixture.sim,
        review_github::Credentials::PersonalAccessToken(secrecy::SecretString::from(
            fixture.bot.token.clone(),
        )),
    );
    // Long enough that the read between the two writes can never use it all
    // up, even on a loaded machine: the second write always has to wait.
    settings.write_spacing = std::time::Duration::from_secs(2);
    let client = review_github::GitHubClient::new(settings).unwrap();
    let repository = &fixture.repository;

    client.list_labels(repository, 1).await.unwrap();
    client
        .add_labels(repository, 1, &["a".to_owned()])
        .await
        .unwrap();
    client.list_labels(repository, 1).await.unwrap();
    client
        .add_labels(repository, 1, &["b".to_owned()])
        .await
        .unwrap();

    let waits = client.recent_waits();
    assert_eq!(waits.len(), 1, "only the second write waited: {waits:?}");
    assert_eq!(waits[0].reason, review_github::WaitReason::WriteSpacing);
    assert_eq!(
        waits[0].route,
        "/repos/{owner}/{repo}/issues/{issue_number}/labels"
    );
    assert!(waits[0].duration <= std::time::Duration::from_secs(2));
}

#[tokio::test]
async fn labels_named_dot_and_dot_dot_are_labels_not_path_segments() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);

    for name in [".", ".."] {
        let removed = client
            .remove_label(&fixture.repository, 1, name)
            .await
            .unwrap();
        assert!(!removed, "the pull request has no label {name:?}");
    }

    assert_eq!(fixture.pull.labels().unwrap(), vec!["bot-review-needed"]);
    let paths: Vec<String> = fixture
        .sim
        .requests_for("issues/remove-label")
        .iter()
        .map(|record| record.path.clone())
        .collect();
    assert_eq!(
        paths,
        vec![
            "/repos/acme/widgets/issues/1/labels/%2E",
            "/repos/acme/widgets/issues/1/labels/%2E%2E",
        ]
    );
    assert!(
        fixture
            .sim
            .requests_for("issues/remove-all-labels")
            .is_empty()
    );
}
