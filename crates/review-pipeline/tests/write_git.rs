//! The write flow's git (`write::gitops`) against the GitHub simulator: real
//! git, real pushes over smart HTTP with token auth.

use review_pipeline::write::gitops::{PushOutcome, WriteGit};
use review_pipeline::{CheckoutRequest, CheckoutSettings, Checkouts, GitCredential};
use review_testkit::github::GithubSim;
use secrecy::SecretString;

/// A private repository with a pull request, checked out.
struct Setup {
    sim: GithubSim,
    repo: review_testkit::github::RepoHandle,
    pull: review_testkit::github::PullRequestHandle,
    work: tempfile::TempDir,
    checkouts: Checkouts,
    credential: GitCredential,
    head: String,
    worktree: review_pipeline::Worktree,
}

async fn setup() -> Setup {
    let sim = GithubSim::start().expect("simulator starts");
    let token = sim.user("review-bot").token;
    let repo = sim
        .repo("acme/widgets")
        .private()
        .file("src/lib.rs", "pub fn widget() -> u8 { 1 }\n")
        .file(".gitignore", "target/\n")
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
    let credential = GitCredential::new(SecretString::from(token));
    let head = pull.head_sha().unwrap();
    let worktree = checkouts
        .checkout(&CheckoutRequest {
            repository: repo.full_name(),
            clone_url: repo.clone_url(),
            number: pull.number(),
            base_ref: "main".to_owned(),
            head_sha: head.clone(),
            credential: Some(credential.clone()),
        })
        .await
        .unwrap();

    Setup {
        sim,
        repo,
        pull,
        work,
        checkouts,
        credential,
        head,
        worktree,
    }
}

#[tokio::test]
#[allow(clippy::too_many_lines)] // one story: a snapshot, its commit, four pushes
async fn the_snapshot_takes_only_changed_paths_and_the_push_never_overwrites_a_moved_branch() {
    let Setup {
        sim: _sim,
        repo,
        pull,
        work,
        checkouts,
        credential,
        head,
        worktree,
    } = setup().await;
    // An edit, a deletion, a new file, an ignored build output.
    let root = worktree.path();
    std::fs::write(root.join("src/lib.rs"), "pub fn widget() -> u8 { 3 }\n").unwrap();
    std::fs::remove_file(root.join("README.md")).unwrap();
    std::fs::write(root.join("src/new.rs"), "pub fn new() {}\n").unwrap();
    std::fs::create_dir_all(root.join("target")).unwrap();
    std::fs::write(root.join("target/out.bin"), "built").unwrap();

    let index = work.path().join("index");
    let git = WriteGit::new(
        &checkouts,
        worktree.mirror(),
        root,
        &index,
        ("Review Bot", "bot@example.com"),
    );
    let (tree, paths) = git.snapshot(&head).await.unwrap();
    assert_eq!(paths, ["README.md", "src/lib.rs", "src/new.rs"]);
    // Written after the snapshot: not in the tree.
    std::fs::write(root.join("src/late.rs"), "// after the snapshot\n").unwrap();
    let message = work.path().join("message");
    std::fs::write(&message, "Fix\n").unwrap();
    let commit = git.commit(&tree, &[&head], &message).await.unwrap();

    // Pushed on the head it was made on: a fast-forward.
    let landed = git
        .push(
            &repo.clone_url(),
            "feature",
            &head,
            &commit,
            Some(&credential),
        )
        .await
        .unwrap();
    assert_eq!(landed, PushOutcome::Pushed);
    assert_eq!(pull.head_sha().unwrap(), commit);

    // A second commit on the old head: the branch moved (to the first), so
    // the push is refused and the branch keeps what it has.
    std::fs::write(&message, "Fix again\n").unwrap();
    let second = git.commit(&tree, &[&head], &message).await.unwrap();
    let refused = git
        .push(
            &repo.clone_url(),
            "feature",
            &head,
            &second,
            Some(&credential),
        )
        .await
        .unwrap();
    assert!(
        matches!(refused, PushOutcome::HeadMoved { .. }),
        "{refused:?}"
    );
    assert_eq!(pull.head_sha().unwrap(), commit);

    // Told the branch is at the first commit, the second (not a descendant)
    // is still refused, before anything is sent: never a forced update.
    let error = git
        .push(
            &repo.clone_url(),
            "feature",
            &commit,
            &second,
            Some(&credential),
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("does not descend"), "{error}");
    assert_eq!(pull.head_sha().unwrap(), commit);

    // Someone else pushes on top: the bot's stale expectation is refused.
    let theirs = pull
        .new_commit()
        .unwrap()
        .modify("README.md", "# theirs\n")
        .commit()
        .unwrap();
    std::fs::write(&message, "Fix a third time\n").unwrap();
    let third = git.commit(&tree, &[&commit], &message).await.unwrap();
    let refused = git
        .push(
            &repo.clone_url(),
            "feature",
            &commit,
            &third,
            Some(&credential),
        )
        .await
        .unwrap();
    assert!(
        matches!(refused, PushOutcome::HeadMoved { .. }),
        "{refused:?}"
    );
    assert_eq!(pull.head_sha().unwrap(), theirs);

    let on_theirs = commit;
    let files = std::process::Command::new("git")
        .arg(format!("--git-dir={}", repo.git_dir().display()))
        .args(["ls-tree", "-r", "--name-only", &on_theirs])
        .output()
        .unwrap();
    let files = String::from_utf8_lossy(&files.stdout);
    assert!(!files.contains("target/"), "{files}");
    worktree.remove().await.unwrap();
}
