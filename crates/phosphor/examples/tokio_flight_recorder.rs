//! The flight recorder on a tokio server (`phosphor::tokio`): the trace is a ring that keeps the
//! last events in a fixed 16 MiB, and a trigger dumps it to a file when a poll takes longer than
//! 10 ms. Request handlers run for a while; one of them blocks its worker for 15 ms in one poll,
//! and the dump holds that `long poll` with the tasks and polls that led up to it.
//!
//! ```text
//! RUSTFLAGS="--cfg tokio_unstable" cargo run -p phosphor --features tokio --example tokio_flight_recorder -- dumps/
//! cargo run -p phosphor-cli -- stats dumps/*.phos
//! ```
//!
//! Without `--cfg tokio_unstable` tokio has no task hooks: nothing is recorded, nothing dumped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use phosphor::tokio::TaskHooks;
use phosphor::trigger::Trigger;
use phosphor::{BufferMode, TraceConfig, TraceLog};

/// The trigger's limit: a poll longer than this dumps the ring.
pub const LIMIT: Duration = Duration::from_millis(10);

/// A request: a little work, a wait for "the database", a little more work.
async fn handle(i: u64) -> u64 {
    let a = std::hint::black_box((0..2_000 + i % 100).sum::<u64>());
    tokio::time::sleep(Duration::from_millis(1)).await;
    if i == 300 {
        // A handler that blocks its worker: a 15 ms poll.
        std::thread::sleep(Duration::from_millis(15));
    }
    a + std::hint::black_box((0..1_000u64).sum::<u64>())
}

/// Serves 600 requests (a few at a time) on a two-worker runtime recording into `log`'s ring,
/// and returns the dump the long poll caused, once written (`None` without the hooks).
pub fn run(log: &'static TraceLog, dir: &Path) -> Result<Option<PathBuf>, Box<dyn std::error::Error>> {
    let config = TraceConfig::new(BufferMode::Ring, 16 << 20).trigger_dir(dir).trigger(Trigger::slower_than(
        phosphor::tokio::CATEGORY,
        "long poll",
        LIMIT,
    ));
    log.start(config)?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    builder.worker_threads(2).enable_time();
    TaskHooks::new().log(log).long_poll(LIMIT).install(&mut builder);
    let rt = builder.build()?;
    rt.block_on(async {
        for batch in 0..60u64 {
            let handlers: Vec<_> = (0..10).map(|k| tokio::spawn(handle(batch * 10 + k))).collect();
            for h in handlers {
                let _ = h.await;
            }
        }
    });
    drop(rt);
    if !phosphor::tokio::HOOKS_AVAILABLE {
        log.stop();
        return Ok(None);
    }
    // The dump is written by the recorder's trigger thread.
    let deadline = Instant::now() + Duration::from_secs(60);
    let dump = loop {
        if let Some(d) = log.triggers().dumps.first() {
            break d.path.clone();
        }
        if Instant::now() > deadline {
            return Err(format!("no dump after the long poll: {:?}", log.triggers()).into());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    log.stop();
    Ok(Some(dump))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "dumps".into()));
    match run(TraceLog::global(), &dir)? {
        Some(path) => println!("a poll over {LIMIT:?}: the ring dumped to {}", path.display()),
        None => eprintln!("built without --cfg tokio_unstable: tokio has no task hooks, nothing recorded"),
    }
    Ok(())
}
