//! A trace's life: `start` and `stop`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::stop_gate::{stop_action, StopAction};
use super::{set_clock_hint, system, trigger, Control, OwnedBuffer, Running, TraceLog, GENERATIONS};
use crate::error::{Error, ErrorKind};
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::clock::ClockInfo;
use crate::record::tenant::{evict_all, Tenant};
use crate::record::thread;
use crate::registry::callsite;
use crate::trace_log::config::{TraceConfig, TraceLogConfig};

impl TraceLog {
    /// Starts a trace. Events from before this call are not recorded. If another thread is
    /// stopping the log's trace, waits until that stop has ended.
    ///
    /// Its steps: check the configuration; wait out a stop; make the buffer; start what runs
    /// with the trace (a streaming trace's collector, the triggers' dump thread); publish the
    /// buffer; start the system context; enable the log's slot.
    pub fn start(&self, config: TraceConfig) -> Result<(), Error> {
        let chunks = check_start(&config)?;
        #[cfg(unix)]
        crate::trace_log::fork::install();
        // A stop in progress ends first: its trace is still `running` until then.
        let (mut c, _) = self.wait_for_stop(self.control(), thread::current_thread_id());
        if c.running.is_some() {
            return Err(Error::new(ErrorKind::AlreadyRunning));
        }
        let clock = self.calibrated(&mut c);
        c.started_once = true;
        c.tenants.retain(|t| !t.is_retired());
        let buffer = self.new_buffer(&config, chunks, clock.clone())?;
        let collector = match self.start_collector(&config, buffer, clock) {
            Ok(collector) => collector,
            Err(e) => {
                // SAFETY: never published; ours to free.
                drop(unsafe { Box::from_raw(buffer) });
                return Err(e);
            }
        };
        let triggers = match self.arm_at_start(&config, buffer) {
            Ok(triggers) => triggers,
            Err(e) => {
                // SAFETY: never published; ours to free (no collector: triggers need Ring mode).
                drop(unsafe { Box::from_raw(buffer) });
                return Err(e);
            }
        };
        // Release: pairs with the Acquire load in `Tenant::make_room`, publishing the buffer's
        // initialised chunk headers.
        self.core.buffer.store(buffer, Ordering::Release);
        let filter = callsite::SlotFilter {
            categories: Arc::new(config.categories.clone()),
            max_level: config.log_level,
            // issue 23 (alloc helper): scopes record their allocations.
            allocations: config.system.allocations,
        };
        let aggregates_at_start =
            callsite::aggregate_snapshots().into_iter().map(|(a, _)| (a.callsite, a)).collect();
        // Never fails the start: what is unavailable says why in its status.
        let forward = collector.as_ref().map(crate::stream::Collector::system_forwarder);
        let system = system::SystemCollector::start(
            self,
            config.system,
            config.mode == crate::BufferMode::Ring,
            forward,
        );
        c.running = Some(Running {
            config,
            buffer: OwnedBuffer(buffer),
            collector,
            aggregates_at_start,
            triggers,
            system,
            stopper: 0,
        });
        // Relaxed: a status flag for `is_enabled`.
        self.enabled.store(true, Ordering::Relaxed);
        callsite::enable_slot(self.slot, filter);
        Ok(())
    }

    /// The log's clock, calibrated at its first start (under the control lock `c`).
    fn calibrated(&self, c: &mut Control) -> ClockInfo {
        let log_config = c.config.get_or_insert_with(TraceLogConfig::default).clone();
        c.clock
            .get_or_insert_with(|| {
                let clock = crate::record::clock::calibrate(log_config.clock);
                set_clock_hint(self.slot, clock.kind, clock.ns_per_tick);
                clock
            })
            .clone()
    }

    /// A new trace's buffer, with its generation, not yet published: the caller frees it if the
    /// start fails.
    fn new_buffer(&self, config: &TraceConfig, chunks: usize, clock: ClockInfo) -> Result<*mut TraceBuffer, Error> {
        let mut buffer = match &config.ring_file {
            None => TraceBuffer::new(config.mode, chunks)
                .map_err(|e| Error::new(ErrorKind::BufferAlloc { bytes: e.bytes }))?,
            Some(path) => self.ring_buffer(path, config.mode, chunks, clock)?,
        };
        // Relaxed: only uniqueness matters.
        buffer.generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        Ok(Box::into_raw(Box::new(buffer)))
    }

    /// A streaming trace's collector (`None` in the other modes), started on the unpublished
    /// `buffer`; sets the write path's Stream-mode words (the saturation marker's id, no blocking).
    fn start_collector(
        &self,
        config: &TraceConfig,
        buffer: *mut TraceBuffer,
        clock: ClockInfo,
    ) -> Result<Option<crate::stream::Collector>, Error> {
        // Markers and blocking are the streaming mode's; another mode clears what a streaming
        // trace of this log left. Relaxed: read by tenants only after they acquire the buffer
        // published by `start`.
        self.core.saturation_id.store(0, Ordering::Relaxed);
        self.core.block_ns.store(0, Ordering::Relaxed);
        if config.mode != crate::BufferMode::Stream {
            return Ok(None);
        }
        let state = callsite::register(&crate::stream::SATURATION);
        // Relaxed: as above.
        self.core.saturation_id.store(callsite::id_of(state), Ordering::Relaxed);
        let header = crate::output::trace_file::process_header(clock);
        crate::stream::Collector::start(self, buffer, header)
            .map(Some)
            .map_err(|e| Error::new(ErrorKind::Collector(e.to_string())))
    }

    /// The trace's triggers, armed before the buffer is published and the slot enabled, so a
    /// failure leaves nothing to undo but the buffer and the dump thread (idle: no event can fire
    /// yet), which this undoes.
    fn arm_at_start(&self, config: &TraceConfig, buffer: *mut TraceBuffer) -> Result<trigger::Armed, Error> {
        let settings = trigger::DumpSettings {
            dir: config.trigger_dir.clone(),
            window: config.post_window,
            per_minute: config.dumps_per_minute,
        };
        let mut triggers = trigger::Armed::new(self, settings, buffer);
        for t in &config.triggers {
            if let Err(e) = triggers.arm(self, t.clone(), None) {
                triggers.disarm(None);
                if let Some(thread) = triggers.take_thread() {
                    trigger::finish_thread(self, thread);
                }
                return Err(e);
            }
        }
        Ok(triggers)
    }

    /// Stops the trace, takes every thread's chunk back, and keeps the result for
    /// [`TraceLog::take_trace`]. Events from after this call are not recorded. Does nothing when no
    /// trace is running. A call made while another thread is stopping the trace waits until that
    /// stop has ended, and then returns: it never stops again (see `stop_gate.rs`).
    pub fn stop(&self) {
        let me = thread::current_thread_id();
        // The trigger dump thread first, without the control lock, which its last dump takes;
        // the system collector too (it only tries the lock, but is joined without it). The trace
        // names its stopper meanwhile, so that no other call stops it or starts another.
        let (thread, system) = {
            let (mut c, waited) = self.wait_for_stop(self.control(), me);
            let stopper = c.running.as_ref().map(|r| r.stopper);
            let (StopAction::Stop, Some(r)) = (stop_action(stopper, waited), c.running.as_mut()) else {
                return;
            };
            r.stopper = me;
            (r.triggers.close(), r.system.take())
        };
        // Clears the stopper (if the trace is still there: an unwinding stop) and wakes the
        // waiters when this call returns or unwinds.
        let _ended = StopEnded(self);
        #[cfg(all(feature = "test-hooks", target_os = "linux"))]
        super::test_hooks::paused(self, super::test_hooks::Pause::StopJoining);
        if let Some(thread) = thread {
            trigger::finish_thread(self, thread);
        }
        let system = system.map(system::SystemCollector::finish);
        let mut c = self.control();
        let Some(mut running) = c.running.take() else { return };
        c.last_system = system.as_ref().and_then(|b| b.status.clone());
        running.triggers.disarm(None);
        callsite::disable_slot(self.slot);
        #[cfg(unix)]
        if running.config.ring_file.is_some() {
            callsite::set_ring(None);
        }
        // Relaxed: a status flag.
        self.enabled.store(false, Ordering::Relaxed);
        // SeqCst: the swap must not be reordered after the evictions below (Release side) and sees
        // the pointer we stored (Acquire side); `evict_all`'s heavy barrier then makes it visible
        // to every slave that enters after it. Sequentially consistent for the crash dump's sake
        // (see `recorder::crash_dump_started`, read below).
        let ptr = self.core.buffer.swap(std::ptr::null_mut(), Ordering::SeqCst);
        debug_assert_eq!(ptr, running.buffer.0);
        // SAFETY: `ptr` came from `Box::into_raw` in `start` and is freed only below.
        let buf = unsafe { &*ptr };
        let all: Vec<Arc<Tenant>> = c.tenants.iter().chain(c.pool.iter()).cloned().collect();
        evict_all(&all, Some(buf), false);
        c.tenants.retain(|t| !t.is_retired());
        let now = self.load_drops();
        let stats = self.stats_of(buf, false, &now.since(&c.drops_baseline));
        c.drops_baseline = now;
        // Streaming: the collector writes every chunk given back (all of them, now), finishes the
        // datastreams with the final figures, and exits; its threads read the buffer until then.
        c.last_streams = match running.collector.take() {
            Some(col) => col.finish(stats.clone()),
            None => Vec::new(),
        };
        // A crash dump that loaded the pointer before we unpublished it may be reading the buffer:
        // the process is dying, so leave the buffer to it rather than free it.
        #[cfg(target_os = "linux")]
        if crate::recorder::crash_dump_started() {
            c.last_stats = stats;
            return;
        }
        // SAFETY: the buffer pointer is unpublished, every tenant has been evicted under its
        // master lock (so no slave holds or can reach the buffer), the collector's threads are
        // joined, and no crash dump started (one that starts now finds the pointer null): nothing
        // else refers to the buffer, and we own it again.
        let buffer = unsafe { Box::from_raw(running.buffer.0) };
        let clock = c.clock.clone().expect("calibrated in start");
        c.last_stats = stats.clone();
        // What the aggregate points this trace's categories take counted since it started.
        let aggregates = running.aggregates_so_far();
        let trace =
            Trace::new(*buffer, callsite::snapshot(), thread::thread_names(), clock, stats, aggregates);
        c.last_trace = Some(trace.with_system(system).with_compression(running.config.compression));
    }

    /// A buffer in a new ring file at `path` (`TraceConfig::file_backed`), whose metadata then
    /// receives every callsite.
    #[cfg(unix)]
    pub(super) fn ring_buffer(
        &self,
        path: &std::path::Path,
        mode: crate::BufferMode,
        chunks: usize,
        clock: ClockInfo,
    ) -> Result<TraceBuffer, Error> {
        let head = phosphor_format::file::raw::preamble_and_header(
            &crate::output::trace_file::process_header(clock),
        );
        let mapping = crate::registry::ring_file::create(path, chunks, &head)
            .map_err(|e| Error::new(ErrorKind::RingFile(format!("{}: {e}", path.display()))))?;
        let mapping = Arc::new(mapping);
        callsite::set_ring(Some(mapping.clone()));
        Ok(TraceBuffer::mapped(mode, mapping))
    }

    #[cfg(not(unix))]
    pub(super) fn ring_buffer(
        &self,
        path: &std::path::Path,
        _mode: crate::BufferMode,
        _chunks: usize,
        _clock: ClockInfo,
    ) -> Result<TraceBuffer, Error> {
        Err(Error::new(ErrorKind::RingFile(format!("{}: file-backed buffers need Unix", path.display()))))
    }
}

/// Checks what `start` can check before it takes the control lock; the buffer's chunks.
fn check_start(config: &TraceConfig) -> Result<usize, Error> {
    let chunks = config.chunks()?;
    if !config.triggers.is_empty() && config.mode != crate::BufferMode::Ring {
        return Err(Error::new(ErrorKind::Trigger(format!(
            "triggers need a Ring buffer (the flight recorder), not {:?}",
            config.mode
        ))));
    }
    if config.dumps_per_minute == 0 {
        return Err(Error::new(ErrorKind::Trigger("dumps_per_minute must be at least 1".into())));
    }
    // Context switches and CPU samples are perf events: Linux's. Elsewhere asking for them is
    // an error here, not a trace that silently lacks them (heap totals are everyone's).
    #[cfg(not(target_os = "linux"))]
    if config.system.switches || config.system.sample_hz > 0 {
        return Err(crate::recorder::unsupported(if config.system.switches {
            "recording context switches (TraceConfig::context_switches)"
        } else {
            "sampling CPU stacks (TraceConfig::cpu_samples)"
        }));
    }
    Ok(chunks)
}

/// Ends a stop in progress (see `TraceLog::stop`).
struct StopEnded<'a>(&'a TraceLog);

impl Drop for StopEnded<'_> {
    fn drop(&mut self) {
        let mut c = self.0.control();
        // Normally the trace is gone by now; a stop that unwound leaves it, no longer stopping.
        if let Some(r) = c.running.as_mut() {
            r.stopper = 0;
        }
        drop(c);
        self.0.stop_gate.ended();
    }
}
