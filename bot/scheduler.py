"""The nightly job, on APScheduler 3 (AsyncIOScheduler in the `serve` process).

The job (cron `settings.nightly_cron`, default 03:00 UTC) runs, each step on its own so one
failing step does not stop the others: GraphQL sync, re-analysis of threads whose analysis is
missing or from an older analyzer version (one thread at a time, stored only over the version
it read; a thread that fails is recorded and the rest go on: step_reanalyse), recovery of missed deliveries, reception of the
app's comments, the installed repositories' settings files read again (one the app cannot use
is then on /repos/ and in the report: it gets no push events), contribution rules refresh, optional arXiv listings, the study (bot.site.study) and the report
(which says when the night's sync failed). Each run
is a JobRun row (start, end, outcome, counts per step).

Several replicas on PostgreSQL: the run holds `pg_try_advisory_lock(NIGHTLY_LOCK)` on its own
connection for its whole length; a replica that does not get the lock records a `skipped`
run and leaves, and so does one that gets it after another replica's run for the same
scheduled time (its clock or loop a little late) finished. On SQLite an asyncio lock stops
overlapping runs within a process and an exclusive `flock` on `<database>.nightly-lock` stops a
second process on the same file (the system releases it when the process dies).

A run missed while the service was down: APScheduler's misfire grace covers short pauses of
a running process; at start, a one-off job compares the last cron fire time with the last
run and runs the job at once when that fire time has no run (a fresh installation, with no
run at all, waits for its first scheduled time). A run cut short by a normal stop (serve's
`stop_scheduler`, Ctrl-C) records itself as "cancelled" as it stops; one a crash left
"running" is marked cancelled at the next start of a process with the scheduler, under the
run-once lock; either way it counts as missed. A live run renews its heartbeat every minute
(bot.store.jobs.keep_alive): a "running" row whose heartbeat stopped for the lease (10
minutes) was left by a dead process (another replica's crash): it does not count as its
night's run, reads as interrupted, and the next run records it cancelled.

The first start with a token and an empty database does not wait for the night:
`start_first_backfill` runs the sync step at once in the background (JobRun
`first_backfill`, its progress shown on the front page); interrupted, the next start resumes
it from the stored cursors.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import IO, Any

from sqlalchemy import delete, func, select, text

from bot.config import sqlite_path
from bot.github.sync import Progress
from bot.store.db import is_postgres
from bot.store.jobs import FIRST_BACKFILL, RUN_LEASE, alive, dead, keep_alive, record_job_run
from bot.store.models import JobRun
from bot.store.types import utcnow

log = logging.getLogger(__name__)

JOB_NAME = "nightly"
NIGHTLY_LOCK = 0x726C_7472  # "rltr": the advisory lock key of the nightly job
MISFIRE_GRACE = 6 * 3600  # seconds: a run late by less than this still runs
WATCH_EVERY = 15 * 60  # seconds between two looks for a night whose run died (rerun_dead_night)
REANALYSE_BATCH = 200
MAX_ATTEMPTS = 3  # nights a thread whose re-analysis fails is tried, per analyzer version
FAILED_SHOWN = 100  # failed threads a run's counts name (a broken model fails them all)
RUNNING_TASKS = "nightly_tasks"  # ctx.extras: the nightly runs in progress in this process
NIGHT_COUNTS = "nightly_counts"  # ctx.extras: the counts of the run in progress (for the report)
NIGHT_RUN = "nightly_run"  # ctx.extras: the run in progress, its id and night (for the report)
INTERRUPTED = "the process stopped during the run; the next start runs it again"

Step = Callable[[Any], Awaitable[Any]]


class StepStopped(Exception):
    """A step stopped by an error after doing part of its work: `counts` says what it did
    (the run records them beside the error, and the step as failed)."""

    def __init__(self, error: BaseException, counts: dict[str, Any]) -> None:
        super().__init__(str(error))
        self.error = error
        self.counts = counts


# ---------------------------------------------------------------------------- steps
def _can_read_github(ctx: Any) -> bool:
    from bot.site.progress import can_read_github

    return ctx.github is not None and can_read_github(ctx.settings)


async def step_sync(ctx: Any) -> Any:
    if not _can_read_github(ctx):
        return "skipped: no GITHUB_TOKEN or app credentials"
    from functools import partial

    from bot.github.sync import Syncer, SyncError
    from bot.github.visibility import check_visibility
    from bot.pipeline import sync_changed

    # First: a repository made public again while its `publicized` was lost is synced (review59)
    try:
        visibility: Any = await check_visibility(ctx)
    except Exception as exc:  # noqa: BLE001 - the sync runs all the same
        log.exception("nightly: the visibility check failed")
        visibility = {"failed": f"{type(exc).__name__}: {exc}"[:500]}
    # (bot.github.sync.sync; recheck: older comments asked again in a rotation, sync62)
    syncer = Syncer(ctx, None, on_changed=partial(sync_changed, ctx), recheck=True)
    try:
        stats = await syncer.run()
    except SyncError as exc:
        # What it stored, deleted and moved before the stop stays in the run's counts (they
        # said only the error; sched61).
        raise StepStopped(exc, {**syncer.stats.as_dict(), "visibility": visibility}) from exc
    return {**stats.as_dict(), "visibility": visibility}


def _is_newer(version: str | None, current: list[Any]) -> bool:
    """A stored version after this code's (`YYYY.MM.DD-N`, compared as numbers: -45 after -9).
    A version not of the dated form (a hand-written one) counts as older."""
    from analyzers.version import version_key

    return version is not None and version[:1].isdigit() and version_key(version) > current


async def step_reanalyse(ctx: Any) -> Any:
    """Threads never analysed or analysed by an older analyzer version. Findings only: acting
    on old threads is not the nightly job's business (the quiet rules would refuse anyway).

    A newer version is left alone: it was stored by a replica already on the next release (a
    rolling deploy), and this older code must not write its findings back over it. Threads
    are walked once each, in id order, REANALYSE_BATCH ids at a time (only ids and versions
    are held), so the step ends whatever is written meanwhile and its memory stays bounded.
    Each thread is read, analysed and stored on its own, its finding committed at once, and
    stored only if its row still holds the version read (`store_analysis_if`): what a
    webhook or another replica wrote meanwhile is newer than this analysis and is kept.

    A thread whose analysis or its storing raises is recorded (AnalysisFailure; the run's
    counts name it) and the others go on; it is tried again the next nights, and left out
    after MAX_ATTEMPTS under this version. Interrupted, the next run goes on where it stopped:
    the threads done are of this version and no longer selected."""
    from sqlalchemy import exists

    from analyzers.version import ANALYZER_VERSION, version_key
    from bot.analysis import paper_pool
    from bot.store.models import Analysis, AnalysisFailure, Thread

    current = version_key(ANALYZER_VERSION)
    done = newer = changed = 0
    failed: list[dict[str, Any]] = []
    after = 0
    given_up = exists().where(AnalysisFailure.thread_id == Thread.id,
                              AnalysisFailure.analyzer_version == ANALYZER_VERSION,
                              AnalysisFailure.attempts >= MAX_ATTEMPTS)
    stale = (Analysis.id.is_(None)) | (Analysis.analyzer_version != ANALYZER_VERSION)
    while True:
        async with ctx.sessionmaker() as session:
            rows = (await session.execute(
                select(Thread.id, Analysis.analyzer_version)
                .outerjoin(Analysis, Analysis.thread_id == Thread.id)
                .where(Thread.id > after, stale, ~given_up)
                .order_by(Thread.id).limit(REANALYSE_BATCH))).all()
            # The paper pool once a batch (its key is a count of the Paper table: asked for
            # each thread, a scan of 100,000 papers per thread on PostgreSQL).
            pool = await paper_pool(session, ctx.extras) if rows else None
        if not rows:
            break
        after = rows[-1][0]
        for thread_id, version in rows:
            if _is_newer(version, current):
                newer += 1
                continue
            try:
                written = await _reanalyse_one(ctx, thread_id, pool)
            except Exception as exc:  # noqa: BLE001 - this thread fails alone; the rest go on
                log.warning("nightly: re-analysis of thread %s failed", thread_id, exc_info=True)
                failure = await _record_failure(ctx, thread_id, exc)
                if failure is not None:  # (None: the thread was deleted meanwhile)
                    failed.append(failure)
                continue
            if written:
                done += 1
            else:
                changed += 1
    async with ctx.sessionmaker() as session:
        left_out = await session.scalar(
            select(func.count()).select_from(Thread)
            .outerjoin(Analysis, Analysis.thread_id == Thread.id).where(stale, given_up))
    # (the run's counts keep the first FAILED_SHOWN: all of them are in analysis_failures)
    return {"reanalysed": done, "version": ANALYZER_VERSION, "newer_kept": newer,
            "changed_meanwhile": changed, "failed": failed[:FAILED_SHOWN],
            "failed_total": len(failed), "given_up": int(left_out or 0)}


async def _reanalyse_one(ctx: Any, thread_id: int, pool: Any) -> bool:
    """Read, analyse (with the paper index `pool`) and store one thread; False when there was
    nothing to do by then (the thread deleted, or its analysis stored meanwhile by another
    writer)."""
    from analyzers.version import ANALYZER_VERSION, version_key
    from bot.analysis import run_analysis
    from bot.pipeline import store_analysis_if
    from bot.store.models import Analysis, AnalysisFailure, Thread
    from bot.store.threads import load_comments, thread_record

    async with ctx.sessionmaker() as session:
        thread = await session.get(Thread, thread_id)
        if thread is None:
            return False
        version = await session.scalar(select(Analysis.analyzer_version)
                                       .where(Analysis.thread_id == thread_id))
        if version == ANALYZER_VERSION or _is_newer(version, version_key(ANALYZER_VERSION)):
            return False
        record = thread_record(thread, await load_comments(session, thread))
        await session.commit()  # no transaction held across the analysis
        result = await run_analysis(record, pool)
        # On SQLite the write lock is held from this write to the commit, and /webhook's
        # group commit waits for it: one thread's write at a time, committed at once.
        written = await store_analysis_if(session, thread_id, version, result)
        if written:
            await session.execute(delete(AnalysisFailure).where(AnalysisFailure.thread_id == thread_id))
        await session.commit()
        return written


def _error_line(exc: BaseException) -> str:
    """The error in one short line (a database error's first line, not its SQL and values)."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:300]


async def _record_failure(ctx: Any, thread_id: int, exc: BaseException) -> dict[str, Any] | None:
    """Count the thread's failed night under this analyzer version (a new version starts the
    count again); what the run's counts say of it (None: the thread was deleted meanwhile, its
    write failing for that reason: nothing to try again)."""
    from analyzers.version import ANALYZER_VERSION
    from bot.store.models import AnalysisFailure, Thread

    error = _error_line(exc)
    async with ctx.sessionmaker() as session:
        thread = await session.get(Thread, thread_id)
        if thread is None:
            return None
        row = await session.get(AnalysisFailure, thread_id)
        if row is None:
            row = AnalysisFailure(thread_id=thread_id, analyzer_version=ANALYZER_VERSION, attempts=0)
            session.add(row)
        elif row.analyzer_version != ANALYZER_VERSION:
            row.analyzer_version, row.attempts = ANALYZER_VERSION, 0
        row.attempts += 1
        row.error, row.failed_at = error, utcnow()
        key = f"{thread.repo}#{thread.number}"
        attempts = row.attempts
        await session.commit()
    return {"thread": key, "error": error, "attempts": attempts}


async def step_recovery(ctx: Any) -> Any:
    from bot.github.recovery import recover_deliveries

    return (await recover_deliveries(ctx)).as_dict()


async def step_reception(ctx: Any) -> Any:
    if not _can_read_github(ctx):
        return "skipped: no GITHUB_TOKEN or app credentials"
    from bot.speaking.reception import refresh_reception

    return (await refresh_reception(ctx)).as_dict()


async def step_settings(ctx: Any) -> Any:
    from bot.speaking.contribution import REST_RESERVE
    from bot.speaking.repo_config import refresh_installed

    return await refresh_installed(ctx, REST_RESERVE)


async def step_rules(ctx: Any) -> Any:
    if ctx.github is None:
        return "skipped: no GitHub client"
    from bot.speaking.contribution import refresh_all

    return await refresh_all(ctx)


async def step_papers(ctx: Any) -> Any:
    if not ctx.settings.fetch_papers:
        return "skipped: RLTRACKER_FETCH_PAPERS is not on"
    from bot.github.papers import fetch_new_papers

    return (await fetch_new_papers(ctx)).as_dict()


async def step_study(ctx: Any) -> Any:
    from bot.site.study import refresh_study

    return await refresh_study(ctx)


async def step_report(ctx: Any) -> Any:
    """The report of what is stored, saying when the night's sync failed or GitHub refused it
    for some repositories (its changes are then those of what was stored before)."""
    from bot.site.report import run_report

    night = ctx.extras.get(NIGHT_COUNTS)
    run = ctx.extras.get(NIGHT_RUN) or {}
    # Dated by the run's night (its scheduled time, else its start), not the clock when the
    # report is built: a night that ran past midnight UTC, or a catch-up run the next day,
    # took the next day's date, and the next night's report replaced it.
    return await run_report(ctx, run.get("night"),
                            sync=_sync_problem(night.get("sync")) if night is not None else None,
                            run_id=run.get("id"))


def _sync_problem(sync: Any) -> dict[str, Any] | None:
    """What the report says of the night's sync: None when it ran (or was not configured:
    no token), else whether it failed whole and which repositories GitHub refused."""
    if not isinstance(sync, dict):
        return None
    failed = "error" in sync
    refused = _refused_repos(sync.get("failed_streams"))
    return {"failed": failed, "refused": refused} if failed or refused else None


STEPS: list[tuple[str, Step]] = [
    ("sync", step_sync),
    ("reanalyse", step_reanalyse),
    ("recovery", step_recovery),
    ("reception", step_reception),
    # before the rules refresh, which spends an installation's REST budget down to its reserve
    ("settings", step_settings),
    ("rules", step_rules),
    ("papers", step_papers),
    ("study", step_study),  # after sync and re-analysis; before the report, which lists its new landings
    ("report", step_report),  # last: it reports what the steps before brought in
]


# ---------------------------------------------------------------------------- locking
LOCK_HOLDER = "nightly_lock_holder"  # ctx.extras: what holds the run-once lock in this process


def _lock_sqlite_file(database_url: str) -> IO[bytes] | None | bool:
    """SQLite: the run-once lock across processes (ops77), an exclusive advisory lock on
    `<database>.nightly-lock` beside the file. The asyncio lock held only within a process: a
    second `serve` on the same file (a container started before the old one stopped) ran the
    night again, and its start marked the first one's live run cancelled. The system lets the
    lock go when its process dies, as PostgreSQL does a session's advisory lock. The open
    file (hold it; closing it releases the lock), False when another process holds it, None
    for an in-memory database (one process)."""
    import fcntl

    path = sqlite_path(database_url)
    if path is None:
        return None
    handle = open(f"{path}.nightly-lock", "ab")  # noqa: SIM115 - held open while the lock is
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return False
    return handle


class _Lock:
    """The run-once lock: a PostgreSQL advisory lock, or on SQLite an asyncio lock and a file lock.

    `holder` says what takes it ("the nightly run", "the first backfill"): while this
    process holds it, ctx.extras[LOCK_HOLDER] says what does, so a run that does not get it
    can say what holds it (`held_by`) instead of "another replica" when it is this process."""

    def __init__(self, ctx: Any, holder: str = "the nightly run") -> None:
        self.ctx = ctx
        self.holder = holder
        self.conn: Any = None
        self.local: asyncio.Lock | None = None
        self.file: IO[bytes] | None = None  # SQLite: the lock file held (_lock_sqlite_file)

    def held_by(self) -> str:
        """What holds the lock this did not get (said after a failed `acquire`)."""
        mine = self.ctx.extras.get(LOCK_HOLDER)
        if mine is not None:
            return f"{mine} of this process holds the lock"
        return "another replica holds the lock"

    async def acquire(self) -> bool:
        got = await self._acquire()
        if got:
            self.ctx.extras[LOCK_HOLDER] = self.holder
        return got

    async def _acquire(self) -> bool:
        if is_postgres(self.ctx.settings.database_url):
            self.conn = await self.ctx.engine.connect()
            got = await self.conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": NIGHTLY_LOCK})
            await self.conn.commit()  # the session-level lock outlives the transaction
            if not got:
                await self.conn.close()
                self.conn = None
            return bool(got)
        self.local = self.ctx.extras.setdefault("nightly_lock", asyncio.Lock())
        if self.local.locked():
            return False
        await self.local.acquire()
        held = _lock_sqlite_file(self.ctx.settings.database_url)
        if held is False:  # another process's
            self.local.release()
            return False
        self.file = held
        return True

    async def release(self) -> None:
        if self.conn is not None or (self.local is not None and self.local.locked()):
            self.ctx.extras.pop(LOCK_HOLDER, None)
        await self._release()

    async def _release(self) -> None:
        if self.conn is not None:
            try:
                await self.conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": NIGHTLY_LOCK})
                await self.conn.commit()
            finally:
                await self.conn.close()
                self.conn = None
        elif self.local is not None and self.local.locked():
            if self.file is not None:
                self.file.close()  # closing the file lets its lock go
            self.file = None
            self.local.release()


# ---------------------------------------------------------------------------- the job



async def nightly_job(ctx: Any, *, steps: list[tuple[str, Step]] | None = None,
                      fire_time: datetime | None = None) -> dict[str, Any]:
    """One nightly run (or a `skipped` record when another replica holds the lock).

    `fire_time`: the scheduled time this run stands for (the scheduler's and the catch-up's
    runs). The lock only keeps runs from overlapping: a replica whose scheduler fires a
    little after another's short run finished would run the night again. Under the lock, a
    run already started at or after `fire_time` makes this one a `skipped` record."""
    lock = _Lock(ctx)
    if not await lock.acquire():
        reason = lock.held_by()  # (this process's first backfill: not another replica)
        log.info("nightly: not run: %s", reason)
        now = utcnow()
        await record_job_run(ctx, JOB_NAME, None, started_at=now, finished_at=now, outcome="skipped",
                             counts={"reason": reason})
        return {"outcome": "skipped"}
    try:
        await _close_dead_runs(ctx)
        if fire_time is not None and await _ran_since(ctx, fire_time):
            log.info("nightly: the run scheduled at %s was done already", fire_time.isoformat())
            now = utcnow()
            await record_job_run(ctx, JOB_NAME, None, started_at=now, finished_at=now, outcome="skipped",
                                 counts={"reason": f"the run scheduled at {fire_time.isoformat()} "
                                                   "was done already (another replica)"})
            return {"outcome": "skipped"}
        started = utcnow()
        run_id = await record_job_run(ctx, JOB_NAME, None, started_at=started, outcome="running", counts={})
        counts: dict[str, Any] = {}
        errors: list[str] = []
        running: set[asyncio.Task[Any]] = ctx.extras.setdefault(RUNNING_TASKS, set())
        task = asyncio.current_task()
        if task is not None:
            running.add(task)
        ctx.extras[NIGHT_COUNTS] = counts
        ctx.extras[NIGHT_RUN] = {"id": run_id, "night": (fire_time or started).astimezone(UTC).date()}
        try:
            async with keep_alive(ctx, run_id):  # a run whose heartbeat stops reads interrupted
                for name, step in steps or STEPS:
                    try:
                        counts[name] = await step(ctx)
                    except Exception as exc:  # noqa: BLE001 - one failing step must not stop the others
                        log.exception("nightly: step %s failed", name)
                        # a step stopped after part of its work: what it did, then the error
                        stopped = exc if isinstance(exc, StepStopped) else None
                        error = stopped.error if stopped is not None else exc
                        counts[name] = {**(stopped.counts if stopped is not None else {}),
                                        "error": f"{type(error).__name__}: {error}"[:500]}
                        errors.append(name)
        except asyncio.CancelledError:
            # A normal stop (serve's scheduler shut down, Ctrl-C): the run is recorded as
            # interrupted now, not left "running" until a process with the scheduler starts
            # again (pages and metrics showed a run in progress that was not). Cancelled, it
            # counts as missed: the next start runs the night again (catch_up).
            log.warning("nightly: stopped during the run (after %s)", ", ".join(counts) or "no step")
            await asyncio.shield(record_job_run(
                ctx, JOB_NAME, run_id, finished_at=utcnow(), outcome="cancelled",
                counts=_jsonable(counts), error=INTERRUPTED))
            raise
        finally:
            ctx.extras.pop(NIGHT_COUNTS, None)
            ctx.extras.pop(NIGHT_RUN, None)
            if task is not None:
                running.discard(task)
        problems = [f"steps failed: {', '.join(errors)}"] if errors else []
        # Repositories GitHub refused to the sync (no token for them, an installation gone)
        # were not synced tonight: the run says which instead of "ok".
        sync_counts = counts.get("sync")
        refused = _refused_repos(sync_counts.get("failed_streams") if isinstance(sync_counts, dict) else None)
        if refused:
            problems.append(f"GitHub refused the sync of {', '.join(refused)}")
        # Threads the sync left unread, unstored, unanalysed or unchecked (`rltracker sync`
        # exits 2 for them): the run said "ok" and named them nowhere.
        unsynced = _unsynced(sync_counts)
        if unsynced:
            problems.append(unsynced)
        # The visibility check before the sync could not list an installation (or raised):
        # a repository of it made private while its event was lost stays published until a
        # night lists it. The night said "ok" (sync62).
        unlisted = _unlisted_installations(sync_counts)
        if unlisted:
            problems.append(unlisted)
        # Repositories whose contribution rules were neither read nor kept from before
        # (bot.speaking.contribution.refresh_all's `failed`): the night said "ok" (sched61).
        rules = counts.get("rules")
        rules_failed = int(rules.get("failed") or 0) if isinstance(rules, dict) else 0
        if rules_failed:
            problems.append(f"the contribution rules of {rules_failed} repository(ies) could "
                            "not be refreshed (see the log)")
        # Repositories whose settings file could not be read tonight (GitHub failed): what
        # was read before stays on their rows (bot.speaking.repo_config.refresh_installed).
        settings = counts.get("settings")
        settings_failed = int(settings.get("failed") or 0) if isinstance(settings, dict) else 0
        if settings_failed:
            problems.append(f"the settings files of {settings_failed} repository(ies) could not "
                            "be read (see the log)")
        # Deliveries the inbox never got whose redelivery GitHub refused (the POST failed):
        # the night said "ok"; they are asked again the next nights while GitHub keeps them.
        recovery = counts.get("recovery")
        unrecovered = int(recovery.get("errors") or 0) if isinstance(recovery, dict) else 0
        if unrecovered:
            problems.append(f"the redelivery of {unrecovered} missed delivery(ies) failed (see "
                            "the log; asked again the next nights while GitHub keeps them)")
        # The report was built and stored but not posted where RLTRACKER_REPORT_ISSUE says
        # (the run said "ok"): the reason is on its action, `rltracker report` posts it again.
        report = counts.get("report")
        unposted = isinstance(report, dict) and report.get("posted") == "failed"
        if unposted:
            problems.append(f"the report of {report.get('date')} could not be posted on "
                            f"{ctx.settings.report_issue}: {report.get('error')}")
        # Threads whose re-analysis failed (recorded; tried again the next nights).
        reanalysed = counts.get("reanalyse")
        unanalysed = [f["thread"] for f in reanalysed.get("failed") or ()] if isinstance(reanalysed, dict) else []
        if unanalysed:
            total = max(len(unanalysed), int(reanalysed.get("failed_total") or 0))
            shown = ", ".join(unanalysed[:10]) + (f" and {total - 10} more" if total > 10 else "")
            problems.append(f"the re-analysis of {total} thread(s) failed: {shown}")
        outcome = ("failed" if errors else "partial" if (refused or unposted or unanalysed
                                                         or unsynced or rules_failed
                                                         or settings_failed
                                                         or unrecovered or unlisted)
                   else "ok")
        await record_job_run(ctx, JOB_NAME, run_id, finished_at=utcnow(), outcome=outcome, counts=_jsonable(counts),
                      error="; ".join(problems) or None)
        log.info("nightly: %s %s", outcome, counts)
        return {"outcome": outcome, "counts": counts, "run_id": run_id}
    finally:
        await lock.release()


def _unlisted_installations(sync_counts: Any) -> str | None:
    """What a run says of the installations its visibility check could not list, or None."""
    visibility = sync_counts.get("visibility") if isinstance(sync_counts, dict) else None
    if not isinstance(visibility, dict):
        return None  # skipped (no app credentials), or the sync step did not run
    failed = visibility.get("failed")
    if isinstance(failed, str):  # the check itself raised
        return f"the visibility check failed ({failed[:200]})"
    if failed:
        return (f"the visibility check could not list installation(s) "
                f"{', '.join(str(i) for i in failed)}: their repositories made private are "
                "found at a later night")
    return None


def _unsynced(sync_counts: Any) -> str | None:
    """What a run says of the threads its sync left unsynced (`failed_threads`), or None."""
    unsynced = [str(f.get("thread")) for f in (sync_counts.get("failed_threads") or ())
                if isinstance(f, dict)] if isinstance(sync_counts, dict) else []
    if not unsynced:
        return None
    # (the counts keep the first entries and the full count, `failed_threads_total`)
    total = max(len(unsynced), int(sync_counts.get("failed_threads_total") or 0))
    shown = ", ".join(unsynced[:10]) + (f" and {total - 10} more" if total > 10 else "")
    return f"the sync left {total} thread(s) unsynced: {shown}"


def _refused_repos(failed_streams: Any) -> list[str]:
    """The repositories of the sync's failed streams ("owner/name:kind")."""
    return sorted({str(name).rpartition(":")[0] for name in failed_streams or ()})


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


# ---------------------------------------------------------------------------- first run
class _BackfillProgress(Progress):
    """The sync's progress (threads written of the repositories' total) copied into the
    backfill's JobRun row, at most once a second, for the front page to show."""

    def __init__(self, ctx: Any, run_id: int) -> None:
        super().__init__(enabled=False)
        self.ctx = ctx
        self.run_id = run_id
        self.counts: dict[str, Any] = {}
        self._writing: asyncio.Task[Any] | None = None
        self._last = 0.0

    def update(self, done: int, total: int | None, stats: Any) -> None:
        self.counts = {"threads": done, "total": total, "requests": stats.requests}
        now = asyncio.get_running_loop().time()
        if (self._writing is None or self._writing.done()) and now - self._last >= 1.0:
            self._last = now
            self._writing = asyncio.create_task(
                record_job_run(self.ctx, FIRST_BACKFILL, self.run_id, counts=dict(self.counts)))

    async def written(self) -> None:
        """Wait for a progress write in flight (so it cannot overwrite the final counts)."""
        if self._writing is not None:
            await asyncio.gather(self._writing, return_exceptions=True)


async def needs_first_backfill(ctx: Any) -> bool:
    """With a token or the app's credentials: the database holds no thread yet, or the last
    first backfill did not finish (the process stopped; the stored cursors resume it)."""
    from bot.store.models import SyncCursor, Thread

    if not _can_read_github(ctx):
        return False
    async with ctx.sessionmaker() as session:
        if not await session.scalar(select(Thread.id).limit(1)):
            return True
        last = await session.scalar(select(JobRun.outcome).where(JobRun.name == FIRST_BACKFILL)
                                    .order_by(JobRun.started_at.desc(), JobRun.id.desc()).limit(1))
        unfinished = await session.scalar(select(func.count()).select_from(SyncCursor)
                                          .where(SyncCursor.full_done.is_(False)))
    return last is not None and last != "ok" and bool(unfinished)


async def first_backfill(ctx: Any) -> dict[str, Any]:
    """The nightly job's sync step as the first backfill of the tracked repositories, recorded
    as a JobRun `first_backfill` (running, then ok / partial / failed / cancelled) with its
    progress.
    Runs under the nightly job's lock, so the two never sync at the same time."""
    lock = _Lock(ctx, "the first backfill")
    if not await lock.acquire():
        log.info("first backfill: the nightly job is running; it syncs instead")
        return {"outcome": "skipped"}
    run_id: int | None = None
    progress: _BackfillProgress | None = None
    try:
        async with ctx.sessionmaker() as session:  # a run left "running" by a stopped process
            for row in await session.scalars(select(JobRun).where(
                    JobRun.name == FIRST_BACKFILL, JobRun.outcome == "running")):
                row.outcome, row.finished_at, row.error = "cancelled", utcnow(), "the process stopped"
            await session.commit()
        run_id = await record_job_run(ctx, FIRST_BACKFILL, None, started_at=utcnow(),
                                      outcome="running", counts={})
        progress = _BackfillProgress(ctx, run_id)
        from functools import partial

        from bot.github.sync import sync
        from bot.pipeline import sync_changed

        log.info("first backfill: started")
        async with keep_alive(ctx, run_id):  # a backfill whose heartbeat stops reads interrupted
            stats = await sync(ctx, on_changed=partial(sync_changed, ctx), progress=progress)
        await progress.written()
        counts = _jsonable(dict(stats.as_dict(), total=progress.counts.get("total")))
        # Repositories GitHub did not let it read (no token for them, or gone) are not
        # backfilled: the front page says so, and the next start tries them again.
        unread = _refused_repos(stats.failed_streams)
        # Threads it left unsynced: "partial" and named, as the nightly run says of the same
        # sync (it said "ok"; sched61). The nightly sync reads them again when next updated.
        unsynced = _unsynced(counts)
        outcome = "failed" if unread else "partial" if unsynced else "ok"
        problems = []
        if unread:
            problems.append(f"GitHub did not let this service read {', '.join(unread)}"
                            + ("" if ctx.settings.token else
                               " (with app credentials only, the repositories the app is not"
                               " installed on need GITHUB_TOKEN)"))
        if unsynced:
            problems.append(unsynced)
        error = "; ".join(problems) or None
        await record_job_run(ctx, FIRST_BACKFILL, run_id, finished_at=utcnow(), outcome=outcome,
                             counts=counts, error=error)
        log.info("first backfill: %s %s", outcome, counts)
        return {"outcome": outcome, "counts": counts}
    except asyncio.CancelledError:
        if progress is not None:
            await progress.written()
        if run_id is not None:
            await record_job_run(ctx, FIRST_BACKFILL, run_id, finished_at=utcnow(),
                                 outcome="cancelled", error="stopped; the next start resumes it")
        raise
    except Exception as exc:  # noqa: BLE001 - recorded; the next start or the nightly job resumes
        log.exception("first backfill failed")
        if progress is not None:
            await progress.written()
        if run_id is not None:
            await record_job_run(ctx, FIRST_BACKFILL, run_id, finished_at=utcnow(), outcome="failed",
                                 error=f"{type(exc).__name__}: {exc}"[:500])
        return {"outcome": "failed"}
    finally:
        await lock.release()


async def start_first_backfill(ctx: Any) -> asyncio.Task[Any] | None:
    """`rltracker serve`'s first start: the backfill as a background task when it is needed."""
    if not await needs_first_backfill(ctx):
        return None
    return asyncio.create_task(first_backfill(ctx), name="first-backfill")


# ---------------------------------------------------------------------------- schedule
def nightly_trigger(ctx: Any) -> Any:
    from bot.config import crontab_trigger

    return crontab_trigger(ctx.settings.nightly_cron, timezone=UTC)


# Days looked back for the last fire time, widened in turn: a daily or weekly schedule is
# found in the first window (its fires walked one by one, few), a monthly or yearly one
# (RLTRACKER_NIGHTLY_CRON `0 3 1 * *`) in a wider one, where it fires once or twice; looking
# back 8 days only, it had "no" last fire most of the month and a missed run was never caught up.
LOOK_BACK_DAYS = (8, 64, 400)


def last_fire_time(trigger: Any, now: datetime) -> datetime | None:
    """The latest time at or before `now` the trigger fired (looking back up to 400 days)."""
    for days in LOOK_BACK_DAYS:
        fire = trigger.get_next_fire_time(None, now - timedelta(days=days))
        last = None
        while fire is not None and fire <= now:
            last = fire
            fire = trigger.get_next_fire_time(fire, fire + timedelta(seconds=1))
        if last is not None:
            return last
    return None


_COUNTED = ("ok", "partial", "failed", "running")  # outcomes of a run that stands for its night


async def _ran_since(ctx: Any, fire_time: datetime) -> bool:
    """Whether a nightly run started at or after `fire_time` (a run whose process died, its
    heartbeat stopped, does not count)."""
    async with ctx.sessionmaker() as session:
        return await session.scalar(
            select(JobRun.id).where(JobRun.name == JOB_NAME, JobRun.outcome.in_(_COUNTED),
                                    JobRun.started_at >= fire_time, alive()).limit(1)) is not None


async def _close_dead_runs(ctx: Any) -> int:
    """Under the run-once lock: nightly runs whose process died (heartbeat stopped past the
    lease) are recorded cancelled, and their night counts as missed. A replica that does not
    restart used to keep such a row "running" for good."""
    async with ctx.sessionmaker() as session:
        rows = list(await session.scalars(select(JobRun).where(JobRun.name == JOB_NAME, dead())))
        for row in rows:
            row.outcome, row.finished_at = "cancelled", utcnow()
            row.error = "the process running it stopped (its heartbeat ended)"
        await session.commit()
    return len(rows)


async def scheduled_nightly(ctx: Any) -> dict[str, Any]:
    """What the scheduler runs: the nightly job for the scheduled time that just passed."""
    return await nightly_job(ctx, fire_time=last_fire_time(nightly_trigger(ctx), utcnow()))


async def missed_run(ctx: Any, now: datetime | None = None) -> bool:
    """True when the last scheduled time has no run that started after it.

    Only for a service that ran the job before (one run started, if only cut short): a fresh
    installation (no run recorded) waits for its first scheduled time instead of starting a
    sync the moment it boots."""
    now = now or utcnow()
    fire = last_fire_time(nightly_trigger(ctx), now)
    if fire is None:
        return False
    async with ctx.sessionmaker() as session:
        counted = select(JobRun.started_at).where(JobRun.name == JOB_NAME,
                                                  JobRun.outcome.in_(_COUNTED))
        # never ran: no night started (a night cut short, `cancelled`, started: its service
        # is not a fresh one, and that night was not caught up; sched61)
        started = select(JobRun.id).where(JobRun.name == JOB_NAME,
                                          JobRun.outcome.in_((*_COUNTED, "cancelled")))
        if await session.scalar(started.limit(1)) is None:
            return False
        # the latest run that stands for its night (one whose process died does not)
        last = await session.scalar(
            counted.where(alive(now)).order_by(JobRun.started_at.desc()).limit(1))
    return last is None or last < fire


async def rerun_dead_night(ctx: Any, now: datetime | None = None) -> dict[str, Any] | None:
    """Every WATCH_EVERY while the process runs: the last scheduled time's run died with its
    process (another replica's crash: its heartbeat stopped) and no other took its place,
    so the night is run now, as a start's catch-up would. Within the lease of the fire time
    it does nothing (the scheduled run may be starting)."""
    now = now or utcnow()
    fire = last_fire_time(nightly_trigger(ctx), now)
    if fire is None or fire > now - RUN_LEASE or not await missed_run(ctx, now):
        return None
    if ctx.extras.get(LOCK_HOLDER) is not None:
        # This process's own first backfill (or a night run past the next scheduled time)
        # holds the lock: the next look runs the night once it is free. A `skipped` run was
        # recorded at every look, for hours (sched61).
        log.info("nightly: the run of %s waits for %s", fire.isoformat(), ctx.extras[LOCK_HOLDER])
        return None
    if await _live_run(ctx, now):
        # Another replica's run (its heartbeat live) holds the lock, past the next night's
        # time: the watch of every other replica recorded a `skipped` run at every look while
        # it lasted. It looks again at its next tick and runs the night once that run ended.
        log.info("nightly: the run of %s waits for another replica's run", fire.isoformat())
        return None
    log.info("nightly: the run of %s stopped with its process; running it now", fire.isoformat())
    return await nightly_job(ctx, fire_time=fire)


async def _live_run(ctx: Any, now: datetime) -> bool:
    """Whether a nightly run is going on (running, its heartbeat within the lease)."""
    async with ctx.sessionmaker() as session:
        return await session.scalar(
            select(JobRun.id).where(JobRun.name == JOB_NAME, JobRun.outcome == "running",
                                    alive(now)).limit(1)) is not None


async def close_interrupted_runs(ctx: Any) -> int:
    """Nightly runs left "running" by a process that stopped mid-run (a deploy or a crash at
    03:05) become "cancelled", so the run they stood for counts as missed and `catch_up`
    runs it again; they used to count as that night's run for good. Only when this process
    gets the run-once lock: a run that holds it elsewhere is not interrupted."""
    lock = _Lock(ctx, "the start's look for interrupted runs")
    if not await lock.acquire():
        return 0
    try:
        async with ctx.sessionmaker() as session:
            rows = list(await session.scalars(select(JobRun).where(
                JobRun.name == JOB_NAME, JobRun.outcome == "running")))
            for row in rows:
                row.outcome, row.finished_at = "cancelled", utcnow()
                row.error = "the process stopped during the run (found at the next start)"
            await session.commit()
        return len(rows)
    finally:
        await lock.release()


async def catch_up(ctx: Any) -> dict[str, Any] | None:
    """At start: run the nightly job now if its last scheduled time passed without a run
    (a run the process stopped in the middle of does not count)."""
    if await close_interrupted_runs(ctx):
        log.info("nightly: a run was interrupted by a stop; it counts as missed")
    now = utcnow()
    if await missed_run(ctx, now):
        log.info("nightly: the last scheduled run was missed; running it now")
        # Replicas started together may all find it missed: under the lock it runs once.
        return await nightly_job(ctx, fire_time=last_fire_time(nightly_trigger(ctx), now))
    return None


async def stop_scheduler(ctx: Any, scheduler: Any) -> None:
    """A normal stop: the scheduler shut down, and a nightly run in progress in this process
    cancelled and waited for, so it is recorded as interrupted ("cancelled") before the
    database is closed. APScheduler's shutdown only cancels its job tasks, without waiting."""
    scheduler.shutdown(wait=False)
    tasks = list(ctx.extras.get(RUNNING_TASKS) or ())
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)


def create_scheduler(ctx: Any) -> Any:
    """The AsyncIOScheduler with the nightly job and a one-off catch-up check (start it in a
    running event loop)."""
    from apscheduler.schedulers.asyncio import AsyncIOScheduler

    scheduler = AsyncIOScheduler(timezone=UTC)
    scheduler.add_job(scheduled_nightly, nightly_trigger(ctx), args=[ctx], id=JOB_NAME,
                      name="nightly sync, analysis and report", misfire_grace_time=MISFIRE_GRACE,
                      coalesce=True, max_instances=1, replace_existing=True)
    scheduler.add_job(catch_up, "date", run_date=utcnow() + timedelta(seconds=5), args=[ctx],
                      id="nightly-catch-up", misfire_grace_time=MISFIRE_GRACE)
    scheduler.add_job(rerun_dead_night, "interval", seconds=WATCH_EVERY, args=[ctx],
                      id="nightly-watch", coalesce=True, max_instances=1,
                      misfire_grace_time=WATCH_EVERY)
    return scheduler
