"""A verdict taken back (verdicts82): a `/rltracker kind` or `not-a-failure` whose comment its
author deletes, or edits so that the command is gone or another, no longer stands. The thread
goes back to the verdict given before it, or to the analyzer's finding: the failure comment
rewritten (one comment, never posted again), shown again, the mute lifted; the retraction
recorded as an action. A later verdict standing: nothing to undo. And a verdict through a
suspended installation: not stored, its skip saying so.

GitHub's own `issue_comment` payloads (created, edited, deleted) from ../shared/fixtures/webhooks,
through the commands router and once through POST /webhook and the worker; GitHub the fake
server over HTTP; SQLite and PostgreSQL. Each failed on main: the verdict stayed."""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from bot.store.models import Action, Installation
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import INST, VERL, app_comments, install, iso
from tests.test_verdicts import Minimising, commented, muted, store_analysis, verdicts

NOW = datetime.now(UTC)


def payload(shared_dir: Path, action: str, number: int, comment_id: int, body: str, *,
            at: datetime, before: str | None = None, user: str = "alice") -> dict[str, Any]:
    """GitHub's issue_comment `action` payload (created, edited, deleted) for this comment on
    VERL#`number`, written at `at` by `user` (the issue's author, alice, by default)."""
    data = copy.deepcopy(json.loads(
        (shared_dir / "fixtures" / "webhooks" / "issue_comment" / f"{action}.json").read_text()))
    data["comment"].update(id=comment_id, node_id=f"IC_{comment_id}", body=body,
                           created_at=iso(at), updated_at=iso(at), author_association="NONE",
                           user={**data["comment"]["user"], "login": user, "type": "User"})
    data["issue"].update(number=number, state="open",
                         user={**data["issue"]["user"], "login": "alice", "type": "User"})
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    data["sender"] = {**data["sender"], "login": user, "type": "User"}
    if action == "edited":
        data["changes"] = {"body": {"from": before or ""}}
        data["comment"]["updated_at"] = iso(at + timedelta(seconds=30))
    return data


async def dispatch(ctx: Any, data: dict[str, Any]) -> None:
    await commands_router.dispatch(sansio.Event(data, event="issue_comment", delivery_id="d"), ctx)


async def retractions(ctx: Any, number: int) -> list[Action]:
    async with ctx.sessionmaker() as s:
        return [a for a in await s.scalars(select(Action).where(
            Action.number == number, Action.kind == "command").order_by(Action.id))
            if (a.details or {}).get("retraction")]


async def setup(ctx: Any, fake: Any, number: int) -> tuple[dict[str, Any], Minimising]:
    """An issue with the app's failure comment for the analyzer's entropy collapse."""
    await install(ctx, fake)
    await commented(ctx, fake, number)
    await store_analysis(ctx, number)
    [posted] = app_comments(fake, VERL, number)
    github = Minimising()
    fake.graphql_handler = github
    return posted, github


async def test_a_deleted_kind_gives_the_comment_back_to_the_analyzer(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """`kind kl_growth`, then its comment deleted: the verdict is gone, the app's comment says
    what it said before the verdict (the analyzer's kind), edited, never posted again; the
    retraction is recorded once, a redelivered deletion changes nothing."""
    posted, _ = await setup(app_ctx, fake_github, 41)
    await dispatch(app_ctx, payload(shared_dir, "created", 41, 950001,
                                    "/rltracker kind kl_growth", at=NOW - timedelta(minutes=2)))
    [rewritten] = app_comments(fake_github, VERL, 41)
    assert "/failures/kl_growth" in rewritten["body"] and len(await verdicts(app_ctx)) == 1
    for _ in range(2):  # delivered, redelivered
        await dispatch(app_ctx, payload(shared_dir, "deleted", 41, 950001,
                                        "/rltracker kind kl_growth", at=NOW - timedelta(minutes=2)))
        [now] = app_comments(fake_github, VERL, 41)
        assert now["id"] == posted["id"] and now["body"] == posted["body"]
        assert await verdicts(app_ctx) == []
        assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 2
        assert len(fake_github.requests("POST", r"/issues/41/comments")) == 1
        [record] = await retractions(app_ctx, 41)
        assert record.details["outcome"] == "analyzer" and record.details["retraction"] == "deleted"
        assert "taken back" in record.reason
    # GitHub's "Redeliver" of the delivery that gave it: not given again
    await dispatch(app_ctx, payload(shared_dir, "created", 41, 950001,
                                    "/rltracker kind kl_growth", at=NOW - timedelta(minutes=2)))
    assert await verdicts(app_ctx) == []
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == 2


async def test_a_deleted_not_a_failure_shows_the_comment_again_and_lifts_the_mute(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    posted, github = await setup(app_ctx, fake_github, 42)
    await dispatch(app_ctx, payload(shared_dir, "created", 42, 950002,
                                    "/rltracker not-a-failure", at=NOW - timedelta(minutes=2)))
    assert github.minimized == {posted["node_id"]: True} and await muted(app_ctx, 42)
    await dispatch(app_ctx, payload(shared_dir, "deleted", 42, 950002,
                                    "/rltracker not-a-failure", at=NOW - timedelta(minutes=2)))
    assert github.minimized == {posted["node_id"]: False} and not await muted(app_ctx, 42)
    [now] = app_comments(fake_github, VERL, 42)
    assert now["body"] == posted["body"] and await verdicts(app_ctx) == []
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Action).where(Action.number == 42, Action.kind == "failure_comment"))
    assert (row.is_minimized, row.frozen) == (False, False)


async def test_a_deleted_latest_verdict_gives_back_the_one_before_and_an_earlier_one_undoes_nothing(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """`kind kl_growth`, then `not-a-failure`, then `kind response_length_drift`... in order:
    deleting the latest brings back the one before (as given: who, when); deleting one a
    later verdict stands over changes nothing on the thread (recorded), and it is not brought
    back when the later one goes."""
    posted, github = await setup(app_ctx, fake_github, 43)
    first = payload(shared_dir, "created", 43, 950003, "/rltracker kind kl_growth",
                    at=NOW - timedelta(minutes=3))
    second = payload(shared_dir, "created", 43, 950004, "/rltracker not-a-failure",
                     at=NOW - timedelta(minutes=2))
    await dispatch(app_ctx, first)
    await dispatch(app_ctx, second)
    assert github.minimized == {posted["node_id"]: True}

    await dispatch(app_ctx, {**second, "action": "deleted"})
    [v] = await verdicts(app_ctx)
    assert (v.is_failure_report, v.category, v.comment_id, v.login) == (True, "kl_growth", 950003, "alice")
    assert iso(v.given_at) == first["comment"]["created_at"]
    assert github.minimized == {posted["node_id"]: False} and not await muted(app_ctx, 43)
    [now] = app_comments(fake_github, VERL, 43)
    assert "/failures/kl_growth" in now["body"]

    third = payload(shared_dir, "created", 43, 950005, "/rltracker kind entropy_collapse",
                    at=NOW - timedelta(minutes=1))
    await dispatch(app_ctx, third)
    patches = len(fake_github.requests("PATCH", r"/issues/comments/\d+"))
    await dispatch(app_ctx, {**first, "action": "deleted"})  # a later verdict stands
    [v] = await verdicts(app_ctx)
    assert (v.category, v.comment_id) == ("entropy_collapse", 950005)
    assert len(fake_github.requests("PATCH", r"/issues/comments/\d+")) == patches
    await dispatch(app_ctx, {**third, "action": "deleted"})  # none left standing
    assert await verdicts(app_ctx) == []
    [now] = app_comments(fake_github, VERL, 43)
    assert now["body"] == posted["body"]
    assert [r.details["outcome"] for r in await retractions(app_ctx, 43)] == [
        "restored", "later_verdict", "analyzer"]


async def test_an_edit_taking_the_command_away_takes_the_verdict_back(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """An edit keeping the command (a typo fixed around it) changes nothing; one removing the
    line takes the verdict back; an edit changing it takes it back and gets the comment's one
    note (a comment is answered once: a new comment gives another)."""
    posted, _ = await setup(app_ctx, fake_github, 44)
    at = NOW - timedelta(minutes=2)
    command = "I think it is the KL.\n/rltracker kind kl_growth"
    await dispatch(app_ctx, payload(shared_dir, "created", 44, 950006, command, at=at))
    await dispatch(app_ctx, payload(shared_dir, "edited", 44, 950006,
                                    "I think it's the KL.\n/rltracker kind kl_growth", at=at, before=command))
    assert len(await verdicts(app_ctx)) == 1 and await retractions(app_ctx, 44) == []
    await dispatch(app_ctx, payload(shared_dir, "edited", 44, 950006, "I think it is the KL.",
                                    at=at, before=command))
    assert await verdicts(app_ctx) == []
    [now] = app_comments(fake_github, VERL, 44)
    assert now["body"] == posted["body"]
    [record] = await retractions(app_ctx, 44)
    assert record.details["retraction"] == "edited"

    other = "/rltracker kind kl_growth"
    await dispatch(app_ctx, payload(shared_dir, "created", 44, 950007, other, at=at))
    await dispatch(app_ctx, payload(shared_dir, "edited", 44, 950007, "/rltracker not-a-failure",
                                    at=at, before=other))
    assert await verdicts(app_ctx) == []
    [note] = [c for c in fake_github.comments_of(VERL, 44) if "note-to:950007" in c["body"]]
    assert "verdict was taken back by the edit" in note["body"]


async def test_a_deleted_verdict_through_the_webhook(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub's `deleted` delivery posted to /webhook, handled by the worker with every
    handler of the event (the comment's row dropped, the verdict taken back)."""
    from tests.test_github_refusals import deliver

    posted, _ = await setup(app_ctx, fake_github, 45)
    created = payload(shared_dir, "created", 45, 950008, "/rltracker kind kl_growth",
                      at=NOW - timedelta(minutes=2))
    assert (await deliver(app_ctx, "issue_comment", created)).status == "done"
    assert len(await verdicts(app_ctx)) == 1
    row = await deliver(app_ctx, "issue_comment", payload(
        shared_dir, "deleted", 45, 950008, "/rltracker kind kl_growth", at=NOW - timedelta(minutes=2)))
    assert row.status == "done", row.last_error
    assert await verdicts(app_ctx) == []
    [now] = app_comments(fake_github, VERL, 45)
    assert now["id"] == posted["id"] and "set with `/rltracker kind`" not in now["body"]
    assert len(fake_github.requests("POST", r"/issues/45/comments")) == 1
    [record] = await retractions(app_ctx, 45)
    assert record.details["outcome"] == "analyzer"
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app

    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        html = await (await client.get(f"/threads/{VERL}/45")).text()
    assert "/rltracker kind taken back (its comment deleted)" in html
    assert "kind set by @" not in html


async def test_a_verdict_done_before_verdicts_were_kept_is_brought_back_from_its_comment(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """A verdict command done before this pass has no `given` in its action: the verdict
    before a deleted one is rebuilt from its stored comment (who wrote it, when)."""
    from bot.store.models import Thread
    from bot.store.threads import upsert_comment

    await setup(app_ctx, fake_github, 47)
    first = payload(shared_dir, "created", 47, 950010, "/rltracker kind kl_growth",
                    at=NOW - timedelta(minutes=3), user="maint")
    fake_github.set_permission(VERL, "maint", "write")
    first["comment"]["author_association"] = "MEMBER"
    await dispatch(app_ctx, first)
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Action).where(Action.dedupe_key.like("%:command:950010")))
        row.details = {k: v for k, v in row.details.items() if k != "given"}
        thread = await s.scalar(select(Thread).where(Thread.number == 47))
        await upsert_comment(s, thread, {"github_id": 950010, "author": "maint", "kind": "comment",
                                         "body": first["comment"]["body"],
                                         "created_at": first["comment"]["created_at"]})
        await s.commit()
    second = payload(shared_dir, "created", 47, 950011, "/rltracker not-a-failure",
                     at=NOW - timedelta(minutes=2))
    await dispatch(app_ctx, second)
    await dispatch(app_ctx, {**second, "action": "deleted"})
    [v] = await verdicts(app_ctx)
    assert (v.category, v.login, v.role, v.comment_id) == ("kl_growth", "maint", "maintainer", 950010)
    assert iso(v.given_at) == first["comment"]["created_at"]


async def test_a_verdict_while_suspended_is_not_stored_and_says_so(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Through a suspended installation a verdict is not stored, as no command is done there
    (nothing can be acknowledged, and the owner stopped the app acting): its skip names the
    verdict that was not stored, for the operator; a redelivery after the unsuspend stores
    it and gets the 👍."""
    await setup(app_ctx, fake_github, 46)
    async with app_ctx.sessionmaker() as s:
        (await s.get(Installation, INST)).suspended = True
        await s.commit()
    data = payload(shared_dir, "created", 46, 950009, "/rltracker kind kl_growth",
                   at=NOW - timedelta(minutes=2))
    await dispatch(app_ctx, data)
    assert await verdicts(app_ctx) == []
    async with app_ctx.sessionmaker() as s:
        [skip] = list(await s.scalars(select(Action).where(
            Action.number == 46, Action.kind == "command")))
    assert skip.details["code"] == "not_installed:950009"
    assert skip.details["verdict"] == "kl_growth" and "not stored" in skip.reason
    async with app_ctx.sessionmaker() as s:
        (await s.get(Installation, INST)).suspended = False
        await s.commit()
    await dispatch(app_ctx, data)
    [v] = await verdicts(app_ctx)
    assert v.category == "kl_growth"
    assert len(fake_github.requests("POST", r"/issues/comments/950009/reactions")) == 1


async def test_an_edit_naming_the_same_kind_otherwise_keeps_the_verdict(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """reread83: the kind written in another case or spelling (`KL-Growth` for `kl_growth`),
    or `kind none` for `not-a-failure`, asks what the command asked: the verdict stands, no
    retraction, no note (on main the words were compared, not the verdict: it was taken back
    and the person told so)."""
    posted, _ = await setup(app_ctx, fake_github, 47)
    at = NOW - timedelta(minutes=2)
    for comment_id, first, second in ((950020, "/rltracker kind kl_growth", "/rltracker kind KL-Growth"),
                                       (950021, "/rltracker not-a-failure", "/rltracker kind none")):
        await dispatch(app_ctx, payload(shared_dir, "created", 47, comment_id, first, at=at))
        given = [(v.is_failure_report, v.category, v.comment_id) for v in await verdicts(app_ctx)]
        await dispatch(app_ctx, payload(shared_dir, "edited", 47, comment_id, second, at=at,
                                        before=first))
        assert [(v.is_failure_report, v.category, v.comment_id)
                for v in await verdicts(app_ctx)] == given
        assert await retractions(app_ctx, 47) == []
        assert [c for c in fake_github.comments_of(VERL, 47) if "note-to:" in c["body"]] == []
        at += timedelta(minutes=1)


async def test_a_verdict_given_while_a_retraction_shows_the_comment_again_stands(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """reread83: two deliveries at once. `not-a-failure` deleted: while its retraction reads
    the app's comment to show it again, a new `not-a-failure` is handled (the
    fake server hands it in at that read: the interleaving of two deliveries in one worker
    batch, made certain; the author again, in a new comment). The new verdict stands, so the comment stays hidden and the thread
    muted (on main the retraction went on to show the comment the new verdict hides)."""
    posted, github = await setup(app_ctx, fake_github, 48)
    at = NOW - timedelta(minutes=3)
    await dispatch(app_ctx, payload(shared_dir, "created", 48, 950030, "/rltracker not-a-failure", at=at))
    assert github.minimized == {posted["node_id"]: True}
    handed_in: list[bool] = []

    async def answer(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "nodes(" in query and not handed_in:
            handed_in.append(True)
            await dispatch(app_ctx, payload(shared_dir, "created", 48, 950031,
                                            "/rltracker not-a-failure",
                                            at=at + timedelta(minutes=1)))
        return github(query, variables)

    fake_github.graphql_handler = answer
    await dispatch(app_ctx, payload(shared_dir, "deleted", 48, 950030, "/rltracker not-a-failure", at=at))
    assert handed_in == [True]
    assert [(v.is_failure_report, v.comment_id) for v in await verdicts(app_ctx)] == [(False, 950031)]
    assert github.minimized == {posted["node_id"]: True} and await muted(app_ctx, 48)
