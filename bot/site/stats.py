"""Counts of the inbox and the stored threads: `GET /api/stats` and `rltracker stats`."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine


async def _rows(bind: AsyncEngine | AsyncConnection, statement: Any) -> list[Any]:
    """`statement`'s rows, on the connection given (/metrics: its lock wait bounded), or on
    one of the engine's."""
    if isinstance(bind, AsyncConnection):
        return list((await bind.execute(statement)).all())
    async with bind.connect() as conn:
        return list((await conn.execute(statement)).all())


async def delivery_counts(engine: AsyncEngine | AsyncConnection) -> dict[str, int]:
    """Deliveries by status: pending, processing, done, failed (all four, zero when absent)."""
    from bot.store.models import Delivery

    t = Delivery.__table__
    rows = await _rows(engine, select(t.c.status, func.count()).group_by(t.c.status))
    counts = {"pending": 0, "processing": 0, "done": 0, "failed": 0}
    for status, n in rows:
        counts[str(status)] = int(n)
    return counts


async def action_counts(engine: AsyncEngine | AsyncConnection) -> dict[tuple[str, str], int]:
    """What the app stored it did or would do, by (kind, status): comments posted, dry runs,
    failures, quiet decisions. Both are the app's own words (a handful each)."""
    from bot.store.models import Action

    t = Action.__table__
    rows = await _rows(engine, select(t.c.kind, t.c.status, func.count())
                       .group_by(t.c.kind, t.c.status))
    return {(str(kind), str(status)): int(n) for kind, status, n in rows}


async def collect_stats(engine: AsyncEngine) -> dict[str, Any]:
    """The contract shape: deliveries received/done/failed/pending, threads, comments.

    "pending" counts everything not finished yet, including rows being processed right now.
    """
    from bot.store.models import Comment, Thread

    by_status = await delivery_counts(engine)
    async with engine.connect() as conn:
        threads = await conn.scalar(select(func.count()).select_from(Thread.__table__))
        comments = await conn.scalar(select(func.count()).select_from(Comment.__table__))
    return {
        "deliveries": {
            "received": sum(by_status.values()),
            "done": by_status["done"],
            "failed": by_status["failed"],
            "pending": by_status["pending"] + by_status["processing"],
        },
        "threads": int(threads or 0),
        "comments": int(comments or 0),
    }


def stats_command(args: Any) -> int:
    from bot.config import Settings
    from bot.store.db import make_engine

    async def run() -> dict[str, Any]:
        engine = make_engine(Settings.from_env().database_url)
        try:
            return await collect_stats(engine)
        finally:
            await engine.dispose()

    stats = asyncio.run(run())
    if getattr(args, "json", False):
        print(json.dumps(stats, sort_keys=True))
    else:
        d = stats["deliveries"]
        print(
            f"deliveries: {d['received']} received, {d['done']} done, "
            f"{d['failed']} failed, {d['pending']} pending"
        )
        print(f"threads: {stats['threads']}")
        print(f"comments: {stats['comments']}")
    return 0
