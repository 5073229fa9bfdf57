#!/usr/bin/env python3
"""Checks Perfetto protobuf traces (.pftrace) against the official schema, and decodes them the way
trace processor does.

Usage:
    check_pftrace.py FILE...        one JSON result per file, one per line
    check_pftrace.py --dump FILE    a human-readable dump: every packet, then every track
    check_pftrace.py --batch        traces on stdin, each as a little-endian u64 length and the
                                    bytes; prints a JSON list of results (one Python start for many)
    check_pftrace.py --paths FILE...  per file, one JSON line: the slices of each thread track added
                                    up per path (see "Paths" below), and the check's "ok" and "errors"
    --max-async-tracks N (before the files, any mode): also an error if a trace has more than N
                                    async tracks (plain tracks under a process: not process, thread or counter
                                    tracks; each result's "async_tracks" counts them)
    A FILE of "-" is stdin. Exit status: 0 if every trace is valid, 1 if not, 2 on bad usage.

Run it with the interpreter that scripts/python-env.sh prints: it needs the `perfetto` package,
which ships perfetto_trace_pb2, the code generated from the official perfetto_trace.proto.

What is checked (any failure is listed in "errors" and makes "ok" false):
  * the bytes parse as perfetto.protos.Trace, and hold no field unknown to the schema, at any
    depth; re-serialised they take exactly as many bytes (so no field is written twice and every
    varint is minimal);
  * a packet of compressed_packets (zlib) holds nothing else and a Trace, whose packets are
    checked in its place, as trace processor reads them ("compressed_packets" counts them);
  * every packet has trusted_packet_sequence_id; interning is resolved per sequence as trace
    processor resolves it: SEQ_INCREMENTAL_STATE_CLEARED (or incremental_state_cleared) starts a
    new, empty generation, TracePacketDefaults and InternedData apply from the packet that carries
    them on, an iid is never 0 and never redefined with another value within a generation; no
    packet uses interned names, or sets SEQ_NEEDS_INCREMENTAL_STATE, before its sequence was
    cleared (trace processor only uses that flag to skip packets of a sequence that lost its
    state, so a packet need not set it);
  * the first packet is a ClockSnapshot with a primary_trace_clock; a later ClockSnapshot is the
    first packet of its sequence. Every timestamp is in the primary clock (the packet's
    timestamp_clock_id, else the sequence defaults'), or in a sequence-scoped clock (ids 64 to
    127) that a ClockSnapshot of the same sequence defines together with the primary clock: an
    incremental clock's timestamps are deltas, added up in stream order from the snapshot's
    reading, as trace processor adds them. Every time in the result is resolved so, to absolute
    nanoseconds of the primary clock;
  * every track_uuid an event uses has a TrackDescriptor earlier in the stream; descriptors of one
    uuid agree (kind, parent, pid, tid; the name may change, the last one wins); parents exist;
    thread and process descriptors have their pid/tid; counter events are on counter tracks and
    have a value, other events are not on counter tracks; counter tracks are under a process, other
    plain tracks under a process or a thread (an off-CPU track);
  * the profiling tables of InternedData (function_names, build_ids, mapping_paths, mappings,
    frames, callstacks) follow the same rules, and each entry's references (a frame's function
    and mapping, a mapping's build id and path, a call stack's frames) are interned before it; a
    PerfSample sets SEQ_NEEDS_INCREMENTAL_STATE, has pid and tid, and its callstack_iid is
    interned. The result lists the samples ("samples": ts, pid, tid, cpu, and the stack's
    functions outermost first, each as "function @ mapping path").

Then each track's events are sorted by timestamp, ties in stream order (trace processor's sorter
compares (timestamp, arrival)), and replayed as trace processor's slice tracker does: a begin
opens a slice at the current depth, an end closes the innermost open one, an instant is a
zero-length slice at the current depth. The result lists every track with its slices (name,
category, ts, dur, depth, args) or counter values; an end with nothing open is listed in
"unmatched_ends" and a slice never closed has "dur": null.

Paths (--paths) also lists the async tracks' slices per name ("asyncs": pairs, their total
nanoseconds, slices left open, ends that closed nothing). Paths: the replayed slices of the thread tracks (not async, counter or other plain
tracks), each under its path: the names of the slices enclosing it on its track (those of smaller
depth open when it begins), outermost first, then its own name, as `phosphor stats` builds its
paths. Per thread (tid; the tracks of one tid together), a list of [path, count, total_ns] for the
slices with a duration (begin and end, sorted by path), of [path, count] for the instants, and the
number of slices never closed ("open", not in the lists) and of ends with nothing open
("unmatched_ends"):
    {"ok": bool, "errors": [...], "threads": [{"tid": n, "pid": n, "name": s, "slices": [[[s], n, n]],
      "instants": [[[s], n]], "open": n, "unmatched_ends": n}]}
"""

import json
import math
import struct
import sys
import zlib

from google.protobuf import text_format
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

CLEARED = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
NEEDS = pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
BOOTTIME = pb.BUILTIN_CLOCK_BOOTTIME
# Clock ids a sequence defines for itself (ClockSnapshot.Clock.clock_id).
SEQUENCE_CLOCKS = (64, 127)
TYPE_NAMES = {v: k for k, v in pb.TrackEvent.Type.items()}
CLOCK_NAMES = {v: k for k, v in pb.BuiltinClock.items()}


def unknown_fields(msg, path, errors):
    """Lists fields the schema does not know, in msg and every message inside it."""
    for f in UnknownFieldSet(msg):
        errors.append(f"{path}: unknown field {f.field_number} (wire type {f.wire_type})")
    for field, value in msg.ListFields():
        if field.type != field.TYPE_MESSAGE:
            continue
        if field.is_repeated:
            for i, m in enumerate(value):
                unknown_fields(m, f"{path}.{field.name}[{i}]", errors)
        else:
            unknown_fields(value, f"{path}.{field.name}", errors)


def json_number(x):
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    return x


class Sequence:
    def __init__(self):
        self.valid = False
        self.clear()

    def clear(self):
        # Sequence-scoped clocks survive a clear: they belong to the sequence's snapshots.
        self.clocks = getattr(self, "clocks", {})
        self.names = {}
        self.categories = {}
        self.annotation_names = {}
        self.defaults = None
        self.packets = 0
        self.profile = {t: {} for t in PROFILE_TABLES}


# InternedData's profiling tables, in the order an entry may refer to an earlier one.
PROFILE_TABLES = ("function_names", "build_ids", "mapping_paths", "mappings", "frames", "callstacks")


def intern_profile(seq, d, where, errors):
    """Takes in the profiling tables of InternedData `d`, checking each entry's references."""
    p = seq.profile

    def need(table, iid, what):
        if iid not in p[table]:
            errors.append(f"{where}: {what} refers to {table} iid {iid}, not interned")

    for table in PROFILE_TABLES:
        for e in getattr(d, table):
            if e.iid == 0:
                errors.append(f"{where}: {table} iid 0")
                continue
            if table in ("function_names", "build_ids", "mapping_paths"):
                value = e.str.decode("utf-8", "replace")
            elif table == "mappings":
                if e.build_id:
                    need("build_ids", e.build_id, f"mapping {e.iid}")
                for c in e.path_string_ids:
                    need("mapping_paths", c, f"mapping {e.iid}")
                path = "/" + "/".join(p["mapping_paths"].get(c, "?") for c in e.path_string_ids)
                value = {"path": path, "start": e.start, "end": e.end, "offset": e.start_offset,
                         "build_id": p["build_ids"].get(e.build_id) if e.build_id else None}
            elif table == "frames":
                need("function_names", e.function_name_id, f"frame {e.iid}")
                need("mappings", e.mapping_id, f"frame {e.iid}")
                mapping = p["mappings"].get(e.mapping_id, {"path": "?"})
                value = f"{p['function_names'].get(e.function_name_id, '?')} @ {mapping['path']}"
            else:
                for f in e.frame_ids:
                    need("frames", f, f"callstack {e.iid}")
                value = [p["frames"].get(f, "?") for f in e.frame_ids]
            if p[table].get(e.iid, value) != value:
                errors.append(f"{where}: {table} iid {e.iid} redefined")
            p[table][e.iid] = value


class Track:
    def __init__(self, uuid, identity, name, first_packet):
        self.uuid = uuid
        self.identity = identity
        self.name = name
        self.descriptors = 1
        self.first_packet = first_packet
        self.events = []  # (ts, packet index, type, name, category, args, value)

    def kind(self):
        return self.identity["kind"]


def descriptor_identity(td):
    identity = {"kind": "track", "parent": td.parent_uuid if td.HasField("parent_uuid") else None}
    name = td.name if td.HasField("name") else None
    if td.HasField("process"):
        identity["kind"] = "process"
        identity["pid"] = td.process.pid if td.process.HasField("pid") else None
        if td.process.HasField("process_name"):
            name = td.process.process_name
    elif td.HasField("thread"):
        identity["kind"] = "thread"
        identity["pid"] = td.thread.pid if td.thread.HasField("pid") else None
        identity["tid"] = td.thread.tid if td.thread.HasField("tid") else None
        if td.thread.HasField("thread_name"):
            name = td.thread.thread_name
    elif td.HasField("counter"):
        identity["kind"] = "counter"
        identity["categories"] = list(td.counter.categories)
    return identity, name


def annotation_value(a):
    which = a.WhichOneof("value")
    if which is None:
        return None
    kind = which[: -len("_value")] if which.endswith("_value") else which
    value = getattr(a, which)
    if which in ("nested_value",):
        value = text_format.MessageToString(value, as_one_line=True, as_utf8=True)
    return [kind, json_number(value)]


def check(data, max_async_tracks=None):
    errors = []
    trace = pb.Trace()
    try:
        trace.ParseFromString(data)
    except DecodeError as e:
        return {"ok": False, "errors": [f"does not parse as perfetto.protos.Trace: {e}"]}, trace
    unknown_fields(trace, "trace", errors)
    if trace.ByteSize() != len(data):
        errors.append(f"re-serialised size {trace.ByteSize()} != {len(data)} bytes: a field is "
                      "repeated or a varint is not minimal")

    trace, compressed = inflate(trace, errors)

    sequences = {}
    tracks = {}
    samples = []
    clock = {"primary": None, "snapshot": {}}
    for i, pkt in enumerate(trace.packet):
        where = f"packet {i}"
        if not pkt.HasField("trusted_packet_sequence_id"):
            errors.append(f"{where}: no trusted_packet_sequence_id")
        seq = sequences.setdefault(pkt.trusted_packet_sequence_id, Sequence())
        first_on_sequence = seq.packets == 0
        seq.packets += 1
        flags = pkt.sequence_flags
        if pkt.incremental_state_cleared or flags & CLEARED:
            seq.clear()
            seq.valid = True
        if pkt.HasField("trace_packet_defaults"):
            seq.defaults = pkt.trace_packet_defaults
        if pkt.HasField("interned_data"):
            if not seq.valid:
                errors.append(f"{where}: interned data before the sequence was cleared")
            d = pkt.interned_data
            for table, entries in ((seq.names, d.event_names), (seq.categories, d.event_categories),
                                   (seq.annotation_names, d.debug_annotation_names)):
                for e in entries:
                    if e.iid == 0:
                        errors.append(f"{where}: interned iid 0 ({e.name!r})")
                    elif table.get(e.iid, e.name) != e.name:
                        errors.append(f"{where}: iid {e.iid} redefined from {table[e.iid]!r} to {e.name!r}")
                    table[e.iid] = e.name
            intern_profile(seq, d, where, errors)
        if flags & NEEDS and not seq.valid:
            errors.append(f"{where}: needs incremental state, but the sequence was never cleared")

        data_field = pkt.WhichOneof("data")
        if i == 0 and data_field != "clock_snapshot":
            errors.append(f"{where}: the first packet is not a ClockSnapshot")
        if data_field == "clock_snapshot":
            cs = pkt.clock_snapshot
            if i != 0 and not first_on_sequence:
                errors.append(f"{where}: a ClockSnapshot after the first packet, not the first of its sequence")
            if i == 0 and cs.HasField("primary_trace_clock"):
                clock["primary"] = cs.primary_trace_clock
            elif cs.HasField("primary_trace_clock"):
                errors.append(f"{where}: a later ClockSnapshot sets the primary trace clock")
            primary = [c.timestamp for c in cs.clocks if c.clock_id == clock["primary"]]
            for c in cs.clocks:
                if SEQUENCE_CLOCKS[0] <= c.clock_id <= SEQUENCE_CLOCKS[1]:
                    if not primary:
                        errors.append(f"{where}: sequence clock {c.clock_id} without a primary clock reading")
                        continue
                    seq.clocks[c.clock_id] = {"incremental": c.is_incremental, "last": c.timestamp,
                                              "base": c.timestamp, "primary": primary[0]}
                elif i == 0:
                    clock["snapshot"][CLOCK_NAMES.get(c.clock_id, str(c.clock_id))] = c.timestamp
            continue

        ts = None
        if pkt.HasField("timestamp"):
            clock_id = pkt.timestamp_clock_id if pkt.HasField("timestamp_clock_id") else 0
            if not clock_id and seq.defaults is not None and seq.defaults.HasField("timestamp_clock_id"):
                clock_id = seq.defaults.timestamp_clock_id
            clock_id = clock_id or BOOTTIME
            ts = pkt.timestamp
            if SEQUENCE_CLOCKS[0] <= clock_id <= SEQUENCE_CLOCKS[1]:
                c = seq.clocks.get(clock_id)
                if c is None:
                    errors.append(f"{where}: timestamp in sequence clock {clock_id}, which no ClockSnapshot "
                                  "of this sequence defines")
                else:
                    if c["incremental"]:
                        c["last"] += ts
                        ts = c["last"]
                    ts = ts - c["base"] + c["primary"]
            elif clock_id != clock["primary"]:
                errors.append(f"{where}: timestamp in clock {clock_id}, not the primary trace clock "
                              f"{clock['primary']}")

        if data_field == "track_descriptor":
            td = pkt.track_descriptor
            if not td.uuid:
                errors.append(f"{where}: TrackDescriptor without a uuid")
                continue
            identity, name = descriptor_identity(td)
            if identity["kind"] == "process" and identity["pid"] is None:
                errors.append(f"{where}: ProcessDescriptor without a pid")
            if identity["kind"] == "thread" and (identity["pid"] is None or identity["tid"] is None):
                errors.append(f"{where}: ThreadDescriptor without a pid and a tid")
            track = tracks.get(td.uuid)
            if track is None:
                tracks[td.uuid] = Track(td.uuid, identity, name, i)
            else:
                if track.identity != identity:
                    errors.append(f"{where}: track {td.uuid} described again as {identity}, "
                                  f"was {track.identity}")
                track.descriptors += 1
                if name is not None:
                    track.name = name
        elif data_field == "track_event":
            track_event(pkt, ts, where, seq, tracks, errors)
        elif data_field == "perf_sample":
            ps = pkt.perf_sample
            if not flags & NEEDS:
                errors.append(f"{where}: a PerfSample without SEQ_NEEDS_INCREMENTAL_STATE")
            if not (ps.HasField("pid") and ps.HasField("tid")):
                errors.append(f"{where}: a PerfSample without pid and tid")
            stack = seq.profile["callstacks"].get(ps.callstack_iid)
            if stack is None:
                errors.append(f"{where}: callstack iid {ps.callstack_iid} is not interned")
            samples.append({"ts": ts, "pid": ps.pid, "tid": ps.tid,
                            "cpu": ps.cpu if ps.HasField("cpu") else None, "stack": stack})
        elif data_field is not None:
            errors.append(f"{where}: unexpected packet content {data_field}")

    if clock["primary"] is None:
        errors.append("no ClockSnapshot gives the primary trace clock")
    for t in tracks.values():
        parent = t.identity["parent"]
        if parent is not None and parent not in tracks:
            errors.append(f"track {t.uuid}: parent {parent} has no descriptor")
        allowed = ("process",) if t.kind() == "counter" else ("process", "thread")
        if t.kind() in ("counter", "track") and (parent not in tracks or tracks[parent].kind() not in allowed):
            errors.append(f"track {t.uuid} ({t.kind()}): not parented to a {' or '.join(allowed)} track")

    # A flow is drawn between the events that carry its id: one that only one event carries has
    # nothing to point at (and one terminated but never carried, no start).
    ends = {}
    for t in tracks.values():
        for ev in t.events:
            for f in ev[6] + ev[7]:
                ends[f] = ends.get(f, 0) + 1
    for f, n in sorted(ends.items()):
        if n < 2:
            errors.append(f"flow {f}: one event only; a flow needs two ends")
    async_tracks = sum(1 for t in tracks.values()
                       if t.kind() == "track" and t.identity["parent"] in tracks
                       and tracks[t.identity["parent"]].kind() == "process")
    if max_async_tracks is not None and async_tracks > max_async_tracks:
        errors.append(f"{async_tracks} async tracks, more than {max_async_tracks}")
    result = {
        "ok": not errors,
        "errors": errors,
        "packets": len(trace.packet),
        "compressed_packets": compressed,
        "sequences": sorted(sequences),
        "async_tracks": async_tracks,
        "clock": {
            "primary": CLOCK_NAMES.get(clock["primary"], clock["primary"]),
            "snapshot": clock["snapshot"],
        },
        "tracks": [replay(t) for t in sorted(tracks.values(), key=lambda t: t.first_packet)],
        "samples": samples,
    }
    return result, trace


def track_event(pkt, ts, where, seq, tracks, errors):
    te = pkt.track_event
    if not pkt.HasField("timestamp"):
        errors.append(f"{where}: TrackEvent without a timestamp")
    uuid = te.track_uuid
    if not te.HasField("track_uuid"):
        defaults = seq.defaults.track_event_defaults if seq.defaults is not None else None
        uuid = defaults.track_uuid if defaults is not None else 0
    track = tracks.get(uuid)
    if track is None:
        errors.append(f"{where}: track_uuid {uuid} has no TrackDescriptor before it")
        return
    uses_interning = te.HasField("name_iid") or len(te.category_iids) > 0 or any(
        a.HasField("name_iid") for a in te.debug_annotations)
    if uses_interning and not seq.valid:
        errors.append(f"{where}: uses interned data before the sequence was cleared")

    def lookup(table, iid, what):
        if iid not in table:
            errors.append(f"{where}: {what} iid {iid} is not interned on this sequence")
            return f"<unknown {what} {iid}>"
        return table[iid]

    name = None
    if te.HasField("name_iid"):
        name = lookup(seq.names, te.name_iid, "event name")
    elif te.HasField("name"):
        name = te.name
    categories = [lookup(seq.categories, c, "category") for c in te.category_iids] + list(te.categories)
    args = {}
    for a in te.debug_annotations:
        if a.HasField("name_iid"):
            key = lookup(seq.annotation_names, a.name_iid, "annotation name")
        else:
            key = a.name
        args[key] = annotation_value(a)

    kind = TYPE_NAMES.get(te.type, te.type)
    value = None
    if te.type == pb.TrackEvent.TYPE_COUNTER:
        if track.kind() != "counter":
            errors.append(f"{where}: counter event on {track.kind()} track {uuid}")
        which = te.WhichOneof("counter_value_field")
        if which is None:
            errors.append(f"{where}: counter event without a value")
        else:
            value = json_number(getattr(te, which))
    else:
        if track.kind() == "counter":
            errors.append(f"{where}: {kind} on counter track {uuid}")
        if te.type not in (pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END,
                           pb.TrackEvent.TYPE_INSTANT):
            errors.append(f"{where}: TrackEvent of type {kind}")
    flows = list(te.flow_ids)
    terminating = list(te.terminating_flow_ids)
    if len(te.flow_ids_old) or len(te.terminating_flow_ids_old):
        errors.append(f"{where}: deprecated flow_ids_old")
    track.events.append((ts, kind, name, ",".join(categories) or None, args, value,
                         flows, terminating))


def replay(track):
    """The track's events in timestamp order (stable), built into slices as trace processor does."""
    out = {"uuid": track.uuid, "name": track.name, "descriptors": track.descriptors}
    out.update(track.identity)
    events = sorted(track.events, key=lambda e: e[0])
    if track.kind() == "counter":
        out["counter"] = [[ts, value] for ts, _, _, _, _, value, _, _ in events]
        return out
    slices, stack, unmatched = [], [], []
    for ts, kind, name, category, args, _, flows, terminating in events:
        if kind == "TYPE_SLICE_END":
            if not stack:
                unmatched.append(ts)
                continue
            s = stack.pop()
            s["dur"] = ts - s["ts"]
            s["args"].update(args)
            if terminating:
                s["terminating_flows"] = terminating
        else:
            s = {"type": "instant" if kind == "TYPE_INSTANT" else "slice", "name": name,
                 "category": category, "ts": ts, "dur": 0 if kind == "TYPE_INSTANT" else None,
                 "depth": len(stack), "args": args}
            if flows:
                s["flows"] = flows
            slices.append(s)
            if kind == "TYPE_SLICE_BEGIN":
                stack.append(s)
    out["slices"] = slices
    out["unmatched_ends"] = unmatched
    return out


def paths(result):
    """The --paths summary of a check's result: per thread, the slices added up per path."""
    threads = {}
    for t in result.get("tracks", []):
        if t["kind"] != "thread":
            continue
        th = threads.setdefault(t["tid"], {"tid": t["tid"], "pid": t["pid"], "name": t["name"],
                                           "slices": {}, "instants": {}, "open": 0, "unmatched_ends": 0})
        th["unmatched_ends"] += len(t["unmatched_ends"])
        stack = []  # the names of the slices enclosing the next one, by depth
        for s in t["slices"]:
            del stack[s["depth"]:]
            path = tuple(stack) + (s["name"],)
            if s["type"] == "instant":
                th["instants"][path] = th["instants"].get(path, 0) + 1
                continue
            stack.append(s["name"])
            if s["dur"] is None:
                th["open"] += 1
                continue
            count, total = th["slices"].get(path, (0, 0))
            th["slices"][path] = (count + 1, total + s["dur"])
    out = []
    for tid in sorted(threads):
        th = threads[tid]
        th["slices"] = [[list(p), c, d] for p, (c, d) in sorted(th["slices"].items())]
        th["instants"] = [[list(p), c] for p, c in sorted(th["instants"].items())]
        out.append(th)
    return {"ok": result["ok"], "errors": result["errors"], "threads": out, "asyncs": async_names(result)}


def async_names(result):
    """The --paths summary of the async tracks (plain tracks under a process): per name (a lane's
    slices are of its name), [name, pairs, total_ns, unended, unbegun]: its closed slices and their
    durations added up, its slices left open, and the ends on its lanes that closed nothing."""
    kinds = {t["uuid"]: t["kind"] for t in result.get("tracks", [])}
    names = {}
    for t in result.get("tracks", []):
        if t["kind"] != "track" or kinds.get(t.get("parent")) != "process":
            continue
        for s in t["slices"]:
            if s["type"] != "slice":
                continue
            n = names.setdefault(s["name"], [0, 0, 0, 0])
            if s["dur"] is None:
                n[2] += 1
            else:
                n[0] += 1
                n[1] += s["dur"]
        if t["unmatched_ends"]:
            names.setdefault(t["name"], [0, 0, 0, 0])[3] += len(t["unmatched_ends"])
    return [[name] + n for name, n in sorted(names.items())]


def inflate(trace, errors):
    """The trace with each packet of compressed_packets replaced by the packets inside it, as trace
    processor reads them (zlib, RFC 1950), and the number of such packets. Such a packet holds no
    other field, the inner bytes are a Trace that re-serialises to as many bytes, and none of its
    packets is compressed again."""
    if not any(p.HasField("compressed_packets") for p in trace.packet):
        return trace, 0
    flat = pb.Trace()
    compressed = 0
    for i, pkt in enumerate(trace.packet):
        if not pkt.HasField("compressed_packets"):
            flat.packet.append(pkt)
            continue
        compressed += 1
        where = f"outer packet {i}"
        if len(pkt.ListFields()) != 1:
            errors.append(f"{where}: compressed_packets with other fields")
        try:
            data = zlib.decompress(pkt.compressed_packets)
        except zlib.error as e:
            errors.append(f"{where}: compressed_packets does not inflate as zlib: {e}")
            continue
        inner = pb.Trace()
        try:
            inner.ParseFromString(data)
        except DecodeError as e:
            errors.append(f"{where}: compressed_packets does not hold a Trace: {e}")
            continue
        unknown_fields(inner, f"{where}: inner trace", errors)
        if inner.ByteSize() != len(data):
            errors.append(f"{where}: inner trace re-serialises to {inner.ByteSize()} != {len(data)} bytes")
        for p in inner.packet:
            if p.HasField("compressed_packets"):
                errors.append(f"{where}: compressed_packets inside compressed_packets")
            flat.packet.append(p)
    return flat, compressed


def dump(result, trace):
    lines = ["packets:"]
    for i, pkt in enumerate(trace.packet):
        lines.append(f"  {i}: {text_format.MessageToString(pkt, as_one_line=True, as_utf8=True)}")
    lines.append("tracks:")
    for t in result.get("tracks", []):
        ids = " ".join(f"{k}={t[k]}" for k in ("pid", "tid", "parent", "categories") if t.get(k) is not None)
        lines.append(f"  {t['kind']} {json.dumps(t['name'], ensure_ascii=False)} uuid={t['uuid']} {ids} "
                     f"descriptors={t['descriptors']}")
        for ts, value in t.get("counter", []):
            lines.append(f"    {ts} = {value}")
        for s in t.get("slices", []):
            dur = "open" if s["dur"] is None else f"+{s['dur']}"
            args = ", ".join(f"{k}: {v[0]} {json.dumps(v[1], ensure_ascii=False)}" for k, v in s["args"].items())
            lines.append(f"    {s['ts']} {dur} {'  ' * s['depth']}{s['type']} {s['name']} [{s['category']}]"
                         + (f" {{{args}}}" if args else "")
                         + (f" flows={s['flows']}" if s.get("flows") else "")
                         + (f" terminating_flows={s['terminating_flows']}" if s.get("terminating_flows") else ""))
        for ts in t.get("unmatched_ends", []):
            lines.append(f"    {ts} end with nothing open")
    for smp in result.get("samples", []):
        lines.append(f"  sample {smp['ts']} tid={smp['tid']} cpu={smp['cpu']}: {' > '.join(smp['stack'] or [])}")
    lines.append("errors:" + "".join(f"\n  {e}" for e in result["errors"]) if result["errors"] else "errors: none")
    return "\n".join(lines)


def read_batch(stream):
    traces = []
    while True:
        head = stream.read(8)
        if not head:
            return traces
        if len(head) != 8:
            raise SystemExit("--batch: truncated length")
        (n,) = struct.unpack("<Q", head)
        data = stream.read(n)
        if len(data) != n:
            raise SystemExit("--batch: truncated trace")
        traces.append(data)


def main(argv):
    args = argv[1:]
    limit = None
    if args[:1] == ["--max-async-tracks"]:
        try:
            limit = int(args[1])
        except (IndexError, ValueError):
            print(__doc__, file=sys.stderr)
            return 2
        args = args[2:]
    if args[:1] == ["--batch"] and len(args) == 1:
        results = [check(data, limit)[0] for data in read_batch(sys.stdin.buffer)]
        print(json.dumps(results, ensure_ascii=False))
        return 0 if all(r["ok"] for r in results) else 1
    want_dump = args[:1] == ["--dump"]
    want_paths = args[:1] == ["--paths"]
    files = args[1:] if want_dump or want_paths else args
    if not files or (want_dump and len(files) != 1):
        print(__doc__, file=sys.stderr)
        return 2
    ok = True
    for f in files:
        data = sys.stdin.buffer.read() if f == "-" else open(f, "rb").read()
        result, trace = check(data, limit)
        ok &= result["ok"]
        if want_paths:
            result = paths(result)
        print(dump(result, trace) if want_dump else json.dumps(result, ensure_ascii=False))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
