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

    /// The collector and options the standard `OTEL_*` variables give
    /// ([`OtelEnv`](phosphor_otlp::export::OtelEnv): `OTEL_EXPORTER_OTLP_ENDPOINT`, `_HEADERS`,
    /// `_TIMEOUT`, `_COMPRESSION`, `_PROTOCOL`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`),
    /// else the defaults for `http://localhost:4318`.
    pub fn from_env() -> Result<OtlpSink, phosphor_otlp::export::EnvError> {
        let env = phosphor_otlp::export::OtelEnv::read()?;
        let forward = ForwardOptions { service_name: env.service_name, ..ForwardOptions::default() };
        Ok(OtlpSink { export: Box::new(env.export), forward: Box::new(forward) })
    }

    /// How long closing the stream (or stopping the trace) goes on sending the spans left
    /// ([`ExportOptions::shutdown_deadline`], 5 s by default); what is unsent then is counted as
    /// failed, and a collector that never answers holds the close at most this and
    /// [`SHUTDOWN_MARGIN`](phosphor_otlp::export::SHUTDOWN_MARGIN).
    pub fn shutdown_deadline(mut self, deadline: std::time::Duration) -> OtlpSink {
        self.export.shutdown_deadline = deadline;
        self
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
            spans_too_large: e.spans_too_large,
            spans_trimmed: e.spans_trimmed,
            requests_split: e.requests_split,
            bytes_sent: e.bytes_sent,
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
