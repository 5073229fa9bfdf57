//! The OTLP sink (feature `otlp`): a datastream whose bytes go to a
//! [`Forwarder`](phosphor_otlp::forward::Forwarder), which makes spans of them and posts them to
//! an OpenTelemetry collector over OTLP/HTTP.
//!
//! The stream's own thread writes its trace file bytes into the forwarder as into any sink; the
//! forwarder parses them on a thread of its own and the exporter posts on a third, so no
//! recording thread ever waits on the network. The forwarder's pipe is bounded: when the
//! collector side cannot keep up, the stream falls behind and the writers drop (and count) events
//! as with any slow sink, and the exporter's bounded queue drops (and counts) whole batches.
//! Closing the stream (or stopping the trace) flushes the spans left, for up to the exporter's
//! shutdown deadline.

use std::io::Write;
use std::sync::{Arc, Mutex};

use phosphor_otlp::export::{ExportHandle, ExportOptions, Exporter};
use phosphor_otlp::forward::{ForwardOptions, ForwardStatsHandle, Forwarder};

use super::OtlpStats;

/// Where and how an OTLP datastream sends its spans ([`Sink::Otlp`](super::Sink::Otlp)).
#[derive(Clone, Debug)]
pub struct OtlpSink {
    /// The collector, headers, queue bound, retries (boxed: a `Sink` stays small).
    pub export: Box<ExportOptions>,
    /// Selection, hold time, batch size, service name.
    pub forward: Box<ForwardOptions>,
}

impl OtlpSink {
    /// The defaults ([`ExportOptions::new`], [`ForwardOptions::default`]) for the collector at
    /// `endpoint` (`http://host:4318`).
    pub fn new(endpoint: impl Into<String>) -> OtlpSink {
        OtlpSink { export: Box::new(ExportOptions::new(endpoint)), forward: Box::default() }
    }

    /// Starts the exporter and the forwarder: the writer to give the stream, and its figures.
    pub(super) fn start(&self, name: String) -> std::io::Result<(Box<dyn Write + Send>, OtlpProbe)> {
        let exporter = Exporter::start((*self.export).clone()).map_err(std::io::Error::other)?;
        let forwarder = Forwarder::new(name, (*self.forward).clone(), exporter.handle())?;
        let probe = OtlpProbe {
            forward: forwarder.stats_handle(),
            export: exporter.handle(),
            last: Arc::new(Mutex::new(None)),
        };
        let writer =
            OtlpWriter { forwarder: Some(forwarder), exporter: Some(exporter), probe: probe.clone() };
        Ok((Box::new(writer), probe))
    }
}

/// Reads an OTLP stream's figures while its writer is elsewhere.
#[derive(Clone, Debug)]
pub(super) struct OtlpProbe {
    forward: ForwardStatsHandle,
    export: ExportHandle,
    /// The final figures, once the writer has finished (the exporter's then count every span).
    last: Arc<Mutex<Option<OtlpStats>>>,
}

impl OtlpProbe {
    pub(super) fn stats(&self) -> OtlpStats {
        if let Some(s) = self.last.lock().unwrap_or_else(|p| p.into_inner()).clone() {
            return s;
        }
        let f = self.forward.stats();
        let e = self.export.stats();
        OtlpStats {
            spans_made: f.spans_made,
            spans_unselected: f.spans_unselected,
            spans_sampled_out: f.spans_sampled_out,
            spans_tail_dropped: f.spans_tail_dropped,
            spans_sent: f.spans_sent,
            spans_exported: e.spans_exported,
            spans_dropped: e.spans_dropped,
            spans_rejected: e.spans_rejected,
            spans_failed: e.spans_failed,
            requests: e.requests,
            requests_failed: e.requests_failed,
            retries: e.retries,
            bytes_discarded: f.bytes_discarded,
            last_error: e.last_error,
            stream_error: f.error,
        }
    }
}

/// The stream's writer: the forwarder, and the exporter it feeds, shut down in that order.
struct OtlpWriter {
    forwarder: Option<Forwarder>,
    exporter: Option<Exporter>,
    probe: OtlpProbe,
}

impl Write for OtlpWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.forwarder {
            Some(f) => f.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for OtlpWriter {
    fn drop(&mut self) {
        if let Some(f) = self.forwarder.take() {
            f.finish();
        }
        if let Some(e) = self.exporter.take() {
            e.shutdown();
        }
        let last = self.probe.stats();
        *self.probe.last.lock().unwrap_or_else(|p| p.into_inner()) = Some(last);
    }
}
