"""A repository's rows follow it when GitHub renames it or moves it to another owner, and a
thread's actions follow it when GitHub transfers it.

Threads, the app's actions (and their once-only keys), sync cursors, contribution rules and
the notes of deleted threads are keyed by the repository's name; GitHub keeps the repository's
id and sends its new name. Left under the old name, the next delivery made a second thread of an issue already stored,
and the app no longer found the comment it had posted there.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import delete, false, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from bot.store.models import (
    Action,
    Comment,
    ContributionRules,
    Deletion,
    Repository,
    ReviewTransition,
    SyncCursor,
    Thread,
    Verdict,
)


async def follow_rename(session: AsyncSession, old: str, new: str) -> None:
    """Move what is stored under repository `old` to `new`. A thread stored under both names
    before this ran (webhooks under the old one, a sync under the new one) becomes one, under
    `new` (`_merge_threads`): left under the old name it was counted twice."""
    was, now = old.lower(), new.lower()
    if was == now:
        return
    # The repository's rows and then its threads under both names locked first, each in id
    # order (PostgreSQL; SQLite renders nothing), as a webhook batch takes them (its
    # repositories FOR SHARE, then its threads) and an analysis its threads: the UPDATE below
    # locks the threads in the order it reads them (by number, or the table's order), and
    # met an analysis holding one and waiting for another (a deadlock).
    await session.execute(select(Repository.id).where(
        func.lower(Repository.full_name).in_([was, now])).order_by(Repository.id)
        .with_for_update())
    await session.execute(select(Thread.id).where(func.lower(Thread.repo).in_([was, now]))
                          .order_by(Thread.id).with_for_update())
    await _merge_threads(session, was, now)
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


async def _merge_threads(session: AsyncSession, was: str, now: str) -> None:
    """Each thread stored under both `was` and `now` (lower-case names of one repository) with
    the same number becomes the one under `now`: the other's fields when it is the later
    version, a mute on either stays, and what `join_threads` carries (comments, a verdict,
    the first entry id); the one under `was` is deleted. The app's actions follow in
    follow_rename."""
    old_t, new_t = aliased(Thread), aliased(Thread)
    pairs = (await session.execute(
        select(old_t.id, new_t.id).join(new_t, new_t.number == old_t.number)
        .where(func.lower(old_t.repo) == was, func.lower(new_t.repo) == now))).all()
    for old_id, new_id in pairs:
        old, new = await session.get(Thread, old_id), await session.get(Thread, new_id)
        assert old is not None and new is not None
        if old.updated_at is not None and (new.updated_at is None or old.updated_at > new.updated_at):
            for column in MERGED_COLUMNS:
                setattr(new, column, getattr(old, column))
        new.muted = bool(new.muted or old.muted)
        await join_threads(session, old, new)
    if pairs:
        await session.flush()


async def join_threads(session: AsyncSession, gone: Thread, kept: Thread) -> None:
    """One thread stored twice (under two names of a repository, or at both ends of a
    transfer) becomes `kept`: `gone`'s comments move to it (GitHub's comment ids are unique,
    so none is there twice), a person's verdict on `gone` too when `kept` has none or an
    earlier one (a verdict is the person's word on the thread, wherever it was given, and the
    latest word wins by when it was given, as `set_verdict` decides; on a tie `kept`'s
    stays), and `kept` takes the
    entry id of the one stored first (its feed entry: `first_repo`, `first_number`,
    `first_repo_id`), and `gone`'s review history when `kept` has none; then `gone` is deleted (its analysis with it: the caller analyses the
    thread again)."""
    await session.execute(update(Comment).where(Comment.thread_id == gone.id)
                          .values(thread_id=kept.id).execution_options(synchronize_session=False))
    kept_given = await session.scalar(select(Verdict.given_at).where(Verdict.thread_id == kept.id))
    gone_given = await session.scalar(select(Verdict.given_at).where(Verdict.thread_id == gone.id))
    if gone_given is not None and (kept_given is None or gone_given > kept_given):
        await session.execute(delete(Verdict).where(Verdict.thread_id == kept.id)
                              .execution_options(synchronize_session=False))
        await session.execute(update(Verdict).where(Verdict.thread_id == gone.id)
                              .values(thread_id=kept.id)
                              .execution_options(synchronize_session=False))
    # The review history of `gone` when `kept` has none (two histories of one thread, each a
    # chain from its own first state, would not read as one).
    if await session.scalar(select(ReviewTransition.id)
                            .where(ReviewTransition.thread_id == kept.id).limit(1)) is None:
        await session.execute(update(ReviewTransition).where(ReviewTransition.thread_id == gone.id)
                              .values(thread_id=kept.id)
                              .execution_options(synchronize_session=False))
    first = gone if gone.id < kept.id else kept
    kept.first_repo, kept.first_number, kept.first_repo_id = (
        first.first_repo or first.repo, first.first_number or first.number, first.first_repo_id)
    await session.execute(delete(Thread).where(Thread.id == gone.id)
                          .execution_options(synchronize_session=False))
    session.expunge(gone)


# what the later version of a thread merged into another brings (not its place: repo, number)
MERGED_COLUMNS = ("kind", "github_id", "node_id", "title", "body", "author", "author_association",
                  "author_is_bot", "state", "state_reason", "closed_by", "labels", "assignees",
                  "url", "complete", "created_at", "updated_at", "closed_at")


async def settle_repository(session: AsyncSession, name: str, github_id: int | None, *,
                            seen_at: datetime | None = None, former: Iterable[str] = (),
                            framework: str | None = None) -> None:
    """GitHub says repository `github_id` is called `name` now (the sync read it so). The rows
    stored under another name of it move to `name`: those of the repository row that holds
    its id under a name from before a rename no event told of, and those made under `former`
    (a name the sync was given that GitHub resolved to `name`). One repository row is left,
    under `name`, with the id; a thread stored under two names becomes one (follow_rename).
    A row under `name` holding another id (a repository deleted, its name taken again) is
    left alone."""
    names = {n.lower() for n in (name, *former)}
    rows = list(await session.scalars(select(Repository).where(or_(
        func.lower(Repository.full_name).in_(sorted(names)),
        Repository.github_id == github_id if github_id is not None else false()))))
    here = next((r for r in rows if r.full_name.lower() == name.lower()), None)
    if here is not None and github_id is not None and here.github_id not in (None, github_id):
        return
    mine = [r for r in rows if r.github_id in (None, github_id)]
    if not mine:
        session.add(Repository(full_name=name, github_id=github_id, framework=framework,
                               name_seen_at=seen_at))
        await session.flush()
        return
    # the row to keep: the one holding the id (its installation, settings), else the name's
    keep = next((r for r in mine if github_id is not None and r.github_id == github_id), None)
    keep = keep or here or mine[0]
    # One of them marked private (privacy62): the repository is taken as private until GitHub
    # says otherwise (`publicized`, the sync, the nightly visibility check): the mark stays on
    # the row kept, and what the merge brings under it is forgotten. (Before, a marked row
    # merged away took its mark with it, and the other row's threads stayed published.)
    # (Not for a marked row merely settled: nothing was moved under it.)
    marked = any(r.private for r in mine) and (
        len(mine) > 1 or keep.full_name.lower() != name.lower())
    for row in mine:
        if row is keep:
            continue
        await follow_rename(session, row.full_name, name)
        keep.installation_id = keep.installation_id or row.installation_id
        await session.delete(row)
    await session.flush()
    await follow_rename(session, keep.full_name, name)
    keep.full_name = name
    if github_id is not None:
        keep.github_id = github_id
    keep.framework = framework or keep.framework
    if seen_at is not None and (keep.name_seen_at is None or seen_at > keep.name_seen_at):
        keep.name_seen_at = seen_at
    await session.flush()
    if marked:
        from bot.store.privacy import forget_repository

        await forget_repository(session, name, keep.github_id)


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
