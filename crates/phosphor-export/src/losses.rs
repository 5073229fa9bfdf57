//! Lost chunks: the gaps in each writer stream's chunk sequence numbers. The counting lives in
//! the trace model (`phosphor_model::losses`), where the statistics and the SQL tables share it.

pub use phosphor_model::losses::ChunkLosses;
