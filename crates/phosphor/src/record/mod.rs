//! The recording path: the clock, the chunk lock and its barrier, the trace buffer and its chunks,
//! the per-thread tenants that write into them, and the thread state that finds a thread's tenant.
//! It uses the registry (a tenant looks a callsite up by id; a buffer may live in a ring file's
//! mapping) and the base modules, nothing above.

pub(crate) mod barrier;
pub(crate) mod buffer;
pub(crate) mod chunk;
pub(crate) mod chunk_lock;
pub(crate) mod clock;
#[cfg(not(loom))]
pub(crate) mod internal_thread;
pub(crate) mod log_core;
pub(crate) mod pool;
#[cfg(all(test, not(loom), unix))]
mod pool_tests;
pub(crate) mod tenant;
#[cfg(not(loom))]
pub(crate) mod thread;
