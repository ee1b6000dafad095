"""A transfer's deliveries handled after a later delivery of the thread at its new place, on
SQLite and PostgreSQL: GitHub's recorded payloads (../shared/fixtures/webhooks) with
project-written edits and times. The old place's `transferred` and the new place's `opened`
come from two repositories, and GitHub does not promise their order against the new place's
next deliveries (nor against a redelivery)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bot.store.threads import load_thread_record
from tests.test_edit_order import _shared, deliver

LATER = "2030-01-02T03:04:05Z"


async def stored(ctx: Any, repo: str, number: int) -> dict[str, Any] | None:
    async with ctx.sessionmaker() as session:
        return await load_thread_record(session, repo, number)


def edited_at_new_place(payload: dict[str, Any], key: str, repo: dict[str, Any],
                        obj: dict[str, Any]) -> dict[str, Any]:
    edited = copy.deepcopy(payload)
    edited.pop("changes", None)
    edited["action"] = "edited"
    edited["repository"] = copy.deepcopy(repo)
    edited[key] = {**copy.deepcopy(obj), "title": "Entropy collapses after step 300",
                   "updated_at": LATER, "state": "closed", "closed_at": LATER}
    edited["changes"] = {"title": {"from": obj["title"]}}
    return edited


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_late_transferred_does_not_put_an_older_version_back(
        ctx: Any, shared_dir: Path, batched: bool):
    """discussion.transferred (Hello-World#4 -> hello-world-npm#1) handled after the new
    place's discussion was edited and closed: the transfer's record of the new place (older)
    overwrote it — the title went back and the discussion reopened."""
    created = _shared(shared_dir, "discussion/created.json")
    transferred = _shared(shared_dir, "discussion/transferred.json")
    new_repo = transferred["changes"]["new_repository"]
    new = transferred["changes"]["new_discussion"]
    edited = edited_at_new_place(transferred, "discussion", new_repo, new)
    await deliver(ctx, batched, ("discussion", created), ("discussion", edited),
                  ("discussion", transferred))
    thread = await stored(ctx, new_repo["full_name"], new["number"])
    assert thread is not None
    assert (thread["title"], thread["state"], thread["updated_at"]) == (
        "Entropy collapses after step 300", "closed", LATER)
    assert await stored(ctx, "Codertocat/Hello-World", 4) is None


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_redelivered_opened_at_the_new_place_does_not_put_an_older_version_back(
        ctx: Any, shared_dir: Path, batched: bool):
    """issues.opened at the new place of a transfer (changes.old_issue), redelivered (or
    late) after the issue there was edited and closed: it overwrote the newer state."""
    opened = _shared(shared_dir, "issues/opened.with-transfer.json")
    opened["changes"]["old_repository"]["private"] = False  # a public repository's issue
    edited = edited_at_new_place(opened, "issue", opened["repository"], opened["issue"])
    await deliver(ctx, batched, ("issues", opened), ("issues", edited), ("issues", opened))
    thread = await stored(ctx, "Codertocat/Hello-World", 1)
    assert thread is not None
    assert (thread["title"], thread["state"], thread["updated_at"]) == (
        "Entropy collapses after step 300", "closed", LATER)


def _deleted_at_new_place(transferred: dict[str, Any]) -> dict[str, Any]:
    """`discussion.deleted` of the transferred discussion at its new place."""
    return {"action": "deleted", "discussion": copy.deepcopy(transferred["changes"]["new_discussion"]),
            "repository": copy.deepcopy(transferred["changes"]["new_repository"]),
            "sender": copy.deepcopy(transferred["sender"]),
            "installation": copy.deepcopy(transferred["installation"])}


@pytest.mark.parametrize("order", ["redelivered", "late"])
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_transfer_handled_after_the_deletion_at_its_new_place_stores_nothing(
        ctx: Any, shared_dir: Path, batched: bool, order: str):
    """discussion.transferred (Hello-World#4 -> hello-world-npm#1), and the discussion then
    deleted at its new place (spam, a pasted token): the transfer's delivery handled after
    the deletion (GitHub's Redeliver, or the old repository's delivery behind the new one's)
    stored the deleted discussion again at its new place — the tracker showed it and the app
    analysed it — though a delivery about a deleted thread stores nothing of it. The old place
    is left too (the thread moved away)."""
    created = _shared(shared_dir, "discussion/created.json")
    transferred = _shared(shared_dir, "discussion/transferred.json")
    new_repo = transferred["changes"]["new_repository"]["full_name"]
    deleted = _deleted_at_new_place(transferred)
    if order == "redelivered":
        await deliver(ctx, batched, ("discussion", created), ("discussion", transferred),
                      ("discussion", deleted))
        assert await stored(ctx, new_repo, 1) is None
        await deliver(ctx, batched, ("discussion", transferred))
    else:
        await deliver(ctx, batched, ("discussion", created), ("discussion", deleted),
                      ("discussion", transferred))
    assert await stored(ctx, new_repo, 1) is None
    assert await stored(ctx, "Codertocat/Hello-World", 4) is None
