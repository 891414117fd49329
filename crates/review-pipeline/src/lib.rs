//! The pipelines that drive the review loop.
//!
//! Checkout, build and test gate, the review pipeline, the write pipeline, the
//! CI handler, and the poller that turns labelled pull requests into jobs.
