"""bot.webhooks.installations: installation events keep the Installation and Repository tables right."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.store.models import Installation, Repository
from bot.webhooks import installations
from bot.webhooks.normalize import PayloadError


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await installations.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx
    )


def load(shared: Path, name: str) -> dict[str, Any]:
    return json.loads((shared / "fixtures" / "webhooks" / name).read_text())


async def rows(ctx: Any) -> tuple[dict[int, Installation], dict[str, Repository]]:
    async with ctx.sessionmaker() as session:
        insts = {i.id: i for i in await session.scalars(select(Installation))}
        repos = {r.full_name: r for r in await session.scalars(select(Repository))}
    return insts, repos


def payload(action: str, iid: int = 31, account: str = "verl-project", **extra: Any) -> dict[str, Any]:
    return {
        "action": action,
        "installation": {"id": iid, "account": {"login": account, "type": "Organization"},
                         "target_type": "Organization", "suspended_at": None},
        "sender": {"login": "admin", "type": "User"},
        **extra,
    }


async def test_every_shared_installation_payload(ctx: Any, shared_dir: Path):
    base = shared_dir / "fixtures" / "webhooks"
    files = sorted((base / "installation").glob("*.json")) + sorted(
        (base / "installation_repositories").glob("*.json")
    )
    assert len(files) == 8
    for path in files:
        await dispatch(ctx, path.parent.name, json.loads(path.read_text()))
    insts, repos = await rows(ctx)
    assert insts[957387].account == "Codertocat" and insts[957387].account_type == "User"
    assert insts[957387].deleted is False
    assert insts[2].deleted is True
    assert insts[16598467].suspended is False  # suspend, then unsuspend
    assert repos["Codertocat/Hello-World"].installation_id == 957387
    assert repos["Codertocat/Space"].installation_id == 957387  # added
    assert repos["octocat/Hello-World"].installation_id is None  # removed / deleted


async def test_created_then_suspend_unsuspend_delete(ctx: Any, shared_dir: Path):
    await dispatch(ctx, "installation", load(shared_dir, "installation/created.json"))
    insts, repos = await rows(ctx)
    assert insts[957387].suspended is False
    assert repos["Codertocat/Hello-World"].github_id == 186853002

    suspend = load(shared_dir, "installation/created.json")
    suspend["action"] = "suspend"
    suspend["installation"]["suspended_at"] = "2025-01-01T00:00:00Z"
    await dispatch(ctx, "installation", suspend)
    assert (await rows(ctx))[0][957387].suspended is True
    suspend["action"] = "unsuspend"
    suspend["installation"]["suspended_at"] = None
    await dispatch(ctx, "installation", suspend)
    assert (await rows(ctx))[0][957387].suspended is False

    deleted = load(shared_dir, "installation/created.json")
    deleted["action"] = "deleted"
    await dispatch(ctx, "installation", deleted)
    insts, repos = await rows(ctx)
    assert insts[957387].deleted is True
    assert repos["Codertocat/Hello-World"].installation_id is None
    # Reinstalled later (times after the uninstall): the same rows come back to life. The
    # same `created` payload again is a stale one and stays uninstalled
    # (test_installation_order.py).
    again = load(shared_dir, "installation/created.json")
    again["installation"].update(created_at=1735689600, updated_at=1735689600)
    await dispatch(ctx, "installation", again)
    insts, repos = await rows(ctx)
    assert insts[957387].deleted is False
    assert repos["Codertocat/Hello-World"].installation_id == 957387
    assert len(repos) == 1


async def test_framework_and_canonical_names_from_the_catalog(ctx: Any):
    await dispatch(ctx, "installation", payload("created", repositories=[
        {"id": 1, "full_name": "volcengine/verl"},
        {"id": 2, "full_name": "inclusionAI/AReaL"},
        {"id": 3, "full_name": "verl-project/verl-recipes"},
    ]))
    _, repos = await rows(ctx)
    assert repos["verl-project/verl"].framework == "verl"
    assert repos["areal-project/AReaL"].framework == "areal"
    assert repos["verl-project/verl-recipes"].framework is None
    assert {r.installation_id for r in repos.values()} == {31}


async def test_repositories_added_and_removed(ctx: Any):
    await dispatch(ctx, "installation_repositories", payload(
        "added", repositories_added=[{"id": 10, "full_name": "THUDM/slime"}], repositories_removed=[]))
    await dispatch(ctx, "installation_repositories", payload(
        "added", iid=32, account="alibaba",
        repositories_added=[{"id": 11, "full_name": "alibaba/ROLL"}], repositories_removed=[]))
    # Removing slime from installation 32 (which never had it) leaves installation 31's link.
    await dispatch(ctx, "installation_repositories", payload(
        "removed", iid=32, account="alibaba",
        repositories_added=[], repositories_removed=[{"id": 10, "full_name": "THUDM/slime"}]))
    _, repos = await rows(ctx)
    assert repos["THUDM/slime"].installation_id == 31
    assert repos["alibaba/ROLL"].installation_id == 32 and repos["alibaba/ROLL"].framework == "roll"
    await dispatch(ctx, "installation_repositories", payload(
        "removed", repositories_added=[], repositories_removed=[{"id": 10, "full_name": "THUDM/slime"}]))
    _, repos = await rows(ctx)
    assert repos["THUDM/slime"].installation_id is None


async def test_renamed_repository_keeps_its_row(ctx: Any):
    await dispatch(ctx, "installation_repositories", payload(
        "added", repositories_added=[{"id": 10, "full_name": "someone/old-name"}], repositories_removed=[]))
    await dispatch(ctx, "installation_repositories", payload(
        "added", repositories_added=[{"id": 10, "full_name": "someone/new-name"}], repositories_removed=[]))
    _, repos = await rows(ctx)
    assert list(repos) == ["someone/new-name"]


async def test_account_renamed(ctx: Any):
    await dispatch(ctx, "installation", payload("created", repositories=[]))
    await dispatch(ctx, "installation_target", {
        "action": "renamed", "installation": {"id": 31},
        "account": {"login": "verl-org", "type": "Organization"},
        "changes": {"login": {"from": "verl-project"}}, "target_type": "Organization",
    })
    insts, _ = await rows(ctx)
    assert insts[31].account == "verl-org"


@pytest.mark.parametrize(
    "event, body",
    [
        ("installation", {"action": "created"}),
        ("installation", {"action": "created", "installation": {"id": "31"}}),
        ("installation_repositories", {"action": "added", "installation": {"id": 31},
                                       "repositories_added": [{"id": 1}]}),
    ],
)
async def test_incomplete_payloads_raise(ctx: Any, event: str, body: dict[str, Any]):
    with pytest.raises(PayloadError):
        await dispatch(ctx, event, body)
    insts, repos = await rows(ctx)
    assert insts == {} and repos == {}


async def test_suspend_drops_the_cached_token(app_ctx: Any, fake_github: Any):
    """A suspended installation's token is dead: the next use fetches a new one."""
    fake_github.add_installation(31, "verl-project", ["verl-project/verl"])
    await app_ctx.github.installation_token(31)
    await app_ctx.github.installation_token(31)
    assert len(fake_github.requests("POST", r"/access_tokens$")) == 1
    await dispatch(app_ctx, "installation", payload("suspend"))
    await dispatch(app_ctx, "installation", payload("unsuspend"))
    await app_ctx.github.installation_token(31)
    assert len(fake_github.requests("POST", r"/access_tokens$")) == 2


@pytest.mark.parametrize("action", ["suspend", "deleted"])
async def test_no_comment_through_a_suspended_or_uninstalled_installation(
        app_ctx: Any, fake_github: Any, action: str):
    """Deliveries queued before a suspend or an uninstall are still processed: the app asked
    GitHub for a token (refused: 403 for a suspended installation, 404 once deleted) and
    failed each such delivery five times. Now it tracks the thread and stays quiet; after
    `unsuspend` it speaks again."""
    from bot.speaking.decide import act
    from bot.webhooks.commands import handle_command
    from tests.test_actions_e2e import FAILURE, INST, VERL, install, open_issue
    from tests.test_commands import comment_event

    await install(app_ctx, fake_github)
    event = payload(action, iid=INST)
    if action == "suspend":
        event["installation"]["suspended_at"] = "2026-12-01T00:00:00Z"
        fake_github.suspend_installation(INST)
    else:
        del fake_github.installations[INST]
    await dispatch(app_ctx, "installation", event)
    issue = await open_issue(app_ctx, fake_github, 41)
    # (recorded since user82: an edit after the unsuspend does not post it then)
    assert await act(app_ctx, VERL, 41, trigger="issues.opened", payload=issue,
                     analysis=FAILURE) == {"failure_comment": "skipped:suspended"}
    command = comment_event("/rltracker methods entropy_collapse", number=41)
    assert await handle_command(command, app_ctx) == "not_installed"
    assert not fake_github.requests("POST")  # no token asked for, nothing posted
    if action == "deleted":
        return
    fake_github.installations[INST]["suspended_at"] = None
    await dispatch(app_ctx, "installation", payload("unsuspend", iid=INST,
                                                    repositories=[{"full_name": VERL, "id": 1}]))
    out = await act(app_ctx, VERL, 41, trigger="issues.opened", payload=issue, analysis=FAILURE)
    assert out["failure_comment"] == "posted"
    assert await handle_command(command, app_ctx) == "posted"


async def test_a_repository_removed_from_an_active_installation_is_not_spoken_in(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """GitHub's installation_repositories `removed` payload, then deliveries of that
    repository still naming the installation (queued before the removal, or redelivered
    after it), through POST /webhook and the worker. The delivery put the installation back
    on the repository row, so the app asked for the installation's token, tried to comment
    (GitHub: 403 "Resource not accessible by integration") and failed the delivery, and the
    nightly sync went through the installation. Now the thread is tracked, nothing is asked
    of GitHub, and only `repositories_added` makes it installed again."""
    from datetime import UTC, datetime

    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.speaking.render import FAILURE_MARKER
    from bot.store.models import Thread
    from bot.webhooks.replay import delivery_headers
    from bot.webhooks.worker import Worker
    from tests.test_actions_e2e import BODY, INST, VERL, install

    await install(app_ctx, fake_github)
    base = shared_dir / "fixtures" / "webhooks"
    removed = load(shared_dir, "installation_repositories/removed.json")
    removed["installation"]["id"] = INST
    removed["repositories_removed"] = [{"id": 1, "full_name": VERL, "name": "verl"}]
    fake_github.installations[INST]["repositories"] = []  # what GitHub now holds
    opened = json.loads((base / "issues" / "opened.json").read_text())
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    opened["repository"].update(full_name=VERL, name="verl", id=1)
    opened["installation"] = {"id": INST}
    opened["issue"].update(number=51, title="Entropy collapse in GRPO run", body=BODY,
                           created_at=now, updated_at=now)
    fake_github.add_issue(VERL, 51, opened["issue"]["title"], BODY, opened["issue"]["user"]["login"],
                          created_at=now)
    comment = json.loads((base / "issue_comment" / "created.with-installation.json").read_text())
    comment["repository"].update(full_name=VERL, name="verl", id=1)
    comment["installation"]["id"] = INST
    comment["issue"].update(number=51, user=opened["issue"]["user"])
    comment["comment"].update(body="/rltracker methods entropy_collapse",
                              user=opened["issue"]["user"])
    worker = Worker(app_ctx, backoff=lambda attempt: 0.0)

    async def deliver(client: TestClient, event: str, data: dict[str, Any], delivery: str) -> None:
        body = json.dumps(data).encode()
        headers = delivery_headers(event, body, app_ctx.settings.webhook_secret, delivery)
        assert (await client.post("/webhook", data=body, headers=headers)).status == 202
        assert await worker.run_until_idle() == 1

    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        await deliver(client, "installation_repositories", removed, "r1")
        await deliver(client, "issues", opened, "o1")
        await deliver(client, "issue_comment", comment, "c1")
        assert worker.counts["done"] == 3 and worker.counts["failed"] == 0
        assert not fake_github.requests("POST")  # no token asked for, nothing posted
        _, repos = await rows(app_ctx)
        assert repos[VERL].installation_id is None and repos[VERL].removed_installation_id == INST
        async with app_ctx.sessionmaker() as s:  # tracked all the same
            assert await s.scalar(select(Thread.title).where(Thread.number == 51)) == opened["issue"]["title"]

        # added back: installed again, and the next delivery speaks
        added = load(shared_dir, "installation_repositories/added.json")
        added["installation"]["id"] = INST
        added["repositories_added"] = [{"id": 1, "full_name": VERL, "name": "verl"}]
        fake_github.installations[INST]["repositories"] = [VERL]
        await deliver(client, "installation_repositories", added, "a1")
        _, repos = await rows(app_ctx)
        assert repos[VERL].installation_id == INST and repos[VERL].removed_installation_id is None
        comment["comment"]["id"] += 1
        await deliver(client, "issue_comment", comment, "c2")
    assert worker.counts["failed"] == 0
    posted = [c["body"] for c in fake_github.comments_of(VERL, 51)]
    assert len(posted) == 1 and FAILURE_MARKER not in posted[0]  # the reply to the command


async def test_a_repository_moved_to_another_installation_takes_it(ctx: Any) -> None:
    """Removed from installation 31, the repository's deliveries through installation 32
    (the repository moved to an account that has the app) make it installed there."""
    await dispatch(ctx, "installation_repositories", payload(
        "added", iid=31, repositories_added=[{"full_name": "verl-project/verl", "id": 5}]))
    await dispatch(ctx, "installation_repositories", payload(
        "removed", iid=31, repositories_removed=[{"full_name": "verl-project/verl", "id": 5}]))
    async with ctx.sessionmaker() as session:
        await installations.upsert_repository(session, "verl-project/verl", github_id=5,
                                              installation_id=31)
        await session.commit()
    repo = (await rows(ctx))[1]["verl-project/verl"]
    assert (repo.installation_id, repo.removed_installation_id) == (None, 31)
    async with ctx.sessionmaker() as session:
        await installations.ensure_installation(session, 32)
        await installations.upsert_repository(session, "verl-project/verl", github_id=5,
                                              installation_id=32)
        await session.commit()
    repo = (await rows(ctx))[1]["verl-project/verl"]
    assert (repo.installation_id, repo.removed_installation_id) == (32, None)


@pytest.mark.parametrize("action", ["deleted", "suspend"])
async def test_an_uninstall_or_suspend_event_drops_the_clients_repository_mapping(
        app_ctx: Any, fake_github: Any, action: str) -> None:
    """The client keeps the repository -> installation mapping an hour, and each
    installation's cached responses. `installation.deleted` / `suspend` dropped only the
    token: a repository reinstalled at once (a new installation id) was still mapped to the
    old id for up to an hour, and the old installation's ETag entries stayed. The event now
    drops all of it (`forget_installation`), so the next look-up asks GitHub."""
    client = app_ctx.github
    fake_github.add_installation(31, "verl-project", ["verl-project/verl"])
    assert await client.installation_for_repo("verl-project/verl") == 31
    gh = await client.api(31)
    await gh.getitem("/repos/verl-project/verl")  # an answer cached for installation 31
    before = client.cached_responses  # (the app's own answers among them)
    # Uninstalled (or suspended) and installed again as 32 before the hour is out.
    del fake_github.installations[31]
    fake_github.add_installation(32, "verl-project", ["verl-project/verl"])
    event = payload(action)
    if action == "suspend":
        event["installation"]["suspended_at"] = "2026-12-01T00:00:00Z"
    await dispatch(app_ctx, "installation", event)
    assert client.cached_responses == before - 1  # installation 31's answer is gone
    assert await client.installation_for_repo("verl-project/verl") == 32
    assert len(fake_github.requests("GET", r"/repos/verl-project/verl/installation$")) == 2


async def test_a_suspended_installations_refusal_is_remembered(
        app_ctx: Any, fake_github: Any, monkeypatch: Any) -> None:
    """Suspended at GitHub before its `suspend` event is handled (or with the event lost),
    every request through the installation asked GitHub for a token, and every one was
    refused (403): one token request per job, per retry. The refusal is remembered for a
    while (SUSPENDED_REFUSAL_TTL), or until an `unsuspend` event, when it is asked again."""
    import gidgethub

    from bot.github import client as client_module

    client = app_ctx.github
    fake_github.add_installation(31, "verl-project", ["verl-project/verl"])
    fake_github.suspend_installation(31)
    for _ in range(3):
        with pytest.raises(gidgethub.BadRequest) as refused:
            gh = await client.api(31)
            await gh.getitem("/repos/verl-project/verl/issues/1")
        assert refused.value.status_code == 403
    assert len(fake_github.requests("POST", r"/installations/31/access_tokens$")) == 1
    assert not fake_github.requests("GET", r"/issues/1$")
    # Unsuspended: the event lets the next request ask again, and it goes through.
    fake_github.installations[31]["suspended_at"] = None
    await dispatch(app_ctx, "installation", payload("unsuspend"))
    assert await client.installation_token(31)
    assert len(fake_github.requests("POST", r"/installations/31/access_tokens$")) == 2
    # Without an event, the refusal is asked again once it is old enough.
    fake_github.suspend_installation(31)
    client.invalidate_token(31)
    monkeypatch.setattr(client_module, "SUSPENDED_REFUSAL_TTL", 0.0, raising=False)
    for _ in range(2):
        with pytest.raises(gidgethub.BadRequest):
            await client.installation_token(31)
    assert len(fake_github.requests("POST", r"/installations/31/access_tokens$")) == 4


async def test_an_uninstall_after_a_remembered_refusal_is_learned_at_once(
        app_ctx: Any, fake_github: Any) -> None:
    """A suspended installation uninstalled: its `deleted` event ends the remembered 403, so
    the next request learns it is gone (InstallationGone, 410) instead of being told for five
    minutes that it is suspended."""
    from bot.github.client import InstallationGone

    client = app_ctx.github
    fake_github.add_installation(31, "verl-project", ["verl-project/verl"])
    fake_github.suspend_installation(31)
    with pytest.raises(Exception) as refused:  # noqa: B017
        await client.installation_token(31)
    assert getattr(refused.value, "status_code", None) == 403
    del fake_github.installations[31]
    await dispatch(app_ctx, "installation", payload("deleted"))
    with pytest.raises(InstallationGone):
        await client.installation_token(31)
    assert len(fake_github.requests("POST", r"/installations/31/access_tokens$")) == 2
