"""The sync's writes, on SQLite and PostgreSQL, GitHub through the fake server: one thread
the database refuses does not cost the others, and what it stores is counted once."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import select, text

from bot.context import AppContext
from bot.github.sync import sync
from bot.store.models import Comment, Thread
from bot.store.threads import load_thread_record
from tests.fakegithub import no_sleep
from tests.test_sync import world  # noqa: F401 - a fixture

REPO = "huggingface/trl"


async def _refuse(ctx: AppContext, table: str, number: int) -> None:
    """A trigger refusing the rows of thread `number` in `table` (threads or comments): what a
    constraint, a value the database will not store or a full disk does to one thread."""
    which = f"NEW.number = {number}" if table == "threads" else (
        f"(SELECT number FROM threads WHERE id = NEW.thread_id) = {number}")
    engine = ctx.engine
    async with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            await conn.execute(text(f"CREATE TRIGGER refuse_one BEFORE INSERT ON {table} WHEN {which} "
                                    "BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END"))
        else:
            await conn.execute(text(
                "CREATE FUNCTION refuse_one() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF {which} THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; "
                "RETURN NEW; END $$"))
            await conn.execute(text(f"CREATE TRIGGER refuse_one BEFORE INSERT ON {table} "
                                    "FOR EACH ROW EXECUTE FUNCTION refuse_one()"))


async def _allow(ctx: AppContext, table: str) -> None:
    async with ctx.engine.begin() as conn:
        await conn.execute(text(f"DROP TRIGGER refuse_one{'' if ctx.engine.dialect.name == 'sqlite' else ' ON ' + table}"))


@pytest.mark.parametrize("table", ["threads", "comments"])
async def test_one_thread_the_database_refuses_does_not_stop_the_sync(
        sync_ctx: AppContext, fake_github: Any, world: Any, table: str) -> None:  # noqa: F811
    """The database refusing one thread's rows (its thread row, or its comments) rolled back
    the whole batch, up to a hundred threads, and ended the sync with the error: nothing of
    that batch or after it was stored. The thread is recorded in `failed_threads`, the others
    are stored, and the next run stores it (the mark was not moved past it)."""
    data, _ = world
    trl = [t for t in data.all_threads() if t["_repo"] == REPO]
    bad = next(t for t in trl[len(trl) // 2:] if t["_comments"])
    await _refuse(sync_ctx, table, bad["number"])
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert [f["thread"] for f in stats.failed_threads] == [f"{REPO}#{bad['number']}"]
    assert "refused by a test trigger" in stats.failed_threads[0]["error"]
    assert not stats.failed_streams
    async with sync_ctx.sessionmaker() as session:
        stored = set(await session.scalars(select(Thread.number)))
        for t in trl[::7]:
            if t is not bad:
                record = await load_thread_record(session, REPO, t["number"])
                assert record is not None and len(record["comments"]) == data.comment_count(t)
        assert await session.scalar(select(Thread).where(Thread.number == bad["number"])) is None
    assert stored == {t["number"] for t in trl} - {bad["number"]}
    assert stats.threads == len(trl) - 1

    await _allow(sync_ctx, table)
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert not stats.failed_threads
    async with sync_ctx.sessionmaker() as session:
        record = await load_thread_record(session, REPO, bad["number"])
        assert record is not None and len(record["comments"]) == data.comment_count(bad)
        assert await session.scalar(select(Thread.id).where(Thread.number == bad["number"]))
        total = len(list(await session.scalars(select(Comment.id))))
    assert total == sum(data.comment_count(t) for t in trl)


OLD, NEW = "Codertocat/Hello-World", "Codertocat/Hello-Universe"


@pytest.mark.parametrize("asked", [NEW, OLD])
async def test_a_thread_stored_under_a_former_name_is_one_thread_after_a_sync(
        sync_ctx: AppContext, fake_github: Any, schema_path: Any, shared_dir: Any,  # noqa: F811
        asked: str) -> None:
    """Webhooks stored Codertocat/Hello-World#1; the repository was renamed to Hello-Universe
    with no event handled for it (the app's events off, or the sync run first); `rltracker
    sync --repo` under either name (GitHub resolves the former one) stored the same issue a
    second time, under its new name, in a second repository row. Every later delivery then
    kept writing under the old name (the new one was taken by the sync's row), so the thread
    was split for good and counted twice in the study, the lists and the exports. Now the
    sync reads the repository's id and current name, and what is stored under a former name
    of it moves to the current one, a thread stored under both becoming one."""
    import json

    from bot.site.data import count_threads
    from bot.store.models import Repository
    from tests.fake_graphql import FakeData, FakeGraphQL
    from tests.test_events import dispatch
    from tests.test_repository_rename import _renamed

    fixtures = shared_dir / "fixtures" / "webhooks"
    opened = json.loads((fixtures / "issues" / "opened.json").read_text())
    comment = json.loads((fixtures / "issue_comment" / "created.json").read_text())
    assert opened["repository"]["full_name"] == OLD and opened["issue"]["number"] == 1
    await dispatch(sync_ctx, "issues", opened)
    await dispatch(sync_ctx, "issue_comment", comment)

    data = FakeData()
    issue = data.add_thread(NEW, "issue", n_comments=2, closed=False)
    assert issue["number"] == 1
    data.repo_ids[NEW] = opened["repository"]["id"]
    data.repo_updated[NEW] = "2019-05-15T16:00:00Z"  # the rename
    data.renamed[OLD.lower()] = NEW
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    stats = await sync(sync_ctx, [asked], sleep=no_sleep)
    assert not stats.failed_streams and not stats.failed_threads

    async def state() -> tuple[list[tuple[str, int]], list[tuple[str, int | None]], int]:
        async with sync_ctx.sessionmaker() as session:
            threads = sorted((t.repo, t.number) for t in await session.scalars(select(Thread)))
            repos = sorted((r.full_name, r.github_id) for r in await session.scalars(select(Repository)))
            shown = await count_threads(session)
        return threads, repos, shown

    repo_id = opened["repository"]["id"]
    assert await state() == ([(NEW, 1)], [(NEW, repo_id)], 1)
    async with sync_ctx.sessionmaker() as session:
        record = await load_thread_record(session, NEW, 1)
    # GitHub's comments (the webhook's, not on this made-up GitHub, is deleted as deleted there)
    assert record is not None and len(record["comments"]) == data.comment_count(issue) == 2

    # the next delivery, under the new name, lands in the same thread
    await dispatch(sync_ctx, "issue_comment", _renamed(comment, comment_id=9001, minute=1))
    assert await state() == ([(NEW, 1)], [(NEW, repo_id)], 1)
    async with sync_ctx.sessionmaker() as session:
        record = await load_thread_record(session, NEW, 1)
    assert record is not None and len(record["comments"]) == 3


async def test_follow_rename_makes_a_thread_stored_under_both_names_one(ctx: AppContext) -> None:  # noqa: F811
    """follow_rename left a thread stored under both names where it was ("a row whose place
    under `new` is taken already stays"): the old one went on counting beside the new one.
    It is merged: comments of both, the later version's fields, a mute on either kept."""
    from bot.store.repositories import follow_rename
    from bot.store.threads import upsert_comment, upsert_thread

    def rec(repo: str, title: str, updated: str) -> dict[str, Any]:
        return {"repo": repo, "number": 1, "kind": "issue", "title": title, "body": "b",
                "state": "open", "created_at": "2025-01-01T00:00:00Z", "updated_at": updated}

    async with ctx.sessionmaker() as session:
        old = await upsert_thread(session, rec(OLD, "later title", "2025-01-05T00:00:00Z"))
        old.muted = True
        new = await upsert_thread(session, rec(NEW, "earlier title", "2025-01-02T00:00:00Z"))
        await upsert_comment(session, old, {"kind": "comment", "github_id": 1, "body": "a",
                                            "created_at": "2025-01-03T00:00:00Z"})
        await upsert_comment(session, new, {"kind": "comment", "github_id": 2, "body": "b",
                                            "created_at": "2025-01-04T00:00:00Z"})
        await session.commit()
    async with ctx.sessionmaker() as session:
        await follow_rename(session, OLD, NEW)
        await session.commit()
    async with ctx.sessionmaker() as session:
        threads = list(await session.scalars(select(Thread)))
        record = await load_thread_record(session, NEW, 1)
    assert [(t.repo, t.number, t.muted) for t in threads] == [(NEW, 1, True)]
    assert record is not None and record["title"] == "later title"
    assert [c["body"] for c in record["comments"]] == ["a", "b"]


async def test_a_thread_gone_from_github_mid_sync_keeps_its_stored_comments(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:  # noqa: F811
    """A long issue updated, then transferred to another repository (or deleted) between the
    refresh's first request and the continuation asking for its comments 41+: GitHub answers
    that `node(id:)` with null (NOT_FOUND). The thread was written with the comments of its
    first page and every stored comment beyond them deleted as deleted on GitHub: 250
    comments became 40. What the answer did not show is kept (the thread is incomplete)."""
    data, responder = world
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    long = next(t for t in data.repos[REPO]["issue"] if len(t["_comments"]) > 100)
    before = data.comment_count(long)
    data.touch(REPO, "issue", long["number"], title="retitled")
    answered: list[int] = []

    def handler(query: str, variables: dict[str, Any]) -> Any:
        answer = responder(query, variables)
        answered.append(1)
        if len(answered) == 1:
            data.nodes.pop(long["id"])  # gone from here after the first answer
        return answer

    fake_github.graphql_handler = handler
    await sync(sync_ctx, [REPO], sleep=no_sleep)
    async with sync_ctx.sessionmaker() as session:
        record = await load_thread_record(session, REPO, long["number"])
    assert record is not None and record["title"] == "retitled"
    assert len(record["comments"]) == before


async def test_a_tracked_framework_renamed_beyond_the_catalog_stays_under_its_catalog_name(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:  # noqa: F811
    """GitHub calls a tracked framework by a name the catalog does not list yet: its threads
    stay under the catalog's name (moved to a name no framework has, they left every
    framework page and count) until the catalog is told."""
    data, _ = world
    data.repos["huggingface/trl-next"] = data.repos.pop(REPO)
    data.renamed[REPO] = "huggingface/trl-next"
    data.repo_ids["huggingface/trl-next"] = 4242
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert stats.repos == {REPO: len([t for k in data.repos["huggingface/trl-next"].values() for t in k])}
    async with sync_ctx.sessionmaker() as session:
        assert set(await session.scalars(select(Thread.repo))) == {REPO}


async def test_a_nul_character_from_github_is_stored_on_both_databases(
        sync_ctx: AppContext, fake_github: Any, world: Any) -> None:  # noqa: F811
    """GitHub keeps a U+0000 pasted into a body (a binary log); PostgreSQL text cannot hold
    one, so on PostgreSQL the thread was refused (the whole batch, and the sync, before
    failed threads were recorded; then refused every night, its window held open), while
    SQLite stored it. Both store it as U+FFFD now, the same record on both."""
    data, _ = world
    issue = data.add_thread(REPO, "issue", n_comments=1, closed=False, body="loss\x00nan")
    issue["title"] = "title\x00x"
    issue["_comments"][0]["body"] = "see\x00log"
    stats = await sync(sync_ctx, [REPO], sleep=no_sleep)
    assert not stats.failed_threads
    async with sync_ctx.sessionmaker() as session:
        record = await load_thread_record(session, REPO, issue["number"])
    assert record is not None
    assert (record["title"], record["body"]) == ("title\ufffdx", "loss\ufffdnan")
    assert [c["body"] for c in record["comments"]] == ["see\ufffdlog"]
