//! Integration tests of the `phosphor` binary, one test binary (ripgrep's layout).

mod agreement;
mod browser;
mod call;
mod cli;
mod convert;
mod convert_compress;
mod convert_many;
mod demo;
mod diff;
mod flamegraph;
mod info;
mod live_view;
mod logs;
mod otlp_agree;
mod otlp_convert;
mod otlp_hostile;
mod otlp_record;
mod probes;
mod python;
mod record;
mod recover;
mod stats;
mod system;
mod system_e2e;
mod view;
mod view_flow;
