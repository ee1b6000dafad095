"""The name matches on `lower(repo)` that every thread page (its actions), a verdict's reply,
`forget` (a repository made private) and the worker's emptying of a private repository's
deliveries run are indexed (migration 0018), on SQLite and PostgreSQL. Before, each scanned
the whole actions or deliveries table: the thread page's lookup of its comments and skips
read every action ever recorded."""

from __future__ import annotations

from sqlalchemy import text

from bot.store.db import make_engine

QUERIES = {
    "ix_actions_lower_repo_number":
        "SELECT id FROM actions WHERE lower(repo) = 'a/b' AND number = 5",
    "ix_deliveries_lower_repo": "SELECT id FROM deliveries WHERE lower(repo) = 'a/b'",
}


async def _plan(url: str, query: str) -> str:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            if engine.dialect.name == "sqlite":
                rows = (await conn.execute(text("EXPLAIN QUERY PLAN " + query))).all()
                return " ".join(str(r[-1]) for r in rows)
            # a tiny table is read whole whatever the indexes: ask what it would use otherwise
            await conn.execute(text("SET enable_seqscan = off"))
            rows = (await conn.execute(text("EXPLAIN " + query))).all()
            return " ".join(str(r[0]) for r in rows)
    finally:
        await engine.dispose()


async def test_the_name_matches_use_an_index(db_url: str) -> None:
    for index, query in QUERIES.items():
        plan = await _plan(db_url, query)
        assert index in plan, (index, plan)


def test_0018_goes_down_and_up(db_url: str) -> None:
    import asyncio

    from alembic import command

    from bot.store.migrate import alembic_config
    from tests.test_migrations import downgrade

    config = alembic_config(db_url)
    downgrade(db_url, "0017")
    assert "ix_actions_lower_repo_number" not in asyncio.run(
        _plan(db_url, QUERIES["ix_actions_lower_repo_number"]))
    command.upgrade(config, "head")
    assert "ix_actions_lower_repo_number" in asyncio.run(
        _plan(db_url, QUERIES["ix_actions_lower_repo_number"]))
