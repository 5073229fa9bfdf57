//! Nothing: this crate holds `tests/attribute_ui.rs`, the compile errors of `#[phosphor::trace]`
//! misused, in a crate whose only dev-dependencies are `phosphor` and trybuild, so that trybuild
//! builds its cases against those alone.
