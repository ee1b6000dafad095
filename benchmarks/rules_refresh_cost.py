"""The nightly rules refresh at scale (ops77): N installed repositories in one installation, each
with a CONTRIBUTING.md and (every tenth) two package guides, refreshed by
`bot.speaking.contribution.refresh_all` against the fake GitHub server over HTTP, on SQLite.
Prints the requests made (all, per repository, tree listings), by kind, and the wall time.

    PYTHONPATH=$PWD python benchmarks/rules_refresh_cost.py --repos 1000
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


async def run(n_repos: int) -> None:
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
            started = time.monotonic()
            counts = await refresh_all(ctx)
            took = time.monotonic() - started
        finally:
            await ctx.github.close()
            ctx.github = None
            await ctx.close()
            await fake.close()
    calls = [c for c in fake.calls if c.path.startswith("/repos/acme/")]
    kinds = collections.Counter(
        "tree" if "/git/trees/" in c.path else "contents" if "/contents" in c.path else "other"
        for c in calls)
    print(f"{n_repos} installed repositories: {counts}; {len(calls)} requests to them "
          f"({len(calls) / n_repos:.1f} each: {dict(kinds)}), {took:.1f} s, one at a time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, default=1000)
    asyncio.run(run(parser.parse_args().repos))


if __name__ == "__main__":
    main()
