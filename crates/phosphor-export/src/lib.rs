//! Exporters.
