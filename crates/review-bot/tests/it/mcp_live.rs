//! `review-bot mcp --live`: the real binary, spoken to over stdio, against the
//! GitHub simulator and a real SQLite store.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use review_testkit::github::{GithubSim, PullRequestHandle};
use serde_json::{Value, json};
use sqlx::Connection as _;

/// An MCP session with a `review-bot mcp` child process.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(arguments: &[&str], environment: &[(&str, String)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_review-bot"))
            .arg("mcp")
            .args(arguments)
            .env_clear()
            .envs(environment.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("review-bot starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut session = Self {
            child,
            stdin,
            stdout,
            next_id: 1,
        };
        let initialized = session.request(
            "initialize",
            &json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "live-test", "version": "0"},
            }),
        );
        assert_eq!(
            initialized["result"]["serverInfo"]["name"], "review-bot",
            "{initialized}"
        );
        session.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        session
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}").expect("the server reads");
    }

    fn request(&mut self, method: &str, params: &Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "the server exited"
            );
            let message: Value = serde_json::from_str(&line).expect("JSON from the server");
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Calls a tool; returns whether it was an error, and its text.
    fn call(&mut self, tool: &str, arguments: &Value) -> (bool, String) {
        let response = self.request("tools/call", &json!({"name": tool, "arguments": arguments}));
        let result = &response["result"];
        (
            result["isError"].as_bool().unwrap_or(false),
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        )
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A pull request with a review thread (comment and reply) and an issue comment.
fn pull_request(sim: &GithubSim) -> (PullRequestHandle, u64, u64, u64) {
    sim.user("carol");
    sim.user("alice");
    sim.user("dave");
    let repository = sim
        .repo("acme/widgets")
        .file("src/lib.rs", "pub fn one() -> u32 {\n    1\n}\n")
        .create()
        .unwrap();
    let pull = repository
        .pull_request("feature")
        .modify("src/lib.rs", "pub fn one() -> u32 {\n    2\n}\n")
        .title("Change one")
        .author("alice")
        .open()
        .unwrap();
    let thread = pull
        .review_comment("carol", "src/lib.rs", 2, "Why 2?")
        .unwrap();
    let reply = pull.reply("alice", thread, "Because.").unwrap();
    let issue = pull.comment("dave", "Please add tests.").unwrap();
    (pull, thread, reply, issue)
}

fn live_environment(sim: &GithubSim, token: &str, directory: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("GITHUB_TOKEN", token.to_owned()),
        ("REVIEW_BOT_GITHUB_API_URL", sim.api_url().to_owned()),
        ("REVIEW_BOT_GITHUB_WRITE_SPACING_MS", "0".to_owned()),
        (
            "REVIEW_BOT_DATABASE_URL",
            review_store::sqlite_url(&directory.join("store.sqlite3")),
        ),
        (
            "COMMENTS_FILE",
            directory.join("comments.jsonl").display().to_string(),
        ),
    ]
}

#[test]
fn live_mode_reads_github_posts_replies_and_remembers_them_in_the_store() {
    let sim = GithubSim::start().unwrap();
    let (pull, thread, reply, issue) = pull_request(&sim);
    let developer = sim.user("developer");
    let directory = tempfile::tempdir().unwrap();
    let environment = live_environment(&sim, &developer.token, directory.path());
    let arguments = ["--live", "--repo", "acme/widgets", "--pr", "1"];
    let mut session = Session::start(&arguments, &environment);

    let (is_error, text) = session.call("github_get_pr_comments", &json!({}));
    assert!(!is_error, "{text}");
    let view: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(view["total_comments"], 2, "{view}");
    assert_eq!(view["comments"][0]["id"], thread);
    assert_eq!(view["comments"][0]["replies"][0]["id"], reply);
    assert!(
        view["comments"][0]["diff_hunk"]
            .as_str()
            .unwrap()
            .starts_with("@@ -1,3 +1,3 @@"),
        "{view}"
    );
    assert_eq!(view["comments"][1]["id"], issue);

    // Inline comments are checked against the live diff and collected, not posted.
    let (is_error, text) = session.call(
        "leave_inline_comment",
        &json!({"path": "src/lib.rs", "line": 2, "message": "ok"}),
    );
    assert!(!is_error, "{text}");
    let (is_error, text) = session.call(
        "leave_inline_comment",
        &json!({"path": "src/lib.rs", "line": 5, "message": "near"}),
    );
    assert!(
        !is_error && text.contains("it will be posted on line 3"),
        "{text}"
    );
    let (is_error, text) = session.call(
        "leave_inline_comment",
        &json!({"path": "src/elsewhere.rs", "line": 1, "message": "no"}),
    );
    assert!(is_error && text.contains("src/lib.rs"), "{text}");

    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": reply, "message": "m"}),
    );
    assert!(
        is_error && text.contains(&format!("comment_id {thread}")),
        "{text}"
    );
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": thread, "message": "Fixed: back to 1."}),
    );
    assert!(!is_error && text.contains("Posted the reply"), "{text}");
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": issue, "message": "Added."}),
    );
    assert!(!is_error, "{text}");

    let posted = pull.review_comments().unwrap();
    assert!(
        posted
            .iter()
            .any(|comment| comment.in_reply_to == Some(thread)
                && comment.user == "developer"
                && comment
                    .body
                    .starts_with("Fixed: back to 1.\n\n<sub>thread::")),
        "{posted:?}"
    );
    let conversation = pull.issue_comments().unwrap();
    assert!(
        conversation.iter().any(|comment| comment
            .body
            .starts_with("@dave wrote:\n> Please add tests.\n\nAdded.\n\n<sub>thread::")),
        "{conversation:?}"
    );

    // Both answered, and our own reply to the conversation comment needs no
    // answer either: three filtered.
    let (_, text) = session.call("github_get_pr_comments", &json!({}));
    let view: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        (
            view["total_comments"].as_u64(),
            view["replied_comments_filtered"].as_u64()
        ),
        (Some(0), Some(3)),
        "{view}"
    );
    drop(session);

    // The store remembers across sessions (seed 002).
    let mut session = Session::start(&arguments, &environment);
    let (_, text) = session.call("github_get_pr_comments", &json!({"include_replied": false}));
    let view: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(view["replied_comments_filtered"], 3, "{view}");
    assert_eq!(
        std::fs::read_to_string(directory.path().join("comments.jsonl")).unwrap(),
        "{\"type\":\"inline\",\"message\":\"ok\",\"path\":\"src/lib.rs\",\"line\":2}\n\
         {\"type\":\"inline\",\"message\":\"near\",\"path\":\"src/lib.rs\",\"line\":3}\n"
    );
}

/// Issue 25 item 9: the store fails after GitHub accepted a reply (a real
/// failure: the SQLite database refuses the write through a trigger, as a
/// full disk or a read-only volume would). The reply is reported as posted,
/// with a warning, not as "posting failed, try again"; a retry — in a new
/// session, with the comment still listed as unanswered — finds the reply by
/// its `thread::` id and posts nothing; once the store works, the retry
/// records it.
#[test]
fn a_store_failure_after_a_post_is_a_warning_and_a_retry_posts_nothing() {
    let sim = GithubSim::start().unwrap();
    let (pull, thread, _reply, issue) = pull_request(&sim);
    let developer = sim.user("developer");
    let directory = tempfile::tempdir().unwrap();
    let environment = live_environment(&sim, &developer.token, directory.path());
    let database_url = review_store::sqlite_url(&directory.path().join("store.sqlite3"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store_sql = |sql: &'static str| {
        runtime.block_on(async {
            // Opening applies the migrations; then the database is changed
            // behind the store's back, as an operator (or a disk) would.
            let store = review_store::Store::open(&database_url).await.unwrap();
            store.close().await;
            let mut connection = sqlx::SqliteConnection::connect(&database_url)
                .await
                .unwrap();
            sqlx::raw_sql(sql).execute(&mut connection).await.unwrap();
            connection.close().await.unwrap();
        });
    };
    store_sql(
        "CREATE TRIGGER refuse_replies BEFORE INSERT ON comment_replies \
         BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END;",
    );
    let arguments = ["--live", "--repo", "acme/widgets", "--pr", "1"];
    let replies_to = |comment_id: u64| {
        pull.review_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| {
                comment.in_reply_to == Some(comment_id) && comment.user == "developer"
            })
            .count()
    };
    let developer_comments = || {
        pull.issue_comments()
            .unwrap()
            .into_iter()
            .filter(|comment| comment.user == "developer")
            .count()
    };

    let mut session = Session::start(&arguments, &environment);
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": thread, "message": "Fixed: back to 1."}),
    );
    assert!(!is_error, "{text}");
    assert!(text.contains("Posted the reply"), "{text}");
    assert!(
        text.contains("Warning") && text.contains("disk is full"),
        "{text}"
    );
    assert!(text.contains("Do not post it again"), "{text}");
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": issue, "message": "Added."}),
    );
    assert!(!is_error && text.contains("Warning"), "{text}");
    assert_eq!((replies_to(thread), developer_comments()), (1, 1));
    drop(session);

    // A new session: the store never recorded the replies, so the comments
    // are listed as unanswered and the agent answers again, in other words.
    let mut session = Session::start(&arguments, &environment);
    let (_, text) = session.call("github_get_pr_comments", &json!({}));
    let view: Value = serde_json::from_str(&text).unwrap();
    // Carol's thread, Dave's comment and the bot's own answer to it (its
    // `thread::` id recognised: the token's user is the bot); nothing is
    // filtered as replied, as the store recorded nothing.
    assert_eq!(view["total_comments"], 3, "{view}");
    assert_eq!(view["replied_comments_filtered"], 0, "{view}");
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": thread, "message": "Reverted to 1, as asked."}),
    );
    assert!(!is_error && text.contains("already posted"), "{text}");
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": issue, "message": "Tests added."}),
    );
    assert!(!is_error && text.contains("already posted"), "{text}");
    assert_eq!((replies_to(thread), developer_comments()), (1, 1));
    drop(session);

    // The store works again: a retry records what is there, posts nothing.
    store_sql("DROP TRIGGER refuse_replies;");
    let mut session = Session::start(&arguments, &environment);
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": thread, "message": "Fixed: back to 1."}),
    );
    assert!(
        !is_error && text.contains("already posted") && !text.contains("Warning"),
        "{text}"
    );
    let (_, text) = session.call("github_get_pr_comments", &json!({}));
    let view: Value = serde_json::from_str(&text).unwrap();
    // Dave's comment and the bot's own answer; Carol's answered thread is
    // filtered as replied now that the store recorded it.
    assert_eq!(view["total_comments"], 2, "{view}");
    assert_eq!(view["replied_comments_filtered"], 1, "{view}");
    assert_eq!((replies_to(thread), developer_comments()), (1, 1));

    drop(session);

    // A reviewer's follow-up is a new conversation state: the next session
    // (one reply per comment within a session) gets to answer it.
    pull.reply("carol", thread, "Why not 3?").unwrap();
    let mut session = Session::start(&arguments, &environment);
    let (is_error, text) = session.call(
        "github_post_pr_reply",
        &json!({"comment_id": thread, "message": "1 is what the callers expect."}),
    );
    assert!(!is_error && text.contains("Posted the reply"), "{text}");
    assert_eq!(replies_to(thread), 2);
}

#[test]
fn live_mode_without_a_token_says_how_to_get_one() {
    let sim = GithubSim::start().unwrap();
    let directory = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .args(["mcp", "--live", "--repo", "acme/widgets", "--pr", "1"])
        .env_clear()
        .env("REVIEW_BOT_GITHUB_API_URL", sim.api_url())
        .env(
            "REVIEW_BOT_DATABASE_URL",
            review_store::sqlite_url(&directory.path().join("s.sqlite3")),
        )
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("gh auth token"), "{stderr}");
}
