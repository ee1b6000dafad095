"""The nightly rules refresh keeps a REST (core) reserve for webhooks (fetch78).

The refresh asks up to MAX_REPO_REQUESTS REST requests a repository, through the installation's
token that webhooks' comments use too. Before each repository it reads what GitHub last said
is left (`x-ratelimit-remaining` of the client's answers, `rate_left`); below REST_RESERVE plus
one repository's worst case, that installation's remaining repositories wait for the next
night (their stored rules kept, counted `deferred`), while other installations go on. On
main the refresh spent the budget to the end. The fake GitHub server counts each
installation's REST budget down over HTTP; SQLite and PostgreSQL (the rules are stored).
"""

from __future__ import annotations

import logging

from sqlalchemy import func, select

from bot.speaking.contribution import MAX_REPO_REQUESTS, REST_RESERVE, refresh_all
from bot.store.models import ContributionRules
from tests.fakegithub import clocked_github, install_app
from tests.test_contribution import _seed

ACME = ["acme/widgets", "acme/gadgets"]
BETA = "beta/tool"


async def _stored(ctx, repo: str) -> ContributionRules:
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(ContributionRules).where(
            func.lower(ContributionRules.repo) == repo.lower()))


def _asked(fake, repo: str, since: int) -> bool:
    return any(c.path.startswith(f"/repos/{repo}/") for c in fake.calls[since:])


async def test_a_spent_installation_is_deferred_and_keeps_its_rules(app_ctx, fake_github, caplog) -> None:
    for repo in [*ACME, BETA]:
        _seed(fake_github, repo)
    await install_app(app_ctx, fake_github, 91, "acme", ACME)
    await install_app(app_ctx, fake_github, 92, "beta", [BETA])
    first = await refresh_all(app_ctx)
    assert first["refreshed"] == 10 and first["deferred"] == 0  # 7 frameworks + 3
    before = {repo: await _stored(app_ctx, repo) for repo in ACME}
    for repo in ACME:
        fake_github.set_file(repo, "CONTRIBUTING.md", "# Changed\n\nSign off every commit.\n")

    # Tonight acme has 3 requests more than the reserve and one repository's worst case:
    # its first repository is read (and spends them), the next one waits; beta's budget is whole.
    fake_github.core_left[91] = REST_RESERVE + MAX_REPO_REQUESTS + 3
    fake_github.core_left[92] = 5000
    since = len(fake_github.calls)
    caplog.set_level(logging.WARNING, logger="bot.speaking.contribution")
    counts = await refresh_all(app_ctx)

    assert counts == {"refreshed": 9, "failed": 0, "private": 0, "cached": 0, "deferred": 1}
    assert _asked(fake_github, BETA, since)
    read = [repo for repo in ACME if _asked(fake_github, repo, since)]
    deferred = [repo for repo in ACME if repo not in read]
    assert len(read) == 1 and len(deferred) == 1
    # the deferred repository was not asked anything and keeps what was stored
    kept = await _stored(app_ctx, deferred[0])
    assert kept.fetched_at == before[deferred[0]].fetched_at
    assert "Changed" not in str(kept.files) and kept.summary == before[deferred[0]].summary
    assert "Changed" in str((await _stored(app_ctx, read[0])).files)
    # acme was not spent to nothing: what it had left when the refresh stopped stays for webhooks
    assert fake_github.core_left[91] >= REST_RESERVE
    said = [r.getMessage() for r in caplog.records if "REST requests left" in r.getMessage()]
    assert len(said) == 1 and "installation 91" in said[0] and deferred[0] in said[0]


async def test_a_whole_budget_refreshes_everything(app_ctx, fake_github) -> None:
    """Far from the reserve (and with no count seen yet) nothing is deferred."""
    for repo in ACME:
        _seed(fake_github, repo)
    await install_app(app_ctx, fake_github, 91, "acme", ACME)
    fake_github.core_left[91] = REST_RESERVE + MAX_REPO_REQUESTS + 200
    counts = await refresh_all(app_ctx)
    assert counts["refreshed"] == 9 and counts["deferred"] == 0


async def test_rate_left_reads_githubs_last_count_until_its_reset(app_ctx, fake_github) -> None:
    """`rate_left` is GitHub's last `x-ratelimit-remaining` of these credentials and resource;
    unknown before any answer and once the reset has passed (the budget is whole again)."""
    await install_app(app_ctx, fake_github, 91, "acme", ACME)
    fake_github.core_left[91] = 1234
    async with clocked_github(app_ctx, fake_github) as clock:
        api = await app_ctx.github.api(91)
        assert api.rate_left("core") is None
        await api.getitem("/repos/acme/widgets")
        assert api.rate_left("core") == 1233
        assert (await app_ctx.github.api(91)).rate_left() == 1233  # the client's, not the object's
        assert (await app_ctx.github.api(None)).rate_left() is None  # other credentials
        assert api.rate_left("graphql") is None
        clock.advance(3601)
        assert api.rate_left("core") is None


# Cheap nights: the tree listing asked with its last ETag (its body not kept); GitHub's 304 (free)
# says the tree is the same, so are its package guides: taken from the stored row, not read.
MONO = "acme/mono"
GUIDE = "# Contributing to acme-rollout\n\nEvery commit must be signed off (`git commit -s`).\n"


def _trees(fake, since: int) -> list:
    return [c for c in fake.calls[since:] if c.path.startswith(f"/repos/{MONO}/git/trees/")]


def _guide_reads(fake, since: int) -> list:
    return [c for c in fake.calls[since:] if c.path.endswith("/contents/packages/a/CONTRIBUTING.md")]


async def test_an_unchanged_tree_costs_a_304_and_keeps_its_guides(app_ctx, fake_github) -> None:
    fake_github.set_file(MONO, "CONTRIBUTING.md", "# Contributing\n\nRun the tests.\n")
    fake_github.set_file(MONO, "packages/a/CONTRIBUTING.md", GUIDE)
    await install_app(app_ctx, fake_github, 91, "acme", [MONO])
    await refresh_all(app_ctx)
    first = await _stored(app_ctx, MONO)
    assert first.files["packages/a/CONTRIBUTING.md"] == GUIDE

    since = len(fake_github.calls)
    assert (await refresh_all(app_ctx))["refreshed"] == 8
    (tree,) = _trees(fake_github, since)
    assert tree.status == 304 and tree.headers.get("If-None-Match")  # on main: 200, asked whole
    assert _guide_reads(fake_github, since) == []
    again = await _stored(app_ctx, MONO)
    assert again.files == first.files and again.summary == first.summary

    # a changed tree is listed whole and its guides read again
    fake_github.set_file(MONO, "packages/b/CONTRIBUTING.md", GUIDE.replace("acme-rollout", "acme-b"))
    since = len(fake_github.calls)
    await refresh_all(app_ctx)
    (tree,) = _trees(fake_github, since)
    assert tree.status == 200
    assert "packages/b/CONTRIBUTING.md" in (await _stored(app_ctx, MONO)).files


async def test_a_failed_listing_or_no_stored_row_asks_the_tree_whole(app_ctx, fake_github) -> None:
    """A stored fetch whose tree listing failed (its guides unknown), and no stored row (deleted
    by `forget`), cannot take the guides from the row: the listing is asked without its ETag."""
    fake_github.set_file(MONO, "CONTRIBUTING.md", "# Contributing\n\nRun the tests.\n")
    fake_github.set_file(MONO, "packages/a/CONTRIBUTING.md", GUIDE)
    await install_app(app_ctx, fake_github, 91, "acme", [MONO])
    await refresh_all(app_ctx)  # the ETag of the listing is now kept
    fake_github.fail_next("GET", rf"^/repos/{MONO}/git/trees/", 403, times=1)  # (not retried)
    await refresh_all(app_ctx)
    assert "**/CONTRIBUTING.md" in (await _stored(app_ctx, MONO)).summary["partial"]
    since = len(fake_github.calls)
    await refresh_all(app_ctx)
    (tree,) = _trees(fake_github, since)
    assert tree.status == 200 and not tree.headers.get("If-None-Match")
    stored = await _stored(app_ctx, MONO)
    assert stored.files["packages/a/CONTRIBUTING.md"] == GUIDE and "partial" not in stored.summary

    async with app_ctx.sessionmaker() as session, session.begin():
        await session.delete(await session.get(ContributionRules, stored.id))
    since = len(fake_github.calls)
    await refresh_all(app_ctx)
    (tree,) = _trees(fake_github, since)
    assert tree.status == 200 and not tree.headers.get("If-None-Match")
    assert (await _stored(app_ctx, MONO)).files["packages/a/CONTRIBUTING.md"] == GUIDE
