//! A program with a probe of every kind: try the tools on it, and the tests run it under gdb.
//!
//! ```text
//! usdt_demo          fire every probe once and print what the program saw
//! usdt_demo wait     print "ready PID", wait for a line on stdin, then the same
//! usdt_demo loop N   fire demo:hot N times (for instruction counts)
//! ```
//!
//! ```text
//! $ cargo build -p phosphor-usdt --example usdt_demo
//! $ phosphor probes target/debug/examples/usdt_demo
//! $ gdb -batch -ex 'break -probe-stap demo:guarded' -ex run -ex 'print $_probe_arg0' \
//!       target/debug/examples/usdt_demo
//! ```
//!
//! Probes: `demo:empty` (no arguments); `demo:all_types` (i8, i16, i32, i64, u8, u16, u32, u64,
//! isize, usize, bool, pointer: twelve, the most a probe takes, negative where signed);
//! `demo:inlined` (three sites, one per inlined call); `demo:guarded` (a semaphore, whose
//! argument is computed only while a tool is attached); `demo:hot`; and
//! `phosphor:db_sql__query__select`, a string-named probe with a semaphore of its own, as the
//! Phosphor bridge would make them.

use std::hint::black_box;
use std::io::BufRead;

use phosphor_usdt::{sdt, sdt_define_semaphore, sdt_enabled, sdt_with_semaphore};

/// What the pointer argument of `demo:all_types` points to.
static TARGET: u64 = 0x5eed;

sdt_define_semaphore!(demo, guarded);

/// A module that checks the semaphore defined above, as another crate would.
mod elsewhere {
    phosphor_usdt::sdt_declare_semaphore!(demo, guarded);

    pub fn guarded_enabled() -> bool {
        phosphor_usdt::sdt_enabled!(demo, guarded)
    }
}

/// The argument of `demo:guarded`, which only a tool would want: counts its calls.
fn expensive(calls: &mut u32) -> u64 {
    *calls += 1;
    4242
}

/// A probe in an inline function: each call is a site of its own.
#[inline(always)]
fn inlined(step: u32) {
    sdt!(demo, inlined, step);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None => fire_all(),
        Some("wait") => {
            println!("ready {}", std::process::id());
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line).expect("stdin");
            fire_all();
        }
        Some("loop") => {
            let n: u64 = args.get(1).and_then(|n| n.parse().ok()).expect("usdt_demo loop N");
            hot_loop(n);
        }
        Some(other) => panic!("unknown mode {other:?}: expected nothing, `wait` or `loop N`"),
    }
}

/// Not inlined, so that each probe has one site per call in `fire_all`, in release builds too.
#[inline(never)]
fn fire_all() {
    let ptr: *const u64 = &TARGET;
    println!("pointer {:#x}", ptr as usize);
    sdt!(demo, empty);
    sdt!(
        demo,
        all_types,
        -5i8,
        -300i16,
        -70_000i32,
        -5_000_000_000i64,
        200u8,
        60_000u16,
        4_000_000_000u32,
        u64::MAX - 1,
        -42isize,
        42usize,
        true,
        ptr
    );
    inlined(1);
    inlined(2);
    inlined(3);

    let enabled = sdt_enabled!(demo, guarded);
    let mut calls = 0;
    sdt_with_semaphore!(demo, guarded, expensive(&mut calls));
    println!("enabled {enabled}");
    println!("elsewhere enabled {}", elsewhere::guarded_enabled());
    println!("expensive evaluated {calls}");

    // The Phosphor bridge's entry (a hidden API): the name is `category__name`, sanitised, and the
    // probe has a semaphore of its own, without a symbol.
    phosphor_usdt::__sdt_local_semaphore!(BRIDGE);
    if BRIDGE.is_enabled() {
        phosphor_usdt::__sdt_str_probe!(@semaphore BRIDGE, phosphor, "db.sql", "query: select", 7u32, -7i64);
    }
    println!("done");
}

#[inline(never)]
fn hot_loop(n: u64) {
    for i in 0..n {
        sdt!(demo, hot, black_box(i));
    }
}
