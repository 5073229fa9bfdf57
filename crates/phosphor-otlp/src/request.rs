//! Spans into an `ExportTraceServiceRequest`. INTERFACE (session 34 lead): owner helper A.

use opentelemetry_proto::tonic::resource::v1::Resource;
use phosphor_format::file::Header;

use crate::{ExportTraceServiceRequest, Span};

/// The resource of a trace file's process: `service.name` (the process name, or `service_name`
/// when given), `host.name`, `process.pid`.
pub fn resource(header: &Header, service_name: Option<&str>) -> Resource {
    let _ = (header, service_name);
    unimplemented!("helper A")
}

/// One request holding `spans` under `resource`, in one scope (`phosphor`).
pub fn request(resource: Resource, spans: Vec<Span>) -> ExportTraceServiceRequest {
    let _ = (resource, spans);
    unimplemented!("helper A")
}
