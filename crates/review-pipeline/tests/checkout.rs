//! The checkout against the GitHub simulator: real git over smart HTTP with token auth.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use review_pipeline::{
    CheckoutError, CheckoutRequest, CheckoutSettings, Checkouts, GitCredential, Worktree,
};
use review_testkit::github::{Fault, FaultRule, GithubSim, PullRequestHandle, RepoHandle};
use secrecy::SecretString;

const TOKEN_BOT: &str = "review-bot";

struct Fixture {
    sim: GithubSim,
    repo: RepoHandle,
    pull: PullRequestHandle,
    token: String,
    work: tempfile::TempDir,
    checkouts: Checkouts,
}

/// A private repository (so fetching needs the token) with one pull request.
fn fixture() -> Fixture {
    let sim = GithubSim::start().expect("simulator starts");
    let token = sim.user(TOKEN_BOT).token;
    let repo = sim
        .repo("acme/widgets")
        .private()
        .file("src/lib.rs", "pub fn widget() -> u8 { 1 }\n")
        .file("README.md", "# widgets\n")
        .create()
        .expect("repository");
    repo.add_collaborator(TOKEN_BOT, "write")
        .expect("collaborator");
    let pull = repo
        .pull_request("feature")
        .modify("src/lib.rs", "pub fn widget() -> u8 { 2 }\n")
        .add("src/new.rs", "pub fn new() {}\n")
        .title("Improve widgets")
        .open()
        .expect("pull request");
    let work = tempfile::tempdir().expect("work directory");
    let checkouts = Checkouts::new(CheckoutSettings::new(work.path())).expect("checkouts");
    Fixture {
        sim,
        repo,
        pull,
        token,
        work,
        checkouts,
    }
}

impl Fixture {
    fn request(&self) -> CheckoutRequest {
        self.request_with(&self.token)
    }

    fn request_with(&self, token: &str) -> CheckoutRequest {
        CheckoutRequest {
            repository: self.repo.full_name(),
            clone_url: self.repo.clone_url(),
            number: self.pull.number(),
            base_ref: "main".to_owned(),
            head_sha: self.pull.head_sha().expect("head"),
            credential: Some(GitCredential::new(SecretString::from(token.to_owned()))),
        }
    }

    /// The author pushes a commit making `widget()` return `value`; returns its SHA.
    fn push_widget(&self, value: u8) -> String {
        self.pull
            .new_commit()
            .unwrap()
            .modify(
                "src/lib.rs",
                &format!("pub fn widget() -> u8 {{ {value} }}\n"),
            )
            .commit()
            .unwrap()
    }

    /// Checks the pull request's head out with the right token.
    async fn check_out(&self) -> Worktree {
        self.checkouts.checkout(&self.request()).await.unwrap()
    }

    fn mirror(&self) -> PathBuf {
        self.checkouts.mirror_path(&self.repo.full_name()).unwrap()
    }

    /// `git worktree list` of the mirror: the worktrees git still knows.
    fn registered_worktrees(&self) -> Vec<String> {
        let listed = git(&self.mirror(), &["worktree", "list", "--porcelain"]);
        listed
            .lines()
            .filter_map(|line| line.strip_prefix("worktree "))
            .filter(|path| Path::new(path) != self.mirror())
            .map(str::to_owned)
            .collect()
    }
}

/// The test's own git (not the bot's): a plain, isolated invocation.
fn git(dir: &Path, args: &[&str]) -> String {
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

fn read(worktree: &Worktree, path: &str) -> String {
    std::fs::read_to_string(worktree.path().join(path)).expect("file in the worktree")
}

/// Every regular file under `root`, as bytes.
fn all_files(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_owned()];
    while let Some(path) = pending.pop() {
        let metadata = std::fs::symlink_metadata(&path).unwrap();
        if metadata.is_dir() {
            pending.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if metadata.is_file() {
            files.push((path.clone(), std::fs::read(&path).unwrap()));
        }
    }
    files
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|window| window == needle.as_bytes())
}

#[tokio::test]
async fn first_checkout_creates_the_mirror_and_a_worktree_at_the_head() {
    let fixture = fixture();
    assert!(!fixture.mirror().exists());
    let worktree = fixture.check_out().await;
    let head = fixture.pull.head_sha().unwrap();
    assert_eq!(worktree.head_sha(), head);
    assert_eq!(git(worktree.path(), &["rev-parse", "HEAD"]), head);
    assert_eq!(
        read(&worktree, "src/lib.rs"),
        "pub fn widget() -> u8 { 2 }\n"
    );
    assert_eq!(read(&worktree, "src/new.rs"), "pub fn new() {}\n");
    assert!(worktree.path().starts_with(fixture.work.path()));
    // The base branch and the pull request's head are in the mirror, under their own names.
    let mirror = fixture.mirror();
    assert_eq!(
        git(&mirror, &["rev-parse", "refs/heads/main"]),
        fixture.repo.branch_sha("main").unwrap()
    );
    assert_eq!(git(&mirror, &["rev-parse", "refs/pull/1/head"]), head);
    assert_eq!(git(&mirror, &["rev-parse", "--is-bare-repository"]), "true");
    worktree.remove().await.unwrap();
}

#[tokio::test]
async fn second_checkout_fetches_only_what_is_new() {
    let fixture = fixture();
    let first = fixture.check_out().await;
    first.remove().await.unwrap();
    let mirror = fixture.mirror();
    // A mark the bot never writes: the second checkout reuses this mirror, not a new one.
    std::fs::write(mirror.join("description"), "same mirror\n").unwrap();
    let objects_before = git(&mirror, &["count-objects", "-v"]);

    let pushed = fixture.push_widget(3);
    fixture.sim.clear_requests();
    let second = fixture.check_out().await;
    assert_eq!(second.head_sha(), pushed);
    assert_eq!(read(&second, "src/lib.rs"), "pub fn widget() -> u8 { 3 }\n");
    assert_eq!(
        std::fs::read_to_string(mirror.join("description")).unwrap(),
        "same mirror\n"
    );
    assert_ne!(git(&mirror, &["count-objects", "-v"]), objects_before);
    // One fetch: ref discovery plus one pack negotiation, no clone from scratch.
    let packs = fixture.sim.requests_for("git/upload-pack");
    assert!(!packs.is_empty() && packs.iter().all(|record| record.status == 200));
    second.remove().await.unwrap();
}

#[tokio::test]
async fn a_force_pushed_head_is_checked_out() {
    let fixture = fixture();
    let first = fixture.check_out().await;
    let old_head = first.head_sha().to_owned();
    first.remove().await.unwrap();

    // The author rewrites the branch: a new commit on main, not a descendant of the old head.
    let clone = tempfile::tempdir().unwrap();
    let header = format!("http.extraHeader=Authorization: Bearer {}", fixture.token);
    git(
        clone.path(),
        &[
            "-c",
            &header,
            "clone",
            "--quiet",
            &fixture.repo.clone_url(),
            "c",
        ],
    );
    let checkout = clone.path().join("c");
    std::fs::write(checkout.join("src/lib.rs"), "pub fn widget() -> u8 { 9 }\n").unwrap();
    git(
        &checkout,
        &[
            "-c",
            "user.name=author",
            "-c",
            "user.email=author@example.com",
            "commit",
            "--quiet",
            "-am",
            "rewritten",
        ],
    );
    git(
        &checkout,
        &[
            "-c",
            &header,
            "push",
            "--quiet",
            "--force",
            "origin",
            "HEAD:feature",
        ],
    );
    let new_head = fixture.pull.head_sha().unwrap();
    assert_ne!(new_head, old_head);
    assert_eq!(new_head, git(&checkout, &["rev-parse", "HEAD"]));

    let second = fixture.check_out().await;
    assert_eq!(second.head_sha(), new_head);
    assert_eq!(read(&second, "src/lib.rs"), "pub fn widget() -> u8 { 9 }\n");
    assert!(!second.path().join("src/new.rs").exists());
    second.remove().await.unwrap();
}

#[tokio::test]
async fn a_head_that_is_not_on_the_pull_request_is_a_clear_error() {
    let fixture = fixture();
    let mut request = fixture.request();
    request.head_sha = "0123456789abcdef0123456789abcdef01234567".to_owned();
    let error = fixture.checkouts.checkout(&request).await.unwrap_err();
    assert!(
        matches!(error, CheckoutError::HeadMissing { .. }),
        "{error}"
    );
    let message = error.to_string();
    assert!(message.contains("force-push"), "{message}");
    assert!(message.contains("refs/pull/1/head"), "{message}");
    // Nothing left behind by the failed job.
    assert!(fixture.registered_worktrees().is_empty());
    assert_eq!(
        std::fs::read_dir(fixture.work.path().join("worktrees/acme/widgets"))
            .unwrap()
            .count(),
        0
    );
}

#[tokio::test]
async fn two_jobs_of_one_repository_at_once_get_two_worktrees() {
    let fixture = fixture();
    let second_pull = fixture
        .repo
        .pull_request("other")
        .add("other.txt", "other\n")
        .open()
        .unwrap();
    let mut other = fixture.request();
    other.number = second_pull.number();
    other.head_sha = second_pull.head_sha().unwrap();
    let mine = fixture.request();
    let (first, second) = tokio::join!(
        fixture.checkouts.checkout(&mine),
        fixture.checkouts.checkout(&other)
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_ne!(first.path(), second.path());
    assert_eq!(read(&first, "src/new.rs"), "pub fn new() {}\n");
    assert_eq!(read(&second, "other.txt"), "other\n");
    assert!(!first.path().join("other.txt").exists());
    assert_eq!(fixture.registered_worktrees().len(), 2);
    first.remove().await.unwrap();
    assert_eq!(read(&second, "other.txt"), "other\n");
    second.remove().await.unwrap();
    assert!(fixture.registered_worktrees().is_empty());
}

/// A job that fails after its checkout: the guard goes with the error.
async fn job_that_fails(checkouts: &Checkouts, request: &CheckoutRequest) -> Result<(), String> {
    let worktree = checkouts
        .checkout(request)
        .await
        .map_err(|e| e.to_string())?;
    std::fs::write(worktree.path().join("build-output.txt"), "half done").unwrap();
    Err(format!("build failed in {}", worktree.path().display()))
}

#[tokio::test]
async fn the_worktree_is_removed_after_a_job_and_after_an_error() {
    let fixture = fixture();
    let worktree = fixture.check_out().await;
    let path = worktree.path().to_owned();
    assert!(path.is_dir());
    worktree.remove().await.unwrap();
    assert!(!path.exists());
    assert!(!path.with_extension("lock").exists());
    assert!(fixture.registered_worktrees().is_empty());

    let error = job_that_fails(&fixture.checkouts, &fixture.request())
        .await
        .unwrap_err();
    let failed = PathBuf::from(error.strip_prefix("build failed in ").unwrap());
    assert!(!failed.exists(), "{error}");
    assert!(!failed.with_extension("lock").exists());
    // Git forgets it at the next use of the mirror.
    let next = fixture.check_out().await;
    assert_eq!(
        fixture.registered_worktrees(),
        vec![next.path().display().to_string()]
    );
    next.remove().await.unwrap();
}

#[tokio::test]
async fn prune_stale_removes_dead_jobs_worktrees_and_keeps_live_ones() {
    let fixture = fixture();
    let live = fixture.check_out().await;
    // What a job killed with SIGKILL leaves: its worktree, registered in the mirror, and its
    // lock file, no longer held (the kernel dropped the dead process's flock).
    let parent = live.path().parent().unwrap().to_owned();
    let dead = parent.join("pr-1-999999-1-0");
    git(
        &fixture.mirror(),
        &[
            "worktree",
            "add",
            "--quiet",
            "--detach",
            dead.to_str().unwrap(),
            live.head_sha(),
        ],
    );
    std::fs::write(dead.with_extension("lock"), "").unwrap();
    // And one whose process died before it made its lock file.
    let dead_without_lock = parent.join("pr-1-999999-2-0");
    std::fs::create_dir_all(dead_without_lock.join("src")).unwrap();
    assert_eq!(fixture.registered_worktrees().len(), 2);

    let removed = fixture.checkouts.prune_stale().await.unwrap();
    assert_eq!(removed, 2);
    assert!(!dead.exists() && !dead.with_extension("lock").exists());
    assert!(!dead_without_lock.exists());
    assert!(live.path().is_dir());
    assert_eq!(
        fixture.registered_worktrees(),
        vec![live.path().display().to_string()]
    );
    // A second checkouts instance (another process's view) sees the live job's lock too.
    let restarted = Checkouts::new(CheckoutSettings::new(fixture.work.path())).unwrap();
    assert_eq!(restarted.prune_stale().await.unwrap(), 0);
    assert!(live.path().is_dir());
    live.remove().await.unwrap();
}

#[tokio::test]
async fn a_wrong_token_is_a_clear_error_that_does_not_show_it() {
    let fixture = fixture();
    let wrong = "ghp_wrongtoken0000000000000000000000000";
    let error = fixture
        .checkouts
        .checkout(&fixture.request_with(wrong))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, CheckoutError::Git { .. }), "{message}");
    assert!(message.contains("`git fetch"), "{message}");
    assert!(message.contains(&fixture.repo.clone_url()), "{message}");
    assert!(
        message.contains("Authentication failed") || message.contains("401"),
        "{message}"
    );
    assert!(message.contains("check that the GitHub token"), "{message}");
    assert!(!message.contains(wrong), "{message}");
    assert!(!message.contains("Authorization"), "{message}");
    assert!(fixture.registered_worktrees().is_empty());
}

#[tokio::test]
async fn the_token_is_never_written_to_disk() {
    let fixture = fixture();
    let worktree = fixture.check_out().await;
    let basic = {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD
            .encode(format!("x-access-token:{}", fixture.token))
    };
    // Everything under the work directory: mirror (config, FETCH_HEAD, logs), worktree files
    // (including its .git file), git's private home.
    let files = all_files(fixture.work.path());
    assert!(files.iter().any(|(path, _)| path.ends_with("config")));
    assert!(files.iter().any(|(path, _)| path.ends_with("src/new.rs")));
    for (path, bytes) in files {
        assert!(!contains(&bytes, &fixture.token), "{}", path.display());
        assert!(!contains(&bytes, &basic), "{}", path.display());
        assert!(!contains(&bytes, "extraHeader"), "{}", path.display());
    }
    worktree.remove().await.unwrap();
}

#[tokio::test]
async fn hooks_and_config_planted_by_pull_request_code_never_run() {
    let fixture = fixture();
    let worktree = fixture.check_out().await;
    let markers = tempfile::tempdir().unwrap();
    let marker = |name: &str| markers.path().join(name);

    // The "PR" finds the shared mirror from its worktree and plants what would run next time.
    let common = PathBuf::from(git(
        worktree.path(),
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    ));
    assert_eq!(common, fixture.mirror());
    let script = |name: &str| format!("#!/bin/sh\ntouch '{}'\nexit 0\n", marker(name).display());
    let plant = |path: &Path, contents: String| {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    for hook in [
        "post-checkout",
        "reference-transaction",
        "pre-auto-gc",
        "post-index-change",
    ] {
        plant(&common.join("hooks").join(hook), script(hook));
    }
    let elsewhere = markers.path().join("hooks");
    plant(&elsewhere.join("post-checkout"), script("hooks-path"));
    let fsmonitor = markers.path().join("fsmonitor.sh");
    plant(&fsmonitor, script("fsmonitor"));
    let filter = markers.path().join("filter.sh");
    plant(
        &filter,
        format!("#!/bin/sh\ntouch '{}'\ncat\n", marker("filter").display()),
    );
    let config = common.join("config");
    for (key, value) in [
        ("core.hooksPath", elsewhere.display().to_string()),
        ("core.fsmonitor", fsmonitor.display().to_string()),
        ("filter.evil.smudge", filter.display().to_string()),
        ("filter.evil.required", "true".to_owned()),
        (
            "include.path",
            markers.path().join("more").display().to_string(),
        ),
    ] {
        git(
            worktree.path(),
            &["config", "--file", config.to_str().unwrap(), key, &value],
        );
    }
    std::fs::write(common.join("info/attributes"), "* filter=evil\n").unwrap();
    // The planted config works for git that trusts it: the test's own check.
    let trusting = Command::new("git")
        .current_dir(worktree.path())
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .args(["status", "--short"])
        .output()
        .unwrap();
    // (It fails too: the required `evil` filter has no clean command.)
    assert!(!trusting.status.success());
    assert!(
        marker("fsmonitor").exists(),
        "the planted fsmonitor is live"
    );
    std::fs::remove_file(marker("fsmonitor")).unwrap();

    // The next job in this mirror: fetch, worktree add (checks files out), removal.
    let pushed = fixture.push_widget(4);
    let next = fixture.check_out().await;
    assert_eq!(next.head_sha(), pushed);
    assert_eq!(read(&next, "src/lib.rs"), "pub fn widget() -> u8 { 4 }\n");
    next.remove().await.unwrap();
    worktree.remove().await.unwrap();
    fixture.checkouts.prune_stale().await.unwrap();

    let ran: Vec<_> = std::fs::read_dir(markers.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !["hooks", "fsmonitor.sh", "filter.sh"].contains(&name.as_str()))
        .collect();
    assert!(ran.is_empty(), "planted code ran: {ran:?}");
    // The mirror's config is the bot's again.
    let config = std::fs::read_to_string(config).unwrap();
    assert!(
        !config.contains("hooksPath") && !config.contains("fsmonitor"),
        "{config}"
    );
}

#[tokio::test]
async fn a_git_command_past_its_timeout_is_killed_with_a_clear_error() {
    let fixture = fixture();
    fixture.sim.inject(FaultRule::operation(
        "git/info-refs",
        Fault::Hang(Duration::from_mins(2)),
    ));
    let mut settings = CheckoutSettings::new(fixture.work.path());
    settings.git_timeout = Duration::from_secs(2);
    let checkouts = Checkouts::new(settings).unwrap();
    let error = checkouts.checkout(&fixture.request()).await.unwrap_err();
    let message = error.to_string();
    assert!(matches!(error, CheckoutError::Timeout { .. }), "{message}");
    assert!(message.contains("`git fetch"), "{message}");
    assert!(
        message.contains("killed with its process group"),
        "{message}"
    );
    assert!(!message.contains(&fixture.token), "{message}");
    // git and its git-remote-http are gone the moment checkout returns (a killed process's
    // cmdline reads empty, so only a live one could match).
    let url = fixture.repo.clone_url();
    let survivors: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .filter(|cmdline| contains(cmdline, &url))
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .collect();
    assert!(survivors.is_empty(), "{survivors:?}");
}

#[tokio::test]
async fn two_processes_on_one_work_directory_share_a_mirror_safely() {
    let fixture = fixture();
    // A second `Checkouts` on the same work directory stands for a second process (a
    // `review-bot review` by hand while the daemon runs): only the file lock orders them.
    let other = Checkouts::new(CheckoutSettings::new(fixture.work.path())).unwrap();
    let request = fixture.request();
    let (first, second, third, fourth) = tokio::join!(
        fixture.checkouts.checkout(&request),
        other.checkout(&request),
        fixture.checkouts.checkout(&request),
        other.checkout(&request)
    );
    let worktrees = [
        first.unwrap(),
        second.unwrap(),
        third.unwrap(),
        fourth.unwrap(),
    ];
    assert_eq!(fixture.registered_worktrees().len(), 4);
    for worktree in worktrees {
        assert_eq!(read(&worktree, "src/new.rs"), "pub fn new() {}\n");
        worktree.remove().await.unwrap();
    }
    assert!(fixture.registered_worktrees().is_empty());
}

#[tokio::test]
async fn prune_stale_removes_a_mirror_left_half_initialised() {
    let fixture = fixture();
    fixture.check_out().await.remove().await.unwrap();
    let mirror = fixture.mirror();
    let half = mirror.with_extension("init-999999");
    git(
        mirror.parent().unwrap(),
        &["init", "--quiet", "--bare", half.to_str().unwrap()],
    );
    fixture.checkouts.prune_stale().await.unwrap();
    assert!(!half.exists());
    assert!(mirror.join("HEAD").is_file());
}

#[tokio::test]
async fn symlinks_planted_in_the_mirror_never_make_git_write_elsewhere() {
    let fixture = fixture();
    let worktree = fixture.check_out().await;
    let common = PathBuf::from(git(
        worktree.path(),
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
    ));
    // The "PR" points the mirror's pull request refs and a reflog at places of its choosing.
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    std::fs::rename(common.join("refs/pull"), outside.path().join("old-pull")).unwrap();
    std::os::unix::fs::symlink(outside.path(), common.join("refs/pull")).unwrap();
    std::fs::create_dir_all(common.join("logs/refs/heads")).unwrap();
    std::os::unix::fs::symlink(&victim, common.join("logs/refs/heads/main")).unwrap();
    std::os::unix::fs::symlink(&victim, common.join("config.review-bot")).unwrap();
    worktree.remove().await.unwrap();

    let pushed = fixture.push_widget(5);
    let next = fixture.check_out().await;
    assert_eq!(next.head_sha(), pushed);
    assert_eq!(read(&next, "src/lib.rs"), "pub fn widget() -> u8 { 5 }\n");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious\n");
    let mut outside_names: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    outside_names.sort();
    assert_eq!(outside_names, ["old-pull", "victim.txt"]);
    assert!(
        !std::fs::symlink_metadata(common.join("refs/pull"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    next.remove().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_of_one_repository_sanitising_at_once_all_succeed() {
    // The write flow sanitises the mirror before each git command after an
    // agent run; four jobs of one repository did so at once in the daemon
    // and took each other's staged config ("could not replace").
    let fixture = fixture();
    let worktree = fixture
        .checkouts
        .checkout(&fixture.request())
        .await
        .unwrap();
    let mirror = fixture.mirror();
    // Threads, not one task's futures: the race needs real parallelism.
    let runtime = tokio::runtime::Handle::current();
    let results: Vec<_> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..8)
            .map(|_| {
                scope.spawn(|| {
                    (0..20)
                        .map(|_| runtime.block_on(fixture.checkouts.sanitize(&mirror)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|thread| thread.join().unwrap())
            .collect()
    });
    assert_eq!(results.len(), 160);
    for result in results {
        result.unwrap();
    }
    let config = std::fs::read_to_string(mirror.join("config")).unwrap();
    assert!(config.contains("bare = true"), "{config}");
    assert!(!mirror.join("config.review-bot").exists());
    worktree.remove().await.unwrap();
}
