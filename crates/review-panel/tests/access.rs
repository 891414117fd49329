//! Who may read the panel, from outside over real HTTP (issue 26, finding 7):
//! without the secret every route is 403; the secret is exchanged for a
//! cookie and a redirect that drops it; the file view opens only files the
//! review references (`.env` and `.git/config` never); a forged `Host` is
//! refused even with the secret.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use review_panel::{Panel, PanelOptions};
use serde_json::json;

/// Every route the panel serves, and one it does not.
const ROUTES: &[&str] = &[
    "/",
    "/assets/panel.js",
    "/assets/panel.css",
    "/assets/icon.svg",
    "/favicon.ico",
    "/events",
    "/api/versions",
    "/api/version/1",
    "/api/file?path=src/auth.rs",
    "/api/file?path=.env",
    "/file?path=src/auth.rs",
    "/file?path=.git/config",
    "/no-such-route",
];

struct Running {
    address: String,
    token: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _directory: tempfile::TempDir,
}

impl Running {
    fn cookie(&self) -> String {
        format!("{}={}", self.cookie_name(), self.token)
    }

    fn cookie_name(&self) -> String {
        format!("review-panel-{}", self.address.rsplit(':').next().unwrap())
    }
}

/// A panel with one review presented: it references `src/auth.rs` and a link
/// that leads out of the base. The base also holds `.env` and `.git/config`.
async fn start() -> Running {
    let directory = tempfile::tempdir().unwrap();
    let base = directory.path().join("repo");
    std::fs::create_dir_all(base.join("src")).unwrap();
    std::fs::create_dir_all(base.join(".git")).unwrap();
    std::fs::write(base.join("src/auth.rs"), "fn login() {}\nfn logout() {}\n").unwrap();
    std::fs::write(base.join(".env"), "API_KEY=top-secret-env\n").unwrap();
    std::fs::write(
        base.join(".git/config"),
        "[remote \"origin\"]\n\turl = https://x-access-token:ghp_topsecret@github.com/o/r\n",
    )
    .unwrap();
    std::fs::write(directory.path().join("outside.txt"), "outside-secret\n").unwrap();
    std::os::unix::fs::symlink(
        directory.path().join("outside.txt"),
        base.join("escape.txt"),
    )
    .unwrap();
    let socket = directory.path().join("panel.sock");
    let panel = Panel::bind(PanelOptions::new(socket.clone()))
        .await
        .unwrap();
    let url = panel.url();
    let address = panel.address().to_string();
    assert!(
        url.starts_with(&format!("http://{address}/?token=")),
        "{url}"
    );
    let token = url.split_once("?token=").unwrap().1.to_owned();
    assert!(token.len() >= 32, "at least 128 bits: {token}");
    let (stop, stopped) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        panel
            .run(async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
    });
    let document = "# Review\n\nSee [auth](src/auth.rs#L2) and [escape](escape.txt).\n";
    let answer = tokio::task::spawn_blocking(move || present(&socket, &base, document))
        .await
        .unwrap();
    assert_eq!(answer, json!({"ok": true}));
    Running {
        address,
        token,
        stop: Some(stop),
        task,
        _directory: directory,
    }
}

fn present(socket: &Path, base: &PathBuf, document: &str) -> serde_json::Value {
    let mut stream = std::os::unix::net::UnixStream::connect(socket).unwrap();
    let mut line = serde_json::to_vec(&json!({
        "protocol": "review-bot.review-panel/1", "kind": "present_review", "mode": "replace",
        "section": null, "baseUri": base, "content": document, "document": document,
    }))
    .unwrap();
    line.push(b'\n');
    stream.write_all(&line).unwrap();
    let mut answer = String::new();
    BufReader::new(stream).read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap()
}

/// A response: status, head (lower-cased) and body.
struct Answer {
    status: u16,
    head: String,
    body: String,
}

/// `GET path` with `Host: host` and the cookie if given. `/events` stays
/// open: its body is read until the first event, or the end for a refusal.
fn get(address: &str, host: &str, path: &str, cookie: Option<&str>) -> Answer {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_mins(1)))
        .unwrap();
    let cookie = cookie
        .map(|cookie| format!("Cookie: {cookie}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    let mut buffer = [0_u8; 8192];
    loop {
        let read = stream.read(&mut buffer).unwrap();
        if read == 0 {
            break;
        }
        response.extend_from_slice(&buffer[..read]);
        if path == "/events" && String::from_utf8_lossy(&response).contains("event: version") {
            break;
        }
    }
    let response = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Answer {
        status: head.split_whitespace().nth(1).unwrap().parse().unwrap(),
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

async fn blocking<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(work).await.unwrap()
}

async fn stop(mut panel: Running) {
    panel.stop.take().unwrap().send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(30), &mut panel.task)
        .await
        .expect("the panel stops")
        .unwrap();
}

fn assert_nothing_leaks(route: &str, answer: &Answer) {
    for secret in [
        "top-secret-env",
        "ghp_topsecret",
        "outside-secret",
        "fn login",
        "Review",
    ] {
        assert!(
            !answer.body.contains(secret),
            "{route} gave away {secret:?}: {}",
            answer.body
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn every_route_is_refused_without_the_secret() {
    let panel = start().await;
    let address = panel.address.clone();
    let cookie_name = panel.cookie_name();
    let token = panel.token.clone();
    blocking(move || {
        let wrong = "0".repeat(token.len());
        let mut shorter = token.clone();
        shorter.pop();
        for route in ROUTES {
            for (label, cookie) in [
                ("no cookie", None),
                ("a wrong secret", Some(format!("{cookie_name}={wrong}"))),
                ("a cut secret", Some(format!("{cookie_name}={shorter}"))),
                (
                    "another port's cookie",
                    Some(format!("review-panel-1={token}")),
                ),
            ] {
                let answer = get(&address, &address, route, cookie.as_deref());
                assert_eq!(answer.status, 403, "{route} with {label}: {}", answer.body);
                assert!(!answer.head.contains("set-cookie"), "{route} with {label}");
                assert!(
                    answer
                        .body
                        .contains("open the address `review-bot panel` printed"),
                    "{route}: {}",
                    answer.body
                );
                assert_nothing_leaks(route, &answer);
            }
            // A wrong secret in the query is no better.
            let separator = if route.contains('?') { '&' } else { '?' };
            let answer = get(
                &address,
                &address,
                &format!("{route}{separator}token={wrong}"),
                None,
            );
            assert_eq!(answer.status, 403, "{route} with a wrong token");
            assert!(!answer.head.contains("set-cookie"), "{route}");
        }
    })
    .await;
    stop(panel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_secret_is_exchanged_for_a_cookie_and_then_every_route_answers() {
    let panel = start().await;
    let address = panel.address.clone();
    let token = panel.token.clone();
    let cookie = panel.cookie();
    let cookie_name = panel.cookie_name();
    blocking(move || {
        // The first visit: a redirect to the same address without the secret, and the cookie.
        let answer = get(&address, &address, &format!("/?token={token}"), None);
        assert_eq!(answer.status, 303, "{}", answer.body);
        assert!(
            answer.head.contains("\r\nlocation: /\r\n"),
            "{}",
            answer.head
        );
        assert!(
            answer.head.contains(&format!(
                "set-cookie: {cookie_name}={token}; httponly; samesite=strict; path=/"
            )),
            "{}",
            answer.head
        );
        assert!(!answer.body.contains(&token));
        // A browser that has the cookie already is still sent on without the secret.
        let answer = get(
            &address,
            &address,
            &format!("/?token={token}"),
            Some(&cookie),
        );
        assert_eq!(answer.status, 303);
        // Deep links keep the rest of their query.
        let answer = get(
            &address,
            &address,
            &format!("/file?path=src/auth.rs&token={token}&line=2"),
            None,
        );
        assert_eq!(answer.status, 303);
        assert!(
            answer
                .head
                .contains("\r\nlocation: /file?path=src/auth.rs&line=2\r\n"),
            "{}",
            answer.head
        );
        // A scheme-relative path is no open redirect.
        let answer = get(
            &address,
            &address,
            &format!("//evil.example/?token={token}"),
            None,
        );
        assert!(
            answer.head.contains("\r\nlocation: /\r\n"),
            "{}",
            answer.head
        );

        for route in ROUTES {
            let answer = get(&address, &address, route, Some(&cookie));
            let expected = match *route {
                "/no-such-route" | "/api/file?path=.env" | "/file?path=.git/config" => 404,
                _ => 200,
            };
            assert_eq!(answer.status, expected, "{route}: {}", answer.body);
        }
        let page = get(&address, &address, "/", Some(&cookie));
        assert!(page.body.contains("Review"), "{}", page.body);
        let events = get(&address, &address, "/events", Some(&cookie));
        assert!(events.body.contains("event: version"), "{}", events.body);
        // The panel's own loopback names work with the cookie.
        let port = address.rsplit(':').next().unwrap();
        let answer = get(&address, &format!("localhost:{port}"), "/", Some(&cookie));
        assert_eq!(answer.status, 200);
    })
    .await;
    stop(panel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_file_view_opens_only_files_the_review_references() {
    let panel = start().await;
    let address = panel.address.clone();
    let cookie = panel.cookie();
    blocking(move || {
        let answer = get(
            &address,
            &address,
            "/api/file?path=src/auth.rs",
            Some(&cookie),
        );
        assert_eq!(answer.status, 200);
        assert!(answer.body.contains("login"), "{}", answer.body);
        for path in [
            ".env",
            ".git/config",
            "./.env",
            "src/../.env",
            "%2Eenv",
            "src/auth.rs/../../.env",
            "/etc/passwd",
            "src//auth.rs",
            "./src/auth.rs",
        ] {
            for route in ["/api/file", "/file"] {
                let answer = get(
                    &address,
                    &address,
                    &format!("{route}?v=1&path={path}"),
                    Some(&cookie),
                );
                assert_eq!(answer.status, 404, "{route} {path}: {}", answer.body);
                assert!(
                    answer
                        .body
                        .contains("is not a file this version of the review references"),
                    "{route} {path}: {}",
                    answer.body
                );
                assert_nothing_leaks(path, &answer);
            }
        }
        // Referenced, but a link out of the base: refused, and nothing read.
        let answer = get(
            &address,
            &address,
            "/api/file?path=escape.txt",
            Some(&cookie),
        );
        assert_eq!(answer.status, 403, "{}", answer.body);
        assert_nothing_leaks("escape.txt", &answer);
    })
    .await;
    stop(panel).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_host_is_refused_even_with_the_secret() {
    let panel = start().await;
    let address = panel.address.clone();
    let token = panel.token.clone();
    let cookie = panel.cookie();
    blocking(move || {
        let port = address.rsplit(':').next().unwrap();
        for host in [
            "attacker.example".to_owned(),
            format!("attacker.example:{port}"),
            format!("127.0.0.1.attacker.example:{port}"),
            format!("127.0.0.2:{port}"),
            "127.0.0.1:1".to_owned(),
        ] {
            for route in ROUTES {
                let answer = get(&address, &host, route, Some(&cookie));
                assert_eq!(answer.status, 403, "{host} {route}");
                assert_nothing_leaks(route, &answer);
            }
            let answer = get(&address, &host, &format!("/?token={token}"), None);
            assert_eq!(answer.status, 403, "{host}");
            assert!(!answer.head.contains("set-cookie"), "{host}");
        }
    })
    .await;
    stop(panel).await;
}
