"""A delivery owed a new decision that is waiting for a retry when the installation accepts
the permission GitHub refused it for (left76; ops71 left it): the hand-back
(`installations.answer_when_permitted`) re-queues deliveries `done` or `failed`, waits for
those `processing`, and passed one `pending` by, its `not_permitted` skip kept.

The delivery: a `/rltracker recheck` by the report's author while the installation grants
Issues read. The recheck decides the failure comment (refused: the skip names the delivery),
then the 👍 reaction meets a closed connection: the delivery waits for its retry. Through the real
worker, the fake GitHub over HTTP, the shared `installation.new_permissions_accepted`
payload, SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.cli.deliveries import retry_deliveries
from bot.speaking.render import FAILURE_MARKER
from bot.store.models import Action, Delivery
from bot.webhooks.commands import router as commands_router
from bot.webhooks.worker import Worker
from tests.test_actions_e2e import INST, VERL, app_comments, install, open_issue
from tests.test_commands import comment_event
from tests.test_once_on_github import deliver
from tests.test_permissions_accepted import _accepted


def an_hour(attempt: int) -> float:
    return 3600.0


async def _not_permitted(ctx: Any) -> list[Action]:
    async with ctx.sessionmaker() as s:
        return [a for a in await s.scalars(select(Action).where(Action.status == "skipped"))
                if str((a.details or {}).get("code") or "").startswith("not_permitted")]


@pytest.mark.parametrize("waiting", [True, False])
async def test_a_refused_delivery_waiting_for_its_retry_at_the_acceptance(
        app_ctx: Any, fake_github: Any, shared_dir: Path, waiting: bool) -> None:
    """On main, waiting: the skip stayed and the retry found the recheck recorded, decided
    nothing, and no comment came; done (`waiting` False): handed back, its skip deleted, and
    the re-run decided nothing either. Now both post the comment once, no skip left."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 95, title="Reward flat", body="The KL climbs to 50.")
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=95), app_ctx)
    fake_github.installations[INST]["permissions"]["issues"] = "read"
    app_ctx.github.invalidate_token(INST)
    assert app_comments(fake_github, VERL, 95) == []
    recheck = await deliver(app_ctx, comment_event("/rltracker recheck", number=95))
    if waiting:
        fake_github.disconnect_next("POST", r"/reactions$")  # (a POST is not retried by the client)
    worker = Worker(app_ctx, backoff=an_hour)
    await worker.run_until_idle()
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery).where(Delivery.delivery_id == recheck))
    assert (row.status, row.attempts) == ("pending" if waiting else "done", 1), row.last_error
    [skip] = await _not_permitted(app_ctx)
    assert skip.details["delivery"] == recheck

    await _accepted(app_ctx, fake_github, shared_dir)
    await worker.run_until_idle()  # the acceptance (the recheck waits for its hour)
    assert await retry_deliveries(app_ctx.engine, [recheck]) == ([recheck] if waiting else [])
    await worker.run_until_idle()
    [comment] = app_comments(fake_github, VERL, 95)
    assert FAILURE_MARKER in comment["body"]
    assert await _not_permitted(app_ctx) == []  # it said "not posted" beside the comment
    async with app_ctx.sessionmaker() as s:
        statuses = {d.event: d.status for d in await s.scalars(select(Delivery))}
    assert statuses == {"issue_comment": "done", "installation": "done"}
