"""Installation events handled out of order (a delivery retried after a later one, GitHub's
"Redeliver"), on SQLite and PostgreSQL, with GitHub's own payloads.

A stale `suspend` handled after the `unsuspend` left the app silent on every repository of the
installation; a stale `installation_repositories.added` or `installation.created` handled
after `installation.deleted` brought the uninstalled installation back (and linked its
repositories to it); a stale event showing `suspended_at: null` from before a suspension
ended it. The times GitHub sends (`suspended_at`, the installation's `updated_at` and
`created_at`) and the time the delivery reached the inbox now order them.
"""

from __future__ import annotations

import copy
import json
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

from gidgethub import sansio
from sqlalchemy import select

from bot.context import AppContext
from bot.store.models import Installation, Repository
from bot.store.types import format_datetime, utcnow
from bot.webhooks import installations
from bot.webhooks.inbox import Inbox, InboxRow
from bot.webhooks.worker import Worker


def load(shared: Path, name: str) -> dict[str, Any]:
    return json.loads((shared / "fixtures" / "webhooks" / name).read_text())


async def dispatch(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    await installations.router.dispatch(
        sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


async def installation(ctx: AppContext, iid: int) -> Installation:
    async with ctx.sessionmaker() as session:
        inst = await session.get(Installation, iid)
        assert inst is not None
        return inst


async def links(ctx: AppContext) -> dict[str, int | None]:
    async with ctx.sessionmaker() as session:
        return {r.full_name: r.installation_id for r in await session.scalars(select(Repository))}


async def through_the_inbox(ctx: AppContext, *deliveries: tuple[str, dict[str, Any]]) -> None:
    """Store the deliveries through the real inbox, in this order (each its own id, as a
    redelivery copy is), then let the worker handle them in arrival order."""
    inbox = Inbox(ctx.engine)
    inbox.start()
    try:
        for event, payload in deliveries:
            await inbox.submit(InboxRow(
                delivery_id=str(uuid.uuid4()), event=event, action=payload.get("action"),
                repo=None, installation_id=payload["installation"]["id"],
                payload=json.dumps(payload)))
    finally:
        await inbox.close()
    worker = Worker(ctx, installations.router, backoff=lambda a: 0.0)
    assert await worker.run_until_idle() == len(deliveries)
    assert worker.counts["failed"] == worker.counts["retry"] == 0


async def test_a_stale_suspend_after_unsuspend_leaves_the_app_unsuspended(
        ctx: AppContext, shared_dir: Path) -> None:
    suspend = load(shared_dir, "installation/suspend.json")
    unsuspend = load(shared_dir, "installation/unsuspend.json")
    iid = suspend["installation"]["id"]
    # suspend, unsuspend, then the suspend again (redelivered, or a retry that came last)
    await through_the_inbox(ctx, ("installation", suspend), ("installation", unsuspend),
                            ("installation", copy.deepcopy(suspend)))
    assert (await installation(ctx, iid)).suspended is False


async def test_an_unsuspend_handled_before_its_suspend_wins(ctx: AppContext,
                                                          shared_dir: Path) -> None:
    suspend = load(shared_dir, "installation/suspend.json")
    unsuspend = load(shared_dir, "installation/unsuspend.json")
    await dispatch(ctx, "installation", unsuspend)
    await dispatch(ctx, "installation", suspend)  # its first attempt failed; retried now
    assert (await installation(ctx, suspend["installation"]["id"])).suspended is False


async def test_a_later_suspension_still_suspends(ctx: AppContext, shared_dir: Path) -> None:
    suspend = load(shared_dir, "installation/suspend.json")
    unsuspend = load(shared_dir, "installation/unsuspend.json")
    again = copy.deepcopy(suspend)
    later = format_datetime(utcnow() + timedelta(minutes=5))  # suspended after the unsuspend
    again["installation"].update(suspended_at=later, updated_at=later)
    await through_the_inbox(ctx, ("installation", suspend), ("installation", unsuspend),
                            ("installation", again))
    assert (await installation(ctx, suspend["installation"]["id"])).suspended is True


async def test_a_stale_event_from_before_a_suspension_does_not_end_it(
        ctx: AppContext, shared_dir: Path) -> None:
    created = load(shared_dir, "installation/created.json")
    added = load(shared_dir, "installation_repositories/added.json")  # sent before the suspend
    assert added["installation"]["id"] == created["installation"]["id"]
    suspend = copy.deepcopy(created)
    suspend["action"] = "suspend"
    suspend["installation"].update(suspended_at="2019-06-01T00:00:00Z",
                                   updated_at="2019-06-01T00:00:00Z")
    await dispatch(ctx, "installation", created)
    await dispatch(ctx, "installation", suspend)
    await dispatch(ctx, "installation_repositories", added)
    assert (await installation(ctx, created["installation"]["id"])).suspended is True


async def test_stale_events_after_deleted_do_not_revive_the_installation(
        ctx: AppContext, shared_dir: Path) -> None:
    created = load(shared_dir, "installation/created.json")
    added = load(shared_dir, "installation_repositories/added.json")
    deleted = copy.deepcopy(created)
    deleted["action"] = "deleted"
    iid = created["installation"]["id"]
    await through_the_inbox(ctx, ("installation", created), ("installation", deleted),
                            ("installation_repositories", added),
                            ("installation", copy.deepcopy(created)))
    assert (await installation(ctx, iid)).deleted is True
    assert await links(ctx) == {"Codertocat/Hello-World": None, "Codertocat/Space": None}


async def test_a_later_installation_of_the_same_id_is_followed(ctx: AppContext,
                                                               shared_dir: Path) -> None:
    """Installed again after the uninstall (times after it): alive, its repositories linked."""
    created = load(shared_dir, "installation/created.json")
    deleted = copy.deepcopy(created)
    deleted["action"] = "deleted"
    again = copy.deepcopy(created)
    again["installation"].update(created_at=1735689600, updated_at=1735689600)  # 2025
    for payload in (created, deleted, again):
        await dispatch(ctx, "installation", payload)
    assert (await installation(ctx, created["installation"]["id"])).deleted is False
    assert await links(ctx) == {"Codertocat/Hello-World": created["installation"]["id"]}


async def test_a_missed_unsuspend_redelivered_after_a_later_suspend_does_not_end_it(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """suspend (April 2021), unsuspend (its delivery failed), suspended again a minute ago; the
    nightly recovery then has GitHub redeliver the missed unsuspend: it reaches the inbox
    last, after the later suspension. Its payload's `updated_at` is the first suspension's
    time (GitHub's own example), so only its arrival dated it, and it ended the suspension
    GitHub still holds: the app went on asking for tokens and posting through it."""
    suspend = load(shared_dir, "installation/suspend.json")
    unsuspend = load(shared_dir, "installation/unsuspend.json")
    iid = suspend["installation"]["id"]
    fake_github.add_installation(iid, suspend["installation"]["account"]["login"])
    fake_github.suspend_installation(iid)  # what GitHub holds now: suspended again
    again = copy.deepcopy(suspend)
    later = format_datetime(utcnow() - timedelta(minutes=1))
    again["installation"].update(suspended_at=later, updated_at=later)
    await through_the_inbox(app_ctx, ("installation", suspend), ("installation", again),
                            ("installation", unsuspend))
    assert (await installation(app_ctx, iid)).suspended is True


async def test_an_unsuspend_in_order_ends_the_suspension_github_ended(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """The same payloads in order, GitHub holding the installation unsuspended: it ends."""
    suspend = load(shared_dir, "installation/suspend.json")
    unsuspend = load(shared_dir, "installation/unsuspend.json")
    iid = suspend["installation"]["id"]
    fake_github.add_installation(iid, suspend["installation"]["account"]["login"])
    again = copy.deepcopy(suspend)
    later = format_datetime(utcnow() - timedelta(minutes=1))
    again["installation"].update(suspended_at=later, updated_at=later)
    await through_the_inbox(app_ctx, ("installation", suspend), ("installation", again),
                            ("installation", unsuspend))
    assert (await installation(app_ctx, iid)).suspended is False


async def test_a_redelivered_unsuspend_then_the_later_suspend_leaves_it_suspended(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """The redelivered unsuspend first, then the later suspension's own (retried) delivery,
    dated before the unsuspend's arrival: suspended, as GitHub holds it."""
    suspend = load(shared_dir, "installation/suspend.json")
    unsuspend = load(shared_dir, "installation/unsuspend.json")
    iid = suspend["installation"]["id"]
    fake_github.add_installation(iid, suspend["installation"]["account"]["login"])
    fake_github.suspend_installation(iid)
    again = copy.deepcopy(suspend)
    later = format_datetime(utcnow() - timedelta(minutes=1))
    again["installation"].update(suspended_at=later, updated_at=later)
    await through_the_inbox(app_ctx, ("installation", suspend), ("installation", unsuspend),
                            ("installation", again))
    assert (await installation(app_ctx, iid)).suspended is True


def _repositories_event(added: dict[str, Any], action: str) -> dict[str, Any]:
    """GitHub's `installation_repositories` payload for the same installation and repositories,
    as `added` or `removed`."""
    event = copy.deepcopy(added)
    repos = event["repositories_added"] or event["repositories_removed"]
    event["action"] = action
    event["repositories_added"] = repos if action == "added" else []
    event["repositories_removed"] = repos if action == "removed" else []
    return event


async def test_a_stale_repositories_added_after_removed_does_not_link_it_again(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """Space added, then removed from the installation; the `added` redelivered last linked
    it again: the app took it for installed and asked for tokens and posted there."""
    added = load(shared_dir, "installation_repositories/added.json")
    iid = added["installation"]["id"]
    fake_github.add_installation(iid, "Codertocat", [])  # what GitHub holds: removed
    await through_the_inbox(app_ctx, ("installation_repositories", added),
                            ("installation_repositories", _repositories_event(added, "removed")),
                            ("installation_repositories", copy.deepcopy(added)))
    assert await links(app_ctx) == {"Codertocat/Space": None}


async def test_a_stale_repositories_removed_after_a_later_added_does_not_unlink_it(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    """Space removed (that delivery failed), added back, then the `removed` redelivered:
    it unlinked a repository GitHub holds installed, and the app went silent there."""
    added = load(shared_dir, "installation_repositories/added.json")
    iid = added["installation"]["id"]
    fake_github.add_installation(iid, "Codertocat", ["Codertocat/Space"])  # installed now
    await through_the_inbox(app_ctx, ("installation_repositories", added),
                            ("installation_repositories", copy.deepcopy(added)),
                            ("installation_repositories", _repositories_event(added, "removed")))
    assert await links(app_ctx) == {"Codertocat/Space": iid}


async def test_repositories_added_and_removed_in_order_follow_github(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    added = load(shared_dir, "installation_repositories/added.json")
    iid = added["installation"]["id"]
    fake_github.add_installation(iid, "Codertocat", ["Codertocat/Space"])
    await through_the_inbox(app_ctx, ("installation_repositories", added))
    assert await links(app_ctx) == {"Codertocat/Space": iid}
    fake_github.installations[iid]["repositories"] = []
    await through_the_inbox(app_ctx,
                            ("installation_repositories", _repositories_event(added, "removed")))
    assert await links(app_ctx) == {"Codertocat/Space": None}
    fake_github.installations[iid]["repositories"] = ["Codertocat/Space"]
    await through_the_inbox(app_ctx, ("installation_repositories", copy.deepcopy(added)))
    assert await links(app_ctx) == {"Codertocat/Space": iid}


async def test_a_stale_created_after_a_removal_does_not_link_the_removed_repository(
        app_ctx: AppContext, fake_github: Any, shared_dir: Path) -> None:
    created = load(shared_dir, "installation/created.json")
    iid = created["installation"]["id"]
    [listed] = created["repositories"]
    fake_github.add_installation(iid, "Codertocat", [])  # removed since
    removed = {"action": "removed", "installation": copy.deepcopy(created["installation"]),
               "repository_selection": "selected", "repositories_added": [],
               "repositories_removed": [listed], "sender": created["sender"]}
    await through_the_inbox(app_ctx, ("installation", created),
                            ("installation_repositories", removed),
                            ("installation", copy.deepcopy(created)))
    assert await links(app_ctx) == {listed["full_name"]: None}
