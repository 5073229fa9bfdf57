//! Folded stacks of a trace's CPU samples (`phosphor flamegraph --samples`): one line per thread
//! and distinct call stack, `thread;root;…;leaf COUNT`, the frames symbolized (inlined functions
//! as frames of their own), root first.
//!
//! Each distinct stack is symbolized once; memory is the distinct (thread, stack) pairs and
//! their text. The samples are the [`SystemContext`]'s, read from the system blocks first.
//!
//! [`SampleScopes`] adds, in a pass over the events, the scopes open at each sample's time
//! (complete events and begin/end pairs of the sample's thread whose interval holds it), so that
//! a line can start with the instrumented path: `thread;frame;update;root;…;leaf`. It holds the
//! scope names of each sample (at most [`MAX_SCOPES_PER_SAMPLE`]), never the events.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Read, Write};

use phosphor_format::file::{self, Reader};
use phosphor_format::Phase;

use crate::error::{read_chunks, Item};

use crate::symbolize::Symbolizer;
use crate::system::SystemContext;

/// A frame name as a folded segment: `;` and line breaks would break the format.
fn segment(name: &str) -> String {
    name.replace([';', '\n', '\r'], "_")
}

/// The most scopes kept open around one sample (deeper ones are left out of its prefix).
pub const MAX_SCOPES_PER_SAMPLE: usize = 64;

/// A scope around a sample: its start and end (`CLOCK_MONOTONIC` ns) and its name's number.
type Around = (u64, u64, u32);

/// The scopes open at each CPU sample's time (see the module's documentation).
#[derive(Debug, Default)]
pub struct SampleScopes {
    /// By thread, by place among its samples: `(start_ns, end_ns, name number)` of each scope
    /// holding it.
    threads: HashMap<u32, Vec<Vec<Around>>>,
    names: Vec<String>,
    numbers: HashMap<String, u32>,
    /// Begins open per thread: `(start_ns, name number)`.
    open: HashMap<u32, Vec<(u64, u32)>>,
}

impl SampleScopes {
    /// Reads the events of the rest of the file and finds the scopes around `context`'s samples.
    /// Returns what it found before a read error too, with the error.
    pub fn read<R: Read>(
        mut reader: Reader<R>,
        context: &SystemContext,
    ) -> (SampleScopes, Option<file::Error>) {
        let clock = reader.header().clock.clone();
        let mut scopes = SampleScopes::default();
        let mut name = String::new();
        let failure = read_chunks(&mut reader, |item| -> Result<(), std::convert::Infallible> {
            if let Item::Event(e) = item {
                let phase = e.callsite.phase;
                if !matches!(phase, Phase::Begin | Phase::End | Phase::Complete) {
                    return Ok(());
                }
                let start = clock.to_ns(e.ts);
                match phase {
                    Phase::Begin => {
                        crate::logs::write_event_name(&mut name, e);
                        let n = scopes.number(&name);
                        scopes.open.entry(e.tid).or_default().push((start, n));
                    }
                    Phase::End => {
                        if let Some((s, n)) = scopes.open.get_mut(&e.tid).and_then(Vec::pop) {
                            scopes.add(context, e.tid, s, start, n);
                        }
                    }
                    _ => {
                        let end = clock.to_ns(e.ts.saturating_add(e.duration.unwrap_or(0)));
                        crate::logs::write_event_name(&mut name, e);
                        let n = scopes.number(&name);
                        scopes.add(context, e.tid, start, end, n);
                    }
                }
            }
            Ok(())
        });
        let Ok(failure) = failure;
        // Begins never ended hold every later sample of their thread.
        for (tid, open) in std::mem::take(&mut scopes.open) {
            for (s, n) in open {
                scopes.add(context, tid, s, u64::MAX, n);
            }
        }
        (scopes, failure)
    }

    fn number(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.numbers.get(name) {
            return n;
        }
        self.names.push(segment(name));
        self.numbers.insert(name.to_owned(), self.names.len() as u32 - 1);
        self.names.len() as u32 - 1
    }

    fn add(&mut self, context: &SystemContext, tid: u32, start: u64, end: u64, name: u32) {
        let places = context.sample_places(tid, start, end.max(start.saturating_add(1)));
        if places.is_empty() {
            return;
        }
        let t =
            self.threads.entry(tid).or_insert_with(|| vec![Vec::new(); context.thread_samples(tid).len()]);
        for p in places {
            if t[p].len() < MAX_SCOPES_PER_SAMPLE {
                t[p].push((start, end, name));
            }
        }
    }

    /// The names of the scopes open around thread `tid`'s sample at `place`, outermost first
    /// (the earlier start, then the later end).
    fn path(&self, tid: u32, place: usize) -> Vec<&str> {
        let Some(mut s) = self.threads.get(&tid).and_then(|t| t.get(place)).cloned() else {
            return Vec::new();
        };
        s.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
        s.iter().map(|&(_, _, n)| self.names[n as usize].as_str()).collect()
    }
}

/// The folded lines of `context`'s CPU samples, sorted, with their counts: the first segment is
/// `thread_name(tid)` (or `thread TID`), then the scopes open at the sample's time if `scopes` is
/// given, then the frames, outermost first.
pub fn fold_samples(
    context: &SystemContext,
    symbolizer: &mut Symbolizer,
    scopes: Option<&SampleScopes>,
    thread_name: impl Fn(u32) -> Option<String>,
) -> Vec<(String, u64)> {
    symbolizer.add_mappings(&context.mappings);
    // By thread, scope path and stack.
    let mut counts: BTreeMap<(u32, String, u32), u64> = BTreeMap::new();
    for tid in context.thread_ids() {
        for (place, (_, stack)) in context.thread_samples(tid).enumerate() {
            let prefix = scopes.map(|s| s.path(tid, place).join(";")).unwrap_or_default();
            *counts.entry((tid, prefix, stack)).or_default() += 1;
        }
    }
    let mut stack_text: BTreeMap<u32, String> = BTreeMap::new();
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    for ((tid, prefix, stack), n) in counts {
        let text = stack_text.entry(stack).or_insert_with(|| {
            let mut names = Vec::new();
            // Innermost first, each address's inlined frames innermost first too.
            for (_, frames) in symbolizer.stack_frames(context.stack(stack)) {
                names.extend(frames.iter().map(|f| segment(&f.function)));
            }
            names.reverse();
            names.join(";")
        });
        let mut line = segment(&thread_name(tid).unwrap_or_else(|| format!("thread {tid}")));
        for part in [&prefix, &*text] {
            if !part.is_empty() {
                line.push(';');
                line.push_str(part);
            }
        }
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
        let lines =
            fold_samples(&ctx, &mut Symbolizer::offline(), None, |t| (t == 101).then(|| "main".into()));
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

    #[test]
    fn with_scopes_each_stack_is_prefixed_by_the_scopes_open_at_its_sample() {
        let bytes = system_trace().unwrap();
        let ctx = SystemContext::read(Reader::new(&bytes[..]).unwrap()).unwrap();
        let (scopes, failure) = SampleScopes::read(Reader::new(&bytes[..]).unwrap(), &ctx);
        assert!(failure.is_none());
        let lines = fold_samples(&ctx, &mut Symbolizer::offline(), Some(&scopes), |_| None);
        // The samples at 70 and 75 ms fall in work/inner (62..80 ms), the others in work only.
        assert_eq!(
            lines,
            [
                ("thread 101;work;app+0x1000".to_string(), 1),
                ("thread 101;work;app+0x2000;app+0x1000".to_string(), 1),
                ("thread 101;work;inner;app+0x2000;app+0x3000".to_string(), 2),
            ]
        );
    }
}
