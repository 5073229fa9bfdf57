//! A trace's life: `start` and `stop`.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::attach::{Attacher, Attachments, Joined, Joining, Kept, Starting, When};
use super::stop_gate::{stop_action, StopAction};
use super::{set_clock_hint, Control, OwnedBuffer, Running, TraceLog, GENERATIONS};
use crate::error::{Error, ErrorKind};
use crate::output::trace::Trace;
use crate::record::buffer::TraceBuffer;
use crate::record::clock::ClockInfo;
use crate::record::tenant::{evict_all, Tenant};
use crate::record::thread;
use crate::registry::callsite;
use crate::trace_log::config::{TraceConfig, TraceLogConfig};

impl TraceLog {
    /// Starts a trace with the subsystems `attachers` lists (`subsystems.rs`'s list, which the
    /// public `start` passes). Events from before this call are not recorded. If another thread
    /// is stopping the log's trace, waits until that stop has ended.
    ///
    /// Its steps: check the configuration (the core's and each attacher's); wait out a stop; make
    /// the buffer; start the attachments that may fail (a streaming trace's collector, the
    /// triggers); publish the buffer; start the others (the system context); enable the slot.
    pub(super) fn start_with(&self, config: TraceConfig, attachers: &[Attacher]) -> Result<(), Error> {
        let chunks = config.chunks()?;
        for a in attachers {
            (a.check)(&config)?;
        }
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
        let attached = match self.start_attachments(
            &config,
            buffer,
            &clock,
            attachers,
            When::BeforePublish,
            Attachments::default(),
        ) {
            Ok(attached) => attached,
            Err(e) => {
                // SAFETY: never published, and the attachments that were given it are undone;
                // ours to free.
                drop(unsafe { Box::from_raw(buffer) });
                return Err(e);
            }
        };
        // Release: pairs with the Acquire load in `Tenant::make_room`, publishing the buffer's
        // initialised chunk headers.
        self.core.buffer.store(buffer, Ordering::Release);
        let aggregates_at_start =
            callsite::aggregate_snapshots().into_iter().map(|(a, _)| (a.callsite, a)).collect();
        let attached = self
            .start_attachments(&config, buffer, &clock, attachers, When::AfterPublish, attached)
            .expect("attachments started after the buffer is published never fail");
        let filter = callsite::SlotFilter {
            categories: Arc::new(config.categories.clone()),
            max_level: config.log_level,
            // Its scopes open and close out of line when an attachment takes them (the
            // allocation counter, issue 23).
            allocations: attached.0.iter().any(|a| a.takes_scopes()),
        };
        c.running =
            Some(Running { config, buffer: OwnedBuffer(buffer), aggregates_at_start, attached, stopper: 0 });
        // Relaxed: a status flag for `is_enabled`.
        self.enabled.store(true, Ordering::Relaxed);
        callsite::enable_slot(self.slot, filter);
        Ok(())
    }

    /// Starts the attachers of `when` after those in `attached`; on a failure, aborts every
    /// attachment started (the newest first) and returns the error.
    fn start_attachments(
        &self,
        config: &TraceConfig,
        buffer: *mut TraceBuffer,
        clock: &ClockInfo,
        attachers: &[Attacher],
        when: When,
        mut attached: Attachments,
    ) -> Result<Attachments, Error> {
        for a in attachers.iter().filter(|a| a.when == when) {
            let starting = Starting { config, buffer, clock, attached: &attached };
            match (a.start)(self, &starting) {
                Ok(Some(one)) => attached.0.push(one),
                Ok(None) => {}
                Err(e) => {
                    while let Some(one) = attached.0.pop() {
                        one.abort(self);
                    }
                    return Err(e);
                }
            }
        }
        Ok(attached)
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
    fn new_buffer(
        &self,
        config: &TraceConfig,
        chunks: usize,
        clock: ClockInfo,
    ) -> Result<*mut TraceBuffer, Error> {
        let mut buffer = match &config.ring_file {
            None => TraceBuffer::new(config.mode, chunks)
                .map_err(|e| Error::new(ErrorKind::BufferAlloc { bytes: e.bytes }))?,
            Some(path) => self.ring_buffer(path, config.mode, chunks, clock)?,
        };
        // Relaxed: only uniqueness matters.
        buffer.generation = GENERATIONS.fetch_add(1, Ordering::Relaxed);
        Ok(Box::into_raw(Box::new(buffer)))
    }

    /// Stops the trace, takes every thread's chunk back, and keeps the result for
    /// [`TraceLog::take_trace`]. Events from after this call are not recorded. Does nothing when no
    /// trace is running. A call made while another thread is stopping the trace waits until that
    /// stop has ended, and then returns: it never stops again (see `stop_gate.rs`).
    ///
    /// Its steps: name the stopper and take what the attachments join without the control lock
    /// (the trigger dump thread, whose last dump takes that lock; the system collector, which only
    /// tries it); join them; disable the slot and unpublish the buffer; evict every tenant; let
    /// the attachments finish with the final figures (the collector writes every chunk given
    /// back); make the trace.
    pub fn stop(&self) {
        let me = thread::current_thread_id();
        let joining: Vec<Box<dyn Joining>> = {
            let (mut c, waited) = self.wait_for_stop(self.control(), me);
            let stopper = c.running.as_ref().map(|r| r.stopper);
            let (StopAction::Stop, Some(r)) = (stop_action(stopper, waited), c.running.as_mut()) else {
                return;
            };
            r.stopper = me;
            r.attached.0.iter_mut().filter_map(|a| a.stopping()).collect()
        };
        // Clears the stopper (if the trace is still there: an unwinding stop) and wakes the
        // waiters when this call returns or unwinds.
        let _ended = StopEnded(self);
        #[cfg(all(feature = "test-hooks", target_os = "linux"))]
        super::test_hooks::paused(self, super::test_hooks::Pause::StopJoining);
        let joined: Vec<Joined> = joining.into_iter().map(|j| j.join(self)).collect();
        let mut c = self.control();
        let Some(mut running) = c.running.take() else { return };
        for a in &mut running.attached.0 {
            a.unpublishing();
        }
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
        // (see `attach::CRASH`, read below).
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
        let mut kept = Kept::default();
        let mut adds = Vec::new();
        for j in joined {
            kept.0.extend(j.keep);
            adds.extend(j.add);
        }
        let attached = std::mem::take(&mut running.attached.0);
        kept.0.extend(attached.into_iter().filter_map(|a| a.stopped(&stats)));
        c.kept = kept;
        // A crash dump that loaded the pointer before we unpublished it may be reading the buffer:
        // the process is dying, so leave the buffer to it rather than free it. The crash recorder
        // fills its hooks before its handlers can run (both accesses of the slot are SeqCst, as
        // the swap above: see `HookSlot::fill`), so an empty slot means no dump can have the
        // pointer.
        if super::attach::CRASH.get().is_some_and(|crash| (crash.dump_started)()) {
            c.last_stats = stats;
            return;
        }
        // SAFETY: the buffer pointer is unpublished, every tenant has been evicted under its
        // master lock (so no slave holds or can reach the buffer), the attachments' threads are
        // joined (the collector's by its `stopped`), and no crash dump started (one that starts
        // now finds the pointer null): nothing else refers to the buffer, and we own it again.
        let buffer = unsafe { Box::from_raw(running.buffer.0) };
        let clock = c.clock.clone().expect("calibrated in start");
        c.last_stats = stats.clone();
        // What the aggregate points this trace's categories take counted since it started.
        let aggregates = running.aggregates_so_far();
        let trace =
            Trace::new(*buffer, callsite::snapshot(), thread::thread_names(), clock, stats, aggregates);
        let trace = adds.into_iter().fold(trace, |t, add| add(t));
        c.last_trace = Some(trace.with_compression(running.config.compression));
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
