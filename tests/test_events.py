"""bot.webhooks.events: real payloads through the gidgethub Router into SQLite and PostgreSQL."""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import delete, func, select

from bot.store.models import (
    Action,
    Analysis,
    Comment,
    Deletion,
    Installation,
    Repository,
    SyncCursor,
    Thread,
)
from bot.store.threads import get_thread, load_thread_record
from bot.store.types import parse_datetime
from bot.webhooks import events
from bot.webhooks.normalize import COMMENT_EVENTS, THREAD_EVENTS, PayloadError

REPO = "verl-project/verl"


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await events.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx
    )


async def count(ctx: Any, model: Any) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(model)))


async def record(ctx: Any, repo: str, number: int) -> dict[str, Any] | None:
    async with ctx.sessionmaker() as session:
        return await load_thread_record(session, repo, number)


def user(login: str, type_: str = "User") -> dict[str, Any]:
    return {"login": login, "id": abs(hash(login)) % 10_000_000, "type": type_}


def stamp(minute: int) -> str:
    return f"2025-05-01T10:{minute:02d}:00Z"


def issue(number: int = 5, minute: int = 0, **fields: Any) -> dict[str, Any]:
    base = {
        "id": 1000 + number, "node_id": f"I_{number}", "number": number,
        "title": "Entropy collapses after step 300", "body": "Entropy falls to 0.01 with GRPO.",
        "user": user("alice"), "labels": [], "assignees": [], "state": "open",
        "author_association": "NONE", "created_at": stamp(0), "updated_at": stamp(minute),
        "closed_at": None, "comments": 0, "html_url": f"https://github.com/{REPO}/issues/{number}",
    }
    base.update(fields)
    return base


# GitHub's repository ids: one repository keeps its id through renames (the "someone/..." names
# of the rename test are one repository), another repository has another id.
REPOSITORY_IDS = {"huggingface/trl": 9}


def envelope(action: str, repo: str = REPO, sender: str = "alice", installation: int | None = 77,
             **objects: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "action": action,
        "repository": {"id": REPOSITORY_IDS.get(repo, 555), "full_name": repo, "default_branch": "main",
                       "owner": user(repo.split("/")[0])},
        "sender": user(sender),
        **objects,
    }
    if installation is not None:
        payload["installation"] = {"id": installation}
    return payload


def comment(cid: int, body: str, login: str = "bob", minute: int = 1, **fields: Any) -> dict[str, Any]:
    base = {"id": cid, "node_id": f"IC_{cid}", "body": body, "user": user(login),
            "author_association": "MEMBER", "created_at": stamp(minute), "updated_at": stamp(minute)}
    base.update(fields)
    return base


# ------------------------------------------------------------------------------ every shared payload
async def test_every_shared_payload_is_stored(ctx: Any, shared_dir: Path):
    """Each example alone on an empty store: the records match the payload."""
    base = shared_dir / "fixtures" / "webhooks"
    files = [(e, p) for e in sorted(set(THREAD_EVENTS) | set(COMMENT_EVENTS))
             for p in sorted((base / e).glob("*.json"))]
    assert len(files) >= 80
    for event, path in files:
        async with ctx.sessionmaker() as session:
            await session.execute(delete(Thread))
            await session.execute(delete(Deletion))  # alone: a deletion before it is forgotten
            await session.commit()
        payload = json.loads(path.read_text())
        await dispatch(ctx, event, payload)
        action = payload["action"]
        obj = payload.get("issue") or payload.get("pull_request") or payload.get("discussion")
        repo = payload["repository"]["full_name"]
        if action == "transferred":
            new = payload["changes"]
            repo = new["new_repository"]["full_name"]
            obj = new.get("new_issue") or new.get("new_discussion")
        stored = await record(ctx, repo, obj["number"])
        if event in THREAD_EVENTS and action == "deleted":
            assert stored is None, path
            continue
        if payload["repository"].get("private"):
            # issues/transferred.json: sent by a private repository, nothing of which is
            # stored (tests/test_private_repos.py); its new public place sends its own opened
            assert stored is None, path
            continue
        assert stored is not None, path
        assert stored["title"] == obj["title"], path
        assert stored["body"] == (obj.get("body") or None), path
        assert stored["author"] == obj["user"]["login"], path
        if event.startswith("discussion"):
            kind = "discussion"
        elif event in ("issues", "issue_comment") and "pull_request" not in obj:
            kind = "issue"
        else:
            kind = "pull_request"
        assert stored["kind"] == kind, path
        if "labels" in obj:
            assert stored["labels"] == [lab["name"] for lab in obj["labels"]], path
        if obj.get("created_at"):
            assert parse_datetime(stored["created_at"]) == parse_datetime(obj["created_at"]), path
        if event in COMMENT_EVENTS:
            key = "review" if event == "pull_request_review" else "comment"
            body = payload[key].get("body") or ""
            bodies = [c["body"] for c in stored["comments"]]
            if action == "deleted":
                assert body not in bodies or body == "", path
            else:
                assert bodies == [body], path
                assert stored["comments"][0]["author"] == payload[key]["user"]["login"], path
        async with ctx.sessionmaker() as session:
            thread = await get_thread(session, repo, obj["number"])
            analysed = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        assert analysed is not None, path  # the pipeline ran on the stored thread
    # Every example names Codertocat/Hello-World (or octo-org); installations got rows.
    assert await count(ctx, Repository) >= 1
    async with ctx.sessionmaker() as session:
        assert await session.get(Installation, 1) is not None


# ------------------------------------------------------------------------------ short scenarios
async def test_issue_lifecycle(ctx: Any):
    await dispatch(ctx, "issues", envelope("opened", issue=issue()))
    stored = await record(ctx, REPO, 5)
    assert stored["state"] == "open" and stored["complete"] is True
    assert stored["author"] == "alice" and stored["author_is_bot"] is False

    edited = issue(minute=1, title="Entropy collapse with GRPO", body="Edited body")
    await dispatch(ctx, "issues", envelope("edited", issue=edited,
                                            changes={"title": {"from": "Entropy collapses after step 300"}}))
    labeled = issue(minute=2, title="Entropy collapse with GRPO", body="Edited body",
                    labels=[{"name": "bug"}, {"name": "training"}], assignees=[user("carol")])
    await dispatch(ctx, "issues", envelope("labeled", issue=labeled, label={"name": "training"}))
    stored = await record(ctx, REPO, 5)
    assert stored["title"] == "Entropy collapse with GRPO" and stored["body"] == "Edited body"
    assert stored["labels"] == ["bug", "training"] and stored["assignees"] == ["carol"]

    await dispatch(ctx, "issue_comment", envelope("created", sender="bob", issue=labeled,
                                                  comment=comment(900, "Try clip-higher.")))
    await dispatch(ctx, "issue_comment", envelope(
        "created", sender="github-actions[bot]", issue=labeled,
        comment=comment(901, "Stale.", login="github-actions[bot]", minute=3,
                        user=user("github-actions[bot]", "Bot"))))
    await dispatch(ctx, "issue_comment", envelope(
        "edited", sender="bob", issue=labeled,
        comment=comment(900, "Try clip-higher (DAPO).", minute=1, updated_at=stamp(4)),
        changes={"body": {"from": "Try clip-higher."}}))
    stored = await record(ctx, REPO, 5)
    assert [(c["author"], c["body"], c["author_is_bot"]) for c in stored["comments"]] == [
        ("bob", "Try clip-higher (DAPO).", False),
        ("github-actions[bot]", "Stale.", True),
    ]
    await dispatch(ctx, "issue_comment", envelope("deleted", sender="bob", issue=labeled,
                                                  comment=comment(901, "Stale.", minute=3)))
    assert [c["body"] for c in (await record(ctx, REPO, 5))["comments"]] == ["Try clip-higher (DAPO)."]

    closed = issue(minute=5, state="closed", state_reason="not_planned", closed_at=stamp(5),
                   title="Entropy collapse with GRPO", body="Edited body")
    await dispatch(ctx, "issues", envelope("closed", sender="maintainer", issue=closed))
    stored = await record(ctx, REPO, 5)
    assert (stored["state"], stored["state_reason"], stored["closed_by"]) == ("closed", "not_planned", "maintainer")
    assert stored["closed_at"] == stamp(5)

    reopened = issue(minute=6, title="Entropy collapse with GRPO", body="Edited body")
    await dispatch(ctx, "issues", envelope("reopened", sender="alice", issue=reopened))
    stored = await record(ctx, REPO, 5)
    assert (stored["state"], stored["state_reason"], stored["closed_by"], stored["closed_at"]) == (
        "open", "reopened", None, None)

    await dispatch(ctx, "issues", envelope("deleted", sender="maintainer", issue=reopened))
    assert await record(ctx, REPO, 5) is None
    assert await count(ctx, Comment) == 0 and await count(ctx, Analysis) == 0


async def test_late_and_repeated_deliveries_do_not_roll_back(ctx: Any):
    await dispatch(ctx, "issues", envelope("opened", issue=issue()))
    await dispatch(ctx, "issues", envelope("edited", issue=issue(minute=9, title="Newest title")))
    # An older edit arriving late, and a redelivery of "opened".
    await dispatch(ctx, "issues", envelope("edited", issue=issue(minute=4, title="Older title")))
    await dispatch(ctx, "issues", envelope("opened", issue=issue()))
    assert (await record(ctx, REPO, 5))["title"] == "Newest title"
    await dispatch(ctx, "issue_comment", envelope("created", issue=issue(minute=9),
                                                  comment=comment(1, "new", updated_at=stamp(8))))
    await dispatch(ctx, "issue_comment", envelope("edited", issue=issue(minute=9),
                                                  comment=comment(1, "old", updated_at=stamp(2))))
    assert [c["body"] for c in (await record(ctx, REPO, 5))["comments"]] == ["new"]


async def test_pull_request_merge_review_and_review_comments(ctx: Any):
    pr = issue(number=8, title="Add clip-higher (DAPO)", body="Implements arXiv:2503.14476",
               html_url=f"https://github.com/{REPO}/pull/8", merged=False, merged_at=None, draft=True)
    await dispatch(ctx, "pull_request", envelope("opened", pull_request=pr))
    review = {"id": 70, "node_id": "PRR_70", "user": user("maintainer"), "body": None,
              "state": "changes_requested", "submitted_at": stamp(3), "author_association": "MEMBER"}
    await dispatch(ctx, "pull_request_review", envelope("submitted", sender="maintainer",
                                                        pull_request=pr, review=review))
    rc = comment(71, "Please add a test.", login="maintainer", minute=3, in_reply_to_id=None)
    await dispatch(ctx, "pull_request_review_comment", envelope("created", pull_request=pr, comment=rc))
    await dispatch(ctx, "pull_request_review_comment", envelope(
        "edited", pull_request=pr, comment={**rc, "body": "Please add a unit test.", "updated_at": stamp(4)}))
    stored = await record(ctx, REPO, 8)
    assert stored["kind"] == "pull_request"
    assert [(c["kind"], c["body"], c["created_at"]) for c in stored["comments"]] == [
        ("review", "", stamp(3)), ("review_comment", "Please add a unit test.", stamp(3))]

    merged = {**pr, "state": "closed", "merged": True, "merged_at": stamp(7), "closed_at": stamp(7),
              "updated_at": stamp(7), "merged_by": user("maintainer"), "draft": False}
    await dispatch(ctx, "pull_request", envelope("closed", sender="maintainer", pull_request=merged))
    stored = await record(ctx, REPO, 8)
    assert (stored["state"], stored["closed_by"]) == ("merged", "maintainer")
    # An issue_comment's issue-shaped PR says only "closed": the merge is kept.
    issue_view = {**issue(number=8, minute=8, state="closed", closed_at=stamp(7)),
                  "id": 99999, "node_id": "I_issue_view", "pull_request": {"url": "x"}}
    await dispatch(ctx, "issue_comment", envelope("created", issue=issue_view,
                                                  comment=comment(72, "Thanks!", minute=8)))
    stored = await record(ctx, REPO, 8)
    assert stored["state"] == "merged" and len(stored["comments"]) == 3
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, REPO, 8)
    assert (thread.github_id, thread.node_id) == (1008, "I_8")  # the PR's ids, kept
    await dispatch(ctx, "pull_request_review_comment", envelope("deleted", pull_request=merged, comment=rc))
    assert [c["kind"] for c in (await record(ctx, REPO, 8))["comments"]] == ["review", "comment"]


async def test_discussion_flow(ctx: Any):
    disc = issue(number=12, title="How to set clip ratio?", html_url=f"https://github.com/{REPO}/discussions/12",
                 category={"name": "Q&A"}, answer_chosen_at=None, answer_chosen_by=None)
    await dispatch(ctx, "discussion", envelope("created", discussion=disc))
    reply = comment(3000, "Use clip_ratio_high.", parent_id=None)
    await dispatch(ctx, "discussion_comment", envelope("created", discussion=disc, comment=reply))
    answered = {**disc, "answer_chosen_at": stamp(5), "answer_chosen_by": user("alice"),
                "updated_at": stamp(5)}
    await dispatch(ctx, "discussion", envelope("answered", discussion=answered, answer=reply))
    closed = {**answered, "state": "closed", "state_reason": "resolved", "updated_at": stamp(6)}
    await dispatch(ctx, "discussion", envelope("closed", sender="alice", discussion=closed))
    stored = await record(ctx, REPO, 12)
    assert stored["kind"] == "discussion" and stored["state"] == "closed"
    assert stored["state_reason"] == "resolved" and stored["closed_by"] == "alice"
    assert [c["body"] for c in stored["comments"]] == ["Use clip_ratio_high."]
    await dispatch(ctx, "discussion_comment", envelope("deleted", discussion=closed, comment=reply))
    assert (await record(ctx, REPO, 12))["comments"] == []
    await dispatch(ctx, "discussion", envelope("deleted", discussion=closed))
    assert await record(ctx, REPO, 12) is None


async def test_transfer_moves_thread_and_comments(ctx: Any):
    await dispatch(ctx, "issues", envelope("opened", issue=issue(number=20)))
    await dispatch(ctx, "issue_comment", envelope("created", issue=issue(number=20, minute=1),
                                                  comment=comment(40, "Same in TRL?")))
    new = issue(number=301, minute=3, html_url="https://github.com/huggingface/trl/issues/301")
    payload = envelope("transferred", issue=issue(number=20, minute=2),
                       changes={"new_issue": new,
                                "new_repository": {"id": 9, "full_name": "huggingface/trl"}})
    await dispatch(ctx, "issues", payload)
    assert await record(ctx, REPO, 20) is None
    moved = await record(ctx, "huggingface/trl", 301)
    assert moved is not None and [c["body"] for c in moved["comments"]] == ["Same in TRL?"]
    assert moved["url"] == "https://github.com/huggingface/trl/issues/301"
    # The "opened" delivery at the new place (the app is installed there too) changes nothing.
    opened = envelope("opened", repo="huggingface/trl", issue=new,
                      changes={"old_issue": issue(number=20), "old_repository": {"full_name": REPO}})
    await dispatch(ctx, "issues", opened)
    assert (await record(ctx, "huggingface/trl", 301))["comments"][0]["body"] == "Same in TRL?"
    assert await count(ctx, Thread) == 1


async def test_transfer_into_an_already_stored_place_merges(ctx: Any):
    new = issue(number=301, minute=3, html_url="https://github.com/huggingface/trl/issues/301")
    await dispatch(ctx, "issues", envelope("opened", repo="huggingface/trl", issue=new,
                                           changes={"old_issue": issue(number=20),
                                                    "old_repository": {"full_name": REPO}}))
    assert (await record(ctx, "huggingface/trl", 301))["complete"] is False  # history elsewhere


async def test_former_repository_names_are_canonical(ctx: Any):
    await dispatch(ctx, "issues", envelope("opened", repo="volcengine/verl", issue=issue(number=3)))
    stored = await record(ctx, REPO, 3)
    assert stored is not None and stored["repo"] == REPO and stored["id"] == f"{REPO}#3"
    async with ctx.sessionmaker() as session:
        repo = await session.scalar(select(Repository))
        inst = await session.get(Installation, 77)
    assert (repo.full_name, repo.framework, repo.installation_id, repo.github_id, repo.default_branch) == (
        REPO, "verl", 77, 555, "main")
    assert inst is not None and inst.account == "volcengine"


async def test_comment_on_unknown_thread_is_incomplete(ctx: Any):
    await dispatch(ctx, "issue_comment", envelope("created", issue=issue(number=40, comments=12),
                                                  comment=comment(5, "me too")))
    stored = await record(ctx, REPO, 40)
    assert stored["complete"] is False and len(stored["comments"]) == 1


async def test_payload_without_installation_is_fine(ctx: Any):
    await dispatch(ctx, "issues", envelope("opened", installation=None, issue=issue(number=41)))
    async with ctx.sessionmaker() as session:
        repo = await session.scalar(select(Repository))
    assert repo.installation_id is None and await count(ctx, Installation) == 0


@pytest.mark.parametrize(
    "event, mutate",
    [
        ("issues", lambda p: p.pop("repository")),
        ("issues", lambda p: p.pop("issue")),
        ("issues", lambda p: p["issue"].pop("number")),
        # no thread has these (and PostgreSQL's INTEGER column cannot hold the first): failed
        # at once with the reason, not retried as if the database were down
        ("issues", lambda p: p["issue"].update(number=3_000_000_000)),
        ("issues", lambda p: p["issue"].update(number=0)),
        ("issue_comment", lambda p: p["comment"].pop("id")),
        ("issues", lambda p: p.update(action="transferred")),
    ],
)
async def test_incomplete_payloads_raise_and_store_nothing(ctx: Any, event: str, mutate: Any):
    payload = envelope("created" if event == "issue_comment" else "opened", issue=issue(number=50),
                       comment=comment(6, "x"))
    mutate(payload)
    with pytest.raises(PayloadError):
        await dispatch(ctx, event, payload)
    assert await count(ctx, Thread) == 0 and await count(ctx, Repository) == 0


async def test_same_delivery_twice_is_idempotent(ctx: Any):
    payload = envelope("created", issue=issue(number=60), comment=comment(61, "hello"))
    await dispatch(ctx, "issue_comment", copy.deepcopy(payload))
    await dispatch(ctx, "issue_comment", copy.deepcopy(payload))
    assert await count(ctx, Thread) == 1 and await count(ctx, Comment) == 1
    assert await count(ctx, Analysis) == 1


async def test_concurrent_deliveries_for_a_new_thread(ctx: Any):
    """Several workers see comments on the same unknown thread at once: one thread, all
    comments (a losing insert is retried and then updates the winner's row)."""
    import asyncio

    payloads = [
        envelope("created", issue=issue(number=70, minute=1), comment=comment(700 + i, f"c{i}"))
        for i in range(6)
    ]
    await asyncio.gather(*(dispatch(ctx, "issue_comment", p) for p in payloads))
    assert await count(ctx, Thread) == 1 and await count(ctx, Repository) == 1
    assert await count(ctx, Comment) == 6


async def test_repository_link_rewritten_after_installation_changes(ctx: Any):
    """Repository rows written once per process are written again after an installation
    event changed them."""
    from bot.webhooks import installations

    async def repo_row() -> Repository:
        async with ctx.sessionmaker() as session:
            return await session.scalar(select(Repository))

    await dispatch(ctx, "issues", envelope("opened", issue=issue(number=80)))
    assert (await repo_row()).installation_id == 77
    inst = {"id": 77, "account": {"login": "verl-project", "type": "Organization"}}
    await installations.router.dispatch(sansio.Event(
        {"action": "deleted", "installation": inst, "repositories": []},
        event="installation", delivery_id="d1"), ctx)
    assert (await repo_row()).installation_id is None
    await installations.router.dispatch(sansio.Event(
        {"action": "created", "installation": inst, "repositories": []},
        event="installation", delivery_id="d2"), ctx)
    await dispatch(ctx, "issues", envelope("edited", issue=issue(number=80, minute=2)))
    assert (await repo_row()).installation_id == 77


# ---- a deletion is final: late and repeated deliveries do not bring a thread or comment back --
def _shared(shared_dir: Path, name: str, **issue_fields: Any) -> dict[str, Any]:
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())
    obj = payload.get("issue") or payload.get("discussion")
    obj.update(issue_fields)
    return payload


async def test_a_deleted_issue_or_comment_is_not_stored_again_by_a_late_delivery(
        ctx: Any, shared_dir: Path):
    """GitHub's payloads: a comment created then deleted (its author deleted a pasted token),
    an issue deleted (spam). A delivery about them processed after the deletion (a retry of
    one whose comment GitHub answered 5xx, GitHub's "Redeliver", an older event handled by
    another replica) stored them again: the tracker page showed the deleted text, the issue
    was analysed, and a comment on it was attempted (404)."""
    hello = "Codertocat/Hello-World"
    await dispatch(ctx, "issues", _shared(shared_dir, "issues/opened.json"))
    await dispatch(ctx, "issue_comment", _shared(shared_dir, "issue_comment/created.json"))
    assert len((await record(ctx, hello, 1))["comments"]) == 1
    await dispatch(ctx, "issue_comment", _shared(shared_dir, "issue_comment/deleted.json"))
    for late in ("issue_comment/created.json", "issue_comment/edited.json"):
        await dispatch(ctx, "issue_comment", _shared(shared_dir, late))
        assert (await record(ctx, hello, 1))["comments"] == [], late
    # The issue deleted; its earlier events again, one by one and as a worker's batch.
    await dispatch(ctx, "issues", _shared(shared_dir, "issues/deleted.json"))
    late_events = [("issues", "issues/opened.json"), ("issues", "issues/edited.json"),
                   ("issue_comment", "issue_comment/created.json")]
    for event, name in late_events:
        await dispatch(ctx, event, _shared(shared_dir, name))
        assert await record(ctx, hello, 1) is None, name
    outcomes = await events.handle_batch([
        sansio.Event(_shared(shared_dir, name), event=event, delivery_id=str(uuid.uuid4()))
        for event, name in late_events], ctx)
    assert outcomes == [None, None, None]
    assert (await count(ctx, Thread), await count(ctx, Comment)) == (0, 0)
    # A discussion transferred away: an older edit at its former place does not recreate it.
    await dispatch(ctx, "discussion", _shared(shared_dir, "discussion/transferred.json"))
    await dispatch(ctx, "discussion", _shared(shared_dir, "discussion/edited.json"))
    assert await record(ctx, hello, 4) is None
    # A repository deleted and created again under its name numbers its issues from 1 again:
    # an issue opened after the deleted one was is a new issue, stored.
    await dispatch(ctx, "issues", _shared(shared_dir, "issues/opened.json",
                                          created_at="2022-01-01T00:00:00Z",
                                          updated_at="2022-01-01T00:00:00Z"))
    assert (await record(ctx, hello, 1))["created_at"].startswith("2022-01-01")


# ---- a repository renamed (or moved to another owner): its threads go with it ------------
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_renamed_repository_keeps_its_threads_in_one_place(ctx: Any, batched: bool):
    """GitHub keeps a repository's id through a rename or a transfer to another owner; its
    deliveries name it by its new name. The issue stored under the old name stayed there
    and the first delivery under the new name made a second, incomplete thread of it (the
    tracker showed two halves, /threads/NEW/5 without the opening comments), and the app's
    earlier comment on it, recorded under the old name, was not found by the new one."""
    await dispatch(ctx, "issues", envelope("opened", repo="someone/old-name", issue=issue(5)))
    await dispatch(ctx, "issue_comment", envelope(
        "created", repo="someone/old-name", issue=issue(5, minute=1), comment=comment(40, "same here")))
    async with ctx.sessionmaker() as session:
        session.add(Action(repo="someone/old-name", number=5, kind="failure_comment",
                           status="posted", dedupe_key="someone/old-name#5:failure_comment"))
        session.add(SyncCursor(repo="someone/old-name", kind="issue", full_done=True))
        await session.commit()
    await dispatch(ctx, "issues", envelope("opened", repo="someone/old-name", issue=issue(6)))
    await dispatch(ctx, "issues", envelope("deleted", repo="someone/old-name", issue=issue(6, minute=1)))
    first_under_new_name = envelope(
        "created", repo="someone/new-name", issue=issue(5, minute=2), comment=comment(41, "and me"))
    if batched:  # a worker process's batch looks its threads up before writing any row
        assert await events.handle_batch([sansio.Event(
            first_under_new_name, event="issue_comment", delivery_id="d1")], ctx) == [None]
    else:
        await dispatch(ctx, "issue_comment", first_under_new_name)
    assert await record(ctx, "someone/old-name", 5) is None
    moved = await record(ctx, "someone/new-name", 5)
    assert moved["complete"] is True and [c["body"] for c in moved["comments"]] == ["same here", "and me"]
    async with ctx.sessionmaker() as session:
        action = await session.scalar(select(Action).where(Action.status == "posted"))
        cursor = await session.scalar(select(SyncCursor))
        names = list(await session.scalars(select(Repository.full_name)))
    assert (action.repo, action.dedupe_key) == ("someone/new-name", "someone/new-name#5:failure_comment")
    assert cursor.repo == "someone/new-name" and names == ["someone/new-name"]
    assert await count(ctx, Thread) == 1
    # An issue deleted before the rename stays deleted under the new name.
    await dispatch(ctx, "issues", envelope("edited", repo="someone/new-name", issue=issue(6)))
    assert await count(ctx, Thread) == 1


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_rename_onto_a_name_a_sync_already_stored_merges_the_two(ctx: Any, batched: bool):
    """A sync run under the repository's new name (`rltracker sync --repo someone/new-name`
    before any delivery told of the rename, GitHub giving no id) made a row under that name
    and stored the issue there too. The first delivery naming the new name found the name
    taken and kept the old one: two repository rows, the delivery's comment went under the
    old name and the issue stayed counted twice. They are merged now, as bot.store's
    settle_repository does for a sync: one row under the new name, with the id and the
    installation, and one thread."""
    await dispatch(ctx, "issues", envelope("opened", repo="someone/old-name", issue=issue(5)))
    async with ctx.sessionmaker() as session:
        session.add(Repository(full_name="someone/new-name"))  # the sync's row, no id
        session.add(Thread(repo="someone/new-name", number=5, kind="issue", title="Issue 5",
                           updated_at=parse_datetime(stamp(0))))  # and its copy of the issue
        await session.commit()
    await dispatch(ctx, "issues", envelope("opened", repo="someone/old-name", issue=issue(7)))
    under_new = envelope("created", repo="someone/new-name", issue=issue(5, minute=2),
                         comment=comment(41, "and me"))
    if batched:
        assert await events.handle_batch([sansio.Event(
            under_new, event="issue_comment", delivery_id="d1")], ctx) == [None]
    else:
        await dispatch(ctx, "issue_comment", under_new)
    async with ctx.sessionmaker() as session:
        rows = [(r.full_name, r.github_id, r.installation_id)
                for r in await session.scalars(select(Repository))]
        threads = sorted((t.repo, t.number) for t in await session.scalars(select(Thread)))
    assert rows == [("someone/new-name", under_new["repository"]["id"], 77)], rows
    assert threads == [("someone/new-name", 5), ("someone/new-name", 7)], threads
    moved = await record(ctx, "someone/new-name", 5)
    assert [c["body"] for c in moved["comments"]] == ["and me"]


async def test_a_repository_renamed_delivery_renames_at_once(ctx: Any):
    """`repository.renamed` had no handler: stored, marked done, and nothing renamed until a
    thread delivery named the new name (the tracker's pages kept the old name meanwhile). It
    renames the repository's row, its threads with it, merging a row a sync made under the
    new name."""
    from bot.webhooks.routers import router

    await dispatch(ctx, "issues", envelope("opened", repo="someone/old-name", issue=issue(5)))
    async with ctx.sessionmaker() as session:
        session.add(Repository(full_name="someone/new-name"))  # a sync's row, no id
        await session.commit()
    renamed = envelope("renamed", repo="someone/new-name",
                       changes={"repository": {"name": {"from": "old-name"}}})
    renamed["repository"]["updated_at"] = stamp(3)
    await router.dispatch(sansio.Event(renamed, event="repository", delivery_id="r1"), ctx)
    async with ctx.sessionmaker() as session:
        rows = [(r.full_name, r.github_id) for r in await session.scalars(select(Repository))]
    assert rows == [("someone/new-name", renamed["repository"]["id"])], rows
    assert await record(ctx, "someone/old-name", 5) is None
    assert (await record(ctx, "someone/new-name", 5))["number"] == 5


async def test_a_transferred_issue_keeps_its_one_failure_comment(ctx: Any):
    """An issue answered on verl, transferred to TRL (GitHub moves the comment with it): the
    app's once-only slot stayed at verl#5, a page that no longer exists, so at trl#301 the
    app decided again and a second failure comment was recorded (live, it rewrote the moved
    one for the new framework)."""
    from datetime import timedelta

    from bot.store.types import format_datetime, utcnow

    def ago(minutes: int) -> str:
        return format_datetime(utcnow() - timedelta(minutes=minutes))

    body = ("Training with GRPO, the policy entropy collapses to near zero after 200 steps and "
            "the reward plateaus.")
    await dispatch(ctx, "issues", envelope("opened", issue=issue(
        5, created_at=ago(10), updated_at=ago(10), body=body)))
    new = issue(301, created_at=ago(10), updated_at=ago(7), body=body,
                html_url="https://github.com/huggingface/trl/issues/301")
    await dispatch(ctx, "issues", envelope(
        "transferred", issue=issue(5, created_at=ago(10), updated_at=ago(8), body=body),
        changes={"new_issue": new, "new_repository": {"id": 9, "full_name": "huggingface/trl"}}))
    await dispatch(ctx, "issues", envelope(
        "opened", repo="huggingface/trl", issue=new,
        changes={"old_issue": issue(5), "old_repository": {"full_name": REPO}}))
    async with ctx.sessionmaker() as session:
        comments = list(await session.scalars(select(Action).where(
            Action.kind == "failure_comment", Action.status.in_(("posted", "dry_run")))))
    assert [(a.repo, a.number, a.dedupe_key) for a in comments] == [
        ("huggingface/trl", 301, "huggingface/trl#301:failure_comment")]


async def test_an_issue_deleted_does_not_delete_the_discussion_of_its_number(
        ctx: Any, shared_dir: Path):
    """Issues and discussions share their numbers, and an issue converted to a discussion
    keeps its number: `issues.deleted` for #4 deleted the discussion stored as #4 with its
    comments (the tracker lost it until the next sync)."""
    hello = "Codertocat/Hello-World"
    await dispatch(ctx, "discussion", _shared(shared_dir, "discussion/created.json"))
    await dispatch(ctx, "discussion_comment", _shared(shared_dir, "discussion_comment/created.json"))
    await dispatch(ctx, "issues", _shared(shared_dir, "issues/deleted.json", number=4))
    stored = await record(ctx, hello, 4)
    assert stored is not None and stored["kind"] == "discussion" and len(stored["comments"]) == 1
    # The issue stays deleted: a late delivery about it stores nothing over the discussion.
    await dispatch(ctx, "issues", _shared(shared_dir, "issues/edited.json", number=4))
    assert (await record(ctx, hello, 4))["kind"] == "discussion"


# ---- a review carries no updated_at: a late `submitted` or `dismissed` keeps the edited text --
def _review(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


def _review_edited(shared_dir: Path, body: str, was: str) -> dict[str, Any]:
    """GitHub's `pull_request_review.edited` as derived from its `submitted` example: the
    action, the review's new body, and `changes.body.from` (the body it replaced)."""
    payload = _review(shared_dir, "pull_request_review/submitted.json")
    payload["action"] = "edited"
    payload["review"]["body"] = body
    payload["changes"] = {"body": {"from": was}}
    return payload


@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_late_review_delivery_does_not_revert_an_edited_review(
        ctx: Any, shared_dir: Path, batched: bool):
    """Reviews carry no `updated_at`, so the "newer stored state wins" rule of threads and
    comments did not apply to them: a `submitted` redelivered (GitHub's Redeliver, the app's
    recovery of missed deliveries, a queue behind) after an `edited` put the old body back,
    and so did a late `dismissed` (which does not change the body). Only `edited` changes a
    stored review now. Review comments carry `updated_at` and follow the comment rule."""
    hello = "Codertocat/Hello-World"

    async def send(*deliveries: tuple[str, dict[str, Any]]) -> None:
        if batched:
            assert await events.handle_batch([
                sansio.Event(p, event=e, delivery_id=str(uuid.uuid4())) for e, p in deliveries],
                ctx) == [None] * len(deliveries)
        else:
            for event, payload in deliveries:
                await dispatch(ctx, event, payload)

    async def bodies() -> list[tuple[str, str]]:
        return [(c["kind"], c["body"]) for c in (await record(ctx, hello, 2))["comments"]]

    edited = "Please add a unit test for the clip ratio."
    await send(("pull_request_review", _review(shared_dir, "pull_request_review/submitted.json")),
               ("pull_request_review", _review_edited(shared_dir, edited, "")))
    assert await bodies() == [("review", edited)]
    await send(("pull_request_review", _review(shared_dir, "pull_request_review/submitted.json")),
               ("pull_request_review", _review(shared_dir, "pull_request_review/dismissed.json")))
    assert await bodies() == [("review", edited)]
    # A second edit still applies; a review first known from a late delivery is stored.
    again = "Please add a unit test and a docs entry."
    await send(("pull_request_review", _review_edited(shared_dir, again, edited)))
    assert await bodies() == [("review", again)]

    # Review comments: a late `created` after an `edited` (a later updated_at) changes nothing.
    created = _review(shared_dir, "pull_request_review_comment/created.json")
    later = _review(shared_dir, "pull_request_review_comment/edited.json")
    later["comment"].update(body="Use more emoji here, please.", updated_at="2019-05-15T15:21:02Z")
    later["changes"] = {"body": {"from": created["comment"]["body"]}}
    await send(("pull_request_review_comment", created), ("pull_request_review_comment", later))
    await send(("pull_request_review_comment", created))
    assert sorted(await bodies()) == [("review", again),
                                      ("review_comment", "Use more emoji here, please.")]
