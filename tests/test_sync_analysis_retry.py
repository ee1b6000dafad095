"""A thread the sync stored changed but could not analyse (the analysis raised, the database
refused its analysis row): its stored analysis is of the text before the change, carries the
current analyzer version, and the refresh's mark moved past the thread, so neither the next
refresh nor the nightly re-analysis ever analysed it again (until its next change on GitHub).

Through the fake GitHub GraphQL server, SQLite and PostgreSQL; the database refuses the
analysis row with a trigger, as it refuses a thread in tests/test_sync_writes.py."""

from __future__ import annotations

import random
from functools import partial
from pathlib import Path
from typing import Any

from sqlalchemy import select, text

from bot.context import AppContext
from bot.github.sync import sync
from bot.pipeline import sync_changed
from bot.scheduler import step_reanalyse
from bot.store.models import Analysis, Thread
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.fakegithub import no_sleep

SLIME = "THUDM/slime"


async def _refuse_analysis(ctx: AppContext, thread_id: int) -> None:
    engine = ctx.engine
    async with engine.begin() as conn:
        if engine.dialect.name == "sqlite":
            await conn.execute(text(
                f"CREATE TRIGGER refuse_analysis BEFORE UPDATE ON analyses WHEN NEW.thread_id = "
                f"{thread_id} BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END"))
        else:
            await conn.execute(text(
                "CREATE FUNCTION refuse_analysis() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.thread_id = {thread_id} THEN RAISE EXCEPTION 'refused by a test "
                "trigger'; END IF; RETURN NEW; END $$"))
            await conn.execute(text("CREATE TRIGGER refuse_analysis BEFORE UPDATE ON analyses "
                                    "FOR EACH ROW EXECUTE FUNCTION refuse_analysis()"))


async def _allow_analysis(ctx: AppContext) -> None:
    async with ctx.engine.begin() as conn:
        on = "" if ctx.engine.dialect.name == "sqlite" else " ON analyses"
        await conn.execute(text(f"DROP TRIGGER refuse_analysis{on}"))


async def _analysis(ctx: AppContext, number: int) -> tuple[int, Any]:
    async with ctx.sessionmaker() as session:
        thread = await session.scalar(select(Thread).where(Thread.number == number))
        assert thread is not None
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        return thread.id, (row.analyzed_at if row is not None else None)


async def test_a_thread_stored_but_not_analysed_is_analysed_again(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    data = FakeData(rng=random.Random(4))
    issue = data.add_thread(SLIME, "issue", n_comments=1, closed=False,
                            body="Could you add the DAPO loss from the paper?")
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    run = partial(sync, sync_ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    await run()
    thread_id, first = await _analysis(sync_ctx, issue["number"])
    assert first is not None

    await _refuse_analysis(sync_ctx, thread_id)
    issue["body"] = "CUDA out of memory at step 3 with vllm 0.8 and 8 GPUs."
    data.touch(SLIME, "issue", issue["number"], new_comments=0, title="OOM at step 3")
    stats = await run()
    assert [f["thread"] for f in stats.failed_threads] == [f"{SLIME}#{issue['number']}"]
    await _allow_analysis(sync_ctx)

    # the next night: its refresh, then the re-analysis step
    await run()
    await step_reanalyse(sync_ctx)
    _, now = await _analysis(sync_ctx, issue["number"])
    assert now is not None and now > first, "the analysis of the text before the edit stayed"
