//! `phosphor convert --to otlp` for a collector: `-o DIR/` writes a file per request, each bounded
//! and decoding alone, together the spans of the single-file output; `--post URL` posts them to a
//! receiver through the exporter (a 503 retried) and prints what was exported; an unreachable
//! endpoint is an error with the figures.

use std::collections::HashSet;

use phosphor_otlp::receiver::{Answer, Receiver};
use phosphor_otlp::{ExportTraceServiceRequest, Span};

use crate::cli::{phosphor, scratch, stderr};

fn demo(test: &str) -> std::path::PathBuf {
    let dir = scratch(&format!("{test}-files"));
    let out = phosphor(
        &format!("{test}-demo"),
        &["demo", "--threads", "2", "--events", "5000", "--out", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    dir.join("trace.phos")
}

fn spans_of(req: ExportTraceServiceRequest) -> Vec<Span> {
    req.resource_spans.into_iter().flat_map(|r| r.scope_spans).flat_map(|s| s.spans).collect()
}

/// The spans of the single-file conversion.
fn single(test: &str, input: &std::path::Path) -> Vec<Span> {
    let pb = input.with_extension("pb");
    let out =
        phosphor(test, &["convert", input.to_str().unwrap(), "--to", "otlp", "-o", pb.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    spans_of(phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).unwrap())
}

#[test]
fn a_folder_output_holds_one_bounded_request_per_file_and_together_the_whole_trace() {
    let input = demo("otlp-folder");
    let all = single("otlp-folder", &input);
    let dir = input.with_file_name("requests/");
    let out = phosphor(
        "otlp-folder",
        &[
            "convert",
            input.to_str().unwrap(),
            "--to",
            "otlp",
            "-o",
            dir.to_str().unwrap(),
            "--max-request-bytes",
            "64KiB",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    assert!(names.len() > 3, "{} files", names.len());
    assert!(stderr(&out).contains(&format!("{} requests, a file each", names.len())), "{}", stderr(&out));
    let mut spans = Vec::new();
    for (i, path) in names.iter().enumerate() {
        assert_eq!(path.file_name().unwrap().to_str().unwrap(), format!("{:06}.pb", i + 1));
        let bytes = std::fs::read(path).unwrap();
        assert!(bytes.len() <= 64 << 10, "{}: {} bytes", path.display(), bytes.len());
        spans.extend(spans_of(phosphor_otlp::request::from_protobuf(&bytes).unwrap()));
    }
    assert_eq!(spans, all);
    // A folder that is not empty is refused: its files would be sent with the new ones.
    let again = phosphor(
        "otlp-folder",
        &["convert", input.to_str().unwrap(), "--to", "otlp", "-o", dir.to_str().unwrap()],
    );
    assert_eq!(again.status.code(), Some(2));
    assert!(stderr(&again).contains("not empty"), "{}", stderr(&again));
}

#[test]
fn post_sends_every_request_retrying_a_503_and_prints_what_was_exported() {
    let input = demo("otlp-post");
    let all = single("otlp-post", &input);
    let rx = Receiver::start(vec![Answer::Status(503)]);
    let out = phosphor(
        "otlp-post",
        &[
            "convert",
            input.to_str().unwrap(),
            "--to",
            "otlp",
            "--post",
            &rx.url(),
            "--max-request-bytes",
            "256KiB",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let got = rx.got();
    assert!(got.bad.is_empty(), "{:?}", got.bad);
    assert!(got.requests > 2, "{} requests", got.requests);
    let ids: HashSet<&[u8]> = got.spans.iter().map(|s| s.span_id.as_slice()).collect();
    assert_eq!(got.spans.len(), all.len());
    assert!(all.iter().all(|s| ids.contains(s.span_id.as_slice())));
    let err = stderr(&out);
    let line = format!(
        "{} spans exported, 0 rejected, 0 failed, 0 dropped",
        phosphor_export::format_count(all.len() as u64)
    );
    assert!(err.contains(&line), "{err}");
    assert!(err.contains("1 retries"), "{err}");
}

#[test]
fn post_to_an_endpoint_that_refuses_everything_exits_2_with_the_figures() {
    let input = demo("otlp-post-400");
    let rx = Receiver::start(vec![Answer::Status(400); 10_000]);
    let out =
        phosphor("otlp-post-400", &["convert", input.to_str().unwrap(), "--to", "otlp", "--post", &rx.url()]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("0 spans exported") && err.contains("not every span was exported"), "{err}");
}

#[test]
fn record_samples_and_groups_live_as_convert_does_for_the_same_file_and_counts_it() {
    let rx = Receiver::start(Vec::new());
    let flags = ["--otlp-sample", "0.5", "--otlp-group-roots", "process", "--otlp-hold", "60s"];
    let (line, _, file) = crate::otlp_record::record_forwarding("otlp-record-sample", &rx, &flags);
    let sampled: u64 = line
        .split(", ")
        .find_map(|part| part.strip_suffix(" left out by head sampling"))
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .unwrap();
    assert!(sampled > 0 && sampled < 2000 && sampled % 2 == 0, "whole trees: {line}");
    let got = rx.got();
    assert_eq!(got.spans.len() as u64, 2000 - sampled);
    let traces: HashSet<&[u8]> = got.spans.iter().map(|s| s.trace_id.as_slice()).collect();
    assert_eq!(traces.len(), 1, "one trace per connection");
    // The file converted with the same rules gives the same spans: one implementation.
    let pb = file.with_extension("pb");
    let out = phosphor(
        "otlp-record-sample-convert",
        &[
            "convert",
            file.to_str().unwrap(),
            "--to",
            "otlp",
            "-o",
            pb.to_str().unwrap(),
            "--sample",
            "0.5",
            "--group-roots",
            "process",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let figure =
        format!("sampling: {} spans left out by head sampling", phosphor_export::format_count(sampled));
    assert!(stderr(&out).contains(&figure), "{}", stderr(&out));
    let mut converted =
        spans_of(phosphor_otlp::request::from_protobuf(&std::fs::read(&pb).unwrap()).unwrap());
    let mut live = got.spans.clone();
    converted.sort_by(|a, b| a.span_id.cmp(&b.span_id));
    live.sort_by(|a, b| a.span_id.cmp(&b.span_id));
    assert_eq!(live, converted);
}

#[test]
fn post_sends_the_headers_of_its_file_and_of_the_otel_variable() {
    let input = demo("otlp-post-headers");
    let dir = scratch("otlp-post-headers");
    let headers = dir.join("headers");
    std::fs::write(&headers, "# kept out of ps\nauthorization: Bearer s3cret\n").unwrap();
    let rx = Receiver::start(Vec::new());
    let out = crate::cli::command("otlp-post-headers-run")
        .args(["convert", input.to_str().unwrap(), "--to", "otlp", "--post", &rx.url()])
        .args(["--headers-file", headers.to_str().unwrap()])
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme%20corp")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let got = rx.got();
    assert!(got.span_count > 0 && got.bad.is_empty(), "{:?}", got.bad);
    let header =
        |name: &str| got.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    assert_eq!(header("authorization").as_deref(), Some("Bearer s3cret"));
    assert_eq!(header("x-tenant").as_deref(), Some("acme corp"));
}

#[test]
fn post_names_a_headers_file_it_cannot_read() {
    let input = demo("otlp-post-no-headers");
    let missing = scratch("otlp-post-no-headers").join("no-such-headers");
    let rx = Receiver::start(Vec::new());
    let out = phosphor(
        "otlp-post-no-headers",
        &["convert", input.to_str().unwrap(), "--to", "otlp", "--post", &rx.url(), "--headers-file"],
    );
    assert!(!out.status.success());
    let out = phosphor(
        "otlp-post-no-headers",
        &[
            "convert",
            input.to_str().unwrap(),
            "--to",
            "otlp",
            "--post",
            &rx.url(),
            "--headers-file",
            missing.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no-such-headers: cannot read"), "{}", stderr(&out));
    assert_eq!(rx.got().requests, 0);
}
