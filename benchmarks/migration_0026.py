"""Migration 0026 (review_transitions and its backfill) on a large database (ops77).

Builds a database at 0025 with N threads (every other one an analysed proposal), then runs
`rltracker migrate` to head in a child process and prints: the upgrade's wall time, the child's
peak resident memory, the rows backfilled and, on PostgreSQL, how a live app's write to
`threads` fared meanwhile (a one-row UPDATE tried over and over from another session: the
longest one, and the strongest lock the migration held on `threads`).

    PYTHONPATH=$PWD python benchmarks/migration_0026.py --threads 200000 \
        [--postgres postgresql+asyncpg://USER:PW@HOST:PORT/postgres]

Figures, not assertions: the tests check the locks and the backfill without timing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

# locks on `threads` that stop a live app's INSERT/UPDATE/DELETE (they conflict with ROW EXCLUSIVE)
BLOCKING_MODES = ("ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock")


def fill_sql(n: int, sqlite: bool) -> list[str]:
    """Statements filling threads and analyses with n rows each, all inside the database."""
    if sqlite:
        numbers = (f"WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) "
                   "SELECT i FROM s")
        now = "CURRENT_TIMESTAMP"
        proposal = "(i % 2 = 0)"
    else:
        numbers = f"SELECT i FROM generate_series(1, {n}) AS s(i)"
        now = "now()"
        proposal = "(i % 2 = 0)"
    return [
        "INSERT INTO threads (id, repo, number, kind, title, state, labels, assignees, complete, "
        f"muted, stored_at) SELECT i, 'o/r' || (i % 1000), i, 'issue', 'a title', 'open', '[]', "
        f"'[]', true, false, {now} FROM ({numbers}) AS q",
        "INSERT INTO analyses (id, thread_id, analyzer_version, result, is_failure_report, "
        "is_proposal, review_state, methods, arxiv_ids, analyzed_at, review_state_changed_at) "
        f"SELECT i, i, 'v1', '{{}}', false, {proposal}, 'open_no_reply', '[]', '[]', {now}, "
        f"NULL FROM ({numbers}) AS q",
    ]


async def execute(url: str, *statements: str) -> list[Any]:
    from sqlalchemy import text

    from bot.store.db import make_engine

    engine = make_engine(url)
    rows: list[Any] = []
    try:
        async with engine.begin() as conn:
            for statement in statements:
                result = await conn.execute(text(statement))
                rows = list(result) if result.returns_rows else []
    finally:
        await engine.dispose()
    return rows


def upgrade_in_child(url: str, revision: str) -> subprocess.Popen[bytes]:
    code = ("import sys; from bot.store import migrate; migrate.upgrade(sys.argv[1], sys.argv[2])")
    return subprocess.Popen([sys.executable, "-c", code, url, revision], env=os.environ.copy())


async def probe_threads_writes(admin_dsn: str, child: subprocess.Popen[bytes]) -> tuple[float, set[str]]:
    """While the child migrates: the longest one-row UPDATE of `threads`, and the lock modes
    other sessions held on `threads`."""
    import asyncpg

    writer = await asyncpg.connect(admin_dsn)
    watcher = await asyncpg.connect(admin_dsn)
    longest, modes = 0.0, set()
    try:
        while child.poll() is None:
            for row in await watcher.fetch(
                    "SELECT mode FROM pg_locks WHERE relation = 'threads'::regclass "
                    "AND pid <> pg_backend_pid() AND granted"):
                modes.add(row["mode"])
            started = time.monotonic()
            await writer.execute("UPDATE threads SET muted = muted WHERE id = 1")
            longest = max(longest, time.monotonic() - started)
    finally:
        await writer.close()
        await watcher.close()
    return longest, modes


async def run(url: str, n: int, admin_dsn: str | None) -> None:
    from bot.store import migrate

    started = time.monotonic()
    await asyncio.to_thread(migrate.upgrade, url, "0025")
    await execute(url, *fill_sql(n, url.startswith("sqlite")))
    built = time.monotonic() - started
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.monotonic()
    child = upgrade_in_child(url, "head")
    longest, modes = (await probe_threads_writes(admin_dsn, child)) if admin_dsn else (0.0, set())
    child.wait()
    took = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    backfilled = (await execute(url, "SELECT count(*) FROM review_transitions"))[0][0]
    kind = "sqlite" if url.startswith("sqlite") else "postgresql"
    print(f"{kind}: {n} threads ({n // 2} proposals) built in {built:.1f} s; upgrade 0025 -> head "
          f"{took:.2f} s (exit {child.returncode}), child peak RSS {max(peak, before) / 1024:.0f} MiB, "
          f"{backfilled} rows backfilled")
    if admin_dsn:
        blocking = sorted(m for m in modes if m in BLOCKING_MODES)
        print(f"  a live UPDATE of threads meanwhile: longest {longest * 1000:.0f} ms; locks on "
              f"threads seen: {sorted(modes) or 'none'}; blocking writes: {blocking or 'none'}")


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as folder:
        await run(f"sqlite+aiosqlite:///{folder}/m.db", args.threads, None)
    if args.postgres:
        import asyncpg

        name = f"rlt_m26_{uuid.uuid4().hex[:8]}"
        admin = args.postgres.replace("postgresql+asyncpg://", "postgresql://")
        conn = await asyncpg.connect(admin)
        await conn.execute(f'CREATE DATABASE "{name}"')
        await conn.close()
        try:
            await run(args.postgres.rpartition("/")[0] + "/" + name, args.threads,
                      admin.rpartition("/")[0] + "/" + name)
        finally:
            conn = await asyncpg.connect(admin)
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=200_000)
    parser.add_argument("--postgres", default=os.environ.get("TEST_DATABASE_URLS", "").split(",")[0] or None)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
