"""The study, live: GET /study, /study/sets/{name}, /api/study, `rltracker study`, and the
nightly step that records it.

The numbers are computed by analyzers.study from the catalog and the stored proposals (their
analyses give the review state, the replies and the concerns). Pages and the API compute them
on each request, so they follow the catalog and the database at once. The nightly step
(`refresh_study`) stores each run's result as a JobRun named "study": that record is what
remembers when each detected landing was first seen, so a merged pull request becomes a
detected landing once, and the nightly report lists it as new once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import math
import sys
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from aiohttp import web
from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.catalog import framework_id
from analyzers.study import STUDY_FROM_YEAR
from bot.context import app_context
from bot.logs import error_text
from bot.site import data
from bot.site.pages import json_response, moved_to, not_found, render
from bot.store.db import is_statement_timeout, lock_waited_out, refuses_writes
from bot.store.models import Analysis, JobRun, ProposedMethods, Thread
from bot.store.types import format_datetime, utcnow

log = logging.getLogger(__name__)

JOB_NAME = "study"
HOW_TO_FILL = ("No proposals are stored yet. They come in with `rltracker sync` (set "
               "GITHUB_TOKEN, or the app's credentials) or, once the GitHub App is installed "
               "on a framework's repository, with its webhooks; the nightly job keeps them "
               "current.")
# Okabe-Ito colours, one per framework, in catalog order (distinct for colour-blind readers).
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000")
METHOD_SET_PREFIXES = ("landed", "first", "dated", "detected", "reached")


# --- data ------------------------------------------------------------------------------------


def _catalog_tag() -> str:
    """The project catalog's tag (the saved paper index's: the analyzers' version and the
    catalog files' digest), computed once per process."""
    from analyzers.papers import index_tag

    return index_tag()


@dataclass
class ProposedMemo:
    """Each stored proposal's proposed methods (analyzers.proposed), remembered with a digest
    of what they were read from (`_memo_key`): the thread's row version (`stored_at`, moved
    by every write of the row, so by an edited title or opening post), its title, the catalog
    methods its analysis links, and `catalog_tag` (analyzers.papers.index_tag: ANALYZER_VERSION
    and a digest of the catalog's files, so a catalog edited without a version bump makes
    the kept entries stale, left74). A recompute of the study runs the rule,
    and loads the opening post, only for threads whose key changed (studyperf68: the rule
    over every opening post cost about 0.7 ms a proposal, seconds for thousands, on every
    recompute, and one is due whenever any thread is stored). One per process (`ctx.extras`),
    which first reads the entries the nightly step kept in the store (`keep_proposed`,
    site71); None given to build_study: a fresh one, from scratch."""

    entries: dict[int, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    runs: int = 0  # how many times the rule ran, over all recomputes
    from_store: bool = False  # the next recompute first reads the kept entries (once)
    catalog_tag: str = field(default_factory=_catalog_tag)


BODY_CHUNK = 500  # thread ids per `IN (...)` when loading the opening posts to read again


def _memo_key(row: Any, catalog_tag: str) -> str:
    """What a proposal's proposed methods are read from, as a digest the store can keep."""
    stored_at = row.stored_at.isoformat() if row.stored_at is not None else None  # (to the µs)
    read_from = [stored_at, row.title or "", list(row.methods or ()), catalog_tag]
    return hashlib.sha256(json.dumps(read_from).encode()).hexdigest()


def _run_rule(texts: list[tuple[int, str, str | None, tuple[str, ...]]]
              ) -> dict[int, tuple[str, ...]]:
    """thread id -> its proposed methods, from (id, title, opening post, linked methods)."""
    from analyzers.proposed import proposed_methods

    return {tid: tuple(proposed_methods({"title": title, "body": body}, methods))
            for tid, title, body, methods in texts}


async def _proposed(session: AsyncSession, rows: list[Any], memo: ProposedMemo
                    ) -> dict[int, tuple[str, ...]]:
    """thread id -> proposed methods for `rows`, the rule run only where the memo is stale."""
    if memo.from_store:
        kept_rows = await session.execute(select(ProposedMethods.thread_id, ProposedMethods.key,
                                                 ProposedMethods.methods))
        memo.entries = {**{tid: (key, tuple(methods)) for tid, key, methods in kept_rows.all()},
                        **memo.entries}
        memo.from_store = False
    keys = {r.id: _memo_key(r, memo.catalog_tag) for r in rows}
    kept = {tid: entry for tid, entry in memo.entries.items()
            if tid in keys and entry[0] == keys[tid]}
    stale = [r for r in rows if r.id not in kept]
    bodies: dict[int, str | None] = {}
    for at in range(0, len(stale), BODY_CHUNK):
        ids = [r.id for r in stale[at:at + BODY_CHUNK]]
        bodies.update((await session.execute(
            select(Thread.id, Thread.body).where(Thread.id.in_(ids)))).all())
    found = await asyncio.to_thread(
        _run_rule, [(r.id, r.title or "", bodies.get(r.id), tuple(r.methods or ()))
                    for r in stale])
    memo.runs += len(found)
    kept.update((tid, (keys[tid], methods)) for tid, methods in found.items())
    memo.entries = kept  # the rows of now only: a thread gone or changed leaves nothing behind
    return {tid: entry[1] for tid, entry in kept.items()}


async def keep_proposed(ctx: Any, memo: ProposedMemo) -> None:
    """Leaves the memo in the store (`proposed_methods`) for the next process's first
    computation: the entries whose key changed written again, those of threads gone dropped.
    A thread deleted since the memo was made (its row refused), or a store that does not take
    the rows now (a lock not granted, a statement cut, no writes), leaves the store's entries
    as they were: the next night writes them. Called after the night's study record (review72:
    the memo's write failing cost the night its record)."""
    async with ctx.sessionmaker() as session:
        stored = dict((await session.execute(
            select(ProposedMethods.thread_id, ProposedMethods.key))).all())
        changed = [tid for tid, (key, _) in memo.entries.items() if stored.get(tid) != key]
        dropped = changed + [tid for tid in stored if tid not in memo.entries]
        try:
            for at in range(0, len(dropped), BODY_CHUNK):
                await session.execute(delete(ProposedMethods).where(
                    ProposedMethods.thread_id.in_(dropped[at:at + BODY_CHUNK])))
            for at in range(0, len(changed), BODY_CHUNK):
                await session.execute(insert(ProposedMethods), [
                    {"thread_id": tid, "key": memo.entries[tid][0],
                     "methods": list(memo.entries[tid][1])}
                    for tid in changed[at:at + BODY_CHUNK]])
            await session.commit()
        except IntegrityError:  # (raised by the insert, or by the commit where deferred)
            await session.rollback()
            log.info("study memo not kept this time: a thread was deleted while it was made")
        except DBAPIError as exc:
            # A saving only: a lock not granted, a statement cut at its bound, a store taking
            # no writes leave the kept rows as they were (the next night writes them).
            if not (lock_waited_out(exc) or is_statement_timeout(exc) or refuses_writes(exc)):
                raise
            await session.rollback()
            log.warning("study memo not kept this time: %s", error_text(exc))


async def _threads(session: AsyncSession, memo: ProposedMemo
                   ) -> tuple[list[Any], dict[str, dict[str, Any]]]:
    """The stored proposals as study records, and per thread key what a list of them shows."""
    from analyzers.study import StudyThread

    rows = [r for r in (await session.execute(
        select(Thread.id, Thread.repo, Thread.number, Thread.kind, Thread.state, Thread.title,
               Thread.stored_at, Thread.closed_at, Analysis.is_proposal, Analysis.review_state,
               Analysis.methods,
               Analysis.result["review"].label("review"))  # not the whole result: papers are long
        .join(Analysis, Analysis.thread_id == Thread.id)
        .where(Analysis.is_proposal.is_(True))
    )).all() if framework_id(r.repo) is not None]
    proposes = await _proposed(session, rows, memo)
    records, shown = [], {}
    for r in rows:
        review = r.review or {}
        record = StudyThread(
            repo=r.repo, number=int(r.number), kind=r.kind, state=r.state,
            is_proposal=bool(r.is_proposal), review_state=r.review_state,
            methods=tuple(r.methods or ()),
            replied_from_other=bool(review.get("replied_from_other")),
            concerns=tuple(review.get("concerns") or ()),
            closed_at=format_datetime(r.closed_at), proposes=proposes[r.id],
        )
        records.append(record)
        shown[record.key] = {
            "key": record.key, "repo": r.repo, "number": int(r.number), "kind": r.kind,
            "title": r.title or "", "review_state": r.review_state,
            "page": f"/threads/{r.repo}/{int(r.number)}",
            "url": data.thread_url(r.repo, int(r.number), r.kind),
        }
    return records, shown


def proposed_memo(ctx: Any) -> ProposedMemo:
    """The process's memo of proposed methods (the pages' and the nightly step's), which
    first reads what the nightly step kept."""
    memo: ProposedMemo = ctx.extras.setdefault("study_proposed", ProposedMemo(from_store=True))
    return memo


async def _latest_stored(session: AsyncSession) -> JobRun | None:
    return await session.scalar(
        select(JobRun).where(JobRun.name == JOB_NAME, JobRun.outcome == "ok")
        .order_by(JobRun.id.desc()).limit(1))


def _seen(stored: JobRun | None) -> dict[str, str]:
    """method@framework -> when the nightly job first recorded that detected landing."""
    landings = ((stored.counts or {}).get("landings") or []) if stored is not None else []
    return {f"{x['method']}@{x['framework']}": x["detected_at"]
            for x in landings if x.get("detected") and x.get("detected_at")}


async def build_study(session: AsyncSession, memo: ProposedMemo | None = None
                      ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The study computed now, and the shown fields of every thread it counts; `memo` keeps
    the proposals' proposed methods between recomputes (None: all read from scratch)."""
    from analyzers.study import compute_study

    records, shown = await _threads(session, memo if memo is not None else ProposedMemo())
    stored = await _latest_stored(session)
    study = await asyncio.to_thread(compute_study, data.catalog(), records, _seen(stored))
    study["computed_at"] = format_datetime(utcnow())
    study["recorded_at"] = format_datetime(stored.finished_at) if stored is not None else None
    study["how_to_fill"] = None if study["proposals_stored"] else HOW_TO_FILL
    for x in study["landings"]:
        if x["detected"]:
            pr = shown.get(x["pull_request"], {})
            x["pull_request_url"] = pr.get("url")
            x["pull_request_page"] = pr.get("page")
    return study, shown


def _compact(study: dict[str, Any]) -> dict[str, Any]:
    """What a run records: the numbers and landings, not the member lists behind the links."""
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "sets"}
        return value

    return {k: strip(v) for k, v in study.items()
            if k in ("frameworks", "landings", "review_records", "proposals_stored",
                     "computed_at")}


async def refresh_study(ctx: Any) -> dict[str, Any]:
    """The nightly step: compute the study, date the detected landings first seen now, and
    record the run (JobRun "study", the numbers in `counts`)."""
    started = utcnow()
    memo = proposed_memo(ctx)
    async with ctx.sessionmaker() as session:
        study, _ = await build_study(session, memo)
    now = format_datetime(started)
    new = []
    for x in study["landings"]:
        if x["detected"] and not x.get("detected_at"):
            x["detected_at"] = now
            new.append(f"{x['method']}@{x['framework']}")
    await _record(ctx, started, _compact(study))
    # After the night's record (what the report reads), a saving for the next process: a web
    # process's first /study reads it (site71)
    await keep_proposed(ctx, memo)
    return {"landings": sum(1 for x in study["landings"] if not x["detected"]),
            "detected": sum(1 for x in study["landings"] if x["detected"]),
            "new_detected": new, "proposals": study["proposals_stored"]}


async def _record(ctx: Any, started: datetime, counts: dict[str, Any]) -> None:
    """The run's record (JobRun "study"), without the pull requests of a repository made
    private since the threads were read (privacy62: `forget` scrubs the records stored
    before, and waits for this write or is waited for: bot.store.privacy.without_private)."""
    from bot.store.privacy import without_private

    async with ctx.sessionmaker() as session:
        counts, _ = await without_private(session, counts)
        session.add(JobRun(name=JOB_NAME, started_at=started, finished_at=utcnow(),
                           outcome="ok", counts=counts))
        await session.commit()


async def detected_since(session: AsyncSession, since: datetime | None,
                         until: datetime | None = None) -> list[dict[str, Any]]:
    """Detected landings the nightly job first recorded after `since` (all when None) and by
    `until` (the time a report is built at), from its latest record; for the nightly report.
    None whose pull request is of a repository marked private (privacy62: a record written
    from threads read before it was)."""
    from bot.store.privacy import marked_private

    stored = await _latest_stored(session)
    if stored is None:
        return []
    cutoff = format_datetime(since) if since is not None else None
    end = format_datetime(until) if until is not None else None
    found = [dict(x) for x in (stored.counts or {}).get("landings") or []
             if x.get("detected") and x.get("detected_at")
             and (cutoff is None or x["detected_at"] > cutoff)
             and (end is None or x["detected_at"] <= end)]
    repos = {str(k).rpartition("#")[0] for x in found
             for k in [x.get("pull_request"), *(x.get("pull_requests") or [])] if k}
    hidden = await marked_private(session, repos)
    if not hidden:
        return found
    out = []
    for x in found:
        prs = [k for k in x.get("pull_requests") or [x.get("pull_request")]
               if k and str(k).rpartition("#")[0].lower() not in hidden]
        if str(x.get("pull_request") or "").rpartition("#")[0].lower() not in hidden:
            out.append({**x, "pull_requests": prs})
    return out


# --- the timeline ----------------------------------------------------------------------------


def _tick_step(span: int) -> int:
    for step in (30, 60, 90, 180, 365, 730):
        if span / step <= 8:
            return step
    return 1460


def _label(name: str) -> str:
    short = name.split(" (")[0]
    return short if len(short) <= 40 else short[:39] + "…"


def timeline(study: dict[str, Any], frameworks: list[str]) -> dict[str, Any]:
    """Geometry of the SVG timeline: one row per study method, one mark per landing with a
    date, x = days from the method's first public version. Numbers and catalog ids only."""
    label_w, plot_w, row_h, top = 270, 600, 24, 40
    marks = [x for x in study["landings"] if x["days"] is not None
             and (not x["detected"] or x.get("in_study"))]
    low = min([0] + [x["days"] for x in marks])
    high = max([30] + [x["days"] for x in marks])
    span = high - low
    step = _tick_step(span)
    low = step * math.floor(low / step)
    high = step * math.ceil(high / step)
    span = max(high - low, 1)

    def x_of(days: int) -> float:
        return round(label_w + plot_w * (days - low) / span, 1)

    index = {m["method"]: i for i, m in enumerate(study["methods"])}
    fw_index = {f: i for i, f in enumerate(frameworks)}
    # The label is the name without its parenthesised gloss; the full name is the row's title.
    rows = [{"method": m["method"], "name": m["name"], "label": _label(m["name"]),
             "first_public": m["first_public"],
             "y": top + i * row_h + row_h / 2, "landed": len(m["frameworks"])}
            for i, m in enumerate(study["methods"])]
    drawn = []
    for x in marks:
        i = index.get(x["method"])
        if i is None:
            continue
        f = fw_index.get(x["framework"], 0)
        drawn.append({**x, "cx": x_of(x["days"]), "cy": rows[i]["y"] + (f - 3) * 2,
                      "colour": COLOURS[f % len(COLOURS)]})
    height = top + len(rows) * row_h + 58
    return {
        "width": label_w + plot_w + 20, "height": height, "label_w": label_w,
        "plot_top": top - 8, "plot_bottom": top + len(rows) * row_h,
        "zero": x_of(0), "left": x_of(low),
        "ticks": [{"x": x_of(d), "days": d} for d in range(low, high + 1, step)],
        "rows": rows, "marks": drawn,
        "legend": [{"framework": f, "colour": COLOURS[i % len(COLOURS)],
                    "x": label_w + i * 85} for i, f in enumerate(frameworks)],
        "legend_y": height - 34,
    }


# --- pages -----------------------------------------------------------------------------------


async def _freshness(session: AsyncSession) -> tuple[Any, ...]:
    """Changes whenever a thread, an analysis or the nightly record does (one cheap query)."""
    threads = (await session.execute(select(func.count(Thread.id), func.max(Thread.stored_at)))).one()
    analyses = (await session.execute(
        select(func.count(Analysis.id), func.max(Analysis.analyzed_at)))).one()
    run = await session.scalar(select(func.max(JobRun.id)).where(JobRun.name == JOB_NAME))
    return (*threads, *analyses, run)


async def _study(request: web.Request) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The study for a page: computed again only when the stored data changed (a few thousand
    proposals take most of a second to load), so the set pages behind its links are cheap."""
    ctx = app_context(request)
    async with ctx.sessionmaker() as session:
        stamp = await _freshness(session)
        cached = ctx.extras.get("study_cache")
        if cached is not None and cached[0] == stamp:
            return cached[1]
        built = await build_study(session, proposed_memo(ctx))
    ctx.extras["study_cache"] = (stamp, built)
    return built


async def study_page(request: web.Request) -> web.Response:
    study, _ = await _study(request)
    return study_html(study, data.catalog())


def study_html(study: dict[str, Any], cat: Any) -> web.Response:
    """/study for a computed study and the catalog it was computed from."""
    frameworks = list(cat.frameworks)
    # A number's link is named by what it counts (its text alone read "2, 0, 17" to a screen reader).
    return render("study.html", s=study, chart=timeline(study, frameworks),
                  frameworks=cat.frameworks, methods=cat.methods,
                  published={m["method"]: m for m in study["methods"]},
                  set_title=lambda name: _set_title(name, cat.frameworks))


async def api_study(request: web.Request) -> web.Response:
    study, _ = await _study(request)
    return json_response(study)


def _set_title(name: str, frameworks: dict[str, Any]) -> str:
    parts = name.split(".")
    fw = frameworks.get(parts[1]).name if len(parts) > 1 and parts[1] in frameworks else ""
    if parts[0] == "reached":
        return "Study methods that reached at least one framework (verified landings)"
    if parts[0] == "landed":
        return f"Study methods landed in {fw}"
    if parts[0] == "first":
        return f"Study methods that landed first in {fw}"
    if parts[0] == "dated":
        return f"Dated landings in {fw} (the median is taken over these)"
    if parts[0] == "detected":
        return f"Detected landings in {fw} (merged pull requests, not yet in the catalog)"
    if parts[0] == "proposals":
        return f"{fw} proposals for methods no framework carries: {parts[2]}"
    if parts[0] == "review":
        group = {"merged_prs": "Merged method pull requests",
                 "unmerged_prs": "Unmerged method pull requests",
                 "requests": "Method requests (issues)"}.get(parts[1], parts[1])
        what = parts[2].replace("_", " ") if len(parts) == 3 else f"concern: {data.concern_title(parts[3])}"
        return f"{group}: {what}"
    return name


def _empty_text(name: str, frameworks: dict[str, Any]) -> str:
    """What an empty set page says: what would appear there, and when."""
    parts = name.split(".")
    fw = frameworks[parts[1]].name if len(parts) > 1 and parts[1] in frameworks else "this framework"
    if parts[0] in ("landed", "first", "dated", "reached"):
        when = {"first": f"{fw} is the first framework the catalog records it in (or shares "
                         "that first day)",
                "dated": f"the catalog records it in {fw} with the day of its first commit",
                "reached": "the catalog records it in a framework"}.get(
                    parts[0], f"the catalog records it in {fw}")
        return ("None: this set is counted from the catalog's verified landings (no stored "
                f"thread changes it); a study method appears here when {when}.")
    if parts[0] == "detected":
        # (any catalog method, as the rule says: detected landings are not only study methods')
        return (f"None: a merged method pull request of {fw} that proposes a catalog method the "
                "catalog does not list for it yet appears here once it is stored (`rltracker "
                "sync`, the app's webhooks, the nightly job).")
    return ("None: the threads of this set appear here as they are stored and analysed "
            "(`rltracker sync`, the app's webhooks, the nightly job); an empty set means no "
            "stored thread matches it.")


async def set_page(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    study, shown = await _study(request)
    members = study["sets"].get(name)
    cat = data.catalog()
    if members is None:
        # Another spelling (landed.VERL, proposals.NeMo_RL.open): the 301 /frameworks/VERL
        # gets, folded the same way (the frameworks' names fold to their ids).
        return moved_to(request, "name", study["sets"]) or not_found("study set")
    kind = "methods" if name.split(".")[0] in METHOD_SET_PREFIXES else "threads"
    framework = name.split(".")[1] if kind == "methods" and "." in name else None
    rows: list[dict[str, Any]] = []
    if name == "reached":  # each method's earliest dated landing, anywhere
        firsts = {m["method"]: m for m in study["methods"]}
        rows = [{"method": mid, "name": cat.methods[mid].name,
                 "date": firsts[mid]["first_landing"], "days": firsts[mid]["first_landing_days"],
                 "before_paper": (firsts[mid]["first_landing_days"] or 0) < 0}
                for mid in members]
    elif kind == "methods":
        by_key = {(x["method"], x["framework"], x["detected"]): x for x in study["landings"]}
        detected = name.startswith("detected.")
        for mid in members:
            landing = by_key.get((mid, framework, detected), {})
            rows.append({"method": mid, "name": cat.methods[mid].name, **landing})
    else:
        rows = [shown[k] for k in members if k in shown]
    # On a fresh install a set of stored threads said "None." with nothing on what fills it.
    stored_kind = name.split(".")[0] not in ("landed", "first", "dated", "reached")
    return render("study_set.html", name=name, title=_set_title(name, cat.frameworks),
                  kind=kind, rows=rows, frameworks=cat.frameworks,
                  empty=_empty_text(name, cat.frameworks),
                  how_to_fill=study["how_to_fill"] if stored_kind else None)


def setup(app: web.Application) -> None:
    """Adds the study's page, its member lists and its JSON twin."""
    app.router.add_get("/study", study_page)
    app.router.add_get("/study/sets/{name}", set_page)
    app.router.add_get("/api/study", api_study)


# --- command ---------------------------------------------------------------------------------


def study_command(args: Any) -> int:
    """`rltracker study [--json]`: the study from the catalog and the database, as /api/study."""
    from bot.config import Settings
    from bot.context import AppContext

    async def run() -> dict[str, Any]:
        ctx = AppContext.create(Settings.from_env())
        try:
            async with ctx.sessionmaker() as session:
                return (await build_study(session))[0]
        finally:
            await ctx.close()

    study = asyncio.run(run())
    if getattr(args, "json", False):
        json.dump(study, sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 0
    published, reached = study["published"], study["reached"]
    out = [f"published study ({published['date']}): {published['reached']} of "
           f"{published['papers']:,} papers reached a framework; live: {reached['methods']} of "
           f"{reached['of']} study methods (catalog methods first public in "
           f"{STUDY_FROM_YEAR} or later) reached one",
           f"{'framework':10} methods first median  proposals all/open/declined/lapsed  detected"]
    for fid, fw in study["frameworks"].items():
        p = fw["proposals"]
        median = "-" if fw["median_days"] is None else fw["median_days"]
        out.append(f"{fid:10} {fw['methods']:7} {fw['first_anywhere']:5} {median!s:>6}  "
                   f"{p['all']}/{p['open']}/{p['declined']}/{p['lapsed']:<27} {fw['detected']}")
    if study["how_to_fill"]:
        out.append(study["how_to_fill"])
    sys.stdout.write("\n".join(out) + "\n")
    return 0
