"""Preview on installation (issue #6): an installation event, delivered through the app's
router, starts a background task that fetches the repository's recent issues over GraphQL
from the fake GitHub server and stores what the app would have said, in dry run, posting
nothing. On SQLite and PostgreSQL (`db_url` behind the contexts).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import select

from bot.speaking.preview import start_install_preview, wait_background
from bot.store.models import Action, JobRun, Repository, SyncCursor, Thread
from bot.store.threads import upsert_thread
from bot.webhooks.routers import router
from tests.fake_graphql import FakeData, FakeGraphQL

VERL = "verl-project/verl"
INST = 957387  # the installation of the shared `installation/created.json`
# A report the failure model is sure of (the preview is under test here, not the model).
FAILURE_TITLE = "Entropy collapse during GRPO training"
FAILURE_BODY = ("Policy entropy collapses to almost zero after 150 steps and the reward plateaus. "
                "Training keeps running without errors, but the model stops exploring. "
                "Using actor_rollout_ref.actor.ppo_mini_batch_size=256")


def _thread(data: FakeData, at: datetime, kind: str, title: str, body: str) -> dict[str, Any]:
    data.clock = at
    t = data.add_thread(VERL, kind, n_comments=0, closed=False, body=body)
    t["title"] = title
    t["author"] = {"__typename": "User", "login": "alice"}
    t["authorAssociation"] = "NONE"
    return t


@pytest.fixture
def verl_world(fake_github: Any, shared_dir: Path) -> dict[str, Any]:
    """verl on the fake: issues inside and outside the 30-day window, and a pull request."""
    now = datetime.now(UTC)
    data = FakeData(rng=random.Random(5))
    world = {
        "old_failure": _thread(data, now - timedelta(days=60), "issue", FAILURE_TITLE, FAILURE_BODY),
        "old_touched": _thread(data, now - timedelta(days=50), "issue", FAILURE_TITLE, FAILURE_BODY),
        "pull": _thread(data, now - timedelta(days=9), "pull_request", "Fix the docs", "typo"),
        "docs": _thread(data, now - timedelta(days=6), "issue", "Docs: a broken link", "The link 404s."),
        "failure": _thread(data, now - timedelta(days=3), "issue", FAILURE_TITLE, FAILURE_BODY),
    }
    data.clock = now - timedelta(days=2)
    data.touch(VERL, "issue", world["old_touched"]["number"], new_comments=1)  # updated in the window
    fake_github.graphql_handler = FakeGraphQL(
        data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    fake_github.add_installation(INST, "Codertocat", repos=[VERL], account_type="User")
    return world


def created_payload(shared_dir: Path) -> dict[str, Any]:
    """The shared (real) installation.created payload, installed on verl (by its former
    name, as an old installation would list it) next to a repository the app does not track."""
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "installation" / "created.json").read_text())
    payload["repositories"].append({"id": 700001, "node_id": "R_verl", "name": "verl",
                                    "full_name": "volcengine/verl", "private": False})
    return payload


async def deliver(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await router.dispatch(sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


async def rows(ctx: Any, model: Any, *where: Any) -> list[Any]:
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(select(model).where(*where)))


def writes(fake: Any) -> list[Any]:
    """Every call that could change something on GitHub (GraphQL reads and token minting aside)."""
    return [c for c in fake.calls if c.method != "GET"
            and not re.search(r"^/graphql$|/access_tokens$", c.path)]


async def test_installation_created_previews_recent_issues(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    assert await wait_background(app_ctx) == 1

    previews = await rows(app_ctx, Action, Action.kind == "preview")
    assert [(a.repo, a.number, a.status) for a in previews] == [
        (VERL, verl_world["failure"]["number"], "dry_run")]
    assert (previews[0].details or {}).get("category")

    # The sync fetched issues updated in the window only: the old untouched report and the
    # pull request were never asked for; the old report touched recently was stored but,
    # opened before the window, is not previewed.
    stored = {t.number: t for t in await rows(app_ctx, Thread, Thread.repo == VERL)}
    assert set(stored) == {verl_world[k]["number"] for k in ("old_touched", "docs", "failure")}
    assert all(t.kind == "issue" for t in stored.values())
    # It ran with the installation's token and left the backfill/refresh cursors alone.
    graphql = fake_github.requests("POST", r"^/graphql$")
    assert graphql and {c.installation_id for c in graphql} == {INST}
    assert await rows(app_ctx, SyncCursor) == []

    assert writes(fake_github) == []  # dry run by construction: posting is on in app_settings
    assert not fake_github.comments

    [run] = await rows(app_ctx, JobRun, JobRun.name == "install_preview")
    assert run.outcome == "ok" and run.finished_at is not None and run.error is None
    assert run.counts["skipped"] == ["Codertocat/Hello-World"]
    verl = run.counts["repos"][VERL]
    assert verl["sync"] == "ok" and verl["threads"] == 3 and verl["requests"] == len(graphql)
    assert verl["config"] == "defaults"  # no .github/rltracker.yml on the fake
    assert verl["issues"] == 2 and verl["would_comment"] == 1 and run.counts["would_comment"] == 1

    # The repository rows the handler wrote are there (the preview ran after their commit).
    [repo] = await rows(app_ctx, Repository, Repository.full_name == VERL)
    assert repo.installation_id == INST and repo.framework == "verl"


async def test_the_preview_honours_the_repository_config(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    """Maintainers who turned comments off in .github/rltracker.yml see no would-be comment."""
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    assert await wait_background(app_ctx) == 1
    assert await rows(app_ctx, Action, Action.kind == "preview") == []
    [run] = await rows(app_ctx, JobRun, JobRun.name == "install_preview")
    assert run.outcome == "ok" and run.counts["repos"][VERL]["config"] == "file"
    assert run.counts["repos"][VERL]["issues"] == 2 and run.counts["would_comment"] == 0
    [call] = fake_github.requests("GET", r"/contents/\.github/rltracker\.yml")
    assert call.auth == "installation"


async def test_through_the_webhook_and_the_inbox_worker(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    """As in production: the webhook only stores the delivery; the worker's handler starts
    the preview after its commit."""
    from aiohttp.test_utils import TestClient, TestServer

    from bot.app import create_app
    from bot.webhooks.replay import delivery_headers
    from bot.webhooks.worker import Worker

    body = json.dumps(created_payload(shared_dir)).encode()
    async with TestClient(TestServer(create_app(app_ctx, worker=False))) as client:
        resp = await client.post("/webhook", data=body,
                                 headers=delivery_headers("installation", body, "test-secret"))
        assert resp.status == 202
        assert not app_ctx.extras.get("background_tasks")  # nothing started by the request
    assert await Worker(app_ctx, backoff=lambda attempt: 0.0).run_until_idle() == 1
    assert await wait_background(app_ctx) == 1
    previews = await rows(app_ctx, Action, Action.kind == "preview")
    assert [(a.number, a.status) for a in previews] == [(verl_world["failure"]["number"], "dry_run")]
    assert writes(fake_github) == []


async def test_repositories_added_without_github_previews_stored_issues(ctx: Any) -> None:
    """No GitHub client (nothing can be fetched): the preview runs over what is stored."""
    now = datetime.now(UTC)
    async with ctx.sessionmaker() as s:
        for number, title, body, days in ((4, FAILURE_TITLE, FAILURE_BODY, 2),
                                          (5, "Docs: a broken link", "The link 404s.", 1),
                                          (6, FAILURE_TITLE, FAILURE_BODY, 45)):
            await upsert_thread(s, {
                "repo": VERL, "number": number, "kind": "issue", "title": title, "body": body,
                "author": "bob", "state": "open",
                "created_at": (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")})
        await s.commit()
    payload = {
        "action": "added", "repository_selection": "selected",
        "installation": {"id": 77, "account": {"login": "verl-project", "type": "Organization"}},
        "repositories_added": [{"id": 9, "full_name": VERL}, {"id": 10, "full_name": "verl-project/site"}],
        "repositories_removed": [], "sender": {"login": "admin", "type": "User"},
    }
    await deliver(ctx, "installation_repositories", payload)
    assert await wait_background(ctx) == 0  # nothing to fetch: previewed in the handler

    previews = await rows(ctx, Action, Action.kind == "preview")
    assert [(a.number, a.status) for a in previews] == [(4, "dry_run")]
    [run] = await rows(ctx, JobRun, JobRun.name == "install_preview")
    assert run.outcome == "ok"
    assert run.counts["repos"][VERL]["sync"] == "skipped: no GitHub client"
    assert run.counts["skipped"] == ["verl-project/site"]
    # Delivered again: previewed again, still one action per issue.
    await deliver(ctx, "installation_repositories", payload)
    assert len(await rows(ctx, Action, Action.kind == "preview")) == 1
    assert len(await rows(ctx, JobRun, JobRun.name == "install_preview")) == 2
    # In the background (as with a client), a second request for a repository whose preview
    # is under way (a redelivered event) is left to the running task.
    assert start_install_preview(ctx, [VERL, "verl-project/site"]) is not None
    assert start_install_preview(ctx, ["volcengine/verl"]) is None
    assert await wait_background(ctx) == 1
    assert await wait_background(ctx) == 0
    assert len(await rows(ctx, JobRun, JobRun.name == "install_preview", JobRun.outcome == "ok")) == 3


async def test_untracked_repositories_start_nothing(ctx: Any, shared_dir: Path) -> None:
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "installation" / "created.json").read_text())
    await deliver(ctx, "installation", payload)
    assert await wait_background(ctx) == 0
    assert await rows(ctx, JobRun) == []


async def test_a_failing_sync_is_recorded_and_the_preview_still_runs(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    fake_github.fail_next("POST", r"^/graphql$", 500, times=50)
    await deliver(app_ctx, "installation", created_payload(shared_dir))  # the handler does not raise
    assert await wait_background(app_ctx) == 1
    [run] = await rows(app_ctx, JobRun, JobRun.name == "install_preview")
    assert run.outcome == "failed" and VERL in (run.error or "")
    assert run.counts["repos"][VERL]["sync"].startswith("failed")
    assert run.counts["repos"][VERL]["issues"] == 0  # previewed what was stored: nothing
    assert await rows(app_ctx, Action, Action.kind == "preview") == []
    assert writes(fake_github) == []


async def test_shutdown_cancels_a_task_that_outlives_the_grace(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    answer = fake_github.graphql_handler
    reached = asyncio.Event()
    release = asyncio.Event()

    async def slow(query: str, variables: dict[str, Any]) -> Any:
        reached.set()
        await release.wait()  # GitHub never answers before the shutdown
        return answer(query, variables)

    fake_github.graphql_handler = slow
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    await reached.wait()
    assert await wait_background(app_ctx, grace=0) == 1
    release.set()
    [run] = await rows(app_ctx, JobRun, JobRun.name == "install_preview")
    assert run.outcome == "failed" and run.error == "cancelled (shutdown)"
    assert await rows(app_ctx, Action, Action.kind == "preview") == []


async def test_a_failing_config_read_is_recorded_as_failed(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    """GitHub failing the read of .github/rltracker.yml (the sync went through): the preview
    ran with the defaults and the run was recorded "ok" with would-be comments, although
    the repository may have turned them off: a failure, said so."""
    fake_github.set_file(VERL, ".github/rltracker.yml", "failure_comments: false\n")
    fake_github.fail_next("GET", r"/contents/\.github/rltracker\.yml", 500, times=50)
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    assert await wait_background(app_ctx) == 1
    [run] = await rows(app_ctx, JobRun, JobRun.name == "install_preview")
    assert run.outcome == "failed" and f"{VERL} config" in (run.error or "")
    assert run.counts["repos"][VERL]["config"].startswith("failed")
    assert writes(fake_github) == []


async def test_the_page_says_when_the_install_preview_could_not_read_github(
    app_ctx: Any, fake_github: Any, verl_world: dict[str, Any], shared_dir: Path
) -> None:
    """The page showed the preview of what was stored with no word that the installation's
    reads had failed, so a silence read as "would say nothing": it now says what failed."""
    from aiohttp.test_utils import TestClient, TestServer

    from tests.test_preview import _preview_app

    # (the settings read's first request: .github/'s listing, since left64)
    fake_github.fail_next("GET", r"/contents/\.github", 500, times=50)
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    assert await wait_background(app_ctx) == 1
    async with TestClient(TestServer(_preview_app(app_ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview")).text()
    assert "The install preview could not read everything from GitHub" in html
    assert "config: failed: " in html
    # a later run that read everything: no such word
    fake_github._failures.clear()  # GitHub answers again
    await deliver(app_ctx, "installation", created_payload(shared_dir))
    assert await wait_background(app_ctx) == 1
    async with TestClient(TestServer(_preview_app(app_ctx))) as client:
        html = await (await client.get(f"/repos/{VERL}/preview")).text()
    assert "could not read everything" not in html


async def test_the_install_preview_asks_the_same_statements_for_3_times_the_issues(ctx: Any) -> None:
    """The install preview of stored issues read each issue's comments one query each, and
    stored each would-be comment in four statements of its own (the repository's privacy lock,
    the look-up of its key, the insert; or the update when previewed again): 4 issues took 42,
    12 issues 102. Now as many statements for 12 issues as for 4, on the first preview and on
    the next (its actions updated), and each action holds what the preview says. Counted in SQL
    statements (`benchmarks.site_scale.counting`), not time. Failure reports only: a method
    proposal's rule-summary decision still reads its own rows (docs/history/github-journal.md, leftc66)."""
    from benchmarks.site_scale import counting
    from bot.speaking.preview import compute_preview, install_preview
    from bot.store.models import Comment
    from tests.test_preview_parity import FAILURE, installed, opened

    statements: dict[str, list[int]] = {}
    for repo, issues in ((VERL, 4), ("huggingface/trl", 12)):
        await installed(ctx, repo=repo, framework=repo.split("/")[1])
        for number in range(1, issues + 1):
            await opened(ctx, number, FAILURE, repo=repo, title=f"issue {number}")
        async with ctx.sessionmaker() as s:  # a reply on each: read with its issue
            for t in await s.scalars(select(Thread).where(Thread.repo == repo)):
                s.add(Comment(thread_id=t.id, kind="comment", github_id=t.id * 10,
                              author="bob", body="same here"))
            await s.commit()
        for _ in range(2):  # stored, then previewed again (its actions updated)
            with counting(ctx.engine) as seen:
                await install_preview(ctx, [repo])
            statements.setdefault(repo, []).append(len(seen))
        preview = await compute_preview(ctx, repo)
        stored = {a.number: a.body for a in await rows(ctx, Action, Action.kind == "preview",
                                                       Action.repo == repo)}
        assert len(preview["comments"]) == issues
        assert stored == {c["number"]: c["body"] for c in preview["comments"]}
    assert statements[VERL] == statements["huggingface/trl"], statements
