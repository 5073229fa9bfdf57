//! `phosphor::tokio`: tokio's task hooks on a runtime builder, one binary. Without
//! `--cfg tokio_unstable` installing the hooks records nothing (`tokio_hooks`); with it, tasks
//! and polls are recorded (`tokio_hooks`), and long polls carry their CPU samples
//! (`tokio_hooks_samples`, Linux).

mod support;
mod tokio_hooks;
#[cfg(all(tokio_unstable, target_os = "linux"))]
mod tokio_hooks_samples;
