//! Folded stacks of a trace's CPU samples (`phosphor flamegraph --samples`): one line per thread
//! and distinct call stack, `thread;root;…;leaf COUNT`, the frames symbolized (inlined functions
//! as frames of their own), root first.
//!
//! Each distinct stack is symbolized once; memory is the distinct (thread, stack) pairs and
//! their text. The samples are the [`SystemContext`]'s, read from the system blocks first.

use std::collections::BTreeMap;
use std::io::{self, Write};

use crate::symbolize::Symbolizer;
use crate::system::SystemContext;

/// A frame name as a folded segment: `;` and line breaks would break the format.
fn segment(name: &str) -> String {
    name.replace([';', '\n', '\r'], "_")
}

/// The folded lines of `context`'s CPU samples, sorted, with their counts: the first segment is
/// `thread_name(tid)` (or `thread TID`), then the frames, outermost first.
pub fn fold_samples(
    context: &SystemContext,
    symbolizer: &mut Symbolizer,
    thread_name: impl Fn(u32) -> Option<String>,
) -> Vec<(String, u64)> {
    symbolizer.add_mappings(&context.mappings);
    let mut counts: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for (tid, stack) in context.all_samples() {
        *counts.entry((tid, stack)).or_default() += 1;
    }
    let mut stack_text: BTreeMap<u32, String> = BTreeMap::new();
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for ((tid, stack), n) in counts {
        let text = stack_text.entry(stack).or_insert_with(|| {
            let mut names = Vec::new();
            for (i, &address) in context.stack(stack).iter().enumerate() {
                // Innermost first, each address's inlined frames innermost first too.
                for f in symbolizer.frames(address, i > 0).iter() {
                    names.push(segment(&f.function));
                }
            }
            names.reverse();
            names.join(";")
        });
        let thread = segment(&thread_name(tid).unwrap_or_else(|| format!("thread {tid}")));
        let line = if text.is_empty() { thread } else { format!("{thread};{text}") };
        *lines.entry(line).or_default() += n;
    }
    lines.into_iter().collect()
}

/// Writes folded lines as `stack count` lines.
pub fn write_lines(lines: &[(String, u64)], mut out: impl Write) -> io::Result<()> {
    for (stack, n) in lines {
        writeln!(out, "{stack} {n}")?;
    }
    out.flush()
}

/// Draws folded sample lines as an SVG flame graph titled `title` (widths in samples).
pub fn write_flamegraph(lines: &[(String, u64)], out: impl Write, title: &str) -> io::Result<()> {
    let mut options = inferno::flamegraph::Options::default();
    options.title = title.to_owned();
    options.count_name = "samples".to_owned();
    let text: Vec<String> = lines.iter().map(|(s, n)| format!("{s} {n}")).collect();
    inferno::flamegraph::from_lines(&mut options, text.iter().map(String::as_str), out)
        .map_err(|e| io::Error::other(e.to_string()))
}

#[cfg(test)]
mod tests {
    use phosphor_craft::system::system_trace;
    use phosphor_format::file::Reader;

    use super::*;

    #[test]
    fn samples_fold_root_first_by_thread_and_stack() {
        let bytes = system_trace().unwrap();
        let ctx = SystemContext::read(Reader::new(&bytes[..]).unwrap()).unwrap();
        let lines = fold_samples(&ctx, &mut Symbolizer::offline(), |t| (t == 101).then(|| "main".into()));
        // Unsymbolized frames are named by their own offset (a return address too).
        assert_eq!(
            lines,
            [
                ("main;app+0x1000".to_string(), 1),
                ("main;app+0x2000;app+0x1000".to_string(), 1),
                ("main;app+0x2000;app+0x3000".to_string(), 2),
            ]
        );
    }
}
