"""`threads-concurrent` (WORKLOADS.md §2.7) on LangGraph: T runs of the 3-node chain on one
store, at most C in flight, through LangGraph's asyncio savers: `AsyncSqliteSaver` (one
aiosqlite connection, WAL, synchronous=FULL as Python's sqlite3 default) or
`AsyncPostgresSaver` (a psycopg connection pool of C connections in a fresh schema, dropped
afterwards). `InMemorySaver` for `memory`. Imported by `langgraph_bench.py`."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
import uuid
from typing import Any, Callable


async def _open(kind: str, label: str, db_dir: str | None, pg_url: str | None, c: int):
    """The saver and a coroutine function that closes it and returns storage statistics."""
    if kind == "none":
        return None, _nothing
    if kind == "memory":
        from langgraph.checkpoint.memory import InMemorySaver

        return InMemorySaver(), _nothing
    if kind == "sqlite":
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        folder = tempfile.mkdtemp(prefix="lgbench-", dir=db_dir)
        path = os.path.join(folder, label + ".sqlite")
        conn = await aiosqlite.connect(path)
        saver = AsyncSqliteSaver(conn)
        await saver.setup()  # tables and journal_mode=WAL, outside the timed region

        async def close() -> dict[str, Any]:
            await conn.close()
            files = (path, path + "-wal", path + "-shm")
            size = sum(os.path.getsize(f) for f in files if os.path.exists(f))
            shutil.rmtree(folder, ignore_errors=True)
            return {"sqlite_bytes": size}

        return saver, close
    if kind == "postgres":
        import psycopg
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        schema = "lgbench_" + uuid.uuid4().hex
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute('CREATE SCHEMA "%s"' % schema)
        pool = AsyncConnectionPool(
            pg_url,
            min_size=c,
            max_size=c,
            open=False,
            kwargs={
                "autocommit": True,
                "prepare_threshold": 0,
                "row_factory": dict_row,
                "options": "-c search_path=%s" % schema,
            },
        )
        await pool.open(wait=True)
        saver = AsyncPostgresSaver(pool)
        await saver.setup()

        async def close() -> dict[str, Any]:
            await pool.close()
            with psycopg.connect(pg_url, autocommit=True) as admin:
                row = admin.execute(
                    "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                    "JOIN pg_namespace s ON s.oid = c.relnamespace "
                    "WHERE s.nspname = %s AND c.relkind IN ('r', 'm')",
                    (schema,),
                ).fetchone()
                admin.execute('DROP SCHEMA "%s" CASCADE' % schema)
            return {"postgres_bytes": int(row[0])}

        return saver, close
    raise ValueError(kind)


async def _nothing() -> dict[str, Any]:
    return {}


def _count(saver: Any, counts: dict[str, int]) -> None:
    """Counts the checkpoint records the saver is asked to store (its async entry point)."""
    aput = saver.aput

    async def counted(config, checkpoint, metadata, new_versions):  # type: ignore[no-untyped-def]
        counts["checkpoints"] += 1
        return await aput(config, checkpoint, metadata, new_versions)

    saver.aput = counted


def _quantile(samples: list[float], q: float) -> float | None:
    """Nearest-rank quantile, as the Rust harness computes it."""
    if not samples:
        return None
    s = sorted(samples)
    rank = min(max(1, -(-int(q * len(s) * 1_000_000) // 1_000_000)), len(s))
    return s[rank - 1]


async def _measure(
    n: int,
    c: int,
    kind: str,
    label: str,
    durability: str,
    db_dir: str | None,
    pg_url: str | None,
    compile_chain: Callable[..., Any],
    reset: Callable[[], None],
) -> tuple[dict[str, Any], dict[str, Any]]:
    saver, close = await _open(kind, label, db_dir, pg_url, c)
    counts = {"checkpoints": 0}
    if saver is not None:
        _count(saver, counts)
    t0 = time.perf_counter()
    graph = compile_chain(3, saver)
    build_s = time.perf_counter() - t0
    kwargs = {"durability": durability} if saver is not None else {}
    gate = asyncio.Semaphore(c)
    latencies: list[float] = []

    async def one(t: int) -> dict:
        async with gate:
            config: dict[str, Any] = {"recursion_limit": 10}
            if saver is not None:
                config["configurable"] = {"thread_id": str(t)}
            start = time.perf_counter()
            out = await graph.ainvoke({"count": 0, "trace": []}, config, **kwargs)
            latencies.append(time.perf_counter() - start)
            return out

    reset()
    t0 = time.perf_counter()
    outs = await asyncio.gather(*(one(t) for t in range(n)))
    wall = time.perf_counter() - t0
    storage = await close()
    runs = "|".join("%d:%d:%s" % (t, o["count"], ",".join(o["trace"])) for t, o in enumerate(outs))
    m = {
        "build_s": build_s,
        "wall_s": wall,
        "checkpoints": counts["checkpoints"],
        "canonical": "threads-concurrent;threads=%d;%s" % (n, runs),
        "threads_per_s": n / wall if wall > 0 else None,
        "p50_run_ms": _quantile(latencies, 0.5) * 1e3,
        "p99_run_ms": _quantile(latencies, 0.99) * 1e3,
        "result": {"threads": n, "count_sum": sum(o["count"] for o in outs)},
    }
    return m, storage


def measure(n: int, c: int, kind: str, label: str, durability: str, db_dir: str | None,
            pg_url: str | None, compile_chain: Callable[..., Any],
            reset: Callable[[], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs the workload once (timed: from the first start to the last end)."""
    return asyncio.run(_measure(n, c, kind, label, durability, db_dir, pg_url, compile_chain, reset))
