"""Threads deleted or transferred away on GitHub while no webhook told the app (the nightly
sync reads all seven frameworks; webhooks come only where the app is installed).

The sync asks GitHub about each stored thread its listing did not return
(`repository.issueOrPullRequest(number)` / `discussion(number)`): NOT_FOUND deletes it as
`issues.deleted` does, an answer from another repository moves it as `issues.transferred`
does. Absence alone deletes nothing: a listing cut short, or a check GitHub refused
(FORBIDDEN) or failed, leaves the stored thread as it is (and says so).

Through the fake GitHub GraphQL server (GitHub's real schema) over HTTP, on SQLite and
PostgreSQL, with a few short threads the tests make."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import func, select

from bot.context import AppContext
from bot.github.sync import SyncError, sync
from bot.pipeline import sync_changed
from bot.store.models import Analysis, Comment, Deletion, Thread
from bot.store.threads import load_thread_record
from tests.fake_graphql import ActingOnCall, FakeData, FakeGraphQL, paging_by
from tests.fakegithub import no_sleep

REPO = "huggingface/trl"
ELSEWHERE = "THUDM/slime"


@pytest.fixture
def small(fake_github: Any, schema_path: Path) -> tuple[FakeData, FakeGraphQL]:
    """Two repositories of a few short threads each (issues, pull requests, discussions)."""
    data = FakeData()
    for repo in (REPO, ELSEWHERE):
        for kind in ("issue", "issue", "pull_request", "discussion", "issue", "discussion"):
            data.add_thread(repo, kind, n_comments=2, closed=False,
                            body="Reward stays flat after step 200 with lr=1e-6.")
    responder = FakeGraphQL(data, schema_path)
    fake_github.graphql_handler = responder
    return data, responder


@pytest.fixture
async def client(sync_ctx: AppContext) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(sync_ctx, worker=False))) as c:
        yield c


async def stored(ctx: AppContext, repo: str, number: int) -> dict[str, Any] | None:
    async with ctx.sessionmaker() as session:
        return await load_thread_record(session, repo, number)


async def numbers(ctx: AppContext, repo: str) -> set[int]:
    async with ctx.sessionmaker() as session:
        return set(await session.scalars(select(Thread.number).where(
            func.lower(Thread.repo) == repo.lower())))


async def exported(client: TestClient) -> set[tuple[str, int]]:
    body = await (await client.get("/api/export.json")).json()
    return {(t["repo"], t["number"]) for t in body["threads"]}


def first(data: FakeData, repo: str, kind: str) -> dict[str, Any]:
    return data.repos[repo][kind][0]


async def test_a_thread_deleted_on_github_leaves_after_a_full_sync(
        sync_ctx: AppContext, small: Any, client: TestClient) -> None:
    """On main: `--full` deleted nothing it did not see; the deleted issue kept its page and
    stayed in the exports (and the study tables) for good."""
    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    issue, disc = first(data, REPO, "issue"), first(data, REPO, "discussion")
    before = await numbers(sync_ctx, REPO)
    assert {issue["number"], disc["number"]} <= before
    assert (await client.get(f"/threads/{REPO}/{issue['number']}")).status == 200
    assert (REPO, issue["number"]) in await exported(client)

    data.delete_thread(REPO, "issue", issue["number"])
    data.delete_thread(REPO, "discussion", disc["number"])
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep,
                       on_changed=partial(sync_changed, sync_ctx))

    assert await numbers(sync_ctx, REPO) == before - {issue["number"], disc["number"]}
    # the page says it left GitHub's place (410), no longer "No such thread" (pages61)
    assert (await client.get(f"/threads/{REPO}/{issue['number']}")).status == 410
    assert (await client.get(f"/threads/{REPO}/{disc['number']}")).status == 410
    assert (REPO, issue["number"]) not in await exported(client)
    assert stats.deleted == 2 and not stats.failed_threads
    async with sync_ctx.sessionmaker() as session:
        # its comments and analysis went with it; the deletion is noted as a webhook notes it
        assert await session.scalar(select(func.count()).select_from(Comment).join(Thread).where(
            Thread.number == issue["number"], func.lower(Thread.repo) == REPO.lower())) == 0
        analysed = await session.scalar(select(func.count()).select_from(Analysis))
        assert analysed == len(before) - 2
        keys = set(await session.scalars(select(Deletion.key)))
    assert f"thread:issue:{REPO.lower()}#{issue['number']}" in keys
    assert f"thread:discussion:{REPO.lower()}#{disc['number']}" in keys
    # what is still on GitHub is all there, and the next full sync deletes nothing more
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert stats.deleted == 0 and await numbers(sync_ctx, REPO) == before - {
        issue["number"], disc["number"]}


async def test_a_thread_deleted_on_github_leaves_after_a_refresh(
        sync_ctx: AppContext, small: Any) -> None:
    """The nightly refresh reads only what changed since its mark: GitHub counting fewer
    threads of a kind than are stored is what makes it ask about the ones it did not list."""
    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    issue = first(data, REPO, "issue")
    data.delete_thread(REPO, "issue", issue["number"])
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)  # a refresh
    assert await stored(sync_ctx, REPO, issue["number"]) is None
    assert stats.deleted == 1
    # nothing gone: the refresh asks about nothing (one request for the three kinds)
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert stats.requests == 1 and stats.deleted == 0


async def test_a_thread_transferred_away_is_moved(
        sync_ctx: AppContext, small: Any, client: TestClient) -> None:
    """On main: an issue transferred to another repository stayed counted under the old one,
    its page and export row under the old name; now it moves, comments and all, as the
    `issues.transferred` delivery moves it."""
    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    issue = first(data, REPO, "issue")
    old_number = issue["number"]
    comments = len((await stored(sync_ctx, REPO, old_number))["comments"])
    data.transfer(REPO, "issue", old_number, ELSEWHERE)
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert stats.moved == 1 and stats.deleted == 0
    assert await stored(sync_ctx, REPO, old_number) is None
    moved = await stored(sync_ctx, ELSEWHERE, issue["number"])
    assert moved is not None and moved["title"] == issue["title"]
    assert len(moved["comments"]) == comments == 2
    # The old address is the thread's feed entry id (kept through the transfer, left66): it
    # answers with the thread at its new place (a 410 "left GitHub's place" before).
    old_page = await client.get(f"/threads/{REPO}/{old_number}")
    assert old_page.status == 200 and ELSEWHERE in await old_page.text()
    assert (await client.get(f"/threads/{ELSEWHERE}/{issue['number']}")).status == 200
    async with sync_ctx.sessionmaker() as session:
        keys = set(await session.scalars(select(Deletion.key)))
    assert f"thread:issue:{REPO.lower()}#{old_number}" in keys


async def test_a_thread_transferred_to_a_repository_also_synced_is_one_thread(
        sync_ctx: AppContext, small: Any) -> None:
    """Both repositories synced: the new place, already stored by its own listing, and the
    old one become one thread there."""
    data, _ = small
    await sync(sync_ctx, [REPO, ELSEWHERE], sleep=no_sleep)
    issue = first(data, REPO, "issue")
    old_number = issue["number"]
    data.transfer(REPO, "issue", old_number, ELSEWHERE)
    before = await numbers(sync_ctx, ELSEWHERE)
    await sync(sync_ctx, [REPO, ELSEWHERE], sleep=no_sleep)  # a refresh
    assert await stored(sync_ctx, REPO, old_number) is None
    assert await numbers(sync_ctx, ELSEWHERE) == before | {issue["number"]}
    moved = await stored(sync_ctx, ELSEWHERE, issue["number"])
    assert moved is not None and len(moved["comments"]) == 2


async def test_a_thread_transferred_to_a_private_repository_leaves(
        sync_ctx: AppContext, small: Any) -> None:
    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    issue = first(data, REPO, "issue")
    old_number = issue["number"]
    data.transfer(REPO, "issue", old_number, "acme/internal")
    data.private.add("acme/internal")
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await stored(sync_ctx, REPO, old_number) is None
    assert await numbers(sync_ctx, "acme/internal") == set()
    assert stats.deleted == 1


async def test_a_listing_cut_short_deletes_nothing(
        sync_ctx: AppContext, small: Any) -> None:
    """A full sync that stops before the end of a listing (GitHub failing, the request budget)
    has not seen what it did not read: nothing is deleted. (A guard: main deleted nothing.)"""
    data, responder = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    before = await numbers(sync_ctx, REPO)
    issue = first(data, REPO, "issue")
    data.delete_thread(REPO, "issue", issue["number"])
    responder.inject_errors(4)  # every attempt of the first request
    with pytest.raises(SyncError):
        await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await numbers(sync_ctx, REPO) == before
    with pytest.raises(SyncError):
        await sync(sync_ctx, [REPO], full=True, sleep=no_sleep, max_requests=1)
    assert await numbers(sync_ctx, REPO) == before


async def test_a_listing_paged_and_cut_short_deletes_nothing(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """A listing of several pages whose last page fails: the threads of the pages read are
    seen, the others are not, and none of those is deleted."""
    data = FakeData()
    for _ in range(30):
        data.add_thread(REPO, "issue", n_comments=0, closed=False, body="Loss is nan at step 3.")
    responder = FakeGraphQL(data, schema_path)
    fake_github.graphql_handler = responder
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    before = await numbers(sync_ctx, REPO)
    assert len(before) == 30
    calls = 0
    paged = paging_by(responder, 10)

    def cut(query: str, variables: dict[str, Any]) -> Any:
        nonlocal calls
        calls += 1
        if calls > 1 and "issues(" in query:
            return {"data": None, "errors": [{"type": "SERVICE_UNAVAILABLE", "message": "timeout"}]}
        return paged(query, variables)

    fake_github.graphql_handler = cut
    with pytest.raises(SyncError):
        await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await numbers(sync_ctx, REPO) == before


async def test_a_check_github_refuses_deletes_nothing_and_is_listed(
        sync_ctx: AppContext, small: Any) -> None:
    """GitHub answering FORBIDDEN (or any error but NOT_FOUND) about a stored thread its
    listing did not return: kept, and listed in failed_threads (the command exits 2)."""
    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    issue = first(data, REPO, "issue")
    data.delete_thread(REPO, "issue", issue["number"])
    data.forbidden.add((REPO.lower(), issue["number"]))
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await stored(sync_ctx, REPO, issue["number"]) is not None
    assert stats.deleted == 0
    assert [f["thread"] for f in stats.failed_threads] == [f"{REPO}#{issue['number']}"]
    assert "FORBIDDEN" in stats.failed_threads[0]["error"]


async def test_a_check_github_fails_deletes_nothing_and_is_listed(
        sync_ctx: AppContext, small: Any, fake_github: Any) -> None:
    """The check's requests failing (errors without data, every attempt): nothing is deleted,
    the stream is listed, and the sync goes on."""
    data, responder = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    issue = first(data, REPO, "issue")
    data.delete_thread(REPO, "issue", issue["number"])

    def failing(query: str, variables: dict[str, Any]) -> Any:
        if "issueOrPullRequest" in query:
            return {"data": None, "errors": [{"type": "SERVICE_UNAVAILABLE", "message": "timeout"}]}
        return responder(query, variables)

    fake_github.graphql_handler = failing
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await stored(sync_ctx, REPO, issue["number"]) is not None
    assert stats.deleted == 0 and stats.failed_threads
    assert "timeout" in stats.failed_threads[0]["error"]


async def test_a_thread_updated_during_the_full_sync_is_kept(
        sync_ctx: AppContext, small: Any, fake_github: Any) -> None:
    """A thread updated while a full sync pages moves ahead of its cursor: the listing does
    not return it, GitHub still has it, and it stays."""
    data, responder = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    before = await numbers(sync_ctx, REPO)
    oldest = min(data.repos[REPO]["issue"], key=lambda t: t["updatedAt"])
    # one thread a page; once the first page is answered the oldest thread is updated
    fake_github.graphql_handler = ActingOnCall(
        paging_by(responder, 1), 1,
        lambda: data.touch(REPO, "issue", oldest["number"], new_comments=0))
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await numbers(sync_ctx, REPO) == before
    assert stats.deleted == 0 and stats.checked >= 1


async def test_threads_hidden_by_a_feature_turned_off_are_not_deleted(
        sync_ctx: AppContext, small: Any) -> None:
    """Discussions (or issues) turned off in a repository: GitHub lists none and answers
    NOT_FOUND by number, but they come back when the feature is turned on again. Deleted,
    they were noted as deleted too, and never stored again: nothing is deleted, it is said."""
    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    before = await numbers(sync_ctx, REPO)
    data.disabled.add((REPO, "discussion"))
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await numbers(sync_ctx, REPO) == before
    assert stats.deleted == 0
    assert any("discussions are turned off" in f["error"] for f in stats.failed_threads)
    data.disabled.clear()
    stats = await sync(sync_ctx, [REPO], full=True, sleep=no_sleep)
    assert await numbers(sync_ctx, REPO) == before and not stats.failed_threads


async def test_a_deletion_on_a_night_the_database_refused_a_new_thread_is_seen(
        sync_ctx: AppContext, small: Any) -> None:
    """On main: the refresh asks about unlisted threads only when GitHub counts fewer than are
    stored; a new issue the database refused (not stored) and an issue deleted on GitHub the
    same night left the counts equal, and the deleted one stayed until a `--full` sync (every
    night while the new one is refused). The threads the pass read but could not store count
    as GitHub's beside the stored ones."""
    from tests.test_sync_writes import _allow, _refuse

    data, _ = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    before = await numbers(sync_ctx, REPO)
    issue = first(data, REPO, "issue")
    new = data.add_thread(REPO, "issue", n_comments=1, closed=False, body="OOM at step 10.")
    data.delete_thread(REPO, "issue", issue["number"])
    await _refuse(sync_ctx, "threads", new["number"])
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)  # a refresh
    assert [f["thread"] for f in stats.failed_threads] == [f"{REPO}#{new['number']}"]
    assert stats.deleted == 1
    assert await numbers(sync_ctx, REPO) == before - {issue["number"]}
    # the next night, the new one still refused: nothing more to delete, the rest asked no more
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert stats.deleted == 0 and stats.checked == 0
    await _allow(sync_ctx, "threads")
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert not stats.failed_threads
    assert await numbers(sync_ctx, REPO) == (before - {issue["number"]}) | {new["number"]}


async def test_a_deletion_on_a_night_github_answered_a_new_thread_null_is_seen(
        sync_ctx: AppContext, small: Any, schema_path: Path, fake_github: Any) -> None:
    """A new issue GitHub answered null inside the refresh's page (FORBIDDEN on it: its number
    unknown, not stored) and an issue deleted on GitHub the same night left GitHub's count
    equal to the stored one: the unlisted threads were not asked about and the deleted issue
    stayed until a `--full` sync. A thread answered null counts beside the stored ones, as
    one the database refused does."""
    from tests.test_sync_partial import NullThread

    data, responder = small
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    before = await numbers(sync_ctx, REPO)
    issue = first(data, REPO, "issue")
    new = data.add_thread(REPO, "issue", n_comments=1, closed=False, body="OOM at step 10.")
    data.delete_thread(REPO, "issue", issue["number"])
    nulled = NullThread(responder, new["number"])
    nulled.times = 1
    fake_github.graphql_handler = nulled
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)  # a refresh
    assert nulled.nulled == 1
    assert [f["thread"] for f in stats.failed_threads] == [
        f"{REPO} issues (a thread GitHub answered null)"], stats.failed_threads
    assert stats.deleted == 1
    assert await numbers(sync_ctx, REPO) == before - {issue["number"]}
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)  # GitHub answers it again
    assert not stats.failed_threads and stats.deleted == 0
    assert await numbers(sync_ctx, REPO) == (before - {issue["number"]}) | {new["number"]}
