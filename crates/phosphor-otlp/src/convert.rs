//! A trace file to OTLP requests, streamed: spans are written in batches as they become final, so
//! memory is what the [`Assembler`] holds (bounded per thread) and one batch.
//!
//! - Protobuf: the output is ONE `ExportTraceServiceRequest`, written as a sequence of encoded
//!   requests of at most `max_spans` spans each. Protobuf merges concatenated messages of one type
//!   by appending their repeated fields, so the file decodes as a single request holding one
//!   `ResourceSpans` (the same resource) per batch; no batch needs the whole file in memory.
//! - JSON: JSON Lines, one request per line (as the OpenTelemetry Collector's file exporter writes
//!   them), each of at most `max_spans` spans.
//!
//! A damaged input still gives every span made before the damage (open scopes are not spans:
//! counted as unclosed), then the reader's error, which names the byte offset.

use std::io::{self, Read, Write};

use phosphor_format::file::{Error as FileError, Reader};

use prost::Message as _;

use crate::assemble::{AssembleOptions, AssembleStats, Assembler};
use crate::request::{request, resource};
use crate::{ExportTraceServiceRequest, Span};

/// The default largest number of spans per request (or per `ResourceSpans` in a protobuf file):
/// a few MiB at most, under the 4 MiB a Collector's gRPC receiver takes by default.
pub const DEFAULT_MAX_SPANS: usize = 8192;

/// The output encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// OTLP protobuf: one `ExportTraceServiceRequest` per file.
    Protobuf,
    /// OTLP JSON Lines: one `ExportTraceServiceRequest` per line.
    Json,
}

/// How a file is converted.
#[derive(Clone, Debug)]
pub struct ConvertOptions {
    /// Spans and selection.
    pub assemble: AssembleOptions,
    /// Overrides `service.name` (default: the process name).
    pub service_name: Option<String>,
    /// The largest number of spans per request (at least 1).
    pub max_spans: usize,
    /// The output encoding.
    pub encoding: Encoding,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            assemble: AssembleOptions::default(),
            service_name: None,
            max_spans: DEFAULT_MAX_SPANS,
            encoding: Encoding::Protobuf,
        }
    }
}

/// What a conversion did.
#[derive(Debug, Default)]
pub struct Converted {
    /// The assembler's figures.
    pub stats: AssembleStats,
    /// Spans written.
    pub spans: u64,
    /// Requests (JSON lines) or `ResourceSpans` batches (protobuf) written.
    pub batches: u64,
    /// Bytes written.
    pub bytes: u64,
    /// The input's damage, if any: everything before it was converted.
    pub damage: Option<FileError>,
}

/// Converts the rest of `reader`'s file into `out`, reading it once: each thread's slices are
/// held by the trace model until their tree is known (at the end of the file, or past the model's
/// pending limit per thread, when the oldest are final early: a scope that encloses some of them
/// later is counted in [`AssembleStats::evicted_roots`]). `Err` only for a failure to write; the input's damage is
/// [`Converted::damage`].
pub fn convert<R: Read>(
    reader: &mut Reader<R>,
    options: &ConvertOptions,
    out: &mut impl Write,
) -> io::Result<Converted> {
    let asm = Assembler::new(reader.header(), options.assemble.clone());
    run(reader, asm, options, out)
}

/// Writes batches of spans as they become ready.
struct Batches<'a, W: Write> {
    out: &'a mut W,
    encoding: Encoding,
    max: usize,
    /// The request, kept between batches: its spans are the batch being filled.
    request: ExportTraceServiceRequest,
    bytes: Vec<u8>,
    /// Spans encoded, to hand back to the assembler for reuse.
    spent: Vec<Span>,
    done: Converted,
    /// The first failure to write: nothing is written after it.
    error: Option<io::Error>,
}

impl<W: Write> Batches<'_, W> {
    /// Takes every span of `ready` into batches, writing each batch once full; hands the spans
    /// written back in `ready`, for reuse.
    fn take(&mut self, ready: &mut Vec<Span>) {
        for span in ready.drain(..) {
            let batch = &mut self.request.resource_spans[0].scope_spans[0].spans;
            batch.push(span);
            if batch.len() >= self.max {
                self.write();
            }
        }
        std::mem::swap(ready, &mut self.spent);
    }

    /// Writes the batch being filled, if it holds any span.
    fn write(&mut self) {
        let batch = &mut self.request.resource_spans[0].scope_spans[0].spans;
        let n = batch.len() as u64;
        if n == 0 || self.error.is_some() {
            self.spent.append(batch);
            return;
        }
        self.bytes.clear();
        match self.encoding {
            Encoding::Protobuf => {
                // Encoding into a Vec cannot fail: it grows as needed.
                let _ = self.request.encode(&mut self.bytes);
            }
            Encoding::Json => {
                // Serialising these messages cannot fail: no maps with non-string keys, and a Vec
                // as the writer.
                let _ = serde_json::to_writer(&mut self.bytes, &self.request);
                self.bytes.push(b'\n');
            }
        }
        self.spent.append(&mut self.request.resource_spans[0].scope_spans[0].spans);
        if let Err(e) = self.out.write_all(&self.bytes) {
            self.error = Some(e);
            return;
        }
        self.done.spans += n;
        self.done.batches += 1;
        self.done.bytes += self.bytes.len() as u64;
    }
}

fn run<R: Read>(
    reader: &mut Reader<R>,
    mut asm: Assembler,
    options: &ConvertOptions,
    out: &mut impl Write,
) -> io::Result<Converted> {
    let res = resource(reader.header(), options.service_name.as_deref());
    let mut batches = Batches {
        out,
        encoding: options.encoding,
        max: options.max_spans.max(1),
        request: request(res, Vec::new()),
        bytes: Vec::new(),
        spent: Vec::new(),
        done: Converted::default(),
        error: None,
    };
    let direct = options.encoding == Encoding::Protobuf;
    if direct {
        asm.encode_protobuf(&batches.request, batches.max);
    }
    let mut flush = |ready: &mut Vec<Span>, encoded: &mut Vec<u8>| {
        batches.take(ready);
        if !encoded.is_empty() && batches.error.is_none() {
            batches.done.bytes += encoded.len() as u64;
            if let Err(e) = batches.out.write_all(encoded) {
                batches.error = Some(e);
            }
        }
        encoded.clear();
    };
    let result = reader.for_each_event(|e| asm.push_and_flush(e, &mut flush));
    asm.finish_and_flush(&mut flush);
    batches.write();
    if direct {
        (batches.done.spans, batches.done.batches) = asm.encoded();
    }
    if let Some(e) = batches.error {
        return Err(e);
    }
    batches.out.flush()?;
    let mut done = batches.done;
    done.stats = asm.stats();
    done.damage = result.err();
    Ok(done)
}
