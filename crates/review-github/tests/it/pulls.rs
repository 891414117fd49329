//! Reading a pull request's diff when GitHub refuses the whole diff.

use review_github::{ChangeKind, PullRequestDiff, RepositoryName};
use review_testkit::github::{GithubSim, SimOptions};

use crate::support::{assert_conformant, statuses_and_costs, token_client};

#[tokio::test]
async fn a_diff_too_large_for_github_falls_back_to_the_per_file_patches() {
    let sim = GithubSim::start_with(SimOptions {
        diff_max_files: 2,
        ..SimOptions::default()
    })
    .unwrap();
    let bot = sim.user("review-bot");
    sim.repo("acme/widgets")
        .file("README.md", "# widgets\n")
        .file("logo.png", "old")
        .create()
        .unwrap()
        .pull_request("feature")
        .modify("README.md", "# widgets\n\nNow documented.\n")
        .add("src/a.rs", "pub fn a() {}\n")
        .binary("logo.png", &[0, 159, 146, 150, 0, 1])
        .open()
        .unwrap();
    let client = token_client(&sim, &bot.token);
    let repository = RepositoryName::parse("acme/widgets").unwrap();

    let diff = client.get_pull_request_diff(&repository, 1).await.unwrap();

    let PullRequestDiff::PerFile(files) = diff else {
        panic!("expected the per-file fallback, got {diff:?}");
    };
    assert!(!files.truncated);
    let readme = files
        .files
        .iter()
        .find(|file| file.path == "README.md")
        .unwrap();
    assert_eq!(readme.change, ChangeKind::Modified);
    assert!(
        readme
            .patch
            .as_deref()
            .unwrap()
            .contains("+Now documented.")
    );
    let logo = files
        .files
        .iter()
        .find(|file| file.path == "logo.png")
        .unwrap();
    assert_eq!(logo.patch, None, "binary files have no patch");
    assert_eq!(statuses_and_costs(&sim, "pulls/get"), vec![(406, 1)]);
    assert_eq!(sim.requests_for("pulls/list-files").len(), 1);
    assert_conformant(&sim);
}
