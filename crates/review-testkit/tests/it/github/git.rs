//! Real `git clone` and `git push` over the simulator's smart HTTP.

use std::process::Command;

use review_testkit::github::GithubSim;

fn git(dir: &std::path::Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
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

#[test]
fn clone_then_push_moves_the_pull_request_head() {
    let fixture = super::fixture();
    let work = tempfile::tempdir().unwrap();
    let url = fixture.repo.clone_url();
    git(work.path(), &["clone", "--quiet", &url, "checkout"]);
    let checkout = work.path().join("checkout");
    git(&checkout, &["checkout", "--quiet", "feature"]);
    assert_eq!(
        git(&checkout, &["rev-parse", "HEAD"]),
        fixture.pull.head_sha().unwrap()
    );
    std::fs::write(checkout.join("src/new.rs"), "pub fn new() -> u8 { 1 }\n").unwrap();
    git(
        &checkout,
        &[
            "-c",
            "user.name=bot",
            "-c",
            "user.email=bot@example.com",
            "commit",
            "--quiet",
            "-am",
            "fix",
        ],
    );
    let pushed = git(&checkout, &["rev-parse", "HEAD"]);
    let before = fixture.pull.updated_at().unwrap();

    // Without credentials a push is refused.
    let refused = Command::new("git")
        .current_dir(&checkout)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["push", "--quiet", "origin", "feature"])
        .output()
        .unwrap();
    assert!(!refused.status.success());
    assert_eq!(
        fixture.pull.head_sha().unwrap(),
        fixture.repo.branch_sha("feature").unwrap()
    );
    assert_ne!(fixture.pull.head_sha().unwrap(), pushed);

    let header = format!(
        "http.extraHeader=Authorization: Bearer {}",
        fixture.bot.token
    );
    git(
        &checkout,
        &["-c", &header, "push", "--quiet", "origin", "feature"],
    );
    assert_eq!(fixture.pull.head_sha().unwrap(), pushed);
    assert!(fixture.pull.updated_at().unwrap() >= before);
    let receive_packs = fixture.sim.requests_for("git/receive-pack");
    assert_eq!(receive_packs.last().unwrap().status, 200);
    assert_eq!(
        receive_packs.last().unwrap().actor.as_deref(),
        Some("review-bot")
    );
}

#[test]
fn a_private_repository_needs_a_token_to_clone() {
    let sim = GithubSim::start().unwrap();
    let user = sim.user("alice");
    let repo = sim
        .repo("acme/secret")
        .private()
        .file("a.txt", "a\n")
        .create()
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    let anonymous = Command::new("git")
        .current_dir(work.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_TERMINAL_PROMPT", "0")
        .args(["clone", "--quiet", &repo.clone_url(), "anonymous"])
        .output()
        .unwrap();
    assert!(!anonymous.status.success());
    let header = format!(
        "http.extraHeader=Authorization: Basic {}",
        base64_of(&format!("x-access-token:{}", user.token))
    );
    git(
        work.path(),
        &[
            "-c",
            &header,
            "clone",
            "--quiet",
            &repo.clone_url(),
            "authenticated",
        ],
    );
    assert_eq!(
        std::fs::read_to_string(work.path().join("authenticated/a.txt")).unwrap(),
        "a\n"
    );
}

#[test]
fn refs_pull_head_follows_the_pull_request_as_on_github() {
    let fixture = super::fixture();
    let url = fixture.repo.clone_url();
    let work = tempfile::tempdir().unwrap();
    let listed = |work: &std::path::Path| {
        git(work, &["ls-remote", &url, "refs/pull/1/head"])
            .split_whitespace()
            .next()
            .map(str::to_owned)
    };
    assert_eq!(listed(work.path()), Some(fixture.pull.head_sha().unwrap()));
    let pushed = fixture
        .pull
        .new_commit()
        .unwrap()
        .add("src/more.rs", "pub fn more() {}\n")
        .commit()
        .unwrap();
    assert_eq!(listed(work.path()), Some(pushed));
}

#[test]
fn a_force_push_rewrites_the_head_branch_and_the_pull_request_follows() {
    let fixture = super::fixture();
    let url = fixture.repo.clone_url();
    let before = fixture.pull.head_sha().unwrap();
    let base = fixture.pull.base_sha().unwrap();
    let rewritten = fixture
        .pull
        .new_commit()
        .unwrap()
        .force_from(&base)
        .add("src/squashed.rs", "pub fn squashed() {}\n")
        .message("Squashed")
        .commit()
        .unwrap();
    assert_eq!(fixture.pull.head_sha().unwrap(), rewritten);
    let work = tempfile::tempdir().unwrap();
    git(
        work.path(),
        &["clone", "--quiet", "--bare", &url, "mirror.git"],
    );
    let mirror = work.path().join("mirror.git");
    assert_eq!(git(&mirror, &["rev-parse", &format!("{rewritten}^")]), base);
    let ancestor = Command::new("git")
        .current_dir(&mirror)
        .args(["merge-base", "--is-ancestor", &before, &rewritten])
        .output()
        .unwrap();
    assert_ne!(
        ancestor.status.code(),
        Some(0),
        "the old head is not in the new history"
    );
    assert_eq!(
        git(work.path(), &["ls-remote", &url, "refs/pull/1/head"])
            .split_whitespace()
            .next(),
        Some(rewritten.as_str())
    );
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
