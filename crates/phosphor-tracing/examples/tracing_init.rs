//! A `tracing`-instrumented program that ships Phosphor the way Bevy or reth wire a tracer: one
//! line in `main`, switched on by the environment (off, and costing nothing but the `tracing`
//! calls, when `PHOSPHOR` is unset).
//!
//! ```text
//! PHOSPHOR=shop.phos cargo run -p phosphor-tracing --example tracing_init
//! cargo run -p phosphor-cli -- stats shop.phos
//! ```

const REQUESTS: u32 = 100;

#[tracing::instrument(target = "shop")]
fn handle(i: u32) -> u32 {
    tracing::info!(target: "shop", i, "handled");
    i * 2
}

fn main() {
    let _phosphor = phosphor_tracing::init();
    let total: u32 = (0..REQUESTS).map(handle).sum();
    println!("handled {REQUESTS} requests ({total})");
}
