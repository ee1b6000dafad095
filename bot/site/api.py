"""Operational and JSON routes: /healthz, /metrics, /api/threads, /api/actions, /api/stats;
`json_errors`, the middleware that gives every /api/ error the API's JSON shape; and
`api_paging`, how every /api/ list reads its `limit` and `offset` (and `api_cursor`, the
`after` cursor of the lists that page by their order's keys)."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web
from sqlalchemy import func, select, text
from yarl import URL

from analyzers.catalog import load_catalog
from bot.context import CTX, INBOX, METRICS, WORKER, WORKER_PROCESS_COUNTS
from bot.store import db as store_db
from bot.store.types import MAX_THREAD_NUMBER, Position, beyond, parse_count, parse_thread_number

log = logging.getLogger(__name__)

HEALTH_TIMEOUT = 5.0
REPO_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}")
API_PREFIX = "/api/"
# /api/threads' `review_history`: the latest 100 transitions by default, at most 2,000 a page
HISTORY_LIMIT, HISTORY_MAX = 100, 2000
# and its thread's comments, in time order: the first 500 by default, at most 2,000 a page
# (`comments_limit`, `comments_offset`; a thread with thousands gave them all: bounds79)
COMMENTS_LIMIT, COMMENTS_MAX = 500, 2000
PAST_EVERY_ROW = 10 ** 9  # an offset read as past every row (parse_count reads nine digits)


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _route_exists(request: web.Request, path: str) -> bool:
    """A GET of `path` reaches a route: a fixed one (/api/repos) or one with parameters
    (/api/frameworks/verl), as the pages' trailing-slash redirect resolves its target."""
    match = await request.app.router.resolve(request.clone(method="GET", rel_url=URL.build(path=path)))
    return match.http_exception is None


async def _api_error_message(request: web.Request, error: web.HTTPException) -> str:
    path = request.path[:200]
    if error.status == 404:
        listing = path.rstrip("/")
        if listing != path and await _route_exists(request, listing):
            return f"no such API route: {path}; did you mean {listing}?"
        return f"no such API route: {path}"
    if error.status == 405:
        return f"{request.method} is not allowed on {path}; use GET"
    return error.reason


@web.middleware
async def json_errors(request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                      ) -> web.StreamResponse:
    """Errors of /api/ routes in the API's shape, `{"error": message}`: aiohttp's own answers
    (no such route, a method not allowed) were plain text, and a handler's crash an HTML-less
    text 500 that a script reading JSON could not parse. Other paths are left alone."""
    if not request.path.startswith(API_PREFIX):
        return await handler(request)
    try:
        return await handler(request)
    except web.HTTPException as error:
        if error.status < 400:
            raise
        response = _json_error(error.status, await _api_error_message(request, error))
        if "Allow" in error.headers:
            response.headers["Allow"] = error.headers["Allow"]
        return response
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if not store_db.database_unreachable(exc):
            log.exception("%s %s failed", request.method, request.path[:200])
            return _json_error(500, "internal error: the request could not be answered "
                                    "(logged on the server)")
        log.warning("%s %s: the database did not answer (%s)", request.method,
                    request.path[:200], type(exc).__name__)
        return _json_error(503, "the database did not answer; try again later")


# A write that changes nothing, in a transaction rolled back: refused by a read-only database
# (a SQLite file opened read-only, a PostgreSQL standby or default_transaction_read_only) while
# every read still works. On SQLite it needs the write lock: taken for microseconds, and a lock
# another connection holds means the file takes writes (busy, not refused).
_WRITE_PROBE = text("UPDATE deliveries SET attempts = attempts WHERE 1 = 0")


# How long /healthz's writes wait for a table lock on PostgreSQL before it says "busy": any
# wait at all means another session holds a lock no ordinary statement of the app takes on
# the inbox (a migration's ALTER TABLE, a LOCK TABLE, a CREATE INDEX without CONCURRENTLY).
HEALTH_LOCK_WAIT_MS = 1000


async def _bound_lock_wait(conn: Any) -> None:
    if conn.dialect.name == "postgresql":
        await conn.exec_driver_sql(f"SET LOCAL lock_timeout = {HEALTH_LOCK_WAIT_MS}")


async def _database_state(ctx: Any) -> str:
    """"ok", "unreachable" (no answer within HEALTH_TIMEOUT), "read-only" (reads work, the
    write probe or the inbox writer's last write was refused), or "busy" (PostgreSQL: it
    answers, but a write waits for a lock another session holds, e.g. a migration's)."""
    async def ping() -> str:
        async with ctx.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            sqlite = conn.dialect.name == "sqlite"
            try:
                if sqlite:
                    await conn.exec_driver_sql("PRAGMA busy_timeout=0")
                await _bound_lock_wait(conn)
                await conn.execute(_WRITE_PROBE)  # in the transaction SELECT 1 began
            except Exception as exc:  # noqa: BLE001 - classified below
                if store_db.refuses_writes(exc):
                    return "read-only"
                if store_db.is_lock_not_granted(exc):
                    return "busy"
                if not (sqlite and store_db.is_sqlite_locked(exc)):
                    raise
            finally:
                await conn.rollback()
                if sqlite:
                    await conn.exec_driver_sql("PRAGMA busy_timeout=30000")
                    await conn.rollback()
        return "ok"

    try:
        state = await asyncio.wait_for(ping(), timeout=HEALTH_TIMEOUT)
    except Exception:  # noqa: BLE001 - any other failure means "not reachable"
        return "unreachable"
    inbox = ctx.extras.get("inbox")
    if state == "ok" and inbox is not None and inbox.write_failure is not None:
        # The inbox's last batch was refused as a whole (e.g. a full disk, which a rolled-back
        # probe does not reach). Asked again with a write that is committed (one inbox row
        # written unchanged; only while that refusal stands): it succeeds once the database
        # takes writes again, and /healthz says so without waiting for a delivery.
        try:
            await asyncio.wait_for(_committed_write(ctx), timeout=HEALTH_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - still refused (or no answer): as the inbox saw
            return "busy" if store_db.is_lock_not_granted(exc) else "read-only"
        inbox.write_failure = None
    return state


_COMMITTED_PROBE = text(  # the newest row, by the primary key (no scan)
    "UPDATE deliveries SET attempts = attempts WHERE id = (SELECT max(id) FROM deliveries)")


async def _committed_write(ctx: Any) -> None:
    async with ctx.engine.begin() as conn:
        await _bound_lock_wait(conn)
        await conn.execute(_COMMITTED_PROBE)


async def _failed_deliveries(ctx: Any) -> int | None:
    """Deliveries whose processing failed for good (re-queued by `rltracker deliveries retry`)."""
    from bot.store.models import Delivery

    try:
        async with ctx.engine.connect() as conn:
            return int(await asyncio.wait_for(conn.scalar(
                select(func.count()).select_from(Delivery).where(Delivery.status == "failed")),
                timeout=HEALTH_TIMEOUT) or 0)
    except Exception:  # noqa: BLE001 - the count is extra; reachability is decided above
        return None


_SCHEMA_HEAD = "schema_head"  # ctx.extras: this code's latest migration, read once
_SCHEMA_SAID = "schema_said"  # ctx.extras: the mismatch last logged (said once)


async def _schema_mismatch(ctx: Any) -> str | None:
    """The database's revision against this code's (ops64): serve checks it when it starts,
    but another version's `migrate` can run under a running app (a newer replica's during a
    rolling deploy, a downgrade). Its line (bot.store.migrate's, as every command says it)
    when they differ, logged once as a warning; None at head or when it cannot be read."""
    from bot.store.migrate import current_revision, head_revision, revision_mismatch

    try:
        current = await asyncio.wait_for(current_revision(ctx.engine), timeout=HEALTH_TIMEOUT)
    except Exception:  # noqa: BLE001 - reachability is /healthz's own check
        return None
    head = ctx.extras.get(_SCHEMA_HEAD)
    if head is None:
        head = ctx.extras[_SCHEMA_HEAD] = head_revision()
    problem = None if current == head else revision_mismatch(current)
    message = problem.message if problem is not None else None
    if message != ctx.extras.get(_SCHEMA_SAID):
        ctx.extras[_SCHEMA_SAID] = message
        if message is not None:
            log.warning("the database's schema is not this code's: %s; this app's queries may "
                        "fail until it runs the version that matches the database", message)
        else:
            log.info("the database's schema is this code's again (migration %s)", head)
    return message


async def healthz(request: web.Request) -> web.Response:
    ctx = request.app[CTX]
    state = await _database_state(ctx)
    if state == "ok":
        body: dict[str, Any] = {"status": "ok", "database": "ok"}
        schema = await _schema_mismatch(ctx)
        if schema is not None:
            # 200, not 503: the replica may still work (an additive migration), and a
            # restart cannot help (the same code refuses to start on this database)
            body["status"] = "degraded"
            body["schema"] = schema
        failed = await _failed_deliveries(ctx)
        if failed is not None:
            body["deliveries_failed"] = failed
        return web.json_response(body)
    if state == "busy":
        # The database answers; writes wait for another session's lock (a migration): no
        # replica would do better, so neither a load balancer nor a restart should act on it.
        # (The failed count is not read: it would wait for the same lock.)
        return web.json_response({
            "status": "degraded", "database": "busy",
            "detail": "writes wait for a lock another session holds on the inbox table "
                      "(a migration?); deliveries wait for it too"})
    body = {"status": "error", "database": state}
    if state == "read-only":
        body["error"] = "the database refuses writes: deliveries cannot be stored"
    return web.json_response(body, status=503)


def _worker_outcomes(app: web.Application) -> dict[str, int] | None:
    """What this service's inbox workers handled, by outcome: the one in this process and
    those of `--workers N` (their counts are in memory shared with this process). None
    when this service runs no worker (`--no-worker`: the figures are another service's)."""
    from bot.metrics import WORKER_OUTCOMES, SharedCounts

    worker = app.get(WORKER)
    shared = app[CTX].extras.get(WORKER_PROCESS_COUNTS) or []
    if worker is None and not shared:
        return None
    totals = dict.fromkeys(WORKER_OUTCOMES, 0)
    for counts in ([worker.counts] if worker is not None else []) + [SharedCounts(a) for a in shared]:
        for outcome, n in counts.items():
            totals[outcome] = totals.get(outcome, 0) + int(n)
    return totals


async def _scrape_reads(ctx: Any) -> tuple[dict[str, int], dict[tuple[str, str], int],
                                           dict[str, Any]]:
    """The counts /metrics reads from the database (the same whichever process handled or
    posted what), in one transaction whose lock waits are bounded as /healthz's writes are
    (PostgreSQL): a lock another session holds on a table read (a migration's ALTER TABLE)
    raises lock_timeout after HEALTH_LOCK_WAIT_MS, not a wait to HEALTH_TIMEOUT."""
    from bot.site.stats import action_counts, delivery_counts
    from bot.store.jobs import last_runs

    async with ctx.engine.connect() as conn:
        try:
            await _bound_lock_wait(conn)
            deliveries = await delivery_counts(conn)
            actions = await action_counts(conn)
            async with ctx.sessionmaker(bind=conn) as session:
                jobs = await last_runs(session)
        finally:
            await conn.rollback()
    return deliveries, actions, jobs


async def metrics_view(request: web.Request) -> web.Response:
    app = request.app
    ctx = app[CTX]
    deliveries: dict[str, int] | None
    actions: dict[tuple[str, str], int] | None
    jobs: dict[str, Any] | None
    database_up, database_busy = True, False
    try:
        deliveries, actions, jobs = await asyncio.wait_for(_scrape_reads(ctx),
                                                           timeout=HEALTH_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - the scrape still answers, with database_up 0
        deliveries, actions, jobs = None, None, None
        # A lock another session holds (a migration): the database answers, as /healthz's
        # "busy" says; an alert on database_up must not fire for it. The counts are left out.
        if store_db.is_lock_not_granted(exc):
            database_busy = True
        else:
            database_up = False
    inbox = app[INBOX]
    body = app[METRICS].render(
        deliveries=deliveries,
        worker=_worker_outcomes(app),
        actions=actions,
        jobs=jobs,
        inbox={
            "commits_total": inbox.commits,
            "rows_total": inbox.rows_committed,
            "errors_total": inbox.errors,
            "queued": inbox.queued,
        },
        database_up=database_up,
        database_busy=database_busy,
        schema_current=(None if not database_up or database_busy
                        else await _schema_mismatch(ctx) is None),
    )
    return web.Response(text=body, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


def api_paging(query: Mapping[str, str], *, default_limit: int, max_limit: int,
               prefix: str = "") -> tuple[int, int] | str:
    """(limit, offset) of an /api/ list's query string, or the message of its 400. Every /api/
    list pages alike: `offset` is a whole number from 0 (0 when absent), `limit` a whole
    number from 1 (`default_limit` when absent); a limit above `max_limit` gets `max_limit`
    rows (the list's X-Total-Count header says how many there are in all), an offset of ten
    digits or more an empty page, as any offset past the last row. `prefix` names the
    parameters of a second list in one answer (`comments_limit`, `comments_offset`)."""
    typed = (query.get(f"{prefix}limit") or "").strip()
    limit = parse_count(typed, default_limit)
    if limit is None and typed.isascii() and typed.isdigit() and typed.strip("0"):
        # ten digits or more: above the cap as well (was a 400); 0000000005 is 5
        digits = typed.lstrip("0")
        limit = int(digits) if len(digits) < 10 else max_limit
    typed_offset = (query.get(f"{prefix}offset") or "").strip()
    offset = parse_count(typed_offset, 0)
    if offset is None and typed_offset.isascii() and typed_offset.isdigit():
        offset = PAST_EVERY_ROW  # ten digits or more: past every row, an empty page
    if not limit or offset is None:
        return (f"{prefix}limit must be a whole number from 1 (at most {max_limit:,} rows are "
                f"returned), {prefix}offset one from 0")
    return min(limit, max_limit), offset


CURSOR_CHARS = 200  # a cursor this API writes is under 60 characters
CURSOR_ERROR = ("after must be a cursor this list gave (the rel=\"next\" link of its Link "
                "header), not combined with offset")


def encode_cursor(kind: str, position: Position) -> str:
    """`position` in list `kind`'s order as an opaque token (URL-safe base64 of a small JSON
    list): what comes after it is read by the order's index (keyset, or seek, paging), not by
    counting the rows before it as an offset does."""
    created, row_id = position
    raw = json.dumps([kind, created.astimezone(UTC).isoformat() if created else None, row_id],
                     separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def read_cursor(typed: str, kind: str) -> Position | None:
    """The position a cursor of list `kind` holds (`encode_cursor`), or None when it is not
    one that list wrote (typed, cut, another list's, altered)."""
    if len(typed) > CURSOR_CHARS:
        return None
    try:
        read = json.loads(base64.urlsafe_b64decode(typed + "=" * (-len(typed) % 4)))
        tag, created, row_id = read
        if tag != kind or type(row_id) is not int or not 0 < row_id < 2 ** 63:
            return None
        at = None if created is None else datetime.fromisoformat(created)
    except (binascii.Error, ValueError, TypeError):  # (json's errors are ValueErrors)
        return None
    if at is not None and at.utcoffset() != timedelta(0):  # written in UTC: else not ours
        return None
    return at, row_id


def api_cursor(query: Mapping[str, str], kind: str) -> Position | None | str:
    """The `after` cursor of list `kind`'s query string: None when absent, the position it
    holds, or the message of its 400 (not one this list wrote, or sent with an offset)."""
    typed = (query.get("after") or "").strip()
    if not typed:
        return None
    position = None if "offset" in query else read_cursor(typed, kind)
    return CURSOR_ERROR if position is None else position


def next_link(request: web.Request, kind: str, position: Position | None) -> dict[str, str]:
    """The Link header of a list's page: the next page, after its last row (`api_cursor`),
    with the same filters and limit; none on the last page."""
    if position is None:
        return {}
    query: dict[str, str] = {}
    for name, value in request.query.items():
        if name not in ("offset", "after"):
            query.setdefault(name, value)  # a repeated name: the first, as the handlers read it
    query["after"] = encode_cursor(kind, position)
    return {"Link": f'<{request.rel_url.with_query(query)}>; rel="next"'}


async def _thread_not_found(session: Any, repo: str, number: int) -> web.Response:
    """The 404 of a thread not stored; one that left GitHub (the page's 410) says so, with its
    address on GitHub and when the tracker noticed: the contract's status, the page's news."""
    from bot.site.data import gone_from_github

    gone = await gone_from_github(session, repo, number)
    if gone is None:
        return _json_error(404, "no such thread")
    return web.json_response({
        "error": f"no such thread: {gone['repo']}#{number} left GitHub (deleted, or transferred "
                 "to another repository, where its address on GitHub leads)",
        "gone": {"url": gone["url"], "noticed_at": gone["noticed_at"]}}, status=404)


async def api_thread(request: web.Request) -> web.Response:
    from bot.site.data import find_thread
    from bot.store.history import thread_history
    from bot.store.models import Analysis
    from bot.store.threads import count_comments, load_comments, thread_record
    from bot.store.verdicts import shown_failure, thread_verdict, verdict_dict

    ctx = request.app[CTX]
    owner, name = request.match_info["owner"], request.match_info["repo"]
    number = parse_thread_number(request.match_info["number"])
    if number is None:
        return _json_error(404, "no such thread")
    # `review_history` is the one list a thread's answer grows without end (a proposal
    # reopened and closed again and again): its latest `limit`, `offset` skipping the newest.
    paging = api_paging(request.query, default_limit=HISTORY_LIMIT, max_limit=HISTORY_MAX)
    if isinstance(paging, str):
        return _json_error(400, paging)
    limit, offset = paging
    comments_paging = api_paging(request.query, default_limit=COMMENTS_LIMIT,
                                 max_limit=COMMENTS_MAX, prefix="comments_")
    if isinstance(comments_paging, str):
        return _json_error(400, comments_paging)
    comments_limit, comments_offset = comments_paging
    async with ctx.sessionmaker() as session:
        thread = await find_thread(session, f"{owner}/{name}", number)
        if thread is None:
            return await _thread_not_found(session, f"{owner}/{name}", number)
        comments = await load_comments(session, thread, limit=comments_limit,
                                       offset=comments_offset)
        comments_total = await count_comments(session, thread)
        record = thread_record(thread, comments)
        if len(comments) < comments_total:
            record["complete"] = False  # the contract's "only part of the thread is known"
        row = await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id))
        verdict = await thread_verdict(session, thread.id)
        history, history_total = await thread_history(session, thread.id, limit=limit,
                                                      offset=offset)
    # `analysis` is the analyzer's own finding; `failure` the one the tracker shows (a
    # person's verdict where there is one: bot.store.verdicts.shown_failure), `verdict` theirs.
    shown = shown_failure(row.is_failure_report if row else None,
                          row.failure_category if row else None, verdict)
    return web.json_response({
        "thread": record, "analysis": row.result if row is not None else None,
        "failure": shown, "verdict": verdict_dict(verdict) if verdict is not None else None,
        "review_history": history, "review_history_total": history_total,
        "comments_total": comments_total})


def listed_action() -> Any:
    """The condition of an action /api/actions lists (and the thread page counts among its
    earlier actions, left80): not `pending`, a claim being posted (or one a crash left for
    its lease), not yet something the app did, and not a status the contract lists."""
    from bot.store.models import Action

    return Action.status != "pending"


def actions_of_repo(repo: str) -> Any:
    """The condition of an action stored under `repo` or under any other name of its
    framework's repository (a renamed one), as the thread routes find a thread: what
    /api/actions?repo= lists and the thread page shows and counts (left81)."""
    from bot.store.models import Action

    return func.lower(Action.repo).in_({n.lower() for n in load_catalog().names_of(repo)})


async def api_actions(request: web.Request) -> web.Response:
    """What the app posted or would have posted, and why it stayed quiet: oldest first,
    `limit` (1,000 by default, at most 5,000) after `offset` or after the `after` cursor of
    the Link header's next page; X-Total-Count counts them all."""
    from bot.store.models import Action
    from bot.store.types import format_datetime

    ctx = request.app[CTX]
    conditions = [listed_action()]
    repo = (request.query.get("repo") or "").strip()
    if repo and not REPO_NAME.fullmatch(repo):
        return _json_error(400, "repo must be OWNER/NAME, as on GitHub (huggingface/trl)")
    if repo:
        conditions.append(actions_of_repo(repo))
    number = request.query.get("number")
    if number:
        if parse_thread_number(number) is None:
            return _json_error(400, f"number must be a whole number from 1 to {MAX_THREAD_NUMBER}")
        conditions.append(Action.number == int(number))
    paging = api_paging(request.query, default_limit=1000, max_limit=5000)
    if isinstance(paging, str):
        return _json_error(400, paging)
    limit, offset = paging
    after = api_cursor(request.query, "actions")
    if isinstance(after, str) or (after is not None and after[0] is None):  # all dated
        return _json_error(400, after if isinstance(after, str) else CURSOR_ERROR)
    page = select(Action).where(*conditions)
    if after is not None:
        # read from the cursor by the (created_at, id) index (migration 0021), not by
        # skipping `offset` rows
        page = page.where(beyond(Action.created_at, Action.id, after, descending=False))
    async with ctx.sessionmaker() as session:
        total = await session.scalar(select(func.count()).select_from(Action).where(*conditions))
        rows = list(await session.scalars(
            page.order_by(Action.created_at, Action.id).offset(offset).limit(limit + 1)))
    last = (rows[limit - 1].created_at, rows[limit - 1].id) if len(rows) > limit else None
    rows = rows[:limit]
    return web.json_response(
        [
            {
                "repo": a.repo,
                "number": a.number,
                "kind": a.kind,
                "status": a.status,
                "body": a.body,
                "created_at": format_datetime(a.created_at),
                "reason": a.reason,
            }
            for a in rows
        ],
        headers={"X-Total-Count": str(total or 0), **next_link(request, "actions", last)},
    )


async def api_stats(request: web.Request) -> web.Response:
    from bot.site.stats import collect_stats

    return web.json_response(await collect_stats(request.app[CTX].engine))


def setup(app: web.Application) -> None:
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)
    app.router.add_get("/api/threads/{owner}/{repo}/{number}", api_thread)
    app.router.add_get("/api/actions", api_actions)
    app.router.add_get("/api/stats", api_stats)
