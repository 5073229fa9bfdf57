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

use crate::assemble::{AssembleOptions, AssembleStats, Assembler};
use crate::request::{request, resource, to_json, to_protobuf};
use crate::Span;

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

/// Converts the rest of `reader`'s file into `out`. `Err` only for a failure to write; the input's
/// damage is [`Converted::damage`].
pub fn convert<R: Read>(
    reader: &mut Reader<R>,
    options: &ConvertOptions,
    out: &mut impl Write,
) -> io::Result<Converted> {
    let header = reader.header().clone();
    let res = resource(&header, options.service_name.as_deref());
    let mut asm = Assembler::new(&header, options.assemble.clone());
    let max = options.max_spans.max(1);
    let mut done = Converted::default();
    let mut ready: Vec<Span> = Vec::new();
    let mut write_err: Option<io::Error> = None;
    let mut write = |spans: &mut Vec<Span>, all: bool, done: &mut Converted| -> io::Result<()> {
        while spans.len() >= max || (all && !spans.is_empty()) {
            let batch: Vec<Span> = spans.drain(..spans.len().min(max)).collect();
            let n = batch.len() as u64;
            let req = request(res.clone(), batch);
            let bytes = match options.encoding {
                Encoding::Protobuf => to_protobuf(&req),
                Encoding::Json => {
                    let mut line = to_json(&req).into_bytes();
                    line.push(b'\n');
                    line
                }
            };
            out.write_all(&bytes)?;
            done.spans += n;
            done.batches += 1;
            done.bytes += bytes.len() as u64;
        }
        Ok(())
    };
    let mut pushed = 0u32;
    let result = reader.for_each_event(|e| {
        if write_err.is_some() {
            return;
        }
        asm.push(e);
        pushed = pushed.wrapping_add(1);
        if pushed % 4096 == 0 {
            asm.drain(&mut ready);
            if let Err(e) = write(&mut ready, false, &mut done) {
                write_err = Some(e);
            }
        }
    });
    if let Some(e) = write_err {
        return Err(e);
    }
    asm.finish(&mut ready);
    write(&mut ready, true, &mut done)?;
    out.flush()?;
    done.stats = asm.stats();
    done.damage = result.err();
    Ok(done)
}
