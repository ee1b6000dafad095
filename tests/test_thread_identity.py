"""A thread's identity across GitHub's moves (left66), on SQLite and PostgreSQL, through the
webhook routers and the feeds over HTTP:

- an issue transferred to another repository keeps its feed entry's id, its address and the
  person's verdict on it (it got a new id: its number changes; when its new place was stored
  first, the verdict went with the row deleted);
- a repository name taken again by another repository after a rename gives the new
  repository's threads ids of their own (two threads had one entry id).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from sqlalchemy import select

from bot.store.models import Analysis, Thread, Verdict
from bot.store.threads import get_thread, upsert_thread
from tests.test_feeds import BASE, add, client_for, fetch, parse_feed
from tests.test_private_repos import _repository_event, dispatch_all

VERL = "verl-project/verl"
RECIPE = "verl-project/verl-recipe"  # another repository of the framework's organisation


def transferred(shared_dir: Path, *, old: tuple[str, int, int], new: tuple[str, int, int]
                ) -> dict[str, Any]:
    """GitHub's `issues.transferred` (the shared fixture) of issue old=(repo, repo id, number)
    to new=(repo, repo id, number)."""
    payload = json.loads((shared_dir / "fixtures" / "webhooks" / "issues" / "transferred.json")
                         .read_text())
    payload["issue"].pop("pull_request", None)
    payload["issue"].update(number=old[2], title="Support GSPO in the PPO trainer",
                            created_at="2026-11-02T09:00:00Z", updated_at="2026-11-10T09:00:00Z")
    payload["repository"].update(full_name=old[0], id=old[1], private=False, visibility="public")
    new_issue = payload["changes"]["new_issue"]
    new_issue.pop("pull_request", None)
    new_issue.update(number=new[2], title="Support GSPO in the PPO trainer",
                     created_at="2026-11-02T09:00:00Z", updated_at="2026-11-10T09:00:01Z")
    payload["changes"]["new_repository"].update(full_name=new[0], id=new[1], private=False,
                                                 visibility="public")
    payload.pop("installation", None)
    return payload


async def _verdict_on(ctx: Any, repo: str, number: int) -> None:
    from bot.store.verdicts import set_verdict

    async with ctx.sessionmaker() as session, session.begin():
        thread = await get_thread(session, repo, number)
        assert thread is not None
        await set_verdict(session, thread, is_failure_report=False, category=None,
                          login="alice", role="author", comment_id=77)


async def _entries(ctx: Any) -> list[dict[str, Any]]:
    client = await client_for(ctx)
    try:
        return parse_feed(await fetch(client, "/proposals.atom"), f"{BASE}/proposals.atom")
    finally:
        await client.close()


async def _proposal(ctx: Any, repo: str, number: int) -> None:
    """The stored thread's analysis says proposal (what the analyzers make of the test's
    text is not the point here)."""
    async with ctx.sessionmaker() as session, session.begin():
        thread = await get_thread(session, repo, number)
        assert thread is not None
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        if row is None:
            row = Analysis(thread_id=thread.id, analyzer_version="test", methods=[],
                           arxiv_ids=[], result={})
            session.add(row)
        row.is_proposal, row.review_state, row.is_failure_report = True, "open_no_reply", False
        row.result = {"proposal": {"is_proposal": True}, "review": {"state": "open_no_reply"},
                      "failure": {"is_failure_report": False}}


async def _repositories(ctx: Any) -> None:
    from bot.webhooks.installations import upsert_repository

    async with ctx.sessionmaker() as session, session.begin():
        await upsert_repository(session, VERL, github_id=7070)
        await upsert_repository(session, RECIPE, github_id=7071)


async def test_a_transferred_issue_keeps_its_entry_its_address_and_verdict(
        ctx: Any, shared_dir: Path) -> None:
    """Failed on main: the entry came back with a new id (the new repository and number)."""
    await add(ctx, VERL, 11, "Support GSPO in the PPO trainer", days=1, active=9, proposal=True)
    await _repositories(ctx)
    await _verdict_on(ctx, VERL, 11)
    before = await _entries(ctx)
    await dispatch_all(ctx, "issues", transferred(shared_dir, old=(VERL, 7070, 11),
                                                  new=(RECIPE, 7071, 3)))
    await _proposal(ctx, RECIPE, 3)
    after = await _entries(ctx)
    [entry] = [e for e in after if e["link"] == f"{BASE}/threads/{RECIPE}/3"]
    assert entry["id"] == f"{BASE}/threads/{VERL}/11"
    assert sorted(e["id"] for e in after) == sorted(e["id"] for e in before)
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, RECIPE, 3)
        assert thread is not None
        assert await session.scalar(select(Verdict.login).where(Verdict.thread_id == thread.id)) == "alice"
    client = await client_for(ctx)
    try:  # the old address (the entry's id) answers with the thread at its new place
        page = await client.get(f"/threads/{VERL}/11", allow_redirects=False)
        assert page.status == 200 and f"{RECIPE}" in await page.text()
    finally:
        await client.close()


async def test_a_transfer_onto_its_new_place_stored_first_keeps_the_verdict_and_entry(
        ctx: Any, shared_dir: Path) -> None:
    """The new place was stored before the transfer's delivery came (its `opened` there, or
    the sync of the other repository): the two rows became one, and the person's verdict,
    on the row deleted, went with it; the entry took the new place's id. Failed on main."""
    await add(ctx, VERL, 11, "Support GSPO in the PPO trainer", days=1, active=9, proposal=True)
    await _repositories(ctx)
    await _verdict_on(ctx, VERL, 11)
    async with ctx.sessionmaker() as session, session.begin():
        await upsert_thread(session, {"repo": RECIPE, "number": 3, "kind": "issue",
                                      "title": "Support GSPO in the PPO trainer", "state": "open",
                                      "created_at": "2026-11-02T09:00:00Z",
                                      "updated_at": "2026-11-10T09:00:01Z"})
    await dispatch_all(ctx, "issues", transferred(shared_dir, old=(VERL, 7070, 11),
                                                  new=(RECIPE, 7071, 3)))
    await _proposal(ctx, RECIPE, 3)
    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(select(Thread).where(Thread.number.in_((3, 11)))))
        assert [(t.repo, t.number) for t in rows] == [(RECIPE, 3)]
        assert await session.scalar(select(Verdict.login).where(
            Verdict.thread_id == rows[0].id)) == "alice"
    [entry] = [e for e in await _entries(ctx) if e["link"] == f"{BASE}/threads/{RECIPE}/3"]
    assert entry["id"] == f"{BASE}/threads/{VERL}/11"


async def test_a_name_taken_again_after_a_rename_gives_its_threads_ids_of_their_own(
        ctx: Any) -> None:
    """`verl-project/verl` (GitHub id 7070) renamed to `verl-core`; a new repository (8080)
    created under the old name, its issue #11 delivered. Both #11 had the entry id
    /threads/verl-project/verl/11 (failed on main: the feed held one id twice). The older
    keeps it; the new one's carries its repository's id. Through a delivery (the webhook
    batch's insert) and through `upsert_thread` (the sync's)."""
    from tests.test_events import envelope, issue

    await add(ctx, VERL, 11, "Support GSPO in the PPO trainer", days=1, active=9, proposal=True)
    await add(ctx, VERL, 12, "Add CISPO", days=2, active=3, proposal=True)
    async with ctx.sessionmaker() as session, session.begin():
        from bot.webhooks.installations import upsert_repository

        await upsert_repository(session, VERL, github_id=7070)
    await dispatch_all(ctx, "repository", _repository_event(
        "renamed", "verl-project/verl-core", is_private=False, rid=7070))
    payload = envelope("opened", VERL, issue=issue(11, title="A new repository's first issue"))
    payload["repository"]["id"] = 8080
    await dispatch_all(ctx, "issues", copy.deepcopy(payload))
    async with ctx.sessionmaker() as session:  # (the batch's insert fills the first pair too)
        row = await get_thread(session, VERL, 11)
        assert row is not None and (row.first_repo, row.first_number) == (VERL, 11)
    await _proposal(ctx, VERL, 11)
    async with ctx.sessionmaker() as session, session.begin():  # the sync stores #12 there
        await upsert_thread(session, {"repo": VERL, "number": 12, "kind": "issue",
                                      "title": "Another", "state": "open",
                                      "created_at": "2026-11-20T09:00:00Z"})
    await _proposal(ctx, VERL, 12)
    entries = {e["link"]: e["id"] for e in await _entries(ctx)}  # (parse_feed: ids unique)
    assert entries[f"{BASE}/threads/verl-project/verl-core/11"] == f"{BASE}/threads/{VERL}/11"
    assert entries[f"{BASE}/threads/verl-project/verl-core/12"] == f"{BASE}/threads/{VERL}/12"
    assert entries[f"{BASE}/threads/{VERL}/11"] == f"{BASE}/threads/{VERL}/11?repository=8080"
    assert entries[f"{BASE}/threads/{VERL}/12"] == f"{BASE}/threads/{VERL}/12?repository=8080"


async def test_threads_inserted_together_each_get_their_first_pair(ctx: Any) -> None:
    """The webhook batch inserts its new threads in one statement (`insert_new`): each row's
    first name and number are its own, and only the one whose pair another thread holds is
    marked with its repository's id."""
    from bot.store.threads import insert_new

    await add(ctx, VERL, 5, "Older", days=1)
    async with ctx.sessionmaker() as session, session.begin():
        from bot.webhooks.installations import upsert_repository

        await upsert_repository(session, VERL, github_id=7070)
        thread = await get_thread(session, VERL, 5)
        assert thread is not None
        thread.repo = "verl-project/verl-core"  # renamed away (as follow_rename moves it)
    async with ctx.sessionmaker() as session, session.begin():
        await insert_new(session, Thread, [
            {"repo": VERL, "number": n, "kind": "issue", "title": f"t{n}", "labels": [],
             "assignees": [], "complete": True, "muted": False, "state": "open"}
            for n in (4, 5, 6)])
    async with ctx.sessionmaker() as session:
        rows = (await session.execute(select(
            Thread.repo, Thread.number, Thread.first_repo, Thread.first_number,
            Thread.first_repo_id).where(Thread.repo == VERL).order_by(Thread.number))).all()
    assert [tuple(r) for r in rows] == [(VERL, 4, VERL, 4, None), (VERL, 5, VERL, 5, 7070),
                                        (VERL, 6, VERL, 6, None)]
