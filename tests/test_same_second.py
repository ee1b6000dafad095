"""Thread deliveries of one second (GitHub's `updated_at` counts seconds) handled in another
order than GitHub sent them, or redelivered, on SQLite and PostgreSQL: GitHub's recorded
payloads (../shared/fixtures/webhooks) with project-written labels, assignees and times.

Two label changes in one second (a maintainer picking two labels; a labeler bot right after
the opening) carry one `updated_at`; which one is newer the times cannot tell, but each names
the label it adds or removes (`label`), as `assigned` / `unassigned` name the `assignee`. An
opening delivery (`opened`, `created`) describes the first version of its thread: handled
after another delivery of its second (late, or redelivered from GitHub's page), it is not
newer than what is stored."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.test_edit_order import _shared, deliver, record

AT = "2030-01-02T03:04:05Z"
# event -> (opened payload, its object's key, thread number)
THREADS = {
    "issues": ("issues/opened.json", "issue", 1),
    "pull_request": ("pull_request/opened.json", "pull_request", 2),
}


def at_second(opened: dict[str, Any], key: str, action: str, **fields: Any) -> dict[str, Any]:
    payload = copy.deepcopy(opened)
    payload["action"] = action
    payload[key].update(updated_at=AT, **fields)
    return payload


def labels(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "color": "d73a4a", "default": False} for n in names]


def people(*logins: str) -> list[dict[str, Any]]:
    return [{"login": login, "id": 100 + len(login), "type": "User"} for login in logins]


@pytest.mark.parametrize("event", sorted(THREADS))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_labels_in_one_second_out_of_order_keep_both(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """`labeled` A (labels [A]) then `labeled` B (labels [A, B]) in one second, handled B
    first: A's payload put [A] back and B was lost from the stored thread (and from what the
    analysis reads) until some later event of the thread."""
    name, key, number = THREADS[event]
    opened = _shared(shared_dir, name)
    opened[key]["labels"] = []
    first = at_second(opened, key, "labeled", labels=labels("training"))
    first["label"] = labels("training")[0]
    second = at_second(opened, key, "labeled", labels=labels("training", "bug"))
    second["label"] = labels("bug")[0]
    await deliver(ctx, batched, (event, opened), (event, second), (event, first))
    assert sorted((await record(ctx, number))["labels"]) == ["bug", "training"]


@pytest.mark.parametrize("event", sorted(THREADS))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_a_label_change_of_the_same_second_leaves_the_other_labels(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """`labeled` bug stored, then a `labeled` training and an `unlabeled` training of the same
    second whose lists were taken before bug came ([training], then []): each overwrote the
    stored list, and bug, which neither names, was dropped."""
    name, key, number = THREADS[event]
    opened = _shared(shared_dir, name)
    opened[key]["labels"] = []
    bug = at_second(opened, key, "labeled", labels=labels("bug"))
    bug["label"] = labels("bug")[0]
    training = at_second(opened, key, "labeled", labels=labels("training"))
    training["label"] = labels("training")[0]
    await deliver(ctx, batched, (event, opened), (event, bug), (event, training))
    assert sorted((await record(ctx, number))["labels"]) == ["bug", "training"]
    untrained = at_second(opened, key, "unlabeled", labels=[])
    untrained["label"] = labels("training")[0]
    await deliver(ctx, batched, (event, untrained))
    assert (await record(ctx, number))["labels"] == ["bug"]


@pytest.mark.parametrize("event", sorted(THREADS))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_two_assignees_in_one_second_out_of_order_keep_both(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """`assigned` alice then `assigned` bob in one second, handled bob first: alice's payload
    (assignees [alice]) dropped bob."""
    name, key, number = THREADS[event]
    opened = _shared(shared_dir, name)
    opened[key]["assignees"] = []
    opened[key]["assignee"] = None
    first = at_second(opened, key, "assigned", assignees=people("alice"))
    first["assignee"] = people("alice")[0]
    second = at_second(opened, key, "assigned", assignees=people("alice", "bob"))
    second["assignee"] = people("bob")[0]
    await deliver(ctx, batched, (event, opened), (event, second), (event, first))
    assert sorted((await record(ctx, number))["assignees"]) == ["alice", "bob"]


@pytest.mark.parametrize("event", sorted(THREADS) + ["discussion"])
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_an_opening_delivery_of_the_same_second_changes_nothing_stored(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """An issue (pull request, discussion) opened and closed and labeled within its first
    second — a bot closing it at once — or GitHub's `opened` redelivered from the app's
    settings page after them: the `opened` reopened the stored thread and dropped its label
    (the times are equal, so the plain rule let it overwrite); the analysis and the pages
    read an open, unlabelled thread that GitHub shows closed."""
    name, key, number = {**THREADS, "discussion": ("discussion/created.json", "discussion", 4)}[event]
    opened = _shared(shared_dir, name)
    opened[key].update(updated_at=AT, created_at=AT, labels=[], state="open")
    if event == "discussion":
        opened[key]["state"] = "open"
    closed = at_second(opened, key, "closed", state="closed", closed_at=AT,
                       labels=labels("invalid"))
    if event == "issues":
        closed[key]["state_reason"] = "not_planned"
    await deliver(ctx, batched, (event, closed), (event, opened))
    stored = await record(ctx, number)
    assert (stored["state"], stored["labels"], stored["complete"]) == (
        "closed", ["invalid"], True)
    # redelivered once more, alone: still nothing changes
    await deliver(ctx, False, (event, opened))
    stored = await record(ctx, number)
    assert (stored["state"], stored["labels"]) == ("closed", ["invalid"])
    if event == "issues":
        assert stored["state_reason"] == "not_planned"


# comment event -> (its payload, the thread's event, the thread's key, number)
CLOSED_WITH_A_COMMENT = {
    "issue_comment": ("issue_comment/created.json", "issues", "issue", 1),
    "discussion_comment": ("discussion_comment/created.json", "discussion", "discussion", 4),
    "pull_request_review_comment": ("pull_request_review_comment/created.json", "pull_request",
                                    "pull_request", 2),
}


@pytest.mark.parametrize("event", sorted(CLOSED_WITH_A_COMMENT))
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_closed_with_a_comment_handled_close_first_stays_closed(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """GitHub's "Close with comment": the comment is made, then the thread closed, in one
    second. The comment's delivery shows the thread as it was when commented on (open); the
    `closed` one, handled first, was undone by it — the stored thread (the pages, the
    analysis's review state) read open what GitHub shows closed, until the next event of the
    thread. A comment delivery's view of its thread, of the stored thread's second, is no
    newer than the stored thread: its comment is stored, the thread left as it is."""
    name, thread_event, key, number = CLOSED_WITH_A_COMMENT[event]
    commented = _shared(shared_dir, name)
    commented[key].update(updated_at=AT, state="open", labels=[])
    commented["comment"].update(created_at=AT, updated_at=AT)
    closed = copy.deepcopy(commented)
    closed.pop("comment")
    closed["action"] = "closed"
    closed[key].update(state="closed", closed_at=AT, labels=labels("wontfix"))
    if thread_event == "issues":
        closed[key]["state_reason"] = "not_planned"
    await deliver(ctx, batched, (thread_event, closed), (event, commented))
    stored = await record(ctx, number)
    assert (stored["state"], stored["labels"], stored["closed_at"]) == (
        "closed", ["wontfix"], AT)
    assert [c["body"] for c in stored["comments"]] == [commented["comment"]["body"]]
    if thread_event == "issues":
        assert stored["state_reason"] == "not_planned"


@pytest.mark.parametrize("event", sorted(THREADS) + ["discussion"])
@pytest.mark.parametrize("batched", [False, True], ids=["alone", "batch"])
async def test_labelled_and_closed_in_one_second_handled_close_first_stays_closed(
        ctx: Any, shared_dir: Path, event: str, batched: bool):
    """A bot labels a thread `invalid` and closes it in one second (or a maintainer labels
    and closes at once): the `labeled` handled after the `closed` showed the thread still open
    and reopened the stored one. A label (assignee) delivery of the stored thread's second
    changes its list and nothing else."""
    name, key, number = {**THREADS, "discussion": ("discussion/created.json", "discussion", 4)}[event]
    opened = _shared(shared_dir, name)
    opened[key].update(labels=[], state="open")
    labelled = at_second(opened, key, "labeled", labels=labels("invalid"))
    labelled["label"] = labels("invalid")[0]
    closed = at_second(opened, key, "closed", state="closed", closed_at=AT,
                       labels=labels("invalid"))
    if event == "issues":
        closed[key]["state_reason"] = "not_planned"
    await deliver(ctx, batched, (event, opened), (event, closed), (event, labelled))
    stored = await record(ctx, number)
    assert (stored["state"], stored["labels"], stored["closed_at"]) == (
        "closed", ["invalid"], AT)
    if event == "issues":
        assert stored["state_reason"] == "not_planned"
