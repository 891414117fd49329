//! Delivering a presented review: to a review panel over a Unix socket, or to
//! a markdown file when no panel listens.
//!
//! # The review-panel protocol (version 1)
//!
//! A panel (an editor extension, or any program) listens on a Unix stream
//! socket and names it to the MCP server in `REVIEW_BOT_REVIEW_PANEL_SOCKET`.
//! For each `present_review` call the server connects, writes **one** JSON
//! object followed by `\n`, and waits for **one** JSON line back:
//!
//! ```json
//! {"protocol":"review-bot.review-panel/1","kind":"present_review","mode":"update-section",
//!  "section":"Error Handling","baseUri":"/work/repo","content":"…the call's markdown…",
//!  "document":"…the whole review after applying the call…"}
//! ```
//!
//! ```json
//! {"ok":true}
//! {"ok":false,"error":"why the panel refused"}
//! ```
//!
//! The server owns the document and applies the modes itself
//! ([`crate::document`]), so a panel can simply render `document`; `mode`,
//! `section` and `content` are there for panels that animate changes. File
//! references are relative to `baseUri`. The connection is closed after the
//! acknowledgement; the whole exchange is bounded by a timeout.
//!
//! When no socket is named, or nothing listens on it, the whole document is
//! written to `review.md` in the run directory instead (atomically: a
//! temporary file renamed over it) and the tool says where.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::UnixStream;

/// The protocol name and version sent in every message.
pub const PROTOCOL: &str = "review-bot.review-panel/1";

/// How long a panel may take to accept, read and acknowledge a review.
pub const PANEL_TIMEOUT: Duration = Duration::from_secs(10);

/// The file name of the fallback in the run directory.
pub const REVIEW_FILE_NAME: &str = "review.md";

/// The longest acknowledgement line we read from a panel.
const MAX_ACK_BYTES: u64 = 64 * 1024;

/// One `present_review` call, as sent to a panel.
#[derive(Debug, Clone, Serialize)]
pub struct PanelMessage<'a> {
    /// Always [`PROTOCOL`].
    pub protocol: &'static str,
    /// Always `present_review`.
    pub kind: &'static str,
    /// `replace`, `update-section` or `append`.
    pub mode: &'a str,
    /// The section for `update-section`.
    pub section: Option<&'a str>,
    /// Where relative file references resolve.
    #[serde(rename = "baseUri")]
    pub base_uri: &'a str,
    /// The markdown of this call.
    pub content: &'a str,
    /// The whole review after this call.
    pub document: &'a str,
}

#[derive(Debug, Deserialize)]
struct Acknowledgement {
    ok: bool,
    #[serde(default)]
    error: Option<String>,
}

/// Where the review went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// A panel acknowledged it.
    Panel {
        /// The panel's socket.
        socket: PathBuf,
    },
    /// No panel listened; the document was written to a file.
    File {
        /// The file written.
        path: PathBuf,
        /// Why no panel got it, for the tool's answer.
        reason: String,
    },
}

/// A panel was reached but the exchange failed. The document was still saved
/// to `saved_to` when that was possible.
#[derive(Debug, thiserror::Error)]
#[error("Failed to communicate with the review panel on {socket}: {reason}{}", saved_note(.saved_to.as_deref()))]
pub struct PanelError {
    /// The panel's socket.
    pub socket: PathBuf,
    /// What went wrong.
    pub reason: String,
    /// Where the document was saved instead, if it could be.
    pub saved_to: Option<PathBuf>,
}

fn saved_note(saved_to: Option<&Path>) -> String {
    saved_to.map_or_else(
        || " (the review could not be saved to a file either)".to_owned(),
        |path| format!(" (the review was saved to {} instead)", path.display()),
    )
}

/// Where `present_review` sends its output.
#[derive(Debug, Clone)]
pub struct PanelSettings {
    /// The panel's socket, from `REVIEW_BOT_REVIEW_PANEL_SOCKET`.
    pub socket: Option<PathBuf>,
    /// The run directory the fallback file goes to.
    pub run_directory: PathBuf,
}

impl PanelSettings {
    /// The fallback file.
    pub fn review_file(&self) -> PathBuf {
        self.run_directory.join(REVIEW_FILE_NAME)
    }

    /// Sends the message to the panel if one listens, else writes the document to the review file.
    pub async fn deliver(&self, message: &PanelMessage<'_>) -> Result<Delivery, PanelError> {
        let Some(socket) = &self.socket else {
            return self
                .write_file(
                    message.document,
                    "no review panel socket is configured (REVIEW_BOT_REVIEW_PANEL_SOCKET)",
                )
                .await;
        };
        let stream = match tokio::time::timeout(PANEL_TIMEOUT, UnixStream::connect(socket)).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(error)) => {
                let reason = format!(
                    "no review panel is listening on {} ({error})",
                    socket.display()
                );
                return self.write_file(message.document, &reason).await;
            }
            Err(_) => {
                let reason = format!(
                    "the review panel on {} did not accept the connection in time",
                    socket.display()
                );
                return self.write_file(message.document, &reason).await;
            }
        };
        match tokio::time::timeout(PANEL_TIMEOUT, exchange(stream, message)).await {
            Ok(Ok(())) => Ok(Delivery::Panel {
                socket: socket.clone(),
            }),
            Ok(Err(reason)) => Err(self.failed(socket, reason, message.document).await),
            Err(_) => {
                let reason = format!(
                    "no acknowledgement within {} seconds",
                    PANEL_TIMEOUT.as_secs()
                );
                Err(self.failed(socket, reason, message.document).await)
            }
        }
    }

    async fn failed(&self, socket: &Path, reason: String, document: &str) -> PanelError {
        let path = self.review_file();
        let saved_to = write_atomically(&path, document).await.ok().map(|()| path);
        PanelError {
            socket: socket.to_owned(),
            reason,
            saved_to,
        }
    }

    async fn write_file(&self, document: &str, reason: &str) -> Result<Delivery, PanelError> {
        let path = self.review_file();
        match write_atomically(&path, document).await {
            Ok(()) => Ok(Delivery::File {
                path,
                reason: reason.to_owned(),
            }),
            Err(error) => Err(PanelError {
                socket: self.socket.clone().unwrap_or_default(),
                reason: format!("{reason}, and writing {} failed: {error}", path.display()),
                saved_to: None,
            }),
        }
    }
}

async fn exchange(stream: UnixStream, message: &PanelMessage<'_>) -> Result<(), String> {
    let mut line = serde_json::to_vec(message).expect("a panel message always serialises");
    line.push(b'\n');
    let (reader, mut writer) = stream.into_split();
    writer
        .write_all(&line)
        .await
        .map_err(|error| format!("sending the review failed: {error}"))?;
    writer
        .flush()
        .await
        .map_err(|error| format!("sending the review failed: {error}"))?;
    let mut reply = String::new();
    let mut reader = BufReader::new(tokio::io::AsyncReadExt::take(reader, MAX_ACK_BYTES));
    reader
        .read_line(&mut reply)
        .await
        .map_err(|error| format!("reading the acknowledgement failed: {error}"))?;
    if reply.trim().is_empty() {
        return Err("the panel closed the connection without an acknowledgement".to_owned());
    }
    let acknowledgement: Acknowledgement = serde_json::from_str(reply.trim())
        .map_err(|error| format!("the acknowledgement is not {{\"ok\":…}} JSON ({error})"))?;
    if acknowledgement.ok {
        Ok(())
    } else {
        Err(format!(
            "the panel refused the review: {}",
            acknowledgement
                .error
                .as_deref()
                .unwrap_or("no reason given")
        ))
    }
}

/// Writes `text` to `path` through a temporary file in the same directory,
/// so a reader never sees half a document.
async fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let directory = path.parent().unwrap_or(Path::new("."));
    tokio::fs::create_dir_all(directory).await?;
    let temporary = directory.join(format!(".{REVIEW_FILE_NAME}.{}.tmp", std::process::id()));
    tokio::fs::write(&temporary, text).await?;
    tokio::fs::rename(&temporary, path).await
}

#[cfg(test)]
mod tests {
    use tokio::net::UnixListener;

    use super::*;

    fn message(document: &str) -> PanelMessage<'_> {
        PanelMessage {
            protocol: PROTOCOL,
            kind: "present_review",
            mode: "replace",
            section: None,
            base_uri: "/repo",
            content: document,
            document,
        }
    }

    /// A panel that answers each connection with `answer` (or closes at once when `None`).
    fn panel(socket: &Path, answer: Option<&'static str>) -> tokio::task::JoinHandle<Vec<String>> {
        let listener = UnixListener::bind(socket).unwrap();
        tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (reader, mut writer) = stream.into_split();
            let mut line = String::new();
            BufReader::new(reader).read_line(&mut line).await.unwrap();
            if let Some(answer) = answer {
                writer.write_all(answer.as_bytes()).await.unwrap();
            }
            vec![line]
        })
    }

    #[tokio::test]
    async fn a_listening_panel_gets_one_json_line_and_acknowledges() {
        let directory = tempfile::tempdir().unwrap();
        let socket = directory.path().join("panel.sock");
        let received = panel(&socket, Some("{\"ok\":true}\n"));
        let settings = PanelSettings {
            socket: Some(socket.clone()),
            run_directory: directory.path().to_owned(),
        };
        let delivery = settings.deliver(&message("# Review\n")).await.unwrap();
        assert_eq!(delivery, Delivery::Panel { socket });
        let lines = received.await.unwrap();
        let sent: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(sent["protocol"], PROTOCOL);
        assert_eq!(sent["document"], "# Review\n");
        assert_eq!(sent["baseUri"], "/repo");
        assert!(!settings.review_file().exists());
    }

    #[tokio::test]
    async fn without_a_panel_the_review_goes_to_a_file() {
        let directory = tempfile::tempdir().unwrap();
        let settings = PanelSettings {
            socket: Some(directory.path().join("nobody.sock")),
            run_directory: directory.path().join("run"),
        };
        let delivery = settings.deliver(&message("# Review\n")).await.unwrap();
        let Delivery::File { path, reason } = delivery else {
            panic!("expected a file delivery");
        };
        assert_eq!(path, directory.path().join("run").join(REVIEW_FILE_NAME));
        assert!(reason.contains("no review panel is listening"), "{reason}");
        assert_eq!(std::fs::read_to_string(path).unwrap(), "# Review\n");
    }

    #[tokio::test]
    async fn a_panel_that_refuses_or_hangs_up_is_an_error_and_the_review_is_saved() {
        for (answer, expected) in [
            (
                Some("{\"ok\":false,\"error\":\"busy\"}\n"),
                "refused the review: busy",
            ),
            (None, "without an acknowledgement"),
            (Some("yes\n"), "not {\"ok\":…} JSON"),
        ] {
            let directory = tempfile::tempdir().unwrap();
            let socket = directory.path().join("panel.sock");
            let _panel = panel(&socket, answer);
            let settings = PanelSettings {
                socket: Some(socket),
                run_directory: directory.path().to_owned(),
            };
            let error = settings.deliver(&message("# R\n")).await.unwrap_err();
            let text = error.to_string();
            assert!(
                text.starts_with("Failed to communicate with the review panel"),
                "{text}"
            );
            assert!(text.contains(expected), "{text}");
            assert!(text.contains("saved to"), "{text}");
            assert_eq!(
                std::fs::read_to_string(settings.review_file()).unwrap(),
                "# R\n"
            );
        }
    }
}
