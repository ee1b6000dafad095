"""The study remembers each proposal's proposed methods between recomputes
(bot.site.study.ProposedMemo, studyperf68): a recompute after one thread is stored runs the
rule on that thread only, and its numbers stay those of a computation from scratch after an
opening post is edited (a memo keyed by the thread alone would keep the old answer). On SQLite
and PostgreSQL, through /api/study and the store's own upsert_thread."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from bot.context import AppContext
from bot.site.study import build_study, proposed_memo
from bot.store.models import Analysis
from bot.store.threads import upsert_thread

V = "verl-project/verl"
# (number, title, opening post, linked catalog methods): the title names no method, so the
# opening post decides. 801 proposes RLOO (carried: not counted) until its post is edited.
PROPOSALS = [
    (801, "[Feature] a new estimator", "Please add RLOO to the trainer.", ["rloo"]),
    (802, "Add FooPO loss", "FooPO works like GRPO but with a learned baseline.", ["grpo"]),
    (803, "Support GSPO", "GSPO is better than GRPO on MoE models.", ["grpo", "gspo"]),
]
EDITED = "A new estimator that outperforms RLOO on long rollouts."


@pytest.fixture
async def client(ctx: AppContext) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def _store(ctx: AppContext, number: int, title: str, body: str, methods: list[str]) -> None:
    async with ctx.sessionmaker() as session:
        thread = await upsert_thread(session, {"repo": V, "number": number, "kind": "issue",
                                               "state": "open", "title": title, "body": body})
        session.add(Analysis(thread_id=thread.id, analyzer_version="test", is_proposal=True,
                             review_state="open_no_reply", methods=methods,
                             result={"review": {"state": "open_no_reply"}}))
        await session.commit()


async def _from_scratch(ctx: AppContext) -> dict[str, Any]:
    async with ctx.sessionmaker() as session:
        study, _ = await build_study(session)  # no memo: every opening post read again
    return study


def _numbers(study: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in study.items() if k not in ("computed_at", "recorded_at")}


async def test_a_recompute_reads_again_only_the_thread_stored(ctx: AppContext,
                                                              client: TestClient) -> None:
    for number, title, body, methods in PROPOSALS:
        await _store(ctx, number, title, body, methods)
    first = await (await client.get("/api/study")).json()
    memo = proposed_memo(ctx)
    assert memo.runs == len(PROPOSALS)
    assert f"{V}#801" not in first["sets"]["proposals.verl.all"]
    assert _numbers(first) == _numbers(await _from_scratch(ctx))

    # The opening post of 801 is edited: RLOO becomes its comparison, so it proposes none.
    async with ctx.sessionmaker() as session:
        await upsert_thread(session, {"repo": V, "number": 801, "body": EDITED})
        await session.commit()
    edited = await (await client.get("/api/study")).json()
    assert memo.runs == len(PROPOSALS) + 1  # 801 alone
    assert f"{V}#801" in edited["sets"]["proposals.verl.all"]
    assert _numbers(edited) == _numbers(await _from_scratch(ctx))

    # A new proposal stored: the rule runs on it alone; the others are remembered.
    await _store(ctx, 804, "[Feature] another estimator", "Please add RLOO.", ["rloo"])
    added = await (await client.get("/api/study")).json()
    assert memo.runs == len(PROPOSALS) + 2
    assert len(memo.entries) == len(PROPOSALS) + 1
    assert _numbers(added) == _numbers(await _from_scratch(ctx))

    # Nothing stored: the page's cache answers, the rule does not run.
    await client.get("/study")
    assert memo.runs == len(PROPOSALS) + 2


async def test_a_new_process_reads_the_memo_the_nightly_step_kept(ctx: AppContext,
                                                                  settings) -> None:
    """The memo lived in the process only: the first /study of each process (a restart, a
    deploy, every web replica) ran the rule on every opening post again (20,000 proposals:
    about 11 CPU seconds on SQLite, docs/study.md "Review studyperf68"). The nightly step
    keeps it in the store now (site71): a new process's first /study runs the rule on none
    of them, then on the threads changed since (an edited opening post, an entry whose key
    no longer matches), with the numbers of a computation from scratch."""
    from sqlalchemy import text

    from bot.app import create_app
    from bot.site.study import refresh_study

    for number, title, body, methods in PROPOSALS:
        await _store(ctx, number, title, body, methods)
    await refresh_study(ctx)  # the nightly step, in the worker's process
    assert proposed_memo(ctx).runs == len(PROPOSALS)

    async def first_study_of_a_new_process() -> tuple[dict[str, Any], int]:
        fresh = AppContext.create(settings)
        try:
            async with TestClient(TestServer(create_app(fresh, worker=False))) as c:
                study = await (await c.get("/api/study")).json()
            return study, proposed_memo(fresh).runs
        finally:
            await fresh.close()

    study, runs = await first_study_of_a_new_process()
    assert runs == 0
    assert _numbers(study) == _numbers(await _from_scratch(ctx))

    async with ctx.sessionmaker() as session:
        await upsert_thread(session, {"repo": V, "number": 801, "body": EDITED})
        await session.execute(text(
            "UPDATE proposed_methods SET key = 'read by another analyzer' WHERE thread_id = "
            "(SELECT id FROM threads WHERE number = 803)"))
        await session.commit()
    study, runs = await first_study_of_a_new_process()
    assert runs == 2  # 801 (edited) and 803 (its kept key stale)
    assert f"{V}#801" in study["sets"]["proposals.verl.all"]
    assert _numbers(study) == _numbers(await _from_scratch(ctx))

    # The next night keeps the edited answers, and drops a thread deleted since.
    async with ctx.sessionmaker() as session:
        await session.execute(text("DELETE FROM threads WHERE number = 802"))
        await session.commit()
    await refresh_study(ctx)
    study, runs = await first_study_of_a_new_process()
    assert runs == 0
    async with ctx.sessionmaker() as session:
        kept = (await session.execute(text("SELECT count(*) FROM proposed_methods"))).scalar()
    assert kept == len(PROPOSALS) - 1


def test_0025_proposed_methods_goes_down_and_up(db_url: str) -> None:
    """Migration 0025: the kept memo, dropped on the way down (the next night makes it
    again), made again, empty, on the way up as the model declares it; a row goes with its
    thread."""
    import asyncio

    from sqlalchemy import inspect

    from bot.store import migrate
    from tests.test_migrations import _execute, _inspect, downgrade, schema_differences

    asyncio.run(_execute(db_url, "INSERT INTO threads (id, repo, number, kind, title, state, "
                                 "labels, assignees, complete, muted, stored_at) VALUES (5, 'o/r', "
                                 "1, 'issue', 't', 'open', '[]', '[]', true, false, CURRENT_TIMESTAMP)"))
    asyncio.run(_execute(db_url, "INSERT INTO proposed_methods (thread_id, key, methods) "
                                 "VALUES (5, 'k', '[\"grpo\"]')"))
    asyncio.run(_execute(db_url, "DELETE FROM threads WHERE id = 5"))
    assert asyncio.run(_execute(db_url, "SELECT count(*) FROM proposed_methods")) == [(0,)]
    downgrade(db_url, "0024")
    tables = asyncio.run(_inspect(db_url, lambda conn: set(inspect(conn).get_table_names())))
    assert "proposed_methods" not in tables and "threads" in tables
    migrate.upgrade(db_url)
    assert asyncio.run(_execute(db_url, "SELECT count(*) FROM proposed_methods")) == [(0,)]
    assert schema_differences(db_url) == []


async def test_a_thread_deleted_while_the_memo_is_made_leaves_the_kept_rows(ctx: AppContext
                                                                              ) -> None:
    """A proposal deleted between the nightly computation and the keeping of its memo: the
    store refuses its row; the step goes on (no error), the kept rows stay as they were, and
    the next night keeps the memo."""
    from sqlalchemy import text

    from bot.site.study import keep_proposed, refresh_study

    for number, title, body, methods in PROPOSALS:
        await _store(ctx, number, title, body, methods)
    memo = proposed_memo(ctx)
    async with ctx.sessionmaker() as session:
        await build_study(session, memo)
        await session.execute(text("DELETE FROM threads WHERE number = 802"))
        await session.commit()
    await keep_proposed(ctx, memo)

    async def kept() -> int:
        async with ctx.sessionmaker() as session:
            return (await session.execute(text("SELECT count(*) FROM proposed_methods"))).scalar()

    assert await kept() == 0
    await refresh_study(ctx)
    assert await kept() == len(PROPOSALS) - 1


async def test_a_memo_the_store_does_not_take_leaves_the_nights_study_recorded(
        ctx: AppContext, db_url: str) -> None:
    """Keeping the memo (site71) is a saving for the next process, the night's study record
    is what the report reads (its detected landings first seen tonight). The memo's write was
    made before the record, and a lock on `proposed_methods` not granted within lock_timeout
    (another session's: a migration, a VACUUM FULL) raised out of the step: no study record
    that night (review72). Here PostgreSQL answers the memo's insert as a lock not granted
    (55P03, a trigger raising it, the answer the app's lock_timeout gives); the night's record
    is written, and the memo is kept the next night."""
    from sqlalchemy import func, select, text

    from bot.site.study import refresh_study
    from bot.store.models import JobRun

    if not db_url.startswith("postgresql"):
        pytest.skip("a lock not granted within lock_timeout: PostgreSQL's answer (55P03)")
    for number, title, body, methods in PROPOSALS:
        await _store(ctx, number, title, body, methods)
    async with ctx.sessionmaker() as session:
        await session.execute(text(
            "CREATE FUNCTION refuse_memo() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION 'canceling statement due to lock timeout' "
            "USING ERRCODE = 'lock_not_available'; END $$"))
        await session.execute(text(
            "CREATE TRIGGER refuse_memo BEFORE INSERT ON proposed_methods "
            "FOR EACH ROW EXECUTE FUNCTION refuse_memo()"))
        await session.commit()

    counts = await refresh_study(ctx)
    assert counts["proposals"] == len(PROPOSALS)
    async with ctx.sessionmaker() as session:
        recorded = await session.scalar(select(func.count(JobRun.id)).where(JobRun.name == "study"))
        kept = await session.scalar(text("SELECT count(*) FROM proposed_methods"))
    assert (recorded, kept) == (1, 0)

    async with ctx.sessionmaker() as session:
        await session.execute(text("DROP TRIGGER refuse_memo ON proposed_methods"))
        await session.commit()
    await refresh_study(ctx)
    async with ctx.sessionmaker() as session:
        kept = await session.scalar(text("SELECT count(*) FROM proposed_methods"))
    assert kept == len(PROPOSALS)


async def test_a_memo_kept_under_another_catalog_is_read_again(ctx: AppContext,
                                                                tmp_path) -> None:
    """The kept entries were keyed by the thread's inputs and ANALYZER_VERSION only (review72):
    a catalog edit deployed without a version bump let a new process use answers read against
    the old catalog. The key holds the catalog's tag now (analyzers.papers.index_tag, the saved
    paper index's): a memo kept under the project's catalog is used by a process with the same
    catalog, and read again by one whose catalog files differ (here a copy with one edit)."""
    import shutil

    from analyzers.catalog import CATALOG_DIR
    from analyzers.papers import index_tag
    from bot.site.study import ProposedMemo, keep_proposed, refresh_study

    for number, title, body, methods in PROPOSALS:
        await _store(ctx, number, title, body, methods)
    await refresh_study(ctx)  # keeps the memo, under the project's catalog
    edited = tmp_path / "catalog"
    shutil.copytree(CATALOG_DIR, edited, ignore=shutil.ignore_patterns("__pycache__"))
    methods_yaml = edited / "methods.yaml"
    methods_yaml.write_text(methods_yaml.read_text() + "\n# an edit, no version bump\n")
    assert index_tag(edited) != index_tag()

    async def first_study(memo: ProposedMemo) -> dict[str, Any]:
        async with ctx.sessionmaker() as session:
            study, _ = await build_study(session, memo)
        return study

    same = ProposedMemo(from_store=True)
    await first_study(same)
    assert same.runs == 0  # the kept entries are used under the catalog they were read with
    other = ProposedMemo(from_store=True, catalog_tag=index_tag(edited))
    study = await first_study(other)
    assert other.runs == len(PROPOSALS)  # every entry stale under the edited catalog
    assert _numbers(study) == _numbers(await _from_scratch(ctx))
    await keep_proposed(ctx, other)  # the rows now carry the edited catalog's keys
    again = ProposedMemo(from_store=True, catalog_tag=index_tag(edited))
    await first_study(again)
    assert again.runs == 0
