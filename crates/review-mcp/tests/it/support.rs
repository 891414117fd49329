//! A minimal MCP client over an in-memory byte stream, and test fixtures.

use std::path::{Path, PathBuf};

use review_core::anchor::Side;
use review_core::snapshot::{
    IssueComment, PullRequestInfo, PullRequestSnapshot, ReviewThread, SNAPSHOT_VERSION,
    ThreadComment,
};
use review_mcp::panel::PanelSettings;
use review_mcp::{ReviewServer, ServerOptions, Source};
use rmcp::ServiceExt as _;
use serde_json::{Value, json};
use tokio::io::{
    AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The diff the fixture pull request has: `src/lib.rs` with hunks on new
/// lines 1-7 and 42-45, and a new file `docs/guide.md` (lines 1-2).
pub const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,5 +1,7 @@
 fn a() {}
+fn b() {}
+fn c() {}
 fn d() {}
 fn e() {}
 fn f() {}
 fn g() {}
@@ -40,3 +42,4 @@
 fn x() {}
+fn y() {}
 fn z() {}
 fn w() {}
diff --git a/docs/guide.md b/docs/guide.md
new file mode 100644
index 0000000..3333333
--- /dev/null
+++ b/docs/guide.md
@@ -0,0 +1,2 @@
+# Guide
+Read me.
";

/// The bot's thread id on review comment 101.
pub const BOT_THREAD: &str = "thread::0b6c3c55-8f1e-4f0e-9a8e-3c1f2a9d7e11";

/// A pull request with two review threads (one already replied to) and two issue comments.
pub fn snapshot() -> PullRequestSnapshot {
    let comment = |id, user: &str, body: &str| ThreadComment {
        id,
        user: user.into(),
        body: body.into(),
        created_at: "2025-01-13T10:30:00Z".into(),
    };
    PullRequestSnapshot {
        version: SNAPSHOT_VERSION,
        repository: "octo/widgets".into(),
        bot_login: Some("review-bot[bot]".into()),
        pull_request: PullRequestInfo {
            number: 42,
            title: "Add b and c".into(),
            body: "Adds two functions.".into(),
            author: "alice".into(),
            base_ref: "main".into(),
            head_ref: "feature".into(),
            base_sha: "a".repeat(40),
            head_sha: "b".repeat(40),
        },
        diff: DIFF.into(),
        files: Vec::new(),
        files_truncated: false,
        review_threads: vec![
            ReviewThread {
                path: "src/lib.rs".into(),
                line: Some(2),
                start_line: None,
                side: Some(Side::Right),
                diff_hunk: "@@ -1,5 +1,7 @@\n fn a() {}\n+fn b() {}".into(),
                outdated: false,
                replied: false,
                comments: vec![
                    comment(
                        101,
                        "review-bot[bot]",
                        &format!("`b` is unused.\n\n<sub>{BOT_THREAD}</sub>"),
                    ),
                    comment(102, "alice", "It is used in the next PR."),
                ],
            },
            ReviewThread {
                path: "src/lib.rs".into(),
                line: Some(43),
                start_line: None,
                side: Some(Side::Right),
                diff_hunk: "@@ -40,3 +42,4 @@\n fn x() {}\n+fn y() {}".into(),
                outdated: false,
                replied: true,
                comments: vec![comment(201, "carol", "Rename y?")],
            },
        ],
        issue_comments: vec![
            IssueComment {
                id: 9001,
                user: "dave".into(),
                body: "Please add tests.".into(),
                created_at: "2025-01-13T11:00:00Z".into(),
                replied: false,
            },
            IssueComment {
                id: 9002,
                user: "erin".into(),
                body: "Answered already.".into(),
                created_at: "2025-01-13T11:05:00Z".into(),
                replied: true,
            },
        ],
    }
}

/// A temporary run directory with the paths a server is started with.
pub struct Run {
    pub directory: tempfile::TempDir,
}

impl Run {
    pub fn new() -> Self {
        Self {
            directory: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    pub fn comments_file(&self) -> PathBuf {
        self.directory.path().join("comments.jsonl")
    }

    pub fn socket(&self) -> PathBuf {
        self.directory.path().join("panel.sock")
    }

    pub fn options(&self, snapshot: Option<PullRequestSnapshot>) -> ServerOptions {
        ServerOptions {
            comments_file: Some(self.comments_file()),
            source: Source::Snapshot(snapshot),
            panel: PanelSettings::new(Some(self.socket()), Some(self.directory.path().to_owned())),
        }
    }

    /// The comments file's lines, parsed; none when it does not exist.
    pub fn lines(&self) -> Vec<Value> {
        read_lines(&self.comments_file())
    }
}

pub fn read_lines(path: &Path) -> Vec<Value> {
    match std::fs::read_to_string(path) {
        Ok(text) => text
            .lines()
            .map(|line| {
                serde_json::from_str(line)
                    .unwrap_or_else(|error| panic!("not JSON ({error}): {line}"))
            })
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => panic!("reading {}: {error}", path.display()),
    }
}

/// A tool call's answer.
#[derive(Debug)]
pub struct Answer {
    pub is_error: bool,
    pub text: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {}", self.text))
    }
}

/// An MCP client session with a server running in this process.
pub struct Session {
    writer: WriteHalf<DuplexStream>,
    reader: Lines<BufReader<ReadHalf<DuplexStream>>>,
    next_id: u64,
}

impl Session {
    pub async fn start(options: ServerOptions) -> Self {
        let (client, server) = tokio::io::duplex(4 * 1024 * 1024);
        tokio::spawn(async move {
            let running = ReviewServer::new(options)
                .serve(server)
                .await
                .expect("the server starts");
            let _ = running.waiting().await;
        });
        let (reader, writer) = tokio::io::split(client);
        let mut session = Self {
            writer,
            reader: BufReader::new(reader).lines(),
            next_id: 1,
        };
        let initialized = session
            .request(
                "initialize",
                json!({
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "review-mcp-tests", "version": "0"},
                }),
            )
            .await;
        assert_eq!(
            initialized["result"]["serverInfo"]["name"], "review-bot",
            "{initialized}"
        );
        session
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        session
    }

    async fn send(&mut self, message: &Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .await
            .expect("the server reads");
    }

    /// Sends a request and waits for its response (skipping notifications).
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params).await;
        loop {
            let response = self.next_message().await;
            if response["id"] == id {
                return response;
            }
        }
    }

    async fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    async fn next_message(&mut self) -> Value {
        let line = self
            .reader
            .next_line()
            .await
            .expect("the server writes")
            .expect("the server keeps the session open");
        serde_json::from_str(&line).expect("the server writes JSON")
    }

    pub async fn call(&mut self, tool: &str, arguments: Value) -> Answer {
        let response = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        answer(&response)
    }

    /// Sends many calls before reading any answer, so the server handles
    /// them concurrently; returns the answers in request order.
    pub async fn call_many(&mut self, calls: Vec<(&str, Value)>) -> Vec<Answer> {
        let mut ids = Vec::new();
        for (tool, arguments) in calls {
            ids.push(
                self.send_request("tools/call", json!({"name": tool, "arguments": arguments}))
                    .await,
            );
        }
        let mut responses = std::collections::HashMap::new();
        while responses.len() < ids.len() {
            let message = self.next_message().await;
            if let Some(id) = message["id"].as_u64() {
                responses.insert(id, message);
            }
        }
        ids.iter().map(|id| answer(&responses[id])).collect()
    }
}

fn answer(response: &Value) -> Answer {
    let result = &response["result"];
    assert!(
        result.is_object(),
        "a protocol error instead of a tool result: {response}"
    );
    Answer {
        is_error: result["isError"].as_bool().unwrap_or(false),
        text: result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    }
}
