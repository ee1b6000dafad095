"""Decides what the app says in other people's repositories, and says it at most once.

Called by `bot.pipeline.thread_changed` after the analysis is stored. Two spontaneous
comments exist: the failure comment (methods for a training-failure report) and the
rule-summary reply (contribution rules for a method proposal). Everything else the app posts
answers a command (bot/commands.py) through `post_reply`.

Once, enforced by the database: an Action row with a unique `dedupe_key`
("{repo}#{number}:failure_comment") is inserted as `pending` BEFORE anything is posted, in a
transaction that first takes a per-repository write lock (a no-op UPDATE of the repository
row: a row lock on PostgreSQL, the write lock on SQLite), so the daily budget is counted and
the slot claimed atomically. A second worker, a redelivery or a concurrent run finds the row
(or hits the unique index) and does nothing. Before posting, the issue and its comments are
read live from GitHub: processing can lag, and a maintainer may have replied, labelled or
assigned in the meantime; our own earlier comment is found by its hidden marker and edited
instead of posting a second one (a crash between posting and recording cannot duplicate).

Every decision not to comment is recorded as a `skipped` action with the reason (deduped per
thread and reason, so redeliveries do not pile up rows); `/api/actions` shows them. The app
never closes, locks or marks anything stale.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, select, update
from sqlalchemy.exc import IntegrityError

from bot.comment_render import (
    FAILURE_MARKER,
    RULES_MARKER,
    FailureComment,
    compose_failure_comment,
    is_app_comment,
    rule_summary_reply,
    withdrawn_comment,
)
from bot.repo_config import RepoConfig, effective_dry_run, get_repo_config
from bot.store.models import Action, Analysis, Repository, Thread
from bot.store.threads import get_thread, load_comments, thread_record
from bot.store.types import parse_datetime, utcnow

log = logging.getLogger(__name__)

MAINTAINERS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
NEW_TRIGGERS = frozenset({"issues.opened", "command"})
EDIT_TRIGGERS = frozenset({"issues.edited"})
PROPOSAL_TRIGGERS = frozenset({"issues.opened", "pull_request.opened"})
COMMENT_TRIGGERS = frozenset({"issue_comment.created", "issue_comment.edited"})
BUDGET_KINDS = ("failure_comment", "rule_summary")
LIVE_STATUSES = ("posted", "dry_run", "pending")
MAX_AGE = timedelta(hours=48)
STALE_PENDING = timedelta(minutes=10)  # a pending claim older than this was left by a crash
DECLINED_STATES = ("declined", "redirected")
COMMAND_PREFIX = "/rltracker"


# --- recording ---------------------------------------------------------------------------


async def record_once(ctx: Any, **fields: Any) -> bool:
    """Insert an Action; with a dedupe_key already present, insert nothing and return False."""
    async with ctx.sessionmaker() as session:
        key = fields.get("dedupe_key")
        if key is not None and await session.scalar(select(Action.id).where(Action.dedupe_key == key)):
            return False
        session.add(Action(**fields))
        try:
            await session.commit()
        except IntegrityError:
            await session.rollback()
            return False
    return True


async def record_skip(
    ctx: Any, repo: str, number: int | None, kind: str, code: str, reason: str, **extra: Any
) -> None:
    log.info("skip %s %s#%s: %s", kind, repo, number, reason)
    await record_once(
        ctx, repo=repo, number=number, kind=kind, status="skipped", reason=reason,
        dedupe_key=f"{repo}#{number}:{kind}:skip:{code}", details={"code": code, **extra},
    )


# --- the situation of a thread -------------------------------------------------------------


@dataclass
class Situation:
    repo: str
    number: int
    record: dict[str, Any]
    repo_id: int
    installation_id: int | None
    framework: str | None
    paused: bool
    paused_reason: str | None
    muted: bool
    existing: Action | None  # the failure comment action, if one owns the slot


def _installation_from(payload: dict[str, Any] | None) -> int | None:
    inst = (payload or {}).get("installation") or {}
    try:
        return int(inst["id"]) if inst.get("id") is not None else None
    except (TypeError, ValueError):
        return None


async def _repository_row(session: Any, repo: str, installation_id: int | None) -> Repository:
    row = await session.scalar(
        select(Repository).where(func.lower(Repository.full_name) == repo.lower())
    )
    if row is None:
        from analyzers.catalog import load_catalog

        fw = load_catalog().framework_for_repo(repo)
        row = Repository(full_name=repo, framework=fw.id if fw else None)
        session.add(row)
        try:
            await session.flush()
        except IntegrityError:  # created concurrently by the event handler
            await session.rollback()
            row = await session.scalar(
                select(Repository).where(func.lower(Repository.full_name) == repo.lower())
            )
            assert row is not None
    return row


async def load_situation(
    ctx: Any, repo: str, number: int, payload: dict[str, Any] | None
) -> Situation | None:
    async with ctx.sessionmaker() as session:
        thread = await get_thread(session, repo, number)
        if thread is None:
            return None
        repo = thread.repo
        record = thread_record(thread, await load_comments(session, thread))
        row = await _repository_row(session, repo, None)
        installation_id = row.installation_id
        if installation_id is None:
            installation_id = _installation_from(payload)
        framework = row.framework
        if framework is None:
            from analyzers.catalog import load_catalog

            fw = load_catalog().framework_for_repo(repo)
            framework = fw.id if fw else None
        existing = await session.scalar(
            select(Action).where(Action.dedupe_key == failure_key(repo, number))
        )
        situation = Situation(
            repo=repo, number=number, record=record, repo_id=row.id,
            installation_id=installation_id, framework=framework,
            paused=bool(row.comments_paused), paused_reason=row.paused_reason,
            muted=bool(thread.muted), existing=existing,
        )
        await session.commit()
    return situation


def failure_key(repo: str, number: int) -> str:
    return f"{repo}#{number}:failure_comment"


def rules_key(repo: str, number: int) -> str:
    return f"{repo}#{number}:rule_summary"


# --- quiet rules (pure) --------------------------------------------------------------------


def _is_command(body: str | None) -> bool:
    return (body or "").lstrip().lower().startswith(COMMAND_PREFIX)


def maintainer_replies(record: dict[str, Any], after: datetime | None = None) -> list[dict[str, Any]]:
    """Comments by maintainers other than the opener (commands and the app's own excluded)."""
    out = []
    for c in record.get("comments") or []:
        if (c.get("author_association") or "").upper() not in MAINTAINERS:
            continue
        if c.get("author_is_bot") or (c.get("author") or "").endswith("[bot]"):
            continue
        if c.get("author") and c.get("author") == record.get("author"):
            continue
        body = c.get("body") or ""
        if _is_command(body) or is_app_comment(body):
            continue
        if after is not None:
            created = parse_datetime(c.get("created_at"))
            if created is None or created <= after:
                continue
        out.append(c)
    return out


def _issue_ref(number: int) -> re.Pattern[str]:
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
    maintainers being on it and about age: someone asked.
    """
    if not config.failure_comments:
        return "config_off", "failure comments are turned off in .github/rltracker.yml"
    if paused:
        return "paused", "comments are paused for this repository" + (
            f" ({paused_reason})" if paused_reason else ""
        )
    if muted:
        return "muted", "the thread was muted with /rltracker ignore or stop"
    if record.get("kind") != "issue":
        return "not_issue", "only issues get failure comments (not pull requests or discussions)"
    if record.get("state") != "open":
        return "closed", "the issue is closed"
    if record.get("author_is_bot") or (record.get("author") or "").endswith("[bot]"):
        return "bot_author", "the issue was opened by a bot"
    if trigger == "command":
        return None
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


def live_record(issue: dict[str, Any], comments: list[dict[str, Any]], stored: dict[str, Any]) -> dict[str, Any]:
    """The stored record with the live issue's state, labels, assignees and comments."""
    record = dict(stored)
    user = issue.get("user") or {}
    record["state"] = "open" if issue.get("state") == "open" else "closed"
    record["kind"] = "pull_request" if issue.get("pull_request") is not None else stored.get("kind", "issue")
    record["labels"] = [
        (lab.get("name") if isinstance(lab, dict) else str(lab)) for lab in issue.get("labels") or []
    ]
    record["assignees"] = [a.get("login") for a in issue.get("assignees") or [] if isinstance(a, dict)]
    if user.get("login"):
        record["author"] = user.get("login")
        record["author_is_bot"] = user.get("type") == "Bot" or str(user.get("login")).endswith("[bot]")
    record["comments"] = [
        {
            "author": (c.get("user") or {}).get("login"),
            "author_association": c.get("author_association"),
            "author_is_bot": (c.get("user") or {}).get("type") == "Bot",
            "created_at": c.get("created_at"),
            "body": c.get("body") or "",
        }
        for c in comments
    ]
    return record


# --- database queries ----------------------------------------------------------------------


async def declined_methods(ctx: Any, repo: str) -> set[str]:
    """Methods whose proposals this repository's maintainers declined or redirected."""
    async with ctx.sessionmaker() as session:
        rows = await session.scalars(
            select(Analysis.methods)
            .join(Thread, Thread.id == Analysis.thread_id)
            .where(
                func.lower(Thread.repo) == repo.lower(),
                Analysis.is_proposal.is_(True),
                Analysis.review_state.in_(DECLINED_STATES),
            )
        )
        return {m for methods in rows for m in (methods or [])}


async def linked_pull_request(ctx: Any, repo: str, number: int) -> int | None:
    """A stored open or merged pull request in this repository that references the issue."""
    pattern = _issue_ref(number)
    async with ctx.sessionmaker() as session:
        rows = await session.execute(
            select(Thread.number, Thread.title, Thread.body).where(
                func.lower(Thread.repo) == repo.lower(),
                Thread.kind == "pull_request",
                Thread.state != "closed",
                Thread.body.contains(f"#{number}") | Thread.title.contains(f"#{number}"),
            )
        )
        for pr_number, title, body in rows:
            if pattern.search(title or "") or pattern.search((body or "")[:65536]):
                return int(pr_number)
    return None


async def earlier_proposals(ctx: Any, thread_id: int | None, methods: list[str], arxiv_ids: list[str]) -> list[dict[str, Any]]:
    """Earlier proposals of the same paper or method, in all seven frameworks."""
    if not methods and not arxiv_ids:
        return []
    from analyzers.catalog import load_catalog

    cat = load_catalog()
    wanted_m, wanted_a = set(methods), set(arxiv_ids)
    out: list[dict[str, Any]] = []
    async with ctx.sessionmaker() as session:
        rows = await session.execute(
            select(Thread.id, Thread.repo, Thread.number, Thread.created_at, Analysis.methods,
                   Analysis.arxiv_ids, Analysis.review_state)
            .join(Analysis, Analysis.thread_id == Thread.id)
            .where(Analysis.is_proposal.is_(True))
        )
        for tid, repo, number, created, t_methods, t_arxiv, state in rows:
            if tid == thread_id:
                continue
            shared_m = wanted_m & set(t_methods or [])
            shared_a = wanted_a & set(t_arxiv or [])
            if not shared_m and not shared_a:
                continue
            fw = cat.framework_for_repo(repo)
            out.append({
                "repo": repo, "number": number, "framework": fw.id if fw else None,
                "state": state, "method": sorted(shared_m)[0] if shared_m else None,
                "created_at": created,
            })
    out.sort(key=lambda e: (e["created_at"] is None, e["created_at"]), reverse=False)
    return out


def _day_start(now: datetime) -> datetime:
    return now.replace(hour=0, minute=0, second=0, microsecond=0)


async def claim(
    ctx: Any,
    situation: Situation,
    *,
    kind: str,
    dedupe_key: str,
    budget: int | None,
    language: str | None = None,
    details: dict[str, Any] | None = None,
    delivery_id: str | None = None,
) -> tuple[str, int | None]:
    """Take the once-only slot: ("claimed", action id), ("owned", None) or ("budget", None)."""
    now = utcnow()
    async with ctx.sessionmaker() as session:
        try:
            # Per-repository lock first (see the module docstring), then check and insert.
            await session.execute(
                update(Repository)
                .where(Repository.id == situation.repo_id)
                .values(comments_paused=Repository.comments_paused)
            )
            existing = await session.scalar(select(Action).where(Action.dedupe_key == dedupe_key))
            if existing is not None:
                if existing.status == "pending" and existing.updated_at < now - STALE_PENDING:
                    existing.updated_at = now  # left behind by a crashed worker: take it over
                    existing_id = existing.id
                    await session.commit()
                    return "claimed", existing_id
                await session.rollback()
                return "owned", None
            if budget is not None:
                used = await session.scalar(
                    select(func.count(Action.id)).where(
                        Action.repo == situation.repo,
                        Action.kind.in_(BUDGET_KINDS),
                        Action.status.in_(LIVE_STATUSES),
                        Action.created_at >= _day_start(now),
                    )
                )
                if (used or 0) >= budget:
                    await session.rollback()
                    return "budget", None
            action = Action(
                repo=situation.repo, number=situation.number, kind=kind, status="pending",
                dedupe_key=dedupe_key, language=language, details=details or {},
                delivery_id=delivery_id, created_at=now, updated_at=now,
            )
            session.add(action)
            await session.commit()
            return "claimed", action.id
        except IntegrityError:
            await session.rollback()
            return "owned", None


async def claim_within_budget(
    ctx: Any, sit: Situation, config: Any, *, kind: str, dedupe_key: str, **fields: Any
) -> tuple[str, int | None]:
    """Claim a once-only comment under the repository's daily budget: ("claimed", id), or
    ("owned", None) when another run holds it, or ("skipped:budget", None) with the skip
    recorded."""
    state, action_id = await claim(
        ctx, sit, kind=kind, dedupe_key=dedupe_key, budget=config.daily_budget, **fields
    )
    if state == "budget":
        await record_skip(ctx, sit.repo, sit.number, kind, "budget",
                          f"daily comment budget of {config.daily_budget} reached")
        return "skipped:budget", None
    if state == "owned" or action_id is None:
        return "owned", None
    return "claimed", action_id


async def _finish(ctx: Any, action_id: int, **values: Any) -> None:
    async with ctx.sessionmaker() as session:
        values.setdefault("updated_at", utcnow())
        await session.execute(update(Action).where(Action.id == action_id).values(**values))
        await session.commit()


async def _release(ctx: Any, action_id: int) -> None:
    async with ctx.sessionmaker() as session:
        row = await session.get(Action, action_id)
        if row is not None:
            await session.delete(row)
            await session.commit()


# --- GitHub --------------------------------------------------------------------------------


async def _gh(ctx: Any, installation_id: int | None) -> Any:
    if ctx.github is None:
        raise RuntimeError("no GitHub client configured")
    return await ctx.github.api(installation_id)


async def _live_issue(gh: Any, repo: str, number: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    issue = await gh.getitem(f"/repos/{repo}/issues/{number}")
    comments = [c async for c in gh.getiter(f"/repos/{repo}/issues/{number}/comments")]
    return issue, comments


def _own_comment(comments: list[dict[str, Any]], marker: str) -> dict[str, Any] | None:
    for c in comments:
        user = c.get("user") or {}
        if marker in (c.get("body") or "") and (user.get("type") == "Bot" or str(user.get("login", "")).endswith("[bot]")):
            return c
    return None


async def _post_or_adopt(
    gh: Any, repo: str, number: int, body: str, marker: str, comments: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """Post `body`, or edit our comment already there (found by its marker)."""
    if comments is None:
        comments = [c async for c in gh.getiter(f"/repos/{repo}/issues/{number}/comments")]
    own = _own_comment(comments, marker)
    if own is not None:
        if (own.get("body") or "") != body:
            own = await gh.patch(f"/repos/{repo}/issues/comments/{own['id']}", data={"body": body})
        return own
    return await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})


# --- the failure comment -------------------------------------------------------------------


def _failure_of(analysis: dict[str, Any]) -> dict[str, Any]:
    return analysis.get("failure") or {}


def _is_confident_failure(analysis: dict[str, Any], config: RepoConfig) -> tuple[bool, str, str]:
    failure = _failure_of(analysis)
    if not failure.get("is_failure_report"):
        return False, "not_failure", "not a training-failure report"
    confidence = float(failure.get("confidence") or 0.0)
    if confidence < config.min_confidence:
        return False, "low_confidence", (
            f"failure confidence {confidence:.2f} below min_confidence {config.min_confidence:.2f}"
        )
    return True, "", ""


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
    repo, number = sit.repo, sit.number
    ok, code, reason = _is_confident_failure(analysis, config)
    if not ok:
        if trigger in NEW_TRIGGERS and sit.record.get("kind") == "issue":
            await record_skip(ctx, repo, number, "failure_comment", code, reason)
        return "skipped:" + code
    if sit.framework is None:
        await record_skip(ctx, repo, number, "failure_comment", "unknown_framework",
                          "the repository is not one of the tracked frameworks")
        return "skipped:unknown_framework"
    opened_labels: set[str] = set()
    if trigger == "issues.opened":
        opened_labels = {
            (lab.get("name") if isinstance(lab, dict) else str(lab))
            for lab in ((payload or {}).get("issue") or {}).get("labels") or []
        }
    now = utcnow()
    quiet = quiet_reason(
        sit.record, config=config, trigger=trigger, now=now, ignore_labels=opened_labels,
        linked_pr=await linked_pull_request(ctx, repo, number) if trigger != "command" else None,
        paused=sit.paused, paused_reason=sit.paused_reason, muted=sit.muted,
    )
    if quiet:
        await record_skip(ctx, repo, number, "failure_comment", *quiet)
        return "skipped:" + quiet[0]
    declined = await declined_methods(ctx, repo)
    composed = compose_for(sit.record, analysis, sit.framework, public_url=ctx.settings.public_url,
                           declined=declined)
    if composed is None:
        await record_skip(ctx, repo, number, "failure_comment", "nothing_to_suggest",
                          "every method this framework has for the failure is already set, "
                          "declined here, or absent")
        return "skipped:nothing_to_suggest"
    details = {
        "category": composed.category, "confidence": composed.details.get("confidence"),
        "suggested": composed.suggested, "already_set": composed.already_set,
        "elsewhere": composed.elsewhere, "declined": composed.declined, "trigger": trigger,
    }
    delivery_id = (payload or {}).get("_delivery_id")
    outcome, action_id = await claim_within_budget(
        ctx, sit, config, kind="failure_comment", dedupe_key=failure_key(repo, number),
        language=composed.lang, details=details, delivery_id=delivery_id,
    )
    if action_id is None:
        return outcome
    if effective_dry_run(ctx, config) or ctx.github is None or sit.installation_id is None:
        await _finish(ctx, action_id, status="dry_run", body=composed.body)
        return "dry_run"
    try:
        gh = await _gh(ctx, sit.installation_id)
        issue, comments = await _live_issue(gh, repo, number)
        live = live_record(issue, comments, sit.record)
        own = _own_comment(comments, FAILURE_MARKER)
        quiet = None if own else quiet_reason(
            live, config=config, trigger=trigger, now=now, ignore_labels=opened_labels,
            paused=sit.paused, muted=sit.muted,
        )
        if quiet:
            await _release(ctx, action_id)
            await record_skip(ctx, repo, number, "failure_comment", *quiet, checked="live")
            return "skipped:" + quiet[0]
        posted = await _post_or_adopt(gh, repo, number, composed.body, FAILURE_MARKER, comments)
        await _finish(
            ctx, action_id, status="posted", body=composed.body,
            comment_id=posted.get("id"), comment_node_id=posted.get("node_id"),
        )
    except Exception as exc:
        # Give the slot back so the worker's retry can post; the failure stays visible.
        await _finish(ctx, action_id, status="failed", dedupe_key=None, reason=f"{type(exc).__name__}: {exc}"[:500])
        raise
    label = config.labels.get(composed.category)
    if label:
        try:
            await gh.post(f"/repos/{repo}/issues/{number}/labels", data={"labels": [label]})
        except Exception:  # a missing label permission must not undo the comment
            log.warning("could not add label %r to %s#%s", label, repo, number, exc_info=True)
    return "posted"


async def _freeze_if_maintainer_replied(ctx: Any, sit: Situation) -> bool:
    action = sit.existing
    if action is None or action.frozen or action.status not in ("posted", "dry_run"):
        return bool(action and action.frozen)
    if maintainer_replies(sit.record, after=action.created_at):
        await _finish(ctx, action.id, frozen=True)
        return True
    return False


async def update_failure_comment(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig
) -> str:
    """An edit of the issue: rewrite our comment when the finding changed (not once frozen)."""
    action = sit.existing
    assert action is not None
    if action.status not in ("posted", "dry_run"):
        return "unchanged"
    if await _freeze_if_maintainer_replied(ctx, sit):
        return "frozen"
    lang = action.language or "en"
    ok, _, _ = _is_confident_failure(analysis, config)
    composed = None
    if ok and sit.framework:
        composed = compose_for(sit.record, analysis, sit.framework,
                               public_url=ctx.settings.public_url,
                               declined=await declined_methods(ctx, sit.repo))
    body = composed.body if composed else withdrawn_comment(lang, ctx.settings.public_url)
    if body == action.body:
        return "unchanged"
    details = dict(action.details or {})
    details["edits"] = int(details.get("edits", 0)) + 1
    if composed:
        details.update(category=composed.category, suggested=composed.suggested,
                       already_set=composed.already_set)
    else:
        details["withdrawn"] = True
    if action.status == "posted" and action.comment_id and not effective_dry_run(ctx, config):
        from gidgethub import BadRequest

        gh = await _gh(ctx, sit.installation_id)
        try:
            await gh.patch(f"/repos/{sit.repo}/issues/comments/{action.comment_id}", data={"body": body})
        except BadRequest as exc:
            if exc.status_code != 404:
                raise
            # Someone deleted our comment: that is an answer, not an error. Never re-post.
            await _finish(ctx, action.id, comment_deleted=True, frozen=True)
            return "deleted"
    # Only the row whose body we read is updated: a concurrent edit does not resurrect old text.
    async with ctx.sessionmaker() as session:
        await session.execute(
            update(Action)
            .where(and_(Action.id == action.id, Action.body == action.body))
            .values(body=body, details=details, language=composed.lang if composed else lang,
                    updated_at=utcnow())
        )
        await session.commit()
    return "updated"


# --- the rule-summary reply ----------------------------------------------------------------


# What a method proposer needs first, in this order (the rules helper's topic keys).
PROPOSAL_TOPICS = (
    "issue-first", "algorithms", "tests", "docs", "paper", "sign-off", "lint", "pr-title", "ai-policy",
)


async def rules_markdown(
    ctx: Any, repo: str, lang: str, topics: tuple[str, ...] | None = PROPOSAL_TOPICS
) -> str | None:
    """The framework's contribution-rule summary as Markdown (rules helper), or None."""
    try:
        from bot import contribution
    except ImportError:
        return None
    try:
        summary = await contribution.rules_for_repo(ctx, repo)
        formatter = getattr(contribution, "format_rules_markdown", None)
        if formatter is None:
            from analyzers.rules import format_rules_markdown as formatter  # type: ignore[no-redef]
        try:
            text = formatter(summary, lang=lang, topics=list(topics) if topics else None,
                             max_per_topic=2 if topics else None, heading=False)
        except TypeError:  # an older formatter without the selection arguments
            text = formatter(summary, lang=lang)
    except Exception:
        log.warning("no contribution-rule summary for %s", repo, exc_info=True)
        return None
    return text.strip() or None


async def rule_summary(
    ctx: Any, sit: Situation, analysis: dict[str, Any], config: RepoConfig, *, trigger: str,
    payload: dict[str, Any] | None,
) -> str:
    repo, number, record = sit.repo, sit.number, sit.record
    proposal = analysis.get("proposal") or {}
    if not proposal.get("is_proposal"):
        return "not_proposal"
    reason: tuple[str, str] | None = None
    confidence = float(proposal.get("confidence") or 0.0)
    if confidence < config.min_confidence:
        # Same bar as failure comments. On the dev threads it takes the share of replies
        # that go to real proposals from 0.80 to 0.89 (benchmarks/comment_decisions.py).
        reason = ("low_confidence", f"proposal confidence {confidence:.2f} below min_confidence "
                  f"{config.min_confidence:.2f}")
    elif (analysis.get("failure") or {}).get("is_failure_report"):
        # A report of a run going wrong that names a method is not a proposal to add one;
        # it gets the failure comment (if anything), never two comments.
        reason = ("failure_report", "a training-failure report, not a method proposal")
    elif not config.rule_summaries:
        reason = ("config_off", "rule summaries are turned off in .github/rltracker.yml")
    elif sit.paused:
        reason = ("paused", "comments are paused for this repository")
    elif sit.muted:
        reason = ("muted", "the thread was muted with /rltracker ignore or stop")
    elif record.get("state") != "open":
        reason = ("closed", "the thread is closed")
    elif record.get("author_is_bot"):
        reason = ("bot_author", "opened by a bot")
    elif (record.get("author_association") or "").upper() in MAINTAINERS:
        reason = ("maintainer_author", "opened by a maintainer, who knows the rules")
    if reason:
        await record_skip(ctx, repo, number, "rule_summary", *reason)
        return "skipped:" + reason[0]
    from analyzers.language import detect_language

    lang = detect_language(record.get("title"), record.get("body"))
    outcome, action_id = await claim_within_budget(
        ctx, sit, config, kind="rule_summary", dedupe_key=rules_key(repo, number), language=lang,
    )
    if action_id is None:
        return outcome
    try:
        methods = sorted({p["method"] for p in analysis.get("papers") or [] if p.get("method")})
        arxiv = sorted({p["arxiv_id"] for p in analysis.get("papers") or [] if p.get("arxiv_id")})
        async with ctx.sessionmaker() as session:
            thread = await get_thread(session, repo, number)
            thread_id = thread.id if thread else None
        earlier = await earlier_proposals(ctx, thread_id, methods, arxiv)
        body = rule_summary_reply(
            rules_markdown=await rules_markdown(ctx, repo, lang), framework_id=sit.framework,
            earlier=earlier, lang=lang, public_url=ctx.settings.public_url,
        )
        details = {"methods": methods, "arxiv_ids": arxiv, "earlier": len(earlier), "trigger": trigger}
        if effective_dry_run(ctx, config) or ctx.github is None or sit.installation_id is None:
            await _finish(ctx, action_id, status="dry_run", body=body, details=details)
            return "dry_run"
        gh = await _gh(ctx, sit.installation_id)
        posted = await _post_or_adopt(gh, repo, number, body, RULES_MARKER, None)
        await _finish(ctx, action_id, status="posted", body=body, details=details,
                      comment_id=posted.get("id"), comment_node_id=posted.get("node_id"))
    except Exception as exc:
        await _finish(ctx, action_id, status="failed", dedupe_key=None, reason=f"{type(exc).__name__}: {exc}"[:500])
        raise
    return "posted"


# --- replies to commands -------------------------------------------------------------------


async def post_reply(
    ctx: Any, repo: str, number: int, installation_id: int | None, body: str, *,
    dedupe_key: str, kind: str = "command", details: dict[str, Any] | None = None,
) -> str:
    """A reply to a command, once per command comment (dedupe_key carries its id)."""
    async with ctx.sessionmaker() as session:
        row = await _repository_row(session, repo, installation_id)
        repo_id = row.id
        await session.commit()
    sit = Situation(repo=repo, number=number, record={}, repo_id=repo_id,
                    installation_id=installation_id, framework=None, paused=False,
                    paused_reason=None, muted=False, existing=None)
    state, action_id = await claim(ctx, sit, kind=kind, dedupe_key=dedupe_key, budget=None,
                                   details=details)
    if state != "claimed" or action_id is None:
        return "owned"
    if ctx.settings.dry_run or ctx.github is None or installation_id is None:
        await _finish(ctx, action_id, status="dry_run", body=body)
        return "dry_run"
    try:
        gh = await _gh(ctx, installation_id)
        posted = await gh.post(f"/repos/{repo}/issues/{number}/comments", data={"body": body})
    except Exception as exc:
        await _finish(ctx, action_id, status="failed", dedupe_key=None, reason=f"{type(exc).__name__}: {exc}"[:500])
        raise
    await _finish(ctx, action_id, status="posted", body=body, comment_id=posted.get("id"),
                  comment_node_id=posted.get("node_id"))
    return "posted"


# --- entry point ---------------------------------------------------------------------------


async def act(
    ctx: Any, repo: str, number: int, *, trigger: str, payload: dict[str, Any] | None = None,
    analysis: dict[str, Any] | None = None,
) -> dict[str, str]:
    """What the pipeline calls after storing the analysis. Returns {kind: outcome}."""
    interesting = NEW_TRIGGERS | EDIT_TRIGGERS | PROPOSAL_TRIGGERS | COMMENT_TRIGGERS
    if trigger not in interesting or analysis is None:
        return {}
    sit = await load_situation(ctx, repo, number, payload)
    if sit is None or sit.installation_id is None:
        return {}  # not installed: the app only tracks, it never speaks there
    outcome: dict[str, str] = {}
    if trigger in COMMENT_TRIGGERS:
        if await _freeze_if_maintainer_replied(ctx, sit):
            outcome["failure_comment"] = "frozen"
        return outcome
    config = await get_repo_config(
        ctx, sit.repo, sit.installation_id, refresh=trigger == "command"
    )
    existing = sit.existing
    stale = (
        existing is not None and existing.status == "pending"
        and existing.updated_at < utcnow() - STALE_PENDING
    )
    if existing is not None and not stale and existing.status in ("posted", "dry_run", "pending"):
        if trigger in EDIT_TRIGGERS:
            outcome["failure_comment"] = await update_failure_comment(ctx, sit, analysis, config)
        else:
            outcome["failure_comment"] = "owned"
    elif trigger in NEW_TRIGGERS and sit.record.get("kind") in ("issue", "pull_request"):
        # (a stale pending claim left by a crashed worker is taken over inside `claim`)
        outcome["failure_comment"] = await failure_comment(
            ctx, sit, analysis, config, trigger=trigger, payload=payload
        )
    if trigger in PROPOSAL_TRIGGERS:
        outcome["rule_summary"] = await rule_summary(
            ctx, sit, analysis, config, trigger=trigger, payload=payload
        )
    return outcome


__all__ = [
    "MAINTAINERS",
    "act",
    "claim",
    "declined_methods",
    "earlier_proposals",
    "failure_comment",
    "live_record",
    "maintainer_replies",
    "post_reply",
    "quiet_reason",
    "record_once",
    "record_skip",
    "rule_summary",
]
