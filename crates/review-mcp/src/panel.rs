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
//! temporary file with a random name, created exclusively, renamed over it, so
//! a link planted at either name is replaced, never followed) and the tool
//! says where. Without a run directory the server makes a private one (mode
//! 0700, random name, kept after exit so the review can be read) on first use.
//!
//! # The default socket
//!
//! `review-bot panel` and `review-bot mcp` agree on one socket per user when
//! none is configured ([`default_socket_path`]):
//! `$XDG_RUNTIME_DIR/review-bot/panel.sock`, else
//! `<temp dir>/review-bot-<uid>/panel.sock`. The directory must be ours, a
//! real directory (not a link) and private (0700): the panel creates it so
//! ([`prepare_socket_directory`]) and refuses one that is not, and the MCP
//! server checks it before connecting ([`check_socket_directory`]), so
//! another user who made `/tmp/review-bot-<uid>` first receives nothing.

use std::io::{self, Write as _};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
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

/// The socket's file name in the default directory.
pub const SOCKET_FILE_NAME: &str = "panel.sock";

/// The socket `review-bot panel` listens on and `review-bot mcp` sends to
/// when none is configured: `$XDG_RUNTIME_DIR/review-bot/panel.sock`, else
/// `<temp dir>/review-bot-<uid>/panel.sock`.
pub fn default_socket_path() -> PathBuf {
    default_socket_path_in(
        std::env::var_os("XDG_RUNTIME_DIR"),
        &std::env::temp_dir(),
        nix::unistd::Uid::effective().as_raw(),
    )
}

/// [`default_socket_path`] from its inputs.
pub fn default_socket_path_in(
    runtime_directory: Option<std::ffi::OsString>,
    temporary_directory: &Path,
    uid: u32,
) -> PathBuf {
    match runtime_directory.map(PathBuf::from) {
        Some(runtime) if runtime.is_absolute() => runtime.join("review-bot").join(SOCKET_FILE_NAME),
        _ => temporary_directory
            .join(format!("review-bot-{uid}"))
            .join(SOCKET_FILE_NAME),
    }
}

/// The default socket's directory is not safe to use.
#[derive(Debug, thiserror::Error)]
pub enum SocketDirectoryError {
    /// A symbolic link, or not a directory.
    #[error("{} is not a directory (a symbolic link or another file is there); remove it", .0.display())]
    NotADirectory(PathBuf),
    /// Owned by another user.
    #[error("{} belongs to user {owner}, not to us (user {uid}); someone else made it: remove it", .path.display())]
    NotOurs {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// Our user.
        uid: u32,
    },
    /// Others may read or write it.
    #[error("{} has mode {mode:o}; it must be private (chmod 700 it)", .path.display())]
    NotPrivate {
        /// The directory.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// It could not be read or made.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

/// Checks that `directory` is a real directory (not a link), ours, and 0700 or stricter.
pub fn check_socket_directory(directory: &Path) -> Result<(), SocketDirectoryError> {
    use std::os::unix::fs::MetadataExt as _;
    let metadata =
        std::fs::symlink_metadata(directory).map_err(|source| SocketDirectoryError::Io {
            path: directory.to_owned(),
            source,
        })?;
    if !metadata.file_type().is_dir() {
        return Err(SocketDirectoryError::NotADirectory(directory.to_owned()));
    }
    let uid = nix::unistd::Uid::effective().as_raw();
    if metadata.uid() != uid {
        return Err(SocketDirectoryError::NotOurs {
            path: directory.to_owned(),
            owner: metadata.uid(),
            uid,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SocketDirectoryError::NotPrivate {
            path: directory.to_owned(),
            mode,
        });
    }
    Ok(())
}

/// Makes `directory` (mode 0700) when it does not exist, then
/// [checks](check_socket_directory) it.
pub fn prepare_socket_directory(directory: &Path) -> Result<(), SocketDirectoryError> {
    use std::os::unix::fs::DirBuilderExt as _;
    let io_error = |source| SocketDirectoryError::Io {
        path: directory.to_owned(),
        source,
    };
    if let Some(parent) = directory.parent()
        && !parent.as_os_str().is_empty()
    {
        std::fs::create_dir_all(parent).map_err(io_error)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(directory) {
        Ok(()) => {}
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        Err(error) => return Err(io_error(error)),
    }
    check_socket_directory(directory)
}

/// Where `present_review` sends its output.
#[derive(Debug, Clone)]
pub struct PanelSettings {
    /// The panel's socket, from `REVIEW_BOT_REVIEW_PANEL_SOCKET`.
    socket: Option<PathBuf>,
    /// The socket is the default one: check its directory before connecting.
    check_directory: bool,
    /// The run directory the fallback file goes to, when the starter named one.
    run_directory: Option<PathBuf>,
    /// The private directory made when none was named (shared by clones, made once).
    private_directory: Arc<Mutex<Option<PathBuf>>>,
}

impl PanelSettings {
    /// Delivers to the panel on `socket`, else to `review.md` in
    /// `run_directory`; without one, in a private temporary directory made on
    /// first use.
    pub fn new(socket: Option<PathBuf>, run_directory: Option<PathBuf>) -> Self {
        Self {
            socket,
            check_directory: false,
            run_directory,
            private_directory: Arc::default(),
        }
    }

    /// Delivers to the panel on the [default socket](default_socket_path) when
    /// one listens there and its directory is [safe](check_socket_directory),
    /// else as [`PanelSettings::new`] without a socket.
    pub fn with_default_socket(run_directory: Option<PathBuf>) -> Self {
        Self {
            check_directory: true,
            ..Self::new(Some(default_socket_path()), run_directory)
        }
    }

    /// The directory the fallback file goes to: the one given, else a private
    /// directory (`review-bot-mcp-XXXXXX` under the temporary directory, mode
    /// 0700, created exclusively) made on the first call.
    pub fn run_directory(&self) -> io::Result<PathBuf> {
        if let Some(directory) = &self.run_directory {
            return Ok(directory.clone());
        }
        let mut private = self
            .private_directory
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(directory) = &*private {
            return Ok(directory.clone());
        }
        // tempfile makes directories with the default mode (0777 less the
        // umask): ask for 0700 explicitly.
        let directory = tempfile::Builder::new()
            .prefix("review-bot-mcp-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()?
            .keep();
        *private = Some(directory.clone());
        Ok(directory)
    }

    /// The fallback file.
    pub fn review_file(&self) -> io::Result<PathBuf> {
        Ok(self.run_directory()?.join(REVIEW_FILE_NAME))
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
        if self.check_directory
            && let Some(directory) = socket.parent()
        {
            match check_socket_directory(directory) {
                Ok(()) => {}
                Err(SocketDirectoryError::Io { source, .. })
                    if source.kind() == io::ErrorKind::NotFound =>
                {
                    let reason = format!(
                        "no review panel is listening on {} (start one with `review-bot panel`)",
                        socket.display()
                    );
                    return self.write_file(message.document, &reason).await;
                }
                Err(error) => {
                    let reason =
                        format!("the default review panel socket is not safe to use: {error}");
                    return self.write_file(message.document, &reason).await;
                }
            }
        }
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
        let saved_to = match self.review_file() {
            Ok(path) => write_atomically(&path, document).await.ok().map(|()| path),
            Err(_) => None,
        };
        PanelError {
            socket: socket.to_owned(),
            reason,
            saved_to,
        }
    }

    async fn write_file(&self, document: &str, reason: &str) -> Result<Delivery, PanelError> {
        let path = match self.review_file() {
            Ok(path) => path,
            Err(error) => {
                return Err(PanelError {
                    socket: self.socket.clone().unwrap_or_default(),
                    reason: format!(
                        "{reason}, and no private directory could be made for the review file: {error}"
                    ),
                    saved_to: None,
                });
            }
        };
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
/// so a reader never sees half a document. The temporary file has a random
/// name and is created exclusively (`O_EXCL`, mode 0600); the rename replaces
/// whatever `path` is, a planted link included, without following it.
async fn write_atomically(path: &Path, text: &str) -> io::Result<()> {
    let path = path.to_owned();
    let text = text.to_owned();
    tokio::task::spawn_blocking(move || {
        let directory = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(directory)?;
        let mut temporary = tempfile::Builder::new()
            .prefix(&format!(".{REVIEW_FILE_NAME}."))
            .suffix(".tmp")
            .tempfile_in(directory)?;
        temporary.write_all(text.as_bytes())?;
        temporary.persist(&path).map_err(|error| error.error)?;
        Ok(())
    })
    .await
    .map_err(io::Error::other)?
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
        let settings = PanelSettings::new(Some(socket.clone()), Some(directory.path().to_owned()));
        let delivery = settings.deliver(&message("# Review\n")).await.unwrap();
        assert_eq!(delivery, Delivery::Panel { socket });
        let lines = received.await.unwrap();
        let sent: serde_json::Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(sent["protocol"], PROTOCOL);
        assert_eq!(sent["document"], "# Review\n");
        assert_eq!(sent["baseUri"], "/repo");
        assert!(!settings.review_file().unwrap().exists());
    }

    #[test]
    fn the_default_socket_is_per_user_under_the_runtime_or_temporary_directory() {
        let temporary = Path::new("/tmp");
        assert_eq!(
            default_socket_path_in(Some("/run/user/1000".into()), temporary, 1000),
            Path::new("/run/user/1000/review-bot/panel.sock")
        );
        for runtime in [None, Some("".into()), Some("relative".into())] {
            assert_eq!(
                default_socket_path_in(runtime, temporary, 1000),
                Path::new("/tmp/review-bot-1000/panel.sock")
            );
        }
    }

    #[test]
    fn the_socket_directory_is_made_private_and_checked() {
        let parent = tempfile::tempdir().unwrap();
        let directory = parent.path().join("review-bot-test");
        prepare_socket_directory(&directory).unwrap();
        let mode = std::fs::metadata(&directory).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        prepare_socket_directory(&directory).unwrap();

        std::fs::set_permissions(&directory, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = check_socket_directory(&directory).unwrap_err();
        assert!(
            matches!(error, SocketDirectoryError::NotPrivate { .. }),
            "{error}"
        );

        let link = parent.path().join("link");
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), &link).unwrap();
        let error = prepare_socket_directory(&link).unwrap_err();
        assert!(
            matches!(error, SocketDirectoryError::NotADirectory(_)),
            "{error}"
        );
    }

    #[tokio::test]
    async fn without_a_panel_the_review_goes_to_a_file() {
        let directory = tempfile::tempdir().unwrap();
        let settings = PanelSettings::new(
            Some(directory.path().join("nobody.sock")),
            Some(directory.path().join("run")),
        );
        let delivery = settings.deliver(&message("# Review\n")).await.unwrap();
        let Delivery::File { path, reason } = delivery else {
            panic!("expected a file delivery");
        };
        assert_eq!(path, directory.path().join("run").join(REVIEW_FILE_NAME));
        assert!(reason.contains("no review panel is listening"), "{reason}");
        assert_eq!(std::fs::read_to_string(path).unwrap(), "# Review\n");
    }

    /// Issue 19, item 11: without a run directory the review went to
    /// `/tmp/review-bot-mcp-<pid>/review.md`, following a link another user
    /// planted there. Now it goes to a private directory of random name, and
    /// the planted link and its target are left alone.
    #[tokio::test]
    async fn without_a_run_directory_the_review_goes_to_a_private_directory() {
        let victim = tempfile::tempdir().unwrap();
        let predictable =
            std::env::temp_dir().join(format!("review-bot-mcp-{}", std::process::id()));
        let planted = !predictable.exists();
        if planted {
            std::os::unix::fs::symlink(victim.path(), &predictable).unwrap();
        }
        let settings = PanelSettings::new(None, None);
        let delivery = settings.deliver(&message("# Review\n")).await.unwrap();
        let Delivery::File { path, .. } = delivery else {
            panic!("expected a file delivery");
        };
        if planted {
            std::fs::remove_file(&predictable).unwrap();
        }
        let directory = path.parent().unwrap().to_owned();
        assert_ne!(directory, predictable);
        assert!(
            directory.starts_with(std::env::temp_dir()),
            "{}",
            directory.display()
        );
        let mode = std::fs::symlink_metadata(&directory)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700, "{mode:o}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# Review\n");
        assert_eq!(std::fs::read_dir(victim.path()).unwrap().count(), 0);
        // The same directory for every later call of this server.
        assert_eq!(settings.run_directory().unwrap(), directory);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    /// A link planted at `review.md` in a run directory is replaced, not followed.
    #[tokio::test]
    async fn a_link_planted_at_the_review_file_is_not_followed() {
        let directory = tempfile::tempdir().unwrap();
        let victim = directory.path().join("victim.txt");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, directory.path().join(REVIEW_FILE_NAME)).unwrap();
        let settings = PanelSettings::new(None, Some(directory.path().to_owned()));
        settings.deliver(&message("# Review\n")).await.unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        let review = directory.path().join(REVIEW_FILE_NAME);
        assert!(
            !std::fs::symlink_metadata(&review)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(review).unwrap(), "# Review\n");
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
            let settings = PanelSettings::new(Some(socket), Some(directory.path().to_owned()));
            let error = settings.deliver(&message("# R\n")).await.unwrap_err();
            let text = error.to_string();
            assert!(
                text.starts_with("Failed to communicate with the review panel"),
                "{text}"
            );
            assert!(text.contains(expected), "{text}");
            assert!(text.contains("saved to"), "{text}");
            assert_eq!(
                std::fs::read_to_string(settings.review_file().unwrap()).unwrap(),
                "# R\n"
            );
        }
    }
}
