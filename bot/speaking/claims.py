"""The once-only slot of a spontaneous comment, and the daily budget.

An Action row with a unique `dedupe_key` ("{repo}#{number}:failure_comment") is inserted as
`pending` BEFORE anything is posted, in a transaction that first takes a per-repository
write lock (a no-op UPDATE of the repository row: a row lock on PostgreSQL, the write lock on
SQLite), so the budget is counted and the slot claimed atomically. A second worker, a
redelivery or a concurrent run finds the row (or hits the unique index) and does nothing; a
pending claim older than STALE_PENDING was left by a crash and is taken over.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from bot.speaking.records import record_skip
from bot.speaking.situation import Situation
from bot.store.models import Action, Repository
from bot.store.types import utcnow

log = logging.getLogger(__name__)

BUDGET_KINDS = ("failure_comment", "rule_summary")
LIVE_STATUSES = ("posted", "dry_run", "pending")
STALE_PENDING = timedelta(minutes=10)  # a pending claim older than this was left by a crash


def day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


async def claim(
    ctx: Any,
    situation: Situation,
    *,
    kind: str,
    dedupe_key: str,
    budget: int | None,
    language: str | None = None,
    details: dict[str, Any] | None = None,
    delivery_id: str | None = None,
) -> tuple[str, int | None]:
    """Take the once-only slot: ("claimed", action id), ("owned", None) or ("budget", None)."""
    now = utcnow()
    async with ctx.sessionmaker() as session:
        try:
            # Per-repository lock first (see the module docstring), then check and insert.
            await session.execute(
                update(Repository)
                .where(Repository.id == situation.repo_id)
                .values(comments_paused=Repository.comments_paused)
            )
            existing = await session.scalar(select(Action).where(Action.dedupe_key == dedupe_key))
            if existing is not None:
                if existing.status == "pending" and existing.updated_at < now - STALE_PENDING:
                    existing.updated_at = now  # left behind by a crashed worker: take it over
                    existing_id = existing.id
                    await session.commit()
                    return "claimed", existing_id
                await session.rollback()
                return "owned", None
            if budget is not None:
                used = await session.scalar(
                    select(func.count(Action.id)).where(
                        Action.repo == situation.repo,
                        Action.kind.in_(BUDGET_KINDS),
                        Action.status.in_(LIVE_STATUSES),
                        Action.created_at >= day_start(now),
                    )
                )
                if (used or 0) >= budget:
                    await session.rollback()
                    return "budget", None
            action = Action(
                repo=situation.repo, number=situation.number, kind=kind, status="pending",
                dedupe_key=dedupe_key, language=language, details=details or {},
                delivery_id=delivery_id, created_at=now, updated_at=now,
            )
            session.add(action)
            await session.commit()
            return "claimed", action.id
        except IntegrityError:
            await session.rollback()
            return "owned", None


async def claim_within_budget(
    ctx: Any, sit: Situation, config: Any, *, kind: str, dedupe_key: str, **fields: Any
) -> tuple[str, int | None]:
    """Claim a once-only comment under the repository's daily budget: ("claimed", id), or
    ("owned", None) when another run holds it, or ("skipped:budget", None) with the skip
    recorded."""
    state, action_id = await claim(
        ctx, sit, kind=kind, dedupe_key=dedupe_key, budget=config.daily_budget, **fields
    )
    if state == "budget":
        await record_skip(ctx, sit.repo, sit.number, kind, "budget",
                          f"daily comment budget of {config.daily_budget} reached")
        return "skipped:budget", None
    if state == "owned" or action_id is None:
        return "owned", None
    return "claimed", action_id


async def finish(ctx: Any, action_id: int, **values: Any) -> None:
    async with ctx.sessionmaker() as session:
        values.setdefault("updated_at", utcnow())
        await session.execute(update(Action).where(Action.id == action_id).values(**values))
        await session.commit()


async def release(ctx: Any, action_id: int) -> None:
    async with ctx.sessionmaker() as session:
        row = await session.get(Action, action_id)
        if row is not None:
            await session.delete(row)
            await session.commit()
