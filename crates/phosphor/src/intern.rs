//! Bounded interning of dynamic strings.
