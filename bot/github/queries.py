"""Every GraphQL document the project sends to GitHub, and the builders that compose them.

Why builders and not one fixed query: one request carries many *slots* at once, so a sync of
seven repositories costs about one request per hundred threads. A slot is either a page of
one (repository, kind) stream, ordered by `updatedAt` descending, or the continuation of one
long connection (the comments of a thread with more than fit nested, the reviews of a pull
request, ...). Each slot gets its own alias and its own variables.

tests/test_graphql_schema.py validates `example_documents()` (every shape a builder can
produce) against GitHub's public schema with graphql-core.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# How many children are fetched nested inside a page of threads. Larger means fewer
# continuation requests but bigger responses; most threads in these repositories have fewer
# than 30 comments.
NESTED_COMMENTS = 40
NESTED_REVIEWS = 20
NESTED_REVIEW_COMMENTS = 20
NESTED_REPLIES = 10
PAGE_MAX = 100  # GitHub's limit for `first`

RATE_LIMIT = "rateLimit { cost remaining resetAt limit }"

FRAGMENTS: dict[str, str] = {
    "ActorFields": "fragment ActorFields on Actor { __typename login }",
    "PageFields": "fragment PageFields on PageInfo { hasNextPage endCursor }",
    "CommentFields": """
fragment CommentFields on IssueComment {
  id databaseId body createdAt updatedAt authorAssociation isMinimized minimizedReason
  author { ...ActorFields }
}""",
    "ReviewCommentFields": """
fragment ReviewCommentFields on PullRequestReviewComment {
  id databaseId body createdAt updatedAt authorAssociation path isMinimized minimizedReason
  author { ...ActorFields }
}""",
    "ReviewFields": """
fragment ReviewFields on PullRequestReview {
  id databaseId body state createdAt submittedAt updatedAt authorAssociation
  isMinimized minimizedReason
  author { ...ActorFields }
  comments(first: $nestedReviewComments) {
    pageInfo { ...PageFields }
    nodes { ...ReviewCommentFields }
  }
}""",
    "DiscussionCommentFields": """
fragment DiscussionCommentFields on DiscussionComment {
  id databaseId body createdAt updatedAt authorAssociation deletedAt
  isMinimized minimizedReason
  author { ...ActorFields }
}""",
    "DiscussionCommentWithReplies": """
fragment DiscussionCommentWithReplies on DiscussionComment {
  ...DiscussionCommentFields
  replies(first: $nestedReplies) {
    pageInfo { ...PageFields }
    nodes { ...DiscussionCommentFields }
  }
}""",
    "IssueFields": """
fragment IssueFields on Issue {
  __typename id databaseId number title body url state stateReason(enableDuplicate: true)
  createdAt updatedAt closedAt authorAssociation
  author { ...ActorFields }
  labels(first: 50) { nodes { name } }
  assignees(first: 20) { nodes { login } }
  timelineItems(itemTypes: [CLOSED_EVENT], last: 1) {
    nodes { ... on ClosedEvent { actor { ...ActorFields } } }
  }
  comments(first: $nestedComments) {
    pageInfo { ...PageFields }
    nodes { ...CommentFields }
  }
}""",
    "PullRequestFields": """
fragment PullRequestFields on PullRequest {
  __typename id databaseId number title body url state merged
  createdAt updatedAt closedAt mergedAt authorAssociation
  author { ...ActorFields }
  mergedBy { ...ActorFields }
  labels(first: 50) { nodes { name } }
  assignees(first: 20) { nodes { login } }
  timelineItems(itemTypes: [CLOSED_EVENT], last: 1) {
    nodes { ... on ClosedEvent { actor { ...ActorFields } } }
  }
  comments(first: $nestedComments) {
    pageInfo { ...PageFields }
    nodes { ...CommentFields }
  }
  reviews(first: $nestedReviews) {
    pageInfo { ...PageFields }
    nodes { ...ReviewFields }
  }
}""",
    "DiscussionFields": """
fragment DiscussionFields on Discussion {
  __typename id databaseId number title body url closed stateReason
  createdAt updatedAt closedAt authorAssociation answerChosenAt
  author { ...ActorFields }
  answerChosenBy { ...ActorFields }
  category { name }
  labels(first: 50) { nodes { name } }
  comments(first: $nestedComments) {
    pageInfo { ...PageFields }
    nodes { ...DiscussionCommentWithReplies }
  }
}""",
}

# An issue's stateReason is asked with enableDuplicate: without it GitHub answers an issue
# closed as a duplicate NOT_PLANNED, where REST and the webhooks say `duplicate` (the review
# state reads a duplicate close as closed_other, a not_planned one from its comments).

# Which fragment each stream kind selects, and the repository connection it pages.
STREAMS: dict[str, tuple[str, str]] = {
    "issue": ("issues", "IssueFields"),
    "pull_request": ("pullRequests", "PullRequestFields"),
    "discussion": ("discussions", "DiscussionFields"),
}

# Continuations: (GraphQL type of the parent node, connection field) -> child fragment.
CONTINUATIONS: dict[tuple[str, str], str] = {
    ("Issue", "comments"): "CommentFields",
    ("PullRequest", "comments"): "CommentFields",
    ("PullRequest", "reviews"): "ReviewFields",
    ("PullRequestReview", "comments"): "ReviewCommentFields",
    ("Discussion", "comments"): "DiscussionCommentWithReplies",
    ("DiscussionComment", "replies"): "DiscussionCommentFields",
}

_SPREAD = re.compile(r"\.\.\.([A-Z][A-Za-z]*)")


def _with_fragments(body: str) -> str:
    """Appends exactly the fragments the body uses, transitively (GraphQL rejects unused ones)."""
    needed: list[str] = []
    todo = _SPREAD.findall(body)
    while todo:
        name = todo.pop()
        if name in needed or name not in FRAGMENTS:
            continue
        needed.append(name)
        todo.extend(_SPREAD.findall(FRAGMENTS[name]))
    return body + "\n" + "\n".join(FRAGMENTS[n].strip() for n in sorted(needed))


@dataclass(frozen=True)
class StreamSlot:
    owner: str
    name: str
    kind: str  # issue | pull_request | discussion
    first: int
    after: str | None


@dataclass(frozen=True)
class ContinuationSlot:
    node_id: str
    typename: str  # Issue | PullRequest | PullRequestReview | Discussion | DiscussionComment
    field: str  # comments | reviews | replies
    after: str | None


def _uses(body: str, var: str) -> bool:
    return re.search(r"\$" + var + r"\b", body) is not None


def build_sync_query(
    streams: list[StreamSlot], continuations: list[ContinuationSlot]
) -> tuple[str, dict[str, Any]]:
    """One request: stream pages aliased s0.., continuations aliased c0.. ; returns (doc, vars)."""
    decls: list[str] = []
    parts: list[str] = [RATE_LIMIT]
    variables: dict[str, Any] = {}
    for i, slot in enumerate(streams):
        field, fragment = STREAMS[slot.kind]
        decls += [f"$o{i}: String!", f"$n{i}: String!", f"$f{i}: Int!", f"$a{i}: String"]
        variables.update({f"o{i}": slot.owner, f"n{i}": slot.name, f"f{i}": slot.first,
                          f"a{i}": slot.after})
        parts.append(
            # the repository's id and current name: a former name GitHub resolves, or a row
            # stored under a name from before a rename, is settled on the current one; and
            # whether it is private (nothing of a private repository is stored)
            f"s{i}: repository(owner: $o{i}, name: $n{i}) {{ databaseId nameWithOwner updatedAt "
            f"isPrivate "
            f"{field}(first: $f{i}, after: $a{i}, "
            "orderBy: {field: UPDATED_AT, direction: DESC}) { totalCount pageInfo { ...PageFields } "
            f"nodes {{ ...{fragment} }} }} }}"
        )
    for j, slot in enumerate(continuations):
        fragment = CONTINUATIONS[(slot.typename, slot.field)]
        decls += [f"$id{j}: ID!", f"$c{j}: String"]
        variables.update({f"id{j}": slot.node_id, f"c{j}": slot.after})
        parts.append(
            f"c{j}: node(id: $id{j}) {{ __typename ... on {slot.typename} {{ "
            f"{slot.field}(first: {PAGE_MAX}, after: $c{j}) {{ pageInfo {{ ...PageFields }} "
            f"nodes {{ ...{fragment} }} }} }} }}"
        )
    body_parts = "\n  ".join(parts)
    # Nested sizes are declared only when a selected fragment uses them.
    nested = {
        "nestedComments": NESTED_COMMENTS,
        "nestedReviews": NESTED_REVIEWS,
        "nestedReviewComments": NESTED_REVIEW_COMMENTS,
        "nestedReplies": NESTED_REPLIES,
    }
    doc_without_decls = _with_fragments("{\n  " + body_parts + "\n}")
    for var, value in nested.items():
        if _uses(doc_without_decls, var):
            decls.append(f"${var}: Int!")
            variables[var] = value
    header = "query Sync(" + ", ".join(decls) + ")" if decls else "query Sync"
    return _with_fragments(header + " {\n  " + body_parts + "\n}"), variables


@dataclass(frozen=True)
class CheckSlot:
    kind: str  # issue | pull_request | discussion (the stored thread's)
    number: int


# What a check reads of a thread asked by number: where GitHub has it now (a thread transferred
# away answers from its new repository, under its new number).
_CHECKED = "number url repository { nameWithOwner isPrivate }"


def build_check_query(owner: str, name: str, slots: list[CheckSlot]) -> tuple[str, dict[str, Any]]:
    """One request asking about stored threads of one repository by number: the repository
    aliased r, the threads t0.. (`issueOrPullRequest` for issues and pull requests,
    `discussion` for discussions). GitHub answers null with a NOT_FOUND error for a thread
    deleted, and for every one of a feature turned off (hasIssuesEnabled,
    hasDiscussionsEnabled: asked too). Returns (doc, vars)."""
    decls = ["$o: String!", "$n: String!"]
    variables: dict[str, Any] = {"o": owner, "n": name}
    parts: list[str] = []
    for k, slot in enumerate(slots):
        decls.append(f"$m{k}: Int!")
        variables[f"m{k}"] = int(slot.number)
        if slot.kind == "discussion":
            parts.append(f"t{k}: discussion(number: $m{k}) {{ __typename {_CHECKED} }}")
        else:
            parts.append(f"t{k}: issueOrPullRequest(number: $m{k}) {{ __typename "
                         f"... on Issue {{ {_CHECKED} }} ... on PullRequest {{ {_CHECKED} }} }}")
    body = "\n    ".join(parts)
    doc = (f"query Check({', '.join(decls)}) {{\n  {RATE_LIMIT}\n"
           f"  r: repository(owner: $o, name: $n) {{\n    nameWithOwner hasIssuesEnabled "
           f"hasDiscussionsEnabled\n    {body}\n  }}\n}}")
    return doc, variables


RECEPTION_QUERY = """
query Reception($ids: [ID!]!) {
  rateLimit { cost remaining resetAt limit }
  nodes(ids: $ids) {
    __typename
    id
    ... on Minimizable { isMinimized minimizedReason }
    ... on Reactable {
      up: reactions(content: THUMBS_UP) { totalCount }
      down: reactions(content: THUMBS_DOWN) { totalCount }
    }
  }
}
""".strip()

RATE_LIMIT_QUERY = "query RateLimit { " + RATE_LIMIT + " }"

# Whether stored comments (issue, review and discussion comments, reviews) are hidden on
# GitHub now, a hundred node ids a request (the nightly sync: hiding moves no time GitHub pages
# threads by, and no webhook tells of it). A comment deleted answers null with NOT_FOUND.
HIDDEN_QUERY = """
query Hidden($ids: [ID!]!) {
  rateLimit { cost remaining resetAt limit }
  nodes(ids: $ids) {
    __typename
    id
    ... on Minimizable { isMinimized minimizedReason }
    ... on Comment { body updatedAt }
  }
}
""".strip()


def example_documents() -> list[tuple[str, str]]:
    """(name, document) for every query shape the project sends; the schema test checks them."""
    docs = [("reception", RECEPTION_QUERY), ("rate_limit", RATE_LIMIT_QUERY),
            ("hidden", HIDDEN_QUERY)]
    for kind in STREAMS:
        doc, _ = build_sync_query([StreamSlot("o", "n", kind, 100, None)], [])
        docs.append((f"stream:{kind}", doc))
    for typename, field in CONTINUATIONS:
        doc, _ = build_sync_query([], [ContinuationSlot("X", typename, field, "c")])
        docs.append((f"continuation:{typename}.{field}", doc))
    mixed, _ = build_sync_query(
        [StreamSlot("o", "n", k, 10, "x") for k in STREAMS],
        [ContinuationSlot("X", t, f, None) for t, f in CONTINUATIONS],
    )
    docs.append(("mixed", mixed))
    check, _ = build_check_query("o", "n", [CheckSlot(k, 1) for k in STREAMS])
    docs.append(("check", check))
    return docs
