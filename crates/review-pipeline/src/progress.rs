//! Progress of a job, step by step, for whoever watches it.
//!
//! The pipeline reports each step's start and end (with how long it took and a
//! one-line result); the binary turns them into a spinner on a terminal or one
//! plain line per step otherwise, and the daemon into log lines and metrics.
//! The pipeline never prints anything itself.

use std::sync::Arc;
use std::time::{Duration, Instant};

/// One thing that happened in a job.
#[derive(Debug, Clone, PartialEq)]
pub enum ProgressEvent {
    /// A step began (`"checkout"`, `"architecture pass"`, …).
    Started {
        /// The step's name.
        step: &'static str,
    },
    /// A step ended.
    Finished {
        /// The step's name.
        step: &'static str,
        /// One line saying what it did (`"3 commands passed"`).
        detail: String,
        /// How long it took.
        elapsed: Duration,
        /// False when the step failed (the job goes on to report the failure).
        ok: bool,
    },
    /// Something worth telling the operator that is not a step.
    Note {
        /// The message.
        message: String,
    },
}

/// Where progress goes. Cheap to clone.
#[derive(Clone)]
pub struct Progress {
    sink: Arc<dyn Fn(ProgressEvent) + Send + Sync>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Progress")
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::silent()
    }
}

impl Progress {
    /// Progress that goes to `sink`.
    pub fn new(sink: impl Fn(ProgressEvent) + Send + Sync + 'static) -> Self {
        Self {
            sink: Arc::new(sink),
        }
    }

    /// Progress that goes nowhere.
    pub fn silent() -> Self {
        Self::new(|_| {})
    }

    /// Starts a step; finish it with [`Step::done`] or [`Step::failed`].
    pub fn step(&self, step: &'static str) -> Step {
        (self.sink)(ProgressEvent::Started { step });
        Step {
            progress: self.clone(),
            name: step,
            started: Instant::now(),
        }
    }

    /// Reports a note.
    pub fn note(&self, message: impl Into<String>) {
        (self.sink)(ProgressEvent::Note {
            message: message.into(),
        });
    }
}

/// A step under way.
#[derive(Debug)]
#[must_use = "a step is reported when it is finished"]
pub struct Step {
    progress: Progress,
    name: &'static str,
    started: Instant,
}

impl Step {
    /// The step succeeded.
    pub fn done(self, detail: impl Into<String>) {
        self.finish(detail.into(), true);
    }

    /// The step failed.
    pub fn failed(self, detail: impl Into<String>) {
        self.finish(detail.into(), false);
    }

    fn finish(self, detail: String, ok: bool) {
        (self.progress.sink)(ProgressEvent::Finished {
            step: self.name,
            detail,
            elapsed: self.started.elapsed(),
            ok,
        });
    }
}

/// `1 turn`, `2 turns`: an agent's turn count as the progress lines say it.
pub fn turns(count: u32) -> String {
    format!("{count} turn{}", if count == 1 { "" } else { "s" })
}
