"""/metrics under `rltracker serve --workers N`: the numbers an operator relies on, whatever
the worker layout, on SQLite and PostgreSQL.

The inbox worker's outcomes (`rltracker_worker_outcomes_total`) were counted in the process
that handled the delivery; with the worker in processes of their own, the web process that
answers /metrics had none, and the family was missing: an alert on failed deliveries never
fired. The worker processes now count in memory shared with serve, which sums them; what the
app posted (or recorded instead) is read from the database (`rltracker_actions`).
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import select

from bot.config import Settings
from bot.context import AppContext
from bot.store.models import Action, Delivery
from tests.test_crash_recovery import free_port
from tests.test_worker import store

pytestmark = pytest.mark.slow

HANG_GUARD = 300  # seconds: a worker process loads the analyzers; only so a broken test ends


async def _statuses(ctx: AppContext) -> list[str]:
    async with ctx.sessionmaker() as s:
        return list(await s.scalars(select(Delivery.status).order_by(Delivery.id)))


async def test_metrics_count_what_worker_processes_handled(
        ctx: AppContext, settings: Settings, shared_dir: Path) -> None:
    from bot.server import serve

    opened = (shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json").read_text("utf-8")
    await store(ctx, ("issues", opened), ("issues", json.dumps({"action": "opened"})))
    async with ctx.sessionmaker() as s:
        s.add(Action(repo="volcengine/verl", number=7, kind="failure_comment", status="posted",
                     body="x", details={}))
        await s.commit()
    before = set(multiprocessing.active_children())
    port = free_port()
    ready = asyncio.Event()
    task = asyncio.create_task(serve(settings, "127.0.0.1", port, worker_processes=1,
                                     scheduler=False, backfill=False, ready=ready))
    loop = asyncio.get_running_loop()
    text = ""
    try:
        await asyncio.wait_for(ready.wait(), 120)
        deadline = loop.time() + HANG_GUARD
        async with aiohttp.ClientSession() as http:
            # Another process's work: nothing here can signal it, so /metrics is polled.
            while loop.time() < deadline:
                async with http.get(f"http://127.0.0.1:{port}/metrics") as response:
                    text = await response.text()
                # The counters move when the worker process has handled a row, the stored
                # status when its transaction commits (and a scrape that missed its bound on a
                # loaded machine leaves the counts out): both are waited for.
                if ('rltracker_worker_outcomes_total{outcome="failed"} 1' in text
                        and 'rltracker_worker_outcomes_total{outcome="done"} 1' in text
                        and 'rltracker_inbox_deliveries{status="pending"} 0' in text):
                    break
                await asyncio.sleep(0.2)
    finally:
        for child in set(multiprocessing.active_children()) - before:
            child.kill()  # serve then stops (its worker process died)
        await asyncio.wait_for(task, 60)
    assert sorted(await _statuses(ctx)) == ["done", "failed"]
    assert 'rltracker_worker_outcomes_total{outcome="done"} 1' in text
    assert 'rltracker_worker_outcomes_total{outcome="failed"} 1' in text
    assert 'rltracker_inbox_deliveries{status="pending"} 0' in text
    assert 'rltracker_actions{kind="failure_comment",status="posted"} 1' in text
