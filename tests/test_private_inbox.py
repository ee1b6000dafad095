"""The webhook inbox keeps no text of a private repository (review59).

The inbox (`deliveries`) stored every delivery's raw payload for good, a private repository's
too: its issues' titles and bodies, its comments, stayed in the database (operators only, but
the tracker keeps nothing of a private repository). Now a delivery about a private repository
keeps no payload once it is handled (done or failed), `repository.privatized` (and every other
path that forgets a repository) empties the payloads its deliveries left, and what an operator
needs stays: the delivery's id, event, action, repository, times and outcome. A delivery whose
payload is gone cannot be re-queued (`rltracker deliveries retry` says so, GitHub's redelivery
is a duplicate).
"""

from __future__ import annotations

import asyncio
import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.cli import main
from bot.store.models import Delivery, Thread
from bot.store.types import utcnow
from bot.webhooks.inbox import DUPLICATE, Inbox, InboxRow
from bot.webhooks.worker import Worker
from tests.test_events import envelope

SECRET = "someorg/secret-repo"
TITLE = "Secret roadmap for the next model"
BODY = "The unreleased reward model collapses at step 300."


def no_wait(attempt: int) -> float:
    return 0.0


def _opened(shared_dir: Path, repo: str, *, private: bool) -> dict[str, Any]:
    """GitHub's issues.opened payload, about `repo`, with a title and body of its own."""
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "opened.json").read_text())
    payload["repository"].update(full_name=repo, private=private,
                                 visibility="private" if private else "public")
    payload["issue"].update(title=TITLE, body=BODY)
    return payload


async def _queue(ctx: Any, event: str, payload: dict[str, Any], *, status: str = "pending",
                 last_error: str | None = None) -> str:
    delivery_id = str(uuid.uuid4())
    async with ctx.sessionmaker() as session:
        session.add(Delivery(
            delivery_id=delivery_id, event=event, action=payload.get("action"),
            repo=(payload.get("repository") or {}).get("full_name"), payload=json.dumps(payload),
            status=status, attempts=1 if status == "failed" else 0, last_error=last_error,
            finished_at=utcnow() if status == "failed" else None))
        await session.commit()
    return delivery_id


async def _row(ctx: Any, delivery_id: str) -> Delivery:
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Delivery).where(Delivery.delivery_id == delivery_id))
    assert row is not None
    return row


def _keeps_no_text(row: Delivery) -> None:
    assert TITLE not in row.payload and BODY not in row.payload, "the payload kept its text"
    assert row.received_at is not None


async def _work(ctx: Any) -> None:
    await Worker(ctx, backoff=no_wait).run_until_idle()


async def test_a_private_repositorys_delivery_keeps_no_text_once_handled(
        ctx: Any, shared_dir: Path) -> None:
    """GitHub's issues.opened saying `private: true`: on main the handled row kept the whole
    payload (title and body) for good. The public copy keeps its payload as before."""
    hidden = await _queue(ctx, "issues", _opened(shared_dir, SECRET, private=True))
    public = await _queue(ctx, "issues", _opened(shared_dir, "huggingface/trl", private=False))
    await _work(ctx)
    row = await _row(ctx, hidden)
    assert (row.status, row.event, row.action, row.repo) == ("done", "issues", "opened", SECRET)
    assert row.finished_at is not None
    _keeps_no_text(row)
    kept = await _row(ctx, public)
    assert kept.status == "done" and TITLE in kept.payload


async def test_a_delivery_queued_before_privatized_keeps_no_text(ctx: Any, shared_dir: Path) -> None:
    """A delivery whose payload still says public, handled after its repository was made
    private (its row marked): stores nothing, and on main kept its payload."""
    await _queue(ctx, "repository", _privatized())
    queued = await _queue(ctx, "issues", _opened(shared_dir, SECRET, private=False))
    await _work(ctx)
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Thread))) == []
    row = await _row(ctx, queued)
    assert row.status == "done"
    _keeps_no_text(row)


def _privatized() -> dict[str, Any]:
    payload = envelope("privatized", SECRET)
    payload["repository"].update(id=555, private=True, visibility="private",
                                 description=f"{TITLE} (the repository's own words)")
    return payload


async def test_privatized_empties_the_stored_deliveries_of_the_repository(
        ctx: Any, shared_dir: Path) -> None:
    """Deliveries of a public repository handled (one done, one failed with its error), then
    `repository.privatized` handled by the worker: on main every payload stayed whole. Now
    those of the repository keep no text (the privatized delivery's own neither, whose
    description is the repository's), another repository's are untouched."""
    done = await _queue(ctx, "issues", _opened(shared_dir, SECRET, private=False))
    other = await _queue(ctx, "issues", _opened(shared_dir, "huggingface/trl", private=False))
    await _work(ctx)
    failed = await _queue(ctx, "issues", _opened(shared_dir, SECRET, private=False),
                          status="failed", last_error=f"ValueError: boom\n  parameters: {TITLE}")
    privatized = await _queue(ctx, "repository", _privatized())
    await _work(ctx)
    for delivery_id, status in ((done, "done"), (failed, "failed"), (privatized, "done")):
        row = await _row(ctx, delivery_id)
        assert row.status == status
        _keeps_no_text(row)
        assert TITLE not in (row.last_error or "")
    assert (await _row(ctx, failed)).last_error == "ValueError: boom"
    assert TITLE in (await _row(ctx, other)).payload


async def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_an_emptied_delivery_is_listed_and_cannot_be_requeued(
        ctx: Any, shared_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A failed delivery of a repository made private since: `rltracker deliveries` lists it
    and says its payload is gone; `retry` of it exits 1 and says it cannot be re-queued (on
    main it was re-queued, and the worker would have handled a payload kept against the
    rule); `retry --all` re-queues the others; GitHub's redelivery of it is a duplicate."""
    monkeypatch.setenv("DATABASE_URL", ctx.settings.database_url)
    failed = await _queue(ctx, "issues", _opened(shared_dir, SECRET, private=False),
                          status="failed", last_error="ValueError: boom")
    other = await _queue(ctx, "issues", _opened(shared_dir, "huggingface/trl", private=False),
                         status="failed", last_error="ValueError: boom")
    await _queue(ctx, "repository", _privatized())
    await Worker(ctx, backoff=no_wait).run_until_idle(limit=1)  # the privatized delivery alone

    code, out, _ = await _cli(capsys, "deliveries", "--json")
    listed = {d["delivery_id"]: d for d in json.loads(out)["deliveries"]}
    assert code == 0 and listed[failed]["payload_kept"] is False
    assert listed[other]["payload_kept"] is True
    code, out, _ = await _cli(capsys, "deliveries")
    line = next(x for x in out.splitlines() if x.startswith(failed))
    assert "private repository" in line and "cannot be re-queued" in line

    code, out, err = await _cli(capsys, "deliveries", "retry", failed)
    assert code == 1
    assert failed in err and "cannot be re-queued" in err and "private repository" in err
    assert (await _row(ctx, failed)).status == "failed"
    code, out, err = await _cli(capsys, "deliveries", "retry", "--all")
    assert code == 0 and "re-queued: 1" in out and "1 " in out and "cannot be re-queued" in out
    assert (await _row(ctx, failed)).status == "failed"
    assert (await _row(ctx, other)).status == "pending"

    # GitHub's "Redeliver" of it: a duplicate, not re-queued with the payload it lost
    row = InboxRow(delivery_id=failed, event="issues", action="opened", repo=SECRET,
                   installation_id=None,
                   payload=json.dumps(copy.deepcopy(_opened(shared_dir, SECRET, private=False))))
    inbox = Inbox(ctx.engine)  # SQLite: its batch writer's own SQL; PostgreSQL: store_rows
    inbox.start()
    try:
        assert await inbox.submit(row) == DUPLICATE
    finally:
        await inbox.close()
    row_now = await _row(ctx, failed)
    assert row_now.status == "failed"
    _keeps_no_text(row_now)


def test_migration_0016_empties_what_the_inbox_kept_of_private_repositories(db_url: str) -> None:
    """Deliveries stored before this fix: the finished ones whose payload says private, or
    whose repository's row is marked private, keep no payload after the upgrade (a failed
    one's error its first line); a pending one (the worker empties it when it finishes it)
    and a public repository's keep theirs. On main they all kept their payloads."""

    from bot.store import migrate
    from tests.test_migrations import _execute, downgrade

    downgrade(db_url, "0015")

    def payload(repo: str, private: bool) -> str:
        return json.dumps({"action": "opened", "repository": {"full_name": repo, "private": private},
                           "issue": {"number": 1, "title": TITLE}})

    rows = [("d1", "o/said", True, "done", None), ("d2", "o/marked", False, "done", None),
            ("d3", "o/marked", False, "failed", f"ValueError: boom\nparameters: {TITLE}"),
            ("d4", "o/said", True, "pending", None), ("d5", "o/open", False, "done", None)]
    asyncio.run(_execute(db_url, "INSERT INTO repositories (full_name, private, comments_paused, "
                                 "created_at, updated_at) VALUES ('o/marked', true, false, "
                                 "CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"))
    for delivery_id, repo, private, status, error in rows:
        quoted = "NULL" if error is None else f"'{error}'"  # a real line break in the text
        asyncio.run(_execute(db_url, (
            "INSERT INTO deliveries (delivery_id, event, action, repo, payload, status, attempts, "
            "received_at, last_error) VALUES "
            f"('{delivery_id}', 'issues', 'opened', '{repo}', '{payload(repo, private)}', "
            f"'{status}', 1, CURRENT_TIMESTAMP, {quoted})"
        ).replace(":", "\\:")))
    migrate.upgrade(db_url)
    found = {d: (kept, error) for d, kept, error in asyncio.run(_execute(
        db_url, "SELECT delivery_id, payload, last_error FROM deliveries"))}
    assert {d for d, (raw, _) in found.items() if TITLE in raw} == {"d4", "d5"}
    assert found["d3"][1] == "ValueError: boom"
    assert asyncio.run(_execute(db_url, "SELECT count(*) FROM deliveries WHERE status = 'failed'"
                                        " AND payload LIKE '%payload_not_kept%'")) == [(1,)]


FORMER = "someorg/old-secret"


def _renamed_opened(shared_dir: Path, repo: str) -> dict[str, Any]:
    payload = _opened(shared_dir, repo, private=False)
    payload["repository"]["id"] = 555  # the repository's id, as `_privatized`'s
    if repo != FORMER:  # sent after the rename
        payload["repository"]["updated_at"] = "2019-06-01T00:00:00Z"
    return payload


async def test_privatized_empties_the_deliveries_stored_under_the_former_name(
        ctx: Any, shared_dir: Path) -> None:
    """Deliveries of the repository handled under its former name (their `repo` column says
    it), the repository renamed, then made private: on main `forget` matched deliveries by
    name only and the former name's payloads kept their title and body. They are matched by
    the repository's id now; another repository's stay whole."""
    former = await _queue(ctx, "issues", _renamed_opened(shared_dir, FORMER))
    failed = await _queue(ctx, "issues", _renamed_opened(shared_dir, FORMER),
                          status="failed", last_error=f"ValueError: boom\n  parameters: {TITLE}")
    other = await _queue(ctx, "issues", _opened(shared_dir, "huggingface/trl", private=False))
    await _work(ctx)
    current = await _queue(ctx, "issues", _renamed_opened(shared_dir, SECRET))
    await _work(ctx)
    await _queue(ctx, "repository", _privatized())
    await _work(ctx)
    for delivery_id in (former, failed, current):
        row = await _row(ctx, delivery_id)
        assert row.status in ("done", "failed")
        _keeps_no_text(row)
        assert TITLE not in (row.last_error or "")
    assert TITLE in (await _row(ctx, other)).payload
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Thread.repo))) == ["huggingface/trl"]


async def test_a_delivery_under_the_former_name_finished_after_privatized_keeps_no_text(
        ctx: Any, shared_dir: Path) -> None:
    """A delivery under the repository's former name, queued before `privatized` (under the
    new name) and handled after it: on main the worker matched the marked rows by name and
    the delivery kept its payload."""
    await _queue(ctx, "issues", _renamed_opened(shared_dir, SECRET))
    await _work(ctx)
    await _queue(ctx, "repository", _privatized())
    await _work(ctx)
    queued = await _queue(ctx, "issues", _renamed_opened(shared_dir, FORMER))
    await _work(ctx)
    row = await _row(ctx, queued)
    assert row.status == "done"
    _keeps_no_text(row)
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Thread.repo))) == []


async def test_privatized_under_a_new_name_forgets_the_threads_of_the_former_one(
        ctx: Any, shared_dir: Path) -> None:
    """The repository's issue stored under its former name, the repository renamed (no
    delivery since) and made private: `privatized` names it by its new name and its id. On
    main `forget` marked the row (found by id) but deleted threads by the new name only: the
    issue stayed on the tracker under the former name."""
    stored = await _queue(ctx, "issues", _renamed_opened(shared_dir, FORMER))
    await _work(ctx)
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Thread.repo))) == [FORMER]
    await _queue(ctx, "repository", _privatized())
    await _work(ctx)
    async with ctx.sessionmaker() as session:
        assert list(await session.scalars(select(Thread.repo))) == []
    _keeps_no_text(await _row(ctx, stored))
