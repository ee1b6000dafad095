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

import pytest
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
    fake_github.private_repos = {SECRET.lower()}  # (the handler asks GitHub)
    await handle_repository(privatized, app_ctx)
    assert (await _row(app_ctx, SECRET)).private and await _threads(app_ctx, OPEN) == 1
    # Meanwhile on GitHub: SECRET public again, OPEN private; neither event arrives.
    fake_github.private_repos = {OPEN.lower()}

    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert not (await _row(app_ctx, SECRET)).private
    assert (await _row(app_ctx, OPEN)).private
    assert await _threads(app_ctx, OPEN) == 0
    assert result["counts"]["sync"]["visibility"] == {
        "installations": 1, "publicized": [SECRET], "privatized": [OPEN], "failed": [],
        "unlisted": {"asked": 0, "left": 0}}
    # tracked again: a later delivery of SECRET is stored
    later = envelope("opened", SECRET, installation=INST, issue=issue(4, title="Public again"))
    later["repository"]["id"] = 901  # (the envelope's default id is OPEN's)
    await events.handle("issues", later, app_ctx)
    assert await _threads(app_ctx, SECRET) == 1
    # and a night with nothing to change changes nothing
    again = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert again["counts"]["sync"]["visibility"] == {
        "installations": 1, "publicized": [], "privatized": [], "failed": [],
        "unlisted": {"asked": 0, "left": 0}}


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
    fake_github.private_repos = {SECRET.lower()}  # (the handler asks GitHub)
    await handle_repository(privatized, app_ctx)
    fake_github.private_repos = set()  # public again since

    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert not (await _row(app_ctx, SECRET)).private
    assert result["counts"]["sync"]["visibility"] == {
        "installations": 2, "publicized": [SECRET], "privatized": [], "failed": [56],
        "unlisted": {"asked": 0, "left": 0}}


# ---- a repository no installation lists any more (privacy61) --------------------------------
HELLO = "octocat/Hello-World"  # the shared installation fixtures' repository
HELLO_ID = 1296269
KEPT = "octocat/still-public"
KEPT_ID = 4242


def _fixture(shared_dir: Path, event: str, action: str) -> dict[str, Any]:
    import json

    payload = json.loads((shared_dir / "fixtures" / "webhooks" / event / f"{action}.json").read_text())
    payload["installation"]["id"] = INST
    return payload


def _github_shows(fake_github: Any, answers: dict[int, Any]) -> None:
    """GET /repositories/{id} as GitHub answers anyone: the repository (`answers[id]` a name,
    public), or 404 (private to whoever asks, or deleted); a number answers that status."""
    @fake_github.route("GET", r"/repositories/(?P<id>\d+)")
    def by_id(fake: Any, request: Any, match: Any, body: Any) -> Any:
        answer = answers.get(int(match["id"]))
        if isinstance(answer, int):
            return answer, {"message": "Server Error"}
        if answer is None:
            return 404, {"message": "Not Found"}
        return {**fake.repo_json(answer), "id": int(match["id"])}


async def _lose(app_ctx: Any, fake_github: Any, shared_dir: Path, how: str) -> None:
    """The app loses HELLO: removed from the installation, or the installation uninstalled
    or suspended (GitHub sends no event of the repository after that)."""
    from bot.webhooks.installations import handle_installation, handle_installation_repositories

    if how == "removed":
        fake_github.installations[INST]["repositories"].remove(HELLO)
        await handle_installation_repositories(
            _fixture(shared_dir, "installation_repositories", "removed"), app_ctx)
    elif how == "uninstalled":
        fake_github.remove_installation(INST)
        await handle_installation(_fixture(shared_dir, "installation", "deleted"), app_ctx)
    else:
        fake_github.suspend_installation(INST)
        await handle_installation(_fixture(shared_dir, "installation", "suspend"), app_ctx)


async def _opened_in(app_ctx: Any, repo: str, rid: int, number: int) -> None:
    payload = envelope("opened", repo, installation=INST, issue=issue(number, title=f"On {repo}"))
    payload["repository"]["id"] = rid
    await events.handle("issues", payload, app_ctx)


async def _night(app_ctx: Any, fake_github: Any, shared_dir: Path) -> dict[str, Any]:
    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(2, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    return result["counts"]["sync"]["visibility"]


@pytest.mark.parametrize("how", ["removed", "uninstalled", "suspended"])
async def test_a_repository_made_private_after_the_app_lost_it_is_forgotten_at_night(
        app_ctx: Any, fake_github: Any, shared_dir: Path, how: str) -> None:
    """The app loses two public repositories with a thread each; on GitHub one is then made
    private (anyone asking is answered 404), the other stays public. On main the night
    listed installations only: the private one's thread stayed published for good. Now it
    is forgotten and marked; the public one's data stays."""
    await install_app(app_ctx, fake_github, INST, "octocat", [HELLO, KEPT])
    await _opened_in(app_ctx, HELLO, HELLO_ID, 3)
    await _opened_in(app_ctx, KEPT, KEPT_ID, 4)
    await _lose(app_ctx, fake_github, shared_dir, how)
    _github_shows(fake_github, {KEPT_ID: KEPT})

    visibility = await _night(app_ctx, fake_github, shared_dir)
    assert await _threads(app_ctx, HELLO) == 0, "the private repository's thread is published"
    assert (await _row(app_ctx, HELLO)).private
    assert await _threads(app_ctx, KEPT) == 1 and not (await _row(app_ctx, KEPT)).private
    assert visibility["privatized"] == [HELLO] and visibility["publicized"] == []
    # (removed: KEPT is still listed by the installation, and not asked)
    assert visibility["unlisted"] == {"asked": 1 if how == "removed" else 2, "left": 0}


async def test_a_marked_repository_the_app_lost_loses_its_mark_when_github_shows_it_public(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """A repository made private (marked), then removed from the installation, then made
    public on GitHub: on main it stayed marked for good. A night GitHub does not answer
    (5xx) changes nothing and says the repository was left for the next night."""
    await install_app(app_ctx, fake_github, INST, "octocat", [HELLO])
    privatized = envelope("privatized", HELLO, installation=INST)
    privatized["repository"].update(id=HELLO_ID, private=True, visibility="private")
    fake_github.private_repos = {HELLO.lower()}  # (the handler asks GitHub)
    await handle_repository(privatized, app_ctx)
    fake_github.private_repos = set()
    await _lose(app_ctx, fake_github, shared_dir, "removed")
    answers: dict[int, Any] = {HELLO_ID: 502}
    _github_shows(fake_github, answers)

    visibility = await _night(app_ctx, fake_github, shared_dir)
    assert (await _row(app_ctx, HELLO)).private
    assert visibility["unlisted"] == {"asked": 0, "left": 1}

    answers[HELLO_ID] = HELLO
    visibility = await _night(app_ctx, fake_github, shared_dir)
    assert not (await _row(app_ctx, HELLO)).private
    assert visibility["publicized"] == [HELLO]
    assert visibility["unlisted"] == {"asked": 1, "left": 0}


async def test_a_refused_installations_repository_made_private_is_forgotten_too(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """The app uninstalled at GitHub with its `deleted` event lost: the installation's listing
    is refused every night. Its repository, made private since, is asked of GitHub as
    anyone may all the same (the answer does not depend on the installation)."""
    await install_app(app_ctx, fake_github, INST, "octocat", [HELLO])
    await _opened_in(app_ctx, HELLO, HELLO_ID, 3)
    fake_github.remove_installation(INST)
    _github_shows(fake_github, {})  # not found: private, or deleted

    visibility = await _night(app_ctx, fake_github, shared_dir)
    assert visibility["failed"] == [INST] and visibility["privatized"] == [HELLO]
    assert await _threads(app_ctx, HELLO) == 0 and (await _row(app_ctx, HELLO)).private


async def test_a_night_whose_visibility_check_could_not_list_an_installation_says_so(
        app_ctx: Any, fake_github: Any, shared_dir: Path) -> None:
    """The visibility check could not list an installation's repositories (GitHub refused
    it): a repository of it made private while its event was lost stays published until a
    later night lists it, and the night recorded `ok`, the installation named only deep in
    the counts. The night is `partial` and its error names the installation (sync62; the
    fake holds none of the seven repositories, so the night is partial for them too)."""
    fake_github.graphql_handler = FakeGraphQL(FakeData.generate(2, seed=5, long_every=0),
                                              shared_dir / "fixtures" / "github-api" / "schema.graphql")
    await install_app(app_ctx, fake_github, INST, "someorg", [SECRET])
    await install_app(app_ctx, fake_github, 56, "otherorg", ["otherorg/gone"])
    fake_github.remove_installation(56)
    result = await nightly_job(app_ctx, steps=[("sync", step_sync)])
    assert result["counts"]["sync"]["visibility"]["failed"] == [56]
    assert result["outcome"] == "partial"
    from bot.store.models import JobRun

    async with app_ctx.sessionmaker() as session:
        row = await session.get(JobRun, result["run_id"])
    assert row is not None and "installation(s) 56" in (row.error or "")
