"""Decides what the app says in other people's repositories, and says it at most once.

`act` is called by `bot.pipeline.thread_changed` after the analysis is stored. Two
spontaneous comments exist: the failure comment (`failure_comment`) and the rule-summary
reply (`rule_summary`). Everything else the app posts answers a command
(bot/webhooks/commands.py) through `posting.post_reply`. Every decision not to comment is
recorded as a `skipped` action with the reason (`records`); `/api/actions` shows them. The
app never closes, locks or marks anything stale.
"""

from __future__ import annotations

import logging
from typing import Any

from bot.speaking.claims import STALE_PENDING, delivery_of, held_by_an_earlier_attempt
from bot.speaking.failure_comment import (
    SUSPENDED,
    add_pending_label,
    failure_comment,
    freeze_if_maintainer_replied,
    update_failure_comment,
    with_verdict,
)
from bot.speaking.posting import note_deleted
from bot.speaking.quiet import (
    COMMENT_TRIGGERS,
    DELETE_TRIGGERS,
    EDIT_TRIGGERS,
    NEW_TRIGGERS,
    PROPOSAL_TRIGGERS,
    REOPEN_TRIGGERS,
    SUMMARY_EDIT_TRIGGERS,
)
from bot.speaking.records import record_skip
from bot.speaking.repo_config import effective_dry_run, get_repo_config
from bot.speaking.rule_summary import rule_summary, update_rule_summary
from bot.speaking.situation import Prefetched, load_situation
from bot.speaking.verdict import minimize_if_stopped, settle_verdict
from bot.store.types import utcnow
from bot.store.verdicts import as_failure, verdict_of

log = logging.getLogger(__name__)

WROTE = ("posted", "dry_run", "updated")  # failure-comment outcomes that wrote its text


async def act(
    ctx: Any, repo: str, number: int, *, trigger: str, payload: dict[str, Any] | None = None,
    analysis: dict[str, Any] | None = None, thread: tuple[Any, dict[str, Any]] | None = None,
    prefetched: Prefetched | None = None,
) -> dict[str, str]:
    """What the pipeline calls after storing the analysis. Returns {kind: outcome}.
    `thread`: (Thread row, its record) when the caller has just loaded them; `prefetched`:
    what a batch of decisions read for all of them."""
    if trigger in DELETE_TRIGGERS:
        # A person deleted the app's own comment: never posted there again (posting.note_deleted)
        noted = await note_deleted(ctx, repo, number, payload)
        return {noted: "deleted"} if noted else {}
    interesting = (NEW_TRIGGERS | EDIT_TRIGGERS | PROPOSAL_TRIGGERS | COMMENT_TRIGGERS
                   | REOPEN_TRIGGERS | SUMMARY_EDIT_TRIGGERS)
    if trigger not in interesting or analysis is None:
        return {}
    sit = await load_situation(ctx, repo, number, payload, thread, prefetched)
    if sit is not None and sit.silenced and trigger in NEW_TRIGGERS - {"command"} and (
            sit.record.get("kind") == "issue"):
        # Opened while its owner had the app suspended: said why on /api/actions, and an
        # edit after the unsuspend does not make it a new report (`failure_comment`).
        await record_skip(ctx, sit.repo, number, "failure_comment", *SUSPENDED)
        return {"failure_comment": "skipped:" + SUSPENDED[0]}
    if sit is None or sit.installation_id is None:
        return {}  # not installed: the app only tracks, it never speaks there
    outcome: dict[str, str] = {}
    if trigger in COMMENT_TRIGGERS:
        if await freeze_if_maintainer_replied(ctx, sit):
            outcome["failure_comment"] = "frozen"
        return outcome
    if trigger in SUMMARY_EDIT_TRIGGERS and trigger not in EDIT_TRIGGERS and (
            sit.rules_claim is None or sit.rules_claim.status not in ("posted", "dry_run")):
        return outcome  # a pull request's edit, and no rule summary of the app's there
    config = await get_repo_config(
        ctx, sit.repo, sit.installation_id, refresh=trigger == "command", row=sit.repository
    )
    if trigger in SUMMARY_EDIT_TRIGGERS and trigger not in EDIT_TRIGGERS:
        # A pull request's edit: no failure comment there, its rule summary only.
        said = await update_rule_summary(ctx, sit, analysis, config)
        return {"rule_summary": said} if said else outcome
    used: dict[str, Any] | None = None
    if trigger in REOPEN_TRIGGERS and not await _reopened_after_closed_skip(ctx, sit, payload):
        return outcome
    if trigger in EDIT_TRIGGERS or trigger in NEW_TRIGGERS or trigger in REOPEN_TRIGGERS:
        # A person's verdict (`/rltracker kind`, `not-a-failure`) outranks the analysis: an
        # edit or a recheck recomposes the comment with their kind, never the analyzer's, and
        # so does an `opened` delivery handled after the verdict (a retry that waited).
        used = await stored_verdict(ctx, sit.repo, sit.number)
        analysis = with_verdict(analysis, used)
    existing = sit.existing
    stale = (
        existing is not None and existing.status == "pending"
        and existing.updated_at < utcnow() - STALE_PENDING
    )
    if not stale:
        # An earlier attempt of this very delivery claimed the slot and died (maybe after
        # GitHub took the comment): nobody else finishes that claim; retried until it is
        # stale, then taken over (the comment found by its marker).
        held_by_an_earlier_attempt(existing, delivery_of(payload))
    if existing is not None and not stale and existing.status in ("posted", "dry_run", "pending"):
        if trigger in EDIT_TRIGGERS:
            outcome["failure_comment"] = await update_failure_comment(ctx, sit, analysis, config)
        else:
            outcome["failure_comment"] = "owned"
            await add_pending_label(ctx, sit, existing)  # a retry after the label failed
    elif ((trigger in NEW_TRIGGERS or trigger in EDIT_TRIGGERS or trigger in REOPEN_TRIGGERS)
          and sit.record.get("kind") in ("issue", "pull_request")):
        # No comment yet: a new issue, a recheck, or an issue edited into a report (the quiet
        # rules, the age rule among them, decide as for a new one; once, by the same slot).
        # (a stale pending claim left by a crashed worker is taken over inside `claim_lease`)
        outcome["failure_comment"] = await failure_comment(
            ctx, sit, analysis, config, trigger=trigger, payload=payload
        )
    said = outcome.get("failure_comment")
    if said in WROTE or said == "owned":
        # A verdict stored while this decision wrote (the command's handler found the slot
        # claimed but not yet posted, or rewrote the comment before this edit did): the
        # comment must end as the latest verdict says, not wait for the next edit or recheck.
        # The command stored before it looked; this reads after it wrote: one of the two sees
        # the other. "owned": a retry of a decision whose settling GitHub failed after the
        # post (settling what is settled changes nothing and writes nothing).
        latest = await stored_verdict(ctx, sit.repo, sit.number)
        if latest is not None and (latest != used or said == "owned"):
            await settle_verdict(ctx, sit.repo, sit.number, sit.installation_id,
                                 dry_run=effective_dry_run(ctx, config))
    if trigger in PROPOSAL_TRIGGERS:
        outcome["rule_summary"] = await rule_summary(
            ctx, sit, analysis, config, trigger=trigger, payload=payload
        )
    elif trigger in SUMMARY_EDIT_TRIGGERS and (
            said := await update_rule_summary(ctx, sit, analysis, config)) is not None:
        outcome["rule_summary"] = said
    if {"posted", "owned"} & {outcome.get("failure_comment"), outcome.get("rule_summary")}:
        # `/rltracker stop` while this decision posted: it found nothing to minimise.
        await minimize_if_stopped(ctx, sit.repo, sit.number, sit.installation_id,
                                  dry_run=effective_dry_run(ctx, config))
    return outcome


async def _reopened_after_closed_skip(ctx: Any, sit: Any, payload: dict[str, Any] | None) -> bool:
    """Whether an `issues.reopened` decides: the issue's author reopened it (a maintainer
    reopening is on it) and the opening decision stayed quiet because it was closed (a
    `closed` skip recorded, no comment). Anything else a reopening changes nothing."""
    from sqlalchemy import select

    from bot.store.models import Action

    sender = str(((payload or {}).get("sender") or {}).get("login") or "").lower()
    if sit.record.get("kind") != "issue" or not sender or sender != str(
            sit.record.get("author") or "").lower():
        return False
    async with ctx.sessionmaker() as session:
        found = await session.scalar(select(Action.id).where(
            Action.dedupe_key == f"{sit.repo}#{sit.number}:failure_comment:skip:closed"))
    return found is not None


async def stored_verdict(ctx: Any, repo: str, number: int) -> dict[str, Any] | None:
    """A person's verdict on the thread as an analysis' `failure` part, or None."""
    async with ctx.sessionmaker() as session:
        row = await verdict_of(session, repo, number)
    return as_failure(row) if row is not None else None
