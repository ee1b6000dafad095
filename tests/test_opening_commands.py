"""`/rltracker ignore` and `stop` written in the opening post of an issue, pull request or
discussion, and commands in threaded discussion replies. On SQLite and PostgreSQL (`app_ctx`
behind `db_url`), GitHub through the fake server, GitHub's own webhook payloads where the
fixtures hold them.

On main: an author who ended their report with `/rltracker ignore` still got the failure
comment (commands were read in comments only), the command line stayed in what the analyzers
read, and an edit of the opening post adding `/rltracker stop` did nothing."""

from __future__ import annotations

import copy
import json
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from bot.analysis import analysis_input
from bot.speaking.decide import act
from bot.store.models import Thread
from bot.webhooks.commands import router as commands_router
from bot.webhooks.routers import router as all_routers
from tests.test_actions_e2e import (
    BODY,
    FAILURE,
    INST,
    PROPOSAL,
    VERL,
    actions_of,
    app_comments,
    install,
    open_issue,
)
from tests.test_commands import comment_read


async def muted(ctx: Any, number: int) -> bool:
    async with ctx.sessionmaker() as s:
        return bool((await s.scalar(select(Thread).where(Thread.number == number))).muted)


def fixture(shared_dir: Any, event: str, action: str) -> dict[str, Any]:
    path = shared_dir / "fixtures" / "webhooks" / event / f"{action}.json"
    data = json.loads(path.read_text())
    data["repository"]["full_name"] = VERL
    data["installation"] = {"id": INST}
    return data


def edited(payload: dict[str, Any], *, body: str | None = None, title: str | None = None,
           sender: str = "alice") -> sansio.Event:
    """`issues.edited` of the issue `payload` opened: its body and/or title changed."""
    data = copy.deepcopy(payload)
    data["action"] = "edited"
    data["changes"] = {}
    if body is not None:
        data["changes"]["body"] = {"from": data["issue"]["body"]}
        data["issue"]["body"] = body
    if title is not None:
        data["changes"]["title"] = {"from": data["issue"]["title"]}
        data["issue"]["title"] = title
    data["sender"] = {"login": sender, "type": "User"}
    return sansio.Event(data, event="issues", delivery_id=f"edit-{id(data)}")


# ---- the opening decision -------------------------------------------------------------------
async def test_an_opening_post_ending_with_ignore_or_stop_gets_no_failure_comment(
        app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    for number, line in ((1, "/rltracker ignore"), (2, "/rltracker stop."),
                         (3, "／ｒｌｔｒａｃｋｅｒ　ｉｇｎｏｒｅ")):
        payload = await open_issue(app_ctx, fake_github, number, body=f"{BODY}\n\n{line}\n")
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis=FAILURE)
        assert out["failure_comment"] == "skipped:muted", line
        assert not app_comments(fake_github, VERL, number)
    # shown as code, or another command: no silence asked
    for number, line in ((4, "```\n/rltracker ignore\n```"), (5, "/rltracker methods kl_growth")):
        payload = await open_issue(app_ctx, fake_github, number, body=f"{BODY}\n\n{line}\n")
        out = await act(app_ctx, VERL, number, trigger="issues.opened", payload=payload,
                        analysis=FAILURE)
        assert out["failure_comment"] == "posted", line
    # a recheck someone asks for later honours it as it honours a mute
    out = await act(app_ctx, VERL, 1, trigger="command", payload=None, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:muted"


async def test_a_pull_request_opened_with_ignore_gets_no_rule_summary(
        app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 6, kind="pull_request",
                               title="Add GSPO", body="Implements GSPO.\n/rltracker ignore")
    payload = {**payload, "action": "opened", "pull_request": payload.pop("issue")}
    out = await act(app_ctx, VERL, 6, trigger="pull_request.opened", payload=payload,
                    analysis=PROPOSAL)
    assert out["rule_summary"].startswith("skipped"), out
    assert not fake_github.comments_of(VERL, 6)


def test_command_lines_of_the_opening_post_are_not_read_by_the_analyzers() -> None:
    record = {"id": "o/r#1", "kind": "issue", "title": "t",
              "body": "Entropy collapses.\n/rltracker ignore\nreward flat\n", "comments": []}
    assert analysis_input(record)["body"] == "Entropy collapses.\nreward flat\n"
    plain = {**record, "body": "no command here"}
    assert analysis_input(plain) is plain


# ---- the command, through the webhook routers ----------------------------------------------
async def test_a_real_opened_payload_with_ignore_mutes_the_thread_once(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's own `issues.opened` payload, its body ending with the command, through every
    router as the worker dispatches it: the thread is muted and the command recorded (once
    across a redelivery), as `/rltracker ignore` in a comment by the author does."""
    await install(app_ctx, fake_github)
    data = fixture(shared_dir, "issues", "opened")
    author = data["issue"]["user"]["login"]
    data["issue"]["body"] = (data["issue"]["body"] or "") + "\n\n/rltracker ignore"
    fake_github.add_issue(VERL, data["issue"]["number"], data["issue"]["title"],
                          data["issue"]["body"], author)
    event = sansio.Event(data, event="issues", delivery_id="open-ignore")
    await all_routers.dispatch(event, app_ctx)
    await all_routers.dispatch(event, app_ctx)
    assert await muted(app_ctx, data["issue"]["number"])
    rows = [a for a in await actions_of(app_ctx, kind="command") if a.status != "skipped"]
    assert [(a.status, a.details.get("command"), a.details.get("by")) for a in rows] == [
        ("posted", "ignore", "author")]
    assert not fake_github.comments_of(VERL, data["issue"]["number"])


async def test_an_edit_adding_stop_after_the_comment_minimises_it_and_mutes(
        app_ctx: Any, fake_github: Any) -> None:
    """As `/rltracker stop` in a new comment would: the comment is minimised, the thread
    muted; an edit that then takes the line out does not unmute (nor does a comment's)."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 7)
    await act(app_ctx, VERL, 7, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [posted] = app_comments(fake_github, VERL, 7)
    minimised: list[str] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if (read := comment_read(query, variables)) is not None:
            return read
        minimised.append(variables["id"])
        return {"data": {"minimizeComment": {"minimizedComment": {
            "isMinimized": True, "minimizedReason": "outdated"}}}}

    fake_github.graphql_handler = graphql
    event = edited(payload, body=f"{BODY}\n/rltracker stop")
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # redelivered
    assert minimised == [posted["node_id"]]
    assert await muted(app_ctx, 7)
    # the edit's own decision (the events handler) leaves the comment as it is
    out = await act(app_ctx, VERL, 7, trigger="issues.edited", payload=event.data, analysis=FAILURE)
    assert out["failure_comment"] == "muted"
    # the line taken out again: still muted, nothing said
    undo = edited(event.data, body=BODY)
    await commands_router.dispatch(undo, app_ctx)
    assert await muted(app_ctx, 7)
    assert len(fake_github.comments_of(VERL, 7)) == 1


async def test_an_edit_adding_ignore_mutes_and_the_decision_does_not_rewrite(
        app_ctx: Any, fake_github: Any) -> None:
    """The events handler and the commands handler of one delivery run in no fixed order:
    the edit's decision honours the line itself, whichever runs first."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 8)
    await act(app_ctx, VERL, 8, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [before] = app_comments(fake_github, VERL, 8)
    event = edited(payload, body=f"{BODY} Also the KL grows.\n/rltracker ignore")
    fake_github.issue(VERL, 8)["body"] = event.data["issue"]["body"]
    from bot.webhooks.events import handle

    await handle("issues", event.data, app_ctx)  # stores the edit and decides on it first
    [after] = app_comments(fake_github, VERL, 8)
    assert after["body"] == before["body"]
    await commands_router.dispatch(event, app_ctx)
    assert await muted(app_ctx, 8)


async def test_a_title_edit_is_no_body_edit(app_ctx: Any, fake_github: Any) -> None:
    """A title edit carries the body as it was (`changes` names the title only): the command
    in it was handled at the opening; it is not handled again and no note says it was."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 9, body=f"{BODY}\n/rltracker ignore")
    await commands_router.dispatch(sansio.Event(payload, event="issues", delivery_id="o9"), app_ctx)
    before = await actions_of(app_ctx, kind="command")
    await commands_router.dispatch(edited(payload, title="Entropy collapse (GRPO, 7B)"), app_ctx)
    assert [(a.status, a.reason) for a in await actions_of(app_ctx, kind="command")] == [
        (a.status, a.reason) for a in before]
    assert not fake_github.comments_of(VERL, 9)


async def test_an_edit_by_someone_without_write_access_does_not_mute(
        app_ctx: Any, fake_github: Any) -> None:
    """The thread's author may silence their own thread; anyone else editing the opening post
    speaks as a maintainer, and is asked of GitHub, as for a command in a comment."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 10)
    fake_github.set_permission(VERL, "tria", "triage")
    await commands_router.dispatch(edited(payload, body=f"{BODY}\n/rltracker ignore",
                                          sender="tria"), app_ctx)
    assert not await muted(app_ctx, 10)
    fake_github.set_permission(VERL, "walt", "write")
    await commands_router.dispatch(edited(payload, body=f"{BODY}\n/rltracker ignore",
                                          sender="walt"), app_ctx)
    assert await muted(app_ctx, 10)


def test_a_verdict_export_leaves_the_opening_posts_command_lines_out() -> None:
    """`rltracker verdicts export` writes what `python -m training --extra` fits on: the
    thread as the analyzers read it. On main its comments were, its body was not (with a
    `/rltracker ignore` line the analyzers never read)."""
    from bot.cli.verdicts import labelled_thread
    from bot.store.models import Verdict

    thread = Thread(repo=VERL, number=3, kind="issue", title="KL grows", state="open",
                    author="alice", body="KL goes up to 40 after step 300.\n/rltracker ignore\n",
                    complete=True)
    verdict = Verdict(is_failure_report=True, category="kl_growth", login="alice", role="author")
    row = labelled_thread(thread, [], verdict)
    assert row["body"] == analysis_input({"body": thread.body, "comments": []})["body"] == (
        "KL goes up to 40 after step 300.\n")


async def test_ignore_edited_in_before_the_decision_posts_is_read_on_the_live_issue(
        app_ctx: Any, fake_github: Any) -> None:
    """The author adds `/rltracker ignore` seconds after opening; the opening decision runs
    before the edit's delivery (the stored body has no command). The live issue, read right
    before posting, has it: quiet, as for a label or a lock added meanwhile. On main: posted."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 11)
    fake_github.issue(VERL, 11)["body"] = f"{BODY}\n/rltracker ignore"
    out = await act(app_ctx, VERL, 11, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:muted"
    assert not app_comments(fake_github, VERL, 11)
    pr = await open_issue(app_ctx, fake_github, 12, kind="pull_request", title="Add GSPO",
                          body="Implements GSPO.")
    pr = {**pr, "action": "opened", "pull_request": pr.pop("issue")}
    fake_github.issue(VERL, 12)["body"] = "Implements GSPO.\n/rltracker stop"
    out = await act(app_ctx, VERL, 12, trigger="pull_request.opened", payload=pr, analysis=PROPOSAL)
    assert out["rule_summary"] == "skipped:muted", out


def test_a_thread_event_whose_opening_post_holds_ignore_runs_alone_not_batched() -> None:
    """The worker batches thread deliveries (all stored, then all decided on the stored
    thread): an `opened` saying `/rltracker ignore` batched with the edit that took it out
    again was decided on the edited body (the comment posted) before its command ran. A
    command runs alone, in its place, whether in a comment or in the opening post."""
    from bot.webhooks.routers import batch_handling

    def event(name: str, key: str, body: str, action: str = "opened") -> sansio.Event:
        return sansio.Event({"action": action, key: {"number": 1, "body": body}},
                            event=name, delivery_id="x")

    for name, key in (("issues", "issue"), ("pull_request", "pull_request"),
                      ("discussion", "discussion")):
        assert not batch_handling.takes(event(name, key, f"{BODY}\n/rltracker ignore")), name
        assert batch_handling.takes(event(name, key, BODY)), name
        assert batch_handling.takes(event(name, key, f"{BODY}\n/rltracker ignore", "labeled"))
    # a comment on a thread whose opening post says it: batched (the comment holds no command)
    comment = sansio.Event({"action": "created", "issue": {"number": 1, "body": "/rltracker stop"},
                            "comment": {"id": 1, "body": "same here"}},
                           event="issue_comment", delivery_id="y")
    assert batch_handling.takes(comment)


# ---- acknowledged as a comment's command is ---------------------------------------------
async def test_an_opening_post_command_is_acknowledged_with_a_reaction_once(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's own `issues.opened` and `pull_request.opened` payloads ending with `ignore` /
    `stop`, and an edit adding it: on main the thread was muted but the author got no sign the
    app read the line (a command in a comment gets a 👍). Now the 👍 goes on the issue or pull
    request itself (REST `issues/{n}/reactions`), once across redeliveries, recorded in the
    command's details."""
    await install(app_ctx, fake_github)
    issue = fixture(shared_dir, "issues", "opened")
    number = issue["issue"]["number"]
    issue["issue"]["body"] = (issue["issue"]["body"] or "") + "\n\n/rltracker ignore"
    fake_github.add_issue(VERL, number, issue["issue"]["title"], issue["issue"]["body"],
                          issue["issue"]["user"]["login"])
    pr = fixture(shared_dir, "pull_request", "opened")
    pr["pull_request"]["number"] = pr_number = number + 1
    pr["pull_request"]["body"] = "Implements GSPO.\n/rltracker stop"
    fake_github.add_issue(VERL, pr_number, "Add GSPO", pr["pull_request"]["body"],
                          pr["pull_request"]["user"]["login"], pull_request=True)
    fake_github.graphql_handler = comment_read
    for data, name in ((issue, "issues"), (pr, "pull_request")):
        event = sansio.Event(data, event=name, delivery_id=f"open-{name}")
        await all_routers.dispatch(event, app_ctx)
        await all_routers.dispatch(event, app_ctx)  # redelivered
    assert [r.path for r in fake_github.requests("POST", r"/reactions")] == [
        f"/repos/{VERL}/issues/{number}/reactions", f"/repos/{VERL}/issues/{pr_number}/reactions"]
    for n in (number, pr_number):
        assert [r["content"] for r in fake_github.reactions[(VERL.lower(), ("issue", n))]] == ["+1"]
    rows = [a for a in await actions_of(app_ctx, kind="command") if a.status != "skipped"]
    assert [(a.details["command"], a.details.get("reacted")) for a in rows] == [
        ("ignore", True), ("stop", True)]
    # an edit adding the line later, by the author: acknowledged too
    payload = await open_issue(app_ctx, fake_github, 40)
    await commands_router.dispatch(edited(payload, body=f"{BODY}\n/rltracker ignore"), app_ctx)
    assert [r["content"] for r in fake_github.reactions[(VERL.lower(), ("issue", 40))]] == ["+1"]


async def test_a_discussion_opened_with_stop_is_acknowledged_on_the_discussion(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's own `discussion.created` payload ending with `/rltracker stop`: the 👍 goes on
    the discussion (GraphQL addReaction on its node; no REST reactions endpoint for
    discussions), executed against GitHub's schema. On main: none."""
    from tests.fake_graphql import load_github_schema
    from tests.test_command_threads import DiscussionAPI

    await install(app_ctx, fake_github)
    data = fixture(shared_dir, "discussion", "created")
    data["discussion"]["body"] = "How do I read the entropy curve?\n/rltracker stop"
    api = DiscussionAPI(load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql"),
                        discussion_id=data["discussion"]["node_id"])
    api.route(fake_github)
    event = sansio.Event(data, event="discussion", delivery_id="disc-stop")
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # redelivered
    assert api.reactions == [(data["discussion"]["node_id"], "THUMBS_UP")]
    assert not fake_github.requests("POST", r"/reactions")


async def test_an_opening_post_command_in_dry_run_reacts_to_nothing(
        ctx: Any, fake_github: Any) -> None:
    """In dry run (the app's) the mute holds and the 👍 is only recorded, as for comments."""
    await install(ctx, fake_github)
    payload = await open_issue(ctx, fake_github, 41, body=f"{BODY}\n/rltracker ignore")
    await commands_router.dispatch(sansio.Event(payload, event="issues", delivery_id="o41"), ctx)
    assert await muted(ctx, 41)
    assert not fake_github.requests("POST", r"/reactions")
    [row] = await actions_of(ctx, kind="command")
    assert row.status == "dry_run" and row.details.get("would_react") is True
