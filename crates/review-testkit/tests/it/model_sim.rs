//! The `model-sim` binary, run as a separate process and probed over HTTP.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A Messages API request offering one tool, so it is part of the main conversation.
fn messages_request() -> Value {
    json!({
        "model": "claude-opus-4-6",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Review this."}],
        "tools": [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}],
    })
}

/// Waits until every one of `expected` is in a line read from `lines`; what was read.
fn wait_for_lines(lines: &mpsc::Receiver<String>, expected: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut read = Vec::new();
    while !expected
        .iter()
        .all(|wanted| read.iter().any(|line: &String| line.contains(wanted)))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => read.push(line),
            Err(error) => panic!("expected {expected:?} on stderr ({error}); read {read:#?}"),
        }
    }
    read
}

#[tokio::test]
async fn model_sim_serves_a_script_file_and_logs_each_answer() {
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("script.json");
    std::fs::write(
        &script,
        json!({"turns": [
            {"tools": [{"name": "Bash", "input": {"command": "sh test.sh", "description": "Run the tests"}}]},
            {"error": 529}
        ]})
        .to_string(),
    )
    .unwrap();
    // `--addr` with port 0 still goes through the chosen-address path.
    let child = Command::new(env!("CARGO_BIN_EXE_model-sim"))
        .args([
            "--script",
            script.to_str().unwrap(),
            "--addr",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("model-sim starts");
    let mut server = Server(child);
    let stderr = server.0.stderr.take().unwrap();
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let mut line = String::new();
    BufReader::new(server.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: Value = serde_json::from_str(&line).expect("one JSON line");
    let base_url = ready["base_url"].as_str().unwrap();
    assert!(base_url.starts_with("http://127.0.0.1:"), "{base_url}");

    let http = reqwest::Client::new();
    let send = || {
        http.post(format!("{base_url}/v1/messages"))
            .header("x-api-key", "anything")
            .header("anthropic-version", "2023-06-01")
            .json(&messages_request())
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status().as_u16(), 200);
    let message: Value = first.json().await.unwrap();
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["content"][0]["type"], "tool_use");
    assert_eq!(message["content"][0]["name"], "Bash");
    assert_eq!(message["content"][0]["input"]["command"], "sh test.sh");

    let second = send().await.unwrap();
    assert_eq!(second.status().as_u16(), 529);
    let error: Value = second.json().await.unwrap();
    assert_eq!(error["error"]["type"], "overloaded_error");

    let third = send().await.unwrap();
    assert_eq!(third.status().as_u16(), 403);
    let error: Value = third.json().await.unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("script exhausted"), "{message}");

    wait_for_lines(
        &lines,
        &[
            "request 1: turn 1/2: tools Bash",
            "request 2: turn 2/2: HTTP 529",
            "request 3: script exhausted",
        ],
    );
}

#[test]
fn model_sim_refuses_a_malformed_script_naming_the_json_path() {
    let work = tempfile::tempdir().unwrap();
    let script = work.path().join("script.json");
    std::fs::write(
        &script,
        r#"{"turns": [{"text": "fine"}, {"tools": [{"name": "Bash", "input": "ls"}]}]}"#,
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_model-sim"))
        .args(["--script", script.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("$.turns[1].tools[0].input: expected an object, found a string"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}
