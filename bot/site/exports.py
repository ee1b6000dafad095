"""Export of the tracked data: every analysed thread with its findings, as JSON and as CSV
(`GET /api/export.json`, `GET /api/export.csv`).

The failure columns are the finding the tracker shows (a person's verdict where there is one:
`failure_set_by` names their role, and there is no model confidence then); the analyzer's own
finding is kept beside it (`analyzer_failure` in JSON, `analyzer_*` columns in CSV).

Thread titles are third-party text: in CSV a cell that starts with =, +, - or @ is prefixed
with an apostrophe so a spreadsheet shows it instead of evaluating it.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from bot.site.data import reception, thread_rows
from bot.store.types import format_datetime, utcnow

EXPORT_LIMIT = 200_000
CSV_COLUMNS = ("repo", "number", "kind", "framework", "title", "state", "created_at",
               "closed_at", "url", "is_failure_report", "failure_category",
               "failure_confidence", "failure_set_by", "analyzer_is_failure_report",
               "analyzer_failure_category", "analyzer_failure_confidence", "is_proposal",
               "review_state", "methods", "arxiv_ids")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


async def export_data(session: AsyncSession) -> dict[str, Any]:
    threads = await thread_rows(session, newest_first=False, limit=EXPORT_LIMIT)
    return {
        "generated_at": format_datetime(utcnow()),
        "threads": threads,
        "reception": await reception(session),
    }


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ";".join(str(v) for v in value)
    text = str(value)
    if text.startswith(_FORMULA_START):
        return "'" + text
    return text


def to_csv(threads: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for t in threads:
        analyzer = t.get("analyzer_failure") or {}
        flat = {**t, "analyzer_is_failure_report": analyzer.get("is_failure_report"),
                "analyzer_failure_category": analyzer.get("category"),
                "analyzer_failure_confidence": analyzer.get("confidence")}
        writer.writerow([_cell(flat.get(c)) for c in CSV_COLUMNS])
    return out.getvalue()
