"""`/rltracker ...` commands in issue, pull-request and discussion comments, and in
pull-request review comments and reviews (answered in the pull request's conversation).

    /rltracker recheck            re-read the config and re-run the analysis and the decision
    /rltracker ignore             no more comments from the app on this thread
    /rltracker stop               minimise the app's comment(s) here and mute the thread
    /rltracker methods <failure>  reply with the methods for that failure in this framework
    /rltracker rules              reply with this framework's contribution-rule summary
    /rltracker kind <failure>     a person's verdict: this reports that kind of training failure
    /rltracker not-a-failure      a person's verdict: this is no failure report (`kind none` too)
    /rltracker resume             lift the pause of the app's comments in this repository

Only the thread's author or a maintainer (author_association OWNER, MEMBER, COLLABORATOR) may
use them (`resume` a maintainer only: it speaks for the repository, not the thread). A MEMBER,
who belongs to the owning organisation but may not have write access to the repository, and a
COLLABORATOR, who may have been invited with read or triage, are asked of GitHub for write
access before any command on a thread not their own and before `resume` anywhere, and so is a
CONTRIBUTOR or NONE (GitHub's word for a member whose membership is private). Anyone else
gets no answer (a skipped action records why; a payload naming no commenter is never the
thread's author's). Bots and the app's own comments are ignored without a record. Each command comment is handled once: its
Action row's dedupe key carries the comment id, so a redelivery does not answer twice. A
command the app cannot do as written (unknown, an unknown kind for `kind` or `methods`,
several in one comment) gets one note (`_note`), which never repeats what was typed;
`/rltracker help` gets the commands. Replies and notes are REPLIES_PER_HOUR a thread in an
hour at most. A comment deleted before its delivery was handled is not acted on.

Verdicts (`kind`, `not-a-failure`) are stored per thread, the latest winning (bot/store/
verdicts.py), with who gave them and what the analyzer said then; `<failure>` is read as for
`methods` (a key or a title), and an unknown one is recorded as a skip and changes nothing.
A kind rewrites the app's failure comment there for that kind (bot/speaking/verdict.py), and
later edits and rechecks keep it; not-a-failure minimises the comment and mutes the thread,
as `stop` does, until a later kind undoes it. What is done is the thread's latest verdict's,
whichever command's delivery does it. Both are acknowledged with a reaction, and `rltracker verdicts export` writes
them as labelled threads. A verdict whose comment is deleted, or edited so that its command is
gone or another, is taken back (`handle_retraction`; bot.speaking.verdict.retract).

The opening post of an issue, pull request or discussion may say `/rltracker ignore` or
`stop` (an author ending their report with it): done as in a comment, when it is opened or an
edit of its body adds the line (`handle_opening_command`); the other commands are not read
there. The opening decision reads the line itself (bot.speaking.situation: the thread counts
as muted), since the delivery's handlers run in no fixed order. Command lines of the opening
post, like those of comments, are no part of what the analyzers read (bot.analysis).

Edited comments: an edit that adds a command, or changes one (a misspelt `/rltracker metods`
made right), is handled as a new comment's command would be. An edit that leaves the command
as it was is not: the comment was answered already, or was written when the app could not
answer it, and fixing a typo elsewhere in it is no request (nor are words added after a
command that reads none, nor is a command line taken out). A comment is still answered once
at most: an edit that changes a command already answered, or adds a command line below it,
records why nothing was done and says so in the comment's one note (write a new comment to
ask again).
"""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial
from typing import Any

import gidgethub
from gidgethub import sansio
from gidgethub.routing import Router
from sqlalchemy import delete, func, select

from analyzers.accounts import is_bot_login
from analyzers.catalog import canonical_repo, framework_id
from bot.command_syntax import opening_command, parse_command, parse_commands
from bot.github.client import rate_limit_wait, refused_for_good
from bot.speaking.claims import delivery_of
from bot.speaking.posting import (
    DELETED,
    NOT_PERMITTED,
    REFUSAL_REASONS,
    DiscussionLocked,
    deletion_of,
    post_reply,
    record_refusal,
    reply_once,
)
from bot.speaking.quiet import MAINTAINERS
from bot.speaking.records import command_key, comment_ref, record_once, record_skip
from bot.speaking.render import command_note, is_app_comment, methods_reply, rules_reply
from bot.speaking.repo_config import effective_dry_run, get_repo_config
from bot.speaking.rule_summary import rules_markdown
from bot.speaking.verdict import VERDICT_WORDS, minimize_comments, mute_thread, settle_verdict
from bot.store.models import Action, Repository
from bot.store.privacy import stored_private
from bot.store.types import parse_datetime
from bot.webhooks.privacy import private_flags

log = logging.getLogger(__name__)

router = Router()

COMMANDS = ("recheck", "ignore", "stop", "methods", "rules", "kind", "not-a-failure", "resume")
THREAD_COMMANDS = ("recheck", "ignore", "stop")  # act on the stored thread (as verdicts do)
# Replies and notes the app posts on one thread in an hour at most (anyone may open an issue
# and so use the commands on it; each comment is answered once, but comments cost nothing):
# past them a command is recorded as skipped (`reply_rate`) and not answered. A command
# acknowledged with a 👍 (ignore, stop, recheck, a verdict, resume) is not held back.
REPLIES_PER_HOUR = 5
# `/rltracker help`, or `/rltracker` alone: answered with the commands (a note, command_note).
HELP_WORDS = ("", "help")
# Pull-request review comments (on a line of the diff) and reviews (their summary): the kind
# the store gives them (bot.webhooks.normalize.COMMENT_EVENTS).
REVIEW_KINDS = {"pull_request_review_comment": "review_comment", "pull_request_review": "review"}
ADD_REACTION = """
mutation($id: ID!) {
  addReaction(input: {subjectId: $id, content: THUMBS_UP}) { reaction { content } }
}
"""
ADD_DISCUSSION_COMMENT = """
mutation($id: ID!, $body: String!) {
  addDiscussionComment(input: {discussionId: $id, body: $body}) { comment { id databaseId } }
}
"""
# A reply in a discussion's thread (a command written as a reply to a comment is answered
# there): `replyToId` is the thread's top comment (GitHub threads one level deep).
ADD_DISCUSSION_REPLY = """
mutation($id: ID!, $body: String!, $replyTo: ID!) {
  addDiscussionComment(input: {discussionId: $id, body: $body, replyToId: $replyTo}) {
    comment { id databaseId }
  }
}
"""
# The thread a discussion comment is in, and that thread's latest replies, where an answer
# GitHub created without answering is found by its marker: a reply's thread is its `replyTo`
# (GitHub threads one level deep); a top-level comment (`replyTo` null) starts its own.
THREAD_OF_COMMENT = """
query($id: ID!) {
  node(id: $id) {
    ... on DiscussionComment {
      id
      replies(last: 100) { nodes { id databaseId body viewerDidAuthor } }
      replyTo { id replies(last: 100) { nodes { id databaseId body viewerDidAuthor } } }
    }
  }
}
"""
# Whether a discussion is locked (GitHub's schema: Discussion implements Lockable), read when
# GitHub refuses a reply there.
DISCUSSION_LOCKED = """
query($id: ID!) { node(id: $id) { ... on Discussion { locked } } }
"""
# The discussion's latest top-level comments, where a reply GitHub created without answering
# (a 5xx, a lost connection) is found by its marker; a command reply comes soon after its
# command, so it is among the last hundred.
LATEST_DISCUSSION_COMMENTS = """
query($id: ID!) {
  node(id: $id) {
    ... on Discussion { comments(last: 100) { nodes { id databaseId body viewerDidAuthor } } }
  }
}
"""


def _failure_name(text: str) -> str:
    """A failure key or title as typed, in the one spelling keys use (`Entropy-collapse`,
    `entropy collapse` -> `entropy_collapse`; `KL 持续增大` -> `kl_持续增大`)."""
    return "_".join(text.lower().replace("-", " ").split())


def resolve_failure(text: str) -> str | None:
    """A failure kind from a key (`entropy_collapse`, `entropy-collapse`) or its title, in
    English or Chinese."""
    from analyzers.catalog import load_catalog

    cat = load_catalog()
    wanted = _failure_name(text)
    if wanted in cat.failures:
        return wanted
    for key, kind in cat.failures.items():
        if wanted in (_failure_name(kind.title), _failure_name(kind.title_zh or "")):
            return key
    return None


def parse_verdict(word: str, args: list[str]) -> tuple[bool, str | None] | None:
    """(is a failure report, kind) of `kind <failure>` / `kind none` / `not-a-failure`; None
    when the kind is not one the catalog knows."""
    if word == "not-a-failure":
        return False, None
    text = " ".join(args)
    if _failure_name(text) in ("none", "not_a_failure"):
        return False, None
    kind = resolve_failure(text) if text else None
    return (True, kind) if kind else None


def _is_bot(user: dict[str, Any]) -> bool:
    """A payload's user is a bot: the one judgement of it (`is_bot_login`, any case of `[bot]`)."""
    return is_bot_login(user.get("login"), user.get("type"))


async def _react(ctx: Any, repo: str, comment_id: int, installation_id: int | None,
                 dry_run: bool, comment_node_id: str | None = None, rest: str = "issues",
                 path: str | None = None) -> str:
    """A 👍 on the command: quiet acknowledgement, no extra comment. A discussion comment, a
    discussion or a pull-request review (`comment_node_id`) has no REST reactions endpoint:
    GraphQL `addReaction` on its node. `rest`: `issues` for an issue or pull-request comment,
    `pulls` for a review comment on a line of the diff; `path`: another REST reactions
    endpoint (an issue's or pull request's own, for a command in its opening post). Returns
    `reacted`, `would` (dry run), `refused` (GitHub refused for good: a deleted comment, no
    permission; logged) or `none`
    (no GitHub client or installation). Any other failure (a rate limit, a 5xx, a dropped
    connection) is raised: the delivery is retried, and the retry, finding the command
    done, only reacts (`_acknowledge`)."""
    if dry_run:
        return "would"
    if ctx.github is None or installation_id is None:
        return "none"
    try:
        if comment_node_id:
            await ctx.github.graphql(ADD_REACTION, installation_id=installation_id, id=comment_node_id)
        else:
            gh = await ctx.github.api(installation_id)
            await gh.post(path or f"/repos/{repo}/{rest}/comments/{comment_id}/reactions",
                          data={"content": "+1"})
    except Exception as error:
        # A GraphQL answer with errors NOT_FOUND (the comment deleted) or FORBIDDEN is GitHub's
        # 200, the same however often asked: refused_for_good. One of no type (GitHub's own
        # failure) is not, and raises as its 5xx does: it was taken for a refusal, no 👍 ever.
        if not refused_for_good(error):
            raise
        log.warning("could not react to %s comment %s", repo, comment_node_id or comment_id, exc_info=True)
        return "refused"
    return "reacted"


async def _acknowledge(ctx: Any, data: dict[str, Any], *, repo: str, number: int,
                       comment_id: int, installation_id: int | None, dry_run: bool,
                       kind: str | None, discussion_id: str | None, key: str) -> None:
    """React to the command comment (kind `opening`: to the issue, pull request or
    discussion whose opening post holds the command) unless the command's action says it
    was done (`reacted`, `would_react` in dry run, or `react_refused`); what happened is kept
    in its details, so a retried delivery reacts once more only when the reaction failed."""
    async with ctx.sessionmaker() as session:
        action = await session.scalar(select(Action).where(Action.dedupe_key == key))
        done = dict(action.details or {}) if action is not None else {}
    if done.get("reacted") or done.get("react_refused") or (dry_run and done.get("would_react")):
        return
    if kind == "opening":
        discussion = data.get("discussion")
        if isinstance(discussion, dict):  # a discussion: GraphQL on its node
            if not discussion.get("node_id"):
                return
            outcome = await _react(ctx, repo, 0, installation_id, dry_run,
                                   comment_node_id=str(discussion["node_id"]))
        else:  # an issue or pull request (a pull request's reactions are its issue's)
            outcome = await _react(ctx, repo, 0, installation_id, dry_run,
                                   path=f"/repos/{repo}/issues/{number}/reactions")
    elif discussion_id or kind == "review":  # no REST reactions endpoint: GraphQL on its node
        node_id = ((data.get("review") if kind == "review" else data.get("comment")) or {}).get("node_id")
        if not node_id:
            return
        outcome = await _react(ctx, repo, comment_id, installation_id, dry_run,
                               comment_node_id=str(node_id))
    elif comment_id:
        outcome = await _react(ctx, repo, comment_id, installation_id, dry_run,
                               rest="pulls" if kind == "review_comment" else "issues")
    else:
        return
    flag = {"reacted": "reacted", "would": "would_react", "refused": "react_refused"}.get(outcome)
    if flag:
        await _note_details(ctx, key, **{flag: True})


async def _store_verdict(
    ctx: Any, repo: str, number: int, verdict: tuple[bool, str | None], *, login: str, role: str,
    comment_id: int | None, given_at: datetime | None = None,
) -> dict[str, Any] | None:
    """Store the verdict (as given at `given_at`, the command's time; a newer stored one is
    kept); returns it as given (kept in the command's action: a retraction of a later
    verdict brings it back), None when the thread is gone."""
    from bot.store.threads import get_thread
    from bot.store.verdicts import set_verdict

    is_failure, category = verdict
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        if thread is None:  # deleted meanwhile
            return None
        given = await set_verdict(session, thread, is_failure_report=is_failure,
                                  category=category, login=login, role=role,
                                  comment_id=comment_id, given_at=given_at)
        await session.commit()
    return given


async def _verdict_effects(
    ctx: Any, repo: str, number: int, verdict: tuple[bool, str | None], *,
    installation_id: int | None, dry_run: bool,
) -> str:
    """What the thread's latest verdict does (bot.speaking.verdict.settle_verdict),
    idempotent: a kind rewrites the failure comment for it (lifting the mute and showing
    again the comment an earlier not-a-failure minimised); not-a-failure minimises the
    comment and mutes the thread (as `stop`). The latest, not this command's: a retried
    older command does not undo a newer one."""
    return await settle_verdict(ctx, repo, number, installation_id, dry_run=dry_run)


def _written_at(data: dict[str, Any]) -> datetime | None:
    """When the command was written: the comment's `updated_at` for an edit, else its
    `created_at` (None when the payload does not say)."""
    comment = data.get("comment") or data.get("review") or {}
    value = comment.get("updated_at") if data.get("action") == "edited" else None
    try:
        return parse_datetime(value or comment.get("created_at") or comment.get("submitted_at"))
    except (TypeError, ValueError):
        return None


def _commands_before_edit(data: dict[str, Any]) -> list[tuple[str, list[str]]] | bool:
    """The command lines of an edited comment's previous body ([]: it had none); False when
    the payload does not say what the body was."""
    changes = data.get("changes")
    before = changes.get("body") if isinstance(changes, dict) else None
    if not isinstance(before, dict) or not isinstance(before.get("from"), str):
        return False
    return parse_commands(before["from"])


ARGUMENT_COMMANDS = ("methods", "kind")  # the others take no words after them


def _asks(command: tuple[str, list[str]]) -> tuple[str, tuple[str, ...]]:
    """What a command line asks: its word, and the words after it for a command that reads
    them (`/rltracker ignore` and `/rltracker ignore, thanks` ask the same). A verdict is what
    it gives (`parse_verdict`): `kind KL-Growth` asks what `kind kl_growth` does, and `kind
    none` what `not-a-failure` does, so an edit between them neither takes it back nor is
    told it changed (reread83)."""
    word, args = command
    verdict = parse_verdict(word, args) if word in VERDICT_WORDS else None
    if verdict is not None:
        return "verdict", (verdict[1] or "",) if verdict[0] else ("none",)
    return word, tuple(args) if word in ARGUMENT_COMMANDS else ()


def _same_command(before: list[tuple[str, list[str]]] | bool,
                  after: list[tuple[str, list[str]]]) -> bool:
    """Whether an edit left the comment's commands as they were: the same first command (the
    one a comment does), and no command line it did not have before (a line added below an
    answered command asks for something, and gets the note; a line taken out asks nothing)."""
    if not isinstance(before, list) or not before or not after:
        return False
    if _asks(before[0]) != _asks(after[0]):
        return False
    return {_asks(c) for c in after} <= {_asks(c) for c in before}


async def _answered(ctx: Any, key: str) -> bool:
    """Whether the command comment with this dedupe key was handled (answered, acted on, or
    being answered right now)."""
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Action.id).where(Action.dedupe_key == key)) is not None


async def _retracted(ctx: Any, key: str) -> str | None:
    """How the verdict the command comment with this dedupe key gave was taken back
    (bot.speaking.verdict.retract: "deleted", "edited"), None when it was not."""
    from bot.speaking.verdict import RETRACTED

    async with ctx.sessionmaker() as session:
        details = await session.scalar(select(Action.details).where(Action.dedupe_key == key))
    why = (details or {}).get(RETRACTED)
    return str(why) if why else None


async def _silenced(ctx: Any, repo: str, installation_id: int) -> bool:
    """The app must not speak through this installation here: it is suspended or uninstalled,
    or the repository was removed from it (the command was written before)."""
    from bot.store.installations import silenced_installations

    async with ctx.sessionmaker() as session:
        if installation_id in await silenced_installations(session):
            return True
        removed = await session.scalar(
            select(Repository.removed_installation_id)
            .where(func.lower(Repository.full_name) == repo.lower()))
        return removed == installation_id


async def _not_installed(ctx: Any, repo: str, number: int, ref: str, word: str,
                         verdict: tuple[bool, str | None] | None = None) -> str:
    """A command through an installation suspended or uninstalled, or in a repository removed
    from it: nothing can be said or asked on GitHub there. Recorded (the skip
    `not_installed:{ref}`, on /api/actions) so that the operator can tell why a command was
    not done (it was a delivery `done` and nothing else: user82); a redelivery after the
    unsuspend is still handled (the skip is not the command's answer). A verdict is not
    stored either, as no command is done there (verdicts82: the owner stopped the app acting,
    and the person gets no 👍 to tell it counted): the skip names it (`verdict`: the kind, or
    `none`), so the operator can redeliver it after the unsuspend, or the person give it again."""
    extra: dict[str, Any] = {}
    what = "nothing was done"
    if verdict is not None:
        extra["verdict"] = verdict[1] if verdict[0] else "none"
        what = "the verdict was not stored; redelivered or given again after, it counts"
    await record_skip(ctx, repo, number, "command", f"not_installed:{ref}",
                      "the app's installation here is suspended or uninstalled, or the "
                      f"repository was removed from it: {what}", command=word[:20], **extra)
    return "not_installed"


WRITE_ROLES = frozenset({"write", "maintain", "admin"})
# Associations that say nothing of write access: an organisation member (its base permission
# may be read or none) and a collaborator (who may be given read or triage only).
ASKED_ASSOCIATIONS = ("MEMBER", "COLLABORATOR")
# What GitHub calls an organisation member whose membership is private (as anyone with no
# tie to the repository): asked of GitHub too where a maintainer's rights matter.
UNLABELLED_ASSOCIATIONS = ("CONTRIBUTOR", "NONE", "")


async def _may_write(ctx: Any, repo: str, installation_id: int | None, login: str) -> bool:
    """Whether the person has write access to the repository (role write, maintain or admin,
    asked of GitHub). author_association MEMBER says only that they belong to the
    organisation that owns it, which may give no access beyond reading, and COLLABORATOR
    that they were invited with some role, maybe read or triage; maintainers hide the
    app's comments with write access, and a resume undoes what they imposed (as a verdict on
    someone else's thread can undo a maintainer's not-a-failure). Without a GitHub
    client or an installation nothing can be asked: no."""
    if ctx.github is None or installation_id is None:
        return False
    return await ctx.github.repository_role(installation_id, repo, login) in WRITE_ROLES


async def handle_command(event: sansio.Event, ctx: Any) -> str:
    """Handle one comment event; returns what happened (for logs and tests)."""
    data = event.data
    kind = REVIEW_KINDS.get(event.event)  # None: an issue, pull-request or discussion comment
    comment = (data.get("review") if kind == "review" else data.get("comment")) or {}
    body = comment.get("body") or ""
    parsed = parse_command(body)
    if parsed is None:
        return "no_command"
    if await private_flags(ctx, [data]) == [True]:
        return "private"  # a private repository: nothing stored, no reply (bot/webhooks/privacy.py)
    if data.get("action") == "edited" and _same_command(_commands_before_edit(data),
                                                        parse_commands(body)):
        return "unchanged_command"
    user = comment.get("user") or {}
    association = (comment.get("author_association") or "").upper()
    sender = data.get("sender") or {}
    if (data.get("action") == "edited" and isinstance(sender, dict) and sender.get("login")
            and sender.get("login") != user.get("login")):
        # Someone else edited the comment (people with write access, and apps, may): the
        # command is the editor's, not the comment author's. The payload says nothing of the
        # editor's association: asked of GitHub below, as a collaborator's would be.
        user, association = sender, "COLLABORATOR"
    # (the app's own comment edited by a maintainer stays the app's: its author and marker)
    written_by = comment.get("user") or {}
    if _is_bot(user) or is_app_comment(body, written_by.get("login"), _is_bot(written_by)):
        return "ignored_bot"
    thread_data = data.get("issue") or data.get("discussion") or data.get("pull_request") or {}
    if not thread_data or "number" not in thread_data:
        raise ValueError("comment payload without issue/discussion number")
    repo = canonical_repo((data.get("repository") or {}).get("full_name") or "")
    number = int(thread_data["number"])
    installation_id = (data.get("installation") or {}).get("id")
    comment_id = int(comment.get("id") or 0)
    # The comment as keys and markers name it: review comments and reviews are numbered apart
    # from issue comments.
    ref = comment_ref(kind, comment_id)
    word, args = parsed
    key = command_key(repo, number, ref)
    stored_kind = kind or ("discussion_comment" if event.event == "discussion_comment" else "comment")
    # A discussion comment: answered in its thread (the one it replies in, or its own when it
    # is a top-level comment), under the command as GitHub shows a reply to it.
    in_thread = (str(comment["node_id"]) if event.event == "discussion_comment"
                 and comment.get("node_id") else None)
    if comment_id and not await _answered(ctx, key) and await _deleted(ctx, stored_kind, comment_id):
        return "deleted"  # its author took it back before it was handled
    if data.get("action") == "edited" and await _answered(ctx, key):
        await record_skip(ctx, repo, number, "command", f"edited_after_answer:{ref}",
                          "this comment's command was answered already; a comment is answered "
                          "once: write a new comment to ask again", command=word[:20])
        # Said where the person waits for the edit to count (once: the note's slot).
        if installation_id is None or not await _silenced(ctx, repo, int(installation_id)):
            dry_run = effective_dry_run(ctx, await get_repo_config(ctx, repo, installation_id))
            await _note(ctx, repo, number, installation_id,
                        "verdict_edited" if await _retracted(ctx, key) == "edited" else "edited", key,
                        (data.get("discussion") or {}).get("node_id"), dry_run, ref,
                        delivery_id=delivery_of(data), in_thread=in_thread)
        return "already_answered"
    login = user.get("login") or None
    author = (thread_data.get("user") or {}).get("login") or None
    is_author = login is not None and login == author
    asked: list[bool] = []  # GitHub's word on the commenter's write access, asked once

    async def may_write() -> bool:
        if not asked:
            asked.append(await _may_write(ctx, repo, installation_id, str(login)))
        return asked[0]

    refuse = partial(_refuse, ctx, data, repo=repo, number=number, installation_id=installation_id,
                     login=login, ref=ref, in_thread=in_thread, word=word)

    if (association in UNLABELLED_ASSOCIATIONS and login is not None
            and (not is_author or word == "resume")):
        # GitHub calls an organisation member whose membership is private CONTRIBUTOR or NONE
        # (the quiet rules ask about such repliers too): where a maintainer's rights matter,
        # asked of GitHub as a MEMBER is; with write access they are one.
        if installation_id is not None and await _silenced(ctx, repo, int(installation_id)):
            return await _not_installed(ctx, repo, number, ref, word)  # (nothing to ask through)
        if await may_write():
            association = "COLLABORATOR"  # (asked below again: answered from `asked`)
    if not is_author and association not in MAINTAINERS:
        return await refuse("not_allowed",
                            "only the thread's author or a maintainer may use /rltracker commands")
    problem: str | None = None
    if word in HELP_WORDS:
        problem = "help"  # the commands listed: no mistake to correct
    elif word not in COMMANDS:
        await record_skip(ctx, repo, number, "command", f"unknown:{ref}",
                          "unknown /rltracker command", command=word[:20])
        problem = "unknown"
    elif word == "methods" and not args:
        # No kind named: the thread's own, as the tracker shows it (a person's verdict, else
        # the analyzer's), which the failure comment's methods are for.
        own = await _shown_kind(ctx, repo, number)
        if own is not None:
            args = [own]
        else:  # (not answered as done: an edit naming a kind is still answered)
            await record_skip(ctx, repo, number, "command", f"no_kind:{ref}",
                              "no failure kind named, and the thread has none (neither found "
                              "by the analyzer nor named by a person)", command=word)
            problem = "no_kind"
    elif word == "methods" and resolve_failure(" ".join(args)) is None:
        # Not answered as done: an edit that makes the kind right is still answered.
        await record_skip(ctx, repo, number, "command", f"unknown_kind:{ref}",
                          "unknown failure kind: `/rltracker methods` takes a kind the catalog "
                          "knows", command=word, asked=" ".join(args)[:40])
        problem = "unknown_kind"
    if word == "resume" and association not in MAINTAINERS:
        return await refuse("not_maintainer", "only a maintainer of the repository may resume "
                            "the app's comments there")
    verdict = parse_verdict(word, args) if word in VERDICT_WORDS else None
    if word in VERDICT_WORDS and verdict is None:
        from analyzers.catalog import load_catalog

        await record_skip(ctx, repo, number, "command", f"unknown_kind:{ref}",
                          "unknown failure kind: `/rltracker kind` takes one of "
                          + ", ".join(load_catalog().failures) + " (or none)",
                          command=word, asked=" ".join(args)[:40])
        problem = "unknown_kind"
    discussion_id = (data.get("discussion") or {}).get("node_id")
    if installation_id is not None and await _silenced(ctx, repo, int(installation_id)):
        return await _not_installed(ctx, repo, number, ref, word, verdict)
    if word == "resume" and association in ASKED_ASSOCIATIONS and not await may_write():
        return await refuse("not_maintainer", "only a maintainer of the repository may resume "
                            "the app's comments there (a member of the organisation or a "
                            "collaborator without write access to the repository is none)")
    if (word != "resume" and not is_author and association in ASKED_ASSOCIATIONS
            and not await may_write()):
        # On a thread not their own a command speaks as a maintainer: `stop` hides the app's
        # comment to the reporter, a verdict can undo a maintainer's not-a-failure and becomes
        # a training label, a recheck lifts the rules that keep the app quiet where people
        # are on it. Only with write access.
        return await refuse("not_maintainer", "only the thread's author or a maintainer of the "
                            "repository may use /rltracker commands on it (a member of the "
                            "organisation or a collaborator without write access to the "
                            "repository is none)", problem="not_allowed")
    # "dry_run: true" in the repository's config holds for commands as for comments.
    dry_run = effective_dry_run(ctx, await get_repo_config(ctx, repo, installation_id))
    if problem is not None:
        if data.get("action") != "edited" and await _answered(ctx, key):
            # The comment's command was answered from a later body (an edit made it right
            # while this delivery waited for a retry): what this older body got wrong was
            # corrected already, and saying so now would contradict the answer.
            return "superseded"
        await _note(ctx, repo, number, installation_id, problem, key, discussion_id, dry_run, ref,
                    delivery_id=delivery_of(data), command=word, in_thread=in_thread)
        return problem
    outcome = await _do_command(event, ctx, repo=repo, number=number, installation_id=installation_id,
                                word=word, args=args, key=key, discussion_id=discussion_id,
                                dry_run=dry_run, comment_id=comment_id, ref=ref, kind=kind,
                                login=login, is_author=is_author, verdict=verdict,
                                in_thread=in_thread)
    if outcome in (word, "posted", "dry_run", "owned", "duplicate") and len(parse_commands(body)) > 1:
        # One command a comment (its dedupe key is the comment's): say the rest were not done
        # (once: the note has its own slot, and a retry of a delivery whose note failed
        # finds the command done and posts it then).
        await _note(ctx, repo, number, installation_id, "more", key, discussion_id, dry_run,
                    ref, done=word, delivery_id=delivery_of(data), in_thread=in_thread)
    return outcome


async def _shown_kind(ctx: Any, repo: str, number: int) -> str | None:
    """The failure kind the tracker shows for the stored thread, None for none (or no thread
    stored yet)."""
    from bot.store.threads import get_thread
    from bot.store.verdicts import shown_kind

    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        return await shown_kind(session, thread.id) if thread is not None else None


async def _made_private(ctx: Any, repo: str) -> bool:
    async with ctx.sessionmaker() as session:
        return await stored_private(session, repo)


async def _do_command(
    event: sansio.Event, ctx: Any, *, repo: str, number: int, installation_id: int | None,
    word: str, args: list[str], key: str, discussion_id: str | None, dry_run: bool,
    comment_id: int, ref: str, kind: str | None, login: str | None, is_author: bool,
    verdict: tuple[bool, str | None] | None, in_thread: str | None = None,
) -> str:
    """Do the command (allowed, known, installed); returns what happened (`word` when done
    now, `posted` / `dry_run` / `owned` for a reply, `duplicate` when done before)."""
    data = event.data
    if word in ("methods", "rules"):
        return await _reply_command(ctx, repo, number, installation_id, word, args, key,
                                    discussion_id, dry_run, ref, delivery_of(data),
                                    in_thread=in_thread)
    # recheck / ignore / stop / kind / not-a-failure: once per command comment, acknowledged
    # with a reaction
    from bot.store.threads import get_thread

    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
    if thread is None and (verdict is not None or word in THREAD_COMMANDS):
        # The delivery's handlers run in no fixed order (gidgethub fetches them as a set):
        # the one storing this comment's thread may not have run yet. A verdict, a mute and a
        # recheck need the thread (and it is worth its analysis then): store it now, as that
        # handler does (a mute on no row was lost: the thread was stored unmuted after it).
        from bot.webhooks.events import handle

        await handle(event.event, data, ctx)
        async with ctx.sessionmaker() as session:
            thread = await get_thread(session, repo, number)
    role = "author" if is_author else "maintainer"
    details: dict[str, Any] = {"command": word, "by": role}
    if thread is None and (verdict is not None or word in THREAD_COMMANDS):
        # Still none: deleted on GitHub (or transferred away) before the command was handled.
        # Nothing to recheck, mute or give a verdict on: said so, not recorded as done. A
        # repository made private since the delivery was checked forgot the thread too: that
        # is what happened, and nothing of it is recorded.
        if await _made_private(ctx, repo):
            return "private"
        await record_skip(ctx, repo, number, "command", f"unknown_thread:{ref}",
                          "the thread is not stored (deleted or moved on GitHub); the command "
                          "was not done", command=word)
        return "unknown_thread"
    if verdict is not None and await _retracted(ctx, key):
        # Taken back since it was done (its comment deleted, its command edited away): a
        # redelivery of the delivery that gave it (GitHub's "Redeliver") does not give it again.
        return "retracted"
    if verdict is not None:
        details.update(is_failure_report=verdict[0], category=verdict[1])
        # Stored before the command is recorded as handled, and its effects finished on a
        # redelivery too: an attempt cut short after the record (the worker stopped or
        # killed) must not leave the verdict unstored or the comment unchanged for good.
        given = await _store_verdict(ctx, repo, number, verdict, login=str(login), role=role,
                                     comment_id=comment_id or None, given_at=_written_at(data))
        if given is None:
            return "unknown_thread"
        details["given"] = given
    recorded = await record_once(
        ctx, repo=repo, number=number, kind="command",
        status="dry_run" if dry_run else "posted", dedupe_key=key,
        reason=f"/rltracker {word}", details=details,
    )
    if not recorded:
        if await _made_private(ctx, repo):
            return "private"  # since the delivery was checked (record_once refused it)
        if verdict is not None:
            await _verdict_effects(ctx, repo, number, verdict, installation_id=installation_id,
                                   dry_run=dry_run)
        elif word == "recheck":
            # Decided again (idempotent: the comment's once-only slot): the decision GitHub
            # refused for a permission, handed back once it was accepted
            # (installations.answer_when_permitted), was otherwise never made again (left76).
            from bot.pipeline import thread_changed

            await thread_changed(ctx, repo, number, trigger="command", payload=data)
        # A retry of a delivery whose reaction failed (a rate limit, a 5xx): react now.
        await _acknowledge(ctx, data, repo=repo, number=number, comment_id=comment_id,
                           installation_id=installation_id, dry_run=dry_run, kind=kind,
                           discussion_id=discussion_id, key=key)
        return "duplicate"
    try:
        if word == "recheck":
            from bot.pipeline import thread_changed

            await thread_changed(ctx, repo, number, trigger="command", payload=data)
        elif word == "ignore":
            await mute_thread(ctx, repo, number)
        elif word == "stop":
            await mute_thread(ctx, repo, number)
            await minimize_comments(ctx, repo, number, installation_id, dry_run, by="stop")
        elif word == "resume":  # the repository's pause (bot.speaking.reception), in dry run too
            from bot.speaking.reception import resume_comments

            resumed = await resume_comments(ctx, repo, by=f"@{login}")
            await _note_details(ctx, key, was_paused=bool(resumed and resumed[0]))
        elif verdict is not None:
            await _verdict_effects(ctx, repo, number, verdict, installation_id=installation_id,
                                   dry_run=dry_run)
    except Exception:
        # The work failed (GitHub 5xx on minimizeComment, the database): the delivery is
        # retried, and the retry must do it, not find the command "already handled". The
        # work itself is idempotent (muting, minimising what is not minimised, a recheck).
        async with ctx.sessionmaker() as session:
            await session.execute(delete(Action).where(Action.dedupe_key == key))
            await session.commit()
        raise
    await _acknowledge(ctx, data, repo=repo, number=number, comment_id=comment_id,
                       installation_id=installation_id, dry_run=dry_run, kind=kind,
                       discussion_id=discussion_id, key=key)
    if word == "recheck":
        # The recheck read the settings file again (bot.speaking.decide): one it could not
        # use is said to whoever asked, in the comment's note (user77; it was a 👍 beside a
        # skip only the tracker's /api/actions showed, and the maintainer who asked to have
        # their fixed file read took the 👍 for "fine").
        config = await get_repo_config(ctx, repo, installation_id)
        if config.source == "invalid" and config.error:
            await _note(ctx, repo, number, installation_id, "config_invalid", key, discussion_id,
                        dry_run, ref, delivery_id=delivery_of(data), in_thread=in_thread,
                        config_error=config.error)
    return word


async def _refuse(
    ctx: Any, data: dict[str, Any], code: str, reason: str, *, repo: str, number: int,
    installation_id: int | None, login: str | None, ref: str, in_thread: str | None, word: str,
    problem: str | None = None,
) -> str:
    """A command that is not the person's to give (`not_allowed`: on a thread not their own,
    without write access; `not_maintainer`: `resume`): the skip `{code}:{ref}` says why, and
    the person is told (`problem`, the note's; `code` by default). Until user77 they got
    nothing: a skip only the operator sees, and a person trying `/rltracker stop` could not
    tell a refusal from a broken app. `/rltracker help` (HELP_WORDS) is not refused: the
    commands, saying none is theirs here and which are on a thread they open (left78: they
    got the refusal, "nothing was done", for asking what they may do), and nothing recorded.
    Each is said once per person a thread, in its own slot (`{repo}#{n}:command:refused:
    {login}:note`, `...:command:help:{login}:note`: a refusal before help does not answer the
    question): their further commands there, and redeliveries, get no second note; within
    the thread's REPLIES_PER_HOUR as any note; not through a suspended or removed
    installation. Returns `help` or `not_allowed`."""
    if word in HELP_WORDS:
        slot, problem = "help", "help"
    else:
        await record_skip(ctx, repo, number, "command", f"{code}:{ref}", reason,
                          command=word[:20])
        slot, problem = "refused", problem or code
    if installation_id is None or not await _silenced(ctx, repo, int(installation_id)):
        who = login.lower() if login else ref  # (a payload naming nobody: once for that comment)
        dry_run = effective_dry_run(ctx, await get_repo_config(ctx, repo, installation_id))
        await _note(ctx, repo, number, installation_id, problem,
                    command_key(repo, number, f"{slot}:{who}"),
                    (data.get("discussion") or {}).get("node_id"), dry_run, ref,
                    delivery_id=delivery_of(data), in_thread=in_thread, stranger=True)
    return "help" if slot == "help" else "not_allowed"


async def _note_details(ctx: Any, key: str, **values: Any) -> None:
    """Add `values` to the details of the command's recorded action."""
    async with ctx.sessionmaker() as session:
        action = await session.scalar(select(Action).where(Action.dedupe_key == key))
        if action is not None:
            action.details = {**(action.details or {}), **values}
            await session.commit()


async def _deleted(ctx: Any, kind: str, comment_id: int) -> bool:
    """Whether the comment (of the stored kind: `comment`, `review_comment`, `review`,
    `discussion_comment`) was deleted (a handled `deleted` delivery noted it): a command its
    author took back before it was handled asks for nothing."""
    from bot.store.threads import comment_grave, graves

    grave = comment_grave(kind, comment_id)
    async with ctx.sessionmaker() as session:
        return grave in await graves(session, {grave})


async def _note(
    ctx: Any, repo: str, number: int, installation_id: int | None, problem: str, key: str,
    discussion_id: str | None, dry_run: bool, ref: str, done: str | None = None,
    delivery_id: str | None = None, command: str | None = None, in_thread: str | None = None,
    config_error: str | None = None, stranger: bool = False,
) -> str:
    """The one reply to a command comment the app could not do as written (`unknown`,
    `unknown_kind` of `command`, `help`: the commands listed, `more`: several commands,
    `done` the one done, or `edited`: the command changed by an edit after it was done), in
    its own slot
    (`{key}:note`, marker `note-to`): once per comment, whatever edits and redeliveries
    follow, and beside a reply to the command itself. Never the person's words."""
    from analyzers.language import detect_language
    from bot.store.threads import get_thread

    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        lang = detect_language(thread.title, thread.body) if thread else "en"
    body = command_note(problem, lang, done=done if done in COMMANDS else None,
                        command=command if command in COMMANDS else None,
                        config_error=config_error, stranger=stranger)
    return await _post_answer(ctx, repo, number, installation_id, body, f"{key}:note",
                              discussion_id, dry_run, f"<!-- rltracker:note-to:{ref} -->",
                              {"note": problem}, delivery_id, ref, in_thread=in_thread)


async def _reply_command(
    ctx: Any, repo: str, number: int, installation_id: int | None, word: str, args: list[str],
    key: str, discussion_id: str | None, dry_run: bool, ref: str, delivery_id: str | None = None,
    *, in_thread: str | None = None,
) -> str:
    from analyzers.language import detect_language
    from bot.store.threads import get_thread

    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        lang = detect_language(thread.title, thread.body) if thread else "en"
    framework = framework_id(repo)
    public = ctx.settings.public_url
    if word == "methods":  # (a kind the catalog lacks, or none, got a note: handle_command)
        body = methods_reply(resolve_failure(" ".join(args)) or "?", framework, lang, public)
    else:
        body = rules_reply(await rules_markdown(ctx, repo, lang, topics=None), framework, lang, public)
    return await _post_answer(ctx, repo, number, installation_id, body, key, discussion_id,
                              dry_run, f"<!-- rltracker:reply-to:{ref} -->", {"command": word},
                              delivery_id, ref, in_thread=in_thread)


async def _post_answer(
    ctx: Any, repo: str, number: int, installation_id: int | None, body: str, key: str,
    discussion_id: str | None, dry_run: bool, marker: str, details: dict[str, Any],
    delivery_id: str | None, ref: str, *, in_thread: str | None = None,
) -> str:
    """A command's reply or note, in the issue or pull request (REST) or the discussion
    (GraphQL; in the thread of `in_thread`, the command's node),
    in its once-only slot `key`, within the thread's REPLIES_PER_HOUR: past them
    nothing is posted and the skip is recorded (`reply_rate:{ref}`), and "rate_limited" is
    returned. A reply GitHub refuses for a locked conversation (an installation without the
    right to comment there) or an archived repository is recorded as a skip
    (`locked:{ref}`, `archived:{ref}`) and "locked" / "archived" returned: the delivery is
    done, not failed for an answer every retry meets. One refused for a permission the
    installation has not granted (Issues or Discussions write) is a skip too
    (`not_permitted:{ref}`, "not_permitted") naming its delivery, handled again when the
    permission is accepted (`installations.answer_when_permitted`). A reply an attempt whose answer GitHub
    lost created, and a person deleted since, is not posted again: "deleted" (the skip
    `deleted:reply-to:{ref}` / `deleted:note-to:{ref}`, as its `deleted` delivery records)."""
    if discussion_id:
        outcome = await _reply_in_discussion(ctx, repo, number, installation_id, body, key,
                                             discussion_id, dry_run, marker, details, delivery_id,
                                             in_thread=in_thread)
    else:
        outcome = await post_reply(ctx, repo, number, installation_id, body, dedupe_key=key,
                                   details=details, dry_run=dry_run, marker=marker,
                                   delivery_id=delivery_id, per_hour=REPLIES_PER_HOUR)
    if outcome == "rate_limited":
        await record_skip(ctx, repo, number, "command", f"reply_rate:{ref}",
                          f"the app replied to {REPLIES_PER_HOUR} commands on this thread in "
                          "the last hour; this one was not answered", **details)
    elif outcome == "skipped:" + NOT_PERMITTED[0]:
        # Owed all the same (a person asked): kept with its delivery, which is handled again
        # once the installation accepts the permission (`installations.answer_when_permitted`).
        permission = "Discussions" if discussion_id else "Issues"
        await record_refusal(ctx, repo, number, "command", f"{NOT_PERMITTED[0]}:{ref}",
                             "GitHub refused the app's reply (Resource not accessible by "
                             "integration): the installation has not granted the app the "
                             f"{permission} write permission, or no longer covers this "
                             "repository; this command is answered once the permission is "
                             "accepted", installation_id=installation_id,
                             delivery_id=delivery_id, **details,
                             permission=permission.lower())
        outcome = NOT_PERMITTED[0]
    elif outcome == "skipped:deleted":
        # Created by an attempt whose answer GitHub lost, and deleted by a person since: the
        # deletion kept as its `deleted` delivery keeps it (posting.note_deleted; once).
        _, code, _ = deletion_of(marker) or ("", f"deleted:{ref}", "")
        await record_skip(ctx, repo, number, "command", code, DELETED[1], **details)
        outcome = "deleted"
    elif outcome.removeprefix("skipped:") in REFUSAL_REASONS:
        # Locked, archived, the issue gone: every retry meets the same answer
        code = outcome.removeprefix("skipped:")
        await record_skip(ctx, repo, number, "command", f"{code}:{ref}",
                          f"{REFUSAL_REASONS[code]}; this command was not answered", **details)
        outcome = code
    return outcome


async def _reply_in_discussion(
    ctx: Any, repo: str, number: int, installation_id: int | None, body: str, key: str,
    discussion_id: str, dry_run: bool, marker: str, details: dict[str, Any],
    delivery_id: str | None = None, *, in_thread: str | None = None,
) -> str:
    """As `post_reply` for issues (the same once-only slot, `reply_once`), through GraphQL:
    the body carries `marker`, and a reply already in the discussion with it (created by an
    attempt whose answer was lost) is adopted instead of posted again. `in_thread`: the
    command's node: answered in its thread (replyToId: the thread's top comment, the command
    itself when it is a top-level comment), and looked for among that thread's replies; a
    command GitHub no longer serves (deleted meanwhile) is answered at the top level."""
    body = f"{body.rstrip()}\n{marker}\n"
    found: list[dict[str, Any] | None] = []
    top: list[str | None] = []  # the thread's top comment, as the last look read it

    async def look() -> bool:
        if in_thread:
            thread_top, node = await _own_thread_reply(ctx, installation_id, in_thread, marker)
            top.append(thread_top)
            if thread_top is not None:
                found.append(node)
                return node is not None
        found.append(await _own_discussion_comment(ctx, installation_id, discussion_id, marker))
        return found[-1] is not None

    async def send() -> dict[str, Any]:
        node = found[-1]
        try:
            if node is None and top and top[-1]:
                result = await ctx.github.graphql(ADD_DISCUSSION_REPLY,
                                                  installation_id=installation_id,
                                                  id=discussion_id, body=body, replyTo=top[-1])
                node = ((result or {}).get("addDiscussionComment") or {}).get("comment") or {}
            elif node is None:
                result = await ctx.github.graphql(ADD_DISCUSSION_COMMENT,
                                                  installation_id=installation_id,
                                                  id=discussion_id, body=body)
                node = ((result or {}).get("addDiscussionComment") or {}).get("comment") or {}
        except (gidgethub.QueryError, gidgethub.BadGraphQLRequest) as exc:
            if await _refused_as_locked(ctx, installation_id, discussion_id, exc):
                raise DiscussionLocked(str(exc)) from exc
            raise
        return {"id": node.get("databaseId"), "node_id": node.get("id")}

    return await reply_once(ctx, repo, number, installation_id, body, dedupe_key=key,
                            kind="command", details=details, dry_run=dry_run, look=look, send=send,
                            delivery_id=delivery_id, per_hour=REPLIES_PER_HOUR, marker=marker)


async def _refused_as_locked(ctx: Any, installation_id: int | None, discussion_id: str,
                             error: BaseException) -> bool:
    """Whether GitHub's GraphQL refusal of a reply (`error`) is the discussion's lock: it reads
    `locked: true` now (GitHub's schema: Discussion is Lockable). GitHub's error for a comment
    on a locked discussion is not documented nor recorded here, so it is told by the
    discussion, not by the error's shape; a token refused (401: credentials being fixed) or a
    rate limit is not a refusal, and a discussion GitHub does not serve (deleted) or fails to
    read leaves the error as it was."""
    if isinstance(error, gidgethub.GraphQLAuthorizationFailure) or rate_limit_wait(error) is not None:
        return False
    try:
        result = await ctx.github.graphql(DISCUSSION_LOCKED, installation_id=installation_id,
                                          id=discussion_id)
    except gidgethub.GitHubException:
        log.warning("could not read whether discussion %s is locked", discussion_id, exc_info=True)
        return False
    return ((result or {}).get("node") or {}).get("locked") is True


async def _own_thread_reply(ctx: Any, installation_id: int | None, reply_id: str,
                            marker: str) -> tuple[str | None, dict[str, Any] | None]:
    """(the thread's top comment, the app's reply with `marker` among its latest replies) of
    the thread the comment `reply_id` is in: the thread it replies in, or its own when it is a
    top-level comment; (None, None) when GitHub serves no such comment (deleted)."""
    try:
        result = await ctx.github.graphql(THREAD_OF_COMMENT, installation_id=installation_id,
                                          id=reply_id)
    except gidgethub.GraphQLException as exc:
        # GitHub's 200 with errors. NOT_FOUND (deleted): answered at the top level. Any other
        # (GitHub's own failure) raises: read as gone, a retry looked for a reply it had
        # lost among the top-level comments only and posted a second one.
        if not refused_for_good(exc):
            raise
        log.warning("could not read the thread of discussion comment %s", reply_id, exc_info=True)
        return None, None
    node = ((result or {}).get("node")) or {}
    thread = node.get("replyTo") or node
    if not thread.get("id"):
        return None, None
    return str(thread["id"]), _app_node_with(((thread.get("replies") or {}).get("nodes")) or [],
                                             marker)


async def _own_discussion_comment(ctx: Any, installation_id: int | None, discussion_id: str,
                                  marker: str) -> dict[str, Any] | None:
    result = await ctx.github.graphql(LATEST_DISCUSSION_COMMENTS, installation_id=installation_id,
                                      id=discussion_id)
    nodes = ((((result or {}).get("node") or {}).get("comments") or {}).get("nodes")) or []
    return _app_node_with(nodes, marker)


def _app_node_with(nodes: list[dict[str, Any] | None], marker: str) -> dict[str, Any] | None:
    """The first of these discussion comments (GraphQL nodes) the app wrote (`viewerDidAuthor`)
    whose body carries `marker`."""
    for node in nodes:
        if node and node.get("viewerDidAuthor") and marker in (node.get("body") or ""):
            return node
    return None


# The opening post's key under the event's payload.
OPENING_EVENTS = {"issues": "issue", "pull_request": "pull_request", "discussion": "discussion"}


def _opening_before_edit(data: dict[str, Any]) -> str | None | bool:
    """What the opening post asked before an edit (`opening_command` of `changes.body.from`);
    False when the edit did not change the body (a title edit: `changes` names the title
    only) or the payload does not say what it was."""
    changes = data.get("changes")
    before = changes.get("body") if isinstance(changes, dict) else None
    if not isinstance(before, dict) or not isinstance(before.get("from"), str):
        return False
    return opening_command(before["from"])


async def handle_opening_command(event: sansio.Event, ctx: Any) -> str:
    """`/rltracker ignore` or `stop` in the opening post of an issue, pull request or
    discussion (command_syntax.OPENING_COMMANDS), when it is opened or its body is edited to
    say it: done as the same command in a comment is (the thread muted, the app's comments
    minimised for `stop`, recorded once per command word), by its author, or by whoever
    edited it in if they have write access (asked of GitHub, as for a command on a thread not
    one's own). An edit that leaves the command as it was (a title edit, a typo fixed
    elsewhere) or takes it out changes nothing: a mute stays, as a comment's does.
    Acknowledged as a comment's command is, with a 👍, on the issue, pull request or
    discussion itself. Returns what happened."""
    data = event.data
    thread_data = data.get(OPENING_EVENTS.get(event.event, "")) or {}
    word = opening_command(thread_data.get("body"))
    if word is None:
        return "no_command"
    if data.get("action") == "edited":
        before = _opening_before_edit(data)
        if before is False or before == word:
            return "unchanged_command"
    if await private_flags(ctx, [data]) == [True]:
        return "private"
    if "number" not in thread_data:
        raise ValueError("thread payload without a number")
    repo = canonical_repo((data.get("repository") or {}).get("full_name") or "")
    number = int(thread_data["number"])
    installation_id = (data.get("installation") or {}).get("id")
    user = thread_data.get("user") or {}
    author = user.get("login") or None
    sender = data.get("sender") or {}
    if (data.get("action") == "edited" and isinstance(sender, dict) and sender.get("login")
            and sender.get("login") != author):
        user = sender  # someone else edited the command in: theirs
    login = user.get("login") or None
    if _is_bot(user):
        return "ignored_bot"
    is_author = login is not None and login == author
    ref = f"opening:{word}"
    key = command_key(repo, number, ref)
    if installation_id is not None and await _silenced(ctx, repo, int(installation_id)):
        return await _not_installed(ctx, repo, number, ref, word)
    if not is_author and (login is None
                          or not await _may_write(ctx, repo, installation_id, str(login))):
        # Refused as the same command in a comment is (left80: a skip `not_maintainer` only,
        # nobody told): the skip `not_allowed`, and one note a person a thread, in the slot a
        # comment's refusal uses. GitHub lets only the author and people with write access
        # edit an opening post, so this is an editor whose access went before the delivery
        # was handled, or one GitHub lets edit without it.
        return await _refuse(ctx, data, "not_allowed",
                             "only the thread's author or a maintainer of the repository may "
                             "silence the app on it", repo=repo, number=number,
                             installation_id=installation_id, login=login, ref=ref,
                             in_thread=None, word=word)
    dry_run = effective_dry_run(ctx, await get_repo_config(ctx, repo, installation_id))
    return await _do_command(event, ctx, repo=repo, number=number, installation_id=installation_id,
                             word=word, args=[], key=key, discussion_id=None, dry_run=dry_run,
                             comment_id=0, ref=ref, kind="opening", login=login, is_author=is_author,
                             verdict=None)


@router.register("issues", action="opened")
@router.register("issues", action="edited")
@router.register("pull_request", action="opened")
@router.register("pull_request", action="edited")
@router.register("discussion", action="created")
@router.register("discussion", action="edited")
async def on_opening_post(event: sansio.Event, ctx: Any) -> None:
    await handle_opening_command(event, ctx)


async def handle_retraction(event: sansio.Event, ctx: Any) -> str | None:
    """A verdict (`kind`, `not-a-failure`) taken back: its comment deleted, or edited so that
    its command (the first, the one a comment does) is gone or another. Its author's way on
    GitHub to take words back: the thread goes back to the verdict before it or to the
    analyzer's finding (bot.speaking.verdict.retract: rewrite, label, mute and minimising
    undone; nothing posted), recorded as an action of its own. A later verdict standing:
    nothing to undo (recorded so). Returns `retract`'s outcome; None when the delivery takes
    no verdict back."""
    from bot.speaking.verdict import retract

    data = event.data
    kind = REVIEW_KINDS.get(event.event)
    comment = (data.get("review") if kind == "review" else data.get("comment")) or {}
    body = comment.get("body") or ""
    if data.get("action") == "deleted":
        if parse_command(body) is None:
            return None  # (a command edited away before was taken back then)
        why = "deleted"
    elif data.get("action") == "edited":
        before = _commands_before_edit(data)
        if not isinstance(before, list) or not before or before[0][0] not in VERDICT_WORDS:
            return None
        after = parse_commands(body)
        if after and _asks(after[0]) == _asks(before[0]):
            return None
        why = "edited"
    else:
        return None
    if await private_flags(ctx, [data]) == [True]:
        return None
    thread_data = data.get("issue") or data.get("discussion") or data.get("pull_request") or {}
    if "number" not in thread_data or not comment.get("id"):
        return None
    repo = canonical_repo((data.get("repository") or {}).get("full_name") or "")
    number = int(thread_data["number"])
    installation_id = (data.get("installation") or {}).get("id")
    ref = comment_ref(kind, int(comment["id"]))
    if installation_id is not None and await _silenced(ctx, repo, int(installation_id)):
        await _not_installed(ctx, repo, number, f"retract:{ref}", "retract")
        return "not_installed"
    dry_run = effective_dry_run(ctx, await get_repo_config(ctx, repo, installation_id))
    return await retract(ctx, repo, number, ref, installation_id, why=why, dry_run=dry_run)


@router.register("issue_comment", action="deleted")
@router.register("discussion_comment", action="deleted")
@router.register("pull_request_review_comment", action="deleted")
async def on_comment_deleted(event: sansio.Event, ctx: Any) -> None:
    await handle_retraction(event, ctx)


# A command comes in a new comment or an edit of one (handle_command tells an edit that adds a
# command from one that leaves it as it was; an edit taking a verdict's command away or
# changing it takes the verdict back first: handle_retraction).
@router.register("issue_comment", action="created")
@router.register("issue_comment", action="edited")
@router.register("discussion_comment", action="created")
@router.register("discussion_comment", action="edited")
@router.register("pull_request_review_comment", action="created")
@router.register("pull_request_review_comment", action="edited")
@router.register("pull_request_review", action="submitted")
@router.register("pull_request_review", action="edited")
async def on_comment(event: sansio.Event, ctx: Any) -> None:
    if event.data.get("action") == "edited":
        await handle_retraction(event, ctx)
    await handle_command(event, ctx)


__all__ = ["handle_command", "handle_opening_command", "handle_retraction", "resolve_failure", "router"]

