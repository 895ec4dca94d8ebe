#!/usr/bin/env python3
"""Checksum oracle for the six benchmark workloads (standard library only).

Renders, from N alone, the canonical result string that `bench/WORKLOADS.md` defines for a
workload (§1.4 and §2) and prints its FNV-1a 64 checksum. Neither harness is involved, so both
can be checked against it: the Rust harness (`bench/src/oracle.rs` builds the same
strings) and the LangGraph harness next to this file (which imports `canonical()` from here).

    python3 bench/langgraph/expected_checksums.py                    # table of the usual sizes
    python3 bench/langgraph/expected_checksums.py chain 1000         # one checksum
    python3 bench/langgraph/expected_checksums.py chain 3 --canonical    # the hashed string
"""

from __future__ import annotations

import argparse

WORKLOADS = ("chain", "fanout", "loop", "wide", "threads", "resume", "threads-concurrent")

# Sizes of the table in WORKLOADS.md §3.
TABLE_SIZES = {
    "chain": (3, 10, 100, 1000, 3000),
    "fanout": (10, 100, 1000, 3000, 10000),
    "loop": (10, 100, 500, 1000),
    "wide": (10, 100, 1000, 3000),
    "threads": (100, 1000),
    "resume": (10, 100, 300, 1000),
    "threads-concurrent": (100, 1000),
}

# Width of one trace entry in the `resume` workload.
RESUME_ENTRY_WIDTH = 100


def fnv1a64(text: str) -> str:
    """FNV-1a, 64 bits, over the UTF-8 bytes of `text`; 16 lowercase hex digits."""
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return format(h, "016x")


def trace_entry(i: int, width: int | None = None) -> str:
    """Entry written by chain node i: `n{i}`, or `n{i}:` padded with `x` to `width` chars."""
    name = "n%d" % i
    if width is None:
        return name
    return (name + ":").ljust(width, "x")[:width]


def canonical(workload: str, n: int) -> str:
    """The canonical result string of `workload` at size `n` (WORKLOADS.md §2)."""
    if workload == "chain":
        return "chain;count=%d;trace=%s" % (n, ",".join(trace_entry(i) for i in range(n)))
    if workload == "fanout":
        squares = [k * k for k in range(n)]  # already ascending
        return "fanout;total=%d;results=%s" % (sum(squares), ",".join(map(str, squares)))
    if workload == "loop":
        messages = ["human:human-0:start"]
        for i in range(n):
            messages += ["ai:ai-%d:call %d" % (i, i), "tool:tool-%d:%d" % (i, i * i)]
        messages.append("ai:ai-final:done")
        return "loop;iterations=%d;messages=%s" % (n, "|".join(messages))
    if workload == "wide":
        keys = sorted("k%d" % i for i in range(n))  # bytewise: k0, k1, k10, k11, ..., k2
        pairs = ",".join("%s:%s" % (k, k[1:]) for k in keys)
        return "wide;count=%d;total=%d;out=%s" % (n, n * (n - 1) // 2, pairs)
    if workload == "threads":
        one = ",".join(trace_entry(i) for i in range(3))
        return "threads;threads=%d;%s" % (n, "|".join("%d:3:%s" % (t, one) for t in range(n)))
    if workload == "threads-concurrent":
        one = ",".join(trace_entry(i) for i in range(3))
        runs = "|".join("%d:3:%s" % (t, one) for t in range(n))
        return "threads-concurrent;threads=%d;%s" % (n, runs)
    if workload == "resume":
        entries = (trace_entry(i, RESUME_ENTRY_WIDTH) for i in range(n))
        return "resume;count=%d;trace=%s" % (n, ",".join(entries))
    raise ValueError("unknown workload %r" % workload)


def expected_checksum(workload: str, n: int) -> str:
    return fnv1a64(canonical(workload, n))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", nargs="?", choices=WORKLOADS)
    ap.add_argument("n", nargs="?", type=int)
    ap.add_argument("--canonical", action="store_true", help="print the canonical string, not its checksum")
    args = ap.parse_args()
    if args.workload is not None:
        if args.n is None or args.n < 1:
            ap.error("give WORKLOAD N with N >= 1")
        text = canonical(args.workload, args.n)
        print(text if args.canonical else fnv1a64(text))
        return
    print("| workload | N | checksum |")
    print("|---|---|---|")
    for workload, sizes in TABLE_SIZES.items():
        for n in sizes:
            print("| %s | %d | `%s` |" % (workload, n, expected_checksum(workload, n)))


if __name__ == "__main__":
    main()
