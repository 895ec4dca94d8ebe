#!/usr/bin/env python3
"""Runs benchmark configurations several times (fresh process each) and prints median tables.

    python3 bench/matrix.py --preset n1000 --runs 5 --out /tmp/ag.jsonl
    python3 bench/matrix.py chain:1000:sled:sync loop:1000:memory --runs 3
    python3 bench/matrix.py --preset side --runs 5 \
        --langgraph "/tmp/lgvenv/bin/python /work/shared/bench/langgraph_bench.py"

A configuration is WORKLOAD:N[:CHECKPOINTER[:DURABILITY]] (checkpointer none|memory|sled,
durability sync|async|exit; default none, sync). Runs are interleaved round-robin over the
configurations so that a noisy neighbour spreads over all of them. With --langgraph, every
configuration is also run by the LangGraph harness (sled -> sqlite; LangGraph's own default
durability `async` unless the configuration names one) and the table shows the ratio of the
median wall times. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys

WORKLOADS = ("chain", "fanout", "loop", "wide", "threads", "resume")

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
    if len(parts) < 2 or parts[0] not in WORKLOADS:
        raise SystemExit(f"bad configuration {s!r}: expected WORKLOAD:N[:CHECKPOINTER[:DURABILITY]]")
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
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.startswith("{")]
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


def lg_cmd(lg: str, c: dict) -> list[str]:
    ck = "sqlite" if c["checkpointer"] == "sled" else c["checkpointer"]
    cmd = shlex.split(lg) + [c["workload"], "--n", str(c["n"]), "--checkpointer", ck, "--json"]
    if c["durability"] and ck != "none":
        cmd += ["--durability", c["durability"]]
    return cmd


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("configs", nargs="*")
    ap.add_argument("--preset", action="append", choices=sorted(PRESETS), default=[])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--bin", default="target/release/agentgraph-bench")
    ap.add_argument("--langgraph", default=None, help="command that runs langgraph_bench.py")
    ap.add_argument("--out", default=None, help="append every JSON line here")
    ap.add_argument("--extra", default="", help="extra arguments for the Rust harness (e.g. '--runtime current')")
    args = ap.parse_args()

    configs = [parse_config(s) for p in args.preset for s in PRESETS[p]]
    configs += [parse_config(s) for s in args.configs]
    if not configs:
        raise SystemExit("no configuration: give WORKLOAD:N[:CHECKPOINTER[:DURABILITY]] or --preset")
    rust: dict[str, list[dict]] = {c["key"]: [] for c in configs}
    lg: dict[str, list[dict]] = {c["key"]: [] for c in configs}
    out = open(args.out, "a") if args.out else None
    for r in range(args.runs):
        for c in configs:
            sides = [("rust", rust_cmd(args.bin, c, args.extra), rust)]
            if args.langgraph:
                sides.append(("langgraph", lg_cmd(args.langgraph, c), lg))
            for side, cmd, store in sides:
                la = loadavg()
                row = run_one(cmd)
                if row is None:
                    continue
                row["_side"], row["_run"], row["_loadavg"] = side, r, la
                store[c["key"]].append(row)
                if out:
                    out.write(json.dumps(row) + "\n")
                    out.flush()
        print(f"run {r + 1}/{args.runs} done (load {loadavg():.2f})", file=sys.stderr)

    head = (
        "| config | wall_s median | wall_s min | per_step_us | per_task_us | checkpoints "
        "| sled file bytes | sled allocated | logical bytes | peak RSS MB | checksum ok |"
    )
    if args.langgraph:
        head += " LangGraph wall_s | ratio |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for c in configs:
        rows = rust[c["key"]]
        if not rows:
            print(f"| {c['key']} | failed |")
            continue
        line = (
            f"| {c['key']} | {fmt(med(rows, 'wall_s'), None)} | {fmt(min(r['wall_s'] for r in rows), None)} "
            f"| {fmt(med(rows, 'per_step_us'), 2)} | {fmt(med(rows, 'per_task_us'), 2)} "
            f"| {fmt(med(rows, 'checkpoints_written'))} | {fmt(med(rows, 'sqlite_bytes'), 0)} "
            f"| {fmt(med(rows, 'sled_allocated_bytes'), 0)} | {fmt(med(rows, 'store_logical_bytes'), 0)} "
            f"| {fmt(med(rows, 'peak_rss_mb'))} "
            f"| {all(r.get('checksum_ok') for r in rows)} ({len(rows)} runs) |"
        )
        if args.langgraph:
            lrows = lg[c["key"]]
            lw = med(lrows, "wall_s")
            rw = med(rows, "wall_s")
            ratio = f"{lw / rw:.0f}×" if lw and rw else "–"
            line += f" {fmt(lw, None)} | {ratio} |"
        print(line)
    loads = [r["_loadavg"] for rs in rust.values() for r in rs]
    if loads:
        print(f"\nload average (1 min) during the runs: median {statistics.median(loads):.2f}, max {max(loads):.2f}")


if __name__ == "__main__":
    main()
