//! CI state: check runs and statuses together, the combined status, and the
//! head commit's date.

use crate::support::{assert_conformant, fixture, token_client};

#[tokio::test]
async fn check_runs_and_statuses_are_read_together() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();

    let empty = client.ci_report(&fixture.repository, &head).await.unwrap();
    let combined = client
        .get_combined_status(&fixture.repository, &head)
        .await
        .unwrap();
    assert!(empty.check_runs.is_empty() && empty.statuses.is_empty());
    assert_eq!(
        combined.state, "pending",
        "no statuses at all reads as pending"
    );
    assert_eq!(combined.total_count, 0);

    fixture
        .pull
        .add_check_run("build", "completed", Some("success"))
        .unwrap();
    fixture
        .pull
        .add_check_run("lint", "completed", Some("failure"))
        .unwrap();
    fixture.pull.add_status("ci/legacy", "success").unwrap();
    let report = client.ci_report(&fixture.repository, &head).await.unwrap();

    let mut names: Vec<_> = report
        .check_runs
        .iter()
        .map(|run| (run.name.as_str(), run.conclusion.as_deref()))
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        vec![("build", Some("success")), ("lint", Some("failure"))]
    );
    assert_eq!(report.statuses.len(), 1);
    assert_eq!(report.statuses[0].context, "ci/legacy");
    assert_eq!(report.statuses[0].state, "success");
    assert_conformant(&fixture.sim);
}

#[tokio::test]
async fn the_head_commit_has_a_date() {
    let fixture = fixture();
    let client = token_client(&fixture.sim, &fixture.bot.token);
    let head = fixture.pull.head_sha().unwrap();

    let commit = client.get_commit(&fixture.repository, &head).await.unwrap();

    assert_eq!(commit.sha, head);
    let committed_at = commit.committed_at.expect("a committer date");
    assert!(committed_at <= chrono::Utc::now());
}
