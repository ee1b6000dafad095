"""A repository's rows follow it when GitHub renames it or moves it to another owner, and a
thread's actions follow it when GitHub transfers it.

Threads, the app's actions (and their once-only keys), sync cursors, contribution rules and
the notes of deleted threads are keyed by the repository's name; GitHub keeps the repository's
id and sends its new name. Left under the old name, the next delivery made a second thread of an issue already stored,
and the app no longer found the comment it had posted there.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.models import Action, ContributionRules, Deletion, SyncCursor, Thread


async def follow_rename(session: AsyncSession, old: str, new: str) -> None:
    """Move what is stored under repository `old` to `new`. A row whose place under `new` is
    taken already (a thread stored under both names before this ran) stays where it is."""
    was, now = old.lower(), new.lower()
    taken = select(Thread.number).where(func.lower(Thread.repo) == now).scalar_subquery()
    await session.execute(
        update(Thread).where(func.lower(Thread.repo) == was, Thread.number.not_in(taken))
        .values(repo=new).execution_options(synchronize_session=False))
    # Once-only keys start with the name: "{repo}#{number}:failure_comment", "{repo}:config:..."
    await _move_actions(session, func.lower(Action.repo) == was, old, new, {"repo": new})
    if not await session.scalar(select(SyncCursor.id).where(func.lower(SyncCursor.repo) == now)):
        await session.execute(update(SyncCursor).where(func.lower(SyncCursor.repo) == was)
                              .values(repo=new).execution_options(synchronize_session=False))
    if not await session.scalar(
            select(ContributionRules.id).where(func.lower(ContributionRules.repo) == now)):
        await session.execute(update(ContributionRules).where(func.lower(ContributionRules.repo) == was)
                              .values(repo=new).execution_options(synchronize_session=False))
    # Deleted threads stay deleted under the new name: "thread:issue:{repo}#{number}".
    for family in ("issue", "discussion"):
        prefix, moved = f"thread:{family}:{was}#", f"thread:{family}:{now}#"
        graves = (await session.execute(select(Deletion.id, Deletion.key).where(
            func.substr(Deletion.key, 1, len(prefix)) == prefix))).all()
        taken_keys = set(await session.scalars(select(Deletion.key).where(
            Deletion.key.in_([moved + g.key[len(prefix):] for g in graves]))))
        for grave in graves:
            key = moved + grave.key[len(prefix):]
            if key not in taken_keys:
                await session.execute(update(Deletion).where(Deletion.id == grave.id)
                                      .values(key=key).execution_options(synchronize_session=False))


async def follow_transfer(session: AsyncSession, old_repo: str, old_number: int,
                          new_repo: str, new_number: int) -> None:
    """The app's actions on a thread GitHub transferred (its comments went along) move to its
    new place, once-only keys with them: left behind, the new place had no failure comment
    on record and the app decided (and commented) again."""
    await _move_actions(
        session, (func.lower(Action.repo) == old_repo.lower()) & (Action.number == old_number),
        f"{old_repo}#{old_number}", f"{new_repo}#{new_number}",
        {"repo": new_repo, "number": new_number})


async def _move_actions(session: AsyncSession, which: Any, old_prefix: str, new_prefix: str,
                        values: dict[str, Any]) -> None:
    """Set `values` on the actions `which` selects, and their once-only keys that start with
    `old_prefix` (then "#" or ":") to start with `new_prefix`, unless that key is taken."""
    actions = (await session.execute(select(Action.id, Action.dedupe_key).where(which))).all()
    n = len(old_prefix)
    renamed = {row.id: new_prefix + row.dedupe_key[n:] for row in actions
               if row.dedupe_key and row.dedupe_key[:n].lower() == old_prefix.lower()
               and row.dedupe_key[n:n + 1] in ("#", ":")}
    clashes = set(await session.scalars(
        select(Action.dedupe_key).where(Action.dedupe_key.in_(sorted(renamed.values())))))
    for row in actions:
        key = renamed.get(row.id)
        row_values = values if key is None or key in clashes else {**values, "dedupe_key": key}
        await session.execute(update(Action).where(Action.id == row.id).values(**row_values)
                              .execution_options(synchronize_session=False))
