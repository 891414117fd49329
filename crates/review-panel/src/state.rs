//! Every version of the presented review, and the channel the page's live
//! updates listen on.
//!
//! Each `present_review` call becomes a numbered [`Version`] holding its base
//! directory and the rendering of the whole document (the MCP server applies
//! the modes). The history keeps at most [`crate::Limits::max_versions`]
//! versions and [`crate::Limits::max_retained_bytes`] in all, dropping the
//! oldest first and always keeping the latest. File views resolve against the
//! base of the version they were clicked in, never against anything the
//! browser sends, and open only files that version references.
//!
//! Renders run outside the lock that numbers versions (at most
//! [`crate::Limits::max_concurrent_renders`] at once), so a slow render never
//! holds up the page or the history.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
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
    /// The whole document's rendering (the Markdown itself is not kept).
    pub rendered: Rendered,
    /// The JSON the page receives for this version, made once.
    pub payload: Arc<str>,
    /// Roughly the bytes this version holds, for the retained-bytes bound.
    pub weight: usize,
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
    /// The kept versions, oldest first, and the bytes they hold.
    versions: Mutex<(VecDeque<Arc<Version>>, usize)>,
    /// The last version number given; numbering and recording happen under it.
    presenting: Mutex<u64>,
    /// Renders running now, at most `limits.max_concurrent_renders`.
    renders: Mutex<usize>,
    /// Signalled when a render ends.
    render_ended: Condvar,
    live: watch::Sender<Live>,
    editor_url: String,
    limits: Limits,
    socket: PathBuf,
}

impl State {
    /// An empty panel.
    pub fn new(editor_url: String, limits: Limits, socket: PathBuf) -> Self {
        Self {
            versions: Mutex::new((VecDeque::new(), 0)),
            presenting: Mutex::new(0),
            renders: Mutex::new(0),
            render_ended: Condvar::new(),
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
        let rendered = {
            let _slot = self.render_slot();
            render::render(&message.document, Some(&base), &self.limits)
        };
        drop(message.document);
        if !rendered.cuts.is_empty() {
            tracing::warn!(
                cuts = ?rendered.cuts,
                "the presented review was cut to stay within the panel's limits"
            );
        }
        let mut last = self
            .presenting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let number = *last + 1;
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
        let weight = payload.len() + rendered.weight() + base.as_os_str().len() + 256;
        let version = Arc::new(Version {
            number,
            received_at_ms,
            mode: message.mode,
            section: message.section,
            base,
            rendered,
            payload: payload.into(),
            weight,
        });
        {
            let mut versions = self.versions.lock().unwrap_or_else(PoisonError::into_inner);
            let (kept, bytes) = &mut *versions;
            kept.push_back(Arc::clone(&version));
            *bytes += weight;
            while kept.len() > 1
                && (kept.len() > self.limits.max_versions.max(1)
                    || *bytes > self.limits.max_retained_bytes)
            {
                if let Some(oldest) = kept.pop_front() {
                    *bytes -= oldest.weight;
                }
            }
        }
        *last = number;
        self.live.send_modify(|live| live.version = Some(version));
        Ok(number)
    }

    /// Waits for a free render slot; the slot is given back when dropped.
    fn render_slot(&self) -> RenderSlot<'_> {
        let mut running = self.renders.lock().unwrap_or_else(PoisonError::into_inner);
        while *running >= self.limits.max_concurrent_renders.max(1) {
            running = self
                .render_ended
                .wait(running)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *running += 1;
        RenderSlot { state: self }
    }

    /// The bytes the kept versions hold ([`Version::weight`]).
    pub fn retained_bytes(&self) -> usize {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .1
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
            .0
            .iter()
            .find(|version| version.number == number)
            .cloned()
    }

    /// The kept versions, oldest first.
    pub fn history(&self) -> Vec<VersionSummary> {
        self.versions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .0
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

/// A render slot held ([`State::render_slot`]).
struct RenderSlot<'s> {
    state: &'s State,
}

impl Drop for RenderSlot<'_> {
    fn drop(&mut self) {
        let mut running = self
            .state
            .renders
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *running -= 1;
        self.state.render_ended.notify_one();
    }
}
