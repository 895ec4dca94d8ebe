#!/usr/bin/env python3
"""Runs benchmark configurations several times (fresh process each) and prints median tables.

    python3 bench/matrix.py --preset n1000 --runs 5 --out /tmp/ag.jsonl
    python3 bench/matrix.py chain:1000:sled:sync loop:1000:memory --runs 3

    # next to LangGraph (the harness in bench/langgraph/, run by the Python of a virtualenv
    # that has bench/langgraph/requirements.txt installed):
    AGENTGRAPH_BENCH_PYTHON=/tmp/lgvenv/bin/python python3 bench/matrix.py --preset side --runs 5 --langgraph

    # two builds of agentgraph in one interleaved run (e.g. before and after a change):
    python3 bench/matrix.py --preset n1000 --runs 5 --baseline-bin /path/to/old/agentgraph-bench

A configuration is WORKLOAD:N[:CHECKPOINTER[:DURABILITY]] (checkpointer none|memory|sled,
durability sync|async|exit; default none and the harness's default durability, sync). Runs are
interleaved round-robin over the configurations, and within a configuration over the sides
(this binary, the baseline binary, LangGraph; the order rotates from one run to the next), so
that a noisy neighbour spreads over all of them.

--bin is the agentgraph-bench binary measured (default: target/release/agentgraph-bench of
this repository). --baseline-bin runs a second agentgraph-bench binary on the same
configurations; the table then shows its median wall time and the ratio "this / baseline"
(below 1 means this binary is faster). --langgraph also runs every configuration through
bench/langgraph/langgraph_bench.py (sled -> its SqliteSaver; LangGraph's own default
durability `async` unless the configuration names one) and shows the ratio "LangGraph / this".
The Python that runs it comes from --python, else $AGENTGRAPH_BENCH_PYTHON; --langgraph-cmd
replaces the whole command. A final column says whether every run of every side printed the
same checksum, and the oracle's (`checksum_ok`). Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

WORKLOADS = ("chain", "fanout", "loop", "wide", "threads", "resume", "threads-concurrent")
CHECKPOINTERS = ("none", "memory", "sled", "sqlite")
DURABILITIES = ("sync", "async", "exit")

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_ROOT = os.path.dirname(BENCH_DIR)
DEFAULT_BIN = os.path.join(REPO_ROOT, "target", "release", "agentgraph-bench")
LANGGRAPH_SCRIPT = os.path.join(BENCH_DIR, "langgraph", "langgraph_bench.py")
PYTHON_VAR = "AGENTGRAPH_BENCH_PYTHON"

PRESETS = {
    "n1000": [
        f"{w}:1000:{c}"
        for w in WORKLOADS
        for c in ("none", "memory", "sled:sync", "sled:async")
        if not (w == "resume" and c == "none")
    ],
    "linear": [
        f"{w}:{n}:sled:{d}"
        for w in ("chain", "loop")
        for n in (250, 500, 1000, 2000, 4000)
        for d in ("sync", "async")
    ],
    "targets": [
        "chain:1000:none",
        "chain:3000:none",
        "fanout:10000:none",
        "fanout:10000:memory",
        "fanout:10000:sled:async",
        "resume:1000:memory",
        "resume:1000:sled:sync",
        "resume:1000:sled:async",
    ],
    "side": [
        "chain:1000:none",
        "chain:1000:memory",
        "chain:1000:sled:sync",
        "chain:1000:sled:async",
        "fanout:1000:none",
        "loop:1000:none",
        "loop:1000:sled:async",
        "wide:1000:none",
        "threads:1000:none",
        "resume:1000:sled:async",
    ],
}


def parse_config(s: str) -> dict:
    parts = s.split(":")
    bad = SystemExit(f"bad configuration {s!r}: expected WORKLOAD:N[:CHECKPOINTER[:DURABILITY]]")
    if not 2 <= len(parts) <= 4 or parts[0] not in WORKLOADS or not parts[1].isdigit():
        raise bad
    if len(parts) > 2 and parts[2] not in CHECKPOINTERS:
        raise bad
    if len(parts) > 3 and parts[3] not in DURABILITIES:
        raise bad
    return {
        "workload": parts[0],
        "n": int(parts[1]),
        "checkpointer": parts[2] if len(parts) > 2 else "none",
        "durability": parts[3] if len(parts) > 3 else None,
        "key": s,
    }


def loadavg() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run_one(cmd: list[str]) -> dict | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as e:
        print(f"FAILED to start: {shlex.join(cmd)}: {e}", file=sys.stderr)
        return None
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode != 0 or not lines:
        print(f"FAILED ({p.returncode}): {shlex.join(cmd)}\n{p.stderr[-2000:]}", file=sys.stderr)
        return None
    return json.loads(lines[-1])


def rust_cmd(binary: str, c: dict, extra: str) -> list[str]:
    cmd = [binary, c["workload"], "--n", str(c["n"]), "--checkpointer", c["checkpointer"], "--json"]
    cmd += shlex.split(extra)
    if c["durability"]:
        cmd += ["--durability", c["durability"]]
    return cmd


def lg_cmd(lg: list[str], c: dict) -> list[str]:
    ck = "sqlite" if c["checkpointer"] == "sled" else c["checkpointer"]
    cmd = lg + [c["workload"], "--n", str(c["n"]), "--checkpointer", ck, "--json"]
    if c["durability"] and ck != "none":
        cmd += ["--durability", c["durability"]]
    return cmd


def langgraph_command(args: argparse.Namespace) -> list[str] | None:
    if args.langgraph_cmd:
        return shlex.split(args.langgraph_cmd)
    if not args.langgraph:
        return None
    python = args.python or os.environ.get(PYTHON_VAR)
    if not python:
        raise SystemExit(
            f"--langgraph needs the Python of a virtualenv with bench/langgraph/requirements.txt "
            f"installed: give --python PATH or set {PYTHON_VAR} (see bench/README.md)"
        )
    return [python, LANGGRAPH_SCRIPT]


def med(rows: list[dict], key: str):
    vals = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(vals) if vals else None


def fmt(x, digits=1) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        if digits is None:
            return f"{x:.4g}"
        return f"{x:.{digits}f}"
    return str(x)


def checksum_summary(sides: dict[str, list[dict]]) -> str:
    """`True` when every run of every side printed one checksum and the oracle agreed."""
    rows = [r for rs in sides.values() for r in rs]
    if not rows:
        return "–"
    same = len({r.get("checksum") for r in rows}) == 1
    oracle = all(r.get("checksum_ok") for r in rows)
    counts = ", ".join(f"{len(rs)} {side}" for side, rs in sides.items() if rs)
    return f"{same and oracle} ({counts})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*", help="WORKLOAD:N[:CHECKPOINTER[:DURABILITY]]")
    ap.add_argument("--preset", action="append", choices=sorted(PRESETS), default=[])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bin", default=DEFAULT_BIN, help="the agentgraph-bench binary measured (default: %(default)s)")
    ap.add_argument("--baseline-bin", default=None,
                    help="a second agentgraph-bench binary, run interleaved; adds a 'this / baseline' column")
    ap.add_argument("--langgraph", action="store_true", help="also run bench/langgraph/langgraph_bench.py")
    ap.add_argument("--python", default=None,
                    help=f"the Python that runs the LangGraph harness (default: ${PYTHON_VAR})")
    ap.add_argument("--langgraph-cmd", default=None,
                    help="the whole command that runs the LangGraph harness (implies --langgraph)")
    ap.add_argument("--out", default=None, help="append every JSON line here")
    ap.add_argument("--extra", default="",
                    help="extra arguments for both agentgraph binaries (e.g. '--runtime current')")
    ap.add_argument("--dry-run", action="store_true", help="print the commands of the first run and stop")
    args = ap.parse_args()

    configs = [parse_config(s) for p in args.preset for s in PRESETS[p]]
    configs += [parse_config(s) for s in args.configs]
    if not configs:
        raise SystemExit("no configuration: give WORKLOAD:N[:CHECKPOINTER[:DURABILITY]] or --preset")
    lg = langgraph_command(args)
    binaries = [("this", args.bin)] + ([("baseline", args.baseline_bin)] if args.baseline_bin else [])
    for side, path in binaries:
        if not (os.path.isfile(path) and os.access(path, os.X_OK)) and not args.dry_run:
            raise SystemExit(f"{side} binary {path!r} not found: cargo build --release -p agentgraph-bench")

    def commands(c: dict) -> list[tuple[str, list[str]]]:
        cmds = [(side, rust_cmd(path, c, args.extra)) for side, path in binaries]
        if lg:
            cmds.append(("langgraph", lg_cmd(lg, c)))
        return cmds

    if args.dry_run:
        for c in configs:
            for side, cmd in commands(c):
                print(f"{side}: {shlex.join(cmd)}")
        return

    side_names = [side for side, _ in commands(configs[0])]
    results: dict[str, dict[str, list[dict]]] = {c["key"]: {s: [] for s in side_names} for c in configs}
    out = open(args.out, "a") if args.out else None
    for r in range(args.runs):
        for c in configs:
            cmds = commands(c)
            k = r % len(cmds)
            for side, cmd in cmds[k:] + cmds[:k]:  # rotate which side goes first
                la = loadavg()
                row = run_one(cmd)
                if row is None:
                    continue
                row["_side"], row["_run"], row["_loadavg"] = side, r, la
                if side != "langgraph":
                    row["_bin"] = cmd[0]
                results[c["key"]][side].append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
        print(f"run {r + 1}/{args.runs} done (load {loadavg():.2f})", file=sys.stderr)

    head = (
        "| config | wall_s median | wall_s min | per_step_us | per_task_us | checkpoints "
        "| sled file bytes | sled allocated | logical bytes | peak RSS MB |"
    )
    if args.baseline_bin:
        head += " baseline wall_s | this / baseline |"
    if lg:
        head += " LangGraph wall_s | LangGraph / this |"
    head += " checksums ok |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for c in configs:
        sides = results[c["key"]]
        rows = sides["this"]
        if not rows:
            print(f"| {c['key']} | failed |")
            continue
        rw = med(rows, "wall_s")
        line = (
            f"| {c['key']} | {fmt(rw, None)} | {fmt(min(r['wall_s'] for r in rows), None)} "
            f"| {fmt(med(rows, 'per_step_us'), 2)} | {fmt(med(rows, 'per_task_us'), 2)} "
            f"| {fmt(med(rows, 'checkpoints_written'))} | {fmt(med(rows, 'sqlite_bytes'), 0)} "
            f"| {fmt(med(rows, 'sled_allocated_bytes'), 0)} | {fmt(med(rows, 'store_logical_bytes'), 0)} "
            f"| {fmt(med(rows, 'peak_rss_mb'))} |"
        )
        if args.baseline_bin:
            bw = med(sides["baseline"], "wall_s")
            ratio = f"{rw / bw:.2f}×" if bw and rw else "–"
            line += f" {fmt(bw, None)} | {ratio} |"
        if lg:
            lw = med(sides["langgraph"], "wall_s")
            ratio = f"{lw / rw:.0f}×" if lw and rw else "–"
            line += f" {fmt(lw, None)} | {ratio} |"
        line += f" {checksum_summary(sides)} |"
        print(line)
    loads = [r["_loadavg"] for sides in results.values() for rs in sides.values() for r in rs]
    if loads:
        print(f"\nload average (1 min) during the runs: median {statistics.median(loads):.2f}, max {max(loads):.2f}")
    print(f"this: {args.bin}")
    if args.baseline_bin:
        print(f"baseline: {args.baseline_bin}")
    if lg:
        print(f"LangGraph: {shlex.join(lg)}")


if __name__ == "__main__":
    main()
