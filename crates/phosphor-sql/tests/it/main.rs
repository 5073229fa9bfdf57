//! phosphor-sql's integration tests, in one binary: the tables against the statistics, the
//! query session, Parquet, and damaged files.

mod files;
mod parquet;
#[cfg(feature = "engine")]
mod partitions;
#[cfg(feature = "engine")]
mod session;
mod slices;
