"""The nightly proposal-status report: what changed since the previous report, per framework.

New landings: merged method pull requests the nightly study step (bot.site.study) first
recorded as detected landings after the previous report was built (all it recorded, for a
first report).

How "what changed" is known: every report stores a snapshot of the state of each tracked
thread (proposal or failure report) in its data; the next report diffs the current state
against the previous report's snapshot. A first report (no previous one) is a baseline: it
gives the standing numbers and lists no changes.

Failure reports are counted by the finding the tracker shows (a person's verdict where there
is one, else the analysis: bot.store.verdicts.shown_failure), those a person set marked; the
report also gives the live agreement figure (bot.store.verdicts.agreement): how often the
analyzer agreed with people's verdicts, per analyzer version.

Nothing written by people on GitHub goes into the Markdown that is posted: it names threads
by `owner/repo#N` links, methods and papers from the catalog and paper pool, and numbers.
The HTML page may show thread titles (escaped by the template).
"""

from __future__ import annotations

import asyncio
import json
import logging
import statistics
import sys
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from analyzers.accounts import is_bot_login
from analyzers.catalog import canonical_repo, framework_id
from analyzers.study import DECLINED_STATES
from bot.analysis import hidden_from_discussion
from bot.site.data import thread_url
from bot.site.study import detected_since
from bot.store.db import dialect_insert
from bot.store.history import reread_since
from bot.store.models import (
    Action,
    Analysis,
    Comment,
    Report,
    Repository,
    Thread,
    Verdict,
    report_summary,
)
from bot.store.privacy import agreement_to_store
from bot.store.types import format_datetime, parse_datetime, utcnow
from bot.store.verdicts import agreement, shown_columns, shown_failure

log = logging.getLogger(__name__)

STATES = ["open_no_reply", "open_replied", "merged", "declined", "redirected", "lapsed",
          "closed_by_author", "closed_other"]
# The chart's colour of each state (WCAG 1.4.11: a bar 3:1 against the page's white, and
# the bars of a row kept apart by a white line, so no two neighbours need 3:1 between
# them). site66: closed_other was #a3a3a3 (2.5:1), open_no_reply #d97706 (3.2), merged
# #16a34a (3.3), closed_by_author #0891b2 (3.7); each now 4.8:1 or more.
STATE_COLOURS = {"open_no_reply": "#b45309", "open_replied": "#2563eb", "merged": "#15803d",
                 "declined": "#dc2626", "redirected": "#9333ea", "lapsed": "#6b7280",
                 "closed_by_author": "#0e7490", "closed_other": "#be185d"}
REPLY_COLOUR = "#64748b"  # the median days to first reply (4.8:1)
CHANGE_KINDS = ["new_proposals", "first_replies", "concerns_raised", "declined_or_redirected",
                "lapsed", "merged"]
COMMENT_LIMIT = 65536  # characters GitHub takes in a comment's body (422 beyond it)
CUT_TO = (20, 5, 0)  # items each list keeps, in turn, when the report does not fit one comment
CHANGE_TITLES = {
    "new_proposals": "New proposals", "first_replies": "First replies",
    "concerns_raised": "Concerns raised", "declined_or_redirected": "Declined or redirected",
    "lapsed": "Lapsed", "merged": "Merged",
}


def _frameworks() -> dict[str, Any]:
    from analyzers.catalog import load_catalog

    return dict(load_catalog().frameworks)


def _days(delta: timedelta) -> float:
    return round(delta.total_seconds() / 86400, 1)


async def _first_replies(session: Any, threads: dict[int, Thread]) -> dict[int, datetime]:
    """Time of the first comment by someone other than the opener (bots excluded, and comments
    GitHub hid as spam, abuse or off-topic: bot.analysis.hidden_from_discussion's one rule)."""
    first: dict[int, datetime] = {}
    ids = list(threads)
    for i in range(0, len(ids), 500):
        rows = await session.execute(
            select(Comment.thread_id, Comment.author, Comment.author_is_bot, Comment.created_at,
                   Comment.minimized_reason)
            .where(Comment.thread_id.in_(ids[i:i + 500])))
        for thread_id, author, is_bot, created, minimized_reason in rows:
            opener = threads[thread_id].author
            if created is None or is_bot_login(author, "Bot" if is_bot else None) or author == opener:
                continue
            if hidden_from_discussion({"minimized_reason": minimized_reason}):
                continue
            if thread_id not in first or created < first[thread_id]:
                first[thread_id] = created
    return first


async def collect_state(ctx: Any, now: datetime) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The snapshot (thread key -> state) and the facts the report shows beside the changes."""
    from analyzers.catalog import load_catalog

    snapshot: dict[str, dict[str, Any]] = {}
    # waits_for_reply: each replied thread's wait unrounded, for the median (not stored)
    extra: dict[str, Any] = {"titles": {}, "waits_for_reply": {}}
    catalog_methods = load_catalog().methods
    async with ctx.sessionmaker() as session:
        shown_is_failure, _ = shown_columns()
        rows = (await session.execute(
            select(Thread, Analysis, Verdict)
            .outerjoin(Analysis, Analysis.thread_id == Thread.id)
            .outerjoin(Verdict, Verdict.thread_id == Thread.id)
            .where((Analysis.is_proposal.is_(True)) | (shown_is_failure.is_(True)))
        )).all()
        threads = {t.id: t for t, _, _ in rows}
        agreed = await agreement(session)
        replies = await _first_replies(session, {i: t for i, t in threads.items()})
        paused = [{"repo": r.full_name, "reason": r.paused_reason or ""}
                  for r in await session.scalars(
                      select(Repository).where(Repository.comments_paused.is_(True),
                                               Repository.private.is_(False))
                      .order_by(Repository.full_name))]
        # Installed repositories whose settings file the app cannot use, as the nightly
        # `settings` step (or a recheck, a comment) last read it: the app gets no push events,
        # so the report is where its operator hears of it (user79).
        settings = [{"repo": r.full_name, "error": r.config_error}
                    for r in await session.scalars(
                        select(Repository).where(Repository.config_error.is_not(None),
                                                 Repository.installation_id.is_not(None),
                                                 Repository.private.is_(False))
                        .order_by(Repository.full_name))]
    for thread, analysis, verdict in rows:
        framework = framework_id(thread.repo)
        if framework is None:
            continue
        key = f"{thread.repo}#{thread.number}"
        result = (analysis.result if analysis is not None else None) or {}
        # the failure finding the tracker shows: a person's verdict, else the analysis
        shown = shown_failure(analysis.is_failure_report if analysis else None,
                              analysis.failure_category if analysis else None, verdict)
        review = result.get("review") or {}
        first_reply = replies.get(thread.id)
        snapshot[key] = {
            "framework": framework,
            "repo": thread.repo,
            "number": thread.number,
            "kind": thread.kind,
            "is_proposal": bool(analysis is not None and analysis.is_proposal),
            "is_failure": shown["is_failure_report"],
            "category": shown["category"],
            "set_by": shown["set_by"],
            "state": (analysis.review_state if analysis else None) or "open_no_reply",
            "replied": bool(review.get("replied_from_other")) or first_reply is not None,
            "concerns": sorted(review.get("concerns") or []),
            # catalog methods only: a paper pool's label for a paper's method is any text
            # (third-party metadata) and has no page here; posted between backticks, one
            # holding a backtick and an @login notified that person
            "methods": [m for m in (analysis.methods if analysis else None) or []
                        if m in catalog_methods],
            "arxiv_ids": list((analysis.arxiv_ids if analysis else None) or []),
            "created_at": format_datetime(thread.created_at),
            # GitHub's time of the latest close (each close sets it anew): a proposal closed
            # again after the previous report read the store was reopened in between
            "closed_at": format_datetime(thread.closed_at),
            "first_reply_days": _days(first_reply - thread.created_at)
            if first_reply and thread.created_at else None,
        }
        if first_reply and thread.created_at:
            extra["waits_for_reply"][key] = first_reply - thread.created_at
        extra["titles"][key] = thread.title or ""
    extra["paused"] = paused
    extra["settings"] = settings
    extra["agreement"] = agreed
    return snapshot, extra


def diff(previous: dict[str, dict[str, Any]] | None, current: dict[str, dict[str, Any]],
         read_at: datetime | None = None,
         reread: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """Changes between two snapshots, per change kind; proposals only. `read_at`: when the
    previous report read the store; a proposal declined (or lapsed) then and now, whose
    latest close (GitHub's `closed_at`) is after it, was reopened and closed again in
    between: it is listed again, marked `again` (docs/report.md). `reread`: the proposals
    whose latest state change since `read_at` the nightly re-analysis stored
    (bot.store.history.reread_since, key -> analyzer version): their state changes are
    marked `reread` with the version, as the analyzer's reading, not anybody's action."""
    changes: dict[str, list[dict[str, Any]]] = {k: [] for k in CHANGE_KINDS}
    if previous is None:
        return changes
    # A thread is the same under its repository's former name (the catalog's): after a
    # rename every proposal of the repository was a new proposal, keyed by the new name.
    by_thread = {_same_thread(v.get("repo") or k.rpartition("#")[0],
                              v.get("number", k.rpartition("#")[2])): v
                 for k, v in previous.items()}
    for key in sorted(current, key=_sort_key):
        now = current[key]
        if not now["is_proposal"]:
            continue
        before = previous.get(key) or by_thread.get(_same_thread(now["repo"], now["number"]))
        item = {"key": key, "framework": now["framework"], "state": now["state"],
                "methods": now["methods"], "arxiv_ids": now["arxiv_ids"]}
        if before is None or not before.get("is_proposal"):
            changes["new_proposals"].append(item)
            before = None
        if now["replied"] and not (before or {}).get("replied") and before is not None:
            changes["first_replies"].append({**item, "days": now["first_reply_days"]})
        new_concerns = sorted(set(now["concerns"]) - set((before or {}).get("concerns") or []))
        if new_concerns and before is not None:
            changes["concerns_raised"].append({**item, "concerns": new_concerns})
        was = (before or {}).get("state")
        # one change, declined or redirected: a decline read again as a redirect (a closing
        # comment edited, the nightly re-analysis) is not declined again
        again = before is not None and _closed_again(now, read_at)
        version = (reread or {}).get(key)
        state_item = item if version is None else {**item, "reread": version}
        if now["state"] in DECLINED_STATES and (was not in DECLINED_STATES or again):
            changes["declined_or_redirected"].append(
                {**state_item, "again": True} if was in DECLINED_STATES else state_item)
        if now["state"] in ("lapsed", "merged") and (
                was != now["state"] or (again and was == "lapsed")):
            changes[now["state"]].append(
                {**state_item, "again": True} if was == now["state"] else state_item)
    return changes


def _closed_again(state: dict[str, Any], read_at: datetime | None) -> bool:
    """Whether the thread's latest close is after `read_at` (the previous report's read)."""
    closed = parse_datetime(state.get("closed_at"))
    return read_at is not None and closed is not None and closed > read_at


def _parsed(value: str) -> datetime:
    parsed = parse_datetime(value)
    assert parsed is not None
    return parsed


def _same_thread(repo: str, number: Any) -> tuple[str, str]:
    """A thread whatever name its repository had: the catalog's current name, any case."""
    return canonical_repo(str(repo)).lower(), str(number)


def _sort_key(key: str) -> tuple[str, int]:
    repo, _, number = key.rpartition("#")
    return repo.lower(), int(number) if number.isdigit() else 0


async def _resumed(session: Any, since: datetime | None, now: datetime) -> list[dict[str, Any]]:
    """The repositories whose pause was lifted since the previous report (the last day for
    the first): who lifted it (`@login` or `operator`, Repository.resumed_by), when, and
    whether the repository is paused again."""
    since = since or now - timedelta(days=1)
    if since.tzinfo is None:
        since = since.replace(tzinfo=UTC)
    rows = await session.scalars(
        select(Repository).where(Repository.resumed_at.is_not(None),
                                 Repository.private.is_(False))
        .order_by(Repository.full_name))
    out = []
    for r in rows:
        at = r.resumed_at if r.resumed_at.tzinfo else r.resumed_at.replace(tzinfo=UTC)
        if since < at <= now:
            out.append({"repo": r.full_name, "by": r.resumed_by or "", "at": format_datetime(at),
                        "paused_again": bool(r.comments_paused)})
    return out


def _read_at(previous: Report | None) -> datetime | None:
    """When the previous report read the store (`generated_at`), else when it was stored."""
    if previous is None:
        return None
    return parse_datetime((previous.data or {}).get("generated_at")) or previous.created_at


def _day_end(day: date) -> datetime:
    return datetime.combine(day, datetime.min.time(), UTC) + timedelta(days=1)


def _window_start(previous: Report | None, opened_to: datetime) -> datetime:
    """Where a report's count of failure reports starts: where the previous report's ended
    (`failures_window`; for a report stored before it was kept, when it was built, or its
    day's end for a day that had ended), so each failure report is counted by one report,
    however late in the night each was built; 24 hours before `opened_to` for a first
    report (or a previous one that says neither)."""
    data = (previous.data or {}) if previous is not None else {}
    end = parse_datetime((data.get("failures_window") or {}).get("to"))
    if end is None and previous is not None and data.get("generated_at"):
        built = parse_datetime(data["generated_at"])
        try:
            end = min(built, _day_end(date.fromisoformat(previous.date))) if built else None
        except ValueError:
            end = built
    if end is None or end > opened_to:
        return opened_to - timedelta(days=1)
    return end


def _counted_before(previous: Report | None, opened_from: datetime
                    ) -> tuple[datetime, set[tuple[str, str]]]:
    """Where the previous report's count of failure reports started, and the threads it
    counted (its snapshot's failure reports opened in its window). A failure report opened
    in that window that it did not count (stored after it was built: a late webhook, a night
    whose sync failed, one opened after the sync read its repository) is counted by the next
    report; it was counted by none. `opened_from` when the previous report says no window."""
    data = (previous.data or {}) if previous is not None else {}
    window = data.get("failures_window") or {}
    start, end = parse_datetime(window.get("from")), parse_datetime(window.get("to"))
    if start is None or end is None or start >= opened_from:
        return opened_from, set()
    counted = set()
    for key, v in (data.get("snapshot") or {}).items():
        created = parse_datetime(v.get("created_at"))
        if v.get("is_failure") and created is not None and start <= created < end:
            counted.add(_same_thread(v.get("repo") or key.rpartition("#")[0],
                                     v.get("number", key.rpartition("#")[2])))
    return start, counted


async def build_report(ctx: Any, day: date | None = None, *,
                       sync: dict[str, Any] | None = None,
                       now: datetime | None = None) -> dict[str, Any]:
    """The report data for `day` (default the day of `now`, UTC), diffed against the previous
    report. `sync`: the nightly job's word on a sync that failed (`failed`: whole; `refused`:
    the repositories GitHub did not let it read), said at the top of the report. `now`: the
    time the report is built at (default the clock): its `generated_at`, the end of its
    failure-report window and of the waits, the resumes it lists; given, the same store gives
    the same report (the waits moved with the clock between two builds)."""
    now = utcnow() if now is None else parse_datetime(now).astimezone(UTC)  # (naive: UTC)
    day = day or now.date()
    snapshot, extra = await collect_state(ctx, now)
    async with ctx.sessionmaker() as session:
        previous = await session.scalar(
            select(Report).where(Report.date < day.isoformat()).order_by(Report.date.desc()).limit(1))
        prev_snapshot = (previous.data or {}).get("snapshot") if previous is not None else None
        prev_date = previous.date if previous is not None else None
        # Both from when the previous report read the store (not when it was stored, minutes
        # later) up to this one's `now`: each night's landings and resumes are its own, and a
        # report built at an earlier time lists none found after it.
        new_landings = await detected_since(session, _read_at(previous), until=now)
        resumed = await _resumed(session, _read_at(previous), now)
        reread = await reread_since(session, _read_at(previous), now)
    changes = diff(prev_snapshot, snapshot, _read_at(previous), reread)
    # Failure reports opened up to the report: the nightly job builds today's at 03:00 UTC
    # (RLTRACKER_NIGHTLY_CRON), and the calendar day counted the three hours since midnight;
    # one opened later that day was in no report. A report of a day that has ended (a night
    # that ran past midnight, tests) counts to that day's end. Waits are counted up to the
    # same moment: to the end of the day, today's report added the 21 hours still to come.
    # They are counted from where the previous report's count ended (24 hours before, for a
    # first report): "the 24 hours up to the report" counted one opened yesterday in
    # yesterday's report built this morning and in today's again, and one opened between a
    # late report and 24 hours before the next one in neither.
    opened_to = min(now, _day_end(day))
    opened_from = _window_start(previous, opened_to)
    late_from, counted_before = _counted_before(previous, opened_from)
    frameworks = _frameworks()
    per_fw: dict[str, Any] = {}
    for fid, fw in frameworks.items():
        mine = {k: v for k, v in snapshot.items() if v["framework"] == fid}
        proposals = {k: v for k, v in mine.items() if v["is_proposal"]}
        by_state = {s: sum(1 for v in proposals.values() if v["state"] == s) for s in STATES}
        waiting = sorted(
            # (0 for one opened after the end of the report's day: it had not waited then)
            ({"key": k, "days": max(0.0, _days(opened_to - _parsed(v["created_at"])))}
             for k, v in proposals.items()
             if v["state"] == "open_no_reply" and not v["replied"] and v["created_at"]),
            key=lambda w: (-w["days"], _sort_key(w["key"])))
        failures: dict[str, list[str]] = defaultdict(list)
        failures_set_by: list[str] = []  # of those, the ones whose kind a person set
        failures_late: list[str] = []  # and those the previous report missed (stored after it)
        for k, v in sorted(mine.items(), key=lambda kv: _sort_key(kv[0])):
            created = parse_datetime(v["created_at"])
            # (or opened in the previous report's window, which did not count it: stored
            # after that report was built)
            late = (created is not None and late_from <= created < opened_from
                    and _same_thread(v["repo"], v["number"]) not in counted_before)
            if v["is_failure"] and created and (opened_from <= created < opened_to or late):
                failures[v["category"] or "other_failure"].append(k)
                if v.get("set_by"):
                    failures_set_by.append(k)
                if created < opened_from:
                    failures_late.append(k)
        reply_days = [v["first_reply_days"] for v in proposals.values() if v["first_reply_days"] is not None]
        # the median of the waits, rounded once (the median of waits each rounded to a tenth
        # of a day was a tenth off: 1.04 and 1.05 days read 1.1)
        waits = [extra["waits_for_reply"][k] for k in proposals if k in extra["waits_for_reply"]]
        per_fw[fid] = {
            "name": fw.name, "repo": fw.repo,
            "changes": {kind: [c for c in items if c["framework"] == fid] for kind, items in changes.items()},
            "by_state": by_state, "proposals": len(proposals), "waiting": waiting,
            "failures_today": dict(sorted(failures.items())),
            "failures_today_set_by": failures_set_by,
            "failures_today_late": failures_late,
            "median_first_reply_days": _days(statistics.median(waits)) if waits else None,
            "replied": len(reply_days),
            "new_landings": [x for x in new_landings if x["framework"] == fid],
        }
    return {
        "date": day.isoformat(), "previous": prev_date, "baseline": prev_snapshot is None,
        "generated_at": format_datetime(now), "frameworks": per_fw, "paused": extra["paused"],
        "settings": extra["settings"], "resumed": resumed, "sync": sync,
        "totals": {kind: len(items) for kind, items in changes.items()},
        "failures_window": {"from": format_datetime(opened_from), "to": format_datetime(opened_to)},
        "new_landings": len(new_landings),
        "agreement": extra["agreement"],
        "snapshot": snapshot, "titles": extra["titles"],
    }


def _names() -> dict[str, Any]:
    """How the report names what it counts, as the site does (one way to name each): failure
    kinds and review concerns by the catalog's titles, review states by the site's labels, frameworks and methods
    by their catalog names. Ids stay in links and `data-` attributes."""
    from bot.site.data import concern_meaning, concern_title, kind_title
    from bot.site.pages import STATE_LABELS, framework_names, method_names

    return {"kind_title": kind_title, "concern_title": concern_title,
            "concern_meaning": concern_meaning, "state_labels": STATE_LABELS,
            "framework_names": framework_names(), "method_names": method_names()}


def render_markdown(data: dict[str, Any], public_url: str = "", cap: int | None = None) -> str:
    """The report as posted on GitHub. Threads link to their tracker pages under
    `public_url`, not to github.com: a link to an issue of another repository, in a comment,
    puts a "mentioned this" event into that thread, and the report names dozens a night.
    `cap`: the items each list keeps (the rest counted, the whole report linked)."""
    from bot.speaking.render import code_span, md_text
    from bot.templating import markdown_env

    return markdown_env().get_template("reports/report.md.j2").render(
        data=data, titles=CHANGE_TITLES, kinds=CHANGE_KINDS, states=STATES,
        public_url=public_url.rstrip("/"), cap=cap, md_text=md_text, code_span=code_span,
        **_names())


def markdown_to_post(markdown: str, data: dict[str, Any], public_url: str = "") -> str:
    """The report as one GitHub comment: `markdown` when it fits, else rendered with shorter
    lists (each saying how many more, the whole report linked on the tracker), else cut at a
    line with a note saying so. GitHub refuses a longer body on every retry."""
    if len(markdown) <= COMMENT_LIMIT:
        return markdown
    text = markdown
    for cap in CUT_TO:
        text = render_markdown(data, public_url, cap=cap)
        if len(text) <= COMMENT_LIMIT:
            return text
    note = (f"\n\n(Cut here to fit one GitHub comment: the whole report is at "
            f"{public_url.rstrip('/')}/reports/{data['date']}.)\n")
    return text[: COMMENT_LIMIT - len(note)].rsplit("\n", 1)[0] + note


def chart(data: dict[str, Any]) -> dict[str, Any]:
    """Geometry of the report's SVG chart: stacked proposal states per framework, and median
    days to first reply; numbers only, so the template draws it without any untrusted text."""
    rows = []
    widest = max([sum(fw["by_state"].values()) for fw in data["frameworks"].values()] + [1])
    longest = max([fw["median_first_reply_days"] or 0 for fw in data["frameworks"].values()] + [1])
    for i, (fid, fw) in enumerate(data["frameworks"].items()):
        x = 0.0
        segments = []
        for s in STATES:
            n = fw["by_state"].get(s, 0)
            if n:
                w = 300.0 * n / widest
                segments.append({"state": s, "x": round(x, 1), "w": round(w, 1), "n": n})
                x += w
        reply = fw["median_first_reply_days"]
        rows.append({"id": fid, "y": 30 + i * 28, "segments": segments, "total": sum(fw["by_state"].values()),
                     "reply": reply, "reply_w": round(150.0 * (reply or 0) / longest, 1)})
    return {"rows": rows, "height": 30 + len(rows) * 28 + 40, "states": STATES,
            "colours": STATE_COLOURS, "reply_colour": REPLY_COLOUR}


async def shown_data(session: Any, data: dict[str, Any]) -> dict[str, Any]:
    """A stored report's data as shown (its page, `--out` of a past night): without the titles
    of the threads deleted on GitHub since (buried: bot.store.threads.graves), whose text the
    tracker no longer keeps anywhere else. The key, links and numbers stay."""
    from bot.store.threads import graves_among, is_buried, thread_grave

    titles = data.get("titles") or {}
    snapshot = data.get("snapshot") or {}
    of_key: dict[str, str] = {}
    for key in titles:
        state = snapshot.get(key) or {}
        repo, _, number = key.rpartition("#")
        if repo and number.isdigit():
            of_key[key] = thread_grave(str(state.get("repo") or repo),
                                       int(state.get("number") or number),
                                       str(state.get("kind") or "issue"))
    found = await graves_among(session, set(of_key.values()))  # one statement, however many
    gone = {key for key, grave in of_key.items()
            if is_buried(found, grave, (snapshot.get(key) or {}).get("created_at"))}
    if not gone:
        return data
    return {**data, "titles": {k: v for k, v in titles.items() if k not in gone}}


def github_urls(data: dict[str, Any]) -> dict[str, str]:
    """Each thread's address on GitHub, built from its key and the kind the snapshot stored
    (`thread_url`, as every page builds it): never a URL a payload carried, which a report
    stored before security75 kept in its data (`urls`) and is not read."""
    urls: dict[str, str] = {}
    for key, state in (data.get("snapshot") or {}).items():
        repo, _, number = key.rpartition("#")
        if repo and number.isdigit():
            urls[key] = thread_url(repo, int(number), str((state or {}).get("kind") or "issue"))
    return urls


def render_html(data: dict[str, Any]) -> str:
    from bot.templating import html_env

    return html_env().get_template("reports/report.html.j2").render(
        data=data, titles=CHANGE_TITLES, kinds=CHANGE_KINDS, states=STATES, chart=chart(data),
        github_urls=github_urls(data), **_names())


async def store_report(ctx: Any, data: dict[str, Any], markdown: str) -> Report:
    """Store the night's report, replacing one stored for the same date (built again). One
    INSERT ... ON CONFLICT (date) DO UPDATE: a hand-run `rltracker report` and the nightly
    job storing the same date at once both succeed, the later one kept (reading the row and
    then inserting it made the second of two racing stores fail on the unique date)."""
    from bot.store.privacy import without_private

    async with ctx.sessionmaker() as session:
        # A repository made private since the threads were read (privacy62): its keys are
        # taken out under the lock `forget` takes too, and the Markdown rendered again.
        data, scrubbed = await without_private(session, data)
        built = parse_datetime(data.get("generated_at"))
        if built is not None:  # (the verdicts of a repository forgotten since it was built)
            figures = await agreement_to_store(session, built)
            if figures != data.get("agreement"):
                data, scrubbed = {**data, "agreement": figures}, True
        if scrubbed:
            markdown = render_markdown(data, ctx.settings.public_url)
        insert = dialect_insert(session.get_bind().dialect.name)(Report.__table__).values(
            date=data["date"], data=data, summary=report_summary(data), markdown=markdown,
            created_at=utcnow())
        await session.execute(insert.on_conflict_do_update(
            index_elements=["date"],
            set_={c: insert.excluded[c] for c in ("data", "summary", "markdown", "created_at")}))
        await session.commit()
        row = await session.scalar(select(Report).where(Report.date == data["date"])
                                   .execution_options(populate_existing=True))
        assert row is not None
        return row


class NotInstalled(RuntimeError):
    """The app is not installed on the report repository: nothing is posted there."""


async def _stored_installation(ctx: Any, repo: str) -> int | None:
    """The installation the stored repository row names (the installation events keep it, for
    every process), None when the repository is not tracked, not linked, or its installation
    is suspended or uninstalled."""
    from sqlalchemy import func

    from bot.store.installations import silenced_installations

    async with ctx.sessionmaker() as session:
        installation = await session.scalar(
            select(Repository.installation_id).where(func.lower(Repository.full_name) == repo.lower()))
        if installation is None or installation in await silenced_installations(session):
            return None
    return int(installation)


async def _post_on_github(ctx: Any, repo: str, number: int, day: str, markdown: str,
                          comment_id: int | None, action_id: int,
                          lease: list[datetime | None]) -> dict[str, Any] | None:
    """Edit the night's comment, or post it (None: another run took the night over since
    this one claimed it; it posts). `lease`: the claim's, renewed right before posting.
    Through the installation the stored repository row names, else the one GitHub gives
    (`installation_for_repo`, cached); refused by GitHub (401, 403, 404, 410: uninstalled and
    installed again under a new id, the repository moved), once more through the one GitHub
    gives now, when that is another."""
    from gidgethub import BadRequest

    from bot.github.client import rate_limit_wait

    installation = await _stored_installation(ctx, repo)
    if installation is None:
        installation = await ctx.github.installation_for_repo(repo)
    if installation is None and ctx.settings.has_app_credentials:
        # (the client's fallback would post it under GITHUB_TOKEN's person)
        raise NotInstalled(f"the app is not installed on {repo}; the report is posted as the app")
    try:
        return await _post_through(ctx, installation, repo, number, day, markdown, comment_id,
                                   action_id, lease)
    except BadRequest as exc:
        if int(exc.status_code) not in (401, 403, 404, 410) or rate_limit_wait(exc) is not None:
            raise
        now = await ctx.github.installation_for_repo(repo, refresh=True)
        if now == installation:
            raise
        if now is None:
            raise NotInstalled(f"the app is no longer installed on {repo} ({exc})") from exc
        log.info("report %s: installation %s refused (%s); posting through %s", day,
                 installation, int(exc.status_code), now)
    return await _post_through(ctx, now, repo, number, day, markdown, comment_id, action_id, lease)


async def _post_through(ctx: Any, installation: int | None, repo: str, number: int, day: str,
                        markdown: str, comment_id: int | None, action_id: int,
                        lease: list[datetime | None]) -> dict[str, Any] | None:
    from gidgethub import BadRequest

    gh = await ctx.github.api(installation)
    owner, name = repo.split("/", 1)
    if comment_id:
        try:
            await gh.patch(f"/repos/{owner}/{name}/issues/comments/{comment_id}",
                           data={"body": markdown})
            return {}
        except BadRequest as exc:
            if exc.status_code != 404:
                raise
        # The night's comment was deleted on GitHub: PATCHing its id failed the same way on
        # every run. The run asked for the report to be posted: it is posted anew.
        log.info("report %s: comment %s is gone on GitHub; posting it anew", day, comment_id)
    # The night's comment may be there already (posted, its answer lost): found by the
    # template's marker and edited, never posted twice.
    from bot.speaking.claims import renew
    from bot.speaking.posting import comments_url, own_login, post_or_adopt

    marker = f"<!-- rltracker:report:{day} -->"
    comments = [c async for c in gh.getiter(comments_url(repo, number))]
    # The app's login as its own comments show it (re-read after a rename: review40).
    login = await own_login(ctx, comments, marker)
    # Still this run's night? One slow enough for its claim to be taken over as stale (the
    # comments read above before the other run posted) must not post it a second time.
    lease[0] = await renew(ctx, action_id, lease[0])
    if lease[0] is None:
        return None
    posted = await post_or_adopt(gh, repo, number, markdown, marker, comments, login=login)
    return {"comment_id": posted.get("id"), "comment_node_id": posted.get("node_id")}


async def _claimed_by_a_dead_run(session: Any, claim: Action, run_id: int | None) -> bool:
    """Whether the night's pending claim was left by a nightly run that is no more: the claim
    names its run (`details["run"]`), and that run is this one, or its row says it ended
    (cancelled at a normal stop, marked at the next start, or finished) or its heartbeat
    stopped. A claim naming no run (`rltracker report`) is judged by its age alone."""
    from bot.store.jobs import shown_outcome
    from bot.store.models import JobRun

    owner = (claim.details or {}).get("run")
    if not isinstance(owner, int):
        return False
    if owner == run_id:
        return True
    row = await session.get(JobRun, owner)
    return row is None or shown_outcome(row) != "running"


async def post_report(ctx: Any, day: str, markdown: str, *, run_id: int | None = None) -> str:
    """Posts the night's report on settings.report_issue: edits the app's own comment for that
    night, or adds one; never two for one night (Action dedupe_key "report:{date}").
    `run_id`: the nightly run posting it (JobRun id), written on the claim so that a later
    run can tell a claim its dead run left (taken over at once) from a live run's."""
    target = ctx.settings.report_issue
    if not target:
        return "no_issue"
    repo, _, number_text = target.partition("#")
    number = int(number_text)
    key = f"report:{day}"
    from sqlalchemy.exc import IntegrityError

    from bot.speaking.claims import STALE_PENDING

    now = utcnow()
    async with ctx.sessionmaker() as session:
        action = await session.scalar(select(Action).where(Action.dedupe_key == key))
        if action is None:
            action = Action(repo=repo, number=number, kind="report", status="pending",
                            dedupe_key=key, details={"run": run_id}, created_at=now,
                            updated_at=now)
            session.add(action)
            try:
                await session.commit()
            except IntegrityError:  # another replica took it: it posts
                await session.rollback()
                return "owned"
        else:
            # The night's row exists: take it (pending) only as it was read, and not while
            # another run (`rltracker report` beside the nightly job, a second replica) is
            # posting it. That run found the row `pending` and posted too: two comments.
            # A pending row of a nightly run known dead (the process stopped while it
            # posted; the catch-up run at the next start found it minutes old) is taken over
            # at once: the comment, if GitHub created it, is found by its marker.
            if (action.status == "pending" and action.updated_at >= now - STALE_PENDING
                    and not await _claimed_by_a_dead_run(session, action, run_id)):
                await session.rollback()
                return "owned"
            taken = await session.execute(
                update(Action)
                .where(Action.id == action.id, Action.status == action.status,
                       Action.updated_at == action.updated_at)
                .values(status="pending", updated_at=now,
                        details={**(action.details or {}), "run": run_id}))
            await session.commit()
            if taken.rowcount != 1:
                return "owned"
        action_id, comment_id = action.id, action.comment_id
    lease: list[datetime | None] = [now]  # the claim's updated_at as this run wrote it
    values: dict[str, Any] | None
    if ctx.settings.dry_run or ctx.github is None:
        status, values = "dry_run", {}
    else:
        try:
            values = await _post_on_github(ctx, repo, number, day, markdown, comment_id,
                                           action_id, lease)
        except Exception as exc:
            # Recorded as failed with the reason (it stayed "pending", shown as in progress
            # for good); the night's run or `rltracker report --date` posts it again. Not
            # over another run's record when that run took the night over meanwhile.
            await _record_night(ctx, action_id, lease[0], status="failed", body=markdown,
                                reason=f"{type(exc).__name__}: {exc}"[:500])
            raise
        if values is None:
            return "owned"
        status = "posted"
    await _record_night(ctx, action_id, lease[0], status=status, body=markdown, **values)
    # (a comment posted anew, the night's one deleted on GitHub, comes back with its id)
    return "edited" if comment_id and status == "posted" and not values else status


async def _record_night(ctx: Any, action_id: int, lease: datetime | None, **values: Any) -> None:
    """The night's outcome, written while the claim is still this run's."""
    async with ctx.sessionmaker() as session:
        await session.execute(update(Action).where(Action.id == action_id,
                                                   Action.updated_at == lease)
                              .values(updated_at=utcnow(), **values))
        await session.commit()


async def run_report(ctx: Any, day: date | None = None, out: Path | None = None, *,
                     stored: bool = False, sync: dict[str, Any] | None = None,
                     run_id: int | None = None) -> dict[str, Any] | None:
    """Build, store, write (`out`) and post the report of `day`. `stored`: the report stored
    for `day` as it was built that night, written and posted again, not rebuilt (None when
    there is none): a report shows the state when it is built, so rebuilding a past night's
    put today's state under that night's date, over what was stored. `run_id`: the nightly
    run building it (its claim names it: post_report)."""
    if stored:
        assert day is not None
        async with ctx.sessionmaker() as session:
            row = await session.scalar(select(Report).where(Report.date == day.isoformat()))
            if row is None:
                return None
            data, markdown = await shown_data(session, row.data), row.markdown
    else:
        data = await build_report(ctx, day, sync=sync)
        markdown = render_markdown(data, ctx.settings.public_url)
        row = await store_report(ctx, data, markdown)
        # as stored: without a repository made private since the threads were read
        data, markdown = row.data, row.markdown
    error: dict[str, str] = {}
    if out is not None:
        # The files are a copy of the stored report (`rltracker report --date DAY --out DIR`
        # writes them again); one that cannot be written does not keep the report from its
        # readers: it is posted all the same, and the command says which file failed.
        html = render_html(data)
        failed = await asyncio.to_thread(_write_files, out, data["date"], markdown, html)
        if failed:
            error["files_error"] = failed
    try:
        outcome = await post_report(ctx, data["date"],
                                    markdown_to_post(markdown, data, ctx.settings.public_url),
                                    run_id=run_id)
    except Exception as exc:  # noqa: BLE001 - a failed post leaves the stored report usable
        # Said by the caller: the nightly run's record (partial), the command's exit status.
        outcome = "failed"
        error["error"] = f"{type(exc).__name__}: {exc}"[:300]
    redacted = await redact_posted_reports(ctx)
    return {"date": data["date"], "posted": outcome, "totals": data["totals"],
            # a report stored by the first release has no new_landings (the study came later)
            "new_landings": data.get("new_landings", 0), "baseline": data["baseline"], **error,
            **({"redacted": redacted} if redacted else {})}


REDACT_LIMIT = 20  # posted reports edited to drop a repository made private, per run


async def redact_posted_reports(ctx: Any, limit: int = REDACT_LIMIT) -> int:
    """Edit on GitHub the reports already posted that named a repository made private since
    (privacy62): `forget` left each claim's `body` without it and flagged it (REDACT); one
    PATCH each, at most `limit` a run (the rest the next run), oldest night first. A comment
    deleted on GitHub is not posted anew (nothing of it is shown). One GitHub refuses stays
    flagged for the next run. Returns how many were edited (or found gone)."""
    from gidgethub import BadRequest

    from bot.store.privacy import REDACT

    if ctx.settings.dry_run or ctx.github is None:
        return 0
    async with ctx.sessionmaker() as session:
        claims = [a for a in await session.scalars(
            select(Action).where(Action.kind == "report", Action.comment_id.is_not(None),
                                 Action.status != "pending").order_by(Action.dedupe_key))
            if (a.details or {}).get(REDACT) and a.body][:limit]
    done = 0
    for claim in claims:
        owner, name = claim.repo.split("/", 1)
        try:
            installation = await _stored_installation(ctx, claim.repo)
            if installation is None:
                installation = await ctx.github.installation_for_repo(claim.repo)
            if installation is None and ctx.settings.has_app_credentials:
                # (the client's fallback would edit it as GITHUB_TOKEN's person: it cannot)
                raise NotInstalled(f"the app is not installed on {claim.repo}")
            gh = await ctx.github.api(installation)
            await gh.patch(f"/repos/{owner}/{name}/issues/comments/{claim.comment_id}",
                           data={"body": claim.body})
        except BadRequest as exc:
            if int(exc.status_code) not in (404, 410):
                log.warning("report %s: not edited to drop a private repository: %s",
                            claim.dedupe_key, exc)
                continue
        except Exception as exc:  # noqa: BLE001 - tried again the next run
            log.warning("report %s: not edited to drop a private repository: %s: %s",
                        claim.dedupe_key, type(exc).__name__, exc)
            continue
        details = {k: v for k, v in (claim.details or {}).items() if k != REDACT}
        async with ctx.sessionmaker() as session:  # unless taken since (another run posts it)
            await session.execute(update(Action).where(
                Action.id == claim.id, Action.updated_at == claim.updated_at,
                Action.body == claim.body).values(details=details))
            await session.commit()
        done += 1
    return done


def _write_files(out: Path, day: str, markdown: str, html: str) -> str | None:
    """report-DAY.md and .html in `out`, each written whole beside its name and renamed over
    it (bot.files): a write that fails (a full disk, a folder where the file should be) leaves
    the previous file as it was and nothing beside it. Returns what failed ("PATH: reason",
    each file tried), else None."""
    from bot.files import replaced_whole

    failures: list[str] = []
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"{out}: {exc.strerror or exc}"
    for path, text in ((out / f"report-{day}.md", markdown), (out / f"report-{day}.html", html)):
        try:
            with replaced_whole(str(path)) as fh:
                fh.write(text)
        except OSError as exc:
            failures.append(f"{path}: {exc.strerror or exc}")
    return "; ".join(failures) or None


def report_command(args: Any) -> int:
    """`rltracker report [--out DIR] [--date YYYY-MM-DD]`."""
    from bot.config import Settings
    from bot.context import AppContext

    day = date.fromisoformat(args.date) if getattr(args, "date", None) else None
    today = utcnow().date()
    if day is not None and day > today:
        print(f"rltracker report: --date {day}: a report shows the state when it is built; "
              f"one for a day after today ({today}, UTC) cannot be built", file=sys.stderr)
        return 2
    past = day is not None and day < today
    out = Path(args.out) if args.out else None
    if out is not None:  # before the report is built, stored and posted, not after
        out.mkdir(parents=True, exist_ok=True)

    settings = Settings.from_env()

    async def main() -> dict[str, Any] | None:
        ctx = AppContext.create(settings)
        if ctx.settings.has_app_credentials or ctx.settings.token:
            from bot.github.client import GitHubClient

            ctx.github = GitHubClient(ctx.settings)
        try:
            return await run_report(ctx, day, out, stored=past)
        finally:
            await ctx.close()

    summary = asyncio.run(main())
    if summary is None:
        print(f"rltracker report: --date {day}: no report was built that day, and a past "
              "night's cannot be built now (a report shows the state when it is built); "
              "`rltracker report` builds today's", file=sys.stderr)
        return 2
    json.dump(summary, sys.stdout)
    sys.stdout.write("\n")
    files = summary.get("files_error")
    if summary["posted"] == "failed":  # stored, not posted: a cron job must see it
        unwritten = f"; nor written: {files}" if files else ""
        print(f"rltracker report: the report of {summary['date']} is stored but could not be "
              f"posted on {settings.report_issue} ({summary.get('error')}){unwritten}; run the "
              "command again to post it", file=sys.stderr)
        return 1
    if files:  # stored and posted; the copy in --out is not (a full disk, a folder in the way)
        shown = (f"stored and posted on {settings.report_issue}"
                 if summary["posted"] in ("posted", "edited") else "stored")
        print(f"rltracker report: the report of {summary['date']} is {shown}, but not written "
              f"to --out: {files}; `rltracker report --date {summary['date']} --out {out}` "
              "writes it again", file=sys.stderr)
        return 2
    return 0
