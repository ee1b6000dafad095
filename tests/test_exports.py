"""CSV and JSON export shapes (bot/exports.py), independent of the web routes."""

from __future__ import annotations

import csv
import io

from bot.site.exports import CSV_COLUMNS, to_csv


def _row(**over: object) -> dict[str, object]:
    base: dict[str, object] = {c: None for c in CSV_COLUMNS}
    base.update(repo="o/r", number=1, kind="issue", title="t", methods=[], arxiv_ids=[])
    base.update(over)
    return base


def test_csv_neutralises_formulas_and_flattens_values() -> None:
    rows = [
        _row(number=1, title='=HYPERLINK("http://x","y")'),
        _row(number=2, title="+1", methods=["gspo", "cispo"], arxiv_ids=["2507.18071"]),
        _row(number=3, title="-cmd", is_proposal=True, is_failure_report=False),
        _row(number=4, title='@SUM(A1) with "quotes", commas\nand a newline'),
        _row(number=5, title="plain"),
    ]
    parsed = list(csv.DictReader(io.StringIO(to_csv(rows))))
    assert [p["title"] for p in parsed] == [
        "'=HYPERLINK(\"http://x\",\"y\")", "'+1", "'-cmd",
        "'@SUM(A1) with \"quotes\", commas\nand a newline", "plain",
    ]
    assert parsed[1]["methods"] == "gspo;cispo" and parsed[1]["arxiv_ids"] == "2507.18071"
    assert parsed[2]["is_proposal"] == "true" and parsed[2]["is_failure_report"] == "false"
    assert parsed[4]["review_state"] == ""
    assert list(parsed[0]) == list(CSV_COLUMNS)


def test_csv_of_nothing_is_just_the_header() -> None:
    assert to_csv([]) == ",".join(CSV_COLUMNS) + "\n"
