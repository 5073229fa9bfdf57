#!/usr/bin/env python3
"""Prints the manifest of `phosphor` without its dev-dependencies, for the cross step's unit tests.

    scripts/cross/lean-manifest.py ROOT > DIR/Cargo.toml

`cargo test -p phosphor --lib` compiles every dev-dependency of the package (tokio, hyper and the
OTLP receiver, prost and the OpenTelemetry protos, divan, phosphor-export...: 106 packages for
Windows) and passes each to the unit tests, which use none of them: the unit tests (`#[cfg(test)]`
in `src/`) use the library's own dependencies only. The package printed here is the same library
(`ROOT/crates/phosphor/src/lib.rs`, its build script, its dependencies, features and lints, read
from the manifests as they are) in a workspace of its own, with no dev-dependencies, so that a
cross build of its unit tests compiles the 41 packages of the library alone. The real package's
dev-dependency on itself turns on the features `test-hooks` and `tokio` for its tests: the cross
step passes them (`--features test-hooks,tokio`), so the unit tests are compiled as on the host.

Workspace-inherited fields and dependencies (`x.workspace = true`) are resolved from ROOT's
Cargo.toml, path dependencies made absolute. Only what the manifests use is handled (strings,
booleans, lists of strings, tables of those); anything else stops with an error.
"""
import sys
import tomllib
from pathlib import Path


def value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
    sys.exit(f"lean-manifest.py: cannot write {v!r}")


def key(k):
    return k if k.replace("-", "").replace("_", "").isalnum() else value(k)


def dep(name, spec, ws_deps, root):
    """One dependency with `workspace = true` resolved and its path made absolute."""
    if isinstance(spec, str):
        spec = {"version": spec}
    spec = dict(spec)
    if spec.pop("workspace", False):
        base = ws_deps[name]
        base = {"version": base} if isinstance(base, str) else dict(base)
        features = base.get("features", []) + spec.pop("features", [])
        base.update(spec)
        if features:
            base["features"] = features
        spec = base
        if "path" in spec:
            spec["path"] = str(root / spec["path"])
    elif "path" in spec:
        sys.exit(f"lean-manifest.py: {name}: a path dependency not from the workspace")
    return spec


def main():
    root = Path(sys.argv[1]).resolve()
    ws = tomllib.loads((root / "Cargo.toml").read_text())["workspace"]
    pkg_dir = root / "crates" / "phosphor"
    manifest = tomllib.loads((pkg_dir / "Cargo.toml").read_text())
    ws_pkg, ws_deps = ws["package"], ws["dependencies"]

    out = ["# Made by scripts/cross/lean-manifest.py: do not edit.", "[package]"]
    for k, v in manifest["package"].items():
        if isinstance(v, dict) and v.get("workspace"):
            v = ws_pkg[k]
        out.append(f"{key(k)} = {value(v)}")
    out.append("publish = false")
    out.append(f"build = {value(str(pkg_dir / 'build.rs'))}")
    out += ["", "[lib]", f"path = {value(str(pkg_dir / 'src' / 'lib.rs'))}", "", "[workspace]"]

    def deps(header, table):
        out.extend(["", header])
        out.extend(f"{key(n)} = {value(dep(n, s, ws_deps, root))}" for n, s in table.items())

    deps("[dependencies]", manifest["dependencies"])
    for cfg, t in manifest.get("target", {}).items():
        if "dependencies" in t:
            deps(f"[target.{value(cfg)}.dependencies]", t["dependencies"])
    out.extend(["", "[features]"])
    out.extend(f"{key(k)} = {value(v)}" for k, v in manifest["features"].items())
    # The lints (the workspace's), which clippy (the workspace crates' compiler in the cross step)
    # reads.
    lints = manifest.get("lints", {})
    if lints.get("workspace"):
        lints = ws["lints"]
    for tool, lints in lints.items():
        out.extend(["", f"[lints.{tool}]"])
        out.extend(f"{key(k)} = {value(v)}" for k, v in lints.items())
    print("\n".join(out))


if __name__ == "__main__":
    main()
