"""The in-process fake GitHub server shared by all tests (fixture `fake_github`).

One fake for the whole suite: a real aiohttp server on 127.0.0.1 (random port) that speaks
enough of GitHub's REST and GraphQL API for the app's own client (`bot.github.client.GitHubClient`)
to run unchanged against it. Tests point the client at it through `GITHUB_API_URL`
(fixture `app_settings`).

Fixtures
--------
- ``fake_github`` (function scope): a started :class:`FakeGitHub`; ``fake_github.url`` is
  its base URL.
- ``app_settings(settings, fake_github)``: the ``settings`` fixture with ``app_id``, a
  generated RSA private key, ``api_url = fake_github.url`` and ``dry_run = False``. The fake
  then verifies app JWTs against the matching public key.
- ``github_client(app_settings)``: a ``GitHubClient`` on those settings whose retry sleep
  returns at once (no test waits for a backoff).
- ``app_ctx(app_settings, github_client)``: an ``AppContext`` with that client.

Recording
---------
``fake.calls`` lists every request as a :class:`Call` (method, path, query, headers, json,
status, auth, token, installation_id, jwt_claims). ``fake.requests(method, path_regex)`` filters
them. ``auth`` is ``"jwt"`` (app JWT), ``"installation"`` (an installation token the fake
issued), ``"token"`` (another bearer token, e.g. GITHUB_TOKEN) or ``None`` (anonymous).

State model (all public attributes; repository names are matched case-insensitively)
-------------------------------------------------------------------------------------
- ``add_installation(id, account, repos=[...], account_type="Organization")``;
  ``fake.installations``; ``suspend_installation(id)``; ``remove_installation(id)`` (uninstalled:
  its tokens are revoked). ``fake.tokens`` maps issued tokens to
  :class:`Token`; ``fake.token_ttl`` (seconds, default 3600) sets ``expires_at`` of new ones.
  An installation's ``permissions`` (issues, pull_requests, discussions, ...; drop one to
  withhold it) are copied into each token issued: GraphQL answers a repository's
  ``issues`` / ``pullRequests`` / ``discussions`` / ``discussion`` null with FORBIDDEN to a
  token without the permission, as GitHub does.
- ``add_issue(repo, number, title=..., body=..., user=..., pull_request=False, ...)`` ->
  the stored issue dict; ``issue(repo, n)``; ``add_comment(repo, n, body, user=...)``;
  ``comments_of(repo, n)``; ``fake.comments`` (id -> comment dict; each carries
  ``_repo``/``_number`` bookkeeping keys that are not served).
- ``set_file(repo, path, text)``: served base64 by the contents API (folders list too), and
  listed by the git trees API (``GET /repos/{o}/{r}/git/trees/{ref}``, any ref: one branch;
  ``?recursive=1`` walks every folder, in git's order). ``fake.tree_entry_limit`` (GitHub's
  100,000 by default) cuts a listing there and answers ``truncated: true``.
- ``add_reaction(repo, ("comment", id) | ("issue", number), content, user)``; ``fake.reactions``.
- ``repo_json(full_name)``, ``user(login)``: the JSON shapes the fake serves;
  ``fake.private_repos`` (lower-case names) are served ``private: true``.
- ``set_permission(repo, login, role)``: the person's role on the repository (``admin``,
  ``maintain``, ``write``, ``triage``, ``read``), served by the collaborator permission API
  (``permission`` the legacy base role, ``role_name`` the role); anyone else gets 404.
- ``add_delivery(event, action=..., status_code=..., ...)``: app hook deliveries;
  ``fake.redeliveries`` lists delivery ids whose redelivery was requested.
- ``fake.graphql_handler = fn(query, variables) -> dict`` (sync or async): answers
  ``POST /graphql``. Return the whole response body (``{"data": ...}`` or
  ``{"errors": [...]}``); any other dict is wrapped as ``{"data": it}``.
- ``fake.allow_anonymous`` (default True): when False, non-app routes need a token.
- ``fake.user_token`` (default ``"ghp_test_user_token"``) is accepted as GITHUB_TOKEN.

Routes served: GET /app, GET /app/installations, GET /app/installations/{id},
POST /app/installations/{id}/access_tokens, GET /repos/{o}/{r}/installation,
GET /installation/repositories, GET /repos/{o}/{r}, GET/PATCH /repos/{o}/{r}/issues/{n},
GET/POST /repos/{o}/{r}/issues/{n}/comments, GET/PATCH/DELETE
/repos/{o}/{r}/issues/comments/{id}, GET/POST /repos/{o}/{r}/issues/{n}/labels, DELETE
/repos/{o}/{r}/issues/{n}/labels/{name} (names case-insensitive, as GitHub's; ``fake.repo_labels``),
GET /repos/{o}/{r}/labels/{name} and POST /repos/{o}/{r}/labels (colour and description:
``fake.label_info``; a label an issue's add created has GitHub's grey, no description);
the issue and label answers give each label its ``id``, kept by ``fake.rename_label(repo, old,
new)`` (a maintainer renaming a label in the repository's settings: every issue shows the new
name, the old one answers 404),
GET/POST reactions of issues and comments,
GET /repos/{o}/{r}/contents/{path}, GET /repos/{o}/{r}/git/trees/{ref}, GET /repos/{o}/{r}/collaborators/{login}/permission,
GET /app/hook/deliveries (+ /{id}), POST
/app/hook/deliveries/{id}/attempts, POST /graphql. Lists paginate (``per_page``, ``page``,
``Link`` header). GET answers carry an ``ETag``; a matching ``If-None-Match`` gets 304.
A comment body over 65,536 characters is refused (422), as GitHub does, on create and edit.

Extension API (for other helpers' tests; keep additions here small)
-------------------------------------------------------------------
- ``fake.route(method, path_regex)(handler)``: registers a route checked BEFORE the built-in
  ones. ``handler(fake, request, match, body)`` may be sync or async and returns a
  ``web.Response``, or a JSON-able value (sent as 200), or ``(status, value)``.
  ``match`` is the ``re.Match`` of the path (use named groups).
- ``fake.fail_next(method, path_regex, status, times=1, headers=None, body=None)``: the next
  ``times`` matching requests get ``status`` (``method`` ``"*"`` matches any). Use
  ``fake.secondary_rate_limit(...)`` / ``fake.rate_limited(...)`` for the usual shapes, and
  ``fake.disconnect_next(method, path_regex)`` to drop the connection without an answer.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import inspect
import itertools
import json
import re
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any
from urllib.parse import quote, unquote

import jwt as pyjwt
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

# Routes that take the app JWT (and nothing else); every other route takes a token.
APP_ROUTE = re.compile(r"/app(?:/.*)?$|/(?:repos/[^/]+/[^/]+|orgs/[^/]+|users/[^/]+)/installation$")
# An issue's own routes (the issue, its comments, labels, reactions)
ISSUE_PATH = re.compile(r"/repos/(?P<repo>[^/]+/[^/]+)/issues/(?P<number>\d+)(?:/.*)?$")
COMMENT_BODY_LIMIT = 65536  # characters GitHub takes in an issue comment's body
SECONDARY_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
)


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any
    status: int = 0
    auth: str | None = None  # "jwt" | "installation" | "token" | None
    token: str | None = None
    installation_id: int | None = None
    jwt_claims: dict[str, Any] | None = None


@dataclass
class Token:
    token: str
    installation_id: int
    expires_at: datetime
    # the installation's permissions when the token was issued (GitHub's tokens keep them:
    # permissions accepted later need a new token)
    permissions: dict[str, str] | None = None


@dataclass
class _Failure:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    headers: dict[str, str]
    body: Any


@dataclass
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Callable[..., Any]


@dataclass
class _Auth:
    kind: str | None
    token: str | None = None
    installation_id: int | None = None
    claims: dict[str, Any] | None = None
    error: str | None = None


class FakeGitHub:
    def __init__(self) -> None:
        self.calls: list[Call] = []
        self.installations: dict[int, dict[str, Any]] = {}
        self.tokens: dict[str, Token] = {}
        self.token_ttl: float = 3600
        # GitHub's clock ahead of the machine's by this many seconds: tokens are issued,
        # expire and JWTs are checked by it (a test moves it with the app's, `Clock`)
        self.skew: float = 0.0
        self.issues: dict[tuple[str, int], dict[str, Any]] = {}
        self.comments: dict[int, dict[str, Any]] = {}
        self.files: dict[tuple[str, str], str | bytes] = {}
        self.tree_entry_limit = 100_000  # entries of a git tree listing; past it, truncated
        # installation id (None: a plain token or anonymous) -> the REST (core) requests it has
        # left: its answers say so (`x-ratelimit-remaining`, `x-ratelimit-resource: core`),
        # counted down by each answer but a 304 (GitHub's count). Absent: 4999, never counted.
        self.core_left: dict[int | None, int] = {}
        self.deliveries: list[dict[str, Any]] = []
        self.redeliveries: list[int] = []
        self.reactions: dict[tuple[str, Any], list[dict[str, Any]]] = {}
        # the repository's labels by repository key (names as created; GitHub matches them
        # case-insensitively)
        self.repo_labels: dict[str, list[str]] = {}
        # each repository label's colour and description, by repository key and folded name
        self.label_info: dict[str, dict[str, dict[str, Any]]] = {}
        # each repository label's id, by repository key and folded name (fake.label_id)
        self.label_ids: dict[str, dict[str, int]] = {}
        self._label_ids = itertools.count(7_000_001)  # apart from other ids: those stay as they were
        self.permissions: dict[tuple[str, str], str] = {}
        self.private_repos: set[str] = set()  # lower-case names GitHub calls private
        # lower-case names whose issues are turned off: their issues' routes answer 410
        # "Issues are disabled for this repo" (pull requests still served), as GitHub does
        self.issues_disabled: set[str] = set()
        self.graphql_handler: Callable[[str, dict[str, Any]], Any] | None = None
        self.allow_anonymous = True
        self.user_token = "ghp_test_user_token"
        self.app_id: str | None = None
        self.app_slug = "rltracker"
        self.public_key: Any = None  # set by app_settings: JWTs are then verified
        self.url = ""
        self._ids = itertools.count(1_000_001)
        self._failures: list[_Failure] = []
        self._routes: list[_Route] = []
        self._server: TestServer | None = None
        self.app = web.Application(client_max_size=64 * 1024 * 1024)
        self.app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._builtin = self._builtin_routes()

    # ---------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        # No access log: it would print request lines (with query strings) into caplog.
        self._server = TestServer(self.app, host="127.0.0.1", port=0)
        await self._server.start_server(access_log=None)
        self.url = str(self._server.make_url("")).rstrip("/")

    async def close(self) -> None:
        if self._server is not None:
            await self._server.close()

    def now(self) -> datetime:
        """GitHub's clock: the machine's, moved by `skew`."""
        return _now() + timedelta(seconds=self.skew)

    # ---------------------------------------------------------------- extension API
    def route(self, method: str, path_regex: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(handler: Callable[..., Any]) -> Callable[..., Any]:
            self._routes.append(_Route(method.upper(), re.compile(path_regex), handler))
            return handler

        return register

    def fail_next(
        self,
        method: str,
        path_regex: str,
        status: int,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: Any = None,
    ) -> None:
        if body is None:
            body = {"message": f"fake failure {status}"}
        self._failures.append(
            _Failure(method.upper(), re.compile(path_regex), status, times, dict(headers or {}), body)
        )

    def disconnect_next(self, method: str, path_regex: str, times: int = 1) -> None:
        """The next `times` matching requests get their connection closed with no answer
        (the client sees ServerDisconnectedError): was the request processed or not?"""
        self.fail_next(method, path_regex, 0, times)

    def secondary_rate_limit(
        self, method: str, path_regex: str, times: int = 1, retry_after: int | None = 60
    ) -> None:
        headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
        self.fail_next(method, path_regex, 403, times, headers, {"message": SECONDARY_LIMIT_MESSAGE})

    def rate_limited(self, method: str, path_regex: str, reset_in: int = 30, times: int = 1,
                     resource: str = "core") -> None:
        """A primary rate limit: 403 with x-ratelimit-remaining 0 and a reset time (by
        GitHub's clock, `now`), of `resource` (`x-ratelimit-resource`: core, graphql, search)."""
        headers = self.limit_spent(reset_in, resource)
        self.fail_next(method, path_regex, 403, times, headers, {"message": "API rate limit exceeded"})

    def limit_spent(self, reset_in: int = 30, resource: str = "core") -> dict[str, str]:
        """GitHub's headers on an answer that spent the last request of a primary limit (the
        request taken, or refused), reset `reset_in` seconds from GitHub's now."""
        return {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "0",
                "x-ratelimit-reset": str(int(self.now().timestamp()) + reset_in),
                "x-ratelimit-used": "5000", "x-ratelimit-resource": resource}

    def requests(self, method: str | None = None, path_regex: str | None = None) -> list[Call]:
        pattern = re.compile(path_regex) if path_regex else None
        return [
            c
            for c in self.calls
            if (method is None or c.method == method.upper())
            and (pattern is None or pattern.search(c.path))
        ]

    # ---------------------------------------------------------------- state helpers
    def next_id(self) -> int:
        return next(self._ids)

    def user(self, login: str, type_: str | None = None) -> dict[str, Any]:
        kind = type_ or ("Bot" if login.endswith("[bot]") else "User")
        uid = int(hashlib.sha1(login.encode()).hexdigest()[:7], 16)
        return {"login": login, "id": uid, "node_id": f"U_{uid}", "type": kind, "site_admin": False}

    def add_installation(
        self,
        installation_id: int,
        account: str,
        repos: list[str] | None = None,
        account_type: str = "Organization",
    ) -> dict[str, Any]:
        inst = {
            "id": installation_id,
            "account": {**self.user(account), "type": account_type},
            "app_id": int(self.app_id) if self.app_id and self.app_id.isdigit() else 1,
            "app_slug": self.app_slug,
            "target_type": account_type,
            "repository_selection": "selected",
            "permissions": {"issues": "write", "metadata": "read", "contents": "read",
                            "pull_requests": "read", "discussions": "write"},
            "events": ["issues", "issue_comment"],
            "suspended_at": None,
            "repositories": list(repos or []),
        }
        self.installations[installation_id] = inst
        return inst

    def remove_installation(self, installation_id: int) -> None:
        """The app uninstalled: the installation is gone (404 for it) and GitHub revokes its
        tokens (401 "Bad credentials" from then on)."""
        self.installations.pop(installation_id, None)
        for value in [v for v, t in self.tokens.items() if t.installation_id == installation_id]:
            del self.tokens[value]

    def suspend_installation(self, installation_id: int) -> None:
        self.installations[installation_id]["suspended_at"] = _iso(_now())

    def repo_json(self, full_name: str) -> dict[str, Any]:
        owner, _, name = full_name.partition("/")
        rid = int(hashlib.sha1(full_name.lower().encode()).hexdigest()[:8], 16)
        return {
            "id": rid,
            "node_id": f"R_{rid}",
            "name": name,
            "full_name": full_name,
            "private": full_name.lower() in self.private_repos,
            "visibility": "private" if full_name.lower() in self.private_repos else "public",
            "owner": self.user(owner),
            "html_url": f"https://github.com/{full_name}",
            "default_branch": "main",
        }

    def _repo_key(self, repo: str) -> str:
        return repo.lower()

    def set_permission(self, repo: str, login: str, role: str) -> None:
        self.permissions[(self._repo_key(repo), login.lower())] = role

    def add_issue(
        self,
        repo: str,
        number: int,
        title: str = "An issue",
        body: str | None = "",
        user: str = "octocat",
        *,
        pull_request: bool = False,
        state: str = "open",
        labels: list[str] | None = None,
        author_association: str = "NONE",
        created_at: str | None = None,
    ) -> dict[str, Any]:
        iid = self.next_id()
        now = created_at or _iso(_now())
        known = self.repo_labels.setdefault(self._repo_key(repo), [])
        known += [name for name in labels or [] if name.casefold() not in {k.casefold() for k in known}]
        issue: dict[str, Any] = {
            "id": iid,
            "node_id": f"I_{iid}",
            "number": number,
            "title": title,
            "body": body,
            "user": self.user(user),
            "labels": [{"name": name} for name in labels or []],
            "state": state,
            "state_reason": None,
            "locked": False,
            "assignees": [],
            "comments": 0,
            "created_at": now,
            "updated_at": now,
            "closed_at": None,
            "closed_by": None,
            "author_association": author_association,
            "html_url": f"https://github.com/{repo}/{'pull' if pull_request else 'issues'}/{number}",
            "url": f"{self.url}/repos/{repo}/issues/{number}",
        }
        if pull_request:
            issue["pull_request"] = {"url": f"{self.url}/repos/{repo}/pulls/{number}"}
        self.issues[(self._repo_key(repo), number)] = issue
        return issue

    def issue(self, repo: str, number: int) -> dict[str, Any] | None:
        return self.issues.get((self._repo_key(repo), number))

    def add_comment(
        self,
        repo: str,
        number: int,
        body: str,
        user: str = "octocat",
        user_type: str | None = None,
        author_association: str = "NONE",
    ) -> dict[str, Any]:
        cid = self.next_id()
        now = _iso(_now())
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "body": body,
            "user": self.user(user, user_type),
            "created_at": now,
            "updated_at": now,
            "author_association": author_association,
            "html_url": f"https://github.com/{repo}/issues/{number}#issuecomment-{cid}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
            "_repo": self._repo_key(repo),
            "_number": number,
        }
        self.comments[cid] = comment
        issue = self.issue(repo, number)
        if issue is not None:
            issue["comments"] += 1
        return comment

    def comments_of(self, repo: str, number: int) -> list[dict[str, Any]]:
        key = self._repo_key(repo)
        return [c for c in self.comments.values() if c["_repo"] == key and c["_number"] == number]

    def set_file(self, repo: str, path: str, text: str | bytes) -> None:
        """`text` is served as UTF-8; bytes as they are (a file in another encoding)."""
        self.files[(self._repo_key(repo), path.strip("/"))] = text

    def add_delivery(
        self,
        event: str,
        action: str | None = None,
        status_code: int = 200,
        delivered_at: str | None = None,
        redelivery: bool = False,
        guid: str | None = None,
    ) -> dict[str, Any]:
        delivery = {
            "id": self.next_id(),
            "guid": guid or secrets.token_hex(16),
            "delivered_at": delivered_at or _iso(_now()),
            "redelivery": redelivery,
            "duration": 0.1,
            "status": "OK" if status_code < 400 else f"Invalid HTTP Response: {status_code}",
            "status_code": status_code,
            "event": event,
            "action": action,
            "installation_id": None,
            "repository_id": None,
        }
        self.deliveries.append(delivery)
        return delivery

    # ---------------------------------------------------------------- HTTP plumbing
    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        path = "/" + request.match_info["tail"]
        call = Call(
            method=request.method,
            path=path,
            query=dict(request.query),
            headers=dict(request.headers),
            json=body,
        )
        self.calls.append(call)
        auth = self._authenticate(request)
        call.auth, call.token = auth.kind, auth.token
        call.installation_id, call.jwt_claims = auth.installation_id, auth.claims
        response = await self._respond(request, path, body, auth)
        call.status = response.status
        if auth.installation_id in self.core_left and not path.endswith("/graphql") and not APP_ROUTE.match(path):
            if response.status != 304:
                self.core_left[auth.installation_id] = max(0, self.core_left[auth.installation_id] - 1)
            response.headers["x-ratelimit-remaining"] = str(self.core_left[auth.installation_id])
            response.headers["x-ratelimit-resource"] = "core"
        return response

    async def _respond(
        self, request: web.Request, path: str, body: Any, auth: _Auth
    ) -> web.StreamResponse:
        for failure in self._failures:
            if failure.times > 0 and failure.method in ("*", request.method) and failure.pattern.search(path):
                failure.times -= 1
                if failure.status == 0:
                    assert request.transport is not None
                    request.transport.close()
                    return web.Response(status=499)  # never reaches the client
                return web.json_response(failure.body, status=failure.status, headers=failure.headers)
        if auth.error:
            return self._error(401, auth.error)
        is_app_route = bool(APP_ROUTE.match(path))
        if is_app_route and auth.kind != "jwt":
            return self._error(401, "A JSON web token could not be decoded")
        if not is_app_route and auth.kind == "jwt":
            return self._error(401, "'Authorization' header is using a JWT on a non-app route")
        if not is_app_route and auth.kind is None and not self.allow_anonymous:
            return self._error(401, "Requires authentication")
        if (off := ISSUE_PATH.match(path)) and off["repo"].lower() in self.issues_disabled and not (
                (self.issue(off["repo"], int(off["number"])) or {}).get("pull_request")):
            return self._error(410, "Issues are disabled for this repo")
        for route in itertools.chain(self._routes, self._builtin):
            if route.method not in ("*", request.method):
                continue
            match = route.pattern.fullmatch(path)
            if match is None:
                continue
            result = route.handler(self, request, match, body) if route in self._routes else route.handler(request, match, body, auth)
            if inspect.isawaitable(result):
                result = await result
            return self._to_response(request, result)
        return self._error(404, "Not Found")

    def _to_response(self, request: web.Request, result: Any) -> web.StreamResponse:
        if isinstance(result, web.StreamResponse):
            return result
        status = 200
        headers: dict[str, str] = {}
        if isinstance(result, tuple) and len(result) == 3:
            status, result, headers = result
        elif isinstance(result, tuple) and len(result) == 2:
            status, result = result
        headers = {**self._rate_headers(), **headers}
        if status == 204:
            return web.Response(status=204, headers=headers)
        text = json.dumps(result)
        if request.method == "GET" and status == 200:
            etag = '"' + hashlib.sha1(text.encode()).hexdigest() + '"'
            headers["ETag"] = etag
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers=headers)
        return web.Response(text=text, status=status, content_type="application/json", headers=headers)

    def _rate_headers(self) -> dict[str, str]:
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": "4999",
            "x-ratelimit-reset": str(int(_now().timestamp()) + 3600),
            "x-ratelimit-used": "1",
        }

    def _error(self, status: int, message: str) -> web.Response:
        return web.json_response(
            {"message": message, "documentation_url": "https://docs.github.com/rest"},
            status=status,
            headers=self._rate_headers(),
        )

    def _authenticate(self, request: web.Request) -> _Auth:
        header = request.headers.get("Authorization", "")
        if not header:
            return _Auth(None)
        scheme, _, value = header.partition(" ")
        scheme = scheme.lower()
        value = value.strip()
        if scheme == "bearer" and value.count(".") == 2:
            return self._check_jwt(value)
        if scheme in ("token", "bearer"):
            tok = self.tokens.get(value)
            if tok is not None:
                if tok.expires_at <= self.now():
                    return _Auth("installation", value, tok.installation_id, error="Bad credentials: token expired")
                return _Auth("installation", value, tok.installation_id)
            if value == self.user_token:
                return _Auth("token", value)
            return _Auth("token", value, error="Bad credentials")
        return _Auth(None, error="Unknown Authorization scheme")

    def _check_jwt(self, token: str) -> _Auth:
        try:
            if self.public_key is None:
                claims = pyjwt.decode(token, options={"verify_signature": False})
            else:  # (its times are checked below, by GitHub's clock)
                claims = pyjwt.decode(token, self.public_key, algorithms=["RS256"], leeway=0,
                                      options={"verify_exp": False, "verify_iat": False,
                                               "verify_nbf": False})
        except pyjwt.PyJWTError as exc:
            return _Auth("jwt", token, error=f"A JSON web token could not be decoded: {exc}")
        auth = _Auth("jwt", token, claims=claims)
        now = int(self.now().timestamp())
        if self.app_id is not None and str(claims.get("iss")) != str(self.app_id):
            auth.error = "JWT issuer is not this app"
        elif int(claims.get("exp", 0)) <= now:
            auth.error = "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
        elif int(claims.get("exp", 0)) - int(claims.get("iat", 0)) > 600:
            auth.error = "'Expiration time' claim ('exp') is too far in the future"
        elif int(claims.get("iat", 0)) > now + 1:
            auth.error = "'Issued at' claim ('iat') must be an Integer representing a time in the past"
        return auth

    # ---------------------------------------------------------------- built-in routes
    def _builtin_routes(self) -> list[_Route]:
        repo = r"/repos/(?P<owner>[^/]+)/(?P<name>[^/]+)"
        table: list[tuple[str, str, Callable[..., Any]]] = [
            ("GET", r"/app", self._get_app),
            ("GET", r"/app/installations", self._list_installations),
            ("GET", r"/app/installations/(?P<id>\d+)", self._get_installation),
            ("POST", r"/app/installations/(?P<id>\d+)/access_tokens", self._create_token),
            ("GET", r"/app/hook/deliveries", self._list_deliveries),
            ("GET", r"/app/hook/deliveries/(?P<id>\d+)", self._get_delivery),
            ("POST", r"/app/hook/deliveries/(?P<id>\d+)/attempts", self._redeliver),
            ("GET", repo + r"/installation", self._repo_installation),
            ("GET", r"/installation/repositories", self._installation_repos),
            ("GET", repo, self._get_repo),
            ("GET", repo + r"/issues/comments/(?P<id>\d+)", self._get_comment),
            ("PATCH", repo + r"/issues/comments/(?P<id>\d+)", self._edit_comment),
            ("DELETE", repo + r"/issues/comments/(?P<id>\d+)", self._delete_comment),
            ("GET", repo + r"/issues/comments/(?P<id>\d+)/reactions", self._list_reactions),
            ("POST", repo + r"/issues/comments/(?P<id>\d+)/reactions", self._add_reaction),
            ("GET", repo + r"/issues/(?P<number>\d+)", self._get_issue),
            ("PATCH", repo + r"/issues/(?P<number>\d+)", self._edit_issue),
            ("GET", repo + r"/issues/(?P<number>\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(?P<number>\d+)/comments", self._create_comment),
            ("GET", repo + r"/issues/(?P<number>\d+)/labels", self._list_labels),
            ("POST", repo + r"/issues/(?P<number>\d+)/labels", self._add_labels),
            ("DELETE", repo + r"/issues/(?P<number>\d+)/labels/(?P<label>[^/]+)", self._remove_label),
            ("GET", repo + r"/labels/(?P<label>[^/]+)", self._get_repo_label),
            ("POST", repo + r"/labels", self._create_repo_label),
            ("GET", repo + r"/issues/(?P<number>\d+)/reactions", self._list_reactions),
            ("POST", repo + r"/issues/(?P<number>\d+)/reactions", self._add_reaction),
            ("GET", repo + r"/contents(?:/(?P<path>.*))?", self._get_contents),
            ("GET", repo + r"/git/trees/(?P<ref>.+)", self._get_tree),
            ("GET", repo + r"/collaborators/(?P<login>[^/]+)/permission", self._get_permission),
            ("POST", r"/graphql", self._graphql),
        ]
        return [_Route(m, re.compile(p), h) for m, p, h in table]

    def _paginate(self, request: web.Request, items: list[Any], wrap: str | None = None) -> Any:
        per_page = max(1, min(100, int(request.query.get("per_page", "30"))))
        page = max(1, int(request.query.get("page", "1")))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        last = max(1, -(-len(items) // per_page))
        if page < last:
            base = f"{self.url}{request.path}"
            query = {**request.query, "per_page": str(per_page)}
            links = []
            for rel, number in (("next", page + 1), ("last", last)):
                q = "&".join(f"{k}={quote(str(v))}" for k, v in {**query, "page": str(number)}.items())
                links.append(f'<{base}?{q}>; rel="{rel}"')
            headers["Link"] = ", ".join(links)
        value: Any = {"total_count": len(items), wrap: chunk} if wrap else chunk
        return 200, value, headers

    def _public_installation(self, inst: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in inst.items() if k != "repositories"}

    def _get_app(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        return {"id": int(self.app_id or 1), "slug": self.app_slug, "name": self.app_slug}

    def _list_installations(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        return self._paginate(request, [self._public_installation(i) for i in self.installations.values()])

    def _get_installation(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        inst = self.installations.get(int(match["id"]))
        return self._public_installation(inst) if inst else (404, {"message": "Not Found"})

    def _create_token(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        inst = self.installations.get(int(match["id"]))
        if inst is None:
            return 404, {"message": "Not Found"}
        if inst["suspended_at"]:
            return 403, {"message": "This installation has been suspended"}
        value = "ghs_" + secrets.token_hex(18)
        expires = self.now() + timedelta(seconds=self.token_ttl)
        self.tokens[value] = Token(value, inst["id"], expires, dict(inst["permissions"]))
        return 201, {
            "token": value,
            "expires_at": _iso(expires),
            "permissions": inst["permissions"],
            "repository_selection": inst["repository_selection"],
        }

    def _list_deliveries(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        # GitHub lists newest first and pages with a cursor; page numbers are enough here.
        return self._paginate(request, list(reversed(self.deliveries)))

    def _get_delivery(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        for d in self.deliveries:
            if d["id"] == int(match["id"]):
                return {**d, "request": {"headers": {}, "payload": {}}, "response": {"headers": {}, "payload": ""}}
        return 404, {"message": "Not Found"}

    def _redeliver(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        if not any(d["id"] == int(match["id"]) for d in self.deliveries):
            return 404, {"message": "Not Found"}
        self.redeliveries.append(int(match["id"]))
        return 202, {}

    def _installation_for(self, repo: str) -> dict[str, Any] | None:
        for inst in self.installations.values():
            if any(r.lower() == repo.lower() for r in inst["repositories"]):
                return inst
        return None

    def _repo_installation(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        inst = self._installation_for(f"{match['owner']}/{match['name']}")
        return self._public_installation(inst) if inst else (404, {"message": "Not Found"})

    def _installation_repos(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        if auth.kind != "installation":
            return 403, {"message": "This endpoint needs an installation token"}
        inst = self.installations[auth.installation_id]  # type: ignore[index]
        return self._paginate(request, [self.repo_json(r) for r in inst["repositories"]], "repositories")

    def _get_repo(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        return self.repo_json(f"{match['owner']}/{match['name']}")

    def _get_permission(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        """GitHub's shape: `permission` is the legacy base role (maintain reads as write,
        triage as read), `role_name` the role itself."""
        repo, login = f"{match['owner']}/{match['name']}", match["login"]
        role = self.permissions.get((self._repo_key(repo), login.lower()))
        if role is None:
            return 404, {"message": "Not Found"}
        legacy = {"maintain": "write", "triage": "read"}.get(role, role)
        return {"permission": legacy, "role_name": role, "user": self.user(login)}

    def _check_write(self, auth: _Auth, repo: str) -> tuple[int, Any] | None:
        """Writes need an installation token of an installation covering the repository
        (or the user token): anonymous writes are refused like GitHub does."""
        if auth.kind == "token":
            return None
        if auth.kind != "installation":
            return 401, {"message": "Requires authentication"}
        inst = self.installations.get(auth.installation_id or -1)
        if inst is None or not any(r.lower() == repo.lower() for r in inst["repositories"]):
            return 403, {"message": "Resource not accessible by integration"}
        token = self.tokens.get(auth.token or "")
        if token is not None and token.permissions is not None and (
                token.permissions.get("issues") != "write"):  # (Issues read-only, or none)
            return 403, {"message": "Resource not accessible by integration",
                         "documentation_url": "https://docs.github.com/rest/issues/comments"}
        return None

    def _actor(self, auth: _Auth) -> dict[str, Any]:
        if auth.kind == "installation":
            return self.user(f"{self.app_slug}[bot]", "Bot")
        return self.user("token-user")

    def _served(self, item: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in item.items() if not k.startswith("_")}

    def _get_issue(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        issue = self.issue(repo, int(match["number"]))
        return {**issue, "labels": self._with_ids(repo, issue["labels"])} if issue else (
            404, {"message": "Not Found"})

    def _edit_issue(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        if denied := self._check_write(auth, repo):
            return denied
        issue = self.issue(repo, int(match["number"]))
        if issue is None:
            return 404, {"message": "Not Found"}
        body = body or {}
        for key in ("title", "body", "state", "state_reason"):
            if key in body:
                issue[key] = body[key]
        if "labels" in body:
            issue["labels"] = [{"name": n} for n in body["labels"]]
        if body.get("state") == "closed":
            issue["closed_at"] = _iso(_now())
            issue["closed_by"] = self._actor(auth)
        issue["updated_at"] = _iso(_now())
        return issue

    def _list_comments(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        if self.issue(repo, int(match["number"])) is None:
            return 404, {"message": "Not Found"}
        items = [self._served(c) for c in self.comments_of(repo, int(match["number"]))]
        return self._paginate(request, items)

    def _create_comment(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        if denied := self._check_write(auth, repo):
            return denied
        if self.issue(repo, int(match["number"])) is None:
            return 404, {"message": "Not Found"}
        if not isinstance(body, dict) or not isinstance(body.get("body"), str):
            return 422, {"message": "Invalid request", "errors": [{"field": "body", "code": "missing_field"}]}
        if too_long := self._body_too_long(body["body"]):
            return too_long
        actor = self._actor(auth)
        comment = self.add_comment(repo, int(match["number"]), body["body"], actor["login"], actor["type"])
        return 201, self._served(comment)

    @staticmethod
    def _body_too_long(text: str) -> tuple[int, Any] | None:
        """GitHub refuses a comment body over 65,536 characters (422, on every retry)."""
        if len(text) <= COMMENT_BODY_LIMIT:
            return None
        return 422, {"message": "Validation Failed", "errors": [
            {"resource": "IssueComment", "code": "custom", "field": "body",
             "message": f"body is too long (maximum is {COMMENT_BODY_LIMIT} characters)"}]}

    def _find_comment(self, match: re.Match[str]) -> dict[str, Any] | None:
        comment = self.comments.get(int(match["id"]))
        if comment is None or comment["_repo"] != self._repo_key(f"{match['owner']}/{match['name']}"):
            return None
        return comment

    def _get_comment(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        comment = self._find_comment(match)
        return self._served(comment) if comment else (404, {"message": "Not Found"})

    def _edit_comment(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        if denied := self._check_write(auth, f"{match['owner']}/{match['name']}"):
            return denied
        comment = self._find_comment(match)
        if comment is None:
            return 404, {"message": "Not Found"}
        if isinstance(body, dict) and isinstance(body.get("body"), str):
            if too_long := self._body_too_long(body["body"]):
                return too_long
            comment["body"] = body["body"]
            comment["updated_at"] = _iso(_now())
        return self._served(comment)

    def _delete_comment(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        if denied := self._check_write(auth, f"{match['owner']}/{match['name']}"):
            return denied
        comment = self._find_comment(match)
        if comment is None:
            return 404, {"message": "Not Found"}
        del self.comments[comment["id"]]
        issue = self.issues.get((comment["_repo"], comment["_number"]))
        if issue is not None:
            issue["comments"] -= 1
        return 204, None

    def _list_labels(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        issue = self.issue(repo, int(match["number"]))
        return self._paginate(request, self._with_ids(repo, issue["labels"])) if issue else (
            404, {"message": "Not Found"})

    def _add_labels(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        if denied := self._check_write(auth, repo):
            return denied
        issue = self.issue(repo, int(match["number"]))
        if issue is None:
            return 404, {"message": "Not Found"}
        names = body.get("labels", []) if isinstance(body, dict) else body
        # GitHub's label names are case-insensitive: a name the issue has in another case is
        # the label it has (nothing added), and one the repository has in another case adds
        # the repository's label under its own name. An unknown name creates the label.
        have = {label["name"].casefold() for label in issue["labels"]}
        known = {name.casefold(): name for name in self.repo_labels.get(self._repo_key(repo), [])}
        for name in names or []:
            name = name["name"] if isinstance(name, dict) else name
            if not isinstance(name, str) or not name.strip() or len(name) > 50:
                return 422, {"message": "Validation Failed",
                             "errors": [{"resource": "Label", "field": "name", "code": "invalid"}]}
            if name.casefold() not in known:  # created, in GitHub's default colour (ededed)
                known[name.casefold()] = name
                self.repo_labels.setdefault(self._repo_key(repo), []).append(name)
            name = known[name.casefold()]
            if name.casefold() not in have:
                issue["labels"].append({"name": name})
                have.add(name.casefold())
        return self._with_ids(repo, issue["labels"])

    def label_id(self, repo: str, name: str) -> int:
        """The repository label's id, as GitHub gives one to each label (kept by a rename)."""
        ids = self.label_ids.setdefault(self._repo_key(repo), {})
        if name.casefold() not in ids:
            ids[name.casefold()] = next(self._label_ids)
        return ids[name.casefold()]

    def _with_ids(self, repo: str, labels: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The labels as GitHub's answers show them: with their ids (the issues keep names)."""
        return [{**label, "id": self.label_id(repo, label["name"])} for label in labels]

    def rename_label(self, repo: str, old: str, new: str) -> None:
        """A maintainer renames the repository's label `old` (any case) to `new` in its
        settings: the same label (its id, colour and description), every issue showing the
        new name; the old name is no label any more."""
        key = self._repo_key(repo)
        names = self.repo_labels.setdefault(key, [])
        [found] = [n for n in names if n.casefold() == old.casefold()]
        names[names.index(found)] = new
        ids = self.label_ids.setdefault(key, {})
        ids[new.casefold()] = ids.pop(found.casefold(), None) or next(self._label_ids)
        info = self.label_info.setdefault(key, {})
        if found.casefold() in info:
            info[new.casefold()] = info.pop(found.casefold())
        for (issue_repo, _), issue in self.issues.items():
            if issue_repo == key:
                for label in issue["labels"]:
                    if label["name"].casefold() == old.casefold():
                        label["name"] = new

    def repo_label(self, repo: str, name: str) -> dict[str, Any] | None:
        """The repository's label of that name (in any case), as GitHub's label API shows it."""
        for known in self.repo_labels.get(self._repo_key(repo), []):
            if known.casefold() == name.casefold():
                info = self.label_info.get(self._repo_key(repo), {}).get(known.casefold(), {})
                return {"name": known, "color": info.get("color", "ededed"),
                        "description": info.get("description")}
        return None

    def _get_repo_label(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        label = self.repo_label(f"{match['owner']}/{match['name']}", unquote(match["label"]))
        return label if label is not None else (404, {"message": "Not Found"})

    def _create_repo_label(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        if denied := self._check_write(auth, repo):
            return denied
        name = body.get("name") if isinstance(body, dict) else None
        color = str(body.get("color") or "ededed") if isinstance(body, dict) else ""
        description = body.get("description") if isinstance(body, dict) else None
        if (not isinstance(name, str) or not name.strip() or len(name) > 50
                or not re.fullmatch(r"[0-9a-fA-F]{6}", color)
                or (description is not None and len(str(description)) > 100)):
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Label", "field": "name", "code": "invalid"}]}
        if self.repo_label(repo, name) is not None:
            return 422, {"message": "Validation Failed",
                         "errors": [{"resource": "Label", "code": "already_exists", "field": "name"}]}
        self.repo_labels.setdefault(self._repo_key(repo), []).append(name)
        self.label_info.setdefault(self._repo_key(repo), {})[name.casefold()] = {
            "color": color.lower(), "description": description}
        return 201, {"name": name, "color": color.lower(), "description": description}

    def _remove_label(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo = f"{match['owner']}/{match['name']}"
        if denied := self._check_write(auth, repo):
            return denied
        issue = self.issue(repo, int(match["number"]))
        label = unquote(match["label"])
        if issue is None or not any(lab["name"].casefold() == label.casefold() for lab in issue["labels"]):
            return 404, {"message": "Label does not exist"}
        issue["labels"] = [lab for lab in issue["labels"] if lab["name"].casefold() != label.casefold()]
        return self._with_ids(repo, issue["labels"])

    def _reaction_key(self, match: re.Match[str]) -> tuple[str, Any]:
        groups = match.groupdict()
        repo = self._repo_key(f"{match['owner']}/{match['name']}")
        return (repo, ("comment", int(groups["id"])) if groups.get("id") else ("issue", int(groups["number"])))

    def _list_reactions(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        items = self.reactions.get(self._reaction_key(match), [])
        content = request.query.get("content")
        return self._paginate(request, [r for r in items if not content or r["content"] == content])

    def _add_reaction(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        if denied := self._check_write(auth, f"{match['owner']}/{match['name']}"):
            return denied
        content = body.get("content") if isinstance(body, dict) else None
        if content not in {"+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"}:
            return 422, {"message": "Validation Failed", "errors": [{"field": "content", "code": "invalid"}]}
        items = self.reactions.setdefault(self._reaction_key(match), [])
        actor = self._actor(auth)
        for r in items:
            if r["content"] == content and r["user"]["login"] == actor["login"]:
                return 200, r
        reaction = {"id": self.next_id(), "content": content, "user": actor, "created_at": _iso(_now())}
        items.append(reaction)
        return 201, reaction

    def add_reaction(self, repo: str, target: tuple[str, int], content: str, user: str) -> None:
        """Seed a reaction: target is ("comment", id) or ("issue", number)."""
        self.reactions.setdefault((self._repo_key(repo), target), []).append(
            {"id": self.next_id(), "content": content, "user": self.user(user), "created_at": _iso(_now())}
        )

    def _get_contents(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        repo_key = self._repo_key(f"{match['owner']}/{match['name']}")
        path = unquote(match["path"] or "").strip("/")
        text = self.files.get((repo_key, path))
        full = f"{match['owner']}/{match['name']}"
        if text is not None:
            raw = text if isinstance(text, bytes) else text.encode("utf-8")
            encoded = base64.b64encode(raw).decode()
            # GitHub wraps the base64 text at 60 characters, with newlines; clients must cope.
            wrapped = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
            return {
                "type": "file",
                "encoding": "base64",
                "size": len(raw),
                "name": path.rsplit("/", 1)[-1],
                "path": path,
                "content": wrapped,
                "sha": hashlib.sha1(b"blob %d\0" % len(raw) + raw).hexdigest(),
                "html_url": f"https://github.com/{full}/blob/main/{path}",
            }
        prefix = path + "/" if path else ""
        entries: dict[str, dict[str, Any]] = {}
        for (rk, fpath), ftext in self.files.items():
            if rk != repo_key or not fpath.startswith(prefix):
                continue
            rest = fpath[len(prefix) :]
            head, sep, _ = rest.partition("/")
            entry_path = prefix + head
            entries[head] = {
                "type": "dir" if sep else "file",
                "name": head,
                "path": entry_path,
                "size": 0 if sep else len(ftext if isinstance(ftext, bytes) else ftext.encode()),
            }
        if not entries:
            return 404, {"message": "Not Found"}
        return [entries[k] for k in sorted(entries)]

    def _get_tree(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        """The git trees API on the files `set_file` made (one branch: every ref is it). Entries
        in git's order (by name, a folder's name compared with a "/" after it), a folder's
        entries right after it when `recursive` is given (any value, as GitHub's); blobs carry
        their size. Past `tree_entry_limit` entries the list stops and `truncated` is true."""
        full = f"{match['owner']}/{match['name']}"
        repo_key = self._repo_key(full)
        files = {path: text for (rk, path), text in self.files.items() if rk == repo_key}
        if not files:
            return 404, {"message": "Not Found"}
        recursive = "recursive" in request.query
        base = f"{self.url}/repos/{full}/git"

        def sha(data: bytes) -> str:
            return hashlib.sha1(data).hexdigest()

        def walk(prefix: str) -> list[dict[str, Any]]:
            children: dict[str, bool] = {}  # name -> is a folder
            for path in files:
                if path.startswith(prefix):
                    head, sep, _ = path[len(prefix):].partition("/")
                    children[head] = children.get(head, False) or bool(sep)
            out: list[dict[str, Any]] = []
            for name in sorted(children, key=lambda n: n + "/" if children[n] else n):
                path = prefix + name
                if children[name]:
                    tree_sha = sha(path.encode())
                    out.append({"path": path if recursive else name, "mode": "040000", "type": "tree",
                                "sha": tree_sha, "url": f"{base}/trees/{tree_sha}"})
                    if recursive:
                        out += walk(path + "/")
                else:
                    text = files[path]
                    raw = text if isinstance(text, bytes) else text.encode("utf-8")
                    blob_sha = sha(b"blob %d\0" % len(raw) + raw)
                    out.append({"path": path if recursive else name, "mode": "100644", "type": "blob",
                                "sha": blob_sha, "size": len(raw), "url": f"{base}/blobs/{blob_sha}"})
            return out

        entries = walk("")
        root_sha = sha(json.dumps(sorted(files)).encode())
        return {"sha": root_sha, "url": f"{base}/trees/{root_sha}",
                "tree": entries[: self.tree_entry_limit],
                "truncated": len(entries) > self.tree_entry_limit}

    async def _graphql(self, request: web.Request, match: re.Match[str], body: Any, auth: _Auth) -> Any:
        if auth.kind is None:
            return 401, {"message": "This endpoint requires you to be authenticated."}
        if not isinstance(body, dict) or "query" not in body:
            return 400, {"message": "Problems parsing JSON"}
        if self.graphql_handler is None:
            return 200, {"errors": [{"message": "fake_github.graphql_handler is not set"}]}
        result = self.graphql_handler(body["query"], body.get("variables") or {})
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, web.StreamResponse):
            return result
        if not isinstance(result, dict) or not ({"data", "errors"} & result.keys()):
            result = {"data": result}
        token = self.tokens.get(auth.token or "") if auth.kind == "installation" else None
        if token is not None and token.permissions is not None:
            self._withhold(result, token.permissions)
        return 200, result

    # A repository's fields GitHub answers null (FORBIDDEN, "Resource not accessible by
    # integration") to an installation token without the permission they need.
    GRAPHQL_PERMISSIONS = {"issues": "issues", "pullRequests": "pull_requests",
                           "discussions": "discussions", "discussion": "discussions"}

    def _withhold(self, result: dict[str, Any], permissions: dict[str, str]) -> None:
        """What the token's permissions do not cover, withheld from an answer as GitHub does:
        a repository's connection (an alias at the top of `data`) null with a FORBIDDEN error
        at its path (an installation that did not grant Discussions, or Issues)."""
        data = result.get("data")
        for alias, value in (data.items() if isinstance(data, dict) else ()):
            if not isinstance(value, dict) or value.get("__typename", "Repository") != "Repository":
                continue
            for field_name, permission in self.GRAPHQL_PERMISSIONS.items():
                if field_name in value and permission not in permissions:
                    value[field_name] = None
                    result.setdefault("errors", []).append({
                        "type": "FORBIDDEN", "path": [alias, field_name],
                        "extensions": {"saml_failure": False},
                        "locations": [{"line": 1, "column": 1}],
                        "message": "Resource not accessible by integration"})


# -------------------------------------------------------------------- fixtures
@lru_cache(maxsize=1)
def rsa_key_pair() -> tuple[str, Any]:
    """One generated RSA key per test session (generation is the slow part): PEM, public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return pem, key.public_key()


async def _no_sleep(seconds: float) -> None:
    # Yield to the loop like a real sleep would, without waiting.
    await asyncio.sleep(0)


@pytest.fixture
async def fake_github() -> AsyncIterator[FakeGitHub]:
    fake = FakeGitHub()
    await fake.start()
    try:
        yield fake
    finally:
        await fake.close()


@pytest.fixture
def app_settings(settings: Any, fake_github: FakeGitHub) -> Any:
    """Settings with app credentials pointing at the fake; posting is on (dry_run False)."""
    pem, public = rsa_key_pair()
    fake_github.app_id = "4242"
    fake_github.public_key = public
    return dataclasses.replace(
        settings, app_id="4242", private_key=pem, api_url=fake_github.url, dry_run=False
    )


@pytest.fixture
async def github_client(app_settings: Any) -> AsyncIterator[Any]:
    from bot.github.client import GitHubClient

    client = GitHubClient(app_settings, sleep=_no_sleep)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
async def app_ctx(app_settings: Any, github_client: Any) -> AsyncIterator[Any]:
    """An AppContext on the test database with app credentials and a client on the fake."""
    from bot.context import AppContext

    context = AppContext.create(app_settings)
    context.github = github_client
    try:
        yield context
    finally:
        context.github = None  # the github_client fixture closes it
        await context.close()


@asynccontextmanager
async def token_context(settings: Any, fake: FakeGitHub) -> AsyncIterator[Any]:
    """An AppContext on the test database that reads the fake with a plain token, as sync,
    reception and the nightly job do without app credentials."""
    from bot.context import AppContext
    from bot.github.client import GitHubClient

    s = dataclasses.replace(settings, api_url=fake.url, token=fake.user_token)
    context = AppContext.create(s)
    context.github = GitHubClient(s, sleep=_no_sleep)
    try:
        yield context
    finally:
        await context.close()


async def install_app(ctx: Any, fake: FakeGitHub, installation_id: int, account: str, repos: list[str]) -> None:
    """The app installed on `repos` as an installation event leaves it: at the fake GitHub
    (the installation's tokens read them) and in the app's database (an Installation row and
    each Repository row pointing at it)."""
    from bot.store.models import Installation, Repository

    fake.add_installation(installation_id, account, repos=repos)
    async with ctx.sessionmaker() as session:
        session.add(Installation(id=installation_id, account=account))
        await session.flush()
        session.add_all([Repository(full_name=repo, installation_id=installation_id) for repo in repos])
        await session.commit()


class Clock:
    """A clock a test moves: the app's GitHub client reads it (`clocked_github`), and its
    `sleep` moves it as a real sleep would, without waiting."""

    def __init__(self, fake: FakeGitHub | None = None) -> None:
        import time

        self.now = time.time()
        self.fake = fake  # GitHub's clock moves with it (`FakeGitHub.skew`)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
        if self.fake is not None:
            self.fake.skew += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        await asyncio.sleep(0)


@asynccontextmanager
async def clocked_github(ctx: Any, fake: FakeGitHub | None = None) -> AsyncIterator[Clock]:
    """`ctx.github` replaced, for the block, by a client on the same settings whose clock
    (token freshness, rate-limit holds) the test moves: waits of minutes or an hour pass
    without sleeping. With `fake`, GitHub's clock moves with it (tokens expire)."""
    from bot.github.client import GitHubClient

    clock = Clock(fake)
    before, ctx.github = ctx.github, GitHubClient(ctx.settings, sleep=clock.sleep, clock=clock)
    try:
        yield clock
    finally:
        await ctx.github.close()
        ctx.github = before


no_sleep = _no_sleep
__all__ = ["FakeGitHub", "Call", "Clock", "Token", "clocked_github", "install_app", "no_sleep",
           "rsa_key_pair", "token_context", "SECONDARY_LIMIT_MESSAGE"]
