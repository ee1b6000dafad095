"""The nightly reports on the tracker site: GET /reports/ (list) and /reports/{date}."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web
from sqlalchemy import select

from bot.context import app_context
from bot.site.pages import HEADERS
from bot.store.models import Report, report_summary
from bot.store.types import format_datetime

_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")



def _html(text: str, status: int = 200) -> web.Response:
    # The pages show thread titles: the tracker pages' headers (no script may run).
    return web.Response(text=text, status=status, content_type="text/html", charset="utf-8",
                        headers=HEADERS)


async def report_list(session: Any, limit: int | None = None) -> list[dict[str, Any]]:
    """The reports newest first (the first `limit`): each night's date, whether it is a
    baseline, its totals by change (new landings among them) and when it was stored; the
    list page and the reports feed (bot.site.feeds)."""
    # The date, baseline and totals of each night, from its summary (migration 0019), not its
    # data: that holds the snapshot of every tracked thread (a megabyte or more a night), and
    # even `data -> 'totals'` had the database parse all of it, for each night of a year.
    rows = (await session.execute(
        select(Report.date, Report.summary, Report.created_at)
        .order_by(Report.date.desc()).limit(limit))).all()
    summaries = {r.date: r.summary for r in rows}
    stored = {r.date: r.created_at for r in rows}
    missing = [day for day, summary in summaries.items() if summary is None]
    if missing:  # a row written without one (by hand, an older release beside this one)
        for r in (await session.execute(
                select(Report.date, Report.data["baseline"].label("baseline"),
                       Report.data["totals"].label("totals"),
                       Report.data["new_landings"].label("new_landings"))
                .where(Report.date.in_(missing)))).all():
            summaries[r.date] = report_summary(
                {"baseline": r.baseline, "totals": r.totals, "new_landings": r.new_landings})
    # A night's new landings are news too (the report lists them); they are not in `totals`.
    return [{"date": day, "baseline": bool(s["baseline"]),
             "totals": {**(s["totals"] or {}), "new_landings": s["new_landings"] or 0},
             "created_at": format_datetime(stored[day])}
            for day, s in summaries.items()]


def change_titles() -> dict[str, str]:
    """The titles of a night's totals (`report_list`), for `reports/_changes.html.j2`."""
    from bot.site.report import CHANGE_TITLES

    return {**CHANGE_TITLES, "new_landings": "New landings"}


async def reports_index(request: web.Request) -> web.Response:
    from bot.templating import html_env

    async with app_context(request).sessionmaker() as session:
        reports = await report_list(session)
    return _html(html_env().get_template("reports/list.html.j2").render(
        reports=reports, titles=change_titles()))


async def report_page(request: web.Request) -> web.Response:
    from bot.site.report import render_html, shown_data
    from bot.templating import html_env

    day = request.match_info["date"]
    row = data = None
    if _DATE.match(day):
        async with app_context(request).sessionmaker() as session:
            row = await session.scalar(select(Report).where(Report.date == day))
            data = await shown_data(session, row.data) if row is not None else None
    if row is None or data is None:
        try:
            page = html_env().get_template("site/not_found.html").render(what="report")
        except Exception:  # noqa: BLE001 - the site's template may expect other names
            page = f"<!doctype html><title>Not found</title><p>No report for {day!s:.10}.</p>"
        return _html(page, status=404)
    return _html(render_html(data))


async def report_markdown(request: web.Request) -> web.Response:
    day = request.match_info["date"]
    # The Markdown alone: the row's data holds the snapshot of every tracked thread.
    async with app_context(request).sessionmaker() as session:
        markdown = await session.scalar(
            select(Report.markdown).where(Report.date == day)) if _DATE.match(day) else None
    if markdown is None:
        raise web.HTTPNotFound()
    return web.Response(text=markdown, content_type="text/markdown", charset="utf-8",
                        headers=HEADERS)


def setup(app: web.Application) -> None:
    """Adds this module's routes to the app."""
    app.router.add_get("/reports/", reports_index)
    app.router.add_get("/reports", reports_index)
    app.router.add_get("/reports/{date}.md", report_markdown)
    app.router.add_get("/reports/{date}", report_page)
