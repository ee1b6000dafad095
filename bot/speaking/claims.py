"""The once-only slot of a spontaneous comment, and the daily budget.

An Action row with a unique `dedupe_key` ("{repo}#{number}:failure_comment") is inserted as
`pending` BEFORE anything is posted, in a transaction that first takes a per-repository
write lock (a no-op UPDATE of the repository row: a row lock on PostgreSQL, the write lock on
SQLite), so the budget is counted and the slot claimed atomically. A second worker, a
redelivery or a concurrent run finds the row (or hits the unique index) and does nothing; a
pending claim older than STALE_PENDING was left by a crash and is taken over.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, or_, select, update
from sqlalchemy.exc import IntegrityError

from bot.speaking.records import record_skip
from bot.speaking.situation import Situation
from bot.store.models import Action, Repository
from bot.store.types import utcnow

log = logging.getLogger(__name__)

BUDGET_KINDS = ("failure_comment", "rule_summary")
LIVE_STATUSES = ("posted", "dry_run", "pending")
STALE_PENDING = timedelta(minutes=10)  # a pending claim older than this was left by a crash
REPLY_WINDOW = timedelta(hours=1)  # `per_hour` of claim_lease: the replies of the last hour


class ClaimHeld(Exception):  # noqa: N818 - a state to wait out, not an error
    """The slot is held by a `pending` claim an earlier attempt of this same delivery wrote and
    never finished: that attempt died (a kill, a restart, a hang past the worker's lease), and
    may have posted before it did. Nobody else will finish the claim, so the delivery is
    retried (`retry_after` seconds: when the claim turns stale) and then takes it over,
    finding the comment by its marker if it was posted. The worker reads `retry_after`."""

    def __init__(self, dedupe_key: str, retry_after: float) -> None:
        super().__init__(f"{dedupe_key} is held by an unfinished earlier attempt of this "
                         f"delivery; taken over in {retry_after:.0f} s")
        self.retry_after = retry_after


def held_by_an_earlier_attempt(existing: Action | None, delivery_id: str | None,
                               now: datetime | None = None) -> None:
    """Raise ClaimHeld when `existing` is a pending, not yet stale claim written by an earlier
    attempt of the delivery `delivery_id` (the worker's retry of a delivery finds its own)."""
    if (existing is None or not delivery_id or existing.status != "pending"
            or existing.delivery_id != delivery_id):
        return
    wait = (existing.updated_at + STALE_PENDING - (now or utcnow())).total_seconds()
    if wait > 0:
        raise ClaimHeld(existing.dedupe_key or "the slot", wait + 1.0)


def delivery_of(payload: dict[str, Any] | None) -> str | None:
    """The id of the delivery being handled (the worker adds it to the payload it dispatches)."""
    value = (payload or {}).get("_delivery_id")
    return str(value) if value else None


def day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


async def claim_lease(
    ctx: Any,
    situation: Situation,
    *,
    kind: str,
    dedupe_key: str,
    budget: int | None,
    language: str | None = None,
    details: dict[str, Any] | None = None,
    delivery_id: str | None = None,
    per_hour: int | None = None,
) -> tuple[str, int | None, datetime | None]:
    """Take the once-only slot: ("claimed", action id, lease), ("owned", None, None) or
    ("budget", None, None). The lease is the claim's `updated_at` as this run wrote it.
    `per_hour`: at most that many comments of `kind` on the thread claimed in the last hour
    (REPLY_WINDOW; a command's replies and notes: a row with a text, or claimed and about to
    get one; a command acknowledged with a 👍 has none), counted under the same lock as the
    daily budget; past it ("budget", None, None). A slot claimed before is not counted
    again: a retry finds its own row first.
    `delivery_id`: the delivery deciding; a pending claim an earlier attempt of it left raises
    ClaimHeld (see there) instead of "owned". A run that
    posts checks it is still theirs (`renew`) right before posting: a pending claim older
    than STALE_PENDING is taken over, and a live but slow run that went on to post would
    post a second comment beside the one the run that took over posted."""
    now = utcnow()
    async with ctx.sessionmaker() as session:
        try:
            # Per-repository lock first (see the module docstring), then check and insert.
            await session.execute(
                update(Repository)
                .where(Repository.id == situation.repo_id)
                .values(comments_paused=Repository.comments_paused)
            )
            if await session.scalar(select(Repository.private).where(
                    Repository.id == situation.repo_id)):
                # Made private since the thread was stored (`forget` holds this lock while it
                # forgets, bot/store/privacy.py): nothing is posted there, nor recorded.
                await session.rollback()
                return "owned", None, None
            existing = await session.scalar(select(Action).where(Action.dedupe_key == dedupe_key))
            if existing is not None:
                try:
                    held_by_an_earlier_attempt(existing, delivery_id, now)
                except ClaimHeld:
                    await session.rollback()
                    raise
                if existing.status == "pending" and existing.updated_at < now - STALE_PENDING:
                    existing.updated_at = now  # left behind by a crashed worker: take it over
                    existing_id = existing.id
                    await session.commit()
                    return "claimed", existing_id, now
                await session.rollback()
                return "owned", None, None
            if per_hour is not None:
                sent = await session.scalar(
                    select(func.count(Action.id)).where(
                        Action.repo == situation.repo,
                        Action.number == situation.number,
                        Action.kind == kind,
                        Action.status.in_(LIVE_STATUSES),
                        or_(Action.status == "pending", Action.body.is_not(None)),
                        Action.created_at >= now - REPLY_WINDOW,
                    )
                )
                if (sent or 0) >= per_hour:
                    await session.rollback()
                    return "budget", None, None
            if budget is not None:
                used = await session.scalar(
                    select(func.count(Action.id)).where(
                        Action.repo == situation.repo,
                        Action.kind.in_(BUDGET_KINDS),
                        Action.status.in_(LIVE_STATUSES),
                        Action.created_at >= day_start(now),
                    )
                )
                if (used or 0) >= budget:
                    await session.rollback()
                    return "budget", None, None
            action = Action(
                repo=situation.repo, number=situation.number, kind=kind, status="pending",
                dedupe_key=dedupe_key, language=language, details=details or {},
                delivery_id=delivery_id, created_at=now, updated_at=now,
            )
            session.add(action)
            await session.commit()
            return "claimed", action.id, now
        except IntegrityError:
            await session.rollback()
            return "owned", None, None


async def claim_within_budget(
    ctx: Any, sit: Situation, config: Any, *, kind: str, dedupe_key: str, **fields: Any
) -> tuple[str, int | None, datetime | None]:
    """Claim a once-only comment under the repository's daily budget: ("claimed", id, lease),
    or ("owned", None, None) when another run holds it, or ("skipped:budget", None, None) with
    the skip recorded."""
    state, action_id, lease = await claim_lease(
        ctx, sit, kind=kind, dedupe_key=dedupe_key, budget=config.daily_budget, **fields
    )
    if state == "budget":
        await record_skip(ctx, sit.repo, sit.number, kind, "budget",
                          f"daily comment budget of {config.daily_budget} reached")
        return "skipped:budget", None, None
    if state == "owned" or action_id is None:
        return "owned", None, None
    return "claimed", action_id, lease


async def budget_now(ctx: Any, sit: Situation, config: Any,
                     action_id: int) -> tuple[str, str] | None:
    """("budget", reason) when the repository's daily budget as `config` says it now (read
    again right before posting: `config_now`) is spent by the other comments of the day, not
    counting this run's claim; else None. The claim was judged under the cached budget: a
    maintainer who set `daily_budget: 0` meanwhile gets no comment. One COUNT."""
    now = utcnow()
    async with ctx.sessionmaker() as session:
        used = await session.scalar(select(func.count(Action.id)).where(
            Action.repo == sit.repo, Action.kind.in_(BUDGET_KINDS),
            Action.status.in_(LIVE_STATUSES), Action.created_at >= day_start(now),
            Action.id != action_id))
    if (used or 0) >= config.daily_budget:
        return "budget", f"daily comment budget of {config.daily_budget} reached"
    return None


async def renew(ctx: Any, action_id: int, lease: datetime | None, **values: Any) -> datetime | None:
    """Right before posting: the pending claim is still this run's (nobody took it over as
    stale) and is renewed for another STALE_PENDING, with `values` written (the body about to
    be posted). Returns the new lease, or None when another run took the claim over: it
    posts, this one must not. A post (bounded by the GitHub client's retry policy, well under
    STALE_PENDING) then lands before anyone can take the claim over, and whoever does finds
    the comment by its marker."""
    now = utcnow()
    async with ctx.sessionmaker() as session:
        result = await session.execute(
            update(Action)
            .where(Action.id == action_id, Action.status == "pending", Action.updated_at == lease)
            .values(updated_at=now, **values))
        await session.commit()
    return now if result.rowcount == 1 else None


async def finish(ctx: Any, action_id: int, *, lease: datetime | None = None, **values: Any) -> None:
    """Write the outcome; with `lease`, only while the claim is still this run's (a run whose
    claim was taken over neither records its outcome over the new owner's nor gives up the
    slot the new owner holds)."""
    async with ctx.sessionmaker() as session:
        values.setdefault("updated_at", utcnow())
        query = update(Action).where(Action.id == action_id)
        if lease is not None:
            query = query.where(Action.updated_at == lease)
        await session.execute(query.values(**values))
        await session.commit()


# An action's details["written"]: the digest of each text a rewrite was about to PATCH into
# the app's comment, recorded before the PATCH (`record_text`).
WRITTEN = "written"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def texts_written(ctx: Any, repo: str, number: int, kind: str) -> set[str]:
    """The digests (`text_digest`) of every text the app wrote or was about to write into its
    `kind` comment on the thread: each action's body (posted, about to be posted, or failed
    with its answer lost) and each text a rewrite recorded before its PATCH. A comment of
    ours whose text is none of them was edited by a person on GitHub."""
    async with ctx.sessionmaker() as session:
        rows = await session.execute(select(Action.body, Action.details).where(
            Action.repo == repo, Action.number == number, Action.kind == kind))
    digests: set[str] = set()
    for body, details in rows:
        if body is not None:
            digests.add(text_digest(body))
        digests.update((details or {}).get(WRITTEN) or ())
    return digests


async def locked_action(session: Any, action_id: int) -> Action | None:
    """The action's row, locked first by a no-op UPDATE (a row lock on PostgreSQL, the write
    lock on SQLite), so that two writers at once each keep what they add to its details."""
    await session.execute(update(Action).where(Action.id == action_id)
                          .values(frozen=Action.frozen, updated_at=Action.updated_at))
    return await session.get(Action, action_id)


async def record_text(ctx: Any, action_id: int, body: str) -> None:
    """Before a PATCH of the app's comment: the text about to be written is the app's own from
    now on. GitHub may apply the PATCH and its answer be lost (a dropped connection, a 5xx
    after applying); the next writer then finds this text on GitHub while the action's body
    still holds the old one, and must not take it for a person's edit (`texts_written`)."""
    async with ctx.sessionmaker() as session:
        row = await locked_action(session, action_id)
        if row is not None:
            written = list((row.details or {}).get(WRITTEN) or ())
            if text_digest(body) not in written:
                row.details = {**(row.details or {}), WRITTEN: [*written, text_digest(body)]}
        await session.commit()


async def fail(ctx: Any, action_id: int, error: BaseException, *,
               lease: datetime | None = None) -> None:
    """A post that failed and was not refused for good (a 5xx, a rate limit, a lost
    connection): recorded `failed` with the error as its reason (the failure stays
    visible) and its once-only slot given back (`dedupe_key` cleared), so that the worker's
    retry can post; with `lease`, only while it is still this run's claim."""
    await finish(ctx, action_id, lease=lease, status="failed", dedupe_key=None,
                 reason=f"{type(error).__name__}: {error}"[:500])


async def release(ctx: Any, action_id: int, *, lease: datetime | None = None) -> None:
    """Give the slot up (the claim's row deleted); with `lease`, only while it is still this
    run's claim."""
    async with ctx.sessionmaker() as session:
        row = await session.get(Action, action_id)
        if row is not None and (lease is None or row.updated_at == lease):
            await session.delete(row)
            await session.commit()
