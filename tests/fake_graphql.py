"""A GraphQL responder for the fake GitHub server, answering from generated data.

Queries are executed by graphql-core against GitHub's REAL public schema
(../shared/fixtures/github-api/schema.graphql): a document that GitHub would reject is rejected
here too, and every field the sync reads must exist. Resolvers are plain Python over
`FakeData`, which holds GraphQL-shaped dicts; a value that is callable is called with the
field's arguments (that is how connections page).

Use:
    data = FakeData.generate(threads_per_repo=300, seed=1)
    fake_github.graphql_handler = FakeGraphQL(data, schema_path)   # tests/fakegithub.py hook
    data.touch("huggingface/trl", "issue", 12, new_comments=2)      # a thread changes
    responder.inject_errors(2)   # the next two requests answer 200 with GraphQL errors

HTTP-level failures (502, 429, secondary limits) are injected with the fake server's own
`fake.fail_next(...)`.
"""

from __future__ import annotations

import base64
import inspect
import random
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import graphql

REPOS = [
    "verl-project/verl", "huggingface/trl", "OpenRLHF/OpenRLHF", "NVIDIA-NeMo/RL",
    "alibaba/ROLL", "THUDM/slime", "areal-project/AReaL",
]
USERS = ["alice", "bob", "chen-wei", "dmitri", "eve", "fatima", "guo", "hiro", "ines", "jun"]
BOTS = ["github-actions", "dependabot", "stale"]
ASSOCIATIONS = ["NONE", "CONTRIBUTOR", "MEMBER", "OWNER", "COLLABORATOR", "FIRST_TIME_CONTRIBUTOR"]
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)


@cache
def load_github_schema(path: Path) -> Any:
    """GitHub's public schema as graphql-core sees it.

    The published SDL repeats two enterprise fields and deprecates some `id` fields that
    implement the non-deprecated `Node.id`; graphql-core rejects both although GitHub serves
    the schema as is. The SDL check is skipped and the schema marked valid, which is what the
    real API does with these documents.
    """
    schema = graphql.build_schema(path.read_text(), assume_valid_sdl=True)
    schema._validation_errors = []  # type: ignore[attr-defined]
    return schema


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def _cursor(value: str) -> str:
    return base64.b64encode(value.encode()).decode()


def _uncursor(value: str) -> str:
    return base64.b64decode(value.encode()).decode()


class GraphQLFieldError(Exception):
    """Raised by a resolver; graphql-core turns it into an `errors` entry as GitHub does
    (with GitHub's `type`, NOT_FOUND or FORBIDDEN, when one is given)."""

    def __init__(self, message: str, type: str | None = None) -> None:  # noqa: A002
        super().__init__(message)
        self.type = type


def _check_first(first: int | None, what: str) -> None:
    if first is None:
        raise GraphQLFieldError(f"You must provide a `first` or `last` value to properly paginate the `{what}` connection.")
    if first < 0 or first > 100:
        raise GraphQLFieldError(
            f"Requesting {first} records on the `{what}` connection exceeds the `first` limit of 100 records."
        )


def list_connection(items: Callable[[], list[Any]], what: str) -> Callable[..., dict[str, Any]]:
    """A connection over a list in its natural order, cursor = position."""

    def resolve(info: Any = None, first: int | None = None, after: str | None = None,
                last: int | None = None, **_: Any) -> dict[str, Any]:
        values = items()
        if last is not None and first is None:
            start = max(0, len(values) - last)
            page = values[start:]
            end = len(values)
        else:
            _check_first(first, what)
            start = int(_uncursor(after)) if after else 0
            end = min(len(values), start + (first or 0))
            page = values[start:end]
        return {
            "totalCount": len(values),
            "pageInfo": {"hasNextPage": end < len(values), "endCursor": _cursor(str(end)) if page else after},
            "nodes": page,
        }

    return resolve


@dataclass
class FakeData:
    """The generated world: seven repositories of issues, pull requests and discussions."""

    repos: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    clock: datetime = BASE_TIME
    next_id: int = 1000
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    # Repository identity, as GitHub keeps it across renames: id (null when a test does not
    # set one), updatedAt (moves with a rename), and former names GitHub still resolves.
    repo_ids: dict[str, int] = field(default_factory=dict)
    repo_updated: dict[str, str] = field(default_factory=dict)
    renamed: dict[str, str] = field(default_factory=dict)  # former name, lower case -> current
    private: set[str] = field(default_factory=set)  # repositories GitHub calls isPrivate
    # Threads gone from where they were: (former repository lower case, "issue" or
    # "discussion", former number) -> the thread, now at its new place (transferred); a
    # thread deleted is simply absent. `forbidden`: (repository lower case, number) that
    # `issueOrPullRequest` / `discussion(number)` answer FORBIDDEN for.
    moved: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    forbidden: set[tuple[str, int]] = field(default_factory=set)
    # (repository, "issue" or "discussion") whose feature is turned off: GitHub lists none of
    # them and answers NOT_FOUND by number, although they come back when it is turned on
    disabled: set[tuple[str, str]] = field(default_factory=set)

    # ---- building -------------------------------------------------------------------------
    def _tick(self, seconds: int = 60) -> datetime:
        self.clock += timedelta(seconds=seconds)
        return self.clock

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _actor(self) -> dict[str, Any] | None:
        roll = self.rng.random()
        if roll < 0.05:
            return {"__typename": "Bot", "login": self.rng.choice(BOTS)}
        if roll < 0.07:
            return None  # a deleted account: GitHub's "ghost"
        return {"__typename": "User", "login": self.rng.choice(USERS)}

    def _comment(self, typename: str, at: datetime, body: str | None = None) -> dict[str, Any]:
        db_id = self._new_id()
        node = {
            "__typename": typename,
            "id": f"{typename}_{db_id}",
            "databaseId": db_id,
            "body": body if body is not None else f"comment {db_id}: works for me ```x=1```",
            "createdAt": _iso(at),
            "updatedAt": _iso(at),
            "authorAssociation": self.rng.choice(ASSOCIATIONS),
            "author": self._actor(),
            "isMinimized": False,
            "minimizedReason": None,
            "deletedAt": None,
            "reactions_up": 0,
            "reactions_down": 0,
        }
        if typename == "PullRequestReviewComment":
            node["path"] = f"src/module_{db_id % 7}.py"  # the file the remark is on
        node["reactions"] = self._reactions(node)
        self.nodes[node["id"]] = node
        return node

    @staticmethod
    def _reactions(node: dict[str, Any]) -> Callable[..., dict[str, Any]]:
        def resolve(info: Any = None, content: str | None = None, **_: Any) -> dict[str, Any]:
            up, down = node["reactions_up"], node["reactions_down"]
            count = {"THUMBS_UP": up, "THUMBS_DOWN": down}.get(content or "", up + down)
            return {"totalCount": count, "pageInfo": {"hasNextPage": False, "endCursor": None},
                    "nodes": []}

        return resolve

    def add_thread(self, repo: str, kind: str, *, n_comments: int = 0, n_reviews: int = 0,
                   closed: bool | None = None, body: str | None = None) -> dict[str, Any]:
        threads = self.repos.setdefault(repo, {"issue": [], "pull_request": [], "discussion": []})
        # Issues and pull requests share one number sequence per repository, as on GitHub.
        number = 1 + sum(len(v) for v in threads.values())
        created = self._tick(self.rng.randint(60, 3600))
        typename = {"issue": "Issue", "pull_request": "PullRequest", "discussion": "Discussion"}[kind]
        db_id = self._new_id()
        labels = self.rng.sample(["bug", "enhancement", "question", "help wanted"], self.rng.randint(0, 2))
        assignees = [self.rng.choice(USERS)] if self.rng.random() < 0.2 else []
        thread: dict[str, Any] = {
            "__typename": typename,
            "id": f"{typename}_{db_id}",
            "databaseId": db_id,
            "number": number,
            "title": f"{kind} {number} in {repo}: 熵 collapse after step {number}",
            "body": body if body is not None else ("" if number % 17 == 0 else f"Body of {number}.\n\n`lr=1e-6`"),
            "url": f"https://github.com/{repo}/{'pull' if kind == 'pull_request' else 'discussions' if kind == 'discussion' else 'issues'}/{number}",
            "createdAt": _iso(created),
            "updatedAt": _iso(created),
            "closedAt": None,
            "authorAssociation": self.rng.choice(ASSOCIATIONS),
            "author": self._actor(),
            "_labels": [{"name": n} for n in labels],
            "_assignees": [{"login": a} for a in assignees],
            "_comments": [],
            "_reviews": [],
            "_closer": None,
            "_repo": repo,
            "_kind": kind,
        }
        thread["labels"] = list_connection(lambda t=thread: t["_labels"], "labels")
        thread["repository"] = lambda info=None, t=thread, **_: {
            "__typename": "Repository", "nameWithOwner": t["_repo"],
            "isPrivate": t["_repo"] in self.private, "databaseId": self.repo_ids.get(t["_repo"])}
        thread["assignees"] = list_connection(lambda t=thread: t["_assignees"], "assignees")
        thread["comments"] = list_connection(lambda t=thread: t["_comments"], "comments")
        if kind == "issue":
            thread.update(state="OPEN", stateReason=None)
        elif kind == "pull_request":
            thread.update(state="OPEN", merged=False, mergedAt=None, mergedBy=None)
            thread["reviews"] = list_connection(lambda t=thread: t["_reviews"], "reviews")
        else:
            thread.update(closed=False, stateReason=None, isAnswered=False, answerChosenAt=None,
                          answerChosenBy=None, category={"name": "General"})
        if kind != "discussion":
            thread["timelineItems"] = self._timeline(thread)
        threads[kind].append(thread)
        self.nodes[thread["id"]] = thread
        for _ in range(n_comments):
            self._add_comment(thread)
        for _ in range(n_reviews):
            self._add_review(thread, self.rng.randint(0, 3))
        if closed is None:
            closed = self.rng.random() < 0.4
        if closed:
            self.close(thread)
        return thread

    def _timeline(self, thread: dict[str, Any]) -> Callable[..., dict[str, Any]]:
        def resolve(info: Any = None, itemTypes: list[str] | None = None, last: int | None = None,
                    first: int | None = None, **_: Any) -> dict[str, Any]:
            events = []
            if thread["_closer"] is not None and (not itemTypes or "CLOSED_EVENT" in itemTypes):
                events.append({"__typename": "ClosedEvent", "actor": thread["_closer"]})
            return {"totalCount": len(events), "nodes": events[-(last or 1):],
                    "pageInfo": {"hasNextPage": False, "endCursor": None}}

        return resolve

    def _add_comment(self, thread: dict[str, Any], body: str | None = None) -> dict[str, Any]:
        at = self._tick(self.rng.randint(1, 600))
        if thread["_kind"] == "discussion":
            node = self._comment("DiscussionComment", at, body)
            node["_replies"] = []
            node["replies"] = list_connection(lambda n=node: n["_replies"], "replies")
            if self.rng.random() < 0.3:
                for _ in range(self.rng.randint(1, 14)):
                    reply = self._comment("DiscussionComment", self._tick(30), body)
                    node["_replies"].append(reply)
        else:
            node = self._comment("IssueComment", at, body)
        thread["_comments"].append(node)
        thread["updatedAt"] = _iso(self.clock)
        return node

    def _add_review(self, thread: dict[str, Any], n_comments: int) -> dict[str, Any]:
        at = self._tick(self.rng.randint(1, 600))
        review = self._comment("PullRequestReview", at, "Looks good, one nit." if n_comments else "")
        review["state"] = self.rng.choice(["APPROVED", "COMMENTED", "CHANGES_REQUESTED"])
        review["submittedAt"] = review["createdAt"]
        review["_comments"] = [
            self._comment("PullRequestReviewComment", self._tick(5)) for _ in range(n_comments)
        ]
        review["comments"] = list_connection(lambda r=review: r["_comments"], "comments")
        thread["_reviews"].append(review)
        thread["updatedAt"] = _iso(self.clock)
        return review

    def answer(self, thread: dict[str, Any], comment: dict[str, Any],
               by: dict[str, Any] | None) -> None:
        """A discussion's answer chosen (`comment`, by `by`)."""
        at = self._tick(30)
        thread.update(isAnswered=True, answerChosenAt=_iso(at), answerChosenBy=by,
                      updatedAt=_iso(at))

    def close(self, thread: dict[str, Any]) -> None:
        at = self._tick(120)
        closer = {"__typename": "User", "login": self.rng.choice(USERS)}
        thread["closedAt"] = _iso(at)
        thread["updatedAt"] = _iso(at)
        if thread["_kind"] == "issue":
            thread["state"] = "CLOSED"
            thread["stateReason"] = self.rng.choice(["COMPLETED", "NOT_PLANNED", "DUPLICATE"])
            thread["_closer"] = closer
        elif thread["_kind"] == "pull_request":
            if self.rng.random() < 0.5:
                thread.update(state="MERGED", merged=True, mergedAt=_iso(at), mergedBy=closer)
            else:
                thread["state"] = "CLOSED"
            thread["_closer"] = closer
        else:
            thread["closed"] = True
            thread["stateReason"] = self.rng.choice(["RESOLVED", "OUTDATED"])

    @classmethod
    def generate(cls, threads_per_repo: int = 300, *, seed: int = 1, long_every: int = 40,
                 long_comments: int = 250, repos: list[str] | None = None) -> FakeData:
        """Threads spread over issues (50%), pull requests (35%) and discussions (15%);
        every `long_every`-th thread carries `long_comments` comments."""
        data = cls(rng=random.Random(seed))
        for repo in repos or REPOS:
            for i in range(threads_per_repo):
                roll = data.rng.random()
                kind = "issue" if roll < 0.5 else "pull_request" if roll < 0.85 else "discussion"
                n = long_comments if long_every and i % long_every == long_every - 1 else data.rng.randint(0, 8)
                reviews = data.rng.randint(0, 3) if kind == "pull_request" else 0
                if kind == "pull_request" and long_every and i % (long_every * 3) == 1:
                    reviews = 45  # more reviews than fit nested
                data.add_thread(repo, kind, n_comments=n, n_reviews=reviews)
        return data

    # ---- changes made by tests --------------------------------------------------------------
    def thread(self, repo: str, kind: str, number: int) -> dict[str, Any]:
        for t in self.repos[repo][kind]:
            if t["number"] == number:
                return t
        raise KeyError((repo, kind, number))

    def touch(self, repo: str, kind: str, number: int, *, new_comments: int = 1,
              title: str | None = None) -> dict[str, Any]:
        thread = self.thread(repo, kind, number)
        for _ in range(new_comments):
            self._add_comment(thread)
        if title is not None:
            thread["title"] = title
        thread["updatedAt"] = _iso(self._tick(5))
        return thread

    def delete_comment(self, repo: str, kind: str, number: int, index: int = 0) -> dict[str, Any]:
        thread = self.thread(repo, kind, number)
        node = thread["_comments"].pop(index)
        self.nodes.pop(node["id"], None)
        thread["updatedAt"] = _iso(self._tick(5))
        return node

    def delete_thread(self, repo: str, kind: str, number: int) -> dict[str, Any]:
        """The thread deleted on GitHub (no webhook told anyone)."""
        thread = self.thread(repo, kind, number)
        self.repos[repo][kind].remove(thread)
        self.nodes.pop(thread["id"], None)
        return thread

    def transfer(self, repo: str, kind: str, number: int, to: str) -> dict[str, Any]:
        """The thread transferred to repository `to`: a new number there, its node and
        comments kept; asked by its former number, GitHub answers with it at its new place."""
        thread = self.thread(repo, kind, number)
        self.repos[repo][kind].remove(thread)
        threads = self.repos.setdefault(to, {"issue": [], "pull_request": [], "discussion": []})
        new_number = 1 + sum(len(v) for v in threads.values())
        family = "discussion" if kind == "discussion" else "issue"
        self.moved[(repo.lower(), family, number)] = thread
        thread["number"] = new_number
        thread["_repo"] = to
        thread["url"] = thread["url"].replace(f"/{repo}/", f"/{to}/").rsplit("/", 1)[0] + f"/{new_number}"
        thread["updatedAt"] = _iso(self._tick(5))
        threads[kind].append(thread)
        return thread

    def by_number(self, repo: str, family: str, number: int) -> dict[str, Any] | None:
        """What GitHub answers for `number` asked of `repo` (`family` "issue": an issue or a
        pull request; "discussion"): the thread there, or moved away, or None (NOT_FOUND)."""
        kinds = ("issue", "pull_request") if family == "issue" else ("discussion",)
        for kind in kinds:
            for t in self.repos.get(repo, {}).get(kind, []):
                if t["number"] == number:
                    return t
        return self.moved.get((repo.lower(), family, number))

    # ---- expected records -------------------------------------------------------------------
    def all_threads(self) -> list[dict[str, Any]]:
        return [t for kinds in self.repos.values() for ts in kinds.values() for t in ts]

    def comment_count(self, thread: dict[str, Any]) -> int:
        """Stored comment rows for a thread: comments, discussion replies, reviews, review comments."""
        n = len(thread["_comments"]) + sum(len(c.get("_replies", [])) for c in thread["_comments"])
        n += sum(1 + len(r["_comments"]) for r in thread["_reviews"])
        return n


def _ordered_threads(threads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(threads, key=lambda t: (t["updatedAt"], t["databaseId"]), reverse=True)


class FakeGraphQL:
    """`handler(query, variables) -> {"data": ..., "errors": [...]}` for the fake server."""

    KIND_FIELDS = {"issues": "issue", "pullRequests": "pull_request", "discussions": "discussion"}

    def __init__(self, data: FakeData, schema_path: Path, *, rate_limit: int = 5000) -> None:
        self.data = data
        self.schema = load_github_schema(schema_path)
        self.remaining = rate_limit
        self.limit = rate_limit
        self.reset_at = datetime.now(UTC) + timedelta(hours=1)
        self.requests = 0
        self._errors_to_inject = 0
        self.documents: list[str] = []
        self._not_found: list[tuple[int, str]] = []

    def inject_errors(self, times: int = 1) -> None:
        self._errors_to_inject += times

    # The repository connections, ordered by updatedAt descending with keyset cursors, so a
    # thread updated during a backfill moves ahead of the cursor exactly as on GitHub.
    def _repo_connection(self, repo: str, kind: str) -> Callable[..., dict[str, Any]]:
        def resolve(info: Any = None, first: int | None = None, after: str | None = None,
                    orderBy: dict[str, Any] | None = None, **_: Any) -> dict[str, Any]:
            _check_first(first, info.field_name if info else kind)
            ordered = _ordered_threads(self.data.repos.get(repo, {}).get(kind, []))
            if (repo, kind) in self.data.disabled:
                ordered = []
            start = 0
            if after:
                updated, _, db_id = _uncursor(after).partition("|")
                key = (updated, int(db_id))
                while start < len(ordered) and (ordered[start]["updatedAt"], ordered[start]["databaseId"]) >= key:
                    start += 1
            page = ordered[start:start + (first or 0)]
            end_cursor = (
                _cursor(f"{page[-1]['updatedAt']}|{page[-1]['databaseId']}") if page else after
            )
            return {
                "totalCount": len(ordered),
                "pageInfo": {"hasNextPage": start + len(page) < len(ordered), "endCursor": end_cursor},
                "nodes": page,
            }

        return resolve

    def _repository(self, info: Any = None, owner: str = "", name: str = "", **_: Any) -> dict[str, Any] | None:
        asked = self.data.renamed.get(f"{owner}/{name}".lower(), f"{owner}/{name}")
        full = next((r for r in self.data.repos if r.lower() == asked.lower()), None)
        if full is None:
            raise GraphQLFieldError(f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        return {
            "__typename": "Repository",
            "nameWithOwner": full,
            "databaseId": self.data.repo_ids.get(full),
            "updatedAt": self.data.repo_updated.get(full, _iso(BASE_TIME)),
            "isPrivate": full in self.data.private,
            "hasIssuesEnabled": (full, "issue") not in self.data.disabled,
            "hasDiscussionsEnabled": (full, "discussion") not in self.data.disabled,
            **{f: self._repo_connection(full, k) for f, k in self.KIND_FIELDS.items()},
            "issueOrPullRequest": self._by_number(full, "issue"),
            "discussion": self._by_number(full, "discussion"),
        }

    def _by_number(self, repo: str, family: str) -> Callable[..., dict[str, Any] | None]:
        def resolve(info: Any = None, number: int = 0, **_: Any) -> dict[str, Any] | None:
            if (repo.lower(), number) in self.data.forbidden:
                raise GraphQLFieldError("Resource not accessible by integration", "FORBIDDEN")
            found = self.data.by_number(repo, family, number)
            if found is None or (repo, found["_kind"]) in self.data.disabled:
                what = "an issue or pull request" if family == "issue" else "a Discussion"
                raise GraphQLFieldError(
                    f"Could not resolve to {what} with the number of {number}.", "NOT_FOUND")
            return found

        return resolve

    def _rate_limit(self, info: Any = None, **_: Any) -> dict[str, Any]:
        return {"cost": 1, "remaining": self.remaining, "limit": self.limit,
                "resetAt": _iso(self.reset_at), "used": self.limit - self.remaining, "nodeCount": 0}

    def _root(self) -> dict[str, Any]:
        return {
            "repository": self._repository,
            "node": lambda info=None, id="", **_: self.data.nodes.get(id),
            "nodes": self._nodes,
            "rateLimit": self._rate_limit,
        }

    def _nodes(self, info: Any = None, ids: Any = (), **_: Any) -> list[Any]:
        # GitHub answers null for an id that no longer resolves, plus a NOT_FOUND error.
        found = [self.data.nodes.get(i) for i in ids]
        self._not_found += [(n, i) for n, (i, f) in enumerate(zip(ids, found, strict=True)) if f is None]
        return found

    @staticmethod
    def _resolve_field(source: Any, info: Any, **args: Any) -> Any:
        value = source.get(info.field_name) if isinstance(source, dict) else getattr(source, info.field_name, None)
        if callable(value):
            return value(info, **args)
        if (info.field_name == "stateReason" and value == "DUPLICATE"
                and source.get("__typename") == "Issue" and not args.get("enableDuplicate")):
            # GitHub's schema: an issue's DUPLICATE only `(enableDuplicate: true)`; asked
            # without it, GitHub answers a duplicate close as NOT_PLANNED.
            return "NOT_PLANNED"
        return value

    def __call__(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.handle(query, variables)

    def handle(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
        self.requests += 1
        self.documents.append(query)
        if self._errors_to_inject > 0:
            self._errors_to_inject -= 1
            return {"data": None, "errors": [{"type": "SERVICE_UNAVAILABLE", "message": "Something went wrong while executing your query. This may be the result of a timeout."}]}
        self.remaining = max(0, self.remaining - 1)
        self._not_found: list[tuple[int, str]] = []
        result = graphql.graphql_sync(
            self.schema, query, root_value=self._root(), variable_values=variables or {},
            field_resolver=self._resolve_field,
        )
        out: dict[str, Any] = {"data": result.data}
        if result.errors:
            out["errors"] = [
                {"message": e.message, "path": e.path,
                 **({"type": e.original_error.type}
                    if getattr(e.original_error, "type", None) else {})}
                for e in result.errors]
        for index, node_id in self._not_found:
            out.setdefault("errors", []).append({
                "type": "NOT_FOUND", "path": ["nodes", index],
                "message": f"Could not resolve to a node with the global id of '{node_id}'"})
        return out


# ---------------------------------------------------------------------------- REST shapes
# The same data as REST and webhooks show it: for the test that both paths store identical
# rows, and for the benchmark's plain REST walk.
def rest_user(actor: dict[str, Any] | None) -> dict[str, Any]:
    if actor is None:
        return {"login": "ghost", "type": "User"}
    if actor.get("__typename") == "Bot":
        return {"login": actor["login"] + "[bot]", "type": "Bot"}
    return {"login": actor["login"], "type": "User"}


def _rest_common(t: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": t["databaseId"], "node_id": t["id"], "number": t["number"], "title": t["title"],
        "body": t["body"] or None, "user": rest_user(t["author"]),
        "author_association": t["authorAssociation"],
        "labels": [{"name": x["name"]} for x in t["_labels"]],
        "assignees": [{"login": a["login"]} for a in t["_assignees"]],
        "created_at": t["createdAt"], "updated_at": t["updatedAt"], "closed_at": t["closedAt"],
        "html_url": t["url"],
    }


def rest_issue(t: dict[str, Any]) -> dict[str, Any]:
    """An issue (or the issue view of a pull request) as GET /repos/{o}/{r}/issues lists it."""
    out = _rest_common(t)
    out["state"] = "open" if t["state"] == "OPEN" else "closed"
    out["state_reason"] = (t.get("stateReason") or "").lower() or None
    if t["_kind"] == "pull_request":
        out["id"] = t["databaseId"] + 500_000_000  # the issue view has its own ids
        out["node_id"] = "I_" + t["id"]
        out["pull_request"] = {"merged_at": t.get("mergedAt")}
        out.pop("state_reason")
    return out


def rest_pull(t: dict[str, Any]) -> dict[str, Any]:
    out = _rest_common(t)
    out["state"] = "open" if t["state"] == "OPEN" else "closed"
    out["merged"] = bool(t.get("merged"))
    out["merged_at"] = t.get("mergedAt")
    out["merged_by"] = rest_user(t["mergedBy"]) if t.get("mergedBy") else None
    return out


def rest_discussion(t: dict[str, Any]) -> dict[str, Any]:
    out = _rest_common(t)
    out.pop("assignees")
    out["state"] = "closed" if t["closed"] else "open"
    out["state_reason"] = (t.get("stateReason") or "").lower() or None
    out["category"] = {"name": t["category"]["name"]}
    out["answer_chosen_at"] = t.get("answerChosenAt")
    out["answer_chosen_by"] = rest_user(t["answerChosenBy"]) if t.get("answerChosenBy") else None
    return out


def rest_comment(node: dict[str, Any], parent_id: int | None = None) -> dict[str, Any]:
    out = {"id": node["databaseId"], "node_id": node["id"], "user": rest_user(node["author"]),
           "author_association": node["authorAssociation"], "body": node["body"],
           "created_at": node["createdAt"], "updated_at": node["updatedAt"]}
    if "path" in node:  # a review comment: the file it is on
        out["path"] = node["path"]
    if parent_id is not None:
        out["parent_id"] = parent_id
    return out


def rest_review(node: dict[str, Any]) -> dict[str, Any]:
    return {"id": node["databaseId"], "node_id": node["id"], "user": rest_user(node["author"]),
            "author_association": node["authorAssociation"], "body": node["body"] or None,
            "state": node["state"], "submitted_at": node["submittedAt"]}


def forbidding_first_issue(responder: Callable[[str, dict[str, Any]], Any]) -> Callable[..., Any]:
    """`responder`, but GitHub answers the first issue of every listing null with FORBIDDEN
    (the sync lists it in `failed_threads`)."""
    def forbidden(query: str, variables: dict[str, Any]) -> Any:
        answer = responder(query, variables)
        for alias, repo in (answer.get("data") or {}).items():
            nodes = (repo or {}).get("issues", {}).get("nodes") if isinstance(repo, dict) else None
            if nodes:
                nodes[0] = None
                answer.setdefault("errors", []).append({
                    "type": "FORBIDDEN", "path": [alias, "issues", "nodes", 0],
                    "message": "Resource not accessible by integration"})
        return answer
    return forbidden


def answering_then_down(responder: Callable[[str, dict[str, Any]], Any], answers: int = 1) -> Callable[..., Any]:
    """`responder` for the first `answers` requests, then GitHub's "something went wrong" to
    every request (a sync stopped part-way)."""
    answered = 0

    def then_down(query: str, variables: dict[str, Any]) -> Any:
        nonlocal answered
        if answered < answers:
            answered += 1
            return responder(query, variables)
        return {"errors": [{"message": "Something went wrong while executing your query."}]}
    return then_down


def paging_by(responder: Callable[[str, dict[str, Any]], Any], size: int) -> Callable[..., Any]:
    """`responder`, every page of every connection at most `size` long (the query's `first*`
    variables lowered): a listing of a few threads takes several requests."""
    def paged(query: str, variables: dict[str, Any]) -> Any:
        return responder(query, {**variables, **{k: min(v, size) for k, v in variables.items()
                                                 if k.startswith("f")}})
    return paged


class ActingOnCall:
    """A `fake_github.graphql_handler`: `responder`'s answers, and `act()` (a plain or a
    coroutine function) done once, after the `call`-th request is answered and before the
    answer is sent. That is GitHub changing (an edit, a comment, a deletion, and the deliveries
    the app handles about it) while the sync holds what it read in earlier requests, the
    rest of a long thread coming in a later one. `calls` counts the requests answered."""

    def __init__(self, responder: Callable[[str, dict[str, Any]], Any], call: int,
                 act: Callable[[], object]) -> None:
        self.responder = responder
        self.call = call
        self.act = act
        self.calls = 0

    async def __call__(self, query: str, variables: dict[str, Any]) -> Any:
        self.calls += 1
        answer = self.responder(query, variables)
        if self.calls == self.call:
            acted = self.act()
            if inspect.isawaitable(acted):
                await acted
        return answer


@asynccontextmanager
async def graphql_context(settings: Any, fake_github: Any, shared_dir: Path, data: FakeData) -> AsyncIterator[Any]:
    """An AppContext reading the fake GitHub with a plain token, its GraphQL answered from
    `data` against GitHub's schema; `data` is also in ctx.extras["data"]."""
    from tests.fakegithub import token_context

    fake_github.graphql_handler = FakeGraphQL(data, shared_dir / "fixtures" / "github-api" / "schema.graphql")
    async with token_context(settings, fake_github) as ctx:
        ctx.extras["data"] = data
        yield ctx
