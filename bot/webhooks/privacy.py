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

GitHub does not promise delivery order, and a failed delivery comes again later (a retry,
the nightly recovery, "Redeliver"): a `privatized` handled after the `publicized` that
followed it forgot a public repository, a `publicized` handled after a later `privatized`
lifted a private one's mark (privacy61). With a GitHub client the handler asks GitHub
(GET /repos/{owner}/{repo}, through the delivery's installation) and does what GitHub says
now; GitHub not saying (no client, the repository not found or refused to the asker) leaves
the payload to decide; GitHub failing (5xx, a rate limit) retries the delivery.
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
    listed_private,
    private_deliveries,
    publicize_repository,
    unmarked_said_private,
)
from bot.webhooks.normalize import PayloadError

log = logging.getLogger(__name__)
router = Router()


async def private_flags(ctx: Any, payloads: Iterable[Mapping[str, Any]]) -> list[bool]:
    """Per payload, whether it is about a private repository (one query for them all).

    A stored repository not marked private that a payload calls private (its `privatized`
    lost or not handled yet: privacy61) is forgotten now, as `privatized` would, when GitHub
    agrees or cannot say (`_private_now`; a payload GitHub contradicts is an old one, handled
    after `publicized`); before, what was stored of it stayed published until the night."""
    payloads = list(payloads)
    async with ctx.sessionmaker() as session:
        flags = await private_deliveries(session, payloads)
        unmarked = await unmarked_said_private(session, payloads)
    for name, rid, payload in unmarked:
        if await _private_now(ctx, payload, name) is False:
            continue
        async with ctx.sessionmaker() as session:
            await forget_repository(session, name, rid)
            await session.commit()
        _forget_written_repositories(ctx)
        log.warning("repository %s: a delivery calls it private (its `privatized` not handled):"
                    " what was stored of it is forgotten", name)
    return flags


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
    now_private = await _private_now(ctx, payload, name)
    if now_private is not None and now_private != (action == "privatized"):
        log.warning("repository %s %s: GitHub calls it %s now (an older delivery, handled "
                    "late): %s", name, action, "private" if now_private else "public",
                    "forgotten all the same" if now_private else "nothing is forgotten")
        action = "privatized" if now_private else "publicized"
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


async def _private_now(ctx: Any, payload: Mapping[str, Any], name: str) -> bool | None:
    """Whether GitHub calls the repository private now, asked through the delivery's
    installation (GITHUB_TOKEN or anonymous without app credentials); None when it cannot
    say: no client, or an answer other than the repository (not found, refused: a private
    repository to an anonymous asker, an installation gone). A 5xx or a rate limit raises:
    the delivery is retried."""
    github = getattr(ctx, "github", None)
    if github is None:
        return None
    inst = payload.get("installation")
    iid = inst.get("id") if isinstance(inst, Mapping) else None
    gh = await github.api(iid if isinstance(iid, int) and not isinstance(iid, bool) else None)
    return await private_on_github(gh, name)


async def private_on_github(gh: Any, name: str) -> bool | None:
    """Whether GitHub calls the repository `owner/name` private now (GET /repos/{owner}/{repo}
    through `gh`, an API of `bot.github.client`); None when the answer is not the repository
    (not found, refused: a private repository to an anonymous asker, an installation gone).
    A 5xx, a rate limit, a 408, 409 or 429 raises: the delivery is retried."""
    import gidgethub

    from bot.github.client import rate_limit_wait

    owner, _, repo = name.partition("/")
    try:
        data = await gh.getitem("/repos/{owner}/{repo}", {"owner": owner, "repo": repo})
    except gidgethub.BadRequest as exc:
        if rate_limit_wait(exc) is not None or int(exc.status_code) in (408, 409, 429):
            raise
        return None
    return listed_private(data) if isinstance(data, Mapping) else None


@router.register("repository", action="privatized")
@router.register("repository", action="publicized")
async def on_repository(event: sansio.Event, ctx: Any) -> None:
    if not isinstance(event.data, Mapping):
        raise PayloadError("repository: payload is not an object")
    await handle_repository(event.data, ctx)
