//! Phosphor traces as OpenTelemetry spans (OTLP): the conversion of a trace file
//! (`phosphor convert --to otlp`) and the live forwarding of a datastream (`Sink::Otlp`,
//! `phosphor record --otlp`).
//!
//! Data flows one way: [`context`] (W3C trace context: the reserved callsite that carries it, and
//! `traceparent` parsing) < [`select`] (which spans are kept) < [`assemble`] (events in file order
//! to spans with parents, attributes and span events) < [`request`] (an `ExportTraceServiceRequest`,
//! protobuf or OTLP JSON) < [`forward`] (live: a trace byte stream in, batches of spans posted to
//! an OTLP/HTTP endpoint out, through [`export`]: the HTTP sender with its queue and retries).

pub mod assemble;
pub mod bound;
pub mod context;
pub mod convert;
pub mod export;
pub mod forward;
pub mod ids;
mod pipe;
#[cfg(feature = "receiver")]
pub mod receiver;
pub mod request;
pub mod select;

pub use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
pub use opentelemetry_proto::tonic::trace::v1::Span;
