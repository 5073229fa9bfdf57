//! Saving a finished [`Trace`] as a trace file.
//!
//! The bytes are `phosphor-format`'s business ([`phosphor_format::file::Writer`]); this file only
//! maps the runtime's types onto the file's: the clock, the process, the callsite table, the names
//! of the threads that appear in the chunks, each chunk with its thread id and sequence number, and
//! the statistics as the trailer. Static string arguments are resolved here, in the recording
//! process, where their addresses still mean something (and are checked first: a word that does
//! not point at readable memory is saved as `<bad static string>`, see `addr.rs`); the writer
//! stores them as string table entries. The blocks are compressed as the trace says
//! ([`Trace::compression`]: zstd level 1 unless told otherwise, see [`DEFAULT_SAVE_COMPRESSION`]).

use std::collections::BTreeSet;
use std::io::{BufWriter, Write};
use std::path::Path;

use phosphor_format::file::{CallsiteInfo, Compression, Error, Header, Trailer, Writer};
use phosphor_format::ID_THREAD_SWITCH;

use crate::output::trace::{static_str, Trace};

/// How [`Trace::save`] compresses a trace's blocks unless told otherwise
/// ([`Trace::with_compression`], [`TraceConfig::compression`](crate::TraceConfig::compression)):
/// zstd at level 1. On the demo's trace, zstd -1 stores about 5.4 bytes per event where plain
/// blocks take 32.4, at about 460 MB/s of one core, and higher levels gained nothing (issue 24's
/// measurements); LZ4 stores twice as much. A save is off the recording path, so the smaller file
/// is worth the CPU.
pub const DEFAULT_SAVE_COMPRESSION: Compression = Compression::Zstd { level: 1 };

/// The header of a trace file of this process on `clock`: the pid, the executable's name, and the
/// machine's boot id and host name (read once per process, see `host.rs`).
pub(crate) fn process_header(clock: crate::ClockInfo) -> Header {
    let process_name = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let host = crate::output::host::this_host();
    Header {
        clock,
        pid: std::process::id(),
        process_name,
        boot_id: host.boot_id,
        host_name: host.host_name.clone(),
    }
}

/// A callsite's entry in a trace file's callsite table.
pub(crate) fn callsite_info(id: u32, m: &crate::CallsiteMeta) -> CallsiteInfo {
    CallsiteInfo {
        id,
        category: m.category.into(),
        name: m.name.into(),
        phase: m.phase,
        arg_names: m.arg_names.map(String::from),
        file: m.file.into(),
        line: m.line,
        name_hash: m.name_hash,
        level: m.level,
        dynamic_name: m.dynamic_name,
        flow: m.flow,
    }
}

impl Trace {
    /// Saves the trace as a trace file at `path` (created or truncated), its blocks compressed as
    /// [`compression`](Trace::compression) says. See `docs/FORMAT.md`.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let path = path.as_ref();
        let f = std::fs::File::create(path).map_err(|e| Error::io(e, 0).with_path(path))?;
        let out = self.write_to(BufWriter::new(f)).map_err(|e| e.with_path(path))?;
        let f = out.into_inner().map_err(|e| Error::io(e.into_error(), 0).with_path(path))?;
        f.sync_all().map_err(|e| Error::io(e, 0).with_path(path))
    }

    /// Writes the trace as a trace file to `out`, its blocks compressed as
    /// [`compression`](Trace::compression) says, and returns `out` flushed.
    pub fn write_to<W: Write>(&self, out: W) -> Result<W, Error> {
        let mut w = Writer::with_compression(out, &self.file_header(), self.compression())?;
        let callsites: Vec<CallsiteInfo> = self.callsites().map(|(id, m)| callsite_info(id, m)).collect();
        w.write_callsites(&callsites)?;
        // Every thread that wrote into a chunk, including those a pool tenant switched to.
        let mut tids = BTreeSet::new();
        for c in self.chunks() {
            tids.insert(c.tid);
            // Step over continuation records: their bytes are payload, not ids.
            let mut i = 0;
            while let Some(r) = c.records.get(i) {
                if r.id == ID_THREAD_SWITCH {
                    tids.insert(r.slots[0] as u32);
                }
                i += 1 + r.meta.continuation();
            }
        }
        w.write_thread_names(tids.iter().filter_map(|&t| Some((t, self.thread_name(t)?))))?;
        for c in self.chunks() {
            w.write_chunk(c.tid, c.seq, c.records, static_str)?;
        }
        w.write_aggregates(self.aggregates())?;
        if let Some(system) = self.system() {
            w.write_system(system)?;
        }
        w.finish(&self.file_trailer())
    }

    fn file_header(&self) -> Header {
        process_header(self.clock().clone())
    }

    fn file_trailer(&self) -> Trailer {
        trailer_of(self.stats())
    }
}

/// A trace file's trailer: the trace's figures.
pub(crate) fn trailer_of(s: &crate::Stats) -> Trailer {
    Trailer {
        recorded: s.recorded,
        dropped: s.dropped.clone(),
        chunks_loaned: s.chunks_loaned,
        chunks_overwritten: s.chunks_overwritten,
        chunks_total: s.chunks_total,
        buffer_exhausted: s.buffer_exhausted,
        saturation_markers: s.saturation_markers,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use phosphor_format::file::{ErrorKind as FileErrorKind, Reader, Value};

    use crate::{
        set_thread_name, trace_async_begin, trace_async_end, trace_begin, trace_complete, trace_counter,
        trace_end, trace_instant, trace_lock_guard, trace_scope, ArgValue, BufferMode, ErrorKind, Static,
        Trace, TraceConfig, TraceLog, TraceLogConfig,
    };

    /// A new independent log; other tests may hold most of the slots for a moment.
    fn new_log() -> Arc<TraceLog> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match TraceLog::new(TraceLogConfig::default()) {
                Ok(log) => return log,
                Err(e)
                    if matches!(e.kind(), ErrorKind::TooManyInstances { .. })
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(2));
                }
                Err(e) => panic!("TraceLog::new failed: {e}"),
            }
        }
    }

    /// Records on four named threads: every argument type, every phase, long dynamic strings
    /// (continuation records), into a Fixed buffer of six chunks that runs out (drops).
    fn record() -> Trace {
        let log = new_log();
        log.start(TraceConfig::new(BufferMode::Fixed, 6 * 4096)).unwrap();
        let workers: Vec<_> = (0..3)
            .map(|i| {
                let log = log.clone();
                std::thread::spawn(move || {
                    set_thread_name(&format!("worker-{i}"));
                    for j in 0..40u64 {
                        trace_scope!(log: &log, "work", "item", "i" => i as i64, "j" => j);
                        trace_instant!(log: &log, "work", "note", "s" => Static("static-worker"), "b" => j % 2 == 0);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        set_thread_name("main-thread");
        let x = 5u8;
        let long = "a dynamic string long enough to need more than one continuation record: ".repeat(3);
        trace_instant!(log: &log, "args", "ints", "i" => -42i64, "u" => u64::MAX);
        trace_instant!(log: &log, "args", "float_ptr", "f" => -2.5f64, "p" => &x as *const u8);
        trace_instant!(log: &log, "args", "strs", "s" => Static("a static string"), "d" => long.as_str());
        trace_begin!(log: &log, "slice", "outer", "depth" => 0u32);
        trace_counter!(log: &log, "mem", "heap", 4096u64);
        trace_end!(log: &log, "slice", "outer", "result" => -1i32);
        let start = log.now();
        trace_complete!(log: &log, "work", "batch", start, Duration::from_nanos(10), "items" => 12u32, "tag" => Static("static-two"));
        trace_async_begin!(log: &log, "io", "request", 77u32, "url" => "http://example/ünï");
        trace_async_end!(log: &log, "io", "request", 77u32, "status" => Static("done"));
        {
            let m = std::sync::Mutex::new(0);
            let _g = trace_lock_guard!(log: &log, "sync", "m", m.lock().unwrap());
        }
        // Fill the buffer so that events are dropped and counted.
        for k in 0..2000u64 {
            trace_instant!(log: &log, "fill", "event", "k" => k);
        }
        log.stop();
        log.take_trace().unwrap()
    }

    fn same_value(a: ArgValue<'_>, b: Value<'_>) -> bool {
        match (a, b) {
            (ArgValue::I64(x), Value::I64(y)) => x == y,
            (ArgValue::U64(x), Value::U64(y)) => x == y,
            (ArgValue::F64(x), Value::F64(y)) => x.to_bits() == y.to_bits(),
            (ArgValue::Bool(x), Value::Bool(y)) => x == y,
            (ArgValue::Str(x), Value::Str(y)) => x == y,
            (ArgValue::Pointer(x), Value::Pointer(y)) => x == y,
            _ => false,
        }
    }

    #[test]
    fn a_saved_trace_reads_back_with_every_event_thread_name_clock_and_drop_counter() {
        let trace = record();
        assert!(trace.stats().dropped.buffer_full > 0, "the buffer ran out: {}", trace.stats());
        let dir = std::env::temp_dir().join(format!("phosphor-trace-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("roundtrip.phtrace");
        trace.save(&path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();

        let mut r = Reader::new(&bytes[..]).unwrap();
        let (c, h) = (trace.clock(), &r.header().clock);
        assert_eq!(h.kind as u8, c.kind as u8);
        assert_eq!(
            (h.ns_per_tick, h.origin_ticks, h.origin_monotonic_ns, h.origin_wall_ns, &h.fallback_reason),
            (c.ns_per_tick, c.origin_ticks, c.origin_monotonic_ns, c.origin_wall_ns, &c.fallback_reason)
        );
        assert_eq!(r.header().pid, std::process::id());
        let host = crate::output::host::this_host();
        assert_eq!((r.header().boot_id, &r.header().host_name), (host.boot_id, &host.host_name));
        #[cfg(target_os = "linux")]
        assert!(r.header().boot_id.is_some(), "Linux has a boot id");

        let mut expected = trace.events().map(|e| e.unwrap());
        let mut chunks = trace.chunks();
        let mut n = 0;
        let mut static_seen = 0;
        while let Some(chunk) = r.next_chunk().unwrap() {
            let mem = chunks.next().expect("no more chunks in the file than in memory");
            assert_eq!((chunk.extents.tid, chunk.extents.seq), (mem.tid, mem.seq));
            assert_eq!(chunk.records.len(), mem.records.len());
            for got in chunk.events() {
                let got = got.unwrap();
                let want = expected.next().expect("no more events in the file than in memory");
                let cs = got.callsite;
                assert_eq!(
                    (got.tid, got.ts, cs.id, cs.category.as_str(), cs.name.as_str(), cs.phase),
                    (want.tid, want.ts, want.id, want.callsite.category, want.callsite.name, want.phase())
                );
                assert_eq!(
                    (cs.file.as_str(), cs.line, cs.name_hash),
                    (want.callsite.file, want.callsite.line, want.callsite.name_hash)
                );
                assert_eq!(
                    (got.duration, got.async_id, got.truncated),
                    (want.duration, want.async_id, want.truncated)
                );
                for (g, w) in got.args.iter().zip(want.args.iter()) {
                    match (g, w) {
                        (None, None) => {}
                        (Some((gn, gv)), Some((wn, wv))) => {
                            assert_eq!(gn, wn);
                            assert!(same_value(*wv, *gv), "{}: {wv:?} vs {gv:?}", cs.name);
                            if matches!(gv, Value::Str(s) if s.starts_with("static")) {
                                static_seen += 1;
                            }
                        }
                        _ => panic!("{}: argument {g:?} vs {w:?}", cs.name),
                    }
                }
                n += 1;
            }
        }
        assert!(expected.next().is_none(), "every event of the trace is in the file");
        assert!(chunks.next().is_none());
        assert_eq!(n, trace.stats().recorded);
        assert!(static_seen >= 3, "static strings resolved from the table: {static_seen}");

        let mut tids: Vec<u32> = trace.events().map(|e| e.unwrap().tid).collect();
        tids.dedup();
        for t in tids {
            assert_eq!(r.thread_name(t).as_deref(), trace.thread_name(t), "thread {t}");
        }
        let mut names: Vec<&str> = r.thread_names().map(|(_, n)| n.as_str()).collect();
        names.sort();
        assert_eq!(names, ["main-thread", "worker-0", "worker-1", "worker-2"]);

        let t = r.trailer().expect("a whole file has a trailer");
        let s = trace.stats();
        assert_eq!(t.recorded, s.recorded);
        assert_eq!(t.dropped.total(), s.dropped.total());
        assert_eq!(
            [t.dropped.buffer_full, t.dropped.no_chunk, t.dropped.contended, t.dropped.stopping],
            [s.dropped.buffer_full, s.dropped.no_chunk, s.dropped.contended, s.dropped.stopping]
        );
        assert_eq!(
            [t.dropped.reentrant, t.dropped.thread_exited, t.dropped.overwritten],
            [s.dropped.reentrant, s.dropped.thread_exited, s.dropped.overwritten]
        );
        assert_eq!(
            (t.chunks_loaned, t.chunks_overwritten, t.chunks_total, t.buffer_exhausted),
            (s.chunks_loaned, s.chunks_overwritten, s.chunks_total, s.buffer_exhausted)
        );
        // Saved with the default codec (zstd level 1): well under the 32 bytes of a record.
        assert_eq!(r.codecs(), [super::DEFAULT_SAVE_COMPRESSION]);
        let records: usize = trace.chunks().map(|c| c.records.len()).sum();
        let per_record = bytes.len() as f64 / records as f64;
        assert!(per_record < 16.0, "{per_record:.1} bytes per record");
    }

    #[test]
    fn a_saved_trace_cut_at_every_offset_yields_every_complete_chunk_and_the_offset_it_stopped_at() {
        // Plain, so that each chunk is a block of its own (a compressed group's cuts are
        // phosphor-format's tests).
        let trace = record().with_compression(phosphor_format::file::Compression::None);
        let file = trace.write_to(Vec::new()).unwrap();
        // Where each chunk's block ends, and where every block ends, from a full read.
        let mut r = Reader::new(&file[..]).unwrap();
        let mut ends = vec![16, r.offset()];
        let mut chunk_ends = Vec::new();
        while let Some(b) = r.next_block().unwrap() {
            if let phosphor_format::file::Block::Chunk(c) = b {
                chunk_ends.push((c.extents.seq, c.extents.tid, c.end_offset()));
            }
            ends.push(r.offset());
        }
        assert_eq!(*ends.last().unwrap(), file.len() as u64);
        assert!(chunk_ends.len() >= 5);
        for cut in 0..file.len() {
            let bytes = &file[..cut];
            let mut got = Vec::new();
            let err = match Reader::new(bytes) {
                Err(e) => e,
                Ok(mut r) => loop {
                    match r.next_chunk() {
                        Ok(Some(c)) => {
                            for e in c.events() {
                                e.unwrap_or_else(|e| panic!("cut at {cut}: a complete chunk fails: {e}"));
                            }
                            got.push((c.extents.seq, c.extents.tid, c.end_offset()));
                        }
                        Ok(None) => panic!("cut at {cut}: read as a whole file"),
                        Err(e) => break e,
                    }
                },
            };
            let want: Vec<_> = chunk_ends.iter().filter(|c| c.2 <= cut as u64).copied().collect();
            assert_eq!(got, want, "cut at {cut}");
            assert!(matches!(err.kind(), FileErrorKind::Truncated { .. }), "cut at {cut}: {err}");
            let stop =
                if cut < 16 { 0 } else { ends.iter().copied().filter(|&e| e <= cut as u64).max().unwrap() };
            assert_eq!(err.offset(), stop, "cut at {cut}: {err}");
        }
    }
}
