"""Contribution rules read through the contents API of the fake GitHub server, cached in the
contribution_rules table (SQLite and PostgreSQL), refreshed, and followed across a pointer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from bot.speaking.contribution import format_rules_markdown, refresh_all, rules_for_repo
from bot.store.models import ContributionRules, Repository
from bot.store.types import utcnow
from tests.fresh import run_fresh

REPO = "acme/widgets"

CONTRIBUTING = """\
# Contributing

Please open an issue before you start work on a new feature.

* Make sure all tests pass before opening a pull request.
* Every commit must be signed off (`git commit -s`); we require the DCO.
"""
PR_TEMPLATE = "## Checklist\n\n- [ ] Did you update the documentation with your changes?\n"
BUG_FORM = """\
name: Bug report
body:
  - type: textarea
    attributes:
      label: Reproduction
    validations:
      required: true
"""
STALE = """\
on:
  schedule:
    - cron: '0 1 * * *'
jobs:
  stale:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/stale@v9
        with:
          days-before-stale: 45
          days-before-close: 5
"""


def _seed(fake, repo: str = REPO) -> None:
    fake.set_file(repo, "CONTRIBUTING.md", CONTRIBUTING)
    fake.set_file(repo, ".github/PULL_REQUEST_TEMPLATE.md", PR_TEMPLATE)
    fake.set_file(repo, ".github/ISSUE_TEMPLATE/bug.yml", BUG_FORM)
    fake.set_file(repo, ".github/workflows/stale.yml", STALE)
    fake.set_file(repo, ".github/workflows/build.yml", "on: push\njobs: {}\n")
    fake.set_file(repo, ".github/CODEOWNERS", "* @acme/core\n")


async def test_rules_fetched_summarised_and_cached(app_ctx, fake_github) -> None:
    _seed(fake_github)
    summary = await rules_for_repo(app_ctx, REPO)
    rules = {f["rule"]: f for f in summary["facts"]}
    assert {"issue_first", "tests_pass", "signoff_required", "docs_update", "stale_workflow",
            "codeowners", "form_required"} <= set(rules)
    assert rules["stale_workflow"]["source"] == ".github/workflows/stale.yml"
    assert "after 45 days" in rules["stale_workflow"]["statement"]
    assert summary["repo"] == REPO and summary["framework"] is None
    # Only workflows whose names say what they do are read.
    fetched = {c.path for c in fake_github.requests("GET", r"/contents/")}
    assert f"/repos/{REPO}/contents/.github/workflows/stale.yml" in fetched
    assert f"/repos/{REPO}/contents/.github/workflows/build.yml" not in fetched
    # Folders are listed first: absent files cost no request (no 404s but the listing of the
    # owner's `.github` repository, asked for the governance and discussion templates the
    # repository lacks: it has none).
    assert f"/repos/{REPO}/contents/AGENTS.md" not in fetched
    assert [c.path for c in fake_github.requests("GET", r"/contents") if c.status != 200] == [
        "/repos/acme/.github/contents"]
    # 4 listings (root, .github, ISSUE_TEMPLATE, workflows) + 5 files + the organisation's root.
    assert len(fake_github.requests("GET", r"/contents")) == 10

    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(ContributionRules).where(ContributionRules.repo == REPO))
    assert row is not None and "CONTRIBUTING.md" in row.files and row.summary["facts"]

    # Fresh cache: no request at all.
    before = len(fake_github.calls)
    again = await rules_for_repo(app_ctx, REPO)
    assert len(fake_github.calls) == before and again["facts"] == summary["facts"]

    # A refresh sees the new text.
    fake_github.set_file(REPO, "CONTRIBUTING.md", CONTRIBUTING + "\nAll contributors must sign "
                         "our Contributor License Agreement (CLA).\n")
    refreshed = await rules_for_repo(app_ctx, REPO, refresh=True)
    assert "cla_required" in {f["rule"] for f in refreshed["facts"]}

    md = format_rules_markdown(refreshed)
    assert "`@acme/core`" in md and "CLA" in md


async def test_stale_cache_refetched_and_failed_fetch_keeps_cache(app_ctx, fake_github) -> None:
    _seed(fake_github)
    first = await rules_for_repo(app_ctx, REPO)
    async with app_ctx.sessionmaker() as session, session.begin():
        row = await session.scalar(select(ContributionRules))
        row.fetched_at = utcnow() - timedelta(days=3)
    # GitHub down (repeated 502s beyond the retry bound): the old summary is served.
    fake_github.fail_next("GET", r"/contents/", 502, times=1000)
    kept = await rules_for_repo(app_ctx, REPO)
    assert kept["facts"] == first["facts"]


@pytest.mark.parametrize("refusal", ["forbidden", "rate_limited"])
async def test_refused_refresh_keeps_the_stored_rules(app_ctx, fake_github, refusal: str) -> None:
    """A 403 (the installation lost `contents: read`, or the rate limit outlasts the retries)
    says nothing about the files: the stored summary stays and is served, instead of being
    replaced by one that says the repository has no CONTRIBUTING file."""
    _seed(fake_github)
    first = await rules_for_repo(app_ctx, REPO)
    assert any(f["rule"] == "signoff_required" for f in first["facts"])
    if refusal == "forbidden":
        fake_github.fail_next("GET", r"/contents/", 403, times=1000,
                              body={"message": "Resource not accessible by integration"})
    else:
        fake_github.rate_limited("GET", r"/contents/", reset_in=3600, times=1000)
    kept = await rules_for_repo(app_ctx, REPO, refresh=True)
    assert kept["facts"] == first["facts"]
    async with app_ctx.sessionmaker() as session:
        stored = await session.scalar(select(ContributionRules))
    assert stored.summary["facts"] == first["facts"]


async def test_pointer_to_another_repository_is_followed(app_ctx, fake_github) -> None:
    fake_github.set_file(REPO, "CONTRIBUTING.md",
                         "See https://github.com/acme/community/blob/main/CONTRIBUTING.md\n")
    fake_github.set_file("acme/community", "CONTRIBUTING.md",
                         "Every pull request needs at least two approvals from maintainers.\n")
    summary = await rules_for_repo(app_ctx, REPO)
    rules = {f["rule"]: f for f in summary["facts"]}
    assert rules["rules_elsewhere"]["statement"].endswith("acme/community.")
    assert rules["review_approvals"]["source"] == "acme/community/CONTRIBUTING.md"


async def test_framework_repository_gets_observations_and_canonical_name(app_ctx, fake_github) -> None:
    # Asked under verl's former name: stored under the current one, with verl's observations.
    fake_github.set_file("verl-project/verl", "CONTRIBUTING.md", CONTRIBUTING)
    summary = await rules_for_repo(app_ctx, "volcengine/verl")
    assert summary["repo"] == "verl-project/verl" and summary["framework"] == "verl"
    assert any(f["observed"] and "verl-recipe" in f["statement"] for f in summary["facts"])


async def test_refresh_all_covers_frameworks_and_installed_repositories(app_ctx, fake_github) -> None:
    _seed(fake_github)
    fake_github.add_installation(91, "acme", repos=[REPO])
    async with app_ctx.sessionmaker() as session, session.begin():
        from bot.store.models import Installation

        session.add(Installation(id=91, account="acme"))
        await session.flush()
        session.add(Repository(full_name=REPO, installation_id=91))
    counts = await refresh_all(app_ctx)
    # seven frameworks + the installed one
    assert counts == {"refreshed": 8, "failed": 0, "private": 0, "cached": 0, "deferred": 0}
    async with app_ctx.sessionmaker() as session:
        repos = set(await session.scalars(select(ContributionRules.repo)))
    assert REPO in repos and "huggingface/trl" in repos
    # The installed repository was read with its installation token.
    calls = fake_github.requests("GET", rf"/repos/{REPO}/contents/CONTRIBUTING.md")
    assert calls and calls[-1].auth == "installation"
    # Frameworks with no files on the fake still get a summary that says so.
    async with app_ctx.sessionmaker() as session:
        trl = await session.scalar(
            select(ContributionRules).where(ContributionRules.repo == "huggingface/trl"))
    assert [f["rule"] for f in trl.summary["facts"] if not f["observed"]] == ["no_contributing"]


@pytest.mark.parametrize("target", ["verl"])
async def test_cli_uses_database_cache_first(app_ctx, fake_github, target: str) -> None:
    from bot.cli.rules import _from_database

    fake_github.set_file("verl-project/verl", "CONTRIBUTING.md", CONTRIBUTING)
    stored = await rules_for_repo(app_ctx, "verl-project/verl")
    cached = await _from_database(app_ctx.settings, "verl-project/verl")
    assert cached is not None and cached["facts"] == stored["facts"]


async def test_without_credentials_github_is_not_called(settings, fake_github, shared_dir) -> None:
    """Dev mode (no app credentials, no token): a rule summary comes from the cache or this
    checkout's development snapshot; GitHub is never asked (a demo must not wait on it)."""
    import dataclasses

    from bot.context import AppContext
    from bot.github.client import GitHubClient

    bare = dataclasses.replace(settings, api_url=fake_github.url, app_id=None, private_key=None,
                               token=None)
    ctx = AppContext.create(bare)
    ctx.github = GitHubClient(bare)
    try:
        _seed(fake_github, "huggingface/trl")
        summary = await rules_for_repo(ctx, "huggingface/trl")
        assert summary["source"] == "snapshot" and summary["facts"]
        with pytest.raises(RuntimeError, match="no GitHub credentials"):
            await rules_for_repo(ctx, REPO)  # not a framework: no snapshot either
        assert fake_github.calls == []
    finally:
        await ctx.github.close()
        await ctx.close()


async def test_a_suspended_installations_repository_is_read_without_it(app_ctx, fake_github) -> None:
    """Its contribution files were fetched through the installation, whose token GitHub
    refuses while it is suspended: no rules at all for a repository never read before (the
    rule-summary command and the nightly refresh failed). They are read as for any other."""
    from bot.store.models import Installation
    from tests.fakegithub import install_app

    _seed(fake_github)
    await install_app(app_ctx, fake_github, 55, "acme", [REPO])
    async with app_ctx.sessionmaker() as session:
        (await session.get(Installation, 55)).suspended = True
        await session.commit()
    fake_github.suspend_installation(55)
    summary = await rules_for_repo(app_ctx, REPO, refresh=True)
    assert "signoff_required" in {f["rule"] for f in summary["facts"]}
    assert not fake_github.requests("POST", r"/installations/55/access_tokens$")


# A fresh interpreter (spaCy not imported yet) asks for a framework's rule summary while the
# analyzers warm up, as a page request can right after `rltracker serve` starts.
_RULES_DURING_WARM_UP = """
import asyncio, sys
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine
from analyzers.catalog import load_catalog
from bot.analysis import warm_up
from bot.site.data import rules_of
from bot.store.models import Base

async def main():
    engine = create_async_engine("sqlite+aiosqlite://")
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    async with async_sessionmaker(engine)() as session:
        repo = load_catalog().frameworks["verl"].repo
        results = await asyncio.gather(warm_up(), rules_of(session, repo), return_exceptions=True)
    await engine.dispose()
    failed = [r for r in results if isinstance(r, BaseException)]
    print("failed:", *map(repr, failed)) if failed else print("facts:", len(results[1]["facts"]))
    sys.exit(1 if failed else 0)

asyncio.run(main())
"""


def test_a_rule_summary_asked_while_the_analyzers_warm_up_is_served(shared_dir: object) -> None:
    # spaCy imported by two threads at once fails ("partially initialized module"): the
    # summary runs on the analysis thread, after the warm-up, not beside it.
    done = run_fresh(_RULES_DURING_WARM_UP)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert done.stdout.startswith("facts:") and int(done.stdout.split()[1]) > 0


def test_rendering_a_stored_summary_needs_no_spacy() -> None:
    # Pages and comments render stored summaries on the event loop: the topics' names and
    # texts are plain data, so rendering neither stalls the loop building matchers nor
    # imports spaCy beside the analysis thread.
    script = (
        "import sys\n"
        "from analyzers.rules import format_rules_markdown\n"
        "text = format_rules_markdown({'framework': 'verl', 'not_stated': [],\n"
        "    'facts': [{'topic': 'tests', 'statement': 'Add a unit test.', 'source': 'CONTRIBUTING.md'}]})\n"
        "print('spacy' in sys.modules, 'Add a unit test.' in text)\n"
    )
    done = run_fresh(script)
    assert done.stdout.split() == ["False", "True"], done.stdout + done.stderr[-2000:]


async def test_a_dropped_connection_keeps_the_stored_rules(app_ctx, fake_github) -> None:
    """GitHub dropping the connection (past the client's retries) raised an aiohttp error,
    not an OSError: the stale but stored summary was not served, and the rule summary went
    out without its rules."""
    _seed(fake_github)
    first = await rules_for_repo(app_ctx, REPO)
    async with app_ctx.sessionmaker() as session, session.begin():
        row = await session.scalar(select(ContributionRules))
        row.fetched_at = utcnow() - timedelta(days=3)
    fake_github.disconnect_next("GET", r"/contents", times=1000)
    kept = await rules_for_repo(app_ctx, REPO)
    assert kept["facts"] == first["facts"]


async def test_a_summary_of_an_older_extractor_is_redone_from_the_stored_files(
        app_ctx, fake_github) -> None:
    """A fresh row written by an earlier extractor (RULES_VERSION) was served as it was for
    up to 26 hours, and for ever without credentials: its rules are made again from the files
    stored with it, without asking GitHub."""
    from analyzers.rules import RULES_VERSION

    async with app_ctx.sessionmaker() as session, session.begin():
        session.add(ContributionRules(
            repo=REPO, files={"CONTRIBUTING.md": CONTRIBUTING}, fetched_at=utcnow(),
            summary={"version": "0", "framework": None, "files": ["CONTRIBUTING.md"],
                     "facts": [{"topic": "tests", "rule": "old", "statement": "An old rule.",
                                "source": "CONTRIBUTING.md"}], "not_stated": []}))
    before = len(fake_github.calls)
    summary = await rules_for_repo(app_ctx, REPO)
    assert len(fake_github.calls) == before
    assert summary["version"] == RULES_VERSION
    rules = {f["rule"] for f in summary["facts"]}
    assert "old" not in rules and "signoff_required" in rules
    async with app_ctx.sessionmaker() as session:
        stored = await session.scalar(select(ContributionRules))
    assert stored.summary["version"] == RULES_VERSION


async def test_two_first_fetches_at_once_both_get_the_rules(app_ctx, fake_github) -> None:
    """Two proposals of a repository read for the first time at once: both found no row and
    both inserted one; the second hit the unique name and its summary went out without rules."""
    import asyncio

    _seed(fake_github)
    first, second = await asyncio.gather(rules_for_repo(app_ctx, REPO),
                                         rules_for_repo(app_ctx, REPO))
    assert first["facts"] == second["facts"]
    async with app_ctx.sessionmaker() as session:
        rows = (await session.scalars(select(ContributionRules))).all()
    assert len(rows) == 1
