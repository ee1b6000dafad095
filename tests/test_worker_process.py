"""`rltracker serve --workers N`: the inbox worker in a process of its own.

The process is spawned as serve spawns it (bot.webhooks.worker.worker_process_main), works the
stored deliveries with the analyzers loaded there, and stops cleanly on SIGTERM; what it
stores is what the web process's own worker would have stored.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.config import Settings
from bot.context import AppContext
from bot.store.models import Analysis, Delivery, Thread
from bot.store.threads import load_thread_record
from bot.webhooks.worker import worker_process_main
from tests.test_worker import store

pytestmark = pytest.mark.slow


async def _statuses(ctx: AppContext) -> list[str]:
    async with ctx.sessionmaker() as s:
        return list(await s.scalars(select(Delivery.status).order_by(Delivery.id)))


async def test_worker_process_stores_what_the_analyzers_give_in_process(
    ctx: AppContext, settings: Settings, shared_dir: Path
) -> None:
    from analyzers.analyze import analyze_thread

    base = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json")
                      .read_text(encoding="utf-8"))
    bodies = ["During GRPO training the entropy collapses to zero after 200 steps.",
              "Could you add the loss of https://arxiv.org/abs/2506.13585 (CISPO)?"]
    payloads = []
    for k, body in enumerate(bodies):
        p = json.loads(json.dumps(base))
        p["issue"].update(number=900 + k, id=10**9 + k, title=f"Report {k}", body=body)
        payloads.append(("issues", json.dumps(p)))
    await store(ctx, *payloads)

    proc = multiprocessing.get_context("spawn").Process(
        target=worker_process_main, args=(settings, None, "ERROR"))
    proc.start()
    try:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 300  # start-up loads the analyzers; a shared machine is slow
        # Another process's work: nothing in this one can signal it, so the table is polled.
        while await _statuses(ctx) != ["done", "done"] and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(0.2)
    finally:
        proc.terminate()  # SIGTERM: finish the row in hand, then exit
        await loop.run_in_executor(None, proc.join, 60)
    assert await _statuses(ctx) == ["done", "done"]
    assert proc.exitcode == 0

    async with ctx.sessionmaker() as s:
        stored = {t.number: a.result for t, a in (await s.execute(
            select(Thread, Analysis).join(Analysis, Analysis.thread_id == Thread.id))).all()}
        records = {n: await load_thread_record(s, base["repository"]["full_name"], n)
                   for n in (900, 901)}
    assert set(stored) == {900, 901}
    for number, record in records.items():
        assert record is not None
        assert stored[number] == json.loads(json.dumps(analyze_thread(record)))
    assert stored[900]["failure"]["is_failure_report"]
    assert any(p["arxiv_id"] == "2506.13585" for p in stored[901]["papers"])


async def test_serve_stops_when_its_worker_process_dies(settings: Settings, caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    """`serve --workers 1` whose worker process died (OOM-killed, a crash) went on answering
    webhooks 202 and /healthz "ok" with nothing working the inbox: deliveries piled up as
    pending for good and nothing said why. serve now stops (exit status 1, an error line
    naming the process), so a supervisor restarts it and nothing stored is lost."""
    from bot.server import serve
    from tests.test_crash_recovery import free_port

    before = set(multiprocessing.active_children())
    ready = asyncio.Event()
    task = asyncio.create_task(serve(settings, "127.0.0.1", free_port(), worker_processes=1,
                                     scheduler=False, backfill=False, ready=ready))
    await asyncio.wait_for(ready.wait(), 120)  # hang guards, not timings
    [child] = [p for p in multiprocessing.active_children() if p not in before]
    child.kill()
    status = await asyncio.wait_for(task, 60)
    assert status == 1
    assert f"worker process {child.name} exited" in caplog.text


async def test_serve_stops_when_its_inbox_worker_stops(sqlite_db_url: str,
                                                      caplog: pytest.LogCaptureFixture) -> None:
    """The inbox worker inside the web process stopped for good when its start failed (its
    first write, taking back rows a crash left `processing`, found SQLite's write lock held
    by another process, e.g. a long `rltracker papers import`, past the busy timeout): serve
    went on answering webhooks 202 and /healthz "ok" with nothing working the inbox. serve
    now stops with exit status 1 and a line saying why, as for a worker process."""
    import sqlite3

    from bot.config import sqlite_path
    from bot.server import serve
    from tests.test_crash_recovery import free_port

    settings = Settings.from_env({}, database_url=sqlite_db_url, webhook_secret="s", dry_run=True)
    path = sqlite_path(sqlite_db_url)
    assert path is not None
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process writing, for longer than SQLite waits
    try:
        ready = asyncio.Event()
        task = asyncio.create_task(serve(settings, "127.0.0.1", free_port(), scheduler=False,
                                         backfill=False, ready=ready))
        await asyncio.wait_for(ready.wait(), 120)  # hang guards, not timings: SQLite's busy
        status = await asyncio.wait_for(task, 90)  # timeout (30 s) decides when it fails
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert status == 1
    assert "the inbox worker stopped" in caplog.text


async def test_a_worker_process_whose_worker_stopped_exits(sqlite_db_url: str) -> None:
    """As in the web process: the worker's first write finds SQLite's write lock held by
    another process past the busy timeout, and its task ends on the error. The process
    ends, non-zero, so that serve sees it (it stayed alive, working nothing)."""
    import sqlite3

    from bot.config import sqlite_path

    settings = Settings.from_env({}, database_url=sqlite_db_url, dry_run=True)
    path = sqlite_path(sqlite_db_url)
    assert path is not None
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    proc = multiprocessing.get_context("spawn").Process(
        target=worker_process_main, args=(settings, None, "CRITICAL"))
    proc.start()
    loop = asyncio.get_running_loop()
    try:
        # A hang guard: SQLite's busy timeout (30 s) decides when the worker's start fails.
        await loop.run_in_executor(None, proc.join, 75)
        ended = proc.exitcode
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        if proc.is_alive():
            proc.terminate()
            await loop.run_in_executor(None, proc.join, 60)
    assert ended not in (None, 0)
