"""Posting on GitHub: read the thread live, find our own earlier comment by its hidden marker
and edit it instead of posting twice, and replies to commands (`post_reply`)."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable, Collection
from typing import Any

from analyzers.accounts import is_bot_login
from bot.speaking.claims import (
    claim_lease,
    fail,
    finish,
    record_text,
    release,
    renew,
    text_digest,
    texts_written,
)
from bot.speaking.records import record_skip
from bot.speaking.render import FAILURE_MARKER, RULES_MARKER
from bot.speaking.situation import Situation, repository_row

log = logging.getLogger(__name__)


ARCHIVED = ("archived", "the repository is archived (read-only)")


def archived_refusal(error: BaseException) -> bool:
    """GitHub refusing a write because the repository was archived (403, "Repository was
    archived so is read-only."): a delivery that waited while it was archived. Nothing was
    written, and nothing will be: a reason to stay quiet, not a failure."""
    import gidgethub

    return (isinstance(error, gidgethub.BadRequest) and int(error.status_code) == 403
            and "archived" in str(error).lower())


NOT_PERMITTED = ("not_permitted", "GitHub refused the app's comment (Resource not accessible by "
                 "integration): the installation has not granted the app the Issues write "
                 "permission, or no longer covers this repository")


class RefusedBeforeTheAcceptance(Exception):
    """GitHub refused the app's comment for a missing permission, and the installation's new
    permissions (or its repositories added again) were handled while this delivery was in
    flight (`record_refusal`). The delivery is tried again (the worker reads `retry_after`:
    0, its own backoff), with a new token; a refusal then is recorded as any."""

    retry_after = 0.0

    def __init__(self, repo: str, number: int, kind: str) -> None:
        super().__init__(f"{repo}#{number}: GitHub refused the {kind} for a permission the "
                         "installation accepted meanwhile; tried again with a new token")


async def record_refusal(ctx: Any, repo: str, number: int, kind: str, code: str, reason: str,
                         *, installation_id: int | None, delivery_id: str | None,
                         **extra: Any) -> None:
    """The skip of a comment GitHub refused (`refusal_of`), naming its installation and its
    delivery. A refusal for a missing permission is owed a new decision once the permission
    is accepted (bot.webhooks.installations.answer_when_permitted reads these skips): it is
    written at once, then checked against the hand-backs of its installation. One that ran,
    or runs, while this delivery was in flight (bot.store.installations.handed_back_meanwhile)
    may have read the skips before this one was written, and passed the delivery by for
    good (ops71); and a hand-back handled by another process (another worker process, a
    replica) dropped that process's token only, while this one's, from before it, lacks the
    permission. Either way the skip is taken back and RefusedBeforeTheAcceptance raised, so
    that the worker tries the delivery again with a new token (once: a token issued after
    the hand-back, refused in an attempt begun after it, is a refusal as any)."""
    from bot.speaking.records import drop_skip, record_skip
    from bot.store.installations import handed_back_meanwhile, last_handed_back

    owed = code.startswith(NOT_PERMITTED[0])  # (a command's code carries its comment: ":ref")
    await record_skip(ctx, repo, number, kind, code, reason, at_once=owed,
                      installation=installation_id, delivery=delivery_id, **extra)
    if not owed or installation_id is None:
        return
    async with ctx.sessionmaker() as session:
        meanwhile = await handed_back_meanwhile(session, installation_id, delivery_id)
        last = None if meanwhile else await last_handed_back(session, installation_id)
    # This process's token from before the latest hand-back (handled by another process,
    # which dropped only its own token): the refusal may be that token's.
    stale = last is not None and ctx.github is not None and hasattr(
        ctx.github, "drop_token_issued_before") and ctx.github.drop_token_issued_before(
            installation_id, last.timestamp())
    if meanwhile or stale:
        await drop_skip(ctx, repo, number, kind, code)
        raise RefusedBeforeTheAcceptance(repo, number, kind)


def permission_refusal(error: BaseException) -> bool:
    """GitHub refusing a write the installation's token does not cover (403, "Resource not
    accessible by integration", no rate limit; through GraphQL, an answer whose every error
    is FORBIDDEN with those words, as for addDiscussionComment without Discussions write):
    Issues write not granted (read only), or the repository no longer in the installation.
    The same on every retry until the permission is accepted: a reason to stay quiet,
    recorded with the permission it lacks, not a failed delivery per issue opened (auth64)."""
    import gidgethub

    from bot.github.client import rate_limit_wait

    if isinstance(error, gidgethub.QueryError) and isinstance(error.response, dict):
        errors = error.response.get("errors")
        return (isinstance(errors, list) and bool(errors) and all(
            isinstance(e, dict) and e.get("type") == "FORBIDDEN"
            and "not accessible by integration" in str(e.get("message") or "").lower()
            for e in errors))
    return (isinstance(error, gidgethub.BadRequest) and int(error.status_code) == 403
            and "not accessible by integration" in str(error).lower()
            and rate_limit_wait(error) is None)


LOCKED = ("locked", "the conversation is locked and GitHub refused the app's comment there")


class DiscussionLocked(Exception):
    """GitHub refused addDiscussionComment (a GraphQL error) and the discussion reads
    `locked: true` (bot.webhooks.commands): the lock's refusal, as REST's 403 on a locked
    issue. GitHub's error for it is not documented: it is told by the discussion, not by
    the error's shape."""


def locked_refusal(error: BaseException) -> bool:
    """GitHub refusing a comment on a locked issue or pull request (403, "Unable to create
    comment because issue is locked.", GitHub's CommentCannotUpdateReason.LOCKED; 422 with
    the same words taken too): an installation without the right to comment there, or the
    issue locked after the app read it unlocked; or in a locked discussion (`DiscussionLocked`). The same on every retry: a reason the
    reply is not posted, not a failure."""
    import gidgethub

    if isinstance(error, DiscussionLocked):
        return True
    return (isinstance(error, gidgethub.BadRequest) and int(error.status_code) in (403, 422)
            and "is locked" in str(error).lower())


# GitHub's 410 Gone for the issue (`bot.github.client.gone_answer`): its issues turned off, or
# the issue deleted before its `deleted` delivery was handled.
ISSUES_OFF = ("issues_disabled", "the repository's issues are turned off (GitHub answers 410 "
              "\"Issues are disabled for this repo\")")
ISSUE_GONE = ("issue_deleted", "the issue was deleted on GitHub (410 Gone)")
# Every refusal `refusal_of` tells, by skip code: the reason recorded.
REFUSAL_REASONS = dict((LOCKED, ARCHIVED, NOT_PERMITTED, ISSUES_OFF, ISSUE_GONE))


def refusal_of(error: BaseException) -> tuple[str, str] | None:
    """(skip code, reason) when GitHub refused the app's comment for a reason every retry
    meets and nothing was posted (`locked_refusal`, `archived_refusal`, `permission_refusal`,
    a 410 Gone: `gone_answer`): a reason to stay quiet, recorded; None for anything else (a
    failure, retried)."""
    from bot.github.client import gone_answer

    for refusal, skip in ((locked_refusal, LOCKED), (archived_refusal, ARCHIVED),
                          (permission_refusal, NOT_PERMITTED)):
        if refusal(error):
            return skip
    gone = gone_answer(error)
    if gone is not None:
        return ISSUES_OFF if gone == "disabled" else ISSUE_GONE
    return None


def comments_url(repo: str, number: int) -> str:
    """An issue's comments, a hundred a page (GitHub's most): at its default of 30 a thread
    of 3,000 comments cost a hundred requests each time the app looked for its own."""
    return f"/repos/{repo}/issues/{number}/comments?per_page=100"


async def installation_gh(ctx: Any, installation_id: int | None) -> Any:
    if ctx.github is None:
        raise RuntimeError("no GitHub client configured")
    return await ctx.github.api(installation_id)


async def live_issue(gh: Any, repo: str, number: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    issue = await gh.getitem(f"/repos/{repo}/issues/{number}")
    comments = [c async for c in gh.getiter(comments_url(repo, number))]
    return issue, comments


# The app's bot login, read once per process (GET /app gives the slug) and read again when a
# marker comment is found by a bot login it does not know (`own_login`); and the other bot
# logins found with a marker comment since GET /app was last read, with when
# (time.monotonic()): one read for each an hour, not one per job. Kept in the context's
# per-process caches (a module-level dict keyed by API URL outlived its context: two test
# servers on one reused port shared what each had learnt).
_APP_LOGIN = "posting.app_login"
_NOT_OURS = "posting.not_ours"
NOT_OURS_RECHECK = 3600.0  # seconds


async def app_login(ctx: Any, *, refresh: bool = False) -> str | None:
    """The login the app's comments are written under (`{slug}[bot]`), None without app
    credentials (nothing is posted then). `refresh`: GET /app read again (the app renamed)."""
    if ctx.github is None or not ctx.settings.has_app_credentials:
        return None
    known: str | None = ctx.extras.get(_APP_LOGIN)
    if refresh or known is None:
        app = await ctx.github.app_api()
        login = f"{(await app.getitem('/app'))['slug']}[bot]"
        if login != known:
            if known is not None:
                log.warning("the app's login is now %s (was %s): renamed", login, known)
            ctx.extras.pop(_NOT_OURS, None)  # (what was another's may be ours now)
        ctx.extras[_APP_LOGIN] = known = login
    return known


def _bot_login(comment: dict[str, Any]) -> str | None:
    user = comment.get("user") or {}
    who = str(user.get("login") or "")
    return who if who and is_bot_login(who, user.get("type")) else None


async def own_login(ctx: Any, comments: list[dict[str, Any]], marker: str) -> str | None:
    """The app's login to find its `marker` comment among `comments` by (`own_comment`).
    Renamed on GitHub (a new slug), the app's bot account is renamed with it, and every comment
    it wrote shows the new login: a process that read GET /app before the rename no longer
    knew its own comment (and posted a second one, until a restart). A marker comment by a bot
    login other than the one known makes it read GET /app again: the comment is ours when it
    is the app's login now; another bot's (a second deployment, a mirroring bot) stays theirs,
    and its login is not asked about again for NOT_OURS_RECHECK."""
    login = await app_login(ctx)
    if login is None or own_comment(comments, marker, login) is not None:
        return login
    now = time.monotonic()
    checked: dict[str, float] = ctx.extras.setdefault(_NOT_OURS, {})
    unknown = {who for c in comments if marker in (c.get("body") or "")
               and (who := _bot_login(c)) is not None and who.lower() != login.lower()
               and now - checked.get(who.lower(), -NOT_OURS_RECHECK) >= NOT_OURS_RECHECK}
    if not unknown:
        return login
    login = await app_login(ctx, refresh=True)
    checked = ctx.extras.setdefault(_NOT_OURS, {})
    for who in unknown:
        if login is None or who.lower() != login.lower():
            checked[who.lower()] = now
    while len(checked) > 256:  # (bounded: the oldest forgotten first)
        del checked[min(checked, key=checked.__getitem__)]
    return login


def own_comment(comments: list[dict[str, Any]], marker: str,
                login: str | None) -> dict[str, Any] | None:
    """Our comment carrying `marker`: written by the app's own login (`app_login`, read again
    after a rename by `own_login`). Another bot's comment with the same marker (a second
    deployment of the app, a bot mirroring comments) is not ours to edit, nor a sign that we
    spoke. With no login known, any bot's."""
    for c in comments:
        user = c.get("user") or {}
        who = str(user.get("login") or "")
        if login is not None:
            mine = who.lower() == login.lower()
        else:
            mine = is_bot_login(who, user.get("type"))
        if mine and marker in (c.get("body") or ""):
            return c
    return None


# A person deleted the app's failure comment or rule summary on GitHub (its `deleted` delivery
# said so): that is an answer, and the comment is never posted there again. Kept as a skip
# of the comment's kind (`{repo}#{n}:{kind}:skip:deleted`), read right before posting. A
# command's reply or note likewise (its marker names the command comment: a skip of kind
# `command`, code `deleted:reply-to:REF` / `deleted:note-to:REF`, one per reply slot).
DELETED = ("deleted", "a person deleted the app's comment on GitHub: it is not posted again")
SPONTANEOUS = (("failure_comment", FAILURE_MARKER), ("rule_summary", RULES_MARKER))
# A command reply's or note's own marker (bot.webhooks.commands: `reply-to:REF`, `note-to:REF`,
# REF a comment id, or `review:ID` / `review_comment:ID`).
COMMAND_REPLY_MARK = re.compile(r"<!-- rltracker:((?:reply|note)-to:(?:[a-z_]{1,20}:)?\d{1,20}) -->")


def deletion_of(text: str) -> tuple[str, str, str] | None:
    """(kind, skip code, marker) under which a person's deletion of the app's comment carrying
    `text`'s marker is recorded: the failure comment, the rule summary, a command's reply or
    note (its own slot); None for any other text."""
    for kind, marker in SPONTANEOUS:
        if marker in text:
            return kind, DELETED[0], marker
    found = COMMAND_REPLY_MARK.search(text)
    if found is not None:
        return "command", f"{DELETED[0]}:{found.group(1)}", found.group(0)
    return None


async def note_deleted(ctx: Any, repo: str, number: int,
                       payload: dict[str, Any] | None) -> str | None:
    """An `issue_comment.deleted` (or `discussion_comment.deleted`) delivery of the app's own
    failure comment, rule summary or command reply (its marker, written by the app's login):
    recorded (`DELETED`), so that no later attempt posts it again. The comment's record may
    not know it: GitHub's answer to the POST was lost (a 5xx, a dropped connection), the
    attempt failed and gave the slot up, and its retry, minutes or hours later, found no
    comment of the app's on GitHub and posted a second one where a maintainer had deleted the
    first. Returns the kind noted, or None."""
    comment = (payload or {}).get("comment")
    if not isinstance(comment, dict):
        return None
    body = comment.get("body")
    what = deletion_of(body) if isinstance(body, str) else None
    if what is None:
        return None
    kind, code, marker = what
    if own_comment([comment], marker, await app_login(ctx)) is None:
        return None  # another bot's comment carrying the marker
    await record_skip(ctx, repo, number, kind, code, DELETED[1], comment_id=comment.get("id"))
    return kind


def stored_and_gone(record: dict[str, Any], marker: str, login: str | None) -> bool:
    """Whether the stored thread holds the app's `marker` comment (its `created` delivery, or
    the sync, stored it) that the live read of GitHub just did not find: it was created and
    is gone, deleted before its `deleted` delivery was handled. Called when none was found."""
    for c in record.get("comments") or []:
        who = str(c.get("author") or "")
        mine = who.lower() == login.lower() if login is not None else is_bot_login(
            who, "Bot" if c.get("author_is_bot") else None)
        if mine and marker in (c.get("body") or ""):
            return True
    return False


async def deleted_by_person(ctx: Any, repo: str, number: int, kind: str,
                            record: dict[str, Any] | None = None,
                            login: str | None = None) -> bool:
    """Whether a person deleted the app's `kind` comment on the thread (`note_deleted`, or,
    with the stored `record`, `stored_and_gone`); asked when GitHub shows none of the app's."""
    return await marker_deleted(ctx, repo, number, dict(SPONTANEOUS)[kind], record, login)


async def marker_deleted(ctx: Any, repo: str, number: int, marker: str,
                         record: dict[str, Any] | None, login: str | None) -> bool:
    """`deleted_by_person` for the app's comment carrying `marker` (a spontaneous comment's,
    or a command reply's own `reply-to:REF` / `note-to:REF`). `record`: the stored thread
    (None: read here)."""
    from sqlalchemy import select

    from bot.store.models import Action
    from bot.store.threads import get_thread, load_comments, thread_record

    what = deletion_of(marker)
    if what is None:
        return False
    kind, code, marker = what
    async with ctx.sessionmaker() as session:
        if record is None:
            thread = await get_thread(session, repo, number)
            if thread is not None:
                record = thread_record(thread, await load_comments(session, thread))
        if record is not None and stored_and_gone(record, marker, login):
            return True
        found = await session.scalar(select(Action.id).where(
            Action.dedupe_key == f"{repo}#{number}:{kind}:skip:{code}"))
    return found is not None


async def post_or_adopt(
    gh: Any, repo: str, number: int, body: str, marker: str, comments: list[dict[str, Any]] | None,
    *, login: str | None, written: Collection[str] = (),
) -> dict[str, Any]:
    """Post `body`, or edit our comment already there (found by its marker and our login).
    `written`: the digests of the texts the app recorded for this comment (`claims.texts_written`);
    our comment found with none of them (nor `body`) was edited by a person on GitHub and is
    left as it is, returned with `edited_on_github` set. With nothing recorded (a comment
    from before the app recorded its text ahead of posting) it is ours to edit."""
    if comments is None:
        comments = [c async for c in gh.getiter(comments_url(repo, number))]
    own = own_comment(comments, marker, login)
    if own is not None:
        live = own.get("body") or ""
        if written and live != body and text_digest(live) not in written:
            return {**own, "edited_on_github": True}
        if live != body:
            own = await gh.patch(f"/repos/{repo}/issues/comments/{own['id']}", data={"body": body})
        return own
    return await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})

async def post_reply(
    ctx: Any, repo: str, number: int, installation_id: int | None, body: str, *,
    dedupe_key: str, kind: str = "command", details: dict[str, Any] | None = None,
    dry_run: bool = False, marker: str | None = None, delivery_id: str | None = None,
    per_hour: int | None = None,
) -> str:
    """A reply to a command, once per command comment (dedupe_key carries its id); recorded,
    not posted, in dry run (the app's, or `dry_run` of the repository's config). `marker`:
    a hidden line naming this command, added to the body; a retry finds a reply GitHub
    created without answering (a 5xx, a lost connection) by it instead of posting again.
    `per_hour`: the thread's cap on such replies (`reply_once`)."""
    if marker:
        body = f"{body.rstrip()}\n{marker}\n"
    read: dict[str, Any] = {}

    async def look() -> bool:
        read["gh"] = await installation_gh(ctx, installation_id)
        if marker:
            read["comments"] = [c async for c in read["gh"].getiter(comments_url(repo, number))]
            read["login"] = await own_login(ctx, read["comments"], marker)
            if own_comment(read["comments"], marker, read["login"]) is not None:
                # Our reply there already (an attempt that died or lost GitHub's answer as it
                # posted): the texts the app recorded before posting, read before this
                # attempt's is; the reply with none of them was edited by a person.
                read["written"] = await texts_written(ctx, repo, number, kind)
                return True
        return False

    async def send() -> dict[str, Any]:
        gh = read["gh"]
        if marker:
            return await post_or_adopt(gh, repo, number, body, marker, read["comments"],
                                       login=read["login"], written=read.get("written", ()))
        return await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})

    return await reply_once(ctx, repo, number, installation_id, body, dedupe_key=dedupe_key,
                            kind=kind, details=details, dry_run=dry_run, look=look, send=send,
                            delivery_id=delivery_id, per_hour=per_hour, marker=marker)


async def reply_once(
    ctx: Any, repo: str, number: int, installation_id: int | None, body: str, *,
    dedupe_key: str, kind: str, details: dict[str, Any] | None, dry_run: bool,
    look: Callable[[], Awaitable[bool]], send: Callable[[], Awaitable[dict[str, Any]]],
    delivery_id: str | None = None, per_hour: int | None = None, marker: str | None = None,
) -> str:
    """The once-only slot of a reply, wherever it is posted (an issue's comments through
    REST, a discussion's through GraphQL): claim it under a lease ("owned" when another run
    holds it), record it in dry run, else `look()` on GitHub for the reply an attempt whose
    answer was lost created, check the claim is still this run's right before `send()`
    (posting, or adopting what `look` found; it answers the comment as {"id", "node_id",
    "edited_on_github"}), and write the outcome under the lease. The reply's text is
    recorded with the claim before `send()` (as the failure comment's): a run that takes the
    claim over from one that died as it posted tells the app's text from a person's edit of
    the reply (`post_or_adopt`), and leaves the edit as it is. A run slow
    enough for its claim to be taken over as stale (a retry of the delivery took it and
    replied) returns "owned" and posts nothing. `delivery_id`: the delivery replying (the
    worker's `_delivery_id`); a pending claim an earlier attempt of it left (its process died
    as it posted) raises ClaimHeld, so the worker retries once the claim is stale, takes it
    over and `look()` finds the reply by its marker (review 58). `per_hour`: at most that
    many replies of `kind` on the thread in an hour (claims.claim_lease); past it nothing is
    claimed nor posted and it returns "rate_limited". GitHub refusing the reply for a locked
    conversation, an archived repository, a permission the installation has not granted or
    an issue gone (`refusal_of`) gives the slot back and returns "skipped:" and the refusal's
    code ("locked", "archived", "not_permitted", ...; the caller records why).
    `look()` answers whether it found the app's reply; when it did not, a reply carrying
    `marker` that a person deleted (`marker_deleted`: its `deleted` delivery noted, or the
    stored thread holds it and GitHub not) was created by an attempt whose answer GitHub lost:
    the slot is given back and "skipped:deleted" returned, nothing posted again (as for the
    failure comment and the rule summary)."""
    async with ctx.sessionmaker() as session:
        row = await repository_row(session, repo, installation_id)
        repo_id = row.id
        await session.commit()
    sit = Situation(repo=repo, number=number, record={}, repo_id=repo_id,
                    installation_id=installation_id, framework=None, paused=False,
                    paused_reason=None, muted=False, existing=None)
    state, action_id, lease = await claim_lease(ctx, sit, kind=kind, dedupe_key=dedupe_key,
                                                budget=None, details=details,
                                                delivery_id=delivery_id, per_hour=per_hour)
    if state == "budget":
        return "rate_limited"
    if state != "claimed" or action_id is None:
        return "owned"
    if dry_run or ctx.settings.dry_run or ctx.github is None or installation_id is None:
        await finish(ctx, action_id, status="dry_run", body=body)
        return "dry_run"
    try:
        if (not await look() and marker
                and await marker_deleted(ctx, repo, number, marker, None, await app_login(ctx))):
            # An attempt whose answer was lost posted it, and a person deleted it since.
            await release(ctx, action_id, lease=lease)
            return "skipped:" + DELETED[0]
        # Still ours? A run slow enough for its claim to be taken over as stale (a retry of
        # the delivery took it and replied) must not reply beside it with what it read.
        # The text recorded before it is posted, so that a retry knows what it finds.
        lease = await renew(ctx, action_id, lease, body=body)
        if lease is None:
            return "owned"
        posted = await send()
    except Exception as exc:
        if (refused := refusal_of(exc)) is not None:
            # Nothing was posted, and nothing will be: the slot given back
            await release(ctx, action_id, lease=lease)
            return "skipped:" + refused[0]
        await fail(ctx, action_id, exc, lease=lease)
        raise
    if posted.get("edited_on_github"):
        # Ours, edited by a person since an earlier attempt posted it: left as it is (and
        # "posted" all the same: the command was answered; a "more" note still follows).
        log.info("%s#%s: the reply %s was edited on GitHub; adopted as it is",
                 repo, number, dedupe_key)
        await finish(ctx, action_id, lease=lease, status="posted", comment_id=posted.get("id"),
                     comment_node_id=posted.get("node_id"),
                     details={**(details or {}), "edited_on_github": True})
        return "posted"
    await finish(ctx, action_id, lease=lease, status="posted", body=body,
                 comment_id=posted.get("id"), comment_node_id=posted.get("node_id"))
    return "posted"


async def recorded_body(ctx: Any, action_id: int) -> str | None:
    """The text the action's row holds now (another decision may have rewritten it)."""
    from sqlalchemy import select

    from bot.store.models import Action

    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Action.body).where(Action.id == action_id))


async def rewrite_own_comment(ctx: Any, sit: Situation, action: Any, body: str, known: str | None,
                              kind: str, frozen_details: dict[str, Any]) -> tuple[str | None, str | None]:
    """Make the app's posted comment of `action` read `body`, unless a person edited it on
    GitHub (their text is not ours to overwrite) or deleted it. Returns (`unchanged`, `edited`
    or `deleted`, known) when it stops there, (None, known) when the comment now reads `body`;
    `known` is the recorded text the caller's row update is conditioned on."""
    from gidgethub import BadRequest

    gh = await installation_gh(ctx, sit.installation_id)
    url = f"/repos/{sit.repo}/issues/comments/{action.comment_id}"
    try:
        live = (await gh.getitem(url)).get("body") or ""
        if live != known:
            # Ours all the same when a concurrent decision (another replica's verdict or edit)
            # rewrote it since this one read the record, or when it is a text the app was
            # about to write (a PATCH GitHub applied, its answer lost): not a person's edit.
            known = await recorded_body(ctx, action.id)
            if known == body:
                return "unchanged", known
            if live != known and text_digest(live) not in await texts_written(
                    ctx, sit.repo, sit.number, kind):
                log.info("%s#%s: the app's %s was edited on GitHub; left as it is",
                         sit.repo, sit.number, kind.replace("_", " "))
                await finish(ctx, action.id, frozen=True, details=frozen_details)
                return "edited", known
        if live != body:  # (it is already when a PATCH was applied and its answer lost)
            await record_text(ctx, action.id, body)
            await gh.patch(url, data={"body": body})
    except BadRequest as exc:
        if exc.status_code != 404:
            raise
        # Someone deleted our comment: that is an answer, not an error. Never re-post.
        await finish(ctx, action.id, comment_deleted=True, frozen=True)
        return "deleted", known
    return None, known
