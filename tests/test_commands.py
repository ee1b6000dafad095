"""`/rltracker` commands through the real gidgethub Router, against the fake GitHub server."""

from __future__ import annotations

import itertools
import re
from typing import Any

import gidgethub
import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.command_syntax import parse_command
from bot.speaking.decide import act
from bot.speaking.render import FAILURE_MARKER, REPLY_MARKER
from bot.store.models import Action, Analysis, Repository, Thread
from bot.webhooks.commands import handle_command, resolve_failure
from bot.webhooks.commands import router as commands_router
from tests.test_actions_e2e import FAILURE, INST, NOT_FAILURE, VERL, install, open_issue

_ids = itertools.count(9000)


def comment_event(body: str, *, user: str = "alice", association: str = "NONE", number: int = 1,
                  opener: str = "alice", user_type: str = "User", comment_id: int | None = None) -> sansio.Event:
    data = {
        "action": "created",
        "issue": {"number": number, "user": {"login": opener, "type": "User"}, "title": "t", "state": "open"},
        "comment": {"id": comment_id or next(_ids), "node_id": "IC_x", "body": body,
                    "user": {"login": user, "type": user_type}, "author_association": association},
        "repository": {"full_name": VERL},
        "installation": {"id": INST},
    }
    return sansio.Event(data, event="issue_comment", delivery_id=f"d-{next(_ids)}")


def comment_read(query: str, variables: dict[str, Any]) -> dict[str, Any] | None:
    """GitHub's answer to the app's read of its comments before it minimises them (`nodes`):
    shown, not minimised; None for any other document."""
    if "nodes(" not in query:
        return None
    return {"data": {"rateLimit": None, "nodes": [
        {"__typename": "IssueComment", "id": node, "isMinimized": False, "minimizedReason": None,
         "up": {"totalCount": 0}, "down": {"totalCount": 0}} for node in variables["ids"]]}}


async def actions(ctx: Any, kind: str | None = None) -> list[Action]:
    async with ctx.sessionmaker() as s:
        q = select(Action).order_by(Action.id)
        if kind:
            q = q.where(Action.kind == kind)
        return list(await s.scalars(q))


def test_parse_command() -> None:
    assert parse_command("/rltracker ignore") == ("ignore", [])
    assert parse_command("Thanks!\n  /rltracker methods entropy collapse") == ("methods", ["entropy", "collapse"])
    assert parse_command("/rltrackerx ignore") is None
    assert parse_command("please run `/rltracker ignore`") is None
    assert resolve_failure("entropy-collapse") == "entropy_collapse"
    assert resolve_failure("KL_GROWTH") == "kl_growth"
    assert resolve_failure("nonsense") is None


def test_every_failure_title_names_its_kind_in_a_command() -> None:
    """`/rltracker methods <failure>` takes a key or a title, in English or Chinese, as the
    failure pages show them (some Chinese titles hold a space or Latin letters: `KL 持续增大`)."""
    from analyzers.catalog import load_catalog

    for key, kind in load_catalog().failures.items():
        for title in (kind.title, kind.title_zh, key.replace("_", "-")):
            if not title:
                continue
            word, args = parse_command(f"/rltracker methods {title}")
            assert word == "methods" and resolve_failure(" ".join(args)) == key, (key, title)


async def test_ignore_by_author_mutes_and_acknowledges(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 1)
    cid = fake_github.add_comment(VERL, 1, "/rltracker ignore", user="alice")["id"]
    event = comment_event("/rltracker ignore", comment_id=cid)
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # redelivery: handled once
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 1))).muted
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    assert [a.status for a in await actions(app_ctx, "command")] == ["posted"]
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:muted"
    assert not fake_github.comments_of(VERL, 1)[1:]


async def test_strangers_are_told_once_and_bots_get_nothing(app_ctx: Any, fake_github: Any) -> None:
    """A stranger's command is not done; since user77 they are told so, in one note
    (tests/test_command_refused.py), instead of nothing. A bot's is ignored."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 2)
    await commands_router.dispatch(comment_event("/rltracker ignore", user="mallory", number=2), app_ctx)
    await commands_router.dispatch(
        comment_event("/rltracker methods kl_growth", user="ci[bot]", user_type="Bot", number=2), app_ctx
    )
    row, note = await actions(app_ctx)
    assert row.status == "skipped" and "author or a maintainer" in row.reason
    assert note.status == "posted" and note.details["note"] == "not_allowed"
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 2))).muted
    [told] = fake_github.comments_of(VERL, 2)
    assert "Only the author of this thread or a maintainer" in told["body"]
    assert not fake_github.requests("POST", r"/reactions")


async def test_methods_reply_once_per_command(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 3)
    fake_github.set_permission(VERL, "maint", "write")  # a member with write access: a maintainer
    event = comment_event("/rltracker methods kl-growth", user="maint", association="MEMBER", number=3)
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)
    replies = [c for c in fake_github.comments_of(VERL, 3) if REPLY_MARKER in c["body"]]
    assert len(replies) == 1
    assert "actor_rollout_ref.actor.use_kl_loss=True" in replies[0]["body"]
    assert "/failures/kl_growth" in replies[0]["body"]


async def test_ignore_also_stops_edits_of_the_comment(app_ctx: Any, fake_github: Any) -> None:
    """After `/rltracker ignore` ("no more comments from the app on this thread") an edit of
    the issue leaves the app's comment as it is: no rewrite, no withdrawal."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 10)
    await act(app_ctx, VERL, 10, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [posted] = [c for c in fake_github.comments_of(VERL, 10) if FAILURE_MARKER in c["body"]]
    await commands_router.dispatch(comment_event("/rltracker ignore", number=10), app_ctx)
    out = await act(app_ctx, VERL, 10, trigger="issues.edited", payload=payload, analysis=NOT_FAILURE)
    assert out["failure_comment"] == "muted"
    assert not fake_github.requests("PATCH")
    [still] = [c for c in fake_github.comments_of(VERL, 10) if FAILURE_MARKER in c["body"]]
    assert still["body"] == posted["body"]


async def test_reply_whose_answer_was_lost_is_not_posted_twice(app_ctx: Any, fake_github: Any) -> None:
    """GitHub creates the reply but answers 502: the worker runs the delivery again, and the
    retry finds the reply by its hidden marker instead of posting a second one."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 11)
    lost: list[int] = []

    @fake_github.route("POST", r"/repos/[^/]+/[^/]+/issues/11/comments")
    def created_then_502(fake: Any, request: Any, match: Any, body: Any) -> Any:
        comment = fake.add_comment(VERL, 11, body["body"], "rltracker[bot]", "Bot")
        if not lost:
            lost.append(comment["id"])
            return 502, {"message": "Server Error"}
        return 201, {k: v for k, v in comment.items() if not k.startswith("_")}

    event = comment_event("/rltracker methods entropy_collapse", number=11)
    with pytest.raises(gidgethub.GitHubException):
        await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # the worker's retry
    replies = [c for c in fake_github.comments_of(VERL, 11) if REPLY_MARKER in c["body"]]
    assert [c["id"] for c in replies] == lost
    [row] = [a for a in await actions(app_ctx, "command") if a.status == "posted"]
    assert row.comment_id == lost[0]


async def test_stop_minimises_the_comment_and_mutes(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 4)
    await act(app_ctx, VERL, 4, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [posted] = [c for c in fake_github.comments_of(VERL, 4) if FAILURE_MARKER in c["body"]]
    seen: list[tuple[str, dict[str, Any]]] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if (read := comment_read(query, variables)) is not None:
            return read
        seen.append((query, variables))
        return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True, "minimizedReason": "outdated"}}}}

    fake_github.graphql_handler = graphql
    await commands_router.dispatch(comment_event("/rltracker stop", number=4), app_ctx)
    assert len(seen) == 1
    assert "minimizeComment" in seen[0][0]
    assert seen[0][1] == {"id": posted["node_id"], "classifier": "OUTDATED"}
    assert fake_github.requests("POST", "/graphql")[0].auth == "installation"
    [row] = [a for a in await actions(app_ctx, "failure_comment")]
    assert row.is_minimized and row.minimized_reason == "OUTDATED"
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 4))).muted


async def test_stop_whose_minimising_failed_is_done_by_the_retry(app_ctx: Any, fake_github: Any) -> None:
    """GitHub answers minimizeComment with 502 past the client's retries: the delivery is
    retried, and the retry minimises the comment. It found the command recorded already
    ("duplicate") and did nothing, so the comment stayed visible for good."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 14)
    await act(app_ctx, VERL, 14, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [posted] = [c for c in fake_github.comments_of(VERL, 14) if FAILURE_MARKER in c["body"]]
    minimised: list[str] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if (read := comment_read(query, variables)) is not None:
            return read
        minimised.append(variables["id"])
        return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True, "minimizedReason": "outdated"}}}}

    fake_github.graphql_handler = graphql
    fake_github.fail_next("POST", r"^/graphql$", 502, times=app_ctx.github.policy.max_attempts)
    event = comment_event("/rltracker stop", number=14)
    with pytest.raises(gidgethub.GitHubException):
        await commands_router.dispatch(event, app_ctx)
    assert minimised == []
    await commands_router.dispatch(event, app_ctx)  # the worker's retry
    assert minimised == [posted["node_id"]]
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized
    assert [a.reason for a in await actions(app_ctx, "command")] == ["/rltracker stop"]


async def test_recheck_reruns_the_pipeline(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 5)
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: true\n")
    await commands_router.dispatch(comment_event("/rltracker recheck", number=5), app_ctx)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == 5))
        assert await s.scalar(select(Analysis).where(Analysis.thread_id == thread.id)) is not None
    # the config was (re)read for the recheck
    assert fake_github.requests("GET", r"/contents/\.github/rltracker\.yml")
    assert [a.reason for a in await actions(app_ctx, "command")] == ["/rltracker recheck"]


async def test_rules_reply(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 6)
    await commands_router.dispatch(comment_event("/rltracker rules", number=6), app_ctx)
    replies = [c for c in fake_github.comments_of(VERL, 6) if REPLY_MARKER in c["body"]]
    assert len(replies) == 1 and "Contributing a method to verl" in replies[0]["body"]


async def test_commands_in_dry_run(ctx: Any, fake_github: Any) -> None:
    await install(ctx, fake_github)
    await open_issue(ctx, fake_github, 7)
    await commands_router.dispatch(comment_event("/rltracker methods entropy_collapse", number=7), ctx)
    [row] = await actions(ctx)
    assert row.status == "dry_run" and REPLY_MARKER in row.body
    assert not fake_github.requests("POST")


async def test_commands_in_a_repository_whose_config_says_dry_run(app_ctx: Any, fake_github: Any) -> None:
    """`dry_run: true` in .github/rltracker.yml: "record what would be posted, post nothing"
    holds for command replies and acknowledgements too, not only for spontaneous comments."""
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "dry_run: true\n")
    await open_issue(app_ctx, fake_github, 9)
    for body in ("/rltracker methods entropy_collapse", "/rltracker rules", "/rltracker ignore"):
        await commands_router.dispatch(comment_event(body, number=9), app_ctx)
    assert [(a.status, a.details.get("command")) for a in await actions(app_ctx, "command")] == [
        ("dry_run", "methods"), ("dry_run", "rules"), ("dry_run", "ignore")]
    assert REPLY_MARKER in (await actions(app_ctx, "command"))[0].body
    assert not fake_github.requests("POST", r"/repos/")  # no comment, no reaction


async def test_methods_reply_in_a_discussion(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    seen: list[dict[str, Any]] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "addDiscussionComment" not in query:
            return {"data": {"node": {"comments": {"nodes": []}}}}
        seen.append(variables)
        return {"data": {"addDiscussionComment": {"comment": {"id": "DC_1", "databaseId": 77}}}}

    fake_github.graphql_handler = graphql
    data = {
        "action": "created",
        "discussion": {"number": 8, "node_id": "D_8", "user": {"login": "alice"}},
        "comment": {"id": 5555, "body": "/rltracker methods entropy_collapse",
                    "user": {"login": "alice", "type": "User"}, "author_association": "NONE"},
        "repository": {"full_name": VERL}, "installation": {"id": INST},
    }
    await commands_router.dispatch(sansio.Event(data, event="discussion_comment", delivery_id="dd"), app_ctx)
    assert seen and seen[0]["id"] == "D_8" and REPLY_MARKER in seen[0]["body"]
    [row] = await actions(app_ctx, "command")
    assert row.status == "posted" and row.comment_node_id == "DC_1"


async def test_discussion_reply_whose_answer_was_lost_is_not_posted_twice(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """addDiscussionComment creates the reply but GitHub answers 502: neither the client's
    retries nor the worker's retry of the delivery post it again; the retry finds it among
    the replies under the command (its thread) by its hidden marker; someone else's reply
    quoting the marker is not ours (GraphQL executed against GitHub's schema)."""
    from tests.fake_graphql import load_github_schema
    from tests.test_command_threads import DiscussionAPI, discussion_comment_payload

    await install(app_ctx, fake_github)
    api = DiscussionAPI(load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql"))
    api.comment("DC_cmd", 5556, "/rltracker methods entropy_collapse")
    api.comment("DC_0", 70, "> <!-- rltracker:reply-to:5556 -->", reply_to="DC_cmd")
    api.lost = {1}  # the first reply: created, but the answer is a 502
    api.route(fake_github)
    # GitHub's own discussion_comment payload, with a command in it, in an installed repository
    event = sansio.Event(discussion_comment_payload(
        shared_dir, comment_id=5556, node_id="DC_cmd", body="/rltracker methods entropy_collapse"),
        event="discussion_comment", delivery_id="dd-lost")
    with pytest.raises(gidgethub.GitHubException):
        await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # the worker's retry
    replies = [n for n in api.ours() if REPLY_MARKER in n["body"]]
    assert len(replies) == 1 and "<!-- rltracker:reply-to:5556 -->" in replies[0]["body"]
    assert replies[0]["replyTo"] is api.comments["DC_cmd"]
    assert len(fake_github.requests("POST", r"/graphql")) == 3  # look, post (502), look: found
    [row] = [a for a in await actions(app_ctx, "command") if a.status == "posted"]
    assert row.comment_node_id == replies[0]["id"] and row.comment_id == replies[0]["databaseId"]


async def test_a_slow_discussion_reply_whose_claim_was_taken_over_does_not_post_a_second_one(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """The discussion's twin of the issue test above: the slow run's look among the
    discussion's latest comments is answered late (no reply yet); meanwhile its claim, pending
    for more than ten minutes, is taken over by the delivery's retry, which replies. The slow
    run must not then reply too (GraphQL checked against GitHub's schema). Time is the
    claim's: its updated_at is moved back past STALE_PENDING while the slow run waits."""
    import asyncio
    import json
    from datetime import timedelta

    import graphql as gql

    from tests.fake_graphql import load_github_schema

    schema = load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    await install(app_ctx, fake_github)
    posted: list[dict[str, Any]] = []
    reached, release = asyncio.Event(), asyncio.Event()
    looks: list[int] = []

    @fake_github.route("POST", r"/graphql")
    async def discussion_api(fake: Any, request: Any, match: Any, body: Any) -> Any:
        assert not gql.validate(schema, gql.parse(body["query"]))
        variables = body.get("variables") or {}
        if "addDiscussionComment" in body["query"]:
            node = {"id": f"DC_{len(posted)}", "databaseId": 80 + len(posted),
                    "viewerDidAuthor": True, "body": variables["body"]}
            posted.append(node)
            return {"data": {"addDiscussionComment": {"comment": {
                "id": node["id"], "databaseId": node["databaseId"]}}}}
        if "addReaction" in body["query"]:
            return {"data": {"addReaction": {"reaction": {"content": "THUMBS_UP"}}}}
        read = json.loads(json.dumps(posted))
        if not looks:  # the slow run's: read, then answered late
            looks.append(1)
            reached.set()
            await release.wait()
        return {"data": {"node": {"comments": {"nodes": read}}}}

    # GitHub's own discussion_comment payload, with a command in it, in an installed repository
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["id"] = 5557
    data["comment"]["body"] = "/rltracker methods entropy_collapse"
    data["discussion"]["node_id"] = "D_10"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    number = int(data["discussion"]["number"])
    event = sansio.Event(data, event="discussion_comment", delivery_id="dd-slow")
    slow = asyncio.create_task(commands_router.dispatch(event, app_ctx))
    await reached.wait()
    async with app_ctx.sessionmaker() as s:  # ten minutes pass for the claim
        [row] = list(await s.scalars(select(Action).where(Action.kind == "command",
                                                          Action.number == number)))
        assert row.status == "pending"
        row.updated_at = row.updated_at - timedelta(minutes=11)
        await s.commit()
    await commands_router.dispatch(event, app_ctx)  # the delivery taken again
    release.set()
    await slow
    replies = [n for n in posted if "<!-- rltracker:reply-to:5557 -->" in n["body"]]
    assert len(replies) == 1
    [row] = [a for a in await actions(app_ctx, "command") if a.number == number]
    assert row.status == "posted" and row.comment_node_id == replies[0]["id"]
    assert row.comment_id == replies[0]["databaseId"]


async def test_a_command_in_a_discussion_is_acknowledged_with_a_reaction(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """Discussion comments have no REST reactions endpoint: the 👍 goes through GraphQL
    `addReaction` on the comment's node (checked against GitHub's schema); no REST call."""
    import json

    import graphql as gql

    from tests.fake_graphql import load_github_schema

    schema = load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    await install(app_ctx, fake_github)
    sent: list[tuple[str, dict[str, Any]]] = []

    @fake_github.route("POST", r"/graphql")
    def discussion_api(fake: Any, request: Any, match: Any, body: Any) -> Any:
        assert not gql.validate(schema, gql.parse(body["query"]))
        sent.append((body["query"], body.get("variables") or {}))
        return {"data": {"addReaction": {"reaction": {"content": "THUMBS_UP"}}}}

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["body"] = "/rltracker ignore"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    node_id = data["comment"]["node_id"]
    await commands_router.dispatch(sansio.Event(data, event="discussion_comment", delivery_id="dd-react"), app_ctx)
    assert [(("addReaction" in q), v) for q, v in sent] == [(True, {"id": node_id})]
    assert not fake_github.requests("POST", r"/reactions")
    [row] = await actions(app_ctx, "command")
    assert row.details["command"] == "ignore"


async def test_a_long_thread_is_read_a_hundred_comments_a_page(app_ctx: Any, fake_github: Any) -> None:
    """Looking for its own reply, the app read the thread's comments at GitHub's default 30
    a page: 250 comments cost 9 requests (a 3,000-comment thread 100), each time."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 12)
    for n in range(250):
        fake_github.add_comment(VERL, 12, f"comment {n}")
    await commands_router.dispatch(comment_event("/rltracker methods kl_growth", number=12), app_ctx)
    pages = fake_github.requests("GET", r"/issues/12/comments$")
    assert len(pages) == 3 and all(c.query.get("per_page") == "100" for c in pages)
    assert len([c for c in fake_github.comments_of(VERL, 12) if REPLY_MARKER in c["body"]]) == 1


async def test_an_edit_that_adds_a_command_is_answered_once(app_ctx: Any, fake_github: Any,
                                                            shared_dir: Any) -> None:
    """GitHub's issue_comment `edited` payload through POST /webhook and the worker. An edit
    that adds a command (or makes a misspelt one right) was never answered: only `created`
    comments were read. Now it is answered like a new comment; an edit that leaves the command
    as it was is not a request, and a comment is still answered once at most."""
    import json

    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.webhooks.replay import delivery_headers
    from bot.webhooks.worker import Worker

    repo = "Codertocat/Hello-World"
    await install(app_ctx, fake_github, repo=repo, framework="verl")
    edited = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "edited.json")
                        .read_text())
    number, cid = edited["issue"]["number"], edited["comment"]["id"]
    fake_github.add_issue(repo, number, edited["issue"]["title"], "", "Codertocat")
    edited["installation"] = {"id": INST}
    worker = Worker(app_ctx, backoff=lambda attempt: 0.0)

    def replies() -> list[dict[str, Any]]:
        return [c for c in fake_github.comments_of(repo, number)
                if REPLY_MARKER in c["body"] and "rltracker:note-to:" not in c["body"]]

    async def edit(client: TestClient, before: str, after: str, delivery: str) -> None:
        edited["changes"] = {"body": {"from": before}}
        edited["comment"]["body"] = after
        body = json.dumps(edited).encode()
        headers = delivery_headers("issue_comment", body, app_ctx.settings.webhook_secret, delivery)
        assert (await client.post("/webhook", data=body, headers=headers)).status == 202
        assert await worker.run_until_idle() == 1

    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        # a typo in the command: an unknown command, recorded, answered by the one note
        await edit(client, "Entropy fell to 0.", "Entropy fell to 0.\n/rltracker metods kl_growth", "e1")
        assert replies() == [] and len(note_replies(fake_github, number, repo)) == 1
        # made right: answered
        await edit(client, "Entropy fell to 0.\n/rltracker metods kl_growth",
                   "Entropy fell to 0.\n/rltracker methods kl_growth", "e2")
        [reply] = replies()
        assert f"<!-- rltracker:reply-to:{cid} -->" in reply["body"]
        assert "/failures/kl_growth" in reply["body"]
        # an edit elsewhere in the comment: the command is as it was, no request
        await edit(client, "Entropy fell to 0.\n/rltracker methods kl_growth",
                   "Entropy fell to 0.01.\n/rltracker methods kl_growth", "e3")
        # the command changed after it was answered: not answered twice, the reason recorded
        await edit(client, "Entropy fell to 0.01.\n/rltracker methods kl_growth",
                   "Entropy fell to 0.01.\n/rltracker methods entropy_collapse", "e4")
        assert replies() == [reply]
    assert worker.counts["done"] == 4 and worker.counts["failed"] == 0
    rows = await actions(app_ctx, "command")
    assert [(a.status, (a.details or {}).get("code") or (a.details or {}).get("note")) for a in rows] == [
        ("skipped", f"unknown:{cid}"), ("posted", "unknown"), ("posted", None),
        ("skipped", f"edited_after_answer:{cid}")]
    assert "write a new comment" in rows[-1].reason


async def test_an_edit_that_keeps_a_command_written_before_the_install_is_not_a_request(
        app_ctx: Any, fake_github: Any) -> None:
    """A comment written with a command before the app was installed, edited afterwards to
    fix a typo elsewhere: the edit asks nothing, so nothing is posted or recorded."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 14)
    event = comment_event("/rltracker methods kl_growth\nthanks!", number=14)
    event.data.update(action="edited",
                      changes={"body": {"from": "/rltracker methods kl_growth\nthanks"}})
    await commands_router.dispatch(event, app_ctx)
    assert replies_of(fake_github, 14) == [] and await actions(app_ctx) == []
    # the same edit adding the command is a request
    event.data["changes"] = {"body": {"from": "thanks"}}
    await commands_router.dispatch(event, app_ctx)
    assert len(replies_of(fake_github, 14)) == 1


def replies_of(fake: Any, number: int) -> list[dict[str, Any]]:
    return [c for c in fake.comments_of(VERL, number) if REPLY_MARKER in c["body"]]


async def test_rules_reply_references_no_issue(app_ctx: Any, fake_github: Any) -> None:
    """The reply to `/rltracker rules` lists every rule, the catalog's observations of the
    repository too, and trl's says "a stale bot was added in 2023 (#447) and removed in 2024
    (#2300)": posted as is, GitHub linked #447 and #2300 and wrote "mentioned this" into both
    each time someone asked. References are code spans, as in every other comment the app
    writes."""
    from markdown_it import MarkdownIt

    from tests.test_actions_e2e import TRL

    await install(app_ctx, fake_github, repo=TRL, framework="trl")
    fake_github.set_file(TRL, "CONTRIBUTING.md", "# Contributing\n\nMake sure all tests pass "
                         "before opening a pull request.\n")
    await open_issue(app_ctx, fake_github, 8, repo=TRL)
    event = comment_event("/rltracker rules", number=8)
    event.data["repository"]["full_name"] = TRL
    await commands_router.dispatch(event, app_ctx)
    [reply] = [c["body"] for c in fake_github.comments_of(TRL, 8) if REPLY_MARKER in c["body"]]
    assert "`#447`" in reply and "`#2300`" in reply
    texts = [t.content for block in MarkdownIt().parse(reply) if block.children
             for t in block.children if t.type == "text"]
    assert not [t for t in texts if re.search(r"(?<![\w`])#\d", t)], texts


async def test_stop_in_dry_run_says_it_would_minimise_and_hides_nothing(
        app_ctx: Any, fake_github: Any) -> None:
    """The app posted its failure comment, then the deployment was put in dry run
    (RLTRACKER_DRY_RUN) and the author said `/rltracker stop`. Nothing was minimised on GitHub,
    yet the action was marked minimised (is_minimized, OUTDATED): the pages counted the comment
    as hidden, and once dry run was over a later stop skipped it as minimised already (until
    the nightly reception check read the truth back from GitHub). In dry run the record says what would have been done
    (`would_minimize`), and the comment is hidden by the first stop outside dry run."""
    import dataclasses

    from bot.site.data import reception

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 16)
    await act(app_ctx, VERL, 16, trigger="issues.opened", payload=payload, analysis=FAILURE)
    [posted] = [c for c in fake_github.comments_of(VERL, 16) if FAILURE_MARKER in c["body"]]
    minimised: list[str] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if (read := comment_read(query, variables)) is not None:
            return read
        minimised.append(variables["id"])
        return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True, "minimizedReason": "outdated"}}}}

    fake_github.graphql_handler = graphql
    live = app_ctx.settings
    app_ctx.settings = dataclasses.replace(live, dry_run=True)
    await commands_router.dispatch(comment_event("/rltracker stop", number=16), app_ctx)
    assert minimised == []
    [row] = await actions(app_ctx, "failure_comment")
    assert not row.is_minimized and row.minimized_reason is None
    assert row.details.get("would_minimize") == "stop"
    async with app_ctx.sessionmaker() as s:
        [shown] = await reception(s, [VERL])
    assert shown["hidden_or_deleted"] == 0
    app_ctx.settings = live
    await commands_router.dispatch(comment_event("/rltracker stop", number=16), app_ctx)
    assert minimised == [posted["node_id"]]
    [row] = await actions(app_ctx, "failure_comment")
    assert row.is_minimized and row.details.get("minimized_by") == "stop"
    assert "would_minimize" not in row.details


async def test_a_slow_reply_whose_claim_was_taken_over_does_not_post_a_second_one(
        app_ctx: Any, fake_github: Any) -> None:
    """A reply's claim pending for more than ten minutes is taken over as a crashed worker's.
    The worker was alive but slow: GitHub had read it the issue's comments (no reply yet) and
    took its time answering. The delivery's retry took the claim over, found no reply, posted;
    the slow run then posted with what it had read: two replies to one command. It now checks
    right before posting that the claim is still its own, as the failure comment does. Time
    is the claim's: its updated_at is moved back past STALE_PENDING while the slow run waits."""
    import asyncio
    from datetime import timedelta

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 12)
    reached, release = asyncio.Event(), asyncio.Event()
    waited: list[int] = []

    @fake_github.route("GET", rf"/repos/{VERL}/issues/12/comments")
    async def comments(fake: Any, request: Any, match: Any, body: Any) -> Any:
        read = [{k: v for k, v in c.items() if not k.startswith("_")}
                for c in fake.comments_of(VERL, 12)]
        if not waited:  # the slow run's: read, then answered late
            waited.append(1)
            reached.set()
            await release.wait()
        return read

    event = comment_event("/rltracker methods entropy_collapse", number=12)
    slow = asyncio.create_task(commands_router.dispatch(event, app_ctx))
    await reached.wait()
    async with app_ctx.sessionmaker() as s:  # ten minutes pass for the claim
        [row] = list(await s.scalars(select(Action).where(Action.kind == "command",
                                                          Action.number == 12)))
        assert row.status == "pending"
        row.updated_at = row.updated_at - timedelta(minutes=11)
        await s.commit()
    await commands_router.dispatch(event, app_ctx)  # the delivery taken again
    release.set()
    await slow
    replies = [c for c in fake_github.comments_of(VERL, 12) if REPLY_MARKER in c["body"]]
    assert len(replies) == 1
    [row] = [a for a in await actions(app_ctx, "command") if a.number == 12]
    assert row.status == "posted" and row.comment_id == replies[0]["id"]


# ----------------------------------------------------------------- review30: commands, fresh eyes

def note_replies(fake: Any, number: int, repo: str = VERL) -> list[dict[str, Any]]:
    return [c for c in fake.comments_of(repo, number) if "<!-- rltracker:note-to:" in c["body"]]


async def test_a_command_shown_as_code_or_quoted_does_not_act(app_ctx: Any, fake_github: Any) -> None:
    """A maintainer tells the reporter how to silence the app, in a code block; the reporter
    quotes it, and answers by e-mail from Outlook (whose original is pasted below, not quoted
    with `>`). None of them asks the app for anything: the thread stays unmuted, the app's
    comment visible, nothing recorded or reacted to."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 30)
    await act(app_ctx, VERL, 30, trigger="issues.opened", payload=payload, analysis=FAILURE)
    fake_github.set_permission(VERL, "maint", "write")
    for body, user, association in [
        ("If it is noise, write this in a comment:\n```\n/rltracker stop\n```", "maint", "MEMBER"),
        ("<!-- maintainers: /rltracker stop\n/rltracker stop\n-->\nLooking into it.", "maint", "MEMBER"),
        ("> If it is noise, write this\n> /rltracker stop\n\nIt is not noise, thanks!", "alice", "NONE"),
        ("It helped, thanks.\n\nFrom: maint <notifications@github.com>\nSent: Monday\n\n"
         "/rltracker stop\n\n—\nReply to this email directly", "alice", "NONE"),
    ]:
        await commands_router.dispatch(comment_event(body, user=user, association=association,
                                                     number=30), app_ctx)
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 30))).muted
    assert await actions(app_ctx, "command") == []
    assert not fake_github.requests("POST", r"/reactions") and not fake_github.requests("POST", "/graphql")


@pytest.mark.parametrize("body", ["/rltracker stpo", "/rltracker", "/rltracker @everyone",
                                  "/rltracker [x](https://evil.example) <img src=x>"])
async def test_an_unknown_command_gets_one_clear_reply_without_its_text(
        app_ctx: Any, fake_github: Any, body: str) -> None:
    """A typo (`/rltracker stpo`) was recorded as a skip nobody sees: the person who asked got
    no answer at all and could not tell a typo from an app that is down. They get one reply
    listing the commands, which never repeats what they typed (no mention to ping, no link or
    HTML to inject); a redelivery, or an edit to another typo, posts no second one; an edit
    that makes the command right is still answered."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 31)
    event = comment_event(body, number=31)
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)  # redelivered
    [note] = note_replies(fake_github, 31)
    assert REPLY_MARKER in note["body"]
    for command in ("recheck", "ignore", "stop", "methods", "rules", "kind", "not-a-failure", "resume"):
        assert f"`{command}" in note["body"]
    typed = body.split(maxsplit=1)[1:]
    assert not typed or typed[0] not in note["body"]
    assert "@" not in note["body"] and "evil" not in note["body"] and "<img" not in note["body"]
    cid = event.data["comment"]["id"]
    edited = comment_event("/rltracker stpp", number=31, comment_id=cid)
    edited.data.update(action="edited", changes={"body": {"from": body}})
    await commands_router.dispatch(edited, app_ctx)
    assert len(note_replies(fake_github, 31)) == 1
    right = comment_event("/rltracker methods kl_growth", number=31, comment_id=cid)
    right.data.update(action="edited", changes={"body": {"from": "/rltracker stpp"}})
    await commands_router.dispatch(right, app_ctx)
    assert len(replies_of(fake_github, 31)) == 2 and len(note_replies(fake_github, 31)) == 1


async def test_an_unknown_kind_gets_one_reply_listing_the_kinds(app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker kind gradient-gremlins` stored nothing and answered nothing: the author
    believed the kind corrected. One reply names the kinds (catalog keys) and not what was
    typed; no verdict, no reaction."""
    from analyzers.catalog import load_catalog

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 32)
    await commands_router.dispatch(comment_event("/rltracker kind @gradient-gremlins", number=32), app_ctx)
    [note] = note_replies(fake_github, 32)
    assert "`kl_growth`" in note["body"] and "`none`" in note["body"]
    assert len([k for k in load_catalog().failures if f"`{k}`" in note["body"]]) == len(load_catalog().failures)
    assert "gremlins" not in note["body"]
    assert not fake_github.requests("POST", r"/reactions")


async def test_several_commands_in_one_comment_say_which_was_done(app_ctx: Any, fake_github: Any) -> None:
    """A comment holding two commands did the first and dropped the second without a word.
    The first is done (and acknowledged), and one reply says the others were not."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 33)
    event = comment_event("/rltracker ignore\n/rltracker methods kl_growth", number=33)
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 33))).muted
    [note] = note_replies(fake_github, 33)
    assert "`/rltracker ignore`" in note["body"] and "new comment" in note["body"]
    assert replies_of(fake_github, 33) == [note]  # no methods reply
    cid = event.data["comment"]["id"]
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    # one command alone: no note
    await commands_router.dispatch(comment_event("/rltracker methods kl_growth", number=33), app_ctx)
    assert len(note_replies(fake_github, 33)) == 1


async def test_a_command_deleted_before_it_was_handled_does_not_act(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's own issue_comment payloads through every handler: `/rltracker stop` written,
    then deleted by its author (a mistake) while its delivery waited (a backlog, or a retry
    after a GitHub error). The deletion is handled first; the command then muted the thread
    and minimised the app's comment all the same, though nobody's words ask for it any more."""
    import json

    from bot.webhooks.routers import router

    repo = "Codertocat/Hello-World"
    await install(app_ctx, fake_github, repo=repo, framework="verl")
    hooks = shared_dir / "fixtures" / "webhooks" / "issue_comment"
    created = json.loads((hooks / "created.json").read_text())
    deleted = json.loads((hooks / "deleted.json").read_text())
    number = created["issue"]["number"]
    fake_github.add_issue(repo, number, created["issue"]["title"], "", "Codertocat")
    for payload in (created, deleted):
        payload["installation"] = {"id": INST}
        payload["comment"]["id"] = deleted["comment"]["id"]
        payload["comment"]["body"] = "/rltracker stop"
    await router.dispatch(sansio.Event(deleted, event="issue_comment", delivery_id="del"), app_ctx)
    await router.dispatch(sansio.Event(created, event="issue_comment", delivery_id="cre"), app_ctx)
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.number == number))
        assert thread is None or not thread.muted
    assert await actions(app_ctx, "command") == []
    assert not fake_github.requests("POST", r"/reactions")


async def test_a_member_without_write_access_does_not_silence_someone_elses_thread(
        app_ctx: Any, fake_github: Any) -> None:
    """author_association MEMBER says only that the commenter belongs to the organisation
    (whose base permission may be read or none), COLLABORATOR that they were invited with some
    role (maybe read or triage). `stop` minimised the app's comment on someone else's report
    and muted it for any such commenter, a thing GitHub itself lets only people with write
    access do to others' comments. GitHub is asked, as for verdicts and `resume`."""
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 34)
    await act(app_ctx, VERL, 34, trigger="issues.opened", payload=payload, analysis=FAILURE)
    minimised: list[str] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if (read := comment_read(query, variables)) is not None:
            return read
        minimised.append(variables["id"])
        return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True, "minimizedReason": "outdated"}}}}

    fake_github.graphql_handler = graphql
    fake_github.set_permission(VERL, "dana", "read")
    fake_github.set_permission(VERL, "rita", "triage")
    for login, association, command in [("dana", "MEMBER", "stop"), ("erin", "MEMBER", "ignore"),
                                        ("rita", "COLLABORATOR", "recheck")]:
        assert await handle_command(comment_event(f"/rltracker {command}", user=login,
                                                  association=association, number=34),
                                    app_ctx) == "not_allowed"
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 34))).muted
    assert minimised == []
    skips = [a for a in await actions(app_ctx, "command") if a.status == "skipped"]
    assert [a.details["code"].split(":")[0] for a in skips] == ["not_maintainer"] * 3
    # each told once that it is not theirs to do (user77)
    assert [n["body"].count("Only the author of this thread or a maintainer")
            for n in note_replies(fake_github, 34)] == [1, 1, 1]
    fake_github.set_permission(VERL, "walt", "write")
    assert await handle_command(comment_event("/rltracker stop", user="walt", association="COLLABORATOR",
                                              number=34), app_ctx) == "stop"
    assert len(minimised) == 1


async def test_a_commenter_without_a_login_is_not_the_threads_author(app_ctx: Any, fake_github: Any) -> None:
    """A payload naming no user for the comment nor for the thread (a ghost, a partial
    payload): None == None made the commenter the thread's author."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 35)
    event = comment_event("/rltracker ignore", number=35)
    event.data["comment"]["user"] = None
    event.data["issue"]["user"] = None
    assert await handle_command(event, app_ctx) == "not_allowed"
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 35))).muted


async def test_commands_in_pull_request_review_comments_and_reviews(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's own pull_request_review_comment and pull_request_review payloads. A maintainer
    wrote `/rltracker rules` on a line of the diff and `/rltracker stop` in a review's summary:
    nothing happened (only issue and discussion comments were read), though the analysis
    already left those lines out as commands and the quiet rules did not count them as
    replies. The reply goes to the pull request's conversation, the 👍 to the review comment
    (REST) or to the review (GraphQL addReaction, checked against GitHub's schema), each once."""
    import json

    import graphql as gql

    from tests.fake_graphql import load_github_schema

    schema = load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    hooks = shared_dir / "fixtures" / "webhooks"
    await install(app_ctx, fake_github)
    on_line = json.loads((hooks / "pull_request_review_comment" / "created.json").read_text())
    review = json.loads((hooks / "pull_request_review" / "submitted.json").read_text())
    number = on_line["pull_request"]["number"]
    author = on_line["pull_request"]["user"]["login"]
    await open_issue(app_ctx, fake_github, number, user=author, kind="pull_request", title="Add GSPO")
    reacted: list[str] = []

    @fake_github.route("POST", rf"/repos/{VERL}/pulls/comments/(?P<id>\d+)/reactions")
    def review_comment_reaction(fake: Any, request: Any, match: Any, body: Any) -> Any:
        reacted.append(f"rest:{match['id']}:{body['content']}")
        return 201, {"content": body["content"]}

    @fake_github.route("POST", r"/graphql")
    def graphql_api(fake: Any, request: Any, match: Any, body: Any) -> Any:
        assert not gql.validate(schema, gql.parse(body["query"]))
        if "addReaction" in body["query"]:
            reacted.append(f"graphql:{body['variables']['id']}")
            return {"data": {"addReaction": {"reaction": {"content": "THUMBS_UP"}}}}
        if (read := comment_read(body["query"], body["variables"])) is not None:
            return read
        return {"data": {"minimizeComment": {"minimizedComment": {"isMinimized": True,
                                                                  "minimizedReason": "outdated"}}}}

    for payload in (on_line, review):
        payload["repository"]["full_name"] = VERL
        payload["installation"] = {"id": INST}
    on_line["comment"]["body"] = "/rltracker rules"
    review["review"]["body"] = "Looks fine.\n/rltracker stop"
    review["pull_request"]["number"] = number
    for _ in range(2):  # each delivered twice: answered once
        await commands_router.dispatch(sansio.Event(on_line, event="pull_request_review_comment",
                                                    delivery_id="rc"), app_ctx)
        await commands_router.dispatch(sansio.Event(review, event="pull_request_review",
                                                    delivery_id="rv"), app_ctx)
    [reply] = replies_of(fake_github, number)
    assert "Contributing a method to verl" in reply["body"]
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == number))).muted
    assert reacted == [f"graphql:{review['review']['node_id']}"]  # `rules` is answered by its reply
    assert sorted(a.details.get("command") for a in await actions(app_ctx, "command")) == ["rules", "stop"]

    # a review comment's `ignore`: its 👍 through REST
    on_line["comment"]["id"] += 1
    on_line["comment"]["body"] = "/rltracker ignore"
    await commands_router.dispatch(sansio.Event(on_line, event="pull_request_review_comment",
                                                delivery_id="rc2"), app_ctx)
    assert reacted[-1] == f"rest:{on_line['comment']['id']}:+1"


async def test_an_edit_that_changes_a_done_command_is_told_so_once(app_ctx: Any, fake_github: Any) -> None:
    """The author's `/rltracker methods kl_growth` was answered; they edit it to
    `entropy_collapse` and wait for the reply to change. It never does (a comment is answered
    once), and nothing said so: only a skip nobody sees. One note says the command was done
    and a new comment asks again; a second edit adds nothing. An edit that only adds words
    after a command that takes none (`/rltracker ignore` -> `/rltracker ignore, thanks`)
    asks nothing new and gets nothing."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 36)
    event = comment_event("/rltracker methods kl_growth", number=36)
    cid = event.data["comment"]["id"]
    await commands_router.dispatch(event, app_ctx)
    assert len(replies_of(fake_github, 36)) == 1
    for before, after in [("/rltracker methods kl_growth", "/rltracker methods entropy_collapse"),
                          ("/rltracker methods entropy_collapse", "/rltracker methods length_bias")]:
        edited = comment_event(after, number=36, comment_id=cid)
        edited.data.update(action="edited", changes={"body": {"from": before}})
        assert await handle_command(edited, app_ctx) == "already_answered"
    [note] = note_replies(fake_github, 36)
    assert "new comment" in note["body"] and "entropy" not in note["body"]
    assert len(replies_of(fake_github, 36)) == 2  # the answer and the note

    ignore = comment_event("/rltracker ignore", number=36)
    await commands_router.dispatch(ignore, app_ctx)
    edited = comment_event("/rltracker ignore, thanks", number=36, comment_id=ignore.data["comment"]["id"])
    edited.data.update(action="edited", changes={"body": {"from": "/rltracker ignore"}})
    assert await handle_command(edited, app_ctx) == "unchanged_command"
    assert len(note_replies(fake_github, 36)) == 1


async def test_a_permission_lookup_github_refuses_does_nothing_until_the_retry(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub rate-limits (or fails) the collaborator permission lookup of a member's `stop` on
    someone else's thread: nothing is done on a guess (no mute, no record, no 👍) and the
    delivery fails, to be retried; the retry, answered, does it once."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 37)
    fake_github.set_permission(VERL, "maint", "write")
    fake_github.rate_limited("GET", r"/collaborators/maint/permission", reset_in=0,
                             times=app_ctx.github.policy.max_attempts)
    event = comment_event("/rltracker ignore", user="maint", association="MEMBER", number=37)
    with pytest.raises(gidgethub.GitHubException):
        await commands_router.dispatch(event, app_ctx)
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 37))).muted
    assert await actions(app_ctx, "command") == []
    assert not fake_github.requests("POST", r"/reactions")
    await commands_router.dispatch(event, app_ctx)  # the worker's retry
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 37))).muted
    assert [a.reason for a in await actions(app_ctx, "command")] == ["/rltracker ignore"]


def discussion_comments_api(fake_github: Any, shared_dir: Any, *, first_id: int,
                            on_create: Any = None) -> list[dict[str, Any]]:
    """GitHub's GraphQL for a discussion's comments on the fake: every query checked against
    GitHub's schema, addDiscussionComment creates a comment the app authored (ids from
    `first_id`; `on_create()` called once it is created), any other query reads them. Returns
    the list the created comments go into."""
    import json

    import graphql as gql

    from tests.fake_graphql import load_github_schema

    schema = load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    posted: list[dict[str, Any]] = []

    @fake_github.route("POST", r"/graphql")
    def discussion_api(fake: Any, request: Any, match: Any, body: Any) -> Any:
        assert not gql.validate(schema, gql.parse(body["query"]))
        variables = body.get("variables") or {}
        if "addDiscussionComment" in body["query"]:
            node = {"id": f"DC_{len(posted)}", "databaseId": first_id + len(posted),
                    "viewerDidAuthor": True, "body": variables["body"]}
            posted.append(node)
            if on_create is not None:
                on_create()
            return {"data": {"addDiscussionComment": {"comment": {
                "id": node["id"], "databaseId": node["databaseId"]}}}}
        return {"data": {"node": {"comments": {"nodes": json.loads(json.dumps(posted))}}}}

    return posted


async def test_an_unknown_command_in_a_discussion_gets_its_note_there(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's own discussion_comment payload with a typo: the note goes through GraphQL
    addDiscussionComment (checked against GitHub's schema), once across a redelivery."""
    import json


    await install(app_ctx, fake_github)
    posted = discussion_comments_api(fake_github, shared_dir, first_id=90)

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["body"] = "/rltracker metods @team"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    event = sansio.Event(data, event="discussion_comment", delivery_id="dd-note")
    await commands_router.dispatch(event, app_ctx)
    await commands_router.dispatch(event, app_ctx)
    [note] = posted
    assert f"<!-- rltracker:note-to:{data['comment']['id']} -->" in note["body"]
    assert "`recheck`" in note["body"] and "@team" not in note["body"] and "metods" not in note["body"]


async def test_an_edit_by_someone_else_is_the_editors_command(app_ctx: Any, fake_github: Any) -> None:
    """GitHub lets people with write access, and apps, edit others' comments; the edited
    payload's `comment.user` stays the comment's author and `sender` is the editor. A bot that
    edited the reporter's comment (a formatter, a translation) adding a command line had it
    done as the reporter's own; a maintainer who added `/rltracker kind` to the reporter's
    comment had the verdict stored as the author's. Now the command is the editor's: a bot's
    is ignored, a person's judged (and recorded) as theirs."""
    from bot.store.models import Verdict

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 38)
    event = comment_event("KL keeps growing.\n/rltracker ignore", number=38)
    event.data.update(action="edited", changes={"body": {"from": "KL keeps growing."}},
                      sender={"login": "formatter[bot]", "type": "Bot"})
    assert await handle_command(event, app_ctx) == "ignored_bot"
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 38))).muted

    fake_github.set_permission(VERL, "maint", "write")
    event = comment_event("KL keeps growing.\n/rltracker kind kl_growth", number=38)
    event.data.update(action="edited", changes={"body": {"from": "KL keeps growing."}},
                      sender={"login": "maint", "type": "User"})
    await commands_router.dispatch(event, app_ctx)
    async with app_ctx.sessionmaker() as s:
        [verdict] = list(await s.scalars(select(Verdict)))
    assert (verdict.login, verdict.role, verdict.category) == ("maint", "maintainer", "kl_growth")


async def test_a_reaction_refused_for_now_is_made_by_the_retry_without_redoing_the_command(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub answers the 👍 with 502 past the client's retries: the acknowledgement was
    logged and lost. Now the delivery fails, and its retry, finding the command done, only
    reacts (the command recorded once)."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 31)
    cid = fake_github.add_comment(VERL, 31, "/rltracker ignore", user="alice")["id"]
    event = comment_event("/rltracker ignore", number=31, comment_id=cid)
    fake_github.fail_next("POST", rf"/issues/comments/{cid}/reactions", 502,
                          times=app_ctx.github.policy.max_attempts)
    with pytest.raises(gidgethub.GitHubException):
        await commands_router.dispatch(event, app_ctx)
    assert not [c for c in fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")
                if c.status < 300]
    await commands_router.dispatch(event, app_ctx)  # the worker's retry
    await commands_router.dispatch(event, app_ctx)  # a redelivery after it: nothing more
    assert len([c for c in fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")
                if c.status < 300]) == 1
    [row] = await actions(app_ctx, "command")
    assert row.reason == "/rltracker ignore" and row.details.get("reacted") is True
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 31))).muted


async def test_a_reaction_refused_for_good_leaves_the_command_done(app_ctx: Any, fake_github: Any) -> None:
    """The comment was deleted before the 👍 (404): logged, the delivery succeeds."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 32)
    cid = fake_github.add_comment(VERL, 32, "/rltracker ignore", user="alice")["id"]
    fake_github.fail_next("POST", rf"/issues/comments/{cid}/reactions", 404)
    assert await handle_command(comment_event("/rltracker ignore", number=32, comment_id=cid),
                                app_ctx) == "ignore"
    [row] = await actions(app_ctx, "command")
    assert row.status == "posted" and row.details.get("react_refused") is True


async def test_a_dry_run_command_records_that_it_would_react(app_ctx: Any, fake_github: Any) -> None:
    await install(app_ctx, fake_github)
    fake_github.set_file(VERL, ".github/rltracker.yml", "dry_run: true\n")
    await open_issue(app_ctx, fake_github, 33)
    await commands_router.dispatch(comment_event("/rltracker ignore", number=33), app_ctx)
    [row] = await actions(app_ctx, "command")
    assert row.status == "dry_run" and row.details.get("would_react") is True
    assert not fake_github.requests("POST", r"/reactions")


async def test_a_reaction_on_a_deleted_discussion_comment_is_refused_for_good(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GraphQL answers `addReaction` on a comment deleted meanwhile with 200 and a NOT_FOUND
    error: the same answer however often it is asked, so logged and the command done (not a
    delivery retried until it is given up)."""
    import json

    await install(app_ctx, fake_github)

    @fake_github.route("POST", r"/graphql")
    def gone(fake: Any, request: Any, match: Any, body: Any) -> Any:
        return {"data": {"addReaction": None}, "errors": [
            {"type": "NOT_FOUND", "path": ["addReaction"], "message": "Could not resolve to a node"}]}

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["body"] = "/rltracker ignore"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    assert await handle_command(sansio.Event(data, event="discussion_comment", delivery_id="dd-gone"),
                                app_ctx) == "ignore"
    [row] = await actions(app_ctx, "command")
    assert row.details.get("react_refused") is True


async def test_a_reaction_github_failed_to_add_is_added_by_the_retry(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GraphQL answers `addReaction` with GitHub's own failure (200, an error of no type: "Something
    went wrong ... timeout"), which a later attempt does not meet. It was taken for a refusal
    for good as NOT_FOUND is: the command recorded `react_refused`, no 👍 ever. Now it raises,
    the delivery is retried, and the retry reacts (once)."""
    import json

    await install(app_ctx, fake_github)
    asked: list[str] = []

    @fake_github.route("POST", r"/graphql")
    def flaky(fake: Any, request: Any, match: Any, body: Any) -> Any:
        asked.append(body["query"])
        if len(asked) == 1:
            return {"data": None, "errors": [{"message": (
                "Something went wrong while executing your query. This may be the result of a "
                "timeout, or it could be a GitHub bug.")}]}
        return {"data": {"addReaction": {"reaction": {"content": "THUMBS_UP"}}}}

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json").read_text())
    data["comment"]["body"] = "/rltracker ignore"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    event = sansio.Event(data, event="discussion_comment", delivery_id="dd-flaky")
    try:
        await handle_command(event, app_ctx)
    except gidgethub.GitHubException:
        pass
    await handle_command(event, app_ctx)  # the worker's retry
    await handle_command(event, app_ctx)  # a redelivery: nothing more
    assert len(asked) == 2 and all("addReaction" in q for q in asked)
    [row] = await actions(app_ctx, "command")
    assert row.details.get("reacted") is True and not row.details.get("react_refused")


async def test_command_replies_on_a_thread_are_capped_per_hour(app_ctx: Any, fake_github: Any) -> None:
    """Anyone may open an issue and so use the commands on it: its author posting twelve
    `/rltracker rules` and unknown commands got twelve replies from the app (each comment is
    answered once, but comments are free). At most five replies and notes a thread in an
    hour; past them the command is recorded as skipped (`reply_rate`) and nothing is posted,
    while a command acknowledged with a 👍 is still done. A redelivery of an answered command
    still finds its reply (no second one), and an hour later the thread is answered again."""
    from datetime import timedelta

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 40)
    first = comment_event("/rltracker rules", number=40)
    await commands_router.dispatch(first, app_ctx)
    for body in ["/rltracker rules"] * 7 + ["/rltracker stpo"] * 4:
        await commands_router.dispatch(comment_event(body, number=40), app_ctx)
    assert len(replies_of(fake_github, 40)) == 5
    skipped = [a for a in await actions(app_ctx, "command") if a.status == "skipped"
               and (a.details or {}).get("code", "").startswith("reply_rate:")]
    assert len(skipped) == 7
    await commands_router.dispatch(first, app_ctx)  # redelivered: still answered once
    assert len(replies_of(fake_github, 40)) == 5
    ignore = comment_event("/rltracker ignore", number=40)
    await commands_router.dispatch(ignore, app_ctx)  # a 👍, no reply: not held back
    cid = ignore.data["comment"]["id"]
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    async with app_ctx.sessionmaker() as s:  # an hour on
        for row in await s.scalars(select(Action)):
            row.created_at = row.created_at - timedelta(hours=1, minutes=1)
        await s.commit()
    await commands_router.dispatch(comment_event("/rltracker rules", number=40), app_ctx)
    assert len(replies_of(fake_github, 40)) == 6
    # another thread has its own five
    await open_issue(app_ctx, fake_github, 41)
    await commands_router.dispatch(comment_event("/rltracker rules", number=41), app_ctx)
    assert len(replies_of(fake_github, 41)) == 1


async def test_methods_with_an_unknown_kind_can_be_corrected_by_an_edit(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker methods entropy-colapse` was answered "Unknown failure kind" as a reply to
    the command, so the comment counted as answered: the author's edit fixing the typo got a
    note saying the command "was done already" (nothing was) instead of the methods. A kind
    the catalog lacks (or none) is now a command that cannot be done as written, as for
    `/rltracker kind`: one note listing the kinds, never the typed text, and an edit that
    makes it right is answered."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 42)
    event = comment_event("/rltracker methods entropy-colapse @bob", number=42)
    assert await handle_command(event, app_ctx) == "unknown_kind"
    [note] = note_replies(fake_github, 42)
    assert "`entropy_collapse`" in note["body"] and "`/rltracker methods`" in note["body"]
    assert "colapse" not in note["body"] and "@" not in note["body"]
    assert "Edit your comment" in note["body"]
    cid = event.data["comment"]["id"]
    right = comment_event("/rltracker methods entropy-collapse", number=42, comment_id=cid)
    right.data.update(action="edited", changes={"body": {"from": event.data["comment"]["body"]}})
    assert await handle_command(right, app_ctx) == "posted"
    replies = replies_of(fake_github, 42)
    assert len(replies) == 2 and "/failures/entropy_collapse" in replies[1]["body"]
    assert "done already" not in "".join(c["body"] for c in replies)
    # without a kind, on a thread of none (not analysed): a note of its own (user72:
    # tests/test_methods_own_kind.py), nothing more posted
    bare = comment_event("/rltracker methods", number=42)
    assert await handle_command(bare, app_ctx) == "no_kind"
    assert len(note_replies(fake_github, 42)) == 2


async def test_help_lists_the_commands_without_calling_them_unknown(app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker help` (or a bare `/rltracker`) was answered "`/rltracker` has no such
    command": the person asking for help is told they made a mistake. The note lists the
    commands."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 43)
    for body in ("/rltracker help", "/rltracker HELP?", "/rltracker"):
        await commands_router.dispatch(comment_event(body, number=43), app_ctx)
    notes = note_replies(fake_github, 43)
    assert len(notes) == 3
    for note in notes:
        assert "no such command" not in note["body"] and "`rules`" in note["body"]
        assert "Edit your comment" not in note["body"]


@pytest.mark.parametrize("word", ["ignore", "stop", "recheck"])
async def test_a_command_on_a_thread_not_stored_yet_is_done(
        app_ctx: Any, fake_github: Any, shared_dir: Any, word: str) -> None:
    """A delivery's handlers run in no fixed order (gidgethub fetches them as a set): the
    command may come before the handler that stores the comment's thread, as on a thread the
    app has not seen yet. Verdicts stored the thread first; `ignore` and `stop` muted nothing
    (no row) and were recorded done with a 👍, so the app spoke on the thread afterwards, and
    `recheck` was recorded done without running. Each is now done on the thread it stores."""
    import json

    from bot.webhooks.events import router as events_router

    repo = "Codertocat/Hello-World"
    await install(app_ctx, fake_github, repo=repo, framework="verl")
    data = json.loads((shared_dir / "fixtures" / "webhooks" / "issue_comment" / "created.json").read_text())
    data["comment"]["body"] = f"/rltracker {word}"
    data["installation"] = {"id": INST}
    number = data["issue"]["number"]
    fake_github.add_issue(repo, number, data["issue"]["title"], data["issue"]["body"] or "",
                          data["issue"]["user"]["login"])
    event = sansio.Event(data, event="issue_comment", delivery_id=f"first-sight-{word}")
    assert await handle_command(event, app_ctx) == word  # the commands handler first
    await events_router.dispatch(event, app_ctx)  # then the one storing the thread
    async with app_ctx.sessionmaker() as s:
        thread = await s.scalar(select(Thread).where(Thread.repo == repo, Thread.number == number))
        assert thread is not None
        assert thread.muted == (word != "recheck")
        if word == "recheck":
            assert await s.scalar(select(Analysis).where(Analysis.thread_id == thread.id)) is not None


async def test_a_maintainer_whose_membership_is_private_may_use_the_commands(
        app_ctx: Any, fake_github: Any) -> None:
    """GitHub calls an organisation member whose membership is private CONTRIBUTOR or NONE
    (the quiet rules ask GitHub about such repliers, bot.speaking.quiet). A maintainer with
    write access through such a membership wrote `/rltracker stop` on a report and was refused
    as a stranger, silently (a skip nobody sees); their `resume` too. CONTRIBUTOR and NONE are
    asked of GitHub as MEMBER is: write, maintain or admin may; anyone else is still refused,
    and nothing is done."""
    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 44)
    fake_github.set_permission(VERL, "priv", "maintain")
    fake_github.set_permission(VERL, "reader", "read")
    for login, association in [("reader", "CONTRIBUTOR"), ("mallory", "NONE")]:
        assert await handle_command(comment_event("/rltracker stop", user=login, association=association,
                                                  number=44), app_ctx) == "not_allowed"
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 44))).muted
    assert not fake_github.requests("POST", r"/reactions")
    event = comment_event("/rltracker stop", user="priv", association="CONTRIBUTOR", number=44)
    assert await handle_command(event, app_ctx) == "stop"
    async with app_ctx.sessionmaker() as s:
        assert (await s.scalar(select(Thread).where(Thread.number == 44))).muted
    cid = event.data["comment"]["id"]
    assert len(fake_github.requests("POST", rf"/issues/comments/{cid}/reactions")) == 1
    # the repository's pause, lifted by the same maintainer (asked of GitHub once)
    async with app_ctx.sessionmaker() as s:
        repo_row = await s.scalar(select(Repository).where(Repository.full_name == VERL))
        repo_row.comments_paused = True
        await s.commit()
    asked = len(fake_github.requests("GET", r"/collaborators/priv/permission"))
    assert await handle_command(comment_event("/rltracker resume", user="priv", association="NONE",
                                              number=44), app_ctx) == "resume"
    assert len(fake_github.requests("GET", r"/collaborators/priv/permission")) == asked + 1
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Repository).where(Repository.full_name == VERL))).comments_paused


async def test_command_replies_in_a_discussion_are_capped_too(app_ctx: Any, fake_github: Any) -> None:
    """The cap holds for replies through GraphQL (a discussion) as through REST."""
    await install(app_ctx, fake_github)
    added: list[dict[str, Any]] = []

    def graphql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
        if "addDiscussionComment" not in query:
            return {"data": {"node": {"comments": {"nodes": []}}}}
        added.append(variables)
        return {"data": {"addDiscussionComment": {"comment": {"id": f"DC_{len(added)}",
                                                              "databaseId": 700 + len(added)}}}}

    fake_github.graphql_handler = graphql
    for n in range(7):
        data = {
            "action": "created",
            "discussion": {"number": 45, "node_id": "D_45", "user": {"login": "alice"}},
            "comment": {"id": 6000 + n, "node_id": f"DCc_{n}", "body": "/rltracker rules",
                        "user": {"login": "alice", "type": "User"}, "author_association": "NONE"},
            "repository": {"full_name": VERL}, "installation": {"id": INST},
        }
        await commands_router.dispatch(sansio.Event(data, event="discussion_comment",
                                                    delivery_id=f"dd-{n}"), app_ctx)
    assert len(added) == 5
    skipped = [a for a in await actions(app_ctx, "command") if a.status == "skipped"]
    assert [a.details["code"] for a in skipped] == ["reply_rate:6005", "reply_rate:6006"]


async def test_an_edit_adding_a_command_line_below_an_answered_one_gets_the_note(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker rules`, answered; its author then edits the comment to add `/rltracker
    stop` below it. On main only the first command line was compared, so the edit was taken
    as leaving the command as it was: nothing done, nothing said, though the person asked for
    something (an edit changing the command gets the note that a new comment asks again).
    Now the added line gets that note, once; an edit that only takes a line out asks
    nothing."""
    import copy

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 15)
    first = comment_event("/rltracker rules", number=15, comment_id=7015)
    assert await handle_command(first, app_ctx) == "posted"

    def edit(before: str, after: str) -> sansio.Event:
        data = copy.deepcopy(first.data)
        data.update(action="edited", changes={"body": {"from": before}})
        data["comment"]["body"] = after
        return sansio.Event(data, event="issue_comment", delivery_id=f"e-{next(_ids)}")

    added = edit("/rltracker rules", "/rltracker rules\n/rltracker stop")
    assert await handle_command(added, app_ctx) == "already_answered"
    assert await handle_command(added, app_ctx) == "already_answered"  # redelivered
    assert len(note_replies(fake_github, 15)) == 1
    async with app_ctx.sessionmaker() as s:
        assert not (await s.scalar(select(Thread).where(Thread.number == 15))).muted
    # taking the added line out again, or words after a command that reads none: no request
    assert await handle_command(edit("/rltracker rules\n/rltracker stop", "/rltracker rules"),
                                app_ctx) == "unchanged_command"
    assert await handle_command(edit("/rltracker rules", "/rltracker rules, thanks"),
                                app_ctx) == "unchanged_command"
    assert len(note_replies(fake_github, 15)) == 1


async def test_a_typo_handled_after_its_correction_was_answered_gets_no_note(
        app_ctx: Any, fake_github: Any) -> None:
    """`/rltracker metods kl_growth`, whose first attempt failed (GitHub's 502 on the note:
    the worker retries it later and goes on with the next delivery), then its author's edit
    making it right, answered with the methods. The created delivery's retry then read the
    older body: on main it posted "no such command ... Edit your comment to correct it" below
    the answer to the corrected command. Now a problem read from a body older than the
    answered one says nothing."""
    import copy

    await install(app_ctx, fake_github)
    await open_issue(app_ctx, fake_github, 16)
    created = comment_event("/rltracker metods kl_growth", number=16, comment_id=7016)
    fake_github.fail_next("POST", r"/issues/16/comments", 502)
    with pytest.raises(gidgethub.GitHubException):
        await handle_command(created, app_ctx)
    data = copy.deepcopy(created.data)
    data.update(action="edited", changes={"body": {"from": "/rltracker metods kl_growth"}})
    data["comment"]["body"] = "/rltracker methods kl_growth"
    assert await handle_command(sansio.Event(data, event="issue_comment", delivery_id="e16"),
                                app_ctx) == "posted"
    await handle_command(created, app_ctx)  # the worker's retry of the created delivery
    assert note_replies(fake_github, 16) == []
    [answer] = replies_of(fake_github, 16)
    assert "/failures/kl_growth" in answer["body"]
