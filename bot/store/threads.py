"""Thread and comment records in and out of the database.

A *thread record* is the contract shape of ../shared/contracts/README.md (`thread`), plus the
optional keys `github_id`, `node_id`, `updated_at`, `assignees` (and, for discussions,
`answered`, `answer_chosen_by`, `category`; for review comments `path`; for comments GitHub
shows hidden `minimized_reason`). Webhook handlers and
the GraphQL sync both write through `upsert_thread` / `upsert_comment`, so the two paths give
identical rows.

Comments are keyed (kind, GitHub id): GitHub numbers issue comments, reviews, review comments
and discussion comments apart, so each is a kind of its own here (`discussion_comment` for
the comments and replies of discussions). What leaves the store as a contract record
(`thread_record`) is the contract's shape: a discussion comment is a `comment` there, and the
keys the contract does not name stay out (`answered`, `category`), but for two optional
comment keys the contract's "add optional keys" allows: a review comment's `path` (the review
analyzer reads it) and `minimized_reason` (read by bot.analysis.analysis_input, never given to
the analyzers).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.db import dialect_insert
from bot.store.models import Comment, Deletion, Repository, Thread
from bot.store.repositories import follow_transfer, join_threads
from bot.store.types import format_datetime, parse_datetime, utcnow
from bot.templating import without_controls

THREAD_FIELDS = (
    "kind", "github_id", "node_id", "title", "body", "author", "author_association",
    "author_is_bot", "state", "state_reason", "closed_by", "labels", "assignees", "url",
    "complete", "answered", "answer_chosen_by", "category",
)
THREAD_TIMES = ("created_at", "updated_at", "closed_at")
COMMENT_FIELDS = ("node_id", "author", "author_association", "author_is_bot", "body", "path",
                  "minimized_reason")
# The stored kinds the contract names otherwise (its comment kinds: comment, review,
# review_comment).
CONTRACT_KINDS = {"discussion_comment": "comment"}
COMMENT_TIMES = ("created_at", "updated_at")


def storable_text(value: Any) -> Any:
    """A text with U+0000 as U+FFFD: GitHub keeps a NUL pasted into a body (a binary log),
    PostgreSQL text cannot hold one (the row was refused) and SQLite stored it: the same
    text on both now."""
    return value.replace("\x00", "\ufffd") if isinstance(value, str) and "\x00" in value else value


def _blank_to_none(value: Any) -> Any:
    # GraphQL gives "" where REST and webhooks give null.
    return None if value == "" else value


# The lookups every delivery makes, built once: building a statement costs more than
# SQLite takes to run it.
_THREAD_BY_NAME = select(Thread).where(
    func.lower(Thread.repo) == bindparam("repo"), Thread.number == bindparam("number")
)
_COMMENTS_OF = (
    select(Comment)
    .where(Comment.thread_id == bindparam("thread_id"))
    # NULLS LAST spelled out: SQLite sorts NULL first, PostgreSQL last (tests/test_null_order.py)
    .order_by(Comment.created_at.asc().nulls_last(), Comment.id)
)


_THREADS_NAMED = select(Thread).where(
    func.lower(Thread.repo).in_(bindparam("repos", expanding=True)),
    Thread.number.in_(bindparam("numbers", expanding=True)),
)
_COMMENTS_WITH_IDS = select(Comment).where(
    Comment.github_id.in_(bindparam("github_ids", expanding=True)))


# Locked (PostgreSQL FOR UPDATE; SQLite renders nothing, its writes are serialised): an
# analysis reads its thread so, and holds it to its commit (bot.pipeline), in id order.
_THREAD_BY_NAME_LOCKED = _THREAD_BY_NAME.with_for_update()
_THREADS_NAMED_LOCKED = _THREADS_NAMED.order_by(Thread.id).with_for_update()


async def get_thread(session: AsyncSession, repo: str, number: int, *,
                     lock: bool = False) -> Thread | None:
    """`lock`: the row locked to the end of the transaction (a delivery writing the thread
    meanwhile waits)."""
    statement = _THREAD_BY_NAME_LOCKED if lock else _THREAD_BY_NAME
    return await session.scalar(statement, {"repo": repo.lower(), "number": number})


async def get_threads(session: AsyncSession, keys: set[tuple[str, int]], *, lock: bool = False
                      ) -> dict[tuple[str, int], Thread | None]:
    """Several threads in one query: (lower-case repo, number) -> thread, or None when not
    stored (every key is in the result). `lock` as for `get_thread`, taken in id order."""
    found: dict[tuple[str, int], Thread | None] = dict.fromkeys(keys)
    if keys:
        for thread in await session.scalars(_THREADS_NAMED_LOCKED if lock else _THREADS_NAMED, {
            "repos": sorted({r for r, _ in keys}), "numbers": sorted({n for _, n in keys}),
        }):
            key = (thread.repo.lower(), thread.number)
            if key in found:
                found[key] = thread
    return found


async def get_comments(session: AsyncSession, keys: set[tuple[str, int]]
                       ) -> dict[tuple[str, int], Comment | None]:
    """Several comments in one query: (kind, github_id) -> comment, or None when not stored."""
    found: dict[tuple[str, int], Comment | None] = dict.fromkeys(keys)
    if keys:
        for comment in await session.scalars(_COMMENTS_WITH_IDS,
                                             {"github_ids": sorted({g for _, g in keys})}):
            if (comment.kind, comment.github_id) in found:
                found[(comment.kind, comment.github_id)] = comment
    return found


async def upsert_thread(
    session: AsyncSession, record: dict[str, Any], *, looked_up: tuple[Thread | None] | None = None,
    flush: bool = True,
) -> Thread:
    """Insert or update a thread from a record; keys absent from the record are left alone.
    `looked_up`: (the stored thread or None,) when the caller has just looked it up in this
    session, so it is not looked up twice. `flush=False` leaves an update of a stored thread
    to the next flush (a batch's commit writes its updates together); a new one is flushed
    anyway (its id is needed)."""
    if looked_up is not None:
        thread = looked_up[0]
    else:
        thread = await get_thread(session, record["repo"], int(record["number"]))
    if thread is None:
        thread = Thread(repo=record["repo"], number=int(record["number"]), kind=record["kind"])
        reused = await reused_names(session, {(thread.repo, thread.number)})
        thread.first_repo_id = reused.get((thread.repo, thread.number))
        session.add(thread)
    for key, value in thread_values(record).items():
        setattr(thread, key, value)
    if flush or thread.id is None:
        await session.flush()
    return thread


def thread_values(record: dict[str, Any]) -> dict[str, Any]:
    """The columns a thread record sets (keys absent from it are left alone)."""
    values: dict[str, Any] = {}
    for key in THREAD_FIELDS:
        if key in record:
            value = record[key]
            if key in ("state_reason", "closed_by", "author_association", "body",
                       "answer_chosen_by", "category"):
                value = _blank_to_none(value)
            if key in ("labels", "assignees"):
                value = list(value or [])
            if key in ("title", "body"):  # (a U+0000 as U+FFFD, on both databases)
                value = storable_text(value or "" if key == "title" else value)
            if key == "title":  # the other control characters go, as on GitHub
                value = without_controls(value)
            if key == "complete" and value is None:
                continue
            values[key] = value
    for key in THREAD_TIMES:
        if key in record:
            values[key] = parse_datetime(record[key])
    return values


def comment_values(record: dict[str, Any]) -> dict[str, Any]:
    """The columns a comment record sets (keys absent from it are left alone)."""
    values: dict[str, Any] = {}
    for key in COMMENT_FIELDS:
        if key in record:
            value = record[key]
            if key in ("author_association", "path", "minimized_reason"):
                value = _blank_to_none(value)
            if key == "body":
                value = storable_text(value or "")
            values[key] = value
    for key in COMMENT_TIMES:
        if key in record:
            values[key] = parse_datetime(record[key])
    return values


async def reused_names(session: AsyncSession, keys: set[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """Of the (repo, number) of threads about to be inserted, those another stored thread was
    first stored under (`first_repo`, `first_number`: its feed entry's id), each with the
    GitHub id of the repository now called `repo`. GitHub gives a repository's number to one
    thread only, and a thread moved away leaves its place empty for good: held by another
    thread, the name is another repository's now (the one that held it renamed or moved away
    since), and the new thread's entry id carries this id (`Thread.first_repo_id`). A name
    whose repository's id is not stored (no delivery or sync named it yet) is left out."""
    if not keys:
        return {}
    held = {(r, n) for r, n in (await session.execute(
        select(Thread.first_repo, Thread.first_number).where(
            Thread.first_repo.in_(sorted({k[0] for k in keys})),
            Thread.first_number.in_(sorted({k[1] for k in keys}))))).all()} & keys
    if not held:
        return {}
    ids = {name.lower(): gid for name, gid in (await session.execute(
        select(Repository.full_name, Repository.github_id).where(
            func.lower(Repository.full_name).in_(sorted({r.lower() for r, _ in held}))))).all()
        if gid is not None}
    return {key: ids[key[0].lower()] for key in held if key[0].lower() in ids}


async def insert_new(session: AsyncSession, model: type[Thread] | type[Comment],
                     rows: list[dict[str, Any]]) -> None:
    """INSERT rows known to be new, as few statements as there are column sets (Core
    executemany: the ORM inserts them one by one). The caller reads them back if it needs
    them; a row stored meanwhile by someone else raises IntegrityError. A thread under a
    name taken again is marked as `upsert_thread` marks it (`reused_names`)."""
    if model is Thread:
        reused = await reused_names(session, {(r["repo"], int(r["number"])) for r in rows})
        rows = [{**r, "first_repo_id": reused.get((r["repo"], int(r["number"])))} for r in rows]
    by_columns: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        by_columns.setdefault(tuple(sorted(row)), []).append(row)
    table = model.__table__
    for group in by_columns.values():
        await session.execute(insert(table), group)


async def upsert_comment(
    session: AsyncSession, thread: Thread, record: dict[str, Any], *,
    looked_up: tuple[Comment | None] | None = None, flush: bool = True,
) -> Comment:
    """Insert or update a comment keyed by (kind, github_id). `looked_up`: (the stored comment
    or None,) when the caller has just looked it up in this session; `flush` as for
    `upsert_thread`."""
    kind = record.get("kind") or "comment"
    github_id = int(record["github_id"])
    if looked_up is not None:
        comment = looked_up[0]
    else:
        comment = await session.scalar(
            select(Comment).where(Comment.kind == kind, Comment.github_id == github_id)
        )
    if comment is None:
        comment = Comment(kind=kind, github_id=github_id, thread_id=thread.id)
        session.add(comment)
    comment.thread_id = thread.id
    for key, value in comment_values(record).items():
        setattr(comment, key, value)
    if flush or comment.id is None:
        await session.flush()
    return comment


async def delete_comment(session: AsyncSession, kind: str, github_id: int) -> bool:
    result = await session.execute(
        delete(Comment).where(Comment.kind == kind, Comment.github_id == int(github_id))
    )
    return bool(result.rowcount)


async def load_comments(session: AsyncSession, thread: Thread, *, limit: int | None = None,
                        offset: int = 0) -> list[Comment]:
    """A thread's comments in time order; `limit` of them after `offset` when given (the
    JSON API pages a long thread's)."""
    query = _COMMENTS_OF if limit is None else _COMMENTS_OF.limit(limit).offset(offset)
    return list(await session.scalars(query, {"thread_id": thread.id}))


async def count_comments(session: AsyncSession, thread: Thread) -> int:
    return int(await session.scalar(select(func.count()).select_from(Comment)
                                    .where(Comment.thread_id == thread.id)) or 0)


_COMMENTS_OF_THREADS = (
    select(Comment)
    .where(Comment.thread_id.in_(bindparam("thread_ids", expanding=True)))
    .order_by(Comment.thread_id, Comment.created_at.asc().nulls_last(), Comment.id)  # as load_comments
)


async def load_comments_of(session: AsyncSession, thread_ids: list[int]) -> dict[int, list[Comment]]:
    """`load_comments` of many threads in one query: thread id -> its comments, in the same
    order (every id a key, [] for a thread without comments)."""
    comments: dict[int, list[Comment]] = {i: [] for i in thread_ids}
    if thread_ids:
        for c in await session.scalars(_COMMENTS_OF_THREADS, {"thread_ids": thread_ids}):
            comments[c.thread_id].append(c)
    return comments


# The contract's optional keys typed bool or string, not "or null" (author_is_bot, url,
# complete): when the app does not know one (a deleted account's comment, GitHub's `user`
# null; a thread stored without its address) the key is left out, which the contract reads as
# "not known". Written as null, a tool holding to the contract refused the record.
def _known(record: dict[str, Any], **optional: Any) -> dict[str, Any]:
    record.update((key, value) for key, value in optional.items() if value is not None)
    return record


def comment_record(comment: Comment) -> dict[str, Any]:
    """A comment as the contract shapes it, plus two optional keys when known: `path`, the
    file a review comment is on (the review analyzer reads it: a remark asking a change of a
    code file is a design concern, of a docs or tests file a tests_or_docs one, as the
    labelled threads give it on the remark's `path:line` first line), and `minimized_reason`,
    why GitHub shows it hidden (bot.analysis.analysis_input leaves out those hidden as spam,
    abuse or off-topic, and gives the analyzers no such key)."""
    return _known({
        "author": comment.author,
        "author_association": comment.author_association,
        "created_at": format_datetime(comment.created_at),
        "body": comment.body or "",
        "kind": CONTRACT_KINDS.get(comment.kind, comment.kind),
    }, author_is_bot=comment.author_is_bot, path=comment.path,
        minimized_reason=comment.minimized_reason)


def thread_record(thread: Thread, comments: list[Comment]) -> dict[str, Any]:
    """The contract `thread` shape of a stored thread (optional keys the app does not know
    left out: `_known`)."""
    return _known({
        "id": f"{thread.repo}#{thread.number}",
        "repo": thread.repo,
        "number": thread.number,
        "kind": thread.kind,
        "title": thread.title or "",
        "body": thread.body,
        "author": thread.author,
        "author_association": thread.author_association,
        "state": thread.state,
        "state_reason": thread.state_reason,
        "closed_by": thread.closed_by,
        "labels": list(thread.labels or []),
        "assignees": list(thread.assignees or []),
        "created_at": format_datetime(thread.created_at),
        "updated_at": format_datetime(thread.updated_at),
        "closed_at": format_datetime(thread.closed_at),
        "comments": [comment_record(c) for c in comments],
    }, author_is_bot=thread.author_is_bot, url=thread.url, complete=thread.complete)


async def load_thread_record(session: AsyncSession, repo: str, number: int) -> dict[str, Any] | None:
    thread = await get_thread(session, repo, number)
    if thread is None:
        return None
    return thread_record(thread, await load_comments(session, thread))


# ---- what GitHub deleted stays deleted ------------------------------------------------------
def thread_grave(repo: str, number: int, kind: str) -> str:
    """The Deletion key of a thread. Discussions apart from issues and pull requests: an issue
    converted to a discussion keeps its number."""
    family = "discussion" if kind == "discussion" else "issue"
    return f"thread:{family}:{repo.lower()}#{int(number)}"


def comment_grave(kind: str, github_id: int) -> str:
    return f"comment:{kind}:{int(github_id)}"


async def bury(session: AsyncSession, key: str, created_at: datetime | None = None) -> None:
    """Note that the thread or comment of `key` is gone from its place (once: a repeated
    deletion changes nothing). `created_at`: the thread's, when known."""
    dialect = session.get_bind().dialect.name
    await session.execute(
        dialect_insert(dialect)(Deletion)
        .values(key=key, created_at=created_at, deleted_at=utcnow())
        .on_conflict_do_nothing(index_elements=["key"])
    )


async def graves(session: AsyncSession, keys: set[str]) -> dict[str, datetime | None]:
    """The keys among `keys` that were buried, with the buried thread's creation time."""
    if not keys:
        return {}
    rows = await session.execute(
        select(Deletion.key, Deletion.created_at).where(Deletion.key.in_(sorted(keys))))
    return {key: created for key, created in rows}


async def graves_among(session: AsyncSession, keys: set[str]) -> dict[str, datetime | None]:
    """`graves` for any number of keys in one statement: the keys go as one parameter (a
    PostgreSQL array, a JSON list SQLite reads with json_each), not one placeholder each (a
    statement holds at most 32,767; a nightly report names every tracked thread)."""
    if not keys:
        return {}
    from sqlalchemy import String, any_
    from sqlalchemy.dialects.postgresql import ARRAY

    wanted = sorted(keys)
    if session.get_bind().dialect.name == "postgresql":
        among = Deletion.key == any_(bindparam("keys", wanted, type_=ARRAY(String)))
    else:
        import json

        listed = func.json_each(bindparam("keys", json.dumps(wanted))).table_valued("value")
        among = Deletion.key.in_(select(listed.c.value))
    rows = await session.execute(select(Deletion.key, Deletion.created_at).where(among))
    return {key: created for key, created in rows}


def is_buried(found: dict[str, datetime | None], key: str, created_at: Any = None) -> bool:
    """Whether a delivery about `key` (a thread created at `created_at`) is about the deleted
    one: yes unless both creation times are known and the delivery's is later (a repository
    deleted and created again under its name numbers its issues from 1 again)."""
    if key not in found:
        return False
    grave, created = found[key], parse_datetime(created_at)
    return grave is None or created is None or created <= grave


# ---- a thread gone from its place: deleted, or transferred to another repository ------------
# One way to do each, for the webhook path (issues.deleted, discussion.deleted,
# issues.transferred, discussion.transferred) and for the sync (a stored thread its listing
# no longer returned, which GitHub then answered NOT_FOUND for, or at another repository).
async def delete_thread(session: AsyncSession, repo: str, number: int, kind: str | None = None,
                        created_at: Any = None) -> bool:
    """The thread `repo`#`number` of `kind` (None: the stored one's, else an issue) is
    deleted on GitHub: noted (Deletion, so no late delivery or sync stores it again) and its
    row deleted, its comments and analysis with it (ON DELETE CASCADE). `created_at`: the
    deleted thread's, when nothing of it is stored. True when a stored row was deleted."""
    thread = await get_thread(session, repo, number)
    grave = thread_grave(repo, number, str(kind or getattr(thread, "kind", None) or "issue"))
    if thread is not None and grave != thread_grave(thread.repo, thread.number, thread.kind):
        # Issues and discussions share numbers (a converted issue keeps its own): the issue
        # deleted is not the discussion stored under its number.
        thread = None
    await bury(session, grave, thread.created_at if thread is not None
               else parse_datetime(created_at))
    if thread is None:
        return False
    await session.execute(delete(Thread).where(Thread.id == thread.id))
    return True


async def move_thread(session: AsyncSession, old_repo: str, old_number: int,
                      new: dict[str, Any], gone: dict[str, Any] | None = None) -> Thread:
    """Apply a transfer: the stored thread (with its comments, which GitHub moves too) goes to
    its new repository and number (`new`: its record there, at least repo, number and kind);
    if the new place is already stored, comments join it. The former place is noted as empty
    for good, and the app's actions follow (follow_transfer). `gone`: the thread at the
    former place, as a payload shows it (else the new place's record stands for it)."""
    old = await get_thread(session, old_repo, old_number)
    target = await get_thread(session, new["repo"], new["number"])
    was = gone or new
    await bury(session, thread_grave(old_repo, old_number, str(was["kind"])),
               old.created_at if old is not None else parse_datetime(was.get("created_at")))
    await follow_transfer(session, old.repo if old is not None else old_repo,
                          old_number, new["repo"], int(new["number"]))
    if old is not None and target is None:
        # A new place and number; the entry id (`first_repo`, `first_number`) stays: the
        # thread's feed entry, verdict and analysis are the same thread's (left66).
        old.repo, old.number = new["repo"], int(new["number"])
        await session.flush()
        return await _unless_older(session, new, old)
    if target is None:
        record = dict(new)
        record["complete"] = False  # its history is elsewhere
        return await upsert_thread(session, record)
    if old is not None and old.id != target.id:
        await join_threads(session, old, target)
        target.complete = bool(target.complete and old.complete)
    return await _unless_older(session, new, target)


async def _unless_older(session: AsyncSession, record: dict[str, Any], row: Thread) -> Thread:
    """`record` written over `row` unless it describes an older version (its `updated_at`
    before the stored one): a transfer's delivery handled after a later delivery of the
    thread at its new place (the two repositories' deliveries come in any order), or
    redelivered, does not put an older title, body or state back."""
    new = parse_datetime(record.get("updated_at"))
    if new is not None and row.updated_at is not None and new < row.updated_at:
        await session.flush()
        return row
    return await upsert_thread(session, record, looked_up=(row,))
