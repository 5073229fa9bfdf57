//! Tracing switched on by the environment, as a program that ships Phosphor would wire it:
//!
//! ```sh
//! PHOSPHOR=trace.phos cargo run -p phosphor-cli --example init_env
//! PHOSPHOR=ring:crash-{pid}.phos PHOSPHOR_SIZE=8M cargo run -p phosphor-cli --example init_env -- panic
//! ```
//!
//! Without `PHOSPHOR` it runs untraced. Four threads each record `ITERATIONS` scopes with an
//! instant inside; the argument says how the program ends: `return` (the guard drops), `exit`
//! (`std::process::exit`, which skips the guard: the exit handler finishes the trace), `panic`
//! (a panic in `main`: a ring is dumped by the panic hook first), `sleep` (waits for a signal,
//! such as `SIGUSR2`, which dumps a ring).

use phosphor::{trace_instant, trace_scope};

const THREADS: u64 = 4;
const ITERATIONS: u64 = 10_000;

fn work(thread: u64) {
    for i in 0..ITERATIONS {
        trace_scope!("example", "iteration", "thread" => thread);
        trace_instant!("example", "tick", "i" => i);
    }
}

fn main() {
    let _phosphor = phosphor::init();
    let ending = std::env::args().nth(1).unwrap_or_else(|| "return".into());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            s.spawn(move || work(t));
        }
    });
    // Every thread's events are in (the scope joined them): tell a watching test.
    println!("recorded {}", THREADS * ITERATIONS * 2);
    match ending.as_str() {
        "return" => {}
        "exit" => std::process::exit(3),
        "panic" => panic!("the example panics on purpose"),
        "sleep" => std::thread::sleep(std::time::Duration::from_secs(60)),
        other => eprintln!("unknown ending {other:?}"),
    }
}
