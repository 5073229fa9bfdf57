//! `phosphor record`: traced programs (here, this test process) stream to it over TCP; it writes
//! a trace file per connection. Killing it mid-stream and starting it again: the program goes on,
//! the stream reconnects, and every event is in a file or counted as dropped.

use std::path::Path;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use phosphor::format::file::{Reader, Value};
use phosphor::stream::{Sink, StreamConfig};
use phosphor::{trace_instant, BufferMode, TraceConfig, TraceLog, TraceLogConfig};

use crate::cli::scratch;

/// A running `phosphor record`, and the address it printed.
pub(crate) struct Server {
    child: Child,
    pub(crate) addr: std::net::SocketAddr,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Server {
    pub(crate) fn start(listen: &str, out: &Path) -> Server {
        Server::start_with(listen, out, &[])
    }

    /// A server started with `args` besides the address and directory.
    fn start_with(listen: &str, out: &Path, args: &[&str]) -> Server {
        let (child, lines) = crate::cli::spawn_lines(
            Command::new(env!("CARGO_BIN_EXE_phosphor"))
                .args(["record", "--listen", listen, "--out"])
                .arg(out)
                .args(args),
        );
        let first = lines.recv_timeout(Duration::from_secs(20)).expect("the server prints its address");
        let addr = first.strip_prefix("listening on ").expect("listening on ADDR").parse().unwrap();
        Server { child, addr, lines }
    }

    /// The next line about an ended connection.
    pub(crate) fn ended(&self) -> String {
        self.lines.recv_timeout(Duration::from_secs(20)).expect("a connection ended")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Events in a trace file (saturation markers apart) and whether it has a trailer.
fn events_in(path: &Path) -> (u64, u64, bool) {
    let bytes = std::fs::read(path).unwrap();
    let mut r = Reader::new(&bytes[..]).unwrap();
    let (mut events, mut markers) = (0, 0);
    // A file cut by a dying server ends without its trailer: read up to there.
    let _ = r.for_each_event(|e| {
        if e.callsite.name == "saturation" && e.callsite.category == "phosphor" {
            markers += 1;
            assert!(matches!(e.arg("dropped"), Some(Value::U64(_))));
        } else {
            events += 1;
        }
    });
    (events, markers, r.trailer().is_some())
}

fn trace_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

fn streaming_log() -> Arc<TraceLog> {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 8 << 20)).unwrap();
    log
}

#[test]
fn a_streamed_trace_arrives_whole_in_a_file_named_by_the_process() {
    let dir = scratch("record-whole");
    let server = Server::start("127.0.0.1:0", &dir.join("out"));
    let log = streaming_log();
    let id = log.open_stream(StreamConfig::new(Sink::Tcp(server.addr))).unwrap();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let log = log.clone();
            std::thread::spawn(move || {
                for i in 0..50_000u64 {
                    trace_instant!(log: &log, "rec", "tick", "t" => t, "i" => i);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(id).unwrap();
    assert_eq!((s.events_dropped, s.first_error.as_deref()), (0, None), "{s:?}");
    let line = server.ended();
    assert!(line.contains("complete"), "{line}");
    let files = trace_files(&dir.join("out"));
    assert_eq!(files.len(), 1);
    let name = files[0].file_name().unwrap().to_str().unwrap().to_owned();
    assert!(name.contains(&format!("-{}-", std::process::id())), "{name}");
    let (events, markers, trailer) = events_in(&files[0]);
    assert!(trailer);
    assert_eq!(events + markers, stats.recorded);
    assert_eq!(events + stats.dropped.total(), 200_000, "received + dropped == emitted");
}

#[test]
fn killing_the_server_mid_stream_drops_counted_events_and_the_stream_reconnects() {
    let dir = scratch("record-kill");
    let out = dir.join("out");
    let mut first = Server::start("127.0.0.1:0", &out);
    let addr = first.addr;
    let log = streaming_log();
    let id = log.open_stream(StreamConfig::new(Sink::Tcp(addr))).unwrap();
    let (run, emitted) = (Arc::new(AtomicBool::new(true)), Arc::new(AtomicU64::new(0)));
    let writer = {
        let (log, run, emitted) = (log.clone(), run.clone(), emitted.clone());
        std::thread::spawn(move || {
            let mut i = 0u64;
            while run.load(Ordering::Relaxed) {
                trace_instant!(log: &log, "rec", "tick", "i" => i);
                i += 1;
                if i % 1000 == 0 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            emitted.store(i, Ordering::Relaxed);
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    // The program goes on while no one listens.
    let down = Instant::now();
    std::thread::sleep(Duration::from_millis(300));
    let second = Server::start(&addr.to_string(), &out);
    // The stream reconnects within its backoff (at most 2 s).
    let deadline = Instant::now() + Duration::from_secs(15);
    while log.stream_stats(id).unwrap().reconnects == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(down.elapsed() < Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(200));
    run.store(false, Ordering::Relaxed);
    writer.join().unwrap();
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(id).unwrap();
    assert!(s.reconnects >= 1, "{s:?}");
    assert!(s.events_dropped > 0, "events of the dead server's time are counted: {s:?}");
    assert!(s.first_error.is_some());
    assert!(second.ended().contains("complete"));
    let files = trace_files(&out);
    assert!(files.len() >= 2, "a file per connection: {files:?}");
    let (mut events, mut markers) = (0, 0);
    for f in &files {
        let (e, m, _) = events_in(f);
        events += e;
        markers += m;
    }
    // The accounting: what the files hold, plus what the stream counted as lost (not sendable, or
    // sent and not acknowledged), covers what was recorded. A server killed between writing a
    // block to its file and acknowledging it leaves that block in the file and counted as lost
    // too: the overlap is at most what one acknowledgement covers (256 KiB of the file, at the
    // files' bytes per event: with the default compression, a few tens of thousands of these
    // events; it is usually 0), and a compressed stream's last chunk (a chunk is placed when the
    // stream's offset next moves).
    let received = events + markers;
    assert!(received <= stats.recorded && stats.recorded <= received + s.events_dropped, "{s:?} {stats:?}");
    let stored: u64 = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).sum();
    let per_ack = (256 << 10) as f64 / (stored as f64 / received.max(1) as f64);
    let overlap = received + s.events_dropped - stats.recorded;
    assert!(overlap as f64 <= per_ack + 2_000.0, "{overlap} events both received and counted lost: {s:?}");
    assert_eq!(
        stats.recorded - markers_total(&stats, markers) + stats.dropped.total(),
        emitted.load(Ordering::Relaxed)
    );
}

/// Saturation markers are recorded events: the ones in the files, plus any in lost chunks (which
/// cannot be told apart; with a pool this large there are none).
fn markers_total(stats: &phosphor::Stats, in_files: u64) -> u64 {
    assert_eq!(stats.dropped.total(), 0, "the pool never saturated: {stats:?}");
    in_files
}

/// How long a soak's writers log: for a time (the long soak, by hand), or a fixed number of events
/// each (the short one: the same flat-out race, its size independent of the machine's speed).
#[derive(Clone, Copy, Debug)]
enum Until {
    Secs(f64),
    EventsPerThread(u64),
}

/// Four threads logging flat out into `sink` until `until`; returns (emitted, the log's figures,
/// the stream's figures).
fn soak(sink: Sink, until: Until) -> (u64, phosphor::Stats, phosphor::stream::StreamStats) {
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 64 << 20)).unwrap();
    let id = log.open_stream(StreamConfig::new(sink)).unwrap();
    let go = Arc::new(AtomicBool::new(true));
    let limit = match until {
        Until::Secs(_) => u64::MAX,
        Until::EventsPerThread(n) => n,
    };
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let (log, go) = (log.clone(), go.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                // Relaxed: a stop flag; the count is returned through `join`.
                while n < limit && go.load(Ordering::Relaxed) {
                    for i in 0..1000u64 {
                        phosphor::trace_log!(log: &log, info, "soak", "thread {} event {}", t, n + i);
                    }
                    n += 1000;
                }
                n
            })
        })
        .collect();
    if let Until::Secs(secs) = until {
        std::thread::sleep(Duration::from_secs_f64(secs));
        go.store(false, Ordering::Relaxed);
    }
    let emitted = threads.into_iter().map(|t| t.join().unwrap()).sum();
    if let Until::EventsPerThread(n) = until {
        assert_eq!(emitted, 4 * n);
    }
    log.stop();
    let (stats, s) = (log.stats(), log.stream_stats(id).unwrap());
    (emitted, stats, s)
}

/// The proof of the streaming issue: 30 s of four threads logging flat out, to a file sink, then
/// to a TCP sink (a `phosphor record` server), read back with the real reader, with exact
/// accounting. Long, so not in the default run: `PHOSPHOR_SOAK_SECS=30 cargo test -p phosphor-cli
/// --test it soak -- --ignored --nocapture`. `a_short_soak_*` runs the same every time, for a
/// fixed 4 x 100,000 events per sink (over TCP, a 1.3 MB compressed file: hundreds of chunks and
/// several 256 KiB acknowledgements, which is what the accounting must cross).
#[test]
#[ignore = "30 s per sink; run by hand (see the doc comment)"]
fn soak_thirty_seconds_flat_out_to_a_file_then_to_tcp() {
    let secs = std::env::var("PHOSPHOR_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(30.0);
    soak_both(Until::Secs(secs));
}

#[test]
fn a_short_soak_flat_out_to_a_file_then_to_tcp_adds_up() {
    soak_both(Until::EventsPerThread(100_000));
}

fn soak_both(until: Until) {
    let dir = scratch(match until {
        Until::Secs(_) => "soak-secs",
        Until::EventsPerThread(_) => "soak-events",
    });
    // A file sink (tmpfs where there is one).
    let shm = Path::new("/dev/shm");
    let file = if shm.is_dir() {
        shm.join(format!("phosphor-soak-{}.phos", std::process::id()))
    } else {
        dir.join("soak.phos")
    };
    let t = Instant::now();
    let (emitted, stats, s) = soak(Sink::File(file.clone()), until);
    let secs = t.elapsed().as_secs_f64();
    let received = events_in(&file);
    let _ = std::fs::remove_file(&file);
    check_soak("file", secs, emitted, &stats, &s, received);

    let server = Server::start("127.0.0.1:0", &dir.join("tcp"));
    let t = Instant::now();
    let (emitted, stats, s) = soak(Sink::Tcp(server.addr), until);
    let secs = t.elapsed().as_secs_f64();
    assert!(server.ended().contains("complete"));
    let files = trace_files(&dir.join("tcp"));
    assert_eq!(files.len(), 1);
    check_soak("tcp", secs, emitted, &stats, &s, events_in(&files[0]));
}

/// Prints a soak's figures and checks them: a complete file, nothing lost by the sink (a server
/// that stays up acknowledges everything), and received + dropped == emitted.
fn check_soak(
    sink: &str,
    secs: f64,
    emitted: u64,
    stats: &phosphor::Stats,
    s: &phosphor::stream::StreamStats,
    (events, markers, trailer): (u64, u64, bool),
) {
    println!(
        "{sink}: {emitted} emitted in {secs} s ({:.2} M/s); {events} received, {} dropped (pool), {} (sink), {markers} markers",
        emitted as f64 / secs / 1e6,
        stats.dropped.total(),
        s.events_dropped
    );
    assert!(trailer);
    assert_eq!(s.events_dropped, 0, "{sink}");
    assert_eq!(events + markers, stats.recorded, "{sink}");
    assert_eq!(events + stats.dropped.total(), emitted, "received + dropped == emitted ({sink})");
}

#[test]
fn a_client_cut_mid_chunk_leaves_a_file_of_every_whole_block_and_the_server_goes_on() {
    use std::io::Write;
    let dir = scratch("record-cut");
    let out = dir.join("out");
    let server = Server::start("127.0.0.1:0", &out);
    // A whole trace file, written by a streaming trace into memory, plain: the cut falls inside
    // its last chunk block, not inside a compressed group that holds them all.
    let log = streaming_log();
    let mem = phosphor::stream::MemorySink::new();
    log.open_stream(StreamConfig::new(Sink::Memory(mem.clone())).compression(phosphor::Compression::None))
        .unwrap();
    for i in 0..1000u64 {
        trace_instant!(log: &log, "cut", "tick", "i" => i);
    }
    log.stop();
    let bytes = mem.bytes();
    // Send all but the last 1,000 bytes (the trailer and part of the last chunk), then hang up.
    let mut conn = std::net::TcpStream::connect(server.addr).unwrap();
    conn.write_all(&bytes[..bytes.len() - 1000]).unwrap();
    drop(conn);
    let line = server.ended();
    assert!(line.contains("disconnected mid-block"), "{line}");
    let files = trace_files(&out);
    let kept = std::fs::read(&files[0]).unwrap();
    assert!(bytes.starts_with(&kept), "the file is a prefix of the stream");
    let (events, _, trailer) = events_in(&files[0]);
    assert!(!trailer && events > 0 && events < 1000, "{events}");
    // `phosphor info` reads it as a trace that ends early.
    let info = Command::new(env!("CARGO_BIN_EXE_phosphor")).arg("info").arg(&files[0]).output().unwrap();
    assert!(String::from_utf8_lossy(&info.stdout).contains("events"));
    // The server still takes the next program.
    let mut conn = std::net::TcpStream::connect(server.addr).unwrap();
    conn.write_all(&bytes).unwrap();
    drop(conn);
    assert!(server.ended().contains("complete"));
    assert_eq!(trace_files(&out).len(), 2);
}

#[test]
fn the_server_listens_on_loopback_unless_told_otherwise() {
    let out = Command::new(env!("CARGO_BIN_EXE_phosphor"))
        .args(["record", "--listen", "0.0.0.0:0", "--out"])
        .arg(scratch("record-any").join("out"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--any-address"));
}

#[test]
fn stats_report_the_saturation_markers_of_a_streamed_trace() {
    let dir = scratch("record-saturation");
    let path = dir.join("sat.phos");
    // A small pool and a slow second datastream: the writers outrun the collector.
    let log = TraceLog::new(TraceLogConfig::default()).unwrap();
    log.start(TraceConfig::new(BufferMode::Stream, 8 * 4096)).unwrap();
    log.open_stream(StreamConfig::new(Sink::File(path.clone()))).unwrap();
    struct Slow;
    impl std::io::Write for Slow {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            std::thread::sleep(Duration::from_millis(1));
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    log.open_stream(StreamConfig::new(Sink::Writer(Box::new(Slow)))).unwrap();
    for i in 0..200_000u64 {
        trace_instant!(log: &log, "sat", "tick", "i" => i);
    }
    log.stop();
    let dropped = log.stats().dropped.no_chunk;
    assert!(dropped > 0);
    let out = Command::new(env!("CARGO_BIN_EXE_phosphor")).arg("stats").arg(&path).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.starts_with("saturation")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("markers") && line.contains("events dropped"), "{line}");
}

/// The server's resident memory, from /proc.
fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/PID/status");
    kb << 10
}

/// 100 clients that each send a preamble and a frame declaring a 64 MiB header block, then
/// nothing (once 1.3 GiB: every connection zero-filled the declared length at once): the server
/// stays small, and a real program's stream beside them is still recorded whole.
#[test]
fn a_hundred_clients_declaring_huge_blocks_cost_little_and_a_real_stream_is_recorded_whole() {
    use std::io::Write;
    let dir = scratch("record-hostile");
    let server = Server::start("127.0.0.1:0", &dir.join("out"));
    let mut frame = Vec::new();
    frame.extend_from_slice(&phosphor::format::file::MAGIC);
    frame.extend_from_slice(&1u16.to_le_bytes());
    frame.extend_from_slice(&phosphor::format::file::FORMAT_MINOR.to_le_bytes());
    frame.extend_from_slice(&[0; 4]);
    frame.extend_from_slice(&phosphor::format::file::kind::HEADER.to_le_bytes());
    frame.extend_from_slice(&phosphor::format::file::MAX_BLOCK_BYTES.to_le_bytes());
    let hostile: Vec<_> = (0..100)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(server.addr).unwrap();
            c.write_all(&frame).unwrap();
            c
        })
        .collect();
    // Give the server's threads time to take in what was sent.
    std::thread::sleep(Duration::from_millis(300));
    let rss = rss_bytes(server.child.id());
    assert!(rss < 64 << 20, "100 idle clients declaring 64 MiB blocks cost {} MiB", rss >> 20);

    let log = streaming_log();
    let id = log.open_stream(StreamConfig::new(Sink::Tcp(server.addr))).unwrap();
    for i in 0..20_000u64 {
        trace_instant!(log: &log, "rec", "beside", "i" => i);
    }
    log.stop();
    let s = log.stream_stats(id).unwrap();
    assert_eq!((s.events_dropped, s.first_error.as_deref()), (0, None), "{s:?}");
    let line = server.ended();
    assert!(line.contains("complete"), "{line}");
    let files = trace_files(&dir.join("out"));
    assert_eq!(files.len(), 1, "the hostile clients sent no header, so no file: {files:?}");
    let (events, markers, trailer) = events_in(&files[0]);
    assert_eq!((events + markers, trailer), (log.stats().recorded, true));
    assert_eq!(events, 20_000);
    let rss = rss_bytes(server.child.id());
    assert!(rss < 64 << 20, "after the real stream, {} MiB", rss >> 20);
    drop(hostile);
}

/// The server's messages on a raw connection until it closes it.
fn server_messages(mut c: std::net::TcpStream) -> Vec<phosphor::format::file::ack::Ack> {
    use std::io::Read;
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut r = phosphor::format::file::ack::AckReader::default();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while let Ok(n @ 1..) = c.read(&mut buf) {
        r.push(&buf[..n]);
        while let Some(a) = r.next_ack() {
            got.push(a);
        }
    }
    got
}

/// The preamble and header block of a trace stream.
fn stream_head() -> Vec<u8> {
    use phosphor::format::file::{Header, Writer};
    let clock = crate::cli::nanosecond_clock();
    let header = Header { clock, pid: 1, process_name: "head".into(), boot_id: None, host_name: None };
    let mut out = Vec::new();
    let mut w = Writer::new(&mut out, &header).unwrap();
    w.flush().unwrap();
    drop(w);
    out
}

/// A connection over `--max-connections` is told why before it is closed (it was once closed
/// silently, which the client could not tell from a broken server): the stream counts a server
/// end, reports the reason, waits, and is recorded once a place is free.
#[test]
fn a_refused_stream_is_told_why_and_recorded_once_a_place_is_free() {
    use phosphor::format::file::ack::Ack;
    use std::io::Write;
    let dir = scratch("record-refused");
    let out = dir.join("out");
    let server = Server::start_with("127.0.0.1:0", &out, &["--max-connections", "2"]);
    // Two clients that hold the places, each having sent a preamble only.
    let holders: Vec<_> = (0..2)
        .map(|_| {
            let mut c = std::net::TcpStream::connect(server.addr).unwrap();
            c.write_all(&stream_head()[..16]).unwrap();
            c
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    // A raw third client reads the refusal.
    let third = std::net::TcpStream::connect(server.addr).unwrap();
    let got = server_messages(third);
    assert!(
        matches!(&got[..], [Ack::End(why)] if why.contains("2 connections already (--max-connections)")),
        "{got:?}"
    );
    // A traced program's stream is refused, says so, and counts what it could not send.
    let log = streaming_log();
    let id = log.open_stream(StreamConfig::new(Sink::Tcp(server.addr))).unwrap();
    let mut emitted = 0u64;
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.stream_stats(id).unwrap().server_ends == 0 {
        assert!(Instant::now() < deadline, "never refused: {:?}", log.stream_stats(id));
        trace_instant!(log: &log, "rec", "refused", "i" => emitted);
        emitted += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    let s = log.stream_stats(id).unwrap();
    let e = s.first_error.clone().unwrap();
    assert!(e.contains("the server ended the connection: refused: 2 connections"), "{e}");
    drop(holders);
    // Once the holders are gone, the stream connects again (after its longest backoff, 2 s).
    let deadline = Instant::now() + Duration::from_secs(30);
    while log.stream_stats(id).unwrap().events_written == 0 {
        assert!(Instant::now() < deadline, "never recorded: {:?}", log.stream_stats(id));
        trace_instant!(log: &log, "rec", "refused", "i" => emitted);
        emitted += 1;
        std::thread::sleep(Duration::from_micros(200));
    }
    log.stop();
    let stats = log.stats();
    let s = log.stream_stats(id).unwrap();
    assert_eq!(s.server_ends, 1, "{s:?}");
    assert_eq!(stats.dropped.total(), 0, "{stats:?}");
    assert_eq!(stats.recorded, emitted);
    let mut line = server.ended();
    while !line.contains("complete") {
        line = server.ended();
    }
    let files = trace_files(&out);
    assert_eq!(files.len(), 1, "{files:?}");
    let (events, markers, trailer) = events_in(&files[0]);
    assert!(trailer);
    assert_eq!(markers, 0);
    assert_eq!(events, s.events_written, "{s:?}");
    assert_eq!(events + s.events_dropped, emitted, "written + dropped == emitted: {s:?}");
}

/// A peer that goes quiet past `--idle-timeout` is told so, and its file keeps its header.
#[test]
fn an_idle_peer_is_told_why_it_was_ended() {
    use phosphor::format::file::ack::Ack;
    use std::io::Write;
    let dir = scratch("record-idle");
    let server = Server::start_with("127.0.0.1:0", &dir.join("out"), &["--idle-timeout", "1"]);
    let mut c = std::net::TcpStream::connect(server.addr).unwrap();
    c.write_all(&stream_head()).unwrap();
    let got = server_messages(c);
    assert!(
        matches!(&got[..], [Ack::Bytes(_), Ack::End(why)] if why.contains("nothing came for 1 s (--idle-timeout)")),
        "{got:?}"
    );
    let line = server.ended();
    assert!(line.contains("ended by the server: nothing came for 1 s"), "{line}");
}

/// A compressed stream (here zstd; the default is LZ4) is stored as it was sent, compressed
/// groups and all, and reads back to every event of every thread, in order.
#[test]
fn a_compressed_stream_is_stored_compressed_and_reads_back_exactly() {
    use phosphor::Compression;
    let dir = scratch("record-compressed");
    let server = Server::start("127.0.0.1:0", &dir.join("out"));
    for (k, codec) in
        [phosphor::stream::DEFAULT_COMPRESSION, Compression::Zstd { level: 1 }].into_iter().enumerate()
    {
        let log = streaming_log();
        let id = log.open_stream(StreamConfig::new(Sink::Tcp(server.addr)).compression(codec)).unwrap();
        let (threads, n) = (4u64, 50_000u64);
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..n {
                        trace_instant!(log: &log, "rec", "tick", "t" => t, "i" => i);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        log.stop();
        let stats = log.stats();
        let s = log.stream_stats(id).unwrap();
        assert_eq!((s.events_dropped, s.first_error.as_deref()), (0, None), "{codec}: {s:?}");
        assert!(server.ended().contains("complete"));
        let files = trace_files(&dir.join("out"));
        assert_eq!(files.len(), k + 1);
        let file = files.iter().find(|f| std::fs::metadata(f).unwrap().len() == s.bytes_written);
        let bytes = std::fs::read(file.expect("the file holds every byte sent")).unwrap();
        let mut r = Reader::new(&bytes[..]).unwrap();
        let mut per_thread = vec![Vec::new(); threads as usize];
        r.for_each_event(|e| {
            if let (Some(Value::U64(t)), Some(Value::U64(i))) = (e.arg("t"), e.arg("i")) {
                per_thread[t as usize].push(i);
            }
        })
        .unwrap();
        assert_eq!(r.codecs(), [codec], "stored as sent, not re-encoded");
        assert!(
            r.decoded_bytes() > 3 * r.stored_bytes(),
            "{codec}: {} of {}",
            r.stored_bytes(),
            r.decoded_bytes()
        );
        assert_eq!(r.trailer().map(|t| t.recorded), Some(stats.recorded));
        for (t, v) in per_thread.iter().enumerate() {
            assert!(
                v.iter().copied().eq(0..n),
                "{codec}: thread {t} has {} of its {n} events in order",
                v.len()
            );
        }
        assert_eq!(stats.dropped.total(), 0, "{stats:?}");
    }
}

/// A peer's compressed group must declare what the format allows: its block no longer than the
/// largest group compressed, its decoded length within the cap. The server ends the connection
/// at the first that does not, keeping every whole block before it.
#[test]
fn a_compressed_group_past_the_formats_caps_ends_the_connection() {
    use phosphor::format::file::{kind, MAX_GROUP_BYTES};
    use std::io::Write;
    let dir = scratch("record-bad-group");
    let server = Server::start("127.0.0.1:0", &dir.join("out"));
    let frame = |len: u32| [kind::COMPRESSED.to_le_bytes(), len.to_le_bytes()].concat();
    // A group block of 64 MiB (the largest block) is refused before its bytes come.
    let mut c = std::net::TcpStream::connect(server.addr).unwrap();
    c.write_all(&stream_head()).unwrap();
    c.write_all(&frame(phosphor::format::file::MAX_BLOCK_BYTES)).unwrap();
    let line = server.ended();
    assert!(line.contains("ended by the server: a compressed group of 67108864 bytes"), "{line}");
    // A small group declaring more decoded bytes than the cap is refused once read.
    let mut c = std::net::TcpStream::connect(server.addr).unwrap();
    c.write_all(&stream_head()).unwrap();
    c.write_all(&frame(16)).unwrap();
    let mut body = vec![1u8, 1, 1, 0];
    body.extend_from_slice(&(MAX_GROUP_BYTES + 1).to_le_bytes());
    body.extend_from_slice(&[0; 8]);
    c.write_all(&body).unwrap();
    let line = server.ended();
    assert!(line.contains(&format!("declares {} bytes decoded", MAX_GROUP_BYTES + 1)), "{line}");
    for f in trace_files(&dir.join("out")) {
        // Each file holds the header only: a plain, readable trace without a trailer.
        assert_eq!(std::fs::read(&f).unwrap(), stream_head(), "{}", f.display());
    }
}
