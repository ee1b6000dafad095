"""A delivery still being handled when the installation accepts the permission GitHub refused
its comment for (ops71; left66 left it): the acceptance's hand-back
(`installations.answer_when_permitted`) re-queues only deliveries already finished, and reads
only skips already written. Two orders passed the delivery by for good (the next acceptance,
or a repository added, picked it up):

- the hand-back ran, then the refusal was recorded (GitHub's answer on its way, or the skip
  not written yet): the refusal now finds the hand-back that ran while its delivery was in
  flight, takes its skip back and the delivery is tried again, with a new token;
- the refusal was recorded, then the hand-back ran while the delivery was still being
  handled: the hand-back now is tried again itself, and hands the delivery back once it is
  finished.

Through the real worker, the fake GitHub over HTTP (GitHub's answer held while the other
worker handles the acceptance, the shared `installation.new_permissions_accepted` payload),
SQLite and PostgreSQL. The deliveries are stored as POST /webhook stores them (their
installation id in its column)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from sqlalchemy import select

from bot.store.models import Action, Delivery
from bot.webhooks.commands import router as commands_router
from bot.webhooks.inbox import Inbox, InboxRow
from bot.webhooks.routers import router as app_router
from bot.webhooks.worker import Worker
from tests.test_actions_e2e import INST, VERL, app_comments, install, open_issue
from tests.test_commands import comment_event
from tests.test_permissions_accepted import _fixture, no_wait

REFUSED = {"message": "Resource not accessible by integration",
           "documentation_url": "https://docs.github.com/rest/issues/comments"}


async def _received(ctx: Any, event: str, payload: dict[str, Any]) -> str:
    """The delivery stored in the inbox as POST /webhook stores it; returns its id."""
    inbox = Inbox(ctx.engine)
    inbox.start()
    delivery = str(uuid.uuid4())
    try:
        await inbox.submit(InboxRow(delivery_id=delivery, event=event,
                                    action=payload.get("action"), repo=VERL,
                                    installation_id=payload["installation"]["id"],
                                    payload=json.dumps(payload)))
    finally:
        await inbox.close()
    return delivery


def _during_first(fake: Any, method: str, path: str, act: Callable[[], Awaitable[None]],
                  answer: tuple[int, Any] | None = None) -> None:
    """GitHub holds its answer to the first `method` `path` until `act()` is done, then gives
    `answer` (None: its own). Later requests are answered as always."""
    @fake.route(method, path)
    async def held(fake_: Any, request: web.Request, match: Any, body: Any) -> Any:
        fake_._routes[:] = [r for r in fake_._routes if r.handler is not held]
        await act()
        if answer is not None:
            return answer
        return await fake_._respond(request, "/" + request.match_info["tail"], body,
                                    fake_._authenticate(request))


def _accepting(ctx: Any, fake: Any, shared_dir: Path) -> Callable[[], Awaitable[None]]:
    """The account accepts Issues write, and another worker handles GitHub's
    `installation.new_permissions_accepted` to its end."""
    async def accept() -> None:
        fake.installations[INST]["permissions"]["issues"] = "write"
        await _received(ctx, "installation", _fixture(
            shared_dir, "installation", "new_permissions_accepted", repositories=[VERL]))
        assert await Worker(ctx, backoff=no_wait).run_until_idle(limit=1) == 1
    return accept


async def _report(ctx: Any, fake: Any, number: int) -> str:
    """A report (its kind set by its author) opened while the installation grants Issues
    read; its `issues.opened` delivery stored."""
    payload = await open_issue(ctx, fake, number, title="Reward flat", body="The KL climbs to 50.")
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=number), ctx)
    fake.installations[INST]["permissions"]["issues"] = "read"
    ctx.github.invalidate_token(INST)
    return await _received(ctx, "issues", payload)


async def _not_permitted_skips(ctx: Any) -> list[Action]:
    async with ctx.sessionmaker() as s:
        return [a for a in await s.scalars(select(Action).where(Action.status == "skipped"))
                if (a.details or {}).get("code") == "not_permitted"]


async def _statuses(ctx: Any) -> dict[str, str]:
    async with ctx.sessionmaker() as s:
        return {d.event: d.status for d in await s.scalars(select(Delivery))}


async def test_a_refusal_answered_after_the_acceptance_was_handled_is_tried_again(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub refuses the failure comment (the token from before), and its answer arrives
    after another worker handled the acceptance to its end. On main the skip was written
    after the hand-back had read the skips: the delivery stayed done, the report without its
    comment. Now the delivery is tried again at once and the comment posted, once."""
    await install(app_ctx, fake_github)
    await _report(app_ctx, fake_github, 81)
    _during_first(fake_github, "POST", rf"/repos/{VERL}/issues/81/comments",
                  _accepting(app_ctx, fake_github, shared_dir), (403, REFUSED))
    worker = Worker(app_ctx, backoff=no_wait)
    await worker.run_until_idle()
    assert len(app_comments(fake_github, VERL, 81)) == 1
    assert await _not_permitted_skips(app_ctx) == []
    assert await _statuses(app_ctx) == {"issues": "done", "installation": "done"}
    assert len(fake_github.requests("POST", r"/issues/81/comments$")) == 2  # refused, posted


@pytest.mark.parametrize("together", [False, True], ids=["one_by_one", "together"])
async def test_an_acceptance_handled_while_the_refused_delivery_finishes_hands_it_back(
        app_ctx: Any, fake_github: Any, shared_dir: Path, together: bool) -> None:
    """The refusal is recorded, and the acceptance handled by another worker before the
    refused delivery is finished (the worker still handles the next delivery of its batch).
    On main the hand-back passed it by (not finished yet) and kept its skip: no comment,
    ever. Now the acceptance is tried again and hands it back: one comment. `together`: the
    two reports decided as one batch (the worker's batch handling), whose skips were written
    at its end, after the acceptance read them: a refusal owed a decision is written at once."""
    await install(app_ctx, fake_github)
    await _report(app_ctx, fake_github, 82)
    await _report(app_ctx, fake_github, 83)  # the next delivery of the same batch
    # once #82's refusal is recorded, while #83 is handled: the acceptance
    _during_first(fake_github, "*", rf"/repos/{VERL}/issues/83(/.*)?",
                  _accepting(app_ctx, fake_github, shared_dir))
    worker = (Worker(app_ctx, backoff=no_wait, batch_size=2) if together
              else Worker(app_ctx, app_router, backoff=no_wait, batch_size=2))  # one by one
    await worker.run_until_idle()
    assert len(app_comments(fake_github, VERL, 82)) == 1
    assert len(app_comments(fake_github, VERL, 83)) == 1
    assert await _not_permitted_skips(app_ctx) == []
    assert set((await _statuses(app_ctx)).values()) == {"done"}


async def test_a_worker_process_holding_a_token_from_before_the_acceptance_asks_a_new_one(
        app_ctx: Any, app_settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """Two processes (a worker process and the web process, or two replicas), each with its
    own client and tokens. The refused report's delivery was handled by the other one, which
    keeps its token (Issues read); the acceptance, handled here, drops only this process's
    token and hands the delivery back; the other process takes it again and GitHub refuses
    its old token once more. On main: the skip written again, the delivery done, no comment
    ever. Now the refusal finds its token older than the hand-back, drops it and the delivery
    is tried again with a new one: the comment is posted, once."""
    from bot.context import AppContext
    from bot.github.client import GitHubClient
    from tests.fakegithub import no_sleep

    await install(app_ctx, fake_github)
    await _report(app_ctx, fake_github, 84)
    other = AppContext.create(app_settings)
    other.github = GitHubClient(app_settings, sleep=no_sleep)
    try:
        other_worker = Worker(other, backoff=no_wait)
        assert await other_worker.run_until_idle() == 1  # refused: its token has Issues read
        assert len(await _not_permitted_skips(app_ctx)) == 1
        await _accepting(app_ctx, fake_github, shared_dir)()  # handled here
        await other_worker.run_until_idle()  # the delivery handed back, taken by the other
    finally:
        await other.github.close()
        other.github = None
        await other.close()
    assert len(app_comments(fake_github, VERL, 84)) == 1
    assert await _not_permitted_skips(app_ctx) == []
    assert set((await _statuses(app_ctx)).values()) == {"done"}
