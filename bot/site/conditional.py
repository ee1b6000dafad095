"""Conditional GET (RFC 9110 section 13) and how long an answer may be kept (RFC 9111), for
every answer of the app in one middleware, `conditional_get`:

- a whole 200 answer of GET or HEAD (a `web.Response` with its bytes) carries an ETag of its
  bytes (strong: the same bytes, the same tag; HEAD's is GET's, the handler builds the same
  body) and a Cache-Control: `no-cache` on /api/ (scripts revalidate every time), a short
  `max-age` (FRESH_SECONDS) on the pages and feeds, which say nothing that varies by who asks
  (the site has no login, no cookie);
- If-None-Match (weak comparison, as RFC 9110 13.1.2 wants for GET and HEAD; `*`; a list)
  matching it is a 304 without a body; when the client sends one, If-Modified-Since is not
  read (13.2.2). Without it, If-Modified-Since is read only where the handler set a
  Last-Modified (`response.last_modified`): a date that bounds every change of the answer
  (the reports feed's newest report). The thread lists have none: an old thread joining
  a list (a verdict, a re-analysis) does not move its newest date;
- /healthz and /metrics are `no-store`: a kept answer would report a state that is gone;
- streamed answers (the exports, written as they are read) carry no validator: `no-cache`,
  and `Accept-Ranges: none` (a Range is answered with the whole export, 200). Their headers
  go before the first row is read, and the store has no change marker every write moves
  (docs/site.md, "Review bounds79"), so no tag could be both cheap and never stale.

The app compresses nothing (no `Content-Encoding`), so no answer varies by Accept-Encoding; a
proxy that compresses adds its own Vary and weakens the tag (nginx, Caddy do).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable

from aiohttp import web

from bot.site.api import API_PREFIX

FRESH_SECONDS = 60  # how long a page or feed may be kept before it is asked for again
NEVER_STORED = frozenset({"/healthz", "/metrics"})
STREAMED_ONLY = "none"  # Accept-Ranges of a streamed answer: no part of it is served alone
# What a 304 leaves out of the 200's headers: the body's own (RFC 9110 15.4.5).
_BODY_HEADERS = frozenset({"content-type", "content-length", "content-encoding",
                           "content-disposition", "transfer-encoding"})


def cache_control(path: str) -> str:
    if path in NEVER_STORED:
        return "no-store"
    if path.startswith(API_PREFIX):
        return "no-cache"
    return f"max-age={FRESH_SECONDS}"


def _tag_of(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:32]


def _not_modified(request: web.Request, tag: str, response: web.Response) -> bool:
    """The client's copy is this answer: If-None-Match names the tag (or `*`), else, with no
    If-None-Match, If-Modified-Since is at or after the answer's Last-Modified."""
    if "If-None-Match" in request.headers:
        return any(e.value in (tag, "*") for e in request.if_none_match or ())
    since, modified = request.if_modified_since, response.last_modified
    return since is not None and modified is not None and modified <= since


def streamed_headers(request: web.Request) -> dict[str, str]:
    """The headers of a streamed answer (the exports), which its handler sends itself before
    the middleware sees it: no validator, so the Cache-Control alone, and no Range served."""
    return {"Cache-Control": cache_control(request.path), "Accept-Ranges": STREAMED_ONLY}


def _validated(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    if (request.method not in ("GET", "HEAD") or response.status != 200
            or not isinstance(response, web.Response) or not isinstance(response.body, bytes)):
        return response  # (a streamed answer is sent already: streamed_headers)
    control = cache_control(request.path)
    response.headers.setdefault("Cache-Control", control)
    if control == "no-store":
        return response
    tag = _tag_of(response.body)
    response.headers["ETag"] = f'"{tag}"'
    if not _not_modified(request, tag, response):
        return response
    kept = {k: v for k, v in response.headers.items() if k.lower() not in _BODY_HEADERS}
    return web.Response(status=304, headers=kept)


@web.middleware
async def conditional_get(request: web.Request,
                          handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                          ) -> web.StreamResponse:
    return _validated(request, await handler(request))
