//! The system blocks (format 1.6) in Perfetto: per thread an off-CPU track, the CPU samples as
//! `PerfSample` packets with interned call stacks, and the process's heap as a counter track.
//!
//! * **Off-CPU**: a track named `off-CPU` under each thread's track, with a slice `blocked` (a
//!   switch out) or `preempted` from the switch out to the thread's next switch in. Slices rather
//!   than Perfetto's thread states: those come from the kernel's scheduler events (`sched_switch`
//!   with CPUs and the other task), which a trace of its own process's threads does not have.
//! * **Samples**: a `PerfSample` (pid, tid, CPU, `callstack_iid`) per CPU sample, as Perfetto's
//!   own `traced_perf` writes them, which its UI shows as a thread's "perf samples" track with a
//!   flame graph of a selected range. The stacks are interned in the packet that first uses them:
//!   `function_names`, `build_ids`, `mapping_paths`, `mappings` (start, end, file offset, build
//!   id, path), `frames` (function, mapping, `rel_pc`: the address's offset in the mapped file) and
//!   `callstacks` (frames outermost first). Each address is symbolized through the recorded
//!   mappings ([`Symbolizer`]); an address in inlined code gives a frame per inlined function.
//!   Allocation samples are left out (only counted in the statistics).
//! * **Heap**: a counter track `heap live bytes` under the process, a value per heap total.
//!
//! What is interned grows with the distinct functions, frames and stacks, never with the samples.

use std::collections::HashMap;
use std::io::{self, Write};

use phosphor_format::system::{Mapping, SampleKind, SwitchKind, SystemBatch, UNKNOWN_CPU};

use super::pb::Enc;
use super::proto::*;
use super::tracks::UUID_COUNTER;
use super::Exporter;
use crate::symbolize::Symbolizer;

/// The exporter's system state: tracks made, the open off-CPU slices, the sample interning.
#[derive(Default)]
pub(super) struct SystemTracks {
    /// By thread: its off-CPU track, and the start of the slice open on it.
    off: HashMap<u32, (u64, Option<u64>)>,
    heap: Option<u64>,
    symbolizer: Option<Symbolizer>,
    /// Mappings added so far (a sample's address is found in them), with their iids, by start.
    mappings: Vec<(Mapping, u64)>,
    strings: HashMap<(u32, String), u64>,
    frames: HashMap<(u64, bool, u32), u64>,
    callstacks: HashMap<Vec<u64>, u64>,
    /// The last iid given (one counter for every interned table: each iid is unique anyway).
    next_iid: u64,
    /// The `[unknown]` mapping of addresses outside every mapping.
    unknown_mapping: u64,
    /// Interned entries for the packet being written.
    pending: Enc,
    pending_count: usize,
}

impl SystemTracks {
    fn iid(&mut self) -> u64 {
        self.next_iid += 1;
        self.next_iid
    }

    /// The iid of `s` in the `InternedString` table `table`.
    fn string(&mut self, table: u32, s: &str) -> u64 {
        if let Some(&iid) = self.strings.get(&(table, s.to_owned())) {
            return iid;
        }
        let iid = self.iid();
        let e = self.pending.begin(table);
        self.pending.uint(INTERNED_IID, iid);
        self.pending.bytes(INTERNED_STRING_STR, s.as_bytes());
        self.pending.end(e);
        self.pending_count += 1;
        self.strings.insert((table, s.to_owned()), iid);
        iid
    }

    fn add_mapping(&mut self, m: &Mapping) -> u64 {
        let iid = self.iid();
        let build_id = (!m.build_id.is_empty()).then(|| {
            let hex: String = m.build_id.iter().map(|b| format!("{b:02x}")).collect();
            self.string(INTERNED_BUILD_IDS, &hex)
        });
        let path: Vec<u64> = m
            .path
            .split('/')
            .filter(|c| !c.is_empty())
            .map(|c| self.string(INTERNED_MAPPING_PATHS, c))
            .collect();
        let p = &mut self.pending;
        let e = p.begin(INTERNED_MAPPINGS);
        p.uint(MAPPING_IID, iid);
        if let Some(b) = build_id {
            p.uint(MAPPING_BUILD_ID, b);
        }
        p.uint(MAPPING_START_OFFSET, m.file_offset);
        p.uint(MAPPING_START, m.start);
        p.uint(MAPPING_END, m.end);
        for c in path {
            p.uint(MAPPING_PATH_STRING_IDS, c);
        }
        p.end(e);
        self.pending_count += 1;
        iid
    }

    /// The mapping holding `address`: its iid and the address's offset in its file.
    fn mapping_of(&mut self, address: u64) -> (u64, u64) {
        let at = self.mappings.partition_point(|(m, _)| m.start <= address);
        let found = at.checked_sub(1).map(|i| &self.mappings[i]).filter(|(m, _)| address < m.end);
        if let Some((m, iid)) = found {
            return (*iid, (address - m.start).wrapping_add(m.file_offset));
        }
        if self.unknown_mapping == 0 {
            let unknown =
                Mapping { start: 0, end: 0, file_offset: 0, path: "[unknown]".into(), build_id: vec![] };
            self.unknown_mapping = self.add_mapping(&unknown);
        }
        (self.unknown_mapping, address)
    }

    /// The iids of the frames of `address` (innermost first; several if inlined).
    fn frames_of(&mut self, address: u64, return_address: bool, out: &mut Vec<u64>) {
        let symbolizer = self.symbolizer.get_or_insert_with(Symbolizer::new);
        let frames = symbolizer.frames(address, return_address);
        for (level, f) in frames.iter().enumerate() {
            let key = (address, return_address, level as u32);
            if let Some(&iid) = self.frames.get(&key) {
                out.push(iid);
                continue;
            }
            let function = self.string(INTERNED_FUNCTION_NAMES, &f.function);
            let (mapping, rel_pc) = self.mapping_of(address);
            let iid = self.iid();
            let p = &mut self.pending;
            let e = p.begin(INTERNED_FRAMES);
            p.uint(FRAME_IID, iid);
            p.uint(FRAME_FUNCTION_NAME_ID, function);
            p.uint(FRAME_MAPPING_ID, mapping);
            p.uint(FRAME_REL_PC, rel_pc);
            p.end(e);
            self.pending_count += 1;
            self.frames.insert(key, iid);
            out.push(iid);
        }
    }

    /// The iid of the call stack of `addresses` (innermost first).
    fn callstack(&mut self, addresses: &[u64]) -> u64 {
        let mut frames = Vec::with_capacity(addresses.len());
        for (i, &a) in addresses.iter().enumerate() {
            self.frames_of(a, i > 0, &mut frames);
        }
        // Perfetto lists a call stack's frames outermost first.
        frames.reverse();
        if let Some(&iid) = self.callstacks.get(&frames) {
            return iid;
        }
        let iid = self.iid();
        let p = &mut self.pending;
        let e = p.begin(INTERNED_CALLSTACKS);
        p.uint(CALLSTACK_IID, iid);
        for &f in &frames {
            p.uint(CALLSTACK_FRAME_IDS, f);
        }
        p.end(e);
        self.pending_count += 1;
        self.callstacks.insert(frames, iid);
        iid
    }

    /// Why objects could not be symbolized.
    pub(super) fn symbol_warnings(&self) -> &[String] {
        self.symbolizer.as_ref().map_or(&[], |s| s.warnings())
    }
}

impl<W: Write> Exporter<W> {
    /// Writes one system block's switches, samples and heap totals.
    pub(super) fn system(&mut self, batch: &SystemBatch) -> io::Result<()> {
        if !batch.mappings.is_empty() {
            for m in &batch.mappings {
                let iid = self.system.add_mapping(m);
                self.system.mappings.push((m.clone(), iid));
            }
            // By start, for the binary search; stable, so of equal starts the latest is last.
            self.system.mappings.sort_by_key(|(m, _)| m.start);
            self.system.symbolizer.get_or_insert_with(Symbolizer::new).add_mappings(&batch.mappings);
        }
        for w in &batch.switches {
            let ts = self.monotonic(w.time_ns);
            let track = self.off_cpu_track(w.tid, ts)?;
            let open = self.system.off.get(&w.tid).and_then(|t| t.1);
            match (w.kind, open) {
                (SwitchKind::Out | SwitchKind::Preempted, None) => {
                    let name = if w.kind == SwitchKind::Out { "blocked" } else { "preempted" };
                    self.off_cpu_slice(TYPE_SLICE_BEGIN, ts, track, Some(name))?;
                    self.system.off.insert(w.tid, (track, Some(ts)));
                }
                (SwitchKind::In, Some(_)) => {
                    self.off_cpu_slice(TYPE_SLICE_END, ts, track, None)?;
                    self.system.off.insert(w.tid, (track, None));
                }
                // Out twice, or in without an out (off when the trace began): nothing to draw.
                _ => {}
            }
            self.saw(ts);
        }
        for s in &batch.samples {
            if s.kind != SampleKind::Cpu {
                continue;
            }
            let ts = self.monotonic(s.time_ns);
            let callstack = self.system.callstack(&s.frames);
            self.start_packet(Some(ts), SEQ_NEEDS_INCREMENTAL_STATE);
            self.flush_system_interned();
            let p = &mut self.buf;
            let sample = p.begin(PACKET_PERF_SAMPLE);
            if s.cpu != UNKNOWN_CPU {
                p.uint(PERF_SAMPLE_CPU, u64::from(s.cpu));
            }
            p.uint(PERF_SAMPLE_PID, u64::from(self.pid));
            p.uint(PERF_SAMPLE_TID, u64::from(s.tid));
            p.uint(PERF_SAMPLE_CALLSTACK_IID, callstack);
            p.end(sample);
            self.finish_packet(false)?;
            self.saw(ts);
        }
        for h in &batch.heap {
            let ts = self.monotonic(h.time_ns);
            let track = match self.system.heap {
                Some(t) => t,
                None => self.heap_track(ts)?,
            };
            self.start_packet(Some(ts), 0);
            let p = &mut self.buf;
            let te = p.begin(PACKET_TRACK_EVENT);
            p.uint(EVENT_TYPE, TYPE_COUNTER);
            p.uint(EVENT_TRACK_UUID, track);
            p.int(EVENT_COUNTER_VALUE, h.live_bytes());
            p.end(te);
            self.finish_packet(true)?;
            self.saw(ts);
        }
        // Mappings interned with no sample yet: in a packet of their own.
        if self.system.pending_count > 0 {
            self.start_packet(None, SEQ_NEEDS_INCREMENTAL_STATE);
            self.flush_system_interned();
            self.finish_packet(false)?;
        }
        Ok(())
    }

    /// Ends the off-CPU slices still open at the end of the trace, at its last time.
    pub(super) fn close_off_cpu(&mut self) -> io::Result<()> {
        let mut open: Vec<(u32, u64, u64)> =
            self.system.off.iter().filter_map(|(&tid, &(track, start))| Some((tid, track, start?))).collect();
        open.sort_unstable();
        for (tid, track, start) in open {
            let end = self.last_ns.unwrap_or(start).max(start);
            self.off_cpu_slice(TYPE_SLICE_END, end, track, None)?;
            self.system.off.insert(tid, (track, None));
        }
        Ok(())
    }

    /// The exported time of a `CLOCK_MONOTONIC` time: shifted as the file's events are.
    fn monotonic(&self, ns: u64) -> u64 {
        let shift = self.origin_ns - super::plan::origin_ns(&self.clock);
        (i128::from(ns) + i128::from(shift)).clamp(0, i128::from(i64::MAX)) as u64
    }

    /// Adds the pending interned entries of the samples to the packet being written.
    fn flush_system_interned(&mut self) {
        if self.system.pending_count > 0 {
            self.buf.bytes(PACKET_INTERNED_DATA, self.system.pending.as_slice());
            self.system.pending.clear();
            self.system.pending_count = 0;
        }
    }

    fn off_cpu_slice(&mut self, ty: u64, ts: u64, track: u64, name: Option<&str>) -> io::Result<()> {
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let te = p.begin(PACKET_TRACK_EVENT);
        p.uint(EVENT_TYPE, ty);
        p.uint(EVENT_TRACK_UUID, track);
        if let Some(name) = name {
            p.bytes(EVENT_NAME, name.as_bytes());
        }
        p.end(te);
        self.finish_packet(true)
    }

    /// Thread `tid`'s off-CPU track (and the thread's own track), described when first used.
    fn off_cpu_track(&mut self, tid: u32, ts: u64) -> io::Result<u64> {
        if let Some(&(track, _)) = self.system.off.get(&tid) {
            return Ok(track);
        }
        let thread = self.thread_track_by_id(tid, ts)?;
        let uuid = self.new_track_uuid(UUID_OFF_CPU);
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let track = p.begin(PACKET_TRACK_DESCRIPTOR);
        p.uint(TRACK_UUID, uuid);
        p.uint(TRACK_PARENT_UUID, thread);
        p.bytes(TRACK_NAME, b"off-CPU");
        p.end(track);
        self.finish_packet(false)?;
        self.system.off.insert(tid, (uuid, None));
        Ok(uuid)
    }

    fn heap_track(&mut self, ts: u64) -> io::Result<u64> {
        let uuid = self.new_track_uuid(UUID_COUNTER);
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let track = p.begin(PACKET_TRACK_DESCRIPTOR);
        p.uint(TRACK_UUID, uuid);
        p.uint(TRACK_PARENT_UUID, self.process_uuid);
        p.bytes(TRACK_NAME, b"heap live bytes");
        let counter = p.begin(TRACK_COUNTER);
        p.bytes(COUNTER_CATEGORIES, b"phosphor");
        p.end(counter);
        p.end(track);
        self.finish_packet(false)?;
        self.system.heap = Some(uuid);
        Ok(uuid)
    }
}

/// Off-CPU tracks' uuid kind (see `tracks.rs`).
const UUID_OFF_CPU: u64 = 6;
