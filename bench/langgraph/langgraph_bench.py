#!/usr/bin/env python3
"""The six benchmark workloads of `bench/WORKLOADS.md` on LangGraph (the Python reference side).

    python langgraph_bench.py WORKLOAD --n N [--checkpointer none|memory|sqlite|postgres]
                              [--durability async|sync|exit] [--json] [--no-warmup]
                              [--db-dir DIR] [--keep-db] [--postgres-url URL] [--print-canonical]

WORKLOAD is chain, fanout, loop, wide, threads, resume or threads-concurrent; for the
threads workloads N is the number of threads T (threads-concurrent runs --concurrency C of
them at once through LangGraph's asyncio savers, see threads_concurrent.py). The harness
builds the same graphs as the Rust harness (`agentgraph-bench`), times
only the graph runs (WORKLOADS.md §1.2) and prints one JSON line with the same field names
(§1.1), so `bench/matrix.py` can put both side by side. `checksum_ok` compares the checksum of
the returned state with the oracle next to this file (`expected_checksums.py`).

Checkpointers: `none`; `memory` (InMemorySaver); `sqlite` (SqliteSaver on one sqlite3
connection in a fresh temporary folder: WAL, synchronous=FULL, one commit per checkpoint);
`postgres` (PostgresSaver, optional: needs the packages of requirements.txt and a server URL,
from --postgres-url or the AGENTGRAPH_BENCH_POSTGRES_URL environment variable; each run uses a
fresh schema that is dropped afterwards). Durability is LangGraph's own default, `async`,
unless --durability says otherwise.

Exit codes: 0; 1 when the run fails or its checksum differs from the oracle's (the JSON line
is still printed); 2 for bad usage.
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import os
import platform
import resource
import shutil
import sqlite3
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Any, Callable

from typing_extensions import TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.pregel import _loop as pregel_loop
from langgraph.types import Send

sys.dont_write_bytecode = True  # no __pycache__ next to the harness in the repository
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from expected_checksums import canonical as oracle_canonical  # noqa: E402
from expected_checksums import fnv1a64, trace_entry  # noqa: E402

WORKLOADS = ("chain", "fanout", "loop", "wide", "threads", "resume", "threads-concurrent")
CHECKPOINTERS = ("none", "memory", "sqlite", "postgres")
POSTGRES_URL_VAR = "AGENTGRAPH_BENCH_POSTGRES_URL"


def package_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


# ---------------------------------------------------------------------------------------------
# Counting super-steps and tasks. PregelLoop.after_tick runs once after every executed
# super-step (it applies the step's writes and saves its checkpoint), with the step's tasks in
# `self.tasks`. Wrapping it costs one Python call per step.
# ---------------------------------------------------------------------------------------------


class StepCounter:
    steps = 0  # super-steps in which a user node ran
    tasks = 0  # user-node executions
    input_steps = 0  # LangGraph's own input step (only the `__start__` task)

    @classmethod
    def reset(cls) -> None:
        cls.steps = cls.tasks = cls.input_steps = 0


def _install_step_counter() -> None:
    original = pregel_loop.PregelLoop.after_tick

    def after_tick(loop):  # type: ignore[no-untyped-def]
        user_tasks = 0
        for task in loop.tasks.values():
            if task.name != "__start__":
                user_tasks += 1
        if user_tasks:
            StepCounter.steps += 1
            StepCounter.tasks += user_tasks
        else:
            StepCounter.input_steps += 1
        return original(loop)

    pregel_loop.PregelLoop.after_tick = after_tick  # type: ignore[method-assign]


_install_step_counter()


# ---------------------------------------------------------------------------------------------
# Checkpointers, with counters of what they were asked to store.
# ---------------------------------------------------------------------------------------------


@dataclass
class WriteCounts:
    checkpoints: int = 0  # put() calls: checkpoint records
    write_batches: int = 0  # put_writes() calls: one per task write batch
    write_rows: int = 0  # rows in those batches


def count_writes(saver: Any, counts: WriteCounts) -> None:
    """Wraps the instance's put / put_writes so that every stored record is counted."""
    put, put_writes = saver.put, saver.put_writes

    def counted_put(config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
        counts.checkpoints += 1
        return put(config, checkpoint, metadata, new_versions)

    def counted_put_writes(config, writes, task_id, task_path=""):  # type: ignore[no-untyped-def]
        counts.write_batches += 1
        counts.write_rows += len(writes)
        return put_writes(config, writes, task_id, task_path)

    saver.put = counted_put
    saver.put_writes = counted_put_writes


class Store:
    """One checkpointer for one workload instance; `close()` returns its storage statistics."""

    def __init__(self, kind: str, label: str, db_dir: str | None, postgres_url: str | None) -> None:
        self.kind = kind
        self.counts = WriteCounts()
        self.saver: Any = None
        self._folder: str | None = None
        self._path: str | None = None
        self._conn: Any = None
        self._pg_url = postgres_url
        self._schema: str | None = None
        if kind == "memory":
            self.saver = InMemorySaver()
        elif kind == "sqlite":
            self._folder = tempfile.mkdtemp(prefix="lgbench-", dir=db_dir)
            self._path = os.path.join(self._folder, label + ".sqlite")
            # The connection SqliteSaver.from_conn_string opens, without the context manager.
            self._conn = sqlite3.connect(self._path, check_same_thread=False)
            self.saver = SqliteSaver(self._conn)
            self.saver.setup()  # tables and journal_mode=WAL, outside the timed region
        elif kind == "postgres":
            self._open_postgres()
        elif kind != "none":
            raise ValueError(kind)
        if self.saver is not None:
            count_writes(self.saver, self.counts)

    def _open_postgres(self) -> None:
        import psycopg  # optional dependency, only needed here
        from psycopg.rows import dict_row
        from langgraph.checkpoint.postgres import PostgresSaver

        self._schema = "lgbench_" + uuid.uuid4().hex
        with psycopg.connect(self._pg_url, autocommit=True) as admin:
            admin.execute('CREATE SCHEMA "%s"' % self._schema)
        # The connection PostgresSaver.from_conn_string opens, in the fresh schema.
        self._conn = psycopg.connect(
            self._pg_url,
            autocommit=True,
            prepare_threshold=0,
            row_factory=dict_row,
            options="-c search_path=%s" % self._schema,
        )
        self.saver = PostgresSaver(self._conn)
        self.saver.setup()

    def reset_counts(self) -> None:
        self.counts.checkpoints = self.counts.write_batches = self.counts.write_rows = 0

    def close(self, keep: bool = False) -> dict[str, Any]:
        stats: dict[str, Any] = {}
        if self.kind == "sqlite":
            stats = self._close_sqlite(keep)
        elif self.kind == "postgres":
            stats = self._close_postgres()
        if self._folder is not None and not keep:
            shutil.rmtree(self._folder, ignore_errors=True)
        return stats

    def _close_sqlite(self, keep: bool) -> dict[str, Any]:
        q = self._conn.execute
        ck_rows, ck_bytes, md_bytes = q(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(checkpoint)), 0), "
            "COALESCE(SUM(LENGTH(metadata)), 0) FROM checkpoints"
        ).fetchone()
        wr_rows, wr_bytes = q("SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()
        # Closing the only connection folds the WAL into the main file and removes it.
        self._conn.close()
        files = (self._path, self._path + "-wal", self._path + "-shm")
        stats: dict[str, Any] = {
            "sqlite_bytes": sum(os.path.getsize(f) for f in files if os.path.exists(f)),
            "sqlite_checkpoint_rows": ck_rows,
            "sqlite_checkpoint_blob_bytes": ck_bytes,
            "sqlite_metadata_bytes": md_bytes,
            "sqlite_write_rows": wr_rows,
            "sqlite_write_blob_bytes": wr_bytes,
        }
        if keep:
            stats["sqlite_path"] = self._path
        return stats

    def _close_postgres(self) -> dict[str, Any]:
        cur = self._conn.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c "
            "JOIN pg_namespace s ON s.oid = c.relnamespace "
            "WHERE s.nspname = %s AND c.relkind IN ('r', 'm')",
            (self._schema,),
        )
        total = int(cur.fetchone()["bytes"])
        rows = self._conn.execute("SELECT COUNT(*) AS n FROM checkpoints").fetchone()["n"]
        self._conn.execute('DROP SCHEMA "%s" CASCADE' % self._schema)
        self._conn.close()
        return {"postgres_bytes": total, "postgres_checkpoint_rows": rows}


# ---------------------------------------------------------------------------------------------
# The workloads (WORKLOADS.md §2). Each builder returns a Workload: the compiled graph, its
# input, the recursion limit, and how to render the canonical string from the returned state.
# ---------------------------------------------------------------------------------------------


@dataclass
class Workload:
    graph: Any
    input: Any
    recursion_limit: int
    render: Callable[[Any], str]
    summary: Callable[[Any], dict] = field(default=lambda out: {})


class ChainState(TypedDict):
    count: int
    trace: Annotated[list[str], operator.add]


def compile_chain(n: int, saver: Any, width: int | None = None, interrupt_last: bool = False) -> Any:
    builder = StateGraph(ChainState)
    names = ["n%d" % i for i in range(n)]
    for i, name in enumerate(names):
        entry = trace_entry(i, width)

        def step(state: ChainState, _entry: str = entry) -> dict:
            return {"count": state["count"] + 1, "trace": [_entry]}

        builder.add_node(name, step)
    builder.add_edge(START, names[0])
    for a, b in zip(names, names[1:]):
        builder.add_edge(a, b)
    builder.add_edge(names[-1], END)
    interrupt = [names[-1]] if interrupt_last else None
    return builder.compile(checkpointer=saver, interrupt_before=interrupt)


def render_chain(label: str, out: dict) -> str:
    return "%s;count=%d;trace=%s" % (label, out["count"], ",".join(out["trace"]))


def chain(n: int, saver: Any) -> Workload:
    return Workload(
        compile_chain(n, saver),
        {"count": 0, "trace": []},
        n + 10,
        lambda out: render_chain("chain", out),
        lambda out: {"count": out["count"], "trace_len": len(out["trace"])},
    )


class FanoutState(TypedDict):
    results: Annotated[list[int], operator.add]
    total: int


class WorkPayload(TypedDict):
    i: int


def fanout(n: int, saver: Any) -> Workload:
    builder = StateGraph(FanoutState)

    def split(state: FanoutState) -> dict:
        return {}

    def sends(state: FanoutState) -> list[Send]:
        return [Send("work", {"i": k}) for k in range(n)]

    def work(payload: WorkPayload) -> dict:
        return {"results": [payload["i"] * payload["i"]]}

    def reduce(state: FanoutState) -> dict:
        return {"total": sum(state["results"])}

    builder.add_node("split", split)
    builder.add_node("work", work, input_schema=WorkPayload)
    builder.add_node("reduce", reduce)
    builder.add_edge(START, "split")
    builder.add_conditional_edges("split", sends, ["work"])
    builder.add_edge("work", "reduce")
    builder.add_edge("reduce", END)

    def render(out: dict) -> str:
        results = ",".join(str(x) for x in sorted(out["results"]))
        return "fanout;total=%d;results=%s" % (out["total"], results)

    return Workload(
        builder.compile(checkpointer=saver),
        {"results": [], "total": 0},
        10,
        render,
        lambda out: {"total": out["total"], "results_len": len(out["results"])},
    )


class LoopState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]
    iterations: int


def agent_loop(n: int, saver: Any) -> Workload:
    builder = StateGraph(LoopState)

    def agent(state: LoopState) -> dict:
        i = state["iterations"]
        if i >= n:
            return {"messages": [AIMessage(id="ai-final", content="done")]}
        call = {"id": "call-%d" % i, "name": "square", "args": {"x": i}}
        return {"messages": [AIMessage(id="ai-%d" % i, content="call %d" % i, tool_calls=[call])]}

    def route(state: LoopState) -> str:
        return "tools" if state["iterations"] < n else END

    def tools(state: LoopState) -> dict:
        i = state["iterations"]
        call = state["messages"][-1].tool_calls[0]
        x = call["args"]["x"]
        answer = ToolMessage(id="tool-%d" % i, content=str(x * x), tool_call_id=call["id"])
        return {"messages": [answer], "iterations": i + 1}

    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")

    def render(out: dict) -> str:
        messages = "|".join("%s:%s:%s" % (m.type, m.id, m.content) for m in out["messages"])
        return "loop;iterations=%d;messages=%s" % (out["iterations"], messages)

    return Workload(
        builder.compile(checkpointer=saver),
        {"messages": [HumanMessage(id="human-0", content="start")], "iterations": 0},
        2 * n + 10,
        render,
        lambda out: {"iterations": out["iterations"], "messages": len(out["messages"])},
    )


def merge(left: dict, right: dict) -> dict:
    return {**left, **right}


class WideState(TypedDict):
    out: Annotated[dict[str, int], merge]
    total: int
    count: int


def wide(n: int, saver: Any) -> Workload:
    builder = StateGraph(WideState)
    names = ["w%d" % i for i in range(n)]
    for i, name in enumerate(names):

        def branch(state: WideState, _key: str = "k%d" % i, _value: int = i) -> dict:
            return {"out": {_key: _value}}

        builder.add_node(name, branch)
        builder.add_edge(START, name)

    def sink(state: WideState) -> dict:
        return {"total": sum(state["out"].values()), "count": len(state["out"])}

    builder.add_node("sink", sink)
    builder.add_edge(names, "sink")  # waiting edge: sink runs once, after every branch
    builder.add_edge("sink", END)

    def render(out: dict) -> str:
        pairs = ",".join("%s:%d" % kv for kv in sorted(out["out"].items()))
        return "wide;count=%d;total=%d;out=%s" % (out["count"], out["total"], pairs)

    return Workload(
        builder.compile(checkpointer=saver),
        {"out": {}, "total": 0, "count": 0},
        10,
        render,
        lambda out: {"count": out["count"], "total": out["total"]},
    )


BUILDERS = {"chain": chain, "fanout": fanout, "loop": agent_loop, "wide": wide}


# ---------------------------------------------------------------------------------------------
# Running one instance
# ---------------------------------------------------------------------------------------------


def run_config(thread: str | None, recursion_limit: int) -> dict:
    config: dict[str, Any] = {"recursion_limit": recursion_limit}
    if thread is not None:
        config["configurable"] = {"thread_id": thread}
    return config


def start_timing(store: Store) -> None:
    gc.collect()
    StepCounter.reset()
    store.reset_counts()


def counters(store: Store) -> dict[str, int]:
    return {
        "steps": StepCounter.steps,
        "tasks": StepCounter.tasks,
        "input_steps": StepCounter.input_steps,
        "checkpoints": store.counts.checkpoints,
        "write_batches": store.counts.write_batches,
        "write_rows": store.counts.write_rows,
    }


def measure(workload: str, n: int, store: Store, durability: str) -> dict[str, Any]:
    """Builds the workload's graph (untimed), runs it (timed) and returns what was measured."""
    saver = store.saver
    kwargs = {"durability": durability} if saver is not None else {}
    thread = "bench" if saver is not None else None
    m: dict[str, Any] = {}

    t0 = time.perf_counter()
    if workload in BUILDERS:
        w = BUILDERS[workload](n, saver)
    elif workload == "threads":
        graph = compile_chain(3, saver)
    else:  # resume
        graph = compile_chain(n, saver, width=100, interrupt_last=True)
    m["build_s"] = time.perf_counter() - t0

    if workload in BUILDERS:
        config = run_config(thread, w.recursion_limit)
        start_timing(store)
        t0 = time.perf_counter()
        out = w.graph.invoke(w.input, config, **kwargs)
        m["wall_s"] = time.perf_counter() - t0
        m.update(counters(store))
        m["canonical"] = w.render(out)
        m["result"] = w.summary(out)
    elif workload == "threads":
        outs = []
        start_timing(store)
        t0 = time.perf_counter()
        for t in range(n):
            config = run_config(str(t) if saver is not None else None, 10)
            outs.append(graph.invoke({"count": 0, "trace": []}, config, **kwargs))
        m["wall_s"] = time.perf_counter() - t0
        m.update(counters(store))
        runs = "|".join("%d:%d:%s" % (t, o["count"], ",".join(o["trace"])) for t, o in enumerate(outs))
        m["canonical"] = "threads;threads=%d;%s" % (n, runs)
        m["threads_per_s"] = n / m["wall_s"] if m["wall_s"] > 0 else None
        m["result"] = {"threads": n, "count_sum": sum(o["count"] for o in outs)}
    else:  # resume: the first run stops before the last node; only the resumed run is timed
        config = run_config(thread, n + 10)
        start_timing(store)
        t0 = time.perf_counter()
        first = graph.invoke({"count": 0, "trace": []}, config, **kwargs)
        m["first_run_s"] = time.perf_counter() - t0
        if first["count"] != n - 1:
            raise RuntimeError("resume: the first run stopped at count %s, not %d" % (first["count"], n - 1))
        m["first_run_steps"] = StepCounter.steps
        m["first_run_checkpoints"] = store.counts.checkpoints
        start_timing(store)
        t0 = time.perf_counter()
        out = graph.invoke(None, config, **kwargs)
        m["wall_s"] = time.perf_counter() - t0
        m.update(counters(store))
        m["canonical"] = render_chain("resume", out)
        m["result"] = {"count": out["count"], "trace_len": len(out["trace"])}
    return m


def rounded(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def report(args: argparse.Namespace, m: dict[str, Any], storage: dict, baseline_rss_mb: float) -> dict:
    wall, steps, tasks = m["wall_s"], m["steps"], m["tasks"]
    checksum = fnv1a64(m["canonical"])
    line: dict[str, Any] = {
        "workload": args.workload,
        "n": args.n,
        "checkpointer": args.checkpointer,
        "store": args.checkpointer,
        "durability": args.durability if args.checkpointer != "none" else None,
        "wall_s": round(wall, 9),
        "steps": steps,
        "tasks": tasks,
        "langgraph_input_steps": m["input_steps"],
        "per_step_us": rounded(wall / steps * 1e6, 3) if steps else None,
        "per_task_us": rounded(wall / tasks * 1e6, 3) if tasks else None,
        "checkpoints_written": m["checkpoints"],
        "put_writes_calls": m["write_batches"],
        "write_rows": m["write_rows"],
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "baseline_rss_mb": round(baseline_rss_mb, 1),
        "checksum": checksum,
        "checksum_ok": checksum == fnv1a64(oracle_canonical(args.workload, args.n)),
        "build_s": round(m["build_s"], 9),
        "result": m["result"],
    }
    if "threads_per_s" in m:
        line["threads_per_s"] = rounded(m["threads_per_s"], 1)
    for key in ("first_run_s", "first_run_steps", "first_run_checkpoints"):
        if key in m:
            line[key] = round(m[key], 9) if isinstance(m[key], float) else m[key]
    line.update(storage)
    line.update(
        warmup=not args.no_warmup,
        runtime="langgraph-python",
        langgraph=package_version("langgraph"),
        langgraph_checkpoint=package_version("langgraph-checkpoint"),
        langgraph_checkpoint_sqlite=package_version("langgraph-checkpoint-sqlite"),
        python=platform.python_version(),
    )
    if args.checkpointer == "postgres":
        line["langgraph_checkpoint_postgres"] = package_version("langgraph-checkpoint-postgres")
    return line


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("workload", choices=WORKLOADS)
    ap.add_argument("--n", type=int, required=True, help="size N (the number of threads T for threads)")
    ap.add_argument("--checkpointer", choices=CHECKPOINTERS, default="none")
    ap.add_argument("--durability", choices=("async", "sync", "exit"), default="async",
                    help="LangGraph durability with a checkpointer (default: LangGraph's own, async)")
    ap.add_argument("--json", action="store_true", help="accepted for symmetry; the output is always one JSON line")
    ap.add_argument("--no-warmup", action="store_true", help="skip the small untimed warm-up run")
    ap.add_argument("--db-dir", default=None, help="parent folder of the sqlite file (default: the temp folder)")
    ap.add_argument("--keep-db", action="store_true", help="keep the sqlite file; its path is printed")
    ap.add_argument("--postgres-url", default=os.environ.get(POSTGRES_URL_VAR),
                    help="server for --checkpointer postgres (default: $%s)" % POSTGRES_URL_VAR)
    ap.add_argument("--concurrency", type=int, default=64,
                    help="threads-concurrent: runs in flight at once (default 64)")
    ap.add_argument("--print-canonical", action="store_true", help="print the canonical string to stderr")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be at least 1")
    if args.concurrency < 1:
        ap.error("--concurrency must be at least 1")
    if args.workload == "resume" and args.checkpointer == "none":
        ap.error("resume needs a checkpointer (memory, sqlite or postgres)")
    if args.workload == "resume" and args.n < 2:
        ap.error("resume needs --n 2 or more")
    if args.checkpointer == "postgres":
        if not args.postgres_url:
            ap.error("--checkpointer postgres needs --postgres-url or $%s" % POSTGRES_URL_VAR)
        if package_version("langgraph-checkpoint-postgres") is None:
            ap.error("--checkpointer postgres needs langgraph-checkpoint-postgres and psycopg (requirements.txt)")
    return args


def measure_concurrent(args: argparse.Namespace, n: int, label: str) -> tuple[dict[str, Any], dict]:
    """`threads-concurrent`: the asyncio savers, see threads_concurrent.py."""
    import threads_concurrent  # the module next to this file

    def reset() -> None:
        gc.collect()
        StepCounter.reset()

    m, storage = threads_concurrent.measure(
        n, args.concurrency, args.checkpointer, label, args.durability, args.db_dir,
        args.postgres_url, compile_chain, reset)
    m.update(steps=StepCounter.steps, tasks=StepCounter.tasks, input_steps=StepCounter.input_steps,
             write_batches=0, write_rows=0)
    return m, storage


def main() -> int:
    args = parse_args()
    baseline_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    if args.workload == "threads-concurrent":
        if not args.no_warmup:
            measure_concurrent(args, min(args.n, 3), "warmup")
        m, storage = measure_concurrent(args, args.n, "bench")
        line = report(args, m, storage, baseline_rss_mb)
        line["concurrency"] = args.concurrency
        line["p50_run_ms"] = rounded(m["p50_run_ms"], 3)
        line["p99_run_ms"] = rounded(m["p99_run_ms"], 3)
        line["saver"] = {"sqlite": "AsyncSqliteSaver", "postgres": "AsyncPostgresSaver",
                         "memory": "InMemorySaver"}.get(args.checkpointer)
        if args.print_canonical:
            print(m["canonical"], file=sys.stderr)
        print(json.dumps(line))
        return 0 if line["checksum_ok"] else 1
    if not args.no_warmup:
        # Same workload at a tiny size on its own throwaway store, so that first-call costs of
        # the Python stack (lazy imports, caches) are not charged to the measured run.
        size = 2 if args.workload == "resume" else min(args.n, 3)
        warm = Store(args.checkpointer, "warmup", args.db_dir, args.postgres_url)
        measure(args.workload, size, warm, args.durability)
        warm.close()
    store = Store(args.checkpointer, "bench", args.db_dir, args.postgres_url)
    m = measure(args.workload, args.n, store, args.durability)
    storage = store.close(keep=args.keep_db)
    line = report(args, m, storage, baseline_rss_mb)
    if args.print_canonical:
        print(m["canonical"], file=sys.stderr)
    print(json.dumps(line))
    if not line["checksum_ok"]:
        print("checksum %s differs from the oracle's" % line["checksum"], file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
