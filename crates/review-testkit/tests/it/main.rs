//! Integration tests of the GitHub simulator: real HTTP with reqwest, real `git clone` and
//! `git push`, and the standalone binary.

mod github;
mod standalone;
