"""POST /webhook: the one route GitHub calls.

The webhook handler does only what must happen before GitHub's 10-second timeout: size
limit, signature, decoding, and storing the delivery in the inbox (group commit, bot/inbox.py).
No GitHub call and no analysis happens inside a request; the worker does those later.
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from typing import Any

from aiohttp import HttpVersion11, web
from gidgethub import ValidationFailure, sansio

from bot.config import WEBHOOK_BODY_LIMIT, webhook_secrets
from bot.context import CTX, INBOX, METRICS
from bot.logs import log_delivery
from bot.store.models import repository_id_of
from bot.store.types import storable_text
from bot.webhooks.inbox import DUPLICATE, InboxRow

log = logging.getLogger(__name__)
# GitHub's header: "sha256=" and 64 hex digits. Anything else is refused before the compare
# (hmac.compare_digest raises TypeError on non-ASCII text: that was a 500 per request).
_SIGNATURE = re.compile(r"sha256=[0-9a-fA-F]{64}")


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


def _signed_with_any(body: bytes, signature: str, secrets: tuple[str | None, ...]) -> bool:
    """The body's signature is that of one of `secrets` (the current webhook secret and,
    during a rotation, the previous one), each compared in constant time."""
    for secret in secrets:
        if not secret:
            continue
        try:
            sansio.validate_event(body, signature="sha256=" + signature[7:].lower(), secret=secret)
        except ValidationFailure:
            continue
        return True
    return False


def _column_text(value: Any, limit: int) -> str | None:
    """A payload string for an inbox column: cut to the column, U+0000 and lone surrogates
    (`"\\ud800"` is valid JSON; no database can store the result) as U+FFFD; the stored
    payload keeps the original."""
    return storable_text(value[:limit]) if isinstance(value, str) else None


def _str_field(data: dict[str, Any], key: str, limit: int) -> str | None:
    return _column_text(data.get(key), limit)


def _repo_of(data: dict[str, Any]) -> str | None:
    repo = data.get("repository")
    return _column_text(repo.get("full_name"), 255) if isinstance(repo, dict) else None


def _installation_of(data: dict[str, Any]) -> int | None:
    """The installation id for its column (a 64-bit integer), else None: a larger number made
    the row unstorable and the delivery was answered 503 and lost."""
    inst = data.get("installation")
    iid = inst.get("id") if isinstance(inst, dict) else None
    if isinstance(iid, int) and not isinstance(iid, bool) and -(2**63) <= iid < 2**63:
        return iid
    return None


_PAYLOAD_TYPES = ("application/json", "application/x-www-form-urlencoded")
_OVER_LIMIT = (413, "body over the 25 MiB limit")


def _refused_by_headers(request: web.Request, secret: str | None) -> tuple[int, str] | None:
    """(status, reason) for a request its headers alone refuse, else None: checked before a
    byte of the body is read, so that a request that cannot be a signed delivery does not
    upload (and have held in memory) up to 25 MiB first. Only a well-formed signature header
    needs the body to be checked."""
    if request.content_length is not None and request.content_length > WEBHOOK_BODY_LIMIT:
        return _OVER_LIMIT
    if not secret:
        return 401, "no webhook secret configured"
    # Only the SHA-256 header counts: the SHA-1 one is legacy and too weak to trust alone.
    signature = request.headers.get("X-Hub-Signature-256")
    if not signature or not _SIGNATURE.fullmatch(signature):
        return 401, "missing or malformed X-Hub-Signature-256"
    event_name = request.headers.get("X-GitHub-Event")
    if not event_name or len(event_name) > 64:
        return 400, "missing or invalid X-GitHub-Event"
    delivery_id = request.headers.get("X-GitHub-Delivery")
    if not delivery_id or len(delivery_id) > 64:
        return 400, "missing or invalid X-GitHub-Delivery"
    if request.content_type not in _PAYLOAD_TYPES:
        return 400, ("body is not a JSON payload: Content-Type is not application/json "
                     "or application/x-www-form-urlencoded")
    return None


def _reject(request: web.Request, status: int, reason: str, *, body_unread: bool = False
            ) -> web.Response:
    delivery_id = request.headers.get("X-GitHub-Delivery")
    event_name = request.headers.get("X-GitHub-Event")
    log_delivery(
        delivery_id=(delivery_id or "")[:64],
        event=(event_name or "")[:64],
        action=None,
        repo=None,
        outcome=f"rejected_{status}",
        level=logging.WARNING,
        reason=reason,
    )
    response = _json_error(status, reason)
    if body_unread:  # what the client still sends is no next request: the connection ends
        response.force_close()
    return response


async def webhook_expect(request: web.Request) -> web.Response | None:
    """`Expect: 100-continue` (curl's way with a large body): a request its headers refuse is
    answered with the refusal instead of "100 Continue", so its body is never sent; any
    other is told to go on, as aiohttp's default handler does."""
    expect = request.headers.get("Expect", "")
    if request.version != HttpVersion11:
        return None
    if expect.lower() != "100-continue":
        raise web.HTTPExpectationFailed(text=f"Unknown Expect: {expect[:100]}")
    refused = _refused_by_headers(request, request.app[CTX].settings.webhook_secret)
    if refused is not None:
        response = _reject(request, *refused, body_unread=True)
        request.app[METRICS].observe_webhook(response.status, 0.0,
                                             request.headers.get("X-GitHub-Event"))
        return response
    await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    request.writer.output_size = 0  # the answer's own bytes are counted from here (as aiohttp)
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
        return _reject(request, status, reason)

    secret = ctx.settings.webhook_secret
    refused = _refused_by_headers(request, secret)
    if refused is not None:
        return _reject(request, *refused, body_unread=True)
    try:
        body = await request.read()
    except web.HTTPRequestEntityTooLarge:  # chunked: no Content-Length to refuse it by
        return reject(*_OVER_LIMIT)
    # present and well-formed, as are the event and delivery headers (_refused_by_headers)
    signature = request.headers["X-Hub-Signature-256"]
    event_name, delivery_id = request.headers["X-GitHub-Event"], request.headers["X-GitHub-Delivery"]
    if not _signed_with_any(body, signature,
                            webhook_secrets(secret, ctx.settings.webhook_secret_previous)):
        return reject(401, "signature does not match")
    try:
        data, payload_text = _decode_payload(request.content_type, request.charset, body)
    except (ValueError, LookupError) as exc:  # bad JSON, bad UTF-8, unknown charset, no payload=
        return reject(400, f"body is not a JSON payload: {type(exc).__name__}")
    except RecursionError:  # [[[[...]]]] nested deeper than the decoder goes: was a 500
        return reject(400, "body is not a JSON payload: nested too deeply")
    if not isinstance(data, dict):
        return reject(400, "payload is not a JSON object")
    if "\x00" in payload_text:  # PostgreSQL text cannot hold NUL; JSON never needs a raw one
        return reject(400, "payload contains a NUL character")

    row = InboxRow(
        delivery_id=delivery_id,
        event=event_name,
        action=_str_field(data, "action", 64),
        repo=_repo_of(data),
        repo_id=repository_id_of(data),
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
