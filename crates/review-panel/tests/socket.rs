//! The panel's socket and HTTP guard from outside, in process: bad lines get
//! `{"ok":false,…}` and the panel keeps running; a hung client blocks nobody;
//! shutdown removes the socket.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_panel::{Limits, Panel, PanelOptions};
use serde_json::{Value, json};

struct Running {
    socket: PathBuf,
    /// `127.0.0.1:PORT`.
    address: String,
    /// The secret from the URL.
    token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _directory: tempfile::TempDir,
}

async fn start(limits: Limits) -> Running {
    let directory = tempfile::tempdir().unwrap();
    let socket = directory.path().join("panel.sock");
    let mut options = PanelOptions::new(socket.clone());
    options.limits = limits;
    let panel = Panel::bind(options).await.unwrap();
    let url = panel.url();
    let address = panel.address().to_string();
    let token = url.split_once("?token=").unwrap().1.to_owned();
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        panel
            .run(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    Running {
        socket,
        address,
        token,
        stop: Some(stop),
        task,
        _directory: directory,
    }
}

/// Sends raw bytes, returns the answer line (blocking; run it off the runtime).
fn exchange(socket: &Path, bytes: &[u8]) -> Value {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_mins(1)))
        .unwrap();
    // An over-long line may be cut off by the panel mid-write: that is fine.
    let _ = stream.write_all(bytes);
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"))
}

fn message(base: &Path, document: &str) -> Vec<u8> {
    let mut line = serde_json::to_vec(&json!({
        "protocol": "review-bot.review-panel/1", "kind": "present_review", "mode": "replace",
        "section": null, "baseUri": base, "content": document, "document": document,
    }))
    .unwrap();
    line.push(b'\n');
    line
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_lines_are_answered_with_errors_and_the_panel_keeps_running() {
    let limits = Limits {
        max_message_bytes: 4096,
        ..Limits::default()
    };
    let panel = start(limits).await;
    let base = tempfile::tempdir().unwrap();
    let socket = panel.socket.clone();
    let base_path = base.path().to_owned();
    blocking(move || {
        let answer = exchange(&socket, b"this is not json\n");
        assert_eq!(answer["ok"], false);
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("not a review-panel protocol v1"),
            "{answer}"
        );

        let answer = exchange(&socket, &vec![b'x'; 100_000]);
        assert_eq!(answer["ok"], false);
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("over the panel's limit of 4096 bytes"),
            "{answer}"
        );

        let answer = exchange(&socket, &message(Path::new("relative/base"), "# R"));
        assert_eq!(answer["ok"], false);
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("not an absolute directory"),
            "{answer}"
        );

        let answer = exchange(&socket, &message(&base_path, "# Review\n"));
        assert_eq!(answer, json!({"ok": true}));
    })
    .await;
    stop(panel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hung_client_blocks_nobody() {
    let panel = start(Limits::default()).await;
    let base = tempfile::tempdir().unwrap();
    let socket = panel.socket.clone();
    let base_path = base.path().to_owned();
    blocking(move || {
        // Connected, half a line, then nothing: the panel waits on it alone.
        let mut hung = UnixStream::connect(&socket).unwrap();
        hung.write_all(b"{\"protocol\":").unwrap();
        let start = std::time::Instant::now();
        let answer = exchange(&socket, &message(&base_path, "# Review\n"));
        assert_eq!(answer, json!({"ok": true}));
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        drop(hung);
    })
    .await;
    stop(panel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_is_refused_to_foreign_hosts_and_carries_a_strict_policy() {
    let panel = start(Limits::default()).await;
    let address = panel.address.clone();
    let cookie = format!(
        "review-panel-{}={}",
        address.rsplit(':').next().unwrap(),
        panel.token
    );
    let response = blocking(move || {
        let get = |host: &str, path: &str| {
            let mut stream = std::net::TcpStream::connect(&address).unwrap();
            write!(
                stream,
                "GET {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n"
            )
            .unwrap();
            let mut response = String::new();
            stream.read_to_string(&mut response).unwrap();
            response
        };
        let port = address.rsplit(':').next().unwrap().to_owned();
        assert!(get("evil.example", "/").starts_with("HTTP/1.1 403"));
        assert!(get(&format!("evil.example:{port}"), "/").starts_with("HTTP/1.1 403"));
        assert!(get(&format!("localhost:{port}"), "/").starts_with("HTTP/1.1 200"));
        get(&address, "/")
    })
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains("content-security-policy: default-src 'none'; script-src 'self'"),
        "{response}"
    );
    assert!(lower.contains("x-content-type-options: nosniff"));
    assert!(response.contains("Waiting for a review"));
    stop(panel).await;
}

async fn stop(mut panel: Running) {
    panel.stop.take().unwrap().send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), &mut panel.task)
        .await
        .expect("the panel stops")
        .unwrap();
    assert!(!panel.socket.exists(), "the socket is removed on shutdown");
}
