"""What the inbox keeps of a private repository's deliveries, past the worker's finish
(privacy61).

- A delivery the worker set aside as abandoned (claimed its bound of times and never finished:
  failed at claim time) kept its raw payload when its repository was private: the claim that
  sets it aside is no finish, so the payload stayed until the repository was forgotten again
  (a `privatized` handled while the row was still claimed emptied finished rows only).
- The inbox stores each delivery's repository id (`deliveries.repo_id`, migration 0017), so
  `forget` finds the deliveries stored under a repository's former name by an indexed column
  instead of a LIKE scan of every finished payload; the migration fills it from the stored
  payloads and empties what the set-aside rows kept.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.app import create_app
from bot.store.models import Delivery
from bot.store.privacy import EMPTIED_PAYLOAD
from bot.store.types import utcnow
from bot.webhooks.privacy import handle_repository
from bot.webhooks.replay import delivery_headers
from bot.webhooks.worker import MAX_ATTEMPTS, Worker
from tests.test_events import envelope
from tests.test_private_inbox import _row

SECRET = "someorg/secret-repo"
FORMER = "someorg/old-secret"
RID = 555
TITLE = "Secret roadmap for the next model"


def _opened(shared_dir: Path, repo: str, *, private: bool = False, rid: int = RID) -> dict[str, Any]:
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json").read_text())
    payload["repository"].update(full_name=repo, id=rid, private=private,
                                 visibility="private" if private else "public")
    payload["issue"]["title"] = TITLE
    return payload


def _privatized(repo: str = SECRET) -> dict[str, Any]:
    payload = envelope("privatized", repo)
    payload["repository"].update(id=RID, private=True, visibility="private")
    return payload


async def _claimed_elsewhere(ctx: Any, payload: dict[str, Any], *, lease_ends: Any) -> str:
    """A delivery claimed MAX_ATTEMPTS times by a process that died with it (its lease ends at
    `lease_ends`)."""
    delivery_id = str(uuid.uuid4())
    async with ctx.sessionmaker() as session:
        session.add(Delivery(
            delivery_id=delivery_id, event="issues", action=payload.get("action"),
            repo=payload["repository"]["full_name"], payload=json.dumps(payload),
            status="processing", attempts=MAX_ATTEMPTS, claimed_by="dead-host:1:0",
            started_at=utcnow() - timedelta(minutes=30), next_attempt_at=lease_ends))
        await session.commit()
    return delivery_id


async def _lease_ran_out(ctx: Any, *delivery_ids: str) -> None:
    async with ctx.sessionmaker() as session:
        for row in await session.scalars(select(Delivery).where(
                Delivery.delivery_id.in_(delivery_ids))):
            row.next_attempt_at = utcnow() - timedelta(seconds=1)
        await session.commit()


async def test_a_private_repositorys_delivery_set_aside_as_abandoned_keeps_no_text(
        ctx: Any, shared_dir: Path) -> None:
    """Three deliveries claimed their bound of times and never finished: one whose payload
    says private, one of a repository made private while it was claimed (the `privatized`
    handled before its lease ran out), one of the same repository under its former name.
    On main the claim that set them aside (failed, abandoned) kept their payloads; a public
    repository's keeps its own (it is replayable)."""
    later = utcnow() + timedelta(hours=1)
    said = await _claimed_elsewhere(ctx, _opened(shared_dir, "otherorg/hidden", private=True,
                                                 rid=777), lease_ends=later)
    marked = await _claimed_elsewhere(ctx, _opened(shared_dir, SECRET), lease_ends=later)
    former = await _claimed_elsewhere(ctx, _opened(shared_dir, FORMER), lease_ends=later)
    public = await _claimed_elsewhere(ctx, _opened(shared_dir, "huggingface/trl", rid=1),
                                      lease_ends=later)
    await handle_repository(_privatized(), ctx)
    for delivery_id in (said, marked, former):  # claimed still: `privatized` left them
        assert TITLE in (await _row(ctx, delivery_id)).payload
    await _lease_ran_out(ctx, said, marked, former, public)

    await Worker(ctx, backoff=lambda attempt: 0.0).run_until_idle()
    for delivery_id in (said, marked, former):
        row = await _row(ctx, delivery_id)
        assert row.status == "failed" and (row.last_error or "").startswith("abandoned")
        assert row.payload == EMPTIED_PAYLOAD, f"{row.repo}: the set-aside row kept its payload"
    kept = await _row(ctx, public)
    assert kept.status == "failed" and TITLE in kept.payload


async def test_the_inbox_stores_each_deliverys_repository_id(ctx: Any, shared_dir: Path) -> None:
    """Deliveries received through /webhook (the inbox's own writer: SQLite's batch writer,
    PostgreSQL's statement) keep the payload's repository id in a column of their own; one
    without a repository keeps none. On main there was no such column: `forget` looked for
    the former name's deliveries by a LIKE scan of every finished payload."""
    app = create_app(ctx, worker=False)
    bodies = {"issues": json.dumps(_opened(shared_dir, FORMER)).encode(),
              "ping": json.dumps({"zen": "Keep it simple.", "hook_id": 1}).encode()}
    ids = {}
    async with TestClient(TestServer(app)) as client:
        for event, body in bodies.items():
            ids[event] = str(uuid.uuid4())
            headers = delivery_headers(event, body, "test-secret", ids[event])
            resp = await client.post("/webhook", data=body, headers=headers)
            assert resp.status == 202, await resp.text()
    assert (await _row(ctx, ids["issues"])).repo_id == RID
    assert (await _row(ctx, ids["ping"])).repo_id is None


async def test_privatized_finds_the_former_names_deliveries_by_their_repository_id(
        ctx: Any, shared_dir: Path) -> None:
    """A delivery of the repository under its former name, handled, then the repository made
    private under its new name: its payload is emptied (found by `repo_id`), another
    repository's delivery whose payload merely mentions the id is not."""
    mine = _opened(shared_dir, FORMER)
    other = _opened(shared_dir, "huggingface/trl", rid=1)
    other["issue"]["body"] = f"see run {RID} of the sweep"
    queued = []
    async with ctx.sessionmaker() as session:
        for payload in (mine, other):
            queued.append(str(uuid.uuid4()))
            session.add(Delivery(delivery_id=queued[-1], event="issues", action="opened",
                                 repo=payload["repository"]["full_name"],
                                 payload=json.dumps(payload), status="done", attempts=1,
                                 finished_at=utcnow()))
        await session.commit()
    assert (await _row(ctx, queued[0])).repo_id == RID  # filled from the payload
    await handle_repository(_privatized(), ctx)
    assert (await _row(ctx, queued[0])).payload == EMPTIED_PAYLOAD
    assert TITLE in (await _row(ctx, queued[1])).payload


def test_migration_0017_fills_the_repository_ids_and_empties_set_aside_rows(db_url: str) -> None:
    """Rows stored before 0017: each gets its payload's repository id (none when the payload
    names no repository, or was emptied), and a finished row of a repository marked private
    whose payload was kept (set aside as abandoned after 0016 ran, under its name or a former
    one) keeps no payload after the upgrade. On main (no 0017) nothing changed."""

    from bot.store import migrate
    from tests.test_migrations import _execute, downgrade

    downgrade(db_url, "0016")

    def payload(repo: str, rid: int) -> str:
        return json.dumps({"action": "opened", "repository": {"full_name": repo, "id": rid,
                                                              "private": False},
                           "issue": {"number": 1, "title": TITLE}})

    asyncio.run(_execute(db_url, "INSERT INTO repositories (full_name, github_id, private, "
                                 "comments_paused, created_at, updated_at) VALUES ('o/marked', "
                                 f"{RID}, true, false, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
    rows = [("d1", "o/marked", payload("o/marked", RID), "failed"),
            ("d2", "o/former", payload("o/former", RID), "failed"),
            ("d3", "o/open", payload("o/open", 9), "failed"),
            ("d4", None, json.dumps({"zen": "x"}), "done"),
            ("d5", "o/marked", EMPTIED_PAYLOAD, "done"),
            ("d6", "o/marked", payload("o/marked", RID), "pending")]
    for delivery_id, repo, raw, status in rows:
        asyncio.run(_execute(db_url, (
            "INSERT INTO deliveries (delivery_id, event, action, repo, payload, status, attempts, "
            "received_at, last_error) VALUES "
            f"('{delivery_id}', 'issues', 'opened', {'NULL' if repo is None else repr(repo)}, "
            f"'{raw.replace(chr(39), chr(39) * 2)}', '{status}', 5, CURRENT_TIMESTAMP, "
            "'abandoned: claimed 5 times')").replace(":", "\\:")))
    migrate.upgrade(db_url)
    found = {d: (repo_id, raw) for d, repo_id, raw in asyncio.run(_execute(
        db_url, "SELECT delivery_id, repo_id, payload FROM deliveries"))}
    assert {d: r for d, (r, _) in found.items()} == {
        "d1": RID, "d2": RID, "d3": 9, "d4": None, "d5": None, "d6": RID}
    assert {d for d, (_, raw) in found.items() if TITLE in raw} == {"d3", "d6"}
