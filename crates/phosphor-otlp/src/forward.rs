//! Live forwarding. Owner helper B.
