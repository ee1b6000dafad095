"""Export of the tracked data: every analysed thread with its findings, as JSON and as CSV
(`GET /api/export.json`, `GET /api/export.csv`).

The failure columns are the finding the tracker shows (a person's verdict where there is one:
`failure_set_by` names their role, and there is no model confidence then); the analyzer's own
finding is kept beside it (`analyzer_failure` in JSON, `analyzer_*` columns in CSV).

Both are written as they are read: the ids of the threads first (oldest first, `oldest_first`),
then their rows a batch at a time, each batch in a short session of its own, so neither the
server's memory nor a database connection is held for the whole download. `limit` and `offset`
page them as every /api/ list (`api_paging`); without either the export is whole. A thread
deleted while an export is written is left out; one stored meanwhile is not in it.

Thread titles are third-party text: in CSV a cell that starts with =, +, - or @ (or a tab or
carriage return) is prefixed with an apostrophe so a spreadsheet shows it instead of
evaluating it. `?bom=1` starts the CSV with the UTF-8 byte-order mark Excel needs to read it as
UTF-8; the default has none, so scripts read `repo` as the first column's name.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from aiohttp import web

from bot.context import app_context
from bot.site.api import api_paging
from bot.site.conditional import streamed_headers
from bot.site.data import count_threads, reception, rows_by_id, tracked_ids
from bot.store.types import format_datetime, utcnow

log = logging.getLogger(__name__)

EXPORT_PAGE = 10_000  # threads of one page at most (`limit`; the default when only `offset` is given)
BATCH = 500  # threads read and written at a time
CSV_COLUMNS = ("repo", "number", "kind", "framework", "title", "state", "created_at",
               "closed_at", "url", "is_failure_report", "failure_category",
               "failure_confidence", "failure_set_by", "analyzer_is_failure_report",
               "analyzer_failure_category", "analyzer_failure_confidence", "is_proposal",
               "review_state", "methods", "arxiv_ids")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
BOM = "\ufeff"
_FLAGS = {"": False, "0": False, "false": False, "no": False, "1": True, "true": True, "yes": True}


async def export_batches(sessionmaker: Callable[[], Any], *, ids: list[int] | None = None,
                         batch: int = BATCH) -> AsyncIterator[list[dict[str, Any]]]:
    """The summaries of the threads `ids` names (every tracked thread when None), `batch` at
    a time, each batch read in a session of its own."""
    if ids is None:
        async with sessionmaker() as session:
            ids = await tracked_ids(session)
    for start in range(0, len(ids), batch):
        async with sessionmaker() as session:
            rows = await rows_by_id(session, ids[start:start + batch])
        if rows:
            yield rows


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = ";".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def _csv_text(rows: list[list[str]] | list[tuple[str, ...]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def csv_rows(threads: list[dict[str, Any]]) -> str:
    """The CSV lines of `threads`, without the header."""
    lines = []
    for t in threads:
        analyzer = t.get("analyzer_failure") or {}
        flat = {**t, "analyzer_is_failure_report": analyzer.get("is_failure_report"),
                "analyzer_failure_category": analyzer.get("category"),
                "analyzer_failure_confidence": analyzer.get("confidence")}
        lines.append([_cell(flat.get(c)) for c in CSV_COLUMNS])
    return _csv_text(lines)


def to_csv(threads: list[dict[str, Any]]) -> str:
    return _csv_text([CSV_COLUMNS]) + csv_rows(threads)


def _error(message: str, headers: Mapping[str, str]) -> web.Response:
    return web.json_response({"error": message}, status=400, headers=headers)


async def serve_export(request: web.Request, *, as_csv: bool, headers: Mapping[str, str]
                       ) -> web.StreamResponse:
    """GET /api/export.json or /api/export.csv: options checked (a 400 naming the rule), then
    the export streamed in batches. An error after the status was sent cuts the transfer
    short (no last chunk), so a client sees a broken download, never a short file that reads
    as whole."""
    query = request.query
    bom = _FLAGS.get((query.get("bom") or "").strip().lower()) if as_csv else False
    if bom is None:
        return _error("bom must be 1 (the UTF-8 byte-order mark first, for Excel) or 0 (none, "
                      "the default)", headers)
    paged = "limit" in query or "offset" in query
    limit, offset = None, 0
    if paged:
        paging = api_paging(query, default_limit=EXPORT_PAGE, max_limit=EXPORT_PAGE)
        if isinstance(paging, str):
            return _error(paging, headers)
        limit, offset = paging
    ctx = app_context(request)
    async with ctx.sessionmaker() as session:
        ids = await tracked_ids(session, limit=limit, offset=offset)
        total = await count_threads(session) if paged else len(ids)
        received = [] if as_csv else await reception(session)
    name = "rltracker-export." + ("csv" if as_csv else "json")
    response = web.StreamResponse(headers={
        **headers, **streamed_headers(request), "Content-Disposition": f'attachment; filename="{name}"',
        "X-Total-Count": str(total)})
    response.content_type = "text/csv" if as_csv else "application/json"
    response.charset = "utf-8"
    response.enable_chunked_encoding()
    await response.prepare(request)
    if request.method == "HEAD":
        return response
    try:
        if as_csv:
            await response.write(((BOM if bom else "") + to_csv([])).encode("utf-8"))
        else:
            stamp = json.dumps(format_datetime(utcnow()))
            await response.write(f'{{"generated_at": {stamp}, "threads": ['.encode())
        first = True
        async for batch in export_batches(ctx.sessionmaker, ids=ids):
            if as_csv:
                text = csv_rows(batch)
            else:
                text = ("" if first else ", ") + ", ".join(json.dumps(t) for t in batch)
                first = False
            await response.write(text.encode("utf-8"))
        if not as_csv:
            await response.write(f'], "reception": {json.dumps(received)}}}'.encode())
        await response.write_eof()
    except ConnectionError:
        pass  # the client went away
    except Exception:
        log.exception("%s %s failed after its first bytes were sent; the transfer is cut",
                      request.method, request.path)
        if request.transport is not None:
            request.transport.abort()
    return response
