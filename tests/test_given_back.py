"""Deliveries a stopped worker gave back (left `processing`, claimed by no one): counted in
/metrics' worker outcomes and listed by `rltracker deliveries` (sched61). They were in
neither, so an operator could not see them."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from gidgethub.routing import Router
from sqlalchemy import select

from bot.context import AppContext
from bot.metrics import Metrics
from bot.store.models import Delivery
from bot.webhooks.worker import Worker
from tests.test_failed_deliveries import _cli
from tests.test_worker import store


async def _given_back(ctx: AppContext) -> Worker:
    """A worker cut short (serve's second SIGTERM: `abort`) while its handler runs."""
    entered, never = asyncio.Event(), asyncio.Event()
    router = Router()

    @router.register("test")
    async def handle(event: Any, ctx: Any) -> None:
        entered.set()
        await never.wait()

    await store(ctx, ("test", '{"n": "1"}'))
    worker = Worker(ctx, router)
    worker.start()
    await entered.wait()
    worker.abort()
    await worker.stop()
    async with ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery))
    assert row is not None and row.status == "processing" and row.claimed_by is None
    return worker


async def test_a_delivery_given_back_is_counted_in_the_worker_outcomes(ctx: AppContext) -> None:
    worker = await _given_back(ctx)
    counts = dict(worker.counts)
    assert counts.get("given_back") == 1, counts
    text = Metrics().render(worker=counts)
    assert 'rltracker_worker_outcomes_total{outcome="given_back"} 1' in text


async def test_a_delivery_left_processing_is_listed(
        ctx: AppContext, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    await _given_back(ctx)
    monkeypatch.setenv("DATABASE_URL", ctx.settings.database_url)
    code, out, _ = await _cli(capsys, "deliveries", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["failed"] == 0 and listed["waiting"] == 0
    assert listed.get("processing") == 1, listed
    [row] = listed["processing_deliveries"]
    assert row["claimed_by"] is None and row["attempts"] == 1
    code, out, _ = await _cli(capsys, "deliveries")
    assert "deliveries left processing: 1" in out, out
    assert "claimed by no one" in out, out
