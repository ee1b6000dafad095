"""bot.webhooks.normalize: webhook payloads -> records, on every shared example and on short payloads."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from bot.webhooks.normalize import (
    COMMENT_EVENTS,
    THREAD_EVENTS,
    PayloadError,
    change_from_payload,
    comment_from_payload,
    is_bot_login,
    iso,
    thread_from_payload,
)

THREAD_STATES = {"open", "closed", "merged"}
EVENTS = sorted(set(THREAD_EVENTS) | set(COMMENT_EVENTS))


def payloads(shared: Path) -> list[tuple[str, Path]]:
    base = shared / "fixtures" / "webhooks"
    return [(e, p) for e in EVENTS for p in sorted((base / e).glob("*.json"))]


def load(shared: Path, name: str) -> dict[str, Any]:
    return json.loads((shared / "fixtures" / "webhooks" / name).read_text())


def user(login: str, type_: str = "User") -> dict[str, Any]:
    return {"login": login, "id": 1, "type": type_}


def issue_payload(**issue: Any) -> dict[str, Any]:
    base = {
        "id": 10, "node_id": "I_10", "number": 5, "title": "Entropy collapse at step 300",
        "body": "", "user": user("alice"), "labels": [{"name": "bug"}], "assignees": [],
        "state": "open", "author_association": "", "created_at": "2025-05-01T10:00:00Z",
        "updated_at": "2025-05-01T10:00:00Z", "closed_at": None,
        "html_url": "https://github.com/verl-project/verl/issues/5",
    }
    base.update(issue)
    return {
        "action": "opened",
        "issue": base,
        "repository": {"id": 99, "full_name": "verl-project/verl"},
        "sender": user("alice"),
    }


def test_every_shared_payload_normalises(shared_dir: Path):
    seen = 0
    for event, path in payloads(shared_dir):
        payload = json.loads(path.read_text())
        change = change_from_payload(event, payload)
        seen += 1
        records = [r for r in (change.thread, change.transfer and change.transfer.new) if r]
        for record in records:
            assert record["kind"] in ("issue", "pull_request", "discussion"), path
            assert record["id"] == f"{record['repo']}#{record['number']}"
            if "state" in record:
                assert record["state"] in THREAD_STATES, path
            for key in ("labels", "assignees"):
                if key in record:
                    assert all(isinstance(x, str) for x in record[key]), path
            for key in ("created_at", "updated_at", "closed_at"):
                if record.get(key) is not None:
                    assert record[key].endswith("Z") and len(record[key]) == 20, (path, key)
            if "author" in record:
                assert record["author_is_bot"] is False  # no bot in the examples
        if event in COMMENT_EVENTS:
            comment = change.comment
            if payload["action"] == "deleted":
                assert change.delete_comment is not None and comment is None
            else:
                assert comment is not None
                assert isinstance(comment["body"], str)
                assert isinstance(comment["github_id"], int)
                assert comment["kind"] == COMMENT_EVENTS[event][1]
        if event in THREAD_EVENTS and payload["action"] == "deleted":
            assert change.delete_thread and change.thread is None
    assert seen >= 80


def test_issue_opened_example(shared_dir: Path):
    record = thread_from_payload("issues", load(shared_dir, "issues/opened.json"))
    assert record["repo"] == "Codertocat/Hello-World"
    assert record["number"] == 1 and record["kind"] == "issue"
    assert record["title"] == "Spelling error in the README file"
    assert record["author"] == "Codertocat" and record["author_is_bot"] is False
    assert record["author_association"] == "OWNER"
    assert record["labels"] == ["bug"] and record["assignees"] == ["Codertocat"]
    assert record["state"] == "open"
    assert record["github_id"] == 444500041 and record["node_id"] == "MDU6SXNzdWU0NDQ1MDAwNDE="
    assert record["url"] == "https://github.com/Codertocat/Hello-World/issues/1"
    assert record["created_at"] == "2019-05-15T15:20:18Z"
    assert "closed_by" not in record  # not known from this payload: left alone on update


def test_thin_payload_leaves_fields_out(shared_dir: Path):
    record = thread_from_payload("issues", load(shared_dir, "issues/pinned.json"))
    assert "state" not in record and "labels" not in record


def test_empty_body_becomes_none(shared_dir: Path):
    record = thread_from_payload("issues", load(shared_dir, "issues/opened.with-empty-body.json"))
    assert record["body"] is None
    pr = thread_from_payload("pull_request", load(shared_dir, "pull_request/opened.with-null-body.json"))
    assert pr["body"] is None
    short = thread_from_payload("issues", issue_payload())
    assert short["body"] is None and short["author_association"] is None


def test_pull_request_closed_unmerged_and_merged(shared_dir: Path):
    payload = load(shared_dir, "pull_request/closed.json")
    record = thread_from_payload("pull_request", payload)
    assert record["state"] == "closed" and record["closed_by"] == payload["sender"]["login"]
    assert "state_reason" not in record  # pull requests have none
    merged = copy.deepcopy(payload)
    merged["pull_request"].update(merged=True, merged_at="2019-05-15T15:21:00Z",
                                  merged_by=user("maintainer"))
    merged["sender"] = user("maintainer")
    record = thread_from_payload("pull_request", merged)
    assert record["state"] == "merged" and record["closed_by"] == "maintainer"
    assert record["merged_by"] == "maintainer"


def test_issue_close_and_reopen_details():
    closed = issue_payload(state="closed", state_reason="not_planned", closed_at="2025-05-02T00:00:00Z")
    closed.update(action="closed", sender=user("maintainer"))
    record = thread_from_payload("issues", closed)
    assert record["state"] == "closed" and record["state_reason"] == "not_planned"
    assert record["closed_by"] == "maintainer" and record["closed_at"] == "2025-05-02T00:00:00Z"
    old_style = issue_payload(state="closed")
    old_style.update(action="closed", sender=user("maintainer"))
    assert thread_from_payload("issues", old_style)["state_reason"] is None
    reopened = issue_payload(state="open")
    reopened["action"] = "reopened"
    record = thread_from_payload("issues", reopened)
    assert record["state"] == "open" and record["closed_by"] is None
    assert record["state_reason"] == "reopened" and record["closed_at"] is None
    rest_shape = issue_payload(state="closed", closed_by=user("bob"))
    rest_shape["action"] = "labeled"
    assert thread_from_payload("issues", rest_shape)["closed_by"] == "bob"


def test_comment_on_pull_request_is_a_pull_request_thread(shared_dir: Path):
    payload = load(shared_dir, "issue_comment/created.json")
    payload["issue"]["pull_request"] = {"url": "x", "merged_at": "2019-05-16T00:00:00Z"}
    payload["issue"]["state"] = "closed"
    record = thread_from_payload("issue_comment", payload)
    assert record["kind"] == "pull_request" and record["state"] == "merged"
    assert "github_id" not in record and "node_id" not in record  # the issue's, not the PR's
    payload["issue"]["pull_request"] = {"url": "x"}
    assert thread_from_payload("issue_comment", payload)["state"] == "closed"
    # A comment event describes the thread, it does not close it: no closed_by from sender.
    assert "closed_by" not in thread_from_payload("issue_comment", payload)


def test_discussions(shared_dir: Path):
    answered = thread_from_payload("discussion", load(shared_dir, "discussion/answered.json"))
    assert answered["kind"] == "discussion" and answered["state"] == "open"
    assert answered["answered"] is True and answered["answer_chosen_by"] == "Codertocat"
    assert answered["category"] == "Q&A"
    for name in ("discussion/created.json", "discussion/locked.json"):
        assert thread_from_payload("discussion", load(shared_dir, name))["state"] == "open"
    payload = load(shared_dir, "discussion/answered.json")
    payload["discussion"].update(state="closed", state_reason="RESOLVED")
    payload["action"] = "closed"
    closed = thread_from_payload("discussion", payload)
    assert closed["state"] == "closed" and closed["state_reason"] == "resolved"
    assert closed["closed_by"] == payload["sender"]["login"]
    comment = comment_from_payload("discussion_comment", load(shared_dir, "discussion_comment/created.json"))
    # GitHub numbers discussion comments apart from issue comments: a kind of their own
    assert comment["kind"] == "discussion_comment" and comment["author"]


def test_timestamps_with_offsets_become_utc():
    assert iso("2021-03-30T16:09:00.000-04:00") == "2021-03-30T20:09:00Z"
    assert iso("2025-01-02") == "2025-01-02T00:00:00Z"
    assert iso("") is None and iso(None) is None
    with pytest.raises(PayloadError):
        iso("yesterday")


def test_bots():
    assert is_bot_login("dependabot[bot]")
    assert is_bot_login("Renovate[BOT]")
    assert is_bot_login("some-app", "Bot")
    assert not is_bot_login("robot-fan")
    assert not is_bot_login(None)
    payload = issue_payload(user=user("github-actions[bot]", "Bot"))
    assert thread_from_payload("issues", payload)["author_is_bot"] is True
    payload = issue_payload(user={"login": "stale-app", "type": "Bot"})
    assert thread_from_payload("issues", payload)["author_is_bot"] is True
    payload = issue_payload(user=None)
    record = thread_from_payload("issues", payload)
    assert record["author"] is None and record["author_is_bot"] is None


def test_reviews_and_review_comments(shared_dir: Path):
    payload = load(shared_dir, "pull_request_review/submitted.json")
    review = comment_from_payload("pull_request_review", payload)
    assert review["kind"] == "review" and review["body"] == ""  # null body
    assert review["created_at"] == "2019-05-15T15:20:38Z"
    assert review["review_state"] == "commented"
    pending = copy.deepcopy(payload)
    pending["review"]["state"] = "PENDING"
    assert change_from_payload("pull_request_review", pending).comment is None
    deleted = change_from_payload(
        "pull_request_review_comment", load(shared_dir, "pull_request_review_comment/deleted.json")
    )
    assert deleted.delete_comment is not None and deleted.delete_comment[0] == "review_comment"
    created = comment_from_payload(
        "pull_request_review_comment", load(shared_dir, "pull_request_review_comment/created.json")
    )
    assert created["body"] == "Maybe you should use more emoji on this line."


def test_transfers(shared_dir: Path):
    out = change_from_payload("issues", load(shared_dir, "issues/transferred.json"))
    assert out.transfer is not None and out.thread is None
    assert (out.transfer.old_repo, out.transfer.old_number) == ("octo-org/octo-repo", 1)
    assert out.transfer.new["repo"] == "Codertocat/Hello-World"
    into = change_from_payload("issues", load(shared_dir, "issues/opened.with-transfer.json"))
    assert into.transfer is not None and into.transfer.old_repo == "octo-org/octo-repo"  # changes.old_repository
    assert into.opened is False and into.thread is not None
    discussion = change_from_payload("discussion", load(shared_dir, "discussion/transferred.json"))
    assert discussion.transfer is not None
    assert discussion.transfer.new["repo"] == "Codertocat/hello-world-npm"  # changes.new_repository


def test_canonical_names_apply_to_every_repository(shared_dir: Path):
    rename = {"Codertocat/Hello-World": "Codertocat/Hello-Universe"}.get
    out = change_from_payload("issues", load(shared_dir, "issues/transferred.json"),
                              lambda n: rename(n) or n)
    assert out.transfer is not None and out.transfer.new["repo"] == "Codertocat/Hello-Universe"
    opened = change_from_payload("issues", issue_payload(), lambda n: "x/" + n.split("/")[1])
    assert opened.repo == "x/verl" and opened.thread["id"] == "x/verl#5"


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p: p.pop("repository"), "repository.full_name"),
        (lambda p: p.pop("issue"), "'issue'"),
        (lambda p: p["issue"].pop("number"), "'number'"),
        (lambda p: p["issue"].update(number="five"), "not a number"),
        (lambda p: p["issue"].update(created_at="soon"), "timestamp"),
    ],
)
def test_missing_fields_raise_clear_errors(mutate: Any, message: str):
    payload = issue_payload()
    mutate(payload)
    with pytest.raises(PayloadError, match=message):
        change_from_payload("issues", payload)


def test_comment_without_id_raises(shared_dir: Path):
    payload = load(shared_dir, "issue_comment/created.json")
    del payload["comment"]["id"]
    with pytest.raises(PayloadError, match="'id'"):
        change_from_payload("issue_comment", payload)
    with pytest.raises(PayloadError, match="not a thread event"):
        change_from_payload("ping", {"repository": {"full_name": "a/b"}})


def test_webhook_and_graphql_records_agree():
    """The sync path (GraphQL nodes) and the webhook path give the same stored fields."""
    from bot.github.sync import comment_from_node, thread_from_node

    node = {
        "__typename": "Issue", "id": "I_10", "databaseId": 10, "number": 5,
        "title": "Entropy collapse at step 300", "body": "", "url": "https://github.com/verl-project/verl/issues/5",
        "state": "CLOSED", "stateReason": "NOT_PLANNED", "author": {"__typename": "User", "login": "alice"},
        "authorAssociation": "NONE", "createdAt": "2025-05-01T10:00:00Z", "updatedAt": "2025-05-02T00:00:00Z",
        "closedAt": "2025-05-02T00:00:00Z", "labels": {"nodes": [{"name": "bug"}]},
        "assignees": {"nodes": [{"login": "bob"}]},
        "timelineItems": {"nodes": [{"actor": {"__typename": "User", "login": "maintainer"}}]},
    }
    payload = issue_payload(
        state="closed", state_reason="not_planned", author_association="NONE",
        updated_at="2025-05-02T00:00:00Z", closed_at="2025-05-02T00:00:00Z",
        assignees=[user("bob")],
    )
    payload.update(action="closed", sender=user("maintainer"))
    from_webhook = thread_from_payload("issues", payload)
    from_graphql = thread_from_node(node, "verl-project/verl")
    stored = ("kind", "github_id", "node_id", "title", "body", "author", "author_association",
              "author_is_bot", "state", "state_reason", "closed_by", "labels", "assignees",
              "url", "created_at", "updated_at", "closed_at")
    assert {k: from_webhook[k] for k in stored} == {k: from_graphql[k] for k in stored}

    bot_node = {"__typename": "IssueComment", "databaseId": 77, "id": "IC_77", "body": "hi",
                "author": {"__typename": "Bot", "login": "github-actions"}, "authorAssociation": "NONE",
                "createdAt": "2025-05-01T11:00:00Z", "updatedAt": "2025-05-01T11:00:00Z"}
    webhook_comment = comment_from_payload("issue_comment", {
        "action": "created",
        "comment": {"id": 77, "node_id": "IC_77", "body": "hi", "user": user("github-actions[bot]", "Bot"),
                    "author_association": "NONE", "created_at": "2025-05-01T11:00:00Z",
                    "updated_at": "2025-05-01T11:00:00Z"},
    })
    graphql_comment = comment_from_node(bot_node, "IssueComment")
    assert graphql_comment is not None
    for key in ("kind", "github_id", "node_id", "author", "author_is_bot", "author_association", "body"):
        assert webhook_comment[key] == graphql_comment[key], key
