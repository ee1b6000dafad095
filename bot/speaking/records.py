"""The record of what the app did and did not do on a thread: one Action row per decision.

`record_once` inserts an Action unless its `dedupe_key` exists (the unique index settles
races); `record_skip` records why the app stayed quiet, once per thread and reason. Inside
`skips_written_together` (the worker's batch of decisions) the skips are collected and
written at its end in one transaction instead of one each. Imports only the store, so every
speaking module (and repository config) can record.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from bot.store.models import Action
from bot.store.privacy import lock_repositories
from bot.store.types import utcnow

log = logging.getLogger(__name__)

# The skips of the decisions running inside `skips_written_together` (None outside it).
_COLLECTED_SKIPS: ContextVar[list[dict[str, Any]] | None] = ContextVar(
    "rltracker_collected_skips", default=None)
_KEYS_PRESENT = select(Action.dedupe_key).where(
    Action.dedupe_key.in_(bindparam("keys", expanding=True)))


async def record_once(ctx: Any, **fields: Any) -> bool:
    """Insert an Action; with a dedupe_key already present, insert nothing and return False.
    Nor when its repository is marked private (made private since the thread was stored: read
    under the lock `forget` waits for, bot/store/privacy.py)."""
    async with ctx.sessionmaker() as session:
        if await lock_repositories(session, [str(fields.get("repo") or "")]):
            return False
        key = fields.get("dedupe_key")
        if key is not None and await session.scalar(select(Action.id).where(Action.dedupe_key == key)):
            return False
        session.add(Action(**fields))
        try:
            await session.commit()
        except IntegrityError:
            await session.rollback()
            return False
    return True


def comment_ref(kind: str | None, comment_id: int) -> str:
    """A comment as command keys and markers name it: review comments and reviews are
    numbered apart from issue and discussion comments (`kind` "review", "review_comment")."""
    return str(comment_id) if kind is None else f"{kind}:{comment_id}"


def command_key(repo: str, number: int, ref: str) -> str:
    """The once-only key of the command in comment `ref` (`comment_ref`, or `opening:{word}`)."""
    return f"{repo}#{number}:command:{ref}"


def ref_of_command_key(key: str) -> str:
    """The comment `ref` a `command_key` was made with."""
    return key.rsplit(":command:", 1)[-1]


def skip_key(repo: str, number: int | None, kind: str, code: str) -> str:
    """The once-only key of a skip: one per thread, kind and reason."""
    return f"{repo}#{number}:{kind}:skip:{code}"


async def record_skip(
    ctx: Any, repo: str, number: int | None, kind: str, code: str, reason: str, *,
    at_once: bool = False, **extra: Any
) -> None:
    """`at_once`: written now, also inside `skips_written_together` (a skip something else
    reads while the decision still runs: a refusal owed a new decision, bot.speaking.posting)."""
    log.info("skip %s %s#%s: %s", kind, repo, number, reason)
    fields = {"repo": repo, "number": number, "kind": kind, "status": "skipped",
              "reason": reason, "dedupe_key": skip_key(repo, number, kind, code),
              "details": {"code": code, **extra}}
    collected = _COLLECTED_SKIPS.get()
    if collected is not None and not at_once:
        collected.append(fields)
        return
    await record_once(ctx, **fields)


async def drop_skip(ctx: Any, repo: str, number: int | None, kind: str, code: str) -> None:
    """The skip of that thread, kind and reason is gone (the decision is to be made again)."""
    async with ctx.sessionmaker() as session:
        await session.execute(delete(Action).where(
            Action.dedupe_key == skip_key(repo, number, kind, code)))
        await session.commit()


@asynccontextmanager
async def skips_written_together(ctx: Any) -> AsyncIterator[None]:
    """`record_skip` calls inside it are written when it ends, in one transaction, each still
    at most once per dedupe key. Skips are records, not claims: nothing decides on them, so
    writing them a little later changes no decision. Not written if the block raises."""
    collected: list[dict[str, Any]] = []
    token = _COLLECTED_SKIPS.set(collected)
    try:
        yield
    finally:
        _COLLECTED_SKIPS.reset(token)
    if collected:
        await record_all(ctx, collected)


def _refresh(columns: tuple[str, ...]) -> Any:
    """UPDATE actions SET <columns>, updated_at WHERE dedupe_key = ..., run as an executemany."""
    table = Action.__table__
    return (update(table).where(table.c.dedupe_key == bindparam("b_key"))
            .values(updated_at=bindparam("b_now"), **{c: bindparam(f"b_{c}") for c in columns}))


async def record_all(ctx: Any, rows: list[dict[str, Any]], *, refresh: tuple[str, ...] = ()) -> None:
    """`record_once` of each row, in one transaction of a few statements whatever their
    number: the first row of a dedupe key counts, nothing is written for a repository marked
    private. A key already present has its `refresh` columns (and updated_at) set from the
    row instead (the preview's actions hold its latest text), in one statement."""
    by_key: dict[str, dict[str, Any]] = {}
    for fields in rows:
        by_key.setdefault(fields["dedupe_key"], fields)  # the first reason recorded counts
    if not by_key:
        return
    present: set[str] = set()
    # With `refresh`, a key another writer inserted meanwhile is refreshed on the second try.
    for _ in range(2 if refresh else 1):
        async with ctx.sessionmaker() as session:
            hidden = await lock_repositories(session, {str(f.get("repo") or "") for f in rows})
            present = set(await session.scalars(_KEYS_PRESENT, {"keys": list(by_key)}))
            private = {k for k, f in by_key.items() if str(f.get("repo") or "").lower() in hidden}
            new = [f for k, f in by_key.items() if k not in present | private]
            stale = sorted(present - private) if refresh else []
            present |= private
            try:
                if new:  # one statement for all (the ORM inserts them one by one)
                    await session.execute(insert(Action.__table__), new)
                if stale:
                    now = utcnow()
                    await session.execute(_refresh(refresh), [
                        {"b_key": k, "b_now": now, **{f"b_{c}": by_key[k][c] for c in refresh}}
                        for k in stale])
                await session.commit()
                return
            except IntegrityError:  # another worker recorded one of them meanwhile
                await session.rollback()
    for key, fields in by_key.items():
        if key not in present:
            await record_once(ctx, **fields)
