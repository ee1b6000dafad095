"""The app's writes to GitHub besides comment bodies: the kind label from the repository's
config, hiding its own comment (GraphQL minimizeComment) on `stop` / `not-a-failure`, against
the fake GitHub server (whose label names are case-insensitive, as GitHub's), on SQLite and
PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from bot.speaking.decide import act
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import FAILURE, VERL, app_comments, install, open_issue
from tests.test_commands import actions, comment_event
from tests.test_verdicts import Minimising, commented, muted, written

CONFIG = "labels:\n  entropy_collapse: 'rl: entropy'\n  kl_growth: 'rl: kl'\n"


def labels(fake: Any, number: int) -> list[str]:
    return sorted(label["name"] for label in fake.issue(VERL, number)["labels"])


async def test_a_label_the_issue_had_in_another_case_is_not_taken_for_the_apps(
        app_ctx: Any, fake_github: Any) -> None:
    """The issue was opened with `RL: Entropy` (an issue template's, or the reporter's): the
    config's `rl: entropy` is that label to GitHub (label names are case-insensitive), so
    adding it added nothing. The app compared names case-sensitively, recorded the label as
    its own, and a `not-a-failure` then removed the label the person had put there."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    payload = await open_issue(app_ctx, fake_github, 51, labels=["RL: Entropy"])
    out = await act(app_ctx, VERL, 51, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert labels(fake_github, 51) == ["RL: Entropy"]
    [row] = await actions(app_ctx, "failure_comment")
    assert not (row.details or {}).get("label")
    fake_github.graphql_handler = Minimising()
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=51), app_ctx)
    assert labels(fake_github, 51) == ["RL: Entropy"]


async def test_a_kind_whose_label_a_person_added_in_another_case_leaves_it_theirs(
        app_ctx: Any, fake_github: Any) -> None:
    """The app added `rl: entropy`; a person then labelled the issue `RL: KL` by hand. A
    `/rltracker kind kl_growth` swaps the app's label: `rl: entropy` goes, and `rl: kl` is
    the person's already (another case, the same label). The app took it for one it added, and
    a later `not-a-failure` removed the person's label."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await commented(app_ctx, fake_github, 52)
    assert labels(fake_github, 52) == ["rl: entropy"]
    fake_github.issue(VERL, 52)["labels"].append({"name": "RL: KL"})  # a person's
    now = datetime.now(UTC)
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=52), now - timedelta(minutes=2)), app_ctx)
    assert labels(fake_github, 52) == ["RL: KL"]
    fake_github.graphql_handler = Minimising()
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=52), now - timedelta(minutes=1)), app_ctx)
    assert labels(fake_github, 52) == ["RL: KL"]


class Deleted(Minimising):
    """GitHub's answer to minimizeComment / unminimizeComment on a comment that was deleted:
    200, the mutation null and a NOT_FOUND error."""

    def __init__(self, *gone: str, read_before: bool = True) -> None:
        super().__init__()
        self.gone = set(gone)
        self.read_before = read_before  # False: deleted between the app's read and its mutation

    def __call__(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "nodes(" in query and self.read_before:
            ids = variables["ids"]
            answer = super().__call__(query, variables)
            answer["data"]["nodes"] = [None if i in self.gone else n for i, n in zip(ids, answer["data"]["nodes"], strict=True)]
            answer["errors"] = [{"type": "NOT_FOUND", "path": ["nodes", k], "message": "Could not resolve"}
                                for k, i in enumerate(ids) if i in self.gone]
            return answer
        if "nodes(" in query or variables["id"] not in self.gone:
            return super().__call__(query, variables)
        node = variables["id"]
        field = "unminimizeComment" if "unminimizeComment" in query else "minimizeComment"
        self.calls.append((field, node))
        return {"data": {field: None}, "errors": [{
            "type": "NOT_FOUND", "path": [field], "locations": [{"line": 3, "column": 3}],
            "message": f"Could not resolve to a node with the global id of '{node}'"}]}


async def test_not_a_failure_on_a_comment_a_person_deleted_is_done(
        app_ctx: Any, fake_github: Any) -> None:
    """A person deleted the app's failure comment on GitHub (the app has not seen it yet:
    no delivery for a comment deleted by someone else reads as ours). `/rltracker
    not-a-failure` minimised it: GitHub's NOT_FOUND raised, the command's record was undone
    and the delivery failed, every retry the same, and the app's label stayed on the issue.
    A comment gone is one nobody sees: the thread is muted, the label removed, the comment
    recorded as deleted, and the command acknowledged."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await commented(app_ctx, fake_github, 53)
    [comment] = app_comments(fake_github, VERL, 53)
    del fake_github.comments[comment["id"]]  # deleted on GitHub by a person
    github = Deleted(comment["node_id"])
    fake_github.graphql_handler = github
    event = comment_event("/rltracker not-a-failure", number=53)
    await commands_router.dispatch(event, app_ctx)
    assert await muted(app_ctx, 53)
    assert labels(fake_github, 53) == []
    [row] = await actions(app_ctx, "failure_comment")
    assert row.comment_deleted and not row.is_minimized
    assert [a.reason for a in await actions(app_ctx, "command")] == ["/rltracker not-a-failure"]
    cid = event.data["comment"]["id"]
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    await commands_router.dispatch(event, app_ctx)  # a redelivery asks GitHub nothing more
    assert github.calls == []  # read gone: nothing to minimise


async def test_stop_on_a_comment_a_person_deleted_is_done(app_ctx: Any, fake_github: Any) -> None:
    """The same for `/rltracker stop`, the comment deleted between the app's read and its
    minimizeComment: the thread muted, the command recorded, no retries."""
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 54)
    [comment] = app_comments(fake_github, VERL, 54)
    del fake_github.comments[comment["id"]]
    github = Deleted(comment["node_id"], read_before=False)
    fake_github.graphql_handler = github
    await commands_router.dispatch(comment_event("/rltracker stop", number=54), app_ctx)
    assert await muted(app_ctx, 54)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.comment_deleted
    assert [a.reason for a in await actions(app_ctx, "command")] == ["/rltracker stop"]
    assert github.calls == [("minimizeComment", comment["node_id"])]


class Hidden(Minimising):
    """GitHub's comments as GraphQL sees them: `nodes(ids:)` reads whether each is minimised
    (and why); a person may have hidden one (`hide`), which the app has not read yet."""

    def __init__(self) -> None:
        super().__init__()
        self.reasons: dict[str, str] = {}

    def hide(self, node: str, reason: str = "OFF_TOPIC") -> None:
        self.minimized[node], self.reasons[node] = True, reason

    def __call__(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "nodes(" in query:
            return {"data": {"rateLimit": None, "nodes": [
                {"__typename": "IssueComment", "id": node,
                 "isMinimized": self.minimized.get(node, False),
                 "minimizedReason": self.reasons.get(node) if self.minimized.get(node) else None,
                 "up": {"totalCount": 0}, "down": {"totalCount": 0}}
                for node in variables["ids"]]}}
        if "unminimizeComment" not in query:
            self.reasons[variables["id"]] = "OUTDATED"
        return super().__call__(query, variables)


async def test_a_kind_does_not_show_a_comment_a_maintainer_hid(app_ctx: Any, fake_github: Any) -> None:
    """A maintainer hid the app's failure comment on GitHub (off-topic); the app had not read
    it yet (the reception job reads that nightly). A `not-a-failure` minimised it again and
    recorded the hiding as the verdict's, so a later `kind` showed (unminimizeComment) what
    the maintainer had hidden. The app now reads the comment first: hidden by a person, it is
    left hidden, recorded as theirs, and a later kind leaves it alone."""
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 55)
    [comment] = app_comments(fake_github, VERL, 55)
    github = Hidden()
    github.hide(comment["node_id"])
    fake_github.graphql_handler = github
    now = datetime.now(UTC)
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=55), now - timedelta(minutes=2)), app_ctx)
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=55), now - timedelta(minutes=1)), app_ctx)
    assert github.minimized == {comment["node_id"]: True}
    assert ("unminimize", comment["node_id"]) not in github.calls
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and not (row.details or {}).get("minimized_by")


async def test_a_label_removal_github_rate_limited_is_done_by_the_retry(
        app_ctx: Any, fake_github: Any) -> None:
    """`not-a-failure` while GitHub rate-limits the label's removal past the client's own
    retries: the warning was logged and the command recorded done, so no retry came and the
    failure label stayed on an issue a person said is no failure report. The delivery now
    fails (the worker waits as GitHub asks) and its retry removes the label; a label GitHub
    refuses for good (no permission: 403) is still only logged."""
    import gidgethub
    import pytest

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await commented(app_ctx, fake_github, 56)
    assert labels(fake_github, 56) == ["rl: entropy"]
    fake_github.graphql_handler = Minimising()
    fake_github.rate_limited("DELETE", r"/issues/56/labels/", times=app_ctx.github.policy.max_attempts)
    event = comment_event("/rltracker not-a-failure", number=56)
    with pytest.raises(gidgethub.GitHubException):
        await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # the worker's retry
    assert labels(fake_github, 56) == []
    assert await muted(app_ctx, 56)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and not (row.details or {}).get("label")
    # refused for good: logged, the command done
    await commented(app_ctx, fake_github, 57)
    fake_github.fail_next("DELETE", r"/issues/57/labels/", 403, times=1)
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=57), app_ctx)
    assert await muted(app_ctx, 57)


async def test_a_label_already_gone_with_its_issue_is_done(app_ctx: Any, fake_github: Any) -> None:
    """The label's removal answered 410 (the issue deleted, or issues turned off): nothing
    left to remove, recorded as done, as a 404 is."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await commented(app_ctx, fake_github, 58)
    fake_github.graphql_handler = Minimising()
    fake_github.fail_next("DELETE", r"/issues/58/labels/", 410, times=1)
    await commands_router.dispatch(comment_event("/rltracker not-a-failure", number=58), app_ctx)
    [row] = [a for a in await actions(app_ctx, "failure_comment") if a.number == 58]
    assert not (row.details or {}).get("label")


async def test_a_label_a_person_removed_is_not_added_back_and_kinds_in_a_row_settle(
        app_ctx: Any, fake_github: Any) -> None:
    """A person removed the app's `rl: entropy`: a redelivered verdict and the comment's
    rewrite for the same kind do not add it back. Two kinds in quick succession, each
    delivered twice (GitHub redelivers), leave only the latest kind's label, added once."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    await commented(app_ctx, fake_github, 59)
    fake_github.issue(VERL, 59)["labels"] = []  # a person removed it
    now = datetime.now(UTC)
    same = written(comment_event("/rltracker kind entropy_collapse", number=59), now - timedelta(minutes=4))
    for _ in range(2):
        await commands_router.dispatch(same, app_ctx)
    assert labels(fake_github, 59) == []
    kl = written(comment_event("/rltracker kind kl_growth", number=59), now - timedelta(minutes=2))
    entropy = written(comment_event("/rltracker kind entropy-collapse", number=59), now - timedelta(minutes=1))
    for event in (kl, entropy, kl, entropy):
        await commands_router.dispatch(event, app_ctx)
    assert labels(fake_github, 59) == ["rl: entropy"]
    [row] = await actions(app_ctx, "failure_comment")
    assert row.details["label"] == "rl: entropy" and row.details["category"] == "entropy_collapse"


async def test_a_kind_does_not_show_a_comment_a_maintainer_hid_after_the_verdict(
        app_ctx: Any, fake_github: Any) -> None:
    """`not-a-failure` hid the app's comment (OUTDATED); a maintainer then showed it and hid
    it again as spam. A later `kind` unminimised it: the maintainer's hiding undone. Only
    the verdict's own hiding (still OUTDATED) is undone now."""
    await install(app_ctx, fake_github)
    await commented(app_ctx, fake_github, 60)
    [comment] = app_comments(fake_github, VERL, 60)
    github = Hidden()
    fake_github.graphql_handler = github
    now = datetime.now(UTC)
    await commands_router.dispatch(written(comment_event(
        "/rltracker not-a-failure", number=60), now - timedelta(minutes=2)), app_ctx)
    assert github.minimized == {comment["node_id"]: True}
    github.hide(comment["node_id"], "SPAM")
    await commands_router.dispatch(written(comment_event(
        "/rltracker kind kl_growth", number=60), now - timedelta(minutes=1)), app_ctx)
    assert ("unminimize", comment["node_id"]) not in github.calls
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and row.minimized_reason == "SPAM"
    assert not (row.details or {}).get("minimized_by")


async def test_dry_run_records_the_label_it_would_add(app_ctx: Any, fake_github: Any) -> None:
    """In dry run the failure comment's record said what would be posted, and nothing of the
    label the repository's config would have the app add (nor of its swap after a kind), so a
    repository trying the app out could not see it. The record now keeps `would_label`; GitHub
    is asked nothing."""
    import dataclasses

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    app_ctx.settings = dataclasses.replace(app_ctx.settings, dry_run=True)
    await commented(app_ctx, fake_github, 61)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "dry_run" and row.details["would_label"] == "rl: entropy"
    await commands_router.dispatch(comment_event("/rltracker kind kl_growth", number=61), app_ctx)
    [row] = await actions(app_ctx, "failure_comment")
    assert row.details["category"] == "kl_growth" and row.details["would_label"] == "rl: kl"
    assert labels(fake_github, 61) == []
    assert not fake_github.requests("POST", r"/labels") and not fake_github.requests("DELETE", r"/labels")


async def test_a_label_lost_to_a_rate_limit_on_the_first_post_is_added_by_the_retry(
        app_ctx: Any, fake_github: Any) -> None:
    """The failure comment was posted and adding its kind label met a rate limit past the
    client's retries: logged and lost for good (the retry found the comment's slot taken).
    Now the delivery fails and its retry adds the label, posting no second comment; a label
    refused for good (403) is logged and the delivery succeeds."""
    import gidgethub
    import pytest

    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", CONFIG)
    payload = await open_issue(app_ctx, fake_github, 71)
    fake_github.rate_limited("POST", r"/issues/71/labels$", times=app_ctx.github.policy.max_attempts)
    with pytest.raises(gidgethub.GitHubException):
        await act(app_ctx, VERL, 71, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert labels(fake_github, 71) == [] and len(app_comments(fake_github, VERL, 71)) == 1
    await act(app_ctx, VERL, 71, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert labels(fake_github, 71) == ["rl: entropy"]
    assert len(app_comments(fake_github, VERL, 71)) == 1
    [row] = await actions(app_ctx, "failure_comment")
    assert row.status == "posted" and row.details.get("label") == "rl: entropy"
    assert not row.details.get("label_pending")
    await act(app_ctx, VERL, 71, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert len(fake_github.requests("POST", r"/issues/71/labels$")) == (
        app_ctx.github.policy.max_attempts + 1)  # nothing more once added
    payload = await open_issue(app_ctx, fake_github, 72)
    fake_github.fail_next("POST", r"/issues/72/labels$", 403)
    out = await act(app_ctx, VERL, 72, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "posted" and labels(fake_github, 72) == []
