"""CSV and JSON export shapes (bot/site/exports.py), alone and through the export routes
(/api/export.json, /api/export.csv) on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp import ClientPayloadError
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import select

from bot.site.data import REVIEW_STATES
from bot.site.exports import CSV_COLUMNS, _cell, to_csv
from bot.store.models import Analysis, Installation, Repository
from bot.store.threads import get_thread, upsert_thread

KINDS = ("entropy_collapse", "entropy_explosion", "collapse_or_divergence",
         "rollout_training_mismatch", "response_length_drift", "stale_rollout_data",
         "kl_growth", "moe_instability", "groups_without_signal", "other_failure")


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


# --- the export routes, over HTTP, on SQLite and PostgreSQL ----------------------------------

TIE = "2026-03-03T03:03:03Z"  # two threads opened in the same second
EXPORTED = [  # (record, analysed): project-written threads, oldest first as the export lists them
    ({"repo": "verl-project/verl", "number": 1, "kind": "issue", "title": "支持 GSPO 算法",
      "state": "open", "created_at": "2026-01-01T00:00:00Z"}, True),
    ({"repo": "huggingface/trl", "number": 2, "kind": "pull_request",
      "title": '=HYPERLINK("http://x","y")', "state": "merged",
      "created_at": "2026-02-02T02:02:02+08:00", "closed_at": "2026-02-03T00:00:00Z"}, True),
    ({"repo": "huggingface/trl", "number": 3, "kind": "issue", "title": "tie one", "state": "open",
      "created_at": TIE}, True),
    ({"repo": "huggingface/trl", "number": 4, "kind": "discussion", "title": "tie two",
      "state": "closed", "created_at": TIE}, True),
    ({"repo": "THUDM/slime", "number": 5, "kind": "issue", "title": "no date known",
      "state": "open"}, True),
    ({"repo": "THUDM/slime", "number": 6, "kind": "issue", "title": "never analysed",
      "state": "open", "created_at": "2026-01-05T00:00:00Z"}, False),
]
CONTRACT = Path(__file__).resolve().parents[2] / "shared" / "contracts" / "README.md"
ORDER = [1, 2, 3, 4, 5]  # oldest first; a tie by the order stored; a thread of no date last


def _result(number: int) -> dict[str, Any]:
    failure = "entropy_collapse" if number % 2 == 0 else None
    return {
        "id": f"x#{number}",
        "failure": {"is_failure_report": failure is not None, "category": failure,
                    "categories": [failure] if failure else [], "confidence": 0.8},
        "papers": [], "proposal": {"is_proposal": number == 1, "confidence": 0.7},
        "review": {"state": "open_no_reply", "replied_from_other": False, "concerns": []},
    }


async def seed_exported(ctx: Any) -> None:
    async with ctx.sessionmaker() as session, session.begin():
        for record, analysed in EXPORTED:
            thread = await upsert_thread(session, record)
            if analysed:
                result = _result(record["number"])
                session.add(Analysis(
                    thread_id=thread.id, analyzer_version="t", result=result,
                    is_failure_report=result["failure"]["is_failure_report"],
                    failure_category=result["failure"]["category"],
                    is_proposal=result["proposal"]["is_proposal"],
                    review_state=result["review"]["state"], methods=[], arxiv_ids=[]))
        session.add(Installation(id=8, account="huggingface"))
        await session.flush()
        session.add(Repository(full_name="huggingface/trl", framework="trl", installation_id=8,
                               resumed_by="operator",
                               resumed_at=datetime(2026, 4, 4, 4, 4, 4, tzinfo=UTC)))


@pytest.fixture
async def client(ctx: Any) -> AsyncIterator[TestClient]:
    from bot.app import create_app

    await seed_exported(ctx)
    async with TestClient(TestServer(create_app(ctx, worker=False))) as c:
        yield c


async def _csv_rows(resp: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((await resp.read()).decode("utf-8"))))


async def test_the_json_export_pages_by_limit_and_offset_as_every_api_list(client: TestClient
                                                                          ) -> None:
    """/api/export.json ignored `limit` and `offset` and built every thread in memory: it
    pages as /api/actions and /api/proposals do (X-Total-Count counts them all), each page
    of the documented shape; without either it is still the whole export."""
    whole = await client.get("/api/export.json")
    assert whole.status == 200 and whole.headers["X-Total-Count"] == "5"
    body = await whole.json()
    assert list(body) == ["generated_at", "threads", "reception"]
    assert (await whole.read()).decode() == json.dumps(body)  # written as json.dumps wrote it
    assert [t["number"] for t in body["threads"]] == ORDER
    pages = []
    for offset in range(0, 6, 2):
        page = await client.get("/api/export.json", params={"limit": "2", "offset": str(offset)})
        assert page.status == 200 and page.headers["X-Total-Count"] == "5"
        got = await page.json()
        assert list(got) == ["generated_at", "threads", "reception"]
        assert got["reception"] == body["reception"]
        pages += [t["number"] for t in got["threads"]]
    assert pages == ORDER  # every thread once, ties and the undated one included
    past = await client.get("/api/export.json", params={"offset": "9"})
    assert past.status == 200 and (await past.json())["threads"] == []


async def test_the_csv_export_pages_alike(client: TestClient) -> None:
    numbers = []
    for offset in range(0, 5):
        page = await client.get("/api/export.csv", params={"limit": "1", "offset": str(offset)})
        assert page.status == 200 and page.headers["X-Total-Count"] == "5"
        rows = await _csv_rows(page)
        numbers += [int(r["number"]) for r in rows]
    assert numbers == ORDER
    assert [int(r["number"]) for r in await _csv_rows(await client.get("/api/export.csv"))] == ORDER


@pytest.mark.parametrize("query", ["limit=0", "limit=-1", "limit=x", "offset=-1", "offset=x",
                                   "limit=1.5", "bom=2", "bom=yes please"])
async def test_bad_export_options_are_a_400_saying_so(client: TestClient, query: str) -> None:
    """They were ignored: a script asking for `limit=x` got the whole export, 200."""
    for route in ("/api/export.json", "/api/export.csv"):
        if query.startswith("bom") and route.endswith(".json"):
            continue
        resp = await client.get(f"{route}?{query}")
        assert resp.status == 400, (route, query)
        assert resp.content_type == "application/json"
        message = (await resp.json())["error"]
        assert ("bom must be" in message) if query.startswith("bom") else message.startswith(
            "limit must be a whole number from 1 (at most 10,000")


async def test_the_whole_export_is_streamed_not_built_in_memory(client: TestClient) -> None:
    """Both exports were one `web.Response` holding every row (Content-Length set): they are
    written as they are read, a batch of threads at a time (chunked, no Content-Length)."""
    for route in ("/api/export.json", "/api/export.csv"):
        resp = await client.get(route)
        assert resp.status == 200
        assert "Content-Length" not in resp.headers, route
        assert resp.headers.get("Transfer-Encoding") == "chunked", route
        assert resp.headers["Content-Disposition"].startswith("attachment; filename=")
        await resp.read()


async def test_export_batches_read_every_thread_once_in_order(ctx: Any) -> None:
    from bot.site.exports import export_batches

    await seed_exported(ctx)
    batches = [[t["number"] for t in batch] async for batch in export_batches(ctx.sessionmaker, batch=2)]
    assert batches == [[1, 2], [3, 4], [5]]


async def test_an_excel_csv_is_a_choice_with_a_byte_order_mark(client: TestClient) -> None:
    """Excel opens a CSV without a byte-order mark in the local code page: 支持 GSPO 算法 came out
    garbled. `?bom=1` (the site's "CSV for Excel" link) starts the file with the UTF-8 BOM;
    the default stays without one, so scripts keep reading `repo` as the first column name."""
    plain = await (await client.get("/api/export.csv")).read()
    assert plain.startswith(b"repo,number,")
    for on in ("1", "true"):
        excel = await client.get("/api/export.csv", params={"bom": on})
        assert excel.status == 200 and excel.content_type == "text/csv"
        raw = await excel.read()
        assert raw.startswith(b"\xef\xbb\xbfrepo,number,")
        assert raw[3:] == plain
        rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
        assert rows[0]["repo"] == "verl-project/verl" and rows[0]["title"] == "支持 GSPO 算法"
    assert await (await client.get("/api/export.csv", params={"bom": "0"})).read() == plain
    footer = await (await client.get("/")).text()
    assert 'href="/api/export.csv?bom=1"' in footer


async def test_every_exported_time_is_utc_with_a_z(client: TestClient) -> None:
    """The reception rows (/api/repos and the export) wrote `resumed_at` as
    2026-04-04T04:04:04+00:00 where every other time reads ...Z."""
    body = await (await client.get("/api/export.json")).json()
    repos = await (await client.get("/api/repos")).json()
    assert body["reception"][0]["resumed_at"] == "2026-04-04T04:04:04Z"
    assert repos[0]["resumed_at"] == "2026-04-04T04:04:04Z"
    assert body["generated_at"].endswith("Z")
    times = [t[k] for t in body["threads"] for k in ("created_at", "closed_at") if t[k]]
    assert "2026-02-01T18:02:02Z" in times  # +08:00 in the record, UTC in the export
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", t) for t in times)


async def test_every_exported_thread_fits_the_contract(client: TestClient) -> None:
    """Each exported thread summary, JSON and CSV, against the contract's tables (the
    `thread` keys it shares, the analysis' failure kinds and review states)."""
    from tests.test_thread_records import THREAD, _fits

    shared = {key: want for key, _, want in THREAD}
    kinds = set(KINDS)
    if CONTRACT.is_file():
        text = CONTRACT.read_text(encoding="utf-8")
        kinds = set(re.findall(r"`([a-z_]+)`", text.split("`failure.category` is")[1]
                               .split("A failure report is")[0]))
        assert kinds == set(KINDS)
    body = await (await client.get("/api/export.json")).json()
    csv_rows = await _csv_rows(await client.get("/api/export.csv"))
    assert len(csv_rows) == len(body["threads"]) == 5
    for thread, row in zip(body["threads"], csv_rows, strict=True):
        for key in ("repo", "number", "kind", "title", "state", "created_at", "closed_at", "url"):
            assert _fits(thread[key], shared[key]), (key, thread[key])
            assert row[key] == ("" if thread[key] is None else str(thread[key])
                                if key != "title" else _cell(thread[key]))
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", thread["repo"])
        assert thread["failure_category"] in kinds | {None}
        assert thread["review_state"] in {*REVIEW_STATES, None}
        assert isinstance(thread["is_proposal"], bool)
        assert isinstance(thread["is_failure_report"], bool)
        assert list(row) == list(CSV_COLUMNS)


async def test_a_deleted_thread_leaves_the_exports(ctx: Any, client: TestClient) -> None:
    """An issue deleted on GitHub (the `deleted` delivery) is in neither export."""
    from tests.test_events import dispatch, envelope, issue

    repo = "verl-project/verl"
    await dispatch(ctx, "issues", envelope("opened", repo, issue=issue(
        77, title="Entropy collapses after step 300", created_at="2026-06-01T00:00:00Z")))
    async with ctx.sessionmaker() as session, session.begin():
        thread = await get_thread(session, repo, 77)
        assert thread is not None
        if await session.scalar(select(Analysis).where(Analysis.thread_id == thread.id)) is None:
            session.add(Analysis(thread_id=thread.id, analyzer_version="t", result=_result(77)))
    assert 77 in [t["number"] for t in (await (await client.get("/api/export.json")).json())["threads"]]
    await dispatch(ctx, "issues", envelope("deleted", repo, issue=issue(
        77, created_at="2026-06-01T00:00:00Z")))
    body = await (await client.get("/api/export.json")).json()
    assert 77 not in [t["number"] for t in body["threads"]]
    assert "77" not in [r["number"] for r in await _csv_rows(await client.get("/api/export.csv"))]


async def test_head_of_an_export_is_its_headers_only(client: TestClient) -> None:
    for route in ("/api/export.json", "/api/export.csv"):
        resp = await client.head(route)
        assert resp.status == 200 and resp.headers["X-Total-Count"] == "5"
        assert await resp.read() == b""


async def test_an_export_that_fails_midway_is_a_broken_download_not_a_short_file(
        ctx: Any, client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    """Streamed, the status and the first bytes are sent before the rows are read: a row that
    cannot be read (here an analysis stored as a JSON list, not an object) cuts the transfer
    (no last chunk), so a client sees an error, never a CSV that ends early and reads whole."""
    async with ctx.sessionmaker() as session, session.begin():
        thread = await upsert_thread(session, {"repo": "THUDM/slime", "number": 90, "kind": "issue",
                                               "title": "broken row", "state": "open",
                                               "created_at": "2025-01-01T00:00:00Z"})
        session.add(Analysis(thread_id=thread.id, analyzer_version="t", result=[1, 2]))
    for route in ("/api/export.csv", "/api/export.json"):
        resp = await client.get(route)
        assert resp.status == 200
        with pytest.raises(ClientPayloadError):
            await resp.read()
    assert "the transfer is cut" in caplog.text
    assert (await client.get("/api/stats")).status == 200  # the server goes on


def test_every_csv_cell_is_neutralised_lists_too() -> None:
    """A list cell (methods, arXiv ids) was joined and written as it was: one starting with
    = went out as a formula. Every cell goes through the same check."""
    parsed = list(csv.DictReader(io.StringIO(to_csv([_row(methods=["=1+1", "gspo"],
                                                          arxiv_ids=["@x"])]))))
    assert parsed[0]["methods"] == "'=1+1;gspo" and parsed[0]["arxiv_ids"] == "'@x"


async def test_a_private_repositorys_issue_is_in_no_public_export(ctx: Any, client: TestClient
                                                                 ) -> None:
    """The app installed on an organisation's every repository receives its private ones'
    issues too (`repository.private: true`): their titles went into both exports, the thread
    page and /api/threads (body included), for anyone to read."""
    from tests.test_events import dispatch, envelope, issue

    payload = envelope("opened", "someorg/secret-repo", issue=issue(5, title="Secret roadmap"))
    payload["repository"].update(private=True, visibility="private")
    await dispatch(ctx, "issues", payload)
    body = await (await client.get("/api/export.json")).json()
    assert "Secret roadmap" not in [t["title"] for t in body["threads"]]
    assert (await client.get("/api/threads/someorg/secret-repo/5")).status == 404
