"""What a person's verdict does to the app's comments on the thread.

`/rltracker kind <failure>` and `/rltracker not-a-failure` (bot/webhooks/commands.py) store
the verdict, then call `settle_verdict`, which does what the thread's *latest* verdict asks,
whichever command called it (a retried older command does the newer one's work):

- a kind: the failure comment, if the app has one there, is recomposed for that kind (the
  methods this framework has for it, said as the kind a person set: no runner-up, no
  confidence) through the same update path an edit of the issue takes. A maintainer's reply
  does not stop it (someone asked), but a comment a person edited on GitHub, deleted or
  minimised is left as it is, and so is one on a thread muted with `ignore` or `stop`. A mute
  and minimised comments an earlier `not-a-failure` left are undone first: the thread is
  unmuted and the comment, rewritten while still hidden, shown again (GraphQL
  `unminimizeComment`).
- not a failure report: the app's failure comment is minimised and the thread muted (as
  `/rltracker stop`), marked as done by the verdict so that a later kind can undo it.

Each step is idempotent, so a redelivery finishes what an attempt cut short left undone, and
the verdict is read again after the work: when another verdict was stored meanwhile (two
commands at once on two replicas), its work is done too. `bot.speaking.decide.act` calls it
after posting or rewriting the failure comment when the stored verdict is not the one it
decided with (a command handled while the first comment was being posted found its slot
claimed but nothing posted to rewrite or minimise). Later edits and rechecks read the verdict in `decide.act`, so the analyzer's kind never
comes back.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import func, select, update

from bot.speaking.failure_comment import (
    VERDICT_MINIMIZED,
    relabel,
    update_failure_comment,
    with_verdict,
)
from bot.speaking.repo_config import get_repo_config
from bot.speaking.situation import failure_key, load_situation, rules_key
from bot.store.models import Action
from bot.store.threads import get_thread
from bot.store.types import utcnow
from bot.store.verdicts import as_failure, verdict_of

log = logging.getLogger(__name__)

MINIMIZE_MUTATION = """
mutation($id: ID!, $classifier: ReportedContentClassifiers!) {
  minimizeComment(input: {subjectId: $id, classifier: $classifier}) {
    minimizedComment { isMinimized minimizedReason }
  }
}
"""
UNMINIMIZE_MUTATION = """
mutation($id: ID!) {
  unminimizeComment(input: {subjectId: $id}) { unminimizedComment { isMinimized } }
}
"""
# An action's details[MINIMIZING]: {"by": the command, "frozen_before": ...}, written before
# the app's minimizeComment and cleared with the record of its outcome (`minimize_comments`).
MINIMIZING = "minimizing"
# Commands whose mute is the person's wish for quiet, not a verdict: a kind does not lift it.
QUIET_COMMANDS = ("ignore", "stop")
SETTLE_ROUNDS = 3  # verdicts done in a row when others keep arriving meanwhile


def _node_gone(exc: Exception) -> bool:
    """GitHub's answer to a mutation on a comment that was deleted: 200 with the mutation
    null and a NOT_FOUND error (gidgethub's QueryError)."""
    import gidgethub

    response = getattr(exc, "response", None)
    errors = response.get("errors") if isinstance(response, dict) else None
    return (isinstance(exc, gidgethub.GraphQLException) and isinstance(errors, list) and bool(errors)
            and all(isinstance(e, dict) and e.get("type") == "NOT_FOUND" for e in errors))


async def _read_comment(ctx: Any, node_id: str, installation_id: int | None) -> dict[str, Any] | None:
    """The comment as GitHub has it now (`isMinimized`, `minimizedReason`); None when it was
    deleted; {} when the answer says neither (minimised as before)."""
    from bot.github.queries import RECEPTION_QUERY

    try:
        data = await ctx.github.graphql(RECEPTION_QUERY, installation_id=installation_id, ids=[node_id])
    except Exception as exc:
        if not _node_gone(exc):
            raise
        return None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    if not isinstance(nodes, list) or len(nodes) != 1:
        return {}
    return nodes[0] if isinstance(nodes[0], dict) else None


async def _update_action(ctx: Any, action_id: int, **values: Any) -> None:
    """One action row's columns set (and its updated_at), in a transaction of its own."""
    async with ctx.sessionmaker() as session:
        await session.execute(update(Action).where(Action.id == action_id)
                              .values(**values, updated_at=utcnow()))
        await session.commit()


async def _mark_deleted(ctx: Any, action: Action) -> None:
    """A comment of ours a person deleted on GitHub: an answer, never re-posted (as an edit
    finding it gone records it)."""
    log.info("%s#%s: the app's %s was deleted on GitHub", action.repo, action.number, action.kind)
    await _update_action(ctx, action.id, comment_deleted=True, frozen=True)


async def _own_comments(ctx: Any, repo: str, number: int) -> list[Action]:
    """The app's failure comment and rule-summary reply on the thread (their actions)."""
    async with ctx.sessionmaker() as session:
        return list(await session.scalars(select(Action).where(
            Action.dedupe_key.in_([failure_key(repo, number), rules_key(repo, number)]))))


async def mute_thread(ctx: Any, repo: str, number: int) -> None:
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        if thread is not None:
            thread.muted = True
            await session.commit()


async def minimize_comments(ctx: Any, repo: str, number: int, installation_id: int | None,
                            dry_run: bool, *, by: str) -> list[str]:
    """Minimise the app's comments on the thread (GraphQL minimizeComment, OUTDATED); `by`:
    the command that asked (kept in the action's details, with whether the comment was frozen
    before, so that a later kind can undo a verdict's minimising and nothing else). A
    not-a-failure verdict minimises the failure comment only: a rule-summary reply answers a
    proposal, never a failure report, and the verdict agrees with it."""
    done: list[str] = []
    for action in await _own_comments(ctx, repo, number):
        if (action.status != "posted" or not action.comment_node_id or action.is_minimized
                or action.comment_deleted):
            continue
        if by == VERDICT_MINIMIZED and action.kind != "failure_comment":
            continue
        if dry_run or ctx.github is None:
            # Nothing is hidden on GitHub: the record says what would have been done, not
            # that it was (the pages count minimised comments as hidden), and a stop outside
            # dry run still finds the comment to minimise.
            if (action.details or {}).get("would_minimize") != by:
                await _update_action(ctx, action.id,
                                     details=dict(action.details or {}, would_minimize=by))
            done.append(action.kind)
            continue
        # Read first: a person may have hidden it on GitHub since the app last read it (the
        # reception job, nightly). Their hiding is theirs: recorded as such (no
        # `minimized_by`), so a later kind does not show what they hid.
        node = await _read_comment(ctx, action.comment_node_id, installation_id)
        intent = dict(action.details or {}).get(MINIMIZING)
        if node is None:
            await _mark_deleted(ctx, action)
            continue
        reason = str(node.get("minimizedReason") or "").upper() or None
        if node.get("isMinimized") and not (isinstance(intent, dict) and reason == "OUTDATED"):
            details = dict(action.details or {})
            details.pop(MINIMIZING, None)
            await _update_action(ctx, action.id, is_minimized=True, frozen=True,
                                 minimized_reason=reason, details=details)
            done.append(action.kind)
            continue
        if node.get("isMinimized"):
            # Hidden by the app itself: its mutation went through and the process died before
            # the record (the intent below says so). The command that asked keeps it.
            assert isinstance(intent, dict)
            by_then, frozen_before = str(intent.get("by") or by), bool(intent.get("frozen_before"))
        else:
            # The intent first, committed: GitHub may take the mutation and the process die
            # before the record; without it the retry would read the app's own hiding as a
            # person's (a later kind would not show the comment again, and the reception
            # check would count it as hidden by the maintainers).
            by_then, frozen_before = by, bool(action.frozen)
            await _update_action(ctx, action.id, details=dict(
                action.details or {}, **{MINIMIZING: {"by": by, "frozen_before": frozen_before}}))
            try:
                await ctx.github.graphql(
                    MINIMIZE_MUTATION, installation_id=installation_id,
                    id=action.comment_node_id, classifier="OUTDATED",
                )
            except Exception as exc:
                if not _node_gone(exc):
                    raise
                await _mark_deleted(ctx, action)  # nobody sees it: nothing left to hide
                continue
        details = dict(action.details or {}, minimized_by=by_then, frozen_before=frozen_before)
        details.pop("would_minimize", None)
        details.pop(MINIMIZING, None)
        await _update_action(ctx, action.id, is_minimized=True, minimized_reason="OUTDATED",
                             frozen=True, details=details)
        done.append(action.kind)
    return done


async def _drop_label(ctx: Any, repo: str, number: int, installation_id: int | None,
                      dry_run: bool) -> None:
    """Not a failure report: the failure-kind label the app added goes (a later kind adds
    its own back through the comment's rewrite)."""
    if dry_run or ctx.github is None:
        return
    for action in await _own_comments(ctx, repo, number):
        if action.kind == "failure_comment" and action.status == "posted":
            await relabel(ctx, repo, number, installation_id, action, None)


async def minimize_if_stopped(ctx: Any, repo: str, number: int, installation_id: int | None,
                              *, dry_run: bool) -> list[str]:
    """After posting: a `/rltracker stop` handled while the comment was being posted found
    nothing posted to minimise (it records the command before it minimises; the poster reads
    the record after it posted: one of the two sees the other). Minimise what it missed."""
    async with ctx.sessionmaker() as session:
        said = await session.scalars(select(Action.details).where(
            func.lower(Action.repo) == repo.lower(), Action.number == number,
            Action.kind == "command", Action.status.in_(("posted", "dry_run"))))
        stopped = any((details or {}).get("command") == "stop" for details in said)
    if not stopped:
        return []
    return await minimize_comments(ctx, repo, number, installation_id, dry_run, by="stop")


async def _lift_verdict_mute(ctx: Any, repo: str, number: int) -> bool:
    """Unmute a thread that only a `not-a-failure` verdict muted; False when it stays muted
    (someone said `/rltracker ignore` or `stop` there) or is gone."""
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        if thread is None:
            return False
        if not thread.muted:
            return True
        said = await session.scalars(select(Action.details).where(
            Action.repo == thread.repo, Action.number == thread.number, Action.kind == "command",
            Action.status.in_(("posted", "dry_run"))))
        if any((details or {}).get("command") in QUIET_COMMANDS for details in said):
            return False
        thread.muted = False
        await session.commit()
    return True


async def _show_again(ctx: Any, repo: str, number: int, installation_id: int | None,
                      dry_run: bool) -> list[str]:
    """Unminimise the app's comments a `not-a-failure` verdict minimised (GraphQL
    unminimizeComment) and give them back the frozen state they had before it."""
    done: list[str] = []
    for action in await _own_comments(ctx, repo, number):
        details = dict(action.details or {})
        if details.get("would_minimize") == VERDICT_MINIMIZED:  # in dry run: never hidden
            details.pop("would_minimize")
            await _update_action(ctx, action.id, details=details)
        if details.get("minimized_by") != VERDICT_MINIMIZED:
            continue
        if (action.is_minimized and action.status == "posted" and action.comment_node_id
                and not action.comment_deleted and not (dry_run or ctx.github is None)):
            # Read first: a person may have hidden it again since, for a reason of theirs
            # (shown, then hidden as spam or off-topic): that hiding is not the verdict's.
            node = await _read_comment(ctx, action.comment_node_id, installation_id)
            reason = str((node or {}).get("minimizedReason") or "").upper()
            if node and node.get("isMinimized") and reason != "OUTDATED":
                details.pop("minimized_by", None)
                details.pop("frozen_before", None)
                await _update_action(ctx, action.id, is_minimized=True, minimized_reason=reason,
                                     frozen=True, details=details)
                continue
            try:
                if node is None:
                    await _mark_deleted(ctx, action)
                    action.comment_deleted = True
                elif node.get("isMinimized", True):
                    await ctx.github.graphql(UNMINIMIZE_MUTATION, installation_id=installation_id,
                                             id=action.comment_node_id)
            except Exception as exc:
                if not _node_gone(exc):
                    raise
                await _mark_deleted(ctx, action)
                action.comment_deleted = True
        frozen = bool(details.pop("frozen_before", False) or action.comment_deleted
                      or details.get("edited_on_github"))
        details.pop("minimized_by", None)
        await _update_action(ctx, action.id, is_minimized=False, minimized_reason=None,
                             frozen=frozen, details=details)
        done.append(action.kind)
    return done


async def comment_after_kind(ctx: Any, repo: str, number: int, installation_id: int | None) -> str:
    """Rewrite the failure comment for the kind the thread's verdict names; returns what
    happened ("no_comment", "updated", "unchanged", "muted", "frozen", ...)."""
    payload = {"installation": {"id": installation_id}} if installation_id is not None else None
    sit = await load_situation(ctx, repo, number, payload)
    if sit is None or sit.existing is None or sit.installation_id is None:
        return "no_comment"
    async with ctx.sessionmaker() as session:
        verdict = await verdict_of(session, sit.repo, number)
    if verdict is None or not verdict.is_failure_report:
        return "no_verdict"
    config = await get_repo_config(ctx, sit.repo, sit.installation_id, row=sit.repository)
    analysis = with_verdict({}, as_failure(verdict))
    return await update_failure_comment(ctx, sit, analysis, config, asked=True)


async def _after_kind(ctx: Any, repo: str, number: int, installation_id: int | None,
                      dry_run: bool) -> str:
    if not await _lift_verdict_mute(ctx, repo, number):
        return "muted"
    outcome = await comment_after_kind(ctx, repo, number, installation_id)
    # rewritten while still hidden, then shown: never the analyzer's kind on view again
    await _show_again(ctx, repo, number, installation_id, dry_run)
    return outcome


async def settle_verdict(ctx: Any, repo: str, number: int, installation_id: int | None, *,
                         dry_run: bool) -> str:
    """Do what the thread's latest verdict asks (see the module docstring); returns what
    happened to the failure comment ("updated", "unchanged", "no_comment", "muted",
    "frozen", ...; "no_verdict" without one)."""
    outcome, done = "no_verdict", None
    for _ in range(SETTLE_ROUNDS):
        async with ctx.sessionmaker() as session:
            verdict = await verdict_of(session, repo, number)
        if verdict is None:
            return outcome
        said = (bool(verdict.is_failure_report), verdict.category, verdict.comment_id,
                verdict.given_at)
        if said == done:
            break  # no other verdict arrived while this one's work was done
        if verdict.is_failure_report:
            outcome = await _after_kind(ctx, repo, number, installation_id, dry_run)
        else:
            await mute_thread(ctx, repo, number)
            await minimize_comments(ctx, repo, number, installation_id, dry_run,
                                    by=VERDICT_MINIMIZED)
            await _drop_label(ctx, repo, number, installation_id, dry_run)
            outcome = "muted"
        done = said
    return outcome
