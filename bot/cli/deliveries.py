"""`rltracker deliveries`: the webhook deliveries whose processing failed, and re-queueing them.

A delivery the worker could not process fails for good after its attempts (about four and a
half hours of retries when GitHub, the network or the database failed; seven minutes for an
unexpected error) or at once when the payload cannot be handled or GitHub refused for good. GitHub saw a 202 and will
not send it again, and the nightly recovery asks GitHub only for deliveries the inbox does
not hold: a failed row stays failed until someone re-queues it. They are counted in
`/metrics` (`rltracker_inbox_deliveries{status="failed"}`), `/healthz`
(`deliveries_failed`) and `/api/stats`.

    rltracker deliveries [--json] [--limit N]    the failed ones, newest first, with the error,
                                                 those waiting for their next attempt, and
                                                 those left `processing` (in a worker's hands,
                                                 or given back by one cut short)
    rltracker deliveries retry ID... | --all     failed ones back to pending with fresh
                                                 attempts; waiting ones attempted now

A transient failure (GitHub down) is retried for hours: while it waits, the delivery is
listed as retrying, with its error and the time of its next attempt, and `retry` takes it
now (the cause fixed, GitHub back) instead of at that time.

A failed delivery of a private repository keeps no payload (bot/store/privacy.py): it is
listed as such and cannot be re-queued (`retry` says so).

Exit status: 0, or 1 when an id given to `retry` is neither failed nor waiting, or is a
private repository's delivery whose payload was not kept (named on stderr; the others are
re-queued).
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from sqlalchemy import func, select, update

from bot.cli import printable
from bot.store.models import Delivery
from bot.store.privacy import EMPTIED_PAYLOAD
from bot.webhooks.inbox import requeue_failed


def _waiting(t: Any) -> Any:
    """Pending rows that failed an attempt and wait for the next (backoff)."""
    return (t.c.status == "pending") & t.c.last_error.is_not(None)


async def failed_deliveries(engine: Any, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """(how many failed, the newest `limit` of them)."""
    t = Delivery.__table__
    async with engine.connect() as conn:
        total = await conn.scalar(select(func.count()).select_from(t).where(t.c.status == "failed"))
        rows = (await conn.execute(
            select(t.c.delivery_id, t.c.event, t.c.action, t.c.repo, t.c.attempts,
                   t.c.received_at, t.c.finished_at, t.c.last_error,
                   (t.c.payload == EMPTIED_PAYLOAD).label("emptied"))
            .where(t.c.status == "failed").order_by(t.c.id.desc()).limit(limit))).all()
    return int(total or 0), [
        {"delivery_id": r.delivery_id, "event": r.event, "action": r.action, "repo": r.repo,
         "attempts": r.attempts,
         "received_at": r.received_at.isoformat() if r.received_at else None,
         "failed_at": r.finished_at.isoformat() if r.finished_at else None,
         "error": (r.last_error or "").split("\n", 1)[0][:300],
         "payload_kept": not r.emptied}
        for r in rows]


async def waiting_deliveries(engine: Any, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """(how many wait for a retry, the `limit` due first)."""
    t = Delivery.__table__
    async with engine.connect() as conn:
        total = await conn.scalar(select(func.count()).select_from(t).where(_waiting(t)))
        rows = (await conn.execute(
            select(t.c.delivery_id, t.c.event, t.c.action, t.c.repo, t.c.attempts,
                   t.c.next_attempt_at, t.c.last_error)
            .where(_waiting(t)).order_by(t.c.next_attempt_at, t.c.id).limit(limit))).all()
    return int(total or 0), [
        {"delivery_id": r.delivery_id, "event": r.event, "action": r.action, "repo": r.repo,
         "attempts": r.attempts,
         "next_attempt_at": r.next_attempt_at.isoformat() if r.next_attempt_at else None,
         "error": (r.last_error or "").split("\n", 1)[0][:300]}
        for r in rows]


async def processing_deliveries(engine: Any, limit: int) -> tuple[int, list[dict[str, Any]]]:
    """(how many are left `processing`, the `limit` oldest): in a worker's hands until
    their lease ends, or given back by a worker cut short (claimed by no one) or left by a
    process that died (its lease over), waiting to be taken again (bot.webhooks.worker)."""
    t = Delivery.__table__
    processing = t.c.status == "processing"
    async with engine.connect() as conn:
        total = await conn.scalar(select(func.count()).select_from(t).where(processing))
        rows = (await conn.execute(
            select(t.c.delivery_id, t.c.event, t.c.action, t.c.repo, t.c.attempts,
                   t.c.claimed_by, t.c.next_attempt_at, t.c.last_error)
            .where(processing).order_by(t.c.id).limit(limit))).all()
    return int(total or 0), [
        {"delivery_id": r.delivery_id, "event": r.event, "action": r.action, "repo": r.repo,
         "attempts": r.attempts, "claimed_by": r.claimed_by,
         "lease_end": r.next_attempt_at.isoformat() if r.next_attempt_at else None,
         "error": (r.last_error or "").split("\n", 1)[0][:300]}
        for r in rows]


def _processing_state(r: dict[str, Any]) -> str:
    if r["claimed_by"] is None:
        return "claimed by no one (given back), taken again by the next worker"
    return f"claimed by {r['claimed_by']} until {r['lease_end'] or '-'}"


async def retry_deliveries(engine: Any, delivery_ids: list[str] | None) -> list[str]:
    """Failed deliveries re-queued with fresh attempts, and deliveries waiting for a retry
    made due now (their attempts kept); the ids of both. A failed delivery of a private
    repository whose payload was not kept is neither (`emptied_deliveries`)."""
    t = Delivery.__table__
    async with engine.begin() as conn:
        stmt = update(t).where(_waiting(t))  # before the failed ones join them as pending
        if delivery_ids is not None:
            stmt = stmt.where(t.c.delivery_id.in_(delivery_ids))
        result = await conn.execute(stmt.values(next_attempt_at=None).returning(t.c.delivery_id))
        waiting = list(result.scalars().all())
        return waiting + await requeue_failed(conn, delivery_ids)


async def emptied_deliveries(engine: Any, delivery_ids: list[str] | None) -> list[str]:
    """Of the failed deliveries (`None`: all), those of a private repository whose payload
    was not kept (bot.store.privacy): nothing to handle, they cannot be re-queued."""
    t = Delivery.__table__
    stmt = select(t.c.delivery_id).where(t.c.status == "failed", t.c.payload == EMPTIED_PAYLOAD)
    if delivery_ids is not None:
        stmt = stmt.where(t.c.delivery_id.in_(delivery_ids))
    async with engine.connect() as conn:
        return list((await conn.execute(stmt.order_by(t.c.id))).scalars().all())


NOT_KEPT = ("a private repository's delivery: its payload was not kept, so it cannot be "
            "re-queued")


def _delivery_line(r: dict[str, Any], when: Any) -> str:
    """One delivery as the listing prints it: id, event.action, repository, `when`, attempts,
    error; tab-separated, each field printable."""
    what = f"{r['event']}.{r['action']}" if r["action"] else r["event"]
    fields = (r["delivery_id"], what, r["repo"] or "-", when, f"attempts {r['attempts']}", r["error"])
    # a delivery's error is its exception's text, which can quote the payload
    line = "\t".join(printable(field) for field in fields)
    return line if r.get("payload_kept", True) else f"{line}\t({NOT_KEPT})"


def deliveries_command(args: Any) -> int:
    from bot.config import Settings
    from bot.store.db import make_engine

    async def run() -> int:
        engine = make_engine(Settings.from_env().database_url)
        try:
            if args.deliveries_command == "retry":
                return await _retry(engine, args)
            total, rows = await failed_deliveries(engine, args.limit)
            waiting, retrying = await waiting_deliveries(engine, args.limit)
            processing, in_hand = await processing_deliveries(engine, args.limit)
        finally:
            await engine.dispose()
        if args.json:
            from bot.cli import utf8_stdout

            utf8_stdout()
            print(json.dumps({"failed": total, "deliveries": rows, "waiting": waiting,
                              "waiting_deliveries": retrying, "processing": processing,
                              "processing_deliveries": in_hand}, ensure_ascii=False))
            return 0
        for r in rows:
            print(_delivery_line(r, r["failed_at"] or "-"))
        shown = f" (the newest {len(rows)} shown)" if len(rows) < total else ""
        print(f"failed deliveries: {total}{shown}"
              + ("; re-queue with `rltracker deliveries retry ID...` or `--all`" if total else ""))
        if waiting:
            for r in retrying:
                print(_delivery_line(r, f"next attempt {r['next_attempt_at'] or '-'}"))
            shown = f" (the {len(retrying)} due first shown)" if len(retrying) < waiting else ""
            print(f"deliveries waiting for a retry: {waiting}{shown}; attempt them now with "
                  "`rltracker deliveries retry ID...` or `--all`")
        if processing:  # (they were listed nowhere: sched61)
            for r in in_hand:
                print(_delivery_line(r, _processing_state(r)))
            shown = f" (the oldest {len(in_hand)} shown)" if len(in_hand) < processing else ""
            print(f"deliveries left processing: {processing}{shown}")
        return 0

    async def _retry(engine: Any, args: Any) -> int:
        if not args.all and not args.ids:
            print("rltracker deliveries retry: give delivery ids or --all", file=sys.stderr)
            return 2
        if args.all and args.ids:  # which was meant is not known: --all re-queued them all (user79)
            print("rltracker deliveries retry: give delivery ids or --all, not both (--all "
                  "re-queues every failed delivery and attempts every waiting one); nothing "
                  "was re-queued", file=sys.stderr)
            return 2
        wanted = None if args.all else list(dict.fromkeys(args.ids))
        done = await retry_deliveries(engine, wanted)
        emptied = await emptied_deliveries(engine, wanted)
        missing = [] if wanted is None else [
            d for d in wanted if d not in set(done) and d not in set(emptied)]
        if wanted is not None:
            for delivery_id in emptied:
                print(f"rltracker deliveries retry: {delivery_id}: {NOT_KEPT}", file=sys.stderr)
        for delivery_id in missing:
            print(f"rltracker deliveries retry: {delivery_id}: no failed delivery, nor one "
                  "waiting for a retry, with this id", file=sys.stderr)
        print(f"re-queued: {len(done)}")
        if wanted is None and emptied:
            print(f"left failed: {len(emptied)} of private repositories (their payloads were "
                  "not kept): they cannot be re-queued")
        return 1 if missing or (wanted is not None and emptied) else 0

    return asyncio.run(run())
