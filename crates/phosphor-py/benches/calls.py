"""What automatic function tracing costs per Python call: Phosphor's profile hook against no
tracing and against cProfile, in the same run.

The workload is a recursive `fib(22)` (57,313 calls of a small Python function, no C calls).
A fourth variant keeps Phosphor's hook installed but returning at once: what CPython's
profiling mechanism costs (the call into the hook, the frame object it is handed) before the hook
does any work. Each round runs the variants in turn (rotated each round), each once; the figures are
medians over the rounds. The overhead per call is (traced - untraced) / calls. Phosphor's trace is
checked every round: exactly a begin and an end per call recorded, nothing dropped.

Run with `bash scripts/py-bench.sh` (a release wheel; the tests install a debug one).
"""

import cProfile
import statistics
import sys
import time

import phosphor

N = 22
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 30


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


CALLS = 2 * fib(N + 1) - 1


def untraced():
    t = time.perf_counter_ns()
    fib(N)
    return time.perf_counter_ns() - t


def traced_phosphor():
    phosphor.start(mode="fixed", size=64 << 20)
    t = time.perf_counter_ns()
    fib(N)
    dt = time.perf_counter_ns() - t
    figures = phosphor.stop()
    assert figures["recorded"] == 2 * CALLS and figures["dropped"] == 0, figures
    return dt


def empty_hook():
    phosphor.start(mode="fixed", size=1 << 20)
    phosphor._hook_records(False)
    t = time.perf_counter_ns()
    fib(N)
    dt = time.perf_counter_ns() - t
    figures = phosphor.stop()
    assert figures["recorded"] == 0, figures
    return dt


def traced_cprofile():
    p = cProfile.Profile()
    p.enable()
    t = time.perf_counter_ns()
    fib(N)
    dt = time.perf_counter_ns() - t
    p.disable()
    return dt


def main():
    variants = [
        ("untraced", untraced),
        ("hook installed, returning at once", empty_hook),
        ("phosphor", traced_phosphor),
        ("cProfile", traced_cprofile),
    ]
    times = {name: [] for name, _ in variants}
    for r in range(ROUNDS):
        k = r % len(variants)
        for name, f in variants[k:] + variants[:k]:
            times[name].append(f())
    med = {name: statistics.median(v) / CALLS for name, v in times.items()}
    print(f"fib({N}): {CALLS} calls per run, {ROUNDS} rounds, medians; Python {sys.version.split()[0]}")
    print("| variant | ns per call | overhead ns per call | overhead × Phosphor's |")
    print("|---|---:|---:|---:|")
    base = med["untraced"]
    ph = med["phosphor"] - base
    for name, _ in variants:
        over = med[name] - base
        ratio = "" if name == "untraced" else f"{over / ph:.2f}"
        print(f"| {name} | {med[name]:.1f} | {over:.1f} | {ratio} |")
    print(f"check: every Phosphor run recorded {2 * CALLS} events (a begin and an end per call), 0 dropped")


if __name__ == "__main__":
    main()
