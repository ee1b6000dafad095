"""A lost `repository.publicized` (or `privatized`) is caught up at night (review59).

The stored mark `repositories.private` changed only with the `repository` event (or with the
sync of a tracked repository, which asks GraphQL `isPrivate`). A repository outside the seven
made public again while its `publicized` delivery was lost (GitHub gave up on it; the
recovery lists a day) stayed marked, and nothing of it was stored until its next event of
that kind; one made private while `privatized` was lost kept its threads. The nightly sync now
lists each installation's repositories (GET /installation/repositories, the `private` GitHub
gives each) and brings the marks in line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import func, select

from bot.scheduler import nightly_job, step_sync
from bot.store.models import Repository, Thread
from bot.webhooks import events
from bot.webhooks.privacy import handle_repository
from tests.fake_graphql import FakeData, FakeGraphQL
from tests.fakegithub import install_app
from tests.test_events import envelope, issue

SECRET = "someorg/was-private"  # made public again: its `publicized` was lost
OPEN = "someorg/now-private"  # made private: its `privatized` was lost
INST = 55


async def _row(ctx: Any, name: str) -> Repository:
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(
            func.lower(Repository.full_name) == name.lower()))
    assert row is not None
    return row


async def _threads(ctx: Any, name: str) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(Thread).where(
            func.lower(Thread.repo) == name.lower())) or 0)


async def test_the_nightly_sync_catches_up_a_lost_publicized_and_privatized(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """On main the night changed neither: the repository made public again stayed marked
    (its next delivery stored nothing), the one made private kept its thread."""
    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(2, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    await install_app(app_ctx, fake_github, INST, "someorg", [SECRET, OPEN])
    await events.handle("issues", envelope("opened", OPEN, installation=INST,
                                           issue=issue(3, title="Public for now")), app_ctx)
    privatized = envelope("privatized", SECRET, installation=INST)
    privatized["repository"].update(id=901, private=True, visibility="private")
    await handle_repository(privatized, app_ctx)
    assert (await _row(app_ctx, SECRET)).private and await _threads(app_ctx, OPEN) == 1
    # Meanwhile on GitHub: SECRET public again, OPEN private; neither event arrives.
    fake_github.private_repos = {OPEN.lower()}

    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert not (await _row(app_ctx, SECRET)).private
    assert (await _row(app_ctx, OPEN)).private
    assert await _threads(app_ctx, OPEN) == 0
    assert result["counts"]["sync"]["visibility"] == {
        "installations": 1, "publicized": [SECRET], "privatized": [OPEN], "failed": []}
    # tracked again: a later delivery of SECRET is stored
    later = envelope("opened", SECRET, installation=INST, issue=issue(4, title="Public again"))
    later["repository"]["id"] = 901  # (the envelope's default id is OPEN's)
    await events.handle("issues", later, app_ctx)
    assert await _threads(app_ctx, SECRET) == 1
    # and a night with nothing to change changes nothing
    again = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert again["counts"]["sync"]["visibility"] == {
        "installations": 1, "publicized": [], "privatized": [], "failed": []}


async def test_an_installation_github_refuses_is_named_and_the_others_checked(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """An installation whose listing GitHub refuses (here: uninstalled at GitHub, no event
    yet) is named in the night's counts; the others are checked all the same."""
    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(2, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    await install_app(app_ctx, fake_github, INST, "someorg", [SECRET])
    await install_app(app_ctx, fake_github, 56, "otherorg", ["otherorg/gone"])
    fake_github.remove_installation(56)
    privatized = envelope("privatized", SECRET, installation=INST)
    privatized["repository"].update(id=901, private=True, visibility="private")
    await handle_repository(privatized, app_ctx)

    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert not (await _row(app_ctx, SECRET)).private
    assert result["counts"]["sync"]["visibility"] == {
        "installations": 2, "publicized": [SECRET], "privatized": [], "failed": [56]}
