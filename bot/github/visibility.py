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

A repository no installation lists (privacy61: the app removed from it, the installation
uninstalled or suspended; GitHub sends no event of it then) kept its stored mark whatever
GitHub said of it since: one made private after the removal stayed published, one made
public again stayed marked. Such a stored row that holds something (threads, the app's
actions, contribution rules, or the mark), outside the repositories the sync reads itself
(which asks GraphQL `isPrivate`), is asked of GitHub as anyone may (GET /repositories/{id},
or /repos/{owner}/{repo} for a row without the id; GITHUB_TOKEN, else anonymous): public, its
mark is lifted; private, or not found (private to whoever asks, or deleted: no longer public
either way), what is stored of it is forgotten and it is marked, as `privatized` does. Its
public data stays while GitHub shows it publicly. At most UNLISTED_LIMIT a night, those not
marked first (what they hold is published), in name order; a failure other than "not found"
(a rate limit, GitHub down) stops them for the night (the counts say how many were left).
GitHub's answer to anyone is right whatever the installation, so the rows of an installation
whose listing failed (uninstalled at GitHub with its event lost, every night) are asked too.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import gidgethub
from sqlalchemy import func, select, union

from analyzers.catalog import canonical_repo
from bot.store.installations import silenced_installations
from bot.store.models import Action, ContributionRules, Installation, Repository, Thread
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
    seen: set[str] = set()  # the stored rows some installation listed (lower-case names)

    async def bring_in_line(stored_name: str, rid: int | None, marked: bool,
                            now_private: bool, why: str) -> None:
        if now_private == marked:
            return
        async with ctx.sessionmaker() as session:
            if now_private:
                await forget_repository(session, stored_name, rid)
            else:
                await publicize_repository(session, stored_name, rid)
            await session.commit()
        (privatized if now_private else publicized).append(stored_name)
        log.warning("visibility: %s is %s on GitHub (%s): %s", stored_name,
                    "private" if now_private else "public", why,
                    "what was stored of it is forgotten" if now_private else "it is stored again")

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
            seen.add(stored_name.lower())
            await bring_in_line(stored_name, rid, marked, listed_private(repo),
                                "no event said so")
    unlisted = await _unlisted(ctx, rows, seen)
    asked = 0
    for stored_name, rid, marked in unlisted[:UNLISTED_LIMIT]:
        try:
            now_private = await _private_to_anyone(github, stored_name, rid)
        except (TimeoutError, gidgethub.GitHubException, aiohttp.ClientError) as exc:
            log.warning("visibility: GitHub did not say whether %s is public (%s); the "
                        "repositories no installation lists wait for the next night",
                        stored_name, exc)
            break
        asked += 1
        await bring_in_line(stored_name, rid, marked, now_private, "no installation lists it")
    return {"installations": len(installations), "publicized": publicized,
            "privatized": privatized, "failed": failed,
            "unlisted": {"asked": asked, "left": len(unlisted) - asked}}


UNLISTED_LIMIT = 200  # repositories no installation lists, asked of GitHub a night


async def _unlisted(ctx: Any, rows: list[Any], seen: set[str]
                    ) -> list[tuple[str, int | None, bool]]:
    """(name, id, marked) of the stored rows no installation listed tonight that hold
    something (threads, actions, contribution rules, or the mark), those not marked first
    (what they hold is published), each in name order; not those the sync reads itself."""
    from bot.github.sync import default_repos

    synced = {r.lower() for r in default_repos()}
    async with ctx.sessionmaker() as session:
        held = {str(n).lower() for n in await session.scalars(union(*(
            select(func.lower(model.repo)).distinct()
            for model in (Thread, Action, ContributionRules))))}
    out = [(name, rid, bool(private)) for name, rid, private in rows
           if name.lower() not in seen and name.lower() not in synced
           and (private or name.lower() in held)]
    # those not marked first (what they hold is published), then the marked ones
    return sorted(out, key=lambda r: (r[2], r[0].lower()))


async def _private_to_anyone(github: Any, name: str, rid: int | None) -> bool:
    """Whether GitHub shows the repository to anyone (GITHUB_TOKEN, else anonymous): not when
    it calls it private or internal, nor when it answers "not found" (private, or deleted)."""
    gh = await github.api()
    try:
        if rid is not None:
            data = await gh.getitem("/repositories/{id}", {"id": int(rid)})
        else:
            owner, _, repo = name.partition("/")
            data = await gh.getitem("/repos/{owner}/{repo}", {"owner": owner, "repo": repo})
    except gidgethub.BadRequest as exc:
        if int(exc.status_code) == 404:
            return True
        raise
    return not isinstance(data, dict) or listed_private(data)
