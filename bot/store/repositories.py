"""A repository's rows follow it when GitHub renames it or moves it to another owner.

Threads, the app's actions (and their once-only keys), sync cursors, contribution rules and
the notes of deleted threads are keyed by the repository's name; GitHub keeps the repository's id and sends its new name.
Left under the old name, the next delivery made a second thread of an issue already stored,
and the app no longer found the comment it had posted there.
"""

from __future__ import annotations

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
    actions = (await session.execute(
        select(Action.id, Action.dedupe_key).where(func.lower(Action.repo) == was))).all()
    renamed = {row.id: new + row.dedupe_key[len(old):] for row in actions
               if row.dedupe_key and row.dedupe_key.lower().startswith(was)
               and row.dedupe_key[len(old):len(old) + 1] in ("#", ":")}
    clashes = set(await session.scalars(
        select(Action.dedupe_key).where(Action.dedupe_key.in_(sorted(renamed.values())))))
    for row in actions:
        key = renamed.get(row.id)
        values = {"repo": new} if key is None or key in clashes else {"repo": new, "dedupe_key": key}
        await session.execute(update(Action).where(Action.id == row.id).values(**values)
                              .execution_options(synchronize_session=False))
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
