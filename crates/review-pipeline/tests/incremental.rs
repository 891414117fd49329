//! The range of an incremental re-review (`review::incremental::decide`, issue
//! 28 item 2) read from a real mirror the checkout fetched from the GitHub
//! simulator: a later head, a force-push, a commit the mirror never saw, the
//! same head, and a merge of the base branch whose files are not the pull
//! request's.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use review_pipeline::review::incremental::{Range, Scope, decide};
use review_pipeline::{CheckoutRequest, CheckoutSettings, Checkouts, GitCredential};
use review_testkit::github::{GithubSim, PullRequestHandle, RepoHandle};
use secrecy::SecretString;

/// Plain git in `dir` (the test's own commands, not the bot's), stdout trimmed.
fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

struct Setup {
    _sim: GithubSim,
    repo: RepoHandle,
    pull: PullRequestHandle,
    _work: tempfile::TempDir,
    checkouts: Checkouts,
    credential: GitCredential,
}

impl Setup {
    fn new() -> Self {
        let sim = GithubSim::start().expect("simulator starts");
        let token = sim.user("review-bot").token;
        let repo = sim
            .repo("acme/widgets")
            .file("src/lib.rs", "pub fn widget() -> u8 { 1 }\n")
            .file("README.md", "# widgets\n")
            .create()
            .unwrap();
        repo.add_collaborator("review-bot", "write").unwrap();
        let pull = repo
            .pull_request("feature")
            .modify("src/lib.rs", "pub fn widget() -> u8 { 2 }\n")
            .open()
            .unwrap();
        let work = tempfile::tempdir().unwrap();
        let checkouts = Checkouts::new(CheckoutSettings::new(work.path())).unwrap();
        Self {
            _sim: sim,
            repo,
            pull,
            _work: work,
            checkouts,
            credential: GitCredential::new(SecretString::from(token)),
        }
    }

    /// Checks the pull request's current head out (fetching it into the
    /// mirror, as a review does) and decides the scope after `earlier`.
    async fn decide_after(&self, earlier: &str) -> (Scope, std::path::PathBuf) {
        let head = self.pull.head_sha().unwrap();
        let worktree = self
            .checkouts
            .checkout(&CheckoutRequest {
                repository: self.repo.full_name(),
                clone_url: self.repo.clone_url(),
                number: self.pull.number(),
                base_ref: "main".to_owned(),
                head_sha: head.clone(),
                credential: Some(self.credential.clone()),
            })
            .await
            .unwrap();
        let mirror = worktree.mirror().to_owned();
        let files = BTreeSet::from(["src/lib.rs"]);
        let scope = decide(self.checkouts.git(), &mirror, earlier, &head, &files)
            .await
            .unwrap();
        worktree.remove().await.unwrap();
        (scope, mirror)
    }
}

#[tokio::test]
async fn a_later_head_gives_the_range_and_a_force_push_a_full_review() {
    let setup = Setup::new();
    let first = setup.pull.head_sha().unwrap();
    let (scope, _) = setup.decide_after(&first).await;
    assert_eq!(scope, Scope::Full, "the same head: nothing to compare");

    setup
        .pull
        .new_commit()
        .unwrap()
        .modify("src/lib.rs", "pub fn widget() -> u8 { 3 }\n")
        .commit()
        .unwrap();
    let second = setup
        .pull
        .new_commit()
        .unwrap()
        .add("notes.txt", "not in the pull request's files list\n")
        .commit()
        .unwrap();
    let (scope, _) = setup.decide_after(&first).await;
    assert_eq!(
        scope,
        Scope::Since(Range {
            earlier: first.clone(),
            head: second.clone(),
            commits: 2,
            files: vec!["src/lib.rs".to_owned()],
            other_files: 1,
        })
    );

    // Squashed onto the base: the second head is still in the mirror (fetched
    // before), but no longer an ancestor.
    let base = setup.pull.base_sha().unwrap();
    setup
        .pull
        .new_commit()
        .unwrap()
        .force_from(&base)
        .modify("src/lib.rs", "pub fn widget() -> u8 { 3 }\n")
        .commit()
        .unwrap();
    let (scope, mirror) = setup.decide_after(&second).await;
    git(
        &mirror,
        &["cat-file", "-e", &format!("{second}^{{commit}}")],
    );
    assert_eq!(scope, Scope::Rewritten { earlier: second });

    // A commit the mirror never had (another fork's, or garbage-collected).
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    let (scope, _) = setup.decide_after(unknown).await;
    assert_eq!(
        scope,
        Scope::Rewritten {
            earlier: unknown.to_owned()
        }
    );
    // Not a SHA at all: never handed to git.
    let (scope, _) = setup.decide_after("--output=/tmp/x").await;
    assert_eq!(scope, Scope::Full);
}

#[tokio::test]
async fn files_a_merge_of_the_base_brought_are_not_the_pull_requests() {
    let setup = Setup::new();
    let first = setup.pull.head_sha().unwrap();
    // The base moves on; the head merges it (a real merge commit, made in
    // the mirror the way a push of it would land there).
    setup
        .repo
        .branch("main")
        .modify("README.md", "# widgets\n\nNow documented.\n")
        .commit()
        .unwrap();
    let (_, mirror) = setup.decide_after(&first).await;
    let base = setup.pull.base_sha().unwrap();
    let tree = git(&mirror, &["merge-tree", "--write-tree", &first, &base]);
    let merge = git(
        &mirror,
        &[
            "commit-tree",
            &tree,
            "-p",
            &first,
            "-p",
            &base,
            "-m",
            "Merge main",
        ],
    );
    let files = BTreeSet::from(["src/lib.rs"]);
    let scope = decide(setup.checkouts.git(), &mirror, &first, &merge, &files)
        .await
        .unwrap();
    assert_eq!(
        scope,
        Scope::Since(Range {
            earlier: first,
            head: merge,
            commits: 2,
            files: Vec::new(),
            other_files: 1,
        })
    );
}
