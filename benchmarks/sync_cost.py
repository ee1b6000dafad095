"""Requests per thread: the GraphQL sync against a plain REST walk of the same data, same run.

    .venv/bin/python benchmarks/sync_cost.py [--threads-per-repo 300] [--changed 5]

Runs the fake GitHub server of the test suite (tests/fakegithub.py) with the generated data
of tests/fake_graphql.py: GraphQL is executed against GitHub's real schema
(../shared/fixtures/github-api/schema.graphql); REST routes serving the same data are added
here. Prints measured figures; asserts nothing.

The REST walk is what a client without GraphQL does: list issues and pull requests
(state=all, 100 per page), then per thread its comments, and per pull request its reviews and
review comments. GitHub's REST API has no discussions listing, so the walk covers issues and
pull requests only and is divided by their number.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aiohttp import web  # noqa: E402

from tests.fake_graphql import (  # noqa: E402
    FakeData,
    FakeGraphQL,
    rest_comment,
    rest_issue,
    rest_review,
)
from tests.fakegithub import FakeGitHub, no_sleep  # noqa: E402

SCHEMA = ROOT.parent / "shared" / "fixtures" / "github-api" / "schema.graphql"


def _page(request: web.Request, items: list[Any]) -> web.Response:
    per_page = min(100, int(request.query.get("per_page", "30")))
    page = int(request.query.get("page", "1"))
    chunk = items[(page - 1) * per_page: page * per_page]
    headers = {}
    if page * per_page < len(items):
        query = dict(request.query, page=str(page + 1))
        url = request.url.with_query(query)
        headers["Link"] = f'<{url}>; rel="next"'
    return web.json_response(chunk, headers=headers)


def add_rest_routes(fake: FakeGitHub, data: FakeData) -> None:
    def repo_of(match: Any) -> str:
        want = f"{match['o']}/{match['r']}".lower()
        return next(r for r in data.repos if r.lower() == want)

    def thread(match: Any) -> dict[str, Any]:
        repo = repo_of(match)
        number = int(match["n"])
        for kind in ("issue", "pull_request"):
            for t in data.repos[repo][kind]:
                if t["number"] == number:
                    return t
        raise web.HTTPNotFound()

    @fake.route("GET", r"^/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues$")
    def list_issues(_f: Any, request: web.Request, match: Any, _b: Any) -> web.Response:
        repo = repo_of(match)
        since = request.query.get("since")
        items = [t for k in ("issue", "pull_request") for t in data.repos[repo][k]]
        items.sort(key=lambda t: t["updatedAt"], reverse=True)
        if since:
            items = [t for t in items if t["updatedAt"] >= since]
        return _page(request, [rest_issue(t) for t in items])

    @fake.route("GET", r"^/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/issues/(?P<n>\d+)/comments$")
    def list_comments(_f: Any, request: web.Request, match: Any, _b: Any) -> web.Response:
        return _page(request, [rest_comment(c) for c in thread(match)["_comments"]])

    @fake.route("GET", r"^/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)/reviews$")
    def list_reviews(_f: Any, request: web.Request, match: Any, _b: Any) -> web.Response:
        return _page(request, [rest_review(r) for r in thread(match)["_reviews"]])

    @fake.route("GET", r"^/repos/(?P<o>[^/]+)/(?P<r>[^/]+)/pulls/(?P<n>\d+)/comments$")
    def list_review_comments(_f: Any, request: web.Request, match: Any, _b: Any) -> web.Response:
        return _page(request, [rest_comment(c) for r in thread(match)["_reviews"] for c in r["_comments"]])


async def rest_walk(client: Any, data: FakeData, since: str | None = None) -> int:
    """Reads what the REST API offers; returns the number of threads walked."""
    gh = await client.api()
    walked = 0
    for repo in data.repos:
        url = f"/repos/{repo}/issues?state=all&per_page=100&sort=updated&direction=desc"
        if since:
            url += f"&since={since}"
        async for issue in gh.getiter(url):
            walked += 1
            number = issue["number"]
            async for _ in gh.getiter(f"/repos/{repo}/issues/{number}/comments?per_page=100"):
                pass
            if "pull_request" in issue:
                async for _ in gh.getiter(f"/repos/{repo}/pulls/{number}/reviews?per_page=100"):
                    pass
                async for _ in gh.getiter(f"/repos/{repo}/pulls/{number}/comments?per_page=100"):
                    pass
    return walked


async def main(threads_per_repo: int, changed: int) -> None:
    from bot.config import Settings
    from bot.context import AppContext
    from bot.github.client import GitHubClient
    from bot.github.sync import sync
    from bot.store import migrate

    data = FakeData.generate(threads_per_repo, seed=1)
    threads = data.all_threads()
    issues_prs = [t for t in threads if t["_kind"] != "discussion"]
    comments = sum(data.comment_count(t) for t in threads)
    fake = FakeGitHub()
    await fake.start()
    fake.graphql_handler = FakeGraphQL(data, SCHEMA)
    add_rest_routes(fake, data)
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite+aiosqlite:///{tmp}/bench.db"
        await asyncio.to_thread(migrate.upgrade, url)
        settings = Settings.from_env({}, database_url=url, api_url=fake.url, token=fake.user_token)
        ctx = AppContext.create(settings)
        ctx.github = GitHubClient(settings, sleep=no_sleep)
        try:
            def graphql_calls() -> int:
                return len(fake.requests("POST", r"^/graphql$"))

            t0 = time.perf_counter()
            stats = await sync(ctx, sleep=no_sleep)
            backfill_s = time.perf_counter() - t0
            backfill = graphql_calls()

            newest = max(t["updatedAt"] for t in threads)
            touched = sorted(threads, key=lambda t: t["databaseId"])[:: max(1, len(threads) // changed)][:changed]
            for t in touched:
                data.touch(t["_repo"], t["_kind"], t["number"], new_comments=1)
            t0 = time.perf_counter()
            await sync(ctx, sleep=no_sleep)
            refresh_s = time.perf_counter() - t0
            refresh = graphql_calls() - backfill

            before = len(fake.calls)
            t0 = time.perf_counter()
            walked = await rest_walk(ctx.github, data)
            rest_s = time.perf_counter() - t0
            rest = len(fake.calls) - before

            before = len(fake.calls)
            refreshed = await rest_walk(ctx.github, data, since=newest)
            rest_refresh = len(fake.calls) - before
        finally:
            await ctx.close()
            await fake.close()

    print(f"data: {len(threads)} threads ({len(issues_prs)} issues and pull requests, "
          f"{len(threads) - len(issues_prs)} discussions), {comments} comments/reviews across "
          f"{len(data.repos)} repositories; {changed} threads changed before the refresh")
    print(f"{'':28}{'requests':>10}{'per thread':>12}{'seconds':>10}")
    print(f"{'GraphQL backfill':28}{backfill:>10}{backfill / len(threads):>12.4f}{backfill_s:>10.1f}")
    print(f"{'GraphQL refresh':28}{refresh:>10}{'':>12}{refresh_s:>10.1f}")
    print(f"{'REST walk (issues+PRs)':28}{rest:>10}{rest / max(1, walked):>12.4f}{rest_s:>10.1f}")
    print(f"{'REST refresh (since=)':28}{rest_refresh:>10}{'':>12}{'':>10}   ({refreshed} threads re-read)")
    print(f"sync stored {stats.threads} threads, {stats.comments} comment rows, "
          f"{stats.continuations} continuations")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads-per-repo", type=int, default=300)
    parser.add_argument("--changed", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.threads_per_repo, args.changed))
