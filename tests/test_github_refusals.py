"""GitHub's refusals that no retry changes, end to end: a delivery posted to the real app over
HTTP (signed as GitHub signs, GitHub's own payloads), handled by the worker, GitHub played by
the fake server. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gidgethub
import graphql as gql
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.app import create_app
from bot.github.client import refused_for_good
from bot.store.models import Action, Delivery
from bot.webhooks.replay import delivery_headers
from bot.webhooks.worker import MAX_ATTEMPTS, MAX_TRANSIENT_ATTEMPTS, Worker
from tests.fake_graphql import load_github_schema
from tests.test_actions_e2e import INST, VERL, install

SECRET = "test-secret"


def no_wait(attempt: int) -> float:
    return 0.0


async def deliver(ctx: Any, event: str, payload: dict[str, Any], *, rounds: int = 8) -> Delivery:
    """The payload posted to /webhook, then the worker run until nothing is left to retry
    (its backoff made nil: each retry is due at once); its inbox row (the latest)."""
    body = json.dumps(payload).encode()
    async with TestClient(TestServer(create_app(ctx, worker=False))) as client:
        resp = await client.post("/webhook", data=body, headers=delivery_headers(event, body, SECRET))
        assert resp.status == 202
    worker = Worker(ctx, backoff=no_wait)
    for _ in range(rounds):
        await worker.run_until_idle()
    async with ctx.sessionmaker() as session:
        return (await session.scalars(select(Delivery).order_by(Delivery.id.desc()))).first()


def not_found(field: str, node_id: str) -> dict[str, Any]:
    """GitHub's answer (status 200) for a node that no longer resolves: the field null and
    a NOT_FOUND error."""
    return {"data": {field: None}, "errors": [{
        "type": "NOT_FOUND", "path": [field], "locations": [{"line": 1, "column": 1}],
        "message": f"Could not resolve to a node with the global id of '{node_id}'"}]}


async def test_a_command_in_a_discussion_deleted_meanwhile_is_not_retried(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """A command in a discussion deleted before the worker reached it: GitHub answers every
    read and the reply (addDiscussionComment) with 200, null and NOT_FOUND, as often as it is
    asked. As REST's 404/410 for a deleted issue, that is a refusal for good: the delivery
    fails at its first attempt. It was retried five times (five failed command rows, five
    rounds of GraphQL requests)."""
    schema = load_github_schema(shared_dir / "fixtures" / "github-api" / "schema.graphql")
    await install(app_ctx, fake_github)
    asked: list[str] = []

    @fake_github.route("POST", r"/graphql")
    def deleted_discussion(fake: Any, request: Any, match: Any, body: Any) -> Any:
        document = gql.parse(body["query"])
        assert not gql.validate(schema, document)
        field = "addDiscussionComment" if "addDiscussionComment" in body["query"] else "node"
        asked.append(field)
        return not_found(field, "D_gone")

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json")
                      .read_text())
    data["comment"]["body"] = "/rltracker methods entropy_collapse"
    data["discussion"]["node_id"] = "D_gone"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    row = await deliver(app_ctx, "discussion_comment", data)
    assert row.status == "failed" and row.attempts == 1, (row.attempts, row.last_error)
    assert "NOT_FOUND" in (row.last_error or "") or "Could not resolve" in (row.last_error or "")
    async with app_ctx.sessionmaker() as session:
        commands = list(await session.scalars(select(Action).where(Action.kind == "command")))
    assert [a.status for a in commands] == ["failed"]
    # the looks for an earlier reply (the command's own thread, then the discussion's
    # comments), each answered NOT_FOUND once: nothing was sent, nothing asked again
    assert asked == ["node", "node"]


async def test_graphql_refusals_are_told_from_what_a_retry_may_cure(
        github_client: Any, fake_github: Any) -> None:
    """The client's GraphQL errors as `refused_for_good` reads them: NOT_FOUND and FORBIDDEN
    (GitHub's 200 answers, the same however often asked) are refusals; any other error type,
    or one without a type (GitHub's "Something went wrong while executing your query", a
    timeout of its own), is not."""
    fake_github.add_installation(INST, "verl-project", repos=[VERL])
    answers = [
        not_found("node", "D_gone"),
        {"data": {"node": None}, "errors": [{"type": "FORBIDDEN", "path": ["node"],
                                              "message": "Resource not accessible by integration"}]},
        {"data": None, "errors": [{"message": "Something went wrong while executing your query. "
                                              "This may be the result of a timeout."}]},
        {"data": {"node": None, "viewer": None}, "errors": [
            {"type": "NOT_FOUND", "path": ["node"], "message": "Could not resolve"},
            {"message": "Something went wrong while executing your query."}]},
    ]
    fake_github.graphql_handler = lambda query, variables: answers.pop(0)
    seen = []
    for _ in range(4):
        try:
            await github_client.graphql("query($id: ID!) { node(id: $id) { id } }",
                                        installation_id=INST, id="D_gone")
        except gidgethub.GraphQLException as exc:
            seen.append(refused_for_good(exc))
    assert seen == [True, True, False, False]


async def test_graphql_refusing_the_apps_token_is_retried_as_rests_401_is(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub refuses the installation's token for GraphQL (its recorded answer: 401, "Bad
    credentials"; the client drops the token and asks once more with a fresh one, refused
    too). REST's 401 is a failure worth retrying for hours (credentials being fixed); the
    GraphQL one was an unexpected error, given up after 5 attempts: a command in a discussion
    stayed unanswered once the credentials were fixed, where one on an issue was answered."""
    recorded = json.loads((shared_dir / "fixtures" / "github-api" / "gidgethub-samples" / "GraphQL"
                           / "bad-credentials-401.json").read_text())
    await install(app_ctx, fake_github)

    @fake_github.route("POST", r"/graphql")
    def refused(fake: Any, request: Any, match: Any, body: Any) -> Any:
        return 401, recorded

    data = json.loads((shared_dir / "fixtures" / "webhooks" / "discussion_comment" / "created.json")
                      .read_text())
    data["comment"]["body"] = "/rltracker methods entropy_collapse"
    data["repository"]["full_name"] = VERL
    data["installation"]["id"] = INST
    row = await deliver(app_ctx, "discussion_comment", data, rounds=MAX_TRANSIENT_ATTEMPTS + 1)
    assert row.attempts == MAX_TRANSIENT_ATTEMPTS > MAX_ATTEMPTS, (row.attempts, row.status)
    assert "GraphQLAuthorizationFailure" in (row.last_error or "")
