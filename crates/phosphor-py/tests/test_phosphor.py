"""The Python module, end to end: traces are saved, read back with the `phosphor` tool, and
converted to Perfetto, whose output is decoded with the official protos (scripts/check_pftrace.py).

Needs PHOSPHOR_CLI (the `phosphor` binary) and PHOSPHOR_SCRIPTS (the repo's scripts/ directory);
`crates/phosphor-cli/tests/it/python.rs` sets both and runs this suite.
"""

import os
import subprocess
import sys
import threading

import pytest

import phosphor

CLI = os.environ["PHOSPHOR_CLI"]
sys.path.insert(0, os.environ["PHOSPHOR_SCRIPTS"])
import check_pftrace  # noqa: E402


def cli(*args):
    out = subprocess.run([CLI, *args], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout


def perfetto(path, tmp_path):
    """The trace at `path` converted to Perfetto and decoded: (result, tracks by kind)."""
    pf = tmp_path / "trace.pftrace"
    cli("convert", str(path), "--to", "perfetto", "-o", str(pf))
    result, _ = check_pftrace.check(pf.read_bytes())
    assert result["ok"], result["errors"]
    return result


def threads(result):
    return {t["name"]: t for t in result["tracks"] if t["kind"] == "thread"}


def inner(x):
    return x + 1


def middle(x):
    return inner(x) * 2


def outer(n):
    total = 0
    for i in range(n):
        total += middle(i)
    return total


def test_function_calls_are_nested_slices_in_perfetto(tmp_path):
    path = str(tmp_path / "calls.phos")  # before start: `str()` of a path runs Python code
    phosphor.start(mode="fixed", size=8 << 20)
    assert outer(3) == 12
    figures = phosphor.stop(path)
    assert figures["dropped"] == 0
    # outer, 3 x (middle, inner): 7 calls, a begin and an end each.
    assert figures["recorded"] == 14
    main = threads(perfetto(path, tmp_path))["MainThread"]
    got = [(s["name"], s["depth"]) for s in main["slices"]]
    assert got == [("outer", 0)] + [("middle", 1), ("inner", 2)] * 3
    assert all(s["dur"] is not None and s["dur"] >= 0 for s in main["slices"])
    assert all(s["category"] == "python" for s in main["slices"])


def test_c_calls_are_recorded_when_asked():
    phosphor.start(mode="fixed", size=8 << 20, c_calls=True)
    items = []
    for i in range(3):
        items.append(i)
    figures = phosphor.stop()
    # Three `list.append` calls at least, a begin and an end each.
    assert figures["recorded"] >= 6


def test_a_mismatched_end_warns_and_the_tools_report_it(tmp_path):
    path = tmp_path / "mismatch.phos"
    phosphor.start(mode="fixed", size=1 << 20, functions=False)
    phosphor.begin("load")
    with pytest.warns(RuntimeWarning, match=r'end\("parse"\) does not match the innermost begin\("load"\)'):
        phosphor.end("parse")
    with pytest.warns(RuntimeWarning, match="without a begin"):
        phosphor.end("stray")
    phosphor.begin("ok")
    phosphor.end("ok")
    phosphor.stop(str(path))
    stats = cli("stats", str(path))
    assert "2 problems" in stats, stats
    assert "parse" in stats and "load" in stats


def test_scopes_decorators_data_and_logs(tmp_path):
    path = tmp_path / "manual.phos"

    @phosphor.function
    def work(n):
        return n * 2

    phosphor.start(mode="fixed", size=1 << 20, functions=False)
    with phosphor.scope("batch"):
        assert work(21) == 42
        phosphor.data("queue depth", 5)
        phosphor.data("state", "draining")
        phosphor.log("warn", "app", "retry {} of {} for {}", 2, 3, "db")
    phosphor.stop(str(path))
    main = threads(perfetto(path, tmp_path))["MainThread"]
    names = [(s["name"], s["depth"]) for s in main["slices"]]
    assert names[:2] == [("batch", 0), ("test_scopes_decorators_data_and_logs.<locals>.work", 1)], names
    logs = cli("logs", str(path))
    assert "WARN" in logs and "app: retry 2 of 3 for db" in logs, logs
    assert "queue depth" in cli("stats", str(path))
    with pytest.raises(ValueError, match="not a level"):
        phosphor.log("loud", "app", "x")


def test_the_decorator_is_a_no_op_while_functions_are_traced(tmp_path):
    path = tmp_path / "decorated.phos"

    @phosphor.function
    def work():
        return 1

    phosphor.start(mode="fixed", size=1 << 20)
    work()
    phosphor.stop(str(path))
    main = threads(perfetto(path, tmp_path))["MainThread"]
    assert [s["name"] for s in main["slices"]].count("test_the_decorator_is_a_no_op_while_functions_are_traced.<locals>.work") == 1


def test_threads_are_kept_apart_with_their_names(tmp_path):
    path = tmp_path / "threads.phos"

    def alpha_work():
        return inner(1)

    def beta_work():
        return middle(1)

    phosphor.start(mode="fixed", size=8 << 20)
    workers = [
        threading.Thread(target=alpha_work, name="alpha"),
        threading.Thread(target=beta_work, name="beta"),
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    phosphor.stop(str(path))
    by_name = threads(perfetto(path, tmp_path))
    assert {"alpha", "beta"} <= set(by_name)
    alpha = [s["name"] for s in by_name["alpha"]["slices"]]
    beta = [s["name"] for s in by_name["beta"]["slices"]]
    assert any(n.endswith("alpha_work") for n in alpha) and "inner" in alpha and "middle" not in alpha
    assert any(n.endswith("beta_work") for n in beta) and "middle" in beta
    assert by_name["alpha"]["tid"] != by_name["beta"]["tid"]


def test_a_remote_command_reaches_a_python_handler(tmp_path):
    calls = []

    def add(a, b):
        calls.append((a, b))
        if a < 0:
            return 1, "a must not be negative"
        return 0, str(a + b)

    phosphor.register_command("py:add", "a=int b=int[[2]]", "adds two numbers", add)
    with pytest.raises(ValueError, match="already registered"):
        phosphor.register_command("py:add", "", "again", add)
    sock = phosphor.serve(str(tmp_path / "control" / "py.sock"))
    out = subprocess.run([CLI, "call", sock, "py:add a=40"], capture_output=True, text=True)
    assert (out.returncode, out.stdout) == (0, "42\n"), out.stderr
    out = subprocess.run([CLI, "call", sock, "py:add a=-1"], capture_output=True, text=True)
    assert out.returncode == 2 and "a must not be negative" in out.stderr
    out = subprocess.run([CLI, "call", sock, "py:add b=1"], capture_output=True, text=True)
    assert out.returncode == 2 and "missing mandatory parameter: a" in out.stderr
    assert calls == [(40, 2), (-1, 2)], "a rejected command never reaches the handler"
    # The built-in commands drive the trace from outside.
    assert "trace.start" in cli("call", sock, "help")
    assert cli("call", sock, "trace.start mode=fixed size=1048576").strip() == "started"
    phosphor.log("info", "remote", "hello {}", 1)
    dump = tmp_path / "dump.phos"
    assert "events written" in cli("call", sock, f"trace.dump path={dump}")
    assert "hello 1" in cli("logs", str(dump))
    cli("call", sock, "trace.stop")
