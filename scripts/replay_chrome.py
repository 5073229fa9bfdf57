#!/usr/bin/env python3
"""Replays Chrome trace event JSON as speedscope (1.25.0, src/import/trace-event.ts) builds its
frames, and adds up each thread's frames per path.

Usage:
    replay_chrome.py FILE...    per file, one JSON line:
        {"threads": [{"pid": n, "tid": n, "slices": [[[s], count, total_ns]], "open": n,
                      "warnings": n, "examples": [s]}],
         "asyncs": [[name, pairs, total_ns, unended, unbegun]]}

Async slices (`b` / `e`, which speedscope does not show) are replayed as trace processor's JSON
importer builds them: sorted by ts (ties in file order), a `b` opens a slice of its (cat, name,
id), an `e` closes the innermost one open of its (cat, name, id) or nothing (an end never begun);
those left open are never ended. Per name: the closed ones and their durations (each end and
begin rounded to the nanosecond, then subtracted), the open ones, the ends that closed nothing.

What speedscope does, redone here step by step (Python floats are IEEE doubles, as JavaScript's
numbers, and parse the same decimal text to the same value):
  * only `B`, `E` and `X` events count; they are split by (pid, tid), in file order;
  * per thread, every `ts` is rebased on the thread's smallest `ts`;
  * `X` events are sorted by ts, then the longer `dur` first, ties in file order (a stable sort);
    each becomes a begin at ts and an end at ts + dur (after the begins and ends of `B`/`E`);
  * the begins, then the ends, are sorted by ts (stable);
  * the two queues are merged: the earlier ts first; at equal ts the end first, unless the end
    and the begin at the fronts have the same key (name and JSON arguments: a zero-length frame
    opens before it closes);
  * before an end is taken, an end of the same ts whose key matches the top of the stack is
    moved to the front, else one whose name matches;
  * an end with an empty stack, or whose name is not the top's, is dropped with a warning
    ("Tried to end ... Doing nothing instead."); an end of the same name but other arguments
    closes the top (a warning too);
  * frames still open at the end are closed at the profile's last time (counted as "open" here
    and left out of the paths, as their duration is not the trace's).

A frame's path is the names (not speedscope's keys with the arguments) of the frames on the stack
when it opens, outermost first, then its own name; its duration is its end less its begin in
microseconds, times 1,000, rounded to the nanosecond (the export shaves well under half a
nanosecond off a duration so that ties order as recorded).
"""

import json
import sys


def js_truthy(v):
    return v not in (None, False, 0, "") and v == v


def key(ev):
    """speedscope's getEventId: the name, and the arguments as JSON when present."""
    k = ev.get("name") or "(unnamed)"
    if js_truthy(ev.get("args")):
        k += " " + json.dumps(ev["args"], separators=(",", ":"), ensure_ascii=False)
    return k


def name(ev):
    return ev.get("name") or "(unnamed)"


def queues(events):
    """convertToEventQueues: the begins and the ends, each in the order speedscope takes them."""
    first = min(ev["ts"] for ev in events)
    for ev in events:
        ev["ts"] -= first
    begins = [ev for ev in events if ev["ph"] == "B"]
    ends = [ev for ev in events if ev["ph"] == "E"]
    xs = [ev for ev in events if ev["ph"] == "X"]

    def dur(x):
        d = x.get("dur")
        if d is None:
            d = x.get("tdur")
        return 0 if d is None else d

    xs.sort(key=lambda x: (x["ts"], -dur(x)))
    for x in xs:
        begins.append(dict(x, ph="B"))
        ends.append(dict(x, ph="E", ts=x["ts"] + dur(x)))
    begins.sort(key=lambda e: e["ts"])
    ends.sort(key=lambda e: e["ts"])
    return begins, ends


def replay_thread(events):
    begins, ends = queues(events)
    bi, ei = 0, 0
    stack = []  # (begin event, path)
    slices = {}
    warnings = []
    while bi < len(begins) or ei < len(ends):
        if ei == len(ends):
            take_begin = True
        elif bi == len(begins):
            take_begin = False
        else:
            b, e = begins[bi], ends[ei]
            if b["ts"] != e["ts"]:
                take_begin = b["ts"] < e["ts"]
            else:
                take_begin = key(b) == key(e)
        if take_begin:
            b = begins[bi]
            bi += 1
            path = (stack[-1][1] if stack else ()) + (name(b),)
            stack.append((b, path))
            continue
        if stack:
            top = stack[-1][0]
            front_ts = ends[ei]["ts"]
            match = None
            for want in (lambda e: key(e) == key(top), lambda e: name(e) == name(top)):
                for i in range(ei + 1, len(ends)):
                    if ends[i]["ts"] > front_ts:
                        break
                    if want(ends[i]):
                        match = i
                        break
                if match is not None:
                    break
            if match is not None:
                ends[ei], ends[match] = ends[match], ends[ei]
        e = ends[ei]
        ei += 1
        if not stack:
            warnings.append(f"ts={e['ts']}: Tried to end {key(e)!r}, but the stack was empty")
            continue
        top, path = stack[-1]
        if name(e) != name(top):
            warnings.append(f"ts={e['ts']}: Tried to end {key(e)!r} when {key(top)!r} was on the top "
                            "of the stack. Doing nothing instead.")
            continue
        if key(e) != key(top):
            warnings.append(f"ts={e['ts']}: Tried to end {key(e)!r} when {key(top)!r} was on the top "
                            "of the stack. Ending it instead.")
        stack.pop()
        ns = round((e["ts"] - top["ts"]) * 1000)
        count, total = slices.get(path, (0, 0))
        slices[path] = (count + 1, total + ns)
    return {
        "slices": [[list(p), c, d] for p, (c, d) in sorted(slices.items())],
        "open": len(stack),
        "warnings": len(warnings),
        "examples": warnings[:5],
    }


def replay_asyncs(events):
    asyncs = sorted((ev for ev in events if ev.get("ph") in ("b", "e")), key=lambda ev: ev["ts"])
    open_by_key, names = {}, {}
    for ev in asyncs:
        k = (ev.get("cat"), name(ev), ev.get("id"))
        n = names.setdefault(name(ev), [0, 0, 0, 0])
        stack = open_by_key.setdefault(k, [])
        if ev["ph"] == "b":
            stack.append(ev)
        elif stack:
            b = stack.pop()
            n[0] += 1
            n[1] += round(ev["ts"] * 1000) - round(b["ts"] * 1000)
        else:
            n[3] += 1
    for (_, nm, _), stack in open_by_key.items():
        names[nm][2] += len(stack)
    return [[nm] + n for nm, n in sorted(names.items())]


def replay(doc):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    asyncs = replay_asyncs(events)
    by_thread = {}
    for ev in events:
        if ev.get("ph") in ("B", "E", "X"):
            by_thread.setdefault((ev["pid"], ev["tid"]), []).append(ev)
    threads = []
    for (pid, tid), evs in sorted(by_thread.items()):
        t = {"pid": int(pid), "tid": int(tid)}
        t.update(replay_thread(evs))
        threads.append(t)
    return {"threads": threads, "asyncs": asyncs}


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for f in argv[1:]:
        with open(f, "rb") as fh:
            # As JavaScript reads them: every number a double.
            doc = json.load(fh, parse_int=float)
        print(json.dumps(replay(doc), ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
