"""The one GitHub client of the app, on gidgethub's aiohttp API.

- App JWT (RS256, PyJWT) with `iat` 60 s in the past for clock skew and `exp` 9 min ahead
  (GitHub refuses more than 10 min); reused until 2 min before it expires.
- Installation tokens cached until 5 min before `expires_at`; one refresh at a time per
  installation (an asyncio.Lock each), so a burst of jobs makes one token request; a 401
  drops only the token refused. A 404 for a token (uninstalled) raises `InstallationGone`
  (status 410, never the resource's 404) and drops the installation's token, ETag entries
  and repository mappings.
- The repository -> installation mapping (`installation_for_repo`) is kept an hour, for
  4,096 repositories at most; `refresh=True` asks GitHub again (a reinstall has a new id).
- `GITHUB_API_URL` (settings.api_url) is the base of every call: GitHub Enterprise or the
  test suite's fake server.
- Retries with exponential backoff and jitter on 5xx, 429 and rate limits (403 with
  `retry-after`, the secondary-limit message, or `x-ratelimit-remaining: 0`), honouring
  `retry-after` and `x-ratelimit-reset` (a rate limit with neither: a minute at least, as GitHub
  asks), bounded in attempts and in total wait; a 5xx whose body does not decode (an HTML
  page) is GitHubBroken as any 5xx. What still
  fails raises gidgethub's exception, so the caller's job stays queued instead of being lost.
  A POST that creates something (a comment, by REST or by a GraphQL mutation such as
  addDiscussionComment) is not repeated after a 5xx: it may have been created, and the job's own retry checks for it first instead of posting twice.
  The retry loop wraps the HTTP transport, so REST and GraphQL get the same treatment.
- A rate limit holds the credentials' later requests too, answered without asking GitHub
  when they may not wait so long: a secondary one every request until its `retry-after`
  (auth64), a spent primary one (`x-ratelimit-remaining: 0`) the requests to its resource
  (core, graphql, search) until `x-ratelimit-reset` (limits65).
- ETag cache (gidgethub's `cache`) kept apart per installation, in one LRU bounded over all of
  them (ETAG_CACHE_TOTAL): a 304 costs no rate limit. Recursive tree listings are kept with
  their ETag but not their body (UNCACHED_URL: megabytes each): a 304 answers UNCHANGED_LISTING.
- Secrets never reach the logs: only method, path (without query) and status are logged.
"""

from __future__ import annotations

import asyncio
import email.utils
import http
import json
import logging
import math
import random
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import gidgethub
import gidgethub.aiohttp
import gidgethub.sansio
import jwt as pyjwt

from bot.config import Settings, unescape_pem
from bot.logs import register_secret
from bot.store.types import parse_datetime

log = logging.getLogger(__name__)

USER_AGENT = "rltracker"
JWT_BACKDATE = 60  # seconds: GitHub's clock may be ahead of ours
JWT_AHEAD = 9 * 60  # seconds after now; exp - iat = 10 min, GitHub's maximum
JWT_REUSE_MARGIN = 2 * 60  # mint a new JWT when less than this is left
TOKEN_REFRESH_MARGIN = 5 * 60  # refresh installation tokens this long before they expire
ETAG_CACHE_SIZE = 2000  # an LRUCache's default bound
ETAG_CACHE_TOTAL = 20_000  # entries across every installation (and the app, token, anonymous)
# Answers whose body is never kept in the ETag cache: a recursive git tree listing is megabytes
# for a large repository (up to 100,000 entries) and asked once a night per repository (the
# rules' package guides): kept, a few hundred of them would hold gigabytes for a 304 a day.
# Their ETag is kept, with UNCHANGED_LISTING for the body: GitHub's 304 (free) to the next
# conditional request comes back as that marker, the caller keeping what it took from the
# listing before (`RetryingGitHubAPI.forget_answer` first when it kept nothing).
UNCACHED_URL = re.compile(r"/git/trees/[^?]*\?(?:[^#]*&)?recursive=")
UNCHANGED_LISTING: Any = object()
# The repository -> installation mapping (`installation_for_repo`): kept this long, and for this
# many repositories at most. A reinstall gives the installation a new id: a mapping dropped when
# GitHub refuses it (`forget_installation`, `installation_for_repo(refresh=True)`) is read anew;
# the age bounds what is missed otherwise (a repository moved to another account's installation).
REPO_INSTALLATION_TTL = 3600.0  # seconds
REPO_INSTALLATION_CACHE_SIZE = 4096
# GitHub's refusal (403) of a token for a suspended installation is remembered this long (or
# until the `unsuspend` event, `forget_refusal`): until the `suspend` event is handled, or when
# it is lost, every request through the installation asked for a token and was refused.
SUSPENDED_REFUSAL_TTL = 300.0  # seconds
SECONDARY_LIMIT_MARKERS = (b"secondary rate limit", b"abuse detection")
# A secondary rate limit (or a 429) holds every request with the same credentials (an
# installation's token, the app's JWT, GITHUB_TOKEN) until GitHub's `retry-after`, this long
# without one (GitHub: at least a minute); requests meanwhile wait, or are answered 403 with
# the time left (HELD_MESSAGE) without asking GitHub (auth64).
SECONDARY_LIMIT_HOLD = 60.0
HELD_MESSAGE = ("You have exceeded a secondary rate limit (rltracker: not sent; GitHub asked "
                "to wait before the next request with these credentials)")
# A primary rate limit (`x-ratelimit-remaining: 0`, with its `x-ratelimit-reset`) is the
# credentials' budget of one resource spent until the reset: REST's ("core"), GraphQL's
# ("graphql") and search's count apart. Every request of those credentials to that resource
# is held until the reset (limits65), answered PRIMARY_HELD_MESSAGE when it may not wait so
# long, instead of going to GitHub to be refused again.
PRIMARY_HELD_MESSAGE = ("API rate limit exceeded (rltracker: not sent; the rate limit of these "
                        "credentials is spent until its reset)")
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS"})
# POSTs that create something: after a 5xx GitHub may have created it anyway, so repeating the
# request could post a second comment. They are not retried on 5xx (rate-limit answers, which
# mean "not processed", still are); the caller's job retries after checking what exists.
CREATING_POST = re.compile(r"/(?:comments|issues|pulls|reviews|replies|discussions)/?$")
# The same for GraphQL: a mutation that adds or creates something (addDiscussionComment) is
# not repeated after a 5xx. Others (minimizeComment) are idempotent and retried as usual.
CREATING_MUTATION = re.compile(r"\s*mutation\b[^{]*\{\s*(?:add|create)[A-Z]")

Credentials = Callable[[], Awaitable[tuple[str, str]]]  # -> ("jwt" | "token", value)
SleepFn = Callable[[float], Awaitable[None]]


@dataclass(frozen=True)
class RetryPolicy:
    """Bounds of the retry loop for one request."""

    max_attempts: int = 5
    max_total_wait: float = 120.0  # seconds slept across the retries of one request
    max_single_wait: float = 60.0  # a longer retry-after / reset is not waited for
    base_delay: float = 1.0
    max_backoff: float = 30.0


class LRUCache(MutableMapping[Any, Any]):
    """A bounded mapping for gidgethub's ETag cache: long-running processes stay small."""

    def __init__(self, maxsize: int = ETAG_CACHE_SIZE) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[Any, Any] = OrderedDict()

    def __getitem__(self, key: Any) -> Any:
        value = self._data[key]
        self._data.move_to_end(key)
        return value

    def __setitem__(self, key: Any, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __delitem__(self, key: Any) -> None:
        del self._data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def items(self) -> list[tuple[Any, Any]]:  # type: ignore[override]
        """A snapshot, read without touching recency: Mapping's items() reads each entry
        through __getitem__, which moved it while the OrderedDict was iterated (RuntimeError
        with two entries or more)."""
        return list(self._data.items())


class _CacheView(MutableMapping[str, Any]):
    """One installation's (or the app's, GITHUB_TOKEN's, anonymous) ETag cache: its share of
    the client's one LRU bounded over all of them (ETAG_CACHE_TOTAL), so hundreds of
    installations do not keep ETAG_CACHE_SIZE responses each for the life of the process;
    its entries apart from the others' (an answer depends on the credentials)."""

    def __init__(self, shared: LRUCache, namespace: object) -> None:
        self._shared = shared
        self._namespace = namespace

    def __getitem__(self, key: str) -> Any:
        return self._shared[(self._namespace, key)]

    def __setitem__(self, key: str, value: Any) -> None:
        if UNCACHED_URL.search(key):
            etag, last_modified, _, more = value
            value = (etag, last_modified, UNCHANGED_LISTING, more)
        self._shared[(self._namespace, key)] = value

    def __delitem__(self, key: str) -> None:
        del self._shared[(self._namespace, key)]

    def __iter__(self) -> Iterator[str]:  # (not used by gidgethub: a scan is enough)
        return iter([k[1] for k in list(self._shared) if k[0] == self._namespace])

    def __len__(self) -> int:
        return sum(1 for k in list(self._shared) if k[0] == self._namespace)

    def clear(self) -> None:
        for key in [k for k in list(self._shared) if k[0] == self._namespace]:
            del self._shared[key]


def _safe_path(url: str) -> str:
    """The path of a URL for logs: no query string (it could carry a secret)."""
    return urlsplit(url).path or "/"


def _graphql_document(path: str, body: bytes) -> str | None:
    """The GraphQL document a POST to /graphql sends, None for any other request."""
    if not path.endswith("/graphql"):
        return None
    try:
        query = json.loads(body).get("query")
    except (ValueError, AttributeError):
        return None
    return query if isinstance(query, str) else None


def _creates(path: str, body: bytes) -> bool:
    """A POST that may have created something although GitHub answered 5xx."""
    if CREATING_POST.search(path):
        return True
    query = _graphql_document(path, body)
    return query is not None and CREATING_MUTATION.match(query) is not None


def retry_reason(status: int, headers: Mapping[str, str], body: bytes) -> str | None:
    """Why a response is worth retrying, or None when it is final."""
    if status >= 500:
        return "server_error"
    if status == 429:
        return "too_many_requests"
    if status == 403:
        if headers.get("retry-after") is not None:
            return "secondary_rate_limit"
        lowered = body[:4096].lower()
        if any(marker in lowered for marker in SECONDARY_LIMIT_MARKERS):
            return "secondary_rate_limit"
        if headers.get("x-ratelimit-remaining") == "0":
            return "rate_limit"
    return None


GRAPHQL_MUTATION = re.compile(r"\s*mutation\b")
SEARCH_PATH = re.compile(r"(?:/api/v3)?/search/")


def rate_limit_resource(path: str) -> str:
    """The primary rate limit a request counts against (GitHub's `x-ratelimit-resource`):
    GraphQL's and search's apart from REST's ("core")."""
    if path.endswith("/graphql"):
        return "graphql"
    return "search" if SEARCH_PATH.match(path) else "core"


def _graphql_query(path: str, body: bytes) -> bool:
    """A GraphQL POST that only reads (no mutation): as safe to repeat as a GET."""
    query = _graphql_document(path, body)
    return query is not None and GRAPHQL_MUTATION.match(query) is None


def graphql_rate_limit(body: bytes) -> str | None:
    """Why a GraphQL answer of status 200 is a rate limit, or None. GitHub answers a spent
    GraphQL limit with 200, errors of type RATE_LIMITED and `x-ratelimit-remaining: 0`, and
    may answer a secondary limit with 200 and its message; nothing of the query was run."""
    if b"RATE_LIMITED" not in body and not any(m in body.lower() for m in SECONDARY_LIMIT_MARKERS):
        return None  # the cheap test first: a large answer is parsed only when it may be one
    try:
        errors = json.loads(body).get("errors")
    except (ValueError, AttributeError):
        return None
    for error in errors if isinstance(errors, list) else []:
        if not isinstance(error, dict):
            continue
        message = str(error.get("message") or "").lower().encode("utf-8", "replace")
        if any(marker in message for marker in SECONDARY_LIMIT_MARKERS):
            return "secondary_rate_limit"
        if error.get("type") == "RATE_LIMITED":
            return "rate_limit"
    return None


def _retry_after_seconds(value: str, now: float) -> float | None:
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - now)


MAX_RATE_LIMIT_WAIT = 3600.0  # a primary limit resets within the hour


def rate_limit_wait(exc: BaseException, now: float | None = None) -> float | None:
    """Seconds GitHub asked to wait, when `exc` is its rate-limit answer (429, or 403 with
    `retry-after`, the secondary-limit message or no requests left) that the client's own
    bounded retries gave up on; None for any other failure. A job retried sooner (the
    worker's first backoff is 5 s) only meets the limit again, and GitHub may block an
    integration that keeps doing so. Also GitHub's 5xx that says when to come back
    (`retry-after`: a maintenance window's 503), which the worker retried after 5 s,
    20 s, ... as any 5xx; None for a 5xx without it."""
    if not isinstance(exc, gidgethub.HTTPException):
        return None
    headers = {k.lower(): v for k, v in (getattr(exc, "headers", None) or {}).items()}
    now = time.time() if now is None else now
    if isinstance(exc, gidgethub.GitHubBroken):
        asked = (_retry_after_seconds(headers["retry-after"], now)
                 if headers.get("retry-after") is not None else None)
        return None if asked is None else min(MAX_RATE_LIMIT_WAIT, max(1.0, asked))
    if exc.status_code not in (403, 429):
        return None
    reason = retry_reason(int(exc.status_code), headers, str(exc).encode("utf-8", "replace"))
    if reason is None:
        return None
    wait: float | None = None
    if headers.get("retry-after") is not None:
        wait = _retry_after_seconds(headers["retry-after"], now)
    if wait is None and headers.get("x-ratelimit-remaining") == "0":
        try:
            wait = float(headers.get("x-ratelimit-reset") or "") - now + 1.0
        except ValueError:
            wait = None
    if wait is None:
        wait = 60.0  # GitHub: without a hint, wait at least a minute
    return min(MAX_RATE_LIMIT_WAIT, max(1.0, wait))


# GitHub's 4xx answers that the same request meets again however often it is retried: a locked
# issue (403), a missing permission (403), a thread deleted meanwhile (404), issues turned off
# (410), a refused body (422). 401 (credentials being fixed), 408, 409 and rate limits (403,
# 429: rate_limit_wait) are worth another attempt.
RETRYABLE_CLIENT_ERRORS = frozenset({401, 408, 409, 429})


# GitHub's GraphQL errors (in an answer of status 200) that the same request meets again
# however often it is asked, as REST's 404 and 403: the node deleted meanwhile (NOT_FOUND: a
# discussion or comment gone), or not the app's to read or change (FORBIDDEN). A rate limit
# (RATE_LIMITED) comes as REST's 403 (RetryingGitHubAPI._graphql_once); an error of no type
# ("Something went wrong while executing your query": GitHub's own timeout) may pass.
GRAPHQL_REFUSALS = frozenset({"NOT_FOUND", "FORBIDDEN"})


def _graphql_refusal(error: BaseException) -> bool:
    """GitHub's 200 whose every error is a refusal (GRAPHQL_REFUSALS)."""
    if not isinstance(error, gidgethub.QueryError):
        return False
    response = error.response if isinstance(error.response, dict) else {}
    errors = response.get("errors")
    return (isinstance(errors, list) and bool(errors)
            and all(isinstance(e, dict) and e.get("type") in GRAPHQL_REFUSALS for e in errors))


def refused_for_good(error: BaseException) -> bool:
    """A GitHub answer that retrying cannot change (the delivery fails at once, with it):
    a 4xx other than those worth another attempt, or a GraphQL answer refusing the same way
    (GRAPHQL_REFUSALS: it was retried five times, minutes apart, and each attempt of a
    command reply left a failed row)."""
    if _graphql_refusal(error):
        return True
    status = getattr(error, "status_code", None)
    return (isinstance(error, gidgethub.BadRequest) and status is not None
            and 400 <= int(status) < 500 and int(status) not in RETRYABLE_CLIENT_ERRORS
            and rate_limit_wait(error) is None)


class RetryingGitHubAPI(gidgethub.aiohttp.GitHubAPI):
    """gidgethub's aiohttp API with credentials fetched per request and bounded retries."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        requester: str,
        *,
        base_url: str,
        cache: MutableMapping[str, Any] | None,
        credentials: Credentials | None,
        policy: RetryPolicy,
        sleep: SleepFn,
        rand: Callable[[], float],
        clock: Callable[[], float],
        on_unauthorized: Callable[[str | None], None] | None = None,
        holds: dict[object, float] | None = None,
        hold_key: object = None,
        left: dict[tuple[object, str], tuple[int, float]] | None = None,
    ) -> None:
        super().__init__(session, requester, cache=cache, base_url=base_url)
        self._credentials = credentials
        # The client's shared "GitHub said wait until" per credentials (`_hold`, `_held`)
        self._holds = holds
        self._hold_key = hold_key
        # The client's shared (credentials, resource) -> (requests left, reset) of GitHub's
        # last answer (`_note_left`, `rate_left`)
        self._rate_left = left
        self._policy = policy
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self._on_unauthorized = on_unauthorized
        # The headers of the last rate-limit answer the retries gave up on (for graphql()).
        self._rate_limited: Mapping[str, str] | None = None
        self._last_status = 0  # of the last answer (for graphql())

    async def sleep(self, seconds: float) -> None:
        await self._sleep(seconds)

    async def _make_request(  # type: ignore[override]
        self,
        method: str,
        url: str,
        url_vars: Any,
        data: Any,
        accept: str,
        jwt: str | None = None,
        oauth_token: str | None = None,
        **kwargs: Any,
    ) -> tuple[bytes, str | None, int]:
        explicit = jwt is not None or oauth_token is not None
        for second_try in (False, True):
            if not explicit and self._credentials is not None:
                kind, value = await self._credentials()
                jwt, oauth_token = (value, None) if kind == "jwt" else (None, value)
            self._last_status = 0
            try:
                return await super()._make_request(
                    method, url, url_vars, data, accept, jwt=jwt, oauth_token=oauth_token, **kwargs
                )
            except ValueError as exc:
                # gidgethub decodes the body before it reads the status: GitHub's 5xx from its
                # front end, said to be JSON but an HTML page, came out as JSONDecodeError, a
                # ValueError the worker fails at once, where GitHub down is GitHubBroken.
                raise self._broken(exc) from exc
            except gidgethub.BadRequest as exc:
                # A token revoked or expired early: drop it and try once with a fresh one.
                if (
                    exc.status_code == 401
                    and not second_try
                    and not explicit
                    and self._on_unauthorized is not None
                ):
                    log.warning("GitHub 401 on %s %s; refreshing credentials", method, _safe_path(url))
                    self._on_unauthorized(oauth_token)  # the token refused, not a newer one
                    continue
                raise
        raise AssertionError("unreachable")

    async def graphql(self, query: str, *, endpoint: str = "", **variables: Any) -> Any:
        for second_try in (False, True):
            try:
                return await self._graphql_once(query, endpoint=endpoint, **variables)
            except gidgethub.GraphQLAuthorizationFailure:
                # A token revoked or expired early (as for REST in _make_request): drop it
                # and try once with a fresh one; GitHub ran nothing of a refused request.
                if second_try or self._on_unauthorized is None:
                    raise
                log.warning("GitHub 401 on POST /graphql; refreshing credentials")
                self._on_unauthorized(self.oauth_token)
        raise AssertionError("unreachable")

    async def _graphql_once(self, query: str, *, endpoint: str = "", **variables: Any) -> Any:
        # gidgethub's graphql() sends self.oauth_token: set it from the current credentials.
        if self._credentials is not None:
            kind, value = await self._credentials()
            if kind == "token":
                self.oauth_token = value
        self._rate_limited = None
        self._last_status = 0
        try:
            return await super().graphql(query, endpoint=endpoint or self._graphql_endpoint(),
                                         **variables)
        except (gidgethub.BadGraphQLRequest, gidgethub.QueryError) as exc:
            # gidgethub drops the headers of a GraphQL error: a rate limit the retries gave
            # up on comes back as REST's would (BadRequest with them), so callers wait as
            # long as GitHub asks (`rate_limit_wait`) instead of retrying at once. GitHub's
            # 200 with RATE_LIMITED errors (QueryError) comes back as REST's 403 with them.
            status = getattr(exc, "status_code", None)
            if self._rate_limited is None or (status is not None and status not in (403, 429)):
                raise
            response = exc.response if isinstance(exc.response, dict) else {}
            errors = response.get("errors")
            first = errors[0] if isinstance(errors, list) and errors else {}
            message = str(response.get("message")
                          or (first.get("message") if isinstance(first, dict) else None)
                          or "rate limited")
            raise gidgethub.BadRequest(status or http.HTTPStatus.FORBIDDEN, message,
                                       headers=self._rate_limited) from exc
        except (gidgethub.GraphQLException, ValueError) as exc:
            # gidgethub decodes the body before it looks at the status: GitHub's 5xx with an
            # HTML or empty body (its front end's) came back as a GraphQL error, or as
            # JSONDecodeError when said to be JSON, which the worker does not take for GitHub
            # being down (GitHubBroken, retried for hours).
            raise self._broken(exc) from exc

    def _broken(self, exc: Exception) -> Exception:
        """GitHubBroken when the last answer was a 5xx (its body undecodable), else `exc`."""
        if self._last_status < 500:
            return exc
        try:
            return gidgethub.GitHubBroken(http.HTTPStatus(self._last_status))
        except ValueError:  # a status http.HTTPStatus does not name (599)
            return gidgethub.GitHubBroken(http.HTTPStatus.BAD_GATEWAY)

    def _graphql_endpoint(self) -> str:
        return self.base_url.rstrip("/") + "/graphql"

    def _left(self, key: object) -> float | None:
        """Seconds left of the hold `key` (`_holds`), None when there is none."""
        if self._holds is None:
            return None
        until = self._holds.get(key)
        if until is None:
            return None
        left = until - self._clock()
        if left <= 0:
            self._holds.pop(key, None)
            return None
        return left

    def _held(self, path: str) -> tuple[float, bool] | None:
        """(seconds left, whether it is a primary limit) of the longest rate limit GitHub gave
        a request with the same credentials that holds a request to `path`: a secondary limit
        (every resource), or the primary limit of its resource (`rate_limit_resource`) spent;
        None when there is none."""
        secondary = self._left(self._hold_key)
        primary = self._left((self._hold_key, rate_limit_resource(path)))
        if primary is not None and (secondary is None or primary > secondary):
            return primary, True
        return None if secondary is None else (secondary, False)

    def _hold_primary(self, path: str, headers: Mapping[str, str]) -> None:
        """An answer saying the credentials' primary limit is spent (`x-ratelimit-remaining:
        0`, whether the answer is GitHub's refusal or the last request it took) holds every
        request of theirs to the same resource until `x-ratelimit-reset` (at most an hour):
        until then GitHub refuses each, and counts them."""
        if self._holds is None or headers.get("x-ratelimit-remaining") != "0":
            return
        try:
            reset = float(headers.get("x-ratelimit-reset") or "")
        except ValueError:
            return
        now = self._clock()
        if not math.isfinite(reset) or reset <= now:
            return
        until = min(reset, now + MAX_RATE_LIMIT_WAIT) + 1.0  # (GitHub counts whole seconds)
        key = (self._hold_key, headers.get("x-ratelimit-resource") or rate_limit_resource(path))
        self._holds[key] = max(until, self._holds.get(key, 0.0))

    def _note_left(self, path: str, headers: Mapping[str, str]) -> None:
        """GitHub's count of what these credentials have left of the resource of `path`
        (`x-ratelimit-remaining` until `x-ratelimit-reset`), kept for `rate_left`."""
        if self._rate_left is None:
            return
        try:
            remaining = int(headers.get("x-ratelimit-remaining") or "")
            reset = float(headers.get("x-ratelimit-reset") or "")
        except ValueError:
            return
        resource = headers.get("x-ratelimit-resource") or rate_limit_resource(path)
        self._rate_left[(self._hold_key, resource)] = (remaining, reset)

    def forget_answer(self, url: str) -> None:
        """The ETag cache's entry of `url` (a path of the API) dropped: the next request
        asks GitHub for the whole answer."""
        if self._cache is not None:
            self._cache.pop(gidgethub.sansio.format_url(url, {}, base_url=self.base_url), None)

    def rate_left(self, resource: str = "core") -> int | None:
        """Requests these credentials had left of `resource` (core: REST, graphql, search)
        in GitHub's last answer; None when none was seen, or its reset has passed (the
        budget is whole again)."""
        seen = (self._rate_left or {}).get((self._hold_key, resource))
        if seen is None or seen[1] <= self._clock():
            return None
        return seen[0]

    def _hold(self, headers: Mapping[str, str]) -> None:
        """A secondary rate limit (or a 429) holds every request with these credentials
        until GitHub's time: it is the installation's (the app's, the token's), not the
        request's, and GitHub may block an integration that keeps asking inside it."""
        if self._holds is None:
            return
        now = self._clock()
        wait = None
        if headers.get("retry-after") is not None:
            wait = _retry_after_seconds(headers["retry-after"], now)
        until = now + (SECONDARY_LIMIT_HOLD if wait is None else wait)
        self._holds[self._hold_key] = max(until, self._holds.get(self._hold_key, 0.0))

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        policy = self._policy
        waited = 0.0
        attempt = 0
        path = _safe_path(url)
        own_wait = False  # this request has just waited out its own rate limit
        while True:
            attempt += 1
            hold = None if own_wait else self._held(path)
            own_wait = False
            if hold is not None:
                # Another request with these credentials met a secondary rate limit, or spent
                # the primary limit of this request's resource: wait for GitHub's time, or
                # (longer than this request may wait) answer as GitHub would, without asking
                # it, so the caller's job is deferred as that one was.
                held, primary = hold
                which = "the spent primary" if primary else "a secondary"
                if not self._within(policy, attempt, waited, held):
                    log.warning("GitHub %s %s not sent: %s rate limit holds these credentials "
                                "for %.0fs more", method, path, which, held)
                    return self._held_answer(held, primary, path)
                log.warning("GitHub %s %s: waiting %.1fs (%s rate limit holds these "
                            "credentials)", method, path, held, which)
                await self._sleep(held)
                waited += held
            try:
                status, resp_headers, data = await super()._request(method, url, headers, body)
                self._last_status = status
            except (TimeoutError, aiohttp.ClientError) as exc:
                # A request that never reached GitHub is safe to repeat; others only if
                # idempotent (a GraphQL query is, though it is a POST; a mutation is not).
                safe = (isinstance(exc, aiohttp.ClientConnectorError) or method in IDEMPOTENT
                        or (method == "POST" and _graphql_query(path, body)))
                delay = self._backoff(attempt)
                if not safe or not self._within(policy, attempt, waited, delay):
                    raise
                log.warning(
                    "GitHub %s %s failed (%s); retry %d in %.1fs",
                    method, path, type(exc).__name__, attempt, delay,
                )
                await self._sleep(delay)
                waited += delay
                continue
            log.debug("GitHub %s %s -> %d", method, path, status)
            self._hold_primary(path, resp_headers)
            self._note_left(path, resp_headers)
            reason = retry_reason(status, resp_headers, data)
            if reason is None and status == 200 and method == "POST" and path.endswith("/graphql"):
                reason = graphql_rate_limit(data)
            if reason is None:
                return status, resp_headers, data
            if reason == "server_error" and method == "POST" and _creates(path, body):
                log.warning("GitHub %s %s -> %d; not repeated (it may have been created)", method, path, status)
                return status, resp_headers, data
            if reason in ("secondary_rate_limit", "too_many_requests"):
                self._hold(resp_headers)
            delay = self._delay(reason, resp_headers, attempt)
            if not self._within(policy, attempt, waited, delay):
                if reason != "server_error":
                    self._rate_limited = resp_headers
                log.warning(
                    "GitHub %s %s -> %d (%s); giving up after %d attempt(s), %.1fs waited",
                    method, path, status, reason, attempt, waited,
                )
                return status, resp_headers, data
            log.warning(
                "GitHub %s %s -> %d (%s); retry %d in %.1fs",
                method, path, status, reason, attempt, delay,
            )
            await self._sleep(delay)
            waited += delay
            own_wait = reason != "server_error"

    def _held_answer(self, held: float, primary: bool,
                     path: str) -> tuple[int, Mapping[str, str], bytes]:
        """GitHub's answer to a request a rate limit holds, made without asking GitHub: 403
        with `retry-after` (a secondary limit) or `x-ratelimit-remaining: 0` and the reset (a
        primary one), as `rate_limit_wait` and gidgethub read GitHub's own."""
        answer = {"content-type": "application/json; charset=utf-8"}
        if primary:
            answer.update({"x-ratelimit-limit": "0", "x-ratelimit-remaining": "0",
                           "x-ratelimit-reset": str(math.ceil(self._clock() + held)),
                           "x-ratelimit-resource": rate_limit_resource(path)})
        else:
            answer["retry-after"] = str(max(1, math.ceil(held)))
        self._rate_limited = answer
        self._last_status = 403
        message = PRIMARY_HELD_MESSAGE if primary else HELD_MESSAGE
        return 403, answer, json.dumps({"message": message}).encode()

    @staticmethod
    def _within(policy: RetryPolicy, attempt: int, waited: float, delay: float) -> bool:
        return (
            attempt < policy.max_attempts
            and delay <= policy.max_single_wait
            and waited + delay <= policy.max_total_wait
        )

    def _backoff(self, attempt: int) -> float:
        # Exponential with "equal jitter": half fixed, half random, so clients spread out.
        cap = min(self._policy.max_backoff, self._policy.base_delay * 2 ** (attempt - 1))
        return cap / 2 + self._rand() * cap / 2

    def _delay(self, reason: str, headers: Mapping[str, str], attempt: int) -> float:
        now = self._clock()
        retry_after = headers.get("retry-after")
        if retry_after is not None:
            seconds = _retry_after_seconds(retry_after, now)
            if seconds is not None:
                return seconds + self._rand()  # a little jitter past the server's hint
        if headers.get("x-ratelimit-remaining") == "0":
            try:
                reset = float(headers.get("x-ratelimit-reset") or "")
            except ValueError:
                reset = None
            if reset is not None:
                return max(0.0, reset - now) + 1.0 + self._rand()
        if reason != "server_error":
            # A rate limit (403 or 429) with neither retry-after nor the reset of a spent
            # primary limit: GitHub says to wait at least a minute, then exponentially longer.
            # (A spent limit without its reset was asked again after 0.5, 1, 2 and 4 s.)
            return 60.0 * 2 ** (attempt - 1) + self._rand()
        return self._backoff(attempt)


class InstallationGone(gidgethub.BadRequest):
    """GitHub knows no such installation (404 for a token): the app was uninstalled there.
    A BadRequest of status 410 (Gone), refused for good (`refused_for_good`), and not the 404
    GitHub gave for the token: raised from a request through the installation, that 404 read
    as the resource's own answer ("no config file", "our comment was deleted")."""


def gone_answer(error: BaseException) -> str | None:
    """What GitHub's 410 Gone for an issue (its comments, labels) says: "disabled" when the
    repository's issues are turned off ("Issues are disabled for this repo": the issue is
    there, unserved while they are off), "deleted" for another 410 ("This issue was
    deleted"); None for any other answer, and for the client's own 410 for an installation
    GitHub no longer knows (`InstallationGone`: nothing said about the issue)."""
    if (not isinstance(error, gidgethub.BadRequest) or isinstance(error, InstallationGone)
            or int(error.status_code) != 410):
        return None
    return "disabled" if "disabled" in str(error).lower() else "deleted"


@dataclass
class _CachedToken:
    token: str
    expires_at: float  # epoch seconds
    issued_at: float = 0.0  # epoch seconds (this process's clock when GitHub gave it)


class GitHubClient:
    """One per process. `api()` hands out gidgethub APIs; they share session, tokens, caches."""

    def __init__(
        self,
        settings: Settings,
        session: aiohttp.ClientSession | None = None,
        *,
        policy: RetryPolicy | None = None,
        sleep: SleepFn = asyncio.sleep,
        rand: Callable[[], float] = random.random,
        clock: Callable[[], float] = time.time,
        etag_entries: int = ETAG_CACHE_TOTAL,
    ) -> None:
        self.settings = settings
        self.policy = policy or RetryPolicy()
        self._session = session
        self._owns_session = session is None
        self._sleep = sleep
        self._rand = rand
        self._clock = clock
        self._jwt: tuple[str, float] | None = None  # (token, exp)
        self._tokens: dict[int, _CachedToken] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._responses = LRUCache(etag_entries)  # every ETag cache's entries, one bound
        # full name (lower case) -> (installation id or None: not installed, read at)
        self._repo_installations = LRUCache(REPO_INSTALLATION_CACHE_SIZE)
        # installation id -> (GitHub's 403 for its token, when it was given): `SUSPENDED_REFUSAL_TTL`
        self._refused: dict[int, tuple[gidgethub.BadRequest, float]] = {}
        # credentials key (installation id, "app", "token", ...) -> when GitHub's secondary
        # rate limit on them ends (RetryingGitHubAPI._hold)
        self._holds: dict[object, float] = {}
        # (credentials key, resource) -> (requests left, reset) as GitHub last said
        # (RetryingGitHubAPI.rate_left)
        self._left: dict[tuple[object, str], tuple[int, float]] = {}
        self.token_refreshes = 0  # counted for tests and /metrics

    # ------------------------------------------------------------------ plumbing
    def _get_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
            self._owns_session = True
        return self._session

    def _cache(self, key: object) -> _CacheView:
        return _CacheView(self._responses, key)

    @property
    def cached_responses(self) -> int:
        """Responses held for conditional requests, over every installation (bounded)."""
        return len(self._responses)

    def _make_api(
        self,
        credentials: Credentials | None,
        cache_key: object,
        on_unauthorized: Callable[[str | None], None] | None = None,
        policy: RetryPolicy | None = None,
    ) -> RetryingGitHubAPI:
        return RetryingGitHubAPI(
            self._get_session(),
            USER_AGENT,
            base_url=self.settings.api_url,
            cache=self._cache(cache_key),
            credentials=credentials,
            policy=policy or self.policy,
            sleep=self._sleep,
            rand=self._rand,
            clock=self._clock,
            on_unauthorized=on_unauthorized,
            holds=self._holds,
            hold_key=cache_key,
            left=self._left,
        )

    async def close(self) -> None:
        if self._owns_session and self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    # ------------------------------------------------------------------ app JWT
    def _private_key(self) -> str:
        return unescape_pem(self.settings.private_key or "")

    def app_jwt(self) -> str:
        """A JWT for /app routes, reused while it has more than two minutes left."""
        if not self.settings.has_app_credentials:
            raise RuntimeError("GitHub App credentials (GITHUB_APP_ID, GITHUB_PRIVATE_KEY) are not set")
        now = self._clock()
        if self._jwt is not None and self._jwt[1] - now > JWT_REUSE_MARGIN:
            return self._jwt[0]
        app_id = str(self.settings.app_id)
        issued = int(now) - JWT_BACKDATE
        expires = int(now) + JWT_AHEAD
        payload = {"iat": issued, "exp": expires, "iss": app_id}  # PyJWT requires a string
        token = pyjwt.encode(payload, self._private_key(), algorithm="RS256")
        register_secret(token, expires_in=expires - now)  # scrubbed from the logs while it lives
        self._jwt = (token, float(expires))
        return token

    async def app_api(self) -> RetryingGitHubAPI:
        """An API authenticated as the app (JWT): /app/... routes only."""
        self.app_jwt()  # fail early and clearly without credentials

        async def credentials() -> tuple[str, str]:
            return "jwt", self.app_jwt()

        return self._make_api(credentials, "app")

    # ------------------------------------------------------------------ installation tokens
    def _fresh(self, cached: _CachedToken | None) -> bool:
        return cached is not None and cached.expires_at - self._clock() > TOKEN_REFRESH_MARGIN

    def _refusal(self, iid: int) -> gidgethub.BadRequest | None:
        """GitHub's recent 403 for the installation's token (suspended), None when there is
        none or it is older than SUSPENDED_REFUSAL_TTL (then asked again)."""
        refused = self._refused.get(iid)
        if refused is None:
            return None
        if self._clock() - refused[1] >= SUSPENDED_REFUSAL_TTL:
            del self._refused[iid]
            return None
        return refused[0]

    def _refused_again(self, iid: int, exc: gidgethub.BadRequest) -> gidgethub.BadRequest:
        return gidgethub.BadRequest(
            http.HTTPStatus.FORBIDDEN,
            f"installation {iid}: GitHub refused its token (403, suspended): {exc}",
            headers=getattr(exc, "headers", None))

    def forget_refusal(self, installation_id: int) -> None:
        """The installation was unsuspended (or installed again, or its permissions
        accepted): its next request asks GitHub for a token again."""
        self._refused.pop(int(installation_id), None)

    async def installation_token(self, installation_id: int) -> str:
        iid = int(installation_id)
        cached = self._tokens.get(iid)
        if cached is not None and self._fresh(cached):
            return cached.token
        if (refused := self._refusal(iid)) is not None:
            raise self._refused_again(iid, refused)
        lock = self._locks.setdefault(iid, asyncio.Lock())
        async with lock:
            cached = self._tokens.get(iid)  # another task may have refreshed it meanwhile
            if cached is not None and self._fresh(cached):
                return cached.token
            if (refused := self._refusal(iid)) is not None:  # refused while this task waited
                raise self._refused_again(iid, refused)
            app = await self.app_api()
            try:
                data = await app.post(
                    "/app/installations/{installation_id}/access_tokens",
                    {"installation_id": iid},
                    data=b"",
                )
            except gidgethub.BadRequest as exc:
                if int(exc.status_code) == 403 and rate_limit_wait(exc) is None:
                    # Suspended (a rate limit's 403 is not: its wait is the caller's)
                    self._refused[iid] = (exc, self._clock())
                if int(exc.status_code) != 404:
                    raise
                # Uninstalled: nothing of it is worth keeping, and every repository mapped
                # to it is looked up again (a reinstall has a new id).
                self.forget_installation(iid)
                raise InstallationGone(
                    http.HTTPStatus.GONE,
                    f"installation {iid} is gone (GitHub answers 404 for its token: uninstalled)",
                    headers=exc.headers) from exc
            expires = parse_datetime(data.get("expires_at"))
            expires_at = expires.timestamp() if expires else self._clock() + 3600
            register_secret(data["token"], expires_in=expires_at - self._clock())  # out of the logs
            self._tokens[iid] = _CachedToken(data["token"], expires_at, self._clock())
            self.token_refreshes += 1
            log.info("installation token refreshed for installation %d (expires %s)", iid, data.get("expires_at"))
            return data["token"]

    def invalidate_token(self, installation_id: int, token: str | None = None) -> None:
        """Drop the installation's token; `token`: only if it is still that one (a 401 for a
        token already refreshed by another request leaves the new one)."""
        cached = self._tokens.get(int(installation_id))
        if cached is not None and (token is None or cached.token == token):
            del self._tokens[int(installation_id)]

    def drop_token_issued_before(self, installation_id: int, moment: float) -> bool:
        """Drop the installation's token if GitHub gave it before `moment` (epoch seconds): a
        token holds the permissions of its issue, and the installation accepted new ones
        since (in another process, whose `invalidate_token` this one did not hear: ops71).
        True when one was dropped."""
        cached = self._tokens.get(int(installation_id))
        if cached is None or cached.issued_at >= moment:
            return False
        del self._tokens[int(installation_id)]
        return True

    def forget_installation(self, installation_id: int) -> None:
        """The installation is gone (uninstalled): its token, its ETag cache and every
        repository mapped to it are dropped."""
        iid = int(installation_id)
        self._tokens.pop(iid, None)
        self._cache(iid).clear()  # (a scan of the one LRU: rare)
        lock = self._locks.get(iid)
        if lock is not None and not lock.locked():
            del self._locks[iid]
        for key in [k for k, (mapped, _) in self._repo_installations.items() if mapped == iid]:
            del self._repo_installations[key]

    # ------------------------------------------------------------------ public API
    async def api(self, installation_id: int | None = None) -> RetryingGitHubAPI:
        """Installation token if an id is given and app credentials exist, else GITHUB_TOKEN,
        else anonymous. The token is fetched (and refreshed) per request, so a held API
        object never goes stale."""
        if installation_id is not None and self.settings.has_app_credentials:
            iid = int(installation_id)

            async def installation_credentials() -> tuple[str, str]:
                return "token", await self.installation_token(iid)

            return self._make_api(
                installation_credentials, iid, on_unauthorized=lambda refused: self.invalidate_token(iid, refused)
            )
        if self.settings.token:
            token = self.settings.token

            async def static_token() -> tuple[str, str]:
                return "token", token

            return self._make_api(static_token, "token")
        return self._make_api(None, "anonymous")

    async def check_access(self) -> None:
        """One request before a command's work, not retried: GitHub unreachable (aiohttp's
        ClientConnectorError) or refusing the credentials (gidgethub's BadRequest, 401) raises
        at once instead of after a run of retries. Any other answer (a GitHub Enterprise
        without /rate_limit answers 404) lets the work start and meet it with its retries."""
        once = RetryPolicy(max_attempts=1)
        if self.settings.has_app_credentials:
            async def app_credentials() -> tuple[str, str]:
                return "jwt", self.app_jwt()

            gh, path = self._make_api(app_credentials, "check", policy=once), "/app"
        else:
            token = self.settings.token

            async def static_token() -> tuple[str, str]:
                return "token", token or ""

            gh = self._make_api(static_token if token else None, "check", policy=once)
            path = "/rate_limit"  # costs no rate limit
        try:
            await gh.getitem(path)
        except gidgethub.BadRequest as exc:
            if exc.status_code == 401:
                raise
        except gidgethub.GitHubException:
            pass

    async def graphql(
        self, query: str, installation_id: int | None = None, **variables: Any
    ) -> dict[str, Any]:
        gh = await self.api(installation_id)
        result: dict[str, Any] = await gh.graphql(
            query, endpoint=self.settings.graphql_url, **variables
        )
        return result

    async def repository_role(self, installation_id: int | None, full_name: str, login: str) -> str:
        """The person's role on the repository (`admin`, `maintain`, `write`, `triage`, `read`;
        `none` when GitHub knows no access: 404), from the collaborator permission API (the
        app's Metadata read permission suffices). `role_name` where GitHub gives it, else the
        legacy `permission` (which reads maintain as write and triage as read)."""
        owner, _, name = full_name.partition("/")
        gh = await self.api(installation_id)
        try:
            data = await gh.getitem("/repos/{owner}/{name}/collaborators/{login}/permission",
                                    {"owner": owner, "name": name, "login": login})
        except gidgethub.BadRequest as exc:
            if exc.status_code == 404:
                return "none"
            raise
        return str(data.get("role_name") or data.get("permission") or "none").lower()

    async def installation_for_repo(self, full_name: str, *, refresh: bool = False) -> int | None:
        """The app's installation id on a repository, None when not installed. Cached for
        REPO_INSTALLATION_TTL (bounded in size); `refresh`: asked of GitHub again, as after
        GitHub refused the installation it gave (uninstalled and installed again: a new id)."""
        key = full_name.lower()
        cached = self._repo_installations.get(key)
        if cached is not None and not refresh and self._clock() - cached[1] < REPO_INSTALLATION_TTL:
            return cached[0]
        self._repo_installations.pop(key, None)
        if not self.settings.has_app_credentials:
            return None
        owner, _, name = full_name.partition("/")
        app = await self.app_api()
        try:
            data = await app.getitem("/repos/{owner}/{name}/installation", {"owner": owner, "name": name})
        except gidgethub.BadRequest as exc:
            if exc.status_code == 404:
                return None
            raise
        self._repo_installations[key] = (int(data["id"]), self._clock())
        return int(data["id"])
