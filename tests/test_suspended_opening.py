"""An issue opened while the app's installation was suspended gets no failure comment at its
first edit after the unsuspend (user82).

The owner suspended the app; an issue reporting a training failure was opened meanwhile: the
app tracked it and said nothing, and recorded nothing either (/api/actions showed no reason,
so the operator could not tell a suspension from a broken decision). Once unsuspended, the
issue's author fixed a typo in it (`issues.edited`): the edit was decided as "an issue edited
into a report" and the failure comment was posted, hours late, on a report that was one from
its start. Now the opening decision records the skip `suspended`, and an edit of an issue whose
opening found the app suspended posts nothing (an issue opened afterwards is answered as
ever). GitHub's `issues` payloads through POST /webhook and the worker, GitHub the fake over
HTTP; SQLite and PostgreSQL."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select

from bot.speaking.render import FAILURE_MARKER
from bot.store.models import Action, Installation
from tests.test_actions_e2e import INST, VERL, install, iso
from tests.test_github_refusals import deliver

TITLE = "Entropy collapse during GRPO training"
BODY = ("Policy entropy collapses to almost zero after 150 steps and the reward plateaus. "
        "Training keeps running without errors, but the model stops exploring.")


def issue_event(fake: Any, number: int, action: str, **changes: Any) -> dict[str, Any]:
    """GitHub's `issues` delivery of the fake's issue as it is now."""
    return copy.deepcopy({
        "action": action, "issue": fake.issue(VERL, number), "repository": fake.repo_json(VERL),
        "installation": {"id": INST}, "sender": {"login": "alice", "type": "User"},
        **({"changes": changes} if changes else {})})


async def _suspended(ctx: Any, suspended: bool) -> None:
    async with ctx.sessionmaker() as session:
        (await session.get(Installation, INST)).suspended = suspended
        await session.commit()


def _posted(fake: Any, number: int) -> list[dict[str, Any]]:
    return [c for c in fake.comments_of(VERL, number) if FAILURE_MARKER in c["body"]]


async def test_an_issue_opened_while_suspended_gets_no_comment_at_its_edit(
        app_ctx: Any, fake_github: Any) -> None:
    """Failed on main: no skip recorded at the opening, and the comment posted at the edit."""
    await install(app_ctx, fake_github)
    await _suspended(app_ctx, True)
    opened = datetime.now(UTC) - timedelta(minutes=30)
    fake_github.add_issue(VERL, 91, TITLE, BODY, "alice", created_at=iso(opened))
    row = await deliver(app_ctx, "issues", issue_event(fake_github, 91, "opened"))
    assert row.status == "done", row.last_error
    async with app_ctx.sessionmaker() as session:
        codes = [a.details.get("code") for a in await session.scalars(
            select(Action).where(Action.number == 91))]
    assert codes == ["suspended"]
    await _suspended(app_ctx, False)
    issue = fake_github.issue(VERL, 91)
    before = {"body": {"from": issue["body"]}}
    issue.update(body=BODY + " (typo fixed)", updated_at=iso(opened + timedelta(minutes=5)))
    row = await deliver(app_ctx, "issues", issue_event(fake_github, 91, "edited", **before))
    assert row.status == "done", row.last_error
    assert not _posted(fake_github, 91)
    # An issue opened after the unsuspend is answered.
    fake_github.add_issue(VERL, 92, TITLE, BODY, "alice", created_at=iso(datetime.now(UTC)))
    await deliver(app_ctx, "issues", issue_event(fake_github, 92, "opened"))
    assert len(_posted(fake_github, 92)) == 1


async def test_a_command_while_suspended_is_recorded_as_not_done(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """A `/rltracker` command through a suspended installation: nothing can be said on
    GitHub, and nothing was recorded either (the delivery `done`, /api/actions silent). Now
    the skip `not_installed:{comment id}` says why; nothing is asked of GitHub or posted.
    Failed on main (no record)."""
    from tests.test_app_comment_author import comment_payload

    await install(app_ctx, fake_github)
    author = comment_payload(shared_dir, 93, 1, "")["issue"]["user"]["login"]
    fake_github.add_issue(VERL, 93, TITLE, BODY, author, created_at=iso(datetime.now(UTC)))
    await _suspended(app_ctx, True)
    before = len(fake_github.calls)
    row = await deliver(app_ctx, "issue_comment",
                        comment_payload(shared_dir, 93, 940001, "/rltracker recheck"))
    assert row.status == "done", row.last_error
    async with app_ctx.sessionmaker() as session:
        codes = [a.details.get("code") for a in await session.scalars(
            select(Action).where(Action.number == 93, Action.kind == "command"))]
    assert codes == ["not_installed:940001"]
    assert not [c for c in fake_github.calls[before:] if c.method != "GET"]
