"""A running app whose database another version migrates under it (ops64): a newer replica's
`rltracker migrate` during a rolling deploy, or a downgrade run under a running replica. `serve`
checks the revision only when it starts; after that /healthz said "ok" and /metrics nothing
while the app's queries met a schema it was not written for (a column gone: 500s and failed
deliveries, each a traceback of its own). Now /healthz says "degraded" with the schema's line
(200: the replica may still work, e.g. after an additive migration, and a restart cannot
help: the same code would refuse to start), /metrics has `rltracker_database_schema_current
0`, and the log says it once, a warning naming both revisions. Back at head: "ok" and 1."""

from __future__ import annotations

import logging

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import text

from bot.app import create_app
from bot.context import AppContext
from bot.store.migrate import head_revision

NEWER = "0099_from_a_newer_version"


async def _set_revision(ctx: AppContext, revision: str) -> None:
    async with ctx.engine.begin() as conn:
        await conn.execute(text("UPDATE alembic_version SET version_num = :v"), {"v": revision})


@pytest.mark.parametrize("revision, words", [(NEWER, "does not know"), ("0017", "behind")])
async def test_healthz_and_metrics_say_the_database_was_migrated_under_the_app(
        ctx: AppContext, caplog: pytest.LogCaptureFixture, revision: str, words: str) -> None:
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.get("/healthz")
        assert (await resp.json())["status"] == "ok"
        await _set_revision(ctx, revision)  # another version's migrate, under this app
        caplog.set_level(logging.WARNING)
        for _ in range(2):
            resp = await client.get("/healthz")
            body = await resp.json()
            assert resp.status == 200, body
            assert body["status"] == "degraded" and body["database"] == "ok", body
            assert revision in body["schema"] and words in body["schema"], body
            assert str(head_revision()) in body["schema"], body
            metrics = await (await client.get("/metrics")).text()
            assert "rltracker_database_schema_current 0" in metrics.splitlines()
            assert "rltracker_database_up 1" in metrics.splitlines()
        said = [r for r in caplog.records if revision in r.getMessage()]
        assert len(said) == 1 and said[0].levelno == logging.WARNING, caplog.records
        await _set_revision(ctx, str(head_revision()))
        resp = await client.get("/healthz")
        assert (await resp.json())["status"] == "ok"
        metrics = await (await client.get("/metrics")).text()
        assert "rltracker_database_schema_current 1" in metrics.splitlines()
