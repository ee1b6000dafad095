"""Job runs (the JobRun table): one row per run of a background job, started then updated."""

from __future__ import annotations

from typing import Any

from bot.store.models import JobRun

FIRST_BACKFILL = "first_backfill"  # `rltracker serve`'s first sync of the tracked repositories


async def record_job_run(ctx: Any, name: str, run_id: int | None, **values: Any) -> int:
    """Create the run's row (run_id None) or update it; returns its id."""
    async with ctx.sessionmaker() as session:
        if run_id is None:
            row = JobRun(name=name, **values)
            session.add(row)
        else:
            row = await session.get(JobRun, run_id)
            for key, value in values.items():
                setattr(row, key, value)
        await session.commit()
        return int(row.id)
