"""Job runs (the JobRun table): one row per run of a background job, started then updated.

A run is "running" from its start to its end, and alive while its process renews the row's
`heartbeat_at` (`keep_alive`, every HEARTBEAT_EVERY seconds). A "running" row whose heartbeat
(or, without one, its start) is older than RUN_LEASE was left by a process that died (a
crash, a killed replica): it reads as INTERRUPTED wherever a run's state is shown or counted
(`shown_outcome`, `alive`), without waiting for a process with the scheduler to start again
and record it cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, update

from bot.store.models import JobRun
from bot.store.types import utcnow

log = logging.getLogger(__name__)

FIRST_BACKFILL = "first_backfill"  # `rltracker serve`'s first sync of the tracked repositories
HEARTBEAT_EVERY = 60.0  # seconds between two renewals of a live run's heartbeat
RUN_LEASE = timedelta(minutes=10)  # a running row not renewed for this long was left by a dead process
INTERRUPTED = "interrupted"  # how such a row reads


async def record_job_run(ctx: Any, name: str, run_id: int | None, **values: Any) -> int:
    """Create the run's row (run_id None) or update it; returns its id. A write that leaves
    it running renews its heartbeat."""
    async with ctx.sessionmaker() as session:
        if run_id is None:
            row = JobRun(name=name, **values)
            session.add(row)
        else:
            row = await session.get(JobRun, run_id)
            for key, value in values.items():
                setattr(row, key, value)
        if (row.outcome or "running") == "running" and "heartbeat_at" not in values:
            row.heartbeat_at = utcnow()
        await session.commit()
        return int(row.id)


def _last_sign(row: JobRun) -> datetime | None:
    return row.heartbeat_at or row.started_at


def shown_outcome(row: JobRun, now: datetime | None = None) -> str:
    """The run's outcome as it stands: INTERRUPTED for a running row whose lease ran out."""
    if row.outcome != "running":
        return row.outcome
    sign = _last_sign(row)
    if sign is not None and sign < (now or utcnow()) - RUN_LEASE:
        return INTERRUPTED
    return "running"


def alive(now: datetime | None = None) -> ColumnElement[bool]:
    """SQL: the run is not a running row whose lease ran out (finished rows are alive here:
    the condition only takes dead running rows out)."""
    cutoff = (now or utcnow()) - RUN_LEASE
    return or_(JobRun.outcome != "running",
               func.coalesce(JobRun.heartbeat_at, JobRun.started_at) >= cutoff)


def dead(now: datetime | None = None) -> ColumnElement[bool]:
    """SQL: a running row whose lease ran out."""
    cutoff = (now or utcnow()) - RUN_LEASE
    return and_(JobRun.outcome == "running",
                func.coalesce(JobRun.heartbeat_at, JobRun.started_at) < cutoff)


FINISHES = ("ok", "partial", "failed", "cancelled")  # outcomes of a run that ended


async def last_runs(session: Any, now: datetime | None = None
                    ) -> dict[str, tuple[str, datetime, datetime | None, dict[str, datetime]]]:
    """Per job name: its latest run's (outcome as it stands, start), the end of its latest
    successful run (None: none yet) and the end of its latest run of each outcome it ended
    with (FINISHES). For /metrics. A `skipped` record (another replica held the lock, or had
    run that night) is not a run, nor a finish."""
    from sqlalchemy import select

    latest = (select(JobRun.name, func.max(JobRun.id).label("id"))
              .where(JobRun.outcome != "skipped").group_by(JobRun.name).subquery())
    rows = list(await session.scalars(select(JobRun).join(latest, JobRun.id == latest.c.id)))
    finishes: dict[str, dict[str, datetime]] = {}
    for name, outcome, end in (await session.execute(
            select(JobRun.name, JobRun.outcome, func.max(JobRun.finished_at))
            .where(JobRun.outcome.in_(FINISHES), JobRun.finished_at.is_not(None))
            .group_by(JobRun.name, JobRun.outcome))).all():
        finishes.setdefault(name, {})[outcome] = end
    return {row.name: (shown_outcome(row, now), row.started_at,
                       finishes.get(row.name, {}).get("ok"), finishes.get(row.name, {}))
            for row in rows}


async def _beat(ctx: Any, run_id: int) -> None:
    async with ctx.sessionmaker() as session:
        await session.execute(update(JobRun).where(JobRun.id == run_id, JobRun.outcome == "running")
                              .values(heartbeat_at=utcnow()))
        await session.commit()


@contextlib.asynccontextmanager
async def keep_alive(ctx: Any, run_id: int) -> AsyncIterator[None]:
    """Renew the run's heartbeat every HEARTBEAT_EVERY seconds while the block runs. A renewal
    that fails (the database busy a moment) is logged; the next one tries again."""

    async def beat() -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_EVERY)
            try:
                await _beat(ctx, run_id)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a missed beat is not the run's failure
                log.warning("job run %s: its heartbeat could not be written", run_id, exc_info=True)

    task = asyncio.create_task(beat(), name=f"job-run-{run_id}-heartbeat")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
