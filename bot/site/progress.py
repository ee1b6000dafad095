"""How full the tracker is, for the pages: the first backfill's progress (front page) and what
an empty section should say fills it.

Progress is read from durable rows, not from the process running the sync: the backfill's
JobRun (`first_backfill`: running or not, the total GitHub reported), the SyncCursor rows
(which repository and kind is done) and the stored threads per repository.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.site import data
from bot.store.jobs import FIRST_BACKFILL, alive, shown_outcome
from bot.store.models import JobRun, SyncCursor, Thread
from bot.store.types import format_datetime

KINDS = (("issue", "issues"), ("pull_request", "pull requests"), ("discussion", "discussions"))


def can_read_github(settings: Any) -> bool:
    """GitHub's GraphQL API (the sync) needs a token or the app's credentials."""
    return bool(settings.token) or bool(settings.has_app_credentials)


async def backfill_progress(session: AsyncSession) -> dict[str, Any] | None:
    """The latest first backfill unless it finished (or the nightly sync finished what it
    left): its state, and per tracked repository the threads stored and which kinds are done,
    in progress or still waiting."""
    run = await session.scalar(select(JobRun).where(JobRun.name == FIRST_BACKFILL)
                               .order_by(JobRun.started_at.desc(), JobRun.id.desc()).limit(1))
    if run is None or run.outcome == "ok":
        return None
    stored = dict((await session.execute(
        select(func.lower(Thread.repo), func.count()).group_by(func.lower(Thread.repo)))).all())
    cursors = {(c.repo.lower(), c.kind): c for c in await session.scalars(select(SyncCursor))}
    repos = []
    for fw in data.catalog().frameworks.values():
        states = {}
        for kind, _label in KINDS:
            c = cursors.get((fw.repo.lower(), kind))
            states[kind] = ("done" if c is not None and c.full_done
                            else "in progress" if c is not None and c.cursor else "waiting")
        repos.append({"repo": fw.repo, "framework": fw.id, "threads": int(stored.get(fw.repo.lower(), 0)),
                      "kinds": states, "done": all(s == "done" for s in states.values())})
    left = [r["repo"] for r in repos if not r["done"]]
    if run.outcome != "running" and not left:
        # Stopped or failed, and finished since by the nightly sync (no start runs it again
        # then): the page said "failed ... the next start resumes it" for good.
        return None
    counts = run.counts or {}
    outcome = shown_outcome(run)  # a run whose process died reads interrupted, not running
    return {
        "running": outcome == "running",
        "outcome": outcome,
        "error": run.error,
        "started_at": format_datetime(run.started_at),
        "threads": sum(r["threads"] for r in repos),
        "total": counts.get("total"),
        "repos": repos,
        "left": left,
        "kinds": KINDS,
    }


async def tracking_state(session: AsyncSession, settings: Any) -> dict[str, Any]:
    """What the empty sections of the pages say: whether anything is stored yet (`threads`,
    true or false), whether a first backfill is running, whether this service could read
    GitHub at all, and its webhook's URL (`webhook_url`)."""
    # Whether one is stored, not how many: every page asks, and a count read the whole table.
    stored = await session.scalar(select(Thread.id).limit(1)) is not None
    running = await session.scalar(select(JobRun.id).where(
        JobRun.name == FIRST_BACKFILL, JobRun.outcome == "running", alive()).limit(1))
    return {"threads": stored, "backfill_running": running is not None,
            "github": can_read_github(settings),
            # where `rltracker replay` sends the examples: this service, not a fixed port
            "webhook_url": f"{settings.public_url}/webhook"}
