"""The tracker site: server-rendered pages (Jinja2, autoescaped, no scripts) and their JSON
twins under /api/.

Pages: /, /methods/{id}, /failures/{key}, /frameworks/{name}, /proposals (?framework, ?state,
?paper), /repos/. JSON: /api/methods[/{id}], /api/failures[/{key}], /api/frameworks[/{name}],
/api/proposals, /api/repos, /api/export.json, /api/export.csv. Unknown ids answer 404; an id
written in another case or with `_` for `-` (`/frameworks/VERL`, `/failures/Entropy-Collapse`)
answers 301 to its canonical URL.

Every response carries a Content-Security-Policy that allows no script at all, so even a
title that slipped past escaping could not run; the templates escape everything anyway. The
pages set HEADERS themselves, and `setup` adds them to every other answer of the app that has
not set its own (aiohttp's 404 for an unknown path, its 500 page when a handler raised).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web
from markupsafe import Markup, escape

from bot.context import app_context
from bot.site import data
from bot.site.api import API_PREFIX, api_cursor, api_paging, encode_cursor, next_link, read_cursor
from bot.site.progress import backfill_progress, tracking_state
from bot.store.types import Position, canonical_id, parse_count
from bot.templating import FAVICON_SVG, html_env

CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer"}
STATE_LABELS = {
    "merged": "merged", "open_no_reply": "open, no reply", "open_replied": "open, replied",
    "declined": "declined", "redirected": "redirected", "lapsed": "lapsed (stale / inactive)",
    "closed_by_author": "closed by author", "closed_other": "closed (other)", "unknown": "unknown",
}

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PROPOSALS_PAGE = 500  # rows per page of /proposals
REPORTS_PAGE = 30  # reports per page of /failures/{key}



def _rule_outline(summary: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The stored rule summary as the comment says it (analyzers.rules.rules_outline), with
    the topics an older extractor stored kept by name."""
    from analyzers.rules import rules_outline

    return rules_outline(summary, unknown=True) if summary else None


def code_spans(text: str | None, isolate: bool = False) -> Markup:
    """Our rule statements mark names with backticks: each part is escaped, and the parts
    between backticks become <code> elements. Nothing else is interpreted. `isolate`: the
    names are quoted from a repository's files (GitHub's text), each in its own <bdi>, so a
    direction override in one cannot reorder the statement's words after it."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show it as it is (isolated whole)
        return Markup("<bdi>%s</bdi>") % (text or "") if isolate else escape(text or "")
    code = Markup("<code><bdi>%s</bdi></code>") if isolate else Markup("<code>%s</code>")
    out = [escape(p) if i % 2 == 0 else code % p for i, p in enumerate(parts)]
    return Markup("").join(out)


def render(template: str, status: int = 200, **context: Any) -> web.Response:
    env = html_env()
    env.globals.setdefault("state_labels", STATE_LABELS)
    env.globals.setdefault("framework_names", framework_names())  # id -> "TRL", "NeMo-RL"
    env.globals.setdefault("concern_title", data.concern_title)
    env.globals.setdefault("concern_meaning", data.concern_meaning)
    env.filters.setdefault("code_spans", code_spans)
    body = env.get_template(f"site/{template}").render(**context)
    return web.Response(text=body, status=status, content_type="text/html", charset="utf-8",
                        headers=HEADERS)


def not_found(what: str, missing: Mapping[str, Any] | None = None) -> web.Response:
    """The site's 404 page, "No such `what`"; `missing` a thread of a tracked repository that
    is not stored, with its address on GitHub (`bot.site.threads.not_stored`)."""
    return render("not_found.html", status=404, what=what, missing=missing)


def json_response(value: Any, status: int = 200) -> web.Response:
    return web.json_response(value, status=status, headers=HEADERS)


def framework_names() -> dict[str, str]:
    """Framework id -> display name: `NeMo-RL` as the pages write it finds `nemo-rl`."""
    return {k: f.name for k, f in data.catalog().frameworks.items()}


def method_names() -> dict[str, str]:
    """Method id -> display name: `GSPO` as the pages write it finds `gspo`."""
    return {k: m.name for k, m in data.catalog().methods.items()}


def moved_to(request: web.Request, key: str, ids: Mapping[str, Any],
             names: Mapping[str, str] | None = None) -> web.Response | None:
    """A 301 to the same route with the canonical spelling of the `key` segment when it is
    not an id of `ids` but means one (old links and hand-typed URLs: /frameworks/VERL ->
    /frameworks/verl), else None."""
    typed = request.match_info[key]
    found = None if typed in ids else canonical_id(typed, ids, names)
    if found is None:
        return None
    route = request.match_info.route.resource
    assert route is not None
    location = str(route.url_for(**{**request.match_info, key: found}))
    # The query as it was sent: `with_query(request.query_string)` encoded the decoded
    # string again, so a%26b (a value holding "&") became a%2526b.
    # (What is not allowed in a URL, such as < or ", is percent-encoded; escapes are kept.)
    if request.rel_url.raw_query_string:
        location += "?" + quote(request.rel_url.raw_query_string, safe="!$%&'()*+,/:;=?@~")
    return web.Response(status=301, headers={**HEADERS, "Location": location})


def _framework_moved(request: web.Request) -> web.Response | None:
    return moved_to(request, "name", data.catalog().frameworks, framework_names())


def _method_moved(request: web.Request) -> web.Response | None:
    return moved_to(request, "id", data.catalog().methods)


def failure_moved(request: web.Request) -> web.Response | None:
    return moved_to(request, "key", data.catalog().failures)


def proposal_filters(request: web.Request) -> tuple[dict[str, str | None], dict[str, str]]:
    """framework / state / paper from the query string (a value that names none: None), and
    what was wrong with each value dropped, by its filter (the form field the page ties the
    notice to: leftb65), empty when none was."""
    q = request.query
    # A filter given twice with two values (framework=verl&framework=trl) was read as its first,
    # the second dropped without a word: a list of one framework answered as if of both. It is
    # refused as a bad value is (the same value twice, in any case, is that value).
    several = {name: values for name in ("framework", "state", "paper")
               if len(values := list(dict.fromkeys(v.strip() for v in q.getall(name, []) if v.strip()))) > 1
               and len({v.lower() for v in values}) > 1}
    framework = None if "framework" in several else (q.get("framework") or "").strip() or None
    state = None if "state" in several else (q.get("state") or "").strip() or None
    paper = None if "paper" in several else (q.get("paper") or "").strip()[:200] or None
    if paper:
        # "arXiv:2503.14476", an arxiv.org or alphaxiv link, or a bare id: the id; else a
        # catalog method id as typed.
        from analyzers.arxiv import find_arxiv_ids

        ids = find_arxiv_ids(paper)
        # A method as its name is written (GSPO) is the catalog's id: the filter's LIKE
        # ignores ASCII case on SQLite only, so it matched there and not on PostgreSQL.
        methods = data.catalog().methods
        paper = ids[0] if ids else (
            paper if paper in methods else canonical_id(paper, methods, method_names()) or paper[:64])
    # A bad value is dropped and named, the other filters kept (left64: one bad value
    # emptied the whole form, the valid framework with it).
    dropped: dict[str, str] = {
        name: f"one {name} at a time: " + ", ".join(v[:64] for v in values[:5])
        + (", …" if len(values) > 5 else "") + " given"
        for name, values in several.items()}
    frameworks = data.catalog().frameworks
    if framework and framework not in frameworks:
        framework = canonical_id(framework, frameworks, framework_names()) or (
            _framework_of_repo(framework) if "/" in framework else None) or framework
    if framework and framework not in frameworks:
        dropped["framework"] = (f"{framework} is not a tracked framework's repository"
                                if "/" in framework else f"unknown framework: {framework}")
        framework = None
    if state and state not in data.REVIEW_STATES:
        state = canonical_id(state, data.REVIEW_STATES) or state  # Merged, open-no-reply
    if state and state not in data.REVIEW_STATES:
        dropped["state"] = f"unknown state: {state}"
        state = None
    return {"framework": framework, "state": state, "paper": paper}, dropped


def _framework_of_repo(name: str) -> str | None:
    """The framework whose repository (or a former name of it) is `name`, any case:
    `framework=verl-project/verl` as the pages write repositories."""
    wanted = name.strip().lower()
    return next((fid for fid, f in data.catalog().frameworks.items()
                 if wanted in (r.lower() for r in f.repos)), None)


async def _session_call(request: web.Request, fn: Callable[..., Awaitable[Any]], *args: Any,
                        **kwargs: Any) -> Any:
    async with app_context(request).sessionmaker() as session:
        return await fn(session, *args, **kwargs)


async def render_page(request: web.Request, template: str, status: int = 200,
                      **context: Any) -> web.Response:
    """`render` for pages with lists that may be empty: they say what would fill them."""
    tracking = await _session_call(request, tracking_state, app_context(request).settings)
    return render(template, status, tracking=tracking, **context)


# --- pages -----------------------------------------------------------------------------------


async def index(request: web.Request) -> web.Response:
    # While the first backfill runs the page reloads itself every 10 s, for hours: each
    # reload takes a keyboard or screen reader user back to the top (WCAG 2.2.1), so the
    # page links to itself without the reload, `?reload=off`.
    return await render_page(request, "index.html", backfill=await _session_call(request, backfill_progress),
                             reload=request.query.get("reload") != "off",
                             **await _session_call(request, data.index_data))


async def method_page(request: web.Request) -> web.Response:
    if moved := _method_moved(request):
        return moved
    key = request.match_info["id"]
    return await _thread_list_page(
        request, data.method_data, key, f"/methods/{quote(key)}", data.LIST_ROWS,
        template="method.html", name="m", rows="threads", total="threads_total",
        things="threads", missing="method")


async def failure_page(request: web.Request) -> web.Response:
    if moved := failure_moved(request):
        return moved
    key = request.match_info["key"]
    return await _thread_list_page(
        request, data.failure_data, key, f"/failures/{quote(key)}", REPORTS_PAGE,
        template="failure.html", name="d", rows="recent_reports", total="reports_total",
        things="reports", missing="failure kind")


async def _thread_list_page(request: web.Request, load: Callable[..., Awaitable[Any]], key: str,
                            path: str, per_page: int, *, template: str, name: str, rows: str,
                            total: str, things: str, missing: str) -> web.Response:
    """A page with a paged list of threads (a method's, a failure kind's): `load` gives its
    data (`name` in the template; the list under `rows`, its count under `total`) and the
    page of threads asked for (`read_list_request`), or None for an unknown `key` (404)."""
    asked = read_list_request(request, "threads", per_page)
    found = await _session_call(request, load, key, **(
        asked.reads() if isinstance(asked, ListRequest) else {"limit": per_page}))
    if found is None:
        return not_found(missing)
    shown, threads = found
    context = {name: shown, "frameworks": data.catalog().frameworks}
    if isinstance(asked, str):
        shown[rows] = []
        return await render_page(request, template, status=400, pages=None, error=asked,
                                 **context)

    def url(n: int = 1, cursor: tuple[str, str] | None = None) -> str:
        return list_url(path, {}, n, cursor)

    status, pages, error = list_pages(asked, url, shown[total], threads, things)
    if error:
        shown[rows] = []
    return await render_page(request, template, status=status, error=error, pages=pages,
                             **context)


PAGE_ERROR = "page must be a whole number from 1"
CURSOR_ERROR = ("after and before must be a cursor of this list's Older or Newer link, one "
                "of them, without page")


@dataclass(frozen=True)
class ListRequest:
    """Which page of a thread list was asked for: by number (`?page=N`, read by offset: the
    page numbers bookmarked before the lists paged by cursor), or after or before a thread
    (`?after=` / `?before=`, the cursors the Older and Newer links carry: read by the
    threads' date index from there, however deep)."""

    kind: str  # the cursor's list (read_cursor)
    per_page: int
    number: int  # the page number (1 when a cursor is given)
    shown: str  # how a notice names the page number typed
    cursor: tuple[str, Position] | None  # ("after" | "before", position)

    def reads(self) -> dict[str, Any]:
        """`data.thread_page`'s arguments for this page."""
        if self.cursor is None:
            return {"limit": self.per_page, "offset": (self.number - 1) * self.per_page}
        return {"limit": self.per_page, self.cursor[0]: self.cursor[1]}


def read_list_request(request: web.Request, kind: str, per_page: int) -> ListRequest | str:
    """The page of list `kind` the query string asks for, or the message of its 400."""
    typed = read_page(request)
    if typed is None:
        return PAGE_ERROR
    after = (request.query.get("after") or "").strip()
    before = (request.query.get("before") or "").strip()
    if not after and not before:
        return ListRequest(kind, per_page, typed[0], typed[1], None)
    if (after and before) or "page" in request.query:
        return CURSOR_ERROR
    direction, token = ("after", after) if after else ("before", before)
    position = read_cursor(token, kind)
    if position is None:
        return CURSOR_ERROR
    return ListRequest(kind, per_page, 1, "", (direction, position))


def list_pages(asked: ListRequest, url: Callable[..., str], total: int,
               page: data.ThreadPage, things: str
               ) -> tuple[int, dict[str, Any], str | None]:
    """The status, the pager (`_pager.html`) and the error of a thread list's page: its
    Newer and Older links carry the cursors of its first and last rows (the page 2 before
    it is page 1's plain address); a page number past the last page, or a cursor past
    which nothing is left (the list changed since the link was made), is a 404 linking
    back."""
    if asked.cursor is None and (last := past_last_page(asked.number, total,
                                                          asked.per_page)) is not None:
        return 404, pager(url, last, total, 0, 0, past=True), (
            f"page {asked.shown} is past the last page of these {things} ({last})")
    if asked.cursor is not None and not page.rows:
        return 404, pager(url, 1, total, 0, 0, past=True), (
            f"none of these {things} is left past that link (the list changed since): "
            "the first page")
    numbered = asked.cursor is None
    offset = (asked.number - 1) * asked.per_page
    previous = None
    if page.newer is not None:
        previous = (url(1) if numbered and asked.number == 2
                    else url(cursor=("before", encode_cursor(asked.kind, page.newer))))
    return 200, {
        "total": total, "shown": len(page.rows),
        # the rows' places when the page was asked by number (a cursor's page says only
        # how many it shows: counting the rows before it is what the cursor spares)
        "first": offset + 1 if numbered else None,
        "last": offset + len(page.rows) if numbered else None,
        "previous": previous,
        "next": (url(cursor=("after", encode_cursor(asked.kind, page.older)))
                 if page.older is not None else None),
    }, None


def list_url(path: str, query: Mapping[str, str | None], page: int = 1,
             cursor: tuple[str, str] | None = None) -> str:
    """`path` with the list's filters (`query`, empty values left out) and a page: its
    number (none for 1) or a cursor ("after" or "before", the token)."""
    params = {k: v for k, v in query.items() if v}
    if cursor is not None:
        params[cursor[0]] = cursor[1]
    elif page > 1:
        params["page"] = str(page)
    return path + ("?" + urlencode(params) if params else "")


def read_page(request: web.Request) -> tuple[int, str] | None:
    """The `?page=` of a paged page (1 when absent): the page number and how a notice names
    it; None when it is not a page number (a 400). A number of ten digits or more is a page
    number still (past the last page, a 404), and leading zeros say nothing (0000000003 is 3)."""
    typed = (request.query.get("page") or "").strip()
    page = parse_count(typed, 1)
    digits = typed.lstrip("0")
    if page is None and typed.isascii() and typed.isdigit() and digits:
        return (int(digits) if len(digits) < 10 else 10 ** 9), _shown_number(typed)
    return (page, str(page)) if page else None


def past_last_page(page: int, total: int, per_page: int) -> int | None:
    """The last page when `page` is past it (an old link after the data changed: a 404 with
    a link back to the last one), else None."""
    if page > 1 and (page - 1) * per_page >= total:
        return max(1, -(-total // per_page))
    return None


def pager(url: Callable[[int], str], page: int, total: int, offset: int, shown: int,
          past: bool = False) -> dict[str, Any]:
    """What a paged list says of its page (`_pager.html`): rows `first`-`last` of `total`, and
    the links to the newer and older pages; `past`: `page` is the last page, linked back to."""
    if past:
        return {"total": total, "first": 0, "last": 0, "previous": url(page), "next": None}
    return {"total": total, "first": offset + 1, "last": offset + shown,
            "previous": url(page - 1) if page > 1 else None,
            "next": url(page + 1) if offset + shown < total else None}


async def framework_page(request: web.Request) -> web.Response:
    if moved := _framework_moved(request):
        return moved
    found = await _session_call(request, data.framework_data, request.match_info["name"])
    if found is None:
        return not_found("framework")
    return await render_page(request, "framework.html", d=found, outline=_rule_outline(found["rules"]),
                  frameworks=data.catalog().frameworks)


async def proposals_page(request: web.Request) -> web.Response:
    filters, ignored = proposal_filters(request)
    asked = read_list_request(request, "proposals", PROPOSALS_PAGE)
    context = {"filters": filters, "frameworks": data.catalog().frameworks,
               "states": data.REVIEW_STATES, "ignored": ignored}
    if isinstance(asked, str):
        return await render_page(request, "proposals.html", status=400, rows=[], error=asked,
                                 pages=None, **context)
    total = await _session_call(request, data.count_threads, proposals=True, **filters)

    def url(n: int = 1, cursor: tuple[str, str] | None = None) -> str:
        return proposals_url(filters, n, cursor)

    if asked.cursor is None and past_last_page(asked.number, total, PROPOSALS_PAGE):
        page = data.ThreadPage([], None, None)  # (not read: list_pages says which is last)
    else:
        page = await _session_call(request, data.thread_page, proposals=True, **asked.reads(),
                                   **filters)
    status, pages, error = list_pages(asked, url, total, page, "proposals")
    # (a bad filter value: the page of the others, still a 400: the URL is bad)
    if status == 200 and ignored:
        status = 400
    return await render_page(request, "proposals.html", status=status, rows=page.rows,
                             error=error, pages=pages, **context)


def _shown_number(typed: str) -> str:
    """A number of any length typed into a URL, as a page says it (at most 30 digits)."""
    digits = typed.lstrip("0")
    return digits if len(digits) <= 30 else digits[:30] + "…"


def proposals_url(filters: Mapping[str, str | None], page: int = 1,
                  cursor: tuple[str, str] | None = None) -> str:
    """/proposals with the same filters, on another page (`list_url`)."""
    return list_url("/proposals", filters, page, cursor)


def _to_index_section(section: str) -> Handler:
    """/frameworks/, /methods/ and /failures/ with no id: the front page lists them."""
    async def handler(request: web.Request) -> web.Response:
        raise web.HTTPFound(f"/#{section}")
    return handler


async def repos_without_slash(request: web.Request) -> web.Response:
    """/repos as typed by analogy with /proposals and /study: the page is /repos/."""
    location = "/repos/"
    if request.rel_url.raw_query_string:
        location += "?" + quote(request.rel_url.raw_query_string, safe="!$%&'()*+,/:;=?@~")
    return web.Response(status=301, headers={**HEADERS, "Location": location})


async def repos_page(request: web.Request) -> web.Response:
    return await render_page(request, "repos.html", repos=await _session_call(request, data.reception))


# --- JSON ------------------------------------------------------------------------------------


async def api_methods(request: web.Request) -> web.Response:
    cat = data.catalog()
    return json_response([data.method_dict(m, list(cat.frameworks)) for m in cat.methods.values()])


async def _item_with_threads(request: web.Request, fetch: Callable[..., Awaitable[Any]], key: str, *,
                             default_limit: int, total_key: str, missing: str) -> web.Response:
    """One catalog item and its threads (`fetch`: data.method_data, data.failure_data), paged
    as every /api/ list: `limit` (`default_limit` by default, at most MAX_ROWS) after
    `offset`; X-Total-Count counts them all (`total_key`); `missing`: the 404's message."""
    paging = api_paging(request.query, default_limit=default_limit, max_limit=data.MAX_ROWS)
    if isinstance(paging, str):
        return json_response({"error": paging}, 400)
    limit, offset = paging
    found = await _session_call(request, fetch, key, limit=limit, offset=offset)
    if not found:
        return json_response({"error": missing}, 404)
    response = json_response(found[0])
    response.headers["X-Total-Count"] = str(found[0][total_key])
    return response


async def api_method(request: web.Request) -> web.Response:
    """A method and the threads naming it, newest first (LIST_ROWS a page by default)."""
    if moved := _method_moved(request):
        return moved
    return await _item_with_threads(request, data.method_data, request.match_info["id"],
                                    default_limit=data.LIST_ROWS, total_key="threads_total",
                                    missing="no such method")


async def api_failures(request: web.Request) -> web.Response:
    cat = data.catalog()
    return json_response([
        dict(data.failure_dict(f), methods=[m.id for m in cat.methods_for_failure(f.key)])
        for f in cat.failures.values()
    ])


async def api_failure(request: web.Request) -> web.Response:
    """A failure kind and its reports, newest first (REPORTS_PAGE a page by default)."""
    if moved := failure_moved(request):
        return moved
    return await _item_with_threads(request, data.failure_data, request.match_info["key"],
                                    default_limit=REPORTS_PAGE, total_key="reports_total",
                                    missing="no such failure kind")


async def api_frameworks(request: web.Request) -> web.Response:
    # (the frameworks alone: it read the front page's recent failure reports and dropped them)
    return json_response(await _session_call(request, data.frameworks_data))


async def api_framework(request: web.Request) -> web.Response:
    if moved := _framework_moved(request):
        return moved
    found = await _session_call(request, data.framework_data, request.match_info["name"])
    return json_response(found) if found else json_response({"error": "no such framework"}, 404)


async def api_proposals(request: web.Request) -> web.Response:
    """The proposals the filters name, newest first: `limit` (at most MAX_ROWS, the default)
    after `offset`, or after the `after` cursor of the Link header's next page (read from
    there by the date index, however deep); the X-Total-Count header counts them all."""
    filters, dropped = proposal_filters(request)
    error = "; ".join(dropped.values())
    paging = api_paging(request.query, default_limit=data.MAX_ROWS, max_limit=data.MAX_ROWS)
    after = api_cursor(request.query, "proposals")
    if error or isinstance(paging, str) or isinstance(after, str):
        return json_response({"error": error or (paging if isinstance(paging, str) else after)},
                             400)
    limit, offset = paging
    async with app_context(request).sessionmaker() as session:
        total = await data.count_threads(session, proposals=True, **filters)
        page = await data.thread_page(session, proposals=True, limit=limit, offset=offset,
                                      after=after, **filters)
    response = json_response(page.rows)
    response.headers["X-Total-Count"] = str(total)
    response.headers.update(next_link(request, "proposals", page.older))
    return response


async def api_repos(request: web.Request) -> web.Response:
    return json_response(await _session_call(request, data.reception))


async def api_export_json(request: web.Request) -> web.StreamResponse:
    from bot.site.exports import serve_export

    return await serve_export(request, as_csv=False, headers=HEADERS)


async def api_export_csv(request: web.Request) -> web.StreamResponse:
    from bot.site.exports import serve_export

    return await serve_export(request, as_csv=True, headers=HEADERS)


async def _security_headers(request: web.Request, response: web.StreamResponse) -> None:
    """HEADERS on an answer that did not set its own: aiohttp's own 404 and 405, and the
    HTML 500 page it sends a browser when a handler raised, went out with none."""
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)


@web.middleware
async def _page_not_found(request: web.Request, handler: Handler) -> web.StreamResponse:
    """A path no route has, read with GET or HEAD outside /api/ (a trailing slash, a typo):
    the site's "Not found" page, not aiohttp's bare text with no way back to the site. A
    method a route does not take outside /api/ (`GET /webhook` typed into a browser, a form
    sent to a page): the site's "Method not allowed" page, its Allow header kept."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        if request.method not in ("GET", "HEAD") or request.path.startswith(API_PREFIX) \
                or request.match_info.route.resource is not None:
            raise
        return not_found("page")
    except web.HTTPMethodNotAllowed as error:
        if request.path.startswith(API_PREFIX):
            raise
        allowed = sorted(error.allowed_methods, key=lambda m: (m != "GET", m))
        response = render("not_allowed.html", status=405, allowed=allowed,
                          method=request.method)
        response.headers["Allow"] = error.headers.get("Allow", ",".join(allowed))
        return response


async def favicon(request: web.Request) -> web.Response:
    """The site's icon (bot.templating.FAVICON_SVG), for whoever asks /favicon.ico."""
    return web.Response(text=FAVICON_SVG, content_type="image/svg+xml",
                        headers={"Cache-Control": "public, max-age=86400"})


def setup(app: web.Application) -> None:
    """Adds the tracker pages and their JSON routes to the app, HEADERS to every answer, and
    the site's "Not found" page to a path no route has."""
    app.on_response_prepare.append(_security_headers)
    app.middlewares.append(_page_not_found)
    routes: list[tuple[str, Handler]] = [
        ("/", index),
        ("/favicon.ico", favicon),
        ("/methods/{id}", method_page),
        ("/failures/{key}", failure_page),
        ("/frameworks/{name}", framework_page),
        *((f"/{section}{slash}", _to_index_section(section))
          for section in ("frameworks", "methods", "failures") for slash in ("", "/")),
        ("/proposals", proposals_page),
        ("/repos/", repos_page),
        ("/repos", repos_without_slash),
        ("/api/methods", api_methods),
        ("/api/methods/{id}", api_method),
        ("/api/failures", api_failures),
        ("/api/failures/{key}", api_failure),
        ("/api/frameworks", api_frameworks),
        ("/api/frameworks/{name}", api_framework),
        ("/api/proposals", api_proposals),
        ("/api/repos", api_repos),
        ("/api/export.json", api_export_json),
        ("/api/export.csv", api_export_csv),
    ]
    for path, handler in routes:
        app.router.add_get(path, handler)
