"""Writers of the threads that lock several rows at once, against the analysis (and a
webhook batch), which lock a batch's threads FOR UPDATE in id order (bot.pipeline,
bot.webhooks.events): each other writer must take the threads it writes in that order too,
or the two can each hold what the other waits for (PostgreSQL aborts one: a deadlock).
PostgreSQL, two real connections interleaved through a row lock the test holds, watched in
pg_stat_activity (no timing); the same steps run on SQLite, whose writers are serialised."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot import pipeline
from bot.github.sync import sync
from bot.store.models import Comment, Thread
from tests.fake_graphql import FakeData, graphql_context
from tests.fakegithub import no_sleep
from tests.test_ingest_locks import meet

REPO = "huggingface/trl"


def _postgres(ctx: Any) -> bool:
    return bool(ctx.engine.dialect.name == "postgresql")


async def _ids(ctx: Any) -> dict[int, int]:
    async with ctx.sessionmaker() as session:
        return {t.number: t.id for t in await session.scalars(select(Thread))}


async def test_the_sync_writing_a_page_meets_an_analysis_of_its_threads(
        settings: Any, fake_github: Any, shared_dir: Path, caplog: Any) -> None:
    """Issues #1 and #2 stored by a first sync (#2, listed first, got the lower id). The next
    sync's page lists #1 (changed last) before #2: on main it updated #1, deleted #1's
    comment gone on GitHub (held here), then updated #2; an analysis of #1 and #2 by
    another worker had locked #2 (the lower id) and waited for #1. Each waited for the other:
    PostgreSQL aborted the sync's write ("a batch of 2 threads was refused", written again
    one by one) or the analysis."""
    data = FakeData(repos={})
    for _ in (1, 2):
        data.add_thread(REPO, "issue", n_comments=2, closed=False)
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        await sync(ctx, [REPO], sleep=no_sleep)
        ids = await _ids(ctx)
        assert ids[2] < ids[1]
        data.touch(REPO, "issue", 2, new_comments=0, title="Entropy collapse, reproduced")
        gone = data.delete_comment(REPO, "issue", 1)  # #1 changed last: listed first
        async with ctx.sessionmaker() as session:
            held = await session.scalar(select(Comment.id).where(
                Comment.github_id == gone["databaseId"]))
        assert held is not None
        caplog.set_level(logging.WARNING, logger="bot.github.sync")
        # #1's gone comment held: the sync's deletion of it waits there.
        done = await meet(
            ctx, select(Comment.id).where(Comment.id == held).with_for_update(),
            lambda: sync(ctx, [REPO], sleep=no_sleep),
            lambda: pipeline.threads_changed(ctx, [pipeline.ThreadChange(REPO, 1, trigger="sync"),
                                                   pipeline.ThreadChange(REPO, 2, trigger="sync")]))
        assert [d for d in done if isinstance(d, BaseException)] == []
        assert "refused" not in caplog.text, caplog.text
        stats = done[0]
        assert not stats.failed_threads and stats.threads == 2
        async with ctx.sessionmaker() as session:
            assert await session.scalar(select(Comment.id).where(Comment.id == held)) is None
            title = await session.scalar(select(Thread.title).where(Thread.number == 2))
        assert title == "Entropy collapse, reproduced"


async def test_forgetting_a_repository_meets_an_analysis_of_its_thread(ctx: Any) -> None:
    """`repository.privatized` (or the visibility check, or the sync finding it private)
    forgets a repository while another worker analyses one of its threads. On main `forget`
    deleted the thread's analysis row (held), then its re-analysis failures (one held here),
    then went for the thread row, which the analysis held while it waited to store its
    analysis in the row `forget` had deleted: each waited for the other and PostgreSQL
    aborted one. Now `forget` locks the repository's threads in id order first."""
    from bot.store.models import AnalysisFailure
    from bot.store.privacy import forget_repository
    from tests.test_events import REPO as EREPO
    from tests.test_events import dispatch, envelope, issue

    await dispatch(ctx, "issues", envelope("opened", issue=issue(1, minute=1)))
    async with ctx.sessionmaker() as session:
        thread_id = await session.scalar(select(Thread.id))
        failure = AnalysisFailure(thread_id=thread_id, analyzer_version="0", attempts=1,
                                  error="RuntimeError")
        session.add(failure)
        await session.commit()

    async def forget() -> None:
        async with ctx.sessionmaker() as session:
            await forget_repository(session, EREPO)
            await session.commit()

    change = [pipeline.ThreadChange(EREPO, 1, trigger="sync")]
    # the failure row held: `forget` waits there, after deleting the analysis row
    done = await meet(ctx, select(AnalysisFailure.thread_id).where(
        AnalysisFailure.thread_id == thread_id).with_for_update(),
        forget, lambda: pipeline.threads_changed(ctx, change))
    assert [d for d in done if isinstance(d, BaseException)] == []
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Thread.id))) == []


async def test_a_rename_meets_an_analysis_of_its_threads(ctx: Any) -> None:
    """A repository renamed (`repository.renamed`, or the sync reading its new name) while
    another worker analyses two of its threads. #2 stored before #1 (as a sync stores a
    listing, newest first), so #2 has the lower id. On main the rename moved the threads in
    one UPDATE that locks them in the order it reads them (by number through the index on
    lower(repo), number; in the table's order, #1 first too once #2 was edited: its new row
    version lies after #1's), and the analysis locks them in id order (#2 first): each held
    one and waited for the other, PostgreSQL aborted one. The UPDATE is paused between #1
    and #2 by a trigger on #1 (it fires once the row is locked) waiting for an advisory
    lock the test holds (PostgreSQL). Now
    the rename locks the repository's rows and then its threads in id order first."""
    from sqlalchemy import text

    from bot.store.repositories import follow_rename
    from tests.test_events import REPO as EREPO
    from tests.test_events import dispatch, envelope, issue

    for number in (2, 1):
        await dispatch(ctx, "issues", envelope("opened", issue=issue(number, minute=1)))
    ids = await _ids(ctx)
    assert ids[2] < ids[1]
    renamed = EREPO + "-renamed"

    async def rename() -> None:
        async with ctx.sessionmaker() as session:
            await follow_rename(session, EREPO, renamed)
            await session.commit()

    changes = [pipeline.ThreadChange(EREPO, 1, trigger="sync"),
               pipeline.ThreadChange(EREPO, 2, trigger="sync")]
    if _postgres(ctx):
        async with ctx.engine.begin() as conn:
            # #2 edited after #1 was stored: its new row version lies after #1's (as any
            # edit of an older thread leaves it), so a scan of the table meets #1 first.
            await conn.execute(text(f"UPDATE threads SET title = title || '!' WHERE id = {ids[2]}"))
            await conn.execute(text(
                "CREATE FUNCTION pause_here() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                "PERFORM pg_advisory_xact_lock(6363); RETURN NEW; END $$"))
            await conn.execute(text(
                "CREATE TRIGGER pause_here BEFORE UPDATE ON threads FOR EACH ROW "
                f"WHEN (OLD.id = {ids[1]}) EXECUTE FUNCTION pause_here()"))
    done = await meet(ctx, text("SELECT pg_advisory_xact_lock(6363)"),
                      rename, lambda: pipeline.threads_changed(ctx, changes))
    assert [d for d in done if isinstance(d, BaseException)] == []
    async with ctx.sessionmaker() as session:
        assert sorted(await session.scalars(select(Thread.repo))) == [renamed, renamed]


async def _rename_meets_reception(ctx: Any, name: str, renamed: str, thread_id: int) -> list[Any]:
    """The repository renamed (as the `repository.renamed` handler moves it) while the nightly
    reception check runs. On PostgreSQL the thread is held so the rename waits there holding
    the repository's row, and the check starts against it; on SQLite the two run one after
    the other. What each returned or raised."""
    from bot.speaking.reception import refresh_reception
    from bot.store.models import Repository
    from bot.store.repositories import follow_rename

    async def rename() -> None:
        async with ctx.sessionmaker() as session:
            row = await session.scalar(select(Repository))
            assert row is not None
            await follow_rename(session, name, renamed)
            row.full_name = renamed
            await session.commit()

    return await meet(ctx, select(Thread.id).where(Thread.id == thread_id).with_for_update(),
                      rename, lambda: refresh_reception(ctx))


async def _disliked_thread(ctx: Any, data: Any, name: str) -> int:
    """Repository `name` tracked, its issue #1 stored, and our comment on it with one 👍 and
    two 👎 (what the reception check pauses on); the thread's id."""
    from tests.test_reception import _post, _repos

    await _repos(ctx, name)
    async with ctx.sessionmaker() as session:
        thread = Thread(repo=name, number=1, kind="issue", title="Entropy collapse")
        session.add(thread)
        await session.commit()
        thread_id = thread.id
    await _post(ctx, data, name, 1, up=1, down=2)
    return thread_id


async def test_the_reception_check_pausing_a_repository_meets_its_rename(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """The nightly reception check reads the reactions to the app's comments, stores them on
    their actions and pauses a repository whose comments were disliked, while the repository
    is renamed (`repository.renamed`). The check wrote the actions and then the repository's
    row in one transaction; a rename locks the repository's row, its threads (one held
    here), then moves its actions (the order of a batch, which takes its repositories
    first): each held what the other waited for and PostgreSQL aborted one. (On main the
    rename took the repository's row last and this order passed; a batch moving a
    transferred thread's actions under its repository's FOR SHARE lock met the check so.)
    Now the actions are committed before the pause is decided."""
    from bot.store.models import Action, Repository

    name, renamed = "c/disliked", "c/liked-better"
    data = FakeData()
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        thread_id = await _disliked_thread(ctx, data, name)

        done = await _rename_meets_reception(ctx, name, renamed, thread_id)
        assert [d for d in done if isinstance(d, BaseException)] == []
        async with ctx.sessionmaker() as session:
            repo = await session.scalar(select(Repository))
            action = await session.scalar(select(Action))
        assert repo is not None and repo.full_name == renamed and repo.comments_paused
        assert action is not None and action.repo == renamed and action.reactions_down == 2


async def test_the_syncs_comment_check_meets_a_batch_editing_the_same_comments(
        sync_ctx: Any, fake_github: Any, schema_path: Path, caplog: Any) -> None:
    """Two replies of a stored issue edited on GitHub; the nightly sync's comment check
    (`_hidden_chunk`, which sync62's rotation now runs over every older comment too) writes
    the two edits newest first, without their thread's lock (locks63 left it); a webhook
    batch of the same two edits locks the thread and writes the older first (id order).
    Here the newer reply is held: the check waits for it, the batch takes the older one and
    waits for the newer. On main each then held what the other waited for: PostgreSQL
    aborted one (here the batch: DeadlockDetected, its deliveries retried by the worker;
    the rotation makes such meetings nightly on busy repositories)."""
    import uuid

    from gidgethub import sansio

    from bot.webhooks import events
    from tests.test_events import comment, envelope, issue
    from tests.test_sync_hidden import SLIME, issue_with_reply, run, world

    data = world(schema_path, fake_github, days_ago=3)
    thread, replies = issue_with_reply(data, replies=2)
    await run(sync_ctx)

    def now(minutes: int) -> str:
        return (datetime.now(UTC) + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")

    for k, reply in enumerate(replies):
        reply.update(body=f"Edited on GitHub: it was the tokenizer ({k}).", updatedAt=now(-5))
    async with sync_ctx.sessionmaker() as session:
        stored = {c.github_id: c for c in await session.scalars(select(Comment))}
    older, newer = sorted(replies, key=lambda r: stored[r["databaseId"]].id)
    assert stored[older["databaseId"]].created_at < stored[newer["databaseId"]].created_at
    numbers = {r["databaseId"]: thread["number"] for r in replies}
    batch = [sansio.Event(envelope(
        "edited", repo=SLIME, issue=issue(numbers[r["databaseId"]], minute=50, node_id=thread["id"]),
        comment=comment(r["databaseId"], f"Edited by webhook ({r['databaseId']}).",
                        updated_at=now(-1), node_id=r["id"],
                        created_at=r["createdAt"]),
        changes={"body": {"from": "…"}}), event="issue_comment", delivery_id=str(uuid.uuid4()))
        for r in (older, newer)]
    held = stored[newer["databaseId"]].id
    # A running worker has written the repository's row before (its `seen`): the batch
    # does not write it again.
    first = older["databaseId"]
    assert await events.handle_batch([sansio.Event(envelope(
        "edited", repo=SLIME, issue=issue(numbers[first], minute=40, node_id=thread["id"]),
        comment=comment(first, "Edited by an earlier webhook.", updated_at=now(-10),
                        node_id=older["id"], created_at=older["createdAt"]),
        changes={"body": {"from": "…"}}), event="issue_comment",
        delivery_id=str(uuid.uuid4()))], sync_ctx) == [None]
    caplog.set_level(logging.WARNING)
    done = await meet(sync_ctx, select(Comment.id).where(Comment.id == held).with_for_update(),
                      lambda: run(sync_ctx), lambda: events.handle_batch(batch, sync_ctx))
    assert [d for d in done if isinstance(d, BaseException)] == [], done
    stats, outcomes = done
    assert stats.hidden_edited == 2
    assert stats.failed_threads == [] and outcomes == [None, None], (stats.failed_threads, outcomes)
    assert "deadlock" not in caplog.text.lower(), caplog.text


async def test_the_reception_check_marking_a_comment_gone_with_its_issue_meets_a_rename(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """As above, but one of the repository's comments was counted deleted on an earlier night
    and its issue's deletion has been handled since (its grave): the pause check marks it
    gone with its issue (left63's second look at the graves, in the pause loop) and pauses
    the repository in the same transaction, which locks63 had made write the repository's
    row only. On main the check held that action and waited for the row the rename held,
    the rename waited for the action: PostgreSQL aborted one."""
    from sqlalchemy import update

    from bot.speaking.reception import THREAD_DELETED
    from bot.store.models import Action, Repository
    from bot.store.threads import bury, thread_grave
    from tests.test_reception import _post

    name, renamed = "c/disliked", "c/liked-better"
    data = FakeData()
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        thread_id = await _disliked_thread(ctx, data, name)
        await _post(ctx, data, name, 2, deleted=True)
        async with ctx.sessionmaker() as session:  # counted deleted on an earlier night
            await session.execute(update(Action).where(Action.number == 2)
                                  .values(comment_deleted=True))
            await bury(session, thread_grave(name, 2, "issue"))  # then its issue's deletion
            await session.commit()

        done = await _rename_meets_reception(ctx, name, renamed, thread_id)
        assert [d for d in done if isinstance(d, BaseException)] == [], done
        async with ctx.sessionmaker() as session:
            repo = await session.scalar(select(Repository))
            gone = await session.scalar(select(Action).where(Action.number == 2))
        assert repo is not None and repo.full_name == renamed and repo.comments_paused
        assert gone is not None and gone.repo == renamed
        assert (gone.details or {}).get(THREAD_DELETED)
