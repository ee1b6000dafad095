"""What the review-state analyzer is given, and what it makes of GitHub's own facts.

- GitHub's close reasons (`state_reason`): an issue or discussion closed as a duplicate is the
  guidelines' `closed_other` (closed as a duplicate), whoever closed it except the proposer,
  whatever the comments say; a discussion closed as `outdated` ("no longer relevant") is
  lapsed when a stale label says it went inactive, and otherwise read from its comments, like
  `resolved` (the default close of a discussion) and an issue's `completed`.
- The sync asks GitHub for issues' `stateReason(enableDuplicate: true)`: without it GitHub
  answers a duplicate as NOT_PLANNED, and the sync stored another reason than the webhook.
- Comments GitHub hides as spam, abuse or off-topic are left out of what the analyzers read:
  they are no reply from someone else and raise no concern. Outdated, resolved and duplicate
  ones stay (the reply was made, the concern was raised; hidden later because it was dealt
  with).
- A review comment's file (`path`) reaches the analyzers, as the labelled threads give it.

Analyzer tests use short threads written for the project; the app's tests drive GitHub's
recorded payloads (../shared/fixtures/webhooks) and the sync through the one fake GitHub
server, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import random
import uuid
from functools import partial
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from analyzers.review import explain_review, review_thread
from bot.analysis import analysis_input
from bot.context import AppContext
from bot.github.sync import sync
from bot.pipeline import sync_changed
from bot.store.models import Analysis
from bot.store.threads import get_thread, load_thread_record
from bot.webhooks import events
from tests.fake_graphql import FakeData, FakeGraphQL, rest_comment, rest_issue, rest_user
from tests.fakegithub import no_sleep


def thread(comments: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": "org/repo#1", "repo": "org/repo", "number": 1, "kind": "issue",
        "title": "Add a new loss", "body": "Please add the loss from the paper.",
        "author": "alice", "state": "closed", "comments": comments or [],
    }
    record.update(extra)
    return record


def c(author: str | None, body: str, **extra: Any) -> dict[str, Any]:
    return {"author": author, "body": body, "created_at": "2025-01-01", **extra}


QUIET = [c("maint", "Nobody has worked on this for months and there was no activity, closing.")]
REFUSAL = [c("maint", "Thanks, but we won't add this: it is a maintenance burden for the two "
                      "of us maintaining the trainers.")]


# ---- 1. GitHub's close reasons ----------------------------------------------------------------
def test_an_issue_closed_as_a_duplicate_is_closed_other() -> None:
    """The guidelines' closed_other (closed as a duplicate), from GitHub's own reason: not the
    comments' reading (inactivity, a refusal) nor a bot closer's (a duplicate-finding workflow
    is no stale bot)."""
    for record in (
        thread(QUIET, state_reason="duplicate", closed_by="maint"),
        thread(QUIET, state_reason="DUPLICATE"),
        thread(REFUSAL, state_reason="duplicate", closed_by="maint"),
        thread(state_reason="duplicate", closed_by="github-actions[bot]"),
        thread(state_reason="duplicate", labels=["stale"]),
    ):
        explained = explain_review(record)
        assert (explained.state, explained.reasons) == ("closed_other", ["state_reason:duplicate"]), record
    # The proposer closing their own as a duplicate is still theirs.
    assert review_thread(thread(state_reason="duplicate", closed_by="alice"))["state"] == "closed_by_author"
    # What the reason does not decide, the comments do, as before.
    assert review_thread(thread(QUIET, state_reason="not_planned", closed_by="maint"))["state"] == "lapsed"


def test_a_discussion_closed_as_a_duplicate_is_closed_other() -> None:
    got = review_thread(thread(QUIET, kind="discussion", state_reason="duplicate", closed_by="maint"))
    assert got["state"] == "closed_other"


def test_a_discussion_closed_as_outdated_with_a_stale_label_lapsed() -> None:
    """`outdated` ("no longer relevant") with a stale label: closed as inactive. The label
    was read only with no reason or not_planned (an issue's reasons)."""
    explained = explain_review(thread(kind="discussion", state_reason="outdated", labels=["Stale"]))
    assert (explained.state, explained.reasons) == ("lapsed", ["stale_label"])


def test_outdated_and_resolved_discussions_are_read_from_their_comments() -> None:
    """Neither says who closed it or why beyond "no longer relevant" / "resolved" (the default
    close): the comments decide, as for an issue closed as completed."""
    for reason in ("outdated", "resolved", "completed", None):
        kind = "issue" if reason == "completed" else "discussion"
        assert review_thread(thread(QUIET, kind=kind, state_reason=reason))["state"] == "lapsed", reason
        refused = review_thread(thread(REFUSAL, kind=kind, state_reason=reason))
        assert refused["state"] == "declined", reason
        assert review_thread(thread(kind=kind, state_reason=reason, closed_by="alice"))["state"] == "closed_by_author"


# ---- 1b. the close reason as the app stores it, from the sync and from the webhooks ---------
HELLO = "Codertocat/Hello-World"
SLIME = "THUDM/slime"
MAINT = {"login": "maint", "id": 7001, "type": "User"}


def shared(shared_dir: Path, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text())


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await events.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


async def stored(ctx: Any, repo: str, number: int) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The thread record as stored, and its stored analysis."""
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        assert thread is not None
        record = await load_thread_record(session, repo, number)
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
    assert record is not None
    return record, (row.result if row is not None else None)


async def test_the_sync_stores_an_issue_closed_as_a_duplicate_as_the_webhook_does(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """GitHub answers an issue's `stateReason` DUPLICATE only when asked with
    `enableDuplicate: true` (NOT_PLANNED otherwise): the sync stored not_planned for an issue
    the `issues.closed` webhook stores as duplicate, and the review state read the comments
    (here a note of inactivity: lapsed) instead of closed_other."""
    data = FakeData(rng=random.Random(5))
    issue = data.add_thread(SLIME, "issue", n_comments=1, closed=False)
    issue["author"] = {"__typename": "User", "login": "alice"}
    note = issue["_comments"][0]
    note["author"] = {"__typename": "User", "login": "maint"}
    note["body"] = QUIET[0]["body"]
    data.close(issue)
    issue["stateReason"] = "DUPLICATE"
    issue["_closer"] = {"__typename": "User", "login": "maint"}
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))
    record, analysis = await stored(sync_ctx, SLIME, issue["number"])
    assert (record["state"], record["state_reason"], record["closed_by"]) == ("closed", "duplicate", "maint")
    assert analysis is not None and analysis["review"]["state"] == "closed_other"
    # The webhook path stores the same value (REST spells it in lower case).
    assert rest_issue(issue)["state_reason"] == "duplicate"


async def test_webhooks_store_duplicate_closes_of_issues_and_discussions(
        ctx: Any, shared_dir: Path) -> None:
    """`issues.closed` and `discussion.closed` (GitHub's payloads given the close GitHub now
    sends: state_reason duplicate, closed by a maintainer): stored lower case, read as
    closed_other."""
    closed = shared(shared_dir, "issues/reopened.json")
    closed["action"] = "closed"
    closed["issue"].update(state="closed", state_reason="duplicate",
                           closed_at="2021-10-11T16:41:00Z", updated_at="2021-10-11T16:41:00Z")
    closed["sender"] = MAINT
    await dispatch(ctx, "issues", closed)
    record, analysis = await stored(ctx, HELLO, 1)
    assert (record["state_reason"], record["closed_by"]) == ("duplicate", "maint")
    assert analysis is not None and analysis["review"]["state"] == "closed_other"

    await dispatch(ctx, "discussion", shared(shared_dir, "discussion/created.json"))
    disc = shared(shared_dir, "discussion/created.json")
    disc["action"] = "closed"
    disc["discussion"].update(state="closed", state_reason="DUPLICATE",
                              updated_at="2021-03-30T20:30:00Z")
    disc["sender"] = MAINT
    await dispatch(ctx, "discussion", disc)
    record, analysis = await stored(ctx, HELLO, 4)
    assert (record["state"], record["state_reason"], record["closed_by"]) == ("closed", "duplicate", "maint")
    assert analysis is not None and analysis["review"]["state"] == "closed_other"


# ---- 2. comments GitHub hides -------------------------------------------------------------
ASKS = "Please add unit tests and documentation for the new loss, the docs are missing."


def test_the_analyzers_are_given_no_comment_hidden_as_spam_abuse_or_off_topic() -> None:
    """bot.analysis.analysis_input: those three left out; the others kept, in the contract's
    shape (no `minimized_reason`); a record with no hidden comment passed as it is."""
    hidden = [c("bob", ASKS, minimized_reason=reason)
              for reason in ("spam", "abuse", "off-topic", "outdated", "resolved", "duplicate", "unknown")]
    record = thread([c("carol", "Same here."), *hidden], state="open")
    given = analysis_input(record)
    assert [x.get("author") for x in given["comments"]] == ["carol", "bob", "bob", "bob", "bob"]
    assert all("minimized_reason" not in x for x in given["comments"])
    assert len(record["comments"]) == 8  # the stored record is not changed
    plain = thread([c("carol", "Same here.")])
    assert analysis_input(plain) is plain


def _issue_with_reply(data: FakeData, body: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """An open issue by alice with one comment by someone else."""
    issue = data.add_thread(SLIME, "issue", n_comments=1, closed=False)
    issue["author"] = {"__typename": "User", "login": "alice"}
    reply = issue["_comments"][0]
    reply["author"] = {"__typename": "User", "login": "bob"}
    reply["body"] = body
    return issue, reply


async def test_a_comment_hidden_as_spam_or_off_topic_is_no_reply_and_raises_no_concern(
        sync_ctx: AppContext, fake_github: Any, schema_path: Path) -> None:
    """A comment GitHub shows hidden as spam, abuse or off-topic (GraphQL `isMinimized`,
    `minimizedReason`): the sync did not ask, and the analyzers counted it as a reply from
    someone else and read its words as a concern. Hidden as outdated or resolved it is still
    a reply that was made. A later edit (its webhook says nothing of hiding) keeps it hidden;
    hidden or shown again on GitHub, a full sync reads it and the thread is analysed again."""
    data = FakeData(rng=random.Random(9))
    spam_issue, spam = _issue_with_reply(data, ASKS)
    spam.update(isMinimized=True, minimizedReason="spam")
    off_issue, off = _issue_with_reply(data, ASKS)
    off.update(isMinimized=True, minimizedReason="off-topic")
    old_issue, old = _issue_with_reply(data, ASKS)
    old.update(isMinimized=True, minimizedReason="outdated")
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)
    await sync(sync_ctx, [SLIME], sleep=no_sleep, on_changed=partial(sync_changed, sync_ctx))

    for issue in (spam_issue, off_issue):
        record, analysis = await stored(sync_ctx, SLIME, issue["number"])
        assert len(record["comments"]) == 1  # kept, and shown as GitHub shows it
        assert analysis is not None
        assert analysis["review"] == {"state": "open_no_reply", "replied_from_other": False, "concerns": []}
    record, analysis = await stored(sync_ctx, SLIME, old_issue["number"])
    assert analysis is not None and analysis["review"]["replied_from_other"] is True
    assert analysis["review"]["state"] == "open_replied"

    # An edit delivered by webhook (no word of hiding in it) keeps it hidden.
    edited = {"action": "edited", "issue": rest_issue(spam_issue), "comment": rest_comment(spam),
              "repository": {"id": 31, "full_name": SLIME, "default_branch": "main",
                             "owner": {"login": "THUDM", "type": "Organization"}},
              "sender": rest_user(spam["author"])}
    edited["comment"]["body"] = ASKS + " Buy followers at example.com"
    edited["comment"]["updated_at"] = "2030-01-01T00:00:00Z"
    await dispatch(sync_ctx, "issue_comment", edited)
    record, analysis = await stored(sync_ctx, SLIME, spam_issue["number"])
    assert record["comments"][0]["body"].endswith("example.com")
    assert analysis is not None and analysis["review"]["replied_from_other"] is False

    # Shown again on GitHub (and the outdated one hidden as abuse): the next full sync reads
    # both and analyses the threads again, though neither thread's updatedAt moved.
    off.update(isMinimized=False, minimizedReason=None)
    old.update(minimizedReason="abuse")
    await sync(sync_ctx, [SLIME], full=True, sleep=no_sleep,
               on_changed=partial(sync_changed, sync_ctx))
    _, analysis = await stored(sync_ctx, SLIME, off_issue["number"])
    assert analysis is not None and analysis["review"]["replied_from_other"] is True
    _, analysis = await stored(sync_ctx, SLIME, old_issue["number"])
    assert analysis is not None and analysis["review"]["replied_from_other"] is False


# ---- 3. the file a review comment is on ------------------------------------------------------
REMARK = "This sentence about the default clip ratio reads oddly, could you reword it?"


async def test_the_analyzers_are_given_the_file_a_review_comment_is_on(
        ctx: Any, shared_dir: Path) -> None:
    """`pull_request_review_comment` (GitHub's payload, a reviewer's remark on a code file):
    the file was stored (review46) but the record the analyzers read left it out, where the
    labelled threads give it (the remark's `path:line` first line) and the review analyzer
    reads a comment's `path` (a remark asking a change of a code file is a design concern, of
    a docs or tests file a tests_or_docs one). Given now, as an optional comment key."""
    payload = shared(shared_dir, "pull_request_review_comment/created.json")
    payload["comment"].update(user={"login": "reviewer1", "id": 5501, "type": "User"},
                              author_association="MEMBER", path="verl/trainer/core_algos.py",
                              body=REMARK)
    await dispatch(ctx, "pull_request_review_comment", payload)
    record, analysis = await stored(ctx, HELLO, 2)
    [comment] = analysis_input(record)["comments"]
    assert (comment["kind"], comment["path"]) == ("review_comment", "verl/trainer/core_algos.py")
    assert analysis is not None and analysis["review"] == review_thread(analysis_input(record))
    # A comment on no file (an issue comment, a review's own text) has no such key.
    payload = shared(shared_dir, "issue_comment/created.json")
    await dispatch(ctx, "issue_comment", payload)
    record, _ = await stored(ctx, HELLO, 1)
    assert record["comments"] and all("path" not in c for c in record["comments"])
