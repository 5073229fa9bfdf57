//! A request handler that joins its caller's distributed trace: each request carries a W3C
//! `traceparent` header, and `trace_context!` records it for the handler's scope, so that the
//! exported spans have the caller's trace id and its span as their parent. A request without a
//! valid header keeps ids derived from the file (its error is printed and nothing is recorded).
//!
//! ```text
//! cargo run -p phosphor --example otlp_context -- context.phos
//! cargo run -p phosphor-cli -- convert context.phos --to otlp-json    # see docs/OTLP.md
//! ```

use phosphor::{trace_context, trace_scope, BufferMode, TraceConfig, TraceLog};

/// An incoming request: its `traceparent` header (if any) and its body.
struct Request<'a> {
    traceparent: Option<&'a str>,
    body: &'a str,
}

fn handle(req: &Request<'_>) -> usize {
    trace_scope!("http", "handle", "bytes" => req.body.len() as u64);
    if let Some(header) = req.traceparent {
        if let Err(e) = trace_context!(header) {
            eprintln!("not joining the caller's trace: {e}");
        }
    }
    parse(req.body)
}

fn parse(body: &str) -> usize {
    trace_scope!("http", "parse");
    body.split_whitespace().count()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).unwrap_or_else(|| "context.phos".into());
    let log = TraceLog::global();
    log.start(TraceConfig::new(BufferMode::Fixed, 1 << 20))?;
    let requests = [
        Request {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            body: "a b c",
        },
        Request { traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"), body: "d e" },
        Request { traceparent: Some("00-not-a-valid-header"), body: "f" },
        Request { traceparent: None, body: "g h i j" },
    ];
    let words: usize = requests.iter().map(handle).sum();
    log.stop();
    log.take_trace().ok_or("no trace")?.save(&out)?;
    println!("{} requests, {words} words; trace in {out}", requests.len());
    Ok(())
}
