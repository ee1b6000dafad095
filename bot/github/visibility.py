"""Which installed repositories GitHub calls private, asked every night (review59).

The stored mark `repositories.private` (bot/store/privacy.py) follows the `repository` event
(`privatized`, `publicized`) and the sync of a tracked repository (GraphQL `isPrivate`). A
repository outside the seven whose `publicized` delivery was lost (GitHub gave up on it, the
nightly recovery looks back one day) stayed marked, so nothing of it was stored until its next
event of that kind; one whose `privatized` was lost kept what was stored of it.

`check_visibility` (run by the nightly sync step, bot.scheduler.step_sync, before the sync)
lists each installation's repositories (GET /installation/repositories: one request per 100
repositories, with the `private` and `visibility` GitHub gives each) and brings the stored
rows in line: a row marked private that GitHub lists public loses the mark (its later
deliveries are stored; a tracked one is backfilled by the sync, its cursors were forgotten);
a stored row not marked that GitHub lists private is forgotten (`forget`). A repository with no
row is left alone (its deliveries say `private` themselves). Installations suspended or
uninstalled (no token) are not asked; one GitHub refuses is named in the counts, the others
are checked all the same.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import gidgethub
from sqlalchemy import select

from analyzers.catalog import canonical_repo
from bot.store.installations import silenced_installations
from bot.store.models import Installation, Repository
from bot.store.privacy import forget_repository, listed_private, publicize_repository

log = logging.getLogger(__name__)


async def _listed(github: Any, installation_id: int) -> list[dict[str, Any]]:
    gh = await github.api(installation_id)
    return [r async for r in gh.getiter("/installation/repositories?per_page=100",
                                        iterable_key="repositories") if isinstance(r, dict)]


async def check_visibility(ctx: Any) -> dict[str, Any] | str:
    """The stored private marks brought in line with what each installation lists. Returns
    the night's counts: installations asked, names publicized and privatized, installations
    GitHub refused (their ids)."""
    github = getattr(ctx, "github", None)
    if github is None or not ctx.settings.has_app_credentials:
        return "skipped: no app credentials (installations are listed with their tokens)"
    async with ctx.sessionmaker() as session:
        silenced = await silenced_installations(session)
        installations = [i for i in await session.scalars(select(Installation.id).order_by(
            Installation.id)) if i not in silenced]
        rows = (await session.execute(select(
            Repository.full_name, Repository.github_id, Repository.private))).all()
    by_name = {name.lower(): bool(private) for name, _, private in rows}
    by_id = {rid: (name, bool(private)) for name, rid, private in rows if rid is not None}
    publicized: list[str] = []
    privatized: list[str] = []
    failed: list[int] = []
    for iid in installations:
        try:
            listed = await _listed(github, iid)
        except (TimeoutError, gidgethub.GitHubException, aiohttp.ClientError) as exc:
            log.warning("visibility: installation %s could not be listed: %s", iid, exc)
            failed.append(iid)
            continue
        for repo in listed:
            if not isinstance(repo.get("full_name"), str):
                continue
            rid = repo.get("id") if isinstance(repo.get("id"), int) else None
            name = canonical_repo(repo["full_name"])
            stored = by_id.get(rid) if rid is not None else None
            if stored is None and name.lower() in by_name:
                stored = (name, by_name[name.lower()])
            if stored is None:
                continue  # nothing stored of it
            stored_name, marked = stored
            now_private = listed_private(repo)
            if now_private == marked:
                continue
            async with ctx.sessionmaker() as session:
                if now_private:
                    await forget_repository(session, stored_name, rid)
                else:
                    await publicize_repository(session, stored_name, rid)
                await session.commit()
            (privatized if now_private else publicized).append(stored_name)
            log.warning("visibility: %s is %s on GitHub (no event said so): %s", stored_name,
                        "private" if now_private else "public",
                        "what was stored of it is forgotten" if now_private
                        else "it is stored again")
    return {"installations": len(installations), "publicized": publicized,
            "privatized": privatized, "failed": failed}
