//! The standard OpenTelemetry exporter variables, as the OTLP exporter specification defines
//! them: `OTEL_EXPORTER_OTLP_ENDPOINT` (a base URL: `/v1/traces` is added) or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is), `_HEADERS` (`k=v,k2=v2`, values
//! percent-decoded), `_TIMEOUT` (milliseconds), `_COMPRESSION` (`gzip` or `none`), `_PROTOCOL`
//! (`http/protobuf` or `http/json`; `grpc` is refused), each also as `OTEL_EXPORTER_OTLP_TRACES_*`
//! (which wins), and `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES`. An empty variable is
//! unset.

use std::ffi::OsString;
use std::time::Duration;

use super::{Compression, Encoding, ExportOptions};

/// The collector when no endpoint variable is set (the specification's default for OTLP/HTTP).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";

/// What the `OTEL_*` variables say.
#[derive(Clone, Debug)]
pub struct OtelEnv {
    /// The exporter's options: [`ExportOptions::new`]'s defaults changed by the variables.
    pub export: ExportOptions,
    /// `OTEL_SERVICE_NAME`, else `service.name` of `OTEL_RESOURCE_ATTRIBUTES` (taken out of the
    /// exporter's `resource_attributes`).
    pub service_name: Option<String>,
    /// Whether an endpoint variable was set (else the endpoint is [`DEFAULT_ENDPOINT`]).
    pub endpoint_set: bool,
}

/// A variable whose value is not understood.
#[derive(Debug, thiserror::Error)]
#[error("{var}={value:?}: {why}")]
pub struct EnvError {
    var: String,
    value: String,
    why: String,
}

impl OtelEnv {
    /// Reads the process's environment.
    pub fn read() -> Result<OtelEnv, EnvError> {
        OtelEnv::read_with(&|k| std::env::var_os(k))
    }

    /// Reads the variables through `lookup` (tests pass a map).
    pub fn read_with(lookup: &dyn Fn(&str) -> Option<OsString>) -> Result<OtelEnv, EnvError> {
        let get = |name: &str| -> Option<(String, String)> {
            let v = lookup(name)?.to_string_lossy().trim().to_owned();
            (!v.is_empty()).then(|| (name.to_owned(), v))
        };
        // The traces-only variable wins over the general one.
        let either = |suffix: &str| {
            get(&format!("OTEL_EXPORTER_OTLP_TRACES_{suffix}"))
                .or_else(|| get(&format!("OTEL_EXPORTER_OTLP_{suffix}")))
        };
        let bad = |(var, value): (String, String), why: &str| EnvError { var, value, why: why.to_owned() };
        let mut export = ExportOptions::new(DEFAULT_ENDPOINT);
        let mut endpoint_set = true;
        if let Some((_, url)) = get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            export.endpoint = url;
            export.signal_path = false;
        } else if let Some((_, url)) = get("OTEL_EXPORTER_OTLP_ENDPOINT") {
            export.endpoint = url;
        } else {
            endpoint_set = false;
        }
        if let Some(h) = either("HEADERS") {
            export.headers = parse_pairs(&h.1).map_err(|why| bad(h, &why))?;
        }
        if let Some(t) = either("TIMEOUT") {
            let ms: u64 = t.1.parse().map_err(|_| bad(t, "expected milliseconds"))?;
            export.timeout = Duration::from_millis(ms);
        }
        if let Some(c) = either("COMPRESSION") {
            export.compression = match c.1.as_str() {
                "gzip" => Compression::Gzip,
                "none" => Compression::None,
                _ => return Err(bad(c, "expected gzip or none")),
            };
        }
        if let Some(p) = either("PROTOCOL") {
            export.encoding = match p.1.as_str() {
                "http/protobuf" => Encoding::Protobuf,
                "http/json" => Encoding::Json,
                "grpc" => {
                    return Err(bad(p, "gRPC is not built in (no async runtime in the traced program): use http/protobuf, and a collector for gRPC onward (docs/OTLP.md)"))
                }
                _ => return Err(bad(p, "expected http/protobuf or http/json")),
            };
        }
        let mut service_name = get("OTEL_SERVICE_NAME").map(|(_, v)| v);
        if let Some(r) = get("OTEL_RESOURCE_ATTRIBUTES") {
            let mut attributes = parse_pairs(&r.1).map_err(|why| bad(r, &why))?;
            if let Some(i) = attributes.iter().position(|(k, _)| k == "service.name") {
                let (_, name) = attributes.remove(i);
                service_name.get_or_insert(name);
            }
            export.resource_attributes = attributes;
        }
        Ok(OtelEnv { export, service_name, endpoint_set })
    }
}

/// `k=v,k2=v2` (W3C Baggage-like, as `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES`
/// are written): keys and values trimmed, values percent-decoded.
pub fn parse_pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        match item.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.push((k.trim().to_owned(), percent_decode(v.trim())?));
            }
            _ => return Err(format!("{item:?} is not KEY=VALUE")),
        }
    }
    Ok(out)
}

/// Header lines as a headers file holds them: `NAME=VALUE` (or `NAME: VALUE`) per line, blank
/// lines and `#` comments skipped; values taken as written.
pub fn parse_header_lines(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let pair = match (line.find('='), line.find(':')) {
            (Some(e), Some(c)) => line.split_at(e.min(c)),
            (Some(p), None) | (None, Some(p)) => line.split_at(p),
            (None, None) => ("", ""),
        };
        let (name, value) = (pair.0.trim(), pair.1.get(1..).unwrap_or("").trim());
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("line {}: not NAME=VALUE or NAME: VALUE", i + 1));
        }
        out.push((name.to_owned(), value.to_owned()));
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let byte = hex.and_then(|h| u8::from_str_radix(h, 16).ok());
            match byte {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return Err(format!("a bad percent escape in {s:?}")),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} does not decode to UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> Result<OtelEnv, EnvError> {
        let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        OtelEnv::read_with(&|k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.into()))
    }

    #[test]
    fn nothing_set_is_the_specification_s_default_endpoint() {
        let e = read(&[]).unwrap();
        assert!(!e.endpoint_set);
        assert_eq!(e.export.traces_url(), "http://localhost:4318/v1/traces");
        assert_eq!(e.export.compression, Compression::Gzip);
    }

    #[test]
    fn the_traces_endpoint_is_used_as_it_is_and_wins() {
        let e = read(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9/custom"),
        ])
        .unwrap();
        assert_eq!(e.export.traces_url(), "http://b:9/custom");
        let e = read(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318/")]).unwrap();
        assert_eq!(e.export.traces_url(), "http://a:4318/v1/traces");
        assert!(e.endpoint_set);
    }

    #[test]
    fn headers_timeout_compression_protocol_and_resource_are_read() {
        let e = read(&[
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20abc, x-tenant = t1"),
            ("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "2500"),
            ("OTEL_EXPORTER_OTLP_COMPRESSION", "none"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attrs,deployment.environment=prod"),
        ])
        .unwrap();
        let headers =
            [("authorization".to_owned(), "Bearer abc".to_owned()), ("x-tenant".into(), "t1".into())];
        assert_eq!(e.export.headers, headers);
        assert_eq!(e.export.timeout, Duration::from_millis(2500));
        assert_eq!((e.export.compression, e.export.encoding), (Compression::None, Encoding::Json));
        assert_eq!(e.service_name.as_deref(), Some("from-attrs"));
        assert_eq!(e.export.resource_attributes, [("deployment.environment".to_owned(), "prod".to_owned())]);
        let e =
            read(&[("OTEL_SERVICE_NAME", "svc"), ("OTEL_RESOURCE_ATTRIBUTES", "service.name=x")]).unwrap();
        assert_eq!(e.service_name.as_deref(), Some("svc"));
    }

    #[test]
    fn bad_values_name_the_variable_and_grpc_is_refused_with_the_way_round() {
        let e = read(&[("OTEL_EXPORTER_OTLP_TIMEOUT", "10s")]).unwrap_err().to_string();
        assert!(e.contains("OTEL_EXPORTER_OTLP_TIMEOUT") && e.contains("milliseconds"), "{e}");
        let e = read(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap_err().to_string();
        assert!(e.contains("collector"), "{e}");
        let e = read(&[("OTEL_EXPORTER_OTLP_HEADERS", "novalue")]).unwrap_err().to_string();
        assert!(e.contains("OTEL_EXPORTER_OTLP_HEADERS"), "{e}");
    }

    #[test]
    fn a_headers_file_takes_either_separator_and_skips_comments() {
        let h = parse_header_lines("# secret\nauthorization: Bearer a=b\n\nx-tenant=t1\n").unwrap();
        assert_eq!(
            h,
            [("authorization".to_owned(), "Bearer a=b".to_owned()), ("x-tenant".into(), "t1".into())]
        );
        assert!(parse_header_lines("no separator here").unwrap_err().contains("line 1"));
    }
}
