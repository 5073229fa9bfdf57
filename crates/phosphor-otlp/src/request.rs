//! Spans into an `ExportTraceServiceRequest`, and its encodings: protobuf (prost, the official
//! messages) and OTLP JSON (the crate's serde, which follows OTLP's JSON mapping: ids as hex
//! strings, enums as integers, 64-bit integers as decimal strings, lowerCamelCase field names).

use std::collections::HashMap;

use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};
use phosphor_format::file::Header;
use prost::Message as _;

use crate::{ExportTraceServiceRequest, Span};

/// The instrumentation scope's name.
pub const SCOPE_NAME: &str = "phosphor";

/// The resource of a trace file's process: `service.name` (the process name, or `service_name`
/// when given), `host.name`, `process.pid`.
pub fn resource(header: &Header, service_name: Option<&str>) -> Resource {
    let text = |key: &str, value: &str| KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::StringValue(value.to_owned())) }),
        ..KeyValue::default()
    };
    let mut attributes = vec![text("service.name", service_name.unwrap_or(&header.process_name))];
    if let Some(host) = &header.host_name {
        attributes.push(text("host.name", host));
    }
    attributes.push(KeyValue {
        key: "process.pid".to_owned(),
        value: Some(AnyValue { value: Some(any_value::Value::IntValue(i64::from(header.pid))) }),
        ..KeyValue::default()
    });
    Resource { attributes, ..Resource::default() }
}

/// One request holding `spans` under `resource`, in one scope (`phosphor`).
pub fn request(resource: Resource, spans: Vec<Span>) -> ExportTraceServiceRequest {
    let scope = InstrumentationScope {
        name: SCOPE_NAME.to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        ..InstrumentationScope::default()
    };
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(resource),
            scope_spans: vec![ScopeSpans { scope: Some(scope), spans, schema_url: String::new() }],
            schema_url: String::new(),
        }],
    }
}

/// The request as protobuf bytes.
pub fn to_protobuf(request: &ExportTraceServiceRequest) -> Vec<u8> {
    request.encode_to_vec()
}

/// The request as one line of OTLP JSON (no newline).
pub fn to_json(request: &ExportTraceServiceRequest) -> String {
    // Serialising these messages to a string cannot fail: no maps with non-string keys, no I/O.
    serde_json::to_string(request).unwrap_or_default()
}

/// Decodes protobuf bytes (a `--to otlp` file) as a request: what a receiver does.
pub fn from_protobuf(bytes: &[u8]) -> Result<ExportTraceServiceRequest, prost::DecodeError> {
    ExportTraceServiceRequest::decode(bytes)
}

/// Each span's path of names through its parents (`frame/update/physics`), in the order of
/// `spans`: what `phosphor stats` calls a scope path. A parent not among `spans` ends the path; a
/// path longer than the spans' count has gone round a loop of parents (a request from elsewhere
/// may have one) and ends there, so the work is bounded by the spans' count squared.
pub fn span_paths(spans: &[Span]) -> Vec<String> {
    let by_id: HashMap<&[u8], &Span> = spans.iter().map(|s| (s.span_id.as_slice(), s)).collect();
    spans
        .iter()
        .map(|s| {
            let mut names = vec![s.name.as_str()];
            let mut at = s;
            while let Some(p) = by_id.get(at.parent_span_id.as_slice()) {
                if names.len() > spans.len() {
                    break;
                }
                names.push(p.name.as_str());
                at = p;
            }
            names.reverse();
            names.join("/")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: u8, parent: Option<u8>, name: &str) -> Span {
        Span {
            span_id: vec![id; 8],
            parent_span_id: parent.map_or(Vec::new(), |p| vec![p; 8]),
            name: name.into(),
            ..Span::default()
        }
    }

    #[test]
    fn a_span_is_named_by_its_parents_and_a_missing_parent_ends_the_path() {
        let spans = [
            span(3, Some(2), "physics"),
            span(1, None, "frame"),
            span(2, Some(1), "update"),
            span(4, Some(9), "orphan"),
        ];
        assert_eq!(span_paths(&spans), ["frame/update/physics", "frame", "frame/update", "orphan"]);
    }

    #[test]
    fn a_loop_of_parents_ends_instead_of_running_forever() {
        let spans = [span(1, Some(2), "a"), span(2, Some(1), "b")];
        let paths = span_paths(&spans);
        assert_eq!(paths.len(), 2);
        assert!(paths.iter().all(|p| p.split('/').count() <= spans.len() + 1), "{paths:?}");
    }
}
