"""The app's permissions as GitHub grants them per installation (auth64).

An organisation installs the app and may leave a permission out (Discussions, Issues write),
or suspend the installation; GitHub answers what the token does not cover with "Resource not
accessible by integration" (GraphQL: the field null, an error of type FORBIDDEN at its path).
Driven through the one fake GitHub (tests/fakegithub.py), whose tokens carry the
installation's permissions as they were when issued.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import func, select

from bot.scheduler import _sync_problem, nightly_job, step_sync
from bot.store.models import Thread
from bot.webhooks import installations
from tests.fake_graphql import REPOS, FakeData, FakeGraphQL
from tests.fakegithub import Clock, clocked_github, install_app

INST = 55
E2E_INST = 4711  # (tests.test_actions_e2e.INST)


def _graphql(fake_github: Any, shared_dir: Path) -> FakeData:
    data = FakeData.generate(2, seed=5, long_every=0)
    fake_github.graphql_handler = FakeGraphQL(
        data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    return data


async def permissions_accepted(ctx: Any, fake: Any, installation_id: int, account: str,
                               **permissions: str) -> None:
    """The account accepts the app's new `permissions` (at the fake GitHub: its next tokens
    carry them), and GitHub's `installation.new_permissions_accepted` is handled."""
    fake.installations[installation_id]["permissions"].update(permissions)
    await installations.router.dispatch(sansio.Event(
        {"action": "new_permissions_accepted",
         "installation": {"id": installation_id,
                          "account": {"login": account, "type": "Organization"},
                          "target_type": "Organization", "suspended_at": None},
         "sender": {"login": "admin", "type": "User"}},
        event="installation", delivery_id=f"perm-{installation_id}-{len(fake.calls)}"), ctx)


async def _threads(ctx: Any, kind: str) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(
            select(func.count()).select_from(Thread).where(Thread.kind == kind)) or 0)


async def test_discussions_not_granted_are_a_skip_named_not_a_refused_sync_every_night(
        app_ctx: Any, fake_github: Any, shared_dir: Path, caplog: Any) -> None:
    """The installation did not grant Discussions. GitHub answers each repository's
    `discussions` null with FORBIDDEN, its issues and pull requests in full. The night was
    "partial" every night, "GitHub refused the sync of" every repository of the installation
    (the run's error, the posted report's notice: "they could not be synced", though their
    issues were), and the log named neither the repositories nor the permission. Now the
    discussions are a skip named with the permission and the installation (the counts, one
    log line), the night is "ok" for it, and once the permission is accepted
    (`new_permissions_accepted`) the next night syncs the discussions it skipped."""
    _graphql(fake_github, shared_dir)
    await install_app(app_ctx, fake_github, INST, "someorg", list(REPOS))
    del fake_github.installations[INST]["permissions"]["discussions"]
    caplog.set_level(logging.INFO)

    night = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    sync = night["counts"]["sync"]
    assert night["outcome"] == "ok", night
    assert sync["failed_streams"] == []
    assert _sync_problem(sync) is None  # the report says nothing was refused
    assert await _threads(app_ctx, "issue") > 0 and await _threads(app_ctx, "discussion") == 0
    assert sorted(s["repo"] for s in sync["not_permitted"]) == sorted(REPOS)
    assert {(s["kind"], s["permission"], s["installation"]) for s in sync["not_permitted"]} == {
        ("discussion", "discussions", INST)}
    said = [r.getMessage() for r in caplog.records if "permission" in r.getMessage()]
    assert any(REPOS[0] in line and "Discussions" in line and str(INST) in line for line in said), said

    # The organisation accepts the permission: GitHub's event, then the next night.
    await permissions_accepted(app_ctx, fake_github, INST, "someorg", discussions="write")
    again = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert again["outcome"] == "ok", again
    assert again["counts"]["sync"]["not_permitted"] == []
    assert await _threads(app_ctx, "discussion") > 0


# ---- a secondary rate limit holds every request of the installation --------------------------
async def test_a_secondary_rate_limit_holds_the_installations_other_deliveries_too(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Two commands in one repository; GitHub answers the first reply with a secondary rate
    limit (403, retry-after 120 s: "You have exceeded a secondary rate limit"). Its delivery
    waited as told, but the next delivery went on asking GitHub through the same installation
    at once (its config, its issue, its reply): requests into a limit GitHub says to wait out,
    which it may answer by blocking the app. Now every request through the installation waits
    for GitHub's time (the next delivery is deferred as the first, asking nothing); then each
    reply goes out once."""
    first, second = await two_command_comments(app_ctx, fake_github, shared_dir)
    fake_github.secondary_rate_limit("POST", r"/issues/\d+/comments$", retry_after=120)
    async with clocked_github(app_ctx) as clock:  # moved on when GitHub's time has come
        await _two_commands_rate_limited(app_ctx, fake_github, first, second, clock)


async def two_command_comments(app_ctx: Any, fake_github: Any,
                               shared_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two issue_comment payloads, each a command on its own issue of one installed
    repository (both issues at the fake GitHub)."""
    import json as json_module

    from tests.test_failed_deliveries import REPO, _command_comment

    first = await _command_comment(app_ctx, fake_github, shared_dir)
    second = json_module.loads(json_module.dumps(first))
    second["issue"]["number"] = first["issue"]["number"] + 1
    second["comment"]["id"] += 1
    second["comment"]["node_id"] += "2"
    fake_github.add_issue(REPO, second["issue"]["number"], "Another", "", "octocat")
    return first, second


async def _two_commands_rate_limited(app_ctx: Any, fake_github: Any, first: dict[str, Any],
                                     second: dict[str, Any], clock: Clock) -> None:
    from aiohttp.test_utils import TestClient, TestServer
    from sqlalchemy import update

    from bot.app import create_app
    from bot.speaking.render import REPLY_MARKER
    from bot.store.models import Delivery
    from bot.store.types import utcnow
    from bot.webhooks.worker import Worker
    from tests.test_actions_e2e import INST as E2E_INST
    from tests.test_failed_deliveries import REPO, _received

    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await _received(client, app_ctx, first, "dlv-a")
        await _received(client, app_ctx, second, "dlv-b")
    worker = Worker(app_ctx, backoff=lambda attempt: 5.0)
    before = utcnow()
    await worker.run_until_idle()
    limited = next(i for i, c in enumerate(fake_github.calls) if c.status == 403)
    after = [f"{c.method} {c.path}" for c in fake_github.calls[limited + 1:]
             if c.installation_id == E2E_INST]
    assert after == [], f"asked through the installation inside GitHub's limit: {after}"
    async with app_ctx.sessionmaker() as s:
        rows = list(await s.scalars(select(Delivery).order_by(Delivery.id)))
    assert [r.status for r in rows] == ["pending", "pending"]
    assert all((r.next_attempt_at - before).total_seconds() >= 110 for r in rows)

    async with app_ctx.sessionmaker() as s:  # GitHub's time has come
        await s.execute(update(Delivery).values(next_attempt_at=before))
        await s.commit()
    clock.advance(121)
    await worker.run_until_idle()
    for payload in (first, second):
        [reply] = fake_github.comments_of(REPO, payload["issue"]["number"])
        assert REPLY_MARKER in reply["body"]


# ---- installation tokens expire after an hour ------------------------------------------------
async def test_a_sync_waiting_an_hour_mid_run_goes_on_with_new_tokens(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """Checked (held): a night whose sync waits out GraphQL's rate limit (an hour, several
    times) outlives each installation token (GitHub's expire an hour after they are issued).
    GitHub's clock is 8 minutes ahead of the machine's, so the client takes a token for
    fresh (more than its 5-minute margin left by its clock) that GitHub has let expire: the
    401 ("Bad credentials") is answered by a new token, once, and the night goes on; no
    repository is refused, every thread is stored."""
    from datetime import UTC, datetime, timedelta

    from bot.github.sync import sync as run_sync

    data = FakeData.generate(120, seed=5, long_every=0)
    responder = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql",
                            rate_limit=101)  # each answer leaves too few points: `_pace` waits
    responder.reset_at = datetime.now(UTC) + timedelta(seconds=3650)
    fake_github.graphql_handler = responder
    await install_app(app_ctx, fake_github, INST, "someorg", list(REPOS))
    fake_github.skew = 8 * 60
    async with clocked_github(app_ctx, fake_github) as clock:
        stats = await run_sync(app_ctx, sleep=clock.sleep)
    asked = fake_github.requests("POST", r"^/graphql$")
    assert stats.failed_streams == [] and stats.waited_for_rate_limit >= 3 * 3600, stats
    assert [c.status for c in asked].count(401) >= 2  # (expired on GitHub's clock)
    assert all(c.status == 200 for i, c in enumerate(asked) if c.status != 401
               ) and all(asked[i + 1].status == 200 for i, c in enumerate(asked) if c.status == 401)
    assert len({c.token for c in asked}) >= 3  # a new token after each hour
    async with app_ctx.sessionmaker() as session:
        stored = int(await session.scalar(select(func.count()).select_from(Thread)) or 0)
    assert stored == sum(len(t) for kinds in data.repos.values() for t in kinds.values())


# ---- two installations, one repository moved between them ------------------------------------
async def test_a_repository_moved_to_another_installation_is_written_to_with_its_token(
        app_ctx: Any, fake_github: Any) -> None:
    """Checked (held): the repository was installed through one account's installation and
    moved to another's (transferred; GitHub now lists it under the second). The first
    installation's token, cached and fresh, is never used for it again once a delivery comes
    through the second: the failure comment is posted with the second's token, once."""
    from bot.speaking.decide import act
    from bot.webhooks import events
    from tests.test_actions_e2e import FAILURE, VERL, app_comments, install, open_issue
    from tests.test_actions_e2e import INST as FIRST

    second = FIRST + 1
    await install(app_ctx, fake_github)
    payload = await open_issue(app_ctx, fake_github, 1)
    await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert fake_github.requests("POST", r"/issues/1/comments$")[0].installation_id == FIRST
    fake_github.installations[FIRST]["repositories"] = []  # moved
    fake_github.add_installation(second, "new-owner", repos=[VERL])

    payload = await open_issue(app_ctx, fake_github, 2)
    payload["installation"] = {"id": second}
    await events.handle("issues", payload, app_ctx)
    await act(app_ctx, VERL, 2, trigger="issues.opened", payload=payload, analysis=FAILURE)
    writes = [c for c in fake_github.calls if c.method in ("POST", "PATCH", "DELETE")
              and c.path.startswith("/repos/") and "/issues/2" in c.path]
    assert writes and {c.installation_id for c in writes} == {second}, [
        (c.method, c.path, c.installation_id, c.status) for c in writes]
    assert len(app_comments(fake_github, VERL, 2)) == 1


# ---- serve with a key GitHub refuses ---------------------------------------------------------
async def test_serve_says_at_start_that_github_refuses_the_apps_key(
        db_url: str, tmp_path: Path, fake_github: Any) -> None:
    """`serve` with a well-formed RSA key that is not the app's (another app's, one revoked in
    the app's settings, or GITHUB_APP_ID of another app): the settings check passes, and
    serve started without a word; every delivery then met GitHub's 401 for the app's JWT,
    retried for hours, one warning per attempt. It now says at start, in one line, that
    GitHub refuses the app's credentials (and goes on receiving: nothing is lost)."""
    import signal

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from tests.fakegithub import rsa_key_pair
    from tests.test_serve_stop import POLLS, Serve

    fake_github.app_id = "4242"
    fake_github.public_key = rsa_key_pair()[1]  # the app's key at GitHub
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()).decode()
    serve = Serve(db_url, fake_github, tmp_path)
    serve.env.update({"GITHUB_APP_ID": "4242", "GITHUB_PRIVATE_KEY": other})
    serve.start()
    try:
        said: list[str] = []
        for _ in range(POLLS):
            said = [str(line.get("msg")) for line in serve.lines()
                    if "credentials" in str(line.get("msg"))]
            if said or fake_github.requests("GET", r"^/app$"):
                break
            assert serve.proc is not None and serve.proc.poll() is None, serve.log.read_text()[-3000:]
            await asyncio.sleep(0.05)  # a poll of the log file
        for _ in range(POLLS):  # (the answer, then its line)
            said = [str(line.get("msg")) for line in serve.lines()
                    if "credentials" in str(line.get("msg"))]
            if said or not fake_github.requests("GET", r"^/app$"):
                break
            await asyncio.sleep(0.05)
        assert said and "GITHUB_APP_ID" in said[0] and "401" in said[0], serve.log.read_text()[-3000:]
        assert other not in serve.log.read_text()
        serve.signal(signal.SIGTERM)
        assert await serve.wait(120) == 0
    finally:
        serve.kill()


# ---- Issues write not granted ----------------------------------------------------------------
async def test_a_failure_comment_refused_for_a_missing_permission_is_a_skip_naming_it(
        app_ctx: Any, fake_github: Any) -> None:
    """The installation grants Issues read only. GitHub refuses the app's comment (403
    "Resource not accessible by integration", no rate-limit headers). The failure comment
    was a failed action and its delivery failed (counted among the failed deliveries of
    /healthz and /metrics, one more for each issue opened in the repository), GitHub's words
    the only reason given. It is now a recorded skip, as an archived repository's is, saying
    the installation lacks the permission (nothing retried, nothing failed); other
    repositories are untouched."""
    from bot.speaking.decide import act
    from tests.test_actions_e2e import FAILURE, VERL, actions_of, app_comments, install, open_issue

    await install(app_ctx, fake_github)
    fake_github.installations[E2E_INST]["permissions"]["issues"] = "read"
    payload = await open_issue(app_ctx, fake_github, 1)
    out = await act(app_ctx, VERL, 1, trigger="issues.opened", payload=payload, analysis=FAILURE)
    assert out["failure_comment"] == "skipped:not_permitted", out
    assert app_comments(fake_github, VERL, 1) == []
    rows = await actions_of(app_ctx, 1, "failure_comment")
    assert [r.status for r in rows] == ["skipped"], [(r.status, r.reason) for r in rows]
    assert "Issues" in (rows[0].reason or "") and "permission" in (rows[0].reason or "")
    assert len(fake_github.requests("POST", r"/issues/1/comments$")) == 1  # asked once
