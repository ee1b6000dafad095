"""The record of what the app did and did not do on a thread: one Action row per decision.

`record_once` inserts an Action unless its `dedupe_key` exists (the unique index settles
races); `record_skip` records why the app stayed quiet, once per thread and reason. Imports
only the store, so every speaking module (and repository config) can record.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from bot.store.models import Action

log = logging.getLogger(__name__)


async def record_once(ctx: Any, **fields: Any) -> bool:
    """Insert an Action; with a dedupe_key already present, insert nothing and return False."""
    async with ctx.sessionmaker() as session:
        key = fields.get("dedupe_key")
        if key is not None and await session.scalar(select(Action.id).where(Action.dedupe_key == key)):
            return False
        session.add(Action(**fields))
        try:
            await session.commit()
        except IntegrityError:
            await session.rollback()
            return False
    return True


async def record_skip(
    ctx: Any, repo: str, number: int | None, kind: str, code: str, reason: str, **extra: Any
) -> None:
    log.info("skip %s %s#%s: %s", kind, repo, number, reason)
    await record_once(
        ctx, repo=repo, number=number, kind=kind, status="skipped", reason=reason,
        dedupe_key=f"{repo}#{number}:{kind}:skip:{code}", details={"code": code, **extra},
    )
