"""`repository.privatized` and `publicized` handled out of the order GitHub sent them
(privacy61).

GitHub does not promise delivery order, a failed delivery is redelivered later (the nightly
recovery, GitHub's "Redeliver"), and a retried one comes after the deliveries queued behind
it. On main the handler did what the payload said, whenever it came: a `privatized`
handled after the `publicized` that followed it forgot a public repository (its threads
gone; a repository outside the seven is not backfilled) and marked it, so its later
deliveries stored nothing until the night; a `publicized` handled after a later
`privatized` lifted the mark of a private repository, so a delivery queued before that
stored its thread again. With a GitHub client the handler now asks GitHub (GET
/repos/{owner}/{repo}, as the installation) and does what GitHub says now.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select

from bot.store.models import Repository, Thread
from bot.webhooks import events
from bot.webhooks.privacy import handle_repository
from tests.fakegithub import install_app
from tests.test_events import envelope, issue

REPO = "someorg/flipflop"
RID = 3131
INST = 61


def _event(action: str) -> dict[str, Any]:
    payload = envelope(action, REPO, installation=INST)
    private = action == "privatized"
    payload["repository"].update(id=RID, private=private,
                                 visibility="private" if private else "public")
    return payload


def _opened(number: int) -> dict[str, Any]:
    payload = envelope("opened", REPO, installation=INST, issue=issue(number, title=f"#{number}"))
    payload["repository"].update(id=RID, private=False, visibility="public")
    return payload


async def _state(ctx: Any) -> tuple[bool, int]:
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == REPO))
        threads = await session.scalar(select(func.count()).select_from(Thread).where(
            Thread.repo == REPO))
    assert row is not None
    return bool(row.private), int(threads or 0)


async def test_a_privatized_handled_after_the_publicized_that_followed_it_forgets_nothing(
        app_ctx: Any, fake_github: Any) -> None:
    """Made private, then public again; the `publicized` handled first, the `privatized`
    last (its first attempt failed). GitHub shows the repository public: on main its thread
    was forgotten and its row marked."""
    await install_app(app_ctx, fake_github, INST, "someorg", [REPO])
    await events.handle("issues", _opened(1), app_ctx)
    await handle_repository(_event("publicized"), app_ctx)
    await handle_repository(_event("privatized"), app_ctx)
    assert await _state(app_ctx) == (False, 1)
    await events.handle("issues", _opened(2), app_ctx)  # and it is stored on
    assert await _state(app_ctx) == (False, 2)


async def test_a_publicized_handled_after_a_later_privatized_keeps_the_mark(
        app_ctx: Any, fake_github: Any) -> None:
    """Made public, then private again; the `privatized` handled first, the stale
    `publicized` last. GitHub shows the repository private: on main the mark was lifted, and
    a delivery queued before `privatized` (its payload says public) stored its thread."""
    await install_app(app_ctx, fake_github, INST, "someorg", [REPO])
    fake_github.private_repos = {REPO.lower()}
    await handle_repository(_event("privatized"), app_ctx)
    await handle_repository(_event("publicized"), app_ctx)
    await events.handle("issues", _opened(3), app_ctx)
    assert await _state(app_ctx) == (True, 0)


async def test_privatized_and_publicized_in_order_do_what_they_say(
        app_ctx: Any, fake_github: Any) -> None:
    """The usual order, GitHub agreeing each time: forgotten and marked, then the mark lifted."""
    await install_app(app_ctx, fake_github, INST, "someorg", [REPO])
    await events.handle("issues", _opened(1), app_ctx)
    fake_github.private_repos = {REPO.lower()}
    await handle_repository(_event("privatized"), app_ctx)
    assert await _state(app_ctx) == (True, 0)
    fake_github.private_repos = set()
    await handle_repository(_event("publicized"), app_ctx)
    await events.handle("issues", _opened(2), app_ctx)
    assert await _state(app_ctx) == (False, 1)


# ---- installed again on a repository made public meanwhile ------------------------------------
def _shared(shared_dir: Any, event: str, action: str) -> dict[str, Any]:
    import json

    return json.loads((shared_dir / "fixtures" / "webhooks" / event / f"{action}.json").read_text())


@pytest.mark.parametrize(("event", "key"), [("installation", "repositories"),
                                            ("installation_repositories", "repositories_added")])
async def test_installed_again_on_a_repository_made_public_meanwhile_it_is_stored_at_once(
        app_ctx: Any, fake_github: Any, shared_dir: Any, event: str, key: str) -> None:
    """The repository was made private (marked), the app lost it, the repository was made
    public (no event reaches an app not installed there), and the app is installed on it
    again: GitHub's installation event lists it public. On main the mark stayed until the
    night (the listing may be an old one), and its issues opened meanwhile were never
    stored. The handler now asks GitHub, which calls it public: the mark is lifted."""
    from bot.webhooks.installations import handle_installation, handle_installation_repositories

    payload = _shared(shared_dir, event, "created" if event == "installation" else "added")
    listed = payload[key][0]
    name, iid = listed["full_name"], payload["installation"]["id"]
    privatized = envelope("privatized", name, installation=iid)
    privatized["repository"].update(id=listed["id"], private=True, visibility="private")
    fake_github.private_repos = {name.lower()}
    await handle_repository(privatized, app_ctx)
    fake_github.private_repos = set()  # public now
    fake_github.add_installation(iid, name.split("/")[0], repos=[name])
    if event == "installation":
        await handle_installation(payload, app_ctx)
    else:
        await handle_installation_repositories(payload, app_ctx)
    opened = envelope("opened", name, installation=iid, issue=issue(7, title="Public again"))
    opened["repository"].update(id=listed["id"], private=False)
    await events.handle("issues", opened, app_ctx)
    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == name))
        threads = await session.scalar(select(func.count()).select_from(Thread))
    assert row is not None and not row.private and threads == 1


# ---- a lost `privatized` ---------------------------------------------------------------------
async def test_a_delivery_calling_a_stored_repository_private_forgets_it_at_once(
        app_ctx: Any, fake_github: Any) -> None:
    """The repository's thread stored while public; it is made private and the `privatized`
    delivery is lost. The next delivery of it says `private: true` (and GitHub agrees): on
    main it stored nothing of its own but the thread stored before stayed published until
    the night's check. A delivery calling it private that GitHub contradicts (an old one,
    redelivered after `publicized`) forgets nothing."""
    await install_app(app_ctx, fake_github, INST, "someorg", [REPO])
    await events.handle("issues", _opened(1), app_ctx)
    stale = _opened(2)
    stale["repository"].update(private=True, visibility="private")
    await events.handle("issues", stale, app_ctx)  # GitHub: public
    assert await _state(app_ctx) == (False, 1)

    fake_github.private_repos = {REPO.lower()}
    said = _opened(3)
    said["repository"].update(private=True, visibility="private")
    await events.handle("issues", said, app_ctx)
    assert await _state(app_ctx) == (True, 0)


async def test_a_repository_removed_while_listed_private_is_forgotten(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """GitHub's installation_repositories.removed lists the repository `private: true` (made
    private while its `privatized` was lost, then removed from the installation): on main the
    removal unlinked it and left its thread published (no later delivery or listing names it
    again); now it is forgotten and marked, as an installation event listing it private does."""
    from bot.webhooks.installations import handle_installation_repositories

    payload = _shared(shared_dir, "installation_repositories", "removed")
    listed = payload["repositories_removed"][0]
    name, iid = listed["full_name"], payload["installation"]["id"]
    await install_app(app_ctx, fake_github, iid, name.split("/")[0], [name])
    opened = envelope("opened", name, installation=iid, issue=issue(4, title="Public then"))
    opened["repository"].update(id=listed["id"], private=False)
    await events.handle("issues", opened, app_ctx)
    fake_github.installations[iid]["repositories"].remove(name)
    listed["private"] = True
    await handle_installation_repositories(payload, app_ctx)
    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == name))
        threads = await session.scalar(select(func.count()).select_from(Thread))
    assert row is not None and row.private and threads == 0


async def test_an_uninstall_listing_a_stored_repository_private_forgets_it(
        app_ctx: Any, fake_github: Any, shared_dir: Any) -> None:
    """installation.deleted (GitHub's payload lists the installation's repositories) calling a
    stored repository private, its `privatized` lost: on main the uninstall unlinked it and
    left its thread published; now it is forgotten and marked. A repository the uninstall
    lists that nothing was stored of gets no row."""
    from bot.webhooks.installations import handle_installation

    payload = _shared(shared_dir, "installation", "deleted")
    listed = payload["repositories"][0]
    name, iid = listed["full_name"], payload["installation"]["id"]
    await install_app(app_ctx, fake_github, iid, name.split("/")[0], [name])
    opened = envelope("opened", name, installation=iid, issue=issue(4, title="Public then"))
    opened["repository"].update(id=listed["id"], private=False)
    await events.handle("issues", opened, app_ctx)
    fake_github.remove_installation(iid)
    listed["private"] = True
    payload["repositories"].append({"id": 99, "name": "other", "full_name": "octocat/other",
                                    "private": True})
    await handle_installation(payload, app_ctx)
    async with app_ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(Repository.full_name == name))
        threads = await session.scalar(select(func.count()).select_from(Thread))
        other = await session.scalar(select(Repository).where(Repository.github_id == 99))
    assert row is not None and row.private and threads == 0
    assert other is None
