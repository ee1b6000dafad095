"""Commands on threads GitHub no longer has, and command replies in threaded discussions. On
SQLite and PostgreSQL (`app_ctx` behind `db_url`), GitHub through the fake server."""

from __future__ import annotations

from typing import Any

from gidgethub import sansio

from bot.webhooks.commands import handle_command
from bot.webhooks.routers import router as all_routers
from tests.test_actions_e2e import VERL, actions_of, install, open_issue
from tests.test_commands import comment_event


async def test_a_command_on_a_thread_deleted_on_github_is_recorded_as_not_done(
        app_ctx: Any, fake_github: Any) -> None:
    """The issue deleted on GitHub (its `deleted` delivery handled), then a recheck, an
    ignore and a stop written before it delivered: on main each was recorded `posted` (the
    command done) although nothing ran: the thread is gone. Now a skip says why."""
    await install(app_ctx, fake_github)
    opened = await open_issue(app_ctx, fake_github, 1)
    deleted = {**opened, "action": "deleted", "sender": {"login": "maint", "type": "User"}}
    await all_routers.dispatch(sansio.Event(deleted, event="issues", delivery_id="del-1"), app_ctx)
    for word in ("recheck", "ignore", "stop"):
        assert await handle_command(comment_event(f"/rltracker {word}", number=1),
                                    app_ctx) == "unknown_thread", word
    rows = await actions_of(app_ctx, kind="command")
    assert [(a.status, a.details.get("code", "").split(":")[0], a.details.get("command"))
            for a in rows] == [("skipped", "unknown_thread", w) for w in ("recheck", "ignore", "stop")]
    assert not fake_github.requests("POST", r"/reactions")
