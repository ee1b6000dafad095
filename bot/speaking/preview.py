"""Preview before comments: what the app would have said on a repository's issues of the last
30 days, computed in dry run from stored threads, never posted.

- `GET /repos/{owner}/{name}/preview`: the HTML page (autoescaped; issue titles are shown as
  text, the would-be comments as preformatted text).
- `rltracker preview OWNER/NAME [--days N]`: prints the same as Markdown and stores it (only
  with RLTRACKER_PUBLIC_URL set: its links would otherwise lead to this shell's default).
- `run_preview(ctx, repo)`: stores one `preview` action per issue that would get a comment.
- `preview_on_install(ctx, repos)`: what the installation handlers call once their rows are
  committed: `start_install_preview` starts a background task that fetches each tracked
  repository's issues of the window (`sync_recent_issues`) and runs `run_preview`, recorded
  as a JobRun "install_preview"; `wait_background(ctx)` awaits such tasks (tests, graceful
  shutdown). Without a GitHub client only the preview of stored issues runs, inline.

The decision is the live one (`decide_opened`): the same functions `bot.speaking.decide.act`
runs on an `issues.opened` delivery (`failure_reason`, `quiet_reason`, `compose_for` for the
failure comment; `summary_reason`, `compose_summary` for the rule-summary reply to a method
proposal), on the thread as it was opened (`as_opened`: open, unlocked, no reply, assignee or
label yet), with a person's verdict on the thread (`/rltracker kind`, `not-a-failure`) in place
of the analyzer's finding, as a recheck would decide, and the thread's mute honoured. Later
replies, labels, closing, locking and the 48-hour rule are about lagging processing, not about
whether the comment would have been useful; the pause and the daily budget are reported, not
applied; a proposer's role is not asked of GitHub (a private organisation member is taken at
the payload's word). tests/test_preview_parity.py runs the same threads through both.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select

from analyzers.catalog import canonical_repo
from bot.speaking.failure_comment import with_verdict
from bot.speaking.records import record_all
from bot.speaking.repo_config import RepoConfig
from bot.speaking.situation import declined_methods
from bot.store.jobs import keep_alive, record_job_run
from bot.store.models import Analysis, Repository, Thread, Verdict
from bot.store.threads import load_comments_of, thread_record
from bot.store.types import format_datetime, utcnow
from bot.store.verdicts import as_failure

DEFAULT_DAYS = 30
INSTALL_SYNC_MAX_REQUESTS = 20  # ~2,000 issues of one month: more than any of the seven gets
BACKGROUND_KEY = "background_tasks"  # ctx.extras: set of running asyncio tasks
RUNNING_KEY = "install_preview.running"  # ctx.extras: repositories a task is working on

log = logging.getLogger(__name__)


def as_opened(record: dict[str, Any]) -> dict[str, Any]:
    """The thread as it was when it was opened: open, unlocked, nobody on it yet (no reply,
    assignee or label beyond those it was opened with, which the quiet rules ignore)."""
    return {**record, "state": "open", "locked": False, "comments": [], "assignees": [],
            "labels": []}


async def decide_opened(ctx: Any, sit: Any, analysis: dict[str, Any], config: RepoConfig,
                        declined: set[str]) -> tuple[dict[str, Any] | None, tuple[str, str]]:
    """What the live decision (`bot.speaking.decide.act` on `issues.opened`) says on `sit`'s
    thread as opened, with the live path's own functions: (the would-be comment, None) or
    (None, (code, reason)) when it stays quiet. `sit.record` must be the thread as opened;
    the repository's pause and the daily budget are stated by the preview, not applied."""

    from bot.speaking.failure_comment import compose_for, failure_reason
    from bot.speaking.quiet import quiet_reason
    from bot.speaking.rule_summary import compose_summary, summary_reason
    from bot.store.types import parse_datetime

    record = sit.record
    sit = replace(sit, paused=False, paused_reason=None)
    reason = failure_reason(sit, analysis, config) or quiet_reason(
        record, config=config, trigger="issues.opened",
        now=parse_datetime(record.get("created_at")) or utcnow(), muted=sit.muted)
    if reason is None:
        composed = compose_for(record, analysis, sit.framework, public_url=ctx.settings.public_url,
                               declined=declined)
        if composed is not None:
            return {"kind": "failure_comment", "body": composed.body, "lang": composed.lang,
                    "category": composed.category,
                    "runner_up": composed.details.get("runner_up")}, ("", "")
        reason = ("nothing_to_suggest", "every method this framework has for the failure is "
                  "already set, declined here, or absent")
    summary = await summary_reason(ctx, sit, analysis, config,
                                   now=parse_datetime(record.get("created_at")) or utcnow())
    if summary is None:
        from analyzers.language import detect_language

        lang = detect_language(record.get("title"), record.get("body"))
        body, details = await compose_summary(ctx, sit, analysis, lang)
        return {"kind": "rule_summary", "body": body, "lang": lang, "category": None,
                "runner_up": None, "methods": details["methods"]}, ("", "")
    if summary[0] not in ("not_proposal", "failure_report"):
        reason = summary  # a proposal: why it gets no reply says more
    return None, reason


CACHE_KEY = "preview.cache"  # ctx.extras: {(repo, days): (fingerprint, preview)}
CACHE_SIZE = 32


async def _fingerprint(session: Any, repo: str, since: Any) -> tuple[Any, ...]:
    """What the preview of `repo` since `since` reads, in a few aggregate questions: the
    issues in the window (which, and when each was stored again: a re-sync, a mute), their
    comments, every analysis (earlier proposals and declined methods come from other
    threads), every verdict, the repository's row (config, pause, framework) and its
    contribution rules. The same answers: the same preview."""
    from bot.store.models import Comment, ContributionRules

    in_window = (func.lower(Thread.repo) == repo.lower(), Thread.kind == "issue",
                 Thread.created_at >= since)
    threads = tuple(await session.execute(
        select(Thread.id, Thread.stored_at).where(*in_window).order_by(Thread.id)))
    comments = tuple(await session.execute(
        select(func.count(Comment.id), func.max(Comment.id), func.max(Comment.updated_at))
        .join(Thread, Thread.id == Comment.thread_id).where(*in_window)))
    analyses = tuple(await session.execute(
        select(func.count(Analysis.id), func.max(Analysis.id), func.max(Analysis.analyzed_at))))
    verdicts = tuple(await session.execute(
        select(func.count(Verdict.id), func.max(Verdict.id), func.max(Verdict.given_at))))
    rows = tuple(await session.execute(
        select(Repository.id, Repository.updated_at, Repository.config_fetched_at)
        .where(func.lower(Repository.full_name) == repo.lower())))
    rules = tuple(await session.execute(  # (with or without a repository row)
        select(ContributionRules.id, ContributionRules.fetched_at)
        .where(func.lower(ContributionRules.repo) == repo.lower())))
    return threads, comments, analyses, verdicts, rows, rules


async def compute_preview(ctx: Any, repo: str, days: int = DEFAULT_DAYS) -> dict[str, Any]:
    """The preview of `repo`'s issues opened in the last `days` days. Kept in ctx.extras and
    served again while everything it reads is unchanged (`_fingerprint`); its generated_at
    says when it was computed."""
    from analyzers.catalog import load_catalog

    repo = load_catalog().canonical_repo(repo)
    since = utcnow() - timedelta(days=days)
    async with ctx.sessionmaker() as session:
        fingerprint = await _fingerprint(session, repo, since)
    cache: dict[tuple[str, int], tuple[Any, dict[str, Any]]] = ctx.extras.setdefault(CACHE_KEY, {})
    key = (repo.lower(), days)
    hit = cache.get(key)
    if hit is not None and hit[0] == fingerprint:
        return hit[1]
    preview = await _compute(ctx, repo, since, days)
    cache.pop(key, None)
    cache[key] = (fingerprint, preview)
    while len(cache) > CACHE_SIZE:
        cache.pop(next(iter(cache)))
    return preview


async def _compute(ctx: Any, repo: str, since: Any, days: int) -> dict[str, Any]:
    from analyzers.catalog import framework_id, load_catalog
    from bot.speaking.situation import _situation

    cat = load_catalog()
    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(func.lower(Repository.full_name) == repo.lower()))
        config = RepoConfig.from_dict(row.config) if row is not None else RepoConfig()
        if row is not None and row.config_error:  # said on the page, not taken for the file read
            config = replace(config, source="invalid", error=row.config_error)
        threads = list(await session.scalars(
            select(Thread).where(
                func.lower(Thread.repo) == repo.lower(), Thread.kind == "issue", Thread.created_at >= since,
            ).order_by(Thread.created_at.desc().nulls_last(), Thread.number.desc())
        ))
        ids = [t.id for t in threads]
        analyses = {a.thread_id: a.result for a in await session.scalars(
            select(Analysis).where(Analysis.thread_id.in_(ids)))}
        verdicts = {v.thread_id: v for v in await session.scalars(
            select(Verdict).where(Verdict.thread_id.in_(ids)))}
        comments_of = await load_comments_of(session, ids)  # one query, not one per issue
        records = [(t, thread_record(t, comments_of[t.id])) for t in threads]
    # The repository as the live decision sees it (its framework: the row's, else the catalog's).
    repo_row = row if row is not None else Repository(full_name=repo, framework=framework_id(repo))
    declined = await declined_methods(ctx, repo)
    comments: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for thread, record in records:
        analysis = analyses.get(thread.id)
        if analysis is None:
            from bot.analysis import run_analysis

            analysis = await run_analysis(record)
        if thread.id in verdicts:  # a person's finding outranks the analyzer's
            analysis = with_verdict(analysis, as_failure(verdicts[thread.id]))
        failure = analysis.get("failure") or {}
        set_by = failure.get("set_by")
        url = thread.url or f"https://github.com/{repo}/issues/{thread.number}"
        base = {"number": thread.number, "title": thread.title or "", "url": url}
        sit = _situation(thread, thread.number, as_opened(record), repo_row, None, None, set())
        said, (code, reason) = await decide_opened(ctx, sit, analysis, config, declined)
        if said is None:
            if set_by and code == "not_failure":
                reason += f", per a person ({set_by})"
            skipped.append({**base, "code": code, "reason": reason})
            continue
        if said["kind"] == "failure_comment":
            said.update(set_by=set_by,
                        confidence=None if set_by else f"{float(failure.get('confidence') or 0):.2f}")
        comments.append({**base, **said})
    fw_id = repo_row.framework or framework_id(repo)  # as `_situation` reads it
    fw = cat.frameworks.get(fw_id) if fw_id else None
    return {
        "repo": repo, "framework": fw.name if fw else None, "days": days, "total": len(records),
        "comments": comments, "skipped": skipped, "config": config, "failure_bar": config.failure_bar(), "budget": config.daily_budget,
        "config_problem": f"{CONFIG_PROBLEM}: {config.error}" if config.error else None,
        "paused": bool(row.comments_paused) if row is not None else False,
        "paused_reason": row.paused_reason if row is not None else None,
        "generated_at": format_datetime(utcnow()),
    }


async def run_preview(ctx: Any, repo: str, days: int = DEFAULT_DAYS) -> dict[str, Any]:
    """Compute the preview and store each would-be comment as a `preview` action (dry run),
    all in one transaction; one stored by an earlier preview gets the new text."""
    preview = await compute_preview(ctx, repo, days)
    await record_all(ctx, [
        {"repo": preview["repo"], "number": item["number"], "kind": "preview",
         "status": "dry_run", "body": item["body"],
         "dedupe_key": f"{preview['repo']}#{item['number']}:preview", "language": item["lang"],
         "details": {"category": item["category"], "runner_up": item["runner_up"],
                     **({"comment": "rule_summary"} if item["kind"] == "rule_summary" else {})}}
        for item in preview["comments"]], refresh=("body",))
    return preview


# ------------------------------------------------------------------------- on installation
async def sync_recent_issues(ctx: Any, repo: str, *, days: int = DEFAULT_DAYS,
                             max_requests: int | None = INSTALL_SYNC_MAX_REQUESTS) -> Any:
    """Fetch the repository's issues updated in the last `days` days (so every issue opened in
    the window) through the GraphQL sync, without touching its cursors; returns SyncStats.

    A plain bounded `sync` would not do: a first sync is a backfill of all three kinds, and
    cutting it by a request budget says nothing about which issues it reached. This pass
    pages issues newest-updated first and stops at the window's start, like a refresh with
    its mark set there. It never writes SyncCursor rows, so the regular backfill and refresh
    go on exactly as if it had not run (threads it stored are just found unchanged).
    Raises bot.github.sync.SyncError when `max_requests` runs out (what was fetched is stored).
    """
    from bot.github.sync import Stream, Syncer

    since = utcnow() - timedelta(days=days)

    class RecentIssues(Syncer):
        async def _load_streams(self) -> None:
            name = self.repos[0]
            async with self.ctx.sessionmaker() as session:
                row = await session.scalar(
                    select(Repository).where(func.lower(Repository.full_name) == name.lower()))
            # As Syncer does: an installation token only when the app can mint one.
            iid = row.installation_id if row is not None and self.ctx.settings.has_app_credentials else None
            self.streams.append(Stream(name, "issue", iid, None, False, since, None))

        async def _store_cursor(self, session: Any, s: Stream) -> None:
            return None  # this pass is not part of the backfill/refresh bookkeeping

    return await RecentIssues(ctx, [repo], max_requests=max_requests).run()


def _tracked(repos: Iterable[str]) -> tuple[list[str], list[str]]:
    """(canonical names of the repositories among the seven, the others as given). Elsewhere
    the app never speaks, so a preview would have nothing to show and a sync be wasted."""
    from analyzers.catalog import load_catalog

    cat = load_catalog()
    tracked: list[str] = []
    others: list[str] = []
    for name in repos:
        if cat.framework_for_repo(name) is None:
            others.append(name)
        elif cat.canonical_repo(name).lower() not in {r.lower() for r in tracked}:
            tracked.append(cat.canonical_repo(name))
    return tracked, others



async def _fetch_config(ctx: Any, repo: str) -> str:
    """Read the repository's config afresh onto its row (where compute_preview looks);
    returns its source: defaults, file or invalid."""
    from bot.speaking.repo_config import get_repo_config

    async with ctx.sessionmaker() as session:
        row = await session.scalar(select(Repository).where(func.lower(Repository.full_name) == repo.lower()))
        iid = row.installation_id if row is not None else None
    return (await get_repo_config(ctx, repo, iid, refresh=True)).source


async def install_preview(ctx: Any, repos: list[str], *, days: int = DEFAULT_DAYS,
                          skipped: list[str] | None = None) -> dict[str, Any]:
    """Sync (when a GitHub client is there) then preview each repository; one JobRun row.
    A failing repository is logged and recorded; the others still run."""
    started = utcnow()
    run_id = await record_job_run(ctx, "install_preview", None, started_at=started, outcome="running",
                            counts={"repos": {r: {} for r in repos}, "skipped": skipped or []})
    per_repo: dict[str, dict[str, Any]] = {}
    errors: list[str] = []
    try:
        async with keep_alive(ctx, run_id):  # a preview whose process died reads interrupted
            for repo in repos:
                item: dict[str, Any] = per_repo.setdefault(repo, {})
                if ctx.github is None:
                    item["sync"] = "skipped: no GitHub client"
                else:
                    from bot.github.sync import SyncError, SyncFailed

                    try:
                        stats = await sync_recent_issues(ctx, repo, days=days)
                        item.update(sync="ok", requests=stats.requests, threads=stats.threads)
                    except SyncFailed as exc:  # GitHub kept failing: a failure, what was stored previewed
                        log.warning("install preview: sync of %s failed: %s", repo, exc)
                        item["sync"] = f"failed: {exc}"[:200]
                        errors.append(f"{repo} sync: {exc}"[:300])
                    except SyncError as exc:  # budget used up: preview what was stored
                        log.warning("install preview: sync of %s stopped: %s", repo, exc)
                        item["sync"] = f"incomplete: {exc}"[:200]
                    except Exception as exc:  # noqa: BLE001 - one repository must not stop the rest
                        log.exception("install preview: sync of %s failed", repo)
                        item["sync"] = f"failed: {type(exc).__name__}"
                        errors.append(f"{repo} sync: {type(exc).__name__}: {exc}"[:300])
                    try:  # so the preview honours .github/rltracker.yml (comments off, threshold)
                        item["config"] = await _fetch_config(ctx, repo)
                    except Exception as exc:  # noqa: BLE001 - previewed, but not to be trusted
                        # Previewed with the config read last (the defaults at first): what the
                        # repository turned off may show as would-be comments, so a failure.
                        log.exception("install preview: config of %s failed", repo)
                        item["config"] = f"failed: {type(exc).__name__}"
                        errors.append(f"{repo} config: {type(exc).__name__}: {exc}"[:300])
                try:
                    preview = await run_preview(ctx, repo, days)
                    item.update(issues=preview["total"], would_comment=len(preview["comments"]))
                except Exception as exc:  # noqa: BLE001
                    log.exception("install preview: preview of %s failed", repo)
                    item["preview"] = f"failed: {type(exc).__name__}"
                    errors.append(f"{repo} preview: {type(exc).__name__}: {exc}"[:300])
    except asyncio.CancelledError:  # shutdown: leave an honest row behind, then stop
        try:
            await record_job_run(ctx, "install_preview", run_id, finished_at=utcnow(), outcome="failed",
                           counts={"repos": per_repo, "skipped": skipped or []},
                           error="cancelled (shutdown)")
        except Exception:  # noqa: BLE001 - the database may be gone already
            log.warning("install preview: could not record the cancellation")
        raise
    counts = {"repos": per_repo, "skipped": skipped or [],
              "would_comment": sum(i.get("would_comment", 0) for i in per_repo.values())}
    await record_job_run(ctx, "install_preview", run_id, finished_at=utcnow(), outcome="failed" if errors else "ok",
                   counts=counts, error="; ".join(errors)[:2000] if errors else None)
    log.info("install preview: %s", counts)
    return counts


async def install_problems(ctx: Any, repo: str) -> list[str]:
    """What the latest finished install preview of `repo` could not read from GitHub (its
    sync failed or stopped, its config read failed, its preview failed), from its JobRun row;
    [] when it read everything or none ran. The page says so: without it, issues that were
    never fetched, or comments the config turned off, read as "would say nothing"."""
    from bot.store.models import JobRun

    async with ctx.sessionmaker() as session:
        runs = list(await session.scalars(
            select(JobRun).where(JobRun.name == "install_preview", JobRun.finished_at.is_not(None))
            .order_by(JobRun.id.desc()).limit(50)))
    for run in runs:
        repos = {str(k).lower(): v for k, v in ((run.counts or {}).get("repos") or {}).items()}
        item = repos.get(canonical_repo(repo).lower())
        if item is None:
            continue
        return [f"{what}: {item[what]}" for what in ("sync", "config", "preview")
                if str(item.get(what) or "").startswith(("failed", "incomplete"))]
    return []


def start_install_preview(ctx: Any, repos: Iterable[str], *, days: int = DEFAULT_DAYS
                          ) -> asyncio.Task[Any] | None:
    """Start `install_preview` in the background for the tracked ones among `repos`.

    Called by the installation handlers after their commit; the task outlives the handler
    (a sync takes many requests) and is kept in ctx.extras so it is not garbage-collected
    and `wait_background` can await it. A repository already being previewed by an earlier
    task (a redelivered event) is left to that task. Returns the task, or None when there
    was nothing to do.
    """
    tracked, skipped = _tracked(repos)
    running: set[str] = ctx.extras.setdefault(RUNNING_KEY, set())
    todo = [r for r in tracked if r.lower() not in running]
    if not todo:
        return None
    running.update(r.lower() for r in todo)

    async def job() -> None:
        try:
            await install_preview(ctx, todo, days=days, skipped=skipped)
        except Exception:  # noqa: BLE001 - a background task has no one to raise to
            log.exception("install preview of %s failed", ", ".join(todo))

    def done(task: asyncio.Task[Any]) -> None:
        # A callback, not `finally`: a task cancelled before it first ran never enters job().
        tasks.discard(task)
        running.difference_update(r.lower() for r in todo)

    task = asyncio.get_running_loop().create_task(job(), name="install-preview")
    tasks: set[asyncio.Task[Any]] = ctx.extras.setdefault(BACKGROUND_KEY, set())
    tasks.add(task)
    task.add_done_callback(done)
    return task


async def preview_on_install(ctx: Any, repos: Iterable[str]) -> None:
    """What the installation handlers call after their commit. With a GitHub client the
    preview needs a sync (many requests, maybe a rate-limit wait): a background task. Without
    one there is nothing to fetch and the preview of stored issues is a few queries: it runs
    here, so no task outlives the handler for nothing."""
    if ctx.github is not None:
        start_install_preview(ctx, repos)
        return
    tracked, skipped = _tracked(repos)
    if tracked:
        await install_preview(ctx, tracked, skipped=skipped)


async def wait_background(ctx: Any, grace: float | None = None) -> int:
    """Await the background tasks in ctx.extras (tests; graceful shutdown). With a grace (s),
    the ones still running after it are cancelled: what their sync stored stays, and their
    JobRun row says "cancelled" (`rltracker preview OWNER/NAME` redoes the preview).
    Returns how many were awaited."""
    tasks: set[asyncio.Task[Any]] = ctx.extras.get(BACKGROUND_KEY) or set()
    pending = {t for t in tasks if not t.done()}
    if not pending:
        return 0
    _done, late = await asyncio.wait(pending, timeout=grace)
    for task in late:
        log.warning("background task %s still running at shutdown: cancelled", task.get_name())
        task.cancel()
    if late:
        await asyncio.gather(*late, return_exceptions=True)
    return len(pending)


def render_markdown(preview: dict[str, Any]) -> str:
    lines = [f"# rltracker preview: {preview['repo']} (last {days_text(preview['days'])}, dry "
             "run)", ""]
    issues = "issue" if preview["total"] == 1 else "issues"
    lines.append(f"{len(preview['comments'])} of {preview['total']} {issues} would get a comment.")
    if preview.get("config_problem"):
        lines += ["", preview["config_problem"]]
    for item in preview["comments"]:
        lines += ["", f"## #{item['number']}", "", item["body"].rstrip()]
    if preview["skipped"]:
        lines += ["", "## No comment", ""]
        lines += [f"- #{s['number']}: {s['reason']}" for s in preview["skipped"]]
    return "\n".join(lines) + "\n"


async def issues_before_window(ctx: Any, repo: str, days: int) -> tuple[int, Any]:
    """How many of `repo`'s stored issues were opened before the last `days` days, and when
    the newest of them was (None when there is none): what "0 of 0 issues" leaves out."""
    async with ctx.sessionmaker() as session:
        count, newest = (await session.execute(select(func.count(Thread.id), func.max(Thread.created_at)).where(
            func.lower(Thread.repo) == canonical_repo(repo).lower(), Thread.kind == "issue",
            Thread.created_at < utcnow() - timedelta(days=days)))).one()
    return int(count), newest


def days_text(days: int) -> str:
    """"1 day", "30 days"."""
    return f"{days} day" if days == 1 else f"{days} days"


def window_hint(repo: str, days: int, older: int, newest: Any) -> tuple[str, int | None]:
    """What the command and the page say under "0 of 0 issues": the stored issues the window
    left out, the newest's age (a sentence each says its way to widen after), and the days
    that reach the newest of them: None when there is none older, or it is beyond MAX_DAYS
    (then the sentence says so, and is whole)."""
    from math import ceil

    if older == 0:
        return f"No issue of {repo} is stored (only pull requests or discussions).", None
    issues = "1 stored issue" if older == 1 else f"{older} stored issues"
    opened = "was" if older == 1 else "were"
    reach = ceil((utcnow() - newest).total_seconds() / 86400)  # days back to the newest one
    sentence = (f"{issues} of {repo} {opened} opened before the last {days_text(days)}, the "
                f"newest {days_text(reach)} ago")
    if reach > MAX_DAYS:
        return f"{sentence}: beyond the longest window ({days_text(MAX_DAYS)}).", None
    return sentence, reach


async def older_issues(ctx: Any, repo: str, days: int) -> tuple[str, int | None]:
    """`window_hint` of `repo`'s stored issues opened before the last `days` days."""
    return window_hint(repo, days, *await issues_before_window(ctx, repo, days))


async def any_thread_stored(ctx: Any, repo: str) -> bool:
    """Whether any thread of `repo` (any name GitHub redirects to it) is stored: the preview
    reads stored issues only, so without one "0 of 0 issues" would be said about nothing."""
    async with ctx.sessionmaker() as session:
        return await session.scalar(select(Thread.id).where(
            func.lower(Thread.repo) == canonical_repo(repo).lower()).limit(1)) is not None


# How the page and the command say the repository's file could not be used (then its error).
# (what holds of such a file: ConfigError's opt-outs; user79: the budget and bar were left out)
CONFIG_PROBLEM = (".github/rltracker.yml could not be used, so the defaults apply (except what "
                  "it turns off: a failure_comments: false, rule_summaries: false or dry_run: "
                  "true, a lower daily_budget or a higher min_confidence it states)")
MAX_DAYS = 90  # the longest window the page and the command preview


def preview_command(args: argparse.Namespace) -> int:
    from bot.config import Settings, public_url_set
    from bot.context import AppContext

    async def main() -> int:
        ctx = AppContext.create(Settings.from_env(dry_run=True))
        try:
            if not await any_thread_stored(ctx, args.repo):
                # "0 of 0 issues would get a comment" read as "nothing to say" when nothing
                # was looked at: the preview reads stored issues only.
                repo = canonical_repo(args.repo)
                print(f"rltracker preview: no thread of {repo} is stored yet, so there is nothing "
                      f"to preview; fetch them first: rltracker sync --repo {repo}", file=sys.stderr)
                return 1
            if public_url_set():
                preview = await run_preview(ctx, args.repo, args.days)
            else:
                # Stored, its links to this shell's default address would be listed by
                # /api/actions as the preview's: printed here, they are read where they work.
                preview = await compute_preview(ctx, args.repo, args.days)
                if preview["comments"]:  # with no would-be comment there was nothing to store
                    print(f"rltracker preview: not stored: its links would lead to "
                          f"{ctx.settings.public_url}, RLTRACKER_PUBLIC_URL being unset; set it "
                          "to where the tracker is reachable (https://...) to store the preview "
                          "for /api/actions", file=sys.stderr)
            hint = None
            if preview["total"] == 0:  # "0 of 0" alone reads as "nothing stored"
                hint, reach = await older_issues(ctx, preview["repo"], args.days)
                if reach is not None:
                    hint += f": rltracker preview {preview['repo']} --days {reach} includes it."
        finally:
            await ctx.close()
        print(render_markdown(preview), end="")
        if hint:
            print(f"\n{hint}")
        return 0

    return asyncio.run(main())


__all__ = [
    "compute_preview", "install_preview", "install_problems", "preview_command", "render_markdown",
    "preview_on_install", "run_preview", "start_install_preview", "sync_recent_issues",
    "wait_background",
]
