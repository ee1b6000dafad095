"""An issue closed before the worker decided on it, then reopened by its reporter: on main the
opening decision recorded `closed` and `issues.reopened` decided nothing, so the report never
got its comment. Now the reopening decides as a new issue would (the same slot, the same quiet
rules, 48 hours from its opening), only when the opening stayed quiet because it was closed
and its author reopened it. On SQLite and PostgreSQL (`app_ctx` behind `db_url`)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from bot.speaking.decide import act
from bot.store.models import Thread
from tests.test_actions_e2e import (
    FAILURE,
    INST,
    NOT_FAILURE,
    VERL,
    actions_of,
    app_comments,
    install,
    open_issue,
)


async def closed_then_reopened(ctx: Any, fake: Any, number: int, *,
                               opened_at: datetime | None = None) -> dict[str, Any]:
    payload = await open_issue(ctx, fake, number)
    fake.issue(VERL, number)["state"] = "closed"  # closed before the worker got to it
    out = await act(ctx, VERL, number, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:closed"
    fake.issue(VERL, number)["state"] = "open"
    async with ctx.sessionmaker() as s:
        await s.execute(update(Thread).where(Thread.number == number).values(
            state="open", **({"created_at": opened_at} if opened_at else {})))
        await s.commit()
    return {**payload, "action": "reopened", "issue": {**payload["issue"], "state": "open"}}


async def test_reopened_by_its_author_gets_the_comment_once(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await closed_then_reopened(app_ctx, fake_github, 1)
    payload["sender"] = {"login": "alice", "type": "User"}
    out = await act(app_ctx, VERL, 1, trigger="issues.reopened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    out = await act(app_ctx, VERL, 1, trigger="issues.reopened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "owned"
    assert len(app_comments(fake_github, VERL, 1)) == 1


async def test_reopened_by_someone_else_or_late_or_not_closed_first_says_nothing(
        app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    # reopened by a maintainer: someone is on it
    payload = await closed_then_reopened(app_ctx, fake_github, 2)
    payload["sender"] = {"login": "maint", "type": "User"}
    assert await act(app_ctx, VERL, 2, trigger="issues.reopened", payload=payload,
                     analysis=FAILURE) == {}
    # reopened more than 48 hours after its opening (as if the opening were that old): too old
    payload = await closed_then_reopened(app_ctx, fake_github, 3,
                                         opened_at=datetime.now(UTC) - timedelta(days=3))
    payload["sender"] = {"login": "alice", "type": "User"}
    out = await act(app_ctx, VERL, 3, trigger="issues.reopened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:too_old"
    # an issue the opening was quiet on for another reason (not a report then): unchanged
    opened = await open_issue(app_ctx, fake_github, 4)
    await act(app_ctx, VERL, 4, trigger="issues.opened", payload=opened, analysis=NOT_FAILURE)
    reopened = {**opened, "action": "reopened", "sender": {"login": "alice", "type": "User"},
                "installation": {"id": INST}}
    assert await act(app_ctx, VERL, 4, trigger="issues.reopened", payload=reopened,
                     analysis=FAILURE) == {}
    assert not any(app_comments(fake_github, VERL, n) for n in (2, 3, 4))
    assert [a.status for a in await actions_of(app_ctx, kind="failure_comment")
            if a.status != "skipped"] == []
