//! phosphor-sql's integration tests, in one binary: the tables against the statistics, the
//! query session, Parquet, and damaged files.

#[cfg(feature = "engine")]
mod align;
mod columns;
mod dynamic;
mod files;
mod losses;
mod parquet;
#[cfg(feature = "engine")]
mod partitions;
#[cfg(feature = "engine")]
mod queries;
#[cfg(feature = "engine")]
mod session;
mod slices;
mod system;
mod system_files;
#[cfg(feature = "engine")]
mod system_recorded;
mod tables;
