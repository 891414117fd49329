//! `review-bot review --local` end to end: a real git repository with a
//! committed change on a branch, an uncommitted change and an untracked file;
//! the real Claude Code CLI against the scripted model server; the real build
//! gate. No GitHub anywhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Instant;

use review_testkit::model::{ModelServer, Script, ToolCall, Turn};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::git;

fn library(changes: &[(usize, &str)]) -> String {
    (1..=40)
        .map(|line| {
            changes
                .iter()
                .find(|(changed, _)| *changed == line)
                .map_or_else(
                    || format!("pub fn line_{line}() {{}}\n"),
                    |(_, text)| format!("{text}\n"),
                )
        })
        .collect()
}

const README: &str = "# widgets\n\n## Build\n\n```sh\nsh build.sh\n```\n";

/// A repository: `main` with the library, `feature` changing line 5 (committed),
/// line 20 changed in the working tree, `notes.txt` untracked, `target/`
/// ignored. The build writes `build-output.txt` in its working directory.
fn repository(root: &Path) -> PathBuf {
    let repo = root.join("widgets");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    git(&repo, &["init", "--quiet"]);
    std::fs::write(repo.join("README.md"), README).unwrap();
    std::fs::write(
        repo.join("build.sh"),
        "echo built > build-output.txt\necho building\n",
    )
    .unwrap();
    std::fs::write(repo.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(repo.join("src/lib.rs"), library(&[])).unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "Start"]);
    git(&repo, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(
        repo.join("src/lib.rs"),
        library(&[(5, "pub fn five() -> u32 { 6 }")]),
    )
    .unwrap();
    git(&repo, &["commit", "--quiet", "-am", "Make five six"]);
    // Uncommitted and untracked work.
    std::fs::write(
        repo.join("src/lib.rs"),
        library(&[
            (5, "pub fn five() -> u32 { 6 }"),
            (20, "pub fn twenty() -> u32 { 19 }"),
        ]),
    )
    .unwrap();
    std::fs::write(repo.join("notes.txt"), "one\ntwo: a secret plan\nthree\n").unwrap();
    std::fs::create_dir_all(repo.join("target")).unwrap();
    std::fs::write(repo.join("target/ignored.txt"), "not reviewed\n").unwrap();
    repo
}

/// Every file under `.git` with its size and modification time.
fn git_directory_listing(repo: &Path) -> BTreeMap<String, (u64, std::time::SystemTime)> {
    fn walk(
        base: &Path,
        directory: &Path,
        found: &mut BTreeMap<String, (u64, std::time::SystemTime)>,
    ) {
        for entry in std::fs::read_dir(directory).unwrap().flatten() {
            let path = entry.path();
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            let name = path.strip_prefix(base).unwrap().display().to_string();
            found.insert(name, (metadata.len(), metadata.modified().unwrap()));
            if metadata.is_dir() {
                walk(base, &path, found);
            }
        }
    }
    let mut found = BTreeMap::new();
    let dot_git = repo.join(".git");
    walk(&dot_git, &dot_git, &mut found);
    found
}

fn tool(name: &str, input: Value) -> ToolCall {
    ToolCall::new(format!("mcp__review__{name}"), input)
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn command(dir: &Path, model: Option<&ModelServer>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_review-bot"));
    command
        .arg("review")
        .arg("--local")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.join("home"))
        .env("XDG_RUNTIME_DIR", dir.join("runtime"))
        .env("REVIEW_BOT_WORK_DIR", dir.join("work"))
        .env(
            "REVIEW_BOT_DATABASE_URL",
            format!("sqlite://{}", dir.join("store.sqlite3").display()),
        )
        .env("REVIEW_BOT_AGENT_MAX_RETRIES", "0")
        .env("REVIEW_BOT_AGENT_TIMEOUT_SECS", "300")
        .env("REVIEW_BOT_REVIEW_BUILD_TIMEOUT_SECS", "300")
        .env("ANTHROPIC_API_KEY", "sk-ant-scripted-model-server")
        .stdin(Stdio::null());
    if let Some(model) = model {
        let claude = review_testkit::tools::claude_binary().expect("the pinned CLI is installed");
        command
            .env("REVIEW_BOT_AGENT_CLAUDE_PATH", claude)
            .env("ANTHROPIC_BASE_URL", model.base_url());
    }
    command
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_land_on_committed_uncommitted_and_untracked_lines_and_the_repository_is_untouched()
 {
    if review_testkit::tools::claude_for_test().is_none() {
        return;
    }
    let script = Script::new([
        Turn::text("No architectural concerns."),
        Turn::tools([
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 5, "message": "`five` returns 6.", "title": "Committed change", "severity": "logic", "confidence": 90}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "src/lib.rs", "line": 20, "message": "`twenty` returns 19.", "title": "Uncommitted change", "severity": "logic", "confidence": 80}),
            ),
            tool(
                "leave_inline_comment",
                json!({"path": "notes.txt", "line": 2, "message": "A plan in an untracked file.", "title": "Untracked file", "severity": "clarity", "confidence": 50}),
            ),
        ]),
        Turn::text("Detailed pass done."),
    ]);
    let model = ModelServer::start(script)
        .await
        .expect("the model server starts");
    let dir: TempDir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let status_before = git(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    let listing_before = git_directory_listing(&repo);

    let mut review = command(dir.path(), Some(&model));
    review.arg("--json").arg(&repo);
    let started = Instant::now();
    let output = tokio::task::spawn_blocking(move || review.output().unwrap())
        .await
        .unwrap();
    let wall = started.elapsed();
    let log = stderr(&output);
    assert!(output.status.success(), "{log}");

    // The findings document: valid, each finding on its line.
    let validation = review_core::findings::validate(&output.stdout);
    assert!(validation.is_valid(), "{:?}\n{log}", validation.errors);
    let findings = validation.findings.unwrap();
    let places: Vec<(String, u32)> = findings
        .line_comments
        .iter()
        .map(|comment| (comment.file.clone(), comment.line))
        .collect();
    assert_eq!(
        places,
        [
            ("src/lib.rs".to_owned(), 5),
            ("src/lib.rs".to_owned(), 20),
            ("notes.txt".to_owned(), 2),
        ],
        "{log}"
    );
    // All three anchor inline on the diff the review computed.
    for step in [
        "repository",
        "base",
        "copy the working tree",
        "diff",
        "build and test",
    ] {
        assert!(
            log.contains(&format!("✓ {step} (")),
            "no step {step}: {log}"
        );
    }
    assert!(log.contains("merge base of HEAD and main"), "{log}");
    assert!(log.contains("1 command from README.md passed"), "{log}");

    // The agent was told where the changes are, and saw no ignored file.
    let requests = model.requests();
    let first = serde_json::to_string(&requests[0].body).unwrap_or_default();
    assert!(first.contains("review-base...HEAD"), "{first}");

    // The repository is untouched: status, and every file under .git.
    let listing_after = git_directory_listing(&repo);
    assert_eq!(
        listing_before, listing_after,
        "something under .git changed"
    );
    let status_after = git(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status_before, status_after);
    assert!(
        !repo.join("build-output.txt").exists(),
        "the build wrote into the developer's tree"
    );
    // The copy is gone; the job directory keeps the build log.
    let jobs: Vec<PathBuf> = std::fs::read_dir(dir.path().join("work/local"))
        .unwrap()
        .flatten()
        .map(|entry| entry.path())
        .collect();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert!(!jobs[0].join("tree").exists());
    assert!(
        std::fs::read_to_string(jobs[0].join("build/01.log"))
            .unwrap()
            .contains("building")
    );
    // No panel listens: the review is in the job directory.
    let review = std::fs::read_to_string(jobs[0].join("review.md")).unwrap();
    assert!(
        review.contains("[src/lib.rs:20](src/lib.rs#L20)"),
        "{review}"
    );
    eprintln!("review --local: wall {:.2} s; {log}", wall.as_secs_f64());
}

#[test]
fn usage_errors_exit_2_and_name_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let output = command(dir.path(), None)
        .args(["--base", "no-such-ref"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no-such-ref"),
        "{}",
        stderr(&output)
    );

    let plain = dir.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let output = command(dir.path(), None).arg(&plain).output().unwrap();
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("not in a git working tree"),
        "{}",
        stderr(&output)
    );

    // Without --local, the pull request is required.
    let output = crate::review_bot(dir.path())
        .arg("review")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
