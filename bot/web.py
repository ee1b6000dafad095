"""The aiohttp application: POST /webhook, health, metrics, JSON API, and the tracker pages.

The webhook handler does only what must happen before GitHub's 10-second timeout: size
limit, signature, decoding, and storing the delivery in the inbox (group commit, bot/inbox.py).
No GitHub call and no analysis happens inside a request; the worker does those later.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import urllib.parse
from typing import Any

from aiohttp import web
from gidgethub import ValidationFailure, sansio
from sqlalchemy import func, select, text

from bot.config import WEBHOOK_BODY_LIMIT
from bot.inbox import DUPLICATE, Inbox, InboxRow
from bot.logs import log_delivery
from bot.metrics import Metrics

log = logging.getLogger(__name__)

CTX = web.AppKey("ctx", Any)
INBOX = web.AppKey("inbox", Inbox)
WORKER = web.AppKey("worker", Any)
METRICS = web.AppKey("metrics", Metrics)

HEALTH_TIMEOUT = 5.0


def _json_error(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


def _decode_payload(content_type: str, charset: str | None, body: bytes) -> tuple[Any, str]:
    """(decoded data, JSON text to store). Raises ValueError on anything undecodable."""
    encoding = charset or "utf-8"
    if content_type == "application/json":
        payload_text = body.decode(encoding)
        return json.loads(payload_text), payload_text
    if content_type == "application/x-www-form-urlencoded":
        form = urllib.parse.parse_qs(body.decode(encoding), strict_parsing=False)
        values = form.get("payload")
        if not values:
            raise ValueError("form body has no payload field")
        payload_text = values[0]
        return json.loads(payload_text), payload_text
    raise ValueError(f"unsupported content type {content_type!r}")


def _str_field(data: dict[str, Any], key: str, limit: int) -> str | None:
    value = data.get(key)
    return value[:limit] if isinstance(value, str) else None


def _repo_of(data: dict[str, Any]) -> str | None:
    repo = data.get("repository")
    if isinstance(repo, dict) and isinstance(repo.get("full_name"), str):
        return repo["full_name"][:255]
    return None


def _installation_of(data: dict[str, Any]) -> int | None:
    inst = data.get("installation")
    if isinstance(inst, dict) and isinstance(inst.get("id"), int) and not isinstance(
        inst.get("id"), bool
    ):
        return inst["id"]
    return None


async def webhook(request: web.Request) -> web.Response:
    started = time.perf_counter()
    app = request.app
    metrics = app[METRICS]
    event_name = request.headers.get("X-GitHub-Event")
    response = await _webhook(request, event_name)
    metrics.observe_webhook(response.status, time.perf_counter() - started, event_name)
    return response


async def _webhook(request: web.Request, event_name: str | None) -> web.Response:
    app = request.app
    ctx = app[CTX]
    delivery_id = request.headers.get("X-GitHub-Delivery")

    def reject(status: int, reason: str) -> web.Response:
        log_delivery(
            delivery_id=(delivery_id or "")[:64],
            event=(event_name or "")[:64],
            action=None,
            repo=None,
            outcome=f"rejected_{status}",
            level=logging.WARNING,
            reason=reason,
        )
        return _json_error(status, reason)

    if request.content_length is not None and request.content_length > WEBHOOK_BODY_LIMIT:
        return reject(413, "body over the 25 MiB limit")
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:
        return reject(413, "body over the 25 MiB limit")

    # Only the SHA-256 header counts: the SHA-1 one is legacy and too weak to trust alone.
    signature = request.headers.get("X-Hub-Signature-256")
    secret = ctx.settings.webhook_secret
    if not secret:
        return reject(401, "no webhook secret configured")
    if not signature or not signature.startswith("sha256="):
        return reject(401, "missing or malformed X-Hub-Signature-256")
    try:
        sansio.validate_event(body, signature=signature, secret=secret)  # constant-time compare
    except ValidationFailure:
        return reject(401, "signature does not match")

    if not event_name or len(event_name) > 64:
        return reject(400, "missing or invalid X-GitHub-Event")
    if not delivery_id or len(delivery_id) > 64:
        return reject(400, "missing or invalid X-GitHub-Delivery")
    try:
        data, payload_text = _decode_payload(request.content_type, request.charset, body)
    except (ValueError, LookupError) as exc:  # bad JSON, bad UTF-8, unknown charset, no payload=
        return reject(400, f"body is not a JSON payload: {type(exc).__name__}")
    if not isinstance(data, dict):
        return reject(400, "payload is not a JSON object")
    if "\x00" in payload_text:  # PostgreSQL text cannot hold NUL; JSON never needs a raw one
        return reject(400, "payload contains a NUL character")

    row = InboxRow(
        delivery_id=delivery_id,
        event=event_name,
        action=_str_field(data, "action", 64),
        repo=_repo_of(data),
        installation_id=_installation_of(data),
        payload=payload_text,
    )
    try:
        outcome = await app[INBOX].submit(row)
    except Exception as exc:  # noqa: BLE001 - GitHub retries nothing by itself; say 503 clearly
        log.error("could not store delivery %s: %s", delivery_id, type(exc).__name__)
        return _json_error(503, "could not store the delivery")
    if outcome == DUPLICATE:
        log_delivery(
            delivery_id=delivery_id,
            event=event_name,
            action=row.action,
            repo=row.repo,
            outcome="duplicate",
        )
        return web.json_response({"status": "duplicate", "delivery": delivery_id}, status=200)
    return web.json_response({"status": outcome, "delivery": delivery_id}, status=202)


async def _database_ok(ctx: Any) -> bool:
    async def ping() -> None:
        async with ctx.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    try:
        await asyncio.wait_for(ping(), timeout=HEALTH_TIMEOUT)
        return True
    except Exception:  # noqa: BLE001 - any failure means "not reachable"
        return False


async def healthz(request: web.Request) -> web.Response:
    if await _database_ok(request.app[CTX]):
        return web.json_response({"status": "ok", "database": "ok"})
    return web.json_response({"status": "error", "database": "unreachable"}, status=503)


async def metrics_view(request: web.Request) -> web.Response:
    from bot.stats import delivery_counts

    app = request.app
    ctx = app[CTX]
    deliveries: dict[str, int] | None
    try:
        deliveries = await asyncio.wait_for(delivery_counts(ctx.engine), timeout=HEALTH_TIMEOUT)
        database_up = True
    except Exception:  # noqa: BLE001 - the scrape still answers, with database_up 0
        deliveries, database_up = None, False
    worker = app.get(WORKER)
    inbox = app[INBOX]
    body = app[METRICS].render(
        deliveries=deliveries,
        worker=dict(worker.counts) if worker is not None else None,
        inbox={
            "commits_total": inbox.commits,
            "rows_total": inbox.rows_committed,
            "errors_total": inbox.errors,
            "queued": inbox.queued,
        },
        database_up=database_up,
    )
    return web.Response(text=body, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


def _canonical_repo(full_name: str) -> str:
    """Former repository names (volcengine/verl) map to the current one, as threads are
    stored under it; unknown names are returned unchanged."""
    try:
        from analyzers.catalog import load_catalog

        return load_catalog().canonical_repo(full_name)
    except Exception:  # noqa: BLE001 - no catalog: the name as given
        return full_name


async def api_thread(request: web.Request) -> web.Response:
    from bot.store.models import Analysis
    from bot.store.threads import get_thread, load_comments, thread_record

    ctx = request.app[CTX]
    owner, name = request.match_info["owner"], request.match_info["repo"]
    try:
        number = int(request.match_info["number"])
    except ValueError:
        return _json_error(404, "no such thread")
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, f"{owner}/{name}", number)
        if thread is None and _canonical_repo(f"{owner}/{name}").lower() != f"{owner}/{name}".lower():
            thread = await get_thread(session, _canonical_repo(f"{owner}/{name}"), number)
        if thread is None:
            return _json_error(404, "no such thread")
        record = thread_record(thread, await load_comments(session, thread))
        analysis = await session.scalar(
            select(Analysis.result).where(Analysis.thread_id == thread.id)
        )
    return web.json_response({"thread": record, "analysis": analysis})


async def api_actions(request: web.Request) -> web.Response:
    from bot.store.models import Action
    from bot.store.types import format_datetime

    ctx = request.app[CTX]
    query = select(Action).order_by(Action.created_at, Action.id)
    repo = request.query.get("repo")
    if repo:
        names = {repo.lower(), _canonical_repo(repo).lower()}
        query = query.where(func.lower(Action.repo).in_(names))
    number = request.query.get("number")
    if number:
        try:
            query = query.where(Action.number == int(number))
        except ValueError:
            return _json_error(400, "number must be an integer")
    try:
        limit = min(5000, max(1, int(request.query.get("limit", "1000"))))
    except ValueError:
        return _json_error(400, "limit must be an integer")
    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(query.limit(limit)))
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
        ]
    )


async def api_stats(request: web.Request) -> web.Response:
    from bot.stats import collect_stats

    return web.json_response(await collect_stats(request.app[CTX].engine))


def create_app(ctx: Any, *, worker: bool = True, worker_options: dict[str, Any] | None = None
               ) -> web.Application:
    """The whole web app. With `worker=True` the inbox worker runs inside it (started and
    stopped with the app); the inbox writer always does, since /webhook needs it."""
    app = web.Application(client_max_size=WEBHOOK_BODY_LIMIT)
    app[CTX] = ctx
    app[METRICS] = Metrics()
    inbox = Inbox(ctx.engine)
    app[INBOX] = inbox
    ctx.extras["inbox"] = inbox
    if worker:
        from bot.worker import Worker

        w = Worker(ctx, intake=inbox, **(worker_options or {}))
        app[WORKER] = w
        ctx.extras["worker"] = w
        inbox.add_listener(w.wake)

    async def start_background(app: web.Application) -> None:
        inbox.start()
        if WORKER in app:
            app[WORKER].start()

    async def stop_background(app: web.Application) -> None:
        await inbox.close()  # store what was accepted before stopping the worker
        if WORKER in app:
            await app[WORKER].stop()

    app.on_startup.append(start_background)
    app.on_cleanup.append(stop_background)

    app.router.add_post("/webhook", webhook)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/metrics", metrics_view)
    app.router.add_get("/api/threads/{owner}/{repo}/{number}", api_thread)
    app.router.add_get("/api/actions", api_actions)
    app.router.add_get("/api/stats", api_stats)

    from bot import preview, report_web, site

    site.setup(app)
    report_web.setup(app)
    preview.setup(app)
    return app
