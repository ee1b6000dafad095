"""People's verdicts on the tracker: `GET /verdicts` (HTML) and `GET /api/verdicts` (JSON).

The live agreement figure (bot.store.verdicts.agreement): how often the failure analyzer
agreed with the verdicts people gave with `/rltracker kind` and `/rltracker not-a-failure`,
per analyzer version, against what it said when each verdict was given; and the latest
verdicts (the thread, what the person said, who, and what the analyzer had said).

Logins and titles are text from GitHub: the template escapes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web
from sqlalchemy import case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from analyzers.catalog import framework_id
from bot.context import app_context
from bot.site import data
from bot.site.api import api_paging
from bot.site.pages import (
    ListRequest,
    json_response,
    list_pages,
    list_url,
    read_list_request,
    render,
)
from bot.store.models import Analysis, Repository, Thread, Verdict
from bot.store.types import Position, beyond
from bot.store.verdicts import agreement, verdict_dict

LIST_ROWS = 100  # verdicts per page of /verdicts, latest first (the figures count them all)


async def verdicts_data(session: AsyncSession, limit: int = LIST_ROWS, offset: int = 0
                        ) -> dict[str, Any]:
    """The agreement figures, the verdicts latest first (the `limit` after the first
    `offset`: the page pages through them all) and the threads a verdict is wanted on."""
    page = await verdict_page(session, limit=limit, offset=offset)
    return await _with_figures(session, page)


async def _with_figures(session: AsyncSession, page: data.ThreadPage) -> dict[str, Any]:
    figures = await agreement(session)
    return {"agreement": figures, "total": figures[-1]["verdicts"], "latest": page.rows,
            "wanted": await wanted_verdicts(session)}


async def verdict_page(session: AsyncSession, *, limit: int, offset: int = 0,
                       after: Position | None = None, before: Position | None = None
                       ) -> data.ThreadPage:
    """The verdicts latest first (ties by id): the `limit` after the first `offset`, after
    the verdict at `after` or before the one at `before` (the cursors of /verdicts' Older and
    Newer links, as the thread lists', `data.thread_page`). A page `before` a verdict near the
    top, with fewer than `limit` verdicts before it, is the first page (pages keep their size).
    `given_at` is never empty, so no row falls outside the cursors' order."""
    query = select(Verdict, Thread).join(Thread, Thread.id == Verdict.thread_id)
    wanted = limit + 1  # one more than shown: whether a page beyond this one exists
    if before is not None:
        rows = (await session.execute(
            query.where(beyond(Verdict.given_at, Verdict.id, before, descending=False))
            .order_by(Verdict.given_at, Verdict.id).limit(wanted))).all()
        if len(rows) < wanted:
            return await verdict_page(session, limit=limit)
        rows = rows[:limit][::-1]
        return data.ThreadPage(_verdict_rows(rows), _position(rows[0]), _position(rows[-1]))
    if after is not None:
        query = query.where(beyond(Verdict.given_at, Verdict.id, after, descending=True))
    rows = (await session.execute(query.order_by(Verdict.given_at.desc(), Verdict.id.desc())
                                  .offset(offset).limit(wanted))).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return data.ThreadPage(_verdict_rows(rows),
                           _position(rows[0]) if rows and (offset or after) else None,
                           _position(rows[-1]) if more else None)


def _position(row: Any) -> Position:
    return row.Verdict.given_at, row.Verdict.id


def _verdict_rows(rows: Sequence[Any]) -> list[dict[str, Any]]:
    """The page's verdicts with their threads and the kinds' titles."""
    cat = data.catalog()

    def title(key: str | None) -> str | None:
        return cat.failures[key].title if key in cat.failures else key

    latest = []
    for v, t in rows:
        item = verdict_dict(v)
        item.update(repo=t.repo, number=t.number, kind=t.kind, title=t.title or "",
                    url=data.thread_url(t.repo, t.number, t.kind),
                    category_title=title(v.category),
                    analyzer_category_title=title(v.analyzer_category))
        latest.append(item)
    return latest


# --- the threads where a verdict would teach the analyzer most ---------------------------------

BAND = 0.15  # a report confidence within this of the comment threshold (either side) is uncertain
SPLIT_BONUS = 0.5  # added when the stored analysis lists more than one kind
WANTED_ROWS = 100  # threads listed (the most uncertain first, whatever their framework)
SCORE_RULE = (f"score = max(0, 1 - |confidence - threshold| / {BAND}) "
              f"+ {SPLIT_BONUS} if the analysis lists more than one kind")


async def _open_to_verdicts(session: AsyncSession) -> dict[str, str | None]:
    """The repositories where a verdict can be given (the app is installed there, and the
    installation is neither suspended nor deleted): lower-cased name -> framework id (None:
    not one of the catalog's frameworks)."""
    from bot.store.installations import silenced_installations

    silenced = await silenced_installations(session)
    rows = await session.execute(
        select(Repository.full_name, Repository.installation_id)
        .where(Repository.installation_id.is_not(None), Repository.private.is_(False)))
    return {name.lower(): framework_id(name) for name, installation in rows.all()
            if installation not in silenced}


def _score_columns(threshold: float) -> tuple[Any, Any]:
    """SQL over the analysis' stored uncertainty (`failure_confidence`, `failure_runner_up`:
    migration 0007): the uncertainty score, and the condition a thread must meet to be listed
    (the confidence in the band, or a split kind). The band is a range on the indexed
    confidence."""
    confidence = Analysis.failure_confidence
    split = Analysis.failure_runner_up.is_not(None)
    distance = func.abs(confidence - threshold)
    closeness = case((distance < BAND, 1.0 - distance / BAND), else_=0.0)
    score = closeness + case((split, SPLIT_BONUS), else_=0.0)
    in_band = (confidence > threshold - BAND) & (confidence < threshold + BAND)
    return score, or_(in_band, split)


async def wanted_verdicts(session: AsyncSession, *, framework: str | None = None,
                          limit: int = WANTED_ROWS, threshold: float | None = None
                          ) -> dict[str, Any]:
    """The open threads where a person's verdict would teach the failure analyzer most, from
    the stored analyses (nothing is analysed here): threads of repositories where the app is
    installed (a command elsewhere reaches nobody), open, not muted, with an analysis and no
    verdict, whose failure finding is uncertain: the report confidence within BAND of the
    comment threshold (`analyzers.failures.threshold()`, either side) or more than one kind
    listed. Ranked by SCORE_RULE in SQL on the analysis' stored confidence and runner-up
    (highest first; ties by repository and number), the `limit` most uncertain of all (of
    `framework`'s repositories when given), then grouped by framework for the page."""
    from analyzers.failures import threshold as comment_threshold

    t = comment_threshold() if threshold is None else threshold
    score, uncertain = _score_columns(t)
    repos = {name: key for name, key in (await _open_to_verdicts(session)).items()
             if framework is None or key == framework}
    frameworks: dict[str, list[dict[str, Any]]] = {}
    if repos:
        rows = await session.execute(
            select(Thread.repo, Thread.number, Thread.kind, Thread.title,
                   Analysis.is_failure_report, Analysis.failure_category, Analysis.analyzer_version,
                   Analysis.failure_confidence.label("confidence"),
                   Analysis.failure_runner_up.label("runner_up"), score.label("score"))
            .join(Analysis, Analysis.thread_id == Thread.id)
            .outerjoin(Verdict, Verdict.thread_id == Thread.id)
            .where(Verdict.id.is_(None), Thread.state == "open", Thread.muted.is_(False),
                   func.lower(Thread.repo).in_(list(repos)), uncertain)
            .order_by(score.desc(), Thread.repo, Thread.number)
            .limit(limit))
        for r in rows.all():
            frameworks.setdefault(repos[r.repo.lower()] or "", []).append(_wanted_row(r))
    order = sorted(frameworks, key=lambda k: (k == "", k))  # repositories of no framework last
    return {"threshold": t, "band": BAND, "split_bonus": SPLIT_BONUS, "score": SCORE_RULE,
            "limit": limit, "frameworks": [{"framework": k or None, "threads": frameworks[k]}
                                           for k in order]}


def _wanted_row(r: Any) -> dict[str, Any]:
    category = r.failure_category if r.is_failure_report else None
    kinds = [k for k in (category, r.runner_up) if k]
    commands = [f"/rltracker kind {k}" for k in kinds]
    commands += ["/rltracker kind <failure>"] if not kinds else []
    return {
        "repo": r.repo, "number": r.number, "kind": r.kind, "title": r.title or "",
        "url": data.thread_url(r.repo, r.number, r.kind),
        "page": f"/threads/{r.repo}/{r.number}",
        "analyzer_version": r.analyzer_version,
        "is_failure_report": bool(r.is_failure_report), "category": category,
        "runner_up": r.runner_up,
        "category_title": data.kind_title(category), "runner_up_title": data.kind_title(r.runner_up),
        "confidence": round(float(r.confidence), 3) if r.confidence is not None else None,
        "score": round(float(r.score), 3),
        "commands": [*commands, "/rltracker not-a-failure"],
    }


async def verdicts_page(request: web.Request) -> web.Response:
    """The figures and the verdicts, LIST_ROWS a page, paged as the thread lists are
    (`read_list_request`: Older and Newer links with cursors, a bookmarked `?page=N`)."""
    asked = read_list_request(request, "verdicts", LIST_ROWS)
    async with app_context(request).sessionmaker() as session:
        page = await verdict_page(session, **(asked.reads() if isinstance(asked, ListRequest)
                                              else {"limit": LIST_ROWS}))
        found = await _with_figures(session, page)
    if isinstance(asked, str):
        found["latest"] = []
        return render("verdicts.html", status=400, d=found, pages=None, error=asked)

    def url(n: int = 1, cursor: tuple[str, str] | None = None) -> str:
        return list_url("/verdicts", {}, n, cursor)

    status, pages, error = list_pages(asked, url, found["total"], page, "verdicts")
    if error:
        found["latest"] = []
    return render("verdicts.html", status=status, d=found, pages=pages, error=error)


async def api_verdicts(request: web.Request) -> web.Response:
    """The figures, and the verdicts latest first: `limit` (LIST_ROWS by default, at most
    MAX_ROWS) after `offset`, as every /api/ list (scale65: it gave the latest 100 and
    ignored both, so past them the JSON API could not read a verdict); X-Total-Count and
    `total` count them all."""
    paging = api_paging(request.query, default_limit=LIST_ROWS, max_limit=data.MAX_ROWS)
    if isinstance(paging, str):
        return json_response({"error": paging}, 400)
    limit, offset = paging
    async with app_context(request).sessionmaker() as session:
        found = await verdicts_data(session, limit=limit, offset=offset)
    response = json_response(found)
    response.headers["X-Total-Count"] = str(found["total"])
    return response


def setup(app: web.Application) -> None:
    """Adds /verdicts and /api/verdicts to the app."""
    app.router.add_get("/verdicts", verdicts_page)
    app.router.add_get("/api/verdicts", api_verdicts)
