//! Counters: a counter track per (category, name, argument) under the process, and a
//! `TYPE_COUNTER` per numeric argument; an event with a value that is not a number is an instant.

use std::io::{self, Write};

use phosphor_format::file::{Event, Value};

use super::intern::Resolved;
use super::proto::*;
use super::tracks::UUID_COUNTER;
use super::Exporter;

impl<W: Write> Exporter<W> {
    /// One `TYPE_COUNTER` per argument on the argument's counter track, or an instant if an
    /// argument is not a number (or there is none).
    pub(super) fn counter(
        &mut self,
        ts: u64,
        thread: u64,
        r: &mut Resolved,
        e: &Event<'_>,
    ) -> io::Result<()> {
        let numeric = |v: &Value<'_>| !matches!(v, Value::Str(_) | Value::Pointer(_));
        let args = e.args.iter().flatten();
        if args.clone().next().is_none() || !args.clone().all(|(_, v)| numeric(v)) {
            return self.slice(TYPE_INSTANT, ts, thread, r, e, None);
        }
        for (i, arg) in e.args.iter().enumerate() {
            let Some((name, value)) = *arg else { continue };
            if r.counters[i] == 0 {
                r.counters[i] = self.counter_track(&e.callsite.category, &e.callsite.name, name, ts)?;
            }
            self.start_packet(Some(ts), 0);
            let p = &mut self.buf;
            let te = p.begin(PACKET_TRACK_EVENT);
            p.uint(EVENT_TYPE, TYPE_COUNTER);
            p.uint(EVENT_TRACK_UUID, r.counters[i]);
            match value {
                Value::I64(v) => p.int(EVENT_COUNTER_VALUE, v),
                Value::U64(v) => match i64::try_from(v) {
                    Ok(v) => p.int(EVENT_COUNTER_VALUE, v),
                    Err(_) => p.double(EVENT_DOUBLE_COUNTER_VALUE, v as f64),
                },
                Value::Bool(v) => p.int(EVENT_COUNTER_VALUE, i64::from(v)),
                Value::F64(v) => p.double(EVENT_DOUBLE_COUNTER_VALUE, v),
                Value::Str(_) | Value::Pointer(_) => unreachable!("checked above"),
            }
            p.end(te);
            self.finish_packet(true)?;
        }
        self.saw(ts);
        Ok(())
    }

    /// The counter track of (category, name, argument): named after the counter, plus `.arg` for
    /// an argument not called `value`.
    #[cold]
    #[inline(never)]
    fn counter_track(&mut self, category: &str, name: &str, arg: &str, ts: u64) -> io::Result<u64> {
        let track_name =
            if arg.is_empty() || arg == "value" { name.to_owned() } else { format!("{name}.{arg}") };
        let key = (category.to_owned(), track_name);
        if let Some(&uuid) = self.counters.get(&key) {
            return Ok(uuid);
        }
        let uuid = self.new_track_uuid(UUID_COUNTER);
        self.start_packet(Some(ts), 0);
        let p = &mut self.buf;
        let track = p.begin(PACKET_TRACK_DESCRIPTOR);
        p.uint(TRACK_UUID, uuid);
        p.uint(TRACK_PARENT_UUID, self.process_uuid);
        p.bytes(TRACK_NAME, key.1.as_bytes());
        let counter = p.begin(TRACK_COUNTER);
        p.bytes(COUNTER_CATEGORIES, category.as_bytes());
        p.end(counter);
        p.end(track);
        self.finish_packet(false)?;
        self.counters.insert(key, uuid);
        Ok(uuid)
    }
}
