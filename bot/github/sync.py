"""GraphQL backfill and incremental refresh of the tracked repositories.

How the cost stays low (goal: at most 0.02 requests per thread for a backfill, and a refresh
that costs about one request when few threads changed):

- Work is split into *streams*, one per (repository, kind); every stream pages its
  repository's issues, pull requests or discussions ordered by `updatedAt` descending.
- One request carries many slots (bot.github.queries.build_sync_query): up to
  THREADS_PER_REQUEST threads from as many streams as fit, each thread with its first
  comments, reviews and replies nested, plus up to CONTINUATIONS_PER_REQUEST continuations of
  long connections (comments of a thread that did not fit nested) from earlier pages.
- A backfill remembers the newest `updatedAt` it saw when it started (the high-water mark);
  a thread updated while the backfill runs moves ahead of the cursor and is picked up by the
  next refresh, which pages from the newest thread down to the stored mark and stops there.

Crash safety: a thread is written only once all of its continuations arrived, and a stream's
cursor (SyncCursor.cursor) moves past a page only when every thread of that page is written,
in the same transaction. A crash re-fetches at most the pages in flight.

Threads gone on GitHub without a webhook (deleted, transferred away): once a stream's listing
ran to its end, the stored threads it did not return are asked about by number
(Syncer._check_unlisted): NOT_FOUND deletes one, an answer from another repository moves it,
through the webhook path's store functions (delete_thread, move_thread); absence alone, or
any other answer, deletes nothing.

Records are the webhook path's: bots get the `[bot]` suffix REST uses, "" becomes None, and
everything is written through bot.store.threads.upsert_thread / upsert_comment, then analysed
through bot.pipeline.thread_changed(trigger="sync").
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from analyzers.accounts import is_bot_login
from analyzers.catalog import canonical_repo, framework_id
from bot.github.queries import (
    CONTINUATIONS,
    HIDDEN_QUERY,
    PAGE_MAX,
    CheckSlot,
    ContinuationSlot,
    StreamSlot,
    build_check_query,
    build_sync_query,
)
from bot.store.installations import silenced_installations
from bot.store.models import Analysis, Comment, Repository, SyncCursor, Thread
from bot.store.privacy import lock_repositories
from bot.store.repositories import settle_repository
from bot.store.threads import (
    COMMENT_FIELDS,
    COMMENT_TIMES,
    bury,
    comment_grave,
    delete_comment,
    delete_thread,
    graves,
    is_buried,
    move_thread,
    storable_text,
    thread_grave,
    upsert_comment,
    upsert_thread,
)
from bot.store.types import parse_datetime, utcnow

log = logging.getLogger(__name__)

KINDS = ("issue", "pull_request", "discussion")
# The installation permission a listing needs (GitHub's names, as the installation lists them)
PERMISSIONS = {"issues": "issues", "pullRequests": "pull_requests", "discussions": "discussions"}
THREADS_PER_REQUEST = 100
CONTINUATIONS_PER_REQUEST = 25
INCREMENTAL_PROBE = 5  # threads asked per stream in the first request of a refresh
RATE_LIMIT_RESERVE = 100  # points left for webhooks and comments; below it, wait for reset
GRAPHQL_ATTEMPTS = 4  # consecutive requests answered with GraphQL errors before giving up
RATE_LIMIT_WAITS = 5  # rate-limit answers waited out in a row before giving up
MIN_THREADS_PER_REQUEST = 10
CHECKS_PER_REQUEST = 100  # stored threads asked about by number in one request
# Comments asked whether GitHub hides them (Syncer._check_hidden): those posted within the last
# HIDDEN_RECENT_DAYS, of threads the pass did not read, a hundred node ids a request, at most
# HIDDEN_CHECK_REQUESTS requests a run (the newest first).
HIDDEN_RECENT_DAYS = 7
HIDDEN_IDS_PER_REQUEST = 100
HIDDEN_CHECK_REQUESTS = 50
# Older stored comments asked the same (hidden, shown again, deleted, edited) in a rotation
# (Syncer._recheck_older): per repository, RECHECK_PER_REPO a run in comment id order from
# where the last run stopped (a SyncCursor row of kind RECHECK_KIND), wrapping round, so that
# every stored comment is asked again within ceil(older comments / RECHECK_PER_REPO) runs.
RECHECK_PER_REPO = 2500
RECHECK_KIND = "comments"

SleepFn = Callable[[float], Awaitable[None]]
ChangedFn = Callable[[str, int], Awaitable[object]]


class SyncError(RuntimeError):
    """The sync stopped before the end (what was fetched is stored)."""


class SyncFailed(SyncError):
    """... because GitHub kept failing the request (5xx, errors without data), not because a
    request budget ran out: a caller that previews what was stored must say it failed."""


class _Transient(Exception):
    """A request answered with GraphQL errors and no data: retried smaller."""


class _Refused(Exception):
    """GitHub refuses the credentials of a group of streams (401: GraphQL takes no anonymous
    client, a revoked token): retrying cannot help, the other groups go on."""


# ---------------------------------------------------------------------------- records
def actor_login(node: dict[str, Any] | None) -> tuple[str | None, bool | None]:
    """GraphQL actor -> (login as REST spells it, is_bot).

    GraphQL names bots without the `[bot]` suffix REST and webhooks use; a deleted account is
    null in GraphQL and "ghost" in REST.
    """
    if node is None:
        return "ghost", False
    login = node.get("login") or None
    is_bot = node.get("__typename") == "Bot"
    if login and is_bot and not login.endswith("[bot]"):
        login += "[bot]"
    return login, is_bot_login(login, node.get("__typename"))


def _lower(value: str | None) -> str | None:
    return value.lower() if value else None


def _closer(node: dict[str, Any]) -> dict[str, Any] | None:
    items = ((node.get("timelineItems") or {}).get("nodes")) or []
    for item in reversed(items):
        if item and "actor" in item:
            return item["actor"] or {"__typename": "User", "login": None}
    return None


def thread_from_node(node: dict[str, Any], repo: str) -> dict[str, Any]:
    """A GraphQL Issue / PullRequest / Discussion -> thread record (contract shape, no comments)."""
    typename = node["__typename"]
    kind = {"Issue": "issue", "PullRequest": "pull_request", "Discussion": "discussion"}[typename]
    author, author_is_bot = actor_login(node.get("author"))
    closed_by: str | None = None
    state_reason: str | None = None
    if kind == "issue":
        state = "closed" if node["state"] == "CLOSED" else "open"
        state_reason = _lower(node.get("stateReason"))
        closer = _closer(node)
    elif kind == "pull_request":
        state = "merged" if node.get("merged") else ("closed" if node["state"] == "CLOSED" else "open")
        closer = _closer(node) or (node.get("mergedBy") if node.get("merged") else None)
    else:
        state = "closed" if node.get("closed") else "open"
        state_reason = _lower(node.get("stateReason"))
        closer = None  # discussions have no timeline in GraphQL
    if state != "open" and closer is not None:
        closed_by = actor_login(closer)[0] if closer.get("login") else None
    record = {
        "id": f"{repo}#{node['number']}",
        "repo": repo,
        "number": int(node["number"]),
        "kind": kind,
        "github_id": node.get("databaseId"),
        "node_id": node.get("id"),
        "title": node.get("title") or "",
        "body": node.get("body") or None,
        "author": author,
        "author_association": node.get("authorAssociation") or None,
        "author_is_bot": author_is_bot,
        "state": state,
        "state_reason": state_reason,
        "closed_by": closed_by,
        "labels": [n["name"] for n in ((node.get("labels") or {}).get("nodes") or []) if n],
        "assignees": [n["login"] for n in ((node.get("assignees") or {}).get("nodes") or []) if n],
        "created_at": node.get("createdAt"),
        "updated_at": node.get("updatedAt"),
        "closed_at": node.get("closedAt") or None,
        "url": node.get("url"),
        "complete": True,
    }
    if kind == "discussion":
        # As the webhook path reads answer_chosen_at / answer_chosen_by / category.
        answered = bool(node.get("answerChosenAt"))
        record["answered"] = answered
        record["answer_chosen_by"] = actor_login(node.get("answerChosenBy"))[0] if answered else None
        category = node.get("category")
        if isinstance(category, dict):
            record["category"] = category.get("name") or None
    if kind == "discussion" and state == "closed":
        # GraphQL does not tell who closed a discussion; the `discussion.closed` webhook
        # (its sender) does: unknown here is not "nobody", the stored closer is kept.
        del record["closed_by"]
    return record


# One kind per id space GitHub numbers them in (bot.webhooks.normalize.COMMENT_EVENTS).
COMMENT_KINDS = {
    "IssueComment": "comment",
    "DiscussionComment": "discussion_comment",
    "PullRequestReview": "review",
    "PullRequestReviewComment": "review_comment",
}


def minimized_reason(node: dict[str, Any]) -> str | None:
    """Why GitHub shows a comment hidden, as GraphQL's minimizedReason documents it (lower
    case, `off-topic`; the MinimizeComment input's OFF_TOPIC spelled so too), "unknown" when
    hidden without one; None when shown."""
    if not node.get("isMinimized"):
        return None
    reason = str(node.get("minimizedReason") or "").strip().lower().replace("_", "-")
    return reason[:32] or "unknown"


def comment_from_node(node: dict[str, Any], typename: str) -> dict[str, Any] | None:
    """A GraphQL comment-like node -> comment record; None for what webhooks never store."""
    if typename == "PullRequestReview" and node.get("state") == "PENDING":
        return None  # a draft review is visible only to its author
    if node.get("deletedAt"):
        return None
    author, is_bot = actor_login(node.get("author"))
    record = {
        "kind": COMMENT_KINDS[typename],
        "github_id": node["databaseId"],
        "node_id": node.get("id"),
        "author": author,
        "author_association": node.get("authorAssociation") or None,
        "author_is_bot": is_bot,
        "body": node.get("body") or "",
        "created_at": node.get("createdAt"),
        "updated_at": node.get("updatedAt"),
    }
    record["minimized_reason"] = minimized_reason(node)
    if typename == "PullRequestReviewComment":
        record["path"] = node.get("path") or None  # the file the remark is on
    if typename == "PullRequestReview":
        # As the webhook path stores reviews: submitted_at is the time, there is no updated_at.
        record["created_at"] = node.get("submittedAt") or node.get("createdAt")
        del record["updated_at"]
    return record


def _newer(stored: datetime | None, fetched: str | None) -> bool:
    """The stored row is of a later version than the one fetched (the webhook path's rule)."""
    when = parse_datetime(fetched)
    return stored is not None and when is not None and stored > when


def new_comment_values(thread_id: int, record: dict[str, Any]) -> dict[str, Any]:
    """Column values of a new comment row, set field by field as upsert_comment sets them.

    A backfill inserts tens of thousands of comments; upsert_comment's select-then-flush per
    comment made that minutes long, so new rows are inserted in one executemany per batch.
    Existing rows still go through upsert_comment.
    """
    row: dict[str, Any] = {"kind": record.get("kind") or "comment",
                           "github_id": int(record["github_id"]), "thread_id": thread_id}
    for key in COMMENT_FIELDS:
        value = record.get(key)
        if key in ("author_association", "path", "minimized_reason"):
            value = value or None
        if key == "body":
            value = storable_text(value or "")
        row[key] = value
    for key in COMMENT_TIMES:
        row[key] = parse_datetime(record.get(key))  # absent (a review's updated_at) is None
    return row


# ---------------------------------------------------------------------------- state
@dataclass
class Stream:
    repo: str
    kind: str
    installation_id: int | None
    after: str | None
    backfill: bool
    stop_at: datetime | None  # refresh: threads older than this are known
    high_water: datetime | None
    done: bool = False
    total: int | None = None
    fetched: int = 0
    requests: int = 0
    pages: deque[tuple[str | None, set[str]]] = field(default_factory=deque)
    committed: str | None = None
    cursor_dirty: bool = False
    failed: str | None = None
    closed: bool = False  # final cursor state written
    at_mark: set[int] = field(default_factory=set)  # stored threads updated at stop_at
    hold: datetime | None = None  # the oldest time of a thread the database refused
    refused: set[int] = field(default_factory=set)  # numbers of the threads it refused
    nulls: int = 0  # threads its pages answered null (number unknown): GitHub counts them
    seen: set[int] = field(default_factory=set)  # numbers its listing returned in this pass
    cursors: set[str] = field(default_factory=set)  # the endCursors its pages gave in this pass
    fresh: bool = False  # a backfill that lists from the newest thread in this pass
    checked: bool = False  # its stored threads the listing did not return were asked about

    @property
    def mark(self) -> datetime | None:
        """The mark to store: the pass's high-water mark, held at the oldest thread the
        database refused (stored past it, that thread was never read again until updated)."""
        if self.hold is not None and self.high_water is not None:
            return min(self.hold, self.high_water)
        return self.high_water

    @property
    def owner_name(self) -> tuple[str, str]:
        owner, _, name = self.repo.partition("/")
        return owner, name

    def want(self) -> int:
        if self.backfill:
            if self.total is None:
                return 0  # sized by the caller when totals are unknown
            return max(10, min(PAGE_MAX, self.total - self.fetched))
        # A refresh starts small and grows while it keeps finding changed threads.
        return min(PAGE_MAX, INCREMENTAL_PROBE * (4 ** self.requests))


@dataclass
class PendingThread:
    key: str
    record: dict[str, Any]
    stream: Stream
    comments: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    open: int = 0  # continuations still to come
    # Some of its comments came back null with an error (and could not be asked again): what
    # is stored and was not seen is kept, not deleted as deleted on GitHub.
    incomplete: bool = False


@dataclass
class Continuation:
    slot: ContinuationSlot
    thread_key: str
    child_type: str  # GraphQL type of the connection's nodes
    failures: int = 0  # answers in a row where it came back null with an error


def _no_way_on(cursor: Any, asked: str | None, given: set[str]) -> str | None:
    """Why a page GitHub says has a next one gives no way to it, or None: no `endCursor`, or
    the cursor the page was asked with, or one an earlier page of the same connection gave
    (asked again, the same pages would come back for ever). Not seen from GitHub."""
    if not isinstance(cursor, str) or not cursor:
        return "GitHub said there is a next page but gave no next cursor"
    if cursor == asked or cursor in given:
        return "GitHub said there is a next page but gave the same cursor again"
    return None


FAILED_THREADS_SHOWN = 100  # failed_threads entries the counts keep (with the full count)


@dataclass
class SyncStats:
    requests: int = 0
    threads: int = 0  # threads written
    changed: int = 0  # threads new or updated (analysed again)
    comments: int = 0
    continuations: int = 0
    graphql_errors: int = 0
    waited_for_rate_limit: float = 0.0
    repos: dict[str, int] = field(default_factory=dict)
    failed_streams: list[str] = field(default_factory=list)
    # (repository, kind)s the installation's token may not read: GitHub answered the listing
    # null with FORBIDDEN (a permission the organisation did not grant, such as Discussions):
    # {"repo", "kind", "permission", "installation"}. Not failures: skipped, and named (auth64)
    not_permitted: list[dict[str, Any]] = field(default_factory=list)
    # threads stored but not acted on (on_changed raised): {"thread": "owner/repo#N", "error"}
    failed_threads: list[dict[str, str]] = field(default_factory=list)
    # stored threads the listing did not return, asked about (`Syncer._check_unlisted`);
    # of them, deleted (GitHub: NOT_FOUND) and moved (GitHub has them in another repository)
    checked: int = 0
    deleted: int = 0
    moved: int = 0
    # stored comments of recently active threads asked whether GitHub hides them
    # (`Syncer._check_hidden`): asked, found hidden or shown again, found deleted, and those
    # the run's bound left unasked
    hidden_checked: int = 0
    hidden_changed: int = 0
    hidden_deleted: int = 0
    hidden_left: int = 0
    # comments found edited on GitHub (body changed) by those checks, and the older comments
    # asked in the rotation, with the runs a whole round takes at the current size
    hidden_edited: int = 0
    recheck_checked: int = 0
    recheck_runs: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests, "threads": self.threads, "changed": self.changed,
            "comments": self.comments, "continuations": self.continuations,
            "graphql_errors": self.graphql_errors,
            "waited_for_rate_limit": round(self.waited_for_rate_limit, 1),
            "repos": dict(self.repos), "failed_streams": list(self.failed_streams),
            "not_permitted": [dict(n) for n in self.not_permitted],
            # The first FAILED_THREADS_SHOWN and the count: a repository whose threads GitHub
            # refuses by the thousand made a job_runs.counts row of megabytes (left64).
            "failed_threads": [dict(f) for f in self.failed_threads[:FAILED_THREADS_SHOWN]],
            "failed_threads_total": len(self.failed_threads),
            "checked": self.checked, "deleted": self.deleted, "moved": self.moved,
            "hidden_checked": self.hidden_checked, "hidden_changed": self.hidden_changed,
            "hidden_deleted": self.hidden_deleted, "hidden_left": self.hidden_left,
            "hidden_edited": self.hidden_edited, "recheck_checked": self.recheck_checked,
            "recheck_runs": self.recheck_runs,
        }


class Progress:
    """A rich progress bar on a terminal, plain log lines otherwise."""

    def __init__(self, enabled: bool | None = None) -> None:
        self.tty = sys.stderr.isatty() if enabled is None else enabled
        self._bar: Any = None
        self._task: Any = None
        self._last_logged = 0

    def start(self, total: int | None) -> None:
        if self.tty:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            # on stderr, the terminal it checked: rich's default console is stdout (the counts)
            self._bar = Progress(TextColumn("sync"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[info]}"), transient=False,
                                 console=Console(stderr=True))
            self._bar.start()
            self._task = self._bar.add_task("sync", total=total, info="")

    def update(self, done: int, total: int | None, stats: SyncStats) -> None:
        info = f"{stats.requests} requests, {stats.changed} changed"
        if self._bar is not None:
            self._bar.update(self._task, completed=done, total=total, info=info)
        elif done - self._last_logged >= 500 or (total and done >= total):
            self._last_logged = done
            log.info("sync: %d/%s threads, %s", done, total if total else "?", info)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()


# ---------------------------------------------------------------------------- the sync
def default_repos() -> list[str]:
    from analyzers.catalog import load_catalog

    return [fw.repo for fw in load_catalog().frameworks.values()]


class Syncer:
    def __init__(
        self,
        ctx: Any,
        repos: Iterable[str] | None = None,
        *,
        full: bool = False,
        sleep: SleepFn = asyncio.sleep,
        progress: Progress | None = None,
        on_changed: ChangedFn | None = None,
        max_requests: int | None = None,
        recheck: bool = False,
    ) -> None:
        self.ctx = ctx
        self.recheck = recheck  # older comments asked again in a rotation (_recheck_older)
        self.repos = [canonical_repo(r) for r in (repos or default_repos())]
        self.full = full
        self.sleep = sleep
        self.progress = progress or Progress(enabled=False)
        self.on_changed = on_changed  # e.g. the pipeline: analyse and decide
        self.max_requests = max_requests  # stop early (tests simulate a crash with it)
        self.stats = SyncStats()
        self.streams: list[Stream] = []
        self.pending: dict[str, PendingThread] = {}
        self.continuations: deque[Continuation] = deque()
        self._new_rows: list[dict[str, Any]] = []  # comment rows to insert at the next flush
        self.thread_budget = THREADS_PER_REQUEST  # halved after an error, restored after success
        self.continuation_budget = CONTINUATIONS_PER_REQUEST
        self.errors: list[dict[str, Any]] = []  # the GraphQL errors of the last partial answer
        # The endCursors each thread's connection gave in this pass ((node id, field): cursors)
        self._slot_cursors: dict[tuple[str, str], set[str]] = {}
        self.marked_private: set[str] = set()  # stored rows marked private (bot/store/privacy.py)
        self.read_threads: set[int] = set()  # ids of the threads written (read) in this pass
        self._batch_read: list[int] = []
        # Stored reviews whose text this pass replaced with its snapshot (ids), asked again at
        # the end of the run (`_check_hidden`): a review has no time to tell the snapshot from
        # an edit a webhook stored while this pass held the thread (leftb65).
        self.reviews_rewritten: set[int] = set()
        self._batch_reviews: list[int] = []
        # repositories seen in a stream's first answer, to settle at the next write:
        # lower-case name -> (name, GitHub id, its updatedAt, former names the sync was given)
        self._identities: dict[str, tuple[str, int | None, datetime | None, set[str]]] = {}

    # ------------------------------------------------------------------ set-up
    async def _load_streams(self) -> None:
        async with self.ctx.sessionmaker() as session:
            silenced = await silenced_installations(session)
            for repo in dict.fromkeys(self.repos):
                installation_id = None
                if any(s.repo.lower() == repo.lower() for s in self.streams):
                    # named twice (in two spellings, or repeated): two streams of a kind read
                    # the same threads, and one replaced the other's pending thread under the
                    # same key (that thread and its comments were never stored)
                    continue
                # The stored row's spelling: `--repo codertocat/hello-world` for an installed
                # Codertocat/Hello-World made a second row and cursors, and a new backfill.
                row = await session.scalar(select(Repository).where(
                    func.lower(Repository.full_name) == repo.lower()))
                if row is not None:
                    repo = row.full_name
                    if row.private:
                        self.marked_private.add(repo)
                if row is None:
                    row = Repository(full_name=repo, framework=framework_id(repo))
                    session.add(row)
                elif self.ctx.settings.has_app_credentials and row.installation_id not in silenced:
                    # (a suspended or uninstalled installation's token is refused: its
                    # repositories are read as any other, with GITHUB_TOKEN)
                    installation_id = row.installation_id
                for kind in KINDS:
                    cur = await session.scalar(
                        select(SyncCursor).where(SyncCursor.repo == repo, SyncCursor.kind == kind)
                    )
                    if cur is None:
                        cur = SyncCursor(repo=repo, kind=kind, full_done=False)
                        session.add(cur)
                    if self.full:
                        cur.full_done, cur.cursor, cur.updated_since = False, None, None
                    if cur.full_done and cur.updated_since is not None:
                        stream = Stream(repo, kind, installation_id, None, False,
                                        cur.updated_since, None)
                        # Threads stored with exactly the mark's time need no fetch; another
                        # thread updated within the same second still does.
                        stream.at_mark = set(await session.scalars(select(Thread.number).where(
                            Thread.repo == repo, Thread.kind == kind,
                            Thread.updated_at == cur.updated_since)))
                    else:
                        # A backfill, resumed from its cursor when one is stored.
                        stream = Stream(repo, kind, installation_id, cur.cursor, True, None,
                                        cur.updated_since if cur.cursor else None)
                        stream.committed = cur.cursor
                        stream.fresh = cur.cursor is None
                    self.streams.append(stream)
            await session.commit()

    # ------------------------------------------------------------------ requests
    def _plan(self, installation_id: int | None) -> tuple[list[Stream], list[StreamSlot], list[Continuation]]:
        conts: list[Continuation] = []
        kept: deque[Continuation] = deque()
        while self.continuations:
            c = self.continuations.popleft()
            inst = self.pending[c.thread_key].stream.installation_id
            if inst == installation_id and len(conts) < self.continuation_budget:
                conts.append(c)
            else:
                kept.append(c)
        self.continuations = kept
        active = [s for s in self.streams if not s.done and s.installation_id == installation_id]
        streams: list[Stream] = []
        slots: list[StreamSlot] = []
        budget = self.thread_budget
        # Streams not yet asked share one request: it tells the backfills their totals and
        # ends most refreshes at once.
        fresh = [s for s in active if s.requests == 0]
        share = max(1, budget // max(1, len(fresh)))
        # Streams already under way first, so their pages finish and cursors move on.
        for s in sorted(active, key=lambda s: (s.requests == 0, s.repo, s.kind)):
            want = min(share, s.want() or share) if s.requests == 0 else s.want()
            take = min(want, budget)
            if take <= 0:
                break
            budget -= take
            owner, name = s.owner_name
            streams.append(s)
            slots.append(StreamSlot(owner, name, s.kind, take, s.after))
        return streams, slots, conts

    async def _request(self, query: str, variables: dict[str, Any], installation_id: int | None) -> dict[str, Any]:
        import gidgethub

        from bot.github.client import rate_limit_wait

        for waits in range(RATE_LIMIT_WAITS + 1):
            if self.max_requests is not None and self.stats.requests >= self.max_requests:
                raise SyncError("request budget used up")
            self.stats.requests += 1
            try:
                return await self._ask(query, variables, installation_id)
            except gidgethub.BadRequest as exc:
                # A rate limit longer than the client waits for itself (a secondary limit's
                # retry-after of minutes): the sync is a background job, it waits as asked.
                wait = rate_limit_wait(exc)
                if wait is None or waits == RATE_LIMIT_WAITS:
                    raise
                log.warning("sync: rate limited by GitHub, waiting %.0f s", wait)
                self.stats.waited_for_rate_limit += wait
                await self.sleep(wait)
        raise AssertionError("unreachable")

    async def _ask(self, query: str, variables: dict[str, Any], installation_id: int | None) -> dict[str, Any]:
        import gidgethub

        from bot.github.client import rate_limit_wait

        self.errors = []
        try:
            return await self.ctx.github.graphql(query, installation_id=installation_id, **variables)
        except gidgethub.GraphQLAuthorizationFailure as exc:
            raise _Refused(str(exc)) from exc
        except gidgethub.GitHubBroken as exc:
            # Still 5xx after the client's retries of the same document: GitHub's answer to a
            # query too heavy to finish in its time (502). Asked again smaller, as below.
            log.warning("sync: GitHub answered %s", exc.status_code)
            raise _Transient(f"GitHub {int(exc.status_code)}") from exc
        except gidgethub.BadRequest as exc:
            # No token for the installation (uninstalled or suspended while no event told
            # us: 410 InstallationGone, 403): that group is refused, as a 401 is; it ended
            # the whole sync.
            if (installation_id is not None and int(exc.status_code) in (401, 403, 404, 410)
                    and rate_limit_wait(exc) is None):
                raise _Refused(f"{int(exc.status_code)} {exc}") from exc
            raise
        except gidgethub.GraphQLException as exc:
            self.stats.graphql_errors += 1
            response = exc.response if isinstance(exc.response, dict) else {}
            data = response.get("data")
            if data:
                # Partial answer: some slots failed (e.g. a repository renamed or gone);
                # the caller handles the aliases that came back null.
                log.warning("sync: GraphQL errors in a partial answer: %s", _messages(response))
                self.errors = [e for e in response.get("errors") or [] if isinstance(e, dict)]
                return data
            log.warning("sync: GraphQL error: %s", exc)
            raise _Transient(str(exc)) from exc

    async def _pace(self, rate: dict[str, Any] | None) -> None:
        """Waits for the reset when the points left would eat into the reserve."""
        if not rate:
            return
        remaining = int(rate.get("remaining") or 0)
        cost = int(rate.get("cost") or 1)
        if remaining - cost >= RATE_LIMIT_RESERVE:
            return
        reset = parse_datetime(rate.get("resetAt"))
        wait = max(1.0, (reset - utcnow()).total_seconds() + 1) if reset else 60.0
        log.warning("sync: %d GraphQL points left, waiting %.0f s for the reset", remaining, wait)
        self.stats.waited_for_rate_limit += wait
        await self.sleep(wait)

    # ------------------------------------------------------------------ answers
    def _add_children(self, pt: PendingThread, typename: str, conn: dict[str, Any] | None,
                      parent_id: str, parent_type: str, field_name: str,
                      after: str | None = None) -> None:
        """Collects a connection's nodes (and nested ones) and queues what did not fit.
        `after`: the cursor the connection was asked with (None: from its start). A next page
        GitHub gives no new cursor to (`_no_way_on`) is not asked for: the thread is written
        with what was read, kept incomplete, and named in `failed_threads`."""
        if not conn:
            return
        for node in conn.get("nodes") or []:
            if not node:
                continue
            record = comment_from_node(node, typename)
            if record is not None:
                pt.comments[(record["kind"], int(record["github_id"]))] = record
            if typename == "PullRequestReview" and node.get("state") == "PENDING":
                continue  # a draft review's comments are drafts too (its author's alone)
            if typename == "PullRequestReview":
                self._add_children(pt, "PullRequestReviewComment", node.get("comments"),
                                   node["id"], "PullRequestReview", "comments")
            elif typename == "DiscussionComment" and "replies" in node:
                self._add_children(pt, "DiscussionComment", node.get("replies"),
                                   node["id"], "DiscussionComment", "replies")
        info = conn.get("pageInfo") or {}
        if info.get("hasNextPage"):
            if after is None:  # read from its start (again: a null asked again): a new chain
                self._slot_cursors.pop((parent_id, field_name), None)
            seen = self._slot_cursors.setdefault((parent_id, field_name), set())
            stuck = _no_way_on(info.get("endCursor"), after, seen)
            if stuck is not None:
                pt.incomplete = True
                self._stopped(f"{pt.key} ({field_name})", stuck)
                return
            seen.add(str(info.get("endCursor")))
            pt.open += 1
            self.continuations.append(Continuation(
                ContinuationSlot(parent_id, parent_type, field_name, info.get("endCursor")),
                pt.key, typename))

    def _take_thread(self, stream: Stream, node: dict[str, Any]) -> PendingThread:
        record = thread_from_node(node, stream.repo)
        key = f"{stream.repo}#{record['number']}"
        pt = PendingThread(key, record, stream)
        self.pending[key] = pt
        typename = node["__typename"]
        child = "DiscussionComment" if typename == "Discussion" else "IssueComment"
        self._add_children(pt, child, node.get("comments"), node["id"], typename, "comments")
        if typename == "PullRequest":
            self._add_children(pt, "PullRequestReview", node.get("reviews"), node["id"],
                               typename, "reviews")
        return pt

    def _errors_under(self, *prefix: Any) -> list[list[Any]]:
        """The paths of the last partial answer's errors (other than NOT_FOUND) that point
        below `prefix`."""
        n = len(prefix)
        return [list(e["path"]) for e in self.errors
                if isinstance(e.get("path"), list) and len(e["path"]) > n
                and tuple(e["path"][:n]) == prefix and e.get("type") != "NOT_FOUND"]

    def _ask_again_nulled(self, pt: PendingThread, node: dict[str, Any], paths: list[list[Any]],
                          depth: int) -> None:
        """`paths`: errors inside the thread's node (its own fields from `depth` on). A
        connection of the thread itself answered null (comments, reviews) is asked again
        from its start, as a continuation; below that, the thread is marked incomplete."""
        typename = node.get("__typename")
        for path in paths:
            rest = path[depth:]
            if (len(rest) == 1 and node.get(rest[0]) is None and node.get("id")
                    and (typename, rest[0]) in CONTINUATIONS):
                child = ("PullRequestReview" if rest[0] == "reviews" else
                         "DiscussionComment" if typename == "Discussion" else "IssueComment")
                pt.open += 1
                self.continuations.append(Continuation(
                    ContinuationSlot(node["id"], str(typename), rest[0], None), pt.key, child))
            else:
                pt.incomplete = True

    def _take_page(self, stream: Stream, conn: dict[str, Any] | None,
                   where: tuple[str, str] | None = None) -> None:
        stream.requests += 1
        if conn is None and where is not None and self._not_permitted(stream, where):
            return
        if conn is None:
            stream.done = True
            stream.failed = "not found"
            self.stats.failed_streams.append(f"{stream.repo}:{stream.kind}")
            return
        stream.total = conn.get("totalCount")
        nodes = list(enumerate(conn.get("nodes") or []))
        keys: set[str] = set()
        reached_known = False
        for k, node in nodes:
            if not node:
                stream.nulls += 1
                self._null_thread(stream, nodes[k + 1:], where, k)
                continue
            stream.seen.add(int(node["number"]))
            updated = parse_datetime(node.get("updatedAt"))
            if stream.high_water is None and stream.after is None:
                stream.high_water = updated  # the newest thread: this pass's mark
            if stream.stop_at is not None and updated is not None:
                if updated < stream.stop_at:
                    reached_known = True
                    break
                if updated == stream.stop_at and int(node["number"]) in stream.at_mark:
                    continue
            pt = self._take_thread(stream, node)
            keys.add(pt.key)
            if where is not None and self.errors:
                self._ask_again_nulled(pt, node, self._errors_under(*where, "nodes", k), 4)
        stream.fetched += len(keys)
        info = conn.get("pageInfo") or {}
        stuck = None
        if info.get("hasNextPage") and not reached_known:
            # A next page GitHub gives no new cursor to: asked with the same `after`, the same
            # page came back for ever (its threads taken again each time).
            stuck = _no_way_on(info.get("endCursor"), stream.after, stream.cursors)
            if stuck is not None:
                what = f"{stream.repo} {where[1] if where else stream.kind} (the listing)"
                stream.failed = stream.failed or f"{what}: {stuck}"
                self._stopped(what, stuck)
        cursor = (info.get("endCursor") if stuck is None else None) or stream.after
        if cursor is not None:
            stream.cursors.add(cursor)
        stream.after = cursor
        stream.pages.append((cursor, keys))
        if reached_known or not info.get("hasNextPage") or stuck is not None:
            stream.done = True
        if stream.backfill and stream.fetched == len(keys):
            stream.cursor_dirty = True  # the pass's high-water mark must be stored now

    def _not_permitted(self, stream: Stream, where: tuple[str, str]) -> bool:
        """The listing answered null with FORBIDDEN at its own path: the installation's token
        may not read that kind (the organisation did not grant the app its permission:
        Discussions, Issues, Pull requests). A skip named with the permission (the counts,
        one log line), not a failed stream: the night was "partial" every night, "GitHub
        refused the sync of" the repository in its error and the posted report, though its
        other kinds were synced. The stream's cursor is not marked whole, so the first sync
        after the permission is accepted (`new_permissions_accepted`, which drops the token)
        reads the kind from its start."""
        errors = [e for e in self.errors if isinstance(e.get("path"), list)
                  and tuple(e["path"]) == where and e.get("type") == "FORBIDDEN"]
        if not errors:
            return False
        permission = PERMISSIONS.get(where[1], where[1])
        stream.done = True
        stream.failed = f"not permitted: {permission}"
        self.stats.not_permitted.append({"repo": stream.repo, "kind": stream.kind,
                                         "permission": permission,
                                         "installation": stream.installation_id})
        who = (f"installation {stream.installation_id}" if stream.installation_id is not None
               else "GITHUB_TOKEN" if self.ctx.settings.token else "an anonymous reader")
        log.warning("sync: %s may not read the %s of %s (GitHub: %s): the app lacks its %s "
                    "permission there; skipped until it is granted", who, where[1], stream.repo,
                    str(errors[0].get("message") or "FORBIDDEN")[:200],
                    permission.replace("_", " ").capitalize())
        return True

    def _stopped(self, what: str, why: str) -> None:
        """A listing or a thread's connection stopped where GitHub gave no way to its next
        page (`_no_way_on`): said once in the log, and counted in `failed_threads` (the
        night's run is "partial", `rltracker sync` exits 2); the next sync reads it again."""
        self.stats.failed_threads.append({"thread": what, "error": why})
        log.error("sync: %s: %s; stopped there, the rest is synced", what, why)

    def _null_thread(self, stream: Stream, after: list[tuple[int, Any]],
                     where: tuple[str, str] | None, k: int) -> None:
        """A thread of a page answered null with an error (FORBIDDEN on one issue, a timeout
        of that part of the query): skipped silently, the cursor and the mark moved past it and
        it was read again only when next updated. It is recorded in `failed_threads` and the
        pass's mark held at the next thread of the page (ordered by updatedAt descending, a
        lower bound of its time); with none after it, the mark is not moved at all."""
        prefix = (*where, "nodes", k) if where is not None else None
        errors = [e for e in self.errors if prefix is not None and isinstance(e.get("path"), list)
                  and tuple(e["path"][:len(prefix)]) == prefix]
        if not errors:
            return  # null without an error: nothing GitHub let us read
        message = "; ".join(dict.fromkeys(
            str(e.get("type") or "") + ": " + str(e.get("message") or "GraphQL error")
            for e in errors)).removeprefix(": ")
        what = f"{stream.repo} {where[1] if where else stream.kind} (a thread GitHub answered null)"
        self.stats.failed_threads.append({"thread": what, "error": message[:500]})
        log.error("sync: %s: %s; the other threads are synced", what, message[:500])
        lower = next((parse_datetime(n.get("updatedAt")) for _, n in after if n), None)
        if lower is None:
            stream.failed = stream.failed or f"{what}: {message[:200]}"
        elif stream.hold is None or lower < stream.hold:
            stream.hold = lower

    def _saw_repository(self, stream: Stream, repo_data: dict[str, Any] | None) -> bool:
        """The repository's id and current name in a stream's first answer. Asked under a
        former name (GitHub resolves it), the stream's threads are stored under the current
        one; the store settles what is under other names of it at the next write
        (settle_repository). False: another stream reads the same repository and kind (given
        under both names), this one stops."""
        if not repo_data or stream.requests:
            return True
        name = repo_data.get("nameWithOwner")
        if not isinstance(name, str) or "/" not in name:
            return True
        current = canonical_repo(name)
        former: set[str] = set()
        if framework_id(stream.repo) is not None and framework_id(current) is None:
            # a tracked framework under a name the catalog does not know yet: its threads stay
            # under the catalog's name (under the new one, no page would count them)
            # (nor is the row holding its id moved back from the name webhooks store it under)
            log.warning("sync: GitHub calls %s %s now; add the name to the catalog", stream.repo, name)
            return True
        if current.lower() != stream.repo.lower():
            if any(o is not stream and o.kind == stream.kind and o.repo.lower() == current.lower()
                   for o in self.streams):
                stream.done = stream.closed = True
                return False
            log.info("sync: %s is %s now on GitHub; its threads are stored under that name",
                     stream.repo, current)
            former.add(stream.repo)
            stream.repo = current
        gid = repo_data.get("databaseId")
        known = self._identities.get(stream.repo.lower())
        self._identities[stream.repo.lower()] = (
            stream.repo, gid if isinstance(gid, int) else None,
            parse_datetime(repo_data.get("updatedAt")), former | (known[3] if known else set()))
        return True

    def _failed_slot(self, alias: str, node: dict[str, Any] | None, field_name: str) -> str | None:
        """The error that left continuation `alias` without its connection, if one did: an
        error of the last partial answer naming it (or naming no slot), other than GitHub's
        NOT_FOUND (the thread is gone: null is its answer then)."""
        if node is not None and node.get(field_name) is not None:
            return None
        for error in self.errors:
            path = error.get("path")
            if path and path[0] != alias:
                continue
            if error.get("type") == "NOT_FOUND":
                continue
            return str(error.get("message") or error.get("type") or "GraphQL error")
        return None

    def _take_continuation(self, cont: Continuation, node: dict[str, Any] | None) -> None:
        pt = self.pending[cont.thread_key]
        pt.open -= 1
        self.stats.continuations += 1
        if node is None:
            # The parent vanished meanwhile (transferred, deleted: NOT_FOUND): the next refresh
            # sees the new state. Its stored comments past what was read are kept: taken as
            # deleted on GitHub, a long thread lost them all (250 comments became 40).
            pt.incomplete = True
            return
        self._add_children(pt, cont.child_type, node.get(cont.slot.field), cont.slot.node_id,
                           cont.slot.typename, cont.slot.field, cont.slot.after)

    # ------------------------------------------------------------------ writing
    async def _flush(self) -> None:
        """Writes finished threads and moves cursors past fully written pages, in one commit.

        The database refusing one thread's rows (a constraint, a value it will not store, a
        trigger) rolled back the whole batch and ended the sync: a batch that fails is written
        again thread by thread, each in its own transaction; a thread still refused is
        recorded in `failed_threads` and the pass's mark is held at it (the next refresh reads
        it again), and the cursors are stored in a last transaction of their own."""
        finished = [pt for pt in self.pending.values() if pt.open == 0]
        if not finished and not any(s.cursor_dirty or (s.done and not s.closed) for s in self.streams):
            return
        try:
            changed = await self._write(finished, cursors=True)
        except SQLAlchemyError as exc:
            if not finished:
                raise
            log.warning("sync: a batch of %d threads was refused (%s); writing them one by one",
                        len(finished), _first_line(exc))
            changed = []
            for pt in finished:
                try:
                    changed += await self._write([pt], cursors=False)
                except SQLAlchemyError as one:
                    self._write_failed(pt, one)
            # the cursors alone: refused too, the database (not a thread) is at fault
            await self._write([], cursors=True)
        if self.on_changed is not None:
            for repo, number in changed:
                await self._act_on(repo, number)

    async def _write(self, threads: list[PendingThread], *, cursors: bool) -> list[tuple[str, int]]:
        """One transaction: `threads` written (and their pages freed), then the cursors if
        `cursors`. Refused, nothing of it is kept, in the database or in this pass's state."""
        saved = [(s, [(c, set(k)) for c, k in s.pages], s.committed, s.cursor_dirty, s.closed)
                 for s in self.streams]
        comments = self.stats.comments
        changed: list[tuple[str, int]] = []
        hidden: set[str] = set()
        self._batch_read = []
        self._batch_reviews = []
        try:
            async with self.ctx.sessionmaker() as session:
                for name, gid, seen_at, former in list(self._identities.values()):
                    if gid is not None or former:
                        await settle_repository(session, name, gid, seen_at=seen_at, former=former,
                                                framework=framework_id(name))
                # Made private since its pages were read (a `privatized` committed
                # meanwhile): read under the lock `forget` waits for (bot/store/privacy.py);
                # none of its threads or cursors is written.
                hidden = await lock_repositories(
                    session, {s.repo for s in self.streams} | {pt.stream.repo for pt in threads})
                kept = [pt for pt in threads if pt.stream.repo.lower() not in hidden]
                # Every stored thread of the page locked first, in id order, as an analysis
                # and a webhook batch lock theirs: written in the listing's order, the page
                # held one thread while an analysis held another and waited for it (a
                # deadlock on PostgreSQL). Its comments are read under those locks.
                stored = await self._stored_threads(session, kept)
                known = await self._stored_comments(session, kept)
                buried = await self._graves(session, kept)
                for pt in threads:
                    if pt.stream.repo.lower() not in hidden and await self._write_thread(
                            session, pt, known, stored, buried):
                        changed.append((pt.record["repo"], pt.record["number"]))
                    del self.pending[pt.key]
                    for _cursor, keys in pt.stream.pages:
                        keys.discard(pt.key)
                if self._new_rows:
                    self.stats.comments += len(self._new_rows)
                    await session.execute(insert(Comment), self._new_rows)
                    self._new_rows = []
                if cursors:
                    for s in self.streams:
                        if s.repo.lower() not in hidden:
                            await self._store_cursor(session, s)
                await session.commit()
        except BaseException:
            self._batch_read = []
            self._batch_reviews = []
            self._new_rows = []
            self.stats.comments = comments
            for pt in threads:
                self.pending[pt.key] = pt
            for s, pages, committed, dirty, closed in saved:
                s.pages = deque(pages)
                s.committed, s.cursor_dirty, s.closed = committed, dirty, closed
            raise
        self._identities.clear()
        self.read_threads.update(self._batch_read)
        self.reviews_rewritten.update(self._batch_reviews)
        self._batch_read = []
        for s in self.streams:
            if s.repo.lower() in hidden and not s.closed:  # its pages are read no more
                s.done = s.closed = True
                s.pages.clear()
                self.marked_private.add(s.repo)
        threads = [pt for pt in threads if pt.stream.repo.lower() not in hidden]
        for pt in threads:
            self.stats.repos[pt.record["repo"]] = self.stats.repos.get(pt.record["repo"], 0) + 1
        self.stats.threads += len(threads)
        self.stats.changed += len(changed)
        return changed

    def _write_failed(self, pt: PendingThread, exc: BaseException) -> None:
        """The database refused `pt` alone: recorded, its page freed (the cursor moves on),
        and the pass's mark held at its time so the next refresh reads it again."""
        error = f"{type(exc).__name__}: {_first_line(exc)}".rstrip(": ")
        self.stats.failed_threads.append({"thread": pt.key, "error": error})
        log.error("sync: %s was not stored (%s); the other threads are synced", pt.key, error)
        log.debug("sync: %s", pt.key, exc_info=exc)
        del self.pending[pt.key]
        for _cursor, keys in pt.stream.pages:
            keys.discard(pt.key)
        when = parse_datetime(pt.record.get("updated_at"))
        s = pt.stream
        s.refused.add(int(pt.record["number"]))
        if when is None:
            s.failed = s.failed or f"{pt.key} not stored"
        elif s.hold is None or when < s.hold:
            s.hold = when

    async def _act_on(self, repo: str, number: int) -> None:
        """on_changed of one thread. One that raises (an analyzer bug, the database refusing its
        analysis row) ended the whole sync: the threads after it, stored in the same commit,
        were never analysed (and, their cursors stored, not seen as changed again), the
        streams not yet read were not synced. It is recorded and the sync goes on.

        Its stored analysis, when this call did not write it, is of the thread before the
        change, under the current analyzer version: kept, neither the next refresh (the mark
        moved past the thread) nor the nightly re-analysis (which takes threads with no
        analysis or an older version) analysed it again until its next change on GitHub. It
        is deleted, so the night's re-analysis step analyses the thread again (and records
        a failure that persists)."""
        started = utcnow()
        try:
            await self.on_changed(repo, number)  # type: ignore[misc]
        except Exception as exc:  # noqa: BLE001 - one thread must not stop the others
            error = f"{type(exc).__name__}: {_first_line(exc)}".rstrip(": ")
            self.stats.failed_threads.append({"thread": f"{repo}#{number}", "error": error})
            log.error("sync: %s#%s was stored but not analysed (%s); the other threads are synced",
                      repo, number, error)
            log.debug("sync: %s#%s", repo, number, exc_info=True)
            await self._forget_stale_analysis(repo, number, started)

    async def _forget_stale_analysis(self, repo: str, number: int, before: datetime) -> None:
        """The analysis of `repo`#`number` deleted when stored before `before` (not by the
        call that failed): it is of the thread's former text."""
        try:
            async with self.ctx.sessionmaker() as session:
                thread_id = await session.scalar(select(Thread.id).where(
                    func.lower(Thread.repo) == repo.lower(), Thread.number == number))
                if thread_id is not None:
                    await session.execute(delete(Analysis).where(
                        Analysis.thread_id == thread_id, Analysis.analyzed_at < before))
                    await session.commit()
        except SQLAlchemyError as exc:
            log.error("sync: the former analysis of %s#%s was not set aside (%s)", repo, number,
                      _first_line(exc))

    @staticmethod
    async def _stored_threads(session: Any, threads: list[PendingThread]) -> dict[tuple[str, int], Thread]:
        by_repo: dict[str, list[int]] = {}
        for pt in threads:
            by_repo.setdefault(pt.record["repo"], []).append(pt.record["number"])
        ids: set[int] = set()
        for repo, numbers in by_repo.items():
            for i in range(0, len(numbers), 500):
                ids.update(await session.scalars(select(Thread.id).where(
                    func.lower(Thread.repo) == repo.lower(), Thread.number.in_(numbers[i:i + 500]))))
        # Locked FOR UPDATE in id order (PostgreSQL; SQLite renders nothing, its writes are
        # serialised), read again under the lock (a webhook may have written one meanwhile).
        keys = {(pt.record["repo"].lower(), int(pt.record["number"])) for pt in threads}
        order = sorted(ids)
        found: dict[tuple[str, int], Thread] = {}
        for i in range(0, len(order), 500):
            rows = await session.scalars(
                select(Thread).where(Thread.id.in_(order[i:i + 500])).order_by(Thread.id)
                .with_for_update().execution_options(populate_existing=True))
            found.update({k: t for t in rows if (k := (t.repo.lower(), t.number)) in keys})
        return found

    @staticmethod
    async def _graves(session: Any, threads: list[PendingThread]) -> dict[str, datetime | None]:
        """The noted deletions among these threads and their comments: a webhook told of one
        while this pass held what it fetched before (bot.store.threads.bury)."""
        keys = sorted({thread_grave(pt.record["repo"], pt.record["number"], pt.record["kind"])
                       for pt in threads} | {comment_grave(kind, gid) for pt in threads
                                             for (kind, gid) in pt.comments})
        found: dict[str, datetime | None] = {}
        for i in range(0, len(keys), 500):
            found.update(await graves(session, set(keys[i:i + 500])))
        return found

    @staticmethod
    async def _stored_comments(session: Any, threads: list[PendingThread]) -> dict[tuple[str, int], Comment]:
        """The stored rows of every fetched comment, in a few queries instead of one each."""
        ids = sorted({gid for pt in threads for (_kind, gid) in pt.comments})
        known: dict[tuple[str, int], Comment] = {}
        for i in range(0, len(ids), 500):
            rows = await session.scalars(select(Comment).where(Comment.github_id.in_(ids[i:i + 500])))
            known.update({(c.kind, int(c.github_id)): c for c in rows})
        return known

    async def _write_thread(self, session: Any, pt: PendingThread,
                            known: dict[tuple[str, int], Comment],
                            threads: dict[tuple[str, int], Thread],
                            buried: dict[str, datetime | None] | None = None) -> bool:
        record = pt.record
        buried = buried or {}
        if is_buried(buried, thread_grave(record["repo"], record["number"], record["kind"]),
                     record.get("created_at")):
            return False  # deleted (or transferred away) since this pass fetched it
        existing = threads.get((record["repo"].lower(), record["number"]))
        before = existing.updated_at if existing is not None else None
        # A webhook may have stored a later state while this pass held the thread (its pages,
        # a wait for the rate limit): that state is kept, as the webhook path keeps the newer
        # one, and so are comments this pass did not see. The next refresh reads the thread
        # again (it was updated after this pass's mark).
        stale = _newer(before, record.get("updated_at"))
        written = 0
        rehide = False
        stored: dict[tuple[str, int], Comment] = {}
        if existing is not None:
            rows = await session.scalars(select(Comment).where(Comment.thread_id == existing.id))
            stored = {(c.kind, int(c.github_id)): c for c in rows}
        thread = existing if stale and existing is not None else await upsert_thread(session, record)
        self._batch_read.append(thread.id)
        for key, comment in pt.comments.items():
            if comment_grave(*key) in buried:
                continue  # deleted since this pass fetched it
            old = known.get(key) or stored.get(key)
            if old is None:
                self._new_rows.append(new_comment_values(thread.id, comment))
                written += 1
                continue
            if _newer(old.updated_at, comment.get("updated_at")):
                continue  # edited since this pass read it (a webhook stored the edit)
            if stale and "updated_at" not in comment:
                # A review (no updated_at) of a thread a webhook stored later than this pass
                # read it: the stored review may be an edit made since; it is kept.
                continue
            same_time = "updated_at" not in comment or old.updated_at == parse_datetime(comment["updated_at"])
            hidden = old.minimized_reason != comment.get("minimized_reason")
            if (old.thread_id == thread.id and same_time and not hidden
                    and (old.body or "") == storable_text(comment["body"])
                    and old.path == comment.get("path")):
                continue  # unchanged: no write (a row stored before 0013 gets its path)
            # Hidden or shown again on GitHub changes what the analyzers are given, and
            # moves no time of the thread's: analysed again.
            rehide |= hidden
            was = old.body or ""  # (`old` may be the row upsert_comment writes)
            written_row = await upsert_comment(session, thread, comment)
            if "updated_at" not in comment and was != written_row.body:
                # A review's text replaced: this snapshot may be older than an edit stored
                # since it was read (an edit need not move the pull request's time). GitHub
                # is asked for the review's text at the end of the run.
                self._batch_reviews.append(written_row.id)
            self.stats.comments += 1
            written += 1
        if stale:
            return bool(written)
        gone = [] if pt.incomplete else [c.id for key, c in stored.items()
                                         if key not in pt.comments]
        if gone:
            # Deleted on GitHub while no webhook told us (or the app is not installed there).
            await session.execute(delete(Comment).where(Comment.id.in_(gone)))
        return existing is None or before != thread.updated_at or bool(gone) or rehide

    async def _store_cursor(self, session: Any, s: Stream) -> None:
        if s.closed:
            return
        while s.pages and not s.pages[0][1]:
            s.committed = s.pages.popleft()[0]
            s.cursor_dirty = True
        finished = s.done and not s.pages and not any(
            pt.stream is s for pt in self.pending.values())
        if not (s.cursor_dirty or finished):
            return
        cur = await session.scalar(
            select(SyncCursor).where(SyncCursor.repo == s.repo, SyncCursor.kind == s.kind))
        if cur is None:
            cur = SyncCursor(repo=s.repo, kind=s.kind)
            session.add(cur)
        if s.backfill:
            cur.cursor = s.committed
            cur.updated_since = s.mark
        if finished:
            s.closed = True
        if finished and not s.failed:
            cur.full_done = True if s.backfill else cur.full_done
            cur.cursor = None
            if s.backfill:
                cur.updated_since = s.mark
            elif s.mark is not None and (cur.updated_since is None or s.mark > cur.updated_since):
                cur.updated_since = s.mark
            cur.last_run_at = utcnow()
        s.cursor_dirty = False

    # ------------------------------------------------------------------ main loop
    async def run(self) -> SyncStats:
        if self.ctx.github is None:
            raise SyncError("no GitHub client (ctx.github is None)")
        await self._load_streams()
        self.progress.start(None)
        try:
            groups = list(dict.fromkeys(s.installation_id for s in self.streams))
            while groups:
                installation_id = groups.pop(0)
                try:
                    await self._run_group(installation_id)
                except _Refused as exc:
                    if installation_id is not None and self.ctx.settings.token:
                        # Uninstalled or suspended with no event handled yet (before the run
                        # or during it): its repositories are read with GITHUB_TOKEN, as those
                        # of an installation the store knows is gone; from where they were.
                        log.warning("sync: GitHub refused installation %s (%s); its "
                                    "repositories are read with GITHUB_TOKEN", installation_id, exc)
                        for stream in self.streams:
                            if stream.installation_id == installation_id:
                                stream.installation_id = None
                        if None not in groups:
                            groups.append(None)
                        continue
                    self._refused(installation_id, str(exc))
            await self._check_hidden()
        finally:
            self.progress.stop()
        return self.stats

    def _refused(self, installation_id: int | None, why: str) -> None:
        what = (f"installation {installation_id}" if installation_id is not None
                else "GITHUB_TOKEN" if self.ctx.settings.token else "no token (anonymous)")
        for stream in self.streams:
            if stream.installation_id == installation_id and not stream.done:
                stream.done = True
                stream.failed = f"refused: {why}"
                self.stats.failed_streams.append(f"{stream.repo}:{stream.kind}")
        self.continuations = deque(
            c for c in self.continuations
            if self.pending[c.thread_key].stream.installation_id != installation_id)
        log.warning("sync: GitHub refused %s (%s); its repositories are skipped%s", what, why,
                    "" if installation_id is not None or self.ctx.settings.token
                    else ": set GITHUB_TOKEN to read the repositories the app is not installed on")

    async def _run_group(self, installation_id: int | None) -> None:
        import gidgethub

        failures = 0
        while True:
            streams, slots, conts = self._plan(installation_id)
            if not slots and not conts:
                break
            query, variables = build_sync_query(slots, [c.slot for c in conts])
            try:
                data = await self._request(query, variables, installation_id)
            except _Refused:
                # nothing was taken: the continuations are asked again (with GITHUB_TOKEN)
                self.continuations.extendleft(reversed(conts))
                raise
            except gidgethub.BadRequest as exc:
                # A rate limit that outlasted RATE_LIMIT_WAITS, a 4xx for the token's group:
                # gidgethub's error left the sync as it was, not a SyncError, so `rltracker
                # sync` printed no counts and the nightly step recorded none (sync62).
                self.continuations.extendleft(reversed(conts))
                raise SyncFailed(f"GitHub answered {int(exc.status_code)}: {exc}"
                                 " (cursors are stored)") from exc
            except _Transient as exc:
                failures += 1
                self.continuations.extendleft(reversed(conts))  # nothing was taken
                if failures >= GRAPHQL_ATTEMPTS:
                    raise SyncFailed(f"GraphQL request failed {failures} times: {exc}") from exc
                # GitHub's errors without data are mostly timeouts of heavy queries: ask for
                # half as much until a request succeeds again.
                self.thread_budget = max(MIN_THREADS_PER_REQUEST, self.thread_budget // 2)
                self.continuation_budget = max(1, self.continuation_budget // 2)
                await self.sleep(min(60.0, 2.0 ** failures))
                continue
            failures = 0
            self.thread_budget = min(THREADS_PER_REQUEST, self.thread_budget * 2)
            self.continuation_budget = min(CONTINUATIONS_PER_REQUEST, self.continuation_budget * 2)
            taken = [self._saw_repository(stream, data.get(f"s{i}")) for i, stream in enumerate(streams)]
            for i, stream in enumerate(streams):
                repo_data = data.get(f"s{i}")
                if not taken[i] or await self._private(stream, repo_data):
                    continue
                field_name = {"issue": "issues", "pull_request": "pullRequests",
                              "discussion": "discussions"}[stream.kind]
                self._take_page(stream, repo_data.get(field_name) if repo_data else None,
                                (f"s{i}", field_name))
            again: list[Continuation] = []
            for j, cont in enumerate(conts):
                node = data.get(f"c{j}")
                failed = self._failed_slot(f"c{j}", node, cont.slot.field)
                if failed is None:
                    cont.failures = 0
                    self._take_continuation(cont, node)
                    if node is not None and self._errors_under(f"c{j}"):
                        self.pending[cont.thread_key].incomplete = True  # a part of it failed
                    continue
                # Null because that part of the query failed (a timeout), not because the
                # thread is gone: taken as gone, the thread was written with the comments of
                # its first pages and every stored one beyond them deleted.
                cont.failures += 1
                if cont.failures >= GRAPHQL_ATTEMPTS:
                    raise SyncError(f"a continuation of {cont.thread_key} failed "
                                    f"{cont.failures} times: {failed}")
                again.append(cont)
            if again:
                self.continuations.extendleft(reversed(again))
                self.continuation_budget = max(1, self.continuation_budget // 2)
            await self._flush()
            total = sum(s.total or 0 for s in self.streams if s.backfill) or None
            self.progress.update(self.stats.threads, total, self.stats)
            await self._pace(data.get("rateLimit"))
        await self._check_unlisted(installation_id)

    # ------------------------------------------------------------------ hidden comments
    async def _check_hidden(self) -> None:
        """Stored comments asked again whether GitHub hides them (`isMinimized`,
        `minimizedReason`), a hundred node ids a request (`nodes(ids:)`): hiding a comment
        moves no time of its thread's, so the refresh (which pages by `updatedAt`) never read
        a comment hidden as spam after its thread's last read, and no webhook tells of it; the
        analyzers and the quiet rules went on counting it as a reply until a `--full` sync.

        Which: the comments posted within the last HIDDEN_RECENT_DAYS (spam is hidden soon
        after it is posted; an issue whose failure-comment decision is still to come is
        younger still) of the threads this pass did not read (those were read with their
        comments' state), of the (repository, kind)s GitHub listed tonight; the newest first, at
        most HIDDEN_CHECK_REQUESTS requests a run (`hidden_left` counts the rest). A comment
        found hidden or shown again is stored so and its thread analysed again; one GitHub
        answers NOT_FOUND for is deleted, and noted, as its `deleted` webhook deletes it.
        Not asked: older comments (a "+1" hidden as off-topic months later is read at the
        thread's next change, or by `--full`). Asked first, of any age, read or not: the
        reviews whose stored text this pass replaced (`reviews_rewritten`), so that an edit
        stored meanwhile by its webhook, which the older snapshot overwrote, is read back.
        Asked too, of any age: the reviews of open pull requests active within the window
        (`_active_open_review`): a review edited there (the discussion going on) need not move
        the pull request's time, and its lost delivery waited for the rotation (left66)."""
        # Only the kinds GitHub listed tonight: it answers NOT_FOUND for a node the reader
        # may not see as for one deleted (discussions refused to an installation without
        # their permission), and a listing that ran says the reader sees that kind.
        groups: dict[str, int | None] = {}
        listed: set[tuple[str, str]] = set()
        for s in self.streams:
            if not s.failed and s.repo not in self.marked_private:
                groups.setdefault(s.repo.lower(), s.installation_id)
                listed.add((s.repo.lower(), s.kind))
        if not groups:
            return
        cutoff = utcnow() - timedelta(days=HIDDEN_RECENT_DAYS)
        rewritten = sorted(self.reviews_rewritten)
        async with self.ctx.sessionmaker() as session:
            rows = (await session.execute(
                select(*_CHECKED).join(Thread, Thread.id == Comment.thread_id)
                .where(func.lower(Thread.repo).in_(sorted(groups)),
                       (Comment.created_at >= cutoff) | Comment.id.in_(rewritten)
                       | _active_open_review(cutoff),
                       Comment.node_id.is_not(None)))).all()
        rows = [r for r in rows if (r[5] not in self.read_threads or r[0] in self.reviews_rewritten)
                and (r[6], r[7]) in listed]
        if rows:
            await self._check_recent(rows, groups)
        if self.recheck:
            await self._recheck_older(groups, listed, cutoff)

    async def _check_recent(self, rows: list[Any], groups: dict[str, int | None]) -> None:
        """The recent comments `rows` asked, newest first, within HIDDEN_CHECK_REQUESTS."""
        # the reviews this pass rewrote first, then the newest
        rows.sort(key=lambda r: (r[0] in self.reviews_rewritten, r[8], r[0]), reverse=True)
        room = HIDDEN_CHECK_REQUESTS * HIDDEN_IDS_PER_REQUEST
        self.stats.hidden_left += max(0, len(rows) - room)
        by_group: dict[int | None, list[Any]] = {}
        for r in rows[:room]:
            by_group.setdefault(groups[r[6]], []).append(r)
        for installation_id, todo in by_group.items():
            for i in range(0, len(todo), HIDDEN_IDS_PER_REQUEST):
                chunk = todo[i:i + HIDDEN_IDS_PER_REQUEST]
                if not await self._hidden_chunk(chunk, installation_id):
                    self.stats.hidden_left += len(todo) - i - len(chunk)
                    break

    async def _recheck_older(self, groups: dict[str, int | None], listed: set[tuple[str, str]],
                             cutoff: datetime) -> None:
        """The stored comments older than the recent ones (posted before `cutoff`, or undated)
        asked again as the recent ones are, in a rotation: per repository, RECHECK_PER_REPO
        of them a run, in id order from after the last one asked (its SyncCursor row, kind
        RECHECK_KIND, `cursor` = that comment's id), wrapping round to the first. A comment
        hidden as off-topic months after it was posted, or edited without its thread's time
        moving, was read only at the thread's next change or by `--full`; now within
        `recheck_runs` runs (the largest repository's ceil(older comments / RECHECK_PER_REPO)).
        Those of threads read in this run, or of a kind GitHub did not list tonight, are
        passed over (counted as asked: read tonight, or asked at the next round). A request
        that fails leaves the rotation where the last answered one ended."""
        names = {s.repo.lower(): s.repo for s in self.streams}
        older = (Comment.created_at < cutoff) | Comment.created_at.is_(None)
        for repo, installation_id in groups.items():
            where = (func.lower(Thread.repo) == repo, older, Comment.node_id.is_not(None))
            async with self.ctx.sessionmaker() as session:
                total = int(await session.scalar(
                    select(func.count()).select_from(Comment)
                    .join(Thread, Thread.id == Comment.thread_id).where(*where)) or 0)
                if not total:
                    continue
                name = names.get(repo, repo)
                cur = await session.scalar(select(SyncCursor).where(
                    SyncCursor.repo == name, SyncCursor.kind == RECHECK_KIND))
                after = int(cur.cursor) if cur is not None and (cur.cursor or "").isdigit() else 0
                ask = select(*_CHECKED).join(Thread, Thread.id == Comment.thread_id).where(*where)
                rows = list((await session.execute(
                    ask.where(Comment.id > after).order_by(Comment.id).limit(RECHECK_PER_REPO))).all())
                if len(rows) < RECHECK_PER_REPO:  # round the end: on from the first
                    rows += (await session.execute(
                        ask.where(Comment.id <= after).order_by(Comment.id)
                        .limit(RECHECK_PER_REPO - len(rows)))).all()
            self.stats.recheck_runs = max(self.stats.recheck_runs, -(-total // RECHECK_PER_REPO))
            last: int | None = None
            for i in range(0, len(rows), HIDDEN_IDS_PER_REQUEST):
                chunk = rows[i:i + HIDDEN_IDS_PER_REQUEST]
                todo = [r for r in chunk
                        if r[5] not in self.read_threads and (r[6], r[7]) in listed]
                if todo and not await self._hidden_chunk(todo, installation_id, counted=False):
                    break
                self.stats.recheck_checked += len(todo)
                last = int(chunk[-1][0])
            if last is None:
                continue
            async with self.ctx.sessionmaker() as session:
                cur = await session.scalar(select(SyncCursor).where(
                    SyncCursor.repo == name, SyncCursor.kind == RECHECK_KIND))
                if cur is None:
                    # full_done: not a listing a first backfill waits for (needs_first_backfill)
                    cur = SyncCursor(repo=name, kind=RECHECK_KIND, full_done=True)
                    session.add(cur)
                cur.cursor, cur.last_run_at = str(last), utcnow()
                try:
                    await session.commit()
                except SQLAlchemyError as exc:  # the next run asks the same slice again
                    log.error("sync: where the re-check of %s's comments stopped was not "
                              "stored (%s)", name, _first_line(exc))

    async def _hidden_chunk(self, chunk: list[Any], installation_id: int | None,
                            counted: bool = True) -> bool:
        """One request about the comments of `chunk`, and what it tells stored. False when
        the request failed for good (recorded): the group's other comments are not asked."""
        import gidgethub

        repos = sorted({r[6] for r in chunk})
        failures = 0
        while True:
            try:
                data = await self._request(HIDDEN_QUERY, {"ids": [r[1] for r in chunk]},
                                           installation_id)
                break
            except _Transient as exc:
                failures += 1
                if failures >= GRAPHQL_ATTEMPTS:
                    return self._hidden_failed(repos, len(chunk), str(exc))
                await self.sleep(min(60.0, 2.0 ** failures))
            except _Refused as exc:
                return self._hidden_failed(repos, len(chunk), f"refused: {exc}")
            except gidgethub.BadRequest as exc:
                return self._hidden_failed(repos, len(chunk), f"{int(exc.status_code)} {exc}")
        nodes = data.get("nodes")
        if not isinstance(nodes, list) or len(nodes) != len(chunk):
            return self._hidden_failed(repos, len(chunk),
                                       _messages({"errors": self.errors}) or "no nodes answered")
        if counted:
            self.stats.hidden_checked += len(chunk)
        shown: list[tuple[int, str | None]] = []
        gone: list[tuple[str, int]] = []
        threads: set[int] = set()
        # comments whose text may have changed: (id, body, updatedAt, thread id)
        maybe: list[tuple[int, str, str | None, int]] = []
        for k, (row, node) in enumerate(zip(chunk, nodes, strict=True)):
            if node is None:
                errors = [e for e in self.errors if isinstance(e.get("path"), list)
                          and e["path"][:2] == ["nodes", k]]
                if errors and all(e.get("type") == "NOT_FOUND" for e in errors):
                    gone.append((row[2], int(row[3])))  # deleted on GitHub
                    threads.add(row[5])
                continue  # anything else tells nothing: kept as stored
            if "isMinimized" in node:
                reason = minimized_reason(node)
                if reason != row[4]:
                    shown.append((row[0], reason))
                    threads.add(row[5])
            # An edit moves the comment's updatedAt, not always its thread's (the refresh
            # never read it). A review has no stored time (as the webhook path stores it):
            # its text is compared.
            fetched = parse_datetime(node.get("updatedAt"))
            if isinstance(node.get("body"), str) and (row[2] == "review" or (
                    fetched is not None and (row[9] is None or fetched > row[9]))):
                maybe.append((row[0], node["body"], node.get("updatedAt"), row[5]))
        if not (threads or maybe):
            await self._pace(data.get("rateLimit"))
            return True
        edited = 0
        try:
            async with self.ctx.sessionmaker() as session:
                private = await lock_repositories(session, repos)
                keep = {r[0] for r in chunk if r[6] not in private}
                kinds = {r[0]: (r[2], int(r[3])) for r in chunk}
                # The threads of the comments it may write, locked in id order first, as a
                # batch and an analysis lock theirs: written in the chunk's order (newest
                # first) without them, two comments a batch edits met it in the opposite
                # order (a deadlock on PostgreSQL; the rotation asks every older comment).
                await session.execute(
                    select(Thread.id).where(Thread.id.in_(sorted(
                        {r[5] for r in chunk if r[0] in keep} & (threads | {m[3] for m in maybe})
                    ))).order_by(Thread.id).with_for_update())
                for comment_id, reason in shown:
                    if comment_id in keep:
                        await session.execute(update(Comment).where(Comment.id == comment_id)
                                              .values(minimized_reason=reason))
                texts = dict((await session.execute(select(Comment.id, Comment.body).where(
                    Comment.id.in_([m[0] for m in maybe if m[0] in keep])))).all())
                for comment_id, body, updated, thread_id in maybe:
                    text = storable_text(body)
                    if comment_id not in texts or (texts[comment_id] or "") == text:
                        continue
                    values: dict[str, Any] = {"body": text}
                    if kinds[comment_id][0] != "review" and parse_datetime(updated) is not None:
                        values["updated_at"] = parse_datetime(updated)
                    await session.execute(update(Comment).where(Comment.id == comment_id)
                                          .values(**values))
                    edited += 1
                    threads.add(thread_id)
                deleted = 0
                for row in chunk:
                    if row[0] in keep and kinds[row[0]] in gone:
                        deleted += await delete_comment(session, *kinds[row[0]])
                        await bury(session, comment_grave(*kinds[row[0]]))
                changed = [(repo, number) for repo, number in (await session.execute(
                    select(Thread.repo, Thread.number).where(
                        Thread.id.in_(sorted(threads)),
                        func.lower(Thread.repo).not_in(sorted(private) or [""])))).all()]
                await session.commit()
        except SQLAlchemyError as exc:
            return self._hidden_failed(repos, len(chunk), f"{type(exc).__name__}: {_first_line(exc)}")
        self.stats.hidden_changed += sum(1 for c, _ in shown if c in keep)
        self.stats.hidden_deleted += deleted
        self.stats.hidden_edited += edited
        self.stats.changed += len(changed)
        for repo, number in changed:
            log.info("sync: comments of %s#%s were hidden, shown again or deleted on GitHub",
                     repo, number)
            if self.on_changed is not None:
                await self._act_on(repo, number)
        await self._pace(data.get("rateLimit"))
        return True

    def _hidden_failed(self, repos: list[str], count: int, message: str) -> bool:
        what = f"{', '.join(repos)} ({count} comments asked whether GitHub hides them)"
        self.stats.failed_threads.append({"thread": what, "error": message[:500]})
        log.error("sync: %s were not checked (%s); they are kept as stored", what, message[:500])
        return False

    # ------------------------------------------------------------------ gone threads
    async def _check_unlisted(self, installation_id: int | None) -> None:
        """Stored threads the listing did not return, asked about one by one (by number, a
        hundred a request): GitHub answering NOT_FOUND deletes one (delete_thread, as an
        `issues.deleted` delivery does), answering from another repository moves it there
        (move_thread, as `issues.transferred` does; to a private one, it leaves as deleted).

        Absence alone deletes nothing: only a stream whose listing ran to its end without a
        failure is checked, and a thread GitHub answers anything else for (FORBIDDEN, a
        timeout, null without an error) is kept and listed in `failed_threads`. Which streams:
        a backfill that listed from the newest thread in this pass (`--full`, a first run):
        every stored thread it did not return (one updated while it paged moved ahead of its
        cursor: GitHub still has it, it stays); a refresh (or a backfill resumed from a
        cursor), which lists only what changed: when GitHub counts fewer threads of the kind
        than are stored, with those it read and the database refused (`totalCount`), the
        stored ones it did not return."""
        for s in self.streams:
            if (s.installation_id != installation_id or s.checked or not s.done or s.failed
                    or not s.requests or any(pt.stream is s for pt in self.pending.values())):
                continue
            async with self.ctx.sessionmaker() as session:
                stored = set(await session.scalars(select(Thread.number).where(
                    func.lower(Thread.repo) == s.repo.lower(), Thread.kind == s.kind)))
            # GitHub's threads this pass read and the database refused are not stored: beside
            # the stored ones, they are counted (a deletion on the night a new thread was
            # refused left the counts equal, and waited for `--full`); so are those its pages
            # answered null, their numbers unknown (a new one hid a deletion the same way; a
            # stored one counted twice costs a check that finds nothing gone; sync62)
            if not (s.backfill and s.fresh) and (
                    s.total is None or len(stored | s.refused) + s.nulls <= s.total):
                s.checked = True
                continue
            todo = sorted(stored - s.seen)
            try:
                for i in range(0, len(todo), CHECKS_PER_REQUEST):
                    if not await self._check(s, todo[i:i + CHECKS_PER_REQUEST], installation_id):
                        break
            except _Refused:
                raise  # asked again with GITHUB_TOKEN (run), the stream not marked checked
            s.checked = True

    async def _check(self, s: Stream, numbers: list[int], installation_id: int | None) -> bool:
        """One request about `numbers` of stream `s`, and what it tells applied. False when
        the request failed for good (recorded): the stream's other threads are not asked."""
        import gidgethub

        owner, name = s.owner_name
        query, variables = build_check_query(owner, name, [CheckSlot(s.kind, n) for n in numbers])
        failures = 0
        while True:
            try:
                data = await self._request(query, variables, installation_id)
                break
            except _Transient as exc:
                failures += 1
                if failures >= GRAPHQL_ATTEMPTS:
                    return self._check_failed(s, str(exc))
                await self.sleep(min(60.0, 2.0 ** failures))
            except gidgethub.BadRequest as exc:
                return self._check_failed(s, f"{int(exc.status_code)} {exc}")
        self.stats.checked += len(numbers)
        repo_data = data.get("r")
        if not repo_data:
            return self._check_failed(s, _messages({"errors": self.errors}) or "repository not found")
        feature = {"issue": "hasIssuesEnabled", "discussion": "hasDiscussionsEnabled"}.get(s.kind)
        if feature is not None and repo_data.get(feature) is False:
            # GitHub hides them all (NOT_FOUND by number) until the feature is on again:
            # deleted, and noted as deleted, they were never stored again
            return self._check_failed(s, f"{s.kind.replace('_', ' ')}s are turned off in the "
                                         "repository on GitHub: nothing is deleted")
        here = {s.repo.lower(), str(repo_data.get("nameWithOwner") or s.repo).lower()}
        gone: list[int] = []
        moved: list[tuple[int, dict[str, Any]]] = []
        for k, number in enumerate(numbers):
            node = repo_data.get(f"t{k}")
            errors = [e for e in self.errors if isinstance(e.get("path"), list)
                      and e["path"][:2] == ["r", f"t{k}"]]
            if node is None:
                if errors and all(e.get("type") == "NOT_FOUND" for e in errors):
                    gone.append(number)  # deleted on GitHub
                    continue
                message = "; ".join(dict.fromkeys(
                    (str(e.get("type") or "") + ": " + str(e.get("message") or "GraphQL error"))
                    .removeprefix(": ") for e in errors)) or "GitHub answered null"
                self._kept(s, number, message)
                continue
            where = (node.get("repository") or {})
            if not where.get("nameWithOwner") or str(where["nameWithOwner"]).lower() in here:
                continue  # still there (updated while the listing paged, or stored meanwhile)
            if where.get("isPrivate"):
                gone.append(number)  # transferred to a private repository: it leaves as deleted
            else:
                moved.append((number, node))
        if not (gone or moved):
            await self._pace(data.get("rateLimit"))
            return True
        changed: list[tuple[str, int]] = []
        try:
            async with self.ctx.sessionmaker() as session:
                deleted = 0
                for number in gone:
                    deleted += await delete_thread(session, s.repo, number, s.kind)
                for number, node in moved:
                    repo = canonical_repo(str(node["repository"]["nameWithOwner"]))
                    new = {"id": f"{repo}#{int(node['number'])}", "repo": repo,
                           "number": int(node["number"]), "kind": s.kind}
                    if node.get("url"):
                        new["url"] = node["url"]
                    thread = await move_thread(session, s.repo, number, new, {"kind": s.kind})
                    changed.append((thread.repo, thread.number))
                await session.commit()
        except SQLAlchemyError as exc:
            for number in gone + [n for n, _ in moved]:
                self._kept(s, number, f"{type(exc).__name__}: {_first_line(exc)}")
            return True
        self.stats.deleted += deleted
        self.stats.moved += len(moved)
        for number in gone:
            log.info("sync: %s#%s is gone on GitHub: deleted", s.repo, number)
        for (number, _), (repo, new_number) in zip(moved, changed, strict=True):
            log.info("sync: %s#%s is %s#%s now on GitHub: moved", s.repo, number, repo, new_number)
        if self.on_changed is not None:
            for repo, number in changed:
                await self._act_on(repo, number)
        await self._pace(data.get("rateLimit"))
        return True

    def _kept(self, s: Stream, number: int, message: str) -> None:
        """A stored thread the listing did not return and GitHub did not answer for: kept."""
        self.stats.failed_threads.append({"thread": f"{s.repo}#{number}", "error": message[:500]})
        log.error("sync: %s#%s was not listed and GitHub did not say whether it is gone (%s); "
                  "it is kept", s.repo, number, message[:500])

    def _check_failed(self, s: Stream, message: str) -> bool:
        what = f"{s.repo} {s.kind} (stored threads the listing did not return)"
        self.stats.failed_threads.append({"thread": what, "error": message[:500]})
        log.error("sync: %s were not checked (%s); nothing of them is deleted", what, message[:500])
        return False

    async def _private(self, stream: Stream, repo_data: dict[str, Any] | None) -> bool:
        """A repository GitHub calls private (`isPrivate`): none of its pages is taken, its
        streams end without a cursor, and what was stored of it is forgotten (it was public
        then, or stored before the check). One whose stored row is marked private and GitHub
        calls public again loses the mark (its cursors were forgotten: it is backfilled)."""
        if not repo_data or "isPrivate" not in repo_data:
            return False
        from bot.store.privacy import forget_repository, publicize_repository

        repo = stream.repo
        if not repo_data["isPrivate"]:
            if repo in self.marked_private:
                self.marked_private.discard(repo)
                async with self.ctx.sessionmaker() as session:
                    await publicize_repository(session, repo)
                    await session.commit()
            return False
        for s in self.streams:
            if s.repo == repo:
                s.done = s.closed = True
                s.pages.clear()
        keys = {k for k, pt in self.pending.items() if pt.stream.repo == repo}
        self.continuations = deque(c for c in self.continuations if c.thread_key not in keys)
        for k in keys:
            del self.pending[k]
        async with self.ctx.sessionmaker() as session:
            await forget_repository(session, repo)
            await session.commit()
        if repo not in self.marked_private:
            log.warning("sync: %s is private on GitHub: nothing of it is stored", repo)
            self.marked_private.add(repo)
        return True


# The columns of a stored comment the hidden checks read (Syncer._check_hidden, _hidden_chunk):
# 0 id, 1 node id, 2 kind, 3 GitHub id, 4 hidden reason, 5 thread id, 6 repository (lower
# case), 7 thread kind, 8 created, 9 updated
def _active_open_review(cutoff: datetime) -> Any:
    """A review of an open pull request whose time moved since `cutoff`: asked by the check
    of recent comments whatever its own age (one node id each, in the same requests)."""
    return ((Comment.kind == "review") & (Thread.kind == "pull_request")
            & (Thread.state == "open") & (Thread.updated_at >= cutoff))


_CHECKED = (Comment.id, Comment.node_id, Comment.kind, Comment.github_id, Comment.minimized_reason,
            Thread.id, func.lower(Thread.repo), Thread.kind, Comment.created_at, Comment.updated_at)


def _first_line(exc: BaseException) -> str:
    """The first line of an error's text, at most 300 characters. A database error's text
    starts with the driver's message (SQLAlchemy appends the statement on later lines)."""
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        exc = exc.orig
    lines = str(exc).strip().splitlines()
    return lines[0][:300] if lines else ""


def _messages(response: dict[str, Any]) -> str:
    return "; ".join(str(e.get("message")) for e in (response.get("errors") or [])[:3])


async def sync(ctx: Any, repos: Iterable[str] | None = None, *, full: bool = False,
               sleep: SleepFn = asyncio.sleep, progress: Progress | None = None,
               on_changed: ChangedFn | None = None, max_requests: int | None = None,
               recheck: bool = False) -> SyncStats:
    """Backfill (first run, or --full) or refresh (afterwards) the given or default repos;
    `on_changed(repo, number)` is awaited for every thread that changed (the pipeline, when
    the caller wants analyses: this layer does not import it)."""
    syncer = Syncer(ctx, repos, full=full, sleep=sleep, progress=progress, on_changed=on_changed,
                    max_requests=max_requests, recheck=recheck)
    return await syncer.run()
