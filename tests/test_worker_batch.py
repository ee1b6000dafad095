"""The worker's batches (`Worker(batch_size=N)`, as `serve --workers N` runs it) on SQLite and
PostgreSQL: rows claimed, handled and finished together, with the same stored outcome as one
by one; a failing row fails alone; a thread changed twice in a batch is analysed once.

Deliveries are GitHub's example payloads (../shared/fixtures/webhooks/) given our own short
texts, numbers and a tracked repository. Handlers are the app's own, except where a test
hands the worker a router and batch handling of its own (its plug-in points)."""

from __future__ import annotations

import asyncio
import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from gidgethub.routing import Router
from sqlalchemy import delete, event, select

from analyzers.analyze import analyze_thread
from bot.context import AppContext
from bot.store.models import Action, Analysis, Comment, Delivery, Thread
from bot.store.threads import load_thread_record
from bot.store.types import format_datetime, utcnow
from bot.webhooks.routers import BatchHandling
from bot.webhooks.worker import Worker
from tests.test_worker import no_wait, recording_router, rows_by_id, store

REPO = "verl-project/verl"  # the canonical name (volcengine/verl moved there)
FAILURE = ("During GRPO training the entropy drops to zero after {n}00 steps and the reward "
           "stays flat. We use clip_ratio 0.2 and lr 1e-6 on 8 GPUs.")
QUESTION = "How do I set the rollout batch size for run {n}? The docs do not say."
PROPOSAL = "Could you add support for the loss in https://arxiv.org/abs/2506.{n:05d}?"


def _shape(shared_dir: Path, name: str) -> dict[str, Any]:
    data = json.loads((shared_dir / "fixtures" / "webhooks" / name).read_text(encoding="utf-8"))
    data["repository"].update(full_name=REPO, name=REPO.split("/")[1], id=4242)
    data["repository"]["owner"]["login"] = REPO.split("/")[0]
    data["installation"] = {"id": 77}
    return data


def backlog(shared_dir: Path, first: int = 100) -> list[tuple[str, str]]:
    """(event, payload) in arrival order: new issues (a failure report, a question, a
    proposal...), then edits and comments of some of them, a pull-request review and a
    discussion. Issues are recent, so no decision is skipped for age."""
    now = utcnow()
    out: list[tuple[str, str]] = []
    texts = [FAILURE, QUESTION, PROPOSAL]
    def issue(name: str, k: int, title: str, body: str, updated: int) -> None:
        p = _shape(shared_dir, f"issues/{name}.json")
        p["issue"].update(number=first + k, id=10**9 + first + k, title=title, body=body,
                          created_at=format_datetime(now - timedelta(minutes=30 - k)),
                          updated_at=format_datetime(now - timedelta(minutes=updated)))
        out.append(("issues", json.dumps(p)))

    for k in range(6):
        body = texts[k % 3].format(n=first + k)
        issue("opened", k, f"Issue {k}: {body[:30]}", body, updated=30 - k)
    for k in (0, 2):
        body = texts[k % 3].format(n=first + k) + " (edited: same run, more steps)"
        issue("edited", k, f"Issue {k} edited", body, updated=10 - k)
    for k in (1, 3):
        p = _shape(shared_dir, "issue_comment/created.json")
        stamp = format_datetime(now - timedelta(minutes=5 - k))
        p["issue"].update(number=first + k, id=10**9 + first + k, updated_at=stamp)
        p["comment"].update(id=2 * 10**9 + first + k, body=f"Same here on run {k}.",
                            author_association="NONE", created_at=stamp, updated_at=stamp)
        p["comment"]["user"] = dict(p["comment"]["user"], login=f"user{k}", type="User")
        out.append(("issue_comment", json.dumps(p)))
    p = _shape(shared_dir, "pull_request_review/submitted.json")
    p["pull_request"].update(number=first + 50, id=3 * 10**9 + first)
    p["review"].update(id=4 * 10**9 + first, body="Please add a test for the new loss.")
    out.append(("pull_request_review", json.dumps(p)))
    p = _shape(shared_dir, "discussion/created.json")
    p["discussion"].update(number=first + 60, id=5 * 10**9 + first, title="Discussion",
                           body=QUESTION.format(n=first))
    out.append(("discussion", json.dumps(p)))
    return out


async def outcome(ctx: AppContext, first: int) -> dict[str, Any]:
    """What the deliveries of `backlog(first=first)` left: threads, comments, analyses and
    decisions, by number relative to `first` (no ids, no times)."""
    def rel(number: int | None) -> int | None:
        return None if number is None else number - first

    async with ctx.sessionmaker() as s:
        threads = {rel(t.number): (t.kind, t.title, t.body, t.state, t.complete)
                   for t in await s.scalars(select(Thread))}
        comments = sorted((rel(n), c.kind, c.body) for c, n in (await s.execute(
            select(Comment, Thread.number).join(Thread, Thread.id == Comment.thread_id))).all())
        analyses = {}
        for a, n in (await s.execute(
                select(Analysis, Thread.number).join(Thread, Thread.id == Analysis.thread_id))).all():
            r = a.result
            analyses[rel(n)] = (a.is_failure_report, a.failure_category, a.is_proposal,
                                a.review_state, a.methods, a.arxiv_ids,
                                json.dumps(r.get("failure"), sort_keys=True),
                                json.dumps(r.get("proposal"), sort_keys=True))
        actions = sorted((rel(a.number), a.kind, a.status, a.reason or "", a.body or "",
                          (a.dedupe_key or "").replace(f"#{a.number}:", "#:"))
                         for a in await s.scalars(select(Action)))
    return {"threads": threads, "comments": comments, "analyses": analyses, "actions": actions}


async def forget_everything(ctx: AppContext) -> None:
    async with ctx.sessionmaker() as s:
        for model in (Action, Analysis, Comment, Thread, Delivery):
            await s.execute(delete(model))
        await s.commit()


async def test_a_batch_leaves_what_one_by_one_leaves(ctx: AppContext, shared_dir: Path) -> None:
    deliveries = backlog(shared_dir)
    await store(ctx, *deliveries)
    assert await Worker(ctx, backoff=no_wait, max_attempts=1).run_until_idle() == len(deliveries)
    one_by_one = await outcome(ctx, 100)
    await forget_everything(ctx)

    await store(ctx, *deliveries)
    worker = Worker(ctx, backoff=no_wait, max_attempts=1, batch_size=5)
    assert await worker.run_until_idle() == len(deliveries)
    rows = await rows_by_id(ctx)
    assert all(r.status == "done" and r.attempts == 1 for r in rows.values()), [
        r.last_error for r in rows.values() if r.status != "done"]
    # claimed five at a time: one claim time per batch (each is claimed in one statement)
    assert len({r.started_at for r in rows.values()}) == math.ceil(len(deliveries) / 5)
    assert worker.counts == {"done": len(deliveries), "failed": 0, "retry": 0, "lost": 0}
    batched = await outcome(ctx, 100)
    assert batched == one_by_one
    # and the analyses are the analyzers' own on the stored threads
    async with ctx.sessionmaker() as s:
        for thread, analysis in (await s.execute(
                select(Thread, Analysis).join(Analysis, Analysis.thread_id == Thread.id))).all():
            record = await load_thread_record(s, thread.repo, thread.number)
            assert record is not None
            assert analysis.result == json.loads(json.dumps(analyze_thread(record)))
    assert any(a[1] == "failure_comment" for a in batched["actions"])
    assert any(a[1] == "rule_summary" for a in batched["actions"])


async def test_same_thread_twice_in_a_batch_is_analysed_once(ctx: AppContext,
                                                              shared_dir: Path) -> None:
    deliveries = backlog(shared_dir)
    opened, edited = deliveries[0], deliveries[6]  # issue 100, then its edit
    assert json.loads(edited[1])["issue"]["number"] == json.loads(opened[1])["issue"]["number"]
    await store(ctx, opened, edited)
    writes: list[str] = []

    def on_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith(("INSERT INTO ANALYSES", "UPDATE ANALYSES")):
            writes.append(statement.split()[0].upper())

    event.listen(ctx.engine.sync_engine, "before_cursor_execute", on_execute)
    try:
        assert await Worker(ctx, backoff=no_wait, max_attempts=1, batch_size=8).run_until_idle() == 2
    finally:
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", on_execute)
    assert writes == ["INSERT"]  # one analysis, stored once: of the thread after both
    async with ctx.sessionmaker() as s:
        record = await load_thread_record(s, REPO, 100)
        stored = await s.scalar(select(Analysis.result))
        decisions = list(await s.scalars(select(Action).where(Action.kind == "failure_comment")))
    assert record is not None and record["body"].endswith("(edited: same run, more steps)")
    assert stored == json.loads(json.dumps(analyze_thread(record)))
    assert len(decisions) == 1  # the new issue was decided on once
    assert {r.status for r in (await rows_by_id(ctx)).values()} == {"done"}


async def test_an_unreadable_delivery_fails_alone_in_its_batch(ctx: AppContext,
                                                               shared_dir: Path) -> None:
    deliveries = backlog(shared_dir)[:6]
    poison = json.loads(deliveries[0][1])
    poison["issue"] = "not an issue"  # the app's own handler cannot read it
    ids = await store(ctx, *deliveries[:3], ("issues", json.dumps(poison)), *deliveries[3:])
    worker = Worker(ctx, backoff=no_wait, batch_size=8)
    assert await worker.run_until_idle() == 7
    rows = await rows_by_id(ctx)
    assert rows[ids[3]].status == "failed" and rows[ids[3]].attempts == 1
    assert all(rows[i].status == "done" for i in ids if i != ids[3])
    async with ctx.sessionmaker() as s:
        assert len(list(await s.scalars(select(Analysis)))) == 6  # the others' work is kept


def failing_batches(groups: list[list[str]], poison: str) -> BatchHandling:
    """Batch handling of the test's own: records each group it is given and fails the whole
    group when it holds the poison row (as a failed shared transaction would)."""
    async def handle(events: list[Any], ctx: Any) -> list[BaseException | None]:
        groups.append([e.data["n"] for e in events])
        if any(e.data["n"] == poison for e in events):
            raise RuntimeError("the shared transaction failed")
        return [None] * len(events)

    return BatchHandling(takes=lambda e: e.event == "test", handle=handle, rest=Router())


async def test_a_failing_row_does_not_take_its_batch_down(ctx: AppContext) -> None:
    ids = await store(ctx, *[("test", f'{{"n": "{n}"}}') for n in "abcdef"])
    seen: list[str] = []
    groups: list[list[str]] = []
    worker = Worker(ctx, recording_router(seen, {"c"}), backoff=no_wait, max_attempts=2,
                    batch_size=3, batch=failing_batches(groups, "c"))
    await worker.run_until_idle()
    rows = await rows_by_id(ctx)
    # the first group failed as a whole: each of its rows went through the router alone,
    # where only the poison row failed; it was retried alone (claimed with d and e, but
    # never handled in a group again) and failed; f, alone in the last batch, too
    assert groups == [["a", "b", "c"], ["d", "e"]]
    assert seen == [ids[0], ids[1], ids[2], ids[2], ids[5]]
    assert rows[ids[2]].status == "failed" and rows[ids[2]].attempts == 2
    assert all(rows[i].status == "done" and rows[i].attempts == 1 for i in ids if i != ids[2])
    assert worker.counts == {"done": 5, "failed": 1, "retry": 1, "lost": 0}


async def test_a_batch_is_fenced_row_by_row(ctx: AppContext) -> None:
    """A row another worker took over while the batch ran is not finished by this one; the
    rest of the batch is."""
    ids = await store(ctx, *[("test", f'{{"n": "{n}"}}') for n in range(4)])
    router = Router()

    @router.register("test")
    async def steal_one(event: Any, ctx_: Any) -> None:
        if event.data["n"] == "0":
            async with ctx.sessionmaker() as s:
                await s.execute(Delivery.__table__.update()
                                .where(Delivery.delivery_id == ids[2])
                                .values(claimed_by="thief:1:x"))
                await s.commit()

    worker = Worker(ctx, router, backoff=no_wait, batch_size=4)
    assert await worker.process_one(claim_next=False)
    rows = await rows_by_id(ctx)
    assert rows[ids[2]].status == "processing" and rows[ids[2]].claimed_by == "thief:1:x"
    assert [rows[i].status for i in (ids[0], ids[1], ids[3])] == ["done"] * 3
    assert worker.counts == {"done": 3, "failed": 0, "retry": 0, "lost": 1}


async def test_two_batching_workers_never_take_the_same_row(ctx: AppContext) -> None:
    ids = await store(ctx, *[("test", f'{{"n": "{n}"}}') for n in range(90)])
    seen: list[str] = []
    w1 = Worker(ctx, recording_router(seen), backoff=no_wait, batch_size=8)
    w2 = Worker(ctx, recording_router(seen), backoff=no_wait, batch_size=8)
    done = await asyncio.gather(w1.run_until_idle(), w2.run_until_idle())
    assert sum(done) == 90
    assert sorted(seen) == sorted(ids)  # each exactly once
    rows = await rows_by_id(ctx)
    assert all(r.status == "done" and r.attempts == 1 for r in rows.values())


async def test_rows_claimed_for_the_next_batch_go_back_on_stop(ctx: AppContext) -> None:
    ids = await store(ctx, *[("test", f'{{"n": "{n}"}}') for n in range(6)])
    seen: list[str] = []
    worker = Worker(ctx, recording_router(seen), backoff=no_wait, batch_size=3)
    assert await worker.process_one()  # handles three, claims the next three
    await worker.release_next()
    rows = await rows_by_id(ctx)
    assert [rows[i].status for i in ids] == ["done"] * 3 + ["pending"] * 3
    assert [rows[i].attempts for i in ids[3:]] == [0, 0, 0]
    assert await Worker(ctx, recording_router(seen), backoff=no_wait).run_until_idle() == 3
    assert seen == ids



async def test_a_batch_cut_off_is_taken_again_and_leaves_the_same(ctx: AppContext,
                                                                    shared_dir: Path) -> None:
    """A worker process killed with a batch claimed: its rows are taken again (at the next
    start on SQLite, once their lease is over on PostgreSQL) and handled again, and what is
    stored is what one by one stores."""
    deliveries = backlog(shared_dir)
    await store(ctx, *deliveries)
    assert await Worker(ctx, backoff=no_wait, max_attempts=1).run_until_idle() == len(deliveries)
    one_by_one = await outcome(ctx, 100)
    await forget_everything(ctx)

    ids = await store(ctx, *deliveries)
    # lease of 0 s: the rows it holds are free for another worker as soon as it stops
    killed = Worker(ctx, backoff=no_wait, max_attempts=1, batch_size=4, lease_seconds=0)
    assert await killed.process_one()  # its first batch done, the second claimed: then "killed"
    # max_attempts=2: a claim that was never finished counts as an attempt, and with a bound
    # of one the rows the killed worker held would be set aside (test_poison_delivery.py)
    survivor = Worker(ctx, backoff=no_wait, max_attempts=2, batch_size=4)
    await survivor.recover()
    assert await survivor.run_until_idle() == len(deliveries) - 4
    rows = await rows_by_id(ctx)
    assert [rows[i].attempts for i in ids] == [1] * 4 + [2] * 4 + [1] * (len(ids) - 8)
    assert all(r.status == "done" and r.claimed_by == survivor.worker_id
               for r in rows.values() if r.delivery_id not in ids[:4])
    assert await outcome(ctx, 100) == one_by_one


async def test_a_finish_whose_commit_was_lost_works_no_row_it_may_not_own(ctx: AppContext) -> None:
    """The connection lost as the transaction that finishes a batch and claims the next one
    commits: neither was committed, so the rows of that claim are not this worker's, and
    another worker takes them. Before, the worker kept the claim it had read and worked those
    rows too, a second time (its finish then fenced off as a lost lease)."""
    ids = await store(ctx, *[("test", f'{{"n": "{n}"}}') for n in range(4)])
    seen: list[str] = []
    armed: list[bool] = []
    router = Router()

    @router.register("test")
    async def handle(event_: Any, ctx_: Any) -> None:
        seen.append(event_.delivery_id)
        if event_.data["n"] == "1":
            armed.append(True)  # the next commit is this batch's finish (and next claim)

    def lose_the_commit(conn: Any) -> None:
        if armed:
            armed.clear()
            raise ConnectionResetError("connection lost at commit")

    event.listen(ctx.engine.sync_engine, "commit", lose_the_commit)
    try:
        w1 = Worker(ctx, router, backoff=no_wait, batch_size=2)
        w2 = Worker(ctx, router, backoff=no_wait, batch_size=2)
        with pytest.raises(ConnectionResetError):
            await w1.process_one()
        rows = await rows_by_id(ctx)
        # nothing of that transaction: the batch is still w1's (until its lease ends), the
        # next two rows still pending
        assert [rows[i].status for i in ids] == ["processing"] * 2 + ["pending"] * 2
        assert await w2.run_until_idle() == 2  # the pending two
        assert not await w1.process_one(claim_next=False)
    finally:
        event.remove(ctx.engine.sync_engine, "commit", lose_the_commit)
    assert sorted(seen) == sorted(ids)  # each handled once
    rows = await rows_by_id(ctx)
    assert {rows[i].claimed_by for i in ids[2:]} == {w2.worker_id}
    assert w1.counts["lost"] == 0


async def test_a_batch_updates_stored_threads_in_id_order(ctx: AppContext, shared_dir: Path) -> None:
    """Two workers whose batches change the same stored threads in opposite delivery orders
    cannot deadlock on them: a batch's updates of stored threads are written at its commit,
    in one flush, in primary-key order (and its new rows are inserted in key order), whatever
    order the deliveries came in."""
    deliveries = backlog(shared_dir)
    opened = [d for d in deliveries if '"action": "opened"' in d[1]][:4]
    await store(ctx, *opened)
    assert await Worker(ctx, backoff=no_wait, max_attempts=1).run_until_idle() == len(opened)
    edits = []
    for _, payload in reversed(opened):  # the newest first
        data = json.loads(payload)
        data["action"] = "edited"
        data["issue"]["body"] = data["issue"]["body"] + " (edited)"
        data["issue"]["updated_at"] = format_datetime(utcnow())
        data["changes"] = {"body": {"from": "before"}}
        edits.append(("issues", json.dumps(data)))
    await store(ctx, *edits)
    updated: list[Any] = []

    def capture(conn: Any, cursor: Any, statement: str, params: Any, context: Any,
                executemany: bool) -> None:
        if statement.lstrip().upper().startswith("UPDATE THREADS"):
            rows = params if executemany else [params]
            updated.extend(row[-1] if isinstance(row, tuple | list) else row for row in rows)

    event.listen(ctx.engine.sync_engine, "before_cursor_execute", capture)
    try:
        worker = Worker(ctx, backoff=no_wait, max_attempts=1, batch_size=len(edits))
        assert await worker.run_until_idle() == len(edits)
    finally:
        event.remove(ctx.engine.sync_engine, "before_cursor_execute", capture)
    assert worker.counts["done"] == len(edits)
    assert len(updated) == len(edits) and updated == sorted(updated), updated
