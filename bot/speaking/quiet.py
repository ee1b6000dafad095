"""When the app stays quiet: pure rules over the live thread (no I/O).

A maintainer already answered, the issue is old, closed, locked (read live), assigned or labelled as
handled, a pull request already links it, the author is a bot, the repository's config turns
it off... `quiet_reason` returns the reason, or None to go ahead. Also the trigger names the
decision is made for.
"""

from __future__ import annotations

import logging
import re
from datetime import datetime, timedelta
from typing import Any

from analyzers.accounts import by_bot, is_bot_login
from bot.analysis import hidden_from_discussion
from bot.command_syntax import only_commands, opening_command
from bot.speaking.repo_config import RepoConfig
from bot.store.types import parse_datetime

log = logging.getLogger(__name__)

# What triggered a decision: "<event>.<action>" of a webhook, or "command" (/rltracker recheck).
NEW_TRIGGERS = frozenset({"issues.opened", "command"})
EDIT_TRIGGERS = frozenset({"issues.edited"})
# An issue reopened by its author after the opening decision found it closed (closed by
# accident, or before the worker ran): decided then as a new one (bot.speaking.decide).
REOPEN_TRIGGERS = frozenset({"issues.reopened"})
PROPOSAL_TRIGGERS = frozenset({"issues.opened", "pull_request.opened"})
# An edit of a thread that may hold the rule summary: rewritten for what it proposes now.
SUMMARY_EDIT_TRIGGERS = frozenset({"issues.edited", "pull_request.edited"})
COMMENT_TRIGGERS = frozenset({"issue_comment.created", "issue_comment.edited"})
DELETE_TRIGGERS = frozenset({"issue_comment.deleted", "discussion_comment.deleted"})  # the app's own comment deleted: noted
MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
# What GitHub calls a maintainer whose organisation membership is private: their role is
# asked of GitHub before the app speaks (`unlabelled_replies`, the failure comment's author).
UNLABELLED = frozenset({"CONTRIBUTOR", "NONE"})
WRITE_ROLES = frozenset({"write", "maintain", "admin"})  # a repository role that maintains it
MAX_AGE = timedelta(hours=48)
CONFIG_OFF = ("config_off", "failure comments are turned off in .github/rltracker.yml")
# A report its repository's maintainer opened (tracking a regression, a CI run gone wrong):
# they know the framework's options; the rule summary's `maintainer_author` likewise.
MAINTAINER_AUTHOR = ("maintainer_author", "opened by a maintainer, who knows the framework's options")


def maintainer_replies(record: dict[str, Any], after: datetime | None = None) -> list[dict[str, Any]]:
    """Comments by maintainers other than the opener (commands and the app's own excluded)."""
    return [c for c in replies(record, after)
            if (c.get("author_association") or "").upper() in MAINTAINERS]


def unlabelled_replies(record: dict[str, Any], after: datetime | None = None) -> list[dict[str, Any]]:
    """Replies whose author_association does not say maintainer although they may be one
    (CONTRIBUTOR or NONE: GitHub's word for an organisation member whose membership is
    private); their role is asked of GitHub before posting or rewriting."""
    return [c for c in replies(record, after)
            if (c.get("author_association") or "NONE").upper() in UNLABELLED]


def replies(record: dict[str, Any], after: datetime | None = None) -> list[dict[str, Any]]:
    """Comments by people other than the opener (commands alone, bots, the app's own and
    those GitHub shows hidden as spam, abuse or off-topic excluded: the analyzers' rule,
    bot.analysis.hidden_from_discussion), created after `after` when given."""
    out = []
    for c in record.get("comments") or []:
        if by_bot(c):
            continue  # the app's own comments among them: told by their author, never by a
            # marker a person's comment may hold too (security71)
        if hidden_from_discussion(c):
            continue
        if c.get("author") and c.get("author") == record.get("author"):
            continue
        body = c.get("body") or ""
        if only_commands(body):
            continue
        if after is not None:
            created = parse_datetime(c.get("created_at"))
            if created is None or created <= after:
                continue
        out.append(c)
    return out


def issue_ref(number: int) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w/&])#{number}(?!\d)")


def quiet_reason(
    record: dict[str, Any],
    *,
    config: RepoConfig,
    trigger: str,
    now: datetime,
    ignore_labels: set[str] | frozenset[str] = frozenset(),
    linked_pr: int | None = None,
    paused: bool = False,
    paused_reason: str | None = None,
    muted: bool = False,
) -> tuple[str, str] | None:
    """(code, reason) when the app must stay quiet on this issue; None when it may speak.

    `command` (a /rltracker recheck by the author or a maintainer) lifts the rules about
    maintainers being on it (their own issue among them) and about age: someone asked. A
    thread whose opening post says `/rltracker ignore` or `stop` is muted (`record`'s body:
    the stored one, or the live one right before posting) as one a comment muted.
    """
    if not config.failure_comments:
        return CONFIG_OFF
    if paused:
        return "paused", "comments are paused for this repository" + (
            f" ({paused_reason})" if paused_reason else ""
        )
    if muted or opening_command(record.get("body")) is not None:  # (in a comment or the opening post)
        return "muted", "the thread was muted with /rltracker ignore or stop"
    if record.get("kind") != "issue":
        return "not_issue", "only issues get failure comments (not pull requests or discussions)"
    if record.get("state") != "open":
        return "closed", "the issue is closed"
    if record.get("locked"):  # (known from the live issue, read right before posting)
        return "locked", "the conversation is locked"
    if by_bot(record):
        return "bot_author", "the issue was opened by a bot"
    if trigger == "command":
        return None
    if (record.get("author_association") or "").upper() in MAINTAINERS:
        return MAINTAINER_AUTHOR
    if maintainer_replies(record):
        return "maintainer_replied", "a maintainer has already replied"
    if record.get("assignees"):
        return "assigned", "the issue is already assigned"
    ignored = {label.lower() for label in ignore_labels} | {
        label.lower() for label in config.ignore_labels
    } | {label.lower() for label in config.labels.values()}
    labels = [label for label in record.get("labels") or [] if label.lower() not in ignored]
    if labels:
        return "labelled", "the issue is already labelled (" + ", ".join(sorted(labels))[:200] + ")"
    if linked_pr is not None:
        return "linked_pr", f"a linked pull request (#{linked_pr}) addresses it"
    created = parse_datetime(record.get("created_at"))
    if created is not None and now - created > MAX_AGE:
        return "too_old", "the issue was opened more than 48 hours before processing"
    return None


def _hidden_reasons(stored: dict[str, Any]) -> dict[tuple[Any, datetime], str]:
    """(author, created_at) -> minimized_reason of the stored comments GitHub shows hidden."""
    out = {}
    for c in stored.get("comments") or []:
        created = parse_datetime(c.get("created_at"))
        if c.get("minimized_reason") and created is not None:
            out[(c.get("author"), created)] = c["minimized_reason"]
    return out


def live_record(issue: dict[str, Any], comments: list[dict[str, Any]], stored: dict[str, Any]) -> dict[str, Any]:
    """The stored record with the live issue's state, lock, labels, assignees, body and comments
    (for the quiet rules: what is composed is composed from the stored thread).
    REST does not say which comments GitHub shows hidden: a live comment keeps the
    `minimized_reason` the sync stored for it (same author, same creation time), so a reply
    hidden as spam is no reply live either."""
    record = dict(stored)
    hidden = _hidden_reasons(stored)
    user = issue.get("user") or {}
    record["state"] = "open" if issue.get("state") == "open" else "closed"
    record["kind"] = "pull_request" if issue.get("pull_request") is not None else stored.get("kind", "issue")
    record["locked"] = bool(issue.get("locked"))
    record["labels"] = [
        (lab.get("name") if isinstance(lab, dict) else str(lab)) for lab in issue.get("labels") or []
    ]
    record["assignees"] = [a.get("login") for a in issue.get("assignees") or [] if isinstance(a, dict)]
    if isinstance(issue.get("body"), str):  # `/rltracker ignore` edited in meanwhile
        record["body"] = issue["body"]
    if issue.get("author_association"):
        record["author_association"] = issue.get("author_association")
    if user.get("login"):
        record["author"] = user.get("login")
        record["author_is_bot"] = is_bot_login(user.get("login"), user.get("type"))
    record["comments"] = [
        {
            "author": who.get("login"),
            "author_association": c.get("author_association"),
            "author_is_bot": is_bot_login(who.get("login"), who.get("type")),
            "created_at": c.get("created_at"),
            "body": c.get("body") or "",
        }
        for c in comments for who in [c.get("user") or {}]
    ]
    if hidden:
        for c in record["comments"]:
            created = parse_datetime(c.get("created_at"))
            reason = hidden.get((c["author"], created)) if created is not None else None
            if reason:
                c["minimized_reason"] = reason
    return record
