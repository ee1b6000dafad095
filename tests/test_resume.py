"""Lifting a pause of the app's comments: `/rltracker resume` by a maintainer of the
repository, and the operator's `rltracker repos resume OWNER/REPO`.

The nightly reception check pauses a repository whose maintainers hid, deleted or voted down
the app's comments (bot/speaking/reception.py); nothing lifted it, so a paused repository
stayed paused for good. A resume is recorded (who, when), shown where the pause is, and
sticky: the comments that caused the pause do not pause it again the next night.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from bot.context import AppContext
from bot.speaking.reception import refresh_reception
from bot.store.models import Action, Repository
from bot.store.types import utcnow
from bot.webhooks.commands import handle_command
from bot.webhooks.commands import router as commands_router
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.test_actions_e2e import VERL, install
from tests.test_commands import actions, comment_event


@pytest.fixture
async def rdata(fake_github: Any, shared_dir: Path) -> AsyncIterator[FakeData]:
    """The fake GitHub's GraphQL answered from FakeData (the reception check's nodes query)."""
    data = FakeData()
    fake_github.graphql_handler = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    yield data


async def _post(ctx: AppContext, data: FakeData, n: int, *, created_at: datetime,
                minimized: str | None = None) -> None:
    """An app's failure comment on issue n of verl, as the reception check reads it."""
    node = data._comment("IssueComment", created_at)
    node["reactions_up"], node["reactions_down"] = 1, 0
    if minimized:
        node["isMinimized"], node["minimizedReason"] = True, minimized
    async with ctx.sessionmaker() as session:
        session.add(Action(repo=VERL, number=n, kind="failure_comment", status="posted", body="…",
                           comment_id=node["databaseId"], comment_node_id=node["id"],
                           created_at=created_at))
        await session.commit()


async def _repo(ctx: AppContext) -> Repository:
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(func.lower(Repository.full_name) == VERL.lower()))
        assert row is not None
        return row


async def _pause(ctx: AppContext) -> None:
    """verl paused as the reception check pauses it."""
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == VERL))
        assert row is not None
        row.comments_paused, row.paused_reason = True, "2 of the app's last 10 comments were hidden"
        await session.commit()


async def test_a_maintainer_resumes_a_paused_repository_and_it_stays_resumed(
        app_ctx: Any, fake_github: Any, rdata: FakeData) -> None:
    await install(app_ctx, fake_github)
    start = utcnow() - timedelta(hours=5)
    for n in range(1, 11):  # 2 of the last 10 hidden: the check pauses
        await _post(app_ctx, rdata, n, created_at=start + timedelta(minutes=n),
                    minimized="OFF_TOPIC" if n in (4, 8) else None)
    assert (await refresh_reception(app_ctx)).paused == [VERL]
    assert (await _repo(app_ctx)).comments_paused

    # The thread's author who is no maintainer speaks for the thread, not the repository.
    fake_github.add_issue(VERL, 12, "t", "", "alice")
    by_author = comment_event("/rltracker resume", user="alice", opener="alice", number=12)
    assert await handle_command(by_author, app_ctx) == "not_allowed"
    assert (await _repo(app_ctx)).comments_paused
    skip, told = await actions(app_ctx, "command")
    assert skip.status == "skipped" and "maintainer" in (skip.reason or "")
    assert told.details["note"] == "not_maintainer"  # said to them once (user77)

    # A maintainer, on any issue of the repository (not stored here): lifted, 👍, recorded.
    fake_github.set_permission(VERL, "bob", "write")
    before = utcnow()
    event = comment_event("/rltracker resume", user="bob", association="MEMBER", number=12)
    assert await handle_command(event, app_ctx) == "resume"
    await commands_router.dispatch(event, app_ctx)  # redelivery: handled once
    row = await _repo(app_ctx)
    assert not row.comments_paused and row.resumed_by == "@bob"
    assert row.resumed_at is not None and row.resumed_at >= before
    cid = event.data["comment"]["id"]
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    done = [a for a in await actions(app_ctx, "command") if a.status != "skipped"][1:]  # (the note)
    assert [(a.status, a.details) for a in done] == [
        ("posted", {"command": "resume", "by": "maintainer", "was_paused": True, "reacted": True})]

    # Shown where the pause is shown (the /repos/ table and the API's reception rows).
    from bot.site.data import reception

    async with app_ctx.sessionmaker() as session:
        [shown] = [r for r in await reception(session) if r["repo"] == VERL]
    assert not shown["paused"] and shown["resumed_by"] == "@bob"
    assert shown["resumed_at"][:10] == row.resumed_at.date().isoformat()

    # Sticky: the next night's check does not count the comments hidden before the resume.
    assert (await refresh_reception(app_ctx)).paused == []
    assert not (await _repo(app_ctx)).comments_paused

    # New hidden comments after it pause the repository again.
    after = utcnow() + timedelta(seconds=1)
    for n in (21, 22):
        await _post(app_ctx, rdata, n, created_at=after + timedelta(seconds=n), minimized="SPAM")
    assert (await refresh_reception(app_ctx)).paused == [VERL]
    row = await _repo(app_ctx)
    assert row.comments_paused and "2 of the app's last 2 comments" in (row.paused_reason or "")


async def test_an_organisation_member_without_write_access_may_not_resume(
        app_ctx: Any, fake_github: Any) -> None:
    """author_association MEMBER says the commenter belongs to the organisation owning the
    repository, not that they may write to it (an organisation's base permission can be read,
    or none). The pause was imposed by people who hid the app's comments (write access); an
    organisation member who only reads the repository must not lift it. GitHub is asked
    (the collaborator permission API): write, maintain or admin may; triage, read or no
    access at all (404) may not, recorded as the `not_maintainer` skip. An OWNER is not asked."""
    await install(app_ctx, fake_github)
    await _pause(app_ctx)
    fake_github.set_permission(VERL, "dana", "read")
    fake_github.set_permission(VERL, "tim", "triage")
    fake_github.set_permission(VERL, "maya", "maintain")
    fake_github.add_issue(VERL, 6, "t", "", "alice")
    for login in ("dana", "tim", "erin"):  # erin: no access GitHub knows of (404)
        event = comment_event("/rltracker resume", user=login, opener="alice",
                              association="MEMBER", number=6)
        assert await handle_command(event, app_ctx) == "not_allowed"
        assert (await _repo(app_ctx)).comments_paused
    skips = [a for a in await actions(app_ctx, "command") if a.status == "skipped"]
    assert len(skips) == 3
    assert all(a.details["code"].startswith("not_maintainer:") for a in skips)
    asked = fake_github.requests("GET", rf"/repos/{VERL}/collaborators/[^/]+/permission")
    assert len(asked) == 3
    assert not fake_github.requests("POST", r"/reactions")

    event = comment_event("/rltracker resume", user="maya", association="MEMBER", number=6)
    assert await handle_command(event, app_ctx) == "resume"
    row = await _repo(app_ctx)
    assert not row.comments_paused and row.resumed_by == "@maya"

    async with app_ctx.sessionmaker() as session:
        row_paused = await session.scalar(select(Repository).where(Repository.full_name == VERL))
        row_paused.comments_paused = True
        await session.commit()
    owner = comment_event("/rltracker resume", user="olga", association="OWNER", number=6)
    assert await handle_command(owner, app_ctx) == "resume"
    assert not (await _repo(app_ctx)).comments_paused
    assert len(fake_github.requests("GET", r"/collaborators/")) == 4  # the owner: not asked


async def test_a_collaborator_with_read_or_triage_only_may_not_resume(app_ctx: Any, fake_github: Any) -> None:
    """A collaborator (author_association COLLABORATOR) may have been invited with the read or
    triage role: asked of GitHub like an organisation member; write lifts the pause."""
    await install(app_ctx, fake_github)
    await _pause(app_ctx)
    fake_github.set_permission(VERL, "rita", "read")
    fake_github.set_permission(VERL, "walt", "write")
    for n in (6, 7):
        fake_github.add_issue(VERL, n, "t", "", "alice")
    event = comment_event("/rltracker resume", user="rita", association="COLLABORATOR", number=6)
    assert await handle_command(event, app_ctx) == "not_allowed"
    assert (await _repo(app_ctx)).comments_paused
    event = comment_event("/rltracker resume", user="walt", association="COLLABORATOR", number=7)
    assert await handle_command(event, app_ctx) == "resume"
    assert (await _repo(app_ctx)).resumed_by == "@walt"


async def test_resume_in_dry_run_lifts_the_pause_and_posts_nothing(ctx: Any, fake_github: Any) -> None:
    """Dry run (here the service's; a repository's `dry_run: true` alike): the pause is the
    app's own state and is lifted; the 👍 is not posted, the command is recorded `dry_run`."""
    await install(ctx, fake_github)
    await _pause(ctx)
    event = comment_event("/rltracker resume", user="carol", association="OWNER", number=3)
    assert await handle_command(event, ctx) == "resume"
    row = await _repo(ctx)
    assert not row.comments_paused and row.resumed_by == "@carol"
    [action] = await actions(ctx, "command")
    assert action.status == "dry_run" and action.details["was_paused"] is True
    assert not fake_github.requests("POST")


async def test_resume_where_nothing_is_paused_changes_nothing(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_permission(VERL, "bob", "write")
    event = comment_event("/rltracker resume", user="bob", association="COLLABORATOR", number=5)
    assert await handle_command(event, app_ctx) == "resume"
    row = await _repo(app_ctx)
    assert not row.comments_paused and row.resumed_at is None and row.resumed_by is None
    [action] = await actions(app_ctx, "command")
    assert action.details["was_paused"] is False


def test_the_operator_resumes_from_the_command_line(db_url: str, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from bot.cli import main
    from bot.config import Settings

    for name in ("GITHUB_APP_ID", "GITHUB_PRIVATE_KEY", "GITHUB_PRIVATE_KEY_PATH", "GITHUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATABASE_URL", db_url)

    async def setup() -> None:
        ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
        try:
            async with ctx.sessionmaker() as session:
                session.add(Repository(full_name=VERL, comments_paused=True,
                                       paused_reason="👎 outnumber 👍 on the app's last 3 comments (4 to 1)"))
                await session.commit()
        finally:
            await ctx.close()

    async def read() -> Repository:
        ctx = AppContext.create(Settings.from_env({}, database_url=db_url))
        try:
            return await _repo(ctx)
        finally:
            await ctx.close()

    asyncio.run(setup())
    assert main(["repos", "resume", "volcengine/verl"]) == 0  # the former name, as elsewhere
    out = capsys.readouterr().out
    assert f"comments in {VERL} resumed" in out and "👎 outnumber 👍" in out
    row = asyncio.run(read())
    assert not row.comments_paused and row.resumed_by == "operator" and row.resumed_at is not None
    assert main(["repos", "resume", VERL]) == 0
    assert "not paused" in capsys.readouterr().err
    assert main(["repos", "resume", "nobody/nothing"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rltracker repos resume: nobody/nothing is not a "
                                                     "repository")


async def test_a_maintainer_resumes_from_a_discussion(app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """From a discussion (GitHub's payload): lifted, and the 👍 goes through GraphQL
    `addReaction` on the comment's node, as for the other commands there."""
    import json

    from gidgethub import sansio

    from tests.test_actions_e2e import INST

    await install(app_ctx, fake_github)
    await _pause(app_ctx)
    sent: list[dict[str, Any]] = []

    @fake_github.route("POST", r"/graphql")
    def react(fake: Any, request: Any, match: Any, body: Any) -> Any:
        sent.append(body.get("variables") or {})
        return {"data": {"addReaction": {"reaction": {"content": "THUMBS_UP"}}}}

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["body"] = "/rltracker resume"
    data["comment"]["author_association"] = "OWNER"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    event = sansio.Event(data, event="discussion_comment", delivery_id="dd-resume")
    assert await handle_command(event, app_ctx) == "resume"
    row = await _repo(app_ctx)
    assert not row.comments_paused and row.resumed_by == f"@{data['comment']['user']['login']}"
    assert sent == [{"id": data["comment"]["node_id"]}]
