"""A delivery whose failure is transient (GitHub 5xx, a dropped connection) is retried for
hours, within a bound. A delivery still failing after the worker's retries: visible in /metrics, /healthz and
`rltracker deliveries`, and re-queued by `rltracker deliveries retry` (GitHub saw a 202 and
will not send it again; the nightly recovery only asks for deliveries the inbox lacks). A
delivery GitHub rate-limits waits as long as GitHub asks before its next attempt.

End to end: GitHub's own issue_comment payload through POST /webhook, the app's router and
worker, the fake GitHub answering 502 to every attempt at the reply, the real command."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select, update

from bot.app import create_app
from bot.cli import main
from bot.speaking.render import REPLY_MARKER
from bot.store.models import Delivery
from bot.store.types import utcnow
from bot.webhooks.replay import delivery_headers
from bot.webhooks.worker import MAX_TRANSIENT_ATTEMPTS, Worker, default_backoff
from tests.fakegithub import clocked_github
from tests.test_actions_e2e import INST, install

REPO = "Codertocat/Hello-World"


async def _command_comment(app_ctx: Any, fake_github: Any, shared_dir: Path) -> dict[str, Any]:
    """GitHub's issue_comment payload carrying a command, its repository installed and its
    issue at the fake GitHub."""
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment"
                          / "created.with-installation.json").read_text())
    payload["comment"]["body"] = "/rltracker methods entropy_collapse"
    payload["installation"]["id"] = INST
    await install(app_ctx, fake_github, repo=REPO, framework="verl")
    fake_github.add_issue(REPO, payload["issue"]["number"], payload["issue"]["title"], "",
                          payload["issue"]["user"]["login"])
    return payload


async def _received(client: TestClient, app_ctx: Any, payload: dict[str, Any], delivery_id: str) -> None:
    """POST `payload` to /webhook as GitHub sends an issue_comment delivery; stored (202)."""
    body = json.dumps(payload).encode()
    headers = delivery_headers("issue_comment", body, app_ctx.settings.webhook_secret, delivery_id)
    assert (await client.post("/webhook", data=body, headers=headers)).status == 202


async def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = await asyncio.to_thread(main, list(argv))
    out, err = capsys.readouterr()
    return code, out, err


async def test_a_delivery_failing_past_its_retries_is_shown_and_can_be_requeued(
        app_ctx: Any, fake_github: Any, shared_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    # GitHub is down for longer than the worker's attempts
    fake_github.fail_next("POST", r"/issues/\d+/comments$", 502, times=MAX_TRANSIENT_ATTEMPTS)
    monkeypatch.setenv("DATABASE_URL", app_ctx.settings.database_url)

    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, payload, "dlv-1")
        worker = Worker(app_ctx, backoff=lambda attempt: 0.0)
        assert await worker.run_until_idle() == MAX_TRANSIENT_ATTEMPTS
        assert worker.counts["failed"] == 1 and worker.counts["retry"] == MAX_TRANSIENT_ATTEMPTS - 1
        metrics = await (await client.get("/metrics")).text()
        assert 'rltracker_inbox_deliveries{status="failed"} 1' in metrics
        health = await client.get("/healthz")
        assert health.status == 200  # the service is up; the failed delivery is counted
        assert (await health.json()) == {"status": "ok", "database": "ok", "deliveries_failed": 1}

        code, out, _ = await _cli(capsys, "deliveries", "--json")
        listed = json.loads(out)
        assert code == 0 and listed["failed"] == 1
        [row] = listed["deliveries"]
        assert (row["delivery_id"], row["event"], row["action"], row["repo"], row["attempts"]) == (
            "dlv-1", "issue_comment", "created", REPO, MAX_TRANSIENT_ATTEMPTS)
        assert "502" in row["error"]
        code, out, _ = await _cli(capsys, "deliveries")
        assert code == 0 and out.startswith("dlv-1\tissue_comment.created\tCodertocat/Hello-World\t")
        assert "failed deliveries: 1; re-queue with" in out

        # an id that is not a failed delivery is named, the others are re-queued
        code, out, err = await _cli(capsys, "deliveries", "retry", "dlv-1", "no-such-id")
        assert code == 1 and out.strip() == "re-queued: 1"
        assert "no-such-id: no failed delivery, nor one waiting for a retry, with this id" in err
        assert fake_github.comments_of(REPO, payload["issue"]["number"]) == []
        assert await worker.run_until_idle() == 1  # GitHub is back
        assert worker.counts["done"] == 1
        [reply] = fake_github.comments_of(REPO, payload["issue"]["number"])
        assert REPLY_MARKER in reply["body"]
        assert (await (await client.get("/healthz")).json())["deliveries_failed"] == 0
        code, out, _ = await _cli(capsys, "deliveries")
        assert code == 0 and out.strip() == "failed deliveries: 0"
        code, _, err = await _cli(capsys, "deliveries", "retry")
        assert code == 2 and "give delivery ids or --all" in err


async def test_retry_given_ids_and_all_requeues_nothing(
        ctx: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`deliveries retry dlv-1 --all`: the ids were dropped without a word and every failed
    delivery re-queued, exit 0 (user79; failed on main), when the operator may have meant
    the one whose cause they fixed. Refused, exit 2, nothing re-queued."""
    from sqlalchemy import select

    from bot.store.models import Delivery

    async with ctx.sessionmaker() as session:
        session.add_all([Delivery(delivery_id=f"dlv-{n}", event="issues", action="opened",
                                  payload="{}", status="failed", attempts=5, last_error="boom")
                         for n in (1, 2)])
        await session.commit()
    monkeypatch.setenv("DATABASE_URL", ctx.settings.database_url)
    code, out, err = await _cli(capsys, "deliveries", "retry", "dlv-1", "--all")
    assert code == 2 and out == ""
    assert err == ("rltracker deliveries retry: give delivery ids or --all, not both (--all "
                   "re-queues every failed delivery and attempts every waiting one); nothing "
                   "was re-queued\n"), err
    async with ctx.sessionmaker() as session:
        assert set(await session.scalars(select(Delivery.status))) == {"failed"}


@pytest.mark.parametrize("limit,wait", [("secondary", 120), ("primary", 1800)])
async def test_a_rate_limited_delivery_waits_as_long_as_github_asks(
        app_ctx: Any, fake_github: Any, shared_dir: Path, limit: str, wait: int) -> None:
    """GitHub answers the reply with a rate limit longer than the client waits for itself
    (a secondary limit with retry-after 120 s; the hourly limit spent, reset in 30 min). The
    worker retried after its own backoff (5 s, 20 s, 80 s...), met the limit again each time
    and could spend all five attempts inside it; now the next attempt is not before GitHub's
    time, and then the reply goes out once."""
    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    number = payload["issue"]["number"]
    if limit == "secondary":
        fake_github.secondary_rate_limit("POST", r"/issues/\d+/comments$", retry_after=wait)
    else:
        fake_github.rate_limited("POST", r"/issues/\d+/comments$", reset_in=wait)
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, payload, "dlv-rl")
    worker = Worker(app_ctx, backoff=lambda attempt: 5.0)
    before = utcnow()
    async with clocked_github(app_ctx) as clock:
        assert await worker.run_until_idle() == 1 and worker.counts["retry"] == 1
        assert await worker.run_until_idle() == 0  # not takeable before GitHub's time
        async with app_ctx.sessionmaker() as s:
            row = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-rl"))
        assert row.status == "pending" and row.attempts == 1
        assert wait - 5 <= (row.next_attempt_at - before).total_seconds() <= wait + 60
        async with app_ctx.sessionmaker() as s:  # GitHub's time has come
            await s.execute(update(Delivery).where(Delivery.id == row.id).values(next_attempt_at=before))
            await s.commit()
        clock.advance(wait + 1)  # (the client's too: a secondary limit holds its requests)
        assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    [reply] = fake_github.comments_of(REPO, number)
    assert REPLY_MARKER in reply["body"]


async def test_a_refusal_retrying_cannot_change_fails_at_once(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub refuses the reply for good (403, no rate limit): the delivery was attempted five
    times over seven minutes, posting nothing each time. It now fails at once with GitHub's
    reason, listed for `rltracker deliveries retry` once the cause is gone. (A locked issue's
    403 was this test's example until the commands62 pass, and a missing permission's until
    limits65; both are recorded skips now: tests/test_command_threads.py,
    tests/test_github_limits.py.)"""
    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    fake_github.fail_next("POST", r"/issues/\d+/comments$", 403, times=10,
                          body={"message": "Must have admin rights to Repository."})
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, payload, "dlv-locked")
    worker = Worker(app_ctx, backoff=lambda attempt: 0.0)
    assert await worker.run_until_idle() == 1
    assert worker.counts == {"done": 0, "failed": 1, "retry": 0, "lost": 0}
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-locked"))
    assert row.status == "failed" and row.attempts == 1
    assert "admin rights" in (row.last_error or "")
    assert len(fake_github.requests("POST", r"/issues/\d+/comments$")) == 1


async def test_a_github_outage_of_hours_is_ridden_out_without_a_hand(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub answers the reply 502 six times, then drops the connection twice: eight failed
    attempts, past the five (about seven minutes) after which the delivery failed for good
    and waited for someone to run `rltracker deliveries retry`. Transient failures are now
    retried for about four and a half hours (a bounded number of times); the reply goes out
    once GitHub is back, once."""
    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    number = payload["issue"]["number"]
    fake_github.fail_next("POST", r"/issues/\d+/comments$", 502, times=6)
    fake_github.disconnect_next("POST", r"/issues/\d+/comments$", times=2)
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, payload, "dlv-out")
    worker = Worker(app_ctx, backoff=lambda attempt: 0.0)
    assert await worker.run_until_idle() == 9
    assert worker.counts == {"done": 1, "failed": 0, "retry": 8, "lost": 0}
    [reply] = fake_github.comments_of(REPO, number)
    assert REPLY_MARKER in reply["body"]
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-out"))
    assert (row.status, row.attempts) == ("done", 9)
    # the wait the attempts span: hours, not minutes, and bounded
    spans = [sum(default_backoff(a) for a in range(1, MAX_TRANSIENT_ATTEMPTS)) for _ in range(50)]
    assert all(3 * 3600 <= span <= 6 * 3600 for span in spans)


async def test_a_delivery_waiting_for_its_retry_is_shown_and_can_be_attempted_now(
        app_ctx: Any, fake_github: Any, shared_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With transient failures retried for hours, a delivery can wait an hour for its next
    attempt; `rltracker deliveries` listed only failed ones, so it was invisible (and could
    not be hurried once GitHub was back). It is listed with its error and next attempt, and
    `retry` attempts it now, its attempts kept."""
    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    number = payload["issue"]["number"]
    fake_github.fail_next("POST", r"/issues/\d+/comments$", 503, times=1)
    monkeypatch.setenv("DATABASE_URL", app_ctx.settings.database_url)

    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, payload, "dlv-wait")
    worker = Worker(app_ctx, backoff=lambda attempt: 3600.0)
    assert await worker.run_until_idle() == 1 and worker.counts["retry"] == 1
    assert await worker.run_until_idle() == 0  # an hour away

    code, out, _ = await _cli(capsys, "deliveries", "--json")
    listed = json.loads(out)
    assert code == 0 and listed["failed"] == 0 and listed["waiting"] == 1
    [row] = listed["waiting_deliveries"]
    assert (row["delivery_id"], row["attempts"]) == ("dlv-wait", 1) and "503" in row["error"]
    assert row["next_attempt_at"] > utcnow().isoformat()
    code, out, _ = await _cli(capsys, "deliveries")
    assert "dlv-wait\tissue_comment.created\tCodertocat/Hello-World\tnext attempt " in out
    assert "deliveries waiting for a retry: 1; attempt them now" in out

    code, out, err = await _cli(capsys, "deliveries", "retry", "dlv-wait", "dlv-none")
    assert code == 1 and out.strip() == "re-queued: 1"
    assert "dlv-none: no failed delivery, nor one waiting for a retry, with this id" in err
    assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-wait"))
    assert (row.status, row.attempts) == ("done", 2)
    assert len(fake_github.comments_of(REPO, number)) == 1
    code, out, _ = await _cli(capsys, "deliveries")
    assert out.strip() == "failed deliveries: 0"
