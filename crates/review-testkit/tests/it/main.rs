//! review-testkit's integration tests: the test doubles checked against the
//! real clients they stand in for.

mod model_server;
