"""A private repository's text is never stored, so never published (review54).

The tracker publishes the public record of open-source frameworks. The app installed on all of
an organisation's repositories receives its private repositories' events as well
(`repository.private: true`); the nightly sync and `rltracker sync` may be pointed at one; a
public repository may be made private (`repository.privatized`). Each path is driven here:
webhooks (every thread and comment event, the worker's batch, commands), installation events,
the `repository` event, the GraphQL sync (through the fake GitHub server), and the data
migration for what was stored before.
"""

from __future__ import annotations

import copy
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from gidgethub import sansio
from sqlalchemy import func, select

from bot.store.models import Action, Comment, Delivery, Repository, SyncCursor, Thread
from tests.test_events import comment, envelope, issue

SECRET = "someorg/secret-repo"


async def count(ctx: Any, model: Any, *where: Any) -> int:
    async with ctx.sessionmaker() as session:
        return int(await session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


async def dispatch_all(ctx: Any, event: str, payload: dict[str, Any]) -> None:
    """Through every router the worker uses (threads, commands, installations, repository)."""
    from bot.webhooks.routers import router

    await router.dispatch(sansio.Event(payload, event=event, delivery_id=str(uuid.uuid4())), ctx)


def private(payload: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(payload)
    out["repository"].update(private=True, visibility="private")
    return out


async def repo_row(ctx: Any, name: str) -> Repository | None:
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Repository).where(
            func.lower(Repository.full_name) == name.lower()))


# ---------------------------------------------------------------------------- webhooks
SHARED_EVENTS = [
    ("issues", "opened.json"), ("issues", "edited.json"), ("issues", "labeled.json"),
    ("pull_request", "opened.json"), ("pull_request", "closed.json"),
    ("discussion", "created.json"), ("issue_comment", "created.json"),
    ("issue_comment", "edited.json"), ("pull_request_review", "submitted.json"),
    ("pull_request_review_comment", "created.json"), ("discussion_comment", "created.json"),
]


@pytest.mark.parametrize(("event", "name"), SHARED_EVENTS)
async def test_a_private_repositorys_delivery_stores_nothing(ctx: Any, shared_dir: Path,
                                                            event: str, name: str) -> None:
    """GitHub's own payloads with `repository.private` true: before, every one stored its
    thread (and comment) like a public repository's."""
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / event / name).read_text())
    await dispatch_all(ctx, event, private(payload))
    assert await count(ctx, Thread) == 0
    assert await count(ctx, Comment) == 0
    assert await count(ctx, Action) == 0
    # the public copy of the same payload is stored (the check is on `private`, not the event)
    await dispatch_all(ctx, event, payload)
    assert await count(ctx, Thread) == 1


async def test_the_workers_batch_stores_nothing_of_a_private_repository(ctx: Any) -> None:
    """The worker hands runs of thread deliveries to events.handle_batch: one private
    delivery among public ones stores nothing of its own, the public ones are stored."""
    from bot.webhooks.events import handle_batch

    def ev(payload: dict[str, Any]) -> sansio.Event:
        return sansio.Event(payload, event="issues", delivery_id=str(uuid.uuid4()))

    public = envelope("opened", "huggingface/trl", issue=issue(7, title="Public entropy"))
    secret = private(envelope("opened", SECRET, issue=issue(5, title="Secret roadmap")))
    outcomes = await handle_batch([ev(public), ev(secret)], ctx)
    assert outcomes == [None, None]
    async with ctx.sessionmaker() as session:
        titles = set(await session.scalars(select(Thread.title)))
    assert titles == {"Public entropy"}


async def test_a_command_in_a_private_repository_is_not_recorded(ctx: Any) -> None:
    """`/rltracker rules` by the author in a private repository: before, the thread was
    stored and an Action row named the repository and thread (public on /api/actions)."""
    payload = private(envelope("created", SECRET, issue=issue(5, title="Secret roadmap"),
                               comment=comment(901, "/rltracker rules", login="alice")))
    await dispatch_all(ctx, "issue_comment", payload)
    assert await count(ctx, Action) == 0
    assert await count(ctx, Thread) == 0


async def test_internal_visibility_is_not_public(ctx: Any) -> None:
    """An enterprise's internal repository (visibility internal) is no public record either."""
    payload = envelope("opened", SECRET, issue=issue(5, title="Internal plan"))
    payload["repository"]["visibility"] = "internal"
    await dispatch_all(ctx, "issues", payload)
    assert await count(ctx, Thread) == 0


# ---------------------------------------------------------------------------- installation
def _installation_payload(shared_dir: Path, event: str, name: str) -> dict[str, Any]:
    return json.loads((shared_dir / "fixtures" / "webhooks" / event / name).read_text())


async def test_an_installations_private_repository_is_in_no_public_list(
        ctx: Any, shared_dir: Path) -> None:
    """installation.created listing a private repository: its row was stored like any other
    and its name was on the reception page (every installed repository)."""
    from bot.site.data import reception

    payload = _installation_payload(shared_dir, "installation", "created.json")
    payload["repositories"] = [dict(payload["repositories"][0], private=True)]
    await dispatch_all(ctx, "installation", payload)
    added = _installation_payload(shared_dir, "installation_repositories", "added.json")
    added["repositories_added"] = [dict(added["repositories_added"][0], private=True)]
    await dispatch_all(ctx, "installation_repositories", added)
    async with ctx.sessionmaker() as session:
        listed = await reception(session)
    assert listed == []
    row = await repo_row(ctx, "Codertocat/Hello-World")
    assert row is not None and row.private is True
    # a thread delivery that says nothing of `private` (a queued one): the row's flag holds
    await dispatch_all(ctx, "issues", envelope("opened", "Codertocat/Hello-World",
                                               issue=issue(3, title="Secret")))
    assert await count(ctx, Thread) == 0


# ---------------------------------------------------------------------------- repository events
def _repository_event(action: str, name: str, *, is_private: bool, rid: int = 555) -> dict[str, Any]:
    payload = envelope(action, name)
    payload["repository"].update(id=rid, private=is_private,
                                 visibility="private" if is_private else "public")
    return payload


async def test_privatized_forgets_the_repository_and_publicized_lets_it_back(ctx: Any) -> None:
    """A public repository's threads stored, then `repository.privatized`: before, the
    app was not subscribed to `repository` events and its threads stayed on every page."""
    await dispatch_all(ctx, "issues", envelope("opened", SECRET, issue=issue(5, title="Was public")))
    await dispatch_all(ctx, "issue_comment", envelope(
        "created", SECRET, issue=issue(5), comment=comment(902, "/rltracker rules", login="alice")))
    assert await count(ctx, Thread) == 1 and await count(ctx, Action) >= 1
    async with ctx.sessionmaker() as session:
        session.add(SyncCursor(repo=SECRET, kind="issue", full_done=True))
        await session.commit()

    await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET, is_private=True))
    assert await count(ctx, Thread) == 0
    assert await count(ctx, Comment) == 0
    assert await count(ctx, Action, func.lower(Action.repo) == SECRET) == 0
    assert await count(ctx, SyncCursor, SyncCursor.repo == SECRET) == 0
    row = await repo_row(ctx, SECRET)
    assert row is not None and row.private is True
    # a delivery queued before the change (its payload still says public) stores nothing
    await dispatch_all(ctx, "issues", envelope("edited", SECRET, issue=issue(5, minute=9)))
    assert await count(ctx, Thread) == 0

    await dispatch_all(ctx, "repository", _repository_event("publicized", SECRET, is_private=False))
    row = await repo_row(ctx, SECRET)
    assert row is not None and row.private is False
    await dispatch_all(ctx, "issues", envelope("edited", SECRET, issue=issue(5, minute=10)))
    assert await count(ctx, Thread) == 1


async def test_privatized_scrubs_the_stored_reports(ctx: Any) -> None:
    """The nightly report snapshots name threads by repository: those of a repository made
    private leave the stored report (data and Markdown) as its threads leave the store."""
    from bot.store.models import Report

    link = f"[`{SECRET}#5`](http://x/threads/{SECRET}/5)"
    kept = "[`a/b#1`](http://x/threads/a/b/1)"
    async with ctx.sessionmaker() as session:
        session.add(Report(
            date="2026-12-01", markdown=f"# Report\n- **New proposals**: {link}; {kept}\n",
            data={"state": {f"{SECRET}#5": {"repo": SECRET, "number": 5}, "a/b#1": {"number": 1}},
                  "frameworks": {"x": {"changes": {"new_proposals": [
                      {"key": f"{SECRET}#5"}, {"key": "a/b#1"}]}}}}))
        await session.commit()
    await dispatch_all(ctx, "repository", _repository_event("privatized", SECRET, is_private=True))
    async with ctx.sessionmaker() as session:
        report = await session.scalar(select(Report))
    assert report is not None
    assert SECRET not in report.markdown and "a/b#1" in report.markdown
    assert SECRET not in json.dumps(report.data) and "a/b#1" in json.dumps(report.data)


# ---------------------------------------------------------------------------- the sync
async def test_the_sync_stores_nothing_of_a_private_repository(
        settings: Any, fake_github: Any, shared_dir: Path) -> None:
    """`rltracker sync --repo` a private repository (GraphQL `isPrivate`): before, its
    threads were stored like a public one's; and one made private since the last sync
    loses what was stored of it."""
    from bot.github.sync import sync
    from tests.fake_graphql import FakeData, graphql_context
    from tests.fakegithub import no_sleep

    data = FakeData.generate(4, seed=3, repos=["huggingface/trl", SECRET], long_every=0)
    async with graphql_context(settings, fake_github, shared_dir, data) as ctx:
        await sync(ctx, ["huggingface/trl", SECRET], sleep=no_sleep)
        assert await count(ctx, Thread, Thread.repo == SECRET) == 4  # public at first
        data.private.add(SECRET)
        await sync(ctx, ["huggingface/trl", SECRET], sleep=no_sleep)
        assert await count(ctx, Thread, Thread.repo == SECRET) == 0
        assert await count(ctx, Thread, Thread.repo == "huggingface/trl") == 4
        row = await repo_row(ctx, SECRET)
        assert row is not None and row.private is True
        # and a later sync asks GitHub again (made public: filled in again)
        data.private.discard(SECRET)
        await sync(ctx, ["huggingface/trl", SECRET], sleep=no_sleep)
        assert await count(ctx, Thread, Thread.repo == SECRET) == 4


# ---------------------------------------------------------------------------- stored before
async def test_the_migration_forgets_what_was_stored_of_a_private_repository(ctx: Any) -> None:
    """Threads stored before this fix from a delivery that said `private: true`: the data
    step of migration 0014 reads the inbox's payloads and forgets those repositories."""
    from bot.store.privacy import forget_private_from_inbox

    payload = envelope("opened", SECRET, issue=issue(5, title="Secret roadmap"))
    async with ctx.sessionmaker() as session:
        session.add(Thread(repo=SECRET, number=5, kind="issue", title="Secret roadmap"))
        session.add(Thread(repo="huggingface/trl", number=7, kind="issue", title="Public"))
        session.add(Delivery(delivery_id="d1", event="issues", action="opened", repo=SECRET,
                             payload=json.dumps(private(payload)), status="done"))
        session.add(Delivery(delivery_id="d2", event="issues", action="opened",
                             repo="huggingface/trl", status="done",
                             payload=json.dumps(envelope("opened", "huggingface/trl",
                                                         issue=issue(7)))))
        await session.commit()
    async with ctx.sessionmaker() as session:
        forgotten = await forget_private_from_inbox(session)
        await session.commit()
    assert forgotten == [SECRET]
    async with ctx.sessionmaker() as session:
        titles = set(await session.scalars(select(Thread.title)))
    assert titles == {"Public"}
    row = await repo_row(ctx, SECRET)
    assert row is not None and row.private is True


async def test_an_issue_transferred_to_a_private_repository_leaves_the_tracker(ctx: Any) -> None:
    """`issues.transferred` at a public repository whose `changes.new_repository` is private:
    before, the stored thread moved under the private repository's name (its name, and the
    thread's place there, on every page)."""
    await dispatch_all(ctx, "issues", envelope("opened", "huggingface/trl",
                                               issue=issue(7, title="Moving away")))
    await dispatch_all(ctx, "issue_comment", envelope(
        "created", "huggingface/trl", issue=issue(7), comment=comment(903, "same here")))
    moved = envelope("transferred", "huggingface/trl", issue=issue(7, minute=5))
    moved["changes"] = {"new_issue": issue(2, minute=5, title="Moving away"),
                        "new_repository": {"id": 4242, "full_name": SECRET, "private": True,
                                           "visibility": "private"}}
    await dispatch_all(ctx, "issues", moved)
    assert await count(ctx, Thread) == 0
    assert await count(ctx, Comment) == 0
    # the same move to a public repository still moves it
    await dispatch_all(ctx, "issues", envelope("opened", "huggingface/trl",
                                               issue=issue(8, title="Moving on")))
    public = envelope("transferred", "huggingface/trl", issue=issue(8, minute=6))
    public["changes"] = {"new_issue": issue(3, minute=6, title="Moving on"),
                         "new_repository": {"id": 4243, "full_name": "someorg/open-repo",
                                            "private": False}}
    await dispatch_all(ctx, "issues", public)
    async with ctx.sessionmaker() as session:
        assert set((await session.execute(select(Thread.repo, Thread.number))).all()) == {
            ("someorg/open-repo", 3)}
