//! Nothing: this crate holds `tests/it/`, the tests of `phosphor::tokio` (tokio's task hooks), in
//! a crate whose dev-dependencies are the runtime, tokio and phosphor-export, so that their build
//! with `--cfg tokio_unstable` (where tokio has the hooks) compiles those alone.
