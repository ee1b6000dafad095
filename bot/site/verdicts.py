"""People's verdicts on the tracker: `GET /verdicts` (HTML) and `GET /api/verdicts` (JSON).

The live agreement figure (bot.store.verdicts.agreement): how often the failure analyzer
agreed with the verdicts people gave with `/rltracker kind` and `/rltracker not-a-failure`,
per analyzer version, against what it said when each verdict was given; and the latest
verdicts (the thread, what the person said, who, and what the analyzer had said).

Logins and titles are text from GitHub: the template escapes them.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.context import app_context
from bot.site import data
from bot.site.pages import json_response, render
from bot.store.models import Thread, Verdict
from bot.store.verdicts import agreement, verdict_dict

LIST_ROWS = 100  # the latest verdicts listed (the figures count them all)


async def verdicts_data(session: AsyncSession, limit: int = LIST_ROWS) -> dict[str, Any]:
    cat = data.catalog()

    def title(key: str | None) -> str | None:
        return cat.failures[key].title if key in cat.failures else key

    rows = (await session.execute(
        select(Verdict, Thread).join(Thread, Thread.id == Verdict.thread_id)
        .order_by(Verdict.given_at.desc(), Verdict.id.desc()).limit(limit))).all()
    latest = []
    for v, t in rows:
        item = verdict_dict(v)
        item.update(repo=t.repo, number=t.number, kind=t.kind, title=t.title or "",
                    url=data.thread_url(t.repo, t.number, t.kind),
                    category_title=title(v.category),
                    analyzer_category_title=title(v.analyzer_category))
        latest.append(item)
    figures = await agreement(session)
    return {"agreement": figures, "total": figures[-1]["verdicts"], "latest": latest}


async def verdicts_page(request: web.Request) -> web.Response:
    async with app_context(request).sessionmaker() as session:
        found = await verdicts_data(session)
    return render("verdicts.html", d=found)


async def api_verdicts(request: web.Request) -> web.Response:
    async with app_context(request).sessionmaker() as session:
        return json_response(await verdicts_data(session))


def setup(app: web.Application) -> None:
    """Adds /verdicts and /api/verdicts to the app."""
    app.router.add_get("/verdicts", verdicts_page)
    app.router.add_get("/api/verdicts", api_verdicts)
