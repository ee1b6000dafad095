"""The failure comment: the methods that address a training-failure report, with the option
that turns each on in this framework. Posted once per issue on a confident report; updated
when the issue is edited (until a maintainer replies); withdrawn when it stops being one."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select

from bot.speaking.claims import (
    LIVE_STATUSES,
    WRITTEN,
    budget_now,
    claim_within_budget,
    delivery_of,
    fail,
    finish,
    locked_action,
    release,
    renew,
    texts_written,
)
from bot.speaking.posting import (
    DELETED,
    deleted_by_person,
    installation_gh,
    live_issue,
    own_comment,
    own_login,
    post_or_adopt,
    record_refusal,
    refusal_of,
    rewrite_own_comment,
)
from bot.speaking.quiet import (
    CONFIG_OFF,
    EDIT_TRIGGERS,
    MAINTAINER_AUTHOR,
    NEW_TRIGGERS,
    REOPEN_TRIGGERS,
    UNLABELLED,
    WRITE_ROLES,
    live_record,
    maintainer_replies,
    quiet_reason,
    unlabelled_replies,
)
from bot.speaking.records import record_skip, skip_key
from bot.speaking.render import (
    FAILURE_MARKER,
    FailureComment,
    compose_failure_comment,
    withdrawn_comment,
)
from bot.speaking.repo_config import RepoConfig, config_now, effective_dry_run
from bot.speaking.situation import (
    Situation,
    declined_methods,
    failure_key,
    linked_pull_request,
    rules_key,
)
from bot.store.models import Action
from bot.store.types import utcnow

log = logging.getLogger(__name__)

# An action's details["minimized_by"] when a `/rltracker not-a-failure` verdict minimised the
# comment (bot.speaking.verdict): the app's doing, which a later `kind` undoes.
VERDICT_MINIMIZED = "not-a-failure"


def _failure_of(analysis: dict[str, Any]) -> dict[str, Any]:
    return analysis.get("failure") or {}


def with_verdict(analysis: dict[str, Any], failure: dict[str, Any] | None) -> dict[str, Any]:
    """The analysis with a person's verdict (bot.store.verdicts.as_failure) in place of the
    analyzer's failure finding: what the app says follows the person, whatever a later
    analysis finds."""
    if failure is None:
        return analysis
    return {**analysis, "failure": failure}


def _is_confident_failure(analysis: dict[str, Any], config: RepoConfig) -> tuple[bool, str, str]:
    failure = _failure_of(analysis)
    if not failure.get("is_failure_report"):
        return False, "not_failure", "not a training-failure report"
    if failure.get("set_by"):
        return True, "", ""  # a person said so: no confidence bar
    confidence = float(failure.get("confidence") or 0.0)
    bar = config.failure_bar()
    if confidence < bar:
        return False, "low_confidence", f"failure confidence {confidence:.2f} below {bar:.2f}"
    return True, "", ""


UNKNOWN_FRAMEWORK = ("unknown_framework", "the repository is not one of the tracked frameworks")
# The issue's opening found the app's installation suspended (or uninstalled): recorded then
# (bot.speaking.decide), and an edit after the unsuspend posts nothing (a report from its start,
# not one edited into a report).
SUSPENDED = ("suspended", "the app's installation here was suspended (or uninstalled) when "
             "the issue was opened: nothing is said on it")


def failure_reason(sit: Situation, analysis: dict[str, Any],
                   config: RepoConfig) -> tuple[str, str] | None:
    """(code, reason) when the analysis gives no failure comment here whatever the thread's
    state (not a confident report, a repository outside the seven), else None; the quiet
    rules come next. What the live decision and the install preview both ask first."""
    ok, code, reason = _is_confident_failure(analysis, config)
    if not ok:
        return code, reason
    if sit.framework is None:
        return UNKNOWN_FRAMEWORK
    return None


def compose_for(
    record: dict[str, Any], analysis: dict[str, Any], framework: str, *, public_url: str,
    declined: set[str],
) -> FailureComment | None:
    from analyzers.language import detect_language
    from analyzers.setup_config import parse_setup

    lang = detect_language(record.get("title"), record.get("body"))
    setup = parse_setup(record.get("body") or "", framework)
    return compose_failure_comment(
        analysis, framework, setup=setup, lang=lang, public_url=public_url, declined=declined
    )


async def failure_comment(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig, *, trigger: str,
    payload: dict[str, Any] | None,
) -> str:
    """Decide and act for the failure comment; returns what happened (for logs and tests)."""
    outcome = await _failure_comment(ctx, sit, analysis, config, trigger=trigger, payload=payload)
    if outcome == "posted":
        await _edited_while_posting(ctx, sit, analysis, config)
    return outcome


async def _edited_while_posting(ctx: Any, sit: Situation, analysis: dict[str, Any],
                                config: RepoConfig) -> None:
    """After posting: an edit of the issue handled by another worker while this run's claim
    was pending stored its analysis and found nothing posted to rewrite ("unchanged"). The
    stored analysis (with the stored verdict) and the stored title and body (the comment is
    composed from them too: the language, the setup the reporter pasted) are read again, and
    when they are not the ones this run composed from, the comment is rewritten once, as that
    edit would have. The edit stored them before reading the claim, and this reads after the
    claim is posted: one of the two sees the other. (An edit that pasted a config alone
    changes no finding: it was compared on the analysis only until speak62.)"""
    import json

    from bot.speaking.situation import load_situation
    from bot.store.models import Analysis
    from bot.store.threads import get_thread
    from bot.store.verdicts import as_failure, verdict_of

    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, sit.repo, sit.number)
        if thread is None:
            return
        stored = await session.scalar(select(Analysis.result).where(Analysis.thread_id == thread.id))
        verdict = await verdict_of(session, sit.repo, sit.number)
    if not stored:
        return
    now = with_verdict(stored, as_failure(verdict) if verdict is not None else None)
    text_now = (thread.title or "", thread.body or "")

    def canonical(x: Any) -> str:
        return json.dumps(x, sort_keys=True, default=str)

    if canonical(now) == canonical(analysis) and text_now == (
            sit.record.get("title") or "", sit.record.get("body") or ""):
        return
    fresh = await load_situation(ctx, sit.repo, sit.number, None)
    if fresh is None or fresh.existing is None:
        return
    log.info("%s#%s: the issue was edited while its failure comment was posted; rewriting once",
             sit.repo, sit.number)
    await update_failure_comment(ctx, fresh, now, config)


async def _failure_comment(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig, *, trigger: str,
    payload: dict[str, Any] | None,
) -> str:
    repo, number = sit.repo, sit.number
    # The labels the issue was opened with (issue templates add those): kept in the skips
    # recorded on its opening, so that an edit that makes it a report judges them alike.
    opened_labels: set[str] = set()
    if trigger == "issues.opened" and transferred_in(payload):
        # Moved here from another repository: the labels it carries are those it was given
        # there (a maintainer's triage among them), not its template's; those its first
        # opening recorded moved here with its skips (bot.store.repositories.follow_transfer).
        opened_labels = await labels_at_opening(ctx, repo, number)
    elif trigger == "issues.opened":
        opened_labels = {
            (lab.get("name") if isinstance(lab, dict) else str(lab))
            for lab in ((payload or {}).get("issue") or {}).get("labels") or []
        }
    extra = {"opened_labels": sorted(opened_labels)} if opened_labels else {}
    first = failure_reason(sit, analysis, config)
    if first is not None:
        code, reason = first
        if code != UNKNOWN_FRAMEWORK[0] and not (
                trigger in NEW_TRIGGERS and sit.record.get("kind") == "issue"):
            return "skipped:" + code
        await record_skip(ctx, repo, number, "failure_comment", code, reason, **extra)
        return "skipped:" + code
    if trigger in EDIT_TRIGGERS:
        # An issue edited into a report (a question or a bare template at first) gets the
        # comment now, once: the slot is the same, the quiet rules the same (48 hours).
        # Only its author's edit: someone else editing the issue (a maintainer retitling it
        # while triaging: only they can) is on it.
        editor = str(((payload or {}).get("sender") or {}).get("login") or "")
        if editor and sit.record.get("author") and editor.lower() != str(sit.record["author"]).lower():
            await record_skip(ctx, repo, number, "failure_comment", "edited_by_other",
                              "edited into a report by someone other than its author")
            return "skipped:edited_by_other"
        opened_labels = await labels_at_opening(ctx, repo, number)
        if await _opened_while_suspended(ctx, repo, number):
            return "skipped:" + SUSPENDED[0]  # (recorded at the opening)
        if await _replied_as_proposal(ctx, repo, number):
            # One thing said on a thread: the proposal's rule summary is there already.
            await record_skip(ctx, repo, number, "failure_comment", "rule_summary",
                              "the app replied to the thread as a method proposal")
            return "skipped:rule_summary"
    if trigger in REOPEN_TRIGGERS:  # decided as on its opening (bot.speaking.decide)
        opened_labels = await labels_at_opening(ctx, repo, number)
    now = utcnow()
    quiet = quiet_reason(
        sit.record, config=config, trigger=trigger, now=now, ignore_labels=opened_labels,
        linked_pr=await linked_pull_request(ctx, repo, number) if trigger != "command" else None,
        paused=sit.paused, paused_reason=sit.paused_reason, muted=sit.muted,
    )
    # A claim taken over from a run that died about to post (its text recorded: `renew`)
    # may have its comment on GitHub already: looked up there before any quiet rule of the
    # stored thread keeps the app from knowing its own comment (a maintainer may have replied
    # while the claim waited to turn stale).
    may_have_posted = (sit.existing is not None and sit.existing.status == "pending"
                       and sit.existing.body is not None)
    if quiet and not may_have_posted:
        # Likewise an attempt that failed as it posted (GitHub's answer lost: a 5xx, a dropped
        # connection), its delivery replayed after its retries ran out.
        # (read with the claim: `Situation.failed_with_text`)
        may_have_posted = sit.failed_with_text
    stored_quiet = quiet
    if quiet and not may_have_posted:
        await record_skip(ctx, repo, number, "failure_comment", *quiet, **extra)
        return "skipped:" + quiet[0]
    declined = await declined_methods(ctx, repo)
    composed = compose_for(sit.record, analysis, sit.framework, public_url=ctx.settings.public_url,
                           declined=declined)
    if composed is None:
        await record_skip(ctx, repo, number, "failure_comment", "nothing_to_suggest",
                          "every method this framework has for the failure is already set, "
                          "declined here, or absent", **extra)
        return "skipped:nothing_to_suggest"
    details = {
        "category": composed.category, "runner_up": composed.details.get("runner_up"),
        "confidence": composed.details.get("confidence"), "suggested": composed.suggested,
        "already_set": composed.already_set, "elsewhere": composed.elsewhere,
        "declined": composed.declined, "trigger": trigger,
        "set_by": composed.details.get("set_by"),
    }
    delivery_id = delivery_of(payload)
    outcome, action_id, lease = await claim_within_budget(
        ctx, sit, config, kind="failure_comment", dedupe_key=failure_key(repo, number),
        language=composed.lang, details=details, delivery_id=delivery_id,
    )
    if action_id is None:
        return outcome
    try:
        if not effective_dry_run(ctx, config) and ctx.github is not None:
            # The config as it is now: the maintainers may have turned the comments off (or
            # dry_run on) while the delivery waited, and the cached one is ten minutes old.
            config = await config_now(ctx, sit, config)
        if effective_dry_run(ctx, config) or ctx.github is None or sit.installation_id is None:
            if not config.failure_comments:
                await release(ctx, action_id, lease=lease)
                await record_skip(ctx, repo, number, "failure_comment", *CONFIG_OFF)
                return "skipped:config_off"
            # the label the config would have the app add (GitHub is not read: unless the
            # issue has it already)
            await finish(ctx, action_id, status="dry_run", body=composed.body)
            await _record_label(ctx, action_id, config.labels.get(composed.category), would=True)
            return "dry_run"
        gh = await installation_gh(ctx, sit.installation_id)
        issue, comments = await live_issue(gh, repo, number)
        live = live_record(issue, comments, sit.record)
        login = await own_login(ctx, comments, FAILURE_MARKER)
        own = own_comment(comments, FAILURE_MARKER, login)
        quiet = None if own else quiet_reason(
            live, config=config, trigger=trigger, now=now, ignore_labels=opened_labels,
            paused=sit.paused, muted=sit.muted,
        )
        if not own and quiet is None and stored_quiet:
            quiet = stored_quiet  # (nothing of ours there: quiet, as the stored thread said)
        if not own and quiet is None and await deleted_by_person(
                ctx, repo, number, "failure_comment", sit.record, login):
            # An attempt whose answer was lost posted it, and a person deleted it since.
            quiet = DELETED
        if not own and quiet is None and trigger != "command" and await _maintainer_among(
                ctx, sit, unlabelled_replies(live)):
            quiet = ("maintainer_replied", "a maintainer has already replied")
        if not own and quiet is None and trigger != "command" and (
                live.get("author_association") or "NONE").upper() in UNLABELLED and (
                await _maintainer_among(ctx, sit, [{"author": live.get("author")}])):
            # Opened by a maintainer GitHub does not call one (a private organisation member
            # reads CONTRIBUTOR or NONE): asked, once per comment about to be posted.
            quiet = MAINTAINER_AUTHOR
        if not own and quiet is None:
            # The re-read config's bar and budget, as its opt-outs (config_now above).
            ok, code, reason = _is_confident_failure(analysis, config)
            quiet = (code, reason) if not ok else await budget_now(ctx, sit, config, action_id)
        if quiet:
            await release(ctx, action_id, lease=lease)
            await record_skip(ctx, repo, number, "failure_comment", *quiet, checked="live")
            return "skipped:" + quiet[0]
        # What the app wrote before (an earlier attempt whose answer was lost), read before
        # this attempt's text is recorded: our comment with none of them was edited by a person.
        written = await texts_written(ctx, repo, number, "failure_comment")
        # Still ours? A run slow enough for its claim to be taken over as stale leaves the
        # comment to the run that took it (which posted, or will adopt what is there). The
        # text is recorded before it is posted, so a retry knows what it finds.
        lease = await renew(ctx, action_id, lease, body=composed.body)
        if lease is None:
            return "owned"
        posted = await post_or_adopt(gh, repo, number, composed.body, FAILURE_MARKER, comments,
                                     login=login, written=written)
        if posted.get("edited_on_github"):
            # Ours, corrected by a person since: left as it is and frozen, as an edit of the
            # issue would find it (docs/comments.md); the slot is held, nothing posted again.
            log.info("%s#%s: the failure comment was edited on GitHub; adopted as it is",
                     repo, number)
            await finish(ctx, action_id, lease=lease, status="posted", frozen=True,
                         comment_id=posted.get("id"), comment_node_id=posted.get("node_id"),
                         details={**details, "edited_on_github": True})
            return "edited"
        await finish(
            ctx, action_id, lease=lease, status="posted", body=composed.body,
            comment_id=posted.get("id"), comment_node_id=posted.get("node_id"),
        )
    except Exception as exc:
        if (refused := refusal_of(exc)) is not None:
            # Archived or locked while the delivery waited, Issues write not granted (auth64):
            # nothing was posted, and a retry meets the same answer.
            await release(ctx, action_id, lease=lease)
            # (the delivery named: handled again once the permission is accepted,
            # bot.webhooks.installations.answer_when_permitted)
            await record_refusal(ctx, repo, number, "failure_comment", *refused,
                                 installation_id=sit.installation_id, delivery_id=delivery_id,
                                 checked="live", github=str(exc)[:200])
            return "skipped:" + refused[0]
        # Give the slot back so the worker's retry can post; the failure stays visible.
        await fail(ctx, action_id, exc, lease=lease)
        raise
    label = config.labels.get(composed.category)
    if label and not _has_label(issue, label):  # else a person's already: nothing to add
        try:
            await add_label(ctx, gh, repo, number, action_id, label)
        except Exception as exc:  # a missing label permission must not undo the comment
            from bot.github.client import refused_for_good

            if refused_for_good(exc):
                log.warning("could not add label %r to %s#%s", label, repo, number, exc_info=True)
                return "posted"
            # A rate limit, a 5xx, a lost connection: the intent (`label_pending`) stays, the
            # delivery is retried, and the retry (finding the comment posted: `owned`)
            # finishes it (`add_pending_label`).
            raise
    return "posted"


# A label the app makes (the repository lacked the one its config names): a colour of its
# own and a description saying where it comes from, instead of GitHub's grey and nothing.
LABEL_COLOR = "5319e7"
LABEL_DESCRIPTION = "A training-failure kind, added by rltracker (see .github/rltracker.yml)"


async def _make_label(gh: Any, repo: str, label: str) -> None:
    """Create the repository's label `label` unless it has it (in any case: GitHub's names are
    case-insensitive), so that adding it to an issue does not make GitHub create it grey and
    undescribed (user77). One read per add; a label made meanwhile (422 `already_exists`) is
    there. Its colour and description are never changed afterwards: the maintainers'."""
    from urllib.parse import quote

    from gidgethub import BadRequest

    try:
        await gh.getitem(f"/repos/{repo}/labels/{quote(label, safe='')}")
        return
    except BadRequest as exc:
        if exc.status_code != 404:
            raise
    try:
        await gh.post(f"/repos/{repo}/labels", data={
            "name": label, "color": LABEL_COLOR, "description": LABEL_DESCRIPTION})
    except BadRequest as exc:
        if exc.status_code != 422 or "already_exists" not in str(getattr(exc, "errors", "")):
            raise


async def add_label(ctx: Any, gh: Any, repo: str, number: int, action_id: int,
                    label: str) -> None:
    """Add `label` to the issue (which does not have it: the caller read it) as the app's.
    The intent (`label_pending` in the action's details) is committed before the POST and
    resolved after it, in one transaction with the record that the label is the app's
    (`label`): a process that dies between GitHub taking the label and that record (killed,
    its database gone, GitHub's answer lost) leaves the intent, and whoever reads the action
    next (`resolve_label_intent`: the retry of the delivery, the next kind, edit or
    not-a-failure) finds the label on the issue and knows it is the app's. A refusal for good
    (403, 422) drops the intent (nothing was added) and raises; anything else raises with
    the intent kept."""
    await _record_label(ctx, action_id, label, key="label_pending")
    try:
        await _make_label(gh, repo, label)
        labels = await gh.post(f"/repos/{repo}/issues/{number}/labels", data={"labels": [label]})
    except Exception as exc:
        from bot.github.client import refused_for_good

        if refused_for_good(exc):
            await _record_label(ctx, action_id, None, key="label_pending")
        raise
    await _label_added(ctx, action_id, label, _label_id({"labels": labels}, label))


async def resolve_label_intent(ctx: Any, gh: Any, repo: str, number: int, action_id: int,
                               issue: dict[str, Any] | None = None) -> tuple[str | None, str | None]:
    """Settle a label add the app began and did not see through (`add_label`'s intent left
    by a crash or a failure): the label on the issue now is the app's (the intent was
    written only when the issue did not have it), recorded as `label`; not on it, the add
    did not happen (or a person took the label off since): the intent is dropped. Returns
    (the label recorded as the app's, the intent's label when it was not found on the issue);
    GitHub is read only when an intent is there."""
    async with ctx.sessionmaker() as session:
        details = await session.scalar(select(Action.details).where(Action.id == action_id)) or {}
    pending, had = details.get("label_pending"), details.get("label")
    if not pending:
        return had, None
    if issue is None:
        issue = await gh.getitem(f"/repos/{repo}/issues/{number}")
    if _has_label(issue, pending):
        await _label_added(ctx, action_id, pending, _label_id(issue, pending))
        return pending, None
    await _record_label(ctx, action_id, None, key="label_pending")
    return had, pending


async def add_pending_label(ctx: Any, sit: Situation, action: Action) -> None:
    """The kind label the comment's first post did not see through (`add_label`'s intent,
    `label_pending`: the process died after GitHub took it, or a rate limit, a 5xx), finished
    by the retry of its delivery; no second comment. On the issue already, it is the app's;
    not there, it is added. One GitHub refuses for good is logged and dropped; a retryable
    failure raises again."""
    label = (action.details or {}).get("label_pending")
    if not label or action.status != "posted" or sit.installation_id is None or ctx.github is None:
        return
    gh = await installation_gh(ctx, sit.installation_id)
    try:
        _, missing = await resolve_label_intent(ctx, gh, sit.repo, sit.number, action.id)
        if missing:
            await add_label(ctx, gh, sit.repo, sit.number, action.id, missing)
    except Exception as exc:
        from bot.github.client import refused_for_good

        if not refused_for_good(exc):
            raise
        log.warning("could not add label %r to %s#%s", label, sit.repo, sit.number, exc_info=True)


MAX_ROLES_ASKED = 5


async def _maintainer_among(ctx: Any, sit: Situation, comments: list[dict[str, Any]]) -> bool:
    """Whether one of these commenters (at most MAX_ROLES_ASKED distinct ones, asked of
    GitHub: the collaborator permission API) has write access to the repository."""
    logins = list(dict.fromkeys(str(c["author"]) for c in comments if c.get("author")))
    for login in logins[:MAX_ROLES_ASKED]:
        if await ctx.github.repository_role(sit.installation_id, sit.repo, login) in WRITE_ROLES:
            return True
    return False


def transferred_in(payload: dict[str, Any] | None) -> bool:
    """An `issues.opened` delivery at the new place of a transferred issue (GitHub names the
    old one in `changes.old_issue`)."""
    changes = (payload or {}).get("changes")
    return isinstance(changes, dict) and changes.get("old_issue") is not None


async def labels_at_opening(ctx: Any, repo: str, number: int) -> set[str]:
    """The labels the issue was opened with, as the skips recorded on its opening kept them
    (none when its opening said nothing: the comment was not skipped then, or before this
    was kept)."""
    async with ctx.sessionmaker() as session:
        rows = await session.scalars(select(Action.details).where(
            Action.repo == repo, Action.number == number, Action.kind == "failure_comment",
            Action.status == "skipped"))
        return {str(label) for details in rows
                for label in ((details or {}).get("opened_labels") or [])}


async def _opened_while_suspended(ctx: Any, repo: str, number: int) -> bool:
    """Whether the issue's opening decision found the app's installation suspended."""
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Action.id).where(Action.dedupe_key == skip_key(
            repo, number, "failure_comment", SUSPENDED[0]))) is not None


async def _replied_as_proposal(ctx: Any, repo: str, number: int) -> bool:
    async with ctx.sessionmaker() as session:
        status = await session.scalar(
            select(Action.status).where(Action.dedupe_key == rules_key(repo, number)))
    return status in LIVE_STATUSES


def _label_names(issue: dict[str, Any]) -> set[str]:
    """The issue's label names, casefolded: GitHub's label names are case-insensitive (adding
    `rl: kl` to an issue labelled `RL: KL` adds nothing), so compare with `_has_label`."""
    return {str(lab.get("name") if isinstance(lab, dict) else lab).casefold()
            for lab in issue.get("labels") or []}


def _has_label(issue: dict[str, Any], label: str) -> bool:
    return label.casefold() in _label_names(issue)


def _label_id(issue: dict[str, Any], label: str) -> int | None:
    """GitHub's id of the issue's label `label` (any case), which a rename keeps; None when
    the issue (or the answer listing its labels) shows none."""
    for lab in issue.get("labels") or []:
        if (isinstance(lab, dict) and str(lab.get("name")).casefold() == label.casefold()
                and isinstance(lab.get("id"), int)):
            return int(lab["id"])
    return None


def _named_now(issue: dict[str, Any], label_id: int | None) -> str | None:
    """The name the issue's label of id `label_id` has now (a maintainer may have renamed it
    in the repository's settings), or None when the issue has no such label."""
    for lab in issue.get("labels") or []:
        if label_id is not None and isinstance(lab, dict) and lab.get("id") == label_id:
            return str(lab.get("name"))
    return None


async def _record_label(ctx: Any, action_id: int, label: str | None, *, would: bool = False,
                        key: str | None = None) -> None:
    """Keep in the action's details (`label`) the label the app added to the issue, if any;
    `would`: in dry run, the label it would add (`would_label`), nothing asked of GitHub."""
    key = key or ("would_label" if would else "label")
    async with ctx.sessionmaker() as session:
        row = await locked_action(session, action_id)
        if row is not None and (row.details or {}).get(key, ...) != label:
            details = {**(row.details or {}), key: label}
            if key == "label":
                details.pop("label_id", None)  # the id was the former label's
            row.details = details
        await session.commit()


async def _label_added(ctx: Any, action_id: int, label: str, label_id: int | None) -> None:
    """The label is on the issue as the app's: recorded (`label`, and `label_id`, GitHub's id
    of it, which a rename in the repository's settings keeps: `relabel` finds it under its
    new name) and the intent resolved (`label_pending` cleared), in one transaction."""
    async with ctx.sessionmaker() as session:
        row = await locked_action(session, action_id)
        if row is not None:
            details = dict(row.details or {})
            if (details.get("label") != label or details.get("label_pending") is not None
                    or details.get("label_id") != label_id):
                row.details = {**details, "label": label, "label_pending": None,
                               "label_id": label_id}
        await session.commit()


async def relabel(ctx: Any, repo: str, number: int, installation_id: int | None,
                  action: Action, label: str | None) -> None:
    """The label the app added with the failure comment follows the comment's kind: the
    previous kind's label (only one the app added) is removed and `label` (the config's label
    for the kind now said, None after not-a-failure) added, unless the issue has it already.
    A label error never undoes the comment: one GitHub refuses for good (no permission, an
    invalid name) is logged; a rate limit, a 5xx or a lost connection raises, so that the
    delivery is retried (the comment's rewrite finds nothing to do then, and this is done
    again) rather than the label change being lost until the next edit. A removal answered
    404 or 410 (a person removed the label, the issue is gone) is done; a 404 for a label a
    maintainer renamed in the repository's settings removes it under its new name (found by
    the id recorded with it, user82). An add begun and not
    seen through (`add_label`'s intent: a crash after GitHub took it) is settled first, so
    the label it left is known as the app's and follows the kind too."""
    had = (action.details or {}).get("label")
    intent = (action.details or {}).get("label_pending")
    if label == had and not intent:
        return
    base = f"/repos/{repo}/issues/{number}/labels"
    now = had
    issue: dict[str, Any] | None = None  # the issue as read here (at most once)
    try:
        gh = await installation_gh(ctx, installation_id)
        if intent:
            had, _ = await resolve_label_intent(ctx, gh, repo, number, action.id)
            now = had
            if label == had:
                return
        if had:
            if (await _remove_label(gh, base, had) == 404
                    and (label_id := await _stored_label_id(ctx, action.id)) is not None):
                # No label of that name on the issue: a person took it off, or a maintainer
                # renamed it in the repository's settings (the issue keeps it under its new
                # name, with its id).
                issue = await gh.getitem(f"/repos/{repo}/issues/{number}")
                renamed = _named_now(issue, label_id)
                if renamed is not None:
                    await _remove_label(gh, base, renamed)
                    issue = None  # (read again below: it changed)
            now = None
        if issue is None and label:
            issue = await gh.getitem(f"/repos/{repo}/issues/{number}")
        if label and issue is not None and not _has_label(issue, label):
            if now != had:  # (the removal known before the add's intent is written)
                await _record_label(ctx, action.id, now)
                had = now
            await add_label(ctx, gh, repo, number, action.id, label)
            now = had = label
    except Exception as exc:
        from bot.github.client import refused_for_good

        if now != had:  # what was done before the error stays known
            await _record_label(ctx, action.id, now)
        if not refused_for_good(exc):
            raise
        log.warning("could not relabel %s#%s (%r -> %r)", repo, number, had, label, exc_info=True)
        return
    if now != had:
        await _record_label(ctx, action.id, now)


async def _stored_label_id(ctx: Any, action_id: int) -> int | None:
    """The id of the label the action records as the app's, read now (`_label_added` may have
    written it since the action was loaded)."""
    async with ctx.sessionmaker() as session:
        details = await session.scalar(select(Action.details).where(Action.id == action_id)) or {}
    label_id = details.get("label_id")
    return label_id if isinstance(label_id, int) else None


async def _remove_label(gh: Any, base: str, name: str) -> int | None:
    """DELETE the issue's label `name` (`base`: the issue's labels path). GitHub's 404 (no
    label of that name on the issue) or 410 (the issue is gone) is returned, nothing left to
    remove; None when removed."""
    from urllib.parse import quote

    from gidgethub import BadRequest

    try:
        await gh.delete(f"{base}/{quote(name, safe='')}")
    except BadRequest as exc:
        if exc.status_code not in (404, 410):
            raise
        return int(exc.status_code)
    return None


async def freeze_if_maintainer_replied(ctx: Any, sit: Situation) -> bool:
    action = sit.existing
    if action is None or action.frozen or action.status not in ("posted", "dry_run"):
        return bool(action and action.frozen)
    if maintainer_replies(sit.record, after=action.created_at):
        await finish(ctx, action.id, frozen=True)
        return True
    return False


def _left_alone(action: Action) -> bool:
    """Our comment is not ours to rewrite even when someone asks: a person edited it on
    GitHub, deleted or minimised it (minimised by a not-a-failure verdict is the app's
    doing: a later kind rewrites it and shows it again)."""
    details = action.details or {}
    minimized_by_person = action.is_minimized and details.get("minimized_by") != VERDICT_MINIMIZED
    return bool(details.get("edited_on_github") or action.comment_deleted or minimized_by_person)


async def update_failure_comment(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig, *,
    asked: bool = False,
) -> str:
    """An edit of the issue: rewrite our comment when the finding changed (not once frozen,
    nor on a thread muted with /rltracker ignore or stop). `asked`: the thread's author or a
    maintainer set the kind (`/rltracker kind`), which a maintainer's reply does not freeze.
    The label the app added follows the kind the comment now says (`relabel`)."""
    outcome = await _rewrite(ctx, sit, analysis, config, asked=asked)
    action = sit.existing
    assert action is not None
    if (outcome in ("updated", "unchanged") and action.status == "posted" and action.comment_id
            and sit.installation_id is not None and not effective_dry_run(ctx, config)):
        ok, _, _ = _is_confident_failure(analysis, config)
        kind = _failure_of(analysis).get("category") if ok else None
        await relabel(ctx, sit.repo, sit.number, sit.installation_id, action,
                      config.labels.get(kind) if kind else None)
    elif outcome in ("updated", "unchanged") and effective_dry_run(ctx, config):
        ok, _, _ = _is_confident_failure(analysis, config)
        kind = _failure_of(analysis).get("category") if ok else None
        await _record_label(ctx, action.id, config.labels.get(kind) if kind else None, would=True)
    return outcome


async def _rewrite(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig, *, asked: bool,
) -> str:
    action = sit.existing
    assert action is not None
    if action.status not in ("posted", "dry_run"):
        return "unchanged"
    if sit.muted:
        return "muted"
    if not asked and not config.failure_comments:
        return "config_off"  # turned off since it was posted: left as it is (a kind still asks)
    if not asked and sit.paused:
        return "paused"  # its maintainers hid the app's comments: no more activity there
    if asked:
        if _left_alone(action):
            return "frozen"
    elif await freeze_if_maintainer_replied(ctx, sit):
        return "frozen"
    elif _left_alone(action):
        # Hidden by a person on GitHub (known from the nightly reception or a verdict's read
        # of it): told off without a word in the thread, as a maintainer's reply freezes it.
        await finish(ctx, action.id, frozen=True)
        return "frozen"
    lang = action.language or "en"
    ok, _, _ = _is_confident_failure(analysis, config)
    composed = None
    if ok and sit.framework:
        composed = compose_for(sit.record, analysis, sit.framework,
                               public_url=ctx.settings.public_url,
                               declined=await declined_methods(ctx, sit.repo))
    body = composed.body if composed else withdrawn_comment(
        lang, ctx.settings.public_url, set_by=bool(_failure_of(analysis).get("set_by")))
    known = action.body  # the text we last wrote, as this decision read it
    if body == known:
        return "unchanged"
    if (not asked and action.status == "posted" and ctx.github is not None
            and sit.installation_id is not None
            and await _maintainer_among(ctx, sit, unlabelled_replies(sit.record, action.created_at))):
        # A maintainer GitHub does not call one (private organisation membership) replied
        # after the comment: frozen as after any maintainer's reply (their role asked only
        # when a rewrite is due).
        await finish(ctx, action.id, frozen=True)
        return "frozen"
    details = dict(action.details or {})
    details["edits"] = int(details.get("edits", 0)) + 1
    if composed:
        details.update(category=composed.category, runner_up=composed.details.get("runner_up"),
                       suggested=composed.suggested, already_set=composed.already_set,
                       set_by=composed.details.get("set_by"))
    else:
        details["withdrawn"] = True
    if action.status == "posted" and action.comment_id and not effective_dry_run(ctx, config):
        stopped, known = await rewrite_own_comment(
            ctx, sit, action, body, known, "failure_comment",
            dict(action.details or {}, edited_on_github=True))
        if stopped:
            return stopped
    # Only the row whose body we read is updated: a concurrent edit does not resurrect old text.
    # The texts recorded before a PATCH (this one's, a concurrent rewrite's) are kept.
    async with ctx.sessionmaker() as session:
        row = await locked_action(session, action.id)
        if row is not None and row.body == known:
            recorded = (row.details or {}).get(WRITTEN)
            row.body = body
            row.details = {**details, WRITTEN: recorded} if recorded else details
            row.language = composed.lang if composed else lang
            row.updated_at = utcnow()
        await session.commit()
    return "updated"
