//! Log-linear histogram buckets, shared by the runtime's histogram points and the tools.
