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
comes back, unless the person takes the verdict back (`retract`: its comment deleted or its
command edited away): the thread goes back to the verdict before it, or to the analyzer.
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
from bot.speaking.records import command_key, comment_ref, record_once, ref_of_command_key
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


# --- a verdict taken back ----------------------------------------------------------------------

VERDICT_WORDS = ("kind", "not-a-failure")  # the commands that give a verdict (also bot.webhooks.commands)
RETRACTED = "retracted"  # the command action's details: why it no longer stands (deleted / edited)


async def _previous_verdict(ctx: Any, repo: str, number: int, key: str,
                            before: str | None) -> dict[str, Any] | None:
    """The verdict the thread had before the one given with the command of `key` (at
    `before`, when its action kept it): the latest given (by the command's time) before it
    of its other verdict commands still standing (done, not
    taken back, their comment not deleted), as its action kept it (`given`); None when
    there is none: the analyzer's finding is the thread's again."""
    from bot.store.models import Comment
    from bot.store.threads import comment_grave, graves

    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(select(Action).where(
            func.lower(Action.repo) == repo.lower(), Action.number == number,
            Action.kind == "command", Action.status.in_(("posted", "dry_run")),
            Action.dedupe_key != key)))
        standing: list[dict[str, Any]] = []
        for row in rows:
            details = row.details or {}
            if details.get("command") not in VERDICT_WORDS or details.get(RETRACTED):
                continue
            given = details.get("given")
            ref = ref_of_command_key(row.dedupe_key or "")
            kind, _, raw_id = ref.rpartition(":")
            if not raw_id.isdigit() or kind not in ("", "review", "review_comment"):
                continue  # (an opening post's command, or a retraction's record)
            kinds = [kind] if kind else ["comment", "discussion_comment"]
            buried = await graves(session, {comment_grave(k, int(raw_id)) for k in kinds})
            if buried:
                continue  # deleted before retractions were recorded: it stands no more
            if not isinstance(given, dict):
                # Done before its verdict was kept with it (verdicts82): rebuilt from the
                # stored comment (who wrote it, when); what the analyzer said then is lost.
                comment = await session.scalar(select(Comment).where(
                    Comment.kind.in_(kinds), Comment.github_id == int(raw_id)))
                if comment is None or not comment.author:
                    continue
                from bot.store.types import format_datetime

                given = {"is_failure_report": bool(details.get("is_failure_report")),
                         "category": details.get("category"), "login": comment.author,
                         "role": str(details.get("by") or "author"), "comment_id": int(raw_id),
                         "given_at": format_datetime(comment.updated_at or comment.created_at)}
            standing.append(given)
    if before:
        standing = [g for g in standing if str(g.get("given_at") or "") < before]
    standing.sort(key=lambda g: str(g.get("given_at") or ""))
    return standing[-1] if standing else None


async def _back_to_analyzer(ctx: Any, repo: str, number: int, installation_id: int | None,
                            dry_run: bool) -> str:
    """No verdict on the thread any more: the mute a not-a-failure set lifted, the failure
    comment rewritten for what the analyzer says (its kind, or the withdrawal when it finds
    no report it is sure of) while still hidden, then shown again. Nothing is posted: a
    thread without the app's comment stays without one (its next edit or a recheck decides)."""
    from bot.store.models import Analysis

    if not await _lift_verdict_mute(ctx, repo, number):
        return "muted"
    payload = {"installation": {"id": installation_id}} if installation_id is not None else None
    sit = await load_situation(ctx, repo, number, payload)
    outcome = "no_comment"
    if sit is not None and sit.existing is not None and sit.installation_id is not None:
        async with ctx.sessionmaker() as session:
            thread = await get_thread(session, sit.repo, number)
            stored = await session.scalar(select(Analysis.result).where(
                Analysis.thread_id == thread.id)) if thread is not None else None
        config = await get_repo_config(ctx, sit.repo, sit.installation_id, row=sit.repository)
        # asked: the person took back what they asked for; a maintainer's reply since does
        # not keep their words on the comment
        outcome = await update_failure_comment(ctx, sit, dict(stored or {}), config, asked=True)
    await _show_again(ctx, repo, number, installation_id, dry_run)
    return outcome


async def retract(ctx: Any, repo: str, number: int, ref: str, installation_id: int | None, *,
                  why: str, dry_run: bool, _depth: int = 0) -> str | None:
    """The verdict command of comment `ref` taken back by its author: its comment deleted
    (`why` "deleted") or its command line edited away or changed ("edited"). Its command
    action is marked (`retracted`: it stands no more, also for a later retraction looking
    for the verdict before it). When it is still the thread's verdict, the thread goes back
    to the one given before it (`_previous_verdict`, its work done by `settle_verdict`) or
    to the analyzer's finding (`_back_to_analyzer`): the comment rewritten, shown again or
    minimised, the mute and the label following; nothing posted. Recorded once as an action
    of its own (`{command key}:retracted`, shown on the thread page and /api/actions).
    Returns what happened: "restored" (to an earlier verdict), "analyzer", "later_verdict"
    (a later verdict stands: nothing to undo), or None (no verdict done by that comment)."""
    from bot.store.verdicts import retract_verdict

    key = command_key(repo, number, ref)
    async with ctx.sessionmaker() as session:
        action = await session.scalar(select(Action).where(Action.dedupe_key == key))
        details = dict(action.details or {}) if action is not None else {}
        if (action is None or action.status not in ("posted", "dry_run")
                or details.get("command") not in VERDICT_WORDS):
            return None
        if not details.get(RETRACTED):
            action.details = {**details, RETRACTED: why}
            action.updated_at = utcnow()
            await session.commit()
    comment_id = int(ref.rpartition(":")[2])
    given = details.get("given")
    previous = await _previous_verdict(ctx, repo, number, key, str(
        given.get("given_at") or "") if isinstance(given, dict) else None)
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        if thread is None:
            return None
        taken = await retract_verdict(session, thread.id, comment_id, previous)
        await session.commit()
    now = await _stored_is(ctx, repo, number)
    if taken:
        outcome = "restored" if previous is not None else "analyzer"
    elif now is None:
        outcome = "analyzer"  # (a retry after the row was taken back: its work finished)
    elif previous is not None and now.comment_id == previous.get("comment_id"):
        outcome = "restored"  # (likewise)
    else:
        outcome = "later_verdict"
    if outcome == "restored" and previous is not None:
        # Taken back meanwhile too (two deletions at once: that one's retraction found this
        # one still standing): taken back in turn, to the verdict before it.
        async with ctx.sessionmaker() as session:
            cid = int(previous.get("comment_id") or 0)
            again = await session.scalar(select(Action).where(Action.dedupe_key.in_(
                [command_key(repo, number, comment_ref(kind, cid))
                 for kind in (None, "review", "review_comment")])))
        if again is not None and (again.details or {}).get(RETRACTED) and _depth < SETTLE_ROUNDS:
            ref_again = ref_of_command_key(again.dedupe_key or "")
            outcome = await retract(ctx, repo, number, ref_again, installation_id,
                                    why=str(again.details[RETRACTED]), dry_run=dry_run,
                                    _depth=_depth + 1) or "analyzer"
    if outcome == "restored":
        await settle_verdict(ctx, repo, number, installation_id, dry_run=dry_run)
    elif outcome == "analyzer":
        await _back_to_analyzer(ctx, repo, number, installation_id, dry_run)
        if await _stored_is(ctx, repo, number) is not None:
            # A verdict given while this one's undoing ran (two deliveries at once): its work,
            # done before the undoing finished, was partly undone (the comment shown again,
            # the mute lifted); done again, as settle_verdict does for verdicts in a row.
            await settle_verdict(ctx, repo, number, installation_id, dry_run=dry_run)
    restored = await _stored_is(ctx, repo, number) if outcome == "restored" else None
    word = str(details.get("command"))
    back = ("the verdict before it" if outcome == "restored" else
            "the analyzer's finding" if outcome == "analyzer" else
            "nothing (a later verdict stands)")
    await record_once(
        ctx, repo=repo, number=number, kind="command", status="dry_run" if dry_run else "posted",
        dedupe_key=f"{key}:retracted",
        reason=f"/rltracker {word} taken back (its comment {why}); the thread went back to {back}",
        details={"retraction": why, "of": ref, "verdict": word, "outcome": outcome,
                 "restored": (("none" if not restored.is_failure_report else restored.category)
                              if restored is not None else None)})
    return outcome


async def _stored_is(ctx: Any, repo: str, number: int) -> Any:
    async with ctx.sessionmaker() as session:
        return await verdict_of(session, repo, number)
