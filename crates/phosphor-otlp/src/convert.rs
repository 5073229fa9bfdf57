//! A trace file to OTLP requests, streamed: spans are written in batches as they become final, so
//! memory is what the [`Assembler`] holds (bounded per thread) and one batch.
//!
//! Every request holds at most `max_spans` spans and `max_bytes` bytes of protobuf (a span larger
//! on its own is a request alone). Where they go is a [`Requests`]:
//!
//! - [`convert`], to one stream. Protobuf: ONE `ExportTraceServiceRequest`, written as the
//!   sequence of requests. Protobuf merges concatenated messages of one type by appending their
//!   repeated fields, so the file decodes as a single request holding one `ResourceSpans` (the
//!   same resource) per batch: what a tool reading a file wants, but not a collector, which
//!   refuses a body past its limit (20 MiB for most). JSON: JSON Lines, one request per line (as
//!   the OpenTelemetry Collector's file exporter writes them).
//! - [`convert_to`], each request on its own: a folder of files that are each one request
//!   (`curl --data-binary @FILE`), or posted by an exporter. A request is handed over as bytes, or
//!   as a message when [`Requests::messages`] says so (the exporter encodes it itself).
//!
//! A damaged input still gives every span made before the damage (open scopes are not spans:
//! counted as unclosed), then the reader's error, which names the byte offset.

use std::io::{self, Read, Write};

use phosphor_format::file::{Error as FileError, Reader};

use prost::Message as _;

use crate::assemble::{AssembleOptions, AssembleStats, Assembler, Encoded};
use crate::request::{request, resource};
use crate::{ExportTraceServiceRequest, Span};

/// The default largest number of spans per request (or per `ResourceSpans` in a protobuf file).
pub const DEFAULT_MAX_SPANS: usize = 8192;
/// The default largest request (protobuf bytes): well under the 4 MiB a Collector's gRPC
/// receiver and the 20 MiB its HTTP receiver take by default.
pub const DEFAULT_MAX_BYTES: usize = 1 << 20;

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
    /// The largest request, in protobuf bytes (for JSON too: the size of the same request as
    /// protobuf).
    pub max_bytes: usize,
    /// The output encoding.
    pub encoding: Encoding,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            assemble: AssembleOptions::default(),
            service_name: None,
            max_spans: DEFAULT_MAX_SPANS,
            max_bytes: DEFAULT_MAX_BYTES,
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
    /// Requests (JSON lines, or `ResourceSpans` batches of one protobuf stream) written.
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
    let mut stream = Stream(out);
    let c = convert_to(reader, options, &mut stream)?;
    stream.0.flush()?;
    Ok(c)
}

/// [`convert`], each request handed to `out` on its own. `Err`: `out`'s first error (nothing is
/// handed to it after).
pub fn convert_to<R: Read>(
    reader: &mut Reader<R>,
    options: &ConvertOptions,
    out: &mut dyn Requests,
) -> io::Result<Converted> {
    let asm = Assembler::new(reader.header(), options.assemble.clone());
    run(reader, asm, options, out)
}

/// Where a conversion's requests go, one at a time.
pub trait Requests {
    /// One encoded request holding `spans` spans: protobuf, or a JSON line with its newline.
    fn request(&mut self, bytes: &[u8], spans: u64) -> io::Result<()>;

    /// Whether requests are handed over as messages ([`Requests::message`]) instead.
    fn messages(&self) -> bool {
        false
    }

    /// One request holding `spans` spans, as a message (when [`Requests::messages`]).
    fn message(&mut self, request: &ExportTraceServiceRequest, spans: u64) -> io::Result<()> {
        self.request(&request.encode_to_vec(), spans)
    }
}

/// One stream: the requests one after the other.
struct Stream<'a, W: Write>(&'a mut W);

impl<W: Write> Requests for Stream<'_, W> {
    fn request(&mut self, bytes: &[u8], _spans: u64) -> io::Result<()> {
        self.0.write_all(bytes)
    }
}

/// Writes batches of spans as they become ready.
struct Batches<'a> {
    out: &'a mut dyn Requests,
    encoding: Encoding,
    max: usize,
    max_bytes: usize,
    /// The request, kept between batches: its spans are the batch being filled.
    request: ExportTraceServiceRequest,
    /// The protobuf size of the spans of the batch being filled.
    batch_bytes: usize,
    bytes: Vec<u8>,
    /// Spans encoded, to hand back to the assembler for reuse.
    spent: Vec<Span>,
    done: Converted,
    /// The first failure to write: nothing is written after it.
    error: Option<io::Error>,
}

impl Batches<'_> {
    /// Takes every span of `ready` into batches, writing each batch once full; hands the spans
    /// written back in `ready`, for reuse.
    fn take(&mut self, ready: &mut Vec<Span>) {
        for span in ready.drain(..) {
            let size = span.encoded_len() + 8;
            if self.batch_bytes > 0 && self.batch_bytes + size > self.max_bytes {
                self.write();
            }
            self.batch_bytes += size;
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
        self.batch_bytes = 0;
        let batch = &mut self.request.resource_spans[0].scope_spans[0].spans;
        let n = batch.len() as u64;
        if n == 0 || self.error.is_some() {
            self.spent.append(batch);
            return;
        }
        self.bytes.clear();
        let written = if self.out.messages() {
            self.out.message(&self.request, n)
        } else {
            match self.encoding {
                Encoding::Protobuf => {
                    // Encoding into a Vec cannot fail: it grows as needed.
                    let _ = self.request.encode(&mut self.bytes);
                }
                Encoding::Json => {
                    // Serialising these messages cannot fail: no maps with non-string keys, and a
                    // Vec as the writer.
                    let _ = serde_json::to_writer(&mut self.bytes, &self.request);
                    self.bytes.push(b'\n');
                }
            }
            self.out.request(&self.bytes, n)
        };
        self.spent.append(&mut self.request.resource_spans[0].scope_spans[0].spans);
        if let Err(e) = written {
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
    out: &mut dyn Requests,
) -> io::Result<Converted> {
    let res = resource(reader.header(), options.service_name.as_deref());
    let direct = options.encoding == Encoding::Protobuf && !out.messages();
    let mut batches = Batches {
        out,
        encoding: options.encoding,
        max: options.max_spans.max(1),
        max_bytes: options.max_bytes.max(1),
        request: request(res, Vec::new()),
        batch_bytes: 0,
        bytes: Vec::new(),
        spent: Vec::new(),
        done: Converted::default(),
        error: None,
    };
    if direct {
        asm.encode_protobuf(&batches.request, batches.max, batches.max_bytes);
    }
    let mut flush = |ready: &mut Vec<Span>, encoded: &mut Encoded| {
        batches.take(ready);
        for (bytes, spans) in encoded.iter() {
            if batches.error.is_some() {
                break;
            }
            batches.done.bytes += bytes.len() as u64;
            if let Err(e) = batches.out.request(bytes, spans) {
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
    let mut done = batches.done;
    done.stats = asm.stats();
    done.damage = result.err();
    Ok(done)
}
