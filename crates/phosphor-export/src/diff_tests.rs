//! Tests of `phosphor diff`'s statistics and rows.

use super::*;
