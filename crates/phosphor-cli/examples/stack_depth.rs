//! How deep a trace's CPU sample stacks are and how many of their frames symbolize (issue 39,
//! defect 13): reads a trace file's system blocks, then prints the distribution of frames per CPU
//! sample, the share of frames named by a function (through `phosphor_export`'s `Symbolizer`, as
//! the viewer and `phosphor stats` name them), and the objects whose frames stay addresses; and with N, the first N stacks symbolized.
//!
//! ```text
//! cargo run --release -p phosphor-cli --example stack_depth -- demo-out/trace.phos [N]
//! ```

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufReader;

use phosphor::format::file::{Block, Reader};
use phosphor::format::system::{Sample, SampleKind};
use phosphor_export::symbolize::Symbolizer;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: stack_depth TRACE")?;
    let mut reader = Reader::new(BufReader::new(File::open(&path)?))?;
    let mut symbolizer = Symbolizer::new();
    let mut samples: Vec<Sample> = Vec::new();
    while let Some(block) = reader.next_block()? {
        if let Block::System(batch) = block {
            symbolizer.add_mappings(&batch.mappings);
            samples.extend(batch.samples.iter().filter(|s| s.kind == SampleKind::Cpu).cloned());
        }
    }
    if samples.is_empty() {
        return Err(format!("{path}: no CPU samples").into());
    }
    let mut depths: Vec<usize> = samples.iter().map(|s| s.frames.len()).collect();
    depths.sort_unstable();
    let buckets: [(usize, usize); 7] =
        [(0, 0), (1, 1), (2, 5), (6, 10), (11, 20), (21, 50), (51, usize::MAX)];
    println!("{} CPU samples", samples.len());
    println!(
        "frames per sample: min {} median {} p90 {} max {}",
        depths[0],
        depths[depths.len() / 2],
        depths[depths.len() * 9 / 10],
        depths[depths.len() - 1]
    );
    for (lo, hi) in buckets {
        let n = depths.iter().filter(|&&d| d >= lo && d <= hi).count();
        let label = match (lo, hi) {
            (l, h) if l == h => format!("{l}"),
            (l, usize::MAX) => format!("{l}+"),
            (l, h) => format!("{l}-{h}"),
        };
        println!("  {label:>6}: {n:>7} ({:.1}%)", 100.0 * n as f64 / samples.len() as f64);
    }
    let (mut frames, mut named) = (0u64, 0u64);
    let mut raw_by_object: BTreeMap<String, u64> = BTreeMap::new();
    for s in &samples {
        for (i, &a) in s.frames.iter().enumerate() {
            frames += 1;
            let f = symbolizer.function(a, i > 0);
            if f.starts_with("0x") || f.contains("+0x") {
                let object = f.split("+0x").next().unwrap_or(&f).to_owned();
                let object = if object.starts_with("0x") { "(outside every mapping)".into() } else { object };
                *raw_by_object.entry(object).or_default() += 1;
            } else {
                named += 1;
            }
        }
    }
    println!("frames: {frames}, symbolized {named} ({:.2}%)", 100.0 * named as f64 / frames.max(1) as f64);
    for (object, n) in &raw_by_object {
        println!("  raw in {object}: {n}");
    }
    // `stack_depth TRACE N`: also the first N stacks, symbolized.
    let show: usize = std::env::args().nth(2).and_then(|n| n.parse().ok()).unwrap_or(0);
    for s in samples.iter().take(show) {
        println!("sample of thread {} ({} frames):", s.tid, s.frames.len());
        for (i, &a) in s.frames.iter().enumerate() {
            println!("  {a:#x} {}", symbolizer.function(a, i > 0));
        }
    }
    for w in symbolizer.warnings() {
        println!("  warning: {w}");
    }
    Ok(())
}
