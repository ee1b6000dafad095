"""Webhook handlers for threads and their comments: payload -> stored records -> analysis.

One handler per event (issues, pull_request, discussion, issue_comment, pull_request_review,
pull_request_review_comment, discussion_comment), every action. Each delivery is applied in
one transaction (records, edits, deletions, transfers, the repository row), committed, and
then handed to `bot.pipeline.thread_changed`, which analyses the stored thread and lets
`actions` decide whether to act.

Ordering guards, because GitHub does not promise delivery order and redeliveries repeat old
payloads: a payload whose `updated_at` is older than the stored one does not overwrite the
thread or comment; a merged pull request never goes back to "closed"; deletions always apply,
and last: a thread or comment deleted (or a thread transferred away) is noted (Deletion), and
a delivery about it handled afterwards stores nothing of it.

Reviews carry no `updated_at`, so the order of two deliveries about one review cannot be told
from their times. A review delivery that follows from the stored review (an `edited` whose
`changes.body.from` is the stored body; a `submitted` or `dismissed` with the stored body; any
about a review not stored yet) is applied as it is. One that does not is out of order or
follows a lost delivery: the handler reads the review from GitHub (`_reviews_now`, before the
transaction) and stores what GitHub has now; a review GitHub answers 404 for, on a pull
request it still serves, is recorded as deleted; GitHub failing (5xx, rate limit) raises, and
the worker retries the delivery. Without a client, credentials or installation to read with,
the payload rule stands: `edited` overwrites, `submitted` and `dismissed` only fill. A
delivery judged in order is written only if the stored review is still the one it was judged
on (`_still`; else ReviewChanged, and the worker tries it again). Comments and threads edited
twice in one second (GitHub's `updated_at` counts seconds): of the same second, only the edit
of the stored text applies (`_same_second`, `_keep_same_second_text`). Of the stored thread's
second, a `labeled` / `unlabeled` / `assigned` / `unassigned` changes the stored list by the
one name it carries and nothing else (`_keep_same_second_lists`); neither an opening delivery
(`opened`, `created`: the first version) nor a comment delivery's view of its thread
(commented on before the thread was closed in that second: "Close with comment") changes the
stored thread but for what `_complete` fills. A thread stored from a later delivery is
completed by its opening one handled afterwards (`_complete`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, TypeVar

import gidgethub
from gidgethub import sansio
from gidgethub.routing import Router
from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.github.client import refused_for_good
from bot.store.models import Action, Comment, Repository, Thread
from bot.store.privacy import lock_repositories
from bot.store.threads import (
    bury,
    comment_grave,
    comment_values,
    delete_comment,
    delete_thread,
    get_comments,
    get_thread,
    get_threads,
    graves,
    insert_new,
    is_buried,
    move_thread,
    thread_grave,
    thread_values,
    upsert_comment,
    upsert_thread,
)
from bot.store.types import parse_datetime, storable_text
from bot.webhooks.installations import canonical_repo, ensure_installation, upsert_repository
from bot.webhooks.normalize import (
    COMMENT_EVENTS,
    Change,
    PayloadError,
    Transfer,
    change_from_payload,
    comment_from_review,
)
from bot.webhooks.privacy import moved_to_private, private_flags

log = logging.getLogger(__name__)
router = Router()

EVENTS = (
    "issues",
    "pull_request",
    "discussion",
    "issue_comment",
    "pull_request_review",
    "pull_request_review_comment",
    "discussion_comment",
)
TRANSACTION_ATTEMPTS = 3  # a concurrent worker inserting the same thread: retry the delivery
T = TypeVar("T")


def _older(record_time: str | None, stored: Any) -> bool:
    """True when the payload describes an older version than the stored row."""
    new = parse_datetime(record_time) if record_time else None
    return new is not None and stored is not None and new < stored


@dataclass
class LookedUp:
    """The threads and comments a batch's session holds, looked up together before its
    deliveries are applied (and those they create): a key absent here is read from the
    database. Forgotten after a deletion or a transfer, which move rows under these keys."""

    threads: dict[tuple[str, int], Thread | None] = field(default_factory=dict)
    comments: dict[tuple[str, int], Comment | None] = field(default_factory=dict)
    graves_checked: set[str] = field(default_factory=set)  # Deletion keys looked up
    graves: dict[str, datetime | None] = field(default_factory=dict)  # those found
    fresh: set[tuple[str, int]] = field(default_factory=set)  # comments `_insert_new` inserted

    def forget(self) -> None:
        self.threads.clear()
        self.comments.clear()
        self.graves_checked.clear()
        self.graves.clear()
        self.fresh.clear()


def _record_grave(record: Mapping[str, Any]) -> str:
    """The Deletion key of the thread a payload's record describes."""
    return thread_grave(record["repo"], record["number"], record["kind"])


def _issue_grave(record: Mapping[str, Any]) -> str:
    """The Deletion key of the issue a discussion's record would be converted from."""
    return thread_grave(record["repo"], record["number"], "issue")


def _grave_keys(change: Change) -> set[str]:
    """The Deletion keys a change that stores something must not store over."""
    keys = set()
    if change.thread is not None:
        keys.add(_record_grave(change.thread))
        if change.thread["kind"] == "discussion":
            keys.add(_issue_grave(change.thread))  # a converted issue's (`_converted`)
    if change.comment is not None:
        keys.add(comment_grave(*_comment_key(change.comment)))
    return keys


async def _graves(session: AsyncSession, change: Change,
                  looked: LookedUp | None) -> dict[str, datetime | None]:
    keys = _grave_keys(change)
    if looked is not None and keys <= looked.graves_checked:
        return looked.graves
    return await graves(session, keys)


def _buried_thread(change: Change, found: dict[str, datetime | None]) -> bool:
    record = change.thread
    return record is not None and is_buried(
        found, _record_grave(record), record.get("created_at"))


def _buried_comment(change: Change, found: dict[str, datetime | None]) -> bool:
    return change.comment is not None and is_buried(found, comment_grave(*_comment_key(change.comment)))


async def _store_thread(
    session: AsyncSession, record: dict[str, Any], *, opened: bool,
    looked: LookedUp | None = None, edited: Mapping[str, str] | None = None,
    named: tuple[str, str, bool] | None = None, view: bool = False,
) -> Thread:
    """`edited`: an `edited` delivery's `changes.*.from` (`_edit_froms`); `named`: the label
    or assignee a delivery adds or removes (normalize._named); `view`: the record is a
    comment delivery's view of its thread."""
    existing = await _stored_thread(session, record, looked)
    thread = await _write_thread(session, dict(record), existing, opened=opened,
                                 flush=looked is None, edited=edited or {}, named=named,
                                 view=view)
    if looked is not None:
        looked.threads[_thread_key(record)] = thread
    return thread


async def _stored_thread(session: AsyncSession, record: Mapping[str, Any],
                         looked: LookedUp | None) -> Thread | None:
    """The stored thread of `record`: the batch's (`looked`) when the batch looked it up,
    else read from the store."""
    key = _thread_key(record)
    if looked is not None and key in looked.threads:
        return looked.threads[key]
    return await get_thread(session, record["repo"], record["number"])


async def _write_thread(session: AsyncSession, record: dict[str, Any], existing: Thread | None,
                        *, opened: bool, flush: bool = True,
                        edited: Mapping[str, str] | None = None,
                        named: tuple[str, str, bool] | None = None,
                        view: bool = False) -> Thread:
    if existing is None:
        # Only a thread seen from its first event is known in full; others wait for sync.
        record["complete"] = bool(opened)
        return await upsert_thread(session, record, looked_up=(None,))
    record.pop("complete", None)
    if existing.kind == "issue" and record.get("kind") == "discussion":
        # The issue converted (`_converted`): the discussion GitHub made of it, whose
        # times the issue's do not order, replaces it; the issue's comments stay on the row
        # until their discussion copies arrive (`_drop_converted_copy`).
        return await upsert_thread(session, record, looked_up=(existing,), flush=flush)
    if opened and not existing.complete:
        _complete(existing, record)
    if _older(record.get("updated_at"), existing.updated_at):
        return existing  # a late or repeated delivery: keep the newer stored state
    if _thread_same_second(record, existing):
        if opened or view:
            # The first version (late, or redelivered), or the thread as a comment of that
            # second saw it (made before the thread was closed, labelled...: "Close with
            # comment"): not newer than what is stored.
            return existing
        _keep_same_second_text(record, existing, edited or {})
        _keep_same_second_lists(record, existing, named)
    if existing.state == "merged" and record.get("state") in ("open", "closed"):
        record.pop("state")  # the issue-shaped view of a PR may not know it was merged
    if existing.kind != record.get("kind", existing.kind) and existing.kind == "pull_request":
        record["kind"] = existing.kind
    return await upsert_thread(session, record, looked_up=(existing,), flush=flush)


# What a thread's opening delivery tells for good: ids, author, creation, address.
_BORN_WITH = ("github_id", "node_id", "author", "author_is_bot", "created_at", "url")


def _complete(existing: Thread, record: dict[str, Any]) -> None:
    """A thread stored from a later delivery (a comment, a review: `complete` false, its
    beginning unknown) reached by its opening one (`opened`, `created`; not at the new place
    of a transfer, whose history is elsewhere), late or in the same second. The app received
    it from its start, so every later delivery of it comes here as well: it is complete. The
    opening payload fills what the earlier delivery did not carry (a pull request first seen
    through `issue_comment` has the issue's ids, not its own) and nothing else: the stored
    state is newer."""
    existing.complete = True
    for name in _BORN_WITH:
        if getattr(existing, name) is None and record.get(name) is not None:
            value = record[name]
            setattr(existing, name, parse_datetime(value) if name == "created_at" else value)


def _comment_key(record: dict[str, Any]) -> tuple[str, int]:
    return (record.get("kind") or "comment", int(record["github_id"]))


def _fills_only(change: Change) -> bool:
    """A review delivery that may not overwrite a stored review. Reviews carry no
    `updated_at`, and only `edited` changes a review's body: `submitted` (the first version)
    and `dismissed` (which changes only its state) describe a body no newer than any stored
    one, so, late or redelivered after an `edited`, they would put the old text back."""
    return (change.comment is not None and change.comment.get("kind") == "review"
            and change.action != "edited" and not change.extras.get("review_now"))


# ---- reviews whose order the payload does not tell: read from GitHub ------------------------
_GONE = object()  # a review the batch deletes (simulated order)


def _review_id(change: Change) -> int | None:
    """The id of the review a delivery would store, if it is one."""
    if change.event != "pull_request_review" or change.comment is None:
        return None
    return int(change.comment["github_id"])


def _follows(change: Change, payload: Mapping[str, Any], stored: str | None) -> bool:
    """Whether a review delivery follows from the stored review's body (None: not stored),
    so that applying it as the payload says cannot put an older text back."""
    if stored is None:
        return True  # nothing to revert; a later delivery that differs is checked in its turn
    body = (change.comment or {}).get("body") or ""
    if body == stored:
        return True  # applying it changes nothing (a redelivery of what is stored)
    return change.action == "edited" and _edited_from(payload) == stored


def _edited_from(payload: Mapping[str, Any]) -> str | None:
    """The body an `edited` delivery's edit replaced (`changes.body.from`); None if absent."""
    changes = payload.get("changes")
    was = changes.get("body") if isinstance(changes, Mapping) else None
    if isinstance(was, Mapping) and "from" in was:
        return str(was.get("from") or "")
    return None


def _same_second(record: dict[str, Any], existing: Comment, edited_from: str | None) -> bool:
    """A comment (issue, discussion or review comment) of the stored one's second (GitHub's
    `updated_at` counts seconds) with another body: two edits in one second, whose order only
    `changes.body.from` tells. True (keep the stored one) unless the delivery is the edit of
    the stored text. Reviews carry no `updated_at`: their order is judged by `_follows`."""
    if not record.get("updated_at"):
        return False
    stored = existing.body or ""
    return (parse_datetime(record["updated_at"]) == existing.updated_at
            and (record.get("body") or "") != stored and edited_from != stored)


def _edit_froms(payload: Mapping[str, Any]) -> dict[str, str]:
    """What an `edited` delivery's edit replaced, per field (`changes.body.from`,
    `changes.title.from`)."""
    changes = payload.get("changes")
    out: dict[str, str] = {}
    if isinstance(changes, Mapping):
        for name in ("body", "title"):
            was = changes.get(name)
            if isinstance(was, Mapping) and "from" in was:
                out[name] = str(was.get("from") or "")
    return out


def _thread_same_second(record: dict[str, Any], existing: Thread) -> bool:
    """A thread delivery of the stored thread's second: the times cannot order the two."""
    return (bool(record.get("updated_at")) and existing.updated_at is not None
            and parse_datetime(record["updated_at"]) == existing.updated_at)


# What a label or assignee delivery of the stored thread's second leaves as stored: the
# thread as its payload shows it may be older (labelled, then closed, in one second).
_NOT_NAMED = ("title", "body", "state", "state_reason", "closed_by", "closed_at", "labels",
              "assignees", "answered", "answer_chosen_by", "category", "author_association")


def _keep_same_second_lists(record: dict[str, Any], existing: Thread,
                            named: tuple[str, str, bool] | None) -> None:
    """Of the stored thread's second, a `labeled` / `unlabeled` (`assigned` / `unassigned`)
    delivery's view of the thread may be older than the stored one (two labels picked at
    once, a bot labelling and closing a new issue): it changes the stored list by the one
    name it adds or removes (`named`, normalize._named) and nothing else."""
    if named is None:
        return
    name, item, added = named
    has_list = name in record
    for key in _NOT_NAMED:
        record.pop(key, None)
    if not has_list:
        return
    stored = [str(x) for x in (getattr(existing, name) or [])]
    if added:
        record[name] = stored if item in stored else [*stored, item]
    else:
        record[name] = [x for x in stored if x != item]


def _keep_same_second_text(record: dict[str, Any], existing: Thread,
                           edited: Mapping[str, str]) -> None:
    """A thread delivery of the stored thread's second (two edits in one second, or an edit
    and another event): its body or title, where it differs from the stored one, is dropped
    from `record` unless the delivery is an `edited` whose `changes.*.from` is the stored
    text; the delivery's other fields apply as the plain `updated_at` rule says."""
    if not record.get("updated_at") or parse_datetime(record["updated_at"]) != existing.updated_at:
        return
    for name in ("body", "title"):
        if name not in record:
            continue
        stored = getattr(existing, name) or ""
        if (record.get(name) or "") != stored and edited.get(name) != stored:
            record.pop(name)


def _installation_id(payload: Mapping[str, Any]) -> int | None:
    installation = payload.get("installation")
    iid = installation.get("id") if isinstance(installation, Mapping) else None
    return iid if isinstance(iid, int) and not isinstance(iid, bool) else None


async def _read_review(ctx: Any, change: Change, payload: Mapping[str, Any]) -> Change:
    """`change` as GitHub has the review now (REST GET .../pulls/{n}/reviews/{id}, through the
    app's client and the delivery's installation, as the repository's config is read): its
    record then overwrites the stored one; a deletion when GitHub answers 404 for it on a pull
    request it still serves. Unchanged when there is nothing to read with (no client, no app
    credentials, no installation, or an installation whose token GitHub refuses for good) or
    GitHub refuses the read for good (403: a permission missing). Raises what retrying may
    cure (5xx, rate limits, the network): the worker retries the delivery."""
    iid = _installation_id(payload)
    github = getattr(ctx, "github", None)
    if github is None or iid is None or not ctx.settings.has_app_credentials:
        return change
    review_id = _review_id(change)
    assert review_id is not None
    try:
        await github.installation_token(iid)  # a refused token is no answer about the review
        gh = await github.api(iid)
        pull = f"/repos/{change.repo}/pulls/{int(change.number)}"
        try:
            data = await gh.getitem(f"{pull}/reviews/{review_id}")
        except gidgethub.BadRequest as exc:
            if exc.status_code != 404:
                raise
            await gh.getitem(pull)  # the pull request is served: the review is gone
            log.info("review %s of %s#%s is gone on GitHub: recorded as deleted",
                     review_id, change.repo, change.number)
            return replace(change, comment=None, delete_comment=("review", review_id))
    except gidgethub.BadRequest as exc:
        if not refused_for_good(exc):
            raise
        log.warning("could not read review %s of %s#%s from GitHub (%s); the payload stands",
                    review_id, change.repo, change.number, exc)
        return change
    if not isinstance(data, Mapping) or data.get("id") != review_id:
        raise PayloadError(f"GitHub's review {review_id} of {change.repo}#{change.number} "
                           "is not a review object")
    # As the worker stores payloads: what no database stores (NUL, lone surrogates) as U+FFFD.
    record = comment_from_review(
        {k: storable_text(v) if isinstance(v, str) else v for k, v in data.items()})
    return replace(change, comment=record, extras={**change.extras, "review_now": True})


async def _reviews_now(ctx: Any, changes: list[Change], payloads: list[Mapping[str, Any]]
                       ) -> list[Change | BaseException]:
    """Each change, with review deliveries that do not follow from the stored review (as the
    changes before it in the list leave it) replaced by what GitHub has now
    (`_read_review`); the exception reading it raised, for that change alone."""
    ids = {i for i in map(_review_id, changes) if i is not None}
    if not ids:
        return list(changes)
    bodies: dict[int, Any] = {}
    async with ctx.sessionmaker() as session:
        for github_id, body in await session.execute(
                select(Comment.github_id, Comment.body).where(
                    Comment.kind == "review", Comment.github_id.in_(sorted(ids)))):
            bodies[int(github_id)] = body or ""
    out: list[Change | BaseException] = []
    for change, payload in zip(changes, payloads, strict=True):
        review_id = _review_id(change)
        if review_id is None or bodies.get(review_id) is _GONE:
            out.append(change)
            continue
        if _follows(change, payload, bodies.get(review_id)):
            # judged on what is stored now: still so when its transaction writes (_still)
            change = replace(change, extras={**change.extras, "review_was": bodies.get(review_id)})
        else:
            try:
                change = await _read_review(ctx, change, payload)
            except Exception as exc:  # noqa: BLE001 - this delivery alone is retried
                out.append(exc)
                continue
        if change.delete_comment is not None:
            bodies[review_id] = _GONE
        elif change.comment is not None and (
                review_id not in bodies or change.action == "edited"
                or change.extras.get("review_now")):
            bodies[review_id] = change.comment.get("body") or ""
        out.append(change)
    return out


class ReviewChanged(RuntimeError):
    """The stored review is no longer the one a delivery's order was judged on (another
    worker stored it meanwhile): the delivery is tried again, and judged anew."""


_UNJUDGED = object()


async def _still(session: AsyncSession, key: tuple[str, int], was: str | None,
                 body: str) -> None:
    """Raise ReviewChanged unless the stored review (read under a row lock on PostgreSQL,
    which waits for a concurrent writer) is still `was` (None: not stored)."""
    stored = await session.scalar(
        select(Comment.body).where(Comment.kind == key[0], Comment.github_id == key[1])
        .with_for_update())
    now = None if stored is None else (stored or "")
    if now != was and now != body:
        raise ReviewChanged(f"review {key[1]} changed while its delivery was handled")


async def _store_comment(session: AsyncSession, thread: Thread, record: dict[str, Any],
                         looked: LookedUp | None = None, *, fill_only: bool = False,
                         was: Any = _UNJUDGED, edited_from: str | None = None) -> bool:
    """`was`: the stored review's body (None: not stored) a review delivery's order was
    judged on (`_reviews_now`); what is stored must still be it when this writes.
    `edited_from`: an `edited` delivery's `changes.body.from`. True when the comment was not
    stored before this delivery."""
    key = _comment_key(record)
    if looked is not None and key in looked.comments:
        existing = looked.comments[key]
    else:
        existing = await session.scalar(
            select(Comment).where(Comment.kind == key[0], Comment.github_id == key[1])
        )
    new = existing is None
    if looked is not None and key in looked.fresh:
        looked.fresh.discard(key)  # inserted by `_insert_new` as this delivery would
        new = True
    if existing is not None and (fill_only or _older(record.get("updated_at"), existing.updated_at)
                                 or _same_second(record, existing, edited_from)):
        return new
    if was is not _UNJUDGED:
        await _still(session, key, was, record.get("body") or "")
    comment = await upsert_comment(session, thread, record, looked_up=(existing,),
                                   flush=looked is None)
    if looked is not None:
        looked.comments[key] = comment
    return new


async def _repository(
    session: AsyncSession, payload: Mapping[str, Any], repo: str, seen: set[tuple[Any, ...]] | None
) -> str:
    """Upsert the repository (and installation) rows, unless `seen` or this transaction
    already holds the same key; the keys a transaction writes are kept in its
    session.info["repository_keys"] (added to `seen` once it commits). Returns the name to
    store the delivery's threads under: the repository's stored name, which is not `repo`
    when the payload was sent before a rename (installations.upsert_repository).

    `seen` holds keys this process already wrote: every delivery names its repository, and
    re-writing identical rows would cost three queries per delivery for nothing. A key seen
    still costs one look at the stored name (per transaction): another process, or a later
    delivery, may have renamed the repository since."""
    data = payload.get("repository")
    if not isinstance(data, Mapping):
        return repo
    installation = payload.get("installation")
    iid = installation.get("id") if isinstance(installation, Mapping) else None
    iid = iid if isinstance(iid, int) else None
    github_id = data.get("id") if isinstance(data.get("id"), int) else None
    branch = data.get("default_branch") if isinstance(data.get("default_branch"), str) else None
    key = (repo, github_id, iid, branch)
    written: set[tuple[Any, ...]] = session.info.setdefault("repository_keys", set())
    names: dict[int, str] = session.info.setdefault("repository_names", {})
    if seen is not None and (key in seen or key in written):
        # written by this process, or earlier in this transaction (a batch)
        if github_id is None:
            return repo
        stored = names.get(github_id)
        if stored is None:
            stored = await session.scalar(
                select(Repository.full_name).where(Repository.github_id == github_id))
        if stored is not None:
            names[github_id] = stored
            if stored.lower() == repo.lower():
                return repo
    if iid is not None:
        owner = data.get("owner")
        inst = await ensure_installation(session, iid, owner if isinstance(owner, Mapping) else None)
        if inst.deleted:  # a delivery queued before the uninstall: the link is gone for good
            iid = None
    updated = data.get("updated_at")
    row = await upsert_repository(
        session, repo, github_id=github_id, installation_id=iid, default_branch=branch,
        seen_at=_payload_time(updated),
    )
    if github_id is not None:
        names[github_id] = row.full_name
    written.add(key)
    return row.full_name


def _payload_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None  # absent (or a push event's epoch seconds)
    try:
        return parse_datetime(value)
    except ValueError:
        return None


def _under(change: Change, name: str) -> Change:
    """`change` with its repository's name replaced by `name` (the stored one), unless they
    are the same name."""
    old = change.repo
    if old.lower() == name.lower():
        return change

    def moved(record: dict[str, Any] | None) -> dict[str, Any] | None:
        if record is None or str(record.get("repo", "")).lower() != old.lower():
            return record
        return {**record, "repo": name, "id": f"{name}#{record['number']}"}

    transfer = change.transfer
    if transfer is not None:
        new = moved(transfer.new)
        assert new is not None
        transfer = replace(transfer, new=new, old_repo=(
            name if transfer.old_repo.lower() == old.lower() else transfer.old_repo))
    return replace(change, repo=name, thread=moved(change.thread), gone=moved(change.gone),
                   transfer=transfer)


async def _insert_new(session: AsyncSession, changes: list[Change], looked: LookedUp) -> None:
    """The threads and comments a batch's deliveries create, inserted in one statement each,
    as the first delivery naming each would write it (applying that delivery afterwards
    changes nothing), then read back into `looked`. Only deliveries before the batch's first
    deletion or transfer count: those move rows under the keys looked up."""
    threads: dict[tuple[str, int], dict[str, Any]] = {}
    comments: dict[tuple[str, int], tuple[tuple[str, int], dict[str, Any]]] = {}
    for change in changes:
        if change.transfer is not None or change.delete_thread or change.delete_comment:
            break
        if _converting(change, looked):
            break  # the issue's later deliveries in the batch store nothing (`_converted`)
        if change.thread is None or _buried_thread(change, looked.graves):
            continue
        record = change.thread
        key = _thread_key(record)
        if key in looked.threads and looked.threads[key] is None and key not in threads:
            threads[key] = {"repo": record["repo"], "number": int(record["number"]),
                            "kind": record["kind"],
                            **thread_values({**record, "complete": bool(change.opened)})}
        if change.comment is not None and not _buried_comment(change, looked.graves):
            ck = _comment_key(change.comment)
            if ck in looked.comments and looked.comments[ck] is None and ck not in comments:
                comments[ck] = (key, change.comment)
    if threads:  # in key order: two workers inserting the same threads wait, not deadlock
        await insert_new(session, Thread, [threads[k] for k in sorted(threads)])
        looked.threads.update(await get_threads(session, set(threads)))
    rows = []
    for ck, (key, record) in sorted(comments.items()):
        thread = looked.threads.get(key)
        if thread is not None:
            rows.append({"kind": ck[0], "github_id": ck[1], "thread_id": thread.id,
                         **comment_values(record)})
    if rows:
        await insert_new(session, Comment, rows)
        looked.comments.update(await get_comments(session, {(r["kind"], r["github_id"]) for r in rows}))
        looked.fresh.update((r["kind"], r["github_id"]) for r in rows)


def _converting(change: Change, looked: LookedUp) -> bool:
    """Whether `change` may note its discussion as a converted issue (`_converted`) for the
    first time."""
    record = change.thread
    if record is None or record["kind"] != "discussion" or _issue_grave(record) in looked.graves:
        return False
    stored = looked.threads.get(_thread_key(record))
    return bool(change.extras.get("converted")) or (stored is not None and stored.kind == "issue")


async def _with_discussion_label(session: AsyncSession, change: Change,
                                 looked: LookedUp | None) -> dict[str, Any]:
    """The thread record of `change`, with the labels of a `discussion.labeled` / `unlabeled`
    whose payload names only the label (normalize._discussion_label): the stored labels
    with it added or removed (a discussion not stored yet: the label alone)."""
    assert change.thread is not None
    noted = change.extras.get("discussion_label")
    if noted is None:
        return change.thread
    action, name = noted
    stored = await _stored_thread(session, change.thread, looked)
    labels = [str(x) for x in (stored.labels or [])] if stored is not None else []
    if action == "labeled" and name not in labels:
        labels.append(name)
    elif action == "unlabeled":
        labels = [x for x in labels if x != name]
    return {**change.thread, "labels": labels}


async def _deleted_at_new_place(session: AsyncSession, transfer: Transfer) -> bool:
    key = _record_grave(transfer.new)
    return is_buried(await graves(session, {key}), key, transfer.new.get("created_at"))


def _thread_key(record: Mapping[str, Any]) -> tuple[str, int]:
    return (str(record["repo"]).lower(), int(record["number"]))


def _touched(change: Change) -> set[tuple[str, int]]:
    """The (lower-case repo, number) of every thread `change` may write, delete or move."""
    keys = {_thread_key(r) for r in (change.thread, change.gone) if r is not None}
    if change.transfer is not None:
        keys |= {(change.transfer.old_repo.lower(), int(change.transfer.old_number)),
                 _thread_key(change.transfer.new)}
    return keys


async def apply_change(
    session: AsyncSession,
    change: Change,
    payload: Mapping[str, Any],
    seen: set[tuple[Any, ...]] | None = None,
    looked: LookedUp | None = None,
) -> tuple[str, int]:
    """Write one delivery's change; returns the (repo, number) whose thread changed.
    `looked`: the threads and comments the caller's session already looked up (a batch)."""
    change = _under(change, await _repository(session, payload, change.repo, seen))
    if looked is None and await lock_repositories(session, [change.repo]):
        # Made private since the delivery was checked (a batch checks in write_all).
        return change.repo, change.number
    if change.transfer is not None and await moved_to_private(session, payload):
        # Transferred to a private repository: it leaves the tracker as a deleted one does.
        change = replace(change, transfer=None, delete_thread=True)
    if change.transfer is not None and looked is None:
        # Two threads (the old place and the new): locked in id order, as an analysis
        # locks them (a batch locked them all in write_all).
        await get_threads(session, _touched(change), lock=True)
    if looked is not None and (change.transfer is not None or change.delete_thread):
        looked.forget()
        looked = None
    if change.transfer is not None and await _deleted_at_new_place(session, change.transfer):
        # Deleted at its new place since it moved there (this delivery is late, or
        # redelivered): nothing of it is stored, at either place.
        was = change.gone or change.transfer.new
        await delete_thread(session, change.transfer.old_repo, change.transfer.old_number,
                            was.get("kind"), was.get("created_at"))
        return change.transfer.old_repo, change.transfer.old_number
    if change.transfer is not None and change.thread is None:
        # `transferred` at the old place: the thread now lives at the new one.
        moved = await move_thread(session, change.transfer.old_repo, change.transfer.old_number,
                                  change.transfer.new, change.gone)
        return moved.repo, moved.number
    if change.transfer is not None:
        # `opened` at the new place of a transferred thread.
        moved = await move_thread(session, change.transfer.old_repo, change.transfer.old_number,
                                  change.transfer.new)
        if change.thread is not None:
            await _store_thread(session, change.thread, opened=False)
        return moved.repo, moved.number
    if change.delete_thread:
        gone = change.gone or {}
        await delete_thread(session, change.repo, change.number, gone.get("kind"),
                            gone.get("created_at"))
        return change.repo, change.number
    assert change.thread is not None
    found = await _graves(session, change, looked)
    if _buried_thread(change, found):
        return change.repo, change.number  # about a deleted thread: nothing of it is stored
    converted = await _converted(session, change, found, looked)
    record = await _with_discussion_label(session, change, looked)
    thread = await _store_thread(session, record, opened=change.opened, looked=looked,
                                 edited=_edit_froms(payload) if change.action == "edited"
                                 else None, named=change.extras.get("named"),
                                 view=change.event in COMMENT_EVENTS)
    if change.delete_comment is not None:
        kind, github_id = change.delete_comment
        await delete_comment(session, kind, github_id)
        await bury(session, comment_grave(kind, github_id))
        if looked is not None:
            looked.comments[(kind, int(github_id))] = None
            looked.graves_checked.add(comment_grave(kind, github_id))
            looked.graves[comment_grave(kind, github_id)] = None
    if change.comment is not None and not _buried_comment(change, found):
        new = await _store_comment(session, thread, change.comment, looked,
                                   fill_only=_fills_only(change),
                                   was=change.extras.get("review_was", _UNJUDGED),
                                   edited_from=_edited_from(payload) if change.action == "edited"
                                   else None)
        if new and converted:
            await _drop_converted_copy(session, thread, change.comment)
    return thread.repo, thread.number


async def _converted(session: AsyncSession, change: Change, found: dict[str, datetime | None],
                     looked: LookedUp | None) -> bool:
    """Whether `change` is about a discussion GitHub made of the issue of its number ("Convert
    to discussion": the discussion keeps the issue's number, the issue is gone, its comments
    are the discussion's now under ids of their own). Known from the discussion's state
    "converting", from the issue stored under its number, or from the issue's Deletion key,
    which is noted the first time (with the issue's creation time, else the discussion's):
    a late delivery about the issue (a retry, a redelivery) then stores nothing
    (`_buried_thread`)."""
    record = change.thread
    assert record is not None
    if record["kind"] != "discussion":
        return False
    grave = _issue_grave(record)
    if grave in found:
        return True
    stored = await _stored_thread(session, record, looked)
    was_issue = stored is not None and stored.kind == "issue"
    if not (change.extras.get("converted") or was_issue):
        return False
    created = (stored.created_at if was_issue and stored is not None
               else parse_datetime(record.get("created_at")))
    await bury(session, grave, created)
    found[grave] = created
    if looked is not None:
        looked.graves_checked.add(grave)
        looked.graves[grave] = created
    return True


async def _drop_converted_copy(session: AsyncSession, thread: Thread,
                               record: Mapping[str, Any]) -> None:
    """A new comment of a discussion converted from an issue: the issue's comment it was
    made from (the thread's oldest `comment` row with its author and words), stored before
    the conversion, is deleted (the nightly sync drops any left: its listing returns the
    discussion's comments only).

    The app's own comment copied so (its failure comment, a reply): the action that records
    it follows the copy (its id and node id), as the stored comment does; with the issue
    comment's ids the nightly reception check read it as deleted by the maintainers (the
    pause rule counts those) and a `/rltracker stop` in the discussion hid nothing (user82)."""
    if record.get("kind") != "discussion_comment":
        return
    author = record.get("author")
    same = select(Comment.id, Comment.github_id).where(
        Comment.thread_id == thread.id, Comment.kind == "comment",
        Comment.body == storable_text(record.get("body") or ""),
        Comment.author.is_(None) if author is None else Comment.author == author,
    ).order_by(Comment.created_at.asc().nulls_last(), Comment.id).limit(1)
    first = (await session.execute(same)).first()
    if first is None:
        return
    await session.execute(delete(Comment).where(Comment.id == first.id))
    if record.get("author_is_bot") and record.get("github_id") is not None:
        await session.execute(
            update(Action).where(Action.repo == thread.repo, Action.number == thread.number,
                                 Action.comment_id == first.github_id)
            .values(comment_id=record["github_id"], comment_node_id=record.get("node_id")))


async def handle(event_name: str, payload: Mapping[str, Any], ctx: Any) -> tuple[str, int]:
    """Store what a thread/comment delivery says, commit, then run the pipeline."""
    change = change_from_payload(event_name, payload, canonical_repo)
    if (await private_flags(ctx, [payload]))[0]:
        return change.repo, change.number  # a private repository: nothing of it is stored
    [now] = await _reviews_now(ctx, [change], [payload])
    if isinstance(now, BaseException):
        raise now
    change = now

    async def write(session: AsyncSession, seen: set[tuple[Any, ...]]) -> tuple[str, int]:
        return await apply_change(session, change, payload, seen)

    repo, number = await _committed(ctx, write, f"{event_name}.{change.action}")
    from bot import pipeline

    await pipeline.thread_changed(
        ctx, repo, number, trigger=f"{event_name}.{change.action}", payload=dict(payload)
    )
    return repo, number


async def handle_batch(events: list[sansio.Event], ctx: Any) -> list[BaseException | None]:
    """Several thread deliveries at once (a run of the worker's batch), with the effect of
    `handle` on each in order: the records of all of them written in ONE transaction, then
    `bot.pipeline.threads_changed` (each changed thread analysed once, each delivery decided
    on). Returns per delivery None or the exception that failed it alone (an unreadable
    payload, its decision). Raises when the shared transaction or analysis fails: nothing of
    it is kept, and the worker handles each delivery alone."""
    from bot import pipeline

    outcomes: list[BaseException | None] = [None] * len(events)
    readable: list[tuple[int, str, Change, Mapping[str, Any]]] = []
    for k, event in enumerate(events):
        try:
            if not isinstance(event.data, Mapping):
                raise PayloadError(f"{event.event}: payload is not an object")
            change = change_from_payload(event.event, event.data, canonical_repo)
        except Exception as exc:  # noqa: BLE001 - as `handle` would raise for this one alone
            outcomes[k] = exc
            continue
        readable.append((k, event.event, change, event.data))
    # A private repository's delivery: nothing of it is stored (outcome None, handled).
    private = await private_flags(ctx, [p for *_, p in readable])
    readable = [r for r, hidden in zip(readable, private, strict=True) if not hidden]
    nows = await _reviews_now(ctx, [c for _, _, c, _ in readable], [p for *_, p in readable])
    for (k, *_), now in zip(readable, nows, strict=True):
        if isinstance(now, BaseException):
            outcomes[k] = now
    readable = [(k, name, now, p) for (k, name, _, p), now in zip(readable, nows, strict=True)
                if not isinstance(now, BaseException)]

    async def write_all(session: AsyncSession, seen: set[tuple[Any, ...]]
                        ) -> list[pipeline.ThreadChange]:
        # Repository rows first: a renamed repository's threads move to its new name
        # (installations.upsert_repository) before they are looked up under it.
        # A payload sent before a rename goes under the stored name.
        for i, (k, name, change, payload) in enumerate(readable):
            stored = await _repository(session, payload, change.repo, seen)
            readable[i] = (k, name, _under(change, stored), payload)
        # Made private since the deliveries were checked (a `privatized` committed
        # meanwhile): read again under the lock `forget` waits for; those store nothing.
        hidden = await lock_repositories(session, {c.repo for _, _, c, _ in readable})
        readable[:] = [r for r in readable if r[2].repo.lower() not in hidden]
        grave_keys = {key for _, _, c, _ in readable for key in _grave_keys(c)}
        looked = LookedUp(
            # Every stored thread the batch may write, deletes or moves, locked now in id
            # order (PostgreSQL): an analysis holds its threads so (bot.pipeline), and a
            # batch deleting #2 and then updating #1 waited for it holding #2 (a deadlock).
            threads=await get_threads(session, {
                key for _, _, c, _ in readable for key in _touched(c)}, lock=True),
            comments=await get_comments(session, {
                _comment_key(c.comment) for _, _, c, _ in readable if c.comment is not None}),
            graves_checked=grave_keys, graves=await graves(session, grave_keys),
        )
        await _insert_new(session, [c for _, _, c, _ in readable], looked)
        changed = []
        for _, name, change, payload in readable:
            repo, number = await apply_change(session, change, payload, seen, looked)
            changed.append(pipeline.ThreadChange(
                repo, number, trigger=f"{name}.{change.action}", payload=dict(payload)))
        return changed

    changed = await _committed(ctx, write_all, f"a batch of {len(events)} deliveries")
    decided = await pipeline.threads_changed(ctx, changed)
    for (k, *_), outcome in zip(readable, decided, strict=True):
        outcomes[k] = outcome
    return outcomes


async def _committed(
    ctx: Any, write: Callable[[AsyncSession, set[tuple[Any, ...]]], Awaitable[T]], what: str
) -> T:
    """`write(session, repositories already written)` in a transaction of its own, committed;
    once more when another worker inserted the same thread or comment at the same moment
    (IntegrityError): the retry sees its row and updates it."""
    seen = _seen_repositories(ctx)
    for attempt in range(1, TRANSACTION_ATTEMPTS + 1):
        try:
            async with ctx.sessionmaker() as session:
                result = await write(session, seen)
                await session.commit()
                # Remembered only once committed: a rolled-back write is written again.
                seen.update(session.info.get("repository_keys", ()))
            return result
        except IntegrityError:
            if attempt == TRANSACTION_ATTEMPTS:
                raise
            log.info("retrying %s after a concurrent insert", what)
    raise AssertionError("unreachable")


def _seen_repositories(ctx: Any) -> set[tuple[Any, ...]]:
    extras = getattr(ctx, "extras", None)
    if not isinstance(extras, dict):
        return set()
    seen = extras.setdefault("events.repositories_written", set())
    if len(seen) > 10_000:  # only a handful of repositories in practice; stay bounded anyway
        seen.clear()
    return seen


def _make_handler(event_name: str) -> Any:
    async def handler(event: sansio.Event, ctx: Any) -> None:
        if not isinstance(event.data, Mapping):
            raise PayloadError(f"{event_name}: payload is not an object")
        await handle(event_name, event.data, ctx)

    handler.__name__ = f"on_{event_name}"
    return handler


for _name in EVENTS:
    router.add(_make_handler(_name), _name)
