"""People's verdicts on threads (the `verdicts` table): `/rltracker kind <failure>` and
`/rltracker not-a-failure`. One row per thread; a later verdict replaces the earlier one."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.db import dialect_insert
from bot.store.models import Analysis, Thread, Verdict
from bot.store.types import utcnow

COLUMNS = ("is_failure_report", "category", "login", "role", "comment_id", "analyzer_category",
           "analyzer_is_failure_report", "analyzer_version", "given_at")


async def set_verdict(
    session: AsyncSession, thread: Thread, *, is_failure_report: bool, category: str | None,
    login: str, role: str, comment_id: int | None, given_at: datetime | None = None,
) -> None:
    """Store the verdict on `thread` (replacing any earlier one), with the analyzer's finding
    as it stands now. One statement (an upsert): two verdicts at once leave one row."""
    analysis = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    values: dict[str, Any] = {
        "thread_id": thread.id,
        "is_failure_report": is_failure_report,
        "category": category if is_failure_report else None,
        "login": login[:255],
        "role": role,
        "comment_id": comment_id,
        "analyzer_category": analysis.failure_category if analysis is not None else None,
        "analyzer_is_failure_report": analysis.is_failure_report if analysis is not None else None,
        "analyzer_version": analysis.analyzer_version if analysis is not None else None,
        "given_at": given_at or utcnow(),
    }
    bind = session.get_bind()
    insert = dialect_insert(bind.dialect.name)(Verdict.__table__).values(**values)
    await session.execute(insert.on_conflict_do_update(
        index_elements=["thread_id"], set_={c: insert.excluded[c] for c in COLUMNS}))


async def thread_verdict(session: AsyncSession, thread_id: int) -> Verdict | None:
    return await session.scalar(select(Verdict).where(Verdict.thread_id == thread_id))


async def all_verdicts(session: AsyncSession) -> list[tuple[Verdict, Thread]]:
    """Every verdict with its thread, in the order the threads were stored."""
    rows = await session.execute(
        select(Verdict, Thread).join(Thread, Thread.id == Verdict.thread_id)
        .order_by(Thread.repo, Thread.number))
    return [(v, t) for v, t in rows.all()]


def as_failure(verdict: Verdict) -> dict[str, Any]:
    """The verdict in the shape of an analysis' `failure` part, for what the app says: a
    person named the kind, so there is one, no runner-up and no model confidence."""
    if not verdict.is_failure_report:
        return {"is_failure_report": False, "category": None, "categories": [], "confidence": 0.0,
                "evidence": [], "set_by": verdict.role}
    return {"is_failure_report": True, "category": verdict.category,
            "categories": [verdict.category], "confidence": 1.0, "evidence": [],
            "set_by": verdict.role}


async def verdict_of(session: AsyncSession, repo: str, number: int) -> Verdict | None:
    """The verdict on a thread named by repository and number."""
    from sqlalchemy import func

    return await session.scalar(
        select(Verdict).join(Thread, Thread.id == Verdict.thread_id)
        .where(func.lower(Thread.repo) == repo.lower(), Thread.number == number))
