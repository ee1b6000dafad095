"""Webhook payloads -> thread and comment records (pure: no I/O, no database).

Records have the contract `thread` / comment shape of ../shared/contracts/README.md plus
`github_id`, `node_id`, `updated_at`, `assignees`, what storage keeps beside the contract
(a discussion's `answered`, `answer_chosen_by`, `category`; a review comment's `path`), and a
few extra keys that storage ignores (`draft`, `merged_by`, `review_state`, `parent_id`,
`in_reply_to_id`). Rules shared with the GraphQL sync (bot.github.sync), so both paths give
identical rows:

- a key is present only when the payload carries the field: `bot.store.threads.upsert_thread`
  leaves absent keys alone, so a thin payload (e.g. `issues.pinned`) never blanks a field;
- `""` becomes None (GraphQL gives "" where REST gives null); bodies stay strings for
  comments (`""` when null), and may be None for threads;
- timestamps are normalised to `YYYY-MM-DDTHH:MM:SSZ` (UTC);
- a bot is `type == "Bot"` or a login ending in `[bot]` (`is_bot_login`);
- comment kinds, one per id space GitHub numbers them in: `comment` (issue and pull-request
  comments), `review`, `review_comment`, `discussion_comment` (discussion comments and their
  replies; the contract record calls them `comment`: bot.store.threads.comment_record).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from analyzers.accounts import is_bot_login
from bot.store.types import MAX_THREAD_NUMBER, format_datetime, parse_datetime

THREAD_EVENTS = {"issues": "issue", "pull_request": "pull_request", "discussion": "discussion"}
COMMENT_EVENTS = {
    "issue_comment": ("issue", "comment"),
    "discussion_comment": ("discussion", "discussion_comment"),
    "pull_request_review": ("pull_request", "review"),
    "pull_request_review_comment": ("pull_request", "review_comment"),
}
# Where the comment-like object sits in each comment event's payload.
COMMENT_KEY = {
    "issue_comment": "comment",
    "discussion_comment": "comment",
    "pull_request_review": "review",
    "pull_request_review_comment": "comment",
}
OPENING_ACTIONS = frozenset({"opened", "created"})


class PayloadError(ValueError):
    """A payload lacks a field the handler needs; the worker marks the delivery failed."""


# ------------------------------------------------------------------------------ small helpers
def blank_to_none(value: Any) -> Any:
    return None if value == "" else value


def iso(value: Any) -> str | None:
    """A GitHub timestamp (any ISO 8601 offset, or a bare date) as UTC `...Z`; ''/None -> None."""
    if value is None or value == "":
        return None
    try:
        return format_datetime(parse_datetime(value))
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"not a timestamp: {str(value)[:40]!r}") from exc


def user_fields(user: Mapping[str, Any] | None) -> tuple[str | None, bool | None]:
    """(login, is_bot) of a REST/webhook user object; (None, None) when unknown."""
    if not isinstance(user, Mapping):
        return None, None
    login = blank_to_none(user.get("login"))
    return login, is_bot_login(login, user.get("type"))


def _login(user: Any) -> str | None:
    return user_fields(user)[0]


def _names(items: Any, key: str) -> list[str]:
    return [str(item[key]) for item in items or [] if isinstance(item, Mapping) and item.get(key)]


def _lower(value: Any) -> str | None:
    value = blank_to_none(value)
    return str(value).lower() if value is not None else None


def _require_mapping(payload: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = payload.get(key)
    if not isinstance(value, Mapping):
        raise PayloadError(f"{where}: payload has no {key!r} object")
    return value


def _require_int(obj: Mapping[str, Any], key: str, where: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise PayloadError(f"{where}: missing {key!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise PayloadError(f"{where}: {key!r} is not a number") from exc


def _require_number(obj: Mapping[str, Any], where: str) -> int:
    """A thread number: a whole number GitHub could give (and the INTEGER column can hold)."""
    number = _require_int(obj, "number", where)
    if not 1 <= number <= MAX_THREAD_NUMBER:
        raise PayloadError(f"{where}: 'number' {number} is not a thread number")
    return number


def repo_full_name(payload: Mapping[str, Any], where: str = "payload") -> str:
    repo = payload.get("repository")
    name = repo.get("full_name") if isinstance(repo, Mapping) else None
    if not isinstance(name, str) or "/" not in name:
        raise PayloadError(f"{where}: payload has no repository.full_name")
    return name


# ------------------------------------------------------------------------------ threads
def _common(obj: Mapping[str, Any], repo: str, kind: str, where: str) -> dict[str, Any]:
    number = _require_number(obj, where)
    record: dict[str, Any] = {"id": f"{repo}#{number}", "repo": repo, "number": number, "kind": kind}
    if "id" in obj:
        record["github_id"] = obj.get("id")
    if "node_id" in obj:
        record["node_id"] = blank_to_none(obj.get("node_id"))
    if "title" in obj:
        record["title"] = obj.get("title") or ""
    if "body" in obj:
        record["body"] = blank_to_none(obj.get("body"))
    if "user" in obj:
        record["author"], record["author_is_bot"] = user_fields(obj.get("user"))
    if "author_association" in obj:
        record["author_association"] = blank_to_none(obj.get("author_association"))
    if "labels" in obj:
        record["labels"] = _names(obj.get("labels"), "name")
    if "assignees" in obj:
        record["assignees"] = _names(obj.get("assignees"), "login")
    for key in ("created_at", "updated_at", "closed_at"):
        if key in obj:
            record[key] = iso(obj.get(key))
    if "html_url" in obj:
        record["url"] = blank_to_none(obj.get("html_url"))
    if "closed_by" in obj:  # REST issue objects carry it; webhook ones usually do not
        record["closed_by"] = _login(obj.get("closed_by"))
    return record


def _closing(record: dict[str, Any], action: str | None, sender: Any) -> None:
    """Webhooks name who closed through `sender` of the `closed` action."""
    has_reason = record["kind"] != "pull_request"  # GitHub gives PRs no state_reason
    if action == "closed" and record.get("state") in ("closed", "merged"):
        if sender:
            record["closed_by"] = _login(sender)
        if has_reason:
            record.setdefault("state_reason", None)  # never keep a stale "reopened"
    elif action == "reopened":
        record["closed_by"] = None
        if has_reason:
            record.setdefault("state_reason", "reopened")


def thread_from_issue(
    issue: Mapping[str, Any], repo: str, *, action: str | None = None, sender: Any = None
) -> dict[str, Any]:
    """An issue object (also the issue-shaped view of a pull request in issue_comment)."""
    pr = issue.get("pull_request")
    kind = "pull_request" if isinstance(pr, Mapping) else "issue"
    record = _common(issue, repo, kind, "issue")
    if kind == "pull_request":
        # The issue-shaped view of a PR carries the *issue's* ids; the PR's (which the
        # pull_request events and GraphQL use) differ, so leave the stored ones alone.
        record.pop("github_id", None)
        record.pop("node_id", None)
    if "state" in issue:
        state = "closed" if issue.get("state") == "closed" else "open"
        if kind == "pull_request" and pr.get("merged_at"):  # type: ignore[union-attr]
            state = "merged"
        record["state"] = state
    if "state_reason" in issue:
        record["state_reason"] = _lower(issue.get("state_reason"))
    if "draft" in issue:
        record["draft"] = bool(issue.get("draft"))
    _closing(record, action, sender)
    return record


def thread_from_pull_request(
    pr: Mapping[str, Any], repo: str, *, action: str | None = None, sender: Any = None
) -> dict[str, Any]:
    record = _common(pr, repo, "pull_request", "pull_request")
    if "state" in pr:
        merged = pr.get("merged") is True or bool(pr.get("merged_at"))
        record["state"] = "merged" if merged else ("closed" if pr.get("state") == "closed" else "open")
    if "draft" in pr:
        record["draft"] = bool(pr.get("draft"))
    if pr.get("merged_by"):
        record["merged_by"] = _login(pr.get("merged_by"))
    _closing(record, action, sender)
    if record.get("state") == "merged" and "closed_by" not in record and pr.get("merged_by"):
        record["closed_by"] = record["merged_by"]
    return record


def thread_from_discussion(
    discussion: Mapping[str, Any], repo: str, *, action: str | None = None, sender: Any = None
) -> dict[str, Any]:
    record = _common(discussion, repo, "discussion", "discussion")
    if "state" in discussion or "closed" in discussion:
        # Older payloads say "locked" / "converting" / "transferring": all still open.
        closed = discussion.get("state") == "closed" or discussion.get("closed") is True
        record["state"] = "closed" if closed else "open"
    if "state_reason" in discussion:
        record["state_reason"] = _lower(discussion.get("state_reason"))
    if "answer_chosen_at" in discussion:
        record["answered"] = bool(discussion.get("answer_chosen_at"))
        # who chose it, while one is chosen (GraphQL's answerChosenBy, the same rule)
        record["answer_chosen_by"] = (_login(discussion.get("answer_chosen_by"))
                                      if record["answered"] else None)
    category = discussion.get("category")
    if isinstance(category, Mapping):
        record["category"] = blank_to_none(category.get("name"))
    _closing(record, action, sender)
    if "closed_at" not in discussion:
        # GitHub's discussion payloads carry no closed_at: closed at the event (its
        # updated_at), and no longer closed once reopened.
        if action == "closed" and record.get("state") == "closed" and record.get("updated_at"):
            record["closed_at"] = record["updated_at"]
        elif action == "reopened":
            record["closed_at"] = None
    return record


def thread_from_payload(event: str, payload: Mapping[str, Any], repo: str | None = None) -> dict[str, Any]:
    """The thread record carried by any thread or comment event."""
    where = f"{event}.{payload.get('action')}"
    repo = repo or repo_full_name(payload, where)
    action = payload.get("action")
    sender = payload.get("sender")
    kind = THREAD_EVENTS.get(event) or (COMMENT_EVENTS.get(event) or (None,))[0]
    if kind is None:
        raise PayloadError(f"{where}: not a thread event")
    # Comment events describe the thread as it is, not an action on it.
    thread_action = action if event in THREAD_EVENTS else None
    if kind == "issue":
        return thread_from_issue(_require_mapping(payload, "issue", where), repo, action=thread_action, sender=sender)
    if kind == "pull_request":
        return thread_from_pull_request(
            _require_mapping(payload, "pull_request", where), repo, action=thread_action, sender=sender
        )
    return thread_from_discussion(
        _require_mapping(payload, "discussion", where), repo, action=thread_action, sender=sender
    )


# ------------------------------------------------------------------------------ comments
def _comment(obj: Mapping[str, Any], kind: str, where: str) -> dict[str, Any]:
    github_id = _require_int(obj, "id", where)
    author, is_bot = user_fields(obj.get("user"))
    record: dict[str, Any] = {
        "kind": kind,
        "github_id": github_id,
        "node_id": blank_to_none(obj.get("node_id")),
        "author": author,
        "author_association": blank_to_none(obj.get("author_association")),
        "author_is_bot": is_bot,
        "body": obj.get("body") or "",
    }
    if kind == "review":
        # Reviews have no created_at; GraphQL's submittedAt is the same instant.
        record["created_at"] = iso(obj.get("submitted_at"))
        if obj.get("state"):
            record["review_state"] = str(obj["state"]).lower()
    else:
        record["created_at"] = iso(obj.get("created_at"))
        if "updated_at" in obj:
            record["updated_at"] = iso(obj.get("updated_at"))
    if kind == "review_comment":
        if obj.get("in_reply_to_id") is not None:
            record["in_reply_to_id"] = obj.get("in_reply_to_id")
        if "path" in obj:  # the file the remark is on
            record["path"] = blank_to_none(obj.get("path"))
    if obj.get("parent_id") is not None:  # discussion replies
        record["parent_id"] = obj.get("parent_id")
    return record


def comment_from_issue_comment(comment: Mapping[str, Any]) -> dict[str, Any]:
    return _comment(comment, "comment", "issue_comment")


def comment_from_discussion_comment(comment: Mapping[str, Any]) -> dict[str, Any]:
    return _comment(comment, "discussion_comment", "discussion_comment")


def comment_from_review(review: Mapping[str, Any]) -> dict[str, Any]:
    return _comment(review, "review", "pull_request_review")


def comment_from_review_comment(comment: Mapping[str, Any]) -> dict[str, Any]:
    return _comment(comment, "review_comment", "pull_request_review_comment")


def comment_from_payload(event: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    if event not in COMMENT_EVENTS:
        raise PayloadError(f"{event}: not a comment event")
    where = f"{event}.{payload.get('action')}"
    obj = _require_mapping(payload, COMMENT_KEY[event], where)
    return _comment(obj, COMMENT_EVENTS[event][1], where)


# ------------------------------------------------------------------------------ whole events
@dataclass
class Transfer:
    """An issue or discussion moved between repositories (`old` -> `new`)."""

    old_repo: str
    old_number: int
    new: dict[str, Any]  # thread record at the new place


@dataclass
class Change:
    """What one delivery means for storage."""

    event: str
    action: str | None
    repo: str
    number: int
    thread: dict[str, Any] | None = None  # record to upsert
    comment: dict[str, Any] | None = None  # record to upsert
    delete_thread: bool = False
    delete_comment: tuple[str, int] | None = None  # (kind, github_id)
    transfer: Transfer | None = None
    opened: bool = False  # the thread is new on GitHub: nothing else of it exists yet
    # The thread deleted or transferred away, as the payload shows it (its kind and creation
    # time name what stays deleted: bot.store.threads.thread_grave).
    gone: dict[str, Any] | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def _transfer_side(
    payload: Mapping[str, Any], obj_key: str, repo_key: str, where: str
) -> tuple[Mapping[str, Any], str] | None:
    changes = payload.get("changes")
    if not isinstance(changes, Mapping):
        return None
    obj, repo = changes.get(obj_key), changes.get(repo_key)
    if not isinstance(obj, Mapping) or not isinstance(repo, Mapping):
        return None
    name = repo.get("full_name")
    if not isinstance(name, str) or "/" not in name:
        raise PayloadError(f"{where}: changes.{repo_key} has no full_name")
    return obj, name


def change_from_payload(
    event: str, payload: Mapping[str, Any], canonical: Any = None
) -> Change:
    """Interpret a delivery of a thread or comment event. `canonical(name)` maps former
    repository names to current ones (identity when None)."""
    if not isinstance(payload, Mapping):
        raise PayloadError(f"{event}: payload is not an object")
    canon = canonical or (lambda name: name)
    action = payload.get("action")
    action = action if isinstance(action, str) else None
    where = f"{event}.{action}"
    repo = canon(repo_full_name(payload, where))
    thread = thread_from_payload(event, payload, repo)
    change = Change(event=event, action=action, repo=repo, number=thread["number"], thread=thread)
    kind = thread["kind"]
    discussion = payload.get("discussion")
    if kind == "discussion" and isinstance(discussion, Mapping) and (
            discussion.get("state") == "converting"):
        # made from the issue of its number (GitHub's "Convert to discussion"), which is gone
        change.extras["converted"] = True
    if event in COMMENT_EVENTS:
        comment = comment_from_payload(event, payload)
        if action == "deleted":
            change.delete_comment = (comment["kind"], comment["github_id"])
        elif comment["kind"] == "review" and comment.get("review_state") == "pending":
            pass  # a draft review is visible only to its author; sync skips them too
        else:
            change.comment = comment
        return change
    if action == "deleted":
        change.delete_thread = True
        change.thread, change.gone = None, thread
        return change
    change.opened = action in OPENING_ACTIONS
    obj_key = "issue" if kind in ("issue", "pull_request") else "discussion"
    if action == "transferred":
        side = _transfer_side(payload, f"new_{obj_key}", "new_repository", where)
        if side is None:
            raise PayloadError(f"{where}: payload has no changes.new_{obj_key} / new_repository")
        obj, new_repo = side
        maker = thread_from_issue if obj_key == "issue" else thread_from_discussion
        new = maker(obj, canon(new_repo))
        change.transfer = Transfer(repo, thread["number"], new)
        change.thread, change.gone = None, thread
        return change
    if kind == "discussion":
        _discussion_label(payload, change)
    _named(payload, change)
    side = _transfer_side(payload, f"old_{obj_key}", "old_repository", where)
    if side is not None:  # "opened" at the new place of a transferred issue
        obj, old_repo = side
        change.transfer = Transfer(canon(old_repo), _require_number(obj, where), thread)
        change.opened = False  # it has a history: comments came along
    return change


def _discussion_label(payload: Mapping[str, Any], change: Change) -> None:
    """`discussion.labeled` / `unlabeled` name the label in `label`, and their `discussion`
    carries no `labels` list (GitHub's payloads): the change notes (action, name) in
    `extras["discussion_label"]`, applied to the stored labels by the handler
    (bot.webhooks.events). A payload that does carry the list is taken as it is."""
    if change.action not in ("labeled", "unlabeled") or change.thread is None:
        return
    if "labels" in change.thread:
        return
    label = payload.get("label")
    name = label.get("name") if isinstance(label, Mapping) else None
    if isinstance(name, str) and name:
        change.extras["discussion_label"] = (change.action, name)


# What a label or assignee delivery adds or removes, by the field of the thread record it changes.
_NAMED = {"labeled": ("labels", "label", "name", True),
          "unlabeled": ("labels", "label", "name", False),
          "assigned": ("assignees", "assignee", "login", True),
          "unassigned": ("assignees", "assignee", "login", False)}


def _named(payload: Mapping[str, Any], change: Change) -> None:
    """`labeled` / `unlabeled` name their label (`label`), `assigned` / `unassigned` their
    assignee (`assignee`): noted in `extras["named"]` as (field, name, added). Two such
    deliveries of one second (GitHub's `updated_at` counts seconds) carry lists the times do
    not order; the handler then applies only the change each names
    (bot.webhooks.events._same_second)."""
    spec = _NAMED.get(change.action or "")
    if spec is None or change.thread is None:
        return
    field_name, key, name_key, added = spec
    obj = payload.get(key)
    name = obj.get(name_key) if isinstance(obj, Mapping) else None
    if isinstance(name, str) and name:
        change.extras["named"] = (field_name, name, added)
