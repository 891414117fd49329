//! Every version of the presented review, and the channel the page's live
//! updates listen on.
//!
//! Each `present_review` call becomes a numbered [`Version`] holding the whole
//! document (the MCP server applies the modes), its base directory and its
//! rendering; the last [`crate::Limits::max_versions`] are kept for the
//! history. File views resolve against the base of the version they were
//! clicked in, never against anything the browser sends.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use tokio::sync::watch;

use crate::Limits;
use crate::files;
use crate::protocol::PresentReview;
use crate::render::{self, Rendered};

/// One version of the review.
#[derive(Debug)]
pub struct Version {
    /// 1, 2, 3 … in the order calls arrived.
    pub number: u64,
    /// When it arrived, in milliseconds since the Unix epoch.
    pub received_at_ms: u64,
    /// The call's mode.
    pub mode: String,
    /// The call's section, for `update-section`.
    pub section: Option<String>,
    /// The canonical base directory file references resolve against.
    pub base: PathBuf,
    /// The whole document's Markdown.
    pub document: String,
    /// Its rendering.
    pub rendered: Rendered,
    /// The JSON the page receives for this version, made once.
    pub payload: Arc<str>,
}

/// A version as the history lists it.
#[derive(Debug, Clone, Serialize)]
pub struct VersionSummary {
    /// Its number.
    pub version: u64,
    /// When it arrived (ms since the epoch).
    pub received_at_ms: u64,
    /// The call's mode.
    pub mode: String,
    /// The call's section.
    pub section: Option<String>,
}

#[derive(Serialize)]
struct Payload<'v> {
    version: u64,
    received_at_ms: u64,
    mode: &'v str,
    section: Option<&'v str>,
    base: String,
    sections: &'v [render::Section],
    toc: &'v [render::TocEntry],
}

/// What the live channel carries.
#[derive(Debug, Clone, Default)]
pub struct Live {
    /// The latest version.
    pub version: Option<Arc<Version>>,
    /// The panel is shutting down: event streams end.
    pub closed: bool,
}

/// A call the panel cannot show.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct PresentError(String);

/// The panel's state.
pub struct State {
    versions: Mutex<VecDeque<Arc<Version>>>,
    /// Serialises renders so numbers and order agree.
    presenting: Mutex<u64>,
    live: watch::Sender<Live>,
    editor_url: String,
    limits: Limits,
    socket: PathBuf,
}

impl State {
    /// An empty panel.
    pub fn new(editor_url: String, limits: Limits, socket: PathBuf) -> Self {
        Self {
            versions: Mutex::new(VecDeque::new()),
            presenting: Mutex::new(0),
            live: watch::Sender::new(Live::default()),
            editor_url,
            limits,
            socket,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The editor link template.
    pub fn editor_url(&self) -> &str {
        &self.editor_url
    }

    /// The socket path, for the page's empty state.
    pub fn socket(&self) -> &std::path::Path {
        &self.socket
    }

    /// Renders and records one call, and tells the live pages. Blocking (file
    /// reads, highlighting): call it from a blocking task.
    pub fn present(&self, message: PresentReview) -> Result<u64, PresentError> {
        if !matches!(
            message.mode.as_str(),
            "replace" | "append" | "update-section"
        ) {
            return Err(PresentError(format!(
                "unknown mode {:?}; expected replace, append or update-section",
                message.mode
            )));
        }
        let base = files::canonical_base(&message.base_uri).map_err(PresentError)?;
        let mut last = self
            .presenting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let number = *last + 1;
        let rendered = render::render(&message.document, Some(&base), self.limits.max_file_bytes);
        let received_at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| {
                u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
            });
        let payload = serde_json::to_string(&Payload {
            version: number,
            received_at_ms,
            mode: &message.mode,
            section: message.section.as_deref(),
            base: base.display().to_string(),
            sections: &rendered.sections,
            toc: &rendered.toc,
        })
        .expect("a payload serialises");
        let version = Arc::new(Version {
            number,
            received_at_ms,
            mode: message.mode,
            section: message.section,
            base,
            document: message.document,
            rendered,
            payload: payload.into(),
        });
        {
            let mut versions = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
            versions.push_back(Arc::clone(&version));
            while versions.len() > self.limits.max_versions.max(1) {
                versions.pop_front();
            }
        }
        *last = number;
        self.live.send_modify(|live| live.version = Some(version));
        Ok(number)
    }

    /// The latest version.
    pub fn latest(&self) -> Option<Arc<Version>> {
        self.live.borrow().version.clone()
    }

    /// A kept version by number.
    pub fn version(&self, number: u64) -> Option<Arc<Version>> {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|version| version.number == number)
            .cloned()
    }

    /// The kept versions, oldest first.
    pub fn history(&self) -> Vec<VersionSummary> {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|version| VersionSummary {
                version: version.number,
                received_at_ms: version.received_at_ms,
                mode: version.mode.clone(),
                section: version.section.clone(),
            })
            .collect()
    }

    /// A receiver of live changes.
    pub fn subscribe(&self) -> watch::Receiver<Live> {
        self.live.subscribe()
    }

    /// Ends the live streams (shutdown).
    pub fn close(&self) {
        self.live.send_modify(|live| live.closed = true);
    }
}
