"""The rule-summary reply to a method proposal: the framework's contribution rules a proposer
needs first, and earlier proposals of the same or similar methods."""

from __future__ import annotations

import logging
import re
from datetime import datetime
from typing import Any

from sqlalchemy import select

from analyzers.accounts import by_bot
from analyzers.rules import format_rules_markdown
from bot.command_syntax import opening_command
from bot.speaking import contribution
from bot.speaking.claims import (
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
    MAINTAINERS,
    MAX_AGE,
    WRITE_ROLES,
    live_record,
    maintainer_replies,
    unlabelled_replies,
)
from bot.speaking.records import record_skip
from bot.speaking.render import (
    _REF,
    RULES_MARKER,
    code_span,
    rule_summary_reply,
)
from bot.speaking.repo_config import RepoConfig, config_now, effective_dry_run
from bot.speaking.situation import Situation, earlier_proposals, proposed_subjects, rules_key
from bot.store.models import Action
from bot.store.threads import get_thread
from bot.store.types import parse_datetime, utcnow

log = logging.getLogger(__name__)



# What a method proposer needs first, in this order (the rules helper's topic keys).
PROPOSAL_TOPICS = (
    "issue-first", "algorithms", "tests", "docs", "paper", "sign-off", "lint", "pr-title", "ai-policy",
)


async def rules_markdown(
    ctx: Any, repo: str, lang: str, topics: tuple[str, ...] | None = PROPOSAL_TOPICS
) -> str | None:
    """The framework's contribution-rule summary as Markdown, or None when it cannot be had
    (no cache, no snapshot, GitHub unreachable)."""
    try:
        summary = await contribution.rules_for_repo(ctx, repo)
    except Exception:
        log.warning("no contribution-rule summary for %s", repo, exc_info=True)
        return None
    text = format_rules_markdown(summary, lang=lang, topics=list(topics) if topics else None,
                                 max_per_topic=2 if topics else None, heading=False)
    return within_budget(_no_markers(_no_references(text)).strip(), lang, full=not topics) or None


# GitHub refuses a comment over 65,536 characters (422): the rules part is kept well inside
# it, leaving room for the reply's own text and the earlier proposals.
MAX_RULES_CHARS = 60_000
# The note names what a reader on GitHub can turn to (not the operator's CLI): the opening
# post's summary (a few rules per topic) points to `/rltracker rules`, the command they can
# type there; that command's reply (every rule, cut the same way) points to the files.
CUT_NOTE = {
    "en": "- … {n} more lines not shown here (a GitHub comment holds 65,536 characters); "
          "`/rltracker rules` lists them all.",
    "zh": "- …… 另有 {n} 行未显示（GitHub 评论最多 65,536 个字符）；`/rltracker rules` 可列出全部。",
}
CUT_NOTE_FULL = {
    "en": "- … {n} more lines not shown here (a GitHub comment holds 65,536 characters); "
          "the repository's CONTRIBUTING and issue templates hold them all.",
    "zh": "- …… 另有 {n} 行未显示（GitHub 评论最多 65,536 个字符）；完整内容见仓库的 CONTRIBUTING "
          "与 issue 模板。",
}


def within_budget(markdown: str, lang: str, budget: int = MAX_RULES_CHARS, *,
                  full: bool = False) -> str:
    """`markdown` cut at whole lines to `budget` characters, with a line saying how many were
    left out (a line is never cut inside: a code span stays closed). `full`: the summary is
    already every rule (the `/rltracker rules` reply), so the note points to the files."""
    if len(markdown) <= budget:
        return markdown
    lines = markdown.splitlines()
    notes = CUT_NOTE_FULL if full else CUT_NOTE
    note = notes.get(lang, notes["en"])
    kept: list[str] = []
    size = len(note) + 16
    for line in lines:
        if size + len(line) + 1 > budget:
            break
        kept.append(line)
        size += len(line) + 1
    while kept and not kept[-1].strip():
        kept.pop()
    return "\n".join(kept + ["", note.format(n=len(lines) - len(kept))])


def _no_references(markdown: str) -> str:
    """`#N` and `owner/repo#N` outside code spans put in code spans, as in every comment the app
    writes: the catalog's observations say "added in 2023 (#447)", and GitHub linked each such
    reference and wrote "mentioned this" into that issue whenever the rules were posted."""
    parts = markdown.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = _REF.sub(lambda m: code_span(m.group(0)), parts[i])
    return "`".join(parts)


def _no_markers(markdown: str) -> str:
    """`<!--` of a repository's text (a template's file name, cited in a code span) with a
    zero-width space after its `!`: the app finds its own comments by the hidden markers they
    carry (`<!-- rltracker:failure-comment -->`, a reply's `<!-- rltracker:reply-to:REF -->`),
    and a file so named made the rules reply read as the failure comment, or as the reply to
    another command, to `own_comment` and `deletion_of`. Shown the same; outside code spans
    the rules helper leaves no `<!--` at all."""
    return markdown.replace("<!--", "<!\u200b--")


MAINTAINER_AUTHOR = ("maintainer_author", "opened by a maintainer, who knows the rules")
SUMMARIES_OFF = ("config_off", "rule summaries are turned off in .github/rltracker.yml")


def summary_quiet(record: dict[str, Any], config: RepoConfig, sit: Situation, *,
                  now: datetime | None = None) -> tuple[str, str] | None:
    """(code, reason) when the rule summary must not be posted on this proposal, judged on
    the stored thread and again on the live one right before posting; None to go ahead.
    `now`: when it is decided (the install preview decides as of the opening)."""
    if not config.rule_summaries:
        return SUMMARIES_OFF
    if sit.paused:
        return "paused", "comments are paused for this repository"
    if sit.muted or opening_command(record.get("body")) is not None:  # (the live body too)
        return "muted", "the thread was muted with /rltracker ignore or stop"
    if record.get("state") != "open":
        return "closed", "the thread is closed"
    if record.get("locked"):
        return "locked", "the conversation is locked"
    if by_bot(record):
        return "bot_author", "opened by a bot"
    if (record.get("author_association") or "").upper() in MAINTAINERS:
        return MAINTAINER_AUTHOR
    created = parse_datetime(record.get("created_at"))
    if created is not None and (now or utcnow()) - created > MAX_AGE:
        # For a new proposal, as the failure comment: not on one whose `opened` was handled
        # days late (an outage, a replayed delivery) nor on an old one transferred in.
        return "too_old", "the thread was opened more than 48 hours before processing"
    return None


_ISSUE_REF = re.compile(r"(?<![\w/&])#(\d{1,9})(?!\d)")
MAX_REFS = 50


async def summarised_issue(ctx: Any, repo: str, record: dict[str, Any]) -> int | None:
    """An issue of this repository that a pull request references ("Closes #12") and that
    got the rule summary (posted, or recorded in dry run), or None: its proposer has the
    rules already."""
    text = f"{record.get('title') or ''}\n{(record.get('body') or '')[:65536]}"
    numbers = []
    for m in _ISSUE_REF.finditer(text):
        numbers.append(int(m.group(1)))
        if len(numbers) >= MAX_REFS:
            break
    if not numbers:
        return None
    keys = {rules_key(repo, n): n for n in numbers if n != record.get("number")}
    async with ctx.sessionmaker() as session:
        found = await session.scalars(select(Action.dedupe_key).where(
            Action.dedupe_key.in_(list(keys)), Action.kind == "rule_summary",
            Action.status.in_(("posted", "dry_run"))))
        hits = sorted(keys[k] for k in found if k in keys)
    return hits[0] if hits else None


NOT_PROPOSAL = ("not_proposal", "not a method proposal")


async def summary_reason(ctx: Any, sit: Situation, analysis: dict[str, Any],
                         config: RepoConfig, *, now: datetime | None = None,
                         ) -> tuple[str, str] | None:
    """(code, reason) when the thread gets no rule summary, judged on `sit.record`; None to
    reply. What the live decision and the install preview both ask (`not_proposal` is not
    recorded as a skip: most threads are not proposals)."""
    record = sit.record
    proposal = analysis.get("proposal") or {}
    if not proposal.get("is_proposal"):
        return NOT_PROPOSAL
    confidence = float(proposal.get("confidence") or 0.0)
    bar = config.proposal_bar()
    if sit.framework is None:
        # Installed on every repository of an organisation, or on a fork: the reply is about
        # contributing a method to a tracked framework (and the study of seven of them).
        return ("unknown_framework", "the repository is not one of the tracked frameworks")
    if confidence < bar:
        # On the dev threads a bar of 0.7 took the share of replies that go to real
        # proposals from 0.80 to 0.89 (benchmarks/comment_decisions.py).
        return ("low_confidence", f"proposal confidence {confidence:.2f} below {bar:.2f}")
    if (analysis.get("failure") or {}).get("is_failure_report"):
        # A report of a run going wrong that names a method is not a proposal to add one;
        # it gets the failure comment (if anything), never two comments.
        return ("failure_report", "a training-failure report, not a method proposal")
    reason = summary_quiet(record, config, sit, now=now)
    if reason is None and record.get("kind") == "pull_request":
        issue = await summarised_issue(ctx, sit.repo, record)
        if issue is not None:
            reason = ("summarised_on_issue",
                      f"the rule summary was given on the proposal's issue ({issue})")
    return reason


async def compose_summary(ctx: Any, sit: Situation, analysis: dict[str, Any],
                          lang: str, *, rules: str | None = None) -> tuple[str, dict[str, Any]]:
    """(body, details) of the rule summary on this thread: the framework's rules (`rules`
    when the caller read them already) and the earlier proposals of the same methods (opened
    before it)."""
    methods, arxiv = proposed_subjects(analysis.get("papers") or [])
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, sit.repo, sit.number)
        thread_id = thread.id if thread else None
    earlier = await earlier_proposals(ctx, thread_id, methods, arxiv)
    body = rule_summary_reply(
        rules_markdown=rules if rules is not None else await rules_markdown(ctx, sit.repo, lang),
        framework_id=sit.framework, earlier=earlier, lang=lang,
        public_url=ctx.settings.public_url,
    )
    return body, {"methods": methods, "arxiv_ids": arxiv, "earlier": len(earlier)}


async def rule_summary(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig, *, trigger: str,
    payload: dict[str, Any] | None,
) -> str:
    repo, number, record = sit.repo, sit.number, sit.record
    reason = await summary_reason(ctx, sit, analysis, config)
    if reason is not None and reason[0] == NOT_PROPOSAL[0]:
        return "not_proposal"
    stored_quiet = reason
    if reason and not sit.rules_may_have_posted:  # (read with the claim: load_situation)
        await record_skip(ctx, repo, number, "rule_summary", *reason)
        return "skipped:" + reason[0]
    # (a claim a run that died as it posted left: its reply looked up on GitHub first, as
    # the failure comment's, whatever the stored thread says now)
    from analyzers.language import detect_language

    lang = detect_language(record.get("title"), record.get("body"))
    outcome, action_id, lease = await claim_within_budget(
        ctx, sit, config, kind="rule_summary", dedupe_key=rules_key(repo, number), language=lang,
        delivery_id=delivery_of(payload),
    )
    if action_id is None:
        return outcome
    try:
        body, details = await compose_summary(ctx, sit, analysis, lang)
        details["trigger"] = trigger
        if not effective_dry_run(ctx, config) and ctx.github is not None:
            config = await config_now(ctx, sit, config)  # (see failure_comment)
        if effective_dry_run(ctx, config) or ctx.github is None or sit.installation_id is None:
            if not config.rule_summaries:
                await release(ctx, action_id, lease=lease)
                await record_skip(ctx, repo, number, "rule_summary", *SUMMARIES_OFF)
                return "skipped:config_off"
            await finish(ctx, action_id, status="dry_run", body=body, details=details)
            return "dry_run"
        gh = await installation_gh(ctx, sit.installation_id)
        # The thread as it is now (processing can lag behind it): closed or locked meanwhile
        # (declined, or the conversation stopped), the reply would come too late. A
        # maintainer's answer does not silence it: the rules and earlier proposals still
        # serve the proposer who goes on to open the pull request.
        # Our reply already there (an attempt whose answer was lost) is adopted below, not
        # left unrecorded.
        issue, comments = await live_issue(gh, repo, number)
        login = await own_login(ctx, comments, RULES_MARKER)
        live = live_record(issue, comments, record)
        own = own_comment(comments, RULES_MARKER, login)
        quiet = None if own else summary_quiet(live, config, sit)
        if not own and quiet is None and stored_quiet:
            quiet = stored_quiet  # (nothing of ours there: quiet, as the stored thread said)
        if not own and quiet is None and await deleted_by_person(
                ctx, repo, number, "rule_summary", sit.record, login):
            quiet = DELETED  # (see failure_comment)
        if not own and quiet is None and live.get("author") and await ctx.github.repository_role(
                sit.installation_id, repo, str(live["author"])) in WRITE_ROLES:
            # A maintainer GitHub does not call one in the payload (a private organisation
            # member reads CONTRIBUTOR or NONE): asked, once per reply about to be posted.
            quiet = MAINTAINER_AUTHOR
        if not own and quiet is None:
            # The re-read config's bar and budget, as its opt-outs (see failure_comment).
            confidence = float((analysis.get("proposal") or {}).get("confidence") or 0.0)
            if confidence < config.proposal_bar():
                quiet = ("low_confidence",
                         f"proposal confidence {confidence:.2f} below {config.proposal_bar():.2f}")
            else:
                quiet = await budget_now(ctx, sit, config, action_id)
        if quiet:
            await release(ctx, action_id, lease=lease)
            await record_skip(ctx, repo, number, "rule_summary", *quiet, checked="live")
            return "skipped:" + quiet[0]
        # What the app wrote before (an attempt whose answer was lost), read before this
        # attempt's text is recorded: our reply with none of them was edited by a person.
        written = await texts_written(ctx, repo, number, "rule_summary")
        lease = await renew(ctx, action_id, lease, body=body)  # still ours: see failure_comment
        if lease is None:
            return "owned"
        posted = await post_or_adopt(gh, repo, number, body, RULES_MARKER, comments,
                                     login=login, written=written)
        if posted.get("edited_on_github"):
            # Ours, edited by a person since: left as it is; the slot is held, nothing posted.
            log.info("%s#%s: the rule summary was edited on GitHub; adopted as it is",
                     repo, number)
            await finish(ctx, action_id, lease=lease, status="posted", frozen=True,
                         details={**details, "edited_on_github": True},
                         comment_id=posted.get("id"), comment_node_id=posted.get("node_id"))
            return "edited"
        await finish(ctx, action_id, lease=lease, status="posted", body=body, details=details,
                      comment_id=posted.get("id"), comment_node_id=posted.get("node_id"))
    except Exception as exc:
        if (refused := refusal_of(exc)) is not None:
            # Archived or locked while the delivery waited, Issues write not granted (auth64):
            # nothing was posted, and a retry meets the same answer.
            await release(ctx, action_id, lease=lease)
            # (the delivery named: see failure_comment)
            await record_refusal(ctx, repo, number, "rule_summary", *refused,
                                 installation_id=sit.installation_id,
                                 delivery_id=delivery_of(payload), checked="live",
                                 github=str(exc)[:200])
            return "skipped:" + refused[0]
        await fail(ctx, action_id, exc, lease=lease)
        raise
    await _edited_while_posting(ctx, sit, analysis, config)
    return "posted"


MAX_ROLES_ASKED = 5  # (as the failure comment's rewrite: unlabelled repliers asked of GitHub)


async def update_rule_summary(ctx: Any, sit: Situation, analysis: dict[str, Any],
                              config: RepoConfig) -> str | None:
    """An edit of the proposal (an issue or a pull request): the reply names the earlier
    proposals of the paper or method the thread proposes, so an edit that changes what it
    proposes rewrites it, as an edit of a report rewrites the failure comment (speak62:
    a proposal edited from GSPO into CISPO kept listing the GSPO proposals). Not once a
    maintainer replied after it (their reply may answer what it says), nor after a person
    edited it on GitHub, deleted or hid it, on a muted or paused thread, or with
    `rule_summaries: false`. An edit that leaves no proposal (or a failure report) leaves
    the reply as posted: its rules still serve whoever contributes. The framework's rules
    are read as for a new reply: a change of them alone rewrites nothing (nothing asks
    until the thread is edited). None when the thread has no reply of the app's."""
    action = sit.rules_claim
    if action is None or action.status not in ("posted", "dry_run"):
        return None
    details = dict(action.details or {})
    if action.frozen or details.get("edited_on_github") or action.comment_deleted or (
            action.is_minimized):
        return "frozen"
    if sit.muted or opening_command(sit.record.get("body")) is not None:
        return "muted"
    if not config.rule_summaries:
        return "config_off"
    if sit.paused:
        return "paused"
    proposal = analysis.get("proposal") or {}
    if not proposal.get("is_proposal") or (analysis.get("failure") or {}).get("is_failure_report"):
        return "unchanged"
    live_github = (action.status == "posted" and action.comment_id is not None
                   and ctx.github is not None and sit.installation_id is not None)
    if live_github and effective_dry_run(ctx, config):
        return "dry_run"  # (nothing edited on GitHub, nor the record's text moved away from it)
    if maintainer_replies(sit.record, after=action.created_at):
        await finish(ctx, action.id, frozen=True)
        return "frozen"
    from analyzers.language import detect_language

    lang = detect_language(sit.record.get("title"), sit.record.get("body"))
    rules = await rules_markdown(ctx, sit.repo, lang)
    if rules is None:
        return "unchanged"  # the rules cannot be had now: the posted ones stay
    body, new = await compose_summary(ctx, sit, analysis, lang, rules=rules)
    known = action.body
    if body == known:
        return "unchanged"
    if live_github:
        logins = list(dict.fromkeys(str(c["author"]) for c in unlabelled_replies(
            sit.record, action.created_at) if c.get("author")))
        for login in logins[:MAX_ROLES_ASKED]:
            # A maintainer GitHub does not call one (private organisation membership).
            if await ctx.github.repository_role(sit.installation_id, sit.repo, login) in WRITE_ROLES:
                await finish(ctx, action.id, frozen=True)
                return "frozen"
        stopped, known = await rewrite_own_comment(
            ctx, sit, action, body, known, "rule_summary", {**details, "edited_on_github": True})
        if stopped:
            return stopped
    async with ctx.sessionmaker() as session:
        row = await locked_action(session, action.id)
        if row is not None and row.body == known:
            now = dict(row.details or {})
            now.update(new, edits=int(now.get("edits", 0)) + 1)
            row.body, row.details, row.language = body, now, lang
            row.updated_at = utcnow()
        await session.commit()
    return "updated"


def _proposed(analysis: dict[str, Any]) -> tuple[Any, ...]:
    """What of an analysis the rule summary is composed from (whether it gets one aside)."""
    import json

    return (json.dumps(analysis.get("papers") or [], sort_keys=True, default=str),
            bool((analysis.get("proposal") or {}).get("is_proposal")),
            bool((analysis.get("failure") or {}).get("is_failure_report")))


async def _edited_while_posting(ctx: Any, sit: Situation, analysis: dict[str, Any],
                                config: RepoConfig) -> None:
    """After posting: an edit handled by another worker while this run's claim was pending
    found nothing posted to rewrite. The stored analysis, title and body are read again and,
    when they are not what this run composed from, the reply is rewritten once, as that edit
    would have (the failure comment's `_edited_while_posting`). The edit stored them before
    reading the claim, and this reads after the claim is posted: one sees the other."""
    from bot.speaking.situation import load_situation
    from bot.store.models import Analysis

    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, sit.repo, sit.number)
        if thread is None:
            return
        stored = await session.scalar(select(Analysis.result).where(Analysis.thread_id == thread.id))
        text_now = (thread.title or "", thread.body or "")
    if not stored or (_proposed(stored) == _proposed(analysis) and text_now == (
            sit.record.get("title") or "", sit.record.get("body") or "")):
        return
    fresh = await load_situation(ctx, sit.repo, sit.number, None)
    if fresh is None:
        return
    log.info("%s#%s: the proposal was edited while its rule summary was posted; rewriting once",
             sit.repo, sit.number)
    await update_rule_summary(ctx, fresh, stored, config)
