//! review-testkit's integration tests: the test doubles checked against the
//! real clients they stand in for — the GitHub simulator over real HTTP with
//! reqwest, real `git clone` and `git push`, and its standalone binary; the
//! scripted model server against the real Claude Code CLI.

mod github;
mod model_server;
mod model_sim;
mod standalone;
