//! `review-bot panel` from outside: the real binary, its socket, and its page in
//! real headless Chromium (Debian's `chromium` + `chromium-driver`, driven over
//! `WebDriver` with fantoccini). Every wait is for an event — a line on standard
//! output, a DOM condition, a process exit — never a fixed sleep.
//!
//! Chromium missing: the browser tests print why and pass, unless
//! `REVIEW_BOT_REQUIRE_ALL_TEST_DEPS=1`, when they fail (as the CLI tests do).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use review_mcp::document::{PresentMode, apply};
use review_mcp::panel::{Delivery, PROTOCOL, PanelMessage, PanelSettings};
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long any one awaited event may take on a loaded two-core machine.
const DEADLINE: Duration = Duration::from_secs(90);

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

// --- The panel process -------------------------------------------------------

/// A running `review-bot panel`, killed when dropped.
struct PanelProcess {
    child: Child,
    url: String,
    socket: PathBuf,
}

impl PanelProcess {
    /// Starts a panel on `socket` and waits for it to print its URL.
    fn start(socket: &Path) -> Self {
        Self::start_with(socket, &[], &[])
    }

    fn start_with(socket: &Path, arguments: &[&str], environment: &[(&str, &Path)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_review-bot"));
        command.arg("panel").args(arguments);
        if !socket.as_os_str().is_empty() {
            command.arg("--socket").arg(socket);
        }
        for (name, value) in environment {
            command.env(name, value);
        }
        let mut child = command
            .env_remove("REVIEW_BOT_PANEL_SOCKET")
            .env_remove("REVIEW_BOT_PANEL_LISTEN")
            .env("REVIEW_BOT_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("review-bot runs");
        let stdout = child.stdout.take().unwrap();
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let url_line = receiver
            .recv_timeout(DEADLINE)
            .expect("the panel prints its URL");
        let url = url_line
            .strip_prefix("review panel: ")
            .unwrap_or_else(|| panic!("unexpected first line: {url_line}"))
            .to_owned();
        let socket_line = receiver
            .recv_timeout(DEADLINE)
            .expect("the panel prints its socket");
        let socket = PathBuf::from(socket_line.strip_prefix("socket: ").unwrap());
        Self { child, url, socket }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `127.0.0.1:PORT`, from the printed URL.
    fn address(&self) -> &str {
        let rest = self.url.strip_prefix("http://").unwrap();
        &rest[..rest.find('/').unwrap()]
    }

    /// The cookie the panel sets for its secret.
    fn cookie(&self) -> String {
        let port = self.address().rsplit(':').next().unwrap();
        let token = self.url.split_once("?token=").unwrap().1;
        format!("review-panel-{port}={token}")
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the process to exit (after a signal).
    fn wait(&mut self) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < DEADLINE, "the panel did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for PanelProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends one `present_review` call with the MCP server's own client, as
/// `review-bot mcp` does; the panel must acknowledge it.
async fn present(
    socket: &Path,
    mode: &str,
    section: Option<&str>,
    base: &Path,
    content: &str,
    document: &str,
) {
    let run = tempfile::tempdir().unwrap();
    let settings = PanelSettings::new(Some(socket.to_owned()), Some(run.path().to_owned()));
    let base = base.display().to_string();
    let message = PanelMessage {
        protocol: PROTOCOL,
        kind: "present_review",
        mode,
        section,
        base_uri: &base,
        content,
        document,
    };
    let delivery = settings
        .deliver(&message)
        .await
        .expect("the panel acknowledges");
    assert!(matches!(delivery, Delivery::Panel { .. }), "{delivery:?}");
}

async fn replace(panel: &PanelProcess, base: &Path, document: &str) {
    present(&panel.socket, "replace", None, base, document, document).await;
}

// --- The browser -------------------------------------------------------------

/// `None` (after saying why) when Chromium is not installed and not required.
fn chromium_installed() -> bool {
    let installed = Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists();
    if !installed {
        let message = format!(
            "headless Chromium is not installed ({CHROMIUM}, {CHROMEDRIVER}); run scripts/install-test-deps"
        );
        assert!(
            std::env::var("REVIEW_BOT_REQUIRE_ALL_TEST_DEPS").as_deref() != Ok("1"),
            "{message}"
        );
        eprintln!("skipping: {message}");
    }
    installed
}

/// Headless Chromium driven through its own chromedriver, in a fresh profile.
struct Browser {
    client: Client,
    driver: Child,
    _profile: TempDir,
}

impl Browser {
    async fn start() -> Option<Self> {
        if !chromium_installed() {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver runs");
        let mut stdout = BufReader::new(driver.stdout.take().unwrap());
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "chromedriver exited"
            );
            if line.contains("started successfully") {
                break;
            }
        }
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let profile = tempfile::tempdir().unwrap();
        let arguments = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--window-size=1400,900".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let mut capabilities = serde_json::Map::new();
        capabilities.insert(
            "goog:chromeOptions".to_owned(),
            json!({"binary": CHROMIUM, "args": arguments}),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a Chromium session starts");
        client
            .update_timeouts(fantoccini::wd::TimeoutConfiguration::new(
                Some(DEADLINE),
                Some(DEADLINE),
                None,
            ))
            .await
            .unwrap();
        Some(Self {
            client,
            driver,
            _profile: profile,
        })
    }

    /// Opens the URL the panel printed: its secret becomes a cookie the
    /// page's script cannot read, and leaves the address bar.
    async fn open(&self, panel: &PanelProcess) {
        assert!(panel.url.contains("/?token="), "{}", panel.url);
        self.client.goto(&panel.url).await.unwrap();
        self.wait_for(
            "the page is live",
            "document.getElementById('connection').dataset.state === 'live'",
        )
        .await;
        assert_eq!(self.value("location.search").await, json!(""));
        assert_eq!(self.value("document.cookie").await, json!(""));
    }

    /// Waits until `condition` (a JavaScript expression) holds in the page.
    async fn wait_for(&self, what: &str, condition: &str) {
        let script = format!(
            "const done = arguments[arguments.length - 1];
             const deadline = performance.now() + 20000;
             const check = () => {{
               let ok = false;
               try {{ ok = Boolean({condition}); }} catch (error) {{ ok = false; }}
               if (ok) done(true); else if (performance.now() > deadline) done(false);
               else requestAnimationFrame(check);
             }};
             check();"
        );
        let start = Instant::now();
        loop {
            let result = self.client.execute_async(&script, Vec::new()).await;
            if matches!(result, Ok(Value::Bool(true))) {
                return;
            }
            assert!(
                start.elapsed() < DEADLINE,
                "timed out waiting for {what} ({condition}): {result:?}"
            );
        }
    }

    async fn value(&self, expression: &str) -> Value {
        self.client
            .execute(&format!("return {expression};"), Vec::new())
            .await
            .unwrap()
    }

    async fn click(&self, selector: &str) {
        self.client
            .find(Locator::Css(selector))
            .await
            .unwrap_or_else(|error| panic!("{selector}: {error}"))
            .click()
            .await
            .unwrap();
    }

    async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A checkout with `src/auth.ts` (60 lines; `validateUser` on line 23) and a secret beside it.
fn checkout() -> (TempDir, PathBuf) {
    let directory = tempfile::tempdir().unwrap();
    let base = directory.path().join("repo");
    std::fs::create_dir_all(base.join("src/models")).unwrap();
    let mut auth = String::new();
    for line in 1..=60 {
        if line == 23 {
            auth.push_str("export function validateUser(user: User): boolean {\n");
        } else {
            let _ = writeln!(auth, "const line{line} = {line}; // line {line}");
        }
    }
    std::fs::write(base.join("src/auth.ts"), auth).unwrap();
    std::fs::write(
        base.join("src/models/user.ts"),
        "export interface User {\n  name: string;\n}\n",
    )
    .unwrap();
    std::fs::write(directory.path().join("secret.txt"), "top secret\n").unwrap();
    std::os::unix::fs::symlink(directory.path().join("secret.txt"), base.join("escape.txt"))
        .unwrap();
    let base = base.canonicalize().unwrap();
    (directory, base)
}

// --- Tests ---------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
#[allow(
    clippy::too_many_lines,
    reason = "one story told in order: present, update, scroll, history"
)]
async fn update_section_changes_only_that_section_live_and_keeps_the_scroll_position() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (_directory, base) = checkout();
    let socket_directory = tempfile::tempdir().unwrap();
    let panel = PanelProcess::start(&socket_directory.path().join("panel.sock"));
    browser.open(&panel).await;

    let filler = "Some words to read.\n\n".repeat(40);
    let first = format!(
        "# Review\n\nIntro.\n\n## Risks\n\nNone yet.\n\n{filler}## Error Handling\n\nOld text.\n\n{filler}## Tests\n\nMissing.\n\n{filler}"
    );
    replace(&panel, &base, &first).await;
    browser
        .wait_for("version 1", "document.body.dataset.version === '1'")
        .await;
    assert_eq!(
        browser
            .value("document.querySelectorAll('#content .changed').length")
            .await,
        json!(0)
    );

    // Tag the live nodes, and scroll so that "Tests" is at the top of the view.
    browser
        .value("(document.querySelectorAll('#content section').forEach(s => s.__kept = true), document.getElementById('s-tests').scrollIntoView(), 0)")
        .await;
    let tests_top = browser
        .value("document.getElementById('s-tests').getBoundingClientRect().top")
        .await;

    let content = format!("## Error Handling\n\nNew text, much longer.\n\n{filler}");
    let (second, _) = apply(
        &first,
        PresentMode::UpdateSection,
        &content,
        "Error Handling",
    );
    present(
        &panel.socket,
        "update-section",
        Some("Error Handling"),
        &base,
        &content,
        &second,
    )
    .await;
    browser
        .wait_for("version 2", "document.body.dataset.version === '2'")
        .await;

    assert_eq!(
        browser.value("document.body.dataset.changed").await,
        json!("s-error-handling")
    );
    let section = |key: &str| format!("document.getElementById('{key}')");
    assert_eq!(
        browser
            .value(&format!("{}.__kept === true", section("s-error-handling")))
            .await,
        json!(false)
    );
    assert_eq!(
        browser
            .value(&format!(
                "{}.classList.contains('changed')",
                section("s-error-handling")
            ))
            .await,
        json!(true)
    );
    assert!(
        browser
            .value(&format!("{}.textContent", section("s-error-handling")))
            .await
            .as_str()
            .unwrap()
            .contains("New text")
    );
    for key in ["s-review", "s-risks", "s-tests"] {
        assert_eq!(
            browser
                .value(&format!("{}.__kept === true", section(key)))
                .await,
            json!(true),
            "{key} was replaced"
        );
        assert_eq!(
            browser
                .value(&format!("{}.classList.contains('changed')", section(key)))
                .await,
            json!(false),
            "{key}"
        );
    }
    // The section above grew, yet what the reader was looking at did not move.
    let tests_top_after = browser
        .value("document.getElementById('s-tests').getBoundingClientRect().top")
        .await;
    assert!(
        (tests_top.as_f64().unwrap() - tests_top_after.as_f64().unwrap()).abs() <= 2.0,
        "{tests_top} → {tests_top_after}"
    );

    // The earlier version is one click away, and back.
    browser
        .wait_for(
            "two history entries",
            "document.querySelectorAll('#history li').length === 2",
        )
        .await;
    browser.click("#history li[data-version='1'] button").await;
    browser
        .wait_for(
            "version 1 on screen",
            "document.body.dataset.viewing === '1'",
        )
        .await;
    assert!(
        browser
            .value("document.getElementById('s-error-handling').textContent")
            .await
            .as_str()
            .unwrap()
            .contains("Old text")
    );
    browser.click("#back-to-latest").await;
    browser.wait_for("the latest again", "!('viewing' in document.body.dataset) && document.getElementById('s-error-handling').textContent.includes('New text')").await;

    browser.close().await;
}

#[tokio::test(flavor = "multi_thread")]
#[allow(
    clippy::too_many_lines,
    reason = "one table of reference forms, checked in order"
)]
async fn every_reference_form_shows_the_right_file_and_line() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (_directory, base) = checkout();
    let socket_directory = tempfile::tempdir().unwrap();
    let panel = PanelProcess::start(&socket_directory.path().join("panel.sock"));
    browser.open(&panel).await;

    let document = "# Authentication\n\nAdded login ([`src/auth.ts:23`][]) and the user model ([`src/models/user.ts:2`][]).\n\n\
        | Form | Link |\n|---|---|\n\
        | file | [auth.ts](src/auth.ts) |\n\
        | line | [auth.ts:42](src/auth.ts#L42) |\n\
        | range | [auth.ts:42-50](src/auth.ts#L42-L50) |\n\
        | pattern | [validateUser](src/auth.ts?validateUser) |\n\
        | no match | [nothing](src/auth.ts?noSuchThing) |\n\
        | missing | [gone.ts](src/gone.ts) |\n\
        | past the end | [auth.ts:999](src/auth.ts#L999) |\n\n\
        - [x] tests pass\n- [ ] docs\n\n```rust\nfn main() { println!(\"hi\"); }\n```\n";
    replace(&panel, &base, document).await;
    browser
        .wait_for("version 1", "document.body.dataset.version === '1'")
        .await;

    // (selector, path shown, first marked line, last marked line)
    let cases = [
        (
            "a.file-ref[href$='path=src/auth.ts&line=23']",
            "src/auth.ts",
            Some(23),
            Some(23),
        ),
        (
            "a.file-ref[href$='path=src/models/user.ts&line=2']",
            "src/models/user.ts",
            Some(2),
            Some(2),
        ),
        (
            "a.file-ref[href$='path=src/auth.ts']",
            "src/auth.ts",
            None,
            None,
        ),
        (
            "a.file-ref[href$='path=src/auth.ts&line=42']",
            "src/auth.ts",
            Some(42),
            Some(42),
        ),
        (
            "a.file-ref[href$='line=42&end=50']",
            "src/auth.ts",
            Some(42),
            Some(50),
        ),
        (
            "a.file-ref[href$='pattern=validateUser']",
            "src/auth.ts",
            Some(23),
            Some(23),
        ),
    ];
    for (selector, path, start, end) in cases {
        browser
            .value("(document.getElementById('file-pane').dataset.state = 'clicked', 0)")
            .await;
        browser.click(selector).await;
        browser
            .wait_for(
                selector,
                "['shown', 'notice'].includes(document.getElementById('file-pane').dataset.state)",
            )
            .await;
        assert_eq!(
            browser
                .value("document.getElementById('file-path').textContent")
                .await,
            json!(path),
            "{selector}"
        );
        let marked = browser
            .value("[...document.querySelectorAll('#file-gutter .marked')].map(s => Number(s.dataset.line))")
            .await;
        let expected: Vec<u32> = match (start, end) {
            (Some(start), Some(end)) => (start..=end).collect(),
            _ => Vec::new(),
        };
        assert_eq!(marked, json!(expected), "{selector}");
        if let Some(start) = start {
            // The marked line is the file's line, and it is in view.
            let line = browser
                .value(&format!(
                    "document.getElementById('file-code').textContent.split('\\n')[{}]",
                    start - 1
                ))
                .await;
            let text = std::fs::read_to_string(base.join(path)).unwrap();
            assert_eq!(
                line,
                json!(text.lines().nth(start as usize - 1).unwrap()),
                "{selector}"
            );
            let visible = browser
                .value(&format!(
                    "(() => {{ const line = document.getElementById('L{start}').getBoundingClientRect(); \
                     const body = document.getElementById('file-body').getBoundingClientRect(); \
                     return line.top >= body.top && line.bottom <= body.bottom; }})()"
                ))
                .await;
            assert_eq!(
                visible,
                json!(true),
                "{selector}: the marked line is not in view"
            );
            let editor = browser
                .value("document.getElementById('file-editor').getAttribute('href')")
                .await;
            assert_eq!(
                editor,
                json!(format!(
                    "vscode://file{}:{start}",
                    base.join(path).display()
                )),
                "{selector}"
            );
        }
    }

    // A pattern with no match says so plainly.
    browser
        .click("a.file-ref[href$='pattern=noSuchThing']")
        .await;
    browser
        .wait_for(
            "the notice",
            "document.getElementById('file-pane').dataset.state === 'notice'",
        )
        .await;
    let notice = browser
        .value("document.getElementById('file-message').textContent")
        .await;
    assert!(
        notice
            .as_str()
            .unwrap()
            .contains("“noSuchThing” not found in src/auth.ts"),
        "{notice}"
    );

    // Missing files and lines past the end are marked broken, with the reason.
    let broken = browser
        .value("[...document.querySelectorAll('a.file-ref.broken')].map(a => a.title)")
        .await;
    assert_eq!(
        broken,
        json!([
            "no such file: src/gone.ts",
            "src/auth.ts has 60 lines; line 999 is past its end"
        ])
    );
    browser.click("a.file-ref[href$='path=src/gone.ts']").await;
    browser
        .wait_for(
            "the error",
            "document.getElementById('file-pane').dataset.state === 'error'",
        )
        .await;

    // GitHub-flavoured Markdown: a table, a task list, highlighted code.
    assert_eq!(
        browser
            .value("document.querySelectorAll('#content table tr').length")
            .await,
        json!(8)
    );
    assert_eq!(
        browser
            .value("document.querySelectorAll('#content input[type=checkbox]').length")
            .await,
        json!(2)
    );
    assert_eq!(
        browser
            .value("document.querySelectorAll('#content pre.code span[class^=hl-]').length > 0")
            .await,
        json!(true)
    );

    if let Ok(path) = std::env::var("REVIEW_BOT_PANEL_SCREENSHOT") {
        browser.click("a.file-ref[href$='line=42&end=50']").await;
        browser
            .wait_for(
                "the range",
                "document.getElementById('file-pane').dataset.start === '42'",
            )
            .await;
        std::fs::write(path, browser.client.screenshot().await.unwrap()).unwrap();
    }
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn untrusted_content_runs_nothing() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (_directory, base) = checkout();
    let socket_directory = tempfile::tempdir().unwrap();
    let panel = PanelProcess::start(&socket_directory.path().join("panel.sock"));
    browser.open(&panel).await;

    let document = "# Review\n\n<script>window.pwned = 'script';</script>\n\n\
        <img src=x onerror=\"window.pwned = 'onerror'\">\n\n\
        Inline <b onmouseover=\"window.pwned = 'inline'\">bold</b>.\n\n\
        [click me](javascript:window.pwned='link') and [me too](JaVaScRiPt:window.pwned='link2')\n\n\
        ![image](javascript:window.pwned='image')\n";
    replace(&panel, &base, document).await;
    browser
        .wait_for("version 1", "document.body.dataset.version === '1'")
        .await;
    for link in browser
        .client
        .find_all(Locator::Css("#content a"))
        .await
        .unwrap()
    {
        link.click().await.unwrap();
    }
    // Give any handler a chance: one more round trip through the page's event loop.
    browser.wait_for("a frame", "true").await;
    assert_eq!(
        browser.value("typeof window.pwned").await,
        json!("undefined")
    );
    assert_eq!(browser.value("document.querySelectorAll('#content script, #content [onerror], #content [onmouseover]').length").await, json!(0));
    let targets = browser
        .value("[...document.querySelectorAll('#content a, #content img')].map(e => (e.getAttribute('href') || '') + (e.getAttribute('src') || ''))")
        .await;
    for target in targets.as_array().unwrap() {
        assert!(
            !target
                .as_str()
                .unwrap()
                .to_lowercase()
                .contains("javascript"),
            "{targets}"
        );
    }
    // The raw HTML is shown as text, so the reader sees what the agent wrote.
    assert!(
        browser
            .value("document.getElementById('content').textContent")
            .await
            .as_str()
            .unwrap()
            .contains("<script>window.pwned")
    );
    // Still on the panel.
    assert_eq!(browser.value("location.pathname").await, json!("/"));
    browser.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn files_outside_the_base_are_refused() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (_directory, base) = checkout();
    let socket_directory = tempfile::tempdir().unwrap();
    let panel = PanelProcess::start(&socket_directory.path().join("panel.sock"));
    browser.open(&panel).await;

    let document = "# Review\n\n[passwd](../../etc/passwd) [absolute](/etc/passwd) [link](escape.txt) [ok](src/auth.ts)\n";
    replace(&panel, &base, document).await;
    browser
        .wait_for("version 1", "document.body.dataset.version === '1'")
        .await;
    let titles = browser
        .value("[...document.querySelectorAll('a.file-ref.broken')].map(a => a.title)")
        .await;
    assert_eq!(
        titles,
        json!([
            "refused: `..` is not allowed in a file reference",
            "refused: /etc/passwd is outside the review's base directory",
            "refused: a symbolic link leads outside the review's base directory",
        ])
    );
    for selector in [
        "a[href$='path=../../etc/passwd']",
        "a[href$='path=/etc/passwd']",
        "a[href$='path=escape.txt']",
    ] {
        browser
            .value("(document.getElementById('file-pane').dataset.state = 'clicked', 0)")
            .await;
        browser.click(selector).await;
        browser
            .wait_for(
                selector,
                "document.getElementById('file-pane').dataset.state === 'refused'",
            )
            .await;
        let page = browser.value("document.body.textContent").await;
        assert!(!page.as_str().unwrap().contains("root:"), "{selector}");
        assert!(!page.as_str().unwrap().contains("top secret"), "{selector}");
    }
    // Asked directly, the server refuses too: what the review references but
    // may not be shown is 403, anything it does not reference is 404.
    for (path, expected) in [
        ("../../etc/passwd", 403),
        ("/etc/passwd", 403),
        ("escape.txt", 403),
        ("src/../../secret.txt", 404),
        ("src/models/user.ts", 404),
        ("../secret.txt", 404),
    ] {
        let status = browser
            .client
            .execute_async(
                "const done = arguments[arguments.length - 1]; fetch('/api/file?v=1&path=' + encodeURIComponent(arguments[0])).then(r => done(r.status));",
                vec![json!(path)],
            )
            .await
            .unwrap();
        assert_eq!(status, json!(expected), "{path}");
    }
    browser.close().await;

    // DNS rebinding: a foreign Host or Origin is refused, even with the
    // secret; the panel's own is served, with it only.
    let address = panel.address().to_owned();
    let cookie = panel.cookie();
    let with_secret = Some(cookie.as_str());
    assert_eq!(http_status(&address, &address, None, with_secret), 200);
    assert_eq!(http_status(&address, &address, None, None), 403);
    assert_eq!(
        http_status(&address, "attacker.example:80", None, with_secret),
        403
    );
    assert_eq!(
        http_status(
            &address,
            &address,
            Some("http://attacker.example"),
            with_secret
        ),
        403
    );
    assert_eq!(
        http_status(
            &address,
            &address,
            Some(&format!("http://{address}")),
            with_secret
        ),
        200
    );
}

/// The status of `GET /` sent to `address` with the given `Host`, `Origin` and `Cookie`.
fn http_status(address: &str, host: &str, origin: Option<&str>, cookie: Option<&str>) -> u16 {
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    let origin = origin
        .map(|origin| format!("Origin: {origin}\r\n"))
        .unwrap_or_default();
    let cookie = cookie
        .map(|cookie| format!("Cookie: {cookie}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {host}\r\n{origin}{cookie}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_second_panel_on_a_live_socket_is_refused_and_a_killed_one_gives_it_back() {
    let (_directory, base) = checkout();
    let socket_directory = tempfile::tempdir().unwrap();
    let socket = socket_directory.path().join("panel.sock");
    let mut first = PanelProcess::start(&socket);
    let mode = std::fs::metadata(&socket).unwrap().permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
        0o600
    );

    let second = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .args(["panel", "--socket"])
        .arg(&socket)
        .output()
        .unwrap();
    assert!(!second.status.success());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("another review panel is already listening on"),
        "{stderr}"
    );
    assert!(stderr.contains(&socket.display().to_string()), "{stderr}");
    // The first one is unharmed.
    replace(&first, &base, "# Still here\n").await;

    // Killed with -9, it leaves its socket behind; a new panel takes it back.
    first.signal("KILL");
    first.wait();
    assert!(socket.exists());
    let mut restarted = PanelProcess::start(&socket);
    replace(&restarted, &base, "# Back\n").await;

    // SIGTERM ends it cleanly and removes the socket.
    restarted.signal("TERM");
    assert!(restarted.wait().success());
    assert!(!socket.exists());
}

/// `--open` starts `$BROWSER` with a private file that redirects to the URL:
/// the secret never appears in a process's arguments (which every local user
/// can read), and the file goes when the panel stops.
#[test]
fn open_hands_the_browser_the_secret_in_a_private_file_not_in_its_arguments() {
    use std::os::unix::fs::PermissionsExt as _;
    let directory = tempfile::tempdir().unwrap();
    let browser = directory.path().join("browser");
    std::fs::write(
        &browser,
        "#!/bin/sh
printf '%s\\n' \"$@\" > \"$0.tmp\"
cp \"$1\" \"$0.page\"
stat -c '%a' \"$1\" \"$(dirname \"$1\")\" > \"$0.mode\"
mv \"$0.tmp\" \"$0.args\"
",
    )
    .unwrap();
    std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut panel = PanelProcess::start_with(
        &directory.path().join("panel.sock"),
        &["--open"],
        &[("BROWSER", &browser)],
    );
    let arguments_file = directory.path().join("browser.args");
    let start = Instant::now();
    while !arguments_file.exists() {
        assert!(start.elapsed() < DEADLINE, "the browser was not started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let arguments = std::fs::read_to_string(&arguments_file).unwrap();
    let token = panel.url.split_once("?token=").unwrap().1.to_owned();
    assert!(!arguments.contains(&token), "{arguments}");
    let launcher = PathBuf::from(arguments.trim());
    assert!(launcher.is_absolute(), "{arguments}");
    let page = std::fs::read_to_string(directory.path().join("browser.page")).unwrap();
    assert!(
        page.contains(&format!(
            "http-equiv=\"refresh\" content=\"0;url={}\"",
            panel.url
        )),
        "{page}"
    );
    let modes = std::fs::read_to_string(directory.path().join("browser.mode")).unwrap();
    assert_eq!(modes, "600\n700\n", "the file, then its directory");
    panel.signal("TERM");
    assert!(panel.wait().success());
    assert!(
        !launcher.exists(),
        "the launcher is removed when the panel stops"
    );
    assert!(!launcher.parent().unwrap().exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_socket_is_private_and_shared_with_review_bot_mcp() {
    let runtime = tempfile::tempdir().unwrap();
    let panel =
        PanelProcess::start_with(Path::new(""), &[], &[("XDG_RUNTIME_DIR", runtime.path())]);
    assert_eq!(panel.socket, runtime.path().join("review-bot/panel.sock"));
    let directory_mode = std::fs::metadata(runtime.path().join("review-bot"))
        .unwrap()
        .permissions();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&directory_mode) & 0o777,
        0o700
    );
    drop(panel);

    // A directory made by someone else (here: too open) is refused.
    let open = tempfile::tempdir().unwrap();
    std::fs::create_dir(open.path().join("review-bot")).unwrap();
    std::fs::set_permissions(
        open.path().join("review-bot"),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_review-bot"))
        .arg("panel")
        .env("XDG_RUNTIME_DIR", open.path())
        .env_remove("REVIEW_BOT_PANEL_SOCKET")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("must be private"), "{stderr}");
}

/// The whole path: Claude Code (the pinned CLI, against the scripted model)
/// calls `present_review` on `review-bot mcp`, which finds the panel on the
/// default socket with no setting at all; the page shows the review, and
/// updates it live.
#[tokio::test(flavor = "multi_thread")]
#[allow(
    clippy::too_many_lines,
    reason = "the whole path, set up and checked in one place"
)]
async fn claude_code_presents_a_review_through_review_bot_mcp_and_the_page_shows_it() {
    use review_agent::claude::{
        ClaudeCode, ClaudeCodeRun, ClaudeCodeSettings, McpConfig, McpServerCommand,
    };
    use review_testkit::model::{ModelServer, Script, Turn};

    let Some(claude) = review_testkit::tools::claude_for_test() else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let (_directory, base) = checkout();
    let runtime = tempfile::tempdir().unwrap();
    let panel =
        PanelProcess::start_with(Path::new(""), &[], &[("XDG_RUNTIME_DIR", runtime.path())]);
    browser.open(&panel).await;

    let base_uri = base.display().to_string();
    let script = Script::new([
        Turn::tool(
            "mcp__review__present_review",
            json!({"content": "# Review\n\n## Risks\n\nNone yet.\n\n## Login\n\nSee [`src/auth.ts:23`][].\n", "baseUri": base_uri}),
        ),
        Turn::tool(
            "mcp__review__present_review",
            json!({"content": "## Risks\n\nOne: `validateUser` trusts its input.", "mode": "update-section", "section": "Risks", "baseUri": base_uri}),
        ),
        Turn::text("Presented."),
    ]);
    let model = ModelServer::start(script)
        .await
        .expect("the model server starts");
    let settings = ClaudeCodeSettings::new(claude, "claude-opus-4-6")
        .with_base_url(model.base_url())
        .with_api_key("sk-ant-scripted-model-server".into())
        .with_max_retries(0)
        .with_timeout(Duration::from_mins(3));
    let run_directory = tempfile::tempdir().unwrap();
    // No panel socket setting: only the runtime directory both sides share.
    let environment: BTreeMap<String, String> = [
        (
            "XDG_RUNTIME_DIR".to_owned(),
            runtime.path().display().to_string(),
        ),
        (
            "REVIEW_BOT_RUN_DIR".to_owned(),
            run_directory.path().display().to_string(),
        ),
    ]
    .into_iter()
    .collect();
    let server =
        McpServerCommand::review_bot(env!("CARGO_BIN_EXE_review-bot"), Vec::new(), environment);
    let run = ClaudeCodeRun::new(
        "Review the change.",
        &base,
        run_directory.path().join("claude"),
    )
    .with_mcp(McpConfig::review(server));
    let result = ClaudeCode::new(settings)
        .run(&run)
        .await
        .expect("Claude Code runs");
    assert!(result.is_success(), "the run failed: {result:?}");
    let results = model
        .requests()
        .last()
        .map(review_testkit::model::RecordedRequest::all_tool_results)
        .unwrap_or_default();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|result| !result.is_error), "{results:?}");
    assert!(
        !run_directory.path().join("review.md").exists(),
        "the review went to a file, not the panel"
    );

    browser
        .wait_for("version 2", "document.body.dataset.version === '2'")
        .await;
    assert_eq!(
        browser.value("document.body.dataset.changed").await,
        json!("s-risks")
    );
    let risks = browser
        .value("document.getElementById('s-risks').textContent")
        .await;
    assert!(
        risks
            .as_str()
            .unwrap()
            .contains("validateUser trusts its input"),
        "{risks}"
    );
    browser
        .click("a.file-ref[href$='path=src/auth.ts&line=23']")
        .await;
    browser
        .wait_for(
            "the file",
            "document.getElementById('file-pane').dataset.state === 'shown'",
        )
        .await;
    assert_eq!(
        browser.value("[...document.querySelectorAll('#file-gutter .marked')].map(s => Number(s.dataset.line))").await,
        json!([23])
    );
    browser.close().await;
}
