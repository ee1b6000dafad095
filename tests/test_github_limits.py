"""GitHub's rate limits and refusals as the app meets them (limits65), over HTTP to the one
fake GitHub (tests/fakegithub.py), its clock and the client's moved by the test (no sleeps).

A primary rate limit (`x-ratelimit-remaining: 0` with `x-ratelimit-reset`) is the budget of
one set of credentials for one resource (REST's "core", "graphql", "search") spent until the
reset: every request of those credentials to that resource is refused until then, and GitHub
counts the refusals. A secondary limit holds every request of the credentials (auth64)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import gidgethub
import pytest

from bot.config import Settings
from bot.github.client import GitHubClient, rate_limit_wait
from tests import test_github_client
from tests.fakegithub import Clock, FakeGitHub, clocked_github
from tests.test_github_client import REPO

ISSUE = f"/repos/{REPO}/issues/1"
# test_github_client's fixtures: the app's settings on the fake, two installations and issues
client_settings = test_github_client.client_settings
installed = test_github_client.installed


@pytest.fixture
def clock(installed: FakeGitHub) -> Clock:
    installed.graphql_handler = lambda query, variables: {"viewer": {"login": "rltracker[bot]"}}
    return Clock(installed)


@pytest.fixture
async def client(client_settings: Settings, clock: Clock) -> AsyncIterator[GitHubClient]:
    c = GitHubClient(client_settings, sleep=clock.sleep, clock=clock, rand=lambda: 0.0)
    yield c
    await c.close()


def _sent(fake: FakeGitHub, path_regex: str) -> int:
    return len(fake.requests(None, path_regex))


# ---- a primary rate limit holds the credentials' requests to its resource until the reset ----
async def test_a_spent_rest_limit_holds_the_installations_rest_requests_until_the_reset(
        client: GitHubClient, installed: FakeGitHub, clock: Clock) -> None:
    """GitHub answers 403 `x-ratelimit-remaining: 0`, reset in 20 minutes. The request gives
    up (longer than it may wait) and its caller is deferred to the reset. The next request of
    the installation went to GitHub and was refused again (one more refusal counted against
    an app already over its limit, for every delivery until the reset). Now it is answered
    the same refusal, with the same reset, without asking GitHub; GraphQL (counted apart),
    and another installation's requests, still go; after the reset GitHub is asked again."""
    installed.rate_limited("GET", r"/issues/1$", reset_in=1200)
    gh = await client.api(7)
    with pytest.raises(gidgethub.RateLimitExceeded) as first:
        await gh.getitem(ISSUE)
    assert _sent(installed, r"/issues/1$") == 1
    wait = rate_limit_wait(first.value, now=clock())
    assert wait is not None and 1190 <= wait <= 1210

    for path in (ISSUE, f"{ISSUE}/comments", f"/repos/{REPO}/labels"):
        with pytest.raises(gidgethub.RateLimitExceeded) as again:
            await gh.getitem(path)
        later = rate_limit_wait(again.value, now=clock())
        assert later is not None and 1190 <= later <= 1212, (path, later)
    assert _sent(installed, rf"^/repos/{REPO}/") == 1, "asked GitHub inside its spent limit"

    # GraphQL's limit is its own; another installation's is its own.
    assert await client.graphql("{ viewer { login } }", installation_id=7) == {
        "viewer": {"login": "rltracker[bot]"}}
    other = await client.api(8)
    assert (await other.getitem("/repos/huggingface/trl/issues/2"))["title"] == "KL grows"

    clock.advance(1202)  # the reset has come
    assert (await gh.getitem(ISSUE))["number"] == 1
    assert _sent(installed, r"/issues/1$") == 2


async def test_a_held_request_within_its_bound_waits_for_the_reset_then_goes(
        client: GitHubClient, installed: FakeGitHub, clock: Clock) -> None:
    """A near reset (20 s): the request that met the limit waits it out itself, as before;
    another request of the installation sent meanwhile waits for the same reset instead of
    being refused by GitHub first (it went, was refused, then waited)."""
    installed.rate_limited("GET", r"/issues/1$", reset_in=1200)
    gh = await client.api(7)
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(ISSUE)
    clock.advance(1180)  # 20 s left
    before = clock()
    assert [c async for c in gh.getiter(f"{ISSUE}/comments")] == []
    assert 19 <= clock() - before <= 23  # waited for the reset, once
    calls = installed.requests("GET", r"/issues/1/comments")
    assert [c.status for c in calls] == [200]


async def test_the_last_request_of_a_limit_holds_the_next_one(
        client: GitHubClient, installed: FakeGitHub, clock: Clock) -> None:
    """GitHub takes the request that spends the limit (200, `x-ratelimit-remaining: 0`):
    the next one would be refused; it is held until the reset without asking GitHub."""
    @installed.route("GET", r"/repos/verl-project/verl/issues/1")
    def last_one(fake: FakeGitHub, request: Any, match: Any, body: Any) -> Any:
        return 200, {"number": 1, "title": "Entropy collapses"}, fake.limit_spent(900)

    gh = await client.api(7)
    assert (await gh.getitem(ISSUE))["number"] == 1
    with pytest.raises(gidgethub.RateLimitExceeded):
        await gh.getitem(f"/repos/{REPO}/labels")
    assert _sent(installed, r"/labels$") == 0


async def test_a_spent_graphql_limit_holds_graphql_not_rest(
        client: GitHubClient, installed: FakeGitHub, clock: Clock) -> None:
    """GitHub answers a spent GraphQL limit with 200, errors of type RATE_LIMITED and the
    reset in its headers (`x-ratelimit-resource: graphql`). The next query went to GitHub
    and was refused again; now it is answered as a rate limit with the reset without asking
    GitHub, while REST (counted apart) goes on."""
    limited = {"data": None, "errors": [
        {"type": "RATE_LIMITED", "message": "API rate limit exceeded for installation ID 7."}]}
    installed.fail_next("POST", r"^/graphql$", 200, headers=installed.limit_spent(1800, "graphql"),
                        body=limited)
    for _ in range(2):
        with pytest.raises(gidgethub.BadRequest) as info:
            await client.graphql("{ viewer { login } }", installation_id=7)
        wait = rate_limit_wait(info.value, now=clock())
        assert wait is not None and 1790 <= wait <= 1812
    assert _sent(installed, r"^/graphql$") == 1
    gh = await client.api(7)
    assert (await gh.getitem(ISSUE))["number"] == 1
    clock.advance(1802)
    assert await client.graphql("{ viewer { login } }", installation_id=7) == {
        "viewer": {"login": "rltracker[bot]"}}


async def test_a_command_reply_met_by_a_spent_limit_defers_the_installations_deliveries(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Two commands in one repository; GitHub refuses the first reply for the installation's
    spent REST limit (403, `x-ratelimit-remaining: 0`, reset in two minutes). Its delivery
    was deferred to the reset, but the next delivery asked GitHub at once (its config, its
    issue, its reply), refused again. Now both are deferred to the reset, nothing asked
    inside it; then each reply goes out once."""
    from tests.test_github_permissions import _two_commands_rate_limited, two_command_comments

    first, second = await two_command_comments(app_ctx, fake_github, shared_dir)
    async with clocked_github(app_ctx) as clock:
        fake_github.rate_limited("POST", r"/issues/\d+/comments$", reset_in=119)
        await _two_commands_rate_limited(app_ctx, fake_github, first, second, clock)


def test_the_resource_of_a_request() -> None:
    from bot.github.client import rate_limit_resource

    assert rate_limit_resource("/graphql") == "graphql"
    assert rate_limit_resource("/api/graphql") == "graphql"
    assert rate_limit_resource("/search/issues") == "search"
    assert rate_limit_resource("/api/v3/search/issues") == "search"
    assert rate_limit_resource("/repos/o/search/issues") == "core"  # a repository named search
    assert rate_limit_resource("/repos/o/r/issues/1") == "core"


# ---- a command reply refused for a permission the installation has not granted -----------------
async def test_a_command_reply_refused_for_a_permission_is_a_skip_answered_once_accepted(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """The installation grants Issues read only; a person asks `/rltracker methods ...`.
    GitHub refuses the reply (403 "Resource not accessible by integration"). The delivery
    failed (one more failed delivery in /healthz and /metrics), nothing on the thread's page
    said why the command was not answered, and accepting the permission answered nothing
    (only `rltracker deliveries retry` by hand). Now the refusal is a skip on the thread's
    page naming the permission, the delivery is done, and the installation's
    `new_permissions_accepted` handles the delivery again: the reply goes out, once."""
    from aiohttp.test_utils import TestClient, TestServer
    from sqlalchemy import select

    from bot.app import create_app
    from bot.speaking.render import REPLY_MARKER
    from bot.store.models import Action, Delivery
    from bot.webhooks.worker import Worker
    from tests.test_actions_e2e import INST
    from tests.test_failed_deliveries import REPO as HELLO
    from tests.test_failed_deliveries import _command_comment, _received
    from tests.test_github_permissions import permissions_accepted

    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    number, ref = payload["issue"]["number"], payload["comment"]["id"]
    fake_github.installations[INST]["permissions"]["issues"] = "read"
    app = create_app(app_ctx, worker=False)
    async with TestClient(TestServer(app)) as client:
        await _received(client, app_ctx, payload, "dlv-perm")
        worker = Worker(app_ctx, backoff=lambda attempt: 0.0)
        assert await worker.run_until_idle() == 1
        assert worker.counts["failed"] == 0 and worker.counts["done"] == 1, worker.counts
        async with app_ctx.sessionmaker() as s:
            delivery = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-perm"))
            skips = list(await s.scalars(select(Action).where(Action.status == "skipped")))
        assert delivery.status == "done"
        [skip] = [a for a in skips if a.dedupe_key.endswith(f":command:skip:not_permitted:{ref}")]
        assert "Issues write" in (skip.reason or "") and "once the permission is accepted" in (
            skip.reason or "")
        assert fake_github.comments_of(HELLO, number) == []
        page = await client.get(f"/threads/{HELLO}/{number}")
        assert page.status == 200
        assert "Issues write permission" in await page.text()

        await permissions_accepted(app_ctx, fake_github, INST, "Codertocat", issues="write")
        assert await worker.run_until_idle() == 1
    [reply] = fake_github.comments_of(HELLO, number)
    assert REPLY_MARKER in reply["body"]
    async with app_ctx.sessionmaker() as s:
        left = list(await s.scalars(select(Action.dedupe_key).where(
            Action.dedupe_key.contains(":skip:not_permitted:"))))
        delivery = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-perm"))
    assert left == [] and delivery.status == "done"
    assert await worker.run_until_idle() == 0  # answered once
    assert len(fake_github.comments_of(HELLO, number)) == 1


def test_a_graphql_forbidden_write_is_a_permission_refusal() -> None:
    """addDiscussionComment without Discussions write: GitHub's 200 with data null and an
    error of type FORBIDDEN, "Resource not accessible by integration" (as the fake's
    `_withhold` answers a read). Told from a lock or another FORBIDDEN."""
    import gidgethub

    from bot.speaking.posting import permission_refusal

    def answer(*errors: dict[str, Any]) -> gidgethub.QueryError:
        return gidgethub.QueryError({"data": None, "errors": list(errors)})

    forbidden = {"type": "FORBIDDEN", "path": ["addDiscussionComment"],
                 "message": "Resource not accessible by integration"}
    assert permission_refusal(answer(forbidden))
    assert not permission_refusal(answer({**forbidden, "message": "Discussion is locked"}))
    assert not permission_refusal(answer(forbidden, {"type": "NOT_FOUND", "message": "gone"}))
    assert not permission_refusal(answer({"message": "Something went wrong"}))


# ---- a conversation locked between the app's read and its comment ------------------------------
@pytest.mark.parametrize("status", [403, 422])
async def test_a_failure_comment_github_refuses_as_locked_is_a_skip(
        app_ctx: Any, fake_github: Any, status: int) -> None:
    """The issue reads unlocked when the app looks, and is locked before its comment reaches
    GitHub: GitHub refuses it, "Unable to create comment because issue is locked." (403; its
    GraphQL schema names the reason CommentCannotUpdateReason.LOCKED; 422 with the same words
    taken too). The failure comment was a failed action and its delivery failed (one more
    failed delivery in /healthz), for an answer every retry meets. It is now the same
    recorded skip as a conversation read locked ("locked"): nothing posted, asked once."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, VERL, actions_of, app_comments, install, open_issue

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 1)
    fake_github.fail_next("POST", r"/issues/1/comments$", status, body={
        "message": "Unable to create comment because issue is locked.",
        "documentation_url": "https://docs.github.com/articles/locking-conversations/"})
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:locked", out
    assert app_comments(fake_github, VERL, 1) == []
    rows = await actions_of(app_ctx, 1, "failure_comment")
    assert [r.status for r in rows] == ["skipped"], [(r.status, r.reason) for r in rows]
    assert "locked" in (rows[0].reason or "")
    assert len(fake_github.requests("POST", r"/issues/1/comments$")) == 1


# ---- 410 Gone: an issue deleted, or the repository's issues turned off -------------------------
def test_a_410_is_told_apart() -> None:
    """GitHub answers 410 for a deleted issue ("This issue was deleted") and for every issue
    of a repository whose issues are turned off ("Issues are disabled for this repo"); the
    client answers 410 itself for an installation GitHub no longer knows (InstallationGone),
    which says nothing about the issue."""
    import http

    from bot.github.client import InstallationGone, gone_answer

    def refused(message: str) -> gidgethub.BadRequest:
        return gidgethub.BadRequest(http.HTTPStatus.GONE, message)

    assert gone_answer(refused("This issue was deleted")) == "deleted"
    assert gone_answer(refused("Issues are disabled for this repo")) == "disabled"
    assert gone_answer(InstallationGone(http.HTTPStatus.GONE, "installation 7 is gone")) is None
    assert gone_answer(gidgethub.BadRequest(http.HTTPStatus.NOT_FOUND, "Not Found")) is None


async def test_a_failure_comment_in_a_repository_whose_issues_were_turned_off_is_a_skip(
        app_ctx: Any, fake_github: Any) -> None:
    """The repository's issues are turned off after the issue's delivery was stored: GitHub
    answers the app's read of the issue 410 "Issues are disabled for this repo". The failure
    comment was a failed action and the delivery failed; it is a recorded skip saying so."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, VERL, actions_of, install, open_issue

    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 1)
    fake_github.issues_disabled.add(VERL)
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:issues_disabled", out
    rows = await actions_of(app_ctx, 1, "failure_comment")
    assert [r.status for r in rows] == ["skipped"], [(r.status, r.reason) for r in rows]
    assert "issues are turned off" in (rows[0].reason or "")
    assert fake_github.requests("POST", r"/issues/1/comments$") == []


# ---- GitHub down, saying when to come back ----------------------------------------------------
async def test_a_503_with_retry_after_defers_the_delivery_as_asked(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub answers the command's reply 503 with `retry-after: 600` (a maintenance
    window). The reply is a creating POST, not repeated by the client; the delivery was
    retried after the worker's 5 s, then 20 s, ... into the window. It is now deferred no
    earlier than GitHub asked."""
    from aiohttp.test_utils import TestClient, TestServer
    from sqlalchemy import select

    from bot.app import create_app
    from bot.store.models import Delivery
    from bot.store.types import utcnow
    from bot.webhooks.worker import Worker
    from tests.test_failed_deliveries import _command_comment, _received

    payload = await _command_comment(app_ctx, fake_github, shared_dir)
    fake_github.fail_next("POST", r"/issues/\d+/comments$", 503, headers={"retry-after": "600"},
                          body={"message": "Service Unavailable"})
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, payload, "dlv-503")
    before = utcnow()
    worker = Worker(app_ctx, backoff=lambda attempt: 5.0)
    await worker.run_until_idle()
    async with app_ctx.sessionmaker() as s:
        row = await s.scalar(select(Delivery).where(Delivery.delivery_id == "dlv-503"))
    assert row.status == "pending"
    assert (row.next_attempt_at - before).total_seconds() >= 590
