//! `review-bot panel`: the review panel, a local page showing what the agent presents.
//!
//! Glue only: resolve the socket (default: the per-user one `review-bot mcp`
//! also uses, `review_mcp::panel::default_socket_path`), the loopback address
//! and the editor link, start `review_panel::Panel`, print where it is, open a
//! browser on request, and stop on Ctrl-C or SIGTERM (the panel removes its
//! socket).
//!
//! The URL carries the panel's secret (`review_panel::access`): it is printed
//! on standard output only, never logged, and never put on a command line
//! (any local user reads other processes' arguments): `--open` gives the
//! browser a private file (0600, in a 0700 directory removed when the panel
//! stops) that redirects to the URL.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};

use anyhow::Context as _;
use clap::Args;

use review_mcp::panel::{default_socket_path, prepare_socket_directory};
use review_panel::{DEFAULT_EDITOR_URL, DEFAULT_LISTEN, Panel, PanelOptions};

/// Arguments of `panel`.
#[derive(Debug, Args)]
pub struct PanelArgs {
    /// The review-panel socket to listen on. Default: the one `review-bot mcp`
    /// sends to when it is given none, `$XDG_RUNTIME_DIR/review-bot/panel.sock`,
    /// else `<temp dir>/review-bot-<uid>/panel.sock` (made private, 0700).
    #[arg(long, value_name = "PATH", env = "REVIEW_BOT_PANEL_SOCKET")]
    pub socket: Option<PathBuf>,

    /// The loopback address and port the page is served on (port 0: a free one).
    #[arg(long, value_name = "ADDR", env = "REVIEW_BOT_PANEL_LISTEN", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,

    /// Open the page in the default browser (`$BROWSER`, else `xdg-open`).
    #[arg(long, env = "REVIEW_BOT_PANEL_OPEN")]
    pub open: bool,

    /// The "open in editor" link for a file: `{path}` (absolute), `{line}` and
    /// `{column}` are filled in. `JetBrains` IDEs: `idea://open?file={path}&line={line}`;
    /// Zed: `zed://file{path}:{line}`; Cursor: `cursor://file{path}:{line}`.
    #[arg(long, value_name = "TEMPLATE", env = "REVIEW_BOT_PANEL_EDITOR_URL", default_value = DEFAULT_EDITOR_URL)]
    pub editor_url: String,
}

pub fn run(args: PanelArgs) -> anyhow::Result<ExitCode> {
    let socket = if let Some(socket) = args.socket.filter(|path| !path.as_os_str().is_empty()) {
        socket
    } else {
        let socket = default_socket_path();
        if let Some(directory) = socket.parent() {
            prepare_socket_directory(directory)
                .context("the review panel's default socket directory cannot be used")?;
        }
        socket
    };
    let mut options = PanelOptions::new(socket);
    options.listen = args.listen;
    options.editor_url = args.editor_url;
    super::block_on(async move {
        // The grammars take a moment to load: do it now, not on the first review.
        let warm_up = tokio::task::spawn_blocking(review_panel::highlight::warm_up);
        let panel = Panel::bind(options).await?;
        let url = panel.url();
        println!("review panel: {url}");
        println!("socket: {}", panel.socket_path().display());
        std::io::stdout().flush().ok();
        // Kept until the panel stops: the browser may read it late.
        let _launcher = if args.open { open_browser(&url) } else { None };
        let _ = warm_up.await;
        panel.run(shutdown_signal()).await?;
        anyhow::Ok(ExitCode::SUCCESS)
    })?
}

/// Completes on Ctrl-C (SIGINT) or SIGTERM.
async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(error) => {
                tracing::warn!(%error, "cannot listen for SIGTERM; stop the panel with Ctrl-C");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

/// Opens `url` with `$BROWSER` (its first entry) or `xdg-open`, through a
/// private launcher file so the secret in `url` never appears in a process's
/// arguments; a failure is a warning. Returns the launcher's directory, to
/// keep until the panel stops.
fn open_browser(url: &str) -> Option<tempfile::TempDir> {
    let browser = std::env::var("BROWSER")
        .ok()
        .and_then(|value| value.split(':').next().map(str::to_owned))
        .filter(|value| !value.trim().is_empty())
        .unwrap_or_else(|| "xdg-open".to_owned());
    let (directory, launcher) = match write_launcher(url) {
        Ok(written) => written,
        Err(error) => {
            eprintln!(
                "warning: could not write the file that opens the panel in a browser ({error}); open the URL above yourself"
            );
            return None;
        }
    };
    let spawned = std::process::Command::new(&browser)
        .arg(&launcher)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match spawned {
        // Reap it in the background so it does not linger as a zombie.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(error) => {
            eprintln!(
                "warning: could not open a browser with {browser} ({error}); open the URL above yourself"
            );
        }
    }
    Some(directory)
}

/// A page that sends the browser on to `url`, in a fresh private directory
/// (0700), created exclusively (`O_EXCL`: never through
/// a planted link) and readable by the user only.
fn write_launcher(url: &str) -> std::io::Result<(tempfile::TempDir, PathBuf)> {
    use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
    let directory = tempfile::Builder::new()
        .prefix("review-bot-panel-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    let launcher = directory.path().join("open-review-panel.html");
    let escaped = url
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&launcher)?;
    writeln!(
        file,
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">\
         <meta http-equiv=\"refresh\" content=\"0;url={escaped}\"><title>Review panel</title></head>\
         <body><p><a href=\"{escaped}\">Open the review panel</a></p></body></html>"
    )?;
    Ok((directory, launcher))
}
