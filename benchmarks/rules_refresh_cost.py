"""The nightly rules refresh at scale (ops77): N installed repositories in one installation, each
with a CONTRIBUTING.md and (every tenth) two package guides, refreshed by
`bot.speaking.contribution.refresh_all` against the fake GitHub server over HTTP, on SQLite.
Prints the requests made (all, per repository, tree listings), by kind, and the wall time.
`--nights 2`: the next night too (304s, free on GitHub, counted apart: fetch78); `--budget N`:
the installation has N REST requests left (the fake counts them down; fetch78's reserve).
`--layout bounds` (fetch79): each repository fills the bounds of what the tree listing finds: a
CONTRIBUTING linking 10 pages, a docs site's copy of it, 8 package guides each linking 10 pages
of its package (MAX_LINKED_PAGES, MAX_PACKAGE_GUIDES and the package pages' MAX_LINKED_PAGES).

    PYTHONPATH=$PWD python benchmarks/rules_refresh_cost.py --repos 1000 --nights 2 --budget 5000
    PYTHONPATH=$PWD python benchmarks/rules_refresh_cost.py --repos 50 --layout bounds
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

INSTALLATION = 77


def _fill_bounds(fake: object, repo: str) -> None:
    """A repository at the tree listing's bounds (fetch79): more of each than is read."""
    set_file = fake.set_file  # type: ignore[attr-defined]
    links = "".join(f"- [page {n}](docs/p{n}.md)\n" for n in range(10))
    set_file(repo, "CONTRIBUTING.md", f"# Contributing\n\nAdd a test for each change.\n\n{links}")
    for n in range(10):
        set_file(repo, f"docs/p{n}.md", f"# Page {n}\n\nRun the linter.\n")
    set_file(repo, "docs/source/contributing.rst", "Contributing\n============\n\nAdd a test.\n")
    for package in range(8):
        set_file(repo, f"packages/p{package}/CONTRIBUTING.md", f"# p{package}\n\n{links}")
        for n in range(10):
            set_file(repo, f"packages/p{package}/docs/p{n}.md", f"# Page {n}\n\nSign off.\n")


async def run(n_repos: int, nights: int = 1, budget: int | None = None,
              layout: str = "typical") -> None:
    from bot.config import Settings
    from bot.context import AppContext
    from bot.github.client import GitHubClient
    from bot.speaking.contribution import refresh_all
    from bot.store import migrate
    from bot.store.models import Installation, Repository
    from tests.fakegithub import FakeGitHub, rsa_key_pair

    repos = [f"acme/pkg{i:04d}" for i in range(n_repos)]
    fake = FakeGitHub()
    await fake.start()
    pem, public = rsa_key_pair()
    fake.app_id, fake.public_key = "4242", public
    fake.add_installation(INSTALLATION, "acme", repos=repos)
    for i, repo in enumerate(repos):
        if layout == "bounds":
            _fill_bounds(fake, repo)
            continue
        fake.set_file(repo, "CONTRIBUTING.md", "# Contributing\n\nAdd a test for each change.\n")
        if i % 10 == 0:
            for package in ("packages/a", "packages/b"):
                fake.set_file(repo, f"{package}/CONTRIBUTING.md", "Run the linter before a PR.\n")
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite+aiosqlite:///{folder}/r.db"
        await asyncio.to_thread(migrate.upgrade, url)
        settings = dataclasses.replace(
            Settings.from_env({}, database_url=url, webhook_secret="s", dry_run=True),
            app_id="4242", private_key=pem, api_url=fake.url)
        ctx = AppContext.create(settings)
        ctx.github = GitHubClient(settings)
        try:
            async with ctx.sessionmaker() as session, session.begin():
                session.add(Installation(id=INSTALLATION, account="acme"))
                await session.flush()
                session.add_all(Repository(full_name=r, installation_id=INSTALLATION) for r in repos)
            if budget is not None:
                fake.core_left[INSTALLATION] = budget
            results = []
            for _ in range(nights):
                since = len(fake.calls)
                started = time.monotonic()
                counts = await refresh_all(ctx)
                results.append((since, len(fake.calls), counts, time.monotonic() - started))
        finally:
            await ctx.github.close()
            ctx.github = None
            await ctx.close()
            await fake.close()
    for night, (since, until, counts, took) in enumerate(results, 1):
        calls = [c for c in fake.calls[since:until] if c.path.startswith("/repos/acme/")]
        kinds = collections.Counter(
            ("tree" if "/git/trees/" in c.path else "contents" if "/contents" in c.path else "other")
            + (" 304" if c.status == 304 else "") for c in calls)
        spent = sum(1 for c in calls if c.status != 304)
        print(f"night {night}: {n_repos} installed repositories: {counts}; {len(calls)} requests "
              f"to them ({len(calls) / n_repos:.1f} each, {spent} counted by GitHub: "
              f"{dict(kinds)}), {took:.1f} s, one at a time"
              + (f"; {fake.core_left[INSTALLATION]} left" if budget is not None else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=1000)
    parser.add_argument("--nights", type=int, default=1)
    parser.add_argument("--budget", type=int, default=None)
    parser.add_argument("--layout", choices=("typical", "bounds"), default="typical")
    args = parser.parse_args()
    asyncio.run(run(args.repos, args.nights, args.budget, args.layout))


if __name__ == "__main__":
    main()
