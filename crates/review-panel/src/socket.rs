//! The review-panel socket: binding it safely and answering each connection.
//!
//! Binding: a socket file left by a panel that died (a connection is refused)
//! is replaced; one a live panel answers on is an error naming it; anything
//! else at that path (a regular file, a link) is left alone and refused. The
//! socket is made `0600`. On shutdown it is removed, but only while it is
//! still the one this panel made (same device and inode), so a panel that
//! lost its socket to another never deletes the other's.
//!
//! Serving: each connection is its own task, so a slow or hung client never
//! blocks another; it has [`crate::Limits::socket_read_timeout`] to send one
//! line of at most [`crate::Limits::max_message_bytes`]. Anything wrong is
//! answered `{"ok":false,"error":…}` and the panel keeps running.

use std::io;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::PanelError;
use crate::protocol::{self, Acknowledgement};
use crate::state::State;

/// How long writing an answer to a client may take.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);

/// A bound socket, remembered by path and identity for removal.
pub struct BoundSocket {
    path: PathBuf,
    identity: Option<(u64, u64)>,
    listener: Option<UnixListener>,
}

impl BoundSocket {
    /// Binds `path`, replacing a stale socket and refusing a live one.
    pub fn bind(path: &Path) -> Result<Self, PanelError> {
        let io_error = |what, source| PanelError::Io {
            what,
            path: path.display().to_string(),
            source,
        };
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if metadata.file_type().is_socket() => {
                match std::os::unix::net::UnixStream::connect(path) {
                    Ok(_) => return Err(PanelError::SocketInUse(path.to_owned())),
                    Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
                        tracing::info!(socket = %path.display(), "replacing the stale socket of a panel that is gone");
                        std::fs::remove_file(path).map_err(|source| {
                            io_error("could not remove the stale socket", source)
                        })?;
                    }
                    Err(source) => {
                        return Err(io_error("could not check the existing socket", source));
                    }
                }
            }
            Ok(_) => return Err(PanelError::NotASocket(path.to_owned())),
            Err(error) if error.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(io_error("could not inspect", source)),
        }
        let listener = UnixListener::bind(path).map_err(|source| {
            if source.kind() == io::ErrorKind::AddrInUse {
                PanelError::SocketInUse(path.to_owned())
            } else {
                io_error("could not listen on", source)
            }
        })?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|source| io_error("could not make private", source))?;
        let identity = std::fs::symlink_metadata(path)
            .ok()
            .map(|metadata| (metadata.dev(), metadata.ino()));
        Ok(Self {
            path: path.to_owned(),
            identity,
            listener: Some(listener),
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Splits off the listener; `self` keeps what removal needs.
    pub fn into_parts(mut self) -> (Self, UnixListener) {
        let listener = self.listener.take().expect("the listener is taken once");
        (self, listener)
    }

    /// Removes the socket file if it is still the one bound here.
    pub fn remove(&self) {
        let current = std::fs::symlink_metadata(&self.path)
            .ok()
            .map(|metadata| (metadata.dev(), metadata.ino()));
        if current.is_some()
            && current == self.identity
            && let Err(error) = std::fs::remove_file(&self.path)
        {
            tracing::warn!(socket = %self.path.display(), %error, "could not remove the socket");
        }
    }
}

/// Accepts connections until `stop` turns true.
pub async fn serve(
    listener: UnixListener,
    state: Arc<State>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let permits = Arc::new(tokio::sync::Semaphore::new(
        state.limits().max_socket_connections,
    ));
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|stopped| *stopped) => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                tracing::warn!(%error, "accepting a socket connection failed");
                // Out of descriptors and the like: do not spin.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let state = Arc::clone(&state);
        if let Ok(permit) = Arc::clone(&permits).try_acquire_owned() {
            tokio::spawn(async move {
                handle(stream, &state).await;
                drop(permit);
            });
        } else {
            tokio::spawn(async move {
                let answer =
                    Acknowledgement::refused("the panel is busy with other connections; try again");
                let _ = answer_and_close(stream, &answer).await;
            });
        }
    }
}

/// Reads one line, presents it, answers.
async fn handle(stream: UnixStream, state: &Arc<State>) {
    let limits = state.limits();
    let (reader, writer) = stream.into_split();
    let mut reader = BufReader::new(reader.take(limits.max_message_bytes as u64 + 1));
    let mut line = Vec::new();
    let read = tokio::time::timeout(
        limits.socket_read_timeout,
        reader.read_until(b'\n', &mut line),
    )
    .await;
    let answer = match read {
        Err(_) => Acknowledgement::refused(format!(
            "no complete message within {} seconds",
            limits.socket_read_timeout.as_secs()
        )),
        Ok(Err(error)) => Acknowledgement::refused(format!("reading the message failed: {error}")),
        Ok(Ok(0)) => return,
        Ok(Ok(_)) if line.len() > limits.max_message_bytes => Acknowledgement::refused(format!(
            "the message is over the panel's limit of {} bytes",
            limits.max_message_bytes
        )),
        Ok(Ok(_)) => match protocol::parse_line(&line) {
            Err(error) => Acknowledgement::refused(error.to_string()),
            Ok(message) => {
                let state = Arc::clone(state);
                match tokio::task::spawn_blocking(move || state.present(message)).await {
                    Ok(Ok(version)) => {
                        tracing::info!(version, "presented a review");
                        Acknowledgement::accepted()
                    }
                    Ok(Err(error)) => Acknowledgement::refused(error.to_string()),
                    Err(error) => Acknowledgement::refused(format!("rendering failed: {error}")),
                }
            }
        },
    };
    if !answer.ok {
        tracing::warn!(
            error = answer.error.as_deref().unwrap_or(""),
            "refused a socket message"
        );
    }
    let mut writer = writer;
    let mut bytes = answer.to_line();
    let _ = tokio::time::timeout(WRITE_TIMEOUT, async {
        writer.write_all(&bytes).await?;
        writer.shutdown().await
    })
    .await;
    // Let the client read the answer before the connection goes: drain what
    // it may still be sending (an over-long message) for a short while.
    bytes.clear();
    let mut rest = reader.into_inner().into_inner();
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let mut sink = vec![0_u8; 16 * 1024];
        while matches!(rest.read(&mut sink).await, Ok(read) if read > 0) {}
    })
    .await;
}

async fn answer_and_close(mut stream: UnixStream, answer: &Acknowledgement) -> io::Result<()> {
    tokio::time::timeout(WRITE_TIMEOUT, async {
        stream.write_all(&answer.to_line()).await?;
        stream.shutdown().await
    })
    .await
    .map_err(|_| io::Error::from(io::ErrorKind::TimedOut))?
}
