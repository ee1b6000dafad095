"""Private repositories in webhooks (review54; the store side: bot/store/privacy.py).

A delivery about a repository GitHub calls private or internal (`repository.private`,
`repository.visibility`), or about one whose stored row is marked private (a delivery sent
before it was made private), is handled as nothing: no thread, comment, analysis, action or
reply (`private_flags`, checked first by bot.webhooks.events and bot.webhooks.commands). A
thread transferred from a public repository to a private one leaves the tracker as a deleted
one does (`moved_to_private`).

`repository` events: `privatized` forgets what is stored of the repository and marks it;
`publicized` lifts the mark (the next sync of a tracked repository fills it in again, and
later deliveries are stored as any). Other actions of the event are not handled here.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any

from gidgethub import sansio
from gidgethub.routing import Router
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.catalog import canonical_repo
from bot.store.privacy import (
    delivery_is_private,
    forget_repository,
    private_deliveries,
    publicize_repository,
)
from bot.webhooks.normalize import PayloadError

log = logging.getLogger(__name__)
router = Router()


async def private_flags(ctx: Any, payloads: Iterable[Mapping[str, Any]]) -> list[bool]:
    """Per payload, whether it is about a private repository (one query for them all)."""
    async with ctx.sessionmaker() as session:
        return await private_deliveries(session, payloads)


async def moved_to_private(session: AsyncSession, payload: Mapping[str, Any]) -> bool:
    """Whether a `transferred` delivery moves its thread to a private repository
    (`changes.new_repository`, as it says or as its stored row is marked)."""
    changes = payload.get("changes")
    new = changes.get("new_repository") if isinstance(changes, Mapping) else None
    return isinstance(new, Mapping) and await delivery_is_private(session, {"repository": new})


def _forget_written_repositories(ctx: Any) -> None:
    extras = getattr(ctx, "extras", None)
    if isinstance(extras, dict):
        extras.pop("events.repositories_written", None)


async def handle_repository(payload: Mapping[str, Any], ctx: Any) -> str:
    action = payload.get("action")
    if action not in ("privatized", "publicized"):
        return "ignored"
    repo = payload.get("repository")
    if not isinstance(repo, Mapping) or not isinstance(repo.get("full_name"), str):
        raise PayloadError(f"repository.{action}: payload without repository.full_name")
    name = canonical_repo(repo["full_name"])
    rid = repo.get("id") if isinstance(repo.get("id"), int) else None
    async with ctx.sessionmaker() as session:
        if action == "privatized":
            await forget_repository(session, name, rid)
        else:
            await publicize_repository(session, name, rid)
        await session.commit()
    _forget_written_repositories(ctx)
    log.info("repository %s %s: %s", name, action,
             "what was stored of it is forgotten" if action == "privatized"
             else "it may be stored again")
    return str(action)


@router.register("repository", action="privatized")
@router.register("repository", action="publicized")
async def on_repository(event: sansio.Event, ctx: Any) -> None:
    if not isinstance(event.data, Mapping):
        raise PayloadError("repository: payload is not an object")
    await handle_repository(event.data, ctx)
