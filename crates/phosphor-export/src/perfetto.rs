//! Perfetto's protobuf trace format (`.pftrace`). Work in progress (issue 3).
