"""Atom feeds (RFC 4287) of what three pages list, to subscribe to instead of visiting them:

- `/reports/feed.atom`: the nightly proposal-status reports, newest first (at most FEED_ROWS),
  each linking to its page and saying the night's counts as the reports list does;
- `/proposals.atom`: the proposals `/proposals` lists, with its filters read by its own
  parser (`pages.proposal_filters`; a bad value is the page's 400), the most recently changed first;
- `/failures/{key}.atom`: the failure reports `/failures/{key}` lists, newest first (an
  unknown kind is the page's 404, another spelling of one the page's 301).

The threads are read with the pages' own query parts (`data.tracked_only`, `data.thread_filters`,
`data.summary_row`): the same threads, so nothing of a repository made private or forgotten (its
rows are deleted, bot/store/privacy.py) can appear. A proposal's `updated` is the later of
the thread's last activity on GitHub (`threads.updated_at`, else its opening) and the last
change of its stored review state (`analyses.review_state_changed_at`: a nightly re-analysis
under a new analyzer version can read a close otherwise, with no activity; `analyzed_at`
moves at every re-analysis, changed or not), else when the tracker stored it; a failure
report's is its opening (`published` too).

Ids are the pages' absolute addresses under the configured public URL (`settings.public_url`,
the one the app's comments link with): the same on every run and every database. A thread's
is its page under the name and number it was first stored under (`threads.first_repo`,
migration 0022; `first_number`, 0023): a renamed or moved repository's entries, and an issue
transferred to another repository, keep their ids, and the page answers there
(`data.find_thread`); the entry links the page under the current name. A thread first stored
under a name another repository held before adds `?repository={its GitHub id}` (0023). Titles are
GitHub's text: written by the autoescaping template engine, without control characters and
isolated as a page's `<title>` is (`plain_title`), and the characters XML forbids that a
page's cleaning leaves (lone surrogates, U+FFFE, U+FFFF) are dropped from the document.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from aiohttp import web
from markupsafe import Markup
from sqlalchemy import case, func, select

from bot.context import app_context
from bot.site import data, pages
from bot.store.models import Analysis, Thread
from bot.store.types import format_datetime, parse_datetime
from bot.templating import html_env, without_direction_controls

FEED_ROWS = 50  # entries in a feed
ATOM = "application/atom+xml"
# An empty feed's `updated`: nothing in it ever changed (RFC 4287 wants a date).
NEVER = "1970-01-01T00:00:00Z"
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _base(request: web.Request) -> str:
    return str(app_context(request).settings.public_url).rstrip("/")


def atom(feed: dict[str, Any], entries: list[dict[str, Any]], *, dated: bool = False
         ) -> web.Response:
    """The feed document: `feed` (id, text_title, page, base: the public URL) and its
    `entries` (id, title (GitHub's) or text_title (ours), link, related, updated,
    published, summary, terms), its `updated` the latest entry's (NEVER when empty).
    `dated`: that `updated` bounds every change of the feed, and is its Last-Modified
    (bot.site.conditional reads If-Modified-Since against it)."""
    updated = max((e["updated"] for e in entries), default=NEVER)
    body = html_env().get_template("feeds/feed.atom.j2").render(
        feed=feed, entries=entries, updated=updated)
    response = web.Response(text=_NOT_XML.sub("", body), content_type=ATOM, charset="utf-8",
                            headers=pages.HEADERS)
    if dated and entries:
        response.last_modified = parse_datetime(updated)
    return response


# When a thread's entry last changed: its last activity on GitHub (else its opening) or the
# last change of its stored review state (a re-analysis reading the thread otherwise), the later.
_ACTIVITY = func.coalesce(Thread.updated_at, Thread.created_at)
_CHANGED = case((Analysis.review_state_changed_at > _ACTIVITY, Analysis.review_state_changed_at),
                else_=func.coalesce(_ACTIVITY, Analysis.review_state_changed_at))


async def _threads(request: web.Request, *, by_change: bool, **filters: Any
                   ) -> list[dict[str, Any]]:
    """The first FEED_ROWS thread summaries `filters` name (`data.thread_filters`, as the
    pages), the most recently changed first (`_CHANGED`) or (`by_change` false) newest first
    as the pages list them, each with `changed_at`, `stored_at` and its entry id's parts
    (`first_repo`, `first_number`, `first_repo_id`)."""
    columns = [*data.thread_columns(), _CHANGED.label("changed_at"),
               Thread.stored_at.label("stored_at"),
               func.coalesce(Thread.first_repo, Thread.repo).label("first_repo"),
               func.coalesce(Thread.first_number, Thread.number).label("first_number"),
               Thread.first_repo_id.label("first_repo_id")]
    query = data.thread_filters(data.tracked_only(select(*columns).select_from(Thread)), **filters)
    when = _CHANGED if by_change else Thread.created_at
    query = query.order_by(when.desc().nulls_last(), Thread.id.desc()).limit(FEED_ROWS)
    async with app_context(request).sessionmaker() as session:
        rows = (await session.execute(query)).all()
    return [{**data.summary_row(r), "changed_at": format_datetime(r.changed_at),
             "stored_at": format_datetime(r.stored_at), "first_repo": r.first_repo,
             "first_number": r.first_number, "first_repo_id": r.first_repo_id}
            for r in rows]


def _thread_entry(base: str, row: dict[str, Any], updated: str, summary: str,
                  terms: list[str]) -> dict[str, Any]:
    """The entry of a thread: its id the thread page under the name and number it was first
    stored under (the page answers there), the same after its repository is renamed or moved
    and after the thread is transferred; a thread first stored under a name another
    repository had held (`first_repo_id`) adds that repository's id, apart from the older
    thread's; its link the page under the current name and number."""
    page = f"{base}/threads/{row['repo']}/{row['number']}"
    entry_id = f"{base}/threads/{row['first_repo']}/{row['first_number']}"
    if row.get("first_repo_id") is not None:
        entry_id += f"?repository={int(row['first_repo_id'])}"
    return {"id": entry_id, "title": row["title"],
            "link": page, "related": row["url"], "updated": updated,
            "published": row["created_at"], "summary": summary, "terms": [t for t in terms if t]}


def _where(row: dict[str, Any]) -> str:
    """`owner/repo#N` in an entry's plain-text summary, without direction controls (a name
    GitHub allows holds none; a stored or imported one could, and would reorder the summary's
    words after it: no markup isolates it in text)."""
    kind = "" if row["kind"] == "issue" else f" ({row['kind'].replace('_', ' ')})"
    return f"{without_direction_controls(row['repo'])}#{row['number']}{kind}"


# --- the feeds -------------------------------------------------------------------------------


async def reports_feed(request: web.Request) -> web.Response:
    from bot.site.report_pages import change_titles, report_list

    base = _base(request)
    async with app_context(request).sessionmaker() as session:
        reports = await report_list(session, limit=FEED_ROWS)
    changes = html_env().get_template("reports/_changes.html.j2").module
    entries = [{
        "id": f"{base}/reports/{r['date']}", "text_title": f"Proposal status, {r['date']}",
        "link": f"{base}/reports/{r['date']}", "related": None,
        "updated": r["created_at"] or f"{r['date']}T00:00:00Z", "published": None,
        "summary": Markup(str(changes.changes(r, change_titles()))).striptags(), "terms": [],
    } for r in reports]
    # A night's entry moves when its report is built again, and reports are not deleted: the
    # newest storing bounds every change of this feed (the thread feeds have no such date).
    return atom({"id": f"{base}/reports/feed.atom", "text_title": "Nightly proposal-status reports",
                 "page": f"{base}/reports/", "base": base}, entries, dated=True)


async def proposals_feed(request: web.Request) -> web.Response:
    filters, dropped = pages.proposal_filters(request)
    if dropped:
        return await pages.proposals_page(request)  # the page's 400, saying what was wrong
    base = _base(request)
    page = pages.proposals_url(filters, 1)  # /proposals?framework=…: the filters in one order
    rows = await _threads(request, by_change=True, proposals=True, **filters)
    labels = pages.STATE_LABELS
    entries = [_thread_entry(
        base, r, r["changed_at"] or r["stored_at"] or NEVER,
        f"{_where(r)}: {labels.get(r['review_state'] or 'unknown', r['review_state'])}"
        + (f", {data.catalog().frameworks[r['framework']].name}" if r["framework"] else ""),
        [r["review_state"], r["framework"]]) for r in rows]
    return atom({"id": base + page.replace("/proposals", "/proposals.atom", 1),
                 "text_title": _page_title("proposals.html", filters=filters,
                                           frameworks=data.catalog().frameworks),
                 "page": base + page, "base": base}, entries)


async def failure_feed(request: web.Request) -> web.Response:
    if moved := pages.failure_moved(request):
        return moved
    key = request.match_info["key"]
    failure = data.catalog().failures.get(key)
    if failure is None:
        return pages.not_found("failure kind")
    base = _base(request)
    rows = await _threads(request, by_change=False, failures=True, category=key)
    entries = [_thread_entry(
        base, r, r["created_at"] or r["stored_at"] or NEVER,
        f"{_where(r)}: reported {failure.title}"
        + (f" (set by a person, {r['failure_set_by']})" if r["failure_set_by"] else ""),
        [key, r["framework"]]) for r in rows]
    return atom({"id": f"{base}/failures/{quote(key)}.atom",
                 "text_title": f"Failure reports: {failure.title}",
                 "page": f"{base}/failures/{quote(key)}", "base": base}, entries)


def _page_title(template: str, **context: Any) -> Markup:
    """The `title` block of a page's template, as the page's `<title>` words it (a filtered
    list of proposals names its filters): escaped already."""
    env = html_env()
    env.globals.setdefault("state_labels", pages.STATE_LABELS)
    page = env.get_template(f"site/{template}")
    return Markup("".join(page.blocks["title"](page.new_context(context))))


def setup(app: web.Application) -> None:
    """Adds the feeds. Before the pages' routes: `/failures/{key}` and `/reports/{date}`
    would take `/failures/x.atom` and `/reports/feed.atom` otherwise."""
    app.router.add_get("/reports/feed.atom", reports_feed)
    app.router.add_get("/proposals.atom", proposals_feed)
    app.router.add_get("/failures/{key}.atom", failure_feed)
