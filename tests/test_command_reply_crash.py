"""A command's reply posted as its process died (review 58; left by review 50): `/rltracker
methods`, `rules` or a note, created on GitHub while the worker's task was cancelled before
the reply's record. Through the real worker and the fake GitHub server, on SQLite and
PostgreSQL."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from bot.webhooks.worker import Worker
from tests.test_actions_e2e import VERL, install, open_issue
from tests.test_commands import actions, comment_event, discussion_comments_api
from tests.test_once_on_github import a_worker_dies_in, deliver, no_wait, ten_minutes_pass


def die_after_github_takes_the_reply(fake: Any, number: int, task: list[Any]) -> None:
    """GitHub creates the command's reply (the first comment the app posts with a reply or
    note marker), and the process that asked dies before the answer comes back."""
    died: list[bool] = []

    @fake.route("POST", rf"/repos/{VERL}/issues/{number}/comments$")
    async def create(fake_: Any, request: Any, match: Any, body: Any) -> Any:
        if not died and ("rltracker:reply-to:" in body["body"] or "rltracker:note-to:" in body["body"]):
            died.append(True)
            task[0].cancel()
        comment = fake_.add_comment(VERL, number, body["body"], f"{fake_.app_slug}[bot]", "Bot")
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}


async def reply_actions(ctx: Any) -> list[Any]:
    """The reply's (or note's) claim; not the skip a note's problem records."""
    return [a for a in await actions(ctx, "command") if a.status != "skipped"]


# A reply of each kind the commands post: the methods, the rules, a note on an unknown command.
EVERY_REPLY_KIND = pytest.mark.parametrize("command,marker", [
    ("/rltracker methods entropy-collapse", "rltracker:reply-to:"),
    ("/rltracker rules", "rltracker:reply-to:"),
    ("/rltracker frobnicate", "rltracker:note-to:"),
], ids=["methods", "rules", "note"])


def replies(fake: Any, number: int, marker: str) -> list[dict[str, Any]]:
    return [c for c in fake.comments_of(VERL, number) if marker in c["body"]]


@EVERY_REPLY_KIND
async def test_a_command_reply_posted_as_the_process_died_is_recorded_by_the_retry(
        app_ctx: Any, fake_github: Any, command: str, marker: str) -> None:
    """The worker replying to the command dies after GitHub created the reply. On main the
    retry of the delivery found the reply's claim `pending` (not ten minutes old), answered
    "owned" and the delivery was done: the claim stayed `pending` for good and the app never
    knew its reply. Now the retry waits for the claim to turn stale (the delivery's own
    claim: ClaimHeld), takes it over, finds the reply by its marker and records it; one
    reply on GitHub."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 91, title="How do I log metrics", body="Which logger?")
    task: list[Any] = []
    die_after_github_takes_the_reply(fake_github, 91, task)
    await deliver(app_ctx, comment_event(command, number=91))
    await a_worker_dies_in(app_ctx, task)
    assert len(replies(fake_github, 91, marker)) == 1
    [row] = await reply_actions(app_ctx)
    assert row.status == "pending"

    second = Worker(app_ctx, backoff=no_wait)
    await second.recover()
    await second.run_until_idle()
    assert second.counts["retry"] == 1  # the claim is not stale yet: waited for
    [row] = await reply_actions(app_ctx)
    assert row.status == "pending"
    await ten_minutes_pass(app_ctx)
    await second.run_until_idle()
    [reply] = replies(fake_github, 91, marker)
    [row] = await reply_actions(app_ctx)
    assert row.status == "posted" and row.comment_id == reply["id"]
    assert second.counts["failed"] == 0


async def test_a_discussion_reply_posted_as_the_process_died_is_recorded_by_the_retry(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """The discussion's twin (GitHub's own discussion_comment payload, GraphQL checked against
    GitHub's schema): addDiscussionComment creates the reply and the process dies before the
    answer. The retry of the same delivery (its id in the payload, as the worker gives it)
    waits for the claim (ClaimHeld), then takes it over, finds the reply among the
    discussion's latest comments by its marker and records it; nothing posted again."""
    import json

    from gidgethub import sansio

    from bot.speaking.claims import ClaimHeld
    from bot.webhooks.commands import router as commands_router
    from tests.test_actions_e2e import INST

    await install(app_ctx, fake_github)
    task: list[Any] = []
    # created on GitHub; the process asking dies
    posted = discussion_comments_api(fake_github, shared_dir, first_id=80,
                                     on_create=lambda: task[0].cancel())

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["id"] = 5581
    data["comment"]["body"] = "/rltracker methods entropy_collapse"
    data["discussion"]["node_id"] = "D_58"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    data["_delivery_id"] = "dd-died"
    event = sansio.Event(data, event="discussion_comment", delivery_id="dd-died")
    task.append(asyncio.create_task(commands_router.dispatch(event, app_ctx)))
    with pytest.raises(asyncio.CancelledError):
        await task[0]
    [row] = await reply_actions(app_ctx)
    assert row.status == "pending"
    with pytest.raises(ClaimHeld):  # the worker's retry, at once
        await commands_router.dispatch(event, app_ctx)
    await ten_minutes_pass(app_ctx)
    await commands_router.dispatch(event, app_ctx)
    assert len(posted) == 1
    [row] = await reply_actions(app_ctx)
    assert row.status == "posted"
    assert (row.comment_node_id, row.comment_id) == (posted[0]["id"], posted[0]["databaseId"])


@EVERY_REPLY_KIND
async def test_a_reply_a_maintainer_edited_while_its_claim_waited_is_left_as_they_wrote_it(
        app_ctx: Any, fake_github: Any, command: str, marker: str) -> None:
    """As above, and a maintainer edits the reply on GitHub (corrects a line, keeps the app's
    marker) during the ten minutes before the retry takes the dead run's claim over. On main
    the reply's text was not recorded with the claim before posting: the retry found the
    reply by its marker, could not tell the app's text from the maintainer's, and PATCHed its
    own text back over theirs. The text is now recorded before posting (as the failure
    comment's is): the retry finds a text the app never wrote, leaves it as it is and records
    the reply as the app's (`edited_on_github`); nothing posted or edited again."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 92, title="How do I log metrics", body="Which logger?")
    task: list[Any] = []
    die_after_github_takes_the_reply(fake_github, 92, task)
    await deliver(app_ctx, comment_event(command, number=92))
    await a_worker_dies_in(app_ctx, task)
    [reply] = replies(fake_github, 92, marker)
    edited = "Corrected by a maintainer: see the wiki first.\n" + reply["body"]
    fake_github.comments[reply["id"]]["body"] = edited
    second = Worker(app_ctx, backoff=no_wait)
    await second.recover()
    await second.run_until_idle()
    await ten_minutes_pass(app_ctx)
    await second.run_until_idle()
    assert [c["body"] for c in replies(fake_github, 92, marker)] == [edited]
    assert not fake_github.requests("PATCH", r"/issues/comments/")
    assert len(fake_github.requests("POST", r"/issues/92/comments$")) == 1
    [row] = await reply_actions(app_ctx)
    assert row.status == "posted" and row.comment_id == reply["id"]
    assert row.details.get("edited_on_github") is True
    assert second.counts["failed"] == 0


async def test_a_reply_whose_answer_was_lost_and_a_maintainer_edited_is_left_as_they_wrote_it(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub created the `/rltracker methods` reply and answered 502 (not repeated: it may
    have been created); the attempt failed, the slot given back, and a maintainer edited the
    reply before the worker's retry. The retry takes a new claim and finds the reply by its
    marker: on main no text of the failed attempt was recorded, so the retry PATCHed the
    app's text over the maintainer's. The failed attempt's text is recorded now: the edit is
    left as it is, the reply recorded as the app's; nothing posted or edited again."""
    marker = "rltracker:reply-to:"
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 93, title="How do I log metrics", body="Which logger?")
    lost = [1]

    @fake_github.route("POST", rf"/repos/{VERL}/issues/93/comments$")
    async def create(fake_: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake_.add_comment(VERL, 93, body["body"], f"{fake_.app_slug}[bot]", "Bot")
        if lost and lost.pop():
            return 502, {"message": "Server Error"}
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    await deliver(app_ctx, comment_event("/rltracker methods entropy-collapse", number=93))
    worker = Worker(app_ctx, backoff=no_wait)
    assert await worker.process_one() and worker.counts["retry"] == 1
    [reply] = replies(fake_github, 93, marker)
    edited = reply["body"].replace("Methods for", "Methods (see also our FAQ) for", 1)
    assert edited != reply["body"]
    fake_github.comments[reply["id"]]["body"] = edited
    assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    assert [c["body"] for c in replies(fake_github, 93, marker)] == [edited]
    assert not fake_github.requests("PATCH", r"/issues/comments/")
    assert len(fake_github.requests("POST", r"/issues/93/comments$")) == 1
    [row] = [a for a in await reply_actions(app_ctx) if a.status == "posted"]
    assert row.comment_id == reply["id"] and row.details.get("edited_on_github") is True


async def test_a_two_command_comment_gets_its_note_after_its_edited_reply_is_adopted(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker methods` and `/rltracker rules` in one comment: the methods reply created
    as the process died, edited by a maintainer while the claim waited. The retry leaves the
    edit as it is and the command counts as answered: the note saying the second command was
    not done is posted, once."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 94, title="How do I log metrics", body="Which logger?")
    task: list[Any] = []
    die_after_github_takes_the_reply(fake_github, 94, task)
    await deliver(app_ctx, comment_event(
        "/rltracker methods entropy-collapse\n/rltracker rules", number=94))
    await a_worker_dies_in(app_ctx, task)
    [reply] = replies(fake_github, 94, "rltracker:reply-to:")
    edited = "Corrected by a maintainer.\n" + reply["body"]
    fake_github.comments[reply["id"]]["body"] = edited
    second = Worker(app_ctx, backoff=no_wait)
    await second.recover()
    await second.run_until_idle()
    await ten_minutes_pass(app_ctx)
    await second.run_until_idle()
    assert [c["body"] for c in replies(fake_github, 94, "rltracker:reply-to:")] == [edited]
    assert len(replies(fake_github, 94, "rltracker:note-to:")) == 1
    assert second.counts["failed"] == 0


def reply_lost_once(fake: Any, number: int) -> None:
    """GitHub creates the first reply or note the app posts on the issue and answers 502 (a
    lost answer, not repeated: it may have been created); later ones are answered 201."""
    lost = [1]

    @fake.route("POST", rf"/repos/{VERL}/issues/{number}/comments$")
    async def create(fake_: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake_.add_comment(VERL, number, body["body"], f"{fake_.app_slug}[bot]", "Bot")
        if lost and lost.pop():
            return 502, {"message": "Server Error"}
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}


@EVERY_REPLY_KIND
async def test_a_reply_whose_answer_was_lost_and_a_maintainer_deleted_is_not_posted_again(
        app_ctx: Any, fake_github: Any, command: str, marker: str) -> None:
    """GitHub created the reply (or note) and answered 502; the attempt failed and gave its
    slot back. Before the worker's retry a maintainer deleted the reply (its `deleted`
    delivery handled). On main the retry found no reply of the app's and posted it a second
    time: a deletion is an answer (as for the failure comment, speak62). Now the deletion is
    recorded (`deleted:reply-to:REF` / `deleted:note-to:REF`) and read before posting."""
    from bot.webhooks.events import handle
    from tests.test_once_on_github import deleted_on_github

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 96, title="How do I log metrics", body="Which logger?")
    reply_lost_once(fake_github, 96)
    await deliver(app_ctx, comment_event(command, number=96))
    worker = Worker(app_ctx, backoff=no_wait)
    assert await worker.process_one() and worker.counts["retry"] == 1
    [reply] = replies(fake_github, 96, marker)
    await handle("issue_comment", deleted_on_github(fake_github, 96, reply), app_ctx)
    assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    assert replies(fake_github, 96, marker) == []
    assert len(fake_github.requests("POST", r"/issues/96/comments$")) == 1
    rows = await actions(app_ctx, "command")
    assert not [a for a in rows if a.status in ("posted", "pending")], rows
    [tag] = re.findall(r"rltracker:((?:reply|note)-to:\S+) -->", reply["body"])
    assert f"deleted:{tag}" in {(a.details or {}).get("code") for a in rows}


async def test_a_reply_whose_answer_was_lost_deleted_before_its_deleted_delivery_is_handled(
        app_ctx: Any, fake_github: Any) -> None:
    """As above, but the retry runs before the `deleted` delivery is handled: the reply's
    `created` delivery was (the app's reply stored with its marker), and GitHub no longer has
    it. On main it was posted again; it was created and is gone: not posted again."""
    from sqlalchemy import select

    from bot.store.models import Thread
    from bot.store.threads import upsert_comment
    from tests.test_once_on_github import deleted_on_github

    marker = "rltracker:reply-to:"
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 97, title="How do I log metrics", body="Which logger?")
    reply_lost_once(fake_github, 97)
    await deliver(app_ctx, comment_event("/rltracker methods entropy-collapse", number=97))
    worker = Worker(app_ctx, backoff=no_wait)
    assert await worker.process_one() and worker.counts["retry"] == 1
    [reply] = replies(fake_github, 97, marker)
    async with app_ctx.sessionmaker() as s:  # its `created` delivery, handled
        thread = await s.scalar(select(Thread).where(Thread.number == 97))
        await upsert_comment(s, thread, {"github_id": reply["id"], "author": reply["user"]["login"],
                                         "author_is_bot": True, "author_association": "NONE",
                                         "body": reply["body"], "created_at": reply["created_at"]})
        await s.commit()
    deleted_on_github(fake_github, 97, reply)  # its `deleted` delivery not handled yet
    assert await worker.run_until_idle() == 1 and worker.counts["done"] == 1
    assert replies(fake_github, 97, marker) == []
    assert len(fake_github.requests("POST", r"/issues/97/comments$")) == 1
    rows = await actions(app_ctx, "command")
    assert not [a for a in rows if a.status in ("posted", "pending")], rows
