"""security79: GitHub's text at the app's other outputs: log lines, the Atom feeds, the exports.

- Log lines (JSON and plain): a title with line breaks stays on its record's one line, and a
  direction override in it is written as an escape (on main it went out as the character:
  a viewer laying out bidirectional text showed the rest of the line, the fields after the
  title, backwards).
- Atom feeds: a title holding every C0 and C1 control and the characters XML 1.0 forbids
  still makes a document an XML parser reads (a guard: this held on main), and an entry's
  plain-text summary names the repository without direction controls (on main an override in
  a stored repository name reversed the summary's words after it).
- Exports: every CSV column, not only the title, has a formula's first character prefixed;
  the JSON is `application/json`, escapes what is not ASCII and parses back to the stored
  text (a guard: held on main). Content-Disposition carries a fixed file name.
SQLite and PostgreSQL where a database is read.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import xml.etree.ElementTree as ET
from typing import Any

from bot.logs import JsonFormatter, PlainFormatter
from tests.test_feeds import BASE, add, client_for, fetch, parse_feed

RLO = "\u202e"
# A title as a replayed or imported record could hold it: a forged second log line, every C0
# and C1 control, XML's forbidden noncharacters and an unclosed override.
FORGED = 'Entropy collapses\n{"level": "error", "msg": "forged"}\r\nx'
CONTROLS = "".join(map(chr, [*range(0x20), *range(0x7F, 0xA0)])) + "\ufffe\uffff"


def _record(message: str, **fields: Any) -> logging.LogRecord:
    record = logging.LogRecord("rltracker.test", logging.INFO, __file__, 1, message, None, None)
    record.__dict__.update(fields)
    return record


def test_a_title_in_a_log_line_can_neither_add_a_line_nor_turn_it_around() -> None:
    title = f"{FORGED} {RLO}deliaf"
    line = JsonFormatter().format(_record("skipped %s", title=title, status="failed"))
    assert "\n" not in line and "\r" not in line and RLO not in line
    assert json.loads(line)["title"] == title  # an escape: the text is kept
    plain = PlainFormatter().format(_record(f"skipped {title}"))
    assert "\n" not in plain and "\r" not in plain and RLO not in plain
    assert "\\u202e" in plain and "\\u000a" in plain


async def test_controls_in_a_title_leave_a_feed_an_xml_parser_reads(ctx: Any) -> None:
    odd_repo = f"hugging{RLO}face/fork"
    await add(ctx, "verl-project/verl", 21, f"KL {CONTROLS} grows", days=1, proposal=True)
    await add(ctx, odd_repo, 22, "Entropy collapses", days=2, failure="entropy_collapse")
    client = await client_for(ctx)
    try:
        proposals = await fetch(client, "/proposals.atom")
        failures = await fetch(client, "/failures/entropy_collapse.atom")
    finally:
        await client.close()
    [entry] = parse_feed(proposals, f"{BASE}/proposals.atom")
    # NUL stored as U+FFFD (bot.store.types.storable_text), tab, LF and CR as spaces
    assert entry["title"] == "\u2068KL \ufffd" + " " * 3 + " grows\u2069"
    assert ET.fromstring(failures.encode()) is not None
    [report] = parse_feed(failures, f"{BASE}/failures/entropy_collapse.atom")
    assert RLO not in report["summary"]
    assert report["summary"].startswith("huggingface/fork#22: reported ")


async def test_every_export_column_is_inert_in_a_spreadsheet(ctx: Any) -> None:
    await add(ctx, "verl-project/verl", 31, "=HYPERLINK(\"http://x\",\"y\")", days=1,
              proposal=True)
    await add(ctx, "-cmd/x", 32, f"@SUM(1) {RLO}", days=2, proposal=True)
    client = await client_for(ctx)
    try:
        resp = await client.get("/api/export.csv")
        assert resp.status == 200
        assert resp.headers["Content-Disposition"] == 'attachment; filename="rltracker-export.csv"'
        rows = list(csv.DictReader(io.StringIO(await resp.text())))
        as_json = await client.get("/api/export.json")
        assert as_json.headers["Content-Type"] == "application/json; charset=utf-8"
        raw = await as_json.read()
    finally:
        await client.close()
    formula = ("=", "+", "-", "@", "\t", "\r")
    for row in rows:
        for column, value in row.items():
            assert not value.startswith(formula), (column, value)
    assert {r["repo"] for r in rows} >= {"'-cmd/x"}
    assert raw.isascii()  # every character past ASCII escaped: no byte a sniffer reads as markup
    threads = json.loads(raw)["threads"]
    assert {t["title"] for t in threads} >= {f"@SUM(1) {RLO}"}  # the text as stored


def test_a_repository_name_the_app_quotes_in_a_comment_holds_no_direction_control() -> None:
    """The rule summary's earlier proposals name each thread's `owner/repo#N` (a code span)
    and, outside the catalog's frameworks, its repository (escaped text): neither isolates,
    and an override in a stored name reversed the rest of the comment's line on GitHub (on
    main it went out as it was)."""
    from bot.speaking.render import rule_summary_reply

    body = rule_summary_reply(
        rules_markdown=None, framework_id="verl", lang="en", public_url="https://t.example",
        earlier=[{"repo": f"some{RLO}org/fork", "number": 3, "framework": None,
                  "state": "open_no_reply"}])
    assert RLO not in body
    assert "[`someorg/fork#3`](https://t.example/threads/some%E2%80%AEorg/fork/3)" in body
