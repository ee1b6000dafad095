"""Deliveries about threads and comments handled out of order, as the webhook handlers store
them (bot.webhooks.events), on SQLite and PostgreSQL: two edits within one second (GitHub's
`updated_at` counts seconds), and a thread's opening delivery handled after later ones."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio

from bot.store.threads import get_thread, load_thread_record
from bot.webhooks import events

HELLO = "Codertocat/Hello-World"
FIRST = "The loss goes to NaN after step 300 with bf16."
SECOND = "The loss goes to NaN after step 300 with bf16 and lr 1e-5; fp32 is fine."


def _shared(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await events.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


async def deliver(ctx: Any, batched: bool, *deliveries: tuple[str, dict[str, Any]]) -> None:
    if batched:
        outcomes = await events.handle_batch(
            [sansio.Event(p, event=e, delivery_id=str(uuid.uuid4())) for e, p in deliveries], ctx)
        assert outcomes == [None] * len(deliveries)
    else:
        for event, payload in deliveries:
            await dispatch(ctx, event, payload)


async def record(ctx: Any, number: int) -> dict[str, Any]:
    async with ctx.sessionmaker() as session:
        found = await load_thread_record(session, HELLO, number)
    assert found is not None
    return found


# ---- 1. comments edited twice in one second ------------------------------------------------
COMMENT_EVENTS = {
    "issue_comment": ("issue_comment/created.json", 1),
    "discussion_comment": ("discussion_comment/created.json", 4),
}


def comment_edited(created: dict[str, Any], body: str, was: str, at: str) -> dict[str, Any]:
    payload = copy.deepcopy(created)
    payload["action"] = "edited"
    payload["comment"].update(body=body, updated_at=at)
    payload["changes"] = {"body": {"from": was}}
    return payload


@pytest.mark.parametrize("event", sorted(COMMENT_EVENTS))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_comment_edits_in_one_second_out_of_order_keep_the_last(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """Two edits of an issue or discussion comment within one second carry the same
    `updated_at`; the first, handled last, was not "older" and put its text back (as review
    comments did before `_same_second`). Of the same second, only the edit of the stored text
    applies; a late `created` of that second changes nothing."""
    name, number = COMMENT_EVENTS[event]
    created = _shared(shared_dir, name)
    at = "2030-01-02T03:04:05Z"
    first = comment_edited(created, FIRST, created["comment"]["body"], at)
    second = comment_edited(created, SECOND, FIRST, at)
    await deliver(ctx, batched, (event, created), (event, second), (event, first))

    async def bodies() -> list[str]:
        return [c["body"] for c in (await record(ctx, number))["comments"]]

    assert await bodies() == [SECOND]
    # In order, an edit of the same second applies; a `created` of that second does not.
    third = comment_edited(created, FIRST, SECOND, at)
    await dispatch(ctx, event, third)
    assert await bodies() == [FIRST]
    same = copy.deepcopy(created)
    same["comment"]["updated_at"] = at
    await dispatch(ctx, event, same)
    assert await bodies() == [FIRST]


# ---- 1b. thread bodies and titles edited twice in one second -------------------------------
THREAD_EVENTS = {
    "issues": ("issues/opened.json", "issue", 1),
    "discussion": ("discussion/created.json", "discussion", 4),
    "pull_request": ("pull_request/opened.json", "pull_request", 2),
}


def thread_edited(opened: dict[str, Any], key: str, changes: dict[str, str],
                  now: dict[str, str], at: str) -> dict[str, Any]:
    payload = copy.deepcopy(opened)
    payload["action"] = "edited"
    payload[key].update(now, updated_at=at)
    payload["changes"] = {field: {"from": was} for field, was in changes.items()}
    return payload


@pytest.mark.parametrize("event", sorted(THREAD_EVENTS))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_thread_edits_in_one_second_out_of_order_keep_the_last(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """An issue, discussion or pull request edited twice within one second: the first edit,
    handled last, put its body (and title) back, and the analysis read the older text. Of the
    same second, a body or title other than the stored one applies only from an `edited`
    whose `changes.*.from` is the stored one; the delivery's other fields apply as before."""
    name, key, number = THREAD_EVENTS[event]
    opened = _shared(shared_dir, name)
    body0, title0 = opened[key]["body"], opened[key]["title"]
    at = "2030-01-02T03:04:05Z"
    first = thread_edited(opened, key, {"body": body0, "title": title0},
                          {"body": FIRST, "title": "NaN loss"}, at)
    second = thread_edited(opened, key, {"body": FIRST},
                           {"body": SECOND, "title": "NaN loss"}, at)
    # its other fields still follow the plain `updated_at` rule
    first[key]["labels"] = [{"name": "bug"}]
    await deliver(ctx, batched, (event, opened), (event, second), (event, first))
    stored = await record(ctx, number)
    assert (stored["body"], stored["title"]) == (SECOND, "NaN loss")
    assert stored["labels"] == ["bug"]
    # In order, an edit of the same second applies, and a title edit alone keeps the body.
    third = thread_edited(opened, key, {"title": "NaN loss"},
                          {"body": SECOND, "title": "NaN loss with bf16"}, at)
    await dispatch(ctx, event, third)
    stored = await record(ctx, number)
    assert (stored["body"], stored["title"]) == (SECOND, "NaN loss with bf16")
    # A late non-edit delivery of that second (the thread as it was) changes neither.
    late = copy.deepcopy(opened)
    late["action"] = "labeled"
    late[key]["updated_at"] = at
    await dispatch(ctx, event, late)
    stored = await record(ctx, number)
    assert (stored["body"], stored["title"]) == (SECOND, "NaN loss with bf16")


# ---- 2. an opening delivery handled after a later one --------------------------------------
LATE_OPENED = {
    "pull_request_review": ("pull_request_review/submitted.json", "pull_request",
                            "pull_request/opened.json", 2),
    "issue_comment": ("issue_comment/created.json", "issues", "issues/opened.json", 1),
    "discussion_comment": ("discussion_comment/created.json", "discussion",
                           "discussion/created.json", 4),
}


@pytest.mark.parametrize("first", sorted(LATE_OPENED))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_late_opening_delivery_completes_the_thread(
        ctx: Any, shared_dir: Path, first: str, batched: bool):
    """A thread first stored from a review or comment delivery is `complete: false` (its
    beginning unknown: the app may have been installed after it). Its opening delivery handled
    afterwards shows the app saw it from its start: the thread is complete, and what the later
    delivery stored (newer body, state) stays."""
    name, event, opened_name, number = LATE_OPENED[first]
    later = _shared(shared_dir, name)
    opened = _shared(shared_dir, opened_name)
    key = {"issues": "issue", "discussion": "discussion"}.get(event, event)
    if first == "issue_comment":
        later["issue"]["labels"] = [{"name": "bug"}]
    # the thread as the later delivery shows it: edited since it was opened
    later[key]["body"] = SECOND
    later[key]["updated_at"] = "2030-01-02T03:04:05Z"
    await dispatch(ctx, first, later)
    assert (await record(ctx, number))["complete"] is False
    await deliver(ctx, batched, (event, opened))
    stored = await record(ctx, number)
    assert stored["complete"] is True
    assert stored["body"] == SECOND and len(stored["comments"]) == 1
    if first == "issue_comment":
        assert stored["labels"] == ["bug"]


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_pull_request_first_seen_as_an_issue_takes_its_ids_from_its_late_opening(
        ctx: Any, shared_dir: Path, batched: bool):
    """`issue_comment` on a pull request carries the issue's ids, not the pull request's (which
    sync and the pull_request events use): the thread is stored without them; the late
    `pull_request.opened` gives them, and completes it, while the comment's newer state stays."""
    comment = _shared(shared_dir, "issue_comment/created.json")
    opened = _shared(shared_dir, "pull_request/opened.json")
    issue = comment["issue"]
    issue.update(number=2, pull_request={"url": "x", "merged_at": None},
                 updated_at="2030-01-02T03:04:05Z", body=SECOND)
    first = comment if not batched else copy.deepcopy(comment)
    if batched:
        await deliver(ctx, True, ("issue_comment", first), ("pull_request", opened))
    else:
        await dispatch(ctx, "issue_comment", first)
        async with ctx.sessionmaker() as session:
            thread = await get_thread(session, HELLO, 2)
            assert thread.github_id is None and thread.complete is False
        await dispatch(ctx, "pull_request", opened)
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, HELLO, 2)
        assert thread.kind == "pull_request" and thread.complete is True
        assert (thread.github_id, thread.node_id) == (
            opened["pull_request"]["id"], opened["pull_request"]["node_id"])
        assert thread.body == SECOND


async def test_an_opened_at_the_new_place_of_a_transfer_does_not_complete(
        ctx: Any, shared_dir: Path):
    """The new place of a transferred issue has its history elsewhere: its `opened` (with
    `changes.old_issue`) is no opening and leaves it `complete: false`."""
    moved = _shared(shared_dir, "issues/opened.with-transfer.json")
    assert moved["changes"].get("old_issue")
    comment = _shared(shared_dir, "issue_comment/created.json")
    comment["repository"] = moved["repository"]
    comment["issue"] = copy.deepcopy(moved["issue"])
    comment["issue"]["updated_at"] = "2030-01-02T03:04:05Z"
    await dispatch(ctx, "issue_comment", comment)
    await dispatch(ctx, "issues", moved)
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, moved["repository"]["full_name"],
                                  moved["issue"]["number"])
    assert thread is not None and thread.complete is False
