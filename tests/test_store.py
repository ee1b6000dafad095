"""The schema comes from migrations and thread records round-trip through the store."""

from __future__ import annotations

from bot.context import AppContext
from bot.store import migrate
from bot.store.threads import load_thread_record, upsert_comment, upsert_thread


async def test_migrated_database_is_at_head(ctx: AppContext) -> None:
    assert migrate.head_revision() is not None
    assert await migrate.is_up_to_date(ctx.engine)


async def test_thread_record_round_trip(ctx: AppContext) -> None:
    record = {
        "repo": "huggingface/trl", "number": 7, "kind": "issue", "title": "Entropy collapses",
        "body": "", "author": "alice", "author_association": "", "author_is_bot": False,
        "state": "closed", "state_reason": "not_planned", "closed_by": "",
        "labels": ["bug"], "created_at": "2025-05-01T10:00:00Z", "closed_at": "2025-05-03",
    }
    async with ctx.sessionmaker() as session:
        thread = await upsert_thread(session, record)
        await upsert_comment(session, thread, {
            "github_id": 11, "kind": "comment", "author": "bob",
            "author_association": "MEMBER", "body": "Thanks", "created_at": "2025-05-02T00:00:00Z",
        })
        await session.commit()
    async with ctx.sessionmaker() as session:
        out = await load_thread_record(session, "HuggingFace/TRL", 7)
    assert out is not None
    assert out["id"] == "huggingface/trl#7"
    assert out["body"] is None and out["author_association"] is None and out["closed_by"] is None
    assert out["closed_at"] == "2025-05-03T00:00:00Z"
    assert [c["author"] for c in out["comments"]] == ["bob"]
    assert out["comments"][0]["author_association"] == "MEMBER"


async def test_pipeline_matches_the_stored_paper_pool(ctx: AppContext) -> None:
    """A paper imported into the pool links by title in the next analysis, and the pool's
    index is rebuilt only when the table changes."""
    from bot.analysis import POOL_CACHE_KEY
    from bot.pipeline import thread_changed
    from bot.store.models import Paper

    title = "Quantile Ratio Clipping for Stable Policy Optimisation of Reasoning Models"
    async with ctx.sessionmaker() as session:
        await upsert_thread(session, {
            "repo": "someone/elsewhere", "number": 3, "kind": "issue", "state": "open",
            "title": "Support this method", "body": f'Could you add "{title}"? It looks useful.',
        })
        await session.commit()
    first = await thread_changed(ctx, "someone/elsewhere", 3, trigger="sync")
    assert first is not None
    assert all(p["title"] != title for p in first["papers"])

    async with ctx.sessionmaker() as session:
        session.add(Paper(arxiv_id="2611.00001", title=title, aliases=[], source="test"))
        await session.commit()
    second = await thread_changed(ctx, "someone/elsewhere", 3, trigger="sync")
    assert second is not None
    linked = [p for p in second["papers"] if p["arxiv_id"] == "2611.00001"]
    assert linked and linked[0]["how"] == "title"
    index = ctx.extras[POOL_CACHE_KEY][1]
    await thread_changed(ctx, "someone/elsewhere", 3, trigger="sync")
    assert ctx.extras[POOL_CACHE_KEY][1] is index


async def test_paper_pool_index_is_saved_read_by_a_new_process_and_added_to(
    ctx: AppContext, _cache_dir: object
) -> None:
    """A process that starts reads the saved index of the Paper table; papers added since
    (import, fetch) are added to it, and the result equals building from all rows."""
    from pathlib import Path

    from analyzers.papers import PaperIndex
    from bot.analysis import POOL_CACHE_KEY, paper_pool
    from bot.store.models import Paper

    def rows(n: int, start: int = 0) -> list[Paper]:
        return [Paper(arxiv_id=f"2612.{i:05d}", source="test", aliases=[],
                      title=f"Tempered {w} Rollouts with Grouped {v} Baselines number {i}")
                for i in range(start, start + n)
                for w, v in [(["Sparse", "Implicit", "Latent"][i % 3], ["Verifier", "Critic"][i % 2])]]

    async def as_dicts() -> list[dict[str, object]]:
        async with ctx.sessionmaker() as session:
            return [{"arxiv_id": p.arxiv_id, "title": p.title, "aliases": list(p.aliases or []),
                     "method": p.method, "first_public": p.first_public}
                    for p in await session.scalars(select(Paper).order_by(Paper.id))]

    from sqlalchemy import select

    async with ctx.sessionmaker() as session:
        session.add_all(rows(40))
        await session.commit()
    process_one: dict[str, object] = {}
    async with ctx.sessionmaker() as session:
        first = await paper_pool(session, process_one)
    [saved] = list(Path(str(_cache_dir)).glob("paper-pool-*.idx"))  # noqa: ASYNC240
    written = saved.stat().st_mtime_ns
    assert first == PaperIndex.build(await as_dicts())

    async with ctx.sessionmaker() as session:  # a new process: an empty cache
        second = await paper_pool(session, {})
    assert second == first and second is not first
    assert saved.stat().st_mtime_ns == written  # read, not written again

    async with ctx.sessionmaker() as session:
        session.add_all(rows(5, start=40))
        await session.commit()
    full = PaperIndex.build(await as_dicts())
    async with ctx.sessionmaker() as session:  # the running process adds to its own index
        again = await paper_pool(session, process_one)
    assert again is first and again == full
    async with ctx.sessionmaker() as session:  # and a new process reads the updated file
        fresh = await paper_pool(session, {})
    assert fresh == full
    assert saved.read_bytes().startswith(b"45 ")
    assert process_one[POOL_CACHE_KEY][1] is first
