"""The nightly rules refresh and `repository.privatized` at once (privacy60).

The refresh reads a repository's contribution rules from GitHub and then stores them. A
`privatized` handled while GitHub answers forgot the stored rules and marked the row, and
the refresh then stored them again: the private repository's CONTRIBUTING text on the
tracker. The write now takes the lock `forget` takes (`lock_repositories`) and reads the
mark again. Ordered by the fake GitHub server's handler, no sleeps; SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from bot.speaking.contribution import refresh_all
from bot.store.models import ContributionRules, Installation, Repository
from bot.webhooks.privacy import handle_repository
from tests.test_contribution import REPO, _seed
from tests.test_events import envelope

RID = 4242


def _privatized() -> dict[str, Any]:
    payload = envelope("privatized", REPO, installation=91)
    payload["repository"].update(id=RID, private=True, visibility="private")
    return payload


async def _install(ctx: Any, *, private: bool = False) -> None:
    async with ctx.sessionmaker() as session, session.begin():
        session.add(Installation(id=91, account="acme"))
        await session.flush()
        session.add(Repository(full_name=REPO, github_id=RID, installation_id=91, private=private))


async def _rules(ctx: Any) -> list[str]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(select(ContributionRules.repo).where(
            func.lower(ContributionRules.repo) == REPO.lower())))


async def test_privatized_while_the_refresh_reads_the_rules_stores_none(app_ctx, fake_github) -> None:
    """`privatized` is handled while GitHub serves the repository's CONTRIBUTING.md. On main
    the refresh stored the rules afterwards (one row of the now-private repository)."""
    _seed(fake_github)
    fake_github.add_installation(91, "acme", repos=[REPO])
    await _install(app_ctx)
    done: list[bool] = []

    @fake_github.route("GET", r"/repos/(?P<owner>acme)/(?P<name>widgets)/contents/(?P<path>CONTRIBUTING\.md)")
    async def contributing(fake: Any, request: Any, match: Any, body: Any) -> Any:
        if not done:
            done.append(True)
            fake.private_repos.add(REPO.lower())  # (the handler asks GitHub)
            await handle_repository(_privatized(), app_ctx)
        return fake._get_contents(request, match, body, None)

    counts = await refresh_all(app_ctx)
    assert done
    async with app_ctx.sessionmaker() as session:
        assert await session.scalar(select(Repository.private).where(Repository.full_name == REPO))
    assert await _rules(app_ctx) == []
    # the night's counts say so: on main it counted among the refreshed (8 with the seven
    # frameworks) though its rules' write was refused
    assert counts == {"refreshed": 7, "failed": 0, "private": 1, "cached": 0, "deferred": 0}


async def test_a_refresh_github_refuses_keeps_the_cache_and_says_so(app_ctx, fake_github) -> None:
    """GitHub refusing the repository's files on a later night: the rules stored before are
    kept (and still answered), and the night counts them as kept from the cache, not as
    refreshed (on main: refreshed 8)."""
    _seed(fake_github)
    fake_github.add_installation(91, "acme", repos=[REPO])
    await _install(app_ctx)
    assert (await refresh_all(app_ctx))["refreshed"] == 8
    fake_github.fail_next("GET", rf"^/repos/{REPO}/contents/", 403, times=50)
    counts = await refresh_all(app_ctx)
    assert counts == {"refreshed": 7, "failed": 0, "private": 0, "cached": 1, "deferred": 0}
    assert await _rules(app_ctx) == [REPO]


async def test_a_repository_marked_private_gets_no_rules_from_the_refresh(app_ctx, fake_github) -> None:
    """An installed repository whose row is marked private (an installation listed it
    private): on main the refresh read and stored its rules like any other's."""
    _seed(fake_github)
    fake_github.add_installation(91, "acme", repos=[REPO])
    await _install(app_ctx, private=True)
    await refresh_all(app_ctx)
    assert await _rules(app_ctx) == []
    assert not fake_github.requests("GET", rf"/repos/{REPO}/contents")
