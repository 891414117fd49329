//! The review panel: a local web page that shows the review an agent presents.
//!
//! `review-bot mcp`'s `present_review` sends each call over a Unix socket
//! (review-panel protocol v1, documented in `review_mcp::panel`); this crate
//! listens on that socket ([`socket`]), keeps every version of the document
//! ([`state`]), renders it from GitHub-flavoured Markdown with clickable file
//! references ([`render`], [`references`]) and serves it on loopback with live
//! updates over server-sent events ([`http`]). A click on a file reference
//! shows the file, highlighted ([`highlight`]), read only from under the
//! review's base directory ([`files`]).
//!
//! Only its user reads it: the page's URL carries a secret drawn when the panel
//! starts ([`access`]), exchanged for a cookie on the first visit and required
//! by every route.
//!
//! Everything the agent sends is untrusted: Markdown's raw HTML is never
//! rendered, links with dangerous schemes lose their target, the page runs
//! under a strict Content-Security-Policy, requests whose `Host` or `Origin`
//! is not the panel's own are refused, and file views open only files the
//! review references, never outside the base directory. What a review can
//! cost is bounded ([`Limits`]): the Markdown rendered, its table cells, the
//! parse, the page's bytes and the history's.
//!
//! ```no_run
//! # async fn example() -> Result<(), review_panel::PanelError> {
//! let options = review_panel::PanelOptions::new("/run/user/1000/review-bot/panel.sock".into());
//! let panel = review_panel::Panel::bind(options).await?;
//! println!("review panel: {}", panel.url());
//! panel.run(async { tokio::signal::ctrl_c().await.ok(); }).await?;
//! # Ok(()) }
//! ```

pub mod access;
pub mod files;
pub mod highlight;
pub mod http;
pub mod protocol;
pub mod references;
pub mod render;
pub mod socket;
pub mod state;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The editor link used when none is configured: VS Code's URL handler.
pub const DEFAULT_EDITOR_URL: &str = "vscode://file{path}:{line}";

/// The address the page is served on when none is configured: loopback, a free port.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:0";

/// How a panel is set up.
#[derive(Debug, Clone)]
pub struct PanelOptions {
    /// The review-panel socket to listen on.
    pub socket: PathBuf,
    /// The loopback address for the page (port 0: any free port).
    pub listen: SocketAddr,
    /// The "open in editor" link: `{path}` (absolute, percent-encoded),
    /// `{line}` and `{column}` are replaced.
    pub editor_url: String,
    /// Limits on what the socket accepts and the page shows.
    pub limits: Limits,
}

impl PanelOptions {
    /// The defaults, listening on `socket`.
    pub fn new(socket: PathBuf) -> Self {
        Self {
            socket,
            listen: DEFAULT_LISTEN.parse().expect("the default address parses"),
            editor_url: DEFAULT_EDITOR_URL.to_owned(),
            limits: Limits::default(),
        }
    }
}

/// Bounds on untrusted input, and on what the panel keeps. ARCHITECTURE.md
/// says why each default is what it is.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// The longest protocol line accepted, in bytes.
    pub max_message_bytes: usize,
    /// How long a socket client may take to send its line.
    pub socket_read_timeout: std::time::Duration,
    /// Socket connections handled at once; more are refused with an error line.
    pub max_socket_connections: usize,
    /// The largest file a file view shows, or a reference is checked in, in bytes.
    pub max_file_bytes: u64,
    /// Versions of the document kept for the history (at most).
    pub max_versions: usize,
    /// The Markdown of one version that is rendered, in bytes; the rest is
    /// cut with a notice.
    pub max_markdown_bytes: usize,
    /// Table cells in one version, in all (rows are padded to their header's
    /// width); rows past it are cut with a notice.
    pub max_table_cells: usize,
    /// The rendered HTML of one version, in bytes; blocks past it are cut
    /// with a notice.
    pub max_rendered_bytes: usize,
    /// What the kept versions may hold in all, in bytes (their HTML, the page's
    /// JSON, their references); the oldest go first, the latest always stays.
    pub max_retained_bytes: usize,
    /// Renders at once (each holds a syntax tree while it runs).
    pub max_concurrent_renders: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 8 * 1024 * 1024,
            socket_read_timeout: std::time::Duration::from_secs(10),
            max_socket_connections: 32,
            max_file_bytes: 4 * 1024 * 1024,
            max_versions: 100,
            max_markdown_bytes: 512 * 1024,
            max_table_cells: 20_000,
            max_rendered_bytes: 2 * 1024 * 1024,
            max_retained_bytes: 64 * 1024 * 1024,
            max_concurrent_renders: 2,
        }
    }
}

/// Why a panel could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum PanelError {
    /// Another panel answers on the socket.
    #[error(
        "another review panel is already listening on {}; stop it first, or start this one with --socket PATH",
        .0.display()
    )]
    SocketInUse(PathBuf),
    /// Something that is not a socket sits where the socket goes.
    #[error("{} exists and is not a socket; remove it or choose another --socket", .0.display())]
    NotASocket(PathBuf),
    /// The page may only be served on loopback.
    #[error(
        "refusing to serve the review panel on {0}: only loopback addresses (127.0.0.1, ::1) are allowed"
    )]
    NotLoopback(SocketAddr),
    /// A file-system or network operation failed.
    #[error("{what} {}: {source}", .path)]
    Io {
        /// What was being done.
        what: &'static str,
        /// The path or address concerned.
        path: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// A panel with its socket and port bound, ready to [`run`](Panel::run).
pub struct Panel {
    socket: socket::BoundSocket,
    http: tokio::net::TcpListener,
    address: SocketAddr,
    state: Arc<state::State>,
    /// What every HTTP request must carry ([`access`]).
    secret: access::Secret,
}

impl Panel {
    /// Binds the socket (replacing a stale one, refusing a live one) and the
    /// page's loopback port.
    pub async fn bind(options: PanelOptions) -> Result<Self, PanelError> {
        if !options.listen.ip().is_loopback() {
            return Err(PanelError::NotLoopback(options.listen));
        }
        let http = tokio::net::TcpListener::bind(options.listen)
            .await
            .map_err(|source| PanelError::Io {
                what: "could not listen on",
                path: options.listen.to_string(),
                source,
            })?;
        let address = http.local_addr().map_err(|source| PanelError::Io {
            what: "could not read the address of",
            path: options.listen.to_string(),
            source,
        })?;
        let secret = access::Secret::generate().map_err(|source| PanelError::Io {
            what: "could not draw the panel's secret from",
            path: "/dev/urandom".to_owned(),
            source,
        })?;
        let socket = socket::BoundSocket::bind(&options.socket)?;
        let state = Arc::new(state::State::new(
            options.editor_url,
            options.limits,
            socket.path().to_owned(),
        ));
        Ok(Self {
            socket,
            http,
            address,
            state,
            secret,
        })
    }

    /// The page's URL, with the secret that opens it: give it only to the
    /// panel's user.
    pub fn url(&self) -> String {
        format!(
            "http://{}/?{}={}",
            self.address,
            access::TOKEN_PARAMETER,
            self.secret.expose()
        )
    }

    /// The loopback address the page is served on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The socket the panel listens on.
    pub fn socket_path(&self) -> &std::path::Path {
        self.socket.path()
    }

    /// The panel's state (versions), for tests and benchmarks.
    pub fn state(&self) -> Arc<state::State> {
        Arc::clone(&self.state)
    }

    /// Serves until `shutdown` completes, then removes the socket (when it is
    /// still the one this panel made).
    pub async fn run(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), PanelError> {
        let Self {
            socket,
            http,
            address,
            state,
            secret,
        } = self;
        let (stop_sender, stop_receiver) = tokio::sync::watch::channel(false);
        let (socket, listener) = socket.into_parts();
        let socket_task = tokio::spawn(socket::serve(
            listener,
            Arc::clone(&state),
            stop_receiver.clone(),
        ));
        let router = http::router(Arc::clone(&state), address, secret);
        let mut http_stop = stop_receiver;
        let served = axum::serve(http, router).with_graceful_shutdown(async move {
            let _ = http_stop.wait_for(|stopped| *stopped).await;
        });
        let http_task = tokio::spawn(async move { served.await });
        shutdown.await;
        let _ = stop_sender.send(true);
        state.close();
        socket.remove();
        let _ = socket_task.await;
        // Open event streams end when the state closes; do not wait on slow browsers.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), http_task).await;
        Ok(())
    }
}
